/* config - the defaults of a run (see config.h). */
#include "run/config.h"

#include <stdio.h>
#include <string.h>

#include "transport/wire.h"

void runcfg_defaults(struct runcfg *c)
{
	memset(c, 0, sizeof *c);
	c->gen.pattern = TGEN_RAND_SET;
	c->gen.guest_bytes = 256ull << 20;
	c->gen.duration_ms = 2000;
	c->gen.workers = 2;
	c->gen.worker_bytes = 16ull << 20;
	c->gen.sweep_bytes_per_s = 32ull << 20;
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
