/* SPDX-License-Identifier: MIT */
/* evlog - the run's event log (see evlog.h).
 *
 * Lines go through a large stdio buffer to PATH.tmp; evlog_close flushes, fsyncs and renames
 * it to PATH (to the file PATH is a symlink to: the link stays). "-" and the file standard
 * output already is are standard output; an existing file that is not a regular one (a
 * device, a FIFO) is written in place, never renamed over. Counts per event name live in a
 * small open-addressing hash table (the file rules are sim/outfile.h's). Neither emitting
 * nor counting can fail the caller: the first error is kept and returned by evlog_close. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "sim/evlog.h"
#include "sim/outfile.h"

#define EVLOG_BUF_BYTES (1u << 20)
#define EVLOG_TABLE_MIN 64u

struct evlog_count {
	char *name;                       /* NULL: free slot */
	uint64_t n;
};

struct evlog {
	const vclock *clk;
	FILE *f;                          /* NULL: count only; may be stdout (not closed) */
	struct outfile out;               /* where f goes (sim/outfile.h's rules) */
	char *buf;                        /* stdio buffer of f */
	uint64_t total;
	struct evlog_count *counts;
	size_t cap;                       /* power of two */
	size_t used;
	int err;                          /* first error (negative errno), 0 if none */
	struct {                          /* evlog_watch: fn NULL = none */
		char side[16], event[48];
		uint64_t nth, seen;
		evlog_watch_fn fn;
		void *arg;
	} watch;
};

static uint64_t name_hash(const char *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);           /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
	return h;
}

static struct evlog_count *slot_of(struct evlog_count *t, size_t cap, const char *name)
{
	size_t i = (size_t)name_hash(name) & (cap - 1);

	for (size_t probe = 0; probe < cap; probe++, i = (i + 1) & (cap - 1)) {
		if (!t[i].name || !strcmp(t[i].name, name))
			return &t[i];
	}
	return NULL;                      /* full; the table never is (load <= 1/2) */
}

static int table_grow(evlog *ev)
{
	size_t cap = ev->cap ? ev->cap * 2 : EVLOG_TABLE_MIN;
	struct evlog_count *t = calloc(cap, sizeof *t);

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < ev->cap; i++) {
		if (!ev->counts[i].name)
			continue;
		struct evlog_count *s = slot_of(t, cap, ev->counts[i].name);
		assert(s && !s->name);
		*s = ev->counts[i];
	}
	free(ev->counts);
	ev->counts = t;
	ev->cap = cap;
	return 0;
}

static void count_event(evlog *ev, const char *event)
{
	struct evlog_count *s;

	ev->total++;
	if ((ev->used + 1) * 2 > ev->cap && table_grow(ev) < 0)
		goto fail;
	s = slot_of(ev->counts, ev->cap, event);
	assert(s);
	if (!s->name) {
		s->name = strdup(event);
		if (!s->name)
			goto fail;
		ev->used++;
	}
	s->n++;
	return;
fail:
	if (!ev->err)
		ev->err = -ENOMEM;
}

static void evlog_free(evlog *ev)
{
	for (size_t i = 0; i < ev->cap; i++)
		free(ev->counts[i].name);
	free(ev->counts);
	free(ev->buf);
	free(ev);
}

/* path under sim/outfile.h's rules, on a stdio FILE with a large buffer. 0 or -errno. */
static int open_file(evlog *ev, const char *path)
{
	int rc = outfile_open(&ev->out, path);

	if (rc)
		return rc;
	if (ev->out.mode == OUTFILE_STDOUT) {
		ev->f = stdout;
		return 0;
	}
	ev->buf = malloc(EVLOG_BUF_BYTES);
	if (!ev->buf)
		return -ENOMEM;
	ev->f = fdopen(ev->out.fd, "w");
	if (!ev->f)
		return -errno;
	if (setvbuf(ev->f, ev->buf, _IOFBF, EVLOG_BUF_BYTES) != 0)
		return -EIO;
	return 0;
}

int evlog_open(const char *path, const vclock *clk, evlog **out)
{
	evlog *ev;
	int rc;

	if (!clk || !out || (path && !*path))
		return -EINVAL;
	ev = calloc(1, sizeof *ev);
	if (!ev)
		return -ENOMEM;
	ev->clk = clk;
	rc = table_grow(ev);
	if (rc == 0 && path)
		rc = open_file(ev, path);
	if (rc < 0)
		goto out;
	*out = ev;
	return 0;
out:
	evlog_abort(ev);
	return rc;
}

/* A side or event token: non-empty, no spaces or line breaks (asserted: callers pass
 * literals). */
static int is_token(const char *s)
{
	return s && *s && !strpbrk(s, " \t\r\n");
}

static void check_watch(evlog *ev, const char *side, const char *event)
{
	if (!ev->watch.fn || ev->watch.seen >= ev->watch.nth || strcmp(event, ev->watch.event) ||
	    (strcmp(ev->watch.side, "*") && strcmp(side, ev->watch.side)))
		return;
	if (++ev->watch.seen == ev->watch.nth)
		ev->watch.fn(ev->watch.arg, side, event, ev->watch.nth);
}

void evlog_emit(evlog *ev, const char *side, const char *event, const char *fmt, ...)
{
	uint64_t now_ns;
	va_list ap;

	assert(ev);
	assert(is_token(side) && is_token(event));
	count_event(ev, event);
	if (!ev->f)
		goto watch;
	now_ns = vclock_now_ns(ev->clk);
	if (fprintf(ev->f, "%llu.%09llu %s %s", (unsigned long long)(now_ns / 1000000000u),
		    (unsigned long long)(now_ns % 1000000000u), side, event) < 0)
		goto fail;
	if (fmt && *fmt) {
		if (putc(' ', ev->f) == EOF)
			goto fail;
		va_start(ap, fmt);
		int n = vfprintf(ev->f, fmt, ap);
		va_end(ap);
		if (n < 0)
			goto fail;
	}
	if (putc('\n', ev->f) != EOF)
		goto watch;
fail:
	if (!ev->err)
		ev->err = errno ? -errno : -EIO;
watch:
	check_watch(ev, side, event);
}

int evlog_watch(evlog *ev, const char *side, const char *event, uint64_t nth, evlog_watch_fn fn,
		void *arg)
{
	if (!ev || !fn || nth == 0 || !is_token(side) || !is_token(event) ||
	    strlen(side) >= sizeof ev->watch.side || strlen(event) >= sizeof ev->watch.event)
		return -EINVAL;
	strcpy(ev->watch.side, side);
	strcpy(ev->watch.event, event);
	ev->watch.nth = nth;
	ev->watch.seen = 0;
	ev->watch.fn = fn;
	ev->watch.arg = arg;
	return 0;
}

void evlog_set_clock(evlog *ev, const vclock *clk)
{
	assert(ev && clk);
	ev->clk = clk;
}

uint64_t evlog_count(const evlog *ev)
{
	return ev ? ev->total : 0;
}

uint64_t evlog_count_event(const evlog *ev, const char *event)
{
	const struct evlog_count *s;

	if (!ev || !event)
		return 0;
	s = slot_of(ev->counts, ev->cap, event);
	return s && s->name ? s->n : 0;
}

/* Flush, sync (a renamed temporary), close, rename into place: 0 or the first -errno. */
static int finish_file(evlog *ev)
{
	int rc = 0;

	if (fflush(ev->f) != 0 || ferror(ev->f))
		rc = -(errno ? errno : EIO);
	if (ev->f != stdout) {
		if (rc == 0 && ev->out.mode == OUTFILE_RENAME && fsync(fileno(ev->f)) != 0)
			rc = -errno;
		if (fclose(ev->f) != 0 && rc == 0)
			rc = -(errno ? errno : EIO);
		ev->out.fd = -1;
	}
	ev->f = NULL;
	if (rc == 0 && ev->err)
		rc = ev->err;
	if (rc) {
		outfile_abort(&ev->out);
		return rc;
	}
	return outfile_commit(&ev->out);
}

int evlog_close(evlog *ev)
{
	int rc;

	if (!ev)
		return 0;
	rc = ev->f ? finish_file(ev) : ev->err;
	evlog_free(ev);
	return rc;
}

void evlog_abort(evlog *ev)
{
	if (!ev)
		return;
	if (ev->f == stdout)
		fflush(stdout);
	else if (ev->f) {
		fclose(ev->f);
		ev->out.fd = -1;
	}
	outfile_abort(&ev->out);
	evlog_free(ev);
}
