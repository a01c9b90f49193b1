/* SPDX-License-Identifier: MIT */
/* swarm_verbs - `migbed swarm --backend verbs`: the swarm on real soft-RoCE (docs/swarm.md "On
 * verbs"). The plans are run/swarm.h's verbs plans (swarm_expand_on); this module adds what
 * the verbs lane checks around a run (bats/verbs/verbs.bats):
 *   - the leak oracle: after every run, no fd the run opened is still open, and `rdma resource
 *     show qp|mr|pd|cm_id` lists no object of this process (the run released every QP, MR, PD
 *     and CM id it created); otherwise a LEAK finding naming what was left;
 *   - an rxe stall (TRANSPORT_RETRY_EXCEEDED that no fired fault explains: rxe under TCG
 *     sometimes stops acknowledging past RC's retry budget on a healthy wire) runs its seed
 *     once more, loudly ("# rxe stalled ..." on stderr), as the lane's tests do.
 * One swarm per process (the hooks keep their state here). */
#ifndef MIGBED_CLI_SWARM_VERBS_H
#define MIGBED_CLI_SWARM_VERBS_H
#include <stdint.h>
#include "run/swarm.h"
#include "sim/diag.h"

/* Can this host list RDMA resources (iproute2's `rdma -j resource show`)? 0, or -ENOSYS with
 * d saying what is missing (the swarm then refuses --backend verbs: exit 2). */
int swarm_verbs_probe(struct diag *d);

/* Make sc the verbs swarm's: its plans (wait-timeout-ms wait_ms), the leak hooks, the stall
 * retry. */
void swarm_verbs_attach(struct swarm_config *sc, uint64_t wait_ms);

#endif
