/* SPDX-License-Identifier: MIT */
/* Device tests of the verbs backend, through the seam (hca.h), on a real RDMA device.
 *
 * Skipped as a whole unless MIGBED_RXE_ADDR names the listening IPv4 address of an rdma_cm-capable
 * device (soft-RoCE VM: MIGBED_RXE_ADDR=198.18.0.1). The connecting side resolves from
 * MIGBED_RXE_SRC (default 198.18.0.2 when the address is 198.18.0.1, so one process drives
 * rxe1 -> rxe0 across the VM's veth wire; otherwise the same device, loopback).
 *
 *   RXE_VM_BUILD=... run-in-rxe-vm.sh env MIGBED_RXE_ADDR=198.18.0.1 \
 *       ./build/test/transport/hca_verbs_dev_test
 *
 * Each test opens its own connection in one process: "src" connects, a progress function
 * plays "dst" (listener_poll, setup, accept), as the protocol's destination would. After
 * each test every object is gone: hca_world_live_objects() == 0 and `rdma resource show qp`
 * lists no QP of this process. Expected statuses are those measured on rxe
 * (docs/verbs-facts.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "transport/hca.h"

#define DEV_PORT_BASE 29400
#define DEV_WAIT_NS (5ull * VCLOCK_NS_PER_S)
#define DEV_QUIET_NS (300ull * VCLOCK_NS_PER_MS)	/* "nothing arrives" */
#define DEV_BUF_BYTES (64u * 1024u)
#define DEV_MR_SLOTS 4

static const struct hca_qp_caps dev_caps = {
	.max_send_wr = 64, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
	.cq_entries = 192,
};
static const struct hca_verbs_opts default_opts = { .ack_timeout = -1 };
static const uint8_t dev_caps_pdata[8] = { 0, 0, 0, 1, 0, 0, 0, 1 };	/* QEMU: v1, PIN_ALL */

struct pair {
	hca_world *w;
	hca_listener *l;
	hca_ep *src, *dst;
	uint8_t dst_rnr_for_src;	/* accept's rnr_retry_count = the src QP's rnr_retry */
	int progress_rc;
	struct hca_cm_event req;
	hca_mr *mrs[DEV_MR_SLOTS];
	void *bufs[DEV_MR_SLOTS];
	int n_mrs;
};

static const char *dev_addr(void)
{
	return getenv("MIGBED_RXE_ADDR");
}

static const char *dev_src(void)
{
	const char *s = getenv("MIGBED_RXE_SRC");

	if (s)
		return s;
	return strcmp(dev_addr(), "198.18.0.1") == 0 ? "198.18.0.2" : NULL;
}

/* QPs of this process listed by `rdma resource show qp`, or -1 if the tool failed. */
static int dev_qps_of_self(void)
{
	char line[512], pid[32];
	int n = 0;
	FILE *f = popen("rdma resource show qp 2>/dev/null", "r");

	if (!f)
		return -1;
	snprintf(pid, sizeof(pid), " pid %d ", (int)getpid());
	while (fgets(line, sizeof(line), f))
		if (strstr(line, pid))
			n++;
	return pclose(f) == 0 ? n : -1;
}

/* The destination, driven while the source waits: accept the first request. */
static int dst_progress(void *arg)
{
	struct pair *p = arg;
	struct hca_conn_params ap = {
		.private_data = dev_caps_pdata, .private_data_len = sizeof(dev_caps_pdata),
		.responder_resources = 2, .rnr_retry_count = p->dst_rnr_for_src,
	};
	int rc;

	if (p->dst)
		return -1;	/* done */
	rc = hca_listener_poll(p->l, &p->dst, &p->req);
	if (rc > 0) {
		rc = hca_ep_setup(p->dst, &dev_caps);
		if (rc == 0)
			rc = hca_accept(p->dst, &ap);
	}
	if (rc < 0)
		p->progress_rc = rc;
	return rc < 0 ? rc : rc > 0;
}

/* Wall-clock wait for a CM event of one type on ep (other events are skipped). */
static int wait_event(hca_ep *ep, int type, int timeout_ms)
{
	struct timespec ms1 = { 0, 1000000 };

	for (int i = 0; i < timeout_ms; i++) {
		struct hca_cm_event ev;

		while (hca_ep_poll_event(ep, &ev) == 1)
			if (ev.type == type)
				return 0;
		nanosleep(&ms1, NULL);
	}
	return -ETIMEDOUT;
}

/* Opens a connected pair; *state owns it until pair_close (the teardown frees it if a
 * test fails half-way, so one failure does not leak QPs into the next test). */
static struct pair *pair_open(void **state, int port, uint8_t dst_rnr_for_src,
			      const struct hca_verbs_opts *vo)
{
	struct hca_conn_params cp = {
		.private_data = dev_caps_pdata, .private_data_len = sizeof(dev_caps_pdata),
		.initiator_depth = 2, .retry_count = 5,
	};
	struct pair *p = calloc(1, sizeof(*p));
	struct hca_cm_event reply;
	char laddr[64], caddr[96];

	assert_non_null(p);
	*state = p;
	p->dst_rnr_for_src = dst_rnr_for_src;
	snprintf(laddr, sizeof(laddr), "%s:%d", dev_addr(), port);
	snprintf(caddr, sizeof(caddr), "%s%s%s", laddr, dev_src() ? "@" : "",
		 dev_src() ? dev_src() : "");
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, vo, NULL, &p->w), 0);
	assert_int_equal(hca_listen(p->w, VOCAB_SIDE_DST, laddr, &p->l), 0);
	assert_int_equal(hca_world_add_progress(p->w, dst_progress, p), 0);
	assert_int_equal(hca_ep_create(p->w, VOCAB_SIDE_SRC, caddr, &p->src), 0);
	assert_int_equal(hca_ep_setup(p->src, &dev_caps), 0);
	assert_int_equal(hca_connect(p->src, &cp, DEV_WAIT_NS, &reply), 0);
	assert_int_equal(p->progress_rc, 0);
	assert_non_null(p->dst);
	/* private data: padded by rdma_cm (56 REQ, 196 REP); the first 8 bytes are ours */
	assert_int_equal(p->req.type, HCA_CM_CONNECT_REQUEST);
	assert_true(p->req.pdata_len >= sizeof(dev_caps_pdata));
	assert_memory_equal(p->req.pdata, dev_caps_pdata, sizeof(dev_caps_pdata));
	assert_int_equal(reply.type, HCA_CM_ESTABLISHED);
	assert_true(reply.pdata_len >= sizeof(dev_caps_pdata));
	assert_memory_equal(reply.pdata, dev_caps_pdata, sizeof(dev_caps_pdata));
	assert_int_equal(wait_event(p->dst, HCA_CM_ESTABLISHED, 3000), 0);
	return p;
}

/* A page-aligned buffer filled with `fill`, registered on ep. */
static hca_mr *pair_buf(struct pair *p, hca_ep *ep, uint32_t bytes, uint8_t fill, int access,
			uint8_t **buf)
{
	assert_true(p->n_mrs < DEV_MR_SLOTS);
	*buf = aligned_alloc(4096, bytes);
	assert_non_null(*buf);
	memset(*buf, fill, bytes);
	p->bufs[p->n_mrs] = *buf;
	assert_int_equal(hca_reg_mr(ep, (uint64_t)(uintptr_t)*buf, bytes, access,
				    &p->mrs[p->n_mrs]), 0);
	return p->mrs[p->n_mrs++];
}

/* Frees whatever of p exists; 0 if every step succeeded. */
static int pair_release(struct pair *p)
{
	int bad = 0;

	for (int i = 0; i < p->n_mrs; i++) {
		bad |= hca_dereg_mr(p->mrs[i]) != 0;
		free(p->bufs[i]);
	}
	if (p->src)
		hca_disconnect(p->src);	/* may be disconnected already: not checked */
	if (p->dst)
		hca_disconnect(p->dst);
	hca_ep_destroy(p->src);
	hca_ep_destroy(p->dst);
	hca_listener_close(p->l);
	if (p->w) {
		bad |= hca_world_live_objects(p->w) != 0;
		hca_world_free(p->w);
	}
	free(p);
	return bad ? -1 : 0;
}

/* The end of a test: everything is released, and no QP of this process is left. */
static void pair_close(void **state)
{
	struct pair *p = *state;

	*state = NULL;
	assert_int_equal(pair_release(p), 0);
	assert_int_equal(dev_qps_of_self(), 0);
}

static int pair_teardown(void **state)
{
	if (*state)
		pair_release(*state);
	*state = NULL;
	return 0;
}

static void post_send(hca_ep *ep, uint64_t wr_id, enum hca_send_opcode op, const uint8_t *buf,
		      uint32_t len, const hca_mr *mr, uint64_t raddr, uint32_t rkey)
{
	struct hca_send_wr wr = {
		.wr_id = wr_id, .opcode = op, .local_addr = (uint64_t)(uintptr_t)buf,
		.length = len, .lkey = hca_mr_lkey(mr), .remote_addr = raddr, .rkey = rkey,
		.signaled = true,
	};

	assert_int_equal(hca_post_send(ep, &wr), 0);
}

static void post_recv(hca_ep *ep, uint64_t wr_id, const uint8_t *buf, uint32_t len,
		      const hca_mr *mr)
{
	assert_int_equal(hca_post_recv(ep, wr_id, (uint64_t)(uintptr_t)buf, len, hca_mr_lkey(mr)),
			 0);
}

static void expect_wc(hca_ep *ep, enum hca_cq_kind cq, uint64_t wr_id, int status)
{
	struct hca_wc wc;
	int rc = hca_wait(ep, cq, DEV_WAIT_NS, &wc);

	if (rc != 1)
		fail_msg("%s: waiting for wr_id %llu (%s) on the %s CQ: rc %d", vocab_side_token(hca_ep_side(ep)),
			 (unsigned long long)wr_id, hca_wc_status_name(status),
			 cq == HCA_CQ_SEND ? "send" : "recv", rc);
	if (wc.wr_id != wr_id || wc.status != status)
		fail_msg("%s: wc wr_id %llu status %s, expected wr_id %llu status %s",
			 vocab_side_token(hca_ep_side(ep)), (unsigned long long)wc.wr_id,
			 hca_wc_status_name(wc.status), (unsigned long long)wr_id,
			 hca_wc_status_name(status));
}

static bool all_bytes(const uint8_t *b, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* Connect, SENDs both ways, an RDMA WRITE whose bytes land exactly, disconnect. */
static void test_send_write_disconnect(void **state)
{
	struct pair *p;
	uint8_t *sb, *rb, *db, *tb;
	hca_mr *smr, *rmr, *dmr, *tmr;
	struct hca_wc wc;

	p = pair_open(state, DEV_PORT_BASE + 1, 0, &default_opts);
	assert_string_not_equal(hca_ep_device(p->dst), "");
	if (dev_src())	/* rxe1 -> rxe0 in the VM: two devices */
		assert_string_not_equal(hca_ep_device(p->src), hca_ep_device(p->dst));
	assert_int_equal(dev_qps_of_self(), 2);
	smr = pair_buf(p, p->src, DEV_BUF_BYTES, 0, HCA_ACCESS_LOCAL_WRITE, &sb);
	rmr = pair_buf(p, p->src, 4096, 0, HCA_ACCESS_LOCAL_WRITE, &rb);
	dmr = pair_buf(p, p->dst, 4096, 0, HCA_ACCESS_LOCAL_WRITE, &db);
	tmr = pair_buf(p, p->dst, 3 * DEV_BUF_BYTES, 0xAA,
		       HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &tb);
	/* src -> dst SEND */
	post_recv(p->dst, 10, db, 4096, dmr);
	memcpy(sb, "ping", 5);
	post_send(p->src, 1, HCA_WR_SEND, sb, 5, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	assert_int_equal(hca_wait(p->dst, HCA_CQ_RECV, DEV_WAIT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.opcode, HCA_WC_OP_RECV);
	assert_int_equal(wc.byte_len, 5);
	assert_string_equal((char *)db, "ping");
	/* dst -> src SEND */
	post_recv(p->src, 11, rb, 4096, rmr);
	memcpy(db, "pong!", 6);
	post_send(p->dst, 2, HCA_WR_SEND, db, 6, dmr, 0, 0);
	expect_wc(p->dst, HCA_CQ_SEND, 2, HCA_WC_SUCCESS);
	expect_wc(p->src, HCA_CQ_RECV, 11, HCA_WC_SUCCESS);
	assert_string_equal((char *)rb, "pong!");
	/* RDMA WRITE of 64 KiB into the middle third of the target, at an odd offset */
	for (uint32_t i = 0; i < DEV_BUF_BYTES; i++)
		sb[i] = (uint8_t)(i * 7 + 1);
	post_send(p->src, 3, HCA_WR_RDMA_WRITE, sb, DEV_BUF_BYTES - 100, smr,
		  hca_mr_addr(tmr) + DEV_BUF_BYTES + 100, hca_mr_rkey(tmr));
	assert_int_equal(hca_wait(p->src, HCA_CQ_SEND, DEV_WAIT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.opcode, HCA_WC_OP_RDMA_WRITE);
	assert_memory_equal(tb + DEV_BUF_BYTES + 100, sb, DEV_BUF_BYTES - 100);
	assert_true(all_bytes(tb, DEV_BUF_BYTES + 100, 0xAA));
	assert_true(all_bytes(tb + 2 * DEV_BUF_BYTES, DEV_BUF_BYTES, 0xAA));
	/* src disconnects: dst's wait ends with -ECONNRESET, the event stays for poll_event */
	post_recv(p->dst, 12, db, 4096, dmr);
	assert_int_equal(hca_disconnect(p->src), 0);
	assert_int_equal(hca_wait(p->dst, HCA_CQ_RECV, DEV_WAIT_NS, &wc), -ECONNRESET);
	assert_int_equal(wait_event(p->dst, HCA_CM_DISCONNECTED, 3000), 0);
	/* the initiator gets its own DISCONNECTED once dst disconnects too
	 * (docs/verbs-facts.md, 'rdma_disconnect') */
	assert_int_equal(hca_disconnect(p->dst), 0);
	assert_int_equal(wait_event(p->src, HCA_CM_DISCONNECTED, 3000), 0);
	expect_wc(p->dst, HCA_CQ_RECV, 12, HCA_WC_WR_FLUSH_ERR);
	pair_close(state);
}

/* A WRITE past the end of the remote MR: REM_ACCESS_ERR, everything after it flushed, no
 * byte written; the responder's RECVs are flushed, even one posted afterwards. */
static void test_write_out_of_bounds(void **state)
{
	struct pair *p;
	uint8_t *sb, *db, *tb;
	hca_mr *smr, *dmr, *tmr;
	uint64_t mr_end;

	p = pair_open(state, DEV_PORT_BASE + 2, 0, &default_opts);
	smr = pair_buf(p, p->src, DEV_BUF_BYTES, 0x55, HCA_ACCESS_LOCAL_WRITE, &sb);
	dmr = pair_buf(p, p->dst, 4096, 0, HCA_ACCESS_LOCAL_WRITE, &db);
	tb = aligned_alloc(4096, 3 * DEV_BUF_BYTES);
	assert_non_null(tb);
	memset(tb, 0xAA, 3 * DEV_BUF_BYTES);
	/* the MR is the middle third; WRITEs may only land there */
	p->bufs[p->n_mrs] = tb;
	assert_int_equal(hca_reg_mr(p->dst, (uint64_t)(uintptr_t)(tb + DEV_BUF_BYTES),
				    DEV_BUF_BYTES, HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE,
				    &p->mrs[p->n_mrs]), 0);
	tmr = p->mrs[p->n_mrs++];
	mr_end = hca_mr_addr(tmr) + hca_mr_len(tmr);
	for (uint64_t id = 20; id < 22; id++)
		post_recv(p->dst, id, db, 4096, dmr);
	post_send(p->src, 1, HCA_WR_RDMA_WRITE, sb, 4096, smr, mr_end - 200, hca_mr_rkey(tmr));
	post_send(p->src, 2, HCA_WR_RDMA_WRITE, sb, 4096, smr, hca_mr_addr(tmr), hca_mr_rkey(tmr));
	post_send(p->src, 3, HCA_WR_SEND, sb, 16, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_SEND, 1, HCA_WC_REM_ACCESS_ERR);
	expect_wc(p->src, HCA_CQ_SEND, 2, HCA_WC_WR_FLUSH_ERR);
	expect_wc(p->src, HCA_CQ_SEND, 3, HCA_WC_WR_FLUSH_ERR);
	expect_wc(p->dst, HCA_CQ_RECV, 20, HCA_WC_WR_FLUSH_ERR);
	expect_wc(p->dst, HCA_CQ_RECV, 21, HCA_WC_WR_FLUSH_ERR);
	assert_true(all_bytes(tb, 3 * DEV_BUF_BYTES, 0xAA));
	/* the responder's QP is in ERR by itself: a RECV posted now must flush too
	 * (docs/verbs-facts.md, 'RECV posted to an ERR QP') */
	post_recv(p->dst, 22, db, 4096, dmr);
	expect_wc(p->dst, HCA_CQ_RECV, 22, HCA_WC_WR_FLUSH_ERR);
	pair_close(state);
}

/* A SEND with no RECV posted and rnr_retry 0 (QEMU's setting): RNR_RETRY_EXC_ERR at once;
 * the sender's RECVs flush; the responder sees nothing. */
static void test_send_without_recv(void **state)
{
	struct pair *p;
	uint8_t *sb, *db;
	hca_mr *smr, *dmr;
	struct hca_wc wc;

	p = pair_open(state, DEV_PORT_BASE + 3, 0, &default_opts);
	smr = pair_buf(p, p->src, 4096, 0x11, HCA_ACCESS_LOCAL_WRITE, &sb);
	dmr = pair_buf(p, p->dst, 4096, 0, HCA_ACCESS_LOCAL_WRITE, &db);
	post_recv(p->src, 30, sb + 2048, 2048, smr);
	post_send(p->src, 1, HCA_WR_SEND, sb, 64, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_SEND, 1, HCA_WC_RNR_RETRY_EXC_ERR);
	expect_wc(p->src, HCA_CQ_RECV, 30, HCA_WC_WR_FLUSH_ERR);
	/* the responder's QP stays RTS: a RECV posted now neither flushes nor fills */
	post_recv(p->dst, 31, db, 4096, dmr);
	post_send(p->src, 2, HCA_WR_SEND, sb, 64, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_SEND, 2, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(hca_wait(p->dst, HCA_CQ_RECV, DEV_QUIET_NS, &wc), 0);
	pair_close(state);
}

/* hca_qp_to_error: every outstanding RECV flushes in posting order, later WRs flush too
 * (also a RECV posted to the ERR QP, which rxe alone would never complete); the peer sees
 * nothing until it sends: then RETRY_EXC_ERR, after (retry_count 5 + 1) x 67 ms with ACK
 * timeout 14 (set through hca_verbs_opts; rxe's default 19 would take 13 s). */
static void test_qp_to_error_flushes(void **state)
{
	const struct hca_verbs_opts fast_ack = { .ack_timeout = 14 };
	struct pair *p;
	uint8_t *sb, *db;
	hca_mr *smr, *dmr;
	struct hca_wc wc;

	p = pair_open(state, DEV_PORT_BASE + 4, 7, &fast_ack);
	smr = pair_buf(p, p->src, 4096, 0x22, HCA_ACCESS_LOCAL_WRITE, &sb);
	dmr = pair_buf(p, p->dst, 4096, 0, HCA_ACCESS_LOCAL_WRITE, &db);
	for (uint64_t id = 40; id < 43; id++)
		post_recv(p->src, id, sb, 1024, smr);
	assert_int_equal(hca_qp_to_error(p->src), 0);
	for (uint64_t id = 40; id < 43; id++)
		expect_wc(p->src, HCA_CQ_RECV, id, HCA_WC_WR_FLUSH_ERR);
	post_send(p->src, 1, HCA_WR_SEND, sb, 64, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_SEND, 1, HCA_WC_WR_FLUSH_ERR);
	post_recv(p->src, 43, sb, 1024, smr);
	expect_wc(p->src, HCA_CQ_RECV, 43, HCA_WC_WR_FLUSH_ERR);
	/* the peer: no completion, no CM event */
	post_recv(p->dst, 44, db, 4096, dmr);
	assert_int_equal(hca_wait(p->dst, HCA_CQ_RECV, DEV_QUIET_NS, &wc), 0);
	assert_int_equal(hca_ep_poll_event(p->dst, &(struct hca_cm_event){ 0 }), 0);
	post_send(p->dst, 2, HCA_WR_SEND, db, 64, dmr, 0, 0);
	expect_wc(p->dst, HCA_CQ_SEND, 2, HCA_WC_RETRY_EXC_ERR);
	expect_wc(p->dst, HCA_CQ_RECV, 44, HCA_WC_WR_FLUSH_ERR);
	pair_close(state);
}

/* Busy-polling instead of completion channels: a SEND still gets through. */
static void test_busy_poll(void **state)
{
	const struct hca_verbs_opts busy = { .ack_timeout = -1, .poll_busy = true };
	struct pair *p;
	uint8_t *sb, *db;
	hca_mr *smr, *dmr;

	p = pair_open(state, DEV_PORT_BASE + 6, 0, &busy);
	smr = pair_buf(p, p->src, 4096, 0x33, HCA_ACCESS_LOCAL_WRITE, &sb);
	dmr = pair_buf(p, p->dst, 4096, 0, HCA_ACCESS_LOCAL_WRITE, &db);
	post_recv(p->dst, 60, db, 4096, dmr);
	post_send(p->src, 1, HCA_WR_SEND, sb, 4096, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	expect_wc(p->dst, HCA_CQ_RECV, 60, HCA_WC_SUCCESS);
	assert_memory_equal(db, sb, 4096);
	pair_close(state);
}

/* Connecting to a port nobody listens on is refused, and leaves nothing behind. */
static void test_connect_refused(void **state)
{
	struct hca_verbs_opts vo = { .ack_timeout = -1 };
	struct hca_conn_params cp = { .initiator_depth = 2, .retry_count = 5 };
	struct pair *p = calloc(1, sizeof(*p));
	char addr[96];

	assert_non_null(p);
	*state = p;
	snprintf(addr, sizeof(addr), "%s:%d%s%s", dev_addr(), DEV_PORT_BASE + 5,
		 dev_src() ? "@" : "", dev_src() ? dev_src() : "");
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &vo, NULL, &p->w), 0);
	assert_int_equal(hca_ep_create(p->w, VOCAB_SIDE_SRC, addr, &p->src), 0);
	assert_int_equal(hca_ep_setup(p->src, &dev_caps), 0);
	assert_int_equal(hca_connect(p->src, &cp, DEV_WAIT_NS, NULL), -ECONNREFUSED);
	pair_close(state);
}

/* Bad addresses are refused before any verbs call. */
static void test_bad_addresses(void **state)
{
	struct hca_verbs_opts vo = { .ack_timeout = -1 };
	hca_world *w;
	hca_ep *ep;
	hca_listener *l;

	(void)state;
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &vo, NULL, &w), 0);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1", &ep), -EINVAL);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:0", &ep), -EINVAL);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "198.18.0.1:80@198.18.0.2", &l), -EINVAL);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
}

/* rc must be want; otherwise the failure names the call and what it returned. */
#define expect_rc(call, want)                                                                  \
	do {                                                                                   \
		int rc_ = (call);                                                              \
		if (rc_ != (want))                                                             \
			fail_msg("%s: rc %d (%s), expected %d (%s)", #call, rc_, strerror(-rc_), \
				 (int)(want), strerror(-(want)));                              \
	} while (0)

static void dev_listen_addr(char *buf, size_t n, const char *ip, int port)
{
	snprintf(buf, n, "%s:%d", ip, port);
}

/* The connecting side's address for the listener at port ("DST:PORT@SRC" in the VM). */
static void dev_connect_addr(char *buf, size_t n, int port)
{
	snprintf(buf, n, "%s:%d%s%s", dev_addr(), port, dev_src() ? "@" : "",
		 dev_src() ? dev_src() : "");
}

/* Listeners: a second one on a bound port, one on an address no RDMA device has, several
 * in one world closed in any order, an IPv6 wildcard; waiting for a request that never
 * comes times out (with completion channels and busy polling). */
static void test_listen_errors(void **state)
{
	const struct hca_verbs_opts busy = { .ack_timeout = -1, .poll_busy = true };
	struct pair *p = calloc(1, sizeof(*p));
	hca_listener *l2, *l3, *l4, *dup;
	struct hca_cm_event req;
	hca_ep *ep = NULL;
	char a[64];

	assert_non_null(p);
	*state = p;
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &default_opts, NULL, &p->w), 0);
	dev_listen_addr(a, sizeof(a), dev_addr(), DEV_PORT_BASE + 10);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, a, &p->l), 0);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, a, &dup), -EADDRINUSE);
	/* TEST-NET-1: on no interface of this host, so on no RDMA device */
	dev_listen_addr(a, sizeof(a), "192.0.2.1", DEV_PORT_BASE + 10);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, a, &dup), -EADDRNOTAVAIL);
	dev_listen_addr(a, sizeof(a), dev_addr(), DEV_PORT_BASE + 11);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, a, &l2), 0);
	dev_listen_addr(a, sizeof(a), dev_addr(), DEV_PORT_BASE + 12);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, a, &l3), 0);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, "[::]:29413", &l4), 0);
	assert_int_equal(hca_world_live_objects(p->w), 4);
	/* nobody connects */
	expect_rc(hca_listener_wait(l2, DEV_QUIET_NS, &ep, &req), 0);
	assert_null(ep);
	/* close the middle ones first, the newest, then the oldest (by pair_close) */
	hca_listener_close(l3);
	hca_listener_close(l2);
	hca_listener_close(l4);
	assert_int_equal(hca_world_live_objects(p->w), 1);
	pair_close(state);

	/* busy polling: the wait ends at its deadline too */
	p = calloc(1, sizeof(*p));
	assert_non_null(p);
	*state = p;
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &busy, NULL, &p->w), 0);
	dev_listen_addr(a, sizeof(a), dev_addr(), DEV_PORT_BASE + 14);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, a, &p->l), 0);
	expect_rc(hca_listener_wait(p->l, DEV_QUIET_NS, &ep, &req), 0);
	assert_null(ep);
	pair_close(state);
}

/* The destination, driven while the source waits: reject the first request. */
static int dst_reject_progress(void *arg)
{
	struct pair *p = arg;
	int rc;

	if (p->dst)
		return -1;	/* done */
	rc = hca_listener_poll(p->l, &p->dst, &p->req);
	if (rc > 0)
		rc = hca_reject(p->dst);
	if (rc < 0)
		p->progress_rc = rc;
	return rc < 0 ? rc : p->dst != NULL;
}

/* A rejected request: the connecting side gets -ECONNREFUSED; nothing is left. The world
 * sets the largest ACK timeout rdma_cm takes (31) and refuses one over it. */
static void test_reject(void **state)
{
	const struct hca_verbs_opts ack_max = { .ack_timeout = 31 };
	const struct hca_verbs_opts ack_over = { .ack_timeout = 32 };
	struct hca_conn_params cp = {
		.private_data = dev_caps_pdata, .private_data_len = sizeof(dev_caps_pdata),
		.initiator_depth = 2, .retry_count = 5,
	};
	struct pair *p = calloc(1, sizeof(*p));
	hca_world *w = NULL;
	char la[64], ca[96];

	assert_non_null(p);
	*state = p;
	expect_rc(hca_world_new(HCA_BACKEND_VERBS, NULL, &ack_over, NULL, &w), -EINVAL);
	assert_null(w);
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &ack_max, NULL, &p->w), 0);
	dev_listen_addr(la, sizeof(la), dev_addr(), DEV_PORT_BASE + 15);
	dev_connect_addr(ca, sizeof(ca), DEV_PORT_BASE + 15);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, la, &p->l), 0);
	assert_int_equal(hca_world_add_progress(p->w, dst_reject_progress, p), 0);
	expect_rc(hca_ep_create(p->w, VOCAB_SIDE_SRC, ca, &p->src), 0);
	expect_rc(hca_ep_setup(p->src, &dev_caps), 0);
	expect_rc(hca_connect(p->src, &cp, DEV_WAIT_NS, NULL), -ECONNREFUSED);
	expect_rc(p->progress_rc, 0);
	assert_non_null(p->dst);
	assert_int_equal(p->req.type, HCA_CM_CONNECT_REQUEST);
	assert_memory_equal(p->req.pdata, dev_caps_pdata, sizeof(dev_caps_pdata));
	pair_close(state);
}

/* Resolution fails at once for a destination with no route and for a source address no
 * device has; a bad address never reaches rdma_cm. (The unroutable destination is resolved
 * without "@SRC": bound to a device, the kernel takes it as on-link and ARPs for it until
 * rdma_cm's 10 s timeout, -ETIMEDOUT.) */
static void test_resolve_errors(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));
	hca_ep *ep = NULL;
	char a[96];

	assert_non_null(p);
	*state = p;
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, NULL, NULL, &p->w), 0);
	snprintf(a, sizeof(a), "10.255.255.1:%d", DEV_PORT_BASE + 16);
	expect_rc(hca_ep_create(p->w, VOCAB_SIDE_SRC, a, &ep), -ENETUNREACH);
	snprintf(a, sizeof(a), "%s:%d@192.0.2.7", dev_addr(), DEV_PORT_BASE + 16);
	expect_rc(hca_ep_create(p->w, VOCAB_SIDE_SRC, a, &ep), -EADDRNOTAVAIL);
	snprintf(a, sizeof(a), "%s:%d@[::1]", dev_addr(), DEV_PORT_BASE + 16);
	expect_rc(hca_ep_create(p->w, VOCAB_SIDE_SRC, a, &ep), -EINVAL);
	assert_null(ep);
	assert_int_equal(hca_world_live_objects(p->w), 0);
	pair_close(state);
}

/* What the seam refuses on a real device: connect/accept/MRs before the QP exists, retry
 * counts over 7, an MR over unmapped memory, a second connect or accept on a live
 * connection; after a disconnect, posts still succeed and complete as flushes. A third,
 * unconnected endpoint in the world is never taken for the peer. */
static void test_conn_state_errors(void **state)
{
	struct hca_conn_params cp = { .initiator_depth = 2, .retry_count = 5 };
	struct hca_conn_params ap = { .responder_resources = 2 };
	struct pair *p;
	hca_ep *bare = NULL;
	hca_mr *mr = NULL;
	uint8_t *sb, *db;
	hca_mr *smr, *dmr;
	char a[96];

	p = pair_open(state, DEV_PORT_BASE + 17, 0, NULL);
	/* an endpoint with a resolved address but no QP */
	dev_connect_addr(a, sizeof(a), DEV_PORT_BASE + 17);
	expect_rc(hca_ep_create(p->w, VOCAB_SIDE_SRC, a, &bare), 0);
	expect_rc(hca_connect(bare, &cp, DEV_WAIT_NS, NULL), -EINVAL);
	expect_rc(hca_reg_mr(bare, 0x10000, 4096, HCA_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	/* rdma_cm's retry counts are 3 bits */
	cp.retry_count = 8;
	expect_rc(hca_connect(p->src, &cp, DEV_WAIT_NS, NULL), -EINVAL);
	cp.retry_count = 5;
	ap.rnr_retry_count = 8;
	expect_rc(hca_accept(p->dst, &ap), -EINVAL);
	ap.rnr_retry_count = 0;
	/* MRs: address 0, and memory that is not mapped (one page at 64 KiB) */
	expect_rc(hca_reg_mr(p->src, 0, 4096, HCA_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	expect_rc(hca_reg_mr(p->src, 0x10000, 4096, HCA_ACCESS_LOCAL_WRITE, &mr), -EFAULT);
	assert_null(mr);
	/* connected already: rdma_cm refuses a second connect and a second accept */
	expect_rc(hca_connect(p->src, &cp, DEV_WAIT_NS, NULL), -EINVAL);
	expect_rc(hca_accept(p->dst, &ap), -EINVAL);
	/* a SEND still finds its peer past the unconnected endpoint */
	smr = pair_buf(p, p->src, 4096, 0x44, HCA_ACCESS_LOCAL_WRITE, &sb);
	dmr = pair_buf(p, p->dst, 4096, 0, HCA_ACCESS_LOCAL_WRITE, &db);
	post_recv(p->dst, 70, db, 4096, dmr);
	post_send(p->src, 1, HCA_WR_SEND, sb, 128, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_SEND, 1, HCA_WC_SUCCESS);
	expect_wc(p->dst, HCA_CQ_RECV, 70, HCA_WC_SUCCESS);
	assert_true(all_bytes(db, 128, 0x44));
	/* after a disconnect the QP is in ERR: posting works, everything flushes */
	expect_rc(hca_disconnect(p->src), 0);
	post_recv(p->src, 71, sb, 4096, smr);
	post_send(p->src, 2, HCA_WR_SEND, sb, 64, smr, 0, 0);
	expect_wc(p->src, HCA_CQ_RECV, 71, HCA_WC_WR_FLUSH_ERR);
	expect_wc(p->src, HCA_CQ_SEND, 2, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(wait_event(p->dst, HCA_CM_DISCONNECTED, 3000), 0);
	hca_ep_destroy(bare);
	pair_close(state);
}

/* hca_world_free with a connection, MRs, a listener and a resolved endpoint still open
 * releases them all: no QP of this process is left. */
static void test_world_free_with_open_objects(void **state)
{
	struct pair *p;
	hca_ep *bare = NULL;
	hca_listener *l2 = NULL;
	uint8_t *sb, *db;
	char a[96];

	p = pair_open(state, DEV_PORT_BASE + 18, 0, &default_opts);
	(void)pair_buf(p, p->src, 4096, 1, HCA_ACCESS_LOCAL_WRITE, &sb);
	(void)pair_buf(p, p->dst, 4096, 2, HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &db);
	dev_connect_addr(a, sizeof(a), DEV_PORT_BASE + 18);
	expect_rc(hca_ep_create(p->w, VOCAB_SIDE_SRC, a, &bare), 0);
	dev_listen_addr(a, sizeof(a), dev_addr(), DEV_PORT_BASE + 19);
	expect_rc(hca_listen(p->w, VOCAB_SIDE_DST, a, &l2), 0);
	assert_int_equal(dev_qps_of_self(), 2);
	assert_int_equal(hca_world_live_objects(p->w), 7);
	hca_world_free(p->w);
	p->w = NULL;
	p->src = p->dst = NULL;
	p->l = NULL;
	for (int i = 0; i < p->n_mrs; i++)
		free(p->bufs[i]);
	p->n_mrs = 0;
	assert_int_equal(dev_qps_of_self(), 0);
	pair_close(state);
}

int main(void)
{
	/* No device: skip the whole file as a TAP plan. (cmocka 1.1.5's skip() prints "not ok
	 * N # SKIP" in TAP mode, which harnesses count as failures.) */
	if (!dev_addr()) {
		printf("1..0 # SKIP MIGBED_RXE_ADDR is not set (device tests need RDMA, e.g. "
		       "the soft-RoCE VM with MIGBED_RXE_ADDR=198.18.0.1)\n");
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_send_write_disconnect, pair_teardown),
		cmocka_unit_test_teardown(test_write_out_of_bounds, pair_teardown),
		cmocka_unit_test_teardown(test_send_without_recv, pair_teardown),
		cmocka_unit_test_teardown(test_qp_to_error_flushes, pair_teardown),
		cmocka_unit_test_teardown(test_busy_poll, pair_teardown),
		cmocka_unit_test_teardown(test_connect_refused, pair_teardown),
		cmocka_unit_test(test_bad_addresses),
		cmocka_unit_test_teardown(test_listen_errors, pair_teardown),
		cmocka_unit_test_teardown(test_reject, pair_teardown),
		cmocka_unit_test_teardown(test_resolve_errors, pair_teardown),
		cmocka_unit_test_teardown(test_conn_state_errors, pair_teardown),
		cmocka_unit_test_teardown(test_world_free_with_open_objects, pair_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
