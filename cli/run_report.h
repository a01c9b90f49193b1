/* run_report - judging a run's outcome against its expectation, and reporting it: the
 * human summary, the final verdict line, the JSON result file. */
#ifndef MIGBED_CLI_RUN_REPORT_H
#define MIGBED_CLI_RUN_REPORT_H
#include <stdbool.h>
#include "cli/runcfg.h"
#include "faults/cause.h"
#include "sim/metrics.h"

struct run_outcome {
	struct cause_ctx src, dst;     /* each side's own first cause (0 = none) */
	bool src_completed, dst_completed, verified;
	/* judged */
	bool completed;
	int cause;                     /* the run's cause: the side that failed first */
	const char *side;              /* "src", "dst", "-" */
	const char *detail;
	bool pass;
	bool dst_unseen;               /* the destination is a real QEMU: its verdict is not visible here */
};

/* Decide status, the first-failing side and the verdict. */
void run_outcome_judge(struct run_outcome *o, const struct runcfg *c);
/* Print (unless quiet) and write --json. Returns the exit code (2 if the JSON file could
 * not be written; d set). */
int run_report(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
	       const char *backend, struct diag *d);
/* A JSON string literal of s (quotes and escapes). */
void json_string(FILE *f, const char *s);

#endif
