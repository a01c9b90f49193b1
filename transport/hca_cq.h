/* SPDX-License-Identifier: MIT */
/* hca_cq - the front end's timed completion queues (internal to transport/; hca_internal.h).
 *
 * Owns, per endpoint: the sends FIFO (posted send WRs whose raw completion is not drained
 * yet; RC completes them in posting order, asserted; "fake" entries, completed by the front
 * end itself for an injected fault, complete in that order too without a backend
 * completion), the arrivals FIFO (virtual arrival times of the in-process peer's SENDs), the
 * stamped cq[2] and the cm queue of drained CM events.
 * Guarantees: within a queue t_ns is nondecreasing (queue order is posting order and time
 * order); a completion is visible once the clock reaches its t_ns. Stamping: a send
 * completion gets min(its done time, the QP's error time); a RECV that consumed a message
 * gets the message's arrival time; a flush is never visible before its QP entered error
 * (a flushed send: max(posted, error time); a flushed RECV: max(now, error time)). The error
 * time is set by hca_qp_to_error / hca_disconnect (now), by a failed send completion (its
 * time) and, for the statuses that kill the responder, on the in-process peer too; send CQs
 * are drained before recv CQs so that the peer's error time is known when its flushed RECVs
 * are stamped. Completion and CM faults are applied as they are drained (hca_fault.h).
 * The caller: drains before reading the queues; never moves the clock (hca_wait.h does). */
#ifndef MIGBED_TRANSPORT_HCA_CQ_H
#define MIGBED_TRANSPORT_HCA_CQ_H
#include "transport/hca_internal.h"

/* Pull everything the backend has into the queues: 0 or the first backend error. */
int hca_cq_drain(hca_world *w);
/* The earliest completion time later than now on any queue: true and *t_ns, or false. */
bool hca_cq_next_ns(const hca_world *w, uint64_t *t_ns);
/* Occupy the outgoing link for a WR of len bytes: its virtual completion (and delivery) time. */
uint64_t hca_cq_charge_link(hca_ep *ep, uint32_t len);
/* The post_send log line of wr. */
void hca_cq_log_post_send(hca_ep *ep, const struct hca_send_wr *wr);
/* Give one send WR to the backend, entered in the sends FIFO (and the in-process peer's
 * arrivals); it completes extra_ns later than the cost model says. 0 or -errno (nothing
 * entered). The caller has checked the WR. */
int hca_cq_post_send(hca_ep *ep, const struct hca_send_wr *wr, uint64_t extra_ns);
/* A completion of cq leaves the front end (returned to the user, or dropped by a fault): one
 * outstanding WR less (asserted > 0). */
void hca_cq_retire(hca_ep *ep, enum hca_cq_kind cq);
/* Completions and CM events held by the front end (for "did the drain bring anything"). */
size_t hca_cq_queued(const hca_world *w);

#endif
