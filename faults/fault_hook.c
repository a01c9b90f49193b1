/* SPDX-License-Identifier: MIT */
/* fault_hook - a fault plan behind the seam's fault hook (see fault_hook.h). */
#include "faults/fault_hook.h"

#include <assert.h>

_Static_assert((int)FAULT_SIDE_SRC == (int)VOCAB_SIDE_SRC && (int)FAULT_SIDE_DST == (int)VOCAB_SIDE_DST &&
	       FAULT_SIDES == VOCAB_SIDE_COUNT, "a rule's sides are the seam's");
_Static_assert(FAULT_SPEC_MAX > HCA_FAULT_TEXT_MAX, "an action's text fits a rule");

static bool plan_check(void *ctx, const enum fault_site *sites, size_t n_sites, enum vocab_side side,
		       uint64_t now_ns, struct hca_fault_answer *a)
{
	struct fault_fire f;

	if (!fault_plan_check(ctx, sites, n_sites, (enum fault_side)side, now_ns, &f))
		return false;
	*a = (struct hca_fault_answer){ .action = f.action, .arg = f.arg, .delay_ns = f.delay_ns,
					.site = f.site, .call = f.call };
	fault_action_format(f.action, f.arg, f.delay_ns, a->text, sizeof a->text);
	return true;
}

struct hca_fault_hook fault_plan_hook(fault_plan *p)
{
	return (struct hca_fault_hook){ .check = p ? plan_check : NULL, .ctx = p };
}

void fault_plan_attach(hca_world *w, fault_plan *p)
{
	struct hca_fault_hook h = fault_plan_hook(p);
	hca_world_set_fault_hook(w, &h);
}
