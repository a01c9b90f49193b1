/* SPDX-License-Identifier: MIT */
/* hw_test - hardware profiles: a file read over the model's defaults (keys left out keep them,
 * units converted), every defect named FILE:LINE with nothing changed, --hw-set pairs, finding
 * a name in $MIGBED_HW_PATH, and hw_write reading back to the same costs. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "run/hw.h"

static char dir[64];

static const char *put(const char *name, const char *text)
{
	static char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/hw_test.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[96];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_read_over_defaults(void **state)
{
	struct hw_profile p;
	struct hca_cost dflt;
	struct diag d = { 0 };
	(void)state;
	hca_cost_defaults(&dflt);
	const char *f = put("a.hw", "# a comment\n\ndescription = test card\nlink-gbps = 200\n"
				    "wait-running-us = 2300\n  wait-stopped-us=50  \nsetup-ms = 900\n"
				    "dst-zero-fill-ns-per-page = 1269\ndowntime-floor-ms = 1100\n");
	assert_int_equal(hw_load_file(f, &p, &d), 0);
	assert_string_equal(p.description, "test card");
	assert_int_equal(p.cost.link_bytes_per_s, 25000000000ull);
	assert_int_equal(p.cost.wait_running_ns, 2300000);
	assert_int_equal(p.cost.wait_stopped_ns, 50000);
	assert_int_equal(p.cost.setup_ns, 900000000ull);
	assert_int_equal(p.cost.dst_zero_fill_per_page_ns, 1269);
	assert_int_equal(p.cost.downtime_floor_ns, 1100000000ull);
	assert_int_equal(dflt.downtime_floor_ns, 0);   /* off by default: runs without a profile unchanged */
	/* left out: the model's own */
	assert_int_equal(p.cost.msg_latency_ns, dflt.msg_latency_ns);
	assert_int_equal(p.cost.reg_per_page_ns, dflt.reg_per_page_ns);
	assert_int_equal(p.cost.dst_reg_per_page_ns, dflt.dst_reg_per_page_ns);
	/* an empty profile is the model as it is */
	assert_int_equal(hw_load_file(put("empty.hw", ""), &p, &d), 0);
	assert_memory_equal(&p.cost, &dflt, sizeof dflt);
}

static void expect_bad(const char *text, const char *msg_part)
{
	struct hw_profile p;
	struct diag d = { 0 };
	memset(&p, 0x5a, sizeof p);
	const char *f = put("bad.hw", text);
	assert_int_equal(hw_load_file(f, &p, &d), -EINVAL);
	if (!strstr(d.msg, msg_part))
		fail_msg("'%s' lacks '%s'", d.msg, msg_part);
	assert_non_null(strstr(d.msg, "/bad.hw:"));
	assert_int_equal(((unsigned char *)&p)[0], 0x5a);   /* nothing written */
}

static void test_defects_named(void **state)
{
	(void)state;
	expect_bad("link-gbps = 100\nwait-runing-us = 5\n", "bad.hw:2: unknown hardware key 'wait-runing-us'");
	expect_bad("link-gbps 100\n", "bad.hw:1: expected 'key = value', got 'link-gbps 100'");
	expect_bad("# c\nlink-gbps = 0\n", "bad.hw:2: link-gbps: '0' is not a whole number of Gb/s from 1 to 10000");
	expect_bad("setup-ms = 1.5\n", "bad.hw:1: setup-ms: '1.5' is not a whole number of ms");
	expect_bad("setup-ms = -1\n", "bad.hw:1: setup-ms: '-1'");
	expect_bad("latency-ns = 99999999999999999999999\n", "bad.hw:1: latency-ns:");
	expect_bad("setup-ms =\n", "bad.hw:1: key 'setup-ms' has no value");
	expect_bad("setup-ms = 1\n\nsetup-ms = 2\n", "bad.hw:3: key 'setup-ms' given twice (first on line 1)");
	expect_bad("description = a\ndescription = b\n", "bad.hw:2: key 'description' given twice");
}

static void test_missing_file(void **state)
{
	struct hw_profile p;
	struct diag d = { 0 };
	(void)state;
	assert_int_equal(hw_load("/nonexistent/x.hw", &p, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "/nonexistent/x.hw: cannot open hardware profile"));
}

static void test_set_pair(void **state)
{
	struct hca_cost c;
	struct diag d = { 0 };
	(void)state;
	hca_cost_defaults(&c);
	assert_int_equal(hw_set_pair(&c, "wait-stopped-us=7", "--hw-set", &d), 0);
	assert_int_equal(c.wait_stopped_ns, 7000);
	assert_int_equal(hw_set_pair(&c, " dst-reg-ns-per-page = 90 ", "--hw-set", &d), 0);
	assert_int_equal(c.dst_reg_per_page_ns, 90);
	assert_int_equal(hw_set_pair(&c, "setup-ms", "--hw-set", &d), -EINVAL);
	assert_string_equal(d.msg, "--hw-set: 'setup-ms' is not KEY=VALUE (see migbed hw keys)");
	assert_int_equal(hw_set_pair(&c, "nope=1", "--hw-set", &d), -EINVAL);
	assert_string_equal(d.msg, "--hw-set: unknown hardware key 'nope' (see migbed hw keys)");
}

static void test_find_by_name(void **state)
{
	struct hw_profile p;
	struct diag d = { 0 };
	char path[HW_PATH_MAX];
	(void)state;
	put("mycard.hw", "setup-ms = 3\n");
	assert_int_equal(setenv("MIGBED_HW_PATH", dir, 1), 0);
	assert_int_equal(hw_find("mycard", path, sizeof path, &d), 0);
	assert_non_null(strstr(path, "/mycard.hw"));
	assert_int_equal(hw_load("mycard", &p, &d), 0);
	assert_int_equal(p.cost.setup_ns, 3000000);
	assert_int_equal(hw_find("nocard", path, sizeof path, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "hw: no profile 'nocard' (looked in "));
	assert_int_equal(hw_find("bad name!", path, sizeof path, &d), -EINVAL);
	assert_int_equal(unsetenv("MIGBED_HW_PATH"), 0);
}

static void test_write_reads_back(void **state)
{
	struct hw_profile p, q;
	struct diag d = { 0 };
	(void)state;
	assert_int_equal(hw_load_file(put("w.hw", "reference = here\nlink-gbps = 400\nwait-running-us = 1\n"
						 "odp-fault-ns = 7\n"), &p, &d), 0);
	char path[128];
	snprintf(path, sizeof path, "%s/back.hw", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	hw_write(f, &p);
	fclose(f);
	assert_int_equal(hw_load_file(path, &q, &d), 0);
	assert_memory_equal(&p.cost, &q.cost, sizeof p.cost);
	assert_string_equal(q.reference, "here");
	for (size_t i = 0; i < hw_n_keys(); i++)   /* every key written, so every key given */
		assert_true(q.given[i]);
}

/* link-mbps: a rate under 1 Gb/s; written without link-gbps (not exact), read back the same */
static void test_link_mbps(void **state)
{
	struct hw_profile p, q;
	struct diag d = { 0 };
	(void)state;
	assert_int_equal(hw_load_file(put("m.hw", "link-mbps = 350\n"), &p, &d), 0);
	assert_int_equal(p.cost.link_bytes_per_s, 350u * 125000u);
	char path[128];
	snprintf(path, sizeof path, "%s/mback.hw", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	hw_write(f, &p);
	fclose(f);
	f = fopen(path, "r");
	assert_non_null(f);
	char line[256];
	bool gbps = false, mbps = false;
	while (fgets(line, sizeof line, f)) {
		gbps |= !strncmp(line, "link-gbps", 9);
		mbps |= !strcmp(line, "link-mbps = 350\n");
	}
	fclose(f);
	assert_false(gbps);
	assert_true(mbps);
	assert_int_equal(hw_load_file(path, &q, &d), 0);
	assert_memory_equal(&p.cost, &q.cost, sizeof p.cost);
	assert_int_not_equal(hw_set(&p.cost, "link-mbps", "0", "x", &d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_over_defaults),
		cmocka_unit_test(test_defects_named),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_set_pair),
		cmocka_unit_test(test_find_by_name),
		cmocka_unit_test(test_write_reads_back),
		cmocka_unit_test(test_link_mbps),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
