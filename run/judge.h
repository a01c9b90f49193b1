/* SPDX-License-Identifier: MIT */
/* judge - the outcome of a run, decided from what each side saw, against the expectation.
 *   status      completed = both sides completed and the destination's memory verified
 *   cause/side  the side that failed first: a cause of its own beats a consequence of the
 *               peer's failure (PEER_ERROR, PEER_DISCONNECTED, QP_ERROR, CONNECT_REJECTED,
 *               DEST_INCOMPLETE, QEMU_STREAM_TRUNCATED: run_cause_secondary), any consequence
 *               beats a bare disconnect, then the earlier virtual time wins (src on a tie)
 *   verdict     pass = the status/cause is one the config expects and every fault rule
 *               fired as expect-fired says (where this process can see the rule's side)
 * A destination-only process passes a failed:... expectation whenever it failed: it only
 * has to notice the source's failure. Pure functions: no I/O, no clock. */
#ifndef MIGBED_RUN_JUDGE_H
#define MIGBED_RUN_JUDGE_H
#include <stdbool.h>
#include "vocab/cause.h"
#include "faults/fault.h"
#include "run/config.h"

/* The sides one process plays. */
enum run_role { ROLE_BOTH, ROLE_SRC, ROLE_DST };

struct run_outcome {
	struct cause_ctx src, dst;     /* each side's own first cause (0 = none) */
	bool src_completed, dst_completed, verified;
	/* the source oracle (runcfg check_source, both sides here): the source's memory after
	 * the run against a copy that got the guest's writes alone */
	bool src_checked, src_intact;
	/* the leak oracle (a model run with both sides here): the RDMA objects (endpoints,
	 * listeners, memory regions) still alive once both sides' protocol objects were freed,
	 * before the world's own teardown releases them (hca_world_live_objects) */
	bool objects_checked;
	uint64_t live_objects;
	/* the multi-block oracle (with the leak oracle): RDMA WRITEs the destination's guest got
	 * outside its RAM blocks, or across a block's edge (hca_world_stray_writes) */
	uint64_t stray_writes;
	/* the continuing source (runcfg check_continue): after a failure with fired faults, the
	 * same source guest, still running, migrated again with the faults healed: how that ended
	 * (cont_cause/cont_side as cause/side), and whether its memory was still the guest's */
	bool cont_checked, cont_completed, cont_src_intact;
	int cont_cause, cont_side;
	/* judged */
	bool completed;
	int cause;                     /* the run's cause: the side that failed first */
	int side;                      /* that side (enum vocab_side); RUN_SIDE_NONE when completed */
	const char *detail;
	bool pass;
	bool dst_unseen;               /* the destination is a real QEMU: its verdict is not visible here */
	/* the fault rules (c->faults, in order), from run_outcome_faults */
	int n_faults;
	struct run_fault {
		struct fault_rule_stats st;
		bool judged;           /* expect-fired applies and can be checked in this process */
		bool met;              /* judged: the count is the expected one */
	} faults[RUNCFG_MAX_FAULTS];
};

/* A run's side, printed: a side's token ("src", "dst"), or "-" for RUN_SIDE_NONE (no side
 * failed). run_side_lookup parses that text back: 0 and *side, or -1. */
#define RUN_SIDE_NONE (-1)
const char *run_side_name(int side);
int run_side_lookup(const char *name, int *side);

/* Is cause a consequence of the peer's failure rather than a failure of its own? */
bool run_cause_secondary(int cause);
/* Decide status, the first-failing side and the verdict (from src, dst, *_completed, verified). */
void run_outcome_judge(struct run_outcome *o, const struct runcfg *c, enum run_role role);
/* expect-fired for fault rule i (0-based), or NULL when nothing is expected of it. */
const struct runcfg_fired *run_expected_fired(const struct runcfg *c, int i);
/* Take each fault rule's firings from the plan (before it is freed) and judge them against
 * expect-fired: a count that is not the expected one fails the verdict. A rule for a side
 * this process does not play (or for either side in a one-side process) is reported but
 * not judged. After run_outcome_judge. */
void run_outcome_faults(struct run_outcome *o, const struct runcfg *c, const fault_plan *p, enum run_role role);

#endif
