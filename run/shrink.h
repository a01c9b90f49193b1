/* SPDX-License-Identifier: MIT */
/* shrink - the reduction core of `migbed shrink` (cli/cmd_shrink.c): delta debugging (Zeller's
 * ddmin) over a list, and the smallest value of a scalar, against an "interesting" predicate
 * the caller gives (for shrink: the run still fails with the same verdict, cause and side).
 *
 * Contract:
 *   - Every predicate call goes through shrink_try, which counts it against the budget: no
 *     call is made once max_runs calls were made or the caller's stop() says so (a wall-clock
 *     bound lives in the caller; nothing here reads a clock). A stopped budget stays stopped.
 *   - The predicate returns 1 (interesting), 0 (not), or a negative error that ends the
 *     reduction with that error. It is told the candidate, never keeps it.
 *   - Deterministic: the same list, predicate and budget give the same calls in the same
 *     order and the same result.
 *   - shrink_ddmin leaves keep[] as an interesting subset of what it was (the input is taken
 *     as interesting); when the budget did not stop it, the subset is 1-minimal: dropping any
 *     one more element is not interesting. It tries the empty set first. */
#ifndef MIGBED_RUN_SHRINK_H
#define MIGBED_RUN_SHRINK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shrink_budget {
	uint64_t max_runs;             /* predicate calls at most */
	uint64_t runs;                 /* made so far */
	bool (*stop)(void *arg);       /* e.g. out of wall time; NULL: never */
	void *stop_arg;
	bool stopped;                  /* a bound ended a reduction early */
};

/* keep[0..n): the candidate subset. */
typedef int (*shrink_set_fn)(void *arg, const bool *keep, size_t n);
/* v: the candidate value. */
typedef int (*shrink_value_fn)(void *arg, uint64_t v);

/* May another predicate call be made? false (and b->stopped) once a bound is reached. */
bool shrink_may_run(struct shrink_budget *b);
/* One counted call of fn (keep-set form): 1, 0, <0 error; 0 without a call when out of budget. */
int shrink_try_set(struct shrink_budget *b, shrink_set_fn fn, void *arg, const bool *keep, size_t n);
int shrink_try_value(struct shrink_budget *b, shrink_value_fn fn, void *arg, uint64_t v);

/* ddmin over the elements i with keep[i]: on return keep[] is the reduced subset. 0 or the
 * predicate's error. */
int shrink_ddmin(bool *keep, size_t n, shrink_set_fn fn, void *arg, struct shrink_budget *b);

/* The smallest interesting value in [lo, *cur] (*cur taken as interesting), by trying lo
 * first, then bisecting (the predicate taken as monotone: larger stays interesting); *cur
 * becomes it. 0 or the predicate's error. */
int shrink_lower(uint64_t lo, uint64_t *cur, shrink_value_fn fn, void *arg, struct shrink_budget *b);

#endif
