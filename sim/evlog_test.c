/* SPDX-License-Identifier: MIT */
/* evlog_test - exact line format, tmp+rename, abort, counting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/evlog.h"

struct fx {
	char dir[64];
	char path[128];
	char tmp[160];
};

static int setup(void **st)
{
	struct fx *f = calloc(1, sizeof *f);

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/evlog_test.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof f->path, "%s/run.log", f->dir);
	snprintf(f->tmp, sizeof f->tmp, "%s/run.log.tmp", f->dir);
	*st = f;
	return 0;
}

static int teardown(void **st)
{
	struct fx *f = *st;

	unlink(f->path);
	unlink(f->tmp);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Whole file into a static buffer; NULL if it does not exist. */
static const char *slurp(const char *path)
{
	static char buf[4096];
	FILE *fp = fopen(path, "r");
	size_t n;

	if (!fp)
		return NULL;
	n = fread(buf, 1, sizeof buf - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static void test_exact_bytes(void **st)
{
	struct fx *f = *st;
	vclock clk;
	evlog *ev = NULL;

	vclock_init(&clk);
	assert_int_equal(evlog_open(f->path, &clk, &ev), 0);
	evlog_emit(ev, "sim", "start", NULL);
	vclock_advance_to(&clk, 123456);
	evlog_emit(ev, "src", "reg_mr", "block=%d chunk=%d bytes=%u", 0, 3, 1048576u);
	vclock_advance_to(&clk, 61 * VCLOCK_NS_PER_S + 7);
	evlog_emit(ev, "dst", "done", "%s", "ok=1");
	assert_int_equal(evlog_count(ev), 3);
	assert_int_equal(evlog_close(ev), 0);
	assert_string_equal(slurp(f->path), "0.000000000 sim start\n"
					     "0.000123456 src reg_mr block=0 chunk=3 bytes=1048576\n"
					     "61.000000007 dst done ok=1\n");
	assert_int_equal(access(f->tmp, F_OK), -1);
}

static void test_written_to_tmp_until_close(void **st)
{
	struct fx *f = *st;
	vclock clk;
	evlog *ev = NULL;

	vclock_init(&clk);
	assert_int_equal(evlog_open(f->path, &clk, &ev), 0);
	evlog_emit(ev, "sim", "tick", NULL);
	assert_int_equal(access(f->tmp, F_OK), 0);
	assert_null(slurp(f->path));
	assert_int_equal(evlog_close(ev), 0);
	assert_int_equal(access(f->tmp, F_OK), -1);
	assert_string_equal(slurp(f->path), "0.000000000 sim tick\n");
}

static void test_abort_leaves_no_file(void **st)
{
	struct fx *f = *st;
	vclock clk;
	evlog *ev = NULL;

	vclock_init(&clk);
	assert_int_equal(evlog_open(f->path, &clk, &ev), 0);
	for (int i = 0; i < 1000; i++)
		evlog_emit(ev, "src", "write", "chunk=%d", i);
	evlog_abort(ev);
	assert_int_equal(access(f->tmp, F_OK), -1);
	assert_int_equal(access(f->path, F_OK), -1);
}

static void test_null_path_counts_only(void **st)
{
	struct fx *f = *st;
	vclock clk;
	evlog *ev = NULL;

	vclock_init(&clk);
	assert_int_equal(evlog_open(NULL, &clk, &ev), 0);
	for (int i = 0; i < 100; i++) {
		char name[16];
		snprintf(name, sizeof name, "ev%d", i % 10);
		evlog_emit(ev, "src", name, "i=%d", i);
	}
	evlog_emit(ev, "dst", "other", NULL);
	assert_int_equal(evlog_count(ev), 101);
	assert_int_equal(evlog_count_event(ev, "ev0"), 10);
	assert_int_equal(evlog_count_event(ev, "ev9"), 10);
	assert_int_equal(evlog_count_event(ev, "other"), 1);
	assert_int_equal(evlog_count_event(ev, "never"), 0);
	assert_int_equal(evlog_close(ev), 0);
	assert_int_equal(access(f->path, F_OK), -1);
}

/* Many distinct names: the count table grows and keeps every count. */
static void test_many_event_names(void **st)
{
	vclock clk;
	evlog *ev = NULL;
	char name[32];

	(void)st;
	vclock_init(&clk);
	assert_int_equal(evlog_open(NULL, &clk, &ev), 0);
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof name, "e%d", i % 1000);
		evlog_emit(ev, "sim", name, NULL);
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "e%d", i);
		assert_int_equal(evlog_count_event(ev, name), 3);
	}
	assert_int_equal(evlog_close(ev), 0);
}

static void test_set_clock(void **st)
{
	struct fx *f = *st;
	vclock a, b;
	evlog *ev = NULL;

	vclock_init(&a);
	vclock_init(&b);
	vclock_advance_to(&a, 5);
	vclock_advance_to(&b, 2 * VCLOCK_NS_PER_S);
	assert_int_equal(evlog_open(f->path, &a, &ev), 0);
	evlog_emit(ev, "src", "one", NULL);
	evlog_set_clock(ev, &b);
	evlog_emit(ev, "dst", "two", NULL);
	assert_int_equal(evlog_close(ev), 0);
	assert_string_equal(slurp(f->path), "0.000000005 src one\n2.000000000 dst two\n");
}

static void test_open_errors(void **st)
{
	vclock clk;
	evlog *ev = NULL;

	(void)st;
	vclock_init(&clk);
	assert_true(evlog_open("/nonexistent-dir/x.log", &clk, &ev) < 0);
	assert_null(ev);
	assert_true(evlog_open("", &clk, &ev) < 0);
	assert_true(evlog_open(NULL, NULL, &ev) < 0);
}

struct watch_seen {
	int calls;
	char side[16], event[48];
	uint64_t nth, total_at_call;
	evlog *ev;
};

static void on_watch(void *arg, const char *side, const char *event, uint64_t nth)
{
	struct watch_seen *w = arg;
	w->calls++;
	snprintf(w->side, sizeof w->side, "%s", side);
	snprintf(w->event, sizeof w->event, "%s", event);
	w->nth = nth;
	w->total_at_call = evlog_count(w->ev);
}

/* The watch fires once, after the nth line of its side and event (not of another side),
 * whether or not the log has a file; the log's bytes are the same with or without it. */
static void test_watch(void **st)
{
	vclock clk;
	evlog *ev = NULL;
	struct watch_seen w = { 0 };

	(void)st;
	vclock_init(&clk);
	assert_int_equal(evlog_open(NULL, &clk, &ev), 0);
	w.ev = ev;
	assert_int_equal(evlog_watch(ev, "src", "reg_mr", 0, on_watch, &w), -EINVAL);
	assert_int_equal(evlog_watch(ev, "src", "two words", 1, on_watch, &w), -EINVAL);
	assert_int_equal(evlog_watch(ev, "src", "reg_mr", 1, NULL, &w), -EINVAL);
	assert_int_equal(evlog_watch(ev, "src", "reg_mr", 2, on_watch, &w), 0);
	evlog_emit(ev, "dst", "reg_mr", NULL);
	evlog_emit(ev, "src", "reg_mr", NULL);
	evlog_emit(ev, "dst", "reg_mr", NULL);
	assert_int_equal(w.calls, 0);
	evlog_emit(ev, "src", "reg_mr", "n=%d", 2);
	assert_int_equal(w.calls, 1);
	assert_string_equal(w.side, "src");
	assert_string_equal(w.event, "reg_mr");
	assert_int_equal(w.nth, 2);
	assert_int_equal(w.total_at_call, 4);     /* after the line, not before */
	evlog_emit(ev, "src", "reg_mr", NULL);
	evlog_emit(ev, "src", "reg_mr", NULL);
	assert_int_equal(w.calls, 1);             /* once */
	assert_int_equal(evlog_watch(ev, "*", "round", 1, on_watch, &w), 0);
	evlog_emit(ev, "sim", "round", NULL);
	assert_int_equal(w.calls, 2);
	assert_string_equal(w.side, "sim");
	evlog_abort(ev);
}

static void test_watch_same_bytes(void **st)
{
	struct fx *f = *st;
	vclock clk;
	evlog *ev = NULL;
	struct watch_seen w = { 0 };

	vclock_init(&clk);
	assert_int_equal(evlog_open(f->path, &clk, &ev), 0);
	w.ev = ev;
	assert_int_equal(evlog_watch(ev, "src", "one", 1, on_watch, &w), 0);
	evlog_emit(ev, "src", "one", "a=%d", 1);
	evlog_emit(ev, "dst", "two", NULL);
	assert_int_equal(evlog_close(ev), 0);
	assert_int_equal(w.calls, 1);
	assert_string_equal(slurp(f->path), "0.000000000 src one a=1\n0.000000000 dst two\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exact_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_written_to_tmp_until_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_leaves_no_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_null_path_counts_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_clock, setup, teardown),
		cmocka_unit_test(test_many_event_names),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_watch),
		cmocka_unit_test_setup_teardown(test_watch_same_bytes, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
