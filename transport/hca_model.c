/* SPDX-License-Identifier: MIT */
/* hca_model - the seam's simulated HCA: an in-process device with verbs semantics as rdma_rxe
 * shows them (docs/verbs-facts.md), deterministic and *instant*: every
 * operation takes effect when it is posted; the front end (hca.c) decides when its
 * completion becomes visible in virtual time.
 *
 * State per world: a registry of listeners by address, and the device's MR table (live MRs
 * sorted by a serial that only grows: lkey = serial*2, rkey = serial*2+1, so keys are unique
 * for the life of the world and a stale or foreign key never matches). Per endpoint: a PD,
 * the QP state, the receive queue, parked send WRs, the raw send/recv CQs and CM events.
 *
 * Choices the model makes where verbs leaves room (documented in the tests too):
 *  - connect to an address with no listener: UNREACHABLE (status -EHOSTUNREACH) at connect
 *    time, so hca_connect returns -EHOSTUNREACH;
 *  - private data is padded as rdma_cm does on RoCE: 56 bytes at CONNECT_REQUEST, 196 at
 *    the active side's ESTABLISHED, 0 at the passive side's;
 *  - rnr_retry 1..6 are treated as 0 (the RNR error comes at once: time is the front end's);
 *    7 parks the SEND (and every later send WR of that QP) until the peer posts a RECV. An
 *    RNR failure (SEND or ODP WRITE) flushes the QP's later send WRs, but the QP goes to ERR
 *    only when the front end says (at the NAK's time: struct hca_send_report), so that a
 *    SEND the peer posts meanwhile still lands, as on rxe (the responder sees nothing);
 *  - a SEND or WRITE to a peer that is gone or whose QP is not RTS fails with RETRY_EXC_ERR
 *    unless retry_count is 7 (rxe: retry forever), where it stays parked;
 *  - On-Demand Paging (HCA_ACCESS_ON_DEMAND): an MR keeps a bitmap of its 4 KiB pages the
 *    device has faulted in (none at registration; all after advise_mr). An RDMA WRITE that
 *    touches pages not present starts faulting them in (present from then on, whatever
 *    becomes of the WRITE) and is NAKed RNR: with rnr_retry 0..6 it fails with
 *    RNR_RETRY_EXC_ERR, nothing written; later send WRs of that QP flush, and the front
 *    end moves the QP to ERR at the failure's completion time (an RNR NAK does not hurt
 *    the responder); with 7 it is written and post_send reports the pages (the front end
 *    charges the fault time). A WRITE parked behind a waiting SEND reports none (its time
 *    is not the model's anyway). ODP MRs pin nothing: no memlock accounting;
 *  - a RECV posted to a QP in ERR is flushed at once (the seam's contract; rxe would keep it
 *    until the next modify to ERR: docs/verbs-facts.md, 'RECV posted to an ERR QP');
 *  - a transfer the memory model cannot represent (a STAMP guest range that is not page
 *    aligned, or bytes between a STAMP guest and a plain buffer) completes with
 *    LOC_QP_OP_ERR and vendor_err MODEL_VENDOR_ERR_COPY, and moves the requester's QP to ERR.
 * Addresses: a range inside the endpoint's guest memory (hca_ep_guest) is moved with
 * mem_copy; anything else is a real pointer the registered MR vouches for. */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/mem.h"
#include "transport/hca_backend.h"
#include "transport/ring.h"

#define MODEL_DEVICE "model0"
#define MODEL_REQ_PDATA_BYTES 56      /* IB CM REQ private data field */
#define MODEL_REP_PDATA_BYTES 196     /* IB CM REP private data field */
#define MODEL_CM_EVENTS_MAX 8         /* a connection makes fewer than 5 */
#define MODEL_RETRY_FOREVER 7         /* rnr_retry 7 (IB spec) and retry_cnt 7 (rxe) */
#define MODEL_REJ_CONSUMER 28         /* IB CM reject reason "consumer defined" (rdma_reject) */
#define MODEL_SERIAL_FIRST 0x100u
#define MODEL_SERIAL_MAX 0x7fffffffu
#define MODEL_VENDOR_ERR_COPY 0x4d42u
#define MODEL_PARK_MAX 65536u         /* bounds one pass over a parked queue */
#define MODEL_PAGE_SHIFT 12           /* ODP tracks 4 KiB pages */

/* A model queue never grows: the front end bounds what is posted (ring.h). */
static int fixed_ring(struct ring *r, size_t esz, size_t cap)
{
	return ring_init(r, esz, cap, cap);
}

/* ---- state -------------------------------------------------------------------------------- */

enum model_qp { QP_NONE, QP_INIT, QP_RTS, QP_ERR };

enum model_conn {
	CONN_IDLE,                    /* not connected (yet) */
	CONN_REQ_SENT,                /* active: waiting for accept / reject */
	CONN_REQ_RCVD,                /* passive: from listener_poll, not yet accepted */
	CONN_ESTABLISHED,
	CONN_DREQ_SENT,               /* we disconnected; the peer has not yet */
	CONN_DREQ_RCVD,               /* the peer disconnected (or vanished); we have not yet */
	CONN_CLOSED,                  /* both sides disconnected, or rejected */
	CONN_FAILED                   /* active: rejected or unreachable */
};

struct model_mr {
	uint32_t serial, pd;
	uint64_t addr, len;
	int access;
	enum vocab_side side;         /* for the memlock accounting */
	uint64_t pinned_bytes;        /* page-granular size counted against the limit */
	uint64_t *present;            /* ODP: a bit per 4 KiB page from addr's page, set once
				       * faulted in; NULL: not ODP (pinned, always present) */
	uint64_t n_pages;
};

struct model_recv {
	uint64_t wr_id, addr;
	uint32_t len, lkey;
};

struct model_listener;

struct model_ep {
	struct model_world *mw;
	hca_ep *front;
	enum model_qp qp;
	enum model_conn conn;
	uint32_t pd;
	struct model_ep *peer;        /* connected peer while it exists */
	struct model_listener *listener;   /* REQ_SENT, not yet picked up: where we wait */
	struct model_ep *next_req;    /* in that listener's request queue */
	struct model_ep *req_other;   /* REQ_SENT/REQ_RCVD once picked up: the other side */
	char *addr;                   /* active: the address to connect to */
	uint8_t pdata[MODEL_REQ_PDATA_BYTES];
	uint8_t pdata_len;
	uint8_t rnr_retry, retry_cnt;
	uint8_t connect_rnr_retry;    /* active: what it passed to connect (the peer's rnr_retry) */
	bool sq_failed;               /* a WRITE failed RNR (ODP): later send WRs flush; as a responder
				       * the QP lives on until the front end moves it to ERR */
	struct ring rq;               /* struct model_recv */
	struct ring parked;           /* struct hca_send_wr */
	struct ring cq[2];            /* struct hca_wc, raw */
	struct ring cm;               /* struct hca_cm_event */
};

struct model_listener {
	struct model_world *mw;
	struct model_listener *next;
	char *addr;
	struct model_ep *req_head, *req_tail;
};

struct model_world {
	struct model_listener *listeners;
	struct model_mr **mrs;        /* live MRs, sorted by serial */
	size_t n_mrs, cap_mrs;
	uint32_t next_serial;
	uint32_t next_pd;
	uint64_t pinned[VOCAB_SIDE_COUNT]; /* per side, as RLIMIT_MEMLOCK counts */
};

static struct model_ep *model_ep_of(hca_ep *ep)
{
	return ep ? hca_ep_priv(ep) : NULL;
}

static void push_event(struct model_ep *me, int type, int status, const void *pdata,
		       uint8_t len, uint8_t padded_len)
{
	struct hca_cm_event ev = { .type = type, .status = status, .pdata_len = padded_len };

	assert(len <= padded_len && padded_len <= HCA_PDATA_MAX);
	if (len)
		memcpy(ev.pdata, pdata, len);
	ring_push(&me->cm, &ev);
	hca_world_backend_changed(hca_ep_world(me->front));
}

/* ---- MR table ----------------------------------------------------------------------------- */

static struct model_mr *mr_find_serial(const struct model_world *mw, uint32_t serial, size_t *at)
{
	size_t lo = 0, hi = mw->n_mrs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mw->mrs[mid]->serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == mw->n_mrs || mw->mrs[lo]->serial != serial)
		return NULL;
	if (at)
		*at = lo;
	return mw->mrs[lo];
}

/* The MR a key names, if it is that kind of key (l or r), in that PD. */
static const struct model_mr *mr_by_key(const struct model_world *mw, uint32_t key, bool remote,
				       uint32_t pd)
{
	const struct model_mr *mr;

	if ((key & 1u) != (remote ? 1u : 0u))
		return NULL;
	mr = mr_find_serial(mw, key >> 1, NULL);
	return mr && mr->pd == pd ? mr : NULL;
}

/* Is [addr, addr+len) inside an MR of me's PD named by key, with the access bits needed? */
static bool mr_covers(const struct model_ep *me, uint32_t key, bool remote, uint64_t addr,
		      uint64_t len, int need)
{
	const struct model_mr *mr = mr_by_key(me->mw, key, remote, me->pd);

	if (!mr || (mr->access & need) != need)
		return false;
	return addr >= mr->addr && len <= mr->len && addr - mr->addr <= mr->len - len;
}

/* ---- moving bytes ------------------------------------------------------------------------- */

struct model_loc {
	mem *m;                       /* NULL: ptr is a real pointer */
	size_t b;
	uint64_t off;
	unsigned char *ptr;
};

static bool touches_guest(const mem *g, uint64_t addr, uint64_t len)
{
	for (size_t b = 0; b < mem_n_blocks(g); b++) {
		uint64_t start = mem_block_addr(g, b), size = mem_block_bytes(g, b);

		if (addr < start + size && start < addr + len)
			return true;
	}
	return false;
}

static int locate(const struct model_ep *me, uint64_t addr, uint64_t len, struct model_loc *loc)
{
	mem *g = hca_ep_guest(me->front);

	*loc = (struct model_loc){ 0 };
	if (g && mem_resolve(g, addr, len, &loc->b, &loc->off) == 0) {
		loc->m = g;
		return 0;
	}
	if (g && touches_guest(g, addr, len))
		return -EFAULT;       /* straddles a block edge: not representable */
	loc->ptr = (unsigned char *)(uintptr_t)addr;
	return 0;
}

/* The multi-block oracle's count: a WRITE into a guest's endpoint that does not lie inside
 * one of its RAM blocks (hca_world_stray_writes). */
static void note_stray(const struct model_ep *to, const struct hca_send_wr *wr)
{
	mem *g = hca_ep_guest(to->front);
	size_t b;
	uint64_t off;

	if (g && wr->length > 0 && mem_resolve(g, wr->remote_addr, wr->length, &b, &off) != 0)
		hca_world_note_stray_write(hca_ep_world(to->front));
}

/* Copy len bytes from (from, saddr) to (to, daddr). 0, or <0 if the memory model cannot
 * represent the transfer. Writing plain bytes into a guest block is refused: it would
 * bypass the guest's page tracking (RAM only ever moves guest to guest). */
static int model_copy(const struct model_ep *from, uint64_t saddr, const struct model_ep *to,
		      uint64_t daddr, uint32_t len)
{
	struct model_loc s, d;

	if (len == 0)
		return 0;
	if (locate(from, saddr, len, &s) < 0 || locate(to, daddr, len, &d) < 0)
		return -EFAULT;
	if (s.m && d.m)
		return mem_copy(s.m, s.b, s.off, d.m, d.b, d.off, len);
	if (d.m)
		return -EINVAL;
	if (s.m) {
		unsigned char *base = mem_block_ptr(s.m, s.b);

		if (!base)
			return -EINVAL;       /* STAMP pages have no bytes */
		s.ptr = base + s.off;
	}
	memmove(d.ptr, s.ptr, len);
	return 0;
}

/* ---- completions and the error state ------------------------------------------------------ */

static void complete_send(struct model_ep *me, const struct hca_send_wr *wr, int status)
{
	struct hca_wc wc = { .wr_id = wr->wr_id, .status = status, .byte_len = wr->length,
			     .opcode = wr->opcode == HCA_WR_SEND ? HCA_WC_OP_SEND : HCA_WC_OP_RDMA_WRITE };

	if (status == HCA_WC_LOC_QP_OP_ERR)
		wc.vendor_err = MODEL_VENDOR_ERR_COPY;
	ring_push(&me->cq[HCA_CQ_SEND], &wc);
	hca_world_backend_changed(hca_ep_world(me->front));
}

static void complete_recv(struct model_ep *me, const struct model_recv *r, int status,
			  uint32_t byte_len)
{
	struct hca_wc wc = { .wr_id = r->wr_id, .status = status, .opcode = HCA_WC_OP_RECV,
			     .byte_len = byte_len };

	if (status == HCA_WC_LOC_QP_OP_ERR)
		wc.vendor_err = MODEL_VENDOR_ERR_COPY;
	ring_push(&me->cq[HCA_CQ_RECV], &wc);
	hca_world_backend_changed(hca_ep_world(me->front));
}

static void resume_parked(struct model_ep *me);

/* Flush parked send WRs, then RECVs, each queue in posting order. */
static void flush_all(struct model_ep *me)
{
	struct hca_send_wr wr;
	struct model_recv r;

	while (ring_get(&me->parked, &wr))
		complete_send(me, &wr, HCA_WC_WR_FLUSH_ERR);
	while (ring_get(&me->rq, &r))
		complete_recv(me, &r, HCA_WC_WR_FLUSH_ERR, 0);
}

/* QP -> ERR and flush. The peer is not told; but its parked sends now face a dead
 * responder (they fail with RETRY_EXC_ERR, or wait on with retry_cnt 7). */
static void qp_error(struct model_ep *me)
{
	if (me->qp == QP_ERR || me->qp == QP_NONE)
		return;
	me->qp = QP_ERR;
	flush_all(me);
	if (me->peer)
		resume_parked(me->peer);
}

/* A remote error kills both QPs of a connection at once: both are ERR before either is
 * flushed, so every outstanding WR on both sides completes as a flush
 * (docs/verbs-facts.md, 'WRITE outside the remote MR'). */
static void qp_error_both(struct model_ep *a, struct model_ep *b)
{
	bool flush_a = a->qp != QP_ERR && a->qp != QP_NONE;
	bool flush_b = b->qp != QP_ERR && b->qp != QP_NONE;

	if (flush_a)
		a->qp = QP_ERR;
	if (flush_b)
		b->qp = QP_ERR;
	if (flush_a)
		flush_all(a);
	if (flush_b)
		flush_all(b);
}

/* The requester's WR fails: its completion, then its QP to ERR (flushing what follows). */
static void fail_requester(struct model_ep *me, const struct hca_send_wr *wr, int status)
{
	complete_send(me, wr, status);
	qp_error(me);
}

/* ---- executing send WRs ------------------------------------------------------------------- */

enum exec_result { EXEC_DONE, EXEC_PARK };

/* ODP: fault in the pages of [addr, addr+len) that m does not have yet; how many. */
static uint64_t odp_fault_in(struct model_mr *m, uint64_t addr, uint64_t len)
{
	uint64_t base = m->addr >> MODEL_PAGE_SHIFT, n = 0;
	uint64_t first = (addr >> MODEL_PAGE_SHIFT) - base, last = ((addr + len - 1) >> MODEL_PAGE_SHIFT) - base;

	assert(m->present && len > 0 && last < m->n_pages);
	for (uint64_t p = first; p <= last; p++) {
		uint64_t bit = 1ull << (p % 64);

		if (!(m->present[p / 64] & bit)) {
			m->present[p / 64] |= bit;
			n++;
		}
	}
	return n;
}

/* An RNR NAK with the retries spent (a WRITE into ODP pages not present, a SEND with no
 * RECV): the WR fails, nothing reaches the responder (which sees nothing and stays RTS), the
 * later send WRs flush; the QP goes to ERR when the NAK arrives, which is the front end's
 * time (rep->rnr_failed), so a SEND the peer posts before then still lands
 * (docs/verbs-facts.md, 'SEND with no RECV posted'). */
static void fail_rnr(struct model_ep *me, const struct hca_send_wr *wr, struct hca_send_report *rep)
{
	complete_send(me, wr, HCA_WC_RNR_RETRY_EXC_ERR);
	me->sq_failed = true;
	rep->rnr_failed = true;
}

static enum exec_result exec_write(struct model_ep *me, struct model_ep *peer,
				   const struct hca_send_wr *wr, struct hca_send_report *rep)
{
	struct model_mr *m;
	uint64_t faulted = 0;

	if (!mr_covers(peer, wr->rkey, true, wr->remote_addr, wr->length, HCA_ACCESS_REMOTE_WRITE)) {
		complete_send(me, wr, HCA_WC_REM_ACCESS_ERR);   /* no byte written */
		qp_error_both(me, peer);
		return EXEC_DONE;
	}
	m = mr_find_serial(peer->mw, wr->rkey >> 1, NULL);   /* mr_covers found it */
	assert(m);
	note_stray(peer, wr);
	if (m->present && wr->length > 0)
		faulted = odp_fault_in(m, wr->remote_addr, wr->length);
	if (faulted > 0 && me->rnr_retry < MODEL_RETRY_FOREVER) {
		fail_rnr(me, wr, rep);        /* RNR NAKed: nothing written */
		return EXEC_DONE;
	}
	if (model_copy(me, wr->local_addr, peer, wr->remote_addr, wr->length) < 0) {
		fail_requester(me, wr, HCA_WC_LOC_QP_OP_ERR);
		return EXEC_DONE;
	}
	complete_send(me, wr, HCA_WC_SUCCESS);
	rep->fault_pages += faulted;
	return EXEC_DONE;
}

/* A SEND met a RECV: both fail with (recv_status, send_status), both QPs to ERR. */
static void fail_both(struct model_ep *me, struct model_ep *peer, const struct hca_send_wr *wr,
		      const struct model_recv *r, int recv_status, int send_status)
{
	complete_recv(peer, r, recv_status, 0);
	complete_send(me, wr, send_status);
	qp_error_both(me, peer);
}

static enum exec_result exec_send(struct model_ep *me, struct model_ep *peer,
				  const struct hca_send_wr *wr, struct hca_send_report *rep)
{
	struct model_recv r;

	if (!ring_get(&peer->rq, &r)) {
		if (me->rnr_retry >= MODEL_RETRY_FOREVER)
			return EXEC_PARK;
		fail_rnr(me, wr, rep);
		return EXEC_DONE;
	}
	if (wr->length > r.len) {
		fail_both(me, peer, wr, &r, HCA_WC_LOC_LEN_ERR, HCA_WC_REM_INV_REQ_ERR);
		return EXEC_DONE;
	}
	if (wr->length > 0 &&
	    !mr_covers(peer, r.lkey, false, r.addr, wr->length, HCA_ACCESS_LOCAL_WRITE)) {
		fail_both(me, peer, wr, &r, HCA_WC_LOC_PROT_ERR, HCA_WC_REM_OP_ERR);
		return EXEC_DONE;
	}
	if (model_copy(me, wr->local_addr, peer, r.addr, wr->length) < 0) {
		fail_both(me, peer, wr, &r, HCA_WC_LOC_QP_OP_ERR, HCA_WC_REM_OP_ERR);
		return EXEC_DONE;
	}
	complete_recv(peer, &r, HCA_WC_SUCCESS, wr->length);
	complete_send(me, wr, HCA_WC_SUCCESS);
	return EXEC_DONE;
}

/* Run one send WR on an RTS QP with nothing parked ahead of it; rep: what ODP did to it. */
static enum exec_result exec_wr(struct model_ep *me, const struct hca_send_wr *wr, struct hca_send_report *rep)
{
	struct model_ep *peer = me->peer;

	assert(me->qp == QP_RTS);
	if (me->sq_failed) {          /* an RNR failure: the QP is about to go to ERR */
		complete_send(me, wr, HCA_WC_WR_FLUSH_ERR);
		return EXEC_DONE;
	}
	if (wr->length > 0 && !mr_covers(me, wr->lkey, false, wr->local_addr, wr->length, 0)) {
		fail_requester(me, wr, HCA_WC_LOC_PROT_ERR);
		return EXEC_DONE;
	}
	if (!peer || peer->qp != QP_RTS) {    /* nobody ACKs: transport retries run out */
		if (me->retry_cnt >= MODEL_RETRY_FOREVER)
			return EXEC_PARK;
		fail_requester(me, wr, HCA_WC_RETRY_EXC_ERR);
		return EXEC_DONE;
	}
	if (wr->opcode == HCA_WR_RDMA_WRITE)
		return exec_write(me, peer, wr, rep);
	return exec_send(me, peer, wr, rep);
}

/* Retry parked send WRs in order until one has to wait again. */
static void resume_parked(struct model_ep *me)
{
	struct hca_send_wr wr;
	struct hca_send_report rep = { 0 };   /* not reported: a parked WR's time is not the model's */

	for (uint32_t i = 0; i < MODEL_PARK_MAX && me->qp == QP_RTS; i++) {
		if (!ring_get(&me->parked, &wr))
			return;
		if (exec_wr(me, &wr, &rep) == EXEC_PARK) {
			ring_unget(&me->parked, &wr);
			return;
		}
		if (rep.rnr_failed) { /* nobody times this NAK: the QP goes to ERR now */
			qp_error(me);
			return;
		}
	}
}

/* ---- backend ops: world, listeners -------------------------------------------------------- */

static int model_world_init(hca_world *w, const struct hca_verbs_opts *vopts)
{
	struct model_world *mw = calloc(1, sizeof(*mw));

	(void)vopts;
	if (!mw)
		return -ENOMEM;
	mw->next_serial = MODEL_SERIAL_FIRST;
	hca_world_set_priv(w, mw);
	return 0;
}

static void model_world_fini(hca_world *w)
{
	struct model_world *mw = hca_world_priv(w);

	if (!mw)
		return;
	assert(!mw->listeners && "the front end closes listeners first");
	for (size_t i = 0; i < mw->n_mrs; i++) {
		free(mw->mrs[i]->present);
		free(mw->mrs[i]);
	}
	free(mw->mrs);
	free(mw);
	hca_world_set_priv(w, NULL);
}

static struct model_listener *listener_find(const struct model_world *mw, const char *addr)
{
	for (struct model_listener *ml = mw->listeners; ml; ml = ml->next)
		if (!strcmp(ml->addr, addr))
			return ml;
	return NULL;
}

static int model_listen(hca_listener *l, const char *addr)
{
	struct model_world *mw = hca_world_priv(hca_listener_world(l));
	struct model_listener *ml;

	if (!addr || !*addr)
		return -EINVAL;
	if (listener_find(mw, addr))
		return -EADDRINUSE;
	ml = calloc(1, sizeof(*ml));
	if (!ml)
		return -ENOMEM;
	ml->addr = strdup(addr);
	if (!ml->addr) {
		free(ml);
		return -ENOMEM;
	}
	ml->mw = mw;
	ml->next = mw->listeners;
	mw->listeners = ml;
	hca_listener_set_priv(l, ml);
	return 0;
}

static struct model_ep *model_ep_new(struct model_world *mw, hca_ep *front)
{
	struct model_ep *me = calloc(1, sizeof(*me));

	if (!me)
		return NULL;
	me->mw = mw;
	me->front = front;
	if (fixed_ring(&me->cm, sizeof(struct hca_cm_event), MODEL_CM_EVENTS_MAX) < 0) {
		free(me);
		return NULL;
	}
	return me;
}

static int model_listener_poll(hca_listener *l, hca_ep *new_ep, struct hca_cm_event *req)
{
	struct model_listener *ml = hca_listener_priv(l);
	struct model_ep *active = ml->req_head, *passive;

	if (!active)
		return 0;
	passive = model_ep_new(ml->mw, new_ep);
	if (!passive)
		return -ENOMEM;               /* the request stays queued */
	ml->req_head = active->next_req;
	if (!ml->req_head)
		ml->req_tail = NULL;
	active->next_req = NULL;
	active->listener = NULL;
	active->req_other = passive;
	passive->conn = CONN_REQ_RCVD;
	passive->req_other = active;
	*req = (struct hca_cm_event){ .type = HCA_CM_CONNECT_REQUEST,
				      .pdata_len = MODEL_REQ_PDATA_BYTES };
	memcpy(req->pdata, active->pdata, active->pdata_len);
	hca_ep_set_priv(new_ep, passive);
	return 1;
}

/* The active side of a request that will not be accepted. */
static void request_rejected(struct model_ep *active)
{
	push_event(active, HCA_CM_REJECTED, MODEL_REJ_CONSUMER, NULL, 0, 0);
	active->conn = CONN_FAILED;
	active->req_other = NULL;
	active->listener = NULL;
	active->next_req = NULL;
}

static void model_listener_close(hca_listener *l)
{
	struct model_listener *ml = hca_listener_priv(l);

	if (!ml)
		return;
	for (struct model_listener **pp = &ml->mw->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == ml) {
			*pp = ml->next;
			break;
		}
	}
	while (ml->req_head) {        /* pending requests are rejected, as rdma_cm does */
		struct model_ep *active = ml->req_head;

		ml->req_head = active->next_req;
		request_rejected(active);
	}
	free(ml->addr);
	free(ml);
	hca_listener_set_priv(l, NULL);
}

/* ---- backend ops: endpoints and connections ----------------------------------------------- */

static int model_ep_create(hca_ep *ep, const char *addr)
{
	struct model_ep *me = model_ep_new(hca_world_priv(hca_ep_world(ep)), ep);

	if (!me)
		return -ENOMEM;
	me->addr = strdup(addr);
	if (!me->addr) {
		ring_fini(&me->cm);
		free(me);
		return -ENOMEM;
	}
	hca_ep_set_priv(ep, me);
	return 0;
}

/* rxe's work-queue depth for a request of n: a ring of 2^k slots, one kept empty (rxe_queue_init
 * rounds n + 1 up to a power of two), so the smallest 2^k - 1 >= n: 1023 for QEMU's 512, 3 for 3. */
uint32_t hca_model_granted_depth(uint32_t n)
{
	uint32_t slots = 1;
	while (slots < n + 1u)
		slots <<= 1;
	return slots - 1;
}

static int model_ep_setup(hca_ep *ep, struct hca_qp_caps *caps)
{
	struct model_ep *me = model_ep_of(ep);

	if (!me || me->qp != QP_NONE || caps->max_send_wr == 0 || caps->max_recv_wr == 0 ||
	    caps->max_send_wr > UINT32_MAX / 2 || caps->max_recv_wr > UINT32_MAX / 2)
		return -EINVAL;
	caps->max_send_wr = hca_model_granted_depth(caps->max_send_wr);
	caps->max_recv_wr = hca_model_granted_depth(caps->max_recv_wr);
	if (fixed_ring(&me->rq, sizeof(struct model_recv), caps->max_recv_wr) < 0 ||
	    fixed_ring(&me->parked, sizeof(struct hca_send_wr), caps->max_send_wr) < 0 ||
	    fixed_ring(&me->cq[HCA_CQ_SEND], sizeof(struct hca_wc), caps->max_send_wr) < 0 ||
	    fixed_ring(&me->cq[HCA_CQ_RECV], sizeof(struct hca_wc), caps->max_recv_wr) < 0) {
		ring_fini(&me->rq);
		ring_fini(&me->parked);
		ring_fini(&me->cq[HCA_CQ_SEND]);
		ring_fini(&me->cq[HCA_CQ_RECV]);
		return -ENOMEM;
	}
	me->pd = ++me->mw->next_pd;
	me->qp = QP_INIT;
	return 0;
}

static int model_connect(hca_ep *ep, const struct hca_conn_params *p)
{
	struct model_ep *me = model_ep_of(ep);
	struct model_listener *ml;

	if (!me || !me->addr || me->qp != QP_INIT || me->conn != CONN_IDLE ||
	    p->private_data_len > MODEL_REQ_PDATA_BYTES)
		return -EINVAL;
	if (p->private_data_len)
		memcpy(me->pdata, p->private_data, p->private_data_len);
	me->pdata_len = p->private_data_len;
	me->retry_cnt = p->retry_count > MODEL_RETRY_FOREVER ? MODEL_RETRY_FOREVER : p->retry_count;
	me->connect_rnr_retry = p->rnr_retry_count > MODEL_RETRY_FOREVER ? MODEL_RETRY_FOREVER
									  : p->rnr_retry_count;
	ml = listener_find(me->mw, me->addr);
	if (!ml) {
		push_event(me, HCA_CM_UNREACHABLE, -EHOSTUNREACH, NULL, 0, 0);
		me->conn = CONN_FAILED;
		return 0;
	}
	if (ml->req_tail)
		ml->req_tail->next_req = me;
	else
		ml->req_head = me;
	ml->req_tail = me;
	me->listener = ml;
	me->conn = CONN_REQ_SENT;
	return 0;
}

/* rdma_cm's QP attributes (docs/verbs-facts.md, 'Connection parameters'): retry_cnt on both
 * QPs is the connect side's; each side's rnr_retry is what the *other* side passed. */
static int model_accept(hca_ep *ep, const struct hca_conn_params *p)
{
	struct model_ep *me = model_ep_of(ep), *active;

	if (!me || me->conn != CONN_REQ_RCVD || me->qp != QP_INIT)
		return -EINVAL;
	active = me->req_other;
	if (!active)
		return -ECONNABORTED;         /* the active side went away meanwhile */
	me->rnr_retry = active->connect_rnr_retry;
	active->rnr_retry = p->rnr_retry_count > MODEL_RETRY_FOREVER ? MODEL_RETRY_FOREVER
								      : p->rnr_retry_count;
	me->retry_cnt = active->retry_cnt;
	me->peer = active;
	active->peer = me;
	me->req_other = active->req_other = NULL;
	me->qp = active->qp = QP_RTS;
	me->conn = active->conn = CONN_ESTABLISHED;
	push_event(active, HCA_CM_ESTABLISHED, 0, p->private_data, p->private_data_len,
		   MODEL_REP_PDATA_BYTES);
	push_event(me, HCA_CM_ESTABLISHED, 0, NULL, 0, 0);
	return 0;
}

static int model_reject(hca_ep *ep)
{
	struct model_ep *me = model_ep_of(ep);

	if (!me || me->conn != CONN_REQ_RCVD)
		return -EINVAL;
	if (me->req_other)
		request_rejected(me->req_other);
	me->req_other = NULL;
	me->conn = CONN_CLOSED;
	return 0;
}

static int model_poll_event(hca_ep *ep, struct hca_cm_event *ev)
{
	struct model_ep *me = model_ep_of(ep);

	return me && ring_get(&me->cm, ev) ? 1 : 0;
}

/* docs/verbs-facts.md, 'rdma_disconnect': the caller's QP goes to ERR at once; the peer gets
 * DISCONNECTED and keeps its QP; the caller gets its own DISCONNECTED only when the peer
 * disconnects too. */
static int model_disconnect(hca_ep *ep)
{
	struct model_ep *me = model_ep_of(ep), *peer;

	if (!me)
		return -EINVAL;
	peer = me->peer;
	switch (me->conn) {
	case CONN_ESTABLISHED:
		assert(peer && peer->conn == CONN_ESTABLISHED);
		qp_error(me);
		push_event(peer, HCA_CM_DISCONNECTED, 0, NULL, 0, 0);
		peer->conn = CONN_DREQ_RCVD;
		me->conn = CONN_DREQ_SENT;
		return 0;
	case CONN_DREQ_RCVD:
		qp_error(me);
		if (peer && peer->conn == CONN_DREQ_SENT) {
			push_event(peer, HCA_CM_DISCONNECTED, 0, NULL, 0, 0);
			peer->conn = CONN_CLOSED;
		}
		me->conn = CONN_CLOSED;
		return 0;
	case CONN_DREQ_SENT:
	case CONN_CLOSED:
		qp_error(me);
		return 0;
	default:
		return -EINVAL;               /* never connected */
	}
}

static void listener_unqueue(struct model_listener *ml, struct model_ep *me)
{
	struct model_ep *prev = NULL;

	for (struct model_ep *e = ml->req_head; e; prev = e, e = e->next_req) {
		if (e != me)
			continue;
		if (prev)
			prev->next_req = e->next_req;
		else
			ml->req_head = e->next_req;
		if (ml->req_tail == e)
			ml->req_tail = prev;
		e->next_req = NULL;
		return;
	}
}

/* Destroying a connected id without disconnecting: the peer gets DISCONNECTED
 * (docs/verbs-facts.md, 'Destroy without disconnect') and keeps its QP; a request never
 * answered is rejected. */
static void ep_detach(struct model_ep *me)
{
	struct model_ep *peer = me->peer;

	if (me->conn == CONN_REQ_SENT && me->listener)
		listener_unqueue(me->listener, me);
	if (me->conn == CONN_REQ_SENT && me->req_other)
		me->req_other->req_other = NULL;
	if (me->conn == CONN_REQ_RCVD && me->req_other)
		request_rejected(me->req_other);
	if (!peer)
		return;
	if (me->conn == CONN_ESTABLISHED || me->conn == CONN_DREQ_RCVD) {
		push_event(peer, HCA_CM_DISCONNECTED, 0, NULL, 0, 0);
		peer->conn = peer->conn == CONN_DREQ_SENT ? CONN_CLOSED : CONN_DREQ_RCVD;
	}
	peer->peer = NULL;
	me->peer = NULL;
	resume_parked(peer);                  /* its parked sends now face nobody */
}

static void model_ep_destroy(hca_ep *ep)
{
	struct model_ep *me = model_ep_of(ep);

	if (!me)
		return;
	ep_detach(me);
	free(me->addr);
	ring_fini(&me->rq);
	ring_fini(&me->parked);
	ring_fini(&me->cq[HCA_CQ_SEND]);
	ring_fini(&me->cq[HCA_CQ_RECV]);
	ring_fini(&me->cm);
	free(me);
	hca_ep_set_priv(ep, NULL);
}

static hca_ep *model_peer(hca_ep *ep)
{
	struct model_ep *me = model_ep_of(ep);

	return me && me->peer ? me->peer->front : NULL;
}

static const char *model_device(hca_ep *ep)
{
	(void)ep;
	return MODEL_DEVICE;
}

/* ---- backend ops: memory registration ----------------------------------------------------- */

/* ODP: the present-page bitmap of an MR of len bytes from addr (none present). */
static uint64_t *odp_bitmap(uint64_t addr, uint64_t len, uint64_t *n_pages)
{
	*n_pages = ((addr + len - 1) >> MODEL_PAGE_SHIFT) - (addr >> MODEL_PAGE_SHIFT) + 1;
	return calloc((size_t)((*n_pages + 63) / 64), sizeof(uint64_t));
}

static int model_reg_mr(hca_mr *mr, int access)
{
	struct model_ep *me = model_ep_of(hca_mr_ep(mr));
	struct model_world *mw;
	struct model_mr *m;

	if (!me || me->qp == QP_NONE || hca_mr_len(mr) == 0)
		return -EINVAL;               /* no PD before setup */
	if ((access & HCA_ACCESS_REMOTE_WRITE) && !(access & HCA_ACCESS_LOCAL_WRITE))
		return -EINVAL;               /* as ibv_reg_mr */
	mw = me->mw;
	if (mw->next_serial > MODEL_SERIAL_MAX)
		return -ENOMEM;
	if (mw->n_mrs == mw->cap_mrs) {
		size_t cap = mw->cap_mrs ? 2 * mw->cap_mrs : 64;
		struct model_mr **v = realloc(mw->mrs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		mw->mrs = v;
		mw->cap_mrs = cap;
	}
	enum vocab_side side = hca_ep_side(hca_mr_ep(mr));
	uint64_t first = hca_mr_addr(mr) & ~4095ull, last = (hca_mr_addr(mr) + hca_mr_len(mr) + 4095) & ~4095ull;
	uint64_t pin_bytes = (access & HCA_ACCESS_ON_DEMAND) ? 0 : last - first;   /* ODP pins nothing */
	uint64_t limit = hca_world_memlock(hca_ep_world(hca_mr_ep(mr)), side);
	if (limit && pin_bytes && mw->pinned[side] + pin_bytes > limit)
		return -ENOMEM;               /* as the kernel over RLIMIT_MEMLOCK without CAP_IPC_LOCK */
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	*m = (struct model_mr){ .serial = mw->next_serial, .pd = me->pd, .addr = hca_mr_addr(mr),
				.len = hca_mr_len(mr), .access = access };
	if ((access & HCA_ACCESS_ON_DEMAND) && !(m->present = odp_bitmap(m->addr, m->len, &m->n_pages))) {
		free(m);
		return -ENOMEM;
	}
	mw->next_serial++;
	m->side = side;
	m->pinned_bytes = pin_bytes;
	mw->pinned[side] += m->pinned_bytes;
	mw->mrs[mw->n_mrs++] = m;     /* serials only grow: the table stays sorted */
	hca_mr_set_priv(mr, m);
	hca_mr_set_keys(mr, m->serial << 1, (m->serial << 1) | 1u);
	return 0;
}

/* Prefetch for write (IBV_ADVISE_MR_FLAG_FLUSH): every page present when it returns. */
static int model_advise_mr(hca_mr *mr)
{
	struct model_mr *m = hca_mr_priv(mr);

	if (!m || !m->present)
		return -EINVAL;
	memset(m->present, 0xff, (size_t)((m->n_pages + 63) / 64) * sizeof(uint64_t));
	return 0;
}

static int model_dereg_mr(hca_mr *mr)
{
	struct model_ep *me = model_ep_of(hca_mr_ep(mr));
	struct model_mr *m = hca_mr_priv(mr);
	size_t at;

	if (!me || !m || mr_find_serial(me->mw, m->serial, &at) != m)
		return -EINVAL;
	memmove(&me->mw->mrs[at], &me->mw->mrs[at + 1],
		(me->mw->n_mrs - at - 1) * sizeof(me->mw->mrs[0]));
	me->mw->n_mrs--;
	me->mw->pinned[m->side] -= m->pinned_bytes;
	free(m->present);
	free(m);
	hca_mr_set_priv(mr, NULL);
	return 0;
}

/* ---- backend ops: data path --------------------------------------------------------------- */

static int model_post_recv(hca_ep *ep, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct model_ep *me = model_ep_of(ep);
	struct model_recv r = { .wr_id = wr_id, .addr = addr, .len = len, .lkey = lkey };

	if (!me || me->qp == QP_NONE)
		return -EINVAL;
	if (me->qp == QP_ERR) {
		complete_recv(me, &r, HCA_WC_WR_FLUSH_ERR, 0);
		return 0;
	}
	ring_push(&me->rq, &r);
	if (me->peer)
		resume_parked(me->peer);      /* a SEND may have been waiting for this RECV */
	return 0;
}

static int model_post_send(hca_ep *ep, const struct hca_send_wr *wr, struct hca_send_report *rep)
{
	struct model_ep *me = model_ep_of(ep);

	if (!me || me->qp == QP_NONE || me->qp == QP_INIT)
		return -EINVAL;               /* verbs refuses sends before RTS */
	if (me->qp == QP_ERR) {
		complete_send(me, wr, HCA_WC_WR_FLUSH_ERR);
		return 0;
	}
	if (ring_len(&me->parked) > 0 || exec_wr(me, wr, rep) == EXEC_PARK)
		ring_push(&me->parked, wr);    /* RC: nothing overtakes a waiting WR */
	return 0;
}

static int model_poll_cq(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc)
{
	struct model_ep *me = model_ep_of(ep);

	if (!me || me->qp == QP_NONE)
		return -EINVAL;
	return ring_get(&me->cq[cq], wc) ? 1 : 0;
}

static int model_qp_to_error(hca_ep *ep)
{
	struct model_ep *me = model_ep_of(ep);

	if (!me || me->qp == QP_NONE)
		return -EINVAL;
	qp_error(me);
	return 0;
}

const struct hca_backend_ops hca_model_ops = {
	.name = "model",
	.world_init = model_world_init,
	.world_fini = model_world_fini,
	.listen = model_listen,
	.listener_poll = model_listener_poll,
	.listener_close = model_listener_close,
	.ep_create = model_ep_create,
	.ep_setup = model_ep_setup,
	.connect = model_connect,
	.accept = model_accept,
	.reject = model_reject,
	.poll_event = model_poll_event,
	.disconnect = model_disconnect,
	.ep_destroy = model_ep_destroy,
	.peer = model_peer,
	.device = model_device,
	.reg_mr = model_reg_mr,
	.dereg_mr = model_dereg_mr,
	.advise_mr = model_advise_mr,
	.post_recv = model_post_recv,
	.post_send = model_post_send,
	.poll_cq = model_poll_cq,
	.qp_to_error = model_qp_to_error,
	.block = NULL,
};
