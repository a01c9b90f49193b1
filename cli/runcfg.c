/* SPDX-License-Identifier: MIT */
/* runcfg - the one option table, and a run's options from scenario files and the command
 * line (see runcfg.h). */
#include "cli/runcfg.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/swarm.h"
#include "vocab/cause.h"
#include "sim/line.h"
#include "sim/size.h"
#include "run/hw.h"
#include "run/torture.h"
#include "transport/addr.h"
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
static void dflt_odp_fault(char *buf, size_t n)
{
	struct hca_cost c;
	hca_cost_defaults(&c);
	snprintf(buf, n, "%llu: an assumption, see docs/profiles.md", (unsigned long long)(c.odp_fault_ns / 1000));
}

static void dflt_rate(char *buf, size_t n) { snprintf(buf, n, "%u", TGEN_DEFAULT_RATE_PAGES_PER_S); }
static void dflt_hot(char *buf, size_t n) { snprintf(buf, n, "%u", TGEN_DEFAULT_HOT_PAGES_PER_S); }
static void dflt_cold(char *buf, size_t n) { snprintf(buf, n, "%u", TGEN_DEFAULT_COLD_PAGES_PER_S); }
static void dflt_workers(char *buf, size_t n) { snprintf(buf, n, "%u", TGEN_DEFAULT_WORKERS); }
static void dflt_worker_bytes(char *buf, size_t n)
{
	char a[32];
	snprintf(buf, n, "%s: at most guest / (2 x workers)", size_format(TGEN_DEFAULT_WORKER_BYTES, a, sizeof a));
}
static void dflt_sweep(char *buf, size_t n) { size_format(TGEN_DEFAULT_SWEEP_BYTES_PER_S, buf, n); }
static void dflt_guest(char *buf, size_t n) { size_format(TGEN_DEFAULT_GUEST_BYTES, buf, n); }

/* A value's type: how it is parsed, what the error calls it. */
enum otype {
	OT_FLAG,    /* no value on the command line ("true"); a boolean in a scenario */
	OT_BOOL,    /* true/false/yes/no/on/off/1/0 */
	OT_U64,     /* decimal, within [lo, hi] */
	OT_SIZE,    /* SIZE (4096, 64K, 1M, ...), within [lo, hi] */
	OT_POW2,    /* SIZE, a power of two within [lo, hi] */
	OT_FRAC,    /* a number strictly between 0 and 1 */
	OT_CHOICE,  /* one of the words of `arg` ("model|verbs"): its index */
	OT_TEXT,    /* a non-empty string that fits the field */
	OT_RULE,    /* its own syntax, parsed by the row's setter */
};
static const char *const otype_names[] = {
	[OT_FLAG] = "flag", [OT_BOOL] = "bool", [OT_U64] = "integer", [OT_SIZE] = "SIZE",
	[OT_POW2] = "SIZE, power of 2", [OT_FRAC] = "fraction", [OT_CHOICE] = "choice",
	[OT_TEXT] = "text", [OT_RULE] = "rule",
};

enum otgt { TGT_RUN, TGT_X };   /* the value goes into struct runcfg / struct opts_extra */

struct opts_dst {
	struct runcfg *c;
	struct opts_extra *x;
};

/* A row's setter: the value as given (v) and as parsed (x: the number, or a choice's index),
 * into o. 0 or -EINVAL with d set. NULL: stored by the row's offset and size. */
typedef int (*opts_setter)(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);

struct key {
	const char *name;
	char short_opt;      /* -o: the same key (trace gen --output) */
	const char *arg;     /* the value's syntax; NULL: flag */
	enum otype type;
	uint64_t lo, hi;     /* OT_U64, OT_SIZE, OT_POW2: the bounds */
	const char *alt;     /* a word accepted besides a number, stored as 0 ("unlimited") */
	const char *noun;    /* the error: "'V' is not NOUN BOUNDS" */
	const char *dflt;    /* default as shown, NULL: none */
	void (*dflt_fn)(char *buf, size_t n);   /* or printed from the code's constant */
	bool exact;          /* giving dflt leaves the defaults unchanged */
	const char *unit;
	unsigned cmds;       /* OPTS_* */
	unsigned req;        /* the commands that require it */
	const char *pat;     /* a generator key: "" any pattern, else the one it applies to */
	enum otgt tgt;
	size_t off, size;    /* the field */
	enum { ADDR_NO, ADDR_DST, ADDR_DST_SRC } addr;   /* OT_TEXT: a verbs address (transport/addr.h),
					 * checked, stored without QEMU's "rdma:" */
	opts_setter set;
	const char *help;
};

#define C_RUNS (OPTS_RUN | OPTS_SOURCE | OPTS_DEST | OPTS_TORTURE | OPTS_SWEEP)
/* a run's key that sweep takes as a list (a row of its own), or refuses (one run's output) */
#define C_NOSWEEP (C_RUNS & ~OPTS_SWEEP)
#define C_GEN (C_RUNS | OPTS_TRACE_GEN)
#define RUNF(f) .tgt = TGT_RUN, .off = offsetof(struct runcfg, f), .size = sizeof(((struct runcfg *)0)->f)
#define XF(f) .tgt = TGT_X, .off = offsetof(struct opts_extra, f), .size = sizeof(((struct opts_extra *)0)->f)
#define MS_MAX 86400000u    /* a day */
#define HOUR_MS 3600000u
#define STR_(x) #x
#define STR(x) STR_(x)   /* a default from a library constant, as the table prints it */

static int set_link(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_latency(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_reg(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_backend(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_mem(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_protocol(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_src_protocol(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_dst_protocol(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_mismatch(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_impl(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->src_impl = o->c->dst_impl = (enum proto_impl)x;
	return 0;
}
static int set_src_impl(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->src_impl = (enum proto_impl)x;
	return 0;
}
static int set_dst_impl(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->dst_impl = (enum proto_impl)x;
	return 0;
}
static int set_ack(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_dst_odp(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->dst_odp = (enum proto_odp)x;   /* the words' order is the enum's */
	return 0;
}
static int set_odp_fault(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->cost.odp_fault_ns = x * 1000;
	return 0;
}
static int set_layout_runs(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->gen.layout_runs = x ? TGEN_LAYOUT_EXP : TGEN_LAYOUT_FIXED;
	return 0;
}

static int set_qemu_expect(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
/* hw-set KEY=VALUE: checked now (the error names the key), kept as text, applied over the
 * profile by runcfg_finish. */
static int set_hw_set(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	struct hca_cost scratch;
	(void)x;
	hca_cost_defaults(&scratch);
	if (hw_set_pair(&scratch, v, w, d))
		return -EINVAL;
	if (o->c->n_hw_set == RUNCFG_MAX_HW_SET)
		return diag_set(d, "%s: more than %d hw-set values", w, RUNCFG_MAX_HW_SET);
	if (strlen(v) >= RUNCFG_HW_SET_MAX)
		return diag_set(d, "%s: '%s' is longer than %d bytes", w, v, RUNCFG_HW_SET_MAX - 1);
	snprintf(o->c->hw_set[o->c->n_hw_set++], RUNCFG_HW_SET_MAX, "%s", v);
	return 0;
}
static int set_fault(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_fired(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_expect_row(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_pause_row(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_pattern(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_blocks(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_layout_runs(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_shard(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_sites(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_seeds(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d);
static int set_sweep_list(struct opts_dst *o, enum sweep_axis a, const char *v, const char *w, struct diag *d);
#define X(NAME, key) \
	static int set_sweep_##NAME(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d) \
	{ \
		(void)x; \
		return set_sweep_list(o, SWEEP_##NAME, v, w, d); \
	}
SWEEP_AXIS_TABLE(X)
#undef X

/* The one option table: every key of every command is one row (see runcfg.h). --help
 * (opts_print_help) and README's key table (runcfg_print_markdown) are printed from it;
 * opts_set parses every value by the row's type and bounds. `dflt` is the default as shown;
 * where `exact`, options_test.c checks that giving it changes nothing (it is the real
 * default), and where `dflt_fn` is set it is printed from the constant the code uses. */
static const struct key keys[] = {
	{ .name = "trace", .arg = "FILE", .type = OT_TEXT, .dflt = "generated from the generator keys", .cmds = C_RUNS,
	  RUNF(trace), .help = "trace to replay (.zst ok)" },
	{ .name = "chunk-size", .arg = "SIZE", .type = OT_POW2, .lo = 1u << 20, .hi = 1u << 30, .noun = "a power of two",
	  .dflt = "1M", .exact = true, .unit = "bytes", .cmds = C_RUNS, RUNF(chunk_bytes),
	  .help = "source chunk size (as QEMU)" },
	{ .name = "dst-chunk-size", .arg = "SIZE", .type = OT_POW2, .lo = 1u << 20, .hi = 1u << 30, .noun = "a power of two",
	  .dflt = "= chunk-size", .unit = "bytes", .cmds = C_RUNS, RUNF(dst_chunk_bytes), .help = "destination chunk size" },
	{ .name = "pin-all", .type = OT_FLAG, .dflt = "off", .cmds = C_NOSWEEP, RUNF(pin_all),
	  .help = "ask for rdma-pin-all (register all guest RAM up front)" },
	{ .name = "dst-pin-all", .arg = "BOOL", .type = OT_BOOL, .dflt = "true", .exact = true, .cmds = C_RUNS,
	  RUNF(dst_pin_all), .help = "whether the destination accepts pin-all" },
	{ .name = "backend", .arg = "model|verbs", .type = OT_CHOICE, .dflt = "model; verbs for source and dest", .cmds = C_RUNS | OPTS_SWARM,
	  .set = set_backend, .help = "simulated HCA or real rdma-core verbs" },
	{ .name = "mem", .arg = "stamp|bytes", .type = OT_CHOICE, .dflt = "stamp on model, bytes on verbs", .cmds = C_RUNS,
	  .set = set_mem, .help = "guest memory representation" },
	{ .name = "link-gbps", .arg = "N", .type = OT_U64, .lo = 1, .hi = 10000, .noun = "a link rate in Gb/s",
	  .dflt_fn = dflt_link, .exact = true, .unit = "Gb/s", .cmds = C_NOSWEEP, .set = set_link,
	  .help = "modelled link rate" },
	{ .name = "latency-us", .arg = "N", .type = OT_U64, .lo = 0, .hi = 10000000, .noun = "a latency in microseconds",
	  .dflt_fn = dflt_latency, .exact = true, .unit = "us", .cmds = C_RUNS, .set = set_latency,
	  .help = "modelled one-way message latency" },
	{ .name = "reg-us-per-gib", .arg = "N", .type = OT_U64, .lo = 0, .hi = 1000000000,
	  .noun = "a cost in microseconds per GiB", .dflt_fn = dflt_reg, .exact = true, .unit = "us/GiB",
	  .cmds = C_RUNS, .set = set_reg, .help = "modelled ibv_reg_mr cost per GiB" },
	{ .name = "downtime-limit-ms", .arg = "N", .type = OT_U64, .lo = 1, .hi = HOUR_MS, .noun = "a time in ms",
	  .dflt = "300", .exact = true, .unit = "ms", .cmds = C_NOSWEEP, RUNF(eng.downtime_limit_ms),
	  .help = "downtime-limit" },
	{ .name = "max-bandwidth", .arg = "SIZE|unlimited", .type = OT_SIZE, .lo = 10, .hi = UINT64_MAX,
	  .alt = "unlimited", .noun = "a SIZE per second", .dflt = "128M", .exact = true, .unit = "bytes/s",
	  .cmds = C_NOSWEEP, RUNF(eng.max_bandwidth_bytes_per_s), .help = "max-bandwidth" },
	{ .name = "device-state", .arg = "SIZE", .type = OT_SIZE, .lo = 0, .hi = 64u << 20, .noun = "a SIZE",
	  .dflt = "256K", .exact = true, .unit = "bytes", .cmds = C_RUNS, RUNF(eng.device_state_bytes),
	  .help = "device state sent at switchover" },
	{ .name = "max-time-ms", .arg = "N", .type = OT_U64, .lo = 1, .hi = MS_MAX, .noun = "a time in ms",
	  .dflt = "600000", .exact = true, .unit = "ms", .cmds = C_RUNS, RUNF(eng.max_time_ms),
	  .help = "give up as NOT_CONVERGED after this much virtual time" },
	{ .name = "wait-timeout-ms", .arg = "N", .type = OT_U64, .lo = 1, .hi = HOUR_MS, .noun = "a time in ms",
	  .dflt = "10000", .exact = true, .unit = "ms", .cmds = C_RUNS | OPTS_SWARM, RUNF(wait_timeout_ms),
	  .help = "bound on every single wait" },
	{ .name = "trace-loop", .arg = "BOOL", .type = OT_BOOL, .dflt = "true", .exact = true, .cmds = C_RUNS,
	  RUNF(eng.trace_loop), .help = "replay the trace again when it ends" },
	{ .name = "seed", .arg = "N", .type = OT_U64, .lo = 0, .hi = UINT64_MAX, .noun = "a decimal number",
	  .dflt = "1", .exact = true, .cmds = C_GEN, .req = OPTS_TRACE_GEN, RUNF(seed),
	  .help = "seed of the run and of the generated trace's random stream" },
	{ .name = "caps-version", .arg = "N", .type = OT_U64, .lo = 0, .hi = UINT32_MAX, .noun = "a 32-bit version number",
	  .dflt = "1", .exact = true, .cmds = C_RUNS, RUNF(caps_version),
	  .help = "protocol version in the capabilities (others test refusal)" },
	{ .name = "protocol", .arg = "qemu|negotiated", .type = OT_CHOICE, .dflt = "qemu", .exact = true, .cmds = C_RUNS,
	  .set = set_protocol, .help = "chunk-size negotiation, both sides (qemu: none, as QEMU 11.1)" },
	{ .name = "src-protocol", .arg = "qemu|negotiated", .type = OT_CHOICE, .dflt = "qemu", .exact = true,
	  .cmds = C_RUNS, .set = set_src_protocol, .help = "the source's protocol (an old or new source)" },
	{ .name = "dst-protocol", .arg = "qemu|negotiated", .type = OT_CHOICE, .dflt = "qemu", .exact = true,
	  .cmds = C_RUNS, .set = set_dst_protocol, .help = "the destination's protocol (an old or new destination)" },
	{ .name = "on-mismatch", .arg = "adapt|refuse", .type = OT_CHOICE, .dflt = "adapt", .exact = true,
	  .cmds = C_RUNS, .set = set_mismatch,
	  .help = "negotiated source facing another chunk size: adapt or refuse" },
	{ .name = "impl", .arg = PROTO_IMPL_WORDS, .type = OT_CHOICE, .dflt = "migbed", .exact = true,
	  .cmds = C_RUNS, .set = set_impl,
	  .help = "the peer both sides play: migbed's own, or a QEMU version's behaviour (docs/profiles.md)" },
	{ .name = "src-impl", .arg = PROTO_IMPL_WORDS, .type = OT_CHOICE, .dflt = "migbed", .exact = true,
	  .cmds = C_RUNS, .set = set_src_impl, .help = "the peer the source plays (e.g. qemu-6.1)" },
	{ .name = "dst-impl", .arg = PROTO_IMPL_WORDS, .type = OT_CHOICE, .dflt = "migbed", .exact = true,
	  .cmds = C_RUNS, .set = set_dst_impl, .help = "the peer the destination plays (e.g. qemu-7.2)" },
	{ .name = "dst-memlock", .arg = "SIZE", .type = OT_SIZE, .lo = 1, .hi = UINT64_MAX, .noun = "a SIZE",
	  .dflt = "none", .unit = "bytes", .cmds = C_RUNS, RUNF(dst_memlock_bytes),
	  .help = "the destination may pin at most SIZE (model: simulated; verbs: migbed dest drops CAP_IPC_LOCK, sets RLIMIT_MEMLOCK)" },
	{ .name = "ack-timeout", .arg = "N", .type = OT_U64, .lo = 1, .hi = 31, .noun = "an exponent",
	  .dflt = "rdma_cm's", .cmds = C_RUNS, .set = set_ack,
	  .help = "verbs: the QPs' ACK timeout exponent (4.096 us x 2^N; rdma_cm's default is 19 = 2.1 s per try)" },
	{ .name = "rnr-retry", .arg = "N", .type = OT_U64, .lo = 0, .hi = 7, .noun = "an RNR retry count",
	  .dflt = "0", .exact = true, .cmds = C_RUNS, RUNF(rnr_retry),
	  .help = "the rnr_retry_count both sides pass to rdma_cm (0 as QEMU: an RNR NAK fails the WR at once; 7: retry forever; the model treats 1..6 as 0)" },
	{ .name = "dst-odp", .arg = "off|on|prefetch", .type = OT_CHOICE, .dflt = "off", .exact = true, .cmds = C_RUNS,
	  .set = set_dst_odp,
	  .help = "model: the destination registers guest RAM with On-Demand Paging (a WRITE to a page not yet faulted in is RNR NAKed); prefetch: then ibv_advise_mr, as QEMU does (docs/profiles.md)" },
	{ .name = "odp-fault-us", .arg = "N", .type = OT_U64, .lo = 0, .hi = 1000000, .noun = "a time in microseconds",
	  .dflt_fn = dflt_odp_fault, .exact = true, .unit = "us", .cmds = C_RUNS, .set = set_odp_fault,
	  .help = "modelled ODP fault-in time per 4 KiB page, while the requester retries RNR NAKs" },
	{ .name = "hw", .arg = "NAME|FILE", .type = OT_TEXT, .dflt = "none: the model's built-in costs", .cmds = C_RUNS,
	  RUNF(hw), .help = "hardware profile: the cost model's parameters, hw/NAME.hw or a file (migbed hw list; docs/model.md); link-gbps, latency-us, reg-us-per-gib, odp-fault-us given as well override it" },
	{ .name = "hw-set", .arg = "KEY=VALUE", .type = OT_RULE, .cmds = C_RUNS, .set = set_hw_set,
	  .help = "override one hardware-profile key, over --hw (repeatable; migbed hw keys)" },
	{ .name = "dst-layout", .arg = "FILE", .type = OT_TEXT, .dflt = "the run's trace", .cmds = C_RUNS,
	  RUNF(dst_layout), .help = "a trace whose header (page size, blocks) is the destination's RAM layout" },
	{ .name = "qemu-stream", .arg = "BOOL", .type = OT_BOOL, .dflt = "false", .exact = true, .cmds = C_RUNS,
	  RUNF(qemu_stream),
	  .help = "the peer is a real QEMU 7.2 -M none: dest reads its stream; source (`migbed source`) writes one" },
	{ .name = "qemu-expect", .arg = "FILE@ADDR", .type = OT_RULE, .cmds = C_RUNS, .set = set_qemu_expect,
	  .help = "destination, with qemu-stream: the content QEMU was given (-device loader,file=FILE,addr=ADDR)" },
	{ .name = "fault", .arg = "RULE", .type = OT_RULE, .cmds = C_RUNS, .set = set_fault,
	  .help = "inject a fault (repeatable): SITE[@SIDE] [TRIGGER...] -> ACTION, see docs/faults.md" },
	{ .name = "fault-counts", .arg = "FILE", .type = OT_TEXT, .cmds = C_NOSWEEP, RUNF(fault_counts_path),
	  .help = "write how often each fault site was called, per side (for migbed torture)" },
	{ .name = "expect-fired", .arg = "N|>N[,...]", .type = OT_RULE, .dflt = "none", .cmds = C_RUNS, .set = set_fired,
	  .help = "how often the fault rules must fire: one value for every rule, or a list for the rules in order (e.g. >0 or 1,0); otherwise the run fails its expectation" },
	{ .name = "expect", .arg = "completed|failed:CAUSE[|CAUSE...]", .type = OT_RULE, .dflt = "completed",
	  .exact = true, .cmds = C_RUNS, .set = set_expect_row, .help = "the expected outcome" },
	{ .name = "json", .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_RUN | OPTS_SOURCE | OPTS_DEST, RUNF(json_path),
	  .help = "write the result as JSON ('-': standard output, which then holds the JSON alone; the report goes to standard error)" },
	{ .name = "events", .arg = "FILE", .type = OT_TEXT, .cmds = C_NOSWEEP, RUNF(events_path),
	  .help = "write the event log" },
	{ .name = "timeline", .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_RUN | OPTS_SOURCE | OPTS_DEST, RUNF(timeline_path),
	  .help = "write the run as a Chrome/Perfetto trace (JSON) to look at: phases, rounds, switchover, downtime, control messages, chunk registrations, writes in flight, faults (`migbed timeline --help`)" },
	{ .name = "bundle", .arg = "DIR", .type = OT_TEXT, .cmds = OPTS_RUN | OPTS_SOURCE | OPTS_DEST, RUNF(bundle_path),
	  .help = "when the run misses its expectation, write a reproducer bundle DIR (and DIR.tar.zst): scenario, event log, result, build; `migbed replay DIR` reruns it. An existing DIR is refused before the run" },
	{ .name = "quiet", .type = OT_FLAG, .dflt = "off", .cmds = C_RUNS | OPTS_SWARM | OPTS_TRACE_GEN, RUNF(quiet),
	  .help = "print only the verdict line (run), and no progress line on a terminal" },
	{ .name = "pause-at", .arg = "SIDE:EVENT[#N]", .type = OT_RULE, .cmds = C_NOSWEEP, .set = set_pause_row,
	  .help = "stop the process (SIGSTOP) right after the Nth (default 1st) event-log line 'SIDE EVENT' (side * = any), after a line on stderr; SIGCONT resumes. For tests that act mid-run (a link cut, a peer killed) at a point, not after a time" },
	{ .name = "src-addr", .arg = "ADDR", .type = OT_TEXT, .cmds = C_RUNS, RUNF(src_addr),
	  .help = "verbs: source bind address (e.g. 198.18.0.2)" },
	{ .name = "dst-addr", .arg = "IP:PORT", .type = OT_TEXT, .cmds = C_RUNS, RUNF(dst_addr), .addr = ADDR_DST,
	  .help = "verbs: destination listen address (e.g. 198.18.0.1:29200, [fe80::1]:29200, or QEMU's URI rdma:198.18.0.1:29200)" },
	{ .name = "description", .arg = "TEXT", .type = OT_TEXT, .cmds = C_RUNS, RUNF(description),
	  .help = "free text (scenario files)" },
	/* trace generation (run, source, dest, torture: without --trace; trace gen) */
	{ .name = "pattern", .arg = "rand-set|random|hotcold|idle", .type = OT_CHOICE, .dflt = "rand-set", .exact = true,
	  .cmds = C_GEN, .req = OPTS_TRACE_GEN, .pat = "", .set = set_pattern, .help = "generated trace: the pattern" },
	{ .name = "guest", .arg = "SIZE", .type = OT_SIZE, .lo = 1, .hi = UINT64_MAX, .noun = "a SIZE", .dflt_fn = dflt_guest,
	  .exact = true, .unit = "bytes", .cmds = C_GEN & ~OPTS_SWEEP, .req = OPTS_TRACE_GEN, .pat = "", RUNF(gen.guest_bytes),
	  .help = "generated trace: guest RAM (one block \"pc.ram\"), a multiple of the page size; with blocks: their total (may be left out)" },
	{ .name = "blocks", .arg = "NAME=SIZE,...", .type = OT_RULE, .dflt = "one block \"pc.ram\" of the guest size",
	  .cmds = C_GEN & ~OPTS_SWEEP, .pat = "", .set = set_blocks,
	  .help = "generated trace: the guest's RAM blocks in order, as QEMU registers them (e.g. pc.ram=64M,pc.bios=256K,vga.vram=16M; at most " STR(TGEN_BLOCKS_MAX) "); the pattern sees them back to back as one guest" },
	{ .name = "duration-ms", .arg = "N", .type = OT_U64, .lo = 1, .hi = MS_MAX, .noun = "a time in ms", .dflt = "2000",
	  .exact = true, .unit = "ms", .cmds = C_GEN, .req = OPTS_TRACE_GEN, .pat = "", RUNF(gen.duration_ms),
	  .help = "generated trace: length of the workload in virtual time" },
	{ .name = "epoch-ms", .arg = "N", .type = OT_U64, .lo = 1, .hi = HOUR_MS, .noun = "a time in ms", .dflt = "10",
	  .exact = true, .unit = "ms", .cmds = C_GEN, .pat = "", RUNF(gen.epoch_ms),
	  .help = "generated trace: spacing of the epochs" },
	{ .name = "page-size", .arg = "SIZE", .type = OT_POW2, .lo = 512, .hi = 1u << 30, .noun = "a power of two",
	  .dflt = "4K", .exact = true, .unit = "bytes", .cmds = C_GEN, .pat = "", RUNF(gen.page_size),
	  .help = "generated trace: page size" },
	{ .name = "workers", .arg = "N", .type = OT_U64, .lo = 1, .hi = 4096, .noun = "a number of workers",
	  .dflt_fn = dflt_workers, .exact = true, .cmds = C_GEN, .pat = "rand-set", RUNF(gen.workers),
	  .help = "rand-set: workers, each sweeping its own region (like stress-ng --vm-method rand-set)" },
	{ .name = "worker-bytes", .arg = "SIZE", .type = OT_SIZE, .lo = 1, .hi = UINT64_MAX, .noun = "a SIZE",
	  .dflt_fn = dflt_worker_bytes, .exact = true, .unit = "bytes", .cmds = C_GEN, .pat = "rand-set",
	  RUNF(gen.worker_bytes), .help = "rand-set: each worker's region, regions back to back from page 0" },
	{ .name = "sweep-rate", .arg = "SIZE", .type = OT_SIZE, .lo = 1, .hi = UINT64_MAX, .noun = "a SIZE per second",
	  .dflt_fn = dflt_sweep, .exact = true, .unit = "bytes/s", .cmds = C_GEN, .pat = "rand-set",
	  RUNF(gen.sweep_bytes_per_s), .help = "rand-set: bytes per second swept by each worker" },
	{ .name = "rate", .arg = "N", .type = OT_U64, .lo = 1, .hi = UINT32_MAX, .noun = "a rate in pages/s",
	  .dflt_fn = dflt_rate, .exact = true, .unit = "pages/s", .cmds = C_GEN, .pat = "random",
	  RUNF(gen.rate_pages_per_s), .help = "random: pages written per second, drawn uniformly over the guest" },
	{ .name = "hot-fraction", .arg = "F", .type = OT_FRAC, .noun = "a fraction", .dflt = "0.05", .exact = true,
	  .cmds = C_GEN, .pat = "hotcold", RUNF(gen.hot_fraction),
	  .help = "hotcold: share of the guest that is hot (at its start)" },
	{ .name = "hot-rate", .arg = "N", .type = OT_U64, .lo = 1, .hi = UINT32_MAX, .noun = "a rate in pages/s",
	  .dflt_fn = dflt_hot, .exact = true, .unit = "pages/s", .cmds = C_GEN, .pat = "hotcold",
	  RUNF(gen.hot_pages_per_s), .help = "hotcold: pages per second written in the hot set" },
	{ .name = "cold-rate", .arg = "N", .type = OT_U64, .lo = 1, .hi = UINT32_MAX, .noun = "a rate in pages/s",
	  .dflt_fn = dflt_cold, .exact = true, .unit = "pages/s", .cmds = C_GEN, .pat = "hotcold",
	  RUNF(gen.cold_pages_per_s), .help = "hotcold: pages per second written in the cold rest" },
	{ .name = "churn", .arg = "BOOL", .type = OT_BOOL, .dflt = "false", .exact = true, .cmds = C_GEN, .pat = "rand-set",
	  RUNF(gen.churn), .help = "rand-set: each pass ends with a remap (stress-ng without --vm-keep): the whole region written again, the next pass from page 0; true by default with stress-ng's --vm, --vm-bytes or --vm-method" },
	{ .name = "vm-keep", .type = OT_FLAG, .dflt = "off", .cmds = C_GEN, .pat = "rand-set", RUNF(vm_keep),
	  .help = "stress-ng's --vm-keep: no remap churn (churn false)" },
	{ .name = "first-touch-ms", .arg = "N", .type = OT_U64, .lo = 0, .hi = MS_MAX, .noun = "a time in ms", .dflt = "0",
	  .exact = true, .unit = "ms", .cmds = C_GEN, .pat = "rand-set", RUNF(gen.first_touch_ms),
	  .help = "rand-set: when the workers first touch their regions and start sweeping (0: before the migration starts)" },
	{ .name = "sweep-jitter-pct", .arg = "N", .type = OT_U64, .lo = 0, .hi = 100, .noun = "a percentage", .dflt = "0",
	  .exact = true, .unit = "%", .cmds = C_GEN, .pat = "rand-set", RUNF(gen.sweep_jitter_pct),
	  .help = "rand-set: each worker's sweep rate per epoch drawn uniformly within +-N % (seeded; 0: exact)" },
	{ .name = "layout-nonzero-pct", .arg = "N", .type = OT_U64, .lo = 0, .hi = 100, .noun = "a percentage", .dflt = "0",
	  .exact = true, .unit = "%", .cmds = C_GEN, .pat = "", RUNF(gen.layout_nonzero_pct),
	  .help = "generated trace: share of the guest holding data at start (a version 2 trace's layout; the rest are never-touched holes; 0: all zero, version 1)" },
	{ .name = "layout-extent", .arg = "SIZE", .type = OT_SIZE, .lo = 1, .hi = UINT64_MAX, .noun = "a SIZE", .dflt = "2M",
	  .exact = true, .unit = "bytes", .cmds = C_GEN, .pat = "", RUNF(gen.layout_extent_bytes),
	  .help = "generated trace: the layout's granularity: data and holes are runs of whole extents, placed at random (seeded); with layout-runs exp, the scale of the runs' mean lengths" },
	{ .name = "layout-runs", .arg = "fixed|exp", .type = OT_CHOICE, .dflt = "fixed", .exact = true, .cmds = C_GEN,
	  .pat = "", .set = set_layout_runs,
	  .help = "generated trace: the layout's placement: fixed, whole extents aligned to the extent; exp, data and hole runs of random unaligned lengths (page-grained exponential) with the fixed placement's mean run lengths (extent / (1 - share) data, extent / share holes), exactly the share in data (docs/model.md)" },
	/* one command's own keys */
	{ .name = "output", .short_opt = 'o', .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_TRACE_GEN,
	  .req = OPTS_TRACE_GEN, XF(output),
	  .help = "-o FILE: the trace to write (FILE.zst: zstd; via FILE.tmp, renamed when complete; a symlink stays a link, its target is replaced). '-' is standard output, always plain text; a device or FIFO is written in place" },
	{ .name = "connect", .arg = "IP:PORT[@SRC_IP]", .type = OT_TEXT, .cmds = OPTS_SOURCE, .req = OPTS_SOURCE,
	  XF(connect), .addr = ADDR_DST_SRC,
	  .help = "the destination to migrate to (IP:PORT, [IPV6]:PORT or QEMU's rdma:IP:PORT), optionally from the local address SRC_IP (it picks the RDMA device)" },
	{ .name = "dump-mem", .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_SOURCE, XF(dump_mem),
	  .help = "write the first RAM block's bytes after the run (--mem bytes; to compare with a QEMU destination's pmemsave)" },
	{ .name = "listen", .arg = "IP:PORT", .type = OT_TEXT, .cmds = OPTS_DEST, .req = OPTS_DEST, XF(listen),
	  .addr = ADDR_DST, .help = "the address to wait for one source on (IP:PORT, [IPV6]:PORT or QEMU's rdma:IP:PORT, as -incoming takes it)" },
	{ .name = "accept-timeout-ms", .arg = "N", .type = OT_U64, .lo = 1, .hi = MS_MAX, .noun = "a time in ms",
	  .dflt = "60000", .exact = true, .unit = "ms", .cmds = OPTS_DEST, XF(accept_timeout_ms),
	  .help = "how long to wait for the source (wall time)" },
	{ .name = "ready-file", .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_DEST, XF(ready_file),
	  .help = "once listening, create FILE (atomically) holding \"listening IP:PORT pid N\"" },
	{ .name = "ready-fd", .arg = "N", .type = OT_U64, .lo = 3, .hi = 1023, .noun = "a file descriptor", .cmds = OPTS_DEST,
	  XF(ready_fd), .help = "once listening, write that line to file descriptor N and close it" },
	{ .name = "max-runs", .arg = "N", .type = OT_U64, .lo = 1, .hi = TORTURE_MAX_RUNS_LIMIT, .noun = "a number of runs",
	  .dflt = STR(TORTURE_MAX_RUNS_DEFAULT), .exact = true, .cmds = OPTS_TORTURE, XF(max_runs),
	  .help = "at most N reruns, spread evenly over the sites" },
	{ .name = "shard", .arg = "K/N", .type = OT_RULE, .dflt = "1/1", .exact = true, .cmds = OPTS_TORTURE | OPTS_SWEEP | OPTS_SWARM,
	  .tgt = TGT_X, .set = set_shard, .help = "only the K-th of N round-robin shares (CI matrices)" },
	{ .name = "json", .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_TORTURE | OPTS_SWEEP | OPTS_SWARM, XF(json),
	  .help = "write the result as JSON (the sweep, the torture sweep, the swarm)" },
	{ .name = "junit", .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_TORTURE | OPTS_SWARM, XF(junit),
	  .help = "write JUnit XML for CI systems: one testcase per rerun (torture) or seed (swarm), a failure per run that is not proper / finding, its message naming the cause, side and the replay command" },
	{ .name = "tap", .type = OT_FLAG, .dflt = "off", .exact = true, .cmds = OPTS_TORTURE | OPTS_SWARM, XF(tap),
	  .help = "TAP version 13 on standard output, one test per rerun (torture) or seed (swarm), instead of the table (torture) or the lines (swarm: those go to standard error)" },
	{ .name = "watchdog-ms", .arg = "N", .type = OT_U64, .lo = TORTURE_WATCHDOG_MS_MIN,
	  .hi = TORTURE_WATCHDOG_MS_MAX, .noun = "a time in ms", .dflt = STR(TORTURE_WATCHDOG_MS_DEFAULT), .exact = true, .unit = "ms", .cmds = OPTS_TORTURE | OPTS_SWARM, XF(watchdog_ms),
	  .help = "a run past N ms of wall time is a hang (torture kills it; swarm stops, naming the seed)" },
	{ .name = "jobs", .arg = "N", .type = OT_U64, .lo = 1, .hi = TORTURE_JOBS_MAX, .noun = "a number of jobs",
	  .dflt = "1", .exact = true, .cmds = OPTS_TORTURE, XF(jobs), .help = "reruns at a time" },
	{ .name = "bundles", .arg = "DIR", .type = OT_TEXT, .dflt = "migbed-bundles", .exact = true, .cmds = OPTS_TORTURE | OPTS_SWARM,
	  XF(bundles), .help = "every run that is not proper writes a reproducer bundle DIR/SITE-SIDE-CALL (torture), DIR/seed-N (swarm), replacing one of that name" },
	/* swarm */
	{ .name = "seeds", .arg = "A..B", .type = OT_RULE, .dflt = "1..100", .exact = true, .cmds = OPTS_SWARM,
	  .tgt = TGT_X, .set = set_seeds, .help = "the seeds to run, one configuration each (or one seed N)" },
	{ .name = "runs", .arg = "N", .type = OT_U64, .lo = 1, .hi = 100000000, .noun = "a number of runs",
	  .cmds = OPTS_SWARM, XF(runs), .help = "the seeds 1..N (instead of --seeds)" },
	{ .name = "time-budget", .arg = "S", .type = OT_U64, .lo = 1, .hi = 604800, .noun = "a time in s", .unit = "s",
	  .cmds = OPTS_SWARM, XF(time_budget_s), .help = "start no run after S seconds of wall time (the seeds run are then a prefix)" },
	{ .name = "check-determinism", .type = OT_FLAG, .dflt = "off", .exact = true, .cmds = OPTS_SWARM, XF(check_determinism),
	  .help = "run each seed twice and compare the event logs byte for byte" },
	{ .name = "shrink-max-runs", .arg = "N", .type = OT_U64, .lo = 0, .hi = 100000, .noun = "a number of runs",
	  .dflt = "100", .exact = true, .cmds = OPTS_SWARM, XF(shrink_max_runs),
	  .help = "shrink each finding's bundle (migbed shrink, DIR/seed-N.shrunk) with at most N candidate runs and 30 s; 0: do not" },
	{ .name = "sites", .arg = "GLOB,...", .type = OT_RULE, .dflt = "all but the umbrella sites post_send and cm.*",
	  .cmds = OPTS_TORTURE, .tgt = TGT_X, .set = set_sites, .help = "only these fault sites (e.g. 'reg_mr,msg.*')" },
	/* sweep: a list per swept run key (each value checked by that key's row), its outputs */
	{ .name = "chunk-sizes", .arg = "SIZE,...", .type = OT_RULE, .dflt = "the run's chunk-size", .cmds = OPTS_SWEEP,
	  .tgt = TGT_X, .set = set_sweep_CHUNK,
	  .help = "sweep: the chunk sizes, one run each (chunk-size: both sides unless --dst-chunk-size is given)" },
	{ .name = "pin-all", .arg = "BOOL,...", .type = OT_RULE, .dflt = "the run's pin-all", .cmds = OPTS_SWEEP,
	  .tgt = TGT_X, .set = set_sweep_PIN_ALL, .help = "sweep: pin-all off and/or on (e.g. off,on)" },
	{ .name = "guest", .arg = "SIZE,...", .type = OT_RULE, .dflt = "the run's guest", .cmds = OPTS_SWEEP,
	  .tgt = TGT_X, .set = set_sweep_GUEST, .help = "sweep: generated trace's guest RAM sizes" },
	{ .name = "downtime-limit-ms", .arg = "N,...", .type = OT_RULE, .dflt = "the run's downtime-limit-ms",
	  .cmds = OPTS_SWEEP, .tgt = TGT_X, .set = set_sweep_DOWNTIME, .help = "sweep: downtime-limit values (ms)" },
	{ .name = "max-bandwidth", .arg = "SIZE|unlimited,...", .type = OT_RULE, .dflt = "the run's max-bandwidth",
	  .cmds = OPTS_SWEEP, .tgt = TGT_X, .set = set_sweep_BANDWIDTH, .help = "sweep: max-bandwidth values (bytes/s)" },
	{ .name = "link-gbps", .arg = "N,...", .type = OT_RULE, .dflt = "the run's link-gbps", .cmds = OPTS_SWEEP,
	  .tgt = TGT_X, .set = set_sweep_LINK, .help = "sweep: modelled link rates (Gb/s)" },
	{ .name = "csv", .arg = "FILE", .type = OT_TEXT, .cmds = OPTS_SWEEP, XF(csv),
	  .help = "write the rows as CSV ('-': standard output)" },
	{ .name = "plot", .arg = "FILE.svg|FILE.png", .type = OT_TEXT, .cmds = OPTS_SWEEP, XF(plot),
	  .help = "plot total time, downtime and transferred against chunk size (log x) with gnuplot" },
};
#undef RUNF
#undef XF
#define N_KEYS (sizeof keys / sizeof keys[0])
_Static_assert(N_KEYS <= RUNCFG_MAX_KEYS, "the option table outgrew RUNCFG_MAX_KEYS");
_Static_assert(sizeof otype_names / sizeof otype_names[0] == OT_RULE + 1, "a type without a name");

/* ---- the rows ------------------------------------------------------------------------- */

/* Other tools' spellings, accepted as options and scenario keys for the rows that mean the
 * same with the same unit: QEMU's (its QAPI migration parameters and capabilities; its
 * max-bandwidth is the row's own name) and stress-ng's --vm options for the generator
 * (rand-set is stress-ng's --vm-method rand-set: N workers, each sweeping its own region).
 * only: the one value the alias may take (other values do not map). */
static const struct alias {
	const char *alias, *name, *whose, *only;
	bool total;       /* the value is the workers' total (worker-bytes x workers): divided */
} aliases[] = {
	{ "x-rdma-chunk-size", "chunk-size", "QEMU's", NULL, false },       /* QEMU 11.1's parameter (bytes) */
	{ "rdma-pin-all", "pin-all", "QEMU's", NULL, false },               /* the migration capability */
	{ "downtime-limit", "downtime-limit-ms", "QEMU's", NULL, false },   /* the parameter, in ms as here */
	{ "vm", "workers", "stress-ng's", NULL, false },                    /* --vm N: N workers */
	/* stress-ng 0.15 divides --vm-bytes among the --vm workers (docs/record.md, measured:
	 * --vm 4 --vm-bytes 64M holds 4 x 16 MiB): the total, divided in runcfg_finish */
	{ "vm-bytes", "worker-bytes", "stress-ng's", NULL, true },
	{ "vm-method", "pattern", "stress-ng's", "rand-set", false },       /* the one method modelled */
};

/* stress-ng's --vm options that have no meaning for a generated trace: refused by name. */
static const struct {
	const char *name, *why;
} foreign[] = {
	{ "vm-hang", "migbed's workers never unmap their memory" },
	{ "vm-locked", "a trace does not model how the host backs guest memory" },
	{ "vm-madvise", "a trace does not model how the host backs guest memory" },
	{ "vm-populate", "a trace does not model how the host backs guest memory" },
	{ "vm-ops", "the workload is bounded by --duration-ms" },
};

const char *runcfg_foreign_why(const char *name)
{
	for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
		if (!strcmp(foreign[i].name, name))
			return foreign[i].why;
	return NULL;
}

static const struct alias *alias_named(const char *alias)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(aliases[i].alias, alias))
			return &aliases[i];
	return NULL;
}

static const struct key *find(const char *name, unsigned cmd)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if ((keys[i].cmds & cmd) && !strcmp(keys[i].name, name))
			return &keys[i];
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(aliases[i].alias, name))
			return find(aliases[i].name, cmd);
	return NULL;
}

/* " (also --ALIAS[ VALUE], WHOSE name)" for a row with aliases, else "". */
static void aliases_text(const char *name, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0] && len < n; i++) {
		const struct alias *a = &aliases[i];
		if (strcmp(a->name, name))
			continue;
		int w = snprintf(buf + len, n - len, " (also --%s%s%s, %s name%s)", a->alias, a->only ? " " : "",
				 a->only ? a->only : "", a->whose,
				 a->total ? ": the total over the workers, divided among them" : "");
		len += w > 0 ? (size_t)w : 0;
	}
}

const char *runcfg_alias_of(const char *name)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(aliases[i].name, name))
			return aliases[i].alias;
	return NULL;
}

static const struct key *find_short(char ch, unsigned cmd)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if ((keys[i].cmds & cmd) && keys[i].short_opt == ch)
			return &keys[i];
	return NULL;
}

static bool *given_of(const struct key *k, const struct runcfg *c, const struct opts_extra *x)
{
	size_t i = (size_t)(k - keys);
	if (k->tgt == TGT_RUN)
		return c ? (bool *)&c->given[i] : NULL;
	return x ? (bool *)&x->given[i] : NULL;
}

bool runcfg_known(const char *key) { return find(key, OPTS_RUN) != NULL; }
bool runcfg_is_flag(const char *key)
{
	const struct key *k = find(key, OPTS_RUN);
	return k && !k->arg;
}
bool runcfg_given(const struct runcfg *c, const char *key)
{
	const struct key *k = find(key, OPTS_RUN);
	return k && c->given[k - keys];
}

const char *opts_cmd_name(unsigned cmd)
{
	switch (cmd) {
	case OPTS_RUN: return "run";
	case OPTS_SOURCE: return "source";
	case OPTS_DEST: return "dest";
	case OPTS_TRACE_GEN: return "trace gen";
	case OPTS_TORTURE: return "torture";
	case OPTS_SWEEP: return "sweep";
	case OPTS_SWARM: return "swarm";
	}
	return "?";
}

size_t runcfg_n_keys(void) { return N_KEYS; }
const char *runcfg_key_name(size_t i) { return i < N_KEYS ? keys[i].name : NULL; }
unsigned runcfg_key_cmds(size_t i) { return i < N_KEYS ? keys[i].cmds : 0; }

/* The default as shown ("" when none). */
static void key_default(const struct key *k, char *buf, size_t n)
{
	if (k->dflt_fn)
		k->dflt_fn(buf, n);
	else
		snprintf(buf, n, "%s", k->dflt ? k->dflt : "");
}

bool runcfg_key_default(size_t i, char *buf, size_t n)
{
	if (i >= N_KEYS)
		return false;
	key_default(&keys[i], buf, n);
	return keys[i].exact;
}

/* ---- bounds, as the errors, --help and README say them ----------------------------------- */

static bool is_sized(const struct key *k) { return k->type == OT_SIZE || k->type == OT_POW2; }
static bool is_number(const struct key *k) { return k->type == OT_U64 || is_sized(k); }

static void fmt_num(const struct key *k, uint64_t v, char *buf, size_t n)
{
	if (is_sized(k))
		size_format(v, buf, n);
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

/* " from 1 to 4096", " of 1 or more", " up to 64M" or "" (no bound). */
static void bounds_words(const struct key *k, char *buf, size_t n)
{
	char lo[24], hi[24];
	fmt_num(k, k->lo, lo, sizeof lo);
	fmt_num(k, k->hi, hi, sizeof hi);
	bool has_lo = k->lo > 0, has_hi = k->hi < UINT64_MAX;
	if (k->type == OT_FRAC)
		snprintf(buf, n, " strictly between 0 and 1");
	else if (!is_number(k) || (!has_lo && !has_hi))
		buf[0] = '\0';
	else if (has_lo && has_hi)
		snprintf(buf, n, " from %s to %s", lo, hi);
	else if (has_lo)
		snprintf(buf, n, " of %s or more", lo);
	else
		snprintf(buf, n, " up to %s", hi);
}

/* "1..4096", ">= 1", "<= 64M", "0 < F < 1", or "" (README's bounds column, --help). */
static void bounds_short(const struct key *k, char *buf, size_t n)
{
	char lo[24], hi[24];
	fmt_num(k, k->lo, lo, sizeof lo);
	fmt_num(k, k->hi, hi, sizeof hi);
	bool has_lo = k->lo > 0, has_hi = k->hi < UINT64_MAX;
	if (k->type == OT_FRAC)
		snprintf(buf, n, "0 < F < 1");
	else if (!is_number(k) || (!has_lo && !has_hi))
		buf[0] = '\0';
	else if (has_lo && has_hi)
		snprintf(buf, n, "%s..%s", lo, hi);
	else
		snprintf(buf, n, "%s %s", has_lo ? ">=" : "<=", has_lo ? lo : hi);
}

/* What a valid value is: "a link rate in Gb/s from 1 to 10000", "model or verbs", ... */
static void what_valid(const struct key *k, char *buf, size_t n)
{
	char b[96];
	if (k->type == OT_BOOL || k->type == OT_FLAG) {
		snprintf(buf, n, "a boolean (true/false)");
		return;
	}
	if (k->type == OT_CHOICE) {   /* "a|b|c" -> "a, b or c" */
		size_t len = 0, words = 1;
		for (const char *s = k->arg; *s; s++)
			words += *s == '|';
		buf[0] = '\0';
		for (const char *s = k->arg; *s && len + 4 < n; s++) {
			if (*s == '|')
				len += (size_t)snprintf(buf + len, n - len, "%s", --words == 1 ? " or " : ", ");
			else
				buf[len++] = *s, buf[len] = '\0';
		}
		return;
	}
	bounds_words(k, b, sizeof b);
	snprintf(buf, n, "%s%s%s%s%s", k->noun ? k->noun : "a value", b, k->alt ? ", or '" : "",
		 k->alt ? k->alt : "", k->alt ? "'" : "");
}

static int bad(struct diag *d, const char *where, const char *key, const char *value, const char *what)
{
	if (where[0] == '-')   /* "--key" already names the key */
		return diag_set(d, "%s: '%s' is not %s", where, value, what);
	return diag_set(d, "%s: %s: '%s' is not %s", where, key, value, what);
}

static int bad_row(struct diag *d, const char *where, const struct key *k, const char *value)
{
	char what[160];
	what_valid(k, what, sizeof what);
	return bad(d, where, k->name, value, what);
}

/* ---- parsing a value by its row -------------------------------------------------------------- */

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

static int get_frac(const char *v, double *out)
{
	char *end;
	if (!(isdigit((unsigned char)v[0]) || v[0] == '.'))
		return -EINVAL;
	errno = 0;
	double f = strtod(v, &end);
	if (errno || *end || !isfinite(f) || !(f > 0.0 && f < 1.0))
		return -EINVAL;
	*out = f;
	return 0;
}

/* The index of v among the words of "a|b|c", or -1. */
static int choice_index(const char *arg, const char *v)
{
	size_t vl = strlen(v);
	int i = 0;
	for (const char *s = arg; s; i++) {
		const char *bar = strchr(s, '|');
		size_t wl = bar ? (size_t)(bar - s) : strlen(s);
		if (wl == vl && !strncmp(s, v, vl))
			return i;
		s = bar ? bar + 1 : NULL;
	}
	return -1;
}

/* A number of the row's type within its bounds (or its `alt` word, as 0). */
static int get_number(const struct key *k, const char *v, uint64_t *out)
{
	uint64_t x;
	if (k->alt && !strcmp(v, k->alt)) {
		*out = 0;
		return 0;
	}
	int rc = k->type == OT_U64 ? size_parse_u64(v, &x) : size_parse(v, &x);
	if (rc || x < k->lo || x > k->hi)
		return -EINVAL;
	if (k->type == OT_POW2 && (x & (x - 1)))
		return -EINVAL;
	*out = x;
	return 0;
}

static void *field(const struct key *k, struct opts_dst *o)
{
	char *base = k->tgt == TGT_RUN ? (char *)o->c : (char *)o->x;
	return base + k->off;
}

static int store_text(const struct key *k, struct opts_dst *o, const char *v, const char *w, struct diag *d)
{
	struct addr_rdma a;
	/* QEMU's URI of a verbs address: stored without its scheme. Anything else as given: the
	 * model takes any token ("127.0.0.1:0" too); a verbs run checks it (runcfg_finish, rdma_cm). */
	if (k->addr != ADDR_NO && !strncmp(v, ADDR_URI_PREFIX, strlen(ADDR_URI_PREFIX)) &&
	    !addr_parse(v, k->addr == ADDR_DST_SRC, &a))
		v += strlen(ADDR_URI_PREFIX);
	if (strlen(v) >= k->size || !v[0]) {
		if (w[0] == '-')
			return diag_set(d, "%s: value empty or longer than %zu bytes", w, k->size - 1);
		return diag_set(d, "%s: %s: value empty or longer than %zu bytes", w, k->name, k->size - 1);
	}
	memcpy(field(k, o), v, strlen(v) + 1);
	return 0;
}

/* Parse v by the row and store it. 0 or -EINVAL with d set. */
static int set_value(const struct key *k, struct opts_dst *o, const char *v, const char *w, struct diag *d)
{
	uint64_t x = 0;
	bool b;
	double f;
	switch (k->type) {
	case OT_FLAG:
	case OT_BOOL:
		if (get_bool(v, &b))
			return bad_row(d, w, k, v);
		*(bool *)field(k, o) = b;
		return 0;
	case OT_FRAC:
		if (get_frac(v, &f))
			return bad_row(d, w, k, v);
		*(double *)field(k, o) = f;
		return 0;
	case OT_CHOICE: {
		int i = choice_index(k->arg, v);
		return i < 0 ? bad_row(d, w, k, v) : k->set(o, v, (uint64_t)i, w, d);
	}
	case OT_TEXT:
		return store_text(k, o, v, w, d);
	case OT_RULE:
		return k->set(o, v, 0, w, d);
	case OT_U64:
	case OT_SIZE:
	case OT_POW2:
		if (get_number(k, v, &x))
			return bad_row(d, w, k, v);
		if (k->set)
			return k->set(o, v, x, w, d);
		if (k->size == sizeof(uint32_t))
			*(uint32_t *)field(k, o) = (uint32_t)x;   /* bounds: hi <= UINT32_MAX */
		else
			*(uint64_t *)field(k, o) = x;
		return 0;
	}
	return diag_set(d, "%s: key '%s' has no type (internal)", w, k->name);
}

int opts_set(unsigned cmd, struct runcfg *c, struct opts_extra *x, const char *key, const char *value,
	     const char *where, struct diag *d)
{
	const struct key *k = find(key, cmd);
	const struct alias *al = alias_named(key);
	if (!k && runcfg_foreign_why(key))
		return diag_set(d, "%s: stress-ng's --%s does not map onto migbed: %s", where, key,
				runcfg_foreign_why(key));
	if (!k)
		return diag_set(d, "%s: unknown key '%s' (see migbed %s --help)", where, key, opts_cmd_name(cmd));
	if (al && al->only && strcmp(value, al->only))
		return diag_set(d, "%s: %s method '%s' does not map onto migbed: only %s does (as --%s %s); "
			       "migbed's own patterns are --%s %s", where, al->whose, value, al->only, k->name,
			       al->only, k->name, k->arg);
	struct opts_dst o = { c, x };
	bool *g = given_of(k, c, x);
	if (!g)
		return diag_set(d, "%s: key '%s' has nowhere to go (internal)", where, key);
	int rc = set_value(k, &o, value, where, d);
	if (rc == 0)
		*g = true;
	if (rc == 0 && c && al && !strcmp(al->whose, "stress-ng's"))
		c->stressng_spelling = true;   /* stress-ng's spellings bring its default: remap churn */
	if (rc == 0 && c && k->tgt == TGT_RUN && k->off == offsetof(struct runcfg, gen.worker_bytes))
		c->worker_bytes_total = al && al->total;   /* the last of --vm-bytes / --worker-bytes wins */
	return rc;
}

int runcfg_set(struct runcfg *c, const char *key, const char *value, const char *where, struct diag *d)
{
	return opts_set(OPTS_RUN, c, NULL, key, value, where, d);
}

void opts_extra_defaults(struct opts_extra *x)
{
	struct opts_dst o = { NULL, x };
	memset(x, 0, sizeof *x);
	for (size_t i = 0; i < N_KEYS; i++) {
		struct diag d = { 0 };
		if (keys[i].tgt == TGT_X && keys[i].exact && keys[i].dflt)
			set_value(&keys[i], &o, keys[i].dflt, "--", &d);   /* a table row: checked by options_test */
	}
}

/* ---- the setters of rows that convert, choose or parse a syntax of their own ------------------- */

static int set_link(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->cost.link_bytes_per_s = x * 1000000000ull / 8;
	return 0;
}
static int set_latency(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->cost.msg_latency_ns = x * 1000;
	return 0;
}
static int set_reg(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->cost.reg_per_page_ns = x * 1000 / PAGES_PER_GIB;
	o->c->cost.dst_reg_per_page_ns = o->c->cost.reg_per_page_ns;   /* both sides, as before hw */
	return 0;
}
static int set_backend(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->backend = x == 0 ? HCA_BACKEND_MODEL : HCA_BACKEND_VERBS;
	return 0;
}
static int set_mem(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->repr = x == 0 ? MEM_REPR_STAMP : MEM_REPR_BYTES;
	return 0;
}
static int set_protocol(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->src_negotiate = o->c->dst_negotiate = x == 1;
	return 0;
}
static int set_src_protocol(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->src_negotiate = x == 1;
	return 0;
}
static int set_dst_protocol(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->dst_negotiate = x == 1;
	return 0;
}
static int set_mismatch(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->refuse_mismatch = x == 1;
	return 0;
}
static int set_ack(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)v, (void)w, (void)d;
	o->c->ack_timeout = (int)x;
	return 0;
}
static int set_pattern(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)x;
	return tgen_pattern_parse(v, &o->c->gen.pattern) ? diag_set(d, "%s: pattern '%s' (internal)", w, v) : 0;
}

static int set_blocks(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	struct diag e;
	(void)x;
	diag_clear(&e);
	if (tgen_blocks_parse(&o->c->gen, v, &e))
		return diag_set(d, "%s%s: '%s': %s", w, w[0] == '-' ? "" : ": blocks", v, e.msg);
	return 0;
}

static int set_qemu_expect(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	struct runcfg *c = o->c;
	const char *at = strrchr(v, '@');
	(void)x;
	if (!at || at == v || size_parse_u64(at + 1, &c->qemu_expect_addr) != 0 ||
	    (size_t)(at - v) >= sizeof c->qemu_expect_file)
		return bad(d, w, "qemu-expect", v, "FILE@ADDR (a file and a decimal guest address)");
	memcpy(c->qemu_expect_file, v, (size_t)(at - v));
	c->qemu_expect_file[at - v] = '\0';
	return 0;
}

static int set_expect(struct runcfg *c, const char *v, const char *where, struct diag *d);
static int add_fault(struct runcfg *c, const char *v, const char *where, struct diag *d);
static int set_expect_fired(struct runcfg *c, const char *v, const char *where, struct diag *d);
static int set_pause(struct runcfg *c, const char *v, const char *where, struct diag *d);

static int set_fault(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)x;
	return add_fault(o->c, v, w, d);
}
static int set_fired(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)x;
	return set_expect_fired(o->c, v, w, d);
}
static int set_expect_row(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)x;
	return set_expect(o->c, v, w, d);
}
static int set_pause_row(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)x;
	return set_pause(o->c, v, w, d);
}

/* torture --shard K/N, 1 <= K <= N <= the most runs. */
static int set_seeds(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	struct diag e = { 0 };
	(void)x;
	if (swarm_seeds_parse(v, &o->x->seed_lo, &o->x->seed_hi, &e))
		return diag_set(d, "%s: %s", w, e.msg);
	return 0;
}

static int set_shard(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	unsigned long long k, n;
	char tail;
	(void)x;
	if (!isdigit((unsigned char)v[0]) || sscanf(v, "%llu/%llu%c", &k, &n, &tail) != 2 || n == 0 || k == 0 ||
	    k > n || n > TORTURE_SHARDS_MAX)
		return bad(d, w, "shard", v, "K/N with 1 <= K <= N <= " STR(TORTURE_SHARDS_MAX));
	o->x->shard_k = k;
	o->x->shard_n = n;
	return 0;
}

/* sweep --chunk-sizes, --guest, ...: a list (run/sweep.h's syntax), each value checked by the
 * swept run key's own row ("--chunk-sizes: '3M' is not a power of two from 1M to 1G"). */
static int set_sweep_list(struct opts_dst *o, enum sweep_axis a, const char *v, const char *w, struct diag *d)
{
	struct sweep_values *sv = &o->x->sweep[a];
	struct runcfg *c = malloc(sizeof *c);
	struct diag why = { 0 };
	int rc = 0;
	if (!c)
		return diag_set(d, "%s: out of memory", w);
	if (sweep_list_parse(v, sv, &why))
		rc = diag_set(d, "%s: %s", w, why.msg);
	for (size_t i = 0; rc == 0 && i < sv->n; i++) {
		runcfg_defaults(c);
		rc = opts_set(OPTS_RUN, c, NULL, sweep_axis_key(a), sv->v[i], w, d);
	}
	if (rc)
		sv->n = 0;
	free(c);
	return rc;
}

/* torture --sites: every glob must match at least one fault site (a typo would otherwise
 * select nothing, or less than meant, and the sweep would pass): run/torture.h's check, the
 * one the sweep itself makes. */
_Static_assert(sizeof(((struct opts_extra *)0)->sites) == TORTURE_SITES_MAX + 1, "--sites: the sweep's bound");
static int set_sites(struct opts_dst *o, const char *v, uint64_t x, const char *w, struct diag *d)
{
	(void)x;
	(void)w;                       /* the check names the key: --sites */
	if (torture_sites_check(v, d))
		return -EINVAL;
	memcpy(o->x->sites, v, strlen(v) + 1);
	return 0;
}

/* ---- --help and README ------------------------------------------------------------------------ */

static void key_lhs(const struct key *k, char *buf, size_t n)
{
	snprintf(buf, n, "--%s%s%s", k->name, k->arg ? " " : "", k->arg ? k->arg : "");
}

static void print_row(FILE *f, const struct key *k, unsigned cmd)
{
	char lhs[64], dflt[128], bnd[80];
	key_lhs(k, lhs, sizeof lhs);
	key_default(k, dflt, sizeof dflt);
	bounds_short(k, bnd, sizeof bnd);
	const char *unit = k->unit && strcmp(k->unit, "bytes") ? k->unit : "";
	bool req = k->req & cmd;
	fprintf(f, "  %-28s %s", lhs, k->help);
	char also[160];
	aliases_text(k->name, also, sizeof also);
	fputs(also, f);
	if (bnd[0])
		fprintf(f, " [%s%s%s]", bnd, unit[0] ? " " : "", unit);
	if (req)
		fprintf(f, " (required)");
	else if (dflt[0])
		fprintf(f, " (default %s)", dflt);
	fputc('\n', f);
}

void opts_print_help(FILE *f, unsigned cmd)
{
	for (int pass = 0; pass < 3; pass++)   /* required, the command's own, a run's */
		for (size_t i = 0; i < N_KEYS; i++) {
			const struct key *k = &keys[i];
			int p = (k->req & cmd) ? 0 : k->tgt == TGT_X ? 1 : 2;
			if ((k->cmds & cmd) && p == pass)
				print_row(f, k, cmd);
		}
}

void runcfg_print_keys(FILE *f) { opts_print_help(f, OPTS_RUN); }

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

static void md_cmds(FILE *f, const struct key *k)
{
	static const unsigned order[] = { OPTS_RUN, OPTS_SOURCE, OPTS_DEST, OPTS_TORTURE, OPTS_SWEEP, OPTS_SWARM, OPTS_TRACE_GEN };
	const char *sep = " ";
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		if (!(k->cmds & order[i]))
			continue;
		fprintf(f, "%s%s%s", sep, order[i] == OPTS_TRACE_GEN ? "trace-gen" : opts_cmd_name(order[i]),
			(k->req & order[i]) ? " (required)" : "");
		sep = ", ";
	}
	fputs(" |\n", f);
}

void runcfg_print_markdown(FILE *f)
{
	fprintf(f, "| key | meaning | type | bounds | unit | default | commands |\n|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < N_KEYS; i++) {
		char lhs[64], dflt[128], bnd[80];
		key_lhs(&keys[i], lhs, sizeof lhs);
		key_default(&keys[i], dflt, sizeof dflt);
		bounds_short(&keys[i], bnd, sizeof bnd);
		fputc('|', f);
		md_cell(f, lhs, true);
		char help[512];
		char also[160];
		aliases_text(keys[i].name, also, sizeof also);
		snprintf(help, sizeof help, "%s%s", keys[i].help, also);
		md_cell(f, help, false);
		md_cell(f, otype_names[keys[i].type], false);
		md_cell(f, bnd, false);
		md_cell(f, keys[i].unit ? keys[i].unit : "", false);
		md_cell(f, dflt, false);
		md_cmds(f, &keys[i]);
	}
}

/* ---- command lines ------------------------------------------------------------------------------ */

/* argv[*i] is "--key[=V]", "-o" or "-oV" of cmd: its row (NULL: not cmd's) and value (advancing *i
 * past a separate one; NULL with *missing when there is none). */
static const struct key *split_opt(unsigned cmd, int argc, char **argv, int *i, const char **v, bool *missing,
				   char *name, size_t n)
{
	const char *a = argv[*i];
	const struct key *k;
	*v = NULL;
	*missing = false;
	if (a[0] == '-' && a[1] && a[1] != '-') {   /* -o FILE, -oFILE */
		k = find_short(a[1], cmd);
		snprintf(name, n, "%.*s", k ? 2 : (int)(n - 1), a);
		if (k && a[2])
			*v = a + 2;
	} else {
		const char *eq = strchr(a + 2, '=');
		size_t kl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		snprintf(name, n, "%.*s", (int)(kl < n ? kl : n - 1), a + 2);
		k = kl < n ? find(name, cmd) : NULL;
		if (k && eq)
			*v = eq + 1;
		snprintf(name, n, "--%.*s", (int)(kl + 2 < n ? kl : n - 3), a + 2);
	}
	if (!k || *v)
		return k;
	if (!k->arg)
		*v = "true";
	else if (*i + 1 < argc)
		*v = argv[++*i];
	else
		*missing = true;
	return k;
}

/* The key as given on the command line ("--vm" -> "vm", an alias kept), "-o" -> the row's. */
static const char *given_name(const struct key *k, const char *name)
{
	return !strncmp(name, "--", 2) ? name + 2 : k->name;
}

int opts_take_extra(unsigned cmd, struct opts_extra *x, int *argc, char **argv, struct diag *d)
{
	int out = 1;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i], *v;
		bool missing;
		char name[72];
		if (strncmp(a, "--", 2) != 0 || !a[2]) {
			argv[out++] = argv[i];
			continue;
		}
		int first = i;
		const struct key *k = split_opt(cmd, *argc, argv, &i, &v, &missing, name, sizeof name);
		if (k && k->tgt == TGT_X) {
			if (missing)
				return diag_set(d, "%s needs a value", name);
			if (opts_set(cmd, NULL, x, given_name(k, name), v, name, d))
				return -EINVAL;
			continue;
		}
		for (int j = first; j <= i; j++)   /* a run's key and its value, or not a key */
			argv[out++] = argv[j];
	}
	*argc = out;
	argv[out] = NULL;
	return 0;
}

int opts_parse_argv(unsigned cmd, struct runcfg *c, struct opts_extra *x, int argc, char **argv, struct diag *d)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		bool missing;
		char name[72];
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return 1;
		if (a[0] != '-' || !a[1])
			return diag_set(d, "unexpected argument '%s'", a);
		const struct key *k = split_opt(cmd, argc, argv, &i, &v, &missing, name, sizeof name);
		if (!k && !strncmp(name, "--", 2) && runcfg_foreign_why(name + 2))
			return diag_set(d, "stress-ng's %s does not map onto migbed: %s", name,
					runcfg_foreign_why(name + 2));
		if (!k)
			return diag_set(d, "unknown option '%s' (see migbed %s --help)", name, opts_cmd_name(cmd));
		if (missing)
			return diag_set(d, "option '%s' needs a value", name);
		if (opts_set(cmd, c, x, given_name(k, name), v, name, d))
			return -EINVAL;
	}
	return 0;
}

int opts_check_required(unsigned cmd, const struct runcfg *c, const struct opts_extra *x, struct diag *d)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		const bool *g = given_of(k, c, x);
		/* the blocks give the guest's size */
		if (!strcmp(k->name, "guest") && c && runcfg_given(c, "blocks"))
			continue;
		if ((k->req & cmd) && !(g && *g)) {
			char lhs[64];
			key_lhs(k, lhs, sizeof lhs);
			return diag_set(d, "%s is required (see migbed %s --help)", lhs, opts_cmd_name(cmd));
		}
	}
	return 0;
}

int opts_finish_gen(struct runcfg *c, struct diag *d)
{
	const char *pat = tgen_pattern_name(c->gen.pattern);
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		if (k->pat && k->pat[0] && c->given[i] && strcmp(k->pat, pat))
			return diag_set(d, "%s only applies to pattern %s, not %s", k->name, k->pat, pat);
	}
	c->gen.seed = c->seed;
	if (c->gen.n_blocks && !runcfg_given(c, "guest"))
		c->gen.guest_bytes = tgen_blocks_total(&c->gen);   /* the blocks' total */
	else if (c->gen.n_blocks && tgen_blocks_total(&c->gen) != c->gen.guest_bytes) {
		char a[32], b[32];
		return diag_set(d, "guest %s is not the total of blocks (%s): leave guest out, or make them agree",
				size_format(c->gen.guest_bytes, a, sizeof a),
				tgen_blocks_total(&c->gen) == UINT64_MAX ? "more than 16E" :
				size_format(tgen_blocks_total(&c->gen), b, sizeof b));
	}
	if (c->vm_keep && runcfg_given(c, "churn") && c->gen.churn)
		return diag_set(d, "vm-keep (stress-ng's: the workers keep their buffers) contradicts churn = true");
	if (c->vm_keep)
		c->gen.churn = false;
	else if (c->stressng_spelling && !runcfg_given(c, "churn"))
		c->gen.churn = true;
	if (!runcfg_given(c, "worker-bytes"))
		c->gen.worker_bytes = tgen_default_worker_bytes(&c->gen);
	else if (c->worker_bytes_total) {   /* stress-ng's --vm-bytes: the workers' total */
		uint64_t each = c->gen.worker_bytes / (c->gen.workers ? c->gen.workers : 1);
		each -= each % (c->gen.page_size ? c->gen.page_size : 4096);
		if (!each)
			return diag_set(d, "--vm-bytes %llu over %u workers is less than a page each (stress-ng divides "
				       "--vm-bytes among the --vm workers)", (unsigned long long)c->gen.worker_bytes,
				       (unsigned)c->gen.workers);
		c->gen.worker_bytes = each;
		c->worker_bytes_total = false;   /* done: finish may run again on the same config */
	}
	return tgen_validate(&c->gen, d) < 0 ? -EINVAL : 0;
}

static bool gen_keys_given(const struct runcfg *c)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].pat && c->given[i])
			return true;
	return false;
}

/* ---- a run's cross-key rules and rule syntaxes ------------------------------------------------------ */

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
		tok = line_trim(tok);
		bool more = tok[0] == '>';
		char *num = line_trim(tok + more);
		uint64_t x;
		if (n == RUNCFG_MAX_FAULTS)
			return bad(d, where, "expect-fired", v, "a list of at most 16 values (one per fault rule)");
		if (!isdigit((unsigned char)num[0]) || size_parse_u64(num, &x) || x == UINT64_MAX)
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
	size_t hl = strlen(c->hw);
	resolve_path(c->trace, sizeof c->trace, scenario);
	resolve_path(c->dst_layout, sizeof c->dst_layout, scenario);
	if (strchr(c->hw, '/') || (hl > 3 && !strcmp(c->hw + hl - 3, ".hw")))   /* a file, not a name */
		resolve_path(c->hw, sizeof c->hw, scenario);
}

int runcfg_load_scenario(struct runcfg *c, const char *path, struct diag *d)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return diag_set(d, "%s: cannot open scenario: %s", path, strerror(errno));
	snprintf(c->scenario, sizeof c->scenario, "%s", path);
	char line[2048];
	unsigned long lineno = 0, first[N_KEYS] = { 0 };   /* the line each key was given on */
	int rc = 0, got;
	while (rc == 0 && (got = line_read(f, line, sizeof line)) != 0) {
		lineno++;
		char where[1100];
		snprintf(where, sizeof where, "%s:%lu", path, lineno);
		if (got < 0) {
			rc = got == -E2BIG ? diag_set(d, "%s: line longer than %zu bytes", where, sizeof line - 2)
					   : diag_set(d, "%s: a NUL byte in the line", where);
			break;
		}
		char *s = line_trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			rc = diag_set(d, "%s: expected 'key = value', got '%s'", where, s);
			break;
		}
		*eq = '\0';
		char *k = line_trim(s), *v = line_trim(eq + 1);
		if (!*v) {
			rc = diag_set(d, "%s: key '%s' has no value", where, k);
			break;
		}
		const struct key *row = find(k, OPTS_RUN);
		if (!row) {
			rc = runcfg_foreign_why(k) ? diag_set(d, "%s: stress-ng's --%s does not map onto migbed: %s", where,
							      k, runcfg_foreign_why(k))
						   : diag_set(d, "%s: unknown key '%s' (see migbed run --help)", where, k);
			break;
		}
		size_t i = (size_t)(row - keys);
		if (first[i] && strcmp(k, "fault") != 0 && strcmp(k, "hw-set") != 0) {   /* fault, hw-set lines add up */
			rc = diag_set(d, "%s: key '%s' given twice (first on line %lu)", where, k, first[i]);
			break;
		}
		first[i] = lineno;
		rc = runcfg_set(c, k, v, where, d);
	}
	if (rc == 0 && ferror(f))
		rc = diag_set(d, "%s: read error", path);
	fclose(f);
	if (rc == 0)
		resolve_trace(c, path);
	return rc;
}

/* A side playing a QEMU version can do only what that version does: a chunk size other than
 * 1 MiB needs a chunk-size setting (migbed, QEMU 11.1), --protocol negotiated is migbed's. */
static int impl_check(const struct runcfg *c, bool src, struct diag *d)
{
	const struct proto_profile *p = proto_profile(src ? c->src_impl : c->dst_impl);
	uint64_t chunk = src ? c->chunk_bytes : c->dst_chunk_bytes;
	const char *side = vocab_side_token(src ? VOCAB_SIDE_SRC : VOCAB_SIDE_DST);
	if (!p->chunk_param && chunk != 1u << 20)
		return diag_set(d, "%s-impl %s has no chunk-size setting (QEMU before 11.1 registers 1M chunks): "
			       "%schunk-size %lluM needs %s-impl migbed or qemu-11.1", side, p->name, src ? "" : "dst-",
			       (unsigned long long)(chunk >> 20), side);
	if (p->qemu && (src ? c->src_negotiate : c->dst_negotiate))
		return diag_set(d, "%s-impl %s does not speak --protocol negotiated (migbed's proposal, in no QEMU)",
			       side, p->name);
	return 0;
}

/* The cost model: the built-in defaults, the hw profile over them, hw-set over that, and the
 * cost options given (link-gbps, ...) over all. Without hw and hw-set nothing changes (every
 * existing run stays byte for byte the same). Idempotent. */
static int apply_hw(struct runcfg *c, struct diag *d)
{
	struct hw_profile *p;
	int rc = 0;
	if (!c->hw[0] && !c->n_hw_set)
		return 0;
	if (!(p = calloc(1, sizeof *p)))
		return diag_set(d, "hw: out of memory");
	hca_cost_defaults(&p->cost);
	if (c->hw[0])
		rc = hw_load(c->hw, p, d) ? -EINVAL : 0;
	for (int i = 0; rc == 0 && i < c->n_hw_set; i++)
		rc = hw_set_pair(&p->cost, c->hw_set[i], "hw-set", d);
	if (rc == 0) {
		struct hca_cost *t = &p->cost;
		if (runcfg_given(c, "link-gbps"))
			t->link_bytes_per_s = c->cost.link_bytes_per_s;
		if (runcfg_given(c, "latency-us"))
			t->msg_latency_ns = c->cost.msg_latency_ns;
		if (runcfg_given(c, "reg-us-per-gib"))
			t->reg_per_page_ns = t->dst_reg_per_page_ns = c->cost.reg_per_page_ns;
		if (runcfg_given(c, "odp-fault-us"))
			t->odp_fault_ns = c->cost.odp_fault_ns;
		c->cost = *t;
	}
	free(p);
	return rc;
}

int runcfg_finish(struct runcfg *c, struct diag *d)
{
	if (apply_hw(c, d))
		return -EINVAL;
	if (!runcfg_given(c, "dst-chunk-size"))   /* a QEMU before 11.1 has no setting: 1M */
		c->dst_chunk_bytes = proto_profile(c->dst_impl)->chunk_param ? c->chunk_bytes : 1u << 20;
	if (c->n_expect_fired && !c->n_faults)
		return diag_set(d, "expect-fired needs at least one fault rule (fault = ... or --fault)");
	if (!c->expect_fired_all && c->n_expect_fired > c->n_faults)
		return diag_set(d, "expect-fired lists %d values for %d fault rules", c->n_expect_fired, c->n_faults);
	if (impl_check(c, true, d) || impl_check(c, false, d))
		return -EINVAL;
	if (c->trace[0] && gen_keys_given(c))
		return diag_set(d, "trace generator keys (pattern, guest, ...) conflict with trace = %s", c->trace);
	if (!runcfg_given(c, "mem"))
		c->repr = c->backend == HCA_BACKEND_VERBS ? MEM_REPR_BYTES : MEM_REPR_STAMP;
	if (c->backend == HCA_BACKEND_VERBS && c->dst_odp != PROTO_ODP_OFF)
		return diag_set(d, "--dst-odp is modelled only: use --backend model (migbed's verbs backend does not "
			       "register On-Demand Paging memory; docs/profiles.md, 'ODP destination memory')");
	if (c->backend == HCA_BACKEND_VERBS && c->repr != MEM_REPR_BYTES)
		return diag_set(d, "--backend verbs needs --mem bytes (real RDMA moves real bytes)");
	struct addr_rdma a;
	if (c->backend == HCA_BACKEND_VERBS && c->dst_addr[0] && addr_parse(c->dst_addr, false, &a))
		return diag_set(d, "--dst-addr: '%s' is not %s", c->dst_addr, addr_syntax(false));
	c->eng.seed = c->seed;
	c->gen.seed = c->seed;
	if (!c->trace[0])
		return opts_finish_gen(c, d);
	return 0;
}

/* ---- a config back as a scenario -------------------------------------------------------------- */

/* The run keys a scenario written back leaves out: where a run's output goes (it is not what
 * the run does), and the umbrella keys whose per-side keys say the same (protocol, impl). */
static bool scenario_skips(const struct key *k)
{
	static const char *const skip[] = { "json", "events", "timeline", "quiet", "pause-at", "fault-counts", "bundle",
					    "protocol", "impl", "fault" };
	for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
		if (!strcmp(k->name, skip[i]))
			return true;
	return false;
}

/* The i-th word of a choice's "a|b|c" into buf. */
static void choice_word(const char *arg, unsigned idx, char *buf, size_t n)
{
	const char *s = arg;
	for (unsigned i = 0; i < idx && s; i++) {
		s = strchr(s, '|');
		s = s ? s + 1 : NULL;
	}
	size_t len = s ? strcspn(s, "|") : 0;
	snprintf(buf, n, "%.*s", (int)len, s ? s : "");
}

/* expect-fired as given: "N", ">N" or a list of them. */
static void fired_list(const struct runcfg *c, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < c->n_expect_fired && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s%llu", i ? "," : "", c->expect_fired[i].more ? ">" : "",
					(unsigned long long)c->expect_fired[i].n);
}

/* A row whose value the row's setter converts or chooses: the text that gives the same value. */
static bool converted_text(const struct key *k, const struct runcfg *c, char *buf, size_t n)
{
	const struct hca_cost *cost = &c->cost;
	const char *nm = k->name;
	unsigned idx = 0;
	if (!strcmp(nm, "link-gbps"))
		snprintf(buf, n, "%llu", (unsigned long long)(cost->link_bytes_per_s * 8 / 1000000000ull));
	else if (!strcmp(nm, "latency-us"))
		snprintf(buf, n, "%llu", (unsigned long long)(cost->msg_latency_ns / 1000));
	else if (!strcmp(nm, "reg-us-per-gib"))   /* rounded up: set_reg's division gives it back */
		snprintf(buf, n, "%llu", (unsigned long long)((cost->reg_per_page_ns * PAGES_PER_GIB + 999) / 1000));
	else if (!strcmp(nm, "odp-fault-us"))
		snprintf(buf, n, "%llu", (unsigned long long)(cost->odp_fault_ns / 1000));
	else if (!strcmp(nm, "ack-timeout") && c->ack_timeout > 0)
		snprintf(buf, n, "%d", c->ack_timeout);
	else if (!strcmp(nm, "qemu-expect") && c->qemu_expect_file[0])
		snprintf(buf, n, "%s@%llu", c->qemu_expect_file, (unsigned long long)c->qemu_expect_addr);
	else if (!strcmp(nm, "expect-fired") && c->n_expect_fired)
		fired_list(c, buf, n);
	else if (!strcmp(nm, "expect"))
		snprintf(buf, n, "%s", c->expect_text);
	else if (!strcmp(nm, "blocks"))
		return c->gen.n_blocks && tgen_blocks_format(&c->gen, buf, n);
	else if (!strcmp(nm, "layout-runs"))   /* fixed, the default, is left out: as before the key */
		return c->gen.layout_runs == TGEN_LAYOUT_EXP ? (snprintf(buf, n, "exp"), true) : false;
	else if (k->type != OT_CHOICE)
		return false;   /* ack-timeout, qemu-expect, expect-fired: none */
	else {
		if (!strcmp(nm, "backend"))
			idx = c->backend == HCA_BACKEND_VERBS;
		else if (!strcmp(nm, "mem"))
			idx = c->repr == MEM_REPR_BYTES;
		else if (!strcmp(nm, "src-protocol") || !strcmp(nm, "dst-protocol"))
			idx = nm[0] == 's' ? c->src_negotiate : c->dst_negotiate;
		else if (!strcmp(nm, "on-mismatch"))
			idx = c->refuse_mismatch;
		else if (!strcmp(nm, "dst-odp"))
			idx = (unsigned)c->dst_odp;
		else if (!strcmp(nm, "src-impl") || !strcmp(nm, "dst-impl"))
			idx = (unsigned)(nm[0] == 's' ? c->src_impl : c->dst_impl);
		if (!strcmp(nm, "pattern"))
			snprintf(buf, n, "%s", tgen_pattern_name(c->gen.pattern));
		else
			choice_word(k->arg, idx, buf, n);
	}
	return true;
}

/* The value of run key k in c as a scenario line gives it; false: it has none (a text not
 * given, dst-memlock none, ...) and the line is left out. */
static bool key_text(const struct key *k, const struct runcfg *c, char *buf, size_t n)
{
	struct opts_dst o = { (struct runcfg *)c, NULL };
	const void *f = k->size ? field(k, &o) : NULL;
	buf[0] = '\0';
	if (k->set || !f)
		return converted_text(k, c, buf, n);
	switch (k->type) {
	case OT_FLAG:
	case OT_BOOL:
		snprintf(buf, n, "%s", *(const bool *)f ? "true" : "false");
		return true;
	case OT_FRAC:
		snprintf(buf, n, "%.17g", *(const double *)f);
		return true;
	case OT_TEXT: {   /* one line: a control character (from an option) as a space */
		const char *t = f;
		size_t i = 0;
		while (*t && (iscntrl((unsigned char)*t) || isspace((unsigned char)*t)))
			t++;   /* the reader trims what would lead: the text must read back as written */
		for (; t[i] && i + 1 < n; i++)
			buf[i] = iscntrl((unsigned char)t[i]) ? ' ' : t[i];
		while (i > 0 && isspace((unsigned char)buf[i - 1]))
			i--;
		buf[i] = '\0';
		return i > 0;
	}
	case OT_U64:
	case OT_SIZE:
	case OT_POW2: {
		uint64_t v = k->size == sizeof(uint32_t) ? *(const uint32_t *)f : *(const uint64_t *)f;
		if (k->alt && v == 0)
			snprintf(buf, n, "%s", k->alt);
		else if (v == 0 && k->lo > 0)
			return false;   /* not a value (dst-memlock: none) */
		else
			fmt_num(k, v, buf, n);
		return true;
	}
	default:
		return converted_text(k, c, buf, n);
	}
}

/* A generator key that applies to c: no trace, and the key is any pattern's or c's. */
static bool gen_key_applies(const struct key *k, const struct runcfg *c)
{
	return !c->trace[0] && (!k->pat[0] || !strcmp(k->pat, tgen_pattern_name(c->gen.pattern)));
}

/* A cost key not given whose value came from hw or hw-set: written back as hw and hw-set
 * (its own line would override them, and reg-us-per-gib rounds). */
static bool hw_derived(const struct key *k, const struct runcfg *c)
{
	static const char *const cost_keys[] = { "link-gbps", "latency-us", "reg-us-per-gib", "odp-fault-us" };
	if (!c->hw[0] && !c->n_hw_set)
		return false;
	for (size_t i = 0; i < sizeof cost_keys / sizeof cost_keys[0]; i++)
		if (!strcmp(k->name, cost_keys[i]))
			return !c->given[k - keys];
	return false;
}

void runcfg_write_scenario(FILE *f, const struct runcfg *c)
{
	char v[1100];
	fprintf(f, "# left out: where the output goes (json, events, timeline, quiet, pause-at, fault-counts, bundle), and\n"
		   "# protocol and impl (src-/dst-protocol and src-/dst-impl below say them per side)\n");
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct key *k = &keys[i];
		if (!(k->cmds & OPTS_RUN) || k->tgt != TGT_RUN || (k->pat && !gen_key_applies(k, c)))
			continue;
		if (!strcmp(k->name, "fault"))
			for (int r = 0; r < c->n_faults; r++)
				fprintf(f, "fault = %s\n", c->faults[r]);
		else if (!strcmp(k->name, "hw-set"))
			for (int r = 0; r < c->n_hw_set; r++)
				fprintf(f, "hw-set = %s\n", c->hw_set[r]);
		else if (hw_derived(k, c))
			continue;
		else if (!scenario_skips(k) && key_text(k, c, v, sizeof v))
			fprintf(f, "%s = %s\n", k->name, v);
	}
}

void runcfg_write_gen_args(FILE *f, const struct runcfg *c)
{
	char v[TGEN_BLOCKS_MAX * (TGEN_BLOCK_NAME_MAX + 24)];
	for (size_t i = 0; i < N_KEYS; i++) {
		/* vm-keep is resolved into churn; no layout leaves its keys out (the old command) */
		if (!strcmp(keys[i].name, "vm-keep") ||
		    (!c->gen.layout_nonzero_pct && !strncmp(keys[i].name, "layout-", 7)))
			continue;
		if (keys[i].pat && gen_key_applies(&keys[i], c) && key_text(&keys[i], c, v, sizeof v))
			fprintf(f, " --%s %s", keys[i].name, v);
	}
	fprintf(f, " --seed %llu", (unsigned long long)c->seed);
}
