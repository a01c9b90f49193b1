/* SPDX-License-Identifier: MIT */
/* fuzz_stream - migbed's stream (transport/stream.h), as a destination reads it from a
 * source it does not control, and its translation for a real QEMU destination
 * (qemu_stream_write, transport/qemu_stream.h).
 *
 * Any bytes: the parser ends in events or a named error, never reads past what it was fed,
 * and gives the same events, values and error whether the bytes come at once or in pieces
 * of any size. The writer to QEMU's format takes any bytes and answers 0 or CAUSE_INTERNAL.
 * Round trip: a stream written with the stream_put_* writers from the input's values (block
 * names of 1..255 bytes without a NUL, non-zero page-multiple lengths, device state, VERIFY
 * digests) reads back as the same values, whole or a byte at a time; its translation to
 * QEMU's stream is the same at once and a byte at a time, and QEMU's reader
 * (transport/qemu_stream.h) reads it to its end with the same block list. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "transport/qemu_stream.h"
#include "transport/stream.h"

#define MAX_EVENTS 4096

struct seen {
	char events[MAX_EVENTS + 1];
	size_t n;
	char err[512];
	size_t n_blocks;
	struct stream_block blocks[STREAM_MAX_BLOCKS];
	uint64_t device_bytes;
	size_t n_digests;
	struct digest digests[STREAM_MAX_BLOCKS];
};

static void note(stream_parser *p, enum stream_event e, struct seen *s)
{
	if (s->n < MAX_EVENTS)
		s->events[s->n++] = (char)('0' + e);
	switch (e) {
	case STREAM_EV_BLOCKS:
		s->n_blocks = stream_parser_n_blocks(p);
		FUZZ_CHECK(s->n_blocks >= 1 && s->n_blocks <= STREAM_MAX_BLOCKS, "%zu blocks", s->n_blocks);
		for (size_t i = 0; i < s->n_blocks; i++) {
			s->blocks[i] = *stream_parser_block(p, i);
			size_t l = strlen(s->blocks[i].name);
			FUZZ_CHECK(l >= 1 && l <= STREAM_NAME_MAX && s->blocks[i].length > 0, "block %zu", i);
		}
		FUZZ_CHECK(stream_parser_block(p, s->n_blocks) == NULL, "a block past the count");
		break;
	case STREAM_EV_DEVICE:
		s->device_bytes = stream_parser_device_bytes(p);
		FUZZ_CHECK(s->device_bytes <= STREAM_DEVICE_MAX, "device state of %llu bytes",
			   (unsigned long long)s->device_bytes);
		break;
	case STREAM_EV_VERIFY:
		s->n_digests = stream_parser_n_digests(p);
		FUZZ_CHECK(s->n_digests <= STREAM_MAX_BLOCKS, "%zu digests", s->n_digests);
		for (size_t i = 0; i < s->n_digests; i++)
			s->digests[i] = stream_parser_digest(p, i);
		break;
	case STREAM_EV_ERROR:
		snprintf(s->err, sizeof s->err, "%s", stream_parser_error(p));
		FUZZ_CHECK(s->err[0] != '\0', "an error without a message");
		fz_cut_bytes(s->err);
		break;
	default:
		break;
	}
}

/* Parse data[0..len) fed in pieces (piece 0: all at once). Returns the last event. */
static enum stream_event parse(const uint8_t *data, size_t len, size_t piece, struct seen *s)
{
	stream_parser *p;
	enum stream_event e = STREAM_EV_NEED_MORE;
	memset(s, 0, sizeof *s);
	if (stream_parser_new(&p) != 0)
		abort();
	if (!piece)
		piece = len ? len : 1;
	for (size_t off = 0; off < len && e != STREAM_EV_ERROR; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		if (stream_parser_feed(p, data + off, n) != 0)
			abort();   /* < 64 MiB inputs: only out of memory */
		while ((e = stream_parser_next(p)) != STREAM_EV_NEED_MORE) {
			note(p, e, s);
			if (e == STREAM_EV_ERROR)
				break;
		}
	}
	FUZZ_CHECK(e == STREAM_EV_ERROR || stream_parser_next(p) == STREAM_EV_NEED_MORE, "events without bytes");
	stream_parser_free(p);
	return e;
}

static void same(const struct seen *a, const struct seen *b, size_t piece)
{
	FUZZ_CHECK(a->n == b->n && !memcmp(a->events, b->events, a->n), "events differ in pieces of %zu: %.*s / %.*s",
		   piece, (int)a->n, a->events, (int)b->n, b->events);
	FUZZ_CHECK(!strcmp(a->err, b->err), "errors differ in pieces of %zu: '%s' / '%s'", piece, a->err, b->err);
	FUZZ_CHECK(a->n_blocks == b->n_blocks && !memcmp(a->blocks, b->blocks, a->n_blocks * sizeof a->blocks[0]),
		   "block lists differ in pieces of %zu", piece);
	FUZZ_CHECK(a->device_bytes == b->device_bytes && a->n_digests == b->n_digests &&
		   !memcmp(a->digests, b->digests, a->n_digests * sizeof a->digests[0]), "values differ");
}

static void any_bytes(const uint8_t *data, size_t len, size_t piece)
{
	static struct seen whole, pieces;
	parse(data, len, 0, &whole);
	parse(data, len, piece, &pieces);
	same(&whole, &pieces, piece);

	qemu_stream_writer *w;
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	if (qemu_stream_writer_new(NULL, &w) != 0)
		abort();
	int rc = qemu_stream_write(w, data, len, &out, &cx);
	FUZZ_CHECK(rc == 0 || rc == -CAUSE_INTERNAL, "qemu_stream_write = %d", rc);
	if (rc == 0)
		rc = qemu_stream_write_finish(w, &cx);
	FUZZ_CHECK(rc == 0 || (rc == -CAUSE_INTERNAL && cx.detail[0]), "finish = %d", rc);
	qemu_stream_writer_free(w);
	stream_buf_free(&out);
}

static void put_block(struct stream_buf *b, const char *name, size_t nl, uint64_t len)
{
	stream_put_u8(b, (uint8_t)nl);
	stream_put_bytes(b, name, nl);
	stream_put_be64(b, len);
}

/* A valid stream from the input's values; *want what it holds. */
static void build(struct fz *f, struct stream_buf *b, struct seen *want)
{
	memset(want, 0, sizeof *want);
	size_t n = 1 + fz_u8(f) % 8;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		size_t nl = 1 + fz_u8(f) % STREAM_NAME_MAX, got;
		const uint8_t *src = fz_bytes(f, nl, &got);
		for (size_t j = 0; j < nl; j++) {
			uint8_t c = j < got ? src[j] : (uint8_t)('a' + j % 26);
			want->blocks[i].name[j] = (char)(c ? c : 'x');
		}
		want->blocks[i].length = (1 + fz_u64(f, 2)) << 12;
		total += want->blocks[i].length;
	}
	want->n_blocks = n;
	stream_put_be32(b, STREAM_MAGIC);
	stream_put_be32(b, STREAM_VERSION);
	stream_put_u8(b, STREAM_RAM_START);
	stream_put_be64(b, total | STREAM_FLAG_MEM_SIZE);
	for (size_t i = 0; i < n; i++)
		put_block(b, want->blocks[i].name, strlen(want->blocks[i].name), want->blocks[i].length);
	stream_put_be64(b, STREAM_FLAG_HOOK);
	stream_put_be64(b, STREAM_FLAG_EOS);
	size_t parts = fz_u8(f) % 4;
	for (size_t i = 0; i < parts; i++) {
		stream_put_u8(b, STREAM_RAM_PART);
		stream_put_be64(b, STREAM_FLAG_HOOK);
		stream_put_be64(b, STREAM_FLAG_EOS);
	}
	size_t dl;
	const uint8_t *dev = fz_bytes(f, fz_u8(f), &dl);
	stream_put_u8(b, STREAM_DEVICE);
	stream_put_be32(b, (uint32_t)dl);
	stream_put_bytes(b, dev, dl);
	stream_put_digest(b, digest_of(dev, dl));
	want->device_bytes = dl;
	stream_put_u8(b, STREAM_VERIFY);
	stream_put_be32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		want->digests[i] = (struct digest){ .hi = fz_u64(f, 8), .lo = fz_u64(f, 8) };
		stream_put_digest(b, want->digests[i]);
	}
	want->n_digests = n;
	stream_put_u8(b, STREAM_EOF);
	/* BLOCKS, HOOK (START), HOOK per PART, DEVICE, VERIFY, EOF */
	want->events[want->n++] = (char)('0' + STREAM_EV_BLOCKS);
	for (size_t i = 0; i < 1 + parts; i++)
		want->events[want->n++] = (char)('0' + STREAM_EV_HOOK);
	want->events[want->n++] = (char)('0' + STREAM_EV_DEVICE);
	want->events[want->n++] = (char)('0' + STREAM_EV_VERIFY);
	want->events[want->n++] = (char)('0' + STREAM_EV_EOF);
}

/* The translation to QEMU's stream, at once and a byte at a time; QEMU's reader reads it. */
static void to_qemu(const struct stream_buf *b, const struct seen *want)
{
	struct stream_buf o1 = { 0 }, o2 = { 0 };
	struct cause_ctx cx = { 0 };
	qemu_stream_writer *w1, *w2;
	if (qemu_stream_writer_new(NULL, &w1) || qemu_stream_writer_new(NULL, &w2))
		abort();
	bool printable = true;   /* QEMU's block names are printable ASCII: the writer refuses others */
	for (size_t i = 0; i < want->n_blocks; i++)
		for (const char *c = want->blocks[i].name; *c; c++)
			printable &= *c >= 0x20 && *c <= 0x7e;
	bool twice = false;   /* so is a name listed twice (migbed's destination refuses it too) */
	for (size_t i = 0; i < want->n_blocks; i++)
		for (size_t j = 0; j < i; j++)
			twice |= !strcmp(want->blocks[i].name, want->blocks[j].name);
	int rc = qemu_stream_write(w1, b->data, b->len, &o1, &cx);
	if (!printable || twice) {
		FUZZ_CHECK(rc == -CAUSE_INTERNAL && (strstr(cx.detail, "name not printable") ||
						     strstr(cx.detail, "name listed twice")),
			   "a block list QEMU cannot read: writer answers %d: %s", rc, cx.detail);
		goto out;
	}
	FUZZ_CHECK(rc == 0, "writer refused: %s", cx.detail);
	FUZZ_CHECK(qemu_stream_write_finish(w1, &cx) == 0, "writer finish: %s", cx.detail);
	for (size_t i = 0; i < b->len; i++)
		FUZZ_CHECK(qemu_stream_write(w2, b->data + i, 1, &o2, &cx) == 0, "writer refused byte %zu: %s", i,
			   cx.detail);
	FUZZ_CHECK(o1.len == o2.len && !memcmp(o1.data, o2.data, o1.len), "the writer's output depends on pieces");

	qemu_stream *r;
	if (qemu_stream_new(NULL, &r) || qemu_stream_feed(r, o1.data, o1.len))
		abort();
	enum qemu_stream_event e;
	size_t guard = 0;
	while ((e = qemu_stream_next(r)) != QEMU_STREAM_EV_NEED_MORE && e != QEMU_STREAM_EV_ERROR && guard++ < 100000)
		;
	FUZZ_CHECK(e != QEMU_STREAM_EV_ERROR, "QEMU's reader refuses the writer's output: %s", qemu_stream_error(r));
	FUZZ_CHECK(qemu_stream_finish(r) == 0, "QEMU's reader: stream incomplete: %s", qemu_stream_error(r));
	FUZZ_CHECK(qemu_stream_n_blocks(r) == want->n_blocks, "QEMU's reader: %zu blocks", qemu_stream_n_blocks(r));
	for (size_t i = 0; i < want->n_blocks; i++)
		FUZZ_CHECK(!strcmp(qemu_stream_block(r, i)->name, want->blocks[i].name) &&
			   qemu_stream_block(r, i)->length == want->blocks[i].length, "QEMU's reader: block %zu", i);
	qemu_stream_free(r);
out:
	qemu_stream_writer_free(w1);
	qemu_stream_writer_free(w2);
	stream_buf_free(&o1);
	stream_buf_free(&o2);
}

static void round_trip(struct fz *f)
{
	static struct seen want, whole, bytes;
	struct stream_buf b = { 0 };
	build(f, &b, &want);
	FUZZ_CHECK(parse(b.data, b.len, 0, &whole) == STREAM_EV_NEED_MORE && !whole.err[0],
		   "the writers' stream refused: %s", whole.err);
	same(&want, &whole, 0);
	parse(b.data, b.len, 1, &bytes);
	same(&want, &bytes, 1);
	to_qemu(&b, &want);
	stream_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t mode = fz_u8(&f);
	if (mode & 1) {
		round_trip(&f);
		return 0;
	}
	any_bytes(f.p, f.n, 1 + (size_t)(mode >> 1) % 16);
	return 0;
}
