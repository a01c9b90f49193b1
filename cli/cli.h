/* SPDX-License-Identifier: MIT */
/* cli - the migbed command's subcommands. Each takes (argc, argv) with argv[0] = the
 * subcommand's own name and returns the process exit status:
 *   0  success (for run: the run met its expectation)
 *   1  the run did not meet its expectation / a check found defects of the *run*
 *   2  bad usage or bad input (file:line: problem on stderr), nothing written
 * Every subcommand answers --help on stdout with exit 0. */
#ifndef MIGBED_CLI_CLI_H
#define MIGBED_CLI_CLI_H
#include <stdbool.h>
#include <stdio.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

int cmd_trace_gen(int argc, char **argv);
int cmd_trace_stat(int argc, char **argv);
int cmd_trace_check(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_source(int argc, char **argv);
int cmd_dest(int argc, char **argv);
int cmd_causes(int argc, char **argv);
int cmd_faults(int argc, char **argv);
int cmd_profiles(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_torture(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_swarm(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_shrink(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_hw(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* Print "migbed: <msg>" to stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The arguments of a listing command that takes only --json (and --help): -1 (go on) and
 * *json; or the exit status to return at once: CLI_EXIT_OK after --help (usage printed),
 * CLI_EXIT_USAGE for anything else (named). */
int cli_json_only_args(int argc, char **argv, const char *cmd, void (*usage)(FILE *), bool *json);
/* doc (a jansson value, sim/json.h; taken) and a newline on standard output, flushed:
 * CLI_EXIT_OK, or CLI_EXIT_USAGE after "migbed: CMD: ..." (NULL doc: out of memory; a write
 * error, e.g. a full disk, with errno's text). */
struct json_t;
int cli_print_json(const char *cmd, struct json_t *doc);

#endif
