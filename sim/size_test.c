/* SPDX-License-Identifier: MIT */
/* size_test - SIZE parsing and formatting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "sim/size.h"

struct ok_case {
	const char *s;
	uint64_t want;
};

static void test_parse_valid(void **st)
{
	static const struct ok_case cases[] = {
		{ "0", 0 },
		{ "1", 1 },
		{ "4096", 4096 },
		{ "007", 7 },
		{ "0K", 0 },
		{ "1K", 1024 },
		{ "64K", 65536 },
		{ "64KiB", 65536 },
		{ "1M", UINT64_C(1) << 20 },
		{ "1MiB", UINT64_C(1) << 20 },
		{ "3G", UINT64_C(3) << 30 },
		{ "1GiB", UINT64_C(1) << 30 },
		{ "2T", UINT64_C(2) << 40 },
		{ "2TiB", UINT64_C(2) << 40 },
		{ "16777215T", UINT64_C(16777215) << 40 },
		{ "18446744073709551615", UINT64_MAX },
		/* QEMU's qemu_strtosz spellings: either case, B, P, E, fractions */
		{ "4k", 4096 },
		{ "1m", UINT64_C(1) << 20 },
		{ "2g", UINT64_C(2) << 30 },
		{ "1t", UINT64_C(1) << 40 },
		{ "1b", 1 },
		{ "512B", 512 },
		{ "1P", UINT64_C(1) << 50 },
		{ "1p", UINT64_C(1) << 50 },
		{ "1E", UINT64_C(1) << 60 },
		{ "15e", UINT64_C(15) << 60 },
		{ "1.5G", UINT64_C(3) << 29 },
		{ "1.5g", UINT64_C(3) << 29 },
		{ "0.5K", 512 },
		{ "1.25k", 1280 },
		{ "1.5KiB", 1536 },
		{ "1.k", 1024 },
		{ "1.", 1 },
		{ "1.0", 1 },
		{ "1.000B", 1 },
		{ "0.0001K", 0 },                /* 0.1024 bytes */
		{ "0.0005K", 1 },                /* 0.512: half rounded up */
		{ "0.00048828125K", 1 },         /* exactly 0.5 */
		{ "0.00048828124K", 0 },
		{ "15.5E", UINT64_C(31) << 59 },
		{ "15.999999999999999999999E", UINT64_MAX },   /* digits past the 18th dropped */
		{ "12.345M", 12944671 },         /* 12.345 * 2^20 = 12944670.72 */
	};

	(void)st;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t v = 12345;
		int rc = size_parse(cases[i].s, &v);
		if (rc != 0 || v != cases[i].want)
			fail_msg("size_parse(\"%s\") = %d, %llu; want 0, %llu", cases[i].s, rc,
				 (unsigned long long)v, (unsigned long long)cases[i].want);
	}
}

static void test_parse_invalid(void **st)
{
	static const char *const bad[] = {
		"", " ", "K", "KiB", "-1", "+1", " 1", "1 ", "1 K", "1,5G", "0x10", "0x10K",
		"1Ki", "1KB", "1KIB", "1kib", "1BiB", "1KiBx", "1GG", "12a", "1Q", "1q",
		"1\n", "99999999999999999999X", "1.5", "1.5B", "1.5b", ".5K", "1.5e3K", "1e3",
		"1.5.K", "1..5K", "1.-5K", "1.+5K", "nan", "inf", "1.5 K", "-1.5K",
	};

	(void)st;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint64_t v = 12345;
		int rc = size_parse(bad[i], &v);
		if (rc != -EINVAL || v != 12345)
			fail_msg("size_parse(\"%s\") = %d, %llu; want -EINVAL, untouched", bad[i], rc,
				 (unsigned long long)v);
	}
	assert_int_equal(size_parse(NULL, &(uint64_t){ 0 }), -EINVAL);
}

static void test_parse_overflow(void **st)
{
	static const char *const big[] = {
		"18446744073709551616", "99999999999999999999", "16777216T", "17179869184G",
		"17592186044416M", "18014398509481984K", "18014398509481984KiB", "16E", "16.0e",
		"16384P",
	};

	(void)st;
	for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
		uint64_t v = 12345;
		int rc = size_parse(big[i], &v);
		if (rc != -ERANGE || v != 12345)
			fail_msg("size_parse(\"%s\") = %d; want -ERANGE, untouched", big[i], rc);
	}
	/* the largest K value that still fits */
	uint64_t v = 0;
	assert_int_equal(size_parse("18014398509481983K", &v), 0);
	assert_int_equal(v, UINT64_C(18014398509481983) << 10);
}

static void test_parse_u64(void **st)
{
	uint64_t v = 5;

	(void)st;
	assert_int_equal(size_parse_u64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(size_parse_u64("60000", &v), 0);
	assert_int_equal(v, 60000);
	assert_int_equal(size_parse_u64("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	v = 5;
	assert_int_equal(size_parse_u64("18446744073709551616", &v), -ERANGE);
	assert_int_equal(size_parse_u64("1K", &v), -EINVAL);
	assert_int_equal(size_parse_u64("", &v), -EINVAL);
	assert_int_equal(size_parse_u64("-1", &v), -EINVAL);
	assert_int_equal(size_parse_u64("1 ", &v), -EINVAL);
	assert_int_equal(size_parse_u64("abc", &v), -EINVAL);
	assert_int_equal(v, 5);
}

static void test_format(void **st)
{
	static const struct ok_case cases[] = {
		{ "0", 0 }, { "1", 1 }, { "1000", 1000 }, { "1023", 1023 }, { "1K", 1024 },
		{ "4K", 4096 }, { "1025", 1025 }, { "1536", 1536 }, { "1M", UINT64_C(1) << 20 },
		{ "1025K", UINT64_C(1025) << 10 }, { "1G", UINT64_C(1) << 30 },
		{ "3T", UINT64_C(3) << 40 }, { "1024T", UINT64_C(1) << 50 },
		{ "18446744073709551615", UINT64_MAX }, { "16777215T", UINT64_C(16777215) << 40 },
	};
	char buf[32];

	(void)st;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_string_equal(size_format(cases[i].want, buf, sizeof buf), cases[i].s);
		/* and it parses back to the same number */
		uint64_t v = 0;
		assert_int_equal(size_parse(buf, &v), 0);
		assert_int_equal(v, cases[i].want);
	}
	/* a short buffer is truncated, still terminated */
	assert_string_equal(size_format(123456, buf, 4), "123");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_parse_overflow),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
