/* cmd_twoproc - `migbed source` / `migbed dest`: the two sides of a migration in two
 * processes (possibly on two hosts). Being written (issue 4). */
#include "cli/cli.h"

int cmd_source(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_usage_error("source: two-process mode is not available in this build yet");
}

int cmd_dest(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_usage_error("dest: two-process mode is not available in this build yet");
}
