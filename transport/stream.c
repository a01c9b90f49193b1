/* SPDX-License-Identifier: MIT */
/* stream - migbed's stream: writer helpers and the incremental parser (see stream.h). */
#include "transport/stream.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_BUF_MAX (STREAM_DEVICE_MAX + 1024u * 1024u)

static int buf_reserve(struct stream_buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return 0;
	if (b->len + more > STREAM_BUF_MAX)
		return -E2BIG;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int stream_put_bytes(struct stream_buf *b, const void *p, size_t n)
{
	int rc = buf_reserve(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int stream_put_u8(struct stream_buf *b, uint8_t v)
{
	return stream_put_bytes(b, &v, 1);
}

int stream_put_be32(struct stream_buf *b, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
	return stream_put_bytes(b, x, sizeof x);
}

int stream_put_be64(struct stream_buf *b, uint64_t v)
{
	int rc = stream_put_be32(b, (uint32_t)(v >> 32));
	return rc ? rc : stream_put_be32(b, (uint32_t)v);
}

void stream_buf_free(struct stream_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof *b);
}

int stream_put_digest(struct stream_buf *b, struct digest d)
{
	uint8_t c[DIGEST_BYTES];
	digest_put(d, c);
	return stream_put_bytes(b, c, sizeof c);
}

/* ---- parser ------------------------------------------------------------------------------- */

/* Internal: "state changed, parse on" -- stream_parser_next loops on it, so a run of records
 * costs no stack (one recursion per record once let a hostile source overflow it). */
#define EV_AGAIN ((enum stream_event)(STREAM_EV_ERROR + 1))

enum pstate { PS_HEADER, PS_TOP, PS_RAM_START, PS_RAM_PART, PS_DONE, PS_ERROR };

struct stream_parser {
	struct stream_buf in;
	size_t pos;                 /* read offset in `in` */
	uint64_t consumed;          /* bytes consumed before in.data[0] (for offsets) */
	enum pstate st;
	bool blocks_seen;
	size_t n_blocks;
	struct stream_block blocks[STREAM_MAX_BLOCKS];
	uint64_t device_bytes;
	size_t n_digests;
	struct digest digests[STREAM_MAX_BLOCKS];
	uint32_t bad_version;       /* the header's version, when that is what was refused */
	char err[256];
};

int stream_parser_new(stream_parser **out)
{
	stream_parser *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	*out = p;
	return 0;
}

void stream_parser_free(stream_parser *p)
{
	if (!p)
		return;
	stream_buf_free(&p->in);
	free(p);
}

int stream_parser_feed(stream_parser *p, const void *data, size_t len)
{
	if (p->pos > 0 && p->pos * 2 >= p->in.len) {
		memmove(p->in.data, p->in.data + p->pos, p->in.len - p->pos);
		p->in.len -= p->pos;
		p->consumed += p->pos;
		p->pos = 0;
	}
	return stream_put_bytes(&p->in, data, len);
}

static size_t avail(const stream_parser *p)
{
	return p->in.len - p->pos;
}

static uint64_t rd_be(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | b[i];
	return v;
}

static enum stream_event fail(stream_parser *p, size_t at, const char *what)
{
	const uint8_t *b = p->in.data + at;
	size_t n = p->in.len - at < 8 ? p->in.len - at : 8;
	int o = snprintf(p->err, sizeof p->err, "offset %llu: %s (bytes",
			 (unsigned long long)(p->consumed + at), what);
	for (size_t i = 0; i < n && o > 0 && (size_t)o < sizeof p->err - 4; i++)
		o += snprintf(p->err + o, sizeof p->err - (size_t)o, " %02x", b[i]);
	if (o > 0 && (size_t)o < sizeof p->err - 2)
		snprintf(p->err + o, sizeof p->err - (size_t)o, ")");
	p->st = PS_ERROR;
	return STREAM_EV_ERROR;
}

/* A header of another stream version: refused, naming both versions (3: the digests were 8
 * bytes then, so its VERIFY would be read as something else). */
static enum stream_event bad_version(stream_parser *p)
{
	char what[160];
	uint32_t v = (uint32_t)rd_be(p->in.data + p->pos + 4, 4);
	snprintf(what, sizeof what, "unsupported stream version %u (want %u%s)", v, STREAM_VERSION,
		 v == 3 ? ": version 3 is a migbed build's from before the 16-byte digests" : "");
	p->bad_version = v ? v : UINT32_MAX;
	return fail(p, p->pos, what);
}

/* RAM START after MEM_SIZE: the block list. Returns 1 parsed, 0 need more, -1 error. */
static int parse_block_list(stream_parser *p, uint64_t total)
{
	size_t at = p->pos, n = 0;
	uint64_t sum = 0;
	const uint8_t *b = p->in.data;
	while (sum < total) {
		if (n == STREAM_MAX_BLOCKS) {
			fail(p, at, "more than 64 RAM blocks");
			return -1;
		}
		if (p->in.len - at < 1)
			return 0;
		size_t nl = b[at];
		if (nl == 0) {
			fail(p, at, "empty RAM block name");
			return -1;
		}
		if (p->in.len - at < 1 + nl + 8)
			return 0;
		if (memchr(b + at + 1, '\0', nl)) {   /* it would read as a shorter name */
			fail(p, at, "RAM block name holds a NUL byte");
			return -1;
		}
		memcpy(p->blocks[n].name, b + at + 1, nl);
		p->blocks[n].name[nl] = '\0';
		p->blocks[n].length = rd_be(b + at + 1 + nl, 8);
		if (p->blocks[n].length == 0 || p->blocks[n].length > total - sum) {
			fail(p, at, "RAM block length does not add up to the MEM_SIZE total");
			return -1;
		}
		sum += p->blocks[n].length;
		at += 1 + nl + 8;
		n++;
	}
	p->n_blocks = n;
	p->pos = at;
	return 1;
}

static enum stream_event parse_flags(stream_parser *p)
{
	while (avail(p) >= 8) {
		size_t at = p->pos;
		uint64_t w = rd_be(p->in.data + at, 8);
		if (w == STREAM_FLAG_EOS) {
			p->pos += 8;
			p->st = PS_TOP;
			return EV_AGAIN;
		}
		if (w == STREAM_FLAG_MULTIFD_FLUSH && p->st == PS_RAM_PART) {   /* QEMU 8.1: nothing to do */
			p->pos += 8;
			continue;
		}
		if (w == STREAM_FLAG_HOOK && (p->st == PS_RAM_PART || p->blocks_seen)) {
			p->pos += 8;
			return STREAM_EV_HOOK;
		}
		if ((w & 0xff) == STREAM_FLAG_MEM_SIZE && p->st == PS_RAM_START && !p->blocks_seen) {
			if ((w & ~0xfffull) == 0)
				return fail(p, at, "MEM_SIZE total of 0 (no RAM)");
			p->pos += 8;
			int rc = parse_block_list(p, w & ~0xfffull);
			if (rc < 0)
				return STREAM_EV_ERROR;
			if (rc == 0) {
				p->pos = at;   /* retry the whole record when more bytes come */
				return STREAM_EV_NEED_MORE;
			}
			p->blocks_seen = true;
			return STREAM_EV_BLOCKS;
		}
		return fail(p, at, "unexpected RAM flag word");
	}
	return STREAM_EV_NEED_MORE;
}

static enum stream_event parse_device(stream_parser *p)
{
	size_t at = p->pos;
	if (avail(p) < 1 + 4)
		return STREAM_EV_NEED_MORE;
	uint64_t n = rd_be(p->in.data + at + 1, 4);
	if (n > STREAM_DEVICE_MAX)
		return fail(p, at, "device state larger than 64 MiB");
	if (avail(p) < 1 + 4 + n + DIGEST_BYTES)
		return STREAM_EV_NEED_MORE;
	struct digest want = digest_get(p->in.data + at + 5 + n);
	if (!digest_eq(digest_of(p->in.data + at + 5, n), want))
		return fail(p, at, "device state digest mismatch");
	p->device_bytes = n;
	p->pos = at + 5 + n + DIGEST_BYTES;
	return STREAM_EV_DEVICE;
}

static enum stream_event parse_verify(stream_parser *p)
{
	size_t at = p->pos;
	if (avail(p) < 1 + 4)
		return STREAM_EV_NEED_MORE;
	uint64_t n = rd_be(p->in.data + at + 1, 4);
	if (n > STREAM_MAX_BLOCKS)
		return fail(p, at, "VERIFY record with more than 64 blocks");
	if (avail(p) < 1 + 4 + DIGEST_BYTES * n)
		return STREAM_EV_NEED_MORE;
	for (size_t i = 0; i < n; i++)
		p->digests[i] = digest_get(p->in.data + at + 5 + DIGEST_BYTES * i);
	p->n_digests = n;
	p->pos = at + 5 + DIGEST_BYTES * n;
	return STREAM_EV_VERIFY;
}

static enum stream_event parse_top(stream_parser *p)
{
	if (avail(p) < 1)
		return STREAM_EV_NEED_MORE;
	size_t at = p->pos;
	switch (p->in.data[at]) {
	case STREAM_EOF:
		p->pos++;
		p->st = PS_DONE;
		return STREAM_EV_EOF;
	case STREAM_RAM_START:
		if (p->blocks_seen)
			return fail(p, at, "second RAM START record");
		p->pos++;
		p->st = PS_RAM_START;
		return EV_AGAIN;
	case STREAM_RAM_PART:
		if (!p->blocks_seen)
			return fail(p, at, "RAM PART before RAM START");
		p->pos++;
		p->st = PS_RAM_PART;
		return EV_AGAIN;
	case STREAM_DEVICE:
		return parse_device(p);
	case STREAM_VERIFY:
		return parse_verify(p);
	default:
		return fail(p, at, "unknown record tag");
	}
}

static enum stream_event parse_step(stream_parser *p)
{
	switch (p->st) {
	case PS_HEADER:
		if (avail(p) < 8)
			return STREAM_EV_NEED_MORE;
		if (rd_be(p->in.data + p->pos, 4) != STREAM_MAGIC)
			return fail(p, p->pos, "bad stream magic (want QEVM)");
		if (rd_be(p->in.data + p->pos + 4, 4) != STREAM_VERSION)
			return bad_version(p);
		p->pos += 8;
		p->st = PS_TOP;
		return EV_AGAIN;
	case PS_TOP:
		return parse_top(p);
	case PS_RAM_START:
	case PS_RAM_PART:
		return parse_flags(p);
	case PS_DONE:
		if (avail(p) > 0)
			return fail(p, p->pos, "bytes after EOF");
		return STREAM_EV_NEED_MORE;
	case PS_ERROR:
	default:
		return STREAM_EV_ERROR;
	}
}

enum stream_event stream_parser_next(stream_parser *p)
{
	enum stream_event e;
	while ((e = parse_step(p)) == EV_AGAIN)
		;   /* each EV_AGAIN consumed bytes, so this ends */
	return e;
}

size_t stream_parser_n_blocks(const stream_parser *p) { return p->n_blocks; }
const struct stream_block *stream_parser_block(const stream_parser *p, size_t i)
{
	return i < p->n_blocks ? &p->blocks[i] : NULL;
}
uint64_t stream_parser_device_bytes(const stream_parser *p) { return p->device_bytes; }
size_t stream_parser_n_digests(const stream_parser *p) { return p->n_digests; }
struct digest stream_parser_digest(const stream_parser *p, size_t i)
{
	return i < p->n_digests ? p->digests[i] : (struct digest){ 0, 0 };
}
const char *stream_parser_error(const stream_parser *p) { return p->err; }
uint32_t stream_parser_version(const stream_parser *p) { return p->bad_version; }
