/* SPDX-License-Identifier: MIT */
/* hca_err_test - the seam (transport/hca.c on the model backend, transport/hca_model.c) when
 * memory runs out: every allocation the front end and the model make is failed once, in
 * turn ("fail the N-th call", as SQLite's OOM test), and each run must end either completed or
 * with -ENOMEM from the call that failed, leaking nothing; plus the queues that grow on
 * demand and the release of an unclean world.
 *
 * How: this test binary replaces malloc/calloc/realloc/free with thin wrappers around
 * glibc's own allocator (__libc_malloc, ...) that can fail one chosen allocation and count
 * the blocks live while a scenario runs. The wrappers only act while armed by a test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"
#include "faults/fault_hook.h"
#include "transport/hca.h"

#define ADDR "model:err"
#define TIMEOUT_NS (10ull * VCLOCK_NS_PER_S)
#define TORTURE_MAX 400              /* allocation sites of one scenario: far fewer */

/* ---- a failing, counting allocator -------------------------------------------------------- */

#include "transport/test_real_alloc.h"

static struct {
	bool armed;                  /* fail the allocation when countdown reaches 0 */
	uint64_t countdown;
	bool fired;
	bool counting;               /* keep `live` */
	int64_t live;                /* blocks allocated minus blocks freed while counting */
} oom;

static void oom_arm(uint64_t allocations_to_pass)
{
	oom.armed = true;
	oom.countdown = allocations_to_pass;
	oom.fired = false;
}

static void oom_disarm(void)
{
	oom.armed = false;
}

static void count_start(void)
{
	oom.live = 0;
	oom.counting = true;
}

/* Blocks still live since count_start. */
static int64_t count_stop(void)
{
	oom.counting = false;
	return oom.live;
}

static bool alloc_fails(void)
{
	if (!oom.armed)
		return false;
	if (oom.countdown > 0) {
		oom.countdown--;
		return false;
	}
	oom.armed = false;           /* one failure per arming */
	oom.fired = true;
	return true;
}

static void *counted(void *p)
{
	if (p && oom.counting)
		oom.live++;
	return p;
}

void *malloc(size_t n)
{
	if (alloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	return counted(REAL_ALLOC(malloc)(n));
}

void *calloc(size_t n, size_t size)
{
	if (alloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	return counted(REAL_ALLOC(calloc)(n, size));
}

void *realloc(void *p, size_t n)
{
	if (alloc_fails()) {
		errno = ENOMEM;
		return NULL;
	}
	void *q = REAL_ALLOC(realloc)(p, n);
	return p ? q : counted(q);
}

#if REAL_ALLOC_SANITIZED
/* ASan's strdup allocates behind the interposer (its free would then be counted alone): this
 * one allocates through it, as glibc's own does. */
char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	return p ? memcpy(p, s, n) : NULL;
}
#endif

void free(void *p)
{
	if (p && oom.counting)
		oom.live--;
	REAL_ALLOC(free)(p);
}

static void test_the_allocator_wrappers_work(void **state)
{
	(void)state;
	count_start();
	char *s = strdup("abc");               /* glibc's own callers go through them too */
	assert_non_null(s);
	assert_int_equal(oom.live, 1);
	free(s);
	oom_arm(1);
	void *a = malloc(8);
	assert_non_null(a);
	assert_null(calloc(1, 8));
	assert_true(oom.fired);
	assert_non_null(s = strdup("x"));      /* one failure per arming */
	free(s);
	free(a);
	assert_int_equal(count_stop(), 0);
}

/* ---- one scenario, made to fail at every allocation ---------------------------------------- */

static unsigned char sbuf[8192], dbuf[8192];

struct run {
	hca_world *w;
	hca_listener *l;
	hca_ep *src, *dst;
	int accept_rc;               /* the destination's first failure */
	bool accept_done;
};

static int acceptor(void *arg)
{
	struct run *r = arg;
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	struct hca_conn_params cp = { .rnr_retry_count = 0 };
	struct hca_cm_event req;
	hca_ep *ep;
	int rc;

	if (r->accept_done)
		return -1;
	rc = hca_listener_poll(r->l, &ep, &req);
	if (rc == 0)
		return 0;
	r->accept_done = true;
	if (rc > 0 && (rc = hca_ep_setup(ep, &caps)) == 0)
		rc = hca_accept(ep, &cp);
	r->accept_rc = rc;
	r->dst = rc == 0 ? ep : NULL;  /* a failed one is left to hca_world_free */
	return rc == 0 ? 1 : -1;
}

/* A whole connection's life: 0 completed, or the first call's error. Whatever the outcome,
 * the world is freed (an unclean world releases its leftovers). */
static int scenario(struct run *r)
{
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	struct hca_conn_params cp = { .retry_count = 5 };
	hca_mr *smr = NULL, *dmr = NULL;
	struct hca_wc wc;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &r->w);
	if (rc < 0)
		return rc;
	rc = hca_world_add_progress(r->w, acceptor, r);
	if (rc == 0)
		rc = hca_listen(r->w, VOCAB_SIDE_DST, ADDR, &r->l);
	if (rc == 0)
		rc = hca_ep_create(r->w, VOCAB_SIDE_SRC, ADDR, &r->src);
	if (rc == 0)
		rc = hca_ep_setup(r->src, &caps);
	if (rc == 0)
		rc = hca_connect(r->src, &cp, TIMEOUT_NS, NULL);
	if (rc == 0)
		rc = hca_reg_mr(r->src, (uint64_t)(uintptr_t)sbuf, sizeof(sbuf), HCA_ACCESS_LOCAL_WRITE, &smr);
	if (rc == 0)
		rc = hca_reg_mr(r->dst, (uint64_t)(uintptr_t)dbuf, sizeof(dbuf),
				HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &dmr);
	if (rc == 0)
		rc = hca_post_recv(r->dst, 1, (uint64_t)(uintptr_t)dbuf, 64, hca_mr_lkey(dmr));
	if (rc == 0) {
		struct hca_send_wr wr = { .wr_id = 2, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)sbuf,
					  .length = 64, .lkey = hca_mr_lkey(smr), .signaled = true };
		rc = hca_post_send(r->src, &wr);
	}
	if (rc == 0) {
		assert_int_equal(hca_wait(r->src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
		assert_int_equal(wc.status, HCA_WC_SUCCESS);
		assert_int_equal(hca_wait(r->dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
		assert_int_equal(wc.status, HCA_WC_SUCCESS);
		assert_int_equal(hca_dereg_mr(smr), 0);
		assert_int_equal(hca_dereg_mr(dmr), 0);
		hca_ep_destroy(r->src);
		hca_ep_destroy(r->dst);
		hca_listener_close(r->l);
		assert_int_equal(hca_world_live_objects(r->w), 0);
	}
	hca_world_free(r->w);
	return rc;
}

static void test_every_allocation_failure_is_reported_and_leaks_nothing(void **state)
{
	struct run r;
	uint64_t n;
	(void)state;

	memset(sbuf, 0x5a, sizeof(sbuf));
	for (n = 0; n < TORTURE_MAX; n++) {
		count_start();
		oom_arm(n);
		int rc = scenario(&r);
		oom_disarm();
		assert_int_equal(count_stop(), 0);       /* nothing leaked, whatever happened */
		if (!oom.fired) {
			assert_int_equal(rc, 0);         /* no failure: the scenario completes */
			break;
		}
		if (rc == -ETIMEDOUT)                    /* the destination failed: nobody accepted */
			assert_int_equal(r.accept_rc, -ENOMEM);
		else if (rc != 0)
			assert_int_equal(rc, -ENOMEM);
		else                                     /* survived: the acceptor retried nothing */
			assert_int_equal(r.accept_rc, 0);
	}
	assert_true(n > 20);                     /* the scenario does allocate that often */
	assert_true(n < TORTURE_MAX);
	assert_true(memcmp(dbuf, sbuf, 64) == 0);
}

/* ---- queues that grow on demand ------------------------------------------------------------ */

struct pair {
	hca_world *w;
	hca_listener *l;
	hca_ep *src, *dst;
	hca_mr *smr, *dmr;
	uint8_t accept_rnr;
};

static int pair_acceptor(void *arg)
{
	struct pair *p = arg;
	struct hca_qp_caps caps = { .max_send_wr = 32, .max_recv_wr = 32 };
	struct hca_conn_params cp = { .rnr_retry_count = p->accept_rnr };
	struct hca_cm_event req;
	hca_ep *ep;

	if (p->dst)
		return -1;
	if (hca_listener_poll(p->l, &ep, &req) <= 0)
		return 0;
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(hca_accept(ep, &cp), 0);
	p->dst = ep;
	return 1;
}

static void pair_open(struct pair *p, uint8_t accept_rnr, fault_plan *plan)
{
	struct hca_qp_caps caps = { .max_send_wr = 32, .max_recv_wr = 32 };
	struct hca_conn_params cp = { .retry_count = 5 };

	memset(p, 0, sizeof(*p));
	p->accept_rnr = accept_rnr;
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &p->w), 0);
	fault_plan_attach(p->w, plan);
	assert_int_equal(hca_world_add_progress(p->w, pair_acceptor, p), 0);
	assert_int_equal(hca_listen(p->w, VOCAB_SIDE_DST, ADDR, &p->l), 0);
	assert_int_equal(hca_ep_create(p->w, VOCAB_SIDE_SRC, ADDR, &p->src), 0);
	assert_int_equal(hca_ep_setup(p->src, &caps), 0);
	assert_int_equal(hca_connect(p->src, &cp, TIMEOUT_NS, NULL), 0);
	assert_int_equal(hca_reg_mr(p->src, (uint64_t)(uintptr_t)sbuf, sizeof(sbuf), HCA_ACCESS_LOCAL_WRITE, &p->smr), 0);
	assert_int_equal(hca_reg_mr(p->dst, (uint64_t)(uintptr_t)dbuf, sizeof(dbuf), HCA_ACCESS_LOCAL_WRITE, &p->dmr), 0);
}

static void pair_close(struct pair *p)
{
	assert_int_equal(hca_dereg_mr(p->smr), 0);
	assert_int_equal(hca_dereg_mr(p->dmr), 0);
	hca_ep_destroy(p->src);
	hca_ep_destroy(p->dst);
	hca_listener_close(p->l);
	assert_int_equal(hca_world_live_objects(p->w), 0);
	hca_world_free(p->w);
}

static int send_one(struct pair *p, uint64_t wr_id)
{
	struct hca_send_wr wr = { .wr_id = wr_id, .opcode = HCA_WR_SEND,
				  .local_addr = (uint64_t)(uintptr_t)sbuf + wr_id, .length = 1,
				  .lkey = hca_mr_lkey(p->smr), .signaled = true };
	return hca_post_send(p->src, &wr);
}

/* SENDs waiting for RECVs (rnr_retry 7) keep their arrival times queued at the receiver; the
 * queue grows past its first 16 slots. When it cannot grow, the send is refused with -ENOMEM
 * and nothing of it remains; once memory is back, all arrive in order. */
static void test_arrival_queue_grows_and_refuses_cleanly(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	for (uint64_t i = 0; i < 20; i++)
		sbuf[i] = (unsigned char)(0xa0 + i);
	pair_open(&p, 7, NULL);
	for (uint64_t i = 0; i < 16; i++)
		assert_int_equal(send_one(&p, i), 0);
	oom_arm(0);
	assert_int_equal(send_one(&p, 16), -ENOMEM);
	assert_true(oom.fired);
	assert_int_equal(hca_ep_send_outstanding(p.src), 16);
	for (uint64_t i = 16; i < 20; i++)
		assert_int_equal(send_one(&p, i), 0);
	for (uint64_t i = 0; i < 20; i++)
		assert_int_equal(hca_post_recv(p.dst, 100 + i, (uint64_t)(uintptr_t)dbuf + i * 64, 64,
					       hca_mr_lkey(p.dmr)), 0);
	uint64_t last_ns = 0;
	for (uint64_t i = 0; i < 20; i++) {
		assert_int_equal(hca_wait(p.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.status, HCA_WC_SUCCESS);
		assert_true(wc.t_ns >= last_ns);
		last_ns = wc.t_ns;
		assert_int_equal(dbuf[i * 64], 0xa0 + i);
		assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
		assert_int_equal(wc.wr_id, i);
	}
	pair_close(&p);
}

/* A full CM event queue that cannot grow (the front end reserves a slot before it pulls an
 * event from the device): a real event stays queued in the device until there is room; an
 * injected event is lost (the call it rode on still happens); a duplicate's copy is lost, the
 * original is not. */
static int post_src_recv(struct pair *p, uint64_t wr_id)
{
	return hca_post_recv(p->src, wr_id, (uint64_t)(uintptr_t)sbuf, 64, hca_mr_lkey(p->smr));
}

static void test_full_event_queue_without_memory(void **state)
{
	struct pair p;
	struct hca_cm_event ev;
	fault_plan *plan;
	(void)state;

	assert_int_equal(fault_plan_new(1, &plan), 0);
	assert_int_equal(fault_plan_add_spec(plan, "post_recv@src -> event(TIMEWAIT_EXIT)", NULL), 0);
	assert_int_equal(fault_plan_add_spec(plan, "cm.disconnected@src -> duplicate", NULL), 0);
	pair_open(&p, 0, plan);
	for (uint64_t i = 0; i < 7; i++)
		assert_int_equal(post_src_recv(&p, i), 0);
	oom_arm(0);                        /* the 8th event fills the queue; it cannot grow */
	assert_int_equal(post_src_recv(&p, 7), 0);
	assert_true(oom.fired);
	oom_arm(0);                        /* no room for the peer's DISCONNECTED: it waits */
	assert_int_equal(hca_disconnect(p.dst), 0);
	assert_true(oom.fired);
	oom_arm(0);                        /* no room for a 9th injected event: lost */
	assert_int_equal(post_src_recv(&p, 8), 0);
	assert_true(oom.fired);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
		assert_int_equal(ev.type, HCA_CM_TIMEWAIT_EXIT);
	}
	/* the DISCONNECTED came once there was room, twice as the plan says */
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 0);
	assert_int_equal(hca_ep_send_outstanding(p.src), 0);
	pair_close(&p);

	/* 7 queued: the original DISCONNECTED takes the last slot, its copy finds none */
	pair_open(&p, 0, plan);
	for (uint64_t i = 0; i < 7; i++)
		assert_int_equal(post_src_recv(&p, i), 0);
	oom_arm(0);
	assert_int_equal(hca_disconnect(p.dst), 0);
	assert_true(oom.fired);
	for (int i = 0; i < 7; i++) {
		assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
		assert_int_equal(ev.type, HCA_CM_TIMEWAIT_EXIT);
	}
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 0);
	pair_close(&p);
	fault_plan_free(plan);
}

/* ---- an unclean world ---------------------------------------------------------------------- */

/* hca_world_free releases whatever the caller left: endpoints with MRs, a listener holding a
 * spare endpoint, another with a request still queued. */
static void test_unclean_world_is_released_entirely(void **state)
{
	struct pair p;
	struct hca_cm_event ev;
	struct hca_conn_params cp = { .retry_count = 5 };
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	hca_listener *l2;
	hca_ep *ep, *waiting;
	hca_mr *extra;
	(void)state;

	count_start();
	pair_open(&p, 0, NULL);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)sbuf + 4096, 4096, 0, &extra), 0);
	assert_int_equal(hca_listener_poll(p.l, &ep, &ev), 0);    /* keeps a spare endpoint */
	assert_int_equal(hca_listen(p.w, VOCAB_SIDE_DST, "model:queued", &l2), 0);
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, "model:queued", &waiting), 0);
	assert_int_equal(hca_ep_setup(waiting, &caps), 0);
	assert_int_equal(hca_connect(waiting, &cp, 1000, NULL), -ETIMEDOUT);
	assert_int_equal(hca_world_live_objects(p.w), 2 + 3 + 3);
	hca_world_free(p.w);
	assert_int_equal(count_stop(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_allocator_wrappers_work),
		cmocka_unit_test(test_every_allocation_failure_is_reported_and_leaks_nothing),
		cmocka_unit_test(test_arrival_queue_grows_and_refuses_cleanly),
		cmocka_unit_test(test_full_event_queue_without_memory),
		cmocka_unit_test(test_unclean_world_is_released_entirely),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
