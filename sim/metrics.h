/* SPDX-License-Identifier: MIT */
/* metrics - what a run reports, named as QEMU's query-migrate does plus migbed's own
 * counters (docs/protocol.md, 'Metrics'). Printed as an HMP-`info migrate`-like summary or
 * as JSON with a stable key order (deterministic on the model backend: no wall-clock value
 * unless the caller sets include_wall). */
#ifndef MIGBED_SIM_METRICS_H
#define MIGBED_SIM_METRICS_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "vocab/vocab.h"

#define METRICS_MSG_TYPES VOCAB_MSG_TYPE_COUNT   /* by control message type */

struct metrics_side {
	uint64_t registrations;
	uint64_t pinned_peak_bytes;
	uint64_t msgs_sent[METRICS_MSG_TYPES];
	uint64_t msgs_recv[METRICS_MSG_TYPES];
};

struct metrics {
	const char *status;            /* "completed" / "failed" */
	uint64_t total_time_ms;
	uint64_t setup_time_ms;
	uint64_t downtime_ms;          /* only meaningful when completed */
	uint64_t page_size;
	uint64_t ram_total;            /* bytes of guest RAM */
	uint64_t ram_transferred;      /* stream + RDMA bytes, counted when posted */
	uint64_t ram_remaining;
	uint64_t ram_normal;           /* pages written by RDMA */
	uint64_t ram_duplicate;        /* zero pages (COMPRESS) */
	uint64_t ram_precopy_bytes;    /* sent while the guest ran ("precopy-bytes") */
	uint64_t ram_downtime_bytes;   /* sent while it was stopped ("downtime-bytes") */
	/* query-migrate's rates, the last values measured (QEMU shows them while active): */
	uint64_t dirty_pages_rate;     /* pages/s newly dirty, over >= 1 s between bitmap syncs */
	uint64_t pages_per_second;     /* pages sent per second over the last 100 ms period */
	uint64_t expected_downtime_ms; /* pending bytes at the last sync / bandwidth; downtime-limit before */
	double ram_mbps;               /* transferred*8 / (total - setup) / 1000 */
	uint64_t dirty_sync_count;
	uint64_t rounds;               /* registration rounds (ram_save_iterate calls) */
	uint64_t rdma_writes;
	uint64_t max_writes_in_flight;
	uint64_t guest_pages_written;  /* by the trace replay during the migration */
	uint64_t chunk_bytes_src, chunk_bytes_dst;
	bool pin_all;
	struct metrics_side src, dst;
	/* wall clock, reported beside virtual time (verbs); excluded from JSON unless asked */
	bool include_wall;
	uint64_t wall_total_ms;
	/* the data phase: first RDMA WRITE posted to last WRITE completion taken (verbs) */
	uint64_t wall_writes, wall_write_bytes, wall_write_us;
};

/* "ram.mbps" as QEMU computes it at completion. */
double metrics_mbps(uint64_t transferred_bytes, uint64_t total_ms, uint64_t setup_ms);
void metrics_print_human(const struct metrics *m, FILE *f);
/* The JSON object of m (a jansson value, sim/json.h; NULL: out of memory). error_desc:
 * query-migrate's "error-desc" (NULL: none, the key left out, as QEMU does unless the
 * migration failed). */
struct json_t;
struct json_t *metrics_json(const struct metrics *m, const char *error_desc);

#endif
