/* SPDX-License-Identifier: MIT */
/* tracegen - synthetic workload generators (see tracegen.h).
 *
 * Timing: epochs are at t = 0, epoch_ms, 2 * epoch_ms, ... < duration. The epoch at t_k
 * holds the pages written during (t_{k-1}, t_k]; epoch 0 holds what exists before the
 * migration starts (rand-set's first touch, nothing for the other patterns). Counts are
 * cumulative floors (pages written by time t = floor(t * rate)), so fractional rates add
 * up exactly over the run and never drift.
 *
 * Within an epoch, ranges are sorted, disjoint and merged: the file is a pure function of
 * the options. Random pages are drawn with replacement from prng_seed_stream(seed, one
 * fixed stream id per pattern), then sorted and merged (an array for sparse epochs, a
 * bitmap when the epoch touches a good part of the guest). */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/prng.h"
#include "sim/size.h"
#include "sim/trace.h"
#include "sim/tracegen.h"
#include "sim/vclock.h"

#define TGEN_BLOCK_NAME "pc.ram"
#define TGEN_PAGE_SIZE_MIN UINT64_C(512)
#define TGEN_PAGE_SIZE_MAX (UINT64_C(1) << 30)
/* Upper bounds that keep every run finite and its memory small. */
#define TGEN_WORK_MAX (UINT64_C(1) << 32)           /* epochs + ranges or draws, total */
#define TGEN_EPOCH_DRAWS_MAX (UINT64_C(1) << 24)    /* random pages drawn in one epoch */
#define TGEN_BITMAP_PAGES_MAX (UINT64_C(1) << 30)   /* largest guest with a bitmap path */

typedef unsigned __int128 u128;

static const char *const pattern_names[] = {
	[TGEN_RAND_SET] = "rand-set",
	[TGEN_RANDOM] = "random",
	[TGEN_HOTCOLD] = "hotcold",
	[TGEN_IDLE] = "idle",
};
#define N_PATTERNS (sizeof pattern_names / sizeof pattern_names[0])

int tgen_pattern_parse(const char *s, enum tgen_pattern *out)
{
	if (!s || !out)
		return -EINVAL;
	for (size_t i = 0; i < N_PATTERNS; i++) {
		if (!strcmp(s, pattern_names[i])) {
			*out = (enum tgen_pattern)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *tgen_pattern_name(enum tgen_pattern p)
{
	return (size_t)p < N_PATTERNS ? pattern_names[p] : "unknown";
}

void tgen_defaults(struct tgen_opts *o)
{
	assert(o);
	*o = (struct tgen_opts){
		.pattern = TGEN_RAND_SET,
		.guest_bytes = TGEN_DEFAULT_GUEST_BYTES,
		.page_size = TGEN_DEFAULT_PAGE_SIZE,
		.duration_ms = TGEN_DEFAULT_DURATION_MS,
		.epoch_ms = TGEN_DEFAULT_EPOCH_MS,
		.seed = TGEN_DEFAULT_SEED,
		.workers = TGEN_DEFAULT_WORKERS,
		.sweep_bytes_per_s = TGEN_DEFAULT_SWEEP_BYTES_PER_S,
		.rate_pages_per_s = TGEN_DEFAULT_RATE_PAGES_PER_S,
		.hot_fraction = TGEN_DEFAULT_HOT_FRACTION,
		.hot_pages_per_s = TGEN_DEFAULT_HOT_PAGES_PER_S,
		.cold_pages_per_s = TGEN_DEFAULT_COLD_PAGES_PER_S,
		.layout_extent_bytes = TGEN_DEFAULT_LAYOUT_EXTENT_BYTES,
	};
	o->worker_bytes = tgen_default_worker_bytes(o);
}

uint64_t tgen_default_worker_bytes(const struct tgen_opts *o)
{
	assert(o);
	uint64_t cap = o->workers ? o->guest_bytes / 2 / o->workers : 0;
	uint64_t b = cap < TGEN_DEFAULT_WORKER_BYTES ? cap : TGEN_DEFAULT_WORKER_BYTES;
	return o->page_size ? b / o->page_size * o->page_size : b;
}

/* ---- the RAM blocks ---- */

_Static_assert(TGEN_BLOCK_NAME_MAX == TRACE_BLOCK_NAME_MAX, "a block name fits a trace's");
_Static_assert(TGEN_BLOCKS_MAX <= TRACE_MAX_BLOCKS, "the blocks fit a trace's header");

/* One "NAME=SIZE" item of a list (len bytes at item) into o->blocks[o->n_blocks]. */
static int parse_block(struct tgen_opts *o, const char *item, size_t len, struct diag *d)
{
	char buf[TGEN_BLOCK_NAME_MAX + 48];
	struct tgen_block *b = &o->blocks[o->n_blocks];
	const char *eq;

	if (len == 0)
		return diag_set(d, "an empty item (NAME=SIZE expected)");
	if (len >= sizeof buf)
		return diag_set(d, "'%.*s...' is too long (a name of at most %d characters, =SIZE)",
				TGEN_BLOCK_NAME_MAX, item, TGEN_BLOCK_NAME_MAX);
	memcpy(buf, item, len);
	buf[len] = '\0';
	eq = strchr(buf, '=');
	if (!eq)
		return diag_set(d, "'%s' has no '=SIZE' (NAME=SIZE expected)", buf);
	if (eq == buf || (size_t)(eq - buf) > TGEN_BLOCK_NAME_MAX)
		return diag_set(d, "'%s': the name must be 1 to %d characters", buf, TGEN_BLOCK_NAME_MAX);
	memcpy(b->name, buf, (size_t)(eq - buf));
	b->name[eq - buf] = '\0';
	if (!trace_block_name_valid(b->name, TRACE_VERSION_LAYOUT))
		return diag_set(d, "'%s': bad block name (1-%d characters of A-Z a-z 0-9 . _ : / -, not "
				"a trace keyword)", b->name, TGEN_BLOCK_NAME_MAX);
	for (size_t i = 0; i < o->n_blocks; i++)
		if (!strcmp(o->blocks[i].name, b->name))
			return diag_set(d, "block '%s' is named twice", b->name);
	if (size_parse(eq + 1, &b->size_bytes) || b->size_bytes == 0)
		return diag_set(d, "'%s': the size '%s' is not a SIZE of more than 0 (4096, 64K, 16M, ...)",
				b->name, eq + 1);
	o->n_blocks++;
	return 0;
}

int tgen_blocks_parse(struct tgen_opts *o, const char *list, struct diag *d)
{
	const char *s = list;

	if (!o || !list)
		return diag_set(d, "no blocks");
	o->n_blocks = 0;
	for (;;) {
		size_t len = strcspn(s, ",");
		if (o->n_blocks == TGEN_BLOCKS_MAX) {
			o->n_blocks = 0;
			return diag_set(d, "more than %d blocks", TGEN_BLOCKS_MAX);
		}
		if (parse_block(o, s, len, d)) {
			o->n_blocks = 0;
			return -EINVAL;
		}
		if (!s[len])
			return 0;
		s += len + 1;
	}
}

uint64_t tgen_blocks_total(const struct tgen_opts *o)
{
	uint64_t sum = 0;

	if (o->n_blocks == 0)
		return o->guest_bytes;
	for (size_t i = 0; i < o->n_blocks && i < TGEN_BLOCKS_MAX; i++) {
		if (o->blocks[i].size_bytes > UINT64_MAX - sum)
			return UINT64_MAX;
		sum += o->blocks[i].size_bytes;
	}
	return sum;
}

bool tgen_blocks_format(const struct tgen_opts *o, char *buf, size_t n)
{
	size_t len = 0;

	if (n == 0)
		return false;
	buf[0] = '\0';
	for (size_t i = 0; i < o->n_blocks && i < TGEN_BLOCKS_MAX; i++) {
		char sz[32];
		int k = snprintf(buf + len, n - len, "%s%s=%s", i ? "," : "", o->blocks[i].name,
				 size_format(o->blocks[i].size_bytes, sz, sizeof sz));
		if (k < 0 || (size_t)k >= n - len)
			return false;
		len += (size_t)k;
	}
	return true;
}

/* Pages of block b (the one "pc.ram" when there are no blocks). */
static uint64_t block_pages(const struct tgen_opts *o, size_t b)
{
	return (o->n_blocks ? o->blocks[b].size_bytes : o->guest_bytes) / o->page_size;
}

/* After the page size was checked: each block a multiple of it, the total the guest. */
static int validate_blocks(const struct tgen_opts *o, struct diag *d)
{
	char a[32], b[32], c[32];

	if (o->n_blocks > TGEN_BLOCKS_MAX)
		return diag_set(d, "blocks: %zu blocks, at most %d", o->n_blocks, TGEN_BLOCKS_MAX);
	for (size_t i = 0; i < o->n_blocks; i++) {
		const struct tgen_block *k = &o->blocks[i];
		if (!memchr(k->name, '\0', sizeof k->name) || !trace_block_name_valid(k->name, TRACE_VERSION_LAYOUT))
			return diag_set(d, "blocks: block %zu has a bad name", i);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(o->blocks[j].name, k->name))
				return diag_set(d, "blocks: block '%s' is named twice", k->name);
		if (k->size_bytes == 0 || k->size_bytes % o->page_size)
			return diag_set(d, "blocks: block '%s' of %s is not a positive multiple of the "
					"page size %s", k->name, size_format(k->size_bytes, a, sizeof a),
					size_format(o->page_size, b, sizeof b));
	}
	if (o->n_blocks && tgen_blocks_total(o) != o->guest_bytes)
		return diag_set(d, "blocks: the blocks' total %s is not the guest size %s",
				tgen_blocks_total(o) == UINT64_MAX ? "(more than 16E)" :
				size_format(tgen_blocks_total(o), a, sizeof a),
				size_format(o->guest_bytes, c, sizeof c));
	return 0;
}

/* ---- derived quantities, all overflow-safe once the common checks passed ---- */

static uint64_t n_epochs(const struct tgen_opts *o)
{
	if (o->pattern == TGEN_IDLE)
		return 1;
	return (o->duration_ms - 1) / o->epoch_ms + 1;
}

static uint64_t guest_pages(const struct tgen_opts *o)
{
	return o->guest_bytes / o->page_size;
}

static uint64_t hot_pages(const struct tgen_opts *o)
{
	return (uint64_t)floor(o->hot_fraction * (double)guest_pages(o));
}

/* Events of a `per_s` rate that happened in [0, t_ms]: floor(t_ms * per_s / 1000). */
static u128 cum_at(uint64_t t_ms, uint64_t per_s)
{
	return (u128)t_ms * per_s / 1000u;
}

/* Events of a rate in one epoch at most (the floor difference is at most this). */
static u128 per_epoch_max(const struct tgen_opts *o, uint64_t per_s)
{
	return cum_at(o->epoch_ms, per_s) + 1;
}

/* ---- validation ---- */

static uint64_t layout_extent_pages(const struct tgen_opts *o)
{
	return o->layout_extent_bytes / o->page_size;
}

static uint64_t layout_extents(const struct tgen_opts *o)
{
	uint64_t ep = layout_extent_pages(o);
	return (guest_pages(o) + ep - 1) / ep;
}

/* After the page size and the guest size were checked. */
static int validate_layout(const struct tgen_opts *o, struct diag *d)
{
	char a[32], b[32];

	if (o->layout_nonzero_pct > 100)
		return diag_set(d, "layout-nonzero-pct %llu is more than 100",
				(unsigned long long)o->layout_nonzero_pct);
	if (o->layout_nonzero_pct == 0)
		return 0;
	size_format(o->layout_extent_bytes, a, sizeof a);
	size_format(o->page_size, b, sizeof b);
	if (o->layout_extent_bytes < o->page_size || o->layout_extent_bytes % o->page_size)
		return diag_set(d, "layout-extent %s is not a positive multiple of the page size %s",
				a, b);
	if (layout_extents(o) > TGEN_WORK_MAX)
		return diag_set(d, "layout-extent %s makes %llu extents, more than %llu: raise it",
				a, (unsigned long long)layout_extents(o),
				(unsigned long long)TGEN_WORK_MAX);
	if (o->layout_runs == TGEN_LAYOUT_EXP && guest_pages(o) > TGEN_WORK_MAX)
		return diag_set(d, "layout-runs exp draws once per page: %llu pages, more than %llu: "
				"raise the page size", (unsigned long long)guest_pages(o),
				(unsigned long long)TGEN_WORK_MAX);
	if (o->layout_runs != TGEN_LAYOUT_FIXED && o->layout_runs != TGEN_LAYOUT_EXP)
		return diag_set(d, "layout-runs %d: not fixed or exp", (int)o->layout_runs);
	return 0;
}

static int validate_common(const struct tgen_opts *o, struct diag *d)
{
	char a[32], b[32];

	if ((size_t)o->pattern >= N_PATTERNS)
		return diag_set(d, "unknown pattern %d", (int)o->pattern);
	if (o->page_size < TGEN_PAGE_SIZE_MIN || o->page_size > TGEN_PAGE_SIZE_MAX ||
	    (o->page_size & (o->page_size - 1)))
		return diag_set(d, "page-size %s must be a power of two between 512 and 1G",
				size_format(o->page_size, a, sizeof a));
	if (validate_blocks(o, d))
		return -EINVAL;
	if (o->guest_bytes == 0)
		return diag_set(d, "guest size must be more than 0");
	size_format(o->guest_bytes, a, sizeof a);
	size_format(o->page_size, b, sizeof b);
	if (o->guest_bytes % o->page_size)
		return diag_set(d, "guest size %s is not a multiple of the page size %s", a, b);
	if (o->duration_ms == 0)
		return diag_set(d, "duration-ms must be more than 0");
	if (o->duration_ms > UINT64_MAX / VCLOCK_NS_PER_MS)
		return diag_set(d, "duration-ms %llu is too large (at most %llu)",
				(unsigned long long)o->duration_ms,
				(unsigned long long)(UINT64_MAX / VCLOCK_NS_PER_MS));
	if (o->epoch_ms == 0)
		return diag_set(d, "epoch-ms must be more than 0");
	if (n_epochs(o) > TGEN_WORK_MAX)
		return diag_set(d, "duration-ms / epoch-ms gives %llu epochs, more than %llu: "
				"raise epoch-ms", (unsigned long long)n_epochs(o),
				(unsigned long long)TGEN_WORK_MAX);
	return validate_layout(o, d);
}

static int validate_rand_set(const struct tgen_opts *o, struct diag *d)
{
	char a[32], b[32], c[32];

	if (o->workers == 0)
		return diag_set(d, "workers must be more than 0");
	size_format(o->worker_bytes, a, sizeof a);
	size_format(o->page_size, b, sizeof b);
	if (o->worker_bytes < o->page_size || o->worker_bytes % o->page_size)
		return diag_set(d, "worker-bytes %s is not a positive multiple of the page size %s",
				a, b);
	size_format(o->guest_bytes, c, sizeof c);
	if (o->worker_bytes > o->guest_bytes / o->workers)
		return diag_set(d, "workers x worker-bytes (%lu x %s) does not fit in the guest (%s)",
				(unsigned long)o->workers, a, c);
	if (o->sweep_bytes_per_s == 0)
		return diag_set(d, "sweep-rate must be more than 0 bytes/s");
	if (o->sweep_jitter_pct > 100)
		return diag_set(d, "sweep-jitter-pct %llu is more than 100",
				(unsigned long long)o->sweep_jitter_pct);
	if (o->first_touch_ms >= o->duration_ms)
		return diag_set(d, "first-touch-ms %llu is not before duration-ms %llu (the "
				"workers would never start)", (unsigned long long)o->first_touch_ms,
				(unsigned long long)o->duration_ms);
	if ((u128)n_epochs(o) * 2 * o->workers > TGEN_WORK_MAX)
		return diag_set(d, "%llu epochs x %lu workers is too much work (more than %llu "
				"ranges): raise epoch-ms or lower workers",
				(unsigned long long)n_epochs(o), (unsigned long)o->workers,
				(unsigned long long)TGEN_WORK_MAX);
	return 0;
}

/* Pages drawn at random: bounded per epoch (memory) and in total (time). */
static int validate_draws(const char *what, u128 per_epoch, u128 total, struct diag *d)
{
	if (per_epoch > TGEN_EPOCH_DRAWS_MAX)
		return diag_set(d, "%s: up to %llu pages per epoch, more than %llu: lower the "
				"rate or epoch-ms", what,
				(unsigned long long)(per_epoch > UINT64_MAX ? UINT64_MAX : per_epoch),
				(unsigned long long)TGEN_EPOCH_DRAWS_MAX);
	if (total > TGEN_WORK_MAX)
		return diag_set(d, "%s: %llu pages in total, more than %llu: lower the rate or "
				"duration-ms", what,
				(unsigned long long)(total > UINT64_MAX ? UINT64_MAX : total),
				(unsigned long long)TGEN_WORK_MAX);
	return 0;
}

static int validate_random(const struct tgen_opts *o, struct diag *d)
{
	if (o->rate_pages_per_s == 0)
		return diag_set(d, "rate must be more than 0 pages/s");
	return validate_draws("random", per_epoch_max(o, o->rate_pages_per_s),
			      cum_at(o->duration_ms, o->rate_pages_per_s), d);
}

static int validate_hotcold(const struct tgen_opts *o, struct diag *d)
{
	uint64_t hot;

	if (!(o->hot_fraction > 0.0 && o->hot_fraction < 1.0))
		return diag_set(d, "hot-fraction %g is not strictly between 0 and 1",
				o->hot_fraction);
	hot = hot_pages(o);
	if (hot == 0 || hot >= guest_pages(o))
		return diag_set(d, "hot-fraction %g of %llu guest pages leaves the hot or the cold "
				"set empty", o->hot_fraction, (unsigned long long)guest_pages(o));
	if (o->hot_pages_per_s == 0 || o->cold_pages_per_s == 0)
		return diag_set(d, "hot-rate and cold-rate must be more than 0 pages/s");
	return validate_draws("hotcold",
			      per_epoch_max(o, o->hot_pages_per_s) +
				      per_epoch_max(o, o->cold_pages_per_s),
			      cum_at(o->duration_ms, o->hot_pages_per_s) +
				      cum_at(o->duration_ms, o->cold_pages_per_s), d);
}

int tgen_validate(const struct tgen_opts *o, struct diag *d)
{
	int rc;

	if (!o)
		return diag_set(d, "no options");
	rc = validate_common(o, d);
	if (rc)
		return rc;
	switch (o->pattern) {
	case TGEN_RAND_SET:
		return validate_rand_set(o, d);
	case TGEN_RANDOM:
		return validate_random(o, d);
	case TGEN_HOTCOLD:
		return validate_hotcold(o, d);
	case TGEN_IDLE:
		return 0;
	}
	return diag_set(d, "unknown pattern %d", (int)o->pattern);
}

/* ---- range emitter: coalesces ascending adjacent ranges of one epoch ---- */

struct emitter {
	const struct tgen_opts *o;
	trace_writer *w;
	struct tgen_stats *st;
	uint64_t first;                   /* pending range, n == 0: none */
	uint64_t n;
	void (*progress)(void *arg, const struct tgen_stats *so_far, uint64_t t_ns);   /* NULL: none */
	void *progress_arg;
};

/* Flat guest pages [first, first + n) as ranges of the blocks they lie in (a range line, or
 * with `layout` a layout line); *ranges counts the ranges written. */
static int write_split(trace_writer *w, const struct tgen_opts *o, uint64_t first, uint64_t n,
		       bool layout, uint64_t *ranges)
{
	size_t nb = o->n_blocks ? o->n_blocks : 1, b = 0;
	uint64_t base = 0;
	int rc = 0;

	while (n > 0 && rc == 0) {
		assert(b < nb && "a range inside the guest");
		uint64_t bp = block_pages(o, b);
		if (first >= base + bp) {
			base += bp;
			b++;
			continue;
		}
		uint64_t len = n < base + bp - first ? n : base + bp - first;
		struct trace_range r = { .block = (uint32_t)b, .first_page = first - base, .n_pages = len };
		rc = layout ? trace_writer_layout(w, &r) : trace_writer_range(w, &r);
		(*ranges)++;
		first += len;
		n -= len;
	}
	return rc;
}

static int emit_flush(struct emitter *e)
{
	int rc;

	if (e->n == 0)
		return 0;
	rc = write_split(e->w, e->o, e->first, e->n, false, &e->st->ranges);
	e->st->pages += e->n;
	e->n = 0;
	return rc;
}

/* Pages [first, first + n), first >= the end of the previous range of the epoch. */
static int emit_range(struct emitter *e, uint64_t first, uint64_t n)
{
	int rc;

	if (n == 0)
		return 0;
	if (e->n && first <= e->first + e->n) {
		assert(first == e->first + e->n && "ranges of an epoch come sorted and disjoint");
		e->n += n;
		return 0;
	}
	rc = emit_flush(e);
	e->first = first;
	e->n = n;
	return rc;
}

static int emit_epoch(struct emitter *e, uint64_t t_ns)
{
	int rc = emit_flush(e);

	if (rc == 0)
		rc = trace_writer_epoch(e->w, t_ns);
	e->st->epochs++;
	if (e->progress)
		e->progress(e->progress_arg, e->st, t_ns);
	return rc;
}

/* ---- page sets for the random patterns ---- */

struct pageset {
	uint64_t n_pages;                 /* guest pages */
	uint64_t *v;                      /* drawn pages (array mode) */
	uint64_t *tmp;                    /* the radix sort's other half, cap entries */
	size_t n, cap;
	uint64_t *bits;                   /* bitmap mode, n_pages bits, lazily allocated */
	int use_bits;
};

/* Choose the representation for an epoch of up to `draws` pages. */
static int pageset_begin(struct pageset *s, uint64_t draws)
{
	s->n = 0;
	s->use_bits = s->n_pages <= TGEN_BITMAP_PAGES_MAX && draws >= s->n_pages / 64;
	if (s->use_bits && !s->bits) {
		s->bits = calloc((size_t)(s->n_pages / 64 + 1), sizeof *s->bits);
		return s->bits ? 0 : -ENOMEM;
	}
	if (!s->use_bits && draws > s->cap) {
		uint64_t *v = realloc(s->v, (size_t)draws * sizeof *v);
		if (!v)
			return -ENOMEM;
		s->v = v;
		uint64_t *t = realloc(s->tmp, (size_t)draws * sizeof *t);
		if (!t)
			return -ENOMEM;
		s->tmp = t;
		s->cap = (size_t)draws;
	}
	return 0;
}

static void pageset_add(struct pageset *s, uint64_t page)
{
	assert(page < s->n_pages);
	if (s->use_bits) {
		s->bits[page / 64] |= UINT64_C(1) << (page % 64);
		return;
	}
	assert(s->n < s->cap);
	s->v[s->n++] = page;
}

/* Sort the drawn pages (each < n_pages) in place: LSD radix, a byte a pass, as many passes as
 * n_pages has bytes (the order of equal values does not matter: they are one page). */
static void pageset_sort(struct pageset *s)
{
	uint64_t *a = s->v, *b = s->tmp;
	size_t n = s->n;
	if (n < 2)
		return;
	for (unsigned shift = 0; shift < 64 && (s->n_pages - 1) >> shift; shift += 8) {
		size_t count[256] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[(a[i] >> shift) & 0xff]++;
		for (size_t d = 0, at = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[(a[i] >> shift) & 0xff]++] = a[i];
		uint64_t *t = a;
		a = b;
		b = t;
	}
	if (a != s->v)
		memcpy(s->v, a, n * sizeof *a);
}

static int pageset_emit_array(struct pageset *s, struct emitter *e)
{
	int rc = 0;

	pageset_sort(s);
	for (size_t i = 0; i < s->n && rc == 0; i++) {
		if (i > 0 && s->v[i] == s->v[i - 1])
			continue;
		rc = emit_range(e, s->v[i], 1);
	}
	return rc;
}

/* Emit the set bits as ranges and clear the bitmap for the next epoch. */
static int pageset_emit_bits(struct pageset *s, struct emitter *e)
{
	int rc = 0;

	for (uint64_t w = 0; w <= s->n_pages / 64; w++) {
		uint64_t word = s->bits[w];
		s->bits[w] = 0;
		while (word && rc == 0) {
			unsigned lo = (unsigned)__builtin_ctzll(word);
			uint64_t run = ~(word >> lo);
			unsigned len = run ? (unsigned)__builtin_ctzll(run) : 64u - lo;
			rc = emit_range(e, w * 64 + lo, len);
			word = len + lo >= 64 ? 0 : word & ~(((UINT64_C(1) << len) - 1) << lo);
		}
	}
	return rc;
}

static int pageset_emit(struct pageset *s, struct emitter *e)
{
	return s->use_bits ? pageset_emit_bits(s, e) : pageset_emit_array(s, e);
}

/* ---- the patterns: one epoch each ---- */

struct gen {
	const struct tgen_opts *o;
	struct emitter e;
	struct pageset set;
	prng rng;
	u128 *swept;                      /* rand-set: per worker, bytes swept x JIT_SCALE x 1000 */
};

/* rand-set's sweep, exactly: a worker active for ms milliseconds at sweep_bytes_per_s x
 * (1 + u / JIT_SCALE) has swept ms x rate x (JIT_SCALE + u) / (JIT_SCALE x 1000) bytes; the
 * sums stay below 2^128 (ms <= 2^64 / 10^6, rate < 2^64, factor <= 2 x 10^5). u is 0
 * without jitter (and no draw is made), which gives the exact floors of earlier versions. */
#define JIT_SCALE UINT64_C(100000)        /* 100 % */

static uint64_t swept_pages(const struct tgen_opts *o, u128 swept)
{
	return (uint64_t)(swept / ((u128)JIT_SCALE * 1000u * o->page_size));
}

/* One worker's pages in epoch k: its first touch, a pass ending (churn) or the sweep. */
static int rand_set_worker(struct gen *g, uint64_t k, uint64_t w)
{
	const struct tgen_opts *o = g->o;
	uint64_t wp = o->worker_bytes / o->page_size, base = w * wp;
	uint64_t t1 = k * o->epoch_ms, t0 = k ? t1 - o->epoch_ms : 0, ft = o->first_touch_ms;
	uint64_t d0, d1, a, n;
	int64_t u = 0;

	if (t1 < ft)
		return 0;                 /* not started yet */
	if (o->sweep_jitter_pct) {
		uint64_t span = (uint64_t)o->sweep_jitter_pct * (JIT_SCALE / 100);
		u = (int64_t)prng_below(&g->rng, 2 * span + 1) - (int64_t)span;
	}
	d0 = swept_pages(o, g->swept[w]);
	if (k > 0 && t1 > ft)
		g->swept[w] += (u128)(t1 - (t0 > ft ? t0 : ft)) * o->sweep_bytes_per_s *
			       (u128)((int64_t)JIT_SCALE + u);
	d1 = swept_pages(o, g->swept[w]);
	if ((k == 0 || t0 < ft) || d1 - d0 >= wp || (o->churn && d1 / wp > d0 / wp))
		return emit_range(&g->e, base, wp);   /* first touch, a whole pass, a remap */
	a = d0 % wp;
	n = d1 - d0;
	if (a + n <= wp)
		return emit_range(&g->e, base + a, n);
	int rc = emit_range(&g->e, base, a + n - wp);   /* wrapped part first */
	return rc ? rc : emit_range(&g->e, base + a, wp - a);
}

static int rand_set_epoch(struct gen *g, uint64_t k)
{
	int rc = 0;

	for (uint64_t w = 0; w < g->o->workers && rc == 0; w++)
		rc = rand_set_worker(g, k, w);
	return rc;
}

/* Draw the pages a rate writes in epoch k uniformly from [lo, lo + span). */
static void draw(struct gen *g, uint64_t k, uint64_t per_s, uint64_t lo, uint64_t span)
{
	uint64_t t_ms = k * g->o->epoch_ms, n = 0;

	if (k > 0)
		n = (uint64_t)(cum_at(t_ms, per_s) - cum_at(t_ms - g->o->epoch_ms, per_s));
	for (uint64_t i = 0; i < n; i++)
		pageset_add(&g->set, lo + prng_below(&g->rng, span));
}

static int random_epoch(struct gen *g, uint64_t k)
{
	const struct tgen_opts *o = g->o;
	uint64_t hot = hot_pages(o), pages = guest_pages(o);
	int rc;

	if (o->pattern == TGEN_RANDOM) {
		rc = pageset_begin(&g->set, (uint64_t)per_epoch_max(o, o->rate_pages_per_s));
		if (rc == 0)
			draw(g, k, o->rate_pages_per_s, 0, pages);
	} else {
		rc = pageset_begin(&g->set, (uint64_t)(per_epoch_max(o, o->hot_pages_per_s) +
						      per_epoch_max(o, o->cold_pages_per_s)));
		if (rc == 0) {
			draw(g, k, o->hot_pages_per_s, 0, hot);
			draw(g, k, o->cold_pages_per_s, hot, pages - hot);
		}
	}
	return rc ? rc : pageset_emit(&g->set, &g->e);
}

static int gen_body(struct gen *g)
{
	const struct tgen_opts *o = g->o;
	uint64_t epochs = n_epochs(o);
	int rc = 0;

	prng_seed_stream(&g->rng, o->seed, TGEN_STREAM_ID(o->pattern));
	if (o->pattern == TGEN_RAND_SET) {
		g->swept = calloc(o->workers, sizeof *g->swept);
		if (!g->swept)
			return -ENOMEM;
	}
	for (uint64_t k = 0; k < epochs && rc == 0; k++) {
		uint64_t t_ns = k * o->epoch_ms * VCLOCK_NS_PER_MS;
		assert(t_ns < o->duration_ms * VCLOCK_NS_PER_MS);
		rc = emit_epoch(&g->e, t_ns);
		if (rc)
			break;
		if (o->pattern == TGEN_RAND_SET)
			rc = rand_set_epoch(g, k);
		else if (o->pattern != TGEN_IDLE)
			rc = random_epoch(g, k);
	}
	return rc ? rc : emit_flush(&g->e);
}

/* ---- the initial layout ---- */

/* Knuth's selection sampling: exactly `want` of the extents, each set equally likely, in
 * ascending order; adjacent chosen extents merge into one range (a last short extent ends
 * at the guest's end). */
static int write_layout(trace_writer *w, const struct tgen_opts *o)
{
	uint64_t ep = layout_extent_pages(o), n = layout_extents(o), pages = guest_pages(o);
	uint64_t want = (n * o->layout_nonzero_pct + 50) / 100, first = 0, len = 0;
	uint64_t ranges = 0;
	prng rng;
	int rc = 0;

	prng_seed_stream(&rng, o->seed, TGEN_LAYOUT_STREAM_ID);
	for (uint64_t i = 0; i < n && want > 0 && rc == 0; i++) {
		uint64_t a = i * ep, cnt = pages - a < ep ? pages - a : ep;
		if (prng_below(&rng, n - i) >= want)
			continue;
		want--;
		if (len && first + len == a) {
			len += cnt;
			continue;
		}
		if (len)
			rc = write_split(w, o, first, len, true, &ranges);
		first = a;
		len = cnt;
	}
	if (rc == 0 && len)
		rc = write_split(w, o, first, len, true, &ranges);
	return rc;
}

/* layout-runs exp: alternating runs, each page ending its run with probability 1 / (the run's
 * mean length in pages), so lengths are geometric (>= 1 page) with means extent / (1 - share)
 * for data and extent / share for holes. Drawn twice from the same seed: the first pass sums
 * each class's raw lengths, the second emits them scaled so that the data runs add up to
 * exactly round(share x pages) and the holes to the rest (cumulative rounding: a run scaled to
 * nothing merges its neighbours). 0 < share < 100. */
struct exp_runs {
	prng rng;
	uint64_t thr[2];    /* [0] hole, [1] data: a draw below it ends the run at this page */
	int cur;            /* the class of the next run: 1 data, 0 hole */
};

static void exp_runs_start(struct exp_runs *x, const struct tgen_opts *o)
{
	uint64_t pct = o->layout_nonzero_pct, den = 100 * layout_extent_pages(o);
	prng_seed_stream(&x->rng, o->seed, TGEN_LAYOUT_STREAM_ID);
	/* 2^64 x q / den < 2^64: q <= 99 < den (0 < pct < 100, at least one page per extent) */
	x->thr[1] = (uint64_t)(((u128)1 << 64) * (100 - pct) / den);
	x->thr[0] = (uint64_t)(((u128)1 << 64) * pct / den);
	x->cur = prng_below(&x->rng, 100) < pct;
}

static uint64_t exp_runs_next(struct exp_runs *x, int *cls)
{
	uint64_t len = 1;
	*cls = x->cur;
	while (prng_next(&x->rng) >= x->thr[x->cur])
		len++;
	x->cur = !x->cur;
	return len;
}

static int write_layout_exp(trace_writer *w, const struct tgen_opts *o)
{
	uint64_t pages = guest_pages(o), want[2], raw[2] = { 0, 0 }, cum[2] = { 0, 0 };
	uint64_t runs = 0, a = 0, first = 0, len = 0, ranges = 0;
	struct exp_runs x;
	int cls, rc = 0;

	want[1] = (uint64_t)(((u128)pages * o->layout_nonzero_pct + 50) / 100);
	want[0] = pages - want[1];
	if (want[0] == 0 || want[1] == 0)   /* all data or all holes: nothing to draw */
		return want[1] ? write_split(w, o, 0, pages, true, &ranges) : 0;
	exp_runs_start(&x, o);
	/* pass 1: runs until they cover the guest and each class has one */
	while (raw[0] + raw[1] < pages || !raw[0] || !raw[1]) {
		uint64_t l = exp_runs_next(&x, &cls);
		raw[cls] += l;
		runs++;
	}
	/* pass 2: the same runs, scaled */
	exp_runs_start(&x, o);
	for (uint64_t i = 0; i < runs && rc == 0; i++) {
		uint64_t l = exp_runs_next(&x, &cls);
		uint64_t from = (uint64_t)((u128)cum[cls] * want[cls] / raw[cls]);
		cum[cls] += l;
		uint64_t n = (uint64_t)((u128)cum[cls] * want[cls] / raw[cls]) - from;
		if (n == 0)
			continue;
		if (cls) {
			if (len && first + len == a) {
				len += n;
			} else {
				if (len)
					rc = write_split(w, o, first, len, true, &ranges);
				first = a;
				len = n;
			}
		}
		a += n;
	}
	assert(rc || a == pages);
	if (rc == 0 && len)
		rc = write_split(w, o, first, len, true, &ranges);
	return rc;
}

/* ---- header comments and the file ---- */

/* Shortest %g form that reads back as the same double. */
static void fmt_double(char *buf, size_t len, double v)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static int write_gen_comment(trace_writer *w, const struct tgen_opts *o)
{
	char line[2048], g[32], p[32], a[32], b[32], f[32];
	int n;

	size_format(o->guest_bytes, g, sizeof g);
	size_format(o->page_size, p, sizeof p);
	n = snprintf(line, sizeof line, "gen: migbed trace gen --pattern %s --guest %s "
		     "--page-size %s --duration-ms %llu --epoch-ms %llu --seed %llu",
		     tgen_pattern_name(o->pattern), g, p, (unsigned long long)o->duration_ms,
		     (unsigned long long)o->epoch_ms, (unsigned long long)o->seed);
	assert(n > 0 && (size_t)n < sizeof line);
	if (o->pattern == TGEN_RAND_SET) {
		size_format(o->worker_bytes, a, sizeof a);
		size_format(o->sweep_bytes_per_s, b, sizeof b);
		n += snprintf(line + n, sizeof line - (size_t)n, " --workers %lu --worker-bytes %s "
			      "--sweep-rate %s", (unsigned long)o->workers, a, b);
		if (o->churn)
			n += snprintf(line + n, sizeof line - (size_t)n, " --churn true");
		if (o->first_touch_ms)
			n += snprintf(line + n, sizeof line - (size_t)n, " --first-touch-ms %llu",
				      (unsigned long long)o->first_touch_ms);
		if (o->sweep_jitter_pct)
			n += snprintf(line + n, sizeof line - (size_t)n, " --sweep-jitter-pct %llu",
				      (unsigned long long)o->sweep_jitter_pct);
	} else if (o->pattern == TGEN_RANDOM) {
		n += snprintf(line + n, sizeof line - (size_t)n, " --rate %llu",
			      (unsigned long long)o->rate_pages_per_s);
	} else if (o->pattern == TGEN_HOTCOLD) {
		fmt_double(f, sizeof f, o->hot_fraction);
		n += snprintf(line + n, sizeof line - (size_t)n, " --hot-fraction %s --hot-rate %llu "
			      "--cold-rate %llu", f, (unsigned long long)o->hot_pages_per_s,
			      (unsigned long long)o->cold_pages_per_s);
	}
	if (o->n_blocks) {
		n += snprintf(line + n, sizeof line - (size_t)n, " --blocks ");
		if (!tgen_blocks_format(o, line + n, sizeof line - (size_t)n))
			return -EOVERFLOW;
		n += (int)strlen(line + n);
	}
	if (o->layout_nonzero_pct) {
		size_format(o->layout_extent_bytes, a, sizeof a);
		n += snprintf(line + n, sizeof line - (size_t)n, " --layout-nonzero-pct %llu "
			      "--layout-extent %s", (unsigned long long)o->layout_nonzero_pct, a);
		if (o->layout_runs == TGEN_LAYOUT_EXP)   /* fixed, the default, is left out: old traces stay */
			n += snprintf(line + n, sizeof line - (size_t)n, " --layout-runs exp");
	}
	assert((size_t)n < sizeof line);
	return trace_writer_comment(w, line);
}

static void fill_header(const struct tgen_opts *o, struct trace_header *h)
{
	memset(h, 0, sizeof *h);
	h->version = o->layout_nonzero_pct ? TRACE_VERSION_LAYOUT : TRACE_VERSION;
	h->page_size = o->page_size;
	h->duration_ns = o->duration_ms * VCLOCK_NS_PER_MS;
	h->n_blocks = o->n_blocks ? o->n_blocks : 1;
	for (size_t b = 0; b < o->n_blocks; b++) {
		snprintf(h->blocks[b].name, sizeof h->blocks[b].name, "%s", o->blocks[b].name);
		h->blocks[b].size_bytes = o->blocks[b].size_bytes;
	}
	if (o->n_blocks == 0) {
		snprintf(h->blocks[0].name, sizeof h->blocks[0].name, "%s", TGEN_BLOCK_NAME);
		h->blocks[0].size_bytes = o->guest_bytes;
	}
}

int tgen_write_stats(const struct tgen_opts *o, const char *path, struct tgen_stats *st,
		     struct diag *d)
{
	return tgen_write_progress(o, path, st, NULL, NULL, d);
}

int tgen_write_progress(const struct tgen_opts *o, const char *path, struct tgen_stats *st,
			void (*progress)(void *arg, const struct tgen_stats *so_far, uint64_t t_ns), void *arg,
			struct diag *d)
{
	struct tgen_stats local = { 0 };
	struct trace_header h;
	struct gen g = { .o = o };
	trace_writer *w = NULL;
	int rc;

	diag_clear(d);
	if (!path || !*path)
		return diag_set(d, "no output file");
	rc = tgen_validate(o, d);
	if (rc)
		return rc;
	fill_header(o, &h);
	rc = trace_writer_open(path, &h, &w, d);
	if (rc) {
		if (d && !d->msg[0])
			diag_set(d, "%s: cannot write: %s", path, strerror(-rc));
		return rc;
	}
	g.e = (struct emitter){ .o = o, .w = w, .st = &local, .progress = progress, .progress_arg = arg };
	g.set.n_pages = guest_pages(o);
	rc = write_gen_comment(w, o);
	if (rc == 0 && o->layout_nonzero_pct)
		rc = o->layout_runs == TGEN_LAYOUT_EXP ? write_layout_exp(w, o) : write_layout(w, o);
	if (rc == 0)
		rc = gen_body(&g);
	free(g.swept);
	free(g.set.v);
	free(g.set.tmp);
	free(g.set.bits);
	if (rc) {
		const char *why = trace_writer_diag(w);
		diag_set(d, "%s: writing the trace failed: %s", path,
			 why && *why ? why : strerror(-rc));
		trace_writer_abort(w);
		return rc;
	}
	rc = trace_writer_close(w);
	if (rc) {
		diag_set(d, "%s: writing the trace failed: %s", path, strerror(-rc));
		return rc;
	}
	if (st)
		*st = local;
	return 0;
}

int tgen_write(const struct tgen_opts *o, const char *path, struct diag *d)
{
	return tgen_write_stats(o, path, NULL, d);
}
