/* SPDX-License-Identifier: MIT */
/* cmd_trace_gen - `migbed trace gen`: write a synthetic page-dirtying trace (sim/tracegen.h).
 *
 * Its keys are rows of the one option table (cli/runcfg.h), the generator keys of `migbed
 * run` with the same types, bounds and defaults; --help is printed from the table. Every
 * option is checked before anything is written; the trace itself is written to FILE.tmp and
 * renamed, so a failure leaves no FILE behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/runcfg.h"
#include "sim/tracegen.h"

#define CMD "trace gen"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed trace gen --pattern P --guest SIZE --duration-ms N --seed N -o FILE\n"
		   "                        [--key VALUE ...]\n\n"
		   "Write a synthetic page-dirtying trace (format v1; FILE ending in .zst is zstd\n"
		   "compressed). The same options always give the same file, byte for byte. The keys\n"
		   "are `migbed run`'s generator keys (same bounds, same defaults):\n"
		   "  rand-set  N workers, each sweeping its own region (like stress-ng --vm-method rand-set)\n"
		   "  random    pages drawn uniformly over the guest\n"
		   "  hotcold   a hot set at the start of the guest and the cold rest\n"
		   "  idle      no writes, one empty epoch at 0\n\n");
	opts_print_help(f, OPTS_TRACE_GEN);
	fprintf(f, "  %-28s %s\n", "-h, --help", "this text");
	fprintf(f, "\nSIZE is a byte count with an optional unit: 4096, 64K, 1M, 1G, 2T (or KiB, MiB, ...).\n"
		   "Exit status: 0 written, 2 bad option (nothing written).\n");
}

/* The command line into c and x: 1 help, 0 ok, <0 (d set). */
static int parse(struct runcfg *c, struct opts_extra *x, int argc, char **argv, struct diag *d)
{
	runcfg_defaults(c);
	opts_extra_defaults(x);
	int rc = opts_parse_argv(OPTS_TRACE_GEN, c, x, argc, argv, d);
	if (rc)
		return rc;
	if (opts_check_required(OPTS_TRACE_GEN, c, x, d) || opts_finish_gen(c, d))
		return -1;
	return 0;
}

/* The status line of a long generation (cli/progress.h). */
static void show_progress(void *arg, const struct tgen_stats *st, uint64_t t_ns)
{
	struct progress *p = arg;
	if (progress_due(p))
		progress_show(p, "trace gen: %.1f s of the workload, %llu epochs, %llu ranges, %llu pages written",
			      (double)t_ns / 1e9, (unsigned long long)st->epochs, (unsigned long long)st->ranges,
			      (unsigned long long)st->pages);
}

int cmd_trace_gen(int argc, char **argv)
{
	struct progress pr;
	struct runcfg *c = calloc(1, sizeof *c);
	struct opts_extra *x = calloc(1, sizeof *x);
	struct tgen_stats st = { 0 };
	struct diag d = { 0 };
	int code = CLI_EXIT_USAGE, rc;
	if (!c || !x) {
		code = cli_usage_error(CMD ": out of memory");
		goto out;
	}
	rc = parse(c, x, argc, argv, &d);
	if (rc > 0) {
		usage(stdout);
		code = CLI_EXIT_OK;
		goto out;
	}
	if (rc == 0) {
		progress_init(&pr, c->quiet);
		rc = tgen_write_progress(&c->gen, x->output, &st, pr.on ? show_progress : NULL, &pr, &d);
		progress_end(&pr);
	}
	if (rc) {
		code = cli_usage_error(CMD ": %s", d.msg);
		goto out;
	}
	double mib = (double)st.pages * (double)c->gen.page_size / (1024.0 * 1024.0);
	fprintf(stderr, "migbed: trace gen: wrote %s: pattern %s, %llu epochs, %llu ranges, "
		"%llu pages written (%.1f %s)\n",
		strcmp(x->output, "-") ? x->output : "standard output", tgen_pattern_name(c->gen.pattern),
		(unsigned long long)st.epochs, (unsigned long long)st.ranges, (unsigned long long)st.pages,
		mib >= 1024.0 ? mib / 1024.0 : mib, mib >= 1024.0 ? "GiB" : "MiB");
	code = CLI_EXIT_OK;
out:
	free(x);
	free(c);
	return code;
}
