/* SPDX-License-Identifier: MIT */
/* vocab_test - the generated names, tokens, counts and parsers of vocab/vocab.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "vocab/vocab.h"

static void test_counts(void **st)
{
	(void)st;
	assert_int_equal(VOCAB_WC_STATUS_COUNT, 22);
	assert_int_equal(VOCAB_CM_EVENT_COUNT, 16);
	assert_int_equal(VOCAB_MSG_TYPE_COUNT, 12);
	assert_int_equal(VOCAB_SIDE_COUNT, 2);
}

static void test_names(void **st)
{
	(void)st;
	assert_string_equal(vocab_wc_status_name(VOCAB_WC_REM_ACCESS_ERR), "REM_ACCESS_ERR");
	assert_string_equal(vocab_wc_status_text(VOCAB_WC_REM_ACCESS_ERR), "remote access error");
	assert_string_equal(vocab_wc_status_text(VOCAB_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
	assert_string_equal(vocab_cm_event_name(VOCAB_CM_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED");
	assert_string_equal(vocab_cm_event_token(VOCAB_CM_TIMEWAIT_EXIT), "timewait_exit");
	assert_string_equal(vocab_msg_type_name(VOCAB_MSG_QEMU_FILE), "QEMU FILE");
	assert_string_equal(vocab_msg_type_token(VOCAB_MSG_REGISTER_REQUEST), "register_request");
	assert_string_equal(vocab_side_token(VOCAB_SIDE_DST), "dst");
	/* out of range: the documented fallbacks */
	assert_string_equal(vocab_wc_status_name(-1), "UNKNOWN");
	assert_string_equal(vocab_wc_status_name(VOCAB_WC_STATUS_COUNT), "UNKNOWN");
	assert_string_equal(vocab_wc_status_text(99), "unknown");
	assert_string_equal(vocab_cm_event_name(16), "UNKNOWN EVENT");
	assert_null(vocab_cm_event_token(-1));
	assert_string_equal(vocab_msg_type_name(12), "??BAD CONTROL VALUE??");
	assert_string_equal(vocab_msg_type_token(0xffffffffu), "bad");
	assert_string_equal(vocab_side_token(2), "?");
}

/* Every name parses back to its value; names are unique; unknown names are -1. */
static void test_round_trips(void **st)
{
	(void)st;
	for (int i = 0; i < VOCAB_WC_STATUS_COUNT; i++)
		assert_int_equal(vocab_wc_status_lookup(vocab_wc_status_name(i)), i);
	for (int i = 0; i < VOCAB_CM_EVENT_COUNT; i++)
		assert_int_equal(vocab_cm_event_lookup(vocab_cm_event_token(i)), i);
	for (unsigned i = 0; i < VOCAB_MSG_TYPE_COUNT; i++)
		assert_int_equal(vocab_msg_type_lookup(vocab_msg_type_token(i)), (int)i);
	for (int i = 0; i < VOCAB_SIDE_COUNT; i++)
		assert_int_equal(vocab_side_lookup(vocab_side_token(i)), i);
	assert_int_equal(vocab_wc_status_lookup("rem_access_err"), -1);
	assert_int_equal(vocab_wc_status_lookup(NULL), -1);
	assert_int_equal(vocab_cm_event_lookup("ESTABLISHED"), -1);
	assert_int_equal(vocab_msg_type_lookup("bad"), -1);
	assert_int_equal(vocab_side_lookup("source"), -1);
}

/* Sides parse with their aliases (the fault rules' spelling); fault sites round-trip, the
 * cm.* and msg.* sites follow the CM events and message types, canonical actions come from
 * the table's column. */
static void test_sides_and_fault_sites(void **st)
{
	(void)st;
	assert_int_equal(vocab_side_parse("src"), VOCAB_SIDE_SRC);
	assert_int_equal(vocab_side_parse("source"), VOCAB_SIDE_SRC);
	assert_int_equal(vocab_side_parse("dest"), VOCAB_SIDE_DST);
	assert_int_equal(vocab_side_parse("destination"), -1);
	assert_int_equal(vocab_side_parse(NULL), -1);
	assert_int_equal(FAULT_SITE_CM_EVENT, VOCAB_FAULT_SITE_FIXED_COUNT);
	assert_int_equal(FAULT_SITE_COUNT, VOCAB_FAULT_SITE_FIXED_COUNT + VOCAB_CM_EVENT_COUNT + VOCAB_MSG_TYPE_COUNT);
	for (int s = 0; s < FAULT_SITE_COUNT; s++)
		assert_int_equal(vocab_fault_site_lookup(vocab_fault_site_token(s)), s);
	assert_string_equal(vocab_fault_site_token(FAULT_SITE_POST_SEND_WRITE), "post_send.write");
	assert_string_equal(vocab_fault_site_token(fault_site_cm(VOCAB_CM_ESTABLISHED)), "cm.established");
	assert_string_equal(vocab_fault_site_token(fault_site_msg(VOCAB_MSG_READY)), "msg.ready");
	assert_string_equal(vocab_fault_site_token(FAULT_SITE_COUNT), "?");
	assert_string_equal(vocab_fault_site_token(-1), "?");
	assert_int_equal(vocab_fault_site_lookup("msg.bad"), -1);
	assert_string_equal(vocab_fault_site_canonical(FAULT_SITE_REG_MR), "errno(ENOMEM)");
	assert_string_equal(vocab_fault_site_canonical(FAULT_SITE_WC_RECV), "status(GENERAL_ERR)");
	assert_string_equal(vocab_fault_site_canonical(fault_site_msg(VOCAB_MSG_ERROR)), "drop");
	assert_string_equal(vocab_fault_site_canonical(FAULT_SITE_COUNT), "?");
	assert_int_equal(FAULT_ACT_COUNT, 10);
	assert_int_equal(FAULT_CORRUPT_COUNT, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_sides_and_fault_sites),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
