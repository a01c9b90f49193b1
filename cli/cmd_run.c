/* cmd_run - `migbed run`: one migration of a trace through the protocol, both sides in this
 * process, ending in a completed-and-verified migration or a named cause, judged against
 * the scenario's expectation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run_ctx.h"

#define MODEL_ADDR "model:migbed"
#define DEFAULT_VERBS_DST "198.18.0.1:29200"
#define DEFAULT_VERBS_SRC "198.18.0.2"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed run [SCENARIO] [--key VALUE ...]\n\n"
		   "Replay a page-dirtying trace through QEMU's RDMA migration protocol (source and\n"
		   "destination in this process) and verify the destination's memory. Without a trace\n"
		   "a small rand-set one is generated. A SCENARIO is a file of `key = value` lines\n"
		   "with the same keys as the options below; options override it.\n"
		   "On --backend verbs the destination listens on --dst-addr (default %s) and the\n"
		   "source connects from --src-addr (default %s, i.e. rxe1 -> rxe0 across the wire).\n\n"
		   "options:\n", DEFAULT_VERBS_DST, DEFAULT_VERBS_SRC);
	runcfg_print_keys(f);
	fprintf(f, "  %-28s %s\n", "-h, --help", "this text");
	fprintf(f, "\nIt prints a summary like HMP `info migrate`, then one line\n"
		   "  migbed: verdict=pass|fail status=completed|failed cause=NAME side=src|dst|-\n"
		   "exit status: 0 the run met its expectation, 1 it did not, 2 bad usage or input.\n");
}

/* Compare memories after both sides said completed. */
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

static void finish(struct run *r, int src_rc)
{
	uint64_t wait = r->c.wait_timeout_ms * 1000000ull;
	r->out.src = *proto_src_cause(r->ps);
	run_pump_dst(r, wait);
	proto_src_free(r->ps);   /* ERROR to the destination if the source failed; disconnect */
	r->ps = NULL;
	run_pump_dst(r, wait);
	if (proto_dst_state(r->pd) == PROTO_DST_RUNNING)
		proto_dst_fail(r->pd, src_rc == 0 ? CAUSE_DEST_INCOMPLETE : CAUSE_PEER_DISCONNECTED,
			       "the destination had not finished when the source was done");
	r->out.dst = *proto_dst_cause(r->pd);
	r->out.dst_completed = proto_dst_state(r->pd) == PROTO_DST_COMPLETED;
	r->out.src_completed = src_rc == 0;
	if (r->out.src_completed && r->out.dst_completed)
		verify(r);
	run_collect_dst_metrics(r);
	run_outcome_judge(&r->out, &r->c);
	r->m.status = r->out.completed ? "completed" : "failed";
}

int cmd_run(int argc, char **argv)
{
	struct run *r = calloc(1, sizeof *r);
	if (!r)
		return cli_usage_error("run: out of memory");
	r->role = ROLE_BOTH;
	runcfg_defaults(&r->c);
	int rc = run_parse_args(r, argc, argv, usage);
	if (rc > 0) {
		free(r);
		return CLI_EXIT_OK;
	}
	r->wall_start_ms = run_wall_ms();
	if (rc || run_prepare_trace(r) || run_make_memories(r) || run_make_world(r))
		goto input_error;
	bool verbs = r->c.backend == HCA_BACKEND_VERBS;
	const char *addr = !verbs ? MODEL_ADDR : r->c.dst_addr[0] ? r->c.dst_addr : DEFAULT_VERBS_DST;
	const char *from = !verbs ? "" : r->c.src_addr[0] ? r->c.src_addr : DEFAULT_VERBS_SRC;
	char connect_addr[600];
	snprintf(connect_addr, sizeof connect_addr, "%s%s%s", addr, from[0] ? "@" : "", from);
	if (proto_dst_listen(r->pd, addr) < 0) {
		diag_set(&r->d, "cannot listen on %s: %s", addr, proto_dst_cause(r->pd)->detail);
		goto input_error;
	}
	rc = engine_run(&r->c.eng, r->trace_path, r->src, r->w, r->ps, connect_addr, &r->m, &r->d);
	if (rc == ENGINE_INPUT_ERROR)
		goto input_error;
	finish(r, rc);
	int code = run_finish_report(r);
	free(r);
	return code;
input_error:
	fprintf(stderr, "migbed: run: %s\n", r->d.msg[0] ? r->d.msg : "bad input");
	if (r->ev)
		evlog_abort(r->ev);
	r->ev = NULL;
	run_cleanup(r);
	free(r);
	return CLI_EXIT_USAGE;
}
