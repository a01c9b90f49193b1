/* SPDX-License-Identifier: MIT */
/* report - the CI formats of the commands that run many cases (`migbed run DIR...`, torture,
 * swarm): JUnit XML and TAP version 13, each with its one escaper.
 *
 * A case is what a CI system shows as one test: a name, pass / failure / error, the failure's
 * type and message (the message names what a user acts on: cause, side, the replay or bundle
 * command), a body, the system-out line, and for TAP the YAML diagnostics under the test line.
 *
 * Contract:
 *   - JUnit: report_junit_begin, then report_junit_case per case (kept in memory, in order),
 *     then report_junit_end writes the whole document (<testsuites> and one <testsuite> whose
 *     counts are the cases') to a FILE. Text and attributes are escaped for XML 1.0 (control
 *     characters but tab and newline become '?').
 *   - TAP: report_tap_head ("TAP version 13", and the plan when known), report_tap_case per
 *     case as it ends (streamed), report_tap_plan when the count was not known at the head (a
 *     trailing plan). A '#' in a test name is escaped ("\#": not a directive). */
#ifndef MIGBED_CLI_REPORT_H
#define MIGBED_CLI_REPORT_H
#include <stddef.h>
#include <stdio.h>
#include "run/out_file.h"
#include "sim/diag.h"

enum report_result { REPORT_PASS, REPORT_FAIL, REPORT_ERROR };

struct report_field {            /* one YAML line under a TAP test line: key: 'value' */
	const char *key, *value;
};

#define REPORT_FIELDS_MAX 8

struct report_case {
	const char *classname;       /* "migbed.run", "migbed.torture", "migbed.swarm" */
	const char *name;
	const char *file;            /* NULL: no file attribute */
	enum report_result result;
	const char *type;            /* failure / error: its type attribute */
	const char *message;         /* failure / error: its message attribute */
	const char *text;            /* failure / error: its body; NULL: an empty element */
	const char *out;             /* <system-out>; NULL: none */
	double secs;                 /* < 0: not measured (TAP leaves it out, JUnit says 0) */
	struct report_field fields[REPORT_FIELDS_MAX];   /* TAP diagnostics, key NULL ends them */
};

struct report_junit {
	FILE *body;                  /* the testcases so far (open_memstream) */
	char *buf;
	size_t len;
	size_t tests, failures, errors;
};

/* 0, or -errno (out of memory). */
int report_junit_begin(struct report_junit *j);
void report_junit_case(struct report_junit *j, const struct report_case *c);
/* The document, suite named `suite`, total time secs, into f. 0, or -EIO / -ENOMEM. */
int report_junit_end(struct report_junit *j, FILE *f, const char *suite, double secs);
void report_junit_free(struct report_junit *j);

/* "TAP version 13" and, when n_planned is not 0, the plan "1..N". */
void report_tap_head(FILE *f, size_t n_planned);
/* Test number i (1-based). */
void report_tap_case(FILE *f, size_t i, const struct report_case *c);
void report_tap_plan(FILE *f, size_t n);

/* ---- the cases of torture and swarm ---------------------------------------------------------- */

struct torture_run;
struct swarm_run;

/* The text a case points into (one per case being written). */
struct report_buf {
	char name[160];
	char message[3400];
	char out[2600];
	char fault[160];
	char replay[2200];
};

/* A torture rerun: named SITE-SIDE-CALL (its bundle's folder under bundles); a proper one
 * passes, an ERROR is an error, any other verdict a failure whose message names the verdict,
 * the cause and its side, the fault, and `migbed replay BUNDLES/NAME`. */
void report_torture_case(struct report_case *c, struct report_buf *b, const struct torture_run *r,
			 const char *scenario, const char *bundles);
/* A swarm run: named seed-N; no finding passes, the class ERROR is an error, any other finding
 * a failure whose message names the class, the cause and its side, the replay (`migbed run`
 * and the plan's options) and the bundle (`migbed replay DIR`, when one was written). */
void report_swarm_case(struct report_case *c, struct report_buf *b, const struct swarm_run *r,
		       const char *bundle, double secs);

/* ---- a stream of cases to --junit FILE and/or TAP ---------------------------------------------- */

/* Cases as they end: TAP streamed to `tap` (the plan trailing: the count is known at the end),
 * JUnit kept and written to the file at report_sink_close. The file is opened by
 * report_sink_open (a path that cannot be written is refused before any case). */
struct report_sink {
	const char *suite;
	struct out_file junit_file;
	struct report_junit junit;
	FILE *tap;                   /* NULL: no TAP */
	size_t n;
	struct report_buf *buf;      /* for the caller's report_*_case */
};
/* 0, or -errno with d set (nothing created). junit_path NULL: no JUnit. */
int report_sink_open(struct report_sink *s, const char *suite, const char *junit_path, FILE *tap, struct diag *d);
void report_sink_case(struct report_sink *s, const struct report_case *c);
/* The TAP plan; the JUnit file written and committed. 0, or -errno with d set. */
int report_sink_close(struct report_sink *s, double secs, struct diag *d);
/* Nothing more is written: no temporary is left. A no-op after report_sink_close. */
void report_sink_abort(struct report_sink *s);
/* The JUnit file being written ("" none): for a signal handler that must remove it. */
const char *report_sink_writing(const struct report_sink *s);

/* The escapers, for tests: XML text/attribute, YAML single-quoted scalar (a newline a space). */
void report_xml_text(FILE *f, const char *s);
void report_yaml_quoted(FILE *f, const char *s);

#endif
