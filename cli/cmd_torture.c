/* cmd_torture - `migbed torture [SCENARIO]`: fail every fallible call once (SQLite's OOM
 * loop, curl's torture mode; docs/faults.md "Torture").
 *
 * 1. A baseline `migbed run` of the scenario with an empty fault plan counts the calls per
 *    (site, side) (--fault-counts); it must complete.
 * 2. For every (site, side, N) it reruns the scenario with one rule `SITE@SIDE #N -> ACTION`,
 *    ACTION the site's canonical failure, bounded by --max-runs (spread evenly over the
 *    sites) and split by --shard K/N (round robin) for CI matrices.
 * 3. Each rerun is a child process (forked, no exec: run_migrate of the same options as
 *    `migbed run`, its result sent back as a typed record through a pipe, run/result_wire.h),
 *    so a crash or hang of one run is seen, not suffered; a wall-clock watchdog kills a run that
 *    outlives --watchdog-ms. A run is proper when it completes verified, or fails with a
 *    named cause, and its fault fired. Everything else (hang, crash, INTERNAL or no cause,
 *    VERIFY_MISMATCH, a fault that never fired, bad input) fails the sweep.
 * Table on stdout, progress on stderr when it is a terminal, --json FILE. Exit 0 all proper,
 * 1 some run was not, 2 bad usage. Deterministic: same scenario, same runs, same table. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "faults/fault.h"
#include "run/result_wire.h"
#include "run/run.h"
#include "sim/size.h"

/* libgcov's flush: a forked rerun ends in _exit, which skips the exit-time dump, so a
 * coverage build (coverage/run.sh defines MIGBED_COVERAGE) dumps first. */
#ifdef MIGBED_COVERAGE
extern void __gcov_dump(void);
#endif

#define TORTURE_JOBS_MAX 64u
_Static_assert(OPTS_TORTURE_JOBS_MAX <= TORTURE_JOBS_MAX, "--jobs's bound (the option table) over the slots");
#define TORTURE_ARGS_MAX 256
#define TORTURE_POLL_NS 2000000L        /* 2 ms between child checks */
#define TORTURE_DETAIL_MAX 200

enum verdict { V_COMPLETED, V_FAILED, V_HANG, V_CRASH, V_UNNAMED, V_CORRUPT, V_NOT_FIRED, V_ERROR, V_COUNT };
static const char *const verdict_names[V_COUNT] = {
	"completed", "failed", "hang", "crash", "unnamed", "corrupt", "not-fired", "error",
};

struct trun {
	enum fault_site site;
	enum fault_side side;
	uint64_t call;
	enum verdict v;
	char cause[40], cause_side[8];
	char detail[TORTURE_DETAIL_MAX];
};

struct group {                          /* one (site, side) of the baseline */
	enum fault_site site;
	enum fault_side side;
	uint64_t calls, take;
};

struct torture {
	const char *scenario;           /* NULL: none */
	char **run_argv;                /* the options passed on to `migbed run` */
	int run_argc;
	uint64_t max_runs, watchdog_ms, shard_k, shard_n, jobs;
	const char *json_path, *sites;
	const char *backend;            /* "model" / "verbs" (for the JSON) */
	char dir[1024], exe[1024];
	struct group *groups;
	size_t n_groups;
	uint64_t total;                 /* runs before --max-runs and --shard */
	struct trun *runs;
	size_t n_runs;
	bool progress;
	struct trun baseline;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed torture [SCENARIO] [--key VALUE ...] [--max-runs N] [--shard K/N]\n"
		   "                      [--json FILE] [--watchdog-ms N] [--jobs N] [--sites GLOB,...]\n\n"
		   "Fail every fallible call of a migration once: a baseline run counts the calls per\n"
		   "fault site and side, then the scenario is rerun once per call with that call failed\n"
		   "by the site's canonical action (reg_mr, dereg_mr, ep_setup, alloc: errno(ENOMEM);\n"
		   "post_*: errno(EIO); wc.*: status(GENERAL_ERR); connect, accept: errno(ECONNREFUSED);\n"
		   "ep_create: errno(EHOSTUNREACH); modify_qp: errno(EINVAL); msg.*, cm: drop).\n"
		   "Every rerun must end completed-and-verified or failed with a named cause.\n\n"
		   "Its own keys, then those of `migbed run`, passed to every run:\n\n");
	opts_print_help(f, OPTS_TORTURE);
	fprintf(f, "\nTable: site, side, call, action, verdict, cause, side of the cause.\n"
		   "exit status: 0 every run ended properly, 1 some run hung, crashed, corrupted memory,\n"
		   "failed without a named cause or did not fire, 2 bad usage.\n");
}

/* ---- options ---------------------------------------------------------------------------- */

/* torture's own keys (rows of the option table, cli/runcfg.h), parsed once per process; the
 * sweep's strings point into it. */
static struct opts_extra torture_opts;

/* Take torture's own keys out of argv, the rest (`migbed run` options) into t->run_argv, and
 * validate those with run's own parser (bad input: its file:line message, exit 2). 1: help
 * printed; 0 ok; 2 bad. */
static int parse_args(struct torture *t, int argc, char **argv)
{
	struct opts_extra *x = &torture_opts;
	struct diag d = { 0 };
	t->run_argv = calloc((size_t)argc + 1, sizeof *t->run_argv);
	if (!t->run_argv)
		return cli_usage_error("torture: out of memory");
	opts_extra_defaults(x);
	t->run_argv[t->run_argc++] = "run";
	for (int i = 1; i < argc; i++)
		t->run_argv[t->run_argc++] = argv[i];
	if (opts_take_extra(OPTS_TORTURE, x, &t->run_argc, t->run_argv, &d))
		return cli_usage_error("torture: %s", d.msg);
	t->max_runs = x->max_runs;
	t->watchdog_ms = x->watchdog_ms;
	t->jobs = x->jobs;
	t->shard_k = x->shard_k;
	t->shard_n = x->shard_n;
	t->json_path = x->json[0] ? x->json : NULL;
	t->sites = x->sites[0] ? x->sites : NULL;
	if (t->run_argc > TORTURE_ARGS_MAX - 16)
		return cli_usage_error("torture: too many options");
	struct runcfg *c = calloc(1, sizeof *c);
	if (!c)
		return cli_usage_error("torture: out of memory");
	runcfg_defaults(c);
	int rc = run_parse_args(c, &d, t->run_argc, t->run_argv, usage);
	if (rc < 0)
		cli_usage_error("torture: %s", d.msg);
	t->scenario = c->scenario[0] ? strdup(c->scenario) : NULL;
	t->backend = c->backend == HCA_BACKEND_VERBS ? "verbs" : "model";
	free(c);
	return rc < 0 ? 2 : rc > 0 ? 1 : 0;
}

/* ---- the canonical failure of each site: a column of faults/fault.h's site table ------------ */

static const char *canonical_action(enum fault_site s)
{
	return fault_site_canonical(s);
}

static bool site_selected(const struct torture *t, enum fault_site s)
{
	const char *name = fault_site_name(s);
	if (!t->sites)
		return s != FAULT_SITE_POST_SEND && !(s >= FAULT_SITE_CM_EVENT && s < FAULT_SITE_MSG);
	char buf[512];
	snprintf(buf, sizeof buf, "%s", t->sites);
	for (char *save = NULL, *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save))
		if (fnmatch(g, name, 0) == 0)
			return true;
	return false;
}

/* ---- child runs ------------------------------------------------------------------------------ */

struct child {
	pid_t pid;
	size_t run;                     /* index in t->runs; SIZE_MAX: the baseline */
	int fd;                         /* the read end of its result pipe */
	uint64_t start_ms;
	bool killed;
};

static void slot_path(const struct torture *t, size_t slot, const char *ext, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%zu.%s", t->dir, slot, ext);
}

static void no_usage(FILE *f)
{
	(void)f;
}

/* The child: `migbed run ARGS` in this very process image (no exec), its result as a
 * run_digest record (run/result_wire.h) into fd; the exit status is migbed run's. */
static void child_run(int argc, char **argv, int fd)
{
	struct runcfg *c = calloc(1, sizeof *c);
	struct run_result *res = calloc(1, sizeof *res);
	struct run_digest dg;
	struct diag d = { 0 };
	char rec[RUN_WIRE_MAX];
	int code = CLI_EXIT_USAGE, n;
	if (!c || !res) {
		fprintf(stderr, "migbed: run: out of memory\n");
		_exit(CLI_EXIT_USAGE);
	}
	runcfg_defaults(c);
	if (run_parse_args(c, &d, argc, argv, no_usage) != 0 || run_migrate(c, res, &d) != 0) {
		fprintf(stderr, "migbed: run: %s\n", d.msg[0] ? d.msg : "bad input");
	} else {
		code = run_report_result(c, res, &d);
		run_digest_of(res, &dg);
		n = run_digest_encode(&dg, rec, sizeof rec);
		if (n < 0 || write(fd, rec, (size_t)n) != n)
			code = CLI_EXIT_USAGE;
	}
	fflush(NULL);
#ifdef MIGBED_COVERAGE
	__gcov_dump();
#endif
	_exit(code);
}

/* fork `migbed run ARGS --quiet OPT VAL` (child_run) with stdout and stderr in S.out and
 * TMPDIR = the sweep's folder (a killed run's temporary trace stays there); its result
 * comes back on *fd (the read end of a pipe). */
static pid_t spawn(const struct torture *t, size_t slot, const char *opt, const char *val, int *fd)
{
	char out[1100];
	char *args[TORTURE_ARGS_MAX];
	int n = 0, p[2];
	slot_path(t, slot, "out", out, sizeof out);
	args[n++] = (char *)t->exe;
	for (int i = 0; i < t->run_argc; i++)
		args[n++] = t->run_argv[i];
	char *tail[] = { "--quiet", (char *)opt, (char *)val, NULL };
	for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
		args[n++] = tail[i];
	if (pipe(p) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid != 0) {
		close(p[1]);
		if (pid < 0)
			close(p[0]);
		*fd = pid < 0 ? -1 : p[0];
		return pid;
	}
	close(p[0]);
	if (!freopen(out, "w", stdout) || dup2(fileno(stdout), 2) < 0)
		_exit(126);
	setenv("TMPDIR", t->dir, 1);
	child_run(n - 2, args + 1, p[1]);   /* argv[0] = "run"; the NULL not counted */
	_exit(127);
}

/* The child's record, whole (after it exited: up to EOF). false: none or malformed. */
static bool read_digest(int fd, struct run_digest *dg)
{
	char buf[RUN_WIRE_MAX + 1];
	size_t len = 0;
	ssize_t k;
	while (len < sizeof buf && (k = read(fd, buf + len, sizeof buf - len)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return false;
		len += (size_t)k;
	}
	return run_digest_decode(buf, len, dg) == 0;
}

static bool read_small(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t len = fread(buf, 1, n - 1, f);
	buf[len] = '\0';
	fclose(f);
	return len > 0;
}

/* The last line the child printed (for "error" runs). */
static void last_line(const char *path, char *out, size_t n)
{
	char buf[4096];
	out[0] = '\0';
	if (!read_small(path, buf, sizeof buf))
		return;
	size_t len = strlen(buf);
	while (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	const char *nl = strrchr(buf, '\n');
	snprintf(out, n, "%s", nl ? nl + 1 : buf);
}

static void classify_digest(struct trun *r, const struct run_digest *dg)
{
	snprintf(r->cause, sizeof r->cause, "%s", cause_name(dg->cause));
	snprintf(r->cause_side, sizeof r->cause_side, "%s", dg->side);
	snprintf(r->detail, sizeof r->detail, "%.*s", (int)sizeof r->detail - 1, dg->detail);
	if (dg->completed && dg->verified)
		r->v = V_COMPLETED;
	else if (dg->completed || dg->cause == CAUSE_INTERNAL)
		r->v = V_UNNAMED;
	else if (dg->cause == CAUSE_VERIFY_MISMATCH)
		r->v = V_CORRUPT;
	else
		r->v = V_FAILED;
}

static void classify(const struct torture *t, struct trun *r, size_t slot, int status, const struct child *c)
{
	char path[1100];
	struct run_digest dg;
	r->cause[0] = r->cause_side[0] = r->detail[0] = '\0';
	bool have = read_digest(c->fd, &dg);
	if (c->killed) {
		r->v = V_HANG;
		snprintf(r->detail, sizeof r->detail, "killed by the watchdog after %llu ms of wall time",
			 (unsigned long long)t->watchdog_ms);
		return;
	}
	if (WIFSIGNALED(status)) {
		r->v = V_CRASH;
		snprintf(r->detail, sizeof r->detail, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
		return;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1 || !have) {
		r->v = V_ERROR;
		slot_path(t, slot, "out", path, sizeof path);
		last_line(path, r->detail, sizeof r->detail);
		return;
	}
	classify_digest(r, &dg);
	if (c->run != SIZE_MAX && (r->v == V_COMPLETED || r->v == V_FAILED) && dg.fired == 0)
		r->v = V_NOT_FIRED;
}

/* ---- scheduling ------------------------------------------------------------------------------- */

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void progress(const struct torture *t, size_t done, size_t bad)
{
	if (t->progress)
		fprintf(stderr, "\rtorture: %zu/%zu runs, %zu bad ", done, t->n_runs, bad);
}

static void start_run(struct torture *t, struct child *c, size_t slot, size_t run)
{
	char rule[FAULT_SPEC_MAX];
	const struct trun *r = &t->runs[run];
	snprintf(rule, sizeof rule, "%s@%s #%llu -> %s", fault_site_name(r->site), fault_side_name(r->side),
		 (unsigned long long)r->call, canonical_action(r->site));
	*c = (struct child){ .run = run, .start_ms = wall_ms() };
	c->pid = spawn(t, slot, "--fault", rule, &c->fd);
}

/* Reap one finished child if any (0: none yet); kill those over the watchdog. */
static int reap(struct torture *t, struct child *kids, size_t n_kids, size_t *slot)
{
	int status;
	pid_t pid = waitpid(-1, &status, WNOHANG);
	if (pid > 0) {
		for (size_t s = 0; s < n_kids; s++) {
			if (kids[s].pid != pid)
				continue;
			struct trun *r = kids[s].run == SIZE_MAX ? &t->baseline : &t->runs[kids[s].run];
			classify(t, r, s, status, &kids[s]);
			close(kids[s].fd);
			kids[s].pid = 0;
			*slot = s;
			return 1;
		}
		return 0;               /* not ours */
	}
	for (size_t s = 0; s < n_kids; s++) {
		if (kids[s].pid > 0 && !kids[s].killed && wall_ms() - kids[s].start_ms > t->watchdog_ms) {
			kill(kids[s].pid, SIGKILL);
			kids[s].killed = true;
		}
	}
	nanosleep(&(struct timespec){ .tv_nsec = TORTURE_POLL_NS }, NULL);
	return 0;
}

/* A child could not start: end the others (killed, reaped, their pipes closed), so nothing
 * is left running or writing into the sweep's folder. */
static void stop_all(struct child *kids, size_t n)
{
	for (size_t s = 0; s < n; s++) {
		if (kids[s].pid <= 0)
			continue;
		kill(kids[s].pid, SIGKILL);
		while (waitpid(kids[s].pid, NULL, 0) < 0 && errno == EINTR)
			;
		kids[s].pid = 0;
		if (kids[s].fd >= 0)
			close(kids[s].fd);
		kids[s].fd = -1;
	}
}

/* Run every selected rerun, --jobs at a time. 0, or -errno if a child could not start. */
static int run_all(struct torture *t)
{
	struct child kids[TORTURE_JOBS_MAX] = { 0 };
	size_t next = 0, done = 0, active = 0, bad = 0, slot;
	while (done < t->n_runs) {
		for (size_t s = 0; s < t->jobs && next < t->n_runs; s++) {
			if (kids[s].pid > 0)
				continue;
			start_run(t, &kids[s], s, next++);
			if (kids[s].pid < 0) {
				int e = errno;
				stop_all(kids, t->jobs);
				return -e;
			}
			active++;
		}
		if (!reap(t, kids, t->jobs, &slot))
			continue;
		active--;
		done++;
		bad += t->runs[kids[slot].run].v > V_FAILED;
		progress(t, done, bad);
	}
	if (t->progress)
		fputc('\n', stderr);
	return active == 0 ? 0 : -EIO;
}

/* ---- baseline and selection --------------------------------------------------------------------- */

static int baseline(struct torture *t, char *counts, size_t n)
{
	struct child kid = { 0 };
	size_t slot;
	snprintf(counts, n, "%s/baseline.counts", t->dir);
	kid = (struct child){ .run = SIZE_MAX, .start_ms = wall_ms() };
	kid.pid = spawn(t, 0, "--fault-counts", counts, &kid.fd);
	if (kid.pid < 0)
		return cli_usage_error("torture: cannot start a run: %s", strerror(errno));
	while (!reap(t, &kid, 1, &slot))
		;
	if (t->baseline.v != V_COMPLETED) {
		fprintf(stderr, "migbed: torture: the scenario does not complete without faults (%s%s%s: %s): "
				"nothing to sweep\n", verdict_names[t->baseline.v], t->baseline.cause[0] ? " " : "",
			t->baseline.cause, t->baseline.detail);
		return CLI_EXIT_FAIL;
	}
	return 0;
}

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return (int)x->side - (int)y->side;
}

/* The baseline's counts of the selected sites, in site order. */
static int read_groups(struct torture *t, const char *path)
{
	FILE *f = fopen(path, "r");
	char site[64], side[8];
	unsigned long long calls;
	if (!f)
		return cli_usage_error("torture: %s: %s", path, strerror(errno));
	t->groups = calloc(FAULT_SITE_COUNT * FAULT_SIDES, sizeof *t->groups);
	fscanf(f, "# migbed fault-counts %*d\n");
	while (t->groups && fscanf(f, "%63s %7s %llu\n", site, side, &calls) == 3) {
		int s = fault_site_lookup(site), d = fault_side_lookup(side);
		if (s < 0 || d < 0 || !site_selected(t, (enum fault_site)s) || t->n_groups == FAULT_SITE_COUNT * FAULT_SIDES)
			continue;
		t->groups[t->n_groups++] = (struct group){ .site = (enum fault_site)s, .side = (enum fault_side)d,
							   .calls = calls };
		t->total += calls;
	}
	fclose(f);
	if (!t->groups)
		return cli_usage_error("torture: out of memory");
	qsort(t->groups, t->n_groups, sizeof *t->groups, group_cmp);
	return 0;
}

/* --max-runs over the groups by water-filling: every group gets min(calls, L) runs with the
 * level L as high as the budget allows; what is left goes one by one to the larger groups. */
static void allocate(struct torture *t)
{
	uint64_t lo = 0, hi = 0, sum = 0;
	for (size_t i = 0; i < t->n_groups; i++)
		hi = t->groups[i].calls > hi ? t->groups[i].calls : hi;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2, s = 0;
		for (size_t i = 0; i < t->n_groups; i++)
			s += t->groups[i].calls < mid ? t->groups[i].calls : mid;
		if (s <= t->max_runs)
			lo = mid;
		else
			hi = mid - 1;
	}
	for (size_t i = 0; i < t->n_groups; i++) {
		struct group *g = &t->groups[i];
		g->take = g->calls < lo ? g->calls : lo;
		sum += g->take;
	}
	for (size_t i = 0; i < t->n_groups && sum < t->max_runs; i++) {
		if (t->groups[i].take < t->groups[i].calls) {
			t->groups[i].take++;
			sum++;
		}
	}
}

/* The runs of this shard: per group, `take` calls spread evenly from the first to the last. */
static int select_runs(struct torture *t)
{
	size_t index = 0;
	allocate(t);
	t->runs = calloc(t->max_runs < t->total ? t->max_runs : t->total, sizeof *t->runs);
	if (!t->runs && t->total)
		return cli_usage_error("torture: out of memory");
	for (size_t i = 0; i < t->n_groups; i++) {
		const struct group *g = &t->groups[i];
		for (uint64_t k = 0; k < g->take; k++, index++) {
			if (index % t->shard_n != t->shard_k - 1)
				continue;
			uint64_t call = g->take == 1 ? 1 : 1 + k * (g->calls - 1) / (g->take - 1);
			t->runs[t->n_runs++] = (struct trun){ .site = g->site, .side = g->side, .call = call };
		}
	}
	return 0;
}

/* ---- report ------------------------------------------------------------------------------------- */

static void count_verdicts(const struct torture *t, size_t *n)
{
	memset(n, 0, V_COUNT * sizeof *n);
	for (size_t i = 0; i < t->n_runs; i++)
		n[t->runs[i].v]++;
}

static void print_table(const struct torture *t, FILE *f)
{
	size_t n[V_COUNT];
	fprintf(f, "%-24s %-4s %6s  %-20s %-10s %-26s %s\n", "SITE", "SIDE", "CALL", "ACTION", "VERDICT", "CAUSE", "BY");
	for (size_t i = 0; i < t->n_runs; i++) {
		const struct trun *r = &t->runs[i];
		fprintf(f, "%-24s %-4s %6llu  %-20s %-10s %-26s %s\n", fault_site_name(r->site), fault_side_name(r->side),
			(unsigned long long)r->call, canonical_action(r->site), verdict_names[r->v],
			r->cause[0] ? r->cause : "-", r->cause_side[0] ? r->cause_side : "-");
		if (r->v > V_FAILED)
			fprintf(f, "    ^ %s\n", r->detail[0] ? r->detail : "(no detail)");
	}
	count_verdicts(t, n);
	fprintf(f, "torture: %zu runs (%llu calls in %zu site/side groups, shard %llu/%llu): %zu completed, "
		   "%zu failed with a named cause, %zu bad (hang %zu, crash %zu, unnamed %zu, corrupt %zu, "
		   "not-fired %zu, error %zu)\n",
		t->n_runs, (unsigned long long)t->total, t->n_groups, (unsigned long long)t->shard_k,
		(unsigned long long)t->shard_n, n[V_COMPLETED], n[V_FAILED],
		t->n_runs - n[V_COMPLETED] - n[V_FAILED], n[V_HANG], n[V_CRASH], n[V_UNNAMED], n[V_CORRUPT],
		n[V_NOT_FIRED], n[V_ERROR]);
}

static void json_runs(const struct torture *t, FILE *f)
{
	for (size_t i = 0; i < t->n_runs; i++) {
		const struct trun *r = &t->runs[i];
		fprintf(f, "%s{\"site\":\"%s\",\"side\":\"%s\",\"call\":%llu,\"action\":\"%s\",\"verdict\":\"%s\",\"cause\":",
			i ? "," : "", fault_site_name(r->site), fault_side_name(r->side), (unsigned long long)r->call,
			canonical_action(r->site), verdict_names[r->v]);
		json_string(f, r->cause);
		fprintf(f, ",\"cause_side\":");
		json_string(f, r->cause_side);
		fprintf(f, ",\"detail\":");
		json_string(f, r->detail);
		fprintf(f, "}\n");
	}
}

/* The sweep as JSON (no wall times: the same sweep writes the same file). */
static void print_json(const struct torture *t, FILE *f)
{
	size_t n[V_COUNT];
	count_verdicts(t, n);
	fprintf(f, "{\"scenario\":");
	json_string(f, t->scenario ? t->scenario : "");
	fprintf(f, ",\"backend\":\"%s\",\"shard\":\"%llu/%llu\",\"max_runs\":%llu,\"calls\":%llu,\"groups\":[",
		t->backend, (unsigned long long)t->shard_k, (unsigned long long)t->shard_n,
		(unsigned long long)t->max_runs, (unsigned long long)t->total);
	for (size_t i = 0; i < t->n_groups; i++)
		fprintf(f, "%s{\"site\":\"%s\",\"side\":\"%s\",\"calls\":%llu,\"runs\":%llu}", i ? "," : "",
			fault_site_name(t->groups[i].site), fault_side_name(t->groups[i].side),
			(unsigned long long)t->groups[i].calls, (unsigned long long)t->groups[i].take);
	fprintf(f, "],\"runs\":[\n");
	json_runs(t, f);
	fprintf(f, "],\"summary\":{");
	for (int v = 0; v < V_COUNT; v++)
		fprintf(f, "%s\"%s\":%zu", v ? "," : "", verdict_names[v], n[v]);
	fprintf(f, "},\"ok\":%s}\n", n[V_COMPLETED] + n[V_FAILED] == t->n_runs ? "true" : "false");
}

static int write_json(const struct torture *t)
{
	char tmp[1100];
	snprintf(tmp, sizeof tmp, "%s.tmp", t->json_path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return cli_usage_error("torture: %s: cannot write: %s", t->json_path, strerror(errno));
	print_json(t, f);
	bool ok = fflush(f) == 0 && !ferror(f);
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, t->json_path) != 0) {
		unlink(tmp);
		return cli_usage_error("torture: %s: write error", t->json_path);
	}
	return 0;
}

/* ---- the command ------------------------------------------------------------------------------- */

static int make_dir(struct torture *t)
{
	const char *tmp = getenv("TMPDIR");
	ssize_t n = readlink("/proc/self/exe", t->exe, sizeof t->exe - 1);
	if (n <= 0)
		return cli_usage_error("torture: cannot find my own executable: %s", strerror(errno));
	t->exe[n] = '\0';
	snprintf(t->dir, sizeof t->dir, "%s/migbed-torture-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->dir))
		return cli_usage_error("torture: cannot create a folder in %s: %s", tmp && *tmp ? tmp : "/tmp",
				       strerror(errno));
	return 0;
}

/* Remove the sweep's folder with whatever the runs left in it (flat: no subfolders). */
static void remove_dir(const struct torture *t)
{
	DIR *d = opendir(t->dir);
	struct dirent *e;
	char path[1400];
	for (int i = 0; d && i < 1000000 && (e = readdir(d)); i++) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", t->dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(t->dir);
}

static void torture_free(struct torture *t)
{
	free(t->run_argv);
	free((char *)t->scenario);
	free(t->groups);
	free(t->runs);
}

static int sweep(struct torture *t)
{
	char counts[1100];
	int rc = baseline(t, counts, sizeof counts);
	if (rc || (rc = read_groups(t, counts)) || (rc = select_runs(t)))
		return rc;
	t->progress = isatty(2);
	if (run_all(t) < 0)
		return cli_usage_error("torture: cannot start a run: %s", strerror(errno));
	print_table(t, stdout);
	fflush(stdout);
	if (t->json_path && write_json(t))
		return CLI_EXIT_USAGE;
	for (size_t i = 0; i < t->n_runs; i++)
		if (t->runs[i].v > V_FAILED)
			return CLI_EXIT_FAIL;
	return CLI_EXIT_OK;
}

int cmd_torture(int argc, char **argv)
{
	struct torture t = { 0 };   /* the options' defaults: the option table's (parse_args) */
	int rc = parse_args(&t, argc, argv);
	if (rc) {
		torture_free(&t);
		return rc == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	if ((rc = make_dir(&t)) == 0) {
		rc = sweep(&t);
		remove_dir(&t);
	}
	torture_free(&t);
	return rc;
}
