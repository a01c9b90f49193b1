/* cmd_run - `migbed run`: one migration of a trace through the protocol, both sides in this
 * process, ending in a completed-and-verified migration or a named cause, judged against
 * the scenario's expectation. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_report.h"
#include "cli/runcfg.h"
#include "sim/engine.h"
#include "sim/tracegen.h"

#define MODEL_ADDR "model:migbed"
#define DEFAULT_VERBS_DST "198.18.0.1:29200"

struct run {
	struct runcfg c;
	char trace_path[1024];
	bool trace_tmp;
	mem *src, *dst;
	evlog *ev;
	hca_world *w;
	proto_src *ps;
	proto_dst *pd;
	struct metrics m;
	struct run_outcome out;
	struct diag d;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed run [SCENARIO] [--key VALUE ...]\n\n"
		   "Replay a page-dirtying trace through QEMU's RDMA migration protocol (source and\n"
		   "destination in this process) and verify the destination's memory. Without a trace\n"
		   "a small rand-set one is generated. A SCENARIO is a file of `key = value` lines\n"
		   "with the same keys as the options below; options override it.\n\noptions:\n");
	runcfg_print_keys(f);
	fprintf(f, "  %-28s %s\n", "-h, --help", "this text");
	fprintf(f, "\nIt prints a summary like HMP `info migrate`, then one line\n"
		   "  migbed: verdict=pass|fail status=completed|failed cause=NAME side=src|dst|-\n"
		   "exit status: 0 the run met its expectation, 1 it did not, 2 bad usage or input.\n");
}

/* Scenario first (positional), then the options in order. */
static int parse_args(struct run *r, int argc, char **argv)
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
		if (scenario)
			return diag_set(&r->d, "more than one scenario given ('%s', '%s')", scenario, argv[i]);
		scenario = argv[i];
	}
	if (scenario && runcfg_load_scenario(&r->c, scenario, &r->d))
		return -EINVAL;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--", 2) != 0)
			continue;
		char key[64], where[80];
		const char *k = argv[i] + 2, *eq = strchr(k, '='), *v;
		size_t kl = eq ? (size_t)(eq - k) : strlen(k);
		if (kl >= sizeof key)
			return diag_set(&r->d, "unknown option '%s'", argv[i]);
		memcpy(key, k, kl);
		key[kl] = '\0';
		snprintf(where, sizeof where, "--%s", key);
		if (!runcfg_known(key))
			return diag_set(&r->d, "unknown option '--%s' (see migbed run --help)", key);
		if (eq)
			v = eq + 1;
		else if (runcfg_is_flag(key))
			v = "true";
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return diag_set(&r->d, "--%s needs a value", key);
		if (runcfg_set(&r->c, key, v, where, &r->d))
			return -EINVAL;
	}
	return runcfg_finish(&r->c, &r->d) ? -EINVAL : 0;
}

static int prepare_trace(struct run *r)
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

static int make_memories(struct run *r)
{
	trace_reader *tr;
	if (trace_open(r->trace_path, &tr, &r->d) < 0)
		return -EINVAL;
	const struct trace_header *h = trace_header(tr);
	struct mem_block_spec specs[TRACE_MAX_BLOCKS];
	for (size_t i = 0; i < h->n_blocks; i++)
		specs[i] = (struct mem_block_spec){ .name = h->blocks[i].name, .size_bytes = h->blocks[i].size_bytes };
	int rc = mem_new(h->page_size, h->n_blocks, specs, r->c.repr, r->c.seed, &r->src);
	if (rc == 0)
		rc = mem_new(h->page_size, h->n_blocks, specs, r->c.repr, r->c.seed, &r->dst);
	trace_close(tr);
	if (rc)
		return diag_set(&r->d, "%s: cannot allocate guest memory: %s", r->trace_path, strerror(-rc));
	return 0;
}

static int make_world(struct run *r)
{
	struct proto_opts po;
	static const vclock zero_clock;
	int rc = evlog_open(r->c.events_path[0] ? r->c.events_path : NULL, &zero_clock, &r->ev);
	if (rc)
		return diag_set(&r->d, "%s: cannot write the event log: %s", r->c.events_path, strerror(-rc));
	rc = hca_world_new(r->c.backend, &r->c.cost, NULL, r->ev, &r->w);
	if (rc)
		return diag_set(&r->d, "cannot create the %s backend: %s",
				r->c.backend == HCA_BACKEND_VERBS ? "verbs" : "model", strerror(-rc));
	evlog_set_clock(r->ev, hca_world_clock(r->w));
	proto_opts_defaults(&po);
	po.wait_timeout_ns = r->c.wait_timeout_ms * 1000000ull;
	po.caps_version = r->c.caps_version;
	wire_chunk_shift(r->c.dst_chunk_bytes, &po.chunk_shift);
	po.pin_all = r->c.dst_pin_all;
	if ((rc = proto_dst_new(r->w, r->dst, &po, &r->pd)))
		return diag_set(&r->d, "destination setup: %s", strerror(-rc));
	wire_chunk_shift(r->c.chunk_bytes, &po.chunk_shift);
	po.pin_all = r->c.pin_all;
	if ((rc = proto_src_new(r->w, r->src, &po, &r->ps)))
		return diag_set(&r->d, "source setup: %s", strerror(-rc));
	return hca_world_add_progress(r->w, proto_dst_progress, r->pd);
}

/* Let the destination finish what the source started (bounded in virtual time). */
static void pump_dst(struct run *r, uint64_t budget_ns)
{
	for (uint64_t t = 0; t < budget_ns; t += 1000000) {
		if (proto_dst_progress(r->pd) < 0)
			return;
		hca_sleep(r->w, 1000000);
	}
}

static void finish(struct run *r, int src_rc)
{
	uint64_t wait = r->c.wait_timeout_ms * 1000000ull;
	r->out.src = *proto_src_cause(r->ps);
	pump_dst(r, wait);
	proto_src_free(r->ps);   /* ERROR to the destination if the source failed; disconnect */
	r->ps = NULL;
	pump_dst(r, wait);
	if (proto_dst_state(r->pd) == PROTO_DST_RUNNING)
		proto_dst_fail(r->pd, src_rc == 0 ? CAUSE_DEST_INCOMPLETE : CAUSE_PEER_DISCONNECTED,
			       "the destination had not finished when the source was done");
	r->out.dst = *proto_dst_cause(r->pd);
	r->out.dst_completed = proto_dst_state(r->pd) == PROTO_DST_COMPLETED;
	r->out.src_completed = src_rc == 0;
	if (r->out.src_completed && r->out.dst_completed) {
		size_t bb;
		uint64_t bp;
		int cmp = mem_compare(r->src, r->dst, &bb, &bp);
		if (cmp != 0) {
			r->out.dst_completed = false;
			cause_set(&r->out.dst, CAUSE_VERIFY_MISMATCH, "first difference: block %s page %llu",
				  cmp > 0 ? mem_block_name(r->src, bb) : "?", (unsigned long long)bp);
			r->out.dst.t_ns = vclock_now_ns(hca_world_clock(r->w));
		} else {
			r->out.verified = true;
		}
	}
	const struct proto_stats *ds = proto_dst_stats(r->pd);
	r->m.dst.registrations = ds->registrations;
	r->m.dst.pinned_peak_bytes = ds->pinned_peak_bytes;
	for (int i = 0; i < METRICS_MSG_TYPES; i++) {
		r->m.dst.msgs_sent[i] = ds->msgs_sent[i];
		r->m.dst.msgs_recv[i] = ds->msgs_recv[i];
	}
	r->m.chunk_bytes_src = r->c.chunk_bytes;
	r->m.chunk_bytes_dst = r->c.dst_chunk_bytes;
	run_outcome_judge(&r->out, &r->c);
	r->m.status = r->out.completed ? "completed" : "failed";
}

static void cleanup(struct run *r)
{
	proto_src_free(r->ps);
	proto_dst_free(r->pd);
	hca_world_free(r->w);
	mem_free(r->src);
	mem_free(r->dst);
	if (r->trace_tmp)
		unlink(r->trace_path);
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int cmd_run(int argc, char **argv)
{
	struct run *r = calloc(1, sizeof *r);
	if (!r)
		return cli_usage_error("run: out of memory");
	runcfg_defaults(&r->c);
	int rc = parse_args(r, argc, argv), exit_code = CLI_EXIT_USAGE;
	if (rc > 0) {
		free(r);
		return CLI_EXIT_OK;
	}
	uint64_t t0 = wall_ms();
	if (rc || prepare_trace(r) || make_memories(r) || make_world(r))
		goto input_error;
	const char *addr = r->c.backend == HCA_BACKEND_MODEL ? MODEL_ADDR
			   : r->c.dst_addr[0] ? r->c.dst_addr : DEFAULT_VERBS_DST;
	char connect_addr[600];
	snprintf(connect_addr, sizeof connect_addr, "%s%s%s", addr, r->c.src_addr[0] ? "@" : "", r->c.src_addr);
	if (proto_dst_listen(r->pd, addr) < 0 && r->c.backend == HCA_BACKEND_VERBS) {
		diag_set(&r->d, "cannot listen on %s: %s", addr, proto_dst_cause(r->pd)->detail);
		goto input_error;
	}
	rc = engine_run(&r->c.eng, r->trace_path, r->src, r->w, r->ps, connect_addr, &r->m, &r->d);
	if (rc == ENGINE_INPUT_ERROR)
		goto input_error;
	finish(r, rc);
	r->m.include_wall = r->c.backend == HCA_BACKEND_VERBS;
	r->m.wall_total_ms = wall_ms() - t0;
	cleanup(r);
	exit_code = run_report(&r->c, &r->m, &r->out, r->c.backend == HCA_BACKEND_VERBS ? "verbs" : "model", &r->d);
	int erc = evlog_close(r->ev);
	if (erc && exit_code != CLI_EXIT_USAGE) {
		diag_set(&r->d, "%s: cannot write the event log: %s", r->c.events_path, strerror(-erc));
		exit_code = CLI_EXIT_USAGE;
	}
	if (exit_code == CLI_EXIT_USAGE)
		fprintf(stderr, "migbed: run: %s\n", r->d.msg);
	free(r);
	return exit_code;
input_error:
	fprintf(stderr, "migbed: run: %s\n", r->d.msg[0] ? r->d.msg : "bad input");
	if (r->ev)
		evlog_abort(r->ev);
	cleanup(r);
	free(r);
	return CLI_EXIT_USAGE;
}
