/* SPDX-License-Identifier: MIT */
/* torture - the sweep: a baseline, the budget, forked reruns, a watchdog (see torture.h). */
#include "run/torture.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* libgcov's flush: a forked run ends in _exit, which skips the exit-time dump, so a
 * coverage build (coverage/run.sh defines MIGBED_COVERAGE) dumps first. A strong reference:
 * a weak one is not pulled from libgcov.a. */
#ifdef MIGBED_COVERAGE
extern void __gcov_dump(void);
#endif

#define TORTURE_POLL_NS 2000000L        /* 2 ms between child checks */
#define EXIT_BAD 2                      /* a child's exit status: bad input or output */

static const char *const verdict_names[TORTURE_VERDICTS] = {
#define X(NAME, tok) tok,
	TORTURE_VERDICT_TABLE(X)
#undef X
};

const char *torture_verdict_name(enum torture_verdict v)
{
	return (unsigned)v < TORTURE_VERDICTS ? verdict_names[v] : "?";
}

void torture_config_defaults(struct torture_config *tc, const struct runcfg *run)
{
	*tc = (struct torture_config){ .run = run, .max_runs = TORTURE_MAX_RUNS_DEFAULT,
				       .watchdog_ms = TORTURE_WATCHDOG_MS_DEFAULT, .shard_k = 1, .shard_n = 1,
				       .jobs = 1 };
}

/* ---- the sites ------------------------------------------------------------------------------ */

/* Does one of the globs of sites (comma-separated) match name? */
static bool sites_match(const char *sites, const char *name)
{
	char buf[TORTURE_SITES_MAX + 1];
	snprintf(buf, sizeof buf, "%s", sites);
	for (char *save = NULL, *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save))
		if (fnmatch(g, name, 0) == 0)
			return true;
	return false;
}

int torture_sites_check(const char *sites, struct diag *d)
{
	char buf[TORTURE_SITES_MAX + 1];
	if (strlen(sites) >= sizeof buf)
		return diag_set(d, "--sites: longer than %u bytes", TORTURE_SITES_MAX);
	memcpy(buf, sites, strlen(sites) + 1);
	int n = 0;
	for (char *save = NULL, *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save), n++) {
		bool hit = false;
		for (int st = 0; st < FAULT_SITE_COUNT && !hit; st++)
			hit = fnmatch(g, fault_site_name((enum fault_site)st), 0) == 0;
		if (!hit)
			return diag_set(d, "--sites: '%s' matches no fault site (reg_mr, post_send.write, wc.*, "
					   "msg.ready, ...: see docs/faults.md)", g);
	}
	return n ? 0 : diag_set(d, "--sites: no site given");
}

static bool site_selected(const struct torture_config *tc, enum fault_site s)
{
	if (!tc->sites)
		return s != FAULT_SITE_POST_SEND && !(s >= FAULT_SITE_CM_EVENT && s < FAULT_SITE_MSG);
	return sites_match(tc->sites, fault_site_name(s));
}

static int bound(struct diag *d, const char *name, uint64_t v, uint64_t lo, uint64_t hi)
{
	if (v >= lo && v <= hi)
		return 0;
	return diag_set(d, "%s: %llu is not from %llu to %llu", name, (unsigned long long)v,
			(unsigned long long)lo, (unsigned long long)hi);
}

static int config_check(const struct torture_config *tc, struct diag *d)
{
	if (!tc->run)
		return diag_set(d, "no run config");
	if (bound(d, "max runs", tc->max_runs, 1, TORTURE_MAX_RUNS_LIMIT) ||
	    bound(d, "watchdog", tc->watchdog_ms, TORTURE_WATCHDOG_MS_MIN, TORTURE_WATCHDOG_MS_MAX) ||
	    bound(d, "jobs", tc->jobs, 1, TORTURE_JOBS_MAX) ||
	    bound(d, "shards", tc->shard_n, 1, TORTURE_SHARDS_MAX) || bound(d, "shard", tc->shard_k, 1, tc->shard_n))
		return -EINVAL;
	if (tc->sites && torture_sites_check(tc->sites, d))
		return -EINVAL;
	if (tc->run->n_faults >= RUNCFG_MAX_FAULTS)
		return diag_set(d, "no room for the fault rule of a rerun: the run has %d fault rules (at most %d)",
				tc->run->n_faults, RUNCFG_MAX_FAULTS);
	return 0;
}

/* ---- the sweep's state ------------------------------------------------------------------------ */

/* What a child hands back: one record, written once (atomically: under PIPE_BUF). */
struct report {
	int rc;                                   /* run_migrate's: 0, or -EINVAL (msg: why) */
	char msg[DIAG_MSG_MAX];
	struct run_digest dg;                     /* rc == 0 */
	uint64_t calls[FAULT_SITE_COUNT][FAULT_SIDES];   /* rc == 0: the run's calls per site */
};
_Static_assert(sizeof(struct report) <= PIPE_BUF, "a child's record is one atomic write");

struct child {
	pid_t pid;                      /* 0: the slot is free */
	struct torture_run *run;        /* what it runs (the baseline or a rerun) */
	int fd;                         /* the read end of its record pipe */
	uint64_t start_ms;
	bool killed;                    /* by the watchdog */
};

struct sweep {
	const struct torture_config *tc;
	struct torture_result *res;
	struct runcfg *cfg;             /* a copy of tc->run: what a child runs, with its rule */
	struct report rep;              /* the last record read ... */
	bool rep_ok;                    /* ... whole */
	char dir[1024];                 /* the sweep's folder */
};

static int out_of_memory(struct diag *d)
{
	diag_set(d, "out of memory");
	return -ENOMEM;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void slot_path(const struct sweep *sw, size_t slot, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%zu.out", sw->dir, slot);
}

/* ---- a child ---------------------------------------------------------------------------------- */

/* The child: run_migrate of the config with the rule (NULL: none), the record into fd.
 * Exit status 0 the run passed, 1 it did not, 2 bad input or an output error (printed). */
static void child_main(struct sweep *sw, const char *rule, int fd)
{
	struct runcfg *c = sw->cfg;
	struct run_result *res = calloc(1, sizeof *res);
	struct report *rep = &sw->rep;
	struct diag d = { 0 };
	int code = EXIT_BAD;
	memset(rep, 0, sizeof *rep);
	c->quiet = true;
	if (rule)
		snprintf(c->faults[c->n_faults++], sizeof c->faults[0], "%s", rule);
	if (!res) {
		rep->rc = diag_set(&d, "out of memory");
	} else if ((rep->rc = run_migrate(c, res, &d)) != 0) {
		fprintf(stderr, "migbed: run: %s\n", d.msg[0] ? d.msg : "bad input");
	} else {
		out_file_abort(&res->json);     /* a sweep writes no run's JSON */
		run_digest_of(res, &rep->dg);
		memcpy(rep->calls, res->fault_calls, sizeof rep->calls);
		code = res->output_error ? EXIT_BAD : res->out.pass ? 0 : 1;
		if (res->output_error)
			fprintf(stderr, "migbed: %s\n", d.msg);
	}
	snprintf(rep->msg, sizeof rep->msg, "%s", d.msg);
	if (write(fd, rep, sizeof *rep) != (ssize_t)sizeof *rep)
		code = EXIT_BAD;
	free(res);   /* nothing left for a leak checker to report (make check-valgrind) */
	fflush(NULL);
#ifdef MIGBED_COVERAGE
	__gcov_dump();
#endif
	_exit(code);
}

/* fork a run (child_main) with stdout and stderr in the slot's file and TMPDIR = the sweep's
 * folder (a killed run's temporary trace stays there, removed with it); its record comes
 * back on *fd (the read end of a pipe). The pid, or -1 with errno. */
static pid_t spawn(struct sweep *sw, size_t slot, const char *rule, int *fd)
{
	char out[1100];
	int p[2];
	slot_path(sw, slot, out, sizeof out);
	if (pipe(p) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid != 0) {
		int e = errno;
		close(p[1]);
		if (pid < 0)
			close(p[0]);
		*fd = pid < 0 ? -1 : p[0];
		errno = e;
		return pid;
	}
	close(p[0]);
	if (!freopen(out, "w", stdout) || dup2(fileno(stdout), 2) < 0)
		_exit(126);
	setenv("TMPDIR", sw->dir, 1);
	child_main(sw, rule, p[1]);
	_exit(127);
}

/* The child's record, whole (after it exited: up to EOF). false: none, or not whole. */
static bool read_report(int fd, struct report *rep)
{
	char *buf = (char *)rep;
	size_t len = 0;
	ssize_t k;
	char extra;
	while (len < sizeof *rep && (k = read(fd, buf + len, sizeof *rep - len)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return false;
		len += (size_t)k;
	}
	while ((k = read(fd, &extra, 1)) < 0 && errno == EINTR)
		;
	return len == sizeof *rep && k == 0;
}

/* The last line the child printed (for "error" runs). */
static void last_line(const char *path, char *out, size_t n)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	out[0] = '\0';
	if (!f)
		return;
	size_t len = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[len] = '\0';
	while (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	const char *nl = strrchr(buf, '\n'), *line = nl ? nl + 1 : buf;
	size_t keep = strlen(line) < n ? strlen(line) : n - 1;
	memcpy(out, line, keep);
	out[keep] = '\0';
}

enum torture_verdict torture_classify(int status, const struct run_digest *dg, bool rerun)
{
	if (WIFSIGNALED(status))
		return TORTURE_CRASH;
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1 || !dg)
		return TORTURE_ERROR;
	if (dg->completed && !dg->verified)
		return TORTURE_UNNAMED;
	if (!dg->completed && (dg->cause == CAUSE_INTERNAL || !cause_valid(dg->cause)))
		return TORTURE_UNNAMED;
	if (!dg->completed && dg->cause == CAUSE_VERIFY_MISMATCH)
		return TORTURE_CORRUPT;
	if (rerun && dg->fired == 0)
		return TORTURE_NOT_FIRED;
	return dg->completed ? TORTURE_COMPLETED : TORTURE_FAILED;
}

/* A finished child's run: its verdict, cause and detail. */
static void classify(struct sweep *sw, const struct child *c, size_t slot, int status)
{
	struct torture_run *r = c->run;
	sw->rep_ok = read_report(c->fd, &sw->rep);
	bool have = sw->rep_ok && sw->rep.rc == 0;
	const struct run_digest *dg = have ? &sw->rep.dg : NULL;
	r->reported = false;
	r->cause = CAUSE_NONE;
	r->cause_side[0] = r->detail[0] = '\0';
	if (c->killed) {
		r->verdict = TORTURE_HANG;
		snprintf(r->detail, sizeof r->detail, "killed by the watchdog after %llu ms of wall time",
			 (unsigned long long)sw->tc->watchdog_ms);
		return;
	}
	r->verdict = torture_classify(status, dg, r != &sw->res->baseline);
	if (r->verdict == TORTURE_CRASH) {
		snprintf(r->detail, sizeof r->detail, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	} else if (r->verdict == TORTURE_ERROR) {
		char path[1100];
		slot_path(sw, slot, path, sizeof path);
		last_line(path, r->detail, sizeof r->detail);
	} else {
		r->reported = true;
		r->cause = dg->cause;
		snprintf(r->cause_side, sizeof r->cause_side, "%s", dg->side);
		snprintf(r->detail, sizeof r->detail, "%.*s", (int)sizeof r->detail - 1, dg->detail);
	}
}

/* ---- scheduling ------------------------------------------------------------------------------- */

static void start_run(struct sweep *sw, struct child *c, size_t slot, struct torture_run *r)
{
	char rule[FAULT_SPEC_MAX];
	snprintf(rule, sizeof rule, "%s@%s #%llu -> %s", fault_site_name(r->site), fault_side_name(r->side),
		 (unsigned long long)r->call, r->action);
	*c = (struct child){ .run = r, .start_ms = wall_ms() };
	c->pid = spawn(sw, slot, rule, &c->fd);
}

/* Reap one finished child if any (0: none yet; *slot its slot); kill those over the watchdog. */
static int reap(struct sweep *sw, struct child *kids, size_t n_kids, size_t *slot)
{
	int status;
	pid_t pid = waitpid(-1, &status, WNOHANG);
	if (pid > 0) {
		for (size_t s = 0; s < n_kids; s++) {
			if (kids[s].pid != pid)
				continue;
			classify(sw, &kids[s], s, status);
			close(kids[s].fd);
			kids[s].pid = 0;
			*slot = s;
			return 1;
		}
		return 0;               /* not ours */
	}
	for (size_t s = 0; s < n_kids; s++) {
		if (kids[s].pid > 0 && !kids[s].killed && wall_ms() - kids[s].start_ms > sw->tc->watchdog_ms) {
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

/* Run every selected rerun, jobs at a time. 0, or -errno (d set) if a child could not start. */
static int run_all(struct sweep *sw, struct diag *d)
{
	struct child kids[TORTURE_JOBS_MAX] = { 0 };
	struct torture_result *res = sw->res;
	size_t next = 0, done = 0, bad = 0, slot, jobs = (size_t)sw->tc->jobs;
	while (done < res->n_runs) {
		for (size_t s = 0; s < jobs && next < res->n_runs; s++) {
			if (kids[s].pid > 0)
				continue;
			start_run(sw, &kids[s], s, &res->runs[next++]);
			if (kids[s].pid < 0) {
				int e = errno;
				stop_all(kids, jobs);
				diag_set(d, "cannot start a run: %s", strerror(e));
				return -e;
			}
		}
		if (!reap(sw, kids, jobs, &slot))
			continue;
		done++;
		bad += !torture_verdict_proper(kids[slot].run->verdict);
		if (sw->tc->progress)
			sw->tc->progress(sw->tc->progress_arg, done, res->n_runs, bad);
	}
	return 0;
}

/* ---- baseline and selection --------------------------------------------------------------------- */

/* The baseline run: its verdict, and its calls (in sw->rep). 0; -EINVAL when the run refused
 * its input (d: its message); -errno if it could not start. */
static int baseline(struct sweep *sw, struct diag *d)
{
	struct child kid = { .run = &sw->res->baseline, .start_ms = wall_ms() };
	size_t slot;
	memset(&sw->rep, 0, sizeof sw->rep);
	kid.pid = spawn(sw, 0, NULL, &kid.fd);
	if (kid.pid < 0) {
		int e = errno;
		diag_set(d, "cannot start a run: %s", strerror(e));
		return -e;
	}
	while (!reap(sw, &kid, 1, &slot))
		;
	if (!kid.killed && sw->rep_ok && sw->rep.rc != 0)
		return diag_set(d, "%s", sw->rep.msg[0] ? sw->rep.msg : "bad input");
	return 0;
}

/* The baseline's calls of the selected sites, one group per (site, side) called, in site
 * then side order. */
static int make_groups(struct sweep *sw, struct diag *d)
{
	struct torture_result *res = sw->res;
	res->groups = calloc(FAULT_SITE_COUNT * FAULT_SIDES, sizeof *res->groups);
	if (!res->groups)
		return out_of_memory(d);
	for (int s = 0; s < FAULT_SITE_COUNT; s++) {
		for (int side = 0; side < FAULT_SIDES; side++) {
			uint64_t calls = sw->rep.calls[s][side];
			if (!calls || !site_selected(sw->tc, (enum fault_site)s))
				continue;
			res->groups[res->n_groups++] = (struct torture_group){
				.site = (enum fault_site)s, .side = (enum fault_side)side, .calls = calls };
			res->calls += calls;
		}
	}
	return 0;
}

/* The budget over the groups by water-filling: every group gets min(calls, L) runs with the
 * level L as high as max_runs allows; what is left goes one by one to the larger groups. */
static void allocate(struct torture_group *g, size_t n, uint64_t max_runs)
{
	uint64_t lo = 0, hi = 0, sum = 0;
	for (size_t i = 0; i < n; i++)
		hi = g[i].calls > hi ? g[i].calls : hi;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2, s = 0;
		for (size_t i = 0; i < n; i++)
			s += g[i].calls < mid ? g[i].calls : mid;
		if (s <= max_runs)
			lo = mid;
		else
			hi = mid - 1;
	}
	for (size_t i = 0; i < n; i++) {
		g[i].runs = g[i].calls < lo ? g[i].calls : lo;
		sum += g[i].runs;
	}
	for (size_t i = 0; i < n && sum < max_runs; i++) {
		if (g[i].runs < g[i].calls) {
			g[i].runs++;
			sum++;
		}
	}
}

/* The reruns of this shard: per group, `runs` calls spread evenly from the first to the last. */
static int select_runs(struct sweep *sw, struct diag *d)
{
	const struct torture_config *tc = sw->tc;
	struct torture_result *res = sw->res;
	size_t index = 0;
	allocate(res->groups, res->n_groups, tc->max_runs);
	uint64_t cap = tc->max_runs < res->calls ? tc->max_runs : res->calls;
	res->runs = calloc(cap ? cap : 1, sizeof *res->runs);
	if (!res->runs)
		return out_of_memory(d);
	for (size_t i = 0; i < res->n_groups; i++) {
		const struct torture_group *g = &res->groups[i];
		for (uint64_t k = 0; k < g->runs; k++, index++) {
			if (index % tc->shard_n != tc->shard_k - 1)
				continue;
			uint64_t call = g->runs == 1 ? 1 : 1 + k * (g->calls - 1) / (g->runs - 1);
			res->runs[res->n_runs++] = (struct torture_run){ .site = g->site, .side = g->side, .call = call,
									 .action = fault_site_canonical(g->site) };
		}
	}
	return 0;
}

/* ---- the folder --------------------------------------------------------------------------------- */

static int make_dir(struct sweep *sw, struct diag *d)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	snprintf(sw->dir, sizeof sw->dir, "%s/migbed-torture-XXXXXX", tmp);
	if (mkdtemp(sw->dir))
		return 0;
	int e = errno;
	diag_set(d, "cannot create a folder in %s: %s", tmp, strerror(e));
	return -e;
}

/* Remove the sweep's folder with whatever the runs left in it (flat: no subfolders). */
static void remove_dir(const struct sweep *sw)
{
	DIR *dir = opendir(sw->dir);
	struct dirent *e;
	char path[1400];
	for (int i = 0; dir && i < 1000000 && (e = readdir(dir)); i++) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", sw->dir, e->d_name);
		unlink(path);
	}
	if (dir)
		closedir(dir);
	rmdir(sw->dir);
}

/* ---- the sweep ---------------------------------------------------------------------------------- */

static void summarize(struct torture_result *res)
{
	memset(res->n, 0, sizeof res->n);
	for (size_t i = 0; i < res->n_runs; i++)
		res->n[res->runs[i].verdict]++;
	res->ok = res->swept && res->n[TORTURE_COMPLETED] + res->n[TORTURE_FAILED] == res->n_runs;
}

static int sweep_in(struct sweep *sw, struct diag *d)
{
	int rc = baseline(sw, d);
	if (rc || sw->res->baseline.verdict != TORTURE_COMPLETED)
		return rc;
	if ((rc = make_groups(sw, d)) || (rc = select_runs(sw, d)))
		return rc;
	sw->res->swept = true;
	return run_all(sw, d);
}

int torture_sweep(const struct torture_config *tc, struct torture_result *res, struct diag *d)
{
	struct sweep sw = { .tc = tc, .res = res };
	memset(res, 0, sizeof *res);
	int rc = config_check(tc, d);
	if (rc)
		return rc;
	if (!(sw.cfg = malloc(sizeof *sw.cfg)))
		return out_of_memory(d);
	*sw.cfg = *tc->run;
	if ((rc = make_dir(&sw, d)) == 0) {
		rc = sweep_in(&sw, d);
		remove_dir(&sw);
	}
	free(sw.cfg);
	if (rc)
		res->swept = false;
	summarize(res);
	return rc;
}

void torture_result_free(struct torture_result *res)
{
	free(res->groups);
	free(res->runs);
	res->groups = NULL;
	res->runs = NULL;
	res->n_groups = res->n_runs = 0;
}
