/* out_file - an output file of a run (--json, --fault-counts): opened before the run, so a
 * path that cannot be written is refused before anything happens; written whole or not at
 * all (the rules of sim/outfile.h, on a stdio FILE).
 *   "-", or the file standard output already is   standard output
 *   an existing file that is not a regular one     written in place (a device, a FIFO, a
 *     (also through symlinks)                      symlink to one): nothing is renamed over it
 *   otherwise                                      FILE.tmp beside the file (beside the file a
 *                                                  symlink points to: the link stays a link),
 *                                                  renamed over it by out_file_commit
 * A directory, a missing directory or no permission: refused by out_file_open. */
#ifndef MIGBED_RUN_OUT_FILE_H
#define MIGBED_RUN_OUT_FILE_H
#include <stdio.h>
#include "sim/diag.h"

struct out_file {
	FILE *f;                      /* NULL: not open */
	char path[1024];              /* as given, for messages */
	char final[4096];             /* rename mode: the file renamed over; "" otherwise */
	char tmp[4100];               /* rename mode: final.tmp; "" otherwise */
};
/* 0, or -errno with d = "PATH: cannot write: why" (nothing created; d may be NULL). */
int out_file_open(struct out_file *o, const char *path, struct diag *d);
/* Flush, close, rename into place. 0, or -errno with d set (the temporary removed). */
int out_file_commit(struct out_file *o, struct diag *d);
/* Close without committing: no temporary is left. A no-op on a closed out_file. */
void out_file_abort(struct out_file *o);


#endif
