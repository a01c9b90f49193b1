/* SPDX-License-Identifier: MIT */
/* fault - fault plans: grammar, compatibility table, trigger arithmetic (see fault.h and
 * docs/faults.md). */
#include "faults/fault.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/prng.h"
#include "vocab/vocab.h"

#define FAULT_STREAM_ID(rule) (UINT64_C(0x6661756c74000000) + (uint64_t)(rule))   /* "fault" */
#define FAULT_NUM_MAX UINT64_C(1000000000000)   /* counts and call numbers */
#define TOKEN_MAX 40

/* ---- sites, sides, actions: names and the compatibility table ------------------------------ */

enum site_class { CLASS_RES, CLASS_SEND, CLASS_MSG, CLASS_WC, CLASS_SETUP, CLASS_CM, CLASS_ALLOC };

#define A(x) (1u << FAULT_ACT_##x)
static const unsigned class_actions[] = {
	[CLASS_RES] = A(ERRNO) | A(QP_ERROR) | A(DISCONNECT) | A(DELAY) | A(EVENT) | A(DIE),
	[CLASS_SEND] = A(ERRNO) | A(STATUS) | A(QP_ERROR) | A(DISCONNECT) | A(DROP) | A(DELAY) |
		       A(EVENT) | A(DIE),
	[CLASS_MSG] = A(ERRNO) | A(STATUS) | A(QP_ERROR) | A(DISCONNECT) | A(DROP) | A(DELAY) |
		      A(EVENT) | A(DIE) | A(DUPLICATE) | A(CORRUPT),
	[CLASS_WC] = A(STATUS) | A(DROP) | A(DELAY) | A(CORRUPT) | A(DIE),
	[CLASS_SETUP] = A(ERRNO) | A(DELAY) | A(DIE),
	[CLASS_CM] = A(DROP) | A(DUPLICATE) | A(DIE),
	[CLASS_ALLOC] = A(ERRNO) | A(DIE),
};
#undef A

static const enum site_class fixed_class[FAULT_SITE_CM_EVENT] = {
#define X(NAME, tok, cls, canon) [FAULT_SITE_##NAME] = CLASS_##cls,
	VOCAB_FAULT_SITE(X)
#undef X
};

static enum site_class site_class(enum fault_site s)
{
	if (s < FAULT_SITE_CM_EVENT)
		return fixed_class[s];
	return s >= FAULT_SITE_MSG ? CLASS_MSG : CLASS_CM;
}

const char *fault_site_canonical(enum fault_site s)
{
	return vocab_fault_site_canonical((int)s);
}

static const char *const action_names[FAULT_ACT_COUNT] = {
#define X(NAME, tok) [FAULT_ACT_##NAME] = #tok,
	VOCAB_FAULT_ACTION(X)
#undef X
};

const char *fault_action_name(enum fault_action a)
{
	return (unsigned)a < FAULT_ACT_COUNT ? action_names[a] : "?";
}

static const char *const corrupt_names[FAULT_CORRUPT_COUNT] = {
#define X(NAME, tok) [FAULT_CORRUPT_##NAME] = #tok,
	VOCAB_FAULT_CORRUPT(X)
#undef X
};

struct errno_name {
	const char *name;
	int value;
};

static const struct errno_name errno_names[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EINTR", EINTR }, { "EIO", EIO },
	{ "ENXIO", ENXIO }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM }, { "EACCES", EACCES },
	{ "EFAULT", EFAULT }, { "EBUSY", EBUSY }, { "EEXIST", EEXIST }, { "ENODEV", ENODEV },
	{ "EINVAL", EINVAL }, { "ENFILE", ENFILE }, { "EMFILE", EMFILE }, { "ENOSPC", ENOSPC },
	{ "ENOSYS", ENOSYS }, { "EPROTO", EPROTO }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "ENOBUFS", ENOBUFS }, { "ENOTCONN", ENOTCONN }, { "ECONNABORTED", ECONNABORTED },
	{ "ECONNRESET", ECONNRESET }, { "ECONNREFUSED", ECONNREFUSED }, { "ETIMEDOUT", ETIMEDOUT },
	{ "EHOSTUNREACH", EHOSTUNREACH }, { "ENETUNREACH", ENETUNREACH },
	{ "EADDRINUSE", EADDRINUSE }, { "EADDRNOTAVAIL", EADDRNOTAVAIL },
};
#define N_ERRNO (sizeof errno_names / sizeof errno_names[0])

const char *fault_site_name(enum fault_site s)
{
	return vocab_fault_site_token((int)s);
}

const char *fault_side_name(enum fault_side s)
{
	return s == FAULT_SIDE_ANY ? "any" : vocab_side_token((int)s);
}

int fault_site_lookup(const char *name)
{
	return vocab_fault_site_lookup(name);
}

int fault_side_lookup(const char *name)
{
	return vocab_side_parse(name);
}

bool fault_action_allowed(enum fault_site site, enum fault_action action)
{
	if ((unsigned)site >= FAULT_SITE_COUNT || (unsigned)action >= FAULT_ACT_COUNT)
		return false;
	return class_actions[site_class(site)] & (1u << action);
}

const char *fault_errno_name(int err)
{
	for (size_t i = 0; i < N_ERRNO; i++)
		if (errno_names[i].value == err)
			return errno_names[i].name;
	return NULL;
}

int fault_errno_lookup(const char *name)
{
	for (size_t i = 0; i < N_ERRNO; i++)
		if (!strcmp(errno_names[i].name, name))
			return errno_names[i].value;
	return -1;
}

static int status_lookup(const char *name)
{
	return vocab_wc_status_lookup(name);
}

/* "DEVICE_REMOVAL" or "RDMA_CM_EVENT_DEVICE_REMOVAL" -> type; -1 if unknown. */
static int cm_event_lookup(const char *name)
{
	static const char prefix[] = "RDMA_CM_EVENT_";
	for (int t = 0; t < FAULT_CM_EVENTS; t++) {
		const char *full = vocab_cm_event_name(t);
		if (!strcmp(full, name) || !strcmp(full + sizeof prefix - 1, name))
			return t;
	}
	return -1;
}

/* ---- formatting ------------------------------------------------------------------------------ */

/* A duration in the largest unit that divides it exactly: "5ms", "1500us", "0ns". */
static int format_ns(uint64_t ns, char *buf, size_t n)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "s", 1000000000ull }, { "ms", 1000000ull }, { "us", 1000ull } };
	for (size_t i = 0; ns && i < sizeof units / sizeof units[0]; i++)
		if (ns % units[i].ns == 0)
			return snprintf(buf, n, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].unit);
	return snprintf(buf, n, "%lluns", (unsigned long long)ns);
}

int fault_action_format(enum fault_action a, int arg, uint64_t delay_ns, char *buf, size_t n)
{
	char t[32];
	switch (a) {
	case FAULT_ACT_ERRNO:
		return snprintf(buf, n, "errno(%s)", fault_errno_name(arg) ? fault_errno_name(arg) : "?");
	case FAULT_ACT_STATUS:
		return snprintf(buf, n, "status(%s)", vocab_wc_status_name(arg));
	case FAULT_ACT_DELAY:
		format_ns(delay_ns, t, sizeof t);
		return snprintf(buf, n, "delay(%s)", t);
	case FAULT_ACT_CORRUPT:
		return snprintf(buf, n, "corrupt(%s)", (unsigned)arg < FAULT_CORRUPT_COUNT ? corrupt_names[arg] : "?");
	case FAULT_ACT_EVENT:
		return snprintf(buf, n, "event(%s)", vocab_cm_event_name(arg) + strlen("RDMA_CM_EVENT_"));
	default:
		return snprintf(buf, n, "%s", (unsigned)a < FAULT_ACT_COUNT ? action_names[a] : "?");
	}
}

int fault_rule_format(const struct fault_rule *r, char *buf, size_t n)
{
	char act[64], t[32], trig[160] = "";
	size_t len = 0;
	uint64_t def_first = r->every > 1 ? r->every : 1;
	if (r->first != def_first)
		len += (size_t)snprintf(trig + len, sizeof trig - len, " #%llu", (unsigned long long)r->first);
	/* "#N" alone means "once"; from the Nth call on, each, unlimited is written "#N %1" */
	bool each_unlimited = r->first != def_first && r->every <= 1 && r->max_fires == 0;
	if (r->every > 1 || each_unlimited)
		len += (size_t)snprintf(trig + len, sizeof trig - len, " %%%llu", (unsigned long long)r->every);
	if (r->after_ns) {
		format_ns(r->after_ns, t, sizeof t);
		len += (size_t)snprintf(trig + len, sizeof trig - len, " >%s", t);
	}
	if (r->probability < 1.0) {
		char p[32];
		snprintf(p, sizeof p, "%.15g", r->probability);
		if (strtod(p, NULL) != r->probability)
			snprintf(p, sizeof p, "%.17g", r->probability);
		len += (size_t)snprintf(trig + len, sizeof trig - len, " ~%s", p);
	}
	bool default_once = r->first != def_first && r->every <= 1 && !each_unlimited;
	if (r->max_fires != (default_once ? 1u : 0u))
		snprintf(trig + len, sizeof trig - len, " *%llu", (unsigned long long)r->max_fires);
	fault_action_format(r->action, r->arg, r->delay_ns, act, sizeof act);
	return snprintf(buf, n, "%s%s%s%s -> %s", fault_site_name(r->site), r->side == FAULT_SIDE_ANY ? "" : "@",
			r->side == FAULT_SIDE_ANY ? "" : fault_side_name(r->side), trig, act);
}

/* ---- parsing --------------------------------------------------------------------------------- */

struct parser {
	const char *s;
	size_t pos;
	struct fault_parse_error *err;
};

static int perr(struct parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(struct parser *p, size_t at, const char *fmt, ...)
{
	if (p->err) {
		va_list ap;
		p->err->col = (unsigned)at + 1;
		va_start(ap, fmt);
		vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static void skip_ws(struct parser *p)
{
	while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
		p->pos++;
}

static bool word_char(int c)
{
	return isalnum(c) || c == '_' || c == '.';
}

/* Copy the word at the cursor (possibly empty) into buf; advance. false if longer than buf. */
static bool take_word(struct parser *p, char *buf, size_t n)
{
	size_t len = 0;
	while (word_char((unsigned char)p->s[p->pos + len]))
		len++;
	if (len >= n)
		return false;
	memcpy(buf, p->s + p->pos, len);
	buf[len] = '\0';
	p->pos += len;
	return true;
}

/* A decimal number in [lo, hi]. */
static int take_number_in(struct parser *p, uint64_t lo, uint64_t hi, const char *what, uint64_t *out);

/* A decimal number in [lo, FAULT_NUM_MAX]. */
static int take_number(struct parser *p, uint64_t lo, const char *what, uint64_t *out)
{
	return take_number_in(p, lo, FAULT_NUM_MAX, what, out);
}

static int take_number_in(struct parser *p, uint64_t lo, uint64_t hi, const char *what, uint64_t *out)
{
	size_t at = p->pos;
	uint64_t x = 0;
	if (!isdigit((unsigned char)p->s[p->pos]))
		return perr(p, at, "%s needs a number", what);
	while (isdigit((unsigned char)p->s[p->pos])) {
		x = x * 10 + (uint64_t)(p->s[p->pos++] - '0');
		if (x > hi)
			return perr(p, at, "%s: number too large (max %llu)", what, (unsigned long long)hi);
	}
	if (x < lo)
		return perr(p, at, "%s must be at least %llu", what, (unsigned long long)lo);
	*out = x;
	return 0;
}

/* A duration with its unit: 250ns, 10us, 5ms, 2s. */
static int take_duration(struct parser *p, const char *what, uint64_t *ns)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 } };
	size_t at = p->pos;
	uint64_t x;
	char unit[8];
	/* up to an hour in ns, as the formatter writes a time that is no whole number of us */
	if (take_number_in(p, 0, FAULT_MAX_DELAY_NS, what, &x))
		return -EINVAL;
	size_t uat = p->pos;
	if (!take_word(p, unit, sizeof unit) || !unit[0])
		return perr(p, uat, "%s needs a unit (ns, us, ms or s)", what);
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(unit, units[i].unit))
			continue;
		if (x > FAULT_MAX_DELAY_NS / units[i].ns)
			return perr(p, at, "%s longer than one hour", what);
		*ns = x * units[i].ns;
		return 0;
	}
	return perr(p, uat, "%s: unknown unit '%s' (ns, us, ms or s)", what, unit);
}

static int take_probability(struct parser *p, double *out)
{
	size_t at = p->pos, len = 0;
	char buf[32];
	while (isdigit((unsigned char)p->s[p->pos + len]) || p->s[p->pos + len] == '.')
		len++;
	/* an exponent (1e-05, 2.5E+3), the form the formatter writes for small P */
	const char *ex = p->s + p->pos + len;
	bool e = ex[0] == 'e' || ex[0] == 'E';   /* ex[1] only after an 'e': ex[0] may end the text */
	size_t sign = e && (ex[1] == '-' || ex[1] == '+');
	if (len && e && isdigit((unsigned char)ex[1 + sign])) {
		len += 1 + sign;
		while (isdigit((unsigned char)p->s[p->pos + len]))
			len++;
	}
	if (len == 0 || len >= sizeof buf)
		return perr(p, at, "~ needs a probability (0 < P <= 1, e.g. 0.01)");
	memcpy(buf, p->s + at, len);
	buf[len] = '\0';
	char *end;
	double x = strtod(buf, &end);
	if (*end || !(x > 0.0 && x <= 1.0))
		return perr(p, at, "probability '%s' is not a number with 0 < P <= 1", buf);
	p->pos += len;
	*out = x;
	return 0;
}

static int parse_site(struct parser *p, struct fault_rule *r)
{
	char w[TOKEN_MAX];
	size_t at = p->pos;
	if (!take_word(p, w, sizeof w) || !w[0])
		return perr(p, at, "expected a site (reg_mr, post_send, wc.write, msg.ready, ...)");
	int s = fault_site_lookup(w);
	if (s < 0)
		return perr(p, at, "unknown site '%s' (see docs/faults.md for the list)", w);
	r->site = (enum fault_site)s;
	if (p->s[p->pos] != '@')
		return 0;
	p->pos++;
	at = p->pos;
	if (!take_word(p, w, sizeof w) || !w[0])
		return perr(p, at, "expected a side after '@' (src or dst)");
	int side = fault_side_lookup(w);
	if (side < 0)
		return perr(p, at, "unknown side '%s' (src or dst)", w);
	r->side = (enum fault_side)side;
	return 0;
}

struct trig_seen {
	bool first, every, after, prob, max;
};

static int parse_trigger(struct parser *p, struct fault_rule *r, struct trig_seen *seen)
{
	size_t at = p->pos;
	char c = p->s[p->pos++];
	bool *dup = c == '#' ? &seen->first : c == '%' ? &seen->every : c == '>' ? &seen->after
		  : c == '~' ? &seen->prob : &seen->max;
	if (*dup)
		return perr(p, at, "trigger '%c' given twice", c);
	*dup = true;
	switch (c) {
	case '#':
		return take_number(p, 1, "#N (the Nth matching call)", &r->first);
	case '%':
		return take_number(p, 1, "%N (every Nth call)", &r->every);
	case '>':
		return take_duration(p, ">T (after virtual time T)", &r->after_ns);
	case '~':
		return take_probability(p, &r->probability);
	default:
		return take_number(p, 1, "*K (at most K times)", &r->max_fires);
	}
}

static int parse_triggers(struct parser *p, struct fault_rule *r, struct trig_seen *seen)
{
	/* Ends: each pass takes one trigger, and parse_trigger refuses a second of a kind, so at
	 * most five passes take one before '->' or the end of the spec. */
	for (;;) {
		skip_ws(p);
		char c = p->s[p->pos];
		if (c == '-' || c == '\0')
			return 0;
		if (!strchr("#%>~*", c))
			return perr(p, p->pos, "expected a trigger (#N %%N >T ~P *K) or '->', got '%c'", c);
		if (parse_trigger(p, r, seen))
			return -EINVAL;
		if (p->s[p->pos] && p->s[p->pos] != ' ' && p->s[p->pos] != '\t' && p->s[p->pos] != '-')
			return perr(p, p->pos, "unexpected '%c' in a trigger", p->s[p->pos]);
	}
}

/* The argument of ACTION(ARG); the cursor is after '('. Leaves the cursor after ')'. */
static int parse_arg(struct parser *p, struct fault_rule *r, const char *name)
{
	size_t at = p->pos;
	char a[TOKEN_MAX];
	int v = -1;
	if (r->action == FAULT_ACT_DELAY) {
		if (take_duration(p, "delay(T)", &r->delay_ns))
			return -EINVAL;
		if (r->delay_ns == 0)
			return perr(p, at, "delay(T) needs T > 0");
	} else {
		if (!take_word(p, a, sizeof a) || !a[0])
			return perr(p, at, "%s(...) needs an argument", name);
		if (r->action == FAULT_ACT_ERRNO && (v = fault_errno_lookup(a)) < 0)
			return perr(p, at, "unknown errno '%s' (ENOMEM, EINVAL, EIO, EAGAIN, EPERM, ECONNREFUSED, ...)", a);
		if (r->action == FAULT_ACT_STATUS && ((v = status_lookup(a)) < 0 || v == VOCAB_WC_SUCCESS))
			return perr(p, at, "'%s' is not an error ibv_wc_status (REM_ACCESS_ERR, RETRY_EXC_ERR, GENERAL_ERR, ...)", a);
		if (r->action == FAULT_ACT_EVENT && (v = cm_event_lookup(a)) < 0)
			return perr(p, at, "unknown CM event '%s' (DISCONNECTED, DEVICE_REMOVAL, ...)", a);
		for (int i = 0; r->action == FAULT_ACT_CORRUPT && i < FAULT_CORRUPT_COUNT; i++)
			if (!strcmp(a, corrupt_names[i]))
				v = i;
		if (r->action == FAULT_ACT_CORRUPT && v < 0)
			return perr(p, at, "corrupt(...) takes len, type, repeat, payload (msg.*) or wr_id (wc.*), not '%s'", a);
		r->arg = v;
	}
	if (p->s[p->pos] != ')')
		return perr(p, p->pos, "expected ')'");
	p->pos++;
	return 0;
}

/* corrupt(wr_id) is for completions, the other corruptions for control messages. */
static bool corrupt_fits(const struct fault_rule *r)
{
	if (r->action != FAULT_ACT_CORRUPT)
		return true;
	if ((unsigned)r->arg >= FAULT_CORRUPT_COUNT)
		return false;
	return (site_class(r->site) == CLASS_WC) == (r->arg == FAULT_CORRUPT_WRID);
}

static int parse_action(struct parser *p, struct fault_rule *r)
{
	char w[TOKEN_MAX];
	size_t at = p->pos;
	if (!take_word(p, w, sizeof w) || !w[0])
		return perr(p, at, "expected an action (errno(E), status(S), qp_error, disconnect, drop, delay(T), "
			    "duplicate, corrupt, event(E), die)");
	int a = -1;
	for (int i = 0; i < FAULT_ACT_COUNT; i++)
		if (!strcmp(action_names[i], w))
			a = i;
	if (a < 0)
		return perr(p, at, "unknown action '%s'", w);
	r->action = (enum fault_action)a;
	bool needs = a == FAULT_ACT_ERRNO || a == FAULT_ACT_STATUS || a == FAULT_ACT_DELAY || a == FAULT_ACT_EVENT;
	bool takes = needs || a == FAULT_ACT_CORRUPT;
	if (p->s[p->pos] == '(') {
		if (!takes)
			return perr(p, p->pos, "action '%s' takes no argument", w);
		p->pos++;
		if (parse_arg(p, r, w))
			return -EINVAL;
	} else if (needs) {
		return perr(p, p->pos, "action '%s' needs an argument: %s(...)", w, w);
	} else if (a == FAULT_ACT_CORRUPT) {
		r->arg = site_class(r->site) == CLASS_WC ? FAULT_CORRUPT_WRID : FAULT_CORRUPT_LEN;
	}
	if (!fault_action_allowed(r->site, r->action))
		return perr(p, at, "action '%s' does not apply to site '%s' (see docs/faults.md)", w,
			    fault_site_name(r->site));
	if (!corrupt_fits(r))
		return perr(p, at, "corrupt(%s) does not apply to site '%s' (msg.*: len, type, repeat, payload; wc.*: wr_id)",
			    corrupt_names[r->arg], fault_site_name(r->site));
	return 0;
}

int fault_rule_parse(const char *spec, struct fault_rule *out, struct fault_parse_error *err)
{
	struct parser p = { .s = spec, .err = err };
	struct fault_rule r = { .side = FAULT_SIDE_ANY, .probability = 1.0 };
	struct trig_seen seen = { 0 };
	if (!spec || !out)
		return -EINVAL;
	if (strlen(spec) >= FAULT_SPEC_MAX)
		return perr(&p, 0, "rule longer than %d bytes", FAULT_SPEC_MAX - 1);
	skip_ws(&p);
	if (!spec[p.pos])
		return perr(&p, p.pos, "empty rule (expected SITE[@SIDE] [TRIGGER ...] -> ACTION)");
	if (parse_site(&p, &r) || parse_triggers(&p, &r, &seen))
		return -EINVAL;
	if (strncmp(spec + p.pos, "->", 2) != 0)
		return perr(&p, p.pos, "expected '->' before the action");
	p.pos += 2;
	skip_ws(&p);
	if (parse_action(&p, &r))
		return -EINVAL;
	skip_ws(&p);
	if (spec[p.pos])
		return perr(&p, p.pos, "unexpected '%s' after the action", spec + p.pos);
	if (!seen.first)
		r.first = seen.every ? r.every : 1;
	if (!seen.every)
		r.every = 1;
	if (!seen.max)
		r.max_fires = seen.first && !seen.every ? 1 : 0;
	*out = r;
	return 0;
}

/* ---- plans and triggers ---------------------------------------------------------------------- */

struct plan_rule {
	struct fault_rule r;
	prng rng;
	uint64_t seen;                  /* matching calls counted (after >T) */
	uint64_t due;                   /* turns the trigger fired on (what *K counts) */
	uint64_t fired;                 /* of those, the calls this rule injected into */
};

struct fault_plan {
	uint64_t seed;
	size_t n;
	struct plan_rule rules[FAULT_RULES_MAX];
	uint64_t calls[FAULT_SITE_COUNT][FAULT_SIDES];
	uint64_t injected;
};

int fault_plan_new(uint64_t seed, fault_plan **out)
{
	if (!out)
		return -EINVAL;
	fault_plan *p = calloc(1, sizeof *p);
	if (!p)
		return -ENOMEM;
	p->seed = seed;
	*out = p;
	return 0;
}

void fault_plan_free(fault_plan *p)
{
	free(p);
}

/* The action's argument is one the grammar can write (fault_rule_format prints it by name; a
 * number without one would print as "errno(?)", which no parser reads back). */
static bool arg_fits(const struct fault_rule *r)
{
	switch (r->action) {
	case FAULT_ACT_ERRNO:
		return fault_errno_name(r->arg) != NULL;
	case FAULT_ACT_STATUS:
		return r->arg > VOCAB_WC_SUCCESS && r->arg < VOCAB_WC_STATUS_COUNT;
	case FAULT_ACT_EVENT:
		return r->arg >= 0 && r->arg < VOCAB_CM_EVENT_COUNT;
	case FAULT_ACT_DELAY:
		return r->delay_ns > 0;
	default:
		return true;
	}
}

static bool rule_ok(const struct fault_rule *r)
{
	return (unsigned)r->site < FAULT_SITE_COUNT && (unsigned)r->side <= FAULT_SIDE_ANY && r->first >= 1 &&
	       r->every >= 1 && r->probability > 0.0 && r->probability <= 1.0 &&
	       fault_action_allowed(r->site, r->action) && r->delay_ns <= FAULT_MAX_DELAY_NS &&
	       corrupt_fits(r) && arg_fits(r) && r->first <= FAULT_NUM_MAX && r->every <= FAULT_NUM_MAX &&
	       r->max_fires <= FAULT_NUM_MAX && r->after_ns <= FAULT_MAX_DELAY_NS;   /* the parser's bounds */
}

int fault_plan_add(fault_plan *p, const struct fault_rule *r)
{
	if (!p || !r || !rule_ok(r))
		return -EINVAL;
	if (p->n >= FAULT_RULES_MAX)
		return -ENOSPC;
	struct plan_rule *pr = &p->rules[p->n];
	*pr = (struct plan_rule){ .r = *r };
	prng_seed_stream(&pr->rng, p->seed, FAULT_STREAM_ID(p->n));
	p->n++;
	return 0;
}

int fault_plan_add_spec(fault_plan *p, const char *spec, struct fault_parse_error *err)
{
	struct fault_rule r;
	int rc = fault_rule_parse(spec, &r, err);
	return rc ? rc : fault_plan_add(p, &r);
}

size_t fault_plan_n_rules(const fault_plan *p) { return p->n; }
uint64_t fault_plan_injected(const fault_plan *p) { return p->injected; }

const struct fault_rule *fault_plan_rule(const fault_plan *p, size_t i)
{
	return i < p->n ? &p->rules[i].r : NULL;
}

int fault_plan_rule_stats(const fault_plan *p, size_t i, struct fault_rule_stats *out)
{
	if (!p || !out || i >= p->n)
		return -EINVAL;
	const struct plan_rule *pr = &p->rules[i];
	assert(pr->fired <= pr->due && pr->due <= pr->seen);
	*out = (struct fault_rule_stats){ .matched = pr->seen, .fired = pr->fired, .shadowed = pr->due - pr->fired };
	return 0;
}

uint64_t fault_plan_calls(const fault_plan *p, enum fault_site site, enum fault_side side)
{
	if (!p || (unsigned)site >= FAULT_SITE_COUNT || (unsigned)side >= FAULT_SIDES)
		return 0;
	return p->calls[site][side];
}

/* Does this matching call fire the rule? Counts it, draws for ~P only when otherwise due. */
static bool rule_due(struct plan_rule *pr)
{
	const struct fault_rule *r = &pr->r;
	uint64_t n = ++pr->seen;
	if (n < r->first || (n - r->first) % r->every != 0)
		return false;
	if (r->max_fires && pr->due >= r->max_fires)
		return false;
	if (r->probability < 1.0 && !(prng_unit(&pr->rng) < r->probability))
		return false;
	pr->due++;
	return true;
}

static int site_index(const enum fault_site *sites, size_t n, enum fault_site s)
{
	for (size_t i = 0; i < n; i++)
		if (sites[i] == s)
			return (int)i;
	return -1;
}

bool fault_plan_check(fault_plan *p, const enum fault_site *sites, size_t n, enum fault_side side,
		      uint64_t now_ns, struct fault_fire *f)
{
	bool fired = false;
	if (!p)
		return false;
	assert((unsigned)side < FAULT_SIDES && n > 0 && sites);
	for (size_t i = 0; i < n; i++) {
		assert((unsigned)sites[i] < FAULT_SITE_COUNT);
		p->calls[sites[i]][side]++;
	}
	for (size_t i = 0; i < p->n; i++) {
		struct plan_rule *pr = &p->rules[i];
		const struct fault_rule *r = &pr->r;
		if ((r->side != FAULT_SIDE_ANY && r->side != side) || now_ns < r->after_ns ||
		    site_index(sites, n, r->site) < 0)
			continue;
		/* A rule due on a call another rule already took is shadowed: the call still uses
		 * up its turn (#N stays "the Nth call"), so each rule's behaviour is independent
		 * of the rules before it. */
		if (!rule_due(pr) || fired)
			continue;
		fired = true;
		pr->fired++;
		p->injected++;
		assert(pr->fired <= pr->due && pr->due <= pr->seen);
		*f = (struct fault_fire){ .action = r->action, .arg = r->arg, .delay_ns = r->delay_ns,
					  .site = r->site, .call = p->calls[r->site][side], .rule = i };
	}
	return fired;
}

int fault_plan_write_counts(const fault_plan *p, FILE *f)
{
	fprintf(f, "# migbed fault-counts 1\n");
	for (int s = 0; s < FAULT_SITE_COUNT; s++)
		for (int side = 0; side < FAULT_SIDES; side++)
			if (p->calls[s][side])
				fprintf(f, "%s %s %llu\n", fault_site_name((enum fault_site)s), fault_side_name((enum fault_side)side),
					(unsigned long long)p->calls[s][side]);
	return ferror(f) ? -EIO : 0;
}
