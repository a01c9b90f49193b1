/* SPDX-License-Identifier: MIT */
/* run_report - reporting a run's outcome (see run_report.h). */
#include "cli/run_report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/json.h"
#include "run/explain.h"
#include "sim/json_in.h"

/* "3" or ">0" */
static void fired_text(const struct runcfg_fired *w, char *buf, size_t n)
{
	snprintf(buf, n, "%s%llu", w->more ? ">" : "", (unsigned long long)w->n);
}

/* One line per fault rule: what it did, and what was expected of it. */
static void print_faults(const struct runcfg *c, const struct run_outcome *o, FILE *f)
{
	for (int i = 0; i < o->n_faults; i++) {
		const struct run_fault *rf = &o->faults[i];
		const struct runcfg_fired *want = run_expected_fired(c, i);
		char w[32] = "";
		if (want)
			fired_text(want, w, sizeof w);
		fprintf(f, "fault rule %d: %s: fired %llu time%s (%llu matching calls", i + 1, c->faults[i],
			(unsigned long long)rf->st.fired, rf->st.fired == 1 ? "" : "s", (unsigned long long)rf->st.matched);
		if (rf->st.shadowed)
			fprintf(f, ", %llu due but taken by an earlier rule", (unsigned long long)rf->st.shadowed);
		fprintf(f, ")%s%s%s\n", want ? ", expected " : "", w,
			!want ? "" : !rf->judged ? " (not checked: the other process's side)" : rf->met ? "" : ": NOT MET");
	}
}

/* What the verdict line alone does not say: a rule that fired other than expected (on
 * stdout, before the verdict, also with --quiet), or one that never fired (stderr). */
static void print_fired_verdict(const struct runcfg *c, const struct run_outcome *o, FILE *out)
{
	for (int i = 0; i < o->n_faults; i++) {
		const struct run_fault *rf = &o->faults[i];
		const struct runcfg_fired *want = run_expected_fired(c, i);
		char w[32];
		if (!rf->met) {
			fired_text(want, w, sizeof w);
			fprintf(out, "migbed: expect-fired: fault rule %d '%s' fired %llu time%s, expected %s\n", i + 1,
				c->faults[i], (unsigned long long)rf->st.fired, rf->st.fired == 1 ? "" : "s", w);
		} else if (!want && rf->st.fired == 0) {
			fprintf(stderr, "migbed: warning: fault rule %d '%s' never fired (%llu matching calls)\n", i + 1,
				c->faults[i], (unsigned long long)rf->st.matched);
		}
	}
}

static void print_side(FILE *f, const char *side, enum proto_impl impl, bool completed, const struct cause_ctx *cx)
{
	char name[64];
	if (impl != PROTO_IMPL_MIGBED)
		snprintf(name, sizeof name, "%s (as %s)", side, proto_profile(impl)->name);
	else
		snprintf(name, sizeof name, "%s", side);
	if (completed)
		fprintf(f, "%s: completed\n", name);
	else if (cx->cause)
		fprintf(f, "%s: failed: %s: %s\n", name, cause_name(cx->cause), cx->detail);
	else
		fprintf(f, "%s: stopped (no cause of its own)\n", name);
}

/* The next line a side playing impl prints for the cause (proto_profile_qemu_line): an
 * observed line as it is; a format read from QEMU's source filled with the values of the
 * side's own detail where that detail says the same thing in QEMU's words (migbed words its
 * checks as QEMU does: "Was expecting a READY (2) control message, but got: ERROR (1)..."),
 * else left as the format, its conversions visible. */
static int qemu_line(const struct proto_profile *p, int cause, enum vocab_side side, const struct cause_ctx *cx,
		     size_t *pos, char *line, size_t n, char *note, size_t note_n)
{
	if (!cause || !proto_profile_qemu_line(p, cause, side, pos, line, n, note, note_n))
		return 0;
	char filled[512];
	if (p->log_kind == PROTO_LOG_SOURCE && strchr(line, '%') && cx &&
	    explain_row_fill(line, cx->detail, filled, sizeof filled) == 1)
		snprintf(line, n, "%s", filled);
	return 1;
}

/* A side playing a QEMU version whose lines for the run's cause are known: those lines, each
 * labelled with how it is known ("observed": a real QEMU 7.2 printed it; "from QEMU 8.2's
 * source": a format string read from that version's rdma.c, and the situation it needs). */
static void print_qemu_lines(FILE *f, enum proto_impl impl, enum vocab_side side, int cause,
			     const struct cause_ctx *cx)
{
	const struct proto_profile *p = proto_profile(impl);
	char line[512], note[96];
	size_t pos = 0;
	while (qemu_line(p, cause, side, cx, &pos, line, sizeof line, note, sizeof note)) {
		if (p->log_kind == PROTO_LOG_OBSERVED)
			fprintf(f, "  %s %s log (observed): %s\n", p->name, vocab_side_token(side), line);
		else
			fprintf(f, "  %s %s log (from QEMU %s's source%s%s): %s\n", p->name, vocab_side_token(side),
				p->log_tag, note[0] ? "; " : "", note, line);
	}
}

static void print_human(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o, FILE *f)
{
	if (c->scenario[0])
		fprintf(f, "scenario: %s%s%s\n", c->scenario, c->description[0] ? " - " : "", c->description);
	metrics_print_human(m, f);
	print_side(f, "source", c->src_impl, o->src_completed, &o->src);
	if (o->dst_unseen)
		fprintf(f, "destination: a real QEMU: its status is on its QMP (query-migrate), not visible here\n");
	else
		print_side(f, "destination", c->dst_impl, o->dst_completed, &o->dst);
	if (o->completed && o->dst_unseen)
		fprintf(f, "verification: not possible from the source (compare QEMU's pmemsave with --dump-mem)\n");
	else if (o->completed)
		fprintf(f, "verification: destination memory equals the source's (every page)\n");
	else {
		fprintf(f, "cause: %s (%s side): %s\n", cause_name(o->cause), run_side_name(o->side), cause_message(o->cause));
		fprintf(f, "  detail: %s\n", o->detail);
		fprintf(f, "  hint: %s\n", cause_hint(o->cause));
		if (o->cause == CAUSE_REMOTE_ACCESS_ERROR && m->chunk_bytes_src > c->dst_chunk_bytes && !m->pin_all)
			fprintf(f, "  likely: the source's chunk size (%lluM) is larger than the destination's (%lluM): "
				   "the source reuses one rkey for a region the destination registered only in part\n",
				(unsigned long long)(m->chunk_bytes_src >> 20), (unsigned long long)(c->dst_chunk_bytes >> 20));
		if (cause_qemu(o->cause)[0])
			fprintf(f, "  QEMU prints: %s\n", cause_qemu(o->cause));
		print_qemu_lines(f, c->src_impl, VOCAB_SIDE_SRC, o->cause, &o->src);
		print_qemu_lines(f, c->dst_impl, VOCAB_SIDE_DST, o->cause, &o->dst);
	}
	if (m->chunk_bytes_src != c->chunk_bytes)
		fprintf(f, "chunk size: the source was configured with %lluM and used %lluM (negotiated)\n",
			(unsigned long long)(c->chunk_bytes >> 20), (unsigned long long)(m->chunk_bytes_src >> 20));
	print_faults(c, o, f);
	fprintf(f, "expected: %s", c->expect_text);
	for (int i = 0; i < c->n_expect_fired; i++) {
		char w[32];
		fired_text(&c->expect_fired[i], w, sizeof w);
		fprintf(f, "%s%s", i ? "," : c->expect_fired_all ? ", every fault rule fired " : ", fault rules fired ", w);
	}
	fprintf(f, "\n");
}

/* {"completed":B,"cause":NAME,"detail":TEXT,"impl":NAME,"qemu-log":[TEXT...],
 * "qemu-log-kind":"observed"|"source"|null,"qemu-log-version":"7.2"|"8.2"|null,
 * "qemu-log-notes":[TEXT...]}: qemu-log, the lines the QEMU version the side plays prints
 * when a migration fails with the run's cause (run_cause; [] if none or the run completed),
 * as print_qemu_lines has them; qemu-log-kind, how they are known (observed from a real
 * QEMU, or format strings read from its source), of which version; qemu-log-notes, each
 * line's situation ("" if none), index for index. */
static json_t *json_side(enum proto_impl impl, enum vocab_side side, int run_cause, bool completed,
			 const struct cause_ctx *cx)
{
	const struct proto_profile *p = proto_profile(impl);
	char line[512], note[96];
	size_t pos = 0;
	json_t *lines = json_array(), *notes = json_array();
	while (lines && qemu_line(p, run_cause, side, cx, &pos, line, sizeof line, NULL, 0))
		json_add(&lines, json_of_str(line));
	pos = 0;
	while (notes && run_cause &&
	       proto_profile_qemu_line(p, run_cause, side, &pos, line, sizeof line, note, sizeof note))
		json_add(&notes, json_of_str(note));
	bool logged = p->log_kind != PROTO_LOG_NONE;
	return json_pack("{s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "completed", completed, "cause",
			 json_of_str(cause_name(cx->cause)), "detail", json_of_str(cx->detail), "impl", json_of_str(p->name),
			 "qemu-log", lines, "qemu-log-kind",
			 !logged ? json_null() : json_of_str(p->log_kind == PROTO_LOG_OBSERVED ? "observed" : "source"),
			 "qemu-log-version", logged ? json_of_str(p->log_tag) : json_null(), "qemu-log-notes", notes);
}

/* "faults":[{"rule":TEXT,"matched":N,"fired":N,"shadowed":N,"expect":">0"|"3"|null,
 * "met":true|false|null}, ...]: one object per rule, in order; met is null when nothing is
 * expected of the rule or it cannot be checked in this process. */
static json_t *json_faults(const struct runcfg *c, const struct run_outcome *o)
{
	json_t *arr = json_array();
	for (int i = 0; arr && i < o->n_faults; i++) {
		const struct run_fault *rf = &o->faults[i];
		const struct runcfg_fired *want = run_expected_fired(c, i);
		char w[32] = "";
		if (want)
			fired_text(want, w, sizeof w);
		json_add(&arr, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "rule", json_of_str(c->faults[i]), "matched",
				       json_of_u64(rf->st.matched), "fired", json_of_u64(rf->st.fired), "shadowed",
				       json_of_u64(rf->st.shadowed), "expect", want ? json_of_str(w) : json_null(), "met",
				       !rf->judged ? json_null() : json_boolean(rf->met)));
	}
	return arr;
}

json_t *run_report_doc(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
		       const char *backend)
{
	char error_desc[CAUSE_DETAIL_MAX + 64];
	if (!o->completed)
		snprintf(error_desc, sizeof error_desc, "%s: %s", cause_name(o->cause), o->detail);
	json_t *doc = json_pack("{s:o,s:o,s:o,s:o,s:s,s:s,s:o,s:o,s:o,s:o,s:b}", "scenario", json_of_str(c->scenario),
				"backend", json_of_str(backend), "seed", json_of_u64(c->seed), "expect",
				json_of_str(c->expect_text), "verdict", o->pass ? "pass" : "fail", "status",
				o->completed ? "completed" : "failed", "cause", json_of_str(cause_name(o->cause)), "side",
				json_of_str(run_side_name(o->side)), "detail", json_of_str(o->detail), "hint",
				json_of_str(o->completed ? "" : cause_hint(o->cause)), "verified", o->verified);
	int cause = o->completed ? 0 : o->cause;
	json_set(&doc, vocab_side_token(VOCAB_SIDE_SRC), json_side(c->src_impl, VOCAB_SIDE_SRC, cause, o->src_completed, &o->src));
	json_set(&doc, vocab_side_token(VOCAB_SIDE_DST), json_side(c->dst_impl, VOCAB_SIDE_DST, cause, o->dst_completed, &o->dst));
	json_set(&doc, "metrics", metrics_json(m, o->completed ? NULL : error_desc));
	json_set(&doc, "faults", json_faults(c, o));
	return doc;
}

int run_report_json(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
		    const char *backend, FILE *f)
{
	if (!json_dump(f, run_report_doc(c, m, o, backend)))
		return 0;
	if (!ferror(f))   /* a write error is the caller's to name (out_file_commit) */
		fprintf(stderr, "migbed: out of memory building the JSON result\n");
	return -EIO;
}

int run_report(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
	       const char *backend, struct out_file *json, struct diag *d)
{
	/* JSON on standard output (--json -): stdout holds only the JSON document, as with
	 * `qemu-img info --output=json` or `rdma -j`; the report and the verdict go to stderr. */
	FILE *out = json && json->f == stdout ? stderr : stdout;
	if (!c->quiet)
		print_human(c, m, o, out);
	print_fired_verdict(c, o, out);
	fprintf(out, "migbed: verdict=%s status=%s cause=%s side=%s\n", o->pass ? "pass" : "fail",
		o->completed ? "completed" : "failed", cause_name(o->cause), run_side_name(o->side));
	fflush(out);
	if (json && json->f) {
		if (run_report_json(c, m, o, backend, json->f) && !ferror(json->f)) {
			diag_set(d, "%s: the JSON result could not be built (out of memory)", json->path);
			return CLI_EXIT_USAGE;
		}
		if (out_file_commit(json, d))
			return CLI_EXIT_USAGE;
	}
	return o->pass ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int run_report_result(const struct runcfg *c, struct run_result *res, struct diag *d)
{
	if (res->pause_missed)
		fprintf(stderr, "migbed: warning: --pause-at %s:%s#%llu was never reached (the run had %llu '%s' "
				"lines, all sides)\n", c->pause_side, c->pause_event, (unsigned long long)c->pause_nth,
			(unsigned long long)res->pause_event_lines, c->pause_event);
	int code = run_report(c, &res->m, &res->out, c->backend == HCA_BACKEND_VERBS ? "verbs" : "model",
			      &res->json, d);
	out_file_abort(&res->json);   /* not written (a write error): nothing left */
	if (res->output_error)
		code = CLI_EXIT_USAGE;
	if (code == CLI_EXIT_USAGE)
		fprintf(stderr, "migbed: %s\n", d->msg);
	return code;
}
