/* SPDX-License-Identifier: MIT */
/* engine_test - the switchover rule and threshold arithmetic of the pre-copy engine. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "run/engine.h"

static void test_threshold(void **state)
{
	(void)state;
	/* 128 MiB/s measured over a 100 ms period, downtime-limit 300 ms: 3 x 13.4 MB */
	assert_int_equal(engine_threshold_bytes(13421772, 100, 300), 40265316);
	/* 1 GB in 1 s with a 1 ms limit: 1 MB */
	assert_int_equal(engine_threshold_bytes(1000000000, 1000, 1), 1000000);
	assert_int_equal(engine_threshold_bytes(12345, 0, 300), 0);
	assert_int_equal(engine_threshold_bytes(0, 100, 300), 0);
	/* no overflow for a huge product */
	assert_int_equal(engine_threshold_bytes(UINT64_MAX / 2, 1000, 1000), UINT64_MAX / 2);
	assert_int_equal(engine_threshold_bytes(UINT64_MAX, 1, 3600000), UINT64_MAX);
}

static void test_switchover_rule(void **state)
{
	(void)state;
	assert_true(engine_wants_sync(100, 100));      /* at the threshold: ask for an exact count */
	assert_false(engine_wants_sync(101, 100));
	assert_false(engine_switchover(100, 100));     /* but switch over only strictly under it */
	assert_true(engine_switchover(99, 100));
	assert_true(engine_switchover(0, 0));          /* nothing pending: always */
	assert_false(engine_switchover(4096, 0));      /* no bandwidth measured: keep going */
}

static void test_defaults_are_qemus(void **state)
{
	(void)state;
	struct engine_opts o;
	engine_opts_defaults(&o);
	assert_int_equal(o.downtime_limit_ms, 300);
	assert_int_equal(o.max_bandwidth_bytes_per_s, 128ull << 20);
	assert_int_equal(o.slice_ms, 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold),
		cmocka_unit_test(test_switchover_rule),
		cmocka_unit_test(test_defaults_are_qemus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
