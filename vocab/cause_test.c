/* SPDX-License-Identifier: MIT */
/* cause_test - the named failure table: names, messages, hints, lookup and first-cause-wins. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "vocab/cause.h"

/* ^[A-Z][A-Z0-9_]*$ */
static int name_ok(const char *s)
{
	if (!s || !(s[0] >= 'A' && s[0] <= 'Z'))
		return 0;
	for (const char *p = s + 1; *p; p++) {
		int up = *p >= 'A' && *p <= 'Z';
		int dig = *p >= '0' && *p <= '9';
		if (!up && !dig && *p != '_')
			return 0;
	}
	return 1;
}

static void test_name_syntax_checker(void **state)
{
	(void)state;
	/* the checker itself must reject what the regex rejects */
	assert_true(name_ok("REMOTE_ACCESS_ERROR"));
	assert_true(name_ok("A1_B"));
	assert_false(name_ok(""));
	assert_false(name_ok("_X"));
	assert_false(name_ok("1X"));
	assert_false(name_ok("Remote"));
	assert_false(name_ok("A-B"));
	assert_false(name_ok("A B"));
}

static void test_rows_complete_and_unique(void **state)
{
	(void)state;
	assert_true(CAUSE_COUNT > 1);
	for (int c = CAUSE_FIRST; c < CAUSE_END; c++) {
		const char *n = cause_name(c);
		assert_non_null(n);
		assert_true(strlen(n) > 0);
		if (!name_ok(n))
			fail_msg("cause %d has a bad name '%s'", c, n);
		assert_string_not_equal(n, "UNKNOWN");
		assert_string_not_equal(n, "NONE");
		assert_non_null(cause_message(c));
		if (strlen(cause_message(c)) == 0)
			fail_msg("cause %s has no message", n);
		assert_non_null(cause_hint(c));
		if (strlen(cause_hint(c)) == 0)
			fail_msg("cause %s has no hint", n);
		assert_non_null(cause_qemu(c));
		for (int d = CAUSE_FIRST; d < c; d++)
			if (strcmp(n, cause_name(d)) == 0)
				fail_msg("causes %d and %d share the name %s", d, c, n);
		for (int d = CAUSE_FIRST; d < c; d++)
			if (strcmp(cause_message(c), cause_message(d)) == 0)
				fail_msg("causes %s and %s share a message", cause_name(d), n);
	}
}

static void test_known_rows(void **state)
{
	(void)state;
	assert_string_equal(cause_name(CAUSE_REMOTE_ACCESS_ERROR), "REMOTE_ACCESS_ERROR");
	assert_string_equal(cause_name(-CAUSE_REMOTE_ACCESS_ERROR), "REMOTE_ACCESS_ERROR");
	assert_string_equal(cause_name(CAUSE_CONNECT_FAILED), "CONNECT_FAILED");
	assert_string_equal(cause_name(CAUSE_INTERNAL), "INTERNAL");
	assert_string_equal(cause_name(0), "NONE");
	assert_non_null(strstr(cause_qemu(CAUSE_TOO_MANY_REQUESTS), "Too many requests"));
	assert_string_equal(cause_message(-CAUSE_TIMEOUT), cause_message(CAUSE_TIMEOUT));
	assert_string_equal(cause_hint(-CAUSE_TIMEOUT), cause_hint(CAUSE_TIMEOUT));
}

static void test_lookup_round_trip(void **state)
{
	(void)state;
	for (int c = CAUSE_FIRST; c < CAUSE_END; c++)
		assert_int_equal(cause_lookup(cause_name(c)), c);
	assert_int_equal(cause_lookup("VERIFY_MISMATCH"), CAUSE_VERIFY_MISMATCH);
	assert_int_equal(cause_lookup("NO_SUCH_CAUSE"), 0);
	assert_int_equal(cause_lookup(""), 0);
	assert_int_equal(cause_lookup("UNKNOWN"), 0);
	assert_int_equal(cause_lookup("NONE"), 0);
	assert_int_equal(cause_lookup("remote_access_error"), 0); /* exact, case-sensitive */
	assert_int_equal(cause_lookup("REMOTE_ACCESS_ERRO"), 0);
}

static void test_out_of_range(void **state)
{
	(void)state;
	assert_string_equal(cause_name(CAUSE_END), "UNKNOWN");
	assert_string_equal(cause_name(-CAUSE_END), "UNKNOWN");
	assert_string_equal(cause_name(CAUSE_END + 100), "UNKNOWN");
	assert_string_equal(cause_name(-12345), "UNKNOWN");
	assert_string_equal(cause_name(CAUSE_BASE), "UNKNOWN");
	assert_true(strlen(cause_message(CAUSE_END)) > 0);
	assert_string_equal(cause_hint(CAUSE_END), "");
	assert_string_equal(cause_qemu(CAUSE_END), "");
	/* an errno is never a cause: a stray -ENOMEM does not print as some cause's name */
	for (int e = 1; e < 4096; e++) {
		assert_false(cause_valid(e));
		assert_false(cause_valid(-e));
		assert_string_equal(cause_name(-e), "UNKNOWN");
	}
	assert_true(cause_valid(CAUSE_FIRST) && cause_valid(-(CAUSE_END - 1)));
	assert_false(cause_valid(CAUSE_NONE));
}

/* An errno handed to cause_set (a bug: the boundary mixed the two) becomes INTERNAL naming
 * the errno, not the cause that happens to share its number. */
static void test_kind_column(void **state)
{
	(void)state;
	assert_true(cause_is_consequence(CAUSE_PEER_ERROR));
	assert_true(cause_is_consequence(-CAUSE_PEER_DISCONNECTED));
	assert_true(cause_is_consequence(CAUSE_QP_ERROR));
	assert_false(cause_is_consequence(CAUSE_REMOTE_ACCESS_ERROR));
	assert_false(cause_is_consequence(CAUSE_INTERNAL));
	assert_false(cause_is_consequence(CAUSE_NONE));
	assert_false(cause_is_consequence(ENOMEM));
	assert_false(cause_is_consequence(CAUSE_END));
}

/* cause_checked keeps what the caller wrote and adds why the value became INTERNAL; without a
 * buffer it only maps. A second bad value after a first cause keeps the first. */
static void test_checked_keeps_detail_and_first_cause(void **state)
{
	(void)state;
	char d[128] = "posting WRITE";
	assert_int_equal(cause_checked(-ENOMEM, d, sizeof d), CAUSE_INTERNAL);
	assert_non_null(strstr(d, "posting WRITE; a value that is not a cause"));
	char e[128] = "";
	assert_int_equal(cause_checked(EIO, e, sizeof e), CAUSE_INTERNAL);
	assert_true(strncmp(e, "a value that is not a cause", 27) == 0);
	assert_int_equal(cause_checked(EIO, NULL, 0), CAUSE_INTERNAL);
	char f[4] = "abc";
	assert_int_equal(cause_checked(EIO, f, 0), CAUSE_INTERNAL);
	assert_string_equal(f, "abc");                     /* n 0: nothing written */
	assert_int_equal(cause_checked(-CAUSE_TIMEOUT, NULL, 0), CAUSE_TIMEOUT);

	struct cause_ctx cx;
	memset(&cx, 0, sizeof cx);
	assert_int_equal(cause_set(&cx, CAUSE_TIMEOUT, "first"), -CAUSE_TIMEOUT);
	assert_int_equal(cause_set(&cx, -EPERM, "stray errno"), -CAUSE_INTERNAL);
	assert_int_equal(cx.cause, CAUSE_TIMEOUT);
	assert_string_equal(cx.detail, "first");
}

static void test_set_errno_is_internal(void **state)
{
	(void)state;
	struct cause_ctx cx;
	memset(&cx, 0, sizeof cx);
	assert_int_equal(cause_set(&cx, -ENOMEM, "posting"), -CAUSE_INTERNAL);
	assert_int_equal(cx.cause, CAUSE_INTERNAL);
	assert_non_null(strstr(cx.detail, "not a cause"));
	assert_non_null(strstr(cx.detail, strerror(ENOMEM)));
	/* first wins still */
	assert_int_equal(cause_set(&cx, CAUSE_TIMEOUT, "later"), -CAUSE_TIMEOUT);
	assert_int_equal(cx.cause, CAUSE_INTERNAL);
}

static void test_set_first_wins(void **state)
{
	(void)state;
	struct cause_ctx cx;
	memset(&cx, 0, sizeof cx);
	assert_int_equal(cause_set(&cx, CAUSE_REMOTE_ACCESS_ERROR, "block=%s chunk=%d", "pc.ram", 3),
			 -CAUSE_REMOTE_ACCESS_ERROR);
	assert_int_equal(cx.cause, CAUSE_REMOTE_ACCESS_ERROR);
	assert_string_equal(cx.detail, "block=pc.ram chunk=3");

	/* a later failure is a consequence: returned, not recorded */
	assert_int_equal(cause_set(&cx, CAUSE_QP_ERROR, "flushed"), -CAUSE_QP_ERROR);
	assert_int_equal(cx.cause, CAUSE_REMOTE_ACCESS_ERROR);
	assert_string_equal(cx.detail, "block=pc.ram chunk=3");

	/* a negative code is accepted and stored positive */
	struct cause_ctx cy;
	memset(&cy, 0, sizeof cy);
	assert_int_equal(cause_set(&cy, -CAUSE_TIMEOUT, "waited %d ms", 5000), -CAUSE_TIMEOUT);
	assert_int_equal(cy.cause, CAUSE_TIMEOUT);
	assert_string_equal(cy.detail, "waited 5000 ms");
}

static void test_set_detail_bounded(void **state)
{
	(void)state;
	char big[2 * CAUSE_DETAIL_MAX];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	struct cause_ctx cx;
	memset(&cx, 0, sizeof cx);
	assert_int_equal(cause_set(&cx, CAUSE_INTERNAL, "%s", big), -CAUSE_INTERNAL);
	assert_int_equal(strlen(cx.detail), CAUSE_DETAIL_MAX - 1);
}

/* A tagged row of the qemu column, "[VERSION WORD SIDE] text" or "[VERSION WORD SIDE, note]
 * text" / "[... SIDE: note] text": VERSION digits and dots, WORD "observed" (a real QEMU's
 * exact line) or "read" (a format read from its source), SIDE "src" or "dst", text not empty.
 * A read row's every '%' starts a conversion of d i u x s (with l/ll), or is "%%". 1 if so. */
static int tagged_row_ok(const char *row, size_t len, int *read)
{
	char r[512];
	if (len >= sizeof r || len < 4 || row[0] != '[')
		return 0;
	memcpy(r, row, len);
	r[len] = '\0';
	char *close = strchr(r, ']');
	if (!close || close[1] != ' ' || !close[2])
		return 0;
	*close = '\0';
	size_t v = strspn(r + 1, "0123456789.");
	if (!v || r[1 + v] != ' ')
		return 0;
	char *w = r + 2 + v;
	*read = !strncmp(w, "read ", 5);
	if (!*read && strncmp(w, "observed ", 9))
		return 0;
	char *side = w + (*read ? 5 : 9);
	if (strncmp(side, "src", 3) && strncmp(side, "dst", 3))
		return 0;
	if (side[3] && !strchr(",:", side[3]))
		return 0;
	if (side[3] && (side[4] != ' ' || !side[5]))
		return 0;
	for (const char *t = close + 2; *read && (t = strchr(t, '%')); t++) {
		if (t[1] == '%') {
			t++;
			continue;
		}
		size_t k = 1 + strspn(t + 1, "l");
		if (!t[k] || !strchr("diuxs", t[k]))
			return 0;
	}
	return 1;
}

/* Every "[...]" row of the qemu column parses, and there are both kinds. */
static void test_tagged_rows_parse(void **state)
{
	(void)state;
	int n_observed = 0, n_read = 0, read = 0;
	assert_true(tagged_row_ok("[8.2 read dst] load of migration failed: %s", 43, &read));
	assert_true(read);
	assert_false(tagged_row_ok("[8.2 seen dst] x", 16, &read));
	assert_false(tagged_row_ok("[8.2 read both] x", 17, &read));
	assert_false(tagged_row_ok("[8.2 read dst] %q", 17, &read));
	assert_false(tagged_row_ok("[read dst] x", 12, &read));
	assert_false(tagged_row_ok("[8.2 read dst]", 14, &read));
	for (int c = CAUSE_FIRST; c < CAUSE_END; c++) {
		const char *all = cause_qemu(c);
		while (*all) {
			const char *end = strstr(all, " | ");
			size_t len = end ? (size_t)(end - all) : strlen(all);
			if (all[0] == '[') {
				if (!tagged_row_ok(all, len, &read))
					fail_msg("%s: a tagged row does not parse: %.*s", cause_name(c), (int)len, all);
				n_read += read;
				n_observed += !read;
			}
			all += len + (end ? 3 : 0);
		}
	}
	assert_true(n_observed > 50);
	assert_true(n_read > 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_syntax_checker),
		cmocka_unit_test(test_rows_complete_and_unique),
		cmocka_unit_test(test_known_rows),
		cmocka_unit_test(test_tagged_rows_parse),
		cmocka_unit_test(test_lookup_round_trip),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_set_first_wins),
		cmocka_unit_test(test_set_errno_is_internal),
		cmocka_unit_test(test_checked_keeps_detail_and_first_cause),
		cmocka_unit_test(test_kind_column),
		cmocka_unit_test(test_set_detail_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
