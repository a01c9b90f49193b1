/* SPDX-License-Identifier: MIT */
/* line - one line of a text file a user wrote (scenarios, hardware profiles), bounded. */
#ifndef MIGBED_SIM_LINE_H
#define MIGBED_SIM_LINE_H
#include <stddef.h>
#include <stdio.h>

/* One line of f into buf (without its newline): 1 a line, 0 the end, -E2BIG longer than
 * size - 2 bytes, -EILSEQ a NUL byte in it (fgets would cut the line there, silently). */
int line_read(FILE *f, char *buf, size_t size);
/* s without its leading and trailing white space (the trailing cut in place). */
char *line_trim(char *s);

#endif
