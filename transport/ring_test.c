/* ring_test - the bounded FIFO: order across wrap-around, growth up to the bound, unget. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>

#include "transport/ring.h"

static void fifo_order_across_wrap(void **state)
{
	struct ring r;
	int v;

	(void)state;
	assert_int_equal(ring_init(&r, sizeof(int), 3, 3), 0);
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 3; i++) {
			v = round * 10 + i;
			ring_push(&r, &v);
		}
		assert_int_equal(ring_len(&r), 3);
		assert_int_equal(*(int *)ring_at(&r, 2), round * 10 + 2);
		for (int i = 0; i < 3; i++) {
			assert_true(ring_get(&r, &v));
			assert_int_equal(v, round * 10 + i);
		}
	}
	assert_false(ring_get(&r, &v));
	ring_fini(&r);
}

static void reserve_grows_to_the_bound_only(void **state)
{
	struct ring r;
	int v = 1;

	(void)state;
	assert_int_equal(ring_init(&r, sizeof(int), 2, 8), 0);
	ring_push(&r, &v);
	ring_pop(&r, NULL);           /* head moves: growth must keep the order */
	for (v = 0; v < 8; v++) {
		assert_int_equal(ring_reserve(&r, 1), 0);
		ring_push(&r, &v);
	}
	assert_int_equal(ring_reserve(&r, 1), -ENOMEM);
	assert_int_equal(ring_len(&r), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(*(int *)ring_at(&r, (size_t)i), i);
	ring_fini(&r);
}

static void fixed_ring_refuses_growth(void **state)
{
	struct ring r;
	int v = 7;

	(void)state;
	assert_int_equal(ring_init(&r, sizeof(int), 1, 1), 0);
	assert_int_equal(ring_reserve(&r, 1), 0);
	ring_push(&r, &v);
	assert_int_equal(ring_reserve(&r, 1), -ENOMEM);
	ring_fini(&r);
	assert_int_equal(ring_reserve(&r, 1), -ENOMEM);   /* a zeroed ring has no room */
}

static void unget_and_drop_back(void **state)
{
	struct ring r;
	int v;

	(void)state;
	assert_int_equal(ring_init(&r, sizeof(int), 4, 4), 0);
	for (v = 1; v <= 3; v++)
		ring_push(&r, &v);
	ring_drop_back(&r);           /* 1 2 */
	assert_true(ring_get(&r, &v));
	assert_int_equal(v, 1);
	ring_unget(&r, &v);           /* 1 2 again */
	assert_int_equal(ring_len(&r), 2);
	assert_true(ring_get(&r, &v));
	assert_int_equal(v, 1);
	assert_true(ring_get(&r, &v));
	assert_int_equal(v, 2);
	assert_false(ring_get(&r, &v));
	ring_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fifo_order_across_wrap),
		cmocka_unit_test(reserve_grows_to_the_bound_only),
		cmocka_unit_test(fixed_ring_refuses_growth),
		cmocka_unit_test(unget_and_drop_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
