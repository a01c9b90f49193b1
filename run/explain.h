/* SPDX-License-Identifier: MIT */
/* explain - naming the migbed causes a QEMU log fits (`migbed explain`, docs/explain.md).
 *
 * The patterns are the cause table's qemu column (vocab/cause.h), split on " | ": a plain row
 * is a printf format of QEMU's rdma.c whose conversions (%d %u %lu %x %s ...) match fields;
 * "[7.2 observed dst, NOTE] text" is a line a real QEMU 7.2 printed on that side (exact text);
 * "[8.2 read dst, NOTE] FORMAT" is a format of QEMU 8.2's source that version prints on that
 * side (a printf format, as a plain row, with a version and a side);
 * "(trace) text" and "(QEMU 7.2) text" are patterns with a tag; a row wholly in parentheses is
 * commentary. A pattern matches anywhere in a line, so prefixes ("qemu-system-x86_64: ",
 * libvirt and -msg timestamps, trace event names) and glued lines need no special case.
 *
 * Scoring (per line, then summed per cause): the most specific reading(s) of a line take it;
 * a reading weighs its literal characters, +20 when it is an observed row of the log's own
 * side (+10 a read row; half of either when the log's side is unknown), x3 when the line names a work-completion status ("ibv_poll_cq wc.status="), a
 * quarter when it is what every failure ends with ("load of migration failed", "RDMA is in an
 * error state ...", "Early error. Sending error."); every
 * cause that reads a line equally well gets its whole weight (the log cannot tell them apart,
 * so neither does the score). Rank: score, then fewer of the cause's observed rows for the
 * logs' sides missing from them (QEMU would have printed those too), then PRIMARY
 * before CONSEQUENCE, then table order. Lines are bounded (EXPLAIN_LINE_MAX bytes each, longer
 * ones cut), and so is what is kept per cause and per log; nothing is printed here. */
#ifndef MIGBED_RUN_EXPLAIN_H
#define MIGBED_RUN_EXPLAIN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "sim/diag.h"

#define EXPLAIN_LINE_MAX 1024        /* bytes of a line that are matched (the rest is cut) */
#define EXPLAIN_LOGS_MAX 8
#define EXPLAIN_KEEP_LINES 16        /* matched lines kept per cause */
#define EXPLAIN_KEEP_UNPLACED 64     /* unplaced lines kept per log */
#define EXPLAIN_SIDE_ANY (-1)        /* a log whose side is not given: inferred */

struct explain;

/* One matched log line, as a cause reads it. */
struct explain_line {
	int log;                     /* index of the log (explain_log) */
	unsigned long line_no;
	const char *text;            /* the line, without its trailing newline */
	const char *row;             /* the cause table's row it fits ("[7.2 observed dst] ...") */
	const char *fields;          /* the format's fields, ", "-separated ("1, 2"); "" if none */
	bool observed;               /* an observed row (a real QEMU's exact line) */
	bool read;                   /* a read row (a format of a QEMU version's source) */
};

/* One cause the logs fit. */
struct explain_cause {
	int cause;                   /* positive cause code */
	int side;                    /* enum vocab_side of the log that weighs most; -1 unknown */
	long score;
	size_t n_lines;              /* lines read as this cause (at most EXPLAIN_KEEP_LINES kept) */
	const char *versions;        /* "7.2 8.2" (observed and read rows' versions); "" if none */
	const char *notes;           /* those rows' situations ("wrong rkey"); "" if none */
	bool wc_status_lines;        /* a line read as it is QEMU's "ibv_poll_cq ..." (<= 8.1 prints it) */
	size_t missing;              /* its observed rows for the logs' sides that no line matched */
};

/* A new, empty explanation; NULL when out of memory. */
struct explain *explain_new(void);
void explain_free(struct explain *x);

/* Read one log (a QEMU stderr, a libvirt log, or query-migrate/QMP JSON: a file whose first
 * non-blank byte is '{' is read for its "error-desc" and "desc" strings). name is what lines
 * are cited by; side is enum vocab_side or EXPLAIN_SIDE_ANY (inferred in explain_rank).
 * 0, or -EINVAL/-E2BIG with d set ("NAME: ..."): a read error, too many logs, or a JSON log
 * that is not JSON ("NAME:LINE:COLUMN: ...", jansson's words; documents one after another are
 * JSON). */
int explain_add(struct explain *x, const char *name, int side, FILE *f, struct diag *d);

/* Infer the sides not given, match, score and rank. The number of causes found. Logs added
 * without a side and with no content to tell, when there are exactly two, are taken as
 * source then destination. Call once, after every explain_add. */
size_t explain_rank(struct explain *x);

/* The i-th cause, best first (i < explain_rank's count). */
const struct explain_cause *explain_cause_at(const struct explain *x, size_t i);
/* Its j-th kept line (j < min(n_lines, EXPLAIN_KEEP_LINES)). */
const struct explain_line *explain_cause_line(const struct explain *x, size_t i, size_t j);

/* Logs: count, name, side (after explain_rank: inferred or given; -1 if unknown), whether
 * inferred, lines read, lines placed (read as some cause). */
size_t explain_log_count(const struct explain *x);
const char *explain_log_name(const struct explain *x, size_t k);
int explain_log_side(const struct explain *x, size_t k, bool *inferred);
unsigned long explain_log_lines(const struct explain *x, size_t k, unsigned long *placed);
/* Its j-th unplaced line (blank lines are not counted): text and line number; NULL past the
 * end (at most EXPLAIN_KEEP_UNPLACED are kept). */
const char *explain_log_unplaced(const struct explain *x, size_t k, size_t j, unsigned long *line_no);

/* The k-th log's j-th matched line (any cause, any side), in order; NULL past the end. */
const char *explain_log_line(const struct explain *x, size_t k, size_t j, unsigned long *line_no);

/* For the unit test and `migbed explain`'s quoting: does the cause table row (one " | "
 * piece, tag included) match text? Fields go to fields (", "-separated). 1 yes, 0 no, -1 the
 * row is commentary. Uses one static pattern: not for concurrent use. */
int explain_row_match(const char *row, const char *text, char *fields, size_t n);

/* A format (a plain row of the table, or a read row's text without its tag) filled with the
 * values of the first place text matches it: the matched part of text, written to out (n
 * bytes, truncated); a last %s stops before a " (" (migbed's own annotation). 1 filled, 0 the
 * text does not match or a %d's value is out of int's range (what QEMU's %d of a larger
 * uint32 prints is not established; out untouched), -1 not a format. Same static pattern as above. */
int explain_row_fill(const char *format, const char *text, char *out, size_t n);

/* How many steps (a token tried at an offset) the last row match or fill took: the matcher's
 * work is bounded by tokens x offsets, whatever the row and line (for its tests). */
unsigned long explain_match_steps(void);

#endif
