/* SPDX-License-Identifier: MIT */
/* swarm_verbs - the verbs swarm's leak oracle and rxe stall retry (see swarm_verbs.h). */
#include "cli/swarm_verbs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include "sim/json_in.h"

#define FDS_MAX 4096                    /* fds watched by the leak oracle (0..FDS_MAX-1) */
#define RDMA_OUT_MAX (1u << 20)         /* bytes of one `rdma -j resource show` read */

static struct {
	struct swarm_on on;
	unsigned char open_at_mark[FDS_MAX / 8];
	unsigned long long runs;        /* marks so far (MIGBED_SWARM_TEST_LEAK_RUN) */
} vs;

static const char *const rdma_kinds[] = { "qp", "mr", "pd", "cm_id" };

/* ---- fds ------------------------------------------------------------------------------------- */

/* Each fd open now into bits (the listing's own fd left out). 0, or -errno. */
static int open_fds(unsigned char *bits)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	memset(bits, 0, FDS_MAX / 8);
	if (!dir)
		return -errno;
	while ((e = readdir(dir))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (*end || end == e->d_name || fd < 0 || fd >= FDS_MAX || fd == dirfd(dir))
			continue;
		bits[fd / 8] |= (unsigned char)(1u << (fd % 8));
	}
	closedir(dir);
	return 0;
}

/* What fd is open on ("?" when unreadable). */
static void fd_target(int fd, char *buf, size_t n)
{
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t k = readlink(link, buf, n - 1);
	if (k <= 0)
		snprintf(buf, n, "?");
	else
		buf[k] = '\0';
}

/* The first fd open now and not at the mark: its number (its target into target), or -1. */
static int new_fd(char *target, size_t n)
{
	unsigned char now[FDS_MAX / 8];
	if (open_fds(now))
		return -1;
	for (int fd = 0; fd < FDS_MAX; fd++)
		if ((now[fd / 8] & ~vs.open_at_mark[fd / 8]) & (1u << (fd % 8))) {
			fd_target(fd, target, n);
			return fd;
		}
	return -1;
}

/* ---- RDMA objects ------------------------------------------------------------------------------ */

/* `rdma -j resource show KIND` into a malloc'd string (NULL: it did not run or failed). */
static char *rdma_show(const char *kind)
{
	char cmd[64];
	snprintf(cmd, sizeof cmd, "rdma -j resource show %s 2>/dev/null", kind);
	fflush(NULL);
	FILE *p = popen(cmd, "r");
	char *buf = p ? malloc(RDMA_OUT_MAX) : NULL;
	size_t len = 0, k;
	while (buf && len < RDMA_OUT_MAX - 1 && (k = fread(buf + len, 1, RDMA_OUT_MAX - 1 - len, p)) > 0)
		len += k;
	int st = p ? pclose(p) : -1;
	if (!buf || st != 0) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

/* Objects of process pid in rdma's JSON (an array of objects, each with its "pid" when a process
 * owns it), read with jansson; output that is not such an array counts none. */
static size_t objects_of(const char *text, long pid)
{
	json_t *a = json_loads(text, 0, NULL), *o;
	size_t n = 0, i;
	if (json_is_array(a))
		json_array_foreach(a, i, o) {
			json_t *p = json_object_get(o, "pid");
			n += json_is_integer(p) && json_integer_value(p) == pid;
		}
	json_decref(a);
	return n;
}

int swarm_verbs_probe(struct diag *d)
{
	char *out = rdma_show("pd");
	bool ok = out && out[strspn(out, " \n")] == '[';
	free(out);
	if (!ok) {
		diag_set(d, "--backend verbs: the leak oracle lists RDMA objects with iproute2's `rdma -j resource "
			    "show`, which did not run here (install iproute2; or run in the soft-RoCE VM: topologies/vm/rxe-vm)");
		return -ENOSYS;
	}
	/* librdmacm opens a verbs context per device (its command fd and its async event fd) the
	 * first time the process looks at the devices, and keeps them for the process's life:
	 * open them now, before the first run's mark, so the fd check sees only the runs' own */
	int n = 0;
	struct ibv_context **devs = rdma_get_devices(&n);
	if (devs)
		rdma_free_devices(devs);
	if (n > 0)
		return 0;
	diag_set(d, "--backend verbs: no RDMA device here (rdma_get_devices found none; topologies/detect; or run "
		    "in the soft-RoCE VM: topologies/vm/rxe-vm)");
	return -ENODEV;
}

/* ---- the hooks --------------------------------------------------------------------------------- */

static void leak_mark(void *arg)
{
	(void)arg;
	if (open_fds(vs.open_at_mark))
		memset(vs.open_at_mark, 0xff, sizeof vs.open_at_mark);   /* unreadable: no fd check */
	/* A test hook, for the leak oracle's own test (bats/verbs/swarm.bats only): the k-th run
	 * (1-based, healed reruns counted) leaves /dev/null open, as a run leaking an fd would. */
	const char *k = getenv("MIGBED_SWARM_TEST_LEAK_RUN");
	if (k && strtoull(k, NULL, 10) == ++vs.runs && open("/dev/null", O_RDONLY) < 0)
		fprintf(stderr, "migbed: swarm: MIGBED_SWARM_TEST_LEAK_RUN: /dev/null: %s\n", strerror(errno));
}

static int leak_check(void *arg, char *detail, size_t n)
{
	(void)arg;
	char target[PATH_MAX];
	int fd = new_fd(target, sizeof target);
	if (fd >= 0) {
		snprintf(detail, n, "the run left fd %d (%s) open", fd, target);
		return 1;
	}
	for (size_t i = 0; i < sizeof rdma_kinds / sizeof rdma_kinds[0]; i++) {
		char *out = rdma_show(rdma_kinds[i]);
		size_t left = out ? objects_of(out, (long)getpid()) : 0;
		free(out);
		if (!out) {
			snprintf(detail, n, "`rdma -j resource show %s` failed after the run", rdma_kinds[i]);
			return 1;
		}
		if (left) {
			snprintf(detail, n, "the run left %zu RDMA %s object%s of this process (rdma resource show %s)",
				 left, rdma_kinds[i], left == 1 ? "" : "s", rdma_kinds[i]);
			return 1;
		}
	}
	return 0;
}

static void stalled(void *arg, const struct swarm_run *r)
{
	(void)arg;
	fprintf(stderr, "# rxe stalled (TRANSPORT_RETRY_EXCEEDED that no fired fault explains, %s) at swarm seed %llu: "
		"running it once more\n", r->finding == SWARM_F_LIVENESS ? "in the healed rerun" : "on a healthy wire",
		(unsigned long long)r->seed);
	fflush(stderr);
}

void swarm_verbs_attach(struct swarm_config *sc, uint64_t wait_ms)
{
	vs.on.wait_timeout_ms = wait_ms;
	sc->on = &vs.on;
	sc->leak_mark = leak_mark;
	sc->leak_check = leak_check;
	sc->stalled = stalled;
}
