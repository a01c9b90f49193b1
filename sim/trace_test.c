/* SPDX-License-Identifier: MIT */
/* trace_test - trace v1 reader, writer and checker. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/trace.h"

static char tmpdir[64];

static int setup_dir(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/trace_test.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *path_of(const char *name)
{
	static char buf[4][256];
	static int next;
	char *p = buf[next++ % 4];
	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static const char *write_text(const char *name, const char *text)
{
	const char *p = path_of(name);
	write_bytes(p, text, strlen(text));
	return p;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = calloc(1, 1 << 20);
	assert_non_null(f);
	assert_non_null(buf);
	*n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	return buf;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* trace_check's reports, collected. */
struct reports {
	int n;
	char line[64][DIAG_MSG_MAX];
};

static void collect(void *arg, const char *msg)
{
	struct reports *r = arg;
	if (r->n < 64)
		snprintf(r->line[r->n], DIAG_MSG_MAX, "%s", msg);
	r->n++;
}

/* Whether some report starts with "PATH:LINE: " and contains keyword. */
static bool reported(const struct reports *r, const char *path, unsigned long line,
		     const char *keyword)
{
	char prefix[300];
	snprintf(prefix, sizeof prefix, "%s:%lu: ", path, line);
	for (int i = 0; i < r->n && i < 64; i++)
		if (!strncmp(r->line[i], prefix, strlen(prefix)) && strstr(r->line[i], keyword))
			return true;
	return false;
}

static void print_reports(const struct reports *r)
{
	for (int i = 0; i < r->n && i < 64; i++)
		print_message("  report: %s\n", r->line[i]);
}

static struct trace_header two_blocks(void)
{
	struct trace_header h;
	memset(&h, 0, sizeof h);
	h.version = TRACE_VERSION;
	h.page_size = 4096;
	h.duration_ns = UINT64_C(2000000000);
	h.n_blocks = 2;
	strcpy(h.blocks[0].name, "pc.ram");
	h.blocks[0].size_bytes = UINT64_C(1) << 30;
	strcpy(h.blocks[1].name, "vga.vram");
	h.blocks[1].size_bytes = 16 << 20;
	return h;
}

/* ------------------------------------------------------------------ round trip */

#define RT_EPOCHS 5
static const uint64_t rt_times[RT_EPOCHS] = { 0, 7, 1500000, 250000000, 1999999999 };

/* Epoch e's ranges: whole block; none; two blocks interleaved; enough ranges of one block
 * to wrap lines; a tail (the last page, overlapping ranges). */
static size_t rt_ranges(int e, struct trace_range *out, size_t max)
{
	size_t n = 0;
	if (e == 0)
		out[n++] = (struct trace_range){ 0, 0, 262144 };
	if (e == 3)
		for (uint64_t i = 0; i < 3000 && n < max; i++)
			out[n++] = (struct trace_range){ 0, i * 10, 2 };
	if (e == 2)
		for (uint64_t i = 0; i < 3000 && n < max; i++)
			out[n++] = (struct trace_range){ (uint32_t)(i % 7 == 0), (i * 3) % 4000,
							 1 + i % 3 };
	if (e == 4) {
		out[n++] = (struct trace_range){ 0, 262143, 1 };
		out[n++] = (struct trace_range){ 0, 5, 10 };
		out[n++] = (struct trace_range){ 0, 7, 1 };
		out[n++] = (struct trace_range){ 1, 4095, 1 };
	}
	return n;
}

static void write_rt(const char *path)
{
	struct trace_header h = two_blocks();
	struct trace_range rg[3000];
	trace_writer *w = NULL;
	struct diag d;

	assert_int_equal(trace_writer_open(path, &h, &w, &d), 0);
	assert_int_equal(trace_writer_comment(w, "gen: test"), 0);
	for (int e = 0; e < RT_EPOCHS; e++) {
		size_t n = rt_ranges(e, rg, 3000);
		assert_int_equal(trace_writer_epoch(w, rt_times[e]), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(trace_writer_range(w, &rg[i]), 0);
	}
	assert_false(exists(path));      /* only FILE.tmp until close */
	assert_int_equal(trace_writer_close(w), 0);
	assert_true(exists(path));
}

static void read_rt(const char *path)
{
	struct trace_range want[3000], got;
	trace_reader *r = NULL;
	struct diag d;
	uint64_t t;

	assert_int_equal(trace_open(path, &r, &d), 0);
	assert_int_equal(trace_header(r)->page_size, 4096);
	assert_int_equal(trace_header(r)->duration_ns, UINT64_C(2000000000));
	assert_int_equal(trace_header(r)->n_blocks, 2);
	assert_string_equal(trace_header(r)->blocks[1].name, "vga.vram");
	assert_int_equal(trace_header(r)->blocks[1].size_bytes, 16 << 20);
	for (int e = 0; e < RT_EPOCHS; e++) {
		size_t n = rt_ranges(e, want, 3000);
		assert_int_equal(trace_next_epoch(r, &t), 1);
		assert_int_equal(t, rt_times[e]);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(trace_next_range(r, &got), 1);
			assert_int_equal(got.block, want[i].block);
			assert_int_equal(got.first_page, want[i].first_page);
			assert_int_equal(got.n_pages, want[i].n_pages);
		}
		assert_int_equal(trace_next_range(r, &got), 0);
	}
	assert_int_equal(trace_next_epoch(r, &t), 0);
	assert_int_equal(trace_next_epoch(r, &t), 0);
	trace_close(r);
}

static void test_roundtrip_plain(void **state)
{
	const char *p = path_of("rt.trace");
	const char *want;
	size_t n, longest = 0, lines = 0;
	char *text, *line;
	(void)state;

	write_rt(p);
	read_rt(p);
	assert_int_equal(trace_check(p, NULL, NULL), 0);
	text = slurp(p, &n);
	want = "migbed-trace 1\n# gen: test\npage-size 4K\nblock pc.ram 1G\n"
	       "block vga.vram 16M\nduration 2s\nepoch 0s\npc.ram 0-262143\nepoch 7ns\n"
	       "epoch 1500us\n";
	assert_memory_equal(text, want, strlen(want));
	want = "\nepoch 1999999999ns\npc.ram 262143 5-14 7\nvga.vram 4095\n";
	assert_true(n > strlen(want));
	assert_string_equal(text + n - strlen(want), want);
	/* epoch 250ms's 3000 ranges are wrapped into several moderate lines */
	line = strstr(text, "\nepoch 250ms\npc.ram 0-1 10-11 ");
	assert_non_null(line);
	for (char *nl = strchr(line + 1, '\n'); nl && lines < 100; nl = strchr(nl + 1, '\n')) {
		size_t len = (size_t)(nl - line - 1);
		if (len > longest)
			longest = len;
		line = nl;
		lines++;
	}
	assert_in_range(longest, 1000, 4200);
	free(text);
}

static void test_roundtrip_zst(void **state)
{
	const char *p = path_of("rt.trace.zst");
	static const unsigned char zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	size_t n;
	char *bytes;
	(void)state;

	write_rt(p);
	bytes = slurp(p, &n);
	assert_true(n > 4 && !memcmp(bytes, zstd_magic, 4));
	free(bytes);
	read_rt(p);
	assert_int_equal(trace_check(p, NULL, NULL), 0);
}

/* Reading only part of an epoch's ranges: next_epoch skips the rest. */
static void test_reader_skips_unread_ranges(void **state)
{
	const char *p = write_text("skip.trace", "migbed-trace 1\npage-size 4K\nblock b 1M\n"
				   "duration 1s\nepoch 0s\nb 1 2 3\nb 4\n\n# c\nepoch 1ms\nb 9\n");
	trace_reader *r = NULL;
	struct trace_range rg;
	struct diag d;
	uint64_t t;
	(void)state;

	assert_int_equal(trace_open(p, &r, &d), 0);
	assert_int_equal(trace_next_range(r, &rg), 0);   /* before the first epoch */
	assert_int_equal(trace_next_epoch(r, &t), 1);
	assert_int_equal(trace_next_range(r, &rg), 1);
	assert_int_equal(rg.first_page, 1);
	assert_int_equal(trace_next_epoch(r, &t), 1);
	assert_int_equal(t, 1000000);
	assert_int_equal(trace_next_range(r, &rg), 1);
	assert_int_equal(rg.first_page, 9);
	assert_int_equal(trace_next_epoch(r, &t), 0);
	trace_close(r);
}

/* Hand-written forms: CRLF, tabs, trailing comments, KiB units, no epochs at all. */
static void test_reader_accepts_hand_written(void **state)
{
	const char *p = write_text("hand.trace", "# incident 42\r\nmigbed-trace 1\r\n"
				   "page-size\t4KiB  # x86\r\nblock pc.ram 2M\r\n\r\n"
				   "duration 100ms\r\nepoch 0ns\r\n  pc.ram\t0-1 511 # hot\r\n");
	const char *q = write_text("noepoch.trace", "migbed-trace 1\npage-size 4K\nblock b 1M\n"
				   "duration 1s\n");
	trace_reader *r = NULL;
	struct trace_range rg;
	struct diag d;
	uint64_t t = 99;
	(void)state;

	assert_int_equal(trace_open(p, &r, &d), 0);
	assert_int_equal(trace_next_epoch(r, &t), 1);
	assert_int_equal(t, 0);
	assert_int_equal(trace_next_range(r, &rg), 1);
	assert_int_equal(rg.n_pages, 2);
	assert_int_equal(trace_next_range(r, &rg), 1);
	assert_int_equal(rg.first_page, 511);
	assert_int_equal(trace_next_range(r, &rg), 0);
	trace_close(r);
	assert_int_equal(trace_open(q, &r, &d), 0);
	assert_int_equal(trace_next_epoch(r, &t), 0);
	trace_close(r);
	assert_int_equal(trace_check(p, NULL, NULL), 0);
}

/* The reader API stops at the first defect with FILE:LINE and stays failed. */
static void test_reader_errors(void **state)
{
	const char *p = write_text("rerr.trace", "migbed-trace 1\npage-size 4K\nblock b 1M\n"
				   "duration 1s\nepoch 0s\nb 1\nb 256\nepoch 1ms\n");
	const char *q = write_text("rhdr.trace", "migbed-trace 1\npage-size 4K\nblock b 1M\n"
				   "block b 2M\nduration 1s\n");
	char want[300];
	trace_reader *r = NULL;
	struct trace_range rg;
	struct diag d;
	uint64_t t;
	(void)state;

	assert_int_equal(trace_open(p, &r, &d), 0);
	assert_int_equal(trace_next_epoch(r, &t), 1);
	assert_int_equal(trace_next_range(r, &rg), 1);
	assert_int_equal(trace_next_range(r, &rg), -EINVAL);
	snprintf(want, sizeof want, "%s:7: page 256 out of range", p);
	assert_true(!strncmp(trace_diag(r), want, strlen(want)));
	assert_int_equal(trace_next_epoch(r, &t), -EINVAL);
	trace_close(r);

	assert_int_equal(trace_open(q, &r, &d), -EINVAL);
	snprintf(want, sizeof want, "%s:4: duplicate block 'b'", q);
	assert_true(!strncmp(d.msg, want, strlen(want)));
	assert_int_equal(trace_open(path_of("missing.trace"), &r, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "missing.trace"));
}

/* ------------------------------------------------------------- trace_check defects */

#define HDR "migbed-trace 1\npage-size 4K\nblock pc.ram 1M\nduration 1s\n"

struct defect_case {
	const char *name;
	const char *text;
	unsigned long line;
	const char *keyword;
};

static const struct defect_case defect_cases[] = {
	{ "magic", "page-size 4K\nblock b 1M\nduration 1s\n", 1, "missing magic" },
	{ "version", "# c\nmigbed-trace 3\npage-size 4K\nblock b 1M\nduration 1s\n", 2,
	  "version" },
	{ "empty", "# only a comment\n", 1, "empty trace" },
	{ "header-page-size", "migbed-trace 1\npage-size 3000\nblock b 1M\nduration 1s\n", 2,
	  "power of two" },
	{ "header-bad-size", "migbed-trace 1\npage-size 4K\nblock b 1.5Q\nduration 1s\n", 3,
	  "bad size" },
	{ "header-not-multiple", "migbed-trace 1\npage-size 4K\nblock b 4097\nduration 1s\n", 3,
	  "multiple" },
	{ "header-duration", "migbed-trace 1\npage-size 4K\nblock b 1M\nduration 10\n", 4,
	  "bad duration" },
	{ "header-order", "migbed-trace 1\nblock b 1M\npage-size 4K\nduration 1s\n", 2,
	  "out of order" },
	{ "header-missing", "migbed-trace 1\npage-size 4K\nblock b 1M\nepoch 0s\n", 4,
	  "missing 'duration'" },
	{ "header-extra", "migbed-trace 1 x\npage-size 4K\nblock b 1M\nduration 1s\n", 1,
	  "unexpected 'x'" },
	{ "header-late", HDR "epoch 0s\nblock c 1M\n", 6, "after the first epoch" },
	{ "unknown-block", HDR "epoch 0s\nvga 1-2\n", 6, "unknown block 'vga'" },
	{ "duplicate-block", "migbed-trace 1\npage-size 4K\nblock b 1M\nblock b 1M\n"
	  "duration 1s\n", 4, "duplicate block" },
	{ "page-out-of-range", HDR "epoch 0s\npc.ram 0 255 256\n", 6, "out of range" },
	{ "range-end-out-of-range", HDR "epoch 0s\npc.ram 250-300\n", 6, "out of range" },
	{ "bad-range", HDR "epoch 0s\npc.ram 9-3\n", 6, "bad range" },
	{ "bad-range-syntax", HDR "epoch 0s\npc.ram 1-\n", 6, "bad range" },
	{ "bad-range-letter", HDR "epoch 0s\npc.ram 1 2x 3\n", 6, "bad range" },
	{ "bad-range-dash", HDR "epoch 0s\npc.ram 1 2--3\n", 6, "bad range" },
	{ "page-too-large", HDR "epoch 0s\npc.ram 1 18446744073709551616\n", 6, "too large" },
	{ "page-19-digits", HDR "epoch 0s\npc.ram 1 1000000000000000000\n", 6, "out of range" },
	{ "no-ranges", HDR "epoch 0s\npc.ram\n", 6, "no ranges" },
	{ "time-backwards", HDR "epoch 10ms\nepoch 5ms\n", 6, "strictly increase" },
	{ "time-equal", HDR "epoch 10ms\nepoch 10000us\n", 6, "strictly increase" },
	{ "time-no-unit", HDR "epoch 10\n", 5, "bad epoch time" },
	{ "epoch-at-duration", HDR "epoch 1s\n", 5, "duration" },
	{ "range-before-epoch", HDR "pc.ram 1\nepoch 0s\n", 5, "before any epoch" },
	{ "truncated", HDR "epoch 0s\npc.ram 1-", 6, "truncated" },
	{ "garbage-nul", HDR "epoch 0s\npc.ram 1\0\n", 6, "non-text" },
	{ "garbage-utf8", HDR "# caf\xc3\xa9 ok\nepoch 0s\n\xff\xfe\n", 7, "non-text" },
	/* inside a long line: the word-at-a-time check of the text must see them too */
	{ "garbage-ctl-deep", HDR "epoch 0s\npc.ram 1 2 3 4 5\t6 7 8 9 10\x01 11\n", 6, "non-text" },
	{ "garbage-del-deep", HDR "epoch 0s\npc.ram 1 2 3 4 5 6 7 8 9 10 11\x7f\n", 6, "non-text" },
	{ "garbage-high-deep", HDR "epoch 0s\npc.ram 1 2 3 4 5 6 7 8 \x80 9 10 11\n", 6, "non-text" },
	{ "unknown-keyword", HDR "epoch 0s\nepcoh 5ms\n", 6, "unknown keyword" },
};
#define N_DEFECT_CASES (sizeof defect_cases / sizeof defect_cases[0])

static const char *write_case(const struct defect_case *c)
{
	char name[64];
	const char *p;
	size_t len = strlen(c->text);

	if (!strcmp(c->name, "garbage-nul"))
		len += 2;        /* the NUL and the newline after it */
	snprintf(name, sizeof name, "%s.trace", c->name);
	p = path_of(name);
	write_bytes(p, c->text, len);
	return p;
}

static void test_check_each_defect_class(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_DEFECT_CASES; i++) {
		const struct defect_case *c = &defect_cases[i];
		struct reports rep = { 0 };
		const char *p = write_case(c);
		long n = trace_check(p, collect, &rep);

		if (n != 1 || !reported(&rep, p, c->line, c->keyword)) {
			print_message("case %s: %ld defects, want 1 at line %lu with '%s'\n",
				      c->name, n, c->line, c->keyword);
			print_reports(&rep);
			fail();
		}
		assert_int_equal(rep.n, 1);
	}
}

/* The reader API refuses every one of those files too (first defect, same line). */
static void test_reader_rejects_each_defect_class(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_DEFECT_CASES; i++) {
		const struct defect_case *c = &defect_cases[i];
		char prefix[300];
		trace_reader *r = NULL;
		struct trace_range rg;
		struct diag d;
		const char *p = write_case(c);
		char msg[DIAG_MSG_MAX];
		uint64_t t;
		int rc;

		rc = trace_open(p, &r, &d);
		snprintf(msg, sizeof msg, "%s", d.msg);
		for (int guard = 0; rc == 0 && guard < 10; guard++) {
			while ((rc = trace_next_range(r, &rg)) > 0)
				;
			rc = rc < 0 ? rc : trace_next_epoch(r, &t);
			rc = rc == 1 ? 0 : (rc == 0 ? 1 : rc);
		}
		if (r) {
			snprintf(msg, sizeof msg, "%s", trace_diag(r));
			trace_close(r);
		}
		snprintf(prefix, sizeof prefix, "%s:%lu: ", p, c->line);
		if (rc != -EINVAL || strncmp(msg, prefix, strlen(prefix)) ||
		    !strstr(msg, c->keyword)) {
			print_message("case %s: rc %d, diag '%s'\n", c->name, rc, msg);
			fail();
		}
	}
}

/* Every defect of one file is reported: the checker resynchronises at the next line. */
static void test_check_reports_every_defect(void **state)
{
	const char *p = write_text("many.trace", "migbed-trace 1\npage-size 4K\nblock pc.ram 1M\n"
				   "block pc.ram 2M\nduration 1s\npc.ram 1\nepoch 5ms\n"
				   "pc.ram 1 300 7-2 2\nvga 3\nepoch 4ms\nepoch 2s\nbogus line\n"
				   "pc.ram 4\n");
	struct reports rep = { 0 };
	uint64_t epochs = 0;
	long n;
	(void)state;

	n = trace_check_epochs(p, collect, &rep, &epochs);
	if (n != 8)
		print_reports(&rep);
	assert_int_equal(n, 8);
	assert_int_equal(epochs, 1);          /* only "epoch 5ms" is well-formed */
	assert_int_equal(rep.n, 8);
	assert_true(reported(&rep, p, 4, "duplicate block"));
	assert_true(reported(&rep, p, 6, "before any epoch"));
	assert_true(reported(&rep, p, 8, "page 300 out of range"));
	assert_true(reported(&rep, p, 8, "bad range '7-2'"));
	assert_true(reported(&rep, p, 9, "unknown block 'vga'"));
	assert_true(reported(&rep, p, 10, "strictly increase"));
	assert_true(reported(&rep, p, 11, "not before the duration"));
	assert_true(reported(&rep, p, 12, "unknown keyword 'bogus'"));
}

static void test_check_line_too_long(void **state)
{
	const char *p = path_of("long.trace");
	size_t hdr = strlen(HDR "epoch 0s\npc.ram");
	size_t n = hdr + (1 << 20) + 64;
	char *text = malloc(n + 32);
	struct reports rep = { 0 };
	(void)state;

	assert_non_null(text);
	memcpy(text, HDR "epoch 0s\npc.ram", hdr);
	for (size_t i = hdr; i < n; i += 2)
		memcpy(text + i, " 1", 2);
	memcpy(text + n, "\npc.ram 1\nepoch 0s\n", 19);
	write_bytes(p, text, n + 19);
	free(text);
	/* checking goes on after the skipped line */
	assert_int_equal(trace_check(p, collect, &rep), 2);
	assert_true(reported(&rep, p, 6, "too long"));
	assert_true(reported(&rep, p, 8, "strictly increase"));
}

/* A .zst cut short: "truncated zstd frame"; a plain file holding zstd data; a .zst
 * holding plain text. */
static void test_check_zstd_defects(void **state)
{
	const char *z = path_of("cut.trace.zst");
	const char *plain = path_of("zst-data.trace");
	const char *fake = write_text("fake.trace.zst", HDR);
	struct reports rep = { 0 };
	struct stat st;
	size_t n;
	char *bytes;
	(void)state;

	write_rt(z);
	assert_int_equal(stat(z, &st), 0);
	assert_int_equal(truncate(z, st.st_size / 2), 0);
	assert_true(trace_check(z, collect, &rep) >= 1);
	assert_non_null(strstr(rep.line[rep.n - 1], "truncated zstd frame"));
	assert_true(!strncmp(rep.line[rep.n - 1], z, strlen(z)));

	bytes = slurp(z, &n);
	write_bytes(plain, bytes, n);
	free(bytes);
	rep.n = 0;
	assert_int_equal(trace_check(plain, collect, &rep), 1);
	assert_non_null(strstr(rep.line[0], "does not end in .zst"));

	rep.n = 0;
	assert_int_equal(trace_check(fake, collect, &rep), 1);
	assert_non_null(strstr(rep.line[0], "bad zstd data"));
}

static void test_check_unreadable(void **state)
{
	struct reports rep = { 0 };
	(void)state;

	assert_int_equal(trace_check(path_of("nope.trace"), collect, &rep), -ENOENT);
	assert_int_equal(rep.n, 1);
	assert_non_null(strstr(rep.line[0], "nope.trace: cannot open"));
}

/* ------------------------------------------------------------------------- writer */

static void test_writer_rejects_bad_header(void **state)
{
	const char *p = path_of("badhdr.trace");
	struct trace_header good = two_blocks(), h;
	trace_writer *w = NULL;
	struct diag d;
	(void)state;

	h = good; h.page_size = 3000;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "power of two"));
	h = good; h.duration_ns = 0;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	h = good; strcpy(h.blocks[1].name, "pc.ram");
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "duplicate"));
	h = good; strcpy(h.blocks[1].name, "has space");
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	h = good; strcpy(h.blocks[1].name, "epoch");
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	h = good; h.blocks[1].size_bytes = 4097;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	h = good; h.n_blocks = 0;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	h = good; h.version = 3;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	assert_int_equal(trace_writer_open(path_of("no/such/dir.trace"), &good, &w, &d), -ENOENT);
	assert_false(exists(p));
	assert_false(exists(path_of("badhdr.trace.tmp")));
}

/* Bad calls are refused with a diag and leave the writer usable. */

/* Version 2: layout lines written before the first epoch, read back by trace_next_layout,
 * skipped by trace_next_epoch; a version 1 header takes none. */
static void test_layout_round_trip(void **state)
{
	const char *p = path_of("layout.trace");
	struct trace_header h = two_blocks();
	struct trace_range rg;
	trace_writer *w = NULL;
	trace_reader *r = NULL;
	struct diag d;
	uint64_t t, pages = 0;
	(void)state;

	assert_int_equal(trace_writer_open(p, &h, &w, &d), 0);   /* version 1: no layout */
	assert_int_equal(trace_writer_layout(w, &(struct trace_range){ 0, 0, 1 }), -EINVAL);
	assert_non_null(strstr(trace_writer_diag(w), "version 2"));
	trace_writer_abort(w);
	h.version = TRACE_VERSION_LAYOUT;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), 0);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 0, 0, 1 }), -EINVAL);
	assert_int_equal(trace_writer_comment(w, "before"), 0);
	assert_int_equal(trace_writer_layout(w, &(struct trace_range){ 0, 0, 256 }), 0);
	assert_int_equal(trace_writer_layout(w, &(struct trace_range){ 0, 1000, 24 }), 0);
	assert_int_equal(trace_writer_layout(w, &(struct trace_range){ 1, 5, 1 }), 0);
	assert_int_equal(trace_writer_layout(w, &(struct trace_range){ 1, 4096, 1 }), -EINVAL);
	assert_int_equal(trace_writer_comment(w, "after the layout"), 0);
	assert_int_equal(trace_writer_epoch(w, 0), 0);
	assert_int_equal(trace_writer_layout(w, &(struct trace_range){ 0, 0, 1 }), -EINVAL);
	assert_non_null(strstr(trace_writer_diag(w), "after the first epoch"));
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 0, 7, 1 }), 0);
	assert_int_equal(trace_writer_close(w), 0);
	assert_int_equal(trace_check(p, NULL, NULL), 0);

	assert_int_equal(trace_open(p, &r, &d), 0);
	assert_int_equal(trace_header(r)->version, TRACE_VERSION_LAYOUT);
	while (trace_next_layout(r, &rg) == 1)
		pages += rg.n_pages;
	assert_int_equal(pages, 256 + 24 + 1);
	assert_int_equal(trace_next_epoch(r, &t), 1);
	assert_int_equal(trace_next_range(r, &rg), 1);
	assert_int_equal(rg.first_page, 7);
	trace_close(r);
	/* trace_next_epoch skips a layout not read */
	assert_int_equal(trace_open(p, &r, &d), 0);
	assert_int_equal(trace_next_epoch(r, &t), 1);
	assert_int_equal(trace_next_layout(r, &rg), 0);
	trace_close(r);
	/* a version 1 trace has no layout */
	h.version = TRACE_VERSION;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), 0);
	assert_int_equal(trace_writer_epoch(w, 0), 0);
	assert_int_equal(trace_writer_close(w), 0);
	assert_int_equal(trace_open(p, &r, &d), 0);
	assert_int_equal(trace_next_layout(r, &rg), 0);
	trace_close(r);
	/* version 3 is refused by the writer; a block named 'layout' only in version 1 */
	h.version = 3;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	h.version = TRACE_VERSION_LAYOUT;
	strcpy(h.blocks[1].name, "layout");
	assert_int_equal(trace_writer_open(p, &h, &w, &d), -EINVAL);
	h.version = TRACE_VERSION;
	assert_int_equal(trace_writer_open(p, &h, &w, &d), 0);
	assert_int_equal(trace_writer_epoch(w, 0), 0);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 1, 3, 1 }), 0);
	assert_int_equal(trace_writer_close(w), 0);
	assert_int_equal(trace_check(p, NULL, NULL), 0);
}

static void test_writer_rejects_bad_calls(void **state)
{
	const char *p = path_of("badcalls.trace");
	struct trace_header h = two_blocks();
	trace_writer *w = NULL;
	struct diag d;
	(void)state;

	assert_int_equal(trace_writer_open(p, &h, &w, &d), 0);
	assert_int_equal(trace_writer_comment(w, "two\nlines"), -EINVAL);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 0, 0, 1 }), -EINVAL);
	assert_non_null(strstr(trace_writer_diag(w), "before any epoch"));
	assert_int_equal(trace_writer_epoch(w, 2000000000), -EINVAL);
	assert_non_null(strstr(trace_writer_diag(w), "duration"));
	assert_int_equal(trace_writer_epoch(w, 10), 0);
	assert_int_equal(trace_writer_epoch(w, 10), -EINVAL);
	assert_int_equal(trace_writer_epoch(w, 9), -EINVAL);
	assert_int_equal(trace_writer_comment(w, "late"), -EINVAL);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 2, 0, 1 }), -EINVAL);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 1, 0, 0 }), -EINVAL);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 1, 4096, 1 }), -EINVAL);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 1, 4000, 97 }), -EINVAL);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 1, 1, UINT64_MAX }),
			 -EINVAL);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 1, 4000, 96 }), 0);
	assert_int_equal(trace_writer_epoch(w, 11), 0);
	assert_int_equal(trace_writer_close(w), 0);
	assert_int_equal(trace_check(p, NULL, NULL), 0);
}

static void test_writer_abort_leaves_no_file(void **state)
{
	const char *p = path_of("aborted.trace.zst");
	const char *tmp = path_of("aborted.trace.zst.tmp");
	struct trace_header h = two_blocks();
	trace_writer *w = NULL;
	struct diag d;
	(void)state;

	assert_int_equal(trace_writer_open(p, &h, &w, &d), 0);
	assert_int_equal(trace_writer_epoch(w, 0), 0);
	assert_int_equal(trace_writer_range(w, &(struct trace_range){ 0, 0, 100 }), 0);
	assert_true(exists(tmp));
	trace_writer_abort(w);
	assert_false(exists(tmp));
	assert_false(exists(p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_plain),
		cmocka_unit_test(test_roundtrip_zst),
		cmocka_unit_test(test_reader_skips_unread_ranges),
		cmocka_unit_test(test_reader_accepts_hand_written),
		cmocka_unit_test(test_reader_errors),
		cmocka_unit_test(test_check_each_defect_class),
		cmocka_unit_test(test_reader_rejects_each_defect_class),
		cmocka_unit_test(test_check_reports_every_defect),
		cmocka_unit_test(test_check_line_too_long),
		cmocka_unit_test(test_check_zstd_defects),
		cmocka_unit_test(test_check_unreadable),
		cmocka_unit_test(test_writer_rejects_bad_header),
		cmocka_unit_test(test_writer_rejects_bad_calls),
		cmocka_unit_test(test_layout_round_trip),
		cmocka_unit_test(test_writer_abort_leaves_no_file),
	};
	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
