/* SPDX-License-Identifier: MIT */
/* runcfg - the one option table of migbed's commands (run, source, dest, trace gen,
 * torture). Each row is one key: name, type, bounds, default, unit, help, the commands that
 * take it and where its value goes. Every key of every command is parsed by one generic
 * setter that enforces the row's type and bounds and names them in the error; --help of each
 * command and README's key table (`migbed options --markdown`) are printed from the rows.
 *
 * A run's keys (scenario `key = value` lines and `--key value`) go into struct runcfg
 * (run/config.h); the keys of one command only (source --connect, dest --listen, trace gen
 * --output, torture --max-runs, ...) go into struct opts_extra. Command-line options
 * override the scenario. No value means "unset": what was given is recorded per row. */
#ifndef MIGBED_CLI_RUNCFG_H
#define MIGBED_CLI_RUNCFG_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "run/config.h"
#include "run/sweep.h"
#include "sim/diag.h"

/* The commands, as bits of a row's command column. */
enum opts_cmd {
	OPTS_RUN = 1, OPTS_SOURCE = 2, OPTS_DEST = 4, OPTS_TRACE_GEN = 8, OPTS_TORTURE = 16, OPTS_SWEEP = 32,
	OPTS_SWARM = 64,
};

/* The keys that are not a run's: one command's own. An empty string or a 0 here is "not
 * given" (never a valid value: the rows' bounds exclude it). */
struct opts_extra {
	char connect[256];             /* source: IP:PORT[@SRC_IP] */
	char dump_mem[1024];           /* source: FILE */
	char listen[256];              /* dest: IP:PORT */
	char ready_file[1024];         /* dest */
	uint64_t ready_fd;             /* dest, 3..1023 */
	uint64_t accept_timeout_ms;    /* dest */
	char output[1024];             /* trace gen: -o FILE */
	uint64_t max_runs, watchdog_ms, jobs, shard_k, shard_n;   /* torture */
	char json[1024], sites[512];   /* torture; json and shard also sweep's */
	struct sweep_values sweep[SWEEP_AXES];   /* sweep: each axis's list (n = 0: not given) */
	char csv[1024], plot[1024];    /* sweep */
	char bundles[1024];            /* torture, swarm: where failing runs' bundles go */
	uint64_t seed_lo, seed_hi;     /* swarm --seeds A..B */
	uint64_t runs;                 /* swarm --runs N: seeds 1..N (0: not given) */
	uint64_t time_budget_s;        /* swarm: stop starting runs after this (0: none) */
	bool check_determinism;        /* swarm */
	char junit[1024];              /* torture, swarm: --junit FILE ("": none) */
	bool tap;                      /* torture, swarm: --tap */
	uint64_t shrink_max_runs;      /* swarm: each finding's shrink, candidate runs at most (0: none) */
	bool given[RUNCFG_MAX_KEYS];
};

/* Every field of x its table default. */
void opts_extra_defaults(struct opts_extra *x);

/* Apply one key (without "--") of command cmd (one OPTS_* bit): a run's key into c, a
 * command's own into x (may be NULL when cmd has none). `where` prefixes errors ("file:line"
 * or "--key"). 0, or -EINVAL with d set. */
int opts_set(unsigned cmd, struct runcfg *c, struct opts_extra *x, const char *key, const char *value,
	     const char *where, struct diag *d);
/* Take cmd's own keys (those of x) out of argv (`--key V`, `--key=V`), setting them; a run's
 * keys, their values, positional arguments and unknown options stay, in order, for
 * run_parse_args. 0, or -EINVAL with d set. */
int opts_take_extra(unsigned cmd, struct opts_extra *x, int *argc, char **argv, struct diag *d);
/* A whole command line of cmd (no scenario: trace gen): `--key V`, `--key=V`, a row's short
 * form (-o FILE), -h/--help. 1: help wanted; 0 ok; -EINVAL with d set. */
int opts_parse_argv(unsigned cmd, struct runcfg *c, struct opts_extra *x, int argc, char **argv,
		    struct diag *d);
/* The keys cmd requires (trace gen --pattern, source --connect, ...) were given: 0, or
 * -EINVAL with d naming the first missing one. */
int opts_check_required(unsigned cmd, const struct runcfg *c, const struct opts_extra *x, struct diag *d);
/* The generator keys: each given one applies to the pattern (workers: rand-set, ...);
 * worker-bytes not given takes tgen_default_worker_bytes; the seed is the run's; then
 * tgen_validate. 0, or -EINVAL with d set. */
int opts_finish_gen(struct runcfg *c, struct diag *d);
/* `migbed trace gen` etc.: the command's name in messages. */
const char *opts_cmd_name(unsigned cmd);
/* The key lines of cmd's --help (its required keys, its own, then a run's). */
void opts_print_help(FILE *f, unsigned cmd);

/* A run's key (cmd run): runcfg_set = opts_set(OPTS_RUN, c, NULL, ...). */
int runcfg_set(struct runcfg *c, const char *key, const char *value, const char *where, struct diag *d);
/* Is key a flag that takes no value on the command line (pin-all, quiet)? */
bool runcfg_is_flag(const char *key);
bool runcfg_known(const char *key);
/* Was a run's key given (scenario or option)? */
bool runcfg_given(const struct runcfg *c, const char *key);
int runcfg_load_scenario(struct runcfg *c, const char *path, struct diag *d);
/* Cross-option validation after everything is applied; the derived defaults. */
int runcfg_finish(struct runcfg *c, struct diag *d);
/* The help text for the keys of `migbed run` (opts_print_help(f, OPTS_RUN)). */
void runcfg_print_keys(FILE *f);
/* The whole table as markdown: README's key table (`migbed options --markdown`). */
void runcfg_print_markdown(FILE *f);
/* c as a scenario file: a comment naming what is left out, then one `key = value` line per
 * run key that applies (the generator keys of c's pattern, without a trace), defaults
 * resolved, every fault rule in order. Output keys (json, events, quiet, pause-at,
 * fault-counts, bundle) and the umbrella keys protocol and impl are left out. c is a config
 * after runcfg_finish; runcfg_load_scenario and runcfg_finish of the text give an equal config
 * (but the scenario path and which keys were given). */
void runcfg_write_scenario(FILE *f, const struct runcfg *c);
/* The generator keys of c as `migbed trace gen` options (" --pattern rand-set ... --seed N"):
 * the command that writes c's generated trace, byte for byte. */
void runcfg_write_gen_args(FILE *f, const struct runcfg *c);
/* The table's rows, for tests: key i's name (NULL past the end), its commands (OPTS_* bits);
 * its default as shown into buf, true when giving that text (up to a ':' that starts a
 * comment) leaves the defaults unchanged: it is the real one. */
size_t runcfg_n_keys(void);
const char *runcfg_key_name(size_t i);
/* A stress-ng option refused by name (no meaning for a generated trace): why, else NULL. */
const char *runcfg_foreign_why(const char *name);
/* The first other spelling accepted for the key NAME ("chunk-size" -> "x-rdma-chunk-size",
 * "workers" -> "vm"), or NULL. */
const char *runcfg_alias_of(const char *name);
unsigned runcfg_key_cmds(size_t i);
bool runcfg_key_default(size_t i, char *buf, size_t n);

#endif
