/* SPDX-License-Identifier: MIT */
/* hca_backend - what a backend (model, verbs) provides to the seam's front end (hca.c).
 *
 * Internal to transport/. The front end owns every object the protocol sees (world,
 * listener, ep, mr), virtual time, per-CQ timed completion queues, send-queue depth
 * accounting, logging and fault hooks; a backend only performs the operations and reports
 * *raw* completions and CM events, nonblocking. Backend state hangs off each front object
 * through its `priv` pointer.
 *
 * Semantics a backend must provide (the model by simulation, verbs by the hardware):
 *  - post_send of an RDMA WRITE checks the remote MR's rkey, bounds and REMOTE_WRITE access
 *    at the responder; a violation completes with REM_ACCESS_ERR at the requester, moves both
 *    QPs to the error state (the responder's RECVs flush), and writes no byte;
 *  - a SEND with no RECV posted at the peer fails with RNR_RETRY_EXC_ERR when the sender's
 *    rnr_retry is 0 (the *peer's* accept/connect rnr_retry_count, as rdma_cm sets it), and
 *    the backend says so in the send report: as for the ODP WRITE below, its QP's later send
 *    WRs flush, but the QP goes to ERR only at the NAK's time (the front end's), so a SEND
 *    the peer posts before then still lands (finding S3); rnr_retry 7 waits for a RECV forever;
 *  - an RDMA WRITE into pages of an MR registered with HCA_ACCESS_ON_DEMAND that are not
 *    present yet: the responder faults them in (they are present from then on) and NAKs
 *    RNR meanwhile; with the requester's rnr_retry 0 (1..6 on the model) the WRITE completes
 *    with RNR_RETRY_EXC_ERR, nothing written, and the backend says so in the send report:
 *    its QP's send queue flushes every later WR at once, but the QP goes to ERR only when
 *    the front end says (hca_fault_kill_due, at the completion's time: the NAK's), so a SEND
 *    the peer posts before then still lands; with 7 it succeeds and the report counts the
 *    pages (the front end turns them into time: cost.odp_fault_ns each);
 *  - a SEND longer than the peer's RECV buffer: LOC_LEN_ERR at the receiver, REM_INV_REQ_ERR
 *    at the sender;
 *  - once a QP is in error, every outstanding and every later WR completes with
 *    WR_FLUSH_ERR (posting still returns 0); within one queue completions come in posting
 *    order;
 *  - MRs: lkey/rkey unique per device, access flags checked; dereg of an unknown MR fails.
 * Return values: 0 / 1 (got something) or -errno. */
#ifndef MIGBED_TRANSPORT_HCA_BACKEND_H
#define MIGBED_TRANSPORT_HCA_BACKEND_H
#include "transport/hca.h"

/* What a backend tells the front end about one send WR beyond its completion (the model's
 * On-Demand Paging; a real device takes real time and reports nothing). Zero on entry. */
struct hca_send_report {
	uint64_t fault_pages;         /* pages the responder faulted in while it NAKed the WR RNR and
				       * the requester retried (rnr_retry 7): the WR completes, and the
				       * QP's later send WRs start, that much fault time later */
	bool rnr_failed;              /* the WR completed RNR_RETRY_EXC_ERR; its QP is to go to ERR at
				       * that completion's time (ops->qp_to_error from the front end) */
};

struct hca_backend_ops {
	const char *name;
	int (*world_init)(hca_world *w, const struct hca_verbs_opts *vopts);
	void (*world_fini)(hca_world *w);

	int (*listen)(hca_listener *l, const char *addr);
	/* 1: a connect request is pending; the backend has filled new_ep's priv and *req */
	int (*listener_poll)(hca_listener *l, hca_ep *new_ep, struct hca_cm_event *req);
	void (*listener_close)(hca_listener *l);

	int (*ep_create)(hca_ep *ep, const char *addr);   /* active: resolve addr + route */
	/* caps in: what the protocol asks for; out: what the device granted (rxe: 2^k-1 >= asked) */
	int (*ep_setup)(hca_ep *ep, struct hca_qp_caps *caps);
	int (*connect)(hca_ep *ep, const struct hca_conn_params *p);  /* initiate only */
	int (*accept)(hca_ep *ep, const struct hca_conn_params *p);
	int (*reject)(hca_ep *ep);
	int (*poll_event)(hca_ep *ep, struct hca_cm_event *ev);       /* nonblocking */
	int (*disconnect)(hca_ep *ep);
	void (*ep_destroy)(hca_ep *ep);
	/* The front end of the connected peer when it lives in this process, else NULL. */
	hca_ep *(*peer)(hca_ep *ep);
	const char *(*device)(hca_ep *ep);

	int (*reg_mr)(hca_mr *mr, int access);            /* mr->addr/len set; fill lkey/rkey */
	int (*dereg_mr)(hca_mr *mr);
	/* prefetch (for write) every page of an ODP MR: present from now on */
	int (*advise_mr)(hca_mr *mr);

	int (*post_recv)(hca_ep *ep, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey);
	int (*post_send)(hca_ep *ep, const struct hca_send_wr *wr, struct hca_send_report *rep);
	/* nonblocking; t_ns of *wc is ignored (the front end stamps it) */
	int (*poll_cq)(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc);
	int (*qp_to_error)(hca_ep *ep);
	/* Block up to wall_timeout_ns until some completion or CM event may be ready on any
	 * object of the world. NULL for the model (it never has anything "in flight"). */
	int (*block)(hca_world *w, uint64_t wall_timeout_ns);
};

extern const struct hca_backend_ops hca_model_ops;
/* The model's granted work-queue depth for a request of n, as rxe: the smallest 2^k - 1 >= n. */
uint32_t hca_model_granted_depth(uint32_t n);
extern const struct hca_backend_ops hca_verbs_ops;

/* Accessors for backends. */
void *hca_world_priv(hca_world *w);
void hca_world_set_priv(hca_world *w, void *p);
void *hca_listener_priv(hca_listener *l);
void hca_listener_set_priv(hca_listener *l, void *p);
hca_world *hca_listener_world(hca_listener *l);
void *hca_ep_priv(hca_ep *ep);
void hca_ep_set_priv(hca_ep *ep, void *p);
hca_world *hca_ep_world(hca_ep *ep);
struct mem *hca_ep_guest(hca_ep *ep);
/* The model saw a WRITE land outside its receiver's RAM blocks (hca_world_stray_writes). */
void hca_world_note_stray_write(hca_world *w);
void *hca_mr_priv(hca_mr *mr);
void hca_mr_set_priv(hca_mr *mr, void *p);
hca_ep *hca_mr_ep(hca_mr *mr);
/* Set by the backend in reg_mr. */
void hca_mr_set_keys(hca_mr *mr, uint32_t lkey, uint32_t rkey);
/* A backend that reports completions and CM events synchronously (the model) calls this
 * whenever it queues one: the front end's next drain must then look. */
void hca_world_backend_changed(hca_world *w);
/* Iterate the world's endpoints (for verbs peer matching): NULL-terminated. */
hca_ep *hca_world_ep_next(hca_world *w, hca_ep *prev);

#endif
