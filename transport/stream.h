/* SPDX-License-Identifier: MIT */
/* stream - the migration byte stream carried in QEMU FILE control messages.
 *
 * migbed's stream follows the shape of QEMU's (docs/protocol.md): a file header (magic
 * "QEVM", then STREAM_VERSION where QEMU has its file version 3), then records introduced by a
 * one-byte tag:
 *   0x01 RAM START   be64 flag words; MEM_SIZE(0x04) with the total, then per block
 *                    u8 name length, name, be64 used length; ... EOS(0x10)
 *   0x02 RAM PART    be64 flag words: HOOK(0x80) hands over to the RDMA registration
 *                    handler (the control channel) until REGISTER FINISHED; EOS(0x10) ends
 *   0x04 DEVICE      be32 length, the device-state bytes, their 16-byte digest
 *   0x7f VERIFY      be32 block count, then per block the 16-byte digest of its memory
 *                    (migbed's own, so a destination in another process can verify)
 * A digest is XXH3-128 in its canonical 16-byte big-endian form (sim/digest.h).
 *   0x00 EOF         end of migration
 * The parser is incremental: bytes arrive in pieces of any size; it stops at a HOOK so the
 * caller can run the registration handler, and reports malformed input with the offset. */
#ifndef MIGBED_TRANSPORT_STREAM_H
#define MIGBED_TRANSPORT_STREAM_H
#include <stddef.h>
#include <stdint.h>

#include "sim/digest.h"

#define STREAM_MAGIC 0x5145564du /* "QEVM" */
/* 4: VERIFY and DEVICE digests are 16 bytes (XXH3-128); version 3 carried 8-byte digests and
 * is refused by version (stream_parser_version), as every other version. */
#define STREAM_VERSION 4u

enum stream_tag {
	STREAM_EOF = 0x00,
	STREAM_RAM_START = 0x01,
	STREAM_RAM_PART = 0x02,
	STREAM_DEVICE = 0x04,
	STREAM_VERIFY = 0x7f
};

#define STREAM_FLAG_MEM_SIZE 0x04u
#define STREAM_FLAG_EOS 0x10u
#define STREAM_FLAG_HOOK 0x80u
/* QEMU 8.1.0-8.1.2's RAM_SAVE_FLAG_MULTIFD_FLUSH (transport/profile.h, flush_on_wrap): a no-op
 * between pages of a RAM part; never sent by any other profile. */
#define STREAM_FLAG_MULTIFD_FLUSH 0x200u

#define STREAM_MAX_BLOCKS 64
#define STREAM_NAME_MAX 255
#define STREAM_DEVICE_MAX (64u * 1024u * 1024u)

/* ---- writer: appends to a caller's growable buffer -------------------------------------- */
struct stream_buf {
	uint8_t *data;
	size_t len, cap;
};
int stream_put_u8(struct stream_buf *b, uint8_t v);
int stream_put_be32(struct stream_buf *b, uint32_t v);
int stream_put_be64(struct stream_buf *b, uint64_t v);
int stream_put_bytes(struct stream_buf *b, const void *p, size_t n);
void stream_buf_free(struct stream_buf *b);

/* ---- parser ------------------------------------------------------------------------------- */
struct stream_block {
	char name[STREAM_NAME_MAX + 1];
	uint64_t length;
};

enum stream_event {
	STREAM_EV_NEED_MORE = 0,   /* all bytes consumed */
	STREAM_EV_BLOCKS,          /* the RAM START block list is complete */
	STREAM_EV_HOOK,            /* a HOOK: run the registration handler now */
	STREAM_EV_DEVICE,          /* device state received and its digest checked */
	STREAM_EV_VERIFY,          /* per-block digests received */
	STREAM_EV_EOF,             /* end of migration */
	STREAM_EV_ERROR            /* malformed: see err */
};

typedef struct stream_parser stream_parser;

int stream_parser_new(stream_parser **out);
void stream_parser_free(stream_parser *p);
/* Append bytes (copied). */
int stream_parser_feed(stream_parser *p, const void *data, size_t len);
/* Parse until an event; the event's data stays valid until the next call. */
enum stream_event stream_parser_next(stream_parser *p);
size_t stream_parser_n_blocks(const stream_parser *p);
const struct stream_block *stream_parser_block(const stream_parser *p, size_t i);
uint64_t stream_parser_device_bytes(const stream_parser *p);
size_t stream_parser_n_digests(const stream_parser *p);
struct digest stream_parser_digest(const stream_parser *p, size_t i);
/* "offset 1234: bad tag 0x55 (bytes 55 aa 00 ...)" */
const char *stream_parser_error(const stream_parser *p);
/* After STREAM_EV_ERROR: nonzero when the stream was refused for its header's version
 * (another migbed build's): that version, UINT32_MAX for a version 0. Else 0. */
uint32_t stream_parser_version(const stream_parser *p);

/* A digest in its canonical 16 bytes (device state, VERIFY). */
int stream_put_digest(struct stream_buf *b, struct digest d);

#endif
