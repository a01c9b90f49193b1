/* SPDX-License-Identifier: MIT */
/* fuzz_qemu_stream - the reader of a real QEMU's migration stream (transport/qemu_stream.h), as
 * migbed's destination reads it from a QEMU source, and its translation to migbed's stream.
 *
 * Any bytes: the reader ends in events or a named cause (QEMU_STREAM_*) with a message, and
 * gives the same events, cause and message whether the bytes come at once or in pieces; its
 * finish says the same. Translation: when every piece translates (0), migbed's own stream
 * parser reads the output without an error (the adapter never emits what the destination
 * refuses); when one does not, the cause is named with a detail. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "transport/qemu_stream.h"
#include "transport/stream.h"

#define MAX_EVENTS 4096

struct seen {
	char events[MAX_EVENTS + 1];
	size_t n;
	int cause, finish;
	char err[512];
	size_t n_blocks;
};

static void read_all(const uint8_t *data, size_t len, size_t piece, bool vmdesc, struct seen *s)
{
	struct qemu_stream_opts o;
	qemu_stream *r;
	qemu_stream_opts_defaults(&o);
	o.vmdesc = vmdesc;
	memset(s, 0, sizeof *s);
	if (qemu_stream_new(&o, &r) != 0)
		abort();
	if (!piece)
		piece = len ? len : 1;
	enum qemu_stream_event e = QEMU_STREAM_EV_NEED_MORE;
	for (size_t off = 0; off < len && e != QEMU_STREAM_EV_ERROR; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		if (qemu_stream_feed(r, data + off, n) != 0)
			abort();
		while ((e = qemu_stream_next(r)) != QEMU_STREAM_EV_NEED_MORE) {
			if (s->n < MAX_EVENTS)
				s->events[s->n++] = (char)('0' + e);
			if (e == QEMU_STREAM_EV_PAGE) {
				const struct qemu_stream_page *pg = qemu_stream_page(r);
				FUZZ_CHECK(pg && pg->block < qemu_stream_n_blocks(r), "a page of block %zu of %zu",
					   pg ? pg->block : 0, qemu_stream_n_blocks(r));
				FUZZ_CHECK(pg->offset_bytes % QEMU_STREAM_PAGE_BYTES == 0 &&
					   pg->offset_bytes < qemu_stream_block(r, pg->block)->length,
					   "a page at %llu outside its block", (unsigned long long)pg->offset_bytes);
			}
			if (e == QEMU_STREAM_EV_SECTION) {
				size_t sl;
				FUZZ_CHECK(qemu_stream_section_name(r) != NULL, "a section without a name");
				qemu_stream_section_data(r, &sl);
			}
			if (e == QEMU_STREAM_EV_ERROR)
				break;
		}
	}
	if (e == QEMU_STREAM_EV_ERROR) {
		s->cause = qemu_stream_cause(r);
		snprintf(s->err, sizeof s->err, "%s", qemu_stream_error(r));
		FUZZ_CHECK(s->cause > 0 && s->err[0], "an error without a cause (%d) or message", s->cause);
		fz_cut_bytes(s->err);
	} else {
		s->finish = qemu_stream_finish(r);
		FUZZ_CHECK(s->finish == 0 || s->finish == -CAUSE_QEMU_STREAM_TRUNCATED, "finish = %d", s->finish);
	}
	s->n_blocks = qemu_stream_n_blocks(r);
	FUZZ_CHECK(s->n_blocks <= STREAM_MAX_BLOCKS, "%zu blocks", s->n_blocks);
	FUZZ_CHECK(qemu_stream_offset(r) <= len, "offset %llu past %zu bytes", (unsigned long long)qemu_stream_offset(r),
		   len);
	qemu_stream_free(r);
}

static void translate(const uint8_t *data, size_t len, size_t piece)
{
	qemu_stream *r;
	if (qemu_stream_new(NULL, &r) != 0)
		abort();
	static const char *const names[] = { "ram", "pc.ram", "a" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		qemu_stream_expect_digest(r, names[i], (struct digest){ .lo = 0x1234 + i });
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	int rc = 0;
	for (size_t off = 0; off < len && rc == 0; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		rc = qemu_stream_translate(r, data + off, n, &out, &cx);
	}
	if (rc != 0) {
		FUZZ_CHECK(rc < 0 && cx.cause == -rc && cx.detail[0], "translate = %d, cause %d", rc, cx.cause);
	} else {
		stream_parser *p;
		if (stream_parser_new(&p) || stream_parser_feed(p, out.data, out.len))
			abort();
		enum stream_event e;
		while ((e = stream_parser_next(p)) != STREAM_EV_NEED_MORE && e != STREAM_EV_ERROR)
			;
		FUZZ_CHECK(e != STREAM_EV_ERROR, "migbed's parser refuses the translation: %s", stream_parser_error(p));
		stream_parser_free(p);
		memset(&cx, 0, sizeof cx);
		rc = qemu_stream_filter_end(r, &cx);
		FUZZ_CHECK(rc == 0 || (rc == -CAUSE_QEMU_STREAM_TRUNCATED && cx.detail[0]), "filter_end = %d", rc);
	}
	stream_buf_free(&out);
	qemu_stream_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t mode = fz_u8(&f);
	size_t piece = 1 + (mode >> 2) % 64;
	static struct seen whole, pieces;
	read_all(f.p, f.n, 0, mode & 1, &whole);
	read_all(f.p, f.n, piece, mode & 1, &pieces);
	FUZZ_CHECK(whole.n == pieces.n && !memcmp(whole.events, pieces.events, whole.n),
		   "events differ in pieces of %zu: %.*s / %.*s", piece, (int)whole.n, whole.events, (int)pieces.n,
		   pieces.events);
	FUZZ_CHECK(whole.cause == pieces.cause && whole.finish == pieces.finish && !strcmp(whole.err, pieces.err),
		   "endings differ in pieces of %zu: '%s' / '%s'", piece, whole.err, pieces.err);
	if (mode & 2)
		translate(f.p, f.n, piece);
	return 0;
}
