/* out_file - an output file of a run, whole or not at all (see out_file.h). */
#include "run/out_file.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* path with the symlinks of its last name followed (at most 40 hops, as the kernel): the
 * file a write through path lands in; it need not exist yet. 0 or -errno. */
static int follow_links(const char *path, char *out, size_t cap)
{
	char link[PATH_MAX];
	if (strlen(path) >= cap)
		return -ENAMETOOLONG;
	strcpy(out, path);
	for (int hop = 0; hop < 40; hop++) {
		struct stat st;
		if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode))
			return 0;
		ssize_t n = readlink(out, link, sizeof link - 1);
		if (n < 0)
			return -errno;
		link[n] = '\0';
		const char *slash = strrchr(out, '/');
		size_t keep = link[0] == '/' || !slash ? 0 : (size_t)(slash - out) + 1;
		if (keep + (size_t)n >= cap)
			return -ENAMETOOLONG;
		memcpy(out + keep, link, (size_t)n + 1);
	}
	return -ELOOP;
}

static bool is_stdout(const struct stat *st)
{
	struct stat so;
	return fstat(STDOUT_FILENO, &so) == 0 && so.st_dev == st->st_dev && so.st_ino == st->st_ino;
}

/* The three cases of struct out_file; 0 or -errno. */
static int open_target(struct out_file *o, const char *path)
{
	struct stat st;
	bool exists = stat(path, &st) == 0;
	if (!exists && errno != ENOENT)
		return -errno;
	if (!strcmp(path, "-") || (exists && is_stdout(&st))) {
		o->f = stdout;
		return 0;
	}
	if (exists && S_ISDIR(st.st_mode))
		return -EISDIR;
	if (exists && !S_ISREG(st.st_mode)) {
		o->f = fopen(path, "w");
		return o->f ? 0 : -errno;
	}
	int rc = follow_links(path, o->final, sizeof o->final);
	if (rc)
		return rc;
	snprintf(o->tmp, sizeof o->tmp, "%s.tmp", o->final);
	if (!(o->f = fopen(o->tmp, "w"))) {
		rc = -errno;
		o->tmp[0] = '\0';
	}
	return rc;
}

int out_file_open(struct out_file *o, const char *path, struct diag *d)
{
	memset(o, 0, sizeof *o);
	int rc = strlen(path) < sizeof o->path ? open_target(o, path) : -ENAMETOOLONG;
	if (rc)
		diag_set(d, "%s: cannot write: %s", path, strerror(-rc));
	else
		strcpy(o->path, path);
	return rc;
}

int out_file_commit(struct out_file *o, struct diag *d)
{
	if (!o->f)
		return 0;
	int rc = fflush(o->f) != 0 || ferror(o->f) ? -(errno ? errno : EIO) : 0;
	if (o->f != stdout && fclose(o->f) != 0 && rc == 0)
		rc = -(errno ? errno : EIO);
	o->f = NULL;
	if (rc == 0 && o->tmp[0] && rename(o->tmp, o->final) != 0)
		rc = -errno;
	if (rc && o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
	if (rc)
		diag_set(d, "%s: cannot write: %s", o->path, strerror(-rc));
	return rc;
}

void out_file_abort(struct out_file *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
}
