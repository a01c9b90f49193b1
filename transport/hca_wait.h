/* SPDX-License-Identifier: MIT */
/* hca_wait - the front end's one discrete-event wait loop (internal to transport/).
 *
 * Owns the advance of virtual time: nothing else in the front end moves the world's clock.
 * One loop serves every wait: drain the backend (hca_cq.h), ask the stop predicate, run the
 * progress functions, else advance the clock to the next completion time within the
 * deadline, else (verbs, when asked) block on the devices for what is left of the wall
 * budget, else catch the clock up to the deadline and return 0.
 * Guarantees: the clock never passes the deadline; the loop is bounded (HCA_WAIT_ITER_MAX
 * iterations: more is a livelock, asserted, -ELOOP); progress functions are never called
 * from inside one.
 * The caller: gives a predicate that does not block and does not move the clock itself
 * (hca_wait_catch_up is the one exception a predicate may use, up to its own deadline). */
#ifndef MIGBED_TRANSPORT_HCA_WAIT_H
#define MIGBED_TRANSPORT_HCA_WAIT_H
#include "transport/hca_internal.h"

/* What the loop just did, told to the stop predicate. */
enum hca_wait_step {
	HCA_WAIT_DRAINED,             /* drained; the drain brought nothing new */
	HCA_WAIT_DRAINED_NEW,         /* drained; it brought a completion or CM event */
	HCA_WAIT_PROGRESSED,          /* a progress function did something */
	HCA_WAIT_IDLE,                /* the progress functions did nothing */
	HCA_WAIT_ADVANCED,            /* the clock moved to the next completion time */
	HCA_WAIT_READY,               /* (verbs) a device says something is ready */
};

/* >0 stop and return it, <0 stop with that error, 0 go on. */
typedef int (*hca_wait_stop_fn)(void *arg, enum hca_wait_step step);

struct hca_wait_how {
	uint64_t timeout_ns;          /* virtual deadline from now; also the wall budget to block */
	bool block;                   /* block on the devices (verbs) when nothing is due */
	bool drain_errors;            /* a backend error from the drain ends the wait */
	hca_wait_stop_fn stop;        /* NULL: never stop before the deadline */
	void *arg;
};

/* Run the loop: the predicate's value, a backend error, or 0 at the deadline. */
int hca_wait_run(hca_world *w, const struct hca_wait_how *how);
/* The common form: wait until check(arg), asked after every drain, is nonzero (its value);
 * drain errors end the wait; verbs blocks. 0 at the deadline. */
int hca_wait_until(hca_world *w, uint64_t timeout_ns, int (*check)(void *arg), void *arg);
/* Let d_ns of virtual time pass, stopping at every completion time on the way to run the
 * progress functions (which do nothing when called from inside one). */
void hca_wait_pass_time(hca_world *w, uint64_t d_ns);
/* Move the clock forward to t_ns (never back), for a predicate of hca_wait_run. */
void hca_wait_catch_up(hca_world *w, uint64_t t_ns);

#endif
