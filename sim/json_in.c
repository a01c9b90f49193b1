/* SPDX-License-Identifier: MIT */
/* json_in - the JSON reader on libjansson (see json_in.h). */
#include "sim/json_in.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static json_t *refused(const json_error_t *e, const char *name, struct diag *d)
{
	if (e->line > 0)
		diag_set(d, "%s:%d:%d: %s", name, e->line, e->column, e->text);
	else
		diag_set(d, "%s: %s", name, e->text);
	return NULL;
}

json_t *json_in_file(const char *path, struct diag *d)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		diag_set(d, "%s: %s", path, strerror(errno));
		return NULL;
	}
	json_error_t e;
	json_t *j = json_loadf(f, JSON_REJECT_DUPLICATES, &e);
	fclose(f);
	return j ? j : refused(&e, path, d);
}

json_t *json_in_text(const char *text, const char *name, struct diag *d)
{
	json_error_t e;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &e);
	return j ? j : refused(&e, name, d);
}

const char *json_in_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

json_t *json_in_string_value(const char *s)
{
	return json_stringn(s, strlen(s));
}
