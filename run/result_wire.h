/* result_wire - what a run in another process (a `migbed torture` child, forked without
 * exec) hands back through a pipe: the typed digest of its run_result, as a small versioned
 * text record, one field a line, in this order:
 *   migbed-run-result 1
 *   status completed|failed
 *   verified true|false
 *   cause NAME            cause_name() of the run's cause ("NONE" when it completed)
 *   side src|dst|-
 *   fired N               the run's fault injections (run_result.faults_injected)
 *   detail TEXT           the rest of the line; '\' and a newline escaped as \\ and \n
 *   end
 * run_digest_decode takes exactly that (the version, every line, nothing after "end") and
 * rejects anything else: a truncated record (a child killed mid-write) is no result. */
#ifndef MIGBED_RUN_RESULT_WIRE_H
#define MIGBED_RUN_RESULT_WIRE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vocab/cause.h"
#include "run/run.h"

#define RUN_WIRE_VERSION 1
#define RUN_WIRE_MAX 1024             /* an encoded record never exceeds this (under PIPE_BUF) */

struct run_digest {
	bool completed, verified;
	int cause;                    /* 0 when completed */
	char side[4];                 /* as the record prints it: run_side_name (run/judge.h) */
	uint64_t fired;
	char detail[CAUSE_DETAIL_MAX];
};

void run_digest_of(const struct run_result *res, struct run_digest *out);
/* The record into buf; its length, or -ENOSPC. */
int run_digest_encode(const struct run_digest *dg, char *buf, size_t cap);
/* 0, or -EINVAL for anything that is not exactly one record of this version. */
int run_digest_decode(const char *buf, size_t n, struct run_digest *out);

#endif
