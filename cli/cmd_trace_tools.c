/* placeholder until the real subcommand lands (being written this session) */
#include "cli/cli.h"
int cmd_trace_stat(int argc, char **argv) { (void)argc; (void)argv; return cli_usage_error("cmd_trace_stat: not built yet"); }
int cmd_trace_check(int argc, char **argv) { (void)argc; (void)argv; return cli_usage_error("cmd_trace_check: not built yet"); }
