/* SPDX-License-Identifier: MIT */
/* explain_test - the cause table's QEMU messages as patterns: printf fields, observed rows,
 * tags and commentary; prefixes and glued lines; sides given, inferred and by position;
 * JSON error-desc; ranking (specificity, consequences after primaries); unplaced lines. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "run/explain.h"
#include "vocab/cause.h"
#include "vocab/vocab.h"

static void test_printf_fields(void **state)
{
	(void)state;
	char f[128];
	assert_int_equal(explain_row_match("ram blocks mismatch (Number of blocks %d vs %d)",
					   "qemu-system-x86_64: ram blocks mismatch (Number of blocks 1 vs 2) Your QEMU", f, sizeof f), 1);
	assert_string_equal(f, "1, 2");
	assert_int_equal(explain_row_match("Block %s/%d has a different length %lu vs %lu",
					   "Block pc.ram/0 has a different length 8589934592 vs 4294967296", f, sizeof f), 1);
	assert_string_equal(f, "pc.ram, 0, 8589934592, 4294967296");
	assert_int_equal(explain_row_match("Memory content inconsistency at %x", "Memory content inconsistency at 1f000", f,
					   sizeof f), 1);
	assert_string_equal(f, "1f000");
	/* a number field takes digits only; a literal must be there */
	assert_int_equal(explain_row_match("too long length: %d", "too long length: abc", f, sizeof f), 0);
	assert_int_equal(explain_row_match("too long length: %d", "too short length: 7", f, sizeof f), 0);
	assert_int_equal(explain_row_match("rate %d%%", "rate 50%", f, sizeof f), 1);
	assert_string_equal(f, "50");
}

/* Adjacent format tokens against a long run of digits: every way to split the digits among
 * them is a candidate, C(300, 12) ~ 10^23 of them for a backtracking matcher (the explain
 * fuzzer's timeout); each (token, offset) tried once, it is a few thousand steps. */
static void test_adjacent_tokens_bounded(void **state)
{
	(void)state;
	char row[64] = "", text[400], f[512];
	for (int i = 0; i < 12; i++)
		strcat(row, "%u");
	strcat(row, " x");
	memset(text, '9', 300);
	memcpy(text + 300, " y x", 5);   /* " x" is there (the row's longest literal), not after digits */
	assert_int_equal(explain_row_match(row, text, f, sizeof f), 0);
	assert_true(explain_match_steps() > 0);
	assert_true(explain_match_steps() <= 13ul * 301);
	/* the same with a %s between: still no match, still bounded */
	snprintf(row, sizeof row, "%%u%%s%%u%%s%%u%%s%%u%%s%%u x");
	assert_int_equal(explain_row_match(row, text, f, sizeof f), 0);
	assert_true(explain_match_steps() <= 10ul * 301);
	/* and a line that does end in " x" matches, fields as before */
	memcpy(text + 300, " x", 3);   /* now it is */
	snprintf(row, sizeof row, "%%u%%u x");
	assert_int_equal(explain_row_match(row, text, f, sizeof f), 1);
	assert_int_equal(strlen(f), 300 + 2);   /* 299 digits, ", ", 1 digit: longest first */
}

static void test_tags_and_commentary(void **state)
{
	(void)state;
	char f[64];
	const char *obs = "[7.2 observed dst] load of migration failed: Operation not permitted";
	assert_int_equal(explain_row_match(obs, "2026-03-02T10:15:07.418330Z qemu-system-x86_64: load of migration failed: "
						"Operation not permitted", f, sizeof f), 1);
	assert_int_equal(explain_row_match(obs, "qemu-system-x86_64: load of migration failed: Invalid argument", f, sizeof f), 0);
	/* an observed row is exact text: its '%' would be literal, its numbers are the real ones */
	assert_int_equal(explain_row_match("[7.2 observed dst] too long length: 1073741837", "too long length: 1073741840", f,
					   sizeof f), 0);
	assert_int_equal(explain_row_match("(trace) A Wanted wrid CONTROL SEND (2000) but got CONTROL RECV (4000)",
					   "4113@1632489601.338502:qemu_rdma_block_for_wrid_miss A Wanted wrid CONTROL SEND (2000) "
					   "but got CONTROL RECV (4000)", f, sizeof f), 1);
	assert_int_equal(explain_row_match("(QEMU waits without a bound here: it hangs)", "anything", f, sizeof f), -1);
	assert_int_equal(explain_row_match("(7.2 observed: a QEMU destination accepts a non-zero value silently and completes)",
					   "anything", f, sizeof f), -1);
}

/* A printf format with sample values: numbers 7 (hex 7f), strings "x". */
static void sample_line(const char *fmt, char *out, size_t n)
{
	size_t w = 0;
	for (const char *s = fmt; *s && w + 4 < n; s++) {
		if (*s != '%') {
			out[w++] = *s;
			continue;
		}
		if (s[1] == '%') {
			out[w++] = *++s;
			continue;
		}
		while (*s && !strchr("diuxXsp", *s))
			s++;
		const char *v = *s == 's' ? "x" : *s == 'x' ? "7f" : "7";
		w += (size_t)snprintf(out + w, n - w, "%s", v);
		if (!*s)
			break;
	}
	out[w] = '\0';
}

/* Every observed row of the table matches its own text, every read row its format with
 * sample values: the table and the matcher agree. */
static void test_every_observed_row_matches_itself(void **state)
{
	(void)state;
	int rows = 0, read = 0;
	for (int c = CAUSE_FIRST; c < CAUSE_END; c++) {
		const char *all = cause_qemu(c);
		while (*all) {
			const char *end = strstr(all, " | ");
			size_t len = end ? (size_t)(end - all) : strlen(all);
			char row[512];
			assert_true(len < sizeof row);
			memcpy(row, all, len);
			row[len] = '\0';
			const char *close = strchr(row, ']');
			if (row[0] == '[' && strstr(row, " observed ") && strstr(row, " observed ") < close) {
				assert_non_null(close);
				assert_int_equal(explain_row_match(row, close + 2, NULL, 0), 1);
				rows++;
			} else if (row[0] == '[') {                /* a read row: its format, filled */
				char text[512];
				assert_non_null(close);
				sample_line(close + 2, text, sizeof text);
				if (explain_row_match(row, text, NULL, 0) != 1)
					fail_msg("row '%s' does not match '%s'", row, text);
				read++;
			}
			all += len + (end ? 3 : 0);
		}
	}
	assert_true(rows > 50);
	assert_true(read > 50);
}

static struct explain *explain_text(const char *a, int side_a, const char *b, int side_b)
{
	struct explain *x = explain_new();
	struct diag d;
	assert_non_null(x);
	FILE *f = fmemopen((void *)a, strlen(a), "r");
	assert_int_equal(explain_add(x, "a.log", side_a, f, &d), 0);
	fclose(f);
	if (b) {
		f = fmemopen((void *)b, strlen(b), "r");
		assert_int_equal(explain_add(x, "b.log", side_b, f, &d), 0);
		fclose(f);
	}
	return x;
}

/* "[8.2 read dst] FORMAT": a printf format with a version and a side; filling a format. */
static void test_read_rows_and_fill(void **state)
{
	(void)state;
	char f[128];
	const char *row = "[8.2 read dst, a non-zero value] rdma: Zero page with non-zero (%d) value";
	assert_int_equal(explain_row_match(row, "qemu-system-x86_64: rdma: Zero page with non-zero (255) value", f,
					   sizeof f), 1);
	assert_string_equal(f, "255");
	assert_int_equal(explain_row_match("[8.2 read dst", "x", f, sizeof f), -1);   /* no ']' */
	assert_int_equal(explain_row_fill("Was expecting a %s (%d) control message, but got: %s (%d), length: %d",
					  "Was expecting a READY (2) control message, but got: ERROR (1), length: 0 (more)",
					  f, sizeof f), 1);
	assert_string_equal(f, "Was expecting a READY (2) control message, but got: ERROR (1), length: 0");
	/* a last %s stops before migbed's " (": the QEMU part only */
	assert_int_equal(explain_row_fill("Unknown control message %s",
					  "Unknown control message ERROR (the source sent ERROR during a round)", f, sizeof f), 1);
	assert_string_equal(f, "Unknown control message ERROR");
	/* not the same message, or a %d QEMU would print from a larger uint32: not filled */
	strcpy(f, "keep");
	assert_int_equal(explain_row_fill("too long length: %d", "Malformed length: 5 byte_len 3", f, sizeof f), 0);
	assert_int_equal(explain_row_fill("rdma: Zero page with non-zero (%d) value",
					  "rdma: Zero page with non-zero (4278190080) value", f, sizeof f), 0);
	assert_string_equal(f, "keep");
	assert_int_equal(explain_row_fill("[8.2 read dst] x %d", "x 1", f, sizeof f), -1);
	/* a short buffer: cut */
	char small[6];
	assert_int_equal(explain_row_fill("too long length: %d", "too long length: 17", small, sizeof small), 1);
	assert_string_equal(small, "too l");
}

/* A log in QEMU 8.2's words: the cause, the side from the read rows, and 8.2 as the version. */
static void test_rank_8_2_log(void **state)
{
	(void)state;
	struct explain *x = explain_text("qemu-system-x86_64: rdma: Zero page with non-zero (255) value\n",
					 EXPLAIN_SIDE_ANY, NULL, 0);
	assert_true(explain_rank(x) >= 1);
	const struct explain_cause *c = explain_cause_at(x, 0);
	assert_int_equal(c->cause, CAUSE_BAD_COMPRESS);
	assert_string_equal(c->versions, "8.2");
	assert_string_equal(c->notes, "a non-zero value");
	bool inferred;
	assert_int_equal(explain_log_side(x, 0, &inferred), VOCAB_SIDE_DST);
	assert_true(inferred);
	const struct explain_line *l = explain_cause_line(x, 0, 0);
	assert_true(l->read);
	assert_false(l->observed);
	assert_string_equal(l->fields, "255");
	explain_free(x);
}

static void test_rank_dest_reg_failed(void **state)
{
	(void)state;
	struct explain *x = explain_text(
		"source_resolve_host RDMA Device opened: kernel name rxe1\n"
		"qemu-system-x86_64: Was expecting a REGISTER RESULT (8) control message, but got: ERROR (1), length: 0\n"
		"\n"
		"qemu-system-x86_64: rdma migration: write error! -5\n"
		"qemu-system-x86_64: RDMA is in an error state waiting migration to abort!\n",
		EXPLAIN_SIDE_ANY, NULL, 0);
	assert_true(explain_rank(x) >= 2);
	const struct explain_cause *c = explain_cause_at(x, 0);
	assert_int_equal(c->cause, CAUSE_DEST_REG_FAILED);
	assert_int_equal(c->side, VOCAB_SIDE_SRC);
	assert_string_equal(c->versions, "7.2");
	assert_int_equal(c->n_lines, 2);
	const struct explain_line *l = explain_cause_line(x, 0, 0);
	assert_int_equal(l->line_no, 2);
	assert_true(l->observed);
	bool inferred;
	assert_int_equal(explain_log_side(x, 0, &inferred), VOCAB_SIDE_SRC);
	assert_true(inferred);
	unsigned long placed;
	assert_int_equal(explain_log_lines(x, 0, &placed), 4);      /* the blank line is not one */
	assert_int_equal(placed, 3);
	unsigned long no;
	assert_string_equal(explain_log_unplaced(x, 0, 0, &no), "source_resolve_host RDMA Device opened: kernel name rxe1");
	assert_int_equal(no, 1);
	assert_null(explain_log_unplaced(x, 0, 1, &no));
	explain_free(x);
}

/* Blank lines before a log's first text still count: the lines cited are the file's. */
static void test_leading_blank_lines_keep_line_numbers(void **state)
{
	(void)state;
	struct explain *x = explain_text(
		"\n\r\n  \n"
		"qemu-system-x86_64: Was expecting a REGISTER RESULT (8) control message, but got: ERROR (1), length: 0\n",
		EXPLAIN_SIDE_ANY, NULL, 0);
	assert_true(explain_rank(x) >= 1);
	assert_int_equal(explain_cause_line(x, 0, 0)->line_no, 4);
	explain_free(x);
	x = explain_text("\n\n{\"return\": {\"status\": \"failed\",\n \"error-desc\": \"RDMA ERROR: connecting to destination!\"}}\n",
			 EXPLAIN_SIDE_ANY, NULL, 0);
	assert_true(explain_rank(x) >= 1);
	assert_int_equal(explain_cause_line(x, 0, 0)->line_no, 4);
	explain_free(x);
}

/* A work-completion status line outweighs the lines around it; the aftermath lines weigh less. */
static void test_status_line_and_aftermath(void **state)
{
	(void)state;
	struct explain *x = explain_text(
		"ibv_poll_cq wc.status=13 RNR retry counter exceeded!\n"
		"ibv_poll_cq wrid=WRITE RDMA!\n"
		"qemu-system-x86_64: rdma migration: polling error\n"
		"qemu-system-x86_64: RDMA is in an error state waiting migration to abort!\n",
		VOCAB_SIDE_SRC, NULL, 0);
	assert_true(explain_rank(x) >= 2);
	assert_int_equal(explain_cause_at(x, 0)->cause, CAUSE_RNR_RETRY_EXCEEDED);
	assert_true(explain_cause_at(x, 0)->wc_status_lines);
	bool inferred = true;
	assert_int_equal(explain_log_side(x, 0, &inferred), VOCAB_SIDE_SRC);
	assert_false(inferred);
	explain_free(x);
}

/* The same evidence: the PRIMARY cause before the CONSEQUENCE one. */
static void test_consequence_after_primary(void **state)
{
	(void)state;
	struct explain *x = explain_text("qemu-system-x86_64: Unknown source RDMA version: 2, bailing...\n",
					 VOCAB_SIDE_DST, NULL, 0);
	assert_int_equal(explain_rank(x), 2);
	assert_int_equal(explain_cause_at(x, 0)->cause, CAUSE_VERSION_UNSUPPORTED);
	assert_int_equal(explain_cause_at(x, 1)->cause, CAUSE_CONNECT_REJECTED);
	assert_int_equal(explain_cause_at(x, 0)->score, explain_cause_at(x, 1)->score);
	explain_free(x);
}

/* An observed row of the other side does not apply; two logs that tell nothing are src, dst. */
static void test_sides(void **state)
{
	(void)state;
	const char *line = "qemu-system-x86_64: too long length: 1073741840\n";
	struct explain *x = explain_text(line, VOCAB_SIDE_DST, NULL, 0);
	assert_int_equal(explain_rank(x), 1);       /* 7.2's src line does not apply: 8.2's dst format */
	assert_int_equal(explain_cause_at(x, 0)->cause, CAUSE_MESSAGE_MALFORMED);
	assert_string_equal(explain_cause_at(x, 0)->versions, "8.2");   /* [8.2 read dst] too long length: %d */
	explain_free(x);
	x = explain_text(line, VOCAB_SIDE_SRC, NULL, 0);
	explain_rank(x);
	assert_string_equal(explain_cause_at(x, 0)->versions, "7.2");   /* [7.2 observed src]: the exact line wins */
	explain_free(x);
	x = explain_text("qemu-system-x86_64: Failed to use post IB SEND for control\n", EXPLAIN_SIDE_ANY,
			 "qemu-system-x86_64: could not resolve rdma route\n", EXPLAIN_SIDE_ANY);
	explain_rank(x);
	bool inferred;
	assert_int_equal(explain_log_side(x, 0, &inferred), VOCAB_SIDE_SRC);
	assert_false(inferred);
	assert_int_equal(explain_log_side(x, 1, &inferred), VOCAB_SIDE_DST);
	explain_free(x);
}

/* Equal scores: the cause whose observed lines for this side are all there comes first. */
static void test_missing_observed_rows(void **state)
{
	(void)state;
	struct explain *x = explain_text("qemu-system-x86_64: receive cm event, cm event is 10\n"
					 "qemu-system-x86_64: load of migration failed: Broken pipe\n",
					 VOCAB_SIDE_DST, NULL, 0);
	assert_true(explain_rank(x) >= 3);
	const struct explain_cause *first = explain_cause_at(x, 0), *second = explain_cause_at(x, 1);
	assert_int_equal(first->cause, CAUSE_QP_ERROR);           /* a CONSEQUENCE, yet first */
	assert_int_equal(first->missing, 0);
	assert_int_equal(second->score, first->score);
	assert_true(second->missing > 0);                         /* "Failed to send control buffer" */
	explain_free(x);
}

static void test_json_and_nothing(void **state)
{
	(void)state;
	struct explain *x = explain_text("{\n  \"return\": {\n    \"status\": \"failed\",\n"
					 "    \"error-desc\": \"RDMA ERROR: could not resolve address 198.51.100.7\"\n  }\n}\n",
					 EXPLAIN_SIDE_ANY, NULL, 0);
	assert_int_equal(explain_rank(x), 1);
	assert_int_equal(explain_cause_at(x, 0)->cause, CAUSE_CONNECT_FAILED);
	assert_int_equal(explain_cause_line(x, 0, 0)->line_no, 4);
	assert_int_equal(explain_log_side(x, 0, NULL), VOCAB_SIDE_SRC);
	explain_free(x);
	x = explain_text("qemu-system-x86_64: terminating on signal 15\n\nsomething else\n", EXPLAIN_SIDE_ANY, NULL, 0);
	assert_int_equal(explain_rank(x), 0);
	assert_null(explain_cause_at(x, 0));
	unsigned long no;
	assert_string_equal(explain_log_unplaced(x, 0, 1, &no), "something else");
	assert_int_equal(no, 3);
	explain_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_printf_fields),
		cmocka_unit_test(test_adjacent_tokens_bounded),
		cmocka_unit_test(test_tags_and_commentary),
		cmocka_unit_test(test_every_observed_row_matches_itself),
		cmocka_unit_test(test_rank_dest_reg_failed),
		cmocka_unit_test(test_leading_blank_lines_keep_line_numbers),
		cmocka_unit_test(test_status_line_and_aftermath),
		cmocka_unit_test(test_consequence_after_primary),
		cmocka_unit_test(test_sides),
		cmocka_unit_test(test_read_rows_and_fill),
		cmocka_unit_test(test_rank_8_2_log),
		cmocka_unit_test(test_missing_observed_rows),
		cmocka_unit_test(test_json_and_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
