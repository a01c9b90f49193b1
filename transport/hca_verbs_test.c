/* SPDX-License-Identifier: MIT */
/* Unit tests of the verbs backend that need no RDMA device.
 *
 * The backend's source is included so its static helpers can be called directly. The
 * rdma-core functions it calls are replaced by small fakes defined below (a definition in
 * this translation unit wins over the shared library), and the inline verbs (ibv_poll_cq,
 * ibv_post_recv, ibv_post_send, ibv_req_notify_cq) go through a fake ibv_context's ops.
 * The fake rdma_cm hands out ids from a pool and delivers the events a test scripts (or
 * that rdma_resolve_addr / _route / rdma_connect / rdma_accept would raise), so whole
 * flows run through the seam's front end (hca.h) too. The fakes count live objects and
 * fail the N-th fallible call, so the tests can show that every failure unwinds to zero
 * live objects and surfaces the failing call's errno. */
#include "transport/hca_verbs.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#define FK_CM_MAX 160	/* scripted CM events per test */
#define FK_IDS 16	/* rdma_cm ids alive at once */

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
	struct ibv_wc script[24];	/* what the fake poll_cq returns, in order */
	int script_n, script_pos;
	int destroy_with_unacked;
	struct rdma_cm_event *cm_script[FK_CM_MAX];	/* rdma_get_cm_event's events */
	int cm_n, cm_pos, cm_acks, acks_at_destroy;
	int cm_errno;			/* rdma_get_cm_event's errno once the script is done */
	struct rdma_cm_event evs[FK_CM_MAX];	/* storage of the events the fakes raise */
	int evs_n;
	struct { struct rdma_cm_id id; bool used; } ids[FK_IDS];
	int ids_live, cm_chans, mrs, keys;
	bool chan_bad_fd;		/* rdma_create_event_channel hands out fd -1 */
	bool comp_bad_fd;		/* ibv_create_comp_channel hands out fd -1 */
	bool resolve_silent;		/* rdma_resolve_addr raises no event (until a signal) */
	enum rdma_cm_event_type resolve_event, route_event, connect_event;
	int resolve_status;
	bool resolved_with_src;
	int ack_timeout_set;		/* the last RDMA_OPTION_ID_ACK_TIMEOUT value, -1 none */
	int reuseaddr_set;
	struct rdma_conn_param last_conn;
	struct rdma_cm_id *connecting;	/* the id of the last rdma_connect */
	int reject_rc, disconnects, sends_posted, post_send_rc, post_recv_rc, query_rc;
	int poll_rc;			/* fake_poll returns this when the script is done */
	int modify_rc;
	bool grant_like_rxe;		/* ibv_query_qp reports rxe's 2^k-1 depths (create_qp: the asked ones) */
	uint32_t asked_send_wr, asked_recv_wr;
	int cap_query_rc;		/* ibv_query_qp(IBV_QP_CAP) fails with this */
} fk;

/* Set by the SIGALRM handler: the silent resolution's event is raised now. */
static volatile sig_atomic_t fk_signalled;
static int fk_signal_fd = -1;	/* written by the handler, so a poll that began wakes up */

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
		return fk.poll_rc;
	*wc = fk.script[fk.script_pos++];
	return 1;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)bad;
	assert_int_equal(wr->num_sge, 1);
	if (fk.post_recv_rc)
		return fk.post_recv_rc;
	fk.recvs_posted++;
	return 0;
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	assert_int_equal(wr->send_flags, IBV_SEND_SIGNALED);
	if (fk.post_send_rc)
		return fk.post_send_rc;
	fk.sends_posted++;
	return 0;
}

static struct ibv_context fake_ctx = {
	.ops = { .poll_cq = fake_poll, .req_notify_cq = fake_req_notify,
		 .post_recv = fake_post_recv, .post_send = fake_post_send },
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
	c->ch.fd = fk.comp_bad_fd ? -1 : eventfd(0, EFD_CLOEXEC);	/* never ready */
	fk.chans++;
	return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	if (ch->fd >= 0)
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
	/* rxe (measured in the VM): create_qp writes back what was asked; only query_qp tells the
	 * 2^k-1 depths its rings really have */
	fk.asked_send_wr = a->cap.max_send_wr;
	fk.asked_recv_wr = a->cap.max_recv_wr;
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
	if (mask == IBV_QP_CAP) {	/* the granted depths, after create_qp */
		if (fk.cap_query_rc)
			return fk.cap_query_rc;
		memset(init, 0, sizeof(*init));
		init->cap.max_send_wr = fk.grant_like_rxe ? hca_model_granted_depth(fk.asked_send_wr) : fk.asked_send_wr;
		init->cap.max_recv_wr = fk.grant_like_rxe ? hca_model_granted_depth(fk.asked_recv_wr) : fk.asked_recv_wr;
		return 0;
	}
	(void)init;
	assert_true(mask & IBV_QP_STATE);
	fk.queries++;
	if (fk.query_rc)
		return fk.query_rc;
	attr->qp_state = fk.qp_state;
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	assert_int_equal(mask, IBV_QP_STATE);
	if (fk.modify_rc)
		return fk.modify_rc;
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
	if (fk.reject_rc) {
		errno = fk.reject_rc;
		return -1;
	}
	return 0;
}

/* Ids of the pool are handed out by rdma_create_id and connect requests; others (on a
 * test's stack) are only counted. */
int rdma_destroy_id(struct rdma_cm_id *id)
{
	fk.ids_destroyed++;
	fk.acks_at_destroy = fk.cm_acks;
	for (int i = 0; i < FK_IDS; i++) {
		if (fk.ids[i].used && &fk.ids[i].id == id) {
			fk.ids[i].used = false;
			fk.ids_live--;
		}
	}
	return 0;
}

static struct rdma_cm_id *fake_id_new(struct rdma_event_channel *ch, void *ctx)
{
	for (int i = 0; i < FK_IDS; i++) {
		if (!fk.ids[i].used) {
			memset(&fk.ids[i].id, 0, sizeof(fk.ids[i].id));
			fk.ids[i].used = true;
			fk.ids[i].id.channel = ch;
			fk.ids[i].id.context = ctx;
			fk.ids_live++;
			return &fk.ids[i].id;
		}
	}
	fail_msg("fake rdma_cm: out of ids");
	return NULL;
}

/* Appends an event to what rdma_get_cm_event returns. */
static struct rdma_cm_event *cm_push(enum rdma_cm_event_type type, struct rdma_cm_id *id,
				     struct rdma_cm_id *listen_id, int status)
{
	struct rdma_cm_event *ev;

	assert_true(fk.evs_n < FK_CM_MAX && fk.cm_n < FK_CM_MAX);
	ev = &fk.evs[fk.evs_n++];
	*ev = (struct rdma_cm_event){ .event = type, .id = id, .listen_id = listen_id,
				      .status = status };
	fk.cm_script[fk.cm_n++] = ev;
	return ev;
}

static struct rdma_cm_id *fk_silent_id;

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	(void)ch;
	if (fk_signalled && fk_silent_id) {	/* the event a signal released */
		cm_push(fk.resolve_event, fk_silent_id, NULL, fk.resolve_status);
		fk_silent_id = NULL;
	}
	if (fk.cm_pos == fk.cm_n) {
		errno = fk.cm_errno ? fk.cm_errno : EAGAIN;
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

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rdma_event_channel *ch;

	if (fake_fail())
		return NULL;
	ch = calloc(1, sizeof(*ch));
	ch->fd = fk.chan_bad_fd ? -1 : eventfd(0, EFD_CLOEXEC);
	fk.cm_chans++;
	return ch;
}

void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	if (ch->fd >= 0)
		close(ch->fd);
	free(ch);
	fk.cm_chans--;
}

int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
		   enum rdma_port_space ps)
{
	assert_int_equal(ps, RDMA_PS_TCP);
	if (fake_fail())
		return -1;
	*id = fake_id_new(ch, ctx);
	return 0;
}

int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
		    size_t optlen)
{
	(void)id;
	assert_int_equal(level, RDMA_OPTION_ID);
	if (fake_fail())
		return -1;
	if (optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
		assert_int_equal(optlen, 1);
		fk.ack_timeout_set = *(uint8_t *)optval;
	} else if (optname == RDMA_OPTION_ID_REUSEADDR) {
		assert_int_equal(optlen, sizeof(int));
		fk.reuseaddr_set = *(int *)optval;
	}
	return 0;
}

static void fake_copy_addr(struct sockaddr_storage *to, const struct sockaddr *from)
{
	memset(to, 0, sizeof(*to));
	memcpy(to, from, from->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						     : sizeof(struct sockaddr_in));
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (fake_fail())
		return -1;
	fake_copy_addr(&id->route.addr.src_storage, addr);
	id->verbs = &fake_ctx;
	return 0;
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	(void)id;
	assert_int_equal(backlog, VERBS_LISTEN_BACKLOG);
	return fake_fail() ? -1 : 0;
}

/* Binds to src (or 198.18.0.9) with a port of its own and raises resolve_event, unless
 * resolve_silent (then a SIGALRM releases it: see fk_alarm). */
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
		      int timeout_ms)
{
	assert_int_equal(timeout_ms, VERBS_RESOLVE_TIMEOUT_MS);
	if (fake_fail())
		return -1;
	fk.resolved_with_src = src != NULL;
	fake_copy_addr(&id->route.addr.dst_storage, dst);
	if (src) {
		fake_copy_addr(&id->route.addr.src_storage, src);
	} else {
		id->route.addr.src_sin.sin_family = AF_INET;
		inet_pton(AF_INET, "198.18.0.9", &id->route.addr.src_sin.sin_addr);
	}
	id->route.addr.src_sin.sin_port = htons((uint16_t)(40000 + fk.ids_live));
	id->verbs = &fake_ctx;
	if (fk.resolve_silent)
		fk_silent_id = id;
	else
		cm_push(fk.resolve_event, id, NULL, fk.resolve_status);
	return 0;
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	assert_int_equal(timeout_ms, VERBS_RESOLVE_TIMEOUT_MS);
	if (fake_fail())
		return -1;
	cm_push(fk.route_event, id, NULL, 0);
	return 0;
}

static const uint8_t fk_rep_pdata[VERBS_REP_PDATA_MAX] = { 0xd5, 0x7 };

/* The peer's answer (connect_event, ESTABLISHED by default) arrives at once. */
int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *cp)
{
	struct rdma_cm_event *ev;

	if (fake_fail())
		return -1;
	fk.last_conn = *cp;
	fk.connecting = id;
	ev = cm_push(fk.connect_event, id, NULL,
		     fk.connect_event == RDMA_CM_EVENT_REJECTED ? 28 : 0);
	ev->param.conn.private_data = fk_rep_pdata;
	ev->param.conn.private_data_len = sizeof(fk_rep_pdata);
	return 0;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *cp)
{
	if (fake_fail())
		return -1;
	fk.last_conn = *cp;
	cm_push(RDMA_CM_EVENT_ESTABLISHED, id, NULL, 0);
	return 0;
}

int rdma_disconnect(struct rdma_cm_id *id)
{
	(void)id;
	if (fake_fail())
		return -1;
	fk.disconnects++;
	return 0;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	struct ibv_mr *mr;

	assert_int_equal(iova, (uint64_t)(uintptr_t)addr);
	if (fake_fail())
		return NULL;
	mr = calloc(1, sizeof(*mr));
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->lkey = (uint32_t)++fk.keys;
	mr->rkey = access & IBV_ACCESS_REMOTE_WRITE ? (uint32_t)++fk.keys : 0;
	fk.mrs++;
	return mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (fake_fail())
		return fk.fail_errno;
	free(mr);
	fk.mrs--;
	return 0;
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	(void)device;
	return "fake0";
}

static int fake_live(void)
{
	return fk.pds + fk.chans + fk.cqs + fk.qps + fk.ids_live + fk.cm_chans + fk.mrs;
}

/* Defaults: events as a healthy fabric raises them. */
static void fk_reset(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.qp_state = IBV_QPS_RTS;
	fk.resolve_event = RDMA_CM_EVENT_ADDR_RESOLVED;
	fk.route_event = RDMA_CM_EVENT_ROUTE_RESOLVED;
	fk.connect_event = RDMA_CM_EVENT_ESTABLISHED;
	fk.ack_timeout_set = -1;
	fk_signalled = 0;
	fk_silent_id = NULL;
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

	fk_reset();
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

/* verbs_ep_setup_qp on a copy of c (it writes the granted capacities back) */
static int setup_qp(struct verbs_ep *e, const struct hca_qp_caps *c)
{
	struct hca_qp_caps g = *c;
	return verbs_ep_setup_qp(e, &g);
}

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
	struct addr_rdma a;

	(void)state;
	assert_int_equal(addr_parse("198.18.0.1:29200", false, &a), 0);
	check_ip(&a.dst, AF_INET, "198.18.0.1", 29200);
	assert_false(a.has_src);

	assert_int_equal(addr_parse("198.18.0.1:1@198.18.0.2", true, &a), 0);
	check_ip(&a.dst, AF_INET, "198.18.0.1", 1);
	assert_true(a.has_src);
	check_ip(&a.src, AF_INET, "198.18.0.2", 0);

	assert_int_equal(addr_parse("[fe80::1]:65535", false, &a), 0);
	check_ip(&a.dst, AF_INET6, "fe80::1", 65535);

	assert_int_equal(addr_parse("[::1]:4791@[::2]", true, &a), 0);
	check_ip(&a.dst, AF_INET6, "::1", 4791);
	check_ip(&a.src, AF_INET6, "::2", 0);

	/* QEMU's migration URI spelling */
	assert_int_equal(addr_parse("rdma:198.18.0.1:29200", false, &a), 0);
	check_ip(&a.dst, AF_INET, "198.18.0.1", 29200);
	assert_false(a.has_src);
	assert_int_equal(addr_parse("rdma:[fe80::1]:4444", false, &a), 0);
	check_ip(&a.dst, AF_INET6, "fe80::1", 4444);
	assert_int_equal(addr_parse("rdma:198.18.0.1:1@198.18.0.2", true, &a), 0);
	check_ip(&a.src, AF_INET, "198.18.0.2", 0);
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
		"1.2.3.4:5:6", "rdma:", "rdma:198.18.0.1", "rdma:host:4444", "rdma:rdma:1.2.3.4:5",
		"RDMA:1.2.3.4:5", "tcp:1.2.3.4:5", "rdma:[::1]:0", " rdma:1.2.3.4:5", "rdma: 1.2.3.4:5",
	};
	struct addr_rdma a;
	char longer[ADDR_MAX + 8];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (addr_parse(bad[i], true, &a) != -EINVAL)
			fail_msg("accepted bad address \"%s\"", bad[i]);
	}
	assert_int_equal(addr_parse(NULL, true, &a), -EINVAL);
	/* a listener takes no source */
	assert_int_equal(addr_parse("198.18.0.1:80@198.18.0.2", false, &a), -EINVAL);
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	assert_int_equal(addr_parse(longer, true, &a), -EINVAL);
}

static void test_sockaddr_eq(void **state)
{
	struct addr_rdma a, b;

	(void)state;
	assert_int_equal(addr_parse("198.18.0.1:7@198.18.0.2", true, &a), 0);
	assert_int_equal(addr_parse("198.18.0.1:7", false, &b), 0);
	assert_true(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&a.src));
	assert_int_equal(addr_parse("198.18.0.1:8", false, &b), 0);
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));	/* port */
	assert_int_equal(addr_parse("[::1]:7", false, &b), 0);
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
	struct verbs_listener *l = verbs_listener_new(&f->vw);
	struct rdma_cm_id lid = { 0 }, req_ids[VERBS_REQQ_LEN + 1], stranger = { 0 };
	uint8_t pdata[56] = { 0xca, 0xfe };
	struct rdma_cm_event reqs[VERBS_REQQ_LEN + 1], est, dis, gone;
	struct hca_cm_event ev;
	struct verbs_request *head;

	assert_non_null(l);
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
	assert_int_equal(ring_len(&l->req), VERBS_REQQ_LEN);
	for (size_t i = 0; i < VERBS_REQQ_LEN; i++)	/* in the order rdma_cm raised them */
		assert_ptr_equal(((struct verbs_request *)ring_at(&l->req, i))->id, &req_ids[i]);
	head = ring_at(&l->req, 0);
	assert_int_equal(head->ev.pdata[1], 0xfe);
	assert_int_equal(head->ev.pdata_len, 56);
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
	assert_int_equal(ring_len(&f->e->evq), VERBS_EVQ_LEN);
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
		rc = setup_qp(f->e, &qemu_caps);
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
	assert_int_equal(setup_qp(f->e, &qemu_caps), -EINVAL);
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
	assert_int_equal(setup_qp(f->e, &qemu_caps), -EINVAL);
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
	assert_int_equal(setup_qp(f->e, &qemu_caps), -EINVAL);
	assert_int_equal(fk.calls, 0);
}

/* The granted capacities are read back from rdma_create_qp: rxe grants 1023 for QEMU's 512,
 * and that is the depth the front end then allows (issue 12). */
static void test_setup_reads_granted_caps(void **state)
{
	struct fixture *f = *state;
	struct hca_qp_caps c = qemu_caps;

	fk.grant_like_rxe = true;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), 0);
	assert_int_equal(c.max_send_wr, 1023);
	assert_int_equal(c.max_recv_wr, 3);
	verbs_ep_teardown_qp(f->e);
	fk.grant_like_rxe = false;
	c = qemu_caps;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), 0);	/* a device that grants what was asked */
	assert_int_equal(c.max_send_wr, 512);
	verbs_ep_teardown_qp(f->e);
	/* a grant past the CQs' size is cut to it: more outstanding WRs would overrun the CQ */
	fk.grant_like_rxe = true;
	c = qemu_caps;
	c.cq_entries = 600;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), 0);
	assert_int_equal(c.max_send_wr, 600);
	assert_int_equal(c.max_recv_wr, 3);
	verbs_ep_teardown_qp(f->e);
	/* a device whose query_qp fails: what create_qp wrote back (the asked depths) */
	fk.cap_query_rc = EINVAL;
	c = qemu_caps;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), 0);
	assert_int_equal(c.max_send_wr, 512);
	verbs_ep_teardown_qp(f->e);
	fk.cap_query_rc = 0;
	fk.grant_like_rxe = false;
	assert_int_equal(fake_live(), 0);
}

static void test_rearm_acks_cq_events(void **state)
{
	struct fixture *f = *state;
	struct fake_chan *send, *recv;

	assert_int_equal(setup_qp(f->e, &qemu_caps), 0);
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

/* ---- data path --------------------------------------------------------------------------- */

static void test_recv_on_err_qp_is_flushed(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(setup_qp(f->e, &qemu_caps), 0);
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

	assert_int_equal(setup_qp(f->e, &qemu_caps), 0);
	fk.script[0] = (struct ibv_wc){ .wr_id = 1, .opcode = IBV_WC_RDMA_WRITE };
	fk.script[1] = (struct ibv_wc){ .wr_id = 2, .opcode = IBV_WC_SEND };
	fk.script_n = 2;
	/* block's arm-then-peek parks both completions */
	assert_int_equal(verbs_cq_rearm(&f->e->cq[HCA_CQ_SEND]), 1);
	assert_int_equal(ring_len(&f->e->cq[HCA_CQ_SEND].stash), 2);
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

/* ---- world ------------------------------------------------------------------------------- */

static void test_world_init_checks(void **state)
{
	struct hca_verbs_opts o = { .ack_timeout = 32 };
	hca_world *w = NULL;

	(void)state;
	fk_reset();
	/* an ACK timeout exponent over 31 is refused before anything is opened */
	assert_int_equal(verbs_world_init(NULL, &o), -EINVAL);
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &o, NULL, &w), -EINVAL);
	assert_int_equal(fk.calls, 0);
	o.ack_timeout = 31;
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &o, NULL, &w), 0);
	hca_world_free(w);
	/* no options: rdma-core's defaults (no ACK timeout set, completion channels) */
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, NULL, NULL, &w), 0);
	assert_int_equal(((struct verbs_world *)hca_world_priv(w))->opts.ack_timeout, -1);
	assert_false(((struct verbs_world *)hca_world_priv(w))->opts.poll_busy);
	assert_string_equal(hca_world_backend_name(w), "verbs");
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);
	/* no rdma_cm device: the channel cannot be opened (ENODEV also when errno says nothing) */
	o.ack_timeout = 14;
	fk.fail_at = fk.calls + 1;
	fk.fail_errno = ENODEV;
	assert_int_equal(verbs_world_init(NULL, &o), -ENODEV);
	fk.fail_at = fk.calls + 1;
	fk.fail_errno = 0;
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &o, NULL, &w), -ENODEV);
	/* a channel whose fd cannot be made nonblocking is closed again */
	fk.chan_bad_fd = true;
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &o, NULL, &w), -EBADF);
	assert_int_equal(fake_live(), 0);
}

/* ---- more addresses, translations, demultiplexing ---------------------------------------- */

static void test_addr_parse_limits(void **state)
{
	struct addr_rdma a;
	char s[ADDR_MAX];

	(void)state;
	/* the longest IPv6 text (45 characters) fits between the brackets */
	assert_int_equal(addr_parse("[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:9",
					  false, &a), 0);
	check_ip(&a.dst, AF_INET6, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 9);
	assert_int_equal(addr_parse("[::ffff:198.18.0.1]:29200", false, &a), 0);
	check_ip(&a.dst, AF_INET6, "::ffff:198.18.0.1", 29200);
	/* 47 characters between the brackets: longer than any IPv6 address */
	snprintf(s, sizeof(s), "[%s]:80", "0000:0000:0000:0000:0000:0000:0000:0000:0000:00");
	assert_int_equal(strlen(s), 47 + 5);
	assert_int_equal(addr_parse(s, false, &a), -EINVAL);
	/* a source that opens a bracket and never closes it */
	assert_int_equal(addr_parse("[::1]:80@[::2", true, &a), -EINVAL);
	assert_int_equal(addr_parse("198.18.0.1:80@[198.18.0.2", true, &a), -EINVAL);
	/* long forms, written out in full, for both ends */
	assert_int_equal(addr_parse("[0000:0000:0000:0000:0000:0000:0000:0001]:65535"
					  "@[0000:0000:0000:0000:0000:0000:0000:0002]", true,
					  &a), 0);
	check_ip(&a.dst, AF_INET6, "::1", 65535);
	check_ip(&a.src, AF_INET6, "::2", 0);
}

static void test_sockaddr_eq_ipv6_and_others(void **state)
{
	struct addr_rdma a, b;
	struct sockaddr_storage u1, u2;

	(void)state;
	assert_int_equal(addr_parse("[fe80::1]:7", false, &a), 0);
	assert_int_equal(addr_parse("[fe80::1]:7", false, &b), 0);
	assert_true(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));
	assert_int_equal(addr_parse("[fe80::1]:8", false, &b), 0);
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));	/* port */
	assert_int_equal(addr_parse("[fe80::2]:7", false, &b), 0);
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));	/* address */
	/* IPv4: same port, other address */
	assert_int_equal(addr_parse("198.18.0.1:7", false, &a), 0);
	assert_int_equal(addr_parse("198.18.0.2:7", false, &b), 0);
	assert_false(verbs_sockaddr_eq((void *)&a.dst, (void *)&b.dst));
	/* neither IPv4 nor IPv6 (an id never bound): never equal, even to itself */
	memset(&u1, 0, sizeof(u1));
	memset(&u2, 0, sizeof(u2));
	assert_false(verbs_sockaddr_eq((void *)&u1, (void *)&u2));
}

static void test_cm_translate_response_and_long_pdata(void **state)
{
	uint8_t pdata[255];
	struct rdma_cm_event ce;
	struct hca_cm_event ev;

	(void)state;
	for (size_t i = 0; i < sizeof(pdata); i++)
		pdata[i] = (uint8_t)(255 - i);
	memset(&ce, 0, sizeof(ce));
	ce.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
	ce.param.conn.private_data = pdata;
	ce.param.conn.private_data_len = 40;
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.type, HCA_CM_CONNECT_RESPONSE);
	assert_int_equal(ev.pdata_len, 40);
	assert_memory_equal(ev.pdata, pdata, 40);
	/* more than the seam keeps (a provider's 255): cut at HCA_PDATA_MAX */
	ce.event = RDMA_CM_EVENT_ESTABLISHED;
	ce.param.conn.private_data_len = 255;
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.pdata_len, HCA_PDATA_MAX);
	assert_memory_equal(ev.pdata, pdata, HCA_PDATA_MAX);
	/* a connection event without private data */
	ce.param.conn.private_data = NULL;
	assert_true(verbs_cm_translate(&ce, &ev));
	assert_int_equal(ev.pdata_len, 0);
}

/* Requests for no known listener are rejected; unknown events dropped; at most
 * VERBS_PUMP_MAX events per pump; EINTR ends a pump quietly, other errors are kept. */
static void test_pump_edges(void **state)
{
	struct fixture *f = *state;
	struct verbs_listener *l = verbs_listener_new(&f->vw);
	struct rdma_cm_id lid = { 0 }, other_lid = { 0 }, req = { 0 }, stranger = { 0 };
	struct hca_cm_event ev;

	assert_non_null(l);
	l->id = &lid;
	f->vw.listeners = l;
	cm_push(RDMA_CM_EVENT_CONNECT_REQUEST, &req, &other_lid, 0);
	cm_push(RDMA_CM_EVENT_ADDR_CHANGE, &f->id, NULL, 0);
	for (int i = 0; i < VERBS_PUMP_MAX + 6; i++)
		cm_push(RDMA_CM_EVENT_DISCONNECTED, &stranger, NULL, 0);
	cm_push(RDMA_CM_EVENT_ESTABLISHED, &f->id, NULL, 0);
	assert_int_equal(verbs_pump(&f->vw), VERBS_PUMP_MAX);
	assert_int_equal(fk.cm_acks, VERBS_PUMP_MAX);
	assert_int_equal(fk.rejects, 1);		/* the request nobody listens for */
	assert_int_equal(fk.ids_destroyed, 1);
	assert_int_equal(ring_len(&l->req), 0);
	assert_false(verbs_evq_pop(f->e, &ev));	/* ADDR_CHANGE is not the seam's */
	/* the rest comes with the next pump, in order */
	assert_int_equal(verbs_pump(&f->vw), 9);
	assert_true(verbs_evq_pop(f->e, &ev));
	assert_int_equal(ev.type, HCA_CM_ESTABLISHED);
	/* interrupted: nothing read, no error kept */
	fk.cm_errno = EINTR;
	assert_int_equal(verbs_pump(&f->vw), 0);
	assert_int_equal(f->vw.cm_error, 0);
	/* a hard error (credentials changed since the channel was opened) is kept */
	fk.cm_errno = EACCES;
	assert_int_equal(verbs_pump(&f->vw), 0);
	assert_int_equal(f->vw.cm_error, -EACCES);
	verbs_listener_release(l);
}

/* ---- setup limits and failing calls ------------------------------------------------------ */

static void test_caps_each_limit(void **state)
{
	struct fixture *f = *state;
	const struct hca_qp_caps ok = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					.max_recv_sge = 1, .cq_entries = 8 };
	struct hca_qp_caps c;

	c = ok, c.max_send_wr = 0;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	c = ok, c.max_send_sge = 0;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	c = ok, c.max_recv_sge = 0;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	c = ok, c.cq_entries = 0;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	c = ok, c.cq_entries = (uint32_t)INT32_MAX + 1u;	/* ibv_create_cq takes an int */
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	c = ok, c.max_send_wr = 2, c.max_recv_wr = 9;		/* the recv CQ cannot hold them */
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), -EINVAL);
	assert_int_equal(fk.calls, 0);
	assert_int_equal(fake_live(), 0);
	/* an endpoint with no rdma_cm id yet */
	f->e->id = NULL;
	assert_int_equal(setup_qp(f->e, &ok), -EINVAL);
	f->e->id = &f->id;
	c = ok, c.cq_entries = (uint32_t)INT32_MAX;
	assert_int_equal(verbs_ep_setup_qp(f->e, &c), 0);
	assert_int_equal(f->e->cq[HCA_CQ_RECV].cq->cqe, INT32_MAX);
}

/* A provider that returns -1 instead of an errno: -EIO. A failing call with errno 0: -EIO. */
static void test_failures_without_errno(void **state)
{
	struct fixture *f = *state;

	fk.fail_at = 4;	/* pd, channel, cq, then the first ibv_req_notify_cq */
	fk.fail_errno = -1;
	assert_int_equal(setup_qp(f->e, &qemu_caps), -EIO);
	assert_int_equal(fake_live(), 0);
	fk.calls = 0;
	fk.fail_at = 1;
	fk.fail_errno = 0;
	assert_int_equal(setup_qp(f->e, &qemu_caps), -EIO);	/* ibv_alloc_pd */
	assert_int_equal(fake_live(), 0);
	/* a completion channel whose fd cannot be made nonblocking */
	fk.fail_at = 0;
	fk.comp_bad_fd = true;
	assert_int_equal(setup_qp(f->e, &qemu_caps), -EBADF);
	assert_int_equal(fake_live(), 0);
}

static void test_ack_timeout_option(void **state)
{
	struct fixture *f = *state;

	f->vw.opts.ack_timeout = -1;	/* leave rdma_cm's default */
	assert_int_equal(verbs_set_ack_timeout(f->e), 0);
	assert_int_equal(fk.ack_timeout_set, -1);
	f->vw.opts.ack_timeout = VERBS_ACK_TIMEOUT_MAX;
	assert_int_equal(verbs_set_ack_timeout(f->e), 0);
	assert_int_equal(fk.ack_timeout_set, VERBS_ACK_TIMEOUT_MAX);
	fk.fail_at = fk.calls + 1;
	fk.fail_errno = ENOSYS;	/* an old kernel without the option */
	assert_int_equal(verbs_set_ack_timeout(f->e), -ENOSYS);
}

/* post_recv: the provider's error is returned; a QP whose state cannot be queried is taken
 * as healthy (no flush forced). */
static void test_recv_post_errors(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(setup_qp(f->e, &qemu_caps), 0);
	fk.post_recv_rc = ENOMEM;	/* receive queue full */
	assert_int_equal(verbs_recv_post(f->e, 1, 0x1000, 64, 7), -ENOMEM);
	fk.post_recv_rc = -1;
	assert_int_equal(verbs_recv_post(f->e, 1, 0x1000, 64, 7), -EIO);
	assert_int_equal(fk.queries, 0);
	fk.post_recv_rc = 0;
	fk.query_rc = EINVAL;
	fk.qp_state = IBV_QPS_ERR;	/* not seen: the query fails */
	assert_int_equal(verbs_recv_post(f->e, 2, 0x1000, 64, 7), 0);
	assert_int_equal(fk.queries, 1);
	assert_int_equal(fk.modifies_to_err, 0);
	assert_false(f->e->qp_err);
}

/* More channel events than one re-arm acks; more completions than the stash holds; a CQ
 * that fails to poll. */
static void test_cq_limits(void **state)
{
	struct fixture *f = *state;
	struct verbs_cq *q;
	struct fake_chan *ch;
	struct hca_wc wc;

	assert_int_equal(setup_qp(f->e, &qemu_caps), 0);
	q = &f->e->cq[HCA_CQ_SEND];
	ch = (struct fake_chan *)q->ch;
	ch->pending = VERBS_CQ_EVENTS_MAX + 10;
	assert_int_equal(verbs_cq_rearm(q), 0);
	assert_int_equal(ch->pending, 10);	/* the rest waits for the next re-arm */
	assert_int_equal(ch->unacked, 0);
	assert_int_equal(verbs_cq_rearm(q), 0);
	assert_int_equal(ch->pending, 0);
	for (int i = 0; i < 20; i++)
		fk.script[i] = (struct ibv_wc){ .wr_id = (uint64_t)i + 1, .opcode = IBV_WC_SEND };
	fk.script_n = 20;
	assert_int_equal(verbs_cq_rearm(q), 1);
	assert_int_equal(ring_len(&q->stash), VERBS_STASH_LEN);
	assert_int_equal(fk.script_pos, VERBS_STASH_LEN);
	for (uint64_t want = 1; want <= 20; want++) {
		assert_int_equal(verbs_cq_poll(f->e, HCA_CQ_SEND, &wc), 1);
		assert_int_equal(wc.wr_id, want);
		assert_int_equal(wc.opcode, HCA_WC_OP_SEND);
	}
	fk.poll_rc = -2;	/* the provider failed to poll */
	assert_int_equal(verbs_cq_poll(f->e, HCA_CQ_SEND, &wc), -EIO);
	assert_int_equal(verbs_cq_poll(f->e, HCA_CQ_RECV, &wc), -EIO);
	fk.poll_rc = 0;
	assert_false(f->e->qp_err);
}

/* ---- whole flows through the seam on the fake rdma_cm ------------------------------------ */

#define FLOW_WAIT_NS (2ull * VCLOCK_NS_PER_S)

static const struct hca_verbs_opts flow_opts = { .ack_timeout = 14 };
static const struct hca_qp_caps flow_caps = {
	.max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1, .cq_entries = 16,
};
static const uint8_t flow_pdata[8] = { 0, 0, 0, 1, 0, 0, 0, 1 };
static const struct hca_conn_params flow_cp = {
	.private_data = flow_pdata, .private_data_len = sizeof(flow_pdata), .initiator_depth = 2,
	.retry_count = 5,
};
static const struct hca_conn_params flow_ap = {
	.private_data = flow_pdata, .private_data_len = sizeof(flow_pdata),
	.responder_resources = 2, .rnr_retry_count = 7,
};

struct flow {
	hca_world *w;
	hca_listener *l;
	hca_ep *src, *dst;
	hca_mr *mr;
	struct hca_cm_event req, reply;
	uint8_t buf[4096];
};

static struct rdma_cm_id *ep_id(hca_ep *ep)
{
	return ((struct verbs_ep *)hca_ep_priv(ep))->id;
}

/* The connect request rdma_cm raises at l for src's connection (addresses mirrored). */
static struct rdma_cm_id *push_request(hca_listener *l, hca_ep *src)
{
	struct verbs_listener *vl = hca_listener_priv(l);
	struct rdma_cm_id *id = fake_id_new(vl->id->channel, vl->id->context);
	struct rdma_cm_event *ev;

	id->verbs = &fake_ctx;
	if (src) {
		id->route.addr.src_storage = ep_id(src)->route.addr.dst_storage;
		id->route.addr.dst_storage = ep_id(src)->route.addr.src_storage;
	}
	ev = cm_push(RDMA_CM_EVENT_CONNECT_REQUEST, id, vl->id, 0);
	ev->param.conn.private_data = flow_pdata;
	ev->param.conn.private_data_len = sizeof(flow_pdata);
	return id;
}

/* src connects (the fake peer answers at once), then dst takes the request and accepts;
 * an MR comes and goes; src disconnects. The first failing step's rc, else 0. */
static int flow_run(struct flow *f)
{
	int rc;

	if ((rc = hca_world_new(HCA_BACKEND_VERBS, NULL, &flow_opts, NULL, &f->w)) < 0 ||
	    (rc = hca_ep_create(f->w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &f->src)) < 0 ||
	    (rc = hca_ep_setup(f->src, &flow_caps)) < 0 ||
	    (rc = hca_connect(f->src, &flow_cp, FLOW_WAIT_NS, &f->reply)) < 0 ||
	    (rc = hca_listen(f->w, VOCAB_SIDE_DST, "198.18.0.1:29200", &f->l)) < 0)
		return rc;
	push_request(f->l, f->src);
	rc = hca_listener_poll(f->l, &f->dst, &f->req);
	if (rc != 1)
		return rc < 0 ? rc : -ENOENT;
	if ((rc = hca_ep_setup(f->dst, &flow_caps)) < 0 ||
	    (rc = hca_accept(f->dst, &flow_ap)) < 0 ||
	    (rc = hca_reg_mr(f->src, (uint64_t)(uintptr_t)f->buf, sizeof(f->buf),
			     HCA_ACCESS_LOCAL_WRITE, &f->mr)) < 0 ||
	    (rc = hca_dereg_mr(f->mr)) < 0)
		return rc;
	f->mr = NULL;
	return hca_disconnect(f->src);
}

/* Releases whatever of f exists (an MR whose dereg failed is deregistered again). */
static void flow_close(struct flow *f)
{
	if (f->mr)
		assert_int_equal(hca_dereg_mr(f->mr), 0);
	hca_ep_destroy(f->src);
	hca_ep_destroy(f->dst);
	hca_listener_close(f->l);
	if (f->w) {
		assert_int_equal(hca_world_live_objects(f->w), 0);
		hca_world_free(f->w);
	}
	memset(f, 0, sizeof(*f));
	assert_int_equal(fake_live(), 0);
}

static void test_flow_connects_through_the_seam(void **state)
{
	struct flow *f = calloc(1, sizeof(*f));
	struct verbs_ep *se, *de;

	(void)state;
	assert_non_null(f);
	fk_reset();
	assert_int_equal(flow_run(f), 0);
	assert_true(fk.resolved_with_src);
	assert_int_equal(fk.ack_timeout_set, 14);
	assert_int_equal(fk.reuseaddr_set, 1);
	/* the request's and the answer's private data */
	assert_int_equal(f->req.type, HCA_CM_CONNECT_REQUEST);
	assert_int_equal(f->req.pdata_len, sizeof(flow_pdata));
	assert_memory_equal(f->req.pdata, flow_pdata, sizeof(flow_pdata));
	assert_int_equal(f->reply.type, HCA_CM_ESTABLISHED);
	assert_int_equal(f->reply.pdata_len, VERBS_REP_PDATA_MAX);
	assert_int_equal(f->reply.pdata[0], 0xd5);
	/* accept's parameters reach rdma_accept */
	assert_int_equal(fk.last_conn.rnr_retry_count, 7);
	assert_int_equal(fk.last_conn.responder_resources, 2);
	assert_string_equal(hca_ep_device(f->src), "fake0");
	/* the two ends find each other by their addresses */
	assert_ptr_equal(hca_verbs_ops.peer(f->src), f->dst);
	assert_ptr_equal(hca_verbs_ops.peer(f->dst), f->src);
	/* rdma_disconnect put src's own QP in ERR; dst's is untouched */
	se = hca_ep_priv(f->src);
	de = hca_ep_priv(f->dst);
	assert_int_equal(fk.disconnects, 1);
	assert_true(se->qp_err);
	assert_false(de->qp_err);
	flow_close(f);
	free(f);
}

/* Every fallible rdma-core call of the flow fails once in turn (world, resolve, setup,
 * connect, listen, accept, MR, disconnect): the step returns that call's errno and the
 * teardown leaves no object behind. */
static void test_flow_fails_at_each_call(void **state)
{
	struct flow *f = calloc(1, sizeof(*f));
	int n, calls = 0;

	(void)state;
	assert_non_null(f);
	for (n = 1; n < 64; n++) {
		int rc;

		fk_reset();
		fk.fail_at = n;
		fk.fail_errno = EHOSTDOWN;
		rc = flow_run(f);
		calls = fk.calls;
		flow_close(f);
		if (rc == 0)
			break;
		if (rc != -EHOSTDOWN)
			fail_msg("failing call %d: rc %d, expected %d", n, rc, -EHOSTDOWN);
	}
	/* 1 channel + 3 resolve + 8 setup + 2 connect + 4 listen + 8 setup + 2 accept + reg,
	 * dereg, disconnect */
	assert_int_equal(calls, 31);
	assert_int_equal(n, 32);
	free(f);
}

/* Resolution ends in an error event, a route error, an event of the wrong kind; without a
 * source address the device is left to rdma_cm. Nothing stays behind. */
static void test_resolve_failures(void **state)
{
	hca_world *w;
	hca_ep *ep = NULL;
	int calls;

	(void)state;
	fk_reset();
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, NULL, NULL, &w), 0);
	fk.resolve_event = RDMA_CM_EVENT_ADDR_ERROR;
	fk.resolve_status = -ENETUNREACH;
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &ep), -ENETUNREACH);
	fk.resolve_status = 0;	/* no status: unreachable */
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200", &ep), -EHOSTUNREACH);
	fk.resolve_event = RDMA_CM_EVENT_ADDR_RESOLVED;
	fk.route_event = RDMA_CM_EVENT_ROUTE_ERROR;
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200", &ep), -EHOSTUNREACH);
	fk.route_event = RDMA_CM_EVENT_ESTABLISHED;	/* not what resolving waits for */
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200", &ep), -EPROTO);
	assert_null(ep);
	assert_int_equal(fk.ids_live, 0);
	assert_int_equal(hca_world_live_objects(w), 0);
	/* without "@SRC", rdma_resolve_addr picks the source */
	fk.route_event = RDMA_CM_EVENT_ROUTE_RESOLVED;
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "[fe80::1]:29200", &ep), 0);
	assert_false(fk.resolved_with_src);
	assert_int_equal(ep_id(ep)->route.addr.dst_sin6.sin6_family, AF_INET6);
	hca_ep_destroy(ep);
	/* a bad address makes no call at all */
	calls = fk.calls;
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "[fe80::1]:29200@198.18.0.2", &ep), -EINVAL);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1", &ep), -EINVAL);
	assert_int_equal(fk.calls, calls);
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);
}

/* Several listeners in a world, closed in any order; requests and refusals; a hard CM
 * channel error reaches listener_poll and poll_event. */
static void test_listeners(void **state)
{
	hca_world *w;
	hca_listener *a, *b, *c;
	hca_ep *src, *ep;
	struct hca_cm_event req, ev;
	struct rdma_cm_id *rid;

	(void)state;
	fk_reset();
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &flow_opts, NULL, &w), 0);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "198.18.0.1:1", &a), 0);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "198.18.0.1:2", &b), 0);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "[::]:3", &c), 0);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "198.18.0.1:4@198.18.0.2", &a), -EINVAL);
	assert_int_equal(fk.ids_live, 3);
	assert_int_equal(hca_listener_poll(a, &ep, &req), 0);
	/* a request goes to its own listener only */
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:2@198.18.0.2", &src), 0);
	push_request(b, src);
	assert_int_equal(hca_listener_poll(a, &ep, &req), 0);
	assert_int_equal(hca_listener_poll(c, &ep, &req), 0);
	assert_int_equal(hca_listener_poll(b, &ep, &req), 1);
	/* refused: rdma_reject; a second refusal that rdma_cm refuses returns its errno */
	assert_int_equal(hca_reject(ep), 0);
	assert_int_equal(fk.rejects, 1);
	fk.reject_rc = EINVAL;
	assert_int_equal(hca_reject(ep), -EINVAL);
	fk.reject_rc = 0;
	hca_ep_destroy(ep);
	/* a request whose id has no device yet: "none", and no QP can be made on it */
	rid = push_request(a, NULL);
	rid->verbs = NULL;
	assert_int_equal(hca_listener_poll(a, &ep, &req), 1);
	assert_string_equal(hca_verbs_ops.device(ep), "none");
	assert_int_equal(hca_ep_setup(ep, &flow_caps), -EINVAL);
	hca_ep_destroy(ep);
	/* backend arguments */
	assert_int_equal(hca_verbs_ops.listener_poll(a, NULL, &req), -EINVAL);
	assert_int_equal(hca_verbs_ops.listener_poll(a, src, NULL), -EINVAL);
	/* the CM channel broke for good: the backend's pollers and the front end's report it (an
	 * endpoint's wait then fails with the error instead of running into its timeout) */
	fk.cm_errno = EACCES;
	assert_int_equal(hca_listener_poll(a, &ep, &req), -EACCES);
	assert_int_equal(hca_verbs_ops.poll_event(src, &ev), -EACCES);
	assert_int_equal(hca_ep_poll_event(src, &ev), -EACCES);
	fk.cm_errno = 0;
	hca_ep_destroy(src);
	/* close the middle one, then the first, then the last; the backend's close is
	 * idempotent */
	hca_listener_close(b);
	hca_verbs_ops.listener_close(c);
	assert_null(hca_listener_priv(c));
	assert_int_equal(hca_listener_poll(c, &ep, &req), -EINVAL);
	hca_listener_close(c);
	hca_listener_close(a);
	assert_int_equal(fk.ids_live, 0);
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);
}

/* The backend refuses (-EINVAL, "none", NULL) what makes no sense: missing arguments, an
 * endpoint without a QP yet, and one whose backend state was torn down. */
static void test_endpoint_states_refused(void **state)
{
	struct hca_send_wr wr = { .opcode = HCA_WR_SEND, .signaled = true };
	const struct hca_backend_ops *o = &hca_verbs_ops;
	hca_world *w;
	hca_ep *src, *bare;
	hca_mr *mr;
	struct hca_wc wc;
	struct hca_cm_event ev;
	uint8_t buf[64];
	struct hca_send_report rep = { 0 };

	(void)state;
	fk_reset();
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &flow_opts, NULL, &w), 0);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &src), 0);
	assert_int_equal(hca_ep_setup(src, &flow_caps), 0);
	/* missing or bad arguments on a ready endpoint */
	assert_int_equal(o->ep_setup(src, NULL), -EINVAL);
	assert_int_equal(o->connect(src, NULL), -EINVAL);
	assert_int_equal(o->accept(src, NULL), -EINVAL);
	assert_int_equal(o->poll_event(src, NULL), -EINVAL);
	assert_int_equal(o->post_send(src, NULL, &rep), -EINVAL);
	wr.signaled = false;
	assert_int_equal(o->post_send(src, &wr, &rep), -EINVAL);
	wr.signaled = true;
	wr.opcode = (enum hca_send_opcode)7;
	assert_int_equal(o->post_send(src, &wr, &rep), -EINVAL);
	wr.opcode = HCA_WR_SEND;
	assert_int_equal(o->poll_cq(src, (enum hca_cq_kind)2, &wc), -EINVAL);
	assert_int_equal(o->poll_cq(src, HCA_CQ_SEND, NULL), -EINVAL);
	assert_int_equal(fk.sends_posted, 0);
	/* parameters rdma_cm would refuse: retry counts over 7 */
	assert_int_equal(hca_connect(src, &(struct hca_conn_params){ .retry_count = 8 },
				     FLOW_WAIT_NS, NULL), -EINVAL);
	assert_int_equal(hca_accept(src, &(struct hca_conn_params){ .rnr_retry_count = 8 }),
			 -EINVAL);
	/* not connected yet: no peer; an MR at address 0 is refused */
	assert_null(o->peer(src));
	assert_int_equal(hca_reg_mr(src, 0, 4096, HCA_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	/* On-Demand Paging is modelled only: refused before rdma-core is asked */
	assert_int_equal(hca_reg_mr(src, (uint64_t)(uintptr_t)buf, sizeof(buf),
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_ON_DEMAND, &mr),
			 -EOPNOTSUPP);
	assert_int_equal(o->advise_mr(NULL), -EOPNOTSUPP);
	/* provider failures reach the caller */
	fk.post_send_rc = ENOMEM;
	assert_int_equal(o->post_send(src, &wr, &rep), -ENOMEM);
	fk.modify_rc = EINVAL;
	assert_int_equal(o->qp_to_error(src), -EINVAL);
	assert_false(((struct verbs_ep *)hca_ep_priv(src))->qp_err);
	fk.modify_rc = 0;
	fk.fail_at = fk.calls + 1;
	fk.fail_errno = 0;	/* ibv_reg_mr failed and said nothing */
	assert_int_equal(hca_reg_mr(src, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), -ENOMEM);
	/* an endpoint with an address but no QP */
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &bare), 0);
	assert_int_equal(o->connect(bare, &flow_cp), -EINVAL);
	assert_int_equal(o->accept(bare, &flow_ap), -EINVAL);
	assert_int_equal(o->post_recv(bare, 1, (uint64_t)(uintptr_t)buf, 64, 1), -EINVAL);
	assert_int_equal(o->post_send(bare, &wr, &rep), -EINVAL);
	assert_int_equal(o->poll_cq(bare, HCA_CQ_RECV, &wc), -EINVAL);
	assert_int_equal(o->qp_to_error(bare), -EINVAL);
	assert_int_equal(hca_reg_mr(bare, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), -EINVAL);
	assert_int_equal(hca_disconnect(bare), 0);	/* nothing to put in ERR */
	assert_false(((struct verbs_ep *)hca_ep_priv(bare))->qp_err);
	fk.fail_at = fk.calls + 1;
	fk.fail_errno = ENOTCONN;
	assert_int_equal(hca_disconnect(bare), -ENOTCONN);
	/* torn down behind the front end's back: every operation refuses */
	o->ep_destroy(bare);
	assert_null(hca_ep_priv(bare));
	struct hca_qp_caps fc = flow_caps;
	assert_int_equal(o->ep_setup(bare, &fc), -EINVAL);
	assert_int_equal(o->connect(bare, &flow_cp), -EINVAL);
	assert_int_equal(o->accept(bare, &flow_ap), -EINVAL);
	assert_int_equal(o->reject(bare), -EINVAL);
	assert_int_equal(o->poll_event(bare, &ev), -EINVAL);
	assert_int_equal(o->disconnect(bare), -EINVAL);
	assert_null(o->peer(bare));
	assert_string_equal(o->device(bare), "none");
	assert_int_equal(o->post_recv(bare, 1, (uint64_t)(uintptr_t)buf, 64, 1), -EINVAL);
	assert_int_equal(o->post_send(bare, &wr, &rep), -EINVAL);
	assert_int_equal(o->poll_cq(bare, HCA_CQ_SEND, &wc), -EINVAL);
	assert_int_equal(o->qp_to_error(bare), -EINVAL);
	assert_int_equal(hca_reg_mr(bare, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), -EINVAL);
	hca_ep_destroy(bare);	/* the backend has nothing left to do */
	hca_ep_destroy(src);
	assert_int_equal(hca_world_live_objects(w), 0);
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);
}

/* A failed ibv_dereg_mr leaves the MR registered (and counted) until a retry succeeds;
 * the backend's dereg of an MR it no longer holds is refused. */
static void test_dereg_failures(void **state)
{
	hca_world *w;
	hca_ep *src;
	hca_mr *mr;
	uint8_t buf[256];

	(void)state;
	fk_reset();
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &flow_opts, NULL, &w), 0);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &src), 0);
	assert_int_equal(hca_ep_setup(src, &flow_caps), 0);
	assert_int_equal(hca_reg_mr(src, (uint64_t)(uintptr_t)buf, sizeof(buf),
				    HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE, &mr), 0);
	assert_int_not_equal(hca_mr_rkey(mr), 0);
	fk.fail_at = fk.calls + 1;
	fk.fail_errno = EBUSY;	/* e.g. a memory window still bound */
	assert_int_equal(hca_dereg_mr(mr), -EBUSY);
	assert_int_equal(fk.mrs, 1);
	assert_int_equal(hca_world_live_objects(w), 2);
	assert_int_equal(hca_dereg_mr(mr), 0);
	assert_int_equal(fk.mrs, 0);
	/* deregistered behind the front end's back: the backend refuses a second time; the
	 * world's teardown then releases the front end's record of it */
	assert_int_equal(hca_reg_mr(src, (uint64_t)(uintptr_t)buf, sizeof(buf), 0, &mr), 0);
	assert_int_equal(hca_verbs_ops.dereg_mr(mr), 0);
	assert_int_equal(hca_verbs_ops.dereg_mr(mr), -EINVAL);
	assert_int_equal(hca_dereg_mr(mr), -EINVAL);
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);
}

/* The backend's own teardown releases endpoints and listeners the front end left. */
static void test_world_fini_with_leftovers(void **state)
{
	struct flow *f = calloc(1, sizeof(*f));
	hca_listener *l2;
	hca_ep *third;

	(void)state;
	assert_non_null(f);
	fk_reset();
	assert_int_equal(flow_run(f), 0);
	assert_int_equal(hca_listen(f->w, VOCAB_SIDE_DST, "198.18.0.1:29201", &l2), 0);
	assert_int_equal(hca_ep_create(f->w, VOCAB_SIDE_SRC, "198.18.0.1:29201", &third), 0);
	assert_int_not_equal(fake_live(), 0);
	hca_verbs_ops.world_fini(f->w);
	assert_int_equal(fake_live(), 0);
	assert_null(hca_ep_priv(f->src));
	assert_null(hca_ep_priv(third));
	/* once finished, the backend does nothing more for this world */
	hca_verbs_ops.world_fini(f->w);
	assert_int_equal(hca_verbs_ops.block(f->w, VCLOCK_NS_PER_MS), -EINVAL);
	assert_int_equal(hca_listen(f->w, VOCAB_SIDE_DST, "198.18.0.1:29202", &l2), -EINVAL);
	assert_int_equal(hca_ep_create(f->w, VOCAB_SIDE_SRC, "198.18.0.1:29202", &third), -EINVAL);
	/* the front end's listeners still point at the released ones: forget them, then let
	 * the front end free its own objects */
	hca_listener_set_priv(f->l, NULL);
	hca_listener_set_priv(l2, NULL);
	hca_world_free(f->w);
	free(f);
}

/* verbs_peer: endpoints not connected, without backend state, or matching one address
 * only are not the peer. */
static void test_peer_matching(void **state)
{
	struct flow *f = calloc(1, sizeof(*f));
	hca_ep *x, *y;
	struct verbs_ep *xe;

	(void)state;
	assert_non_null(f);
	fk_reset();
	assert_int_equal(flow_run(f), 0);
	assert_int_equal(hca_ep_create(f->w, VOCAB_SIDE_SRC, "198.18.0.1:29202", &x), 0);
	assert_int_equal(hca_ep_create(f->w, VOCAB_SIDE_SRC, "198.18.0.1:29203", &y), 0);
	assert_null(hca_verbs_ops.peer(x));		/* not connected */
	assert_ptr_equal(hca_verbs_ops.peer(f->src), f->dst);	/* x, y skipped */
	/* x claims src's address as its peer, but its own address is not src's peer */
	xe = hca_ep_priv(x);
	xe->conn_started = true;
	xe->id->route.addr.dst_storage = ep_id(f->src)->route.addr.src_storage;
	assert_null(hca_verbs_ops.peer(x));	/* nobody's peer is x's address */
	hca_verbs_ops.ep_destroy(f->dst);	/* dst without backend state: skipped */
	assert_null(hca_verbs_ops.peer(f->src));
	hca_ep_destroy(x);
	hca_ep_destroy(y);
	flow_close(f);
	free(f);
}

/* ---- waiting: deadlines, signals, failing polls ------------------------------------------ */

static void fk_alarm(int sig)
{
	uint64_t one = 1;

	(void)sig;
	fk_signalled = 1;
	if (fk_signal_fd >= 0 && write(fk_signal_fd, &one, sizeof(one)) < 0)
		fk_signalled = 2;
}

/* SIGALRM every period_us (0: off), with fk_alarm as its handler (no SA_RESTART). */
static void fk_timer(long period_us)
{
	struct itimerval it = { .it_interval = { 0, period_us }, .it_value = { 0, period_us } };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fk_alarm;
	sigemptyset(&sa.sa_mask);
	if (period_us)
		assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
}

/* RLIMIT_NOFILE's soft limit (poll refuses more fds than that with EINVAL). */
static rlim_t fk_nofile(rlim_t soft)
{
	struct rlimit r;
	rlim_t old;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &r), 0);
	old = r.rlim_cur;
	r.rlim_cur = soft;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &r), 0);
	return old;
}

/* Resolution waits on the CM channel: a signal does not end the wait; a failing poll does;
 * a channel that is always "ready" but never delivers ends after VERBS_WAIT_ITER_MAX. */
static void test_resolve_wait_paths(void **state)
{
	hca_world *w;
	hca_ep *ep;
	struct verbs_world *vw;
	rlim_t old;
	int fd;

	(void)state;
	fk_reset();
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &flow_opts, NULL, &w), 0);
	vw = hca_world_priv(w);
	/* the resolution's event comes with a signal that interrupts the poll */
	fk.resolve_silent = true;
	fk_signal_fd = vw->cm_ch->fd;
	fk_timer(2000);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &ep), 0);
	fk_timer(0);
	fk_signal_fd = -1;
	assert_int_equal(fk_signalled, 1);
	hca_ep_destroy(ep);
	/* poll itself fails */
	fk_signalled = 0;
	old = fk_nofile(0);
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &ep), -EINVAL);
	fk_nofile(old);
	/* a channel fd poll reports as invalid at once, forever */
	fd = vw->cm_ch->fd;
	vw->cm_ch->fd = 1 << 20;
	assert_int_equal(hca_ep_create(w, VOCAB_SIDE_SRC, "198.18.0.1:29200@198.18.0.2", &ep), -ETIMEDOUT);
	vw->cm_ch->fd = fd;
	assert_int_equal(fk.ids_live, 0);
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);
}

/* block: busy polling gives up at its deadline; ppoll interrupted by a signal is "nothing
 * yet"; a failing ppoll is an error; an event already there is found without sleeping. */
static void test_block_paths(void **state)
{
	const struct hca_verbs_opts busy = { .ack_timeout = -1, .poll_busy = true };
	hca_world *w;
	hca_listener *l;
	rlim_t old;

	(void)state;
	fk_reset();
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &busy, NULL, &w), 0);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "198.18.0.1:29200", &l), 0);
	assert_int_equal(hca_verbs_ops.block(w, 2 * VCLOCK_NS_PER_MS), 0);
	push_request(l, NULL);
	assert_int_equal(hca_verbs_ops.block(w, 2 * VCLOCK_NS_PER_MS), 1);
	hca_listener_close(l);
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);

	fk_reset();
	assert_int_equal(hca_world_new(HCA_BACKEND_VERBS, NULL, &flow_opts, NULL, &w), 0);
	assert_int_equal(hca_listen(w, VOCAB_SIDE_DST, "198.18.0.1:29200", &l), 0);
	assert_int_equal(hca_verbs_ops.block(w, VCLOCK_NS_PER_MS), 0);	/* ppoll's timeout */
	fk_timer(2000);
	assert_int_equal(hca_verbs_ops.block(w, 30ull * VCLOCK_NS_PER_S), 0);
	fk_timer(0);
	assert_int_equal(fk_signalled, 1);
	old = fk_nofile(0);
	assert_int_equal(hca_verbs_ops.block(w, 30ull * VCLOCK_NS_PER_S), -EINVAL);
	fk_nofile(old);
	hca_listener_close(l);
	hca_world_free(w);
	assert_int_equal(fake_live(), 0);
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
		cmocka_unit_test_setup_teardown(test_setup_reads_granted_caps, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_rearm_acks_cq_events, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_recv_on_err_qp_is_flushed, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_poll_keeps_order_through_stash, fixture_setup,
						fixture_teardown),
		cmocka_unit_test(test_world_init_checks),
		cmocka_unit_test(test_addr_parse_limits),
		cmocka_unit_test(test_sockaddr_eq_ipv6_and_others),
		cmocka_unit_test(test_cm_translate_response_and_long_pdata),
		cmocka_unit_test_setup_teardown(test_pump_edges, fixture_setup, fixture_teardown),
		cmocka_unit_test_setup_teardown(test_caps_each_limit, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_failures_without_errno, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_ack_timeout_option, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_recv_post_errors, fixture_setup,
						fixture_teardown),
		cmocka_unit_test_setup_teardown(test_cq_limits, fixture_setup, fixture_teardown),
		cmocka_unit_test(test_flow_connects_through_the_seam),
		cmocka_unit_test(test_flow_fails_at_each_call),
		cmocka_unit_test(test_resolve_failures),
		cmocka_unit_test(test_listeners),
		cmocka_unit_test(test_endpoint_states_refused),
		cmocka_unit_test(test_dereg_failures),
		cmocka_unit_test(test_world_fini_with_leftovers),
		cmocka_unit_test(test_peer_matching),
		cmocka_unit_test(test_resolve_wait_paths),
		cmocka_unit_test(test_block_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
