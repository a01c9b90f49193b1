/* SPDX-License-Identifier: MIT */
/* wire_test - exact bytes, round trips, length checks and chunk arithmetic of transport/wire. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "sim/prng.h"
#include "transport/wire.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* ---- capabilities ------------------------------------------------------------------------ */

static void test_caps_plain_bytes(void **state)
{
	(void)state;
	struct wire_caps c = { .version = 1, .flags = WIRE_CAP_PIN_ALL, .chunk_shift = 26 };
	const uint8_t want[8] = { 0, 0, 0, 1, 0, 0, 0, 1 };
	uint8_t buf[16];
	memset(buf, 0xee, sizeof buf);
	assert_int_equal(wire_caps_encode(&c, buf, sizeof buf), 8);
	assert_memory_equal(buf, want, sizeof want);
	assert_int_equal(buf[8], 0xee); /* nothing written past the 8 bytes */

	struct wire_caps d;
	memset(&d, 0xff, sizeof d);
	assert_int_equal(wire_caps_decode(buf, 8, &d), 0);
	assert_int_equal(d.version, 1);
	assert_int_equal(d.flags, WIRE_CAP_PIN_ALL);
	assert_int_equal(d.chunk_shift, 0); /* no extension: shift not read */
}

static void test_caps_extension_bytes(void **state)
{
	(void)state;
	struct wire_caps c = { .version = 1, .flags = WIRE_CAP_PIN_ALL | WIRE_CAP_CHUNK_SIZE,
			       .chunk_shift = 30 };
	const uint8_t want[16] = { 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 30, 0, 0, 0, 0 };
	uint8_t buf[16];
	memset(buf, 0xee, sizeof buf);
	assert_int_equal(wire_caps_encode(&c, buf, sizeof buf), 16);
	assert_memory_equal(buf, want, sizeof want);

	struct wire_caps d;
	assert_int_equal(wire_caps_decode(buf, sizeof buf, &d), 0);
	assert_int_equal(d.version, 1);
	assert_int_equal(d.flags, WIRE_CAP_PIN_ALL | WIRE_CAP_CHUNK_SIZE);
	assert_int_equal(d.chunk_shift, 30);
}

static void test_caps_short(void **state)
{
	(void)state;
	struct wire_caps c = { .version = 1, .flags = 0 };
	struct wire_caps ext = { .version = 1, .flags = WIRE_CAP_CHUNK_SIZE, .chunk_shift = 20 };
	uint8_t buf[16] = { 0 };
	struct wire_caps d;
	assert_int_equal(wire_caps_encode(&c, buf, 7), -ENOSPC);
	assert_int_equal(wire_caps_encode(&ext, buf, 15), -ENOSPC);
	assert_int_equal(wire_caps_encode(&ext, buf, 8), -ENOSPC);
	assert_int_equal(wire_caps_decode(buf, 7, &d), -EINVAL);
	assert_int_equal(wire_caps_decode(buf, 0, &d), -EINVAL);

	/* flag set but only the 8 basic bytes: malformed */
	const uint8_t short_ext[12] = { 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 20 };
	assert_int_equal(wire_caps_decode(short_ext, 8, &d), -EINVAL);
	assert_int_equal(wire_caps_decode(short_ext, 12, &d), -EINVAL);
}

static void test_caps_padded(void **state)
{
	(void)state;
	/* rdma_cm hands over 56 bytes of private data, the rest zero */
	uint8_t pdata[56] = { 0 };
	struct wire_caps c = { .version = 1, .flags = WIRE_CAP_PIN_ALL };
	assert_int_equal(wire_caps_encode(&c, pdata, sizeof pdata), 8);
	struct wire_caps d;
	assert_int_equal(wire_caps_decode(pdata, sizeof pdata, &d), 0);
	assert_int_equal(d.version, 1);
	assert_int_equal(d.flags, WIRE_CAP_PIN_ALL);
	assert_int_equal(d.chunk_shift, 0);

	/* junk after the 8 bytes is not taken for a chunk shift without the flag */
	pdata[11] = 26;
	assert_int_equal(wire_caps_decode(pdata, sizeof pdata, &d), 0);
	assert_int_equal(d.chunk_shift, 0);

	/* padded (196 bytes) with the extension */
	uint8_t big[196] = { 0 };
	struct wire_caps e = { .version = 1, .flags = WIRE_CAP_CHUNK_SIZE, .chunk_shift = 26 };
	assert_int_equal(wire_caps_encode(&e, big, sizeof big), 16);
	assert_int_equal(wire_caps_decode(big, sizeof big, &d), 0);
	assert_int_equal(d.flags, WIRE_CAP_CHUNK_SIZE);
	assert_int_equal(d.chunk_shift, 26);

	/* version travels unchecked: the protocol layer decides */
	const uint8_t v2[8] = { 0, 0, 0, 2, 0, 0, 0, 0 };
	assert_int_equal(wire_caps_decode(v2, sizeof v2, &d), 0);
	assert_int_equal(d.version, 2);
}

/* ---- header and type names ----------------------------------------------------------------- */

static void test_hdr_bytes(void **state)
{
	(void)state;
	struct wire_hdr h = { .len = 24, .type = WIRE_REGISTER_REQUEST, .repeat = 1 };
	const uint8_t want[16] = { 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x07,
				   0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00 };
	uint8_t buf[WIRE_HDR_BYTES];
	assert_int_equal(wire_hdr_encode(&h, buf, sizeof buf), 16);
	assert_memory_equal(buf, want, sizeof want);
}

static void test_hdr_round_trip(void **state)
{
	(void)state;
	struct wire_hdr h = { .len = WIRE_CONTROL_MAX_DATA, .type = WIRE_UNREGISTER_FINISHED,
			      .repeat = WIRE_MAX_REPEAT, .padding = 0xdeadbeefu };
	const uint8_t want[16] = { 0x00, 0x07, 0xff, 0xf0, 0x00, 0x00, 0x00, 0x0b,
				   0x00, 0x00, 0x10, 0x00, 0xde, 0xad, 0xbe, 0xef };
	uint8_t buf[64] = { 0 };
	assert_int_equal(wire_hdr_encode(&h, buf, sizeof buf), 16);
	assert_memory_equal(buf, want, sizeof want);

	struct wire_hdr d;
	assert_int_equal(wire_hdr_decode(buf, sizeof buf, &d), 0); /* longer buffer is fine */
	assert_int_equal(d.len, h.len);
	assert_int_equal(d.type, h.type);
	assert_int_equal(d.repeat, h.repeat);
	assert_int_equal(d.padding, 0xdeadbeefu); /* carried as-is */
}

static void test_hdr_short(void **state)
{
	(void)state;
	struct wire_hdr h = { .len = 0, .type = WIRE_READY, .repeat = 1 };
	uint8_t buf[16] = { 0 };
	struct wire_hdr d;
	assert_int_equal(wire_hdr_encode(&h, buf, 15), -ENOSPC);
	assert_int_equal(wire_hdr_encode(&h, buf, 0), -ENOSPC);
	assert_int_equal(wire_hdr_decode(buf, 15, &d), -EINVAL);
	assert_int_equal(wire_hdr_encode(NULL, buf, 16), -EINVAL);
	assert_int_equal(wire_hdr_decode(NULL, 16, &d), -EINVAL);
}

/* corrupt(...) of a framed message, as a fault rule asks it of the protocol (wire_corrupt):
 * what each kind changes, read back through the decoder. */
static void test_corrupt(void **state)
{
	(void)state;
	struct wire_hdr h = { .len = 4, .type = WIRE_READY, .repeat = 1 }, d;
	uint8_t msg[WIRE_HDR_BYTES + 4] = { 0 };

	assert_int_equal(wire_hdr_encode(&h, msg, sizeof msg), (int)WIRE_HDR_BYTES);
	assert_true(wire_corrupt(msg, sizeof msg, FAULT_CORRUPT_LEN));
	assert_true(wire_corrupt(msg, sizeof msg, FAULT_CORRUPT_TYPE));
	assert_true(wire_corrupt(msg, sizeof msg, FAULT_CORRUPT_REPEAT));
	assert_true(wire_corrupt(msg, sizeof msg, FAULT_CORRUPT_PAYLOAD));
	assert_int_equal(wire_hdr_decode(msg, sizeof msg, &d), 0);
	assert_int_equal(d.len, 4 + (1u << 30));            /* "too long length" */
	assert_int_equal(d.type, WIRE_READY ^ 0x80u);        /* unknown */
	assert_int_equal(d.repeat, 1 + 65536);               /* over 4096 */
	assert_int_equal(msg[WIRE_HDR_BYTES], 0xff);
	/* nothing to change: a payload without data, or less than a header */
	assert_false(wire_corrupt(msg, WIRE_HDR_BYTES, FAULT_CORRUPT_PAYLOAD));
	assert_false(wire_corrupt(msg, WIRE_HDR_BYTES - 1, FAULT_CORRUPT_LEN));
	assert_int_equal(wire_hdr_decode(msg, sizeof msg, &d), 0);
	assert_int_equal(d.len, 4 + (1u << 30));             /* unchanged by the refusals */
}

static void test_type_names(void **state)
{
	(void)state;
	static const char *const names[WIRE_TYPE_COUNT] = {
		"NONE", "ERROR", "READY", "QEMU FILE", "RAM BLOCKS REQUEST", "RAM BLOCKS RESULT",
		"COMPRESS", "REGISTER REQUEST", "REGISTER RESULT", "REGISTER FINISHED",
		"UNREGISTER REQUEST", "UNREGISTER FINISHED",
	};
	static const char *const tokens[WIRE_TYPE_COUNT] = {
		"none", "error", "ready", "qemu_file", "ram_blocks_request", "ram_blocks_result",
		"compress", "register_request", "register_result", "register_finished",
		"unregister_request", "unregister_finished",
	};
	for (uint32_t t = 0; t < WIRE_TYPE_COUNT; t++) {
		assert_string_equal(wire_type_name(t), names[t]);
		assert_string_equal(wire_type_token(t), tokens[t]);
	}
	assert_string_equal(wire_type_name(WIRE_REGISTER_RESULT), "REGISTER RESULT");
	assert_string_equal(wire_type_token(WIRE_QEMU_FILE), "qemu_file");
	assert_string_equal(wire_type_name(WIRE_TYPE_COUNT), "??BAD CONTROL VALUE??");
	assert_string_equal(wire_type_name(UINT32_MAX), "??BAD CONTROL VALUE??");
	assert_string_equal(wire_type_token(WIRE_TYPE_COUNT), "bad");
	assert_string_equal(wire_type_token(UINT32_MAX), "bad");
}

/* ---- payload records ----------------------------------------------------------------------- */

static void test_dest_block(void **state)
{
	(void)state;
	struct wire_dest_block b = { .remote_host_addr = UINT64_C(0x00007f1234560000),
				     .offset = UINT64_C(0x0000000100000000),
				     .length = UINT64_C(0x0000000080000000),
				     .remote_rkey = 0x1234abcdu, .padding = 0 };
	const uint8_t want[32] = {
		0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00,
		0x12, 0x34, 0xab, 0xcd, 0x00, 0x00, 0x00, 0x00,
	};
	uint8_t buf[32];
	assert_int_equal(wire_dest_block_encode(&b, buf, sizeof buf), 32);
	assert_memory_equal(buf, want, sizeof want);

	struct wire_dest_block d;
	memset(&d, 0xff, sizeof d);
	assert_int_equal(wire_dest_block_decode(buf, sizeof buf, &d), 0);
	assert_true(d.remote_host_addr == b.remote_host_addr);
	assert_true(d.offset == b.offset);
	assert_true(d.length == b.length);
	assert_int_equal(d.remote_rkey, b.remote_rkey);
	assert_int_equal(d.padding, 0);

	assert_int_equal(wire_dest_block_encode(&b, buf, 31), -ENOSPC);
	assert_int_equal(wire_dest_block_decode(buf, 31, &d), -EINVAL);
}

static void test_register(void **state)
{
	(void)state;
	struct wire_register r = { .key = UINT64_C(0x0102030405060708), .current_index = 0x3fff,
				   .padding = 0, .chunks = UINT64_C(0xa0b0c0d0e0f00010) };
	const uint8_t want[24] = {
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x00, 0x00, 0x3f, 0xff, 0x00, 0x00, 0x00, 0x00,
		0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0, 0x00, 0x10,
	};
	uint8_t buf[24];
	assert_int_equal(wire_register_encode(&r, buf, sizeof buf), 24);
	assert_memory_equal(buf, want, sizeof want);

	struct wire_register d;
	assert_int_equal(wire_register_decode(buf, sizeof buf, &d), 0);
	assert_true(d.key == r.key);
	assert_int_equal(d.current_index, 0x3fff);
	assert_int_equal(d.padding, 0);
	assert_true(d.chunks == r.chunks);

	assert_int_equal(wire_register_encode(&r, buf, 23), -ENOSPC);
	assert_int_equal(wire_register_decode(buf, 23, &d), -EINVAL);
}

static void test_register_result(void **state)
{
	(void)state;
	struct wire_register_result r = { .rkey = 0xcafef00du, .padding = 0,
					  .host_addr = UINT64_C(0x00007fabcdef1000) };
	const uint8_t want[16] = {
		0xca, 0xfe, 0xf0, 0x0d, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x7f, 0xab, 0xcd, 0xef, 0x10, 0x00,
	};
	uint8_t buf[16];
	assert_int_equal(wire_register_result_encode(&r, buf, sizeof buf), 16);
	assert_memory_equal(buf, want, sizeof want);

	struct wire_register_result d;
	assert_int_equal(wire_register_result_decode(buf, sizeof buf, &d), 0);
	assert_int_equal(d.rkey, 0xcafef00du);
	assert_int_equal(d.padding, 0);
	assert_true(d.host_addr == r.host_addr);

	assert_int_equal(wire_register_result_encode(&r, buf, 15), -ENOSPC);
	assert_int_equal(wire_register_result_decode(buf, 15, &d), -EINVAL);
}

static void test_compress(void **state)
{
	(void)state;
	struct wire_compress c = { .value = 0, .block_idx = 2, .offset = UINT64_C(0x40000000),
				   .length = UINT64_C(0x200000) };
	const uint8_t want[24] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
		0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,
	};
	uint8_t buf[24];
	assert_int_equal(wire_compress_encode(&c, buf, sizeof buf), 24);
	assert_memory_equal(buf, want, sizeof want);

	/* a non-zero value survives decoding so the destination can reject it */
	buf[3] = 0x05;
	struct wire_compress d;
	assert_int_equal(wire_compress_decode(buf, sizeof buf, &d), 0);
	assert_int_equal(d.value, 5);
	assert_int_equal(d.block_idx, 2);
	assert_true(d.offset == c.offset);
	assert_true(d.length == c.length);

	assert_int_equal(wire_compress_encode(&c, buf, 23), -ENOSPC);
	assert_int_equal(wire_compress_decode(buf, 23, &d), -EINVAL);
}

/* ---- work-request ids ---------------------------------------------------------------------- */

static void test_wrid(void **state)
{
	(void)state;
	uint64_t chunk_max = (UINT64_C(1) << 34) - 1;
	uint64_t id = wire_wrid_write(0x3fff, chunk_max);
	assert_true(id == UINT64_C(0xffffffffffff0001));
	assert_int_equal(wire_wrid_type(id), WIRE_WRID_RDMA_WRITE);
	assert_int_equal(wire_wrid_block(id), 0x3fff);
	assert_true(wire_wrid_chunk(id) == chunk_max);

	id = wire_wrid_write(5, 3);
	assert_true(id == ((UINT64_C(3) << 30) | (UINT64_C(5) << 16) | 1u));
	assert_int_equal(wire_wrid_type(id), 1);
	assert_int_equal(wire_wrid_block(id), 5);
	assert_true(wire_wrid_chunk(id) == 3);

	/* max block with chunk 0, chunk with block 0: no bleeding between fields */
	id = wire_wrid_write(0x3fff, 0);
	assert_true(id == UINT64_C(0x3fff0001));
	assert_true(wire_wrid_chunk(id) == 0);
	id = wire_wrid_write(0, chunk_max);
	assert_int_equal(wire_wrid_block(id), 0);

	assert_int_equal(wire_wrid_type(WIRE_WRID_SEND_CONTROL), 2000);
	assert_int_equal(wire_wrid_type(WIRE_WRID_RECV_CONTROL + WIRE_SLOT_CONTROL), 4002);
	assert_int_equal(wire_wrid_block(WIRE_WRID_RECV_CONTROL + WIRE_SLOT_CONTROL), 0);
}

/* ---- chunk arithmetic ---------------------------------------------------------------------- */

/* For one block and shift, check index/start/end at the first and last byte and the edges. */
static void check_block_edges(uint64_t base, uint64_t len, unsigned shift)
{
	uint64_t c = UINT64_C(1) << shift;
	uint64_t last = base + len - 1;
	uint64_t last_idx = (len - 1) / c;

	assert_true(wire_chunk_index(base, base, shift) == 0);
	assert_true(wire_chunk_start(base, 0, shift) == base);
	assert_true(wire_chunk_end(base, len, 0, shift) == base + (len < c ? len : c));
	assert_true(wire_chunk_index(base, last, shift) == last_idx);
	assert_true(wire_chunk_start(base, last_idx, shift) == base + last_idx * c);
	assert_true(wire_chunk_end(base, len, last_idx, shift) == base + len);
	if (len > c) {
		assert_true(wire_chunk_index(base, base + c - 1, shift) == 0);
		assert_true(wire_chunk_index(base, base + c, shift) == 1);
		assert_true(wire_chunk_end(base, len, 0, shift) == base + c);
	}
}

static void test_chunk_edges(void **state)
{
	(void)state;
	static const unsigned shifts[] = { 20, 26, 30 };
	/* bases not aligned to any chunk: arithmetic is block-relative */
	const uint64_t base = UINT64_C(0x7f0000123000);
	for (size_t i = 0; i < sizeof shifts / sizeof shifts[0]; i++) {
		unsigned s = shifts[i];
		uint64_t c = UINT64_C(1) << s;
		check_block_edges(base, 3 * c + 4096, s);   /* not a multiple */
		check_block_edges(base, 4 * c, s);          /* exact multiple */
		check_block_edges(base, c / 2, s);          /* smaller than a chunk */
		check_block_edges(base, c, s);              /* exactly one chunk */
	}
}

static void test_chunk_values(void **state)
{
	(void)state;
	const uint64_t base = UINT64_C(0x10000);
	/* shift 20, block 2.5 MiB: chunks [0,1M) [1M,2M) [2M,2.5M) */
	uint64_t len = 2 * MiB + MiB / 2;
	assert_true(wire_chunk_index(base, base + 2 * MiB - 1, 20) == 1);
	assert_true(wire_chunk_index(base, base + 2 * MiB, 20) == 2);
	assert_true(wire_chunk_start(base, 2, 20) == base + 2 * MiB);
	assert_true(wire_chunk_end(base, len, 1, 20) == base + 2 * MiB);
	assert_true(wire_chunk_end(base, len, 2, 20) == base + len);
	/* shift 26 (64 MiB), block 100 MiB */
	len = 100 * MiB;
	assert_true(wire_chunk_index(base, base + 64 * MiB, 26) == 1);
	assert_true(wire_chunk_end(base, len, 1, 26) == base + 100 * MiB);
	/* shift 30, block 8 GiB: last chunk is 7 */
	len = 8 * GiB;
	assert_true(wire_chunk_index(base, base + len - 1, 30) == 7);
	assert_true(wire_chunk_start(base, 7, 30) == base + 7 * GiB);
	assert_true(wire_chunk_end(base, len, 7, 30) == base + 8 * GiB);
	/* the QEMU extra chunk (index == nb-1 for an exact multiple) ends at the block end */
	assert_true(wire_chunk_end(base, len, 8, 30) == base + len);
}

static void test_nb_chunks(void **state)
{
	(void)state;
	assert_true(wire_nb_chunks(0, 20) == 1);
	assert_true(wire_nb_chunks(4096, 20) == 1);
	assert_true(wire_nb_chunks(MiB - 1, 20) == 1);
	assert_true(wire_nb_chunks(MiB, 20) == 2);          /* exact multiple: one extra */
	assert_true(wire_nb_chunks(MiB + 1, 20) == 2);
	assert_true(wire_nb_chunks(8 * GiB, 20) == 8193);
	assert_true(wire_nb_chunks(8 * GiB, 26) == 129);
	assert_true(wire_nb_chunks(8 * GiB, 30) == 9);
	assert_true(wire_nb_chunks(8 * GiB + 4096, 30) == 9);
	assert_true(wire_nb_chunks(GiB - 1, 30) == 1);
}

static void test_additional_chunks(void **state)
{
	(void)state;
	assert_true(wire_additional_chunks(0, 20) == 0);
	assert_true(wire_additional_chunks(4096, 20) == 0);
	assert_true(wire_additional_chunks(MiB - 1, 20) == 0);
	assert_true(wire_additional_chunks(MiB, 20) == 0);      /* exact: 1 - 1 */
	assert_true(wire_additional_chunks(MiB + 1, 20) == 1);
	assert_true(wire_additional_chunks(2 * MiB, 20) == 1);
	assert_true(wire_additional_chunks(2 * MiB + 4096, 20) == 2);
	assert_true(wire_additional_chunks(2 * MiB, 26) == 0);
	assert_true(wire_additional_chunks(128 * MiB, 26) == 1);
	assert_true(wire_additional_chunks(3 * GiB, 30) == 2);
	assert_true(wire_additional_chunks(3 * GiB + 1, 30) == 3);
}

/* A block that ends at the top of the address space: a chunk's end is the block's, not an
 * address that wrapped past 2^64 (fuzz/fuzz_wire.c). */
static void test_chunk_end_at_the_top(void **state)
{
	(void)state;
	uint64_t base = UINT64_MAX - (1ull << 20) + 1 - 4096, len = (1ull << 20) + 4096;   /* ends at 2^64 - 1 */
	assert_true(wire_chunk_end(base, len - 1, 0, 20) == base + (1ull << 20));
	assert_true(wire_chunk_end(base, len - 1, 1, 20) == base + len - 1);
	assert_true(wire_chunk_end(UINT64_MAX - 4095, 4095, 0, 20) == UINT64_MAX);
}

static void test_chunk_shift(void **state)
{
	(void)state;
	unsigned s = 99;
	assert_int_equal(wire_chunk_shift(MiB, &s), 0);
	assert_int_equal(s, 20);
	assert_int_equal(wire_chunk_shift(64 * MiB, &s), 0);
	assert_int_equal(s, 26);
	assert_int_equal(wire_chunk_shift(GiB, &s), 0);
	assert_int_equal(s, 30);
	for (unsigned k = 20; k <= 30; k++) {
		assert_int_equal(wire_chunk_shift(UINT64_C(1) << k, &s), 0);
		assert_int_equal(s, k);
	}

	s = 99;
	assert_int_equal(wire_chunk_shift(0, &s), -EINVAL);
	assert_int_equal(wire_chunk_shift(512 * 1024, &s), -EINVAL);
	assert_int_equal(wire_chunk_shift(3 * MiB, &s), -EINVAL);
	assert_int_equal(wire_chunk_shift(2 * GiB, &s), -EINVAL);
	assert_int_equal(wire_chunk_shift(MiB + 1, &s), -EINVAL);
	assert_int_equal(wire_chunk_shift(UINT64_MAX, &s), -EINVAL);
	assert_int_equal(s, 99); /* untouched on error */
	assert_int_equal(wire_chunk_shift(MiB, NULL), -EINVAL);
}

/* Every encoder refuses a missing record or buffer, every decoder a missing buffer or
 * output, before looking at lengths; nothing is written. */
static void test_missing_arguments(void **state)
{
	(void)state;
	uint8_t buf[64];
	memset(buf, 0xee, sizeof buf);
	struct wire_caps c = { .version = 1 };
	struct wire_hdr h = { .type = WIRE_READY };
	struct wire_dest_block db = { .length = 1 };
	struct wire_register rg = { .chunks = 1 };
	struct wire_register_result rr = { .rkey = 1 };
	struct wire_compress cm = { .length = 1 };
	assert_int_equal(wire_caps_encode(&c, NULL, sizeof buf), -EINVAL);
	assert_int_equal(wire_hdr_encode(&h, NULL, sizeof buf), -EINVAL);
	assert_int_equal(wire_dest_block_encode(&db, NULL, sizeof buf), -EINVAL);
	assert_int_equal(wire_dest_block_encode(NULL, buf, sizeof buf), -EINVAL);
	assert_int_equal(wire_register_encode(&rg, NULL, sizeof buf), -EINVAL);
	assert_int_equal(wire_register_encode(NULL, buf, sizeof buf), -EINVAL);
	assert_int_equal(wire_register_result_encode(&rr, NULL, sizeof buf), -EINVAL);
	assert_int_equal(wire_register_result_encode(NULL, buf, sizeof buf), -EINVAL);
	assert_int_equal(wire_compress_encode(&cm, NULL, sizeof buf), -EINVAL);
	assert_int_equal(wire_compress_encode(NULL, buf, sizeof buf), -EINVAL);
	assert_int_equal(wire_caps_encode(NULL, buf, sizeof buf), -EINVAL);
	for (size_t i = 0; i < sizeof buf; i++)
		assert_int_equal(buf[i], 0xee);
	assert_int_equal(wire_caps_decode(buf, sizeof buf, NULL), -EINVAL);
	assert_int_equal(wire_hdr_decode(buf, sizeof buf, NULL), -EINVAL);
	assert_int_equal(wire_dest_block_decode(buf, sizeof buf, NULL), -EINVAL);
	assert_int_equal(wire_register_decode(buf, sizeof buf, NULL), -EINVAL);
	assert_int_equal(wire_register_result_decode(buf, sizeof buf, NULL), -EINVAL);
	assert_int_equal(wire_compress_decode(buf, sizeof buf, NULL), -EINVAL);
	assert_int_equal(wire_dest_block_decode(NULL, sizeof buf, &db), -EINVAL);
	assert_int_equal(wire_register_decode(NULL, sizeof buf, &rg), -EINVAL);
	assert_int_equal(wire_register_result_decode(NULL, sizeof buf, &rr), -EINVAL);
	assert_int_equal(wire_compress_decode(NULL, sizeof buf, &cm), -EINVAL);
	assert_int_equal(wire_caps_decode(NULL, sizeof buf, &c), -EINVAL);
	/* the records were not touched */
	assert_int_equal(c.version, 1);
	assert_int_equal(db.length, 1);
	assert_int_equal(rg.chunks, 1);
	assert_int_equal(rr.rkey, 1);
	assert_int_equal(cm.length, 1);
}

/* ---- round-trip properties over random and edge values (issue 16) ------------------------ */

static uint64_t edge_or_random(prng *g)
{
	static const uint64_t edges[] = { 0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu,
					  0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull, UINT64_MAX };
	return prng_below(g, 2) ? edges[prng_below(g, sizeof edges / sizeof edges[0])] : prng_next(g);
}

/* A record type's properties: decode(encode(v)) == v for v built from random/edge bytes run
 * through decode (so padding fields are whatever a peer sends), and encode(decode(x)) == x. */
#define ROUND_TRIP(T, ENC, DEC, BYTES)                                                           \
	do {                                                                                      \
		uint8_t x[BYTES], y[BYTES];                                                       \
		for (size_t k = 0; k < BYTES; k += 8) {                                           \
			uint64_t w = edge_or_random(&g);                                          \
			memcpy(x + k, &w, BYTES - k < 8 ? BYTES - k : 8);                         \
		}                                                                                 \
		T v, v2;                                                                          \
		memset(&v, 0xa5, sizeof v);                                                       \
		memset(&v2, 0x5a, sizeof v2);                                                     \
		assert_int_equal(DEC(x, BYTES, &v), 0);                                           \
		assert_int_equal(ENC(&v, y, BYTES), (int)(BYTES));                                \
		assert_memory_equal(x, y, BYTES);                                                 \
		assert_int_equal(DEC(y, BYTES, &v2), 0);                                          \
		assert_memory_equal(&v, &v2, sizeof v);                                           \
	} while (0)

static void test_round_trip_properties(void **state)
{
	(void)state;
	prng g;
	prng_seed(&g, 16);
	for (int i = 0; i < 20000; i++) {
		ROUND_TRIP(struct wire_hdr, wire_hdr_encode, wire_hdr_decode, WIRE_HDR_BYTES);
		ROUND_TRIP(struct wire_dest_block, wire_dest_block_encode, wire_dest_block_decode,
			   WIRE_DEST_BLOCK_BYTES);
		ROUND_TRIP(struct wire_register, wire_register_encode, wire_register_decode, WIRE_REGISTER_BYTES);
		ROUND_TRIP(struct wire_register_result, wire_register_result_encode, wire_register_result_decode,
			   WIRE_REGISTER_RESULT_BYTES);
		ROUND_TRIP(struct wire_compress, wire_compress_encode, wire_compress_decode, WIRE_COMPRESS_BYTES);
		/* caps: any value decodes from what it encodes to */
		struct wire_caps c = { (uint32_t)edge_or_random(&g), (uint32_t)edge_or_random(&g),
				       (uint32_t)edge_or_random(&g) }, c2;
		uint8_t cb[WIRE_CAPS_EXT_BYTES];
		if (prng_below(&g, 2))
			c.flags |= WIRE_CAP_CHUNK_SIZE;
		int n = wire_caps_encode(&c, cb, sizeof cb);
		if (!(c.flags & WIRE_CAP_CHUNK_SIZE))
			c.chunk_shift = 0;   /* documented: only meaningful with the flag, not sent */
		assert_true(n == (int)WIRE_CAPS_BYTES || n == (int)WIRE_CAPS_EXT_BYTES);
		assert_int_equal(wire_caps_decode(cb, (size_t)n, &c2), 0);
		if (c.version != c2.version || c.flags != c2.flags || c.chunk_shift != c2.chunk_shift)
			fail_msg("caps %u/%#x/%u decode as %u/%#x/%u", c.version, c.flags, c.chunk_shift,
				 c2.version, c2.flags, c2.chunk_shift);
		/* work-request ids */
		uint32_t blk = (uint32_t)(edge_or_random(&g) & 0x3fffu);   /* 14 block bits */
		uint64_t chunk = edge_or_random(&g) & ((UINT64_C(1) << 34) - 1u);   /* 34 chunk bits */
		uint64_t id = wire_wrid_write(blk, chunk);
		assert_int_equal(wire_wrid_type(id), WIRE_WRID_RDMA_WRITE);
		assert_int_equal(wire_wrid_block(id), blk);
		assert_int_equal(wire_wrid_chunk(id), chunk);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_properties),
		cmocka_unit_test(test_caps_plain_bytes),
		cmocka_unit_test(test_caps_extension_bytes),
		cmocka_unit_test(test_caps_short),
		cmocka_unit_test(test_caps_padded),
		cmocka_unit_test(test_hdr_bytes),
		cmocka_unit_test(test_hdr_round_trip),
		cmocka_unit_test(test_hdr_short),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_dest_block),
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_register_result),
		cmocka_unit_test(test_compress),
		cmocka_unit_test(test_wrid),
		cmocka_unit_test(test_chunk_edges),
		cmocka_unit_test(test_chunk_values),
		cmocka_unit_test(test_nb_chunks),
		cmocka_unit_test(test_additional_chunks),
		cmocka_unit_test(test_chunk_shift),
		cmocka_unit_test(test_chunk_end_at_the_top),
		cmocka_unit_test(test_missing_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
