/* SPDX-License-Identifier: MIT */
/* out_file - an output file of a run (--json, --fault-counts) on a stdio FILE: opened before
 * the run, so a path that cannot be written is refused before anything happens; written whole
 * or not at all. The rules are sim/outfile.h's (one implementation): "-" or standard output's
 * own file is standard output; a device, FIFO or symlink to one is written in place; else a
 * temporary beside the file the path resolves to, renamed onto it (a symlink stays a link);
 * a directory, a missing directory or no permission is refused by out_file_open. */
#ifndef MIGBED_RUN_OUT_FILE_H
#define MIGBED_RUN_OUT_FILE_H
#include <stdio.h>
#include "sim/diag.h"
#include "sim/outfile.h"

struct out_file {
	FILE *f;                      /* NULL: not open; stdout for standard output */
	char path[1024];              /* as given, for messages */
	struct outfile of;            /* where it goes */
};
/* 0, or -errno with d = "PATH: cannot write: why" (nothing created; d may be NULL). */
int out_file_open(struct out_file *o, const char *path, struct diag *d);
/* Flush, close, rename into place. 0, or -errno with d set (the temporary removed). */
int out_file_commit(struct out_file *o, struct diag *d);
/* Close without committing: no temporary is left. A no-op on a closed out_file. */
void out_file_abort(struct out_file *o);


#endif
