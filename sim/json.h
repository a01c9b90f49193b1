/* SPDX-License-Identifier: MIT */
/* json - the one JSON string escaper of migbed's writers (run results, metrics, causes,
 * explain, record, timelines, suites): a string literal with '"' and '\' escaped and control
 * bytes as \u00XX; other bytes as they are (the text migbed writes is ASCII or the user's own
 * UTF-8). */
#ifndef MIGBED_SIM_JSON_H
#define MIGBED_SIM_JSON_H
#include <stdio.h>

/* The literal of s to f ("" for NULL). */
void json_string(FILE *f, const char *s);

/* The writer on libjansson, for documents built as jansson values (sim/json_in.h gives the
 * type): json_of_str is a string value of s, bytes that are not UTF-8 as '?' (jansson writes only
 * valid UTF-8); json_dump writes doc compact (',' and ':' without spaces, keys in the order
 * they were set) and a newline: 0, or -EIO (doc NULL: a value could not be built). */
struct json_t;
struct json_t *json_of_str(const char *s);
int json_dump(FILE *f, const struct json_t *doc);

#endif
