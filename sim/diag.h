/* SPDX-License-Identifier: MIT */
/* diag - one human-readable diagnostic for bad input: "FILE:LINE: problem".
 *
 * Readers of user files (traces, scenarios, fault specs) fill a diag and return -EINVAL;
 * the CLI prints it and exits 2. */
#ifndef MIGBED_SIM_DIAG_H
#define MIGBED_SIM_DIAG_H
#include <stddef.h>

#define DIAG_MSG_MAX 512

struct diag {
	char msg[DIAG_MSG_MAX];
};

void diag_clear(struct diag *d);
/* printf-style; a NULL d is allowed (the message is dropped). Returns -EINVAL. */
int diag_set(struct diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "file:line: " prefix then the message. Returns -EINVAL. */
int diag_at(struct diag *d, const char *file, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
