/* SPDX-License-Identifier: MIT */
/* fuzz_explain - QEMU logs as `migbed explain` reads them (run/explain.h): any bytes as one or
 * two logs (text, libvirt, or query-migrate JSON when the first byte is '{'), ranked; every
 * cause, line and unplaced line is walked. And the cause table's pattern matcher on any
 * (format, text) pair (explain_row_match, explain_row_fill): an answer, never a crash, and a
 * fill that fits its buffer. */
#include "fuzz/fuzz.h"

#include <string.h>

#include "run/explain.h"

/* Physical lines of each log added (a line number cited must be one of them). */
static unsigned long physical[2];
static size_t n_added;

static void walk(struct explain *x)
{
	size_t n = explain_rank(x);
	for (size_t i = 0; i < n; i++) {
		const struct explain_cause *c = explain_cause_at(x, i);
		FUZZ_CHECK(c && c->cause > 0 && c->score > 0, "cause %zu of %zu", i, n);
		size_t kept = c->n_lines < EXPLAIN_KEEP_LINES ? c->n_lines : EXPLAIN_KEEP_LINES;
		for (size_t j = 0; j < kept; j++) {
			const struct explain_line *l = explain_cause_line(x, i, j);
			FUZZ_CHECK(l && l->text && l->row && l->fields && strlen(l->text) <= EXPLAIN_LINE_MAX,
				   "cause %zu line %zu", i, j);
			FUZZ_CHECK(l->log >= 0 && (size_t)l->log < explain_log_count(x), "line of log %d", l->log);
		}
	}
	for (size_t k = 0; k < explain_log_count(x); k++) {
		bool inferred;
		unsigned long placed = 0, lines = explain_log_lines(x, k, &placed), no;
		FUZZ_CHECK(placed <= lines, "log %zu: %lu of %lu lines placed", k, placed, lines);
		FUZZ_CHECK(explain_log_name(x, k) != NULL, "log %zu has no name", k);
		explain_log_side(x, k, &inferred);
		for (size_t j = 0; j <= EXPLAIN_KEEP_UNPLACED && explain_log_unplaced(x, k, j, &no); j++)
			FUZZ_CHECK(no >= 1 && no <= physical[k], "unplaced line %lu of %lu", no, physical[k]);
		for (size_t j = 0; explain_log_line(x, k, j, &no); j++)
			FUZZ_CHECK(no >= 1 && no <= physical[k], "matched line %lu of %lu", no, physical[k]);
	}
}

static void add(struct explain *x, const char *name, int side, const uint8_t *p, size_t n)
{
	FILE *f = fmemopen(n ? (void *)p : (void *)"", n ? n : 1, "r");
	struct diag d = { 0 };
	unsigned long lines = 1;
	for (size_t i = 0; i < n; i++)
		lines += p[i] == '\n';
	physical[n_added++ % 2] = lines;
	if (!f)
		abort();
	if (n == 0)
		fgetc(f);   /* an empty log */
	int rc = explain_add(x, name, side, f, &d);
	FUZZ_CHECK(rc == 0 || d.msg[0], "explain_add = %d without a message", rc);
	fclose(f);
}

static void matcher(const uint8_t *p, size_t n)
{
	const uint8_t *nl = memchr(p, '\n', n);
	if (!nl)
		return;
	char *row = fuzz_cstr(p, (size_t)(nl - p));
	char *text = fuzz_cstr(nl + 1, n - (size_t)(nl - p) - 1);
	char fields[256], out[64];
	int m = explain_row_match(row, text, fields, sizeof fields);
	FUZZ_CHECK(m >= -1 && m <= 1 && (m != 1 || strlen(fields) < sizeof fields), "match = %d", m);
	memset(out, 0, sizeof out);
	int fl = explain_row_fill(row, text, out, sizeof out);
	FUZZ_CHECK(fl >= -1 && fl <= 1 && memchr(out, '\0', sizeof out), "fill = %d", fl);
	free(row);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t mode = fz_u8(&f);
	if (mode & 0x80) {
		matcher(f.p, f.n);
		return 0;
	}
	struct explain *x = explain_new();
	if (!x)
		abort();
	n_added = 0;
	int side = (int)(mode % 3) - 1;   /* any, src, dst */
	if (mode & 4) {   /* two logs: split at the first form feed */
		const uint8_t *ff = memchr(f.p, '\f', f.n);
		size_t a = ff ? (size_t)(ff - f.p) : f.n / 2;
		add(x, "src.log", EXPLAIN_SIDE_ANY, f.p, a);
		add(x, "dst.log", side, f.p + a, f.n - a);
	} else {
		add(x, "qemu.log", side, f.p, f.n);
	}
	walk(x);
	explain_free(x);
	return 0;
}
