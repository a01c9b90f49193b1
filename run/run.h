/* SPDX-License-Identifier: MIT */
/* run - one migration as a value: run_migrate(config) -> result. The run layer pairs the
 * source (the pre-copy engine, run/engine.h, on proto_src) with the destination (proto_dst)
 * on one transport world, or plays one of them in a process of its own; it compares the two
 * memories page by page when both sides say completed (the memory oracle), and judges the
 * outcome (run/judge.h). It prints nothing on stdout; on stderr only --pause-at's note and
 * --dst-memlock's (verbs destination).
 *
 * Contract:
 *   - cfg is read only; a run is a pure function of (cfg, the trace, build): on the model
 *     backend the same cfg gives the same result (but wall_ms) and the same event log.
 *   - 0: the run happened and *res is complete (verdict, status, each side's cause, the
 *     run's cause/side/detail, metrics, each fault rule's counts, times, build id).
 *     -EINVAL: bad input (a trace, a layout, an output file, a listen address, a hook's
 *     refusal); d says what; nothing is left behind (no event log, counts or JSON file).
 *   - The output files of the run are its own: --events and --fault-counts are written and
 *     committed by the run (a write error: res->output_error, d set); the --json file is
 *     opened before anything runs (so a bad path is refused early) and handed back in
 *     res->json for the caller to write and out_file_commit (or out_file_abort).
 *   - res->fault_calls holds the counts --fault-counts writes, whether it is given or not.
 *   - res->out.detail points into res->out itself: copy a result with run_result_copy. */
#ifndef MIGBED_RUN_RUN_H
#define MIGBED_RUN_RUN_H
#include <stdbool.h>
#include <stdint.h>
#include "run/config.h"
#include "run/judge.h"
#include "run/out_file.h"
#include "sim/diag.h"
#include "sim/mem.h"
#include "sim/metrics.h"

/* "git describe --always --dirty" of the build (-DMIGBED_BUILD_ID), or "unknown". */
const char *run_build_id(void);

struct run_result {
	struct run_outcome out;       /* status, causes, side, detail, verdict (out.pass), faults fired */
	struct metrics m;
	uint64_t wall_ms;             /* wall-clock duration of the whole run */
	uint64_t virtual_ns;          /* the virtual clock when the run ended */
	/* every injection of the plan, the teardown's too (deregistrations: after out.faults,
	 * whose per-rule counts, as the JSON reports them, are taken before the teardown) */
	uint64_t faults_injected;
	/* the calls at each fault site and side (fault_plan_calls), the teardown's too: what
	 * --fault-counts writes, typed (migbed torture's baseline) */
	uint64_t fault_calls[FAULT_SITE_COUNT][FAULT_SIDES];
	const char *build_id;
	bool pause_missed;            /* --pause-at was given and never reached ... */
	uint64_t pause_event_lines;   /* ... in a log with this many lines of that event */
	bool output_error;            /* --events or --fault-counts could not be written (d set) */
	struct out_file json;         /* --json, open (not written) when cfg->json_path is set */
};

/* Copy a result (fixes the detail pointer; the JSON file stays with src). */
void run_result_copy(struct run_result *dst, const struct run_result *src);

/* Both sides in this process: the model at "model:migbed", or verbs from cfg->src_addr to
 * cfg->dst_addr (defaults RUN_VERBS_SRC, RUN_VERBS_DST). */
#define RUN_VERBS_DST "198.18.0.1:29200"
#define RUN_VERBS_SRC "198.18.0.2"
int run_migrate(const struct runcfg *cfg, struct run_result *res, struct diag *d);

/* One side in this process (migbed source / migbed dest). */
/* A destination process's state, for a status line (run_side.dst_progress). */
struct run_dst_progress {
	bool connected;               /* a source connected (the first READY sent) */
	uint64_t registrations;       /* chunk (or block) MRs registered for guest RAM */
	uint64_t pinned_bytes;        /* guest RAM registered now */
	uint64_t messages_received;   /* control messages */
	uint64_t file_bytes;          /* QEMU FILE stream bytes */
};

struct run_side {
	enum run_role role;           /* ROLE_SRC or ROLE_DST */
	const char *addr;             /* source: IP:PORT[@SRC_IP] to connect to; dest: to listen on */
	uint64_t accept_ms;           /* dest: wait this long for a source (then TIMEOUT) */
	/* dest: it listens (before it waits for the source) */
	void (*listening)(void *arg, const char *addr);
	/* source: before the migration (nonzero: refused, d set by the hook) and after it (ran:
	 * the migration ran, whatever its outcome; not: bad input mid-way) */
	int (*src_before)(void *arg, mem *src, struct diag *d);
	void (*src_after)(void *arg, mem *src, bool ran);
	void *arg;
	/* dest: told its state after every step while it serves (NULL: not); it only reads (the
	 * caller's wall-clock status line, cli/progress.h, throttles itself). The source's is
	 * the engine's (runcfg's eng.progress). */
	void (*dst_progress)(void *arg, const struct run_dst_progress *p);
	void *progress_arg;
};
int run_migrate_side(const struct runcfg *cfg, const struct run_side *side, struct run_result *res,
		     struct diag *d);

#endif
