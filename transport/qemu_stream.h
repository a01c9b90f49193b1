/* SPDX-License-Identifier: MIT */
/* qemu_stream - an incremental, defensive reader of the migration stream a real QEMU
 * (Debian's 7.2, machine `-M none`) sends, so migbed can be the destination of a real QEMU
 * source (docs/qemu-in-the-loop.md has the byte layout, observed with xxd).
 *
 * What it reads (all integers big endian):
 *   file header    be32 0x5145564d "QEVM", be32 3
 *   configuration  u8 0x07, be32 name length, machine name ("none")
 *   sections       u8 type: 0x01 START / 0x04 FULL (be32 section id, u8 idstr length, idstr,
 *                  be32 instance id, be32 version id) or 0x02 PART / 0x03 END (be32 id);
 *                  every section ends with the footer u8 0x7e, be32 section id
 *   "ram" (v4)     be64 words whose low 12 bits are flags: MEM_SIZE 0x04 (+ per block u8
 *                  name length, name, be64 used length), ZERO 0x02 (+ 1 fill byte), PAGE
 *                  0x08 (+ 4096 bytes), CONTINUE 0x20 (no block name follows), HOOK 0x80
 *                  (RDMA: the registration handler runs now), EOS 0x10 ends the section
 *   "timer" (v2)   24 bytes; "globalstate" (v1) be32 size + 100 bytes of run state
 *   end            u8 0x00 EOF, then (QEMU's default) u8 0x06, be32 length, JSON description
 * Anything else ends in a named cause (QEMU_STREAM_MALFORMED / _UNSUPPORTED / _TRUNCATED)
 * whose detail quotes the stream offset and the bytes there. Bytes arrive in pieces of any
 * size (one QEMU FILE message each); the reader stops at every event, so a HOOK hands over
 * to the RDMA registration handler before any later byte is looked at.
 *
 * qemu_stream_translate() turns the events into migbed's own stream v1 (transport/stream.h)
 * so the destination's existing parser and checks run unchanged: RAM START with the block
 * list, RAM PART HOOKs, one DEVICE record per device section and, at EOF, a VERIFY record
 * with the digests of the memory the source QEMU was given (set by the caller). */
#ifndef MIGBED_TRANSPORT_QEMU_STREAM_H
#define MIGBED_TRANSPORT_QEMU_STREAM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vocab/cause.h"
#include "transport/stream.h"

#define QEMU_STREAM_PAGE_BYTES 4096u            /* x86 TARGET_PAGE_SIZE */
#define QEMU_STREAM_MAX_SECTIONS 64u
#define QEMU_STREAM_VMDESC_MAX_BYTES (16u << 20)

/* RAM flag bits (low 12 bits of each be64 word of the "ram" section). */
#define QEMU_RAM_FLAG_FULL 0x01u        /* obsolete, never sent */
#define QEMU_RAM_FLAG_ZERO 0x02u
#define QEMU_RAM_FLAG_MEM_SIZE 0x04u
#define QEMU_RAM_FLAG_PAGE 0x08u
#define QEMU_RAM_FLAG_EOS 0x10u
#define QEMU_RAM_FLAG_CONTINUE 0x20u
#define QEMU_RAM_FLAG_XBZRLE 0x40u
#define QEMU_RAM_FLAG_HOOK 0x80u
#define QEMU_RAM_FLAG_COMPRESS_PAGE 0x100u
#define QEMU_RAM_FLAG_MULTIFD_FLUSH 0x200u  /* 8.1+: sent by migbed's qemu-8.1 profile only */

struct qemu_stream_opts {
	bool vmdesc;          /* the JSON description follows EOF (QEMU's default: true) */
};
void qemu_stream_opts_defaults(struct qemu_stream_opts *o);

enum qemu_stream_event {
	QEMU_STREAM_EV_NEED_MORE = 0, /* every complete record consumed */
	QEMU_STREAM_EV_BLOCKS,        /* the RAM block list (MEM_SIZE) is complete */
	QEMU_STREAM_EV_HOOK,          /* RAM_SAVE_FLAG_HOOK: run the RDMA registration handler */
	QEMU_STREAM_EV_RAM_EOS,       /* EOS: the end of one "ram" section (START, PART or END) */
	QEMU_STREAM_EV_PAGE,          /* a page in the stream (file/TCP migration; not RDMA) */
	QEMU_STREAM_EV_SECTION,       /* a device section (timer, globalstate) is complete */
	QEMU_STREAM_EV_EOF,           /* EOF (and the description, if expected) read */
	QEMU_STREAM_EV_ERROR          /* see qemu_stream_cause / qemu_stream_error */
};

/* The page of the last QEMU_STREAM_EV_PAGE; data is NULL for a ZERO record (every byte is
 * fill). Valid until the next call. */
struct qemu_stream_page {
	size_t block;                 /* index in the block list */
	uint64_t offset_bytes;        /* within the block, page aligned */
	const uint8_t *data;          /* QEMU_STREAM_PAGE_BYTES bytes, or NULL */
	uint8_t fill;
};

typedef struct qemu_stream qemu_stream;

/* -EINVAL, -ENOMEM. */
int qemu_stream_new(const struct qemu_stream_opts *o, qemu_stream **out);
void qemu_stream_free(qemu_stream *r);
/* Append bytes (copied). -ENOMEM, or -EOVERFLOW past 64 MiB unread. */
int qemu_stream_feed(qemu_stream *r, const void *data, size_t len);
/* Read until the next event. */
enum qemu_stream_event qemu_stream_next(qemu_stream *r);
/* No more bytes will come: 0 after a complete stream, else -CAUSE_QEMU_STREAM_TRUNCATED
 * (the detail says where and what was expected). */
int qemu_stream_finish(qemu_stream *r);

size_t qemu_stream_n_blocks(const qemu_stream *r);
const struct stream_block *qemu_stream_block(const qemu_stream *r, size_t i);
const struct qemu_stream_page *qemu_stream_page(const qemu_stream *r);
/* The last complete device section: idstr, and its state bytes (without header/footer). */
const char *qemu_stream_section_name(const qemu_stream *r);
const uint8_t *qemu_stream_section_data(const qemu_stream *r, size_t *len);
const char *qemu_stream_machine(const qemu_stream *r);   /* "" before the configuration */
uint64_t qemu_stream_offset(const qemu_stream *r);        /* bytes consumed so far */
uint64_t qemu_stream_hooks(const qemu_stream *r);
/* After EV_ERROR: a positive cause code and "offset 1234: ... (bytes 55 aa ...)". */
int qemu_stream_cause(const qemu_stream *r);
const char *qemu_stream_error(const qemu_stream *r);

/* ---- adapter to migbed's stream v1 -------------------------------------------------------- */
/* The expected memory digest (proto_mem_digest of the content the source QEMU was given)
 * of the block named `name`; emitted in the VERIFY record, in the source's block order.
 * -EINVAL (no name), -ENOSPC (more than STREAM_MAX_BLOCKS). */
int qemu_stream_expect_digest(qemu_stream *r, const char *name, struct digest digest);
/* Feed `len` bytes of QEMU's stream and append the equivalent migbed stream v1 bytes for
 * every complete record to out (a HOOK is the last byte of its QEMU FILE message, so
 * migbed's parser still stops there). Pages in the stream (a non-RDMA capture) are
 * dropped: only RDMA writes fill memory. 0, or a negative cause code with cx filled. */
int qemu_stream_translate(qemu_stream *r, const void *data, size_t len, struct stream_buf *out,
			  struct cause_ctx *cx);

/* The same as a byte filter for the destination (arg is the qemu_stream). */
int qemu_stream_filter(void *arg, const void *data, size_t len, struct stream_buf *out, struct cause_ctx *cx);
/* The destination's stream_end hook (proto_opts): the source disconnected; a stream cut before
 * its end is -CAUSE_QEMU_STREAM_TRUNCATED with cx filled (what was expected, at which
 * offset), a complete one 0. */
int qemu_stream_filter_end(void *arg, struct cause_ctx *cx);

/* ---- writer: migbed stream v1 -> what QEMU 7.2 `-M none` loads ---------------------------
 * The mirror of the adapter above, for a migbed source migrating into a real QEMU
 * destination (`-incoming rdma:...`). Fed migbed's stream one flush at a time (the source's
 * proto_opts.stream_out_filter), it appends QEMU's equivalent of every complete record:
 *   header         file header + configuration section (machine "none")
 *   RAM START      section START id 2 "ram" instance 0 version 4; MEM_SIZE + the block
 *                  list copied as is (the trace's block must be QEMU's, `ram` for -M none)
 *   RAM PART       section PART id 2
 *   HOOK / EOS     the same flag words; EOS is followed by the section footer
 *   DEVICE/VERIFY  dropped (QEMU knows neither; verify with QMP pmemsave instead), but the
 *                  first one ends RAM: an empty END section (EOS + footer) - migbed's last
 *                  round is a PART, QEMU's loader treats PART and END alike
 *   EOF            the device sections QEMU 7.2 -M none sends (captured: "timer" with zero
 *                  offsets, "globalstate" with the run state, default "running"), EOF, and
 *                  the JSON VM description, which QEMU's loader reads after EOF
 * Its output ends where its input did, so a HOOK stays the last byte of its QEMU FILE
 * message. Input that is not migbed stream v1 is CAUSE_INTERNAL (a migbed bug). */
struct qemu_stream_writer_opts {
	const char *runstate;  /* globalstate's run state (default "running": a destination
	                          started without -S then runs; with -S it stays paused) */
	bool vmdesc;           /* send the JSON description after EOF (default true) */
};
void qemu_stream_writer_opts_defaults(struct qemu_stream_writer_opts *o);

typedef struct qemu_stream_writer qemu_stream_writer;

/* -EINVAL (no out, run state empty or longer than 99 bytes), -ENOMEM. */
int qemu_stream_writer_new(const struct qemu_stream_writer_opts *o, qemu_stream_writer **out);
void qemu_stream_writer_free(qemu_stream_writer *w);
/* Feed migbed stream bytes; append QEMU stream bytes. 0 or a negative cause (cx filled). */
int qemu_stream_write(qemu_stream_writer *w, const void *data, size_t len, struct stream_buf *out,
		      struct cause_ctx *cx);
/* 0 after a complete stream (through EOF), else -CAUSE_INTERNAL with cx filled. */
int qemu_stream_write_finish(qemu_stream_writer *w, struct cause_ctx *cx);
/* The same as a byte filter for the source (arg is the writer). */
int qemu_stream_out_filter(void *arg, const void *data, size_t len, struct stream_buf *out,
			   struct cause_ctx *cx);

#endif
