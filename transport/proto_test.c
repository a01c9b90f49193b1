/* SPDX-License-Identifier: MIT */
/* proto_test - the protocol's write path (merging, chunk registration, COMPRESS, transit
 * serialisation) on the simulated HCA, and the chunk-size negotiation rule. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "transport/proto.h"
#include "transport/stream.h"

#define MIB (1ull << 20)
#define PAGE 4096ull

struct h {
	evlog *ev;
	hca_world *w;
	mem *ms, *md;
	proto_src *s;
	proto_dst *d;
};

static void put_header(struct h *h)
{
	struct stream_buf b = { 0 };
	stream_put_be32(&b, STREAM_MAGIC);
	stream_put_be32(&b, STREAM_VERSION);
	stream_put_u8(&b, STREAM_RAM_START);
	stream_put_be64(&b, mem_block_bytes(h->ms, 0) | STREAM_FLAG_MEM_SIZE);
	stream_put_u8(&b, 6);
	stream_put_bytes(&b, "pc.ram", 6);
	stream_put_be64(&b, mem_block_bytes(h->ms, 0));
	assert_int_equal(proto_src_put(h->s, b.data, b.len), 0);
	stream_buf_free(&b);
}

static void put_eos(struct h *h)
{
	uint8_t eos[8] = { 0, 0, 0, 0, 0, 0, 0, STREAM_FLAG_EOS };
	assert_int_equal(proto_src_put(h->s, eos, 8), 0);
	assert_int_equal(proto_src_flush(h->s), 0);
}

/* Connected source and destination, setup round done, a round started. */
static void open_h(struct h *h, unsigned src_shift, unsigned dst_shift, uint64_t guest_bytes)
{
	static const vclock zero;
	memset(h, 0, sizeof *h);
	assert_int_equal(evlog_open(NULL, &zero, &h->ev), 0);
	assert_int_equal(hca_world_new(HCA_BACKEND_MODEL, NULL, NULL, h->ev, &h->w), 0);
	evlog_set_clock(h->ev, hca_world_clock(h->w));
	struct mem_block_spec spec = { .name = "pc.ram", .size_bytes = guest_bytes };
	assert_int_equal(mem_new(PAGE, 1, &spec, MEM_REPR_STAMP, 1, &h->ms), 0);
	assert_int_equal(mem_new(PAGE, 1, &spec, MEM_REPR_STAMP, 1, &h->md), 0);
	struct proto_opts o;
	proto_opts_defaults(&o);
	o.chunk_shift = dst_shift;
	assert_int_equal(proto_dst_new(h->w, h->md, &o, &h->d), 0);
	assert_int_equal(proto_dst_listen(h->d, "model:t"), 0);
	assert_int_equal(hca_world_add_progress(h->w, proto_dst_progress, h->d), 0);
	o.chunk_shift = src_shift;
	assert_int_equal(proto_src_new(h->w, h->ms, &o, &h->s), 0);
	assert_int_equal(proto_src_connect(h->s, "model:t"), 0);
	put_header(h);
	assert_int_equal(proto_src_reg_start(h->s), 0);
	assert_int_equal(proto_src_reg_stop(h->s, true), 0);
	put_eos(h);
	uint8_t part = STREAM_RAM_PART;
	assert_int_equal(proto_src_put(h->s, &part, 1), 0);
	assert_int_equal(proto_src_reg_start(h->s), 0);
}

static void close_h_expect(struct h *h, enum proto_dst_state want)
{
	proto_src_free(h->s);
	for (int i = 0; i < 100 && proto_dst_progress(h->d) >= 0; i++)
		hca_sleep(h->w, 1000000);
	if (want != PROTO_DST_RUNNING)
		assert_int_equal(proto_dst_state(h->d), want);
	proto_dst_free(h->d);
	assert_int_equal(hca_world_live_objects(h->w), 0);
	hca_world_free(h->w);
	mem_free(h->ms);
	mem_free(h->md);
	evlog_close(h->ev);
}

static void close_h(struct h *h)
{
	close_h_expect(h, PROTO_DST_RUNNING);
}

static int save_range(struct h *h, uint64_t first, uint64_t n)
{
	for (uint64_t p = first; p < first + n; p++) {
		int rc = proto_src_save_page(h->s, 0, p);
		if (rc)
			return rc;
	}
	return 0;
}

static int end_round(struct h *h)
{
	int rc = proto_src_reg_stop(h->s, false);
	return rc ? rc : proto_src_poll(h->s);
}

/* 2 MiB of dirty, non-zero pages at 1 MiB chunks: two writes, cut at the chunk boundary. */
static void test_merge_cut_at_chunk(void **state)
{
	(void)state;
	struct h h;
	open_h(&h, 20, 20, 16 * MIB);
	mem_write_pages(h.ms, 0, 0, 512);
	assert_int_equal(save_range(&h, 0, 512), 0);
	assert_int_equal(end_round(&h), 0);
	const struct proto_stats *st = proto_src_stats(h.s);
	assert_int_equal(st->rdma_writes, 2);
	assert_int_equal(st->rdma_bytes, 2 * MIB);
	assert_int_equal(st->registrations, 2);
	assert_int_equal(st->msgs_sent[WIRE_REGISTER_REQUEST], 2);
	assert_int_equal(st->normal_pages, 512);
	close_h(&h);
}

/* At 64 MiB chunks a write is capped at 2 MiB (RDMA_MERGE_MAX); one registration. */
static void test_merge_cap_2mib(void **state)
{
	(void)state;
	struct h h;
	open_h(&h, 26, 26, 16 * MIB);
	mem_write_pages(h.ms, 0, 0, 1024);
	assert_int_equal(save_range(&h, 0, 1024), 0);
	assert_int_equal(end_round(&h), 0);
	const struct proto_stats *st = proto_src_stats(h.s);
	assert_int_equal(st->rdma_writes, 2);
	assert_int_equal(st->registrations, 1);
	/* one chunk: the second write waited for the first (at most one in flight per chunk) */
	assert_int_equal(st->max_writes_in_flight, 1);
	close_h(&h);
}

/* Non-contiguous pages are separate writes; writes in different chunks overlap. */
static void test_non_contiguous(void **state)
{
	(void)state;
	struct h h;
	open_h(&h, 20, 20, 16 * MIB);
	mem_write_pages(h.ms, 0, 0, 1);
	mem_write_pages(h.ms, 0, 2, 1);
	mem_write_pages(h.ms, 0, 256, 1);   /* chunk 1 */
	assert_int_equal(proto_src_save_page(h.s, 0, 0), 0);
	assert_int_equal(proto_src_save_page(h.s, 0, 2), 0);
	assert_int_equal(proto_src_save_page(h.s, 0, 256), 0);
	assert_int_equal(end_round(&h), 0);
	const struct proto_stats *st = proto_src_stats(h.s);
	assert_int_equal(st->rdma_writes, 3);
	assert_int_equal(st->registrations, 2);
	/* both chunks registered now: a write to each is in flight at the same time */
	mem_write_pages(h.ms, 0, 1, 1);
	mem_write_pages(h.ms, 0, 257, 1);
	assert_int_equal(proto_src_reg_start(h.s), 0);
	assert_int_equal(proto_src_save_page(h.s, 0, 1), 0);
	assert_int_equal(proto_src_save_page(h.s, 0, 257), 0);
	assert_int_equal(end_round(&h), 0);
	assert_int_equal(st->rdma_writes, 5);
	assert_int_equal(st->max_writes_in_flight, 2);
	close_h(&h);
}

/* An all-zero buffer of an unregistered chunk is a COMPRESS; once the chunk is registered,
 * zero pages travel as data. */
static void test_zero_compress_only_before_registration(void **state)
{
	(void)state;
	struct h h;
	open_h(&h, 20, 20, 16 * MIB);
	assert_int_equal(save_range(&h, 0, 16), 0);       /* never written: zero */
	assert_int_equal(proto_src_flush(h.s), 0);
	const struct proto_stats *st = proto_src_stats(h.s);
	assert_int_equal(st->msgs_sent[WIRE_COMPRESS], 1);
	assert_int_equal(st->zero_pages, 16);
	assert_int_equal(st->rdma_writes, 0);
	assert_int_equal(st->registrations, 0);
	mem_write_pages(h.ms, 0, 100, 1);                 /* registers chunk 0 */
	assert_int_equal(proto_src_save_page(h.s, 0, 100), 0);
	assert_int_equal(proto_src_flush(h.s), 0);
	assert_int_equal(save_range(&h, 200, 4), 0);      /* zero, but chunk 0 is registered now */
	assert_int_equal(end_round(&h), 0);
	assert_int_equal(st->msgs_sent[WIRE_COMPRESS], 1);
	assert_int_equal(st->rdma_writes, 2);
	assert_int_equal(st->zero_pages, 16);
	close_h(&h);
}

/* Source chunks larger than the destination's: the cached rkey covers 1 MiB only, and the
 * 2 MiB write is rejected by the (simulated) HCA. */
static void test_larger_source_chunk_fails(void **state)
{
	(void)state;
	struct h h;
	open_h(&h, 26, 20, 16 * MIB);
	mem_write_pages(h.ms, 0, 0, 512);
	int rc = save_range(&h, 0, 512);
	if (rc == 0)
		rc = end_round(&h);
	assert_int_equal(rc, -CAUSE_REMOTE_ACCESS_ERROR);
	assert_int_equal(proto_src_cause(h.s)->cause, CAUSE_REMOTE_ACCESS_ERROR);
	assert_non_null(strstr(proto_src_cause(h.s)->detail, "REM_ACCESS_ERR"));
	close_h_expect(&h, PROTO_DST_FAILED);
}

static void test_negotiation_rule(void **state)
{
	(void)state;
	unsigned use;
	/* equal sizes, announced or assumed (old peer = 1M) */
	assert_int_equal(proto_negotiate_chunk(26, true, 26, false, true, &use), 0);
	assert_int_equal(use, 26);
	assert_int_equal(proto_negotiate_chunk(20, false, 0, false, true, &use), 0);
	assert_int_equal(use, 20);
	/* larger source: adapt falls back, refuse fails */
	assert_int_equal(proto_negotiate_chunk(26, true, 20, false, false, &use), 0);
	assert_int_equal(use, 20);
	assert_int_equal(proto_negotiate_chunk(26, true, 20, false, true, &use), -CAUSE_CHUNK_SIZE_MISMATCH);
	/* an old destination (flag masked): assume 1 MiB */
	assert_int_equal(proto_negotiate_chunk(30, false, 30, false, false, &use), 0);
	assert_int_equal(use, 20);
	assert_int_equal(proto_negotiate_chunk(26, false, 26, false, true, &use), -CAUSE_CHUNK_SIZE_MISMATCH);
	/* smaller source: adapt keeps it (works, destination pins more); refuse is strict */
	assert_int_equal(proto_negotiate_chunk(20, true, 26, false, false, &use), 0);
	assert_int_equal(use, 20);
	assert_int_equal(proto_negotiate_chunk(20, true, 26, false, true, &use), -CAUSE_CHUNK_SIZE_MISMATCH);
	/* pin-all: nothing needs to agree */
	for (unsigned s = 20; s <= 30; s++)
		for (unsigned d = 20; d <= 30; d++) {
			assert_int_equal(proto_negotiate_chunk(s, true, d, true, true, &use), 0);
			assert_int_equal(use, s);
		}
	/* property: adapt never leaves a source chunk larger than the destination's */
	for (unsigned s = 20; s <= 30; s++)
		for (unsigned d = 20; d <= 30; d++) {
			assert_int_equal(proto_negotiate_chunk(s, true, d, false, false, &use), 0);
			assert_true(use <= d && use <= s);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_cut_at_chunk),
		cmocka_unit_test(test_merge_cap_2mib),
		cmocka_unit_test(test_non_contiguous),
		cmocka_unit_test(test_zero_compress_only_before_registration),
		cmocka_unit_test(test_larger_source_chunk_fails),
		cmocka_unit_test(test_negotiation_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
