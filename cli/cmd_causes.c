/* placeholder until the real subcommand lands (being written this session) */
#include "cli/cli.h"
int cmd_causes(int argc, char **argv) { (void)argc; (void)argv; return cli_usage_error("cmd_causes: not built yet"); }
