/* SPDX-License-Identifier: MIT */
/* swarm - seeded random configurations and faults, judged by oracles (see swarm.h). */
#include "run/swarm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/judge.h"
#include "sim/prng.h"
#include "sim/size.h"

static const char *const finding_names[] = {
#define X(NAME, tok) tok,
	SWARM_FINDING_TABLE(X)
#undef X
};
_Static_assert(sizeof finding_names / sizeof finding_names[0] == SWARM_FINDINGS, "one name per class");

const char *swarm_finding_name(enum swarm_finding f)
{
	return (unsigned)f < SWARM_FINDINGS ? finding_names[f] : "?";
}

int swarm_finding_lookup(const char *name)
{
	for (int f = 0; f < SWARM_FINDINGS; f++)
		if (!strcmp(finding_names[f], name))
			return f;
	return -1;
}

/* ---- the tables: what a fault, what a configuration may end in ----------------------------- */

/* One row: a site, an action at it, whether it may corrupt the destination's memory (so a
 * VERIFY_MISMATCH is its fault), the causes it may produce and on which side: the side of the
 * rule (OWN), the other one (PEER: a consequence the peer names, e.g. the receiver of a
 * corrupted message, or a side that waits in vain for a peer the fault stopped), or EITHER.
 * Built from docs/faults.md's matrix ("What each action produces") and
 * bats/scenarios/fault-*.scn. Not here: `die` (kills the process: a run of its own),
 * corrupt(wr_id) (INTERNAL by design: a provider bug). A msg.* rule's side is the sender's. */
enum site_kind { SITE_FIXED, SITE_MSG, SITE_CM };
enum cause_at { AT_OWN = 1, AT_PEER = 2, AT_EITHER = 3 };
struct row_cause {
	int cause;
	enum cause_at at;
};
struct fault_row {
	enum site_kind kind;
	int id;                         /* enum fault_site, vocab_msg_type or vocab_cm_event */
	const char *action;
	bool corrupts;
	struct row_cause causes[SWARM_CAUSES_MAX];
};

#define OWN(x) { CAUSE_##x, AT_OWN }
#define PEER(x) { CAUSE_##x, AT_PEER }
#define EITHER(x) { CAUSE_##x, AT_EITHER }
#define SITE(x) SITE_FIXED, FAULT_SITE_##x
#define MSG(x) SITE_MSG, VOCAB_MSG_##x
#define CM(x) SITE_CM, VOCAB_CM_##x
static const struct fault_row fault_rows[] = {
	{ SITE(REG_MR), "errno(ENOMEM)", false,
	  { OWN(CONTROL_REG_FAILED), OWN(DEST_REG_FAILED), OWN(DEST_PIN_ALL_FAILED), OWN(SOURCE_REG_FAILED) } },
	{ SITE(DEREG_MR), "errno(EBUSY)", false, { { 0, 0 } } },
	{ SITE(POST_SEND_WRITE), "errno(EIO)", false, { OWN(WRITE_POST_FAILED) } },
	{ SITE(POST_SEND_WRITE), "errno(ENOMEM)", false, { OWN(SEND_QUEUE_FULL), OWN(WRITE_POST_FAILED) } },
	{ SITE(POST_SEND_WRITE), "status(REM_ACCESS_ERR)", false, { OWN(REMOTE_ACCESS_ERROR) } },
	{ SITE(POST_SEND_WRITE), "drop", true, { PEER(VERIFY_MISMATCH) } },
	{ SITE(POST_SEND_WRITE), "delay(5ms)", false, { OWN(TIMEOUT), OWN(NOT_CONVERGED) } },
	{ SITE(POST_SEND_SEND), "errno(EIO)", false, { OWN(CONTROL_SEND_FAILED) } },
	{ SITE(POST_RECV), "errno(EIO)", false, { OWN(CONTROL_RECV_FAILED) } },
	{ SITE(WC_WRITE), "status(GENERAL_ERR)", false, { OWN(WRITE_COMPLETION_ERROR) } },
	{ SITE(WC_WRITE), "status(RETRY_EXC_ERR)", false, { OWN(TRANSPORT_RETRY_EXCEEDED) } },
	{ SITE(WC_WRITE), "drop", false, { OWN(TIMEOUT) } },
	{ SITE(WC_WRITE), "delay(1ms)", false, { OWN(TIMEOUT), OWN(NOT_CONVERGED) } },
	{ SITE(WC_SEND), "status(GENERAL_ERR)", false, { OWN(CONTROL_SEND_ERROR) } },
	{ SITE(WC_SEND), "status(RNR_RETRY_EXC_ERR)", false, { OWN(RNR_RETRY_EXCEEDED) } },
	/* a side that never learns its SEND completed waits without a bound of its own (QEMU's
	 * block_for_wrid): its peer's bounded wait names it, after EOF DEST_INCOMPLETE (S6) */
	{ SITE(WC_SEND), "drop", false, { EITHER(TIMEOUT), EITHER(PEER_DISCONNECTED), PEER(DEST_INCOMPLETE) } },
	{ SITE(WC_RECV), "status(LOC_LEN_ERR)", false, { OWN(CONTROL_RECV_ERROR) } },
	{ SITE(WC_RECV), "delay(1ms)", false, { EITHER(TIMEOUT) } },
	{ SITE(EP_CREATE), "errno(EHOSTUNREACH)", false, { OWN(CONNECT_FAILED) } },
	{ SITE(EP_SETUP), "errno(ENOMEM)", false, { OWN(DEVICE_SETUP_FAILED) } },
	{ SITE(MODIFY_QP), "errno(EINVAL)", false, { OWN(DEVICE_SETUP_FAILED), OWN(CONNECT_FAILED), OWN(ACCEPT_FAILED) } },
	{ SITE(CONNECT), "errno(ECONNREFUSED)", false, { OWN(CONNECT_REJECTED), OWN(CONNECT_FAILED) } },
	{ SITE(CONNECT), "errno(ETIMEDOUT)", false, { OWN(TIMEOUT), OWN(CONNECT_FAILED) } },
	{ SITE(ACCEPT), "errno(EINVAL)", false, { OWN(ACCEPT_FAILED) } },
	{ SITE(ALLOC), "errno(ENOMEM)", false, { OWN(RESOURCE_EXHAUSTED) } },
	{ MSG(READY), "drop", false, { PEER(TIMEOUT) } },
	{ MSG(READY), "delay(20s)", false, { PEER(TIMEOUT) } },
	{ MSG(READY), "corrupt(type)", false, { PEER(UNEXPECTED_MESSAGE) } },
	{ MSG(QEMU_FILE), "drop", false, { EITHER(DEST_INCOMPLETE), EITHER(TIMEOUT) } },
	{ MSG(QEMU_FILE), "duplicate", false, { OWN(RNR_RETRY_EXCEEDED), PEER(UNEXPECTED_MESSAGE) } },
	{ MSG(QEMU_FILE), "corrupt(len)", false, { PEER(MESSAGE_MALFORMED) } },
	{ MSG(REGISTER_REQUEST), "corrupt(payload)", false, { PEER(BAD_REGISTER_REQUEST) } },
	{ MSG(REGISTER_REQUEST), "corrupt(repeat)", false, { PEER(TOO_MANY_REQUESTS) } },
	{ MSG(REGISTER_RESULT), "drop", false, { PEER(UNEXPECTED_MESSAGE), PEER(TIMEOUT) } },
	{ MSG(REGISTER_RESULT), "corrupt(payload)", false, { PEER(REMOTE_ACCESS_ERROR) } },
	{ MSG(COMPRESS), "corrupt(payload)", false, { PEER(BAD_COMPRESS) } },
	{ MSG(COMPRESS), "duplicate", false, { OWN(RNR_RETRY_EXCEEDED) } },
	{ CM(ESTABLISHED), "drop", false, { EITHER(TIMEOUT) } },   /* the destination never sends READY */
	{ CM(DISCONNECTED), "drop", false, { EITHER(DEST_INCOMPLETE) } },
	{ SITE(POST_SEND), "event(DEVICE_REMOVAL)", false, { OWN(DEVICE_REMOVED) } },
};
#define N_ROWS (sizeof fault_rows / sizeof fault_rows[0])

static const int config_causes[SWARM_CFGS][SWARM_CAUSES_MAX] = {
#define X(NAME, why, ...) [SWARM_CFG_##NAME] = { __VA_ARGS__ },
	SWARM_CONFIG_TABLE(X)
#undef X
};
#undef OWN
#undef PEER
#undef EITHER
#undef SITE
#undef MSG
#undef CM

size_t swarm_fault_rows(void) { return N_ROWS; }
static enum fault_site row_site(const struct fault_row *r)
{
	return r->kind == SITE_MSG ? fault_site_msg((uint32_t)r->id)
	       : r->kind == SITE_CM ? fault_site_cm(r->id) : (enum fault_site)r->id;
}

const char *swarm_fault_row_site(size_t row) { return row < N_ROWS ? fault_site_name(row_site(&fault_rows[row])) : NULL; }
const char *swarm_fault_row_action(size_t row) { return row < N_ROWS ? fault_rows[row].action : NULL; }
bool swarm_fault_row_corrupts(size_t row) { return row < N_ROWS && fault_rows[row].corrupts; }

static bool in_list(const int *list, int cause)
{
	for (size_t i = 0; i < SWARM_CAUSES_MAX && list[i]; i++)
		if (list[i] == cause)
			return true;
	return false;
}

/* The sides (AT_* bits) on which row may produce cause; 0: none. */
static unsigned row_cause_at(size_t row, int cause)
{
	if (row >= N_ROWS || cause == CAUSE_NONE)
		return 0;
	for (size_t i = 0; i < SWARM_CAUSES_MAX && fault_rows[row].causes[i].cause; i++)
		if (fault_rows[row].causes[i].cause == cause)
			return fault_rows[row].causes[i].at;
	return 0;
}

bool swarm_fault_explains(size_t row, int cause)
{
	return row_cause_at(row, cause) != 0;
}

bool swarm_fault_explains_at(size_t row, bool same_side, int cause)
{
	return (row_cause_at(row, cause) & (same_side ? AT_OWN : AT_PEER)) != 0;
}

bool swarm_config_explains(unsigned cfg, int cause)
{
	for (int i = 0; i < SWARM_CFGS; i++)
		if ((cfg & (1u << i)) && in_list(config_causes[i], cause))
			return true;
	return false;
}

/* Does row's fault go through a real verbs or rdma_cm call (the sites make check's verbs lane
 * replays from the fault matrix, scripts/check.sh)? The msg.* and post_* rows act in migbed's
 * protocol layer before the backend is reached: the model covers them; alloc is migbed's own
 * malloc. post_send.write errno(ENOMEM) stays: a full send queue, as the lane has it. */
static bool row_on_verbs(const struct fault_row *r)
{
	if (r->kind != SITE_FIXED)
		return r->kind == SITE_CM;
	switch ((enum fault_site)r->id) {
	case FAULT_SITE_REG_MR: case FAULT_SITE_DEREG_MR:
	case FAULT_SITE_WC_WRITE: case FAULT_SITE_WC_SEND: case FAULT_SITE_WC_RECV:
	case FAULT_SITE_EP_CREATE: case FAULT_SITE_EP_SETUP: case FAULT_SITE_MODIFY_QP:
	case FAULT_SITE_CONNECT: case FAULT_SITE_ACCEPT:
		return true;
	case FAULT_SITE_POST_SEND_WRITE:
		return !strcmp(r->action, "errno(ENOMEM)");
	default:
		return false;
	}
}

bool swarm_fault_row_on_verbs(size_t row) { return row < N_ROWS && row_on_verbs(&fault_rows[row]); }

/* ---- seed -> plan ------------------------------------------------------------------------ */

#define PICK(p, arr) ((arr)[prng_below((p), sizeof(arr) / sizeof((arr)[0]))])

static void key(struct swarm_plan *p, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void key(struct swarm_plan *p, const char *k, const char *fmt, ...)
{
	va_list ap;
	if (p->n_keys == SWARM_KEYS_MAX)
		abort();   /* the generator's own bound: a programming error */
	struct swarm_key *s = &p->keys[p->n_keys++];
	s->key = k;
	va_start(ap, fmt);
	vsnprintf(s->value, sizeof s->value, fmt, ap);
	va_end(ap);
}

static bool chance(prng *r, unsigned percent)
{
	return prng_below(r, 100) < percent;
}

/* The workload; its dirtying rate, bytes per second (an estimate, for SWARM_CFG_SLOW). */
static uint64_t expand_workload(prng *r, const struct swarm_on *on, struct swarm_plan *p)
{
	static const uint64_t guest_mib[] = { 16, 32, 64, 128, 256, 256 };
	/* verbs: a short run on rxe, where the workload is real writes to real memory (under TCG
	 * 100k pages/s of virtual time cost minutes of wall time: a run past the watchdog) */
	static const uint64_t verbs_guest_mib[] = { 16, 16, 32, 64 };
	static const uint64_t verbs_rates[] = { 256, 2560 };
	static const uint64_t verbs_sweep_mib[] = { 4, 8 };
	static const uint64_t verbs_cold[] = { 64, 256 };
	static const char *const patterns[] = { "rand-set", "rand-set", "random", "hotcold", "hotcold", "idle" };
	static const uint64_t rates[] = { 2560, 25600, 102400 };        /* pages/s */
	static const uint64_t sweep_mib[] = { 8, 32, 64, 128 };         /* per worker, MiB/s */
	static const char *const hot[] = { "0.01", "0.05", "0.2" };
	static const uint64_t cold[] = { 64, 256, 2560 };
	const char *pattern = PICK(r, patterns);
	uint64_t pages_per_s = 0;
	key(p, "guest", "%" PRIu64 "M", on ? PICK(r, verbs_guest_mib) : PICK(r, guest_mib));
	key(p, "pattern", "%s", pattern);
	if (!strcmp(pattern, "rand-set")) {
		uint64_t workers = 1 + prng_below(r, on ? 2 : 4), mib = on ? PICK(r, verbs_sweep_mib) : PICK(r, sweep_mib);
		key(p, "workers", "%" PRIu64, workers);
		key(p, "sweep-rate", "%" PRIu64 "M", mib);
		return workers * mib << 20;
	} else if (!strcmp(pattern, "random")) {
		key(p, "rate", "%" PRIu64, pages_per_s = on ? PICK(r, verbs_rates) : PICK(r, rates));
	} else if (!strcmp(pattern, "hotcold")) {
		key(p, "hot-fraction", "%s", PICK(r, hot));
		key(p, "hot-rate", "%" PRIu64, pages_per_s = on ? PICK(r, verbs_rates) : PICK(r, rates));
		key(p, "cold-rate", "%" PRIu64, on ? PICK(r, verbs_cold) : PICK(r, cold));
	}
	return pages_per_s * 4096;
}

/* A QEMU guest's RAM blocks besides its main RAM (the names of `info ramblock`, with '@' and
 * a leading '/' renamed: a trace's names are [A-Za-z0-9._:/-]), and their usual sizes. */
struct swarm_block { const char *name; uint64_t bytes; };
static const struct swarm_block qemu_blocks[] = {
	{ "pc.bios", 256 << 10 }, { "pc.rom", 128 << 10 }, { "vga.vram", 16 << 20 },
	{ "0000:00:02.0/vga.vram", 8 << 20 }, { "0000:00:03.0/virtio-net-pci.rom", 256 << 10 },
	{ "rom.etc.acpi.tables", 128 << 10 }, { "rom.etc.table-loader", 4 << 10 },
	{ "rom.etc.acpi.rsdp", 4 << 10 },
};
#define N_QEMU_BLOCKS (sizeof qemu_blocks / sizeof qemu_blocks[0])

/* A size that is no multiple of 1M: up to 32M plus 1..255 pages of 4K (not chunk aligned). */
static uint64_t odd_bytes(prng *r)
{
	return (prng_below(r, 33) << 20) + ((1 + prng_below(r, 255)) << 12);
}

/* Append "NAME=SIZE" to the list in buf (len so far); the blocks' total grows by bytes. */
static void add_block(char *buf, size_t n, size_t *len, const char *name, uint64_t bytes, uint64_t *total)
{
	char sz[32];
	int k = snprintf(buf + *len, n - *len, "%s%s=%s", *len ? "," : "", name, size_format(bytes, sz, sizeof sz));
	if (k < 0 || (size_t)k >= n - *len)
		abort();   /* the generator's own bound (SWARM_VALUE_MAX): a programming error */
	*len += (size_t)k;
	*total += bytes;
}

/* Three layouts: a PC's (pc.ram, then some of qemu_blocks in order), a NUMA guest's (two
 * memory backends "mem0" and "mem1", the second not chunk aligned, then pc.bios), or pc.ram and
 * 1 to 4 blocks of odd sizes (some a page, some megabytes and pages). */
static uint64_t draw_blocks(prng *r, uint64_t guest_bytes, char *buf, size_t n)
{
	uint64_t total = 0;
	size_t len = 0;
	buf[0] = '\0';
	switch (prng_below(r, 3)) {
	case 0:
		add_block(buf, n, &len, "pc.ram", guest_bytes, &total);
		for (size_t i = 0; i < N_QEMU_BLOCKS; i++)
			if (chance(r, 40))
				add_block(buf, n, &len, qemu_blocks[i].name, qemu_blocks[i].bytes, &total);
		if (total == guest_bytes)
			add_block(buf, n, &len, "vga.vram", 16 << 20, &total);
		break;
	case 1:
		add_block(buf, n, &len, "mem0", guest_bytes / 2, &total);
		add_block(buf, n, &len, "mem1", guest_bytes / 2 + ((1 + prng_below(r, 255)) << 12), &total);
		add_block(buf, n, &len, "pc.bios", 256 << 10, &total);
		break;
	default:
		add_block(buf, n, &len, "pc.ram", guest_bytes, &total);
		for (uint64_t i = 0, k = 1 + prng_below(r, 4); i < k; i++) {
			char name[24];
			snprintf(name, sizeof name, "ram%" PRIu64, i + 1);
			add_block(buf, n, &len, name, chance(r, 30) ? (1 + prng_below(r, 16)) << 12 : odd_bytes(r), &total);
		}
	}
	return total;
}

/* Some of the model's plans get a RAM layout of several blocks, from the layout's own stream
 * (SWARM_BLOCKS_STREAM): `--guest` becomes the blocks' total and `--blocks` follows it. */
static void expand_blocks(uint64_t seed, struct swarm_plan *p)
{
	prng r;
	uint64_t mib;
	size_t g = 0;
	prng_seed_stream(&r, seed, SWARM_BLOCKS_STREAM);
	if (!chance(&r, SWARM_BLOCKS_PCT))
		return;
	while (g < p->n_keys && strcmp(p->keys[g].key, "guest"))
		g++;
	if (g == p->n_keys || p->n_keys == SWARM_KEYS_MAX || sscanf(p->keys[g].value, "%" SCNu64 "M", &mib) != 1)
		abort();   /* expand_workload wrote "guest NM": a programming error */
	memmove(&p->keys[g + 2], &p->keys[g + 1], (p->n_keys - g - 1) * sizeof p->keys[0]);
	p->n_keys++;
	p->keys[g + 1].key = "blocks";
	uint64_t total = draw_blocks(&r, mib << 20, p->keys[g + 1].value, sizeof p->keys[g + 1].value);
	char sz[32];
	snprintf(p->keys[g].value, sizeof p->keys[g].value, "%s", size_format(total, sz, sizeof sz));
}

static uint64_t chunk_mib(prng *r)
{
	static const uint64_t mib[] = { 1, 1, 1, 2, 4, 16, 64, 256, 1024 };
	return PICK(r, mib);
}

static void size_key(struct swarm_plan *p, const char *k, uint64_t mib)
{
	if (mib >= 1024)
		key(p, k, "%" PRIu64 "G", mib / 1024);
	else
		key(p, k, "%" PRIu64 "M", mib);
}

/* The peers first (a QEMU before 11.1 registers 1M chunks: its side's chunk size is 1M), then
 * chunk sizes, pin-all, protocol, limits; the config bits they set. */
static void expand_migration(prng *r, const struct swarm_on *on, struct swarm_plan *p, uint64_t dirty_bytes_per_s)
{
	static const char *const impls[] = { "qemu-6.1", "qemu-7.2", "qemu-8.1", "qemu-8.2", "qemu-11.1" };
	static const uint64_t bandwidth_mib[] = { 0, 128, 1024, 32 };   /* 0: unlimited */
	static const char *const downtimes[] = { "300", "1000", "50", "10" };
	static const char *const memlocks[] = { "16M", "64M", "256M", "1G" };
	const char *impl = NULL, *impl_key = NULL;
	if (chance(r, 20)) {
		impl_key = chance(r, 50) ? "src-impl" : "dst-impl";
		impl = PICK(r, impls);
		p->cfg |= 1u << SWARM_CFG_QEMU_PEER;
	}
	bool fixed = impl && strcmp(impl, "qemu-11.1") != 0;   /* no chunk-size setting */
	uint64_t src = chunk_mib(r), dst = chance(r, 70) ? src : chunk_mib(r);
	if (fixed && !strcmp(impl_key, "src-impl"))
		src = 1;
	if (fixed && !strcmp(impl_key, "dst-impl"))
		dst = 1;
	bool pin_all = chance(r, 25), src_neg = false;
	size_key(p, "chunk-size", src);
	size_key(p, "dst-chunk-size", dst);
	if (pin_all)
		key(p, "pin-all", "true");
	if (chance(r, 30)) {   /* a side playing a QEMU speaks QEMU's protocol */
		src_neg = chance(r, 50) && !(impl && !strcmp(impl_key, "src-impl"));
		bool dst_neg = chance(r, 50) && !(impl && !strcmp(impl_key, "dst-impl"));
		key(p, "src-protocol", "%s", src_neg ? "negotiated" : "qemu");
		key(p, "dst-protocol", "%s", dst_neg ? "negotiated" : "qemu");
		if (src_neg && chance(r, 50)) {
			key(p, "on-mismatch", "refuse");
			/* an old destination announces no size: the source assumes QEMU's 1M */
			if (src != (dst_neg ? dst : 1))
				p->cfg |= 1u << SWARM_CFG_REFUSE;
		}
	}
	if (src > dst && !pin_all && !src_neg)
		p->cfg |= 1u << SWARM_CFG_OLD_PEER;
	if (impl)
		key(p, impl_key, "%s", impl);
	uint64_t bw = PICK(r, bandwidth_mib) << 20;
	const char *dt = PICK(r, downtimes);
	if (bw)
		key(p, "max-bandwidth", "%" PRIu64 "M", bw >> 20);
	else
		key(p, "max-bandwidth", "unlimited");
	key(p, "downtime-limit-ms", "%s", dt);
	key(p, "max-time-ms", "%u", on ? SWARM_VERBS_MAX_TIME_MS : SWARM_MAX_TIME_MS);
	/* dirtying at a quarter of the bandwidth or more, or a tight limit, may not converge */
	if (on || bw == 32u << 20 || !strcmp(dt, "10") || dirty_bytes_per_s >= (bw ? bw : UINT64_C(12500000000)) / 4)
		p->cfg |= 1u << SWARM_CFG_SLOW;
	if (!on && chance(r, 15)) {   /* verbs: needs the destination in a process of its own */
		key(p, "dst-memlock", "%s", PICK(r, memlocks));
		p->cfg |= 1u << SWARM_CFG_MEMLOCK;
	}
}

/* One rule of row `row`: a side, then one call (#N) or a probability (~P, at most K times). */
static void expand_rule(prng *r, struct swarm_plan *p, size_t row)
{
	static const char *const probs[] = { "0.001", "0.01", "0.1", "0.5" };
	static const char *const caps[] = { " *1", " *2", " *3", "" };
	const struct fault_row *fr = &fault_rows[row];
	enum vocab_side at = chance(r, 50) ? VOCAB_SIDE_SRC : VOCAB_SIDE_DST;
	const char *side = vocab_side_token(at);
	char trig[48];
	if (chance(r, 50))
		snprintf(trig, sizeof trig, "#%" PRIu64, 1 + prng_below(r, UINT64_C(1) << prng_below(r, 7)));
	else
		snprintf(trig, sizeof trig, "~%s%s", PICK(r, probs), PICK(r, caps));
	snprintf(p->faults[p->n_faults], sizeof p->faults[0], "%s@%s %s -> %s", fault_site_name(row_site(fr)), side, trig, fr->action);
	p->fault_side[p->n_faults] = at;
	p->fault_row[p->n_faults++] = row;
}

/* BUGGIFY: an activation probability for the whole run (0 for some), then each row activated
 * with it, in table order, at most SWARM_FAULTS_MAX rules. */
static void expand_faults(prng *r, const struct swarm_on *on, struct swarm_plan *p)
{
	static const unsigned activate_pct[] = { 0, 0, 0, 2, 5, 5, 10, 30 };
	/* verbs: about half the rows, so a little more often each (still none in a quarter) */
	static const unsigned verbs_pct[] = { 0, 0, 5, 10, 10, 20, 30, 50 };
	unsigned pct = on ? PICK(r, verbs_pct) : PICK(r, activate_pct);
	for (size_t row = 0; row < N_ROWS && p->n_faults < SWARM_FAULTS_MAX; row++)
		if ((!on || row_on_verbs(&fault_rows[row])) && pct && chance(r, pct))
			expand_rule(r, p, row);
}

void swarm_expand_on(uint64_t seed, const struct swarm_on *on, struct swarm_plan *p)
{
	prng r;
	memset(p, 0, sizeof *p);
	p->seed = seed;
	prng_seed_stream(&r, seed, SWARM_STREAM);
	key(p, "seed", "%" PRIu64, seed);
	if (on) {
		key(p, "backend", "verbs");
		key(p, "wait-timeout-ms", "%" PRIu64, on->wait_timeout_ms);
	}
	uint64_t dirty = expand_workload(&r, on, p);
	expand_migration(&r, on, p, dirty);
	expand_faults(&r, on, p);
	if (!on)   /* verbs: the lane's pinned seeds keep one block (not run in a VM here) */
		expand_blocks(seed, p);
}

void swarm_expand(uint64_t seed, struct swarm_plan *p)
{
	swarm_expand_on(seed, NULL, p);
}

bool swarm_plan_text(const struct swarm_plan *p, char *buf, size_t n)
{
	size_t len = 0;
	int k;
	buf[0] = '\0';
	for (size_t i = 0; i < p->n_keys; i++) {
		bool flag = !strcmp(p->keys[i].value, "true");
		k = flag ? snprintf(buf + len, n - len, "%s--%s", len ? " " : "", p->keys[i].key)
			 : snprintf(buf + len, n - len, "%s--%s %s", len ? " " : "", p->keys[i].key, p->keys[i].value);
		if (k < 0 || (size_t)k >= n - len)
			return false;
		len += (size_t)k;
	}
	for (size_t i = 0; i < p->n_faults; i++) {
		k = snprintf(buf + len, n - len, " --fault '%s'", p->faults[i]);
		if (k < 0 || (size_t)k >= n - len)
			return false;
		len += (size_t)k;
	}
	return true;
}

/* ---- the oracles ------------------------------------------------------------------------- */

static void set_detail(struct swarm_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_detail(struct swarm_run *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof r->detail, fmt, ap);   /* a long detail is cut */
	va_end(ap);
}

/* Does a fired rule of p explain cause, named at side: a row that produces it on the rule's
 * own side, or on the peer's (a consequence)? */
static bool fired_explains(const struct swarm_plan *p, const struct run_result *res, int cause, int side)
{
	for (size_t i = 0; i < p->n_faults && i < (size_t)res->out.n_faults; i++)
		if (res->out.faults[i].st.fired &&
		    swarm_fault_explains_at(p->fault_row[i], p->fault_side[i] == side, cause))
			return true;
	return false;
}

/* Liveness of the continuing source (run_outcome cont_*): after the explained failure, the
 * same source migrated again healed; it must complete and verify, or fail with a cause of the
 * configuration, and its memory must still be what the guest wrote. */
static void judge_continued(const struct swarm_plan *p, const struct run_outcome *o, struct swarm_run *r)
{
	int cause = o->cont_cause < 0 ? -o->cont_cause : o->cont_cause;
	if (!o->cont_checked)
		return;
	if (!o->cont_src_intact) {
		r->finding = SWARM_F_DATA_LOSS;
		set_detail(r, "continuing source: after the second migration (healed) the source's memory is not "
			      "what the guest wrote");
		return;
	}
	if (o->cont_completed || (cause_valid(cause) && cause != CAUSE_NONE && cause != CAUSE_INTERNAL &&
				  swarm_config_explains(p->cfg, cause)))
		return;
	r->finding = SWARM_F_LIVENESS;
	set_detail(r, "continuing source: the same source, migrated again with its fault rules removed, ended %s at %s",
		   cause_valid(cause) && cause != CAUSE_NONE ? cause_name(cause) : "failed", run_side_name(o->cont_side));
}

void swarm_judge(const struct swarm_plan *p, const struct run_result *res, struct swarm_run *r)
{
	const struct run_outcome *o = &res->out;
	int cause = o->cause < 0 ? -o->cause : o->cause;
	r->seed = p->seed;
	r->completed = o->completed;
	r->cause = o->completed ? CAUSE_NONE : cause;
	r->side = o->completed ? RUN_SIDE_NONE : o->side;
	r->fired = 0;
	for (int i = 0; i < o->n_faults; i++)
		r->fired += o->faults[i].st.fired > 0;
	r->finding = SWARM_F_NONE;
	r->detail[0] = '\0';
	const char *end = o->completed ? "completed" : cause_valid(cause) ? cause_name(cause) : "failed";
	if (o->src_checked && !o->src_intact) {
		r->finding = SWARM_F_DATA_LOSS;
		set_detail(r, "the source's memory after the run (%s) is not what the guest wrote", end);
		return;
	}
	if (o->objects_checked && (o->live_objects || o->stray_writes)) {
		uint64_t n = o->live_objects ? o->live_objects : o->stray_writes;
		r->finding = o->live_objects ? SWARM_F_LEAK : SWARM_F_CORRUPT;
		set_detail(r, o->live_objects ? "%llu RDMA object%s (endpoint, listener, memory region) outlived the run (%s)"
			   : "%llu RDMA WRITE%s landed outside the destination's RAM blocks or across a block's edge (%s)",
			   (unsigned long long)n, n == 1 ? "" : "s", end);
		return;
	}
	if (o->completed)
		return;
	if (!cause_valid(cause) || cause == CAUSE_NONE)
		r->finding = SWARM_F_UNNAMED;
	else if (cause == CAUSE_INTERNAL)
		r->finding = SWARM_F_INTERNAL;
	else if (fired_explains(p, res, cause, r->side) || swarm_config_explains(p->cfg, cause))
		return judge_continued(p, o, r);
	else if (cause == CAUSE_VERIFY_MISMATCH)
		r->finding = SWARM_F_CORRUPT;
	else
		r->finding = SWARM_F_UNEXPLAINED;
	set_detail(r, "%s at %s with %zu fired fault rule%s: %s",
		 cause_valid(cause) ? cause_name(cause) : "no cause", run_side_name(r->side), r->fired,
		 r->fired == 1 ? "" : "s", o->detail && o->detail[0] ? o->detail : "(no detail)");
}

/* ---- seeds and shards -------------------------------------------------------------------- */

static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	char *e;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 10);
	if (errno)
		return -1;
	*out = v;
	*end = e;
	return 0;
}

int swarm_seeds_parse(const char *text, uint64_t *lo, uint64_t *hi, struct diag *d)
{
	const char *e;
	if (parse_u64(text, &e, lo))
		return diag_set(d, "'%s' is not A..B or N (decimal seeds)", text);
	*hi = *lo;
	if (!strncmp(e, "..", 2) && parse_u64(e + 2, &e, hi))
		return diag_set(d, "'%s' is not A..B or N (decimal seeds)", text);
	if (*e)
		return diag_set(d, "'%s' is not A..B or N (decimal seeds)", text);
	if (*hi < *lo)
		return diag_set(d, "'%s': the range is empty (B < A)", text);
	if (*hi - *lo >= SWARM_SEEDS_MAX)
		return diag_set(d, "'%s': more than %llu seeds", text, (unsigned long long)SWARM_SEEDS_MAX);
	return 0;
}

bool swarm_in_shard(uint64_t seed, uint64_t lo, uint64_t k, uint64_t n)
{
	return seed >= lo && (seed - lo) % n == k - 1;
}

/* ---- the loop ---------------------------------------------------------------------------- */

static int read_file(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	int rc = 0;
	*buf = NULL;
	*len = 0;
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (long)(*len = (size_t)ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		rc = -EIO;
	else if (!(*buf = malloc(*len + 1)))
		rc = -ENOMEM;
	else if (fread(*buf, 1, *len, f) != *len)
		rc = -EIO;
	fclose(f);
	return rc;
}

/* Both event logs, byte for byte: 0 equal, 1 different, -errno. */
static int same_logs(const char *a, const char *b)
{
	char *x = NULL, *y = NULL;
	size_t nx, ny;
	int rc = read_file(a, &x, &nx);
	if (rc == 0)
		rc = read_file(b, &y, &ny);
	if (rc == 0)
		rc = nx != ny || memcmp(x, y, nx) != 0;
	free(x);
	free(y);
	return rc;
}

struct swarm_scratch {
	struct runcfg *c;
	struct run_result *res;
	char log[2][sizeof(((struct runcfg *)0)->events_path)];
};

/* The leak oracle around one run (when the command gave its hooks): a run that left an fd or
 * an RDMA object behind, and has no other finding, is a LEAK. */
static int migrate_checked(const struct swarm_config *sc, struct swarm_scratch *s, struct swarm_run *r,
			   struct diag *d)
{
	char what[SWARM_DETAIL_MAX];
	if (sc->leak_mark)
		sc->leak_mark(sc->arg);
	int rc = run_migrate(s->c, s->res, d);
	out_file_abort(&s->res->json);
	if (rc == 0 && sc->leak_check && sc->leak_check(sc->arg, what, sizeof what) && r->finding == SWARM_F_NONE) {
		r->finding = SWARM_F_LEAK;
		set_detail(r, "%s", what);
	}
	return rc;
}

/* Liveness: a run that failed because faults fired (no finding) is run again with its fault
 * rules removed, the same guest and configuration: it must complete and verify, or fail with
 * a cause the configuration explains. 0 or -ENOMEM; r->finding LIVENESS when it did not. */
static int healed(const struct swarm_config *sc, struct swarm_scratch *s, const struct swarm_plan *p,
		  struct swarm_run *r)
{
	struct diag d = { 0 };
	if (r->completed || r->finding != SWARM_F_NONE || !r->fired || s->res->out.cont_checked ||
	    sc->config(sc->arg, p, s->c, &d) != 0)
		return 0;   /* the continuing source was checked instead (judge_continued) */
	if (p->seed != sc->test_unhealed_seed)
		s->c->n_faults = 0;
	s->c->check_source = false;   /* the first run checked the source */
	s->c->events_path[0] = '\0';
	memset(s->res, 0, sizeof *s->res);
	int rc = migrate_checked(sc, s, r, &d);
	if (rc == -ENOMEM)
		return rc;
	if (r->finding == SWARM_F_LEAK)
		return 0;
	const struct run_outcome *o = &s->res->out;
	int cause = o->cause < 0 ? -o->cause : o->cause;
	if (rc == 0 && (o->completed || swarm_config_explains(p->cfg, cause)) && (!o->src_checked || o->src_intact) &&
	    (!o->objects_checked || !o->live_objects))
		return 0;
	r->finding = SWARM_F_LIVENESS;
	set_detail(r, "healed (its fault rules removed), the plan ended %s%s%s%s", rc ? "refused: " : "",
		   rc ? d.msg : o->completed ? "completed" : cause_valid(cause) ? cause_name(cause) : "failed",
		   rc || o->completed ? "" : " at ", rc || o->completed ? "" : run_side_name(o->side));
	return 0;
}

/* One seed: config, run (twice with the determinism check), judge, the healed rerun. 0 or
 * -ENOMEM. */
static int one_seed(const struct swarm_config *sc, struct swarm_scratch *s, const struct swarm_plan *p,
		    struct swarm_run *r)
{
	struct diag d = { 0 };
	int passes = sc->check_determinism ? 2 : 1;
	for (int pass = 0; pass < passes; pass++) {
		if (sc->config(sc->arg, p, s->c, &d) != 0) {
			r->finding = SWARM_F_ERROR;
			set_detail(r, "the plan as a config: %s", d.msg);
			return 0;
		}
		s->c->check_source = true;
		s->c->check_continue = true;
		s->c->test_unhealed = p->seed == sc->test_unhealed_seed;
		s->c->test_leak_listener = p->seed == sc->test_leak_seed;
		if (passes == 2)
			memcpy(s->c->events_path, s->log[pass], sizeof s->c->events_path);
		memset(s->res, 0, sizeof *s->res);
		struct swarm_run leak = { .finding = SWARM_F_NONE };
		int rc = migrate_checked(sc, s, &leak, &d);
		if (rc == -ENOMEM)
			return rc;
		if (rc != 0 || s->res->output_error) {
			r->finding = SWARM_F_ERROR;
			set_detail(r, "the run refused its config: %s", d.msg);
			return 0;
		}
		if (pass == 0)
			swarm_judge(p, s->res, r);
		if (leak.finding == SWARM_F_LEAK && r->finding == SWARM_F_NONE) {
			r->finding = SWARM_F_LEAK;
			memcpy(r->detail, leak.detail, sizeof r->detail);
		}
	}
	if (passes == 2 && r->finding == SWARM_F_NONE) {
		int same = same_logs(s->log[0], s->log[1]);
		if (same != 0) {
			r->finding = SWARM_F_NONDETERMINISTIC;
			set_detail(r, "%s", same > 0 ? "the two runs' event logs differ"
								: "an event log could not be read back");
		}
	}
	return healed(sc, s, p, r);
}

/* May an rxe stall explain r's finding: TRANSPORT_RETRY_EXCEEDED that no fired rule explains
 * (the run's own cause, or its healed rerun's)? Only with stalled() (verbs). */
static bool stall_may_explain(const struct swarm_config *sc, const struct swarm_run *r)
{
	return sc->stalled && ((r->finding == SWARM_F_UNEXPLAINED && r->cause == CAUSE_TRANSPORT_RETRY_EXCEEDED) ||
			       (r->finding == SWARM_F_LIVENESS && strstr(r->detail, "TRANSPORT_RETRY_EXCEEDED")));
}

/* One seed, and once more when an rxe stall may explain its finding. 0 or -ENOMEM. */
static int seed_once_more(const struct swarm_config *sc, struct swarm_scratch *s, const struct swarm_plan *p,
			  struct swarm_run *r, struct swarm_result *res)
{
	int rc = one_seed(sc, s, p, r);
	if (rc != 0 || !stall_may_explain(sc, r))
		return rc;
	sc->stalled(sc->arg, r);
	res->stalls++;
	char config[SWARM_CONFIG_MAX];
	memcpy(config, r->config, sizeof config);
	memset(r, 0, sizeof *r);
	memcpy(r->config, config, sizeof config);
	return one_seed(sc, s, p, r);
}

static int run_seeds(const struct swarm_config *sc, struct swarm_scratch *s, struct swarm_result *res)
{
	struct swarm_plan *p = malloc(sizeof *p);
	struct swarm_run *r = malloc(sizeof *r);
	int rc = p && r ? 0 : -ENOMEM;
	for (uint64_t seed = sc->seed_lo; rc == 0; seed++) {
		if (swarm_in_shard(seed, sc->seed_lo, sc->shard_k, sc->shard_n)) {
			swarm_expand_on(seed, sc->on, p);
			memset(r, 0, sizeof *r);
			swarm_plan_text(p, r->config, sizeof r->config);
			if (sc->before && sc->before(sc->arg, res->runs, p, r->config)) {
				res->stopped = true;
				break;
			}
			if ((rc = seed_once_more(sc, s, p, r, res)) != 0)
				break;
			r->seed = seed;
			res->runs++;
			res->completed += r->completed;
			res->failed += !r->completed;
			res->n[r->finding]++;
			if (sc->done)
				sc->done(sc->arg, p, s->c, r);
		}
		if (seed == sc->seed_hi)
			break;
	}
	free(p);
	free(r);
	return rc;
}

int swarm_run(const struct swarm_config *sc, struct swarm_result *res, struct diag *d)
{
	struct swarm_scratch s = { 0 };
	int rc;
	memset(res, 0, sizeof *res);
	if (sc->seed_hi < sc->seed_lo || sc->shard_k < 1 || sc->shard_k > sc->shard_n || !sc->config)
		return diag_set(d, "swarm: bad config (seeds %llu..%llu, shard %llu/%llu)",
				(unsigned long long)sc->seed_lo, (unsigned long long)sc->seed_hi,
				(unsigned long long)sc->shard_k, (unsigned long long)sc->shard_n);
	s.c = malloc(sizeof *s.c);
	s.res = malloc(sizeof *s.res);
	if (!s.c || !s.res) {
		rc = diag_set(d, "swarm: out of memory");
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < 2; i++)
		snprintf(s.log[i], sizeof s.log[i], "%s/events-%d.log", sc->scratch ? sc->scratch : ".", i);
	rc = run_seeds(sc, &s, res);
	if (rc)
		diag_set(d, "swarm: %s", strerror(-rc));
	if (sc->check_determinism)
		for (int i = 0; i < 2; i++)
			remove(s.log[i]);
out:
	free(s.c);
	free(s.res);
	return rc;
}
