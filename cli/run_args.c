/* SPDX-License-Identifier: MIT */
/* run_args - a run's command line into its config (see run_args.h). */
#include "cli/run_args.h"

#include <errno.h>
#include <string.h>

static int apply_option(struct runcfg *c, struct diag *d, int argc, char **argv, int *i)
{
	char key[64], where[80];
	const char *k = argv[*i] + 2, *eq = strchr(k, '='), *v;
	size_t kl = eq ? (size_t)(eq - k) : strlen(k);
	if (kl >= sizeof key)
		return diag_set(d, "unknown option '%s'", argv[*i]);
	memcpy(key, k, kl);
	key[kl] = '\0';
	snprintf(where, sizeof where, "--%s", key);
	if (!runcfg_known(key) && runcfg_foreign_why(key))
		return diag_set(d, "stress-ng's --%s does not map onto migbed: %s", key, runcfg_foreign_why(key));
	if (!runcfg_known(key))
		return diag_set(d, "unknown option '--%s' (see --help)", key);
	if (eq)
		v = eq + 1;
	else if (runcfg_is_flag(key))
		v = "true";
	else if (*i + 1 < argc)
		v = argv[++*i];
	else
		return diag_set(d, "--%s needs a value", key);
	return runcfg_set(c, key, v, where, d);
}

/* At most one output on standard output ('-'): --json - is the whole of stdout. */
static int stdout_once(const struct runcfg *c, struct diag *d)
{
	const struct {
		const char *name, *path;
	} outs[] = { { "--json", c->json_path }, { "--events", c->events_path },
		     { "--fault-counts", c->fault_counts_path }, { "--timeline", c->timeline_path } };
	const char *first = NULL;
	for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
		if (strcmp(outs[i].path, "-"))
			continue;
		if (first)
			return diag_set(d, "%s - and %s - would both write to standard output: give one a file",
					first, outs[i].name);
		first = outs[i].name;
	}
	return 0;
}

bool run_args_skip_option(int argc, char **argv, int *i)
{
	if (argv[*i][0] != '-' || argv[*i][1] != '-')
		return false;
	const char *k = argv[*i] + 2;
	if (!strchr(k, '=') && !runcfg_is_flag(k) && *i + 1 < argc)
		++*i;
	return true;
}

int run_parse_args(struct runcfg *c, struct diag *d, int argc, char **argv, void (*usage)(FILE *))
{
	const char *scenario = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		if (run_args_skip_option(argc, argv, &i))
			continue;
		if (argv[i][0] == '-')
			return diag_set(d, "unknown option '%s' (see --help)", argv[i]);
		if (scenario)
			return diag_set(d, "more than one scenario given ('%s', '%s')", scenario, argv[i]);
		scenario = argv[i];
	}
	if (scenario && runcfg_load_scenario(c, scenario, d))
		return -EINVAL;
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--", 2) && apply_option(c, d, argc, argv, &i))
			return -EINVAL;
	if (runcfg_finish(c, d))
		return -EINVAL;
	return stdout_once(c, d);
}
