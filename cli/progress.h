/* SPDX-License-Identifier: MIT */
/* progress - the status line of long work on a terminal (`migbed run`, source, dest, trace gen/stat,
 * torture, swarm, sweep, shrink, record, calibrate): one line on standard error, rewritten in
 * place ("\r" ... erase to the end of the line) at most once a second of wall time, ended by a
 * newline when the work ends.
 *
 * Contract:
 *   - On when standard error is a terminal, or MIGBED_PROGRESS=1 (tests, `script` recordings);
 *     off with --quiet (the caller's quiet), with MIGBED_PROGRESS=0, or when standard error is
 *     not a terminal. Off, every call is a no-op: nothing is written.
 *   - MIGBED_PROGRESS_INTERVAL_MS (default 1000) sets the interval between lines; 0 makes
 *     every progress_due true (for tests of short work).
 *   - The first line is due one interval after progress_init: work shorter than that prints
 *     none. progress_end writes the final newline only when a line was shown.
 *   - Wall time is read here, never in sim/ or run/: the work reports its state through a
 *     callback and stays a pure function of its inputs. */
#ifndef MIGBED_CLI_PROGRESS_H
#define MIGBED_CLI_PROGRESS_H
#include <stdbool.h>
#include <stdio.h>

struct progress {
	bool on;
	bool shown;                  /* a line is on the terminal (progress_end ends it) */
	double interval_s;
	double next_s;               /* monotonic time the next line is due */
};

/* Is progress wanted at all (stderr a terminal or MIGBED_PROGRESS=1, and not quiet)? */
bool progress_enabled(bool quiet);
void progress_init(struct progress *p, bool quiet);
/* On, and the interval has passed since the last line (or since progress_init). */
bool progress_due(struct progress *p);
/* The status line (printf format), shown now; the next one is due an interval later. */
void progress_show(struct progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Before a result line to out: when out is a terminal, erase the line shown (the next
 * progress_show draws it again); else leave it. */
void progress_clear(struct progress *p, FILE *out);
/* The work ended: a newline after the last line shown (nothing when none was). */
void progress_end(struct progress *p);

/* A migration's line, for `run`, `source` (the engine's: "WHO: round R, remaining ...") and
 * `dest` (its own side: "dest: registrations N, pinned ... MiB, ..."): progress_migration
 * sets up p (quiet: off) and hooks it into c's engine (source, run) and into side (dest; NULL
 * for the others). */
struct runcfg;
struct run_side;
struct migration_progress {
	struct progress p;
	const char *who;             /* "run", "source", "dest" */
};
void progress_migration(struct migration_progress *mp, const char *who, struct runcfg *c, struct run_side *side);

#endif
