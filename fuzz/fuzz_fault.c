/* SPDX-License-Identifier: MIT */
/* fuzz_fault - fault rules (faults/fault.h), as `--fault` and `fault =` read them.
 *
 * Text direction: a rule the parser accepts formats to text it accepts again, as the same
 * rule, and that text is a fixpoint (format(parse(x)) parses; parse(format(v)) == v). A rule
 * it refuses has a message and a column inside the text. Value direction: any rule the plan
 * takes (fault_plan_add: a valid rule) formats to text that parses back to it. A plan of the
 * input's lines is consulted for a few calls (the triggers' arithmetic on any numbers). */
#include "fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "faults/fault.h"

/* The same rule: every field that means something for its action (an action without an
 * argument carries none in text: its arg and delay are not the rule's). */
static bool same_rule(const struct fault_rule *a, const struct fault_rule *b)
{
	bool has_arg = a->action == FAULT_ACT_ERRNO || a->action == FAULT_ACT_STATUS ||
		       a->action == FAULT_ACT_EVENT || a->action == FAULT_ACT_CORRUPT;
	return a->site == b->site && a->side == b->side && a->first == b->first && a->every == b->every &&
	       a->after_ns == b->after_ns && a->probability == b->probability && a->max_fires == b->max_fires &&
	       a->action == b->action && (!has_arg || a->arg == b->arg) &&
	       (a->action != FAULT_ACT_DELAY || a->delay_ns == b->delay_ns);
}

static void round_trip(const struct fault_rule *r, const char *from)
{
	char text[FAULT_SPEC_MAX * 2], again[FAULT_SPEC_MAX * 2];
	struct fault_rule back;
	struct fault_parse_error err = { 0 };
	int n = fault_rule_format(r, text, sizeof text);
	FUZZ_CHECK(n > 0 && (size_t)n < FAULT_SPEC_MAX, "\"%s\" formats to %d bytes", from, n);
	FUZZ_CHECK(fault_rule_parse(text, &back, &err) == 0, "\"%s\" formats as \"%s\", refused at column %u: %s",
		   from, text, err.col, err.msg);
	FUZZ_CHECK(same_rule(r, &back), "\"%s\" formats as \"%s\", which reads as another rule", from, text);
	fault_rule_format(&back, again, sizeof again);
	FUZZ_CHECK(!strcmp(text, again), "not a fixpoint: \"%s\" -> \"%s\"", text, again);
}

static void text_direction(const char *s)
{
	struct fault_rule r;
	struct fault_parse_error err = { 0 };
	if (fault_rule_parse(s, &r, &err) == 0) {
		round_trip(&r, s);
		return;
	}
	FUZZ_CHECK(err.msg[0] != '\0', "\"%s\" refused without a message", s);
	FUZZ_CHECK(err.col >= 1 && err.col <= strlen(s) + 1, "\"%s\": column %u", s, err.col);
}

static void value_direction(struct fz *f)
{
	struct fault_rule r = {
		.site = (enum fault_site)(fz_u8(f) % (FAULT_SITE_COUNT + 1)),
		.side = (enum fault_side)(fz_u8(f) % (FAULT_SIDES + 2)),
		.first = fz_u64(f, 1) ? fz_u64(f, 8) : fz_u64(f, 1),
		.every = fz_u64(f, 1) ? fz_u64(f, 8) : fz_u64(f, 1),
		.after_ns = fz_u64(f, 1) ? fz_u64(f, 8) : fz_u64(f, 2) * 1000000u,
		.max_fires = fz_u64(f, 1) ? fz_u64(f, 8) : fz_u64(f, 1),
		.action = (enum fault_action)(fz_u8(f) % (FAULT_ACT_COUNT + 1)),
		.arg = (int)(int8_t)fz_u8(f),
		.delay_ns = fz_u64(f, 1) ? fz_u64(f, 8) : fz_u64(f, 2) * 1000u,
	};
	uint64_t pbits = fz_u64(f, 8);
	double p;
	memcpy(&p, &pbits, sizeof p);
	r.probability = (pbits >> 63) ? 1.0 : p;
	fault_plan *plan;
	if (fault_plan_new(0, &plan) != 0)
		abort();
	if (fault_plan_add(plan, &r) == 0)
		round_trip(&r, "(a rule made of bytes)");
	fault_plan_free(plan);
}

/* Every line of s a rule of one plan; a few calls at the rules' sites. */
static void as_plan(char *s, uint64_t seed)
{
	fault_plan *plan;
	if (fault_plan_new(seed, &plan) != 0)
		abort();
	struct fault_parse_error err;
	for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n"))
		if (fault_plan_add_spec(plan, line, &err) == -ENOSPC)
			break;
	for (size_t i = 0; i < fault_plan_n_rules(plan); i++) {
		const struct fault_rule *r = fault_plan_rule(plan, i);
		enum fault_site site = r->site;
		struct fault_fire fire;
		for (uint64_t t = 0; t < 8; t++)
			fault_plan_check(plan, &site, 1, (enum fault_side)(t & 1), t * 1000000u, &fire);
	}
	/* opened once: an fopen and fclose per input were a tenth of its CPU time (syscalls) */
	static FILE *null;
	if (!null)
		null = fopen("/dev/null", "w");
	if (null)
		fault_plan_write_counts(plan, null);
	fault_plan_free(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t mode = fz_u8(&f);
	if (mode & 1) {
		value_direction(&f);
		return 0;
	}
	char *s = fuzz_cstr(f.p, f.n);
	if (!strchr(s, '\n'))
		text_direction(s);
	as_plan(s, mode);
	free(s);
	return 0;
}
