/* SPDX-License-Identifier: MIT */
/* tracegen_test - generators: determinism, exact rand-set pages, random draws read back
 * through the trace reader, validation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/prng.h"
#include "sim/trace.h"
#include "sim/tracegen.h"

#define MAX_PAGES 4096u
#define MAX_EPOCHS 256u

static char tmpdir[64];

/* A whole trace read back: the pages of each epoch as a bitmap-by-bytes. */
struct readback {
	struct trace_header h;
	size_t n_epochs;
	uint64_t t_ns[MAX_EPOCHS];
	unsigned char page[MAX_EPOCHS][MAX_PAGES];   /* 1: written in that epoch */
	uint64_t written[MAX_EPOCHS];                 /* sum of range lengths */
};

static struct readback rb;

static const char *tmp_path(const char *name)
{
	static char buf[4][128];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", tmpdir, name);
	return buf[i];
}

static int setup(void **st)
{
	(void)st;
	strcpy(tmpdir, "/tmp/tracegen_test.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **st)
{
	char cmd[128];

	(void)st;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct tgen_opts small_opts(enum tgen_pattern p)
{
	struct tgen_opts o;
	tgen_defaults(&o);
	o.pattern = p;
	o.guest_bytes = 256 * 4096;
	o.duration_ms = 100;
	/* 4 workers of guest/8 at 1G/s: what these tests were written for */
	o.workers = 4;
	o.worker_bytes = o.guest_bytes / 8;
	o.sweep_bytes_per_s = UINT64_C(1) << 30;
	return o;
}

/* Ranges of one epoch must be sorted, disjoint, not adjacent (merged) and in the block. */
static void read_epoch(trace_reader *r, size_t e)
{
	struct trace_range tr;
	uint64_t prev_end = 0;
	int first = 1, rc;

	while ((rc = trace_next_range(r, &tr)) == 1) {
		assert_int_equal(tr.block, 0);
		assert_true(tr.n_pages > 0);
		assert_true(first || tr.first_page > prev_end);   /* gap: merged */
		assert_true(tr.first_page + tr.n_pages <= rb.h.blocks[0].size_bytes / rb.h.page_size);
		assert_true(tr.first_page + tr.n_pages <= MAX_PAGES);
		for (uint64_t p = tr.first_page; p < tr.first_page + tr.n_pages; p++)
			rb.page[e][p] = 1;
		rb.written[e] += tr.n_pages;
		prev_end = tr.first_page + tr.n_pages;
		first = 0;
	}
	assert_int_equal(rc, 0);
}

static void read_back(const char *path)
{
	struct diag d;
	trace_reader *r = NULL;
	uint64_t t;
	int rc;

	memset(&rb, 0, sizeof rb);
	rc = trace_open(path, &r, &d);
	if (rc)
		fail_msg("trace_open(%s): %d %s", path, rc, d.msg);
	rb.h = *trace_header(r);
	while ((rc = trace_next_epoch(r, &t)) == 1) {
		assert_true(rb.n_epochs < MAX_EPOCHS);
		rb.t_ns[rb.n_epochs] = t;
		read_epoch(r, rb.n_epochs);
		rb.n_epochs++;
	}
	if (rc != 0)
		fail_msg("trace_next_epoch: %d %s", rc, trace_diag(r));
	trace_close(r);
}

static void gen_ok(const struct tgen_opts *o, const char *path)
{
	struct diag d;
	int rc = tgen_write(o, path, &d);

	if (rc)
		fail_msg("tgen_write(%s): %d %s", path, rc, d.msg);
}

/* Whole file into a malloc'd buffer. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 22);

	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 22, f);
	assert_true(*len < (1 << 22));
	fclose(f);
	return buf;
}

static int same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = la == lb && !memcmp(x, y, la);

	free(x);
	free(y);
	return same;
}

static void test_pattern_names(void **st)
{
	static const char *const names[] = { "rand-set", "random", "hotcold", "idle" };
	enum tgen_pattern p;

	(void)st;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(tgen_pattern_parse(names[i], &p), 0);
		assert_int_equal(p, i);
		assert_string_equal(tgen_pattern_name(p), names[i]);
	}
	assert_int_equal(tgen_pattern_parse("randset", &p), -EINVAL);
	assert_int_equal(tgen_pattern_parse("", &p), -EINVAL);
	assert_int_equal(tgen_pattern_parse("Random", &p), -EINVAL);
}

static void test_defaults(void **st)
{
	struct tgen_opts o;

	(void)st;
	memset(&o, 0xa5, sizeof o);
	tgen_defaults(&o);
	assert_int_equal(o.pattern, TGEN_RAND_SET);
	assert_int_equal(o.guest_bytes, UINT64_C(256) << 20);
	assert_int_equal(o.page_size, 4096);
	assert_int_equal(o.duration_ms, 2000);
	assert_int_equal(o.epoch_ms, 10);
	assert_int_equal(o.seed, 1);
	assert_int_equal(o.workers, 2);
	assert_int_equal(o.worker_bytes, UINT64_C(16) << 20);
	assert_int_equal(o.sweep_bytes_per_s, UINT64_C(32) << 20);
	assert_int_equal(o.rate_pages_per_s, 25600);
	assert_true(o.hot_fraction == 0.05);
	assert_int_equal(o.hot_pages_per_s, 25600);
	assert_int_equal(o.cold_pages_per_s, 256);
	/* worker-bytes: 16M, at most guest / (2 x workers), whole pages */
	o.guest_bytes = UINT64_C(4) << 20;
	assert_int_equal(tgen_default_worker_bytes(&o), UINT64_C(1) << 20);
	o.guest_bytes = UINT64_C(64) << 20;
	assert_int_equal(tgen_default_worker_bytes(&o), UINT64_C(16) << 20);
	o.guest_bytes = UINT64_C(1) << 30;
	assert_int_equal(tgen_default_worker_bytes(&o), UINT64_C(16) << 20);
	o.guest_bytes = 7 * 4096;
	o.workers = 3;
	assert_int_equal(tgen_default_worker_bytes(&o), 4096);
	o.workers = 0;
	assert_int_equal(tgen_default_worker_bytes(&o), 0);
	assert_int_equal(tgen_validate(&o, NULL) < 0, 1);
}

struct bad_case {
	const char *what;
	void (*mutate)(struct tgen_opts *o);
	const char *keyword;
};

static void m_workers_too_big(struct tgen_opts *o)
{
	o->workers = 9;
	o->worker_bytes = o->guest_bytes / 8;
}
static void m_zero_duration(struct tgen_opts *o) { o->duration_ms = 0; }
static void m_page_not_pow2(struct tgen_opts *o) { o->page_size = 3000; }
static void m_page_too_small(struct tgen_opts *o) { o->page_size = 256; }
static void m_guest_not_multiple(struct tgen_opts *o) { o->guest_bytes += 100; }
static void m_guest_zero(struct tgen_opts *o) { o->guest_bytes = 0; }
static void m_epoch_zero(struct tgen_opts *o) { o->epoch_ms = 0; }
static void m_sweep_zero(struct tgen_opts *o) { o->sweep_bytes_per_s = 0; }
static void m_workers_zero(struct tgen_opts *o) { o->workers = 0; }
static void m_worker_bytes_odd(struct tgen_opts *o) { o->worker_bytes = 4097; }
static void m_rate_zero(struct tgen_opts *o) { o->pattern = TGEN_RANDOM; o->rate_pages_per_s = 0; }
static void m_rate_huge(struct tgen_opts *o)
{
	o->pattern = TGEN_RANDOM;
	o->rate_pages_per_s = UINT64_MAX;
}
static void m_hot_one(struct tgen_opts *o) { o->pattern = TGEN_HOTCOLD; o->hot_fraction = 1.0; }
static void m_hot_neg(struct tgen_opts *o) { o->pattern = TGEN_HOTCOLD; o->hot_fraction = -0.5; }
static void m_hot_tiny(struct tgen_opts *o) { o->pattern = TGEN_HOTCOLD; o->hot_fraction = 1e-9; }
static void m_hot_nan(struct tgen_opts *o) { o->pattern = TGEN_HOTCOLD; o->hot_fraction = NAN; }
static void m_cold_zero(struct tgen_opts *o) { o->pattern = TGEN_HOTCOLD; o->cold_pages_per_s = 0; }
static void m_duration_huge(struct tgen_opts *o) { o->duration_ms = UINT64_MAX; }
static void m_too_many_epochs(struct tgen_opts *o)
{
	o->duration_ms = UINT64_C(1) << 40;
	o->epoch_ms = 1;
}
static void m_bad_pattern(struct tgen_opts *o) { o->pattern = (enum tgen_pattern)17; }

static void test_validate_rejects(void **st)
{
	static const struct bad_case cases[] = {
		{ "workers x bytes > guest", m_workers_too_big, "does not fit in the guest" },
		{ "zero duration", m_zero_duration, "duration-ms" },
		{ "page size not a power of two", m_page_not_pow2, "power of two" },
		{ "page size too small", m_page_too_small, "page-size" },
		{ "guest not a page multiple", m_guest_not_multiple, "not a multiple of the page size" },
		{ "guest zero", m_guest_zero, "guest size" },
		{ "epoch zero", m_epoch_zero, "epoch-ms" },
		{ "sweep rate zero", m_sweep_zero, "sweep-rate" },
		{ "no workers", m_workers_zero, "workers" },
		{ "worker bytes not page multiple", m_worker_bytes_odd, "worker-bytes 4097" },
		{ "random rate zero", m_rate_zero, "rate" },
		{ "random rate huge", m_rate_huge, "per epoch" },
		{ "hot fraction 1", m_hot_one, "hot-fraction" },
		{ "hot fraction negative", m_hot_neg, "hot-fraction" },
		{ "hot set empty", m_hot_tiny, "empty" },
		{ "hot fraction NaN", m_hot_nan, "hot-fraction" },
		{ "cold rate zero", m_cold_zero, "cold-rate" },
		{ "duration overflows ns", m_duration_huge, "too large" },
		{ "too many epochs", m_too_many_epochs, "epochs" },
		{ "unknown pattern", m_bad_pattern, "pattern" },
	};

	(void)st;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tgen_opts o = small_opts(TGEN_RAND_SET);
		struct diag d;
		const char *path = tmp_path("bad.trace");

		cases[i].mutate(&o);
		diag_clear(&d);
		if (tgen_validate(&o, &d) != -EINVAL || !strstr(d.msg, cases[i].keyword))
			fail_msg("%s: want -EINVAL with '%s', got '%s'", cases[i].what,
				 cases[i].keyword, d.msg);
		/* tgen_write refuses too, leaving no file */
		assert_int_equal(tgen_write(&o, path, &d), -EINVAL);
		assert_int_equal(access(path, F_OK), -1);
	}
}

static void test_validate_accepts_defaults(void **st)
{
	struct diag d;

	(void)st;
	for (int p = TGEN_RAND_SET; p <= TGEN_IDLE; p++) {
		struct tgen_opts o = small_opts((enum tgen_pattern)p);
		if (tgen_validate(&o, &d))
			fail_msg("pattern %d: %s", p, d.msg);
	}
}

static void test_same_options_same_bytes(void **st)
{
	(void)st;
	for (int p = TGEN_RAND_SET; p <= TGEN_IDLE; p++) {
		struct tgen_opts o = small_opts((enum tgen_pattern)p);
		const char *a = tmp_path("a.trace"), *b = tmp_path("b.trace");
		gen_ok(&o, a);
		gen_ok(&o, b);
		if (!same_file(a, b))
			fail_msg("pattern %s: two runs differ", tgen_pattern_name(o.pattern));
	}
}

static void test_seed_changes_random_patterns(void **st)
{
	(void)st;
	for (int p = TGEN_RANDOM; p <= TGEN_HOTCOLD; p++) {
		struct tgen_opts o = small_opts((enum tgen_pattern)p);
		const char *a = tmp_path("s1.trace"), *b = tmp_path("s2.trace");
		static struct readback first;

		gen_ok(&o, a);
		read_back(a);
		first = rb;
		o.seed = 2;
		gen_ok(&o, b);
		read_back(b);
		/* not just the "# gen: ... --seed" comment: the pages differ */
		assert_int_equal(first.n_epochs, rb.n_epochs);
		assert_true(memcmp(first.page, rb.page, sizeof rb.page) != 0);
	}
}

static void check_header(const struct tgen_opts *o)
{
	assert_int_equal(rb.h.page_size, o->page_size);
	assert_int_equal(rb.h.duration_ns, o->duration_ms * 1000000u);
	assert_int_equal(rb.h.n_blocks, 1);
	assert_string_equal(rb.h.blocks[0].name, "pc.ram");
	assert_int_equal(rb.h.blocks[0].size_bytes, o->guest_bytes);
}

/* The expected rand-set pages of epoch k > 0, simulated page by page: every worker has
 * swept floor(t * rate / page) pages by time t. */
static void expect_rand_set(const struct tgen_opts *o, uint64_t k, unsigned char *want)
{
	uint64_t wp = o->worker_bytes / o->page_size;
	uint64_t d0 = (k - 1) * o->epoch_ms * o->sweep_bytes_per_s / 1000 / o->page_size;
	uint64_t d1 = k * o->epoch_ms * o->sweep_bytes_per_s / 1000 / o->page_size;

	memset(want, 0, MAX_PAGES);
	for (uint32_t w = 0; w < o->workers; w++) {
		for (uint64_t i = d0; i < d1; i++)
			want[w * wp + i % wp] = 1;
	}
}

static void check_rand_set(const struct tgen_opts *o)
{
	static unsigned char want[MAX_PAGES];
	uint64_t wp = o->worker_bytes / o->page_size;

	read_back(tmp_path("rs.trace"));
	check_header(o);
	assert_int_equal(rb.n_epochs, (o->duration_ms + o->epoch_ms - 1) / o->epoch_ms);
	/* epoch 0: the first touch of every region, nothing beyond them */
	memset(want, 0, sizeof want);
	memset(want, 1, o->workers * wp);
	assert_memory_equal(rb.page[0], want, MAX_PAGES);
	for (uint64_t k = 1; k < rb.n_epochs; k++) {
		assert_int_equal(rb.t_ns[k], k * o->epoch_ms * 1000000u);
		expect_rand_set(o, k, want);
		if (memcmp(rb.page[k], want, MAX_PAGES))
			fail_msg("epoch %llu: pages differ from the sweep", (unsigned long long)k);
	}
}

static void test_rand_set_exact_pages(void **st)
{
	/* 3 workers x 16 pages in a 64-page guest; 5 pages per 10 ms epoch: wraps every
	 * 3.2 epochs. */
	struct tgen_opts o;

	(void)st;
	tgen_defaults(&o);
	o.guest_bytes = 64 * 4096;
	o.duration_ms = 95;
	o.workers = 3;
	o.worker_bytes = 16 * 4096;
	o.sweep_bytes_per_s = 5 * 4096 * 100;
	o.seed = 9;
	gen_ok(&o, tmp_path("rs.trace"));
	check_rand_set(&o);
	/* 2.5 pages per epoch: the cumulative floor alternates 2 and 3 */
	o.sweep_bytes_per_s = 5 * 4096 * 50;
	gen_ok(&o, tmp_path("rs.trace"));
	check_rand_set(&o);
	assert_int_equal(rb.written[1], 3 * 2);
	assert_int_equal(rb.written[2], 3 * 3);
	/* faster than a region per epoch: each epoch rewrites every region whole */
	o.sweep_bytes_per_s = 40 * 4096 * 100;
	o.epoch_ms = 7;
	gen_ok(&o, tmp_path("rs.trace"));
	check_rand_set(&o);
	assert_int_equal(rb.written[1], 48);
}

/* Draws of a `per_s` rate in epoch k (cumulative floors), replayed into want. */
static void replay(prng *p, const struct tgen_opts *o, size_t k, uint64_t per_s, uint64_t lo,
		   uint64_t span, unsigned char *want)
{
	uint64_t n = k * o->epoch_ms * per_s / 1000 - (k - 1) * o->epoch_ms * per_s / 1000;

	for (uint64_t i = 0; i < n; i++)
		want[lo + prng_below(p, span)] = 1;
}

/* Replay the generator's draws with the documented stream and compare page sets: random
 * draws over the guest; hotcold draws the hot set [0, H) then the cold rest. */
static void check_random_draws(const struct tgen_opts *o, uint64_t hot)
{
	static unsigned char want[MAX_PAGES];
	uint64_t pages = o->guest_bytes / o->page_size;
	prng p;

	prng_seed_stream(&p, o->seed, TGEN_STREAM_ID(o->pattern));
	for (size_t k = 1; k < rb.n_epochs; k++) {
		memset(want, 0, sizeof want);
		if (o->pattern == TGEN_RANDOM) {
			replay(&p, o, k, o->rate_pages_per_s, 0, pages, want);
		} else {
			replay(&p, o, k, o->hot_pages_per_s, 0, hot, want);
			replay(&p, o, k, o->cold_pages_per_s, hot, pages - hot, want);
		}
		if (memcmp(rb.page[k], want, MAX_PAGES))
			fail_msg("epoch %zu: pages differ from the seeded draws", k);
	}
}


/* rand-set with churn and a first touch, simulated page by page: a worker starts at ft
 * with its whole region; a pass that ends in an epoch (churn) writes the whole region. */
static void expect_stressng(const struct tgen_opts *o, uint64_t k, unsigned char *want)
{
	uint64_t wp = o->worker_bytes / o->page_size, t1 = k * o->epoch_ms;
	uint64_t t0 = k ? t1 - o->epoch_ms : 0, ft = o->first_touch_ms;
	uint64_t d0 = t0 > ft ? (t0 - ft) * o->sweep_bytes_per_s / 1000 / o->page_size : 0;
	uint64_t d1 = t1 > ft ? (t1 - ft) * o->sweep_bytes_per_s / 1000 / o->page_size : 0;

	memset(want, 0, MAX_PAGES);
	for (uint32_t w = 0; w < o->workers && t1 >= ft; w++) {
		int whole = (k == 0 || t0 < ft) || (o->churn && d1 / wp > d0 / wp);
		for (uint64_t i = d0; i < d1 || (whole && i < d0 + wp); i++)
			want[w * wp + i % wp] = 1;
	}
}

static void test_rand_set_churn_and_first_touch(void **st)
{
	static unsigned char want[MAX_PAGES];
	struct tgen_opts o;

	(void)st;
	tgen_defaults(&o);
	o.guest_bytes = 64 * 4096;
	o.duration_ms = 200;
	o.workers = 3;
	o.worker_bytes = 16 * 4096;
	o.sweep_bytes_per_s = 3 * 4096 * 100;   /* 3 pages per epoch: a pass every 5.3 epochs */
	for (int churn = 0; churn <= 1; churn++) {
		for (uint64_t ft = 0; ft <= 35; ft += 35) {
			uint64_t whole = 0;
			o.churn = churn;
			o.first_touch_ms = ft;
			gen_ok(&o, tmp_path("ch.trace"));
			read_back(tmp_path("ch.trace"));
			assert_int_equal(rb.h.version, TRACE_VERSION);
			for (uint64_t k = 0; k < rb.n_epochs; k++) {
				expect_stressng(&o, k, want);
				if (memcmp(rb.page[k], want, MAX_PAGES))
					fail_msg("churn %d first touch %llu: epoch %llu differs", churn,
						 (unsigned long long)ft, (unsigned long long)k);
				whole += rb.written[k] == 3 * 16;
				if (k * o.epoch_ms < ft)
					assert_int_equal(rb.written[k], 0);   /* nothing before the first touch */
			}
			/* the first touch, and with churn one remap per 16 / 3 epochs */
			if (churn)
				assert_int_equal(whole, 1 + (190 - ft) * 3 / 10 / 16);
			else
				assert_int_equal(whole, 1);
		}
	}
	/* first touch at 0 and no churn is what earlier migbeds wrote (the exact sweep) */
	o.churn = 0;
	o.first_touch_ms = 0;
	gen_ok(&o, tmp_path("rs.trace"));
	check_rand_set(&o);
}

static void test_rand_set_jitter(void **st)
{
	struct tgen_opts o = small_opts(TGEN_RAND_SET);
	uint64_t total = 0, lo = UINT64_MAX, hi = 0;
	const char *a = tmp_path("j1.trace"), *b = tmp_path("j2.trace");

	(void)st;
	o.duration_ms = 2000;
	o.epoch_ms = 10;
	o.guest_bytes = 1024 * 4096;
	o.workers = 1;
	o.worker_bytes = 1024 * 4096;
	o.sweep_bytes_per_s = 100 * 4096 * 100;   /* 100 pages per epoch */
	o.sweep_jitter_pct = 50;
	gen_ok(&o, a);
	gen_ok(&o, b);
	assert_true(same_file(a, b));             /* seeded: deterministic */
	read_back(a);
	for (uint64_t k = 1; k < rb.n_epochs; k++) {
		total += rb.written[k];
		lo = rb.written[k] < lo ? rb.written[k] : lo;
		hi = rb.written[k] > hi ? rb.written[k] : hi;
	}
	/* each epoch within 50..150 pages, the spread used, the mean rate kept (+-5 %) */
	assert_true(lo >= 49 && hi <= 151);
	assert_true(lo < 70 && hi > 130);
	assert_true(total > 199 * 100 * 95 / 100 && total < 199 * 100 * 105 / 100);
	o.seed++;
	gen_ok(&o, b);
	assert_false(same_file(a, b));
	o.sweep_jitter_pct = 0;                   /* 0: exactly the old sweep, no draws */
	o.seed--;
	gen_ok(&o, a);
	read_back(a);
	for (uint64_t k = 1; k < rb.n_epochs; k++)
		assert_int_equal(rb.written[k], 100);
}

/* The layout's ranges read back: whole extents, exactly the share asked, ascending. */
static uint64_t read_layout(const char *path, uint64_t extent_pages, uint64_t guest_pages)
{
	struct trace_range tr;
	struct diag d;
	trace_reader *r = NULL;
	uint64_t pages = 0, prev_end = 0, t;
	int rc;

	assert_int_equal(trace_open(path, &r, &d), 0);
	while ((rc = trace_next_layout(r, &tr)) == 1) {
		assert_true(tr.first_page % extent_pages == 0);
		assert_true(tr.first_page + tr.n_pages == guest_pages || tr.n_pages % extent_pages == 0);
		assert_true(pages == 0 || tr.first_page > prev_end);   /* merged */
		prev_end = tr.first_page + tr.n_pages;
		pages += tr.n_pages;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(trace_next_layout(r, &tr), 0);   /* done stays done */
	assert_int_equal(trace_next_epoch(r, &t), 1);     /* the epochs follow */
	assert_int_equal(t, 0);
	trace_close(r);
	return pages;
}

/* A 40 % layout: the same options give the same file; seed 2 places it elsewhere (a holds
 * seed 1's, b seed 2's; o's seed is 1 again after). */
static void layout_seeded(struct tgen_opts *o, const char *a, const char *b)
{
	o->layout_nonzero_pct = 40;
	o->seed = 1;
	gen_ok(o, a);
	gen_ok(o, b);
	assert_true(same_file(a, b));
	o->seed = 2;
	gen_ok(o, b);
	assert_false(same_file(a, b));          /* placed by the seed */
	o->seed = 1;
}

static void test_layout(void **st)
{
	struct tgen_opts o = small_opts(TGEN_IDLE);
	const char *a = tmp_path("l1.trace"), *b = tmp_path("l2.trace");

	(void)st;
	o.guest_bytes = 1000 * 4096;            /* 63 extents of 16 pages, the last one 8 */
	o.layout_extent_bytes = 16 * 4096;
	for (uint64_t pct = 0; pct <= 100; pct += 25) {
		o.layout_nonzero_pct = pct;
		gen_ok(&o, a);
		read_back(a);
		assert_int_equal(rb.h.version, pct ? TRACE_VERSION_LAYOUT : TRACE_VERSION);
		uint64_t pages = read_layout(a, 16, 1000);
		uint64_t want = (63 * pct + 50) / 100;
		/* want whole extents, one of which may be the short last one */
		assert_true(pages == want * 16 || pages == want * 16 - 8);
	}
	layout_seeded(&o, a, b);
	/* the layout's stream is its own: the random pattern's pages do not move */
	struct tgen_opts r = small_opts(TGEN_RANDOM), rl;
	gen_ok(&r, a);
	read_back(a);
	uint64_t w1 = rb.written[1];
	rl = r;
	rl.layout_nonzero_pct = 50;
	gen_ok(&rl, b);
	read_back(b);
	assert_int_equal(rb.written[1], w1);
}

/* layout-runs exp: exactly round(pct % of the pages) in data, in merged ranges that are not all
 * on extent boundaries; the mean data run near extent / (1 - share); seeded; the fixed
 * placement (the default) is unchanged by the key's existence. */
static void test_layout_exp(void **st)
{
	struct tgen_opts o = small_opts(TGEN_IDLE);
	const char *a = tmp_path("le1.trace"), *b = tmp_path("le2.trace");
	struct trace_range tr;
	struct diag d;
	trace_reader *r = NULL;

	(void)st;
	o.guest_bytes = 100000 * 4096;
	o.layout_extent_bytes = 64 * 4096;
	o.layout_runs = TGEN_LAYOUT_EXP;
	for (uint64_t pct = 1; pct <= 100; pct += 11) {
		uint64_t pages = 0, prev_end = 0, runs = 0, unaligned = 0;
		o.layout_nonzero_pct = pct;
		gen_ok(&o, a);
		assert_int_equal(trace_open(a, &r, &d), 0);
		while (trace_next_layout(r, &tr) == 1) {
			assert_true(runs == 0 || tr.first_page > prev_end);   /* merged, ascending */
			assert_true(tr.n_pages > 0 && tr.first_page + tr.n_pages <= 100000);
			unaligned += tr.first_page % 64 != 0;
			prev_end = tr.first_page + tr.n_pages;
			pages += tr.n_pages;
			runs++;
		}
		trace_close(r);
		assert_int_equal(pages, (100000 * pct + 50) / 100);
		if (pct < 100) {
			assert_true(unaligned > 0);
			/* ~100000 x share x (1 - share) / 64 data runs expected: at least a few */
			assert_true(runs >= 2);
			/* mean data run within a factor 3 of extent / (1 - share) (the scaling and
			 * the chance of a few runs) */
			double mean = (double)pages / (double)runs, want = 64.0 * 100 / (double)(100 - pct);
			assert_true(mean > want / 3 && mean < want * 3);
		} else {
			assert_int_equal(runs, 1);
		}
	}
	layout_seeded(&o, a, b);
	o.layout_runs = TGEN_LAYOUT_FIXED;
	gen_ok(&o, b);
	assert_false(same_file(a, b));
	read_layout(b, 64, 100000);   /* fixed: whole extents */
	/* a guest of one page: all data or all hole */
	o.layout_runs = TGEN_LAYOUT_EXP;
	o.guest_bytes = 4096;
	o.layout_extent_bytes = 4096;
	o.layout_nonzero_pct = 60;
	gen_ok(&o, a);
	assert_int_equal(trace_open(a, &r, &d), 0);
	assert_int_equal(trace_next_layout(r, &tr), 1);
	assert_int_equal(tr.n_pages, 1);
	trace_close(r);
	o.layout_runs = (enum tgen_layout_runs)7;
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "layout-runs"));
}

static void test_validate_new_keys(void **st)
{
	struct tgen_opts o = small_opts(TGEN_RAND_SET);
	struct diag d;

	(void)st;
	o.first_touch_ms = o.duration_ms;
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "first-touch-ms 100 is not before duration-ms 100"));
	o = small_opts(TGEN_RAND_SET);
	o.sweep_jitter_pct = 101;
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "sweep-jitter-pct 101 is more than 100"));
	o = small_opts(TGEN_IDLE);
	o.layout_nonzero_pct = 101;
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "layout-nonzero-pct 101"));
	o.layout_nonzero_pct = 10;
	o.layout_extent_bytes = 6000;
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "layout-extent"));
	o.layout_extent_bytes = 0;
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	o.page_size = 512;
	o.guest_bytes = UINT64_C(1) << 42;
	o.layout_extent_bytes = 512;
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "extents, more than"));
}

static void test_random_pages(void **st)
{
	struct tgen_opts o = small_opts(TGEN_RANDOM);

	(void)st;
	/* dense epochs (bitmap path): 4096 pages, 2000 draws per epoch */
	o.guest_bytes = MAX_PAGES * 4096;
	o.rate_pages_per_s = 200000;
	gen_ok(&o, tmp_path("r.trace"));
	read_back(tmp_path("r.trace"));
	check_header(&o);
	assert_int_equal(rb.n_epochs, 10);
	assert_int_equal(rb.written[0], 0);
	check_random_draws(&o, 0);
	/* sparse epochs (sorted array path): 30 draws per epoch */
	o.rate_pages_per_s = 3000;
	gen_ok(&o, tmp_path("r.trace"));
	read_back(tmp_path("r.trace"));
	check_random_draws(&o, 0);
	assert_true(rb.written[5] > 20 && rb.written[5] <= 30);
}

/* Sparse epochs with repeated draws (sorted-array path, 1G guest): the ranges read back
 * are exactly the replayed draws, each page once. */
static void test_random_sparse_repeats(void **st)
{
	struct tgen_opts o = small_opts(TGEN_RANDOM);
	const uint64_t pages = UINT64_C(1) << 18;
	unsigned char *want = malloc(pages), *got = malloc(pages);
	struct trace_range tr;
	trace_reader *r = NULL;
	struct diag d;
	uint64_t t, repeats = 0;
	prng p;

	(void)st;
	assert_non_null(want);
	assert_non_null(got);
	o.guest_bytes = pages * 4096;
	o.rate_pages_per_s = 400000;              /* 4000 draws per epoch < pages / 64 */
	o.duration_ms = 30;
	gen_ok(&o, tmp_path("sparse.trace"));
	prng_seed_stream(&p, o.seed, TGEN_STREAM_ID(TGEN_RANDOM));
	assert_int_equal(trace_open(tmp_path("sparse.trace"), &r, &d), 0);
	for (int k = 0; trace_next_epoch(r, &t) == 1; k++) {
		memset(want, 0, pages);
		memset(got, 0, pages);
		for (int i = 0; k > 0 && i < 4000; i++) {
			uint64_t pg = prng_below(&p, pages);
			repeats += want[pg];
			want[pg] = 1;
		}
		while (trace_next_range(r, &tr) == 1) {
			for (uint64_t pg = tr.first_page; pg < tr.first_page + tr.n_pages; pg++) {
				assert_int_equal(got[pg], 0);
				got[pg] = 1;
			}
		}
		assert_memory_equal(got, want, pages);
	}
	trace_close(r);
	assert_true(repeats > 10);                /* ~30 per epoch: the case was exercised */
	free(want);
	free(got);
}

static void test_hotcold_pages(void **st)
{
	struct tgen_opts o = small_opts(TGEN_HOTCOLD);
	uint64_t hot = 0, cold = 0;

	(void)st;
	o.guest_bytes = MAX_PAGES * 4096;
	o.hot_fraction = 0.25;                    /* pages 0..1023 */
	o.hot_pages_per_s = 2000;                 /* 20 per epoch */
	o.cold_pages_per_s = 500;                 /* 5 per epoch */
	o.duration_ms = 1000;
	o.epoch_ms = 10;
	gen_ok(&o, tmp_path("hc.trace"));
	read_back(tmp_path("hc.trace"));
	check_header(&o);
	assert_int_equal(rb.n_epochs, 100);
	assert_int_equal(rb.written[0], 0);
	for (size_t k = 0; k < rb.n_epochs; k++) {
		for (size_t p = 0; p < MAX_PAGES; p++) {
			hot += p < 1024 && rb.page[k][p];
			cold += p >= 1024 && rb.page[k][p];
		}
	}
	/* 99 epochs x 20 hot / 5 cold draws, few repeats within an epoch */
	assert_true(hot > 1850 && hot <= 1980);
	assert_true(cold > 470 && cold <= 495);
	check_random_draws(&o, 1024);
}

static void test_idle(void **st)
{
	struct tgen_opts o = small_opts(TGEN_IDLE);
	struct tgen_stats s;
	struct diag d;

	(void)st;
	assert_int_equal(tgen_write_stats(&o, tmp_path("idle.trace"), &s, &d), 0);
	assert_int_equal(s.epochs, 1);
	assert_int_equal(s.pages, 0);
	read_back(tmp_path("idle.trace"));
	check_header(&o);
	assert_int_equal(rb.n_epochs, 1);
	assert_int_equal(rb.t_ns[0], 0);
	assert_int_equal(rb.written[0], 0);
}

static void test_stats_match_file(void **st)
{
	struct tgen_opts o = small_opts(TGEN_RAND_SET);
	struct tgen_stats s;
	struct diag d;
	uint64_t total = 0;

	(void)st;
	assert_int_equal(tgen_write_stats(&o, tmp_path("st.trace"), &s, &d), 0);
	read_back(tmp_path("st.trace"));
	for (size_t k = 0; k < rb.n_epochs; k++)
		total += rb.written[k];
	assert_int_equal(s.epochs, rb.n_epochs);
	assert_int_equal(s.pages, total);
}

static void test_gen_comment_and_zst(void **st)
{
	struct tgen_opts o = small_opts(TGEN_HOTCOLD);
	const char *plain = tmp_path("c.trace"), *zst = tmp_path("c.trace.zst");
	static struct readback a;
	size_t len;
	char *text;

	(void)st;
	o.hot_fraction = 0.1;
	gen_ok(&o, plain);
	text = slurp(plain, &len);
	text[len] = '\0';
	assert_non_null(strstr(text, "# gen: migbed trace gen --pattern hotcold --guest 1M "
				     "--page-size 4K --duration-ms 100 --epoch-ms 10 --seed 1 "
				     "--hot-fraction 0.1 --hot-rate 25600 --cold-rate 256\n"));
	free(text);
	read_back(plain);
	a = rb;
	gen_ok(&o, zst);
	read_back(zst);
	assert_int_equal(a.n_epochs, rb.n_epochs);
	assert_memory_equal(a.t_ns, rb.t_ns, sizeof rb.t_ns);
	assert_memory_equal(a.page, rb.page, sizeof rb.page);
	assert_memory_equal(a.written, rb.written, sizeof rb.written);
}

static void test_unwritable_path(void **st)
{
	struct tgen_opts o = small_opts(TGEN_IDLE);
	struct diag d;

	(void)st;
	diag_clear(&d);
	assert_true(tgen_write(&o, "/nonexistent-dir/x.trace", &d) < 0);
	assert_non_null(strstr(d.msg, "/nonexistent-dir/x.trace"));
	assert_true(tgen_write(&o, "", &d) < 0);
}

/* A trace's epochs as flat guest pages (the blocks back to back): flat[e][page] = 1. Every
 * range lies inside its block. */
static size_t read_flat(const char *path, unsigned char (*flat)[MAX_PAGES], struct trace_header *h)
{
	struct diag d;
	trace_reader *r = NULL;
	struct trace_range tr;
	uint64_t t, base[TRACE_MAX_BLOCKS] = { 0 };
	size_t e = 0;
	int rc;

	rc = trace_open(path, &r, &d);
	if (rc)
		fail_msg("trace_open(%s): %d %s", path, rc, d.msg);
	*h = *trace_header(r);
	for (size_t b = 1; b < h->n_blocks; b++)
		base[b] = base[b - 1] + h->blocks[b - 1].size_bytes / h->page_size;
	while ((rc = trace_next_epoch(r, &t)) == 1) {
		assert_true(e < 16);
		while ((rc = trace_next_range(r, &tr)) == 1) {
			assert_true(tr.block < h->n_blocks);
			assert_true(tr.first_page + tr.n_pages <= h->blocks[tr.block].size_bytes / h->page_size);
			for (uint64_t p = 0; p < tr.n_pages; p++)
				flat[e][base[tr.block] + tr.first_page + p] = 1;
		}
		assert_int_equal(rc, 0);
		e++;
	}
	assert_int_equal(rc, 0);
	trace_close(r);
	return e;
}

/* --blocks: the blocks in the header, in order; the pages are the one-block guest's of the
 * same size and seed, split at the blocks' edges (a block of 3 pages, one not 1M aligned). */
static void test_blocks(void **st)
{
	static unsigned char one[16][MAX_PAGES], many[16][MAX_PAGES];
	struct tgen_opts o = small_opts(TGEN_RANDOM), m;
	struct trace_header h1, hm;
	struct diag d;
	char buf[256];

	(void)st;
	o.rate_pages_per_s = 200000;   /* dense: the bitmap path */
	m = o;
	assert_int_equal(tgen_blocks_parse(&m, "pc.ram=400K,pc.bios=12K,0000:00:02.0/vga.vram=612K", &d), 0);
	assert_int_equal(m.n_blocks, 3);
	assert_int_equal(tgen_blocks_total(&m), o.guest_bytes);
	assert_true(tgen_blocks_format(&m, buf, sizeof buf));
	assert_string_equal(buf, "pc.ram=400K,pc.bios=12K,0000:00:02.0/vga.vram=612K");
	gen_ok(&o, tmp_path("one.trace"));
	gen_ok(&m, tmp_path("many.trace"));
	size_t n1 = read_flat(tmp_path("one.trace"), one, &h1), nm = read_flat(tmp_path("many.trace"), many, &hm);
	assert_int_equal(n1, nm);
	assert_int_equal(h1.n_blocks, 1);
	assert_string_equal(h1.blocks[0].name, "pc.ram");
	assert_int_equal(hm.n_blocks, 3);
	assert_string_equal(hm.blocks[1].name, "pc.bios");
	assert_int_equal(hm.blocks[1].size_bytes, 12 << 10);
	assert_memory_equal(one, many, sizeof one);
	uint64_t in_bios = 0;
	for (size_t e = 0; e < nm; e++)
		for (uint64_t p = 100; p < 103; p++)
			in_bios += many[e][p];
	assert_true(in_bios > 0);   /* the 3-page block got writes */
	/* the same guest as one "pc.ram" block through --blocks: the same trace but the comment */
	m = o;
	assert_int_equal(tgen_blocks_parse(&m, "pc.ram=1M", &d), 0);
	gen_ok(&m, tmp_path("pc.trace"));
	size_t la, lb;
	char *a = slurp(tmp_path("one.trace"), &la), *b = slurp(tmp_path("pc.trace"), &lb);
	char *ea = strstr(a, "\npage-size"), *eb = strstr(b, "\npage-size");
	assert_non_null(ea);
	assert_non_null(eb);
	assert_int_equal(la - (size_t)(ea - a), lb - (size_t)(eb - b));
	assert_memory_equal(ea, eb, la - (size_t)(ea - a));
	assert_non_null(strstr(b, " --blocks pc.ram=1M\n"));
	assert_null(strstr(a, "--blocks"));
	free(a);
	free(b);
}

/* Bad --blocks lists and blocks that do not fit the guest: -EINVAL naming the problem. */
static void test_blocks_rejects(void **st)
{
	static const struct { const char *list, *want; } bad[] = {
		{ "pc.ram", "has no '=SIZE'" }, { "pc.ram=", "is not a SIZE" }, { "=4M", "1 to 63 characters" },
		{ "a=1M,a=1M", "named twice" }, { "a@b=1M", "bad block name" }, { "epoch=1M", "bad block name" },
		{ "a=0", "is not a SIZE of more than 0" }, { "a=1M,", "an empty item" }, { "a=1X", "is not a SIZE" },
		{ "b0=4K,b1=4K,b2=4K,b3=4K,b4=4K,b5=4K,b6=4K,b7=4K,b8=4K,b9=4K,b10=4K,b11=4K,b12=4K,b13=4K,"
		  "b14=4K,b15=4K,b16=4K", "more than 16 blocks" },
	};
	struct tgen_opts o = small_opts(TGEN_IDLE);
	struct diag d;

	(void)st;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		diag_clear(&d);
		assert_int_equal(tgen_blocks_parse(&o, bad[i].list, &d), -EINVAL);
		assert_int_equal(o.n_blocks, 0);
		if (!strstr(d.msg, bad[i].want))
			fail_msg("'%s': %s (want %s)", bad[i].list, d.msg, bad[i].want);
	}
	assert_int_equal(tgen_blocks_parse(&o, "a=512K,b=516K", &d), 0);
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);   /* 1028K is not the 1M guest */
	assert_non_null(strstr(d.msg, "blocks' total 1028K is not the guest size 1M"));
	o.guest_bytes = 1028 << 10;
	assert_int_equal(tgen_validate(&o, &d), 0);
	o.page_size = 8192;   /* 516K is not a multiple of 8K */
	assert_int_equal(tgen_validate(&o, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "block 'b' of 516K is not a positive multiple of the page size 8K"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern_names),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_validate_rejects),
		cmocka_unit_test(test_validate_accepts_defaults),
		cmocka_unit_test(test_same_options_same_bytes),
		cmocka_unit_test(test_seed_changes_random_patterns),
		cmocka_unit_test(test_rand_set_exact_pages),
		cmocka_unit_test(test_rand_set_churn_and_first_touch),
		cmocka_unit_test(test_rand_set_jitter),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_layout_exp),
		cmocka_unit_test(test_validate_new_keys),
		cmocka_unit_test(test_random_pages),
		cmocka_unit_test(test_random_sparse_repeats),
		cmocka_unit_test(test_hotcold_pages),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_stats_match_file),
		cmocka_unit_test(test_gen_comment_and_zst),
		cmocka_unit_test(test_unwritable_path),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_blocks_rejects),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
