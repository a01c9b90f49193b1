/* SPDX-License-Identifier: MIT */
/* fuzz_hostile_src - a hostile source against migbed's real destination (transport/proto.h) on
 * the model backend: the input is the source's script, one operation after another, spoken
 * on the control channel with the protocol's own framing (proto_internal.h), as
 * transport/proto_dst_test.c's scripted source does:
 *   QEMU FILE with any stream bytes, or with a valid block list and HOOK (to get past it);
 *   REGISTER / UNREGISTER REQUESTs of any entries (keys near the guest's blocks); COMPRESS;
 *   REGISTER FINISHED; any message type, repeat and payload; an RDMA WRITE to any offset
 *   of a chunk the destination registered (or a guessed rkey); VERIFY + EOF carrying the
 *   digests of the destination's memory as it is now, or any digests.
 * Then the source disconnects and the destination is given time (bounded).
 * The destination plays migbed's own peer or a QEMU profile (the input's first byte).
 * Oracles: the destination ends (never RUNNING past its deadline), COMPLETED only when its
 * memory is what the last VERIFY said for every one of its blocks, FAILED only with a named
 * cause on its side; no RDMA resource outlives it (hca_world_live_objects); ASan watches
 * every byte written (the guest is real memory, MEM_REPR_BYTES). */
#include "fuzz/fuzz.h"

#include <string.h>

#include "transport/proto.h"
#include "transport/proto_internal.h"
#include "transport/stream.h"

#define MIB (1ull << 20)
#define PAGE 4096ull
#define ADDR "model:fuzz-dst"
#define MAX_OPS 64
#define WAIT_NS (200ull * 1000 * 1000)          /* the destination's single wait: 200 ms */
#define DEADLINE_NS (5ull * 1000 * 1000 * 1000)  /* and its whole migration: 5 s (virtual) */

/* Small (a world per input; the destination digests its guest at every VERIFY): pc.ram spans
 * two 1 MiB chunks, the second of 4 pages; vga.vram is 16 pages. */
static const struct mem_block_spec guest[] = { { "pc.ram", 1 * MIB + 4 * PAGE }, { "vga.vram", 16 * PAGE } };
#define N_GUEST 2
/* The destination's ram_addr space, last block first, 2 MiB aligned: vga.vram at 0, pc.ram at 2 MiB. */
static const uint64_t ram_addr[N_GUEST] = { 2 * MIB, 0 };

struct rig {
	evlog *ev;
	hca_world *w;
	mem *m, *src;
	proto_dst *d;
	hca_ep *ep;
	hca_mr *src_mr;
	struct ctl ctl;
	bool ctl_ok, dead;
	struct proto_stats st;
	struct cause_ctx cx;
	struct wire_register_result last;   /* the last REGISTER RESULT's first entry */
	bool have_last;
	stream_parser *shadow;               /* what the destination was sent, read on the side */
	size_t n_verify;
	char verify_names[STREAM_MAX_BLOCKS][STREAM_NAME_MAX + 1];
	struct digest verify[STREAM_MAX_BLOCKS];
};

static void open_rig(struct rig *r, bool pin_all, enum proto_impl impl)
{
	static const struct mem_block_spec src_guest[] = { { "peer.ram", 64 * 1024 } };
	memset(r, 0, sizeof *r);
	struct proto_opts o;
	proto_opts_defaults(&o);
	o.pin_all = pin_all;
	o.impl = impl;
	o.wait_timeout_ns = WAIT_NS;
	o.deadline_ns = DEADLINE_NS;
	static const vclock zero;
	if (evlog_open(NULL, &zero, &r->ev) || hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, r->ev, &r->w))
		abort();
	evlog_set_clock(r->ev, hca_world_clock(r->w));
	if (
	    mem_new(PAGE, N_GUEST, guest, MEM_REPR_BYTES, 1, &r->m) ||
	    mem_new(PAGE, 1, src_guest, MEM_REPR_BYTES, 2, &r->src) || proto_dst_new(r->w, r->m, &o, &r->d) ||
	    proto_dst_listen(r->d, ADDR) || hca_world_add_progress(r->w, proto_dst_progress, r->d) ||
	    stream_parser_new(&r->shadow))
		abort();
	mem_write_pages(r->src, 0, 0, mem_block_pages(r->src, 0));
}

static bool connect_src(struct rig *r, bool pin_all)
{
	if (hca_ep_create(r->w, VOCAB_SIDE_SRC, ADDR, &r->ep))
		abort();
	hca_ep_map_guest(r->ep, r->src);   /* the model copies guest to guest */
	struct hca_qp_caps qc = { .max_send_wr = 16, .max_recv_wr = 3, .max_send_sge = 1, .max_recv_sge = 1,
				  .cq_entries = 64 };
	if (hca_ep_setup(r->ep, &qc) || ctl_init(&r->ctl, r->ep, VOCAB_SIDE_SRC, false, &r->st, &r->cx))
		abort();
	r->ctl_ok = true;
	if (hca_reg_mr(r->ep, mem_block_addr(r->src, 0), mem_block_bytes(r->src, 0), HCA_ACCESS_LOCAL_WRITE,
		       &r->src_mr))
		abort();
	if (ctl_post_recv(&r->ctl, WIRE_SLOT_READY, &r->cx))
		abort();
	struct wire_caps caps = { .version = WIRE_CAP_VERSION, .flags = pin_all ? WIRE_CAP_PIN_ALL : 0 };
	uint8_t pdata[WIRE_CAPS_EXT_BYTES];
	int n = wire_caps_encode(&caps, pdata, sizeof pdata);
	struct hca_conn_params p = { .private_data = pdata, .private_data_len = (uint8_t)n,
				     .initiator_depth = 2, .retry_count = 5 };
	struct hca_cm_event ev;
	return hca_connect(r->ep, &p, WAIT_NS, &ev) == 0;
}

/* One message after the READY credit (proto_dst_test.c's rs_xchg); with resp, its response
 * (any type) is received into the DATA slot. false: the destination stopped answering. */
static bool xchg(struct rig *r, uint32_t type, uint32_t repeat, const void *data, uint32_t len, bool resp,
		 struct wire_hdr *h)
{
	struct hca_wc wc;
	struct wire_hdr rh;
	if (hca_wait(r->ep, HCA_CQ_RECV, WAIT_NS, &wc) <= 0 || wc.status != HCA_WC_SUCCESS ||
	    ctl_decode(&r->ctl, WIRE_SLOT_READY, wc.byte_len, WIRE_READY, &rh, &r->cx))
		return false;
	if ((resp && ctl_post_recv(&r->ctl, WIRE_SLOT_DATA, &r->cx)) ||
	    ctl_post_recv(&r->ctl, WIRE_SLOT_READY, &r->cx) ||
	    ctl_post_send(&r->ctl, type, repeat, data, len, &r->cx))
		return false;
	if (hca_wait(r->ep, HCA_CQ_SEND, WAIT_NS, &wc) <= 0 || wc.status != HCA_WC_SUCCESS)
		return false;
	if (!resp)
		return true;
	if (hca_wait(r->ep, HCA_CQ_RECV, WAIT_NS, &wc) <= 0 || wc.status != HCA_WC_SUCCESS)
		return false;
	return ctl_decode(&r->ctl, WIRE_SLOT_DATA, wc.byte_len, WIRE_NONE, h ? h : &rh, &r->cx) == 0;
}

/* A QEMU FILE message; its bytes also go to the shadow parser, which remembers the last
 * VERIFY (the names of the blocks it covers, in the announced order). */
static bool send_file(struct rig *r, const struct stream_buf *b)
{
	if (!b->len || b->len > WIRE_QEMU_FILE_MAX)
		return true;
	if (!xchg(r, WIRE_QEMU_FILE, 1, b->data, (uint32_t)b->len, false, NULL))
		return false;
	if (stream_parser_feed(r->shadow, b->data, b->len))
		abort();
	enum stream_event e;
	while ((e = stream_parser_next(r->shadow)) != STREAM_EV_NEED_MORE && e != STREAM_EV_ERROR) {
		if (e != STREAM_EV_VERIFY)
			continue;
		r->n_verify = stream_parser_n_digests(r->shadow);
		for (size_t i = 0; i < r->n_verify; i++) {
			const struct stream_block *sb = stream_parser_block(r->shadow, i);
			snprintf(r->verify_names[i], sizeof r->verify_names[i], "%s", sb ? sb->name : "");
			r->verify[i] = stream_parser_digest(r->shadow, i);
		}
	}
	return true;
}

static void put_header(struct stream_buf *b, bool swap)
{
	uint64_t total = 0;
	for (size_t i = 0; i < N_GUEST; i++)
		total += guest[i].size_bytes;
	stream_put_be32(b, STREAM_MAGIC);
	stream_put_be32(b, STREAM_VERSION);
	stream_put_u8(b, STREAM_RAM_START);
	stream_put_be64(b, total | STREAM_FLAG_MEM_SIZE);
	for (size_t k = 0; k < N_GUEST; k++) {
		size_t i = swap ? N_GUEST - 1 - k : k;
		stream_put_u8(b, (uint8_t)strlen(guest[i].name));
		stream_put_bytes(b, guest[i].name, strlen(guest[i].name));
		stream_put_be64(b, guest[i].size_bytes);
	}
	stream_put_be64(b, STREAM_FLAG_HOOK);
}

/* VERIFY + EOF: the destination's own digests now (true) or the input's. */
static void put_end(struct rig *r, struct fz *f, bool honest, bool device)
{
	struct stream_buf b = { 0 };
	if (device) {
		stream_put_u8(&b, STREAM_DEVICE);
		stream_put_be32(&b, 4);
		stream_put_bytes(&b, "dev!", 4);
		stream_put_digest(&b, digest_of("dev!", 4));
	}
	size_t n = honest ? N_GUEST : fz_u8(f) % (N_GUEST + 2);
	stream_put_u8(&b, STREAM_VERIFY);
	stream_put_be32(&b, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		size_t blk = i;
		for (size_t k = 0; k < N_GUEST; k++)   /* in the announced order */
			if (stream_parser_block(r->shadow, i) &&
			    !strcmp(stream_parser_block(r->shadow, i)->name, mem_block_name(r->m, k)))
				blk = k;
		struct digest dg = { .hi = fz_u64(f, 8), .lo = fz_u64(f, 8) };
		if (honest && blk < N_GUEST && proto_mem_digest(r->m, blk, &dg))
			abort();
		stream_put_digest(&b, dg);
	}
	stream_put_u8(&b, STREAM_EOF);
	if (!send_file(r, &b))
		r->dead = true;
	stream_buf_free(&b);
}

static void put_entries(struct rig *r, struct fz *f, uint32_t type)
{
	uint8_t buf[8 * WIRE_REGISTER_BYTES];
	uint32_t n = 1 + fz_u8(f) % 8, repeat = n;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t how = fz_u8(f);
		uint32_t idx = how & 0x80 ? (uint32_t)fz_u64(f, 4) : how % (N_GUEST + 1);
		uint64_t key = how & 0x40 ? fz_u64(f, 8) : (idx < N_GUEST ? ram_addr[idx] : 0) + (fz_u64(f, 2) << 12);
		if (type == WIRE_UNREGISTER_REQUEST && !(how & 0x40))
			key = fz_u8(f) % 4;   /* a chunk index */
		struct wire_register q = { .key = key, .current_index = idx,
					   .chunks = how & 0x20 ? fz_u64(f, 8) : fz_u8(f) % 4 };
		wire_register_encode(&q, buf + i * WIRE_REGISTER_BYTES, WIRE_REGISTER_BYTES);
	}
	if (fz_u8(f) == 0xff)
		repeat = (uint32_t)fz_u64(f, 4);   /* a repeat that is not the count */
	struct wire_hdr h;
	if (!xchg(r, type, repeat, buf, n * WIRE_REGISTER_BYTES, true, &h)) {
		r->dead = true;
		return;
	}
	if (type == WIRE_REGISTER_REQUEST && h.type == WIRE_REGISTER_RESULT && h.len >= WIRE_REGISTER_RESULT_BYTES)
		r->have_last = wire_register_result_decode(ctl_data(&r->ctl, WIRE_SLOT_DATA), h.len, &r->last) == 0;
}

static void rdma_write(struct rig *r, struct fz *f)
{
	uint64_t off = fz_u64(f, 3), remote = r->have_last ? r->last.host_addr : fz_u64(f, 8);
	uint32_t len = (uint32_t)(1 + fz_u64(f, 2) % (64 * 1024));
	uint32_t rkey = r->have_last ? r->last.rkey : 0;
	uint8_t delta = fz_u8(f);
	if (delta & 1)
		rkey += delta >> 1;   /* a guessed key */
	struct hca_send_wr wr = { .wr_id = WIRE_WRID_RDMA_WRITE, .opcode = HCA_WR_RDMA_WRITE,
				  .local_addr = mem_block_addr(r->src, 0), .length = len,
				  .lkey = hca_mr_lkey(r->src_mr), .remote_addr = remote + off, .rkey = rkey,
				  .signaled = true };
	struct hca_wc wc;
	if (hca_post_send(r->ep, &wr) != 0 || hca_wait(r->ep, HCA_CQ_SEND, WAIT_NS, &wc) <= 0)
		r->dead = true;
	else if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "write of %u bytes at %llx rkey %u: status %d\n", len,
			(unsigned long long)(remote + off), rkey, (int)wc.status);
}

static void step(struct rig *r, struct fz *f)
{
	uint8_t op = fz_u8(f);
	struct stream_buf b = { 0 };
	switch ((op & 0x0f) % 10) {   /* 0x10, 0x20: the operation's variant */
	case 0: {   /* QEMU FILE of any bytes */
		size_t n;
		const uint8_t *p = fz_bytes(f, fz_u8(f), &n);
		stream_put_bytes(&b, p, n);
		r->dead |= !send_file(r, &b);
		break;
	}
	case 1:   /* the block list (in either order) and a HOOK */
		put_header(&b, op & 0x10);
		r->dead |= !send_file(r, &b);
		break;
	case 2:
		put_entries(r, f, WIRE_REGISTER_REQUEST);
		break;
	case 3:
		put_entries(r, f, WIRE_UNREGISTER_REQUEST);
		break;
	case 4: {
		struct wire_compress c = { .value = fz_u8(f) & 1 ? fz_u8(f) : 0, .block_idx = fz_u8(f) % (N_GUEST + 1),
					   .offset = fz_u64(f, 3) << 12, .length = fz_u64(f, 3) << 12 };
		uint8_t buf[WIRE_COMPRESS_BYTES];
		wire_compress_encode(&c, buf, sizeof buf);
		r->dead |= !xchg(r, WIRE_COMPRESS, 1, buf, sizeof buf, false, NULL);
		break;
	}
	case 5:
		r->dead |= !xchg(r, WIRE_REGISTER_FINISHED, 1, NULL, 0, false, NULL);
		break;
	case 6: {   /* any type, repeat, payload */
		size_t n;
		uint32_t type = fz_u8(f) % (WIRE_TYPE_COUNT + 2), repeat = (uint32_t)fz_u64(f, 2);
		const uint8_t *p = fz_bytes(f, fz_u8(f), &n);
		r->dead |= !xchg(r, type, repeat, p, (uint32_t)n, false, NULL);
		break;
	}
	case 7:
		rdma_write(r, f);
		break;
	case 8:   /* the end of a RAM round, then maybe a PART with a HOOK */
		stream_put_be64(&b, STREAM_FLAG_EOS);
		if (op & 0x10) {
			stream_put_u8(&b, STREAM_RAM_PART);
			stream_put_be64(&b, STREAM_FLAG_HOOK);
		}
		r->dead |= !send_file(r, &b);
		break;
	default:
		put_end(r, f, op & 0x10, op & 0x20);
		break;
	}
	stream_buf_free(&b);
}

static void check_end(struct rig *r)
{
	enum proto_dst_state st = proto_dst_state(r->d);
	const struct cause_ctx *cx = proto_dst_cause(r->d);
	if (getenv("FUZZ_VERBOSE"))   /* how each input ended, for whoever writes seeds */
		fprintf(stderr, "destination: %s %s: %s\n", st == PROTO_DST_COMPLETED ? "completed" : "ended",
			cause_name(cx->cause), cx->detail);
	FUZZ_CHECK(st != PROTO_DST_RUNNING, "the destination still runs past its deadline");
	if (st == PROTO_DST_FAILED) {
		FUZZ_CHECK(cx->cause > 0 && cause_name(cx->cause) != NULL, "failed without a named cause (%d)",
			   cx->cause);
		return;
	}
	/* verified: every block of the destination, by the last VERIFY, as its memory is */
	FUZZ_CHECK(r->n_verify == mem_n_blocks(r->m), "verified with a VERIFY of %zu blocks of %zu", r->n_verify,
		   mem_n_blocks(r->m));
	for (size_t k = 0; k < mem_n_blocks(r->m); k++) {
		bool found = false;
		for (size_t i = 0; i < r->n_verify; i++)
			if (!strcmp(r->verify_names[i], mem_block_name(r->m, k))) {
				found = true;
				struct digest mine;
				if (proto_mem_digest(r->m, k, &mine))
					abort();
				FUZZ_CHECK(digest_eq(r->verify[i], mine),
					   "verified, but block %s differs from its VERIFY digest", r->verify_names[i]);
			}
		FUZZ_CHECK(found, "verified without a digest of block %s", mem_block_name(r->m, k));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	struct rig r;
	uint8_t mode = fz_u8(&f);
	bool pin_all = mode & 1;
	/* mode's top bits: the peer the destination plays (1..5: qemu-6.1 .. qemu-11.1,
	 * docs/profiles.md; compress-fill, accept-returns-ok, unbounded waits as QEMU_HANG): the
	 * same oracles hold */
	open_rig(&r, pin_all, (mode >> 5) < PROTO_IMPL_COUNT ? (enum proto_impl)(mode >> 5) : PROTO_IMPL_MIGBED);
	if (connect_src(&r, pin_all)) {
		hca_sleep(r.w, 1000000);
		for (int i = 0; i < MAX_OPS && f.n > 0 && !r.dead; i++)
			step(&r, &f);
	}
	/* the source waits for the destination's last word, goes away; the destination has until
	 * its deadline (and a little) */
	if (r.ep)
		hca_sleep(r.w, WAIT_NS);
	if (r.ctl_ok)
		ctl_fini(&r.ctl);
	if (r.src_mr)
		hca_dereg_mr(r.src_mr);
	hca_disconnect(r.ep);
	hca_ep_destroy(r.ep);
	for (int i = 0; i < 200 && proto_dst_state(r.d) == PROTO_DST_RUNNING; i++) {
		proto_dst_progress(r.d);
		hca_sleep(r.w, DEADLINE_NS / 100);
	}
	check_end(&r);
	proto_dst_free(r.d);
	FUZZ_CHECK(hca_world_live_objects(r.w) == 0, "%llu RDMA objects outlive the destination",
		   (unsigned long long)hca_world_live_objects(r.w));
	hca_world_free(r.w);
	stream_parser_free(r.shadow);
	mem_free(r.m);
	mem_free(r.src);
	evlog_close(r.ev);
	return 0;
}
