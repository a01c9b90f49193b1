/* SPDX-License-Identifier: MIT */
/* cmd_causes - `migbed causes`: the table of named failure causes, with the QEMU messages
 * that correspond to each (so a QEMU log can be mapped to a cause). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "vocab/cause.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed causes [--json] [NAME]\n\n"
		   "List every named failure cause: NAME, message, hint, and what QEMU prints in the\n"
		   "same situation. With NAME, only that cause (exit 1 if unknown).\n");
}

static json_t *json_one(int c)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:s}", "name", json_of_str(cause_name(c)), "message",
			 json_of_str(cause_message(c)), "hint", json_of_str(cause_hint(c)), "qemu",
			 json_of_str(cause_qemu(c)), "kind", cause_is_consequence(c) ? "consequence" : "primary");
}

static void print_one(int c)
{
	printf("%s\n  %s\n  hint: %s\n", cause_name(c), cause_message(c), cause_hint(c));
	if (cause_qemu(c)[0])
		printf("  QEMU: %s\n", cause_qemu(c));
	if (cause_is_consequence(c))
		printf("  a consequence of the other side's failure: never hides the primary cause\n");
}

int cmd_causes(int argc, char **argv)
{
	bool json = false;
	const char *only = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-')
			return cli_usage_error("causes: unknown option '%s'", argv[i]);
		else if (only)
			return cli_usage_error("causes: only one NAME");
		else
			only = argv[i];
	}
	int c0 = CAUSE_FIRST, c1 = CAUSE_END;
	if (only) {
		c0 = cause_lookup(only);
		if (!c0) {
			fprintf(stderr, "migbed: causes: unknown cause '%s'\n", only);
			return CLI_EXIT_FAIL;
		}
		c1 = c0 + 1;
	}
	if (json) {
		json_t *arr = json_array();
		for (int c = c0; arr && c < c1; c++)
			json_add(&arr, json_one(c));
		return cli_print_json("causes", arr);
	}
	for (int c = c0; c < c1; c++)
		print_one(c);
	return CLI_EXIT_OK;
}
