/* cmd_torture - `migbed torture [SCENARIO]`: fail every fallible call once (SQLite's OOM
 * loop, curl's torture mode; docs/faults.md "Torture"). The sweep itself (the baseline, the
 * budget, the forked reruns, the watchdog, the verdicts) is run/torture.h's; this file
 * parses the command line into its config and prints the typed result:
 * a table on stdout, progress on stderr when it is a terminal, --json FILE (the output-file
 * rules of run/out_file.h: "-" is stdout, symlinks and devices written through, a path that
 * cannot be written refused before the sweep). Exit 0 every rerun proper, 1 some rerun was
 * not (or the scenario does not complete without faults), 2 bad usage or input (a defective
 * trace: FILE:LINE: problem, as `migbed run` says it). Deterministic: same scenario, same
 * runs, same table. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "faults/fault.h"
#include "run/out_file.h"
#include "run/torture.h"
#include "sim/size.h"

#define TORTURE_ARGS_MAX 256

struct torture {
	const char *scenario;           /* NULL: none */
	char **run_argv;                /* the options passed on to `migbed run` */
	int run_argc;
	uint64_t max_runs, watchdog_ms, shard_k, shard_n, jobs;
	const char *json_path, *sites;
	const char *backend;            /* "model" / "verbs" (for the JSON) */
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
		   "  --max-runs N       at most N reruns, spread evenly over the sites (default %u)\n"
		   "  --shard K/N        only the K-th of N round-robin shares (CI matrices)\n"
		   "  --json FILE        write the sweep as JSON\n"
		   "  --watchdog-ms N    kill a rerun after N ms of wall time: a hang (default %u)\n"
		   "  --jobs N           reruns at a time (default 1)\n"
		   "  --sites GLOB,...   only these sites (e.g. 'reg_mr,msg.*'); default: all but the\n"
		   "                     umbrella sites post_send and cm.* (their calls are covered)\n"
		   "  other --key VALUE  passed to every `migbed run` (see migbed run --help)\n\n"
		   "Table: site, side, call, action, verdict, cause, side of the cause.\n"
		   "exit status: 0 every run ended properly, 1 some run hung, crashed, corrupted memory,\n"
		   "failed without a named cause or did not fire, 2 bad usage.\n",
		TORTURE_MAX_RUNS_DEFAULT, TORTURE_WATCHDOG_MS_DEFAULT);
}

/* ---- options ---------------------------------------------------------------------------- */

static int parse_u64_opt(const char *name, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (!v || size_parse_u64(v, out) != 0 || *out < lo || *out > hi)
		return cli_usage_error("torture: %s: '%s' is not a number from %llu to %llu", name, v ? v : "",
				       (unsigned long long)lo, (unsigned long long)hi);
	return 0;
}

static int parse_shard(struct torture *t, const char *v)
{
	unsigned long long k, n;
	char tail;
	if (!v || sscanf(v, "%llu/%llu%c", &k, &n, &tail) != 2 || n == 0 || k == 0 || k > n || n > 100000)
		return cli_usage_error("torture: --shard: '%s' is not K/N with 1 <= K <= N", v ? v : "");
	t->shard_k = k;
	t->shard_n = n;
	return 0;
}

/* --sites: every glob must match at least one fault site (a typo would otherwise select
 * nothing, or less than meant, and the sweep would pass). 0, or CLI_EXIT_USAGE after the message. */
static int check_sites(const char *sites)
{
	char buf[512];
	if (strlen(sites) >= sizeof buf)
		return cli_usage_error("torture: --sites: longer than %zu bytes", sizeof buf - 1);
	memcpy(buf, sites, strlen(sites) + 1);
	int n = 0;
	for (char *save = NULL, *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save), n++) {
		bool hit = false;
		for (int st = 0; st < FAULT_SITE_COUNT && !hit; st++)
			hit = fnmatch(g, fault_site_name((enum fault_site)st), 0) == 0;
		if (!hit)
			return cli_usage_error("torture: --sites: '%s' matches no fault site (reg_mr, post_send.write, "
					       "wc.*, msg.ready, ...: see docs/faults.md)", g);
	}
	return n ? 0 : cli_usage_error("torture: --sites: no site given");
}

/* Take one torture option at argv[*i] ("--name V" or "--name=V"): 1 taken, 0 not ours, 2 bad. */
static int take_option(struct torture *t, int argc, char **argv, int *i)
{
	static const char *const names[] = { "--max-runs", "--shard", "--json", "--watchdog-ms", "--jobs", "--sites" };
	const char *a = argv[*i], *v = NULL;
	size_t k = 0, nl = 0;
	for (; k < sizeof names / sizeof names[0]; k++) {
		nl = strlen(names[k]);
		if (!strncmp(a, names[k], nl) && (a[nl] == '\0' || a[nl] == '='))
			break;
	}
	if (k == sizeof names / sizeof names[0])
		return 0;
	v = a[nl] == '=' ? a + nl + 1 : *i + 1 < argc ? argv[++*i] : NULL;
	if (!v)
		return cli_usage_error("torture: %s needs a value", names[k]);
	switch (k) {
	case 0: return parse_u64_opt("--max-runs", v, 1, TORTURE_MAX_RUNS_LIMIT, &t->max_runs) ? 2 : 1;
	case 1: return parse_shard(t, v) ? 2 : 1;
	case 2: t->json_path = v; return 1;
	case 3: return parse_u64_opt("--watchdog-ms", v, 100, 86400000, &t->watchdog_ms) ? 2 : 1;
	case 4: return parse_u64_opt("--jobs", v, 1, TORTURE_JOBS_MAX, &t->jobs) ? 2 : 1;
	default: t->sites = v; return check_sites(v) ? 2 : 1;
	}
}

/* Split argv into torture options and `migbed run` options; validate the latter with run's
 * own parser (bad input: its file:line message, exit 2). 1: help printed; 0 ok; 2 bad. */
static int parse_args(struct torture *t, int argc, char **argv)
{
	t->run_argv = calloc((size_t)argc + 1, sizeof *t->run_argv);
	if (!t->run_argv)
		return cli_usage_error("torture: out of memory");
	t->run_argv[t->run_argc++] = "run";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		int rc = take_option(t, argc, argv, &i);
		if (rc == 2)
			return 2;
		if (rc == 0)
			t->run_argv[t->run_argc++] = argv[i];
	}
	if (t->run_argc > TORTURE_ARGS_MAX - 16)
		return cli_usage_error("torture: too many options");
	struct runcfg *c = calloc(1, sizeof *c);
	struct diag d = { 0 };
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

/* ---- the sweep's config ------------------------------------------------------------------------ */

static void no_usage(FILE *f)
{
	(void)f;
}

/* The config of every run: the options passed on to `migbed run`, read as run reads them
 * (parse_args has checked them). 0, or CLI_EXIT_USAGE after the message. */
static int run_config(const struct torture *t, struct runcfg *c)
{
	struct diag d = { 0 };
	runcfg_defaults(c);
	if (run_parse_args(c, &d, t->run_argc, t->run_argv, no_usage) != 0)
		return cli_usage_error("torture: %s", d.msg);
	return 0;
}

static void show_progress(void *arg, size_t done, size_t total, size_t bad)
{
	(void)arg;
	fprintf(stderr, "\rtorture: %zu/%zu runs, %zu bad ", done, total, bad);
}

/* ---- report ------------------------------------------------------------------------------------- */

static const char *cause_of(const struct torture_run *r)
{
	return r->reported ? cause_name(r->cause) : "";
}

static void print_table(const struct torture *t, const struct torture_result *res, FILE *f)
{
	const size_t *n = res->n;
	fprintf(f, "%-24s %-4s %6s  %-20s %-10s %-26s %s\n", "SITE", "SIDE", "CALL", "ACTION", "VERDICT", "CAUSE", "BY");
	for (size_t i = 0; i < res->n_runs; i++) {
		const struct torture_run *r = &res->runs[i];
		fprintf(f, "%-24s %-4s %6llu  %-20s %-10s %-26s %s\n", fault_site_name(r->site), fault_side_name(r->side),
			(unsigned long long)r->call, r->action, torture_verdict_name(r->verdict),
			r->reported ? cause_of(r) : "-", r->cause_side[0] ? r->cause_side : "-");
		if (!torture_verdict_proper(r->verdict))
			fprintf(f, "    ^ %s\n", r->detail[0] ? r->detail : "(no detail)");
	}
	fprintf(f, "torture: %zu runs (%llu calls in %zu site/side groups, shard %llu/%llu): %zu completed, "
		   "%zu failed with a named cause, %zu bad (hang %zu, crash %zu, unnamed %zu, corrupt %zu, "
		   "not-fired %zu, error %zu)\n",
		res->n_runs, (unsigned long long)res->calls, res->n_groups, (unsigned long long)t->shard_k,
		(unsigned long long)t->shard_n, n[TORTURE_COMPLETED], n[TORTURE_FAILED],
		res->n_runs - n[TORTURE_COMPLETED] - n[TORTURE_FAILED], n[TORTURE_HANG], n[TORTURE_CRASH],
		n[TORTURE_UNNAMED], n[TORTURE_CORRUPT], n[TORTURE_NOT_FIRED], n[TORTURE_ERROR]);
}

static void json_runs(const struct torture_result *res, FILE *f)
{
	for (size_t i = 0; i < res->n_runs; i++) {
		const struct torture_run *r = &res->runs[i];
		fprintf(f, "%s{\"site\":\"%s\",\"side\":\"%s\",\"call\":%llu,\"action\":\"%s\",\"verdict\":\"%s\",\"cause\":",
			i ? "," : "", fault_site_name(r->site), fault_side_name(r->side), (unsigned long long)r->call,
			r->action, torture_verdict_name(r->verdict));
		json_string(f, cause_of(r));
		fprintf(f, ",\"cause_side\":");
		json_string(f, r->cause_side);
		fprintf(f, ",\"detail\":");
		json_string(f, r->detail);
		fprintf(f, "}\n");
	}
}

/* The sweep as JSON (no wall times: the same sweep writes the same file). */
static void print_json(const struct torture *t, const struct torture_result *res, FILE *f)
{
	fprintf(f, "{\"scenario\":");
	json_string(f, t->scenario ? t->scenario : "");
	fprintf(f, ",\"backend\":\"%s\",\"shard\":\"%llu/%llu\",\"max_runs\":%llu,\"calls\":%llu,\"groups\":[",
		t->backend, (unsigned long long)t->shard_k, (unsigned long long)t->shard_n,
		(unsigned long long)t->max_runs, (unsigned long long)res->calls);
	for (size_t i = 0; i < res->n_groups; i++)
		fprintf(f, "%s{\"site\":\"%s\",\"side\":\"%s\",\"calls\":%llu,\"runs\":%llu}", i ? "," : "",
			fault_site_name(res->groups[i].site), fault_side_name(res->groups[i].side),
			(unsigned long long)res->groups[i].calls, (unsigned long long)res->groups[i].runs);
	fprintf(f, "],\"runs\":[\n");
	json_runs(res, f);
	fprintf(f, "],\"summary\":{");
	for (int v = 0; v < TORTURE_VERDICTS; v++)
		fprintf(f, "%s\"%s\":%zu", v ? "," : "", torture_verdict_name((enum torture_verdict)v), res->n[v]);
	fprintf(f, "},\"ok\":%s}\n", res->ok ? "true" : "false");
}

/* The result: the table, then the JSON (json open: written and committed). Exit status. */
static int report(const struct torture *t, const struct torture_result *res, struct out_file *json)
{
	struct diag d = { 0 };
	const struct torture_run *b = &res->baseline;
	if (!res->swept) {
		fprintf(stderr, "migbed: torture: the scenario does not complete without faults (%s%s%s: %s): "
				"nothing to sweep\n", torture_verdict_name(b->verdict), cause_of(b)[0] ? " " : "",
			cause_of(b), b->detail);
		return CLI_EXIT_FAIL;
	}
	print_table(t, res, stdout);
	fflush(stdout);
	if (json->f) {
		print_json(t, res, json->f);
		if (out_file_commit(json, &d))
			return cli_usage_error("torture: %s", d.msg);
	}
	return res->ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* ---- the command ------------------------------------------------------------------------------- */

/* The output file first (refused before any run), then the sweep, then the report. */
static int sweep(const struct torture *t)
{
	struct runcfg *c = calloc(1, sizeof *c);
	struct torture_result res = { 0 };
	struct torture_config tc;
	struct out_file json = { 0 };
	struct diag d = { 0 };
	int code;
	if (!c)
		return cli_usage_error("torture: out of memory");
	if ((code = run_config(t, c)) != 0)
		goto out;
	if (t->json_path && out_file_open(&json, t->json_path, &d)) {
		code = cli_usage_error("torture: %s", d.msg);
		goto out;
	}
	torture_config_defaults(&tc, c);
	tc.sites = t->sites;
	tc.max_runs = t->max_runs;
	tc.watchdog_ms = t->watchdog_ms;
	tc.shard_k = t->shard_k;
	tc.shard_n = t->shard_n;
	tc.jobs = t->jobs;
	tc.progress = isatty(2) ? show_progress : NULL;
	int rc = torture_sweep(&tc, &res, &d);
	if (tc.progress && res.swept)
		fputc('\n', stderr);
	code = rc ? cli_usage_error("torture: %s", d.msg) : report(t, &res, &json);
out:
	out_file_abort(&json);
	torture_result_free(&res);
	free(c);
	return code;
}

static void torture_free(struct torture *t)
{
	free(t->run_argv);
	free((char *)t->scenario);
}

int cmd_torture(int argc, char **argv)
{
	struct torture t = { .max_runs = TORTURE_MAX_RUNS_DEFAULT, .watchdog_ms = TORTURE_WATCHDOG_MS_DEFAULT,
			     .shard_k = 1, .shard_n = 1, .jobs = 1 };
	int rc = parse_args(&t, argc, argv);
	if (rc) {
		torture_free(&t);
		return rc == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	rc = sweep(&t);
	torture_free(&t);
	return rc;
}
