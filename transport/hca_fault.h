/* SPDX-License-Identifier: MIT */
/* hca_fault - the seam's side of the fault hook (hca.h): asking it at every fallible call
 * and carrying out its answers (internal to transport/; see docs/faults.md).
 *
 * Owns nothing but the world's copy of the hook (hca_world_set_fault_hook). When a hook is
 * set, every fallible call is put to it with its sites and side and may be failed here,
 * identically for both backends; every injection is logged ("fault"):
 *   errno     the call returns -errno without reaching the backend;
 *   status    the send WR is not given to the backend: the front end completes it with that
 *             status, then moves the QP to error for real (backend qp_to_error; the in-process
 *             peer's too for REM_ACCESS_ERR / REM_INV_REQ_ERR / REM_OP_ERR, as a responder
 *             would be); at a wc.* site a successful completion is rewritten and the QP
 *             goes to error when virtual time reaches that completion (hca_fault_kill_due);
 *   drop      a send WR reports success and delivers nothing; a completion or CM event is lost;
 *   delay     a send WR completes and arrives later; a completion becomes visible later; any
 *             other call first lets the virtual time pass (hca_wait_pass_time);
 *   duplicate a control message is posted twice; a CM event is delivered twice;
 *   corrupt   the control message is changed in the sender's buffer before posting, by the
 *             protocol that framed it (struct hca_ctl_msg); a completion's wr_id is changed;
 *   qp_error, disconnect, event: the real operation (or a synthetic CM event) before the call;
 *   die       the process is killed on the spot (SIGKILL): those calls do not return.
 * Without a hook every call here is a no-op answer ("no fault"). */
#ifndef MIGBED_TRANSPORT_HCA_FAULT_H
#define MIGBED_TRANSPORT_HCA_FAULT_H
#include "transport/hca_internal.h"

/* Ask the hook about one call of `side` under sites (most specific first): true and *f when
 * it fires. */
bool hca_fault_at(hca_world *w, enum vocab_side side, const enum fault_site *sites, size_t n,
		  struct hca_fault_answer *f);
bool hca_fault_at1(hca_world *w, enum vocab_side side, enum fault_site site, struct hca_fault_answer *f);
/* A call site other than a send WR: 0 to go on with the call (after the side effect), or
 * -errno to fail it. */
int hca_fault_before(hca_ep *ep, const struct hca_fault_answer *f);
/* A setup call (ep_create, ep_setup, modify_qp, connect, accept): errno or delay. */
int hca_fault_setup_call(hca_world *w, const struct hca_fault_answer *f);
/* connect / accept at `site`, then the QP's RTR -> RTS (modify_qp): 0 or the injected -errno. */
int hca_fault_conn_call(hca_ep *ep, enum fault_site site);
/* An injected completion error whose time has come: the QP goes to ERR now. */
void hca_fault_kill_due(hca_ep *ep);
/* A drained successful completion: rewritten, delayed (*t_ns) or false: dropped. */
bool hca_fault_wc(hca_ep *ep, struct hca_wc *wc, uint64_t *t_ns);
/* A drained CM event: how many copies to deliver (0 drop, 1, 2 duplicate). */
int hca_fault_cm(hca_ep *ep, const struct hca_cm_event *ev);
/* Post one send WR (checked by the caller, room in the send queue) with its faults. */
int hca_fault_post_send(hca_ep *ep, const struct hca_send_wr *wr);

#endif
