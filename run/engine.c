/* SPDX-License-Identifier: MIT */
/* engine - the pre-copy migration engine (see engine.h). */
#include "run/engine.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "transport/stream.h"

#define NS_PER_MS 1000000ull
#define COUNTER_PERIOD_MS 100ull
#define PAGES_PER_TIME_CHECK 64u
#define DIRTY_RATE_PERIOD_MS 1000ull   /* QEMU's migration_bitmap_sync: rates over >= 1 s */
#define EXPECTED_DOWNTIME_MIN_BYTES 10000ull   /* migration_update_counters: "sent anything" */

void engine_opts_defaults(struct engine_opts *o)
{
	memset(o, 0, sizeof *o);
	o->downtime_limit_ms = 300;
	o->max_bandwidth_bytes_per_s = 128ull << 20;
	o->device_state_bytes = 256u << 10;
	o->slice_ms = 50;
	o->max_time_ms = 600000;
	o->trace_loop = true;
}

/* One bitmap per block. */
struct bitmap {
	uint64_t *w;
	uint64_t bits;
	uint64_t count;
};

struct trace_memo_epoch {
	uint64_t t_ns;
	size_t first;              /* its first range in ranges[] */
};

struct trace_memo {
	struct trace_range *ranges;
	struct trace_memo_epoch *epochs;
	size_t n_ranges, ranges_cap, n_epochs, epochs_cap;
	uint64_t duration_ns;      /* the trace header's */
	bool off;                  /* not kept (too large, or out of memory): passes read the file */
	bool full;                 /* the first pass is in */
	bool replay;               /* passes come from here */
	bool have_id;              /* id holds the file as first opened */
	struct stat id;            /* device, inode, size, mtime: the file the memo came from */
	size_t at_epoch, at_range, end_range;
};

struct eng {
	const struct engine_opts *o;
	hca_world *w;
	vclock *clk;
	evlog *ev;
	mem *m;
	proto_src *ps;
	struct metrics *out;
	size_t n_blocks;
	uint64_t page_size;
	struct bitmap *dirty;      /* migration bitmap: pages to send */
	struct bitmap *log;        /* guest writes since the last sync */
	/* trace replay */
	const char *trace_path;
	trace_reader *tr;
	uint64_t trace_base_ns;    /* virtual time of the current pass's t=0 */
	uint64_t next_epoch_ns;    /* absolute; UINT64_MAX = none */
	bool trace_done, pass_had_epoch;
	struct trace_memo memo;    /* the first pass, for the passes after it */
	bool vm_running;
	/* cursor */
	size_t cur_block;
	uint64_t cur_page;
	/* counters */
	uint64_t start_ns, last_update_ns, last_transferred;
	uint64_t window_start_ns, window_start_bytes;
	uint64_t threshold_bytes;
	uint64_t end_ns;           /* when the source finished sending (before the confirmation) */
	bool have_bandwidth;
	/* query-migrate's rates, as QEMU measures them (migration_update_counters every period,
	 * migration_update_rates at a bitmap sync >= 1 s after the last one that measured) */
	uint64_t last_pages;            /* pages sent at the last counter update */
	uint64_t bw_bytes;              /* bytes and ms of the last counter period: the bandwidth */
	uint64_t bw_ms;
	uint64_t rate_start_ms;         /* rs->time_last_bitmap_sync */
	uint64_t dirty_pages_period;    /* rs->num_dirty_pages_period: newly dirty at the syncs since */
	uint64_t dirty_bytes_last_sync; /* pending bytes right after the last sync */
	struct diag *d;
};

static uint64_t now(const struct eng *e) { return vclock_now_ns(e->clk); }

static void bm_set(struct bitmap *b, uint64_t i)
{
	uint64_t m = 1ull << (i & 63);
	if (!(b->w[i >> 6] & m)) {
		b->w[i >> 6] |= m;
		b->count++;
	}
}

static int bitmaps_init(struct eng *e)
{
	int rc = hca_fault_alloc(e->w, VOCAB_SIDE_SRC);   /* the `alloc` fault site (docs/faults.md) */
	if (rc)
		return rc;
	e->dirty = calloc(e->n_blocks, sizeof *e->dirty);
	e->log = calloc(e->n_blocks, sizeof *e->log);
	if (!e->dirty || !e->log)
		return -ENOMEM;
	for (size_t b = 0; b < e->n_blocks; b++) {
		uint64_t bits = mem_block_pages(e->m, b), words = (bits + 63) / 64;
		e->dirty[b] = (struct bitmap){ .w = calloc(words, 8), .bits = bits };
		e->log[b] = (struct bitmap){ .w = calloc(words, 8), .bits = bits };
		if (!e->dirty[b].w || !e->log[b].w)
			return -ENOMEM;
	}
	return 0;
}

static void bitmaps_free(struct eng *e)
{
	for (size_t b = 0; e->dirty && b < e->n_blocks; b++)
		free(e->dirty[b].w);
	for (size_t b = 0; e->log && b < e->n_blocks; b++)
		free(e->log[b].w);
	free(e->dirty);
	free(e->log);
}

static uint64_t pending_pages(const struct eng *e)
{
	uint64_t n = 0;
	for (size_t b = 0; e->dirty && b < e->n_blocks; b++)
		n += e->dirty[b].count;
	return n;
}

/* At a bitmap sync (migration_bitmap_sync, migration_update_rates): newly dirty pages add up;
 * >= 1 s after the last measurement, dirty-pages-rate = their count per second. The first
 * sync (every page dirty) starts the first period. */
static void update_dirty_rate(struct eng *e, uint64_t newly, bool first)
{
	uint64_t t_ms = now(e) / NS_PER_MS;
	e->dirty_bytes_last_sync = pending_pages(e) * e->page_size;
	if (first) {
		e->rate_start_ms = t_ms;
		e->dirty_pages_period = 0;
		return;
	}
	e->dirty_pages_period += newly;
	if (t_ms <= e->rate_start_ms + DIRTY_RATE_PERIOD_MS)
		return;
	e->out->dirty_pages_rate = e->dirty_pages_period * 1000 / (t_ms - e->rate_start_ms);
	e->rate_start_ms = t_ms;
	e->dirty_pages_period = 0;
}

/* migration_bitmap_sync: move the guest's dirty log into the migration bitmap. */
static void bitmap_sync(struct eng *e, bool all)
{
	uint64_t newly = 0;   /* pages the log adds to the migration bitmap (not on the first sync) */
	for (size_t b = 0; b < e->n_blocks; b++) {
		struct bitmap *d = &e->dirty[b], *l = &e->log[b];
		uint64_t words = (d->bits + 63) / 64, cnt = 0;
		for (uint64_t i = 0; i < words; i++) {
			uint64_t v = all ? ~0ull : (d->w[i] | l->w[i]);
			if (i == words - 1 && (d->bits & 63))
				v &= (1ull << (d->bits & 63)) - 1;
			if (!all)
				newly += (uint64_t)__builtin_popcountll(l->w[i] & ~d->w[i]);
			d->w[i] = v;
			l->w[i] = 0;
			cnt += (uint64_t)__builtin_popcountll(v);
		}
		d->count = cnt;
		l->count = 0;
	}
	update_dirty_rate(e, newly, all);
	e->out->dirty_sync_count++;
	evlog_emit(e->ev, "sim", "bitmap_sync", "n=%llu pending_pages=%llu",
		   (unsigned long long)e->out->dirty_sync_count, (unsigned long long)pending_pages(e));
}

/* ---- trace replay --------------------------------------------------------------------- */

/* The trace's first pass kept in memory (its epochs and their ranges, as read), so the passes
 * after it (a looping trace: 16 passes of a 30 s trace in a heavy swarm seed) are not read and
 * parsed again from the text: they are the same epochs and ranges, so nothing else changes.
 * Kept only up to TRACE_MEMO_MAX_BYTES (a larger trace is read again from its file, as
 * before) and dropped if memory runs out (the same fallback; a build with
 * EXTRA_CFLAGS=-DTRACE_MEMO_MAX_BYTES=20000 takes it for all but the smallest traces). */
#ifndef TRACE_MEMO_MAX_BYTES
#define TRACE_MEMO_MAX_BYTES (64u << 20)
#endif

static void memo_drop(struct trace_memo *m)
{
	free(m->ranges);
	free(m->epochs);
	*m = (struct trace_memo){ .off = true };
}

/* Room for one more element in a (len used of *cap): the array, grown if need be, or NULL
 * when the memo is dropped (too large, out of memory). */
static void *memo_room(struct trace_memo *m, void *a, size_t *cap, size_t len, size_t sz)
{
	if (len < *cap)
		return a;
	size_t n = *cap ? *cap * 2 : 1024;
	void *p = (m->ranges_cap + m->epochs_cap + n) * sizeof(struct trace_range) > TRACE_MEMO_MAX_BYTES
			  ? NULL : realloc(a, n * sz);
	if (!p) {
		memo_drop(m);   /* frees a */
		return NULL;
	}
	*cap = n;
	return p;
}

static void memo_epoch(struct trace_memo *m, uint64_t t_ns)
{
	if (m->off || m->full)
		return;
	struct trace_memo_epoch *ep = memo_room(m, m->epochs, &m->epochs_cap, m->n_epochs, sizeof *ep);
	if (ep) {
		m->epochs = ep;
		ep[m->n_epochs++] = (struct trace_memo_epoch){ .t_ns = t_ns, .first = m->n_ranges };
	}
}

static void memo_range(struct trace_memo *m, const struct trace_range *r)
{
	if (m->off || m->full)
		return;
	struct trace_range *rs = memo_room(m, m->ranges, &m->ranges_cap, m->n_ranges, sizeof *rs);
	if (rs) {
		m->ranges = rs;
		rs[m->n_ranges++] = *r;
	}
}

/* Is the trace file still the one the memo was read from (same device, inode, size and
 * modification time)? A file replaced or rewritten while a looping run is paused or slow is read
 * again, as every pass read it before the memo, so its defects are reported as they were. */
static bool memo_file_same(const struct eng *e)
{
	const struct trace_memo *m = &e->memo;
	struct stat st;
	if (!m->have_id || stat(e->trace_path, &st) != 0)
		return false;
	return st.st_dev == m->id.st_dev && st.st_ino == m->id.st_ino && st.st_size == m->id.st_size &&
	       st.st_mtim.tv_sec == m->id.st_mtim.tv_sec && st.st_mtim.tv_nsec == m->id.st_mtim.tv_nsec;
}

/* The next epoch of the pass: from the memo once the first pass is in it, else the file. */
static int next_epoch(struct eng *e, uint64_t *t)
{
	struct trace_memo *m = &e->memo;
	if (m->replay) {
		if (m->at_epoch == m->n_epochs)
			return 0;
		const struct trace_memo_epoch *ep = &m->epochs[m->at_epoch++];
		m->at_range = ep->first;
		m->end_range = m->at_epoch < m->n_epochs ? m->epochs[m->at_epoch].first : m->n_ranges;
		*t = ep->t_ns;
		return 1;
	}
	int rc = trace_next_epoch(e->tr, t);
	if (rc > 0)
		memo_epoch(m, *t);
	return rc;
}

static int next_range(struct eng *e, struct trace_range *r)
{
	struct trace_memo *m = &e->memo;
	if (m->replay) {
		if (m->at_range == m->end_range)
			return 0;
		*r = m->ranges[m->at_range++];
		return 1;
	}
	int rc = trace_next_range(e->tr, r);
	if (rc > 0)
		memo_range(m, r);
	return rc;
}

/* Every epoch and range of the pass was read (trace_apply reads each epoch's ranges to their
 * end before the next epoch): the memo, if kept, holds the whole pass. */
static int trace_advance(struct eng *e)
{
	struct trace_memo *m = &e->memo;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t t;
		int rc = next_epoch(e, &t);
		if (rc < 0)
			return diag_set(e->d, "%s", trace_diag(e->tr));
		if (rc > 0) {
			e->pass_had_epoch = true;
			e->next_epoch_ns = e->trace_base_ns + t;
			return 0;
		}
		/* end of this pass */
		if (e->tr) {
			m->duration_ns = trace_header(e->tr)->duration_ns;
			m->full = true;   /* nothing more is kept */
			trace_close(e->tr);
			e->tr = NULL;
		}
		uint64_t dur = m->duration_ns;
		if (!e->o->trace_loop || !e->pass_had_epoch || dur == 0)
			break;
		if (!m->off && memo_file_same(e)) {
			m->replay = true;
			m->at_epoch = 0;
		} else {
			if (!m->off)
				memo_drop(m);   /* the file changed: read it, and keep reading it */
			struct diag d2;
			if ((rc = trace_open(e->trace_path, &e->tr, &d2)) < 0)
				return diag_set(e->d, "%s", d2.msg);
		}
		e->trace_base_ns += dur;
		e->pass_had_epoch = false;
	}
	e->trace_done = true;
	e->next_epoch_ns = UINT64_MAX;
	return 0;
}

/* Apply every epoch whose time has come (only while the VM runs). */
static int trace_apply(struct eng *e)
{
	for (uint32_t guard = 0; e->vm_running && e->next_epoch_ns <= now(e); guard++) {
		assert(guard < 100000000u);
		struct trace_range r;
		int rc;
		while ((rc = next_range(e, &r)) > 0) {
			mem_write_pages_twin(e->m, e->o->shadow, r.block, r.first_page, r.n_pages);
			for (uint64_t p = r.first_page; p < r.first_page + r.n_pages; p++)
				bm_set(&e->log[r.block], p);
			e->out->guest_pages_written += r.n_pages;
		}
		if (rc < 0)
			return diag_set(e->d, "%s", trace_diag(e->tr));
		if ((rc = trace_advance(e)))
			return rc;
	}
	return 0;
}

/* ---- counters and rate limit (migration_update_counters) -------------------------------- */

static uint64_t transferred(const struct eng *e) { return proto_src_transferred(e->ps); }

/* ram_get_total_transferred_pages: pages sent, by RDMA or as zero pages. */
static uint64_t sent_pages(const struct eng *e)
{
	const struct proto_stats *st = proto_src_stats(e->ps);
	return st->normal_pages + st->zero_pages;
}

/* How long x bytes take at the last period's bandwidth, in ms (0: none measured). */
static uint64_t ms_at_bandwidth(const struct eng *e, uint64_t x)
{
	uint64_t b = e->bw_bytes;
	return b ? x / b * e->bw_ms + x % b * e->bw_ms / b : 0;
}

/* migration_update_counters' query-migrate values for the period just measured: pages-per-
 * second; expected-downtime = the bytes pending at the last sync / the bandwidth, once a
 * dirty rate is known and the period sent more than a trickle. */
static void update_rates(struct eng *e, uint64_t bytes, uint64_t elapsed_ms)
{
	uint64_t pages = sent_pages(e);
	struct metrics *m = e->out;
	if (elapsed_ms)
		m->pages_per_second = (pages - e->last_pages) * 1000 / elapsed_ms;
	e->last_pages = pages;
	e->bw_bytes = bytes;
	e->bw_ms = elapsed_ms;
	if (m->dirty_pages_rate && bytes > EXPECTED_DOWNTIME_MIN_BYTES && elapsed_ms)
		m->expected_downtime_ms = ms_at_bandwidth(e, e->dirty_bytes_last_sync);
}

static void update_counters(struct eng *e)
{
	uint64_t t = now(e);
	if (t - e->last_update_ns < COUNTER_PERIOD_MS * NS_PER_MS)
		return;
	uint64_t bytes = transferred(e) - e->last_transferred;
	uint64_t elapsed_ms = (t - e->last_update_ns) / NS_PER_MS;
	uint64_t bw_per_ms = elapsed_ms ? bytes / elapsed_ms : 0;
	e->threshold_bytes = engine_threshold_bytes(bytes, elapsed_ms, e->o->downtime_limit_ms);
	e->have_bandwidth = true;
	update_rates(e, bytes, elapsed_ms);
	e->last_update_ns = t;
	e->last_transferred = transferred(e);
	e->window_start_ns = t;
	e->window_start_bytes = transferred(e);
	evlog_emit(e->ev, "sim", "counters", "bw_bytes_per_ms=%llu threshold=%llu pending=%llu",
		   (unsigned long long)bw_per_ms, (unsigned long long)e->threshold_bytes,
		   (unsigned long long)(pending_pages(e) * e->page_size));
	if (e->o->progress) {
		const struct metrics *m = e->out;
		struct engine_progress p = { .virtual_ns = t, .round = m->dirty_sync_count,
					     .remaining_bytes = pending_pages(e) * e->page_size,
					     .transferred_bytes = transferred(e), .dirty_pages_rate = m->dirty_pages_rate,
					     .expected_downtime_ms = m->expected_downtime_ms,
					     .bandwidth_bytes_per_ms = bw_per_ms };
		e->o->progress(e->o->progress_arg, &p);
	}
}

static bool rate_exceeded(const struct eng *e)
{
	if (!e->vm_running || e->o->max_bandwidth_bytes_per_s == 0)
		return false;
	uint64_t budget = e->o->max_bandwidth_bytes_per_s / (1000 / COUNTER_PERIOD_MS);
	return transferred(e) - e->window_start_bytes >= budget;
}

/* ---- one round (ram_save_iterate) -------------------------------------------------------- */

/* Next dirty page at or after the cursor (wrapping once); false when clean. *wrapped: the
 * search passed the end of the last block, as QEMU's find_dirty_block does on its way back
 * to the first (always when nothing is dirty: QEMU goes once around before giving up). */
static bool next_dirty(struct eng *e, size_t *bo, uint64_t *po, bool *wrapped)
{
	*wrapped = true;
	for (size_t n = 0; n <= e->n_blocks; n++) {
		size_t b = (e->cur_block + n) % e->n_blocks;
		struct bitmap *bm = &e->dirty[b];
		uint64_t start = n == 0 ? e->cur_page : 0;
		if (bm->count == 0 || start >= bm->bits)
			continue;
		for (uint64_t i = start >> 6; i < (bm->bits + 63) / 64; i++) {
			uint64_t v = bm->w[i];
			if (i == start >> 6)
				v &= ~0ull << (start & 63);
			if (v) {
				*bo = b;
				*po = i * 64 + (uint64_t)__builtin_ctzll(v);
				*wrapped = e->cur_block + n >= e->n_blocks;
				return true;
			}
		}
	}
	/* the wrap: pages of the cursor's block before the cursor */
	struct bitmap *bm = &e->dirty[e->cur_block];
	for (uint64_t i = 0; bm->count && i <= e->cur_page >> 6 && i < (bm->bits + 63) / 64; i++) {
		if (bm->w[i]) {
			*bo = e->cur_block;
			*po = i * 64 + (uint64_t)__builtin_ctzll(bm->w[i]);
			return true;
		}
	}
	return false;
}

static int send_page(struct eng *e, size_t b, uint64_t p)
{
	struct bitmap *bm = &e->dirty[b];
	bm->w[p >> 6] &= ~(1ull << (p & 63));
	bm->count--;
	e->cur_block = b;
	e->cur_page = p + 1;
	int rc = proto_src_save_page(e->ps, b, p);
	return rc ? rc : proto_src_poll(e->ps);
}

static int put_ram_part(struct eng *e)
{
	uint8_t tag = STREAM_RAM_PART;
	return proto_src_put(e->ps, &tag, 1);
}

static int put_eos(struct eng *e)
{
	uint8_t eos[8] = { 0, 0, 0, 0, 0, 0, 0, STREAM_FLAG_EOS };
	int rc = proto_src_put(e->ps, eos, sizeof eos);
	return rc ? rc : proto_src_flush(e->ps);
}

/* Returns the number of pages sent, or a negative cause. */
static int64_t iterate_once(struct eng *e, bool unlimited)
{
	int rc;
	if ((rc = put_ram_part(e)) || (rc = proto_src_reg_start(e->ps)))
		return rc;
	uint64_t t0 = now(e), pages = 0;
	size_t b;
	uint64_t p;
	while (unlimited || !rate_exceeded(e)) {
		if ((rc = trace_apply(e)))
			return ENGINE_INPUT_ERROR;
		bool wrapped, found = next_dirty(e, &b, &p, &wrapped);
		if (wrapped && (rc = proto_src_scan_wrapped(e->ps)))
			return rc;
		if (!found)
			break;
		if ((rc = send_page(e, b, p)))
			return rc;
		pages++;
		if (!unlimited && pages % PAGES_PER_TIME_CHECK == 0 &&
		    now(e) - t0 > e->o->slice_ms * NS_PER_MS)
			break;
	}
	if ((rc = proto_src_reg_stop(e->ps, false)) || (rc = put_eos(e)))
		return rc;
	e->out->rounds++;
	evlog_emit(e->ev, "sim", "round", "n=%llu pages=%llu pending_pages=%llu",
		   (unsigned long long)e->out->rounds, (unsigned long long)pages,
		   (unsigned long long)pending_pages(e));
	return (int64_t)pages;
}

/* ---- setup, iterations, completion -------------------------------------------------------- */

static int put_header(struct eng *e)
{
	struct stream_buf b = { 0 };
	uint64_t total = 0;
	for (size_t i = 0; i < e->n_blocks; i++)
		total += mem_block_bytes(e->m, i);
	int rc = stream_put_be32(&b, STREAM_MAGIC);
	rc = rc ? rc : stream_put_be32(&b, STREAM_VERSION);
	rc = rc ? rc : stream_put_u8(&b, STREAM_RAM_START);
	rc = rc ? rc : stream_put_be64(&b, total | STREAM_FLAG_MEM_SIZE);
	for (size_t i = 0; !rc && i < e->n_blocks; i++) {
		const char *name = mem_block_name(e->m, i);
		size_t n = strlen(name);
		rc = stream_put_u8(&b, (uint8_t)n);
		rc = rc ? rc : stream_put_bytes(&b, name, n);
		rc = rc ? rc : stream_put_be64(&b, mem_block_bytes(e->m, i));
	}
	if (!rc)
		rc = proto_src_put(e->ps, b.data, b.len);
	else
		rc = proto_src_fail(e->ps, CAUSE_RESOURCE_EXHAUSTED, "stream header");
	stream_buf_free(&b);
	return rc;
}

static int setup(struct eng *e, const char *dst_addr)
{
	int rc;
	uint64_t setup_ns = hca_world_cost(e->w)->setup_ns;
	e->vm_running = true;
	if ((rc = trace_apply(e)))
		return ENGINE_INPUT_ERROR;
	if (setup_ns) {   /* docs/model.md, 'Setup': QEMU's setup before the first RAM page */
		evlog_emit(e->ev, "sim", "setup_cost", "ns=%llu", (unsigned long long)setup_ns);
		hca_spend(e->w, setup_ns);
	}
	if ((rc = proto_src_connect(e->ps, dst_addr)))
		return rc;
	if ((rc = put_header(e)) || (rc = proto_src_reg_start(e->ps)) || (rc = proto_src_reg_stop(e->ps, true)) ||
	    (rc = put_eos(e)))
		return rc;
	bitmap_sync(e, true);
	e->out->setup_time_ms = (now(e) - e->start_ns) / NS_PER_MS;
	e->last_update_ns = e->window_start_ns = now(e);
	e->last_transferred = e->window_start_bytes = transferred(e);
	evlog_emit(e->ev, "sim", "setup_done", "pending_pages=%llu", (unsigned long long)pending_pages(e));
	return 0;
}

/* Pages the next bitmap sync would add (dirty in the log, not in the migration bitmap). */
static uint64_t log_newly(const struct eng *e)
{
	uint64_t n = 0;
	for (size_t b = 0; b < e->n_blocks; b++)
		for (uint64_t i = 0; i < (e->dirty[b].bits + 63) / 64; i++)
			n += (uint64_t)__builtin_popcountll(e->log[b].w[i] & ~e->dirty[b].w[i]);
	return n;
}

/* NOT_CONVERGED's detail: the dirty rate as a bitmap sync now would measure it (since the
 * last measurement) against the bandwidth of the last period, and the downtime the pages
 * dirty now would need at that bandwidth. */
static int not_converged(struct eng *e)
{
	char detail[CAUSE_DETAIL_MAX], limit[64] = "unlimited";
	double mib = 1024.0 * 1024.0;
	uint64_t newly = log_newly(e), t_ms = now(e) / NS_PER_MS;
	uint64_t span_ms = t_ms - e->rate_start_ms;
	uint64_t rate = span_ms ? (e->dirty_pages_period + newly) * 1000 / span_ms : 0;
	uint64_t left = (pending_pages(e) + newly) * e->page_size;
	double bw_mib_s = e->bw_ms ? (double)e->bw_bytes * 1000.0 / (double)e->bw_ms / mib : 0.0;
	if (e->o->max_bandwidth_bytes_per_s)
		snprintf(limit, sizeof limit, "%.1f MiB/s", (double)e->o->max_bandwidth_bytes_per_s / mib);
	int n = snprintf(detail, sizeof detail, "still iterating after the time limit (max-time): the guest "
			 "dirties %llu pages/s (%.1f MiB/s), the migration moves %.1f MiB/s (max-bandwidth %s)",
			 (unsigned long long)rate, (double)(rate * e->page_size) / mib, bw_mib_s, limit);
	if (e->bw_bytes && n > 0 && (size_t)n < sizeof detail)
		snprintf(detail + n, sizeof detail - (size_t)n, ": the %.1f MiB dirty would need %llu ms of "
			 "downtime, the limit is %llu ms", (double)left / mib,
			 (unsigned long long)ms_at_bandwidth(e, left), (unsigned long long)e->o->downtime_limit_ms);
	return proto_src_fail(e->ps, CAUSE_NOT_CONVERGED, detail);
}

static int iterate(struct eng *e)
{
	for (uint64_t guard = 0;; guard++) {
		assert(guard < 100000000ull);
		int rc;
		if (now(e) - e->start_ns > e->o->max_time_ms * NS_PER_MS)
			return not_converged(e);
		update_counters(e);
		if (e->have_bandwidth && engine_wants_sync(pending_pages(e) * e->page_size, e->threshold_bytes)) {
			if ((rc = trace_apply(e)))
				return ENGINE_INPUT_ERROR;
			bitmap_sync(e, false);
			if (engine_switchover(pending_pages(e) * e->page_size, e->threshold_bytes))
				return 0;
		}
		int64_t sent = iterate_once(e, false);
		if (sent < 0)
			return (int)sent;
		if (rate_exceeded(e)) {
			uint64_t end = e->window_start_ns + COUNTER_PERIOD_MS * NS_PER_MS;
			if (end > now(e))
				hca_sleep(e->w, end - now(e));
		} else if (sent == 0 && !e->have_bandwidth) {
			/* clean and no measurement yet: let the first period pass (if the round took
			 * longer than the period, it has passed: a sleep of end - now would wrap and
			 * throw the clock to its end, the stall the cost model's wait costs met) */
			uint64_t end = e->last_update_ns + COUNTER_PERIOD_MS * NS_PER_MS;
			if (end > now(e))
				hca_sleep(e->w, end - now(e));
		}
		if ((rc = trace_apply(e)))
			return ENGINE_INPUT_ERROR;
	}
}

static int put_device_and_verify(struct eng *e)
{
	struct stream_buf b = { 0 };
	uint64_t n = e->o->device_state_bytes;
	uint8_t *dev = hca_fault_alloc(e->w, VOCAB_SIDE_SRC) ? NULL : malloc(n ? n : 1);
	if (!dev)
		return proto_src_fail(e->ps, CAUSE_RESOURCE_EXHAUSTED, "device state buffer");
	uint64_t x = e->o->seed ^ 0xd1b54a32d192ed03ull;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		dev[i] = (uint8_t)x;
	}
	int rc = stream_put_u8(&b, STREAM_DEVICE);
	rc = rc ? rc : stream_put_be32(&b, (uint32_t)n);
	rc = rc ? rc : stream_put_bytes(&b, dev, n);
	rc = rc ? rc : stream_put_digest(&b, digest_of(dev, n));
	rc = rc ? rc : stream_put_u8(&b, STREAM_VERIFY);
	rc = rc ? rc : stream_put_be32(&b, (uint32_t)e->n_blocks);
	for (size_t i = 0; !rc && i < e->n_blocks; i++) {
		struct digest dg;
		rc = proto_mem_digest(e->m, i, &dg);
		rc = rc ? rc : stream_put_digest(&b, dg);
	}
	rc = rc ? rc : stream_put_u8(&b, STREAM_EOF);
	free(dev);
	if (rc) {
		stream_buf_free(&b);
		return proto_src_fail(e->ps, CAUSE_RESOURCE_EXHAUSTED, "device state stream");
	}
	rc = proto_src_put(e->ps, b.data, b.len);
	stream_buf_free(&b);
	return rc ? rc : proto_src_flush(e->ps);
}

static int completion(struct eng *e, uint64_t *downtime_start)
{
	int rc;
	if ((rc = trace_apply(e)))
		return ENGINE_INPUT_ERROR;
	*downtime_start = now(e);
	e->vm_running = false;
	proto_src_set_guest_stopped(e->ps, true);
	uint64_t before = transferred(e);
	evlog_emit(e->ev, "sim", "vm_stop", "pending_pages=%llu", (unsigned long long)pending_pages(e));
	uint64_t floor_ns = hca_world_cost(e->w)->downtime_floor_ns;
	if (floor_ns) {   /* docs/model.md, 'Switchover': the downtime's part that is not RAM */
		evlog_emit(e->ev, "sim", "downtime_floor_cost", "ns=%llu", (unsigned long long)floor_ns);
		hca_spend(e->w, floor_ns);
	}
	bitmap_sync(e, false);
	int64_t sent = iterate_once(e, true);
	if (sent < 0)
		return (int)sent;
	if (pending_pages(e) != 0)
		return proto_src_fail(e->ps, CAUSE_INTERNAL, "pages left dirty after the final round");
	if ((rc = put_device_and_verify(e)))
		return rc;
	e->out->ram_downtime_bytes = transferred(e) - before;
	e->end_ns = now(e);
	return proto_src_await_peer(e->ps);
}

static void fill_metrics(struct eng *e, int rc, uint64_t downtime_start)
{
	struct metrics *m = e->out;
	const struct proto_stats *st = proto_src_stats(e->ps);
	uint64_t end = e->end_ns ? e->end_ns : now(e);
	m->status = rc == 0 ? "completed" : "failed";
	m->total_time_ms = (end - e->start_ns) / NS_PER_MS;
	m->downtime_ms = rc == 0 ? (end - downtime_start) / NS_PER_MS : 0;
	m->page_size = e->page_size;
	m->ram_total = 0;
	for (size_t b = 0; b < e->n_blocks; b++)
		m->ram_total += mem_block_bytes(e->m, b);
	m->ram_transferred = transferred(e);
	m->ram_remaining = pending_pages(e) * e->page_size;
	m->ram_normal = st->normal_pages;
	m->ram_duplicate = st->zero_pages;
	m->ram_precopy_bytes = m->ram_transferred - m->ram_downtime_bytes;
	m->ram_mbps = metrics_mbps(m->ram_transferred, m->total_time_ms, m->setup_time_ms);
	m->rdma_writes = st->rdma_writes;
	m->max_writes_in_flight = st->max_writes_in_flight;
	m->pin_all = proto_src_pin_all(e->ps);
	m->chunk_bytes_src = proto_src_chunk_bytes(e->ps);
	m->src.registrations = st->registrations;
	m->src.pinned_peak_bytes = st->pinned_peak_bytes;
	for (int i = 0; i < METRICS_MSG_TYPES; i++) {
		m->src.msgs_sent[i] = st->msgs_sent[i];
		m->src.msgs_recv[i] = st->msgs_recv[i];
	}
}

int engine_run(const struct engine_opts *o, const char *trace_path, mem *src_mem, hca_world *w,
	       proto_src *ps, const char *dst_addr, struct metrics *out, struct diag *d)
{
	struct eng e = { .o = o, .w = w, .clk = hca_world_clock(w), .ev = hca_world_evlog(w), .m = src_mem,
			 .ps = ps, .out = out, .n_blocks = mem_n_blocks(src_mem),
			 .page_size = mem_page_size(src_mem), .trace_path = trace_path, .d = d };
	uint64_t downtime_start = 0;
	e.start_ns = now(&e);
	out->expected_downtime_ms = o->downtime_limit_ms;   /* QEMU's value before a measurement */
	int rc = bitmaps_init(&e);
	if (rc) {
		rc = proto_src_fail(ps, CAUSE_RESOURCE_EXHAUSTED, "dirty bitmaps: out of memory");
		goto out;
	}
	struct stat st0;
	if (stat(trace_path, &st0) == 0) {   /* before the open: a change after it is seen */
		e.memo.id = st0;
		e.memo.have_id = true;
	}
	if ((rc = trace_open(trace_path, &e.tr, d)) < 0) {
		rc = ENGINE_INPUT_ERROR;
		goto out;
	}
	if ((rc = trace_advance(&e)))
		goto input;
	if ((rc = setup(&e, dst_addr)) || (rc = iterate(&e)) || (rc = completion(&e, &downtime_start)))
		goto out;
	evlog_emit(e.ev, "sim", "source_completed", "transferred=%llu", (unsigned long long)transferred(&e));
	goto out;
input:
	rc = ENGINE_INPUT_ERROR;
out:
	fill_metrics(&e, rc, downtime_start);
	if (e.tr)
		trace_close(e.tr);
	memo_drop(&e.memo);
	bitmaps_free(&e);
	return rc;
}

uint64_t engine_threshold_bytes(uint64_t bytes, uint64_t elapsed_ms, uint64_t downtime_limit_ms)
{
	if (elapsed_ms == 0)
		return 0;
	/* bytes/ms x ms, in 128 bits: no overflow for any 64-bit inputs that fit the result */
	unsigned __int128 t = (unsigned __int128)bytes * downtime_limit_ms / elapsed_ms;
	return t > UINT64_MAX ? UINT64_MAX : (uint64_t)t;
}

bool engine_wants_sync(uint64_t pending_bytes, uint64_t threshold_bytes)
{
	return pending_bytes <= threshold_bytes;
}

bool engine_switchover(uint64_t exact_pending_bytes, uint64_t threshold_bytes)
{
	return exact_pending_bytes == 0 || exact_pending_bytes < threshold_bytes;
}
