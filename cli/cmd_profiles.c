/* SPDX-License-Identifier: MIT */
/* cmd_profiles - `migbed profiles`: the peers a side can play (--impl, --src-impl,
 * --dst-impl): migbed's own and the QEMU versions, with the releases each stands for and the
 * behaviours it has. Generated from the table (transport/profile.h), so it is the list
 * docs/profiles.md is checked against. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
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

int cmd_profiles(int argc, char **argv)
{
	bool json;
	int rc = cli_json_only_args(argc, argv, "profiles", usage, &json);
	if (rc >= 0)
		return rc;
	if (json)
		printf("{\"profiles\":[");
	for (int i = 0; i < PROTO_IMPL_COUNT; i++) {
		const struct proto_profile *p = proto_profile((enum proto_impl)i);
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			json_string(stdout, p->name);
			printf(",\"versions\":");
			json_string(stdout, p->versions);
			printf(",\"summary\":");
			json_string(stdout, p->summary);
			printf(",\"behaviours\":[");
		} else {
			printf("%-10s %s: %s\n           ", p->name, p->versions, p->summary);
		}
		int k = 0;
		for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
			if (!has(p, f))
				continue;
			printf(json ? "%s\"%s\"" : "%s%s", k++ ? (json ? "," : " ") : "", flags[f].name);
		}
		bool observed = p->log_kind == PROTO_LOG_OBSERVED, source = p->log_kind == PROTO_LOG_SOURCE;
		if (json) {
			/* observed-log: the version whose observed lines it prints; source-log: the
			 * version whose lines, read from its source, it prints */
			printf("],\"observed-log\":");
			if (observed)
				json_string(stdout, p->log_tag);
			else
				printf("null");
			printf(",\"source-log\":");
			if (source)
				json_string(stdout, p->log_tag);
			else
				printf("null");
			printf("}");
		} else {
			printf("%s", k ? "" : "(none)");
			if (observed)
				printf("  [QEMU %s's log lines, observed]", p->log_tag);
			else if (source)
				printf("  [QEMU %s's log lines, from its source]", p->log_tag);
			printf("\n");
		}
	}
	if (json)
		printf("]}\n");
	return CLI_EXIT_OK;
}
