/* run_report - outcome judgement and reporting (see run_report.h). */
#include "cli/run_report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* Causes that are consequences of the peer's failure, not a failure of their own. */
static bool secondary(int cause)
{
	return cause == CAUSE_PEER_ERROR || cause == CAUSE_PEER_DISCONNECTED || cause == CAUSE_QP_ERROR ||
	       cause == CAUSE_CONNECT_REJECTED || cause == CAUSE_DEST_INCOMPLETE ||
	       cause == CAUSE_QEMU_STREAM_TRUNCATED;   /* the source stopped mid-stream */
}

static bool src_first(const struct run_outcome *o)
{
	if (!o->dst.cause)
		return true;
	if (!o->src.cause)
		return false;
	bool ss = secondary(o->src.cause), ds = secondary(o->dst.cause);
	if (ss != ds)
		return ds;
	if (ss && (o->src.cause == CAUSE_PEER_DISCONNECTED) != (o->dst.cause == CAUSE_PEER_DISCONNECTED))
		return o->dst.cause == CAUSE_PEER_DISCONNECTED;   /* any consequence says more than a disconnect */
	return o->src.t_ns <= o->dst.t_ns;
}

void run_outcome_judge(struct run_outcome *o, const struct runcfg *c)
{
	o->completed = o->src_completed && o->dst_completed && o->verified;
	if (o->completed) {
		o->cause = 0;
		o->side = "-";
		o->detail = "";
	} else if (src_first(o)) {
		o->cause = o->src.cause ? o->src.cause : CAUSE_INTERNAL;
		o->side = "src";
		o->detail = o->src.detail;
	} else {
		o->cause = o->dst.cause;
		o->side = "dst";
		o->detail = o->dst.detail;
	}
	if (c->expect_completed) {
		o->pass = o->completed;
		return;
	}
	o->pass = false;
	for (int i = 0; !o->completed && i < c->n_expect; i++)
		if (c->expect_causes[i] == o->cause)
			o->pass = true;
}

void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void print_side(FILE *f, const char *name, bool completed, const struct cause_ctx *cx)
{
	if (completed)
		fprintf(f, "%s: completed\n", name);
	else if (cx->cause)
		fprintf(f, "%s: failed: %s: %s\n", name, cause_name(cx->cause), cx->detail);
	else
		fprintf(f, "%s: stopped (no cause of its own)\n", name);
}

static void print_human(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o, FILE *f)
{
	if (c->scenario[0])
		fprintf(f, "scenario: %s%s%s\n", c->scenario, c->description[0] ? " - " : "", c->description);
	metrics_print_human(m, f);
	print_side(f, "source", o->src_completed, &o->src);
	if (o->dst_unseen)
		fprintf(f, "destination: a real QEMU: its status is on its QMP (query-migrate), not visible here\n");
	else
		print_side(f, "destination", o->dst_completed, &o->dst);
	if (o->completed && o->dst_unseen)
		fprintf(f, "verification: not possible from the source (compare QEMU's pmemsave with --dump-mem)\n");
	else if (o->completed)
		fprintf(f, "verification: destination memory equals the source's (every page)\n");
	else {
		fprintf(f, "cause: %s (%s side): %s\n", cause_name(o->cause), o->side, cause_message(o->cause));
		fprintf(f, "  detail: %s\n", o->detail);
		fprintf(f, "  hint: %s\n", cause_hint(o->cause));
		if (o->cause == CAUSE_REMOTE_ACCESS_ERROR && c->chunk_bytes > c->dst_chunk_bytes && !m->pin_all)
			fprintf(f, "  likely: the source's chunk size (%lluM) is larger than the destination's (%lluM): "
				   "the source reuses one rkey for a region the destination registered only in part\n",
				(unsigned long long)(c->chunk_bytes >> 20), (unsigned long long)(c->dst_chunk_bytes >> 20));
		if (cause_qemu(o->cause)[0])
			fprintf(f, "  QEMU prints: %s\n", cause_qemu(o->cause));
	}
	fprintf(f, "expected: %s\n", c->expect_text);
}

static void json_side(FILE *f, bool completed, const struct cause_ctx *cx)
{
	fprintf(f, "{\"completed\":%s,\"cause\":", completed ? "true" : "false");
	json_string(f, cause_name(cx->cause));
	fprintf(f, ",\"detail\":");
	json_string(f, cx->detail);
	fprintf(f, "}");
}

static void print_json(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
		       const char *backend, FILE *f)
{
	fprintf(f, "{\"scenario\":");
	json_string(f, c->scenario);
	fprintf(f, ",\"backend\":");
	json_string(f, backend);
	fprintf(f, ",\"seed\":%llu,\"expect\":", (unsigned long long)c->seed);
	json_string(f, c->expect_text);
	fprintf(f, ",\"verdict\":\"%s\",\"status\":\"%s\",\"cause\":", o->pass ? "pass" : "fail",
		o->completed ? "completed" : "failed");
	json_string(f, cause_name(o->cause));
	fprintf(f, ",\"side\":");
	json_string(f, o->side);
	fprintf(f, ",\"detail\":");
	json_string(f, o->detail);
	fprintf(f, ",\"hint\":");
	json_string(f, o->completed ? "" : cause_hint(o->cause));
	fprintf(f, ",\"verified\":%s,\"src\":", o->verified ? "true" : "false");
	json_side(f, o->src_completed, &o->src);
	fprintf(f, ",\"dst\":");
	json_side(f, o->dst_completed, &o->dst);
	fprintf(f, ",\"metrics\":");
	metrics_print_json(m, f);
	fprintf(f, "}\n");
}

static int write_json(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
		      const char *backend, struct diag *d)
{
	char tmp[1100];
	snprintf(tmp, sizeof tmp, "%s.tmp", c->json_path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return diag_set(d, "%s: cannot write: %s", c->json_path, strerror(errno));
	print_json(c, m, o, backend, f);
	if (fflush(f) != 0 || ferror(f)) {
		fclose(f);
		unlink(tmp);
		return diag_set(d, "%s: write error", c->json_path);
	}
	fclose(f);
	if (rename(tmp, c->json_path) != 0) {
		unlink(tmp);
		return diag_set(d, "%s: cannot rename into place: %s", c->json_path, strerror(errno));
	}
	return 0;
}

int run_report(const struct runcfg *c, const struct metrics *m, const struct run_outcome *o,
	       const char *backend, struct diag *d)
{
	if (!c->quiet)
		print_human(c, m, o, stdout);
	printf("migbed: verdict=%s status=%s cause=%s side=%s\n", o->pass ? "pass" : "fail",
	       o->completed ? "completed" : "failed", cause_name(o->cause), o->side);
	fflush(stdout);
	if (c->json_path[0] && write_json(c, m, o, backend, d))
		return CLI_EXIT_USAGE;
	return o->pass ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
