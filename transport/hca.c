/* hca - the seam's front end (see hca.h for the contract, hca_backend.h for the split).
 *
 * The front end owns every object the protocol sees and all of virtual time; a backend only
 * performs operations and reports raw completions and CM events. Per endpoint it keeps:
 *   sends     FIFO of posted send WRs (wr_id, virtual completion time) whose raw completion
 *             has not been drained yet; RC completes them in posting order (asserted);
 *   arrivals  FIFO of the virtual arrival times of the in-process peer's SENDs;
 *   cq[2]     stamped completions, t_ns nondecreasing within a queue (so queue order is
 *             both posting order and time order); visible once the clock reaches t_ns;
 *   cm        CM events drained from the backend, in arrival order.
 * Stamping: a send completion gets min(its done time, the QP's error time); a RECV that
 * consumed a message gets the message's arrival time; a flushed RECV gets max(now, the QP's
 * error time). The QP's error time is set by hca_qp_to_error / hca_disconnect (now), by a
 * failed send completion (its time) and, for errors that also kill the responder
 * (REM_ACCESS_ERR, REM_INV_REQ_ERR, REM_OP_ERR), on the in-process peer as well. Send CQs
 * are drained before recv CQs so that the peer's error time is known when its flushed RECVs
 * are stamped.
 *
 * Faults (faults/fault.h, docs/faults.md). When a plan is attached, every fallible call is
 * counted under its sites and side and may be failed here, identically for both backends:
 *   errno     the call returns -errno without reaching the backend;
 *   status    the send WR is not given to the backend: the front end completes it with that
 *             status, then moves the QP to error for real (backend qp_to_error; the in-process
 *             peer's too for REM_ACCESS_ERR / REM_INV_REQ_ERR / REM_OP_ERR, as a responder
 *             would be); at a wc.* site a successful completion is rewritten and the QP
 *             goes to error when virtual time reaches that completion (kill_due);
 *   drop      a send WR reports success and delivers nothing; a completion or CM event is lost;
 *   delay     a send WR completes and arrives later; a completion becomes visible later; any
 *             other call first lets the virtual time pass;
 *   duplicate a control message is posted twice; a CM event is delivered twice;
 *   corrupt   the control header (or payload) is changed in the sender's buffer before posting;
 *   qp_error, disconnect, event: the real operation (or a synthetic CM event) before the call;
 *   die       the process is killed on the spot (SIGKILL).
 * Send WRs the front end completes itself are "fake" entries of the sends FIFO: they complete
 * in posting order with the others, without a backend completion. */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "faults/fault.h"
#include "sim/mem.h"
#include "transport/hca_backend.h"
#include "transport/wire.h"

#define HCA_SIDE_MAX 8               /* "src", "dst" */
#define HCA_PROGRESS_MAX 8
#define HCA_WR_MAX 65536u            /* per queue; verbs devices allow far less than this */
#define HCA_REQ_PDATA_MAX 56         /* rdma_cm REQ private data */
#define HCA_WAIT_ITER_MAX (1u << 24) /* a wait that loops this often is a livelock (asserted) */
#define HCA_FAULT_WRID_BITS (UINT64_C(0x3fff) << 16)   /* corrupt(wr_id): wire.h block bits 16..29 */
#define HCA_CM_DRAIN_MAX 64          /* CM events pulled from the backend per endpoint per drain */
#define HCA_RING_MAX_ELEMS (1u << 24)
#define HCA_BLOCK_SLICE_NS (100ull * VCLOCK_NS_PER_MS)
#define HCA_PAGE_BYTES 4096ull
#define HCA_NO_ERROR UINT64_MAX
#define HCA_LOG_FIELD_MAX 64

/* Emit one evlog line if the world has a log. */
#define HLOG(w, side, event, ...)                                              \
	do {                                                                   \
		if ((w)->ev)                                                   \
			evlog_emit((w)->ev, (side), (event), __VA_ARGS__);     \
	} while (0)

/* ---- a growable FIFO ring of fixed-size elements ------------------------------------------ */

struct ring {
	unsigned char *v;
	size_t esz, cap, head, len;
};

static int ring_init(struct ring *r, size_t esz, size_t cap)
{
	assert(esz > 0 && cap > 0);
	r->v = calloc(cap, esz);
	if (!r->v)
		return -ENOMEM;
	r->esz = esz;
	r->cap = cap;
	r->head = 0;
	r->len = 0;
	return 0;
}

static void ring_fini(struct ring *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

static void *ring_at(const struct ring *r, size_t i)
{
	assert(i < r->len);
	return r->v + ((r->head + i) % r->cap) * r->esz;
}

/* Make room for n more elements: 0 or -ENOMEM. */
static int ring_reserve(struct ring *r, size_t n)
{
	size_t cap = r->cap;
	unsigned char *v;

	if (r->len + n <= r->cap)
		return 0;
	while (cap < r->len + n)
		cap *= 2;
	if (cap > HCA_RING_MAX_ELEMS)
		return -ENOMEM;
	v = malloc(cap * r->esz);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->len; i++)
		memcpy(v + i * r->esz, ring_at(r, i), r->esz);
	free(r->v);
	r->v = v;
	r->cap = cap;
	r->head = 0;
	return 0;
}

/* Append; the caller has reserved room (asserted). */
static void ring_push(struct ring *r, const void *e)
{
	assert(r->len < r->cap && "ring room was reserved");
	r->len++;
	memcpy(ring_at(r, r->len - 1), e, r->esz);
}

static void ring_pop(struct ring *r, void *out)
{
	assert(r->len > 0);
	if (out)
		memcpy(out, ring_at(r, 0), r->esz);
	r->head = (r->head + 1) % r->cap;
	r->len--;
}

static void ring_drop_back(struct ring *r)
{
	assert(r->len > 0);
	r->len--;
}

/* ---- objects ------------------------------------------------------------------------------ */

struct posted_send {
	uint64_t wr_id;
	uint64_t post_ns;             /* when it was posted */
	uint64_t done_ns;
	uint32_t len;
	int opcode;                   /* enum hca_wc_opcode */
	bool fake;                    /* not given to the backend: completes with `status` */
	int status;
};

struct progress {
	hca_progress_fn fn;
	void *arg;
	bool finished;                /* returned < 0 once: never called again */
};

struct hca_world {
	enum hca_backend_kind kind;
	const struct hca_backend_ops *ops;
	struct hca_cost cost;
	vclock clk;
	evlog *ev;                    /* NULL: no log */
	void *priv;
	hca_ep *eps;                  /* creation order */
	hca_listener *listeners;
	struct progress progress[HCA_PROGRESS_MAX];
	size_t n_progress;
	bool in_progress;             /* a progress function is running: no recursion */
	uint64_t n_eps, n_listeners, n_mrs;
	uint64_t memlock_src, memlock_dst; /* model: per-side pinning limits, 0 = none */
	fault_plan *faults;           /* borrowed; NULL: no faults, no counting */
};

struct hca_listener {
	hca_world *w;
	hca_listener *next;
	char side[HCA_SIDE_MAX];
	char *addr;                   /* for the log */
	void *priv;
	hca_ep *spare;                /* endpoint offered to the next listener_poll */
};

struct hca_ep {
	hca_world *w;
	hca_ep *next;
	char side[HCA_SIDE_MAX];
	void *priv;
	struct mem *guest;
	bool setup;
	struct hca_qp_caps caps;
	uint64_t link_free_ns;        /* the outgoing link is busy until then */
	uint64_t err_ns;              /* time the QP went to error, HCA_NO_ERROR if not known */
	struct ring sends;            /* struct posted_send */
	struct ring arrivals;         /* uint64_t */
	struct ring cq[2];            /* struct hca_wc, stamped */
	struct ring cm;               /* struct hca_cm_event */
	uint32_t send_outstanding;    /* posted, completion not yet returned to the user */
	uint32_t recv_outstanding;
	uint32_t recv_raw;            /* posted RECVs whose raw completion is not drained yet */
	uint64_t kill_ns;             /* an injected wc status: the QP dies then (HCA_NO_ERROR: none) */
	int kill_status;
	hca_mr *mrs;
	uint64_t n_mrs;
};

struct hca_mr {
	hca_ep *ep;
	hca_mr *prev, *next;
	void *priv;
	uint64_t addr, len;
	uint32_t lkey, rkey;
	int access;
	bool dereg_failed;            /* an injected dereg failure: released by hca_ep_destroy */
};

/* ---- small helpers ------------------------------------------------------------------------ */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t now_ns(const hca_world *w)
{
	return vclock_now_ns(&w->clk);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VCLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* A log token: non-empty, short, no blanks. */
static bool is_side(const char *s)
{
	return s && *s && strlen(s) < HCA_SIDE_MAX && !strpbrk(s, " \t\r\n");
}

static bool is_addr(const char *s)
{
	return s && *s && !strpbrk(s, " \t\r\n");
}

/* Keys are deterministic on the model only. */
static const char *key_str(const hca_world *w, uint32_t key, char *buf, size_t n)
{
	if (w->kind != HCA_BACKEND_MODEL)
		return "*";
	snprintf(buf, n, "0x%x", key);
	return buf;
}

/* Addresses are logged as a guest block offset, never as a pointer. */
static const char *where_str(const hca_ep *ep, uint64_t addr, uint64_t len, char *buf, size_t n)
{
	size_t b;
	uint64_t off;

	if (!ep->guest || mem_resolve(ep->guest, addr, len, &b, &off) != 0)
		return "addr=*";
	snprintf(buf, n, "blk=%zu off=0x%llx", b, (unsigned long long)off);
	return buf;
}

static const char *wc_op_str(int opcode)
{
	switch (opcode) {
	case HCA_WC_OP_SEND:
		return "send";
	case HCA_WC_OP_RDMA_WRITE:
		return "write";
	case HCA_WC_OP_RECV:
		return "recv";
	default:
		return "?";
	}
}

/* ---- costs --------------------------------------------------------------------------------- */

void hca_cost_defaults(struct hca_cost *c)
{
	assert(c);
	c->link_bytes_per_s = 12500000000ull;
	c->msg_latency_ns = 2000;
	c->wr_overhead_ns = 200;
	c->reg_fixed_ns = 20000;
	c->reg_per_page_ns = 60;
	c->dereg_fixed_ns = 5000;
}

/* ---- accessors for backends --------------------------------------------------------------- */

void *hca_world_priv(hca_world *w) { return w->priv; }
void hca_world_set_priv(hca_world *w, void *p) { w->priv = p; }
void *hca_listener_priv(hca_listener *l) { return l->priv; }
void hca_listener_set_priv(hca_listener *l, void *p) { l->priv = p; }
hca_world *hca_listener_world(hca_listener *l) { return l->w; }
void *hca_ep_priv(hca_ep *ep) { return ep->priv; }
void hca_ep_set_priv(hca_ep *ep, void *p) { ep->priv = p; }
hca_world *hca_ep_world(hca_ep *ep) { return ep->w; }
struct mem *hca_ep_guest(hca_ep *ep) { return ep->guest; }
void *hca_mr_priv(hca_mr *mr) { return mr->priv; }
void hca_mr_set_priv(hca_mr *mr, void *p) { mr->priv = p; }
hca_ep *hca_mr_ep(hca_mr *mr) { return mr->ep; }

void hca_mr_set_keys(hca_mr *mr, uint32_t lkey, uint32_t rkey)
{
	mr->lkey = lkey;
	mr->rkey = rkey;
}

hca_ep *hca_world_ep_next(hca_world *w, hca_ep *prev)
{
	return prev ? prev->next : w->eps;
}

vclock *hca_world_clock(hca_world *w) { return &w->clk; }
evlog *hca_world_evlog(hca_world *w) { return w->ev; }
enum hca_backend_kind hca_world_kind(const hca_world *w) { return w->kind; }
const char *hca_world_backend_name(const hca_world *w) { return w->ops->name; }
const char *hca_ep_side(const hca_ep *ep) { return ep->side; }
uint32_t hca_mr_lkey(const hca_mr *mr) { return mr->lkey; }
uint32_t hca_mr_rkey(const hca_mr *mr) { return mr->rkey; }
uint64_t hca_mr_addr(const hca_mr *mr) { return mr->addr; }
uint64_t hca_mr_len(const hca_mr *mr) { return mr->len; }
uint32_t hca_ep_send_outstanding(const hca_ep *ep) { return ep->send_outstanding; }

uint64_t hca_world_live_objects(const hca_world *w)
{
	return w->n_eps + w->n_listeners + w->n_mrs;
}

const char *hca_ep_device(const hca_ep *ep)
{
	if (!ep->setup || !ep->w->ops->device)
		return "";
	return ep->w->ops->device((hca_ep *)ep);
}

void hca_ep_map_guest(hca_ep *ep, struct mem *m)
{
	assert(ep);
	ep->guest = m;
}

/* ---- faults (see the top comment and docs/faults.md) --------------------------------------- */

static int world_drain(hca_world *w);
static void world_pass_time(hca_world *w, uint64_t d_ns);

void hca_world_set_faults(hca_world *w, fault_plan *p)
{
	assert(w);
	w->faults = p;
}

/* Ask the plan about one call of `side` under sites (most specific first): true and *f when
 * a rule fires. Every injection is logged; `die` never returns. */
static bool fault_at(hca_world *w, const char *side, const enum fault_site *sites, size_t n,
		     struct fault_fire *f)
{
	char act[HCA_LOG_FIELD_MAX];
	int fs = w->faults ? fault_side_lookup(side) : -1;

	if (fs < 0 || !fault_plan_check(w->faults, sites, n, (enum fault_side)fs, now_ns(w), f))
		return false;
	fault_action_format(f->action, f->arg, f->delay_ns, act, sizeof(act));
	HLOG(w, side, "fault", "site=%s side=%s call=%llu action=%s", fault_site_name(f->site), side,
	     (unsigned long long)f->call, act);
	if (f->action == FAULT_ACT_DIE) {
		raise(SIGKILL);           /* a crash, not an exit: nothing is flushed */
		_exit(128 + SIGKILL);
	}
	return true;
}

/* One-site form. */
static bool fault_at1(hca_world *w, const char *side, enum fault_site site, struct fault_fire *f)
{
	return fault_at(w, side, &site, 1, f);
}

int hca_fault_alloc(hca_world *w, const char *side)
{
	struct fault_fire f;

	assert(w && side);
	if (!fault_at1(w, side, FAULT_SITE_ALLOC, &f))
		return 0;
	assert(f.action == FAULT_ACT_ERRNO);   /* the only other one, die, does not return */
	return -f.arg;
}

/* The real transition to ERR (backend), with the front end's error time. */
static int qp_to_error_now(hca_ep *ep)
{
	int rc;

	ep->err_ns = min_u64(ep->err_ns, now_ns(ep->w));
	rc = ep->w->ops->qp_to_error(ep);
	HLOG(ep->w, ep->side, "qp_to_error", "rc=%d", rc);
	return rc;
}

/* Errors after which the responder's QP is in error too
 * (docs/verbs-facts.md, 'WRITE outside the remote MR'). */
static bool status_kills_responder(int status)
{
	return status == HCA_WC_REM_ACCESS_ERR || status == HCA_WC_REM_INV_REQ_ERR ||
	       status == HCA_WC_REM_OP_ERR;
}

/* An injected error status: this QP (and, for the statuses that kill the responder, the
 * in-process peer's) goes to ERR for real. Nothing is drained here. */
static void fault_kill_qp(hca_ep *ep, int status)
{
	hca_ep *peer;

	ep->err_ns = min_u64(ep->err_ns, now_ns(ep->w));
	ep->w->ops->qp_to_error(ep);
	if (!status_kills_responder(status) || !(peer = ep->w->ops->peer(ep)) || !peer->setup)
		return;
	peer->err_ns = min_u64(peer->err_ns, now_ns(ep->w));
	ep->w->ops->qp_to_error(peer);
}

static void push_synthetic_event(hca_ep *ep, int type)
{
	struct hca_cm_event ev = { .type = type };

	if (ring_reserve(&ep->cm, 1) != 0)
		return;
	ring_push(&ep->cm, &ev);
	HLOG(ep->w, ep->side, "cm_event", "type=%s status=0 injected=1", hca_cm_event_name(type));
}

/* Actions at a call site other than a send WR: 0 to go on with the call (after the side
 * effect), or -errno to fail it. */
static int fault_before(hca_ep *ep, const struct fault_fire *f)
{
	switch (f->action) {
	case FAULT_ACT_ERRNO:
		return -f->arg;
	case FAULT_ACT_DELAY:
		world_pass_time(ep->w, f->delay_ns);
		return 0;
	case FAULT_ACT_QP_ERROR:
		if (ep->setup) {
			qp_to_error_now(ep);
			world_drain(ep->w);
		}
		return 0;
	case FAULT_ACT_DISCONNECT:
		hca_disconnect(ep);
		return 0;
	case FAULT_ACT_EVENT:
		push_synthetic_event(ep, f->arg);
		return 0;
	default:
		return 0;
	}
}

/* An injected completion error whose time has come: the QP goes to ERR now. */
static void kill_due(hca_ep *ep)
{
	if (ep->kill_ns > now_ns(ep->w) || !ep->setup)
		return;
	ep->kill_ns = HCA_NO_ERROR;
	fault_kill_qp(ep, ep->kill_status);
	HLOG(ep->w, ep->side, "qp_to_error", "rc=0 fault=%s", hca_wc_status_name(ep->kill_status));
}

/* Actions at a setup call (ep_create, ep_setup, modify_qp, connect, accept): errno or delay. */
static int fault_setup_call(hca_world *w, const struct fault_fire *f)
{
	if (f->action == FAULT_ACT_ERRNO)
		return -f->arg;
	if (f->action == FAULT_ACT_DELAY)
		world_pass_time(w, f->delay_ns);
	return 0;
}

/* connect / accept, then the QP's RTR -> RTS (modify_qp): 0 or the injected -errno. */
static int fault_conn_call(hca_ep *ep, enum fault_site site)
{
	struct fault_fire f;
	int rc = 0;

	if (fault_at1(ep->w, ep->side, site, &f))
		rc = fault_setup_call(ep->w, &f);
	if (rc == 0 && fault_at1(ep->w, ep->side, FAULT_SITE_MODIFY_QP, &f))
		rc = fault_setup_call(ep->w, &f);
	return rc;
}

/* Completion faults on successful completions: rewrite the status (the QP then goes to ERR
 * for real at the completion's time, see kill_due), make it visible later, or lose it.
 * false: the completion is dropped. */
static bool wc_fault(hca_ep *ep, struct hca_wc *wc, uint64_t *t_ns)
{
	struct fault_fire f;
	enum fault_site site = wc->opcode == HCA_WC_OP_RECV	      ? FAULT_SITE_WC_RECV
			       : wc->opcode == HCA_WC_OP_RDMA_WRITE ? FAULT_SITE_WC_WRITE
								    : FAULT_SITE_WC_SEND;

	if (wc->status != HCA_WC_SUCCESS || !fault_at1(ep->w, ep->side, site, &f))
		return true;
	switch (f.action) {
	case FAULT_ACT_STATUS:
		/* the QP dies when the error completion happens, not when it is drained */
		wc->status = f.arg;
		if (*t_ns < ep->kill_ns) {
			ep->kill_ns = *t_ns;
			ep->kill_status = f.arg;
		}
		return true;
	case FAULT_ACT_DELAY:
		*t_ns = sat_add(*t_ns, f.delay_ns);
		return true;
	case FAULT_ACT_CORRUPT:
		/* a provider bug: a completion for a WR never posted (the block bits of a write's
		 * wr_id all set; any other wr_id changes likewise) */
		wc->wr_id |= HCA_FAULT_WRID_BITS;
		return true;
	case FAULT_ACT_DROP:
		if (site == FAULT_SITE_WC_RECV) {
			assert(ep->recv_outstanding > 0);
			ep->recv_outstanding--;
		} else {
			assert(ep->send_outstanding > 0);
			ep->send_outstanding--;
		}
		return false;
	default:
		return true;
	}
}

/* CM event faults: how many copies of ev to deliver (0 drop, 1, 2 duplicate). */
static int cm_fault(hca_ep *ep, const struct hca_cm_event *ev)
{
	struct fault_fire f;
	enum fault_site sites[2] = { FAULT_SITE_CM, FAULT_SITE_CM };
	size_t n = 0;

	if (ev->type >= 0 && ev->type < FAULT_CM_EVENTS)
		sites[n++] = fault_site_cm(ev->type);
	sites[n++] = FAULT_SITE_CM;
	if (!fault_at(ep->w, ep->side, sites, n, &f))
		return 1;
	return f.action == FAULT_ACT_DROP ? 0 : f.action == FAULT_ACT_DUPLICATE ? 2 : 1;
}

/* The 16-byte control header at the start of a SEND when it lies in plain registered memory
 * (never in a guest block, whose STAMP pages have no bytes): a pointer, or NULL. */
static uint8_t *send_header(hca_ep *ep, const struct hca_send_wr *wr)
{
	size_t b;
	uint64_t off;

	if (wr->opcode != HCA_WR_SEND || wr->length < WIRE_HDR_BYTES)
		return NULL;
	if (ep->guest && mem_resolve(ep->guest, wr->local_addr, WIRE_HDR_BYTES, &b, &off) == 0)
		return NULL;
	for (const hca_mr *mr = ep->mrs; mr; mr = mr->next)
		if (mr->lkey == wr->lkey && wr->local_addr >= mr->addr &&
		    wr->local_addr - mr->addr <= mr->len - WIRE_HDR_BYTES && mr->len >= WIRE_HDR_BYTES)
			return (uint8_t *)(uintptr_t)wr->local_addr;
	return NULL;
}

/* The sites of a send WR, most specific first: msg.TYPE (a control message), post_send.send
 * or post_send.write, post_send. */
static size_t send_sites(hca_ep *ep, const struct hca_send_wr *wr, enum fault_site *sites,
			 uint8_t **hdr)
{
	struct wire_hdr h;
	size_t n = 0;

	*hdr = ep->w->faults ? send_header(ep, wr) : NULL;
	if (*hdr && wire_hdr_decode(*hdr, WIRE_HDR_BYTES, &h) >= 0 && h.type < FAULT_MSG_TYPES)
		sites[n++] = fault_site_msg(h.type);
	else
		*hdr = NULL;
	sites[n++] = wr->opcode == HCA_WR_SEND ? FAULT_SITE_POST_SEND_SEND : FAULT_SITE_POST_SEND_WRITE;
	sites[n++] = FAULT_SITE_POST_SEND;
	return n;
}

/* corrupt: change the header (big-endian fields) or the first payload byte in place; the
 * sender encodes a fresh header for its next message. false: nothing to corrupt. */
static bool corrupt_message(uint8_t *hdr, uint32_t length, int how)
{
	switch (how) {
	case FAULT_CORRUPT_LEN:
		hdr[0] ^= 0x40;           /* len + 1 GiB: "too long length" */
		return true;
	case FAULT_CORRUPT_TYPE:
		hdr[7] ^= 0x80;           /* an unknown type */
		return true;
	case FAULT_CORRUPT_REPEAT:
		hdr[9] ^= 0x01;           /* repeat +/- 65536: over 4096 */
		return true;
	default:
		if (length <= WIRE_HDR_BYTES)
			return false;
		hdr[WIRE_HDR_BYTES] ^= 0xff;
		return true;
	}
}

/* ---- draining raw completions and CM events ----------------------------------------------- */

/* Append a stamped completion, keeping t_ns nondecreasing within the queue (RC delivers in
 * order within a queue, so a later completion is never visible before an earlier one). */
static void cq_push(hca_ep *ep, enum hca_cq_kind k, struct hca_wc *wc, uint64_t t_ns)
{
	struct ring *q = &ep->cq[k];

	if (q->len > 0)
		t_ns = max_u64(t_ns, ((const struct hca_wc *)ring_at(q, q->len - 1))->t_ns);
	wc->t_ns = t_ns;
	ring_push(q, wc);
}

static void note_send_error(hca_ep *ep, int status, uint64_t t_ns)
{
	ep->err_ns = min_u64(ep->err_ns, t_ns);
	if (status_kills_responder(status)) {
		hca_ep *peer = ep->w->ops->peer(ep);

		if (peer)
			peer->err_ns = min_u64(peer->err_ns, t_ns);
	}
}

/* The next send completion in posting order: a fake entry at the head of the FIFO completes
 * by itself, anything else when the backend reports it. 1 got, 0 none, <0 backend error. */
static int next_send_wc(hca_ep *ep, struct posted_send *ps, struct hca_wc *wc)
{
	int rc;

	if (ep->sends.len > 0 && ((const struct posted_send *)ring_at(&ep->sends, 0))->fake) {
		ring_pop(&ep->sends, ps);
		*wc = (struct hca_wc){ .wr_id = ps->wr_id, .status = ps->status };
		return 1;
	}
	rc = ep->w->ops->poll_cq(ep, HCA_CQ_SEND, wc);
	if (rc <= 0)
		return rc;
	assert(ep->sends.len > 0 && "send completion for a WR that was never posted");
	ring_pop(&ep->sends, ps);
	assert(!ps->fake && ps->wr_id == wc->wr_id && "RC completes send WRs in posting order");
	return 1;
}

static int drain_send_cq(hca_ep *ep)
{
	for (size_t n = ep->sends.len + 1; n > 0; n--) {
		struct posted_send ps;
		struct hca_wc wc;
		int rc = next_send_wc(ep, &ps, &wc);

		if (rc <= 0)
			return rc;
		uint64_t t_ns = min_u64(ps.done_ns, ep->err_ns);
		/* a flush comes when the QP enters error, never before (a responder killed by a bad
		 * RDMA WRITE dies when the WRITE arrives, not when it was posted: finding F3) */
		if (wc.status == HCA_WC_WR_FLUSH_ERR && ep->err_ns != HCA_NO_ERROR)
			t_ns = max_u64(ps.post_ns, ep->err_ns);
		wc.opcode = ps.opcode;
		wc.byte_len = ps.len;
		if (!wc_fault(ep, &wc, &t_ns))
			continue;
		if (wc.status != HCA_WC_SUCCESS)
			note_send_error(ep, wc.status, t_ns);
		cq_push(ep, HCA_CQ_SEND, &wc, t_ns);
	}
	assert(!"backend reported more send completions than WRs posted");
	return -EIO;
}

static int drain_recv_cq(hca_ep *ep)
{
	const struct hca_backend_ops *ops = ep->w->ops;

	for (uint32_t n = ep->recv_raw + 1; n > 0; n--) {
		struct hca_wc wc;
		uint64_t t_ns = now_ns(ep->w), arrival_ns;
		int rc = ops->poll_cq(ep, HCA_CQ_RECV, &wc);

		if (rc <= 0)
			return rc;
		assert(ep->recv_raw > 0 && "recv completion for a RECV that was never posted");
		ep->recv_raw--;
		/* every status but a flush means a message arrived (SUCCESS, LOC_LEN_ERR, ...) */
		if (wc.status != HCA_WC_WR_FLUSH_ERR && ep->arrivals.len > 0) {
			ring_pop(&ep->arrivals, &arrival_ns);
			t_ns = arrival_ns;
		}
		wc.opcode = HCA_WC_OP_RECV;
		if (!wc_fault(ep, &wc, &t_ns))
			continue;
		if (wc.status != HCA_WC_SUCCESS) {
			if (ep->err_ns != HCA_NO_ERROR)
				t_ns = max_u64(t_ns, ep->err_ns);
			ep->err_ns = min_u64(ep->err_ns, t_ns);
		}
		cq_push(ep, HCA_CQ_RECV, &wc, t_ns);
	}
	assert(!"backend reported more recv completions than RECVs posted");
	return -EIO;
}

/* 0, or the backend's error reading CM events (e.g. the channel gone: -EACCES), which the
 * waits report instead of running into their timeout. */
static int drain_cm(hca_ep *ep)
{
	for (int i = 0; i < HCA_CM_DRAIN_MAX; i++) {
		struct hca_cm_event ev;
		int rc;

		if (ring_reserve(&ep->cm, 1) != 0)
			return 0;             /* stays queued in the backend */
		if ((rc = ep->w->ops->poll_event(ep, &ev)) <= 0)
			return rc;
		HLOG(ep->w, ep->side, "cm_event", "type=%s status=%d", hca_cm_event_name(ev.type),
		     ev.status);
		for (int copies = cm_fault(ep, &ev); copies > 0; copies--) {
			if (ring_reserve(&ep->cm, 1) != 0)
				return 0;
			ring_push(&ep->cm, &ev);
		}
	}
	return 0;
}

/* Pull everything the backend has: CM events and send CQs first, then recv CQs (see the
 * top comment). 0 or the first backend error. */
static int world_drain(hca_world *w)
{
	int err = 0;

	for (hca_ep *ep = w->eps; ep; ep = ep->next)
		kill_due(ep);
	for (hca_ep *ep = w->eps; ep; ep = ep->next) {
		int cm_rc = drain_cm(ep);

		err = err ? err : cm_rc;
		if (ep->setup) {
			int rc = drain_send_cq(ep);

			err = err ? err : rc;
		}
	}
	for (hca_ep *ep = w->eps; ep; ep = ep->next) {
		if (ep->setup) {
			int rc = drain_recv_cq(ep);

			err = err ? err : rc;
		}
	}
	return err;
}

/* ---- time: progress, next event, blocking ------------------------------------------------- */

/* Run every live progress function once: 1 if one of them did something. */
static int world_progress(hca_world *w)
{
	int did = 0;

	if (w->in_progress)
		return 0;
	w->in_progress = true;
	for (size_t i = 0; i < w->n_progress; i++) {
		struct progress *p = &w->progress[i];
		int rc;

		if (p->finished)
			continue;
		rc = p->fn(p->arg);
		if (rc > 0)
			did = 1;
		else if (rc < 0)
			p->finished = true;
	}
	w->in_progress = false;
	return did;
}

/* The earliest completion time later than now on any queue: true and *t_ns, or false. */
static bool world_next_ns(const hca_world *w, uint64_t *t_ns)
{
	uint64_t now = now_ns(w), best = UINT64_MAX;
	bool found = false;

	for (const hca_ep *ep = w->eps; ep; ep = ep->next) {
		for (int k = HCA_CQ_SEND; k <= HCA_CQ_RECV; k++) {
			const struct ring *q = &ep->cq[k];

			for (size_t i = 0; i < q->len; i++) {
				uint64_t t = ((const struct hca_wc *)ring_at(q, i))->t_ns;

				if (t > now) {
					found = true;
					best = min_u64(best, t);
					break;        /* the queue is sorted by time */
				}
			}
		}
	}
	*t_ns = best;
	return found;
}

/* Verbs: sleep on the devices for what is left of the wall budget (at most one slice).
 * 2 the backend says something is ready, 1 the slice passed, 0 nothing to block for or
 * budget spent, <0 backend error. */
static int world_block(hca_world *w, uint64_t wall0_ns, uint64_t budget_ns)
{
	uint64_t spent_ns = mono_ns() - wall0_ns;
	int rc;

	if (!w->ops->block || w->n_eps + w->n_listeners == 0 || spent_ns >= budget_ns)
		return 0;
	rc = w->ops->block(w, min_u64(budget_ns - spent_ns, HCA_BLOCK_SLICE_NS));
	return rc < 0 ? rc : rc > 0 ? 2 : 1;
}

/* >0 satisfied (returned as is), <0 error, 0 keep waiting. */
typedef int (*wait_check_fn)(void *arg);

/* The one wait loop (see hca.h "Progress"): drain, check, progress, advance the clock to the
 * next completion time within the deadline, block (verbs), else time out at the deadline. */
static int world_wait(hca_world *w, uint64_t timeout_ns, wait_check_fn check, void *arg)
{
	uint64_t deadline_ns = sat_add(now_ns(w), timeout_ns);
	uint64_t wall0_ns = mono_ns();

	for (uint32_t i = 0; i < HCA_WAIT_ITER_MAX; i++) {
		uint64_t t_ns;
		int rc = world_drain(w);

		if (rc < 0)
			return rc;
		rc = check(arg);
		if (rc != 0)
			return rc;
		if (world_progress(w) > 0)
			continue;
		if (world_next_ns(w, &t_ns) && t_ns <= deadline_ns) {
			vclock_advance_to(&w->clk, t_ns);
			continue;
		}
		rc = world_block(w, wall0_ns, timeout_ns);
		if (rc < 0)
			return rc;
		if (rc > 0)
			continue;
		vclock_catch_up(&w->clk, deadline_ns);
		return 0;
	}
	assert(!"hca wait loop did not converge (a progress function that never rests?)");
	return -ELOOP;
}

/* Let d_ns of virtual time pass, stopping at every completion time on the way to run the
 * progress functions (which do nothing when called from inside one). */
static void world_pass_time(hca_world *w, uint64_t d_ns)
{
	uint64_t target_ns = sat_add(now_ns(w), d_ns);

	for (uint32_t i = 0; i < HCA_WAIT_ITER_MAX; i++) {
		uint64_t t_ns;

		world_drain(w);
		if (world_progress(w) > 0)
			continue;
		if (world_next_ns(w, &t_ns) && t_ns <= target_ns) {
			vclock_advance_to(&w->clk, t_ns);
			continue;
		}
		vclock_catch_up(&w->clk, target_ns);
		return;
	}
	assert(!"hca sleep loop did not converge (a progress function that never rests?)");
}

/* Completions and CM events held by the front end (for "did the drain bring anything"). */
static size_t world_queued(const hca_world *w)
{
	size_t n = 0;

	for (const hca_ep *ep = w->eps; ep; ep = ep->next)
		n += ep->cq[HCA_CQ_SEND].len + ep->cq[HCA_CQ_RECV].len + ep->cm.len;
	return n;
}

/* hca.h: progress first; else move the clock to the next completion time within the
 * deadline, or (verbs) block on the devices. "Something happened": the drain brought a
 * completion or CM event, a progress function did something, a completion became visible
 * as the clock moved to its time, or a device fd became ready (e.g. a connect request). */
int hca_world_wait(hca_world *w, uint64_t timeout_ns)
{
	uint64_t deadline_ns = sat_add(now_ns(w), timeout_ns);
	uint64_t wall0_ns = mono_ns();

	for (uint32_t i = 0; i < HCA_WAIT_ITER_MAX; i++) {
		size_t before = world_queued(w);
		uint64_t t_ns;
		int rc = world_drain(w);

		if (rc < 0)
			return rc;
		bool drained = world_queued(w) > before;

		if (world_progress(w) > 0 || drained)
			return 1;
		if (world_next_ns(w, &t_ns) && t_ns <= deadline_ns) {
			vclock_advance_to(&w->clk, t_ns);
			return 1;
		}
		rc = world_block(w, wall0_ns, timeout_ns);
		if (rc < 0)
			return rc;
		if (rc == 2)
			return 1;
		if (rc == 0)
			break;
	}
	vclock_catch_up(&w->clk, deadline_ns);
	return 0;
}

void hca_sleep(hca_world *w, uint64_t d_ns)
{
	assert(w);
	HLOG(w, "sim", "sleep", "ns=%llu", (unsigned long long)d_ns);
	world_pass_time(w, d_ns);
}

int hca_world_add_progress(hca_world *w, hca_progress_fn fn, void *arg)
{
	if (!w || !fn)
		return -EINVAL;
	if (w->n_progress >= HCA_PROGRESS_MAX)
		return -ENOSPC;
	w->progress[w->n_progress++] = (struct progress){ .fn = fn, .arg = arg };
	return 0;
}

/* ---- world -------------------------------------------------------------------------------- */

static const struct hca_backend_ops *backend_ops(enum hca_backend_kind kind)
{
	switch (kind) {
	case HCA_BACKEND_MODEL:
		return &hca_model_ops;
	case HCA_BACKEND_VERBS:
		return &hca_verbs_ops;
	default:
		return NULL;
	}
}

int hca_world_new(enum hca_backend_kind kind, const struct hca_cost *cost,
		  const struct hca_verbs_opts *vopts, evlog *ev, hca_world **out)
{
	const struct hca_backend_ops *ops = backend_ops(kind);
	hca_world *w;
	int rc;

	if (!out || !ops || (cost && cost->link_bytes_per_s == 0))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->kind = kind;
	w->ops = ops;
	w->ev = ev;
	if (cost)
		w->cost = *cost;
	else
		hca_cost_defaults(&w->cost);
	vclock_init(&w->clk);
	rc = ops->world_init(w, vopts);
	if (rc < 0) {
		free(w);
		return rc;
	}
	HLOG(w, "sim", "hca_world", "backend=%s", ops->name);
	*out = w;
	return 0;
}

static void ep_free(hca_ep *ep);
static void mr_unlink(hca_mr *mr);

void hca_world_free(hca_world *w)
{
	if (!w)
		return;
	/* Leftovers of an unclean teardown: release them without logging (the log may be
	 * closed already). */
	while (w->eps) {
		hca_ep *ep = w->eps;

		while (ep->mrs) {
			hca_mr *mr = ep->mrs;

			w->ops->dereg_mr(mr);
			mr_unlink(mr);
			free(mr);
		}
		w->eps = ep->next;
		w->ops->ep_destroy(ep);
		ep_free(ep);
	}
	while (w->listeners) {
		hca_listener *l = w->listeners;

		w->listeners = l->next;
		w->ops->listener_close(l);
		ep_free(l->spare);
		free(l->addr);
		free(l);
	}
	w->ops->world_fini(w);
	free(w);
}

/* ---- endpoints ---------------------------------------------------------------------------- */

static hca_ep *ep_alloc(hca_world *w, const char *side)
{
	hca_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	ep->w = w;
	strcpy(ep->side, side);
	ep->err_ns = HCA_NO_ERROR;
	ep->kill_ns = HCA_NO_ERROR;
	if (ring_init(&ep->arrivals, sizeof(uint64_t), 16) != 0 ||
	    ring_init(&ep->cm, sizeof(struct hca_cm_event), 8) != 0) {
		ep_free(ep);
		return NULL;
	}
	return ep;
}

static void ep_free(hca_ep *ep)
{
	if (!ep)
		return;
	ring_fini(&ep->sends);
	ring_fini(&ep->arrivals);
	ring_fini(&ep->cq[HCA_CQ_SEND]);
	ring_fini(&ep->cq[HCA_CQ_RECV]);
	ring_fini(&ep->cm);
	free(ep);
}

static void ep_link(hca_ep *ep)
{
	hca_ep **pp = &ep->w->eps;

	while (*pp)
		pp = &(*pp)->next;
	*pp = ep;
	ep->next = NULL;
	ep->w->n_eps++;
}

static void ep_unlink(hca_ep *ep)
{
	for (hca_ep **pp = &ep->w->eps; *pp; pp = &(*pp)->next) {
		if (*pp == ep) {
			*pp = ep->next;
			ep->next = NULL;
			assert(ep->w->n_eps > 0);
			ep->w->n_eps--;
			return;
		}
	}
	assert(!"endpoint not in its world");
}

int hca_ep_create(hca_world *w, const char *side, const char *addr, hca_ep **out)
{
	struct fault_fire f;
	hca_ep *ep;
	int rc;

	if (!w || !is_side(side) || !is_addr(addr) || !out)
		return -EINVAL;
	if (fault_at1(w, side, FAULT_SITE_EP_CREATE, &f) && (rc = fault_setup_call(w, &f)) < 0) {
		HLOG(w, side, "ep_create", "addr=%s rc=%d", addr, rc);
		return rc;
	}
	ep = ep_alloc(w, side);
	if (!ep)
		return -ENOMEM;
	ep_link(ep);
	rc = w->ops->ep_create(ep, addr);
	HLOG(w, side, "ep_create", "addr=%s rc=%d", addr, rc);
	if (rc < 0) {
		ep_unlink(ep);
		ep_free(ep);
		return rc;
	}
	*out = ep;
	return 0;
}

static bool caps_ok(const struct hca_qp_caps *c)
{
	return c && c->max_send_wr >= 1 && c->max_send_wr <= HCA_WR_MAX && c->max_recv_wr >= 1 &&
	       c->max_recv_wr <= HCA_WR_MAX;
}

int hca_ep_setup(hca_ep *ep, const struct hca_qp_caps *caps)
{
	struct fault_fire f;
	int rc;

	if (!ep || ep->setup || !caps_ok(caps))
		return -EINVAL;
	/* creating PD, CQs and QP (ep_setup), then the QP's RESET -> INIT (modify_qp) */
	if ((fault_at1(ep->w, ep->side, FAULT_SITE_EP_SETUP, &f) && (rc = fault_setup_call(ep->w, &f)) < 0) ||
	    (fault_at1(ep->w, ep->side, FAULT_SITE_MODIFY_QP, &f) && (rc = fault_setup_call(ep->w, &f)) < 0)) {
		HLOG(ep->w, ep->side, "ep_setup", "send_wr=%u recv_wr=%u rc=%d", caps->max_send_wr,
		     caps->max_recv_wr, rc);
		return rc;
	}
	if (ring_init(&ep->sends, sizeof(struct posted_send), caps->max_send_wr) != 0 ||
	    ring_init(&ep->cq[HCA_CQ_SEND], sizeof(struct hca_wc), caps->max_send_wr) != 0 ||
	    ring_init(&ep->cq[HCA_CQ_RECV], sizeof(struct hca_wc), caps->max_recv_wr) != 0) {
		rc = -ENOMEM;
		goto out;
	}
	rc = ep->w->ops->ep_setup(ep, caps);
out:
	HLOG(ep->w, ep->side, "ep_setup", "send_wr=%u recv_wr=%u rc=%d", caps->max_send_wr,
	     caps->max_recv_wr, rc);
	if (rc < 0) {
		ring_fini(&ep->sends);
		ring_fini(&ep->cq[HCA_CQ_SEND]);
		ring_fini(&ep->cq[HCA_CQ_RECV]);
		return rc;
	}
	ep->caps = *caps;
	ep->setup = true;
	return 0;
}

/* MRs whose deregistration failed by an injected fault are still registered: release them
 * now (the protocol gave up on them). Any other leftover MR is a protocol bug (asserted). */
static void release_failed_mrs(hca_ep *ep)
{
	hca_mr *next;

	for (hca_mr *mr = ep->mrs; mr; mr = next) {
		next = mr->next;
		if (!mr->dereg_failed)
			continue;
		HLOG(ep->w, ep->side, "dereg_mr", "len=%llu rc=%d leaked=1", (unsigned long long)mr->len,
		     ep->w->ops->dereg_mr(mr));
		mr_unlink(mr);
		free(mr);
	}
}

void hca_ep_destroy(hca_ep *ep)
{
	hca_world *w;

	if (!ep)
		return;
	w = ep->w;
	release_failed_mrs(ep);
	assert(ep->n_mrs == 0 && "deregister every MR before hca_ep_destroy");
	HLOG(w, ep->side, "ep_destroy", "send_outstanding=%u", ep->send_outstanding);
	ep_unlink(ep);
	w->ops->ep_destroy(ep);
	ep_free(ep);
	world_drain(w);               /* the peer's DISCONNECTED is logged now */
}

/* ---- connection management ---------------------------------------------------------------- */

int hca_listen(hca_world *w, const char *side, const char *addr, hca_listener **out)
{
	hca_listener *l;
	int rc;

	if (!w || !is_side(side) || !is_addr(addr) || !out)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->w = w;
	strcpy(l->side, side);
	l->addr = strdup(addr);
	rc = l->addr ? w->ops->listen(l, addr) : -ENOMEM;
	HLOG(w, side, "listen", "addr=%s rc=%d", addr, rc);
	if (rc < 0) {
		free(l->addr);
		free(l);
		return rc;
	}
	l->next = w->listeners;
	w->listeners = l;
	w->n_listeners++;
	*out = l;
	return 0;
}

int hca_listener_poll(hca_listener *l, hca_ep **ep, struct hca_cm_event *req)
{
	int rc;

	if (!l || !ep || !req)
		return -EINVAL;
	if (!l->spare) {
		l->spare = ep_alloc(l->w, l->side);
		if (!l->spare)
			return -ENOMEM;
	}
	rc = l->w->ops->listener_poll(l, l->spare, req);
	if (rc <= 0)
		return rc;
	*ep = l->spare;
	l->spare = NULL;
	ep_link(*ep);
	HLOG(l->w, l->side, "connect_request", "pdata_len=%u", req->pdata_len);
	return 1;
}

struct listener_wait {
	hca_listener *l;
	hca_ep **ep;
	struct hca_cm_event *req;
};

static int listener_check(void *arg)
{
	struct listener_wait *lw = arg;

	return hca_listener_poll(lw->l, lw->ep, lw->req);
}

int hca_listener_wait(hca_listener *l, uint64_t timeout_ns, hca_ep **ep,
		      struct hca_cm_event *req)
{
	struct listener_wait lw = { .l = l, .ep = ep, .req = req };

	if (!l || !ep || !req)
		return -EINVAL;
	return world_wait(l->w, timeout_ns, listener_check, &lw);
}

void hca_listener_close(hca_listener *l)
{
	hca_world *w;

	if (!l)
		return;
	w = l->w;
	HLOG(w, l->side, "listener_close", "addr=%s", l->addr);
	for (hca_listener **pp = &w->listeners; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	assert(w->n_listeners > 0);
	w->n_listeners--;
	w->ops->listener_close(l);
	ep_free(l->spare);
	free(l->addr);
	free(l);
	world_drain(w);
}

static bool conn_params_ok(const struct hca_conn_params *p, size_t pdata_max)
{
	return p && p->private_data_len <= pdata_max && (p->private_data || !p->private_data_len);
}

/* Consume CM events until one ends the connect: 1 ESTABLISHED, <0 failure, 0 none yet. */
static int connect_event_rc(const struct hca_cm_event *ev)
{
	switch (ev->type) {
	case HCA_CM_ESTABLISHED:
		return 1;
	case HCA_CM_REJECTED:
		return -ECONNREFUSED;
	case HCA_CM_UNREACHABLE:
	case HCA_CM_ADDR_ERROR:
	case HCA_CM_ROUTE_ERROR:
		return -EHOSTUNREACH;
	case HCA_CM_CONNECT_ERROR:
		return -ECONNABORTED;
	case HCA_CM_DISCONNECTED:
		return -ECONNRESET;
	case HCA_CM_DEVICE_REMOVAL:
		return -ENODEV;
	default:
		return 0;               /* not about this connect: dropped */
	}
}

struct connect_wait {
	hca_ep *ep;
	struct hca_cm_event *reply;
};

static int connect_check(void *arg)
{
	struct connect_wait *cw = arg;
	struct ring *q = &cw->ep->cm;

	while (q->len > 0) {
		struct hca_cm_event ev;
		int rc;

		ring_pop(q, &ev);
		rc = connect_event_rc(&ev);
		if (rc > 0 && cw->reply)
			*cw->reply = ev;
		if (rc != 0)
			return rc;
	}
	return 0;
}

int hca_connect(hca_ep *ep, const struct hca_conn_params *p, uint64_t timeout_ns,
		struct hca_cm_event *reply)
{
	struct connect_wait cw = { .ep = ep, .reply = reply };
	int rc;

	if (!ep || !conn_params_ok(p, HCA_REQ_PDATA_MAX))
		return -EINVAL;
	HLOG(ep->w, ep->side, "connect", "pdata_len=%u retry=%u rnr_retry=%u",
	     p->private_data_len, p->retry_count, p->rnr_retry_count);
	/* rdma_connect, whose QP moves RTR -> RTS (modify_qp) */
	rc = fault_conn_call(ep, FAULT_SITE_CONNECT);
	if (rc == 0)
		rc = ep->w->ops->connect(ep, p);
	if (rc == 0) {
		rc = world_wait(ep->w, timeout_ns, connect_check, &cw);
		rc = rc == 0 ? -ETIMEDOUT : rc;
		rc = rc > 0 ? 0 : rc;
	}
	HLOG(ep->w, ep->side, "connect_done", "rc=%d", rc);
	return rc;
}

int hca_accept(hca_ep *ep, const struct hca_conn_params *p)
{
	int rc;

	if (!ep || !conn_params_ok(p, HCA_PDATA_MAX))
		return -EINVAL;
	rc = fault_conn_call(ep, FAULT_SITE_ACCEPT);
	if (rc == 0)
		rc = ep->w->ops->accept(ep, p);
	HLOG(ep->w, ep->side, "accept", "pdata_len=%u rnr_retry=%u rc=%d", p->private_data_len,
	     p->rnr_retry_count, rc);
	world_drain(ep->w);
	return rc;
}

int hca_reject(hca_ep *ep)
{
	int rc;

	if (!ep)
		return -EINVAL;
	rc = ep->w->ops->reject(ep);
	HLOG(ep->w, ep->side, "reject", "rc=%d", rc);
	world_drain(ep->w);
	return rc;
}

int hca_ep_poll_event(hca_ep *ep, struct hca_cm_event *ev)
{
	if (!ep || !ev)
		return -EINVAL;
	int rc = world_drain(ep->w);
	if (ep->cm.len == 0)
		return rc < 0 ? rc : 0;   /* queued events first; then a broken CM channel */
	ring_pop(&ep->cm, ev);
	return 1;
}

int hca_disconnect(hca_ep *ep)
{
	int rc;

	if (!ep)
		return -EINVAL;
	rc = ep->w->ops->disconnect(ep);
	if (rc == 0 && ep->setup)       /* rdma_disconnect moves its own QP to ERR at once */
		ep->err_ns = min_u64(ep->err_ns, now_ns(ep->w));
	HLOG(ep->w, ep->side, "disconnect", "rc=%d", rc);
	world_drain(ep->w);
	return rc;
}

/* ---- memory registration ------------------------------------------------------------------ */

static void mr_unlink(hca_mr *mr)
{
	hca_ep *ep = mr->ep;

	if (mr->prev)
		mr->prev->next = mr->next;
	else
		ep->mrs = mr->next;
	if (mr->next)
		mr->next->prev = mr->prev;
	assert(ep->n_mrs > 0 && ep->w->n_mrs > 0);
	ep->n_mrs--;
	ep->w->n_mrs--;
}

static uint64_t reg_cost_ns(const struct hca_cost *c, uint64_t addr, uint64_t len)
{
	uint64_t pages = (addr + len - 1) / HCA_PAGE_BYTES - addr / HCA_PAGE_BYTES + 1;
	uint64_t per_page_ns = pages > UINT64_MAX / (c->reg_per_page_ns ? c->reg_per_page_ns : 1)
				       ? UINT64_MAX
				       : pages * c->reg_per_page_ns;

	return sat_add(c->reg_fixed_ns, per_page_ns);
}

int hca_reg_mr(hca_ep *ep, uint64_t addr, uint64_t len, int access, hca_mr **out)
{
	const int known = HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ;
	char wbuf[HCA_LOG_FIELD_MAX], lbuf[16], rbuf[16];
	struct fault_fire f;
	hca_mr *mr;
	int rc;

	if (!ep || !out || len == 0 || addr > UINT64_MAX - len || (access & ~known))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	*mr = (struct hca_mr){ .ep = ep, .addr = addr, .len = len, .access = access };
	rc = 0;
	if (fault_at1(ep->w, ep->side, FAULT_SITE_REG_MR, &f))
		rc = fault_before(ep, &f);
	if (rc == 0)
		rc = ep->w->ops->reg_mr(mr, access);
	if (rc < 0) {
		HLOG(ep->w, ep->side, "reg_mr", "%s len=%llu access=0x%x rc=%d",
		     where_str(ep, addr, len, wbuf, sizeof(wbuf)), (unsigned long long)len, access, rc);
		free(mr);
		return rc;
	}
	mr->next = ep->mrs;
	if (ep->mrs)
		ep->mrs->prev = mr;
	ep->mrs = mr;
	ep->n_mrs++;
	ep->w->n_mrs++;
	HLOG(ep->w, ep->side, "reg_mr", "%s len=%llu access=0x%x lkey=%s rkey=%s",
	     where_str(ep, addr, len, wbuf, sizeof(wbuf)), (unsigned long long)len, access,
	     key_str(ep->w, mr->lkey, lbuf, sizeof(lbuf)), key_str(ep->w, mr->rkey, rbuf, sizeof(rbuf)));
	world_pass_time(ep->w, reg_cost_ns(&ep->w->cost, addr, len));
	*out = mr;
	return 0;
}

int hca_dereg_mr(hca_mr *mr)
{
	char wbuf[HCA_LOG_FIELD_MAX], rbuf[16];
	struct fault_fire f;
	hca_ep *ep;
	int rc = 0;

	if (!mr)
		return -EINVAL;
	ep = mr->ep;
	if (fault_at1(ep->w, ep->side, FAULT_SITE_DEREG_MR, &f))
		rc = fault_before(ep, &f);
	mr->dereg_failed = rc < 0;    /* still registered: hca_ep_destroy releases it */
	if (rc == 0)
		rc = ep->w->ops->dereg_mr(mr);
	HLOG(ep->w, ep->side, "dereg_mr", "%s len=%llu rkey=%s rc=%d",
	     where_str(ep, mr->addr, mr->len, wbuf, sizeof(wbuf)), (unsigned long long)mr->len,
	     key_str(ep->w, mr->rkey, rbuf, sizeof(rbuf)), rc);
	if (rc < 0)
		return rc;
	mr_unlink(mr);
	free(mr);
	world_pass_time(ep->w, ep->w->cost.dereg_fixed_ns);
	return 0;
}

/* ---- data path ---------------------------------------------------------------------------- */

/* Occupy the outgoing link for len bytes: the WR's virtual completion (and delivery) time.
 * A WR posted on a QP known to be in error never reaches the wire: it completes now. */
static uint64_t ep_charge_link(hca_ep *ep, uint32_t len)
{
	const struct hca_cost *c = &ep->w->cost;
	uint64_t now = now_ns(ep->w);
	uint64_t start_ns, wire_ns;

	if (ep->err_ns != HCA_NO_ERROR && ep->err_ns <= now)
		return now;
	start_ns = max_u64(now, ep->link_free_ns);
	/* len < 2^32, so len * 1e9 < 2^62: no overflow */
	wire_ns = sat_add(c->wr_overhead_ns, (uint64_t)len * VCLOCK_NS_PER_S / c->link_bytes_per_s);
	ep->link_free_ns = sat_add(start_ns, wire_ns);
	return sat_add(ep->link_free_ns, c->msg_latency_ns);
}

static void log_post_send(hca_ep *ep, const struct hca_send_wr *wr)
{
	char kbuf[16];

	if (wr->opcode == HCA_WR_RDMA_WRITE)
		HLOG(ep->w, ep->side, "post_send", "op=write wr_id=0x%llx len=%u rkey=%s",
		     (unsigned long long)wr->wr_id, wr->length,
		     key_str(ep->w, wr->rkey, kbuf, sizeof(kbuf)));
	else
		HLOG(ep->w, ep->side, "post_send", "op=send wr_id=0x%llx len=%u",
		     (unsigned long long)wr->wr_id, wr->length);
}

/* Give one send WR to the backend; it completes (and arrives) extra_ns later than the cost
 * model says. */
static int post_send_one(hca_ep *ep, const struct hca_send_wr *wr, uint64_t extra_ns)
{
	hca_ep *peer = NULL;
	uint64_t link_free_ns;
	struct posted_send ps;
	int rc;

	if (ep->send_outstanding >= ep->caps.max_send_wr)
		return -ENOMEM;
	if (wr->opcode == HCA_WR_SEND && ep->err_ns == HCA_NO_ERROR)
		peer = ep->w->ops->peer(ep);
	if (peer && ring_reserve(&peer->arrivals, 1) != 0)
		return -ENOMEM;
	link_free_ns = ep->link_free_ns;
	ps = (struct posted_send){ .wr_id = wr->wr_id, .len = wr->length,
				   .post_ns = now_ns(ep->w),
				   .done_ns = sat_add(ep_charge_link(ep, wr->length), extra_ns),
				   .opcode = wr->opcode == HCA_WR_SEND ? HCA_WC_OP_SEND
								       : HCA_WC_OP_RDMA_WRITE };
	ring_push(&ep->sends, &ps);   /* sends.len <= send_outstanding < max_send_wr = cap */
	if (peer)
		ring_push(&peer->arrivals, &ps.done_ns);
	rc = ep->w->ops->post_send(ep, wr);
	if (rc < 0) {
		ep->link_free_ns = link_free_ns;
		ring_drop_back(&ep->sends);
		if (peer)
			ring_drop_back(&peer->arrivals);
		HLOG(ep->w, ep->side, "post_send", "wr_id=0x%llx rc=%d",
		     (unsigned long long)wr->wr_id, rc);
		return rc;
	}
	ep->send_outstanding++;
	log_post_send(ep, wr);
	world_drain(ep->w);
	return 0;
}

/* A send WR the front end completes itself with `status`: SUCCESS (drop: it occupies the
 * link, nothing arrives) or an error (it never reaches the wire; the QP goes to ERR). */
static int post_send_fake(hca_ep *ep, const struct hca_send_wr *wr, int status)
{
	struct posted_send ps = { .wr_id = wr->wr_id, .len = wr->length, .fake = true, .status = status,
				  .post_ns = now_ns(ep->w),
				  .opcode = wr->opcode == HCA_WR_SEND ? HCA_WC_OP_SEND : HCA_WC_OP_RDMA_WRITE };

	if (status == HCA_WC_SUCCESS && ep->err_ns != HCA_NO_ERROR)
		ps.status = HCA_WC_WR_FLUSH_ERR;          /* as the QP in error would */
	ps.done_ns = ps.status == HCA_WC_SUCCESS ? ep_charge_link(ep, wr->length) : now_ns(ep->w);
	ring_push(&ep->sends, &ps);   /* the caller checked send_outstanding < max_send_wr */
	ep->send_outstanding++;
	log_post_send(ep, wr);
	if (status != HCA_WC_SUCCESS)
		fault_kill_qp(ep, status);
	world_drain(ep->w);
	return 0;
}

static int post_send_fault(hca_ep *ep, const struct hca_send_wr *wr, const struct fault_fire *f,
			   uint8_t *hdr)
{
	int rc;

	switch (f->action) {
	case FAULT_ACT_STATUS:
		return post_send_fake(ep, wr, f->arg);
	case FAULT_ACT_DROP:
		return post_send_fake(ep, wr, HCA_WC_SUCCESS);
	case FAULT_ACT_DELAY:
		return post_send_one(ep, wr, f->delay_ns);
	case FAULT_ACT_DUPLICATE:
		rc = post_send_one(ep, wr, 0);
		if (rc == 0 && post_send_one(ep, wr, 0) != 0)
			HLOG(ep->w, ep->side, "fault_noop", "action=duplicate reason=send_queue_full");
		return rc;
	case FAULT_ACT_CORRUPT:
		assert(hdr && "corrupt applies to control messages only (msg.* sites)");
		if (!corrupt_message(hdr, wr->length, f->arg))
			HLOG(ep->w, ep->side, "fault_noop", "action=corrupt reason=no_payload");
		return post_send_one(ep, wr, 0);
	default:
		rc = fault_before(ep, f);
		if (rc < 0) {
			HLOG(ep->w, ep->side, "post_send", "wr_id=0x%llx rc=%d", (unsigned long long)wr->wr_id, rc);
			return rc;
		}
		return post_send_one(ep, wr, 0);
	}
}

int hca_post_send(hca_ep *ep, const struct hca_send_wr *wr)
{
	enum fault_site sites[3];
	struct fault_fire f;
	uint8_t *hdr;
	size_t n;

	if (!ep || !wr || !ep->setup || !wr->signaled ||
	    (wr->opcode != HCA_WR_SEND && wr->opcode != HCA_WR_RDMA_WRITE))
		return -EINVAL;
	if (ep->send_outstanding >= ep->caps.max_send_wr)
		return -ENOMEM;
	n = send_sites(ep, wr, sites, &hdr);
	if (fault_at(ep->w, ep->side, sites, n, &f))
		return post_send_fault(ep, wr, &f, hdr);
	return post_send_one(ep, wr, 0);
}

int hca_post_recv(hca_ep *ep, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct fault_fire f;
	int rc = 0;

	if (!ep || !ep->setup)
		return -EINVAL;
	if (ep->recv_outstanding >= ep->caps.max_recv_wr)
		return -ENOMEM;
	if (fault_at1(ep->w, ep->side, FAULT_SITE_POST_RECV, &f))
		rc = fault_before(ep, &f);
	if (rc == 0)
		rc = ep->w->ops->post_recv(ep, wr_id, addr, len, lkey);
	HLOG(ep->w, ep->side, "post_recv", "wr_id=0x%llx len=%u rc=%d", (unsigned long long)wr_id,
	     len, rc);
	if (rc < 0)
		return rc;
	ep->recv_outstanding++;
	ep->recv_raw++;
	world_drain(ep->w);
	return 0;
}

/* Pop the head of (ep, cq) if it is visible now: 1 and *wc, else 0. */
static int ep_pop_visible(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc)
{
	struct ring *q = &ep->cq[cq];

	if (q->len == 0 || ((const struct hca_wc *)ring_at(q, 0))->t_ns > now_ns(ep->w))
		return 0;
	ring_pop(q, wc);
	if (cq == HCA_CQ_SEND) {
		assert(ep->send_outstanding > 0);
		ep->send_outstanding--;
	} else {
		assert(ep->recv_outstanding > 0);
		ep->recv_outstanding--;
	}
	HLOG(ep->w, ep->side, "wc", "wr_id=0x%llx op=%s status=%s len=%u",
	     (unsigned long long)wc->wr_id, wc_op_str(wc->opcode), hca_wc_status_name(wc->status),
	     wc->byte_len);
	return 1;
}

int hca_poll(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc)
{
	int rc;

	if (!ep || !wc || !ep->setup || (cq != HCA_CQ_SEND && cq != HCA_CQ_RECV))
		return -EINVAL;
	rc = world_drain(ep->w);
	if (rc < 0)
		return rc;
	return ep_pop_visible(ep, cq, wc);
}

struct cq_wait {
	hca_ep *ep;
	enum hca_cq_kind cq;
	struct hca_wc *wc;
	uint64_t deadline_ns;         /* the wait's bound: nothing is caught up past it */
};

static int cq_check(void *arg)
{
	struct cq_wait *cw = arg;
	const struct ring *q = &cw->ep->cm;

	if (ep_pop_visible(cw->ep, cw->cq, cw->wc))
		return 1;
	for (size_t i = 0; i < q->len; i++) {
		const struct hca_cm_event *ev = ring_at(q, i);

		if (ev->type == HCA_CM_DISCONNECTED) {
			/* A completion already generated (on rxe: a CQE that arrived before the peer's
			 * DISCONNECTED) is reported first, at its own time: the REM_ACCESS_ERR of a
			 * write says more than the disconnect that followed it. */
			const struct ring *cq = &cw->ep->cq[cw->cq];
			if (cq->len > 0 && ((const struct hca_wc *)ring_at(cq, 0))->t_ns <= cw->deadline_ns) {
				vclock_catch_up(&cw->ep->w->clk, ((const struct hca_wc *)ring_at(cq, 0))->t_ns);
				if (ep_pop_visible(cw->ep, cw->cq, cw->wc))
					return 1;
			}
			return -ECONNRESET;
		}
		if (ev->type == HCA_CM_DEVICE_REMOVAL)
			return -ENODEV;
	}
	return 0;
}

int hca_wait(hca_ep *ep, enum hca_cq_kind cq, uint64_t timeout_ns, struct hca_wc *wc)
{
	struct cq_wait cw = { .ep = ep, .cq = cq, .wc = wc };
	int rc;

	if (!ep || !wc || !ep->setup || (cq != HCA_CQ_SEND && cq != HCA_CQ_RECV))
		return -EINVAL;
	cw.deadline_ns = sat_add(now_ns(ep->w), timeout_ns);
	rc = world_wait(ep->w, timeout_ns, cq_check, &cw);
	if (rc == 0)
		HLOG(ep->w, ep->side, "wait_timeout", "cq=%s ns=%llu",
		     cq == HCA_CQ_SEND ? "send" : "recv", (unsigned long long)timeout_ns);
	else if (rc < 0)
		HLOG(ep->w, ep->side, "wait_error", "cq=%s rc=%d", cq == HCA_CQ_SEND ? "send" : "recv",
		     rc);
	return rc;
}

int hca_qp_to_error(hca_ep *ep)
{
	struct fault_fire f;
	int rc;

	if (!ep || !ep->setup)
		return -EINVAL;
	if (fault_at1(ep->w, ep->side, FAULT_SITE_MODIFY_QP, &f) && (rc = fault_setup_call(ep->w, &f)) < 0) {
		HLOG(ep->w, ep->side, "qp_to_error", "rc=%d", rc);
		return rc;
	}
	rc = qp_to_error_now(ep);
	world_drain(ep->w);
	return rc;
}

void hca_world_set_memlock(hca_world *w, const char *side, uint64_t bytes)
{
	assert(w && side && (!strcmp(side, "src") || !strcmp(side, "dst")));
	if (!strcmp(side, "dst"))
		w->memlock_dst = bytes;
	else
		w->memlock_src = bytes;
	HLOG(w, side, "memlock", "bytes=%llu", (unsigned long long)bytes);
}

uint64_t hca_world_memlock(const hca_world *w, const char *side)
{
	assert(w && side && (!strcmp(side, "src") || !strcmp(side, "dst")));
	return !strcmp(side, "dst") ? w->memlock_dst : w->memlock_src;
}
