/* cmd_timeline - `migbed timeline EVENTS -o FILE.json`: an event log (run --events) as a
 * Chrome/Perfetto trace, to look at (run/timeline.h says which tracks). `run --timeline`
 * writes the same from the run it makes. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "run/timeline.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed timeline EVENTS -o FILE.json\n\n"
		   "Turn an event log (migbed run --events EVENTS) into Chrome/Perfetto trace-event JSON:\n"
		   "open FILE.json in https://ui.perfetto.dev or chrome://tracing. Tracks: the migration's\n"
		   "phases (setup, rounds, bitmap syncs, switchover, downtime) and counters (pending bytes,\n"
		   "bandwidth, switchover threshold); per side, control messages, chunk registrations,\n"
		   "RDMA WRITEs in flight, connection events, faults and failures. Times are the log's\n"
		   "(virtual on the model backend), in microseconds. `migbed run --timeline FILE` writes the\n"
		   "same picture of the run it makes.\n\n"
		   "  -o, --output FILE   where the JSON goes ('-' for standard output); required\n\n"
		   "Exit: 0 written; 2 bad usage, or EVENTS is not an event log (FILE:LINE: problem;\n"
		   "nothing is written).\n");
}

int cmd_timeline(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			if (i + 1 >= argc)
				return cli_usage_error("timeline: %s needs a FILE", argv[i]);
			out = argv[++i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage_error("timeline: unknown option '%s'", argv[i]);
		} else if (in) {
			return cli_usage_error("timeline: only one EVENTS file");
		} else {
			in = argv[i];
		}
	}
	if (!in || !out)
		return cli_usage_error("timeline: needs EVENTS and -o FILE.json");
	struct diag d = { { 0 } };
	if (timeline_write(in, out, &d)) {
		fprintf(stderr, "migbed: timeline: %s\n", d.msg);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}
