/* SPDX-License-Identifier: MIT */
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bundle.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
#include "run/out_file.h"
#include "run/run.h"
#include "sim/size.h"

static void usage_source(FILE *f)
{
	fprintf(f, "usage: migbed source --connect IP:PORT[@SRC_IP] [SCENARIO] [--key VALUE ...]\n\n"
		   "The source side of a two-process migration: replays the trace and migrates the\n"
		   "guest to `migbed dest` (or a QEMU destination) at IP:PORT. Its own keys, then\n"
		   "those of `migbed run`:\n\n");
	opts_print_help(f, OPTS_SOURCE);
	fprintf(f, "\nexit status: 0 the run met its expectation, 1 it did not, 2 bad usage or input.\n");
}

static void usage_dest(FILE *f)
{
	fprintf(f, "usage: migbed dest --listen IP:PORT [SCENARIO] [--key VALUE ...]\n\n"
		   "The destination side of a two-process migration: waits for one source, serves\n"
		   "registration with --dst-chunk-size, loads the stream and verifies its memory\n"
		   "against the source's digests.\n\n"
		   "Readiness, for scripts (instead of sleeping): once it listens it prints\n"
		   "  migbed: dest: listening on IP:PORT\n"
		   "on stderr, and writes \"listening IP:PORT pid N\" to --ready-file or --ready-fd.\n\n"
		   "Its own keys, then those of `migbed run`:\n\n");
	opts_print_help(f, OPTS_DEST);
	fprintf(f, "\nexit status: 0 the run met its expectation, 1 it did not, 2 bad usage or input.\n");
}

/* --help or -h anywhere (a wrapper may put options before it). */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

/* The command's own keys (--connect, --listen, ...: rows of the option table) out of argv
 * into *x; --help anywhere; the required keys. 1: help wanted; 0 ok; <0 bad (printed). */
static int parse_extra(unsigned cmd, struct opts_extra *x, int *argc, char **argv)
{
	struct diag d = { 0 };
	opts_extra_defaults(x);
	if (opts_take_extra(cmd, x, argc, argv, &d) == 0 && wants_help(*argc, argv))
		return 1;
	if (d.msg[0] || opts_check_required(cmd, NULL, x, &d)) {
		cli_usage_error("%s: %s", opts_cmd_name(cmd), d.msg);
		return -1;
	}
	return 0;
}

/* The command line into *c (a verbs run unless it says otherwise). 1: --help was printed;
 * 0 ok; <0 bad input (printed). */
static int parse(struct runcfg *c, int argc, char **argv, const char *who, void (*usage)(FILE *))
{
	struct diag d = { 0 };
	runcfg_defaults(c);
	c->backend = HCA_BACKEND_VERBS;
	int rc = run_parse_args(c, &d, argc, argv, usage);
	if (rc < 0)
		fprintf(stderr, "migbed: %s: %s\n", who, d.msg);
	return rc;
}

/* --dump-mem, around the migration (run_side's hooks): block 0's bytes, under the output-file
 * rules of run/out_file.h ("-" is stdout, a symlink or device written through, a path that
 * cannot be written refused before the migration), whole or not at all. */
struct dump {
	const char *path;
	struct out_file of;   /* opened before the migration */
	int rc;               /* of the dump: 0 or -errno */
};

static int dump_before(void *arg, mem *src, struct diag *d)
{
	struct dump *dm = arg;
	int rc;
	if (!dm->path)
		return 0;
	if (mem_repr(src) != MEM_REPR_BYTES)
		return diag_set(d, "--dump-mem %s: needs --mem bytes", dm->path);
	if ((rc = out_file_open(&dm->of, dm->path, NULL)))
		return diag_set(d, "--dump-mem %s: %s", dm->path, strerror(-rc));
	return 0;
}

/* ran: the migration ran (whatever its outcome): dump and commit; else nothing is left. */
static void dump_after(void *arg, mem *src, bool ran)
{
	struct dump *dm = arg;
	dm->rc = 0;
	if (!dm->of.f)
		return;
	if (!ran) {               /* not run (bad input): nothing dumped, and no second message */
		out_file_abort(&dm->of);
		return;
	}
	uint64_t n = mem_block_bytes(src, 0);
	dm->rc = fwrite(mem_block_ptr(src, 0), 1, n, dm->of.f) == n ? 0 : -EIO;
	if (dm->rc)
		out_file_abort(&dm->of);
	else
		dm->rc = out_file_commit(&dm->of, NULL);
}

/* The side's migration with a status line on a terminal, as `run` has (cli/progress.h). */
static int side_with_progress(struct runcfg *c, struct run_side *side, struct run_result *res, const char *who,
			      struct diag *d)
{
	struct migration_progress mp;
	progress_migration(&mp, who, c, side->role == ROLE_DST ? side : NULL);
	int rc = run_migrate_side(c, side, res, d);
	progress_end(&mp.p);
	return rc;
}

int cmd_source(int argc, char **argv)
{
	struct opts_extra x;
	if (parse_extra(OPTS_SOURCE, &x, &argc, argv) < 0)
		return CLI_EXIT_USAGE;
	const char *addr = x.connect, *dump = x.dump_mem[0] ? x.dump_mem : NULL;
	struct runcfg *c = calloc(1, sizeof *c);
	struct run_result *res = calloc(1, sizeof *res);
	struct dump dm = { .path = dump };
	struct run_side side = { .role = ROLE_SRC, .addr = addr, .src_before = dump_before,
				 .src_after = dump_after, .arg = &dm };
	struct diag d = { 0 };
	struct bundle_run br = { 0 };
	int code = CLI_EXIT_USAGE, rc;
	bool ran = false;
	if (!c || !res)
		code = cli_usage_error("source: out of memory");
	else if ((rc = parse(c, argc, argv, "source", usage_source)) != 0)
		code = rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	else if (bundle_run_begin(&br, c, &d) || side_with_progress(c, &side, res, "source", &d)) {
		fprintf(stderr, "migbed: source: %s\n", d.msg);
		bundle_run_abort(&br);
	} else
		ran = true;
	if (ran) {
		int bundle_rc = bundle_run_end(&br, c, res, OPTS_SOURCE, addr);
		code = run_report_result(c, res, &d);
		if (bundle_rc)
			code = CLI_EXIT_USAGE;
	}
	if (ran && c->qemu_stream && res->out.src_completed)
		fprintf(stderr, "migbed: source: the destination is a real QEMU: the stream was delivered, but "
				"its verdict is only on its QMP (query-migrate, query-status; compare pmemsave with --dump-mem)\n");
	if (dm.rc) {
		fprintf(stderr, "migbed: source: --dump-mem %s: %s\n", dump, strerror(-dm.rc));
		code = CLI_EXIT_USAGE;
	}
	free(res);
	free(c);
	return code;
}

/* --ready-file / --ready-fd: opened (and checked) before anything runs, written once the
 * destination listens. The file follows the output-file rules of run/out_file.h ("-" is
 * stdout, a symlink or device written through, a new or regular file appears whole). */
struct ready {
	const char *path;
	struct out_file of;   /* --ready-file */
	FILE *f;              /* of.f, or fdopen of --ready-fd */
};

static int ready_open(struct ready *rd, const char *path, uint64_t fd)
{
	int rc;
	if (path) {
		if ((rc = out_file_open(&rd->of, path, NULL)))
			return cli_usage_error("dest: --ready-file %s: %s", path, strerror(-rc));
		rd->path = path;
		rd->f = rd->of.f;
		return 0;
	}
	if (fd) {   /* 3..1023 by its row; 0: not given */
		if (!(rd->f = fdopen((int)fd, "w")))
			return cli_usage_error("dest: --ready-fd %llu: %s", (unsigned long long)fd, strerror(errno));
	}
	return 0;
}

/* ok: say ready; !ok: drop it (a ready file is never left behind by a destination that
 * could not listen). */
static void ready_done(struct ready *rd, bool ok, const char *addr)
{
	int rc;
	if (!rd->f)
		return;
	/* a reader of --ready-fd that went away must not kill the destination (SIGPIPE) */
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	if (ok)
		fprintf(rd->f, "listening %s pid %ld\n", addr, (long)getpid());
	if (rd->path) {
		if (!ok)
			out_file_abort(&rd->of);
		else if ((rc = out_file_commit(&rd->of, NULL)))
			fprintf(stderr, "migbed: dest: --ready-file %s: %s\n", rd->path, strerror(-rc));
	} else if (fclose(rd->f) != 0 && ok) {
		fprintf(stderr, "migbed: dest: --ready-fd: %s (going on)\n", strerror(errno));
	}
	signal(SIGPIPE, old);
	rd->f = NULL;
}

/* run_side's hook: the destination listens; say so (stderr, then the ready file or fd). */
static void dest_listening(void *arg, const char *addr)
{
	fprintf(stderr, "migbed: dest: listening on %s\n", addr);
	fflush(stderr);
	ready_done(arg, true, addr);
}

int cmd_dest(int argc, char **argv)
{
	struct opts_extra x;
	int code = CLI_EXIT_USAGE, help = parse_extra(OPTS_DEST, &x, &argc, argv);
	if (help < 0)
		return CLI_EXIT_USAGE;
	const char *addr = x.listen, *ready_path = x.ready_file[0] ? x.ready_file : NULL;
	uint64_t accept_ms = x.accept_timeout_ms;
	if (ready_path && x.ready_fd)
		return cli_usage_error("dest: --ready-file and --ready-fd: one or the other");
	struct ready rd = { 0 };
	if (!help && (code = ready_open(&rd, ready_path, x.ready_fd)) != 0)
		return code;
	struct runcfg *c = calloc(1, sizeof *c);
	struct run_result *res = calloc(1, sizeof *res);
	struct run_side side = { .role = ROLE_DST, .addr = addr, .accept_ms = accept_ms,
				 .listening = dest_listening, .arg = &rd };
	struct diag d = { 0 };
	struct bundle_run br = { 0 };
	int rc;
	code = CLI_EXIT_USAGE;
	if (!c || !res)
		code = cli_usage_error("dest: out of memory");
	else if ((rc = parse(c, argc, argv, "dest", usage_dest)) != 0)
		code = rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	else if (bundle_run_begin(&br, c, &d) || side_with_progress(c, &side, res, "dest", &d)) {
		fprintf(stderr, "migbed: dest: %s\n", d.msg);
		bundle_run_abort(&br);
	} else {
		int bundle_rc = bundle_run_end(&br, c, res, OPTS_DEST, addr);
		code = run_report_result(c, res, &d);
		if (bundle_rc)
			code = CLI_EXIT_USAGE;
	}
	ready_done(&rd, false, addr);   /* not said (it never listened): no ready file */
	free(res);
	free(c);
	return code;
}
