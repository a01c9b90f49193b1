/* SPDX-License-Identifier: MIT */
/* judge - a run's outcome against its expectation (see judge.h). */
#include "run/judge.h"

#include <stddef.h>
#include <string.h>

const char *run_side_name(int side)
{
	return side == RUN_SIDE_NONE ? "-" : vocab_side_token(side);
}

int run_side_lookup(const char *name, int *side)
{
	int s = vocab_side_lookup(name);
	if (s < 0 && strcmp(name, run_side_name(RUN_SIDE_NONE)) != 0)
		return -1;
	*side = s < 0 ? RUN_SIDE_NONE : s;
	return 0;
}

/* A consequence of the other side's failure: the cause table's KIND column (vocab/cause.h). */
bool run_cause_secondary(int cause)
{
	return cause_is_consequence(cause);
}

static bool src_first(const struct run_outcome *o)
{
	if (!o->dst.cause)
		return true;
	if (!o->src.cause)
		return false;
	bool ss = run_cause_secondary(o->src.cause), ds = run_cause_secondary(o->dst.cause);
	if (ss != ds)
		return ds;
	if (ss && (o->src.cause == CAUSE_PEER_DISCONNECTED) != (o->dst.cause == CAUSE_PEER_DISCONNECTED))
		return o->dst.cause == CAUSE_PEER_DISCONNECTED;   /* any consequence says more than a disconnect */
	return o->src.t_ns <= o->dst.t_ns;
}

void run_outcome_judge(struct run_outcome *o, const struct runcfg *c, enum run_role role)
{
	o->completed = o->src_completed && o->dst_completed && o->verified;
	if (o->completed) {
		o->cause = 0;
		o->side = RUN_SIDE_NONE;
		o->detail = "";
	} else if (src_first(o)) {
		o->cause = o->src.cause ? o->src.cause : CAUSE_INTERNAL;
		o->side = VOCAB_SIDE_SRC;
		o->detail = o->src.detail;
	} else {
		o->cause = o->dst.cause;
		o->side = VOCAB_SIDE_DST;
		o->detail = o->dst.detail;
	}
	if (c->expect_completed) {
		o->pass = o->completed;
		return;
	}
	o->pass = role == ROLE_DST && !o->completed;   /* the destination only has to notice the failure */
	for (int i = 0; !o->completed && i < c->n_expect; i++)
		if (c->expect_causes[i] == o->cause)
			o->pass = true;
}

const struct runcfg_fired *run_expected_fired(const struct runcfg *c, int i)
{
	if (c->expect_fired_all)
		return &c->expect_fired[0];
	return i < c->n_expect_fired ? &c->expect_fired[i] : NULL;
}

static bool side_here(enum fault_side side, enum run_role role)
{
	bool src_here = role != ROLE_DST, dst_here = role != ROLE_SRC;
	return side == FAULT_SIDE_SRC ? src_here : side == FAULT_SIDE_DST ? dst_here : src_here && dst_here;
}

void run_outcome_faults(struct run_outcome *o, const struct runcfg *c, const fault_plan *p, enum run_role role)
{
	o->n_faults = 0;
	for (int i = 0; p && i < c->n_faults && (size_t)i < fault_plan_n_rules(p); i++) {
		struct run_fault *rf = &o->faults[o->n_faults++];
		const struct runcfg_fired *want = run_expected_fired(c, i);
		*rf = (struct run_fault){ 0 };
		fault_plan_rule_stats(p, (size_t)i, &rf->st);
		rf->judged = want && side_here(fault_plan_rule(p, (size_t)i)->side, role);
		rf->met = !rf->judged || (want->more ? rf->st.fired > want->n : rf->st.fired == want->n);
		if (!rf->met)
			o->pass = false;
	}
}
