/* SPDX-License-Identifier: MIT */
/* scenario_write_test - runcfg_write_scenario (cli/runcfg.c) prints a config back as a
 * scenario that runcfg_load_scenario reads as an equal config: over the default config and
 * configs with faults, expectations, expect-fired lists, every generator pattern, peer
 * profiles, the negotiated protocol, a trace file and costs; the written text is a fixpoint
 * and leaves out the output keys. (The bundles of cli/bundle.h rest on it.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/run_args.h"
#include "cli/runcfg.h"

/* A config from a command line of `migbed run` (argv[0] included), finished. */
static struct runcfg *from_args(int argc, char **argv)
{
	struct runcfg *c = calloc(1, sizeof *c);
	struct diag d = { 0 };
	assert_non_null(c);
	runcfg_defaults(c);
	if (run_parse_args(c, &d, argc, argv, NULL) != 0)
		fail_msg("%s ...: %s", argv[1], d.msg);
	return c;
}

static char *scenario_text(const struct runcfg *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	runcfg_write_scenario(f, c);
	fclose(f);
	return text;
}

/* c written, read back (from path), finished: equal to c but the scenario path, `given` and
 * the output keys. */
static void round_trip(const struct runcfg *c, const char *path)
{
	char *text = scenario_text(c);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	struct runcfg *back = calloc(1, sizeof *back), *want = calloc(1, sizeof *want);
	struct diag d = { 0 };
	assert_non_null(back);
	assert_non_null(want);
	runcfg_defaults(back);
	if (runcfg_load_scenario(back, path, &d) || runcfg_finish(back, &d))
		fail_msg("%s\n---\n%s", d.msg, text);
	*want = *c;   /* the output keys are not the run's: left out */
	memset(want->json_path, 0, sizeof want->json_path);
	memset(want->events_path, 0, sizeof want->events_path);
	memset(want->fault_counts_path, 0, sizeof want->fault_counts_path);
	memset(want->bundle_path, 0, sizeof want->bundle_path);
	memset(want->pause_side, 0, sizeof want->pause_side);
	memset(want->pause_event, 0, sizeof want->pause_event);
	want->pause_nth = 0;
	want->quiet = false;
	memset(want->given, 0, sizeof want->given);
	memset(back->given, 0, sizeof back->given);
	memset(want->scenario, 0, sizeof want->scenario);
	memset(back->scenario, 0, sizeof back->scenario);
	if (memcmp(want, back, sizeof *want))
		fail_msg("read back differs:\n%s", text);
	char *again = scenario_text(back);
	assert_string_equal(text, again);   /* a fixpoint */
	for (const char *k = text; (k = strstr(k, "\n")) && k[1]; k++)   /* no output key */
		for (const char *const *o = (const char *const[]){ "json ", "events ", "quiet ", "pause-at ", "bundle ",
								   "fault-counts ", "protocol ", "impl ", NULL }; *o; o++)
			if (!strncmp(k + 1, *o, strlen(*o)))
				fail_msg("output or umbrella key written: %s", k + 1);
	free(text);
	free(again);
	free(back);
	free(want);
}

#define ARGS(...) (char *[]){ "run", __VA_ARGS__, NULL }
#define N_ARGS(...) ((int)(sizeof((char *[]){ "run", __VA_ARGS__ }) / sizeof(char *)))
#define CASE(...) { N_ARGS(__VA_ARGS__), ARGS(__VA_ARGS__) }

static void test_round_trips(void **state)
{
	(void)state;
	char path[] = "/tmp/scenario_write_test.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	const struct { int argc; char **argv; } cases[] = {
		CASE("--seed", "1"),
		CASE("--chunk-size", "64M", "--dst-chunk-size", "1M", "--expect", "failed:REMOTE_ACCESS_ERROR"),
		CASE("--fault", "reg_mr@dst #4 -> errno(ENOMEM)", "--fault", "wc.write@src ~0.2 -> status(RETRY_EXC_ERR)",
		     "--expect-fired", "1,>0", "--expect", "failed:DEST_REG_FAILED|TRANSPORT_RETRY_EXCEEDED", "--seed", "7"),
		CASE("--fault", "msg.ready@dst #3 -> delay(5ms)", "--expect-fired", ">0", "--json", "x.json", "--quiet"),
		CASE("--pattern", "hotcold", "--guest", "64M", "--hot-fraction", "0.1", "--hot-rate", "1000", "--cold-rate", "3"),
		CASE("--pattern", "random", "--rate", "12345", "--page-size", "8K", "--duration-ms", "300", "--epoch-ms", "7"),
		CASE("--pattern", "idle", "--guest", "1G", "--pin-all", "--dst-pin-all", "false", "--max-bandwidth", "unlimited"),
		CASE("--workers", "4", "--worker-bytes", "8M", "--sweep-rate", "100M", "--trace-loop", "false"),
		CASE("--src-impl", "qemu-6.1", "--dst-impl", "qemu-7.2"),
		CASE("--impl", "qemu-11.1", "--chunk-size", "4M"),
		CASE("--protocol", "negotiated", "--chunk-size", "64M", "--dst-chunk-size", "1M", "--on-mismatch", "refuse"),
		CASE("--src-protocol", "negotiated", "--caps-version", "2", "--dst-memlock", "16M"),
		CASE("--link-gbps", "25", "--latency-us", "0", "--reg-us-per-gib", "1", "--device-state", "0",
		     "--downtime-limit-ms", "50", "--max-time-ms", "1234", "--wait-timeout-ms", "77"),
		CASE("--reg-us-per-gib", "123457", "--description", "a run\twith a tab", "--events", "e.log", "--pause-at",
		     "src:round#2"),
		CASE("--trace", "/data/x.trace.zst", "--dst-layout", "/data/y.trace", "--ack-timeout", "14"),
		CASE("--backend", "verbs", "--src-addr", "198.18.0.2", "--dst-addr", "198.18.0.1:29200"),
		CASE("--dst-odp", "on", "--rnr-retry", "7", "--odp-fault-us", "80"),
		CASE("--dst-odp", "prefetch", "--pin-all"),
	};
	/* (a relative trace path is relative to the scenario's folder: bundles copy the file there) */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct runcfg *c = from_args(cases[i].argc, cases[i].argv);
		for (char *t = c->description; (t = strchr(t, '\t')); )   /* written as a space */
			*t = ' ';
		round_trip(c, path);
		free(c);
	}
	unlink(path);
}

/* The generator keys as `migbed trace gen` options: the pattern's keys and the seed. */
static void test_gen_args(void **state)
{
	(void)state;
	struct runcfg *c = from_args(N_ARGS("--pattern", "random", "--seed", "9"), ARGS("--pattern", "random", "--seed", "9"));
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	runcfg_write_gen_args(f, c);
	fclose(f);
	assert_string_equal(text, " --pattern random --guest 256M --duration-ms 2000 --epoch-ms 10 --page-size 4K "
				  "--rate 25600 --seed 9");
	free(text);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_gen_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
