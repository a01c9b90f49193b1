/* usage - the one way a subcommand reports bad usage (see cli.h); apart from main.c so that
 * the cli unit tests (cli/NAME_test.c), which link the CLI objects without main, have it too. */
#include <stdarg.h>
#include <stdio.h>

#include "cli/cli.h"

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
