/* SPDX-License-Identifier: MIT */
/* fault_test - fault plans: the grammar (valid and invalid rules, with the error column),
 * the canonical form, the site names against the wire and CM tables, and the trigger
 * arithmetic (#N, %N, >T, ~P, *K, sides, several sites per call, shadowing). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"
#include "sim/prng.h"
#include "vocab/vocab.h"
#include "transport/test_real_alloc.h"

/* The next calloc fails when armed (fault_plan_new's own allocation). */
static bool fail_next_calloc;

void *calloc(size_t n, size_t size)
{
	if (fail_next_calloc) {
		fail_next_calloc = false;
		return NULL;
	}
	return REAL_ALLOC(calloc)(n, size);
}

static struct fault_rule parse_ok(const char *spec)
{
	struct fault_rule r;
	struct fault_parse_error e = { 0 };
	int rc = fault_rule_parse(spec, &r, &e);
	if (rc)
		print_error("'%s': col %u: %s\n", spec, e.col, e.msg);
	assert_int_equal(rc, 0);
	return r;
}

/* ---- grammar: valid rules ------------------------------------------------------------------ */

static void test_parse_issue_examples(void **state)
{
	(void)state;
	struct fault_rule r = parse_ok("reg_mr@dst #3 -> errno(ENOMEM)");
	assert_int_equal(r.site, FAULT_SITE_REG_MR);
	assert_int_equal(r.side, FAULT_SIDE_DST);
	assert_int_equal(r.first, 3);
	assert_int_equal(r.every, 1);
	assert_int_equal(r.max_fires, 1);          /* #N alone: once */
	assert_int_equal(r.action, FAULT_ACT_ERRNO);
	assert_int_equal(r.arg, ENOMEM);

	r = parse_ok("wc.write@src ~0.01 -> status(RETRY_EXC_ERR)");
	assert_int_equal(r.site, FAULT_SITE_WC_WRITE);
	assert_true(r.probability == 0.01);
	assert_int_equal(r.max_fires, 0);          /* unlimited */
	assert_int_equal(r.action, FAULT_ACT_STATUS);
	assert_int_equal(r.arg, VOCAB_WC_RETRY_EXC_ERR);

	r = parse_ok("msg.ready@dst #5 -> drop");
	assert_int_equal(r.site, fault_site_msg(VOCAB_MSG_READY));
	assert_int_equal(r.action, FAULT_ACT_DROP);

	r = parse_ok("post_send.write@src >20ms -> qp_error");
	assert_int_equal(r.site, FAULT_SITE_POST_SEND_WRITE);
	assert_int_equal(r.after_ns, 20000000);
	assert_int_equal(r.first, 1);
	assert_int_equal(r.max_fires, 0);
	assert_int_equal(r.action, FAULT_ACT_QP_ERROR);
}

static void test_parse_triggers_and_args(void **state)
{
	(void)state;
	struct fault_rule r = parse_ok("  post_recv   %4  *2 ->   delay(250us)  ");
	assert_int_equal(r.side, FAULT_SIDE_ANY);
	assert_int_equal(r.first, 4);              /* %N alone starts at the Nth */
	assert_int_equal(r.every, 4);
	assert_int_equal(r.max_fires, 2);
	assert_int_equal(r.delay_ns, 250000);

	r = parse_ok("msg.qemu_file@source #2 %3 >1s ~1 -> corrupt");
	assert_int_equal(r.side, FAULT_SIDE_SRC);
	assert_int_equal(r.first, 2);
	assert_int_equal(r.every, 3);
	assert_int_equal(r.after_ns, 1000000000);
	assert_true(r.probability == 1.0);
	assert_int_equal(r.max_fires, 0);          /* with %N: unlimited */
	assert_int_equal(r.arg, FAULT_CORRUPT_LEN);

	r = parse_ok("msg.compress@dest -> corrupt(payload)");
	assert_int_equal(r.side, FAULT_SIDE_DST);
	assert_int_equal(r.arg, FAULT_CORRUPT_PAYLOAD);
	assert_int_equal(parse_ok("cm.established@src -> drop").site, fault_site_cm(VOCAB_CM_ESTABLISHED));
	assert_int_equal(parse_ok("post_send -> event(DEVICE_REMOVAL)").arg, VOCAB_CM_DEVICE_REMOVAL);
	assert_int_equal(parse_ok("post_send -> event(RDMA_CM_EVENT_DISCONNECTED)").arg, VOCAB_CM_DISCONNECTED);
	assert_int_equal(parse_ok("connect -> errno(ECONNREFUSED)").arg, ECONNREFUSED);
	assert_int_equal(parse_ok("modify_qp@dst #2 -> errno(EINVAL)").site, FAULT_SITE_MODIFY_QP);
	assert_int_equal(parse_ok("reg_mr -> delay(2s)").delay_ns, 2000000000ull);
	assert_int_equal(parse_ok("reg_mr -> delay(7ns)").delay_ns, 7);
	assert_int_equal(parse_ok("reg_mr ->die").action, FAULT_ACT_DIE);
	assert_int_equal(parse_ok("reg_mr->die").action, FAULT_ACT_DIE);
}

/* format(parse(s)) is canonical: it parses back to the same rule and formats identically. */
static void test_canonical_form_round_trips(void **state)
{
	(void)state;
	static const struct { const char *in, *canon; } cases[] = {
		{ "reg_mr@dst #3 -> errno(ENOMEM)", "reg_mr@dst #3 -> errno(ENOMEM)" },
		{ "reg_mr@dest   #3->errno(ENOMEM)", "reg_mr@dst #3 -> errno(ENOMEM)" },
		{ "wc.write@src ~0.1 -> status(RETRY_EXC_ERR)", "wc.write@src ~0.1 -> status(RETRY_EXC_ERR)" },
		{ "post_recv %4 *2 -> delay(250000ns)", "post_recv %4 *2 -> delay(250us)" },
		{ "post_recv #4 %4 -> drop", NULL },          /* drop is not allowed at post_recv */
		{ "post_send #4 %4 -> drop", "post_send %4 -> drop" },
		{ "post_send #1 -> drop", "post_send *1 -> drop" },
		{ "post_send -> drop", "post_send -> drop" },
		{ "post_send #2 *1 -> drop", "post_send #2 -> drop" },
		{ "post_send #2 *3 -> drop", "post_send #2 *3 -> drop" },
		{ "post_send #3 %1 -> drop", "post_send #3 %1 -> drop" },   /* was "#3 *0", refused */
		{ "post_send ~0.00001 -> drop", "post_send ~1e-05 -> drop" },   /* 1e-05 was refused */
		{ "post_send >3418180925360ns -> drop", "post_send >3418180925360ns -> drop" },
		{ "msg.compress >1500us -> corrupt", "msg.compress >1500us -> corrupt(len)" },
		{ "cm@dst -> duplicate", "cm@dst -> duplicate" },
		{ "post_send.send -> event(DEVICE_REMOVAL)", "post_send.send -> event(DEVICE_REMOVAL)" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fault_rule a, b;
		char out[FAULT_SPEC_MAX], out2[FAULT_SPEC_MAX];
		int rc = fault_rule_parse(cases[i].in, &a, NULL);
		if (!cases[i].canon) {
			assert_int_equal(rc, -EINVAL);
			continue;
		}
		assert_int_equal(rc, 0);
		fault_rule_format(&a, out, sizeof out);
		assert_string_equal(out, cases[i].canon);
		assert_int_equal(fault_rule_parse(out, &b, NULL), 0);
		assert_memory_equal(&a, &b, sizeof a);
		fault_rule_format(&b, out2, sizeof out2);
		assert_string_equal(out, out2);
	}
}

/* parse(format(r)) == r over random and edge trigger values (issue 16: the formatter once wrote
 * a probability as 1e-05 and "#3 *0" for "from the 3rd call, each, unlimited", both of which
 * the parser refused). */
static void test_format_parse_property(void **state)
{
	(void)state;
	static const double probs[] = { 1.0, 0.5, 0.1, 1e-5, 1.5e-7, 1e-300, 4.9e-324, 0.99999999999999989,
					 0.1234567890123456789e-10 };
	static const uint64_t nums[] = { 1, 2, 3, 7, 1000, UINT64_C(1000000000000) };   /* the last: fault.c's largest count */
	struct fault_rule base;
	assert_int_equal(fault_rule_parse("post_send@dst -> drop", &base, NULL), 0);
	prng g;
	prng_seed(&g, 16);
	for (int i = 0; i < 20000; i++) {
		struct fault_rule a = base, b;
		char out[FAULT_SPEC_MAX];
		size_t np = sizeof probs / sizeof probs[0], nn = sizeof nums / sizeof nums[0];
		a.first = nums[prng_below(&g, nn)];
		a.every = prng_below(&g, 2) ? 1 : nums[prng_below(&g, nn)];
		a.max_fires = prng_below(&g, 3) ? prng_below(&g, 3) : nums[prng_below(&g, nn)];
		a.after_ns = prng_below(&g, 2) ? 0 : prng_below(&g, FAULT_MAX_DELAY_NS + 1);
		a.probability = prng_below(&g, 2) ? probs[prng_below(&g, np)] : 1.0 - prng_unit(&g);
		fault_rule_format(&a, out, sizeof out);
		if (fault_rule_parse(out, &b, NULL) != 0 || memcmp(&a, &b, sizeof a) != 0)
			fail_msg("'%s' does not parse back (first %llu every %llu max %llu p %.17g)", out,
				 (unsigned long long)a.first, (unsigned long long)a.every,
				 (unsigned long long)a.max_fires, a.probability);
	}
}

/* A rule the plan takes is one the formatter can write and the parser read back (found by
 * fuzz/fuzz_fault.c): an errno, status or event argument without a name (it formatted as
 * "errno(?)") and counts or times past the parser's bounds are refused by fault_plan_add. */
static void test_plan_takes_only_writable_rules(void **state)
{
	(void)state;
	fault_plan *p;
	struct fault_rule r;
	assert_int_equal(fault_plan_new(1, &p), 0);
	assert_int_equal(fault_rule_parse("reg_mr@dst -> errno(ENOMEM)", &r, NULL), 0);
	assert_int_equal(fault_plan_add(p, &r), 0);
	struct fault_rule bad = r;
	bad.arg = 9999;   /* no errno name */
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	bad = r;
	bad.max_fires = UINT64_C(1000000000001);
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	bad = r;
	bad.first = UINT64_MAX;
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	bad = r;
	bad.after_ns = FAULT_MAX_DELAY_NS + 1;
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	assert_int_equal(fault_rule_parse("wc.write@src -> status(REM_ACCESS_ERR)", &r, NULL), 0);
	bad = r;
	bad.arg = 0;   /* SUCCESS is no failure */
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	bad.arg = 10000;
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	bad = r;
	bad.every = UINT64_C(1000000000001);   /* past the parser's bound (10^12), below the type's */
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	bad = r;
	bad.first = UINT64_C(1000000000001);
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	assert_int_equal(fault_rule_parse("post_send@src -> event(DEVICE_REMOVAL)", &r, NULL), 0);
	assert_int_equal(fault_plan_add(p, &r), 0);
	bad = r;
	bad.arg = -1;                    /* no CM event of that number: it formatted as "event(?)" */
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	bad.arg = VOCAB_CM_EVENT_COUNT;
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	assert_int_equal(fault_rule_parse("reg_mr@dst -> delay(1ms)", &r, NULL), 0);
	bad = r;
	bad.delay_ns = 0;                /* delay(0) is no delay the grammar writes */
	assert_int_equal(fault_plan_add(p, &bad), -EINVAL);
	assert_int_equal(fault_plan_n_rules(p), 2);
	fault_plan_free(p);
}

/* A probability that ends the text: the parser once looked one byte past the terminating NUL
 * for an exponent sign (ASan, fuzz/fuzz_fault.c). In a buffer of exactly the text's size, so
 * make check-asan sees any read past it. */
static void test_probability_at_the_end_of_the_text(void **state)
{
	(void)state;
	static const char *const specs[] = { "reg_mr ~0.5", "reg_mr ~1e", "reg_mr ~1e-", "reg_mr ~0.5 -> errno(ENOMEM)" };
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		size_t n = strlen(specs[i]) + 1;
		char *exact = malloc(n);
		assert_non_null(exact);
		memcpy(exact, specs[i], n);
		struct fault_rule r;
		struct fault_parse_error e = { 0 };
		int rc = fault_rule_parse(exact, &r, &e);
		assert_int_equal(rc, i == 3 ? 0 : -EINVAL);
		if (rc)
			assert_true(e.msg[0] != '\0' && e.col >= 1 && e.col <= n);
		free(exact);
	}
}

/* ---- grammar: invalid rules, with the column of the error --------------------------------- */

static void test_invalid_rules_name_the_column(void **state)
{
	(void)state;
	static const struct { const char *spec; unsigned col; const char *msg; } cases[] = {
		{ "", 1, "empty rule" },
		{ "   ", 4, "empty rule" },
		{ "reg_mx -> die", 1, "unknown site 'reg_mx'" },
		{ "reg_mr@dsr #3 -> errno(ENOMEM)", 8, "unknown side 'dsr'" },
		{ "reg_mr@ -> die", 8, "expected a side" },
		{ "reg_mr #0 -> die", 9, "at least 1" },
		{ "reg_mr # 3 -> die", 9, "#N (the Nth matching call) needs a number" },
		{ "reg_mr #3 #4 -> die", 11, "trigger '#' given twice" },
		{ "reg_mr #3x -> die", 10, "unexpected 'x'" },
		{ "reg_mr >20 -> die", 11, "needs a unit" },
		{ "reg_mr >20min -> die", 11, "unknown unit 'min'" },
		{ "reg_mr ~0 -> die", 9, "0 < P <= 1" },
		{ "reg_mr ~1.5 -> die", 9, "0 < P <= 1" },
		{ "reg_mr ~1.2.3 -> die", 9, "0 < P <= 1" },
		{ "reg_mr *0 -> die", 9, "at least 1" },
		{ "reg_mr #99999999999999 -> die", 9, "too large" },
		{ "reg_mr ! -> die", 8, "expected a trigger" },
		{ "reg_mr #3 errno(ENOMEM)", 11, "expected a trigger" },
		{ "reg_mr #3", 10, "expected '->'" },
		{ "reg_mr #3 ->", 13, "expected an action" },
		{ "reg_mr -> explode", 11, "unknown action 'explode'" },
		{ "reg_mr -> errno", 16, "needs an argument" },
		{ "reg_mr -> errno(ENOPE)", 17, "unknown errno 'ENOPE'" },
		{ "reg_mr -> errno(ENOMEM", 23, "expected ')'" },
		{ "reg_mr -> errno()", 17, "needs an argument" },
		{ "reg_mr -> die(now)", 14, "takes no argument" },
		{ "reg_mr -> status(REM_ACCESS_ERR)", 11, "does not apply to site 'reg_mr'" },
		{ "wc.recv -> errno(EIO)", 12, "does not apply to site 'wc.recv'" },
		{ "post_send -> corrupt", 14, "does not apply to site 'post_send'" },
		{ "cm -> qp_error", 7, "does not apply" },
		{ "connect -> drop", 12, "does not apply" },
		{ "wc.send -> status(SUCCESS)", 19, "not an error ibv_wc_status" },
		{ "wc.send -> status(BOGUS_ERR)", 19, "not an error ibv_wc_status" },
		{ "msg.ready -> corrupt(header)", 22, "len, type, repeat, payload (msg.*) or wr_id (wc.*)" },
		{ "msg.ready -> delay(0ms)", 20, "T > 0" },
		{ "msg.ready -> delay(2h)", 21, "unknown unit 'h'" },
		{ "msg.ready -> delay(3601s)", 20, "longer than one hour" },
		{ "post_send -> event(BOOM)", 20, "unknown CM event 'BOOM'" },
		{ "msg.ready -> drop extra", 19, "unexpected 'extra' after the action" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fault_rule r;
		struct fault_parse_error e = { 0 };
		int rc = fault_rule_parse(cases[i].spec, &r, &e);
		if (rc != -EINVAL || e.col != cases[i].col || !strstr(e.msg, cases[i].msg))
			print_error("'%s': rc %d col %u msg '%s' (want col %u '%s')\n", cases[i].spec, rc, e.col,
				    e.msg, cases[i].col, cases[i].msg);
		assert_int_equal(rc, -EINVAL);
		assert_int_equal(e.col, cases[i].col);
		assert_non_null(strstr(e.msg, cases[i].msg));
	}
}

static void test_overlong_rule_rejected(void **state)
{
	(void)state;
	char spec[FAULT_SPEC_MAX + 10];
	struct fault_parse_error e = { 0 };
	struct fault_rule r;
	memset(spec, ' ', sizeof spec);
	memcpy(spec + sizeof spec - 16, "reg_mr -> die", 14);
	assert_int_equal(fault_rule_parse(spec, &r, &e), -EINVAL);
	assert_int_equal(e.col, 1);
	assert_non_null(strstr(e.msg, "longer than"));
}

/* ---- names ------------------------------------------------------------------------------------ */

static void test_site_names_follow_wire_and_cm_tables(void **state)
{
	(void)state;
	for (uint32_t t = 0; t < VOCAB_MSG_TYPE_COUNT; t++) {
		char want[64];
		snprintf(want, sizeof want, "msg.%s", vocab_msg_type_token(t));
		assert_string_equal(fault_site_name(fault_site_msg(t)), want);
		assert_int_equal(fault_site_lookup(want), fault_site_msg(t));
	}
	for (int t = 0; t < FAULT_CM_EVENTS; t++) {
		const char *full = vocab_cm_event_name(t) + strlen("RDMA_CM_EVENT_");
		const char *site = fault_site_name(fault_site_cm(t));
		assert_true(strncmp(site, "cm.", 3) == 0);
		assert_int_equal(strlen(site + 3), strlen(full));
		for (size_t i = 0; full[i]; i++)
			assert_int_equal(site[3 + i], full[i] >= 'A' && full[i] <= 'Z' ? full[i] - 'A' + 'a' : full[i]);
	}
	for (int s = 0; s < FAULT_SITE_COUNT; s++)
		assert_int_equal(fault_site_lookup(fault_site_name((enum fault_site)s)), s);
	assert_int_equal(fault_site_lookup("msg"), -1);
	assert_string_equal(fault_errno_name(ENOMEM), "ENOMEM");
	assert_int_equal(fault_errno_lookup("ECONNREFUSED"), ECONNREFUSED);
	assert_null(fault_errno_name(12345));
}

/* ---- trigger arithmetic ------------------------------------------------------------------------ */

static fault_plan *plan_of(uint64_t seed, const char *const *specs, size_t n)
{
	fault_plan *p;
	assert_int_equal(fault_plan_new(seed, &p), 0);
	for (size_t i = 0; i < n; i++) {
		struct fault_parse_error e;
		int rc = fault_plan_add_spec(p, specs[i], &e);
		if (rc)
			print_error("'%s': col %u: %s\n", specs[i], e.col, e.msg);
		assert_int_equal(rc, 0);
	}
	return p;
}

/* Calls 1..n on one site and side at time t: bit i-1 set when call i fired. */
static uint64_t fire_mask(fault_plan *p, enum fault_site site, enum fault_side side, int n, uint64_t t_ns)
{
	uint64_t m = 0;
	for (int i = 1; i <= n; i++) {
		struct fault_fire f;
		if (fault_plan_check(p, &site, 1, side, t_ns, &f)) {
			assert_int_equal(f.call, fault_plan_calls(p, site, side));
			m |= 1ull << (i - 1);
		}
	}
	return m;
}

static uint64_t mask_of(const char *spec, int n)
{
	const char *specs[] = { spec };
	fault_plan *p = plan_of(1, specs, 1);
	struct fault_rule r = *fault_plan_rule(p, 0);
	uint64_t m = fire_mask(p, r.site, FAULT_SIDE_SRC, n, 0);
	fault_plan_free(p);
	return m;
}

static void test_counting_triggers(void **state)
{
	(void)state;
	assert_int_equal(mask_of("reg_mr #3 -> die", 10), 0x4);            /* only the 3rd */
	assert_int_equal(mask_of("reg_mr #3 *3 -> die", 10), 0x1c);        /* 3rd, 4th, 5th */
	assert_int_equal(mask_of("reg_mr %3 -> die", 10), 0x124);          /* 3, 6, 9 */
	assert_int_equal(mask_of("reg_mr #2 %3 -> die", 10), 0x92);        /* 2, 5, 8 */
	assert_int_equal(mask_of("reg_mr %3 *2 -> die", 10), 0x24);        /* 3, 6 */
	assert_int_equal(mask_of("reg_mr -> die", 10), 0x3ff);             /* every call */
	assert_int_equal(mask_of("reg_mr *4 -> die", 10), 0xf);            /* the first 4 */
	assert_int_equal(mask_of("reg_mr #11 -> die", 10), 0);             /* never reached */
}

static void test_time_trigger_counts_only_later_calls(void **state)
{
	(void)state;
	const char *specs[] = { "post_recv #2 >5ms -> errno(EIO)" };
	fault_plan *p = plan_of(1, specs, 1);
	enum fault_site s = FAULT_SITE_POST_RECV;
	struct fault_fire f;
	for (int i = 0; i < 5; i++)                 /* before 5 ms: counted per site, not by the rule */
		assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 4999999, &f));
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 5000000, &f));   /* rule's 1st */
	assert_true(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 6000000, &f));    /* rule's 2nd */
	assert_int_equal(f.call, 7);                /* the 7th post_recv@dst */
	assert_int_equal(f.action, FAULT_ACT_ERRNO);
	assert_int_equal(f.arg, EIO);
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 7000000, &f));
	assert_int_equal(fault_plan_calls(p, s, FAULT_SIDE_DST), 8);
	assert_int_equal(fault_plan_injected(p), 1);
	fault_plan_free(p);
}

/* A rule without a side counts the calls of both sides; the call number is per side. */
static void test_any_side_rule_counts_both_sides(void **state)
{
	(void)state;
	const char *specs[] = { "reg_mr@dst #2 -> errno(ENOMEM)", "reg_mr #3 -> errno(EPERM)" };
	fault_plan *p = plan_of(1, specs, 2);
	enum fault_site s = FAULT_SITE_REG_MR;
	struct fault_fire f;
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f));   /* any: 1 */
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f));   /* any: 2 */
	assert_true(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 0, &f));    /* dst: 1; any: 3 fires */
	assert_int_equal(f.rule, 1);
	assert_int_equal(f.arg, EPERM);
	assert_int_equal(f.call, 1);                                       /* the 1st reg_mr@dst */
	assert_true(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 0, &f));    /* dst: 2 fires */
	assert_int_equal(f.rule, 0);
	assert_int_equal(f.call, 2);
	assert_int_equal(fault_plan_injected(p), 2);
	fault_plan_free(p);
}

static void test_rules_counted_across_sides_and_first_rule_wins(void **state)
{
	(void)state;
	const char *specs[] = { "reg_mr@dst #2 -> errno(ENOMEM)", "reg_mr #4 -> errno(EPERM)" };
	fault_plan *p = plan_of(1, specs, 2);
	enum fault_site s = FAULT_SITE_REG_MR;
	struct fault_fire f;
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f));   /* any: 1 */
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 0, &f));   /* dst: 1, any: 2 */
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f));   /* any: 3 */
	assert_true(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 0, &f));    /* dst: 2 fires; any: 4 due, shadowed */
	assert_int_equal(f.rule, 0);
	assert_int_equal(f.arg, ENOMEM);
	assert_int_equal(f.call, 2);                                       /* 2nd reg_mr@dst */
	for (int i = 0; i < 10; i++)                                       /* both used up */
		assert_false(fault_plan_check(p, &s, 1, i % 2 ? FAULT_SIDE_SRC : FAULT_SIDE_DST, 0, &f));
	assert_int_equal(fault_plan_calls(p, s, FAULT_SIDE_SRC), 7);
	assert_int_equal(fault_plan_calls(p, s, FAULT_SIDE_DST), 7);
	assert_int_equal(fault_plan_injected(p), 1);
	fault_plan_free(p);
}

/* Per-rule stats: matched calls (only those on the rule's site and side, after >T), the
 * injections, and the shadowed turns (due on a call an earlier rule took). A rule that
 * never fires says so: fired 0, with how many calls it saw. */
static void test_rule_stats_count_each_rule_apart(void **state)
{
	(void)state;
	const char *specs[] = { "reg_mr@dst #2 -> errno(ENOMEM)", "reg_mr #4 -> errno(EPERM)",
				"reg_mr@src #99 -> errno(EIO)", "post_recv >5ms -> delay(1ms)" };
	fault_plan *p = plan_of(1, specs, 4);
	enum fault_site s = FAULT_SITE_REG_MR, pr = FAULT_SITE_POST_RECV;
	struct fault_fire f;
	struct fault_rule_stats st[4];
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f));   /* any: 1 */
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 0, &f));   /* dst: 1, any: 2 */
	assert_false(fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f));   /* any: 3 */
	assert_true(fault_plan_check(p, &s, 1, FAULT_SIDE_DST, 0, &f));    /* dst: 2 fires; any: 4 shadowed */
	assert_false(fault_plan_check(p, &pr, 1, FAULT_SIDE_DST, 4999999, &f));
	assert_true(fault_plan_check(p, &pr, 1, FAULT_SIDE_DST, 5000000, &f));
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(fault_plan_rule_stats(p, i, &st[i]), 0);
	assert_int_equal(st[0].matched, 2);
	assert_int_equal(st[0].fired, 1);
	assert_int_equal(st[0].shadowed, 0);
	assert_int_equal(st[1].matched, 4);
	assert_int_equal(st[1].fired, 0);
	assert_int_equal(st[1].shadowed, 1);
	assert_int_equal(st[2].matched, 2);
	assert_int_equal(st[2].fired, 0);
	assert_int_equal(st[2].shadowed, 0);
	assert_int_equal(st[3].matched, 1);                                /* the call before 5 ms is not its */
	assert_int_equal(st[3].fired, 1);
	assert_int_equal(st[0].fired + st[1].fired + st[2].fired + st[3].fired, fault_plan_injected(p));
	assert_int_equal(fault_plan_rule_stats(p, 4, &st[0]), -EINVAL);
	assert_int_equal(fault_plan_rule_stats(NULL, 0, &st[0]), -EINVAL);
	assert_int_equal(fault_plan_rule_stats(p, 0, NULL), -EINVAL);
	fault_plan_free(p);
}

static void test_one_call_counts_under_every_site(void **state)
{
	(void)state;
	const char *specs[] = { "post_send@src #2 -> errno(EIO)", "msg.ready@src -> drop" };
	fault_plan *p = plan_of(1, specs, 2);
	enum fault_site send[] = { fault_site_msg(VOCAB_MSG_QEMU_FILE), FAULT_SITE_POST_SEND_SEND, FAULT_SITE_POST_SEND };
	enum fault_site ready[] = { fault_site_msg(VOCAB_MSG_READY), FAULT_SITE_POST_SEND_SEND, FAULT_SITE_POST_SEND };
	enum fault_site write[] = { FAULT_SITE_POST_SEND_WRITE, FAULT_SITE_POST_SEND };
	struct fault_fire f;
	assert_false(fault_plan_check(p, write, 2, FAULT_SIDE_SRC, 0, &f));       /* post_send 1 */
	assert_true(fault_plan_check(p, send, 3, FAULT_SIDE_SRC, 0, &f));         /* post_send 2 */
	assert_int_equal(f.site, FAULT_SITE_POST_SEND);
	assert_int_equal(f.call, 2);
	assert_true(fault_plan_check(p, ready, 3, FAULT_SIDE_SRC, 0, &f));        /* msg.ready 1 */
	assert_int_equal(f.site, fault_site_msg(VOCAB_MSG_READY));
	assert_int_equal(f.action, FAULT_ACT_DROP);
	assert_int_equal(f.call, 1);
	assert_false(fault_plan_check(p, ready, 3, FAULT_SIDE_DST, 0, &f));       /* other side */
	assert_int_equal(fault_plan_calls(p, FAULT_SITE_POST_SEND, FAULT_SIDE_SRC), 3);
	assert_int_equal(fault_plan_calls(p, FAULT_SITE_POST_SEND_SEND, FAULT_SIDE_SRC), 2);
	assert_int_equal(fault_plan_calls(p, FAULT_SITE_POST_SEND_WRITE, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p, fault_site_msg(VOCAB_MSG_READY), FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p, fault_site_msg(VOCAB_MSG_READY), FAULT_SIDE_DST), 1);
	fault_plan_free(p);
}

/* ~P: same seed, same choices; another seed, other choices; the rate is about P. */
static void test_probability_is_seeded_and_about_right(void **state)
{
	(void)state;
	const char *specs[] = { "wc.write ~0.25 -> status(GENERAL_ERR)" };
	enum fault_site s = FAULT_SITE_WC_WRITE;
	unsigned hits[3] = { 0 };
	uint64_t first_fire[3] = { 0 };
	const uint64_t seeds[3] = { 7, 7, 8 };
	for (int k = 0; k < 3; k++) {
		fault_plan *p = plan_of(seeds[k], specs, 1);
		for (int i = 1; i <= 4000; i++) {
			struct fault_fire f;
			if (fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f)) {
				hits[k]++;
				first_fire[k] = first_fire[k] ? first_fire[k] : (uint64_t)i;
			}
		}
		fault_plan_free(p);
	}
	assert_int_equal(hits[0], hits[1]);
	assert_int_equal(first_fire[0], first_fire[1]);
	assert_true(hits[0] > 850 && hits[0] < 1150);
	assert_true(hits[2] > 850 && hits[2] < 1150);
	assert_true(hits[0] != hits[2] || first_fire[0] != first_fire[2]);
}

/* A second rule's ~P draws do not depend on the first rule (per-rule streams). */
static void test_rule_streams_are_independent(void **state)
{
	(void)state;
	const char *one[] = { "dereg_mr -> die", "wc.recv ~0.5 -> drop" };
	const char *two[] = { "dereg_mr ~0.5 -> die", "wc.recv ~0.5 -> drop" };
	enum fault_site s = FAULT_SITE_WC_RECV, d = FAULT_SITE_DEREG_MR;
	uint64_t m[2] = { 0 };
	for (int k = 0; k < 2; k++) {
		fault_plan *p = plan_of(3, k ? two : one, 2);
		for (int i = 0; i < 64; i++) {
			struct fault_fire f;
			fault_plan_check(p, &d, 1, FAULT_SIDE_SRC, 0, &f);
			if (fault_plan_check(p, &s, 1, FAULT_SIDE_SRC, 0, &f))
				m[k] |= 1ull << i;
		}
		fault_plan_free(p);
	}
	assert_true(m[0] != 0 && m[0] != UINT64_MAX);
	assert_int_equal(m[0], m[1]);
}

static void test_plan_limits_and_bad_rules(void **state)
{
	(void)state;
	fault_plan *p;
	struct fault_rule r = { .site = FAULT_SITE_REG_MR, .side = FAULT_SIDE_ANY, .first = 1, .every = 1,
				.probability = 1.0, .action = FAULT_ACT_DIE };
	assert_int_equal(fault_plan_new(1, &p), 0);
	for (int i = 0; i < FAULT_RULES_MAX; i++)
		assert_int_equal(fault_plan_add(p, &r), 0);
	assert_int_equal(fault_plan_add(p, &r), -ENOSPC);
	assert_int_equal(fault_plan_n_rules(p), FAULT_RULES_MAX);
	fault_plan_free(p);
	assert_int_equal(fault_plan_new(1, &p), 0);
	r.action = FAULT_ACT_STATUS;                 /* not at reg_mr */
	assert_int_equal(fault_plan_add(p, &r), -EINVAL);
	r.action = FAULT_ACT_DIE;
	r.first = 0;
	assert_int_equal(fault_plan_add(p, &r), -EINVAL);
	assert_int_equal(fault_plan_n_rules(p), 0);
	fault_plan_free(p);
	assert_false(fault_plan_check(NULL, (enum fault_site[]){ FAULT_SITE_REG_MR }, 1, FAULT_SIDE_SRC, 0,
				      &(struct fault_fire){ 0 }));
}

/* ---- names, formatting and limits at the edges ---------------------------------------------- */

static void test_names_out_of_range(void **state)
{
	(void)state;
	assert_string_equal(fault_site_name(FAULT_SITE_COUNT), "?");
	assert_string_equal(fault_site_name((enum fault_site)-1), "?");
	assert_string_equal(fault_side_name(FAULT_SIDE_SRC), "src");
	assert_string_equal(fault_side_name(FAULT_SIDE_DST), "dst");
	assert_string_equal(fault_side_name(FAULT_SIDE_ANY), "any");
	assert_int_equal(fault_side_lookup("source"), FAULT_SIDE_SRC);
	assert_int_equal(fault_side_lookup("dest"), FAULT_SIDE_DST);
	assert_int_equal(fault_side_lookup("any"), -1);
	assert_int_equal(fault_errno_lookup("ENOPE"), -1);
	assert_false(fault_action_allowed(FAULT_SITE_COUNT, FAULT_ACT_DIE));
	assert_false(fault_action_allowed(FAULT_SITE_REG_MR, FAULT_ACT_COUNT));
	assert_true(fault_action_allowed(FAULT_SITE_REG_MR, FAULT_ACT_DIE));
	assert_true(fault_action_allowed(FAULT_SITE_ALLOC, FAULT_ACT_ERRNO));
	assert_false(fault_action_allowed(FAULT_SITE_ALLOC, FAULT_ACT_DELAY));
}

static void test_action_format_edges(void **state)
{
	(void)state;
	static const struct { enum fault_action a; int arg; uint64_t delay_ns; const char *want; } cases[] = {
		{ FAULT_ACT_ERRNO, ENOMEM, 0, "errno(ENOMEM)" },
		{ FAULT_ACT_ERRNO, 12345, 0, "errno(?)" },
		{ FAULT_ACT_DELAY, 0, 0, "delay(0ns)" },
		{ FAULT_ACT_DELAY, 0, 1501, "delay(1501ns)" },
		{ FAULT_ACT_DELAY, 0, 1500000, "delay(1500us)" },
		{ FAULT_ACT_DELAY, 0, 3000000000ull, "delay(3s)" },
		{ FAULT_ACT_CORRUPT, FAULT_CORRUPT_REPEAT, 0, "corrupt(repeat)" },
		{ FAULT_ACT_CORRUPT, FAULT_CORRUPT_COUNT, 0, "corrupt(?)" },
		{ FAULT_ACT_CORRUPT, -1, 0, "corrupt(?)" },
		{ FAULT_ACT_STATUS, VOCAB_WC_RNR_RETRY_EXC_ERR, 0, "status(RNR_RETRY_EXC_ERR)" },
		{ FAULT_ACT_EVENT, VOCAB_CM_DEVICE_REMOVAL, 0, "event(DEVICE_REMOVAL)" },
		{ FAULT_ACT_QP_ERROR, 0, 0, "qp_error" },
		{ FAULT_ACT_COUNT, 0, 0, "?" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[64];
		int n = fault_action_format(cases[i].a, cases[i].arg, cases[i].delay_ns, buf, sizeof buf);
		assert_string_equal(buf, cases[i].want);
		assert_int_equal(n, (int)strlen(cases[i].want));
	}
}

/* Canonical forms that need care: a probability %.15g cannot carry, #N with %M, a tab. */
static void test_canonical_form_edges(void **state)
{
	(void)state;
	static const struct { const char *in, *canon; } cases[] = {
		{ "wc.write ~0.30000000000000004 -> drop", "wc.write ~0.30000000000000004 -> drop" },
		{ "wc.write ~0.3 -> drop", "wc.write ~0.3 -> drop" },
		{ "reg_mr #2 %3 -> die", "reg_mr #2 %3 -> die" },
		{ "reg_mr #2 %3 *1 -> die", "reg_mr #2 %3 *1 -> die" },
		{ "reg_mr\t#5\t*2\t->\tdie", "reg_mr #5 *2 -> die" },
		{ "post_recv >1500ns -> errno(EIO)", "post_recv >1500ns -> errno(EIO)" },
		{ "alloc@src #2 -> errno(ENOMEM)", "alloc@src #2 -> errno(ENOMEM)" },
		{ "wc.recv -> corrupt", "wc.recv -> corrupt(wr_id)" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fault_rule a, b;
		char out[FAULT_SPEC_MAX];
		struct fault_parse_error e = { 0 };
		int rc = fault_rule_parse(cases[i].in, &a, &e);
		if (rc)
			print_error("'%s': col %u: %s\n", cases[i].in, e.col, e.msg);
		assert_int_equal(rc, 0);
		fault_rule_format(&a, out, sizeof out);
		assert_string_equal(out, cases[i].canon);
		assert_int_equal(fault_rule_parse(out, &b, NULL), 0);
		assert_memory_equal(&a, &b, sizeof a);
	}
}

/* More invalid rules: overlong words, missing numbers and units, corrupt() at the wrong site. */
static void test_invalid_rules_more(void **state)
{
	(void)state;
	static const struct { const char *spec; unsigned col; const char *msg; } cases[] = {
		{ "@src -> die", 1, "expected a site" },
		{ "reg_mr_and_a_name_much_longer_than_any_site -> die", 1, "expected a site" },
		{ "reg_mr@a_side_name_much_longer_than_any_side_token -> die", 8, "expected a side" },
		{ "reg_mr >ms -> die", 9, ">T (after virtual time T) needs a number" },
		{ "reg_mr >5nanoseconds -> die", 10, "needs a unit" },
		{ "reg_mr ~x -> die", 9, "~ needs a probability" },
		{ "reg_mr ~0.0000000000000000000000000000000001 -> die", 9, "~ needs a probability" },
		{ "reg_mr #3\t#4 -> die", 11, "given twice" },
		{ "reg_mr -> errno(ENOMEM_BUT_WITH_A_NAME_FAR_TOO_LONG_FOR_IT)", 17, "errno(...) needs an argument" },
		{ "reg_mr -> an_action_name_far_longer_than_any_known_one", 11, "expected an action" },
		{ "reg_mr -> delay(ms)", 17, "delay(T) needs a number" },
		{ "wc.write -> corrupt(len)", 13, "corrupt(len) does not apply to site 'wc.write'" },
		{ "msg.ready -> corrupt(wr_id)", 14, "corrupt(wr_id) does not apply to site 'msg.ready'" },
		{ "alloc -> delay(1ms)", 10, "does not apply to site 'alloc'" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fault_rule r;
		struct fault_parse_error e = { 0 };
		int rc = fault_rule_parse(cases[i].spec, &r, &e);
		if (rc != -EINVAL || e.col != cases[i].col || !strstr(e.msg, cases[i].msg))
			print_error("'%s': rc %d col %u msg '%s' (want col %u '%s')\n", cases[i].spec, rc, e.col,
				    e.msg, cases[i].col, cases[i].msg);
		assert_int_equal(rc, -EINVAL);
		assert_int_equal(e.col, cases[i].col);
		assert_non_null(strstr(e.msg, cases[i].msg));
	}
	/* without an error record, and without a rule to fill */
	struct fault_rule r;
	assert_int_equal(fault_rule_parse("reg_mx -> die", &r, NULL), -EINVAL);
	assert_int_equal(fault_rule_parse(NULL, &r, NULL), -EINVAL);
	assert_int_equal(fault_rule_parse("reg_mr -> die", NULL, NULL), -EINVAL);
}

/* fault_plan_add validates a rule built by hand as the parser would. */
static void test_plan_add_rejects_each_bad_field(void **state)
{
	(void)state;
	const struct fault_rule good = { .site = FAULT_SITE_POST_SEND, .side = FAULT_SIDE_SRC, .first = 1, .every = 1,
					 .probability = 1.0, .action = FAULT_ACT_DELAY, .delay_ns = 1000 };
	struct fault_rule bad[10];
	for (size_t i = 0; i < 10; i++)
		bad[i] = good;
	bad[0].site = FAULT_SITE_COUNT;
	bad[1].side = (enum fault_side)(FAULT_SIDE_ANY + 1);
	bad[2].every = 0;
	bad[3].probability = 0.0;
	bad[4].probability = 1.5;
	bad[5].delay_ns = FAULT_MAX_DELAY_NS + 1;
	bad[6].site = fault_site_msg(VOCAB_MSG_READY);
	bad[6].action = FAULT_ACT_CORRUPT;
	bad[6].arg = FAULT_CORRUPT_WRID;         /* wr_id is for completions */
	bad[7] = bad[6];
	bad[7].arg = FAULT_CORRUPT_COUNT;
	bad[8].first = 0;
	bad[9].action = FAULT_ACT_COUNT;
	fault_plan *p;
	assert_int_equal(fault_plan_new(1, &p), 0);
	for (size_t i = 0; i < 10; i++) {
		if (fault_plan_add(p, &bad[i]) != -EINVAL)
			print_error("bad rule %zu accepted\n", i);
		assert_int_equal(fault_plan_add(p, &bad[i]), -EINVAL);
	}
	assert_int_equal(fault_plan_n_rules(p), 0);
	assert_int_equal(fault_plan_add(NULL, &good), -EINVAL);
	assert_int_equal(fault_plan_add(p, NULL), -EINVAL);
	struct fault_parse_error e = { 0 };
	assert_int_equal(fault_plan_add_spec(p, "reg_mr -> bogus", &e), -EINVAL);
	assert_int_equal(e.col, 11);
	assert_int_equal(fault_plan_add(p, &good), 0);
	assert_int_equal(fault_plan_n_rules(p), 1);
	assert_non_null(fault_plan_rule(p, 0));
	assert_int_equal(fault_plan_rule(p, 0)->delay_ns, 1000);
	assert_null(fault_plan_rule(p, 1));
	assert_int_equal(fault_plan_new(1, NULL), -EINVAL);
	fault_plan *q = NULL;
	fail_next_calloc = true;
	assert_int_equal(fault_plan_new(1, &q), -ENOMEM);
	assert_null(q);
	/* counts: out of range asks are 0, not a crash */
	assert_int_equal(fault_plan_calls(NULL, FAULT_SITE_REG_MR, FAULT_SIDE_SRC), 0);
	assert_int_equal(fault_plan_calls(p, FAULT_SITE_COUNT, FAULT_SIDE_SRC), 0);
	assert_int_equal(fault_plan_calls(p, FAULT_SITE_REG_MR, FAULT_SIDES), 0);
	fault_plan_free(p);
}

/* The counts file `migbed torture` reads: a header, one line per (site, side) called. */
static void test_write_counts(void **state)
{
	(void)state;
	fault_plan *p;
	assert_int_equal(fault_plan_new(1, &p), 0);
	enum fault_site ready[] = { fault_site_msg(VOCAB_MSG_READY), FAULT_SITE_POST_SEND_SEND, FAULT_SITE_POST_SEND };
	enum fault_site reg = FAULT_SITE_REG_MR;
	struct fault_fire f;
	for (int i = 0; i < 3; i++)
		fault_plan_check(p, &reg, 1, FAULT_SIDE_DST, 0, &f);
	fault_plan_check(p, ready, 3, FAULT_SIDE_SRC, 0, &f);
	char buf[512] = "";
	FILE *m = fmemopen(buf, sizeof buf, "w");
	assert_non_null(m);
	assert_int_equal(fault_plan_write_counts(p, m), 0);
	fclose(m);
	assert_string_equal(buf, "# migbed fault-counts 1\n"
				 "reg_mr dst 3\n"
				 "post_send src 1\n"
				 "post_send.send src 1\n"
				 "msg.ready src 1\n");
	/* a stream that cannot be written: -EIO */
	FILE *ro = fopen("/dev/null", "r");
	assert_non_null(ro);
	assert_int_equal(fault_plan_write_counts(p, ro), -EIO);
	fclose(ro);
	fault_plan_free(p);
}

/* Every site's canonical torture action is an action the site accepts: "SITE -> CANONICAL"
 * parses, and formats back to the same action. */
static void test_canonical_actions_parse(void **state)
{
	(void)state;
	for (int site = 0; site < FAULT_SITE_COUNT; site++) {
		char spec[FAULT_SPEC_MAX], back[FAULT_SPEC_MAX];
		struct fault_rule r;
		struct fault_parse_error e = { 0 };
		snprintf(spec, sizeof spec, "%s -> %s", fault_site_name((enum fault_site)site),
			 fault_site_canonical((enum fault_site)site));
		if (fault_rule_parse(spec, &r, &e))
			fail_msg("'%s': col %u: %s", spec, e.col, e.msg);
		assert_int_equal(r.site, site);
		assert_true(fault_action_format(r.action, r.arg, r.delay_ns, back, sizeof back) > 0);
		assert_string_equal(back, fault_site_canonical((enum fault_site)site));
	}
	assert_string_equal(fault_site_canonical(FAULT_SITE_REG_MR), "errno(ENOMEM)");
	assert_string_equal(fault_site_canonical(fault_site_msg(VOCAB_MSG_READY)), "drop");
	assert_string_equal(fault_site_canonical(FAULT_SITE_COUNT), "?");
}

/* ~P in exponent form, both cases of the e and both signs; an e without digits is no exponent. */
static void test_probability_exponents(void **state)
{
	(void)state;
	assert_true(parse_ok("reg_mr ~1E-2 -> die").probability == 0.01);
	assert_true(parse_ok("reg_mr ~1e+0 -> die").probability == 1.0);
	assert_true(parse_ok("reg_mr ~2.5e-3 -> die").probability == 0.0025);
	struct fault_rule r;
	struct fault_parse_error e = { 0 };
	assert_int_equal(fault_rule_parse("reg_mr ~2.5E+3 -> die", &r, &e), -EINVAL);   /* > 1 */
	assert_int_equal(fault_rule_parse("reg_mr ~1e -> die", &r, &e), -EINVAL);
	assert_string_equal(fault_action_name(FAULT_ACT_QP_ERROR), "qp_error");
	assert_string_equal(fault_action_name(FAULT_ACT_COUNT), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_issue_examples),
		cmocka_unit_test(test_parse_triggers_and_args),
		cmocka_unit_test(test_canonical_form_round_trips),
		cmocka_unit_test(test_invalid_rules_name_the_column),
		cmocka_unit_test(test_overlong_rule_rejected),
		cmocka_unit_test(test_site_names_follow_wire_and_cm_tables),
		cmocka_unit_test(test_canonical_actions_parse),
		cmocka_unit_test(test_counting_triggers),
		cmocka_unit_test(test_time_trigger_counts_only_later_calls),
		cmocka_unit_test(test_any_side_rule_counts_both_sides),
		cmocka_unit_test(test_rules_counted_across_sides_and_first_rule_wins),
		cmocka_unit_test(test_rule_stats_count_each_rule_apart),
		cmocka_unit_test(test_one_call_counts_under_every_site),
		cmocka_unit_test(test_probability_is_seeded_and_about_right),
		cmocka_unit_test(test_rule_streams_are_independent),
		cmocka_unit_test(test_plan_limits_and_bad_rules),
		cmocka_unit_test(test_names_out_of_range),
		cmocka_unit_test(test_action_format_edges),
		cmocka_unit_test(test_canonical_form_edges),
		cmocka_unit_test(test_invalid_rules_more),
		cmocka_unit_test(test_plan_add_rejects_each_bad_field),
		cmocka_unit_test(test_write_counts),
		cmocka_unit_test(test_probability_exponents),
		cmocka_unit_test(test_format_parse_property),
		cmocka_unit_test(test_plan_takes_only_writable_rules),
		cmocka_unit_test(test_probability_at_the_end_of_the_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
