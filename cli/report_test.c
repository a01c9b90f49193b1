/* SPDX-License-Identifier: MIT */
/* report_test - the CI formats (cli/report.h): JUnit's counts follow the cases and its text is
 * escaped for XML (control characters too); TAP escapes '#' in a name, quotes YAML values,
 * leaves out an unmeasured time, and a sink streams TAP with a trailing plan. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/report.h"

/* What fn wrote into a FILE, as a string (free it). */
static char *text_of(void (*fn)(FILE *f, void *arg), void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	fn(f, arg);
	fclose(f);
	return buf;
}

static void write_three(FILE *f, void *arg)
{
	(void)arg;
	struct report_junit j;
	struct report_case pass = { .classname = "c", .name = "a<b", .secs = 0.5, .out = "x & y" };
	struct report_case fail = { .classname = "c", .name = "f", .result = REPORT_FAIL, .type = "T\"1",
				    .message = "m'1", .text = "bell\a", .secs = -1 };
	struct report_case err = { .classname = "c", .name = "e", .file = "d/e.scn", .result = REPORT_ERROR,
				   .type = "bad input", .message = "e.scn:1: no" };
	assert_int_equal(report_junit_begin(&j), 0);
	report_junit_case(&j, &pass);
	report_junit_case(&j, &fail);
	report_junit_case(&j, &err);
	assert_int_equal(report_junit_end(&j, f, "s & t", 1.25), 0);
	report_junit_free(&j);
}

static void test_junit(void **state)
{
	(void)state;
	char *x = text_of(write_three, NULL);
	assert_non_null(strstr(x, "<testsuites name=\"s &amp; t\" tests=\"3\" failures=\"1\" errors=\"1\" time=\"1.250\">"));
	assert_non_null(strstr(x, "<testsuite name=\"s &amp; t\" tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"0\""));
	assert_non_null(strstr(x, "<testcase classname=\"c\" name=\"a&lt;b\" time=\"0.500\">"));
	assert_non_null(strstr(x, "<system-out>x &amp; y</system-out>"));
	assert_non_null(strstr(x, "<failure type=\"T&quot;1\" message=\"m&apos;1\">bell?</failure>"));
	assert_non_null(strstr(x, "name=\"f\" time=\"0.000\""));   /* not measured: 0 */
	assert_non_null(strstr(x, "name=\"e\" file=\"d/e.scn\""));
	assert_non_null(strstr(x, "<error type=\"bad input\" message=\"e.scn:1: no\"/>"));
	assert_null(strstr(x, "<failure type=\"bad input\""));
	free(x);
}

static void write_tap(FILE *f, void *arg)
{
	(void)arg;
	struct report_case c = { .name = "wc.send@dst #2 \\", .result = REPORT_FAIL, .secs = -1,
				 .fields = { { "cause", "it's\nbroken" } } };
	report_tap_case(f, 7, &c);
}

static void test_tap_case(void **state)
{
	(void)state;
	char *t = text_of(write_tap, NULL);
	assert_string_equal(t, "not ok 7 - wc.send@dst \\#2 \\\\\n  ---\n  cause: 'it''s broken'\n  ...\n");
	free(t);
}

static void test_sink(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct report_sink s;
	struct diag d = { 0 };
	struct report_case c = { .name = "seed-1", .secs = 0.25 };
	assert_non_null(f);
	assert_int_equal(report_sink_open(&s, "migbed swarm", NULL, f, &d), 0);
	assert_string_equal(report_sink_writing(&s), "");
	report_sink_case(&s, &c);
	c.name = "seed-2";
	c.result = REPORT_FAIL;
	report_sink_case(&s, &c);
	assert_int_equal(report_sink_close(&s, 1.0, &d), 0);
	report_sink_abort(&s);   /* a no-op after close */
	fclose(f);
	assert_string_equal(buf, "TAP version 13\nok 1 - seed-1\n  ---\n  seconds: 0.250\n  ...\n"
				 "not ok 2 - seed-2\n  ---\n  seconds: 0.250\n  ...\n1..2\n");
	free(buf);
	/* a JUnit path that cannot be written: refused at open, nothing kept */
	assert_int_not_equal(report_sink_open(&s, "x", "/nonexistent-dir/j.xml", NULL, &d), 0);
	assert_non_null(strstr(d.msg, "/nonexistent-dir/j.xml"));
	report_sink_abort(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_junit),
		cmocka_unit_test(test_tap_case),
		cmocka_unit_test(test_sink),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
