/* SPDX-License-Identifier: MIT */
/* bundle - a reproducer of a run that missed its expectation (issue 13): one directory, and
 * DIR.tar.zst beside it when the system tar writes zstd, holding
 *   scenario.scn  the effective config (runcfg_write_scenario): every key, defaults resolved,
 *                 the fault rules and the seed; a --trace / --dst-layout file copied beside it
 *                 (trace[.zst], dst-layout[.zst]) and named by a relative path
 *   events.log    the run's event log (none when the run's process crashed or hung)
 *   result.json   the run's JSON result, as `migbed run scenario.scn --json F` in DIR writes it
 *   build.txt     build-id (run_build_id), compiler, backend
 *   outcome.txt   command (run, source, dest), address (source, dest), how the process ended
 *                 (exit N, signal N, hang), the wall-clock bound of a replay
 *   README        what missed (expected, got) and the command that replays it
 * Written in DIR.tmp-XXXXXX beside DIR and renamed onto it when complete: never half-written.
 * Deterministic: the same run writes the same files (no dates, no wall times).
 * `migbed replay DIR` (cli/cmd_replay.c) reruns one with bundle_rerun and compares. */
#ifndef MIGBED_CLI_BUNDLE_H
#define MIGBED_CLI_BUNDLE_H
#include <stdbool.h>
#include <stdint.h>
#include "cli/runcfg.h"
#include "run/out_file.h"
#include "run/run.h"
#include "sim/diag.h"

#define BUNDLE_WATCHDOG_MS 600000u   /* a replay of a run bundle: killed after 10 min (a hang) */
#define BUNDLE_WATCHDOG_MS_MAX 86400000u   /* outcome.txt's watchdog-ms: at most a day */

enum bundle_end { BUNDLE_EXIT, BUNDLE_SIGNAL, BUNDLE_HANG };
struct bundle_outcome {
	enum bundle_end end;
	int code;                     /* the exit status or the signal */
};
/* "exit 1", "signal 9", "hang" */
void bundle_outcome_text(const struct bundle_outcome *oc, char *buf, size_t n);

struct bundle {
	char dir[1024];               /* as given */
	char tmp[1100];               /* being filled; "" when none */
	bool replace;                 /* an existing DIR is replaced (torture), else refused */
};

/* What a bundle's build.txt and outcome.txt say. */
struct bundle_meta {
	unsigned cmd;                 /* OPTS_RUN, OPTS_SOURCE or OPTS_DEST */
	char address[256];            /* source: --connect; dest: --listen; run: "" */
	struct bundle_outcome oc;
	uint64_t watchdog_ms;
	char build_id[256], compiler[256], backend[16];
};

/* Start DIR: refused (exit 2 material) when DIR or DIR.tar.zst exists and !replace, or its
 * folder cannot take it. 0, or -errno with d set. */
int bundle_begin(struct bundle *b, const char *dir, bool replace, struct diag *d);
/* dir/name into buf: 0, or -ENAMETOOLONG ("" in buf). */
int bundle_path_join(char *buf, size_t n, const char *dir, const char *name);
/* The path of file `name` in the bundle being written. */
void bundle_file(const struct bundle *b, const char *name, char *buf, size_t n);
/* scenario.scn of c (its --trace and --dst-layout copied in); *as_written: c as the bundle's
 * scenario gives it (scenario "scenario.scn", the copies' names), for result.json. */
int bundle_write_config(struct bundle *b, const struct runcfg *c, struct runcfg *as_written, struct diag *d);
/* build.txt, outcome.txt, README (expected: what was, NULL for c's expectation; got: what the
 * run did, one line each), then rename onto DIR
 * and write DIR.tar.zst (tar --zstd; when it cannot, *tar_ok false and only DIR is there). */
int bundle_commit(struct bundle *b, const struct bundle_meta *m, const struct runcfg *c, const char *expected,
		  const char *got, bool *tar_ok, struct diag *d);
/* result.json of a run of w (the config as the bundle's scenario gives it), as `migbed run
 * scenario.scn --json` writes it. 0 or -errno with d set. */
int bundle_write_result(struct bundle *b, const struct runcfg *w, const struct run_result *res, struct diag *d);
/* A text file `name` of the bundle (migbed shrink's shrink.txt). 0 or -errno with d set. */
int bundle_write_text(struct bundle *b, const char *name, const char *text, struct diag *d);
/* Remove what was written (the temporary folder). */
void bundle_abort(struct bundle *b);

/* Read DIR's build.txt and outcome.txt (and check scenario.scn is there). 0, or -EINVAL
 * with d = "DIR: not a bundle: ...". */
int bundle_read_meta(const char *dir, struct bundle_meta *m, struct diag *d);
/* "gcc 12.2.0" / "clang ...": the compiler of this build. */
const char *bundle_compiler(void);
/* This build's meta (build id, compiler) for the run of c. */
void bundle_meta_of(struct bundle_meta *m, unsigned cmd, const char *address, const struct runcfg *c);
/* Rerun the scenario.scn of folder dir as `migbed CMD scenario.scn --quiet --events
 * OUT/events.log --json OUT/result.json [--connect|--listen ADDR]` in a child process (cwd
 * dir; its output to OUT/output.txt), killed after m->watchdog_ms (a hang). out: absolute. */
int bundle_rerun(const char *dir, const char *out, const struct bundle_meta *m, struct bundle_outcome *oc,
		 struct diag *d);
/* Remove a folder of plain files (a bundle, a scratch folder). */
void bundle_rmdir(const char *dir);
/* path as one shell word for the commands migbed prints (replay BUNDLE, cd BUNDLE): as is when
 * it holds only [A-Za-z0-9_./+=:,@%-], else in single quotes ('\'' for a quote); "./" in front
 * of a relative path that starts with '-' (else an option). buf: at least 8 bytes; cut to fit. */
const char *bundle_shell_word(const char *path, char *buf, size_t n);

/* run, source, dest --bundle DIR: begin before the run (DIR checked; the event log goes into
 * the bundle, and to --events FILE too, opened here); end after it: the bundle written when
 * the verdict is fail, else removed. end returns 0, or -1 after printing why (exit 2). */
struct bundle_run {
	struct bundle b;
	struct out_file events;       /* the user's --events */
	bool on;
};
int bundle_run_begin(struct bundle_run *br, struct runcfg *c, struct diag *d);
int bundle_run_end(struct bundle_run *br, const struct runcfg *c, const struct run_result *res, unsigned cmd,
		   const char *address);
void bundle_run_abort(struct bundle_run *br);

#endif
