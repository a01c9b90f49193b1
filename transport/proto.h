/* SPDX-License-Identifier: MIT */
/* proto - QEMU's RDMA migration protocol (docs/protocol.md) over the hca seam.
 *
 * The source is blocking code driven by the pre-copy engine: it connects with the
 * capability private data, speaks the READY-credit control channel, exchanges RAM blocks,
 * merges dirty pages into RDMA WRITEs of at most min(chunk, 2 MiB) that never cross one of
 * its chunks, registers chunks on demand (REGISTER REQUEST/RESULT, a per-source-chunk rkey
 * cache), elides all-zero buffers of unregistered chunks with COMPRESS, keeps at most one
 * write in flight per chunk and at most the granted send-queue depth overall (rxe: 1023 for
 * QEMU's 512), polls its recv CQ between pages as QEMU does, and drains + sends REGISTER FINISHED at the
 * end of every round. The destination is reactive (proto_dst_progress): it answers READY,
 * parses the migration stream, registers chunks with *its own* chunk size, and verifies
 * its memory against the digests the source sends before EOF.
 *
 * Every failure ends in one named cause (vocab/cause.h) recorded on the side that saw
 * it, with details; the side then sends ERROR to its peer (unless the peer's ERROR is what
 * it received) and disconnects. */
#ifndef MIGBED_TRANSPORT_PROTO_H
#define MIGBED_TRANSPORT_PROTO_H
#include <stdbool.h>
#include <stdint.h>
#include "vocab/cause.h"
#include "sim/digest.h"
#include "sim/mem.h"
#include "transport/hca.h"
#include "transport/profile.h"
#include "transport/wire.h"

struct stream_buf;

#define PROTO_DEFAULT_WAIT_NS (10ull * 1000 * 1000 * 1000)   /* 10 s, virtual */
#define PROTO_DEFAULT_DEADLINE_NS (10ull * 60 * 1000 * 1000 * 1000)   /* 10 min, virtual */

struct proto_opts {
	unsigned chunk_shift;          /* this side's chunk size, 20..30 */
	bool pin_all;                  /* source: ask for it; destination: accept it */
	uint64_t wait_timeout_ns;      /* bound on every single wait */
	/* bound on the whole migration from the connection on (source: connect; destination:
	 * accept), 0 = none: a peer that sends just often enough to reset every single wait
	 * cannot extend it. The destination fails with TIMEOUT at it; the source's waits are cut
	 * short at it (TIMEOUT). docs/security.md */
	uint64_t deadline_ns;
	uint32_t caps_version;         /* 1; other values test VERSION_UNSUPPORTED */
	bool negotiate;                /* migbed's chunk-size extension (WIRE_CAP_CHUNK_SIZE) */
	bool refuse_mismatch;          /* source: fail with CHUNK_SIZE_MISMATCH instead of adapting */
	/* destination: translate another migration stream (a real QEMU's, transport/qemu_stream.h)
	 * into migbed's, one QEMU FILE payload at a time; NULL = migbed's own stream */
	int (*stream_filter)(void *arg, const void *in, size_t len, struct stream_buf *out,
			     struct cause_ctx *cx);
	void *stream_filter_arg;
	/* destination, with stream_filter: the source disconnected before the end of its stream;
	 * the filter says how that stream ended: a negative cause with cx filled (a QEMU stream
	 * cut mid-record: QEMU_STREAM_TRUNCATED), or 0 for PEER_DISCONNECTED. NULL: the latter. */
	int (*stream_end)(void *arg, struct cause_ctx *cx);
	/* source: the mirror; every flush passes its buffered stream bytes through it before
	 * they are cut into QEMU FILE messages (transport/qemu_stream.h's writer makes QEMU's
	 * stream of them); NULL = send migbed's own stream */
	int (*stream_out_filter)(void *arg, const void *in, size_t len, struct stream_buf *out,
				 struct cause_ctx *cx);
	void *stream_out_filter_arg;
	/* source: the destination is a real QEMU, which confirms nothing after EOF (its
	 * verdict is only on its own QMP): proto_src_await_peer does not wait for it */
	bool peer_is_qemu;
	/* the peer this side plays (transport/profile.h): migbed's own, or a QEMU version's
	 * behaviour (shared CQ, unbounded waits, ...) */
	enum proto_impl impl;
	uint64_t seed;                 /* the run's: a profile's "uninitialised" bytes come from it */
	/* the rnr_retry_count this side passes to rdma_cm (connect / accept), which becomes the
	 * *peer's* RNR retry count; 0 as QEMU (an RNR NAK fails the WR at once), 7 = forever */
	uint8_t rnr_retry;
	/* destination: register guest RAM (chunks, pin-all blocks) with On-Demand Paging, and
	 * with PROTO_ODP_PREFETCH prefetch each MR right after (ibv_advise_mr, as QEMU does) */
	enum proto_odp { PROTO_ODP_OFF, PROTO_ODP_ON, PROTO_ODP_PREFETCH } odp;
};
void proto_opts_defaults(struct proto_opts *o);

struct proto_stats {
	uint64_t msgs_sent[WIRE_TYPE_COUNT];
	uint64_t msgs_recv[WIRE_TYPE_COUNT];
	uint64_t registrations;        /* chunk (or block) MRs registered for guest RAM */
	uint64_t pinned_bytes;         /* guest RAM currently registered */
	uint64_t pinned_peak_bytes;
	uint64_t rdma_writes;
	uint64_t rdma_bytes;
	uint64_t normal_pages;         /* pages written by RDMA */
	uint64_t zero_pages;           /* pages elided by COMPRESS ("duplicate") */
	uint64_t file_bytes;           /* QEMU FILE stream bytes */
	uint64_t wrid_misses;          /* completions consumed while waiting for another */
	uint64_t max_writes_in_flight;
};

/* ---- source --------------------------------------------------------------------------- */
typedef struct proto_src proto_src;

int proto_src_new(hca_world *w, mem *m, const struct proto_opts *o, proto_src **out);
/* Connect, exchange capabilities, set up the control channel. */
int proto_src_connect(proto_src *s, const char *addr);
/* Append migration-stream bytes; sent as QEMU FILE messages (<= 32 KiB) by flush. */
int proto_src_put(proto_src *s, const void *data, size_t len);
/* Flush the merged RDMA write, then send buffered stream bytes. */
int proto_src_flush(proto_src *s);
/* Registration round start: HOOK into the stream + flush. */
int proto_src_reg_start(proto_src *s);
/* Round end: flush, drain all writes, (setup round: RAM BLOCKS exchange,) REGISTER FINISHED. */
int proto_src_reg_stop(proto_src *s, bool setup);
/* Offer one dirty page (block b, page index) to RDMA. */
int proto_src_save_page(proto_src *s, size_t b, uint64_t page);
/* Nonblocking: reap write completions (after each page, as QEMU does). */
int proto_src_poll(proto_src *s);
/* The dirty-page scan passed the last RAM block (QEMU's find_dirty_block). QEMU 8.1.0-8.1.2
 * (the qemu-8.1 profile: flush_on_wrap) sends a multifd flush record and flushes the stream
 * here, inside the registration round; a no-op for every other profile. */
int proto_src_scan_wrapped(proto_src *s);
/* After EOF: wait (bounded) for the destination to confirm by disconnecting; an ERROR
 * from it (e.g. its verification failed) fails the source with PEER_ERROR. With
 * peer_is_qemu it returns at once: the source cannot know a QEMU destination's verdict. */
int proto_src_await_peer(proto_src *s);
/* Bytes counted as transferred so far (stream + RDMA, counted when posted). */
uint64_t proto_src_transferred(const proto_src *s);
bool proto_src_pin_all(const proto_src *s);
/* The guest is stopped (the final round) or running: which blocking-wait cost applies
 * (struct hca_cost wait_stopped_ns / wait_running_ns; docs/model.md). */
void proto_src_set_guest_stopped(proto_src *s, bool stopped);
/* The chunk size the source uses: its own, or the destination's after negotiation adapted it. */
uint64_t proto_src_chunk_bytes(const proto_src *s);
const struct proto_stats *proto_src_stats(const proto_src *s);
const struct cause_ctx *proto_src_cause(const proto_src *s);
/* Record a failure detected outside the protocol (e.g. by the engine). */
int proto_src_fail(proto_src *s, int cause, const char *detail);
/* Cleanup: ERROR to the peer if this side failed, disconnect, free everything. */
void proto_src_free(proto_src *s);

/* ---- destination ------------------------------------------------------------------------ */
typedef struct proto_dst proto_dst;

enum proto_dst_state { PROTO_DST_RUNNING, PROTO_DST_COMPLETED, PROTO_DST_FAILED };

int proto_dst_new(hca_world *w, mem *m, const struct proto_opts *o, proto_dst **out);
int proto_dst_listen(proto_dst *d, const char *addr);
/* hca_progress_fn: >0 did something, 0 nothing to do now, <0 finished (completed/failed). */
int proto_dst_progress(void *d);
enum proto_dst_state proto_dst_state(const proto_dst *d);
const struct proto_stats *proto_dst_stats(const proto_dst *d);
const struct cause_ctx *proto_dst_cause(const proto_dst *d);
bool proto_dst_pin_all(const proto_dst *d);
/* Still listening: no source has connected (nothing can arrive once the source is gone). */
bool proto_dst_listening(const proto_dst *d);
/* Fail the destination from outside (e.g. it never finished). */
int proto_dst_fail(proto_dst *d, int cause, const char *detail);
void proto_dst_free(proto_dst *d);

/* The source's decision under --protocol negotiated (pure, for tests): the destination
 * announced its chunk shift, or (an old peer that masked the flag) is assumed to use QEMU's
 * 1 MiB. Under pin-all nothing needs to agree. Equal: keep. refuse: any difference is
 * -CAUSE_CHUNK_SIZE_MISMATCH. adapt: a larger source chunk falls back to the destination's
 * (a smaller one already works: the destination just pins more). */
int proto_negotiate_chunk(unsigned src_shift, bool dst_announced, unsigned dst_shift, bool pin_all,
			  bool refuse, unsigned *use_shift);

/* Digest of block b's memory, as carried in the stream's VERIFY record: XXH3-128 seeded with b
 * over the block's content (MEM_REPR_BYTES: its bytes, a 1 MiB piece that is all zero pages as
 * the one byte "Z"; the model: each page's 8-byte stamp). 0, or -ENOMEM. */
int proto_mem_digest(const mem *m, size_t b, struct digest *out);

#endif
