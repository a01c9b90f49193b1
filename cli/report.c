/* SPDX-License-Identifier: MIT */
/* report - JUnit XML and TAP version 13 for the commands that run many cases (cli/report.h). */
#include "cli/report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "faults/fault.h"
#include "run/judge.h"
#include "run/swarm.h"
#include "run/torture.h"
#include "vocab/cause.h"

void report_xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		switch (ch) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if (ch < 0x20 && ch != '\n' && ch != '\t')
				fputc('?', f);   /* not allowed in XML 1.0 */
			else
				fputc(ch, f);
		}
	}
}

void report_yaml_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; s && *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
	fputc('\'', f);
}

/* ---- JUnit ---------------------------------------------------------------------------------- */

int report_junit_begin(struct report_junit *j)
{
	*j = (struct report_junit){ 0 };
	j->body = open_memstream(&j->buf, &j->len);
	return j->body ? 0 : -errno;
}

static void attr(FILE *f, const char *name, const char *value)
{
	fprintf(f, " %s=\"", name);
	report_xml_text(f, value);
	fputc('"', f);
}

void report_junit_case(struct report_junit *j, const struct report_case *c)
{
	FILE *f = j->body;
	j->tests++;
	j->failures += c->result == REPORT_FAIL;
	j->errors += c->result == REPORT_ERROR;
	fputs("    <testcase", f);
	attr(f, "classname", c->classname);
	attr(f, "name", c->name);
	if (c->file)
		attr(f, "file", c->file);
	fprintf(f, " time=\"%.3f\">\n", c->secs >= 0 ? c->secs : 0.0);
	if (c->result != REPORT_PASS) {
		fprintf(f, "      <%s", c->result == REPORT_FAIL ? "failure" : "error");
		attr(f, "type", c->type ? c->type : "");
		attr(f, "message", c->message ? c->message : "");
		if (c->text) {
			fputc('>', f);
			report_xml_text(f, c->text);
			fprintf(f, "</%s>\n", c->result == REPORT_FAIL ? "failure" : "error");
		} else {
			fputs("/>\n", f);
		}
	}
	if (c->out) {
		fputs("      <system-out>", f);
		report_xml_text(f, c->out);
		fputs("</system-out>\n", f);
	}
	fputs("    </testcase>\n", f);
}

int report_junit_end(struct report_junit *j, FILE *f, const char *suite, double secs)
{
	if (!j->body || fflush(j->body))
		return -ENOMEM;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", f);
	attr(f, "name", suite);
	fprintf(f, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" time=\"%.3f\">\n  <testsuite", j->tests, j->failures,
		j->errors, secs);
	attr(f, "name", suite);
	fprintf(f, " tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"0\" time=\"%.3f\">\n", j->tests, j->failures,
		j->errors, secs);
	fwrite(j->buf, 1, j->len, f);
	fputs("  </testsuite>\n</testsuites>\n", f);
	return ferror(f) ? -EIO : 0;
}

void report_junit_free(struct report_junit *j)
{
	if (j->body)
		fclose(j->body);
	free(j->buf);
	*j = (struct report_junit){ 0 };
}

/* ---- TAP ------------------------------------------------------------------------------------- */

void report_tap_head(FILE *f, size_t n_planned)
{
	fputs("TAP version 13\n", f);
	if (n_planned)
		report_tap_plan(f, n_planned);
}

void report_tap_plan(FILE *f, size_t n)
{
	fprintf(f, "1..%zu\n", n);
}

void report_tap_case(FILE *f, size_t i, const struct report_case *c)
{
	fprintf(f, "%sok %zu - ", c->result == REPORT_PASS ? "" : "not ", i);
	for (const char *s = c->name; s && *s; s++) {
		if (*s == '#' || *s == '\\')
			fputc('\\', f);
		fputc(*s == '\n' ? ' ' : *s, f);
	}
	fputs("\n  ---\n", f);
	for (size_t k = 0; k < REPORT_FIELDS_MAX && c->fields[k].key; k++) {
		fprintf(f, "  %s: ", c->fields[k].key);
		report_yaml_quoted(f, c->fields[k].value);
		fputc('\n', f);
	}
	if (c->secs >= 0)
		fprintf(f, "  seconds: %.3f\n", c->secs);
	fputs("  ...\n", f);
}

/* ---- the cases of torture and swarm ------------------------------------------------------------ */

static enum report_result torture_result_of(const struct torture_run *r)
{
	if (torture_verdict_proper(r->verdict))
		return REPORT_PASS;
	return r->verdict == TORTURE_ERROR ? REPORT_ERROR : REPORT_FAIL;
}

void report_torture_case(struct report_case *c, struct report_buf *b, const struct torture_run *r,
			 const char *scenario, const char *bundles)
{
	const char *site = fault_site_name(r->site), *side = fault_side_name(r->side);
	const char *cause = r->reported ? cause_name(r->cause) : "-";
	const char *by = r->cause_side[0] ? r->cause_side : "-";
	const char *verdict = torture_verdict_name(r->verdict);
	int n;
	snprintf(b->name, sizeof b->name, "%s-%s-%llu", site, side, (unsigned long long)r->call);
	snprintf(b->fault, sizeof b->fault, "%s@%s #%llu -> %s", site, side, (unsigned long long)r->call, r->action);
	n = snprintf(b->replay, sizeof b->replay, "migbed replay %s/%s", bundles, b->name);
	n = snprintf(b->message, sizeof b->message, "%s: cause %s, side %s, fault %s; bundle: %s", verdict, cause, by,
		     b->fault, b->replay);
	n = snprintf(b->out, sizeof b->out, "%s: %s %s %s", b->fault, verdict, cause, by);
	(void)n;   /* a long text is cut */
	*c = (struct report_case){ .classname = "migbed.torture", .name = b->name, .file = scenario, .secs = -1,
				   .result = torture_result_of(r), .type = verdict, .message = b->message,
				   .text = r->detail, .out = b->out,
				   .fields = { { "fault", b->fault }, { "verdict", verdict }, { "cause", cause },
					       { "side", by }, { "detail", r->detail } } };
	if (c->result != REPORT_PASS)
		c->fields[5] = (struct report_field){ "replay", b->replay };
}

void report_swarm_case(struct report_case *c, struct report_buf *b, const struct swarm_run *r,
		       const char *bundle, double secs)
{
	const char *cls = swarm_finding_name(r->finding), *cause = cause_name(r->cause);
	const char *side = run_side_name(r->side);
	const char *status = r->finding == SWARM_F_ERROR ? "error" : r->completed ? "completed" : "failed";
	bool has_bundle = bundle && bundle[0];
	int n;
	snprintf(b->name, sizeof b->name, "seed-%llu", (unsigned long long)r->seed);
	n = snprintf(b->replay, sizeof b->replay, "migbed run %s", r->config);
	n = snprintf(b->message, sizeof b->message, "finding %s: cause %s, side %s; replay: %s%s%s", cls, cause, side,
		     b->replay, has_bundle ? "; bundle: migbed replay " : "", has_bundle ? bundle : "");
	n = snprintf(b->out, sizeof b->out, "migbed: status=%s cause=%s side=%s fired=%zu: %s", status, cause, side,
		     r->fired, r->config);
	(void)n;   /* a long text is cut */
	*c = (struct report_case){ .classname = "migbed.swarm", .name = b->name, .secs = secs,
				   .result = r->finding == SWARM_F_NONE ? REPORT_PASS
					     : r->finding == SWARM_F_ERROR ? REPORT_ERROR : REPORT_FAIL,
				   .type = cls, .message = b->message, .text = r->detail, .out = b->out,
				   .fields = { { "status", status }, { "cause", cause }, { "side", side },
					       { "config", r->config } } };
	if (c->result != REPORT_PASS) {
		c->fields[4] = (struct report_field){ "finding", cls };
		c->fields[5] = (struct report_field){ "detail", r->detail };
		c->fields[6] = (struct report_field){ "replay", b->replay };
		if (has_bundle)
			c->fields[7] = (struct report_field){ "bundle", bundle };
	}
}

/* ---- a stream of cases ----------------------------------------------------------------------------- */

int report_sink_open(struct report_sink *s, const char *suite, const char *junit_path, FILE *tap, struct diag *d)
{
	int rc;
	*s = (struct report_sink){ .suite = suite, .tap = tap };
	if (!(s->buf = malloc(sizeof *s->buf)))
		return diag_set(d, "out of memory");
	if (junit_path && (rc = out_file_open(&s->junit_file, junit_path, d)) != 0)
		goto fail;
	if (junit_path && (rc = report_junit_begin(&s->junit)) != 0) {
		diag_set(d, "out of memory");
		goto fail;
	}
	if (tap)
		report_tap_head(tap, 0);
	return 0;
fail:
	report_sink_abort(s);
	return rc;
}

void report_sink_case(struct report_sink *s, const struct report_case *c)
{
	s->n++;
	if (s->tap) {
		report_tap_case(s->tap, s->n, c);
		fflush(s->tap);
	}
	if (s->junit_file.f)
		report_junit_case(&s->junit, c);
}

int report_sink_close(struct report_sink *s, double secs, struct diag *d)
{
	int rc = 0;
	if (s->tap)
		report_tap_plan(s->tap, s->n);
	if (s->junit_file.f) {
		if ((rc = report_junit_end(&s->junit, s->junit_file.f, s->suite, secs)) != 0)
			diag_set(d, "%s: out of memory", s->junit_file.path);
		else
			rc = out_file_commit(&s->junit_file, d);
	}
	s->tap = NULL;
	report_sink_abort(s);
	return rc;
}

void report_sink_abort(struct report_sink *s)
{
	out_file_abort(&s->junit_file);
	report_junit_free(&s->junit);
	free(s->buf);
	s->buf = NULL;
}

const char *report_sink_writing(const struct report_sink *s)
{
	return s->junit_file.f ? s->junit_file.of.tmp : "";
}
