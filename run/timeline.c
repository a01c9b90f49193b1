/* SPDX-License-Identifier: MIT */
#include "run/timeline.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/out_file.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "vocab/vocab.h"

enum { P_MIGRATION = 1, P_SRC, P_DST, P_OTHER, P_COUNT };
enum { T_PHASES = 1, T_CONTROL, T_CHUNKS, T_CONNECTION, T_FAULTS, T_COUNT };

#define TL_FIELDS 16
#define TL_SPANS 64          /* REGISTER REQUESTs in flight per side (QEMU: one at a time) */

struct tl_field { const char *k, *v; };

struct tl_line {
	uint64_t ns;
	const char *side, *event;
	struct tl_field f[TL_FIELDS];
	int nf;
};

struct tl_span { uint64_t ns; char name[96]; };

struct tl {
	FILE *f;
	struct json_stream js;       /* the trace events, written as they are read */
	/* the migration's phases */
	uint64_t round_start_ns;     /* the running round's start (setup_done, or after a sleep) */
	bool vm_stopped;
	uint64_t vm_stop_ns, downtime_end_ns;
	/* per side (P_SRC, P_DST) */
	struct tl_span spans[P_COUNT][TL_SPANS];
	int n_spans[P_COUNT];
	int64_t writes[P_COUNT];
	uint64_t writes_ns[P_COUNT];   /* the time of the sample not yet written */
	bool writes_dirty[P_COUNT];
	uint64_t end_ns;
	/* plot mode (timeline_plot_data): spans and samples kept, nothing printed */
	bool plot;
	struct tl_rec { uint64_t a, b; int row; } *recs;
	size_t n_recs, cap_recs;
	bool oom;
};

enum { ROW_WRITES = 0, ROW_DOWNTIME = 1, ROW_CHUNKS = 2, ROW_SETUP = 3, ROW_ROUNDS = 4 };

static void rec(struct tl *t, int row, uint64_t a, uint64_t b)
{
	if (t->n_recs == t->cap_recs) {
		size_t cap = t->cap_recs ? t->cap_recs * 2 : 1024;
		struct tl_rec *n = realloc(t->recs, cap * sizeof *n);
		if (!n) {
			t->oom = true;
			return;
		}
		t->recs = n;
		t->cap_recs = cap;
	}
	t->recs[t->n_recs++] = (struct tl_rec){ a, b, row };
}

/* b - a, or 0 for a log whose times go backwards (hand-edited): no span runs backwards */
static uint64_t since(uint64_t a, uint64_t b)
{
	return b > a ? b - a : 0;
}

static const char *field(const struct tl_line *l, const char *k)
{
	for (int i = 0; i < l->nf; i++)
		if (!strcmp(l->f[i].k, k))
			return l->f[i].v;
	return NULL;
}

static uint64_t field_u64(const struct tl_line *l, const char *k)
{
	const char *v = field(l, k);
	return v ? strtoull(v, NULL, 0) : 0;
}

/* "S.NNNNNNNNN SIDE EVENT[ K=V ...]" in place; false if the line is not one. */
static bool parse_line(char *s, struct tl_line *l)
{
	char *sp = strchr(s, ' ');
	char *dot = strchr(s, '.');
	if (!sp || !dot || dot > sp || sp - dot != 10 || dot == s)
		return false;
	uint64_t sec = 0, ns = 0;
	for (char *p = s; p < dot; p++) {
		if (!isdigit((unsigned char)*p) || sec > UINT64_MAX / 1000000000ull / 10)
			return false;
		sec = sec * 10 + (uint64_t)(*p - '0');
	}
	for (char *p = dot + 1; p < sp; p++) {
		if (!isdigit((unsigned char)*p))
			return false;
		ns = ns * 10 + (uint64_t)(*p - '0');
	}
	if (sec > (UINT64_MAX - ns) / 1000000000ull)   /* past the clock's range */
		return false;
	l->ns = sec * 1000000000ull + ns;
	l->nf = 0;
	char *save = NULL;
	l->side = strtok_r(sp + 1, " ", &save);
	l->event = strtok_r(NULL, " ", &save);
	if (!l->side || !l->event)
		return false;
	for (char *t; (t = strtok_r(NULL, " ", &save));) {
		char *eq = strchr(t, '=');
		if (!eq || eq == t)
			return false;
		*eq = '\0';
		if (l->nf < TL_FIELDS)
			l->f[l->nf++] = (struct tl_field){ t, eq + 1 };
	}
	return true;
}

static int side_pid(const char *side)
{
	if (!strcmp(side, "sim"))
		return P_MIGRATION;
	int s = vocab_side_lookup(side);
	if (s == VOCAB_SIDE_SRC)
		return P_SRC;
	if (s == VOCAB_SIDE_DST)
		return P_DST;
	return P_OTHER;
}

/* A time stamp: the event log's ns as the trace format's microseconds (ns / 1000 is the
 * double nearest the 3-decimal value, written as that value). */
static json_t *us(uint64_t ns)
{
	return json_real((double)ns / 1000.0);
}

/* One trace event; args: the line's fields (NULL: none). */
static void emit(struct tl *t, const char *ph, const char *name, int pid, int tid, uint64_t ns,
		 uint64_t dur_ns, const struct tl_line *args, const char *scope)
{
	if (t->plot) {
		if (!strcmp(ph, "X") && pid == P_MIGRATION)
			rec(t, !strcmp(name, "setup") ? ROW_SETUP : !strncmp(name, "round ", 6) ? ROW_ROUNDS
			       : ROW_DOWNTIME, ns, ns + dur_ns);
		else if (!strcmp(ph, "X") && pid == P_SRC && tid == T_CHUNKS)
			rec(t, ROW_CHUNKS, ns, ns + dur_ns);
		return;
	}
	json_t *e = json_pack("{s:s,s:o,s:i,s:i,s:o}", "ph", ph, "name", json_of_str(name), "pid", pid, "tid", tid, "ts",
			      us(ns));
	if (!strcmp(ph, "X"))
		json_set(&e, "dur", us(dur_ns));
	if (scope)
		json_set(&e, "s", json_of_str(scope));
	if (args && args->nf) {
		json_t *a = json_object();
		for (int i = 0; i < args->nf; i++)
			json_set(&a, args->f[i].k, json_of_str(args->f[i].v));
		json_set(&e, "args", a);
	}
	json_stream_item(&t->js, e);
}

static void counter(struct tl *t, const char *name, int pid, uint64_t ns, const char *key, int64_t v)
{
	if (t->plot) {
		if (pid == P_SRC && !strcmp(key, "writes"))
			rec(t, ROW_WRITES, ns, (uint64_t)v);
		return;
	}
	json_t *args = json_object();
	json_set(&args, key, json_integer(v));
	json_stream_item(&t->js, json_pack("{s:s,s:o,s:i,s:i,s:o,s:o}", "ph", "C", "name", json_of_str(name), "pid", pid,
					   "tid", 0, "ts", us(ns), "args", args));
}

static void meta(struct tl *t, const char *what, int pid, int tid, const char *name)
{
	if (t->plot)
		return;
	json_stream_item(&t->js, json_pack("{s:s,s:s,s:i,s:i,s:{s:o}}", "ph", "M", "name", what, "pid", pid, "tid", tid,
					   "args", "name", json_of_str(name)));
}

/* The writes-in-flight counter: one sample per time stamp (the last value at it). */
static void writes_flush(struct tl *t, int pid)
{
	if (t->writes_dirty[pid])
		counter(t, "RDMA WRITEs in flight", pid, t->writes_ns[pid], "writes", t->writes[pid]);
	t->writes_dirty[pid] = false;
}

static void writes_add(struct tl *t, int pid, uint64_t ns, int64_t d)
{
	if (t->writes_dirty[pid] && t->writes_ns[pid] != ns)
		writes_flush(t, pid);
	t->writes[pid] += d;
	if (t->writes[pid] < 0)
		t->writes[pid] = 0;
	t->writes_ns[pid] = ns;
	t->writes_dirty[pid] = true;
}

static void on_sim(struct tl *t, const struct tl_line *l)
{
	const char *e = l->event;
	char name[96];
	if (!strcmp(e, "setup_done")) {
		emit(t, "X", "setup", P_MIGRATION, T_PHASES, 0, l->ns, l, NULL);
		t->round_start_ns = l->ns;
	} else if (!strcmp(e, "round")) {
		snprintf(name, sizeof name, "round %s", field(l, "n") ? field(l, "n") : "?");
		emit(t, "X", name, P_MIGRATION, T_PHASES, t->round_start_ns, since(t->round_start_ns, l->ns), l, NULL);
		t->round_start_ns = l->ns;
	} else if (!strcmp(e, "sleep")) {
		uint64_t d = field_u64(l, "ns");
		t->round_start_ns = d > UINT64_MAX - l->ns ? UINT64_MAX : l->ns + d;
	} else if (!strcmp(e, "bitmap_sync")) {
		snprintf(name, sizeof name, "bitmap sync %s", field(l, "n") ? field(l, "n") : "?");
		emit(t, "i", name, P_MIGRATION, T_PHASES, l->ns, 0, l, "t");
		if (l->ns > t->round_start_ns)
			t->round_start_ns = l->ns;
	} else if (!strcmp(e, "vm_stop")) {
		emit(t, "i", "switchover: VM stopped", P_MIGRATION, T_PHASES, l->ns, 0, l, "g");
		t->vm_stopped = true;
		t->vm_stop_ns = l->ns;
		t->round_start_ns = l->ns;
	} else if (!strcmp(e, "source_completed")) {
		emit(t, "i", "source completed", P_MIGRATION, T_PHASES, l->ns, 0, l, "t");
		if (t->vm_stopped && !t->downtime_end_ns)
			t->downtime_end_ns = l->ns;
	} else if (!strcmp(e, "counters")) {
		counter(t, "pending", P_MIGRATION, l->ns, "bytes", (int64_t)field_u64(l, "pending"));
		counter(t, "bandwidth", P_MIGRATION, l->ns, "bytes/ms", (int64_t)field_u64(l, "bw_bytes_per_ms"));
		counter(t, "switchover threshold", P_MIGRATION, l->ns, "bytes", (int64_t)field_u64(l, "threshold"));
	}
}

static void span_open(struct tl *t, int pid, uint64_t ns, const char *name)
{
	if (t->n_spans[pid] == TL_SPANS)
		return;
	struct tl_span *s = &t->spans[pid][t->n_spans[pid]++];
	s->ns = ns;
	snprintf(s->name, sizeof s->name, "%s", name);
}

static void span_close(struct tl *t, int pid, const struct tl_line *l, const char *name)
{
	if (!t->n_spans[pid]) {
		emit(t, "i", name, pid, T_CHUNKS, l->ns, 0, l, "t");
		return;
	}
	uint64_t start = t->spans[pid][0].ns;
	memmove(&t->spans[pid][0], &t->spans[pid][1], (size_t)(t->n_spans[pid] - 1) * sizeof t->spans[pid][0]);
	t->n_spans[pid]--;
	emit(t, "X", name, pid, T_CHUNKS, start, since(start, l->ns), l, NULL);
}

static void on_side(struct tl *t, int pid, const struct tl_line *l)
{
	const char *e = l->event, *op = field(l, "op"), *type = field(l, "type");
	char name[128];
	if (!strcmp(e, "ctl_send") || !strcmp(e, "ctl_recv")) {
		snprintf(name, sizeof name, "%s %s", e[4] == 's' ? "send" : "recv", type ? type : "?");
		emit(t, "i", name, pid, T_CONTROL, l->ns, 0, l, "t");
		if (pid == P_SRC && e[4] == 's' && type && !strcmp(type, "register_request"))
			span_open(t, pid, l->ns, "register");
	} else if (!strcmp(e, "registered")) {
		snprintf(name, sizeof name, "chunk %s/%s", field(l, "block") ? field(l, "block") : "?",
			 field(l, "chunk") ? field(l, "chunk") : "?");
		if (pid == P_SRC)
			span_close(t, pid, l, name);
		else
			emit(t, "i", name, pid, T_CHUNKS, l->ns, 0, l, "t");
	} else if (!strcmp(e, "post_send") && op && !strcmp(op, "write")) {
		writes_add(t, pid, l->ns, 1);
	} else if (!strcmp(e, "wc") && op && !strcmp(op, "write")) {
		writes_add(t, pid, l->ns, -1);
	} else if (!strcmp(e, "fault")) {
		snprintf(name, sizeof name, "fault %s -> %s", field(l, "site") ? field(l, "site") : "?",
			 field(l, "action") ? field(l, "action") : "?");
		emit(t, "i", name, pid, T_FAULTS, l->ns, 0, l, "p");
	} else if (!strcmp(e, "fail")) {
		snprintf(name, sizeof name, "failed: %s", field(l, "cause") ? field(l, "cause") : "?");
		emit(t, "i", name, pid, T_FAULTS, l->ns, 0, l, "g");
	} else if (!strcmp(e, "completed") || !strcmp(e, "verified") || !strcmp(e, "peer_confirmed")) {
		emit(t, "i", e, pid, T_FAULTS, l->ns, 0, l, "t");
		if (!strcmp(e, "completed") && pid == P_DST && t->vm_stopped)
			t->downtime_end_ns = l->ns;
	} else if (!strcmp(e, "connect") || !strcmp(e, "connect_request") || !strcmp(e, "accept") ||
		   !strcmp(e, "cm_event") || !strcmp(e, "disconnect") || !strcmp(e, "listen") ||
		   !strcmp(e, "ep_destroy") || !strcmp(e, "connected") || !strcmp(e, "accepted")) {
		snprintf(name, sizeof name, "%s%s%s", e, type ? " " : "", type ? type : "");
		emit(t, "i", name, pid, T_CONNECTION, l->ns, 0, l, "t");
	}
}

static void header(struct tl *t)
{
	static const char *const threads[T_COUNT] = { NULL, "phases", "control messages",
		"chunks (registration)", "connection", "faults and outcome" };
	if (t->plot)
		return;
	json_stream_open(&t->js, t->f,
			 json_pack("{s:s,s:{s:s,s:s}}", "displayTimeUnit", "ms", "otherData", "generator", "migbed timeline",
				   "time", "the event log's (virtual on the model backend)"),
			 "traceEvents", "\n", ",\n", "");
	meta(t, "process_name", P_MIGRATION, 0, "migration");
	meta(t, "process_name", P_SRC, 0, vocab_side_alias(VOCAB_SIDE_SRC));
	meta(t, "process_name", P_DST, 0, vocab_side_alias(VOCAB_SIDE_DST));
	meta(t, "process_name", P_OTHER, 0, "other");
	for (int p = P_MIGRATION; p < P_COUNT; p++) {
		json_stream_item(&t->js, json_pack("{s:s,s:s,s:i,s:i,s:{s:i}}", "ph", "M", "name", "process_sort_index",
						   "pid", p, "tid", 0, "args", "sort_index", p));
		for (int th = T_PHASES; th < T_COUNT; th++)
			if (th == T_PHASES ? p == P_MIGRATION : p != P_MIGRATION)
				meta(t, "thread_name", p, th, threads[th]);
	}
}

/* Reads the log into t (its output: JSON on t->f, or records in plot mode). 0 or -errno/-EINVAL. */
static int tl_read(struct tl *t, const char *events_path, struct diag *d)
{
	FILE *in = fopen(events_path, "r");
	if (!in) {
		int e = errno;
		diag_set(d, "%s: cannot read the event log: %s", events_path, strerror(e));
		return -e;
	}
	header(t);
	char *buf = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	ssize_t n;
	int rc = 0;
	while ((n = getline(&buf, &cap, in)) >= 0) {
		lineno++;
		if (n > 0 && buf[n - 1] == '\n')
			buf[--n] = '\0';
		struct tl_line l;
		if (!parse_line(buf, &l)) {
			rc = diag_at(d, events_path, lineno, "not an event-log line (want 'SECONDS.NANOSECONDS SIDE EVENT [KEY=VALUE ...]')");
			break;
		}
		if (l.ns > t->end_ns)
			t->end_ns = l.ns;
		int pid = side_pid(l.side);
		if (pid == P_MIGRATION)
			on_sim(t, &l);
		else
			on_side(t, pid, &l);
	}
	if (!rc && ferror(in))
		rc = diag_set(d, "%s: cannot read the event log: %s", events_path, strerror(EIO));
	if (!rc) {
		for (int p = P_MIGRATION; p < P_COUNT; p++)
			writes_flush(t, p);
		if (t->vm_stopped) {
			uint64_t end = t->downtime_end_ns ? t->downtime_end_ns : t->end_ns;
			emit(t, "X", "downtime (VM stopped)", P_MIGRATION, T_PHASES, t->vm_stop_ns,
			     since(t->vm_stop_ns, end), NULL, NULL);
		}
	}
	free(buf);
	fclose(in);
	if (!rc && t->oom)
		rc = diag_set(d, "%s: out of memory", events_path);
	return rc;
}

int timeline_write(const char *events_path, const char *out_path, struct diag *d)
{
	struct out_file out = { 0 };
	int rc = out_file_open(&out, out_path, d);
	if (rc)
		return rc;
	struct tl *t = calloc(1, sizeof *t);
	if (!t) {
		out_file_abort(&out);
		diag_set(d, "%s: out of memory", out_path);
		return -ENOMEM;
	}
	t->f = out.f;
	rc = tl_read(t, events_path, d);
	if (!rc && json_stream_close(&t->js, "\n", json_object()) && !ferror(t->f)) {
		diag_set(d, "%s: out of memory writing the timeline", events_path);
		rc = -ENOMEM;
	}
	free(t);
	if (rc) {
		out_file_abort(&out);
		return rc;
	}
	return out_file_commit(&out, d);
}

static void ms(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%06u", ns / 1000000, (unsigned)(ns % 1000000));
}

int timeline_plot_data(const char *events_path, FILE *f, struct diag *d)
{
	struct tl *t = calloc(1, sizeof *t);
	if (!t) {
		diag_set(d, "%s: out of memory", events_path);
		return -ENOMEM;
	}
	t->plot = true;
	int rc = tl_read(t, events_path, d);
	if (!rc) {
		/* the spans: start end row (rows: 1 downtime, 2 the source's chunk exchanges, 3 setup,
		 * 4 rounds); then the writes in flight: time count, as steps */
		fprintf(f, "$spans << EOD\n");
		for (size_t i = 0; i < t->n_recs; i++) {
			if (t->recs[i].row == ROW_WRITES)
				continue;
			ms(f, t->recs[i].a);
			fputc(' ', f);
			ms(f, t->recs[i].b);
			fprintf(f, " %d\n", t->recs[i].row);
		}
		fprintf(f, "EOD\n$writes << EOD\n0 0\n");
		for (size_t i = 0; i < t->n_recs; i++) {
			if (t->recs[i].row != ROW_WRITES)
				continue;
			ms(f, t->recs[i].a);
			fprintf(f, " %" PRIu64 "\n", t->recs[i].b);
		}
		ms(f, t->end_ns);
		fprintf(f, " 0\nEOD\nend_ms = ");
		ms(f, t->end_ns);
		fputc('\n', f);
	}
	free(t->recs);
	free(t);
	return rc;
}
