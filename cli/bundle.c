/* SPDX-License-Identifier: MIT */
/* bundle - reproducer bundles: writing, reading back, rerunning (see bundle.h). */
#include "cli/bundle.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli/cli.h"
#include "cli/run_report.h"
#include "cli/runcfg.h"

/* DIR's length at most: DIR.tmp-XXXXXX/events.log then fits a config's path field */
#define BUNDLE_DIR_MAX 960u

#ifdef __clang__
#define BUNDLE_COMPILER "clang " __clang_version__
#else
#define BUNDLE_COMPILER "gcc " __VERSION__
#endif

const char *bundle_compiler(void)
{
	return BUNDLE_COMPILER;
}

static const char *cmd_word(unsigned cmd)
{
	return cmd == OPTS_SOURCE ? "source" : cmd == OPTS_DEST ? "dest" : "run";
}

void bundle_outcome_text(const struct bundle_outcome *oc, char *buf, size_t n)
{
	if (oc->end == BUNDLE_HANG)
		snprintf(buf, n, "hang");
	else
		snprintf(buf, n, "%s %d", oc->end == BUNDLE_SIGNAL ? "signal" : "exit", oc->code);
}

void bundle_rmdir(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	char p[2200];
	if (!dp)
		return;
	while ((e = readdir(dp)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			if (bundle_path_join(p, sizeof p, dir, e->d_name) == 0)
				unlink(p);
		}
	closedir(dp);
	rmdir(dir);
}

int bundle_begin(struct bundle *b, const char *dir, bool replace, struct diag *d)
{
	struct stat st;
	char tar[1100];
	memset(b, 0, sizeof *b);
	size_t len = strlen(dir);
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len == 0 || len > BUNDLE_DIR_MAX)
		return diag_set(d, "--bundle '%s': empty or too long", dir), -EINVAL;
	memcpy(b->dir, dir, len);
	b->replace = replace;
	snprintf(tar, sizeof tar, "%s.tar.zst", b->dir);
	if (!replace && (lstat(b->dir, &st) == 0 || lstat(tar, &st) == 0))
		return diag_set(d, "%s: exists (a bundle is never written over: remove it or name another)",
				lstat(b->dir, &st) == 0 ? b->dir : tar), -EEXIST;
	snprintf(b->tmp, sizeof b->tmp, "%s.tmp-XXXXXX", b->dir);
	if (!mkdtemp(b->tmp)) {
		int e = errno;
		b->tmp[0] = '\0';
		return diag_set(d, "%s: cannot write the bundle: %s", b->dir, strerror(e)), -e;
	}
	return 0;
}

int bundle_path_join(char *buf, size_t n, const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	if (a + 1 + b >= n) {
		buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(buf, dir, a);
	buf[a] = '/';
	memcpy(buf + a + 1, name, b + 1);
	return 0;
}

void bundle_file(const struct bundle *b, const char *name, char *buf, size_t n)
{
	int rc = bundle_path_join(buf, n, b->tmp, name);
	assert(rc == 0);   /* bundle_begin bounds DIR's length */
	(void)rc;
}

void bundle_abort(struct bundle *b)
{
	if (b->tmp[0])
		bundle_rmdir(b->tmp);
	b->tmp[0] = '\0';
}

/* Copy file from into the bundle as name. 0 or -errno. */
static int copy_in(struct bundle *b, const char *from, const char *name)
{
	char to[1200], buf[65536];
	size_t n;
	int rc = 0;
	bundle_file(b, name, to, sizeof to);
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	if (!in || !out)
		rc = -errno;
	while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			rc = -EIO;
	if (rc == 0 && ferror(in))
		rc = -EIO;
	if (out && fclose(out) != 0 && rc == 0)
		rc = -EIO;
	if (in)
		fclose(in);
	return rc;
}

/* path's copy in the bundle: base, or base.zst for a zstd file; its name into field. */
static int copy_file_key(struct bundle *b, char *field, size_t size, const char *base, struct diag *d)
{
	char name[64];
	size_t len = strlen(field);
	if (!field[0])
		return 0;
	snprintf(name, sizeof name, "%s%s", base, len > 4 && !strcmp(field + len - 4, ".zst") ? ".zst" : "");
	int rc = copy_in(b, field, name);
	if (rc)
		return diag_set(d, "%s: cannot copy into the bundle: %s", field, strerror(-rc)), rc;
	snprintf(field, size, "%s", name);
	return 0;
}

/* Write a file of the bundle with fn(f, arg). 0 or -errno. */
static int write_file(struct bundle *b, const char *name, void (*fn)(FILE *, const void *), const void *arg,
		      struct diag *d)
{
	char p[1200];
	bundle_file(b, name, p, sizeof p);
	FILE *f = fopen(p, "w");
	if (!f)
		return diag_set(d, "%s: %s", p, strerror(errno)), -errno;
	fn(f, arg);
	int rc = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc)
		diag_set(d, "%s: cannot write: %s", p, strerror(-rc));
	return rc;
}

static void scenario_text(FILE *f, const void *arg)
{
	const struct runcfg *c = arg;
	fprintf(f, "# migbed reproducer bundle: the run's effective configuration, every key, defaults resolved\n");
	runcfg_write_scenario(f, c);
}

int bundle_write_config(struct bundle *b, const struct runcfg *c, struct runcfg *w, struct diag *d)
{
	*w = *c;
	snprintf(w->scenario, sizeof w->scenario, "scenario.scn");
	int rc = copy_file_key(b, w->trace, sizeof w->trace, "trace", d);
	if (rc == 0)
		rc = copy_file_key(b, w->dst_layout, sizeof w->dst_layout, "dst-layout", d);
	if (rc == 0)   /* the content a QEMU source was given: the bundle holds all it needs */
		rc = copy_file_key(b, w->qemu_expect_file, sizeof w->qemu_expect_file, "qemu-expect", d);
	if (rc == 0)
		rc = write_file(b, "scenario.scn", scenario_text, w, d);
	return rc;
}

void bundle_meta_of(struct bundle_meta *m, unsigned cmd, const char *address, const struct runcfg *c)
{
	memset(m, 0, sizeof *m);
	m->cmd = cmd;
	snprintf(m->address, sizeof m->address, "%s", address ? address : "");
	m->watchdog_ms = BUNDLE_WATCHDOG_MS;
	snprintf(m->build_id, sizeof m->build_id, "%s", run_build_id());
	snprintf(m->compiler, sizeof m->compiler, "%s", bundle_compiler());
	snprintf(m->backend, sizeof m->backend, "%s", c->backend == HCA_BACKEND_VERBS ? "verbs" : "model");
}

static void build_text(FILE *f, const void *arg)
{
	const struct bundle_meta *m = arg;
	fprintf(f, "build-id = %s\ncompiler = %s\nbackend = %s\n", m->build_id, m->compiler, m->backend);
}

static void outcome_text(FILE *f, const void *arg)
{
	const struct bundle_meta *m = arg;
	char oc[32];
	bundle_outcome_text(&m->oc, oc, sizeof oc);
	fprintf(f, "command = %s\n", cmd_word(m->cmd));
	if (m->address[0])
		fprintf(f, "address = %s\n", m->address);
	fprintf(f, "outcome = %s\nwatchdog-ms = %llu\n", oc, (unsigned long long)m->watchdog_ms);
}

struct readme {
	const struct bundle *b;
	const struct bundle_meta *m;
	const struct runcfg *c;
	const char *expected, *got;
};

static void readme_text(FILE *f, const void *arg)
{
	const struct readme *r = arg;
	const struct runcfg *c = r->c;
	char word[2200];
	bundle_shell_word(r->b->dir, word, sizeof word);
	fprintf(f, "migbed reproducer bundle: a `migbed %s` that missed its expectation (%s backend, build %s).\n"
		   "expected: %s\ngot: %s\n\nreplay: migbed replay %s\n"
		   "  (exit 0: reproduced; on the model the event log and result.json byte for byte, on verbs the\n"
		   "  event sequence per side and the cause; 1: not, saying what differed)\n",
		cmd_word(r->m->cmd), r->m->backend, r->m->build_id, r->expected, r->got, word);
	if (r->m->cmd != OPTS_RUN)
		fprintf(f, "  one side of a two-process run: the replay plays the %s at %s again; start its peer\n"
			   "  yourself (the other side's bundle, or migbed %s with the same scenario)\n",
			cmd_word(r->m->cmd), r->m->address, r->m->cmd == OPTS_SOURCE ? "dest --listen" : "source --connect");
	fprintf(f, "by hand: cd %s && migbed %s scenario.scn --events ev.log --json r.json\n", word, cmd_word(r->m->cmd));
	if (c->trace[0]) {
		fprintf(f, "trace: %s, the run's trace, copied\n", c->trace);
	} else {
		fprintf(f, "trace: generated from scenario.scn's generator keys; the same file, byte for byte: migbed trace gen");
		runcfg_write_gen_args(f, c);
		fprintf(f, " -o trace\n");
	}
	fprintf(f, "files: scenario.scn (every key; the fault rules are its fault lines, the seed its seed line),\n"
		   "  events.log, result.json (none when the process crashed or hung), build.txt, outcome.txt\n");
}

const char *bundle_shell_word(const char *path, char *buf, size_t n)
{
	static const char plain[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+=:,@%-";
	bool quote = !path[0] || path[strspn(path, plain)] != '\0';
	size_t o = 0;

	if (path[0] == '-')
		o += (size_t)snprintf(buf + o, n - o, "./");
	if (quote)
		buf[o++] = '\'';
	for (const char *p = path; *p && o + 6 < n; p++) {
		if (*p == '\'') {
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			buf[o++] = *p;
		}
	}
	if (quote)
		buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

/* DIR.tar.zst of the committed DIR, via a temporary renamed into place; deterministic
 * (sorted, mtime 0, owner 0). true when written. */
static bool write_tar(const struct bundle *b)
{
	char tar[1100], tmp[1120], parent[1024];
	snprintf(tar, sizeof tar, "%s.tar.zst", b->dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", tar);
	snprintf(parent, sizeof parent, "%s", b->dir);
	char *slash = strrchr(parent, '/');
	const char *base = slash ? slash + 1 : b->dir;
	if (slash == parent)
		parent[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(parent, sizeof parent, ".");
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1), dup2(null, 2);
		/* "--": a bundle named -x is a member, not an option */
		execlp("tar", "tar", "--zstd", "--sort=name", "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner",
		       "-cf", tmp, "-C", parent, "--", base, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	bool ok = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (ok && rename(tmp, tar) == 0)
		return true;
	unlink(tmp);
	return false;
}

/* The full temporary onto DIR: refused if DIR appeared meanwhile (renameat2 NOREPLACE), or
 * (replace) the old DIR moved aside and removed. */
static int put_in_place(struct bundle *b, struct diag *d)
{
	char old[1120];
	bool moved = false;
	if (b->replace) {
		snprintf(old, sizeof old, "%s.old-XXXXXX", b->dir);
		if (!mkdtemp(old))
			return diag_set(d, "%s: %s", b->dir, strerror(errno)), -errno;
		if (rename(b->dir, old) == 0) {
			moved = true;
		} else if (errno != ENOENT) {
			int e = errno;
			rmdir(old);
			return diag_set(d, "%s: cannot replace: %s", b->dir, strerror(e)), -e;
		}
	}
	int rc = renameat2(AT_FDCWD, b->tmp, AT_FDCWD, b->dir, RENAME_NOREPLACE) == 0 ? 0 : -errno;
	if (rc == -EINVAL || rc == -ENOSYS)   /* a filesystem without RENAME_NOREPLACE (9p: the soft-RoCE
					       * VM's shared folder): rename, after a check that DIR is not there */
		rc = lstat(b->dir, &(struct stat){ 0 }) == 0 ? -EEXIST : rename(b->tmp, b->dir) == 0 ? 0 : -errno;
	if (rc && moved && rename(old, b->dir) == 0)   /* the new one failed: the old one stays */
		moved = false;
	if (moved)
		bundle_rmdir(old);
	else if (b->replace)
		rmdir(old);
	if (rc)
		return diag_set(d, "%s: cannot write the bundle: %s", b->dir, strerror(-rc)), rc;
	b->tmp[0] = '\0';
	return 0;
}

int bundle_commit(struct bundle *b, const struct bundle_meta *m, const struct runcfg *c, const char *expected,
		  const char *got, bool *tar_ok, struct diag *d)
{
	struct readme r = { .b = b, .m = m, .c = c, .expected = expected ? expected : c->expect_text, .got = got };
	int rc = write_file(b, "build.txt", build_text, m, d);
	if (rc == 0)
		rc = write_file(b, "outcome.txt", outcome_text, m, d);
	if (rc == 0)
		rc = write_file(b, "README", readme_text, &r, d);
	if (rc == 0)
		rc = put_in_place(b, d);
	if (rc) {
		bundle_abort(b);
		return rc;
	}
	*tar_ok = write_tar(b);
	if (!*tar_ok && b->replace) {   /* an older DIR.tar.zst would not be this DIR */
		char tar[1100];
		snprintf(tar, sizeof tar, "%s.tar.zst", b->dir);
		unlink(tar);
	}
	return 0;
}

/* ---- reading one back ------------------------------------------------------------------------ */

/* `key = value` lines of dir/name into fn. 0 or -errno. */
static int read_kv(const char *dir, const char *name, void (*fn)(void *, const char *, const char *), void *arg)
{
	char p[1200], line[1024];
	if (bundle_path_join(p, sizeof p, dir, name))
		return -ENAMETOOLONG;
	FILE *f = fopen(p, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *eq = strstr(line, " = ");
		if (!eq)
			continue;
		*eq = '\0';
		fn(arg, line, eq + 3);
	}
	fclose(f);
	return 0;
}

static void meta_kv(void *arg, const char *k, const char *v)
{
	struct bundle_meta *m = arg;
	char word[16];
	int code = 0;
	if (!strcmp(k, "build-id"))
		snprintf(m->build_id, sizeof m->build_id, "%s", v);
	else if (!strcmp(k, "compiler"))
		snprintf(m->compiler, sizeof m->compiler, "%s", v);
	else if (!strcmp(k, "backend"))
		snprintf(m->backend, sizeof m->backend, "%s", v);
	else if (!strcmp(k, "command"))
		m->cmd = !strcmp(v, "source") ? OPTS_SOURCE : !strcmp(v, "dest") ? OPTS_DEST : !strcmp(v, "run") ? OPTS_RUN : 0;
	else if (!strcmp(k, "address"))
		snprintf(m->address, sizeof m->address, "%s", v);
	else if (!strcmp(k, "watchdog-ms")) {   /* decimal, 1 ms .. a day; anything else: 0 (refused) */
		char *end = NULL;
		errno = 0;
		unsigned long long ms = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
		m->watchdog_ms = !errno && end && !*end && ms >= 1 && ms <= BUNDLE_WATCHDOG_MS_MAX ? ms : 0;
	}
	else if (!strcmp(k, "outcome") && !strcmp(v, "hang"))
		m->oc = (struct bundle_outcome){ .end = BUNDLE_HANG };
	else if (!strcmp(k, "outcome") && sscanf(v, "%15s %d", word, &code) == 2)
		m->oc = (struct bundle_outcome){ .end = !strcmp(word, "signal") ? BUNDLE_SIGNAL : BUNDLE_EXIT, .code = code };
}

/* The bundle's scenario.scn (path) must read as a scenario: a tampered or damaged one is no
 * bundle, named by FILE:LINE here, not a replay that "did not reproduce" (the child's exit 2,
 * its message unseen). */
static int scenario_loads(const char *dir, const char *path, struct diag *d)
{
	struct runcfg *c = malloc(sizeof *c);
	struct diag sd = { 0 };
	if (!c)
		return diag_set(d, "%s: out of memory", dir), -ENOMEM;
	runcfg_defaults(c);
	int rc = runcfg_load_scenario(c, path, &sd);
	free(c);
	if (rc)
		return diag_set(d, "%s: not a bundle: %s", dir, sd.msg), -EINVAL;
	return 0;
}

int bundle_read_meta(const char *dir, struct bundle_meta *m, struct diag *d)
{
	struct stat st;
	char p[1200];
	memset(m, 0, sizeof *m);
	if (stat(dir, &st) != 0)
		return diag_set(d, "%s: not a bundle: %s", dir, strerror(errno)), -EINVAL;
	if (!S_ISDIR(st.st_mode))
		return diag_set(d, "%s: not a bundle: not a directory", dir), -EINVAL;
	if (bundle_path_join(p, sizeof p, dir, "scenario.scn") || access(p, R_OK) != 0)
		return diag_set(d, "%s: not a bundle: no scenario.scn", dir), -EINVAL;
	if (read_kv(dir, "build.txt", meta_kv, m) || read_kv(dir, "outcome.txt", meta_kv, m))
		return diag_set(d, "%s: not a bundle: no build.txt or outcome.txt", dir), -EINVAL;
	if (!m->cmd || !m->build_id[0] || !m->backend[0] || m->watchdog_ms < 1)
		return diag_set(d, "%s: not a bundle: build.txt or outcome.txt incomplete", dir), -EINVAL;
	if (m->cmd != OPTS_RUN && !m->address[0])
		return diag_set(d, "%s: not a bundle: a %s bundle without its address", dir, cmd_word(m->cmd)), -EINVAL;
	return scenario_loads(dir, p, d);
}

/* ---- rerunning one ---------------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The child: in dir, the command with its outputs into out. Never returns. */
static void rerun_child(const char *dir, const char *out, const struct bundle_meta *m, int fd)
{
	char ev[1200], js[1200];
	char *argv[12];
	int argc = 0;
	if (bundle_path_join(ev, sizeof ev, out, "events.log") || bundle_path_join(js, sizeof js, out, "result.json"))
		_exit(CLI_EXIT_USAGE);
	dup2(fd, 1);
	dup2(fd, 2);
	setenv("TMPDIR", out, 1);   /* a generated trace a killed run leaves goes with the scratch folder */
	if (chdir(dir) != 0)
		_exit(CLI_EXIT_USAGE);
	argv[argc++] = (char *)cmd_word(m->cmd);
	argv[argc++] = "scenario.scn";
	argv[argc++] = "--quiet";
	argv[argc++] = "--events";
	argv[argc++] = ev;
	argv[argc++] = "--json";
	argv[argc++] = js;
	if (m->cmd != OPTS_RUN) {
		argv[argc++] = m->cmd == OPTS_SOURCE ? "--connect" : "--listen";
		argv[argc++] = (char *)m->address;
	}
	argv[argc] = NULL;
	int code = m->cmd == OPTS_SOURCE ? cmd_source(argc, argv) : m->cmd == OPTS_DEST ? cmd_dest(argc, argv)
											  : cmd_run(argc, argv);
	fflush(NULL);
	_exit(code);
}

int bundle_rerun(const char *dir, const char *out, const struct bundle_meta *m, struct bundle_outcome *oc,
		 struct diag *d)
{
	char log[1200];
	if (bundle_path_join(log, sizeof log, out, "output.txt"))
		return diag_set(d, "%s: too long", out), -ENAMETOOLONG;
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return diag_set(d, "%s: %s", log, strerror(errno)), -EIO;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		rerun_child(dir, out, m, fd);
	close(fd);
	if (pid < 0)
		return diag_set(d, "fork: %s", strerror(errno)), -EAGAIN;
	uint64_t end = now_ms() + m->watchdog_ms;
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now_ms() < end)
		nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);   /* bounded by the watchdog */
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		*oc = (struct bundle_outcome){ .end = BUNDLE_HANG };
		return 0;
	}
	if (w < 0)
		return diag_set(d, "waitpid: %s", strerror(errno)), -ECHILD;
	*oc = WIFSIGNALED(st) ? (struct bundle_outcome){ .end = BUNDLE_SIGNAL, .code = WTERMSIG(st) }
			      : (struct bundle_outcome){ .end = BUNDLE_EXIT, .code = WEXITSTATUS(st) };
	return 0;
}

/* ---- run, source, dest --bundle -------------------------------------------------------------- */

int bundle_run_begin(struct bundle_run *br, struct runcfg *c, struct diag *d)
{
	memset(br, 0, sizeof *br);
	if (!c->bundle_path[0])
		return 0;
	if (c->events_path[0] && out_file_open(&br->events, c->events_path, d))
		return -EINVAL;
	if (bundle_begin(&br->b, c->bundle_path, false, d)) {
		out_file_abort(&br->events);
		return -EINVAL;
	}
	bundle_file(&br->b, "events.log", c->events_path, sizeof c->events_path);
	br->on = true;
	return 0;
}

void bundle_run_abort(struct bundle_run *br)
{
	if (!br->on)
		return;
	out_file_abort(&br->events);
	bundle_abort(&br->b);
	br->on = false;
}

/* The user's --events: a copy of the bundle's event log. 0 or -errno. */
static int copy_events(struct bundle_run *br, const char *from)
{
	char buf[65536];
	size_t n;
	int rc = 0;
	if (!br->events.f)
		return 0;
	FILE *in = fopen(from, "rb");
	if (!in)
		rc = -errno;
	while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, br->events.f) != n)
			rc = -EIO;
	if (in)
		fclose(in);
	if (rc == 0)
		return out_file_commit(&br->events, NULL);
	out_file_abort(&br->events);
	return rc;
}

struct json_arg {
	const struct runcfg *c;
	const struct run_result *res;
};

static void json_text(FILE *f, const void *arg)
{
	const struct json_arg *j = arg;
	run_report_json(j->c, &j->res->m, &j->res->out, j->c->backend == HCA_BACKEND_VERBS ? "verbs" : "model", f);
}

int bundle_write_result(struct bundle *b, const struct runcfg *w, const struct run_result *res, struct diag *d)
{
	struct json_arg j = { w, res };
	return write_file(b, "result.json", json_text, &j, d);
}

static void text_text(FILE *f, const void *arg)
{
	fputs(arg, f);
}

int bundle_write_text(struct bundle *b, const char *name, const char *text, struct diag *d)
{
	return write_file(b, name, text_text, text, d);
}

/* The verdict failed: the bundle. 0 or -errno with d set. */
static int write_run_bundle(struct bundle_run *br, const struct runcfg *c, const struct run_result *res,
			    unsigned cmd, const char *address, struct diag *d)
{
	struct runcfg *w = malloc(sizeof *w);
	struct bundle_meta m;
	char got[512];
	bool tar_ok = false;
	if (!w)
		return diag_set(d, "out of memory"), -ENOMEM;
	int rc = bundle_write_config(&br->b, c, w, d);
	struct json_arg j = { w, res };
	if (rc == 0)
		rc = write_file(&br->b, "result.json", json_text, &j, d);
	bundle_meta_of(&m, cmd, address, c);
	m.oc = (struct bundle_outcome){ .end = BUNDLE_EXIT, .code = CLI_EXIT_FAIL };
	snprintf(got, sizeof got, "verdict=fail status=%s cause=%s side=%s", res->out.completed ? "completed" : "failed",
		 cause_name(res->out.cause), run_side_name(res->out.side));
	if (rc == 0)
		rc = bundle_commit(&br->b, &m, w, NULL, got, &tar_ok, d);
	char word[2200];
	if (rc == 0)
		fprintf(stderr, "migbed: bundle: %s written%s (replay: migbed replay %s)\n", br->b.dir,
			tar_ok ? ", and .tar.zst" : "; no .tar.zst (tar --zstd failed: is zstd installed?)",
			bundle_shell_word(br->b.dir, word, sizeof word));
	free(w);
	return rc;
}

int bundle_run_end(struct bundle_run *br, const struct runcfg *c, const struct run_result *res, unsigned cmd,
		   const char *address)
{
	struct diag d = { 0 };
	if (!br->on)
		return 0;
	int rc = copy_events(br, c->events_path);
	if (rc)
		diag_set(&d, "%s: cannot write: %s", br->events.path, strerror(-rc));
	if (rc == 0 && !res->out.pass && !res->output_error)
		rc = write_run_bundle(br, c, res, cmd, address, &d);
	bundle_run_abort(br);
	if (rc)
		fprintf(stderr, "migbed: %s: %s\n", cmd_word(cmd), d.msg);
	return rc ? -1 : 0;
}
