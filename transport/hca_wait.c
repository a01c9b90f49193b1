/* SPDX-License-Identifier: MIT */
/* hca_wait - the one discrete-event wait loop (see hca_wait.h for the contract), and the
 * public waits built on it: hca_world_wait, hca_sleep (hca.h "Progress"). */
#include "transport/hca_wait.h"

#include <assert.h>
#include <errno.h>
#include <time.h>

#include "transport/hca_cq.h"

#define HCA_WAIT_ITER_MAX (1u << 24) /* a wait that loops this often is a livelock (asserted) */
#define HCA_BLOCK_SLICE_NS (100ull * VCLOCK_NS_PER_MS)

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VCLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Run every live progress function once: 1 if one of them did something. */
static int world_progress(hca_world *w)
{
	int did = 0;

	if (w->in_progress)
		return 0;
	w->in_progress = true;
	for (size_t i = 0; i < w->n_progress; i++) {
		struct progress *p = &w->progress[i];
		int rc;

		if (p->finished)
			continue;
		rc = p->fn(p->arg);
		if (rc > 0)
			did = 1;
		else if (rc < 0)
			p->finished = true;
	}
	w->in_progress = false;
	return did;
}

/* Verbs: sleep on the devices for what is left of the wall budget (at most one slice).
 * 2 the backend says something is ready, 1 the slice passed, 0 nothing to block for or
 * budget spent, <0 backend error. */
static int world_block(hca_world *w, uint64_t wall0_ns, uint64_t budget_ns)
{
	uint64_t spent_ns = mono_ns() - wall0_ns;
	int rc;

	if (!w->ops->block || w->n_eps + w->n_listeners == 0 || spent_ns >= budget_ns)
		return 0;
	rc = w->ops->block(w, hca_min_u64(budget_ns - spent_ns, HCA_BLOCK_SLICE_NS));
	return rc < 0 ? rc : rc > 0 ? 2 : 1;
}

static int ask(const struct hca_wait_how *how, enum hca_wait_step step)
{
	return how->stop ? how->stop(how->arg, step) : 0;
}

/* One pass of the loop: the predicate's nonzero value or an error to return, 0 to loop
 * again, or 1 in *done: the deadline is reached (nothing due, nothing to block for). */
static int wait_step(hca_world *w, const struct hca_wait_how *how, uint64_t deadline_ns,
		     uint64_t wall0_ns, bool *done)
{
	size_t before = hca_cq_queued(w);
	uint64_t t_ns;
	int rc = hca_cq_drain(w);

	if (rc < 0 && how->drain_errors)
		return rc;
	rc = ask(how, hca_cq_queued(w) > before ? HCA_WAIT_DRAINED_NEW : HCA_WAIT_DRAINED);
	if (rc != 0)
		return rc;
	if (world_progress(w) > 0)
		return ask(how, HCA_WAIT_PROGRESSED);
	rc = ask(how, HCA_WAIT_IDLE);
	if (rc != 0)
		return rc;
	if (hca_cq_next_ns(w, &t_ns) && t_ns <= deadline_ns) {
		vclock_advance_to(&w->clk, t_ns);
		return ask(how, HCA_WAIT_ADVANCED);
	}
	rc = how->block ? world_block(w, wall0_ns, how->timeout_ns) : 0;
	if (rc < 0)
		return rc;
	if (rc == 2)
		return ask(how, HCA_WAIT_READY);
	*done = rc == 0;              /* 1: the slice passed, block again */
	return 0;
}

int hca_wait_run(hca_world *w, const struct hca_wait_how *how)
{
	uint64_t deadline_ns = hca_sat_add(hca_now_ns(w), how->timeout_ns);
	uint64_t wall0_ns = mono_ns();

	for (uint32_t i = 0; i < HCA_WAIT_ITER_MAX; i++) {
		bool done = false;
		int rc = wait_step(w, how, deadline_ns, wall0_ns, &done);

		if (rc != 0)
			return rc;
		if (done) {
			vclock_catch_up(&w->clk, deadline_ns);
			return 0;
		}
	}
	assert(!"hca wait loop did not converge (a progress function that never rests?)");
	return -ELOOP;
}

struct until {
	int (*check)(void *arg);
	void *arg;
};

static int until_stop(void *arg, enum hca_wait_step step)
{
	const struct until *u = arg;

	if (step != HCA_WAIT_DRAINED && step != HCA_WAIT_DRAINED_NEW)
		return 0;
	return u->check(u->arg);
}

int hca_wait_until(hca_world *w, uint64_t timeout_ns, int (*check)(void *arg), void *arg)
{
	struct until u = { .check = check, .arg = arg };
	const struct hca_wait_how how = { .timeout_ns = timeout_ns, .block = true,
					  .drain_errors = true, .stop = until_stop, .arg = &u };

	return hca_wait_run(w, &how);
}

void hca_wait_pass_time(hca_world *w, uint64_t d_ns)
{
	const struct hca_wait_how how = { .timeout_ns = d_ns };

	hca_wait_run(w, &how);
}

void hca_wait_catch_up(hca_world *w, uint64_t t_ns)
{
	vclock_catch_up(&w->clk, t_ns);
}

/* hca_world_wait's "something happened": the drain brought a completion or CM event, a
 * progress function did something, a completion became visible as the clock moved to its
 * time, or a device fd became ready (e.g. a connect request). */
static int anything_stop(void *arg, enum hca_wait_step step)
{
	bool *drained = arg;

	switch (step) {
	case HCA_WAIT_DRAINED:
	case HCA_WAIT_DRAINED_NEW:
		*drained = step == HCA_WAIT_DRAINED_NEW;
		return 0;
	case HCA_WAIT_IDLE:
		return *drained ? 1 : 0;
	default:
		return 1;
	}
}

int hca_world_wait(hca_world *w, uint64_t timeout_ns)
{
	bool drained = false;
	const struct hca_wait_how how = { .timeout_ns = timeout_ns, .block = true,
					  .drain_errors = true, .stop = anything_stop,
					  .arg = &drained };

	return hca_wait_run(w, &how);
}

void hca_sleep(hca_world *w, uint64_t d_ns)
{
	assert(w);
	HLOG(w, "sim", "sleep", "ns=%llu", (unsigned long long)d_ns);
	hca_wait_pass_time(w, d_ns);
}

void hca_spend(hca_world *w, uint64_t d_ns)
{
	assert(w);
	if (d_ns)
		hca_wait_pass_time(w, d_ns);
}

int hca_world_add_progress(hca_world *w, hca_progress_fn fn, void *arg)
{
	if (!w || !fn)
		return -EINVAL;
	if (w->n_progress >= HCA_PROGRESS_MAX)
		return -ENOSPC;
	w->progress[w->n_progress++] = (struct progress){ .fn = fn, .arg = arg };
	return 0;
}
