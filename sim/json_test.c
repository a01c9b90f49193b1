/* SPDX-License-Identifier: MIT */
/* json_test - the JSON writer on jansson: documents written compact, keys in the order set,
 * text that is not UTF-8 made writable, numbers as printf rounds them, streams laid out a
 * line per item, NULL values (out of memory) refused. */
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

static void dump(FILE *f, const void *doc) { assert_int_equal(json_dump(f, (json_t *)doc), 0); }

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
	json_object_set_new(doc, "esc", json_of_str("a\"b\\c\n\x01\xc3\xa9"));
	char *o = written(dump, doc);
	assert_string_equal(o, "{\"zeta\":\"z\",\"alpha\":true,\"mid\":-3,\"list\":[],\"bytes\":\"ok??.\",\"null-text\":\"\","
			       "\"esc\":\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\"}\n");
	free(o);
	assert_int_equal(json_dump(stdout, NULL), -EIO);
	/* what the writer writes, the reader reads back */
	struct diag d = { 0 };
	json_t *back = json_in_text("{\"k\":\"v\"}", "t", &d);
	assert_non_null(back);
	o = written(dump, back);
	assert_string_equal(o, "{\"k\":\"v\"}\n");
	free(o);
}

static void test_numbers(void **st)
{
	(void)st;
	json_t *doc = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "mbps", json_of_fixed(0.519, 3), "tenth",
				json_of_fixed(2.25, 1), "ms", json_of_fixed(799.6, 0), "zero", json_of_fixed(-0.0001, 3),
				"sig", json_of_sig(1234567.0, 6), "nan", json_of_fixed(0.0 / 0.0, 3), "big",
				json_of_u64(18446744073709551615ull), "max", json_of_u64(9223372036854775807ull), "us",
				json_real(1234567 / 1000.0));
	char *o = written(dump, doc);
	/* printf's rounding (2.25 -> "2.2", half to even), an integer for 0 decimals */
	assert_string_equal(o, "{\"mbps\":0.519,\"tenth\":2.2,\"ms\":800,\"zero\":0.0,\"sig\":1234570.0,\"nan\":null,"
			       "\"big\":1.84467440737096e19,\"max\":9223372036854775807,\"us\":1234.567}\n");
	free(o);
}

struct stream_case {
	const char *first, *next, *after, *close;
	int n;
};

static void stream(FILE *out, const void *arg)
{
	const struct stream_case *c = arg;
	struct json_stream js;
	assert_int_equal(json_stream_open(&js, out, json_pack("{s:i}", "v", 1), "runs", c->first, c->next, c->after), 0);
	for (int i = 0; i < c->n; i++)
		assert_int_equal(json_stream_item(&js, json_pack("{s:i}", "i", i)), 0);
	assert_int_equal(json_stream_close(&js, c->close, json_pack("{s:b}", "ok", 1)), 0);
}

static void test_stream(void **st)
{
	(void)st;
	struct stream_case lines = { "\n", ",", "\n", "", 2 }, rows = { "\n", ",\n", "", "\n", 2 };
	char *o = written(stream, &lines);
	assert_string_equal(o, "{\"v\":1,\"runs\":[\n{\"i\":0}\n,{\"i\":1}\n],\"ok\":true}\n");
	free(o);
	o = written(stream, &rows);
	assert_string_equal(o, "{\"v\":1,\"runs\":[\n{\"i\":0},\n{\"i\":1}\n],\"ok\":true}\n");
	struct diag d = { 0 };
	json_t *back = json_in_text(o, "t", &d);
	free(o);
	assert_non_null(back);
	assert_int_equal(json_array_size(json_object_get(back, "runs")), 2);
	json_decref(back);
	/* a value that could not be built: the stream's error, kept */
	struct json_stream js;
	FILE *f = fopen("/dev/null", "w");
	assert_non_null(f);
	assert_int_equal(json_stream_open(&js, f, json_object(), "x", "", ",", ""), 0);
	assert_int_equal(json_stream_item(&js, NULL), -EIO);
	assert_int_equal(json_stream_item(&js, json_integer(1)), 0);
	assert_int_equal(json_stream_close(&js, "", NULL), -EIO);
	fclose(f);
}

static void test_build_chain(void **st)
{
	(void)st;
	json_t *o = json_object(), *a = json_array();
	assert_true(json_set(&o, "k", json_integer(1)));
	assert_true(json_add(&a, json_integer(2)));
	assert_false(json_add(&a, NULL));   /* released, NULL from now on */
	assert_null(a);
	assert_false(json_set(&o, "a", a));
	assert_null(o);
	assert_false(json_set(&o, "b", json_integer(3)));   /* the value released too (ASan: no leak) */
	assert_int_equal(json_put(stdout, o), -EIO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_order_and_text),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_build_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
