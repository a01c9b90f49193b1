/* SPDX-License-Identifier: MIT */
/* hca_internal - the seam's front-end objects, shared by its parts (internal to transport/).
 *
 * The front end is split by job; each part's contract is at the top of its header:
 *   hca.c        the objects (world, listener, ep, mr) and the public API of hca.h;
 *   hca_cq.h     the timed completion queues: draining the backend, stamping, visibility;
 *   hca_fault.h  the seam's side of the fault hook (hca.h): asking it, carrying out its answer;
 *   hca_wait.h   the one discrete-event wait loop, the only place virtual time advances.
 * The structs are defined here so that the parts read the fields directly; nothing outside
 * hca*.c includes this header (backends see hca_backend.h only). */
#ifndef MIGBED_TRANSPORT_HCA_INTERNAL_H
#define MIGBED_TRANSPORT_HCA_INTERNAL_H
#include <stdbool.h>
#include <stdint.h>

#include "transport/hca_backend.h"
#include "transport/ring.h"

#define HCA_PROGRESS_MAX 8
#define HCA_RING_MAX_ELEMS (1u << 24)
#define HCA_NO_ERROR UINT64_MAX
#define HCA_LOG_FIELD_MAX 64

/* Emit one evlog line if the world has a log; side is a log token ("sim", or a side's). */
#define HLOG(w, side, event, ...)                                              \
	do {                                                                   \
		if ((w)->ev)                                                   \
			evlog_emit((w)->ev, (side), (event), __VA_ARGS__);     \
	} while (0)
/* The same for a migration side (enum vocab_side), printed as its token. */
#define SLOG(w, side, event, ...) HLOG(w, vocab_side_token(side), event, __VA_ARGS__)

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
	uint64_t stray_writes;        /* model: hca_world_stray_writes */
	uint64_t memlock[VOCAB_SIDE_COUNT]; /* model: per-side pinning limits, 0 = none */
	struct hca_fault_hook faults; /* check NULL: no faults, no counting */
	/* model only: the last drain left nothing behind and nothing has changed since (no raw
	 * completion or CM event pushed by the backend, no endpoint added, set up or removed, no
	 * fake send entered, no CM event taken): a drain now would find nothing to pull, so
	 * hca_cq_drain skips it (a due kill, which depends on time, is checked each time) */
	bool backend_quiet;
	/* verbs only: the wall-clock window of the RDMA WRITEs (hca_world_write_window) */
	struct hca_write_window wall_writes;
};

struct hca_listener {
	hca_world *w;
	hca_listener *next;
	enum vocab_side side;
	char *addr;                   /* for the log */
	void *priv;
	hca_ep *spare;                /* endpoint offered to the next listener_poll */
};

struct hca_ep {
	hca_world *w;
	hca_ep *next;
	enum vocab_side side;
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
	bool kill_rnr;                /* the kill is a backend's RNR failure (struct hca_send_report), not a fault */
	bool sq_doomed;               /* a post-site error completes at kill_ns: later send WRs flush */
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

static inline uint64_t hca_sat_add(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

static inline uint64_t hca_min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t hca_max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline uint64_t hca_now_ns(const hca_world *w)
{
	return vclock_now_ns(&w->clk);
}

/* Errors after which the responder's QP is in error too
 * (docs/verbs-facts.md, 'WRITE outside the remote MR'). */
static inline bool hca_status_kills_responder(int status)
{
	return status == HCA_WC_REM_ACCESS_ERR || status == HCA_WC_REM_INV_REQ_ERR ||
	       status == HCA_WC_REM_OP_ERR;
}

/* hca.c, for the parts: the real transition to ERR (backend) with the front end's error
 * time (now), logged; a key for the log ("*" but on the model, whose keys are deterministic). */
int hca_ep_to_error_now(hca_ep *ep);
const char *hca_key_str(const hca_world *w, uint32_t key, char *buf, size_t n);

#endif
