/* SPDX-License-Identifier: MIT */
/* run - one migration run: set-up, the sides, the memory oracle, the judge, tear-down (see run.h). */
#include "run/run.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "faults/fault_hook.h"
#include "run/timeline.h"
#include "sim/evlog.h"
#include "sim/tracegen.h"
#include "transport/proto.h"
#include "transport/qemu_stream.h"

#ifndef MIGBED_BUILD_ID
#define MIGBED_BUILD_ID "unknown"
#endif

#define MODEL_ADDR "model:migbed"

struct qemu_stream;
struct qemu_stream_writer;

/* One run in progress: what the sides share and what they write. */
struct run {
	enum run_role role;
	const struct runcfg *c;
	char trace_path[1024];
	bool trace_tmp;
	mem *src, *dst;
	mem *shadow;                  /* check_source: the guest's writes alone */
	evlog *ev;
	hca_world *w;
	proto_src *ps;
	proto_dst *pd;
	struct metrics m;
	struct run_outcome out;
	struct diag d;
	uint64_t wall_start_ms;
	struct qemu_stream *qs;        /* --qemu-stream: the reader of a real QEMU's stream */
	struct qemu_stream_writer *qw; /* --qemu-stream on the source: writes QEMU's stream */
	fault_plan *faults;            /* the run's fault plan (empty: only counts calls) */
	bool faults_io_error;          /* --fault-counts could not be written (d set) */
	uint64_t injected;             /* the plan's injections, the teardown's too */
	uint64_t calls[FAULT_SITE_COUNT][FAULT_SIDES];   /* the plan's calls, the teardown's too */
	bool paused;                   /* --pause-at was reached */
	struct out_file json;          /* --json, opened by make_world */
	char tl_events[1100];          /* --timeline without --events: the log, a temporary */
	struct out_file counts;        /* --fault-counts, opened by make_world */
};

const char *run_build_id(void)
{
	return MIGBED_BUILD_ID[0] ? MIGBED_BUILD_ID : "unknown";
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct first_defect {
	struct diag *d;
	long n;
};

static void keep_first_defect(void *arg, const char *diag_line)
{
	struct first_defect *fd = arg;
	if (fd->n++ == 0)
		diag_set(fd->d, "%s", diag_line);
}

/* The engine streams the trace: a defect would otherwise surface mid-run (after the log and
 * the world exist) or never (past the point where the migration ended). */
/* QEMU's RAM blocks are whole target pages (4 KiB), and its stream carries flags in the low
 * bits of every size: a block of a trace with smaller pages that is not a multiple of 4 KiB
 * cannot be migrated (the destination would read a flag word). Bad input, named up front. */
#define RUN_TARGET_PAGE_BYTES 4096u
static int check_blocks_migratable(struct run *r, const char *path)
{
	trace_reader *tr;
	if (trace_open(path, &tr, &r->d) < 0)
		return -EINVAL;
	const struct trace_header *h = trace_header(tr);
	int rc = 0;
	for (size_t i = 0; i < h->n_blocks && !rc; i++)
		if (h->blocks[i].size_bytes % RUN_TARGET_PAGE_BYTES)
			rc = diag_set(&r->d, "%s:%lu: block '%s' is %llu bytes: QEMU's RAM blocks are whole 4 KiB "
				      "target pages (its stream carries flags in the low bits of a size)", path,
				      h->blocks[i].line, h->blocks[i].name, (unsigned long long)h->blocks[i].size_bytes);
	trace_close(tr);
	return rc;
}

static int check_trace(struct run *r, const char *path)
{
	struct first_defect fd = { .d = &r->d };
	long n = trace_check(path, keep_first_defect, &fd);
	if (n == 0)
		return check_blocks_migratable(r, path);
	if (fd.n == 0)
		return diag_set(&r->d, "%s: cannot read the trace", path);
	if (fd.n > 1) {
		char first[DIAG_MSG_MAX];
		snprintf(first, sizeof first, "%s", r->d.msg);
		diag_set(&r->d, "%.400s (%ld defects in all: see migbed trace check)", first, fd.n);
	}
	return -EINVAL;
}

static int prepare_trace(struct run *r)
{
	if (r->role != ROLE_SRC && r->c->dst_layout[0] && check_trace(r, r->c->dst_layout))
		return -EINVAL;
	if (r->c->trace[0]) {
		snprintf(r->trace_path, sizeof r->trace_path, "%s", r->c->trace);
		return check_trace(r, r->trace_path);
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(r->trace_path, sizeof r->trace_path, "%s/migbed-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(r->trace_path);
	if (fd < 0)
		return diag_set(&r->d, "cannot create a temporary trace in %s: %s", tmp ? tmp : "/tmp", strerror(errno));
	close(fd);
	r->trace_tmp = true;
	return tgen_write(&r->c->gen, r->trace_path, &r->d) < 0 ? -EINVAL : 0;
}

/* A source guest's memory starts from the trace's initial layout (version 2: the pages that
 * hold data before the workload starts; every other page is a zero hole). Not a write: no
 * page is logged dirty (the bulk round sends every page anyway). */
static int apply_layout(struct run *r, trace_reader *tr, mem *m)
{
	struct trace_range rg;
	int rc;
	while ((rc = trace_next_layout(tr, &rg)) > 0)
		mem_write_pages(m, rg.block, rg.first_page, rg.n_pages);
	return rc < 0 ? diag_set(&r->d, "%s", trace_diag(tr)) : 0;
}

/* A memory laid out as the header of the trace at path says; the source's (layout) starts
 * from the trace's initial layout, a destination's is all zero. */
static int memory_from_trace(struct run *r, const char *path, bool layout, mem **out)
{
	trace_reader *tr;
	if (trace_open(path, &tr, &r->d) < 0)
		return -EINVAL;
	const struct trace_header *h = trace_header(tr);
	struct mem_block_spec specs[TRACE_MAX_BLOCKS];
	for (size_t i = 0; i < h->n_blocks; i++)
		specs[i] = (struct mem_block_spec){ .name = h->blocks[i].name, .size_bytes = h->blocks[i].size_bytes };
	int rc = mem_new(h->page_size, h->n_blocks, specs, r->c->repr, r->c->seed, out);
	if (rc) {
		trace_close(tr);
		return diag_set(&r->d, "%s: cannot allocate guest memory: %s", path, strerror(-rc));
	}
	rc = layout ? apply_layout(r, tr, *out) : 0;
	trace_close(tr);
	if (rc) {
		mem_free(*out);
		*out = NULL;
	}
	return rc;
}

/* The source's memory from the trace; the destination's from the trace too, or from
 * --dst-layout (a guest configured differently: RAM_BLOCK_* causes). */
static int make_memories(struct run *r)
{
	int rc = 0;
	if (r->role != ROLE_DST)
		rc = memory_from_trace(r, r->trace_path, true, &r->src);
	if (rc == 0 && r->role != ROLE_SRC)
		rc = memory_from_trace(r, r->c->dst_layout[0] ? r->c->dst_layout : r->trace_path, false, &r->dst);
	return rc;
}

/* --qemu-stream: the destination reads a real QEMU's stream; its VERIFY digests are those of
 * the content QEMU was given (--qemu-expect FILE@ADDR: zeros elsewhere). */
static int setup_qemu_stream(struct run *r, struct proto_opts *po)
{
	struct qemu_stream_opts qo;
	qemu_stream_opts_defaults(&qo);
	int rc = qemu_stream_new(&qo, &r->qs);
	if (rc)
		return diag_set(&r->d, "qemu stream reader: %s", strerror(-rc));
	size_t n = mem_n_blocks(r->dst);
	struct mem_block_spec specs[STREAM_MAX_BLOCKS];
	for (size_t b = 0; b < n; b++)
		specs[b] = (struct mem_block_spec){ .name = mem_block_name(r->dst, b), .size_bytes = mem_block_bytes(r->dst, b) };
	mem *want = NULL;
	if ((rc = mem_new(mem_page_size(r->dst), n, specs, MEM_REPR_BYTES, r->c->seed, &want)))
		return diag_set(&r->d, "qemu expected memory: %s", strerror(-rc));
	if (r->c->qemu_expect_file[0]) {
		FILE *f = fopen(r->c->qemu_expect_file, "rb");
		if (!f) {
			mem_free(want);
			return diag_set(&r->d, "%s: %s", r->c->qemu_expect_file, strerror(errno));
		}
		uint8_t *base = mem_block_ptr(want, 0);
		uint64_t cap = mem_block_bytes(want, 0), at = r->c->qemu_expect_addr;
		size_t got = at < cap ? fread(base + at, 1, cap - at, f) : 0;
		bool more = fgetc(f) != EOF;
		fclose(f);
		if (at >= cap || more) {
			mem_free(want);
			return diag_set(&r->d, "--qemu-expect: %s at %llu does not fit block %s (%llu bytes)",
					r->c->qemu_expect_file, (unsigned long long)at, specs[0].name, (unsigned long long)cap);
		}
		(void)got;
	}
	for (size_t b = 0; b < n && rc == 0; b++) {
		struct digest dg;
		rc = proto_mem_digest(want, b, &dg);
		rc = rc ? rc : qemu_stream_expect_digest(r->qs, specs[b].name, dg);
	}
	mem_free(want);
	if (rc)
		return diag_set(&r->d, "qemu expected digests: %s", strerror(-rc));
	po->stream_filter = qemu_stream_filter;
	po->stream_filter_arg = r->qs;
	po->stream_end = qemu_stream_filter_end;
	return 0;
}

/* --qemu-stream on the source: the destination is a real QEMU 7.2 -M none; the stream is
 * translated into QEMU's and nothing is confirmed after EOF (check QEMU over QMP). */
static int setup_qemu_writer(struct run *r, struct proto_opts *po)
{
	int rc = qemu_stream_writer_new(NULL, &r->qw);
	if (rc)
		return diag_set(&r->d, "qemu stream writer: %s", strerror(-rc));
	po->stream_out_filter = qemu_stream_out_filter;
	po->stream_out_filter_arg = r->qw;
	po->peer_is_qemu = true;
	return 0;
}

/* The whole migration's bound on each side (proto_opts.deadline_ns, docs/security.md): the
 * engine's max-time, then the downtime limit for the switchover and two single waits for the
 * end; saturating (each term is bounded by the option table, the sum need not be). */
static uint64_t run_deadline_ns(const struct runcfg *c)
{
	uint64_t ms = c->eng.max_time_ms, add[] = { c->eng.downtime_limit_ms, c->wait_timeout_ms, c->wait_timeout_ms };
	for (size_t i = 0; i < sizeof add / sizeof add[0]; i++)
		ms = ms > UINT64_MAX - add[i] ? UINT64_MAX : ms + add[i];
	return ms > UINT64_MAX / 1000000u ? UINT64_MAX : ms * 1000000u;
}

static int make_endpoints(struct run *r)
{
	struct proto_opts po;
	int rc;
	proto_opts_defaults(&po);
	po.wait_timeout_ns = r->c->wait_timeout_ms * 1000000ull;
	po.deadline_ns = run_deadline_ns(r->c);
	po.caps_version = r->c->caps_version;
	po.refuse_mismatch = r->c->refuse_mismatch;
	po.seed = r->c->seed;
	po.rnr_retry = (uint8_t)r->c->rnr_retry;   /* bounded 0..7 by the option table */
	if (r->role != ROLE_SRC) {
		po.odp = r->c->dst_odp;
		wire_chunk_shift(r->c->dst_chunk_bytes, &po.chunk_shift);
		po.pin_all = r->c->dst_pin_all;
		po.negotiate = r->c->dst_negotiate;
		po.impl = r->c->dst_impl;
		if (r->c->qemu_stream && (rc = setup_qemu_stream(r, &po)))
			return rc;
		if ((rc = proto_dst_new(r->w, r->dst, &po, &r->pd)))
			return diag_set(&r->d, "destination setup: %s", strerror(-rc));
		if ((rc = hca_world_add_progress(r->w, proto_dst_progress, r->pd)))
			return diag_set(&r->d, "destination setup: %s", strerror(-rc));
	}
	if (r->role != ROLE_DST) {
		wire_chunk_shift(r->c->chunk_bytes, &po.chunk_shift);
		po.pin_all = r->c->pin_all;
		po.negotiate = r->c->src_negotiate;
		po.impl = r->c->src_impl;
		po.odp = PROTO_ODP_OFF;
		if (r->role == ROLE_SRC && r->c->qemu_stream && (rc = setup_qemu_writer(r, &po)))
			return rc;
		if ((rc = proto_src_new(r->w, r->src, &po, &r->ps)))
			return diag_set(&r->d, "source setup: %s", strerror(-rc));
	}
	return 0;
}

/* --dst-memlock: simulated by the model; on verbs the real kernel limit, which needs the
 * destination in its own process (docs/verbs-facts.md, 'Registration limits': clear
 * CAP_IPC_LOCK from the *effective* set, lower the soft RLIMIT_MEMLOCK; every registration
 * is then counted, overlaps too). */
static int apply_memlock(struct run *r)
{
	uint64_t lim = r->c->dst_memlock_bytes;
	if (!lim || r->role == ROLE_SRC)
		return 0;
	if (r->c->backend == HCA_BACKEND_MODEL) {
		hca_world_set_memlock(r->w, VOCAB_SIDE_DST, lim);
		return 0;
	}
	if (r->role == ROLE_BOTH)
		return diag_set(&r->d, "--dst-memlock on --backend verbs needs the destination in its own process: "
				       "use `migbed dest --dst-memlock ...` with `migbed source`");
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return diag_set(&r->d, "--dst-memlock: capget: %s", strerror(errno));
	data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &hdr, data) != 0)
		return diag_set(&r->d, "--dst-memlock: capset: %s", strerror(errno));
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return diag_set(&r->d, "--dst-memlock: getrlimit: %s", strerror(errno));
	rl.rlim_cur = lim;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < lim)
		rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
		return diag_set(&r->d, "--dst-memlock: setrlimit: %s", strerror(errno));
	fprintf(stderr, "migbed: dest: CAP_IPC_LOCK dropped, RLIMIT_MEMLOCK %llu bytes\n", (unsigned long long)lim);
	return 0;
}

/* The fault plan (docs/faults.md): the rules were checked when the options were read. */
static int make_faults(struct run *r)
{
	struct fault_parse_error e = { 0 };
	const char *path = r->c->fault_counts_path;
	int rc = path[0] ? out_file_open(&r->counts, path, NULL) : 0;
	if (rc)
		return diag_set(&r->d, "%s: cannot write the fault counts: %s", path, strerror(-rc));
	rc = fault_plan_new(r->c->seed, &r->faults);
	for (int i = 0; rc == 0 && i < r->c->n_faults; i++)
		if ((rc = fault_plan_add_spec(r->faults, r->c->faults[i], &e)))
			return diag_set(&r->d, "fault '%s': col %u: %s", r->c->faults[i], e.col, e.msg);
	if (rc)
		return diag_set(&r->d, "fault plan: %s", strerror(-rc));
	struct hca_fault_hook hook = fault_plan_hook(r->faults);   /* the seam asks the plan */
	hca_world_set_fault_hook(r->w, &hook);
	return 0;
}

/* After the teardown (its deregistrations are fallible calls too): --fault-counts (opened
 * by make_faults; aborted by run_abort), written whole or not at all, then the plan goes. */
static void faults_done(struct run *r)
{
	if (r->faults && r->counts.f) {
		int rc = fault_plan_write_counts(r->faults, r->counts.f);
		if (rc == 0)
			rc = out_file_commit(&r->counts, NULL);
		if (rc) {
			diag_set(&r->d, "%s: cannot write the fault counts: %s", r->c->fault_counts_path, strerror(-rc));
			r->faults_io_error = true;
		}
	}
	out_file_abort(&r->counts);
	r->injected = r->faults ? fault_plan_injected(r->faults) : 0;
	for (int s = 0; s < FAULT_SITE_COUNT; s++)
		for (int side = 0; side < FAULT_SIDES; side++)
			r->calls[s][side] = fault_plan_calls(r->faults, (enum fault_site)s, (enum fault_side)side);
	fault_plan_free(r->faults);
	r->faults = NULL;
}

/* --pause-at: say where and stop; a test acts (cuts the link, kills the peer) and sends
 * SIGCONT. The event log's content is the same as without the pause. */
static void pause_here(void *arg, const char *side, const char *event, uint64_t nth)
{
	struct run *r = arg;
	r->paused = true;
	fprintf(stderr, "migbed: paused at %s %s #%llu (pid %ld): SIGCONT resumes\n", side, event,
		(unsigned long long)nth, (long)getpid());
	fflush(NULL);
	raise(SIGSTOP);
	fprintf(stderr, "migbed: resumed\n");
}

static int make_world(struct run *r)
{
	static const vclock zero_clock;
	if (r->c->json_path[0] && out_file_open(&r->json, r->c->json_path, &r->d))
		return -EINVAL;
	const char *events = r->c->events_path[0] ? r->c->events_path : NULL;
	struct stat est;
	if (r->c->timeline_path[0] && events &&
	    (!strcmp(events, "-") || (stat(events, &est) == 0 && !S_ISREG(est.st_mode))))
		return diag_set(&r->d, "--timeline reads the event log back after the run: --events %s is not a "
			       "regular file (give --events a file, or --timeline alone)", events);
	if (r->c->timeline_path[0]) {
		/* refused before anything runs if it cannot be written */
		struct out_file probe = { 0 };
		if (out_file_open(&probe, r->c->timeline_path, &r->d))
			return -EINVAL;
		out_file_abort(&probe);
		if (!events) {
			const char *tmpdir = getenv("TMPDIR");
			snprintf(r->tl_events, sizeof r->tl_events, "%s/migbed-timeline-XXXXXX",
				 tmpdir && tmpdir[0] ? tmpdir : "/tmp");
			int fd = mkstemp(r->tl_events);
			if (fd < 0) {
				r->tl_events[0] = '\0';
				return diag_set(&r->d, "--timeline: cannot make a temporary event log: %s", strerror(errno));
			}
			close(fd);
			events = r->tl_events;
		}
	}
	int rc = evlog_open(events, &zero_clock, &r->ev);
	if (rc)
		return diag_set(&r->d, "%s: cannot write the event log: %s", events ? events : "-", strerror(-rc));
	if (r->c->pause_nth && evlog_watch(r->ev, r->c->pause_side, r->c->pause_event, r->c->pause_nth,
					  pause_here, r))
		return diag_set(&r->d, "--pause-at: cannot watch %s:%s", r->c->pause_side, r->c->pause_event);
	struct hca_verbs_opts vo = { .ack_timeout = r->c->ack_timeout, .poll_busy = false };
	/* verbs: drop CAP_IPC_LOCK before any rdma_cm or uverbs file is opened: the kernel refuses
	 * writes to those files from credentials other than the opener's (EACCES) */
	if (r->c->backend == HCA_BACKEND_VERBS && r->role == ROLE_DST && (rc = apply_memlock(r)))
		return rc;
	rc = hca_world_new(r->c->backend, &r->c->cost, &vo, r->ev, &r->w);
	if (rc == -ENODEV && r->c->backend == HCA_BACKEND_VERBS)
		return diag_set(&r->d, "cannot create the verbs backend: %s: this host has no RDMA device "
			       "(topologies/detect says what it finds). Run in the soft-RoCE VM: "
			       "topologies/vm/rxe-vm build/migbed ... --backend verbs (README, 'Running on real "
			       "RDMA'), or set up rxe here as root: topologies/setup", strerror(-rc));
	if (rc)
		return diag_set(&r->d, "cannot create the %s backend: %s",
				r->c->backend == HCA_BACKEND_VERBS ? "verbs" : "model", strerror(-rc));
	evlog_set_clock(r->ev, hca_world_clock(r->w));
	if ((rc = make_faults(r)))
		return rc;
	if (r->c->backend == HCA_BACKEND_MODEL || r->role == ROLE_BOTH) {
		if ((rc = apply_memlock(r)))
			return rc;
	}
	return make_endpoints(r);
}

static void pump_dst(struct run *r, uint64_t budget_ns)
{
	uint64_t wall_end = wall_ms() + budget_ns / 1000000;
	for (uint64_t t = 0; t < budget_ns; t += 1000000) {
		if (proto_dst_progress(r->pd) < 0)
			return;
		if (hca_world_wait(r->w, 1000000) == 0 && r->c->backend == HCA_BACKEND_VERBS &&
		    wall_ms() > wall_end)
			return;
	}
}

static void collect_dst_metrics(struct run *r)
{
	const struct proto_stats *ds = proto_dst_stats(r->pd);
	r->m.dst.registrations = ds->registrations;
	r->m.dst.pinned_peak_bytes = ds->pinned_peak_bytes;
	for (int i = 0; i < METRICS_MSG_TYPES; i++) {
		r->m.dst.msgs_sent[i] = ds->msgs_sent[i];
		r->m.dst.msgs_recv[i] = ds->msgs_recv[i];
	}
}

/* The leak oracle, once both sides' protocol objects are freed: nothing of the world may
 * still be alive (hca_world_free would release it silently). Both sides in this process on
 * the model only: a one-side process shares no world with its peer, and a verbs world's
 * count is the front end's, whose teardown the fuzz harnesses check. */
static void leak_check(struct run *r)
{
	if (!r->w || r->role != ROLE_BOTH || r->c->backend != HCA_BACKEND_MODEL)
		return;
	hca_listener *planted;   /* the test hook's listener, released by hca_world_free */
	if (r->c->test_leak_listener)
		(void)hca_listen(r->w, VOCAB_SIDE_DST, MODEL_ADDR, &planted);   /* failing: the test fails */
	r->out.objects_checked = true;
	r->out.live_objects += hca_world_live_objects(r->w);   /* a continuing source's second world's added */
	r->out.stray_writes += hca_world_stray_writes(r->w);
}

static void cleanup(struct run *r)
{
	proto_src_free(r->ps);
	r->ps = NULL;
	proto_dst_free(r->pd);
	r->pd = NULL;
	qemu_stream_free(r->qs);
	r->qs = NULL;
	qemu_stream_writer_free(r->qw);
	r->qw = NULL;
	leak_check(r);
	hca_world_free(r->w);
	r->w = NULL;
	faults_done(r);
	mem_free(r->src);
	mem_free(r->dst);
	mem_free(r->shadow);
	r->src = r->dst = r->shadow = NULL;
	if (r->trace_tmp)
		unlink(r->trace_path);
	r->trace_tmp = false;
}

static void discard(struct run *r)
{
	out_file_abort(&r->counts);
	cleanup(r);
	evlog_abort(r->ev);
	r->ev = NULL;
	out_file_abort(&r->json);
	if (r->tl_events[0])
		unlink(r->tl_events);
	r->tl_events[0] = '\0';
}


/* The memory oracle, after both sides said completed: every page of the destination must
 * equal the source's, else the destination did not complete (VERIFY_MISMATCH). */
static void verify(struct run *r)
{
	size_t bb = 0;
	uint64_t bp = 0;
	int cmp = mem_compare(r->src, r->dst, &bb, &bp);
	if (cmp == 0) {
		r->out.verified = true;
		return;
	}
	r->out.dst_completed = false;
	cause_set(&r->out.dst, CAUSE_VERIFY_MISMATCH, "first difference: block %s page %llu",
		  cmp > 0 ? mem_block_name(r->src, bb) : "?", (unsigned long long)bp);
	r->out.dst.t_ns = vclock_now_ns(hca_world_clock(r->w));
}

static void judge(struct run *r)
{
	run_outcome_judge(&r->out, r->c, r->role);
	r->m.status = r->out.completed ? "completed" : "failed";
}

/* Both sides here: the source is done (src_rc); let the destination finish, then compare.
 * A source that completed keeps its connection while the destination loads the rest. A
 * source that failed tears down at once, as QEMU's does (ERROR to the peer if it can, then
 * disconnect): the destination only takes what is already delivered before that, and is not
 * given a wait-timeout of its own against a source that no longer runs (on verbs that wait
 * was wall time: 5-10 s per failed run of the fault matrix and of torture). */
static void finish_both(struct run *r, int src_rc)
{
	uint64_t wait = r->c->wait_timeout_ms * 1000000ull;
	r->out.src = *proto_src_cause(r->ps);
	if (src_rc == 0)
		pump_dst(r, wait);
	else
		(void)proto_dst_progress(r->pd);
	proto_src_free(r->ps);   /* ERROR to the destination if the source failed; disconnect */
	r->ps = NULL;
	/* a destination still listening takes a connect request already delivered; with the
	 * source gone, none can come after it (a real one would listen forever) */
	if (src_rc == 0 || !proto_dst_listening(r->pd) ||
	    (proto_dst_progress(r->pd) >= 0 && !proto_dst_listening(r->pd)))
		pump_dst(r, wait);
	if (proto_dst_state(r->pd) == PROTO_DST_RUNNING)
		proto_dst_fail(r->pd, src_rc == 0 ? CAUSE_DEST_INCOMPLETE : CAUSE_PEER_DISCONNECTED,
			       "the destination had not finished when the source was done");
	r->out.dst = *proto_dst_cause(r->pd);
	r->out.dst_completed = proto_dst_state(r->pd) == PROTO_DST_COMPLETED;
	r->out.src_completed = src_rc == 0;
	if (r->out.src_completed && r->out.dst_completed)
		verify(r);
	collect_dst_metrics(r);
	judge(r);
}

/* A source process: "completed" means the destination confirmed (it disconnects after
 * loading and verifying everything). */
static void finish_src(struct run *r, int src_rc)
{
	r->out.src = *proto_src_cause(r->ps);
	r->out.src_completed = r->out.dst_completed = r->out.verified = src_rc == 0;
	r->out.dst_unseen = r->c->qemu_stream;
	judge(r);
}

/* A destination process: completed and verified (against the digests the source sends
 * before EOF), or its own cause. */
static void finish_dst(struct run *r)
{
	r->out.dst = *proto_dst_cause(r->pd);
	r->out.dst_completed = proto_dst_state(r->pd) == PROTO_DST_COMPLETED;
	r->out.src_completed = r->out.verified = r->out.dst_completed;
	collect_dst_metrics(r);
	r->m.pin_all = r->m.pin_all || proto_dst_pin_all(r->pd);
	judge(r);
}

/* A destination process serves one migration; bounded by the accept timeout, then by the
 * wait timeout between two events of the migration. */
static void tell_progress(struct run *r, const struct run_side *s, bool connected)
{
	if (!s->dst_progress)
		return;
	const struct proto_stats *st = proto_dst_stats(r->pd);
	struct run_dst_progress p = { .connected = connected, .registrations = st->registrations,
				      .pinned_bytes = st->pinned_bytes, .file_bytes = st->file_bytes };
	for (int i = 0; i < WIRE_TYPE_COUNT; i++)
		p.messages_received += st->msgs_recv[i];
	s->dst_progress(s->progress_arg, &p);
}

static void serve(struct run *r, const struct run_side *s)
{
	uint64_t accept_ms = s->accept_ms;
	uint64_t idle_ns = 0, step = 10000000;   /* 10 ms */
	bool connected = false;
	for (;;) {
		int p = proto_dst_progress(r->pd);
		if (p < 0)
			return;
		if (proto_dst_state(r->pd) != PROTO_DST_RUNNING && p == 0)
			return;
		connected = connected || proto_dst_stats(r->pd)->msgs_sent[WIRE_READY] > 0;
		tell_progress(r, s, connected);
		int w = p > 0 ? 1 : hca_world_wait(r->w, step);
		if (w < 0) {   /* the backend failed (a CM channel gone, the device removed): name it */
			char why[128];
			snprintf(why, sizeof why, "waiting for the source: %s", strerror(-w));
			proto_dst_fail(r->pd, w == -ECONNRESET ? CAUSE_PEER_DISCONNECTED
					      : w == -ENODEV ? CAUSE_DEVICE_REMOVED : CAUSE_INTERNAL, why);
			return;
		}
		if (w > 0) {
			idle_ns = 0;
			continue;
		}
		idle_ns += step;
		uint64_t limit = connected ? r->c->wait_timeout_ms * 1000000ull : accept_ms * 1000000ull;
		if (idle_ns >= limit) {
			proto_dst_fail(r->pd, CAUSE_TIMEOUT,
				       connected ? "the source went silent in the middle of the migration"
						 : "no source connected within the accept timeout");
			return;
		}
	}
}

static int setup(struct run *r, const struct runcfg *cfg, enum run_role role)
{
	r->role = role;
	r->c = cfg;
	r->wall_start_ms = wall_ms();
	return prepare_trace(r) || make_memories(r) || make_world(r) ? -EINVAL : 0;
}

static const char *fix_detail(const struct run_outcome *from, struct run_outcome *to)
{
	if (from->detail == from->src.detail)
		return to->src.detail;
	if (from->detail == from->dst.detail)
		return to->dst.detail;
	return from->detail;
}

void run_result_copy(struct run_result *dst, const struct run_result *src)
{
	*dst = *src;
	dst->out.detail = fix_detail(&src->out, &dst->out);
	dst->json = (struct out_file){ 0 };
}

/* The end of a run that happened: metrics, fault counts, teardown, the event log. */
static void conclude(struct run *r, struct run_result *res, struct diag *d)
{
	if (!r->m.chunk_bytes_src)   /* not from the engine (a destination process): as configured */
		r->m.chunk_bytes_src = r->c->chunk_bytes;
	r->m.chunk_bytes_dst = r->c->dst_chunk_bytes;
	r->m.include_wall = r->c->backend == HCA_BACKEND_VERBS;
	r->m.wall_total_ms = wall_ms() - r->wall_start_ms;
	if (r->w) {   /* verbs: the WRITEs' wall-clock window (zero on the model) */
		struct hca_write_window ww = hca_world_write_window(r->w);
		r->m.wall_writes = ww.writes;
		r->m.wall_write_bytes = ww.bytes;
		r->m.wall_write_us = ww.last_wc_ns > ww.first_post_ns ? (ww.last_wc_ns - ww.first_post_ns) / 1000 : 0;
	}
	run_outcome_faults(&r->out, r->c, r->faults, r->role);
	res->virtual_ns = vclock_now_ns(hca_world_clock(r->w));
	cleanup(r);
	res->faults_injected = r->injected;
	memcpy(res->fault_calls, r->calls, sizeof res->fault_calls);
	res->pause_missed = r->c->pause_nth && !r->paused;
	res->pause_event_lines = res->pause_missed ? evlog_count_event(r->ev, r->c->pause_event) : 0;
	int erc = evlog_close(r->ev);
	r->ev = NULL;
	res->output_error = r->faults_io_error;
	if (erc && !res->output_error) {
		diag_set(&r->d, "%s: cannot write the event log: %s", r->c->events_path, strerror(-erc));
		res->output_error = true;
	}
	if (r->c->timeline_path[0] && !res->output_error &&
	    timeline_write(r->tl_events[0] ? r->tl_events : r->c->events_path, r->c->timeline_path, &r->d))
		res->output_error = true;
	if (r->tl_events[0]) {
		unlink(r->tl_events);
		r->tl_events[0] = '\0';
	}
	if (res->output_error)
		*d = r->d;
	res->out = r->out;
	res->out.detail = fix_detail(&r->out, &res->out);
	res->m = r->m;
	res->wall_ms = r->m.wall_total_ms;
	res->build_id = run_build_id();
	res->json = r->json;
	r->json = (struct out_file){ 0 };
}

static int migrate_both(struct run *r);

/* The continuing source (runcfg check_continue), after a migration that failed with fired
 * faults: the SAME source guest (its memory as the failed run left it; the guest goes on
 * writing, the workload's trace playing again from its start) and its shadow migrate a
 * second time, to a new destination over a new world without the fault rules (healed):
 * r->out.cont_*. The first run's world, faults and outputs are left as they are; the second
 * writes no event log. 0, or -ENOMEM (nothing checked). */
static int continue_source(struct run *r)
{
	struct runcfg *c2 = malloc(sizeof *c2);
	struct run *r2 = calloc(1, sizeof *r2);
	int rc = c2 && r2 ? 0 : -ENOMEM;
	if (rc)
		goto out;
	*c2 = *r->c;
	if (!c2->test_unhealed)
		c2->n_faults = 0;
	c2->n_expect_fired = 0;
	c2->events_path[0] = c2->json_path[0] = c2->timeline_path[0] = c2->fault_counts_path[0] = '\0';
	c2->bundle_path[0] = '\0';
	c2->pause_nth = 0;
	c2->check_continue = c2->test_leak_listener = false;
	r2->role = ROLE_BOTH;
	r2->c = c2;
	r2->wall_start_ms = wall_ms();
	snprintf(r2->trace_path, sizeof r2->trace_path, "%s", r->trace_path);   /* r unlinks it */
	r2->src = r->src;         /* the source and its shadow move on to the second migration */
	r2->shadow = r->shadow;
	r->src = r->shadow = NULL;
	rc = memory_from_trace(r2, r2->trace_path, false, &r2->dst) || make_world(r2) || migrate_both(r2);
	r->out.cont_checked = true;
	r->out.cont_completed = rc == 0 && r2->out.completed;
	r->out.cont_cause = rc ? CAUSE_INTERNAL : r2->out.cause;
	r->out.cont_side = rc ? RUN_SIDE_NONE : r2->out.side;
	r->out.cont_src_intact = rc == 0 && r2->out.src_checked && r2->out.src_intact;
	rc = 0;
	cleanup(r2);
	r->out.live_objects += r2->out.live_objects;
	r->out.stray_writes += r2->out.stray_writes;
	evlog_abort(r2->ev);
out:
	free(r2);
	free(c2);
	return rc;
}

/* Both sides, once set up: listen, migrate, let the destination finish. 0 or -EINVAL. */
static int migrate_both(struct run *r)
{
	bool verbs = r->c->backend == HCA_BACKEND_VERBS;
	const char *addr = !verbs ? MODEL_ADDR : r->c->dst_addr[0] ? r->c->dst_addr : RUN_VERBS_DST;
	const char *from = !verbs ? "" : r->c->src_addr[0] ? r->c->src_addr : RUN_VERBS_SRC;
	char connect_addr[600];
	snprintf(connect_addr, sizeof connect_addr, "%s%s%s", addr, from[0] ? "@" : "", from);
	if (proto_dst_listen(r->pd, addr) < 0)
		return diag_set(&r->d, "cannot listen on %s: %s", addr, proto_dst_cause(r->pd)->detail);
	struct engine_opts eo = r->c->eng;
	if (r->c->check_source && !r->shadow && memory_from_trace(r, r->trace_path, true, &r->shadow))   /* as the source starts */
		return -EINVAL;
	eo.shadow = r->shadow;
	int rc = engine_run(&eo, r->trace_path, r->src, r->w, r->ps, connect_addr, &r->m, &r->d);
	if (rc == ENGINE_INPUT_ERROR)
		return -EINVAL;
	finish_both(r, rc);
	if (r->shadow) {   /* the source oracle: a migration, failed or not, leaves the source alone */
		size_t bb = 0;
		uint64_t bp = 0;
		r->out.src_checked = true;
		r->out.src_intact = mem_compare(r->src, r->shadow, &bb, &bp) == 0;
	}
	/* on the model only: on verbs the first run's world still holds its device and address
	 * until cleanup, and the swarm reruns a fresh guest healed instead (run/swarm.c healed) */
	if (r->c->check_continue && r->c->backend == HCA_BACKEND_MODEL && r->shadow && !r->out.completed && r->faults &&
	    fault_plan_injected(r->faults))
		return continue_source(r);
	return 0;
}

static int migrate_src(struct run *r, const struct run_side *s)
{
	if (s->src_before && s->src_before(s->arg, r->src, &r->d))
		return -EINVAL;
	int rc = engine_run(&r->c->eng, r->trace_path, r->src, r->w, r->ps, s->addr, &r->m, &r->d);
	if (s->src_after)
		s->src_after(s->arg, r->src, rc != ENGINE_INPUT_ERROR);
	if (rc == ENGINE_INPUT_ERROR)
		return -EINVAL;
	finish_src(r, rc);
	return 0;
}

static int migrate_dst(struct run *r, const struct run_side *s)
{
	if (proto_dst_listen(r->pd, s->addr) < 0)
		return diag_set(&r->d, "cannot listen on %s: %s", s->addr, proto_dst_cause(r->pd)->detail);
	if (s->listening)
		s->listening(s->arg, s->addr);
	serve(r, s);
	finish_dst(r);
	return 0;
}

/* One run: set up, play the role, conclude, or (bad input) leave nothing behind. */
static int run_one(const struct runcfg *cfg, const struct run_side *s, struct run_result *res, struct diag *d)
{
	memset(res, 0, sizeof *res);
	res->out.side = RUN_SIDE_NONE;   /* until judged */
	struct run *r = calloc(1, sizeof *r);
	if (!r)
		return diag_set(d, "out of memory");
	r->out.side = RUN_SIDE_NONE;
	enum run_role role = s ? s->role : ROLE_BOTH;
	int rc = setup(r, cfg, role);
	if (rc == 0)
		rc = role == ROLE_BOTH ? migrate_both(r) : role == ROLE_SRC ? migrate_src(r, s) : migrate_dst(r, s);
	if (rc == 0) {
		conclude(r, res, d);
	} else {
		*d = r->d;
		discard(r);
	}
	free(r);
	return rc;
}

int run_migrate(const struct runcfg *cfg, struct run_result *res, struct diag *d)
{
	return run_one(cfg, NULL, res, d);
}

int run_migrate_side(const struct runcfg *cfg, const struct run_side *side, struct run_result *res,
		     struct diag *d)
{
	if (!side || (side->role != ROLE_SRC && side->role != ROLE_DST) || !side->addr)
		return diag_set(d, "run_migrate_side: a source or a destination, with an address");
	return run_one(cfg, side, res, d);
}
