/* options_test - the one option table (cli/runcfg.c), table-driven: every shown default is
 * the real one, and "--key value" or a scenario line gives the field or the exact error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/runcfg.h"

/* What runcfg_set records besides the value (that a key was given) is not the value. */
static void normalise(struct runcfg *c)
{
	c->gen_keys_used = false;
	c->dst_chunk_set = false;
	c->repr_set = false;
	tgen_defaults(&c->gen);
}

/* For every row whose default is exact, giving the shown default changes nothing. */
static void test_shown_defaults_are_real(void **state)
{
	(void)state;
	size_t n_exact = 0;
	for (size_t i = 0; i < runcfg_n_keys(); i++) {
		char shown[128];
		if (!runcfg_key_default(i, shown, sizeof shown))
			continue;
		const char *key = runcfg_key_name(i);
		shown[strcspn(shown, ":")] = '\0';   /* "15729: 60 ns per ..." gives its value */
		struct runcfg *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
		assert_non_null(a);
		assert_non_null(b);
		runcfg_defaults(a);
		memcpy(b, a, sizeof *a);
		struct diag d = { 0 };
		int rc = runcfg_set(b, key, shown, "--x", &d);
		if (rc)
			fail_msg("--%s %s: %s", key, shown, d.msg);
		normalise(a);
		normalise(b);
		if (memcmp(a, b, sizeof *a))
			fail_msg("--%s: the shown default '%s' is not the real one", key, shown);
		n_exact++;
		free(a);
		free(b);
	}
	assert_true(n_exact >= 30);
}

static uint64_t f_chunk(const struct runcfg *c) { return c->chunk_bytes; }
static uint64_t f_dst_chunk(const struct runcfg *c) { return c->dst_chunk_bytes; }
static uint64_t f_pin(const struct runcfg *c) { return c->pin_all; }
static uint64_t f_dpin(const struct runcfg *c) { return c->dst_pin_all; }
static uint64_t f_backend(const struct runcfg *c) { return c->backend; }
static uint64_t f_link(const struct runcfg *c) { return c->cost.link_bytes_per_s; }
static uint64_t f_bw(const struct runcfg *c) { return c->eng.max_bandwidth_bytes_per_s; }
static uint64_t f_dev(const struct runcfg *c) { return c->eng.device_state_bytes; }
static uint64_t f_seed(const struct runcfg *c) { return c->seed; }
static uint64_t f_ack(const struct runcfg *c) { return (uint64_t)c->ack_timeout; }
static uint64_t f_workers(const struct runcfg *c) { return c->gen.workers; }
static uint64_t f_guest(const struct runcfg *c) { return c->gen.guest_bytes; }
static uint64_t f_neg(const struct runcfg *c) { return c->src_negotiate * 2u + c->dst_negotiate; }
static uint64_t f_nexp(const struct runcfg *c) { return (uint64_t)c->n_expect; }
static uint64_t f_memlock(const struct runcfg *c) { return c->dst_memlock_bytes; }

struct set_case {
	const char *key, *value;
	const char *error;                        /* NULL: accepted */
	uint64_t (*field)(const struct runcfg *);
	uint64_t want;
};

static const struct set_case set_cases[] = {
	/* SIZE, power of two with bounds */
	{ "chunk-size", "64M", NULL, f_chunk, 64ull << 20 },
	{ "chunk-size", "1G", NULL, f_chunk, 1ull << 30 },
	{ "chunk-size", "512K", "--chunk-size: '512K' is not a power of two from 1M to 1G", NULL, 0 },
	{ "chunk-size", "3M", "--chunk-size: '3M' is not a power of two from 1M to 1G", NULL, 0 },
	{ "dst-chunk-size", "2M", NULL, f_dst_chunk, 2ull << 20 },
	/* bool */
	{ "pin-all", "true", NULL, f_pin, 1 },
	{ "dst-pin-all", "off", NULL, f_dpin, 0 },
	{ "dst-pin-all", "maybe", "--dst-pin-all: 'maybe' is not a boolean (true/false)", NULL, 0 },
	/* enum */
	{ "backend", "verbs", NULL, f_backend, HCA_BACKEND_VERBS },
	{ "backend", "mock", "--backend: 'mock' is not model or verbs", NULL, 0 },
	{ "protocol", "negotiated", NULL, f_neg, 3 },
	{ "src-protocol", "negotiated", NULL, f_neg, 2 },
	{ "dst-protocol", "x", "--dst-protocol: 'x' is not qemu or negotiated", NULL, 0 },
	/* u64 with bounds, in the option's unit */
	{ "link-gbps", "8", NULL, f_link, 1000000000ull },
	{ "link-gbps", "0", "--link-gbps: '0' is not a link rate in Gb/s from 1 to 10000", NULL, 0 },
	{ "link-gbps", "10001", "--link-gbps: '10001' is not a link rate in Gb/s from 1 to 10000", NULL, 0 },
	{ "ack-timeout", "14", NULL, f_ack, 14 },
	{ "ack-timeout", "32", "--ack-timeout: '32' is not an exponent from 1 to 31", NULL, 0 },
	{ "seed", "0", NULL, f_seed, 0 },
	{ "seed", "18446744073709551615", NULL, f_seed, UINT64_MAX },
	{ "seed", "-1", "--seed: '-1' is not a decimal number", NULL, 0 },
	{ "workers", "4096", NULL, f_workers, 4096 },
	{ "workers", "0", "--workers: '0' is not a number of workers (1..4096)", NULL, 0 },
	/* SIZE, and its special words */
	{ "guest", "8G", NULL, f_guest, 8ull << 30 },
	{ "max-bandwidth", "unlimited", NULL, f_bw, 0 },
	{ "max-bandwidth", "9", "--max-bandwidth: '9' is not a SIZE per second (e.g. 128M, 10G) or 'unlimited'", NULL, 0 },
	{ "device-state", "0", NULL, f_dev, 0 },
	{ "device-state", "65M", "--device-state: '65M' is not a SIZE up to 64M", NULL, 0 },
	{ "dst-memlock", "64M", NULL, f_memlock, 64ull << 20 },
	{ "dst-memlock", "0", "--dst-memlock: '0' is not a SIZE (e.g. 64M)", NULL, 0 },
	{ "page-size", "0", "--page-size: '0' is not a SIZE (e.g. 4K)", NULL, 0 },
	/* rule and text */
	{ "expect", "failed:PEER_ERROR|NOT_CONVERGED", NULL, f_nexp, 2 },
	{ "expect", "failed:NOPE", "--expect: expect: unknown cause 'NOPE' (see migbed causes)", NULL, 0 },
	{ "expect", "done", "--expect: 'done' is not 'completed' or 'failed:CAUSE[|CAUSE...]'", NULL, 0 },
	{ "hot-fraction", "1", "--hot-fraction: '1' is not a fraction between 0 and 1", NULL, 0 },
	{ "nope", "1", "--nope: unknown key 'nope' (see migbed run --help)", NULL, 0 },
};

static void test_set_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof set_cases / sizeof *set_cases; i++) {
		const struct set_case *t = &set_cases[i];
		struct runcfg *c = calloc(1, sizeof *c);
		assert_non_null(c);
		runcfg_defaults(c);
		char where[64];
		snprintf(where, sizeof where, "--%s", t->key);
		struct diag d = { 0 };
		int rc = runcfg_set(c, t->key, t->value, where, &d);
		if (t->error) {
			if (rc == 0 || strcmp(d.msg, t->error))
				fail_msg("--%s %s: got rc %d '%s', want '%s'", t->key, t->value, rc, d.msg, t->error);
		} else {
			if (rc)
				fail_msg("--%s %s: %s", t->key, t->value, d.msg);
			if (t->field(c) != t->want)
				fail_msg("--%s %s: field %llu, want %llu", t->key, t->value,
					 (unsigned long long)t->field(c), (unsigned long long)t->want);
		}
		free(c);
	}
}

struct line_case {
	const char *text;     /* the scenario file */
	const char *error;    /* after "PATH:", NULL: accepted */
};

static const struct line_case line_cases[] = {
	{ "# c\nchunk-size = 2M\n", NULL },
	{ "chunk-size = 2M\nchunk-size\n", "2: expected 'key = value', got 'chunk-size'" },
	{ "seed =\n", "1: key 'seed' has no value" },
	{ "link-gbps = 0\n", "1: link-gbps: '0' is not a link rate in Gb/s from 1 to 10000" },
	{ "frobnicate = 1\n", "1: unknown key 'frobnicate' (see migbed run --help)" },
	{ "pause-at = src\n", "1: pause-at: 'src' is not SIDE:EVENT[#N] (SIDE src|dst|sim|wire|*, EVENT an "
			      "event-log name such as registered or round, N >= 1; e.g. src:registered#2)" },
};

static void test_scenario_lines(void **state)
{
	(void)state;
	char path[] = "/tmp/options_test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof line_cases / sizeof *line_cases; i++) {
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(line_cases[i].text, f);
		fclose(f);
		struct runcfg *c = calloc(1, sizeof *c);
		assert_non_null(c);
		runcfg_defaults(c);
		struct diag d = { 0 };
		int rc = runcfg_load_scenario(c, path, &d);
		char want[512] = "";
		if (line_cases[i].error)
			snprintf(want, sizeof want, "%s:%s", path, line_cases[i].error);
		if (line_cases[i].error ? (rc == 0 || strcmp(d.msg, want)) : rc != 0)
			fail_msg("case %zu: got rc %d '%s', want '%s'", i, rc, d.msg, want);
		free(c);
	}
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shown_defaults_are_real),
		cmocka_unit_test(test_set_table),
		cmocka_unit_test(test_scenario_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
