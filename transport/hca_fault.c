/* SPDX-License-Identifier: MIT */
/* hca_fault - the seam's side of the fault hook: asking it, carrying out its answers (see
 * hca_fault.h for the contract, docs/faults.md for the actions). */
#include "transport/hca_fault.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "transport/hca_cq.h"
#include "transport/hca_wait.h"

#define HCA_FAULT_WRID_BITS (UINT64_C(0x3fff) << 16)   /* corrupt(wr_id): the protocol's block bits 16..29 */

void hca_world_set_fault_hook(hca_world *w, const struct hca_fault_hook *h)
{
	assert(w);
	w->faults = h ? *h : (struct hca_fault_hook){ 0 };
}

/* Ask the hook about one call of `side` under sites (most specific first): true and *f when
 * it fires. Every injection is logged; `die` never returns. */
bool hca_fault_at(hca_world *w, enum vocab_side side, const enum fault_site *sites, size_t n,
		  struct hca_fault_answer *f)
{
	assert((unsigned)side < VOCAB_SIDE_COUNT && n > 0);
	if (!w->faults.check || !w->faults.check(w->faults.ctx, sites, n, side, hca_now_ns(w), f))
		return false;
	SLOG(w, side, "fault", "site=%s side=%s call=%llu action=%s", vocab_fault_site_token((int)f->site),
	     vocab_side_token(side), (unsigned long long)f->call, f->text);
	if (f->action == FAULT_ACT_DIE) {
		raise(SIGKILL);           /* a crash, not an exit: nothing is flushed */
		_exit(128 + SIGKILL);
	}
	return true;
}

/* One-site form. */
bool hca_fault_at1(hca_world *w, enum vocab_side side, enum fault_site site, struct hca_fault_answer *f)
{
	return hca_fault_at(w, side, &site, 1, f);
}

int hca_fault_alloc(hca_world *w, enum vocab_side side)
{
	struct hca_fault_answer f;

	assert(w);
	if (!hca_fault_at1(w, side, FAULT_SITE_ALLOC, &f))
		return 0;
	assert(f.action == FAULT_ACT_ERRNO);   /* the only other one, die, does not return */
	return -f.arg;
}

/* An injected error status: this QP (and, for the statuses that kill the responder, the
 * in-process peer's) goes to ERR for real. Nothing is drained here. */
static void hca_fault_kill_qp(hca_ep *ep, int status)
{
	hca_ep *peer;

	ep->err_ns = hca_min_u64(ep->err_ns, hca_now_ns(ep->w));
	ep->w->ops->qp_to_error(ep);
	if (!hca_status_kills_responder(status) || !(peer = ep->w->ops->peer(ep)) || !peer->setup)
		return;
	peer->err_ns = hca_min_u64(peer->err_ns, hca_now_ns(ep->w));
	ep->w->ops->qp_to_error(peer);
}

static void push_synthetic_event(hca_ep *ep, int type)
{
	struct hca_cm_event ev = { .type = type };

	if (ring_reserve(&ep->cm, 1) != 0)
		return;
	ring_push(&ep->cm, &ev);
	SLOG(ep->w, ep->side, "cm_event", "type=%s status=0 injected=1", hca_cm_event_name(type));
}

/* Actions at a call site other than a send WR: 0 to go on with the call (after the side
 * effect), or -errno to fail it. */
int hca_fault_before(hca_ep *ep, const struct hca_fault_answer *f)
{
	switch (f->action) {
	case FAULT_ACT_ERRNO:
		return -f->arg;
	case FAULT_ACT_DELAY:
		hca_wait_pass_time(ep->w, f->delay_ns);
		return 0;
	case FAULT_ACT_QP_ERROR:
		if (ep->setup) {
			hca_ep_to_error_now(ep);
			hca_cq_drain(ep->w);
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
void hca_fault_kill_due(hca_ep *ep)
{
	if (ep->kill_ns > hca_now_ns(ep->w) || !ep->setup)
		return;
	ep->kill_ns = HCA_NO_ERROR;
	ep->sq_doomed = false;
	hca_fault_kill_qp(ep, ep->kill_status);
	if (ep->kill_rnr)
		SLOG(ep->w, ep->side, "qp_to_error", "rc=0 rnr_nak=1");
	else
		SLOG(ep->w, ep->side, "qp_to_error", "rc=0 fault=%s", hca_wc_status_name(ep->kill_status));
}

/* Actions at a setup call (ep_create, ep_setup, modify_qp, connect, accept): errno or delay. */
int hca_fault_setup_call(hca_world *w, const struct hca_fault_answer *f)
{
	if (f->action == FAULT_ACT_ERRNO)
		return -f->arg;
	if (f->action == FAULT_ACT_DELAY)
		hca_wait_pass_time(w, f->delay_ns);
	return 0;
}

/* connect / accept, then the QP's RTR -> RTS (modify_qp): 0 or the injected -errno. */
int hca_fault_conn_call(hca_ep *ep, enum fault_site site)
{
	struct hca_fault_answer f;
	int rc = 0;

	if (hca_fault_at1(ep->w, ep->side, site, &f))
		rc = hca_fault_setup_call(ep->w, &f);
	if (rc == 0 && hca_fault_at1(ep->w, ep->side, FAULT_SITE_MODIFY_QP, &f))
		rc = hca_fault_setup_call(ep->w, &f);
	return rc;
}

/* Completion faults on successful completions: rewrite the status (the QP then goes to ERR
 * for real at the completion's time, see hca_fault_kill_due), make it visible later, or lose it.
 * false: the completion is dropped. */
bool hca_fault_wc(hca_ep *ep, struct hca_wc *wc, uint64_t *t_ns)
{
	struct hca_fault_answer f;
	enum fault_site site = wc->opcode == HCA_WC_OP_RECV	      ? FAULT_SITE_WC_RECV
			       : wc->opcode == HCA_WC_OP_RDMA_WRITE ? FAULT_SITE_WC_WRITE
								    : FAULT_SITE_WC_SEND;

	if (wc->status != HCA_WC_SUCCESS || !hca_fault_at1(ep->w, ep->side, site, &f))
		return true;
	switch (f.action) {
	case FAULT_ACT_STATUS:
		/* the QP dies when the error completion happens, not when it is drained */
		wc->status = f.arg;
		if (*t_ns < ep->kill_ns) {
			ep->kill_ns = *t_ns;
			ep->kill_status = f.arg;
			ep->kill_rnr = false;
		}
		return true;
	case FAULT_ACT_DELAY:
		*t_ns = hca_sat_add(*t_ns, f.delay_ns);
		return true;
	case FAULT_ACT_CORRUPT:
		/* a provider bug: a completion for a WR never posted (the block bits of a write's
		 * wr_id all set; any other wr_id changes likewise) */
		wc->wr_id |= HCA_FAULT_WRID_BITS;
		return true;
	case FAULT_ACT_DROP:
		hca_cq_retire(ep, site == FAULT_SITE_WC_RECV ? HCA_CQ_RECV : HCA_CQ_SEND);
		return false;
	default:
		return true;
	}
}

/* CM event faults: how many copies of ev to deliver (0 drop, 1, 2 duplicate). */
int hca_fault_cm(hca_ep *ep, const struct hca_cm_event *ev)
{
	struct hca_fault_answer f;
	enum fault_site sites[2] = { FAULT_SITE_CM, FAULT_SITE_CM };
	size_t n = 0;

	if (ev->type >= 0 && ev->type < VOCAB_CM_EVENT_COUNT)
		sites[n++] = fault_site_cm(ev->type);
	sites[n++] = FAULT_SITE_CM;
	if (!hca_fault_at(ep->w, ep->side, sites, n, &f))
		return 1;
	return f.action == FAULT_ACT_DROP ? 0 : f.action == FAULT_ACT_DUPLICATE ? 2 : 1;
}

/* The sites of a send WR, most specific first: msg.TYPE (a control message, as the protocol
 * says), post_send.send or post_send.write, post_send. */
static size_t send_sites(const struct hca_send_wr *wr, enum fault_site *sites)
{
	size_t n = 0;

	if (wr->opcode == HCA_WR_SEND && wr->ctl && wr->ctl->type < VOCAB_MSG_TYPE_COUNT)
		sites[n++] = fault_site_msg(wr->ctl->type);
	sites[n++] = wr->opcode == HCA_WR_SEND ? FAULT_SITE_POST_SEND_SEND : FAULT_SITE_POST_SEND_WRITE;
	sites[n++] = FAULT_SITE_POST_SEND;
	return n;
}

/* When the send WRs posted so far have all completed (at least t_ns): an error status
 * completes in posting order, behind the WRs still in flight (finding S2). */
static uint64_t in_flight_until_ns(const hca_ep *ep, uint64_t t_ns)
{
	const struct ring *cq = &ep->cq[HCA_CQ_SEND];   /* drained already, stamped in order */

	if (ring_len(cq) > 0)
		t_ns = hca_max_u64(t_ns, ((const struct hca_wc *)ring_at(cq, ring_len(cq) - 1))->t_ns);
	for (size_t i = 0; i < ring_len(&ep->sends); i++)
		t_ns = hca_max_u64(t_ns, ((const struct posted_send *)ring_at(&ep->sends, i))->done_ns);
	return t_ns;
}

/* A send WR the front end completes itself with `status`: SUCCESS (drop: it occupies the
 * link, nothing arrives) or an error (it never reaches the wire; with `kill` the QP goes to
 * ERR when that completion happens; without, it is a flush behind such an error). */
static int post_send_fake_as(hca_ep *ep, const struct hca_send_wr *wr, int status, bool kill)
{
	struct posted_send ps = { .wr_id = wr->wr_id, .len = wr->length, .fake = true, .status = status,
				  .post_ns = hca_now_ns(ep->w),
				  .opcode = wr->opcode == HCA_WR_SEND ? HCA_WC_OP_SEND : HCA_WC_OP_RDMA_WRITE };

	if (ep->err_ns != HCA_NO_ERROR) {
		/* the QP is in error, or goes there at the error completion of a WR ahead of this
		 * one (an injected wc status, stamped later): this WR is flushed behind it, whatever
		 * the rule said, and kills nothing (rxe: after the failing WR, the other outstanding
		 * WRs and the RECVs flush, docs/verbs-facts.md; finding S5) */
		ps.status = HCA_WC_WR_FLUSH_ERR;
		kill = false;
	}
	ps.done_ns = ps.status == HCA_WC_SUCCESS ? hca_cq_charge_link(ep, wr->length) : hca_now_ns(ep->w);
	uint64_t behind_ns = ps.done_ns;
	if (kill && status != HCA_WC_SUCCESS && ep->err_ns == HCA_NO_ERROR)
		behind_ns = ps.done_ns = in_flight_until_ns(ep, ps.done_ns);
	ring_push(&ep->sends, &ps);   /* the caller checked send_outstanding < max_send_wr */
	ep->w->backend_quiet = false; /* a fake entry completes at the next drain */
	ep->send_outstanding++;
	hca_cq_log_post_send(ep, wr);
	if (!kill || status == HCA_WC_SUCCESS) {
		/* nothing dies here */
	} else if (behind_ns <= hca_now_ns(ep->w)) {
		hca_fault_kill_qp(ep, status);
	} else if (behind_ns < ep->kill_ns) {
		/* the QP dies when the error completion happens (hca_fault_kill_due), so the WRs
		 * ahead of it complete first and the flushes follow it, as on real hardware */
		ep->kill_ns = behind_ns;
		ep->kill_status = status;
		ep->kill_rnr = false;
		ep->sq_doomed = true;
	}
	hca_cq_drain(ep->w);
	return 0;
}

static int post_send_fake(hca_ep *ep, const struct hca_send_wr *wr, int status)
{
	return post_send_fake_as(ep, wr, status, true);
}

static int post_send_fault(hca_ep *ep, const struct hca_send_wr *wr, const struct hca_fault_answer *f)
{
	int rc;

	switch (f->action) {
	case FAULT_ACT_STATUS:
		return post_send_fake(ep, wr, f->arg);
	case FAULT_ACT_DROP:
		return post_send_fake(ep, wr, HCA_WC_SUCCESS);
	case FAULT_ACT_DELAY:
		return hca_cq_post_send(ep, wr, f->delay_ns);
	case FAULT_ACT_DUPLICATE:
		rc = hca_cq_post_send(ep, wr, 0);
		if (rc == 0 && hca_cq_post_send(ep, wr, 0) != 0)
			SLOG(ep->w, ep->side, "fault_noop", "action=duplicate reason=send_queue_full");
		return rc;
	case FAULT_ACT_CORRUPT:
		/* the protocol changes its own message: the seam does not know the wire format */
		assert(wr->ctl && wr->ctl->corrupt && "corrupt applies to control messages only (msg.* sites)");
		if (!wr->ctl->corrupt((uint8_t *)(uintptr_t)wr->local_addr, wr->length, f->arg))
			SLOG(ep->w, ep->side, "fault_noop", "action=corrupt reason=no_payload");
		return hca_cq_post_send(ep, wr, 0);
	default:
		rc = hca_fault_before(ep, f);
		if (rc < 0) {
			SLOG(ep->w, ep->side, "post_send", "wr_id=0x%llx rc=%d", (unsigned long long)wr->wr_id, rc);
			return rc;
		}
		return hca_cq_post_send(ep, wr, 0);
	}
}

int hca_fault_post_send(hca_ep *ep, const struct hca_send_wr *wr)
{
	enum fault_site sites[3];
	struct hca_fault_answer f;
	size_t n = send_sites(wr, sites);
	bool fired = hca_fault_at(ep->w, ep->side, sites, n, &f);

	if (ep->sq_doomed) {
		/* behind a post-site error whose completion is not due yet: the QP is as good as in
		 * error, the WR never reaches the wire (an errno still fails the call) */
		if (fired && f.action == FAULT_ACT_ERRNO)
			return post_send_fault(ep, wr, &f);
		return post_send_fake_as(ep, wr, HCA_WC_WR_FLUSH_ERR, false);
	}
	if (fired)
		return post_send_fault(ep, wr, &f);
	return hca_cq_post_send(ep, wr, 0);
}
