/* SPDX-License-Identifier: MIT */
/* Tests of the QEMU stream reader on a stream captured from Debian's QEMU 7.2
 * (transport/testdata/none-2m-file.qemu-stream, made by topologies/qemu/capture-stream.sh:
 * `-M none -m 2M`, 8 KiB pattern at 0x1000, migrated to a file), on every truncation of it,
 * on corrupted copies, and on an RDMA-shaped stream assembled from its pieces; then crafted
 * streams that hit every rejection of the reader and the writer (cause, offset, quoted bytes),
 * output buffers that fill up at every byte, and allocations that fail. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/qemu_stream.h"

#define DG(x) ((struct digest){ .hi = 0, .lo = (x) })
#include "transport/stream.h"
#include "transport/test_alloc.h"

#define CAPTURE "transport/testdata/none-2m-file.qemu-stream"
#define RAM_BYTES (2u << 20)
#define PATTERN_AT 0x1000u
#define PATTERN_BYTES 8192u
/* Offsets in the capture (checked against the bytes before use). */
#define OFF_SECTION_START 0x11u  /* 01 00000002 03 "ram" 00000000 00000004 */
#define OFF_MEM_SIZE 0x22u       /* be64 0x200004 */
#define OFF_BLOCK_NAME 0x2bu     /* "ram" after its length byte */
#define OFF_START_EOS 0x36u      /* be64 0x10 */
#define OFF_START_FOOTER 0x3eu   /* 7e 00000002 */
#define OFF_PART 0x43u           /* 02 00000002 */
#define OFF_END 0x3257u          /* 03 00000002, EOS, footer */
#define OFF_TIMER 0x3269u        /* 04 00000000 05 "timer" 00000000 00000002 + 24 bytes + footer */
#define OFF_EOF 0x331fu
#define OFF_VMDESC 0x3320u

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	uint8_t *b = malloc(1 << 20);
	assert_non_null(b);
	*len = fread(b, 1, 1 << 20, f);
	fclose(f);
	assert_true(*len > 0 && *len < (1 << 20));
	return b;
}

static uint8_t pattern(size_t i) { return (uint8_t)((7 * i + 3) % 256); }

/* Feed `len` bytes in pieces of `piece`; append one letter per event to trace. Applies
 * pages to mem (if given). Returns the last event (NEED_MORE, EOF... or ERROR). */
static enum qemu_stream_event run(qemu_stream *r, const uint8_t *b, size_t len, size_t piece, char *trace,
				  size_t trace_max, uint8_t *mem)
{
	static const char letters[] = "nbhePsFE"; /* by enum qemu_stream_event */
	size_t t = strlen(trace);
	enum qemu_stream_event e = QEMU_STREAM_EV_NEED_MORE;
	for (size_t at = 0; at < len; at += piece) {
		size_t n = len - at < piece ? len - at : piece;
		assert_int_equal(qemu_stream_feed(r, b + at, n), 0);
		while ((e = qemu_stream_next(r)) != QEMU_STREAM_EV_NEED_MORE) {
			if (e == QEMU_STREAM_EV_PAGE && mem) {
				const struct qemu_stream_page *p = qemu_stream_page(r);
				if (p->data)
					memcpy(mem + p->offset_bytes, p->data, QEMU_STREAM_PAGE_BYTES);
				else
					memset(mem + p->offset_bytes, p->fill, QEMU_STREAM_PAGE_BYTES);
			}
			if (e != QEMU_STREAM_EV_PAGE && t + 1 < trace_max) {
				trace[t++] = letters[e];
				trace[t] = '\0';
			}
			if (e == QEMU_STREAM_EV_ERROR)
				return e;
		}
	}
	return e;
}

static void capture_reads_completely_and_memory_matches(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	uint8_t *mem = calloc(1, RAM_BYTES);
	memset(mem, 0xee, RAM_BYTES);     /* every page must be written by the stream */
	char trace[64] = "";
	run(r, b, len, len, trace, sizeof trace, mem);
	/* blocks, 3 RAM sections ending in EOS, timer, globalstate, EOF */
	assert_string_equal(trace, "beeessF");
	assert_int_equal(qemu_stream_finish(r), 0);
	assert_string_equal(qemu_stream_machine(r), "none");
	assert_int_equal(qemu_stream_n_blocks(r), 1);
	assert_string_equal(qemu_stream_block(r, 0)->name, "ram");
	assert_int_equal(qemu_stream_block(r, 0)->length, RAM_BYTES);
	assert_int_equal(qemu_stream_offset(r), len);
	assert_int_equal(qemu_stream_hooks(r), 0);
	for (size_t i = 0; i < RAM_BYTES; i++) {
		uint8_t want = (i >= PATTERN_AT && i < PATTERN_AT + PATTERN_BYTES) ? pattern(i - PATTERN_AT) : 0;
		if (mem[i] != want)
			fail_msg("memory byte 0x%zx is %02x, want %02x", i, mem[i], want);
	}
	free(mem);
	qemu_stream_free(r);
	free(b);
}

/* The destination's stream_end hook: a source that disconnects before the end of its stream
 * has cut it (TRUNCATED, with what was expected at which offset); after the end it has not. */
static void filter_end_names_a_cut_stream(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	qemu_stream *r;
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	char trace[64] = "";
	run(r, b, OFF_PART + 5, OFF_PART + 5, trace, sizeof trace, NULL);   /* into a RAM PART */
	assert_int_equal(qemu_stream_filter_end(r, &cx), -CAUSE_QEMU_STREAM_TRUNCATED);
	assert_int_equal(cx.cause, CAUSE_QEMU_STREAM_TRUNCATED);
	char want[96];
	snprintf(want, sizeof want, "the source disconnected mid-stream: offset %u: stream ends while expecting",
		 OFF_PART + 5);
	assert_non_null(strstr(cx.detail, want));
	qemu_stream_free(r);

	struct cause_ctx none = { 0 };
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	trace[0] = '\0';
	run(r, b, len, len, trace, sizeof trace, NULL);
	assert_int_equal(qemu_stream_filter_end(r, &none), 0);   /* complete: a plain disconnect */
	assert_int_equal(none.cause, 0);
	qemu_stream_free(r);
	free(b);
}

static void byte_by_byte_gives_the_same_events(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	static const size_t pieces[] = { 1, 7, 4096, 32768 };
	for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
		qemu_stream *r;
		assert_int_equal(qemu_stream_new(NULL, &r), 0);
		char trace[64] = "";
		run(r, b, len, pieces[i], trace, sizeof trace, NULL);
		assert_string_equal(trace, "beeessF");
		assert_int_equal(qemu_stream_finish(r), 0);
		qemu_stream_free(r);
	}
	free(b);
}

/* Every prefix: never an error while bytes are missing, and finish() names the truncation. */
static void every_truncation_is_named(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	for (size_t cut = 0; cut < len; cut++) {
		qemu_stream *r;
		assert_int_equal(qemu_stream_new(NULL, &r), 0);
		char trace[64] = "";
		enum qemu_stream_event e = run(r, b, cut, cut ? cut : 1, trace, sizeof trace, NULL);
		if (e == QEMU_STREAM_EV_ERROR)
			fail_msg("prefix of %zu bytes: %s", cut, qemu_stream_error(r));
		assert_int_equal(qemu_stream_finish(r), -CAUSE_QEMU_STREAM_TRUNCATED);
		assert_non_null(strstr(qemu_stream_error(r), "stream ends while expecting"));
		char want[32];
		snprintf(want, sizeof want, "offset %llu:", (unsigned long long)qemu_stream_offset(r));
		assert_non_null(strstr(qemu_stream_error(r), want));
		qemu_stream_free(r);
	}
	free(b);
}

struct corruption {
	size_t at;
	uint8_t was, now;
	int cause;
	const char *says;
};

static void corruptions_end_in_named_causes(void **state)
{
	(void)state;
	static const struct corruption cs[] = {
		{ 0, 0x51, 0x52, CAUSE_QEMU_STREAM_MALFORMED, "offset 0: bad file magic (want QEVM 51 45 56 4d) (bytes 52 45 56 4d" },
		{ 7, 0x03, 0x04, CAUSE_QEMU_STREAM_UNSUPPORTED, "offset 0: file version 4" },
		{ 8, 0x07, 0x01, CAUSE_QEMU_STREAM_MALFORMED, "offset 8: expected the configuration section" },
		{ OFF_SECTION_START, 0x01, 0x09, CAUSE_QEMU_STREAM_MALFORMED, "offset 17: unknown section type 0x09 (bytes 09 00 00 00 02 03 72 61" },
		{ OFF_SECTION_START + 0x10, 0x04, 0x05, CAUSE_QEMU_STREAM_UNSUPPORTED, "\"ram\" instance 0 version 5" },
		{ OFF_MEM_SIZE + 7, 0x04, 0x80, CAUSE_QEMU_STREAM_MALFORMED, "offset 34: RAM START section does not begin with MEM_SIZE" },
		{ OFF_MEM_SIZE + 5, 0x20, 0x10, CAUSE_QEMU_STREAM_MALFORMED, "past the MEM_SIZE total" },
		{ OFF_BLOCK_NAME, 0x72, 0x01, CAUSE_QEMU_STREAM_MALFORMED, "RAM block name empty or not printable" },
		{ OFF_START_EOS + 7, 0x10, 0x01, CAUSE_QEMU_STREAM_MALFORMED, "offset 54: unknown combination of RAM flags 0x1" },
		{ OFF_START_FOOTER, 0x7e, 0x7d, CAUSE_QEMU_STREAM_MALFORMED, "offset 62: missing section footer (7e 00000002) (bytes 7d 00" },
		{ OFF_PART + 4, 0x02, 0x03, CAUSE_QEMU_STREAM_MALFORMED, "PART of section 3, which is not an open RAM section" },
		{ OFF_PART + 12, 0x02, 0x40, CAUSE_QEMU_STREAM_UNSUPPORTED, "XBZRLE page" },
		{ OFF_PART + 14, 0x72, 0x78, CAUSE_QEMU_STREAM_MALFORMED, "page of a RAM block not in the block list" },
		{ OFF_PART + 9, 0x00, 0x80, CAUSE_QEMU_STREAM_MALFORMED, "page offset 0x80000000 past block 'ram'" },
		{ OFF_END, 0x03, 0x00, CAUSE_QEMU_STREAM_MALFORMED, "EOF before the RAM section's END" },
		{ OFF_TIMER + 6, 0x74, 0x54, CAUSE_QEMU_STREAM_UNSUPPORTED, "section 'Timer'" },
		{ OFF_TIMER + 18, 0x02, 0x03, CAUSE_QEMU_STREAM_UNSUPPORTED, "section 'timer' version 3 (want 2)" },
		{ OFF_TIMER + 19 + 24, 0x7e, 0x05, CAUSE_QEMU_STREAM_UNSUPPORTED, "subsection in 'timer'" },
		{ OFF_EOF, 0x00, 0x08, CAUSE_QEMU_STREAM_UNSUPPORTED, "QEMU_VM_COMMAND" },
		{ OFF_VMDESC, 0x06, 0x07, CAUSE_QEMU_STREAM_MALFORMED, "expected the VM description (0x06) after EOF" },
	};
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
		if (b[cs[i].at] != cs[i].was)
			fail_msg("capture changed: byte 0x%zx is %02x, want %02x", cs[i].at, b[cs[i].at], cs[i].was);
		b[cs[i].at] = cs[i].now;
		qemu_stream *r;
		assert_int_equal(qemu_stream_new(NULL, &r), 0);
		char trace[64] = "";
		enum qemu_stream_event e = run(r, b, len, 4096, trace, sizeof trace, NULL);
		if (e != QEMU_STREAM_EV_ERROR || !strstr(qemu_stream_error(r), cs[i].says))
			fail_msg("byte 0x%zx -> %02x: event %d, error \"%s\", want \"%s\"", cs[i].at, cs[i].now, e,
				 qemu_stream_error(r), cs[i].says);
		assert_int_equal(qemu_stream_cause(r), cs[i].cause);
		assert_int_equal(qemu_stream_finish(r), -cs[i].cause);     /* the error stays */
		assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_ERROR);
		qemu_stream_free(r);
		b[cs[i].at] = cs[i].was;
	}
	free(b);
}

static void bytes_after_the_end_are_refused(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	char trace[64] = "";
	run(r, b, len, len, trace, sizeof trace, NULL);
	run(r, (const uint8_t *)"\x01", 1, 1, trace, sizeof trace, NULL);
	assert_string_equal(trace, "beeessFE");
	assert_int_equal(qemu_stream_cause(r), CAUSE_QEMU_STREAM_MALFORMED);
	assert_non_null(strstr(qemu_stream_error(r), "bytes after the end of the stream (bytes 01)"));
	qemu_stream_free(r);
	free(b);
}

static void put(uint8_t *o, size_t *n, const void *p, size_t len)
{
	memcpy(o + *n, p, len);
	*n += len;
}

static void put_word(uint8_t *o, size_t *n, uint64_t w)
{
	for (int i = 7; i >= 0; i--)
		o[(*n)++] = (uint8_t)(w >> (8 * i));
}

/* What an RDMA source sends (rdma.c writes HOOK before every EOS; pages go by RDMA), built
 * from the capture's own header, block list, device sections and end. */
static uint8_t *rdma_shaped(size_t *out_len)
{
	size_t len, n = 0;
	uint8_t *b = slurp(CAPTURE, &len);
	uint8_t *o = malloc(len);
	static const uint8_t footer[] = { 0x7e, 0, 0, 0, 2 }, part[] = { 0x02, 0, 0, 0, 2 }, end[] = { 0x03, 0, 0, 0, 2 };
	put(o, &n, b, OFF_START_EOS);            /* header, configuration, START, MEM_SIZE list */
	put_word(o, &n, QEMU_RAM_FLAG_HOOK);
	put_word(o, &n, QEMU_RAM_FLAG_EOS);
	put(o, &n, footer, 5);
	put(o, &n, part, 5);
	put_word(o, &n, QEMU_RAM_FLAG_HOOK);
	put_word(o, &n, QEMU_RAM_FLAG_EOS);
	put(o, &n, footer, 5);
	put(o, &n, end, 5);
	put_word(o, &n, QEMU_RAM_FLAG_HOOK);
	put_word(o, &n, QEMU_RAM_FLAG_EOS);
	put(o, &n, footer, 5);
	put(o, &n, b + OFF_TIMER, len - OFF_TIMER);
	free(b);
	*out_len = n;
	return o;
}

static void rdma_shaped_stream_stops_at_each_hook(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = rdma_shaped(&len);
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	char trace[64] = "";
	run(r, b, len, 1, trace, sizeof trace, NULL);
	assert_string_equal(trace, "bhehehessF");
	assert_int_equal(qemu_stream_hooks(r), 3);
	assert_int_equal(qemu_stream_finish(r), 0);
	qemu_stream_free(r);
	free(b);
}

/* The adapter's output is a valid migbed stream v1 that the destination's parser reads:
 * the block list, one HOOK per QEMU HOOK, two DEVICE records, VERIFY with the expected
 * digest, EOF. */
static void translation_is_read_by_migbeds_parser(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = rdma_shaped(&len);
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_expect_digest(r, "ram", DG(0x1234abcdull)), 0);
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	for (size_t at = 0; at < len; at += 100)   /* pieces of 100 bytes, like short messages */
		assert_int_equal(qemu_stream_translate(r, b + at, len - at < 100 ? len - at : 100, &out, &cx), 0);
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	assert_int_equal(stream_parser_feed(p, out.data, out.len), 0);
	char trace[32] = "";
	size_t t = 0;
	enum stream_event e;
	while ((e = stream_parser_next(p)) != STREAM_EV_NEED_MORE && t < sizeof trace - 1) {
		trace[t++] = "nbhdvFE"[e];
		if (e == STREAM_EV_ERROR)
			fail_msg("%s", stream_parser_error(p));
		if (e == STREAM_EV_EOF)
			break;
	}
	assert_string_equal(trace, "bhhhddvF");
	assert_int_equal(stream_parser_n_blocks(p), 1);
	assert_string_equal(stream_parser_block(p, 0)->name, "ram");
	assert_int_equal(stream_parser_n_digests(p), 1);
	assert_true(digest_eq(stream_parser_digest(p, 0), DG(0x1234abcdull)));
	stream_parser_free(p);
	stream_buf_free(&out);
	qemu_stream_free(r);
	free(b);
}

static void translation_errors_carry_the_cause(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = rdma_shaped(&len);
	qemu_stream *r;
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	/* no expected digest for "ram": a caller bug, named at EOF */
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_translate(r, b, len, &out, &cx), -CAUSE_INTERNAL);
	assert_non_null(strstr(cx.detail, "no expected content given for RAM block 'ram'"));
	qemu_stream_free(r);
	/* a corrupted byte: the reader's cause and offset */
	memset(&cx, 0, sizeof cx);
	out.len = 0;
	b[OFF_SECTION_START] = 0x42;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_translate(r, b, len, &out, &cx), -CAUSE_QEMU_STREAM_MALFORMED);
	assert_non_null(strstr(cx.detail, "QEMU migration stream: offset 17: unknown section type 0x42"));
	qemu_stream_free(r);
	stream_buf_free(&out);
	free(b);
}

static void bad_arguments(void **state)
{
	(void)state;
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, NULL), -EINVAL);
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_feed(r, NULL, 3), -EINVAL);
	assert_int_equal(qemu_stream_expect_digest(r, "", DG(1)), -EINVAL);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_NEED_MORE);
	assert_int_equal(qemu_stream_finish(r), -CAUSE_QEMU_STREAM_TRUNCATED);
	assert_non_null(strstr(qemu_stream_error(r), "offset 0: stream ends while expecting the file header (no bytes)"));
	qemu_stream_free(r);
	qemu_stream_free(NULL);
}

/* ---- writer: migbed stream v1 -> QEMU's ------------------------------------------------------ */

/* migbed's stream as run/engine.c emits it for a 2M block "ram", cut where the engine flushes:
 * setup (header, RAM START, block list, HOOK | EOS), two rounds (PART HOOK | EOS), the end
 * (DEVICE, VERIFY, EOF). Returns the number of pieces; ends[i] is the end of piece i. */
static size_t migbed_stream(uint8_t *o, size_t *ends)
{
	size_t n = 0, k = 0;
	static const uint8_t hdr[] = { 0x51, 0x45, 0x56, 0x4d, 0, 0, 0, STREAM_VERSION, STREAM_RAM_START };
	static const uint8_t dev[] = { STREAM_DEVICE, 0, 0, 0, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	put(o, &n, hdr, sizeof hdr);
	put_word(o, &n, RAM_BYTES | STREAM_FLAG_MEM_SIZE);
	o[n++] = 3;
	put(o, &n, "ram", 3);
	put_word(o, &n, RAM_BYTES);
	put_word(o, &n, STREAM_FLAG_HOOK);
	ends[k++] = n;
	put_word(o, &n, STREAM_FLAG_EOS);
	ends[k++] = n;
	for (int round = 0; round < 2; round++) {
		o[n++] = STREAM_RAM_PART;
		put_word(o, &n, STREAM_FLAG_HOOK);
		ends[k++] = n;
		put_word(o, &n, STREAM_FLAG_EOS);
		ends[k++] = n;
	}
	put(o, &n, dev, sizeof dev);
	put_word(o, &n, 0x1122334455667788ull);   /* device digest (not checked by the writer) */
	put_word(o, &n, 0x99aabbccddeeff00ull);
	o[n++] = STREAM_VERIFY;
	put(o, &n, "\0\0\0\1", 4);
	put_word(o, &n, 0);
	put_word(o, &n, 0xabcdefull);
	o[n++] = STREAM_EOF;
	ends[k++] = n;
	return k;
}

/* Translate piece by piece (as proto_src_flush does); a HOOK must stay the last word of the
 * output of its piece, or QEMU would read past it before running its registration handler. */
static void write_pieces(qemu_stream_writer *w, const uint8_t *b, const size_t *ends, size_t k,
			 struct stream_buf *out)
{
	struct cause_ctx cx = { 0 };
	size_t at = 0;
	for (size_t i = 0; i < k; i++) {
		size_t before = out->len;
		assert_int_equal(qemu_stream_write(w, b + at, ends[i] - at, out, &cx), 0);
		assert_true(out->len > before);
		bool hook_in = b[ends[i] - 1] == STREAM_FLAG_HOOK && b[ends[i] - 2] == 0;
		bool hook_out = out->data[out->len - 1] == QEMU_RAM_FLAG_HOOK && out->data[out->len - 2] == 0;
		assert_int_equal(hook_in, hook_out);
		at = ends[i];
	}
	assert_int_equal(qemu_stream_write_finish(w, &cx), 0);
	assert_int_equal(cx.cause, 0);
}

static void writer_output_is_read_back_by_the_reader(void **state)
{
	(void)state;
	uint8_t b[512];
	size_t ends[16], k = migbed_stream(b, ends);
	qemu_stream_writer *w;
	assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
	struct stream_buf out = { 0 };
	write_pieces(w, b, ends, k, &out);
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	char trace[64] = "";
	/* START: blocks, HOOK, EOS; two PARTs; the empty END; timer, globalstate; EOF */
	assert_int_not_equal(run(r, out.data, out.len, 1, trace, sizeof trace, NULL), QEMU_STREAM_EV_ERROR);
	assert_string_equal(trace, "bheheheessF");
	assert_int_equal(qemu_stream_finish(r), 0);
	assert_string_equal(qemu_stream_machine(r), "none");
	assert_int_equal(qemu_stream_n_blocks(r), 1);
	assert_string_equal(qemu_stream_block(r, 0)->name, "ram");
	assert_int_equal(qemu_stream_block(r, 0)->length, RAM_BYTES);
	assert_int_equal(qemu_stream_hooks(r), 3);
	size_t n;
	const uint8_t *gs = qemu_stream_section_data(r, &n);
	assert_string_equal(qemu_stream_section_name(r), "globalstate");
	assert_int_equal(n, 104);
	assert_memory_equal(gs, "\0\0\0\x08running\0", 12);
	qemu_stream_free(r);
	stream_buf_free(&out);
	qemu_stream_writer_free(w);
}

/* Where QEMU 7.2 wrote the same thing, the writer writes the same bytes: the header,
 * configuration, "ram" START and block list (the capture is a 2M "ram"), the timer
 * section and the VM description. */
static void writer_bytes_match_the_capture(void **state)
{
	(void)state;
	size_t clen;
	uint8_t *c = slurp(CAPTURE, &clen);
	uint8_t b[512];
	size_t ends[16], k = migbed_stream(b, ends);
	qemu_stream_writer *w;
	assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
	struct stream_buf out = { 0 };
	write_pieces(w, b, ends, k, &out);
	assert_memory_equal(out.data, c, OFF_START_EOS);
	static const uint8_t timer_hdr[] = { 0x04, 0, 0, 0, 0, 5, 't', 'i', 'm', 'e', 'r' };
	const uint8_t *t = memmem(out.data, out.len, timer_hdr, sizeof timer_hdr);
	assert_non_null(t);
	assert_memory_equal(t, c + OFF_TIMER, 1 + 4 + 1 + 5 + 8 + 24 + 5);
	size_t vlen = clen - OFF_VMDESC;
	assert_true(out.len > vlen);
	assert_memory_equal(out.data + out.len - vlen, c + OFF_VMDESC, vlen);
	assert_int_equal(out.data[out.len - vlen - 1], 0x00);   /* EOF before it */
	stream_buf_free(&out);
	qemu_stream_writer_free(w);
	free(c);
}

/* Byte by byte gives the same output as whole flushes. */
static void writer_byte_by_byte_is_the_same(void **state)
{
	(void)state;
	uint8_t b[512];
	size_t ends[16], k = migbed_stream(b, ends);
	qemu_stream_writer *w1, *w2;
	struct stream_buf o1 = { 0 }, o2 = { 0 };
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_writer_new(NULL, &w1), 0);
	assert_int_equal(qemu_stream_writer_new(NULL, &w2), 0);
	write_pieces(w1, b, ends, k, &o1);
	for (size_t i = 0; i < ends[k - 1]; i++)
		assert_int_equal(qemu_stream_write(w2, b + i, 1, &o2, &cx), 0);
	assert_int_equal(qemu_stream_write_finish(w2, &cx), 0);
	assert_int_equal(o1.len, o2.len);
	assert_memory_equal(o1.data, o2.data, o1.len);
	stream_buf_free(&o1);
	stream_buf_free(&o2);
	qemu_stream_writer_free(w1);
	qemu_stream_writer_free(w2);
}

/* One corrupted byte at `at` (set to v): -CAUSE_INTERNAL, detail containing `want`. */
static void writer_refuses(size_t at, uint8_t v, const char *want)
{
	uint8_t b[512];
	size_t ends[16], k = migbed_stream(b, ends);
	b[at] = v;
	qemu_stream_writer *w;
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
	assert_int_equal(qemu_stream_write(w, b, ends[k - 1], &out, &cx), -CAUSE_INTERNAL);
	if (!strstr(cx.detail, want))
		fail_msg("detail '%s' lacks '%s'", cx.detail, want);
	assert_int_equal(qemu_stream_write(w, b, 1, &out, &cx), -CAUSE_INTERNAL);   /* stays failed */
	stream_buf_free(&out);
	qemu_stream_writer_free(w);
}

static void writer_errors_are_named(void **state)
{
	(void)state;
	writer_refuses(0, 0x52, "offset 0: not a migbed stream header of version 4");
	writer_refuses(8, 0x33, "offset 8: unknown record tag 0x33");
	writer_refuses(8, STREAM_RAM_PART, "offset 8: RAM PART before RAM START");
	writer_refuses(16, 0x00, "offset 9: RAM START does not begin with MEM_SIZE");
	writer_refuses(36, 0x08, "offset 29: RAM flag word 0x8 (migbed sends MEM_SIZE, HOOK, MULTIFD_FLUSH, EOS)");
	/* a stream that stops before EOF, and bytes after it */
	uint8_t b[512];
	size_t ends[16], k = migbed_stream(b, ends);
	qemu_stream_writer *w;
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
	assert_int_equal(qemu_stream_write(w, b, ends[k - 1] - 1, &out, &cx), 0);
	assert_int_equal(qemu_stream_write_finish(w, &cx), -CAUSE_INTERNAL);
	assert_non_null(strstr(cx.detail, "the migbed stream ended before its EOF"));
	qemu_stream_writer_free(w);
	memset(&cx, 0, sizeof cx);
	assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
	assert_int_equal(qemu_stream_write(w, b, ends[k - 1], &out, &cx), 0);
	assert_int_equal(qemu_stream_write(w, b, 1, &out, &cx), -CAUSE_INTERNAL);
	assert_non_null(strstr(cx.detail, "bytes after EOF"));
	qemu_stream_writer_free(w);
	stream_buf_free(&out);
	struct qemu_stream_writer_opts o;
	qemu_stream_writer_opts_defaults(&o);
	o.runstate = "";
	assert_int_equal(qemu_stream_writer_new(&o, &w), -EINVAL);
	assert_int_equal(qemu_stream_writer_new(NULL, NULL), -EINVAL);
	qemu_stream_writer_free(NULL);
}

/* ---- allocation failures (transport/test_alloc.h: test_alloc.any_in = N fails the N-th
 * calloc or realloc from now, once) ------------------------------------------------------- */

static void out_of_memory_is_reported_and_nothing_is_lost(void **state)
{
	(void)state;
	qemu_stream *r = (qemu_stream *)&r;       /* must stay untouched */
	test_alloc.any_in = 1;
	assert_int_equal(qemu_stream_new(NULL, &r), -ENOMEM);
	assert_ptr_equal(r, (qemu_stream *)&r);
	qemu_stream_writer *w = (qemu_stream_writer *)&w;
	test_alloc.any_in = 1;
	assert_int_equal(qemu_stream_writer_new(NULL, &w), -ENOMEM);
	assert_ptr_equal(w, (qemu_stream_writer *)&w);
	assert_int_equal(test_alloc.any_in, 0);

	/* the reader's buffer cannot grow: -ENOMEM, and the same bytes fed again read whole */
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	test_alloc.any_in = 1;
	assert_int_equal(qemu_stream_feed(r, b, len), -ENOMEM);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_NEED_MORE);
	assert_int_equal(qemu_stream_offset(r), 0);
	char trace[64] = "";
	run(r, b, len, len, trace, sizeof trace, NULL);
	assert_string_equal(trace, "beeessF");
	assert_int_equal(qemu_stream_finish(r), 0);
	qemu_stream_free(r);
	free(b);

	/* the writer's input buffer cannot grow: a named cause, not a crash */
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
	test_alloc.any_in = 1;
	assert_int_equal(qemu_stream_write(w, "QEVM", 4, &out, &cx), -CAUSE_RESOURCE_EXHAUSTED);
	assert_int_equal(cx.cause, CAUSE_RESOURCE_EXHAUSTED);
	assert_string_equal(cx.detail, "migbed stream buffer: Cannot allocate memory");
	assert_int_equal(out.len, 0);
	qemu_stream_writer_free(w);
}

/* ---- a buffer with room for only a few more bytes -----------------------------------------
 * stream.c refuses to grow a stream_buf past STREAM_DEVICE_MAX + 1 MiB (-E2BIG). One lazily
 * mapped allocation of that size stands for a full buffer; only its last page is touched. */
#define BUF_LIMIT ((size_t)STREAM_DEVICE_MAX + (1u << 20))

static struct stream_buf nearly_full(uint8_t *big, size_t room)
{
	return (struct stream_buf){ .data = big, .len = BUF_LIMIT - room, .cap = BUF_LIMIT };
}

static uint8_t *big_buffer(void)
{
	uint8_t *big = malloc(BUF_LIMIT);
	assert_non_null(big);
	struct stream_buf t = nearly_full(big, 1);     /* the limit this relies on */
	assert_int_equal(stream_put_u8(&t, 1), 0);
	assert_int_equal(stream_put_u8(&t, 2), -E2BIG);
	assert_int_equal(t.len, BUF_LIMIT);
	return big;
}

/* For every room from 0 up: the writer fails with RESOURCE_EXHAUSTED exactly while the room
 * is smaller than its whole output, never writes past the limit, and succeeds at the size. */
static void writer_fills(const uint8_t *b, size_t len, uint8_t *big)
{
	struct stream_buf whole = { 0 };
	struct cause_ctx cx = { 0 };
	qemu_stream_writer *w;
	assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
	assert_int_equal(qemu_stream_write(w, b, len, &whole, &cx), 0);
	qemu_stream_writer_free(w);
	for (size_t room = 0; room <= whole.len; room++) {
		struct stream_buf out = nearly_full(big, room);
		memset(&cx, 0, sizeof cx);
		assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
		int rc = qemu_stream_write(w, b, len, &out, &cx);
		assert_true(out.len <= BUF_LIMIT && out.cap == BUF_LIMIT);
		if (room < whole.len) {
			if (rc != -CAUSE_RESOURCE_EXHAUSTED || strcmp(cx.detail, "QEMU stream buffer: Argument list too long") != 0)
				fail_msg("room %zu of %zu: rc %d, detail '%s'", room, whole.len, rc, cx.detail);
			assert_int_equal(cx.cause, CAUSE_RESOURCE_EXHAUSTED);
			assert_int_equal(qemu_stream_write_finish(w, &cx), -CAUSE_INTERNAL);
		} else {
			assert_int_equal(rc, 0);
			assert_memory_equal(out.data + BUF_LIMIT - room, whole.data, whole.len);
			assert_int_equal(qemu_stream_write_finish(w, &cx), 0);
		}
		qemu_stream_writer_free(w);
	}
	stream_buf_free(&whole);
}

static void writer_full_output_buffer_is_a_named_cause(void **state)
{
	(void)state;
	uint8_t *big = big_buffer();
	uint8_t b[512];
	size_t ends[16], k = migbed_stream(b, ends);
	writer_fills(b, ends[k - 1], big);
	/* no DEVICE/VERIFY: EOF itself closes RAM with the empty END section */
	size_t n = ends[1];
	b[n++] = STREAM_EOF;
	writer_fills(b, n, big);
	free(big);
}

/* The same for the adapter's migbed stream v1 output. */
static void translate_full_output_buffer_is_a_named_cause(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = rdma_shaped(&len);
	struct stream_buf whole = { 0 };
	struct cause_ctx cx = { 0 };
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_expect_digest(r, "ram", DG(77)), 0);
	assert_int_equal(qemu_stream_translate(r, b, len, &whole, &cx), 0);
	qemu_stream_free(r);
	uint8_t *big = big_buffer();
	for (size_t room = 0; room <= whole.len; room++) {
		struct stream_buf out = nearly_full(big, room);
		memset(&cx, 0, sizeof cx);
		assert_int_equal(qemu_stream_new(NULL, &r), 0);
		assert_int_equal(qemu_stream_expect_digest(r, "ram", DG(77)), 0);
		int rc = qemu_stream_translate(r, b, len, &out, &cx);
		assert_true(out.len <= BUF_LIMIT);
		if (room < whole.len) {
			if (rc != -CAUSE_RESOURCE_EXHAUSTED || strcmp(cx.detail, "stream buffer: Argument list too long") != 0)
				fail_msg("room %zu of %zu: rc %d, detail '%s'", room, whole.len, rc, cx.detail);
		} else {
			assert_int_equal(rc, 0);
			assert_memory_equal(out.data + BUF_LIMIT - room, whole.data, whole.len);
		}
		qemu_stream_free(r);
	}
	free(big);
	stream_buf_free(&whole);
	free(b);
}

/* ---- crafted QEMU streams: every rejection names its cause, offset and bytes -------------- */

enum { T_EOF = 0x00, T_START = 0x01, T_PART = 0x02, T_END = 0x03, T_FULL = 0x04, T_SUB = 0x05,
       T_VMDESC = 0x06, T_CONFIG = 0x07, T_FOOTER = 0x7e };

static void b8(struct stream_buf *b, uint8_t v) { assert_int_equal(stream_put_u8(b, v), 0); }
static void b32(struct stream_buf *b, uint32_t v) { assert_int_equal(stream_put_be32(b, v), 0); }
static void b64(struct stream_buf *b, uint64_t v) { assert_int_equal(stream_put_be64(b, v), 0); }
static void bmem(struct stream_buf *b, const void *p, size_t n) { assert_int_equal(stream_put_bytes(b, p, n), 0); }
static void bstr(struct stream_buf *b, const char *s) { bmem(b, s, strlen(s)); }

static void q_header(struct stream_buf *b, const char *machine)
{
	b32(b, 0x5145564d);
	b32(b, 3);
	b8(b, T_CONFIG);
	b32(b, (uint32_t)strlen(machine));
	bstr(b, machine);
}

static void q_section(struct stream_buf *b, uint8_t type, uint32_t sid, const char *name, uint32_t inst,
		      uint32_t ver)
{
	b8(b, type);
	b32(b, sid);
	b8(b, (uint8_t)strlen(name));
	bstr(b, name);
	b32(b, inst);
	b32(b, ver);
}

static void q_footer(struct stream_buf *b, uint32_t sid)
{
	b8(b, T_FOOTER);
	b32(b, sid);
}

static void q_block(struct stream_buf *b, const char *name, uint64_t len)
{
	b8(b, (uint8_t)strlen(name));
	bstr(b, name);
	b64(b, len);
}

/* header, configuration "none", "ram" START (section 2) and its MEM_SIZE list: 54 bytes */
static void q_ram_start(struct stream_buf *b)
{
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 0, 4);
	b64(b, RAM_BYTES | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(b, "ram", RAM_BYTES);
	assert_int_equal(b->len, OFF_START_EOS);
}

static void q_eos(struct stream_buf *b)
{
	b64(b, QEMU_RAM_FLAG_EOS);
	q_footer(b, 2);
}

/* ... START closed, and an END section: RAM is over */
static void q_ram_done(struct stream_buf *b)
{
	q_ram_start(b);
	q_eos(b);
	b8(b, T_END);
	b32(b, 2);
	q_eos(b);
}

static void q_timer(struct stream_buf *b, uint32_t sid)
{
	static const uint8_t zero[24];
	q_section(b, T_FULL, sid, "timer", 0, 2);
	bmem(b, zero, sizeof zero);
	q_footer(b, sid);
}

static void q_globalstate(struct stream_buf *b, uint32_t sid, uint32_t size, const char *state)
{
	uint8_t rs[100] = { 0 };
	memcpy(rs, state, strlen(state));
	q_section(b, T_FULL, sid, "globalstate", 0, 1);
	b32(b, size);
	bmem(b, rs, sizeof rs);
	q_footer(b, sid);
}

/* Each builds a stream that goes wrong at the offset it returns. */
static size_t c_machine_len0(struct stream_buf *b)
{
	b32(b, 0x5145564d);
	b32(b, 3);
	b8(b, T_CONFIG);
	b32(b, 0);
	return 8;
}

static size_t c_machine_len256(struct stream_buf *b)
{
	b32(b, 0x5145564d);
	b32(b, 3);
	b8(b, T_CONFIG);
	b32(b, 256);
	return 8;
}

static size_t c_machine_control(struct stream_buf *b)
{
	q_header(b, "n\x01ne");
	b8(b, T_START);
	return 13;
}

static size_t c_machine_del(struct stream_buf *b)
{
	q_header(b, "non\x7f");
	b8(b, T_START);
	return 13;
}

static size_t c_config_subsection(struct stream_buf *b)
{
	q_header(b, "none");
	b8(b, T_SUB);
	return 17;
}

static size_t c_mem_size_zero(struct stream_buf *b)
{
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 0, 4);
	b64(b, QEMU_RAM_FLAG_MEM_SIZE);
	return OFF_MEM_SIZE;
}

static size_t c_too_many_blocks(struct stream_buf *b)
{
	size_t at = 0;
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 0, 4);
	b64(b, (STREAM_MAX_BLOCKS + 1) * 4096ull | QEMU_RAM_FLAG_MEM_SIZE);
	for (int i = 0; i <= STREAM_MAX_BLOCKS; i++) {
		char name[16];   /* "b" and any int: gcc -O1 does not see i <= 64 */
		snprintf(name, sizeof name, "b%02d", i);
		at = b->len;
		q_block(b, name, 4096);
	}
	return at;
}

static size_t c_block_twice(struct stream_buf *b)
{
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 0, 4);
	b64(b, RAM_BYTES | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(b, "ram", RAM_BYTES / 2);
	size_t at = b->len;
	q_block(b, "ram", RAM_BYTES / 2);
	return at;
}

static size_t c_block_len0(struct stream_buf *b)
{
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 0, 4);
	b64(b, RAM_BYTES | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(b, "ram", 0);
	return 42;
}

static size_t c_block_part_page(struct stream_buf *b)
{
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 0, 4);
	b64(b, RAM_BYTES | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(b, "ram", 0x1800);
	return 42;
}

static size_t c_mem_size_in_part(struct stream_buf *b)
{
	q_ram_start(b);
	q_eos(b);
	b8(b, T_PART);
	b32(b, 2);
	b64(b, RAM_BYTES | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(b, "ram", RAM_BYTES);
	return OFF_PART + 5;
}

static size_t c_mem_size_twice(struct stream_buf *b)
{
	q_ram_start(b);
	b64(b, RAM_BYTES | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(b, "ram", RAM_BYTES);
	return OFF_START_EOS;
}

static size_t c_continue_first(struct stream_buf *b)
{
	q_ram_start(b);
	b64(b, QEMU_RAM_FLAG_ZERO | QEMU_RAM_FLAG_CONTINUE);
	b8(b, 0);
	return OFF_START_EOS;
}

static size_t c_compressed(struct stream_buf *b)
{
	q_ram_start(b);
	b64(b, 0x3000 | QEMU_RAM_FLAG_COMPRESS_PAGE);
	return OFF_START_EOS;
}

static size_t c_footer_other_sid(struct stream_buf *b)
{
	q_ram_start(b);
	b64(b, QEMU_RAM_FLAG_EOS);
	q_footer(b, 3);
	return OFF_START_FOOTER;
}

static size_t c_ram_full(struct stream_buf *b)
{
	q_header(b, "none");
	q_section(b, T_FULL, 2, "ram", 0, 4);
	return OFF_SECTION_START;
}

static size_t c_ram_twice(struct stream_buf *b)
{
	q_ram_start(b);
	q_eos(b);
	q_section(b, T_START, 3, "ram", 0, 4);
	return OFF_PART;
}

static size_t c_ram_instance(struct stream_buf *b)
{
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 1, 4);
	return OFF_SECTION_START;
}

static size_t c_part_before_ram(struct stream_buf *b)
{
	q_header(b, "none");
	b8(b, T_PART);
	b32(b, 2);
	return OFF_SECTION_START;
}

static size_t c_end_after_end(struct stream_buf *b)
{
	q_ram_done(b);
	size_t at = b->len;
	b8(b, T_END);
	b32(b, 2);
	return at;
}

static size_t c_device_in_ram(struct stream_buf *b)
{
	q_ram_start(b);
	q_eos(b);
	q_timer(b, 0);
	return OFF_PART;
}

static size_t c_timer_as_start(struct stream_buf *b)
{
	q_ram_done(b);
	size_t at = b->len;
	q_section(b, T_START, 0, "timer", 0, 2);
	return at;
}

static size_t c_section_no_name(struct stream_buf *b)
{
	q_ram_done(b);
	size_t at = b->len;
	q_section(b, T_FULL, 0, "", 0, 2);
	return at;
}

static size_t c_section_id_twice(struct stream_buf *b)
{
	q_ram_done(b);
	size_t at = b->len;
	q_timer(b, 2);
	return at;
}

static size_t c_too_many_sections(struct stream_buf *b)
{
	q_ram_done(b);                                  /* section 1 of 64 */
	for (uint32_t sid = 100; sid < 100 + QEMU_STREAM_MAX_SECTIONS - 1; sid++)
		q_timer(b, sid);
	size_t at = b->len;
	q_timer(b, 7);
	return at;
}

static size_t c_globalstate_size(struct stream_buf *b)
{
	q_ram_done(b);
	size_t at = b->len + 1 + 4 + 1 + strlen("globalstate") + 8;
	q_globalstate(b, 4, 101, "running");
	return at;
}

static size_t c_vmdesc_too_big(struct stream_buf *b)
{
	q_ram_done(b);
	q_timer(b, 0);
	b8(b, T_EOF);
	size_t at = b->len;
	b8(b, T_VMDESC);
	b32(b, QEMU_STREAM_VMDESC_MAX_BYTES + 1);
	return at;
}

struct craft {
	size_t (*build)(struct stream_buf *b);
	int cause;
	const char *says;
};

/* Read the stream whole and byte by byte: the same cause, with "offset <at>: <says>", and
 * (read whole) the bytes from `at` quoted. The error stays. */
static void expect_rejected(const struct craft *c)
{
	struct stream_buf b = { 0 };
	size_t at = c->build(&b);
	assert_true(at < b.len);
	char want[96], quote[64];
	snprintf(want, sizeof want, "offset %zu: %s", at, c->says);
	size_t nq = b.len - at < 12 ? b.len - at : 12, o = (size_t)snprintf(quote, sizeof quote, " (bytes");
	for (size_t i = 0; i < nq; i++)
		o += (size_t)snprintf(quote + o, sizeof quote - o, " %02x", b.data[at + i]);
	snprintf(quote + o, sizeof quote - o, ")");
	for (int whole = 0; whole < 2; whole++) {
		qemu_stream *r;
		assert_int_equal(qemu_stream_new(NULL, &r), 0);
		char trace[64] = "";
		enum qemu_stream_event e = run(r, b.data, b.len, whole ? b.len : 1, trace, sizeof trace, NULL);
		const char *err = qemu_stream_error(r);
		if (e != QEMU_STREAM_EV_ERROR || strncmp(err, want, strlen(want)) != 0)
			fail_msg("%s: event %d (trace %s), error '%s'", want, e, trace, err);
		if (whole && !strstr(err, quote))
			fail_msg("%s: error '%s' does not quote '%s'", want, err, quote);
		assert_int_equal(qemu_stream_cause(r), c->cause);
		assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_ERROR);
		assert_int_equal(qemu_stream_finish(r), -c->cause);
		qemu_stream_free(r);
	}
	stream_buf_free(&b);
}

static void crafted_streams_are_rejected_with_offset_and_bytes(void **state)
{
	(void)state;
	const int M = CAUSE_QEMU_STREAM_MALFORMED, U = CAUSE_QEMU_STREAM_UNSUPPORTED;
	const struct craft cs[] = {
		{ c_machine_len0, M, "machine name length 0" },
		{ c_machine_len256, M, "machine name length 256" },
		{ c_machine_control, M, "machine name is not printable" },
		{ c_machine_del, M, "machine name is not printable" },
		{ c_config_subsection, U, "configuration subsection" },
		{ c_mem_size_zero, M, "MEM_SIZE total is 0" },
		{ c_too_many_blocks, U, "more than 64 RAM blocks" },
		{ c_block_twice, M, "RAM block 'ram' listed twice" },
		{ c_block_len0, M, "RAM block 'ram' length 0x0: not whole pages" },
		{ c_block_part_page, M, "RAM block 'ram' length 0x1800: not whole pages" },
		{ c_mem_size_in_part, M, "MEM_SIZE not first in the RAM START section" },
		{ c_mem_size_twice, M, "MEM_SIZE not first in the RAM START section" },
		{ c_continue_first, M, "CONTINUE page with no block before it" },
		{ c_compressed, U, "compressed page (switch the xbzrle/compress capability off)" },
		{ c_footer_other_sid, M, "missing section footer (7e 00000002)" },
		{ c_ram_full, U, "\"ram\" as a FULL section" },
		{ c_ram_twice, M, "second START of the \"ram\" section" },
		{ c_ram_instance, U, "\"ram\" instance 1 version 4 (want 0, 4)" },
		{ c_part_before_ram, M, "PART of section 2, which is not an open RAM section" },
		{ c_end_after_end, M, "END of section 2, which is not an open RAM section" },
		{ c_device_in_ram, U, "device section 'timer' before RAM ended" },
		{ c_timer_as_start, U, "section 'timer' (migbed reads -M none's ram, timer, globalstate)" },
		{ c_section_no_name, M, "section name empty or not printable" },
		{ c_section_id_twice, M, "section id 2 used twice" },
		{ c_too_many_sections, U, "more than 64 sections" },
		{ c_globalstate_size, M, "globalstate run-state size 101 > 100" },
		{ c_vmdesc_too_big, M, "VM description of 16777217 bytes" },
	};
	for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
		expect_rejected(&cs[i]);
}

/* Three blocks (two names of the same length), pages with and without CONTINUE, ZERO fills,
 * a HOOK, both device sections, EOF and a short description. */
static void three_block_stream(struct stream_buf *b, const uint8_t *page)
{
	q_header(b, "none");
	q_section(b, T_START, 2, "ram", 0, 4);
	b64(b, 0x5000 | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(b, "ram", 0x2000);
	q_block(b, "rom", 0x2000);
	q_block(b, "bios", 0x1000);
	b64(b, 0x0000 | QEMU_RAM_FLAG_ZERO);                         /* bios: no name matches before */
	b8(b, 4);
	bstr(b, "bios");
	b8(b, 0xff);
	b64(b, 0x1000 | QEMU_RAM_FLAG_ZERO);                         /* rom, not ram: same length */
	b8(b, 3);
	bstr(b, "rom");
	b8(b, 0x5a);
	b64(b, 0x0000 | QEMU_RAM_FLAG_PAGE | QEMU_RAM_FLAG_CONTINUE); /* rom again */
	bmem(b, page, QEMU_STREAM_PAGE_BYTES);
	b64(b, 0x1000 | QEMU_RAM_FLAG_PAGE);
	b8(b, 3);
	bstr(b, "ram");
	bmem(b, page, QEMU_STREAM_PAGE_BYTES);
	b64(b, QEMU_RAM_FLAG_HOOK);
	q_eos(b);
	b8(b, T_END);
	b32(b, 2);
	q_eos(b);
	q_timer(b, 0);
	q_globalstate(b, 4, 7, "paused");
	b8(b, T_EOF);
	b8(b, T_VMDESC);
	b32(b, 2);
	bstr(b, "{}");
}

/* ... read event by event: every field as the stream says. */
static void crafted_stream_with_three_blocks_reads_every_field(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	uint8_t page[QEMU_STREAM_PAGE_BYTES];
	for (size_t i = 0; i < sizeof page; i++)
		page[i] = pattern(i);
	three_block_stream(&b, page);
	struct qemu_stream_opts o;
	qemu_stream_opts_defaults(&o);
	assert_true(o.vmdesc);
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(&o, &r), 0);
	assert_null(qemu_stream_block(r, 0));
	size_t n = 99;
	assert_null(qemu_stream_section_data(r, &n));
	assert_int_equal(n, 0);
	assert_string_equal(qemu_stream_machine(r), "");
	assert_int_equal(qemu_stream_feed(r, b.data, b.len), 0);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_BLOCKS);
	assert_int_equal(qemu_stream_n_blocks(r), 3);
	assert_string_equal(qemu_stream_block(r, 1)->name, "rom");
	assert_int_equal(qemu_stream_block(r, 2)->length, 0x1000);
	assert_null(qemu_stream_block(r, 3));
	static const struct { size_t block; uint64_t off; bool data; uint8_t fill; } want[] = {
		{ 2, 0x0000, false, 0xff }, { 1, 0x1000, false, 0x5a }, { 1, 0x0000, true, 0 }, { 0, 0x1000, true, 0 },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_PAGE);
		const struct qemu_stream_page *p = qemu_stream_page(r);
		assert_int_equal(p->block, want[i].block);
		assert_int_equal(p->offset_bytes, want[i].off);
		if (want[i].data)
			assert_memory_equal(p->data, page, sizeof page);
		else
			assert_null(p->data);
		assert_int_equal(p->fill, want[i].fill);
	}
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_HOOK);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_RAM_EOS);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_RAM_EOS);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_SECTION);
	assert_string_equal(qemu_stream_section_name(r), "timer");
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_SECTION);
	const uint8_t *gs = qemu_stream_section_data(r, &n);
	assert_int_equal(n, 104);
	assert_memory_equal(gs, "\0\0\0\x07paused\0", 11);
	assert_int_equal(qemu_stream_cause(r), 0);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_EOF);
	assert_int_equal(qemu_stream_finish(r), 0);
	assert_int_equal(qemu_stream_offset(r), b.len);
	assert_int_equal(qemu_stream_hooks(r), 1);
	qemu_stream_free(r);
	stream_buf_free(&b);
}

/* Without the description (vmdesc off), EOF is the end; a description then is extra bytes. */
static void stream_without_description(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	q_ram_done(&b);
	q_timer(&b, 0);
	b8(&b, T_EOF);
	struct qemu_stream_opts o = { .vmdesc = false };
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(&o, &r), 0);
	char trace[32] = "";
	run(r, b.data, b.len, 1, trace, sizeof trace, NULL);
	assert_string_equal(trace, "beesF");
	assert_int_equal(qemu_stream_finish(r), 0);
	qemu_stream_free(r);

	size_t eof_end = b.len;
	b8(&b, T_VMDESC);
	b32(&b, 2);
	bstr(&b, "{}");
	assert_int_equal(qemu_stream_new(&o, &r), 0);
	trace[0] = '\0';
	run(r, b.data, b.len, b.len, trace, sizeof trace, NULL);
	assert_string_equal(trace, "beesFE");
	assert_int_equal(qemu_stream_cause(r), CAUSE_QEMU_STREAM_MALFORMED);
	char want[64];
	snprintf(want, sizeof want, "offset %zu: bytes after the end of the stream (bytes 06 00", eof_end);
	assert_non_null(strstr(qemu_stream_error(r), want));
	qemu_stream_free(r);

	/* the end read, then a byte nobody asked next() about: finish() still refuses it */
	assert_int_equal(qemu_stream_new(&o, &r), 0);
	trace[0] = '\0';
	run(r, b.data, eof_end, eof_end, trace, sizeof trace, NULL);
	assert_string_equal(trace, "beesF");
	assert_int_equal(qemu_stream_feed(r, "\x06", 1), 0);
	assert_int_equal(qemu_stream_finish(r), -CAUSE_QEMU_STREAM_MALFORMED);
	snprintf(want, sizeof want, "offset %zu: bytes after the end of the stream (bytes 06)", eof_end);
	assert_non_null(strstr(qemu_stream_error(r), want));
	qemu_stream_free(r);
	stream_buf_free(&b);
}

/* A section name long enough to fill the error text: cut at the buffer, still NUL ended and
 * naming the offset, with or without room for the quoted bytes. */
static void long_section_names_fit_the_error_text(void **state)
{
	(void)state;
	for (size_t nl = 200; nl <= 255; nl++) {
		struct stream_buf b = { 0 };
		char name[256];
		memset(name, 'x', nl);
		name[nl] = '\0';
		q_ram_done(&b);
		size_t at = b.len;
		q_section(&b, T_FULL, 9, name, 0, 1);
		qemu_stream *r;
		assert_int_equal(qemu_stream_new(NULL, &r), 0);
		assert_int_equal(qemu_stream_feed(r, b.data, b.len), 0);
		enum qemu_stream_event e;
		while ((e = qemu_stream_next(r)) != QEMU_STREAM_EV_ERROR)
			assert_int_not_equal(e, QEMU_STREAM_EV_NEED_MORE);
		assert_int_equal(qemu_stream_cause(r), CAUSE_QEMU_STREAM_UNSUPPORTED);
		const char *err = qemu_stream_error(r);
		char want[32];
		snprintf(want, sizeof want, "offset %zu: section 'xxxx", at);
		assert_true(strlen(err) < 320);
		assert_memory_equal(err, want, strlen(want));
		qemu_stream_free(r);
		stream_buf_free(&b);
	}
}

static void reader_feed_limits(void **state)
{
	(void)state;
	qemu_stream *r;
	assert_int_equal(qemu_stream_feed(NULL, "x", 1), -EINVAL);
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_feed(r, NULL, 0), 0);
	/* the buffer grows past 64 KiB twice without anything read */
	uint8_t *junk = calloc(1, 70000);
	assert_non_null(junk);
	assert_int_equal(qemu_stream_feed(r, junk, 70000), 0);
	assert_int_equal(qemu_stream_feed(r, junk, 70000), 0);
	free(junk);
	/* 64 MiB unread is the limit: refused whole, what was fed stays */
	uint8_t *huge = calloc(1, 64u << 20);
	assert_non_null(huge);
	assert_int_equal(qemu_stream_feed(r, huge, 64u << 20), -EOVERFLOW);
	free(huge);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_ERROR);
	assert_non_null(strstr(qemu_stream_error(r), "offset 0: bad file magic (want QEVM 51 45 56 4d) (bytes 00 00"));
	qemu_stream_free(r);

	/* the adapter names the same refusal */
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	huge = calloc(1, (64u << 20) + 1);
	assert_non_null(huge);
	assert_int_equal(qemu_stream_translate(r, huge, (64u << 20) + 1, &out, &cx), -CAUSE_RESOURCE_EXHAUSTED);
	free(huge);
	assert_string_equal(cx.detail, "QEMU stream buffer: Value too large for defined data type");
	assert_int_equal(out.len, 0);
	qemu_stream_free(r);
}

static void expected_digests_are_bounded_and_replaced(void **state)
{
	(void)state;
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	char name[300];
	memset(name, 'n', 256);
	name[256] = '\0';
	assert_int_equal(qemu_stream_expect_digest(NULL, "ram", DG(1)), -EINVAL);
	assert_int_equal(qemu_stream_expect_digest(r, NULL, DG(1)), -EINVAL);
	assert_int_equal(qemu_stream_expect_digest(r, name, DG(1)), -EINVAL);
	name[255] = '\0';
	assert_int_equal(qemu_stream_expect_digest(r, name, DG(1)), 0);    /* 255 bytes: fits */
	for (int i = 1; i < STREAM_MAX_BLOCKS; i++) {
		snprintf(name, sizeof name, "block%d", i);
		assert_int_equal(qemu_stream_expect_digest(r, name, DG((uint64_t)i)), 0);
	}
	assert_int_equal(qemu_stream_expect_digest(r, "one too many", DG(1)), -ENOSPC);
	assert_int_equal(qemu_stream_expect_digest(r, "block7", DG(0x77)), 0);   /* replaces */
	qemu_stream_free(r);

	/* the last digest given for a block is the one in VERIFY, in the stream's block order */
	struct stream_buf b = { 0 };
	q_header(&b, "none");
	q_section(&b, T_START, 2, "ram", 0, 4);
	b64(&b, 0x2000 | QEMU_RAM_FLAG_MEM_SIZE);
	q_block(&b, "a", 0x1000);
	q_block(&b, "b", 0x1000);
	q_eos(&b);
	b8(&b, T_END);
	b32(&b, 2);
	q_eos(&b);
	b8(&b, T_EOF);
	b8(&b, T_VMDESC);
	b32(&b, 0);
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_expect_digest(r, "b", DG(0xb0)), 0);
	assert_int_equal(qemu_stream_expect_digest(r, "a", DG(0xa0)), 0);
	assert_int_equal(qemu_stream_expect_digest(r, "b", DG(0xbb)), 0);
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_translate(r, b.data, b.len, &out, &cx), 0);
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	assert_int_equal(stream_parser_feed(p, out.data, out.len), 0);
	assert_int_equal(stream_parser_next(p), STREAM_EV_BLOCKS);
	assert_int_equal(stream_parser_next(p), STREAM_EV_VERIFY);
	assert_int_equal(stream_parser_n_digests(p), 2);
	assert_true(digest_eq(stream_parser_digest(p, 0), DG(0xa0)));
	assert_true(digest_eq(stream_parser_digest(p, 1), DG(0xbb)));
	assert_int_equal(stream_parser_next(p), STREAM_EV_EOF);
	stream_parser_free(p);
	stream_buf_free(&out);
	stream_buf_free(&b);
	qemu_stream_free(r);
}

/* A file/TCP capture (pages in the stream): the pages are dropped, the rest translated. */
static void translating_a_capture_with_pages_drops_them(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = slurp(CAPTURE, &len);
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(NULL, &r), 0);
	assert_int_equal(qemu_stream_expect_digest(r, "ram", DG(5)), 0);
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	assert_int_equal(qemu_stream_translate(r, b, len, &out, &cx), 0);
	assert_true(out.len < 400);              /* no 4 KiB page in it */
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	assert_int_equal(stream_parser_feed(p, out.data, out.len), 0);
	char trace[16] = "";
	size_t t = 0;
	enum stream_event e;
	while ((e = stream_parser_next(p)) != STREAM_EV_NEED_MORE && t < sizeof trace - 1)
		trace[t++] = "nbhdvFE"[e];
	assert_string_equal(trace, "bddvF");
	stream_parser_free(p);
	stream_buf_free(&out);
	qemu_stream_free(r);
	free(b);
}

/* ---- writer: crafted migbed streams ------------------------------------------------------ */

static void m_header(struct stream_buf *b)
{
	b32(b, STREAM_MAGIC);
	b32(b, STREAM_VERSION);
}

/* header + RAM START with one 2 MiB block "ram": 29 bytes */
static void m_start(struct stream_buf *b)
{
	m_header(b);
	b8(b, STREAM_RAM_START);
	b64(b, RAM_BYTES | STREAM_FLAG_MEM_SIZE);
	q_block(b, "ram", RAM_BYTES);
}

static void m_device(struct stream_buf *b)
{
	b8(b, STREAM_DEVICE);
	b32(b, 0);
	stream_put_digest(b, digest_of("", 0));
}

/* The writer refuses b (whole, then byte by byte) with -CAUSE_INTERNAL and `want` in the
 * detail; then it stays failed, and finish() says so with or without a cause at hand. */
static void writer_rejects(const struct stream_buf *b, const char *want)
{
	for (int whole = 0; whole < 2; whole++) {
		qemu_stream_writer *w;
		struct stream_buf out = { 0 };
		struct cause_ctx cx = { 0 };
		assert_int_equal(qemu_stream_writer_new(NULL, &w), 0);
		int rc = 0;
		for (size_t at = 0; rc == 0 && at < b->len; at += whole ? b->len : 1)
			rc = qemu_stream_write(w, b->data + at, whole ? b->len : 1, &out, &cx);
		if (rc != -CAUSE_INTERNAL || !strstr(cx.detail, want))
			fail_msg("rc %d, detail '%s', want '%s'", rc, cx.detail, want);
		assert_int_equal(qemu_stream_write_finish(w, &cx), -CAUSE_INTERNAL);
		struct cause_ctx fresh = { 0 };
		assert_int_equal(qemu_stream_write_finish(w, &fresh), -CAUSE_INTERNAL);
		qemu_stream_writer_free(w);
		stream_buf_free(&out);
	}
}

static void writer_crafted_streams_are_refused(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	b32(&b, STREAM_MAGIC);
	b32(&b, STREAM_VERSION + 1);
	writer_rejects(&b, "offset 0: not a migbed stream header of version 4");
	b.len = 0;
	m_header(&b);
	b8(&b, STREAM_EOF);
	writer_rejects(&b, "offset 8: EOF before RAM START");
	b.len = 0;
	m_header(&b);
	m_device(&b);
	writer_rejects(&b, "offset 8: DEVICE before RAM START");
	b.len = 0;
	m_header(&b);
	b8(&b, STREAM_VERIFY);
	b32(&b, 0);
	writer_rejects(&b, "offset 8: VERIFY before RAM START");
	b.len = 0;
	m_start(&b);
	b64(&b, STREAM_FLAG_EOS);
	b8(&b, STREAM_RAM_START);
	writer_rejects(&b, "offset 37: second RAM START");
	b.len = 0;
	m_start(&b);
	b64(&b, STREAM_FLAG_EOS);
	m_device(&b);
	b8(&b, STREAM_RAM_PART);
	writer_rejects(&b, "offset 58: RAM PART after the device state");   /* 37 + 5 + a 16-byte digest */
	b.len = 0;
	m_start(&b);
	b64(&b, STREAM_FLAG_EOS);
	b8(&b, STREAM_VERIFY);
	b32(&b, STREAM_MAX_BLOCKS + 1);
	writer_rejects(&b, "offset 37: VERIFY of 65 blocks");
	b.len = 0;
	m_start(&b);
	b64(&b, STREAM_FLAG_EOS);
	b8(&b, STREAM_DEVICE);
	b32(&b, STREAM_DEVICE_MAX + 1);
	writer_rejects(&b, "offset 37: DEVICE of 67108865 bytes");
	stream_buf_free(&b);
}

static void writer_crafted_block_lists_are_refused(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	m_start(&b);                                       /* MEM_SIZE again, in START */
	b64(&b, RAM_BYTES | STREAM_FLAG_MEM_SIZE);
	q_block(&b, "ram", RAM_BYTES);
	writer_rejects(&b, "offset 29: MEM_SIZE not first in RAM START");
	b.len = 0;
	m_start(&b);                                       /* MEM_SIZE in a PART */
	b64(&b, STREAM_FLAG_EOS);
	b8(&b, STREAM_RAM_PART);
	b64(&b, RAM_BYTES | STREAM_FLAG_MEM_SIZE);
	q_block(&b, "ram", RAM_BYTES);
	writer_rejects(&b, "offset 38: MEM_SIZE not first in RAM START");
	b.len = 0;
	m_header(&b);
	b8(&b, STREAM_RAM_START);
	b64(&b, STREAM_FLAG_MEM_SIZE);
	writer_rejects(&b, "offset 9: MEM_SIZE total is 0");
	b.len = 0;
	m_header(&b);
	b8(&b, STREAM_RAM_START);
	b64(&b, (STREAM_MAX_BLOCKS + 1) * 4096ull | STREAM_FLAG_MEM_SIZE);
	for (int i = 0; i <= STREAM_MAX_BLOCKS; i++) {
		char name[16];   /* "b%d" of any int: -O1 warns (make check-asan) */
		snprintf(name, sizeof name, "b%d", i);   /* distinct: a name twice is refused first */
		q_block(&b, name, 4096);
	}
	writer_rejects(&b, "offset 9: more than 64 RAM blocks");
	static const struct { const char *name; uint64_t len; const char *want; } blocks[] = {
		{ "", 4096, "offset 9: RAM block 0: empty name or length 0x1000 past the total 0x1000" },
		{ "ram", 0, "offset 9: RAM block 0: empty name or length 0x0 past the total 0x1000" },
		{ "ram", 8192, "offset 9: RAM block 0: empty name or length 0x2000 past the total 0x1000" },
	};
	for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
		b.len = 0;
		m_header(&b);
		b8(&b, STREAM_RAM_START);
		b64(&b, 4096 | STREAM_FLAG_MEM_SIZE);
		q_block(&b, blocks[i].name, blocks[i].len);
		writer_rejects(&b, blocks[i].want);
	}
	/* block lists QEMU's reader refuses (fuzz/fuzz_stream.c: the writer once copied them) */
	b.len = 0;
	m_header(&b);
	b8(&b, STREAM_RAM_START);
	b64(&b, 4096 | STREAM_FLAG_MEM_SIZE);
	q_block(&b, "r\x01m", 4096);
	writer_rejects(&b, "offset 9: RAM block 0: name not printable ASCII");
	b.len = 0;
	m_header(&b);
	b8(&b, STREAM_RAM_START);
	b64(&b, 8192 | STREAM_FLAG_MEM_SIZE);
	q_block(&b, "ram", 4096);
	q_block(&b, "ram", 4096);
	writer_rejects(&b, "offset 9: RAM block 1: name listed twice");
	stream_buf_free(&b);
}

static void writer_arguments_and_options(void **state)
{
	(void)state;
	qemu_stream_writer *w;
	struct stream_buf out = { 0 };
	struct cause_ctx cx = { 0 };
	struct qemu_stream_writer_opts o;
	qemu_stream_writer_opts_defaults(&o);
	o.runstate = NULL;
	assert_int_equal(qemu_stream_writer_new(&o, &w), -EINVAL);
	char rs[101];
	memset(rs, 'r', 100);
	rs[100] = '\0';
	o.runstate = rs;                                   /* 100 bytes: no room for its NUL */
	assert_int_equal(qemu_stream_writer_new(&o, &w), -EINVAL);
	rs[99] = '\0';
	assert_int_equal(qemu_stream_writer_new(&o, &w), 0);
	assert_int_equal(qemu_stream_write(NULL, "", 0, &out, &cx), -CAUSE_INTERNAL);
	assert_int_equal(qemu_stream_write(w, "", 0, NULL, &cx), -CAUSE_INTERNAL);
	assert_int_equal(qemu_stream_write(w, "", 0, &out, NULL), -CAUSE_INTERNAL);
	assert_int_equal(qemu_stream_write(w, NULL, 1, &out, &cx), -CAUSE_INTERNAL);
	assert_int_equal(qemu_stream_write(w, NULL, 0, &out, &cx), 0);
	assert_int_equal(out.len, 0);
	qemu_stream_writer_free(w);

	/* no description: the output ends at EOF, and a reader told so reads it whole; the 99-byte
	 * run state travels with its size */
	o.vmdesc = false;
	assert_int_equal(qemu_stream_writer_new(&o, &w), 0);
	uint8_t b[512];
	size_t ends[16], k = migbed_stream(b, ends);
	assert_int_equal(qemu_stream_out_filter(w, b, ends[k - 1], &out, &cx), 0);
	assert_int_equal(qemu_stream_write_finish(w, &cx), 0);
	assert_int_equal(out.data[out.len - 1], 0x00);
	struct qemu_stream_opts ro = { .vmdesc = false };
	qemu_stream *r;
	assert_int_equal(qemu_stream_new(&ro, &r), 0);
	char trace[64] = "";
	run(r, out.data, out.len, out.len, trace, sizeof trace, NULL);
	assert_string_equal(trace, "bheheheessF");
	assert_int_equal(qemu_stream_finish(r), 0);
	size_t n;
	const uint8_t *gs = qemu_stream_section_data(r, &n);
	assert_int_equal(n, 104);
	assert_memory_equal(gs, "\0\0\0\x64rrr", 7);
	qemu_stream_free(r);
	qemu_stream_writer_free(w);
	stream_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(capture_reads_completely_and_memory_matches),
		cmocka_unit_test(filter_end_names_a_cut_stream),
		cmocka_unit_test(byte_by_byte_gives_the_same_events),
		cmocka_unit_test(every_truncation_is_named),
		cmocka_unit_test(corruptions_end_in_named_causes),
		cmocka_unit_test(bytes_after_the_end_are_refused),
		cmocka_unit_test(rdma_shaped_stream_stops_at_each_hook),
		cmocka_unit_test(translation_is_read_by_migbeds_parser),
		cmocka_unit_test(translation_errors_carry_the_cause),
		cmocka_unit_test(bad_arguments),
		cmocka_unit_test(writer_output_is_read_back_by_the_reader),
		cmocka_unit_test(writer_bytes_match_the_capture),
		cmocka_unit_test(writer_byte_by_byte_is_the_same),
		cmocka_unit_test(writer_errors_are_named),
		cmocka_unit_test(out_of_memory_is_reported_and_nothing_is_lost),
		cmocka_unit_test(writer_full_output_buffer_is_a_named_cause),
		cmocka_unit_test(translate_full_output_buffer_is_a_named_cause),
		cmocka_unit_test(crafted_streams_are_rejected_with_offset_and_bytes),
		cmocka_unit_test(crafted_stream_with_three_blocks_reads_every_field),
		cmocka_unit_test(stream_without_description),
		cmocka_unit_test(long_section_names_fit_the_error_text),
		cmocka_unit_test(reader_feed_limits),
		cmocka_unit_test(expected_digests_are_bounded_and_replaced),
		cmocka_unit_test(translating_a_capture_with_pages_drops_them),
		cmocka_unit_test(writer_crafted_streams_are_refused),
		cmocka_unit_test(writer_crafted_block_lists_are_refused),
		cmocka_unit_test(writer_arguments_and_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
