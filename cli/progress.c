/* SPDX-License-Identifier: MIT */
/* progress - the status line of long work on a terminal (cli/progress.h). */
#include "cli/progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/runcfg.h"
#include "run/engine.h"
#include "run/run.h"

#define PROGRESS_INTERVAL_MS 1000.0
#define PROGRESS_INTERVAL_MS_MAX 3600000.0

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool progress_enabled(bool quiet)
{
	const char *env = getenv("MIGBED_PROGRESS");
	if (quiet || (env && !strcmp(env, "0")))
		return false;
	return (env && !strcmp(env, "1")) || isatty(STDERR_FILENO);
}

static double interval_s(void)
{
	const char *env = getenv("MIGBED_PROGRESS_INTERVAL_MS");
	char *end;
	if (!env || !*env)
		return PROGRESS_INTERVAL_MS / 1000.0;
	double ms = strtod(env, &end);
	if (*end || !(ms >= 0.0) || ms > PROGRESS_INTERVAL_MS_MAX)
		return PROGRESS_INTERVAL_MS / 1000.0;   /* a test knob: a bad value is the default */
	return ms / 1000.0;
}

void progress_init(struct progress *p, bool quiet)
{
	*p = (struct progress){ .on = progress_enabled(quiet) };
	if (p->on) {
		p->interval_s = interval_s();
		p->next_s = now_s() + p->interval_s;
	}
}

bool progress_due(struct progress *p)
{
	return p->on && now_s() >= p->next_s;
}

void progress_show(struct progress *p, const char *fmt, ...)
{
	va_list ap;
	if (!p->on)
		return;
	fputc('\r', stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\033[K", stderr);
	fflush(stderr);
	p->shown = true;
	p->next_s = now_s() + p->interval_s;
}

void progress_end(struct progress *p)
{
	if (p->on && p->shown)
		fputc('\n', stderr);
	p->shown = false;
}

void progress_clear(struct progress *p, FILE *out)
{
	if (!p->on || !p->shown || !isatty(fileno(out)))
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = false;
}

/* The engine's state, as HMP `info migrate` words it. */
static void show_engine(void *arg, const struct engine_progress *e)
{
	struct migration_progress *mp = arg;
	const double mib = 1024.0 * 1024.0;
	if (!progress_due(&mp->p))
		return;
	progress_show(&mp->p, "%s: round %llu, remaining %.1f MiB, transferred %.1f MiB, dirty-pages-rate %llu pages/s, "
		      "expected downtime %llu ms, virtual time %.1f s", mp->who, (unsigned long long)e->round,
		      (double)e->remaining_bytes / mib, (double)e->transferred_bytes / mib,
		      (unsigned long long)e->dirty_pages_rate, (unsigned long long)e->expected_downtime_ms,
		      (double)e->virtual_ns / 1e9);
}

/* A destination's own state: it sees registrations, pins and control messages, not the
 * source's rounds. */
static void show_dst(void *arg, const struct run_dst_progress *d)
{
	struct migration_progress *mp = arg;
	const double mib = 1024.0 * 1024.0;
	if (!progress_due(&mp->p))
		return;
	if (!d->connected)
		progress_show(&mp->p, "%s: waiting for the source", mp->who);
	else
		progress_show(&mp->p, "%s: registrations %llu, pinned %.1f MiB, control messages received %llu, "
			      "stream %.1f MiB", mp->who, (unsigned long long)d->registrations,
			      (double)d->pinned_bytes / mib, (unsigned long long)d->messages_received,
			      (double)d->file_bytes / mib);
}

void progress_migration(struct migration_progress *mp, const char *who, struct runcfg *c, struct run_side *side)
{
	mp->who = who;
	progress_init(&mp->p, c->quiet);
	c->eng.progress = mp->p.on ? show_engine : NULL;
	c->eng.progress_arg = mp;
	if (side) {
		side->dst_progress = mp->p.on ? show_dst : NULL;
		side->progress_arg = mp;
	}
}
