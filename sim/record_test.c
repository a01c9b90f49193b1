/* SPDX-License-Identifier: MIT */
/* record_test - the maps parser, the region argument, block names and pagemap -> ranges. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/record.h"

/* A maps text as the kernel prints it (6.1), one mapping of each kind. */
static const char maps_text[] =
	"55d0c8a00000-55d0c8a02000 r--p 00000000 08:01 1311 /usr/bin/stress-ng\n"
	"55d0c8c00000-55d0c8c01000 rw-p 00002000 08:01 1311 /usr/bin/stress-ng\n"
	"55d0c8c01000-55d0c8c03000 rw-p 00000000 00:00 0 \n"
	"55d0ca000000-55d0ca021000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f3a1c000000-7f3a1d000000 rw-p 00000000 00:00 0\n"
	"7f3a1d000000-7f3a1d001000 ---p 00000000 00:00 0\n"
	"7f3a1e000000-7f3a1e100000 rw-s 00000000 00:01 2048 /dev/zero (deleted)\n"
	"7f3a1f000000-7f3a1f004000 rw-p 00000000 00:00 0    [anon:stress-ng-vm]\n"
	"7f3a20000000-7f3a20001000 rw-p 00000000 00:05 77 /memfd:x (deleted)\n"
	"7ffd5a000000-7ffd5a021000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffd5a1f0000-7ffd5a1f4000 r--p 00000000 00:00 0                          [vvar]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void maps_picks_private_writable_anonymous(void **state)
{
	struct record_map m[8];
	struct diag d = { 0 };
	(void)state;
	long n = record_maps_parse(maps_text, "maps", m, 8, &d);
	assert_int_equal(n, 5);
	assert_true(m[0].start == 0x55d0c8c01000u && m[0].end == 0x55d0c8c03000u);
	assert_int_equal(m[0].kind, RECORD_ANON);
	assert_int_equal(m[1].kind, RECORD_HEAP);
	assert_true(m[2].start == 0x7f3a1c000000u && m[2].end == 0x7f3a1d000000u);
	assert_int_equal(m[3].kind, RECORD_ANON);           /* [anon:NAME] */
	assert_true(m[3].start == 0x7f3a1f000000u);
	assert_int_equal(m[4].kind, RECORD_STACK);
}

static void maps_counts_past_max(void **state)
{
	struct record_map m[2];
	(void)state;
	assert_int_equal(record_maps_parse(maps_text, "maps", m, 2, NULL), 5);
	assert_int_equal(m[1].kind, RECORD_HEAP);
	assert_int_equal(record_maps_parse("", "maps", m, 2, NULL), 0);
}

static void maps_bad_lines_name_file_and_line(void **state)
{
	static const struct { const char *text, *msg; } bad[] = {
		{ "7f00-7e00 rw-p 0 00:00 0\n", "maps:1: bad address range" },
		{ "zz-7e00 rw-p 0 00:00 0\n", "maps:1: bad address range" },
		{ "1000-2000 rw-p 0 00:00 0\n1000-2000 rwq 0 00:00 0\n", "maps:2: bad permissions" },
		{ "1000-2000 rw-p 0 00:00\n", "maps:1: missing inode field" },
		{ "1000-2000\n", "maps:1: bad address range" },
		{ "11112222333344445-2 rw-p 0 00:00 0\n", "maps:1: bad address range" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct record_map m[1];
		struct diag d = { 0 };
		assert_int_equal(record_maps_parse(bad[i].text, "maps", m, 1, &d), -EINVAL);
		if (strncmp(d.msg, bad[i].msg, strlen(bad[i].msg)))
			fail_msg("case %zu: got '%s', want '%s...'", i, d.msg, bad[i].msg);
	}
}

static void maps_cover_a_region(void **state)
{
	struct diag d = { 0 };
	(void)state;
	/* two adjacent mappings cover across their boundary; a gap does not */
	assert_int_equal(record_maps_cover(maps_text, "maps", 0x55d0c8c00000u, 0x3000, &d), 1);
	assert_int_equal(record_maps_cover(maps_text, "maps", 0x7f3a1c000000u, 0x1001000, &d), 1);
	assert_int_equal(record_maps_cover(maps_text, "maps", 0x7f3a1c000000u, 0x1002000, &d), 0);
	assert_int_equal(record_maps_cover(maps_text, "maps", 0x7f3a1d001000u, 0x1000, &d), 0);
	assert_int_equal(record_maps_cover(maps_text, "maps", 0x1000, 0x1000, &d), 0);
	assert_int_equal(record_maps_cover("", "maps", 0x1000, 0x1000, &d), 0);
	assert_int_equal(record_maps_cover("1000-2000 rw-p 0 00:00 0\nxyz\n", "maps", 0x1000, 0x2000, &d), -EINVAL);
	assert_string_equal(d.msg, "maps:2: bad address range (expected START-END in hex, START < END)");
}

static void region_parses_and_refuses(void **state)
{
	uint64_t a = 0, n = 0;
	struct diag d = { 0 };
	(void)state;
	assert_int_equal(record_region_parse("0x7f0000000000+64M", 4096, &a, &n, &d), 0);
	assert_true(a == 0x7f0000000000u && n == (64u << 20));
	assert_int_equal(record_region_parse("7F0000001000+4096", 4096, &a, &n, &d), 0);
	assert_true(a == 0x7f0000001000u && n == 4096);
	const char *bad[] = { "0x1000", "0x1000+", "+4K", "0xg000+4K", "0x1001+4K", "0x1000+4097",
			      "0x1000+0", "0xfffffffffffff000+8K", "0x1000+1.5K" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (record_region_parse(bad[i], 4096, &a, &n, &d) != -EINVAL)
			fail_msg("'%s' accepted", bad[i]);
		assert_non_null(strstr(d.msg, bad[i]));
	}
}

static void block_names_fit_the_trace_alphabet(void **state)
{
	char buf[TRACE_BLOCK_NAME_MAX + 1];
	(void)state;
	assert_string_equal(record_block_name(812, RECORD_ANON, 0x7f3a1c000000u, buf, sizeof buf),
			    "812/anon:7f3a1c000000");
	assert_string_equal(record_block_name(4194304, RECORD_REGION, UINT64_MAX - 4095, buf, sizeof buf),
			    "4194304/region:fffffffffffff000");
	assert_string_equal(record_block_name(1, RECORD_STACK, 0, buf, sizeof buf), "1/stack:0");

	/* the trace writer takes them as block names (its alphabet has no '@') */
	struct trace_header h = { .version = TRACE_VERSION, .page_size = 4096, .duration_ns = 1000,
				  .n_blocks = 4 };
	static const enum record_kind kinds[4] = { RECORD_ANON, RECORD_HEAP, RECORD_STACK, RECORD_REGION };
	for (size_t i = 0; i < 4; i++) {
		record_block_name(2147483647, kinds[i], UINT64_MAX - 4095 * i, h.blocks[i].name,
				  sizeof h.blocks[i].name);
		h.blocks[i].size_bytes = 4096;
	}
	char path[] = "/tmp/record_test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	trace_writer *w = NULL;
	struct diag d = { 0 };
	if (trace_writer_open(path, &h, &w, &d))
		fail_msg("writer refused the names: %s", d.msg);
	assert_int_equal(trace_writer_close(w), 0);
	unlink(path);
}

struct runs {
	uint64_t first[16], n[16];
	size_t count;
	size_t stop_at;      /* return 1 on this run (0: never) */
};

static int collect(void *arg, uint64_t first, uint64_t n)
{
	struct runs *r = arg;
	assert_true(r->count < 16);
	r->first[r->count] = first;
	r->n[r->count] = n;
	r->count++;
	return r->count == r->stop_at;
}

#define P RECORD_PM_PRESENT
#define S RECORD_PM_SWAPPED
#define D RECORD_PM_SOFT_DIRTY

static void pagemap_to_runs_in_pieces(void **state)
{
	/* pages 0-1 dirty, 2 clean, 3 dirty but not populated (a fresh mapping's hole), 4-7
	 * dirty (7 swapped out), 8 clean, 9 dirty at the very end */
	const uint64_t pm[10] = { P | D, P | D, P, D, P | D, P | D | 0x1234, P | D, S | D, P, P | D };
	(void)state;
	for (size_t piece = 1; piece <= 10; piece++) {
		struct runs r = { 0 };
		struct record_scan s;
		record_scan_begin(&s, RECORD_PAGES_DIRTY, collect, &r);
		for (size_t i = 0; i < 10; i += piece)
			assert_int_equal(record_scan_feed(&s, pm + i, i + piece > 10 ? 10 - i : piece), 0);
		assert_int_equal(record_scan_end(&s), 0);
		assert_int_equal(r.count, 3);
		assert_true(r.first[0] == 0 && r.n[0] == 2);
		assert_true(r.first[1] == 4 && r.n[1] == 4);
		assert_true(r.first[2] == 9 && r.n[2] == 1);
		assert_true(s.pages == 7 && s.runs == 3);
	}
}

static void pagemap_populated_for_epoch_zero(void **state)
{
	const uint64_t pm[6] = { 0, P, S, D, P | D, 0 };
	struct runs r = { 0 };
	struct record_scan s;
	(void)state;
	record_scan_begin(&s, RECORD_PAGES_POPULATED, collect, &r);
	assert_int_equal(record_scan_feed(&s, pm, 6), 0);
	assert_int_equal(record_scan_end(&s), 0);
	assert_int_equal(r.count, 2);
	assert_true(r.first[0] == 1 && r.n[0] == 2 && r.first[1] == 4 && r.n[1] == 1);
}

static void pagemap_callback_error_stops(void **state)
{
	const uint64_t pm[5] = { P | D, 0, P | D, 0, P | D };
	struct runs r = { .stop_at = 2 };
	struct record_scan s;
	(void)state;
	record_scan_begin(&s, RECORD_PAGES_DIRTY, collect, &r);
	assert_int_equal(record_scan_feed(&s, pm, 5), 1);
	assert_int_equal(r.count, 2);
	/* nothing counted: an empty scan calls nothing */
	struct runs none = { 0 };
	const uint64_t clean[3] = { P, P, 0 };
	record_scan_begin(&s, RECORD_PAGES_DIRTY, collect, &none);
	assert_int_equal(record_scan_feed(&s, clean, 3), 0);
	assert_int_equal(record_scan_end(&s), 0);
	assert_int_equal(none.count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(maps_picks_private_writable_anonymous),
		cmocka_unit_test(maps_counts_past_max),
		cmocka_unit_test(maps_bad_lines_name_file_and_line),
		cmocka_unit_test(maps_cover_a_region),
		cmocka_unit_test(region_parses_and_refuses),
		cmocka_unit_test(block_names_fit_the_trace_alphabet),
		cmocka_unit_test(pagemap_to_runs_in_pieces),
		cmocka_unit_test(pagemap_populated_for_epoch_zero),
		cmocka_unit_test(pagemap_callback_error_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
