/* SPDX-License-Identifier: MIT */
/* vclock - the run's virtual clock (see vclock.h). */
#include <assert.h>
#include <stdint.h>

#include "sim/vclock.h"

void vclock_init(vclock *c)
{
	assert(c);
	c->now_ns = 0;
}

void vclock_advance_to(vclock *c, uint64_t t_ns)
{
	assert(c);
	assert(t_ns >= c->now_ns && "virtual time never goes backwards");
	c->now_ns = t_ns;
}

void vclock_advance_by(vclock *c, uint64_t d_ns)
{
	assert(c);
	assert(d_ns <= UINT64_MAX - c->now_ns && "virtual clock overflow");
	c->now_ns += d_ns;
}

uint64_t vclock_catch_up(vclock *c, uint64_t t_ns)
{
	assert(c);
	if (t_ns > c->now_ns)
		c->now_ns = t_ns;
	return c->now_ns;
}
