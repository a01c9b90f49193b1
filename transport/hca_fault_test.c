/* SPDX-License-Identifier: MIT */
/* hca_fault_test - fault injection at the seam's front end (transport/hca.c), on the model
 * backend: what each action does to the calls, completions and CM events the protocol sees,
 * and how calls are counted per site. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults/fault.h"
#include "faults/fault_hook.h"
#include "sim/evlog.h"
#include "sim/mem.h"
#include "transport/hca.h"
#include "transport/wire.h"

#define ADDR "model:fault-test"
#define BUF_BYTES (64u * 1024u)
#define TIMEOUT_NS (10ull * VCLOCK_NS_PER_S)

struct pair {
	hca_world *w;
	fault_plan *plan;
	hca_listener *l;
	hca_ep *src, *dst;
	unsigned char *sbuf, *dbuf;
	hca_mr *smr, *dmr;
};

static int accept_progress(void *arg)
{
	struct pair *p = arg;
	struct hca_cm_event req;
	struct hca_qp_caps caps = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1,
				    .cq_entries = 16 };
	struct hca_conn_params cp = { .rnr_retry_count = 0 };
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

/* A connected pair with the rules of specs, logging to ev (NULL: no log); the connect must
 * succeed (rules fire later). */
static void pair_open_log(struct pair *p, const char *const *specs, size_t n, evlog *ev)
{
	struct hca_qp_caps caps = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1,
				    .cq_entries = 16 };
	struct hca_conn_params cp = { .retry_count = 5, .rnr_retry_count = 0 };
	struct hca_cm_event reply;

	static const vclock zero;
	memset(p, 0, sizeof(*p));
	if (ev)   /* the log outlives the previous pair's world: not its freed clock (ASan) */
		evlog_set_clock(ev, &zero);
	assert_int_equal(fault_plan_new(1, &p->plan), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fault_plan_add_spec(p->plan, specs[i], NULL), 0);
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, ev, &p->w), 0);
	if (ev)
		evlog_set_clock(ev, hca_world_clock(p->w));
	fault_plan_attach(p->w, p->plan);
	assert_int_equal(hca_world_add_progress(p->w, accept_progress, p), 0);
	assert_int_equal(hca_listen(p->w, VOCAB_SIDE_DST, ADDR, &p->l), 0);
	assert_int_equal(hca_ep_create(p->w, VOCAB_SIDE_SRC, ADDR, &p->src), 0);
	assert_int_equal(hca_ep_setup(p->src, &caps), 0);
	assert_int_equal(hca_connect(p->src, &cp, TIMEOUT_NS, &reply), 0);
	assert_non_null(p->dst);
	p->sbuf = calloc(1, BUF_BYTES);
	p->dbuf = calloc(1, BUF_BYTES);
	assert_int_equal(hca_reg_mr(p->src, (uint64_t)(uintptr_t)p->sbuf, BUF_BYTES, HCA_ACCESS_LOCAL_WRITE, &p->smr), 0);
	assert_int_equal(hca_reg_mr(p->dst, (uint64_t)(uintptr_t)p->dbuf, BUF_BYTES,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &p->dmr), 0);
}

static void pair_open(struct pair *p, const char *const *specs, size_t n)
{
	pair_open_log(p, specs, n, NULL);
}

static void pair_close(struct pair *p)
{
	if (p->smr)
		hca_dereg_mr(p->smr);
	if (p->dmr)
		hca_dereg_mr(p->dmr);
	hca_ep_destroy(p->src);
	hca_ep_destroy(p->dst);
	hca_listener_close(p->l);
	assert_int_equal(hca_world_live_objects(p->w), 0);
	hca_world_free(p->w);
	fault_plan_free(p->plan);
	free(p->sbuf);
	free(p->dbuf);
}

/* A control message of `type` at offset off of the source buffer, posted as a SEND that names
 * its type to the seam, as the protocol's ctl_post_send does. */
static int send_msg(struct pair *p, uint64_t wr_id, uint32_t off, uint32_t type, uint32_t len)
{
	struct wire_hdr h = { .len = len, .type = type, .repeat = 1 };
	const struct hca_ctl_msg msg = { .type = type, .corrupt = wire_corrupt };
	wire_hdr_encode(&h, p->sbuf + off, WIRE_HDR_BYTES);
	struct hca_send_wr wr = { .wr_id = wr_id, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)p->sbuf + off,
				  .length = WIRE_HDR_BYTES + len, .lkey = hca_mr_lkey(p->smr), .signaled = true,
				  .ctl = &msg };
	return hca_post_send(p->src, &wr);
}

static int post_dst_recv(struct pair *p, uint64_t wr_id, uint32_t off)
{
	return hca_post_recv(p->dst, wr_id, (uint64_t)(uintptr_t)p->dbuf + off, 1024, hca_mr_lkey(p->dmr));
}

static int write_wr(struct pair *p, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct hca_send_wr wr = { .wr_id = wr_id, .opcode = HCA_WR_RDMA_WRITE,
				  .local_addr = (uint64_t)(uintptr_t)p->sbuf + off, .length = len,
				  .lkey = hca_mr_lkey(p->smr), .remote_addr = (uint64_t)(uintptr_t)p->dbuf + off,
				  .rkey = hca_mr_rkey(p->dmr), .signaled = true };
	return hca_post_send(p->src, &wr);
}

static struct hca_wc wait_wc(hca_ep *ep, enum hca_cq_kind cq)
{
	struct hca_wc wc;
	assert_int_equal(hca_wait(ep, cq, TIMEOUT_NS, &wc), 1);
	return wc;
}

/* ---- counting ----------------------------------------------------------------------------- */

static void test_calls_counted_per_site_and_side(void **state)
{
	(void)state;
	struct pair p;
	pair_open(&p, NULL, 0);
	assert_int_equal(post_dst_recv(&p, 1, 0), 0);
	assert_int_equal(send_msg(&p, 2, 0, WIRE_READY, 0), 0);
	assert_int_equal(write_wr(&p, 3, 4096, 100), 0);
	(void)wait_wc(p.src, HCA_CQ_SEND);
	(void)wait_wc(p.src, HCA_CQ_SEND);
	(void)wait_wc(p.dst, HCA_CQ_RECV);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_EP_CREATE, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_EP_SETUP, FAULT_SIDE_DST), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_MODIFY_QP, FAULT_SIDE_SRC), 2);   /* INIT, RTR/RTS */
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_CONNECT, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_ACCEPT, FAULT_SIDE_DST), 1);
	assert_int_equal(fault_plan_calls(p.plan, fault_site_cm(HCA_CM_ESTABLISHED), FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_REG_MR, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_POST_SEND, FAULT_SIDE_SRC), 2);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_POST_SEND_SEND, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_POST_SEND_WRITE, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, fault_site_msg(WIRE_READY), FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_POST_RECV, FAULT_SIDE_DST), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_WC_SEND, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_WC_WRITE, FAULT_SIDE_SRC), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_WC_RECV, FAULT_SIDE_DST), 1);
	assert_int_equal(fault_plan_injected(p.plan), 0);
	pair_close(&p);
}

/* ---- errno, status, drop ------------------------------------------------------------------ */

static void test_errno_fails_the_call_without_the_backend(void **state)
{
	(void)state;
	const char *rules[] = { "reg_mr@src #2 -> errno(ENOMEM)", "post_send.write@src #1 -> errno(EIO)" };
	struct pair p;
	hca_mr *mr = NULL;
	pair_open(&p, rules, 2);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)p.sbuf, 4096, HCA_ACCESS_LOCAL_WRITE, &mr), -ENOMEM);
	assert_null(mr);
	assert_int_equal(write_wr(&p, 7, 0, 64), -EIO);
	assert_int_equal(hca_ep_send_outstanding(p.src), 0);
	assert_int_equal(write_wr(&p, 8, 0, 64), 0);          /* once only */
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(fault_plan_injected(p.plan), 2);
	pair_close(&p);
}

/* status(S) at a post site: the WR completes with S in posting order, the QP is in error for
 * real (later WRs flush), and for REM_ACCESS_ERR the in-process peer's QP too. */
static void test_status_completes_in_order_and_kills_both_qps(void **state)
{
	(void)state;
	const char *rules[] = { "post_send.write@src #2 -> status(REM_ACCESS_ERR)" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	memset(p.sbuf, 0xab, 4096);
	assert_int_equal(write_wr(&p, 1, 0, 1024), 0);
	assert_int_equal(write_wr(&p, 2, 1024, 1024), 0);     /* the injected one: not performed */
	assert_int_equal(write_wr(&p, 3, 2048, 1024), 0);
	struct hca_wc a = wait_wc(p.src, HCA_CQ_SEND), b = wait_wc(p.src, HCA_CQ_SEND), c = wait_wc(p.src, HCA_CQ_SEND);
	assert_int_equal(a.wr_id, 1);
	assert_int_equal(a.status, HCA_WC_SUCCESS);
	assert_int_equal(b.wr_id, 2);
	assert_int_equal(b.status, HCA_WC_REM_ACCESS_ERR);
	assert_int_equal(c.wr_id, 3);
	assert_int_equal(c.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(p.dbuf[0], 0xab);                    /* the first write happened */
	assert_int_equal(p.dbuf[1024], 0);                    /* the injected one did not */
	assert_int_equal(p.dbuf[2048], 0);
	struct hca_wc r = wait_wc(p.dst, HCA_CQ_RECV);        /* the responder died too */
	assert_int_equal(r.wr_id, 40);
	assert_int_equal(r.status, HCA_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

/* Finding S2: status(S) at a post site behind WRITEs still in flight. The error completes
 * after them, in posting order, and the QP goes to error only then: a RECV of the requester is
 * flushed no earlier than the error completion (it was flushed at post time before), and WRs
 * posted meanwhile never reach the wire (flushed; an errno rule still fails its call). */
/* A pair with a RECV posted on each side (dst wr_id 40, src 50), where a flush shows. */
static void pair_open_recvs(struct pair *p, const char *const *specs, size_t n)
{
	pair_open(p, specs, n);
	assert_int_equal(post_dst_recv(p, 40, 0), 0);
	assert_int_equal(hca_post_recv(p->src, 50, (uint64_t)(uintptr_t)p->sbuf + 8192, 1024, hca_mr_lkey(p->smr)), 0);
}

static void test_status_behind_in_flight_writes_kills_at_its_completion(void **state)
{
	(void)state;
	const char *rules[] = { "post_send.write@src #2 -> status(REM_ACCESS_ERR)",
				"post_send.write@src #4 -> errno(EIO)" };
	struct pair p;
	pair_open_recvs(&p, rules, 2);
	memset(p.sbuf, 0xab, BUF_BYTES);
	uint64_t t0 = vclock_now_ns(hca_world_clock(p.w));
	assert_int_equal(write_wr(&p, 1, 0, 60000), 0);       /* ~5 us on the wire */
	assert_int_equal(write_wr(&p, 2, 1024, 1024), 0);     /* the injected one, behind it */
	assert_int_equal(write_wr(&p, 3, 61440, 1024), 0);    /* behind the error: flushed */
	assert_int_equal(write_wr(&p, 4, 3072, 1024), -EIO);  /* its errno rule still fails it */
	struct hca_wc a = wait_wc(p.src, HCA_CQ_SEND), b = wait_wc(p.src, HCA_CQ_SEND), c = wait_wc(p.src, HCA_CQ_SEND);
	struct hca_wc r = wait_wc(p.src, HCA_CQ_RECV);
	assert_int_equal(a.status, HCA_WC_SUCCESS);
	assert_true(a.t_ns > t0 + 4000);
	assert_int_equal(b.wr_id, 2);
	assert_int_equal(b.status, HCA_WC_REM_ACCESS_ERR);
	assert_true(b.t_ns >= a.t_ns);
	assert_int_equal(c.wr_id, 3);
	assert_int_equal(c.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(r.wr_id, 50);
	assert_int_equal(r.status, HCA_WC_WR_FLUSH_ERR);
	assert_true(r.t_ns >= b.t_ns);                        /* not before the error completion */
	assert_int_equal(p.dbuf[61440], 0);                   /* the flushed WRITE wrote nothing */
	assert_int_equal(wait_wc(p.dst, HCA_CQ_RECV).status, HCA_WC_WR_FLUSH_ERR);   /* the responder died too */
	pair_close(&p);
}

static void test_drop_reports_success_and_delivers_nothing(void **state)
{
	(void)state;
	const char *rules[] = { "msg.ready@src #1 -> drop", "post_send.write@src -> drop" };
	struct pair p;
	struct hca_wc wc;
	pair_open(&p, rules, 2);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	assert_int_equal(send_msg(&p, 1, 0, WIRE_READY, 0), 0);
	memset(p.sbuf + 4096, 0x5a, 512);
	assert_int_equal(write_wr(&p, 2, 4096, 512), 0);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(p.dbuf[4096], 0);                    /* no byte written */
	assert_int_equal(hca_wait(p.dst, HCA_CQ_RECV, VCLOCK_NS_PER_MS, &wc), 0);   /* nothing arrived */
	assert_int_equal(send_msg(&p, 3, 0, WIRE_QEMU_FILE, 8), 0);                /* the next one does */
	wc = wait_wc(p.dst, HCA_CQ_RECV);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.byte_len, WIRE_HDR_BYTES + 8);
	pair_close(&p);
}

/* ---- completion faults -------------------------------------------------------------------- */

/* wc.* status(S): the completion is rewritten; the QP goes to error at the completion's
 * time, not before: a WR the peer posts earlier in virtual time still succeeds. */
static void test_wc_status_rewrites_and_kills_at_its_time(void **state)
{
	(void)state;
	const char *rules[] = { "wc.write@src #1 -> status(RETRY_EXC_ERR)" };
	struct pair p;
	pair_open(&p, rules, 1);
	uint64_t t0 = vclock_now_ns(hca_world_clock(p.w));
	assert_int_equal(write_wr(&p, 1, 0, 60000), 0);       /* ~5 us on the wire */
	struct hca_wc wc = wait_wc(p.src, HCA_CQ_SEND);
	assert_int_equal(wc.status, HCA_WC_RETRY_EXC_ERR);
	assert_true(wc.t_ns > t0 + 4000);
	assert_int_equal(write_wr(&p, 2, 0, 64), 0);           /* after it: the QP is dead */
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

/* Finding S5: a post-site error status behind a WRITE whose completion a wc rule turned into an
 * error (stamped later, when the WRITE would complete) is flushed behind that error: the QP (and
 * its RECV) dies at the first error completion, not at the post, and the responder is left alone. */
static void test_post_status_behind_a_wc_error_is_flushed(void **state)
{
	(void)state;
	const char *rules[] = { "wc.write@src #1 -> status(RETRY_EXC_ERR)",
				"post_send.write@src #2 -> status(REM_ACCESS_ERR)" };
	struct pair p;
	pair_open_recvs(&p, rules, 2);
	uint64_t t0 = vclock_now_ns(hca_world_clock(p.w));
	assert_int_equal(write_wr(&p, 1, 0, 60000), 0);       /* ~5 us on the wire, then RETRY_EXC_ERR */
	assert_int_equal(write_wr(&p, 2, 1024, 1024), 0);     /* its rule fires behind that error */
	struct hca_wc a = wait_wc(p.src, HCA_CQ_SEND), b = wait_wc(p.src, HCA_CQ_SEND);
	struct hca_wc r = wait_wc(p.src, HCA_CQ_RECV);
	assert_int_equal(a.wr_id, 1);
	assert_int_equal(a.status, HCA_WC_RETRY_EXC_ERR);
	assert_true(a.t_ns > t0 + 4000);
	assert_int_equal(b.wr_id, 2);
	assert_int_equal(b.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(r.status, HCA_WC_WR_FLUSH_ERR);
	assert_true(r.t_ns >= a.t_ns);                        /* not flushed at the post (S5) */
	struct hca_wc d;
	assert_int_equal(hca_wait(p.dst, HCA_CQ_RECV, VCLOCK_NS_PER_MS, &d), 0);   /* the responder lives */
	pair_close(&p);
}

static void test_wc_delay_and_drop(void **state)
{
	(void)state;
	const char *rules[] = { "wc.write@src #1 -> delay(3ms)", "wc.write@src #2 -> drop" };
	struct pair p;
	struct hca_wc wc;
	pair_open(&p, rules, 2);
	uint64_t t0 = vclock_now_ns(hca_world_clock(p.w));
	assert_int_equal(write_wr(&p, 1, 0, 64), 0);
	wc = wait_wc(p.src, HCA_CQ_SEND);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_true(wc.t_ns >= t0 + 3 * VCLOCK_NS_PER_MS);
	assert_int_equal(write_wr(&p, 2, 0, 64), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, VCLOCK_NS_PER_S, &wc), 0);   /* lost */
	assert_int_equal(hca_ep_send_outstanding(p.src), 0);                       /* slot freed */
	pair_close(&p);
}

/* ---- messages ------------------------------------------------------------------------------ */

static void test_duplicate_sends_twice_and_meets_rnr(void **state)
{
	(void)state;
	const char *rules[] = { "msg.qemu_file@src -> duplicate" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);        /* one RECV for two messages */
	assert_int_equal(send_msg(&p, 5, 0, WIRE_QEMU_FILE, 4), 0);
	assert_int_equal(wait_wc(p.dst, HCA_CQ_RECV).status, HCA_WC_SUCCESS);
	struct hca_wc a = wait_wc(p.src, HCA_CQ_SEND), b = wait_wc(p.src, HCA_CQ_SEND);
	assert_int_equal(a.wr_id, 5);
	assert_int_equal(a.status, HCA_WC_SUCCESS);
	assert_int_equal(b.wr_id, 5);
	assert_int_equal(b.status, HCA_WC_RNR_RETRY_EXC_ERR);    /* the peer's rnr_retry is 0 */
	pair_close(&p);
}

static void test_corrupt_changes_the_header_the_peer_receives(void **state)
{
	(void)state;
	const char *rules[] = { "msg.ready #1 -> corrupt(type)", "msg.ready #2 -> corrupt(len)",
				"msg.ready #3 -> corrupt(repeat)", "msg.compress -> corrupt(payload)" };
	struct pair p;
	struct wire_hdr h;
	pair_open(&p, rules, 4);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(post_dst_recv(&p, 40 + i, 0), 0);
		assert_int_equal(send_msg(&p, i, 0, WIRE_READY, 0), 0);
		assert_int_equal(wait_wc(p.dst, HCA_CQ_RECV).status, HCA_WC_SUCCESS);
		assert_int_equal(wire_hdr_decode(p.dbuf, WIRE_HDR_BYTES, &h), 0);
		assert_int_equal(h.type, i == 0 ? WIRE_READY ^ 0x80u : WIRE_READY);
		assert_int_equal(h.len, i == 1 ? 0x40000000u : 0);
		assert_int_equal(h.repeat, i == 2 ? 1u + 65536u : 1u);
	}
	assert_int_equal(post_dst_recv(&p, 50, 0), 0);
	p.sbuf[WIRE_HDR_BYTES] = 0;
	assert_int_equal(send_msg(&p, 9, 0, WIRE_COMPRESS, 24), 0);
	assert_int_equal(wait_wc(p.dst, HCA_CQ_RECV).status, HCA_WC_SUCCESS);
	assert_int_equal(p.dbuf[WIRE_HDR_BYTES], 0xff);
	pair_close(&p);
}

static void test_delay_makes_a_message_arrive_later(void **state)
{
	(void)state;
	const char *rules[] = { "msg.ready -> delay(2ms)" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	uint64_t t0 = vclock_now_ns(hca_world_clock(p.w));
	assert_int_equal(send_msg(&p, 1, 0, WIRE_READY, 0), 0);
	struct hca_wc wc = wait_wc(p.dst, HCA_CQ_RECV);
	assert_true(wc.t_ns >= t0 + 2 * VCLOCK_NS_PER_MS);
	assert_true(wc.t_ns < t0 + 3 * VCLOCK_NS_PER_MS);
	pair_close(&p);
}

/* ---- side effects, CM, teardown ------------------------------------------------------------- */

static void test_side_effects_before_the_call(void **state)
{
	(void)state;
	const char *rules[] = { "post_send@src #1 -> event(DEVICE_REMOVAL)", "post_send@src #2 -> qp_error" };
	struct pair p;
	struct hca_cm_event ev;
	struct hca_wc wc;
	pair_open(&p, rules, 2);
	assert_int_equal(write_wr(&p, 1, 0, 64), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_RECV, TIMEOUT_NS, &wc), -ENODEV);
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DEVICE_REMOVAL);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(write_wr(&p, 2, 0, 64), 0);          /* the QP went to error first */
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

static void test_cm_drop_and_connect_errno(void **state)
{
	(void)state;
	const char *rules[] = { "cm.disconnected@src -> drop" };
	struct pair p;
	struct hca_cm_event ev;
	pair_open(&p, rules, 1);
	assert_int_equal(hca_disconnect(p.dst), 0);
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 0);    /* lost */
	assert_int_equal(fault_plan_injected(p.plan), 1);
	pair_close(&p);

	fault_plan *plan;
	hca_world *w;
	hca_listener *l;
	hca_ep *ep;
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 };
	struct hca_conn_params cp = { .retry_count = 5 };
	assert_int_equal(fault_plan_new(1, &plan), 0);
	assert_int_equal(fault_plan_add_spec(plan, "connect -> errno(ECONNREFUSED)", NULL), 0);
	assert_int_equal(fault_plan_add_spec(plan, "ep_setup@dst -> errno(ENOMEM)", NULL), 0);
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &w), 0);
	fault_plan_attach(w, plan);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, ADDR, &l), 0);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(hca_connect(ep, &cp, TIMEOUT_NS, &ev), -ECONNREFUSED);
	hca_ep_destroy(ep);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_DST, ADDR, &ep), 0);
	assert_int_equal(hca_ep_setup(ep, &caps), -ENOMEM);
	hca_ep_destroy(ep);
	hca_listener_close(l);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
	fault_plan_free(plan);
}

/* A failed deregistration leaves the MR registered; the endpoint's teardown releases it. */
static void test_failed_dereg_is_released_at_teardown(void **state)
{
	(void)state;
	const char *rules[] = { "dereg_mr@src -> errno(EBUSY)" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(hca_dereg_mr(p.smr), -EBUSY);
	assert_int_equal(hca_world_live_objects(p.w), 5);     /* 2 eps, listener, 2 MRs */
	p.smr = NULL;                                          /* as the protocol gives up on it */
	pair_close(&p);                                        /* asserts 0 live objects */
}

/* ---- helpers for worlds with a log ---------------------------------------------------------- */

struct tmplog {
	char path[64];
	evlog *ev;
};

static const vclock zero_clock;

static void tmplog_open(struct tmplog *t)
{
	strcpy(t->path, "/tmp/hca_fault_test_XXXXXX");
	int fd = mkstemp(t->path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(evlog_open(t->path, &zero_clock, &t->ev), 0);
}

/* Close the log and return its text (caller frees); the file is removed. */
static char *tmplog_close(struct tmplog *t)
{
	char *s = calloc(1, 1 << 16);
	assert_non_null(s);
	assert_int_equal(evlog_close(t->ev), 0);
	FILE *f = fopen(t->path, "r");
	assert_non_null(f);
	size_t n = fread(s, 1, (1 << 16) - 1, f);
	assert_true(n > 0);
	fclose(f);
	unlink(t->path);
	return s;
}

/* A world with the rules of specs (and a log if ev), nothing else. */
static hca_world *plan_world(const char *const *specs, size_t n, evlog *ev, fault_plan **plan)
{
	hca_world *w;

	assert_int_equal(fault_plan_new(1, plan), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fault_plan_add_spec(*plan, specs[i], NULL), 0);
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, ev, &w), 0);
	if (ev)
		evlog_set_clock(ev, hca_world_clock(w));
	fault_plan_attach(w, *plan);
	return w;
}

static uint64_t clock_ns(hca_world *w)
{
	return vclock_now_ns(hca_world_clock(w));
}

/* ---- the hook's contract, without a plan ------------------------------------------------------ */

/* A hook of the test's own: records what the seam asks, fires errno(EIO) on the send WR
 * number `fail_send` (0-based). */
#define STUB_CALLS 64
struct stub_hook {
	int calls, sends, fail_send;
	enum fault_site sites[STUB_CALLS][4];
	size_t n_sites[STUB_CALLS];
	enum vocab_side side[STUB_CALLS];
};

static bool stub_check(void *ctx, const enum fault_site *sites, size_t n, enum vocab_side side, uint64_t now_ns,
		       struct hca_fault_answer *a)
{
	struct stub_hook *h = ctx;
	int i = h->calls++;

	(void)now_ns;
	assert_true(i < STUB_CALLS && n >= 1 && n <= 4);
	memcpy(h->sites[i], sites, n * sizeof *sites);
	h->n_sites[i] = n;
	h->side[i] = side;
	if (sites[n - 1] != FAULT_SITE_POST_SEND || h->sends++ != h->fail_send)
		return false;
	*a = (struct hca_fault_answer){ .action = FAULT_ACT_ERRNO, .arg = EIO, .site = sites[0], .call = 7 };
	snprintf(a->text, sizeof a->text, "errno(EIO)");
	return true;
}

/* The sites of the k-th send WR the stub saw (0-based): their count, copied to out. */
static size_t stub_send(const struct stub_hook *h, int k, enum fault_site *out)
{
	for (int i = 0; i < h->calls; i++) {
		if (h->sites[i][h->n_sites[i] - 1] != FAULT_SITE_POST_SEND || k-- > 0)
			continue;
		assert_int_equal(h->side[i], VOCAB_SIDE_SRC);
		memcpy(out, h->sites[i], h->n_sites[i] * sizeof *out);
		return h->n_sites[i];
	}
	fail_msg("no send WR %d", k);
	return 0;
}

/* The seam puts each fallible call to the hook with its sites (most specific first) and its
 * side as an enum; a SEND is msg.TYPE only when the protocol names its type (the seam reads
 * no wire header); the answer's text is what the log prints; no hook, nothing is asked. */
static void test_hook_sites_and_side(void **state)
{
	struct stub_hook h = { .fail_send = 1 };
	struct hca_fault_hook hook = { .check = stub_check, .ctx = &h };
	const struct hca_ctl_msg ready = { .type = WIRE_READY, .corrupt = wire_corrupt };
	const struct hca_ctl_msg bad = { .type = WIRE_TYPE_COUNT, .corrupt = wire_corrupt };
	enum fault_site got[4];
	struct tmplog t;
	struct pair p;
	(void)state;

	tmplog_open(&t);
	pair_open_log(&p, NULL, 0, t.ev);
	hca_world_set_fault_hook(p.w, &hook);
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(hca_post_recv(p.dst, 100 + i, (uint64_t)(uintptr_t)p.dbuf, 64, hca_mr_lkey(p.dmr)), 0);
	assert_int_equal(h.side[0], VOCAB_SIDE_DST);
	assert_int_equal(h.sites[0][0], FAULT_SITE_POST_RECV);
	wire_hdr_encode(&(struct wire_hdr){ .type = WIRE_READY, .repeat = 1 }, p.sbuf, WIRE_HDR_BYTES);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)p.sbuf,
				  .length = WIRE_HDR_BYTES, .lkey = hca_mr_lkey(p.smr), .signaled = true };
	assert_int_equal(hca_post_send(p.src, &wr), 0);           /* a READY header, but not named: no msg.* */
	wr.ctl = &ready;
	assert_int_equal(hca_post_send(p.src, &wr), -EIO);        /* msg.ready; the stub fails it */
	wr.ctl = &bad;
	assert_int_equal(hca_post_send(p.src, &wr), 0);           /* a type out of range: no msg.* */
	const enum fault_site plain[] = { FAULT_SITE_POST_SEND_SEND, FAULT_SITE_POST_SEND };
	const enum fault_site msg[] = { fault_site_msg(WIRE_READY), FAULT_SITE_POST_SEND_SEND, FAULT_SITE_POST_SEND };
	assert_int_equal(stub_send(&h, 0, got), 2);
	assert_memory_equal(got, plain, sizeof plain);
	assert_int_equal(stub_send(&h, 1, got), 3);
	assert_memory_equal(got, msg, sizeof msg);
	assert_int_equal(stub_send(&h, 2, got), 2);
	assert_memory_equal(got, plain, sizeof plain);

	int asked = h.calls;
	hca_world_set_fault_hook(p.w, NULL);                      /* none: nothing is asked */
	assert_int_equal(hca_fault_alloc(p.w, VOCAB_SIDE_SRC), 0);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(h.calls, asked);
	pair_close(&p);
	char *log = tmplog_close(&t);
	assert_non_null(strstr(log, " src fault site=msg.ready side=src call=7 action=errno(EIO)\n"));
	free(log);
}

/* ---- setup calls: errno and delay ------------------------------------------------------------ */

static void run_setup_faults(evlog *ev)
{
	const char *rules[] = { "ep_create@src #1 -> delay(1ms)", "ep_create@src #2 -> errno(EHOSTUNREACH)",
				"ep_setup@src #1 -> delay(2ms)", "modify_qp@src #1 -> errno(EIO)",
				"modify_qp@src #2 -> delay(1ms)", "modify_qp@src #3 -> errno(EBUSY)",
				"modify_qp@src #4 -> delay(3ms)" };
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	struct hca_wc wc;
	fault_plan *plan;
	hca_ep *ep, *other = NULL;
	hca_world *w = plan_world(rules, 7, ev, &plan);

	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(clock_ns(w), VCLOCK_NS_PER_MS);                /* the delay passed first */
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &other), -EHOSTUNREACH);
	assert_null(other);
	/* PD/CQs/QP after 2 ms, then RESET -> INIT fails: nothing is left half set up */
	assert_int_equal(hca_ep_setup(ep, &caps), -EIO);
	assert_int_equal(clock_ns(w), 3 * VCLOCK_NS_PER_MS);
	assert_int_equal(hca_post_recv(ep, 1, 0, 0, 0), -EINVAL);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);                  /* INIT after 1 ms */
	assert_int_equal(clock_ns(w), 4 * VCLOCK_NS_PER_MS);
	assert_int_equal(hca_qp_to_error(ep), -EBUSY);                  /* modify_qp #3 */
	assert_int_equal(hca_post_recv(ep, 2, 0, 0, 0), 0);
	assert_int_equal(hca_poll(ep, HCA_CQ_RECV, &wc), 0);            /* the QP is not in error */
	assert_int_equal(hca_qp_to_error(ep), 0);                       /* #4: 3 ms later */
	assert_int_equal(clock_ns(w), 7 * VCLOCK_NS_PER_MS);
	assert_int_equal(hca_poll(ep, HCA_CQ_RECV, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(fault_plan_injected(plan), 7);
	hca_ep_destroy(ep);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
	fault_plan_free(plan);
}

static void test_setup_calls_fail_or_wait_as_planned(void **state)
{
	struct tmplog t;
	(void)state;

	run_setup_faults(NULL);
	tmplog_open(&t);
	run_setup_faults(t.ev);
	char *log = tmplog_close(&t);
	assert_non_null(strstr(log, " src ep_create addr=" ADDR " rc=-113\n"));
	assert_non_null(strstr(log, " src ep_setup send_wr=4 recv_wr=4 rc=-5\n"));
	assert_non_null(strstr(log, " src qp_to_error rc=-16\n"));
	assert_non_null(strstr(log, " src fault site=modify_qp side=src call=4 action=delay("));
	free(log);
}

/* ---- resource calls: delay, disconnect, qp_error --------------------------------------------- */

static void test_resource_call_side_effects(void **state)
{
	(void)state;
	const char *rules[] = { "reg_mr@src #2 -> delay(1ms)", "reg_mr@src #3 -> disconnect" };
	struct pair p;
	struct hca_cm_event ev;
	hca_mr *a, *b;
	pair_open(&p, rules, 2);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	uint64_t t0 = clock_ns(p.w);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)p.sbuf, 4096, 0, &a), 0);
	assert_true(clock_ns(p.w) >= t0 + VCLOCK_NS_PER_MS);
	/* the connection goes down first, then the registration happens all the same */
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)p.sbuf, 4096, 0, &b), 0);
	assert_int_equal(hca_ep_poll_event(p.dst, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_ESTABLISHED);              /* from the connect */
	assert_int_equal(hca_ep_poll_event(p.dst, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(write_wr(&p, 1, 0, 64), 0);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(hca_dereg_mr(a), 0);
	assert_int_equal(hca_dereg_mr(b), 0);
	pair_close(&p);
}

/* qp_error on an endpoint without a QP does nothing; the call then fails on its own merits. */
static void test_qp_error_needs_a_qp(void **state)
{
	(void)state;
	const char *rules[] = { "reg_mr@src -> qp_error" };
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	unsigned char buf[64];
	struct hca_wc wc;
	fault_plan *plan;
	hca_ep *ep;
	hca_mr *mr;
	hca_world *w = plan_world(rules, 1, NULL, &plan);

	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(hca_reg_mr(ep, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), -EINVAL);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(hca_post_recv(ep, 1, 0, 0, 0), 0);
	assert_int_equal(hca_reg_mr(ep, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), 0);
	assert_int_equal(hca_poll(ep, HCA_CQ_RECV, &wc), 1);            /* this time it had a QP */
	assert_int_equal(wc.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(fault_plan_injected(plan), 2);
	assert_int_equal(hca_dereg_mr(mr), 0);
	hca_ep_destroy(ep);
	hca_world_free(w);
	fault_plan_free(plan);
}

/* ---- CM events met while connecting ---------------------------------------------------------- */

/* An event(E) queued on the active side before it connects: what hca_connect returns. */
static int connect_after_event(const char *event)
{
	char rule[96];
	const char *rules[] = { rule };
	struct hca_qp_caps caps = { .max_send_wr = 8, .max_recv_wr = 8 };
	struct hca_conn_params cp = { .retry_count = 5 };
	struct hca_cm_event reply;
	struct pair p;
	int rc;

	snprintf(rule, sizeof(rule), "post_recv@src #1 -> event(%s)", event);
	memset(&p, 0, sizeof(p));
	p.w = plan_world(rules, 1, NULL, &p.plan);
	assert_int_equal(hca_world_add_progress(p.w, accept_progress, &p), 0);
	assert_int_equal(hca_listen(p.w, VOCAB_SIDE_DST, ADDR, &p.l), 0);
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, ADDR, &p.src), 0);
	assert_int_equal(hca_ep_setup(p.src, &caps), 0);
	assert_int_equal(hca_post_recv(p.src, 1, 0, 0, 0), 0);         /* RECVs may precede RTR */
	rc = hca_connect(p.src, &cp, TIMEOUT_NS, &reply);
	if (rc == 0)
		assert_int_equal(reply.type, HCA_CM_ESTABLISHED);
	pair_close(&p);
	return rc;
}

static void test_connect_ends_on_the_first_event_about_it(void **state)
{
	(void)state;
	assert_int_equal(connect_after_event("ADDR_ERROR"), -EHOSTUNREACH);
	assert_int_equal(connect_after_event("ROUTE_ERROR"), -EHOSTUNREACH);
	assert_int_equal(connect_after_event("UNREACHABLE"), -EHOSTUNREACH);
	assert_int_equal(connect_after_event("CONNECT_ERROR"), -ECONNABORTED);
	assert_int_equal(connect_after_event("REJECTED"), -ECONNREFUSED);
	assert_int_equal(connect_after_event("DISCONNECTED"), -ECONNRESET);
	assert_int_equal(connect_after_event("DEVICE_REMOVAL"), -ENODEV);
	/* events that are not about the connect are skipped */
	assert_int_equal(connect_after_event("TIMEWAIT_EXIT"), 0);
	assert_int_equal(connect_after_event("ADDR_RESOLVED"), 0);
}

static void test_cm_duplicate_delivers_twice(void **state)
{
	(void)state;
	const char *rules[] = { "cm.established@src -> duplicate" };
	struct pair p;
	struct hca_cm_event ev;
	pair_open(&p, rules, 1);              /* the connect consumed one copy */
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_ESTABLISHED);
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 0);
	assert_int_equal(hca_ep_poll_event(p.dst, &ev), 1);    /* the destination's: once */
	assert_int_equal(hca_ep_poll_event(p.dst, &ev), 0);
	pair_close(&p);
}

/* Injected events queue without limit (the queue grows), in order. */
static void test_injected_events_grow_the_event_queue(void **state)
{
	(void)state;
	const char *rules[] = { "reg_mr@src #2 *12 -> event(TIMEWAIT_EXIT)" };
	struct pair p;
	struct hca_cm_event ev;
	hca_mr *mr[12];
	pair_open(&p, rules, 1);
	for (int i = 0; i < 12; i++)
		assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)p.sbuf + (uint64_t)i * 64, 64, 0, &mr[i]), 0);
	for (int i = 0; i < 12; i++) {
		assert_int_equal(hca_ep_poll_event(p.src, &ev), 1);
		assert_int_equal(ev.type, HCA_CM_TIMEWAIT_EXIT);
	}
	assert_int_equal(hca_ep_poll_event(p.src, &ev), 0);
	for (int i = 0; i < 12; i++)
		assert_int_equal(hca_dereg_mr(mr[i]), 0);
	pair_close(&p);
}

/* ---- status faults: who dies --------------------------------------------------------------- */

static void test_local_status_leaves_the_responder_alone(void **state)
{
	(void)state;
	const char *rules[] = { "post_send.write@src #1 -> status(RETRY_EXC_ERR)" };
	struct pair p;
	struct hca_wc wc;
	pair_open(&p, rules, 1);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	assert_int_equal(write_wr(&p, 1, 0, 64), 0);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_RETRY_EXC_ERR);
	assert_int_equal(hca_wait(p.dst, HCA_CQ_RECV, VCLOCK_NS_PER_MS, &wc), 0);   /* not flushed */
	assert_int_equal(write_wr(&p, 2, 0, 64), 0);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

/* A responder-killing status with no peer left in the process kills only the own QP. */
static void test_remote_status_without_a_peer(void **state)
{
	(void)state;
	const char *rules[] = { "post_send.send@dst #1 -> status(REM_OP_ERR)" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(hca_dereg_mr(p.smr), 0);
	p.smr = NULL;
	hca_ep_destroy(p.src);
	p.src = NULL;
	struct hca_send_wr wr = { .wr_id = 9, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)p.dbuf,
				  .length = 8, .lkey = hca_mr_lkey(p.dmr), .signaled = true };
	assert_int_equal(hca_post_send(p.dst, &wr), 0);
	struct hca_wc wc = wait_wc(p.dst, HCA_CQ_SEND);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, HCA_WC_REM_OP_ERR);
	wr.wr_id = 10;
	assert_int_equal(hca_post_send(p.dst, &wr), 0);
	wc = wait_wc(p.dst, HCA_CQ_SEND);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.status, HCA_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

/* wc.recv status on two RECVs: both completions carry an error, in order; the QP dies at the
 * first one's time. */
static void test_wc_status_on_consecutive_recvs(void **state)
{
	(void)state;
	const char *rules[] = { "wc.recv@dst -> status(LOC_LEN_ERR)" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	assert_int_equal(post_dst_recv(&p, 41, 1024), 0);
	assert_int_equal(send_msg(&p, 1, 0, WIRE_READY, 0), 0);
	assert_int_equal(send_msg(&p, 2, 64, WIRE_READY, 0), 0);
	struct hca_wc a = wait_wc(p.dst, HCA_CQ_RECV), b = wait_wc(p.dst, HCA_CQ_RECV);
	assert_int_equal(a.wr_id, 40);
	assert_int_equal(a.status, HCA_WC_LOC_LEN_ERR);
	assert_int_equal(b.wr_id, 41);
	assert_int_not_equal(b.status, HCA_WC_SUCCESS);
	assert_true(a.t_ns <= b.t_ns);
	assert_int_equal(post_dst_recv(&p, 42, 0), 0);                 /* the QP is dead now */
	assert_int_equal(wait_wc(p.dst, HCA_CQ_RECV).status, HCA_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

/* A dropped RECV completion is never reported and frees its slot in the receive queue. */
static void test_wc_recv_drop_frees_the_slot(void **state)
{
	(void)state;
	const char *rules[] = { "wc.recv@dst #1 -> drop" };
	struct pair p;
	struct hca_wc wc;
	pair_open(&p, rules, 1);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	assert_int_equal(send_msg(&p, 1, 0, WIRE_READY, 0), 0);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(hca_wait(p.dst, HCA_CQ_RECV, VCLOCK_NS_PER_MS, &wc), 0);
	for (uint64_t i = 0; i < 8; i++)                                /* all 8 slots are free */
		assert_int_equal(post_dst_recv(&p, 50 + i, (uint32_t)i * 1024), 0);
	assert_int_equal(send_msg(&p, 2, 0, WIRE_READY, 0), 0);
	wc = wait_wc(p.dst, HCA_CQ_RECV);
	assert_int_equal(wc.wr_id, 50);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	pair_close(&p);
}

/* drop on a QP already in error: the WR completes as the dead QP would, flushed. */
static void test_drop_on_a_dead_qp_is_a_flush(void **state)
{
	(void)state;
	const char *rules[] = { "post_send.write@src -> drop" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(hca_qp_to_error(p.src), 0);
	assert_int_equal(write_wr(&p, 1, 0, 64), 0);
	struct hca_wc wc = wait_wc(p.src, HCA_CQ_SEND);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, HCA_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

/* ---- which SENDs are control messages -------------------------------------------------------- */

static uint64_t msg_calls(struct pair *p)
{
	uint64_t n = 0;

	for (uint32_t t = 0; t < WIRE_TYPE_COUNT; t++)
		n += fault_plan_calls(p->plan, fault_site_msg(t), FAULT_SIDE_SRC);
	return n;
}

/* A READY header (16 bytes) at offset off of the source buffer. */
static void send_msg_hdr_only(struct pair *p, uint32_t off, uint32_t type)
{
	struct wire_hdr h = { .type = type, .repeat = 1 };
	assert_int_equal(wire_hdr_encode(&h, p->sbuf + off, WIRE_HDR_BYTES), (int)WIRE_HDR_BYTES);
}

static int send_raw(struct pair *p, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct hca_send_wr wr = { .wr_id = wr_id, .opcode = HCA_WR_SEND, .local_addr = addr, .length = len,
				  .lkey = lkey, .signaled = true };
	return hca_post_send(p->src, &wr);
}

/* A SEND is counted under msg.TYPE only when its first 16 bytes lie in plain registered
 * memory (under its lkey) and hold a known type. */
static void test_msg_sites_need_a_readable_header(void **state)
{
	(void)state;
	struct pair p;
	hca_mr *later;
	struct wire_hdr h = { .len = 0, .type = 99, .repeat = 1 };
	uint64_t base;
	pair_open(&p, NULL, 0);
	base = (uint64_t)(uintptr_t)p.sbuf;
	/* an MR registered later is first in the list: the lookup must skip it by key */
	assert_int_equal(hca_reg_mr(p.src, base + 8192, 4096, 0, &later), 0);
	for (uint64_t i = 0; i < 6; i++)
		assert_int_equal(post_dst_recv(&p, 40 + i, (uint32_t)i * 1024), 0);
	assert_int_equal(send_msg(&p, 1, 0, WIRE_READY, 0), 0);         /* the reference: counted */
	assert_int_equal(msg_calls(&p), 1);
	assert_int_equal(send_raw(&p, 2, base, 8, hca_mr_lkey(p.smr)), 0);   /* shorter than a header */
	wire_hdr_encode(&h, p.sbuf + 4096, WIRE_HDR_BYTES);
	assert_int_equal(send_raw(&p, 3, base + 4096, WIRE_HDR_BYTES, hca_mr_lkey(p.smr)), 0);   /* type 99 */
	assert_int_equal(write_wr(&p, 4, 0, 64), 0);                    /* a WRITE is no message */
	for (int i = 0; i < 4; i++)
		assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(msg_calls(&p), 1);
	assert_int_equal(fault_plan_calls(p.plan, FAULT_SITE_POST_SEND_SEND, FAULT_SIDE_SRC), 3);
	/* a header in guest memory is never read (STAMP pages have no bytes), even when the
	 * guest is a BYTES one that has them */
	struct mem_block_spec spec[] = { { "pc.ram", 4 * 4096 } };
	mem *m;
	hca_mr *gmr;
	assert_int_equal(mem_new(4096, 1, spec, MEM_REPR_BYTES, 1, &m), 0);
	hca_ep_map_guest(p.src, m);
	wire_hdr_encode(&(struct wire_hdr){ .type = WIRE_READY, .repeat = 1 }, mem_block_ptr(m, 0),
			WIRE_HDR_BYTES);
	assert_int_equal(hca_reg_mr(p.src, mem_block_addr(m, 0), 4 * 4096, 0, &gmr), 0);
	assert_int_equal(send_raw(&p, 5, mem_block_addr(m, 0), WIRE_HDR_BYTES, hca_mr_lkey(gmr)), 0);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(msg_calls(&p), 1);
	assert_int_equal(send_msg(&p, 6, 0, WIRE_READY, 0), 0);         /* plain memory still is */
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_SUCCESS);
	assert_int_equal(msg_calls(&p), 2);
	/* headers the HCA will not read either: under an MR too small for one, before an MR,
	 * running past its end (the first kills the QP, the others are flushed) */
	hca_mr *tiny;
	send_msg_hdr_only(&p, 4096 + 2048, WIRE_READY);
	assert_int_equal(hca_reg_mr(p.src, base + 4096 + 2048, 8, 0, &tiny), 0);
	assert_int_equal(send_raw(&p, 7, base + 4096 + 2048, WIRE_HDR_BYTES, hca_mr_lkey(tiny)), 0);
	send_msg_hdr_only(&p, 8192 - 8, WIRE_READY);
	assert_int_equal(send_raw(&p, 8, base + 8192 - 8, WIRE_HDR_BYTES, hca_mr_lkey(later)), 0);
	send_msg_hdr_only(&p, 8192 + 4096 - 8, WIRE_READY);
	assert_int_equal(send_raw(&p, 9, base + 8192 + 4096 - 8, WIRE_HDR_BYTES, hca_mr_lkey(later)), 0);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_LOC_PROT_ERR);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(msg_calls(&p), 2);
	assert_int_equal(hca_dereg_mr(tiny), 0);
	assert_int_equal(hca_dereg_mr(gmr), 0);
	assert_int_equal(hca_dereg_mr(later), 0);
	pair_close(&p);
	mem_free(m);
}

/* ---- actions that cannot apply are logged as no-ops -------------------------------------------- */

/* corrupt(payload) of a message without payload: sent unchanged, logged fault_noop. */
static void run_corrupt_without_payload(evlog *ev)
{
	const char *rules[] = { "msg.ready -> corrupt(payload)" };
	struct pair p;
	struct wire_hdr h;
	pair_open_log(&p, rules, 1, ev);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	assert_int_equal(send_msg(&p, 1, 0, WIRE_READY, 0), 0);
	struct hca_wc wc = wait_wc(p.dst, HCA_CQ_RECV);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.byte_len, WIRE_HDR_BYTES);
	assert_int_equal(wire_hdr_decode(p.dbuf, WIRE_HDR_BYTES, &h), 0);
	assert_int_equal(h.type, WIRE_READY);
	assert_int_equal(h.len, 0);
	assert_int_equal(h.repeat, 1);
	assert_int_equal(fault_plan_injected(p.plan), 1);
	pair_close(&p);
}

/* duplicate with one free send-queue slot short (8 asked: 15 granted, as rxe): the original
 * goes, the copy does not. */
static void run_duplicate_on_a_full_queue(evlog *ev)
{
	const char *rules[] = { "msg.qemu_file@src -> duplicate" };
	struct pair p;
	pair_open_log(&p, rules, 1, ev);
	assert_int_equal(post_dst_recv(&p, 40, 0), 0);
	for (uint64_t i = 0; i < 14; i++)
		assert_int_equal(write_wr(&p, 100 + i, 0, 64), 0);
	assert_int_equal(send_msg(&p, 5, 4096, WIRE_QEMU_FILE, 4), 0);
	assert_int_equal(hca_ep_send_outstanding(p.src), 15);
	for (uint64_t i = 0; i < 14; i++)
		assert_int_equal(wait_wc(p.src, HCA_CQ_SEND).wr_id, 100 + i);
	struct hca_wc wc = wait_wc(p.src, HCA_CQ_SEND);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, VCLOCK_NS_PER_MS, &wc), 0);   /* no copy */
	assert_int_equal(wait_wc(p.dst, HCA_CQ_RECV).status, HCA_WC_SUCCESS);
	pair_close(&p);
}

/* alloc: migbed's own allocations fail as planned, per side, counted like any call. */
static void test_alloc_site(void **state)
{
	(void)state;
	const char *rules[] = { "alloc@src #2 -> errno(ENOMEM)" };
	fault_plan *plan;
	hca_world *w = plan_world(rules, 1, NULL, &plan);

	assert_int_equal(hca_fault_alloc(w, VOCAB_SIDE_SRC), 0);
	assert_int_equal(hca_fault_alloc(w, VOCAB_SIDE_DST), 0);
	assert_int_equal(hca_fault_alloc(w, VOCAB_SIDE_SRC), -ENOMEM);
	assert_int_equal(hca_fault_alloc(w, VOCAB_SIDE_SRC), 0);
	assert_int_equal(fault_plan_calls(plan, FAULT_SITE_ALLOC, FAULT_SIDE_SRC), 3);
	assert_int_equal(fault_plan_calls(plan, FAULT_SITE_ALLOC, FAULT_SIDE_DST), 1);
	hca_world_free(w);
	fault_plan_free(plan);
}

/* corrupt(wr_id) at a completion: the completion names a WR that was never posted (bits 16..29
 * set), with the status it had; the next one is intact. */
static void test_wc_corrupt_wr_id(void **state)
{
	(void)state;
	const char *rules[] = { "wc.write@src #1 -> corrupt(wr_id)" };
	struct pair p;
	pair_open(&p, rules, 1);
	assert_int_equal(write_wr(&p, 0x7, 0, 64), 0);
	assert_int_equal(write_wr(&p, 0x8, 64, 64), 0);
	struct hca_wc a = wait_wc(p.src, HCA_CQ_SEND), b = wait_wc(p.src, HCA_CQ_SEND);
	assert_int_equal(a.wr_id, 0x7 | (UINT64_C(0x3fff) << 16));
	assert_int_equal(a.status, HCA_WC_SUCCESS);
	assert_int_equal(b.wr_id, 0x8);
	assert_int_equal(hca_ep_send_outstanding(p.src), 0);
	pair_close(&p);
}

/* duplicate of a message the HCA refuses (QP not connected): refused once, not twice. */
static void test_duplicate_of_a_refused_send(void **state)
{
	(void)state;
	const char *rules[] = { "msg.ready@src -> duplicate" };
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	unsigned char buf[WIRE_HDR_BYTES];
	struct wire_hdr h = { .type = WIRE_READY, .repeat = 1 };
	fault_plan *plan;
	hca_ep *ep;
	hca_mr *mr;
	hca_world *w = plan_world(rules, 1, NULL, &plan);

	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(wire_hdr_encode(&h, buf, sizeof(buf)), (int)WIRE_HDR_BYTES);
	assert_int_equal(hca_reg_mr(ep, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), 0);
	const struct hca_ctl_msg msg = { .type = WIRE_READY, .corrupt = wire_corrupt };
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)buf,
				  .length = sizeof(buf), .lkey = hca_mr_lkey(mr), .signaled = true, .ctl = &msg };
	assert_int_equal(hca_post_send(ep, &wr), -EINVAL);
	assert_int_equal(hca_ep_send_outstanding(ep), 0);
	assert_int_equal(fault_plan_injected(plan), 1);
	assert_int_equal(hca_dereg_mr(mr), 0);
	hca_ep_destroy(ep);
	hca_world_free(w);
	fault_plan_free(plan);
}

static void test_inapplicable_actions_are_logged_noops(void **state)
{
	struct tmplog t;
	(void)state;

	run_corrupt_without_payload(NULL);
	run_duplicate_on_a_full_queue(NULL);
	tmplog_open(&t);
	run_corrupt_without_payload(t.ev);
	run_duplicate_on_a_full_queue(t.ev);
	char *log = tmplog_close(&t);
	assert_non_null(strstr(log, " src fault_noop action=corrupt reason=no_payload\n"));
	assert_non_null(strstr(log, " src fault_noop action=duplicate reason=send_queue_full\n"));
	free(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hook_sites_and_side),
		cmocka_unit_test(test_calls_counted_per_site_and_side),
		cmocka_unit_test(test_errno_fails_the_call_without_the_backend),
		cmocka_unit_test(test_status_completes_in_order_and_kills_both_qps),
		cmocka_unit_test(test_status_behind_in_flight_writes_kills_at_its_completion),
		cmocka_unit_test(test_drop_reports_success_and_delivers_nothing),
		cmocka_unit_test(test_wc_status_rewrites_and_kills_at_its_time),
		cmocka_unit_test(test_post_status_behind_a_wc_error_is_flushed),
		cmocka_unit_test(test_wc_delay_and_drop),
		cmocka_unit_test(test_duplicate_sends_twice_and_meets_rnr),
		cmocka_unit_test(test_corrupt_changes_the_header_the_peer_receives),
		cmocka_unit_test(test_delay_makes_a_message_arrive_later),
		cmocka_unit_test(test_side_effects_before_the_call),
		cmocka_unit_test(test_cm_drop_and_connect_errno),
		cmocka_unit_test(test_failed_dereg_is_released_at_teardown),
		cmocka_unit_test(test_setup_calls_fail_or_wait_as_planned),
		cmocka_unit_test(test_resource_call_side_effects),
		cmocka_unit_test(test_qp_error_needs_a_qp),
		cmocka_unit_test(test_connect_ends_on_the_first_event_about_it),
		cmocka_unit_test(test_cm_duplicate_delivers_twice),
		cmocka_unit_test(test_injected_events_grow_the_event_queue),
		cmocka_unit_test(test_local_status_leaves_the_responder_alone),
		cmocka_unit_test(test_remote_status_without_a_peer),
		cmocka_unit_test(test_wc_status_on_consecutive_recvs),
		cmocka_unit_test(test_wc_recv_drop_frees_the_slot),
		cmocka_unit_test(test_drop_on_a_dead_qp_is_a_flush),
		cmocka_unit_test(test_msg_sites_need_a_readable_header),
		cmocka_unit_test(test_inapplicable_actions_are_logged_noops),
		cmocka_unit_test(test_duplicate_of_a_refused_send),
		cmocka_unit_test(test_alloc_site),
		cmocka_unit_test(test_wc_corrupt_wr_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
