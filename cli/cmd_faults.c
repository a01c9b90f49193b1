/* SPDX-License-Identifier: MIT */
/* cmd_faults - `migbed faults`: the fault sites a rule can name (every fallible call the seam
 * asks the fault hook about), the actions each site takes, and the action `migbed torture`
 * uses there; then the actions. Generated from the vocabulary (vocab/vocab.h), so it is the
 * list docs/faults.md is checked against. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "faults/fault.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed faults [--json]\n\n"
		   "List every fault site a --fault rule can name (SITE[@SIDE] [TRIGGERS] -> ACTION), the\n"
		   "actions it takes, and the action `migbed torture` injects there; then every action.\n"
		   "docs/faults.md has the grammar and what each action does.\n");
}

static void print_site(enum fault_site s)
{
	printf("%-26s ", fault_site_name(s));
	int k = 0;
	for (int a = 0; a < FAULT_ACT_COUNT; a++)
		if (fault_action_allowed(s, (enum fault_action)a))
			printf("%s%s", k++ ? " " : "", fault_action_name((enum fault_action)a));
	printf("  (torture: %s)\n", fault_site_canonical(s));
}

/* {"site":NAME,"actions":[NAME...],"torture":TEXT} */
static json_t *json_site(enum fault_site s)
{
	json_t *acts = json_array();
	for (int a = 0; acts && a < FAULT_ACT_COUNT; a++)
		if (fault_action_allowed(s, (enum fault_action)a))
			json_add(&acts, json_of_str(fault_action_name((enum fault_action)a)));
	return json_pack("{s:o,s:o,s:o}", "site", json_of_str(fault_site_name(s)), "actions", acts, "torture",
			 json_of_str(fault_site_canonical(s)));
}

/* {"sites":[...],"actions":[NAME...]} */
static json_t *json_doc(void)
{
	json_t *sites = json_array(), *acts = json_array();
	for (int s = 0; sites && s < FAULT_SITE_COUNT; s++)
		json_add(&sites, json_site((enum fault_site)s));
	for (int a = 0; acts && a < FAULT_ACT_COUNT; a++)
		json_add(&acts, json_of_str(fault_action_name((enum fault_action)a)));
	return json_pack("{s:o,s:o}", "sites", sites, "actions", acts);
}

int cmd_faults(int argc, char **argv)
{
	bool json;
	int rc = cli_json_only_args(argc, argv, "faults", usage, &json);
	if (rc >= 0)
		return rc;
	if (json)
		return cli_print_json("faults", json_doc());
	printf("sites (site: the actions it takes):\n");
	for (int s = 0; s < FAULT_SITE_COUNT; s++)
		print_site((enum fault_site)s);
	printf("actions:\n ");
	for (int a = 0; a < FAULT_ACT_COUNT; a++)
		printf("%s%s", a ? " " : "", fault_action_name((enum fault_action)a));
	printf("\n");
	return CLI_EXIT_OK;
}
