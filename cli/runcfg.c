/* runcfg - run options from scenario files and the command line (see runcfg.h). */
#include "cli/runcfg.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults/cause.h"
#include "sim/size.h"
#include "transport/wire.h"

struct key {
	const char *name;
	const char *arg;     /* NULL: flag */
	const char *help;
};

/* The model's cost defaults, in the units of their options (from hca_cost_defaults, so the
 * help cannot drift from the model). reg-us-per-gib is per 4 KiB page in the model. */
#define PAGES_PER_GIB 262144u
static void dflt_link(char *buf, size_t n)
{
	struct hca_cost c;
	hca_cost_defaults(&c);
	snprintf(buf, n, "%llu", (unsigned long long)(c.link_bytes_per_s * 8 / 1000000000ull));
}
static void dflt_latency(char *buf, size_t n)
{
	struct hca_cost c;
	hca_cost_defaults(&c);
	snprintf(buf, n, "%llu", (unsigned long long)(c.msg_latency_ns / 1000));
}
static void dflt_reg(char *buf, size_t n)
{
	struct hca_cost c;
	hca_cost_defaults(&c);
	snprintf(buf, n, "%llu: %llu ns per 4 KiB page, plus %llu us per registration",
		 (unsigned long long)((c.reg_per_page_ns * PAGES_PER_GIB + 500) / 1000),
		 (unsigned long long)c.reg_per_page_ns, (unsigned long long)(c.reg_fixed_ns / 1000));
}

static void dflt_rate(char *buf, size_t n) { snprintf(buf, n, "%u", TGEN_DEFAULT_RATE_PAGES_PER_S); }
static void dflt_hot(char *buf, size_t n) { snprintf(buf, n, "%u", TGEN_DEFAULT_HOT_PAGES_PER_S); }
static void dflt_cold(char *buf, size_t n) { snprintf(buf, n, "%u", TGEN_DEFAULT_COLD_PAGES_PER_S); }

static const struct key keys[] = {
	{ "trace", "FILE", "trace to replay (.zst ok); default: generate one (see the generator keys)" },
	{ "chunk-size", "SIZE", "source chunk size, power of two 1M..1G (default 1M, as QEMU)" },
	{ "dst-chunk-size", "SIZE", "destination chunk size (default: = chunk-size)" },
	{ "pin-all", NULL, "ask for rdma-pin-all (register all guest RAM up front)" },
	{ "dst-pin-all", "BOOL", "whether the destination accepts pin-all (default true)" },
	{ "backend", "model|verbs", "simulated HCA (default) or real rdma-core verbs" },
	{ "mem", "stamp|bytes", "guest memory representation (default: stamp on model, bytes on verbs)" },
	{ "link-gbps", "N", "modelled link rate in Gb/s" },
	{ "latency-us", "N", "modelled one-way message latency in microseconds" },
	{ "reg-us-per-gib", "N", "modelled ibv_reg_mr cost per GiB in microseconds" },
	{ "downtime-limit-ms", "N", "downtime-limit (default 300)" },
	{ "max-bandwidth", "SIZE|unlimited", "max-bandwidth in bytes/s (default 128M)" },
	{ "device-state", "SIZE", "device state sent at switchover (default 256K)" },
	{ "max-time-ms", "N", "give up as NOT_CONVERGED after this much virtual time (default 600000)" },
	{ "wait-timeout-ms", "N", "bound on every single wait (default 10000)" },
	{ "trace-loop", "BOOL", "replay the trace again when it ends (default true)" },
	{ "seed", "N", "run seed (default 1)" },
	{ "caps-version", "N", "protocol version in the capabilities (default 1; others test refusal)" },
	{ "protocol", "qemu|negotiated", "chunk-size negotiation, both sides (default qemu: none, as QEMU 11.1)" },
	{ "src-protocol", "qemu|negotiated", "the source's protocol (an old or new source)" },
	{ "dst-protocol", "qemu|negotiated", "the destination's protocol (an old or new destination)" },
	{ "on-mismatch", "adapt|refuse", "negotiated source facing another chunk size: adapt (default) or refuse" },
	{ "dst-memlock", "SIZE", "the destination may pin at most SIZE (model: simulated; verbs: migbed dest drops CAP_IPC_LOCK, sets RLIMIT_MEMLOCK)" },
	{ "ack-timeout", "N", "verbs: the QPs' ACK timeout exponent (4.096 us x 2^N; rdma_cm's default is 19 = 2.1 s per try)" },
	{ "dst-layout", "FILE", "a trace whose header (page size, blocks) is the destination's RAM layout (default: the run's trace)" },
	{ "qemu-stream", "BOOL", "the peer is a real QEMU 7.2 -M none: dest reads its stream; source (`migbed source`) writes one" },
	{ "qemu-expect", "FILE@ADDR", "destination, with qemu-stream: the content QEMU was given (-device loader,file=FILE,addr=ADDR)" },
	{ "fault", "RULE", "inject a fault (repeatable): SITE[@SIDE] [TRIGGER...] -> ACTION, see docs/faults.md" },
	{ "fault-counts", "FILE", "write how often each fault site was called, per side (for migbed torture)" },
	{ "expect-fired", "N|>N[,...]", "how often the fault rules must fire: one value for every rule, or a list for the rules in order (e.g. >0 or 1,0); otherwise the run fails its expectation" },
	{ "expect", "completed|failed:CAUSE[|CAUSE...]", "the expected outcome (default completed)" },
	{ "json", "FILE", "write the result as JSON" },
	{ "events", "FILE", "write the event log" },
	{ "quiet", NULL, "print only the verdict line" },
	{ "pause-at", "SIDE:EVENT[#N]", "stop the process (SIGSTOP) right after the Nth (default 1st) event-log line 'SIDE EVENT' (side * = any), after a line on stderr; SIGCONT resumes. For tests that act mid-run (a link cut, a peer killed) at a point, not after a time" },
	{ "src-addr", "ADDR", "verbs: source bind address (e.g. 198.18.0.2)" },
	{ "dst-addr", "IP:PORT", "verbs: destination listen address (e.g. 198.18.0.1:29200)" },
	{ "description", "TEXT", "free text (scenario files)" },
	/* trace generation */
	{ "pattern", "P", "generated trace: rand-set|random|hotcold|idle (default rand-set)" },
	{ "guest", "SIZE", "generated trace: guest RAM (default 256M)" },
	{ "duration-ms", "N", "generated trace: duration (default 2000)" },
	{ "epoch-ms", "N", "generated trace: epoch spacing (default 10)" },
	{ "page-size", "SIZE", "generated trace: page size (default 4K)" },
	{ "workers", "N", "rand-set: workers (default 2)" },
	{ "worker-bytes", "SIZE", "rand-set: bytes per worker (default 16M)" },
	{ "sweep-rate", "SIZE", "rand-set: bytes/s per worker (default 32M)" },
	{ "rate", "N", "random: pages/s, 1 or more" },
	{ "hot-fraction", "F", "hotcold: hot share of the guest (0..1)" },
	{ "hot-rate", "N", "hotcold: hot pages/s, 1 or more" },
	{ "cold-rate", "N", "hotcold: cold pages/s, 1 or more" },
};
#define N_KEYS (sizeof keys / sizeof keys[0])

/* Defaults printed from where they are defined, so the help cannot drift from them. */
static const struct derived_default {
	const char *key;
	void (*fn)(char *buf, size_t n);
} derived_defaults[] = {
	{ "link-gbps", dflt_link }, { "latency-us", dflt_latency }, { "reg-us-per-gib", dflt_reg },
	{ "rate", dflt_rate }, { "hot-rate", dflt_hot }, { "cold-rate", dflt_cold },
};

/* " (default X)" of a key with a derived default, "" otherwise. */
static void derived_default(const char *key, char *buf, size_t n)
{
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof derived_defaults / sizeof derived_defaults[0]; i++) {
		if (strcmp(derived_defaults[i].key, key))
			continue;
		size_t len = (size_t)snprintf(buf, n, " (default ");
		derived_defaults[i].fn(buf + len, n - len);
		len = strlen(buf);
		snprintf(buf + len, n - len, ")");
	}
}

static const struct key *find(const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

bool runcfg_known(const char *key) { return find(key) != NULL; }
bool runcfg_is_flag(const char *key)
{
	const struct key *k = find(key);
	return k && !k->arg;
}

void runcfg_print_keys(FILE *f)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		char lhs[64];
		snprintf(lhs, sizeof lhs, "--%s%s%s", keys[i].name, keys[i].arg ? " " : "", keys[i].arg ? keys[i].arg : "");
		char dflt[128];
		derived_default(keys[i].name, dflt, sizeof dflt);
		fprintf(f, "  %-28s %s%s\n", lhs, keys[i].help, dflt);
	}
}

static int bad(struct diag *d, const char *where, const char *key, const char *value, const char *what)
{
	if (where[0] == '-')   /* "--key" already names the key */
		return diag_set(d, "%s: '%s' is not %s", where, value, what);
	return diag_set(d, "%s: %s: '%s' is not %s", where, key, value, what);
}

static int get_u64(const char *v, uint64_t *out, uint64_t lo, uint64_t hi)
{
	uint64_t x;
	if (size_parse_u64(v, &x) != 0 || x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 0;
}

/* A SIZE of more than 0: the generator takes a 0 for "unset" (tgen_defaults), so a 0 given
 * here would silently become the default. */
static int get_size_pos(const char *v, uint64_t *out)
{
	uint64_t x;
	if (size_parse(v, &x) != 0 || x == 0)
		return -EINVAL;
	*out = x;
	return 0;
}

static int get_bool(const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int get_chunk(const char *v, uint64_t *out)
{
	uint64_t x;
	unsigned shift;
	if (size_parse(v, &x) != 0 || wire_chunk_shift(x, &shift) != 0)
		return -EINVAL;
	*out = x;
	return 0;
}

static int set_expect(struct runcfg *c, const char *v, const char *where, struct diag *d)
{
	snprintf(c->expect_text, sizeof c->expect_text, "%s", v);
	c->n_expect = 0;
	if (!strcmp(v, "completed")) {
		c->expect_completed = true;
		return 0;
	}
	if (strncmp(v, "failed:", 7) != 0 || !v[7])
		return bad(d, where, "expect", v, "'completed' or 'failed:CAUSE[|CAUSE...]'");
	c->expect_completed = false;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", v + 7);
	for (char *save = NULL, *tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
		int code = cause_lookup(tok);
		if (!code)
			return diag_set(d, "%s: expect: unknown cause '%s' (see migbed causes)", where, tok);
		if (c->n_expect == RUNCFG_MAX_EXPECT)
			return diag_set(d, "%s: expect: more than %d causes", where, RUNCFG_MAX_EXPECT);
		c->expect_causes[c->n_expect++] = code;
	}
	return 0;
}

/* A `fault` rule is checked now (the error names its column) and kept as text, in order. */
static int add_fault(struct runcfg *c, const char *v, const char *where, struct diag *d)
{
	struct fault_rule r;
	struct fault_parse_error e = { 0 };
	const char *sep = where[0] == '-' ? "" : ": fault";   /* "--fault" already names the key */
	if (fault_rule_parse(v, &r, &e))
		return diag_set(d, "%s%s '%s': col %u: %s", where, sep, v, e.col, e.msg);
	if (c->n_faults == RUNCFG_MAX_FAULTS)
		return diag_set(d, "%s%s: more than %d rules", where, sep, RUNCFG_MAX_FAULTS);
	snprintf(c->faults[c->n_faults++], FAULT_SPEC_MAX, "%s", v);
	return 0;
}

static char *trim(char *s);

/* expect-fired = N | >N [, N | >N ...]: one value for every rule, or a list in rule order. */
static int set_expect_fired(struct runcfg *c, const char *v, const char *where, struct diag *d)
{
	const char *what = "N or >N (e.g. >0), or a list of them, one per fault rule in order (e.g. 1,>0)";
	char buf[256];
	int n = 0;
	if (strlen(v) >= sizeof buf)
		return bad(d, where, "expect-fired", v, what);
	memcpy(buf, v, strlen(v) + 1);
	for (char *tok = buf, *next; tok; tok = next) {   /* every item, empty ones too (refused) */
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		tok = trim(tok);
		bool more = tok[0] == '>';
		char *num = trim(tok + more);
		uint64_t x;
		if (n == RUNCFG_MAX_FAULTS)
			return bad(d, where, "expect-fired", v, "a list of at most 16 values (one per fault rule)");
		if (!isdigit((unsigned char)num[0]) || get_u64(num, &x, 0, UINT64_MAX - 1))
			return bad(d, where, "expect-fired", v, what);
		c->expect_fired[n++] = (struct runcfg_fired){ .n = x, .more = more };
	}
	c->n_expect_fired = n;
	c->expect_fired_all = n == 1;
	return 0;
}

/* SIDE:EVENT[#N]: SIDE one of src dst sim wire *, EVENT an event-log token, N >= 1. */
static int set_pause(struct runcfg *c, const char *v, const char *where, struct diag *d)
{
	const char *what = "SIDE:EVENT[#N] (SIDE src|dst|sim|wire|*, EVENT an event-log name such as "
			   "registered or round, N >= 1; e.g. src:registered#2)";
	const char *colon = strchr(v, ':'), *hash = strchr(v, '#');
	uint64_t nth = 1;
	size_t side_len = colon ? (size_t)(colon - v) : 0;
	if (!colon || (hash && hash < colon))
		return bad(d, where, "pause-at", v, what);
	size_t ev_len = hash ? (size_t)(hash - colon - 1) : strlen(colon + 1);
	if (hash && (size_parse_u64(hash + 1, &nth) || nth == 0))
		return bad(d, where, "pause-at", v, what);
	static const char *const sides[] = { "src", "dst", "sim", "wire", "*" };
	bool side_ok = false;
	for (size_t i = 0; i < sizeof sides / sizeof *sides; i++)
		side_ok = side_ok || (strlen(sides[i]) == side_len && !strncmp(v, sides[i], side_len));
	if (!side_ok || ev_len == 0 || ev_len >= sizeof c->pause_event)
		return bad(d, where, "pause-at", v, what);
	for (size_t i = 0; i < ev_len; i++) {
		char ch = colon[1 + i];
		if (!(isalnum((unsigned char)ch) || ch == '_' || ch == '.'))
			return bad(d, where, "pause-at", v, what);
	}
	memcpy(c->pause_side, v, side_len);
	c->pause_side[side_len] = '\0';
	memcpy(c->pause_event, colon + 1, ev_len);
	c->pause_event[ev_len] = '\0';
	c->pause_nth = nth;
	return 0;
}

static int set_copy(char *dst, size_t n, const char *v, const char *where, const char *key, struct diag *d)
{
	if (strlen(v) >= n || !v[0])
		return diag_set(d, "%s: %s: value empty or longer than %zu bytes", where, key, n - 1);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* Each setter returns 1 when the key is not its own, 0 when set, -EINVAL on bad value. */
static int set_transport(struct runcfg *c, const char *k, const char *v, const char *w, struct diag *d)
{
	uint64_t x;
	if (!strcmp(k, "chunk-size"))
		return get_chunk(v, &c->chunk_bytes) ? bad(d, w, k, v, "a power of two from 1M to 1G") : 0;
	if (!strcmp(k, "dst-chunk-size")) {
		c->dst_chunk_set = true;
		return get_chunk(v, &c->dst_chunk_bytes) ? bad(d, w, k, v, "a power of two from 1M to 1G") : 0;
	}
	if (!strcmp(k, "pin-all"))
		return get_bool(v, &c->pin_all) ? bad(d, w, k, v, "a boolean (true/false)") : 0;
	if (!strcmp(k, "dst-pin-all"))
		return get_bool(v, &c->dst_pin_all) ? bad(d, w, k, v, "a boolean (true/false)") : 0;
	if (!strcmp(k, "backend")) {
		if (!strcmp(v, "model"))
			c->backend = HCA_BACKEND_MODEL;
		else if (!strcmp(v, "verbs"))
			c->backend = HCA_BACKEND_VERBS;
		else
			return bad(d, w, k, v, "model or verbs");
		return 0;
	}
	if (!strcmp(k, "mem")) {
		c->repr_set = true;
		if (!strcmp(v, "stamp"))
			c->repr = MEM_REPR_STAMP;
		else if (!strcmp(v, "bytes"))
			c->repr = MEM_REPR_BYTES;
		else
			return bad(d, w, k, v, "stamp or bytes");
		return 0;
	}
	if (!strcmp(k, "link-gbps")) {
		if (get_u64(v, &x, 1, 10000))
			return bad(d, w, k, v, "a link rate in Gb/s from 1 to 10000");
		c->cost.link_bytes_per_s = x * 1000000000ull / 8;
		return 0;
	}
	if (!strcmp(k, "latency-us")) {
		if (get_u64(v, &x, 0, 10000000))
			return bad(d, w, k, v, "a latency in microseconds");
		c->cost.msg_latency_ns = x * 1000;
		return 0;
	}
	if (!strcmp(k, "reg-us-per-gib")) {
		if (get_u64(v, &x, 0, 1000000000))
			return bad(d, w, k, v, "a cost in microseconds per GiB");
		c->cost.reg_per_page_ns = x * 1000 / PAGES_PER_GIB;
		return 0;
	}
	if (!strcmp(k, "caps-version")) {
		if (get_u64(v, &x, 0, UINT32_MAX))
			return bad(d, w, k, v, "a 32-bit version number");
		c->caps_version = (uint32_t)x;
		return 0;
	}
	if (!strcmp(k, "protocol") || !strcmp(k, "src-protocol") || !strcmp(k, "dst-protocol")) {
		bool neg;
		if (!strcmp(v, "negotiated"))
			neg = true;
		else if (!strcmp(v, "qemu"))
			neg = false;
		else
			return bad(d, w, k, v, "qemu or negotiated");
		if (strcmp(k, "dst-protocol"))
			c->src_negotiate = neg;
		if (strcmp(k, "src-protocol"))
			c->dst_negotiate = neg;
		return 0;
	}
	if (!strcmp(k, "ack-timeout")) {
		if (get_u64(v, &x, 1, 31))
			return bad(d, w, k, v, "an exponent from 1 to 31");
		c->ack_timeout = (int)x;
		return 0;
	}
	if (!strcmp(k, "qemu-stream"))
		return get_bool(v, &c->qemu_stream) ? bad(d, w, k, v, "a boolean (true/false)") : 0;
	if (!strcmp(k, "qemu-expect")) {
		const char *at = strrchr(v, '@');
		if (!at || at == v || size_parse_u64(at + 1, &c->qemu_expect_addr) != 0 ||
		    (size_t)(at - v) >= sizeof c->qemu_expect_file)
			return bad(d, w, k, v, "FILE@ADDR (a file and a decimal guest address)");
		memcpy(c->qemu_expect_file, v, (size_t)(at - v));
		c->qemu_expect_file[at - v] = '\0';
		return 0;
	}
	if (!strcmp(k, "dst-memlock"))
		return (size_parse(v, &c->dst_memlock_bytes) || c->dst_memlock_bytes == 0) ? bad(d, w, k, v, "a SIZE (e.g. 64M)") : 0;
	if (!strcmp(k, "on-mismatch")) {
		if (strcmp(v, "adapt") && strcmp(v, "refuse"))
			return bad(d, w, k, v, "adapt or refuse");
		c->refuse_mismatch = !strcmp(v, "refuse");
		return 0;
	}
	if (!strcmp(k, "src-addr"))
		return set_copy(c->src_addr, sizeof c->src_addr, v, w, k, d);
	if (!strcmp(k, "dst-addr"))
		return set_copy(c->dst_addr, sizeof c->dst_addr, v, w, k, d);
	return 1;
}

static int set_engine(struct runcfg *c, const char *k, const char *v, const char *w, struct diag *d)
{
	uint64_t x;
	if (!strcmp(k, "downtime-limit-ms"))
		return get_u64(v, &c->eng.downtime_limit_ms, 1, 3600000) ? bad(d, w, k, v, "milliseconds (1..3600000)") : 0;
	if (!strcmp(k, "max-bandwidth")) {
		if (!strcmp(v, "unlimited")) {
			c->eng.max_bandwidth_bytes_per_s = 0;
			return 0;
		}
		if (size_parse(v, &x) || x < 10)
			return bad(d, w, k, v, "a SIZE per second (e.g. 128M, 10G) or 'unlimited'");
		c->eng.max_bandwidth_bytes_per_s = x;
		return 0;
	}
	if (!strcmp(k, "device-state"))
		return (size_parse(v, &c->eng.device_state_bytes) || c->eng.device_state_bytes > (64u << 20))
			       ? bad(d, w, k, v, "a SIZE up to 64M") : 0;
	if (!strcmp(k, "max-time-ms"))
		return get_u64(v, &c->eng.max_time_ms, 1, 86400000) ? bad(d, w, k, v, "milliseconds (1..86400000)") : 0;
	if (!strcmp(k, "wait-timeout-ms"))
		return get_u64(v, &c->wait_timeout_ms, 1, 3600000) ? bad(d, w, k, v, "milliseconds (1..3600000)") : 0;
	if (!strcmp(k, "trace-loop"))
		return get_bool(v, &c->eng.trace_loop) ? bad(d, w, k, v, "a boolean (true/false)") : 0;
	if (!strcmp(k, "seed"))
		return get_u64(v, &c->seed, 0, UINT64_MAX) ? bad(d, w, k, v, "a decimal number") : 0;
	return 1;
}

static int set_gen(struct runcfg *c, const char *k, const char *v, const char *w, struct diag *d)
{
	uint64_t x = 0;
	struct tgen_opts *g = &c->gen;
	int rc = 0;
	if (!strcmp(k, "pattern"))
		rc = tgen_pattern_parse(v, &g->pattern) ? bad(d, w, k, v, "rand-set, random, hotcold or idle") : 0;
	else if (!strcmp(k, "guest"))
		rc = size_parse(v, &g->guest_bytes) ? bad(d, w, k, v, "a SIZE (e.g. 256M, 8G)") : 0;
	else if (!strcmp(k, "duration-ms"))
		rc = get_u64(v, &g->duration_ms, 1, 86400000) ? bad(d, w, k, v, "milliseconds") : 0;
	else if (!strcmp(k, "epoch-ms"))
		rc = get_u64(v, &g->epoch_ms, 1, 3600000) ? bad(d, w, k, v, "milliseconds") : 0;
	else if (!strcmp(k, "page-size"))
		rc = get_size_pos(v, &g->page_size) ? bad(d, w, k, v, "a SIZE (e.g. 4K)") : 0;
	else if (!strcmp(k, "workers")) {
		rc = get_u64(v, &x, 1, 4096) ? bad(d, w, k, v, "a number of workers (1..4096)") : 0;
		g->workers = (uint32_t)x;
	} else if (!strcmp(k, "worker-bytes"))
		rc = get_size_pos(v, &g->worker_bytes) ? bad(d, w, k, v, "a SIZE of more than 0") : 0;
	else if (!strcmp(k, "sweep-rate"))
		rc = get_size_pos(v, &g->sweep_bytes_per_s) ? bad(d, w, k, v, "a SIZE per second of more than 0") : 0;
	else if (!strcmp(k, "rate"))
		rc = get_u64(v, &g->rate_pages_per_s, 1, UINT32_MAX) ? bad(d, w, k, v, "pages per second") : 0;
	else if (!strcmp(k, "hot-rate"))
		rc = get_u64(v, &g->hot_pages_per_s, 1, UINT32_MAX) ? bad(d, w, k, v, "a rate of 1 or more pages per second") : 0;
	else if (!strcmp(k, "cold-rate"))
		rc = get_u64(v, &g->cold_pages_per_s, 1, UINT32_MAX) ? bad(d, w, k, v, "a rate of 1 or more pages per second") : 0;
	else if (!strcmp(k, "hot-fraction")) {
		char *end;
		errno = 0;
		double f = strtod(v, &end);
		rc = (errno || *end || !(f > 0.0 && f < 1.0)) ? bad(d, w, k, v, "a fraction between 0 and 1") : 0;
		g->hot_fraction = f;
	} else
		return 1;
	c->gen_keys_used = true;
	return rc;
}

int runcfg_set(struct runcfg *c, const char *key, const char *value, const char *where, struct diag *d)
{
	if (!find(key))
		return diag_set(d, "%s: unknown key '%s' (see migbed run --help)", where, key);
	int rc;
	if ((rc = set_transport(c, key, value, where, d)) != 1 || (rc = set_engine(c, key, value, where, d)) != 1 ||
	    (rc = set_gen(c, key, value, where, d)) != 1)
		return rc;
	if (!strcmp(key, "expect"))
		return set_expect(c, value, where, d);
	if (!strcmp(key, "trace"))
		return set_copy(c->trace, sizeof c->trace, value, where, key, d);
	if (!strcmp(key, "json"))
		return set_copy(c->json_path, sizeof c->json_path, value, where, key, d);
	if (!strcmp(key, "dst-layout"))
		return set_copy(c->dst_layout, sizeof c->dst_layout, value, where, key, d);
	if (!strcmp(key, "events"))
		return set_copy(c->events_path, sizeof c->events_path, value, where, key, d);
	if (!strcmp(key, "description"))
		return set_copy(c->description, sizeof c->description, value, where, key, d);
	if (!strcmp(key, "quiet")) {
		bool q;
		if (get_bool(value, &q))
			return bad(d, where, key, value, "a boolean");
		c->quiet = q;
		return 0;
	}
	if (!strcmp(key, "fault"))
		return add_fault(c, value, where, d);
	if (!strcmp(key, "pause-at"))
		return set_pause(c, value, where, d);
	if (!strcmp(key, "expect-fired"))
		return set_expect_fired(c, value, where, d);
	if (!strcmp(key, "fault-counts"))
		return set_copy(c->fault_counts_path, sizeof c->fault_counts_path, value, where, key, d);
	return diag_set(d, "%s: key '%s' is not handled (internal)", where, key);
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* A relative file path in a scenario is relative to the scenario's folder. */
static void resolve_path(char *path, size_t size, const char *scenario)
{
	if (!path[0] || path[0] == '/')
		return;
	const char *slash = strrchr(scenario, '/');
	if (!slash)
		return;
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash - scenario), scenario, path);
	if (n > 0 && (size_t)n < sizeof buf && (size_t)n < size)
		memcpy(path, buf, (size_t)n + 1);
}

static void resolve_trace(struct runcfg *c, const char *scenario)
{
	resolve_path(c->trace, sizeof c->trace, scenario);
	resolve_path(c->dst_layout, sizeof c->dst_layout, scenario);
}

int runcfg_load_scenario(struct runcfg *c, const char *path, struct diag *d)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return diag_set(d, "%s: cannot open scenario: %s", path, strerror(errno));
	snprintf(c->scenario, sizeof c->scenario, "%s", path);
	char line[2048];
	unsigned long lineno = 0;
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof line, f)) {
		lineno++;
		char where[1100];
		snprintf(where, sizeof where, "%s:%lu", path, lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			rc = diag_set(d, "%s: line longer than %zu bytes", where, sizeof line - 2);
			break;
		}
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			rc = diag_set(d, "%s: expected 'key = value', got '%s'", where, s);
			break;
		}
		*eq = '\0';
		char *k = trim(s), *v = trim(eq + 1);
		if (!*v) {
			rc = diag_set(d, "%s: key '%s' has no value", where, k);
			break;
		}
		if (runcfg_is_flag(k) || find(k))
			rc = runcfg_set(c, k, v, where, d);
		else
			rc = diag_set(d, "%s: unknown key '%s' (see migbed run --help)", where, k);
	}
	if (rc == 0 && ferror(f))
		rc = diag_set(d, "%s: read error", path);
	fclose(f);
	if (rc == 0)
		resolve_trace(c, path);
	return rc;
}

int runcfg_finish(struct runcfg *c, struct diag *d)
{
	if (!c->dst_chunk_set)
		c->dst_chunk_bytes = c->chunk_bytes;
	if (c->n_expect_fired && !c->n_faults)
		return diag_set(d, "expect-fired needs at least one fault rule (fault = ... or --fault)");
	if (!c->expect_fired_all && c->n_expect_fired > c->n_faults)
		return diag_set(d, "expect-fired lists %d values for %d fault rules", c->n_expect_fired, c->n_faults);
	if (c->trace[0] && c->gen_keys_used)
		return diag_set(d, "trace generator keys (pattern, guest, ...) conflict with trace = %s", c->trace);
	if (!c->repr_set)
		c->repr = c->backend == HCA_BACKEND_VERBS ? MEM_REPR_BYTES : MEM_REPR_STAMP;
	if (c->backend == HCA_BACKEND_VERBS && c->repr != MEM_REPR_BYTES)
		return diag_set(d, "--backend verbs needs --mem bytes (real RDMA moves real bytes)");
	c->eng.seed = c->seed;
	c->gen.seed = c->seed;
	if (!c->trace[0]) {
		tgen_defaults(&c->gen);
		if (tgen_validate(&c->gen, d) < 0)
			return -EINVAL;
	}
	return 0;
}
