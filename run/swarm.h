/* SPDX-License-Identifier: MIT */
/* swarm - many seeded random configurations with randomly activated faults, each run checked
 * by oracles (`migbed swarm`, issue 15; FoundationDB's simulator, TigerBeetle's VOPR):
 * swarm_expand(seed) -> a plan (run keys and fault rules, printed as one `migbed run` command
 * line: the replay), swarm_judge(plan, result) -> a finding class or none, swarm_run(config)
 * -> every seed of a shard run in-process through run_migrate, one callback per run.
 *
 * The fault rules come from one table (fault_rows in swarm.c): each row is a fault site, an
 * action, whether it may corrupt the destination's data, and the causes it may produce, each
 * on the rule's own side, its peer's, or either (from docs/faults.md's matrix and
 * bats/scenarios/fault-*.scn). A seed activates each row with a
 * probability of its own (BUGGIFY: some runs none, most a few, some many), and an activated
 * row fires with another probability (~P) or at one call (#N). Configuration causes (a refused
 * chunk-size mismatch, a QEMU peer's behaviour, a memlock limit, ...) are a second table
 * (SWARM_CONFIG_TABLE), keyed by what the plan chose.
 *
 * Oracles (swarm_judge): a run whose faults did not fire completes and verifies, or fails with
 * a cause its configuration explains; a run whose faults fired completes and verifies, or
 * fails with a cause one of the fired rows explains on the side that named it (or the
 * configuration explains). Never INTERNAL,
 * never a failure without a named cause, never VERIFY_MISMATCH unless a fired row corrupts
 * data, never an RDMA WRITE outside the destination's RAM blocks (stray_writes: CORRUPT).
 * `check_determinism` runs each seed twice and compares the event logs byte for byte.
 *
 * Contract:
 *   - swarm_expand is a pure function of the seed (sim/prng.h stream SWARM_STREAM; the RAM
 *     layout of several blocks, a share of the model's plans, from SWARM_BLOCKS_STREAM).
 *   - swarm_run: for each seed of [seed_lo, seed_hi] in shard K/N ((seed - lo) % N == K - 1),
 *     in order: config(plan) -> a runcfg (-EINVAL: an ERROR finding, the swarm goes on),
 *     run_migrate, judge, then done(run). before() may stop the swarm (time budget).
 *     0, or -ENOMEM / -errno of the scratch folder (d set). Nothing is printed.
 *   - Deterministic on the model: the same seeds give the same runs (no wall time in them). */
#ifndef MIGBED_RUN_SWARM_H
#define MIGBED_RUN_SWARM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "faults/fault.h"
#include "run/config.h"
#include "run/run.h"
#include "sim/diag.h"
#include "vocab/cause.h"

#define SWARM_STREAM 0x5357524dull     /* "SWRM": the plan's PRNG stream of the seed */
/* The RAM layout's own stream of the seed ("SWBL"): drawn apart from SWARM_STREAM, so a plan of
 * one block is what it was before multi-block layouts were added, draw for draw. */
#define SWARM_BLOCKS_STREAM 0x5357424cull
#define SWARM_BLOCKS_PCT 25u           /* the model's plans with several RAM blocks, percent */
#define SWARM_SEEDS_MAX 100000000ull    /* seeds in one range */
#define SWARM_KEYS_MAX 24
#define SWARM_VALUE_MAX 192           /* a value's bytes, NUL included (blocks is the longest) */
#define SWARM_FAULTS_MAX RUNCFG_MAX_FAULTS
#define SWARM_CONFIG_MAX 2048          /* bytes of a plan's text, NUL included */
#define SWARM_DETAIL_MAX 256
#define SWARM_CAUSES_MAX 6             /* causes per table row */
/* Every plan's max-time-ms: a run that has not converged after 30 s of virtual time is
 * NOT_CONVERGED (the default, 600 s, costs seconds of wall time per such run). */
#define SWARM_MAX_TIME_MS 30000u

/* X(NAME, token): the finding classes, NONE first. */
#define SWARM_FINDING_TABLE(X) \
	X(NONE,             "none") \
	X(HANG,             "hang")             /* the wall-clock watchdog (the command's) */ \
	X(INTERNAL,         "internal")         /* the cause INTERNAL */ \
	X(UNNAMED,          "unnamed")          /* failed without a named cause, or completed unverified */ \
	X(CORRUPT,          "corrupt")          /* VERIFY_MISMATCH with no data-corrupting fault fired */ \
	X(UNEXPLAINED,      "unexplained")      /* a named cause neither the fired faults nor the config explain */ \
	X(DATA_LOSS,        "data_loss")        /* the source's memory is not what the guest wrote */ \
	X(LIVENESS,         "liveness")         /* failed by faults; healed, the plan did not complete and verify */ \
	X(LEAK,             "leak")             /* the model: an ep, listener or MR outlived the run; verbs: an fd, QP, MR, PD or cm_id */ \
	X(NONDETERMINISTIC, "nondeterministic") /* the same seed twice: event logs differ */ \
	X(ERROR,            "error")            /* the plan was refused as a config: a swarm bug */

enum swarm_finding {
#define X(NAME, tok) SWARM_F_##NAME,
	SWARM_FINDING_TABLE(X)
#undef X
	SWARM_FINDINGS
};
const char *swarm_finding_name(enum swarm_finding f);   /* "unexplained"; "?" */
int swarm_finding_lookup(const char *name);             /* -1 when unknown */

/* What a configuration may legitimately end in, without any fault. */
#define SWARM_CONFIG_TABLE(X) \
	X(REFUSE,    "a negotiating source refuses a chunk-size mismatch", CAUSE_CHUNK_SIZE_MISMATCH) \
	X(OLD_PEER,  "source chunks larger than the destination's, not negotiated down", \
	  CAUSE_REMOTE_ACCESS_ERROR, CAUSE_BAD_REGISTER_REQUEST) \
	X(MEMLOCK,   "the destination's memlock limit", \
	  CAUSE_DEST_REG_FAILED, CAUSE_DEST_PIN_ALL_FAILED, CAUSE_CONTROL_REG_FAILED) \
	X(QEMU_PEER, "a side plays a QEMU version (docs/profiles.md)", \
	  CAUSE_QEMU_HANG, CAUSE_COMPLETION_DROPPED, CAUSE_TOO_MANY_REQUESTS) \
	X(SLOW,      "a low max-bandwidth or downtime-limit against the workload", CAUSE_NOT_CONVERGED)

enum swarm_cfg {
#define X(NAME, why, ...) SWARM_CFG_##NAME,
	SWARM_CONFIG_TABLE(X)
#undef X
	SWARM_CFGS
};

struct swarm_key {
	const char *key;                /* a run key, as `migbed run` names it */
	char value[SWARM_VALUE_MAX];
};

struct swarm_plan {
	uint64_t seed;
	struct swarm_key keys[SWARM_KEYS_MAX];
	size_t n_keys;
	char faults[SWARM_FAULTS_MAX][FAULT_SPEC_MAX];   /* rule text, in plan order */
	size_t fault_row[SWARM_FAULTS_MAX];               /* each rule's row of the fault table */
	int fault_side[SWARM_FAULTS_MAX];                 /* each rule's side (enum vocab_side) */
	size_t n_faults;
	unsigned cfg;                   /* bit (1 << SWARM_CFG_x): the plan has that feature */
};

/* The rows of the fault table (for tests and docs). */
size_t swarm_fault_rows(void);
const char *swarm_fault_row_site(size_t row);
const char *swarm_fault_row_action(size_t row);
bool swarm_fault_row_corrupts(size_t row);
/* May row produce cause (positive code), on either side? */
bool swarm_fault_explains(size_t row, int cause);
/* May a rule of row produce cause named on the rule's own side (same_side) or on its peer's
 * (a consequence there: the receiver of a corrupted message, a side left waiting)? */
bool swarm_fault_explains_at(size_t row, bool same_side, int cause);
/* May a plan with config bits cfg end in cause without faults? */
bool swarm_config_explains(unsigned cfg, int cause);

void swarm_expand(uint64_t seed, struct swarm_plan *p);

/* The verbs backend's plans (`migbed swarm --backend verbs`, docs/swarm.md "On verbs"): the
 * same generator, restricted to what runs on real soft-RoCE within a short run: guests of 16M
 * to 64M, light workloads (at most 2 x 8 MiB/s or 2560 pages/s: the writes are real), no
 * dst-memlock (on verbs that needs the destination in a process of its own), max-time-ms
 * SWARM_VERBS_MAX_TIME_MS, every plan SWARM_CFG_SLOW (rxe's rate is the machine's:
 * whether a workload converges depends on the load), and only the fault rows whose fault goes
 * through a real verbs or rdma_cm call (swarm_fault_row_on_verbs: registrations, completions,
 * QP transitions, connection setup, CM events; not the msg.* and post_* rows, protocol-level
 * and model-only as in make check's verbs lane). The plan's first keys are `backend verbs`
 * and `wait-timeout-ms` (so its line is the replay). */
#define SWARM_VERBS_MAX_TIME_MS 5000u
struct swarm_on {
	uint64_t wait_timeout_ms;       /* every verbs plan's wait-timeout-ms */
};
bool swarm_fault_row_on_verbs(size_t row);
/* on: NULL the model's plan (swarm_expand), else the verbs backend's. */
void swarm_expand_on(uint64_t seed, const struct swarm_on *on, struct swarm_plan *p);
/* The plan as `migbed run` options ("--seed 7 --guest 64M ... --fault 'RULE'"): the replay.
 * The text is cut (and false returned) only when it would not fit n. */
bool swarm_plan_text(const struct swarm_plan *p, char *buf, size_t n);

/* One run as judged. */
struct swarm_run {
	uint64_t seed;
	char config[SWARM_CONFIG_MAX];  /* swarm_plan_text */
	bool completed;                 /* completed and verified */
	int cause;                      /* CAUSE_NONE when completed */
	int side;                       /* RUN_SIDE_NONE when completed (run/judge.h) */
	size_t fired;                   /* rules of the plan that fired */
	enum swarm_finding finding;
	char detail[SWARM_DETAIL_MAX];  /* a finding's: what broke which oracle */
};

/* The oracles (pure): the finding class of a result of plan p, and why into r->detail. */
void swarm_judge(const struct swarm_plan *p, const struct run_result *res, struct swarm_run *r);

/* "A..B", "N" (A = B) -> [*lo, *hi], 0 <= lo <= hi, hi - lo < SWARM_SEEDS_MAX. 0, or -EINVAL
 * with d = "'TEXT': why". */
int swarm_seeds_parse(const char *text, uint64_t *lo, uint64_t *hi, struct diag *d);
/* Is seed in shard k of n of the range starting at lo? */
bool swarm_in_shard(uint64_t seed, uint64_t lo, uint64_t k, uint64_t n);

struct swarm_config {
	uint64_t seed_lo, seed_hi;
	uint64_t shard_k, shard_n;
	bool check_determinism;
	const char *scratch;            /* an existing folder for the determinism check's event logs */
	/* the plan as a run's config: 0, or -EINVAL with d set (the run is an ERROR finding) */
	int (*config)(void *arg, const struct swarm_plan *p, struct runcfg *c, struct diag *d);
	/* before each run (the swarm's k-th, 0-based): nonzero stops the swarm (time budget) */
	int (*before)(void *arg, size_t k, const struct swarm_plan *p, const char *text);
	/* after each run: its judged result (the plan too, for a bundle) */
	void (*done)(void *arg, const struct swarm_plan *p, const struct runcfg *c, const struct swarm_run *r);
	void *arg;
	uint64_t test_unhealed_seed;    /* a test hook: this seed's healed rerun keeps its faults (0: none) */
	/* --backend verbs (cli/swarm_verbs.c; NULL, NULL, NULL, NULL on the model): */
	const struct swarm_on *on;      /* the verbs backend's plans (swarm_expand_on) */
	/* around every run: mark() before it, check() after it; check() nonzero: the run left
	 * something behind (what, into detail): a LEAK finding */
	void (*leak_mark)(void *arg);
	int (*leak_check)(void *arg, char *detail, size_t n);
	/* a seed whose finding an rxe stall may explain (TRANSPORT_RETRY_EXCEEDED that no fired
	 * rule explains, on a healthy wire) runs once more, its second result counting;
	 * stalled() says so first, loudly */
	void (*stalled)(void *arg, const struct swarm_run *r);
	uint64_t test_leak_seed;        /* a test hook: this seed's run leaves a listener open (0: none) */
};

struct swarm_result {
	size_t runs, completed, failed;
	size_t n[SWARM_FINDINGS];       /* runs per class (n[NONE]: no finding) */
	size_t stalls;                  /* seeds run once more after an rxe stall (stalled()) */
	bool stopped;                   /* before() stopped it */
};

int swarm_run(const struct swarm_config *sc, struct swarm_result *res, struct diag *d);

#endif
