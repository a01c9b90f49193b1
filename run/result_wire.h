/* SPDX-License-Identifier: MIT */
/* result_wire - the digest of a run that another process hands back: a `migbed torture` child
 * (forked without exec, run/torture.c) writes one fixed-size record holding a run_digest to its
 * pipe (under PIPE_BUF: read whole or not at all), so the parent classifies typed values, never
 * text. run_digest_of takes the fields the verdict needs from a run_result. */
#ifndef MIGBED_RUN_RESULT_WIRE_H
#define MIGBED_RUN_RESULT_WIRE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "vocab/cause.h"
#include "run/run.h"

struct run_digest {
	bool completed, verified;
	int cause;                    /* 0 when completed */
	char side[4];                 /* run_side_name (run/judge.h) of the run's side: "src", "dst", "-" */
	uint64_t fired;
	char detail[CAUSE_DETAIL_MAX];
};

void run_digest_of(const struct run_result *res, struct run_digest *out);

#endif
