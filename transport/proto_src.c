/* SPDX-License-Identifier: MIT */
/* proto_src - the source side of QEMU's RDMA migration protocol (see proto.h). */
#include "transport/proto_internal.h"
#include "sim/prng.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRC VOCAB_SIDE_SRC                 /* this file's side */
#define SRC_LOG vocab_side_token(SRC)       /* as the event log prints it */
#define ENOMEM_RETRY_MAX 1024

struct src_block {
	uint64_t addr;              /* local host VA */
	uint64_t offset;            /* local ram_addr */
	uint64_t length;
	uint64_t nb_chunks;
	uint64_t remote_addr;       /* destination host VA of the block */
	uint64_t remote_offset;     /* destination ram_addr of the block */
	uint32_t remote_rkey;       /* pin-all */
	uint32_t *rkeys;            /* per source chunk */
	uint8_t *rkey_valid;
	uint8_t *transit;
	hca_mr **chunk_mr;          /* local per-chunk MRs (dynamic mode) */
	hca_mr *block_mr;           /* pin-all */
};

struct merge {
	bool active;
	size_t block;
	uint64_t off;               /* byte offset in the block */
	uint64_t len;
	uint64_t chunk;
};

struct proto_src {
	hca_world *w;
	mem *m;
	struct proto_opts o;
	hca_ep *ep;
	struct ctl ctl;
	bool connected, ready_expected, received_error, pin_all;
	size_t n_blocks;
	struct src_block *blocks;
	struct merge mg;
	uint64_t outstanding;
	struct stream_buf out;      /* pending QEMU FILE bytes */
	struct stream_buf filtered; /* out after o.stream_out_filter */
	struct proto_stats st;
	struct cause_ctx cx;
	const struct proto_profile *prof;
	/* one shared CQ (QEMU <= 6.1): a RECV dropped while waiting for another wr_id, per slot */
	struct dropped { bool active; uint64_t want; uint64_t t_ns; } dropped[WIRE_SLOTS];
	/* QEMU <= 8.1's save_page: the first polling error it printed and went on from */
	struct cause_ctx swallowed;
	bool swallowing;            /* proto_src_poll handles a failed completion: swallow it */
	uint32_t file_repeat;       /* the QEMU FILE header's repeat (QEMU <= 8.1: stack bytes) */
	uint64_t deadline_at_ns;    /* the whole migration's bound (o.deadline_ns after connect), 0 = none */
	bool guest_stopped;         /* the final round: blocking waits cost wait_stopped_ns */
	bool stopped_hung;          /* it stopped where QEMU would wait forever, whatever cx names */
};

/* The side stopped (cx just recorded) after QEMU <= 8.1's save_page swallowed an earlier
 * polling error: that error is the cause, at its own time; where the side stopped is told. */
static void merge_swallowed(proto_src *s)
{
	if (!s->swallowed.cause)
		return;
	/* the swallowed error is the cause, but this side stopped in a wait QEMU would never leave:
	 * it sends the peer nothing then (proto_src_free), as QEMU, still waiting, would not */
	s->stopped_hung = proto_cause_is_hang(s->cx.cause);
	char later[CAUSE_DETAIL_MAX];
	snprintf(later, sizeof later, "%s", s->cx.detail);
	char all[3 * CAUSE_DETAIL_MAX];
	snprintf(all, sizeof all, "%s; %s went on and stopped later at %s: %s", s->swallowed.detail, s->prof->name,
		 cause_name(s->cx.cause), later);
	size_t n = strnlen(all, sizeof s->cx.detail - 1);   /* a long detail is cut */
	memcpy(s->cx.detail, all, n);
	s->cx.detail[n] = '\0';
	s->cx.cause = s->swallowed.cause;
	s->cx.t_ns = s->swallowed.t_ns;
	s->swallowed.cause = 0;
}

static int vfail(proto_src *s, uint64_t t_ns, int cause, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static int vfail(proto_src *s, uint64_t t_ns, int cause, const char *fmt, va_list ap)
{
	if (s->swallowing && s->cx.cause == 0) {
		/* QEMU <= 8.1's save_page: the polling error is printed, its `ret` shadowed, and the
		 * migration goes on (fixed in 8.2 by "Fix save_page method to fail on polling error");
		 * the first one swallowed is the one kept */
		struct cause_ctx *w = &s->swallowed;
		if (w->cause)
			return 0;
		int n = vsnprintf(w->detail, sizeof w->detail, fmt, ap);
		if (n >= 0 && (size_t)n < sizeof w->detail)
			snprintf(w->detail + n, sizeof w->detail - (size_t)n,
				 " (%s's save_page printed this polling error and went on)", s->prof->name);
		w->cause = cause_checked(cause, w->detail, sizeof w->detail);
		w->t_ns = t_ns;
		evlog_emit(hca_world_evlog(s->w), SRC_LOG, "poll_error_swallowed", "cause=%s impl=%s",
			   cause_name(w->cause), s->prof->name);
		return 0;
	}
	if (s->cx.cause == 0) {
		vsnprintf(s->cx.detail, sizeof s->cx.detail, fmt, ap);
		s->cx.cause = cause_checked(cause, s->cx.detail, sizeof s->cx.detail);
		s->cx.t_ns = t_ns;
		merge_swallowed(s);
		evlog_emit(hca_world_evlog(s->w), SRC_LOG, "fail", "cause=%s", cause_name(s->cx.cause));
		/* the cause recorded, the swallowed one if any: a caller sees rc == -cause (the
		 * hostile_dst fuzzer: QEMU_HANG returned with QP_ERROR recorded) */
		return -s->cx.cause;
	}
	return -cause_checked(cause, NULL, 0);
}

static int fail(proto_src *s, int cause, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(proto_src *s, int cause, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vfail(s, vclock_now_ns(hca_world_clock(s->w)), cause, fmt, ap);
	va_end(ap);
	return rc;
}

/* A failure a completion reports happened when the completion did, which can be earlier than
 * the moment this side polled it (finding F2, docs/faults.md): the judge compares the times. */
static int fail_wc(proto_src *s, const struct hca_wc *wc, int cause, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail_wc(proto_src *s, const struct hca_wc *wc, int cause, const char *fmt, ...)
{
	uint64_t now_ns = vclock_now_ns(hca_world_clock(s->w));
	va_list ap;
	va_start(ap, fmt);
	int rc = vfail(s, wc->t_ns && wc->t_ns < now_ns ? wc->t_ns : now_ns, cause, fmt, ap);
	va_end(ap);
	return rc;
}

/* Stamp the time of a cause recorded through ctl helpers. */
static int noted(proto_src *s, int rc)
{
	if (rc < 0 && s->cx.t_ns == 0) {
		s->cx.t_ns = vclock_now_ns(hca_world_clock(s->w));
		merge_swallowed(s);
		evlog_emit(hca_world_evlog(s->w), SRC_LOG, "fail", "cause=%s", cause_name(s->cx.cause));
		if (s->cx.cause)
			rc = -s->cx.cause;   /* as vfail: the swallowed cause when there was one */
	}
	return rc;
}

static int check_alive(proto_src *s)
{
	return s->cx.cause ? -s->cx.cause : 0;
}

/* ---- setup / teardown ---------------------------------------------------------------------- */

static int blocks_init(proto_src *s)
{
	size_t n = mem_n_blocks(s->m);
	s->blocks = calloc(n, sizeof *s->blocks);
	if (!s->blocks)
		return -ENOMEM;
	s->n_blocks = n;
	uint64_t off = 0;
	for (size_t b = 0; b < n; b++) {
		struct src_block *sb = &s->blocks[b];
		sb->addr = mem_block_addr(s->m, b);
		sb->length = mem_block_bytes(s->m, b);
		sb->offset = off;
		off += (sb->length + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
		sb->nb_chunks = wire_nb_chunks(sb->length, s->o.chunk_shift);
		sb->rkeys = calloc(sb->nb_chunks, sizeof *sb->rkeys);
		sb->rkey_valid = calloc(sb->nb_chunks, 1);
		sb->transit = calloc(sb->nb_chunks, 1);
		sb->chunk_mr = calloc(sb->nb_chunks, sizeof *sb->chunk_mr);
		if (!sb->rkeys || !sb->rkey_valid || !sb->transit || !sb->chunk_mr)
			return -ENOMEM;
	}
	return 0;
}

int proto_src_new(hca_world *w, mem *m, const struct proto_opts *o, proto_src **out)
{
	if (!w || !m || !o || o->chunk_shift < WIRE_CHUNK_SHIFT_MIN || o->chunk_shift > WIRE_CHUNK_SHIFT_MAX)
		return -EINVAL;
	proto_src *s = calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->w = w;
	s->m = m;
	s->o = *o;
	s->prof = proto_profile(o->impl);
	s->cx.side = SRC;
	int rc = blocks_init(s);
	if (rc) {
		proto_src_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static void release_mrs(proto_src *s)
{
	for (size_t b = 0; b < s->n_blocks; b++) {
		struct src_block *sb = &s->blocks[b];
		for (uint64_t k = 0; sb->chunk_mr && k < sb->nb_chunks; k++)
			if (sb->chunk_mr[k])
				hca_dereg_mr(sb->chunk_mr[k]);
		if (sb->block_mr)
			hca_dereg_mr(sb->block_mr);
		free(sb->rkeys);
		free(sb->rkey_valid);
		free(sb->transit);
		free(sb->chunk_mr);
	}
	free(s->blocks);
	s->blocks = NULL;
}

/* On failure: ERROR to the peer (QEMU's "Early error. Sending error."), bounded wait. */
static void send_error(proto_src *s)
{
	struct cause_ctx tmp = { 0 };
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "send_error", "cause=%s", cause_name(s->cx.cause));
	if (ctl_post_send(&s->ctl, WIRE_ERROR, 1, NULL, 0, &tmp) != 0)
		return;
	/* every send WR still in the queue completes before ours (RC completes in posting order):
	 * at most the granted send-queue depth, ours included */
	uint32_t bound = hca_ep_send_outstanding(s->ep);
	struct hca_wc wc;
	for (uint32_t i = 0; i < bound; i++) {
		int rc = hca_wait(s->ep, HCA_CQ_SEND, s->o.wait_timeout_ns / 10, &wc);
		if (rc <= 0 || wc.wr_id == WIRE_WRID_SEND_CONTROL)
			return;
	}
}

void proto_src_free(proto_src *s)
{
	if (!s)
		return;
	if (s->ep) {
		if (s->connected && s->cx.cause && !s->received_error && !proto_cause_is_hang(s->cx.cause) &&
		    !s->stopped_hung)
			send_error(s);
		if (s->connected)
			hca_disconnect(s->ep);
	}
	release_mrs(s);
	if (s->ep) {
		ctl_fini(&s->ctl);
		hca_ep_destroy(s->ep);
	}
	stream_buf_free(&s->out);
	stream_buf_free(&s->filtered);
	free(s);
}

/* ---- completions ------------------------------------------------------------------------- */

/* An RNR NAK on an RDMA WRITE: the responder was not ready for it (QEMU's field failure F2). */
#define RNR_WRITE_NOTE "; the destination was not ready for the WRITE (an ODP page not faulted in yet?)"

/* One send-CQ completion: RDMA WRITEs update the per-chunk transit bookkeeping. */
static int on_send_wc(proto_src *s, const struct hca_wc *wc)
{
	uint32_t type = wire_wrid_type(wc->wr_id);
	if (type == WIRE_WRID_RDMA_WRITE) {
		uint32_t b = wire_wrid_block(wc->wr_id);
		uint64_t k = wire_wrid_chunk(wc->wr_id);
		if (b >= s->n_blocks || k >= s->blocks[b].nb_chunks)
			return fail(s, CAUSE_INTERNAL, "write completion with bad wr_id 0x%llx",
				    (unsigned long long)wc->wr_id);
		assert(s->outstanding > 0);
		s->outstanding--;
		s->blocks[b].transit[k] = 0;
		if (wc->status != HCA_WC_SUCCESS)
			return fail_wc(s, wc, ctl_status_cause(wc->status, CAUSE_WRITE_COMPLETION_ERROR),
				    "RDMA WRITE block=%s chunk=%llu rkey=0x%x status=%s (%s) (source chunk size %lluM)%s",
				    mem_block_name(s->m, b), (unsigned long long)k,
				    s->pin_all ? s->blocks[b].remote_rkey : s->blocks[b].rkeys[k],
				    hca_wc_status_name(wc->status), hca_wc_status_str(wc->status),
				    (unsigned long long)(1ull << s->o.chunk_shift) >> 20,
				    wc->status == HCA_WC_RNR_RETRY_EXC_ERR ? RNR_WRITE_NOTE : "");
		return 0;
	}
	if (wc->wr_id != WIRE_WRID_SEND_CONTROL)
		return fail_wc(s, wc, CAUSE_INTERNAL, "send completion with wr_id 0x%llx, which was never posted",
			       (unsigned long long)wc->wr_id);
	if (wc->status != HCA_WC_SUCCESS)
		return fail_wc(s, wc, ctl_status_cause(wc->status, CAUSE_CONTROL_SEND_ERROR),
			    "rdma migration: send polling control error: status=%s (%s)",
			    hca_wc_status_name(wc->status), hca_wc_status_str(wc->status));
	return 0;
}

static int own_send_failure(proto_src *s);

/* The CQ a read of cq takes from: cq, or both as one for a profile with one shared CQ. */
static enum hca_cq_kind cq_of(const proto_src *s, enum hca_cq_kind cq)
{
	return s->prof->shared_cq ? HCA_CQ_ANY : cq;
}

/* QEMU <= 6.1: block_for_wrid took this RECV off the shared CQ while it waited for `want`, and
 * dropped it (its trace: "A Wanted wrid ... but got ..."). Waiting for it later never ends. */
static void note_dropped(proto_src *s, const struct hca_wc *wc, uint64_t want)
{
	enum wire_slot slot = (enum wire_slot)(wc->wr_id - CTL_WRID_RECV(0));
	if (!s->dropped[slot].active)
		s->dropped[slot] = (struct dropped){ .active = true, .want = want, .t_ns = wc->t_ns };
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "wrid_dropped", "want=%llu got=%llu impl=%s",
		   (unsigned long long)want, (unsigned long long)wc->wr_id, s->prof->name);
}

/* A wait for the RECV of slot, which the shared CQ dropped before: QEMU would wait forever. */
static int fail_dropped(proto_src *s, enum wire_slot slot, const char *what)
{
	const struct dropped *dr = &s->dropped[slot];
	char want[32], got[32];
	return fail(s, CAUSE_COMPLETION_DROPPED,
		    "%s would wait here forever for %s (wr_id %s): it was taken off the one CQ and dropped at "
		    "%llu us while waiting for %s (\"A Wanted wrid %s but got %s\")",
		    s->prof->name, what, proto_wrid_str(CTL_WRID_RECV(slot), got, sizeof got),
		    (unsigned long long)(dr->t_ns / 1000), proto_wrid_str(dr->want, want, sizeof want), want, got);
}

/* One RECV completion seen between exchanges (QEMU's qemu_rdma_save_page polls the recv CQ
 * after every page), or taken off a shared CQ by a wait for `want` (0: between pages): the
 * READY the next exchange would wait for is consumed here; a failed or flushed RECV fails the
 * source now, not at its next control message; any other is dropped (remembered when a wait
 * took it: waiting for it later is COMPLETION_DROPPED). QEMU takes whatever arrives in the
 * READY slot for READY, an ERROR included, and so does a side playing QEMU (error_as_ready);
 * migbed's own names the peer's ERROR (PEER_ERROR) instead (docs/protocol.md, 'Deliberate
 * differences'). */
static int on_recv_between(proto_src *s, const struct hca_wc *wc, uint64_t want)
{
	int rc;
	if (!CTL_WRID_IS_RECV(wc->wr_id))
		return fail_wc(s, wc, CAUSE_INTERNAL, "recv completion with wr_id 0x%llx, which was never posted",
			       (unsigned long long)wc->wr_id);
	if (wc->status == HCA_WC_WR_FLUSH_ERR && (rc = own_send_failure(s)) != 0)
		return rc;
	if (wc->status != HCA_WC_SUCCESS)
		return fail_wc(s, wc, ctl_status_cause(wc->status, CAUSE_CONTROL_RECV_ERROR),
			       "rdma migration: polling error: recv completion status=%s (%s)",
			       hca_wc_status_name(wc->status), hca_wc_status_str(wc->status));
	if (!s->ready_expected || wc->wr_id != CTL_WRID_RECV(WIRE_SLOT_READY)) {
		s->st.wrid_misses++;          /* nothing waits for it: dropped, as QEMU does */
		if (want)                    /* a wait took it off the one shared CQ */
			note_dropped(s, wc, want);
		return 0;
	}
	if (s->prof->error_as_ready) {
		/* QEMU's qemu_rdma_poll clears the READY credit for any RECV it sees here, without
		 * reading it: an ERROR is taken for READY (the failure shows at the next send) */
		evlog_emit(hca_world_evlog(s->w), SRC_LOG, "ready_credit", "how=polled impl=%s", s->prof->name);
		s->ready_expected = false;
		return 0;
	}
	struct wire_hdr h;
	rc = ctl_decode(&s->ctl, WIRE_SLOT_READY, wc->byte_len, WIRE_READY, &h, &s->cx);
	if (rc == -CAUSE_PEER_ERROR)
		s->received_error = true;
	if (rc)
		return noted(s, rc);
	s->ready_expected = false;        /* the next exchange sends at once */
	return 0;
}

static int on_send_between(proto_src *s, const struct hca_wc *wc, uint64_t want)
{
	(void)want;
	return on_send_wc(s, wc);
}

/* One completion polled between pages; a profile that swallows polling errors there (QEMU
 * <= 8.1) records the first failed one aside and goes on (vfail, merge_swallowed). */
static int polled(proto_src *s, const struct hca_wc *wc,
		  int (*handle)(proto_src *, const struct hca_wc *, uint64_t))
{
	s->swallowing = s->prof->swallow_poll_error && wc->status != HCA_WC_SUCCESS;
	int rc = handle(s, wc, 0);
	s->swallowing = false;
	return rc < 0 && s->cx.cause == 0 ? 0 : rc;
}

int proto_src_poll(proto_src *s)
{
	struct hca_wc wc;
	for (int i = 0; i < 8; i++) {     /* at most 3 RECVs are posted */
		int rc = hca_poll(s->ep, HCA_CQ_RECV, &wc);
		if (rc < 0)
			return fail(s, CAUSE_INTERNAL, "ibv_poll_cq failed: %s", strerror(-rc));
		if (rc == 0)
			break;
		if ((rc = polled(s, &wc, on_recv_between)))
			return rc;
	}
	/* every RECV visible now was taken above: the send CQ alone (no time passes in between, so
	 * a shared CQ, which would give them in time order, gives the same) */
	for (int i = 0; i < 4096; i++) {
		int rc = hca_poll(s->ep, HCA_CQ_SEND, &wc);
		if (rc < 0)
			return fail(s, CAUSE_INTERNAL, "ibv_poll_cq failed: %s", strerror(-rc));
		if (rc == 0)
			break;
		if (wire_wrid_type(wc.wr_id) != WIRE_WRID_RDMA_WRITE)
			s->st.wrid_misses++;
		rc = polled(s, &wc, on_send_between);
		if (rc)
			return rc;
	}
	return check_alive(s);
}

/* A RECV was flushed: the QP is in error. If one of this side's own send WRs failed first
 * (its completion is already visible on the send CQ), that failure is the cause, not the
 * flush (finding F2): a side that waits on its recv CQ would otherwise name the consequence. */
static int own_send_failure(proto_src *s)
{
	struct hca_wc wc;
	for (int i = 0; i < 4096; i++) {
		int rc = hca_poll(s->ep, HCA_CQ_SEND, &wc);
		if (rc <= 0)
			return 0;
		if (wc.status == HCA_WC_SUCCESS || wc.status == HCA_WC_WR_FLUSH_ERR) {
			if (wire_wrid_type(wc.wr_id) == WIRE_WRID_RDMA_WRITE)
				(void)on_send_wc(s, &wc);   /* bookkeeping; a flush is no cause of its own */
			continue;
		}
		return on_send_wc(s, &wc);
	}
	return 0;
}

/* The peer disconnected while this side waited on one CQ (finding S4): an error completion of
 * its own already visible on the other CQ (a RECV that completed LOC_LEN_ERR while the wait was
 * for a send completion, or a failed send WR behind a RECV wait) happened before the peer's
 * failure, which was a consequence of this QP entering error; that error is the cause, stamped
 * with its completion's time (F2), not the disconnect. A shared CQ gave every completion to the
 * wait already. Returns 0 when there is none (the disconnect is the cause). */
static int own_error_at_disconnect(proto_src *s, enum hca_cq_kind waited)
{
	if (s->prof->shared_cq)
		return 0;
	if (waited == HCA_CQ_RECV)
		return own_send_failure(s);
	struct hca_wc wc;
	for (int i = 0; i < 8; i++) {     /* at most 3 RECVs are posted */
		if (hca_poll(s->ep, HCA_CQ_RECV, &wc) <= 0)
			return 0;
		if (wc.status != HCA_WC_SUCCESS && wc.status != HCA_WC_WR_FLUSH_ERR)
			return fail_wc(s, &wc, ctl_status_cause(wc.status, CAUSE_CONTROL_RECV_ERROR),
				       "rdma migration: polling error: recv completion status=%s (%s)",
				       hca_wc_status_name(wc.status), hca_wc_status_str(wc.status));
	}
	return 0;
}

/* Block for a completion on cq; `what` names it for the TIMEOUT or disconnect cause. The
 * wait is cut short at the migration's deadline: a destination that answers just within
 * every single wait cannot keep the source migrating forever. */
static int wait_wc(proto_src *s, enum hca_cq_kind cq, struct hca_wc *wc, const char *what)
{
	uint64_t t_ns = s->o.wait_timeout_ns;
	bool by_deadline = false;
	if (s->deadline_at_ns) {
		uint64_t now_ns = vclock_now_ns(hca_world_clock(s->w));
		uint64_t left_ns = now_ns < s->deadline_at_ns ? s->deadline_at_ns - now_ns : 0;
		if (left_ns < t_ns) {
			t_ns = left_ns;
			by_deadline = true;
		}
	}
	int rc = hca_wait(s->ep, cq_of(s, cq), t_ns, wc);
	if (rc == 0 && by_deadline)
		return fail(s, CAUSE_TIMEOUT, "the migration's deadline, %llu ms after connecting, waiting for %s",
			    (unsigned long long)(s->o.deadline_ns / 1000000), what);
	if (rc == 0 && s->prof->qemu)
		return fail(s, CAUSE_QEMU_HANG, "%s would wait here forever for %s (migbed gave up after %llu ms)",
			    s->prof->name, what, (unsigned long long)(s->o.wait_timeout_ns / 1000000));
	if (rc == 0)
		return fail(s, CAUSE_TIMEOUT, "waiting %llu ms for %s",
			    (unsigned long long)(s->o.wait_timeout_ns / 1000000), what);
	int own;
	if (rc == -ECONNRESET && (own = own_error_at_disconnect(s, cq)) != 0)
		return own;
	if (rc < 0)
		return fail(s, ctl_wait_cause(rc), "while waiting for %s: %s", what,
			    rc == -ECONNRESET ? "RDMA_CM_EVENT_DISCONNECTED" : strerror(-rc));
	return 0;
}

static int wait_send_wc(proto_src *s, struct hca_wc *wc, const char *what)
{
	return wait_wc(s, HCA_CQ_SEND, wc, what);
}

/* Wait until the control SEND (wr_id 2000) completes; write completions are processed. */
static int wait_control_sent(proto_src *s, uint32_t type)
{
	char what[64];
	snprintf(what, sizeof what, "the send completion of %s", wire_type_name(type));
	/* RC completes send WRs in posting order: every write in flight, then ours. The bound is
	 * what is outstanding now (the writes + this SEND), not QEMU's requested 512: rxe grants
	 * 1023 for it, and more than 512 writes can be in flight. */
	uint64_t bound = hca_ep_send_outstanding(s->ep);   /* a dropped completion is not counted */
	if (bound < s->outstanding + 1)
		bound = s->outstanding + 1;
	for (uint64_t i = 0; i < bound + WIRE_SLOTS; i++) {   /* + the RECVs a shared CQ gives */
		struct hca_wc wc;
		int rc = wait_send_wc(s, &wc, what);
		if (rc)
			return rc;
		if (wc.opcode == HCA_WC_OP_RECV) {
			if ((rc = on_recv_between(s, &wc, WIRE_WRID_SEND_CONTROL)))
				return rc;
			continue;
		}
		rc = on_send_wc(s, &wc);
		if (rc)
			return rc;
		if (wc.wr_id == WIRE_WRID_SEND_CONTROL)
			return 0;
	}
	return fail(s, CAUSE_INTERNAL, "control send completion never came among %llu completions",
		    (unsigned long long)bound);
}

/* Wait for the RECV of `slot` carrying `want`. Other RECV completions are dropped, as
 * QEMU's block_for_wrid does (counted as misses). */
static int wait_control_recv(proto_src *s, enum wire_slot slot, uint32_t want, struct wire_hdr *h)
{
	char what[64];
	snprintf(what, sizeof what, "%s from the destination", wire_type_name(want));
	if (s->dropped[slot].active)
		return fail_dropped(s, slot, what);
	/* a shared CQ also gives every send completion still to come */
	uint64_t bound = 8 + (s->prof->shared_cq ? s->outstanding + hca_ep_send_outstanding(s->ep) : 0);
	for (uint64_t i = 0; i < bound; i++) {
		struct hca_wc wc;
		int rc = wait_wc(s, HCA_CQ_RECV, &wc, what);
		if (rc)
			return rc;
		if (wc.opcode != HCA_WC_OP_RECV) {     /* one shared CQ: QEMU's qemu_rdma_poll books it */
			if ((rc = on_send_wc(s, &wc)))
				return rc;
			continue;
		}
		if (!CTL_WRID_IS_RECV(wc.wr_id))
			return fail_wc(s, &wc, CAUSE_INTERNAL, "recv completion with wr_id 0x%llx, which was never posted",
				       (unsigned long long)wc.wr_id);
		if (wc.status == HCA_WC_WR_FLUSH_ERR && (rc = own_send_failure(s)) != 0)
			return rc;
		if (wc.status != HCA_WC_SUCCESS)
			return fail_wc(s, &wc, ctl_status_cause(wc.status, CAUSE_CONTROL_RECV_ERROR),
				    "rdma migration: recv polling control error! waiting for %s: status=%s (%s)",
				    what, hca_wc_status_name(wc.status), hca_wc_status_str(wc.status));
		if (wc.wr_id != CTL_WRID_RECV(slot)) {
			if (s->prof->shared_cq) {   /* the READY credit is taken, anything else dropped */
				if ((rc = on_recv_between(s, &wc, CTL_WRID_RECV(slot))))
					return rc;
				continue;
			}
			s->st.wrid_misses++;
			evlog_emit(hca_world_evlog(s->w), SRC_LOG, "wrid_miss", "want=%llu got=%llu",
				   (unsigned long long)CTL_WRID_RECV(slot), (unsigned long long)wc.wr_id);
			continue;
		}
		rc = ctl_decode(&s->ctl, slot, wc.byte_len, want, h, &s->cx);
		if (rc == -CAUSE_PEER_ERROR)
			s->received_error = true;
		return noted(s, rc);
	}
	return fail(s, CAUSE_UNEXPECTED_MESSAGE, "too many unexpected completions while waiting for %s", what);
}

/* The cost of one blocking control wait (docs/model.md, 'Blocking waits'): the migration
 * thread sleeps and is woken when the completion comes; with the guest running it waits
 * behind busy vCPUs. Charged before each of the exchange's waits; 0 (the default): nothing. */
static void charge_wait(proto_src *s)
{
	const struct hca_cost *c = hca_world_cost(s->w);
	hca_spend(s->w, s->guest_stopped ? c->wait_stopped_ns : c->wait_running_ns);
}

void proto_src_set_guest_stopped(proto_src *s, bool stopped) { s->guest_stopped = stopped; }

/* exchange_send (docs/protocol.md, 'Credit discipline'): READY credit, pre-posted response
 * slot, SEND, response. The optional callback runs between the SEND and the response (pin-all
 * local registration). */
static int exchange_send(proto_src *s, uint32_t type, uint32_t repeat, const void *data, uint32_t len,
			 uint32_t resp, struct wire_hdr *rh, int (*cb)(proto_src *))
{
	struct wire_hdr h;
	int rc;
	if (s->ready_expected) {
		charge_wait(s);
		rc = wait_control_recv(s, WIRE_SLOT_READY, WIRE_READY, &h);
		if (rc)
			return rc;
		s->ready_expected = false;
	}
	if (resp && (rc = noted(s, ctl_post_recv(&s->ctl, WIRE_SLOT_DATA, &s->cx))))
		return rc;
	if ((rc = noted(s, ctl_post_recv(&s->ctl, WIRE_SLOT_READY, &s->cx))))
		return rc;
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "ctl_send", "type=%s len=%u repeat=%u",
		   wire_type_token(type), len, repeat);
	if ((rc = noted(s, ctl_post_send(&s->ctl, type, repeat, data, len, &s->cx))))
		return rc;
	charge_wait(s);
	if ((rc = wait_control_sent(s, type)))
		return rc;
	if (cb && (rc = cb(s)))
		return rc;
	if (resp)
		charge_wait(s);
	if (resp && (rc = wait_control_recv(s, WIRE_SLOT_DATA, resp, rh)))
		return rc;
	s->ready_expected = true;
	return 0;
}

/* ---- connection ---------------------------------------------------------------------- */

/* Re-size the per-chunk bookkeeping for another chunk size (before any chunk is used). */
static int blocks_rechunk(proto_src *s, unsigned shift)
{
	for (size_t b = 0; b < s->n_blocks; b++) {
		struct src_block *sb = &s->blocks[b];
		for (uint64_t k = 0; k < sb->nb_chunks; k++)
			assert(!sb->chunk_mr[k] && !sb->transit[k]);
		free(sb->rkeys);
		free(sb->rkey_valid);
		free(sb->transit);
		free(sb->chunk_mr);
		sb->nb_chunks = wire_nb_chunks(sb->length, shift);
		int frc = hca_fault_alloc(s->w, SRC);   /* the `alloc` fault site */
		sb->rkeys = calloc(sb->nb_chunks, sizeof *sb->rkeys);
		sb->rkey_valid = calloc(sb->nb_chunks, 1);
		sb->transit = calloc(sb->nb_chunks, 1);
		sb->chunk_mr = calloc(sb->nb_chunks, sizeof *sb->chunk_mr);
		if (frc || !sb->rkeys || !sb->rkey_valid || !sb->transit || !sb->chunk_mr)
			return fail(s, CAUSE_RESOURCE_EXHAUSTED, "chunk bookkeeping: out of memory");
	}
	s->o.chunk_shift = shift;
	return 0;
}

/* migbed's proposed extension (docs/chunk-size-negotiation.md): the source announced its chunk
 * size; a destination that knows the flag echoes its own, an old one masks the flag. Under
 * pin-all the chunk size only shapes local merging, so nothing needs to agree. */
static int negotiate_chunk(proto_src *s, const struct wire_caps *peer)
{
	bool known = peer->flags & WIRE_CAP_CHUNK_SIZE;
	unsigned theirs = known ? peer->chunk_shift : WIRE_CHUNK_SHIFT_MIN;  /* an old peer: 1M */
	unsigned mine = s->o.chunk_shift;
	/* the peer's shift is not checked yet: a shift of 64 or more is logged as 0 bytes (it was
	 * shifted past 64 bits: undefined; found by fuzz/fuzz_hostile_dst.c) */
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "negotiate", "peer_knows=%d src=%llu dst=%llu", known,
		   1ull << mine, theirs < 64 ? 1ull << theirs : 0ull);
	if (known && (theirs < WIRE_CHUNK_SHIFT_MIN || theirs > WIRE_CHUNK_SHIFT_MAX))
		return fail(s, CAUSE_CONNECT_FAILED, "destination announced an invalid chunk shift %u", theirs);
	unsigned use = mine;
	if (proto_negotiate_chunk(mine, known, theirs, s->pin_all, s->o.refuse_mismatch, &use) < 0)
		return fail(s, CAUSE_CHUNK_SIZE_MISMATCH,
			    "source chunk size %lluM, destination %lluM%s (--on-mismatch refuse)", 1ull << (mine - 20),
			    1ull << (theirs - 20), known ? "" : " (an old destination: it does not announce its size)");
	if (use == mine)
		return 0;
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "chunk_adapt", "from=%llu to=%llu", 1ull << mine, 1ull << use);
	return blocks_rechunk(s, use);
}

static int connect_caps(proto_src *s, struct hca_cm_event *reply)
{
	struct wire_caps caps = { .version = s->o.caps_version, .flags = s->o.pin_all ? WIRE_CAP_PIN_ALL : 0 };
	if (s->o.negotiate) {
		caps.flags |= WIRE_CAP_CHUNK_SIZE;
		caps.chunk_shift = s->o.chunk_shift;
	}
	uint8_t pdata[WIRE_CAPS_EXT_BYTES];
	int n = wire_caps_encode(&caps, pdata, sizeof pdata);
	struct hca_conn_params p = { .private_data = pdata, .private_data_len = (uint8_t)n,
				     .initiator_depth = 2, .retry_count = 5, .rnr_retry_count = s->o.rnr_retry };
	int rc = hca_connect(s->ep, &p, s->o.wait_timeout_ns, reply);
	if (rc == -ECONNREFUSED)
		return fail(s, CAUSE_CONNECT_REJECTED, "RDMA ERROR: connecting to destination! (rejected)");
	if (rc == -ETIMEDOUT)
		return fail(s, CAUSE_TIMEOUT, "waiting %llu ms for RDMA_CM_EVENT_ESTABLISHED",
			    (unsigned long long)(s->o.wait_timeout_ns / 1000000));
	if (rc == -ECONNRESET)   /* the destination failed and disconnected first: its cause says why */
		return fail(s, CAUSE_PEER_DISCONNECTED,
			    "RDMA ERROR: connecting to destination! (RDMA_CM_EVENT_DISCONNECTED)");
	if (rc)
		return fail(s, CAUSE_CONNECT_FAILED, "RDMA ERROR: connecting to destination! (%s)", strerror(-rc));
	return 0;
}

int proto_src_connect(proto_src *s, const char *addr)
{
	int rc = hca_ep_create(s->w, SRC, addr, &s->ep);
	if (rc)
		return fail(s, CAUSE_CONNECT_FAILED, "could not resolve address %s: %s", addr, strerror(-rc));
	hca_ep_map_guest(s->ep, s->m);
	struct hca_qp_caps caps = { .max_send_wr = WIRE_SIGNALED_SEND_MAX, .max_recv_wr = 3,
				    .max_send_sge = 1, .max_recv_sge = 1, .cq_entries = 3 * WIRE_SIGNALED_SEND_MAX };
	rc = hca_ep_setup(s->ep, &caps);
	if (rc)
		return fail(s, CAUSE_DEVICE_SETUP_FAILED, "rdma migration: error allocating qp! (%s)", strerror(-rc));
	if ((rc = noted(s, ctl_init(&s->ctl, s->ep, SRC, s->prof->qemu, &s->st, &s->cx))))
		return rc;
	if (s->prof->uninit_header) {   /* QEMU <= 8.1: whatever the stack held, one value per run here */
		uint64_t st = s->o.seed ^ UINT64_C(0x51a7c0de), junk = prng_splitmix64(&st);
		s->file_repeat = (uint32_t)junk;
		s->ctl.file_padding = (uint32_t)(junk >> 32);
	}
	if ((rc = noted(s, ctl_post_recv(&s->ctl, WIRE_SLOT_READY, &s->cx))))
		return rc;
	struct hca_cm_event reply;
	if ((rc = connect_caps(s, &reply)))
		return rc;
	s->connected = true;
	if (s->o.deadline_ns) {
		uint64_t now_ns = vclock_now_ns(hca_world_clock(s->w));
		s->deadline_at_ns = now_ns > UINT64_MAX - s->o.deadline_ns ? UINT64_MAX : now_ns + s->o.deadline_ns;
	}
	struct wire_caps peer;
	if (wire_caps_decode(reply.pdata, reply.pdata_len, &peer) < 0)
		return fail(s, CAUSE_CONNECT_FAILED, "destination's private data is not RDMACapabilities (%u bytes)",
			    reply.pdata_len);
	s->pin_all = s->o.pin_all && (peer.flags & WIRE_CAP_PIN_ALL);
	if (s->o.pin_all && !s->pin_all)
		evlog_emit(hca_world_evlog(s->w), SRC_LOG, "warn",
			   "msg=Server_cannot_support_pinning_all_memory:_registering_dynamically");
	if (s->o.negotiate && (rc = negotiate_chunk(s, &peer)))
		return rc;
	s->ready_expected = true;
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "connected", "pin_all=%d chunk=%llu", s->pin_all,
		   (unsigned long long)1 << s->o.chunk_shift);
	return 0;
}

/* ---- the migration stream --------------------------------------------------------------- */

int proto_src_put(proto_src *s, const void *data, size_t len)
{
	int rc = stream_put_bytes(&s->out, data, len);
	return rc ? fail(s, CAUSE_RESOURCE_EXHAUSTED, "stream buffer: %s", strerror(-rc)) : 0;
}

static int post_merged(proto_src *s);

int proto_src_flush(proto_src *s)
{
	int rc = check_alive(s);
	if (rc || (rc = post_merged(s)))
		return rc;
	struct stream_buf *send = &s->out;
	if (s->o.stream_out_filter) {
		s->filtered.len = 0;
		rc = s->o.stream_out_filter(s->o.stream_out_filter_arg, s->out.data, s->out.len, &s->filtered, &s->cx);
		if (rc)
			return noted(s, rc);
		s->out.len = 0;
		send = &s->filtered;
	}
	size_t off = 0;
	while (off < send->len) {
		size_t n = send->len - off;
		if (n > WIRE_QEMU_FILE_MAX)
			n = WIRE_QEMU_FILE_MAX;
		/* repeat 0: QEMU >= 8.2 zeroes the header (<= 8.1 left it uninitialised: file_repeat) */
		rc = exchange_send(s, WIRE_QEMU_FILE, s->file_repeat, send->data + off, (uint32_t)n, 0, NULL, NULL);
		if (rc)
			return rc;
		s->st.file_bytes += n;
		off += n;
	}
	send->len = 0;
	return 0;
}

int proto_src_reg_start(proto_src *s)
{
	uint8_t hook[8] = { 0, 0, 0, 0, 0, 0, 0, STREAM_FLAG_HOOK };
	int rc = proto_src_put(s, hook, sizeof hook);
	return rc ? rc : proto_src_flush(s);
}

int proto_src_scan_wrapped(proto_src *s)
{
	if (!s->prof->flush_on_wrap)
		return 0;
	/* QEMU 8.1.0-8.1.2's find_dirty_block: multifd_send_sync_main (nothing without multifd),
	 * RAM_SAVE_FLAG_MULTIFD_FLUSH, qemu_fflush: a QEMU FILE exchange inside the round */
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "multifd_flush", "repeat=%u impl=%s", s->file_repeat,
		   s->prof->name);
	uint8_t flush[8] = { 0, 0, 0, 0, 0, 0, STREAM_FLAG_MULTIFD_FLUSH >> 8, STREAM_FLAG_MULTIFD_FLUSH & 0xff };
	int rc = proto_src_put(s, flush, sizeof flush);
	return rc ? rc : proto_src_flush(s);
}

/* Wait for any RDMA WRITE completion (transit or full send queue). */
static int wait_one_write(proto_src *s, const char *what)
{
	struct hca_wc wc;
	int rc = wait_send_wc(s, &wc, what);
	for (int i = 0; rc == 0 && wc.opcode == HCA_WC_OP_RECV && i < WIRE_SLOTS; i++) {   /* one shared CQ */
		if ((rc = on_recv_between(s, &wc, wire_wrid_write(0, 0))) == 0)
			rc = wait_send_wc(s, &wc, what);
	}
	if (rc)
		return rc;
	if (wc.opcode == HCA_WC_OP_RECV)
		return fail(s, CAUSE_INTERNAL, "more RECV completions than RECVs posted while waiting for %s", what);
	if (wire_wrid_type(wc.wr_id) != WIRE_WRID_RDMA_WRITE)
		s->st.wrid_misses++;
	return on_send_wc(s, &wc);
}

static int drain(proto_src *s)
{
	int rc = post_merged(s);
	/* each wait consumes one send completion (a write, or another send's ahead of the writes)
	 * or times out: at most the writes plus every other send in flight */
	uint64_t bound = s->outstanding + hca_ep_send_outstanding(s->ep);
	for (uint64_t i = 0; !rc && s->outstanding > 0; i++) {
		if (i >= bound)
			return fail(s, CAUSE_INTERNAL, "%llu RDMA WRITE completions never came (drain)",
				    (unsigned long long)s->outstanding);
		rc = wait_one_write(s, "outstanding RDMA WRITE completions (drain)");
	}
	if (rc)
		return rc;
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "drained", "writes=%llu", (unsigned long long)s->st.rdma_writes);
	return 0;
}

/* ---- RAM blocks (setup round) -------------------------------------------------------------- */

static int pin_all_local(proto_src *s)
{
	for (size_t b = 0; b < s->n_blocks; b++) {
		struct src_block *sb = &s->blocks[b];
		if (sb->block_mr)
			continue;          /* a second setup round: pinned already (QEMU registers once too) */
		/* The source only reads its RAM (the lkey of its WRITEs): migbed registers it with no
		 * access, so the destination cannot write into it. QEMU's qemu_rdma_reg_whole_ram_blocks
		 * registers every block LOCAL_WRITE | REMOTE_WRITE on either side; its profiles keep
		 * that (docs/security.md, 'A hostile destination'). */
		int access = s->prof->qemu ? HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE : 0;
		int rc = hca_reg_mr(s->ep, sb->addr, sb->length, access, &sb->block_mr);
		if (rc)
			return fail(s, CAUSE_SOURCE_REG_FAILED, "cannot get lkey: block=%s bytes=%llu: %s",
				    mem_block_name(s->m, b), (unsigned long long)sb->length, strerror(-rc));
		s->st.registrations++;
		s->st.pinned_bytes += sb->length;
		if (s->st.pinned_bytes > s->st.pinned_peak_bytes)
			s->st.pinned_peak_bytes = s->st.pinned_bytes;
	}
	return 0;
}

static int ram_blocks_exchange(proto_src *s)
{
	struct wire_hdr h;
	int rc = exchange_send(s, WIRE_RAM_BLOCKS_REQUEST, 1, NULL, 0, WIRE_RAM_BLOCKS_RESULT, &h,
			       s->pin_all ? pin_all_local : NULL);
	if (rc)
		return rc;
	size_t n = h.len / WIRE_DEST_BLOCK_BYTES;
	if (h.len % WIRE_DEST_BLOCK_BYTES)
		return fail(s, CAUSE_MESSAGE_MALFORMED, "RAM BLOCKS RESULT of %u bytes is not a multiple of 32", h.len);
	if (n != s->n_blocks)
		return fail(s, CAUSE_RAM_BLOCK_COUNT_MISMATCH,
			    "ram blocks mismatch (Number of blocks %zu vs %zu)", n, s->n_blocks);
	const uint8_t *d = ctl_data(&s->ctl, WIRE_SLOT_DATA);
	for (size_t b = 0; b < n; b++) {
		struct wire_dest_block db;
		wire_dest_block_decode(d + b * WIRE_DEST_BLOCK_BYTES, WIRE_DEST_BLOCK_BYTES, &db);
		struct src_block *sb = &s->blocks[b];
		if (db.length != sb->length)
			return fail(s, CAUSE_RAM_BLOCK_LENGTH_MISMATCH, "Block %s/%zu has a different length %llu vs %llu",
				    mem_block_name(s->m, b), b, (unsigned long long)sb->length,
				    (unsigned long long)db.length);
		sb->remote_addr = db.remote_host_addr;
		sb->remote_offset = db.offset;
		sb->remote_rkey = db.remote_rkey;
	}
	return 0;
}

int proto_src_reg_stop(proto_src *s, bool setup)
{
	int rc = check_alive(s);
	if (rc || (rc = drain(s)))
		return rc;
	if (setup && (rc = ram_blocks_exchange(s)))
		return rc;
	return exchange_send(s, WIRE_REGISTER_FINISHED, 1, NULL, 0, 0, NULL, NULL);
}

/* ---- the write path (docs/protocol.md, 'Write path', 'Registration', 'Zero pages') ------- */

static int compress_chunk(proto_src *s, const struct merge *m)
{
	struct src_block *sb = &s->blocks[m->block];
	struct wire_compress c = { .value = 0, .block_idx = (uint32_t)m->block,
				   .offset = sb->remote_offset + m->off, .length = m->len };
	uint8_t buf[WIRE_COMPRESS_BYTES];
	wire_compress_encode(&c, buf, sizeof buf);
	int rc = exchange_send(s, WIRE_COMPRESS, 1, buf, sizeof buf, 0, NULL, NULL);
	if (!rc)
		s->st.zero_pages += m->len / mem_page_size(s->m);
	return rc;
}

static int local_chunk_mr(proto_src *s, size_t b, uint64_t k)
{
	struct src_block *sb = &s->blocks[b];
	if (sb->chunk_mr[k])
		return 0;
	uint64_t start = wire_chunk_start(sb->addr, k, s->o.chunk_shift);
	uint64_t end = wire_chunk_end(sb->addr, sb->length, k, s->o.chunk_shift);
	/* QEMU's qemu_rdma_register_and_get_keys: the source grants access only to itself
	 * (access 0: an RDMA WRITE only reads its local buffer); the peer cannot write here */
	int rc = hca_reg_mr(s->ep, start, end - start, 0, &sb->chunk_mr[k]);
	if (rc)
		return fail(s, CAUSE_SOURCE_REG_FAILED, "cannot get lkey: block=%s chunk=%llu: %s",
			    mem_block_name(s->m, b), (unsigned long long)k, strerror(-rc));
	s->st.registrations++;
	s->st.pinned_bytes += end - start;
	if (s->st.pinned_bytes > s->st.pinned_peak_bytes)
		s->st.pinned_peak_bytes = s->st.pinned_bytes;
	return 0;
}

static int register_chunk(proto_src *s, const struct merge *m)
{
	struct src_block *sb = &s->blocks[m->block];
	struct wire_register r = { .key = sb->remote_offset + m->off, .current_index = (uint32_t)m->block,
				   .chunks = wire_additional_chunks(m->len, s->o.chunk_shift) };
	uint8_t buf[WIRE_REGISTER_BYTES];
	wire_register_encode(&r, buf, sizeof buf);
	struct wire_hdr h;
	int rc = exchange_send(s, WIRE_REGISTER_REQUEST, 1, buf, sizeof buf, WIRE_REGISTER_RESULT, &h, NULL);
	if (rc)
		return rc;
	if (h.len < WIRE_REGISTER_RESULT_BYTES)
		return fail(s, CAUSE_MESSAGE_MALFORMED, "REGISTER RESULT of %u bytes", h.len);
	struct wire_register_result res;
	wire_register_result_decode(ctl_data(&s->ctl, WIRE_SLOT_DATA), h.len, &res);
	sb->rkeys[m->chunk] = res.rkey;
	sb->rkey_valid[m->chunk] = 1;
	sb->remote_addr = res.host_addr;
	evlog_emit(hca_world_evlog(s->w), SRC_LOG, "registered", "block=%zu chunk=%llu", m->block,
		   (unsigned long long)m->chunk);
	return local_chunk_mr(s, m->block, m->chunk);
}

static int post_write(proto_src *s, const struct merge *m)
{
	struct src_block *sb = &s->blocks[m->block];
	struct hca_send_wr wr = {
		.wr_id = wire_wrid_write((uint32_t)m->block, m->chunk),
		.opcode = HCA_WR_RDMA_WRITE,
		.local_addr = sb->addr + m->off,
		.length = (uint32_t)m->len,
		.lkey = s->pin_all ? hca_mr_lkey(sb->block_mr) : hca_mr_lkey(sb->chunk_mr[m->chunk]),
		.remote_addr = sb->remote_addr + m->off,
		.rkey = s->pin_all ? sb->remote_rkey : sb->rkeys[m->chunk],
		.signaled = true,
	};
	for (int tries = 0; tries < ENOMEM_RETRY_MAX; tries++) {
		int rc = hca_post_send(s->ep, &wr);
		if (rc == 0)
			return 0;
		if (rc != -ENOMEM)
			return fail(s, CAUSE_WRITE_POST_FAILED, "rdma migration: post rdma write failed: %s",
				    strerror(-rc));
		if (s->outstanding == 0)    /* full, yet nothing of ours will ever complete */
			return fail(s, CAUSE_SEND_QUEUE_FULL,
				    "rdma migration: failed to make room in full send queue! (no write outstanding)");
		rc = wait_one_write(s, "room in the full send queue");
		if (rc)
			return rc;
	}
	return fail(s, CAUSE_SEND_QUEUE_FULL, "rdma migration: failed to make room in full send queue!");
}

/* qemu_rdma_write_one: the merged buffer becomes at most one RDMA WRITE. */
static int post_merged(proto_src *s)
{
	if (!s->mg.active)
		return 0;
	struct merge m = s->mg;
	s->mg.active = false;
	struct src_block *sb = &s->blocks[m.block];
	/* each wait consumes one send completion, or times out; a completion the HCA lost (a
	 * dropped one leaves the front end's count, not ours) ends in that wait's TIMEOUT */
	uint64_t fe = hca_ep_send_outstanding(s->ep);
	uint64_t bound = fe > s->outstanding ? fe : s->outstanding;
	for (uint64_t i = 0; sb->transit[m.chunk]; i++) {
		if (i >= bound)
			return fail(s, CAUSE_INTERNAL, "transit bit of chunk %llu never cleared",
				    (unsigned long long)m.chunk);
		int rc = wait_one_write(s, "the previous write to the same chunk");
		if (rc)
			return rc;
	}
	int rc;
	if (!s->pin_all && !sb->rkey_valid[m.chunk]) {
		uint64_t ps = mem_page_size(s->m);
		if (mem_pages_zero(s->m, m.block, m.off / ps, m.len / ps))
			return compress_chunk(s, &m);
		if ((rc = register_chunk(s, &m)))
			return rc;
	} else if (!s->pin_all && (rc = local_chunk_mr(s, m.block, m.chunk))) {
		return rc;
	}
	if ((rc = post_write(s, &m)))
		return rc;
	sb->transit[m.chunk] = 1;
	s->outstanding++;
	if (s->outstanding > s->st.max_writes_in_flight)
		s->st.max_writes_in_flight = s->outstanding;
	s->st.rdma_writes++;
	s->st.rdma_bytes += m.len;
	s->st.normal_pages += m.len / mem_page_size(s->m);
	return 0;
}

int proto_src_save_page(proto_src *s, size_t b, uint64_t page)
{
	int rc = check_alive(s);
	if (rc)
		return rc;
	if (b >= s->n_blocks)
		return fail(s, CAUSE_INTERNAL, "save_page: bad block %zu", b);
	uint64_t ps = mem_page_size(s->m);
	uint64_t off = page * ps;
	uint64_t k = wire_chunk_index(0, off, s->o.chunk_shift);
	struct merge *mg = &s->mg;
	if (mg->active && (mg->block != b || mg->off + mg->len != off || mg->chunk != k)) {
		if ((rc = post_merged(s)))
			return rc;
	}
	if (!mg->active) {
		*mg = (struct merge){ .active = true, .block = b, .off = off, .len = 0, .chunk = k };
	}
	mg->len += ps;
	if (mg->len >= WIRE_MERGE_MAX_BYTES)
		return post_merged(s);
	return 0;
}

uint64_t proto_src_transferred(const proto_src *s)
{
	return s->st.rdma_bytes + s->st.file_bytes + s->out.len;
}

bool proto_src_pin_all(const proto_src *s) { return s->pin_all; }
uint64_t proto_src_chunk_bytes(const proto_src *s) { return UINT64_C(1) << s->o.chunk_shift; }
const struct proto_stats *proto_src_stats(const proto_src *s) { return &s->st; }
const struct cause_ctx *proto_src_cause(const proto_src *s) { return &s->cx; }

int proto_src_fail(proto_src *s, int cause, const char *detail)
{
	return fail(s, cause, "%s", detail);
}

int proto_src_await_peer(proto_src *s)
{
	int rc = check_alive(s);
	if (rc)
		return rc;
	if (s->o.peer_is_qemu) {
		evlog_emit(hca_world_evlog(s->w), SRC_LOG, "peer_unconfirmed", "why=qemu_destination");
		return 0;
	}
	struct hca_wc wc;
	rc = hca_wait(s->ep, HCA_CQ_RECV, s->o.wait_timeout_ns, &wc);
	if (rc == -ECONNRESET) {
		evlog_emit(hca_world_evlog(s->w), SRC_LOG, "peer_confirmed", "how=disconnect");
		s->connected = false;
		hca_disconnect(s->ep);
		return 0;
	}
	if (rc == 0)
		return fail(s, CAUSE_DEST_INCOMPLETE, "the destination neither confirmed (disconnect) nor failed "
			    "within %llu ms after EOF", (unsigned long long)(s->o.wait_timeout_ns / 1000000));
	if (rc < 0)
		return fail(s, ctl_wait_cause(rc), "after EOF: %s", strerror(-rc));
	if (wc.status == HCA_WC_WR_FLUSH_ERR && (rc = own_send_failure(s)) != 0)
		return rc;
	if (wc.status != HCA_WC_SUCCESS)
		return fail_wc(s, &wc, ctl_status_cause(wc.status, CAUSE_CONTROL_RECV_ERROR),
			    "after EOF: recv completion status=%s (%s)", hca_wc_status_name(wc.status),
			    hca_wc_status_str(wc.status));
	struct wire_hdr h;
	enum wire_slot slot = wc.wr_id == CTL_WRID_RECV(WIRE_SLOT_DATA) ? WIRE_SLOT_DATA : WIRE_SLOT_READY;
	rc = ctl_decode(&s->ctl, slot, wc.byte_len, WIRE_ERROR, &h, &s->cx);
	if (rc == 0 && h.type == WIRE_ERROR) {
		s->received_error = true;
		return fail(s, CAUSE_PEER_ERROR, "the destination sent ERROR after EOF (it could not load or verify the migration)");
	}
	return noted(s, rc ? rc : fail(s, CAUSE_UNEXPECTED_MESSAGE, "after EOF: unexpected %s", wire_type_name(h.type)));
}
