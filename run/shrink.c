/* SPDX-License-Identifier: MIT */
/* shrink - ddmin and scalar lowering against a counted predicate (see shrink.h). */
#include "run/shrink.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool shrink_may_run(struct shrink_budget *b)
{
	if (!b->stopped && (b->runs >= b->max_runs || (b->stop && b->stop(b->stop_arg))))
		b->stopped = true;
	return !b->stopped;
}

int shrink_try_set(struct shrink_budget *b, shrink_set_fn fn, void *arg, const bool *keep, size_t n)
{
	if (!shrink_may_run(b))
		return 0;
	b->runs++;
	return fn(arg, keep, n);
}

int shrink_try_value(struct shrink_budget *b, shrink_value_fn fn, void *arg, uint64_t v)
{
	if (!shrink_may_run(b))
		return 0;
	b->runs++;
	return fn(arg, v);
}

/* The ddmin state: the current subset as a list of element indices. */
struct dd {
	size_t *cur, n_cur;            /* indices kept, ascending */
	bool *cand;                    /* a candidate as a keep[] of the whole list */
	size_t n;
};

/* Chunk k of `parts` of the current subset: [*from, *to) in cur[]. */
static void chunk_of(const struct dd *s, size_t parts, size_t k, size_t *from, size_t *to)
{
	*from = s->n_cur * k / parts;
	*to = s->n_cur * (k + 1) / parts;
}

/* cand = chunk k (complement false) or the subset without it (complement true). */
static void make_cand(struct dd *s, size_t parts, size_t k, bool complement)
{
	size_t from, to;
	chunk_of(s, parts, k, &from, &to);
	memset(s->cand, 0, s->n * sizeof *s->cand);
	for (size_t i = 0; i < s->n_cur; i++)
		s->cand[s->cur[i]] = (i >= from && i < to) != complement;
}

/* The current subset becomes cand. */
static void take_cand(struct dd *s)
{
	size_t m = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->cand[i])
			s->cur[m++] = i;
	s->n_cur = m;
}

/* One round at granularity *parts: 1 when a chunk or a complement was taken (*parts
 * adjusted), 0 when none was, <0 error. */
static int dd_round(struct dd *s, size_t *parts, shrink_set_fn fn, void *arg, struct shrink_budget *b)
{
	for (int complement = 0; complement <= 1; complement++) {
		if (complement == 0 && *parts == 2)
			continue;   /* with two parts each chunk is the other's complement */
		for (size_t k = 0; k < *parts; k++) {
			make_cand(s, *parts, k, complement);
			int rc = shrink_try_set(b, fn, arg, s->cand, s->n);
			if (rc < 0)
				return rc;
			if (rc == 1) {
				take_cand(s);
				*parts = complement ? (*parts - 1 > 2 ? *parts - 1 : 2) : 2;
				return 1;
			}
			if (b->stopped)
				return 0;
		}
	}
	return 0;
}

static int dd_loop(struct dd *s, shrink_set_fn fn, void *arg, struct shrink_budget *b)
{
	size_t parts = 2;
	memset(s->cand, 0, s->n * sizeof *s->cand);
	int rc = s->n_cur ? shrink_try_set(b, fn, arg, s->cand, s->n) : 0;   /* nothing at all? */
	if (rc == 1)
		s->n_cur = 0;
	while (rc >= 0 && s->n_cur >= 2 && !b->stopped) {
		if (parts > s->n_cur)
			parts = s->n_cur;
		rc = dd_round(s, &parts, fn, arg, b);
		if (rc == 0 && parts >= s->n_cur)
			break;   /* single elements tried: 1-minimal */
		if (rc == 0)
			parts = parts * 2 < s->n_cur ? parts * 2 : s->n_cur;
	}
	return rc < 0 ? rc : 0;
}

int shrink_ddmin(bool *keep, size_t n, shrink_set_fn fn, void *arg, struct shrink_budget *b)
{
	struct dd s = { .n = n };
	int rc = 0;
	if (n == 0)
		return 0;
	s.cur = malloc(n * sizeof *s.cur);
	s.cand = malloc(n * sizeof *s.cand);
	if (!s.cur || !s.cand) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (keep[i])
			s.cur[s.n_cur++] = i;
	rc = dd_loop(&s, fn, arg, b);
	memset(keep, 0, n * sizeof *keep);
	for (size_t i = 0; i < s.n_cur; i++)
		keep[s.cur[i]] = true;
out:
	free(s.cur);
	free(s.cand);
	return rc;
}

int shrink_lower(uint64_t lo, uint64_t *cur, shrink_value_fn fn, void *arg, struct shrink_budget *b)
{
	if (lo >= *cur)
		return 0;
	int rc = shrink_try_value(b, fn, arg, lo);
	if (rc != 0) {
		if (rc == 1)
			*cur = lo;
		return rc < 0 ? rc : 0;
	}
	uint64_t bad = lo, good = *cur;   /* invariant: bad not interesting, good interesting */
	while (good - bad > 1 && !b->stopped) {
		uint64_t mid = bad + (good - bad) / 2;
		rc = shrink_try_value(b, fn, arg, mid);
		if (rc < 0)
			return rc;
		if (rc == 1)
			good = mid;
		else if (!b->stopped)
			bad = mid;
	}
	assert(good <= *cur);
	*cur = good;
	return 0;
}
