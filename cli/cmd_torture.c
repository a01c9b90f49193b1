/* SPDX-License-Identifier: MIT */
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
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/stat.h>

#include "cli/bundle.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "faults/fault.h"
#include "run/out_file.h"
#include "run/torture.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "sim/size.h"

#define TORTURE_ARGS_MAX 256

struct torture {
	const char *scenario;           /* NULL: none */
	char **run_argv;                /* the options passed on to `migbed run` */
	int run_argc;
	uint64_t max_runs, watchdog_ms, shard_k, shard_n, jobs;
	const char *json_path, *sites;
	const char *junit_path;         /* --junit FILE, NULL: none */
	bool tap;                       /* --tap: TAP on stdout instead of the table */
	bool quiet;                     /* --quiet: no progress line */
	const char *bundles;            /* --bundles DIR */
	const char *backend;            /* "model" / "verbs" (for the JSON) */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed torture [SCENARIO] [--key VALUE ...] [--max-runs N] [--shard K/N]\n"
		   "                      [--json FILE] [--junit FILE] [--tap] [--watchdog-ms N] [--jobs N]\n"
		   "                      [--sites GLOB,...]\n\n"
		   "Fail every fallible call of a migration once: a baseline run counts the calls per\n"
		   "fault site and side, then the scenario is rerun once per call with that call failed\n"
		   "by the site's canonical action (reg_mr, dereg_mr, ep_setup, alloc: errno(ENOMEM);\n"
		   "post_*: errno(EIO); wc.*: status(GENERAL_ERR); connect, accept: errno(ECONNREFUSED);\n"
		   "ep_create: errno(EHOSTUNREACH); modify_qp: errno(EINVAL); msg.*, cm: drop).\n"
		   "Every rerun must end completed-and-verified or failed with a named cause; one that\n"
		   "does not writes a reproducer bundle --bundles DIR/SITE-SIDE-CALL (migbed replay).\n\n"
		   "Its own keys, then those of `migbed run`, passed to every run:\n\n");
	opts_print_help(f, OPTS_TORTURE);
	fprintf(f, "\nTable: site, side, call, action, verdict, cause, side of the cause (--tap: TAP instead).\n"
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
	t->bundles = x->bundles;
	t->junit_path = x->junit[0] ? x->junit : NULL;
	t->tap = x->tap;
	if (t->tap && t->json_path && !strcmp(t->json_path, "-"))
		return cli_usage_error("torture: --tap and --json - would both write to standard output: give --json a file");
	if (t->junit_path && t->json_path && !strcmp(t->junit_path, t->json_path))
		return cli_usage_error("torture: --junit and --json name the same file '%s'", t->junit_path);
	if (t->run_argc > TORTURE_ARGS_MAX - 16)
		return cli_usage_error("torture: too many options");
	struct runcfg *c = calloc(1, sizeof *c);
	if (!c)
		return cli_usage_error("torture: out of memory");
	runcfg_defaults(c);
	int rc = run_parse_args(c, &d, t->run_argc, t->run_argv, usage);
	if (rc < 0)
		cli_usage_error("torture: %s", d.msg);
	if (rc == 0 && c->bundle_path[0]) {
		cli_usage_error("torture: --bundle is run's: a sweep writes one bundle per rerun that is not proper, "
				"under --bundles DIR");
		rc = -1;
	}
	t->quiet = c->quiet;
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
	struct progress *p = arg;
	if (progress_due(p) || done == total)
		progress_show(p, "torture: %zu/%zu runs, %zu bad", done, total, bad);
}

/* ---- report ------------------------------------------------------------------------------------- */

static const char *cause_of(const struct torture_run *r)
{
	return r->reported ? cause_name(r->cause) : "";
}

static void print_summary(const struct torture *t, const struct torture_result *res, FILE *f);

static void print_table(const struct torture *t, const struct torture_result *res, FILE *f)
{
	fprintf(f, "%-24s %-4s %6s  %-20s %-10s %-26s %s\n", "SITE", "SIDE", "CALL", "ACTION", "VERDICT", "CAUSE", "BY");
	for (size_t i = 0; i < res->n_runs; i++) {
		const struct torture_run *r = &res->runs[i];
		fprintf(f, "%-24s %-4s %6llu  %-20s %-10s %-26s %s\n", fault_site_name(r->site), fault_side_name(r->side),
			(unsigned long long)r->call, r->action, torture_verdict_name(r->verdict),
			r->reported ? cause_of(r) : "-", r->cause_side[0] ? r->cause_side : "-");
		if (!torture_verdict_proper(r->verdict))
			fprintf(f, "    ^ %s\n", r->detail[0] ? r->detail : "(no detail)");
	}
	print_summary(t, res, f);
}

static void print_summary(const struct torture *t, const struct torture_result *res, FILE *f)
{
	const size_t *n = res->n;
	fprintf(f, "torture: %zu runs (%llu calls in %zu site/side groups, shard %llu/%llu): %zu completed, "
		   "%zu failed with a named cause, %zu bad (hang %zu, crash %zu, unnamed %zu, corrupt %zu, "
		   "not-fired %zu, error %zu)\n",
		res->n_runs, (unsigned long long)res->calls, res->n_groups, (unsigned long long)t->shard_k,
		(unsigned long long)t->shard_n, n[TORTURE_COMPLETED], n[TORTURE_FAILED],
		res->n_runs - n[TORTURE_COMPLETED] - n[TORTURE_FAILED], n[TORTURE_HANG], n[TORTURE_CRASH],
		n[TORTURE_UNNAMED], n[TORTURE_CORRUPT], n[TORTURE_NOT_FIRED], n[TORTURE_ERROR]);
}

/* The sweep as JSON (no wall times: the same sweep writes the same file), one run a line.
 * 0, or -EIO (a write error, or out of memory when !ferror(f)). */
static int print_json(const struct torture *t, const struct torture_result *res, FILE *f)
{
	char shard[48];
	snprintf(shard, sizeof shard, "%llu/%llu", (unsigned long long)t->shard_k, (unsigned long long)t->shard_n);
	json_t *groups = json_array(), *summary = json_object();
	for (size_t i = 0; i < res->n_groups; i++)
		json_add(&groups, json_pack("{s:s,s:s,s:o,s:o}", "site", fault_site_name(res->groups[i].site), "side",
					    fault_side_name(res->groups[i].side), "calls", json_of_u64(res->groups[i].calls),
					    "runs", json_of_u64(res->groups[i].runs)));
	for (int v = 0; v < TORTURE_VERDICTS; v++)
		json_set(&summary, torture_verdict_name((enum torture_verdict)v), json_of_u64(res->n[v]));
	json_t *head = json_pack("{s:o,s:s,s:s,s:o,s:o,s:o}", "scenario", json_of_str(t->scenario ? t->scenario : ""),
				 "backend", t->backend, "shard", shard, "max-runs", json_of_u64(t->max_runs), "calls",
				 json_of_u64(res->calls), "groups", groups);
	struct json_stream js;
	json_stream_open(&js, f, head, "runs", "\n", ",", "\n");
	for (size_t i = 0; i < res->n_runs; i++) {
		const struct torture_run *r = &res->runs[i];
		json_stream_item(&js, json_pack("{s:s,s:s,s:o,s:o,s:s,s:o,s:o,s:o}", "site", fault_site_name(r->site), "side",
						fault_side_name(r->side), "call", json_of_u64(r->call), "action",
						json_of_str(r->action), "verdict", torture_verdict_name(r->verdict), "cause",
						json_of_str(cause_of(r)), "cause-side", json_of_str(r->cause_side), "detail",
						json_of_str(r->detail)));
	}
	return json_stream_close(&js, "", json_pack("{s:o,s:b}", "summary", summary, "ok", res->ok));
}

/* The reruns as TAP (instead of the table; the summary a comment) or JUnit XML (cli/report.h). */
static void print_tap(const struct torture *t, const struct torture_result *res, FILE *f)
{
	struct report_buf *b = malloc(sizeof *b);
	report_tap_head(f, res->n_runs);
	for (size_t i = 0; b && i < res->n_runs; i++) {
		struct report_case c;
		report_torture_case(&c, b, &res->runs[i], t->scenario, t->bundles);
		report_tap_case(f, i + 1, &c);
	}
	free(b);
}

static int write_junit(const struct torture *t, const struct torture_result *res, FILE *f)
{
	struct report_buf *b = malloc(sizeof *b);
	struct report_junit j;
	int rc = b ? report_junit_begin(&j) : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < res->n_runs; i++) {
		struct report_case c;
		report_torture_case(&c, b, &res->runs[i], t->scenario, t->bundles);
		report_junit_case(&j, &c);
	}
	if (rc == 0) {
		rc = report_junit_end(&j, f, "migbed torture", 0.0);
		report_junit_free(&j);
	}
	free(b);
	return rc;
}

/* A baseline that does not complete: one failed case "baseline" for CI (TAP, JUnit), so a CI
 * job still finds its report. CLI_EXIT_FAIL, or CLI_EXIT_USAGE when the JUnit file fails. */
static int report_baseline(const struct torture *t, const struct torture_run *b, struct out_file *junit)
{
	char msg[TORTURE_DETAIL_MAX + 160];
	struct report_junit j;
	struct diag d = { 0 };
	int n = snprintf(msg, sizeof msg, "the scenario does not complete without faults (%s %s): nothing to sweep",
			 torture_verdict_name(b->verdict), b->reported ? cause_name(b->cause) : "-");
	(void)n;   /* a long text is cut */
	struct report_case c = { .classname = "migbed.torture", .name = "baseline", .file = t->scenario,
				 .result = REPORT_FAIL, .type = torture_verdict_name(b->verdict), .message = msg,
				 .text = b->detail, .secs = -1, .fields = { { "result", msg }, { "detail", b->detail } } };
	if (t->tap) {
		report_tap_head(stdout, 1);
		report_tap_case(stdout, 1, &c);
		fflush(stdout);
	}
	if (!junit->f)
		return CLI_EXIT_FAIL;
	if (report_junit_begin(&j))
		return cli_usage_error("torture: --junit %s: out of memory", t->junit_path);
	report_junit_case(&j, &c);
	int rc = report_junit_end(&j, junit->f, "migbed torture", 0.0);
	report_junit_free(&j);
	if (rc || out_file_commit(junit, &d))
		return cli_usage_error("torture: --junit %s: %s", t->junit_path, rc ? "out of memory" : d.msg);
	return CLI_EXIT_FAIL;
}

/* The result: the table (or TAP), then the JSON and the JUnit XML (each open: written and
 * committed). Exit status. */
static int report(const struct torture *t, const struct torture_result *res, struct out_file *json,
		  struct out_file *junit)
{
	struct diag d = { 0 };
	const struct torture_run *b = &res->baseline;
	if (!res->swept) {
		fprintf(stderr, "migbed: torture: the scenario does not complete without faults (%s%s%s: %s): "
				"nothing to sweep\n", torture_verdict_name(b->verdict), cause_of(b)[0] ? " " : "",
			cause_of(b), b->detail);
		return report_baseline(t, b, junit);
	}
	if (t->tap) {
		print_tap(t, res, stdout);
		fputs("# ", stdout);
		print_summary(t, res, stdout);
	} else {
		print_table(t, res, stdout);
	}
	fflush(stdout);
	if (json->f) {
		if (print_json(t, res, json->f) && !ferror(json->f))
			return cli_usage_error("torture: --json %s: out of memory", t->json_path);
		if (out_file_commit(json, &d))
			return cli_usage_error("torture: %s", d.msg);
	}
	if (junit->f) {
		if (write_junit(t, res, junit->f))
			return cli_usage_error("torture: --junit %s: out of memory", t->junit_path);
		if (out_file_commit(junit, &d))
			return cli_usage_error("torture: %s", d.msg);
	}
	return res->ok ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* ---- bundles ------------------------------------------------------------------------------------ */

/* One rerun that was not proper: its bundle DIR/SITE-SIDE-CALL (replacing one of that name),
 * recorded by running its scenario again in a child under the sweep's watchdog. */
static int write_bundle(const struct torture *t, const struct runcfg *c, const struct torture_run *r,
			const char *scratch, struct diag *d)
{
	char dir[1200], got[400];
	struct runcfg *rc_cfg = malloc(sizeof *rc_cfg), *w = malloc(sizeof *w);
	struct bundle b = { 0 };   /* bundle_abort reads it when the allocations failed */
	struct bundle_meta m;
	bool tar_ok;
	int rc = rc_cfg && w ? 0 : -ENOMEM;
	snprintf(dir, sizeof dir, "%s/%s-%s-%llu", t->bundles, fault_site_name(r->site), fault_side_name(r->side),
		 (unsigned long long)r->call);
	if (rc == 0) {
		*rc_cfg = *c;
		snprintf(rc_cfg->faults[rc_cfg->n_faults++], sizeof rc_cfg->faults[0], "%s@%s #%llu -> %s",
			 fault_site_name(r->site), fault_side_name(r->side), (unsigned long long)r->call, r->action);
		rc = bundle_begin(&b, dir, true, d);
	}
	if (rc == 0 && (rc = bundle_write_config(&b, rc_cfg, w, d)) == 0) {
		bundle_meta_of(&m, OPTS_RUN, NULL, c);
		m.watchdog_ms = t->watchdog_ms;
		rc = bundle_rerun(b.tmp, scratch, &m, &m.oc, d);
		for (const char *const *f = (const char *const[]){ "events.log", "result.json", NULL }; rc == 0 && *f; f++) {
			char from[1200], to[1200];
			bundle_path_join(from, sizeof from, scratch, *f);
			bundle_file(&b, *f, to, sizeof to);
			if (rename(from, to) != 0 && errno != ENOENT)
				rc = diag_set(d, "%s: %s", to, strerror(errno));
		}
		int n = snprintf(got, sizeof got, "torture rerun with fault %s: %s%s%s", rc_cfg->faults[rc_cfg->n_faults - 1],
				 torture_verdict_name(r->verdict), r->detail[0] ? ": " : "", r->detail);
		(void)n;   /* a long detail is cut */
		if (rc == 0)
			rc = bundle_commit(&b, &m, w, "completed, or failed with a named cause, the injected fault fired (torture)",
					   got, &tar_ok, d);
	}
	if (rc)
		bundle_abort(&b);
	free(rc_cfg);
	free(w);
	return rc;
}

/* Every rerun that was not proper writes its bundle under --bundles (before the table: its
 * last line stays the summary). 0, or CLI_EXIT_USAGE after the message. */
static int write_bundles(const struct torture *t, const struct runcfg *c, const struct torture_result *res)
{
	char scratch[1100], out[PATH_MAX];
	struct diag d = { 0 };
	size_t n = 0;
	if (!res->swept || res->ok)
		return 0;
	/* the reruns' scratch folder inside DIR: their files are renamed into the bundles there,
	 * which never crosses a filesystem (TMPDIR on tmpfs would: EXDEV) */
	snprintf(scratch, sizeof scratch, "%s/.scratch-XXXXXX", t->bundles);
	if ((mkdir(t->bundles, 0777) != 0 && errno != EEXIST) || !mkdtemp(scratch) || !realpath(scratch, out))
		return cli_usage_error("torture: --bundles %s: %s", t->bundles, strerror(errno));
	for (size_t i = 0; i < res->n_runs; i++) {
		if (torture_verdict_proper(res->runs[i].verdict))
			continue;
		if (write_bundle(t, c, &res->runs[i], out, &d)) {
			bundle_rmdir(out);
			return cli_usage_error("torture: bundle: %s", d.msg);
		}
		n++;
	}
	bundle_rmdir(out);
	fprintf(stderr, "torture: %zu bundle%s in %s (migbed replay %s/SITE-SIDE-CALL)\n", n, n == 1 ? "" : "s",
		t->bundles, t->bundles);
	return 0;
}

/* ---- the command ------------------------------------------------------------------------------- */

/* The output file first (refused before any run), then the sweep, then the report. */
static int sweep(const struct torture *t)
{
	struct runcfg *c = calloc(1, sizeof *c);
	struct torture_result res = { 0 };
	struct torture_config tc;
	struct out_file json = { 0 }, junit = { 0 };
	struct progress pr;
	struct diag d = { 0 };
	int code;
	if (!c)
		return cli_usage_error("torture: out of memory");
	if ((code = run_config(t, c)) != 0)
		goto out;
	if ((t->json_path && out_file_open(&json, t->json_path, &d)) ||
	    (t->junit_path && out_file_open(&junit, t->junit_path, &d))) {
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
	progress_init(&pr, t->quiet);
	tc.progress = pr.on ? show_progress : NULL;
	tc.progress_arg = &pr;
	int rc = torture_sweep(&tc, &res, &d);
	progress_end(&pr);
	if (rc)
		code = cli_usage_error("torture: %s", d.msg);
	else if ((code = write_bundles(t, c, &res)) == 0)
		code = report(t, &res, &json, &junit);
out:
	out_file_abort(&json);
	out_file_abort(&junit);
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
	struct torture t = { 0 };   /* the options' defaults: the option table's (parse_args) */
	int rc = parse_args(&t, argc, argv);
	if (rc) {
		torture_free(&t);
		return rc == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	rc = sweep(&t);
	torture_free(&t);
	return rc;
}
