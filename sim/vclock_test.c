/* SPDX-License-Identifier: MIT */
/* vclock_test - the virtual clock only moves forward. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/vclock.h"

static void test_starts_at_zero_and_advances(void **st)
{
	vclock c = { .now_ns = 777 };

	(void)st;
	vclock_init(&c);
	assert_int_equal(vclock_now_ns(&c), 0);
	vclock_advance_by(&c, 5 * VCLOCK_NS_PER_MS);
	assert_int_equal(vclock_now_ns(&c), 5000000);
	vclock_advance_to(&c, VCLOCK_NS_PER_S);
	assert_int_equal(vclock_now_ns(&c), 1000000000);
	vclock_advance_to(&c, VCLOCK_NS_PER_S);          /* staying put is allowed */
	assert_int_equal(vclock_now_ns(&c), 1000000000);
}

static void test_catch_up(void **st)
{
	vclock c;

	(void)st;
	vclock_init(&c);
	assert_int_equal(vclock_catch_up(&c, 300), 300);
	assert_int_equal(vclock_catch_up(&c, 100), 300);   /* earlier: no move */
	assert_int_equal(vclock_now_ns(&c), 300);
	assert_int_equal(vclock_catch_up(&c, 301), 301);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_at_zero_and_advances),
		cmocka_unit_test(test_catch_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
