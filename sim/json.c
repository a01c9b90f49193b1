/* SPDX-License-Identifier: MIT */
/* json - the JSON writer on libjansson (see json.h). */
#include "sim/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json_in.h"

/* Reals are rounded by their builder (json_of_fixed) and written with 15 significant digits:
 * every decimal of up to 15 digits reads back as the same double and prints as itself. */
#define JSON_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15))

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

json_t *json_of_u64(uint64_t v)
{
	return v <= (uint64_t)LLONG_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

/* The number printf writes for v with fmt and prec, read back: the value a reader of that
 * text gets (an integer when prec decimals are 0 and it fits). */
static json_t *printed(double v, const char *fmt, int prec, bool integral)
{
	char text[400];
	if (!isfinite(v))
		return json_null();
	if (prec < 0)
		prec = 0;
	if (prec > 17)
		prec = 17;
	snprintf(text, sizeof text, fmt, prec, v);
	double r = strtod(text, NULL);
	if (integral && fabs(r) < 9e18)
		return json_integer((json_int_t)r);
	return json_real(r == 0 ? 0.0 : r);   /* no -0 */
}

json_t *json_of_fixed(double v, int decimals)
{
	return printed(v, "%.*f", decimals, decimals <= 0);
}

json_t *json_of_sig(double v, int digits)
{
	return printed(v, "%.*g", digits, false);
}

bool json_set(json_t **obj, const char *key, json_t *v)
{
	if (*obj && v && !json_object_set_new(*obj, key, v))
		return true;
	json_decref(v);
	json_decref(*obj);
	*obj = NULL;
	return false;
}

bool json_add(json_t **arr, json_t *v)
{
	if (*arr && v && !json_array_append_new(*arr, v))
		return true;
	json_decref(v);
	json_decref(*arr);
	*arr = NULL;
	return false;
}

int json_put(FILE *f, json_t *v)
{
	int rc = !v || json_dumpf(v, f, JSON_FLAGS) ? -EIO : 0;
	json_decref(v);
	return rc;
}

int json_dump(FILE *f, json_t *doc)
{
	int rc = json_put(f, doc);
	return rc || fputc('\n', f) == EOF ? -EIO : 0;
}

/* obj's members as they appear between its braces ("" if none) to f, after a ',' when
 * `comma` and obj has members. */
static int put_members(FILE *f, json_t *obj, bool comma)
{
	if (!obj)
		return -EIO;
	char *s = json_is_object(obj) ? json_dumps(obj, JSON_FLAGS) : NULL;
	size_t n = json_object_size(obj);
	json_decref(obj);
	if (!s)
		return -EIO;
	int rc = 0;
	size_t len = strlen(s);            /* "{...}" */
	if (n && ((comma && fputc(',', f) == EOF) || fwrite(s + 1, 1, len - 2, f) != len - 2))
		rc = -EIO;
	free(s);
	return rc;
}

static int fail(struct json_stream *s, int rc)
{
	if (rc && !s->err)
		s->err = rc;
	return rc;
}

int json_stream_open(struct json_stream *s, FILE *f, json_t *head, const char *key, const char *first,
		     const char *next, const char *after)
{
	*s = (struct json_stream){ .f = f, .first = first, .next = next, .after = after };
	bool members = head && json_object_size(head);
	if (fputc('{', f) == EOF)
		return fail(s, -EIO);
	if (put_members(f, head, false) || (members && fputc(',', f) == EOF) || json_put(f, json_of_str(key)) ||
	    fputs(":[", f) == EOF || fputs(first, f) == EOF)
		return fail(s, -EIO);
	return 0;
}

int json_stream_item(struct json_stream *s, json_t *item)
{
	const char *before = s->items++ ? s->next : "";
	if (fputs(before, s->f) == EOF) {
		json_decref(item);
		return fail(s, -EIO);
	}
	if (json_put(s->f, item) || fputs(s->after, s->f) == EOF)
		return fail(s, -EIO);
	return 0;
}

int json_stream_close(struct json_stream *s, const char *close, json_t *tail)
{
	if (fputs(close, s->f) == EOF || fputc(']', s->f) == EOF) {
		json_decref(tail);
		return fail(s, -EIO);
	}
	if (put_members(s->f, tail ? tail : json_object(), true) || fputs("}\n", s->f) == EOF)
		return fail(s, -EIO);
	return s->err;
}
