/* SPDX-License-Identifier: MIT */
/* profile - the peer a side plays: migbed's own strict, bounded peer, or a QEMU version's
 * observable behaviour (docs/profiles.md). A profile is a small table row: each field is one
 * behaviour that a QEMU release introduced or removed, named where it is used:
 *   qemu           QEMU's control waits have no bound: where migbed's bound expires, the
 *                  side records QEMU_HANG ("QEMU X would wait here forever for ...") instead
 *                  of TIMEOUT, and a side that hangs sends no ERROR (QEMU would not)
 *   shared_cq      <= 6.1: one CQ for sends and receives; a wait for one wr_id takes whatever
 *                  completes first and drops a RECV it was not waiting for (the soft-RoCE
 *                  hang of 2021, fixed in 6.2 by separate send and recv CQs): the side names
 *                  COMPLETION_DROPPED when it then waits for the dropped RECV
 *   error_as_ready every QEMU source: a RECV polled between pages clears the READY credit
 *                  whatever its type, so the peer's ERROR is taken for READY
 *   compress_fill  <= 8.1 destination: a COMPRESS with a non-zero value fills the range with
 *                  its low byte instead of refusing it (BAD_COMPRESS; the check is 8.2's)
 *   swallow_poll_error  <= 8.1 source: a failed completion polled between pages (save_page)
 *                  is printed and ignored (a shadowed `ret`, fixed in 8.2); the migration goes
 *                  on until the QP's error shows elsewhere. The cause stays the swallowed one,
 *                  at its time, and says where the side stopped.
 *   uninit_header  <= 8.1 source: the QEMU FILE header's repeat and padding are stack bytes
 *                  (a value from the run's seed); 8.2 zeroes them
 *   flush_on_wrap  8.1.0 .. 8.1.2 source: find_dirty_block sends RAM_SAVE_FLAG_MULTIFD_FLUSH
 *                  (and flushes the stream) each time the dirty-page scan passes the last
 *                  RAM block, even without multifd (machine types 8.0+); the scan runs inside
 *                  a registration round, so the destination gets a QEMU FILE message there
 *                  and fails: "Too many requests" (the stack bytes in repeat) or "Unknown
 *                  control message QEMU FILE". Fixed in 8.2.0 and 8.1.3.
 *   accept_returns_ok  <= 8.1 destination: an unknown protocol version is printed, then accept
 *                  "succeeds" with nothing set up and QEMU crashes (SIGSEGV) at its first READY
 *   chunk_param    the side has a chunk-size setting (migbed; QEMU 11.1's x-rdma-chunk-size);
 *                  every other QEMU registers 1 MiB chunks
 *   log_tag        the version whose lines of the cause table this side prints for a cause
 *   log_kind       (cause_qemu), and how they were found: "7.2" OBSERVED, the rows
 *                  "[7.2 observed SIDE ...] text" (lines a real QEMU 7.2 printed); "8.2" SOURCE,
 *                  the rows "[8.2 read SIDE ...] FORMAT" (QEMU 8.2's format strings, read from
 *                  its source: docs/profiles-research.md). qemu-11.1 prints 8.2's rows: no 11.1
 *                  rdma.c was available to read, and its label says they are 8.2's
 * Pure data; no I/O. */
#ifndef MIGBED_TRANSPORT_PROFILE_H
#define MIGBED_TRANSPORT_PROFILE_H
#include <stdbool.h>
#include <stddef.h>
#include "vocab/vocab.h"

enum proto_impl {
	PROTO_IMPL_MIGBED = 0,
	PROTO_IMPL_QEMU_6_1,
	PROTO_IMPL_QEMU_7_2,
	PROTO_IMPL_QEMU_8_1,
	PROTO_IMPL_QEMU_8_2,
	PROTO_IMPL_QEMU_11_1,
	PROTO_IMPL_COUNT
};

/* How a profile's QEMU log lines were found (log_kind). */
enum proto_log_kind {
	PROTO_LOG_NONE = 0,        /* no lines: migbed, versions neither observed nor read */
	PROTO_LOG_OBSERVED,        /* "[TAG observed SIDE] text": a real QEMU's exact line */
	PROTO_LOG_SOURCE,          /* "[TAG read SIDE] FORMAT": a format string of QEMU's source */
};

/* The names in enum order, as an option's choice list (profile_test.c checks it). */
#define PROTO_IMPL_WORDS "migbed|qemu-6.1|qemu-7.2|qemu-8.1|qemu-8.2|qemu-11.1"

struct proto_profile {
	const char *name;          /* "qemu-7.2": the option's word */
	const char *versions;      /* the releases it stands for: "QEMU 8.2 .. 11.0" */
	const char *summary;       /* one line for --help and docs */
	bool qemu;
	bool shared_cq;
	bool error_as_ready;
	bool compress_fill;
	bool swallow_poll_error;
	bool uninit_header;
	bool accept_returns_ok;
	bool flush_on_wrap;
	bool chunk_param;
	const char *log_tag;       /* "7.2", "8.2"; NULL: no lines (log_kind NONE) */
	enum proto_log_kind log_kind;
};

/* The row of impl (PROTO_IMPL_MIGBED for an out-of-range value). */
const struct proto_profile *proto_profile(enum proto_impl impl);
/* "qemu-7.2" -> its impl, or -1. */
int proto_profile_lookup(const char *name);
/* The names, joined by sep ("migbed|qemu-6.1|..."), into buf (n bytes); the length. */
size_t proto_profile_names(char *buf, size_t n, const char *sep);

/* "observed" (OBSERVED), "read" (SOURCE): the word of the cause table's tags; NULL for NONE. */
const char *proto_log_kind_word(enum proto_log_kind k);

/* The QEMU log lines this profile's side would print for a cause: the cause table's rows
 * "[TAG WORD SIDE(, note)] text" for its log_tag, its log_kind's word and side, one per
 * call: starting at *pos (0 first), copies the next one's text (without the tag) into buf
 * (n bytes) and, if note is not NULL, the tag's note ("wrong rkey"; "" if none) into note
 * (note_n bytes), and advances *pos; 0 when there is none left (or the profile has no tag).
 * Both are truncated to fit. */
int proto_profile_qemu_line(const struct proto_profile *p, int cause, enum vocab_side side, size_t *pos,
			    char *buf, size_t n, char *note, size_t note_n);

#endif
