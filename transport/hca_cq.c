/* SPDX-License-Identifier: MIT */
/* hca_cq - the timed completion queues (see hca_cq.h for the contract), and the public
 * reads of them: hca_poll, hca_wait. */
#include "transport/hca_cq.h"

#include <assert.h>
#include <errno.h>
#include <time.h>

#include "transport/hca_fault.h"
#include "transport/hca_wait.h"

#define HCA_CM_DRAIN_MAX 64          /* CM events pulled from the backend per endpoint per drain */

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

/* Append a stamped completion, keeping t_ns nondecreasing within the queue (RC delivers in
 * order within a queue, so a later completion is never visible before an earlier one). */
static void cq_push(hca_ep *ep, enum hca_cq_kind k, struct hca_wc *wc, uint64_t t_ns)
{
	struct ring *q = &ep->cq[k];

	if (ring_len(q) > 0)
		t_ns = hca_max_u64(t_ns, ((const struct hca_wc *)ring_at(q, ring_len(q) - 1))->t_ns);
	wc->t_ns = t_ns;
	ring_push(q, wc);
}

static void note_send_error(hca_ep *ep, int status, uint64_t t_ns)
{
	ep->err_ns = hca_min_u64(ep->err_ns, t_ns);
	if (hca_status_kills_responder(status)) {
		hca_ep *peer = ep->w->ops->peer(ep);

		if (peer)
			peer->err_ns = hca_min_u64(peer->err_ns, t_ns);
	}
}

/* The next send completion in posting order: a fake entry at the head of the FIFO completes
 * by itself, anything else when the backend reports it. 1 got, 0 none, <0 backend error. */
static int next_send_wc(hca_ep *ep, struct posted_send *ps, struct hca_wc *wc)
{
	int rc;

	if (ring_len(&ep->sends) > 0 && ((const struct posted_send *)ring_at(&ep->sends, 0))->fake) {
		ring_pop(&ep->sends, ps);
		*wc = (struct hca_wc){ .wr_id = ps->wr_id, .status = ps->status };
		return 1;
	}
	rc = ep->w->ops->poll_cq(ep, HCA_CQ_SEND, wc);
	if (rc <= 0)
		return rc;
	assert(ring_len(&ep->sends) > 0 && "send completion for a WR that was never posted");
	ring_pop(&ep->sends, ps);
	assert(!ps->fake && ps->wr_id == wc->wr_id && "RC completes send WRs in posting order");
	return 1;
}

static int drain_send_cq(hca_ep *ep)
{
	for (size_t n = ring_len(&ep->sends) + 1; n > 0; n--) {
		struct posted_send ps;
		struct hca_wc wc;
		int rc = next_send_wc(ep, &ps, &wc);

		if (rc <= 0)
			return rc;
		uint64_t t_ns = hca_min_u64(ps.done_ns, ep->err_ns);
		/* a flush comes when the QP enters error, never before (a responder killed by a bad
		 * RDMA WRITE dies when the WRITE arrives, not when it was posted: finding F3) */
		if (wc.status == HCA_WC_WR_FLUSH_ERR && ep->err_ns != HCA_NO_ERROR)
			t_ns = hca_max_u64(ps.post_ns, ep->err_ns);
		wc.opcode = ps.opcode;
		wc.byte_len = ps.len;
		if (!hca_fault_wc(ep, &wc, &t_ns))
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
		uint64_t t_ns = hca_now_ns(ep->w), arrival_ns;
		int rc = ops->poll_cq(ep, HCA_CQ_RECV, &wc);

		if (rc <= 0)
			return rc;
		assert(ep->recv_raw > 0 && "recv completion for a RECV that was never posted");
		ep->recv_raw--;
		/* every status but a flush means a message arrived (SUCCESS, LOC_LEN_ERR, ...) */
		if (wc.status != HCA_WC_WR_FLUSH_ERR && ring_len(&ep->arrivals) > 0) {
			ring_pop(&ep->arrivals, &arrival_ns);
			t_ns = arrival_ns;
		}
		wc.opcode = HCA_WC_OP_RECV;
		if (!hca_fault_wc(ep, &wc, &t_ns))
			continue;
		if (wc.status != HCA_WC_SUCCESS) {
			if (ep->err_ns != HCA_NO_ERROR)
				t_ns = hca_max_u64(t_ns, ep->err_ns);
			ep->err_ns = hca_min_u64(ep->err_ns, t_ns);
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

		if (ring_reserve(&ep->cm, 1) != 0) {
			ep->w->backend_quiet = false;
			return 0;             /* stays queued in the backend */
		}
		if ((rc = ep->w->ops->poll_event(ep, &ev)) <= 0)
			return rc;
		SLOG(ep->w, ep->side, "cm_event", "type=%s status=%d", hca_cm_event_name(ev.type),
		     ev.status);
		for (int copies = hca_fault_cm(ep, &ev); copies > 0; copies--) {
			if (ring_reserve(&ep->cm, 1) != 0) {
				ep->w->backend_quiet = false;
				return 0;
			}
			ring_push(&ep->cm, &ev);
		}
	}
	ep->w->backend_quiet = false;     /* more than HCA_CM_DRAIN_MAX: the rest next time */
	return 0;
}

/* Would a drain do anything even though the backend queued nothing: a kill that
 * hca_fault_kill_due carries out now, or a full cm queue that drain_cm tries to grow (an
 * allocation, which may fail: the same attempts as without the shortcut)? */
static bool drain_needed(const hca_world *w)
{
	uint64_t now = hca_now_ns(w);

	for (const hca_ep *ep = w->eps; ep; ep = ep->next)
		if ((ep->setup && ep->kill_ns <= now) || ring_room(&ep->cm) == 0)
			return true;
	return false;
}

static int drain_all(hca_world *w) __attribute__((noinline));

int hca_cq_drain(hca_world *w)
{
	/* the model changes only when called: nothing pushed since a drain that pulled all
	 * (backend_quiet, hca_internal.h), and nothing else to do, means a drain does nothing
	 * (the common case, twice per page sent: kept apart from the drain's own frame) */
	if (w->backend_quiet && !drain_needed(w))
		return 0;
	return drain_all(w);
}

/* Pull everything the backend has: CM events and send CQs first, then recv CQs (the
 * contract in hca_cq.h). 0 or the first backend error. */
static int drain_all(hca_world *w)
{
	int err = 0;

	w->backend_quiet = w->kind == HCA_BACKEND_MODEL;   /* cleared by whatever comes next */
	for (hca_ep *ep = w->eps; ep; ep = ep->next)
		hca_fault_kill_due(ep);
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
	if (err)
		w->backend_quiet = false;
	return err;
}

/* The earliest completion time later than now on any queue: true and *t_ns, or false. */
bool hca_cq_next_ns(const hca_world *w, uint64_t *t_ns)
{
	uint64_t now = hca_now_ns(w), best = UINT64_MAX;
	bool found = false;

	for (const hca_ep *ep = w->eps; ep; ep = ep->next) {
		for (int k = HCA_CQ_SEND; k <= HCA_CQ_RECV; k++) {
			const struct ring *q = &ep->cq[k];

			for (size_t i = 0; i < ring_len(q); i++) {
				uint64_t t = ((const struct hca_wc *)ring_at(q, i))->t_ns;

				if (t > now) {
					found = true;
					best = hca_min_u64(best, t);
					break;        /* the queue is sorted by time */
				}
			}
		}
	}
	*t_ns = best;
	return found;
}

/* Completions and CM events held by the front end (for "did the drain bring anything"). */
size_t hca_cq_queued(const hca_world *w)
{
	size_t n = 0;

	for (const hca_ep *ep = w->eps; ep; ep = ep->next)
		n += ring_len(&ep->cq[HCA_CQ_SEND]) + ring_len(&ep->cq[HCA_CQ_RECV]) + ring_len(&ep->cm);
	return n;
}

void hca_cq_retire(hca_ep *ep, enum hca_cq_kind cq)
{
	if (cq == HCA_CQ_SEND) {
		assert(ep->send_outstanding > 0);
		ep->send_outstanding--;
	} else {
		assert(ep->recv_outstanding > 0);
		ep->recv_outstanding--;
	}
}

/* The head of (ep, k): its time, or UINT64_MAX when the queue is empty. */
static uint64_t head_ns(const hca_ep *ep, enum hca_cq_kind k)
{
	const struct ring *q = &ep->cq[k];

	return ring_len(q) ? ((const struct hca_wc *)ring_at(q, 0))->t_ns : UINT64_MAX;
}

/* The queue a read of cq takes from: cq itself, or for HCA_CQ_ANY the one whose head is
 * earlier (send on a tie). */
static enum hca_cq_kind which_cq(const hca_ep *ep, enum hca_cq_kind cq)
{
	if (cq != HCA_CQ_ANY)
		return cq;
	return head_ns(ep, HCA_CQ_RECV) < head_ns(ep, HCA_CQ_SEND) ? HCA_CQ_RECV : HCA_CQ_SEND;
}

/* verbs: the monotonic clock, for the WRITEs' wall-clock window */
static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VCLOCK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Is the head of (ep, cq) visible now? hca_poll's common answer, "nothing yet" (twice per
 * page sent), without entering ep_pop_visible's frame. */
static inline bool head_visible(const hca_ep *ep, enum hca_cq_kind cq)
{
	const struct ring *q = &ep->cq[which_cq(ep, cq)];

	return ring_len(q) > 0 && ((const struct hca_wc *)ring_at(q, 0))->t_ns <= hca_now_ns(ep->w);
}

/* Pop the head of (ep, cq) if it is visible now: 1 and *wc, else 0. */
static int ep_pop_visible(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc)
{
	cq = which_cq(ep, cq);
	struct ring *q = &ep->cq[cq];

	if (ring_len(q) == 0 || ((const struct hca_wc *)ring_at(q, 0))->t_ns > hca_now_ns(ep->w))
		return 0;
	ring_pop(q, wc);
	hca_cq_retire(ep, cq);
	if (ep->w->kind == HCA_BACKEND_VERBS && wc->status == HCA_WC_SUCCESS && wc->opcode == HCA_WC_OP_RDMA_WRITE)
		ep->w->wall_writes.last_wc_ns = wall_ns();
	SLOG(ep->w, ep->side, "wc", "wr_id=0x%llx op=%s status=%s len=%u",
	     (unsigned long long)wc->wr_id, wc_op_str(wc->opcode), hca_wc_status_name(wc->status),
	     wc->byte_len);
	return 1;
}

int hca_poll(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc)
{
	int rc;

	if (!ep || !wc || !ep->setup || (cq != HCA_CQ_SEND && cq != HCA_CQ_RECV && cq != HCA_CQ_ANY))
		return -EINVAL;
	rc = hca_cq_drain(ep->w);
	if (rc < 0)
		return rc;
	return head_visible(ep, cq) ? ep_pop_visible(ep, cq, wc) : 0;
}

static const char *cq_name(enum hca_cq_kind cq)
{
	return cq == HCA_CQ_SEND ? "send" : cq == HCA_CQ_RECV ? "recv" : "any";
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
	for (size_t i = 0; i < ring_len(q); i++) {
		const struct hca_cm_event *ev = ring_at(q, i);

		if (ev->type == HCA_CM_DISCONNECTED) {
			/* A completion already generated (on rxe: a CQE that arrived before the peer's
			 * DISCONNECTED) is reported first, at its own time: the REM_ACCESS_ERR of a
			 * write says more than the disconnect that followed it. */
			uint64_t t_ns = head_ns(cw->ep, which_cq(cw->ep, cw->cq));
			if (t_ns <= cw->deadline_ns) {
				hca_wait_catch_up(cw->ep->w, t_ns);
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

	if (!ep || !wc || !ep->setup || (cq != HCA_CQ_SEND && cq != HCA_CQ_RECV && cq != HCA_CQ_ANY))
		return -EINVAL;
	cw.deadline_ns = hca_sat_add(hca_now_ns(ep->w), timeout_ns);
	rc = hca_wait_until(ep->w, timeout_ns, cq_check, &cw);
	if (rc == 0)
		SLOG(ep->w, ep->side, "wait_timeout", "cq=%s ns=%llu", cq_name(cq), (unsigned long long)timeout_ns);
	else if (rc == -ECONNRESET)   /* the peer disconnected: how every migration ends, not an error */
		SLOG(ep->w, ep->side, "wait_disconnected", "cq=%s", cq_name(cq));
	else if (rc < 0)
		SLOG(ep->w, ep->side, "wait_error", "cq=%s rc=%d", cq_name(cq), rc);
	return rc;
}

/* ---- posting into the sends FIFO (and the peer's arrivals) ---------------------------- */

/* Occupy the outgoing link for len bytes: the WR's virtual completion (and delivery) time.
 * A WR posted on a QP known to be in error never reaches the wire: it completes now. */
uint64_t hca_cq_charge_link(hca_ep *ep, uint32_t len)
{
	const struct hca_cost *c = &ep->w->cost;
	uint64_t now = hca_now_ns(ep->w);
	uint64_t start_ns, wire_ns;

	if (ep->err_ns != HCA_NO_ERROR && ep->err_ns <= now)
		return now;
	start_ns = hca_max_u64(now, ep->link_free_ns);
	/* len < 2^32, so len * 1e9 < 2^62: no overflow */
	wire_ns = hca_sat_add(c->wr_overhead_ns, (uint64_t)len * VCLOCK_NS_PER_S / c->link_bytes_per_s);
	ep->link_free_ns = hca_sat_add(start_ns, wire_ns);
	return hca_sat_add(ep->link_free_ns, c->msg_latency_ns);
}

void hca_cq_log_post_send(hca_ep *ep, const struct hca_send_wr *wr)
{
	char kbuf[16];
	struct hca_write_window *ww = &ep->w->wall_writes;

	if (wr->opcode == HCA_WR_RDMA_WRITE && ep->w->kind == HCA_BACKEND_VERBS) {
		if (!ww->writes++)
			ww->first_post_ns = wall_ns();
		ww->bytes += wr->length;
	}

	if (wr->opcode == HCA_WR_RDMA_WRITE)
		SLOG(ep->w, ep->side, "post_send", "op=write wr_id=0x%llx len=%u rkey=%s",
		     (unsigned long long)wr->wr_id, wr->length,
		     hca_key_str(ep->w, wr->rkey, kbuf, sizeof(kbuf)));
	else
		SLOG(ep->w, ep->side, "post_send", "op=send wr_id=0x%llx len=%u",
		     (unsigned long long)wr->wr_id, wr->length);
}

/* The responder faulted in `pages` of an ODP MR while it NAKed ps's WR RNR and the requester
 * retried: the WR completes that much later, and the link is held as long (RC resends from
 * the NAKed PSN: nothing behind it on this QP gets through meanwhile). */
static void rnr_stall(hca_ep *ep, struct posted_send *ps, uint64_t pages)
{
	uint64_t c = ep->w->cost.odp_fault_ns;
	uint64_t stall_ns = c && pages > UINT64_MAX / c ? UINT64_MAX : pages * c;

	ps->done_ns = hca_sat_add(ps->done_ns, stall_ns);
	ep->link_free_ns = hca_sat_add(ep->link_free_ns, stall_ns);
	SLOG(ep->w, ep->side, "rnr_wait", "wr_id=0x%llx fault_pages=%llu ns=%llu", (unsigned long long)ps->wr_id,
	     (unsigned long long)pages, (unsigned long long)stall_ns);
}

/* Give one send WR to the backend; it completes (and arrives) extra_ns later than the cost
 * model says, and later still by the responder's ODP fault-in the backend reports: the QP's
 * later send WRs wait behind that stall too (RC resends from the RNR NAKed PSN). */
int hca_cq_post_send(hca_ep *ep, const struct hca_send_wr *wr, uint64_t extra_ns)
{
	hca_ep *peer = NULL;
	struct hca_send_report rep = { 0 };
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
				   .post_ns = hca_now_ns(ep->w),
				   .done_ns = hca_sat_add(hca_cq_charge_link(ep, wr->length), extra_ns),
				   .opcode = wr->opcode == HCA_WR_SEND ? HCA_WC_OP_SEND
								       : HCA_WC_OP_RDMA_WRITE };
	rc = ep->w->ops->post_send(ep, wr, &rep);
	if (rc < 0) {
		ep->link_free_ns = link_free_ns;
		SLOG(ep->w, ep->side, "post_send", "wr_id=0x%llx rc=%d",
		     (unsigned long long)wr->wr_id, rc);
		return rc;
	}
	ep->send_outstanding++;
	hca_cq_log_post_send(ep, wr);
	if (rep.fault_pages > 0)
		rnr_stall(ep, &ps, rep.fault_pages);
	if (rep.rnr_failed && ps.done_ns < ep->kill_ns) {   /* the QP dies when the NAK arrives */
		ep->kill_ns = ps.done_ns;
		ep->kill_status = HCA_WC_RNR_RETRY_EXC_ERR;
		ep->kill_rnr = true;
	}
	ring_push(&ep->sends, &ps);   /* sends.len <= send_outstanding <= max_send_wr = cap */
	if (peer)
		ring_push(&peer->arrivals, &ps.done_ns);
	hca_cq_drain(ep->w);
	return 0;
}
