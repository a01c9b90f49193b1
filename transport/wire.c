/* SPDX-License-Identifier: MIT */
/* wire - QEMU's RDMA migration wire formats (see wire.h; docs/protocol.md, 'Capabilities',
 * 'Control header', 'Control messages', 'Work-request ids', 'Payload records' and
 * 'Chunk arithmetic').
 *
 * Every record is read and written one field at a time in network byte order; no struct is
 * ever copied to or from a buffer. Decoders accept a buffer longer than the record (the
 * caller may hand over a whole RECV or padded private data) and read only the record. */
#include "transport/wire.h"

#include <assert.h>
#include <errno.h>

#define WIRE_WRID_TYPE_BITS   16u
#define WIRE_WRID_BLOCK_BITS  14u
#define WIRE_WRID_TYPE_MASK   ((UINT64_C(1) << WIRE_WRID_TYPE_BITS) - 1u)
#define WIRE_WRID_BLOCK_MASK  ((UINT64_C(1) << WIRE_WRID_BLOCK_BITS) - 1u)
#define WIRE_WRID_BLOCK_SHIFT WIRE_WRID_TYPE_BITS
#define WIRE_WRID_CHUNK_SHIFT (WIRE_WRID_TYPE_BITS + WIRE_WRID_BLOCK_BITS)
#define WIRE_WRID_CHUNK_MAX   ((UINT64_C(1) << (64u - WIRE_WRID_CHUNK_SHIFT)) - 1u)

/* ---- big-endian field helpers ------------------------------------------------------------ */

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* Common checks of every encoder: arguments present, room for need bytes. */
static int enc_check(const void *rec, const uint8_t *buf, size_t len, size_t need)
{
	if (!rec || !buf)
		return -EINVAL;
	if (len < need)
		return -ENOSPC;
	return 0;
}

/* Common checks of every decoder: arguments present, at least need bytes of input. */
static int dec_check(const uint8_t *buf, size_t len, const void *out, size_t need)
{
	if (!buf || !out || len < need)
		return -EINVAL;
	return 0;
}

/* ---- capabilities (docs/protocol.md, 'Capabilities') ------------------------------------- */

int wire_caps_encode(const struct wire_caps *c, uint8_t *buf, size_t len)
{
	int rc = enc_check(c, buf, len, WIRE_CAPS_BYTES);
	if (rc < 0)
		return rc;
	if (!(c->flags & WIRE_CAP_CHUNK_SIZE)) {
		put_be32(buf, c->version);
		put_be32(buf + 4, c->flags);
		return (int)WIRE_CAPS_BYTES;
	}
	if (len < WIRE_CAPS_EXT_BYTES)
		return -ENOSPC;
	put_be32(buf, c->version);
	put_be32(buf + 4, c->flags);
	put_be32(buf + 8, c->chunk_shift);
	put_be32(buf + 12, 0);
	return (int)WIRE_CAPS_EXT_BYTES;
}

int wire_caps_decode(const uint8_t *buf, size_t len, struct wire_caps *out)
{
	int rc = dec_check(buf, len, out, WIRE_CAPS_BYTES);
	if (rc < 0)
		return rc;
	uint32_t flags = get_be32(buf + 4);
	if ((flags & WIRE_CAP_CHUNK_SIZE) && len < WIRE_CAPS_EXT_BYTES)
		return -EINVAL;
	out->version = get_be32(buf);
	out->flags = flags;
	out->chunk_shift = (flags & WIRE_CAP_CHUNK_SIZE) ? get_be32(buf + 8) : 0;
	return 0;
}

/* ---- control header (docs/protocol.md, 'Control header', 'Control messages') ------------- */

const char *wire_type_name(uint32_t type)
{
	return vocab_msg_type_name(type);
}

const char *wire_type_token(uint32_t type)
{
	return vocab_msg_type_token(type);
}

int wire_hdr_encode(const struct wire_hdr *h, uint8_t *buf, size_t len)
{
	int rc = enc_check(h, buf, len, WIRE_HDR_BYTES);
	if (rc < 0)
		return rc;
	put_be32(buf, h->len);
	put_be32(buf + 4, h->type);
	put_be32(buf + 8, h->repeat);
	put_be32(buf + 12, h->padding);
	return (int)WIRE_HDR_BYTES;
}

int wire_hdr_decode(const uint8_t *buf, size_t len, struct wire_hdr *out)
{
	int rc = dec_check(buf, len, out, WIRE_HDR_BYTES);
	if (rc < 0)
		return rc;
	out->len = get_be32(buf);
	out->type = get_be32(buf + 4);
	out->repeat = get_be32(buf + 8);
	out->padding = get_be32(buf + 12);
	return 0;
}

bool wire_corrupt(uint8_t *msg, uint32_t len, int how)
{
	if (len < WIRE_HDR_BYTES)
		return false;
	switch (how) {
	case FAULT_CORRUPT_LEN:
		msg[0] ^= 0x40;           /* len + 1 GiB: "too long length" */
		return true;
	case FAULT_CORRUPT_TYPE:
		msg[7] ^= 0x80;           /* an unknown type */
		return true;
	case FAULT_CORRUPT_REPEAT:
		msg[9] ^= 0x01;           /* repeat +/- 65536: over 4096 */
		return true;
	default:
		if (len <= WIRE_HDR_BYTES)
			return false;
		msg[WIRE_HDR_BYTES] ^= 0xff;
		return true;
	}
}

/* ---- payload records (docs/protocol.md, 'Payload records') ------------------------------- */

int wire_dest_block_encode(const struct wire_dest_block *b, uint8_t *buf, size_t len)
{
	int rc = enc_check(b, buf, len, WIRE_DEST_BLOCK_BYTES);
	if (rc < 0)
		return rc;
	put_be64(buf, b->remote_host_addr);
	put_be64(buf + 8, b->offset);
	put_be64(buf + 16, b->length);
	put_be32(buf + 24, b->remote_rkey);
	put_be32(buf + 28, b->padding);
	return (int)WIRE_DEST_BLOCK_BYTES;
}

int wire_dest_block_decode(const uint8_t *buf, size_t len, struct wire_dest_block *out)
{
	int rc = dec_check(buf, len, out, WIRE_DEST_BLOCK_BYTES);
	if (rc < 0)
		return rc;
	out->remote_host_addr = get_be64(buf);
	out->offset = get_be64(buf + 8);
	out->length = get_be64(buf + 16);
	out->remote_rkey = get_be32(buf + 24);
	out->padding = get_be32(buf + 28);
	return 0;
}

int wire_register_encode(const struct wire_register *r, uint8_t *buf, size_t len)
{
	int rc = enc_check(r, buf, len, WIRE_REGISTER_BYTES);
	if (rc < 0)
		return rc;
	put_be64(buf, r->key);
	put_be32(buf + 8, r->current_index);
	put_be32(buf + 12, r->padding);
	put_be64(buf + 16, r->chunks);
	return (int)WIRE_REGISTER_BYTES;
}

int wire_register_decode(const uint8_t *buf, size_t len, struct wire_register *out)
{
	int rc = dec_check(buf, len, out, WIRE_REGISTER_BYTES);
	if (rc < 0)
		return rc;
	out->key = get_be64(buf);
	out->current_index = get_be32(buf + 8);
	out->padding = get_be32(buf + 12);
	out->chunks = get_be64(buf + 16);
	return 0;
}

int wire_register_result_encode(const struct wire_register_result *r, uint8_t *buf, size_t len)
{
	int rc = enc_check(r, buf, len, WIRE_REGISTER_RESULT_BYTES);
	if (rc < 0)
		return rc;
	put_be32(buf, r->rkey);
	put_be32(buf + 4, r->padding);
	put_be64(buf + 8, r->host_addr);
	return (int)WIRE_REGISTER_RESULT_BYTES;
}

int wire_register_result_decode(const uint8_t *buf, size_t len, struct wire_register_result *out)
{
	int rc = dec_check(buf, len, out, WIRE_REGISTER_RESULT_BYTES);
	if (rc < 0)
		return rc;
	out->rkey = get_be32(buf);
	out->padding = get_be32(buf + 4);
	out->host_addr = get_be64(buf + 8);
	return 0;
}

int wire_compress_encode(const struct wire_compress *c, uint8_t *buf, size_t len)
{
	int rc = enc_check(c, buf, len, WIRE_COMPRESS_BYTES);
	if (rc < 0)
		return rc;
	put_be32(buf, c->value);
	put_be32(buf + 4, c->block_idx);
	put_be64(buf + 8, c->offset);
	put_be64(buf + 16, c->length);
	return (int)WIRE_COMPRESS_BYTES;
}

int wire_compress_decode(const uint8_t *buf, size_t len, struct wire_compress *out)
{
	int rc = dec_check(buf, len, out, WIRE_COMPRESS_BYTES);
	if (rc < 0)
		return rc;
	out->value = get_be32(buf);
	out->block_idx = get_be32(buf + 4);
	out->offset = get_be64(buf + 8);
	out->length = get_be64(buf + 16);
	return 0;
}

/* ---- work-request ids (docs/protocol.md, 'Work-request ids') ----------------------------- */

uint64_t wire_wrid_write(uint32_t block, uint64_t chunk)
{
	assert(block <= WIRE_WRID_BLOCK_MASK);
	assert(chunk <= WIRE_WRID_CHUNK_MAX);
	return (uint64_t)WIRE_WRID_RDMA_WRITE |
	       ((uint64_t)block & WIRE_WRID_BLOCK_MASK) << WIRE_WRID_BLOCK_SHIFT |
	       (chunk & WIRE_WRID_CHUNK_MAX) << WIRE_WRID_CHUNK_SHIFT;
}

uint32_t wire_wrid_type(uint64_t wr_id)
{
	return (uint32_t)(wr_id & WIRE_WRID_TYPE_MASK);
}

uint32_t wire_wrid_block(uint64_t wr_id)
{
	return (uint32_t)((wr_id >> WIRE_WRID_BLOCK_SHIFT) & WIRE_WRID_BLOCK_MASK);
}

uint64_t wire_wrid_chunk(uint64_t wr_id)
{
	return wr_id >> WIRE_WRID_CHUNK_SHIFT;
}

/* ---- chunk arithmetic (docs/protocol.md, 'Chunk arithmetic') ----------------------------- */

uint64_t wire_chunk_index(uint64_t block_base, uint64_t h, unsigned shift)
{
	assert(shift < 64u);
	assert(h >= block_base);
	return (h - block_base) >> shift;
}

uint64_t wire_chunk_start(uint64_t block_base, uint64_t idx, unsigned shift)
{
	assert(shift < 64u);
	return block_base + (idx << shift);
}

uint64_t wire_chunk_end(uint64_t block_base, uint64_t block_len, uint64_t idx, unsigned shift)
{
	uint64_t start = wire_chunk_start(block_base, idx, shift);
	uint64_t block_end = block_base + block_len;
	/* no start + chunk: a block at the top of the address space would wrap it */
	return start < block_end && block_end - start > (UINT64_C(1) << shift) ? start + (UINT64_C(1) << shift)
										 : block_end;
}

uint64_t wire_nb_chunks(uint64_t block_len, unsigned shift)
{
	assert(shift < 64u);
	return (block_len >> shift) + 1u;
}

uint64_t wire_additional_chunks(uint64_t len, unsigned shift)
{
	assert(shift < 64u);
	uint64_t n = len >> shift;
	uint64_t rem = len & ((UINT64_C(1) << shift) - 1u);
	if (n > 0 && rem == 0)
		n--;
	return n;
}

int wire_chunk_shift(uint64_t chunk_bytes, unsigned *shift)
{
	if (!shift)
		return -EINVAL;
	for (unsigned s = WIRE_CHUNK_SHIFT_MIN; s <= WIRE_CHUNK_SHIFT_MAX; s++) {
		if (chunk_bytes == UINT64_C(1) << s) {
			*shift = s;
			return 0;
		}
	}
	return -EINVAL;
}
