/* result_wire_test - the digest record: a round trip, and every malformed record rejected. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "run/result_wire.h"

static void test_round_trip(void **state)
{
	(void)state;
	struct run_digest a = { .completed = false, .verified = false, .cause = CAUSE_DEST_REG_FAILED,
				.side = "dst", .fired = 3 }, b;
	snprintf(a.detail, sizeof a.detail, "block=pc.ram chunk=3\nback\\slash");
	char buf[RUN_WIRE_MAX];
	int n = run_digest_encode(&a, buf, sizeof buf);
	assert_true(n > 0);
	assert_int_equal(run_digest_decode(buf, (size_t)n, &b), 0);
	assert_int_equal(b.completed, a.completed);
	assert_int_equal(b.verified, a.verified);
	assert_int_equal(b.cause, a.cause);
	assert_string_equal(b.side, "dst");
	assert_int_equal(b.fired, 3);
	assert_string_equal(b.detail, a.detail);
	struct run_digest ok = { .completed = true, .verified = true, .side = "-" };
	n = run_digest_encode(&ok, buf, sizeof buf);
	assert_int_equal(run_digest_decode(buf, (size_t)n, &b), 0);
	assert_true(b.completed && b.verified);
	assert_int_equal(b.cause, 0);
	assert_string_equal(b.detail, "");
}

static const char good[] = "migbed-run-result 1\nstatus failed\nverified false\ncause DEST_REG_FAILED\n"
			   "side dst\nfired 1\ndetail x\nend\n";

static const char *const malformed[] = {
	"",
	"migbed-run-result 2\nstatus failed\nverified false\ncause DEST_REG_FAILED\nside dst\nfired 1\ndetail x\nend\n",
	"migbed-run-result 1\nstatus maybe\nverified false\ncause DEST_REG_FAILED\nside dst\nfired 1\ndetail x\nend\n",
	"migbed-run-result 1\nstatus failed\nverified no\ncause DEST_REG_FAILED\nside dst\nfired 1\ndetail x\nend\n",
	"migbed-run-result 1\nstatus failed\nverified false\ncause NO_SUCH_CAUSE\nside dst\nfired 1\ndetail x\nend\n",
	"migbed-run-result 1\nstatus failed\nverified false\ncause NONE\nside dst\nfired 1\ndetail x\nend\n",
	"migbed-run-result 1\nstatus completed\nverified true\ncause DEST_REG_FAILED\nside -\nfired 0\ndetail \nend\n",
	"migbed-run-result 1\nstatus failed\nverified false\ncause DEST_REG_FAILED\nside both\nfired 1\ndetail x\nend\n",
	"migbed-run-result 1\nstatus failed\nverified false\ncause DEST_REG_FAILED\nside dst\nfired -1\ndetail x\nend\n",
	"migbed-run-result 1\nstatus failed\nverified false\ncause DEST_REG_FAILED\nside dst\nfired 1\ndetail x\\q\nend\n",
	"migbed-run-result 1\nstatus failed\nverified false\ncause DEST_REG_FAILED\nside dst\nfired 1\ndetail x\n",
	"migbed-run-result 1\nstatus failed\nverified false\ncause DEST_REG_FAILED\nside dst\nfired 1\ndetail x\nend\nmore",
	"migbed-run-result 1\nverified false\nstatus failed\ncause DEST_REG_FAILED\nside dst\nfired 1\ndetail x\nend\n",
};

static void test_malformed_rejected(void **state)
{
	(void)state;
	struct run_digest dg;
	assert_int_equal(run_digest_decode(good, strlen(good), &dg), 0);
	for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
		print_message("case %zu\n", i);
		assert_int_equal(run_digest_decode(malformed[i], strlen(malformed[i]), &dg), -EINVAL);
	}
	for (size_t n = 0; n < strlen(good); n++)   /* every truncation of a good record */
		assert_int_equal(run_digest_decode(good, n, &dg), -EINVAL);
	char nul[sizeof good];
	memcpy(nul, good, sizeof good);
	nul[strlen(good) - 6] = '\0';                 /* a NUL inside the detail */
	assert_int_equal(run_digest_decode(nul, strlen(good), &dg), -EINVAL);
}

static void test_encode_bounded(void **state)
{
	(void)state;
	struct run_digest dg = { .cause = CAUSE_DEST_REG_FAILED, .side = "dst" };
	memset(dg.detail, '\n', sizeof dg.detail - 1);   /* the longest escaped detail still fits */
	char buf[RUN_WIRE_MAX], small[16];
	assert_true(run_digest_encode(&dg, buf, sizeof buf) > 0);
	assert_int_equal(run_digest_encode(&dg, small, sizeof small), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_malformed_rejected),
		cmocka_unit_test(test_encode_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
