/* SPDX-License-Identifier: MIT */
/* usage - the one way a subcommand reports bad usage (see cli.h); apart from main.c so that
 * the cli unit tests (cli/NAME_test.c), which link the CLI objects without main, have it too. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/json.h"

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("migbed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_EXIT_USAGE;
}

int cli_json_only_args(int argc, char **argv, const char *cmd, void (*usage)(FILE *), bool *json)
{
	*json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (strcmp(argv[i], "--json"))
			return cli_usage_error("%s: unknown argument '%s' (see migbed %s --help)", cmd, argv[i], cmd);
		*json = true;
	}
	return -1;
}

int cli_print_json(const char *cmd, struct json_t *doc)
{
	if (!doc)
		return cli_usage_error("%s: out of memory building the JSON document", cmd);
	if (json_dump(stdout, doc) || fflush(stdout))
		return cli_usage_error("%s: cannot write the JSON document to standard output: %s", cmd, strerror(errno));
	return CLI_EXIT_OK;
}
