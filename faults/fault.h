/* SPDX-License-Identifier: MIT */
/* fault - fault plans: which calls at the HCA seam fail, when, and how (docs/faults.md).
 *
 * A plan is a list of rules, one per spec string:
 *
 *   SITE[@SIDE] [TRIGGER ...] -> ACTION          e.g.  reg_mr@dst #3 -> errno(ENOMEM)
 *
 * The seam's front end (transport/hca.c) asks its fault hook at every fallible call
 * (faults/fault_hook.h answers it from a plan): it names the call's sites, most specific
 * first (a READY SEND is msg.ready, post_send.send and post_send), and its side. The plan
 * counts the call under each site and side (the counts drive `migbed torture`), then lets
 * the rules that match decide, in plan order; the first rule whose trigger fires is the one
 * injection of that call (a later rule due on the same call is shadowed: the call still
 * uses up its turn). Triggers are pure arithmetic on the
 * rule's own count of matching calls, the virtual time and a PRNG stream derived from the
 * run seed and the rule's index, so a run is a pure function of (inputs, seed, plan).
 *
 * Parsing reports the 1-based column of the first error. Nothing here reads the wall clock. */
#ifndef MIGBED_FAULTS_FAULT_H
#define MIGBED_FAULTS_FAULT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "vocab/vocab.h"

#define FAULT_SPEC_MAX 200          /* bytes of one rule's text, NUL included */
#define FAULT_RULES_MAX 32
#define FAULT_CM_EVENTS VOCAB_CM_EVENT_COUNT   /* cm.TOKEN sites, numbered as the CM events */
#define FAULT_MSG_TYPES VOCAB_MSG_TYPE_COUNT   /* msg.TOKEN sites, numbered as the message types */
#define FAULT_MAX_DELAY_NS (3600ull * 1000000000ull)

/* A rule's side: one of vocab/vocab.h's sides (same numbers), or FAULT_SIDE_ANY. */
enum fault_side {
#define X(NAME, tok, alias) FAULT_SIDE_##NAME = VOCAB_SIDE_##NAME,
	VOCAB_SIDE(X)
#undef X
	FAULT_SIDES = VOCAB_SIDE_COUNT,
	FAULT_SIDE_ANY = FAULT_SIDES
};

/* The sites (enum fault_site), actions (enum fault_action) and corruptions
 * (enum fault_corrupt) are vocab/vocab.h's VOCAB_FAULT_* tables. */

struct fault_rule {
	enum fault_site site;
	enum fault_side side;           /* FAULT_SIDE_ANY: both */
	uint64_t first;                 /* #N: the first matching call that may fire (1-based) */
	uint64_t every;                 /* %N: then every N-th (1 = each) */
	uint64_t after_ns;              /* >T: calls before this virtual time do not count */
	double probability;             /* ~P: 1.0 = always */
	uint64_t max_fires;             /* *K: 0 = unlimited */
	enum fault_action action;
	int arg;
	uint64_t delay_ns;
};

struct fault_parse_error {
	unsigned col;                   /* 1-based column in the spec */
	char msg[160];
};

/* What the seam must do for one call: the firing rule's action and where it came from. */
struct fault_fire {
	enum fault_action action;
	int arg;
	uint64_t delay_ns;
	enum fault_site site;           /* the rule's site (one of the call's sites) */
	uint64_t call;                  /* the call's number under (site, side), 1-based */
	size_t rule;                    /* index in the plan */
};

typedef struct fault_plan fault_plan;

/* Parse one rule. 0, or -EINVAL with *err set (err may be NULL). */
int fault_rule_parse(const char *spec, struct fault_rule *out, struct fault_parse_error *err);
/* The canonical text of a rule (parses back to the same rule). Returns snprintf's count. */
int fault_rule_format(const struct fault_rule *r, char *buf, size_t n);
/* "errno(ENOMEM)", "delay(5ms)", "corrupt(len)", ... into buf. */
int fault_action_format(enum fault_action a, int arg, uint64_t delay_ns, char *buf, size_t n);

const char *fault_site_name(enum fault_site s);       /* "reg_mr", "msg.ready", ... */
/* The failure `migbed torture` injects at the site ("errno(ENOMEM)", "drop", ...). */
const char *fault_site_canonical(enum fault_site s);
const char *fault_action_name(enum fault_action a);  /* its token (errno, drop, ...); "?" */
const char *fault_side_name(enum fault_side s);       /* "src", "dst", "any" */
/* "reg_mr" -> site; -1 if unknown. */
int fault_site_lookup(const char *name);
/* "src"/"source" -> FAULT_SIDE_SRC, "dst"/"dest" -> FAULT_SIDE_DST; -1 otherwise. */
int fault_side_lookup(const char *name);
/* May `action` be used at `site`? (the grammar's compatibility table) */
bool fault_action_allowed(enum fault_site site, enum fault_action action);
/* errno name <-> value for the errno(...) action ("ENOMEM" <-> ENOMEM); NULL / -1 if unknown. */
const char *fault_errno_name(int err);
int fault_errno_lookup(const char *name);

/* An empty plan that still counts calls. seed: the run seed (for ~P triggers). */
int fault_plan_new(uint64_t seed, fault_plan **out);
void fault_plan_free(fault_plan *p);
/* Append a rule: 0, -EINVAL (bad rule), -ENOSPC (more than FAULT_RULES_MAX). */
int fault_plan_add(fault_plan *p, const struct fault_rule *r);
/* Parse and append. 0 or -EINVAL (err set), -ENOSPC. */
int fault_plan_add_spec(fault_plan *p, const char *spec, struct fault_parse_error *err);
size_t fault_plan_n_rules(const fault_plan *p);
const struct fault_rule *fault_plan_rule(const fault_plan *p, size_t i);

/* One call at the seam under sites[0..n) (distinct) on side (SRC or DST) at virtual time
 * now_ns: counted under each site; true and *f when a rule fires. */
bool fault_plan_check(fault_plan *p, const enum fault_site *sites, size_t n, enum fault_side side,
		      uint64_t now_ns, struct fault_fire *f);
/* Calls counted so far under (site, side). */
uint64_t fault_plan_calls(const fault_plan *p, enum fault_site site, enum fault_side side);
/* Injections so far (all rules). */
uint64_t fault_plan_injected(const fault_plan *p);

/* What one rule did: the calls that matched it (site, side, after >T), the injections it
 * made, and the times it was due on a call an earlier rule had already taken (shadowed:
 * such a turn counts towards *K but injects nothing). */
struct fault_rule_stats {
	uint64_t matched;
	uint64_t fired;
	uint64_t shadowed;
};
/* The stats of rule i (plan order). 0, or -EINVAL if there is no rule i. */
int fault_plan_rule_stats(const fault_plan *p, size_t i, struct fault_rule_stats *out);
/* The counts as text, one "SITE SIDE N" line per (site, side) called at least once, after a
 * "# migbed fault-counts 1" line (what `migbed torture` reads). 0 or -EIO. */
int fault_plan_write_counts(const fault_plan *p, FILE *f);

#endif
