/* SPDX-License-Identifier: MIT */
/* fault_hook - transport/hca.h's fault hook, answered from a fault plan (faults/fault.h).
 *
 * The seam puts each fallible call to the hook (its sites, side, virtual time); the plan
 * counts it and its rules decide (fault_plan_check): the firing rule's action, argument,
 * delay, site and call number come back with the action's canonical text for the log
 * (fault_action_format). The hook keeps no state of its own: the plan is borrowed and must
 * outlive every world it is given to. Whoever builds the run (run/run.c) wires the two:
 *
 *   struct hca_fault_hook h = fault_plan_hook(plan);
 *   hca_world_set_fault_hook(w, &h);
 */
#ifndef MIGBED_FAULTS_FAULT_HOOK_H
#define MIGBED_FAULTS_FAULT_HOOK_H
#include "faults/fault.h"
#include "transport/hca.h"

/* The hook over p; p NULL: a hook that never fires and counts nothing (check NULL). */
struct hca_fault_hook fault_plan_hook(fault_plan *p);
/* Both lines above: w asks p from now on (NULL: nothing). */
void fault_plan_attach(hca_world *w, fault_plan *p);

#endif
