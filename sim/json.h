/* SPDX-License-Identifier: MIT */
/* json - the one JSON writer of migbed (run results, metrics, causes, explain, record,
 * timelines, suites, sweeps, swarms, tortures, ...), on libjansson: every document is built as
 * jansson values and written by jansson, compact (',' and ':' without spaces), keys in the
 * order they were set. sim/json_in.h is the reader and gives the json_t type.
 *
 * Values migbed builds from its own text: json_of_str (text that is not UTF-8 as '?': jansson
 * writes only valid UTF-8); numbers: json_of_u64 (an integer; above INT64_MAX, which jansson
 * cannot hold, the nearest real) and json_of_fixed/json_of_sig (a real rounded as printf rounds it to a number of
 * decimals or digits, written as the shortest text of that value: 0.519, not
 * 0.51900000000000002).
 *
 * Every function that takes a json_t * here takes the reference (json_decref'd), also on
 * error, so a value can be built in the call: json_put(f, json_pack(...)). A NULL value (one
 * could not be built: out of memory, or text json_pack refused) is -EIO, nothing written.
 *
 * A document too long to hold (an event stream) is written in pieces: an object whose one
 * array member is written item by item (json_stream_*); each piece is a jansson value. */
#ifndef MIGBED_SIM_JSON_H
#define MIGBED_SIM_JSON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_t;
struct json_t *json_of_str(const char *s);
struct json_t *json_of_u64(uint64_t v);
/* The number printf's "%.Nf" (json_of_fixed: N decimals; 0: an integer) or "%.Ng"
 * (json_of_sig: N significant digits) writes for v, as a value; null if v is not finite. */
struct json_t *json_of_fixed(double v, int decimals);
struct json_t *json_of_sig(double v, int digits);

/* Building: (*obj)[key] = v, or v appended to the array *arr; true if done. When v or
 * the object or array is NULL or the set fails, both are released and the pointer becomes NULL (so a
 * chain of calls ends in NULL, which the writers below refuse). */
bool json_set(struct json_t **obj, const char *key, struct json_t *v);
bool json_add(struct json_t **arr, struct json_t *v);

/* doc and a newline to f: 0, or -EIO (doc NULL, or a write failed). */
int json_dump(FILE *f, struct json_t *doc);
/* v to f, no newline: 0, or -EIO. */
int json_put(FILE *f, struct json_t *v);

/* {HEAD's members,"KEY":[FIRST item AFTER NEXT item AFTER ... CLOSE],TAIL's members}\n
 * where the separators (first: after the '['; next: before every item but the first, with
 * the ','; after: after each item; close: before the ']') keep a line-per-item layout that
 * line-based tools read. err: the first failure (-EIO), 0 if none. */
struct json_stream {
	FILE *f;
	size_t items;
	const char *first, *next, *after;
	int err;
};
int json_stream_open(struct json_stream *s, FILE *f, struct json_t *head, const char *key, const char *first,
		     const char *next, const char *after);
int json_stream_item(struct json_stream *s, struct json_t *item);
int json_stream_close(struct json_stream *s, const char *close, struct json_t *tail);

#endif
