/* SPDX-License-Identifier: MIT */
/* outfile - where an output file goes, decided (and refused) before anything is written, and
 * written whole or not at all. The rules of every file migbed writes (trace gen -o, the event
 * log, and through run/out_file.h the run's --json and --fault-counts):
 *
 *   "-", or the file standard output already is   standard output (fd 1, never closed)
 *   an existing file that is not a regular one     written in place: a device, a FIFO, a
 *     (also through symlinks)                      symlink to one; nothing is renamed over it
 *   otherwise (a new file, a regular file)         FINAL.tmp beside FINAL, the file the path
 *                                                  resolves to through symlinks (a symlink stays
 *                                                  a link), renamed onto FINAL by outfile_commit
 *   a directory, a missing directory, no           refused by outfile_open; nothing is created
 *     permission
 */
#ifndef MIGBED_SIM_OUTFILE_H
#define MIGBED_SIM_OUTFILE_H
#include <stdbool.h>

#define OUTFILE_PATH_MAX 4096

enum outfile_mode { OUTFILE_CLOSED, OUTFILE_STDOUT, OUTFILE_IN_PLACE, OUTFILE_RENAME };

struct outfile {
	enum outfile_mode mode;
	int fd;                          /* -1 when closed; STDOUT_FILENO for standard output */
	char final[OUTFILE_PATH_MAX];    /* in place: the path; rename: the resolved target */
	char tmp[OUTFILE_PATH_MAX + 8];  /* rename mode: final.tmp, written first; "" otherwise */
};

/* Decide and open (see above). 0, or -errno with o closed and nothing created: -EINVAL for
 * an empty path, -EISDIR, -ENOENT (missing directory), -EACCES, -ELOOP, -ENAMETOOLONG ... */
int outfile_open(struct outfile *o, const char *path);
/* The file being written now (the temporary in rename mode, "-" for standard output). */
const char *outfile_writing(const struct outfile *o);
/* Finish: rename mode fsyncs, closes and renames the temporary onto FINAL (then fsyncs the
 * directory); in place closes; standard output is left open. 0 or -errno (the temporary is
 * then removed). o is closed afterwards. A caller that closed o->fd itself sets it to -1. */
int outfile_commit(struct outfile *o);
/* Close without committing: no temporary is left. A no-op on a closed outfile. */
void outfile_abort(struct outfile *o);

#endif
