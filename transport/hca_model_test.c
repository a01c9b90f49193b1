/* SPDX-License-Identifier: MIT */
/* Unit tests of the simulated HCA (transport/hca_model.c) through the seam: connection
 * management, the error statuses and flush rules of docs/verbs-facts.md, who sees what, and
 * data really moving (plain buffers and guest memories). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/mem.h"
#include "transport/hca.h"

#define MIB (1024u * 1024u)
#define BUF_BYTES (4u * MIB)
#define MR_OFF MIB                    /* the destination MR: [1 MiB, 2 MiB) of its buffer */
#define CTL_OFF (3u * MIB)            /* RECV buffers live here, in a LOCAL_WRITE MR */
#define ADDR "model:7"
#define TIMEOUT_NS (10ull * VCLOCK_NS_PER_S)
#define SETTLE_NS (100ull * VCLOCK_NS_PER_MS)
#define FILL_SRC 0x55
#define FILL_DST 0xaa

struct conn {
	hca_world *w;
	hca_listener *l;
	hca_ep *src, *dst;
	struct hca_qp_caps caps;
	uint8_t connect_rnr, accept_rnr, retry;
	bool reject;
	struct hca_cm_event req, reply;
	unsigned char *sbuf, *dbuf;
	hca_mr *smr, *dmr, *dctl;
	hca_mr *extra;                /* a test's own MR, deregistered by conn_close */
};

static int accept_progress(void *arg)
{
	struct conn *c = arg;
	struct hca_conn_params cp = { .private_data = "ECHO1234", .private_data_len = 8,
				      .rnr_retry_count = c->accept_rnr, .responder_resources = 2 };
	hca_ep *ep;
	int rc;

	if (c->dst)
		return -1;
	rc = hca_listener_poll(c->l, &ep, &c->req);
	if (rc <= 0)
		return rc;
	c->dst = ep;
	if (c->reject) {
		assert_int_equal(hca_reject(ep), 0);
		return 1;
	}
	assert_int_equal(hca_ep_setup(ep, &c->caps), 0);
	assert_int_equal(hca_accept(ep, &cp), 0);
	return 1;
}

static int conn_connect(struct conn *c, const char *addr)
{
	struct hca_conn_params cp = { .private_data = "SRCCAPS!", .private_data_len = 8,
				      .initiator_depth = 2, .retry_count = c->retry,
				      .rnr_retry_count = c->connect_rnr };

	c->caps = (struct hca_qp_caps){ .max_send_wr = 16, .max_recv_wr = 8, .max_send_sge = 1,
					.max_recv_sge = 1, .cq_entries = 24 };
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &c->w), 0);
	assert_int_equal(hca_world_add_progress(c->w, accept_progress, c), 0);
	assert_int_equal(hca_listen(c->w, VOCAB_SIDE_DST, ADDR, &c->l), 0);
	assert_int_equal(hca_ep_create(c->w, VOCAB_SIDE_SRC, addr, &c->src), 0);
	assert_int_equal(hca_ep_setup(c->src, &c->caps), 0);
	return hca_connect(c->src, &cp, TIMEOUT_NS, &c->reply);
}

/* Connected, with buffers registered: src 4 MiB of FILL_SRC (LOCAL_WRITE); dst 4 MiB of
 * FILL_DST with a REMOTE_WRITE MR on [1, 2) MiB and a LOCAL_WRITE MR on [3, 4) MiB. */
static void conn_open(struct conn *c, uint8_t retry, uint8_t connect_rnr, uint8_t accept_rnr)
{
	struct hca_cm_event ev;

	memset(c, 0, sizeof(*c));
	c->retry = retry;
	c->connect_rnr = connect_rnr;
	c->accept_rnr = accept_rnr;
	assert_int_equal(conn_connect(c, ADDR), 0);
	assert_int_equal(hca_ep_poll_event(c->dst, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_ESTABLISHED);
	c->sbuf = malloc(BUF_BYTES);
	c->dbuf = malloc(BUF_BYTES);
	assert_non_null(c->sbuf);
	assert_non_null(c->dbuf);
	memset(c->sbuf, FILL_SRC, BUF_BYTES);
	memset(c->dbuf, FILL_DST, BUF_BYTES);
	assert_int_equal(hca_reg_mr(c->src, (uint64_t)(uintptr_t)c->sbuf, BUF_BYTES,
				    HCA_ACCESS_LOCAL_WRITE, &c->smr), 0);
	assert_int_equal(hca_reg_mr(c->dst, (uint64_t)(uintptr_t)c->dbuf + MR_OFF, MIB,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &c->dmr), 0);
	assert_int_equal(hca_reg_mr(c->dst, (uint64_t)(uintptr_t)c->dbuf + CTL_OFF, MIB,
				    HCA_ACCESS_LOCAL_WRITE, &c->dctl), 0);
}

static void conn_close(struct conn *c)
{
	hca_mr *mrs[] = { c->smr, c->dmr, c->dctl, c->extra };

	for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
		if (mrs[i])
			assert_int_equal(hca_dereg_mr(mrs[i]), 0);
	hca_ep_destroy(c->src);
	hca_ep_destroy(c->dst);
	hca_listener_close(c->l);
	assert_int_equal(hca_world_live_objects(c->w), 0);
	hca_world_free(c->w);
	free(c->sbuf);
	free(c->dbuf);
}

static uint64_t saddr(struct conn *c, uint64_t off) { return (uint64_t)(uintptr_t)c->sbuf + off; }
static uint64_t daddr(struct conn *c, uint64_t off) { return (uint64_t)(uintptr_t)c->dbuf + off; }

static void post_write(struct conn *c, uint64_t wr_id, uint64_t dst_off, uint32_t len, uint32_t rkey)
{
	struct hca_send_wr wr = { .wr_id = wr_id, .opcode = HCA_WR_RDMA_WRITE,
				  .local_addr = saddr(c, 0), .length = len, .lkey = hca_mr_lkey(c->smr),
				  .remote_addr = daddr(c, dst_off), .rkey = rkey, .signaled = true };
	assert_int_equal(hca_post_send(c->src, &wr), 0);
}

static void post_send_msg(hca_ep *ep, uint64_t wr_id, uint64_t addr, uint32_t len, hca_mr *mr)
{
	struct hca_send_wr wr = { .wr_id = wr_id, .opcode = HCA_WR_SEND, .local_addr = addr,
				  .length = len, .lkey = hca_mr_lkey(mr), .signaled = true };
	assert_int_equal(hca_post_send(ep, &wr), 0);
}

static void post_dst_recvs(struct conn *c, uint64_t first_wr_id, int n, uint32_t len)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(hca_post_recv(c->dst, first_wr_id + (uint64_t)i,
					       daddr(c, CTL_OFF + (uint64_t)i * 4096), len,
					       hca_mr_lkey(c->dctl)), 0);
}

static void post_src_recvs(struct conn *c, uint64_t first_wr_id, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(hca_post_recv(c->src, first_wr_id + (uint64_t)i,
					       saddr(c, 3 * MIB + (uint64_t)i * 4096), 4096,
					       hca_mr_lkey(c->smr)), 0);
}

/* Wait for the next completion on (ep, cq) and check it. */
static void expect_wc(hca_ep *ep, enum hca_cq_kind cq, uint64_t wr_id, int status)
{
	struct hca_wc wc;

	assert_int_equal(hca_wait(ep, cq, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_string_equal(hca_wc_status_name(wc.status), hca_wc_status_name(status));
}

/* Let time pass, then nothing may be on either CQ of ep nor among its CM events. */
static void expect_nothing(struct conn *c, hca_ep *ep)
{
	struct hca_wc wc;
	struct hca_cm_event ev;

	hca_sleep(c->w, SETTLE_NS);
	assert_int_equal(hca_poll(ep, HCA_CQ_SEND, &wc), 0);
	assert_int_equal(hca_poll(ep, HCA_CQ_RECV, &wc), 0);
	assert_int_equal(hca_ep_poll_event(ep, &ev), 0);
}

static bool all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* ---- connection management ---------------------------------------------------------------- */

static void test_connect_private_data(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 0, 0);
	/* padded as rdma_cm pads on RoCE; the first bytes are exact */
	assert_int_equal(c.req.type, HCA_CM_CONNECT_REQUEST);
	assert_int_equal(c.req.pdata_len, 56);
	assert_memory_equal(c.req.pdata, "SRCCAPS!", 8);
	assert_int_equal(c.req.pdata[8], 0);
	assert_int_equal(c.reply.type, HCA_CM_ESTABLISHED);
	assert_int_equal(c.reply.pdata_len, 196);
	assert_memory_equal(c.reply.pdata, "ECHO1234", 8);
	assert_string_equal(hca_ep_device(c.dst), "model0");
	/* distinct, deterministic keys: the first MR of a world gets the same keys every run */
	assert_int_equal(hca_mr_lkey(c.smr), 0x200);
	assert_int_equal(hca_mr_rkey(c.smr), 0x201);
	assert_int_not_equal(hca_mr_rkey(c.dmr), hca_mr_rkey(c.dctl));
	conn_close(&c);
}

static void test_connect_failures(void **state)
{
	struct conn c;
	hca_listener *dup;
	(void)state;

	memset(&c, 0, sizeof(c));
	assert_int_equal(conn_connect(&c, "model:nobody"), -EHOSTUNREACH);
	assert_int_equal(hca_listen(c.w, VOCAB_SIDE_DST, ADDR, &dup), -EADDRINUSE);
	assert_null(c.dst);
	conn_close(&c);

	memset(&c, 0, sizeof(c));
	c.reject = true;
	assert_int_equal(conn_connect(&c, ADDR), -ECONNREFUSED);
	assert_non_null(c.dst);
	conn_close(&c);
}

static void test_connect_times_out_without_acceptor(void **state)
{
	struct hca_conn_params cp = { .retry_count = 5 };
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	hca_world *w;
	hca_listener *l;
	hca_ep *ep;
	(void)state;

	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &w), 0);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, ADDR, &l), 0);     /* nobody polls it */
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(hca_connect(ep, &cp, 3000, NULL), -ETIMEDOUT);
	assert_int_equal(vclock_now_ns(hca_world_clock(w)), 3000);
	hca_ep_destroy(ep);                /* withdraws the request */
	hca_listener_close(l);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
}

/* ---- RDMA WRITE --------------------------------------------------------------------------- */

static void test_write_copies_exactly_the_range(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 0, 0);
	for (uint32_t i = 0; i < 8192; i++)
		c.sbuf[i] = (unsigned char)(i * 7);
	post_write(&c, 1, MR_OFF + 100, 8192, hca_mr_rkey(c.dmr));
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	assert_memory_equal(c.dbuf + MR_OFF + 100, c.sbuf, 8192);
	assert_true(all_bytes(c.dbuf, MR_OFF + 100, FILL_DST));
	assert_true(all_bytes(c.dbuf + MR_OFF + 100 + 8192, BUF_BYTES - MR_OFF - 100 - 8192, FILL_DST));
	/* a WRITE exactly to the last byte of the MR is in bounds */
	post_write(&c, 2, MR_OFF + MIB - 1, 1, hca_mr_rkey(c.dmr));
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	assert_int_equal(c.dbuf[MR_OFF + MIB - 1], c.sbuf[0]);
	conn_close(&c);
}

enum bad_write { BAD_SPAN, BAD_PAST, BAD_EDGE, BAD_KEY, BAD_LKEY, BAD_PD, BAD_ACCESS, BAD_DEREG };

/* A bad WRITE, then a valid WRITE and a SEND queued behind it
 * (docs/verbs-facts.md, 'WRITE outside the remote MR'). */
static void run_bad_write(enum bad_write kind)
{
	struct conn c;
	uint64_t off = MR_OFF;
	uint32_t len = 4096, rkey;

	conn_open(&c, 5, 0, 0);
	rkey = hca_mr_rkey(c.dmr);
	post_src_recvs(&c, 20, 2);
	post_dst_recvs(&c, 30, 4, 4096);
	switch (kind) {
	case BAD_SPAN: off = MR_OFF + MIB / 2; len = 2 * MIB; break;
	case BAD_PAST: off = MR_OFF + MIB + 4096; break;
	case BAD_EDGE: off = MR_OFF + MIB - 100; len = 200; break;
	case BAD_KEY: rkey = hca_mr_rkey(c.dmr) + 0x40; break;
	case BAD_LKEY: rkey = hca_mr_lkey(c.dmr); break;
	case BAD_PD:                       /* same range, same access, but the source's PD */
		assert_int_equal(hca_reg_mr(c.src, daddr(&c, MR_OFF), MIB,
					    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &c.extra), 0);
		rkey = hca_mr_rkey(c.extra);
		break;
	case BAD_ACCESS: rkey = hca_mr_rkey(c.dctl); off = CTL_OFF; break;
	case BAD_DEREG:
		assert_int_equal(hca_dereg_mr(c.dmr), 0);
		c.dmr = NULL;
		break;
	}
	post_write(&c, 1, off, len, rkey);
	post_write(&c, 2, MR_OFF, 4096, rkey);
	post_send_msg(c.src, 3, saddr(&c, 0), 64, c.smr);
	/* requester: the error, then every other outstanding WR flushed, each queue in order */
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_REM_ACCESS_ERR);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_WR_FLUSH_ERR);
	expect_wc(c.src, HCA_CQ_SEND, 3, HCA_WC_WR_FLUSH_ERR);
	expect_wc(c.src, HCA_CQ_RECV, 20, HCA_WC_WR_FLUSH_ERR);
	expect_wc(c.src, HCA_CQ_RECV, 21, HCA_WC_WR_FLUSH_ERR);
	/* responder: only flushed RECVs, no CM event */
	for (uint64_t i = 0; i < 4; i++)
		expect_wc(c.dst, HCA_CQ_RECV, 30 + i, HCA_WC_WR_FLUSH_ERR);
	expect_nothing(&c, c.dst);
	/* not one byte anywhere in the 4 MiB around the MR */
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	/* both QPs are in error: new WRs are accepted and flushed at once */
	post_send_msg(c.dst, 40, daddr(&c, CTL_OFF), 8, c.dctl);
	expect_wc(c.dst, HCA_CQ_SEND, 40, HCA_WC_WR_FLUSH_ERR);
	conn_close(&c);
}

static void test_write_out_of_bounds_span(void **state) { (void)state; run_bad_write(BAD_SPAN); }
static void test_write_out_of_bounds_past(void **state) { (void)state; run_bad_write(BAD_PAST); }
static void test_write_out_of_bounds_edge(void **state) { (void)state; run_bad_write(BAD_EDGE); }
static void test_write_wrong_rkey(void **state) { (void)state; run_bad_write(BAD_KEY); }
static void test_write_lkey_as_rkey(void **state) { (void)state; run_bad_write(BAD_LKEY); }
static void test_write_rkey_of_other_pd(void **state) { (void)state; run_bad_write(BAD_PD); }
static void test_write_without_remote_access(void **state) { (void)state; run_bad_write(BAD_ACCESS); }
static void test_write_deregistered_rkey(void **state) { (void)state; run_bad_write(BAD_DEREG); }

static void test_write_bad_local_key(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_src_recvs(&c, 20, 1);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_RDMA_WRITE, .local_addr = saddr(&c, 0),
				  .length = 64, .lkey = hca_mr_lkey(c.dctl),   /* the peer's lkey */
				  .remote_addr = daddr(&c, MR_OFF), .rkey = hca_mr_rkey(c.dmr),
				  .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_LOC_PROT_ERR);
	expect_wc(c.src, HCA_CQ_RECV, 20, HCA_WC_WR_FLUSH_ERR);
	expect_nothing(&c, c.dst);         /* a local error: the responder stays RTS */
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
}

/* ---- SEND / RECV -------------------------------------------------------------------------- */

static void test_send_lands_in_the_head_recv(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_dst_recvs(&c, 30, 2, 4096);
	memcpy(c.sbuf, "first", 5);
	post_send_msg(c.src, 1, saddr(&c, 0), 5, c.smr);
	memcpy(c.sbuf + 64, "second!", 7);
	post_send_msg(c.src, 2, saddr(&c, 64), 7, c.smr);
	assert_int_equal(hca_wait(c.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 30);
	assert_int_equal(wc.opcode, HCA_WC_OP_RECV);
	assert_int_equal(wc.byte_len, 5);
	assert_memory_equal(c.dbuf + CTL_OFF, "first", 5);
	assert_int_equal(hca_wait(c.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.byte_len, 7);
	assert_memory_equal(c.dbuf + CTL_OFF + 4096, "second!", 7);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	conn_close(&c);
}

/* HCA_CQ_ANY reads both CQs as one (QEMU <= 6.1's shared CQ): the earlier completion of
 * either, whichever CQ it is on; an invalid kind is refused. */
static void test_any_cq_reads_both_in_time_order(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_src_recvs(&c, 40, 1);
	post_write(&c, 5, MR_OFF, (uint32_t)MIB, hca_mr_rkey(c.dmr));   /* long on the wire */
	memcpy(c.dbuf + CTL_OFF, "hi", 2);
	post_send_msg(c.dst, 2, daddr(&c, CTL_OFF), 2, c.dctl);            /* short: arrives first */
	assert_int_equal(hca_wait(c.src, HCA_CQ_ANY, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 40);
	assert_int_equal(wc.opcode, HCA_WC_OP_RECV);
	uint64_t t_recv = wc.t_ns;
	assert_int_equal(hca_wait(c.src, HCA_CQ_ANY, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.opcode, HCA_WC_OP_RDMA_WRITE);
	assert_true(wc.t_ns > t_recv);
	assert_int_equal(hca_poll(c.src, HCA_CQ_ANY, &wc), 0);
	assert_int_equal(hca_poll(c.src, (enum hca_cq_kind)3, &wc), -EINVAL);
	assert_int_equal(hca_wait(c.src, (enum hca_cq_kind)3, TIMEOUT_NS, &wc), -EINVAL);
	expect_wc(c.dst, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	conn_close(&c);
}

static void test_send_without_recv_rnr_zero(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);            /* QEMU: rnr_retry 0 */
	post_src_recvs(&c, 20, 2);
	uint64_t t0 = vclock_now_ns(hca_world_clock(c.w));
	post_send_msg(c.src, 1, saddr(&c, 0), 64, c.smr);
	post_write(&c, 2, MR_OFF, 4096, hca_mr_rkey(c.dmr));
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, HCA_WC_RNR_RETRY_EXC_ERR);
	assert_true(wc.t_ns > t0);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_WR_FLUSH_ERR);
	expect_wc(c.src, HCA_CQ_RECV, 20, HCA_WC_WR_FLUSH_ERR);
	expect_wc(c.src, HCA_CQ_RECV, 21, HCA_WC_WR_FLUSH_ERR);
	/* the responder sees nothing and stays RTS: a RECV it posts now just waits */
	post_dst_recvs(&c, 30, 1, 4096);
	expect_nothing(&c, c.dst);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
}

/* Finding S3: the RNR NAK, not the post, moves the requester's QP to ERR (docs/verbs-facts.md,
 * 'SEND with no RECV posted': the responder sees nothing and stays RTS). A SEND the
 * peer posts before the NAK still lands in the requester's RECV; only one posted after it
 * meets the dead QP. The model failed that peer's SEND RETRY_EXC_ERR at once, before the
 * requester's own RNR error, and the run blamed the peer. */
static void test_send_rnr_peer_send_before_nak_lands(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_src_recvs(&c, 20, 1);
	post_send_msg(c.src, 1, saddr(&c, 0), 64, c.smr);             /* no RECV at dst: RNR */
	post_send_msg(c.dst, 2, daddr(&c, CTL_OFF), 8, c.dctl);       /* before the NAK */
	expect_wc(c.dst, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	expect_wc(c.src, HCA_CQ_RECV, 20, HCA_WC_SUCCESS);
	assert_true(all_bytes(c.sbuf + 3 * MIB, 8, FILL_DST));
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_string_equal(hca_wc_status_name(wc.status), "RNR_RETRY_EXC_ERR");
	/* from the NAK on, the requester's QP is in error: the peer's next SEND finds nobody */
	post_send_msg(c.dst, 3, daddr(&c, CTL_OFF), 8, c.dctl);
	expect_wc(c.dst, HCA_CQ_SEND, 3, HCA_WC_RETRY_EXC_ERR);
	conn_close(&c);
}

static void test_send_without_recv_rnr_seven_waits(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 0, 7);            /* the destination's accept gives the source rnr 7 */
	post_send_msg(c.src, 1, saddr(&c, 0), 64, c.smr);
	post_write(&c, 2, MR_OFF, 4096, hca_mr_rkey(c.dmr));
	expect_nothing(&c, c.src);
	assert_int_equal(hca_ep_send_outstanding(c.src), 2);
	/* the WRITE behind the waiting SEND has not happened either */
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	post_dst_recvs(&c, 30, 1, 4096);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_SUCCESS);
	assert_true(all_bytes(c.dbuf + MR_OFF, 4096, FILL_SRC));
	conn_close(&c);
}

static void test_rnr_retry_is_the_other_sides_value(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 7, 0);            /* connect says 7: that is the *destination's* rnr */
	post_send_msg(c.dst, 1, daddr(&c, CTL_OFF), 8, c.dctl);
	expect_nothing(&c, c.dst);         /* waits for a source RECV */
	post_src_recvs(&c, 20, 1);
	expect_wc(c.dst, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	expect_wc(c.src, HCA_CQ_RECV, 20, HCA_WC_SUCCESS);
	post_send_msg(c.src, 2, saddr(&c, 0), 8, c.smr);   /* the source got accept's 0 */
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_RNR_RETRY_EXC_ERR);
	conn_close(&c);
}

static void test_send_longer_than_recv(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_dst_recvs(&c, 30, 2, 64);
	post_src_recvs(&c, 20, 1);
	post_send_msg(c.src, 1, saddr(&c, 0), 100, c.smr);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_LOC_LEN_ERR);
	expect_wc(c.dst, HCA_CQ_RECV, 31, HCA_WC_WR_FLUSH_ERR);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_REM_INV_REQ_ERR);
	expect_wc(c.src, HCA_CQ_RECV, 20, HCA_WC_WR_FLUSH_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
}

static void test_recv_into_read_only_mr(void **state)
{
	struct conn c;
	hca_mr *ro;
	(void)state;

	conn_open(&c, 5, 0, 0);
	assert_int_equal(hca_reg_mr(c.dst, daddr(&c, 0), 4096, 0, &ro), 0);
	assert_int_equal(hca_post_recv(c.dst, 30, daddr(&c, 0), 4096, hca_mr_lkey(ro)), 0);
	post_send_msg(c.src, 1, saddr(&c, 0), 64, c.smr);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_LOC_PROT_ERR);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_REM_OP_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	assert_int_equal(hca_dereg_mr(ro), 0);
	conn_close(&c);
}

/* ---- the error state ---------------------------------------------------------------------- */

static void test_qp_to_error_flushes_in_posting_order(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	/* SENDs wait in an RNR loop (docs/verbs-facts.md, 'Modify to ERR') */
	conn_open(&c, 5, 0, 7);
	post_src_recvs(&c, 20, 3);
	for (uint64_t i = 1; i <= 4; i++)
		post_send_msg(c.src, i, saddr(&c, 0), 64, c.smr);
	assert_int_equal(hca_poll(c.src, HCA_CQ_SEND, &wc), 0);
	assert_int_equal(hca_qp_to_error(c.src), 0);
	for (uint64_t i = 0; i < 3; i++)
		expect_wc(c.src, HCA_CQ_RECV, 20 + i, HCA_WC_WR_FLUSH_ERR);
	for (uint64_t i = 1; i <= 4; i++)
		expect_wc(c.src, HCA_CQ_SEND, i, HCA_WC_WR_FLUSH_ERR);
	expect_nothing(&c, c.dst);         /* the peer sees nothing */
	/* later WRs are accepted and flushed at once */
	post_write(&c, 5, MR_OFF, 64, hca_mr_rkey(c.dmr));
	expect_wc(c.src, HCA_CQ_SEND, 5, HCA_WC_WR_FLUSH_ERR);
	post_src_recvs(&c, 23, 1);
	expect_wc(c.src, HCA_CQ_RECV, 23, HCA_WC_WR_FLUSH_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	/* the peer finds out when it sends: nobody ACKs */
	post_send_msg(c.dst, 40, daddr(&c, CTL_OFF), 8, c.dctl);
	expect_wc(c.dst, HCA_CQ_SEND, 40, HCA_WC_RETRY_EXC_ERR);
	conn_close(&c);
}

static void test_flush_is_visible_at_the_error_time(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_src_recvs(&c, 20, 1);
	uint64_t t0 = vclock_now_ns(hca_world_clock(c.w));
	post_write(&c, 1, MR_OFF + MIB, 64, hca_mr_rkey(c.dmr));   /* just past the end */
	/* the RECV flush does not overtake the error that caused it */
	assert_int_equal(hca_poll(c.src, HCA_CQ_RECV, &wc), 0);
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_REM_ACCESS_ERR);
	assert_true(wc.t_ns > t0);
	uint64_t t_err = wc.t_ns;
	assert_int_equal(hca_poll(c.src, HCA_CQ_RECV, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.t_ns, t_err);
	conn_close(&c);
}

/* ---- disconnect --------------------------------------------------------------------------- */

static void test_disconnect_delivery_rules(void **state)
{
	struct conn c;
	struct hca_cm_event ev;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_src_recvs(&c, 20, 1);
	post_dst_recvs(&c, 30, 1, 4096);
	assert_int_equal(hca_disconnect(c.src), 0);
	expect_wc(c.src, HCA_CQ_RECV, 20, HCA_WC_WR_FLUSH_ERR);   /* own QP to ERR at once */
	assert_int_equal(hca_ep_poll_event(c.dst, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(ev.status, 0);
	/* the initiator gets no DISCONNECTED of its own yet; the peer's RECVs are not flushed */
	expect_nothing(&c, c.src);
	expect_nothing(&c, c.dst);
	/* a sender to the disconnected side: nobody ACKs */
	post_send_msg(c.dst, 40, daddr(&c, CTL_OFF), 8, c.dctl);
	expect_wc(c.dst, HCA_CQ_SEND, 40, HCA_WC_RETRY_EXC_ERR);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_WR_FLUSH_ERR);
	/* the peer disconnects too: now the initiator gets its DISCONNECTED */
	assert_int_equal(hca_disconnect(c.dst), 0);
	assert_int_equal(hca_ep_poll_event(c.src, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(hca_ep_poll_event(c.dst, &ev), 0);
	assert_int_equal(hca_poll(c.dst, HCA_CQ_RECV, &wc), 0);
	conn_close(&c);
}

static void test_wait_reports_disconnect(void **state)
{
	struct conn c;
	struct hca_cm_event ev;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_dst_recvs(&c, 30, 1, 4096);
	assert_int_equal(hca_disconnect(c.src), 0);
	assert_int_equal(hca_wait(c.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), -ECONNRESET);
	assert_int_equal(hca_ep_poll_event(c.dst, &ev), 1);       /* still queued for the poller */
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(hca_wait(c.dst, HCA_CQ_RECV, 1000, &wc), 0);
	conn_close(&c);
}

static void test_destroy_without_disconnect(void **state)
{
	struct conn c;
	struct hca_cm_event ev;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_dst_recvs(&c, 30, 1, 4096);
	assert_int_equal(hca_dereg_mr(c.smr), 0);
	c.smr = NULL;
	hca_ep_destroy(c.src);
	c.src = NULL;
	assert_int_equal(hca_ep_poll_event(c.dst, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	expect_nothing(&c, c.dst);         /* its QP stays RTS, its RECV is still posted */
	post_send_msg(c.dst, 40, daddr(&c, CTL_OFF), 8, c.dctl);
	expect_wc(c.dst, HCA_CQ_SEND, 40, HCA_WC_RETRY_EXC_ERR);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_WR_FLUSH_ERR);
	conn_close(&c);
}

/* ---- guest memory ------------------------------------------------------------------------- */

#define PAGE 4096u
#define PAGES 64u

/* A connection whose source and destination each map a guest of the blocks spec[0..n). */
static void guest_pair(struct conn *c, size_t n, const struct mem_block_spec *spec, enum mem_repr repr,
		       mem **sm, mem **dm)
{
	conn_open(c, 5, 0, 0);
	assert_int_equal(mem_new(PAGE, n, spec, repr, 1, sm), 0);
	assert_int_equal(mem_new(PAGE, n, spec, repr, 2, dm), 0);
	hca_ep_map_guest(c->src, *sm);
	hca_ep_map_guest(c->dst, *dm);
}

static void run_guest_write(enum mem_repr repr)
{
	struct mem_block_spec spec[] = { { "pc.ram", PAGES * PAGE }, { "vga", 8 * PAGE } };
	struct conn c;
	mem *sm, *dm;
	hca_mr *gs, *gd;
	size_t bad_b;
	uint64_t bad_p;

	guest_pair(&c, 2, spec, repr, &sm, &dm);
	mem_write_pages(sm, 0, 0, PAGES);
	uint64_t sa = mem_block_addr(sm, 0), da = mem_block_addr(dm, 0);
	assert_int_equal(hca_reg_mr(c.src, sa, PAGES * PAGE, HCA_ACCESS_LOCAL_WRITE, &gs), 0);
	/* the destination exposes only the first half of its block */
	assert_int_equal(hca_reg_mr(c.dst, da, PAGES / 2 * PAGE,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &gd), 0);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_RDMA_WRITE, .local_addr = sa + 4 * PAGE,
				  .length = 8 * PAGE, .lkey = hca_mr_lkey(gs),
				  .remote_addr = da + 4 * PAGE, .rkey = hca_mr_rkey(gd), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	assert_int_equal(hca_world_stray_writes(c.w), 0);   /* inside block 0 */
	for (uint64_t p = 0; p < PAGES; p++) {
		bool copied = p >= 4 && p < 12;
		assert_int_equal(mem_page_stamp(dm, 0, p), copied ? mem_page_stamp(sm, 0, p) : 0);
	}
	/* a WRITE running past the registered half changes no page */
	wr = (struct hca_send_wr){ .wr_id = 2, .opcode = HCA_WR_RDMA_WRITE, .local_addr = sa + 16 * PAGE,
				   .length = 32 * PAGE, .lkey = hca_mr_lkey(gs),
				   .remote_addr = da + 16 * PAGE, .rkey = hca_mr_rkey(gd), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_REM_ACCESS_ERR);
	assert_true(mem_pages_zero(dm, 0, 12, PAGES - 12));
	assert_true(mem_pages_zero(dm, 1, 0, 8));
	assert_int_equal(mem_compare(sm, dm, &bad_b, &bad_p), 1);
	assert_int_equal(bad_b, 0);
	assert_int_equal(bad_p, 0);
	assert_int_equal(hca_dereg_mr(gs), 0);
	assert_int_equal(hca_dereg_mr(gd), 0);
	conn_close(&c);
	mem_free(sm);
	mem_free(dm);
}

static void test_guest_write_stamp(void **state) { (void)state; run_guest_write(MEM_REPR_STAMP); }
static void test_guest_write_bytes(void **state) { (void)state; run_guest_write(MEM_REPR_BYTES); }

static void test_stamp_unaligned_write_is_a_model_error(void **state)
{
	struct mem_block_spec spec[] = { { "pc.ram", 8 * PAGE } };
	struct conn c;
	mem *sm, *dm;
	hca_mr *gs, *gd;
	struct hca_wc wc;
	(void)state;

	guest_pair(&c, 1, spec, MEM_REPR_STAMP, &sm, &dm);
	uint64_t sa = mem_block_addr(sm, 0), da = mem_block_addr(dm, 0);
	assert_int_equal(hca_reg_mr(c.src, sa, 8 * PAGE, 0, &gs), 0);
	/* verbs: REMOTE_WRITE needs LOCAL_WRITE */
	assert_int_equal(hca_reg_mr(c.dst, da, 8 * PAGE, HCA_ACCESS_REMOTE_WRITE, &gd), -EINVAL);
	assert_int_equal(hca_reg_mr(c.dst, da, 8 * PAGE,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &gd), 0);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_RDMA_WRITE, .local_addr = sa + 100,
				  .length = PAGE, .lkey = hca_mr_lkey(gs), .remote_addr = da + 100,
				  .rkey = hca_mr_rkey(gd), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_LOC_QP_OP_ERR);
	assert_int_not_equal(wc.vendor_err, 0);
	assert_int_equal(hca_dereg_mr(gs), 0);
	assert_int_equal(hca_dereg_mr(gd), 0);
	conn_close(&c);
	mem_free(sm);
	mem_free(dm);
}

/* The multi-block oracle's count: a WRITE that an MR lets through but that runs past the end
 * of the destination's block (a chunk registered past a block's edge) is a stray write, and
 * one inside a block (the last page, a block of one page) is not. */
static void test_stray_write_past_a_block(void **state)
{
	struct mem_block_spec spec[] = { { "pc.ram", 8 * PAGE }, { "pc.bios", PAGE } };
	struct conn c;
	mem *sm, *dm;
	hca_mr *gs, *gd, *gb;
	struct hca_wc wc;
	(void)state;

	guest_pair(&c, 2, spec, MEM_REPR_STAMP, &sm, &dm);
	mem_write_pages(sm, 0, 0, 8);
	mem_write_pages(sm, 1, 0, 1);
	uint64_t sa = mem_block_addr(sm, 0), da = mem_block_addr(dm, 0);
	assert_int_equal(hca_reg_mr(c.src, sa, 8 * PAGE, 0, &gs), 0);
	/* the destination's MR runs two pages past its 8-page block */
	assert_int_equal(hca_reg_mr(c.dst, da, 10 * PAGE, HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &gd), 0);
	assert_int_equal(hca_reg_mr(c.dst, mem_block_addr(dm, 1), PAGE,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &gb), 0);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_RDMA_WRITE, .local_addr = sa + 7 * PAGE,
				  .length = PAGE, .lkey = hca_mr_lkey(gs), .remote_addr = da + 7 * PAGE,
				  .rkey = hca_mr_rkey(gd), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	assert_int_equal(hca_world_stray_writes(c.w), 0);
	wr.wr_id = 2;
	wr.local_addr = sa + 6 * PAGE;
	wr.remote_addr = da + 7 * PAGE;
	wr.length = 2 * PAGE;   /* the block's last page and one past it */
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_not_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(hca_world_stray_writes(c.w), 1);
	assert_int_equal(hca_dereg_mr(gs), 0);
	assert_int_equal(hca_dereg_mr(gd), 0);
	assert_int_equal(hca_dereg_mr(gb), 0);
	conn_close(&c);
	mem_free(sm);
	mem_free(dm);
}

/* ---- connection state errors -------------------------------------------------------------- */

/* A world with a listener nobody polls and an endpoint set up for it. */
static void lone_open(hca_world **w, hca_listener **l)
{
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, w), 0);
	assert_int_equal(hca_listen(*w, VOCAB_SIDE_DST, ADDR, l), 0);
}

static hca_ep *lone_ep(hca_world *w, bool setup)
{
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	hca_ep *ep;

	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	if (setup)
		assert_int_equal(hca_ep_setup(ep, &caps), 0);
	return ep;
}

/* rdma_cm's state rules: connect needs a QP and an idle active id; accept and reject need a
 * pending request; requests queue in order at the listener. */
static void test_connect_accept_reject_state_errors(void **state)
{
	struct hca_conn_params cp = { .retry_count = 5 };
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	struct hca_cm_event req, ev;
	hca_world *w;
	hca_listener *l;
	hca_ep *a, *b, *d, *p;
	(void)state;

	lone_open(&w, &l);
	a = lone_ep(w, false);
	assert_int_equal(hca_connect(a, &cp, 1000, NULL), -EINVAL);    /* no QP yet */
	assert_int_equal(hca_ep_setup(a, &caps), 0);
	assert_int_equal(hca_connect(a, &cp, 1000, NULL), -ETIMEDOUT); /* queued, unanswered */
	assert_int_equal(hca_connect(a, &cp, 1000, NULL), -EINVAL);    /* already connecting */
	b = lone_ep(w, true);
	assert_int_equal(hca_connect(b, &cp, 1000, NULL), -ETIMEDOUT);
	d = lone_ep(w, true);
	assert_int_equal(hca_connect(d, &cp, 1000, NULL), -ETIMEDOUT);
	hca_ep_destroy(b);                 /* withdraws the middle request of three */
	/* the first request is a's; d's stays queued behind it */
	assert_int_equal(hca_listener_poll(l, &p, &req), 1);
	assert_int_equal(req.type, HCA_CM_CONNECT_REQUEST);
	assert_int_equal(hca_accept(a, &cp), -EINVAL);                 /* an active id */
	assert_int_equal(hca_reject(a), -EINVAL);
	assert_int_equal(hca_accept(p, &cp), -EINVAL);                 /* no QP yet */
	assert_int_equal(hca_connect(p, &cp, 1000, NULL), -EINVAL);    /* a passive id */
	hca_ep_destroy(a);                 /* the requester gives up before the answer */
	assert_int_equal(hca_ep_setup(p, &caps), 0);
	assert_int_equal(hca_accept(p, &cp), -ECONNABORTED);
	assert_int_equal(hca_reject(p), 0);                            /* nobody left to tell */
	assert_int_equal(hca_ep_poll_event(p, &ev), 0);
	hca_ep_destroy(p);
	/* closing the listener rejects the request still queued */
	assert_int_equal(hca_ep_poll_event(d, &ev), 0);
	hca_listener_close(l);
	assert_int_equal(hca_ep_poll_event(d, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_REJECTED);
	hca_ep_destroy(d);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
}

/* Withdrawing queued requests keeps the queue's order: the head, then the tail. */
static void test_withdrawn_requests_leave_the_queue_in_order(void **state)
{
	struct hca_conn_params cp = { .retry_count = 5 };
	struct hca_cm_event req;
	hca_world *w;
	hca_listener *l, *l2;
	hca_ep *e[3], *p;
	(void)state;

	lone_open(&w, &l);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "model:other", &l2), 0);
	for (int i = 0; i < 3; i++) {
		e[i] = lone_ep(w, true);
		assert_int_equal(hca_connect(e[i], &cp, 1000, NULL), -ETIMEDOUT);
	}
	hca_ep_destroy(e[0]);              /* the head */
	hca_ep_destroy(e[2]);              /* the tail */
	assert_int_equal(hca_listener_wait(l, TIMEOUT_NS, &p, &req), 1);
	uint64_t t0 = vclock_now_ns(hca_world_clock(w));
	assert_int_equal(hca_listener_wait(l, 5000, &p, &req), 0);   /* only e[1]'s was left */
	assert_int_equal(vclock_now_ns(hca_world_clock(w)), t0 + 5000);
	hca_ep_destroy(p);                 /* never answered: e[1] is rejected */
	struct hca_cm_event ev;
	assert_int_equal(hca_ep_poll_event(e[1], &ev), 1);
	assert_int_equal(ev.type, HCA_CM_REJECTED);
	hca_ep_destroy(e[1]);
	hca_listener_close(l);             /* the older listener: not the head of the lists */
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, ADDR, &l), 0);   /* its address is free again */
	hca_listener_close(l);
	hca_listener_close(l2);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
}

/* Disconnect in every state: never connected is an error; rejected, twice, or after the peer
 * is gone is a no-op that still moves the own QP to error. */
static void test_disconnect_in_every_state(void **state)
{
	struct hca_cm_event req, ev;
	struct conn c;
	struct hca_wc wc;
	hca_world *w;
	hca_listener *l;
	hca_ep *a, *p;
	(void)state;

	lone_open(&w, &l);
	a = lone_ep(w, false);
	assert_int_equal(hca_disconnect(a), -EINVAL);                   /* never connected */
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	struct hca_conn_params cp = { .retry_count = 5 };
	assert_int_equal(hca_ep_setup(a, &caps), 0);
	assert_int_equal(hca_disconnect(a), -EINVAL);
	assert_int_equal(hca_connect(a, &cp, 1000, NULL), -ETIMEDOUT);
	assert_int_equal(hca_listener_poll(l, &p, &req), 1);
	assert_int_equal(hca_reject(p), 0);
	assert_int_equal(hca_disconnect(p), 0);         /* rejected, no QP: nothing to do */
	assert_int_equal(hca_ep_poll_event(a, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_REJECTED);
	hca_ep_destroy(p);
	hca_ep_destroy(a);
	hca_listener_close(l);
	hca_world_free(w);

	conn_open(&c, 5, 0, 0);
	post_dst_recvs(&c, 30, 1, 4096);
	assert_int_equal(hca_disconnect(c.src), 0);
	assert_int_equal(hca_disconnect(c.src), 0);     /* again: still fine, nothing new */
	assert_int_equal(hca_ep_poll_event(c.dst, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(hca_ep_poll_event(c.dst, &ev), 0);
	assert_int_equal(hca_dereg_mr(c.smr), 0);
	c.smr = NULL;
	hca_ep_destroy(c.src);             /* gone before the peer answers the disconnect */
	c.src = NULL;
	assert_int_equal(hca_disconnect(c.dst), 0);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(hca_ep_poll_event(c.dst, &ev), 0);
	assert_int_equal(hca_poll(c.dst, HCA_CQ_SEND, &wc), 0);
	conn_close(&c);
}

/* ---- data path edge cases ----------------------------------------------------------------- */

/* Zero-length work requests need no valid local key (verbs: no SGE to check). */
static void test_zero_length_send_and_write(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_dst_recvs(&c, 30, 1, 4096);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_SEND, .local_addr = 0, .length = 0,
				  .lkey = 0xdead, .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	assert_int_equal(hca_wait(c.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 30);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 0);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	wr = (struct hca_send_wr){ .wr_id = 2, .opcode = HCA_WR_RDMA_WRITE, .length = 0, .lkey = 0xdead,
				   .remote_addr = daddr(&c, MR_OFF), .rkey = hca_mr_rkey(c.dmr),
				   .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
}

/* retry_count 7: a WR facing a responder that is not RTS waits (rxe retries forever) until
 * its own QP is moved to error. */
static void test_retry_seven_waits_for_a_dead_responder(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 7, 0, 0);
	assert_int_equal(hca_qp_to_error(c.dst), 0);
	assert_int_equal(hca_qp_to_error(c.dst), 0);    /* already in error: nothing more */
	post_write(&c, 1, MR_OFF, 64, hca_mr_rkey(c.dmr));
	expect_nothing(&c, c.src);
	assert_int_equal(hca_ep_send_outstanding(c.src), 1);
	assert_int_equal(hca_qp_to_error(c.src), 0);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_WR_FLUSH_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
}

/* rnr_retry 7: a RECV releases exactly one waiting SEND; the next waits for the next RECV. */
static void test_parked_sends_resume_one_recv_at_a_time(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 7);
	memcpy(c.sbuf, "one", 3);
	memcpy(c.sbuf + 4096, "two", 3);
	post_send_msg(c.src, 1, saddr(&c, 0), 3, c.smr);
	post_send_msg(c.src, 2, saddr(&c, 4096), 3, c.smr);
	post_dst_recvs(&c, 30, 1, 4096);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_SUCCESS);
	assert_memory_equal(c.dbuf + CTL_OFF, "one", 3);
	expect_nothing(&c, c.src);         /* the second still waits */
	assert_int_equal(hca_ep_send_outstanding(c.src), 1);
	assert_int_equal(hca_post_recv(c.dst, 31, daddr(&c, CTL_OFF + 4096), 4096,
				       hca_mr_lkey(c.dctl)), 0);
	assert_int_equal(hca_wait(c.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 31);
	assert_memory_equal(c.dbuf + CTL_OFF + 4096, "two", 3);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	conn_close(&c);
}

/* A waiting SEND released by a RECV that is too short: both QPs go to error and the SENDs
 * still waiting behind it are flushed, in order. */
static void test_parked_send_meets_a_short_recv(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 0, 7);
	post_send_msg(c.src, 1, saddr(&c, 0), 100, c.smr);
	post_send_msg(c.src, 2, saddr(&c, 0), 10, c.smr);
	post_dst_recvs(&c, 30, 1, 64);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_REM_INV_REQ_ERR);
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_WR_FLUSH_ERR);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_LOC_LEN_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
}

/* Posting sends before the connection is up: the QP is not RTS, verbs refuses the WR. */
static void test_send_before_connect_is_refused(void **state)
{
	hca_world *w;
	hca_listener *l;
	hca_ep *ep;
	hca_mr *mr;
	struct hca_wc wc;
	unsigned char buf[64] = { 0 };
	(void)state;

	lone_open(&w, &l);
	ep = lone_ep(w, false);
	/* no PD before the QP exists */
	assert_int_equal(hca_reg_mr(ep, (uint64_t)(uintptr_t)buf, sizeof(buf), HCA_ACCESS_LOCAL_WRITE, &mr),
			 -EINVAL);
	assert_int_equal(hca_world_live_objects(w), 2);
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(hca_reg_mr(ep, (uint64_t)(uintptr_t)buf, sizeof(buf), HCA_ACCESS_LOCAL_WRITE, &mr), 0);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)buf,
				  .length = sizeof(buf), .lkey = hca_mr_lkey(mr), .signaled = true };
	assert_int_equal(hca_post_send(ep, &wr), -EINVAL);
	assert_int_equal(hca_ep_send_outstanding(ep), 0);
	assert_int_equal(hca_wait(ep, HCA_CQ_SEND, 1000, &wc), 0);      /* nothing was queued */
	/* RECVs may be posted in INIT (verbs allows it) */
	assert_int_equal(hca_post_recv(ep, 2, (uint64_t)(uintptr_t)buf, sizeof(buf), hca_mr_lkey(mr)), 0);
	assert_int_equal(hca_qp_to_error(ep), 0);
	assert_int_equal(hca_wait(ep, HCA_CQ_RECV, 1000, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(hca_dereg_mr(mr), 0);
	hca_ep_destroy(ep);
	hca_listener_close(l);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
}

/* ---- guest memory: transfers the memory model cannot represent ---------------------------- */

/* A connection whose source maps a one-block guest (8 pages) of `repr`, with an MR over the
 * block and the 8 pages after it (the model does not look behind a registration). */
static mem *guest_open(struct conn *c, enum mem_repr repr, hca_mr **gmr)
{
	struct mem_block_spec spec[] = { { "pc.ram", 8 * PAGE } };
	mem *m;

	conn_open(c, 5, 0, 0);
	assert_int_equal(mem_new(PAGE, 1, spec, repr, 1, &m), 0);
	mem_write_pages(m, 0, 0, 8);
	hca_ep_map_guest(c->src, m);
	assert_int_equal(hca_reg_mr(c->src, mem_block_addr(m, 0), 16 * PAGE, HCA_ACCESS_LOCAL_WRITE, gmr), 0);
	c->extra = *gmr;
	return m;
}

/* A WRITE from a range that starts in a guest block and runs past its end. */
static void test_write_straddling_a_guest_block_is_a_model_error(void **state)
{
	struct conn c;
	hca_mr *g;
	struct hca_wc wc;
	(void)state;

	mem *m = guest_open(&c, MEM_REPR_STAMP, &g);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_RDMA_WRITE,
				  .local_addr = mem_block_addr(m, 0) + 7 * PAGE, .length = 2 * PAGE,
				  .lkey = hca_mr_lkey(g), .remote_addr = daddr(&c, MR_OFF),
				  .rkey = hca_mr_rkey(c.dmr), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_LOC_QP_OP_ERR);
	assert_int_not_equal(wc.vendor_err, 0);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
	mem_free(m);
}

/* Plain bytes never go into a guest block (it would bypass the guest's page tracking). */
static void test_write_of_plain_bytes_into_a_guest_is_a_model_error(void **state)
{
	struct mem_block_spec spec[] = { { "pc.ram", 8 * PAGE } };
	struct conn c;
	struct hca_wc wc;
	hca_mr *gd;
	mem *dm, *sm;
	(void)state;

	conn_open(&c, 5, 0, 0);
	assert_int_equal(mem_new(PAGE, 1, spec, MEM_REPR_BYTES, 2, &dm), 0);
	assert_int_equal(mem_new(PAGE, 1, spec, MEM_REPR_STAMP, 3, &sm), 0);
	hca_ep_map_guest(c.dst, dm);
	hca_ep_map_guest(c.src, sm);       /* the source buffer lies outside its guest */
	assert_int_equal(hca_reg_mr(c.dst, mem_block_addr(dm, 0), 8 * PAGE,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &gd), 0);
	c.extra = gd;
	struct hca_send_wr wr = { .wr_id = 2, .opcode = HCA_WR_RDMA_WRITE, .local_addr = saddr(&c, 0),
				  .length = PAGE, .lkey = hca_mr_lkey(c.smr),
				  .remote_addr = mem_block_addr(dm, 0), .rkey = hca_mr_rkey(gd),
				  .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_LOC_QP_OP_ERR);
	assert_true(mem_pages_zero(dm, 0, 0, 8));
	conn_close(&c);
	mem_free(dm);
	mem_free(sm);
}

/* A SEND from a BYTES guest into a plain RECV buffer moves the page's real bytes. */
static void test_send_from_a_bytes_guest(void **state)
{
	struct conn c;
	hca_mr *g;
	(void)state;

	mem *m = guest_open(&c, MEM_REPR_BYTES, &g);
	post_dst_recvs(&c, 30, 1, 4096);
	uint64_t stamp = mem_page_stamp(m, 0, 2);
	assert_int_not_equal(stamp, 0);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_SEND,
				  .local_addr = mem_block_addr(m, 0) + 2 * PAGE, .length = 64,
				  .lkey = hca_mr_lkey(g), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	expect_wc(c.dst, HCA_CQ_RECV, 30, HCA_WC_SUCCESS);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	uint64_t got = 0;
	for (int i = 7; i >= 0; i--)       /* the first 8 bytes of a page: its stamp, little endian */
		got = got << 8 | c.dbuf[CTL_OFF + (size_t)i];
	assert_int_equal(got, stamp);
	assert_memory_equal(c.dbuf + CTL_OFF, (unsigned char *)mem_block_ptr(m, 0) + 2 * PAGE, 64);
	conn_close(&c);
	mem_free(m);
}

/* A SEND from a STAMP guest has no bytes to carry: the receiver's RECV fails (LOC_QP_OP_ERR,
 * with the model's vendor error), the sender sees a remote operation error. */
static void test_send_from_a_stamp_guest_is_a_model_error(void **state)
{
	struct conn c;
	hca_mr *g;
	struct hca_wc wc;
	(void)state;

	mem *m = guest_open(&c, MEM_REPR_STAMP, &g);
	post_dst_recvs(&c, 30, 1, 4096);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_SEND, .local_addr = mem_block_addr(m, 0),
				  .length = 64, .lkey = hca_mr_lkey(g), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	assert_int_equal(hca_wait(c.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 30);
	assert_int_equal(wc.status, HCA_WC_LOC_QP_OP_ERR);
	assert_int_not_equal(wc.vendor_err, 0);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_REM_OP_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
	mem_free(m);
}

/* The local range of a WR starting below its MR: a local protection error, nothing sent. */
static void test_local_range_below_the_mr(void **state)
{
	struct conn c;
	(void)state;

	conn_open(&c, 5, 0, 0);
	post_dst_recvs(&c, 30, 1, 4096);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_SEND, .local_addr = saddr(&c, 0) - 16,
				  .length = 64, .lkey = hca_mr_lkey(c.smr), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	expect_wc(c.src, HCA_CQ_SEND, 1, HCA_WC_LOC_PROT_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	conn_close(&c);
}

/* The destination's guest has two blocks with a gap between them; its MR spans block 0 and
 * the gap. A WRITE landing past block 0's end, or in the gap, cannot be represented. */
static void run_guest_gap_write(uint64_t dst_off, uint32_t len)
{
	struct mem_block_spec spec[] = { { "pc.ram", 8 * PAGE }, { "vga", 8 * PAGE } };
	struct conn c;
	struct hca_wc wc;
	hca_mr *gs, *gd;
	mem *sm, *dm;

	conn_open(&c, 5, 0, 0);
	assert_int_equal(mem_new(PAGE, 2, spec, MEM_REPR_STAMP, 1, &sm), 0);
	assert_int_equal(mem_new(PAGE, 2, spec, MEM_REPR_STAMP, 2, &dm), 0);
	mem_write_pages(sm, 0, 0, 8);
	hca_ep_map_guest(c.src, sm);
	hca_ep_map_guest(c.dst, dm);
	uint64_t sa = mem_block_addr(sm, 0), da = mem_block_addr(dm, 0);
	assert_true(mem_block_addr(dm, 1) > da + 16 * PAGE);          /* there is a gap */
	assert_int_equal(hca_reg_mr(c.src, sa, 8 * PAGE, 0, &gs), 0);
	assert_int_equal(hca_reg_mr(c.dst, da, 16 * PAGE, HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE,
				    &gd), 0);
	struct hca_send_wr wr = { .wr_id = 1, .opcode = HCA_WR_RDMA_WRITE, .local_addr = sa, .length = len,
				  .lkey = hca_mr_lkey(gs), .remote_addr = da + dst_off,
				  .rkey = hca_mr_rkey(gd), .signaled = true };
	assert_int_equal(hca_post_send(c.src, &wr), 0);
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_LOC_QP_OP_ERR);
	assert_int_not_equal(wc.vendor_err, 0);
	assert_true(mem_pages_zero(dm, 0, 0, 8));
	assert_int_equal(hca_dereg_mr(gs), 0);
	assert_int_equal(hca_dereg_mr(gd), 0);
	conn_close(&c);
	mem_free(sm);
	mem_free(dm);
}

static void test_write_past_a_guest_block_end(void **state)
{
	(void)state;
	run_guest_gap_write(7 * PAGE, 2 * PAGE);
}

static void test_write_into_the_gap_between_guest_blocks(void **state)
{
	(void)state;
	run_guest_gap_write(10 * PAGE, PAGE);
}

/* ---- On-Demand Paging (the field failure F2) ---------------------------------------------- */

#define ODP_BYTES (MIB / 2)           /* the test's ODP MR: page aligned, from 2 MiB into the destination */

static uint64_t odp_fault_ns(void)
{
	struct hca_cost cost;

	hca_cost_defaults(&cost);
	return cost.odp_fault_ns;
}

/* The destination offset of the test's ODP MR: the first page boundary from 2 MiB. */
static uint64_t odp_off(struct conn *c)
{
	return 2u * MIB + (4096 - daddr(c, 2u * MIB) % 4096) % 4096;
}

static void reg_odp(struct conn *c)
{
	assert_int_equal(hca_reg_mr(c->dst, daddr(c, odp_off(c)), ODP_BYTES,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_ON_DEMAND,
				    &c->extra), 0);
}

/* Post one WRITE now and wait for its completion: the status, and its time from the post. */
static uint64_t write_took_ns(struct conn *c, uint64_t wr_id, uint64_t dst_off, uint32_t len, hca_mr *mr,
			      int status)
{
	uint64_t t0 = vclock_now_ns(hca_world_clock(c->w));
	struct hca_wc wc;

	post_write(c, wr_id, dst_off, len, hca_mr_rkey(mr));
	assert_int_equal(hca_wait(c->src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_string_equal(hca_wc_status_name(wc.status), hca_wc_status_name(status));
	return wc.t_ns - t0;
}

/* QEMU's rnr_retry 0 (and 1..6, which the model treats as 0): the WRITE to a page the
 * responder has not faulted in fails with RNR_RETRY_EXC_ERR, nothing written; the
 * requester's QP goes to error, the responder's does not. */
static void odp_rnr_fails(uint8_t rnr)
{
	struct conn c;

	conn_open(&c, 5, 0, rnr);
	reg_odp(&c);
	write_took_ns(&c, 1, odp_off(&c), 4096, c.extra, HCA_WC_RNR_RETRY_EXC_ERR);
	post_write(&c, 2, MR_OFF, 4096, hca_mr_rkey(c.dmr));
	expect_wc(c.src, HCA_CQ_SEND, 2, HCA_WC_WR_FLUSH_ERR);
	assert_true(all_bytes(c.dbuf, BUF_BYTES, FILL_DST));
	post_dst_recvs(&c, 30, 1, 4096);   /* the responder stays RTS: its RECV just waits */
	expect_nothing(&c, c.dst);
	conn_close(&c);
}

static void test_odp_write_rnr_zero_fails(void **state)
{
	(void)state;
	odp_rnr_fails(0);
	odp_rnr_fails(6);
}

/* rnr_retry 7: the WRITE completes once its pages are present, later by the fault time of
 * each page it faulted in; a page faulted in once is present for every later WRITE; the
 * QP's next WR waits behind the stall. */
static void test_odp_write_rnr_seven_completes_later(void **state)
{
	struct conn c;
	struct hca_wc wc;
	(void)state;

	conn_open(&c, 5, 0, 7);
	reg_odp(&c);
	uint64_t base_ns = write_took_ns(&c, 1, MR_OFF, 8192, c.dmr, HCA_WC_SUCCESS);
	assert_int_equal(write_took_ns(&c, 2, odp_off(&c), 8192, c.extra, HCA_WC_SUCCESS), base_ns + 2 * odp_fault_ns());
	assert_true(all_bytes(c.dbuf + odp_off(&c), 8192, FILL_SRC));
	assert_int_equal(write_took_ns(&c, 3, odp_off(&c), 8192, c.extra, HCA_WC_SUCCESS), base_ns);
	/* pages 1 and 2: only page 2 is new */
	assert_int_equal(write_took_ns(&c, 4, odp_off(&c) + 4096, 8192, c.extra, HCA_WC_SUCCESS),
			 base_ns + odp_fault_ns());
	/* a WRITE faulting one page, then a pinned one: the second completes after the first */
	uint64_t t0 = vclock_now_ns(hca_world_clock(c.w));
	post_write(&c, 5, odp_off(&c) + 65536, 8192, hca_mr_rkey(c.extra));
	post_write(&c, 6, MR_OFF, 8192, hca_mr_rkey(c.dmr));
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.t_ns - t0, base_ns + 2 * odp_fault_ns());
	assert_int_equal(hca_wait(c.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 6);
	assert_true(wc.t_ns - t0 > base_ns + 2 * odp_fault_ns());
	conn_close(&c);
}

/* ibv_advise_mr prefetch: every page present, no RNR even with rnr_retry 0. An ODP
 * registration costs no page walk; the prefetch costs the walk a pinning one does. */
static void test_odp_prefetch_avoids_rnr(void **state)
{
	struct hca_cost cost;
	struct conn c;
	(void)state;

	hca_cost_defaults(&cost);
	conn_open(&c, 5, 0, 0);
	uint64_t t0 = vclock_now_ns(hca_world_clock(c.w));
	reg_odp(&c);
	uint64_t t1 = vclock_now_ns(hca_world_clock(c.w));
	assert_int_equal(hca_advise_mr(c.extra), 0);
	uint64_t t2 = vclock_now_ns(hca_world_clock(c.w));
	assert_int_equal(t1 - t0, cost.reg_fixed_ns);
	assert_int_equal(t2 - t1, (ODP_BYTES / 4096) * cost.reg_per_page_ns);
	uint64_t base_ns = write_took_ns(&c, 1, MR_OFF, 4096, c.dmr, HCA_WC_SUCCESS);
	assert_int_equal(write_took_ns(&c, 2, odp_off(&c) + ODP_BYTES - 4096, 4096, c.extra, HCA_WC_SUCCESS), base_ns);
	assert_true(all_bytes(c.dbuf + odp_off(&c) + ODP_BYTES - 4096, 4096, FILL_SRC));
	assert_int_equal(hca_advise_mr(c.dmr), -EINVAL);   /* not an ODP MR */
	assert_int_equal(hca_advise_mr(NULL), -EINVAL);
	conn_close(&c);
}

/* ODP pins nothing: the memlock limit does not count it. */
static void test_odp_mr_is_not_pinned(void **state)
{
	struct conn c;
	hca_mr *mr;
	(void)state;

	conn_open(&c, 5, 0, 0);
	hca_world_set_memlock(c.w, VOCAB_SIDE_DST, 4096);
	reg_odp(&c);
	assert_int_equal(hca_reg_mr(c.dst, daddr(&c, odp_off(&c)), MIB,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &mr), -ENOMEM);
	conn_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_private_data),
		cmocka_unit_test(test_connect_failures),
		cmocka_unit_test(test_connect_times_out_without_acceptor),
		cmocka_unit_test(test_write_copies_exactly_the_range),
		cmocka_unit_test(test_write_out_of_bounds_span),
		cmocka_unit_test(test_write_out_of_bounds_past),
		cmocka_unit_test(test_write_out_of_bounds_edge),
		cmocka_unit_test(test_write_wrong_rkey),
		cmocka_unit_test(test_write_lkey_as_rkey),
		cmocka_unit_test(test_write_rkey_of_other_pd),
		cmocka_unit_test(test_write_without_remote_access),
		cmocka_unit_test(test_write_deregistered_rkey),
		cmocka_unit_test(test_write_bad_local_key),
		cmocka_unit_test(test_send_lands_in_the_head_recv),
		cmocka_unit_test(test_any_cq_reads_both_in_time_order),
		cmocka_unit_test(test_send_without_recv_rnr_zero),
		cmocka_unit_test(test_send_rnr_peer_send_before_nak_lands),
		cmocka_unit_test(test_send_without_recv_rnr_seven_waits),
		cmocka_unit_test(test_rnr_retry_is_the_other_sides_value),
		cmocka_unit_test(test_send_longer_than_recv),
		cmocka_unit_test(test_recv_into_read_only_mr),
		cmocka_unit_test(test_qp_to_error_flushes_in_posting_order),
		cmocka_unit_test(test_flush_is_visible_at_the_error_time),
		cmocka_unit_test(test_disconnect_delivery_rules),
		cmocka_unit_test(test_wait_reports_disconnect),
		cmocka_unit_test(test_destroy_without_disconnect),
		cmocka_unit_test(test_guest_write_stamp),
		cmocka_unit_test(test_guest_write_bytes),
		cmocka_unit_test(test_stamp_unaligned_write_is_a_model_error),
		cmocka_unit_test(test_stray_write_past_a_block),
		cmocka_unit_test(test_connect_accept_reject_state_errors),
		cmocka_unit_test(test_withdrawn_requests_leave_the_queue_in_order),
		cmocka_unit_test(test_disconnect_in_every_state),
		cmocka_unit_test(test_zero_length_send_and_write),
		cmocka_unit_test(test_retry_seven_waits_for_a_dead_responder),
		cmocka_unit_test(test_parked_sends_resume_one_recv_at_a_time),
		cmocka_unit_test(test_parked_send_meets_a_short_recv),
		cmocka_unit_test(test_send_before_connect_is_refused),
		cmocka_unit_test(test_write_straddling_a_guest_block_is_a_model_error),
		cmocka_unit_test(test_write_of_plain_bytes_into_a_guest_is_a_model_error),
		cmocka_unit_test(test_send_from_a_bytes_guest),
		cmocka_unit_test(test_send_from_a_stamp_guest_is_a_model_error),
		cmocka_unit_test(test_local_range_below_the_mr),
		cmocka_unit_test(test_write_past_a_guest_block_end),
		cmocka_unit_test(test_write_into_the_gap_between_guest_blocks),
		cmocka_unit_test(test_odp_write_rnr_zero_fails),
		cmocka_unit_test(test_odp_write_rnr_seven_completes_later),
		cmocka_unit_test(test_odp_prefetch_avoids_rnr),
		cmocka_unit_test(test_odp_mr_is_not_pinned),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
