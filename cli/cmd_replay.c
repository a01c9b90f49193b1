/* SPDX-License-Identifier: MIT */
/* cmd_replay - `migbed replay BUNDLE [--json]`: rerun a reproducer bundle (cli/bundle.h) and
 * say whether it reproduced. The bundle's scenario runs in a child process (cwd the bundle,
 * bounded by its watchdog) with its event log and JSON into a scratch folder; then
 *   model: the process's outcome, events.log and result.json must be byte-identical (else the
 *          first differing event-log line, with its number, and the result's fields that differ)
 *   verbs: the outcome, the event names per side (no times, no addresses; not the CM events
 *          and completions the hardware delivers when it does) up to the first failure (the
 *          teardown after it is asynchronous), and the status and cause must be the same
 * A bundle from another build (build.txt) replays with a warning. Exit 0 reproduced, 1 not,
 * 2 not a bundle or bad usage. A source or dest bundle plays that side again at its address:
 * its peer is started by hand. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bundle.h"
#include "cli/cli.h"
#include "cli/run_report.h"
#include "sim/json_in.h"
#include "vocab/vocab.h"

#define REPLAY_MAX_DIFFS 16

struct diffs {
	char line[REPLAY_MAX_DIFFS][512];
	int n;
};

static void add_diff(struct diffs *df, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_diff(struct diffs *df, const char *fmt, ...)
{
	va_list ap;
	if (df->n == REPLAY_MAX_DIFFS)
		return;
	va_start(ap, fmt);
	vsnprintf(df->line[df->n++], sizeof df->line[0], fmt, ap);
	va_end(ap);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed replay BUNDLE [--json]\n\n"
		   "Rerun a reproducer bundle (written by run/source/dest --bundle DIR and by torture\n"
		   "--bundles DIR) and say whether it reproduced: on the model the same process outcome and a\n"
		   "byte-identical event log and result.json; on verbs the same actions per side (event names\n"
		   "in order, without the CM events and completions the hardware delivers when it does),\n"
		   "up to the first failure (the teardown after it is asynchronous on real hardware), and\n"
		   "the same status and cause. A source or dest bundle plays that side again at its\n"
		   "address: start its peer yourself. A bundle of another build replays with a warning.\n\n"
		   "  --json      print the comparison as JSON on stdout\n"
		   "  -h, --help  this text\n\n"
		   "exit status: 0 reproduced, 1 not reproduced (what differed is printed), 2 not a bundle.\n");
}

/* A whole file into a malloc'd string (NULL: missing or unreadable). */
static char *slurp(const char *dir, const char *name)
{
	char p[1200];
	if (bundle_path_join(p, sizeof p, dir, name))
		return NULL;
	FILE *f = fopen(p, "rb");
	if (!f)
		return NULL;
	size_t cap = 65536, len = 0, n;
	char *s = malloc(cap + 1);
	while (s && (n = fread(s + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			char *t = realloc(s, 2 * cap + 1);
			if (!t) {
				free(s);
				s = NULL;
			}
			s = t;
			cap *= 2;
		}
	}
	fclose(f);
	if (s)
		s[len] = '\0';
	return s;
}

/* The next line of *p (without its newline) into line; false at the end. */
static bool next_line(const char **p, char *line, size_t n)
{
	if (!**p)
		return false;
	size_t len = strcspn(*p, "\n");
	snprintf(line, n, "%.*s", (int)(len < n ? len : n - 1), *p);
	*p += len + ((*p)[len] == '\n');
	return true;
}

/* Model: the first line where the two logs differ (whole lines compared; the message shows
 * their first 255 bytes). */
static void diff_lines(const char *a, const char *b, struct diffs *df)
{
	char la[256], lb[256];
	if (!strcmp(a, b))
		return;
	for (unsigned long n = 1;; n++) {
		size_t na = strcspn(a, "\n"), nb = strcspn(b, "\n");
		bool same = na == nb && !memcmp(a, b, na);
		bool ha = next_line(&a, la, sizeof la), hb = next_line(&b, lb, sizeof lb);
		if (!ha && !hb) {   /* equal lines throughout: they differ in a final newline */
			add_diff(df, "events.log: the bundle's and the replay's end differently (a final newline)");
			return;
		}
		if (ha && hb && same)
			continue;
		add_diff(df, "events.log: line %lu: bundle '%s', replay '%s'", n, ha ? la : "(end)", hb ? lb : "(end)");
		return;
	}
}

/* Verbs: what real hardware delivers when it delivers it (a CM event, a completion) and the
 * waits that end with them. Their place among a side's own actions varies from run to run on
 * rxe (seen: a destination's ESTABLISHED before or after its 'accepted'), so the comparison
 * leaves them out; the actions each side takes, in order, remain. */
static bool asynchronous(const char *name)
{
	static const char *const async[] = { "cm_event", "dst_cm", "wc", "rnr_wait", "wait_timeout",
					     "wait_disconnected", "wait_error" };
	for (size_t i = 0; i < sizeof async / sizeof *async; i++)
		if (!strcmp(name, async[i]))
			return true;
	return false;
}

/* Verbs: the n-th event (side and name) of side `side` in log s, from *p on; its line number. */
static bool next_event(const char **p, unsigned long *lineno, const char *side, char *ev, size_t n)
{
	char line[256], sd[16], name[64];
	while (next_line(p, line, sizeof line)) {
		++*lineno;
		if (sscanf(line, "%*s %15s %63s", sd, name) == 2 && !strcmp(sd, side) && !asynchronous(name)) {
			snprintf(ev, n, "%s", name);
			return true;
		}
	}
	return false;
}

/* Verbs: the log up to the end of its first `fail` line (whole if none), a copy. After the
 * first failure the teardown on real hardware is asynchronous (the peer's DISCONNECTED, the
 * flushed completions and the deregistrations interleave as the kernel delivers them: seen on
 * rxe), so the sequence is compared up to the failure and the outcome after it. */
static char *until_first_fail(const char *log)
{
	const char *p = log;
	char line[256], name[64];
	while (next_line(&p, line, sizeof line)) {
		if (sscanf(line, "%*s %*s %63s", name) == 1 && !strcmp(name, "fail"))
			return strndup(log, (size_t)(p - log));
	}
	return strdup(log);
}

/* Verbs: the event names of each side (the migration's, then the log's own sim and wire), in
 * order, without times and fields, up to the first failure (until_first_fail), leaving out
 * the hardware's asynchronous deliveries (asynchronous()). */
static void diff_events(const char *a_log, const char *b_log, struct diffs *df)
{
	char *a = until_first_fail(a_log), *b = until_first_fail(b_log);
	if (!a || !b) {
		free(a);
		free(b);
		add_diff(df, "events.log: out of memory");
		return;
	}
	const char *sides[VOCAB_SIDE_COUNT + 2];
	size_t n_sides = 0;
	for (int s = 0; s < VOCAB_SIDE_COUNT; s++)
		sides[n_sides++] = vocab_side_token(s);
	sides[n_sides++] = "sim";
	sides[n_sides++] = "wire";
	for (size_t s = 0; s < n_sides; s++) {
		const char *pa = a, *pb = b;
		unsigned long na = 0, nb = 0;
		char ea[64], eb[64];
		for (unsigned long i = 1;; i++) {
			bool ha = next_event(&pa, &na, sides[s], ea, sizeof ea);
			bool hb = next_event(&pb, &nb, sides[s], eb, sizeof eb);
			if (!ha && !hb)
				break;
			if (ha && hb && !strcmp(ea, eb))
				continue;
			add_diff(df, "events.log: %s event %lu: bundle '%s' (line %lu), replay '%s' (line %lu)", sides[s], i,
				 ha ? ea : "(end)", na, hb ? eb : "(end)", nb);
			break;
		}
	}
	free(a);
	free(b);
}

/* The result's top-level fields that differ (model: all of them; verbs: status and cause),
 * read with the one JSON reader (the bundle's result.json was checked to be JSON before the
 * rerun; the replay's not being JSON is a difference). */
static void diff_json(const char *a, const char *b, bool model, struct diffs *df)
{
	struct diag d = { 0 };
	json_t *ja = json_in_text(a, "the bundle's result.json", &d), *jb = ja ? json_in_text(b, "result.json", &d) : NULL;
	char names[400] = "";
	size_t len = 0;
	const char *key;
	json_t *va;
	if (!ja || !jb) {
		add_diff(df, "result.json: written by the replay, not JSON: %s", d.msg);
		goto out;
	}
	json_object_foreach(ja, key, va) {
		bool checked = model || !strcmp(key, "status") || !strcmp(key, "cause");
		if (checked && !json_equal(va, json_object_get(jb, key)) && len < sizeof names)
			len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", key);
	}
	if (names[0])
		add_diff(df, "result.json: %s differ%s", names, strchr(names, ',') ? "" : "s");
	else if (model && strcmp(a, b))
		add_diff(df, "result.json: differs (bytes)");
out:
	json_decref(ja);
	json_decref(jb);
}

/* One output file: both missing is the same; one missing is a difference. */
static void compare_file(const char *bundle, const char *out, const char *name, bool model, struct diffs *df)
{
	char *a = slurp(bundle, name), *b = slurp(out, name);
	if (!a != !b)
		add_diff(df, "%s: %s", name, a ? "in the bundle, not written by the replay" : "written by the replay, not in the bundle");
	else if (a && !strcmp(name, "events.log"))
		model ? diff_lines(a, b, df) : diff_events(a, b, df);
	else if (a)
		diff_json(a, b, model, df);
	free(a);
	free(b);
}

static void print_result(const char *bundle, const struct bundle_meta *m, bool same_build, const struct diffs *df,
			 bool json)
{
	if (json) {                      /* on the one JSON writer (sim/json.h, jansson) */
		json_t *doc = json_object(), *diffs = json_array();
		json_object_set_new(doc, "bundle", json_of_str(bundle));
		json_object_set_new(doc, "backend", json_of_str(m->backend));
		json_object_set_new(doc, "build-id", json_of_str(m->build_id));
		json_object_set_new(doc, "same-build", json_boolean(same_build));
		json_object_set_new(doc, "reproduced", json_boolean(!df->n));
		for (int i = 0; i < df->n; i++)
			json_array_append_new(diffs, json_of_str(df->line[i]));
		if (json_object_set_new(doc, "differences", diffs) || json_object_size(doc) != 6) {
			json_decref(doc);
			doc = NULL;
		}
		if (json_dump(stdout, doc))   /* takes doc */
			fprintf(stderr, "migbed: replay: out of memory writing the JSON result\n");
		return;
	}
	for (int i = 0; i < df->n; i++)
		printf("  %s\n", df->line[i]);
	if (df->n)
		printf("migbed: replay: %s: NOT reproduced (%d difference%s)\n", bundle, df->n, df->n == 1 ? "" : "s");
	else
		printf("migbed: replay: %s: reproduced (%s)\n", bundle,
		       strcmp(m->backend, "model") ? "verbs: the same actions per side up to the first failure, status and cause"
						   : "model: the same outcome, event log and result byte for byte");
}

/* Rerun and compare; the scratch folder is removed. 0 compared, -1 could not rerun (printed). */
static int replay(const char *bundle, const struct bundle_meta *m, struct diffs *df)
{
	char abs_bundle[PATH_MAX], scratch[1100], out[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	struct bundle_outcome oc;
	struct diag d = { 0 };
	snprintf(scratch, sizeof scratch, "%s/migbed-replay-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!realpath(bundle, abs_bundle) || !mkdtemp(scratch) || !realpath(scratch, out)) {
		cli_usage_error("replay: %s: %s", bundle, strerror(errno));
		return -1;
	}
	int rc = bundle_rerun(abs_bundle, out, m, &oc, &d);
	if (rc == 0) {
		bool model = !strcmp(m->backend, "model");
		char want[32], got[32];
		bundle_outcome_text(&m->oc, want, sizeof want);
		bundle_outcome_text(&oc, got, sizeof got);
		if (strcmp(want, got))
			add_diff(df, "outcome: bundle %s, replay %s", want, got);
		compare_file(abs_bundle, out, "events.log", model, df);
		compare_file(abs_bundle, out, "result.json", model, df);
	} else {
		cli_usage_error("replay: %s", d.msg);
	}
	bundle_rmdir(out);
	return rc ? -1 : 0;
}

int cmd_replay(int argc, char **argv)
{
	const char *bundle = NULL;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-' || bundle)
			return cli_usage_error("replay: unexpected argument '%s' (see migbed replay --help)", argv[i]);
		else
			bundle = argv[i];
	}
	if (!bundle)
		return cli_usage_error("replay: which bundle? (see migbed replay --help)");
	struct bundle_meta m;
	struct diag d = { 0 };
	struct diffs *df = calloc(1, sizeof *df);
	if (!df)
		return cli_usage_error("replay: out of memory");
	int code = CLI_EXIT_USAGE;
	if (bundle_read_meta(bundle, &m, &d)) {
		cli_usage_error("replay: %s", d.msg);
		goto out;
	}
	char js[1200];
	json_t *res = NULL;              /* the bundle's result.json, if any, must be JSON: checked first */
	if (!bundle_path_join(js, sizeof js, bundle, "result.json") && !access(js, F_OK) && !(res = json_in_file(js, &d))) {
		cli_usage_error("replay: %s", d.msg);
		goto out;
	}
	json_decref(res);
	bool same = !strcmp(m.build_id, run_build_id()) && !strcmp(m.compiler, bundle_compiler());
	if (!same)
		fprintf(stderr, "migbed: replay: warning: the bundle is from another build (%s, %s); this is %s, %s: "
				"replaying anyway\n", m.build_id, m.compiler, run_build_id(), bundle_compiler());
	if (replay(bundle, &m, df) == 0) {
		print_result(bundle, &m, same, df, json);
		code = df->n ? CLI_EXIT_FAIL : CLI_EXIT_OK;
	}
out:
	free(df);
	return code;
}
