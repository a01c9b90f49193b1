/* Unit tests of the verbs backend that need no RDMA device.
 *
 * The backend's source is included so its static helpers can be called directly. The
 * rdma-core functions that ep setup/teardown and the data path call are replaced by small
 * fakes defined below (a definition in this translation unit wins over the shared library),
 * and the inline verbs (ibv_poll_cq, ibv_post_recv, ibv_req_notify_cq) go through a fake
 * ibv_context's ops. The fakes count live objects and fail the N-th fallible call, so the
 * test can show that every failure of ep setup unwinds to zero live objects. */
#include "transport/hca_verbs.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <unistd.h>

/* ---- fakes -------------------------------------------------------------------------- */

struct fake_chan {
	struct ibv_comp_channel ch;	/* first: the pointer handed out */
	struct ibv_cq *cq;		/* the CQ that uses it */
	int pending;			/* events ibv_get_cq_event can still return */
	int unacked;
};

static struct {
	int fail_at;		/* fail the N-th fallible call (1-based), 0 = never */
	int fail_errno;
	int calls;
	int pds, chans, cqs, qps;
	int rejects, ids_destroyed;
	enum ibv_qp_state qp_state;	/* what ibv_query_qp reports */
	int queries, modifies_to_err, recvs_posted, arms;
	struct ibv_wc script[8];	/* what the fake poll_cq returns, in order */
	int script_n, script_pos;
	int destroy_with_unacked;
	struct rdma_cm_event *cm_script[VERBS_REQQ_LEN + 4];	/* rdma_get_cm_event's events */
	int cm_n, cm_pos, cm_acks, acks_at_destroy;
} fk;

static bool fake_fail(void)
{
	if (++fk.calls != fk.fail_at)
		return false;
	errno = fk.fail_errno;
	return true;
}

static int fake_req_notify(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	if (fake_fail())
		return fk.fail_errno;
	fk.arms++;
	return 0;
}

static int fake_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	assert_int_equal(n, 1);
	if (fk.script_pos == fk.script_n)
		return 0;
	*wc = fk.script[fk.script_pos++];
	return 1;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)bad;
	assert_int_equal(wr->num_sge, 1);
	fk.recvs_posted++;
	return 0;
}

static struct ibv_context fake_ctx = {
	.ops = { .poll_cq = fake_poll, .req_notify_cq = fake_req_notify,
		 .post_recv = fake_post_recv },
};

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd;

	if (fake_fail())
		return NULL;
	pd = calloc(1, sizeof(*pd));
	pd->context = ctx;
	fk.pds++;
	return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	fk.pds--;
	return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct fake_chan *c;

	if (fake_fail())
		return NULL;
	c = calloc(1, sizeof(*c));
	c->ch.context = ctx;
	c->ch.fd = open("/dev/null", O_RDONLY);	/* a real fd: the backend sets O_NONBLOCK */
	fk.chans++;
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	close(ch->fd);
	free(ch);
	fk.chans--;
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *ch, int vec)
{
	struct ibv_cq *cq;

	(void)cq_context;
	(void)vec;
	if (fake_fail())
		return NULL;
	cq = calloc(1, sizeof(*cq));
	cq->context = ctx;
	cq->channel = ch;
	cq->cqe = cqe;
	if (ch)
		((struct fake_chan *)ch)->cq = cq;
	fk.cqs++;
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	/* the real one waits for every event to be acked: a hang if one is not */
	if (cq->channel && ((struct fake_chan *)cq->channel)->unacked)
		fk.destroy_with_unacked++;
	free(cq);
	fk.cqs--;
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context)
{
	struct fake_chan *c = (struct fake_chan *)ch;

	if (c->pending == 0) {
		errno = EAGAIN;
		return -1;
	}
	c->pending--;
	c->unacked++;
	*cq = c->cq;
	*cq_context = NULL;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	((struct fake_chan *)cq->channel)->unacked -= (int)nevents;
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	if (fake_fail())
		return -1;
	assert_int_equal(a->qp_type, IBV_QPT_RC);
	assert_non_null(a->send_cq);
	assert_non_null(a->recv_cq);
	assert_ptr_not_equal(a->send_cq, a->recv_cq);
	id->qp = calloc(1, sizeof(*id->qp));
	id->qp->context = pd->context;
	fk.qps++;
	return 0;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	free(id->qp);
	id->qp = NULL;
	fk.qps--;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	(void)qp;
	(void)init;
	assert_true(mask & IBV_QP_STATE);
	fk.queries++;
	attr->qp_state = fk.qp_state;
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	assert_int_equal(mask, IBV_QP_STATE);
	if (attr->qp_state == IBV_QPS_ERR)
		fk.modifies_to_err++;
	fk.qp_state = attr->qp_state;
	return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	(void)id;
	(void)pdata;
	(void)len;
	fk.rejects++;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	(void)id;
	fk.ids_destroyed++;
	fk.acks_at_destroy = fk.cm_acks;
	return 0;
}

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	(void)ch;
	if (fk.cm_pos == fk.cm_n) {
		errno = EAGAIN;
		return -1;
	}
	*ev = fk.cm_script[fk.cm_pos++];
	return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *ev)
{
	(void)ev;
	fk.cm_acks++;
	return 0;
}

static int fake_live(void)
{
	return fk.pds + fk.chans + fk.cqs + fk.qps;
}

/* A world without a CM channel and one endpoint on a fake, resolved id. */
struct fixture {
	struct verbs_world vw;
	struct rdma_cm_id id;
	struct verbs_ep *e;
};

static int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	memset(&fk, 0, sizeof(fk));
	fk.qp_state = IBV_QPS_RTS;
	f->vw.opts.ack_timeout = -1;
	f->id.verbs = &fake_ctx;
	f->e = verbs_ep_new(&f->vw, NULL);
	f->e->id = &f->id;
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;

	verbs_ep_teardown_qp(f->e);
	f->e->id = NULL;	/* not ours to destroy */
	verbs_ep_release(f->e);
	assert_int_equal(fake_live(), 0);
	assert_null(f->vw.eps);
	free(f);
	return 0;
}

static const struct hca_qp_caps qemu_caps = {
	.max_send_wr = 512, .max_recv_wr = 3, .max_send_sge = 1, .max_recv_sge = 1,
	.cq_entries = 1536,
};

/* ---- addresses ------------------------------------------------------------------------ */

static void check_ip(const struct sockaddr_storage *ss, int family, const char *ip,
		     uint16_t port)
{
	char buf[INET6_ADDRSTRLEN];

	assert_int_equal(ss->ss_family, family);
	if (family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		assert_int_equal(ntohs(s4->sin_port), port);
		inet_ntop(AF_INET, &s4->sin_addr, buf, sizeof(buf));
	} else {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		assert_int_equal(ntohs(s6->sin6_port), port);
		inet_ntop(AF_INET6, &s6->sin6_addr, buf, sizeof(buf));
	}
	assert_string_equal(buf, ip);
}

static void test_addr_parse_good(void **state)
{
	struct verbs_addr a;

	(void)state;
	assert_int_equal(verbs_addr_parse("198.18.0.1:29200", false, &a), 0);
	check_ip(&a.dst, AF_INET, "198.18.0.1", 29200);
	assert_false(a.has_src);

	assert_int_equal(verbs_addr_parse("198.18.0.1:1@198.18.0.2", true, &a), 0);
	check_ip(&a.dst, AF_INET, "198.18.0.1", 1);
	assert_true(a.has_src);
	check_ip(&a.src, AF_INET, "198.18.0.2", 0);

	assert_int_equal(verbs_addr_parse("[fe80::1]:65535", false, &a), 0);
	check_ip(&a.dst, AF_INET6, "fe80::1", 65535);

	assert_int_equal(verbs_addr_parse("[::1]:4791@[::2]", true, &a), 0);
	check_ip(&a.dst, AF_INET6, "::1", 4791);
	check_ip(&a.src, AF_INET6, "::2", 0);
}

static void test_addr_parse_bad(void **state)
{
	static const char *const bad[] = {
		"", "198.18.0.1", "198.18.0.1:", "198.18.0.1:0", "198.18.0.1:65536",
		"198.18.0.1:123456", "198.18.0.1:12a", "198.18.0.1:+80", "198.18.0.1:-1",
		" 198.18.0.1:80", "198.18.0:80", "198.18.0.256:80", "host:80", ":80",
		"::1:80", "[::1]80", "[::1:80", "[]:80", "[198.18.0.1]:80",
		"198.18.0.1:80@", "198.18.0.1:80@198.18.0.2:5", "198.18.0.1:80@a@b",
		"198.18.0.1:80@[::1]", "[::1]:80@198.18.0.2", "198.18.0.1:80 ",
		"1.2.3.4:5:6",
	};
	struct verbs_addr a;
	char longer[VERBS_ADDR_MAX + 8];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (verbs_addr_parse(bad[i], true, &a) != -EINVAL)
			fail_msg("accepted bad address \"%s\"", bad[i]);
	}
	assert_int_equal(verbs_addr_parse(NULL, true, &a), -EINVAL);
	/* a listener takes no source */
	assert_int_equal(verbs_addr_parse("198.18.0.1:80@198.18.0.2", false, &a), -EINVAL);
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(verbs_addr_parse(longer, true, &a), -EINVAL);
}

static void test_sockaddr_eq(void **state)
{
	struct verbs_addr a, b;

	(void)state;
	assert_int_equal(verbs_addr_parse("198.18.0.1:7@198.18.0.2", true, &a), 0);
	assert_int_equal(verbs_addr_parse("198.18.0.1:7", false, &b), 0);
	assert_true(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&a.src));
	assert_int_equal(verbs_addr_parse("198.18.0.1:8", false, &b), 0);
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));	/* port */
	assert_int_equal(verbs_addr_parse("[::1]:7", false, &b), 0);
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));	/* family */
}

/* ---- translations ---------------------------------------------------------------------- */

static void test_wc_translate(void **state)
{
	struct ibv_wc in = { .wr_id = 0x1234, .status = IBV_WC_SUCCESS,
			     .opcode = IBV_WC_RDMA_WRITE, .byte_len = 77, .vendor_err = 9 };
	struct hca_wc out;

	(void)state;
	verbs_wc_translate(&in, HCA_CQ_SEND, &out);
	assert_int_equal(out.wr_id, 0x1234);
	assert_int_equal(out.status, HCA_WC_SUCCESS);
	assert_int_equal(out.opcode, HCA_WC_OP_RDMA_WRITE);
	assert_int_equal(out.byte_len, 77);
	assert_int_equal(out.vendor_err, 9);

	in.opcode = IBV_WC_SEND;
	verbs_wc_translate(&in, HCA_CQ_SEND, &out);
	assert_int_equal(out.opcode, HCA_WC_OP_SEND);

	in.opcode = IBV_WC_RECV;
	verbs_wc_translate(&in, HCA_CQ_RECV, &out);
	assert_int_equal(out.opcode, HCA_WC_OP_RECV);

	/* errors keep their number; the opcode comes from the CQ */
	in.status = IBV_WC_REM_ACCESS_ERR;
	in.opcode = 0xff;
	verbs_wc_translate(&in, HCA_CQ_SEND, &out);
	assert_int_equal(out.status, HCA_WC_REM_ACCESS_ERR);
	assert_int_equal(out.opcode, HCA_WC_OP_SEND);
	in.status = IBV_WC_WR_FLUSH_ERR;
	verbs_wc_translate(&in, HCA_CQ_RECV, &out);
	assert_int_equal(out.status, HCA_WC_WR_FLUSH_ERR);
	assert_int_equal(out.opcode, HCA_WC_OP_RECV);
	in.status = IBV_WC_RNR_RETRY_EXC_ERR;
	verbs_wc_translate(&in, HCA_CQ_SEND, &out);
	assert_int_equal(out.status, HCA_WC_RNR_RETRY_EXC_ERR);
	/* statuses the seam does not know (tag matching) become GENERAL_ERR */
	in.status = IBV_WC_TM_ERR;
	verbs_wc_translate(&in, HCA_CQ_SEND, &out);
	assert_int_equal(out.status, HCA_WC_GENERAL_ERR);
}

static void test_cm_translate(void **state)
{
	uint8_t pdata[196];
	struct rdma_cm_event ce;
	struct hca_cm_event ev;

	(void)state;
	for (size_t i = 0; i < sizeof(pdata); i++)
		pdata[i] = (uint8_t)(i + 1);
	memset(&ce, 0, sizeof(ce));
	ce.event = RDMA_CM_EVENT_ESTABLISHED;
	ce.param.conn.private_data = pdata;
	ce.param.conn.private_data_len = 196;
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.type, HCA_CM_ESTABLISHED);
	assert_int_equal(ev.pdata_len, 196);
	assert_memory_equal(ev.pdata, pdata, 196);

	ce.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	ce.param.conn.private_data_len = 56;
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.type, HCA_CM_CONNECT_REQUEST);
	assert_int_equal(ev.pdata_len, 56);
	assert_int_equal(ev.pdata[55], 56);
	assert_int_equal(ev.pdata[56], 0);

	ce.event = RDMA_CM_EVENT_REJECTED;
	ce.status = 28;	/* IB CM: consumer reject */
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.status, 28);

	/* DISCONNECTED's param is not connection data: nothing copied */
	ce.event = RDMA_CM_EVENT_DISCONNECTED;
	ce.status = 0;
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_int_equal(ev.pdata_len, 0);

	ce.event = RDMA_CM_EVENT_TIMEWAIT_EXIT;
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.type, HCA_CM_TIMEWAIT_EXIT);
	ce.event = RDMA_CM_EVENT_ADDR_CHANGE;
	assert_false(verbs_cm_translate(&ce, &ev));
	ce.event = RDMA_CM_EVENT_MULTICAST_JOIN;
	assert_false(verbs_cm_translate(&ce, &ev));
}

static void test_cm_failure(void **state)
{
	struct hca_cm_event ev = { .type = HCA_CM_ADDR_ERROR, .status = -ENETUNREACH };

	(void)state;
	assert_int_equal(verbs_cm_failure(&ev), -ENETUNREACH);
	ev.status = 0;
	assert_int_equal(verbs_cm_failure(&ev), -EHOSTUNREACH);
	ev.type = HCA_CM_ROUTE_ERROR;
	ev.status = -ETIMEDOUT;
	assert_int_equal(verbs_cm_failure(&ev), -ETIMEDOUT);
	ev = (struct hca_cm_event){ .type = HCA_CM_REJECTED, .status = 28 };
	assert_int_equal(verbs_cm_failure(&ev), -ECONNREFUSED);
	ev.type = HCA_CM_UNREACHABLE;
	assert_int_equal(verbs_cm_failure(&ev), -EHOSTUNREACH);
	ev.type = HCA_CM_DISCONNECTED;
	assert_int_equal(verbs_cm_failure(&ev), -ECONNRESET);
	ev.type = HCA_CM_DEVICE_REMOVAL;
	assert_int_equal(verbs_cm_failure(&ev), -ENODEV);
	ev.type = HCA_CM_ESTABLISHED;	/* e.g. while resolving */
	assert_int_equal(verbs_cm_failure(&ev), -EPROTO);
}

static void test_conn_param(void **state)
{
	uint8_t caps[8] = { 0, 0, 0, 1, 0, 0, 0, 1 };
	struct hca_conn_params p = { .private_data = caps, .private_data_len = 8,
				     .initiator_depth = 2, .retry_count = 5 };
	struct rdma_conn_param cp;

	(void)state;
	assert_int_equal(verbs_conn_param(&p, VERBS_REQ_PDATA_MAX, &cp), 0);
	assert_ptr_equal(cp.private_data, caps);
	assert_int_equal(cp.private_data_len, 8);
	assert_int_equal(cp.initiator_depth, 2);
	assert_int_equal(cp.retry_count, 5);
	assert_int_equal(cp.rnr_retry_count, 0);
	p.rnr_retry_count = 8;
	assert_int_equal(verbs_conn_param(&p, VERBS_REQ_PDATA_MAX, &cp), -EINVAL);
	p.rnr_retry_count = 7;
	p.retry_count = 8;
	assert_int_equal(verbs_conn_param(&p, VERBS_REQ_PDATA_MAX, &cp), -EINVAL);
	p.retry_count = 7;
	p.private_data_len = 57;	/* a REQ carries 56 bytes */
	assert_int_equal(verbs_conn_param(&p, VERBS_REQ_PDATA_MAX, &cp), -EINVAL);
	assert_int_equal(verbs_conn_param(&p, VERBS_REP_PDATA_MAX, &cp), 0);
	p.private_data = NULL;
	assert_int_equal(verbs_conn_param(&p, VERBS_REP_PDATA_MAX, &cp), -EINVAL);
}

/* ---- CM demultiplexing ---------------------------------------------------------------- */

static void test_pump_demultiplexes(void **state)
{
	struct fixture *f = *state;
	struct verbs_listener *l = calloc(1, sizeof(*l));
	struct rdma_cm_id lid = { 0 }, req_ids[VERBS_REQQ_LEN + 1], stranger = { 0 };
	uint8_t pdata[56] = { 0xca, 0xfe };
	struct rdma_cm_event reqs[VERBS_REQQ_LEN + 1], est, dis, gone;
	struct hca_cm_event ev;

	l->vw = &f->vw;
	l->id = &lid;
	f->vw.listeners = l;
	/* requests go to the listener with their private data, until its queue is full */
	for (int i = 0; i <= VERBS_REQQ_LEN; i++) {
		reqs[i] = (struct rdma_cm_event){ .event = RDMA_CM_EVENT_CONNECT_REQUEST,
						  .id = &req_ids[i], .listen_id = &lid };
		reqs[i].param.conn.private_data = pdata;
		reqs[i].param.conn.private_data_len = sizeof(pdata);
		fk.cm_script[fk.cm_n++] = &reqs[i];
	}
	/* endpoint events go to the endpoint, in order; strangers' events are dropped */
	est = (struct rdma_cm_event){ .event = RDMA_CM_EVENT_ESTABLISHED, .id = &f->id };
	gone = (struct rdma_cm_event){ .event = RDMA_CM_EVENT_DEVICE_REMOVAL, .id = &stranger };
	dis = (struct rdma_cm_event){ .event = RDMA_CM_EVENT_DISCONNECTED, .id = &f->id };
	fk.cm_script[fk.cm_n++] = &est;
	fk.cm_script[fk.cm_n++] = &gone;
	fk.cm_script[fk.cm_n++] = &dis;
	assert_int_equal(verbs_pump(&f->vw), fk.cm_n);
	assert_int_equal(fk.cm_acks, fk.cm_n);
	assert_int_equal(l->req_n, VERBS_REQQ_LEN);
	assert_ptr_equal(l->req[l->req_head].id, &req_ids[0]);
	assert_int_equal(l->req[l->req_head].ev.pdata[1], 0xfe);
	assert_int_equal(l->req[l->req_head].ev.pdata_len, 56);
	/* the one too many was rejected, then destroyed only after its event was acked */
	assert_int_equal(fk.rejects, 1);
	assert_int_equal(fk.ids_destroyed, 1);
	assert_int_equal(fk.acks_at_destroy, VERBS_REQQ_LEN + 1);
	assert_true(verbs_evq_pop(f->e, &ev));
	assert_int_equal(ev.type, HCA_CM_ESTABLISHED);
	assert_true(verbs_evq_pop(f->e, &ev));
	assert_int_equal(ev.type, HCA_CM_DISCONNECTED);
	assert_false(verbs_evq_pop(f->e, &ev));
	/* a full event queue drops and counts */
	for (int i = 0; i < VERBS_EVQ_LEN + 2; i++)
		assert_null(verbs_dispatch(&f->vw, &dis));
	assert_int_equal(f->e->evq_n, VERBS_EVQ_LEN);
	assert_int_equal(f->e->events_dropped, 2);
	/* closing rejects and destroys the requests still queued, then the listener id */
	fk.rejects = 0;
	verbs_listener_release(l);
	assert_int_equal(fk.rejects, VERBS_REQQ_LEN);
	assert_int_equal(fk.ids_destroyed, 1 + VERBS_REQQ_LEN + 1);
	assert_null(f->vw.listeners);
}

/* ---- ep setup unwinding ------------------------------------------------------------------ */

static int setup_fail_each_call(struct fixture *f, int expect_calls)
{
	int failures = 0;

	for (int n = 1; n <= expect_calls + 1; n++) {
		int rc;

		fk.calls = 0;
		fk.fail_at = n;
		fk.fail_errno = ENOMEM;
		rc = verbs_ep_setup_qp(f->e, &qemu_caps);
		if (n > expect_calls) {
			assert_int_equal(rc, 0);
			assert_int_equal(fk.calls, expect_calls);
			break;
		}
		assert_int_equal(rc, -ENOMEM);
		assert_int_equal(fake_live(), 0);
		assert_null(f->e->pd);
		assert_null(f->e->qp);
		assert_null(f->e->cq[HCA_CQ_SEND].cq);
		assert_null(f->e->cq[HCA_CQ_RECV].ch);
		failures++;
	}
	return failures;
}

static void test_setup_fail_each_call(void **state)
{
	struct fixture *f = *state;

	/* pd, channel, cq, notify, channel, cq, notify, qp */
	assert_int_equal(setup_fail_each_call(f, 8), 8);
	assert_int_equal(fk.pds, 1);
	assert_int_equal(fk.chans, 2);
	assert_int_equal(fk.cqs, 2);
	assert_int_equal(fk.qps, 1);
	assert_ptr_equal(f->e->qp, f->id.qp);
	/* set up twice: refused, nothing leaks */
	assert_int_equal(verbs_ep_setup_qp(f->e, &qemu_caps), -EINVAL);
	verbs_ep_teardown_qp(f->e);
	assert_int_equal(fake_live(), 0);
}

static void test_setup_busy_poll_has_no_channels(void **state)
{
	struct fixture *f = *state;

	f->vw.opts.poll_busy = true;
	assert_int_equal(setup_fail_each_call(f, 4), 4);	/* pd, cq, cq, qp */
	assert_int_equal(fk.chans, 0);
	assert_int_equal(fk.cqs, 2);
}

static void test_create_cq_failure_frees_pd(void **state)
{
	struct fixture *f = *state;

	fk.fail_at = 3;	/* pd, channel, then the first ibv_create_cq */
	fk.fail_errno = EINVAL;
	assert_int_equal(verbs_ep_setup_qp(f->e, &qemu_caps), -EINVAL);
	assert_int_equal(fk.pds, 0);
	assert_int_equal(fk.chans, 0);
}

static void test_setup_rejects_bad_caps(void **state)
{
	struct fixture *f = *state;
	struct hca_qp_caps c = qemu_caps;

	c.cq_entries = 2;	/* smaller than the send queue */
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	c = qemu_caps;
	c.max_recv_wr = 0;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	f->id.verbs = NULL;	/* address never resolved */
	assert_int_equal(verbs_ep_setup_qp(f->e, &qemu_caps), -EINVAL);
	assert_int_equal(fk.calls, 0);
}

static void test_rearm_acks_cq_events(void **state)
{
	struct fixture *f = *state;
	struct fake_chan *send, *recv;

	assert_int_equal(verbs_ep_setup_qp(f->e, &qemu_caps), 0);
	send = (struct fake_chan *)f->e->cq[HCA_CQ_SEND].ch;
	recv = (struct fake_chan *)f->e->cq[HCA_CQ_RECV].ch;
	send->pending = 3;
	recv->pending = 1;
	fk.arms = 0;
	assert_int_equal(verbs_ready_now(&f->vw), 0);	/* events, but no completion */
	assert_int_equal(fk.arms, 2);			/* both CQs armed again */
	assert_int_equal(send->pending + recv->pending, 0);
	assert_int_equal(send->unacked + recv->unacked, 0);
	verbs_ep_teardown_qp(f->e);
	assert_int_equal(fk.destroy_with_unacked, 0);
	assert_int_equal(fake_live(), 0);
}

/* ---- data path ------------------------------------------------------------------------------ */

static void test_recv_on_err_qp_is_flushed(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(verbs_ep_setup_qp(f->e, &qemu_caps), 0);
	/* healthy QP: one query, no modify */
	assert_int_equal(verbs_recv_post(f->e, 1, 0x1000, 64, 7), 0);
	assert_int_equal(fk.queries, 1);
	assert_int_equal(fk.modifies_to_err, 0);
	assert_false(f->e->qp_err);
	/* the QP went to ERR behind our back (remote access error): modify again */
	fk.qp_state = IBV_QPS_ERR;
	assert_int_equal(verbs_recv_post(f->e, 2, 0x1000, 64, 7), 0);
	assert_int_equal(fk.modifies_to_err, 1);
	assert_true(f->e->qp_err);
	/* known ERR: no more queries, but every RECV gets its flush */
	assert_int_equal(verbs_recv_post(f->e, 3, 0x1000, 64, 7), 0);
	assert_int_equal(fk.queries, 2);
	assert_int_equal(fk.modifies_to_err, 2);
	assert_int_equal(fk.recvs_posted, 3);
}

static void test_poll_keeps_order_through_stash(void **state)
{
	struct fixture *f = *state;
	struct hca_wc wc;

	assert_int_equal(verbs_ep_setup_qp(f->e, &qemu_caps), 0);
	fk.script[0] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_RDMA_WRITE };
	fk.script[1] = (struct ibv_wc){ .wr_id = 2, .opcode = IBV_WC_SEND };
	fk.script_n = 2;
	/* block's arm-then-peek parks both completions */
	assert_int_equal(verbs_cq_rearm(&f->e->cq[HCA_CQ_SEND]), 1);
	assert_int_equal(f->e->cq[HCA_CQ_SEND].stash_n, 2);
	fk.script[2] = (struct ibv_wc){ .wr_id = 3, .status = IBV_WC_REM_ACCESS_ERR };
	fk.script_n = 3;
	for (uint64_t want = 1; want <= 3; want++) {
		assert_int_equal(verbs_cq_poll(f->e, HCA_CQ_SEND, &wc), 1);
		assert_int_equal(wc.wr_id, want);
	}
	assert_int_equal(wc.status, HCA_WC_REM_ACCESS_ERR);
	assert_true(f->e->qp_err);
	assert_int_equal(verbs_cq_poll(f->e, HCA_CQ_SEND, &wc), 0);
	assert_int_equal(verbs_cq_rearm(&f->e->cq[HCA_CQ_SEND]), 0);
}

/* ---- world ---------------------------------------------------------------------------------- */

static void test_world_init_checks(void **state)
{
	struct hca_verbs_opts o = { .ack_timeout = 32 };

	(void)state;
	assert_int_equal(verbs_world_init(NULL, &o), -EINVAL);
	if (access("/dev/infiniband/rdma_cm", F_OK) == 0)
		return;	/* an RDMA host: the no-device path cannot be shown here */
	o.ack_timeout = 14;
	assert_int_equal(verbs_world_init(NULL, &o), -ENODEV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_parse_good),
		cmocka_unit_test(test_addr_parse_bad),
		cmocka_unit_test(test_sockaddr_eq),
		cmocka_unit_test(test_wc_translate),
		cmocka_unit_test(test_cm_translate),
		cmocka_unit_test(test_cm_failure),
		cmocka_unit_test(test_conn_param),
		cmocka_unit_test_setup_teardown(test_pump_demultiplexes, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_setup_fail_each_call, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_setup_busy_poll_has_no_channels, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_create_cq_failure_frees_pd, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_setup_rejects_bad_caps, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_rearm_acks_cq_events, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_recv_on_err_qp_is_flushed, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_poll_keeps_order_through_stash, fixture_setup,
						fixture_teardown),
		cmocka_unit_test(test_world_init_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
