/* SPDX-License-Identifier: MIT */
/* hca - the one narrow seam between the migration protocol and RDMA hardware, shaped after
 * libibverbs + librdmacm, with two backends:
 *   model  an in-process simulated HCA with real verbs semantics (transport/hca_model.c)
 *   verbs  rdma-core on rxe/siw/real NICs (transport/hca_verbs.c)
 *
 * Time. A *world* owns the run's virtual clock. Virtual time moves only here and only by
 * the cost model (struct hca_cost), identically on both backends:
 *   - every posted SEND / RDMA WRITE occupies its side's outgoing link: it starts at
 *     max(now, link free), lasts wr_overhead_ns + bytes / link rate, and completes (and is
 *     delivered to the peer) msg_latency_ns after that;
 *   - a completion is *visible* to hca_poll only once the clock has reached its time;
 *     hca_wait advances the clock to the earliest pending event (discrete-event style);
 *   - hca_reg_mr charges reg_fixed_ns + reg_per_page_ns per 4 KiB page to the clock (an
 *     On-Demand Paging MR pins nothing: reg_fixed_ns only; hca_advise_mr's prefetch then
 *     charges reg_per_page_ns per page, the page walk a pinning registration does);
 *   - an RDMA WRITE into pages of an ODP MR the responder has not faulted in yet is RNR
 *     NAKed while it faults them in: with the requester's rnr_retry 7 it completes
 *     odp_fault_ns per such page later, and the QP's later send WRs wait behind it (RC
 *     resends from the NAKed PSN); with rnr_retry 0 it fails (RNR_RETRY_EXC_ERR).
 * The verbs backend moves real bytes and reports real completions, but they become visible
 * at the same virtual times, so both backends make the same protocol decisions.
 *
 * Progress. The protocol's source is blocking code; the destination is reactive. When a
 * side waits and nothing it waits for is visible, the world runs every registered progress
 * function (the other endpoint in the same process), then advances the clock, then (verbs)
 * blocks on the devices' file descriptors. A wait that can never be satisfied returns 0
 * (timeout) at its deadline; the caller turns that into CAUSE_TIMEOUT naming what it waited
 * for.
 *
 * Errors: functions return 0 / 1 (got something) or a negative errno from the call that
 * failed; completions carry ibv_wc_status values; CM events come from hca_ep_poll_event.
 * The protocol maps them to named causes (vocab/cause.h). Every call is logged to the
 * world's evlog with its side. */
#ifndef MIGBED_TRANSPORT_HCA_H
#define MIGBED_TRANSPORT_HCA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sim/evlog.h"
#include "sim/vclock.h"
#include "vocab/vocab.h"

struct mem;

enum hca_backend_kind { HCA_BACKEND_MODEL, HCA_BACKEND_VERBS };

/* Same numbering as enum ibv_wc_status (vocab/vocab.h: VOCAB_WC_STATUS). */
enum hca_wc_status {
#define X(NAME, v, text) HCA_WC_##NAME = (v),
	VOCAB_WC_STATUS(X)
#undef X
	HCA_WC_STATUS_COUNT
};
_Static_assert(HCA_WC_STATUS_COUNT == VOCAB_WC_STATUS_COUNT, "VOCAB_WC_STATUS is dense");
/* ibv_wc_status_str()'s text ("remote access error"), and a token ("REM_ACCESS_ERR"). */
static inline const char *hca_wc_status_str(int status) { return vocab_wc_status_text(status); }
static inline const char *hca_wc_status_name(int status) { return vocab_wc_status_name(status); }

enum hca_wc_opcode { HCA_WC_OP_SEND = 0, HCA_WC_OP_RDMA_WRITE = 1, HCA_WC_OP_RECV = 128 };
/* HCA_CQ_ANY (hca_poll, hca_wait only): the two CQs read as one, as QEMU <= 6.1 polled its one
 * shared CQ: the earlier completion of either (the send CQ's on a tie); wc.opcode says which. */
enum hca_cq_kind { HCA_CQ_SEND = 0, HCA_CQ_RECV = 1, HCA_CQ_ANY = 2 };
enum hca_send_opcode { HCA_WR_SEND, HCA_WR_RDMA_WRITE };

/* Same bits as enum ibv_access_flags. */
#define HCA_ACCESS_LOCAL_WRITE  0x1
#define HCA_ACCESS_REMOTE_WRITE 0x2
#define HCA_ACCESS_REMOTE_READ  0x4
/* IBV_ACCESS_ON_DEMAND: nothing pinned at registration; the device faults pages in on first
 * access (an RDMA WRITE to a page not yet present is RNR NAKed while it does). The model
 * simulates it; the verbs backend refuses it with -EOPNOTSUPP (docs/profiles.md, 'ODP
 * destination memory'). */
#define HCA_ACCESS_ON_DEMAND    0x40

struct hca_wc {
	uint64_t wr_id;
	int status;            /* enum hca_wc_status */
	int opcode;            /* enum hca_wc_opcode; undefined when status != SUCCESS (as verbs) */
	uint32_t byte_len;     /* RECV: bytes received */
	uint32_t vendor_err;
	uint64_t t_ns;         /* virtual time at which the completion became visible */
};

/* CM events, same numbering as enum rdma_cm_event_type (vocab/vocab.h: VOCAB_CM_EVENT). */
enum hca_cm_event_type {
#define X(NAME, v, tok) HCA_CM_##NAME = (v),
	VOCAB_CM_EVENT(X)
#undef X
	HCA_CM_EVENT_COUNT
};
_Static_assert(HCA_CM_EVENT_COUNT == VOCAB_CM_EVENT_COUNT, "VOCAB_CM_EVENT is dense");
static inline const char *hca_cm_event_name(int type) { return vocab_cm_event_name(type); }

#define HCA_PDATA_MAX 196      /* rdma_cm delivers up to 56 (REQ) / 196 (REP) bytes */
struct hca_cm_event {
	int type;              /* enum hca_cm_event_type */
	int status;
	uint8_t pdata[HCA_PDATA_MAX];
	uint8_t pdata_len;
};

struct hca_qp_caps {           /* QEMU: 512 / 3 / 1 / 1, CQs of 1536 */
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t cq_entries;
};

struct hca_conn_params {       /* QEMU connect: initiator_depth 2, retry_count 5, rnr 0 */
	const void *private_data;
	uint8_t private_data_len;
	uint8_t initiator_depth;
	uint8_t responder_resources;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
};

/* A SEND that carries one of the protocol's control messages (docs/protocol.md, 'Control
 * messages'). The seam does not read the wire format: the type names the call's fault site
 * msg.TYPE, and `corrupt` carries out the fault action corrupt on the message in place (msg,
 * len: the WR's bytes; how: enum fault_corrupt), false when there is nothing to change (no
 * payload). */
struct hca_ctl_msg {
	unsigned type;             /* enum vocab_msg_type, < VOCAB_MSG_TYPE_COUNT */
	bool (*corrupt)(uint8_t *msg, uint32_t len, int how);
};

struct hca_send_wr {
	uint64_t wr_id;
	enum hca_send_opcode opcode;
	uint64_t local_addr;       /* one SGE */
	uint32_t length;
	uint32_t lkey;
	uint64_t remote_addr;      /* RDMA WRITE only */
	uint32_t rkey;             /* RDMA WRITE only */
	bool signaled;             /* migbed always signals; unsignaled WRs are rejected (-EINVAL) */
	const struct hca_ctl_msg *ctl; /* SEND: the control message it carries; NULL: none */
};

struct hca_cost {
	uint64_t link_bytes_per_s;  /* default 100 Gb/s = 12.5e9 */
	uint64_t msg_latency_ns;    /* one-way, per message; default 2000 */
	uint64_t wr_overhead_ns;    /* per work request; default 200 */
	uint64_t reg_fixed_ns;      /* per ibv_reg_mr; default 20000 */
	uint64_t reg_per_page_ns;   /* per 4 KiB page registered; default 60 */
	uint64_t dereg_fixed_ns;    /* per ibv_dereg_mr; default 5000 */
	uint64_t odp_fault_ns;      /* per 4 KiB page an ODP MR faults in under an RDMA WRITE
				     * (the requester retrying RNR NAKs meanwhile); default 50000,
				     * an assumption (docs/profiles.md, 'ODP destination memory') */
	/* The rules of docs/model.md. Defaults keep the model as it was: 0 = off, and the
	 * destination pins at the source's per-page cost. */
	uint64_t dst_reg_per_page_ns;       /* destination's ibv_reg_mr per 4 KiB page; default 60 */
	uint64_t dst_zero_fill_per_page_ns; /* destination, on top: per never-touched (zero) guest page
					     * a pinning registration faults in and zero-fills; default 0 */
	uint64_t wait_running_ns;   /* the source's every blocking control wait, guest running; default 0 */
	uint64_t wait_stopped_ns;   /* the same with the guest stopped (the final round); default 0 */
	uint64_t setup_ns;          /* migration setup before the first RAM page (reported in
				     * setup-time); default 0 */
	uint64_t downtime_floor_ns; /* fixed cost at the switchover, guest stopped (device state,
				     * the final sync): part of every downtime; default 0 */
};
void hca_cost_defaults(struct hca_cost *c);

/* Verbs backend options (ignored by the model). */
struct hca_verbs_opts {
	int ack_timeout;            /* rdma_set_option ACK timeout exponent, <0 = leave default */
	bool poll_busy;             /* busy-poll instead of completion channels */
};

typedef struct hca_world hca_world;
typedef struct hca_ep hca_ep;
typedef struct hca_mr hca_mr;
typedef struct hca_listener hca_listener;

/* Called while some side waits: make whatever progress is possible *now* without blocking.
 * Returns >0 if it did something, 0 if not, <0 if it is finished for good. */
typedef int (*hca_progress_fn)(void *arg);

int hca_world_new(enum hca_backend_kind kind, const struct hca_cost *cost,
		  const struct hca_verbs_opts *vopts, evlog *ev, hca_world **out);
void hca_world_free(hca_world *w);
vclock *hca_world_clock(hca_world *w);
evlog *hca_world_evlog(hca_world *w);
enum hca_backend_kind hca_world_kind(const hca_world *w);
/* Verbs only (zero on the model, whose log has the virtual times): the monotonic wall clock
 * (ns) when the first RDMA WRITE was posted and when the last successful WRITE completion was
 * taken, and the WRITEs' count and bytes: the data phase, for scripts/bench-verbs.sh. */
struct hca_write_window {
	uint64_t first_post_ns, last_wc_ns, writes, bytes;
};
struct hca_write_window hca_world_write_window(const hca_world *w);
const char *hca_world_backend_name(const hca_world *w);
int hca_world_add_progress(hca_world *w, hca_progress_fn fn, void *arg);
/* The world's cost model (read only). */
const struct hca_cost *hca_world_cost(const hca_world *w);
/* Let d_ns of modelled CPU or scheduling time pass on the clock, unlogged (a cost rule of
 * docs/model.md; the caller logs what it charges where that helps). Nothing when 0. */
void hca_spend(hca_world *w, uint64_t d_ns);

/* ---- the fault hook (docs/faults.md) ----------------------------------------------------
 * The seam asks the world's hook at every fallible call, identically on both backends: the
 * call's fault sites (vocab/vocab.h; distinct, most specific first: a READY SEND is
 * msg.ready, post_send.send, post_send), its side and the virtual time. The hook counts the
 * call (under each site) and answers false (go on), or true with what to do: an action of
 * VOCAB_FAULT_ACTION with its argument or delay, the site and call number it fired on, and
 * the action's text for the log. The seam carries it out and logs it (hca_fault.h says how);
 * a control message's corruption is the protocol's own (struct hca_ctl_msg); `die` kills the
 * process. The hook must not call back into the seam. faults/fault_hook.h answers it from a
 * fault plan; whoever builds the run (run/) wires the two. */
#define HCA_FAULT_TEXT_MAX 64
struct hca_fault_answer {
	enum fault_action action;
	int arg;                   /* errno value, enum hca_wc_status, enum hca_cm_event_type, enum fault_corrupt */
	uint64_t delay_ns;         /* delay */
	enum fault_site site;      /* the site it fired on (one of the call's) */
	uint64_t call;             /* the call's number under (site, side), 1-based */
	char text[HCA_FAULT_TEXT_MAX]; /* the action as a rule spells it: "errno(ENOMEM)", "delay(5ms)" */
};
struct hca_fault_hook {
	bool (*check)(void *ctx, const enum fault_site *sites, size_t n_sites, enum vocab_side side,
		      uint64_t now_ns, struct hca_fault_answer *a);
	void *ctx;
};
/* From now on ask h (copied; ctx is borrowed and must outlive the world). NULL, or a NULL
 * check: no hook, no call is asked or counted. */
void hca_world_set_fault_hook(hca_world *w, const struct hca_fault_hook *h);
/* One allocation of migbed's own on `side`, the `alloc` fault site: 0 to go on, or the
 * injected -errno, which the caller handles as the allocation's failure (no allocation is
 * made). Call it just before the allocation it stands for. */
int hca_fault_alloc(hca_world *w, enum vocab_side side);
/* Outstanding verbs objects (ep, mr, listener) of the world: 0 after a clean teardown. */
uint64_t hca_world_live_objects(const hca_world *w);
/* The model: RDMA WRITEs that an MR let through but that did not land inside one RAM block of
 * the receiver's guest (outside every block, or across a block's edge): 0 in a sound run (the
 * protocol writes guest pages only, a chunk never crosses a block's end). Counted, not
 * prevented: the write's effect is the model's as before. */
uint64_t hca_world_stray_writes(const hca_world *w);

/* ---- connection management (rdma_cm-like) ---------------------------------------------
 * Addresses: model "NAME" (any token, e.g. "model:1"); verbs "IP:PORT" plus an optional
 * device restriction ("198.18.0.1:29200"). side: the migration side the endpoint plays (its
 * log lines, its fault calls); another value is -EINVAL. */
int hca_listen(hca_world *w, enum vocab_side side, const char *addr, hca_listener **out);
/* Nonblocking: 1 and a new endpoint (QP not yet created) + the request's private data;
 * 0 if no request pending; <0 errno. */
int hca_listener_poll(hca_listener *l, hca_ep **ep, struct hca_cm_event *req);
/* Blocking form with progress and a virtual/wall deadline: 1 got, 0 timeout, <0 errno. */
int hca_listener_wait(hca_listener *l, uint64_t timeout_ns, hca_ep **ep,
		      struct hca_cm_event *req);
void hca_listener_close(hca_listener *l);

/* Active side: resolve address and route (verbs: rdma_resolve_addr/route). */
int hca_ep_create(hca_world *w, enum vocab_side side, const char *addr, hca_ep **out);
/* PD, send CQ and recv CQ (each with a completion channel), RC QP. The device may grant
 * deeper queues than asked for (rxe: the next 2^k-1, 1023 for 512; the model does the same):
 * hca_post_send / hca_post_recv refuse with -ENOMEM only past the granted depth. */
int hca_ep_setup(hca_ep *ep, const struct hca_qp_caps *caps);
/* The granted queue depths once set up (ibv_create_qp's cap read back), else NULL. */
const struct hca_qp_caps *hca_ep_caps(const hca_ep *ep);
/* Blocking connect: 0 on ESTABLISHED with the peer's private data in *reply; -ECONNREFUSED
 * (REJECTED), -ETIMEDOUT, -ECONNRESET (DISCONNECTED), -EHOSTUNREACH, or another -errno. */
int hca_connect(hca_ep *ep, const struct hca_conn_params *p, uint64_t timeout_ns,
		struct hca_cm_event *reply);
/* Passive side: accept; the ESTABLISHED event arrives through hca_ep_poll_event. */
int hca_accept(hca_ep *ep, const struct hca_conn_params *p);
int hca_reject(hca_ep *ep);
/* Nonblocking: 1 and *ev set (ESTABLISHED, DISCONNECTED, DEVICE_REMOVAL, ...), 0 none. */
int hca_ep_poll_event(hca_ep *ep, struct hca_cm_event *ev);
int hca_disconnect(hca_ep *ep);
/* Destroys QP, CQs, channels, PD and id. MRs must have been deregistered (asserted). */
void hca_ep_destroy(hca_ep *ep);
enum vocab_side hca_ep_side(const hca_ep *ep);
/* The world the endpoint belongs to. */
hca_world *hca_ep_world(hca_ep *ep);
/* Tell the model which guest memory backs addresses on this endpoint's side (STAMP
 * memories have synthetic addresses). The verbs backend ignores it. */
void hca_ep_map_guest(hca_ep *ep, struct mem *m);
/* Device name ("model0", "rxe0") once set up. */
const char *hca_ep_device(const hca_ep *ep);

/* ---- memory registration -------------------------------------------------------------- */
int hca_reg_mr(hca_ep *ep, uint64_t addr, uint64_t len, int access, hca_mr **out);
int hca_dereg_mr(hca_mr *mr);
/* ibv_advise_mr(IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH) over the whole
 * MR, as QEMU calls it right after an ODP registration: on return every page is present (no
 * RNR on a later WRITE). Charges reg_per_page_ns per 4 KiB page. 0; -EINVAL for an MR not
 * registered with HCA_ACCESS_ON_DEMAND; -EOPNOTSUPP on verbs. No fault site: QEMU ignores
 * its errors. */
int hca_advise_mr(hca_mr *mr);
uint32_t hca_mr_lkey(const hca_mr *mr);
uint32_t hca_mr_rkey(const hca_mr *mr);
uint64_t hca_mr_addr(const hca_mr *mr);
uint64_t hca_mr_len(const hca_mr *mr);

/* ---- data path ------------------------------------------------------------------------- */
/* 0, -ENOMEM (queue full), -EINVAL, or another -errno. */
int hca_post_recv(hca_ep *ep, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey);
int hca_post_send(hca_ep *ep, const struct hca_send_wr *wr);
/* Nonblocking: 1 and *wc (visible at the current virtual time), 0 none, <0 errno. */
int hca_poll(hca_ep *ep, enum hca_cq_kind cq, struct hca_wc *wc);
/* Wait up to timeout_ns (virtual time on the model; virtual *and* a wall-clock bound on
 * verbs) for a completion on cq: 1 and *wc; 0 timeout; -ECONNRESET if the connection got
 * DISCONNECTED, -ENODEV on DEVICE_REMOVAL (the event stays queued for hca_ep_poll_event
 * too). */
int hca_wait(hca_ep *ep, enum hca_cq_kind cq, uint64_t timeout_ns, struct hca_wc *wc);
/* ibv_modify_qp(IBV_QPS_ERR): every outstanding WR is flushed (WR_FLUSH_ERR). */
int hca_qp_to_error(hca_ep *ep);
/* Let virtual time pass (rate limiting): runs progress functions as time moves. */
void hca_sleep(hca_world *w, uint64_t d_ns);
/* Run the progress functions; when none makes progress, wait (verbs: block on the devices,
 * bounded by timeout_ns of wall time; model: advance virtual time to the next event, at
 * most timeout_ns). 1: something happened, 0: nothing within timeout_ns. */
int hca_world_wait(hca_world *w, uint64_t timeout_ns);
/* Model backend: let one side pin at most `bytes` (0: no limit), counted like the kernel's
 * RLIMIT_MEMLOCK accounting (every MR, overlaps included, page granular); a registration
 * over it fails with -ENOMEM. Real verbs use the real limit (migbed dest --dst-memlock). */
void hca_world_set_memlock(hca_world *w, enum vocab_side side, uint64_t bytes);
uint64_t hca_world_memlock(const hca_world *w, enum vocab_side side);
/* Number of posted send WRs whose completions have not been polled yet. */
uint32_t hca_ep_send_outstanding(const hca_ep *ep);

#endif
