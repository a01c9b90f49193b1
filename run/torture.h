/* SPDX-License-Identifier: MIT */
/* torture - fail every fallible call of a migration once (SQLite's OOM loop, curl's torture
 * mode; docs/faults.md "Torture"): torture_sweep(config) -> a typed sweep result.
 *
 * 1. A baseline run of cfg->run (its own fault rules, if any, and nothing else) counts the
 *    calls per (site, side): run_result.fault_calls, handed back typed. It must complete.
 * 2. For every (site, side, N) of the selected sites the scenario is rerun with one more
 *    rule `SITE@SIDE #N -> ACTION`, ACTION the site's canonical failure
 *    (fault_site_canonical), bounded by max_runs (spread evenly over the (site, side)
 *    groups by water-filling, each group's first and last call kept) and split by the
 *    shard K/N (round robin over the run list) for CI matrices.
 * 3. Every run (the baseline too) is a child process, forked without exec: run_migrate of a
 *    copy of cfg->run, its result sent back through a pipe as one fixed-size record; so a
 *    crash or hang of one run is seen, not suffered. A wall-clock watchdog kills a run that
 *    outlives watchdog_ms: a hang. Its stdout and stderr go to a file in the sweep's
 *    folder (TMPDIR or /tmp, removed afterwards), its TMPDIR too.
 *
 * Verdicts: a rerun is proper (COMPLETED, FAILED) when it completes verified, or fails with
 * a named cause, and its fault fired. Everything else fails the sweep: HANG (the watchdog),
 * CRASH (a signal), UNNAMED (completed but not verified, or the cause INTERNAL), CORRUPT
 * (VERIFY_MISMATCH), NOT_FIRED (ended properly but the injected fault never fired), ERROR
 * (no result: bad input or an output file the run could not write).
 *
 * Contract:
 *   - 0: the sweep happened; *res holds the baseline and, when the baseline completed, every
 *     rerun of this shard in run order, with the summary counts. A baseline that did not
 *     complete is not an error of the call: res->baseline says how it ended, and there are
 *     no reruns (res->swept false).
 *   - -EINVAL: bad input, d says what: a config out of bounds, a --sites glob that matches
 *     no site, no room for one more fault rule, or the baseline run refused its input (its
 *     own message, e.g. "FILE:LINE: problem" for a defective trace); no rerun was started.
 *   - other -errno: the sweep could not run (its folder, a pipe, fork), d says what. No
 *     child is left running in any case; the folder is gone.
 *   - Deterministic: the same config (on the model backend) gives the same runs and
 *     verdicts, in the same order. Nothing is printed but by the progress callback.
 *   - torture_result_free frees what torture_sweep allocated (also after an error). */
#ifndef MIGBED_RUN_TORTURE_H
#define MIGBED_RUN_TORTURE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "faults/fault.h"
#include "run/config.h"
#include "run/result_wire.h"
#include "run/run.h"
#include "sim/diag.h"

#define TORTURE_MAX_RUNS_DEFAULT 1000     /* no suffix: the option table prints it (cli/runcfg.c) */
#define TORTURE_MAX_RUNS_LIMIT 100000u
#define TORTURE_WATCHDOG_MS_DEFAULT 60000
#define TORTURE_WATCHDOG_MS_MIN 100u
#define TORTURE_WATCHDOG_MS_MAX 86400000u
#define TORTURE_JOBS_MAX 64u
#define TORTURE_SHARDS_MAX 100000
#define TORTURE_SITES_MAX 511u         /* bytes of the sites list */
#define TORTURE_DETAIL_MAX 200

/* The verdict of one run, in the order of the summary; the first two are proper. */
#define TORTURE_VERDICT_TABLE(X) \
	X(COMPLETED, "completed") \
	X(FAILED,    "failed")     /* with a named cause */ \
	X(HANG,      "hang") \
	X(CRASH,     "crash") \
	X(UNNAMED,   "unnamed") \
	X(CORRUPT,   "corrupt") \
	X(NOT_FIRED, "not-fired") \
	X(ERROR,     "error")

enum torture_verdict {
#define X(NAME, tok) TORTURE_##NAME,
	TORTURE_VERDICT_TABLE(X)
#undef X
	TORTURE_VERDICTS
};

const char *torture_verdict_name(enum torture_verdict v);   /* "completed", ...; "?" */
static inline bool torture_verdict_proper(enum torture_verdict v)
{
	return v == TORTURE_COMPLETED || v == TORTURE_FAILED;
}

struct torture_config {
	const struct runcfg *run;      /* every run's config (scenario and options), read only */
	const char *sites;             /* comma-separated globs over the site names (fnmatch);
					* NULL: every site but the umbrella sites post_send and
					* cm.* (the more specific sites count the same calls) */
	uint64_t max_runs;             /* 1 .. TORTURE_MAX_RUNS_LIMIT */
	uint64_t watchdog_ms;          /* TORTURE_WATCHDOG_MS_MIN .. _MAX */
	uint64_t shard_k, shard_n;     /* 1 <= k <= n <= TORTURE_SHARDS_MAX */
	uint64_t jobs;                 /* reruns at a time, 1 .. TORTURE_JOBS_MAX */
	/* after each rerun: done of total, bad of them not proper (NULL: none) */
	void (*progress)(void *arg, size_t done, size_t total, size_t bad);
	void *progress_arg;
};

/* Defaults: max_runs 1000, watchdog 60 s, shard 1/1, 1 job, every site but the umbrellas. */
void torture_config_defaults(struct torture_config *tc, const struct runcfg *run);

/* Check a sites list: every glob must match a site (a typo would otherwise select nothing,
 * or less than meant, and the sweep would pass). 0, or -EINVAL with d = "--sites: ...". */
int torture_sites_check(const char *sites, struct diag *d);

struct torture_run {
	enum fault_site site;
	enum fault_side side;
	uint64_t call;                 /* the call failed: the N-th at (site, side), 1-based */
	const char *action;            /* fault_site_canonical(site) */
	enum torture_verdict verdict;
	bool reported;                 /* the run handed back a result (cause and side below) */
	int cause;                     /* reported: the run's cause, CAUSE_NONE if it completed */
	char cause_side[4];            /* reported: "src", "dst", "-"; else "" */
	char detail[TORTURE_DETAIL_MAX];   /* the cause's detail, or what went wrong */
};

struct torture_group {                 /* one (site, side) the baseline called */
	enum fault_site site;
	enum fault_side side;
	uint64_t calls;                /* the baseline's calls */
	uint64_t runs;                 /* of them rerun with a fault (before the shard) */
};

struct torture_result {
	struct torture_run baseline;   /* its site/side/call/action unused */
	bool swept;                    /* the baseline completed: the reruns ran */
	struct torture_group *groups;  /* the selected sites' groups, in site then side order */
	size_t n_groups;
	uint64_t calls;                /* the sum of the groups' calls: runs before the budget */
	struct torture_run *runs;      /* this shard's reruns, in run order */
	size_t n_runs;
	size_t n[TORTURE_VERDICTS];    /* runs per verdict */
	bool ok;                       /* swept and every rerun proper */
};

int torture_sweep(const struct torture_config *tc, struct torture_result *res, struct diag *d);
void torture_result_free(struct torture_result *res);

/* The verdict of a run that exited (not killed by the watchdog) with wait status `status`;
 * dg: its result, NULL when it handed back none; rerun: a fault was injected (it must have
 * fired). Pure: the classification rule above. */
enum torture_verdict torture_classify(int status, const struct run_digest *dg, bool rerun);

#endif
