/* SPDX-License-Identifier: MIT */
/* fuzz_hostile_dst - a hostile destination against migbed's real source (transport/proto.h) on
 * the model backend: the mirror of fuzz_hostile_src.c. The source is driven as the pre-copy
 * engine drives it (connect; the block list; the setup round with its RAM BLOCKS exchange; two
 * RAM rounds of dirty pages, some all zero (COMPRESS), some in chunks already registered;
 * DEVICE, VERIFY, EOF; waiting for the destination's word). The destination is a scripted,
 * reactive peer (as transport/proto_src_test.c's rdst) whose every answer the input chooses:
 *   how it accepts (capabilities: pin-all, the chunk-size extension and any announced shift);
 *   for each message of the source: the honest answer (RAM BLOCKS RESULT of its blocks, pin-all
 *   blocks registered; REGISTER RESULTs of chunks it registered), a mutated one (any entry
 *   count, lengths, offsets, addresses, rkeys, repeat), any message type, repeat and payload,
 *   a second message where the READY is due, silence, an ERROR, a disconnect;
 *   a delay before any of its sends (a trickling peer: up to past the source's single wait);
 *   RDMA WRITEs into the source's registered memory with every rkey the source holds (read
 *   from the model's tables: an attacker that knows them all) or a guessed one, at any offset.
 * The source plays migbed's own peer or a QEMU profile (the input's first byte; docs/profiles.md).
 * Oracles: the source never registers its guest RAM or its control buffers with remote
 * access (a QEMU profile's control buffers excepted: QEMU's are remote-writable; checked at
 * every step of the destination), no WRITE into the source's guest succeeds and its memory's digest is
 * the same at the end; the source returns from every call by its deadline (virtual time); it
 * fails only with a named cause that is not INTERNAL (rc == -cause); no RDMA object outlives it. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "transport/hca_internal.h"
#include "transport/proto.h"
#include "transport/proto_internal.h"
#include "transport/stream.h"

#define MIB (1ull << 20)
#define PAGE 4096ull
#define ADDR "model:fuzz-src"
#define WAIT_NS (200ull * 1000 * 1000)          /* the source's single wait: 200 ms */
#define DEADLINE_NS (2ull * 1000 * 1000 * 1000)  /* and its whole migration: 2 s (virtual) */
#define MAX_DST_MRS 64
#define ATTACK_WRID 77u

/* Small guests (a world per input: the cost of an input is mostly its guest's bytes, digested
 * three times): pc.ram spans two 1 MiB chunks (the second of 4 pages), vga.vram is 16 pages
 * (the attack's buffer at the destination is its 64 KiB). */
static const struct mem_block_spec guest[] = { { "pc.ram", 1 * MIB + 4 * PAGE }, { "vga.vram", 16 * PAGE } };
#define N_GUEST 2

enum answer { A_HONEST, A_MUTATED, A_ANY, A_SECOND, A_ATTACK, A_SILENT, A_ERROR, A_DISCONNECT, A_COUNT };

struct hdst {
	hca_world *w;
	mem *m, *src;                 /* its guest; the source's (for the oracles) */
	struct fz *f;
	hca_listener *l;
	hca_ep *ep;
	struct ctl ctl;
	bool ctl_ok, established, ready_due, gone, src_done, pin_all;
	bool qemu;                    /* the source plays a QEMU profile (its control buffers are remote-writable) */
	struct wire_caps caps;
	unsigned shift;               /* the chunk size it registers: the one it announced, else 1 MiB */
	struct proto_stats st;
	struct cause_ctx cx;
	uint64_t delay_ns;            /* the delay of its next send (the fault hook) */
	bool second;                  /* send something else where the READY is due */
	hca_mr *mrs[MAX_DST_MRS];     /* what it registered (chunks, blocks, the attack's buffer) */
	size_t n_mrs;
	hca_mr *attack_mr;
	uint64_t attack_addr, attack_len;   /* the last attack's target */
	stream_parser *stream;        /* the source's stream, to know its EOF */
	const struct digest *src_digest;   /* of the source's blocks: what VERIFY says */
	bool stream_bad;
};

/* ---- the oracles that hold at every step ---------------------------------------------------- */

static bool in_src_guest(const struct hdst *d, uint64_t addr, uint64_t len)
{
	for (size_t b = 0; b < mem_n_blocks(d->src); b++) {
		uint64_t a = mem_block_addr(d->src, b), n = mem_block_bytes(d->src, b);
		if (addr < a + n && (len == 0 ? addr >= a : addr + len > a))
			return true;
	}
	return false;
}

/* migbed's own source exposes nothing for remote access: not its guest RAM (chunks and pin-all
 * blocks), nor its control buffers (LOCAL_WRITE only). A source playing a QEMU profile registers
 * its control buffers remote-writable as QEMU does (docs/security.md): only its guest RAM is
 * checked then. */
static void check_src_mrs(const struct hdst *d)
{
	for (const hca_ep *ep = d->w->eps; ep; ep = ep->next)
		if (ep->side == VOCAB_SIDE_SRC)
			for (const hca_mr *mr = ep->mrs; mr; mr = mr->next)
				FUZZ_CHECK((d->qemu && !in_src_guest(d, mr->addr, mr->len)) ||
					   !(mr->access & (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ)),
					   "the source registered %s at %llx+%llu with access 0x%x",
					   in_src_guest(d, mr->addr, mr->len) ? "its guest RAM" : "a buffer",
					   (unsigned long long)mr->addr, (unsigned long long)mr->len, mr->access);
}

/* ---- the fault hook: the destination's delays ---------------------------------------------- */

static bool delay_hook(void *ctx, const enum fault_site *sites, size_t n_sites, enum vocab_side side, uint64_t now_ns,
		       struct hca_fault_answer *a)
{
	struct hdst *d = ctx;
	(void)now_ns;
	if (side != VOCAB_SIDE_DST || !d->delay_ns)
		return false;
	for (size_t i = 0; i < n_sites; i++)
		if (sites[i] >= FAULT_SITE_MSG) {
			memset(a, 0, sizeof *a);
			a->action = FAULT_ACT_DELAY;
			a->delay_ns = d->delay_ns;
			a->site = sites[i];
			a->call = 1;
			snprintf(a->text, sizeof a->text, "delay(%lluus)", (unsigned long long)(d->delay_ns / 1000));
			d->delay_ns = 0;
			return true;
		}
	return false;
}

/* ---- the destination ------------------------------------------------------------------------ */

static hca_mr *dst_reg(struct hdst *d, uint64_t addr, uint64_t len, int access)
{
	hca_mr *mr = NULL;
	if (d->n_mrs < MAX_DST_MRS && len && hca_reg_mr(d->ep, addr, len, access, &mr) == 0)
		d->mrs[d->n_mrs++] = mr;
	return mr;
}

static int dst_send(struct hdst *d, uint32_t type, uint32_t repeat, const void *data, uint32_t len)
{
	if (len > WIRE_CONTROL_MAX_DATA)
		len = WIRE_CONTROL_MAX_DATA;
	if (ctl_post_send(&d->ctl, type, repeat, data, len, &d->cx))
		d->gone = true;
	return 1;
}

static int dst_accept(struct hdst *d)
{
	struct hca_cm_event req;
	int rc = hca_listener_poll(d->l, &d->ep, &req);
	if (rc <= 0)
		return rc;
	hca_ep_map_guest(d->ep, d->m);
	struct hca_qp_caps qc = { .max_send_wr = 16, .max_recv_wr = 3, .max_send_sge = 1, .max_recv_sge = 1,
				  .cq_entries = 64 };
	if (hca_ep_setup(d->ep, &qc) || ctl_init(&d->ctl, d->ep, VOCAB_SIDE_DST, false, &d->st, &d->cx))
		abort();
	d->ctl_ok = true;
	if (ctl_post_recv(&d->ctl, WIRE_SLOT_READY, &d->cx))
		abort();
	uint8_t pdata[WIRE_CAPS_EXT_BYTES];
	int n = wire_caps_encode(&d->caps, pdata, sizeof pdata);
	struct hca_conn_params p = { .private_data = pdata, .private_data_len = (uint8_t)n,
				     .responder_resources = 2 };
	if (hca_accept(d->ep, &p))
		d->gone = true;
	return 1;
}

/* The RAM BLOCKS RESULT: its blocks (registered whole under pin-all), honest or mutated. */
static int blocks_result(struct hdst *d, bool mutate)
{
	static uint8_t out[WIRE_DEST_BLOCK_BYTES * 8];
	memset(out, 0, sizeof out);
	size_t n = mem_n_blocks(d->m);
	uint32_t len = (uint32_t)(n * WIRE_DEST_BLOCK_BYTES), repeat = 1;
	uint8_t how = mutate ? fz_u8(d->f) : 0;
	if (how & 0x01)
		n = fz_u8(d->f) % 8;
	for (size_t b = 0; b < n; b++) {
		size_t k = b % mem_n_blocks(d->m);
		hca_mr *mr = d->pin_all ? dst_reg(d, mem_block_addr(d->m, k), mem_block_bytes(d->m, k),
						  HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE)
					: NULL;
		struct wire_dest_block db = { .remote_host_addr = mem_block_addr(d->m, k),
					      .offset = k ? 0 : 2 * MIB, .length = mem_block_bytes(d->m, k),
					      .remote_rkey = mr ? hca_mr_rkey(mr) : 0 };
		uint8_t what = how & 0x02 ? fz_u8(d->f) : 0;
		if (what & 0x01)
			db.remote_host_addr = what & 0x10 ? fz_u64(d->f, 8) : db.remote_host_addr + (fz_u64(d->f, 3) << 12);
		if (what & 0x02)
			db.offset = fz_u64(d->f, 8);
		if (what & 0x04)
			db.length = what & 0x20 ? fz_u64(d->f, 8) : db.length + fz_u64(d->f, 3) * PAGE;
		if (what & 0x08)
			db.remote_rkey = (uint32_t)fz_u64(d->f, 4);
		if (what & 0x40)
			db.remote_rkey += fz_u8(d->f) & 7;
		wire_dest_block_encode(&db, out + b * WIRE_DEST_BLOCK_BYTES, WIRE_DEST_BLOCK_BYTES);
	}
	len = (uint32_t)(n * WIRE_DEST_BLOCK_BYTES);
	if (how & 0x04)
		len = (uint32_t)(fz_u8(d->f) % (sizeof out + 1));
	if (how & 0x08)
		repeat = (uint32_t)fz_u64(d->f, 2);
	return dst_send(d, WIRE_RAM_BLOCKS_RESULT, repeat, out, len);
}

/* REGISTER RESULTs for the request's entries: chunks of its own guest registered for remote
 * writes, as the real destination does, honest or mutated. */
static int register_result(struct hdst *d, const struct wire_hdr *h, bool mutate)
{
	static uint8_t out[WIRE_REGISTER_RESULT_BYTES * 16];
	memset(out, 0, sizeof out);
	const uint8_t *in = ctl_data(&d->ctl, WIRE_SLOT_READY);
	uint32_t n = h->repeat < 16 ? h->repeat : 16, repeat = n;
	uint8_t how = mutate ? fz_u8(d->f) : 0;
	for (uint32_t i = 0; i < n && (uint64_t)(i + 1) * WIRE_REGISTER_BYTES <= h->len; i++) {
		struct wire_register q;
		struct wire_register_result res = { 0 };
		wire_register_decode(in + i * WIRE_REGISTER_BYTES, WIRE_REGISTER_BYTES, &q);
		if (q.current_index < mem_n_blocks(d->m)) {
			size_t b = q.current_index;
			uint64_t base = b ? 0 : 2 * MIB, len = mem_block_bytes(d->m, b);
			res.host_addr = mem_block_addr(d->m, b);
			uint64_t chunk = 1ull << d->shift;
			if (q.key >= base && q.key - base < len) {
				uint64_t start = (q.key - base) & ~(chunk - 1), end = start + (q.chunks + 1) * chunk;
				if (q.chunks > 64 || end > len)
					end = len;
				hca_mr *mr = dst_reg(d, res.host_addr + start, end - start,
						     HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE);
				res.rkey = mr ? hca_mr_rkey(mr) : 0;
			}
		}
		uint8_t what = how & 0x01 ? fz_u8(d->f) : 0;
		if (what & 0x01)
			res.rkey = what & 0x10 ? (uint32_t)fz_u64(d->f, 4) : res.rkey + (fz_u8(d->f) & 7);
		if (what & 0x02)
			res.host_addr = what & 0x20 ? fz_u64(d->f, 8) : res.host_addr + (fz_u64(d->f, 3) << 12);
		wire_register_result_encode(&res, out + i * WIRE_REGISTER_RESULT_BYTES, WIRE_REGISTER_RESULT_BYTES);
	}
	uint32_t len = n * WIRE_REGISTER_RESULT_BYTES;
	if (how & 0x02)
		len = (uint32_t)(fz_u8(d->f) % (sizeof out + 1));
	if (how & 0x04)
		repeat = (uint32_t)fz_u64(d->f, 2);
	return dst_send(d, WIRE_REGISTER_RESULT, repeat, out, len);
}

static int any_message(struct hdst *d)
{
	size_t n;
	uint32_t type = fz_u8(d->f) % (WIRE_TYPE_COUNT + 2), repeat = (uint32_t)fz_u64(d->f, 2);
	const uint8_t *p = fz_bytes(d->f, fz_u8(d->f), &n);
	return dst_send(d, type, repeat, p, (uint32_t)n);
}

/* An RDMA WRITE into the source: at an MR the source holds (its rkey, known from the model's
 * tables, or one near it), or at any address of its guest with a guessed rkey. */
static void attack(struct hdst *d)
{
	const hca_ep *sep = NULL;
	for (const hca_ep *ep = d->w->eps; ep; ep = ep->next)
		if (ep->side == VOCAB_SIDE_SRC)
			sep = ep;
	if (!d->attack_mr)
		d->attack_mr = dst_reg(d, mem_block_addr(d->m, 1), 64 * 1024, HCA_ACCESS_LOCAL_WRITE);
	if (!sep || !d->attack_mr)
		return;
	uint8_t how = fz_u8(d->f);
	uint64_t remote;
	uint32_t rkey;
	const hca_mr *target = NULL;
	if (sep->n_mrs && !(how & 0x80)) {
		uint64_t k = fz_u8(d->f) % sep->n_mrs;
		for (target = sep->mrs; k--; target = target->next)
			;
		remote = target->addr + fz_u64(d->f, 3) % target->len;
		rkey = target->rkey + (how & 0x40 ? fz_u8(d->f) % 5 : 0);
	} else {
		size_t b = how & 1;
		remote = mem_block_addr(d->src, b) + fz_u64(d->f, 3) % mem_block_bytes(d->src, b);
		rkey = (uint32_t)fz_u64(d->f, 2);
	}
	uint32_t len = (uint32_t)(1 + fz_u64(d->f, 2) % (64 * 1024));
	struct hca_send_wr wr = { .wr_id = ATTACK_WRID, .opcode = HCA_WR_RDMA_WRITE,
				  .local_addr = mem_block_addr(d->m, 1), .length = len,
				  .lkey = hca_mr_lkey(d->attack_mr), .remote_addr = remote, .rkey = rkey, .signaled = true };
	mem_write_pages(d->m, 1, 0, 16);   /* bytes that differ from the source's */
	d->attack_addr = remote;
	d->attack_len = len;
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "attack: write of %u bytes at %llx rkey %u (%s)\n", len, (unsigned long long)remote,
			rkey, target ? "a source MR" : "guessed");
	if (hca_post_send(d->ep, &wr))
		d->gone = true;
}

/* The source's stream, read on the side: true once it reached its EOF. */
static bool stream_eof(struct hdst *d, const uint8_t *p, uint32_t len)
{
	enum stream_event e = STREAM_EV_NEED_MORE;
	if (d->stream_bad || stream_parser_feed(d->stream, p, len)) {
		d->stream_bad = true;
		return false;
	}
	while ((e = stream_parser_next(d->stream)) != STREAM_EV_NEED_MORE && e != STREAM_EV_ERROR && e != STREAM_EV_EOF)
		;
	d->stream_bad = e == STREAM_EV_ERROR;
	return e == STREAM_EV_EOF;
}

/* A message from the source: the input says how to answer. */
static int on_message(struct hdst *d, const struct hca_wc *wc)
{
	struct wire_hdr h;
	if (ctl_decode(&d->ctl, WIRE_SLOT_READY, wc->byte_len, WIRE_NONE, &h, &d->cx) < 0)
		return 1;                 /* e.g. the source's ERROR: stay quiet */
	if (ctl_post_recv(&d->ctl, WIRE_SLOT_READY, &d->cx)) {
		d->gone = true;
		return 1;
	}
	uint8_t a = fz_u8(d->f);
	if ((a & 0xc0) == 0xc0)       /* trickle: up to 1.3 x the source's single wait */
		d->delay_ns = fz_u64(d->f, 2) * (WAIT_NS * 13 / 10 / 65535);
	enum answer ans = (enum answer)((a & 0x3f) % A_COUNT);
	if (ans == A_ATTACK) {
		attack(d);
		ans = A_HONEST;
	}
	d->second = ans == A_SECOND;
	switch (ans) {
	case A_ANY:
		return any_message(d);
	case A_SILENT:
		return 1;
	case A_ERROR:
		return dst_send(d, WIRE_ERROR, 1, NULL, 0);
	case A_DISCONNECT:
		hca_disconnect(d->ep);
		d->gone = true;
		return 1;
	default:
		break;
	}
	bool mutate = ans == A_MUTATED;
	d->ready_due = true;
	if (h.type == WIRE_RAM_BLOCKS_REQUEST)
		return blocks_result(d, mutate);
	if (h.type == WIRE_REGISTER_REQUEST)
		return register_result(d, &h, mutate);
	d->ready_due = false;
	/* the stream's EOF (read on the side): the honest destination sends no READY, it
	 * verifies and disconnects (on_source_done) */
	if (h.type == WIRE_QEMU_FILE && stream_eof(d, ctl_data(&d->ctl, WIRE_SLOT_READY), h.len) && !mutate)
		return 1;
	return dst_send(d, WIRE_READY, mutate ? (uint32_t)fz_u64(d->f, 2) : 1, NULL, 0);
}

/* After EOF the source waits for the destination to disconnect: the input's last word. */
static int on_source_done(struct hdst *d)
{
	uint8_t a = fz_u8(d->f);
	d->src_done = false;
	switch (a % 4) {
	case 0:
		hca_disconnect(d->ep);
		d->gone = true;
		return 1;
	case 1:
		return dst_send(d, WIRE_ERROR, 1, NULL, 0);
	case 2:
		return any_message(d);
	default:
		return 1;                 /* silence */
	}
}

static int dst_progress(void *arg)
{
	struct hdst *d = arg;
	check_src_mrs(d);
	if (d->gone)
		return 0;
	if (!d->ep)
		return dst_accept(d);
	struct hca_cm_event e;
	if (!d->established) {
		if (hca_ep_poll_event(d->ep, &e) <= 0)
			return 0;
		if (e.type != HCA_CM_ESTABLISHED) {
			d->gone = true;
			return 1;
		}
		d->established = true;
		return dst_send(d, WIRE_READY, 1, NULL, 0);
	}
	struct hca_wc wc;
	if (hca_poll(d->ep, HCA_CQ_SEND, &wc) > 0) {
		if (wc.wr_id == ATTACK_WRID) {
			if (getenv("FUZZ_VERBOSE"))
				fprintf(stderr, "attack: %s\n", hca_wc_status_name(wc.status));
			FUZZ_CHECK(wc.status != HCA_WC_SUCCESS || !in_src_guest(d, d->attack_addr, d->attack_len),
				   "the destination wrote %llu bytes into the source's guest at %llx",
				   (unsigned long long)d->attack_len, (unsigned long long)d->attack_addr);
			return 1;
		}
		if (d->ready_due && wc.status == HCA_WC_SUCCESS) {
			d->ready_due = false;
			if (d->second) {
				d->second = false;
				return any_message(d);
			}
			return dst_send(d, WIRE_READY, 1, NULL, 0);
		}
		return 1;
	}
	if (hca_poll(d->ep, HCA_CQ_RECV, &wc) > 0)
		return wc.status == HCA_WC_SUCCESS ? on_message(d, &wc) : 1;
	if (d->src_done)
		return on_source_done(d);
	return 0;
}

static void dst_close(struct hdst *d)
{
	for (size_t i = 0; i < d->n_mrs; i++)
		hca_dereg_mr(d->mrs[i]);
	if (d->ctl_ok)
		ctl_fini(&d->ctl);
	if (d->ep) {
		hca_disconnect(d->ep);
		hca_ep_destroy(d->ep);
	}
	hca_listener_close(d->l);
}

/* ---- the source, driven as the engine does -------------------------------------------------- */

static int put(proto_src *s, struct stream_buf *b)
{
	int rc = proto_src_put(s, b->data, b->len);
	stream_buf_free(b);
	return rc;
}

static int put_flags(proto_src *s, uint64_t w)
{
	struct stream_buf b = { 0 };
	stream_put_be64(&b, w);
	return put(s, &b);
}

static int put_header(proto_src *s, const mem *m)
{
	struct stream_buf b = { 0 };
	uint64_t total = 0;
	for (size_t i = 0; i < mem_n_blocks(m); i++)
		total += mem_block_bytes(m, i);
	stream_put_be32(&b, STREAM_MAGIC);
	stream_put_be32(&b, STREAM_VERSION);
	stream_put_u8(&b, STREAM_RAM_START);
	stream_put_be64(&b, total | STREAM_FLAG_MEM_SIZE);
	for (size_t i = 0; i < mem_n_blocks(m); i++) {
		const char *name = mem_block_name(m, i);
		stream_put_u8(&b, (uint8_t)strlen(name));
		stream_put_bytes(&b, name, strlen(name));
		stream_put_be64(&b, mem_block_bytes(m, i));
	}
	return put(s, &b);
}

/* Dirty pages of a round: written pages in several chunks, all-zero pages of a chunk not
 * registered yet (COMPRESS: pc.ram's second chunk, before its last page is written), the
 * last page of each block. */
#define ZERO_PAGE 256u
static const struct { size_t b; uint64_t page, n; } dirty[] = {
	{ 0, 0, 3 }, { 0, 100, 2 }, { 0, 200, 1 }, { 0, ZERO_PAGE, 2 }, { 0, 259, 1 }, { 1, 0, 4 }, { 1, 15, 1 },
};

static int round_of(proto_src *s, bool last)
{
	int rc;
	uint8_t part = STREAM_RAM_PART;
	if ((rc = put_flags(s, STREAM_FLAG_EOS)) || (rc = proto_src_put(s, &part, 1)) ||
	    (rc = proto_src_reg_start(s)))
		return rc;
	for (size_t i = 0; i < sizeof dirty / sizeof dirty[0]; i++)
		for (uint64_t p = 0; p < dirty[i].n; p++)
			if ((rc = proto_src_save_page(s, dirty[i].b, dirty[i].page + p)) || (rc = proto_src_poll(s)))
				return rc;
	if ((rc = proto_src_scan_wrapped(s)) || (rc = proto_src_reg_stop(s, false)))
		return rc;
	(void)last;
	return 0;
}

static int migrate(proto_src *s, mem *m, struct hdst *d, unsigned rounds)
{
	int rc;
	if ((rc = proto_src_connect(s, ADDR)) || (rc = put_header(s, m)) || (rc = proto_src_reg_start(s)) ||
	    (rc = proto_src_reg_stop(s, true)))
		return rc;
	for (unsigned i = 0; i < rounds; i++)
		if ((rc = round_of(s, i + 1 == rounds)))
			return rc;
	proto_src_set_guest_stopped(s, true);
	struct stream_buf b = { 0 };
	stream_put_be64(&b, STREAM_FLAG_EOS);
	stream_put_u8(&b, STREAM_DEVICE);
	stream_put_be32(&b, 4);
	stream_put_bytes(&b, "dev!", 4);
	stream_put_digest(&b, digest_of("dev!", 4));
	stream_put_u8(&b, STREAM_VERIFY);
	stream_put_be32(&b, (uint32_t)mem_n_blocks(m));
	for (size_t i = 0; i < mem_n_blocks(m); i++)
		stream_put_digest(&b, d->src_digest[i]);
	stream_put_u8(&b, STREAM_EOF);
	if ((rc = put(s, &b)) || (rc = proto_src_flush(s)))
		return rc;
	d->src_done = true;
	return proto_src_await_peer(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t mode = fz_u8(&f), caps = fz_u8(&f);
	/* mode's top bits: the peer the source plays (1..5: qemu-6.1 .. qemu-11.1, docs/profiles.md).
	 * A QEMU source under pin-all registers its guest RAM remote-writable, as QEMU's
	 * qemu_rdma_reg_whole_ram_blocks does (docs/security.md): its destination can write it, by
	 * design, and the source's guest here is shared by every input; so a QEMU profile runs with
	 * dynamic registration only, where QEMU's source exposes nothing. */
	enum proto_impl impl = (mode >> 5) < PROTO_IMPL_COUNT ? (enum proto_impl)(mode >> 5) : PROTO_IMPL_MIGBED;
	const struct proto_profile *prof = proto_profile(impl);
	if (prof->qemu)
		mode &= (uint8_t)~1u;
	static const vclock zero;
	evlog *ev;
	hca_world *w;
	mem *md;
	/* The source's guest is the same for every input and the oracle below checks that no
	 * input changes it: built once (with its digests), the harness's only state across inputs. */
	static mem *ms;
	static struct digest digest[N_GUEST];
	if (!ms) {
		if (mem_new(PAGE, N_GUEST, guest, MEM_REPR_BYTES, 1, &ms))
			abort();
		for (size_t i = 0; i < sizeof dirty / sizeof dirty[0]; i++)
			if (dirty[i].page != ZERO_PAGE)   /* stays zero: COMPRESS */
				mem_write_pages(ms, dirty[i].b, dirty[i].page, dirty[i].n);
		for (size_t b = 0; b < N_GUEST; b++)
			if (proto_mem_digest(ms, b, &digest[b]))
				abort();
	}
	if (evlog_open(NULL, &zero, &ev) || hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, ev, &w))
		abort();
	evlog_set_clock(ev, hca_world_clock(w));
	if (mem_new(PAGE, N_GUEST, guest, MEM_REPR_BYTES, 2, &md))
		abort();

	struct hdst d;
	memset(&d, 0, sizeof d);
	d.w = w;
	d.m = md;
	d.src = ms;
	d.src_digest = digest;
	d.f = &f;
	d.caps.version = caps & 0x80 ? fz_u8(&f) : WIRE_CAP_VERSION;
	d.caps.flags = caps & 0x03;
	d.caps.chunk_shift = caps & 0x40 ? fz_u8(&f) : 20 + ((caps >> 2) & 3);
	d.shift = (d.caps.flags & WIRE_CAP_CHUNK_SIZE) && d.caps.chunk_shift >= WIRE_CHUNK_SHIFT_MIN &&
				  d.caps.chunk_shift <= WIRE_CHUNK_SHIFT_MAX
			  ? d.caps.chunk_shift
			  : 20;
	d.pin_all = (d.caps.flags & WIRE_CAP_PIN_ALL) && (mode & 1);
	if (stream_parser_new(&d.stream))
		abort();
	struct hca_fault_hook hook = { .check = delay_hook, .ctx = &d };
	hca_world_set_fault_hook(w, &hook);
	if (hca_listen(w, VOCAB_SIDE_DST, ADDR, &d.l) || hca_world_add_progress(w, dst_progress, &d))
		abort();

	struct proto_opts o;
	proto_opts_defaults(&o);
	o.pin_all = mode & 1;
	o.negotiate = mode & 2;
	o.refuse_mismatch = mode & 4;
	o.chunk_shift = 20 + ((mode >> 3) & 1);
	/* the profile with the options a run takes with it (runcfg refuses the rest): no
	 * negotiation, and 1 MiB chunks before 11.1 */
	o.impl = impl;
	d.qemu = prof->qemu;
	if (prof->qemu)
		o.negotiate = false;
	if (!prof->chunk_param)
		o.chunk_shift = 20;
	o.wait_timeout_ns = WAIT_NS;
	o.deadline_ns = DEADLINE_NS;
	proto_src *s;
	if (proto_src_new(w, ms, &o, &s))
		abort();
	uint64_t t0 = vclock_now_ns(hca_world_clock(w));
	int rc = migrate(s, ms, &d, 1 + ((mode >> 4) & 1));
	uint64_t t_ns = vclock_now_ns(hca_world_clock(w)) - t0;
	const struct cause_ctx *cx = proto_src_cause(s);
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "source (%s): rc %d %s: %s (%llu ms)\n", prof->name, rc, cause_name(cx->cause), cx->detail,
			(unsigned long long)(t_ns / 1000000));
	FUZZ_CHECK(t_ns <= DEADLINE_NS + 2 * WAIT_NS, "the source ran %llu ms, past its deadline of %llu ms",
		   (unsigned long long)(t_ns / 1000000), (unsigned long long)(DEADLINE_NS / 1000000));
	if (rc) {
		FUZZ_CHECK(rc < 0 && rc == -cx->cause, "the source returned %d with cause %d", rc, cx->cause);
		FUZZ_CHECK(cause_name(cx->cause) != NULL && cx->cause != CAUSE_INTERNAL,
			   "the source failed without a named cause: %s (%s)",
			   cause_name(cx->cause) ? cause_name(cx->cause) : "?", cx->detail);
	}
	check_src_mrs(&d);
	/* A QEMU source that swallowed a polling error and then stopped in a wait QEMU would never
	 * leave (migbed's QEMU_HANG; the swallowed error stays the cause) sends no ERROR when freed:
	 * QEMU, still waiting, would send nothing */
	bool hung = rc && d.qemu && strstr(cx->detail, " went on and stopped later at QEMU_HANG") != NULL;
	uint64_t errors = evlog_count_event(ev, "send_error");
	proto_src_free(s);
	FUZZ_CHECK(!hung || evlog_count_event(ev, "send_error") == errors,
		   "a source stopped where QEMU would wait forever sent an ERROR when freed");
	hca_sleep(w, 1000000);
	d.gone = true;
	dst_close(&d);
	stream_parser_free(d.stream);
	for (size_t b = 0; b < N_GUEST; b++) {
		struct digest now;
		FUZZ_CHECK(proto_mem_digest(ms, b, &now) == 0 && digest_eq(now, digest[b]),
			   "the destination changed the source's block %s", mem_block_name(ms, b));
	}
	FUZZ_CHECK(hca_world_live_objects(w) == 0, "%llu RDMA objects outlive the source",
		   (unsigned long long)hca_world_live_objects(w));
	hca_world_free(w);
	mem_free(md);
	evlog_close(ev);
	return 0;
}
