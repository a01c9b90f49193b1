/* SPDX-License-Identifier: MIT */
/* cmd_explain - `migbed explain LOG...`: the migbed causes QEMU logs fit, best first, each with
 * the lines that matched, the side, the QEMU versions, the hint and a scenario reproducing it
 * (docs/explain.md). The matching is run/explain.[ch]; this file reads argv, finds the
 * scenarios and prints. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run_report.h"
#include "run/explain.h"
#include "run/hw.h"
#include "run/out_file.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "transport/profile.h"
#include "vocab/cause.h"
#include "vocab/vocab.h"

extern char **environ;

#define SCN_MAX 512
#define SHOW_LINES 6

static void usage(FILE *f)
{
	fprintf(f,
		"usage: migbed explain [--src FILE] [--dst FILE] [FILE...] [--json FILE]\n"
		"                      [--scenario-out DIR [--run]]\n\n"
		"Name the migbed causes that QEMU logs fit, best first: a QEMU's stderr, a libvirt\n"
		"/var/log/libvirt/qemu/NAME.log, or query-migrate / QMP JSON (its error-desc). Each cause\n"
		"comes with the lines that matched (FILE:LINE), the side, the QEMU versions whose messages\n"
		"they are, the hint, and a scenario of bats/scenarios that reproduces it.\n\n"
		"  --src FILE, --dst FILE  a log of that side\n"
		"  FILE...                 a log whose side is inferred from its lines; two that tell\n"
		"                          nothing are the source's, then the destination's\n"
		"  --json FILE             write {\"causes\":[{\"cause\",\"side\",\"score\",\"lines\",\"scenario\"}...]}\n"
		"                          (best first; - for standard output)\n"
		"  --scenario-out DIR      write each cause's scenario to DIR/CAUSE.scn (with src-impl or\n"
		"                          dst-impl = qemu-7.2 when the log is QEMU 7.2's)\n"
		"  --run                   run the written scenarios; say whether each gives the cause\n"
		"                          and the log's QEMU lines\n"
		"scenarios: $MIGBED_SCENARIOS, else ../bats/scenarios beside the migbed binary, else the\n"
		"installed ones (DATADIR/scenarios; DATADIR: $MIGBED_DATADIR, else make install's).\n\n"
		"exit status: 0 some cause fits, 1 none does (the unplaced lines are listed),\n"
		"             2 bad usage or an unreadable log (nothing written)\n");
}

struct logarg {
	const char *path;
	int side;
};

struct opts {
	struct logarg logs[EXPLAIN_LOGS_MAX];
	int nlogs;
	const char *json;
	const char *scn_out;
	bool run;
};

struct scn {
	char path[PATH_MAX];
	char expect[256];          /* "failed:A|B" */
	char description[256];
	long bytes;
	int rank;                  /* by name: model- config- neg- fault- memlock- profile- other */
};

struct catalogue {
	struct scn s[SCN_MAX];
	int n;
	char dir[PATH_MAX];
};

static int add_log(struct opts *o, const char *path, int side)
{
	if (o->nlogs == EXPLAIN_LOGS_MAX)
		return cli_usage_error("explain: at most %d logs", EXPLAIN_LOGS_MAX);
	o->logs[o->nlogs++] = (struct logarg){ path, side };
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o, bool *help)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has_val = i + 1 < argc;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = true;
			return 0;
		}
		if (!strcmp(a, "--run")) {
			o->run = true;
			continue;
		}
		if (!strcmp(a, "--src") || !strcmp(a, "--dst") || !strcmp(a, "--json") || !strcmp(a, "--scenario-out")) {
			if (!has_val)
				return cli_usage_error("explain: %s needs a value", a);
			const char *v = argv[++i];
			int rc = 0;
			if (!strcmp(a, "--json"))
				o->json = v;
			else if (!strcmp(a, "--scenario-out"))
				o->scn_out = v;
			else
				rc = add_log(o, v, vocab_side_parse(a + 2));
			if (rc)
				return rc;
			continue;
		}
		if (a[0] == '-' && a[1])
			return cli_usage_error("explain: unknown option '%s' (see migbed explain --help)", a);
		if (add_log(o, a, EXPLAIN_SIDE_ANY))
			return CLI_EXIT_USAGE;
	}
	if (!o->nlogs)
		return cli_usage_error("explain: no log given (see migbed explain --help)");
	if (o->run && !o->scn_out)
		return cli_usage_error("explain: --run runs the scenarios --scenario-out DIR writes: give DIR");
	return 0;
}

/* --- the scenarios ----------------------------------------------------------------------------- */

static void scenarios_dir(char *out, size_t n)
{
	const char *env = getenv("MIGBED_SCENARIOS");
	char exe[PATH_MAX];
	if (env && env[0]) {
		snprintf(out, n, "%s", env);
		return;
	}
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k <= 0) {
		snprintf(out, n, "bats/scenarios");
		return;
	}
	exe[k] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(exe, '/');                 /* build/migbed -> the folder above build */
	if (slash)
		*slash = '\0';
	char dir[PATH_MAX], real[PATH_MAX], cwd[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof dir, "%.*s/bats/scenarios", (int)(sizeof dir - 32), exe) >= sizeof dir ||
	    !realpath(dir, real)) {   /* not in the repository: the installed ones */
		snprintf(out, n, "%s/scenarios", hw_datadir());
		return;
	}
	size_t cl = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;   /* under the working folder: relative */
	bool under = cl && !strncmp(real, cwd, cl) && real[cl] == '/';
	snprintf(out, n, "%s", under ? real + cl + 1 : real);
}

static int name_rank(const char *base)
{
	static const char *const prefixes[] = { "model-", "config-", "neg-", "fault-", "memlock-", "profile-" };
	for (int i = 0; i < 6; i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return i;
	return 6;
}

static void load_scn(struct catalogue *cat, const char *base)
{
	struct scn *s = &cat->s[cat->n];
	int w = snprintf(s->path, sizeof s->path, "%s/%s", cat->dir, base);
	if (w < 0 || (size_t)w >= sizeof s->path)
		return;
	FILE *f = fopen(s->path, "r");
	if (!f)
		return;
	char line[512];
	s->expect[0] = s->description[0] = '\0';
	s->bytes = 0;
	while (fgets(line, sizeof line, f)) {
		s->bytes += (long)strlen(line);
		if (!strncmp(line, "expect = ", 9)) {
			snprintf(s->expect, sizeof s->expect, "%.*s", (int)sizeof s->expect - 1, line + 9);
			s->expect[strcspn(s->expect, "\r\n")] = '\0';
		} else if (!strncmp(line, "description = ", 14)) {
			snprintf(s->description, sizeof s->description, "%.*s", (int)sizeof s->description - 1, line + 14);
			s->description[strcspn(s->description, "\r\n")] = '\0';
		}
	}
	fclose(f);
	s->rank = name_rank(base);
	if (!strncmp(s->expect, "failed:", 7))
		cat->n++;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct scn *)a)->path, ((const struct scn *)b)->path);
}

static void load_catalogue(struct catalogue *cat)
{
	scenarios_dir(cat->dir, sizeof cat->dir);
	cat->n = 0;
	DIR *d = opendir(cat->dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && cat->n < SCN_MAX;) {
		size_t l = strlen(e->d_name);
		if (l > 4 && !strcmp(e->d_name + l - 4, ".scn"))
			load_scn(cat, e->d_name);
	}
	closedir(d);
	qsort(cat->s, (size_t)cat->n, sizeof cat->s[0], by_name);   /* readdir's order is not stable */
}

/* Does "failed:A|B" name cause? 2 alone, 1 among others, 0 not. */
static int expect_names(const char *expect, const char *cause)
{
	const char *list = expect + 7;
	size_t cl = strlen(cause);
	int n = 0, hit = 0;
	for (const char *s = list; *s;) {
		size_t l = strcspn(s, "|");
		n++;
		if (l == cl && !strncmp(s, cause, cl))
			hit = 1;
		s += l + (s[l] ? 1 : 0);
	}
	return hit ? (n == 1 ? 2 : 1) : 0;
}

/* The simplest scenario expecting cause: one that names it alone, then one whose description
 * has the situation an observed row names ("wrong rkey"), one whose name has the log's side
 * ("-dst-"), then by kind (a plain
 * model run before a fault, a profile's last: only QEMU_HANG and COMPLETION_DROPPED need
 * one), then the smallest file. NULL if none. */
/* Does one of the situation notes ("wrong rkey; EOF lost") appear in the description? */
static bool fits_situation(const char *description, const char *notes)
{
	for (const char *n = notes; *n;) {
		size_t l = strcspn(n, ";");
		char note[96];
		snprintf(note, sizeof note, "%.*s", (int)l, n);
		if (l && strstr(description, note))
			return true;
		n += l;
		n += strspn(n, "; ");
	}
	return false;
}

static const struct scn *scenario_for(const struct catalogue *cat, int cause, int side, const char *notes)
{
	const struct scn *best = NULL;
	int best_hit = 0;
	char side_word[16];
	snprintf(side_word, sizeof side_word, "-%s-", side >= 0 ? vocab_side_token(side) : "?");
	for (int i = 0; i < cat->n; i++) {
		const struct scn *s = &cat->s[i];
		int hit = expect_names(s->expect, cause_name(cause));
		if (!hit)
			continue;
		hit = 4 * hit + 2 * fits_situation(s->description, notes) +
		      (strstr(strrchr(s->path, '/'), side_word) != NULL);   /* the log's side in its name */
		if (!best || hit > best_hit || (hit == best_hit && (s->rank < best->rank ||
		    (s->rank == best->rank && s->bytes < best->bytes)))) {
			best = s;
			best_hit = hit;
		}
	}
	return best;
}

/* --- versions ------------------------------------------------------------------------------------ */

/* The QEMU versions whose messages the cause's lines are: observed and read rows' versions
 * with their profile (the first profile of a version: qemu-11.1 prints 8.2's read rows too),
 * the shared-CQ versions for COMPLETION_DROPPED, <= 8.1 for ibv_poll_cq lines (which no
 * version with read rows, 8.2 on, prints: such a log is not theirs). */
static void versions_text(const struct explain_cause *c, char *buf, size_t n)
{
	size_t w = 0;
	buf[0] = '\0';
	for (int i = 0; i < PROTO_IMPL_COUNT && w < n; i++) {
		const struct proto_profile *p = proto_profile((enum proto_impl)i);
		bool tagged = p->log_tag && c->versions[0] && strstr(c->versions, p->log_tag);
		for (int j = 0; tagged && j < i; j++) {
			const struct proto_profile *q = proto_profile((enum proto_impl)j);
			tagged = !q->log_tag || strcmp(q->log_tag, p->log_tag) != 0;
		}
		if (tagged && p->log_kind == PROTO_LOG_SOURCE && c->wc_status_lines)
			tagged = false;
		bool shared = c->cause == CAUSE_COMPLETION_DROPPED && p->shared_cq;
		if (!tagged && !shared)
			continue;
		int k = snprintf(buf + w, n - w, "%s%s (profile %s, %s)", w ? "; " : "",
				 tagged ? p->log_tag : "shared CQ", p->name, p->versions);
		w += k > 0 ? (size_t)k : 0;
	}
	if (c->wc_status_lines && w < n) {
		int k = snprintf(buf + w, n - w, "%s<= 8.1 (ibv_poll_cq status lines; 8.2 prints none)", w ? "; " : "");
		w += k > 0 ? (size_t)k : 0;
	}
	if (!w)
		snprintf(buf, n, "any (rdma.c's formats; no version-specific line)");
}

/* The QEMU 7.2 side, if the cause's lines include an observed row of one log side: the side
 * whose scenario key (src-impl, dst-impl) makes a reproduction print those lines. -1 none. */
static int observed_72_side(const struct explain *x, size_t i)
{
	const struct explain_cause *c = explain_cause_at(x, i);
	for (size_t j = 0; j < c->n_lines && j < EXPLAIN_KEEP_LINES; j++) {
		const struct explain_line *l = explain_cause_line(x, i, j);
		if (l->observed && !strncmp(l->row, "[7.2 observed ", 14))
			return explain_log_side(x, (size_t)l->log, NULL);
	}
	return -1;
}

/* --- writing and running scenarios -------------------------------------------------------------- */

struct repro {
	char path[PATH_MAX];
	int impl_side;             /* the side given qemu-7.2; -1 none */
	int log72_side;            /* the side whose log has QEMU 7.2's observed lines; -1 none */
	char result[224];          /* --run: what the reproduction gave (a 63-byte cause name and the longest note fit) */
	bool same;
};

/* The value of a scenario's `key = value` line in text, or NULL (into buf, n bytes). */
static const char *key_value(const char *text, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);
	for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
		s += strspn(s, " \t");
		if (strncmp(s, key, kl) || (s[kl] != ' ' && s[kl] != '\t' && s[kl] != '='))
			continue;
		const char *v = s + kl + strspn(s + kl, " \t");
		if (*v != '=')
			continue;
		v += 1 + strspn(v + 1, " \t");
		/* the rest of the line, as the scenario reader takes it: a path may hold spaces or '#' */
		size_t l = strcspn(v, "\r\n");
		while (l > 0 && (v[l - 1] == ' ' || v[l - 1] == '\t'))
			l--;
		snprintf(buf, n, "%.*s", (int)l, v);
		return buf;
	}
	return NULL;
}

/* Can this side of the scenario play qemu-7.2? Not if it plays a profile already or speaks
 * --protocol negotiated, nor with a chunk size a pre-11.1 QEMU does not have (its chunks are
 * 1 MiB). */
static bool can_play_72(const char *text, int side)
{
	char v[64];
	if (key_value(text, "impl", v, sizeof v) || key_value(text, "src-impl", v, sizeof v) ||
	    key_value(text, "dst-impl", v, sizeof v))
		return false;
	/* QEMU speaks no --protocol negotiated (runcfg refuses it with a QEMU profile) */
	const char *proto = key_value(text, side == VOCAB_SIDE_DST ? "dst-protocol" : "src-protocol", v, sizeof v);
	if ((proto && strcmp(proto, "qemu")) ||
	    ((proto = key_value(text, "protocol", v, sizeof v)) && strcmp(proto, "qemu")))
		return false;
	const char *chunk = side == VOCAB_SIDE_DST ? key_value(text, "dst-chunk-size", v, sizeof v) : NULL;
	if (!chunk)
		chunk = key_value(text, "chunk-size", v, sizeof v);
	return !chunk || !strcmp(chunk, "1M");
}

/* The scenario's lines, its file keys (trace, dst-layout: relative to the scenario's folder)
 * made absolute, so the copy runs from anywhere. */
static void write_lines(FILE *f, const char *text, const char *from)
{
	static const char *const file_keys[] = { "trace", "dst-layout" };
	char dir[PATH_MAX], rel[PATH_MAX], abs_path[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", from);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	for (const char *s = text; *s;) {
		size_t l = strcspn(s, "\n");
		char v[PATH_MAX];
		const char *key = NULL;
		for (size_t k = 0; k < 2 && !key; k++) {
			char line[PATH_MAX];
			snprintf(line, sizeof line, "%.*s", (int)l, s);
			if (key_value(line, file_keys[k], v, sizeof v) && v[0] != '/')
				key = file_keys[k];
		}
		if (key && slash && (size_t)snprintf(rel, sizeof rel, "%s/%s", dir, v) < sizeof rel && realpath(rel, abs_path))
			fprintf(f, "%s = %s\n", key, abs_path);
		else
			fprintf(f, "%.*s\n", (int)l, s);
		s += l + (s[l] ? 1 : 0);
	}
}

/* A scenario file whole, NUL-terminated (bounded: 1 MiB), or NULL with errno set. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!buf)
		errno = ENOMEM;
	else
		buf[n] = '\0';
	return buf;
}

static int copy_scenario(const struct scn *s, const char *out_path, int cause, int side, const char *logs,
			 struct repro *r, struct diag *d)
{
	char *text = slurp(s->path);   /* whole (a scenario is small; slurp's bound is 1 MiB) */
	if (!text)
		return diag_set(d, "%s: %s", s->path, strerror(errno ? errno : ENOMEM));
	if (strlen(text) >= (1u << 20) - 1) {
		free(text);
		return diag_set(d, "%s: over 1 MiB: not a scenario", s->path);
	}
	r->log72_side = side;
	r->impl_side = side >= 0 && can_play_72(text, side) ? side : -1;
	struct out_file of = { 0 };
	if (out_file_open(&of, out_path, d)) {
		free(text);
		return -EINVAL;
	}
	fprintf(of.f, "# migbed explain: reproduces %s, the cause that fits %s\n# copied from %s\n",
		cause_name(cause), logs, s->path);
	write_lines(of.f, text, s->path);
	if (r->impl_side >= 0)
		fprintf(of.f, "# the log is QEMU 7.2's: that side plays it and prints its observed lines\n%s-impl = qemu-7.2\n",
			vocab_side_token(r->impl_side));
	free(text);
	snprintf(r->path, sizeof r->path, "%s", out_path);
	return out_file_commit(&of, d);
}

/* The strings of result[SIDE]["qemu-log"], each checked against the log lines of that side: how
 * many there are, how many the log has. */
static void compare_qemu_log(const json_t *res, const char *side, const struct explain *x, int *n, int *found)
{
	const json_t *a = json_object_get(json_object_get(res, side), "qemu-log");
	size_t i;
	const json_t *v;
	*n = *found = 0;
	json_array_foreach(a, i, v) {
		const char *line = json_string_value(v);
		if (!line)
			continue;
		(*n)++;
		bool hit = false;
		for (size_t k = 0; k < explain_log_count(x) && !hit; k++) {
			if (explain_log_side(x, k, NULL) != vocab_side_lookup(side))
				continue;
			const char *t;
			for (size_t j = 0; !hit && (t = explain_log_line(x, k, j, NULL)); j++)
				hit = strstr(t, line) != NULL;
		}
		*found += hit;
	}
}

static void run_repro(struct repro *r, int cause, const struct explain *x)
{
	char exe[PATH_MAX], json[PATH_MAX + 8];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k <= 0) {
		snprintf(r->result, sizeof r->result, "not run: cannot find the migbed binary");
		return;
	}
	exe[k] = '\0';
	snprintf(json, sizeof json, "%.*s.json", (int)(strlen(r->path) - 4), r->path);
	char *argv[] = { exe, "run", r->path, "--quiet", "--json", json, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 01, 0);
	pid_t pid;
	int st = 0;
	int rc = posix_spawn(&pid, exe, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) == CLI_EXIT_USAGE) {
		snprintf(r->result, sizeof r->result, "the run did not complete (status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return;
	}
	struct diag d = { 0 };
	json_t *j = json_in_file(json, &d);
	if (!j) {
		snprintf(r->result, sizeof r->result, "the run's result is not JSON: %.180s", d.msg);
		return;
	}
	char got[64] = "?";
	if (json_in_str(j, "cause"))
		snprintf(got, sizeof got, "%s", json_in_str(j, "cause"));
	int n = 0, found = 0;
	if (r->impl_side >= 0)
		compare_qemu_log(j, vocab_side_token(r->impl_side), x, &n, &found);
	json_decref(j);
	bool same_cause = !strcmp(got, cause_name(cause));
	r->same = same_cause && (r->impl_side < 0 || (n > 0 && found == n));
	if (r->impl_side < 0)
		snprintf(r->result, sizeof r->result, "cause %s%s; no QEMU lines to compare (%s)", got,
			 same_cause ? " (the same)" : " (a different one)",
			 r->log72_side < 0 ? "the log has no observed 7.2 line" : "that side of the scenario cannot play qemu-7.2");
	else
		snprintf(r->result, sizeof r->result, "cause %s%s; qemu-7.2 %s lines: %d of %d in the log",
			 got, same_cause ? " (the same)" : " (a different one)", vocab_side_token(r->impl_side), found, n);
}

/* --- printing ----------------------------------------------------------------------------------- */

static const char *side_word(int side)
{
	return side >= 0 ? vocab_side_token(side) : "-";
}

static void print_line(FILE *f, const struct explain *x, const struct explain_line *l)
{
	fprintf(f, "     %s:%lu: %s\n", explain_log_name(x, (size_t)l->log), l->line_no, l->text);
	if (l->observed)
		fprintf(f, "       = %.*s]\n", (int)strcspn(l->row, "]"), l->row);
	else if (l->read && l->fields[0])
		fprintf(f, "       = %.*s] \"%s\" with %s\n", (int)strcspn(l->row, "]"), l->row,
			l->row + strcspn(l->row, "]") + 2, l->fields);
	else if (l->read)
		fprintf(f, "       = %.*s]\n", (int)strcspn(l->row, "]"), l->row);
	else if (l->fields[0])
		fprintf(f, "       = \"%s\" with %s\n", l->row, l->fields);
}

static void print_cause(FILE *f, const struct explain *x, size_t i, const struct scn *s, const struct repro *r)
{
	const struct explain_cause *c = explain_cause_at(x, i);
	char v[512];
	versions_text(c, v, sizeof v);
	fprintf(f, "%zu. %s (score %ld, %s side%s): %s\n", i + 1, cause_name(c->cause), c->score, side_word(c->side),
		cause_is_consequence(c->cause) ? ", a consequence of the other side's failure" : "",
		cause_message(c->cause));
	for (size_t j = 0; j < c->n_lines && j < SHOW_LINES; j++)
		print_line(f, x, explain_cause_line(x, i, j));
	if (c->n_lines > SHOW_LINES)
		fprintf(f, "     ... %zu more line(s)\n", c->n_lines - SHOW_LINES);
	if (c->notes[0])
		fprintf(f, "   situation: %s\n", c->notes);
	if (c->missing)
		fprintf(f, "   not in the logs: %zu line(s) QEMU 7.2 printed on these sides for this cause (migbed causes %s)\n",
			c->missing, cause_name(c->cause));
	fprintf(f, "   QEMU versions: %s\n   hint: %s\n", v, cause_hint(c->cause));
	if (s)
		fprintf(f, "   reproduce: migbed run %s\n", s->path);
	if (r && r->path[0])
		fprintf(f, "   written: %s%s%s\n", r->path, r->impl_side >= 0 ? " (with " : "",
			r->impl_side >= 0 ? (r->impl_side == VOCAB_SIDE_SRC ? "src-impl = qemu-7.2)" : "dst-impl = qemu-7.2)") : "");
	if (r && r->result[0])
		fprintf(f, "   reproduction: %s -> %s\n", r->result, r->same ? "reproduced" : "NOT reproduced");
}

static void print_unplaced(FILE *f, const struct explain *x)
{
	for (size_t k = 0; k < explain_log_count(x); k++) {
		unsigned long placed, lines = explain_log_lines(x, k, &placed), no;
		if (placed == lines)
			continue;
		fprintf(f, "%s: %lu line(s) fit no cause:\n", explain_log_name(x, k), lines - placed);
		const char *t;
		size_t j = 0;
		for (; (t = explain_log_unplaced(x, k, j, &no)); j++)
			fprintf(f, "  %s:%lu: %s\n", explain_log_name(x, k), no, t);
		if (lines - placed > j)
			fprintf(f, "  ... %lu more\n", lines - placed - (unsigned long)j);
	}
}

static json_t *json_cause(const struct explain *x, size_t i, const struct scn *s, const struct repro *r)
{
	const struct explain_cause *c = explain_cause_at(x, i);
	char v[512], t[EXPLAIN_LINE_MAX + 300];
	json_t *lines = json_array();
	for (size_t j = 0; j < c->n_lines && j < EXPLAIN_KEEP_LINES; j++) {
		const struct explain_line *l = explain_cause_line(x, i, j);
		snprintf(t, sizeof t, "%s:%lu: %s", explain_log_name(x, (size_t)l->log), l->line_no, l->text);
		json_add(&lines, json_of_str(t));
	}
	versions_text(c, v, sizeof v);
	json_t *o = json_pack("{s:o,s:o,s:I,s:o,s:s,s:o,s:o,s:o,s:o,s:o}", "cause", json_of_str(cause_name(c->cause)),
			      "side", json_of_str(side_word(c->side)), "score", (json_int_t)c->score, "missing",
			      json_of_u64(c->missing), "kind", cause_is_consequence(c->cause) ? "consequence" : "primary",
			      "lines", lines, "qemu", json_of_str(v), "situation", json_of_str(c->notes), "hint",
			      json_of_str(cause_hint(c->cause)), "scenario", s ? json_of_str(s->path) : json_null());
	if (r && r->result[0])
		json_set(&o, "reproduction", json_pack("{s:b,s:o}", "same", r->same, "result", json_of_str(r->result)));
	return o;
}

/* {"causes":[...],"logs":[{"file","side","side-inferred","lines","placed","unplaced":[...]}...]} */
static json_t *json_all(const struct explain *x, size_t n, const struct scn **s, const struct repro *r)
{
	json_t *causes = json_array(), *logs = json_array();
	for (size_t i = 0; i < n; i++)
		json_add(&causes, json_cause(x, i, s[i], r ? &r[i] : NULL));
	for (size_t k = 0; k < explain_log_count(x); k++) {
		unsigned long placed, lines = explain_log_lines(x, k, &placed), no;
		bool inferred;
		int side = explain_log_side(x, k, &inferred);
		json_t *unplaced = json_array();
		const char *t;
		for (size_t j = 0; (t = explain_log_unplaced(x, k, j, &no)); j++) {
			char cite[EXPLAIN_LINE_MAX + 300];
			snprintf(cite, sizeof cite, "%s:%lu: %s", explain_log_name(x, k), no, t);
			json_add(&unplaced, json_of_str(cite));
		}
		json_add(&logs, json_pack("{s:o,s:o,s:b,s:o,s:o,s:o}", "file", json_of_str(explain_log_name(x, k)), "side",
					  json_of_str(side_word(side)), "side-inferred", inferred, "lines", json_of_u64(lines),
					  "placed", json_of_u64(placed), "unplaced", unplaced));
	}
	return json_pack("{s:o,s:o}", "causes", causes, "logs", logs);
}

/* --- the command -------------------------------------------------------------------------------- */

static int read_logs(const struct opts *o, struct explain *x)
{
	struct diag d;
	diag_clear(&d);
	for (int i = 0; i < o->nlogs; i++) {
		FILE *f = fopen(o->logs[i].path, "r");
		if (!f)
			return cli_usage_error("explain: %s: %s", o->logs[i].path, strerror(errno));
		int rc = explain_add(x, o->logs[i].path, o->logs[i].side, f, &d);
		fclose(f);
		if (rc)
			return cli_usage_error("explain: %s", d.msg);
	}
	return 0;
}

static void add_word_list(char *list, size_t n, const char *word)
{
	size_t used = strlen(list);
	snprintf(list + used, n - used, "%s%s", used ? " and " : "", word);
}

static int write_scenarios(const struct opts *o, const struct explain *x, size_t n, const struct scn **s,
			   struct repro *r)
{
	struct diag d;
	char logs[512] = "", path[PATH_MAX];
	diag_clear(&d);
	if (mkdir(o->scn_out, 0777) && errno != EEXIST)
		return cli_usage_error("explain: --scenario-out %s: %s", o->scn_out, strerror(errno));
	for (size_t k = 0; k < explain_log_count(x); k++)
		add_word_list(logs, sizeof logs, explain_log_name(x, k));
	for (size_t i = 0; i < n; i++) {
		if (!s[i])
			continue;
		int cause = explain_cause_at(x, i)->cause;
		snprintf(path, sizeof path, "%s/%s.scn", o->scn_out, cause_name(cause));
		if (copy_scenario(s[i], path, cause, observed_72_side(x, i), logs, &r[i], &d)) {
			for (size_t k = 0; k < i; k++)   /* nothing half-written: the ones before go too */
				if (r[k].path[0]) {
					unlink(r[k].path);
					r[k].path[0] = '\0';
				}
			return cli_usage_error("explain: %s (nothing written)", d.msg);
		}
	}
	return 0;
}

int cmd_explain(int argc, char **argv)
{
	struct opts o = { .nlogs = 0 };
	bool help = false;
	int rc = parse_args(argc, argv, &o, &help);
	if (rc || help) {
		if (help)
			usage(stdout);
		return rc;
	}
	struct out_file json = { 0 };
	struct diag d;
	diag_clear(&d);
	struct explain *x = explain_new();
	struct catalogue *cat = calloc(1, sizeof *cat);
	const struct scn **scn = calloc(CAUSE_COUNT, sizeof *scn);
	struct repro *rep = calloc(CAUSE_COUNT, sizeof *rep);
	if (!x || !cat || !scn || !rep) {
		rc = cli_usage_error("explain: out of memory");
		goto out;
	}
	if (o.json && out_file_open(&json, o.json, &d)) {
		rc = cli_usage_error("explain: --json %s", d.msg);
		goto out;
	}
	rc = read_logs(&o, x);
	if (rc)
		goto out;
	size_t n = explain_rank(x);
	load_catalogue(cat);
	for (size_t i = 0; i < n; i++)
		scn[i] = scenario_for(cat, explain_cause_at(x, i)->cause, explain_cause_at(x, i)->side,
				      explain_cause_at(x, i)->notes);
	if (o.scn_out && n > 0) {   /* no cause fits: no folder left behind, empty */
		rc = write_scenarios(&o, x, n, scn, rep);
		if (rc)
			goto out;
	}
	for (size_t i = 0; o.run && i < n; i++)
		if (rep[i].path[0])
			run_repro(&rep[i], explain_cause_at(x, i)->cause, x);
	FILE *f = json.f == stdout ? stderr : stdout;
	for (size_t k = 0; k < explain_log_count(x); k++) {
		bool inferred;
		unsigned long placed, lines = explain_log_lines(x, k, &placed);
		int side = explain_log_side(x, k, &inferred);
		fprintf(f, "%s: %s log%s, %lu line(s), %lu placed\n", explain_log_name(x, k), side_word(side),
			inferred ? " (inferred from its lines)" : "", lines, placed);
	}
	for (size_t i = 0; i < n; i++)
		print_cause(f, x, i, scn[i], o.scn_out ? &rep[i] : NULL);
	if (!n) {
		fprintf(f, "migbed: explain: no cause fits these logs\n");
		print_unplaced(f, x);
	}
	if (json.f) {
		/* a write error is out_file_commit's to name */
		if (json_dump(json.f, json_all(x, n, scn, o.run || o.scn_out ? rep : NULL)) && !ferror(json.f)) {
			rc = cli_usage_error("explain: --json %s: out of memory building the JSON document", json.path);
			goto out;
		}
		if (out_file_commit(&json, &d)) {
			rc = cli_usage_error("explain: --json %s", d.msg);
			goto out;
		}
	}
	rc = n ? CLI_EXIT_OK : CLI_EXIT_FAIL;
out:
	out_file_abort(&json);
	explain_free(x);
	free(cat);
	free(scn);
	free(rep);
	return rc;
}
