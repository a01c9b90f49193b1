/* SPDX-License-Identifier: MIT */
/* cmd_swarm - `migbed swarm`: many seeded random configurations with randomly activated
 * faults, each run judged by oracles (issue 15; the runs, plans and oracles are
 * run/swarm.h's). This file parses the command line, turns a plan into a run's config (the
 * run keys of the one option table), prints one line per run (its replay: `migbed run` and
 * the plan's options), writes a bundle per finding, --json FILE (one line per run, then the
 * summary: what `migbed swarm merge` reads back), a wall-clock watchdog per run, progress on
 * stderr when it is a terminal. Exit 0 no finding, 1 findings, 2 bad usage or input. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/bundle.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/run_report.h"
#include "cli/runcfg.h"
#include "cli/swarm_verbs.h"
#include "run/out_file.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "run/swarm.h"
#include "run/torture.h"

#define SWARM_FINDINGS_LISTED 1000    /* findings kept for the summary (the rest counted) */

struct finding {
	uint64_t seed;
	enum swarm_finding cls;
	int cause, side;
	char config[SWARM_CONFIG_MAX];
	char bundle[1100];
	bool shrunk;                     /* bundle.shrunk holds its shrunk bundle */
};

#define SWARM_SHRINK_MAX_S "30"      /* each finding's shrink: wall seconds at most */

/* Does BUNDLE.shrunk hold a shrunk bundle (its shrink.txt)? What merge sees too. */
static bool has_shrunk(const char *bundle)
{
	char p[1200];
	struct stat st;
	snprintf(p, sizeof p, "%s.shrunk/shrink.txt", bundle);
	return bundle[0] && stat(p, &st) == 0;
}

/* The tallies of a set of runs (a swarm, or the runs of merged files): the summary. */
struct tally {
	size_t runs, completed, failed, findings;
	size_t explained;                /* failed with no finding */
	size_t cls[SWARM_FINDINGS];
	size_t causes[CAUSE_COUNT + 1];  /* by cause - CAUSE_BASE (0: none) */
	struct finding *list;            /* the first SWARM_FINDINGS_LISTED findings */
	size_t n_list;
};

struct swarm_cli {
	struct opts_extra x;
	struct tally t;
	struct out_file json;
	struct json_stream js;           /* its runs, written as they end */
	char scratch[PATH_MAX];          /* determinism logs (TMPDIR) */
	char bundle_scratch[PATH_MAX];   /* reruns of bundles, inside --bundles ("" until needed) */
	struct timespec start;
	struct progress progress;
	bool quiet;                      /* --quiet: no progress line */
	struct report_sink rep;          /* --junit FILE, --tap (cli/report.h) */
	double last_done_s;              /* when the run before ended (a case's time) */
	FILE *lines;                     /* the per-run lines and the summary: stdout, or stderr when
					  * --json is standard output */
	size_t planned;                  /* runs of this shard */
	bool verbs;                      /* --backend verbs (cli/swarm_verbs.h) */
	uint64_t wait_timeout_ms;        /* --wait-timeout-ms: every verbs plan's */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed swarm [--seeds A..B | --runs N] [--time-budget S] [--shard K/N] [--json FILE]\n"
		   "                    [--watchdog-ms N] [--bundles DIR] [--check-determinism] [--shrink-max-runs N]\n"
		   "                    [--backend model|verbs] [--wait-timeout-ms N]\n"
		   "       migbed swarm merge FILE... --json OUT\n\n"
		   "Run one migration per seed: each seed expands, deterministically, into a configuration\n"
		   "(guest size, workload, each side's chunk size, pin-all, protocol, peer profiles,\n"
		   "max-bandwidth, downtime-limit, memlock) and a fault plan in which each row of the\n"
		   "swarm's fault table is activated with some probability and then fires with another.\n"
		   "Each run prints one line: its seed, how it ended, and its configuration as `migbed run`\n"
		   "options (the replay). Oracles: a run completes and verifies, or fails with a cause that\n"
		   "the faults that fired (or the configuration) explain; never INTERNAL, never unnamed,\n"
		   "never VERIFY_MISMATCH unless a fault dropped data; no hang past --watchdog-ms; the\n"
		   "source's memory is what the guest wrote; no RDMA object (endpoint, listener, memory\n"
		   "region) outlives a run; after a run failed by faults, the same source migrates again\n"
		   "healed (its rules removed) and completes.\n"
		   "A run that breaks one is a finding: a bundle DIR/seed-N (migbed\n"
		   "replay DIR), shrunk into DIR/seed-N.shrunk.\n"
		   "--backend verbs: on real RDMA (soft-RoCE), the configurations and fault rows that go\n"
		   "through real verbs calls, plus a leak oracle (fds, QPs, MRs, PDs, CM ids left by a run);\n"
		   "an unexplained TRANSPORT_RETRY_EXCEEDED (an rxe stall) runs its seed once more, loudly.\n\n"
		   "options:\n");
	opts_print_help(f, OPTS_SWARM);
	fprintf(f, "\nmerge: the runs of result files of shards (--json of --shard K/N runs of the same seeds)\n"
		   "into one file, equal to the unsharded run's when every shard is there.\n"
		   "exit status: 0 no finding, 1 findings, 2 bad usage or input.\n");
}

/* ---- a plan as a run's config --------------------------------------------------------------- */

static int plan_config(void *arg, const struct swarm_plan *p, struct runcfg *c, struct diag *d)
{
	(void)arg;
	runcfg_defaults(c);
	for (size_t i = 0; i < p->n_keys; i++)
		if (runcfg_set(c, p->keys[i].key, p->keys[i].value, "swarm plan", d))
			return -EINVAL;
	for (size_t i = 0; i < p->n_faults; i++)
		if (runcfg_set(c, "fault", p->faults[i], "swarm plan", d))
			return -EINVAL;
	c->quiet = true;
	return runcfg_finish(c, d) ? -EINVAL : 0;
}

/* ---- the watchdog: a run past --watchdog-ms ends the swarm, naming the seed ----------------- */

static char hang_msg[SWARM_CONFIG_MAX + 256];
static size_t hang_len;
static char hang_tmp[OUTFILE_PATH_MAX + 8];
static char hang_tmp_junit[OUTFILE_PATH_MAX + 8];
static char hang_scratch[PATH_MAX];        /* the determinism logs' folder, and its two logs */
static char hang_logs[2][PATH_MAX + 16];

static void on_alarm(int sig)
{
	(void)sig;
	ssize_t w = write(STDERR_FILENO, hang_msg, hang_len);
	(void)w;
	if (hang_tmp[0])
		unlink(hang_tmp);
	if (hang_tmp_junit[0])
		unlink(hang_tmp_junit);
	for (int i = 0; i < 2; i++)   /* unlink and rmdir are async-signal-safe */
		if (hang_logs[i][0])
			unlink(hang_logs[i]);
	if (hang_scratch[0])
		rmdir(hang_scratch);
	_exit(CLI_EXIT_FAIL);
}

static void watchdog_arm(const struct swarm_cli *s, uint64_t seed, const char *text)
{
	struct itimerval it = { 0 };
	int n = snprintf(hang_msg, sizeof hang_msg,
			 "\nmigbed: swarm: FINDING hang: seed %llu ran past --watchdog-ms %llu; the swarm stops "
			 "(no --json written). replay: migbed run %s --bundle DIR\n",
			 (unsigned long long)seed, (unsigned long long)s->x.watchdog_ms, text);
	hang_len = n < 0 ? 0 : (size_t)n < sizeof hang_msg ? (size_t)n : sizeof hang_msg - 1;
	it.it_value.tv_sec = (time_t)(s->x.watchdog_ms / 1000);
	it.it_value.tv_usec = (suseconds_t)(s->x.watchdog_ms % 1000 * 1000);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void watchdog_disarm(void)
{
	struct itimerval it = { 0 };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- tallies, lines, JSON --------------------------------------------------------------------- */

static void tally_add(struct tally *t, const struct swarm_run *r, const char *bundle)
{
	t->runs++;
	t->completed += r->completed;
	t->failed += !r->completed;
	t->cls[r->finding]++;
	t->explained += !r->completed && r->finding == SWARM_F_NONE;
	if (cause_valid(r->cause))
		t->causes[r->cause - CAUSE_BASE]++;
	if (r->finding == SWARM_F_NONE)
		return;
	t->findings++;
	if (t->n_list == SWARM_FINDINGS_LISTED)
		return;
	if (!t->list && !(t->list = calloc(SWARM_FINDINGS_LISTED, sizeof *t->list)))
		return;   /* the summary then lists none; the runs still say it */
	struct finding *f = &t->list[t->n_list++];
	f->seed = r->seed;
	f->cls = r->finding;
	f->cause = r->cause;
	f->side = r->side;
	snprintf(f->config, sizeof f->config, "%s", r->config);
	snprintf(f->bundle, sizeof f->bundle, "%s", bundle ? bundle : "");
	f->shrunk = has_shrunk(f->bundle);
}

static const char *status_of(const struct swarm_run *r)
{
	return r->finding == SWARM_F_ERROR ? "error" : r->completed ? "completed" : "failed";
}

/* The --json file, one run a line (swarm merge reads it so):
 *   {"swarm":1,"seeds":..,"shard":..,"check-determinism":..,"build":..,"runs":[
 *   {run}
 *   ,{run}
 *   ],"summary":{...}}                                                       */
static json_t *json_run(const struct swarm_run *r, const char *bundle)
{
	return json_pack("{s:o,s:o,s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o}", "seed", json_of_u64(r->seed), "config",
			 json_of_str(r->config), "verdict", r->finding == SWARM_F_NONE ? "pass" : "finding", "status",
			 status_of(r), "cause", cause_name(r->cause), "side", run_side_name(r->side), "fired",
			 json_of_u64(r->fired), "finding",
			 r->finding == SWARM_F_NONE ? json_null() : json_of_str(swarm_finding_name(r->finding)), "detail",
			 json_of_str(r->detail), "bundle", bundle && bundle[0] ? json_of_str(bundle) : json_null());
}

static void json_head(struct json_stream *js, FILE *f, const char *seeds, const char *shard, bool determinism,
		      const char *build)
{
	json_stream_open(js, f,
			 json_pack("{s:i,s:o,s:o,s:b,s:o}", "swarm", 1, "seeds", json_of_str(seeds), "shard",
				   json_of_str(shard), "check-determinism", determinism, "build", json_of_str(build)),
			 "runs", "\n", ",", "\n");
}

static json_t *json_finding(const struct finding *g)
{
	char replay[SWARM_CONFIG_MAX + 16], shrunk[1200];
	snprintf(replay, sizeof replay, "migbed run %s", g->config);
	snprintf(shrunk, sizeof shrunk, "%s.shrunk", g->bundle);
	return json_pack("{s:o,s:s,s:s,s:s,s:o,s:o,s:o}", "seed", json_of_u64(g->seed), "class",
			 swarm_finding_name(g->cls), "cause", cause_name(g->cause), "side", run_side_name(g->side),
			 "replay", json_of_str(replay), "bundle", g->bundle[0] ? json_of_str(g->bundle) : json_null(),
			 "shrunk", g->shrunk ? json_of_str(shrunk) : json_null());
}

/* 0, or -EIO (a write error, or out of memory when !ferror). */
static int json_summary(struct json_stream *js, const struct tally *t)
{
	json_t *classes = json_object(), *causes = json_object(), *list = json_array();
	for (int c = 1; c < SWARM_FINDINGS; c++)
		json_set(&classes, swarm_finding_name((enum swarm_finding)c), json_of_u64(t->cls[c]));
	for (int c = 1; c <= CAUSE_COUNT; c++)
		if (t->causes[c])
			json_set(&causes, cause_name(CAUSE_BASE + c), json_of_u64(t->causes[c]));
	for (size_t i = 0; i < t->n_list; i++)
		json_add(&list, json_finding(&t->list[i]));
	json_t *summary = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "runs", json_of_u64(t->runs), "completed",
				    json_of_u64(t->completed), "failed", json_of_u64(t->failed), "findings",
				    json_of_u64(t->findings), "classes", classes, "causes", causes, "finding-list", list);
	return json_stream_close(js, "", json_pack("{s:o}", "summary", summary));
}

/* The human line of a run, and a finding's replay under it. */
static void print_run(FILE *f, const struct swarm_run *r, const char *bundle)
{
	char how[96];
	if (r->completed)
		snprintf(how, sizeof how, "completed");
	else if (r->finding == SWARM_F_ERROR)
		snprintf(how, sizeof how, "error");
	else
		snprintf(how, sizeof how, "failed %s@%s", cause_name(r->cause), run_side_name(r->side));
	fprintf(f, "%8llu  %-36s %2zu  %s\n", (unsigned long long)r->seed, how, r->fired, r->config);
	if (r->finding != SWARM_F_NONE)
		fprintf(f, "    ^ FINDING %s: %s\n    replay: migbed run %s%s%s\n", swarm_finding_name(r->finding), r->detail,
		       r->config, bundle && bundle[0] ? "\n    bundle: migbed replay " : "", bundle ? bundle : "");
	if (r->finding != SWARM_F_NONE && bundle && has_shrunk(bundle))
		fprintf(f, "    shrunk: migbed replay %s.shrunk (its shrink.txt: before and after)\n", bundle);
}

/* ---- bundles ---------------------------------------------------------------------------------- */

/* The finding of seed r->seed: DIR/seed-N (replacing one of that name), its run recorded by a
 * rerun of its scenario in a child under the watchdog (cli/bundle.h). 0 or -errno, d set. */
static int write_bundle(struct swarm_cli *s, const struct runcfg *c, const struct swarm_run *r, char *dir,
			size_t dir_n, struct diag *d)
{
	struct runcfg *w = malloc(sizeof *w);
	struct bundle b = { 0 };
	struct bundle_meta m;
	char got[SWARM_DETAIL_MAX + 64];
	bool tar_ok;
	int rc = w ? 0 : -ENOMEM;
	snprintf(dir, dir_n, "%s/seed-%llu", s->x.bundles, (unsigned long long)r->seed);
	if (rc == 0)
		rc = bundle_begin(&b, dir, true, d);
	if (rc == 0 && (rc = bundle_write_config(&b, c, w, d)) == 0) {
		bundle_meta_of(&m, OPTS_RUN, NULL, c);
		m.watchdog_ms = s->x.watchdog_ms;
		rc = bundle_rerun(b.tmp, s->bundle_scratch, &m, &m.oc, d);
		for (const char *const *f = (const char *const[]){ "events.log", "result.json", NULL }; rc == 0 && *f; f++) {
			char from[PATH_MAX + 16], to[1200];
			bundle_path_join(from, sizeof from, s->bundle_scratch, *f);
			bundle_file(&b, *f, to, sizeof to);
			if (rename(from, to) != 0 && errno != ENOENT)
				rc = diag_set(d, "%s: %s", to, strerror(errno));
		}
		int n = snprintf(got, sizeof got, "swarm seed %llu: %s: %s", (unsigned long long)r->seed,
				 swarm_finding_name(r->finding), r->detail);
		(void)n;   /* a long detail is cut */
		if (rc == 0)
			rc = bundle_commit(&b, &m, w, "completed, or failed with a cause the fired faults or the "
					   "configuration explain (migbed swarm)", got, &tar_ok, d);
	}
	if (rc)
		bundle_abort(&b);
	free(w);
	return rc;
}

/* Shrink the bundle DIR into DIR.shrunk (replacing one of that name): `migbed shrink` in a
 * child (its output to /dev/null: shrink.txt keeps the table), bounded by --shrink-max-runs
 * and SWARM_SHRINK_MAX_S. true when it wrote DIR.shrunk. */
static bool shrink_bundle(const struct swarm_cli *s, const char *dir)
{
	char out[1200], tar[1220], runs[24];
	size_t dl = strlen(dir);
	if (dl + sizeof ".shrunk" > sizeof out)
		return false;   /* a path too long to shrink into */
	memcpy(out, dir, dl);
	memcpy(out + dl, ".shrunk", sizeof ".shrunk");
	snprintf(tar, sizeof tar, "%s.tar.zst", out);
	snprintf(runs, sizeof runs, "%llu", (unsigned long long)s->x.shrink_max_runs);
	bundle_rmdir(out);
	unlink(tar);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		char *argv[] = { "shrink", (char *)dir, "-o", out, "--max-runs", runs, "--max-time", SWARM_SHRINK_MAX_S, NULL };
		_exit(cmd_shrink(8, argv));
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "migbed: swarm: %s: shrink %s (the bundle stays)\n", dir,
			pid < 0 ? "could not start" : "failed");
		return false;
	}
	return has_shrunk(dir);
}

/* The scratch folder of bundle reruns inside --bundles (renames never cross a filesystem). */
static int bundle_scratch(struct swarm_cli *s, struct diag *d)
{
	char tmpl[1100];
	if (s->bundle_scratch[0])
		return 0;
	snprintf(tmpl, sizeof tmpl, "%s/.scratch-XXXXXX", s->x.bundles);
	if ((mkdir(s->x.bundles, 0777) != 0 && errno != EEXIST) || !mkdtemp(tmpl) || !realpath(tmpl, s->bundle_scratch))
		return diag_set(d, "--bundles %s: %s", s->x.bundles, strerror(errno));
	return 0;
}

/* ---- the swarm's callbacks ---------------------------------------------------------------------- */

static double elapsed_s(const struct swarm_cli *s)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - s->start.tv_sec) + (double)(now.tv_nsec - s->start.tv_nsec) / 1e9;
}

static int before_run(void *arg, size_t k, const struct swarm_plan *p, const char *text)
{
	struct swarm_cli *s = arg;
	double t = elapsed_s(s);
	if (s->x.time_budget_s && t >= (double)s->x.time_budget_s)
		return 1;
	if (progress_due(&s->progress))
		progress_show(&s->progress, "swarm: %zu/%zu runs, %zu findings, %.0f runs/s", k, s->planned,
			      s->t.findings, t > 0 ? (double)k / t : 0.0);
	watchdog_arm(s, p->seed, text);
	/* A test hook, for the watchdog's own test: the run of seed MIGBED_SWARM_TEST_HANG_SEED
	 * hangs here (until the watchdog's SIGALRM), so the test does not depend on how long a
	 * real run takes on the machine it runs on. Never set outside bats/swarm.bats. */
	const char *hang = getenv("MIGBED_SWARM_TEST_HANG_SEED");
	if (hang && strtoull(hang, NULL, 10) == p->seed)
		for (;;)
			pause();
	return 0;
}

/* The run as a CI case (--junit, --tap). */
static void report_swarm_run(struct swarm_cli *s, const struct swarm_run *r, const char *bundle)
{
	struct report_case c;
	double t = elapsed_s(s);
	report_swarm_case(&c, s->rep.buf, r, bundle, t - s->last_done_s);
	report_sink_case(&s->rep, &c);
	s->last_done_s = t;
}

static void after_run(void *arg, const struct swarm_plan *p, const struct runcfg *c, const struct swarm_run *r)
{
	struct swarm_cli *s = arg;
	char dir[1200] = "";
	struct diag d = { 0 };
	(void)p;
	watchdog_disarm();
	if (r->finding != SWARM_F_NONE && r->finding != SWARM_F_ERROR) {
		if (bundle_scratch(s, &d) || write_bundle(s, c, r, dir, sizeof dir, &d)) {
			fprintf(stderr, "migbed: swarm: seed %llu: bundle: %s\n", (unsigned long long)r->seed, d.msg);
			dir[0] = '\0';
		} else if (s->x.shrink_max_runs) {
			shrink_bundle(s, dir);
		}
	}
	progress_clear(&s->progress, s->lines);
	print_run(s->lines, r, dir);
	fflush(s->lines);
	report_swarm_run(s, r, dir);
	tally_add(&s->t, r, dir);
	if (s->json.f)
		json_stream_item(&s->js, json_run(r, dir));
}

/* ---- the command -------------------------------------------------------------------------------- */

static void print_summary(const struct tally *t, FILE *f)
{
	fprintf(f, "swarm: %zu runs: %zu completed, %zu failed with an explained cause, %zu findings", t->runs,
		t->completed, t->explained, t->findings);
	for (int c = 1; c < SWARM_FINDINGS; c++)
		if (t->cls[c])
			fprintf(f, ", %s %zu", swarm_finding_name((enum swarm_finding)c), t->cls[c]);
	fputc('\n', f);
	/* by class, then cause (the order of the tables), each with its replays */
	for (int c = 1; c < SWARM_FINDINGS; c++)
		for (int k = 0; k <= CAUSE_COUNT; k++) {
			size_t n = 0;
			for (size_t i = 0; i < t->n_list; i++)
				n += t->list[i].cls == (enum swarm_finding)c && t->list[i].cause - CAUSE_BASE == k;
			if (!n)
				continue;
			fprintf(f, "  %s %s: %zu\n", swarm_finding_name((enum swarm_finding)c),
				k ? cause_name(CAUSE_BASE + k) : "-", n);
			for (size_t i = 0; i < t->n_list; i++) {
				const struct finding *g = &t->list[i];
				if (g->cls != (enum swarm_finding)c || g->cause - CAUSE_BASE != k)
					continue;
				fprintf(f, "    seed %llu: migbed run %s\n", (unsigned long long)g->seed, g->config);
				if (g->shrunk)
					fprintf(f, "      shrunk: migbed replay %s.shrunk\n", g->bundle);
			}
		}
}

static size_t shard_runs(const struct opts_extra *x)
{
	uint64_t n = x->seed_hi - x->seed_lo + 1;
	return (size_t)(n / x->shard_n + ((x->shard_k - 1) < n % x->shard_n));
}

static int swarm_go(struct swarm_cli *s)
{
	struct swarm_config sc = { 0 };
	struct swarm_result res;
	struct diag d = { 0 };
	char shard[48];
	const char *tmp = getenv("TMPDIR");
	int rc;
	snprintf(s->scratch, sizeof s->scratch, "%s/migbed-swarm-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(s->scratch))
		return cli_usage_error("swarm: %s: %s", s->scratch, strerror(errno));
	if (s->x.json[0] && out_file_open(&s->json, s->x.json, &d)) {
		rmdir(s->scratch);
		return cli_usage_error("swarm: %s", d.msg);
	}
	s->lines = s->json.f == stdout || s->x.tap ? stderr : stdout;
	if (report_sink_open(&s->rep, "migbed swarm", s->x.junit[0] ? s->x.junit : NULL, s->x.tap ? stdout : NULL, &d)) {
		rmdir(s->scratch);
		return cli_usage_error("swarm: %s", d.msg);
	}
	snprintf(hang_tmp_junit, sizeof hang_tmp_junit, "%s", report_sink_writing(&s->rep));
	if (s->json.f && s->json.of.tmp[0])
		snprintf(hang_tmp, sizeof hang_tmp, "%s", s->json.of.tmp);
	snprintf(hang_scratch, sizeof hang_scratch, "%s", s->scratch);
	for (int i = 0; i < 2; i++)   /* as run/swarm.c names them */
		snprintf(hang_logs[i], sizeof hang_logs[i], "%s/events-%c.log", s->scratch, (char)('0' + i));
	snprintf(shard, sizeof shard, "%llu/%llu", (unsigned long long)s->x.shard_k, (unsigned long long)s->x.shard_n);
	if (s->json.f) {
		char seeds[48];
		snprintf(seeds, sizeof seeds, "%llu..%llu", (unsigned long long)s->x.seed_lo, (unsigned long long)s->x.seed_hi);
		json_head(&s->js, s->json.f, seeds, shard, s->x.check_determinism, run_build_id());
	}
	sc = (struct swarm_config){ .seed_lo = s->x.seed_lo, .seed_hi = s->x.seed_hi, .shard_k = s->x.shard_k,
				    .shard_n = s->x.shard_n, .check_determinism = s->x.check_determinism,
				    .scratch = s->scratch, .config = plan_config, .before = before_run,
				    .done = after_run, .arg = s };
	/* A test hook, for the liveness oracle's test (bats/swarm.bats only): this seed's healed
	 * rerun keeps its fault rules, so it fails again. */
	const char *unhealed = getenv("MIGBED_SWARM_TEST_UNHEALED_SEED");
	if (unhealed)
		sc.test_unhealed_seed = strtoull(unhealed, NULL, 10);
	if (s->verbs)
		swarm_verbs_attach(&sc, s->wait_timeout_ms);
	/* Another (bats/swarm.bats only): this seed's run leaves a listener open, a leak finding. */
	const char *leak = getenv("MIGBED_SWARM_TEST_LEAK_SEED");
	if (leak)
		sc.test_leak_seed = strtoull(leak, NULL, 10);
	s->planned = shard_runs(&s->x);
	progress_init(&s->progress, s->quiet);
	signal(SIGALRM, on_alarm);
	clock_gettime(CLOCK_MONOTONIC, &s->start);
	rc = swarm_run(&sc, &res, &d);
	watchdog_disarm();
	progress_end(&s->progress);
	if (s->bundle_scratch[0])
		bundle_rmdir(s->bundle_scratch);
	rmdir(s->scratch);
	if (rc)
		return cli_usage_error("%s", d.msg);
	print_summary(&s->t, s->lines);
	if (res.stopped)
		fprintf(stderr, "swarm: --time-budget %llu s reached after %zu of %zu runs\n",
			(unsigned long long)s->x.time_budget_s, res.runs, s->planned);
	if (res.stalls)
		fprintf(stderr, "swarm: %zu seed(s) ran once more after an rxe stall (# rxe stalled lines above)\n",
			res.stalls);
	fprintf(stderr, "swarm: %zu runs in %.1f s (%.1f runs/s)\n", res.runs, elapsed_s(s),
		elapsed_s(s) > 0 ? (double)res.runs / elapsed_s(s) : 0.0);
	if (s->json.f) {
		if (json_summary(&s->js, &s->t) && !ferror(s->json.f))
			return cli_usage_error("swarm: --json %s: out of memory", s->json.path);
		if (out_file_commit(&s->json, &d))
			return cli_usage_error("swarm: %s", d.msg);
	}
	if (report_sink_close(&s->rep, elapsed_s(s), &d))
		return cli_usage_error("swarm: %s", d.msg);
	return s->t.findings ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static size_t key_row(const char *name)
{
	for (size_t i = 0; runcfg_key_name(i); i++)
		if (!strcmp(runcfg_key_name(i), name))
			return i;
	return 0;
}

static int parse_args(struct swarm_cli *s, int argc, char **argv)
{
	struct runcfg *c = calloc(1, sizeof *c);
	struct diag d = { 0 };
	int rc;
	if (!c)
		return cli_usage_error("swarm: out of memory");
	runcfg_defaults(c);
	opts_extra_defaults(&s->x);
	rc = opts_parse_argv(OPTS_SWARM, c, &s->x, argc, argv, &d);
	s->quiet = c->quiet;
	s->verbs = c->backend == HCA_BACKEND_VERBS;
	s->wait_timeout_ms = c->wait_timeout_ms;
	bool wait_given = c->given[key_row("wait-timeout-ms")];
	free(c);
	if (rc == 1) {
		usage(stdout);
		return -1;
	}
	if (rc)
		return cli_usage_error("swarm: %s", d.msg);
	if (s->x.runs && s->x.given[key_row("seeds")])
		return cli_usage_error("swarm: --runs N and --seeds A..B: give one");
	if (s->x.tap && !strcmp(s->x.json, "-"))
		return cli_usage_error("swarm: --tap and --json - would both write to standard output: give --json a file");
	if (s->x.junit[0] && !strcmp(s->x.junit, s->x.json))
		return cli_usage_error("swarm: --junit and --json name the same file '%s'", s->x.junit);
	if (!s->verbs && wait_given)
		return cli_usage_error("swarm: --wait-timeout-ms is the verbs plans' (with --backend verbs): on the model "
				       "every wait is bounded in virtual time");
	if (s->verbs && s->x.check_determinism)
		return cli_usage_error("swarm: --check-determinism compares event logs byte for byte, which holds on the "
				       "model only: on verbs determinism is the same actions per side and outcome, what "
				       "`migbed replay` of a bundle checks (docs/swarm.md \"On verbs\")");
	if (s->verbs && swarm_verbs_probe(&d))
		return cli_usage_error("swarm: %s", d.msg);
	if (s->x.runs) {
		s->x.seed_lo = 1;
		s->x.seed_hi = s->x.runs;
	}
	return 0;
}

/* ---- merge: result files of shards into one ---------------------------------------------------- */

/* Reading back what json_head, json_run and json_summary wrote: the head line (its runs
 * array opened), then one run a line, each a JSON object, read with the one reader
 * (sim/json_in.h). */

/* obj[key] as text into buf (null: "", when null_ok); false if missing, another type or too long. */
static bool text_of(const json_t *obj, const char *key, char *buf, size_t n, bool null_ok)
{
	const json_t *v = json_object_get(obj, key);
	buf[0] = '\0';
	if (null_ok && json_is_null(v))
		return true;
	return json_is_string(v) && json_string_length(v) < n && snprintf(buf, n, "%s", json_string_value(v)) >= 0;
}

static bool count_of(const json_t *obj, const char *key, uint64_t *v)
{
	const json_t *j = json_object_get(obj, key);
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*v = (uint64_t)json_integer_value(j);
	return true;
}

/* The typed values of a run line's words. 0, or -1. */
static int run_words(struct swarm_run *r, const char *status, const char *cause, const char *side, const char *finding)
{
	int f = 0, sd = RUN_SIDE_NONE;
	r->completed = !strcmp(status, "completed");
	r->cause = strcmp(cause, "NONE") ? cause_lookup(cause) : CAUSE_NONE;
	if (strcmp(cause, "NONE") && !r->cause)
		return -1;
	if (finding[0] && (f = swarm_finding_lookup(finding)) <= 0)
		return -1;
	if (strcmp(side, "-") && run_side_lookup(side, &sd))
		return -1;
	r->side = sd;
	r->finding = (enum swarm_finding)f;
	return 0;
}

/* One run line (its leading comma taken off). 0, or the column of the problem (1-based; 1
 * when the line is JSON but not a run). */
static size_t parse_run(const char *line, struct swarm_run *r, char *bundle, size_t bundle_n)
{
	char verdict[16], status[16], cause[64], side[8], finding[32];
	uint64_t fired = 0;
	json_error_t e;
	memset(r, 0, sizeof *r);
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &e);
	if (!o)
		return e.column > 0 ? (size_t)e.column : 1;
	bool ok = json_is_object(o) && json_object_size(o) == 10 && count_of(o, "seed", &r->seed) &&
		  text_of(o, "config", r->config, sizeof r->config, false) &&
		  text_of(o, "verdict", verdict, sizeof verdict, false) && text_of(o, "status", status, sizeof status, false) &&
		  text_of(o, "cause", cause, sizeof cause, false) && text_of(o, "side", side, sizeof side, false) &&
		  count_of(o, "fired", &fired) && text_of(o, "finding", finding, sizeof finding, true) &&
		  text_of(o, "detail", r->detail, sizeof r->detail, false) && text_of(o, "bundle", bundle, bundle_n, true);
	json_decref(o);
	if (!ok)
		return 1;
	r->fired = (size_t)fired;
	return run_words(r, status, cause, side, finding) ? 1 : 0;
}

struct merged {
	struct swarm_run *runs;
	char (*bundles)[1100];
	size_t n, cap;
	char seeds[64], build[256];
	uint64_t shard_n;
	bool *have;                      /* have[k]: shard k of shard_n read */
	bool determinism, first;
};

/* The first line of a result file: its seeds, shard, determinism, build; checked against the
 * files before. 0, or -1 after the message. */
static int merge_head(struct merged *m, const char *file, const char *line)
{
	static const char open[] = ",\"runs\":[";
	char seeds[64], shard[48], build[256], *obj = NULL;
	unsigned long long k, n;
	bool det = false;
	size_t len = strlen(line);
	json_error_t e;
	json_t *h = NULL;
	/* the head is an object whose last member, the runs, is left open: closed here to read it */
	if (len > strlen(open) && !strcmp(line + len - strlen(open), open) && (obj = strndup(line, len - strlen(open) + 1)))
		obj[len - strlen(open)] = '}';
	if (obj)
		h = json_loads(obj, JSON_REJECT_DUPLICATES, &e);
	free(obj);
	const json_t *sw = json_object_get(h, "swarm"), *dt = json_object_get(h, "check-determinism");
	bool ok = h && json_object_size(h) == 5 && json_is_integer(sw) && json_integer_value(sw) == 1 &&
		  text_of(h, "seeds", seeds, sizeof seeds, false) && text_of(h, "shard", shard, sizeof shard, false) &&
		  json_is_boolean(dt) && text_of(h, "build", build, sizeof build, false);
	det = json_is_true(dt);
	json_decref(h);
	if (!ok)
		return cli_usage_error("swarm merge: %s:1: col 1: not a migbed swarm --json file", file);
	if (sscanf(shard, "%llu/%llu", &k, &n) != 2 || k < 1 || k > n || n > TORTURE_SHARDS_MAX)
		return cli_usage_error("swarm merge: %s:1: shard '%s' is not K/N (a merged file cannot be merged again)",
				       file, shard);
	if (m->first) {
		snprintf(m->seeds, sizeof m->seeds, "%s", seeds);
		snprintf(m->build, sizeof m->build, "%s", build);
		m->shard_n = n;
		m->determinism = det;
		if (!(m->have = calloc(n + 1, sizeof *m->have)))
			return cli_usage_error("swarm merge: out of memory");
		m->first = false;
	} else if (strcmp(seeds, m->seeds) || n != m->shard_n || det != m->determinism || strcmp(build, m->build)) {
		return cli_usage_error("swarm merge: %s:1: seeds %s, shard of %llu, build %s: not the swarm of the files "
				       "before (seeds %s, shards of %llu, build %s)", file, seeds, n, build, m->seeds,
				       (unsigned long long)m->shard_n, m->build);
	}
	if (m->have[k])
		return cli_usage_error("swarm merge: %s: shard %llu/%llu given twice", file, k, n);
	m->have[k] = true;
	return 0;
}

static int merge_add(struct merged *m, const struct swarm_run *r, const char *bundle)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct swarm_run *runs = realloc(m->runs, cap * sizeof *runs);
		if (runs)
			m->runs = runs;
		char(*b)[1100] = realloc(m->bundles, cap * sizeof *b);
		if (b)
			m->bundles = b;
		if (!runs || !b)
			return -1;
		m->cap = cap;
	}
	m->runs[m->n] = *r;
	snprintf(m->bundles[m->n], sizeof m->bundles[0], "%s", bundle);
	m->n++;
	return 0;
}

/* One file's runs into m. 0, or -1 after the message (file:line: problem). */
static int merge_file(struct merged *m, const char *file, struct swarm_run *r)
{
	FILE *f = fopen(file, "r");
	char *line = NULL, bundle[1100];
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = -1;
	if (!f)
		return cli_usage_error("swarm merge: %s: %s", file, strerror(errno));
	while ((len = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (lineno == 1) {
			if (merge_head(m, file, line))
				goto out;
			continue;
		}
		if (!strncmp(line, "],\"summary\":", 12)) {
			rc = 0;
			goto out;
		}
		size_t col = parse_run(line + (line[0] == ','), r, bundle, sizeof bundle);
		if (col) {
			cli_usage_error("swarm merge: %s:%zu: col %zu: not a run of migbed swarm --json", file, lineno, col);
			goto out;
		}
		if (merge_add(m, r, bundle)) {
			cli_usage_error("swarm merge: out of memory");
			goto out;
		}
	}
	cli_usage_error("swarm merge: %s:%zu: ends before the summary (a truncated file?)", file, lineno + 1);
out:
	free(line);
	fclose(f);
	return rc;
}

struct seed_ix {
	uint64_t seed;
	size_t i;
};

static int by_seed(const void *a, const void *b)
{
	const struct seed_ix *x = a, *y = b;
	return x->seed < y->seed ? -1 : x->seed > y->seed;
}

/* The merged file: runs in seed order (a seed twice: refused), the summary recomputed. */
static int merge_write(struct merged *m, const char *out)
{
	struct out_file o = { 0 };
	struct tally t = { 0 };
	struct diag d = { 0 };
	char shard[64] = "1/1";
	int len = 0;
	struct seed_ix *order = malloc((m->n + 1) * sizeof *order);
	size_t *ix = malloc((m->n + 1) * sizeof *ix);
	if (!order || !ix) {
		free(order);
		free(ix);
		return cli_usage_error("swarm merge: out of memory");
	}
	for (size_t i = 0; i < m->n; i++)
		order[i] = (struct seed_ix){ m->runs[i].seed, i };
	qsort(order, m->n, sizeof *order, by_seed);
	for (size_t i = 0; i < m->n; i++)
		ix[i] = order[i].i;
	free(order);
	for (size_t i = 1; i < m->n; i++)
		if (m->runs[ix[i]].seed == m->runs[ix[i - 1]].seed) {
			unsigned long long seed = m->runs[ix[i]].seed;
			free(ix);
			return cli_usage_error("swarm merge: seed %llu is in two files", seed);
		}
	for (uint64_t k = 1; k <= m->shard_n; k++)
		if (!m->have[k]) {
			len = 0;
			for (uint64_t j = 1; j <= m->shard_n && len < (int)sizeof shard - 24; j++)
				if (m->have[j])
					len += snprintf(shard + len, sizeof shard - (size_t)len, "%s%llu", len ? "," : "",
							(unsigned long long)j);
			snprintf(shard + len, sizeof shard - (size_t)len, "/%llu", (unsigned long long)m->shard_n);
			break;
		}
	if (out_file_open(&o, out, &d)) {
		free(ix);
		return cli_usage_error("swarm merge: %s", d.msg);
	}
	struct json_stream js;
	json_head(&js, o.f, m->seeds, shard, m->determinism, m->build);
	for (size_t i = 0; i < m->n; i++) {
		const struct swarm_run *r = &m->runs[ix[i]];
		json_stream_item(&js, json_run(r, m->bundles[ix[i]]));
		tally_add(&t, r, m->bundles[ix[i]]);
	}
	bool oom = json_summary(&js, &t) && !ferror(o.f);
	free(ix);
	free(t.list);
	if (oom) {
		out_file_abort(&o);
		return cli_usage_error("swarm merge: %s: out of memory", out);
	}
	if (out_file_commit(&o, &d))
		return cli_usage_error("swarm merge: %s", d.msg);
	fprintf(stderr, "swarm merge: %zu runs, %zu findings -> %s\n", t.runs, t.findings, out);
	return t.findings ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static void merge_usage(FILE *f)
{
	fprintf(f, "usage: migbed swarm merge FILE... --json OUT\n\n"
		   "Merge the --json files of `migbed swarm --shard K/N` runs of the same seeds (and build)\n"
		   "into one: the runs in seed order, the summary recomputed. With every shard 1..N given\n"
		   "the result equals the unsharded run's file byte for byte (its shard says 1/1).\n"
		   "exit status: 0 no finding, 1 findings, 2 bad usage or input (FILE:LINE: problem).\n");
}

static int cmd_swarm_merge(int argc, char **argv)
{
	struct merged m = { .first = true };
	struct swarm_run *r = malloc(sizeof *r);
	const char *out = NULL;
	int rc = 0, files = 0;
	for (int i = 1; i < argc && rc == 0; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			merge_usage(stdout);
			free(r);
			return CLI_EXIT_OK;
		}
		if (!strcmp(argv[i], "--json"))
			rc = i + 1 < argc ? (out = argv[++i], 0) : cli_usage_error("swarm merge: --json needs a value");
		else if (!strncmp(argv[i], "--json=", 7))
			out = argv[i] + 7;
		else if (argv[i][0] == '-' && argv[i][1])
			rc = cli_usage_error("swarm merge: unknown option '%s' (see migbed swarm merge --help)", argv[i]);
	}
	if (rc == 0 && !out)
		rc = cli_usage_error("swarm merge: --json OUT is required (see migbed swarm merge --help)");
	if (rc == 0 && !r)
		rc = cli_usage_error("swarm merge: out of memory");
	for (int i = 1; i < argc && rc == 0; i++) {
		if (!strcmp(argv[i], "--json")) {
			i++;
			continue;
		}
		if (strncmp(argv[i], "--json=", 7) != 0) {
			files++;
			rc = merge_file(&m, argv[i], r) ? CLI_EXIT_USAGE : 0;
		}
	}
	if (rc == 0 && files == 0)
		rc = cli_usage_error("swarm merge: no FILE given (see migbed swarm merge --help)");
	if (rc == 0)
		rc = merge_write(&m, out);
	free(r);
	free(m.runs);
	free(m.bundles);
	free(m.have);
	return rc;
}

int cmd_swarm(int argc, char **argv)
{
	struct swarm_cli *s;
	int rc;
	if (argc >= 2 && !strcmp(argv[1], "merge"))
		return cmd_swarm_merge(argc - 1, argv + 1);
	if (!(s = calloc(1, sizeof *s)))
		return cli_usage_error("swarm: out of memory");
	rc = parse_args(s, argc, argv);
	if (rc == 0)
		rc = swarm_go(s);
	else
		rc = rc < 0 ? CLI_EXIT_OK : rc;
	out_file_abort(&s->json);
	report_sink_abort(&s->rep);
	free(s->t.list);
	free(s);
	return rc;
}
