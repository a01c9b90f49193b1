/* SPDX-License-Identifier: MIT */
/* diag_test - diagnostics read "FILE:LINE: problem". */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "sim/diag.h"

static void test_set_and_clear(void **st)
{
	struct diag d;

	(void)st;
	assert_int_equal(diag_set(&d, "bad %s %d", "thing", 7), -EINVAL);
	assert_string_equal(d.msg, "bad thing 7");
	diag_clear(&d);
	assert_string_equal(d.msg, "");
}

static void test_at(void **st)
{
	struct diag d;

	(void)st;
	assert_int_equal(diag_at(&d, "x.trace", 12, "unknown block '%s'", "ram"), -EINVAL);
	assert_string_equal(d.msg, "x.trace:12: unknown block 'ram'");
}

static void test_null_diag_is_allowed(void **st)
{
	(void)st;
	assert_int_equal(diag_set(NULL, "dropped %d", 1), -EINVAL);
	assert_int_equal(diag_at(NULL, "f", 1, "dropped"), -EINVAL);
	diag_clear(NULL);
}

static void test_long_message_is_truncated(void **st)
{
	char big[2 * DIAG_MSG_MAX];
	struct diag d;

	(void)st;
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	diag_at(&d, "f", 3, "%s", big);
	assert_int_equal(strlen(d.msg), DIAG_MSG_MAX - 1);
	assert_memory_equal(d.msg, "f:3: aaa", 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_and_clear),
		cmocka_unit_test(test_at),
		cmocka_unit_test(test_null_diag_is_allowed),
		cmocka_unit_test(test_long_message_is_truncated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
