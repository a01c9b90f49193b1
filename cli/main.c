/* SPDX-License-Identifier: MIT */
/* migbed - entry point: dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/runcfg.h"

#ifndef MIGBED_VERSION
#define MIGBED_VERSION "0.1.0"
#endif

static int cmd_options(int argc, char **argv);

struct subcmd {
	const char *name;
	const char *sub;        /* second word, or NULL */
	int (*fn)(int, char **);
	const char *summary;
};

static const struct subcmd subcmds[] = {
	{ "run", NULL, cmd_run, "replay a trace through a migration and verify it (the main job)" },
	{ "source", NULL, cmd_source, "the source side of a two-process migration (--connect)" },
	{ "dest", NULL, cmd_dest, "the destination side of a two-process migration (--listen)" },
	{ "trace", "gen", cmd_trace_gen, "generate a synthetic page-dirtying trace" },
	{ "trace", "stat", cmd_trace_stat, "summarise a trace (--json)" },
	{ "trace", "check", cmd_trace_check, "validate a trace, reporting every defect" },
	{ "causes", NULL, cmd_causes, "list the named failure causes (--json)" },
	{ "faults", NULL, cmd_faults, "list the fault sites and actions a --fault rule can name (--json)" },
	{ "profiles", NULL, cmd_profiles, "list the peers a side can play: migbed and QEMU versions (--json)" },
	{ "explain", NULL, cmd_explain, "name the causes QEMU logs fit, with the lines and a reproducing scenario" },
	{ "torture", NULL, cmd_torture, "fail every fallible call once; each run must end properly" },
	{ "sweep", NULL, cmd_sweep, "one run per chunk size (pin-all, guest, ...): the table, --json, --csv, --plot" },
	{ "swarm", NULL, cmd_swarm, "many seeded random configurations and faults, each run judged by oracles" },
	{ "replay", NULL, cmd_replay, "rerun a reproducer bundle (--bundle DIR): did it reproduce?" },
	{ "shrink", NULL, cmd_shrink, "reduce a reproducer bundle by delta debugging while it fails the same way" },
	{ "record", NULL, cmd_record, "record a real process's page-dirtying as a trace (soft-dirty bits)" },
	{ "timeline", NULL, cmd_timeline, "an event log (run --events) as a Chrome/Perfetto trace to look at" },
	{ "hw", NULL, cmd_hw, "hardware profiles of the cost model: list, show NAME, keys (docs/model.md)" },
	{ "calibrate", NULL, cmd_calibrate, "fit hardware-profile keys to measured runs (bounded Nelder-Mead on the model)" },
	{ "options", NULL, cmd_options, "print the one option table of every command (--markdown)" },
};
#define N_SUBCMDS (sizeof subcmds / sizeof subcmds[0])

/* migbed options [--markdown]: the one option table, as --help shows it or as README's table. */
static int cmd_options(int argc, char **argv)
{
	if (argc == 1) {
		runcfg_print_keys(stdout);
		return CLI_EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "--markdown")) {
		runcfg_print_markdown(stdout);
		return CLI_EXIT_OK;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: migbed options [--markdown]\n"
		       "  print the keys of migbed run (--markdown: every command's, README's key table)\n");
		return CLI_EXIT_OK;
	}
	return cli_usage_error("options: unknown argument '%s' (see migbed options --help)", argv[1]);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed <command> [options]   (migbed <command> --help for details)\n\n"
		   "A deterministic simulation and fault-injection test bed for QEMU's RDMA live\n"
		   "migration, with a simulated HCA (model) and a real one (verbs).\n\ncommands:\n");
	for (size_t i = 0; i < N_SUBCMDS; i++) {
		char name[32];
		snprintf(name, sizeof name, "%s%s%s", subcmds[i].name, subcmds[i].sub ? " " : "",
			 subcmds[i].sub ? subcmds[i].sub : "");
		fprintf(f, "  %-14s %s\n", name, subcmds[i].summary);
	}
	fprintf(f, "\noptions:\n  %-14s %s\n  %-14s %s\n", "--help, -h", "this text",
		"--version", "print migbed's version (\"migbed " MIGBED_VERSION "\")");
	fprintf(f, "\nexit status: 0 success, 1 the run failed its expectation, 2 bad usage or input\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("migbed %s\n", MIGBED_VERSION);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < N_SUBCMDS; i++) {
		if (strcmp(argv[1], subcmds[i].name) != 0)
			continue;
		if (!subcmds[i].sub)
			return subcmds[i].fn(argc - 1, argv + 1);
		if (argc >= 3 && !strcmp(argv[2], subcmds[i].sub))
			return subcmds[i].fn(argc - 2, argv + 2);
	}
	if (argc >= 2 && !strcmp(argv[1], "trace")) {
		if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			printf("usage: migbed trace gen|stat|check ...\n");
			return CLI_EXIT_OK;
		}
		return cli_usage_error("trace: expected gen, stat or check (see migbed --help)");
	}
	return cli_usage_error("unknown command '%s' (see migbed --help)", argv[1]);
}
