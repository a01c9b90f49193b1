/* SPDX-License-Identifier: MIT */
/* cause - the one table of named ways a migration (or a migbed run) can fail.
 *
 * Every failure path in the protocol, the engine and the transports ends in exactly one row
 * of this table. A row is X(NAME, message, hint, qemu): NAME is stable (printed, grepped by
 * the Bats tests, counted by the coverage map), message is one line, hint says what to look
 * at, qemu lists the messages QEMU prints in the same situation, separated by " | ", so a
 * person holding a QEMU log can find the row (docs/protocol.md, 'QEMU error messages'). A
 * qemu row is a printf format of QEMU's rdma.c; "[7.2 observed SIDE(, note)] text" is a line
 * a real QEMU 7.2 printed on that side; "[8.2 read SIDE(, note)] FORMAT" is QEMU 8.2's
 * format for that side, read from its source, not observed (docs/profiles-research.md,
 * section 10: commit and function of each); "(...)" is commentary.
 *
 * Functions return 0 or a negative cause code (-CAUSE_x); details (block, chunk, rkey, the
 * work-completion status) travel beside it in a struct cause_ctx. */
#ifndef MIGBED_VOCAB_CAUSE_H
#define MIGBED_VOCAB_CAUSE_H
#include <stddef.h>
#include <stdint.h>
#include "vocab/vocab.h"

#define CAUSE_TABLE(X) \
X(CONNECT_FAILED, PRIMARY, "could not connect to the destination", \
  "check the address and that `migbed dest` (or QEMU -incoming) listens there", \
  "RDMA ERROR: connecting to destination! | could not resolve address | could not resolve rdma route | result not equal to event_addr_resolved") \
X(CONNECT_REJECTED, CONSEQUENCE, "the destination rejected the connection", \
  "the destination refused the capabilities or was not ready", \
  "RDMA ERROR: connecting to destination! | " \
  "[7.2 observed dst, then SIGSEGV] Unknown source RDMA version: 2, bailing... | " \
  "[8.2 read dst] Unknown source RDMA version: %d, bailing... | " \
  "[8.2 read dst] RDMA ERROR: Migration initialization failed") \
X(ACCEPT_FAILED, PRIMARY, "the destination could not accept the connection", \
  "see the destination's log for the failing verbs call", \
  "rdma_accept failed | rdma_accept get_cm_event failed | rdma_accept not event established | " \
  "[7.2 observed src] rdma_get_cm_event != EVENT_ESTABLISHED after rdma_connect | " \
  "[7.2 observed src] RDMA ERROR: connecting to destination! | " \
  "[8.2 read src] RDMA ERROR: connecting to destination! | " \
  "[8.2 read dst] RDMA ERROR: Migration initialization failed") \
X(VERSION_UNSUPPORTED, PRIMARY, "the peer speaks an unknown RDMA migration protocol version", \
  "both sides must use protocol version 1", \
  "Unknown source RDMA version: %d, bailing... | " \
  "[7.2 observed dst, then SIGSEGV] Unknown source RDMA version: 2, bailing... | " \
  "[8.2 read dst] Unknown source RDMA version: %d, bailing... | " \
  "[8.2 read dst] RDMA ERROR: Migration initialization failed") \
X(DEVICE_SETUP_FAILED, PRIMARY, "allocating verbs resources (PD, CQ, completion channel, QP) failed", \
  "check the RDMA device, `ulimit -l` and the kernel log", \
  "failed to allocate protection domain | failed to allocate completion channel | failed to allocate completion queue | rdma migration: error allocating qp! | " \
  "[7.2 observed src] rdma_get_cm_event != EVENT_ESTABLISHED after rdma_connect | " \
  "[7.2 observed src] RDMA ERROR: connecting to destination! | " \
  "[8.2 read src, the destination failing] RDMA ERROR: connecting to destination! | " \
  "[8.2 read dst] RDMA ERROR: Migration initialization failed") \
X(CONTROL_REG_FAILED, PRIMARY, "registering the control-message buffers failed", \
  "memlock limit too low for 3 x 512 KiB control buffers?", \
  "error registering %d control! | " \
  "[7.2 observed src] rdma_get_cm_event != EVENT_ESTABLISHED after rdma_connect | " \
  "[7.2 observed src] RDMA ERROR: connecting to destination! | " \
  "[8.2 read src, the destination failing] RDMA ERROR: connecting to destination! | " \
  "[8.2 read src, its own failure] RDMA ERROR: rdma migration: error registering %d control! | " \
  "[8.2 read dst] rdma: error registering %d control | " \
  "[8.2 read dst] RDMA ERROR: Migration initialization failed") \
X(CHUNK_SIZE_MISMATCH, PRIMARY, "source and destination chunk sizes differ and the policy is refuse", \
  "set the same x-rdma-chunk-size on both sides, or use --on-mismatch adapt", \
  "(QEMU has no such check: it fails later with REMOTE_ACCESS_ERROR's messages) | " \
  "[7.2 observed dst, 64M-chunk source] ibv_poll_cq wc.status=5 Work Request Flushed Error! | " \
  "[7.2 observed dst] load of migration failed: Operation not permitted | " \
  "[8.2 read dst, 64M-chunk source] rdma migration: recv polling control error! | " \
  "[8.2 read dst] load of migration failed: %s") \
X(RAM_BLOCK_COUNT_MISMATCH, PRIMARY, "source and destination have a different number of RAM blocks", \
  "the guest configurations differ: compare the QEMU command lines", \
  "ram blocks mismatch (Number of blocks %d vs %d) | Your QEMU command line parameters are probably not identical on both the source and destination. | " \
  "[7.2 observed src] ram blocks mismatch (Number of blocks 1 vs 2) Your QEMU command line parameters are probably not identical on both the source and destination. | " \
  "[8.2 read src] ram blocks mismatch (Number of blocks %d vs %d) | " \
  "[8.2 read src] Your QEMU command line parameters are probably not identical on both the source and destination.") \
X(RAM_BLOCK_LENGTH_MISMATCH, PRIMARY, "a RAM block has a different length on the destination", \
  "the guest configurations differ (memory size, device ROMs)", \
  "Block %s/%d has a different length %lu vs %lu | " \
  "[7.2 observed dst] Size mismatch: ram: 0x2000000 != 0x4000000: Invalid argument | " \
  "[7.2 observed dst] error while loading state for instance 0x0 of device 'ram' | " \
  "[7.2 observed src] Was expecting a READY (2) control message, but got: ERROR (1), length: 0 | " \
  "[7.2 observed src] receiving remote info! | " \
  "[8.2 read src] Was expecting a %s (%d) control message, but got: %s (%d), length: %d") \
X(RAM_BLOCK_NOT_FOUND, PRIMARY, "a RAM block of the source does not exist on the destination", \
  "the guest configurations differ (devices)", \
  "RAMBlock '%s' not found on destination | " \
  "[7.2 observed dst] Unknown ramblock \"foo\", cannot accept migration | " \
  "[7.2 observed dst] load of migration failed: Invalid argument | " \
  "[8.2 read dst] load of migration failed: %s") \
X(CONTROL_SEND_FAILED, PRIMARY, "posting a control-message SEND failed", \
  "the QP may be in the error state after an earlier failure", \
  "Failed to use post IB SEND for control | " \
  "[7.2 observed src] Was expecting a READY (2) control message, but got: ERROR (1), length: 0 | " \
  "[8.2 read src] Was expecting a %s (%d) control message, but got: %s (%d), length: %d") \
X(CONTROL_SEND_ERROR, PRIMARY, "a control-message SEND completed with an error status", \
  "RNR or retry errors point at the peer or the link; flush errors at an earlier failure", \
  "rdma migration: send polling control error | " \
  "[7.2 observed src] receive cm event while wait comp channel,cm event is 10 | " \
  "[7.2 observed src] rdma migration: recv polling control error! | " \
  "[8.2 read src] rdma migration: recv polling control error!") \
X(CONTROL_RECV_FAILED, PRIMARY, "posting a control-message RECV failed", \
  "the QP may be in the error state after an earlier failure", \
  "error posting control recv | " \
  "[7.2 observed src] Was expecting a READY (2) control message, but got: ERROR (1), length: 0 | " \
  "[7.2 observed dst] Was expecting a QEMU FILE (3) control message, but got: ERROR (1), length: 0 | " \
  "[7.2 observed dst] Not a migration stream | " \
  "[8.2 read src] Was expecting a %s (%d) control message, but got: %s (%d), length: %d | " \
  "[8.2 read dst, its own failure] error posting control recv | " \
  "[8.2 read dst] load of migration failed: %s") \
X(CONTROL_RECV_ERROR, PRIMARY, "a control-message RECV completed with an error status", \
  "a flushed RECV means this side's QP went to error: usually the peer failed first", \
  "rdma migration: recv polling control error! | " \
  "[7.2 observed src] Was expecting a READY (2) control message, but got: ERROR (1), length: 0 | " \
  "[8.2 read src] Was expecting a %s (%d) control message, but got: %s (%d), length: %d") \
X(UNEXPECTED_MESSAGE, PRIMARY, "a control message of an unexpected type arrived", \
  "protocol state disagreement between the peers (or a dropped/duplicated message)", \
  "Was expecting a %s (%d) control message, but got: %s (%d), length: %d | Unknown control message %s | Invalid RESULT message at dest. | " \
  "[7.2 observed src] Was expecting a REGISTER RESULT (8) control message, but got: READY (2), length: 0 | " \
  "[7.2 observed src] Was expecting a REGISTER RESULT (8) control message, but got: ??BAD CONTROL VALUE?? (136), length: 16 | " \
  "[7.2 observed dst] Unknown control message ??BAD CONTROL VALUE?? | " \
  "[8.2 read src] Was expecting a %s (%d) control message, but got: %s (%d), length: %d | " \
  "[8.2 read dst] Unknown control message %s") \
X(PEER_ERROR, CONSEQUENCE, "the peer sent an ERROR control message", \
  "the other side failed first: see its cause", \
  "Was expecting a %s (%d) control message, but got: ERROR (1), length: 0 | Early error. Sending error. | " \
  "[7.2 observed src] Early error. Sending error. | " \
  "[7.2 observed dst] Unknown control message ERROR | " \
  "[8.2 read src] Early error. Sending error. | " \
  "[8.2 read dst] Unknown control message %s") \
X(MESSAGE_MALFORMED, PRIMARY, "a control message has a bad length", \
  "corrupted or truncated control message", \
  "too long length: %d | Malformed length: %d byte_len %d | " \
  "[7.2 observed src] too long length: 1073741840 | " \
  "[7.2 observed dst] too long length: 1073741837 | " \
  "[8.2 read src] too long length: %d | " \
  "[8.2 read dst] too long length: %d") \
X(TOO_MANY_REQUESTS, PRIMARY, "a control message packs more requests than allowed (4096)", \
  "a QEMU 8.1.0-8.1.2 source (a huge count: its multifd flush record inside the round carries stack bytes; 8.1.3 fixes it, profile qemu-8.1), a corrupted control message inside a registration round (the only place the count is checked), or a misbehaving peer", \
  "rdma: Too many requests in this message (%d).Bailing. | " \
  "[7.2 observed dst] rdma: Too many requests in this message (65537).Bailing. | " \
  "(7.2 observed: a QEMU source ignores the repeat count of a REGISTER RESULT and completes) | " \
  "[8.2 read dst] rdma: Too many requests in this message (%d).Bailing.") \
X(BAD_REGISTER_REQUEST, PRIMARY, "a REGISTER REQUEST names a bad block or address", \
  "corrupted request or RAM layouts that disagree", \
  "rdma: 'register' bad block index %u (vs %d) | rdma: bad register address for block %s offset: %x current_addr: %x | rdma: bad chunk for block | " \
  "[7.2 observed dst: no address check] Failed to register chunk!: Invalid argument | " \
  "[7.2 observed dst] cannot get rkey | " \
  "[8.2 read dst, an address below its block] rdma: bad register address for block %s offset: %lx current_addr: %lx | " \
  "[8.2 read dst, an address past its block] cannot get rkey") \
X(BAD_COMPRESS, PRIMARY, "a COMPRESS message names a bad block or a non-zero value", \
  "corrupted message", \
  "rdma: 'compress' bad block index | rdma: Zero page with non-zero (%d) value | " \
  "(7.2 observed: a QEMU destination accepts a non-zero value silently and completes) | " \
  "[8.2 read dst, a bad block index] rdma: 'compress' bad block index %u (vs %d) | " \
  "[8.2 read dst, a non-zero value] rdma: Zero page with non-zero (%d) value") \
X(DEST_REG_FAILED, PRIMARY, "the destination could not register (pin) a chunk", \
  "memlock limit (ulimit -l, CAP_IPC_LOCK) or memory pressure on the destination; larger chunks pin more", \
  "cannot get rkey | " \
  "[7.2 observed src] Was expecting a REGISTER RESULT (8) control message, but got: ERROR (1), length: 0 | " \
  "[7.2 observed src] rdma migration: write error! -5 | " \
  "[8.2 read src] Was expecting a %s (%d) control message, but got: %s (%d), length: %d | " \
  "[8.2 read dst] cannot get rkey") \
X(DEST_PIN_ALL_FAILED, PRIMARY, "the destination could not register a whole RAM block (pin-all)", \
  "pin-all pins all guest RAM at once: raise the memlock limit or disable pin-all", \
  "Failed to register local dest ram block! | " \
  "[7.2 observed src] Was expecting a RAM BLOCKS RESULT (5) control message, but got: ERROR (1), length: 0 | " \
  "[7.2 observed src] receiving remote info! | " \
  "[8.2 read src] Was expecting a %s (%d) control message, but got: %s (%d), length: %d | " \
  "[8.2 read dst] Failed to register local dest ram block!: %s") \
X(SOURCE_REG_FAILED, PRIMARY, "the source could not register its own memory", \
  "memlock limit (ulimit -l, CAP_IPC_LOCK) on the source", \
  "cannot get lkey | cannot get lkey! | " \
  "[7.2 observed dst] Unknown control message ERROR | " \
  "[8.2 read dst] Unknown control message %s") \
X(REMOTE_ACCESS_ERROR, PRIMARY, "an RDMA WRITE was rejected by the destination (IBV_WC_REM_ACCESS_ERR)", \
  "the write fell outside the memory the destination registered: do the peers agree on the chunk size (x-rdma-chunk-size)? (or the destination died and its memory was deregistered)", \
  "rdma migration: polling error | Failed to Wait for previous write to complete block %d chunk %lu | rdma migration: complete polling error! | RDMA is in an error state waiting migration to abort! | " \
  "[7.2 observed src, wrong rkey] ibv_poll_cq wc.status=10 remote access error! | " \
  "[7.2 observed src] ibv_poll_cq wrid=WRITE RDMA! | " \
  "[7.2 observed dst] ibv_poll_cq wc.status=5 Work Request Flushed Error! | " \
  "[7.2 observed dst] ibv_poll_cq wrid=CONTROL RECV! | " \
  "[7.2 observed dst] load of migration failed: Operation not permitted | " \
  "[8.2 read src, seen between pages] rdma migration: polling error | " \
  "[8.2 read src, seen waiting for a control SEND] rdma migration: send polling control error | " \
  "[8.2 read src, seen waiting for the chunk's previous WRITE] Failed to Wait for previous write to complete block %d chunk %lu current %lu len %lu %d | " \
  "[8.2 read src, seen at the end of a round] rdma migration: complete polling error! | " \
  "[8.2 read dst] rdma migration: recv polling control error! | " \
  "[8.2 read dst] load of migration failed: %s") \
X(WRITE_POST_FAILED, PRIMARY, "posting an RDMA WRITE failed", \
  "the QP may be in the error state after an earlier failure", \
  "rdma migration: post rdma write failed | " \
  "[7.2 observed dst] Unknown control message ERROR | " \
  "[8.2 read src, its own failure] rdma migration: post rdma write failed: %s | " \
  "[8.2 read dst] Unknown control message %s") \
X(SEND_QUEUE_FULL, PRIMARY, "the send queue stayed full (512 WRs)", \
  "completions are not coming back: the link or the peer is stuck", \
  "rdma migration: failed to make room in full send queue! | " \
  "[8.2 read src] rdma migration: failed to make room in full send queue!") \
X(WRITE_COMPLETION_ERROR, PRIMARY, "an RDMA WRITE completed with an error status", \
  "see the status: retry errors mean a dead link, flush errors an earlier failure", \
  "rdma migration: polling error | rdma migration: complete polling error! | " \
  "[7.2 observed dst] receive cm event, cm event is 10 | " \
  "[7.2 observed dst] Failed to send control buffer | " \
  "[7.2 observed dst] load of migration failed: Broken pipe | " \
  "[8.2 read src, seen between pages] rdma migration: polling error | " \
  "[8.2 read src, seen waiting for a control SEND] rdma migration: send polling control error | " \
  "[8.2 read src, seen waiting for the chunk's previous WRITE] Failed to Wait for previous write to complete block %d chunk %lu current %lu len %lu %d | " \
  "[8.2 read src, seen at the end of a round] rdma migration: complete polling error! | " \
  "[8.2 read dst] receive cm event, cm event is %d | " \
  "[8.2 read dst] rdma migration: send polling control error | " \
  "[8.2 read dst] load of migration failed: %s") \
X(RNR_RETRY_EXCEEDED, PRIMARY, "a SEND found no RECV posted at the peer (IBV_WC_RNR_RETRY_EXC_ERR, rnr_retry 0)", \
  "the READY credit discipline was broken (duplicated message?) or the peer is too slow", \
  "rdma migration: send polling control error | ibv_poll_cq wc.status=13 RNR retry counter exceeded! | " \
  "[7.2 observed dst] receive cm event, cm event is 10 | " \
  "[7.2 observed dst] rdma migration: error sending remote info | " \
  "[8.2 read dst] receive cm event, cm event is %d | " \
  "[8.2 read dst] rdma migration: send polling control error") \
X(TRANSPORT_RETRY_EXCEEDED, PRIMARY, "the link stopped acknowledging (IBV_WC_RETRY_EXC_ERR)", \
  "the wire is down or losing every packet; RC gave up after retry_count retries", \
  "rdma migration: polling error | rdma migration: send polling control error | " \
  "[7.2 observed dst] receive cm event, cm event is 10 | " \
  "[7.2 observed dst] Failed to send control buffer | " \
  "[7.2 observed dst] load of migration failed: Broken pipe | " \
  "[8.2 read dst] receive cm event, cm event is %d | " \
  "[8.2 read dst] rdma migration: send polling control error | " \
  "[8.2 read dst] load of migration failed: %s") \
X(QP_ERROR, CONSEQUENCE, "the local QP was moved to the error state", \
  "every outstanding work request is flushed after this", \
  "rdma migration: polling error | RDMA is in an error state waiting migration to abort! | " \
  "[7.2 observed src] receive cm event while wait comp channel,cm event is 10 | " \
  "[7.2 observed src] rdma migration: recv polling control error! | " \
  "[7.2 observed dst] receive cm event, cm event is 10 | " \
  "[7.2 observed dst] load of migration failed: Broken pipe | " \
  "[8.2 read src] rdma migration: recv polling control error! | " \
  "[8.2 read dst] receive cm event, cm event is %d | " \
  "[8.2 read dst] load of migration failed: %s") \
X(PEER_DISCONNECTED, CONSEQUENCE, "the peer disconnected (RDMA_CM_EVENT_DISCONNECTED)", \
  "the other side exited or failed: see its cause", \
  "receive cm event, cm event is 10 | " \
  "[7.2 observed src] receive cm event while wait comp channel,cm event is 10 | " \
  "[7.2 observed dst] receive cm event, cm event is 10 | " \
  "[8.2 read dst] receive cm event, cm event is %d") \
X(DEVICE_REMOVED, PRIMARY, "the RDMA device went away (RDMA_CM_EVENT_DEVICE_REMOVAL)", \
  "the rxe link or NIC was removed", \
  "receive cm event, cm event is 11 | " \
  "[7.2 observed src] receive cm event while wait comp channel,cm event is 10 | " \
  "[7.2 observed dst] Was expecting a QEMU FILE (3) control message, but got: ERROR (1), length: 0") \
X(TIMEOUT, PRIMARY, "a bounded wait expired", \
  "the detail names what was awaited; a stuck peer or a lost message", \
  "(QEMU waits without a bound here: it hangs) | " \
  "[7.2 observed src: active until the peer gives up] Was expecting a READY (2) control message, but got: ERROR (1), length: 0 | " \
  "[7.2 observed dst] Was expecting a QEMU FILE (3) control message, but got: ERROR (1), length: 0 | " \
  "[8.2 read src: active until the peer gives up] Was expecting a %s (%d) control message, but got: %s (%d), length: %d") \
X(QEMU_HANG, PRIMARY, "a side playing a QEMU version would wait here forever (QEMU's control waits have no bound)", \
  "the detail names the QEMU version and what it waits for; migbed's own bound (--wait-timeout-ms) ended the wait; the peer's cause says why nothing came", \
  "(QEMU prints nothing: the migration stays active, query-migrate shows no progress, until it is cancelled)") \
X(COMPLETION_DROPPED, PRIMARY, "a completion this side waits for was dropped earlier: one shared CQ (QEMU <= 6.1) took it while waiting for another wr_id", \
  "QEMU before 6.2 polled one CQ for sends and receives and dropped a RECV that arrived before the SEND completion it waited for (soft-RoCE reorders them); fixed in 6.2 by separate CQs: upgrade", \
  "(trace) A Wanted wrid CONTROL SEND (2000) but got CONTROL RECV (4000) | (trace) A Wanted wrid WRITE RDMA (1) but got CONTROL RECV (4000) | " \
  "(QEMU <= 6.1 then waits forever: the migration hangs)") \
X(NOT_CONVERGED, PRIMARY, "the migration did not converge within the time limit", \
  "the guest dirties memory faster than the link (or max-bandwidth) moves it: raise max-bandwidth or downtime-limit", \
  "(QEMU keeps iterating: the migration never completes) | " \
  "[7.2 observed dst] Was expecting a QEMU FILE (3) control message, but got: ERROR (1), length: 0") \
X(DEST_INCOMPLETE, CONSEQUENCE, "the destination did not receive the whole migration", \
  "the source stopped early; the destination must not report success", \
  "load of migration failed | " \
  "[7.2 observed dst, EOF lost] receive cm event, cm event is 10 | " \
  "[7.2 observed dst] load of migration failed: Input/output error | " \
  "[8.2 read dst, EOF lost] receive cm event, cm event is %d | " \
  "[8.2 read dst] load of migration failed: %s") \
X(VERIFY_MISMATCH, PRIMARY, "the destination's memory differs from the source's", \
  "a real corruption: keep the trace, seed and event log; this is a finding", \
  "Memory content inconsistency at %x | " \
  "(7.2 observed: a QEMU source prints nothing and reports completed)") \
X(RESOURCE_EXHAUSTED, PRIMARY, "migbed ran out of memory or another host resource", \
  "reduce the guest size or use the stamp memory representation", \
  "[7.2 observed dst, the migbed source failing at switchover] Was expecting a QEMU FILE (3) control message, but got: ERROR (1), length: 0 | [7.2 observed dst] load of migration failed: Input/output error | " \
  "[8.2 read dst, the migbed source failing at switchover] load of migration failed: %s") \
X(INTERNAL, PRIMARY, "an internal invariant failed", \
  "a migbed bug (please report it with the scenario and seed), or a completion the verbs provider should never produce (a wr_id that was never posted)", \
  "[7.2 observed src, the migbed destination failing] Was expecting a READY (2) control message, but got: ERROR (1), length: 0 | " \
  "[8.2 read src, the migbed destination failing] Was expecting a %s (%d) control message, but got: %s (%d), length: %d") \
X(QEMU_STREAM_MALFORMED, PRIMARY, "the migration stream from QEMU is not valid QEMU migration format", \
  "the detail quotes the offset and bytes; compare with docs/qemu-in-the-loop.md", \
  "(QEMU 7.2) Unknown savevm section type %d | Unknown combination of migration flags: 0x%x | Missing section footer for %s | Unknown ramblock \"%s\", cannot accept migration") \
X(QEMU_STREAM_UNSUPPORTED, PRIMARY, "the migration stream from QEMU holds something migbed does not read", \
  "migbed reads `-M none` streams (ram, timer, globalstate); use -M none and no block migration/compression/xbzrle/postcopy", \
  "(QEMU 7.2 reads it: migbed's limitation, not a QEMU error) | [7.2 observed src, block migration] Was expecting a READY (2) control message, but got: ERROR (1), length: 0 | " \
  "[8.2 read src, block migration] Was expecting a %s (%d) control message, but got: %s (%d), length: %d") \
X(QEMU_STREAM_TRUNCATED, CONSEQUENCE, "the migration stream from QEMU ended in the middle", \
  "the source stopped or the capture was cut; the detail says what was expected", \
  "(QEMU 7.2) load of migration failed: Input/output error")

/* Causes have their own numeric range, disjoint from errno (Linux errno values are below
 * 4096): a stray -ENOMEM where a -CAUSE_x belongs can never print as a plausible wrong name.
 * cause_name() of a value outside the range is "UNKNOWN"; cause_set() records one as
 * INTERNAL, naming the errno, rather than guessing. Codes run CAUSE_FIRST .. CAUSE_END - 1. */
#define CAUSE_BASE 0x10000
enum cause_code {
	CAUSE_NONE = 0,
	CAUSE_BASE_ = CAUSE_BASE,
#define CAUSE_ENUM_(name, kind, msg, hint, qemu) CAUSE_##name,
	CAUSE_TABLE(CAUSE_ENUM_)
#undef CAUSE_ENUM_
	CAUSE_END
};
#define CAUSE_FIRST (CAUSE_BASE + 1)
#define CAUSE_COUNT (CAUSE_END - CAUSE_FIRST)   /* rows of the table (NONE not counted) */
_Static_assert(CAUSE_BASE > 4095, "causes are disjoint from errno");
_Static_assert(CAUSE_COUNT > 0, "the cause table has rows");

/* c (or -c) is a cause code of the table: CAUSE_FIRST .. CAUSE_END - 1. */
static inline int cause_valid(int c)
{
	if (c < 0)
		c = -c;
	return c >= CAUSE_FIRST && c < CAUSE_END;
}

/* A cause is PRIMARY (a failure of its own) or a CONSEQUENCE of the other side's failure
 * (PEER_ERROR, PEER_DISCONNECTED, a QP flushed into error, ...): the judge never lets a
 * consequence hide the primary cause (run/judge.c). The KIND column of the table says which. */
enum cause_kind { CAUSE_PRIMARY, CAUSE_CONSEQUENCE };
/* 1 for a CONSEQUENCE row, 0 for a PRIMARY one, NONE and non-causes. Accepts c or -c. */
int cause_is_consequence(int c);

/* "REMOTE_ACCESS_ERROR"; "NONE" for 0; "UNKNOWN" for out-of-range. Accepts c or -c. */
const char *cause_name(int c);
const char *cause_message(int c);
const char *cause_hint(int c);
const char *cause_qemu(int c);
/* NAME -> code (positive), or 0 if unknown. */
int cause_lookup(const char *name);

/* What a failing side knows about its failure. */
#define CAUSE_DETAIL_MAX 320
struct cause_ctx {
	int cause;                     /* positive cause code, 0 = none */
	enum vocab_side side;          /* the side it happened on */
	uint64_t t_ns;                 /* virtual time of the failure */
	char detail[CAUSE_DETAIL_MAX]; /* "block=pc.ram chunk=3 rkey=0x1234 status=REM_ACCESS_ERR (remote access error)" */
};

/* At a boundary where a value is taken as a cause: the positive cause code of c (or -c);
 * a value that is not one (an errno) gives CAUSE_INTERNAL and, if detail is given, says so
 * there (n bytes). */
int cause_checked(int c, char *detail, size_t n);

/* Record the first failure only (later ones are consequences). Returns -cause. A value
 * that is not a cause (an errno that crossed the boundary) is recorded as INTERNAL with the
 * errno named in the detail: a bug in migbed, never a plausible wrong name. */
int cause_set(struct cause_ctx *cx, int cause, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
