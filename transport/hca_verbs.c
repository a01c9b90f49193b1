/* SPDX-License-Identifier: MIT */
/* hca_verbs - the seam's real backend: rdma-core (libibverbs + librdmacm) on rxe, siw or a NIC.
 *
 * Shaped like QEMU's RDMA migration (docs/protocol.md, 'Verbs objects'): per endpoint one
 * rdma_cm id (RDMA_PS_TCP), one PD, a send CQ and a recv CQ each with its own completion
 * channel, one RC QP made by rdma_create_qp. One rdma_cm event channel per world serves
 * every id of the world; its events are read nonblocking and demultiplexed into
 * per-endpoint event queues and per-listener connect-request queues ("pumping"). Every event
 * is acked as soon as it has been copied, so rdma_destroy_id never waits.
 *
 * Everything is nonblocking except ep_create, which waits (bounded: 10 s per step, as QEMU)
 * for ADDR_RESOLVED and ROUTE_RESOLVED on the CM channel. The front end owns timing and
 * calls `block` to sleep on the world's fds: the CM channel and every completion channel.
 * `block` re-arms each CQ and then peeks it (a completion that landed before the arm raises
 * no event), parking what it finds in a small per-CQ stash that poll_cq drains first.
 * The three queues here (CM events per endpoint, connect requests per listener, the stash)
 * are fixed rings (transport/ring.h) over arrays in their owner's struct: FIFO, bounded,
 * nothing allocated.
 *
 * Addresses: "IPV4:PORT" or "[IPV6]:PORT", and for the active side an optional "@SRC_IP"
 * ("198.18.0.1:29200@198.18.0.2") to resolve from a given local address, i.e. device.
 *
 * rxe quirk handled here (docs/verbs-facts.md, 'RECV posted to an ERR QP'): a RECV posted
 * to a QP already in ERR is never flushed by rxe's provider. After each post_recv the QP
 * state is checked (cached once known to be ERR) and, if ERR, the QP is moved to ERR again,
 * which flushes it. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "transport/addr.h"
#include "transport/hca_backend.h"
#include "transport/ring.h"

#define VERBS_RESOLVE_TIMEOUT_MS 10000	/* QEMU's RDMA_RESOLVE_TIMEOUT_MS */
#define VERBS_RESOLVE_SLACK_MS 2000	/* our own guard on top of rdma_cm's timeout */
#define VERBS_LISTEN_BACKLOG 5
#define VERBS_EVQ_LEN 16	/* CM events queued per endpoint (a connection makes < 5) */
#define VERBS_REQQ_LEN 8	/* connect requests queued per listener; more are rejected */
#define VERBS_STASH_LEN 16	/* completions peeked per CQ by block */
#define VERBS_PUMP_MAX 64	/* CM events read per pump */
#define VERBS_CQ_EVENTS_MAX 4096 /* completion-channel events acked per re-arm */
#define VERBS_WAIT_ITER_MAX 100000
#define VERBS_BUSY_ITER_MAX 10000000
#define VERBS_REQ_PDATA_MAX 56	/* rdma_cm, RDMA_PS_TCP: REQ private data */
#define VERBS_REP_PDATA_MAX 196	/* REP private data */
#define VERBS_RETRY_MAX 7
#define VERBS_ACK_TIMEOUT_MAX 31
#define VERBS_NS_PER_MS 1000000ull
#define VERBS_NS_PER_S 1000000000ull

_Static_assert((int)HCA_ACCESS_LOCAL_WRITE == (int)IBV_ACCESS_LOCAL_WRITE, "access bits");
_Static_assert((int)HCA_ACCESS_REMOTE_WRITE == (int)IBV_ACCESS_REMOTE_WRITE, "access bits");
_Static_assert((int)HCA_ACCESS_REMOTE_READ == (int)IBV_ACCESS_REMOTE_READ, "access bits");
_Static_assert((int)HCA_ACCESS_ON_DEMAND == (int)IBV_ACCESS_ON_DEMAND, "access bits");
/* every row of vocab/vocab.h's tables is rdma-core's own numbering */
#define X(NAME, v, text) _Static_assert((int)HCA_WC_##NAME == (int)IBV_WC_##NAME, "wc status " #NAME);
VOCAB_WC_STATUS(X)
#undef X
#define X(NAME, v, tok) _Static_assert((int)HCA_CM_##NAME == (int)RDMA_CM_EVENT_##NAME, "cm event " #NAME);
VOCAB_CM_EVENT(X)
#undef X
_Static_assert(HCA_PDATA_MAX >= VERBS_REP_PDATA_MAX, "private data fits");

struct verbs_cq {
	struct ibv_comp_channel *ch;	/* NULL when busy-polling */
	struct ibv_cq *cq;
	struct ring stash;		/* struct ibv_wc, over stash_buf; set by verbs_cq_create */
	struct ibv_wc stash_buf[VERBS_STASH_LEN];
};

struct verbs_world;

struct verbs_ep {
	struct verbs_world *vw;
	hca_ep *front;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_qp *qp;		/* == id->qp once set up */
	struct verbs_cq cq[2];		/* [HCA_CQ_SEND], [HCA_CQ_RECV] */
	bool qp_err;			/* known to be in ERR (never reset: QPs are not reused) */
	bool conn_started;		/* connect or accept called: addresses are final */
	struct ring evq;		/* struct hca_cm_event, over evq_buf */
	struct hca_cm_event evq_buf[VERBS_EVQ_LEN];
	uint64_t events_dropped;
	struct verbs_ep *prev, *next;
};

struct verbs_request {
	struct rdma_cm_id *id;
	struct hca_cm_event ev;
};

struct verbs_listener {
	struct verbs_world *vw;
	struct rdma_cm_id *id;
	struct ring req;		/* struct verbs_request, over req_buf */
	struct verbs_request req_buf[VERBS_REQQ_LEN];
	struct verbs_listener *prev, *next;
};

struct verbs_world {
	struct hca_verbs_opts opts;
	struct rdma_event_channel *cm_ch;
	struct verbs_ep *eps;
	struct verbs_listener *listeners;
	struct pollfd *pfd;
	size_t pfd_cap;
	int cm_error;                 /* a hard rdma_get_cm_event failure (e.g. EACCES), 0 = none */
};

/* ---- small helpers ------------------------------------------------------------------ */

static int verbs_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* ibv_post_* / ibv_modify_qp return a positive errno (some providers -1). */
static int verbs_rc(int rc)
{
	if (rc > 0)
		return -rc;
	return rc < 0 ? -EIO : 0;
}

static uint64_t verbs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VERBS_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static int verbs_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return verbs_errno();
	return 0;
}

static bool verbs_sockaddr_eq(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

		return x->sin6_port == y->sin6_port &&
		       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
	}
	return false;
}

/* ---- translations (pure) ------------------------------------------------------------ */

static bool verbs_cm_type_known(enum rdma_cm_event_type t)
{
	return (t >= RDMA_CM_EVENT_ADDR_RESOLVED && t <= RDMA_CM_EVENT_DEVICE_REMOVAL) ||
	       t == RDMA_CM_EVENT_TIMEWAIT_EXIT;
}

static bool verbs_cm_has_conn_param(enum rdma_cm_event_type t)
{
	return t == RDMA_CM_EVENT_CONNECT_REQUEST || t == RDMA_CM_EVENT_CONNECT_RESPONSE ||
	       t == RDMA_CM_EVENT_ESTABLISHED || t == RDMA_CM_EVENT_REJECTED;
}

/* false for events the seam does not know (ADDR_CHANGE, multicast): they are dropped. */
static bool verbs_cm_translate(const struct rdma_cm_event *ce, struct hca_cm_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (!verbs_cm_type_known(ce->event))
		return false;
	ev->type = (int)ce->event;
	ev->status = ce->status;
	if (verbs_cm_has_conn_param(ce->event) && ce->param.conn.private_data) {
		uint8_t n = ce->param.conn.private_data_len;

		if (n > HCA_PDATA_MAX)
			n = HCA_PDATA_MAX;
		memcpy(ev->pdata, ce->param.conn.private_data, n);
		ev->pdata_len = n;
	}
	return true;
}

/* An unexpected CM event while resolving or connecting, as a -errno. */
static int verbs_cm_failure(const struct hca_cm_event *ev)
{
	switch (ev->type) {
	case HCA_CM_ADDR_ERROR:
	case HCA_CM_ROUTE_ERROR:
	case HCA_CM_CONNECT_ERROR:
		return ev->status < 0 ? ev->status : -EHOSTUNREACH;
	case HCA_CM_UNREACHABLE:
		return -EHOSTUNREACH;
	case HCA_CM_REJECTED:
		return -ECONNREFUSED;
	case HCA_CM_DISCONNECTED:
		return -ECONNRESET;
	case HCA_CM_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return -EPROTO;
	}
}

/* Opcode is undefined by verbs on error: derive it from the CQ then (RECV) or keep SEND. */
static void verbs_wc_translate(const struct ibv_wc *in, enum hca_cq_kind kind, struct hca_wc *out)
{
	memset(out, 0, sizeof(*out));
	out->wr_id = in->wr_id;
	out->status = (int)in->status;
	if (out->status >= HCA_WC_STATUS_COUNT)
		out->status = HCA_WC_GENERAL_ERR;	/* tag-matching statuses */
	if (kind == HCA_CQ_RECV)
		out->opcode = HCA_WC_OP_RECV;
	else if (in->status == IBV_WC_SUCCESS && in->opcode == IBV_WC_RDMA_WRITE)
		out->opcode = HCA_WC_OP_RDMA_WRITE;
	else
		out->opcode = HCA_WC_OP_SEND;
	out->byte_len = in->byte_len;
	out->vendor_err = in->vendor_err;
}

/* ---- CM event demultiplexing -------------------------------------------------------- */

static struct verbs_ep *verbs_find_ep(struct verbs_world *vw, const struct rdma_cm_id *id)
{
	for (struct verbs_ep *e = vw->eps; e; e = e->next)
		if (e->id == id)
			return e;
	return NULL;
}

static struct verbs_listener *verbs_find_listener(struct verbs_world *vw,
						  const struct rdma_cm_id *id)
{
	for (struct verbs_listener *l = vw->listeners; l; l = l->next)
		if (l->id == id)
			return l;
	return NULL;
}

/* A full queue drops the event and counts it. */
static void verbs_evq_push(struct verbs_ep *e, const struct hca_cm_event *ev)
{
	if (ring_room(&e->evq) == 0) {
		e->events_dropped++;
		return;
	}
	ring_push(&e->evq, ev);
}

static bool verbs_evq_pop(struct verbs_ep *e, struct hca_cm_event *ev)
{
	return ring_get(&e->evq, ev);
}

/* Files one event. Returns an id the caller must destroy after acking (a connect request
 * no listener can take), else NULL. */
static struct rdma_cm_id *verbs_dispatch(struct verbs_world *vw, const struct rdma_cm_event *ce)
{
	struct hca_cm_event ev;

	if (!verbs_cm_translate(ce, &ev))
		return NULL;
	if (ce->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct verbs_listener *l = verbs_find_listener(vw, ce->listen_id);

		if (!l || ring_room(&l->req) == 0) {
			rdma_reject(ce->id, NULL, 0);
			return ce->id;
		}
		ring_push(&l->req, &(struct verbs_request){ .id = ce->id, .ev = ev });
		return NULL;
	}
	struct verbs_ep *e = verbs_find_ep(vw, ce->id);

	if (e)
		verbs_evq_push(e, &ev);
	return NULL;
}

/* Reads every pending CM event (at most VERBS_PUMP_MAX). Returns how many. */
static int verbs_pump(struct verbs_world *vw)
{
	int n = 0;

	for (int i = 0; i < VERBS_PUMP_MAX; i++) {
		struct rdma_cm_event *ce;
		struct rdma_cm_id *orphan;

		if (rdma_get_cm_event(vw->cm_ch, &ce) != 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				vw->cm_error = -errno;   /* e.g. EACCES: credentials changed since open */
			break;	/* EAGAIN: nothing more */
		}
		orphan = verbs_dispatch(vw, ce);
		rdma_ack_cm_event(ce);
		if (orphan)
			rdma_destroy_id(orphan);
		n++;
	}
	return n;
}

/* Waits (bounded by timeout_ms of wall time) for e's next CM event; 0 if it is `want`. */
static int verbs_wait_own(struct verbs_ep *e, int want, uint64_t timeout_ms)
{
	uint64_t deadline_ns = verbs_mono_ns() + timeout_ms * VERBS_NS_PER_MS;

	for (unsigned i = 0; i < VERBS_WAIT_ITER_MAX; i++) {
		struct hca_cm_event ev;
		struct pollfd p = { .fd = e->vw->cm_ch->fd, .events = POLLIN };
		uint64_t now_ns;

		verbs_pump(e->vw);
		if (verbs_evq_pop(e, &ev))
			return ev.type == want ? 0 : verbs_cm_failure(&ev);
		now_ns = verbs_mono_ns();
		if (now_ns >= deadline_ns)
			return -ETIMEDOUT;
		int ms = (int)((deadline_ns - now_ns + VERBS_NS_PER_MS - 1) / VERBS_NS_PER_MS);

		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			return verbs_errno();
	}
	return -ETIMEDOUT;
}

/* ---- completion queues ---------------------------------------------------------------- */

static int verbs_cq_create(struct verbs_cq *q, struct ibv_context *ctx, uint32_t entries,
			   bool with_channel)
{
	int rc;

	ring_init_over(&q->stash, q->stash_buf, sizeof(q->stash_buf[0]), VERBS_STASH_LEN);
	if (with_channel) {
		q->ch = ibv_create_comp_channel(ctx);
		if (!q->ch)
			return verbs_errno();
		rc = verbs_set_nonblock(q->ch->fd);
		if (rc < 0)
			return rc;
	}
	q->cq = ibv_create_cq(ctx, (int)entries, NULL, q->ch, 0);
	if (!q->cq)
		return verbs_errno();
	return with_channel ? verbs_rc(ibv_req_notify_cq(q->cq, 0)) : 0;
}

/* Reads and acks every event waiting on the channel: each event read must be acked, or
 * ibv_destroy_cq waits forever (events never read are discarded by the kernel). */
static void verbs_cq_ack_channel(struct verbs_cq *q)
{
	for (unsigned i = 0; q->ch && i < VERBS_CQ_EVENTS_MAX; i++) {
		struct ibv_cq *cq;
		void *ctx;

		if (ibv_get_cq_event(q->ch, &cq, &ctx) != 0)
			break;
		assert(cq == q->cq);
		ibv_ack_cq_events(cq, 1);
	}
}

static void verbs_cq_destroy(struct verbs_cq *q)
{
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->ch)
		ibv_destroy_comp_channel(q->ch);
	ring_fini(&q->stash);		/* what was stashed is gone with the CQ */
	memset(q, 0, sizeof(*q));
}

/* Acks channel events, re-arms, then peeks: 1 if a completion is ready, 0 if not. */
static int verbs_cq_rearm(struct verbs_cq *q)
{
	if (!q->cq)
		return 0;
	if (q->ch) {
		verbs_cq_ack_channel(q);
		ibv_req_notify_cq(q->cq, 0);
	}
	while (ring_room(&q->stash) > 0) {
		struct ibv_wc wc;

		if (ibv_poll_cq(q->cq, 1, &wc) != 1)
			break;
		ring_push(&q->stash, &wc);	/* behind the older ones: CQ order */
	}
	return ring_len(&q->stash) > 0;
}

/* The next raw completion, stash first (keeps CQ order): 1, 0 none, -EIO. */
static int verbs_cq_next(struct verbs_cq *q, struct ibv_wc *wc)
{
	if (ring_get(&q->stash, wc))
		return 1;
	int n = ibv_poll_cq(q->cq, 1, wc);

	return n < 0 ? -EIO : n;
}

/* ---- endpoints -------------------------------------------------------------------------- */

static struct verbs_ep *verbs_ep_new(struct verbs_world *vw, hca_ep *front)
{
	struct verbs_ep *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->vw = vw;
	e->front = front;
	ring_init_over(&e->evq, e->evq_buf, sizeof(e->evq_buf[0]), VERBS_EVQ_LEN);
	e->next = vw->eps;
	if (vw->eps)
		vw->eps->prev = e;
	vw->eps = e;
	return e;
}

/* Destroys QP, CQs, channels, PD: whatever exists, in that order. */
static void verbs_ep_teardown_qp(struct verbs_ep *e)
{
	if (e->qp) {
		rdma_destroy_qp(e->id);
		e->qp = NULL;
	}
	verbs_cq_destroy(&e->cq[HCA_CQ_SEND]);
	verbs_cq_destroy(&e->cq[HCA_CQ_RECV]);
	if (e->pd) {
		ibv_dealloc_pd(e->pd);
		e->pd = NULL;
	}
}

/* Tears everything down, unlinks and frees e (and clears the front's priv). */
static void verbs_ep_release(struct verbs_ep *e)
{
	struct verbs_world *vw = e->vw;

	verbs_ep_teardown_qp(e);
	if (e->id)
		rdma_destroy_id(e->id);
	if (e->prev)
		e->prev->next = e->next;
	else
		vw->eps = e->next;
	if (e->next)
		e->next->prev = e->prev;
	if (e->front)
		hca_ep_set_priv(e->front, NULL);
	ring_fini(&e->evq);
	free(e);
}

static int verbs_caps_check(const struct hca_qp_caps *c)
{
	if (c->max_send_wr == 0 || c->max_recv_wr == 0 || c->max_send_sge == 0 ||
	    c->max_recv_sge == 0 || c->cq_entries == 0 || c->cq_entries > INT32_MAX)
		return -EINVAL;
	if (c->cq_entries < c->max_send_wr || c->cq_entries < c->max_recv_wr)
		return -EINVAL;
	return 0;
}

/* The depth to enforce: what the device granted, at least what was asked, at most the CQ. */
static uint32_t grant(uint32_t granted, uint32_t asked, uint32_t cq_entries)
{
	uint32_t g = granted > asked ? granted : asked;
	return g < cq_entries ? g : cq_entries;
}

/* PD, two CQs (+ channels), RC QP. On failure nothing of it is left. */
static int verbs_ep_setup_qp(struct verbs_ep *e, struct hca_qp_caps *caps)
{
	struct ibv_context *ctx = e->id ? e->id->verbs : NULL;
	struct ibv_qp_init_attr a;
	bool channels = !e->vw->opts.poll_busy;
	int rc = verbs_caps_check(caps);

	if (rc < 0)
		return rc;
	if (!ctx || e->pd)
		return -EINVAL;	/* address not resolved, or set up twice */
	e->pd = ibv_alloc_pd(ctx);
	if (!e->pd) {
		rc = verbs_errno();
		goto out;
	}
	rc = verbs_cq_create(&e->cq[HCA_CQ_SEND], ctx, caps->cq_entries, channels);
	if (rc < 0)
		goto out;
	rc = verbs_cq_create(&e->cq[HCA_CQ_RECV], ctx, caps->cq_entries, channels);
	if (rc < 0)
		goto out;
	memset(&a, 0, sizeof(a));
	a.send_cq = e->cq[HCA_CQ_SEND].cq;
	a.recv_cq = e->cq[HCA_CQ_RECV].cq;
	a.cap = (struct ibv_qp_cap){ .max_send_wr = caps->max_send_wr,
				     .max_recv_wr = caps->max_recv_wr,
				     .max_send_sge = caps->max_send_sge,
				     .max_recv_sge = caps->max_recv_sge };
	a.qp_type = IBV_QPT_RC;
	if (rdma_create_qp(e->id, e->pd, &a) != 0) {
		rc = verbs_errno();
		goto out;
	}
	e->qp = e->id->qp;
	/* The granted capacities: rxe's create_qp writes back what was asked (512), while its
	 * queue is a ring of 2^k slots with one kept empty, 1023 for 512, and ibv_query_qp says
	 * so (measured in the soft-RoCE VM; docs/verbs-facts.md). QEMU never caps its writes below
	 * the device's depth, so neither does migbed: the front end lets what query_qp reports be
	 * outstanding, never more than the CQs hold (a CQ overrun is fatal). */
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	if (ibv_query_qp(e->qp, &qa, IBV_QP_CAP, &qi) == 0) {
		if (qi.cap.max_send_wr > a.cap.max_send_wr)
			a.cap.max_send_wr = qi.cap.max_send_wr;
		if (qi.cap.max_recv_wr > a.cap.max_recv_wr)
			a.cap.max_recv_wr = qi.cap.max_recv_wr;
	}
	caps->max_send_wr = grant(a.cap.max_send_wr, caps->max_send_wr, caps->cq_entries);
	caps->max_recv_wr = grant(a.cap.max_recv_wr, caps->max_recv_wr, caps->cq_entries);
	rc = 0;
out:
	if (rc < 0)
		verbs_ep_teardown_qp(e);
	return rc;
}

static int verbs_set_ack_timeout(struct verbs_ep *e)
{
	uint8_t t;

	if (e->vw->opts.ack_timeout < 0)
		return 0;
	t = (uint8_t)e->vw->opts.ack_timeout;
	if (rdma_set_option(e->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t)) != 0)
		return verbs_errno();
	return 0;
}

static int verbs_conn_param(const struct hca_conn_params *p, uint8_t pdata_max,
			    struct rdma_conn_param *cp)
{
	if (p->private_data_len > pdata_max || (p->private_data_len && !p->private_data) ||
	    p->retry_count > VERBS_RETRY_MAX || p->rnr_retry_count > VERBS_RETRY_MAX)
		return -EINVAL;
	memset(cp, 0, sizeof(*cp));
	cp->private_data = p->private_data;
	cp->private_data_len = p->private_data_len;
	cp->initiator_depth = p->initiator_depth;
	cp->responder_resources = p->responder_resources;
	cp->retry_count = p->retry_count;
	cp->rnr_retry_count = p->rnr_retry_count;
	return 0;
}

/* rxe does not flush a RECV posted to an ERR QP: modify to ERR again (docs/verbs-facts.md,
 * 'RECV posted to an ERR QP'). */
static int verbs_recv_post(struct verbs_ep *e, uint64_t wr_id, uint64_t addr, uint32_t len,
			   uint32_t lkey)
{
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0 };
	struct ibv_recv_wr *bad = NULL;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int rc = verbs_rc(ibv_post_recv(e->qp, &wr, &bad));

	if (rc < 0)
		return rc;
	if (!e->qp_err && ibv_query_qp(e->qp, &attr, IBV_QP_STATE, &init) == 0 &&
	    attr.qp_state == IBV_QPS_ERR)
		e->qp_err = true;
	if (!e->qp_err)
		return 0;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	return verbs_rc(ibv_modify_qp(e->qp, &attr, IBV_QP_STATE));
}

static int verbs_cq_poll(struct verbs_ep *e, enum hca_cq_kind kind, struct hca_wc *wc)
{
	struct ibv_wc iwc;
	int n = verbs_cq_next(&e->cq[kind], &iwc);

	if (n <= 0)
		return n;
	verbs_wc_translate(&iwc, kind, wc);
	if (wc->status != HCA_WC_SUCCESS)
		e->qp_err = true;	/* an error completion means the QP is in ERR */
	return 1;
}

/* 1 if some event or completion is ready now (also re-arms every CQ), else 0. */
static int verbs_ready_now(struct verbs_world *vw)
{
	int n = verbs_pump(vw);

	for (struct verbs_ep *e = vw->eps; e; e = e->next) {
		n += verbs_cq_rearm(&e->cq[HCA_CQ_SEND]);
		n += verbs_cq_rearm(&e->cq[HCA_CQ_RECV]);
	}
	return n > 0;
}

/* ---- backend ops: world ------------------------------------------------------------------ */

static int verbs_world_init(hca_world *w, const struct hca_verbs_opts *vopts)
{
	struct verbs_world *vw;
	int rc;

	if (vopts && vopts->ack_timeout > VERBS_ACK_TIMEOUT_MAX)
		return -EINVAL;
	vw = calloc(1, sizeof(*vw));
	if (!vw)
		return -ENOMEM;
	vw->opts.ack_timeout = vopts ? vopts->ack_timeout : -1;
	vw->opts.poll_busy = vopts ? vopts->poll_busy : false;
	errno = 0;
	vw->cm_ch = rdma_create_event_channel();
	if (!vw->cm_ch) {
		rc = errno > 0 ? -errno : -ENODEV;
		goto out;
	}
	rc = verbs_set_nonblock(vw->cm_ch->fd);
out:
	if (rc < 0) {
		if (vw->cm_ch)
			rdma_destroy_event_channel(vw->cm_ch);
		free(vw);
		return rc;
	}
	hca_world_set_priv(w, vw);
	return 0;
}

static void verbs_listener_release(struct verbs_listener *l);

/* The front end destroys its objects first; whatever is left is torn down here. */
static void verbs_world_fini(hca_world *w)
{
	struct verbs_world *vw = hca_world_priv(w);

	if (!vw)
		return;
	verbs_pump(vw);
	while (vw->eps)
		verbs_ep_release(vw->eps);
	while (vw->listeners)
		verbs_listener_release(vw->listeners);
	rdma_destroy_event_channel(vw->cm_ch);
	free(vw->pfd);
	free(vw);
	hca_world_set_priv(w, NULL);
}

/* Collects the CM fd and every completion-channel fd; returns the count or -ENOMEM. */
static int verbs_pollfds(struct verbs_world *vw)
{
	size_t n = 1, i = 0;

	for (struct verbs_ep *e = vw->eps; e; e = e->next)
		n += 2;
	if (n > vw->pfd_cap) {
		struct pollfd *p = realloc(vw->pfd, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		vw->pfd = p;
		vw->pfd_cap = n;
	}
	vw->pfd[i++] = (struct pollfd){ .fd = vw->cm_ch->fd, .events = POLLIN };
	for (struct verbs_ep *e = vw->eps; e; e = e->next) {
		for (int k = HCA_CQ_SEND; k <= HCA_CQ_RECV; k++) {
			if (e->cq[k].ch)
				vw->pfd[i++] = (struct pollfd){ .fd = e->cq[k].ch->fd,
								.events = POLLIN };
		}
	}
	assert(i <= n);
	return (int)i;
}

static int verbs_block_busy(struct verbs_world *vw, uint64_t wall_timeout_ns)
{
	uint64_t t0_ns = verbs_mono_ns();

	for (unsigned i = 0; i < VERBS_BUSY_ITER_MAX; i++) {
		if (verbs_ready_now(vw))
			return 1;
		if (verbs_mono_ns() - t0_ns >= wall_timeout_ns)
			return 0;
	}
	return 0;
}

static int verbs_block(hca_world *w, uint64_t wall_timeout_ns)
{
	struct verbs_world *vw = hca_world_priv(w);
	struct timespec ts = { .tv_sec = (time_t)(wall_timeout_ns / VERBS_NS_PER_S),
			       .tv_nsec = (long)(wall_timeout_ns % VERBS_NS_PER_S) };
	int nfds, n;

	if (!vw)
		return -EINVAL;
	if (verbs_ready_now(vw))
		return 1;
	if (vw->opts.poll_busy)
		return verbs_block_busy(vw, wall_timeout_ns);
	nfds = verbs_pollfds(vw);
	if (nfds < 0)
		return nfds;
	n = ppoll(vw->pfd, (nfds_t)nfds, &ts, NULL);
	if (n < 0)
		return errno == EINTR ? 0 : verbs_errno();
	if (n == 0)
		return 0;
	verbs_ready_now(vw);	/* ack the channel events, re-arm, stash what is there */
	return 1;
}

/* ---- backend ops: listener ---------------------------------------------------------------- */

/* A listener of vw with an empty request queue, not yet linked into vw; NULL: no memory. */
static struct verbs_listener *verbs_listener_new(struct verbs_world *vw)
{
	struct verbs_listener *vl = calloc(1, sizeof(*vl));

	if (!vl)
		return NULL;
	vl->vw = vw;
	ring_init_over(&vl->req, vl->req_buf, sizeof(vl->req_buf[0]), VERBS_REQQ_LEN);
	return vl;
}

static int verbs_listen(hca_listener *l, const char *addr)
{
	struct verbs_world *vw = hca_world_priv(hca_listener_world(l));
	struct verbs_listener *vl = NULL;
	struct addr_rdma va;
	int one = 1;
	int rc = addr_parse(addr, false, &va);

	if (rc < 0 || !vw)
		return -EINVAL;
	vl = verbs_listener_new(vw);
	if (!vl)
		return -ENOMEM;
	if (rdma_create_id(vw->cm_ch, &vl->id, vl, RDMA_PS_TCP) != 0 ||
	    rdma_set_option(vl->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)) ||
	    rdma_bind_addr(vl->id, (struct sockaddr *)&va.dst) != 0 ||
	    rdma_listen(vl->id, VERBS_LISTEN_BACKLOG) != 0) {
		rc = verbs_errno();
		goto out;
	}
	vl->next = vw->listeners;
	if (vw->listeners)
		vw->listeners->prev = vl;
	vw->listeners = vl;
	hca_listener_set_priv(l, vl);
	rc = 0;
out:
	if (rc < 0) {
		if (vl->id)
			rdma_destroy_id(vl->id);
		free(vl);
	}
	return rc;
}

static int verbs_listener_poll(hca_listener *l, hca_ep *new_ep, struct hca_cm_event *req)
{
	struct verbs_listener *vl = hca_listener_priv(l);
	struct verbs_request r;
	struct verbs_ep *e;

	if (!vl || !new_ep || !req)
		return -EINVAL;
	verbs_pump(vl->vw);
	if (ring_len(&vl->req) == 0)
		return vl->vw->cm_error;

	e = verbs_ep_new(vl->vw, new_ep);
	if (!e)
		return -ENOMEM;	/* the request stays queued */
	ring_pop(&vl->req, &r);
	e->id = r.id;
	e->id->context = e;
	*req = r.ev;
	hca_ep_set_priv(new_ep, e);
	return 1;
}

static void verbs_listener_release(struct verbs_listener *l)
{
	struct verbs_world *vw = l->vw;
	struct verbs_request r;

	while (ring_get(&l->req, &r)) {	/* oldest first, as they came */
		rdma_reject(r.id, NULL, 0);
		rdma_destroy_id(r.id);
	}
	ring_fini(&l->req);
	rdma_destroy_id(l->id);
	if (l->prev)
		l->prev->next = l->next;
	else
		vw->listeners = l->next;
	if (l->next)
		l->next->prev = l->prev;
	free(l);
}

static void verbs_listener_close(hca_listener *l)
{
	struct verbs_listener *vl = hca_listener_priv(l);

	if (!vl)
		return;
	verbs_pump(vl->vw);	/* ack what is pending so no event refers to a dead id */
	verbs_listener_release(vl);
	hca_listener_set_priv(l, NULL);
}

/* ---- backend ops: endpoints ----------------------------------------------------------------- */

static int verbs_resolve(struct verbs_ep *e, struct addr_rdma *va)
{
	const uint64_t wait_ms = VERBS_RESOLVE_TIMEOUT_MS + VERBS_RESOLVE_SLACK_MS;
	int rc;

	if (rdma_resolve_addr(e->id, va->has_src ? (struct sockaddr *)&va->src : NULL,
			      (struct sockaddr *)&va->dst, VERBS_RESOLVE_TIMEOUT_MS) != 0)
		return verbs_errno();
	rc = verbs_wait_own(e, HCA_CM_ADDR_RESOLVED, wait_ms);
	if (rc < 0)
		return rc;
	if (rdma_resolve_route(e->id, VERBS_RESOLVE_TIMEOUT_MS) != 0)
		return verbs_errno();
	return verbs_wait_own(e, HCA_CM_ROUTE_RESOLVED, wait_ms);
}

static int verbs_ep_create(hca_ep *ep, const char *addr)
{
	struct verbs_world *vw = hca_world_priv(hca_ep_world(ep));
	struct addr_rdma va;
	struct verbs_ep *e;
	int rc = addr_parse(addr, true, &va);

	if (rc < 0 || !vw)
		return -EINVAL;
	e = verbs_ep_new(vw, NULL);
	if (!e)
		return -ENOMEM;
	if (rdma_create_id(vw->cm_ch, &e->id, e, RDMA_PS_TCP) != 0) {
		e->id = NULL;
		rc = verbs_errno();
		goto out;
	}
	rc = verbs_resolve(e, &va);
out:
	if (rc < 0) {
		verbs_ep_release(e);
		return rc;
	}
	e->front = ep;
	hca_ep_set_priv(ep, e);
	return 0;
}

static int verbs_ep_setup(hca_ep *ep, struct hca_qp_caps *caps)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e || !caps)
		return -EINVAL;
	return verbs_ep_setup_qp(e, caps);
}

static int verbs_connect(hca_ep *ep, const struct hca_conn_params *p)
{
	struct verbs_ep *e = hca_ep_priv(ep);
	struct rdma_conn_param cp;
	int rc;

	if (!e || !p || !e->qp)
		return -EINVAL;
	rc = verbs_conn_param(p, VERBS_REQ_PDATA_MAX, &cp);
	if (rc < 0)
		return rc;
	rc = verbs_set_ack_timeout(e);
	if (rc < 0)
		return rc;
	if (rdma_connect(e->id, &cp) != 0)
		return verbs_errno();
	e->conn_started = true;
	return 0;
}

static int verbs_accept(hca_ep *ep, const struct hca_conn_params *p)
{
	struct verbs_ep *e = hca_ep_priv(ep);
	struct rdma_conn_param cp;
	int rc;

	if (!e || !p || !e->qp)
		return -EINVAL;
	rc = verbs_conn_param(p, VERBS_REP_PDATA_MAX, &cp);
	if (rc < 0)
		return rc;
	rc = verbs_set_ack_timeout(e);
	if (rc < 0)
		return rc;
	if (rdma_accept(e->id, &cp) != 0)
		return verbs_errno();
	e->conn_started = true;
	return 0;
}

static int verbs_reject(hca_ep *ep)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e)
		return -EINVAL;
	return rdma_reject(e->id, NULL, 0) != 0 ? verbs_errno() : 0;
}

static int verbs_poll_event(hca_ep *ep, struct hca_cm_event *ev)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e || !ev)
		return -EINVAL;
	verbs_pump(e->vw);
	return verbs_evq_pop(e, ev) ? 1 : e->vw->cm_error;
}

/* rdma_disconnect moves our own QP to ERR synchronously
 * (docs/verbs-facts.md, 'rdma_disconnect'). */
static int verbs_disconnect(hca_ep *ep)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e)
		return -EINVAL;
	if (rdma_disconnect(e->id) != 0)
		return verbs_errno();
	if (e->qp)
		e->qp_err = true;
	return 0;
}

static void verbs_ep_destroy(hca_ep *ep)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e)
		return;
	verbs_pump(e->vw);
	verbs_ep_release(e);
}

static hca_ep *verbs_peer(hca_ep *ep)
{
	struct verbs_ep *e = hca_ep_priv(ep);
	hca_world *w = hca_ep_world(ep);

	if (!e || !e->conn_started)
		return NULL;
	for (hca_ep *o = hca_world_ep_next(w, NULL); o; o = hca_world_ep_next(w, o)) {
		struct verbs_ep *oe = hca_ep_priv(o);

		if (o == ep || !oe || !oe->conn_started)
			continue;
		if (verbs_sockaddr_eq(rdma_get_local_addr(e->id), rdma_get_peer_addr(oe->id)) &&
		    verbs_sockaddr_eq(rdma_get_peer_addr(e->id), rdma_get_local_addr(oe->id)))
			return o;
	}
	return NULL;
}

static const char *verbs_device(hca_ep *ep)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e || !e->id || !e->id->verbs)
		return "none";
	return ibv_get_device_name(e->id->verbs->device);
}

/* ---- backend ops: memory and data path ------------------------------------------------- */

static int verbs_reg_mr(hca_mr *mr, int access)
{
	struct verbs_ep *e = hca_ep_priv(hca_mr_ep(mr));
	const int known = HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ;
	uint64_t addr = hca_mr_addr(mr), len = hca_mr_len(mr);
	struct ibv_mr *m;

	if (access & HCA_ACCESS_ON_DEMAND)
		return -EOPNOTSUPP;   /* ODP is modelled only (docs/profiles.md, 'ODP destination memory') */
	if (!e || !e->pd || addr == 0 || len == 0 || (access & ~known))
		return -EINVAL;
	errno = 0;
	m = ibv_reg_mr(e->pd, (void *)(uintptr_t)addr, (size_t)len, access);
	if (!m)
		return errno > 0 ? -errno : -ENOMEM;
	hca_mr_set_priv(mr, m);
	hca_mr_set_keys(mr, m->lkey, m->rkey);
	return 0;
}

static int verbs_dereg_mr(hca_mr *mr)
{
	struct ibv_mr *m = hca_mr_priv(mr);
	int rc;

	if (!m)
		return -EINVAL;
	rc = verbs_rc(ibv_dereg_mr(m));
	if (rc == 0)
		hca_mr_set_priv(mr, NULL);
	return rc;
}

/* No MR of this backend is ODP (verbs_reg_mr refuses it). */
static int verbs_advise_mr(hca_mr *mr)
{
	(void)mr;
	return -EOPNOTSUPP;
}

static int verbs_post_recv(hca_ep *ep, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e || !e->qp)
		return -EINVAL;
	return verbs_recv_post(e, wr_id, addr, len, lkey);
}

static int verbs_post_send(hca_ep *ep, const struct hca_send_wr *wr, struct hca_send_report *rep)
{
	(void)rep;            /* a real device's page faults take real time */
	struct verbs_ep *e = hca_ep_priv(ep);
	struct ibv_sge sge;
	struct ibv_send_wr w;
	struct ibv_send_wr *bad = NULL;

	if (!e || !e->qp || !wr || !wr->signaled ||
	    (wr->opcode != HCA_WR_SEND && wr->opcode != HCA_WR_RDMA_WRITE))
		return -EINVAL;
	sge = (struct ibv_sge){ .addr = wr->local_addr, .length = wr->length, .lkey = wr->lkey };
	memset(&w, 0, sizeof(w));
	w.wr_id = wr->wr_id;
	w.sg_list = &sge;
	w.num_sge = wr->length ? 1 : 0;	/* a 0-length SGE means 2 GiB on some HCAs */
	w.send_flags = IBV_SEND_SIGNALED;
	w.opcode = wr->opcode == HCA_WR_SEND ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
	if (wr->opcode == HCA_WR_RDMA_WRITE) {
		w.wr.rdma.remote_addr = wr->remote_addr;
		w.wr.rdma.rkey = wr->rkey;
	}
	return verbs_rc(ibv_post_send(e->qp, &w, &bad));
}

static int verbs_poll_cq(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc)
{
	struct verbs_ep *e = hca_ep_priv(ep);

	if (!e || !e->qp || !wc || (cq != HCA_CQ_SEND && cq != HCA_CQ_RECV))
		return -EINVAL;
	return verbs_cq_poll(e, cq, wc);
}

static int verbs_qp_to_error(hca_ep *ep)
{
	struct verbs_ep *e = hca_ep_priv(ep);
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int rc;

	if (!e || !e->qp)
		return -EINVAL;
	rc = verbs_rc(ibv_modify_qp(e->qp, &attr, IBV_QP_STATE));
	if (rc == 0)
		e->qp_err = true;
	return rc;
}

const struct hca_backend_ops hca_verbs_ops = {
	.name = "verbs",
	.world_init = verbs_world_init,
	.world_fini = verbs_world_fini,
	.listen = verbs_listen,
	.listener_poll = verbs_listener_poll,
	.listener_close = verbs_listener_close,
	.ep_create = verbs_ep_create,
	.ep_setup = verbs_ep_setup,
	.connect = verbs_connect,
	.accept = verbs_accept,
	.reject = verbs_reject,
	.poll_event = verbs_poll_event,
	.disconnect = verbs_disconnect,
	.ep_destroy = verbs_ep_destroy,
	.peer = verbs_peer,
	.device = verbs_device,
	.reg_mr = verbs_reg_mr,
	.dereg_mr = verbs_dereg_mr,
	.post_recv = verbs_post_recv,
	.advise_mr = verbs_advise_mr,
	.post_send = verbs_post_send,
	.poll_cq = verbs_poll_cq,
	.qp_to_error = verbs_qp_to_error,
	.block = verbs_block,
};
