/* SPDX-License-Identifier: MIT */
/* proto_common - control channel framing shared by source and destination. */
#include "transport/proto_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void proto_opts_defaults(struct proto_opts *o)
{
	memset(o, 0, sizeof *o);
	o->chunk_shift = WIRE_CHUNK_SHIFT_MIN;
	o->wait_timeout_ns = PROTO_DEFAULT_WAIT_NS;
	o->deadline_ns = PROTO_DEFAULT_DEADLINE_NS;
	o->caps_version = WIRE_CAP_VERSION;
}

/* A control buffer: page-aligned (the model counts pinned bytes by page), zero, and lazy: its
 * pages are the kernel's zero page until a message is written into them, so a side that only
 * ever exchanges small messages touches a few of its 512 KiB (a world per fuzz input, a
 * swarm's thousands of runs). A PROT_NONE page on each side: a read or write past either end
 * faults, in every build, as ASan's redzones would. */
#define CTL_GUARD_BYTES 4096u

static uint8_t *ctl_buf_map(void)
{
	size_t total = WIRE_CONTROL_BUF_BYTES + 2 * CTL_GUARD_BYTES;
	uint8_t *p = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + CTL_GUARD_BYTES, WIRE_CONTROL_BUF_BYTES, PROT_READ | PROT_WRITE)) {
		munmap(p, total);
		return NULL;
	}
	return p + CTL_GUARD_BYTES;
}

static void ctl_buf_unmap(uint8_t *b)
{
	if (b)
		munmap(b - CTL_GUARD_BYTES, WIRE_CONTROL_BUF_BYTES + 2 * CTL_GUARD_BYTES);
}

int ctl_init(struct ctl *c, hca_ep *ep, enum vocab_side side, bool remote_write,
	     struct proto_stats *st, struct cause_ctx *cx)
{
	unsigned access = HCA_ACCESS_LOCAL_WRITE | (remote_write ? HCA_ACCESS_REMOTE_WRITE : 0u);
	memset(c, 0, sizeof *c);
	c->ep = ep;
	c->side = side;
	c->stats = st;
	for (int i = 0; i < WIRE_SLOTS; i++) {
		int frc = hca_fault_alloc(hca_ep_world(ep), side);   /* the `alloc` fault site */
		c->buf[i] = frc ? NULL : ctl_buf_map();
		if (!c->buf[i])
			return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "control buffer %d: %s", i,
					 strerror(frc ? -frc : ENOMEM));
		int rc = hca_reg_mr(ep, (uint64_t)(uintptr_t)c->buf[i], WIRE_CONTROL_BUF_BYTES, access,
				    &c->mr[i]);
		if (rc)
			return cause_set(cx, CAUSE_CONTROL_REG_FAILED,
					 "error registering %d control: %s", i, strerror(-rc));
	}
	return 0;
}

void ctl_fini(struct ctl *c)
{
	for (int i = 0; i < WIRE_SLOTS; i++) {
		if (c->mr[i])
			hca_dereg_mr(c->mr[i]);
		c->mr[i] = NULL;
		ctl_buf_unmap(c->buf[i]);
		c->buf[i] = NULL;
	}
}

int ctl_post_recv(struct ctl *c, enum wire_slot slot, struct cause_ctx *cx)
{
	int rc = hca_post_recv(c->ep, CTL_WRID_RECV(slot), (uint64_t)(uintptr_t)c->buf[slot],
			       WIRE_CONTROL_BUF_BYTES, hca_mr_lkey(c->mr[slot]));
	if (rc)
		return cause_set(cx, CAUSE_CONTROL_RECV_FAILED, "error posting control recv (slot %d): %s",
				 (int)slot, strerror(-rc));
	return 0;
}

int ctl_post_send(struct ctl *c, uint32_t type, uint32_t repeat, const void *data,
		  uint32_t len, struct cause_ctx *cx)
{
	if (len > WIRE_CONTROL_MAX_DATA)
		return cause_set(cx, CAUSE_INTERNAL, "control message of %u bytes exceeds 512 KiB", len);
	struct wire_hdr h = { .len = len, .type = type, .repeat = repeat,
			      .padding = type == WIRE_QEMU_FILE ? c->file_padding : 0 };
	uint8_t *b = c->buf[WIRE_SLOT_CONTROL];
	wire_hdr_encode(&h, b, WIRE_HDR_BYTES);
	if (len)
		memcpy(b + WIRE_HDR_BYTES, data, len);
	const struct hca_ctl_msg msg = { .type = type, .corrupt = wire_corrupt };
	struct hca_send_wr wr = {
		.wr_id = WIRE_WRID_SEND_CONTROL,
		.opcode = HCA_WR_SEND,
		.local_addr = (uint64_t)(uintptr_t)b,
		.length = WIRE_HDR_BYTES + len,
		.lkey = hca_mr_lkey(c->mr[WIRE_SLOT_CONTROL]),
		.signaled = true,
		.ctl = type < WIRE_TYPE_COUNT ? &msg : NULL,
	};
	int rc = hca_post_send(c->ep, &wr);
	if (rc)
		return cause_set(cx, CAUSE_CONTROL_SEND_FAILED,
				 "Failed to use post IB SEND for control (%s): %s",
				 wire_type_name(type), strerror(-rc));
	if (type < WIRE_TYPE_COUNT)
		c->stats->msgs_sent[type]++;
	return 0;
}

const uint8_t *ctl_data(const struct ctl *c, enum wire_slot slot)
{
	return c->buf[slot] + WIRE_HDR_BYTES;
}

int ctl_decode(struct ctl *c, enum wire_slot slot, uint32_t byte_len, uint32_t want,
	       struct wire_hdr *h, struct cause_ctx *cx)
{
	if (byte_len < WIRE_HDR_BYTES || wire_hdr_decode(c->buf[slot], byte_len, h) < 0)
		return cause_set(cx, CAUSE_MESSAGE_MALFORMED, "control message of %u bytes is shorter than its header",
				 byte_len);
	bool len_ok = h->len <= WIRE_CONTROL_MAX_DATA && WIRE_HDR_BYTES + h->len == byte_len;
	if (len_ok && h->type < WIRE_TYPE_COUNT)     /* a message whose length is refused is not counted */
		c->stats->msgs_recv[h->type]++;
	/* QEMU's qemu_rdma_exchange_get_response: the type first, then the length */
	if (want != WIRE_NONE && h->type != want && h->type == WIRE_ERROR)
		return cause_set(cx, CAUSE_PEER_ERROR,
				 "Was expecting a %s (%u) control message, but got: ERROR (1), length: %u",
				 wire_type_name(want), want, h->len);
	if (want != WIRE_NONE && h->type != want)
		return cause_set(cx, CAUSE_UNEXPECTED_MESSAGE,
				 "Was expecting a %s (%u) control message, but got: %s (%u), length: %u",
				 wire_type_name(want), want, wire_type_name(h->type), h->type, h->len);
	if (h->len > WIRE_CONTROL_MAX_DATA)
		return cause_set(cx, CAUSE_MESSAGE_MALFORMED, "too long length: %u", h->len);
	if (WIRE_HDR_BYTES + h->len != byte_len)
		return cause_set(cx, CAUSE_MESSAGE_MALFORMED, "Malformed length: %u byte_len %u", h->len, byte_len);
	return 0;
}

int ctl_check_repeat(const struct wire_hdr *h, struct cause_ctx *cx)
{
	if (h->repeat > WIRE_MAX_REPEAT)
		return cause_set(cx, CAUSE_TOO_MANY_REQUESTS,
				 "rdma: Too many requests in this message (%u).Bailing.", h->repeat);
	return 0;
}

int ctl_status_cause(int status, int fallback)
{
	switch (status) {
	case HCA_WC_REM_ACCESS_ERR:
		return CAUSE_REMOTE_ACCESS_ERROR;
	case HCA_WC_RNR_RETRY_EXC_ERR:
		return CAUSE_RNR_RETRY_EXCEEDED;
	case HCA_WC_RETRY_EXC_ERR:
		return CAUSE_TRANSPORT_RETRY_EXCEEDED;
	case HCA_WC_WR_FLUSH_ERR:
		return CAUSE_QP_ERROR;      /* a consequence: the QP went to error earlier */
	default:
		return fallback;
	}
}

int ctl_wait_cause(int rc)
{
	if (rc == -ECONNRESET)
		return CAUSE_PEER_DISCONNECTED;
	if (rc == -ENODEV)
		return CAUSE_DEVICE_REMOVED;
	return CAUSE_INTERNAL;
}

int proto_mem_digest(const mem *m, size_t b, struct digest *out)
{
	digest_state *h = digest_begin((uint64_t)b);
	if (!h)
		return -ENOMEM;
	uint64_t pages = mem_block_pages(m, b);
	if (mem_repr(m) == MEM_REPR_BYTES) {
		const void *p = mem_block_ptr((mem *)m, b);
		uint64_t bytes = mem_block_bytes(m, b);
		for (uint64_t off = 0; off < bytes; off += 1u << 20) {
			uint64_t n = bytes - off < (1u << 20) ? bytes - off : (1u << 20);
			if (!mem_pages_zero(m, b, off / mem_page_size(m), (n + mem_page_size(m) - 1) / mem_page_size(m)))
				digest_add(h, (const uint8_t *)p + off, n);
			else
				digest_add(h, "Z", 1);
		}
		*out = digest_end(h);
		return 0;
	}
	/* page by page, each stamp's 8 bytes in turn, a batch of stamps at a time (the digest of
	 * pieces is that of their concatenation) */
	uint64_t st[512];
	for (uint64_t pg = 0; pg < pages;) {
		uint64_t n = pages - pg < 512 ? pages - pg : 512;
		mem_page_stamps(m, b, pg, n, st);
		digest_add(h, st, (size_t)n * sizeof st[0]);
		pg += n;
	}
	*out = digest_end(h);
	return 0;
}

int proto_negotiate_chunk(unsigned src_shift, bool dst_announced, unsigned dst_shift, bool pin_all,
			  bool refuse, unsigned *use_shift)
{
	unsigned theirs = dst_announced ? dst_shift : WIRE_CHUNK_SHIFT_MIN;
	*use_shift = src_shift;
	if (pin_all || src_shift == theirs)
		return 0;
	if (refuse)
		return -CAUSE_CHUNK_SIZE_MISMATCH;
	if (src_shift > theirs)
		*use_shift = theirs;
	return 0;
}

const char *proto_wrid_str(uint64_t wr_id, char *buf, size_t n)
{
	uint32_t type = wire_wrid_type(wr_id);
	const char *name = type >= WIRE_WRID_RECV_CONTROL ? "CONTROL RECV"
			   : type >= WIRE_WRID_SEND_CONTROL ? "CONTROL SEND"
			   : type == WIRE_WRID_RDMA_WRITE ? "WRITE RDMA" : "NONE";
	snprintf(buf, n, "%s (%u)", name, type);
	return buf;
}

bool proto_cause_is_hang(int cause)
{
	if (cause < 0)
		cause = -cause;
	return cause == CAUSE_QEMU_HANG || cause == CAUSE_COMPLETION_DROPPED;
}
