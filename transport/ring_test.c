/* SPDX-License-Identifier: MIT */
/* ring_test - the bounded FIFO: order across wrap-around, growth up to the bound, unget, a
 * fixed ring over the caller's array (structs by value), room. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

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

struct big {
	int id;
	unsigned char pad[61];        /* an odd size: elements are copied whole, by value */
};

/* A ring over the caller's array: no allocation, the array holds the elements, no growth,
 * FIFO order across wrap-around, and fini leaves the array alone. */
static void ring_over_callers_array(void **state)
{
	struct big buf[3], b;
	struct ring r;

	(void)state;
	memset(buf, 0xee, sizeof(buf));
	ring_init_over(&r, buf, sizeof(buf[0]), 3);
	assert_int_equal(ring_room(&r), 3);
	for (int i = 0; i < 7; i++) {
		memset(&b, i, sizeof(b));
		b.id = i;
		ring_push(&r, &b);
		if (i >= 1) {     /* two in the ring, then one out: the head walks around the array */
			assert_int_equal(ring_room(&r), 1);
			assert_int_equal(ring_reserve(&r, 2), -ENOMEM);
			assert_true(ring_get(&r, &b));
			assert_int_equal(b.id, i - 1);
			assert_int_equal(b.pad[60], i - 1);
		}
	}
	assert_int_equal(ring_len(&r), 1);
	assert_int_equal(ring_reserve(&r, 2), 0);   /* within the array: no growth needed */
	b.id = 7;
	ring_push(&r, &b);
	b.id = 8;
	ring_push(&r, &b);
	assert_int_equal(ring_room(&r), 0);
	assert_int_equal(ring_reserve(&r, 1), -ENOMEM);
	assert_int_equal(((struct big *)ring_at(&r, 0))->id, 6);
	assert_int_equal(((struct big *)ring_at(&r, 2))->id, 8);
	/* the elements live in buf itself: 7 pushes into 3 slots, the 7th (id 6) went to slot 0 */
	assert_int_equal(buf[0].id, 6);
	assert_int_equal(buf[1].id, 7);
	assert_int_equal(buf[2].id, 8);
	ring_fini(&r);                /* must not free buf (a stack array: free would abort) */
	assert_int_equal(ring_len(&r), 0);
	assert_int_equal(ring_room(&r), 0);
	assert_false(ring_get(&r, &b));
	assert_int_equal(buf[2].id, 8);
}

static void room_counts_what_push_takes(void **state)
{
	struct ring r;
	int v = 1;

	(void)state;
	assert_int_equal(ring_init(&r, sizeof(int), 2, 4), 0);
	assert_int_equal(ring_room(&r), 2);
	ring_push(&r, &v);
	ring_push(&r, &v);
	assert_int_equal(ring_room(&r), 0);
	assert_int_equal(ring_reserve(&r, 1), 0);
	assert_int_equal(ring_room(&r), 2);       /* doubled to 4 */
	ring_pop(&r, NULL);
	assert_int_equal(ring_room(&r), 3);
	ring_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fifo_order_across_wrap),
		cmocka_unit_test(reserve_grows_to_the_bound_only),
		cmocka_unit_test(fixed_ring_refuses_growth),
		cmocka_unit_test(unget_and_drop_back),
		cmocka_unit_test(ring_over_callers_array),
		cmocka_unit_test(room_counts_what_push_takes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
