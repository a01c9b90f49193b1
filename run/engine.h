/* SPDX-License-Identifier: MIT */
/* engine - the pre-copy migration engine: replays a trace on the source's guest memory in
 * virtual time while it migrates through proto_src (as QEMU does it:
 * docs/protocol.md, 'Migration sequence' and 'Convergence').
 *
 * Setup (connect, RAM block exchange, the first bitmap sync with every page dirty), then
 * rounds: each round offers dirty pages in address order from a cursor until the
 * max-bandwidth budget of the current 100 ms window is used or 50 ms have passed, then
 * drains and ends the registration round. Every 100 ms the bandwidth is measured and the
 * switchover threshold = bandwidth x downtime-limit; when the pending estimate falls under
 * it, the dirty bitmap is synced (dirty-sync-count), and if still under, the VM stops:
 * final sync, all remaining pages at unlimited bandwidth, device state, completion. Trace
 * epochs are applied as virtual time passes while the VM runs (not during downtime). */
#ifndef MIGBED_RUN_ENGINE_H
#define MIGBED_RUN_ENGINE_H
#include <stdbool.h>
#include <stdint.h>
#include "sim/evlog.h"
#include "sim/mem.h"
#include "sim/metrics.h"
#include "sim/trace.h"
#include "transport/proto.h"

/* Where a migration is, as HMP `info migrate` shows it: handed to engine_opts.progress after
 * every counters period (100 ms of virtual time) while the guest runs. */
struct engine_progress {
	uint64_t virtual_ns;               /* the virtual clock */
	uint64_t round;                    /* dirty-sync-count: the bitmap syncs so far */
	uint64_t remaining_bytes;          /* dirty pages pending at the source */
	uint64_t transferred_bytes;
	uint64_t dirty_pages_rate;         /* pages/s, as query-migrate measures it (0: not yet) */
	uint64_t expected_downtime_ms;
	uint64_t bandwidth_bytes_per_ms;   /* of the period just measured */
};

struct engine_opts {
	uint64_t downtime_limit_ms;        /* default 300 */
	uint64_t max_bandwidth_bytes_per_s; /* default 128 MiB/s; 0 = unlimited */
	uint64_t device_state_bytes;       /* default 256 KiB */
	uint64_t slice_ms;                 /* default 50 (MAX_WAIT) */
	uint64_t max_time_ms;              /* give up (NOT_CONVERGED) after this much virtual time; default 600000 */
	bool trace_loop;                   /* replay the trace again when it ends; default true */
	uint64_t seed;
	/* NULL, or told where the migration is every counters period; it only reads (a run is
	 * the same with or without it: the caller's wall-clock status line, cli/progress.h) */
	void (*progress)(void *arg, const struct engine_progress *p);
	void *progress_arg;
	mem *shadow;                       /* not an option: gets the guest's writes too (run.c's
					    * source oracle), or NULL */
};
void engine_opts_defaults(struct engine_opts *o);

/* Returned by engine_run when the trace turned out to be malformed mid-way (d is set). */
#define ENGINE_INPUT_ERROR (-1000)

/* Run the source side of one migration. `trace_path` is re-opened when looping. Returns 0
 * when the migration completed (the destination still has to confirm), the negative
 * cause recorded in proto_src, or ENGINE_INPUT_ERROR. Fills *out (status, times, counters). */
int engine_run(const struct engine_opts *o, const char *trace_path, mem *src_mem, hca_world *w,
	       proto_src *ps, const char *dst_addr, struct metrics *out, struct diag *d);

/* The switchover rule (migration_iteration_run), pure: the threshold is the bandwidth
 * measured over the last period (bytes / ms) times downtime-limit; a pending estimate at or
 * under it asks for an exact count (a bitmap sync); switchover when the exact count is
 * under the threshold (or nothing is pending at all). */
uint64_t engine_threshold_bytes(uint64_t bytes, uint64_t elapsed_ms, uint64_t downtime_limit_ms);
bool engine_wants_sync(uint64_t pending_bytes, uint64_t threshold_bytes);
bool engine_switchover(uint64_t exact_pending_bytes, uint64_t threshold_bytes);

#endif
