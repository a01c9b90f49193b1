/* json - the one JSON string escaper the writers share (run reports, timelines). */
#ifndef MIGBED_SIM_JSON_H
#define MIGBED_SIM_JSON_H
#include <stdio.h>

/* A JSON string literal of s (quotes and escapes; NULL is ""). */
void json_string(FILE *f, const char *s);

#endif
