/* SPDX-License-Identifier: MIT */
/* cmd_timeline - `migbed timeline EVENTS -o FILE.json`: an event log (run --events) as a
 * Chrome/Perfetto trace, to look at (run/timeline.h says which tracks). `run --timeline`
 * writes the same from the run it makes. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/gnuplot.h"
#include "run/out_file.h"
#include "run/timeline.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed timeline EVENTS -o FILE.json | --plot FILE.svg|FILE.png\n\n"
		   "Turn an event log (migbed run --events EVENTS) into Chrome/Perfetto trace-event JSON:\n"
		   "open FILE.json in https://ui.perfetto.dev or chrome://tracing. Tracks: the migration's\n"
		   "phases (setup, rounds, bitmap syncs, switchover, downtime) and counters (pending bytes,\n"
		   "bandwidth, switchover threshold); per side, control messages, chunk registrations,\n"
		   "RDMA WRITEs in flight, connection events, faults and failures. Times are the log's\n"
		   "(virtual on the model backend), in microseconds. `migbed run --timeline FILE` writes the\n"
		   "same picture of the run it makes.\n\n"
		   "  -o, --output FILE   where the JSON goes ('-' for standard output)\n"
		   "  --plot FILE         a picture instead, through gnuplot (gnuplot-nox): the rounds, setup,\n"
		   "                      downtime and the source's chunk registrations against time, and the\n"
		   "                      RDMA WRITEs in flight below (both -o and --plot may be given)\n\n"
		   "Exit: 0 written; 2 bad usage, or EVENTS is not an event log (FILE:LINE: problem;\n"
		   "nothing is written), or gnuplot failed (nothing written).\n");
}

struct plot_arg { const char *events, *title; struct diag d; int rc; };

static void plot_script(void *arg, const char *out, bool svg, FILE *f)
{
	struct plot_arg *a = arg;
	fprintf(f, "set terminal %s size 1000,640%s\nset output ", svg ? "svg" : "pngcairo", svg ? " dynamic" : "");
	gnuplot_string(f, out);
	fputc('\n', f);
	a->rc = timeline_plot_data(a->events, f, &a->d);
	if (a->rc) {   /* gnuplot must fail too: nothing is written */
		fprintf(f, "\nexit status 3\n");
		return;
	}
	fprintf(f, "set multiplot layout 2,1 title ");
	gnuplot_string(f, a->title);
	fprintf(f, "\nset xrange [0:end_ms > 0 ? end_ms : 1]\nset grid x\nset xlabel 'time (ms)'\n"
		   "set lmargin 30\nset style fill solid 0.7 noborder\nset yrange [0.5:4.5]\n"
		   "set ytics ('downtime (VM stopped)' 1, 'chunk registrations (source)' 2, 'setup' 3, 'rounds' 4)\n"
		   "plot $spans using (($1+$2)/2):3:(($2-$1)/2):(0.35):3 with boxxyerror lc variable notitle\n"
		   "set ytics auto\nset yrange [0:*]\nset offsets 0, 0, graph 0.1, 0\nset ylabel 'RDMA WRITEs in flight'\n"
		   "plot $writes using 1:2 with steps lw 1.5 notitle\nunset multiplot\nset output\n");
}

int cmd_timeline(int argc, char **argv)
{
	const char *in = NULL, *out = NULL, *plot = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			if (i + 1 >= argc)
				return cli_usage_error("timeline: %s needs a FILE", argv[i]);
			out = argv[++i];
		} else if (!strcmp(argv[i], "--plot")) {
			if (i + 1 >= argc)
				return cli_usage_error("timeline: --plot needs a FILE");
			plot = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage_error("timeline: unknown option '%s'", argv[i]);
		} else if (in) {
			return cli_usage_error("timeline: only one EVENTS file");
		} else {
			in = argv[i];
		}
	}
	if (!in || (!out && !plot))
		return cli_usage_error("timeline: needs EVENTS and -o FILE.json or --plot FILE.svg");
	struct diag d = { { 0 } };
	struct out_file probe = { 0 };
	if (plot && gnuplot_check("timeline", plot))
		return CLI_EXIT_USAGE;
	if (plot && out_file_open(&probe, plot, &d))   /* refused before anything is written */
		return cli_usage_error("timeline: %s", d.msg);
	out_file_abort(&probe);
	{   /* the log checked first: a bad one is named, nothing is written, gnuplot never runs */
		FILE *null = fopen("/dev/null", "w");
		int rc = null ? timeline_plot_data(in, null, &d) : 0;
		if (null)
			fclose(null);
		if (rc) {
			fprintf(stderr, "migbed: timeline: %s\n", d.msg);
			return CLI_EXIT_USAGE;
		}
	}
	if (out && timeline_write(in, out, &d)) {
		fprintf(stderr, "migbed: timeline: %s\n", d.msg);
		return CLI_EXIT_USAGE;
	}
	if (plot) {
		struct plot_arg a = { .events = in, .title = in };
		char title[1100];
		snprintf(title, sizeof title, "migbed timeline: %s", in);
		a.title = title;
		int rc = gnuplot_write("timeline", plot, plot_script, &a);
		if (a.rc) {
			fprintf(stderr, "migbed: timeline: %s\n", a.d.msg);
			if (out && strcmp(out, "-"))
				unlink(out);
			return CLI_EXIT_USAGE;
		}
		if (rc) {   /* nothing written: not the JSON either */
			if (out && strcmp(out, "-"))
				unlink(out);
			return rc;
		}
	}
	return CLI_EXIT_OK;
}
