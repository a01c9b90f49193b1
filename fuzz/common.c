/* SPDX-License-Identifier: MIT */
/* common - fuzz/fuzz.h's helpers (linked into every harness, libFuzzer's or replay's). */
#include "fuzz/fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];
static char path[PATH_MAX + 32];

static void remove_dir(void)
{
	char p[PATH_MAX + 32];
	static const char *const suffixes[] = { "", ".zst", ".scn", ".trace", ".log" };
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		snprintf(p, sizeof p, "%s/in%s", dir, suffixes[i]);
		unlink(p);
	}
	rmdir(dir);
}

static int make_dir(void)
{
	/* tmpfs when there is one: a harness rewrites its file at every input (on a busy disk
	 * /tmp made the trace harness wait ~10x its CPU time) */
	const char *tmp = getenv("TMPDIR");
	if (access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	else if (!tmp || !*tmp)
		tmp = "/tmp";
	if ((size_t)snprintf(dir, sizeof dir, "%s/migbed-fuzz.XXXXXX", tmp) >= sizeof dir)
		return -ENAMETOOLONG;
	if (!mkdtemp(dir))
		return -errno;
	atexit(remove_dir);
	return 0;
}

const char *fuzz_file(const char *suffix, const void *data, size_t size)
{
	if (!dir[0] && make_dir() != 0) {
		dir[0] = '\0';
		return NULL;
	}
	snprintf(path, sizeof path, "%s/in%s", dir, suffix);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	const char *p = data;
	size_t left = size;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return NULL;
		}
		p += w;
		left -= (size_t)w;
	}
	return close(fd) == 0 ? path : NULL;
}

char *fuzz_cstr(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	size_t n = nul ? (size_t)(nul - data) : size;
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, data, n);
	s[n] = '\0';
	return s;
}
