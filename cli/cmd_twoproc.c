/* cmd_twoproc - `migbed dest --listen ADDR` and `migbed source --connect ADDR`: the two sides
 * of one migration in two processes, possibly on two hosts. Both read the same scenario or
 * options (the guest layout comes from the trace or the generator keys; the source replays
 * the trace, the destination only needs its layout). Each prints its own outcome:
 *   source       the run's cause as the source sees it; "completed" means the destination
 *                confirmed (it disconnects after loading and verifying everything)
 *   destination  completed and verified (against the digests the source sends before EOF),
 *                or its own cause, usually a consequence (PEER_ERROR, CONTROL_RECV_ERROR,
 *                PEER_DISCONNECTED) of the source's failure
 * The destination passes a `failed:...` expectation whenever it failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_ctx.h"
#include "sim/size.h"

#define DEFAULT_ACCEPT_MS 60000ull

static void usage_source(FILE *f)
{
	fprintf(f, "usage: migbed source --connect IP:PORT[@SRC_IP] [SCENARIO] [--key VALUE ...]\n\n"
		   "The source side of a two-process migration: replays the trace and migrates the\n"
		   "guest to `migbed dest` (or a QEMU destination) at IP:PORT, optionally from the\n"
		   "local address SRC_IP (it picks the RDMA device). --dump-mem FILE writes the\n"
		   "first RAM block's bytes after the run (bytes memory; to compare with a QEMU\n"
		   "destination's pmemsave). Same keys as `migbed run`:\n\n");
	runcfg_print_keys(f);
	fprintf(f, "\nexit status: 0 the run met its expectation, 1 it did not, 2 bad usage or input.\n");
}

static void usage_dest(FILE *f)
{
	fprintf(f, "usage: migbed dest --listen IP:PORT [SCENARIO] [--key VALUE ...]\n\n"
		   "The destination side of a two-process migration: waits (up to --accept-timeout-ms,\n"
		   "default 60000) for one source, serves registration with --dst-chunk-size,\n"
		   "loads the stream and verifies its memory against the source's digests.\n"
		   "Same keys as `migbed run`:\n\n");
	runcfg_print_keys(f);
	fprintf(f, "\nexit status: 0 the run met its expectation, 1 it did not, 2 bad usage or input.\n");
}

/* Take "--connect X" / "--listen X" / "--accept-timeout-ms N" out of argv. */
static int take_opt(int *argc, char **argv, const char *name, const char **out)
{
	size_t n = strlen(name);
	for (int i = 1; i < *argc; i++) {
		const char *v = NULL;
		int drop = 0;
		if (!strcmp(argv[i], name) && i + 1 < *argc) {
			v = argv[i + 1];
			drop = 2;
		} else if (!strncmp(argv[i], name, n) && argv[i][n] == '=') {
			v = argv[i] + n + 1;
			drop = 1;
		} else if (!strcmp(argv[i], name)) {
			return -1;
		}
		if (v) {
			*out = v;
			memmove(&argv[i], &argv[i + drop], (size_t)(*argc - i - drop) * sizeof *argv);
			*argc -= drop;
			return 1;
		}
	}
	return 0;
}

static struct run *start(int *argc, char **argv, enum run_role role, void (*usage)(FILE *), int *code)
{
	struct run *r = calloc(1, sizeof *r);
	if (!r) {
		*code = cli_usage_error("out of memory");
		return NULL;
	}
	r->role = role;
	runcfg_defaults(&r->c);
	r->c.backend = HCA_BACKEND_VERBS;
	int rc = run_parse_args(r, *argc, argv, usage);
	if (rc > 0) {
		*code = CLI_EXIT_OK;
		free(r);
		return NULL;
	}
	r->wall_start_ms = run_wall_ms();
	if (rc || run_prepare_trace(r) || run_make_memories(r) || run_make_world(r)) {
		fprintf(stderr, "migbed: %s: %s\n", role == ROLE_SRC ? "source" : "dest", r->d.msg);
		if (r->ev)
			evlog_abort(r->ev);
		r->ev = NULL;
		run_cleanup(r);
		free(r);
		*code = CLI_EXIT_USAGE;
		return NULL;
	}
	return r;
}

/* --dump-mem: block 0's bytes into `f` (FILE.tmp, opened before the run), then renamed to
 * FILE: whole or not at all (not at all unless `keep`). 0 or -errno. */
static int dump_mem(mem *m, FILE *f, const char *path, bool keep)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	const uint8_t *p = mem_block_ptr(m, 0);
	uint64_t n = mem_block_bytes(m, 0);
	int rc = !keep ? -ECANCELED : fwrite(p, 1, n, f) == n ? 0 : -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static FILE *dump_open(const char *path)
{
	char tmp[4200];
	if (strlen(path) > 4000) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	return fopen(tmp, "wb");
}

int cmd_source(int argc, char **argv)
{
	const char *addr = NULL, *dump = NULL;
	int code = CLI_EXIT_USAGE;
	if (take_opt(&argc, argv, "--connect", &addr) < 0)
		return cli_usage_error("source: --connect needs IP:PORT");
	if (take_opt(&argc, argv, "--dump-mem", &dump) < 0)
		return cli_usage_error("source: --dump-mem needs a FILE");
	bool help = argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
	if (!addr && !help)
		return cli_usage_error("source: --connect IP:PORT is required (see migbed source --help)");
	struct run *r = start(&argc, argv, ROLE_SRC, usage_source, &code);
	if (!r)
		return code;
	FILE *df = NULL;
	if (dump && (mem_repr(r->src) != MEM_REPR_BYTES || !(df = dump_open(dump)))) {
		fprintf(stderr, "migbed: source: --dump-mem %s: %s\n", dump,
			df || mem_repr(r->src) != MEM_REPR_BYTES ? "needs --mem bytes" : strerror(errno));
		evlog_abort(r->ev);
		r->ev = NULL;
		run_cleanup(r);
		free(r);
		return CLI_EXIT_USAGE;
	}
	int rc = engine_run(&r->c.eng, r->trace_path, r->src, r->w, r->ps, addr, &r->m, &r->d);
	int drc = df ? dump_mem(r->src, df, dump, rc != ENGINE_INPUT_ERROR) : 0;
	if (rc == ENGINE_INPUT_ERROR) {
		fprintf(stderr, "migbed: source: %s\n", r->d.msg);
		evlog_abort(r->ev);
		r->ev = NULL;
		run_cleanup(r);
		free(r);
		return CLI_EXIT_USAGE;
	}
	r->out.src = *proto_src_cause(r->ps);
	r->out.src_completed = r->out.dst_completed = r->out.verified = rc == 0;
	r->out.dst_unseen = r->c.qemu_stream;
	run_outcome_judge(&r->out, &r->c);
	r->m.status = r->out.completed ? "completed" : "failed";
	bool qemu_peer = r->c.qemu_stream;
	code = run_finish_report(r);
	free(r);
	if (qemu_peer && rc == 0)
		fprintf(stderr, "migbed: source: the destination is a real QEMU: the stream was delivered, but "
				"its verdict is only on its QMP (query-migrate, query-status; compare pmemsave with --dump-mem)\n");
	if (drc) {
		fprintf(stderr, "migbed: source: --dump-mem %s: %s\n", dump, strerror(-drc));
		code = CLI_EXIT_USAGE;
	}
	return code;
}

/* Serve one migration; bounded by the accept timeout, then by the wait timeout between
 * two events of the migration. */
static void serve(struct run *r, uint64_t accept_ms)
{
	uint64_t idle_ns = 0, step = 10000000;   /* 10 ms */
	bool connected = false;
	for (;;) {
		int p = proto_dst_progress(r->pd);
		if (p < 0)
			return;
		if (proto_dst_state(r->pd) != PROTO_DST_RUNNING && p == 0)
			return;
		connected = connected || proto_dst_stats(r->pd)->msgs_sent[WIRE_READY] > 0;
		if (p > 0 || hca_world_wait(r->w, step) > 0) {
			idle_ns = 0;
			continue;
		}
		idle_ns += step;
		uint64_t limit = connected ? r->c.wait_timeout_ms * 1000000ull : accept_ms * 1000000ull;
		if (idle_ns >= limit) {
			proto_dst_fail(r->pd, CAUSE_TIMEOUT,
				       connected ? "the source went silent in the middle of the migration"
						 : "no source connected within the accept timeout");
			return;
		}
	}
}

int cmd_dest(int argc, char **argv)
{
	const char *addr = NULL, *accept_s = NULL;
	int code = CLI_EXIT_USAGE;
	if (take_opt(&argc, argv, "--listen", &addr) < 0)
		return cli_usage_error("dest: --listen needs IP:PORT");
	if (take_opt(&argc, argv, "--accept-timeout-ms", &accept_s) < 0)
		return cli_usage_error("dest: --accept-timeout-ms needs a number");
	uint64_t accept_ms = DEFAULT_ACCEPT_MS;
	if (accept_s && (size_parse_u64(accept_s, &accept_ms) || accept_ms == 0))
		return cli_usage_error("dest: --accept-timeout-ms: '%s' is not a positive number", accept_s);
	bool help = argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
	if (!addr && !help)
		return cli_usage_error("dest: --listen IP:PORT is required (see migbed dest --help)");
	struct run *r = start(&argc, argv, ROLE_DST, usage_dest, &code);
	if (!r)
		return code;
	if (proto_dst_listen(r->pd, addr) < 0) {
		fprintf(stderr, "migbed: dest: cannot listen on %s: %s\n", addr, proto_dst_cause(r->pd)->detail);
		evlog_abort(r->ev);
		r->ev = NULL;
		run_cleanup(r);
		free(r);
		return CLI_EXIT_USAGE;
	}
	fprintf(stderr, "migbed: dest: listening on %s\n", addr);
	serve(r, accept_ms);
	r->out.dst = *proto_dst_cause(r->pd);
	r->out.dst_completed = proto_dst_state(r->pd) == PROTO_DST_COMPLETED;
	r->out.src_completed = r->out.verified = r->out.dst_completed;
	run_collect_dst_metrics(r);
	r->m.pin_all = r->m.pin_all || proto_dst_pin_all(r->pd);
	run_outcome_judge(&r->out, &r->c);
	if (!r->out.completed && !r->c.expect_completed)
		r->out.pass = true;   /* the destination only has to notice the failure */
	r->m.status = r->out.completed ? "completed" : "failed";
	code = run_finish_report(r);
	free(r);
	return code;
}
