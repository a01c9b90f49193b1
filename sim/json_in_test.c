/* SPDX-License-Identifier: MIT */
/* json_in_test - the one JSON reader: good documents, and bad ones named FILE:LINE:COLUMN. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/json_in.h"

static void test_text(void **st)
{
	(void)st;
	struct diag d = { 0 };
	json_t *j = json_in_text("{\"cause\":\"NONE\",\"n\":3,\"side\":{\"qemu-log\":[\"a\"]}}", "t", &d);
	assert_non_null(j);
	assert_string_equal(json_in_str(j, "cause"), "NONE");
	assert_null(json_in_str(j, "n"));          /* not a string */
	assert_null(json_in_str(j, "missing"));
	assert_null(json_in_str(NULL, "cause"));
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "side"), "qemu-log")), 1);
	json_decref(j);
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{\"a\":1,\n \"b\": tru}", "t:2:9: invalid token near 'tru'" },
		{ "{\"a\":1,\"a\":2}", "t:1:10: duplicate object key near '\"a\"'" },
		{ "", "t:1:0: '[' or '{' expected near end of file" },
		{ "{\"a\":1}\n[]", "t:2:1: end of file expected near '['" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		diag_clear(&d);
		assert_null(json_in_text(bad[i].text, "t", &d));
		assert_string_equal(d.msg, bad[i].want);
	}
	assert_null(json_in_text("{", "t", NULL));   /* no diag wanted */
}

static void test_file(void **st)
{
	(void)st;
	char path[] = "/tmp/json_in_test-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	static const char text[] = "{\"verdict\":\"fail\",\n \"cause\":}\n";
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	struct diag d = { 0 };
	char want[64];
	assert_null(json_in_file(path, &d));
	snprintf(want, sizeof want, "%s:2:10: unexpected token near '}'", path);
	assert_string_equal(d.msg, want);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"verdict\":\"fail\"}\n", f);
	fclose(f);
	json_t *j = json_in_file(path, &d);
	assert_non_null(j);
	assert_string_equal(json_in_str(j, "verdict"), "fail");
	json_decref(j);
	unlink(path);
	assert_null(json_in_file(path, &d));
	snprintf(want, sizeof want, "%s: No such file or directory", path);
	assert_string_equal(d.msg, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
