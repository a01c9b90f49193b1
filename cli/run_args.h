/* SPDX-License-Identifier: MIT */
/* run_args - the command line of `migbed run`, `source`, `dest` and `torture` into a run's
 * config: the scenario (positional) first, then the --key VALUE options over it. */
#ifndef MIGBED_CLI_RUN_ARGS_H
#define MIGBED_CLI_RUN_ARGS_H
#include <stdbool.h>
#include <stdio.h>
#include "cli/runcfg.h"

/* argv[*i] is a --key option: true, and *i moved onto its value when it takes one (as
 * --key VALUE, not --key=VALUE or a flag). */
bool run_args_skip_option(int argc, char **argv, int *i);

/* 1: --help was printed (usage); 0 ok; <0 bad input (d set). */
int run_parse_args(struct runcfg *c, struct diag *d, int argc, char **argv, void (*usage)(FILE *));

#endif
