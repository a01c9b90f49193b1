/* SPDX-License-Identifier: MIT */
/* cmd_profiles - `migbed profiles`: the peers a side can play (--impl, --src-impl,
 * --dst-impl): migbed's own and the QEMU versions, with the releases each stands for and the
 * behaviours it has. Generated from the table (transport/profile.h), so it is the list
 * docs/profiles.md is checked against. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "cli/run_report.h"
#include "transport/profile.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: migbed profiles [--json]\n\n"
		   "List the peers a side can play (--impl, --src-impl, --dst-impl): migbed's own strict,\n"
		   "bounded peer and QEMU versions, the releases each stands for and its behaviours.\n"
		   "docs/profiles.md has each behaviour with the QEMU change behind it.\n");
}

static const struct {
	const char *name;
	size_t off;
} flags[] = {
	{ "unbounded-waits", offsetof(struct proto_profile, qemu) },
	{ "shared-cq", offsetof(struct proto_profile, shared_cq) },
	{ "error-as-ready", offsetof(struct proto_profile, error_as_ready) },
	{ "compress-fill", offsetof(struct proto_profile, compress_fill) },
	{ "swallow-poll-error", offsetof(struct proto_profile, swallow_poll_error) },
	{ "uninit-header", offsetof(struct proto_profile, uninit_header) },
	{ "accept-returns-ok", offsetof(struct proto_profile, accept_returns_ok) },
	{ "flush-on-wrap", offsetof(struct proto_profile, flush_on_wrap) },
	{ "chunk-size-setting", offsetof(struct proto_profile, chunk_param) },
};

static bool has(const struct proto_profile *p, size_t i)
{
	return *(const bool *)((const char *)p + flags[i].off);
}

/* {"name":..,"versions":..,"summary":..,"behaviours":[NAME...],"observed-log":TAG|null,
 * "source-log":TAG|null}: observed-log, the version whose observed lines it prints;
 * source-log, the version whose lines, read from its source, it prints */
static json_t *json_profile(const struct proto_profile *p)
{
	json_t *behaviours = json_array();
	for (size_t f = 0; behaviours && f < sizeof flags / sizeof flags[0]; f++)
		if (has(p, f))
			json_add(&behaviours, json_of_str(flags[f].name));
	bool observed = p->log_kind == PROTO_LOG_OBSERVED, source = p->log_kind == PROTO_LOG_SOURCE;
	return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "name", json_of_str(p->name), "versions",
			 json_of_str(p->versions), "summary", json_of_str(p->summary), "behaviours", behaviours,
			 "observed-log", observed ? json_of_str(p->log_tag) : json_null(), "source-log",
			 source ? json_of_str(p->log_tag) : json_null());
}

int cmd_profiles(int argc, char **argv)
{
	bool json;
	int rc = cli_json_only_args(argc, argv, "profiles", usage, &json);
	if (rc >= 0)
		return rc;
	if (json) {
		json_t *arr = json_array();
		for (int i = 0; arr && i < PROTO_IMPL_COUNT; i++)
			json_add(&arr, json_profile(proto_profile((enum proto_impl)i)));
		return cli_print_json("profiles", json_pack("{s:o}", "profiles", arr));
	}
	for (int i = 0; i < PROTO_IMPL_COUNT; i++) {
		const struct proto_profile *p = proto_profile((enum proto_impl)i);
		printf("%-10s %s: %s\n           ", p->name, p->versions, p->summary);
		int k = 0;
		for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
			if (has(p, f))
				printf("%s%s", k++ ? " " : "", flags[f].name);
		printf("%s", k ? "" : "(none)");
		if (p->log_kind == PROTO_LOG_OBSERVED)
			printf("  [QEMU %s's log lines, observed]", p->log_tag);
		else if (p->log_kind == PROTO_LOG_SOURCE)
			printf("  [QEMU %s's log lines, from its source]", p->log_tag);
		printf("\n");
	}
	return CLI_EXIT_OK;
}
