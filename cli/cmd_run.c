/* placeholder until the real subcommand lands (being written this session) */
#include "cli/cli.h"
int cmd_run(int argc, char **argv) { (void)argc; (void)argv; return cli_usage_error("cmd_run: not built yet"); }
int cmd_source(int argc, char **argv) { (void)argc; (void)argv; return cli_usage_error("cmd_source: not built yet"); }
int cmd_dest(int argc, char **argv) { (void)argc; (void)argv; return cli_usage_error("cmd_dest: not built yet"); }
