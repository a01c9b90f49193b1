/* SPDX-License-Identifier: MIT */
/* run_test - the run API: a small model run completes and verifies; a registration fault
 * ends in its named cause on its side, listed as fired once; the same config twice gives
 * the same result and the same event log; a progress callback sees the run and changes nothing. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/run.h"
#include "sim/json.h"

/* A 16M guest, two workers, 200 ms (the fault matrix's scenarios). */
static void small_config(struct runcfg *c)
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
}

static void add_fault(struct runcfg *c, const char *spec, int expect_cause)
{
	snprintf(c->faults[c->n_faults++], sizeof c->faults[0], "%s", spec);
	c->expect_completed = false;
	c->expect_causes[0] = expect_cause;
	c->n_expect = 1;
}

static void test_small_run_completes(void **state)
{
	(void)state;
	struct runcfg c;
	struct run_result res;
	struct diag d = { 0 };
	small_config(&c);
	assert_int_equal(run_migrate(&c, &res, &d), 0);
	assert_true(res.out.src_completed);
	assert_true(res.out.dst_completed);
	assert_true(res.out.verified);
	assert_true(res.out.completed);
	assert_true(res.out.pass);
	assert_int_equal(res.out.cause, 0);
	assert_int_equal(res.out.side, RUN_SIDE_NONE);
	assert_string_equal(res.m.status, "completed");
	assert_int_equal(res.m.ram_remaining, 0);
	assert_true(res.m.ram_transferred > 0);
	assert_true(res.virtual_ns > 0);
	assert_false(res.output_error);
	assert_non_null(res.build_id);
	assert_true(res.build_id[0] != '\0');
	assert_null(res.json.f);
}

struct fault_case {
	const char *rule;
	int cause;
	const char *side;
};

/* reg_mr@dst: #1 and #2 are the destination's two control buffers, #4 the first chunk the
 * source asks for (this config). */
static const struct fault_case fault_cases[] = {
	{ "reg_mr@dst #2 -> errno(ENOMEM)", CAUSE_CONTROL_REG_FAILED, "dst" },
	{ "reg_mr@dst #4 -> errno(ENOMEM)", CAUSE_DEST_REG_FAILED, "dst" },
};

/* The source oracle (check_source): after a failed run, and a completed one, the source's
 * memory is what the guest wrote (a shadow got the same writes); off, nothing is checked. */
static void test_source_oracle(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		struct runcfg c;
		struct run_result res;
		struct diag d = { 0 };
		small_config(&c);
		c.check_source = i < 2;
		if (i == 1)
			add_fault(&c, fault_cases[0].rule, fault_cases[0].cause);
		assert_int_equal(run_migrate(&c, &res, &d), 0);
		assert_int_equal(res.out.completed, i != 1);
		assert_int_equal(res.out.src_checked, i < 2);
		assert_int_equal(res.out.src_intact, i < 2);
		assert_true(res.m.guest_pages_written > 0);   /* the guest wrote while it ran */
	}
}

static void test_fault_ends_in_its_cause(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof fault_cases / sizeof fault_cases[0]; i++) {
		const struct fault_case *fc = &fault_cases[i];
		struct runcfg c;
		struct run_result res;
		struct diag d = { 0 };
		print_message("case: %s\n", fc->rule);
		small_config(&c);
		add_fault(&c, fc->rule, fc->cause);
		assert_int_equal(run_migrate(&c, &res, &d), 0);
		assert_false(res.out.completed);
		assert_string_equal(res.m.status, "failed");
		assert_int_equal(res.out.cause, fc->cause);
		assert_string_equal(run_side_name(res.out.side), fc->side);
		assert_int_equal(res.out.dst.cause, fc->cause);
		assert_ptr_equal(res.out.detail, res.out.dst.detail);
		assert_true(res.out.pass);
		assert_int_equal(res.out.n_faults, 1);
		assert_int_equal(res.out.faults[0].st.fired, 1);
		assert_true(res.out.faults[0].st.matched >= 1);
	}
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *buf = NULL;
	size_t cap = 0;
	FILE *m = open_memstream(&buf, &cap);
	assert_non_null(m);
	int ch;
	while ((ch = fgetc(f)) != EOF)
		fputc(ch, m);
	fclose(f);
	fclose(m);
	*n = cap;
	return buf;
}

static char *metrics_text(const struct metrics *m)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	assert_non_null(f);
	assert_int_equal(json_dump(f, metrics_json(m, NULL)), 0);
	fclose(f);
	return buf;
}

static void run_logged(struct runcfg *c, const char *events, struct run_result *res)
{
	struct diag d = { 0 };
	snprintf(c->events_path, sizeof c->events_path, "%s", events);
	assert_int_equal(run_migrate(c, res, &d), 0);
}

/* The leak oracle: a model run with both sides ends with no RDMA object alive, completed or
 * failed by a fault (a failed dereg_mr among them: the endpoint's destroy releases its MR);
 * the test hook that leaves a listener open is counted. */
static void test_leak_oracle(void **state)
{
	(void)state;
	static const char *const rules[] = { NULL, "reg_mr@dst #2 -> errno(ENOMEM)", "dereg_mr@src #1 -> errno(EBUSY)" };
	for (int i = 0; i < 4; i++) {
		struct runcfg c;
		struct run_result res;
		struct diag d = { 0 };
		small_config(&c);
		if (i < 3 && rules[i])
			add_fault(&c, rules[i], i == 1 ? CAUSE_CONTROL_REG_FAILED : 0);
		c.test_leak_listener = i == 3;
		print_message("case %d: %s\n", i, i < 3 && rules[i] ? rules[i] : i == 3 ? "a planted listener" : "no fault");
		assert_int_equal(run_migrate(&c, &res, &d), 0);
		assert_true(res.out.objects_checked);
		assert_int_equal(res.out.live_objects, i == 3 ? 1 : 0);
		assert_true(res.faults_injected > 0 || !(i == 1 || i == 2));
	}
}

/* The continuing source: a run failed by a fault, its source (still running) migrates again
 * healed and completes, its memory still the guest's; with the test hook that keeps the
 * faults, the second migration fails too; a completed run is not continued. */
static void test_continuing_source(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		struct runcfg c;
		struct run_result res;
		struct diag d = { 0 };
		small_config(&c);
		if (i < 2)
			add_fault(&c, fault_cases[0].rule, fault_cases[0].cause);
		c.check_source = c.check_continue = true;
		c.test_unhealed = i == 1;
		assert_int_equal(run_migrate(&c, &res, &d), 0);
		assert_int_equal(res.out.completed, i == 2);
		assert_int_equal(res.out.cont_checked, i < 2);
		assert_int_equal(res.out.cont_completed, i == 0);
		assert_int_equal(res.out.cont_src_intact, i < 2);
		assert_true(res.out.src_checked && res.out.src_intact);
		if (i == 1)
			assert_int_equal(res.out.cont_cause, fault_cases[0].cause);
	}
}

static void test_same_config_same_run(void **state)
{
	(void)state;
	char ev1[] = "/tmp/migbed-run-test-XXXXXX", ev2[] = "/tmp/migbed-run-test-XXXXXX";
	int fd1 = mkstemp(ev1), fd2 = mkstemp(ev2);
	assert_true(fd1 >= 0 && fd2 >= 0);
	close(fd1);
	close(fd2);
	struct runcfg c;
	struct run_result a, b;
	small_config(&c);
	add_fault(&c, "post_send.write@src #3 -> status(REM_ACCESS_ERR)", CAUSE_REMOTE_ACCESS_ERROR);
	run_logged(&c, ev1, &a);
	run_logged(&c, ev2, &b);
	assert_int_equal(a.out.cause, CAUSE_REMOTE_ACCESS_ERROR);
	assert_int_equal(a.out.faults[0].st.fired, 1);
	assert_int_equal(a.out.completed, b.out.completed);
	assert_int_equal(a.out.cause, b.out.cause);
	assert_int_equal(a.out.side, b.out.side);
	assert_string_equal(a.out.detail, b.out.detail);
	assert_int_equal(a.out.src.t_ns, b.out.src.t_ns);
	assert_int_equal(a.out.dst.t_ns, b.out.dst.t_ns);
	assert_int_equal(a.virtual_ns, b.virtual_ns);
	assert_int_equal(a.out.faults[0].st.fired, b.out.faults[0].st.fired);
	char *ma = metrics_text(&a.m), *mb = metrics_text(&b.m);
	assert_string_equal(ma, mb);
	size_t na, nb;
	char *la = slurp(ev1, &na), *lb = slurp(ev2, &nb);
	assert_true(na > 0);
	assert_int_equal(na, nb);
	assert_memory_equal(la, lb, na);
	free(ma);
	free(mb);
	free(la);
	free(lb);
	unlink(ev1);
	unlink(ev2);
}

struct seen {
	size_t calls;
	uint64_t last_ns, last_transferred;
};

static void see_progress(void *arg, const struct engine_progress *p)
{
	struct seen *s = arg;
	assert_true(p->virtual_ns > s->last_ns);            /* once per counters period, in order */
	assert_true(p->transferred_bytes >= s->last_transferred);
	s->last_ns = p->virtual_ns;
	s->last_transferred = p->transferred_bytes;
	s->calls++;
}

/* The progress callback (the CLI's status line) sees the migration and changes nothing. */
static void test_progress_changes_nothing(void **state)
{
	(void)state;
	char ev1[] = "/tmp/migbed-run-test-XXXXXX", ev2[] = "/tmp/migbed-run-test-XXXXXX";
	int fd1 = mkstemp(ev1), fd2 = mkstemp(ev2);
	assert_true(fd1 >= 0 && fd2 >= 0);
	close(fd1);
	close(fd2);
	struct runcfg c;
	struct run_result a, b;
	struct seen seen = { 0 };
	small_config(&c);
	c.eng.max_bandwidth_bytes_per_s = 16ull << 20;   /* a few counters periods */
	run_logged(&c, ev1, &a);
	c.eng.progress = see_progress;
	c.eng.progress_arg = &seen;
	run_logged(&c, ev2, &b);
	assert_true(seen.calls > 1);
	assert_int_equal(a.out.completed, b.out.completed);
	assert_int_equal(a.out.cause, b.out.cause);
	assert_int_equal(a.virtual_ns, b.virtual_ns);
	size_t na, nb;
	char *la = slurp(ev1, &na), *lb = slurp(ev2, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(la, lb, na);
	free(la);
	free(lb);
	unlink(ev1);
	unlink(ev2);
}

static void test_bad_input_leaves_nothing(void **state)
{
	(void)state;
	struct runcfg c;
	struct run_result res;
	struct diag d = { 0 };
	char ev[] = "/tmp/migbed-run-test-XXXXXX";
	int fd = mkstemp(ev);
	assert_true(fd >= 0);
	close(fd);
	unlink(ev);
	small_config(&c);
	snprintf(c.trace, sizeof c.trace, "/nonexistent/migbed-run-test.trace");
	snprintf(c.events_path, sizeof c.events_path, "%s", ev);
	assert_int_equal(run_migrate(&c, &res, &d), -EINVAL);
	assert_true(d.msg[0] != '\0');
	assert_int_equal(access(ev, F_OK), -1);
}

static void test_result_copy_keeps_detail(void **state)
{
	(void)state;
	struct runcfg c;
	struct run_result res, copy;
	struct diag d = { 0 };
	small_config(&c);
	add_fault(&c, "reg_mr@dst #4 -> errno(ENOMEM)", CAUSE_DEST_REG_FAILED);
	assert_int_equal(run_migrate(&c, &res, &d), 0);
	run_result_copy(&copy, &res);
	assert_ptr_equal(copy.out.detail, copy.out.dst.detail);
	assert_string_equal(copy.out.detail, res.out.detail);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_run_completes),
		cmocka_unit_test(test_fault_ends_in_its_cause),
		cmocka_unit_test(test_source_oracle),
		cmocka_unit_test(test_leak_oracle),
		cmocka_unit_test(test_continuing_source),
		cmocka_unit_test(test_same_config_same_run),
		cmocka_unit_test(test_progress_changes_nothing),
		cmocka_unit_test(test_bad_input_leaves_nothing),
		cmocka_unit_test(test_result_copy_keeps_detail),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
