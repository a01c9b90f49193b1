/* SPDX-License-Identifier: MIT */
/* vocab - the names more than one module uses, defined once.
 *
 * Each list is an X-macro table (in the spirit of libuv's UV_ERRNO_MAP): the enums, the
 * printed names, the tokens of the event log and of fault rules, the counts and the parsers
 * are generated from it, so no module keeps a hand-synced copy. This folder is a leaf: it
 * includes nothing of migbed's, and sim/, transport/, faults/ and the layers above may all
 * include it.
 *
 *   VOCAB_WC_STATUS(X)  X(NAME, value, text): work-completion statuses, numbered as
 *                       enum ibv_wc_status; text as ibv_wc_status_str() prints it
 *   VOCAB_CM_EVENT(X)   X(NAME, value, token): rdma_cm events, numbered as
 *                       enum rdma_cm_event_type; printed "RDMA_CM_EVENT_<NAME>", the fault
 *                       site "cm.<token>"
 *   VOCAB_MSG_TYPE(X)   X(NAME, value, "QEMU name", token): the control message types of
 *                       QEMU's RDMA protocol (docs/protocol.md, 'Control messages'), the QEMU
 *                       spelling as its error messages print it, the fault site "msg.<token>"
 *   VOCAB_SIDE(X)       X(NAME, token, alias): the two ends of a migration, as the event log,
 *                       the results and fault rules spell them (a fault rule also takes the alias)
 *   VOCAB_FAULT_SITE(X) X(NAME, "token", CLASS, "canonical action"): the fault sites of the
 *                       seam's fallible calls (docs/faults.md); CLASS decides which actions a
 *                       site takes (faults/fault.c), the canonical action is the failure
 *                       `migbed torture` injects there. The cm.TOKEN and msg.TOKEN sites follow,
 *                       one per CM event and control message type, canonical action drop.
 *   VOCAB_FAULT_ACTION(X), VOCAB_FAULT_CORRUPT(X)  X(NAME, token): what a fault rule does, and
 *                       what its corrupt(...) changes: the seam (transport/hca.h's fault hook)
 *                       and the protocol carry them out, faults/ parses them.
 *
 * The named causes of a failed migration are a table of their own: vocab/cause.h.
 */
#ifndef MIGBED_VOCAB_VOCAB_H
#define MIGBED_VOCAB_VOCAB_H
#include <stdint.h>

#define VOCAB_WC_STATUS(X) \
	X(SUCCESS,            0, "success") \
	X(LOC_LEN_ERR,        1, "local length error") \
	X(LOC_QP_OP_ERR,      2, "local QP operation error") \
	X(LOC_EEC_OP_ERR,     3, "local EE context operation error") \
	X(LOC_PROT_ERR,       4, "local protection error") \
	X(WR_FLUSH_ERR,       5, "Work Request Flushed Error") \
	X(MW_BIND_ERR,        6, "memory management operation error") \
	X(BAD_RESP_ERR,       7, "bad response error") \
	X(LOC_ACCESS_ERR,     8, "local access error") \
	X(REM_INV_REQ_ERR,    9, "remote invalid request error") \
	X(REM_ACCESS_ERR,    10, "remote access error") \
	X(REM_OP_ERR,        11, "remote operation error") \
	X(RETRY_EXC_ERR,     12, "transport retry counter exceeded") \
	X(RNR_RETRY_EXC_ERR, 13, "RNR retry counter exceeded") \
	X(LOC_RDD_VIOL_ERR,  14, "local RDD violation error") \
	X(REM_INV_RD_REQ_ERR, 15, "remote invalid RD request") \
	X(REM_ABORT_ERR,     16, "aborted error") \
	X(INV_EECN_ERR,      17, "invalid EE context number") \
	X(INV_EEC_STATE_ERR, 18, "invalid EE context state") \
	X(FATAL_ERR,         19, "fatal error") \
	X(RESP_TIMEOUT_ERR,  20, "response timeout error") \
	X(GENERAL_ERR,       21, "general error")

#define VOCAB_CM_EVENT(X) \
	X(ADDR_RESOLVED,    0, addr_resolved) \
	X(ADDR_ERROR,       1, addr_error) \
	X(ROUTE_RESOLVED,   2, route_resolved) \
	X(ROUTE_ERROR,      3, route_error) \
	X(CONNECT_REQUEST,  4, connect_request) \
	X(CONNECT_RESPONSE, 5, connect_response) \
	X(CONNECT_ERROR,    6, connect_error) \
	X(UNREACHABLE,      7, unreachable) \
	X(REJECTED,         8, rejected) \
	X(ESTABLISHED,      9, established) \
	X(DISCONNECTED,    10, disconnected) \
	X(DEVICE_REMOVAL,  11, device_removal) \
	X(MULTICAST_JOIN,  12, multicast_join) \
	X(MULTICAST_ERROR, 13, multicast_error) \
	X(ADDR_CHANGE,     14, addr_change) \
	X(TIMEWAIT_EXIT,   15, timewait_exit)

#define VOCAB_MSG_TYPE(X) \
	X(NONE,                 0, "NONE", none) \
	X(ERROR,                1, "ERROR", error) \
	X(READY,                2, "READY", ready) \
	X(QEMU_FILE,            3, "QEMU FILE", qemu_file) \
	X(RAM_BLOCKS_REQUEST,   4, "RAM BLOCKS REQUEST", ram_blocks_request) \
	X(RAM_BLOCKS_RESULT,    5, "RAM BLOCKS RESULT", ram_blocks_result) \
	X(COMPRESS,             6, "COMPRESS", compress) \
	X(REGISTER_REQUEST,     7, "REGISTER REQUEST", register_request) \
	X(REGISTER_RESULT,      8, "REGISTER RESULT", register_result) \
	X(REGISTER_FINISHED,    9, "REGISTER FINISHED", register_finished) \
	X(UNREGISTER_REQUEST,  10, "UNREGISTER REQUEST", unregister_request) \
	X(UNREGISTER_FINISHED, 11, "UNREGISTER FINISHED", unregister_finished)

#define VOCAB_SIDE(X) \
	X(SRC, src, source) \
	X(DST, dst, dest)

#define VOCAB_FAULT_SITE(X) \
	X(REG_MR,           "reg_mr",          RES,   "errno(ENOMEM)") \
	X(DEREG_MR,         "dereg_mr",        RES,   "errno(ENOMEM)") \
	X(POST_SEND,        "post_send",       SEND,  "errno(EIO)")        /* every send WR */ \
	X(POST_SEND_WRITE,  "post_send.write", SEND,  "errno(EIO)") \
	X(POST_SEND_SEND,   "post_send.send",  SEND,  "errno(EIO)") \
	X(POST_RECV,        "post_recv",       RES,   "errno(EIO)") \
	X(WC_SEND,          "wc.send",         WC,    "status(GENERAL_ERR)")   /* successful completions, by opcode */ \
	X(WC_WRITE,         "wc.write",        WC,    "status(GENERAL_ERR)") \
	X(WC_RECV,          "wc.recv",         WC,    "status(GENERAL_ERR)") \
	X(EP_CREATE,        "ep_create",       SETUP, "errno(EHOSTUNREACH)")  /* address + route resolution */ \
	X(EP_SETUP,         "ep_setup",        SETUP, "errno(ENOMEM)")        /* PD, CQs, QP */ \
	X(MODIFY_QP,        "modify_qp",       SETUP, "errno(EINVAL)")        /* ->INIT, ->RTR/RTS, ->ERR */ \
	X(CONNECT,          "connect",         SETUP, "errno(ECONNREFUSED)") \
	X(ACCEPT,           "accept",          SETUP, "errno(ECONNREFUSED)") \
	X(ALLOC,            "alloc",           ALLOC, "errno(ENOMEM)")  /* an allocation of migbed's own */ \
	X(CM,               "cm",              CM,    "drop")           /* every CM event delivered */

#define VOCAB_FAULT_ACTION(X) \
	X(ERRNO, errno)            /* arg: errno value */ \
	X(STATUS, status)          /* arg: enum vocab_wc_status */ \
	X(QP_ERROR, qp_error) \
	X(DISCONNECT, disconnect) \
	X(DROP, drop) \
	X(DELAY, delay)            /* delay_ns */ \
	X(DUPLICATE, duplicate) \
	X(CORRUPT, corrupt)        /* arg: enum fault_corrupt */ \
	X(EVENT, event)            /* arg: enum vocab_cm_event */ \
	X(DIE, die)

/* What `corrupt` changes in a control message (in the sender's buffer, before posting), or,
 * at a completion site, in the completion. */
#define VOCAB_FAULT_CORRUPT(X) \
	X(LEN, len) \
	X(TYPE, type) \
	X(REPEAT, repeat) \
	X(PAYLOAD, payload) \
	X(WRID, wr_id)             /* wc.* only: the completion's wr_id */

/* Counts, derived: each table is dense from 0 (vocab.c asserts value == position). */
#define VOCAB_COUNT_ONE_(...) + 1
#define VOCAB_WC_STATUS_COUNT (0 VOCAB_WC_STATUS(VOCAB_COUNT_ONE_))
#define VOCAB_CM_EVENT_COUNT  (0 VOCAB_CM_EVENT(VOCAB_COUNT_ONE_))
#define VOCAB_MSG_TYPE_COUNT  (0 VOCAB_MSG_TYPE(VOCAB_COUNT_ONE_))
#define VOCAB_SIDE_COUNT      (0 VOCAB_SIDE(VOCAB_COUNT_ONE_))
#define VOCAB_FAULT_SITE_FIXED_COUNT (0 VOCAB_FAULT_SITE(VOCAB_COUNT_ONE_))

/* The enums (transport/ re-exports them under its own prefixes: HCA_WC_*, HCA_CM_*, WIRE_*). */
enum vocab_wc_status {
#define X(NAME, v, text) VOCAB_WC_##NAME = (v),
	VOCAB_WC_STATUS(X)
#undef X
};
enum vocab_cm_event {
#define X(NAME, v, tok) VOCAB_CM_##NAME = (v),
	VOCAB_CM_EVENT(X)
#undef X
};
enum vocab_msg_type {
#define X(NAME, v, qname, tok) VOCAB_MSG_##NAME = (v),
	VOCAB_MSG_TYPE(X)
#undef X
};
enum vocab_side {
#define X(NAME, tok, alias) VOCAB_SIDE_##NAME,
	VOCAB_SIDE(X)
#undef X
};

/* The fault vocabulary, named as faults/fault.h names it (FAULT_SITE_*, FAULT_ACT_*,
 * FAULT_CORRUPT_*): the fixed sites, then one cm.TOKEN site per CM event (FAULT_SITE_CM_EVENT
 * + enum vocab_cm_event), then one msg.TOKEN site per message type (FAULT_SITE_MSG + type). */
enum fault_site {
#define X(NAME, tok, cls, canon) FAULT_SITE_##NAME,
	VOCAB_FAULT_SITE(X)
#undef X
	FAULT_SITE_CM_EVENT,
	FAULT_SITE_MSG = FAULT_SITE_CM_EVENT + VOCAB_CM_EVENT_COUNT,
	FAULT_SITE_COUNT = FAULT_SITE_MSG + VOCAB_MSG_TYPE_COUNT
};
enum fault_action {
#define X(NAME, tok) FAULT_ACT_##NAME,
	VOCAB_FAULT_ACTION(X)
#undef X
	FAULT_ACT_COUNT
};
enum fault_corrupt {
#define X(NAME, tok) FAULT_CORRUPT_##NAME,
	VOCAB_FAULT_CORRUPT(X)
#undef X
	FAULT_CORRUPT_COUNT
};

/* Names; out of range: the fallback noted. */
const char *vocab_wc_status_name(int status);   /* "REM_ACCESS_ERR"; "UNKNOWN" */
const char *vocab_wc_status_text(int status);   /* "remote access error"; "unknown" */
const char *vocab_cm_event_name(int type);      /* "RDMA_CM_EVENT_ESTABLISHED"; "UNKNOWN EVENT" */
const char *vocab_cm_event_token(int type);     /* "established"; NULL */
const char *vocab_msg_type_name(unsigned type); /* "REGISTER REQUEST"; "??BAD CONTROL VALUE??" */
const char *vocab_msg_type_token(unsigned type);/* "register_request"; "bad" */
const char *vocab_side_token(int side);         /* "src"; "?" */
const char *vocab_side_alias(int side);         /* "source", "dest"; "?" */
const char *vocab_fault_site_token(int site);   /* "reg_mr", "cm.established", "msg.ready"; "?" */
const char *vocab_fault_site_canonical(int site); /* "errno(ENOMEM)", "drop"; "?" */
/* The site of a CM event / a control message type (asserted in range). */
enum fault_site fault_site_cm(int event_type);
enum fault_site fault_site_msg(uint32_t msg_type);

/* Parsers: the value, or -1 if the name is not in the table. */
int vocab_wc_status_lookup(const char *name);   /* "REM_ACCESS_ERR" */
int vocab_cm_event_lookup(const char *token);   /* "established" */
int vocab_msg_type_lookup(const char *token);   /* "register_request" */
int vocab_side_lookup(const char *token);       /* "src" */
int vocab_side_parse(const char *name);         /* "src" or its alias "source" */
int vocab_fault_site_lookup(const char *token); /* "msg.ready" */

#endif
