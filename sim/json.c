/* SPDX-License-Identifier: MIT */
/* json - the JSON string escaper (see json.h). */
#include "sim/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json_in.h"

void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

json_t *json_of_str(const char *s)
{
	if (!s)
		s = "";
	json_t *v = json_in_string_value(s);
	if (v)
		return v;
	char *t = strdup(s);               /* not UTF-8: every byte >= 0x80 as '?' */
	if (!t)
		return NULL;
	for (char *c = t; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	v = json_in_string_value(t);
	free(t);
	return v;
}

int json_dump(FILE *f, const json_t *doc)
{
	if (!doc || json_dumpf(doc, f, JSON_COMPACT | JSON_PRESERVE_ORDER) || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}
