/* SPDX-License-Identifier: MIT */
/* cmd_record - `migbed record`: a real process's page-dirtying as a trace (docs/record.md).
 *
 * Every interval: for the process and its descendants (or for one --region of the process),
 * read /proc/PID/maps (the private writable anonymous mappings, sim/record.h), read their
 * /proc/PID/pagemap entries (bit 55 soft-dirty; bit 63/62 populated for epoch 0), then write
 * 4 to /proc/PID/clear_refs. The epochs go to an unlinked spool file first, because the
 * trace's header (blocks, duration) is known only at the end; then the trace is written
 * through sim/trace.h (FILE.tmp, renamed). Blocks: every (pid, start) mapping seen at any scan,
 * as large as it ever was; at most TRACE_MAX_BLOCKS of them, the most written first. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/run_report.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "sim/outfile.h"
#include "sim/record.h"
#include "sim/size.h"
#include "sim/trace.h"

#define CMD "record"
#define REC_MAX_MAPS 4096          /* distinct (pid, start) mappings kept */
#define REC_MAX_PROCS 256          /* processes of the tree followed */
#define REC_MAX_PARSED 4096        /* recordable mappings of one process per scan */
#define REC_MAPS_MAX_BYTES (UINT64_C(64) << 20)
#define REC_PM_CHUNK 8192          /* pagemap entries per read */
#define REC_MAX_PIDS 65536         /* /proc entries looked at for descendants */
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_S UINT64_C(1000000000)

static const char no_soft_dirty_msg[] =
	"this kernel has no soft-dirty page tracking (CONFIG_MEM_SOFT_DIRTY): record inside the "
	"soft-RoCE VM: topologies/vm/rxe-vm -- build/migbed record ...";

struct rec_opts {
	const char *output;
	uint64_t interval_ms, duration_s;
	bool region, json, no_thp;
	bool quiet;                     /* no progress line */
	uint64_t region_start, region_len;
	long pid;
	char **cmd;
};

struct rec_map {
	long pid;
	uint64_t start, size;
	enum record_kind kind;
	uint64_t pages;            /* pages written (sum over epochs) */
	int block;                 /* index in the trace header, -1 if left out */
};

enum { SPOOL_EPOCH = 1, SPOOL_RANGE = 2 };
struct spool_rec {
	uint32_t kind, map;
	uint64_t a, b;             /* epoch: t_ns; range: first page, pages */
};

struct recorder {
	const struct rec_opts *o;
	uint64_t page_size;
	long procs[REC_MAX_PROCS];
	size_t n_procs;
	uint64_t procs_dropped, maps_dropped;
	struct rec_map maps[REC_MAX_MAPS];
	size_t n_maps;
	FILE *spool;
	uint32_t cur_map;
	uint64_t epochs, pages, epoch0_pages, runs;
	uint64_t scan_ns_total, scan_ns_max, last_t_ns, end_ns;
	char *text;
	size_t text_cap;
	uint64_t pm[REC_PM_CHUNK];
	struct record_map parsed[REC_MAX_PARSED];
	long pid_pairs[REC_MAX_PIDS][2];
	int cmd_status;            /* wait status of CMD, -1 if it did not end */
	bool interrupted, root_gone, timed_out;
	bool no_children_file;     /* walk /proc for parent pids instead */
	uint64_t thp_bytes;        /* the most recorded memory seen in transparent huge pages */
};

static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed record -o TRACE [--interval-ms N] [--duration SECONDS]\n"
		   "                     [--region ADDR+LEN] [--json] [--quiet]\n"
		   "                     (--pid PID | [--no-thp] -- CMD [ARG...])\n\n"
		   "Record a real process's page-dirtying as a trace (format v1, docs/trace-format.md)\n"
		   "with the kernel's soft-dirty bits: every interval one epoch with the pages written\n"
		   "since the previous one. The process and its descendants are recorded, each private\n"
		   "writable anonymous mapping (no file, [heap], [stack]) one block; epoch 0 holds the\n"
		   "pages populated when recording starts. Needs a kernel with CONFIG_MEM_SOFT_DIRTY\n"
		   "(else exit 2: record inside topologies/vm/rxe-vm) and access to /proc/PID (root).\n\n"
		   "options:\n"
		   "  %-22s %s\n  %-22s %s\n  %-22s %s\n  %-22s %s\n  %-22s %s\n  %-22s %s\n  %-22s %s\n  %-22s %s\n"
		   "  %-22s %s\n  %-22s %s\n",
		"-o, --output TRACE", "write the trace here (FILE.tmp, renamed at the end; .zst compresses)",
		"--interval-ms N", "one epoch every N ms, 1 .. 60000 (default 100)",
		"--duration SECONDS", "stop after this long, 1 .. 86400 (CMD is then sent SIGTERM)",
		"--region ADDR+LEN", "record only this range of PID's memory (hex ADDR, SIZE LEN) as one block",
		"--pid PID", "attach to a running process (it keeps running afterwards)",
		"-- CMD [ARG...]", "run CMD and record it until it exits",
		"--no-thp", "CMD and its descendants get no transparent huge pages (prctl PR_SET_THP_DISABLE): "
		"the kernel keeps one soft-dirty bit per 2 MiB huge page, so recorded writes there are "
		"2 MiB-granular; record warns when the recorded memory had any",
		"--json", "print the summary as JSON on stdout (the human one goes to stderr)",
		"--quiet", "no progress line on a terminal",
		"-h, --help", "this text");
	fprintf(f, "\nCtrl-C (SIGINT) or SIGTERM ends the recording: the trace of what was recorded is\n"
		   "written. Exit status: 0 trace written; 1 recording failed (nothing written); 2 bad\n"
		   "option, no soft-dirty tracking, no such process, CMD cannot run (nothing written).\n");
}

/* ------------------------------------------------------------------ options */

static int parse_uint(const char *arg, const char *name, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (size_parse_u64(arg, out) || *out < lo || *out > hi)
		return cli_usage_error(CMD ": bad %s '%s' (an integer %" PRIu64 " .. %" PRIu64 ")",
				       name, arg, lo, hi);
	return 0;
}

/* The command line into o: -1 go on, else the exit status to return. */
static int parse_args(int argc, char **argv, struct rec_opts *o, uint64_t page_size)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' }, { "interval-ms", required_argument, NULL, 'i' },
		{ "duration", required_argument, NULL, 'd' }, { "region", required_argument, NULL, 'r' },
		{ "pid", required_argument, NULL, 'p' }, { "json", no_argument, NULL, 'j' },
		{ "no-thp", no_argument, NULL, 'T' }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	uint64_t v;
	struct diag d = { 0 };
	int c;

	*o = (struct rec_opts){ .interval_ms = 100 };
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return CLI_EXIT_OK;
		case 'o': o->output = optarg; break;
		case 'j': o->json = true; break;
		case 'T': o->no_thp = true; break;
		case 'q': o->quiet = true; break;
		case 'i': if (parse_uint(optarg, "--interval-ms", 1, 60000, &o->interval_ms)) return CLI_EXIT_USAGE; break;
		case 'd': if (parse_uint(optarg, "--duration", 1, 86400, &o->duration_s)) return CLI_EXIT_USAGE; break;
		case 'p':
			if (parse_uint(optarg, "--pid", 1, INT32_MAX, &v))
				return CLI_EXIT_USAGE;
			o->pid = (long)v;
			break;
		case 'r':
			if (record_region_parse(optarg, page_size, &o->region_start, &o->region_len, &d))
				return cli_usage_error(CMD ": %s", d.msg);
			o->region = true;
			break;
		default:
			return cli_usage_error(CMD ": unknown option or missing value '%s' (see migbed record --help)",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (!o->output)
		return cli_usage_error(CMD ": missing -o TRACE (see migbed record --help)");
	if (!o->cmd == !o->pid)
		return cli_usage_error(CMD ": give either --pid PID or -- CMD [ARG...] (see migbed record --help)");
	if (o->json && !strcmp(o->output, "-"))
		return cli_usage_error(CMD ": -o - and --json both want standard output: write the "
				       "trace to a file");
	if (o->no_thp && !o->cmd)
		return cli_usage_error(CMD ": --no-thp is for a CMD migbed starts (for a --pid, turn THP off "
				       "before the process starts: /sys/kernel/mm/transparent_hugepage/enabled)");
	if (o->region && o->cmd)
		return cli_usage_error(CMD ": --region needs --pid (a command's addresses are not known "
				       "before it runs)");
	return -1;
}

/* ---------------------------------------------------------------- the kernel */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static int write_clear_refs(long pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/clear_refs", pid);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = write(fd, "4", 1) == 1 ? 0 : -errno;
	close(fd);
	return rc;
}

/* Does soft-dirty tracking work here? Clear our own bits, write a page of our own, read its
 * pagemap entry: bit 55 must be set again. */
static bool soft_dirty_works(uint64_t page_size)
{
	volatile char *p = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t e = 0;
	bool ok = false;

	if (p == MAP_FAILED)
		return false;
	p[0] = 1;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && write_clear_refs(getpid()) == 0) {
		p[0] = 2;
		off_t at = (off_t)((uintptr_t)p / page_size * sizeof e);
		ok = pread(fd, &e, sizeof e, at) == (ssize_t)sizeof e && (e & RECORD_PM_SOFT_DIRTY);
	}
	if (fd >= 0)
		close(fd);
	munmap((void *)p, page_size);
	return ok;
}

/* /proc/PID/FILE whole into r->text (NUL-terminated). 0, -ENOENT/-ESRCH gone, -errno. */
static int read_proc_text(struct recorder *r, long pid, const char *file, size_t *len)
{
	char path[64];
	size_t n = 0;
	int rc = 0;

	snprintf(path, sizeof path, "/proc/%ld/%s", pid, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (r->text_cap - n < 4096) {
			size_t cap = r->text_cap ? r->text_cap * 2 : 65536;
			char *t = cap <= REC_MAPS_MAX_BYTES ? realloc(r->text, cap) : NULL;
			if (!t) {
				rc = -ENOMEM;
				break;
			}
			r->text = t;
			r->text_cap = cap;
		}
		ssize_t got = read(fd, r->text + n, r->text_cap - n - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = got < 0 ? -errno : 0;
			break;
		}
		n += (size_t)got;
	}
	close(fd);
	if (!r->text)        /* the first allocation failed: nothing read */
		return rc ? rc : -ENOMEM;
	r->text[n] = '\0';
	*len = n;
	return rc;
}

/* ------------------------------------------------------- transparent huge pages */

/* kB of "AnonHugePages:" in the smaps-format text, of the mappings overlapping [lo, hi)
 * (all of them when hi is 0). smaps: a mapping's "START-END perms ..." line, then its
 * "Key:   N kB" lines. */
static uint64_t smaps_thp_kb(const char *text, uint64_t lo, uint64_t hi)
{
	uint64_t kb = 0;
	bool in = hi == 0;

	for (const char *p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		unsigned long long s, e, v;
		if (sscanf(p, "%llx-%llx ", &s, &e) == 2)
			in = hi == 0 || (s < hi && e > lo);
		else if (in && sscanf(p, "AnonHugePages: %llu kB", &v) == 1)
			kb += v;
	}
	return kb;
}

/* The recorded memory backed by transparent huge pages now, in bytes: the kernel keeps one
 * soft-dirty bit per huge page (PMD), so a write anywhere in one reports all its 512 pages.
 * The largest value seen is kept and reported; a process gone meanwhile counts nothing. */
static void check_thp(struct recorder *r)
{
	uint64_t kb = 0;
	size_t len;

	for (size_t i = 0; i < r->n_procs; i++) {
		if (r->o->region) {
			if (read_proc_text(r, r->procs[i], "smaps", &len) == 0)
				kb += smaps_thp_kb(r->text, r->o->region_start, r->o->region_start + r->o->region_len);
		} else if (read_proc_text(r, r->procs[i], "smaps_rollup", &len) == 0) {
			kb += smaps_thp_kb(r->text, 0, 0);
		}
	}
	if (kb * 1024 > r->thp_bytes)
		r->thp_bytes = kb * 1024;
}

/* ------------------------------------------------------------------ spool */

static int spool_put(struct recorder *r, uint32_t kind, uint32_t map, uint64_t a, uint64_t b)
{
	struct spool_rec s = { kind, map, a, b };
	return fwrite(&s, sizeof s, 1, r->spool) == 1 ? 0 : -EIO;
}

static int on_run(void *arg, uint64_t first, uint64_t n)
{
	struct recorder *r = arg;
	r->maps[r->cur_map].pages += n;
	return spool_put(r, SPOOL_RANGE, r->cur_map, first, n);
}

/* The map index of (pid, m), added if new; -1 when the table is full (counted). */
static long map_index(struct recorder *r, long pid, const struct record_map *m)
{
	for (size_t i = r->n_maps; i-- > 0;) {
		struct rec_map *x = &r->maps[i];
		if (x->pid != pid || x->start != m->start)
			continue;
		if (m->end - m->start > x->size)
			x->size = m->end - m->start;
		return (long)i;
	}
	if (r->n_maps == REC_MAX_MAPS) {
		r->maps_dropped++;
		return -1;
	}
	r->maps[r->n_maps] = (struct rec_map){ pid, m->start, m->end - m->start, m->kind, 0, -1 };
	return (long)r->n_maps++;
}

/* The pagemap entries of one mapping through a scan into the spool. */
static int scan_mapping(struct recorder *r, int pm_fd, uint32_t map, const struct record_map *m,
			enum record_pages which, uint64_t *pages)
{
	struct record_scan s;
	uint64_t n_pages = (m->end - m->start) / r->page_size, done = 0;
	int rc = 0;

	r->cur_map = map;
	record_scan_begin(&s, which, on_run, r);
	while (done < n_pages && rc == 0) {
		size_t want = n_pages - done < REC_PM_CHUNK ? (size_t)(n_pages - done) : REC_PM_CHUNK;
		off_t at = (off_t)((m->start / r->page_size + done) * sizeof r->pm[0]);
		ssize_t got = pread(pm_fd, r->pm, want * sizeof r->pm[0], at);
		if (got < 0)
			return -errno;
		size_t have = (size_t)got / sizeof r->pm[0];
		memset(r->pm + have, 0, (want - have) * sizeof r->pm[0]);   /* unmapped meanwhile */
		rc = record_scan_feed(&s, r->pm, want);
		done += want;
	}
	if (rc == 0)
		rc = record_scan_end(&s);
	*pages += s.pages;
	r->runs += s.runs;
	return rc;
}

/* The mappings of one process to record now: its recordable ones, or the --region. */
static int process_maps(struct recorder *r, long pid, long *n, struct diag *d)
{
	size_t len;
	char file[64];

	if (r->o->region) {
		r->parsed[0] = (struct record_map){ r->o->region_start,
						    r->o->region_start + r->o->region_len, RECORD_REGION };
		*n = 1;
		return 0;
	}
	int rc = read_proc_text(r, pid, "maps", &len);
	if (rc)
		return rc;
	snprintf(file, sizeof file, "/proc/%ld/maps", pid);
	*n = record_maps_parse(r->text, file, r->parsed, REC_MAX_PARSED, d);
	if (*n < 0)
		return (int)*n;
	if (*n > REC_MAX_PARSED) {
		r->maps_dropped += (uint64_t)(*n - REC_MAX_PARSED);
		*n = REC_MAX_PARSED;
	}
	return 0;
}

static bool gone(int rc)
{
	return rc == -ENOENT || rc == -ESRCH;
}

static int io_fail(struct diag *d, long pid, const char *file, int rc)
{
	diag_set(d, "/proc/%ld/%s: %s", pid, file, strerror(rc < 0 ? -rc : EIO));
	return -EIO;
}

/* Scan one process (epoch already spooled) and clear its soft-dirty bits. A process that
 * is gone is not an error: 1. */
static int scan_process(struct recorder *r, long pid, enum record_pages which, uint64_t *pages,
			struct diag *d)
{
	char path[64];
	long n = 0;
	int rc = process_maps(r, pid, &n, d);

	if (gone(rc))
		return 1;
	if (rc)
		return rc == -EINVAL ? rc : io_fail(d, pid, "maps", rc);
	snprintf(path, sizeof path, "/proc/%ld/pagemap", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gone(-errno) ? 1 : io_fail(d, pid, "pagemap", -errno);
	for (long i = 0; i < n && rc == 0; i++) {
		long map = map_index(r, pid, &r->parsed[i]);
		if (map >= 0)
			rc = scan_mapping(r, fd, (uint32_t)map, &r->parsed[i], which, pages);
	}
	close(fd);
	if (gone(rc))
		return 1;
	if (rc)
		return io_fail(d, pid, "pagemap", rc);
	rc = write_clear_refs(pid);
	if (gone(rc))
		return 1;
	return rc ? io_fail(d, pid, "clear_refs", rc) : 0;
}

static bool proc_known(const struct recorder *r, long pid)
{
	for (size_t i = 0; i < r->n_procs; i++)
		if (r->procs[i] == pid)
			return true;
	return false;
}

/* (pid, ppid) of every process in /proc into r->pid_pairs; returns how many. */
static size_t list_processes(struct recorder *r)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	size_t n = 0;

	if (!dir)
		return 0;
	while ((e = readdir(dir)) && n < REC_MAX_PIDS) {
		char path[300], *p;
		size_t len;
		long pid = strtol(e->d_name, &p, 10);
		if (*p || pid <= 0)
			continue;
		snprintf(path, sizeof path, "%ld", pid);
		if (read_proc_text(r, pid, "stat", &len))
			continue;
		p = strrchr(r->text, ')');            /* comm may hold anything; state ppid follow */
		long ppid = 0;
		if (p && sscanf(p + 1, " %*c %ld", &ppid) == 1) {
			r->pid_pairs[n][0] = pid;
			r->pid_pairs[n][1] = ppid;
			n++;
		}
	}
	closedir(dir);
	return n;
}

/* Append pid's children to out[*n..max) from /proc/PID/task/TID/children (every thread's).
 * 0, or -ENOSYS when the kernel has no such file (CONFIG_PROC_CHILDREN). A process gone
 * meanwhile has no children. */
static int children_of(struct recorder *r, long pid, long *out, size_t *n, size_t max)
{
	char path[64], file[96];
	struct dirent *e;
	size_t len;
	int rc = 0;

	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	DIR *dir = opendir(path);
	if (!dir)
		return 0;
	while (rc == 0 && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof file, "task/%.32s/children", e->d_name);
		int got = read_proc_text(r, pid, file, &len);
		if (got == -ENOENT && access(path, F_OK) == 0) {
			rc = -ENOSYS;             /* the task is there, its children file is not */
			break;
		}
		for (char *p = got ? NULL : r->text, *end; p && *p; p = end) {
			long child = strtol(p, &end, 10);
			if (end == p)
				break;
			if (*n < max)
				out[(*n)++] = child;
			else
				r->procs_dropped++;
		}
	}
	closedir(dir);
	return rc;
}

/* The descendants of out[0] through the parent pids of every process in /proc (slower:
 * kernels without CONFIG_PROC_CHILDREN). */
static size_t descendants_by_ppid(struct recorder *r, long *out, size_t max)
{
	size_t n = 1, pairs = list_processes(r);

	for (size_t from = 0; from < n; from++)       /* breadth first; n grows */
		for (size_t i = 0; i < pairs; i++)
			if (r->pid_pairs[i][1] == out[from] && r->pid_pairs[i][0] != out[0]) {
				if (n == max) {
					r->procs_dropped++;
					continue;
				}
				out[n++] = r->pid_pairs[i][0];
			}
	return n;
}

/* The processes to scan this epoch: the root, and (without --region) its descendants. */
static size_t tree(struct recorder *r, long *out, size_t max)
{
	size_t n = 1;

	out[0] = r->o->pid;
	if (r->o->region)
		return 1;
	if (r->no_children_file)
		return descendants_by_ppid(r, out, max);
	for (size_t from = 0; from < n; from++)       /* breadth first; n grows (max bounds it) */
		if (children_of(r, out[from], out, &n, max) == -ENOSYS) {
			r->no_children_file = true;
			return descendants_by_ppid(r, out, max);
		}
	return n;
}

/* One epoch at t_ns: every process of the tree. 0, or <0 with d set. */
static int scan_epoch(struct recorder *r, uint64_t t_ns, struct diag *d)
{
	long pids[REC_MAX_PROCS];
	uint64_t t0 = now_ns(), pages = 0;
	size_t n = tree(r, pids, REC_MAX_PROCS);
	int rc = spool_put(r, SPOOL_EPOCH, 0, t_ns, 0);

	for (size_t i = 0; i < n && rc == 0; i++) {
		bool fresh = !proc_known(r, pids[i]);
		enum record_pages which = r->epochs == 0 ? RECORD_PAGES_POPULATED : RECORD_PAGES_DIRTY;
		rc = scan_process(r, pids[i], which, &pages, d);
		if (rc == 1) {
			if (i == 0)
				r->root_gone = true;
			rc = 0;
			continue;
		}
		if (fresh && r->n_procs < REC_MAX_PROCS)
			r->procs[r->n_procs++] = pids[i];
	}
	if (rc == 0 && fflush(r->spool))
		rc = diag_set(d, "spool file: %s", strerror(errno));
	uint64_t took = now_ns() - t0;
	r->scan_ns_total += took;
	if (took > r->scan_ns_max)
		r->scan_ns_max = took;
	if (r->epochs == 0)
		r->epoch0_pages = pages;
	else
		r->pages += pages;
	r->epochs++;
	r->last_t_ns = t_ns;
	return rc;
}

/* ---------------------------------------------------------------- the command */

/* fork + exec CMD; the parent learns through a close-on-exec pipe whether exec worked.
 * 0 and *pid, or the exit status (2: CMD cannot run). */
static int start_command(char **cmd, bool no_thp, long *pid)
{
	int p[2], err = 0;

	if (pipe2(p, O_CLOEXEC))
		return cli_usage_error(CMD ": pipe: %s", strerror(errno));
	pid_t child = fork();
	if (child < 0) {
		close(p[0]);
		close(p[1]);
		return cli_usage_error(CMD ": fork: %s", strerror(errno));
	}
	if (child == 0) {
		close(p[0]);
		/* kept across fork and exec: CMD and its descendants get no transparent huge pages */
		if (!no_thp || prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0)
			execvp(cmd[0], cmd);
		err = errno;
		ssize_t w = write(p[1], &err, sizeof err);
		(void)w;
		_exit(127);
	}
	close(p[1]);
	ssize_t got;
	do
		got = read(p[0], &err, sizeof err);
	while (got < 0 && errno == EINTR);
	close(p[0]);
	if (got == (ssize_t)sizeof err) {
		waitpid(child, NULL, 0);
		return cli_usage_error(CMD ": cannot run '%s': %s", cmd[0], strerror(err));
	}
	*pid = child;
	return 0;
}

/* CMD ended? (CMD mode only; its wait status is kept.) */
static bool command_ended(struct recorder *r)
{
	int st;
	if (!r->o->cmd || r->cmd_status >= 0)
		return r->cmd_status >= 0;
	if (waitpid((pid_t)r->o->pid, &st, WNOHANG) == (pid_t)r->o->pid) {
		r->cmd_status = st;
		return true;
	}
	return false;
}

/* After --duration: CMD gets SIGTERM, then SIGKILL if it is still there 5 s later. */
static void end_command(struct recorder *r)
{
	int st = -1;
	if (!r->o->cmd || command_ended(r))
		return;
	kill((pid_t)r->o->pid, SIGTERM);
	for (int i = 0; i < 500 && waitpid((pid_t)r->o->pid, &st, WNOHANG) == 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (kill((pid_t)r->o->pid, 0) == 0 && waitpid((pid_t)r->o->pid, &st, WNOHANG) == 0) {
		kill((pid_t)r->o->pid, SIGKILL);
		while (waitpid((pid_t)r->o->pid, &st, 0) < 0 && errno == EINTR)   /* a second Ctrl-C */
			;
	}
	r->cmd_status = st;
}

static void progress(const struct recorder *r, struct progress *p, uint64_t t_ns)
{
	if (!progress_due(p))
		return;
	progress_show(p, "record: %.1f s, %" PRIu64 " epochs, %.1f MiB written", (double)t_ns / 1e9, r->epochs,
		      (double)r->pages * (double)r->page_size / (1024.0 * 1024.0));
}

/* Sleep until abs_ns (monotonic); false when a stop signal came first. */
static bool sleep_until(uint64_t abs_ns)
{
	struct timespec ts = { (time_t)(abs_ns / NS_PER_S), (long)(abs_ns % NS_PER_S) };
	while (!stop_requested) {
		int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (rc == 0)
			return !stop_requested;
		if (rc != EINTR)
			return false;
	}
	return false;
}

/* Epoch 0 now, then one every interval until CMD or PID ends, --duration, or a signal. */
static int record_loop(struct recorder *r, struct diag *d)
{
	uint64_t t0 = now_ns(), interval_ns = r->o->interval_ms * NS_PER_MS;
	struct progress pr;
	uint64_t limit_ns = r->o->duration_s * NS_PER_S;
	int rc = scan_epoch(r, 0, d);
	progress_init(&pr, r->o->quiet);

	if (rc == 0)
		check_thp(r);
	for (uint64_t k = 1; rc == 0 && !r->root_gone; k++) {
		uint64_t t_ns = k * interval_ns;
		if (limit_ns && t_ns > limit_ns) {
			r->timed_out = true;
			break;
		}
		if (!sleep_until(t0 + t_ns)) {
			r->interrupted = true;
			break;
		}
		if (command_ended(r))
			break;
		t_ns = (now_ns() - t0) / 1000 * 1000;      /* µs: the scan's actual time */
		if (t_ns <= r->last_t_ns)                   /* strictly increasing, whatever the clock */
			t_ns = r->last_t_ns + 1000;
		rc = scan_epoch(r, t_ns, d);
		if (rc == 0 && r->epochs % 16 == 0)   /* a smaps walk costs about what a scan does */
			check_thp(r);
		progress(r, &pr, t_ns);
	}
	if (rc == 0)
		check_thp(r);
	r->end_ns = (now_ns() - t0) / 1000 * 1000;
	if (r->end_ns <= r->last_t_ns)
		r->end_ns = r->last_t_ns + 1000;
	progress_end(&pr);
	return rc;
}

/* ----------------------------------------------------------------- the trace */

/* The blocks: the TRACE_MAX_BLOCKS most written mappings (all, if there are fewer), in the
 * order they were first seen. Returns how many. */
static size_t choose_blocks(struct recorder *r, struct trace_header *h)
{
	size_t n = 0;

	while (n < TRACE_MAX_BLOCKS && n < r->n_maps) {
		long best = -1;
		for (size_t i = 0; i < r->n_maps; i++)
			if (r->maps[i].block < 0 && (best < 0 || r->maps[i].pages > r->maps[best].pages))
				best = (long)i;
		r->maps[best].block = (int)n++;          /* provisional, renumbered below */
	}
	n = 0;
	for (size_t i = 0; i < r->n_maps; i++) {
		struct rec_map *m = &r->maps[i];
		if (m->block < 0)
			continue;
		m->block = (int)n;
		record_block_name(m->pid, m->kind, m->start, h->blocks[n].name, sizeof h->blocks[n].name);
		h->blocks[n++].size_bytes = m->size;
	}
	h->n_blocks = n;
	return n;
}

/* The spool, epoch by epoch, into the writer. */
static int replay_spool(struct recorder *r, trace_writer *w)
{
	struct spool_rec s;
	int rc = 0;

	if (fflush(r->spool) || fseek(r->spool, 0, SEEK_SET))
		return -EIO;
	while (rc == 0 && fread(&s, sizeof s, 1, r->spool) == 1) {
		if (s.kind == SPOOL_EPOCH) {
			rc = trace_writer_epoch(w, s.a);
			continue;
		}
		int block = s.map < r->n_maps ? r->maps[s.map].block : -1;
		if (block >= 0) {
			struct trace_range tr = { (uint32_t)block, s.a, s.b };
			rc = trace_writer_range(w, &tr);
		}
	}
	return rc ? rc : ferror(r->spool) ? -EIO : 0;
}

static void header_comments(const struct recorder *r, trace_writer *w, int argc, char **argv)
{
	char line[1024];
	size_t n = (size_t)snprintf(line, sizeof line, "recorded: migbed");
	for (int i = 0; i < argc && n < sizeof line; i++)
		n += (size_t)snprintf(line + n, sizeof line - n, " %s", argv[i]);
	trace_writer_comment(w, line);
	snprintf(line, sizeof line, "soft-dirty scans every %" PRIu64 " ms; %zu of %zu mappings are "
		 "blocks; epoch 0: pages populated at the start", r->o->interval_ms,
		 r->n_maps < TRACE_MAX_BLOCKS ? r->n_maps : (size_t)TRACE_MAX_BLOCKS, r->n_maps);
	trace_writer_comment(w, line);
}

static int write_trace(struct recorder *r, int argc, char **argv, struct diag *d)
{
	struct trace_header *h = calloc(1, sizeof *h);
	trace_writer *w = NULL;
	int rc = -ENOMEM;

	if (!h)
		return diag_set(d, "out of memory"), -ENOMEM;
	*h = (struct trace_header){ .version = TRACE_VERSION, .page_size = r->page_size,
				    .duration_ns = r->end_ns };
	if (choose_blocks(r, h) == 0) {
		rc = diag_set(d, "nothing to record: no private writable anonymous mapping was seen "
			      "(did the process end at once?)");
		goto out;
	}
	rc = trace_writer_open(r->o->output, h, &w, d);
	if (rc)
		goto out;
	header_comments(r, w, argc, argv);
	rc = replay_spool(r, w);
	if (rc) {
		diag_set(d, "%s: %s", r->o->output, *trace_writer_diag(w) ? trace_writer_diag(w) : strerror(EIO));
		trace_writer_abort(w);
		goto out;
	}
	rc = trace_writer_close(w);
	if (rc)
		diag_set(d, "%s: cannot write: %s", r->o->output, strerror(-rc));
out:
	free(h);
	return rc;
}

/* ---------------------------------------------------------------- summary */

static const char *stop_reason(const struct recorder *r)
{
	if (r->interrupted)
		return "signal";
	if (r->timed_out)
		return "duration";
	return r->o->cmd ? "exit" : "gone";
}

static void summary(const struct recorder *r)
{
	double secs = (double)r->end_ns / 1e9, mib = (double)r->pages * (double)r->page_size / (1024.0 * 1024.0);
	double scan_mean_ms = r->epochs ? (double)r->scan_ns_total / (double)r->epochs / 1e6 : 0.0;
	double overhead = (double)r->scan_ns_total / (double)r->end_ns;
	size_t blocks = r->n_maps < TRACE_MAX_BLOCKS ? r->n_maps : TRACE_MAX_BLOCKS;
	int code = r->cmd_status >= 0 && WIFEXITED(r->cmd_status) ? WEXITSTATUS(r->cmd_status) : -1;

	fprintf(stderr, "migbed: record: wrote %s: %" PRIu64 " epochs over %.2f s, %zu blocks (of %zu "
		"mappings in %zu processes), %" PRIu64 " pages written (%.1f MiB, %.1f MiB/s), "
		"%" PRIu64 " populated at the start\n", strcmp(r->o->output, "-") ? r->o->output : "standard output",
		r->epochs, secs, blocks, r->n_maps, r->n_procs, r->pages, mib, mib / secs, r->epoch0_pages);
	fprintf(stderr, "migbed: record: scanning took %.2f ms per epoch (max %.2f ms) of a %" PRIu64
		" ms interval: %.1f %% of the time\n", scan_mean_ms, (double)r->scan_ns_max / 1e6,
		r->o->interval_ms, overhead * 100.0);
	if (r->maps_dropped || r->procs_dropped)
		fprintf(stderr, "migbed: record: left out: %" PRIu64 " mappings, %" PRIu64 " processes "
			"(over the limits %d, %d)\n", r->maps_dropped, r->procs_dropped, REC_MAX_MAPS, REC_MAX_PROCS);
	if (r->thp_bytes)
		fprintf(stderr, "migbed: record: warning: %.1f MiB of the recorded memory was in transparent "
			"huge pages, whose one soft-dirty bit covers 2 MiB: a write there marks all 512 of "
			"its pages (record with THP off: --no-thp for a CMD; for a --pid, echo never "
			">/sys/kernel/mm/transparent_hugepage/enabled before it starts)\n",
			(double)r->thp_bytes / (1024.0 * 1024.0));
	if (r->interrupted)
		fprintf(stderr, "migbed: record: interrupted: the trace holds the %.2f s recorded\n", secs);
	else if (r->timed_out)
		fprintf(stderr, "migbed: record: --duration reached%s\n", r->o->cmd ? ": the command was sent SIGTERM" : "");
	if (r->o->cmd && r->cmd_status >= 0)
		fprintf(stderr, "migbed: record: the command %s %d\n", code >= 0 ? "exited with status" : "was killed by signal",
			code >= 0 ? code : WIFSIGNALED(r->cmd_status) ? WTERMSIG(r->cmd_status) : 0);
	if (!r->o->json)
		return;
	json_t *doc = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:o}", "file",
				json_of_str(r->o->output), "epochs", json_of_u64(r->epochs), "duration-ns",
				json_of_u64(r->end_ns), "interval-ms", json_of_u64(r->o->interval_ms), "blocks",
				json_of_u64(blocks), "mappings", json_of_u64(r->n_maps), "mappings-left-out",
				json_of_u64(r->maps_dropped), "processes", json_of_u64(r->n_procs), "pages-written",
				json_of_u64(r->pages), "epoch0-pages", json_of_u64(r->epoch0_pages), "page-size",
				json_of_u64(r->page_size), "dirty-bytes-per-s",
				json_of_fixed((double)r->pages * (double)r->page_size / secs, 0), "scan-ms-mean",
				json_of_fixed(scan_mean_ms, 3), "scan-ms-max", json_of_fixed((double)r->scan_ns_max / 1e6, 3),
				"scan-share", json_of_fixed(overhead, 4), "thp-bytes", json_of_u64(r->thp_bytes), "stop",
				stop_reason(r), "command-exit",
				r->o->cmd && r->cmd_status >= 0 && code >= 0 ? json_integer(code) : json_null());
	cli_print_json("record", doc);
}

/* ---------------------------------------------------------------- main */

/* --region must lie inside PID's mappings (else the trace would be silently empty). */
static int region_mapped(struct recorder *r, const struct rec_opts *o)
{
	char file[64];
	size_t len;
	struct diag d = { 0 };
	int rc = read_proc_text(r, o->pid, "maps", &len);

	snprintf(file, sizeof file, "/proc/%ld/maps", o->pid);
	if (rc)
		return cli_usage_error(CMD ": %s: %s", file, strerror(-rc));
	rc = record_maps_cover(r->text, file, o->region_start, o->region_len, &d);
	if (rc < 0)
		return cli_usage_error(CMD ": %s", d.msg);
	if (rc == 0)
		return cli_usage_error(CMD ": --region 0x%" PRIx64 "+%" PRIu64 " is not wholly mapped in "
				       "process %ld (see %s)", o->region_start, o->region_len, o->pid, file);
	return 0;
}

/* Checks before anything runs: the output is writable, soft-dirty works, PID exists, the
 * --region is mapped. */
static int preflight(struct recorder *r, const struct rec_opts *o, uint64_t page_size)
{
	struct outfile of = { .fd = -1 };
	char path[64];
	int rc = outfile_open(&of, o->output);

	if (rc)
		return cli_usage_error(CMD ": %s: cannot write: %s", o->output, strerror(-rc));
	outfile_abort(&of);
	if (!soft_dirty_works(page_size))
		return cli_usage_error(CMD ": %s", no_soft_dirty_msg);
	snprintf(path, sizeof path, "/proc/%ld/pagemap", o->pid);
	if (o->pid && access(path, R_OK))
		return cli_usage_error(CMD ": --pid %ld: %s", o->pid,
				       errno == ENOENT ? "no such process" : strerror(errno));
	return o->region ? region_mapped(r, o) : 0;
}

static void catch_stop_signals(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cmd_record(int argc, char **argv)
{
	struct recorder *r = calloc(1, sizeof *r);
	struct rec_opts o;
	struct diag d = { 0 };
	int code;

	if (!r)
		return cli_usage_error(CMD ": out of memory");
	r->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	r->cmd_status = -1;
	r->o = &o;
	code = parse_args(argc, argv, &o, r->page_size);
	if (code >= 0)
		goto out;
	code = preflight(r, &o, r->page_size);
	if (code)
		goto out;
	r->spool = tmpfile();
	if (!r->spool) {
		fprintf(stderr, "migbed: " CMD ": cannot create a spool file: %s\n", strerror(errno));
		code = CLI_EXIT_FAIL;
		goto out;
	}
	catch_stop_signals();   /* before the fork: a stop in between still ends CMD (exec resets them there) */
	if (o.cmd && (code = start_command(o.cmd, o.no_thp, &o.pid)) != 0)
		goto out;
	int rc = record_loop(r, &d);
	end_command(r);
	if (rc == 0)
		rc = write_trace(r, argc, argv, &d);
	if (rc) {
		fprintf(stderr, "migbed: " CMD ": %s (nothing written)\n", d.msg);
		code = CLI_EXIT_FAIL;
		goto out;
	}
	summary(r);
	code = CLI_EXIT_OK;
out:
	if (r->spool)
		fclose(r->spool);
	free(r->text);
	free(r);
	return code;
}
