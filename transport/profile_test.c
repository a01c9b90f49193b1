/* SPDX-License-Identifier: MIT */
/* profile_test - the peer profiles' table: names in enum order (the option's choice list),
 * lookup both ways, each row's behaviours as docs/profiles.md states them, and the QEMU
 * log lines a profile's side takes from the cause table's observed rows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "transport/profile.h"
#include "vocab/cause.h"

static void names_match_the_option_words(void **state)
{
	char buf[256];

	(void)state;
	size_t n = proto_profile_names(buf, sizeof buf, "|");
	assert_string_equal(buf, PROTO_IMPL_WORDS);
	assert_int_equal(n, strlen(PROTO_IMPL_WORDS));
	/* a short buffer: truncated, terminated, the full length still reported */
	assert_int_equal(proto_profile_names(buf, 8, "|"), n);
	assert_int_equal(strlen(buf), 7);
	for (int i = 0; i < PROTO_IMPL_COUNT; i++) {
		const struct proto_profile *p = proto_profile((enum proto_impl)i);
		assert_int_equal(proto_profile_lookup(p->name), i);
		assert_non_null(p->versions);
		assert_non_null(p->summary);
	}
	assert_int_equal(proto_profile_lookup("qemu-6.2"), -1);
	assert_int_equal(proto_profile_lookup(""), -1);
	assert_int_equal(proto_profile_lookup(NULL), -1);
	assert_ptr_equal(proto_profile((enum proto_impl)PROTO_IMPL_COUNT), proto_profile(PROTO_IMPL_MIGBED));
	assert_ptr_equal(proto_profile((enum proto_impl)-1), proto_profile(PROTO_IMPL_MIGBED));
}

static void behaviours_per_version(void **state)
{
	(void)state;
	const struct proto_profile *m = proto_profile(PROTO_IMPL_MIGBED);
	assert_false(m->qemu);
	assert_false(m->shared_cq);
	assert_false(m->error_as_ready);
	assert_true(m->chunk_param);
	for (int i = PROTO_IMPL_QEMU_6_1; i < PROTO_IMPL_COUNT; i++) {
		const struct proto_profile *p = proto_profile((enum proto_impl)i);
		assert_true(p->qemu);                 /* every QEMU waits without a bound */
		assert_true(p->error_as_ready);
		/* one shared CQ only before 6.2; a chunk-size setting only from 11.1 */
		assert_int_equal(p->shared_cq, i == PROTO_IMPL_QEMU_6_1);
		assert_int_equal(p->chunk_param, i == PROTO_IMPL_QEMU_11_1);
	}
}

static int lines(enum proto_impl impl, int cause, enum vocab_side side, char out[][256], int max)
{
	size_t pos = 0;
	int n = 0;
	while (n < max && proto_profile_qemu_line(proto_profile(impl), cause, side, &pos, out[n], 256, NULL, 0))
		n++;
	return n;
}

static void observed_lines_by_version_and_side(void **state)
{
	char l[8][256];

	(void)state;
	/* REMOTE_ACCESS_ERROR: "[7.2 observed src, wrong rkey] ..." and "[7.2 observed src] ..." */
	assert_int_equal(lines(PROTO_IMPL_QEMU_7_2, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_SRC, l, 8), 2);
	assert_string_equal(l[0], "ibv_poll_cq wc.status=10 remote access error!");
	assert_string_equal(l[1], "ibv_poll_cq wrid=WRITE RDMA!");
	assert_int_equal(lines(PROTO_IMPL_QEMU_7_2, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_DST, l, 8), 3);
	assert_string_equal(l[2], "load of migration failed: Operation not permitted");
	/* "[7.2 observed dst: no address check] ..." counts; "(7.2 observed: ...)" is no line */
	assert_int_equal(lines(PROTO_IMPL_QEMU_7_2, CAUSE_BAD_REGISTER_REQUEST, VOCAB_SIDE_DST, l, 8), 2);
	assert_string_equal(l[0], "Failed to register chunk!: Invalid argument");
	assert_int_equal(lines(PROTO_IMPL_QEMU_7_2, CAUSE_VERIFY_MISMATCH, VOCAB_SIDE_SRC, l, 8), 0);
	/* versions neither observed nor read have no lines; a short buffer truncates */
	assert_int_equal(lines(PROTO_IMPL_MIGBED, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_SRC, l, 8), 0);
	assert_int_equal(lines(PROTO_IMPL_QEMU_6_1, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_SRC, l, 8), 0);
	assert_int_equal(lines(PROTO_IMPL_QEMU_8_1, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_DST, l, 8), 0);
	assert_int_equal(lines(PROTO_IMPL_QEMU_7_2, 0, VOCAB_SIDE_SRC, l, 8), 0);
	size_t pos = 0;
	char small[8], note[8] = "x";
	assert_int_equal(proto_profile_qemu_line(proto_profile(PROTO_IMPL_QEMU_7_2), CAUSE_REMOTE_ACCESS_ERROR,
						 VOCAB_SIDE_SRC, &pos, small, sizeof small, note, sizeof note), 1);
	assert_string_equal(small, "ibv_pol");
	assert_string_equal(note, "wrong r");           /* "[7.2 observed src, wrong rkey]", cut */
}

/* 8.2 (and 11.1, whose rdma.c was not read) print the rows read from QEMU 8.2's source: its
 * format strings, per side, never 7.2's observed lines; the notes say the situation. */
static void read_lines_for_8_2_and_11_1(void **state)
{
	char l[8][256], note[96];

	(void)state;
	assert_int_equal(proto_profile(PROTO_IMPL_QEMU_8_2)->log_kind, PROTO_LOG_SOURCE);
	assert_int_equal(proto_profile(PROTO_IMPL_QEMU_7_2)->log_kind, PROTO_LOG_OBSERVED);
	assert_int_equal(proto_profile(PROTO_IMPL_MIGBED)->log_kind, PROTO_LOG_NONE);
	assert_string_equal(proto_log_kind_word(PROTO_LOG_SOURCE), "read");
	assert_null(proto_log_kind_word(PROTO_LOG_NONE));
	/* the chunk mismatch's destination: no wc.status line any more, the caller's message */
	assert_int_equal(lines(PROTO_IMPL_QEMU_8_2, CAUSE_CHUNK_SIZE_MISMATCH, VOCAB_SIDE_DST, l, 8), 2);
	assert_string_equal(l[0], "rdma migration: recv polling control error!");
	assert_string_equal(l[1], "load of migration failed: %s");
	assert_int_equal(lines(PROTO_IMPL_QEMU_11_1, CAUSE_CHUNK_SIZE_MISMATCH, VOCAB_SIDE_DST, l, 8), 2);
	assert_string_equal(l[0], "rdma migration: recv polling control error!");
	for (int i = 0; i < 2; i++)
		assert_null(strstr(l[i], "ibv_poll_cq"));
	/* REMOTE_ACCESS_ERROR at the source: one of four, by where the completion is polled */
	assert_int_equal(lines(PROTO_IMPL_QEMU_8_2, CAUSE_REMOTE_ACCESS_ERROR, VOCAB_SIDE_SRC, l, 8), 4);
	assert_string_equal(l[1], "rdma migration: send polling control error");
	size_t pos = 0;
	char text[256];
	for (int i = 0; i < 2; i++)
		assert_int_equal(proto_profile_qemu_line(proto_profile(PROTO_IMPL_QEMU_8_2), CAUSE_REMOTE_ACCESS_ERROR,
							 VOCAB_SIDE_SRC, &pos, text, sizeof text, note, sizeof note), 1);
	assert_string_equal(note, "seen waiting for a control SEND");
	/* a row without a note: "" */
	pos = 0;
	assert_int_equal(proto_profile_qemu_line(proto_profile(PROTO_IMPL_QEMU_8_2), CAUSE_TOO_MANY_REQUESTS,
						 VOCAB_SIDE_DST, &pos, text, sizeof text, note, sizeof note), 1);
	assert_string_equal(text, "rdma: Too many requests in this message (%d).Bailing.");
	assert_string_equal(note, "");
	/* the accept fix (8.2.0): no crash, an error line after the version's */
	assert_int_equal(lines(PROTO_IMPL_QEMU_8_2, CAUSE_VERSION_UNSUPPORTED, VOCAB_SIDE_DST, l, 8), 2);
	assert_string_equal(l[1], "RDMA ERROR: Migration initialization failed");
	/* a side with no read row for a cause: none (VERIFY_MISMATCH: 8.2 prints nothing) */
	assert_int_equal(lines(PROTO_IMPL_QEMU_8_2, CAUSE_VERIFY_MISMATCH, VOCAB_SIDE_SRC, l, 8), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_match_the_option_words),
		cmocka_unit_test(behaviours_per_version),
		cmocka_unit_test(observed_lines_by_version_and_side),
		cmocka_unit_test(read_lines_for_8_2_and_11_1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
