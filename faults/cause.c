/* cause - the named failure table (see cause.h). */
#include "faults/cause.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cause_row {
	const char *name, *message, *hint, *qemu;
};

static const struct cause_row cause_rows[CAUSE_COUNT] = {
	[CAUSE_NONE] = { "NONE", "no failure", "", "" },
#define CAUSE_ROW_(name, msg, hint, qemu) [CAUSE_##name] = { #name, msg, hint, qemu },
	CAUSE_TABLE(CAUSE_ROW_)
#undef CAUSE_ROW_
};

static const struct cause_row *row(int c)
{
	if (c < 0)
		c = -c;
	if (c >= CAUSE_COUNT)
		return NULL;
	return &cause_rows[c];
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
	for (int c = 1; c < CAUSE_COUNT; c++)
		if (strcmp(cause_rows[c].name, name) == 0)
			return c;
	return 0;
}

int cause_set(struct cause_ctx *cx, int cause, const char *fmt, ...)
{
	if (cause < 0)
		cause = -cause;
	if (cx->cause == 0) {
		cx->cause = cause;
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(cx->detail, sizeof cx->detail, fmt, ap);
		va_end(ap);
	}
	return -cause;
}
