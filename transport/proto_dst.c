/* SPDX-License-Identifier: MIT */
/* proto_dst - the destination side of QEMU's RDMA migration protocol, reactive: every call
 * of proto_dst_progress does what can be done now without blocking (see proto.h). */
#include "transport/proto_internal.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DST VOCAB_SIDE_DST                 /* this file's side */
#define DST_LOG vocab_side_token(DST)       /* as the event log prints it */

enum dst_phase {
	D_IDLE,             /* not listening yet */
	D_LISTEN,           /* waiting for a connect request */
	D_ESTABLISHING,     /* accepted, waiting for ESTABLISHED */
	D_NEED_MSG,         /* wants the next message: send READY */
	D_READY_SENT,       /* waiting for READY's send completion */
	D_WAIT_MSG,         /* waiting for a message in slot 0 */
	D_RESP_SENT,        /* waiting for a response's send completion */
	D_ERROR_SENT,       /* failed: waiting (bounded) for the ERROR's send completion */
	D_HUNG,             /* failed as a QEMU that would wait forever: silent, connected */
	D_DONE
};

struct dst_block {
	uint64_t addr, offset, length;
	uint64_t nb_chunks;
	hca_mr **chunk_mr;
	hca_mr *block_mr;
	size_t src_index;          /* position in the source's list */
	bool announced;
};

struct proto_dst {
	hca_world *w;
	mem *m;
	struct proto_opts o;
	hca_listener *l;
	hca_ep *ep;
	struct ctl ctl;
	bool connected, received_error, pin_all, registering, busy;
	enum dst_phase phase;
	enum proto_dst_state state;
	uint64_t error_deadline_ns;
	uint64_t deadline_at_ns;   /* the whole migration's bound (o.deadline_ns after accept), 0 = none */
	size_t n_blocks;
	struct dst_block *blocks;
	size_t *by_src;            /* source block index -> local block */
	size_t n_src;
	stream_parser *sp;
	struct stream_buf filtered;  /* the stream filter's output (QEMU streams) */
	bool verified, device_ok;
	struct proto_stats st;
	struct cause_ctx cx;
	const struct proto_profile *prof;
	/* one shared CQ (QEMU <= 6.1): the message RECV dropped while waiting for a send completion */
	struct { bool active; uint64_t got, t_ns; } dropped;
};

static evlog *ev(proto_dst *d) { return hca_world_evlog(d->w); }
static uint64_t now(proto_dst *d) { return vclock_now_ns(hca_world_clock(d->w)); }

/* Record the first cause, send ERROR (unless the peer's ERROR is the cause), go on failing. */
static int fail(proto_dst *d, int cause, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(proto_dst *d, int cause, const char *fmt, ...)
{
	if (d->cx.cause == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->cx.detail, sizeof d->cx.detail, fmt, ap);
		va_end(ap);
		d->cx.cause = cause_checked(cause, d->cx.detail, sizeof d->cx.detail);
	}
	cause = cause_checked(cause, NULL, 0);
	if (d->cx.t_ns == 0)
		d->cx.t_ns = now(d);
	if (d->state != PROTO_DST_RUNNING)
		return -cause;
	d->state = PROTO_DST_FAILED;
	evlog_emit(ev(d), DST_LOG, "fail", "cause=%s", cause_name(d->cx.cause));
	if (proto_cause_is_hang(d->cx.cause)) {   /* QEMU would still be waiting: no ERROR, no disconnect */
		d->phase = D_HUNG;
		return -cause;
	}
	struct cause_ctx tmp = { 0 };
	if (d->connected && !d->received_error && d->cx.cause != CAUSE_PEER_DISCONNECTED &&
	    ctl_post_send(&d->ctl, WIRE_ERROR, 1, NULL, 0, &tmp) == 0) {
		evlog_emit(ev(d), DST_LOG, "send_error", "cause=%s", cause_name(d->cx.cause));
		d->phase = D_ERROR_SENT;
		d->error_deadline_ns = now(d) + d->o.wait_timeout_ns / 10;
	} else {
		if (d->connected)
			hca_disconnect(d->ep);
		d->phase = D_DONE;
	}
	return -cause;
}

/* A failure a completion reports is stamped with the completion's own time (finding F2,
 * docs/faults.md): call just before fail(). */
static void stamp_wc(proto_dst *d, const struct hca_wc *wc)
{
	if (d->cx.cause == 0 && d->cx.t_ns == 0 && wc->t_ns && wc->t_ns < now(d))
		d->cx.t_ns = wc->t_ns;
}

static int noted(proto_dst *d, int rc)
{
	if (rc < 0)
		return fail(d, d->cx.cause ? d->cx.cause : -rc, "%s", d->cx.detail);
	return rc;
}

int proto_dst_new(hca_world *w, mem *m, const struct proto_opts *o, proto_dst **out)
{
	if (!w || !m || !o || o->chunk_shift < WIRE_CHUNK_SHIFT_MIN || o->chunk_shift > WIRE_CHUNK_SHIFT_MAX)
		return -EINVAL;
	proto_dst *d = calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->w = w;
	d->m = m;
	d->o = *o;
	d->prof = proto_profile(o->impl);
	d->cx.side = DST;
	d->n_blocks = mem_n_blocks(m);
	d->blocks = calloc(d->n_blocks, sizeof *d->blocks);
	d->by_src = calloc(d->n_blocks, sizeof *d->by_src);
	int rc = (!d->blocks || !d->by_src) ? -ENOMEM : stream_parser_new(&d->sp);
	/* The destination lays out its ram_addr space in its own order (last block first), so
	 * the source's translation of ram_addr offsets is exercised. */
	uint64_t off = 0;
	for (size_t i = d->n_blocks; rc == 0 && i-- > 0;) {
		struct dst_block *db = &d->blocks[i];
		db->addr = mem_block_addr(m, i);
		db->length = mem_block_bytes(m, i);
		db->offset = off;
		off += (db->length + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
		db->nb_chunks = wire_nb_chunks(db->length, o->chunk_shift);
		db->chunk_mr = calloc(db->nb_chunks, sizeof *db->chunk_mr);
		if (!db->chunk_mr)
			rc = -ENOMEM;
	}
	if (rc) {
		proto_dst_free(d);
		return rc;
	}
	*out = d;
	return 0;
}

int proto_dst_listen(proto_dst *d, const char *addr)
{
	int rc = hca_listen(d->w, DST, addr, &d->l);
	if (rc)
		return fail(d, CAUSE_ACCEPT_FAILED, "RDMA ERROR: listening on socket! %s: %s", addr, strerror(-rc));
	d->phase = D_LISTEN;
	return 0;
}

void proto_dst_free(proto_dst *d)
{
	if (!d)
		return;
	for (size_t b = 0; d->blocks && b < d->n_blocks; b++) {
		struct dst_block *db = &d->blocks[b];
		for (uint64_t k = 0; db->chunk_mr && k < db->nb_chunks; k++)
			if (db->chunk_mr[k])
				hca_dereg_mr(db->chunk_mr[k]);
		if (db->block_mr)
			hca_dereg_mr(db->block_mr);
		free(db->chunk_mr);
	}
	if (d->ep) {
		if (d->connected && d->phase != D_DONE)
			hca_disconnect(d->ep);
		ctl_fini(&d->ctl);
		hca_ep_destroy(d->ep);
	}
	if (d->l)
		hca_listener_close(d->l);
	stream_parser_free(d->sp);
	stream_buf_free(&d->filtered);
	free(d->blocks);
	free(d->by_src);
	free(d);
}

/* ---- connection ------------------------------------------------------------------------ */

static int accept_request(proto_dst *d, const struct hca_cm_event *req)
{
	struct wire_caps caps;
	if (wire_caps_decode(req->pdata, req->pdata_len, &caps) < 0) {
		hca_reject(d->ep);
		return fail(d, CAUSE_ACCEPT_FAILED, "connect request without RDMACapabilities (%u bytes)", req->pdata_len);
	}
	if (caps.version != WIRE_CAP_VERSION) {
		hca_reject(d->ep);
		return fail(d, CAUSE_VERSION_UNSUPPORTED, "Unknown source RDMA version: %u, bailing...%s", caps.version,
			    !d->prof->qemu ? ""
			    : d->prof->accept_returns_ok
				? " (QEMU <= 8.1 then returns success from accept with nothing set up and crashes, SIGSEGV, at its first READY)"
				: " | RDMA ERROR: Migration initialization failed");
	}
	bool announce = d->o.negotiate && (caps.flags & WIRE_CAP_CHUNK_SIZE);
	caps.flags &= WIRE_CAP_PIN_ALL;          /* mask what this side does not know */
	if (!d->o.pin_all)
		caps.flags &= ~WIRE_CAP_PIN_ALL;
	d->pin_all = caps.flags & WIRE_CAP_PIN_ALL;
	hca_ep_map_guest(d->ep, d->m);
	struct hca_qp_caps qc = { .max_send_wr = WIRE_SIGNALED_SEND_MAX, .max_recv_wr = 3,
				  .max_send_sge = 1, .max_recv_sge = 1, .cq_entries = 3 * WIRE_SIGNALED_SEND_MAX };
	int rc = hca_ep_setup(d->ep, &qc);
	if (rc)
		return fail(d, CAUSE_DEVICE_SETUP_FAILED, "rdma migration: error allocating qp! (%s)", strerror(-rc));
	if ((rc = ctl_init(&d->ctl, d->ep, DST, d->prof->qemu, &d->st, &d->cx)))
		return noted(d, rc);
	uint8_t pdata[WIRE_CAPS_EXT_BYTES];
	struct wire_caps echo = { .version = WIRE_CAP_VERSION, .flags = caps.flags };
	if (announce) {        /* migbed's extension: tell the source our chunk size */
		echo.flags |= WIRE_CAP_CHUNK_SIZE;
		echo.chunk_shift = d->o.chunk_shift;
	}
	int n = wire_caps_encode(&echo, pdata, sizeof pdata);
	struct hca_conn_params p = { .private_data = pdata, .private_data_len = (uint8_t)n,
				     .responder_resources = 2, .rnr_retry_count = d->o.rnr_retry };
	if ((rc = hca_accept(d->ep, &p)))
		return fail(d, CAUSE_ACCEPT_FAILED, "rdma_accept failed: %s", strerror(-rc));
	evlog_emit(ev(d), DST_LOG, "accepted", "pin_all=%d chunk=%llu", d->pin_all,
		   (unsigned long long)1 << d->o.chunk_shift);
	if (d->o.deadline_ns)
		d->deadline_at_ns = now(d) > UINT64_MAX - d->o.deadline_ns ? UINT64_MAX : now(d) + d->o.deadline_ns;
	d->phase = D_ESTABLISHING;
	return 1;
}

static int poll_listener(proto_dst *d)
{
	struct hca_cm_event req;
	int rc = hca_listener_poll(d->l, &d->ep, &req);
	if (rc < 0)
		return fail(d, CAUSE_ACCEPT_FAILED, "rdma_get_cm_event: %s", strerror(-rc));
	if (rc == 0)
		return 0;
	return accept_request(d, &req);
}

/* CM events: ESTABLISHED while establishing; DISCONNECTED / DEVICE_REMOVAL end the run. */
static int poll_cm(proto_dst *d)
{
	struct hca_cm_event e;
	int rc = hca_ep_poll_event(d->ep, &e);
	if (rc <= 0)
		return rc;
	evlog_emit(ev(d), DST_LOG, "dst_cm", "event=%s", hca_cm_event_name(e.type));
	if (e.type == HCA_CM_ESTABLISHED && d->phase == D_ESTABLISHING) {
		d->connected = true;
		if ((rc = ctl_post_recv(&d->ctl, WIRE_SLOT_READY, &d->cx)))
			return noted(d, rc);
		d->phase = D_NEED_MSG;
		return 1;
	}
	if (e.type == HCA_CM_DISCONNECTED || e.type == HCA_CM_DEVICE_REMOVAL) {
		if (d->state == PROTO_DST_RUNNING) {
			d->connected = false;
			struct cause_ctx t = { 0 };
			if (e.type == HCA_CM_DISCONNECTED && d->o.stream_end &&
			    d->o.stream_end(d->o.stream_filter_arg, &t) < 0 && t.cause)
				return fail(d, t.cause, "%s", t.detail);
			return fail(d, e.type == HCA_CM_DISCONNECTED ? CAUSE_PEER_DISCONNECTED : CAUSE_DEVICE_REMOVED,
				    "receive cm event, cm event is %d", e.type);
		}
		if (d->phase != D_DONE) {
			hca_disconnect(d->ep);
			d->phase = D_DONE;
		}
		return 1;
	}
	if (d->phase == D_ESTABLISHING)
		return fail(d, CAUSE_ACCEPT_FAILED, "rdma_accept not event established (%s)", hca_cm_event_name(e.type));
	return 1;
}

/* ---- registration handler (docs/protocol.md, 'Migration sequence', 'Registration', 'pin-all') */

static void pinned(proto_dst *d, uint64_t bytes)
{
	d->st.registrations++;
	d->st.pinned_bytes += bytes;
	if (d->st.pinned_bytes > d->st.pinned_peak_bytes)
		d->st.pinned_peak_bytes = d->st.pinned_bytes;
}

/* repeat as QEMU's rdma_registration_handle sets it: 1 for RAM BLOCKS RESULT, the request's
 * repeat for REGISTER RESULT and UNREGISTER FINISHED. */
static int send_response(proto_dst *d, uint32_t type, uint32_t repeat, const void *data, uint32_t len)
{
	evlog_emit(ev(d), DST_LOG, "ctl_send", "type=%s len=%u", wire_type_token(type), len);
	int rc = ctl_post_send(&d->ctl, type, repeat, data, len, &d->cx);
	if (rc)
		return noted(d, rc);
	d->phase = D_RESP_SENT;
	return 1;
}

/* Register guest RAM for the source's WRITEs: pinned, or (--dst-odp) On-Demand Paging,
 * prefetched at once with PROTO_ODP_PREFETCH. A failed prefetch is logged and ignored, as
 * QEMU does (qemu_rdma_advise_prefetch_mr): the WRITEs then fault the pages in. */
static int reg_guest(proto_dst *d, uint64_t addr, uint64_t len, hca_mr **mr)
{
	int access = HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE;
	if (d->o.odp != PROTO_ODP_OFF)
		access |= HCA_ACCESS_ON_DEMAND;
	int rc = hca_reg_mr(d->ep, addr, len, access, mr);
	if (rc || d->o.odp != PROTO_ODP_PREFETCH)
		return rc;
	int arc = hca_advise_mr(*mr);
	if (arc)
		evlog_emit(ev(d), DST_LOG, "warn", "msg=prefetch_failed rc=%d", arc);
	return 0;
}

static int on_ram_blocks_request(proto_dst *d)
{
	if (d->n_src != d->n_blocks) {
		/* QEMU answers with the blocks it knows; the source detects the count. */
		evlog_emit(ev(d), DST_LOG, "warn", "msg=source_announced_%zu_blocks_destination_has_%zu", d->n_src,
			   d->n_blocks);
	}
	static uint8_t out[WIRE_DEST_BLOCK_BYTES * STREAM_MAX_BLOCKS];
	size_t n = 0;
	for (size_t i = 0; i < d->n_blocks; i++) {
		/* sorted by the source's order; blocks the source did not announce go last */
		size_t b = i < d->n_src ? d->by_src[i] : i;
		struct dst_block *db = &d->blocks[b];
		if (d->pin_all && !db->block_mr) {
			int rc = reg_guest(d, db->addr, db->length, &db->block_mr);
			if (rc)
				return fail(d, CAUSE_DEST_PIN_ALL_FAILED,
					    "Failed to register local dest ram block! block=%s bytes=%llu: %s",
					    mem_block_name(d->m, b), (unsigned long long)db->length, strerror(-rc));
			pinned(d, db->length);
		}
		struct wire_dest_block wb = { .remote_host_addr = db->addr, .offset = db->offset,
					      .length = db->length,
					      .remote_rkey = db->block_mr ? hca_mr_rkey(db->block_mr) : 0 };
		wire_dest_block_encode(&wb, out + n * WIRE_DEST_BLOCK_BYTES, WIRE_DEST_BLOCK_BYTES);
		n++;
	}
	return send_response(d, WIRE_RAM_BLOCKS_RESULT, 1, out, (uint32_t)(n * WIRE_DEST_BLOCK_BYTES));
}

/* One REGISTER REQUEST entry -> one result entry. */
static int register_one(proto_dst *d, const struct wire_register *r, struct wire_register_result *res)
{
	if (r->current_index >= d->n_src)
		return fail(d, CAUSE_BAD_REGISTER_REQUEST, "rdma: 'register' bad block index %u (vs %zu)",
			    r->current_index, d->n_src);
	size_t b = d->by_src[r->current_index];
	struct dst_block *db = &d->blocks[b];
	if (r->key < db->offset || r->key >= db->offset + db->length)
		return fail(d, CAUSE_BAD_REGISTER_REQUEST,
			    "rdma: bad register address for block %s offset: %llx current_addr: %llx",
			    mem_block_name(d->m, b), (unsigned long long)db->offset, (unsigned long long)r->key);
	uint64_t host = db->addr + (r->key - db->offset);
	uint64_t k = wire_chunk_index(db->addr, host, d->o.chunk_shift);
	if (r->chunks >= db->nb_chunks - k)   /* k < nb_chunks; k + chunks could wrap */
		return fail(d, CAUSE_BAD_REGISTER_REQUEST, "rdma: bad chunk for block %s chunk: %llu+%llu",
			    mem_block_name(d->m, b), (unsigned long long)k, (unsigned long long)r->chunks);
	if (!db->chunk_mr[k]) {
		uint64_t start = wire_chunk_start(db->addr, k, d->o.chunk_shift);
		uint64_t end = wire_chunk_end(db->addr, db->length, k + r->chunks, d->o.chunk_shift);
		int rc = reg_guest(d, start, end - start, &db->chunk_mr[k]);
		if (rc)
			return fail(d, CAUSE_DEST_REG_FAILED, "cannot get rkey: block=%s chunk=%llu bytes=%llu: %s",
				    mem_block_name(d->m, b), (unsigned long long)k,
				    (unsigned long long)(end - start), strerror(-rc));
		pinned(d, end - start);
		evlog_emit(ev(d), DST_LOG, "registered", "block=%zu chunk=%llu bytes=%llu", b, (unsigned long long)k,
			   (unsigned long long)(end - start));
	}
	res->rkey = hca_mr_rkey(db->chunk_mr[k]);
	res->host_addr = db->addr;
	return 0;
}

static int on_register_request(proto_dst *d, const struct wire_hdr *h)
{
	static uint8_t out[WIRE_REGISTER_RESULT_BYTES * WIRE_MAX_REPEAT];
	if ((uint64_t)h->repeat * WIRE_REGISTER_BYTES > h->len)
		return fail(d, CAUSE_MESSAGE_MALFORMED, "REGISTER REQUEST: %u entries in %u bytes", h->repeat, h->len);
	const uint8_t *in = ctl_data(&d->ctl, WIRE_SLOT_READY);
	for (uint32_t i = 0; i < h->repeat; i++) {
		struct wire_register r;
		struct wire_register_result res = { 0 };
		wire_register_decode(in + i * WIRE_REGISTER_BYTES, WIRE_REGISTER_BYTES, &r);
		int rc = register_one(d, &r, &res);
		if (rc)
			return rc;
		wire_register_result_encode(&res, out + i * WIRE_REGISTER_RESULT_BYTES, WIRE_REGISTER_RESULT_BYTES);
	}
	return send_response(d, WIRE_REGISTER_RESULT, h->repeat, out, h->repeat * WIRE_REGISTER_RESULT_BYTES);
}

static int on_compress(proto_dst *d, const struct wire_hdr *h)
{
	struct wire_compress c;
	if (wire_compress_decode(ctl_data(&d->ctl, WIRE_SLOT_READY), h->len, &c) < 0)
		return fail(d, CAUSE_MESSAGE_MALFORMED, "COMPRESS of %u bytes", h->len);
	if (c.value != 0 && !d->prof->compress_fill)
		return fail(d, CAUSE_BAD_COMPRESS, "rdma: Zero page with non-zero (%u) value", c.value);
	if (c.block_idx >= d->n_src)
		return fail(d, CAUSE_BAD_COMPRESS, "rdma: 'compress' bad block index %u (vs %zu)", c.block_idx, d->n_src);
	size_t b = d->by_src[c.block_idx];
	struct dst_block *db = &d->blocks[b];
	uint64_t ps = mem_page_size(d->m);
	if (c.offset < db->offset || c.length > db->length || c.offset - db->offset > db->length - c.length ||
	    (c.offset - db->offset) % ps || c.length % ps)
		return fail(d, CAUSE_BAD_COMPRESS, "rdma: compress range %llx+%llx outside block %s",
			    (unsigned long long)c.offset, (unsigned long long)c.length, mem_block_name(d->m, b));
	if (c.value != 0) {   /* QEMU before the check: memset(host, value, length), silently */
		evlog_emit(ev(d), DST_LOG, "compress_fill", "value=%u byte=0x%02x impl=%s", c.value,
			   (unsigned)(uint8_t)c.value, d->prof->name);
		mem_fill_pages(d->m, b, (c.offset - db->offset) / ps, c.length / ps, (uint8_t)c.value);
	} else {
		mem_zero_pages(d->m, b, (c.offset - db->offset) / ps, c.length / ps);
	}
	d->st.zero_pages += c.length / ps;
	return 0;
}

static int on_unregister_request(proto_dst *d, const struct wire_hdr *h)
{
	const uint8_t *in = ctl_data(&d->ctl, WIRE_SLOT_READY);
	if ((uint64_t)h->repeat * WIRE_REGISTER_BYTES > h->len)
		return fail(d, CAUSE_MESSAGE_MALFORMED, "UNREGISTER REQUEST: %u entries in %u bytes", h->repeat, h->len);
	for (uint32_t i = 0; i < h->repeat; i++) {
		struct wire_register r;
		wire_register_decode(in + i * WIRE_REGISTER_BYTES, WIRE_REGISTER_BYTES, &r);
		if (r.current_index >= d->n_src)
			return fail(d, CAUSE_BAD_REGISTER_REQUEST, "rdma: 'unregister' bad block index %u", r.current_index);
		struct dst_block *db = &d->blocks[d->by_src[r.current_index]];
		if (r.key >= db->nb_chunks || !db->chunk_mr[r.key])
			return fail(d, CAUSE_BAD_REGISTER_REQUEST, "unregistration chunk failed: chunk %llu",
				    (unsigned long long)r.key);
		d->st.pinned_bytes -= hca_mr_len(db->chunk_mr[r.key]);
		hca_dereg_mr(db->chunk_mr[r.key]);
		db->chunk_mr[r.key] = NULL;
	}
	return send_response(d, WIRE_UNREGISTER_FINISHED, h->repeat, NULL, 0);
}

static int on_registration_msg(proto_dst *d, const struct wire_hdr *h)
{
	switch (h->type) {
	case WIRE_RAM_BLOCKS_REQUEST:
		return on_ram_blocks_request(d);
	case WIRE_REGISTER_REQUEST:
		return on_register_request(d, h);
	case WIRE_COMPRESS:
		return on_compress(d, h);
	case WIRE_UNREGISTER_REQUEST:
		return on_unregister_request(d, h);
	case WIRE_REGISTER_FINISHED:
		d->registering = false;
		return 0;
	case WIRE_REGISTER_RESULT:
		return fail(d, CAUSE_UNEXPECTED_MESSAGE, "Invalid RESULT message at dest.");
	default:
		return fail(d, CAUSE_UNEXPECTED_MESSAGE, "Unknown control message %s", wire_type_name(h->type));
	}
}

/* ---- the migration stream ---------------------------------------------------------------- */

static int on_blocks(proto_dst *d)
{
	size_t n = stream_parser_n_blocks(d->sp);
	if (n > d->n_blocks)
		n = d->n_blocks + 1;   /* the extra one cannot be found below */
	for (size_t i = 0; i < stream_parser_n_blocks(d->sp); i++) {
		const struct stream_block *sb = stream_parser_block(d->sp, i);
		size_t b = 0;
		while (b < d->n_blocks && strcmp(mem_block_name(d->m, b), sb->name) != 0)
			b++;
		if (b == d->n_blocks)
			return fail(d, CAUSE_RAM_BLOCK_NOT_FOUND, "RAMBlock '%s' not found on destination", sb->name);
		if (d->blocks[b].announced)
			return fail(d, CAUSE_MESSAGE_MALFORMED, "RAMBlock '%s' announced twice", sb->name);
		if (sb->length != d->blocks[b].length)
			return fail(d, CAUSE_RAM_BLOCK_LENGTH_MISMATCH, "Length mismatch: %s: 0x%llx in != 0x%llx",
				    sb->name, (unsigned long long)sb->length, (unsigned long long)d->blocks[b].length);
		d->blocks[b].announced = true;
		d->blocks[b].src_index = i;
		d->by_src[i] = b;
	}
	d->n_src = stream_parser_n_blocks(d->sp);
	(void)n;
	return 0;
}

static int on_verify(proto_dst *d)
{
	size_t n = stream_parser_n_digests(d->sp);
	if (n != d->n_src)
		return fail(d, CAUSE_MESSAGE_MALFORMED, "VERIFY record has %zu digests for %zu blocks", n, d->n_src);
	if (d->n_src != d->n_blocks)   /* "verified" covers every destination block */
		return fail(d, CAUSE_RAM_BLOCK_COUNT_MISMATCH, "VERIFY covers %zu of the destination's %zu RAM blocks",
			    d->n_src, d->n_blocks);
	for (size_t i = 0; i < n; i++) {
		size_t b = d->by_src[i];
		struct digest mine, theirs = stream_parser_digest(d->sp, i);
		if (proto_mem_digest(d->m, b, &mine))
			return fail(d, CAUSE_RESOURCE_EXHAUSTED, "memory digest of block %s", mem_block_name(d->m, b));
		char hm[DIGEST_HEX_LEN], ht[DIGEST_HEX_LEN];
		if (!digest_eq(mine, theirs))
			return fail(d, CAUSE_VERIFY_MISMATCH, "block %s: memory digest %s, source says %s",
				    mem_block_name(d->m, b), digest_hex(mine, hm), digest_hex(theirs, ht));
	}
	d->verified = true;
	evlog_emit(ev(d), DST_LOG, "verified", "blocks=%zu", n);
	return 0;
}

static int complete(proto_dst *d)
{
	if (!d->verified || !d->device_ok)
		return fail(d, CAUSE_DEST_INCOMPLETE, "EOF before %s", !d->device_ok ? "device state" : "VERIFY");
	d->state = PROTO_DST_COMPLETED;
	d->phase = D_DONE;
	evlog_emit(ev(d), DST_LOG, "completed", "pinned_peak=%llu", (unsigned long long)d->st.pinned_peak_bytes);
	/* Disconnecting tells the source that everything arrived and verified (migbed's
	 * confirmation; an ERROR would have said the opposite). */
	hca_disconnect(d->ep);
	return 0;
}

/* Parse what the stream holds. Returns 0 to continue, <0 on failure. */
static int run_stream(proto_dst *d)
{
	for (int i = 0; i < 1024; i++) {
		enum stream_event e = stream_parser_next(d->sp);
		int rc = 0;
		switch (e) {
		case STREAM_EV_NEED_MORE:
			return 0;
		case STREAM_EV_BLOCKS:
			rc = on_blocks(d);
			break;
		case STREAM_EV_HOOK:
			d->registering = true;
			return 0;
		case STREAM_EV_DEVICE:
			d->device_ok = true;
			evlog_emit(ev(d), DST_LOG, "device_state", "bytes=%llu",
				   (unsigned long long)stream_parser_device_bytes(d->sp));
			break;
		case STREAM_EV_VERIFY:
			rc = on_verify(d);
			break;
		case STREAM_EV_EOF:
			return complete(d);
		case STREAM_EV_ERROR:
		default:
			if (stream_parser_version(d->sp))   /* another migbed build's stream */
				return fail(d, CAUSE_VERSION_UNSUPPORTED, "migration stream: %s",
					    stream_parser_error(d->sp));
			return fail(d, CAUSE_MESSAGE_MALFORMED, "migration stream: %s", stream_parser_error(d->sp));
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* One message of a registration round (rdma_registration_handle): its RECV is re-posted
 * already; every message's repeat is checked, then it is dispatched. */
static int on_registration_step(proto_dst *d, const struct wire_hdr *h)
{
	int rc = ctl_check_repeat(h, &d->cx);
	if (rc)
		return noted(d, rc);
	if (h->type == WIRE_ERROR)   /* QEMU answers with an ERROR of its own: received_error stays false */
		return fail(d, CAUSE_PEER_ERROR, "Unknown control message %s (the source sent ERROR during a "
			    "registration round)", wire_type_name(h->type));
	rc = on_registration_msg(d, h);
	if (rc < 0)
		return rc;
	if (d->phase == D_WAIT_MSG)
		d->phase = D_NEED_MSG;
	return d->registering ? 1 : run_stream(d);
}

/* A QEMU FILE message outside a registration round: its bytes go to the stream parser. */
static int on_stream_msg(proto_dst *d, const struct wire_hdr *h)
{
	const void *bytes = ctl_data(&d->ctl, WIRE_SLOT_READY);
	size_t n = h->len;
	int rc;
	if (d->o.stream_filter) {
		d->filtered.len = 0;
		if ((rc = d->o.stream_filter(d->o.stream_filter_arg, bytes, n, &d->filtered, &d->cx)))
			return noted(d, rc);
		bytes = d->filtered.data;
		n = d->filtered.len;
	}
	if (n && (rc = stream_parser_feed(d->sp, bytes, n)))
		return fail(d, CAUSE_RESOURCE_EXHAUSTED, "stream buffer: %s", strerror(-rc));
	d->st.file_bytes += h->len;
	d->phase = D_NEED_MSG;
	return run_stream(d);
}

/* A message arrived in slot 0 (qemu_rdma_exchange_recv): decoded (any type inside a
 * registration round, QEMU FILE outside one), its RECV re-posted at once, then handled. The
 * slot's buffer is not overwritten before the next READY, so handling it after the re-post
 * is safe. */
static int on_message(proto_dst *d, const struct hca_wc *wc)
{
	struct wire_hdr h;
	int rc = ctl_decode(&d->ctl, WIRE_SLOT_READY, wc->byte_len, d->registering ? WIRE_NONE : WIRE_QEMU_FILE,
			    &h, &d->cx);
	if (rc == -CAUSE_PEER_ERROR)
		d->received_error = true;
	if (rc)
		return noted(d, rc);
	evlog_emit(ev(d), DST_LOG, "ctl_recv", "type=%s len=%u", wire_type_token(h.type), h.len);
	if ((rc = ctl_post_recv(&d->ctl, WIRE_SLOT_READY, &d->cx)))
		return noted(d, rc);
	d->phase = D_WAIT_MSG;   /* handling; the next READY is decided below */
	return d->registering ? on_registration_step(d, &h) : on_stream_msg(d, &h);
}

/* ---- the reactive loop ------------------------------------------------------------------- */

static int on_send_done(proto_dst *d, const struct hca_wc *wc)
{
	if (wc->wr_id != WIRE_WRID_SEND_CONTROL) {
		stamp_wc(d, wc);
		return fail(d, CAUSE_INTERNAL, "send completion with wr_id 0x%llx, which was never posted",
			    (unsigned long long)wc->wr_id);
	}
	if (d->phase == D_ERROR_SENT) {
		hca_disconnect(d->ep);
		d->phase = D_DONE;
		return 1;
	}
	if (wc->status != HCA_WC_SUCCESS) {
		stamp_wc(d, wc);
		return fail(d, ctl_status_cause(wc->status, CAUSE_CONTROL_SEND_ERROR),
			    "rdma migration: send polling control error: status=%s (%s)",
			    hca_wc_status_name(wc->status), hca_wc_status_str(wc->status));
	}
	d->phase = d->phase == D_READY_SENT ? D_WAIT_MSG : D_NEED_MSG;
	return 1;
}

static int on_recv_failed(proto_dst *d, const struct hca_wc *wc);

/* QEMU <= 6.1, one CQ: block_for_wrid(CONTROL SEND) took the source's next message off the
 * shared CQ and dropped it; the wait for it that follows never ends. */
static int shared_recv(proto_dst *d, const struct hca_wc *wc)
{
	if (!CTL_WRID_IS_RECV(wc->wr_id) || wc->status != HCA_WC_SUCCESS)
		return on_recv_failed(d, wc);
	d->st.wrid_misses++;
	if (wc->wr_id == CTL_WRID_RECV(WIRE_SLOT_READY) && !d->dropped.active) {
		d->dropped.active = true;
		d->dropped.got = wc->wr_id;
		d->dropped.t_ns = wc->t_ns;
	}
	evlog_emit(ev(d), DST_LOG, "wrid_dropped", "want=%u got=%llu impl=%s", WIRE_WRID_SEND_CONTROL,
		   (unsigned long long)wc->wr_id, d->prof->name);
	return 1;
}

static int poll_send(proto_dst *d)
{
	struct hca_wc wc;
	int rc = hca_poll(d->ep, d->prof->shared_cq ? HCA_CQ_ANY : HCA_CQ_SEND, &wc);
	if (rc < 0)
		return fail(d, CAUSE_INTERNAL, "ibv_poll_cq: %s", strerror(-rc));
	if (rc > 0 && wc.opcode == HCA_WC_OP_RECV)
		return shared_recv(d, &wc);
	if (rc > 0)
		return on_send_done(d, &wc);
	if (d->phase == D_ERROR_SENT && now(d) >= d->error_deadline_ns) {
		hca_disconnect(d->ep);
		d->phase = D_DONE;
		return 1;
	}
	return poll_cm(d);
}

/* A RECV was flushed: the QP is in error. A failed SEND of this side's own that is already
 * visible on the send CQ is the cause, not the flush (finding F2, docs/faults.md). */
static int own_send_failure(proto_dst *d)
{
	struct hca_wc wc;
	for (int i = 0; i < 64; i++) {
		if (hca_poll(d->ep, HCA_CQ_SEND, &wc) <= 0)
			return 0;
		if (wc.status != HCA_WC_SUCCESS && wc.status != HCA_WC_WR_FLUSH_ERR) {
			stamp_wc(d, &wc);
			return fail(d, ctl_status_cause(wc.status, CAUSE_CONTROL_SEND_ERROR),
				    "rdma migration: send polling control error: status=%s (%s)",
				    hca_wc_status_name(wc.status), hca_wc_status_str(wc.status));
		}
	}
	return 0;
}

/* A RECV completion that is no message: a wr_id never posted, a flush, an error status. */
static int on_recv_failed(proto_dst *d, const struct hca_wc *wc)
{
	int rc;
	if (!CTL_WRID_IS_RECV(wc->wr_id)) {
		stamp_wc(d, wc);
		return fail(d, CAUSE_INTERNAL, "recv completion with wr_id 0x%llx, which was never posted",
			    (unsigned long long)wc->wr_id);
	}
	if (wc->status == HCA_WC_WR_FLUSH_ERR && (rc = own_send_failure(d)) != 0)
		return rc;
	stamp_wc(d, wc);
	return fail(d, ctl_status_cause(wc->status, CAUSE_CONTROL_RECV_ERROR),
		    "rdma migration: recv polling control error! status=%s (%s)",
		    hca_wc_status_name(wc->status), hca_wc_status_str(wc->status));
}

static int poll_recv(proto_dst *d)
{
	struct hca_wc wc;
	if (d->dropped.active) {
		char got[32];
		return fail(d, CAUSE_COMPLETION_DROPPED,
			    "%s would wait here forever for the source's next message, %s: it was taken off the one CQ "
			    "and dropped at %llu us while waiting for CONTROL SEND (%u) (\"A Wanted wrid CONTROL SEND (%u) but got %s\")",
			    d->prof->name, proto_wrid_str(d->dropped.got, got, sizeof got),
			    (unsigned long long)(d->dropped.t_ns / 1000), WIRE_WRID_SEND_CONTROL, WIRE_WRID_SEND_CONTROL, got);
	}
	int rc = hca_poll(d->ep, d->prof->shared_cq ? HCA_CQ_ANY : HCA_CQ_RECV, &wc);
	if (rc < 0)
		return fail(d, CAUSE_INTERNAL, "ibv_poll_cq: %s", strerror(-rc));
	if (rc == 0)
		return poll_cm(d);
	if (wc.opcode != HCA_WC_OP_RECV) {     /* one shared CQ: a send completion nothing waits for */
		if (wc.status != HCA_WC_SUCCESS) {   /* qemu_rdma_poll fails on any failed completion */
			stamp_wc(d, &wc);
			return fail(d, ctl_status_cause(wc.status, CAUSE_CONTROL_SEND_ERROR),
				    "rdma migration: send polling control error: status=%s (%s)",
				    hca_wc_status_name(wc.status), hca_wc_status_str(wc.status));
		}
		d->st.wrid_misses++;
		return 1;
	}
	if (!CTL_WRID_IS_RECV(wc.wr_id) || wc.status != HCA_WC_SUCCESS)
		return on_recv_failed(d, &wc);
	if (wc.wr_id != CTL_WRID_RECV(WIRE_SLOT_READY)) {
		d->st.wrid_misses++;
		return 1;
	}
	rc = on_message(d, &wc);
	return rc < 0 ? rc : 1;
}

static int step(proto_dst *d)
{
	struct cause_ctx tmp = { 0 };
	switch (d->phase) {
	case D_LISTEN:
		return poll_listener(d);
	case D_ESTABLISHING:
		return poll_cm(d);
	case D_NEED_MSG:
		if (ctl_post_send(&d->ctl, WIRE_READY, 1, NULL, 0, &tmp) != 0)
			return fail(d, tmp.cause, "%s", tmp.detail);
		d->phase = D_READY_SENT;
		return 1;
	case D_READY_SENT:
	case D_RESP_SENT:
	case D_ERROR_SENT:
		return poll_send(d);
	case D_WAIT_MSG:
		return poll_recv(d);
	case D_IDLE:
	case D_DONE:
	default:
		return 0;
	}
}

int proto_dst_progress(void *arg)
{
	proto_dst *d = arg;
	int progressed = 0;
	/* Registration costs virtual time, and passing time runs the progress functions:
	 * never re-enter (a nested call would act on a half-handled message). */
	if (d->busy)
		return 0;
	if (d->state == PROTO_DST_RUNNING && d->deadline_at_ns && now(d) >= d->deadline_at_ns) {
		char why[96];
		snprintf(why, sizeof why, "the migration's deadline, %llu ms after the source connected",
			 (unsigned long long)(d->o.deadline_ns / 1000000));
		proto_dst_fail(d, CAUSE_TIMEOUT, why);
	}
	d->busy = true;
	for (int i = 0; i < 64; i++) {
		if (d->phase == D_DONE) {
			progressed = progressed ? 1 : -1;
			break;
		}
		int rc = step(d);
		if (rc == 0)
			break;
		progressed = 1;
	}
	d->busy = false;
	return progressed;
}

enum proto_dst_state proto_dst_state(const proto_dst *d) { return d->state; }
const struct proto_stats *proto_dst_stats(const proto_dst *d) { return &d->st; }
const struct cause_ctx *proto_dst_cause(const proto_dst *d) { return &d->cx; }
bool proto_dst_pin_all(const proto_dst *d) { return d->pin_all; }
bool proto_dst_listening(const proto_dst *d) { return d->phase == D_LISTEN; }

int proto_dst_fail(proto_dst *d, int cause, const char *detail)
{
	if (cause == CAUSE_TIMEOUT && d->prof->qemu && d->state == PROTO_DST_RUNNING)
		return fail(d, CAUSE_QEMU_HANG, "%s would wait here forever for %s (%s)", d->prof->name,
			    d->phase == D_WAIT_MSG ? "the source's next control message (CONTROL RECV 4000)"
			    : d->phase == D_LISTEN ? "a source to connect"
			    : "a control SEND's completion (CONTROL SEND 2000)", detail);
	return fail(d, cause, "%s", detail);
}
