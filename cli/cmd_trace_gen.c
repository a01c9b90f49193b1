/* placeholder until the real subcommand lands (being written this session) */
#include "cli/cli.h"
int cmd_trace_gen(int argc, char **argv) { (void)argc; (void)argv; return cli_usage_error("cmd_trace_gen: not built yet"); }
