/* runcfg - run options from scenario files and the command line (see runcfg.h). */
#include "cli/runcfg.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vocab/cause.h"
#include "sim/size.h"
#include "transport/wire.h"

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

/* The one option table: every key of run, source and dest (scenario `key = value` and
 * `--key value`) is one row. --help (runcfg_print_keys) and README's key table
 * (runcfg_print_markdown, `migbed options --markdown`) are printed from it; runcfg_set refuses
 * a key not in it, then its setters (set_transport, set_engine, set_gen, ...) parse the value
 * with the row's bounds and name them in the error. `dflt` is the default as shown; where `exact`,
 * options_test.c checks that giving it changes nothing (it is the real default), and where
 * `dflt_fn` is set the default is printed from the constant the code uses. */
enum { OPT_RUN = 1, OPT_SOURCE = 2, OPT_DEST = 4, OPT_ALL = 7 };

struct key {
	const char *name;
	const char *arg;     /* the value's syntax; NULL: flag */
	const char *dflt;    /* default as shown, NULL: none */
	void (*dflt_fn)(char *buf, size_t n);   /* or printed from the code's constant */
	bool exact;          /* giving dflt leaves runcfg_defaults() unchanged */
	const char *unit;
	unsigned cmds;       /* OPT_* */
	const char *help;
};

#define ROW(n, a, d, x, u, h) { n, a, d, NULL, x, u, OPT_ALL, h }
#define ROWF(n, a, fn, u, h) { n, a, NULL, fn, true, u, OPT_ALL, h }
static const struct key keys[] = {
	ROW("trace", "FILE", "generated from the generator keys", false, "", "trace to replay (.zst ok)"),
	ROW("chunk-size", "SIZE", "1M", true, "bytes", "source chunk size, power of two 1M..1G (as QEMU)"),
	ROW("dst-chunk-size", "SIZE", "= chunk-size", false, "bytes", "destination chunk size"),
	ROW("pin-all", NULL, "off", false, "", "ask for rdma-pin-all (register all guest RAM up front)"),
	ROW("dst-pin-all", "BOOL", "true", true, "", "whether the destination accepts pin-all"),
	ROW("backend", "model|verbs", "model", true, "", "simulated HCA or real rdma-core verbs"),
	ROW("mem", "stamp|bytes", "stamp on model, bytes on verbs", false, "", "guest memory representation"),
	ROWF("link-gbps", "N", dflt_link, "Gb/s", "modelled link rate in Gb/s"),
	ROWF("latency-us", "N", dflt_latency, "us", "modelled one-way message latency in microseconds"),
	ROWF("reg-us-per-gib", "N", dflt_reg, "us/GiB", "modelled ibv_reg_mr cost per GiB in microseconds"),
	ROW("downtime-limit-ms", "N", "300", true, "ms", "downtime-limit"),
	ROW("max-bandwidth", "SIZE|unlimited", "128M", true, "bytes/s", "max-bandwidth in bytes/s"),
	ROW("device-state", "SIZE", "256K", true, "bytes", "device state sent at switchover"),
	ROW("max-time-ms", "N", "600000", true, "ms", "give up as NOT_CONVERGED after this much virtual time"),
	ROW("wait-timeout-ms", "N", "10000", true, "ms", "bound on every single wait"),
	ROW("trace-loop", "BOOL", "true", true, "", "replay the trace again when it ends"),
	ROW("seed", "N", "1", true, "", "run seed"),
	ROW("caps-version", "N", "1", true, "", "protocol version in the capabilities (others test refusal)"),
	ROW("protocol", "qemu|negotiated", "qemu", true, "", "chunk-size negotiation, both sides (qemu: none, as QEMU 11.1)"),
	ROW("src-protocol", "qemu|negotiated", "qemu", true, "", "the source's protocol (an old or new source)"),
	ROW("dst-protocol", "qemu|negotiated", "qemu", true, "", "the destination's protocol (an old or new destination)"),
	ROW("on-mismatch", "adapt|refuse", "adapt", true, "", "negotiated source facing another chunk size: adapt or refuse"),
	ROW("dst-memlock", "SIZE", "none", false, "bytes", "the destination may pin at most SIZE (model: simulated; verbs: migbed dest drops CAP_IPC_LOCK, sets RLIMIT_MEMLOCK)"),
	ROW("ack-timeout", "N", "rdma_cm's", false, "", "verbs: the QPs' ACK timeout exponent (4.096 us x 2^N; rdma_cm's default is 19 = 2.1 s per try)"),
	ROW("dst-layout", "FILE", "the run's trace", false, "", "a trace whose header (page size, blocks) is the destination's RAM layout"),
	ROW("qemu-stream", "BOOL", "false", true, "", "the peer is a real QEMU 7.2 -M none: dest reads its stream; source (`migbed source`) writes one"),
	ROW("qemu-expect", "FILE@ADDR", NULL, false, "", "destination, with qemu-stream: the content QEMU was given (-device loader,file=FILE,addr=ADDR)"),
	ROW("fault", "RULE", NULL, false, "", "inject a fault (repeatable): SITE[@SIDE] [TRIGGER...] -> ACTION, see docs/faults.md"),
	ROW("fault-counts", "FILE", NULL, false, "", "write how often each fault site was called, per side (for migbed torture)"),
	ROW("expect-fired", "N|>N[,...]", "none", false, "", "how often the fault rules must fire: one value for every rule, or a list for the rules in order (e.g. >0 or 1,0); otherwise the run fails its expectation"),
	ROW("expect", "completed|failed:CAUSE[|CAUSE...]", "completed", true, "", "the expected outcome"),
	ROW("json", "FILE", NULL, false, "", "write the result as JSON"),
	ROW("events", "FILE", NULL, false, "", "write the event log"),
	ROW("quiet", NULL, "off", false, "", "print only the verdict line"),
	ROW("pause-at", "SIDE:EVENT[#N]", NULL, false, "", "stop the process (SIGSTOP) right after the Nth (default 1st) event-log line 'SIDE EVENT' (side * = any), after a line on stderr; SIGCONT resumes. For tests that act mid-run (a link cut, a peer killed) at a point, not after a time"),
	ROW("src-addr", "ADDR", NULL, false, "", "verbs: source bind address (e.g. 198.18.0.2)"),
	ROW("dst-addr", "IP:PORT", NULL, false, "", "verbs: destination listen address (e.g. 198.18.0.1:29200)"),
	ROW("description", "TEXT", NULL, false, "", "free text (scenario files)"),
	/* trace generation */
	ROW("pattern", "P", "rand-set", true, "", "generated trace: rand-set|random|hotcold|idle"),
	ROW("guest", "SIZE", "256M", true, "bytes", "generated trace: guest RAM"),
	ROW("duration-ms", "N", "2000", true, "ms", "generated trace: duration"),
	ROW("epoch-ms", "N", "10", true, "ms", "generated trace: epoch spacing"),
	ROW("page-size", "SIZE", "4K", true, "bytes", "generated trace: page size"),
	ROW("workers", "N", "2", true, "", "rand-set: workers"),
	ROW("worker-bytes", "SIZE", "16M", true, "bytes", "rand-set: bytes per worker"),
	ROW("sweep-rate", "SIZE", "32M", true, "bytes/s", "rand-set: bytes/s per worker"),
	ROWF("rate", "N", dflt_rate, "pages/s", "random: pages/s, 1 or more"),
	ROW("hot-fraction", "F", "0.05", true, "", "hotcold: hot share of the guest (0..1)"),
	ROWF("hot-rate", "N", dflt_hot, "pages/s", "hotcold: hot pages/s, 1 or more"),
	ROWF("cold-rate", "N", dflt_cold, "pages/s", "hotcold: cold pages/s, 1 or more"),
};
#undef ROW
#undef ROWF
#define N_KEYS (sizeof keys / sizeof keys[0])

/* The default as shown ("" when none). */
static void key_default(const struct key *k, char *buf, size_t n)
{
	if (k->dflt_fn)
		k->dflt_fn(buf, n);
	else
		snprintf(buf, n, "%s", k->dflt ? k->dflt : "");
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

size_t runcfg_n_keys(void) { return N_KEYS; }
const char *runcfg_key_name(size_t i) { return i < N_KEYS ? keys[i].name : NULL; }
bool runcfg_key_default(size_t i, char *buf, size_t n)
{
	if (i >= N_KEYS)
		return false;
	key_default(&keys[i], buf, n);
	return keys[i].exact;
}

static void key_lhs(const struct key *k, char *buf, size_t n)
{
	snprintf(buf, n, "--%s%s%s", k->name, k->arg ? " " : "", k->arg ? k->arg : "");
}

void runcfg_print_keys(FILE *f)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		char lhs[64], dflt[128];
		key_lhs(&keys[i], lhs, sizeof lhs);
		key_default(&keys[i], dflt, sizeof dflt);
		fprintf(f, "  %-28s %s%s%s%s\n", lhs, keys[i].help, dflt[0] ? " (default " : "", dflt,
			dflt[0] ? ")" : "");
	}
}

/* Markdown, with '|' escaped in cells. */
static void md_cell(FILE *f, const char *s, bool code)
{
	fputs(code ? " `" : " ", f);
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputs(code ? "` |" : " |", f);
}

void runcfg_print_markdown(FILE *f)
{
	fprintf(f, "| key | meaning | unit | default | commands |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < N_KEYS; i++) {
		char lhs[64], dflt[128];
		key_lhs(&keys[i], lhs, sizeof lhs);
		key_default(&keys[i], dflt, sizeof dflt);
		fputc('|', f);
		md_cell(f, lhs, true);
		md_cell(f, keys[i].help, false);
		md_cell(f, keys[i].unit, false);
		md_cell(f, dflt, false);
		fprintf(f, " %s%s%s |\n", keys[i].cmds & OPT_RUN ? "run" : "",
			keys[i].cmds & OPT_SOURCE ? ", source" : "", keys[i].cmds & OPT_DEST ? ", dest" : "");
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
	/* a migration side (vocab/vocab.h), or one of the event log's own: sim, wire, * (any) */
	static const char *const log_sides[] = { "sim", "wire", "*" };
	char side[8] = "";
	if (side_len < sizeof side)
		memcpy(side, v, side_len);
	bool side_ok = side_len < sizeof side && vocab_side_lookup(side) >= 0;
	for (size_t i = 0; i < sizeof log_sides / sizeof *log_sides; i++)
		side_ok = side_ok || (side_len < sizeof side && !strcmp(side, log_sides[i]));
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
