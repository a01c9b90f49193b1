/* SPDX-License-Identifier: MIT */
/* hca - the seam's front end: its objects and the public API (see hca.h for the contract,
 * hca_backend.h for the split between front end and backend).
 *
 * The front end owns every object the protocol sees and all of virtual time; a backend only
 * performs operations and reports raw completions and CM events. The front end is split by
 * job, each part's contract in its header: hca_internal.h (the objects' structs), ring.h (the
 * queues), hca_cq.h (the timed completion queues and their ordering rules), hca_fault.h (the
 * fault plan's adapter), hca_wait.h (the one wait loop, where virtual time advances). This
 * file keeps the objects' life cycle and the calls that are not about time or faults. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/mem.h"
#include "transport/hca_cq.h"
#include "transport/hca_fault.h"
#include "transport/hca_internal.h"
#include "transport/hca_wait.h"

#define HCA_WR_MAX 65536u            /* per queue; verbs devices allow far less than this */
#define HCA_REQ_PDATA_MAX 56         /* rdma_cm REQ private data */
#define HCA_PAGE_BYTES 4096ull

/* ---- small helpers ------------------------------------------------------------------------ */

static bool is_side(enum vocab_side s)
{
	return (unsigned)s < VOCAB_SIDE_COUNT;
}

static bool is_addr(const char *s)
{
	return s && *s && !strpbrk(s, " \t\r\n");
}

/* Keys are deterministic on the model only. */
const char *hca_key_str(const hca_world *w, uint32_t key, char *buf, size_t n)
{
	char digits[8];
	size_t k = 0;

	if (w->kind != HCA_BACKEND_MODEL)
		return "*";
	if (n < sizeof "0xffffffff") {
		snprintf(buf, n, "0x%x", key);
		return buf;
	}
	/* "0x%x" by hand: formatted for every WRITE's post_send line (the log counts them even
	 * when it writes no file), where snprintf was 2 % of a 256 MiB swarm run */
	do {
		digits[k++] = "0123456789abcdef"[key & 0xf];
		key >>= 4;
	} while (key);
	buf[0] = '0';
	buf[1] = 'x';
	for (size_t i = 0; i < k; i++)
		buf[2 + i] = digits[k - 1 - i];
	buf[2 + k] = '\0';
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

/* A front-end queue: grows on demand up to HCA_RING_MAX_ELEMS. */
static int queue_init(struct ring *r, size_t esz, size_t cap)
{
	return ring_init(r, esz, cap, HCA_RING_MAX_ELEMS);
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
	c->odp_fault_ns = 50000;
	c->dst_reg_per_page_ns = c->reg_per_page_ns;
	c->dst_zero_fill_per_page_ns = 0;
	c->wait_running_ns = 0;
	c->wait_stopped_ns = 0;
	c->setup_ns = 0;
	c->downtime_floor_ns = 0;
}

const struct hca_cost *hca_world_cost(const hca_world *w) { return &w->cost; }

/* ---- accessors for backends --------------------------------------------------------------- */

void *hca_world_priv(hca_world *w) { return w->priv; }
void hca_world_set_priv(hca_world *w, void *p) { w->priv = p; }
void *hca_listener_priv(hca_listener *l) { return l->priv; }
void hca_listener_set_priv(hca_listener *l, void *p) { l->priv = p; }
hca_world *hca_listener_world(hca_listener *l) { return l->w; }
void *hca_ep_priv(hca_ep *ep) { return ep->priv; }
void hca_ep_set_priv(hca_ep *ep, void *p) { ep->priv = p; }
hca_world *hca_ep_world(hca_ep *ep) { return ep->w; }
void hca_world_backend_changed(hca_world *w) { w->backend_quiet = false; }
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
struct hca_write_window hca_world_write_window(const hca_world *w) { return w->wall_writes; }
evlog *hca_world_evlog(hca_world *w) { return w->ev; }
enum hca_backend_kind hca_world_kind(const hca_world *w) { return w->kind; }
const char *hca_world_backend_name(const hca_world *w) { return w->ops->name; }
enum vocab_side hca_ep_side(const hca_ep *ep) { return ep->side; }
uint32_t hca_mr_lkey(const hca_mr *mr) { return mr->lkey; }
uint32_t hca_mr_rkey(const hca_mr *mr) { return mr->rkey; }
uint64_t hca_mr_addr(const hca_mr *mr) { return mr->addr; }
uint64_t hca_mr_len(const hca_mr *mr) { return mr->len; }
uint32_t hca_ep_send_outstanding(const hca_ep *ep) { return ep->send_outstanding; }

uint64_t hca_world_live_objects(const hca_world *w)
{
	return w->n_eps + w->n_listeners + w->n_mrs;
}

uint64_t hca_world_stray_writes(const hca_world *w)
{
	return w->stray_writes;
}

void hca_world_note_stray_write(hca_world *w)
{
	w->stray_writes++;
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
/* The real transition to ERR (backend), with the front end's error time. */
int hca_ep_to_error_now(hca_ep *ep)
{
	int rc;

	ep->err_ns = hca_min_u64(ep->err_ns, hca_now_ns(ep->w));
	rc = ep->w->ops->qp_to_error(ep);
	SLOG(ep->w, ep->side, "qp_to_error", "rc=%d", rc);
	return rc;
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

static hca_ep *ep_alloc(hca_world *w, enum vocab_side side)
{
	hca_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	ep->w = w;
	ep->side = side;
	ep->err_ns = HCA_NO_ERROR;
	ep->kill_ns = HCA_NO_ERROR;
	ep->sq_doomed = false;
	if (queue_init(&ep->arrivals, sizeof(uint64_t), 16) != 0 ||
	    queue_init(&ep->cm, sizeof(struct hca_cm_event), 8) != 0) {
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
	ep->w->backend_quiet = false;
}

static void ep_unlink(hca_ep *ep)
{
	for (hca_ep **pp = &ep->w->eps; *pp; pp = &(*pp)->next) {
		if (*pp == ep) {
			*pp = ep->next;
			ep->next = NULL;
			ep->w->backend_quiet = false;
			assert(ep->w->n_eps > 0);
			ep->w->n_eps--;
			return;
		}
	}
	assert(!"endpoint not in its world");
}

int hca_ep_create(hca_world *w, enum vocab_side side, const char *addr, hca_ep **out)
{
	struct hca_fault_answer f;
	hca_ep *ep;
	int rc;

	if (!w || !is_side(side) || !is_addr(addr) || !out)
		return -EINVAL;
	if (hca_fault_at1(w, side, FAULT_SITE_EP_CREATE, &f) && (rc = hca_fault_setup_call(w, &f)) < 0) {
		SLOG(w, side, "ep_create", "addr=%s rc=%d", addr, rc);
		return rc;
	}
	ep = ep_alloc(w, side);
	if (!ep)
		return -ENOMEM;
	ep_link(ep);
	rc = w->ops->ep_create(ep, addr);
	SLOG(w, side, "ep_create", "addr=%s rc=%d", addr, rc);
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
	struct hca_fault_answer f;
	struct hca_qp_caps granted;
	int rc;

	if (!ep || ep->setup || !caps_ok(caps))
		return -EINVAL;
	/* creating PD, CQs and QP (ep_setup), then the QP's RESET -> INIT (modify_qp) */
	if ((hca_fault_at1(ep->w, ep->side, FAULT_SITE_EP_SETUP, &f) && (rc = hca_fault_setup_call(ep->w, &f)) < 0) ||
	    (hca_fault_at1(ep->w, ep->side, FAULT_SITE_MODIFY_QP, &f) && (rc = hca_fault_setup_call(ep->w, &f)) < 0)) {
		SLOG(ep->w, ep->side, "ep_setup", "send_wr=%u recv_wr=%u rc=%d", caps->max_send_wr,
		     caps->max_recv_wr, rc);
		return rc;
	}
	if (queue_init(&ep->sends, sizeof(struct posted_send), caps->max_send_wr) != 0 ||
	    queue_init(&ep->cq[HCA_CQ_SEND], sizeof(struct hca_wc), caps->max_send_wr) != 0 ||
	    queue_init(&ep->cq[HCA_CQ_RECV], sizeof(struct hca_wc), caps->max_recv_wr) != 0) {
		rc = -ENOMEM;
		goto out;
	}
	granted = *caps;
	rc = ep->w->ops->ep_setup(ep, &granted);
	assert(rc < 0 || (granted.max_send_wr >= caps->max_send_wr && granted.max_recv_wr >= caps->max_recv_wr));
	/* the front end's queues hold what the granted depths allow (completions are not reserved
	 * one by one). Out of memory here leaves the backend's QP to hca_ep_destroy. */
	if (rc == 0 && (ring_reserve(&ep->sends, granted.max_send_wr) != 0 ||
			ring_reserve(&ep->cq[HCA_CQ_SEND], granted.max_send_wr) != 0 ||
			ring_reserve(&ep->cq[HCA_CQ_RECV], granted.max_recv_wr) != 0))
		rc = -ENOMEM;
out:
	SLOG(ep->w, ep->side, "ep_setup", "send_wr=%u recv_wr=%u rc=%d", caps->max_send_wr,
	     caps->max_recv_wr, rc);
	if (rc < 0) {
		ring_fini(&ep->sends);
		ring_fini(&ep->cq[HCA_CQ_SEND]);
		ring_fini(&ep->cq[HCA_CQ_RECV]);
		return rc;
	}
	ep->caps = granted;    /* the queue depths the front end enforces: what the device granted */
	ep->setup = true;
	ep->w->backend_quiet = false;
	return 0;
}

const struct hca_qp_caps *hca_ep_caps(const hca_ep *ep)
{
	return ep && ep->setup ? &ep->caps : NULL;
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
		SLOG(ep->w, ep->side, "dereg_mr", "len=%llu rc=%d leaked=1", (unsigned long long)mr->len,
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
	SLOG(w, ep->side, "ep_destroy", "send_outstanding=%u", ep->send_outstanding);
	ep_unlink(ep);
	w->ops->ep_destroy(ep);
	ep_free(ep);
	hca_cq_drain(w);               /* the peer's DISCONNECTED is logged now */
}

/* ---- connection management ---------------------------------------------------------------- */

int hca_listen(hca_world *w, enum vocab_side side, const char *addr, hca_listener **out)
{
	hca_listener *l;
	int rc;

	if (!w || !is_side(side) || !is_addr(addr) || !out)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->w = w;
	l->side = side;
	l->addr = strdup(addr);
	rc = l->addr ? w->ops->listen(l, addr) : -ENOMEM;
	SLOG(w, side, "listen", "addr=%s rc=%d", addr, rc);
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
	SLOG(l->w, l->side, "connect_request", "pdata_len=%u", req->pdata_len);
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
	return hca_wait_until(l->w, timeout_ns, listener_check, &lw);
}

void hca_listener_close(hca_listener *l)
{
	hca_world *w;

	if (!l)
		return;
	w = l->w;
	SLOG(w, l->side, "listener_close", "addr=%s", l->addr);
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
	hca_cq_drain(w);
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

	while (ring_len(q) > 0) {
		struct hca_cm_event ev;
		int rc;

		ring_pop(q, &ev);
		cw->ep->w->backend_quiet = false;   /* room in the cm queue: a drain may pull more */
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
	SLOG(ep->w, ep->side, "connect", "pdata_len=%u retry=%u rnr_retry=%u",
	     p->private_data_len, p->retry_count, p->rnr_retry_count);
	/* rdma_connect, whose QP moves RTR -> RTS (modify_qp) */
	rc = hca_fault_conn_call(ep, FAULT_SITE_CONNECT);
	if (rc == 0)
		rc = ep->w->ops->connect(ep, p);
	if (rc == 0) {
		rc = hca_wait_until(ep->w, timeout_ns, connect_check, &cw);
		rc = rc == 0 ? -ETIMEDOUT : rc;
		rc = rc > 0 ? 0 : rc;
	}
	SLOG(ep->w, ep->side, "connect_done", "rc=%d", rc);
	return rc;
}

int hca_accept(hca_ep *ep, const struct hca_conn_params *p)
{
	int rc;

	if (!ep || !conn_params_ok(p, HCA_PDATA_MAX))
		return -EINVAL;
	rc = hca_fault_conn_call(ep, FAULT_SITE_ACCEPT);
	if (rc == 0)
		rc = ep->w->ops->accept(ep, p);
	SLOG(ep->w, ep->side, "accept", "pdata_len=%u rnr_retry=%u rc=%d", p->private_data_len,
	     p->rnr_retry_count, rc);
	hca_cq_drain(ep->w);
	return rc;
}

int hca_reject(hca_ep *ep)
{
	int rc;

	if (!ep)
		return -EINVAL;
	rc = ep->w->ops->reject(ep);
	SLOG(ep->w, ep->side, "reject", "rc=%d", rc);
	hca_cq_drain(ep->w);
	return rc;
}

int hca_ep_poll_event(hca_ep *ep, struct hca_cm_event *ev)
{
	if (!ep || !ev)
		return -EINVAL;
	int rc = hca_cq_drain(ep->w);
	if (ring_len(&ep->cm) == 0)
		return rc < 0 ? rc : 0;   /* queued events first; then a broken CM channel */
	ring_pop(&ep->cm, ev);
	ep->w->backend_quiet = false;         /* room in the cm queue: a drain may pull more */
	return 1;
}

int hca_disconnect(hca_ep *ep)
{
	int rc;

	if (!ep)
		return -EINVAL;
	rc = ep->w->ops->disconnect(ep);
	if (rc == 0 && ep->setup)       /* rdma_disconnect moves its own QP to ERR at once */
		ep->err_ns = hca_min_u64(ep->err_ns, hca_now_ns(ep->w));
	SLOG(ep->w, ep->side, "disconnect", "rc=%d", rc);
	hca_cq_drain(ep->w);
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

static uint64_t pages_times(uint64_t pages, uint64_t per_page_ns)
{
	return pages > UINT64_MAX / (per_page_ns ? per_page_ns : 1) ? UINT64_MAX : pages * per_page_ns;
}

static uint64_t pages_cost_ns(const struct hca_cost *c, uint64_t addr, uint64_t len)
{
	uint64_t pages = (addr + len - 1) / HCA_PAGE_BYTES - addr / HCA_PAGE_BYTES + 1;

	return pages_times(pages, c->reg_per_page_ns);
}

/* The destination's guest pages in [addr, addr + len) never written yet (all zero): the
 * ones a pinning registration faults in and zero-fills (docs/model.md, 'Pinning'). Counted
 * only when the rule is on; 0 outside guest RAM (a control buffer). */
static uint64_t zero_pages(const hca_ep *ep, uint64_t addr, uint64_t len)
{
	size_t b;
	uint64_t off, n = 0;

	if (!ep->guest || mem_resolve(ep->guest, addr, len, &b, &off) != 0)
		return 0;
	uint64_t ps = mem_page_size(ep->guest), first = off / ps, last = (off + len - 1) / ps;
	for (uint64_t p = first; p <= last; p++)
		n += mem_pages_zero(ep->guest, b, p, 1);
	return n * (ps / HCA_PAGE_BYTES ? ps / HCA_PAGE_BYTES : 1);
}

/* An ODP registration pins nothing: no page walk (hca_advise_mr does it, if asked). The
 * destination pins at its own per-page cost, plus its zero-fill of never-touched pages. */
static uint64_t reg_cost_ns(const hca_ep *ep, uint64_t addr, uint64_t len, int access)
{
	const struct hca_cost *c = &ep->w->cost;

	if (access & HCA_ACCESS_ON_DEMAND)
		return c->reg_fixed_ns;
	if (ep->side != VOCAB_SIDE_DST)
		return hca_sat_add(c->reg_fixed_ns, pages_cost_ns(c, addr, len));
	uint64_t pages = (addr + len - 1) / HCA_PAGE_BYTES - addr / HCA_PAGE_BYTES + 1;
	uint64_t t = hca_sat_add(c->reg_fixed_ns, pages_times(pages, c->dst_reg_per_page_ns));
	if (c->dst_zero_fill_per_page_ns)
		t = hca_sat_add(t, pages_times(zero_pages(ep, addr, len), c->dst_zero_fill_per_page_ns));
	return t;
}

int hca_reg_mr(hca_ep *ep, uint64_t addr, uint64_t len, int access, hca_mr **out)
{
	const int known = HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ |
			  HCA_ACCESS_ON_DEMAND;
	char wbuf[HCA_LOG_FIELD_MAX], lbuf[16], rbuf[16];
	struct hca_fault_answer f;
	hca_mr *mr;
	int rc;

	if (!ep || !out || len == 0 || addr > UINT64_MAX - len || (access & ~known))
		return -EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	*mr = (struct hca_mr){ .ep = ep, .addr = addr, .len = len, .access = access };
	rc = 0;
	if (hca_fault_at1(ep->w, ep->side, FAULT_SITE_REG_MR, &f))
		rc = hca_fault_before(ep, &f);
	if (rc == 0)
		rc = ep->w->ops->reg_mr(mr, access);
	if (rc < 0) {
		SLOG(ep->w, ep->side, "reg_mr", "%s len=%llu access=0x%x rc=%d",
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
	SLOG(ep->w, ep->side, "reg_mr", "%s len=%llu access=0x%x lkey=%s rkey=%s",
	     where_str(ep, addr, len, wbuf, sizeof(wbuf)), (unsigned long long)len, access,
	     hca_key_str(ep->w, mr->lkey, lbuf, sizeof(lbuf)), hca_key_str(ep->w, mr->rkey, rbuf, sizeof(rbuf)));
	hca_wait_pass_time(ep->w, reg_cost_ns(ep, addr, len, access));
	*out = mr;
	return 0;
}

int hca_dereg_mr(hca_mr *mr)
{
	char wbuf[HCA_LOG_FIELD_MAX], rbuf[16];
	struct hca_fault_answer f;
	hca_ep *ep;
	int rc = 0;

	if (!mr)
		return -EINVAL;
	ep = mr->ep;
	if (hca_fault_at1(ep->w, ep->side, FAULT_SITE_DEREG_MR, &f))
		rc = hca_fault_before(ep, &f);
	mr->dereg_failed = rc < 0;    /* still registered: hca_ep_destroy releases it */
	if (rc == 0)
		rc = ep->w->ops->dereg_mr(mr);
	SLOG(ep->w, ep->side, "dereg_mr", "%s len=%llu rkey=%s rc=%d",
	     where_str(ep, mr->addr, mr->len, wbuf, sizeof(wbuf)), (unsigned long long)mr->len,
	     hca_key_str(ep->w, mr->rkey, rbuf, sizeof(rbuf)), rc);
	if (rc < 0)
		return rc;
	mr_unlink(mr);
	free(mr);
	hca_wait_pass_time(ep->w, ep->w->cost.dereg_fixed_ns);
	return 0;
}

int hca_advise_mr(hca_mr *mr)
{
	char wbuf[HCA_LOG_FIELD_MAX];
	hca_ep *ep;
	int rc;

	if (!mr)
		return -EINVAL;
	ep = mr->ep;
	rc = (mr->access & HCA_ACCESS_ON_DEMAND) ? ep->w->ops->advise_mr(mr) : -EINVAL;
	SLOG(ep->w, ep->side, "advise_mr", "%s len=%llu advice=prefetch_write rc=%d",
	     where_str(ep, mr->addr, mr->len, wbuf, sizeof(wbuf)), (unsigned long long)mr->len, rc);
	if (rc < 0)
		return rc;
	hca_wait_pass_time(ep->w, pages_cost_ns(&ep->w->cost, mr->addr, mr->len));
	return 0;
}

/* ---- data path ---------------------------------------------------------------------------- */

int hca_post_send(hca_ep *ep, const struct hca_send_wr *wr)
{
	if (!ep || !wr || !ep->setup || !wr->signaled ||
	    (wr->opcode != HCA_WR_SEND && wr->opcode != HCA_WR_RDMA_WRITE))
		return -EINVAL;
	if (ep->send_outstanding >= ep->caps.max_send_wr)
		return -ENOMEM;
	return hca_fault_post_send(ep, wr);
}

int hca_post_recv(hca_ep *ep, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct hca_fault_answer f;
	int rc = 0;

	if (!ep || !ep->setup)
		return -EINVAL;
	if (ep->recv_outstanding >= ep->caps.max_recv_wr)
		return -ENOMEM;
	if (hca_fault_at1(ep->w, ep->side, FAULT_SITE_POST_RECV, &f))
		rc = hca_fault_before(ep, &f);
	if (rc == 0)
		rc = ep->w->ops->post_recv(ep, wr_id, addr, len, lkey);
	SLOG(ep->w, ep->side, "post_recv", "wr_id=0x%llx len=%u rc=%d", (unsigned long long)wr_id,
	     len, rc);
	if (rc < 0)
		return rc;
	ep->recv_outstanding++;
	ep->recv_raw++;
	hca_cq_drain(ep->w);
	return 0;
}

int hca_qp_to_error(hca_ep *ep)
{
	struct hca_fault_answer f;
	int rc;

	if (!ep || !ep->setup)
		return -EINVAL;
	if (hca_fault_at1(ep->w, ep->side, FAULT_SITE_MODIFY_QP, &f) && (rc = hca_fault_setup_call(ep->w, &f)) < 0) {
		SLOG(ep->w, ep->side, "qp_to_error", "rc=%d", rc);
		return rc;
	}
	rc = hca_ep_to_error_now(ep);
	hca_cq_drain(ep->w);
	return rc;
}

void hca_world_set_memlock(hca_world *w, enum vocab_side side, uint64_t bytes)
{
	assert(w && is_side(side));
	w->memlock[side] = bytes;
	SLOG(w, side, "memlock", "bytes=%llu", (unsigned long long)bytes);
}

uint64_t hca_world_memlock(const hca_world *w, enum vocab_side side)
{
	assert(w && is_side(side));
	return w->memlock[side];
}
