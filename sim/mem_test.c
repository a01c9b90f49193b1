/* SPDX-License-Identifier: MIT */
/* mem_test - the guest memory model: stamps, both representations, copy, compare. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include "sim/mem.h"

#define PAGE 4096u
#define SEED 42u

static const struct mem_block_spec two_blocks[] = {
	{ "pc.ram", 32 * PAGE },
	{ "vga.vram", 8 * PAGE },
};

static mem *new_mem(enum mem_repr repr, uint64_t seed)
{
	mem *m = NULL;
	assert_int_equal(mem_new(PAGE, 2, two_blocks, repr, seed, &m), 0);
	assert_non_null(m);
	return m;
}

/* The same guest activity on any memory: overlapping ranges, repeated writes. */
static void guest_activity(mem *m)
{
	mem_write_pages(m, 0, 0, 10);
	mem_write_pages(m, 0, 3, 4);
	mem_write_pages(m, 0, 5, 1);
	mem_write_pages(m, 0, 20, 12);
	mem_write_pages(m, 1, 1, 2);
	mem_write_pages(m, 1, 7, 1);
}

static uint64_t le64_at(const void *p)
{
	const uint8_t *b = p;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | b[i];
	return v;
}

static void test_write_same_stamps_in_both_reprs(void **state)
{
	(void)state;
	mem *by = new_mem(MEM_REPR_BYTES, SEED), *st = new_mem(MEM_REPR_STAMP, SEED);
	mem *other_seed = new_mem(MEM_REPR_STAMP, SEED + 1);
	guest_activity(by);
	guest_activity(st);
	guest_activity(other_seed);
	size_t differs_from_other_seed = 0;
	for (size_t b = 0; b < 2; b++) {
		for (uint64_t p = 0; p < mem_block_pages(st, b); p++) {
			uint64_t s = mem_page_stamp(st, b, p);
			assert_int_equal(mem_page_stamp(by, b, p), s);
			differs_from_other_seed += mem_page_stamp(other_seed, b, p) != s;
		}
	}
	/* block 0: pages 0..9 and 20..31 written, 10..19 never */
	assert_int_equal(mem_page_stamp(st, 0, 15), 0);
	assert_true(mem_page_stamp(st, 0, 4) != 0);
	/* page 4 was written twice: its stamp differs from a page written once */
	mem *once = new_mem(MEM_REPR_STAMP, SEED);
	mem_write_pages(once, 0, 4, 1);
	assert_true(mem_page_stamp(once, 0, 4) != mem_page_stamp(st, 0, 4));
	assert_int_equal(differs_from_other_seed, 22 + 3);
	/* BYTES layout: first 8 bytes are the stamp, little endian */
	const uint8_t *pg = (const uint8_t *)mem_block_ptr(by, 0) + 4 * PAGE;
	assert_int_equal(le64_at(pg), mem_page_stamp(st, 0, 4));
	assert_int_equal(mem_compare(by, st, NULL, NULL), 0);
	mem_free(once);
	mem_free(other_seed);
	mem_free(st);
	mem_free(by);
}

static void test_copy_every_repr_combination(void **state)
{
	(void)state;
	static const enum mem_repr reprs[] = { MEM_REPR_BYTES, MEM_REPR_STAMP };
	for (int s = 0; s < 2; s++) {
		for (int d = 0; d < 2; d++) {
			mem *src = new_mem(reprs[s], SEED), *dst = new_mem(reprs[d], SEED + 7);
			guest_activity(src);
			mem_write_pages(dst, 0, 12, 3); /* stale data the copy must overwrite */
			assert_int_equal(mem_compare(src, dst, NULL, NULL), 1);
			for (size_t b = 0; b < 2; b++) {
				uint64_t bytes = mem_block_bytes(src, b);
				/* in two uneven pieces, like chunked RDMA WRITEs */
				assert_int_equal(mem_copy(src, b, 0, dst, b, 3 * PAGE, 3 * PAGE), 0);
				assert_int_equal(mem_copy(src, b, 0, dst, b, 0, 3 * PAGE), 0);
				assert_int_equal(mem_copy(src, b, 3 * PAGE, dst, b, 3 * PAGE, bytes - 3 * PAGE), 0);
			}
			size_t bb = 99;
			uint64_t bp = 99;
			assert_int_equal(mem_compare(src, dst, &bb, &bp), 0);
			assert_int_equal(mem_compare(dst, src, &bb, &bp), 0);
			assert_int_equal(mem_page_stamp(dst, 0, 21), mem_page_stamp(src, 0, 21));
			assert_true(mem_pages_zero(dst, 0, 12, 3));
			mem_free(src);
			mem_free(dst);
		}
	}
}

/* Any representation pair: a and b get the same activity, then b gets one more write. */
static void test_single_page_difference_found(void **state)
{
	(void)state;
	static const enum mem_repr reprs[] = { MEM_REPR_BYTES, MEM_REPR_STAMP };
	for (int i = 0; i < 4; i++) {
		mem *a = new_mem(reprs[i / 2], SEED), *b = new_mem(reprs[i % 2], SEED);
		guest_activity(a);
		guest_activity(b);
		assert_int_equal(mem_compare(a, b, NULL, NULL), 0);
		mem_write_pages(b, 1, 5, 1);
		size_t bb = 99;
		uint64_t bp = 99;
		assert_int_equal(mem_compare(a, b, &bb, &bp), 1);
		assert_int_equal(bb, 1);
		assert_int_equal(bp, 5);
		/* the first difference is reported when there are several */
		mem_write_pages(a, 0, 31, 1);
		assert_int_equal(mem_compare(a, b, &bb, &bp), 1);
		assert_int_equal(bb, 0);
		assert_int_equal(bp, 31);
		mem_free(a);
		mem_free(b);
	}
}

static void test_misplaced_copy_detected(void **state)
{
	(void)state;
	static const enum mem_repr reprs[] = { MEM_REPR_BYTES, MEM_REPR_STAMP };
	for (int i = 0; i < 4; i++) {
		mem *src = new_mem(reprs[i / 2], SEED), *dst = new_mem(reprs[i % 2], SEED);
		guest_activity(src);
		assert_int_equal(mem_copy(src, 0, 0, dst, 0, 0, mem_block_bytes(src, 0)), 0);
		assert_int_equal(mem_copy(src, 1, 0, dst, 1, 0, mem_block_bytes(src, 1)), 0);
		assert_int_equal(mem_compare(src, dst, NULL, NULL), 0);
		/* page 3 lands on page 4: both pages hold valid stamps, only the place is wrong */
		assert_int_equal(mem_copy(src, 0, 3 * PAGE, dst, 0, 4 * PAGE, PAGE), 0);
		size_t bb = 99;
		uint64_t bp = 99;
		assert_int_equal(mem_compare(src, dst, &bb, &bp), 1);
		assert_int_equal(bb, 0);
		assert_int_equal(bp, 4);
		/* a page of one block written into the other block is caught too */
		assert_int_equal(mem_copy(src, 0, 4 * PAGE, dst, 0, 4 * PAGE, PAGE), 0);
		assert_int_equal(mem_copy(src, 0, 2 * PAGE, dst, 1, 2 * PAGE, PAGE), 0);
		assert_int_equal(mem_compare(src, dst, &bb, &bp), 1);
		assert_int_equal(bb, 1);
		assert_int_equal(bp, 2);
		mem_free(src);
		mem_free(dst);
	}
}

static void test_zero_pages(void **state)
{
	(void)state;
	static const enum mem_repr reprs[] = { MEM_REPR_BYTES, MEM_REPR_STAMP };
	for (int r = 0; r < 2; r++) {
		mem *m = new_mem(reprs[r], SEED);
		assert_true(mem_pages_zero(m, 0, 0, 32));
		mem_write_pages(m, 0, 9, 1);
		assert_false(mem_pages_zero(m, 0, 0, 32));
		assert_false(mem_pages_zero(m, 0, 9, 1));
		assert_true(mem_pages_zero(m, 0, 0, 9));
		assert_true(mem_pages_zero(m, 0, 10, 22));
		assert_true(mem_pages_zero(m, 0, 9, 0));
		mem_write_pages(m, 0, 10, 3);
		mem_zero_pages(m, 0, 9, 2); /* COMPRESS of pages 9..10 */
		assert_true(mem_pages_zero(m, 0, 0, 11));
		assert_false(mem_pages_zero(m, 0, 0, 12));
		assert_int_equal(mem_page_stamp(m, 0, 9), 0);
		/* a write after a COMPRESS starts again from stamp 0 */
		mem *fresh = new_mem(reprs[r], SEED);
		mem_write_pages(m, 0, 9, 1);
		mem_write_pages(fresh, 0, 9, 1);
		assert_int_equal(mem_page_stamp(m, 0, 9), mem_page_stamp(fresh, 0, 9));
		mem_free(fresh);
		mem_free(m);
	}
}

/* A COMPRESS with a non-zero value, as QEMU before the check applied it: the pages hold that
 * byte (bytes: every byte; stamps: MEM_FILL_STAMP), differ from the source's, are not zero;
 * a fill with 0 is a zeroing. */
static void test_fill_pages(void **state)
{
	(void)state;
	static const enum mem_repr reprs[] = { MEM_REPR_BYTES, MEM_REPR_STAMP };
	for (int r = 0; r < 2; r++) {
		mem *m = new_mem(reprs[r], SEED), *ref = new_mem(reprs[r], SEED);
		size_t bb;
		uint64_t bp;
		mem_fill_pages(m, 0, 4, 2, 0xab);
		assert_false(mem_pages_zero(m, 0, 4, 1));
		assert_false(mem_pages_zero(m, 0, 5, 1));
		assert_true(mem_pages_zero(m, 0, 6, 10));
		if (reprs[r] == MEM_REPR_BYTES) {
			const uint8_t *p = mem_block_ptr(m, 0);
			assert_int_equal(p[4 * PAGE], 0xab);
			assert_int_equal(p[6 * PAGE - 1], 0xab);
			assert_int_equal(p[6 * PAGE], 0);
		} else {
			assert_int_equal(mem_page_stamp(m, 0, 5), MEM_FILL_STAMP(0xab));
		}
		assert_int_equal(mem_compare(ref, m, &bb, &bp), 1);
		assert_int_equal(bb, 0);
		assert_int_equal(bp, 4);
		mem_fill_pages(m, 0, 4, 2, 0);
		assert_true(mem_pages_zero(m, 0, 0, 16));
		assert_int_equal(mem_compare(ref, m, &bb, &bp), 0);
		mem_free(ref);
		mem_free(m);
	}
}

/* Bytes written through the real pointer (as an RDMA device would) are never missed. */
static void test_zero_check_sees_direct_writes(void **state)
{
	(void)state;
	mem *m = NULL;
	const struct mem_block_spec big = { "ram", 200 * PAGE };
	assert_int_equal(mem_new(PAGE, 1, &big, MEM_REPR_BYTES, SEED, &m), 0);
	assert_true(mem_pages_zero(m, 0, 0, 200));
	/* before the pointer is handed out, the written-bitmap decides (in words of 64 pages) */
	mem_write_pages(m, 0, 64, 1);
	mem_write_pages(m, 0, 199, 1);
	assert_false(mem_pages_zero(m, 0, 0, 200));
	assert_false(mem_pages_zero(m, 0, 0, 65));
	assert_false(mem_pages_zero(m, 0, 60, 5));
	assert_false(mem_pages_zero(m, 0, 65, 135));
	assert_true(mem_pages_zero(m, 0, 0, 64));
	assert_true(mem_pages_zero(m, 0, 65, 134));
	mem_zero_pages(m, 0, 0, 200);
	assert_true(mem_pages_zero(m, 0, 0, 200));
	uint8_t *p = mem_block_ptr(m, 0);
	p[130 * PAGE + 1000] = 0x5a;
	assert_false(mem_pages_zero(m, 0, 0, 200));
	assert_false(mem_pages_zero(m, 0, 130, 1));
	assert_true(mem_pages_zero(m, 0, 131, 69));
	mem_zero_pages(m, 0, 130, 1);
	assert_int_equal(p[130 * PAGE + 1000], 0);
	assert_true(mem_pages_zero(m, 0, 0, 200));
	mem_free(m);
}

static void test_resolve_addresses(void **state)
{
	(void)state;
	mem *a = new_mem(MEM_REPR_STAMP, SEED), *b = new_mem(MEM_REPR_STAMP, SEED);
	mem *by = new_mem(MEM_REPR_BYTES, SEED);
	uint64_t a0 = mem_block_addr(a, 0), a1 = mem_block_addr(a, 1), b0 = mem_block_addr(b, 0);
	assert_int_equal(a0 % PAGE, 0);
	assert_int_equal(a1 % PAGE, 0);
	/* blocks separated, memories disjoint */
	assert_true(a1 > a0 + mem_block_bytes(a, 0));
	assert_true(b0 >= a1 + mem_block_bytes(a, 1) || b0 + mem_block_bytes(b, 0) + 8 * PAGE <= a0);
	assert_null(mem_block_ptr(a, 0));
	size_t blk = 99;
	uint64_t off = 99;
	assert_int_equal(mem_resolve(a, a1 + 3 * PAGE + 17, 100, &blk, &off), 0);
	assert_int_equal(blk, 1);
	assert_int_equal(off, 3 * PAGE + 17);
	assert_int_equal(mem_resolve(a, a0, 32 * PAGE, &blk, &off), 0);
	assert_int_equal(blk, 0);
	assert_int_equal(off, 0);
	assert_int_equal(mem_resolve(a, a0 + PAGE, 32 * PAGE, &blk, &off), -EFAULT); /* runs past */
	assert_int_equal(mem_resolve(a, a0 + 32 * PAGE, 1, &blk, &off), -EFAULT);    /* the gap */
	assert_int_equal(mem_resolve(a, a0 - 1, 1, &blk, &off), -EFAULT);
	assert_int_equal(mem_resolve(a, b0, 1, &blk, &off), -EFAULT); /* another memory's */
	assert_int_equal(mem_resolve(b, b0 + 5, 1, &blk, &off), 0);
	assert_int_equal(off, 5);
	/* BYTES: the address is the real pointer */
	uint64_t p1 = (uint64_t)(uintptr_t)mem_block_ptr(by, 1);
	assert_int_equal(mem_block_addr(by, 1), p1);
	assert_int_equal(mem_resolve(by, p1 + 2 * PAGE, PAGE, &blk, &off), 0);
	assert_int_equal(blk, 1);
	assert_int_equal(off, 2 * PAGE);
	/* (mappings may be adjacent, so only a range running past the end is sure to fail) */
	assert_int_equal(mem_resolve(by, p1 + 7 * PAGE, 2 * PAGE, &blk, &off), -EFAULT);
	mem_free(by);
	/* addresses are a function of the live memories: a new memory reuses a freed region */
	mem_free(b);
	b = new_mem(MEM_REPR_STAMP, SEED);
	assert_int_equal(mem_block_addr(b, 0), b0);
	mem_free(b);
	mem_free(a);
}

static void test_invalid_inputs(void **state)
{
	(void)state;
	mem *m = (mem *)(uintptr_t)0x1;
	struct mem_block_spec s[65];
	for (int i = 0; i < 65; i++)
		s[i] = (struct mem_block_spec){ "b", PAGE };
	const uint64_t bad_pages[] = { 0, 256, 3000, 4097, 1ull << 31 };
	for (size_t i = 0; i < sizeof bad_pages / sizeof bad_pages[0]; i++)
		assert_int_equal(mem_new(bad_pages[i], 1, s, MEM_REPR_STAMP, 1, &m), -EINVAL);
	assert_int_equal(mem_new(PAGE, 0, s, MEM_REPR_STAMP, 1, &m), -EINVAL);
	assert_int_equal(mem_new(PAGE, 65, s, MEM_REPR_STAMP, 1, &m), -EINVAL);  /* and dup names */
	assert_int_equal(mem_new(PAGE, 2, s, MEM_REPR_BYTES, 1, &m), -EINVAL);   /* dup names */
	assert_int_equal(mem_new(PAGE, 1, s, MEM_REPR_STAMP, 1, NULL), -EINVAL);
	assert_int_equal(mem_new(PAGE, 1, NULL, MEM_REPR_STAMP, 1, &m), -EINVAL);
	assert_int_equal(mem_new(PAGE, 1, s, (enum mem_repr)7, 1, &m), -EINVAL);
	const struct mem_block_spec bad[][2] = {
		{ { "a", 0 }, { "b", PAGE } },
		{ { "a", PAGE }, { "b", PAGE + 512 } },
		{ { "a", PAGE }, { "", PAGE } },
		{ { NULL, PAGE }, { "b", PAGE } },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(mem_new(PAGE, 2, bad[i], MEM_REPR_STAMP, 1, &m), -EINVAL);
		assert_int_equal(mem_new(PAGE, 2, bad[i], MEM_REPR_BYTES, 1, &m), -EINVAL);
	}
	assert_ptr_equal(m, (mem *)(uintptr_t)0x1); /* untouched on failure */
	/* the limits themselves are accepted */
	const struct mem_block_spec small = { "x", 512 };
	assert_int_equal(mem_new(512, 1, &small, MEM_REPR_BYTES, 1, &m), 0);
	mem_free(m);
	const struct mem_block_spec huge = { "x", 1ull << 30 };
	assert_int_equal(mem_new(1ull << 30, 1, &huge, MEM_REPR_STAMP, 1, &m), 0);
	mem_free(m);
	/* too big: STAMP does not fit its 16 TiB address region, BYTES cannot be mapped; the
	 * first block, already built, is released (valgrind/ASan see no leak) */
	const struct mem_block_spec too_big[] = { { "a", PAGE }, { "b", 1ull << 50 } };
	assert_int_equal(mem_new(PAGE, 2, too_big, MEM_REPR_STAMP, 1, &m), -EINVAL);
	assert_int_equal(mem_new(PAGE, 2, too_big, MEM_REPR_BYTES, 1, &m), -ENOMEM);
	char names[64][16];
	for (unsigned i = 0; i < 64; i++) {
		snprintf(names[i], sizeof names[i], "b%u", i);
		s[i].name = names[i];
	}
	assert_int_equal(mem_new(PAGE, 64, s, MEM_REPR_STAMP, 1, &m), 0);
	assert_int_equal(mem_n_blocks(m), 64);
	assert_string_equal(mem_block_name(m, 63), "b63");
	mem_free(m);
}

static void test_copy_and_compare_errors(void **state)
{
	(void)state;
	mem *st = new_mem(MEM_REPR_STAMP, SEED), *by = new_mem(MEM_REPR_BYTES, SEED);
	mem *by2 = new_mem(MEM_REPR_BYTES, SEED), *other = NULL;
	const struct mem_block_spec one = { "pc.ram", 32 * PAGE };
	assert_int_equal(mem_new(2 * PAGE, 1, &one, MEM_REPR_STAMP, SEED, &other), 0);
	assert_int_equal(mem_copy(st, 0, 0, other, 0, 0, 2 * PAGE), -EINVAL);   /* page sizes */
	assert_int_equal(mem_copy(st, 0, 100, by, 0, 0, PAGE), -EINVAL);        /* STAMP unaligned */
	assert_int_equal(mem_copy(by, 0, 0, st, 0, 0, PAGE + 8), -EINVAL);
	assert_int_equal(mem_copy(by, 0, 0, by2, 0, 0, 33 * PAGE), -EFAULT);    /* past the block */
	assert_int_equal(mem_copy(st, 1, 4 * PAGE, by, 1, 0, 5 * PAGE), -EFAULT);
	assert_int_equal(mem_copy(st, 1, 0, by, 1, 4 * PAGE, 5 * PAGE), -EFAULT);
	assert_int_equal(mem_copy(by, 0, 0, by2, 1, 4 * PAGE, 4 * PAGE + 1), -EFAULT);
	assert_int_equal(mem_copy(st, 2, 0, by, 0, 0, PAGE), -EINVAL);          /* no block 2 */
	assert_int_equal(mem_compare(st, other, NULL, NULL), -EINVAL);
	mem_free(other);
	const struct mem_block_spec renamed[] = { { "pc.ram", 32 * PAGE }, { "other", 8 * PAGE } };
	assert_int_equal(mem_new(PAGE, 2, renamed, MEM_REPR_STAMP, SEED, &other), 0);
	assert_int_equal(mem_compare(st, other, NULL, NULL), -EINVAL);
	mem_free(other);
	/* BYTES -> BYTES: any byte range */
	mem_write_pages(by, 0, 0, 4);
	assert_int_equal(mem_copy(by, 0, 100, by2, 0, 5 * PAGE + 3, 2 * PAGE + 11), 0);
	const uint8_t *sp = mem_block_ptr(by, 0), *dp = mem_block_ptr(by2, 0);
	assert_memory_equal(dp + 5 * PAGE + 3, sp + 100, 2 * PAGE + 11);
	assert_false(mem_pages_zero(by2, 0, 7, 1));
	mem_free(by2);
	mem_free(by);
	mem_free(st);
}

/* Within one memory, overlapping ranges behave like memmove. */
static void test_overlapping_copy(void **state)
{
	(void)state;
	static const enum mem_repr reprs[] = { MEM_REPR_BYTES, MEM_REPR_STAMP };
	for (int r = 0; r < 2; r++) {
		mem *m = new_mem(reprs[r], SEED), *ref = new_mem(MEM_REPR_STAMP, SEED);
		mem_write_pages(m, 0, 0, 8);
		mem_write_pages(ref, 0, 0, 8);
		assert_int_equal(mem_copy(m, 0, 0, m, 0, 2 * PAGE, 6 * PAGE), 0);
		for (uint64_t p = 0; p < 6; p++)
			assert_int_equal(mem_page_stamp(m, 0, p + 2), mem_page_stamp(ref, 0, p));
		assert_int_equal(mem_copy(m, 0, 2 * PAGE, m, 0, PAGE, 6 * PAGE), 0);
		for (uint64_t p = 0; p < 6; p++)
			assert_int_equal(mem_page_stamp(m, 0, p + 1), mem_page_stamp(ref, 0, p));
		mem_free(ref);
		mem_free(m);
	}
}

static void test_corrupted_bytes_page_reported(void **state)
{
	(void)state;
	mem *good = new_mem(MEM_REPR_BYTES, SEED), *bad = new_mem(MEM_REPR_BYTES, SEED);
	mem *st = new_mem(MEM_REPR_STAMP, SEED), *copied = new_mem(MEM_REPR_STAMP, SEED);
	guest_activity(good);
	guest_activity(bad);
	guest_activity(st);
	uint64_t before = mem_page_stamp(bad, 0, 6);
	uint8_t *p = mem_block_ptr(bad, 0);
	p[6 * PAGE + PAGE / 2] ^= 0x01; /* the stamp in the first 8 bytes is intact */
	assert_true(mem_page_stamp(bad, 0, 6) != before);
	size_t bb = 99;
	uint64_t bp = 99;
	assert_int_equal(mem_compare(good, bad, &bb, &bp), 1); /* BYTES vs BYTES */
	assert_int_equal(bb, 0);
	assert_int_equal(bp, 6);
	bp = 99;
	assert_int_equal(mem_compare(st, bad, &bb, &bp), 1); /* STAMP vs BYTES */
	assert_int_equal(bp, 6);
	/* copied into a STAMP memory the page stays "unknown", and a later write keeps it wrong */
	for (size_t b = 0; b < 2; b++)
		assert_int_equal(mem_copy(bad, b, 0, copied, b, 0, mem_block_bytes(bad, b)), 0);
	bp = 99;
	assert_int_equal(mem_compare(st, copied, &bb, &bp), 1);
	assert_int_equal(bp, 6);
	assert_int_equal(mem_compare(copied, copied, &bb, &bp), 1); /* unknown != unknown */
	mem_write_pages(st, 0, 6, 1);
	mem_write_pages(copied, 0, 6, 1);
	mem_write_pages(bad, 0, 6, 1);
	assert_int_equal(mem_compare(st, copied, &bb, &bp), 1);
	assert_int_equal(mem_compare(st, bad, &bb, &bp), 1);
	assert_int_equal(mem_page_stamp(copied, 0, 6), mem_page_stamp(bad, 0, 6));
	mem_free(copied);
	mem_free(st);
	mem_free(bad);
	mem_free(good);
}

static void test_stamp_guest_8g_footprint(void **state)
{
	(void)state;
	const struct mem_block_spec ram[] = { { "pc.ram", 8ull << 30 }, { "vga.vram", 16ull << 20 } };
	mem *m = NULL;
	assert_int_equal(mem_new(PAGE, 2, ram, MEM_REPR_STAMP, SEED, &m), 0);
	uint64_t fp = mem_footprint_bytes(m);
	assert_true(fp >= (16ull << 20));
	assert_true(fp < (20ull << 20));
	mem_write_pages(m, 0, (8ull << 30) / PAGE - 1, 1);
	assert_false(mem_pages_zero(m, 0, 0, mem_block_pages(m, 0)));
	assert_true(mem_pages_zero(m, 1, 0, mem_block_pages(m, 1)));
	assert_true(mem_block_addr(m, 1) > mem_block_addr(m, 0) + (8ull << 30));
	mem_free(m);
}

static long max_rss_kib(void)
{
	struct rusage ru;
	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

/* A 1 TiB STAMP guest: the model's memory follows the pages written, not the guest's size
 * (2 GiB of stamps would be touched by whole-guest zero checks, zeroing and comparing). */
static void test_stamp_guest_1t_sparse(void **state)
{
	(void)state;
	const struct mem_block_spec ram[] = { { "pc.ram", 1ull << 40 } };
	uint64_t pages = (1ull << 40) / PAGE, gib = (1ull << 30) / PAGE;
	mem *a = NULL, *b = NULL;
	long before = max_rss_kib();
	assert_int_equal(mem_new(PAGE, 1, ram, MEM_REPR_STAMP, SEED, &a), 0);
	assert_int_equal(mem_new(PAGE, 1, ram, MEM_REPR_STAMP, SEED, &b), 0);
	assert_true(mem_pages_zero(a, 0, 0, pages));
	mem_write_pages(a, 0, pages - 1, 1);                   /* the last page of the last leaf */
	mem_write_pages(a, 0, 513, 2);                         /* a leaf boundary is at 512 */
	assert_false(mem_pages_zero(a, 0, 0, pages));
	assert_true(mem_pages_zero(a, 0, 0, 513));
	assert_true(mem_pages_zero(a, 0, 515, pages - 516));
	for (uint64_t g = 0; g < pages; g += gib)              /* COMPRESS of the whole guest */
		mem_zero_pages(b, 0, g, gib);
	size_t bb = 9;
	uint64_t bp = 0;
	assert_int_equal(mem_compare(a, b, &bb, &bp), 1);
	assert_int_equal(bb, 0);
	assert_int_equal(bp, 513);
	assert_int_equal(mem_copy(a, 0, 0, b, 0, 0, 1024 * PAGE), 0);
	assert_int_equal(mem_copy(a, 0, (pages - 1) * PAGE, b, 0, (pages - 1) * PAGE, PAGE), 0);
	assert_int_equal(mem_compare(a, b, NULL, NULL), 0);
	mem_zero_pages(b, 0, 0, pages - 1);                    /* zeroes used leaves, skips the rest */
	assert_int_equal(mem_page_stamp(b, 0, 514), 0);
	assert_int_equal(mem_page_stamp(b, 0, pages - 1), mem_page_stamp(a, 0, pages - 1));
#ifndef __SANITIZE_ADDRESS__
	/* under ASan (make check-asan) the RSS is its shadow memory and quarantine, not the model's */
	assert_true(max_rss_kib() - before < 64 * 1024);
#else
	(void)before;
#endif
	mem_free(b);
	mem_free(a);
}

/* A range of stamps at once is each page's stamp, across leaves, in both representations. */
static void test_page_stamps_range(void **state)
{
	(void)state;
	const struct mem_block_spec ram[] = { { "pc.ram", 2000 * PAGE } };
	static const enum mem_repr reprs[] = { MEM_REPR_BYTES, MEM_REPR_STAMP };
	static uint64_t got[2000];
	for (int r = 0; r < 2; r++) {
		mem *m = NULL;
		assert_int_equal(mem_new(PAGE, 1, ram, reprs[r], SEED, &m), 0);
		mem_write_pages(m, 0, 500, 30);
		mem_write_pages(m, 0, 1999, 1);
		mem_page_stamps(m, 0, 3, 1997, got);
		for (uint64_t p = 3; p < 2000; p++)
			assert_int_equal(got[p - 3], mem_page_stamp(m, 0, p));
		assert_true(got[500 - 3] != 0 && got[1999 - 3] != 0 && got[0] == 0);
		mem_free(m);
	}
}

static void test_large_page_bytes_aligned(void **state)
{
	(void)state;
	const struct mem_block_spec ram = { "pc.ram", 8ull << 20 };
	mem *a = NULL, *b = NULL;
	assert_int_equal(mem_new(2u << 20, 1, &ram, MEM_REPR_BYTES, SEED, &a), 0);
	assert_int_equal(mem_new(2u << 20, 1, &ram, MEM_REPR_STAMP, SEED, &b), 0);
	assert_int_equal(mem_block_addr(a, 0) % (2u << 20), 0);
	assert_int_equal(mem_block_addr(b, 0) % (2u << 20), 0);
	mem_write_pages(a, 0, 1, 2);
	mem_write_pages(b, 0, 1, 2);
	assert_int_equal(mem_compare(a, b, NULL, NULL), 0);
	mem_free(b);
	mem_free(a);
}

/* The stamps are part of every digest and VERIFY: they never change (values of the first
 * implementation, before the per-block part of the mix was cached). */
static void test_stamps_pinned(void **state)
{
	(void)state;
	mem *m = new_mem(MEM_REPR_STAMP, SEED);
	mem_write_pages(m, 0, 0, 10);
	mem_write_pages(m, 0, 3, 4);
	mem_write_pages(m, 1, 7, 1);
	assert_int_equal(mem_page_stamp(m, 0, 0), 0xb5750a8db5b7aab6ull);
	assert_int_equal(mem_page_stamp(m, 0, 4), 0xd76e98820772dd61ull);
	assert_int_equal(mem_page_stamp(m, 1, 7), 0xfa6db56d7603110dull);
	mem_free(m);
}

/* Every stamp of a and b is the same (same layout). */
static void assert_same_stamps(const mem *a, const mem *b)
{
	for (size_t blk = 0; blk < 2; blk++)
		for (uint64_t p = 0; p < mem_block_pages(a, blk); p++)
			assert_int_equal(mem_page_stamp(a, blk, p), mem_page_stamp(b, blk, p));
}

/* mem_write_pages_twin(m, t) is mem_write_pages(m) then mem_write_pages(t): with the same
 * seed or not, in either representation, and when t's pages already differ from m's. */
static void test_write_twin_same_as_two_writes(void **state)
{
	(void)state;
	static const enum mem_repr reprs[] = { MEM_REPR_STAMP, MEM_REPR_BYTES };
	for (size_t i = 0; i < 4; i++) {
		enum mem_repr tr = reprs[i % 2];
		uint64_t tseed = i < 2 ? SEED : SEED + 1;
		mem *m = new_mem(MEM_REPR_STAMP, SEED), *t = new_mem(tr, tseed);
		mem *m2 = new_mem(MEM_REPR_STAMP, SEED), *t2 = new_mem(tr, tseed);
		mem_write_pages(t, 0, 6, 2);         /* t differs from m: written, filled, zeroed */
		mem_write_pages(t2, 0, 6, 2);
		mem_fill_pages(t, 0, 9, 1, 0x5a);
		mem_fill_pages(t2, 0, 9, 1, 0x5a);
		/* the guest's writes, twin and two calls; t's page 4 zeroed after the third */
		static const struct { size_t b; uint64_t first, n; } w[] = {
			{ 0, 0, 10 }, { 0, 3, 4 }, { 1, 7, 1 }, { 0, 2, 5 },
		};
		for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
			if (k == 3) {
				mem_zero_pages(t, 0, 4, 1);
				mem_zero_pages(t2, 0, 4, 1);
			}
			mem_write_pages_twin(m, t, w[k].b, w[k].first, w[k].n);
			mem_write_pages(m2, w[k].b, w[k].first, w[k].n);
			mem_write_pages(t2, w[k].b, w[k].first, w[k].n);
		}
		mem_write_pages_twin(m, NULL, 0, 30, 2);
		mem_write_pages(m2, 0, 30, 2);
		assert_same_stamps(m, m2);
		assert_same_stamps(t, t2);
		mem_free(m), mem_free(t), mem_free(m2), mem_free(t2);
	}
	mem *m = new_mem(MEM_REPR_BYTES, SEED), *m2 = new_mem(MEM_REPR_STAMP, SEED);
	mem_write_pages_twin(m, m, 0, 1, 3);   /* the same memory twice: two writes */
	mem_write_pages(m2, 0, 1, 3);
	mem_write_pages(m2, 0, 1, 3);
	assert_same_stamps(m, m2);
	mem_free(m), mem_free(m2);
}

/* STAMP vs STAMP over several leaves of 512 pages: equal leaves are skipped whole, the first
 * difference is still the first page that differs, and an unknown stamp is never equal. */
static void test_compare_stamps_leaf_by_leaf(void **state)
{
	(void)state;
	static const struct mem_block_spec big[] = { { "pc.ram", 2048 * PAGE } };
	mem *a = NULL, *b = NULL, *bytes = NULL;
	size_t bb = 9;
	uint64_t bp = 0;
	assert_int_equal(mem_new(PAGE, 1, big, MEM_REPR_STAMP, SEED, &a), 0);
	assert_int_equal(mem_new(PAGE, 1, big, MEM_REPR_STAMP, SEED, &b), 0);
	mem_write_pages(a, 0, 0, 2048);
	mem_write_pages(b, 0, 0, 2048);
	mem_write_pages(b, 0, 1500, 1);
	mem_write_pages(b, 0, 1700, 1);
	assert_int_equal(mem_compare(a, b, &bb, &bp), 1);
	assert_int_equal(bb, 0);
	assert_int_equal(bp, 1500);
	mem_write_pages(a, 0, 1500, 1);
	mem_write_pages(a, 0, 1700, 1);
	assert_int_equal(mem_compare(a, b, &bb, &bp), 0);
	mem *fresh = NULL, *one = NULL;   /* a used leaf against an untouched one */
	assert_int_equal(mem_new(PAGE, 1, big, MEM_REPR_STAMP, SEED, &fresh), 0);
	assert_int_equal(mem_new(PAGE, 1, big, MEM_REPR_STAMP, SEED, &one), 0);
	mem_write_pages(one, 0, 1000, 1);
	assert_int_equal(mem_compare(fresh, one, &bb, &bp), 1);
	assert_int_equal(bp, 1000);
	/* a page copied in from bytes that no stamp explains: unknown, unequal even to itself */
	assert_int_equal(mem_new(PAGE, 1, big, MEM_REPR_BYTES, SEED, &bytes), 0);
	memset((uint8_t *)mem_block_ptr(bytes, 0) + 700 * PAGE, 0x11, PAGE);
	assert_int_equal(mem_copy(bytes, 0, 700 * PAGE, b, 0, 700 * PAGE, PAGE), 0);
	assert_int_equal(mem_compare(b, b, &bb, &bp), 1);
	assert_int_equal(bp, 700);
	mem_free(a), mem_free(b), mem_free(fresh), mem_free(one), mem_free(bytes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_same_stamps_in_both_reprs),
		cmocka_unit_test(test_copy_every_repr_combination),
		cmocka_unit_test(test_single_page_difference_found),
		cmocka_unit_test(test_misplaced_copy_detected),
		cmocka_unit_test(test_zero_pages),
		cmocka_unit_test(test_fill_pages),
		cmocka_unit_test(test_zero_check_sees_direct_writes),
		cmocka_unit_test(test_resolve_addresses),
		cmocka_unit_test(test_invalid_inputs),
		cmocka_unit_test(test_copy_and_compare_errors),
		cmocka_unit_test(test_overlapping_copy),
		cmocka_unit_test(test_corrupted_bytes_page_reported),
		cmocka_unit_test(test_stamp_guest_8g_footprint),
		cmocka_unit_test(test_large_page_bytes_aligned),
		cmocka_unit_test(test_stamp_guest_1t_sparse),
		cmocka_unit_test(test_page_stamps_range),
		cmocka_unit_test(test_stamps_pinned),
		cmocka_unit_test(test_write_twin_same_as_two_writes),
		cmocka_unit_test(test_compare_stamps_leaf_by_leaf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
