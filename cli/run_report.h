/* SPDX-License-Identifier: MIT */
/* run_report - reporting a run's outcome (judged by run/judge.h): the human summary, the
 * final verdict line, the JSON result file. */
#ifndef MIGBED_CLI_RUN_REPORT_H
#define MIGBED_CLI_RUN_REPORT_H
#include <stdbool.h>
#include <stdio.h>
#include "cli/runcfg.h"
#include "run/judge.h"
#include "run/out_file.h"
#include "run/run.h"
#include "sim/json.h"
#include "sim/metrics.h"

/* Print (unless quiet) and write the JSON result into json (opened by out_file_open; not
 * open: no JSON). Returns the exit code (2 if the JSON file could not be written; d set). */
int run_report(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
	       const char *backend, struct out_file *json, struct diag *d);
/* A run's result, reported: --pause-at's warning, run_report (res->json written and
 * committed, or aborted), the run's output errors. Returns the exit code; on 2 the message
 * ("migbed: ...") is printed. */
int run_report_result(const struct runcfg *c, struct run_result *res, struct diag *d);
/* The JSON result (what --json writes), a jansson value (sim/json.h; NULL: out of memory). */
struct json_t *run_report_doc(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
			      const char *backend);
/* It and a newline to f: 0, or -EIO (a write error: ferror(f); else out of memory, nothing
 * written, a message on stderr). */
int run_report_json(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
		    const char *backend, FILE *f);

#endif
