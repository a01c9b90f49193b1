/* SPDX-License-Identifier: MIT */
/* cmd_hw - `migbed hw list|show|keys`: the hardware profiles of the cost model (run/hw.h,
 * docs/model.md). list: the named profiles found (hw/NAME.hw beside the binary, installed, or
 * in $MIGBED_HW_PATH); show: one profile's every key as a file `--hw FILE` reads back; keys:
 * the keys, units, defaults and meanings. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "cli/run_report.h"
#include "run/hw.h"

#define LIST_MAX 256

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed hw list [--json]\n"
		   "       migbed hw show NAME|FILE [--hw-set KEY=VALUE]... [--json]\n"
		   "       migbed hw keys [--json]\n\n"
		   "Hardware profiles: the cost model's parameters (docs/model.md), given to run and sweep\n"
		   "as --hw NAME|FILE (scenarios: hw = NAME), one key overridden by --hw-set KEY=VALUE.\n"
		   "  list  the named profiles: hw/NAME.hw in $MIGBED_HW_PATH's folders, then beside the\n"
		   "        binary (BIN/../hw, BIN/../share/migbed/hw), then the installed DATADIR/hw\n"
		   "        (DATADIR: $MIGBED_DATADIR, else make install's); the first of a name wins\n"
		   "  show  every key of one profile (with the overrides), as a file --hw reads back\n"
		   "  keys  the keys: unit, the model's default (a key a profile leaves out), meaning\n"
		   "exit status: 0, 2 bad usage or a bad profile (FILE:LINE: problem)\n");
}

struct entry {
	char name[128];
	char path[HW_PATH_MAX];
};
struct listing {
	struct entry *e;
	size_t n;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static bool listed(const struct listing *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->e[i].name, name))
			return true;
	return false;
}

static void collect(const char *dir, void *arg)
{
	struct listing *l = arg;
	DIR *dp = opendir(dir);
	struct dirent *de;
	if (!dp)
		return;
	while ((de = readdir(dp)) != NULL && l->n < LIST_MAX) {
		size_t len = strlen(de->d_name);
		if (len <= 3 || len - 3 >= sizeof l->e[0].name || strcmp(de->d_name + len - 3, ".hw"))
			continue;
		struct entry *e = &l->e[l->n];
		snprintf(e->name, sizeof e->name, "%.*s", (int)(len - 3), de->d_name);
		if (listed(l, e->name))
			continue;   /* an earlier folder's wins, as --hw finds it */
		int w = snprintf(e->path, sizeof e->path, "%s/%s", dir, de->d_name);
		if (w > 0 && (size_t)w < sizeof e->path)
			l->n++;
	}
	closedir(dp);
}

static int flag_args(int argc, char **argv, const char *cmd, bool *json)
{
	*json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return CLI_EXIT_OK;
		}
		if (strcmp(argv[i], "--json"))
			return cli_usage_error("hw %s: unknown argument '%s' (see migbed hw --help)", cmd, argv[i]);
		*json = true;
	}
	return -1;
}

static int hw_list(int argc, char **argv)
{
	bool json;
	int rc = flag_args(argc, argv, "list", &json);
	struct listing l = { .e = calloc(LIST_MAX, sizeof(struct entry)) };
	if (rc >= 0 || !l.e) {
		free(l.e);
		return rc >= 0 ? rc : cli_usage_error("hw list: out of memory");
	}
	hw_each_dir(collect, &l);
	qsort(l.e, l.n, sizeof *l.e, by_name);
	json_t *arr = json ? json_array() : NULL;
	for (size_t i = 0; i < l.n; i++) {
		struct hw_profile p;
		struct diag d = { 0 };
		bool ok = hw_load_file(l.e[i].path, &p, &d) == 0;
		const char *desc = ok ? p.description : d.msg;
		if (json)
			json_add(&arr, json_pack("{s:o,s:o,s:b,s:o}", "name", json_of_str(l.e[i].name), "path",
						 json_of_str(l.e[i].path), "valid", ok, "description", json_of_str(desc)));
		else
			printf("%-12s %s%s\n             %s\n", l.e[i].name, ok ? "" : "INVALID: ", desc, l.e[i].path);
	}
	free(l.e);
	return json ? cli_print_json("hw list", json_pack("{s:o}", "profiles", arr)) : CLI_EXIT_OK;
}

/* {"hw":NAME,"path":..,"description":..,"reference":..,"keys":{KEY:N...}} */
static json_t *show_json(const char *name, const struct hw_profile *p)
{
	json_t *keys = json_object();
	for (size_t i = 0; keys && i < hw_n_keys(); i++)
		json_set(&keys, hw_key_name(i), json_of_u64(hw_key_get(&p->cost, i)));
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "hw", json_of_str(name), "path", json_of_str(p->path),
			 "description", json_of_str(p->description), "reference", json_of_str(p->reference), "keys",
			 keys);
}

static int hw_show(int argc, char **argv)
{
	const char *name = NULL;
	bool json = false;
	struct hw_profile p;
	struct diag d = { 0 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return CLI_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--hw-set") || !strncmp(a, "--hw-set=", 9)) {
			if (!a[8] && i + 1 == argc)
				return cli_usage_error("hw show: --hw-set needs KEY=VALUE");
			i += !a[8];   /* checked below, after the profile */
		} else if (a[0] == '-' && a[1]) {
			return cli_usage_error("hw show: unknown option '%s' (see migbed hw --help)", a);
		} else if (name) {
			return cli_usage_error("hw show: more than one profile ('%s', '%s')", name, a);
		} else {
			name = a;
		}
	}
	if (!name)
		return cli_usage_error("hw show: which profile? (migbed hw list)");
	if (hw_load(name, &p, &d))
		return cli_usage_error("%s", d.msg);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--hw-set") && strncmp(a, "--hw-set=", 9))
			continue;
		const char *v = a[8] ? a + 9 : argv[++i];
		if (hw_set_pair(&p.cost, v, "--hw-set", &d))
			return cli_usage_error("%s", d.msg);
	}
	if (json)
		return cli_print_json("hw show", show_json(name, &p));
	else {
		printf("# %s (%s); keys left out of it have the model's default\n", name, p.path);
		hw_write(stdout, &p);
	}
	return CLI_EXIT_OK;
}

static int hw_keys(int argc, char **argv)
{
	bool json;
	int rc = flag_args(argc, argv, "keys", &json);
	struct hca_cost dflt;
	if (rc >= 0)
		return rc;
	hca_cost_defaults(&dflt);
	json_t *arr = json ? json_array() : NULL;
	for (size_t i = 0; i < hw_n_keys(); i++) {
		unsigned long long v = (unsigned long long)hw_key_get(&dflt, i);
		if (json)
			json_add(&arr, json_pack("{s:s,s:s,s:o,s:o}", "key", hw_key_name(i), "unit", hw_key_unit(i),
						 "default", json_of_u64(v), "meaning", json_of_str(hw_key_help(i))));
		else
			printf("%-26s %-5s default %-8llu %s\n", hw_key_name(i), hw_key_unit(i), v, hw_key_help(i));
	}
	return json ? cli_print_json("hw keys", json_pack("{s:o}", "keys", arr)) : CLI_EXIT_OK;
}

int cmd_hw(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("hw: expected list, show or keys (see migbed hw --help)");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "list"))
		return hw_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "show"))
		return hw_show(argc - 1, argv + 1);
	if (!strcmp(argv[1], "keys"))
		return hw_keys(argc - 1, argv + 1);
	return cli_usage_error("hw: unknown subcommand '%s' (expected list, show or keys)", argv[1]);
}
