/* SPDX-License-Identifier: MIT */
/* result_wire - the digest of a run handed back by another process (see result_wire.h). */
#include "run/result_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void run_digest_of(const struct run_result *res, struct run_digest *out)
{
	memset(out, 0, sizeof *out);
	out->completed = res->out.completed;
	out->verified = res->out.verified;
	out->cause = res->out.cause;
	snprintf(out->side, sizeof out->side, "%s", run_side_name(res->out.side));
	out->fired = res->faults_injected;
	snprintf(out->detail, sizeof out->detail, "%s", res->out.detail ? res->out.detail : "");
}
