/* SPDX-License-Identifier: MIT */
/* judge_test - the outcome judge, table-driven: which side failed first, consequences never
 * hiding the primary cause, one-side processes, expectations, expect-fired. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "run/judge.h"

#define NONE 0
#define EXPECT_COMPLETED { 0 }

struct judge_case {
	const char *name;
	enum run_role role;
	int src_cause;
	uint64_t src_t_ns;
	int dst_cause;
	uint64_t dst_t_ns;
	bool src_completed, dst_completed, verified;
	int expect[3];             /* { 0 }: expect completed; else failed:ONE|OF|THESE */
	/* judged */
	bool completed;
	int cause;
	const char *side;
	bool pass;
};

static const struct judge_case cases[] = {
	{ "both completed and verified", ROLE_BOTH, NONE, 0, NONE, 0, true, true, true, EXPECT_COMPLETED,
	  true, 0, "-", true },
	{ "completed but expected a failure", ROLE_BOTH, NONE, 0, NONE, 0, true, true, true,
	  { CAUSE_DEST_REG_FAILED }, true, 0, "-", false },
	{ "completed but not verified: the destination's cause", ROLE_BOTH, NONE, 0, CAUSE_VERIFY_MISMATCH, 900,
	  true, false, false, { CAUSE_VERIFY_MISMATCH }, false, CAUSE_VERIFY_MISMATCH, "dst", true },
	{ "the earlier of two causes of their own: src", ROLE_BOTH, CAUSE_REMOTE_ACCESS_ERROR, 100,
	  CAUSE_DEST_REG_FAILED, 200, false, false, false, { CAUSE_REMOTE_ACCESS_ERROR }, false,
	  CAUSE_REMOTE_ACCESS_ERROR, "src", true },
	{ "the earlier of two causes of their own: dst", ROLE_BOTH, CAUSE_REMOTE_ACCESS_ERROR, 300,
	  CAUSE_DEST_REG_FAILED, 200, false, false, false, { CAUSE_DEST_REG_FAILED }, false,
	  CAUSE_DEST_REG_FAILED, "dst", true },
	{ "a tie goes to the source", ROLE_BOTH, CAUSE_REMOTE_ACCESS_ERROR, 200, CAUSE_DEST_REG_FAILED, 200,
	  false, false, false, EXPECT_COMPLETED, false, CAUSE_REMOTE_ACCESS_ERROR, "src", false },
	{ "an earlier PEER_ERROR does not hide the destination's own cause", ROLE_BOTH, CAUSE_PEER_ERROR, 10,
	  CAUSE_DEST_REG_FAILED, 500, false, false, false, { CAUSE_DEST_REG_FAILED }, false,
	  CAUSE_DEST_REG_FAILED, "dst", true },
	{ "an earlier PEER_DISCONNECTED does not hide the source's own cause", ROLE_BOTH, CAUSE_CONTROL_REG_FAILED,
	  500, CAUSE_PEER_DISCONNECTED, 10, false, false, false, { CAUSE_CONTROL_REG_FAILED }, false,
	  CAUSE_CONTROL_REG_FAILED, "src", true },
	{ "an earlier QP_ERROR does not hide the source's own cause", ROLE_BOTH, CAUSE_REMOTE_ACCESS_ERROR, 700,
	  CAUSE_QP_ERROR, 5, false, false, false, { CAUSE_QP_ERROR }, false, CAUSE_REMOTE_ACCESS_ERROR, "src",
	  false },
	{ "an earlier DEST_INCOMPLETE does not hide the source's own cause", ROLE_BOTH, CAUSE_NOT_CONVERGED, 900,
	  CAUSE_DEST_INCOMPLETE, 1, false, false, false, { CAUSE_NOT_CONVERGED }, false, CAUSE_NOT_CONVERGED,
	  "src", true },
	{ "a consequence says more than a disconnect", ROLE_BOTH, CAUSE_PEER_DISCONNECTED, 1, CAUSE_PEER_ERROR,
	  900, false, false, false, { CAUSE_PEER_ERROR }, false, CAUSE_PEER_ERROR, "dst", true },
	{ "two consequences: the earlier", ROLE_BOTH, CAUSE_QP_ERROR, 400, CAUSE_PEER_ERROR, 300, false, false,
	  false, { CAUSE_PEER_ERROR, CAUSE_QP_ERROR }, false, CAUSE_PEER_ERROR, "dst", true },
	{ "the source stopped with no cause of its own", ROLE_BOTH, NONE, 0, NONE, 0, false, false, false,
	  { CAUSE_INTERNAL }, false, CAUSE_INTERNAL, "src", true },
	{ "a cause not in the list fails the verdict", ROLE_BOTH, CAUSE_REMOTE_ACCESS_ERROR, 1, NONE, 0, false,
	  false, false, { CAUSE_DEST_REG_FAILED, CAUSE_CONTROL_REG_FAILED }, false, CAUSE_REMOTE_ACCESS_ERROR,
	  "src", false },
	{ "a source process: completed (the destination confirmed)", ROLE_SRC, NONE, 0, NONE, 0, true, true, true,
	  EXPECT_COMPLETED, true, 0, "-", true },
	{ "a source process: its own cause", ROLE_SRC, CAUSE_PEER_ERROR, 50, NONE, 0, false, false, false,
	  { CAUSE_DEST_REG_FAILED }, false, CAUSE_PEER_ERROR, "src", false },
	{ "a destination process passes failed:... whenever it failed", ROLE_DST, NONE, 0, CAUSE_PEER_ERROR, 50,
	  false, false, false, { CAUSE_REMOTE_ACCESS_ERROR }, false, CAUSE_PEER_ERROR, "dst", true },
	{ "a destination process that completed fails failed:...", ROLE_DST, NONE, 0, NONE, 0, true, true, true,
	  { CAUSE_REMOTE_ACCESS_ERROR }, true, 0, "-", false },
	{ "a destination process that failed fails expect completed", ROLE_DST, NONE, 0, CAUSE_TIMEOUT, 50, false,
	  false, false, EXPECT_COMPLETED, false, CAUSE_TIMEOUT, "dst", false },
};

static void expect_causes(struct runcfg *c, const int *causes, size_t n)
{
	c->expect_completed = causes[0] == 0;
	c->n_expect = 0;
	for (size_t i = 0; i < n && causes[i]; i++)
		c->expect_causes[c->n_expect++] = causes[i];
}

static void side_cause(struct cause_ctx *cx, int cause, uint64_t t_ns, const char *side)
{
	if (cause)
		cause_set(cx, cause, "%s detail", side);
	cx->t_ns = t_ns;
}

static void test_judge_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct judge_case *jc = &cases[i];
		struct runcfg c;
		struct run_outcome o = { 0 };
		runcfg_defaults(&c);
		expect_causes(&c, jc->expect, 3);
		side_cause(&o.src, jc->src_cause, jc->src_t_ns, "src");
		side_cause(&o.dst, jc->dst_cause, jc->dst_t_ns, "dst");
		o.src_completed = jc->src_completed;
		o.dst_completed = jc->dst_completed;
		o.verified = jc->verified;
		run_outcome_judge(&o, &c, jc->role);
		print_message("case: %s\n", jc->name);
		assert_int_equal(o.completed, jc->completed);
		assert_int_equal(o.cause, jc->cause);
		assert_string_equal(run_side_name(o.side), jc->side);
		assert_int_equal(o.pass, jc->pass);
		if (!jc->completed && jc->cause != CAUSE_INTERNAL)
			assert_string_equal(o.detail, !strcmp(jc->side, "src") ? "src detail" : "dst detail");
	}
}

/* A run's side prints as its token, "-" for none, and parses back; nothing else parses. */
static void test_side_names(void **state)
{
	(void)state;
	static const int sides[] = { RUN_SIDE_NONE, VOCAB_SIDE_SRC, VOCAB_SIDE_DST };
	static const char *const names[] = { "-", "src", "dst" };
	for (size_t i = 0; i < sizeof sides / sizeof sides[0]; i++) {
		int side = 99;
		assert_string_equal(run_side_name(sides[i]), names[i]);
		assert_int_equal(run_side_lookup(names[i], &side), 0);
		assert_int_equal(side, sides[i]);
	}
	static const char *const bad[] = { "", "any", "source", "SRC", "--" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int side = 99;
		assert_int_equal(run_side_lookup(bad[i], &side), -1);
		assert_int_equal(side, 99);
	}
}

static void test_secondary_causes(void **state)
{
	(void)state;
	static const int consequences[] = { CAUSE_PEER_ERROR, CAUSE_PEER_DISCONNECTED, CAUSE_QP_ERROR,
					    CAUSE_CONNECT_REJECTED, CAUSE_DEST_INCOMPLETE,
					    CAUSE_QEMU_STREAM_TRUNCATED };
	for (size_t i = 0; i < sizeof consequences / sizeof consequences[0]; i++)
		assert_true(run_cause_secondary(consequences[i]));
	assert_false(run_cause_secondary(CAUSE_DEST_REG_FAILED));
	assert_false(run_cause_secondary(CAUSE_REMOTE_ACCESS_ERROR));
	assert_false(run_cause_secondary(0));
}

struct fired_case {
	const char *name;
	enum run_role role;
	const char *rule;
	bool all;                  /* expect-fired: one value for every rule */
	int n_expect;              /* 0: nothing expected */
	uint64_t n;
	bool more;
	int calls;                 /* reg_mr calls made on the rule's side */
	/* judged */
	uint64_t fired;
	bool judged, met, pass;
};

static const struct fired_case fired_cases[] = {
	{ "fired once, expected 1", ROLE_BOTH, "reg_mr@dst #2 -> errno(ENOMEM)", false, 1, 1, false, 3, 1, true,
	  true, true },
	{ "fired once, expected >0", ROLE_BOTH, "reg_mr@dst #2 -> errno(ENOMEM)", true, 1, 0, true, 3, 1, true,
	  true, true },
	{ "never reached, expected 1: not met", ROLE_BOTH, "reg_mr@dst #5 -> errno(ENOMEM)", false, 1, 1, false,
	  3, 0, true, false, false },
	{ "fired once, expected 0: not met", ROLE_BOTH, "reg_mr@dst #1 -> errno(ENOMEM)", false, 1, 0, false, 3,
	  1, true, false, false },
	{ "nothing expected: reported, not judged", ROLE_BOTH, "reg_mr@dst #1 -> errno(ENOMEM)", false, 0, 0,
	  false, 3, 1, false, true, true },
	{ "the other process's side: not judged", ROLE_SRC, "reg_mr@dst #5 -> errno(ENOMEM)", false, 1, 1,
	  false, 3, 0, false, true, true },
	{ "this process's side: judged", ROLE_DST, "reg_mr@dst #5 -> errno(ENOMEM)", false, 1, 1, false, 3, 0,
	  true, false, false },
};

static void test_expect_fired_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof fired_cases / sizeof fired_cases[0]; i++) {
		const struct fired_case *fc = &fired_cases[i];
		struct runcfg c;
		struct run_outcome o = { 0 };
		struct fault_parse_error e = { 0 };
		fault_plan *p = NULL;
		enum fault_site site = FAULT_SITE_REG_MR;
		struct fault_fire f;
		print_message("case: %s\n", fc->name);
		runcfg_defaults(&c);
		snprintf(c.faults[0], sizeof c.faults[0], "%s", fc->rule);
		c.n_faults = 1;
		c.expect_fired[0] = (struct runcfg_fired){ .n = fc->n, .more = fc->more };
		c.n_expect_fired = fc->n_expect;
		c.expect_fired_all = fc->all;
		assert_int_equal(fault_plan_new(1, &p), 0);
		assert_int_equal(fault_plan_add_spec(p, fc->rule, &e), 0);
		for (int k = 0; k < fc->calls; k++)
			fault_plan_check(p, &site, 1, FAULT_SIDE_DST, 0, &f);
		o.src_completed = o.dst_completed = o.verified = true;
		run_outcome_judge(&o, &c, fc->role);
		assert_true(o.pass);
		run_outcome_faults(&o, &c, p, fc->role);
		fault_plan_free(p);
		assert_int_equal(o.n_faults, 1);
		assert_int_equal(o.faults[0].st.fired, fc->fired);
		assert_int_equal(o.faults[0].judged, fc->judged);
		assert_int_equal(o.faults[0].met, fc->met);
		assert_int_equal(o.pass, fc->pass);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judge_table),
		cmocka_unit_test(test_side_names),
		cmocka_unit_test(test_secondary_causes),
		cmocka_unit_test(test_expect_fired_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
