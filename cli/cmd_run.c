/* SPDX-License-Identifier: MIT */
/* cmd_run - `migbed run`: the command line into a config, run_migrate (run/run.h: both
 * sides in this process, ending in a completed-and-verified migration or a named cause,
 * judged against the scenario's expectation), the result printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bundle.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "cli/run_suite.h"
#include "run/run.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed run [SCENARIO] [--key VALUE ...]\n"
		   "       migbed run DIR|SCENARIO... [--junit FILE] [--tap] [--json FILE] [--key VALUE ...]\n\n"
		   "Replay a page-dirtying trace through QEMU's RDMA migration protocol (source and\n"
		   "destination in this process) and verify the destination's memory. Without a trace\n"
		   "a small rand-set one is generated. A SCENARIO is a file of `key = value` lines\n"
		   "with the same keys as the options below; options override it.\n"
		   "On --backend verbs the destination listens on --dst-addr (default %s) and the\n"
		   "source connects from --src-addr (default %s, i.e. rxe1 -> rxe0 across the wire).\n\n"
		   "options:\n", RUN_VERBS_DST, RUN_VERBS_SRC);
	runcfg_print_keys(f);
	fprintf(f, "  %-28s %s\n", "-h, --help", "this text");
	fprintf(f, "\nIt prints a summary like HMP `info migrate`, then one line\n"
		   "  migbed: verdict=pass|fail status=completed|failed cause=NAME side=src|dst|-\n"
		   "With --json - the JSON result alone is on standard output, the summary and that line\n"
		   "on standard error.\n"
		   "exit status: 0 the run met its expectation, 1 it did not, 2 bad usage or input.\n"
		   "\nMany scenarios (a DIR of *.scn, several SCENARIOs, --junit or --tap): a line per\n"
		   "scenario and a summary; `migbed run DIR --help` says more.\n");
}

static int run_with_progress(const struct runcfg *c, struct run_result *res, struct migration_progress *pr,
			     struct diag *d)
{
	int rc = run_migrate(c, res, d);
	progress_end(&pr->p);
	return rc;
}

int cmd_run(int argc, char **argv)
{
	struct migration_progress pr;
	struct runcfg *c = calloc(1, sizeof *c);
	struct run_result *res = calloc(1, sizeof *res);
	struct diag d = { 0 };
	struct bundle_run br = { 0 };
	int code = CLI_EXIT_USAGE;
	if (run_suite_wanted(argc, argv)) {
		free(res);
		free(c);
		return run_suite(argc, argv);
	}
	if (!c || !res) {
		code = cli_usage_error("run: out of memory");
		goto out;
	}
	runcfg_defaults(c);
	int rc = run_parse_args(c, &d, argc, argv, usage);
	if (rc == 0) {
		progress_migration(&pr, "run", c, NULL);
	}
	if (rc > 0)
		code = CLI_EXIT_OK;
	else if (rc || bundle_run_begin(&br, c, &d) || run_with_progress(c, res, &pr, &d)) {
		fprintf(stderr, "migbed: run: %s\n", d.msg[0] ? d.msg : "bad input");
		bundle_run_abort(&br);
	} else {
		int bundle_rc = bundle_run_end(&br, c, res, OPTS_RUN, NULL);   /* before the verdict line */
		code = run_report_result(c, res, &d);
		if (bundle_rc)
			code = CLI_EXIT_USAGE;
	}
out:
	free(res);
	free(c);
	return code;
}
