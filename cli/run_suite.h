/* SPDX-License-Identifier: MIT */
/* run_suite - `migbed run DIR|SCENARIO... [--junit FILE] [--tap] [--json FILE]`: many
 * scenarios in one command, for CI systems (cli/run_suite.c). */
#ifndef MIGBED_CLI_RUN_SUITE_H
#define MIGBED_CLI_RUN_SUITE_H
#include <stdbool.h>

/* The command line asks for many scenarios: more than one, a directory, --junit or --tap. */
bool run_suite_wanted(int argc, char **argv);
/* The exit status (0 all met their expectation, 1 some did not, 2 bad usage or a scenario
 * that could not run). */
int run_suite(int argc, char **argv);

#endif
