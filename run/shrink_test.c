/* SPDX-License-Identifier: MIT */
/* shrink_test - ddmin and scalar lowering on synthetic predicates: a 1-minimal subset, the
 * run bound, determinism, errors passed through. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "run/shrink.h"

#define N 64

/* Interesting when every element of need[] is kept. Records the calls. */
struct need {
	size_t need[4], n_need;
	unsigned calls;
	uint64_t trace;                /* a hash of the call sequence */
	int fail_at;                   /* return -5 on this call (1-based), 0: never */
};

static int needs_all(void *arg, const bool *keep, size_t n)
{
	struct need *p = arg;
	p->calls++;
	for (size_t i = 0; i < n; i++)
		p->trace = p->trace * 31 + (keep[i] ? i + 1 : 0);
	if (p->fail_at && p->calls == (unsigned)p->fail_at)
		return -5;
	for (size_t i = 0; i < p->n_need; i++)
		if (!keep[p->need[i]])
			return 0;
	return 1;
}

static size_t count(const bool *keep, size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		m += keep[i];
	return m;
}

static void all(bool *keep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		keep[i] = true;
}

static void finds_the_needed_elements(void **state)
{
	(void)state;
	bool keep[N];
	struct need p = { .need = { 3, 17, 40 }, .n_need = 3 };
	struct shrink_budget b = { .max_runs = 1000 };
	all(keep, N);
	assert_int_equal(shrink_ddmin(keep, N, needs_all, &p, &b), 0);
	assert_false(b.stopped);
	assert_int_equal(count(keep, N), 3);
	assert_true(keep[3] && keep[17] && keep[40]);
	assert_int_equal(b.runs, p.calls);
	/* 1-minimal: without any one of them it is not interesting */
	for (size_t i = 0; i < N; i++) {
		if (!keep[i])
			continue;
		keep[i] = false;
		assert_int_equal(needs_all(&p, keep, N), 0);
		keep[i] = true;
	}
}

static void nothing_needed_is_the_empty_set_in_one_run(void **state)
{
	(void)state;
	bool keep[N];
	struct need p = { 0 };
	struct shrink_budget b = { .max_runs = 1000 };
	all(keep, N);
	assert_int_equal(shrink_ddmin(keep, N, needs_all, &p, &b), 0);
	assert_int_equal(count(keep, N), 0);
	assert_int_equal(b.runs, 1);
}

static void only_the_kept_elements_are_candidates(void **state)
{
	(void)state;
	bool keep[N] = { 0 };
	struct need p = { .need = { 9 }, .n_need = 1 };
	struct shrink_budget b = { .max_runs = 1000 };
	keep[5] = keep[9] = keep[60] = true;
	assert_int_equal(shrink_ddmin(keep, N, needs_all, &p, &b), 0);
	assert_int_equal(count(keep, N), 1);
	assert_true(keep[9]);
}

static void the_run_bound_stops_it_with_an_interesting_subset(void **state)
{
	(void)state;
	for (uint64_t max = 0; max < 12; max++) {
		bool keep[N];
		struct need p = { .need = { 1, 2, 50 }, .n_need = 3 };
		struct shrink_budget b = { .max_runs = max };
		all(keep, N);
		assert_int_equal(shrink_ddmin(keep, N, needs_all, &p, &b), 0);
		assert_true(b.stopped);
		assert_true(p.calls <= max);
		assert_int_equal(b.runs, p.calls);
		assert_true(keep[1] && keep[2] && keep[50]);   /* still interesting */
	}
}

static bool stop_after_3(void *arg)
{
	struct need *p = arg;
	return p->calls >= 3;
}

static void the_stop_callback_stops_it(void **state)
{
	(void)state;
	bool keep[N];
	struct need p = { .need = { 7 }, .n_need = 1 };
	struct shrink_budget b = { .max_runs = 1000, .stop = stop_after_3, .stop_arg = &p };
	all(keep, N);
	assert_int_equal(shrink_ddmin(keep, N, needs_all, &p, &b), 0);
	assert_true(b.stopped);
	assert_int_equal(p.calls, 3);
	assert_true(keep[7]);
	assert_false(shrink_may_run(&b));   /* stays stopped */
}

static void it_is_deterministic(void **state)
{
	(void)state;
	bool k1[N], k2[N];
	struct need p1 = { .need = { 0, 31, 63 }, .n_need = 3 }, p2 = p1;
	struct shrink_budget b1 = { .max_runs = 1000 }, b2 = b1;
	all(k1, N);
	all(k2, N);
	assert_int_equal(shrink_ddmin(k1, N, needs_all, &p1, &b1), 0);
	assert_int_equal(shrink_ddmin(k2, N, needs_all, &p2, &b2), 0);
	assert_memory_equal(k1, k2, sizeof k1);
	assert_int_equal(p1.calls, p2.calls);
	assert_true(p1.trace == p2.trace);
}

static void an_error_ends_it(void **state)
{
	(void)state;
	bool keep[N];
	struct need p = { .need = { 4 }, .n_need = 1, .fail_at = 4 };
	struct shrink_budget b = { .max_runs = 1000 };
	all(keep, N);
	assert_int_equal(shrink_ddmin(keep, N, needs_all, &p, &b), -5);
	assert_int_equal(p.calls, 4);
}

/* Interesting when v >= threshold. */
struct thr {
	uint64_t threshold;
	unsigned calls;
};

static int at_least(void *arg, uint64_t v)
{
	struct thr *t = arg;
	t->calls++;
	return v >= t->threshold;
}

static void lower_finds_the_threshold(void **state)
{
	(void)state;
	struct thr t = { .threshold = 12345 };
	struct shrink_budget b = { .max_runs = 100 };
	uint64_t cur = 1u << 20;
	assert_int_equal(shrink_lower(1, &cur, at_least, &t, &b), 0);
	assert_int_equal(cur, 12345);
	assert_true(t.calls <= 22);
	t = (struct thr){ .threshold = 1 };
	cur = 1000;
	assert_int_equal(shrink_lower(1, &cur, at_least, &t, &b), 0);
	assert_int_equal(cur, 1);
	assert_int_equal(t.calls, 1);   /* the bottom first */
}

static void lower_respects_the_bound(void **state)
{
	(void)state;
	struct thr t = { .threshold = 500 };
	struct shrink_budget b = { .max_runs = 3 };
	uint64_t cur = 1000;
	assert_int_equal(shrink_lower(0, &cur, at_least, &t, &b), 0);
	assert_int_equal(t.calls, 3);
	assert_true(b.stopped);
	assert_true(cur >= 500 && cur <= 1000);   /* still interesting */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(finds_the_needed_elements),
		cmocka_unit_test(nothing_needed_is_the_empty_set_in_one_run),
		cmocka_unit_test(only_the_kept_elements_are_candidates),
		cmocka_unit_test(the_run_bound_stops_it_with_an_interesting_subset),
		cmocka_unit_test(the_stop_callback_stops_it),
		cmocka_unit_test(it_is_deterministic),
		cmocka_unit_test(an_error_ends_it),
		cmocka_unit_test(lower_finds_the_threshold),
		cmocka_unit_test(lower_respects_the_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
