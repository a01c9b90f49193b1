/* stream_test - the migration stream's writer helpers and incremental parser. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "transport/stream.h"

static void put_header(struct stream_buf *b)
{
	assert_int_equal(stream_put_be32(b, STREAM_MAGIC), 0);
	assert_int_equal(stream_put_be32(b, STREAM_VERSION), 0);
}

/* header, RAM START with two blocks + HOOK + EOS, RAM PART HOOK EOS, DEVICE, VERIFY, EOF */
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
	stream_put_be64(b, STREAM_FLAG_EOS);
	stream_put_u8(b, STREAM_DEVICE);
	stream_put_be32(b, dev_len);
	stream_put_bytes(b, dev, dev_len);
	stream_put_be64(b, stream_digest(STREAM_DIGEST_INIT, dev, dev_len));
	stream_put_u8(b, STREAM_VERIFY);
	stream_put_be32(b, 2);
	stream_put_be64(b, 0x1111);
	stream_put_be64(b, 0x2222);
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
	assert_int_equal(stream_parser_digest(p, 1), 0x2222);
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
	stream_put_be64(&b, 42);
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

static void test_digest_sensitive(void **state)
{
	(void)state;
	uint8_t a[4096] = { 0 }, b2[4096] = { 0 };
	b2[4095] = 1;
	assert_int_not_equal(stream_digest(STREAM_DIGEST_INIT, a, sizeof a),
			     stream_digest(STREAM_DIGEST_INIT, b2, sizeof b2));
	b2[4095] = 0;
	b2[0] = 1;
	assert_int_not_equal(stream_digest(STREAM_DIGEST_INIT, a, sizeof a),
			     stream_digest(STREAM_DIGEST_INIT, b2, sizeof b2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_any_piece_size),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_digest_sensitive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
