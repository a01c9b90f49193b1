/* cmd_trace_gen - `migbed trace gen`: write a synthetic page-dirtying trace (sim/tracegen.h).
 *
 * Every option is checked before anything is written; the trace itself is written to
 * FILE.tmp and renamed, so a failure leaves no FILE behind. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/size.h"
#include "sim/tracegen.h"

#define CMD "trace gen"

enum gen_opt {
	OPT_PATTERN = 256, OPT_GUEST, OPT_DURATION, OPT_SEED, OPT_PAGE_SIZE, OPT_EPOCH,
	OPT_WORKERS, OPT_WORKER_BYTES, OPT_SWEEP, OPT_RATE, OPT_HOT_FRACTION, OPT_HOT_RATE,
	OPT_COLD_RATE,
};

static const struct option gen_long_opts[] = {
	{ "pattern", required_argument, NULL, OPT_PATTERN },
	{ "guest", required_argument, NULL, OPT_GUEST },
	{ "duration-ms", required_argument, NULL, OPT_DURATION },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "output", required_argument, NULL, 'o' },
	{ "page-size", required_argument, NULL, OPT_PAGE_SIZE },
	{ "epoch-ms", required_argument, NULL, OPT_EPOCH },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "worker-bytes", required_argument, NULL, OPT_WORKER_BYTES },
	{ "sweep-rate", required_argument, NULL, OPT_SWEEP },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "hot-fraction", required_argument, NULL, OPT_HOT_FRACTION },
	{ "hot-rate", required_argument, NULL, OPT_HOT_RATE },
	{ "cold-rate", required_argument, NULL, OPT_COLD_RATE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Which pattern each pattern-specific option belongs to. */
static const struct {
	int opt;
	const char *name;
	enum tgen_pattern pattern;
} pattern_opts[] = {
	{ OPT_WORKERS, "--workers", TGEN_RAND_SET },
	{ OPT_WORKER_BYTES, "--worker-bytes", TGEN_RAND_SET },
	{ OPT_SWEEP, "--sweep-rate", TGEN_RAND_SET },
	{ OPT_RATE, "--rate", TGEN_RANDOM },
	{ OPT_HOT_FRACTION, "--hot-fraction", TGEN_HOTCOLD },
	{ OPT_HOT_RATE, "--hot-rate", TGEN_HOTCOLD },
	{ OPT_COLD_RATE, "--cold-rate", TGEN_HOTCOLD },
};
#define N_PATTERN_OPTS (sizeof pattern_opts / sizeof pattern_opts[0])

struct gen_args {
	struct tgen_opts o;
	const char *out_path;
	int have_pattern, have_guest, have_duration, have_seed;
	unsigned given;                   /* bit i: pattern_opts[i] was given */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: migbed trace gen --pattern P --guest SIZE --duration-ms N --seed N -o FILE\n"
		"                        [options]\n"
		"\n"
		"Write a synthetic page-dirtying trace (format v1; FILE ending in .zst is zstd\n"
		"compressed). The same options always give the same file, byte for byte.\n"
		"\n"
		"required:\n"
		"  --pattern P          rand-set, random, hotcold or idle\n"
		"  --guest SIZE         guest RAM (one block \"pc.ram\"), a multiple of the page size\n"
		"  --duration-ms N      length of the workload in virtual ms (> 0)\n"
		"  --seed N             seed of the pattern's random stream\n"
		"  -o, --output FILE    the trace to write (via FILE.tmp, renamed when complete; a\n"
		"                       symlink stays a link, its target is replaced). '-' is\n"
		"                       standard output, always plain text (pipe it through zstd\n"
		"                       to compress); a device or FIFO is written in place. A\n"
		"                       directory or an unwritable path: exit 2, nothing written\n"
		"\n"
		"common:\n"
		"  --page-size SIZE     power of two, 512 .. 1G (default 4K)\n"
		"  --epoch-ms N         spacing of the epochs (default 10)\n"
		"\n"
		"rand-set (N workers, each sweeping its own region; like stress-ng --vm-method rand-set):\n"
		"  --workers N          number of workers (default 4)\n"
		"  --worker-bytes SIZE  each worker's region, regions back to back from page 0\n"
		"                       (default guest/8, rounded down to the page size)\n"
		"  --sweep-rate SIZE    bytes per second swept by each worker (default 1G)\n"
		"\n"
		"random (pages drawn uniformly over the guest):\n"
		"  --rate N             pages written per second (default 25600)\n"
		"\n"
		"hotcold (a hot set at the start of the guest and the cold rest):\n"
		"  --hot-fraction F     share of the guest that is hot, 0 < F < 1 (default 0.05)\n"
		"  --hot-rate N         pages per second written in the hot set (default 25600)\n"
		"  --cold-rate N        pages per second written in the cold set (default 256)\n"
		"\n"
		"idle: no writes, one empty epoch at 0.\n"
		"\n"
		"SIZE is a byte count with an optional unit: 4096, 64K, 1M, 1G, 2T (or KiB, MiB, ...).\n"
		"Exit status: 0 written, 2 bad option (nothing written).\n");
}

static int bad_value(const char *opt, const char *arg, const char *what)
{
	return cli_usage_error(CMD ": %s: '%s' is %s", opt, arg, what);
}

/* A SIZE option; `positive` rejects 0 (0 would mean "use the default"). */
static int opt_size(const char *opt, const char *arg, int positive, uint64_t *out)
{
	int rc = size_parse(arg, out);

	if (rc == -ERANGE)
		return bad_value(opt, arg, "too large (at most 16777215T)");
	if (rc)
		return bad_value(opt, arg, "not a SIZE (e.g. 4096, 64K, 1M, 1G)");
	if (positive && *out == 0)
		return cli_usage_error(CMD ": %s: must be more than 0", opt);
	return 0;
}

static int opt_u64(const char *opt, const char *arg, int positive, uint64_t max, uint64_t *out)
{
	int rc = size_parse_u64(arg, out);

	if (rc == -ERANGE || (rc == 0 && *out > max)) {
		char what[64];
		snprintf(what, sizeof what, "too large (at most %llu)", (unsigned long long)max);
		return bad_value(opt, arg, what);
	}
	if (rc)
		return bad_value(opt, arg, "not a non-negative integer");
	if (positive && *out == 0)
		return cli_usage_error(CMD ": %s: must be more than 0", opt);
	return 0;
}

static int opt_fraction(const char *opt, const char *arg, double *out)
{
	char *end = NULL;
	double v;

	if (!((arg[0] >= '0' && arg[0] <= '9') || arg[0] == '.'))
		return bad_value(opt, arg, "not a number strictly between 0 and 1");
	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end != '\0' || !isfinite(v) || !(v > 0.0 && v < 1.0))
		return bad_value(opt, arg, "not a number strictly between 0 and 1");
	*out = v;
	return 0;
}

static void mark_given(struct gen_args *a, int opt)
{
	for (size_t i = 0; i < N_PATTERN_OPTS; i++) {
		if (pattern_opts[i].opt == opt)
			a->given |= 1u << i;
	}
}

/* One option with its argument: 0 or an exit status. */
static int take_opt(struct gen_args *a, int c, const char *arg)
{
	struct tgen_opts *o = &a->o;
	uint64_t v = 0;
	int rc = 0;

	mark_given(a, c);
	switch (c) {
	case OPT_PATTERN:
		a->have_pattern = 1;
		if (tgen_pattern_parse(arg, &o->pattern))
			return bad_value("--pattern", arg,
					 "not a pattern (rand-set, random, hotcold, idle)");
		return 0;
	case 'o':
		if (!*arg)
			return cli_usage_error(CMD ": -o: the file name is empty");
		a->out_path = arg;
		return 0;
	case OPT_GUEST:
		a->have_guest = 1;
		return opt_size("--guest", arg, 1, &o->guest_bytes);
	case OPT_DURATION:
		a->have_duration = 1;
		return opt_u64("--duration-ms", arg, 1, UINT64_MAX, &o->duration_ms);
	case OPT_SEED:
		a->have_seed = 1;
		return opt_u64("--seed", arg, 0, UINT64_MAX, &o->seed);
	case OPT_PAGE_SIZE:
		return opt_size("--page-size", arg, 1, &o->page_size);
	case OPT_EPOCH:
		return opt_u64("--epoch-ms", arg, 1, UINT64_MAX, &o->epoch_ms);
	case OPT_WORKERS:
		rc = opt_u64("--workers", arg, 1, UINT32_MAX, &v);
		o->workers = (uint32_t)v;
		return rc;
	case OPT_WORKER_BYTES:
		return opt_size("--worker-bytes", arg, 1, &o->worker_bytes);
	case OPT_SWEEP:
		return opt_size("--sweep-rate", arg, 1, &o->sweep_bytes_per_s);
	case OPT_RATE:
		return opt_u64("--rate", arg, 1, UINT64_MAX, &o->rate_pages_per_s);
	case OPT_HOT_FRACTION:
		return opt_fraction("--hot-fraction", arg, &o->hot_fraction);
	case OPT_HOT_RATE:
		return opt_u64("--hot-rate", arg, 1, UINT64_MAX, &o->hot_pages_per_s);
	case OPT_COLD_RATE:
		return opt_u64("--cold-rate", arg, 1, UINT64_MAX, &o->cold_pages_per_s);
	}
	return cli_usage_error(CMD ": internal: unhandled option %d", c);
}

/* 0, or an exit status (-1 for --help: print usage and exit 0). */
static int parse_args(int argc, char **argv, struct gen_args *a)
{
	int c, rc;

	optind = 0;                       /* glibc: full re-initialisation */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", gen_long_opts, NULL)) != -1) {
		if (c == 'h')
			return -1;
		if (c == '?' && optopt)
			return cli_usage_error(CMD ": unknown option '-%c' (see migbed trace gen "
					       "--help)", optopt);
		if (c == '?')
			return cli_usage_error(CMD ": unknown option '%s' (see migbed trace gen "
					       "--help)", argv[optind - 1]);
		if (c == ':')
			return cli_usage_error(CMD ": option '%s' needs a value", argv[optind - 1]);
		rc = take_opt(a, c, optarg);
		if (rc)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error(CMD ": unexpected argument '%s'", argv[optind]);
	return 0;
}

static int check_required(const struct gen_args *a)
{
	const char *missing = !a->have_pattern ? "--pattern" :
			      !a->have_guest ? "--guest" :
			      !a->have_duration ? "--duration-ms" :
			      !a->have_seed ? "--seed" :
			      !a->out_path ? "-o FILE" : NULL;

	if (missing)
		return cli_usage_error(CMD ": %s is required (see migbed trace gen --help)",
				       missing);
	for (size_t i = 0; i < N_PATTERN_OPTS; i++) {
		if ((a->given & (1u << i)) && pattern_opts[i].pattern != a->o.pattern)
			return cli_usage_error(CMD ": %s only applies to --pattern %s, not %s",
					       pattern_opts[i].name,
					       tgen_pattern_name(pattern_opts[i].pattern),
					       tgen_pattern_name(a->o.pattern));
	}
	return 0;
}

int cmd_trace_gen(int argc, char **argv)
{
	struct gen_args a = { 0 };
	struct tgen_stats st = { 0 };
	struct diag d;
	double mib;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc < 0) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (rc == 0)
		rc = check_required(&a);
	if (rc)
		return rc;
	tgen_defaults(&a.o);
	diag_clear(&d);
	if (tgen_validate(&a.o, &d) || tgen_write_stats(&a.o, a.out_path, &st, &d))
		return cli_usage_error(CMD ": %s", d.msg);
	mib = (double)st.pages * (double)a.o.page_size / (1024.0 * 1024.0);
	fprintf(stderr, "migbed: trace gen: wrote %s: pattern %s, %llu epochs, %llu ranges, "
		"%llu pages written (%.1f %s)\n",
		strcmp(a.out_path, "-") ? a.out_path : "standard output",
		tgen_pattern_name(a.o.pattern),
		(unsigned long long)st.epochs, (unsigned long long)st.ranges,
		(unsigned long long)st.pages, mib >= 1024.0 ? mib / 1024.0 : mib,
		mib >= 1024.0 ? "GiB" : "MiB");
	return CLI_EXIT_OK;
}
