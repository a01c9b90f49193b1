/* SPDX-License-Identifier: MIT */
/* wire - QEMU's RDMA migration wire formats (docs/protocol.md, 'Capabilities' to
 * 'Chunk arithmetic'), encoded and decoded field by field, big-endian, with no struct
 * punning.
 *
 * Every decoder validates lengths first and returns -EINVAL on a short or malformed
 * buffer; encoders return the number of bytes written or -ENOSPC. */
#ifndef MIGBED_TRANSPORT_WIRE_H
#define MIGBED_TRANSPORT_WIRE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vocab/vocab.h"

/* ---- connection private data: RDMACapabilities (8 bytes) + migbed's extension ---------- */
#define WIRE_CAP_VERSION        1u
#define WIRE_CAP_PIN_ALL        0x01u
/* migbed's proposed extension (issue "negotiated" protocol): chunk shift follows the caps. */
#define WIRE_CAP_CHUNK_SIZE     0x02u
#define WIRE_CAPS_BYTES         8u
#define WIRE_CAPS_EXT_BYTES     16u  /* caps + uint32 chunk_shift + uint32 reserved */

struct wire_caps {
	uint32_t version;
	uint32_t flags;
	uint32_t chunk_shift;        /* only meaningful with WIRE_CAP_CHUNK_SIZE */
};

int wire_caps_encode(const struct wire_caps *c, uint8_t *buf, size_t len);
/* len may be larger than needed (rdma_cm pads private data: 56 / 196 bytes). The
 * extension is decoded only when WIRE_CAP_CHUNK_SIZE is set and len >= 16. */
int wire_caps_decode(const uint8_t *buf, size_t len, struct wire_caps *out);

/* ---- control header (16 bytes) ---------------------------------------------------------- */
#define WIRE_HDR_BYTES          16u
#define WIRE_CONTROL_BUF_BYTES  (512u * 1024u)
#define WIRE_CONTROL_MAX_DATA   (WIRE_CONTROL_BUF_BYTES - WIRE_HDR_BYTES)
#define WIRE_QEMU_FILE_MAX      32768u
#define WIRE_MAX_REPEAT         4096u

/* The control message types (vocab/vocab.h: VOCAB_MSG_TYPE). */
enum wire_type {
#define X(NAME, v, qname, tok) WIRE_##NAME = (v),
	VOCAB_MSG_TYPE(X)
#undef X
	WIRE_TYPE_COUNT
};
_Static_assert(WIRE_TYPE_COUNT == VOCAB_MSG_TYPE_COUNT && WIRE_TYPE_COUNT == 12, "VOCAB_MSG_TYPE is dense");

struct wire_hdr {
	uint32_t len;     /* data bytes after the header */
	uint32_t type;
	uint32_t repeat;
	uint32_t padding; /* carried, not interpreted */
};

/* QEMU's printed name ("READY", "QEMU FILE", ...); "??BAD CONTROL VALUE??" if unknown. */
const char *wire_type_name(uint32_t type);
/* A short token for logs and metrics: "ready", "qemu_file", "register_request", ... */
const char *wire_type_token(uint32_t type);
int wire_hdr_encode(const struct wire_hdr *h, uint8_t *buf, size_t len);
int wire_hdr_decode(const uint8_t *buf, size_t len, struct wire_hdr *out);
/* The fault action corrupt on a framed message (msg, len: header + data), in place: how is
 * enum fault_corrupt (vocab/vocab.h): len adds 1 GiB to the length ("too long length"), type
 * makes it unknown, repeat adds or takes 65536 (over 4096), payload flips the first data
 * byte. false: nothing to change (payload of a message without data, or len < 16). The
 * sender encodes a fresh header for its next message. */
bool wire_corrupt(uint8_t *msg, uint32_t len, int how);

/* ---- payload records --------------------------------------------------------------------- */
#define WIRE_DEST_BLOCK_BYTES   32u
#define WIRE_REGISTER_BYTES     24u
#define WIRE_REGISTER_RESULT_BYTES 16u
#define WIRE_COMPRESS_BYTES     24u

struct wire_dest_block {          /* RAM BLOCKS RESULT entry */
	uint64_t remote_host_addr;
	uint64_t offset;
	uint64_t length;
	uint32_t remote_rkey;
	uint32_t padding;
};

struct wire_register {            /* REGISTER REQUEST / UNREGISTER REQUEST entry */
	uint64_t key;             /* dest-space ram_addr of the first byte (or chunk index) */
	uint32_t current_index;   /* block index */
	uint32_t padding;
	uint64_t chunks;          /* additional chunks, in the sender's units */
};

struct wire_register_result {
	uint32_t rkey;
	uint32_t padding;
	uint64_t host_addr;       /* destination base VA of the block */
};

struct wire_compress {
	uint32_t value;           /* must be 0 */
	uint32_t block_idx;
	uint64_t offset;          /* dest-space ram_addr */
	uint64_t length;
};

int wire_dest_block_encode(const struct wire_dest_block *b, uint8_t *buf, size_t len);
int wire_dest_block_decode(const uint8_t *buf, size_t len, struct wire_dest_block *out);
int wire_register_encode(const struct wire_register *r, uint8_t *buf, size_t len);
int wire_register_decode(const uint8_t *buf, size_t len, struct wire_register *out);
int wire_register_result_encode(const struct wire_register_result *r, uint8_t *buf, size_t len);
int wire_register_result_decode(const uint8_t *buf, size_t len, struct wire_register_result *out);
int wire_compress_encode(const struct wire_compress *c, uint8_t *buf, size_t len);
int wire_compress_decode(const uint8_t *buf, size_t len, struct wire_compress *out);

/* ---- work-request ids (docs/protocol.md, 'Work-request ids') ----------------------------- */
#define WIRE_WRID_NONE          0u
#define WIRE_WRID_RDMA_WRITE    1u
#define WIRE_WRID_SEND_CONTROL  2000u
#define WIRE_WRID_RECV_CONTROL  4000u   /* + slot: 0 READY, 1 DATA, 2 CONTROL */
enum wire_slot { WIRE_SLOT_READY = 0, WIRE_SLOT_DATA = 1, WIRE_SLOT_CONTROL = 2, WIRE_SLOTS = 3 };

uint64_t wire_wrid_write(uint32_t block, uint64_t chunk);  /* type 1, block bits 16..29, chunk 30..63 */
uint32_t wire_wrid_type(uint64_t wr_id);                     /* bits 0..15 */
uint32_t wire_wrid_block(uint64_t wr_id);
uint64_t wire_wrid_chunk(uint64_t wr_id);

/* ---- chunk arithmetic (docs/protocol.md, 'Chunk arithmetic'), block-relative, 2^shift --- */
#define WIRE_CHUNK_SHIFT_MIN    20u   /* 1 MiB */
#define WIRE_CHUNK_SHIFT_MAX    30u   /* 1 GiB */
#define WIRE_MERGE_MAX_BYTES    (2u * 1024u * 1024u)
#define WIRE_SIGNALED_SEND_MAX  512u

/* chunk index of host address h in a block based at b */
uint64_t wire_chunk_index(uint64_t block_base, uint64_t h, unsigned shift);
uint64_t wire_chunk_start(uint64_t block_base, uint64_t idx, unsigned shift);
/* min(start + chunk, base + length) */
uint64_t wire_chunk_end(uint64_t block_base, uint64_t block_len, uint64_t idx, unsigned shift);
/* (length >> shift) + 1, as QEMU computes it (one extra when length is a multiple) */
uint64_t wire_nb_chunks(uint64_t block_len, unsigned shift);
/* QEMU's "additional chunks" for a write of len bytes: len/C, minus 1 if an exact multiple */
uint64_t wire_additional_chunks(uint64_t len, unsigned shift);
/* 1 MiB..1 GiB power of two -> shift, or -EINVAL */
int wire_chunk_shift(uint64_t chunk_bytes, unsigned *shift);

#endif
