/* SPDX-License-Identifier: MIT */
/* options_test - the one option table (cli/runcfg.c), table-driven: every shown default is
 * the real one; "--key value", a scenario line or a whole command line (run, source, dest,
 * trace gen, torture, sweep) gives the field or the exact error; no 0 means "unset"; each command's
 * --help lists exactly its rows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/run_args.h"
#include "cli/runcfg.h"

static const unsigned all_cmds[] = { OPTS_RUN, OPTS_SOURCE, OPTS_DEST, OPTS_TRACE_GEN, OPTS_TORTURE, OPTS_SWEEP, OPTS_SWARM };
#define N_CMDS (sizeof all_cmds / sizeof all_cmds[0])

static unsigned first_cmd(unsigned cmds)
{
	for (size_t i = 0; i < N_CMDS; i++)
		if (cmds & all_cmds[i])
			return all_cmds[i];
	return 0;
}

struct both {
	struct runcfg c;
	struct opts_extra x;
};

static struct both *fresh(void)
{
	struct both *b = calloc(1, sizeof *b);
	assert_non_null(b);
	runcfg_defaults(&b->c);
	opts_extra_defaults(&b->x);
	return b;
}

/* For every row whose default is exact, giving the shown default changes no value (what it
 * records is only that the key was given). Compared after runcfg_finish's derived defaults. */
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
		struct both *a = fresh(), *b = fresh();
		struct diag d = { 0 };
		if (opts_set(first_cmd(runcfg_key_cmds(i)), &b->c, &b->x, key, shown, "--x", &d))
			fail_msg("--%s %s: %s", key, shown, d.msg);
		assert_true(b->c.given[i] || b->x.given[i]);
		memset(b->c.given, 0, sizeof b->c.given);
		memset(b->x.given, 0, sizeof b->x.given);
		assert_int_equal(runcfg_finish(&a->c, &d), 0);
		assert_int_equal(runcfg_finish(&b->c, &d), 0);
		if (memcmp(a, b, sizeof *a))
			fail_msg("--%s: the shown default '%s' is not the real one", key, shown);
		n_exact++;
		free(a);
		free(b);
	}
	assert_true(n_exact >= 35);
}

/* The generator keys have one set of defaults: a run's are the generator's. */
static void test_one_set_of_generator_defaults(void **state)
{
	(void)state;
	struct both *b = fresh();
	struct tgen_opts g;
	struct diag d = { 0 };
	tgen_defaults(&g);
	assert_memory_equal(&b->c.gen, &g, sizeof g);
	/* 2 x 16M at 32M/s, the default run's, unchanged */
	assert_int_equal(runcfg_finish(&b->c, &d), 0);
	assert_int_equal(b->c.gen.workers, 2);
	assert_int_equal(b->c.gen.worker_bytes, 16u << 20);
	assert_int_equal(b->c.gen.sweep_bytes_per_s, 32u << 20);
	free(b);
}

/* No number means "unset": every key whose bounds exclude 0 refuses it by its bounds (the
 * generator's 0s used to be replaced by defaults), and the keys where 0 is a value take it. */
static const char *const zero_refused[] = {
	"chunk-size", "dst-chunk-size", "link-gbps", "downtime-limit-ms", "max-bandwidth", "max-time-ms",
	"wait-timeout-ms", "dst-memlock", "ack-timeout", "guest", "duration-ms", "epoch-ms", "page-size",
	"workers", "worker-bytes", "sweep-rate", "rate", "hot-fraction", "hot-rate", "cold-rate",
	"accept-timeout-ms", "ready-fd", "max-runs", "watchdog-ms", "jobs", "shard",
};
static const char *const zero_taken[] = { "seed", "latency-us", "reg-us-per-gib", "device-state", "caps-version",
					  "rnr-retry", "odp-fault-us" };

static int set_zero(const char *key, struct diag *d)
{
	for (size_t i = 0; i < runcfg_n_keys(); i++) {
		if (strcmp(runcfg_key_name(i), key))
			continue;
		struct both *b = fresh();
		int rc = opts_set(first_cmd(runcfg_key_cmds(i)), &b->c, &b->x, key, "0", "--x", d);
		free(b);
		return rc;
	}
	fail_msg("no key %s", key);
	return 0;
}

static void test_zero_is_refused_by_bounds(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof zero_refused / sizeof *zero_refused; i++) {
		struct diag d = { 0 };
		if (set_zero(zero_refused[i], &d) == 0 || strncmp(d.msg, "--x: '0' is not ", 16))
			fail_msg("--%s 0: '%s'", zero_refused[i], d.msg);
	}
	for (size_t i = 0; i < sizeof zero_taken / sizeof *zero_taken; i++) {
		struct diag d = { 0 };
		if (set_zero(zero_taken[i], &d))
			fail_msg("--%s 0: '%s'", zero_taken[i], d.msg);
	}
}

static uint64_t f_chunk(const struct both *b) { return b->c.chunk_bytes; }
static uint64_t f_dst_chunk(const struct both *b) { return b->c.dst_chunk_bytes; }
static uint64_t f_pin(const struct both *b) { return b->c.pin_all; }
static uint64_t f_dpin(const struct both *b) { return b->c.dst_pin_all; }
static uint64_t f_backend(const struct both *b) { return b->c.backend; }
static uint64_t f_link(const struct both *b) { return b->c.cost.link_bytes_per_s; }
static uint64_t f_bw(const struct both *b) { return b->c.eng.max_bandwidth_bytes_per_s; }
static uint64_t f_dev(const struct both *b) { return b->c.eng.device_state_bytes; }
static uint64_t f_seed(const struct both *b) { return b->c.seed; }
static uint64_t f_rnr(const struct both *b) { return b->c.rnr_retry; }
static uint64_t f_odp(const struct both *b) { return b->c.dst_odp; }
static uint64_t f_odp_fault(const struct both *b) { return b->c.cost.odp_fault_ns; }
static uint64_t f_ack(const struct both *b) { return (uint64_t)b->c.ack_timeout; }
static uint64_t f_workers(const struct both *b) { return b->c.gen.workers; }
static uint64_t f_guest(const struct both *b) { return b->c.gen.guest_bytes; }
static uint64_t f_neg(const struct both *b) { return b->c.src_negotiate * 2u + b->c.dst_negotiate; }
static uint64_t f_nexp(const struct both *b) { return (uint64_t)b->c.n_expect; }
static uint64_t f_memlock(const struct both *b) { return b->c.dst_memlock_bytes; }
static uint64_t f_pattern(const struct both *b) { return b->c.gen.pattern; }
static uint64_t f_hot_milli(const struct both *b) { return (uint64_t)(b->c.gen.hot_fraction * 1000 + 0.5); }
static uint64_t f_max_runs(const struct both *b) { return b->x.max_runs; }
static uint64_t f_shard(const struct both *b) { return b->x.shard_k * 1000 + b->x.shard_n; }
static uint64_t f_jobs(const struct both *b) { return b->x.jobs; }
static uint64_t f_ready_fd(const struct both *b) { return b->x.ready_fd; }
static uint64_t f_accept(const struct both *b) { return b->x.accept_timeout_ms; }
static uint64_t f_sites_len(const struct both *b) { return strlen(b->x.sites); }
static uint64_t f_connect_len(const struct both *b) { return strlen(b->x.connect); }

struct set_case {
	unsigned cmd;
	const char *key, *value;
	const char *error;                        /* NULL: accepted */
	uint64_t (*field)(const struct both *);
	uint64_t want;
};

#define R OPTS_RUN
#define G OPTS_TRACE_GEN
#define T OPTS_TORTURE
static const struct set_case set_cases[] = {
	/* SIZE, power of two with bounds */
	{ R, "chunk-size", "64M", NULL, f_chunk, 64ull << 20 },
	{ R, "chunk-size", "1G", NULL, f_chunk, 1ull << 30 },
	{ R, "chunk-size", "512K", "--chunk-size: '512K' is not a power of two from 1M to 1G", NULL, 0 },
	{ R, "chunk-size", "3M", "--chunk-size: '3M' is not a power of two from 1M to 1G", NULL, 0 },
	{ R, "dst-chunk-size", "2M", NULL, f_dst_chunk, 2ull << 20 },
	/* bool */
	{ R, "pin-all", "true", NULL, f_pin, 1 },
	{ R, "dst-pin-all", "off", NULL, f_dpin, 0 },
	{ R, "dst-pin-all", "maybe", "--dst-pin-all: 'maybe' is not a boolean (true/false)", NULL, 0 },
	/* choice */
	{ R, "backend", "verbs", NULL, f_backend, HCA_BACKEND_VERBS },
	{ R, "backend", "mock", "--backend: 'mock' is not model or verbs", NULL, 0 },
	{ R, "protocol", "negotiated", NULL, f_neg, 3 },
	{ R, "src-protocol", "negotiated", NULL, f_neg, 2 },
	{ R, "dst-protocol", "x", "--dst-protocol: 'x' is not qemu or negotiated", NULL, 0 },
	{ G, "pattern", "hotcold", NULL, f_pattern, TGEN_HOTCOLD },
	{ G, "pattern", "zigzag", "--pattern: 'zigzag' is not rand-set, random, hotcold or idle", NULL, 0 },
	/* u64 with bounds, in the option's unit */
	{ R, "link-gbps", "8", NULL, f_link, 1000000000ull },
	{ R, "link-gbps", "0", "--link-gbps: '0' is not a link rate in Gb/s from 1 to 10000", NULL, 0 },
	{ R, "link-gbps", "10001", "--link-gbps: '10001' is not a link rate in Gb/s from 1 to 10000", NULL, 0 },
	{ R, "ack-timeout", "14", NULL, f_ack, 14 },
	{ R, "ack-timeout", "32", "--ack-timeout: '32' is not an exponent from 1 to 31", NULL, 0 },
	{ R, "rnr-retry", "7", NULL, f_rnr, 7 },
	{ R, "rnr-retry", "8", "--rnr-retry: '8' is not an RNR retry count up to 7", NULL, 0 },
	{ R, "dst-odp", "prefetch", NULL, f_odp, PROTO_ODP_PREFETCH },
	{ R, "dst-odp", "on", NULL, f_odp, PROTO_ODP_ON },
	{ R, "dst-odp", "yes", "--dst-odp: 'yes' is not off, on or prefetch", NULL, 0 },
	{ R, "odp-fault-us", "7", NULL, f_odp_fault, 7000 },
	{ R, "odp-fault-us", "1000001", "--odp-fault-us: '1000001' is not a time in microseconds up to 1000000", NULL, 0 },
	{ R, "seed", "0", NULL, f_seed, 0 },
	{ R, "seed", "18446744073709551615", NULL, f_seed, UINT64_MAX },
	{ R, "seed", "-1", "--seed: '-1' is not a decimal number", NULL, 0 },
	/* the generator keys: the same row, the same bounds, in run and trace gen */
	{ R, "workers", "4096", NULL, f_workers, 4096 },
	{ R, "workers", "0", "--workers: '0' is not a number of workers from 1 to 4096", NULL, 0 },
	{ R, "workers", "5000", "--workers: '5000' is not a number of workers from 1 to 4096", NULL, 0 },
	{ G, "workers", "5000", "--workers: '5000' is not a number of workers from 1 to 4096", NULL, 0 },
	{ T, "workers", "5000", "--workers: '5000' is not a number of workers from 1 to 4096", NULL, 0 },
	{ R, "cold-rate", "0", "--cold-rate: '0' is not a rate in pages/s from 1 to 4294967295", NULL, 0 },
	{ G, "cold-rate", "0", "--cold-rate: '0' is not a rate in pages/s from 1 to 4294967295", NULL, 0 },
	{ G, "duration-ms", "ten", "--duration-ms: 'ten' is not a time in ms from 1 to 86400000", NULL, 0 },
	{ G, "hot-fraction", "0.25", NULL, f_hot_milli, 250 },
	{ G, "hot-fraction", "nan", "--hot-fraction: 'nan' is not a fraction strictly between 0 and 1", NULL, 0 },
	{ R, "hot-fraction", "1", "--hot-fraction: '1' is not a fraction strictly between 0 and 1", NULL, 0 },
	{ G, "page-size", "3000", "--page-size: '3000' is not a power of two from 512 to 1G", NULL, 0 },
	{ R, "page-size", "0", "--page-size: '0' is not a power of two from 512 to 1G", NULL, 0 },
	{ G, "guest", "8G", NULL, f_guest, 8ull << 30 },
	{ G, "guest", "abc", "--guest: 'abc' is not a SIZE of 1 or more", NULL, 0 },
	/* SIZE, and its special words */
	{ R, "max-bandwidth", "unlimited", NULL, f_bw, 0 },
	{ R, "max-bandwidth", "9", "--max-bandwidth: '9' is not a SIZE per second of 10 or more, or 'unlimited'", NULL, 0 },
	{ R, "device-state", "0", NULL, f_dev, 0 },
	{ R, "device-state", "65M", "--device-state: '65M' is not a SIZE up to 64M", NULL, 0 },
	{ R, "dst-memlock", "64M", NULL, f_memlock, 64ull << 20 },
	{ R, "dst-memlock", "0", "--dst-memlock: '0' is not a SIZE of 1 or more", NULL, 0 },
	/* rule and text */
	{ R, "expect", "failed:PEER_ERROR|NOT_CONVERGED", NULL, f_nexp, 2 },
	{ R, "expect", "failed:NOPE", "--expect: expect: unknown cause 'NOPE' (see migbed causes)", NULL, 0 },
	{ R, "expect", "done", "--expect: 'done' is not 'completed' or 'failed:CAUSE[|CAUSE...]'", NULL, 0 },
	{ R, "trace", "", "--trace: value empty or longer than 1023 bytes", NULL, 0 },
	{ R, "nope", "1", "--nope: unknown key 'nope' (see migbed run --help)", NULL, 0 },
	/* one command's own keys: not another's */
	{ R, "max-runs", "5", "--max-runs: unknown key 'max-runs' (see migbed run --help)", NULL, 0 },
	{ G, "fault", "reg_mr -> drop", "--fault: unknown key 'fault' (see migbed trace gen --help)", NULL, 0 },
	{ T, "max-runs", "5", NULL, f_max_runs, 5 },
	{ T, "max-runs", "0", "--max-runs: '0' is not a number of runs from 1 to 100000", NULL, 0 },
	{ T, "shard", "2/3", NULL, f_shard, 2003 },
	{ T, "shard", "3/2", "--shard: '3/2' is not K/N with 1 <= K <= N <= 100000", NULL, 0 },
	{ T, "jobs", "64", NULL, f_jobs, 64 },
	{ T, "jobs", "65", "--jobs: '65' is not a number of jobs from 1 to 64", NULL, 0 },
	{ T, "sites", "reg_mr,msg.*", NULL, f_sites_len, 12 },
	{ T, "sites", ",", "--sites: no site given", NULL, 0 },
	{ T, "sites", "reg_mr,wc.wirte", "--sites: 'wc.wirte' matches no fault site (reg_mr, post_send.write, wc.*, "
					  "msg.ready, ...: see docs/faults.md)", NULL, 0 },
	{ OPTS_DEST, "ready-fd", "9", NULL, f_ready_fd, 9 },
	{ OPTS_DEST, "ready-fd", "1", "--ready-fd: '1' is not a file descriptor from 3 to 1023", NULL, 0 },
	{ OPTS_DEST, "accept-timeout-ms", "0", "--accept-timeout-ms: '0' is not a time in ms from 1 to 86400000", NULL, 0 },
	{ OPTS_DEST, "accept-timeout-ms", "5", NULL, f_accept, 5 },
	{ OPTS_SOURCE, "connect", "198.18.0.1:29200", NULL, f_connect_len, 16 },
	{ OPTS_SOURCE, "listen", "x", "--listen: unknown key 'listen' (see migbed source --help)", NULL, 0 },
};

static void test_set_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof set_cases / sizeof *set_cases; i++) {
		const struct set_case *t = &set_cases[i];
		struct both *b = fresh();
		char where[64];
		snprintf(where, sizeof where, "--%s", t->key);
		struct diag d = { 0 };
		int rc = opts_set(t->cmd, &b->c, &b->x, t->key, t->value, where, &d);
		if (t->error) {
			if (rc == 0 || strcmp(d.msg, t->error))
				fail_msg("%s --%s %s: got rc %d '%s', want '%s'", opts_cmd_name(t->cmd), t->key, t->value, rc,
					 d.msg, t->error);
		} else {
			if (rc)
				fail_msg("%s --%s %s: %s", opts_cmd_name(t->cmd), t->key, t->value, d.msg);
			if (t->field(b) != t->want)
				fail_msg("--%s %s: field %llu, want %llu", t->key, t->value,
					 (unsigned long long)t->field(b), (unsigned long long)t->want);
		}
		free(b);
	}
}

/* A whole command line: "CMD ARGS..." (words split at spaces) -> the exact error, or the
 * generated trace's options / the argv left for run_parse_args. */
struct line_case {
	unsigned cmd;
	const char *line;
	const char *error;     /* NULL: accepted */
	const char *rest;      /* take_extra commands: argv left, joined by spaces */
	uint32_t workers;      /* trace gen / run: the generator's result (0: not checked) */
	uint64_t worker_bytes, sweep;
};

#define GEN_OK "--pattern rand-set --duration-ms 100 --seed 1 -o f"
static const struct line_case argv_cases[] = {
	/* trace gen: the generator keys with run's bounds and defaults */
	{ G, "--guest 64M " GEN_OK, NULL, NULL, 2, 16u << 20, 32u << 20 },
	{ G, "--guest 4M " GEN_OK, NULL, NULL, 2, 1u << 20, 32u << 20 },
	{ G, "--guest 64M --workers 4 --worker-bytes 8M --sweep-rate=1G " GEN_OK, NULL, NULL, 4, 8u << 20, 1u << 30 },
	{ G, "--pattern idle --guest 1M --duration-ms 10 --seed 1 -ofile", NULL, NULL, 0, 0, 0 },
	{ G, "--pattern idle --guest 1M --duration-ms 10 --seed 1 -xfile", "unknown option '-xfile' (see migbed trace gen --help)", NULL, 0, 0, 0 },
	{ G, "--guest 64M --workers 5000 " GEN_OK, "--workers: '5000' is not a number of workers from 1 to 4096", NULL, 0, 0, 0 },
	{ G, "--guest 64M --cold-rate 0 " GEN_OK, "--cold-rate: '0' is not a rate in pages/s from 1 to 4294967295", NULL, 0, 0, 0 },
	{ G, "--guest 64M --workers 0 " GEN_OK, "--workers: '0' is not a number of workers from 1 to 4096", NULL, 0, 0, 0 },
	{ G, "--pattern idle --guest 1M --duration-ms 10 --seed 1", "--output FILE is required (see migbed trace gen --help)", NULL, 0, 0, 0 },
	{ G, "--pattern idle --guest 1M --duration-ms 10 -o f", "--seed N is required (see migbed trace gen --help)", NULL, 0, 0, 0 },
	{ G, "--pattern random --guest 1M --workers 2 --duration-ms 10 --seed 1 -o f",
	  "workers only applies to pattern rand-set, not random", NULL, 0, 0, 0 },
	{ G, "--guest 1M --workers 5 --worker-bytes 256K " GEN_OK,
	  "workers x worker-bytes (5 x 256K) does not fit in the guest (1M)", NULL, 0, 0, 0 },
	{ G, "--guest 1M --colour " GEN_OK, "unknown option '--colour' (see migbed trace gen --help)", NULL, 0, 0, 0 },
	{ G, "--guest 1M -x " GEN_OK, "unknown option '-x' (see migbed trace gen --help)", NULL, 0, 0, 0 },
	{ G, "--guest 1M " GEN_OK " extra", "unexpected argument 'extra'", NULL, 0, 0, 0 },
	{ G, "--guest 1M --pattern idle --duration-ms 10 --seed", "option '--seed' needs a value", NULL, 0, 0, 0 },
	{ G, "--guest 1M --max-runs 3 " GEN_OK, "unknown option '--max-runs' (see migbed trace gen --help)", NULL, 0, 0, 0 },
	/* torture: its own keys out, a run's (and their values) left in order */
	{ T, "s.scn --seed 3 --max-runs 5 --json=j.json --quiet --fault reg_mr -> drop", NULL,
	  "torture s.scn --seed 3 --quiet --fault reg_mr -> drop", 0, 0, 0 },
	{ T, "--description --jobs --jobs 2", NULL, "torture --description --jobs", 0, 0, 0 },
	{ T, "--bogus 1 --watchdog-ms 99", "--watchdog-ms: '99' is not a time in ms from 100 to 86400000", NULL, 0, 0, 0 },
	{ T, "--max-runs", "--max-runs needs a value", NULL, 0, 0, 0 },
	/* sweep: its lists out (each value checked by the swept key's row), a run's keys left */
	{ OPTS_SWEEP, "s.scn --chunk-sizes 1M,64M --pin-all off,on --guest=8G --seed 3 --chunk-size 2M --quiet", NULL,
	  "sweep s.scn --seed 3 --chunk-size 2M --quiet", 0, 0, 0 },
	{ OPTS_SWEEP, "--chunk-sizes 1M,3M", "--chunk-sizes: '3M' is not a power of two from 1M to 1G", NULL, 0, 0, 0 },
	{ OPTS_SWEEP, "--link-gbps 10,0", "--link-gbps: '0' is not a link rate in Gb/s from 1 to 10000", NULL, 0, 0, 0 },
	{ OPTS_SWEEP, "--max-bandwidth unlimited,1G --downtime-limit-ms 300,0",
	  "--downtime-limit-ms: '0' is not a time in ms from 1 to 3600000", NULL, 0, 0, 0 },
	{ OPTS_SWEEP, "--pin-all on,maybe", "--pin-all: 'maybe' is not a boolean (true/false)", NULL, 0, 0, 0 },
	{ OPTS_SWEEP, "--guest 8G,,16G", "--guest: '8G,,16G': an empty value (values are separated by single commas)", NULL, 0, 0, 0 },
	{ OPTS_SWEEP, "--shard 3/2", "--shard: '3/2' is not K/N with 1 <= K <= N <= 100000", NULL, 0, 0, 0 },
	/* source and dest */
	{ OPTS_DEST, "--listen 1.2.3.4:5 --ready-fd 1", "--ready-fd: '1' is not a file descriptor from 3 to 1023", NULL, 0, 0, 0 },
	{ OPTS_DEST, "a.scn --accept-timeout-ms=7 --listen 1.2.3.4:5 --seed 2", NULL, "dest a.scn --seed 2", 0, 0, 0 },
	{ OPTS_DEST, "--seed 2", "--listen IP:PORT is required (see migbed dest --help)", NULL, 0, 0, 0 },
	{ OPTS_SOURCE, "--connect 1.2.3.4:5 --dump-mem m.bin --json r.json", NULL, "source --json r.json", 0, 0, 0 },
	{ OPTS_SOURCE, "--dump-mem m.bin", "--connect IP:PORT[@SRC_IP] is required (see migbed source --help)", NULL, 0, 0, 0 },
	/* run (and torture's runs): --guest 4M fits the default workers now */
	{ R, "--guest 4M", NULL, NULL, 2, 1u << 20, 32u << 20 },
	{ R, "--guest 256M", NULL, NULL, 2, 16u << 20, 32u << 20 },
	{ R, "--cold-rate 0", "--cold-rate: '0' is not a rate in pages/s from 1 to 4294967295", NULL, 0, 0, 0 },
	{ R, "--pattern idle --hot-rate 5", "hot-rate only applies to pattern hotcold, not idle", NULL, 0, 0, 0 },
};

static int split_words(char *buf, char **argv, int max)
{
	int n = 1;
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && n < max - 1; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	return n;
}

static void no_usage(FILE *f) { (void)f; }

/* Run one case's command line through its command's parser: 0 ok, else d set. */
static int parse_line(const struct line_case *t, struct both *b, char **argv, int *argc, struct diag *d)
{
	if (t->cmd == OPTS_TRACE_GEN) {
		int rc = opts_parse_argv(t->cmd, &b->c, &b->x, *argc, argv, d);
		if (rc || opts_check_required(t->cmd, &b->c, &b->x, d))
			return -1;
		return opts_finish_gen(&b->c, d);
	}
	if (t->cmd == OPTS_RUN)
		return run_parse_args(&b->c, d, *argc, argv, no_usage);
	if (opts_take_extra(t->cmd, &b->x, argc, argv, d))
		return -1;
	return t->cmd == OPTS_TORTURE || t->cmd == OPTS_SWEEP ? 0 : opts_check_required(t->cmd, NULL, &b->x, d);
}

static void check_line(const struct line_case *t)
{
	char buf[512], *argv[64], rest[512] = "";
	snprintf(buf, sizeof buf, "%s", t->line);
	int argc = split_words(buf, argv, 64);
	argv[0] = (char *)opts_cmd_name(t->cmd);
	struct both *b = fresh();
	struct diag d = { 0 };
	int rc = parse_line(t, b, argv, &argc, &d);
	if (t->error ? (rc == 0 || strcmp(d.msg, t->error)) : rc != 0)
		fail_msg("%s %s: got rc %d '%s', want '%s'", argv[0], t->line, rc, d.msg, t->error ? t->error : "ok");
	for (int i = 0; !t->error && t->rest && i < argc; i++)
		snprintf(rest + strlen(rest), sizeof rest - strlen(rest), "%s%s", i ? " " : "", argv[i]);
	if (!t->error && t->rest && strcmp(rest, t->rest))
		fail_msg("%s: left '%s', want '%s'", t->line, rest, t->rest);
	if (!t->error && t->workers &&
	    (b->c.gen.workers != t->workers || b->c.gen.worker_bytes != t->worker_bytes || b->c.gen.sweep_bytes_per_s != t->sweep))
		fail_msg("%s: generator %u x %llu at %llu", t->line, b->c.gen.workers,
			 (unsigned long long)b->c.gen.worker_bytes, (unsigned long long)b->c.gen.sweep_bytes_per_s);
	free(b);
}

static void test_command_lines(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof argv_cases / sizeof *argv_cases; i++)
		check_line(&argv_cases[i]);
	/* what torture took is in its options */
	struct both *b = fresh();
	char buf[] = "--max-runs 5 --json=j.json --shard 2/4", *argv[16];
	int argc = split_words(buf, argv, 16);
	argv[0] = "torture";
	struct diag d = { 0 };
	assert_int_equal(opts_take_extra(OPTS_TORTURE, &b->x, &argc, argv, &d), 0);
	assert_int_equal(argc, 1);
	assert_int_equal(b->x.max_runs, 5);
	assert_string_equal(b->x.json, "j.json");
	assert_int_equal(b->x.shard_k * 10 + b->x.shard_n, 24);
	assert_int_equal(b->x.watchdog_ms, 60000);   /* the table's default */
	free(b);
	/* what sweep took is in its options: the lists' values as given */
	b = fresh();
	char sbuf[] = "--chunk-sizes 1M,64M,1G --max-bandwidth=unlimited --csv - --plot p.svg", *sargv[16];
	argc = split_words(sbuf, sargv, 16);
	sargv[0] = "sweep";
	assert_int_equal(opts_take_extra(OPTS_SWEEP, &b->x, &argc, sargv, &d), 0);
	assert_int_equal(argc, 1);
	assert_int_equal(b->x.sweep[SWEEP_CHUNK].n, 3);
	assert_string_equal(b->x.sweep[SWEEP_CHUNK].v[2], "1G");
	assert_int_equal(b->x.sweep[SWEEP_BANDWIDTH].n, 1);
	assert_int_equal(b->x.sweep[SWEEP_GUEST].n, 0);
	assert_string_equal(b->x.csv, "-");
	assert_string_equal(b->x.plot, "p.svg");
	free(b);
}

struct scn_case {
	const char *text;     /* the scenario file */
	const char *error;    /* after "PATH:", NULL: accepted */
};

static const struct scn_case scn_cases[] = {
	{ "# c\nchunk-size = 2M\n", NULL },
	{ "chunk-size = 2M\nchunk-size\n", "2: expected 'key = value', got 'chunk-size'" },
	{ "seed =\n", "1: key 'seed' has no value" },
	{ "link-gbps = 0\n", "1: link-gbps: '0' is not a link rate in Gb/s from 1 to 10000" },
	{ "cold-rate = 0\n", "1: cold-rate: '0' is not a rate in pages/s from 1 to 4294967295" },
	{ "frobnicate = 1\n", "1: unknown key 'frobnicate' (see migbed run --help)" },
	{ "max-runs = 1\n", "1: unknown key 'max-runs' (see migbed run --help)" },
	/* issue 16: a key given twice was taken silently (the last one won) */
	{ "guest = 16M\n# c\nguest = 32M\n", "3: key 'guest' given twice (first on line 1)" },
	{ "fault = reg_mr #1 -> errno(EIO)\nfault = reg_mr #2 -> errno(EIO)\n", NULL },
	{ "seed = 1", NULL },             /* the last line without its newline */
	/* other tools' spellings: stress-ng's --vm options, QEMU's rdma: URI */
	{ "vm = 3\nvm-bytes = 1m\nvm-method = rand-set\n", NULL },
	{ "vm = 3\nworkers = 2\n", "2: key 'workers' given twice (first on line 1)" },
	{ "vm-method = random\n", "1: stress-ng's method 'random' does not map onto migbed: only rand-set does "
				  "(as --pattern rand-set); migbed's own patterns are --pattern rand-set|random|hotcold|idle" },
	{ "vm-populate = yes\n", "1: stress-ng's --vm-populate does not map onto migbed: a trace does not model "
				 "how the host backs guest memory" },
	{ "dst-addr = rdma:198.18.0.1:29200\n", NULL },
	{ "dst-addr = rdma:[fe80::1]:1\n", NULL },
	{ "pause-at = src\n", "1: pause-at: 'src' is not SIDE:EVENT[#N] (SIDE src|dst|sim|wire|*, EVENT an "
			      "event-log name such as registered or round, N >= 1; e.g. src:registered#2)" },
};

/* An alias sets its row; QEMU's URI is stored without its scheme. */
static void test_other_spellings(void **state)
{
	struct both *b = fresh();
	struct diag d = { 0 };
	(void)state;
	assert_int_equal(runcfg_set(&b->c, "vm", "5", "--vm", &d), 0);
	assert_int_equal(runcfg_set(&b->c, "vm-bytes", "1.5m", "--vm-bytes", &d), 0);
	assert_int_equal(runcfg_set(&b->c, "dst-addr", "rdma:[::1]:4444", "--dst-addr", &d), 0);
	assert_int_equal(b->c.gen.workers, 5);
	assert_int_equal(b->c.gen.worker_bytes, 3u << 19);   /* the total until runcfg_finish divides it */
	assert_true(b->c.worker_bytes_total);
	assert_int_equal(runcfg_set(&b->c, "worker-bytes", "1m", "--worker-bytes", &d), 0);
	assert_false(b->c.worker_bytes_total);                /* the last one wins */
	assert_string_equal(b->c.dst_addr, "[::1]:4444");
	assert_true(runcfg_given(&b->c, "workers"));
	assert_int_equal(runcfg_set(&b->c, "vm-method", "rand-set", "--vm-method", &d), 0);
	assert_int_equal(runcfg_set(&b->c, "vm-method", "flip", "--vm-method", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "--vm-method: stress-ng's method 'flip' does not map onto migbed"));
	assert_int_equal(runcfg_set(&b->c, "vm-hang", "1", "--vm-hang", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "stress-ng's --vm-hang does not map onto migbed"));
	/* stress-ng's spellings bring its remap churn; --vm-keep (its opt-out) and churn = false
	 * turn it off; migbed's own spelling keeps churn off */
	assert_true(b->c.stressng_spelling);
	assert_int_equal(runcfg_finish(&b->c, &d), 0);
	assert_true(b->c.gen.churn);
	assert_int_equal(runcfg_set(&b->c, "vm-keep", "true", "--vm-keep", &d), 0);
	assert_int_equal(runcfg_finish(&b->c, &d), 0);
	assert_false(b->c.gen.churn);
	assert_int_equal(runcfg_set(&b->c, "churn", "true", "--churn", &d), 0);
	assert_int_equal(runcfg_finish(&b->c, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "contradicts churn = true"));
	free(b);
	b = fresh();
	assert_int_equal(runcfg_set(&b->c, "workers", "5", "--workers", &d), 0);
	assert_int_equal(runcfg_finish(&b->c, &d), 0);
	assert_false(b->c.gen.churn);
	free(b);
}

static void test_scenario_lines(void **state)
{
	(void)state;
	char path[] = "/tmp/options_test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof scn_cases / sizeof *scn_cases; i++) {
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fputs(scn_cases[i].text, f);
		fclose(f);
		struct runcfg *c = calloc(1, sizeof *c);
		assert_non_null(c);
		runcfg_defaults(c);
		struct diag d = { 0 };
		int rc = runcfg_load_scenario(c, path, &d);
		char want[512] = "";
		if (scn_cases[i].error)
			snprintf(want, sizeof want, "%s:%s", path, scn_cases[i].error);
		if (scn_cases[i].error ? (rc == 0 || strcmp(d.msg, want)) : rc != 0)
			fail_msg("case %zu: got rc %d '%s', want '%s'", i, rc, d.msg, want);
		free(c);
	}
	unlink(path);
}

/* Each command's --help key lines are its rows, each once, and no other command's. */
static void test_help_from_table(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < N_CMDS; ci++) {
		unsigned cmd = all_cmds[ci];
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		assert_non_null(f);
		opts_print_help(f, cmd);
		fclose(f);
		size_t rows = 0, lines = 0;
		for (const char *p = text; *p; p++)
			lines += *p == '\n';
		for (size_t i = 0; i < runcfg_n_keys(); i++) {
			char pat[80];
			snprintf(pat, sizeof pat, "\n  --%s ", runcfg_key_name(i));
			bool mine = runcfg_key_cmds(i) & cmd, named = false;   /* torture's --json is not run's */
			for (size_t j = 0; j < runcfg_n_keys(); j++)
				named |= (runcfg_key_cmds(j) & cmd) && !strcmp(runcfg_key_name(j), runcfg_key_name(i));
			bool hit = !strncmp(text, pat + 1, strlen(pat + 1)) || strstr(text, pat);
			if (mine ? !hit : hit != named)
				fail_msg("%s --help: --%s %s", opts_cmd_name(cmd), runcfg_key_name(i), mine ? "missing" : "listed");
			rows += mine;
		}
		assert_int_equal(lines, rows);   /* one line per row */
		if (cmd == OPTS_TRACE_GEN) {
			assert_non_null(strstr(text, "  --workers N                  rand-set: workers, each sweeping its own region "
						     "(like stress-ng --vm-method rand-set) (also --vm, stress-ng's name) "
						     "[1..4096] (default 2)\n"));
			assert_non_null(strstr(text, "--output FILE"));
			assert_non_null(strstr(text, "[1..86400000 ms] (required)"));
		}
		free(text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shown_defaults_are_real),
		cmocka_unit_test(test_one_set_of_generator_defaults),
		cmocka_unit_test(test_zero_is_refused_by_bounds),
		cmocka_unit_test(test_set_table),
		cmocka_unit_test(test_command_lines),
		cmocka_unit_test(test_scenario_lines),
		cmocka_unit_test(test_other_spellings),
		cmocka_unit_test(test_help_from_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
