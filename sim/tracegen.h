/* SPDX-License-Identifier: MIT */
/* tracegen - synthetic workload generators that write trace v1 files.
 *
 *   rand-set  like `stress-ng --vm N --vm-bytes B --vm-method rand-set`: N workers, each
 *             sweeping its own B bytes sequentially at sweep_bytes_per_s, rewriting every
 *             page once per pass, wrapping at the end. Worker regions are laid out back to
 *             back from page 0. The first touch (the whole region) is at first_touch_ms (0:
 *             epoch 0, before the migration starts). With churn (stress-ng without
 *             --vm-keep: each pass munmaps the buffer and maps it again, populated) the epoch
 *             in which a pass ends holds the whole region, and the next pass starts at page
 *             0. sweep_jitter_pct draws each worker's rate per epoch uniformly within that
 *             share of sweep_bytes_per_s (seeded; 0: exact).
 *   random    `rate_pages_per_s` pages chosen uniformly over the guest, per epoch.
 *   hotcold   a hot set (hot_fraction of the guest, at the start) written at hot_rate, the
 *             rest at cold_rate pages/s, uniform within each set.
 *   idle      no writes at all (one empty epoch at 0).
 *
 * Epochs are at 0, epoch_ms, 2 * epoch_ms, ... < duration (all of them, even empty ones;
 * idle has just the one at 0). The epoch at t_k holds the pages written in (t_{k-1}, t_k],
 * sorted and merged into ranges; epoch 0 holds only rand-set's first touch. The options
 * are recorded in the header as a "# gen: migbed trace gen ..." comment.
 *
 * Initial layout (every pattern): with layout_nonzero_pct > 0 the trace is version 2 and its
 * layout lines name the pages that hold data at start: that share of the guest, as whole
 * extents of layout_extent_bytes chosen at random (seeded, exactly round(pct % of the
 * extents)); the rest are holes, zero pages never touched. 0: no layout, a version 1 trace
 * (every page zero at start), byte-identical to what earlier migbeds wrote.
 * layout_runs says how the data and holes are placed: TGEN_LAYOUT_FIXED (the default, as
 * above: whole extents aligned to the extent, so every data run starts and ends on an extent
 * boundary) or TGEN_LAYOUT_EXP (alternating data and hole runs of random, unaligned lengths,
 * drawn page by page: each page ends its run with a fixed probability, so run lengths are
 * geometric, the page-grained exponential, with the same means as the fixed placement's runs:
 * extent / (1 - share) for data and extent / share for holes; the first run is data with
 * probability share; then the data runs are scaled together, and the hole runs, so that
 * exactly round(share x the guest's pages) pages hold data). Both are seeded, from the same
 * layout stream.
 *
 * The same options produce the same file, byte for byte. */
#ifndef MIGBED_SIM_TRACEGEN_H
#define MIGBED_SIM_TRACEGEN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sim/diag.h"

enum tgen_pattern { TGEN_RAND_SET, TGEN_RANDOM, TGEN_HOTCOLD, TGEN_IDLE };
/* The initial layout's placement (see above). */
enum tgen_layout_runs { TGEN_LAYOUT_FIXED, TGEN_LAYOUT_EXP };

/* The guest's RAM blocks (`--blocks NAME=SIZE,...`): a guest of several blocks, in order. The
 * patterns see one flat guest of guest_bytes (the blocks back to back: rand-set's regions and
 * hotcold's hot set start at the first block's page 0, random draws over all of them); each
 * range written is split at the blocks' edges. n_blocks 0: one block "pc.ram" of guest_bytes
 * (the trace of earlier migbeds, byte for byte). */
#define TGEN_BLOCKS_MAX 16
#define TGEN_BLOCK_NAME_MAX 63            /* trace.h's TRACE_BLOCK_NAME_MAX */
struct tgen_block {
	char name[TGEN_BLOCK_NAME_MAX + 1];
	uint64_t size_bytes;              /* more than 0, a multiple of the page size */
};

/* The PRNG stream of each pattern: prng_seed_stream(seed, TGEN_STREAM_ID(pattern)). Part of
 * the determinism contract: changing it changes every generated trace. */
#define TGEN_STREAM_ID(pattern) (UINT64_C(0x7467656e00000000) + (uint64_t)(pattern))
/* The initial layout's stream (independent of the pattern's draws). */
#define TGEN_LAYOUT_STREAM_ID UINT64_C(0x7467656e6c61796f)

struct tgen_opts {
	enum tgen_pattern pattern;
	uint64_t guest_bytes;             /* one block "pc.ram" of this size; or the blocks' total */
	size_t n_blocks;                  /* 0: one block "pc.ram"; else blocks[0..n_blocks) */
	struct tgen_block blocks[TGEN_BLOCKS_MAX];
	uint64_t page_size;
	uint64_t duration_ms;
	uint64_t epoch_ms;                /* spacing of epochs */
	uint64_t seed;
	/* rand-set */
	uint32_t workers;
	uint64_t worker_bytes;
	uint64_t sweep_bytes_per_s;       /* per worker */
	bool churn;                       /* a pass ends with a remap: the whole region again */
	uint64_t first_touch_ms;          /* the regions' first touch; the sweeps start there */
	uint64_t sweep_jitter_pct;        /* 0..100: per-epoch rate within +-pct % (0: exact) */
	/* every pattern: the initial layout */
	uint64_t layout_nonzero_pct;      /* 0..100 % of the guest non-zero at start (0: none) */
	uint64_t layout_extent_bytes;     /* data and holes are runs of whole extents (exp: the mean) */
	enum tgen_layout_runs layout_runs; /* fixed (default): aligned extents; exp: random lengths */
	/* random */
	uint64_t rate_pages_per_s;
	/* hotcold */
	double hot_fraction;
	uint64_t hot_pages_per_s;
	uint64_t cold_pages_per_s;
};

/* The one set of defaults of the generator keys (`migbed run`'s generated trace, `trace
 * gen`, `torture`; cli/runcfg.c's option table shows them): a 256M guest, 2 s, rand-set with
 * 2 workers of 16M each at 32M/s (worker-bytes shrinks in small guests, see below). */
#define TGEN_DEFAULT_GUEST_BYTES (UINT64_C(256) << 20)
#define TGEN_DEFAULT_PAGE_SIZE UINT64_C(4096)
#define TGEN_DEFAULT_DURATION_MS UINT64_C(2000)
#define TGEN_DEFAULT_EPOCH_MS UINT64_C(10)
#define TGEN_DEFAULT_WORKERS 2u
#define TGEN_DEFAULT_WORKER_BYTES (UINT64_C(16) << 20)
#define TGEN_DEFAULT_SWEEP_BYTES_PER_S (UINT64_C(32) << 20)
#define TGEN_DEFAULT_RATE_PAGES_PER_S 25600u
#define TGEN_DEFAULT_HOT_FRACTION 0.05
#define TGEN_DEFAULT_HOT_PAGES_PER_S 25600u
#define TGEN_DEFAULT_COLD_PAGES_PER_S 256u
#define TGEN_DEFAULT_SEED UINT64_C(1)
#define TGEN_DEFAULT_LAYOUT_EXTENT_BYTES (UINT64_C(2) << 20)

/* Every field its default (pattern rand-set, seed 1). No value means "unset": a front end
 * that lets a user leave a key out keeps the default set here, or derives it (below). */
void tgen_defaults(struct tgen_opts *o);
/* The default worker-bytes for o's guest, page size and workers: TGEN_DEFAULT_WORKER_BYTES,
 * at most half the guest shared by the workers (guest / (2 x workers)), rounded down to the
 * page size; 16M for the default 256M guest. */
uint64_t tgen_default_worker_bytes(const struct tgen_opts *o);
/* Parse a `--blocks` list "NAME=SIZE[,NAME=SIZE...]" into o->blocks and o->n_blocks (the
 * sizes are checked against the page size by tgen_validate). -EINVAL with d naming the
 * problem ("'x' has no '=SIZE'", a bad name, a duplicate, more than TGEN_BLOCKS_MAX). */
int tgen_blocks_parse(struct tgen_opts *o, const char *list, struct diag *d);
/* The blocks' total size (UINT64_MAX when it overflows); guest_bytes when there are none. */
uint64_t tgen_blocks_total(const struct tgen_opts *o);
/* o's blocks as a `--blocks` list into buf ("" when n_blocks is 0); false if buf is short. */
bool tgen_blocks_format(const struct tgen_opts *o, char *buf, size_t n);
/* -EINVAL with d on impossible options (e.g. workers * worker_bytes > guest). */
int tgen_validate(const struct tgen_opts *o, struct diag *d);
/* Validate, then write the trace to path (via path.tmp, renamed on success; nothing is left
 * behind on failure). 0, or <0 with d set. */
int tgen_write(const struct tgen_opts *o, const char *path, struct diag *d);

/* What a successful tgen_write_stats wrote. */
struct tgen_stats {
	uint64_t epochs;
	uint64_t ranges;
	uint64_t pages;                   /* sum of the range lengths */
};
/* tgen_write that also reports what it wrote (st may be NULL; untouched on failure). */
int tgen_write_stats(const struct tgen_opts *o, const char *path, struct tgen_stats *st,
		     struct diag *d);
/* tgen_write_stats that tells progress(arg, what is written so far, the epoch's virtual time)
 * after every epoch (progress may be NULL). The trace is the same with or without it. */
int tgen_write_progress(const struct tgen_opts *o, const char *path, struct tgen_stats *st,
			void (*progress)(void *arg, const struct tgen_stats *so_far, uint64_t t_ns), void *arg,
			struct diag *d);
/* "rand-set" etc. -> pattern; -EINVAL if unknown. */
int tgen_pattern_parse(const char *s, enum tgen_pattern *out);
const char *tgen_pattern_name(enum tgen_pattern p);

#endif
