/* run_ctx - shared set-up and tear-down of a migration run (see run_ctx.h). */
#include "cli/run_ctx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "cli/cli.h"
#include "sim/tracegen.h"
#include "transport/qemu_stream.h"

uint64_t run_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int apply_option(struct run *r, int argc, char **argv, int *i)
{
	char key[64], where[80];
	const char *k = argv[*i] + 2, *eq = strchr(k, '='), *v;
	size_t kl = eq ? (size_t)(eq - k) : strlen(k);
	if (kl >= sizeof key)
		return diag_set(&r->d, "unknown option '%s'", argv[*i]);
	memcpy(key, k, kl);
	key[kl] = '\0';
	snprintf(where, sizeof where, "--%s", key);
	if (!runcfg_known(key))
		return diag_set(&r->d, "unknown option '--%s' (see --help)", key);
	if (eq)
		v = eq + 1;
	else if (runcfg_is_flag(key))
		v = "true";
	else if (*i + 1 < argc)
		v = argv[++*i];
	else
		return diag_set(&r->d, "--%s needs a value", key);
	return runcfg_set(&r->c, key, v, where, &r->d);
}

int run_parse_args(struct run *r, int argc, char **argv, void (*usage)(FILE *))
{
	const char *scenario = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		if (argv[i][0] == '-' && argv[i][1] == '-') {
			const char *k = argv[i] + 2;
			if (!strchr(k, '=') && !runcfg_is_flag(k))
				i++;
			continue;
		}
		if (argv[i][0] == '-')
			return diag_set(&r->d, "unknown option '%s' (see --help)", argv[i]);
		if (scenario)
			return diag_set(&r->d, "more than one scenario given ('%s', '%s')", scenario, argv[i]);
		scenario = argv[i];
	}
	if (scenario && runcfg_load_scenario(&r->c, scenario, &r->d))
		return -EINVAL;
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--", 2) && apply_option(r, argc, argv, &i))
			return -EINVAL;
	return runcfg_finish(&r->c, &r->d) ? -EINVAL : 0;
}

int run_prepare_trace(struct run *r)
{
	if (r->c.trace[0]) {
		snprintf(r->trace_path, sizeof r->trace_path, "%s", r->c.trace);
		return 0;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(r->trace_path, sizeof r->trace_path, "%s/migbed-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(r->trace_path);
	if (fd < 0)
		return diag_set(&r->d, "cannot create a temporary trace in %s: %s", tmp ? tmp : "/tmp", strerror(errno));
	close(fd);
	r->trace_tmp = true;
	return tgen_write(&r->c.gen, r->trace_path, &r->d) < 0 ? -EINVAL : 0;
}

/* A memory laid out as the header of the trace at path says. */
static int memory_from_trace(struct run *r, const char *path, mem **out)
{
	trace_reader *tr;
	if (trace_open(path, &tr, &r->d) < 0)
		return -EINVAL;
	const struct trace_header *h = trace_header(tr);
	struct mem_block_spec specs[TRACE_MAX_BLOCKS];
	for (size_t i = 0; i < h->n_blocks; i++)
		specs[i] = (struct mem_block_spec){ .name = h->blocks[i].name, .size_bytes = h->blocks[i].size_bytes };
	int rc = mem_new(h->page_size, h->n_blocks, specs, r->c.repr, r->c.seed, out);
	trace_close(tr);
	if (rc)
		return diag_set(&r->d, "%s: cannot allocate guest memory: %s", path, strerror(-rc));
	return 0;
}

/* The source's memory from the trace; the destination's from the trace too, or from
 * --dst-layout (a guest configured differently: RAM_BLOCK_* causes). */
int run_make_memories(struct run *r)
{
	int rc = 0;
	if (r->role != ROLE_DST)
		rc = memory_from_trace(r, r->trace_path, &r->src);
	if (rc == 0 && r->role != ROLE_SRC)
		rc = memory_from_trace(r, r->c.dst_layout[0] ? r->c.dst_layout : r->trace_path, &r->dst);
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
	if ((rc = mem_new(mem_page_size(r->dst), n, specs, MEM_REPR_BYTES, r->c.seed, &want)))
		return diag_set(&r->d, "qemu expected memory: %s", strerror(-rc));
	if (r->c.qemu_expect_file[0]) {
		FILE *f = fopen(r->c.qemu_expect_file, "rb");
		if (!f) {
			mem_free(want);
			return diag_set(&r->d, "%s: %s", r->c.qemu_expect_file, strerror(errno));
		}
		uint8_t *base = mem_block_ptr(want, 0);
		uint64_t cap = mem_block_bytes(want, 0), at = r->c.qemu_expect_addr;
		size_t got = at < cap ? fread(base + at, 1, cap - at, f) : 0;
		bool more = fgetc(f) != EOF;
		fclose(f);
		if (at >= cap || more) {
			mem_free(want);
			return diag_set(&r->d, "--qemu-expect: %s at %llu does not fit block %s (%llu bytes)",
					r->c.qemu_expect_file, (unsigned long long)at, specs[0].name, (unsigned long long)cap);
		}
		(void)got;
	}
	for (size_t b = 0; b < n && rc == 0; b++)
		rc = qemu_stream_expect_digest(r->qs, specs[b].name, proto_mem_digest(want, b));
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

static int make_endpoints(struct run *r)
{
	struct proto_opts po;
	int rc;
	proto_opts_defaults(&po);
	po.wait_timeout_ns = r->c.wait_timeout_ms * 1000000ull;
	po.caps_version = r->c.caps_version;
	po.refuse_mismatch = r->c.refuse_mismatch;
	if (r->role != ROLE_SRC) {
		wire_chunk_shift(r->c.dst_chunk_bytes, &po.chunk_shift);
		po.pin_all = r->c.dst_pin_all;
		po.negotiate = r->c.dst_negotiate;
		if (r->c.qemu_stream && (rc = setup_qemu_stream(r, &po)))
			return rc;
		if ((rc = proto_dst_new(r->w, r->dst, &po, &r->pd)))
			return diag_set(&r->d, "destination setup: %s", strerror(-rc));
		if ((rc = hca_world_add_progress(r->w, proto_dst_progress, r->pd)))
			return diag_set(&r->d, "destination setup: %s", strerror(-rc));
	}
	if (r->role != ROLE_DST) {
		wire_chunk_shift(r->c.chunk_bytes, &po.chunk_shift);
		po.pin_all = r->c.pin_all;
		po.negotiate = r->c.src_negotiate;
		if (r->role == ROLE_SRC && r->c.qemu_stream && (rc = setup_qemu_writer(r, &po)))
			return rc;
		if ((rc = proto_src_new(r->w, r->src, &po, &r->ps)))
			return diag_set(&r->d, "source setup: %s", strerror(-rc));
	}
	return 0;
}

/* --dst-memlock: simulated by the model; on verbs the real kernel limit, which needs the
 * destination in its own process (verbs-facts §4: clear CAP_IPC_LOCK from the *effective*
 * set, lower the soft RLIMIT_MEMLOCK; every registration is then counted, overlaps too). */
int run_apply_memlock(struct run *r)
{
	uint64_t lim = r->c.dst_memlock_bytes;
	if (!lim || r->role == ROLE_SRC)
		return 0;
	if (r->c.backend == HCA_BACKEND_MODEL) {
		hca_world_set_memlock(r->w, "dst", lim);
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
	int rc = fault_plan_new(r->c.seed, &r->faults);
	for (int i = 0; rc == 0 && i < r->c.n_faults; i++)
		if ((rc = fault_plan_add_spec(r->faults, r->c.faults[i], &e)))
			return diag_set(&r->d, "fault '%s': col %u: %s", r->c.faults[i], e.col, e.msg);
	if (rc)
		return diag_set(&r->d, "fault plan: %s", strerror(-rc));
	hca_world_set_faults(r->w, r->faults);
	return 0;
}

/* After the teardown (its deregistrations are fallible calls too): --fault-counts, written
 * whole or not at all, then the plan goes. */
static void faults_done(struct run *r)
{
	char tmp[1100];
	const char *path = r->c.fault_counts_path;
	if (r->faults && path[0]) {
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		FILE *f = fopen(tmp, "w");
		int rc = f ? fault_plan_write_counts(r->faults, f) : -errno;
		if (f && fclose(f) != 0 && rc == 0)
			rc = -EIO;
		if (rc == 0 && rename(tmp, path) != 0)
			rc = -errno;
		if (rc) {
			unlink(tmp);
			diag_set(&r->d, "%s: cannot write the fault counts: %s", path, strerror(-rc));
			r->faults_io_error = true;
		}
	}
	fault_plan_free(r->faults);
	r->faults = NULL;
}

int run_make_world(struct run *r)
{
	static const vclock zero_clock;
	int rc = evlog_open(r->c.events_path[0] ? r->c.events_path : NULL, &zero_clock, &r->ev);
	if (rc)
		return diag_set(&r->d, "%s: cannot write the event log: %s", r->c.events_path, strerror(-rc));
	struct hca_verbs_opts vo = { .ack_timeout = r->c.ack_timeout, .poll_busy = false };
	/* verbs: drop CAP_IPC_LOCK before any rdma_cm or uverbs file is opened: the kernel refuses
	 * writes to those files from credentials other than the opener's (EACCES) */
	if (r->c.backend == HCA_BACKEND_VERBS && r->role == ROLE_DST && (rc = run_apply_memlock(r)))
		return rc;
	rc = hca_world_new(r->c.backend, &r->c.cost, &vo, r->ev, &r->w);
	if (rc)
		return diag_set(&r->d, "cannot create the %s backend: %s",
				r->c.backend == HCA_BACKEND_VERBS ? "verbs" : "model", strerror(-rc));
	evlog_set_clock(r->ev, hca_world_clock(r->w));
	if ((rc = make_faults(r)))
		return rc;
	if (r->c.backend == HCA_BACKEND_MODEL || r->role == ROLE_BOTH) {
		if ((rc = run_apply_memlock(r)))
			return rc;
	}
	return make_endpoints(r);
}

void run_pump_dst(struct run *r, uint64_t budget_ns)
{
	uint64_t wall_end = run_wall_ms() + budget_ns / 1000000;
	for (uint64_t t = 0; t < budget_ns; t += 1000000) {
		if (proto_dst_progress(r->pd) < 0)
			return;
		if (hca_world_wait(r->w, 1000000) == 0 && r->c.backend == HCA_BACKEND_VERBS &&
		    run_wall_ms() > wall_end)
			return;
	}
}

void run_collect_dst_metrics(struct run *r)
{
	const struct proto_stats *ds = proto_dst_stats(r->pd);
	r->m.dst.registrations = ds->registrations;
	r->m.dst.pinned_peak_bytes = ds->pinned_peak_bytes;
	for (int i = 0; i < METRICS_MSG_TYPES; i++) {
		r->m.dst.msgs_sent[i] = ds->msgs_sent[i];
		r->m.dst.msgs_recv[i] = ds->msgs_recv[i];
	}
}

void run_cleanup(struct run *r)
{
	proto_src_free(r->ps);
	r->ps = NULL;
	proto_dst_free(r->pd);
	r->pd = NULL;
	qemu_stream_free(r->qs);
	r->qs = NULL;
	qemu_stream_writer_free(r->qw);
	r->qw = NULL;
	hca_world_free(r->w);
	r->w = NULL;
	faults_done(r);
	mem_free(r->src);
	mem_free(r->dst);
	r->src = r->dst = NULL;
	if (r->trace_tmp)
		unlink(r->trace_path);
	r->trace_tmp = false;
}

int run_finish_report(struct run *r)
{
	r->m.chunk_bytes_src = r->c.chunk_bytes;
	r->m.chunk_bytes_dst = r->c.dst_chunk_bytes;
	r->m.include_wall = r->c.backend == HCA_BACKEND_VERBS;
	r->m.wall_total_ms = run_wall_ms() - r->wall_start_ms;
	run_cleanup(r);
	int code = run_report(&r->c, &r->m, &r->out, r->c.backend == HCA_BACKEND_VERBS ? "verbs" : "model", &r->d);
	if (r->faults_io_error)
		code = CLI_EXIT_USAGE;
	int erc = evlog_close(r->ev);
	r->ev = NULL;
	if (erc && code != CLI_EXIT_USAGE) {
		diag_set(&r->d, "%s: cannot write the event log: %s", r->c.events_path, strerror(-erc));
		code = CLI_EXIT_USAGE;
	}
	if (code == CLI_EXIT_USAGE)
		fprintf(stderr, "migbed: %s\n", r->d.msg);
	return code;
}
