/* SPDX-License-Identifier: MIT */
/* vclock - the run's virtual clock, in nanoseconds.
 *
 * The only notion of time inside sim/ and the protocol. It starts at 0 and only moves
 * forward (advancing to an earlier time is a bug and asserts). Nothing in sim/ reads the
 * wall clock. */
#ifndef MIGBED_SIM_VCLOCK_H
#define MIGBED_SIM_VCLOCK_H
#include <assert.h>
#include <stdint.h>

#define VCLOCK_NS_PER_MS 1000000ull
#define VCLOCK_NS_PER_S  1000000000ull

typedef struct vclock {
	uint64_t now_ns;
} vclock;

void vclock_init(vclock *c);
/* Inline: read on every poll of the model's completion queues (several times per page). */
static inline uint64_t vclock_now_ns(const vclock *c)
{
	assert(c);
	return c->now_ns;
}
/* Move to t_ns; t_ns must be >= now (asserted). */
void vclock_advance_to(vclock *c, uint64_t t_ns);
void vclock_advance_by(vclock *c, uint64_t d_ns);
/* Move to t_ns if it is later than now; returns the new now. */
uint64_t vclock_catch_up(vclock *c, uint64_t t_ns);

#endif
