/* SPDX-License-Identifier: MIT */
/* stream_test - the migration stream's writer helpers and incremental parser. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/stream.h"
#include "transport/test_alloc.h"

#define DG(x) ((struct digest){ .hi = 0, .lo = (x) })

static void put_header(struct stream_buf *b)
{
	assert_int_equal(stream_put_be32(b, STREAM_MAGIC), 0);
	assert_int_equal(stream_put_be32(b, STREAM_VERSION), 0);
}

/* header, RAM START with two blocks + HOOK + EOS, RAM PART HOOK MULTIFD_FLUSH EOS, DEVICE, VERIFY, EOF */
static void build_stream(struct stream_buf *b, const uint8_t *dev, uint32_t dev_len)
{
	put_header(b);
	stream_put_u8(b, STREAM_RAM_START);
	stream_put_be64(b, ((64ull << 20) + (2ull << 20)) | STREAM_FLAG_MEM_SIZE);
	stream_put_u8(b, 6);
	stream_put_bytes(b, "pc.ram", 6);
	stream_put_be64(b, 64ull << 20);
	stream_put_u8(b, 8);
	stream_put_bytes(b, "vga.vram", 8);
	stream_put_be64(b, 2ull << 20);
	stream_put_be64(b, STREAM_FLAG_HOOK);
	stream_put_be64(b, STREAM_FLAG_EOS);
	stream_put_u8(b, STREAM_RAM_PART);
	stream_put_be64(b, STREAM_FLAG_HOOK);
	stream_put_be64(b, STREAM_FLAG_MULTIFD_FLUSH);   /* QEMU 8.1.0-8.1.2's: no event */
	stream_put_be64(b, STREAM_FLAG_EOS);
	stream_put_u8(b, STREAM_DEVICE);
	stream_put_be32(b, dev_len);
	stream_put_bytes(b, dev, dev_len);
	stream_put_digest(b, digest_of(dev, dev_len));
	stream_put_u8(b, STREAM_VERIFY);
	stream_put_be32(b, 2);
	stream_put_digest(b, DG(0x1111));
	stream_put_digest(b, DG(0x2222));
	stream_put_u8(b, STREAM_EOF);
}

static const enum stream_event expected[] = {
	STREAM_EV_BLOCKS, STREAM_EV_HOOK, STREAM_EV_HOOK, STREAM_EV_DEVICE, STREAM_EV_VERIFY, STREAM_EV_EOF,
};

/* Feed the stream in pieces of `piece` bytes; collect events. */
static void parse_in_pieces(const struct stream_buf *b, size_t piece)
{
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	size_t got = 0;
	for (size_t off = 0; off < b->len; off += piece) {
		size_t n = b->len - off < piece ? b->len - off : piece;
		assert_int_equal(stream_parser_feed(p, b->data + off, n), 0);
		for (;;) {
			enum stream_event e = stream_parser_next(p);
			if (e == STREAM_EV_NEED_MORE)
				break;
			assert_true(got < sizeof expected / sizeof expected[0]);
			assert_int_equal(e, expected[got]);
			got++;
		}
	}
	assert_int_equal(got, sizeof expected / sizeof expected[0]);
	assert_int_equal(stream_parser_n_blocks(p), 2);
	assert_string_equal(stream_parser_block(p, 0)->name, "pc.ram");
	assert_int_equal(stream_parser_block(p, 1)->length, 2ull << 20);
	assert_int_equal(stream_parser_device_bytes(p), 1000);
	assert_int_equal(stream_parser_n_digests(p), 2);
	assert_true(digest_eq(stream_parser_digest(p, 1), DG(0x2222)));
	stream_parser_free(p);
}

static void test_round_trip_any_piece_size(void **state)
{
	(void)state;
	uint8_t dev[1000];
	for (size_t i = 0; i < sizeof dev; i++)
		dev[i] = (uint8_t)(i * 7);
	struct stream_buf b = { 0 };
	build_stream(&b, dev, sizeof dev);
	size_t pieces[] = { 1, 3, 7, 8, 64, 1000, 32768 };
	for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
		parse_in_pieces(&b, pieces[i]);
	stream_buf_free(&b);
}

/* Parse b whole; return the first non-NEED_MORE event that is an error, or the last. */
static enum stream_event parse_all(const struct stream_buf *b, char *err, size_t errlen)
{
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	stream_parser_feed(p, b->data, b->len);
	enum stream_event e, last = STREAM_EV_NEED_MORE;
	for (int i = 0; i < 32 && (e = stream_parser_next(p)) != STREAM_EV_NEED_MORE; i++) {
		last = e;
		if (e == STREAM_EV_ERROR)
			break;
	}
	snprintf(err, errlen, "%s", stream_parser_error(p));
	stream_parser_free(p);
	return last;
}

static void test_malformed(void **state)
{
	(void)state;
	char err[256];
	struct stream_buf b = { 0 };
	stream_put_be32(&b, 0x12345678);
	stream_put_be32(&b, 3);
	assert_int_equal(parse_all(&b, err, sizeof err), STREAM_EV_ERROR);
	assert_non_null(strstr(err, "offset 0: bad stream magic"));
	stream_buf_free(&b);

	put_header(&b);
	stream_put_u8(&b, 0x55);
	assert_int_equal(parse_all(&b, err, sizeof err), STREAM_EV_ERROR);
	assert_non_null(strstr(err, "offset 8: unknown record tag (bytes 55)"));
	stream_buf_free(&b);

	put_header(&b);          /* block lengths do not add up to MEM_SIZE */
	stream_put_u8(&b, STREAM_RAM_START);
	stream_put_be64(&b, (4ull << 20) | STREAM_FLAG_MEM_SIZE);
	stream_put_u8(&b, 1);
	stream_put_bytes(&b, "a", 1);
	stream_put_be64(&b, 8ull << 20);
	assert_int_equal(parse_all(&b, err, sizeof err), STREAM_EV_ERROR);
	assert_non_null(strstr(err, "does not add up"));
	stream_buf_free(&b);

	uint8_t dev[16] = { 1, 2, 3 };
	put_header(&b);          /* device digest mismatch */
	stream_put_u8(&b, STREAM_DEVICE);
	stream_put_be32(&b, sizeof dev);
	stream_put_bytes(&b, dev, sizeof dev);
	stream_put_digest(&b, DG(42));
	assert_int_equal(parse_all(&b, err, sizeof err), STREAM_EV_ERROR);
	assert_non_null(strstr(err, "digest mismatch"));
	stream_buf_free(&b);

	put_header(&b);          /* RAM PART before RAM START */
	stream_put_u8(&b, STREAM_RAM_PART);
	assert_int_equal(parse_all(&b, err, sizeof err), STREAM_EV_ERROR);
	assert_non_null(strstr(err, "RAM PART before RAM START"));
	stream_buf_free(&b);

	put_header(&b);          /* bytes after EOF */
	stream_put_u8(&b, STREAM_EOF);
	stream_put_u8(&b, 0x99);
	assert_int_equal(parse_all(&b, err, sizeof err), STREAM_EV_ERROR);
	assert_non_null(strstr(err, "bytes after EOF"));
	stream_buf_free(&b);
}

/* ---- allocation failures (transport/test_alloc.h: test_alloc.any_in = N fails the N-th
 * calloc or realloc from now, once) ------------------------------------------------------- */

static void test_out_of_memory(void **state)
{
	(void)state;
	stream_parser *p = (stream_parser *)&p;
	test_alloc.any_in = 1;
	assert_int_equal(stream_parser_new(&p), -ENOMEM);
	assert_ptr_equal(p, (stream_parser *)&p);     /* untouched */
	stream_parser_free(NULL);

	/* a buffer that cannot grow keeps what it had */
	struct stream_buf b = { 0 };
	assert_int_equal(stream_put_be32(&b, 0xa1b2c3d4), 0);
	uint8_t *data = b.data;
	size_t cap = b.cap;
	uint8_t more[8192] = { 0 };
	test_alloc.any_in = 1;
	assert_int_equal(stream_put_bytes(&b, more, sizeof more), -ENOMEM);
	assert_int_equal(test_alloc.any_in, 0);
	assert_ptr_equal(b.data, data);
	assert_int_equal(b.cap, cap);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.data, "\xa1\xb2\xc3\xd4", 4);
	assert_int_equal(stream_put_bytes(&b, more, sizeof more), 0);   /* and grows later */
	assert_int_equal(b.len, 4 + sizeof more);
	stream_buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
}

/* A buffer never grows past the largest device state + 1 MiB: -E2BIG, nothing written past
 * it. One lazily mapped allocation stands for the full buffer; only its last page is touched. */
#define BUF_LIMIT ((size_t)STREAM_DEVICE_MAX + (1u << 20))

static void test_buffer_limit(void **state)
{
	(void)state;
	uint8_t *big = malloc(BUF_LIMIT);
	assert_non_null(big);
	struct stream_buf b = { .data = big, .len = BUF_LIMIT - 6, .cap = BUF_LIMIT };
	assert_int_equal(stream_put_bytes(&b, NULL, 0), 0);         /* nothing to add: fine */
	assert_int_equal(stream_put_u8(&b, 0x11), 0);
	assert_int_equal(stream_put_bytes(&b, "abcdef", 6), -E2BIG);
	assert_int_equal(b.len, BUF_LIMIT - 5);
	assert_int_equal(stream_put_be64(&b, 0x0102030405060708ull), -E2BIG);   /* the low half */
	assert_true(b.len <= BUF_LIMIT);
	b.len = BUF_LIMIT - 1;
	assert_int_equal(stream_put_be64(&b, 1), -E2BIG);                       /* the high half */
	assert_int_equal(b.len, BUF_LIMIT - 1);
	assert_int_equal(stream_put_be32(&b, 1), -E2BIG);
	assert_int_equal(stream_put_u8(&b, 0x22), 0);
	assert_int_equal(stream_put_u8(&b, 0x33), -E2BIG);
	assert_int_equal(b.len, BUF_LIMIT);
	assert_int_equal(big[BUF_LIMIT - 1], 0x22);
	assert_int_equal(big[BUF_LIMIT - 6], 0x11);
	/* a fresh buffer refuses a single append past the limit before allocating anything */
	struct stream_buf e = { 0 };
	assert_int_equal(stream_put_bytes(&e, big, BUF_LIMIT + 1), -E2BIG);
	assert_null(e.data);
	assert_int_equal(e.len, 0);
	free(big);
}

/* The parser on b: the events as letters until NEED_MORE or ERROR; the error in err. */
static void parse_trace(const struct stream_buf *b, char *trace, size_t tmax, char *err, size_t errlen)
{
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	assert_int_equal(stream_parser_feed(p, b->data, b->len), 0);
	size_t t = 0;
	enum stream_event e;
	while (t + 1 < tmax && (e = stream_parser_next(p)) != STREAM_EV_NEED_MORE) {
		trace[t++] = "nbhdvFE"[e];
		if (e == STREAM_EV_ERROR) {
			assert_int_equal(stream_parser_next(p), STREAM_EV_ERROR);   /* it stays */
			break;
		}
	}
	trace[t] = '\0';
	snprintf(err, errlen, "%s", stream_parser_error(p));
	stream_parser_free(p);
}

static void expect_refused(const struct stream_buf *b, const char *trace_want, const char *err_want)
{
	char trace[32], err[256];
	parse_trace(b, trace, sizeof trace, err, sizeof err);
	if (strcmp(trace, trace_want) != 0 || !strstr(err, err_want))
		fail_msg("trace '%s' error '%s', want '%s' '%s'", trace, err, trace_want, err_want);
}

static void put_start(struct stream_buf *b, uint64_t total)
{
	put_header(b);
	stream_put_u8(b, STREAM_RAM_START);
	stream_put_be64(b, total | STREAM_FLAG_MEM_SIZE);
}

static void put_block(struct stream_buf *b, const char *name, uint64_t len)
{
	stream_put_u8(b, (uint8_t)strlen(name));
	stream_put_bytes(b, name, strlen(name));
	stream_put_be64(b, len);
}

static void test_malformed_more(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	stream_put_be32(&b, STREAM_MAGIC);
	stream_put_be32(&b, STREAM_VERSION + 1);
	expect_refused(&b, "E", "offset 0: unsupported stream version 5 (want 4) (bytes 51 45 56 4d 00 00 00 05)");
	stream_buf_free(&b);

	/* version 3: a migbed build's from before the 16-byte digests, refused by its version
	 * (its 8-byte VERIFY digests would otherwise be read as 16-byte ones) */
	stream_put_be32(&b, STREAM_MAGIC);
	stream_put_be32(&b, 3);
	expect_refused(&b, "E", "offset 0: unsupported stream version 3 (want 4: version 3 is a migbed build's "
				"from before the 16-byte digests) (bytes 51 45 56 4d 00 00 00 03)");
	stream_buf_free(&b);

	put_start(&b, 4096);                  /* a multifd flush belongs to a RAM PART, not RAM START */
	put_block(&b, "pc.ram", 4096);
	stream_put_be64(&b, STREAM_FLAG_MULTIFD_FLUSH);
	expect_refused(&b, "bE", "offset 32: unexpected RAM flag word");
	b.len = 0;

	put_start(&b, (STREAM_MAX_BLOCKS + 1) * 4096ull);   /* 65 blocks */
	for (int i = 0; i <= STREAM_MAX_BLOCKS; i++)
		put_block(&b, "b", 4096);
	expect_refused(&b, "E", "offset 657: more than 64 RAM blocks (bytes 01 62 00 00 00 00 00 00)");
	stream_buf_free(&b);

	put_start(&b, 4096);
	put_block(&b, "", 4096);
	expect_refused(&b, "E", "offset 17: empty RAM block name (bytes 00 00 00 00 00 00 00 10)");
	stream_buf_free(&b);

	put_start(&b, 4096);
	put_block(&b, "a", 0);
	expect_refused(&b, "E", "offset 17: RAM block length does not add up to the MEM_SIZE total");
	stream_buf_free(&b);

	put_header(&b);                       /* HOOK before the block list */
	stream_put_u8(&b, STREAM_RAM_START);
	stream_put_be64(&b, STREAM_FLAG_HOOK);
	expect_refused(&b, "E", "offset 9: unexpected RAM flag word (bytes 00 00 00 00 00 00 00 80)");
	stream_buf_free(&b);

	put_start(&b, 4096);                  /* MEM_SIZE twice in START */
	put_block(&b, "a", 4096);
	stream_put_be64(&b, 4096 | STREAM_FLAG_MEM_SIZE);
	expect_refused(&b, "bE", "offset 27: unexpected RAM flag word");
	stream_buf_free(&b);

	put_start(&b, 4096);                  /* MEM_SIZE in a PART */
	put_block(&b, "a", 4096);
	stream_put_be64(&b, STREAM_FLAG_EOS);
	stream_put_u8(&b, STREAM_RAM_PART);
	stream_put_be64(&b, 4096 | STREAM_FLAG_MEM_SIZE);
	expect_refused(&b, "bE", "offset 36: unexpected RAM flag word (bytes 00 00 00 00 00 00 10 04)");
	stream_buf_free(&b);

	put_start(&b, 4096);                  /* a flag word migbed never sends */
	put_block(&b, "a", 4096);
	stream_put_be64(&b, 0x1008);
	expect_refused(&b, "bE", "offset 27: unexpected RAM flag word");
	stream_buf_free(&b);

	put_start(&b, 4096);
	put_block(&b, "a", 4096);
	stream_put_be64(&b, STREAM_FLAG_EOS);
	stream_put_u8(&b, STREAM_RAM_START);
	expect_refused(&b, "bE", "offset 35: second RAM START record (bytes 01)");
	stream_buf_free(&b);

	put_header(&b);
	stream_put_u8(&b, STREAM_DEVICE);
	stream_put_be32(&b, STREAM_DEVICE_MAX + 1);
	expect_refused(&b, "E", "offset 8: device state larger than 64 MiB (bytes 04 04 00 00 01)");
	stream_buf_free(&b);

	put_header(&b);
	stream_put_u8(&b, STREAM_VERIFY);
	stream_put_be32(&b, STREAM_MAX_BLOCKS + 1);
	expect_refused(&b, "E", "offset 8: VERIFY record with more than 64 blocks (bytes 7f 00 00 00 41)");
	stream_buf_free(&b);
}

static void test_accessors_out_of_range(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	put_start(&b, 8192);
	put_block(&b, "a", 4096);
	put_block(&b, "b", 4096);
	stream_put_be64(&b, STREAM_FLAG_EOS);
	stream_put_u8(&b, STREAM_VERIFY);
	stream_put_be32(&b, 2);
	stream_put_digest(&b, DG(0xaa));
	stream_put_digest(&b, DG(0xbb));
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	assert_null(stream_parser_block(p, 0));
	assert_true(digest_eq(stream_parser_digest(p, 0), DG(0)));
	assert_int_equal(stream_parser_feed(p, b.data, b.len), 0);
	assert_int_equal(stream_parser_next(p), STREAM_EV_BLOCKS);
	assert_int_equal(stream_parser_next(p), STREAM_EV_VERIFY);
	assert_string_equal(stream_parser_block(p, 1)->name, "b");
	assert_null(stream_parser_block(p, 2));
	assert_true(digest_eq(stream_parser_digest(p, 1), DG(0xbb)));
	assert_true(digest_eq(stream_parser_digest(p, 2), DG(0)));
	stream_parser_free(p);
	stream_buf_free(&b);
}

/* What the writers can write, the reader reads; what no writer can write, it refuses by name
 * (issue 16). Names are C strings on the writing side, so a NUL inside one is a forgery that
 * would otherwise be read as a shorter name ("pc.ram\0x" as "pc.ram"); any other byte is
 * QEMU's business (an idstr is any string) and reads back unchanged. A MEM_SIZE of 0 is no
 * RAM at all: nothing to migrate or verify. */
static void test_block_names_and_sizes_round_trip(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	put_start(&b, 4096);
	stream_put_u8(&b, 8);
	stream_put_bytes(&b, "pc.ram\0x", 8);
	stream_put_be64(&b, 4096);
	expect_refused(&b, "E", "offset 17: RAM block name holds a NUL byte");
	stream_buf_free(&b);

	put_start(&b, 0);
	stream_put_be64(&b, STREAM_FLAG_EOS);
	expect_refused(&b, "E", "offset 9: MEM_SIZE total of 0 (no RAM)");
	stream_buf_free(&b);

	const char odd[] = "a\x01\x7f\xff b";
	put_start(&b, 8192);
	put_block(&b, odd, 8192);
	stream_put_be64(&b, STREAM_FLAG_EOS);
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	assert_int_equal(stream_parser_feed(p, b.data, b.len), 0);
	assert_int_equal(stream_parser_next(p), STREAM_EV_BLOCKS);
	assert_string_equal(stream_parser_block(p, 0)->name, odd);
	assert_int_equal(stream_parser_block(p, 0)->length, 8192);
	stream_parser_free(p);
	stream_buf_free(&b);
}

/* A hostile source's stream: one RAM START, then a million empty RAM PART records (tag, EOS),
 * all in one feed. The parser once recursed once per record (parse_flags -> next -> top ->
 * parse_flags) and overflowed the stack in builds without sibling-call optimisation (-O0,
 * ASan); it now loops. Run on a 256 KiB stack so the recursion cannot hide. */
#define MANY_PARTS 1000000
static void *parse_many_parts(void *arg)
{
	stream_parser *p = arg;
	enum stream_event e;
	size_t n = 0;
	while ((e = stream_parser_next(p)) != STREAM_EV_NEED_MORE && e != STREAM_EV_ERROR)
		n++;
	return (void *)(uintptr_t)(n * 2 + (e == STREAM_EV_ERROR));
}

static void test_many_records_no_recursion(void **state)
{
	(void)state;
	struct stream_buf b = { 0 };
	put_start(&b, 4096);
	put_block(&b, "pc.ram", 4096);
	stream_put_be64(&b, STREAM_FLAG_EOS);
	for (int i = 0; i < MANY_PARTS; i++) {
		assert_int_equal(stream_put_u8(&b, STREAM_RAM_PART), 0);
		assert_int_equal(stream_put_be64(&b, STREAM_FLAG_EOS), 0);
	}
	stream_put_u8(&b, STREAM_EOF);
	stream_parser *p;
	assert_int_equal(stream_parser_new(&p), 0);
	assert_int_equal(stream_parser_feed(p, b.data, b.len), 0);
	pthread_attr_t a;
	pthread_t t;
	void *res;
	assert_int_equal(pthread_attr_init(&a), 0);
	assert_int_equal(pthread_attr_setstacksize(&a, 256 * 1024), 0);
	assert_int_equal(pthread_create(&t, &a, parse_many_parts, p), 0);
	assert_int_equal(pthread_join(t, &res), 0);
	pthread_attr_destroy(&a);
	assert_int_equal((uintptr_t)res, 2 * 2);   /* BLOCKS, EOF; no error */
	stream_parser_free(p);
	stream_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_any_piece_size),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_buffer_limit),
		cmocka_unit_test(test_malformed_more),
		cmocka_unit_test(test_accessors_out_of_range),
		cmocka_unit_test(test_many_records_no_recursion),
		cmocka_unit_test(test_block_names_and_sizes_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
