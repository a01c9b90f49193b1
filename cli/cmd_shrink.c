/* SPDX-License-Identifier: MIT */
/* cmd_shrink - `migbed shrink BUNDLE [-o OUT] [--max-runs N] [--max-time S] [--json]`: delta
 * debugging of a reproducer bundle (cli/bundle.h). The candidate is the bundle's scenario as
 * `key = value` lines plus its trace in memory (a generated trace materialised); it is
 * interesting when a run of it (in-process, run_migrate on the model) misses its expectation
 * with the bundle's recorded verdict, cause and side. The reductions, in this fixed order and
 * repeated while one takes something, each step kept only when still interesting (run/shrink.h):
 *   rules   ddmin over the fault lines; each rule's #N, then its >T, lowered
 *   trace   the epochs cut to the shortest prefix, the duration lowered, ddmin over the
 *           epochs, ddmin over the ranges, each range's pages lowered
 *   guest   ddmin over the RAM blocks (the ranges renumbered), each block's ranges slid to
 *           its start, each block's size lowered
 *   config  each key back to its default (its line dropped), the chunk sizes halved
 * Bounded by --max-runs and --max-time; the best candidate so far is written as a new bundle
 * (its trace a file beside the scenario) with shrink.txt, the before/after table.
 * Exit 0 written, 1 the bundle does not reproduce, 2 bad usage or input (nothing written). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/bundle.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/run_report.h"
#include "run/run.h"
#include "run/shrink.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "sim/trace.h"
#include "sim/tracegen.h"

#define SHRINK_MAX_KV 128
#define SHRINK_MAX_RANGE_STEPS 64     /* ranges whose pages are lowered one by one, at most */
#define SHRINK_DEFAULT_RUNS 500u
#define SHRINK_DEFAULT_SECONDS 60u
#define SHRINK_MAX_PASSES 8

struct kv {
	char key[64];
	char val[FAULT_SPEC_MAX + 64];
};

/* A trace in memory: epoch e holds ranges [first[e], first[e + 1]). */
struct trc {
	struct trace_header h;
	size_t n_ep, n_r;
	uint64_t *t_ns;
	size_t *first;                 /* n_ep + 1 entries */
	struct trace_range *r;
	struct trace_range *lay;       /* version 2: the initial layout, carried as it is */
	size_t n_lay;
};

struct cand {
	struct kv kv[SHRINK_MAX_KV];
	size_t n_kv;
	struct trc t;
};

/* What one run of a candidate showed (the table's columns). */
struct shape {
	uint64_t guest_bytes, blocks, epochs, pages, rules, virtual_ns, log_lines;
	double wall_ms;
};

struct sh {
	const char *bundle;
	char scratch[PATH_MAX], trace_path[PATH_MAX + 16], events_path[PATH_MAX + 16];
	char want_verdict[16], want_cause[64], want_side[8];
	bool want_fail;
	int want_cause_i, want_side_i;    /* cause_lookup, run_side_lookup of the above */
	struct cand best;
	struct runcfg *c;
	struct run_result *res;
	struct shrink_budget b;
	uint64_t deadline_ms;
	struct progress progress;       /* the status line (cli/progress.h) */
	const char *axis;
	size_t op_i;                   /* the element an op works on */
	uint64_t op_lo;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed shrink BUNDLE [-o OUT] [--max-runs N] [--max-time SECONDS] [--json] [--quiet]\n\n"
		   "Reduce a reproducer bundle (run --bundle DIR) by delta debugging while its run still\n"
		   "fails with the same verdict, cause and side: the fault rules (dropped, #N lowered, >T\n"
		   "earlier), the trace (epochs, duration, ranges, pages), the guest (RAM blocks, their\n"
		   "sizes) and the configuration (keys back to their defaults, chunk sizes down). Each\n"
		   "candidate runs in this process on the model backend. Writes the smallest bundle found\n"
		   "(its trace a file in it) with shrink.txt, a before/after table; `migbed replay OUT`\n"
		   "replays it byte for byte. The same bundle and options give the same OUT.\n\n"
		   "  -o OUT            the new bundle (default BUNDLE.shrunk); never written over\n"
		   "  --max-runs N      candidate runs at most (default %u)\n"
		   "  --max-time S      wall-clock seconds at most (default %u); when a bound stops it,\n"
		   "                    the best bundle so far is written and the output says so\n"
		   "  --json            the before/after table as JSON on stdout\n"
		   "  --quiet           no progress line on a terminal (none with --json either)\n"
		   "  -h, --help        this text\n\n"
		   "exit status: 0 written (smaller, or not further reducible), 1 the bundle does not\n"
		   "reproduce to begin with, 2 bad usage or input (missing or garbled bundle).\n",
		SHRINK_DEFAULT_RUNS, SHRINK_DEFAULT_SECONDS);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static double now_ms_f(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the trace in memory --------------------------------------------------------------------- */

static void trc_free(struct trc *t)
{
	free(t->t_ns);
	free(t->first);
	free(t->r);
	free(t->lay);
	memset(t, 0, sizeof *t);
}

/* Room for n_ep epochs and n_r ranges (contents undefined). 0 or -ENOMEM. */
static int trc_alloc(struct trc *t, size_t n_ep, size_t n_r)
{
	t->t_ns = malloc((n_ep + 1) * sizeof *t->t_ns);
	t->first = malloc((n_ep + 1) * sizeof *t->first);
	t->r = malloc((n_r + 1) * sizeof *t->r);
	if (!t->t_ns || !t->first || !t->r) {
		trc_free(t);
		return -ENOMEM;
	}
	t->n_ep = n_ep;
	t->n_r = n_r;
	return 0;
}

static int trc_copy(struct trc *dst, const struct trc *src)
{
	memset(dst, 0, sizeof *dst);
	if (trc_alloc(dst, src->n_ep, src->n_r))
		return -ENOMEM;
	dst->h = src->h;
	memcpy(dst->t_ns, src->t_ns, src->n_ep * sizeof *src->t_ns);
	memcpy(dst->first, src->first, (src->n_ep + 1) * sizeof *src->first);
	memcpy(dst->r, src->r, src->n_r * sizeof *src->r);
	if (src->n_lay) {
		dst->lay = malloc(src->n_lay * sizeof *dst->lay);
		if (!dst->lay) {
			trc_free(dst);
			return -ENOMEM;
		}
		memcpy(dst->lay, src->lay, src->n_lay * sizeof *dst->lay);
		dst->n_lay = src->n_lay;
	}
	return 0;
}

/* Append one element to a growing array. 0 or -ENOMEM. */
static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 1024;
	void *q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static int trc_read_body(trace_reader *rd, struct trc *t, struct diag *d)
{
	size_t cap_t = 0, cap_f = 0, cap_r = 0, cap_l = 0;
	uint64_t tn;
	int rc;
	struct trace_range lr;
	while ((rc = trace_next_layout(rd, &lr)) == 1) {   /* before the epochs (none in version 1) */
		if (grow((void **)&t->lay, &cap_l, t->n_lay, sizeof *t->lay))
			return diag_set(d, "out of memory"), -ENOMEM;
		t->lay[t->n_lay++] = lr;
	}
	while (rc == 0 && (rc = trace_next_epoch(rd, &tn)) == 1) {
		if (grow((void **)&t->t_ns, &cap_t, t->n_ep + 1, sizeof *t->t_ns) ||
		    grow((void **)&t->first, &cap_f, t->n_ep + 1, sizeof *t->first))
			return diag_set(d, "out of memory"), -ENOMEM;
		t->t_ns[t->n_ep] = tn;
		t->first[t->n_ep++] = t->n_r;
		struct trace_range r;
		while ((rc = trace_next_range(rd, &r)) == 1) {
			if (grow((void **)&t->r, &cap_r, t->n_r, sizeof *t->r))
				return diag_set(d, "out of memory"), -ENOMEM;
			t->r[t->n_r++] = r;
		}
		if (rc < 0)
			break;
	}
	if (rc < 0)
		return diag_set(d, "%s", trace_diag(rd)), -EINVAL;
	return 0;
}

/* The whole trace at path into t. 0, or -EINVAL with d = "FILE:LINE: problem". */
static int trc_load(struct trc *t, const char *path, struct diag *d)
{
	trace_reader *rd = NULL;
	memset(t, 0, sizeof *t);
	int rc = trace_open(path, &rd, d);
	if (rc)
		return -EINVAL;
	t->h = *trace_header(rd);
	rc = trc_read_body(rd, t, d);
	trace_close(rd);
	if (rc == 0) {
		size_t *f = realloc(t->first, (t->n_ep + 1) * sizeof *f);
		if (!f)
			rc = -ENOMEM, diag_set(d, "out of memory");
		else
			t->first = f, f[t->n_ep] = t->n_r;
	}
	if (rc)
		trc_free(t);
	return rc;
}

static int trc_write(const struct trc *t, const char *path, struct diag *d)
{
	trace_writer *w = NULL;
	int rc = trace_writer_open(path, &t->h, &w, d);
	if (rc)
		return rc;
	for (size_t i = 0; rc == 0 && i < t->n_lay; i++)
		rc = trace_writer_layout(w, &t->lay[i]);
	for (size_t e = 0; rc == 0 && e < t->n_ep; e++) {
		rc = trace_writer_epoch(w, t->t_ns[e]);
		for (size_t i = t->first[e]; rc == 0 && i < t->first[e + 1]; i++)
			rc = trace_writer_range(w, &t->r[i]);
	}
	if (rc) {
		diag_set(d, "%s: %s", path, trace_writer_diag(w));
		trace_writer_abort(w);
		return rc;
	}
	rc = trace_writer_close(w);
	if (rc)
		diag_set(d, "%s: cannot write: %s", path, strerror(-rc));
	return rc;
}

/* Keep the epochs ep_keep (NULL: all) and of them the ranges r_keep (NULL: all). */
static void trc_filter(struct trc *t, const bool *ep_keep, const bool *r_keep)
{
	size_t ne = 0, nr = 0;
	for (size_t e = 0; e < t->n_ep; e++) {
		if (ep_keep && !ep_keep[e])
			continue;
		size_t from = t->first[e], to = t->first[e + 1];
		t->t_ns[ne] = t->t_ns[e];
		t->first[ne++] = nr;
		for (size_t i = from; i < to; i++)
			if (!r_keep || r_keep[i])
				t->r[nr++] = t->r[i];
	}
	t->first[ne] = nr;
	t->n_ep = ne;
	t->n_r = nr;
}

/* Keep the blocks b_keep: the others' ranges dropped, the kept ones renumbered. */
static void trc_keep_blocks(struct trc *t, const bool *b_keep)
{
	uint32_t map[TRACE_MAX_BLOCKS];
	size_t nb = 0;
	bool *r_keep = malloc((t->n_r + 1) * sizeof *r_keep);
	if (!r_keep)
		return;   /* out of memory: left as it was (never half renumbered) */
	for (size_t i = 0; i < t->h.n_blocks; i++) {
		map[i] = (uint32_t)nb;
		if (b_keep[i])
			t->h.blocks[nb++] = t->h.blocks[i];
	}
	for (size_t i = 0; i < t->n_r; i++) {
		r_keep[i] = b_keep[t->r[i].block];
		t->r[i].block = map[t->r[i].block];
	}
	t->h.n_blocks = nb;
	trc_filter(t, NULL, r_keep);
	free(r_keep);
}

/* The pages of block b the trace touches: [*lo, *hi) (0, 0 when none). */
static void trc_block_span(const struct trc *t, size_t b, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < t->n_r; i++) {
		if (t->r[i].block != b)
			continue;
		if (t->r[i].first_page < *lo)
			*lo = t->r[i].first_page;
		if (t->r[i].first_page + t->r[i].n_pages > *hi)
			*hi = t->r[i].first_page + t->r[i].n_pages;
	}
	if (*hi == 0)
		*lo = 0;
}

static uint64_t trc_pages(const struct trc *t)
{
	uint64_t n = 0;
	for (size_t i = 0; i < t->n_r; i++)
		n += t->r[i].n_pages;
	return n;
}

static uint64_t trc_guest_bytes(const struct trc *t)
{
	uint64_t n = 0;
	for (size_t i = 0; i < t->h.n_blocks; i++)
		n += t->h.blocks[i].size_bytes;
	return n;
}

/* ---- candidates ------------------------------------------------------------------------------ */

static void cand_free(struct cand *c)
{
	trc_free(&c->t);
}

static int cand_copy(struct cand *dst, const struct cand *src)
{
	memcpy(dst->kv, src->kv, src->n_kv * sizeof *src->kv);
	dst->n_kv = src->n_kv;
	return trc_copy(&dst->t, &src->t);
}

static size_t cand_rules(const struct cand *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_kv; i++)
		n += !strcmp(c->kv[i].key, "fault");
	return n;
}

/* The kv index of fault rule k. */
static size_t rule_kv(const struct cand *c, size_t k)
{
	for (size_t i = 0; i < c->n_kv; i++)
		if (!strcmp(c->kv[i].key, "fault") && k-- == 0)
			return i;
	return c->n_kv;
}

/* The config of cand's lines with its trace at trace_path. 0 or -EINVAL with d set. */
static int cand_config(const struct cand *cd, const char *trace_path, struct runcfg *c, struct diag *d)
{
	runcfg_defaults(c);
	for (size_t i = 0; i < cd->n_kv; i++)
		if (runcfg_set(c, cd->kv[i].key, cd->kv[i].val, cd->kv[i].key, d))
			return -EINVAL;
	if (runcfg_set(c, "trace", trace_path, "trace", d) || runcfg_set(c, "quiet", "true", "quiet", d))
		return -EINVAL;
	return runcfg_finish(c, d) ? -EINVAL : 0;
}

/* ---- running one ----------------------------------------------------------------------------- */

static bool out_of_time(void *arg)
{
	const struct sh *s = arg;
	return now_ms() >= s->deadline_ms;
}

static void progress(struct sh *s)
{
	struct progress *p = &s->progress;
	if (!progress_due(p))
		return;
	progress_show(p, "shrink: run %" PRIu64 "/%" PRIu64 " (%s): %zu rules, %zu epochs, %zu ranges, %zu blocks",
		s->b.runs, s->b.max_runs, s->axis, cand_rules(&s->best), s->best.t.n_ep, s->best.t.n_r,
		s->best.t.h.n_blocks);
}

/* Run cd (its event log to events, when given). 0 ran (s->res), -EINVAL refused (d set). */
static int run_cand(struct sh *s, const struct cand *cd, const char *events, struct diag *d)
{
	int rc = trc_write(&cd->t, s->trace_path, d);
	if (rc == 0)
		rc = cand_config(cd, s->trace_path, s->c, d);
	if (rc)
		return -EINVAL;
	if (events)
		snprintf(s->c->events_path, sizeof s->c->events_path, "%s", events);
	memset(s->res, 0, sizeof *s->res);
	return run_migrate(s->c, s->res, d) ? -EINVAL : 0;
}

static bool same_failure(const struct sh *s)
{
	const struct run_outcome *o = &s->res->out;
	return !o->pass && s->want_fail && o->cause == s->want_cause_i && o->side == s->want_side_i;
}

/* The predicate: 1 when cd fails the same way, 0 when not (or refused). */
static int interesting(struct sh *s, const struct cand *cd)
{
	struct diag d = { 0 };
	progress(s);
	return run_cand(s, cd, NULL, &d) == 0 && same_failure(s);
}

/* ---- the reductions: each an op on a copy of best, tried, then kept ---------------------------- */

typedef void (*set_op)(struct sh *s, struct cand *c, const bool *keep, size_t n);
typedef void (*value_op)(struct sh *s, struct cand *c, uint64_t v);

struct try_arg {
	struct sh *s;
	set_op sop;
	value_op vop;
};

static int try_set(void *arg, const bool *keep, size_t n)
{
	struct try_arg *a = arg;
	struct cand *c = malloc(sizeof *c);
	if (!c || cand_copy(c, &a->s->best)) {
		free(c);
		return -ENOMEM;
	}
	a->sop(a->s, c, keep, n);
	int rc = interesting(a->s, c);
	cand_free(c);
	free(c);
	return rc;
}

static int try_value(void *arg, uint64_t v)
{
	struct try_arg *a = arg;
	struct cand *c = malloc(sizeof *c);
	if (!c || cand_copy(c, &a->s->best)) {
		free(c);
		return -ENOMEM;
	}
	a->vop(a->s, c, v);
	int rc = interesting(a->s, c);
	cand_free(c);
	free(c);
	return rc;
}

/* ddmin over n elements with op; best takes the result. *changed when it got smaller. */
static int reduce_set(struct sh *s, size_t n, set_op op, bool *changed)
{
	struct try_arg a = { .s = s, .sop = op };
	if (n == 0)
		return 0;
	bool *keep = malloc(n * sizeof *keep);
	if (!keep)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		keep[i] = true;
	int rc = shrink_ddmin(keep, n, try_set, &a, &s->b);
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		kept += keep[i];
	if (rc == 0 && kept < n) {
		op(s, &s->best, keep, n);
		*changed = true;
	}
	free(keep);
	return rc;
}

/* The smallest interesting value in [lo, cur] with op; best takes it. */
static int reduce_value(struct sh *s, uint64_t lo, uint64_t cur, value_op op, bool *changed)
{
	struct try_arg a = { .s = s, .vop = op };
	uint64_t v = cur;
	int rc = shrink_lower(lo, &v, try_value, &a, &s->b);
	if (rc == 0 && v < cur) {
		op(s, &s->best, v);
		*changed = true;
	}
	return rc;
}

/* rules */
static void op_rules(struct sh *s, struct cand *c, const bool *keep, size_t n)
{
	(void)s;
	size_t m = 0, k = 0;
	for (size_t i = 0; i < c->n_kv; i++) {
		bool rule = !strcmp(c->kv[i].key, "fault");
		if (rule && k++ < n && !keep[k - 1])
			continue;
		c->kv[m++] = c->kv[i];
	}
	c->n_kv = m;
}

/* Rule s->op_i with its #N (op_lo 0) or >T in ms (op_lo 1) set to v. */
static void op_rule_field(struct sh *s, struct cand *c, uint64_t v)
{
	struct kv *kv = &c->kv[rule_kv(c, s->op_i)];
	struct fault_rule r;
	if (fault_rule_parse(kv->val, &r, NULL))
		return;
	if (s->op_lo == 0)
		r.first = v;
	else
		r.after_ns = v * 1000000u;
	fault_rule_format(&r, kv->val, sizeof kv->val);
}

static int reduce_rules(struct sh *s, bool *changed)
{
	s->axis = "rules";
	int rc = reduce_set(s, cand_rules(&s->best), op_rules, changed);
	for (size_t k = 0; rc == 0 && k < cand_rules(&s->best); k++) {
		struct fault_rule r;
		if (fault_rule_parse(s->best.kv[rule_kv(&s->best, k)].val, &r, NULL))
			continue;
		s->op_i = k;
		s->op_lo = 0;
		rc = reduce_value(s, 1, r.first, op_rule_field, changed);
		s->op_lo = 1;
		if (rc == 0 && r.after_ns)
			rc = reduce_value(s, 0, (r.after_ns + 999999u) / 1000000u, op_rule_field, changed);
	}
	return rc;
}

/* trace */
static void op_prefix(struct sh *s, struct cand *c, uint64_t v)
{
	(void)s;
	c->t.n_ep = (size_t)v;
	c->t.n_r = c->t.first[v];
}

static void op_duration(struct sh *s, struct cand *c, uint64_t v)
{
	(void)s;
	c->t.h.duration_ns = v * 1000000u;
}

static void op_epochs(struct sh *s, struct cand *c, const bool *keep, size_t n)
{
	(void)s;
	(void)n;
	trc_filter(&c->t, keep, NULL);
}

static void op_ranges(struct sh *s, struct cand *c, const bool *keep, size_t n)
{
	(void)s;
	(void)n;
	trc_filter(&c->t, NULL, keep);
}

static void op_range_pages(struct sh *s, struct cand *c, uint64_t v)
{
	c->t.r[s->op_i].n_pages = v;
}

static int reduce_trace(struct sh *s, bool *changed)
{
	struct trc *t = &s->best.t;
	s->axis = "trace";
	int rc = reduce_value(s, 1, t->n_ep, op_prefix, changed);
	uint64_t last_ms = t->n_ep ? t->t_ns[t->n_ep - 1] / 1000000u + 1 : 1;
	if (rc == 0 && t->h.duration_ns % 1000000u == 0)
		rc = reduce_value(s, last_ms, t->h.duration_ns / 1000000u, op_duration, changed);
	if (rc == 0)
		rc = reduce_set(s, t->n_ep, op_epochs, changed);
	if (rc == 0)
		rc = reduce_set(s, t->n_r, op_ranges, changed);
	for (size_t i = 0; rc == 0 && t->n_r <= SHRINK_MAX_RANGE_STEPS && i < t->n_r; i++) {
		s->op_i = i;
		rc = reduce_value(s, 1, t->r[i].n_pages, op_range_pages, changed);
	}
	return rc;
}

/* guest */
static void op_blocks(struct sh *s, struct cand *c, const bool *keep, size_t n)
{
	(void)s;
	(void)n;
	trc_keep_blocks(&c->t, keep);
}

static void op_slide(struct sh *s, struct cand *c, uint64_t v)
{
	for (size_t i = 0; i < c->t.n_r; i++)
		if (c->t.r[i].block == s->op_i)
			c->t.r[i].first_page -= v;
}

static void op_block_size(struct sh *s, struct cand *c, uint64_t v)
{
	c->t.h.blocks[s->op_i].size_bytes = v * c->t.h.page_size;
}

/* Slide block b's ranges down to its page 0 (one try). */
static int slide_block(struct sh *s, size_t b, bool *changed)
{
	uint64_t lo, hi;
	trc_block_span(&s->best.t, b, &lo, &hi);
	if (lo == 0)
		return 0;
	struct try_arg a = { .s = s, .vop = op_slide };
	int rc = shrink_try_value(&s->b, try_value, &a, lo);
	if (rc == 1) {
		op_slide(s, &s->best, lo);
		*changed = true;
	}
	return rc < 0 ? rc : 0;
}

static int reduce_guest(struct sh *s, bool *changed)
{
	struct trc *t = &s->best.t;
	s->axis = "guest";
	if (t->n_lay)   /* the initial layout names pages of these blocks: they stay as they are */
		return 0;
	int rc = t->h.n_blocks > 1 ? reduce_set(s, t->h.n_blocks, op_blocks, changed) : 0;
	for (size_t b = 0; rc == 0 && b < t->h.n_blocks; b++) {
		uint64_t lo, hi;
		s->op_i = b;
		rc = slide_block(s, b, changed);
		trc_block_span(t, b, &lo, &hi);
		if (rc == 0)
			rc = reduce_value(s, hi ? hi : 1, t->h.blocks[b].size_bytes / t->h.page_size, op_block_size, changed);
	}
	return rc;
}

/* config */
static bool protected_key(const char *k)
{
	static const char *const keys[] = { "fault", "expect", "expect-fired", "backend", "description", "seed" };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (!strcmp(k, keys[i]))
			return true;
	return false;
}

/* The scenario text of cd into buf (for telling whether two candidates are the same config). */
static char *scenario_text(const struct sh *s, const struct cand *cd, struct runcfg *c)
{
	struct diag d = { 0 };
	char *buf = NULL;
	size_t len = 0;
	if (cand_config(cd, s->trace_path, c, &d))
		return NULL;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	runcfg_write_scenario(f, c);
	fclose(f);
	return buf;
}

/* Does dropping line i change the config? (a line at its default does not: no run) */
static bool line_matters(struct sh *s, size_t i, struct runcfg *tmp)
{
	struct cand *c = malloc(sizeof *c);
	bool differ = true;
	if (!c)
		return true;
	memcpy(c->kv, s->best.kv, s->best.n_kv * sizeof *c->kv);
	c->n_kv = s->best.n_kv;
	memset(&c->t, 0, sizeof c->t);
	char *a = scenario_text(s, c, tmp);
	memmove(&c->kv[i], &c->kv[i + 1], (c->n_kv - i - 1) * sizeof *c->kv);
	c->n_kv--;
	char *b = scenario_text(s, c, tmp);
	differ = !a || !b || strcmp(a, b);
	free(a);
	free(b);
	free(c);
	return differ;
}

static void op_drop_line(struct sh *s, struct cand *c, uint64_t v)
{
	(void)v;
	memmove(&c->kv[s->op_i], &c->kv[s->op_i + 1], (c->n_kv - s->op_i - 1) * sizeof *c->kv);
	c->n_kv--;
}

static void op_chunk(struct sh *s, struct cand *c, uint64_t v)
{
	snprintf(c->kv[s->op_i].val, sizeof c->kv[s->op_i].val, "%" PRIu64, UINT64_C(1) << v);
}

static int chunk_down(struct sh *s, size_t i, bool *changed)
{
	char *end = NULL;
	uint64_t v = strtoull(s->best.kv[i].val, &end, 10), e = 0;
	if (!end || strcmp(end, "") || v == 0 || (v & (v - 1)))
		return 0;   /* written as "1M" and the like: see below */
	while ((UINT64_C(1) << e) < v)
		e++;
	s->op_i = i;
	return reduce_value(s, 12, e, op_chunk, changed);
}

/* Chunk sizes as bytes ("1M" -> "1048576") so chunk_down can halve them. */
static void chunk_bytes_text(struct sh *s, size_t i)
{
	struct runcfg *c = s->c;
	struct diag d = { 0 };
	runcfg_defaults(c);
	if (runcfg_set(c, s->best.kv[i].key, s->best.kv[i].val, "x", &d) == 0)
		snprintf(s->best.kv[i].val, sizeof s->best.kv[i].val, "%" PRIu64,
			 strcmp(s->best.kv[i].key, "chunk-size") ? c->dst_chunk_bytes : c->chunk_bytes);
}

static void op_wait(struct sh *s, struct cand *c, uint64_t v)
{
	snprintf(c->kv[s->op_i].val, sizeof c->kv[s->op_i].val, "%" PRIu64, v);
}

/* The wait bound down (wait-timeout-ms): a failure that ends in a wait ends sooner, which is
 * most of a small reproducer's virtual time. The line is added at its default to be lowered,
 * and taken out again when no lower value keeps the failure. */
static int lower_wait(struct sh *s, bool *changed)
{
	size_t i = 0;
	while (i < s->best.n_kv && strcmp(s->best.kv[i].key, "wait-timeout-ms"))
		i++;
	bool added = i == s->best.n_kv;
	if (added) {
		if (s->best.n_kv == SHRINK_MAX_KV)
			return 0;
		runcfg_defaults(s->c);
		snprintf(s->best.kv[i].key, sizeof s->best.kv[i].key, "wait-timeout-ms");
		snprintf(s->best.kv[i].val, sizeof s->best.kv[i].val, "%" PRIu64, (uint64_t)s->c->wait_timeout_ms);
		s->best.n_kv++;
	}
	char *end = NULL;
	uint64_t cur = strtoull(s->best.kv[i].val, &end, 10);
	bool lowered = false;
	int rc = 0;
	if (end && !*end && cur > 1) {
		s->op_i = i;
		rc = reduce_value(s, 1, cur, op_wait, &lowered);
	}
	if (lowered)
		*changed = true;
	else if (added)
		s->best.n_kv--;
	return rc;
}

static int reduce_config(struct sh *s, bool *changed)
{
	struct runcfg *tmp = malloc(sizeof *tmp);
	int rc = 0;
	s->axis = "config";
	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; rc == 0 && i < s->best.n_kv; i++) {
		bool chunk = !strcmp(s->best.kv[i].key, "chunk-size") || !strcmp(s->best.kv[i].key, "dst-chunk-size");
		if (!strcmp(s->best.kv[i].key, "wait-timeout-ms"))
			continue;   /* lowered below, not put back to its default */
		if (protected_key(s->best.kv[i].key) || !line_matters(s, i, tmp)) {
			if (chunk) {
				chunk_bytes_text(s, i);
				rc = chunk_down(s, i, changed);
			}
			continue;
		}
		struct try_arg a = { .s = s, .vop = op_drop_line };
		s->op_i = i;
		rc = shrink_try_value(&s->b, try_value, &a, 0);
		if (rc == 1) {
			op_drop_line(s, &s->best, 0);
			*changed = true;
			i--;
			rc = 0;
		} else if (rc == 0 && chunk) {
			chunk_bytes_text(s, i);
			rc = chunk_down(s, i, changed);
		}
	}
	free(tmp);
	return rc ? rc : lower_wait(s, changed);
}

static int reduce(struct sh *s)
{
	int rc = 0;
	bool changed = true;
	for (int pass = 0; rc == 0 && changed && pass < SHRINK_MAX_PASSES && !s->b.stopped; pass++) {
		changed = false;
		rc = reduce_rules(s, &changed);
		if (rc == 0)
			rc = reduce_trace(s, &changed);
		if (rc == 0)
			rc = reduce_guest(s, &changed);
		if (rc == 0)
			rc = reduce_config(s, &changed);
	}
	progress_end(&s->progress);
	return rc;
}

/* ---- reading the bundle ---------------------------------------------------------------------- */

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* The generator keys (a materialised trace replaces them), and trace itself. */
static bool trace_key(const char *k)
{
	if (!strcmp(k, "trace"))
		return true;
	for (size_t i = 0; i < runcfg_n_keys(); i++)
		if (!strcmp(runcfg_key_name(i), k))
			return (runcfg_key_cmds(i) & OPTS_TRACE_GEN) && strcmp(k, "seed");
	return false;
}

/* scenario.scn's lines (checked by runcfg_load_scenario before) into cd's kv. */
static int read_lines(const char *path, struct cand *cd, struct diag *d)
{
	char line[2048];
	unsigned long lineno = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return diag_set(d, "%s: %s", path, strerror(errno)), -EINVAL;
	cd->n_kv = 0;
	while (fgets(line, sizeof line, f)) {
		lineno++;
		char *t = trim(line), *eq = strchr(t, '=');
		if (!*t || *t == '#' || !eq)
			continue;
		*eq = '\0';
		char *k = trim(t), *v = trim(eq + 1);
		if (trace_key(k))
			continue;
		char abs[sizeof cd->kv[0].val];
		const char *slash = strrchr(path, '/');
		if (!strcmp(k, "dst-layout") && v[0] != '/' && slash) {   /* relative to the bundle, as the loader reads it */
			int n = snprintf(abs, sizeof abs, "%.*s/%s", (int)(slash - path), path, v);
			if (n < 0 || (size_t)n >= sizeof abs) {
				fclose(f);
				return diag_set(d, "%s:%lu: dst-layout path too long for shrink", path, lineno), -EINVAL;
			}
			v = abs;
		}
		if (cd->n_kv == SHRINK_MAX_KV || strlen(k) >= sizeof cd->kv[0].key || strlen(v) >= sizeof cd->kv[0].val) {
			fclose(f);
			return diag_set(d, "%s:%lu: too many or too long lines for shrink", path, lineno), -EINVAL;
		}
		snprintf(cd->kv[cd->n_kv].key, sizeof cd->kv[0].key, "%s", k);
		snprintf(cd->kv[cd->n_kv++].val, sizeof cd->kv[0].val, "%s", v);
	}
	fclose(f);
	return 0;
}

/* result.json's string `key` into buf. 0 or -1. */
static int json_field(const json_t *res, const char *key, char *buf, size_t n)
{
	const char *v = json_in_str(res, key);
	if (!v || !*v || strlen(v) >= n)
		return -1;
	snprintf(buf, n, "%s", v);
	return 0;
}

/* The recorded verdict, cause and side (result.json, read as JSON). 0 or -EINVAL with d set. */
static int read_outcome(struct sh *s, struct diag *d)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/result.json", s->bundle);
	if (access(p, F_OK))
		return diag_set(d, "%s: %s (a bundle of a process that crashed or hung cannot be shrunk)", p,
				strerror(errno)), -EINVAL;
	json_t *res = json_in_file(p, d);
	if (!res)
		return -EINVAL;
	int bad = json_field(res, "verdict", s->want_verdict, sizeof s->want_verdict) ||
		  json_field(res, "cause", s->want_cause, sizeof s->want_cause) ||
		  json_field(res, "side", s->want_side, sizeof s->want_side);
	json_decref(res);
	if (bad)
		return diag_set(d, "%s:1: no verdict, cause or side (garbled)", p), -EINVAL;
	s->want_fail = !strcmp(s->want_verdict, "fail");
	s->want_cause_i = cause_lookup(s->want_cause);
	if (s->want_cause_i < 0 || run_side_lookup(s->want_side, &s->want_side_i))
		return diag_set(d, "%s:1: unknown cause '%s' or side '%s'", p, s->want_cause, s->want_side), -EINVAL;
	return 0;
}

/* The bundle's scenario, trace (generated into scratch when none) and outcome into s. */
static int load_bundle(struct sh *s, struct diag *d)
{
	struct bundle_meta m;
	char scn[PATH_MAX + 16];
	if (bundle_read_meta(s->bundle, &m, d))
		return -EINVAL;
	if (m.cmd != OPTS_RUN || strcmp(m.backend, "model"))
		return diag_set(d, "%s: a %s bundle on %s: shrink reruns `migbed run` bundles of the model backend only",
				s->bundle, m.cmd == OPTS_RUN ? "run" : m.cmd == OPTS_SOURCE ? "source" : "dest", m.backend), -EINVAL;
	snprintf(scn, sizeof scn, "%s/scenario.scn", s->bundle);
	runcfg_defaults(s->c);
	if (runcfg_load_scenario(s->c, scn, d) || runcfg_finish(s->c, d) || read_outcome(s, d))
		return -EINVAL;
	if (s->c->backend != HCA_BACKEND_MODEL)
		return diag_set(d, "%s: backend is not model: shrink runs the model only", scn), -EINVAL;
	const char *trace = s->c->trace;
	if (!trace[0]) {
		if (tgen_write(&s->c->gen, s->trace_path, d) < 0)
			return -EINVAL;
		trace = s->trace_path;
	}
	if (trc_load(&s->best.t, trace, d))
		return -EINVAL;
	return read_lines(scn, &s->best, d);
}

/* ---- the result ------------------------------------------------------------------------------ */

static uint64_t count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	uint64_t n = 0;
	int ch;
	if (!f)
		return 0;
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Run cd with its event log to events and take its shape. 0, or -EINVAL (refused). */
static int measure(struct sh *s, const struct cand *cd, const char *events, struct shape *sp, struct diag *d)
{
	double t0 = now_ms_f();
	int rc = run_cand(s, cd, events, d);
	if (rc)
		return rc;
	*sp = (struct shape){
		.guest_bytes = trc_guest_bytes(&cd->t), .blocks = cd->t.h.n_blocks, .epochs = cd->t.n_ep,
		.pages = trc_pages(&cd->t), .rules = cand_rules(cd), .virtual_ns = s->res->virtual_ns,
		.log_lines = count_lines(events), .wall_ms = now_ms_f() - t0,
	};
	return 0;
}

struct row {
	const char *name;
	uint64_t before, after;
};

static size_t rows_of(const struct shape *a, const struct shape *b, struct row *r)
{
	size_t n = 0;
	r[n++] = (struct row){ "guest-bytes", a->guest_bytes, b->guest_bytes };
	r[n++] = (struct row){ "ram-blocks", a->blocks, b->blocks };
	r[n++] = (struct row){ "epochs", a->epochs, b->epochs };
	r[n++] = (struct row){ "pages-dirtied", a->pages, b->pages };
	r[n++] = (struct row){ "fault-rules", a->rules, b->rules };
	r[n++] = (struct row){ "virtual-ns", a->virtual_ns, b->virtual_ns };
	r[n++] = (struct row){ "event-log-lines", a->log_lines, b->log_lines };
	return n;
}

static void ratio(FILE *f, uint64_t a, uint64_t b)
{
	if (b == 0 && a == 0)
		fprintf(f, "-");
	else if (b == 0)
		fprintf(f, "all gone");
	else
		fprintf(f, "%.1fx", (double)a / (double)b);
}

/* The deterministic table (shrink.txt, and the human output). */
static void table_text(FILE *f, const struct shape *a, const struct shape *b)
{
	struct row r[8];
	size_t n = rows_of(a, b, r);
	fprintf(f, "%-16s %16s %16s  %s\n", "", "before", "after", "smaller by");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%-16s %16" PRIu64 " %16" PRIu64 "  ", r[i].name, r[i].before, r[i].after);
		ratio(f, r[i].before, r[i].after);
		fputc('\n', f);
	}
}

static const char *stop_reason(const struct sh *s, uint64_t max_runs)
{
	if (!s->b.stopped)
		return NULL;
	return s->b.runs >= max_runs ? "max-runs" : "max-time";
}

static int print_json(const struct sh *s, const char *out, const struct shape *a, const struct shape *b,
		       uint64_t max_runs)
{
	struct row r[8];
	size_t n = rows_of(a, b, r);
	const char *why = stop_reason(s, max_runs);
	json_t *doc = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "bundle", json_of_str(s->bundle), "output",
				json_of_str(out), "cause", json_of_str(s->want_cause), "side", json_of_str(s->want_side), "runs",
				json_of_u64(s->b.runs), "stopped-by", why ? json_of_str(why) : json_null());
	for (int side = 0; side < 2; side++) {
		json_t *o = json_object();
		for (size_t i = 0; i < n; i++)
			json_set(&o, r[i].name, json_of_u64(side ? r[i].after : r[i].before));
		json_set(&o, "replay-wall-ms", json_of_fixed(side ? b->wall_ms : a->wall_ms, 1));
		json_set(&doc, side ? "after" : "before", o);
	}
	return cli_print_json("shrink", doc);
}

/* The best candidate as a bundle at out (its trace in s->trace_path). 0 or -1 (printed). */
static int write_bundle(struct sh *s, const char *out, const struct shape *before, struct shape *after)
{
	struct bundle bd;
	struct bundle_meta m;
	struct diag d = { 0 };
	char ev[1200], got[256], *table = NULL;
	size_t len = 0;
	bool tar_ok = false;
	struct runcfg *w = malloc(sizeof *w);
	int rc = w ? bundle_begin(&bd, out, false, &d) : -ENOMEM;
	if (rc == 0) {
		bundle_file(&bd, "events.log", ev, sizeof ev);
		rc = measure(s, &s->best, ev, after, &d);
		if (rc == 0 && !same_failure(s))
			rc = -EIO, diag_set(&d, "internal: the shrunk candidate no longer fails the same way");
		if (rc == 0)
			rc = bundle_write_config(&bd, s->c, w, &d);
		if (rc == 0)
			rc = bundle_write_result(&bd, w, s->res, &d);
		FILE *f = rc == 0 ? open_memstream(&table, &len) : NULL;
		if (f) {
			fprintf(f, "# migbed shrink: before (the bundle, its trace materialised) and after\n");
			table_text(f, before, after);
			fclose(f);
			rc = bundle_write_text(&bd, "shrink.txt", table, &d);
		}
		bundle_meta_of(&m, OPTS_RUN, NULL, s->c);
		m.oc = (struct bundle_outcome){ .end = BUNDLE_EXIT, .code = CLI_EXIT_FAIL };
		snprintf(got, sizeof got, "verdict=fail status=%s cause=%s side=%s", s->res->out.completed ? "completed" : "failed",
			 s->want_cause, s->want_side);
		if (rc == 0)
			rc = bundle_commit(&bd, &m, w, NULL, got, &tar_ok, &d);
		else
			bundle_abort(&bd);
	}
	free(table);
	free(w);
	if (rc)
		cli_usage_error("shrink: %s", d.msg[0] ? d.msg : strerror(-rc));
	return rc ? -1 : 0;
}

static void print_human(const struct sh *s, const char *out, const struct shape *a, const struct shape *b,
			uint64_t max_runs)
{
	const char *why = stop_reason(s, max_runs);
	table_text(stdout, a, b);
	printf("%-16s %16.1f %16.1f  ", "replay-wall-ms", a->wall_ms, b->wall_ms);
	printf(b->wall_ms > 0 ? "%.1fx\n" : "-\n", b->wall_ms > 0 ? a->wall_ms / b->wall_ms : 0.0);
	if (why)
		printf("migbed: shrink: stopped by --%s after %" PRIu64 " runs: the best bundle so far is written\n", why,
		       s->b.runs);
	char word[2200];
	printf("migbed: shrink: %s written (%" PRIu64 " runs; still fails with cause=%s side=%s; replay: migbed replay %s)\n",
	       out, s->b.runs, s->want_cause, s->want_side, bundle_shell_word(out, word, sizeof word));
}

struct shrink_args {
	const char *bundle;
	char out[1024];
	uint64_t max_runs, max_s;
	bool json;
	bool quiet;                     /* no progress line */
};

static int parse_u64(const char *opt, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long x = v && v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
	if (!v || errno || !end || *end || x < lo || x > hi)
		return cli_usage_error("shrink: %s '%s': expected a whole number %" PRIu64 "..%" PRIu64, opt, v ? v : "",
				       lo, hi);
	*out = x;
	return 0;
}

/* -1 go on, or the exit status. */
static int parse_args(int argc, char **argv, struct shrink_args *a)
{
	*a = (struct shrink_args){ .max_runs = SHRINK_DEFAULT_RUNS, .max_s = SHRINK_DEFAULT_SECONDS };
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			usage(stdout);
			return CLI_EXIT_OK;
		} else if (!strcmp(o, "--json")) {
			a->json = true;
		} else if (!strcmp(o, "--quiet")) {
			a->quiet = true;
		} else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
			if (!v || !*v)
				return cli_usage_error("shrink: %s needs a folder", o);
			snprintf(a->out, sizeof a->out, "%s", v);
			i++;
		} else if (!strcmp(o, "--max-runs")) {
			if (parse_u64(o, v, 1, 1000000, &a->max_runs))
				return CLI_EXIT_USAGE;
			i++;
		} else if (!strcmp(o, "--max-time")) {
			if (parse_u64(o, v, 1, 86400, &a->max_s))
				return CLI_EXIT_USAGE;
			i++;
		} else if (o[0] == '-' || a->bundle) {
			return cli_usage_error("shrink: unexpected argument '%s' (see migbed shrink --help)", o);
		} else {
			a->bundle = o;
		}
	}
	if (!a->bundle)
		return cli_usage_error("shrink: which bundle? (see migbed shrink --help)");
	if (!a->out[0]) {
		size_t n = strlen(a->bundle);
		while (n > 1 && a->bundle[n - 1] == '/')
			n--;
		snprintf(a->out, sizeof a->out, "%.*s.shrunk", (int)(n < 900 ? n : 900), a->bundle);
	}
	return -1;
}

/* The scratch folder (TMPDIR or /tmp) with its trace and event-log paths. 0 or -1. */
static int make_scratch(struct sh *s)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(s->scratch, sizeof s->scratch, "%s/migbed-shrink-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->scratch))
		return cli_usage_error("shrink: %s: %s", s->scratch, strerror(errno)), -1;
	snprintf(s->trace_path, sizeof s->trace_path, "%s/trace", s->scratch);
	snprintf(s->events_path, sizeof s->events_path, "%s/events.log", s->scratch);
	return 0;
}

/* Load, check it reproduces, reduce, write. The exit status. */
static int shrink(struct sh *s, const struct shrink_args *a)
{
	struct diag d = { 0 };
	struct shape before, after;
	if (load_bundle(s, &d))
		return cli_usage_error("shrink: %s", d.msg);
	if (measure(s, &s->best, s->events_path, &before, &d))
		return cli_usage_error("shrink: %s: its scenario is refused: %s", s->bundle, d.msg);
	if (!same_failure(s)) {
		fprintf(stderr, "migbed: shrink: %s does not reproduce: recorded verdict=%s cause=%s side=%s, this run "
				"verdict=%s cause=%s side=%s (nothing written)\n", s->bundle, s->want_verdict, s->want_cause,
			s->want_side, s->res->out.pass ? "pass" : "fail", cause_name(s->res->out.cause),
			run_side_name(s->res->out.side));
		return CLI_EXIT_FAIL;
	}
	s->b = (struct shrink_budget){ .max_runs = a->max_runs, .stop = out_of_time, .stop_arg = s };
	s->deadline_ms = now_ms() + a->max_s * 1000u;
	int rc = reduce(s);
	if (rc)
		return cli_usage_error("shrink: %s", strerror(-rc));
	if (write_bundle(s, a->out, &before, &after))
		return CLI_EXIT_USAGE;
	if (a->json)
		return print_json(s, a->out, &before, &after, a->max_runs);
	print_human(s, a->out, &before, &after, a->max_runs);
	return CLI_EXIT_OK;
}

int cmd_shrink(int argc, char **argv)
{
	struct shrink_args a;
	struct stat st;
	int code = parse_args(argc, argv, &a);
	if (code >= 0)
		return code;
	char tar[1100];
	snprintf(tar, sizeof tar, "%s.tar.zst", a.out);
	if (lstat(a.out, &st) == 0 || lstat(tar, &st) == 0)
		return cli_usage_error("shrink: %s: exists (a bundle is never written over: remove it or name another with -o)",
				       lstat(a.out, &st) == 0 ? a.out : tar);
	struct sh *s = calloc(1, sizeof *s);
	if (s) {
		s->c = calloc(1, sizeof *s->c);
		s->res = calloc(1, sizeof *s->res);
	}
	if (!s || !s->c || !s->res) {
		code = cli_usage_error("shrink: out of memory");
		goto out;
	}
	s->bundle = a.bundle;
	progress_init(&s->progress, a.quiet || a.json);
	s->axis = "start";
	code = make_scratch(s) ? CLI_EXIT_USAGE : shrink(s, &a);
	if (s->scratch[0])
		bundle_rmdir(s->scratch);
out:
	if (s) {
		cand_free(&s->best);
		free(s->c);
		free(s->res);
	}
	free(s);
	return code;
}
