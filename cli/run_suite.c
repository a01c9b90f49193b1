/* SPDX-License-Identifier: MIT */
/* run_suite - `migbed run DIR|SCENARIO... [--junit FILE] [--tap] [--json FILE]`: many
 * scenarios, each judged against its own expectation, one after the other in this process;
 * a line per scenario (or TAP), a summary, JUnit XML and JSON for CI systems. */
#include "cli/run_suite.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "run/out_file.h"
#include "run/run.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "vocab/cause.h"

#define SUITE_MAX 4096

struct entry {
	char *file;
	char name[256];              /* the file's name without its directory and .scn */
	int code;                    /* 0 pass, 1 fail, 2 bad input */
	char verdict[160];           /* the verdict line's fields; or the bad input's message */
	char detail[DIAG_MSG_MAX];
	int cause;
	double secs;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed run DIR|SCENARIO... [--junit FILE] [--tap] [--json FILE] [--key VALUE ...]\n\n"
		   "Run many scenarios: every *.scn of each DIR (sorted; not recursive) and each SCENARIO, one\n"
		   "after the other, each judged against its own `expect` line; the options apply to every\n"
		   "one (over its file's keys). A line per scenario, then a summary. This mode is taken with\n"
		   "more than one SCENARIO, a DIR, --junit or --tap.\n\n"
		   "  --junit FILE   JUnit XML (one testcase per scenario: failure = missed expectation,\n"
		   "                 error = bad input), for CI systems (GitLab, Jenkins, GitHub reporters)\n"
		   "  --tap          TAP version 13 on standard output instead of the lines\n"
		   "  --json FILE    {\"scenarios\":[{\"name\",\"file\",\"result\",\"verdict\",\"status\",\"cause\",\n"
		   "                 \"side\",\"detail\",\"seconds\"}...],\"summary\":{...}}\n"
		   "Per-run outputs (--events, --timeline, --bundle, --pause-at, --fault-counts) name one file\n"
		   "and are refused here: run the scenario alone for those.\n\n"
		   "exit status: 0 every scenario met its expectation, 1 some did not, 2 bad usage, or a\n"
		   "scenario could not be run (bad input; the others still run and are reported).\n");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends DIR's *.scn (sorted) or the file itself. 0, or CLI_EXIT_USAGE after the message. */
static int expand(const char *arg, char **files, size_t *n)
{
	struct stat st;
	if (stat(arg, &st))
		return cli_usage_error("run: %s: %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		if (*n == SUITE_MAX)
			return cli_usage_error("run: more than %d scenarios", SUITE_MAX);
		files[(*n)++] = strdup(arg);
		return files[*n - 1] ? 0 : cli_usage_error("run: out of memory");
	}
	DIR *d = opendir(arg);
	if (!d)
		return cli_usage_error("run: %s: %s", arg, strerror(errno));
	size_t first = *n;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 5 || strcmp(de->d_name + l - 4, ".scn") || de->d_name[0] == '.')
			continue;
		if (*n == SUITE_MAX) {
			closedir(d);
			return cli_usage_error("run: more than %d scenarios", SUITE_MAX);
		}
		size_t sz = strlen(arg) + l + 2;
		char *p = malloc(sz);
		if (!p) {
			closedir(d);
			return cli_usage_error("run: out of memory");
		}
		snprintf(p, sz, "%s%s%s", arg, arg[strlen(arg) - 1] == '/' ? "" : "/", de->d_name);
		files[(*n)++] = p;
	}
	closedir(d);
	if (*n == first)
		return cli_usage_error("run: %s: no *.scn scenario in this directory", arg);
	qsort(files + first, *n - first, sizeof *files, by_name);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One scenario with the shared options, quiet; e filled. */
static void run_one(struct entry *e, int nopt, char **opts)
{
	char **argv = calloc((size_t)nopt + 4, sizeof *argv);
	struct runcfg *c = calloc(1, sizeof *c);
	struct run_result *res = calloc(1, sizeof *res);
	struct diag d = { 0 };
	double t0 = now_s();
	if (!argv || !c || !res) {
		e->code = CLI_EXIT_USAGE;
		snprintf(e->verdict, sizeof e->verdict, "out of memory");
		goto out;
	}
	int n = 0;
	argv[n++] = "run";
	argv[n++] = e->file;
	for (int i = 0; i < nopt; i++)
		argv[n++] = opts[i];
	runcfg_defaults(c);
	if (run_parse_args(c, &d, n, argv, usage) || run_migrate(c, res, &d)) {
		e->code = CLI_EXIT_USAGE;
		snprintf(e->verdict, sizeof e->verdict, "bad input");
		snprintf(e->detail, sizeof e->detail, "%s", d.msg[0] ? d.msg : "bad input");
		goto out;
	}
	out_file_abort(&res->json);
	const struct run_outcome *o = &res->out;
	e->code = o->pass ? CLI_EXIT_OK : CLI_EXIT_FAIL;
	e->cause = o->completed ? 0 : o->cause;
	snprintf(e->verdict, sizeof e->verdict, "verdict=%s status=%s cause=%s side=%s", o->pass ? "pass" : "fail",
		 o->completed ? "completed" : "failed", o->completed ? "NONE" : cause_name(o->cause),
		 run_side_name(o->side));
	snprintf(e->detail, sizeof e->detail, "%s%s%s", o->detail ? o->detail : "",
		 o->pass ? "" : "; expected: ", o->pass ? "" : c->expect_text);
out:
	e->secs = now_s() - t0;
	free(res);
	free(c);
	free(argv);
}

/* Entry e as a CI case (cli/report.h); out is its system-out line's buffer. */
static void as_case(const struct entry *e, struct report_case *rc, char *out, size_t out_n)
{
	const char *what = e->code == CLI_EXIT_USAGE ? e->detail : e->verdict;
	snprintf(out, out_n, "migbed: %s", what);
	*rc = (struct report_case){ .classname = "migbed.run", .name = e->name, .file = e->file,
				    .result = e->code == CLI_EXIT_OK ? REPORT_PASS
					      : e->code == CLI_EXIT_FAIL ? REPORT_FAIL : REPORT_ERROR,
				    .out = out, .secs = e->secs,
				    .fields = { { "file", e->file }, { "result", what } } };
	if (e->code == CLI_EXIT_FAIL) {
		rc->type = e->cause ? cause_name(e->cause) : "NONE";
		rc->message = e->verdict;
		rc->text = e->detail;
	} else if (e->code == CLI_EXIT_USAGE) {
		rc->type = "bad input";
		rc->message = e->detail;
	}
}

static int write_junit(FILE *f, const struct entry *e, size_t n, double secs)
{
	struct report_junit j;
	char out[DIAG_MSG_MAX + 16];
	int rc = report_junit_begin(&j);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct report_case c;
		as_case(&e[i], &c, out, sizeof out);
		report_junit_case(&j, &c);
	}
	if (rc == 0)
		rc = report_junit_end(&j, f, "migbed run", secs);
	report_junit_free(&j);
	return rc;
}

/* One scenario a line. 0, or -EIO (a write error, or out of memory when !ferror(f)). */
static int write_json(FILE *f, const struct entry *e, size_t n, size_t pass, size_t fails, size_t errs)
{
	static const char *const result[] = { "pass", "fail", "error" };
	struct json_stream js;
	json_stream_open(&js, f, json_object(), "scenarios", "\n", ",\n", "");
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:o,s:o,s:s}", "name", json_of_str(e[i].name), "file", json_of_str(e[i].file),
				      "result", result[e[i].code]);
		if (e[i].code != CLI_EXIT_USAGE) {
			/* the verdict line's fields, each a value */
			char v[sizeof e[i].verdict], *save = NULL;
			snprintf(v, sizeof v, "%s", e[i].verdict);
			for (char *t = strtok_r(v, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
				char *eq = strchr(t, '=');
				if (!eq)
					continue;
				*eq = '\0';
				json_set(&o, t, json_of_str(eq + 1));
			}
		}
		json_set(&o, "detail", json_of_str(e[i].detail));
		json_set(&o, "seconds", json_of_fixed(e[i].secs, 3));
		json_stream_item(&js, o);
	}
	return json_stream_close(&js, "\n",
				 json_pack("{s:{s:o,s:o,s:o,s:o}}", "summary", "scenarios", json_of_u64(n), "passed",
					   json_of_u64(pass), "failed", json_of_u64(fails), "errors", json_of_u64(errs)));
}

bool run_suite_wanted(int argc, char **argv)
{
	int pos = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tap") || !strcmp(argv[i], "--junit") || !strncmp(argv[i], "--junit=", 8))
			return true;
		if (run_args_skip_option(argc, argv, &i) || argv[i][0] == '-')
			continue;
		struct stat st;
		if (!stat(argv[i], &st) && S_ISDIR(st.st_mode))
			return true;
		pos++;
	}
	return pos > 1;
}

int run_suite(int argc, char **argv)
{
	static const char *const per_run[] = { "events", "timeline", "bundle", "pause-at", "fault-counts" };
	char **files = calloc(SUITE_MAX, sizeof *files);
	char **opts = calloc((size_t)argc + 1, sizeof *opts);
	struct entry *e = NULL;
	const char *junit = NULL, *json = NULL;
	bool tap = false;
	int nopt = 0, code = CLI_EXIT_USAGE;
	size_t n = 0;
	struct out_file jx = { 0 }, jj = { 0 };
	struct diag d = { 0 };
	if (!files || !opts) {
		code = cli_usage_error("run: out of memory");
		goto out;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			code = CLI_EXIT_OK;
			goto out;
		}
		if (!strcmp(a, "--tap")) {
			tap = true;
		} else if (!strcmp(a, "--junit") || !strcmp(a, "--json")) {
			if (i + 1 >= argc) {
				code = cli_usage_error("run: %s needs a FILE", a);
				goto out;
			}
			*(a[3] == 'u' ? &junit : &json) = argv[++i];
		} else if (!strncmp(a, "--junit=", 8) || !strncmp(a, "--json=", 7)) {
			*(a[3] == 'u' ? &junit : &json) = strchr(a, '=') + 1;
		} else if (a[0] == '-' && a[1] == '-') {
			const char *k = a + 2;
			size_t kl = strcspn(k, "=");
			for (size_t p = 0; p < sizeof per_run / sizeof *per_run; p++)
				if (strlen(per_run[p]) == kl && !strncmp(k, per_run[p], kl)) {
					code = cli_usage_error("run: --%s names one run's file: with several scenarios it is "
							       "refused (run that scenario alone; --junit, --tap and --json "
							       "report the suite)", per_run[p]);
					goto out;
				}
			opts[nopt++] = argv[i];
			if (!strchr(k, '=') && !runcfg_is_flag(k)) {
				if (i + 1 >= argc) {
					code = cli_usage_error("run: %s needs a value", a);
					goto out;
				}
				opts[nopt++] = argv[++i];
			}
		} else if (a[0] == '-') {
			code = cli_usage_error("run: unknown option '%s' (see --help)", a);
			goto out;
		} else if (expand(a, files, &n)) {
			goto out;
		}
	}
	if (!n) {
		code = cli_usage_error("run: --junit/--tap need scenarios: DIR or SCENARIO...");
		goto out;
	}
	/* with --json -, standard output is the JSON alone: the lines go to standard error */
	FILE *lf = json && !strcmp(json, "-") ? stderr : stdout;
	if (tap && lf == stderr) {
		code = cli_usage_error("run: --tap and --json - would both write to standard output: give --json a file");
		goto out;
	}
	if ((junit && out_file_open(&jx, junit, &d)) || (json && out_file_open(&jj, json, &d))) {
		code = cli_usage_error("run: %s", d.msg);
		goto out;
	}
	bool quiet = false;
	for (int i = 0; i < nopt; i++)
		quiet |= !strcmp(opts[i], "--quiet");
	opts[nopt++] = "--quiet";
	e = calloc(n, sizeof *e);
	if (!e) {
		code = cli_usage_error("run: out of memory");
		goto out;
	}
	size_t pass = 0, fails = 0, errs = 0;
	double t0 = now_s();
	struct progress pr;
	progress_init(&pr, quiet);
	if (tap)
		report_tap_head(stdout, n);
	for (size_t i = 0; i < n; i++) {
		e[i].file = files[i];
		const char *slash = strrchr(files[i], '/');
		snprintf(e[i].name, sizeof e[i].name, "%s", slash ? slash + 1 : files[i]);
		size_t nl = strlen(e[i].name);
		if (nl > 4 && !strcmp(e[i].name + nl - 4, ".scn"))
			e[i].name[nl - 4] = '\0';
		fflush(stdout);
		if (progress_due(&pr))
			progress_show(&pr, "run: scenario %zu/%zu %s: %zu passed, %zu failed, %zu could not run", i + 1, n,
				      e[i].name, pass, fails, errs);
		run_one(&e[i], nopt, opts);
		progress_clear(&pr, tap ? stdout : lf);   /* the scenario's line, where the status line was */
		if (e[i].code == CLI_EXIT_OK)
			pass++;
		else if (e[i].code == CLI_EXIT_FAIL)
			fails++;
		else
			errs++;
		const char *what = e[i].code == CLI_EXIT_USAGE ? e[i].detail : e[i].verdict;
		if (tap) {
			struct report_case c;
			char out[DIAG_MSG_MAX + 16];
			as_case(&e[i], &c, out, sizeof out);
			report_tap_case(stdout, i + 1, &c);
		} else {
			fprintf(lf, "%-5s %s: %s\n", e[i].code == CLI_EXIT_OK ? "ok" : e[i].code == CLI_EXIT_FAIL ? "FAIL" : "ERROR",
				e[i].name, what);
		}
	}
	progress_end(&pr);
	double secs = now_s() - t0;
	fprintf(lf, "%s%zu scenarios: %zu passed, %zu failed, %zu could not run (%.1f s)\n", tap ? "# " : "migbed: run: ",
		n, pass, fails, errs, secs);
	if (jx.f && write_junit(jx.f, e, n, secs)) {
		code = cli_usage_error("run: --junit %s: out of memory", junit);
		goto out;
	}
	if (jj.f && write_json(jj.f, e, n, pass, fails, errs) && !ferror(jj.f)) {
		code = cli_usage_error("run: --json %s: out of memory", jj.path);
		goto out;
	}
	if ((jx.f && out_file_commit(&jx, &d)) || (jj.f && out_file_commit(&jj, &d))) {
		code = cli_usage_error("run: %s", d.msg);
		goto out;
	}
	code = errs ? CLI_EXIT_USAGE : fails ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
	out_file_abort(&jx);
	out_file_abort(&jj);
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(e);
	free(files);
	free(opts);
	return code;
}
