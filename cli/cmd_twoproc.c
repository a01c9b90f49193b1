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

#include "cli/cli.h"
#include "cli/run_args.h"
#include "cli/run_report.h"
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

/* --dump-mem, around the migration (run_side's hooks). */
struct dump {
	const char *path;
	FILE *f;          /* path.tmp, opened before the migration */
	int rc;           /* of dump_mem */
};

static int dump_before(void *arg, mem *src, struct diag *d)
{
	struct dump *dm = arg;
	if (!dm->path)
		return 0;
	if (mem_repr(src) != MEM_REPR_BYTES)
		return diag_set(d, "--dump-mem %s: needs --mem bytes", dm->path);
	if (!(dm->f = dump_open(dm->path)))
		return diag_set(d, "--dump-mem %s: %s", dm->path, strerror(errno));
	return 0;
}

static void dump_after(void *arg, mem *src, bool ran)
{
	struct dump *dm = arg;
	int rc = dm->f ? dump_mem(src, dm->f, dm->path, ran) : 0;
	dm->rc = ran ? rc : 0;   /* not run (bad input): nothing dumped, and no second message */
	dm->f = NULL;
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
	int code = CLI_EXIT_USAGE, rc;
	bool ran = false;
	if (!c || !res)
		code = cli_usage_error("source: out of memory");
	else if ((rc = parse(c, argc, argv, "source", usage_source)) != 0)
		code = rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	else if (run_migrate_side(c, &side, res, &d))
		fprintf(stderr, "migbed: source: %s\n", d.msg);
	else
		ran = true;
	if (ran)
		code = run_report_result(c, res, &d);
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
 * destination listens. */
struct ready {
	const char *path;
	char tmp[4200];
	FILE *f;          /* path.tmp, or fdopen of the fd */
};

static int ready_open(struct ready *rd, const char *path, uint64_t fd)
{
	if (path) {
		if (strlen(path) > 4000 || !path[0])
			return cli_usage_error("dest: --ready-file: path empty or too long");
		snprintf(rd->tmp, sizeof rd->tmp, "%s.tmp", path);
		rd->path = path;
		if (!(rd->f = fopen(rd->tmp, "w")))
			return cli_usage_error("dest: --ready-file %s: %s", path, strerror(errno));
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
	if (!rd->f)
		return;
	/* a reader of --ready-fd that went away must not kill the destination (SIGPIPE) */
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	if (ok)
		fprintf(rd->f, "listening %s pid %ld\n", addr, (long)getpid());
	int rc = fclose(rd->f);
	signal(SIGPIPE, old);
	if (ok && rc != 0 && !rd->path)
		fprintf(stderr, "migbed: dest: --ready-fd: %s (going on)\n", strerror(errno));
	rd->f = NULL;
	if (!rd->path)
		return;
	if (ok && rc == 0 && rename(rd->tmp, rd->path) == 0)
		return;
	if (ok)
		fprintf(stderr, "migbed: dest: --ready-file %s: %s\n", rd->path, strerror(errno));
	unlink(rd->tmp);
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
	int rc;
	code = CLI_EXIT_USAGE;
	if (!c || !res)
		code = cli_usage_error("dest: out of memory");
	else if ((rc = parse(c, argc, argv, "dest", usage_dest)) != 0)
		code = rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	else if (run_migrate_side(c, &side, res, &d))
		fprintf(stderr, "migbed: dest: %s\n", d.msg);
	else
		code = run_report_result(c, res, &d);
	ready_done(&rd, false, addr);   /* not said (it never listened): no ready file */
	free(res);
	free(c);
	return code;
}
