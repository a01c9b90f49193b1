/* SPDX-License-Identifier: MIT */
/* cmd_faults - `migbed faults`: the fault sites a rule can name (every fallible call the seam
 * asks the fault hook about), the actions each site takes, and the action `migbed torture`
 * uses there; then the actions. Generated from the vocabulary (vocab/vocab.h), so it is the
 * list docs/faults.md is checked against. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/run_report.h"
#include "faults/fault.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed faults [--json]\n\n"
		   "List every fault site a --fault rule can name (SITE[@SIDE] [TRIGGERS] -> ACTION), the\n"
		   "actions it takes, and the action `migbed torture` injects there; then every action.\n"
		   "docs/faults.md has the grammar and what each action does.\n");
}

static void print_site(enum fault_site s, bool json, bool first)
{
	if (json) {
		printf("%s{\"site\":", first ? "" : ",");
		json_string(stdout, fault_site_name(s));
		printf(",\"actions\":[");
	} else {
		printf("%-26s ", fault_site_name(s));
	}
	int k = 0;
	for (int a = 0; a < FAULT_ACT_COUNT; a++) {
		if (!fault_action_allowed(s, (enum fault_action)a))
			continue;
		if (json)
			printf("%s\"%s\"", k ? "," : "", fault_action_name((enum fault_action)a));
		else
			printf("%s%s", k ? " " : "", fault_action_name((enum fault_action)a));
		k++;
	}
	if (json) {
		printf("],\"torture\":");
		json_string(stdout, fault_site_canonical(s));
		printf("}");
	} else {
		printf("  (torture: %s)\n", fault_site_canonical(s));
	}
}

int cmd_faults(int argc, char **argv)
{
	bool json;
	int rc = cli_json_only_args(argc, argv, "faults", usage, &json);
	if (rc >= 0)
		return rc;
	printf(json ? "{\"sites\":[" : "sites (site: the actions it takes):\n");
	for (int s = 0; s < FAULT_SITE_COUNT; s++)
		print_site((enum fault_site)s, json, s == 0);
	printf(json ? "],\"actions\":[" : "actions:\n ");
	for (int a = 0; a < FAULT_ACT_COUNT; a++)
		printf(json ? "%s\"%s\"" : "%s%s", a ? (json ? "," : " ") : "", fault_action_name((enum fault_action)a));
	printf(json ? "]}\n" : "\n");
	return CLI_EXIT_OK;
}
