/* SPDX-License-Identifier: MIT */
/* cause - the named failure table (see cause.h). */
#include "vocab/cause.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cause_row {
	const char *name, *message, *hint, *qemu;
	enum cause_kind kind;
};

static const struct cause_row none_row = { "NONE", "no failure", "", "", CAUSE_PRIMARY };
static const struct cause_row cause_rows[CAUSE_COUNT] = {
#define CAUSE_ROW_(name, kind, msg, hint, qemu) [CAUSE_##name - CAUSE_FIRST] = { #name, msg, hint, qemu, CAUSE_##kind },
	CAUSE_TABLE(CAUSE_ROW_)
#undef CAUSE_ROW_
};

static const struct cause_row *row(int c)
{
	if (c < 0)
		c = -c;
	if (c == CAUSE_NONE)
		return &none_row;
	if (!cause_valid(c))
		return NULL;
	return &cause_rows[c - CAUSE_FIRST];
}

int cause_is_consequence(int c)
{
	const struct cause_row *r = cause_valid(c) ? row(c) : NULL;
	return r && r->kind == CAUSE_CONSEQUENCE;
}

const char *cause_name(int c)
{
	const struct cause_row *r = row(c);
	return r ? r->name : "UNKNOWN";
}

const char *cause_message(int c)
{
	const struct cause_row *r = row(c);
	return r ? r->message : "unknown cause code";
}

const char *cause_hint(int c)
{
	const struct cause_row *r = row(c);
	return r ? r->hint : "";
}

const char *cause_qemu(int c)
{
	const struct cause_row *r = row(c);
	return r ? r->qemu : "";
}

int cause_lookup(const char *name)
{
	for (int i = 0; i < CAUSE_COUNT; i++)
		if (strcmp(cause_rows[i].name, name) == 0)
			return CAUSE_FIRST + i;
	return 0;
}

int cause_checked(int c, char *detail, size_t n)
{
	if (c < 0)
		c = -c;
	if (cause_valid(c))
		return c;
	if (detail && n) {   /* kept: what the caller said, then why it is INTERNAL */
		size_t used = strnlen(detail, n - 1);
		snprintf(detail + used, n - used, "%sa value that is not a cause reached the cause table: %d (errno %s?)",
			 used ? "; " : "", c, strerror(c));
	}
	return CAUSE_INTERNAL;
}

int cause_set(struct cause_ctx *cx, int cause, const char *fmt, ...)
{
	if (cause < 0)
		cause = -cause;
	if (!cause_valid(cause)) {
		if (cx->cause == 0)
			cx->cause = cause_checked(cause, cx->detail, sizeof cx->detail);
		return -CAUSE_INTERNAL;
	}
	if (cx->cause == 0) {
		cx->cause = cause;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(cx->detail, sizeof cx->detail, fmt, ap);
		va_end(ap);
	}
	return -cause;
}
