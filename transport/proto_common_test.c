/* SPDX-License-Identifier: MIT */
/* proto_common_test - the control channel's framing shared by source and destination
 * (transport/proto_common.c): header checks of a received message and the causes they name,
 * a SEND of a type QEMU does not know, the mapping of completion and wait errors to causes,
 * and control buffers that cannot be allocated. On the simulated HCA. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim/mem.h"
#include "transport/proto_internal.h"
#include "transport/stream.h"

#define ADDR "model:ctl"
#define TIMEOUT_NS (10ull * 1000 * 1000 * 1000)

/* ---- allocation failures ------------------------------------------------------------------
 * The library's mmap comes here (a definition in the executable interposes the C library's;
 * the C library's own allocator does not call through it): fail_alloc_in = N makes the N-th
 * anonymous mapping of a control buffer's size or more from now fail, once. */
static int fail_alloc_in;

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fail_alloc_in > 0 && (flags & MAP_ANONYMOUS) && len >= WIRE_CONTROL_BUF_BYTES &&
	    --fail_alloc_in == 0) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

/* ---- a connected pair of endpoints on the model ------------------------------------------- */
struct pair {
	hca_world *w;
	hca_listener *l;
	hca_ep *src, *dst;
	struct hca_qp_caps caps;
};

static int accept_progress(void *arg)
{
	struct pair *p = arg;
	struct hca_cm_event req;
	struct hca_conn_params cp = { 0 };
	hca_ep *ep;
	if (p->dst)
		return -1;
	int rc = hca_listener_poll(p->l, &ep, &req);
	if (rc <= 0)
		return rc;
	assert_int_equal(hca_ep_setup(ep, &p->caps), 0);
	assert_int_equal(hca_accept(ep, &cp), 0);
	p->dst = ep;
	return 1;
}

static void pair_open(struct pair *p)
{
	struct hca_conn_params cp = { .retry_count = 5 };
	struct hca_cm_event reply;
	memset(p, 0, sizeof *p);
	p->caps = (struct hca_qp_caps){ .max_send_wr = 16, .max_recv_wr = 3, .max_send_sge = 1,
					.max_recv_sge = 1, .cq_entries = 19 };
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, NULL, &p->w), 0);
	assert_int_equal(hca_world_add_progress(p->w, accept_progress, p), 0);
	assert_int_equal(hca_listen(p->w, VOCAB_SIDE_DST, ADDR, &p->l), 0);
	assert_int_equal(hca_ep_create(p->w, VOCAB_SIDE_SRC, ADDR, &p->src), 0);
	assert_int_equal(hca_ep_setup(p->src, &p->caps), 0);
	assert_int_equal(hca_connect(p->src, &cp, TIMEOUT_NS, &reply), 0);
	assert_non_null(p->dst);
}

static void pair_close(struct pair *p)
{
	hca_ep_destroy(p->src);
	hca_ep_destroy(p->dst);
	hca_listener_close(p->l);
	assert_int_equal(hca_world_live_objects(p->w), 0);
	hca_world_free(p->w);
}

/* A SEND of type 200 (not QEMU's) goes out and arrives whole; only known types are counted. */
static void test_send_of_an_unknown_type(void **state)
{
	(void)state;
	struct pair p;
	pair_open(&p);
	struct proto_stats ss = { 0 }, ds = { 0 };
	struct ctl s, d;
	struct cause_ctx cx = { 0 };
	assert_int_equal(ctl_init(&s, p.src, VOCAB_SIDE_SRC, false, &ss, &cx), 0);
	assert_int_equal(ctl_init(&d, p.dst, VOCAB_SIDE_DST, false, &ds, &cx), 0);
	assert_int_equal(ctl_post_recv(&d, WIRE_SLOT_CONTROL, &cx), 0);
	assert_int_equal(ctl_post_send(&s, 200, 1, "abc", 3, &cx), 0);
	for (int t = 0; t < WIRE_TYPE_COUNT; t++)
		assert_int_equal(ss.msgs_sent[t], 0);
	struct hca_wc wc;
	assert_int_equal(hca_wait(p.dst, HCA_CQ_RECV, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.status, HCA_WC_SUCCESS);
	assert_int_equal(wc.wr_id, CTL_WRID_RECV(WIRE_SLOT_CONTROL));
	assert_int_equal(wc.byte_len, WIRE_HDR_BYTES + 3);
	struct wire_hdr h;
	assert_int_equal(ctl_decode(&d, WIRE_SLOT_CONTROL, wc.byte_len, WIRE_NONE, &h, &cx), 0);
	assert_int_equal(h.type, 200);
	assert_int_equal(h.len, 3);
	assert_int_equal(h.repeat, 1);
	assert_memory_equal(ctl_data(&d, WIRE_SLOT_CONTROL), "abc", 3);
	for (int t = 0; t < WIRE_TYPE_COUNT; t++)
		assert_int_equal(ds.msgs_recv[t], 0);
	/* but waiting for a READY, it is the wrong message */
	assert_int_equal(ctl_decode(&d, WIRE_SLOT_CONTROL, wc.byte_len, WIRE_READY, &h, &cx),
			 -CAUSE_UNEXPECTED_MESSAGE);
	assert_string_equal(cx.detail, "Was expecting a READY (2) control message, but got: ??BAD CONTROL VALUE?? "
			    "(200), length: 3");
	assert_int_equal(hca_wait(p.src, HCA_CQ_SEND, TIMEOUT_NS, &wc), 1);
	assert_int_equal(wc.wr_id, WIRE_WRID_SEND_CONTROL);
	/* a known type is counted */
	memset(&cx, 0, sizeof cx);
	assert_int_equal(ctl_post_send(&s, WIRE_READY, 1, NULL, 0, &cx), 0);
	assert_int_equal(ss.msgs_sent[WIRE_READY], 1);
	ctl_fini(&s);
	ctl_fini(&d);
	pair_close(&p);
}

static void test_send_too_long(void **state)
{
	(void)state;
	struct ctl c;
	memset(&c, 0, sizeof c);          /* never touched: refused before any buffer is used */
	struct cause_ctx cx = { 0 };
	assert_int_equal(ctl_post_send(&c, WIRE_QEMU_FILE, 1, "", WIRE_CONTROL_MAX_DATA + 1, &cx), -CAUSE_INTERNAL);
	assert_string_equal(cx.detail, "control message of 524273 bytes exceeds 512 KiB");
}

/* ---- ctl_decode on hand-made messages ----------------------------------------------------- */
static uint8_t slot_buf[WIRE_HDR_BYTES + 64];

/* The header (len, type, repeat) in the DATA slot; decode it as byte_len bytes wanting want. */
static int decode(uint32_t len, uint32_t type, uint32_t repeat, uint32_t byte_len, uint32_t want,
		  struct proto_stats *st, struct cause_ctx *cx)
{
	struct ctl c;
	memset(&c, 0, sizeof c);
	c.buf[WIRE_SLOT_DATA] = slot_buf;
	c.stats = st;
	struct wire_hdr h = { .len = len, .type = type, .repeat = repeat };
	assert_int_equal(wire_hdr_encode(&h, slot_buf, sizeof slot_buf), WIRE_HDR_BYTES);
	memset(cx, 0, sizeof *cx);
	struct wire_hdr got;
	int rc = ctl_decode(&c, WIRE_SLOT_DATA, byte_len, want, &got, cx);
	if (rc == 0) {
		assert_int_equal(got.type, type);
		assert_int_equal(got.len, len);
	}
	return rc;
}

static void test_decode_checks(void **state)
{
	(void)state;
	struct proto_stats st = { 0 };
	struct cause_ctx cx;
	assert_int_equal(decode(0, WIRE_READY, 1, 8, WIRE_READY, &st, &cx), -CAUSE_MESSAGE_MALFORMED);
	assert_string_equal(cx.detail, "control message of 8 bytes is shorter than its header");
	assert_int_equal(decode(WIRE_CONTROL_MAX_DATA + 1, WIRE_QEMU_FILE, 1, 64, WIRE_QEMU_FILE, &st, &cx),
			 -CAUSE_MESSAGE_MALFORMED);
	assert_string_equal(cx.detail, "too long length: 524273");
	assert_int_equal(decode(4, WIRE_QEMU_FILE, 1, 24, WIRE_QEMU_FILE, &st, &cx), -CAUSE_MESSAGE_MALFORMED);
	assert_string_equal(cx.detail, "Malformed length: 4 byte_len 24");
	/* the type is checked first, as QEMU's exchange_get_response: a wrong type with a bad length
	 * is named by its type */
	assert_int_equal(decode(WIRE_CONTROL_MAX_DATA + 1, WIRE_READY, 1, 64, WIRE_QEMU_FILE, &st, &cx),
			 -CAUSE_UNEXPECTED_MESSAGE);
	assert_string_equal(cx.detail, "Was expecting a QEMU FILE (3) control message, but got: READY (2), "
			    "length: 524273");
	/* repeat is not decode's business (issue 12): a QEMU FILE with any repeat, as a QEMU <= 8.1
	 * source's uninitialised header, is accepted; the registration round checks it */
	assert_int_equal(decode(0, WIRE_QEMU_FILE, 0xdeadbeef, 16, WIRE_QEMU_FILE, &st, &cx), 0);
	assert_int_equal(decode(0, WIRE_REGISTER_REQUEST, WIRE_MAX_REPEAT + 1, 16, WIRE_NONE, &st, &cx), 0);
	struct wire_hdr h = { .repeat = WIRE_MAX_REPEAT + 1 };
	assert_int_equal(ctl_check_repeat(&h, &cx), -CAUSE_TOO_MANY_REQUESTS);
	assert_string_equal(cx.detail, "rdma: Too many requests in this message (4097).Bailing.");
	h.repeat = WIRE_MAX_REPEAT;
	memset(&cx, 0, sizeof cx);
	assert_int_equal(ctl_check_repeat(&h, &cx), 0);

	/* with any type wanted, an ERROR is the caller's to judge */
	assert_int_equal(decode(0, WIRE_ERROR, 1, 16, WIRE_NONE, &st, &cx), 0);
	assert_int_equal(decode(0, WIRE_ERROR, 1, 16, WIRE_READY, &st, &cx), -CAUSE_PEER_ERROR);
	assert_string_equal(cx.detail, "Was expecting a READY (2) control message, but got: ERROR (1), length: 0");
	assert_int_equal(decode(0, WIRE_ERROR, 1, 16, WIRE_ERROR, &st, &cx), 0);   /* asked for */
	assert_int_equal(decode(16, WIRE_REGISTER_RESULT, 1, 32, WIRE_READY, &st, &cx), -CAUSE_UNEXPECTED_MESSAGE);
	assert_string_equal(cx.detail, "Was expecting a READY (2) control message, but got: REGISTER RESULT (8), "
			    "length: 16");
	assert_int_equal(decode(WIRE_CONTROL_MAX_DATA, WIRE_QEMU_FILE, WIRE_MAX_REPEAT,
				WIRE_CONTROL_BUF_BYTES, WIRE_NONE, &st, &cx), 0);      /* the largest */
	/* counted: every message whose length is right, of the wanted type or not */
	assert_int_equal(st.msgs_recv[WIRE_ERROR], 3);
	assert_int_equal(st.msgs_recv[WIRE_REGISTER_RESULT], 1);
	assert_int_equal(st.msgs_recv[WIRE_REGISTER_REQUEST], 1);
	assert_int_equal(st.msgs_recv[WIRE_READY], 0);
	assert_int_equal(st.msgs_recv[WIRE_QEMU_FILE], 2);
	assert_int_equal(cx.cause, 0);
}

static void test_status_and_wait_causes(void **state)
{
	(void)state;
	assert_int_equal(ctl_status_cause(HCA_WC_REM_ACCESS_ERR, CAUSE_INTERNAL), CAUSE_REMOTE_ACCESS_ERROR);
	assert_int_equal(ctl_status_cause(HCA_WC_RNR_RETRY_EXC_ERR, CAUSE_INTERNAL), CAUSE_RNR_RETRY_EXCEEDED);
	assert_int_equal(ctl_status_cause(HCA_WC_RETRY_EXC_ERR, CAUSE_INTERNAL), CAUSE_TRANSPORT_RETRY_EXCEEDED);
	assert_int_equal(ctl_status_cause(HCA_WC_WR_FLUSH_ERR, CAUSE_INTERNAL), CAUSE_QP_ERROR);
	assert_int_equal(ctl_status_cause(HCA_WC_LOC_LEN_ERR, CAUSE_CONTROL_SEND_FAILED), CAUSE_CONTROL_SEND_FAILED);
	assert_int_equal(ctl_wait_cause(-ECONNRESET), CAUSE_PEER_DISCONNECTED);
	assert_int_equal(ctl_wait_cause(-ENODEV), CAUSE_DEVICE_REMOVED);
	assert_int_equal(ctl_wait_cause(-EINVAL), CAUSE_INTERNAL);
	assert_int_equal(ctl_wait_cause(0), CAUSE_INTERNAL);
}

/* The N-th control buffer cannot be allocated: RESOURCE_EXHAUSTED naming it, and ctl_fini
 * releases what was set up (no MR left behind). */
static void test_control_buffer_out_of_memory(void **state)
{
	(void)state;
	for (int n = 1; n <= WIRE_SLOTS; n++) {
		struct pair p;
		pair_open(&p);
		struct proto_stats st = { 0 };
		struct ctl c;
		struct cause_ctx cx = { 0 };
		fail_alloc_in = n;
		assert_int_equal(ctl_init(&c, p.src, VOCAB_SIDE_SRC, false, &st, &cx), -CAUSE_RESOURCE_EXHAUSTED);
		assert_int_equal(fail_alloc_in, 0);
		char want[64];
		snprintf(want, sizeof want, "control buffer %d: ", n - 1);   /* then the reason */
		if (strncmp(cx.detail, want, strlen(want)) != 0)
			fail_msg("detail '%s', want '%s...'", cx.detail, want);
		for (int i = 0; i < WIRE_SLOTS; i++)
			assert_true((c.buf[i] != NULL) == (i < n - 1));
		ctl_fini(&c);
		for (int i = 0; i < WIRE_SLOTS; i++)
			assert_null(c.mr[i]);
		pair_close(&p);            /* asserts no live MR */
	}
}

/* A STAMP block's digest (VERIFY, docs/protocol.md) is XXH3-128 seeded with the block's index
 * over each page's 8-byte stamp in turn, whatever the batching (leaves written and untouched,
 * a block that is not a multiple of the batch); a BYTES block is digested from its bytes. */
static void test_mem_digest_page_by_page(void **state)
{
	(void)state;
	const struct mem_block_spec specs[] = { { "pc.ram", 3000 * 4096ull }, { "small", 3 * 4096ull } };
	static const enum mem_repr reprs[] = { MEM_REPR_STAMP, MEM_REPR_BYTES };
	for (int r = 0; r < 2; r++) {
		mem *m = NULL;
		assert_int_equal(mem_new(4096, 2, specs, reprs[r], 7, &m), 0);
		mem_write_pages(m, 0, 510, 5);         /* across the first leaf boundary (512) */
		mem_write_pages(m, 0, 2999, 1);
		mem_write_pages(m, 1, 1, 1);
		for (size_t b = 0; b < 2; b++) {
			digest_state *h = digest_begin((uint64_t)b);
			assert_non_null(h);
			for (uint64_t pg = 0; pg < mem_block_pages(m, b); pg++) {
				uint64_t st = mem_page_stamp(m, b, pg);
				digest_add(h, &st, sizeof st);
			}
			struct digest want = digest_end(h), got;
			assert_int_equal(proto_mem_digest(m, b, &got), 0);
			if (reprs[r] == MEM_REPR_STAMP)
				assert_true(digest_eq(got, want));
			else
				assert_false(digest_eq(got, want));
		}
		mem_free(m);
	}
}

/* A BYTES block 0 of non-zero content digests to XXH3-128 (seed 0) of its bytes, the value
 * `xxhsum -H2` prints for them:
 *   python3 -c "import sys; sys.stdout.buffer.write(bytes((i*7+3)&0xff for i in range(8192)))" | xxhsum -H2
 * and memories differing in one byte anywhere (or by a page of zeros) digest differently. */
static void test_mem_digest_known_and_one_byte(void **state)
{
	(void)state;
	const struct mem_block_spec spec[] = { { "ram", 2 * 4096ull } };
	mem *m = NULL;
	assert_int_equal(mem_new(4096, 1, spec, MEM_REPR_BYTES, 1, &m), 0);
	uint8_t *p = mem_block_ptr(m, 0);
	for (size_t i = 0; i < 8192; i++)
		p[i] = (uint8_t)(i * 7 + 3);
	struct digest base, d;
	char hex[DIGEST_HEX_LEN];
	assert_int_equal(proto_mem_digest(m, 0, &base), 0);
	assert_string_equal(digest_hex(base, hex), "f36491bbad0eb9174bdd498cfc5719ba");
	for (size_t i = 0; i < 8192; i++) {
		p[i] ^= 0x80;
		assert_int_equal(proto_mem_digest(m, 0, &d), 0);
		assert_false(digest_eq(d, base));
		p[i] ^= 0x80;
	}
	assert_int_equal(proto_mem_digest(m, 0, &d), 0);
	assert_true(digest_eq(d, base));
	memset(p, 0, 8192);              /* all zero: the one byte "Z" */
	assert_int_equal(proto_mem_digest(m, 0, &d), 0);
	assert_string_equal(digest_hex(d, hex), digest_hex(digest_of("Z", 1), (char[DIGEST_HEX_LEN]){ 0 }));
	mem_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_of_an_unknown_type),
		cmocka_unit_test(test_send_too_long),
		cmocka_unit_test(test_decode_checks),
		cmocka_unit_test(test_status_and_wait_causes),
		cmocka_unit_test(test_control_buffer_out_of_memory),
		cmocka_unit_test(test_mem_digest_page_by_page),
		cmocka_unit_test(test_mem_digest_known_and_one_byte),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
