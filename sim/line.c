/* SPDX-License-Identifier: MIT */
#include "sim/line.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <stdbool.h>

int line_read(FILE *f, char *buf, size_t size)
{
	size_t n = 0;
	int ch;
	bool nul = false;
	while ((ch = getc(f)) != EOF && ch != '\n') {
		if (n >= size - 2)
			return -E2BIG;
		nul = nul || ch == '\0';
		buf[n++] = (char)ch;
	}
	buf[n] = '\0';
	if (ch == EOF && n == 0)
		return 0;
	return nul ? -EILSEQ : 1;
}

char *line_trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}
