/* SPDX-License-Identifier: MIT */
/* outfile - the rules of every output file (see outfile.h). */
#include "sim/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static int open_target(struct outfile *o, const char *path)
{
	struct stat st;
	bool exists = stat(path, &st) == 0;
	int rc;

	if (!exists && errno != ENOENT)
		return -errno;
	if (!strcmp(path, "-") || (exists && is_stdout(&st))) {
		o->mode = OUTFILE_STDOUT;
		o->fd = STDOUT_FILENO;
		snprintf(o->final, sizeof o->final, "-");
		return 0;
	}
	if (exists && S_ISDIR(st.st_mode))
		return -EISDIR;
	if (exists && !S_ISREG(st.st_mode)) {
		if (strlen(path) >= sizeof o->final)
			return -ENAMETOOLONG;
		o->fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (o->fd < 0)
			return -errno;
		o->mode = OUTFILE_IN_PLACE;
		strcpy(o->final, path);
		return 0;
	}
	rc = follow_links(path, o->final, sizeof o->final);
	if (rc)
		return rc;
	snprintf(o->tmp, sizeof o->tmp, "%s.tmp", o->final);
	/* a leftover temporary (a killed run's, or a planted symlink) is replaced, never
	 * followed: the temporary is always a new file of our own */
	if (unlink(o->tmp) != 0 && errno != ENOENT)
		return -errno;
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (o->fd < 0)
		return -errno;
	o->mode = OUTFILE_RENAME;
	return 0;
}

int outfile_open(struct outfile *o, const char *path)
{
	int rc;

	memset(o, 0, sizeof *o);
	o->fd = -1;
	rc = path && *path ? open_target(o, path) : -EINVAL;
	if (rc) {
		memset(o, 0, sizeof *o);
		o->fd = -1;
	}
	return rc;
}

const char *outfile_writing(const struct outfile *o)
{
	return o->mode == OUTFILE_RENAME ? o->tmp : o->final;
}

/* fsync the directory holding path, so the rename itself is durable (best effort: the data
 * itself is already synced). */
static void fsync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[OUTFILE_PATH_MAX];
	int fd;

	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)fsync(fd);
	close(fd);
}

int outfile_commit(struct outfile *o)
{
	int rc = 0;

	if (o->mode == OUTFILE_CLOSED)
		return 0;
	if (o->mode != OUTFILE_STDOUT && o->fd >= 0) {
		if (o->mode == OUTFILE_RENAME && fsync(o->fd) != 0)
			rc = -errno;
		if (close(o->fd) != 0 && rc == 0)
			rc = -errno;
	}
	o->fd = -1;
	if (o->mode == OUTFILE_RENAME) {
		if (rc == 0 && rename(o->tmp, o->final) != 0)
			rc = -errno;
		if (rc)
			unlink(o->tmp);
		else
			fsync_dir_of(o->final);
	}
	o->mode = OUTFILE_CLOSED;
	o->tmp[0] = '\0';
	return rc;
}

void outfile_abort(struct outfile *o)
{
	if (o->mode == OUTFILE_CLOSED)
		return;
	if (o->mode != OUTFILE_STDOUT && o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->mode == OUTFILE_RENAME)
		unlink(o->tmp);
	o->mode = OUTFILE_CLOSED;
	o->tmp[0] = '\0';
}
