/* SPDX-License-Identifier: MIT */
/* sweep - one migration per point of a cross product of run keys (`migbed sweep`):
 * sweep_run(config) -> a typed row per point, each a run_migrate result; no printing.
 *
 * The axes are run keys (SWEEP_AXIS_TABLE, named as `migbed run` names them); each holds a
 * list of values as text, given or not (an axis not given has no values and is the run's
 * own). The points are the cross product in a fixed order: the first axis of the table
 * outermost, the last (chunk-size) varying fastest; point i of the whole sweep keeps its
 * index i whatever the shard. Shard K/N takes the points with i % N == K - 1 (round robin,
 * as migbed torture's --shard). The caller turns a point into a run's config (the callback:
 * cli/ parses the values as run options); the run layer only runs it.
 *
 * Contract:
 *   - sweep_list_parse: "1M,32M" -> the values as text. Pure. -EINVAL, d = "'LIST': why"
 *     (an empty value, more than SWEEP_VALUES_MAX values, a value longer than
 *     SWEEP_VALUE_MAX - 1 characters, a value given twice).
 *   - sweep_run: every point of the shard is made into a config first (a refusal: -EINVAL,
 *     d = "point I (KEY=VALUE ...): why", no run started); then each is run in order. A run
 *     that fails as a migration is a row (its outcome says how); a run that refuses its input
 *     (run_migrate's -EINVAL) stops the sweep with -EINVAL, d naming the point. Other errors:
 *     -ENOMEM.
 *   - Deterministic: the same config on the model backend gives the same rows (but no wall
 *     time is kept). sweep_result_free frees the rows (also after an error). */
#ifndef MIGBED_RUN_SWEEP_H
#define MIGBED_RUN_SWEEP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "run/config.h"
#include "run/run.h"
#include "sim/diag.h"
#include "sim/metrics.h"

/* X(NAME, the run key): outermost first; chunk-size last (it varies fastest). */
#define SWEEP_AXIS_TABLE(X) \
	X(GUEST,     "guest") \
	X(PIN_ALL,   "pin-all") \
	X(LINK,      "link-gbps") \
	X(BANDWIDTH, "max-bandwidth") \
	X(DOWNTIME,  "downtime-limit-ms") \
	X(CHUNK,     "chunk-size")

enum sweep_axis {
#define X(NAME, key) SWEEP_##NAME,
	SWEEP_AXIS_TABLE(X)
#undef X
	SWEEP_AXES
};

#define SWEEP_VALUES_MAX 64            /* values per axis */
#define SWEEP_VALUE_MAX 32             /* bytes of one value, with its NUL */
#define SWEEP_POINTS_MAX 100000u       /* points of the whole cross product */
#define SWEEP_SHARDS_MAX 100000u

const char *sweep_axis_key(enum sweep_axis a);   /* "chunk-size"; "?" */

struct sweep_values {
	size_t n;                              /* 0: not swept (the run's own value) */
	char v[SWEEP_VALUES_MAX][SWEEP_VALUE_MAX];
};

int sweep_list_parse(const char *list, struct sweep_values *out, struct diag *d);

/* The number of points of the cross product (an axis of no values counts once); 0 when it
 * would exceed SWEEP_POINTS_MAX. */
size_t sweep_points(const struct sweep_values ax[SWEEP_AXES]);
/* Point i's value index per axis (0 for an axis not swept). i < sweep_points(ax). */
void sweep_point(const struct sweep_values ax[SWEEP_AXES], size_t i, size_t idx[SWEEP_AXES]);
/* Does axis a vary (more than one value)? One value applies to every run, like the run's
 * option: it is no column of the table, no part of a point's name. */
bool sweep_varies(const struct sweep_values ax[SWEEP_AXES], enum sweep_axis a);
/* Does shard k of n hold point i? (1 <= k <= n) */
bool sweep_in_shard(size_t i, uint64_t k, uint64_t n);
/* "chunk-size=64M pin-all=on" (the varying axes of point idx) into buf ("" when none). */
void sweep_point_text(const struct sweep_values ax[SWEEP_AXES], const size_t idx[SWEEP_AXES], char *buf, size_t n);

struct sweep_config {
	struct sweep_values axes[SWEEP_AXES];
	uint64_t shard_k, shard_n;             /* 1 <= k <= n <= SWEEP_SHARDS_MAX */
	/* the config of a point (idx: the value index per axis): 0, or -EINVAL with d set */
	int (*config)(void *arg, const size_t idx[SWEEP_AXES], struct runcfg *c, struct diag *d);
	void *config_arg;
	/* before each run: the row's place in this shard (0-based) of total, and its point */
	void (*progress)(void *arg, size_t done, size_t total, size_t point, const size_t idx[SWEEP_AXES]);
	void *progress_arg;
};

/* One run: its point, the keys' effective values and what it gave. */
struct sweep_row {
	size_t point;                          /* index in the whole sweep */
	size_t idx[SWEEP_AXES];
	uint64_t chunk_bytes, dst_chunk_bytes;
	bool pin_all;
	uint64_t link_bytes_per_s, max_bandwidth_bytes_per_s, downtime_limit_ms;
	struct metrics m;                      /* m.ram_total: the guest */
	bool completed, pass;                  /* pass: met the run's expectation */
	int cause;                             /* CAUSE_NONE when completed */
	int side;                              /* RUN_SIDE_NONE when completed */
};

struct sweep_result {
	size_t total;                          /* points of the whole sweep */
	struct sweep_row *rows;                /* this shard's, in point order */
	size_t n_rows;
	size_t n_pass;
};

int sweep_run(const struct sweep_config *sc, struct sweep_result *res, struct diag *d);
void sweep_result_free(struct sweep_result *res);

#endif
