/* SPDX-License-Identifier: MIT */
/* swarm_test - the plans (a pure function of the seed; every rule parses; BUGGIFY: some runs
 * without faults, some with many), the fault table (real sites, actions allowed there, named
 * causes; the rows docs/faults.md's matrix pins), the config table, the oracles on synthetic
 * results, the seed ranges and shards, and swarm_run on a small model guest (one callback per
 * seed of the shard, a stop, the determinism check, a refused config is an ERROR finding). */
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

#include "run/judge.h"
#include "run/swarm.h"
#include "sim/size.h"
#include "sim/tracegen.h"
#include "vocab/cause.h"

#define PLANS 3000

static void test_plan_is_a_function_of_the_seed(void **state)
{
	static struct swarm_plan a, b;
	static char ta[SWARM_CONFIG_MAX], tb[SWARM_CONFIG_MAX];
	(void)state;
	swarm_expand(42, &a);
	swarm_expand(42, &b);
	assert_true(swarm_plan_text(&a, ta, sizeof ta));
	assert_true(swarm_plan_text(&b, tb, sizeof tb));
	assert_string_equal(ta, tb);
	assert_memory_equal(a.fault_row, b.fault_row, sizeof a.fault_row);
	assert_int_equal(strncmp(ta, "--seed 42 --guest ", 18), 0);
	swarm_expand(43, &b);
	assert_true(swarm_plan_text(&b, tb, sizeof tb));
	assert_string_not_equal(ta, tb);
}

/* Multi-block layouts come from their own stream: a one-block plan is the plan of before (seed
 * 1, as the swarm printed it before layouts), a multi-block one differs only by --guest (the
 * blocks' total) and --blocks after it (seed 29; before: --guest 256M). A share of the plans
 * have several blocks, whose total is --guest, some smaller than any chunk (1M), some not
 * chunk aligned, in the three layouts. */
static void test_multiblock_plans(void **state)
{
	static struct swarm_plan p;
	static char text[SWARM_CONFIG_MAX];
	size_t multi = 0, tiny = 0, odd = 0, pc = 0, numa = 0, other = 0;
	(void)state;
	swarm_expand(1, &p);
	assert_true(swarm_plan_text(&p, text, sizeof text));
	assert_string_equal(text, "--seed 1 --guest 128M --pattern rand-set --workers 2 --sweep-rate 128M --chunk-size 64M "
			    "--dst-chunk-size 64M --pin-all --max-bandwidth unlimited --downtime-limit-ms 300 --max-time-ms 30000");
	swarm_expand(29, &p);
	assert_true(swarm_plan_text(&p, text, sizeof text));
	assert_string_equal(text, "--seed 29 --guest 272M --blocks pc.ram=256M,vga.vram=16M --pattern idle --chunk-size 1M "
			    "--dst-chunk-size 1M --max-bandwidth 32M --downtime-limit-ms 1000 --max-time-ms 30000");
	for (uint64_t seed = 1; seed <= PLANS; seed++) {
		struct tgen_opts o;
		struct diag d;
		uint64_t guest = 0;
		swarm_expand(seed, &p);
		assert_string_equal(p.keys[1].key, "guest");
		if (p.n_keys < 3 || strcmp(p.keys[2].key, "blocks"))
			continue;
		multi++;
		tgen_defaults(&o);
		assert_int_equal(tgen_blocks_parse(&o, p.keys[2].value, &d), 0);
		assert_int_equal(size_parse(p.keys[1].value, &guest), 0);
		assert_int_equal(tgen_blocks_total(&o), guest);
		for (size_t b = 0; b < o.n_blocks; b++) {
			tiny += o.blocks[b].size_bytes < (1u << 20);
			odd += o.blocks[b].size_bytes > (1u << 20) && o.blocks[b].size_bytes % (1u << 20);
		}
		pc += !strncmp(p.keys[2].value, "pc.ram=", 7) && strstr(p.keys[2].value, "ram1=") == NULL;
		numa += !strncmp(p.keys[2].value, "mem0=", 5);
		other += strstr(p.keys[2].value, "ram1=") != NULL;
	}
	assert_true(multi > PLANS * (SWARM_BLOCKS_PCT - 5) / 100 && multi < PLANS * (SWARM_BLOCKS_PCT + 5) / 100);
	assert_true(tiny > multi / 2 && odd > multi / 4);
	assert_true(pc > multi / 5 && numa > multi / 5 && other > multi / 5);
}

/* Every rule of 3000 plans parses, fits, is its row's site and action; BUGGIFY's spread. */
static void test_plans_parse_and_spread(void **state)
{
	static struct swarm_plan p;
	static char text[SWARM_CONFIG_MAX];
	size_t none = 0, many = 0, qemu = 0, mismatch = 0;
	(void)state;
	for (uint64_t seed = 1; seed <= PLANS; seed++) {
		swarm_expand(seed, &p);
		assert_true(swarm_plan_text(&p, text, sizeof text));
		assert_true(p.n_faults <= SWARM_FAULTS_MAX);
		for (size_t i = 0; i < p.n_faults; i++) {
			struct fault_rule r;
			struct fault_parse_error e;
			assert_int_equal(fault_rule_parse(p.faults[i], &r, &e), 0);
			assert_string_equal(fault_site_name(r.site), swarm_fault_row_site(p.fault_row[i]));
			assert_non_null(strstr(p.faults[i], swarm_fault_row_action(p.fault_row[i])));
			assert_int_equal((int)r.side, p.fault_side[i]);   /* the side the judge matches */
		}
		none += p.n_faults == 0;
		many += p.n_faults >= 6;
		qemu += (p.cfg >> SWARM_CFG_QEMU_PEER) & 1;
		mismatch += strstr(text, "--on-mismatch refuse") != NULL;
	}
	assert_true(none > PLANS / 4 && none < PLANS * 3 / 4);   /* some runs have none ... */
	assert_true(many > PLANS / 50);                          /* ... some many */
	assert_true(qemu > PLANS / 10);
	assert_true(mismatch > PLANS / 50);
}

/* --backend verbs: the same generator, restricted (swarm.h): its keys first, small guests, no
 * dst-memlock, every plan SLOW, only the rows whose fault goes through a real verbs call, and
 * each of those rows drawn by some plan; the model's plans are not moved by it. */
static void test_verbs_plans(void **state)
{
	static struct swarm_plan p, m;
	static char text[SWARM_CONFIG_MAX], head[64], mt[SWARM_CONFIG_MAX];
	static bool used[64];
	const struct swarm_on on = { .wait_timeout_ms = 4000 };
	size_t none = 0, some = 0;
	(void)state;
	assert_true(swarm_fault_rows() <= 64);
	for (uint64_t seed = 1; seed <= PLANS; seed++) {
		swarm_expand_on(seed, &on, &p);
		assert_true(swarm_plan_text(&p, text, sizeof text));
		snprintf(head, sizeof head, "--seed %llu --backend verbs --wait-timeout-ms 4000 --guest ",
			 (unsigned long long)seed);
		assert_int_equal(strncmp(text, head, strlen(head)), 0);
		const char *g = text + strlen(head);
		assert_true(!strncmp(g, "16M ", 4) || !strncmp(g, "32M ", 4) || !strncmp(g, "64M ", 4));
		assert_null(strstr(text, "--dst-memlock"));
		assert_non_null(strstr(text, " --max-time-ms 5000"));
		assert_null(strstr(text, "-rate 25600"));   /* nor 102400: light workloads */
		assert_null(strstr(text, "--workers 3"));
		assert_true(p.cfg & (1u << SWARM_CFG_SLOW));
		for (size_t i = 0; i < p.n_faults; i++) {
			assert_true(swarm_fault_row_on_verbs(p.fault_row[i]));
			used[p.fault_row[i]] = true;
		}
		none += p.n_faults == 0;
		some += p.n_faults >= 3;
		swarm_expand(seed, &m);   /* the model's plan: its own, without the verbs keys */
		assert_true(swarm_plan_text(&m, mt, sizeof mt));
		assert_null(strstr(mt, "--backend"));
	}
	assert_true(none > PLANS / 5 && none < PLANS / 2);
	assert_true(some > PLANS / 10);
	for (size_t row = 0; row < swarm_fault_rows(); row++)
		assert_true(used[row] == swarm_fault_row_on_verbs(row));
}

static size_t row_of(const char *site, const char *action)
{
	for (size_t i = 0; i < swarm_fault_rows(); i++)
		if (!strcmp(swarm_fault_row_site(i), site) && !strcmp(swarm_fault_row_action(i), action))
			return i;
	fail_msg("no row %s -> %s", site, action);
	return 0;
}

/* Each row: a real site, an action allowed there (the rule parses), named causes only. */
static void test_fault_table_rows(void **state)
{
	size_t corrupting = 0;
	(void)state;
	assert_true(swarm_fault_rows() >= 30);
	for (size_t i = 0; i < swarm_fault_rows(); i++) {
		char spec[FAULT_SPEC_MAX];
		struct fault_rule r;
		struct fault_parse_error e = { 0 };
		snprintf(spec, sizeof spec, "%s -> %s", swarm_fault_row_site(i), swarm_fault_row_action(i));
		if (fault_rule_parse(spec, &r, &e) != 0)
			fail_msg("row %zu '%s': col %u: %s", i, spec, e.col, e.msg);
		assert_true(r.action != FAULT_ACT_DIE);
		corrupting += swarm_fault_row_corrupts(i);
		assert_false(swarm_fault_explains(i, CAUSE_INTERNAL));
		assert_false(swarm_fault_explains(i, CAUSE_NONE));
	}
	assert_int_equal(corrupting, 1);
	assert_null(swarm_fault_row_site(swarm_fault_rows()));
}

/* Rows docs/faults.md's matrix and bats/scenarios/fault-*.scn pin. */
/* The rows on verbs: those make check's verbs lane replays from the fault matrix. */
static void test_fault_rows_on_verbs(void **state)
{
	(void)state;
	assert_true(swarm_fault_row_on_verbs(row_of("reg_mr", "errno(ENOMEM)")));
	assert_true(swarm_fault_row_on_verbs(row_of("wc.write", "status(RETRY_EXC_ERR)")));
	assert_true(swarm_fault_row_on_verbs(row_of("wc.recv", "status(LOC_LEN_ERR)")));
	assert_true(swarm_fault_row_on_verbs(row_of("modify_qp", "errno(EINVAL)")));
	assert_true(swarm_fault_row_on_verbs(row_of("connect", "errno(ECONNREFUSED)")));
	assert_true(swarm_fault_row_on_verbs(row_of("cm.disconnected", "drop")));
	assert_true(swarm_fault_row_on_verbs(row_of("post_send.write", "errno(ENOMEM)")));
	assert_false(swarm_fault_row_on_verbs(row_of("post_send.write", "drop")));
	assert_false(swarm_fault_row_on_verbs(row_of("post_recv", "errno(EIO)")));
	assert_false(swarm_fault_row_on_verbs(row_of("msg.ready", "drop")));
	assert_false(swarm_fault_row_on_verbs(row_of("alloc", "errno(ENOMEM)")));
	assert_false(swarm_fault_row_on_verbs(swarm_fault_rows()));
}

static void test_fault_table_matches_the_matrix(void **state)
{
	(void)state;
	assert_true(swarm_fault_explains(row_of("reg_mr", "errno(ENOMEM)"), CAUSE_DEST_REG_FAILED));
	assert_true(swarm_fault_explains(row_of("reg_mr", "errno(ENOMEM)"), CAUSE_CONTROL_REG_FAILED));
	assert_true(swarm_fault_explains(row_of("post_send.write", "drop"), CAUSE_VERIFY_MISMATCH));
	assert_true(swarm_fault_row_corrupts(row_of("post_send.write", "drop")));
	assert_true(swarm_fault_explains(row_of("wc.write", "drop"), CAUSE_TIMEOUT));
	assert_true(swarm_fault_explains(row_of("msg.register_result", "drop"), CAUSE_UNEXPECTED_MESSAGE));
	assert_true(swarm_fault_explains(row_of("msg.compress", "corrupt(payload)"), CAUSE_BAD_COMPRESS));
	assert_true(swarm_fault_explains(row_of("cm.disconnected", "drop"), CAUSE_DEST_INCOMPLETE));
	assert_true(swarm_fault_explains(row_of("alloc", "errno(ENOMEM)"), CAUSE_RESOURCE_EXHAUSTED));
	assert_false(swarm_fault_explains(row_of("dereg_mr", "errno(EBUSY)"), CAUSE_TIMEOUT));   /* teardown only */
	assert_false(swarm_fault_explains(row_of("post_send.write", "errno(EIO)"), CAUSE_VERIFY_MISMATCH));
	assert_false(swarm_fault_explains(swarm_fault_rows(), CAUSE_TIMEOUT));
}

static void test_config_table(void **state)
{
	(void)state;
	assert_true(swarm_config_explains(1u << SWARM_CFG_REFUSE, CAUSE_CHUNK_SIZE_MISMATCH));
	assert_false(swarm_config_explains(0, CAUSE_CHUNK_SIZE_MISMATCH));
	assert_true(swarm_config_explains(1u << SWARM_CFG_SLOW, CAUSE_NOT_CONVERGED));
	assert_true(swarm_config_explains(1u << SWARM_CFG_MEMLOCK, CAUSE_DEST_PIN_ALL_FAILED));
	assert_true(swarm_config_explains(1u << SWARM_CFG_QEMU_PEER, CAUSE_QEMU_HANG));
	assert_false(swarm_config_explains(~0u, CAUSE_INTERNAL));
	assert_false(swarm_config_explains(~0u, CAUSE_VERIFY_MISMATCH));
}

/* A plan with one rule of row `row` at rule_side, and a result that fired it (or not) and
 * ended in cause, named at cause_side. */
static void judge_at(size_t row, int rule_side, bool fired, int cause, int cause_side, unsigned cfg,
		     struct swarm_run *r)
{
	static struct swarm_plan p;
	static struct run_result res;
	memset(&p, 0, sizeof p);
	memset(&res, 0, sizeof res);
	p.seed = 9;
	p.cfg = cfg;
	p.n_faults = 1;
	p.fault_row[0] = row;
	p.fault_side[0] = rule_side;
	res.out.n_faults = 1;
	res.out.faults[0].st.fired = fired;
	res.out.completed = cause == CAUSE_NONE;
	res.out.cause = cause;
	res.out.side = cause == CAUSE_NONE ? RUN_SIDE_NONE : cause_side;
	res.out.detail = "what the side said";
	swarm_judge(&p, &res, r);
}

/* The same at the source: the rule's side and the cause's. */
static void judge_one(size_t row, bool fired, int cause, unsigned cfg, struct swarm_run *r)
{
	judge_at(row, VOCAB_SIDE_SRC, fired, cause, VOCAB_SIDE_SRC, cfg, r);
}

/* Per-side matching (issue 15): a cause is explained by a fired rule only on the side the row
 * produces it, the rule's own or its peer's (a consequence there). */
static void test_fault_table_sides(void **state)
{
	static struct swarm_run r;
	size_t rem = row_of("post_send.write", "status(REM_ACCESS_ERR)");
	size_t corrupt = row_of("msg.register_request", "corrupt(payload)");
	size_t send_drop = row_of("wc.send", "drop");
	(void)state;
	assert_true(swarm_fault_explains_at(rem, true, CAUSE_REMOTE_ACCESS_ERROR));
	assert_false(swarm_fault_explains_at(rem, false, CAUSE_REMOTE_ACCESS_ERROR));
	assert_false(swarm_fault_explains_at(corrupt, true, CAUSE_BAD_REGISTER_REQUEST));
	assert_true(swarm_fault_explains_at(corrupt, false, CAUSE_BAD_REGISTER_REQUEST));
	assert_true(swarm_fault_explains_at(send_drop, true, CAUSE_TIMEOUT));
	assert_true(swarm_fault_explains_at(send_drop, false, CAUSE_TIMEOUT));
	/* S6: the destination's READY completion lost after the last QEMU FILE; the source names it */
	assert_true(swarm_fault_explains_at(send_drop, false, CAUSE_DEST_INCOMPLETE));
	assert_false(swarm_fault_explains_at(send_drop, true, CAUSE_DEST_INCOMPLETE));
	for (size_t i = 0; i < swarm_fault_rows(); i++)   /* every row names each of its causes somewhere */
		assert_false(swarm_fault_explains_at(i, true, CAUSE_NONE) || swarm_fault_explains_at(i, false, CAUSE_NONE));

	judge_at(rem, VOCAB_SIDE_SRC, true, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_SRC, 0, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);
	judge_at(rem, VOCAB_SIDE_SRC, true, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_DST, 0, &r);
	assert_int_equal(r.finding, SWARM_F_UNEXPLAINED);   /* the source's own fault, named by the destination */
	assert_non_null(strstr(r.detail, "REMOTE_ACCESS_ERROR at dst with 1 fired fault rule"));
	judge_at(corrupt, VOCAB_SIDE_SRC, true, CAUSE_BAD_REGISTER_REQUEST, VOCAB_SIDE_DST, 0, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);          /* the receiver names the corrupted message */
	judge_at(corrupt, VOCAB_SIDE_SRC, true, CAUSE_BAD_REGISTER_REQUEST, VOCAB_SIDE_SRC, 0, &r);
	assert_int_equal(r.finding, SWARM_F_UNEXPLAINED);
	judge_at(send_drop, VOCAB_SIDE_DST, true, CAUSE_DEST_INCOMPLETE, VOCAB_SIDE_SRC, 0, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);          /* S6 */
	judge_at(rem, VOCAB_SIDE_SRC, false, CAUSE_CHUNK_SIZE_MISMATCH, VOCAB_SIDE_DST, 1u << SWARM_CFG_REFUSE, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);          /* the configuration table has no side */
}

static void test_oracles(void **state)
{
	static struct swarm_run r;
	size_t drop = row_of("post_send.write", "drop"), eio = row_of("post_send.write", "errno(EIO)");
	(void)state;
	judge_one(eio, true, CAUSE_NONE, 0, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);
	assert_true(r.completed);
	assert_int_equal(r.fired, 1);
	judge_one(eio, true, CAUSE_WRITE_POST_FAILED, 0, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);
	judge_one(eio, false, CAUSE_WRITE_POST_FAILED, 0, &r);     /* it did not fire: nothing explains it */
	assert_int_equal(r.finding, SWARM_F_UNEXPLAINED);
	assert_non_null(strstr(r.detail, "WRITE_POST_FAILED at src with 0 fired fault rules: what the side said"));
	judge_one(eio, true, CAUSE_TIMEOUT, 0, &r);
	assert_int_equal(r.finding, SWARM_F_UNEXPLAINED);
	judge_one(eio, true, CAUSE_VERIFY_MISMATCH, 0, &r);
	assert_int_equal(r.finding, SWARM_F_CORRUPT);
	judge_at(drop, VOCAB_SIDE_SRC, true, CAUSE_VERIFY_MISMATCH, VOCAB_SIDE_DST, 0, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);
	judge_one(drop, true, CAUSE_INTERNAL, ~0u, &r);
	assert_int_equal(r.finding, SWARM_F_INTERNAL);
	judge_one(eio, false, CAUSE_NOT_CONVERGED, 1u << SWARM_CFG_SLOW, &r);
	assert_int_equal(r.finding, SWARM_F_NONE);
	judge_one(eio, false, 0, 0, &r);
	r.completed = false;
	{
		static struct swarm_plan p;
		static struct run_result res;   /* failed without a cause */
		memset(&p, 0, sizeof p);
		memset(&res, 0, sizeof res);
		res.out.side = RUN_SIDE_NONE;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_UNNAMED);
	}
	/* the source oracle: a source the run damaged is data loss, completed or failed */
	for (int cause = CAUSE_NONE; cause != -1; cause = cause == CAUSE_NONE ? CAUSE_WRITE_POST_FAILED : -1) {
		static struct swarm_plan p;
		static struct run_result res;
		memset(&p, 0, sizeof p);
		memset(&res, 0, sizeof res);
		res.out.completed = cause == CAUSE_NONE;
		res.out.cause = cause;
		res.out.src_checked = true;
		res.out.src_intact = true;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, cause == CAUSE_NONE ? SWARM_F_NONE : SWARM_F_UNEXPLAINED);
		res.out.src_intact = false;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_DATA_LOSS);
		assert_non_null(strstr(r.detail, cause == CAUSE_NONE ? "(completed) is not what the guest wrote"
								     : "(WRITE_POST_FAILED) is not what the guest wrote"));
	}
	/* the continuing source: after a failure a fired rule explains, the same source migrated
	 * again healed must complete (or fail by its configuration), its memory the guest's */
	{
		static struct swarm_plan p;
		static struct run_result res;
		memset(&p, 0, sizeof p);
		p.n_faults = 1;
		p.fault_row[0] = eio;
		memset(&res, 0, sizeof res);
		res.out.cause = CAUSE_WRITE_POST_FAILED;
		res.out.side = VOCAB_SIDE_SRC;
		res.out.n_faults = 1;
		res.out.faults[0].st.fired = 1;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_NONE);   /* not continued: nothing more to judge */
		res.out.cont_checked = res.out.cont_completed = res.out.cont_src_intact = true;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_NONE);
		res.out.cont_completed = false;
		res.out.cont_cause = CAUSE_TIMEOUT;
		res.out.cont_side = VOCAB_SIDE_SRC;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_LIVENESS);
		assert_non_null(strstr(r.detail, "continuing source: the same source, migrated again with its fault "
						 "rules removed, ended TIMEOUT at src"));
		res.out.cont_completed = true;
		res.out.cont_src_intact = false;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_DATA_LOSS);
	}
	/* the leak oracle: an RDMA object alive after the run is a leak, completed or failed */
	{
		static struct swarm_plan p;
		static struct run_result res;
		memset(&p, 0, sizeof p);
		memset(&res, 0, sizeof res);
		res.out.completed = true;
		res.out.objects_checked = true;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_NONE);
		res.out.live_objects = 2;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_LEAK);
		assert_non_null(strstr(r.detail, "2 RDMA objects (endpoint, listener, memory region) outlived the run (completed)"));
		res.out.objects_checked = false;   /* not checked (one side in this process, verbs): nothing */
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_NONE);
		/* the multi-block oracle: a WRITE outside the destination's blocks corrupts, even completed */
		res.out.objects_checked = true;
		res.out.live_objects = 0;
		res.out.stray_writes = 1;
		swarm_judge(&p, &res, &r);
		assert_int_equal(r.finding, SWARM_F_CORRUPT);
		assert_non_null(strstr(r.detail, "1 RDMA WRITE landed outside the destination's RAM blocks or across a block's edge (completed)"));
	}
	assert_string_equal(swarm_finding_name(SWARM_F_UNEXPLAINED), "unexplained");
	assert_int_equal(swarm_finding_lookup("corrupt"), SWARM_F_CORRUPT);
	assert_int_equal(swarm_finding_lookup("nope"), -1);
	assert_string_equal(swarm_finding_name(SWARM_FINDINGS), "?");
}

static void test_seeds_and_shards(void **state)
{
	uint64_t lo, hi;
	struct diag d = { 0 };
	(void)state;
	assert_int_equal(swarm_seeds_parse("1..100", &lo, &hi, &d), 0);
	assert_int_equal(lo, 1);
	assert_int_equal(hi, 100);
	assert_int_equal(swarm_seeds_parse("7", &lo, &hi, &d), 0);
	assert_int_equal(lo, 7);
	assert_int_equal(hi, 7);
	assert_int_equal(swarm_seeds_parse("0..0", &lo, &hi, &d), 0);
	assert_int_equal(swarm_seeds_parse("10..1", &lo, &hi, &d), -EINVAL);
	assert_string_equal(d.msg, "'10..1': the range is empty (B < A)");
	const char *bad[] = { "", "a", "1..", "..5", "1..5x", "-1", "1...5", "99999999999999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(swarm_seeds_parse(bad[i], &lo, &hi, &d), -EINVAL);
	assert_int_equal(swarm_seeds_parse("1..100000000", &lo, &hi, &d), 0);
	assert_int_equal(swarm_seeds_parse("1..100000001", &lo, &hi, &d), -EINVAL);
	/* the shards of a range: every seed in exactly one */
	for (uint64_t n = 1; n <= 5; n++)
		for (uint64_t seed = 10; seed < 40; seed++) {
			int in = 0;
			for (uint64_t k = 1; k <= n; k++)
				in += swarm_in_shard(seed, 10, k, n);
			assert_int_equal(in, 1);
		}
	assert_false(swarm_in_shard(9, 10, 1, 1));
}

/* ---- swarm_run on the model: each plan run as the default small config (no plan keys) ---- */

struct calls {
	size_t configs, befores, dones, stop_at, refuse_seed;
	size_t marks, checks, leak_at, stalls;   /* the verbs hooks: leak_at: check k leaks */
	bool retry_exc;                          /* every run fails its first WRITE RETRY_EXC_ERR */
	uint64_t seeds[64];
	struct swarm_run last;
};

static int small_config(void *arg, const struct swarm_plan *p, struct runcfg *c, struct diag *d)
{
	struct calls *k = arg;
	k->configs++;
	if (p->seed == k->refuse_seed)
		return diag_set(d, "no config for seed %llu", (unsigned long long)p->seed);
	runcfg_defaults(c);
	c->gen.guest_bytes = 16u << 20;
	c->gen.worker_bytes = 4u << 20;
	c->seed = p->seed;
	c->gen.seed = p->seed;
	if (k->retry_exc)   /* a rule of no plan row: nothing explains the cause */
		snprintf(c->faults[c->n_faults++], sizeof c->faults[0], "wc.write@src #1 -> status(RETRY_EXC_ERR)");
	return 0;
}

static void leak_mark(void *arg)
{
	((struct calls *)arg)->marks++;
}

static int leak_check(void *arg, char *detail, size_t n)
{
	struct calls *k = arg;
	snprintf(detail, n, "left something (check %zu)", ++k->checks);
	return k->checks == k->leak_at;
}

static void stalled(void *arg, const struct swarm_run *r)
{
	struct calls *k = arg;
	assert_int_equal(r->cause, CAUSE_TRANSPORT_RETRY_EXCEEDED);
	k->stalls++;
}

static int before(void *arg, size_t k, const struct swarm_plan *p, const char *text)
{
	struct calls *c = arg;
	(void)p;
	assert_non_null(strstr(text, "--seed"));
	c->befores++;
	return c->stop_at && k == c->stop_at;
}

static void done(void *arg, const struct swarm_plan *p, const struct runcfg *c, const struct swarm_run *r)
{
	struct calls *k = arg;
	(void)p, (void)c;
	if (k->dones < 64)
		k->seeds[k->dones] = r->seed;
	k->dones++;
	k->last = *r;
}

static void test_run_shard_stop_and_determinism(void **state)
{
	static struct calls k;
	struct swarm_result res;
	struct diag d = { 0 };
	char dir[] = "/tmp/swarm_test-XXXXXX";
	(void)state;
	assert_non_null(mkdtemp(dir));
	struct swarm_config sc = { .seed_lo = 5, .seed_hi = 12, .shard_k = 2, .shard_n = 3, .scratch = dir,
				   .config = small_config, .before = before, .done = done, .arg = &k };
	assert_int_equal(swarm_run(&sc, &res, &d), 0);
	assert_int_equal(res.runs, 3);                   /* 6, 9, 12 */
	assert_int_equal(k.seeds[0], 6);
	assert_int_equal(k.seeds[2], 12);
	assert_int_equal(res.completed, 3);
	assert_int_equal(res.n[SWARM_F_NONE], 3);
	memset(&k, 0, sizeof k);
	sc.shard_k = sc.shard_n = 1;
	sc.check_determinism = true;
	k.stop_at = 2;
	k.refuse_seed = 6;
	assert_int_equal(swarm_run(&sc, &res, &d), 0);
	assert_true(res.stopped);
	assert_int_equal(res.runs, 2);
	assert_int_equal(k.configs, 3);                  /* seed 5 twice, seed 6 refused */
	assert_int_equal(res.n[SWARM_F_ERROR], 1);
	assert_int_equal(k.last.finding, SWARM_F_ERROR);
	assert_non_null(strstr(k.last.detail, "no config for seed 6"));
	assert_int_equal(rmdir(dir), 0);                  /* the event logs are gone */
	sc.shard_k = 3;
	assert_int_equal(swarm_run(&sc, &res, &d), -EINVAL);
}

/* The verbs hooks on the model: a run whose leak check fails is a LEAK finding; an
 * unexplained TRANSPORT_RETRY_EXCEEDED runs its seed once more (stalled() first), once. */
static void test_leak_oracle_and_stall_retry(void **state)
{
	static struct calls k;
	struct swarm_result res;
	struct diag d = { 0 };
	char dir[] = "/tmp/swarm_test-XXXXXX";
	(void)state;
	assert_non_null(mkdtemp(dir));
	struct swarm_config sc = { .seed_lo = 5, .seed_hi = 7, .shard_k = 1, .shard_n = 1, .scratch = dir,
				   .config = small_config, .done = done, .arg = &k, .leak_mark = leak_mark,
				   .leak_check = leak_check, .stalled = stalled };
	k.leak_at = 2;
	assert_int_equal(swarm_run(&sc, &res, &d), 0);
	assert_int_equal(res.runs, 3);
	assert_int_equal(k.marks, 3);
	assert_int_equal(k.checks, 3);
	assert_int_equal(res.n[SWARM_F_LEAK], 1);
	assert_int_equal(k.seeds[1], 6);
	assert_int_equal(res.stalls, 0);
	memset(&k, 0, sizeof k);
	k.retry_exc = true;
	sc.seed_hi = 5;
	assert_int_equal(swarm_run(&sc, &res, &d), 0);
	assert_int_equal(res.runs, 1);
	assert_int_equal(res.stalls, 1);
	assert_int_equal(k.stalls, 1);
	assert_int_equal(k.configs, 2);                   /* the seed twice, no more */
	assert_int_equal(k.last.finding, SWARM_F_UNEXPLAINED);
	assert_int_equal(k.last.cause, CAUSE_TRANSPORT_RETRY_EXCEEDED);
	memset(&k, 0, sizeof k);
	k.retry_exc = true;
	sc.stalled = NULL;                                /* the model: no retry */
	assert_int_equal(swarm_run(&sc, &res, &d), 0);
	assert_int_equal(res.stalls, 0);
	assert_int_equal(k.configs, 1);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_is_a_function_of_the_seed),
		cmocka_unit_test(test_plans_parse_and_spread),
		cmocka_unit_test(test_multiblock_plans),
		cmocka_unit_test(test_fault_table_rows),
		cmocka_unit_test(test_fault_table_matches_the_matrix),
		cmocka_unit_test(test_fault_table_sides),
		cmocka_unit_test(test_config_table),
		cmocka_unit_test(test_oracles),
		cmocka_unit_test(test_seeds_and_shards),
		cmocka_unit_test(test_run_shard_stop_and_determinism),
		cmocka_unit_test(test_verbs_plans),
		cmocka_unit_test(test_fault_rows_on_verbs),
		cmocka_unit_test(test_leak_oracle_and_stall_retry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
