/* SPDX-License-Identifier: MIT */
/* timeline_test - the event log -> trace JSON / gnuplot data conversion: spans from the
 * right events, spans never backwards, one writes-in-flight sample per time stamp, bad lines
 * named by FILE:LINE with nothing written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/timeline.h"

static char dir[] = "/tmp/migbed-timeline-test-XXXXXX";

static const char *path(const char *name)
{
	static char buf[4][256];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
	return buf[i];
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(path(name), "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *name)
{
	FILE *f = fopen(path(name), "r");
	if (!f)
		return NULL;
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static const char *LOG =
	"0.000000000 sim hca_world backend=model\n"
	"0.000100000 sim setup_done pending_pages=10\n"
	"0.000100000 src ctl_send type=register_request len=16 repeat=1\n"
	"0.000150000 src registered block=0 chunk=0\n"
	"0.000150000 src post_send op=write wr_id=0x1 len=4096 rkey=0x1\n"
	"0.000150000 src post_send op=write wr_id=0x2 len=4096 rkey=0x1\n"
	"0.000200000 src wc wr_id=0x1 op=write status=SUCCESS len=4096\n"
	"0.000300000 sim round n=1 pages=10 pending_pages=0\n"
	"0.000300000 sim vm_stop pending_pages=0\n"
	"0.000250000 src wc wr_id=0x2 op=write status=SUCCESS len=4096\n"
	"0.000400000 dst completed pinned_peak=1048576\n";

static void test_json(void **state)
{
	(void)state;
	struct diag d = { { 0 } };
	put("a.ev", LOG);
	assert_int_equal(timeline_write(path("a.ev"), path("a.json"), &d), 0);
	char *j = slurp("a.json");
	assert_non_null(j);
	assert_non_null(strstr(j, "{\"ph\":\"X\",\"name\":\"setup\",\"pid\":1,\"tid\":1,\"ts\":0.0,\"dur\":100.0"));
	assert_non_null(strstr(j, "{\"ph\":\"X\",\"name\":\"round 1\",\"pid\":1,\"tid\":1,\"ts\":100.0,\"dur\":200.0"));
	assert_non_null(strstr(j, "{\"ph\":\"X\",\"name\":\"chunk 0/0\",\"pid\":2,\"tid\":3,\"ts\":100.0,\"dur\":50.0"));
	/* the downtime: VM stopped -> the destination completed */
	assert_non_null(strstr(j, "\"name\":\"downtime (VM stopped)\",\"pid\":1,\"tid\":1,\"ts\":300.0,\"dur\":100.0"));
	/* two writes posted at one time stamp: one sample (2), then 1, then 0 */
	assert_non_null(strstr(j, "\"ts\":150.0,\"args\":{\"writes\":2}"));
	assert_null(strstr(j, "\"ts\":150.0,\"args\":{\"writes\":1}"));
	assert_non_null(strstr(j, "\"ts\":250.0,\"args\":{\"writes\":0}"));
	/* no span runs backwards, though the log's last wc is earlier than the round */
	assert_null(strstr(j, "\"dur\":-"));
}

static void test_backwards(void **state)
{
	(void)state;
	struct diag d = { { 0 } };
	/* a hand-edited log: the round ends before the sleep that precedes it is over */
	put("w.ev", "0.000100000 sim sleep ns=1000000\n0.000200000 sim round n=2 pages=1 pending_pages=0\n");
	assert_int_equal(timeline_write(path("w.ev"), path("w.json"), &d), 0);
	assert_non_null(strstr(slurp("w.json"), "\"name\":\"round 2\",\"pid\":1,\"tid\":1,\"ts\":1100.0,\"dur\":0.0"));
}

static void test_plot_data(void **state)
{
	(void)state;
	struct diag d = { { 0 } };
	put("a.ev", LOG);
	FILE *f = fopen(path("a.gp"), "w");
	assert_non_null(f);
	assert_int_equal(timeline_plot_data(path("a.ev"), f, &d), 0);
	fclose(f);
	char *g = slurp("a.gp");
	assert_non_null(strstr(g, "$spans << EOD\n0.000000 0.100000 3\n"));
	assert_non_null(strstr(g, "0.100000 0.150000 2\n"));
	assert_non_null(strstr(g, "0.300000 0.400000 1\n"));
	assert_non_null(strstr(g, "$writes << EOD\n0 0\n0.150000 2\n0.200000 1\n0.250000 0\n"));
	assert_non_null(strstr(g, "end_ms = 0.400000\n"));
}

static void test_bad_line(void **state)
{
	(void)state;
	struct diag d = { { 0 } };
	put("b.ev", "0.000000000 src listen rc=0\n0.1 src x\n");
	assert_int_equal(timeline_write(path("b.ev"), path("b.json"), &d), -22);
	assert_non_null(strstr(d.msg, "b.ev:2: not an event-log line"));
	assert_int_equal(access(path("b.json"), F_OK), -1);
	put("c.ev", "0.000000000 src listen =0\n");
	assert_int_equal(timeline_write(path("c.ev"), path("c.json"), &d), -22);
	assert_non_null(strstr(d.msg, "c.ev:1:"));
	assert_int_not_equal(timeline_write(path("missing.ev"), path("m.json"), &d), 0);
	assert_non_null(strstr(d.msg, "missing.ev: cannot read the event log"));
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_backwards),
		cmocka_unit_test(test_plot_data),
		cmocka_unit_test(test_bad_line),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 1;
	return rc;
}
