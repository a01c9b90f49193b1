/* hca_fault_test - fault injection at the seam's front end (transport/hca.c), on the model
 * backend: what each action does to the calls, completions and CM events the protocol sees,
 * and how calls are counted per site. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"
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

/* A connected pair with the rules of specs; the connect must succeed (rules fire later). */
static void pair_open(struct pair *p, const char *const *specs, size_t n)
{
	struct hca_qp_caps caps = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1,
				    .cq_entries = 16 };
	struct hca_conn_params cp = { .retry_count = 5, .rnr_retry_count = 0 };
	struct hca_cm_event reply;

	memset(p, 0, sizeof(*p));
	assert_int_equal(fault_plan_new(1, &p->plan), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(fault_plan_add_spec(p->plan, specs[i], NULL), 0);
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &p->w), 0);
	hca_world_set_faults(p->w, p->plan);
	assert_int_equal(hca_world_add_progress(p->w, accept_progress, p), 0);
	assert_int_equal(hca_listen(p->w, "dst", ADDR, &p->l), 0);
	assert_int_equal(hca_ep_create(p->w, "src", ADDR, &p->src), 0);
	assert_int_equal(hca_ep_setup(p->src, &caps), 0);
	assert_int_equal(hca_connect(p->src, &cp, TIMEOUT_NS, &reply), 0);
	assert_non_null(p->dst);
	p->sbuf = calloc(1, BUF_BYTES);
	p->dbuf = calloc(1, BUF_BYTES);
	assert_int_equal(hca_reg_mr(p->src, (uint64_t)(uintptr_t)p->sbuf, BUF_BYTES, HCA_ACCESS_LOCAL_WRITE, &p->smr), 0);
	assert_int_equal(hca_reg_mr(p->dst, (uint64_t)(uintptr_t)p->dbuf, BUF_BYTES,
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &p->dmr), 0);
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

/* A control message of `type` at offset off of the source buffer, posted as a SEND. */
static int send_msg(struct pair *p, uint64_t wr_id, uint32_t off, uint32_t type, uint32_t len)
{
	struct wire_hdr h = { .len = len, .type = type, .repeat = 1 };
	wire_hdr_encode(&h, p->sbuf + off, WIRE_HDR_BYTES);
	struct hca_send_wr wr = { .wr_id = wr_id, .opcode = HCA_WR_SEND, .local_addr = (uint64_t)(uintptr_t)p->sbuf + off,
				  .length = WIRE_HDR_BYTES + len, .lkey = hca_mr_lkey(p->smr), .signaled = true };
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
	hca_world_set_faults(w, plan);
	assert_int_equal(hca_listen(w, "dst", ADDR, &l), 0);
	assert_int_equal(hca_ep_create(w, "src", ADDR, &ep), 0);
	assert_int_equal(hca_ep_setup(ep, &caps), 0);
	assert_int_equal(hca_connect(ep, &cp, TIMEOUT_NS, &ev), -ECONNREFUSED);
	hca_ep_destroy(ep);
	assert_int_equal(hca_ep_create(w, "dst", ADDR, &ep), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_counted_per_site_and_side),
		cmocka_unit_test(test_errno_fails_the_call_without_the_backend),
		cmocka_unit_test(test_status_completes_in_order_and_kills_both_qps),
		cmocka_unit_test(test_drop_reports_success_and_delivers_nothing),
		cmocka_unit_test(test_wc_status_rewrites_and_kills_at_its_time),
		cmocka_unit_test(test_wc_delay_and_drop),
		cmocka_unit_test(test_duplicate_sends_twice_and_meets_rnr),
		cmocka_unit_test(test_corrupt_changes_the_header_the_peer_receives),
		cmocka_unit_test(test_delay_makes_a_message_arrive_later),
		cmocka_unit_test(test_side_effects_before_the_call),
		cmocka_unit_test(test_cm_drop_and_connect_errno),
		cmocka_unit_test(test_failed_dereg_is_released_at_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
