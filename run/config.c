/* SPDX-License-Identifier: MIT */
/* config - the defaults of a run (see config.h). */
#include "run/config.h"

#include <stdio.h>
#include <string.h>

#include "transport/wire.h"

void runcfg_defaults(struct runcfg *c)
{
	memset(c, 0, sizeof *c);
	tgen_defaults(&c->gen);
	c->chunk_bytes = 1ull << 20;
	c->dst_pin_all = true;
	c->backend = HCA_BACKEND_MODEL;
	hca_cost_defaults(&c->cost);
	engine_opts_defaults(&c->eng);
	c->wait_timeout_ms = 10000;
	c->seed = 1;
	c->caps_version = WIRE_CAP_VERSION;
	c->ack_timeout = -1;
	c->expect_completed = true;
	snprintf(c->expect_text, sizeof c->expect_text, "completed");
}
