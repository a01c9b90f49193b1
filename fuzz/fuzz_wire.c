/* SPDX-License-Identifier: MIT */
/* fuzz_wire - the RDMA wire decoders (transport/wire.h): capabilities, control header, RAM
 * BLOCKS RESULT entries, REGISTER (and UNREGISTER) requests and results, COMPRESS.
 *
 * Bytes direction: any buffer a decoder accepts re-encodes to the same bytes (every field is
 * carried, padding included; the capabilities' extension only with its flag), and decodes
 * again to the same value. Value direction: any value encodes and decodes back equal. Short
 * buffers are refused (-EINVAL), never read past. Also the work-request ids and the corrupt
 * fault action on a framed message. */
#include "fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "transport/wire.h"

#define ROUND_TRIP(T, ENC, DEC, BYTES, buf, len)                                               \
	do {                                                                                  \
		struct T v, w;                                                                \
		uint8_t out[BYTES], out2[BYTES];                                              \
		int rc = DEC(buf, len, &v);                                                   \
		if ((len) < (BYTES)) {                                                        \
			FUZZ_CHECK(rc == -EINVAL, #DEC " of %zu bytes = %d", (size_t)(len), rc); \
			break;                                                                \
		}                                                                             \
		FUZZ_CHECK(rc == 0, #DEC " refused %zu bytes: %d", (size_t)(len), rc);        \
		FUZZ_CHECK(ENC(&v, out, sizeof out) == (int)(BYTES), #ENC " of a decoded value"); \
		FUZZ_CHECK(!memcmp(out, buf, BYTES), #ENC "(" #DEC "(x)) != x");              \
		FUZZ_CHECK(DEC(out, sizeof out, &w) == 0 && !memcmp(&v, &w, sizeof v),        \
			   #DEC "(" #ENC "(v)) != v");                                        \
		FUZZ_CHECK(ENC(&v, out2, (BYTES) - 1) < 0, #ENC " into a short buffer");      \
	} while (0)

static void caps(const uint8_t *buf, size_t len)
{
	struct wire_caps c, back;
	uint8_t out[WIRE_CAPS_EXT_BYTES];
	int rc = wire_caps_decode(buf, len, &c);
	if (rc != 0) {
		FUZZ_CHECK(rc == -EINVAL, "wire_caps_decode = %d", rc);
		FUZZ_CHECK(len < WIRE_CAPS_BYTES || ((buf[7] & WIRE_CAP_CHUNK_SIZE) && len < WIRE_CAPS_EXT_BYTES),
			   "caps of %zu bytes refused", len);
		return;
	}
	int n = wire_caps_encode(&c, out, sizeof out);
	bool ext = c.flags & WIRE_CAP_CHUNK_SIZE;
	FUZZ_CHECK(n == (int)(ext ? WIRE_CAPS_EXT_BYTES : WIRE_CAPS_BYTES) || (ext && n == (int)WIRE_CAPS_EXT_BYTES),
		   "caps encode = %d", n);
	FUZZ_CHECK(n > 0 && !memcmp(out, buf, ext ? 12 : 8), "caps: encode(decode(x)) != x");
	FUZZ_CHECK(wire_caps_decode(out, (size_t)n, &back) == 0 && back.version == c.version &&
		   back.flags == c.flags && back.chunk_shift == c.chunk_shift, "caps: decode(encode(v)) != v");
}

static void header(const uint8_t *buf, size_t len)
{
	ROUND_TRIP(wire_hdr, wire_hdr_encode, wire_hdr_decode, WIRE_HDR_BYTES, buf, len);
	struct wire_hdr h;
	if (wire_hdr_decode(buf, len, &h) == 0) {
		FUZZ_CHECK(wire_type_name(h.type) && wire_type_token(h.type), "type %u has no name", h.type);
		uint8_t msg[WIRE_HDR_BYTES + 4];
		memcpy(msg, buf, WIRE_HDR_BYTES);
		memset(msg + WIRE_HDR_BYTES, 0xab, 4);
		for (int how = -1; how <= 4; how++)
			wire_corrupt(msg, (uint32_t)sizeof msg, how);
		wire_corrupt(msg, (uint32_t)(len % sizeof msg), (int)(len % 5));
	}
}

static void wrid(struct fz *f)
{
	uint32_t block = (uint32_t)fz_u64(f, 4) & ((1u << 14) - 1);   /* its bits (asserted by the writer) */
	uint64_t chunk = fz_u64(f, 8) & ((1ull << 34) - 1);
	uint64_t id = wire_wrid_write(block, chunk);
	FUZZ_CHECK(wire_wrid_type(id) == WIRE_WRID_RDMA_WRITE, "wrid type of %llx", (unsigned long long)id);
	FUZZ_CHECK(wire_wrid_block(id) == block && wire_wrid_chunk(id) == chunk,
			   "wrid(%u, %llu) reads back as (%u, %llu)", block, (unsigned long long)chunk,
			   wire_wrid_block(id), (unsigned long long)wire_wrid_chunk(id));
	unsigned shift = WIRE_CHUNK_SHIFT_MIN + (unsigned)(block % (WIRE_CHUNK_SHIFT_MAX - WIRE_CHUNK_SHIFT_MIN + 1));
	unsigned back;
	FUZZ_CHECK(wire_chunk_shift(1ull << shift, &back) == 0 && back == shift, "chunk shift %u", shift);
	uint64_t base = fz_u64(f, 8) & ~0xfffull, blen = fz_u64(f, 5) + 1;
	if (base <= UINT64_MAX - blen) {
		uint64_t h = base + chunk % blen;
		uint64_t idx = wire_chunk_index(base, h, shift);
		FUZZ_CHECK(wire_chunk_start(base, idx, shift) <= h && h < wire_chunk_end(base, blen, idx, shift),
			   "address %llx outside its chunk %llu", (unsigned long long)h, (unsigned long long)idx);
		FUZZ_CHECK(idx < wire_nb_chunks(blen, shift), "chunk index %llu of %llu", (unsigned long long)idx,
			   (unsigned long long)wire_nb_chunks(blen, shift));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t mode = fz_u8(&f);
	const uint8_t *buf = f.p;
	size_t len = f.n;
	switch (mode % 8) {
	case 0: caps(buf, len); break;
	case 1: header(buf, len); break;
	case 2: ROUND_TRIP(wire_dest_block, wire_dest_block_encode, wire_dest_block_decode, WIRE_DEST_BLOCK_BYTES, buf, len); break;
	case 3: ROUND_TRIP(wire_register, wire_register_encode, wire_register_decode, WIRE_REGISTER_BYTES, buf, len); break;
	case 4: ROUND_TRIP(wire_register_result, wire_register_result_encode, wire_register_result_decode,
			   WIRE_REGISTER_RESULT_BYTES, buf, len); break;
	case 5: ROUND_TRIP(wire_compress, wire_compress_encode, wire_compress_decode, WIRE_COMPRESS_BYTES, buf, len); break;
	case 6: wrid(&f); break;
	default:   /* every decoder on the same bytes */
		caps(buf, len);
		header(buf, len);
		ROUND_TRIP(wire_register, wire_register_encode, wire_register_decode, WIRE_REGISTER_BYTES, buf, len);
		break;
	}
	return 0;
}
