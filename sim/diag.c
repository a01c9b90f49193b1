/* SPDX-License-Identifier: MIT */
/* diag - one human-readable diagnostic for bad input (see diag.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "sim/diag.h"

void diag_clear(struct diag *d)
{
	if (d)
		d->msg[0] = '\0';
}

int diag_set(struct diag *d, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof d->msg, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int diag_at(struct diag *d, const char *file, unsigned long line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!d)
		return -EINVAL;
	n = snprintf(d->msg, sizeof d->msg, "%s:%lu: ", file ? file : "<input>", line);
	if (n < 0 || (size_t)n >= sizeof d->msg)
		return -EINVAL;           /* the prefix alone fills the buffer: keep it, truncated */
	va_start(ap, fmt);
	vsnprintf(d->msg + n, sizeof d->msg - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}
