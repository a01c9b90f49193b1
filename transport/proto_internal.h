/* SPDX-License-Identifier: MIT */
/* proto_internal - the control channel shared by the protocol's source and destination:
 * three registered 512 KiB buffers (slot 0 READY, 1 DATA, 2 CONTROL) and the framing of
 * control messages (docs/protocol.md, 'Control header' and 'Credit discipline'). Internal
 * to transport/. */
#ifndef MIGBED_TRANSPORT_PROTO_INTERNAL_H
#define MIGBED_TRANSPORT_PROTO_INTERNAL_H
#include "transport/proto.h"
#include "transport/stream.h"

struct ctl {
	hca_ep *ep;
	enum vocab_side side;
	evlog *ev;
	struct proto_stats *stats;
	uint8_t *buf[WIRE_SLOTS];
	hca_mr *mr[WIRE_SLOTS];
	uint32_t file_padding;         /* the padding of QEMU FILE headers (QEMU <= 8.1: stack bytes) */
};

/* Allocate and register the three control buffers. 0 or -CAUSE_CONTROL_REG_FAILED
 * (cx filled). remote_write: register them with remote write access as QEMU does
 * (qemu_rdma_reg_control: LOCAL_WRITE | REMOTE_WRITE; a side playing a QEMU profile), else
 * LOCAL_WRITE only (migbed's own protocol: SEND and RECV need no remote access, and a peer
 * cannot then write into them; docs/security.md). */
int ctl_init(struct ctl *c, hca_ep *ep, enum vocab_side side, bool remote_write,
	     struct proto_stats *st, struct cause_ctx *cx);
void ctl_fini(struct ctl *c);
/* Post a RECV for slot. 0 or -CAUSE_CONTROL_RECV_FAILED. */
int ctl_post_recv(struct ctl *c, enum wire_slot slot, struct cause_ctx *cx);
/* Frame header + data into the CONTROL buffer and post one signaled SEND (wr_id 2000), which
 * names its type to the seam (the fault site msg.TYPE) and lets a corrupt fault change it
 * (wire_corrupt). */
int ctl_post_send(struct ctl *c, uint32_t type, uint32_t repeat, const void *data,
		  uint32_t len, struct cause_ctx *cx);
/* Validate a received message in slot (byte_len from the completion) and decode its
 * header, in QEMU's order (qemu_rdma_exchange_get_response): the type first (want: the
 * type expected, WIRE_NONE = any, ERROR included), then len <= 512 KiB - 16, then
 * 16 + len == byte_len. An ERROR where another type is wanted gives -CAUSE_PEER_ERROR, any
 * other type -CAUSE_UNEXPECTED_MESSAGE, with QEMU's wording in the detail. `repeat` is not
 * looked at: QEMU checks it only inside a registration round (ctl_check_repeat). */
int ctl_decode(struct ctl *c, enum wire_slot slot, uint32_t byte_len, uint32_t want,
	       struct wire_hdr *h, struct cause_ctx *cx);
/* The destination's check of every message of a registration round (rdma_registration_handle):
 * repeat <= 4096, else -CAUSE_TOO_MANY_REQUESTS with QEMU's text. */
int ctl_check_repeat(const struct wire_hdr *h, struct cause_ctx *cx);
/* Map a failed completion's status to a cause: REM_ACCESS_ERR, RNR, RETRY get their own
 * rows, anything else `fallback`. */
int ctl_status_cause(int status, int fallback);
/* Map a hca_wait / poll error (-ECONNRESET, -ENODEV, other) to a cause. */
int ctl_wait_cause(int rc);
const uint8_t *ctl_data(const struct ctl *c, enum wire_slot slot);

/* A wr_id as QEMU's traces print one: "CONTROL RECV (4001)", "WRITE RDMA (1)" (the type
 * part), into buf; returns buf. */
const char *proto_wrid_str(uint64_t wr_id, char *buf, size_t n);
/* A cause that means "this side would hang here" (QEMU_HANG, COMPLETION_DROPPED): a side
 * playing QEMU sends no ERROR for it (QEMU would still be waiting). */
bool proto_cause_is_hang(int cause);

#define CTL_WRID_RECV(slot) ((uint64_t)WIRE_WRID_RECV_CONTROL + (uint64_t)(slot))
/* A wr_id migbed posts RECVs with (any slot). */
#define CTL_WRID_IS_RECV(id) ((id) >= CTL_WRID_RECV(0) && (id) < CTL_WRID_RECV(WIRE_SLOTS))

#endif
