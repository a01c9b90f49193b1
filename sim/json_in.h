/* SPDX-License-Identifier: MIT */
/* json_in - the one JSON reader of migbed's inputs (libjansson): result files, bundles,
 * tables. A document that is not JSON is refused with "FILE:LINE:COLUMN: what jansson says"
 * (the caller prints it and exits 2); duplicate keys are refused too. The values are
 * jansson's json_t (json_decref when done). The writer is sim/json.h. */
#ifndef MIGBED_SIM_JSON_IN_H
#define MIGBED_SIM_JSON_IN_H
#include <jansson.h>

#include "sim/diag.h"

/* The document in the file at path, NULL and d set when it cannot be read or is not JSON. */
json_t *json_in_file(const char *path, struct diag *d);
/* The document in text, named `name` in a diagnostic. */
json_t *json_in_text(const char *text, const char *name, struct diag *d);
/* obj[key] if it is a string, else NULL. */
const char *json_in_str(const json_t *obj, const char *key);
/* A new string value of s, NULL if s is not UTF-8 (the writer's json_of_str makes any text
 * writable). */
json_t *json_in_string_value(const char *s);

#endif
