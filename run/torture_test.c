/* SPDX-License-Identifier: MIT */
/* torture_test - the sweep API on a tiny guest (each sweep well under a second): the
 * baseline's typed counts make the groups, every rerun of a couple of sites ends in its
 * named cause, a crash and a hang are classified as such, a baseline that fails has nothing
 * to sweep, bad input (a defective trace, a config out of bounds) is -EINVAL naming it, the
 * shards split the sweep; and the classification rule itself (named vs unnamed). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/torture.h"

static char tmpdir[] = "/tmp/migbed-torture-test-XXXXXX";

/* Every sweep's folder goes into a private TMPDIR, checked empty after each test. */
static int group_setup(void **state)
{
	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	return setenv("TMPDIR", tmpdir, 1);
}

static int group_teardown(void **state)
{
	(void)state;
	return rmdir(tmpdir);
}

static void assert_tmpdir_empty(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	assert_int_equal(n, 0);
}

/* A 16M guest, two workers, 200 ms: a run takes milliseconds. */
static void tiny_config(struct runcfg *c)
{
	runcfg_defaults(c);
	c->gen.guest_bytes = 16ull << 20;
	c->gen.workers = 2;
	c->gen.worker_bytes = 4ull << 20;
	c->gen.sweep_bytes_per_s = 64ull << 20;
	c->gen.duration_ms = 200;
	c->seed = c->eng.seed = c->gen.seed = 7;
	/* what cli/runcfg.c's runcfg_finish completes on the model */
	c->dst_chunk_bytes = c->chunk_bytes;
	c->repr = MEM_REPR_STAMP;
	tgen_defaults(&c->gen);
}

static const struct torture_group *group_of(const struct torture_result *res, enum fault_site s,
					    enum fault_side side)
{
	for (size_t i = 0; i < res->n_groups; i++)
		if (res->groups[i].site == s && res->groups[i].side == side)
			return &res->groups[i];
	return NULL;
}

/* The connection set-up sites: each called once per side that calls it; every rerun fails
 * with the cause of its site, on its side. */
static void test_setup_sites_end_in_named_causes(void **state)
{
	(void)state;
	static const struct { enum fault_site site; enum fault_side side; int cause; } want[] = {
		{ FAULT_SITE_EP_CREATE, FAULT_SIDE_SRC, CAUSE_CONNECT_FAILED },
		{ FAULT_SITE_EP_SETUP, FAULT_SIDE_SRC, CAUSE_DEVICE_SETUP_FAILED },
		{ FAULT_SITE_EP_SETUP, FAULT_SIDE_DST, CAUSE_DEVICE_SETUP_FAILED },
		{ FAULT_SITE_CONNECT, FAULT_SIDE_SRC, CAUSE_CONNECT_REJECTED },
		{ FAULT_SITE_ACCEPT, FAULT_SIDE_DST, CAUSE_ACCEPT_FAILED },
	};
	struct runcfg c;
	struct torture_config tc;
	struct torture_result res;
	struct diag d = { 0 };
	tiny_config(&c);
	torture_config_defaults(&tc, &c);
	tc.sites = "connect,accept,ep_*";
	assert_int_equal(torture_sweep(&tc, &res, &d), 0);
	assert_int_equal(res.baseline.verdict, TORTURE_COMPLETED);
	assert_true(res.baseline.reported);
	assert_int_equal(res.baseline.cause, CAUSE_NONE);
	assert_true(res.swept);
	assert_true(res.ok);
	assert_int_equal(res.n_groups, 5);
	assert_int_equal(res.calls, 5);
	assert_int_equal(res.n_runs, 5);
	assert_int_equal(res.n[TORTURE_FAILED], 5);
	for (size_t i = 0; i < res.n_runs; i++) {
		const struct torture_run *r = &res.runs[i];
		assert_int_equal(r->site, want[i].site);
		assert_int_equal(r->side, want[i].side);
		assert_int_equal(r->call, 1);
		assert_string_equal(r->action, fault_site_canonical(r->site));
		assert_int_equal(r->verdict, TORTURE_FAILED);
		assert_true(r->reported);
		assert_int_equal(r->cause, want[i].cause);
		assert_string_equal(r->cause_side, fault_side_name(r->side));
		assert_true(r->detail[0] != '\0');
		const struct torture_group *g = group_of(&res, r->site, r->side);
		assert_non_null(g);
		assert_int_equal(g->calls, 1);
		assert_int_equal(g->runs, 1);
	}
	torture_result_free(&res);
	assert_tmpdir_empty();
}

/* The baseline's counts are the run's own (run_result.fault_calls), and the budget spreads
 * over the groups with each group's first and last call. */
static void test_budget_over_the_baseline_counts(void **state)
{
	(void)state;
	struct runcfg c;
	struct run_result *rr = calloc(1, sizeof *rr);
	struct torture_config tc;
	struct torture_result res;
	struct diag d = { 0 };
	assert_non_null(rr);
	tiny_config(&c);
	assert_int_equal(run_migrate(&c, rr, &d), 0);
	uint64_t src = rr->fault_calls[FAULT_SITE_REG_MR][FAULT_SIDE_SRC];
	uint64_t dst = rr->fault_calls[FAULT_SITE_REG_MR][FAULT_SIDE_DST];
	assert_true(src > 4 && dst > 4);
	torture_config_defaults(&tc, &c);
	tc.sites = "reg_mr";
	tc.max_runs = 4;
	assert_int_equal(torture_sweep(&tc, &res, &d), 0);
	assert_int_equal(res.n_groups, 2);
	assert_int_equal(res.groups[0].calls, src);
	assert_int_equal(res.groups[1].calls, dst);
	assert_int_equal(res.calls, src + dst);
	assert_int_equal(res.groups[0].runs, 2);
	assert_int_equal(res.groups[1].runs, 2);
	assert_int_equal(res.n_runs, 4);
	assert_int_equal(res.runs[0].call, 1);
	assert_int_equal(res.runs[1].call, src);
	assert_int_equal(res.runs[2].call, 1);
	assert_int_equal(res.runs[3].call, dst);
	assert_int_equal(res.runs[0].cause, CAUSE_CONTROL_REG_FAILED);
	assert_true(res.ok);
	torture_result_free(&res);
	free(rr);
	assert_tmpdir_empty();
}

/* A rerun that dies is a crash (no cause), and fails the sweep. */
static void test_crash_is_seen(void **state)
{
	(void)state;
	struct runcfg c;
	struct torture_config tc;
	struct torture_result res;
	struct diag d = { 0 };
	tiny_config(&c);
	snprintf(c.faults[c.n_faults++], sizeof c.faults[0], "msg.error -> die");   /* only after a failure */
	torture_config_defaults(&tc, &c);
	tc.sites = "reg_mr";
	tc.max_runs = 3;
	tc.jobs = 2;
	assert_int_equal(torture_sweep(&tc, &res, &d), 0);
	assert_true(res.swept);
	assert_false(res.ok);
	assert_true(res.n[TORTURE_CRASH] >= 1);
	for (size_t i = 0; i < res.n_runs; i++) {
		const struct torture_run *r = &res.runs[i];
		if (r->verdict != TORTURE_CRASH)
			continue;
		assert_false(r->reported);
		assert_string_equal(r->cause_side, "");
		assert_non_null(strstr(r->detail, "killed by signal 9"));
	}
	torture_result_free(&res);
	assert_tmpdir_empty();
}

/* A run that outlives the watchdog is a hang; a baseline that does not complete: no reruns. */
static void test_hang_and_failing_baseline(void **state)
{
	(void)state;
	struct runcfg c;
	struct torture_config tc;
	struct torture_result res;
	struct diag d = { 0 };
	tiny_config(&c);
	c.gen.guest_bytes = 512ull << 20;
	c.repr = MEM_REPR_BYTES;
	torture_config_defaults(&tc, &c);
	tc.watchdog_ms = TORTURE_WATCHDOG_MS_MIN;
	assert_int_equal(torture_sweep(&tc, &res, &d), 0);
	assert_int_equal(res.baseline.verdict, TORTURE_HANG);
	assert_string_equal(res.baseline.detail, "killed by the watchdog after 100 ms of wall time");
	assert_false(res.swept);
	assert_false(res.ok);
	assert_int_equal(res.n_runs, 0);
	torture_result_free(&res);

	tiny_config(&c);
	snprintf(c.faults[c.n_faults++], sizeof c.faults[0], "connect -> errno(ECONNREFUSED)");
	torture_config_defaults(&tc, &c);
	assert_int_equal(torture_sweep(&tc, &res, &d), 0);
	assert_int_equal(res.baseline.verdict, TORTURE_FAILED);
	assert_int_equal(res.baseline.cause, CAUSE_CONNECT_REJECTED);
	assert_false(res.swept);
	assert_false(res.ok);
	assert_int_equal(res.n_runs, 0);
	torture_result_free(&res);
	assert_tmpdir_empty();
}

/* A defective trace is bad input: -EINVAL with the run's own FILE:LINE: problem. */
static void test_bad_trace_is_bad_input(void **state)
{
	(void)state;
	char path[sizeof tmpdir + 32];
	snprintf(path, sizeof path, "%s/bad.trace", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("migbed-trace 1\npage-size 4K\nblock pc.ram 1000000\nduration 1s\n", f);
	assert_int_equal(fclose(f), 0);
	struct runcfg c;
	struct torture_config tc;
	struct torture_result res;
	struct diag d = { 0 };
	tiny_config(&c);
	snprintf(c.trace, sizeof c.trace, "%s", path);
	torture_config_defaults(&tc, &c);
	assert_int_equal(torture_sweep(&tc, &res, &d), -EINVAL);
	char want[sizeof path + 8];
	snprintf(want, sizeof want, "%s:3: ", path);
	assert_true(strncmp(d.msg, want, strlen(want)) == 0);
	assert_non_null(strstr(d.msg, "not a multiple of the page size"));
	assert_int_equal(res.n_runs, 0);
	torture_result_free(&res);
	assert_int_equal(unlink(path), 0);
	assert_tmpdir_empty();
}

static void test_config_out_of_bounds(void **state)
{
	(void)state;
	struct runcfg c;
	struct torture_config tc;
	struct torture_result res;
	struct diag d = { 0 };
	tiny_config(&c);
	torture_config_defaults(&tc, &c);
	tc.sites = "reg_mr,wc.wirte";
	assert_int_equal(torture_sweep(&tc, &res, &d), -EINVAL);
	assert_string_equal(d.msg, "--sites: 'wc.wirte' matches no fault site (reg_mr, post_send.write, wc.*, "
				   "msg.ready, ...: see docs/faults.md)");
	assert_int_equal(torture_sites_check(",", &d), -EINVAL);
	assert_string_equal(d.msg, "--sites: no site given");
	assert_int_equal(torture_sites_check("msg.*,wc.send", &d), 0);
	tc.sites = NULL;
	tc.shard_k = 3;
	tc.shard_n = 2;
	assert_int_equal(torture_sweep(&tc, &res, &d), -EINVAL);
	assert_string_equal(d.msg, "shard: 3 is not from 1 to 2");
	tc.shard_k = tc.shard_n = 1;
	tc.jobs = TORTURE_JOBS_MAX + 1;
	assert_int_equal(torture_sweep(&tc, &res, &d), -EINVAL);
	tc.jobs = 1;
	for (int i = 0; i < RUNCFG_MAX_FAULTS; i++)
		snprintf(c.faults[c.n_faults++], sizeof c.faults[0], "reg_mr #1000 -> errno(ENOMEM)");
	assert_int_equal(torture_sweep(&tc, &res, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "no room for the fault rule of a rerun"));
	assert_int_equal(res.n_runs, 0);
	assert_tmpdir_empty();
}

/* The shards of a sweep are disjoint and together the whole, in the same order. */
static void test_shards(void **state)
{
	(void)state;
	struct runcfg c;
	struct torture_config tc;
	struct torture_result all, part;
	struct diag d = { 0 };
	tiny_config(&c);
	torture_config_defaults(&tc, &c);
	tc.sites = "connect,accept,ep_*";
	assert_int_equal(torture_sweep(&tc, &all, &d), 0);
	tc.shard_n = 2;
	size_t seen = 0;
	for (tc.shard_k = 1; tc.shard_k <= 2; tc.shard_k++) {
		assert_int_equal(torture_sweep(&tc, &part, &d), 0);
		for (size_t i = 0; i < part.n_runs; i++) {
			const struct torture_run *a = &all.runs[2 * i + tc.shard_k - 1], *p = &part.runs[i];
			assert_int_equal(p->site, a->site);
			assert_int_equal(p->side, a->side);
			assert_int_equal(p->call, a->call);
			assert_int_equal(p->cause, a->cause);
		}
		seen += part.n_runs;
		torture_result_free(&part);
	}
	assert_int_equal(seen, all.n_runs);
	torture_result_free(&all);
	assert_tmpdir_empty();
}

/* The rule: completed and verified, or failed with a named cause, and the fault fired. */
static void test_classify(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		int status;                       /* wait status */
		bool have, completed, verified;
		int cause;
		uint64_t fired;
		bool rerun;
		enum torture_verdict want;
	} cases[] = {
		{ "completed and verified", 0, true, true, true, CAUSE_NONE, 1, true, TORTURE_COMPLETED },
		{ "a named cause", 1 << 8, true, false, false, CAUSE_CONTROL_REG_FAILED, 1, true, TORTURE_FAILED },
		{ "a consequence is named too", 1 << 8, true, false, false, CAUSE_PEER_ERROR, 1, true, TORTURE_FAILED },
		{ "INTERNAL is no name", 1 << 8, true, false, false, CAUSE_INTERNAL, 1, true, TORTURE_UNNAMED },
		{ "failed without a cause", 1 << 8, true, false, false, CAUSE_NONE, 1, true, TORTURE_UNNAMED },
		{ "an errno where a cause belongs", 1 << 8, true, false, false, ENOMEM, 1, true, TORTURE_UNNAMED },
		{ "completed, not verified", 0, true, true, false, CAUSE_NONE, 1, true, TORTURE_UNNAMED },
		{ "memory differs", 1 << 8, true, false, false, CAUSE_VERIFY_MISMATCH, 1, true, TORTURE_CORRUPT },
		{ "the fault never fired", 1 << 8, true, false, false, CAUSE_CONTROL_REG_FAILED, 0, true,
		  TORTURE_NOT_FIRED },
		{ "completed, the fault never fired", 0, true, true, true, CAUSE_NONE, 0, true, TORTURE_NOT_FIRED },
		{ "the baseline injects nothing", 0, true, true, true, CAUSE_NONE, 0, false, TORTURE_COMPLETED },
		{ "a signal", SIGSEGV, false, false, false, 0, 0, true, TORTURE_CRASH },
		{ "exit 2: bad input or output", 2 << 8, true, false, false, CAUSE_CONTROL_REG_FAILED, 1, true,
		  TORTURE_ERROR },
		{ "no result", 0, false, false, false, 0, 0, true, TORTURE_ERROR },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct run_digest dg = { .completed = cases[i].completed, .verified = cases[i].verified,
					 .cause = cases[i].cause, .fired = cases[i].fired };
		print_message("case: %s\n", cases[i].what);
		assert_int_equal(torture_classify(cases[i].status, cases[i].have ? &dg : NULL, cases[i].rerun),
				 cases[i].want);
	}
	assert_string_equal(torture_verdict_name(TORTURE_NOT_FIRED), "not-fired");
	assert_string_equal(torture_verdict_name(TORTURE_VERDICTS), "?");
	assert_true(torture_verdict_proper(TORTURE_FAILED));
	assert_false(torture_verdict_proper(TORTURE_UNNAMED));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setup_sites_end_in_named_causes),
		cmocka_unit_test(test_budget_over_the_baseline_counts),
		cmocka_unit_test(test_crash_is_seen),
		cmocka_unit_test(test_hang_and_failing_baseline),
		cmocka_unit_test(test_bad_trace_is_bad_input),
		cmocka_unit_test(test_config_out_of_bounds),
		cmocka_unit_test(test_shards),
		cmocka_unit_test(test_classify),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
