/* json - the one JSON string escaper of migbed's writers (run results, metrics, causes,
 * explain, record, timelines, suites): a string literal with '"' and '\' escaped and control
 * bytes as \u00XX; other bytes as they are (the text migbed writes is ASCII or the user's own
 * UTF-8). */
#ifndef MIGBED_SIM_JSON_H
#define MIGBED_SIM_JSON_H
#include <stdio.h>

/* The literal of s to f ("" for NULL). */
void json_string(FILE *f, const char *s);

#endif
