/* SPDX-License-Identifier: MIT */
/* evlog - the run's event log: one compact line per event.
 *
 *   <seconds>.<9-digit ns> <side> <event>[ key=value ...]
 *   0.000123456 src reg_mr block=0 chunk=3 bytes=1048576
 *
 * Time is the virtual clock, so the same inputs and seed give a byte-identical log on the
 * model backend. Sides are short tokens: "src", "dst", "sim", "wire". Field values never
 * contain spaces. The log is kept in memory-bounded buffered I/O and written to its file
 * (or discarded when opened with a NULL path); counts per event name are always kept. */
#ifndef MIGBED_SIM_EVLOG_H
#define MIGBED_SIM_EVLOG_H
#include <stdint.h>
#include "sim/vclock.h"

typedef struct evlog evlog;

/* path NULL: count only. The file follows sim/outfile.h's rules ("-" is standard output; a regular
 * file is written as a temporary beside it and renamed by evlog_close; a device or FIFO in
 * place); an unwritable path fails here, before anything runs.
 * clk is read at every emit and must outlive the log. 0, -EINVAL, -ENOMEM or -errno. */
int evlog_open(const char *path, const vclock *clk, evlog **out);
/* One line at the clock's current time. side and event are single tokens; fmt (NULL for
 * none) gives the " key=value ..." fields. Never fails the caller (see evlog_close). */
void evlog_emit(evlog *ev, const char *side, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Re-point the log at another clock (e.g. the one a transport world owns). */
void evlog_set_clock(evlog *ev, const vclock *clk);
/* Events emitted so far (all names). */
uint64_t evlog_count(const evlog *ev);
/* Events emitted so far under this event name (0 if never). */
uint64_t evlog_count_event(const evlog *ev, const char *event);
/* Flush, rename into place; 0 or -errno (also the first write or allocation error met by
 * evlog_emit; the partial file is then removed). Frees ev. */
int evlog_close(evlog *ev);
/* Drop the partial file; frees ev. */
void evlog_abort(evlog *ev);

/* A watch: fn(arg, side, event, nth) is called once, right after the nth line of this side
 * and event was emitted (nth >= 1; side "*" matches any side). One watch per log; a new one
 * replaces the old. It is how a test pauses a run at a point of the migration (`--pause-at`)
 * instead of guessing a time. The log's own output does not change. 0 or -EINVAL. */
typedef void (*evlog_watch_fn)(void *arg, const char *side, const char *event, uint64_t nth);
int evlog_watch(evlog *ev, const char *side, const char *event, uint64_t nth, evlog_watch_fn fn,
		void *arg);

#endif
