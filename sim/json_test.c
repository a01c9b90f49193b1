/* SPDX-License-Identifier: MIT */
/* json_test - the JSON writer: the escaper, and documents on jansson written compact, keys in
 * the order set, text that is not UTF-8 made writable. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json.h"
#include "sim/json_in.h"

static char *written(void (*fn)(FILE *, const void *), const void *arg)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	assert_non_null(f);
	fn(f, arg);
	fclose(f);
	return buf;
}

static void esc(FILE *f, const void *s) { json_string(f, s); }
static void dump(FILE *f, const void *doc) { assert_int_equal(json_dump(f, doc), 0); }

static void test_escaper(void **st)
{
	(void)st;
	char *o = written(esc, "a\"b\\c\n\x01\xc3\xa9");
	assert_string_equal(o, "\"a\\\"b\\\\c\\u000a\\u0001\xc3\xa9\"");
	free(o);
	o = written(esc, NULL);
	assert_string_equal(o, "\"\"");
	free(o);
}

static void test_dump_order_and_text(void **st)
{
	(void)st;
	json_t *doc = json_object();
	json_object_set_new(doc, "zeta", json_of_str("z"));
	json_object_set_new(doc, "alpha", json_boolean(1));
	json_object_set_new(doc, "mid", json_integer(-3));
	json_object_set_new(doc, "list", json_array());
	json_object_set_new(doc, "bytes", json_of_str("ok\xff\xfe."));   /* not UTF-8 */
	json_object_set_new(doc, "null-text", json_of_str(NULL));
	char *o = written(dump, doc);
	assert_string_equal(o, "{\"zeta\":\"z\",\"alpha\":true,\"mid\":-3,\"list\":[],\"bytes\":\"ok??.\",\"null-text\":\"\"}\n");
	free(o);
	json_decref(doc);
	assert_int_equal(json_dump(stdout, NULL), -EIO);
	/* what the writer writes, the reader reads back */
	struct diag d = { 0 };
	json_t *back = json_in_text("{\"k\":\"v\"}", "t", &d);
	assert_non_null(back);
	o = written(dump, back);
	assert_string_equal(o, "{\"k\":\"v\"}\n");
	free(o);
	json_decref(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escaper),
		cmocka_unit_test(test_dump_order_and_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
