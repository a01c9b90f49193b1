/* SPDX-License-Identifier: MIT */
/* Unit tests of the seam's front end (transport/hca.c), run on the model backend: virtual
 * time and the cost model, visibility, waits and deadlines, progress functions, queue depth,
 * object accounting, names and the event log. */
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

#include "sim/evlog.h"
#include "transport/hca.h"
#include "transport/hca_backend.h"

#define MIB (1024u * 1024u)
#define BUF_BYTES (2u * MIB)
#define ADDR "model:test"
#define TIMEOUT_NS (10ull * VCLOCK_NS_PER_S)

/* Defaults: 12.5 GB/s, 2000 ns latency, 200 ns per WR. */
#define WIRE_1MIB_NS (200ull + 83886ull)  /* 1048576 * 1e9 / 12.5e9 = 83886.08 */
#define WIRE_64B_NS (200ull + 5ull)       /* 64 * 1e9 / 12.5e9 = 5.12 */
#define LATENCY_NS 2000ull

struct pair {
	hca_world *w;
	hca_listener *l;
	hca_ep *src, *dst;
	struct hca_qp_caps caps;
	unsigned char *sbuf, *dbuf;
	hca_mr *smr, *dmr;
	int accepts;
};

/* The destination's half of connection setup, run while the source waits in connect. */
static int accept_progress(void *arg)
{
	struct pair *p = arg;
	struct hca_cm_event req;
	struct hca_conn_params cp = { .private_data = "ECHO", .private_data_len = 4 };
	hca_ep *ep;
	int rc;

	if (p->dst)
		return -1;                /* finished: never called again */
	rc = hca_listener_poll(p->l, &ep, &req);
	if (rc <= 0)
		return rc;
	assert_int_equal(hca_ep_setup(ep, &p->caps), 0);
	assert_int_equal(hca_accept(ep, &cp), 0);
	p->dst = ep;
	p->accepts++;
	return 1;
}

static void pair_open(struct pair *p, const struct hca_cost *cost, evlog *ev, uint32_t send_wr,
		      uint32_t recv_wr)
{
	struct hca_conn_params cp = { .private_data = "HELLO", .private_data_len = 5, .retry_count = 5 };
	struct hca_cm_event reply;

	memset(p, 0, sizeof(*p));
	p->caps = (struct hca_qp_caps){ .max_send_wr = send_wr, .max_recv_wr = recv_wr,
					.max_send_sge = 1, .max_recv_sge = 1,
					.cq_entries = send_wr + recv_wr };
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, cost, NULL, ev, &p->w), 0);
	if (ev)
		evlog_set_clock(ev, hca_world_clock(p->w));   /* as the CLI does */
	assert_int_equal(hca_world_add_progress(p->w, accept_progress, p), 0);
	assert_int_equal(hca_listen(p->w, VOCAB_SIDE_DST, ADDR, &p->l), 0);
	assert_int_equal(hca_ep_create(p->w, VOCAB_SIDE_SRC, ADDR, &p->src), 0);
	assert_int_equal(hca_ep_setup(p->src, &p->caps), 0);
	assert_int_equal(hca_connect(p->src, &cp, TIMEOUT_NS, &reply), 0);
	assert_non_null(p->dst);
	p->sbuf = calloc(1, BUF_BYTES);
	p->dbuf = calloc(1, BUF_BYTES);
	assert_non_null(p->sbuf);
	assert_non_null(p->dbuf);
	assert_int_equal(hca_reg_mr(p->src, (uint64_t)(uintptr_t)p->sbuf, BUF_BYTES,
				    HCA_ACCESS_LOCAL_WRITE, &p->smr), 0);
	assert_int_equal(hca_reg_mr(p->dst, (uint64_t)(uintptr_t)p->dbuf, BUF_BYTES,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &p->dmr), 0);
}

static void pair_close(struct pair *p)
{
	if (p->smr)
		assert_int_equal(hca_dereg_mr(p->smr), 0);
	if (p->dmr)
		assert_int_equal(hca_dereg_mr(p->dmr), 0);
	hca_ep_destroy(p->src);
	hca_ep_destroy(p->dst);
	hca_listener_close(p->l);
	assert_int_equal(hca_world_live_objects(p->w), 0);
	hca_world_free(p->w);
	free(p->sbuf);
	free(p->dbuf);
}

static uint64_t now(struct pair *p)
{
	return vclock_now_ns(hca_world_clock(p->w));
}

static struct hca_send_wr write_wr(struct pair *p, uint64_t wr_id, uint64_t off, uint32_t len)
{
	return (struct hca_send_wr){ .wr_id = wr_id, .opcode = HCA_WR_RDMA_WRITE,
				     .local_addr = (uint64_t)(uintptr_t)p->sbuf + off, .length = len,
				     .lkey = hca_mr_lkey(p->smr),
				     .remote_addr = (uint64_t)(uintptr_t)p->dbuf + off,
				     .rkey = hca_mr_rkey(p->dmr), .signaled = true };
}

/* ---- cost model and visibility ------------------------------------------------------------ */

static void test_write_1mib_completes_at_cost(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	memset(p.sbuf, 0x5a, MIB);
	uint64_t t0 = now(&p);
	struct hca_send_wr wr = write_wr(&p, 0x11, 0, MIB);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_poll(p.src, HCA_CQ_SEND, &wc), 0);   /* not visible yet */
	assert_int_equal(now(&p), t0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 0x11);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.opcode, HCA_WC_OP_RDMA_WRITE);
	assert_int_equal(wc.t_ns, t0 + WIRE_1MIB_NS + LATENCY_NS);
	assert_int_equal(now(&p), t0 + WIRE_1MIB_NS + LATENCY_NS);
	assert_int_equal(p.dbuf[0], 0x5a);
	assert_int_equal(p.dbuf[MIB - 1], 0x5a);
	assert_int_equal(p.dbuf[MIB], 0);
	pair_close(&p);
}

static void test_two_writes_serialise_on_the_link(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	uint64_t t0 = now(&p);
	struct hca_send_wr a = write_wr(&p, 1, 0, MIB), b = write_wr(&p, 2, MIB, MIB);
	assert_int_equal(hca_post_send(p.src, &a), 0);
	assert_int_equal(hca_post_send(p.src, &b), 0);
	assert_int_equal(hca_ep_send_outstanding(p.src), 2);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.t_ns, t0 + WIRE_1MIB_NS + LATENCY_NS);
	assert_int_equal(hca_poll(p.src, HCA_CQ_SEND, &wc), 0);   /* the second is still on the wire */
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.t_ns, t0 + 2 * WIRE_1MIB_NS + LATENCY_NS);
	assert_int_equal(hca_ep_send_outstanding(p.src), 0);
	pair_close(&p);
}

static void test_custom_cost_is_used(void **state)
{
	struct hca_cost c;
	struct pair p;
	struct hca_wc wc;
	(void)state;

	hca_cost_defaults(&c);
	c.link_bytes_per_s = 1000000000ull;   /* 1 GB/s: 1 ns per byte */
	c.msg_latency_ns = 500;
	c.wr_overhead_ns = 0;
	pair_open(&p, &c, NULL, 8, 4);
	uint64_t t0 = now(&p);
	struct hca_send_wr wr = write_wr(&p, 7, 0, 4096);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.t_ns, t0 + 4096 + 500);
	pair_close(&p);
}

static void test_wait_times_out_at_the_deadline(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	uint64_t t0 = now(&p);
	assert_int_equal(hca_wait(p.src, HCA_CQ_RECV, 5000, &wc), 0);   /* nothing posted */
	assert_int_equal(now(&p), t0 + 5000);
	/* a completion later than the deadline stays invisible and the clock stops at it */
	struct hca_send_wr wr = write_wr(&p, 3, 0, MIB);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, 1000, &wc), 0);
	assert_int_equal(now(&p), t0 + 6000);
	assert_int_equal(hca_poll(p.src, HCA_CQ_SEND, &wc), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.t_ns, t0 + 5000 + WIRE_1MIB_NS + LATENCY_NS);
	pair_close(&p);
}

static void test_reg_mr_charges_the_clock(void **state)
{
	struct pair p;
	hca_mr *mr;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	uint64_t t0 = now(&p);
	/* page-aligned 1 MiB: 20000 + 256 * 60 */
	void *aligned = NULL;
	assert_int_equal(posix_memalign(&aligned, 4096, MIB), 0);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)aligned, MIB, 0, &mr), 0);
	assert_int_equal(now(&p) - t0, 20000 + 256 * 60);
	assert_int_equal(hca_mr_len(mr), MIB);
	assert_int_not_equal(hca_mr_lkey(mr), hca_mr_lkey(p.smr));
	assert_int_equal(hca_dereg_mr(mr), 0);
	assert_int_equal(now(&p) - t0, 20000 + 256 * 60 + 5000);
	/* 4098 bytes from the last byte of a page touch 3 pages (4097 would touch 2) */
	t0 = now(&p);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)aligned + 4095, 4098, 0, &mr), 0);
	assert_int_equal(now(&p) - t0, 20000 + 3 * 60);
	assert_int_equal(hca_dereg_mr(mr), 0);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)aligned, 0, 0, &mr), -EINVAL);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)aligned, 8, 0x100, &mr), -EINVAL);
	free(aligned);
	pair_close(&p);
}

/* ---- progress functions ------------------------------------------------------------------- */

#define PING_BYTES 64u
#define PING_ROUNDS 100

struct echo {
	struct pair *p;
	uint64_t replies;
	uint64_t last_rx_ns;
};

/* A reactive destination: every message received is answered with one of the same size. */
static int echo_progress(void *arg)
{
	struct echo *e = arg;
	hca_ep *dst = e->p->dst;
	uint64_t base = (uint64_t)(uintptr_t)e->p->dbuf;
	struct hca_wc wc;
	int did = 0;

	while (hca_poll(dst, HCA_CQ_SEND, &wc) == 1) {
		assert_int_equal(wc.status, HCA_WC_SUCCESS);
		did = 1;
	}
	if (hca_poll(dst, HCA_CQ_RECV, &wc) != 1)
		return did;
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.byte_len, PING_BYTES);
	e->last_rx_ns = vclock_now_ns(hca_world_clock(e->p->w));
	assert_int_equal(hca_post_recv(dst, 100, base, PING_BYTES, hca_mr_lkey(e->p->dmr)), 0);
	struct hca_send_wr wr = { .wr_id = 200, .opcode = HCA_WR_SEND, .local_addr = base + 4096,
				  .length = PING_BYTES, .lkey = hca_mr_lkey(e->p->dmr), .signaled = true };
	memcpy(e->p->dbuf + 4096, e->p->dbuf, PING_BYTES);
	assert_int_equal(hca_post_send(dst, &wr), 0);
	e->replies++;
	return 1;
}

/* A connected pair whose destination echoes; its first RECV is posted. */
static void echo_open(struct pair *p, struct echo *e)
{
	pair_open(p, NULL, NULL, 8, 4);
	*e = (struct echo){ .p = p };
	assert_int_equal(hca_world_add_progress(p->w, echo_progress, e), 0);
	assert_int_equal(hca_post_recv(p->dst, 100, (uint64_t)(uintptr_t)p->dbuf, PING_BYTES,
				       hca_mr_lkey(p->dmr)), 0);
}

/* The source posts a RECV for the echo, then a ping carrying the byte tag. */
static void ping(struct pair *p, unsigned char tag)
{
	uint64_t base = (uint64_t)(uintptr_t)p->sbuf;
	struct hca_send_wr wr = { .wr_id = 20, .opcode = HCA_WR_SEND, .local_addr = base,
				  .length = PING_BYTES, .lkey = hca_mr_lkey(p->smr), .signaled = true };

	assert_int_equal(hca_post_recv(p->src, 10, base + 8192, PING_BYTES, hca_mr_lkey(p->smr)), 0);
	p->sbuf[0] = tag;
	assert_int_equal(hca_post_send(p->src, &wr), 0);
}

static void test_ping_pong_runs_the_peer_progress(void **state)
{
	struct pair p;
	struct echo e;
	struct hca_wc wc;
	(void)state;

	echo_open(&p, &e);
	uint64_t t0 = now(&p);
	for (int i = 0; i < PING_ROUNDS; i++) {
		ping(&p, (unsigned char)i);
		assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
		assert_int_equal(hca_wait(p.src, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
		assert_int_equal(wc.status, HCA_WC_SUCCESS);
		assert_int_equal(wc.byte_len, PING_BYTES);
		assert_int_equal(p.sbuf[8192], (unsigned char)i);   /* the echo carried our byte */
	}
	assert_int_equal(e.replies, PING_ROUNDS);
	/* each round trip: two 64-byte messages, each WR overhead + 5 ns + latency */
	assert_int_equal(now(&p), t0 + PING_ROUNDS * 2 * (WIRE_64B_NS + LATENCY_NS));
	pair_close(&p);
}

static void test_sleep_runs_progress_at_arrival_time(void **state)
{
	struct pair p;
	struct echo e;
	struct hca_wc wc;
	(void)state;

	echo_open(&p, &e);
	uint64_t t0 = now(&p);
	ping(&p, 0x77);
	hca_sleep(p.w, 100000);
	assert_int_equal(now(&p), t0 + 100000);
	assert_int_equal(e.replies, 1);
	assert_int_equal(e.last_rx_ns, t0 + WIRE_64B_NS + LATENCY_NS);
	/* the reply is already visible to the source */
	assert_int_equal(hca_poll(p.src, HCA_CQ_SEND, &wc), 1);
	assert_int_equal(hca_poll(p.src, HCA_CQ_RECV, &wc), 1);
	assert_int_equal(wc.t_ns, t0 + 2 * (WIRE_64B_NS + LATENCY_NS));
	assert_int_equal(p.sbuf[8192], 0x77);
	pair_close(&p);
}

static int counting_progress(void *arg)
{
	int *calls = arg;

	(*calls)++;
	return -1;
}

static void test_finished_progress_is_not_called_again(void **state)
{
	struct pair p;
	struct hca_wc wc;
	int calls = 0;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	assert_int_equal(hca_world_add_progress(p.w, counting_progress, &calls), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_RECV, 1000, &wc), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_RECV, 1000, &wc), 0);
	assert_int_equal(calls, 1);
	pair_close(&p);
}

static void test_world_wait(void **state)
{
	struct pair p;
	struct echo e;
	struct hca_wc wc;
	(void)state;

	echo_open(&p, &e);
	uint64_t t0 = now(&p);
	assert_int_equal(hca_world_wait(p.w, 5000), 0);            /* nothing anywhere */
	assert_int_equal(now(&p), t0 + 5000);
	ping(&p, 1);
	/* the clock stops where something becomes visible: the ping at the destination */
	assert_int_equal(hca_world_wait(p.w, TIMEOUT_NS), 1);
	assert_int_equal(now(&p), t0 + 5000 + WIRE_64B_NS + LATENCY_NS);
	assert_int_equal(e.replies, 0);
	assert_int_equal(hca_world_wait(p.w, TIMEOUT_NS), 1);      /* the echo progress answers */
	assert_int_equal(e.replies, 1);
	assert_int_equal(hca_world_wait(p.w, TIMEOUT_NS), 1);      /* the echo arrives */
	assert_int_equal(now(&p), t0 + 5000 + 2 * (WIRE_64B_NS + LATENCY_NS));
	assert_int_equal(hca_poll(p.src, HCA_CQ_RECV, &wc), 1);
	assert_int_equal(hca_world_wait(p.w, 1000), 1);      /* the echo polls its send completion */
	uint64_t t1 = now(&p);
	/* the source's send completion is visible but unpolled: old news, not a reason to return */
	assert_int_equal(hca_world_wait(p.w, 1000), 0);
	assert_int_equal(now(&p), t1 + 1000);
	pair_close(&p);
}

/* ---- queue depth -------------------------------------------------------------------------- */

static void test_send_queue_depth(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	/* asked for 4: granted 7, as rxe (the smallest 2^k-1 >= 4) */
	pair_open(&p, NULL, NULL, 4, 2);
	assert_int_equal(hca_ep_caps(p.src)->max_send_wr, 7);
	assert_int_equal(hca_ep_caps(p.src)->max_recv_wr, 3);
	for (uint64_t i = 0; i < 7; i++) {
		struct hca_send_wr wr = write_wr(&p, i, i * 4096, 4096);
		assert_int_equal(hca_post_send(p.src, &wr), 0);
	}
	struct hca_send_wr extra = write_wr(&p, 7, 0, 4096);
	assert_int_equal(hca_post_send(p.src, &extra), -ENOMEM);
	/* completions that are due but not polled still occupy the queue */
	hca_sleep(p.w, VCLOCK_NS_PER_MS);
	assert_int_equal(hca_post_send(p.src, &extra), -ENOMEM);
	assert_int_equal(hca_ep_send_outstanding(p.src), 7);
	assert_int_equal(hca_poll(p.src, HCA_CQ_SEND, &wc), 1);
	assert_int_equal(wc.wr_id, 0);
	assert_int_equal(hca_post_send(p.src, &extra), 0);
	assert_int_equal(hca_post_send(p.src, &extra), -ENOMEM);
	for (int i = 0; i < 7; i++)
		assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 7);
	pair_close(&p);
}

static void test_recv_queue_depth(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	pair_open(&p, NULL, NULL, 4, 2);      /* recv: asked 2, granted 3 */
	uint64_t base = (uint64_t)(uintptr_t)p.sbuf;
	assert_int_equal(hca_post_recv(p.src, 1, base, 64, hca_mr_lkey(p.smr)), 0);
	assert_int_equal(hca_post_recv(p.src, 2, base + 64, 64, hca_mr_lkey(p.smr)), 0);
	assert_int_equal(hca_post_recv(p.src, 3, base + 128, 64, hca_mr_lkey(p.smr)), 0);
	assert_int_equal(hca_post_recv(p.src, 4, base + 192, 64, hca_mr_lkey(p.smr)), -ENOMEM);
	/* a flushed RECV frees its slot once polled */
	assert_int_equal(hca_qp_to_error(p.src), 0);
	assert_int_equal(hca_post_recv(p.src, 4, base + 192, 64, hca_mr_lkey(p.smr)), -ENOMEM);
	assert_int_equal(hca_poll(p.src, HCA_CQ_RECV, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(hca_post_recv(p.src, 4, base + 192, 64, hca_mr_lkey(p.smr)), 0);
	pair_close(&p);
}

/* A source chunk MR as QEMU registers it (access 0): the peer's RDMA WRITE into it fails with
 * REM_ACCESS_ERR, while the source's own WRITE from it (a local read) goes through. */
static void test_access_0_mr_refuses_remote_write(void **state)
{
	struct pair p;
	struct hca_wc wc;
	hca_mr *src0;
	(void)state;

	pair_open(&p, NULL, NULL, 4, 2);
	assert_int_equal(hca_reg_mr(p.src, (uint64_t)(uintptr_t)p.sbuf + 8192, 4096, 0, &src0), 0);
	struct hca_send_wr own = write_wr(&p, 1, 8192, 4096);
	own.lkey = hca_mr_lkey(src0);
	assert_int_equal(hca_post_send(p.src, &own), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	struct hca_send_wr into = { .wr_id = 2, .opcode = HCA_WR_RDMA_WRITE,
				    .local_addr = (uint64_t)(uintptr_t)p.dbuf, .length = 4096,
				    .lkey = hca_mr_lkey(p.dmr),
				    .remote_addr = (uint64_t)(uintptr_t)p.sbuf + 8192,
				    .rkey = hca_mr_rkey(src0), .signaled = true };
	assert_int_equal(hca_post_send(p.dst, &into), 0);
	assert_int_equal(hca_wait(p.dst, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, HCA_WC_REM_ACCESS_ERR);
	assert_int_equal(hca_dereg_mr(src0), 0);
	pair_close(&p);
}

/* The model grants what rxe grants: the smallest 2^k - 1 >= the request. */
static void test_model_granted_depth(void **state)
{
	(void)state;
	assert_int_equal(hca_model_granted_depth(1), 1);
	assert_int_equal(hca_model_granted_depth(3), 3);
	assert_int_equal(hca_model_granted_depth(4), 7);
	assert_int_equal(hca_model_granted_depth(511), 511);
	assert_int_equal(hca_model_granted_depth(512), 1023);
	assert_int_equal(hca_model_granted_depth(1023), 1023);
	assert_int_equal(hca_model_granted_depth(1024), 2047);
}

static void test_bad_arguments(void **state)
{
	struct pair p;
	struct hca_wc wc;
	hca_world *w;
	hca_ep *ep;
	(void)state;

	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(hca_world_new((enum hca_backend_kind)42, NULL, NULL, NULL, &w), -EINVAL);
	pair_open(&p, NULL, NULL, 4, 2);
	struct hca_send_wr wr = write_wr(&p, 1, 0, 64);
	wr.signaled = false;
	assert_int_equal(hca_post_send(p.src, &wr), -EINVAL);
	assert_int_equal(hca_ep_send_outstanding(p.src), 0);
	assert_int_equal(hca_ep_create(p.w, (enum vocab_side)VOCAB_SIDE_COUNT, ADDR, &ep), -EINVAL);
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, "", &ep), -EINVAL);
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(hca_poll(ep, HCA_CQ_SEND, &wc), -EINVAL);    /* not set up */
	assert_int_equal(hca_post_recv(ep, 1, 0, 0, 0), -EINVAL);
	assert_int_equal(hca_ep_setup(p.src, &p.caps), -EINVAL);      /* twice */
	hca_ep_destroy(ep);
	pair_close(&p);
}


/* ---- accounting and names ----------------------------------------------------------------- */

static void test_live_objects(void **state)
{
	struct pair p;
	(void)state;

	pair_open(&p, NULL, NULL, 4, 2);
	assert_int_equal(hca_world_live_objects(p.w), 1 + 2 + 2);    /* listener, eps, MRs */
	assert_int_equal(hca_dereg_mr(p.smr), 0);
	p.smr = NULL;
	assert_int_equal(hca_world_live_objects(p.w), 4);
	assert_string_equal(hca_world_backend_name(p.w), "model");
	assert_int_equal(hca_world_kind(p.w), HCA_BACKEND_MODEL);
	assert_string_equal(hca_ep_device(p.src), "model0");
	assert_int_equal(hca_ep_side(p.dst), VOCAB_SIDE_DST);
	assert_int_equal(hca_ep_side(p.src), VOCAB_SIDE_SRC);
	pair_close(&p);                    /* asserts 0 after teardown */
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(hca_wc_status_str(HCA_WC_SUCCESS), "success");
	assert_string_equal(hca_wc_status_str(HCA_WC_LOC_LEN_ERR), "local length error");
	assert_string_equal(hca_wc_status_str(HCA_WC_LOC_QP_OP_ERR), "local QP operation error");
	assert_string_equal(hca_wc_status_str(HCA_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	assert_string_equal(hca_wc_status_str(HCA_WC_REM_ACCESS_ERR), "remote access error");
	assert_string_equal(hca_wc_status_str(HCA_WC_RETRY_EXC_ERR), "transport retry counter exceeded");
	assert_string_equal(hca_wc_status_str(HCA_WC_RNR_RETRY_EXC_ERR), "RNR retry counter exceeded");
	assert_string_equal(hca_wc_status_str(HCA_WC_GENERAL_ERR), "general error");
	assert_string_equal(hca_wc_status_str(99), "unknown");
	assert_string_equal(hca_wc_status_name(HCA_WC_REM_ACCESS_ERR), "REM_ACCESS_ERR");
	assert_string_equal(hca_wc_status_name(HCA_WC_RNR_RETRY_EXC_ERR), "RNR_RETRY_EXC_ERR");
	assert_string_equal(hca_wc_status_name(-1), "UNKNOWN");
	assert_string_equal(hca_cm_event_name(HCA_CM_DISCONNECTED), "RDMA_CM_EVENT_DISCONNECTED");
	assert_string_equal(hca_cm_event_name(HCA_CM_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
	assert_string_equal(hca_cm_event_name(HCA_CM_REJECTED), "RDMA_CM_EVENT_REJECTED");
	assert_string_equal(hca_cm_event_name(77), "UNKNOWN EVENT");

	struct hca_cost c;
	hca_cost_defaults(&c);
	assert_int_equal(c.link_bytes_per_s, 12500000000ull);
	assert_int_equal(c.msg_latency_ns, 2000);
	assert_int_equal(c.wr_overhead_ns, 200);
	assert_int_equal(c.reg_fixed_ns, 20000);
	assert_int_equal(c.reg_per_page_ns, 60);
	assert_int_equal(c.dereg_fixed_ns, 5000);
}

/* ---- the event log ------------------------------------------------------------------------ */

/* One small scenario with its log written to path. */
static void logged_run(const char *path)
{
	static const vclock zero_clock;
	struct pair p;
	struct hca_wc wc;
	evlog *ev;

	assert_int_equal(evlog_open(path, &zero_clock, &ev), 0);
	pair_open(&p, NULL, ev, 4, 2);
	struct hca_send_wr wr = write_wr(&p, 0x42, 0, MIB);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	wr.rkey ^= 0x10;                   /* some other key: remote access error */
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(evlog_count_event(ev, "post_send"), 2);
	assert_int_equal(evlog_count_event(ev, "wc"), 2);
	pair_close(&p);                    /* logs dereg_mr, ep_destroy, listener_close */
	assert_int_equal(evlog_close(ev), 0);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = calloc(1, 1 << 16);

	assert_non_null(f);
	assert_non_null(s);
	size_t n = fread(s, 1, (1 << 16) - 1, f);
	assert_true(n > 0);
	fclose(f);
	return s;
}

static void test_log_lines_are_deterministic(void **state)
{
	char a[] = "/tmp/hca_test_log_a_XXXXXX", b[] = "/tmp/hca_test_log_b_XXXXXX";
	int fa = mkstemp(a), fb = mkstemp(b);
	(void)state;

	assert_true(fa >= 0 && fb >= 0);
	close(fa);
	close(fb);
	logged_run(a);
	logged_run(b);
	char *la = slurp(a), *lb = slurp(b);
	unlink(a);
	unlink(b);
	assert_string_equal(la, lb);      /* no pointers or wall time in the log */
	assert_non_null(strstr(la, " src post_send op=write wr_id=0x42 len=1048576 rkey=0x"));
	assert_non_null(strstr(la, " src wc wr_id=0x42 op=write status=SUCCESS len=1048576\n"));
	assert_non_null(strstr(la, " src wc wr_id=0x42 op=write status=REM_ACCESS_ERR len=1048576\n"));
	assert_non_null(strstr(la, " dst dereg_mr addr=* len=2097152 rkey=0x"));
	assert_non_null(strstr(la, "0.000000000 dst listen addr=model:test rc=0\n"));
	assert_null(strstr(la, "0.000000000 src wc "));     /* completions carry virtual time */
	free(la);
	free(lb);
}

/* ---- argument validation ------------------------------------------------------------------ */

static int idle_progress(void *arg)
{
	(void)arg;
	return 0;
}

/* Every entry point refuses what it cannot use with -EINVAL (or a neutral value), touches
 * nothing, and the objects stay usable. Endpoints and listeners: */
static void test_endpoint_calls_validate_their_arguments(void **state)
{
	struct pair p;
	struct hca_wc wc;
	struct hca_cost zero_link;
	hca_world *w = NULL;
	hca_listener *l = NULL;
	hca_ep *ep = NULL;
	(void)state;

	hca_cost_defaults(&zero_link);
	zero_link.link_bytes_per_s = 0;    /* would divide by zero */
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, &zero_link, NULL, NULL, &w), -EINVAL);
	assert_null(w);
	pair_open(&p, NULL, NULL, 4, 2);
	assert_int_equal(hca_world_add_progress(NULL, idle_progress, NULL), -EINVAL);
	assert_int_equal(hca_world_add_progress(p.w, NULL, NULL), -EINVAL);

	/* sides are the migration's (vocab/vocab.h), addresses non-empty tokens */
	const int bad_sides[] = { -1, VOCAB_SIDE_COUNT, 255 };
	for (size_t i = 0; i < sizeof(bad_sides) / sizeof(bad_sides[0]); i++) {
		assert_int_equal(hca_ep_create(p.w, (enum vocab_side)bad_sides[i], ADDR, &ep), -EINVAL);
		assert_int_equal(hca_listen(p.w, (enum vocab_side)bad_sides[i], "model:x", &l), -EINVAL);
	}
	const char *bad_addrs[] = { NULL, "", "model: 1" };
	for (size_t i = 0; i < sizeof(bad_addrs) / sizeof(bad_addrs[0]); i++) {
		assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, bad_addrs[i], &ep), -EINVAL);
		assert_int_equal(hca_listen(p.w, VOCAB_SIDE_DST, bad_addrs[i], &l), -EINVAL);
	}
	assert_int_equal(hca_ep_create(NULL, VOCAB_SIDE_SRC, ADDR, &ep), -EINVAL);
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, ADDR, NULL), -EINVAL);
	assert_int_equal(hca_listen(NULL, VOCAB_SIDE_DST, "model:x", &l), -EINVAL);
	assert_int_equal(hca_listen(p.w, VOCAB_SIDE_DST, "model:x", NULL), -EINVAL);
	assert_null(ep);
	assert_null(l);
	assert_int_equal(hca_world_live_objects(p.w), 5);

	/* queue sizes: 1 .. 65536 WRs each */
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_string_equal(hca_ep_device(ep), "");                    /* no device before setup */
	struct hca_qp_caps bad_caps[] = { { .max_send_wr = 0, .max_recv_wr = 4 },
					  { .max_send_wr = 65537, .max_recv_wr = 4 },
					  { .max_send_wr = 4, .max_recv_wr = 0 },
					  { .max_send_wr = 4, .max_recv_wr = 65537 } };
	for (size_t i = 0; i < sizeof(bad_caps) / sizeof(bad_caps[0]); i++)
		assert_int_equal(hca_ep_setup(ep, &bad_caps[i]), -EINVAL);
	assert_int_equal(hca_ep_setup(ep, NULL), -EINVAL);
	assert_int_equal(hca_ep_setup(NULL, &p.caps), -EINVAL);
	/* not set up: no data path */
	struct hca_send_wr wr = write_wr(&p, 1, 0, 64);
	assert_int_equal(hca_post_send(ep, &wr), -EINVAL);
	assert_int_equal(hca_wait(ep, HCA_CQ_SEND, 1000, &wc), -EINVAL);
	assert_int_equal(hca_qp_to_error(ep), -EINVAL);
	hca_ep_destroy(ep);
	/* NULL is a no-op for the destructors */
	hca_ep_destroy(NULL);
	hca_listener_close(NULL);
	hca_world_free(NULL);
	assert_int_equal(hca_world_live_objects(p.w), 5);
	pair_close(&p);
}

/* Connection management: private data within rdma_cm's limits, present if announced. The
 * endpoints refused are fine otherwise: the same calls with good parameters go through. */
static void test_connection_calls_validate_their_arguments(void **state)
{
	struct pair p;
	struct hca_cm_event ev;
	struct hca_conn_params ok = { .private_data = "OK", .private_data_len = 2, .retry_count = 5 };
	hca_ep *a, *b = NULL;
	(void)state;

	pair_open(&p, NULL, NULL, 4, 2);   /* its acceptor is finished: nobody answers a */
	struct hca_conn_params long_req = { .private_data = p.sbuf, .private_data_len = 57 };
	struct hca_conn_params long_rep = { .private_data = p.sbuf, .private_data_len = 197 };
	struct hca_conn_params missing = { .private_data = NULL, .private_data_len = 4 };
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, ADDR, &a), 0);
	assert_int_equal(hca_ep_setup(a, &p.caps), 0);
	assert_int_equal(hca_connect(a, &long_req, 1000, NULL), -EINVAL);
	assert_int_equal(hca_connect(a, &missing, 1000, NULL), -EINVAL);
	assert_int_equal(hca_connect(a, NULL, 1000, NULL), -EINVAL);
	assert_int_equal(hca_connect(NULL, &ok, 1000, NULL), -EINVAL);
	assert_int_equal(hca_listener_poll(p.l, &b, &ev), 0);          /* nothing was sent */
	assert_int_equal(hca_connect(a, &ok, 1000, NULL), -ETIMEDOUT);
	assert_int_equal(hca_listener_poll(NULL, &b, &ev), -EINVAL);
	assert_int_equal(hca_listener_poll(p.l, NULL, &ev), -EINVAL);
	assert_int_equal(hca_listener_poll(p.l, &b, NULL), -EINVAL);
	assert_int_equal(hca_listener_wait(NULL, 1000, &b, &ev), -EINVAL);
	assert_int_equal(hca_listener_wait(p.l, 1000, NULL, &ev), -EINVAL);
	assert_int_equal(hca_listener_wait(p.l, 1000, &b, NULL), -EINVAL);
	assert_null(b);
	assert_int_equal(hca_listener_poll(p.l, &b, &ev), 1);
	assert_memory_equal(ev.pdata, "OK", 2);
	assert_int_equal(hca_ep_setup(b, &p.caps), 0);
	assert_int_equal(hca_accept(b, &long_rep), -EINVAL);
	assert_int_equal(hca_accept(b, &missing), -EINVAL);
	assert_int_equal(hca_accept(b, NULL), -EINVAL);
	assert_int_equal(hca_accept(NULL, &ok), -EINVAL);
	assert_int_equal(hca_reject(NULL), -EINVAL);
	assert_int_equal(hca_disconnect(NULL), -EINVAL);
	assert_int_equal(hca_ep_poll_event(NULL, &ev), -EINVAL);
	assert_int_equal(hca_ep_poll_event(a, NULL), -EINVAL);
	assert_int_equal(hca_ep_poll_event(a, &ev), 0);                /* no answer yet */
	assert_int_equal(hca_accept(b, &ok), 0);
	assert_int_equal(hca_ep_poll_event(a, &ev), 1);
	assert_int_equal(ev.type, HCA_CM_ESTABLISHED);
	hca_ep_destroy(a);
	hca_ep_destroy(b);
	pair_close(&p);
}

/* Registrations and the data path. */
static void test_data_path_calls_validate_their_arguments(void **state)
{
	struct pair p;
	struct hca_wc wc;
	hca_mr *mr = NULL;
	(void)state;

	pair_open(&p, NULL, NULL, 4, 2);
	struct hca_send_wr wr = write_wr(&p, 1, 0, 64);
	/* registrations: a range that wraps around the address space */
	assert_int_equal(hca_reg_mr(NULL, 4096, 4096, 0, &mr), -EINVAL);
	assert_int_equal(hca_reg_mr(p.src, 4096, 4096, 0, NULL), -EINVAL);
	assert_int_equal(hca_reg_mr(p.src, UINT64_MAX - 100, 4096, 0, &mr), -EINVAL);
	assert_null(mr);
	assert_int_equal(hca_dereg_mr(NULL), -EINVAL);

	/* the data path */
	wr.opcode = (enum hca_send_opcode)7;
	assert_int_equal(hca_post_send(p.src, &wr), -EINVAL);
	assert_int_equal(hca_post_send(p.src, NULL), -EINVAL);
	assert_int_equal(hca_post_send(NULL, &wr), -EINVAL);
	assert_int_equal(hca_post_recv(NULL, 1, 0, 0, 0), -EINVAL);
	assert_int_equal(hca_poll(NULL, HCA_CQ_SEND, &wc), -EINVAL);
	assert_int_equal(hca_poll(p.src, HCA_CQ_SEND, NULL), -EINVAL);
	assert_int_equal(hca_poll(p.src, (enum hca_cq_kind)3, &wc), -EINVAL);
	assert_int_equal(hca_wait(NULL, HCA_CQ_SEND, 1000, &wc), -EINVAL);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, 1000, NULL), -EINVAL);
	assert_int_equal(hca_wait(p.src, (enum hca_cq_kind)3, 1000, &wc), -EINVAL);
	assert_int_equal(hca_qp_to_error(NULL), -EINVAL);
	assert_int_equal(hca_ep_send_outstanding(p.src), 0);
	assert_int_equal(hca_world_live_objects(p.w), 5);

	/* the connection still works after all of that */
	wr = write_wr(&p, 2, 0, 64);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	pair_close(&p);
}

static void test_progress_functions_are_bounded(void **state)
{
	hca_world *w;
	int i;
	(void)state;

	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &w), 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(hca_world_add_progress(w, idle_progress, NULL), 0);
	assert_int_equal(hca_world_add_progress(w, idle_progress, NULL), -ENOSPC);
	hca_world_free(w);
}

static void test_names_out_of_range(void **state)
{
	(void)state;
	assert_string_equal(hca_wc_status_str(-1), "unknown");
	assert_string_equal(hca_wc_status_str(HCA_WC_STATUS_COUNT), "unknown");
	assert_string_equal(hca_wc_status_name(HCA_WC_STATUS_COUNT), "UNKNOWN");
	assert_string_equal(hca_wc_status_name(HCA_WC_GENERAL_ERR), "GENERAL_ERR");
	assert_string_equal(hca_cm_event_name(-1), "UNKNOWN EVENT");
	assert_string_equal(hca_cm_event_name(16), "UNKNOWN EVENT");
	assert_string_equal(hca_cm_event_name(HCA_CM_ADDR_RESOLVED), "RDMA_CM_EVENT_ADDR_RESOLVED");
}

/* ---- deadline and cost arithmetic saturates --------------------------------------------- */

/* An "infinite" timeout (UINT64_MAX) does not wrap the deadline around to the past. */
static void test_infinite_timeout_does_not_wrap(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	uint64_t t0 = now(&p);
	struct hca_send_wr wr = write_wr(&p, 0x21, 0, MIB);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, UINT64_MAX, &wc), 1);
	assert_int_equal(wc.wr_id, 0x21);
	assert_int_equal(now(&p), t0 + WIRE_1MIB_NS + LATENCY_NS);
	wr = write_wr(&p, 0x22, 0, MIB);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_world_wait(p.w, UINT64_MAX), 1);    /* the clock moves to it */
	assert_int_equal(now(&p), t0 + 2 * (WIRE_1MIB_NS + LATENCY_NS));
	assert_int_equal(hca_poll(p.src, HCA_CQ_SEND, &wc), 1);
	pair_close(&p);
}

/* A world with one endpoint set up (no connection), costs c. */
static hca_ep *solo_open(const struct hca_cost *c, hca_world **w)
{
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	hca_ep *ep;

	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, c, NULL, NULL, w), 0);
	assert_int_equal(hca_ep_create(*w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	return ep;
}

static void test_registration_cost_saturates(void **state)
{
	struct hca_cost c;
	hca_world *w;
	hca_mr *mr;
	(void)state;

	/* a per-page cost of 0: only the fixed part */
	hca_cost_defaults(&c);
	c.reg_per_page_ns = 0;
	hca_ep *ep = solo_open(&c, &w);
	uint64_t t0 = vclock_now_ns(hca_world_clock(w));
	assert_int_equal(hca_reg_mr(ep, 0x10000, 64 * 4096, 0, &mr), 0);
	assert_int_equal(vclock_now_ns(hca_world_clock(w)) - t0, c.reg_fixed_ns);
	assert_int_equal(hca_dereg_mr(mr), 0);
	hca_ep_destroy(ep);
	hca_world_free(w);

	/* pages * per-page cost beyond 2^64: the clock saturates instead of wrapping */
	hca_cost_defaults(&c);
	c.reg_per_page_ns = UINT64_MAX / 2;
	ep = solo_open(&c, &w);
	assert_int_equal(hca_reg_mr(ep, 0x10000, 3 * 4096, 0, &mr), 0);
	assert_true(vclock_now_ns(hca_world_clock(w)) == UINT64_MAX);
	assert_int_equal(hca_dereg_mr(mr), 0);
	assert_true(vclock_now_ns(hca_world_clock(w)) == UINT64_MAX);
	hca_ep_destroy(ep);
	hca_world_free(w);
}

/* ---- connection and teardown order ------------------------------------------------------ */

/* hca_connect's reply is optional; endpoints and listeners may be destroyed in any order. */
static void test_connect_without_reply_and_any_teardown_order(void **state)
{
	struct pair p;
	struct hca_conn_params cp = { .retry_count = 5 };
	hca_listener *l2;
	(void)state;

	memset(&p, 0, sizeof(p));
	p.caps = (struct hca_qp_caps){ .max_send_wr = 4, .max_recv_wr = 4 };
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &p.w), 0);
	assert_int_equal(hca_world_add_progress(p.w, accept_progress, &p), 0);
	assert_int_equal(hca_listen(p.w, VOCAB_SIDE_DST, ADDR, &p.l), 0);
	assert_int_equal(hca_listen(p.w, VOCAB_SIDE_DST, "model:spare", &l2), 0);
	assert_int_equal(hca_ep_create(p.w, VOCAB_SIDE_SRC, ADDR, &p.src), 0);
	assert_int_equal(hca_ep_setup(p.src, &p.caps), 0);
	assert_int_equal(hca_connect(p.src, &cp, TIMEOUT_NS, NULL), 0);
	assert_int_equal(p.accepts, 1);
	hca_ep_destroy(p.dst);             /* the later endpoint first */
	hca_ep_destroy(p.src);
	hca_listener_close(p.l);           /* the older listener first */
	assert_int_equal(hca_world_live_objects(p.w), 1);
	hca_listener_close(l2);
	assert_int_equal(hca_world_live_objects(p.w), 0);
	hca_world_free(p.w);
}

/* A completion generated before the peer's DISCONNECTED is reported first, at its own time;
 * the disconnect comes next. */
static void test_completion_before_disconnect_is_reported_first(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	uint64_t t0 = now(&p);
	struct hca_send_wr wr = write_wr(&p, 0x31, 0, MIB);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_disconnect(p.dst), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, 0x31);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.t_ns, t0 + WIRE_1MIB_NS + LATENCY_NS);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), -ECONNRESET);
	pair_close(&p);
}

/* ... but never past the wait's own bound: a completion due after the deadline does not pull
 * the clock forward; the disconnect is the answer (it ran 86 times past a 1 us bound). */
static void test_disconnect_wait_keeps_its_deadline(void **state)
{
	struct pair p;
	struct hca_wc wc;
	(void)state;

	pair_open(&p, NULL, NULL, 8, 4);
	uint64_t t0 = now(&p);
	struct hca_send_wr wr = write_wr(&p, 0x32, 0, MIB);
	assert_int_equal(hca_post_send(p.src, &wr), 0);
	assert_int_equal(hca_disconnect(p.dst), 0);
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, 1000, &wc), -ECONNRESET);
	assert_true(now(&p) <= t0 + 1000);
	pair_close(&p);
}

/* ---- logging of refused calls and limits ------------------------------------------------ */

/* The backend refusing a send (QP not connected) is logged with its rc and leaves nothing
 * queued; memlock limits are logged per side. */
static void run_refused_send(evlog *ev)
{
	hca_world *w;
	hca_mr *mr;
	struct hca_wc wc;
	unsigned char buf[64];
	hca_ep *ep = NULL;
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, ev, &w), 0);
	if (ev)
		evlog_set_clock(ev, hca_world_clock(w));
	hca_world_set_memlock(w, VOCAB_SIDE_DST, MIB);
	hca_world_set_memlock(w, VOCAB_SIDE_SRC, 0);
	assert_int_equal(hca_world_memlock(w, VOCAB_SIDE_DST), MIB);
	assert_int_equal(hca_world_memlock(w, VOCAB_SIDE_SRC), 0);
	struct hca_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4 };
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, ADDR, &ep), 0);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(hca_reg_mr(ep, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), 0);
	struct hca_send_wr wr = { .wr_id = 0x77, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)buf,
				  .length = sizeof(buf), .lkey = hca_mr_lkey(mr), .signaled = true };
	assert_int_equal(hca_post_send(ep, &wr), -EINVAL);
	assert_int_equal(hca_ep_send_outstanding(ep), 0);
	assert_int_equal(hca_poll(ep, HCA_CQ_SEND, &wc), 0);
	assert_int_equal(hca_dereg_mr(mr), 0);
	hca_ep_destroy(ep);
	hca_world_free(w);
}

static void test_refused_send_and_memlock_are_logged(void **state)
{
	char path[] = "/tmp/hca_test_refused_XXXXXX";
	static const vclock zero_clock;
	int fd = mkstemp(path);
	evlog *ev;
	(void)state;

	assert_true(fd >= 0);
	close(fd);
	run_refused_send(NULL);            /* the same without a log */
	assert_int_equal(evlog_open(path, &zero_clock, &ev), 0);
	run_refused_send(ev);
	assert_int_equal(evlog_close(ev), 0);
	char *log = slurp(path);
	unlink(path);
	assert_non_null(strstr(log, " dst memlock bytes=1048576\n"));
	assert_non_null(strstr(log, " src memlock bytes=0\n"));
	assert_non_null(strstr(log, " src post_send wr_id=0x77 rc=-22\n"));
	assert_null(strstr(log, "op=send wr_id=0x77"));   /* never logged as posted */
	free(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_1mib_completes_at_cost),
		cmocka_unit_test(test_two_writes_serialise_on_the_link),
		cmocka_unit_test(test_custom_cost_is_used),
		cmocka_unit_test(test_wait_times_out_at_the_deadline),
		cmocka_unit_test(test_reg_mr_charges_the_clock),
		cmocka_unit_test(test_ping_pong_runs_the_peer_progress),
		cmocka_unit_test(test_sleep_runs_progress_at_arrival_time),
		cmocka_unit_test(test_finished_progress_is_not_called_again),
		cmocka_unit_test(test_world_wait),
		cmocka_unit_test(test_send_queue_depth),
		cmocka_unit_test(test_recv_queue_depth),
		cmocka_unit_test(test_model_granted_depth),
		cmocka_unit_test(test_access_0_mr_refuses_remote_write),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_live_objects),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_log_lines_are_deterministic),
		cmocka_unit_test(test_endpoint_calls_validate_their_arguments),
		cmocka_unit_test(test_connection_calls_validate_their_arguments),
		cmocka_unit_test(test_data_path_calls_validate_their_arguments),
		cmocka_unit_test(test_progress_functions_are_bounded),
		cmocka_unit_test(test_names_out_of_range),
		cmocka_unit_test(test_infinite_timeout_does_not_wrap),
		cmocka_unit_test(test_registration_cost_saturates),
		cmocka_unit_test(test_connect_without_reply_and_any_teardown_order),
		cmocka_unit_test(test_completion_before_disconnect_is_reported_first),
		cmocka_unit_test(test_disconnect_wait_keeps_its_deadline),
		cmocka_unit_test(test_refused_send_and_memlock_are_logged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
