/* Tests of the QEMU stream reader on a stream captured from Debian's QEMU 7.2
 * (transport/testdata/none-2m-file.qemu-stream, made by topologies/qemu/capture-stream.sh:
 * `-M none -m 2M`, 8 KiB pattern at 0x1000, migrated to a file), on every truncation of it,
 * on corrupted copies, and on an RDMA-shaped stream assembled from its pieces. */
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
#include "transport/stream.h"

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
	assert_int_equal(qemu_stream_expect_digest(r, "ram", 0x1234abcdull), 0);
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
	assert_int_equal(stream_parser_digest(p, 0), 0x1234abcdull);
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
	assert_int_equal(qemu_stream_expect_digest(r, "", 1), -EINVAL);
	assert_int_equal(qemu_stream_next(r), QEMU_STREAM_EV_NEED_MORE);
	assert_int_equal(qemu_stream_finish(r), -CAUSE_QEMU_STREAM_TRUNCATED);
	assert_non_null(strstr(qemu_stream_error(r), "offset 0: stream ends while expecting the file header (no bytes)"));
	qemu_stream_free(r);
	qemu_stream_free(NULL);
}

/* ---- writer: migbed stream v1 -> QEMU's ------------------------------------------------------ */

/* migbed's stream as sim/engine.c emits it for a 2M block "ram", cut where the engine flushes:
 * setup (header, RAM START, block list, HOOK | EOS), two rounds (PART HOOK | EOS), the end
 * (DEVICE, VERIFY, EOF). Returns the number of pieces; ends[i] is the end of piece i. */
static size_t migbed_stream(uint8_t *o, size_t *ends)
{
	size_t n = 0, k = 0;
	static const uint8_t hdr[] = { 0x51, 0x45, 0x56, 0x4d, 0, 0, 0, 3, STREAM_RAM_START };
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
	o[n++] = STREAM_VERIFY;
	put(o, &n, "\0\0\0\1", 4);
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
	writer_refuses(0, 0x52, "offset 0: not a migbed stream v1 header");
	writer_refuses(8, 0x33, "offset 8: unknown record tag 0x33");
	writer_refuses(8, STREAM_RAM_PART, "offset 8: RAM PART before RAM START");
	writer_refuses(16, 0x00, "offset 9: RAM START does not begin with MEM_SIZE");
	writer_refuses(36, 0x08, "offset 29: RAM flag word 0x8 (migbed sends MEM_SIZE, HOOK, EOS)");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(capture_reads_completely_and_memory_matches),
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
