/* SPDX-License-Identifier: MIT */
/* out_file - an output file of a run on a stdio FILE, over sim/outfile (see out_file.h). */
#include "run/out_file.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int out_file_open(struct out_file *o, const char *path, struct diag *d)
{
	memset(o, 0, sizeof *o);
	o->of.fd = -1;
	int rc = strlen(path) < sizeof o->path ? outfile_open(&o->of, path) : -ENAMETOOLONG;
	if (rc == 0) {
		o->f = o->of.mode == OUTFILE_STDOUT ? stdout : fdopen(o->of.fd, "w");
		if (!o->f) {
			rc = -errno;
			outfile_abort(&o->of);
		}
	}
	if (rc)
		diag_set(d, "%s: cannot write: %s", path, strerror(-rc));
	else
		strcpy(o->path, path);
	return rc;
}

/* Flush (and, when a temporary is renamed, sync) the FILE and close it; the fd goes with it. */
static int close_stream(struct out_file *o)
{
	int rc = fflush(o->f) != 0 || ferror(o->f) ? -(errno ? errno : EIO) : 0;
	if (o->f != stdout) {
		if (rc == 0 && o->of.mode == OUTFILE_RENAME && fsync(fileno(o->f)) != 0)
			rc = -errno;
		if (fclose(o->f) != 0 && rc == 0)
			rc = -(errno ? errno : EIO);
		o->of.fd = -1;
	}
	o->f = NULL;
	return rc;
}

int out_file_commit(struct out_file *o, struct diag *d)
{
	if (!o->f)
		return 0;
	int rc = close_stream(o);
	if (rc)
		outfile_abort(&o->of);
	else
		rc = outfile_commit(&o->of);
	if (rc)
		diag_set(d, "%s: cannot write: %s", o->path, strerror(-rc));
	return rc;
}

void out_file_abort(struct out_file *o)
{
	if (o->f)
		(void)close_stream(o);
	outfile_abort(&o->of);
}
