/* SPDX-License-Identifier: MIT */
/* prng - the run's seeded pseudo-random streams: xoshiro256** 1.0 (Blackman & Vigna),
 * state expanded from a 64-bit seed with splitmix64, as the authors recommend.
 *
 * The only source of randomness in migbed; the C library's rand() is never used.
 * Independent streams (trace generator, fault triggers, ...) are derived from the run seed
 * and a stream id, so adding a consumer never perturbs another one's numbers. */
#ifndef MIGBED_SIM_PRNG_H
#define MIGBED_SIM_PRNG_H
#include <stdint.h>

typedef struct prng {
	uint64_t s[4];
} prng;

/* One splitmix64 step: advances *state and returns the next output. */
uint64_t prng_splitmix64(uint64_t *state);
/* Seed s[0..3] with four splitmix64 outputs from `seed`. */
void prng_seed(prng *p, uint64_t seed);
/* Seed an independent stream: splitmix64 of (seed, stream_id). */
void prng_seed_stream(prng *p, uint64_t seed, uint64_t stream_id);
/* Set the raw state (for reference-vector tests); not all zero (asserted). */
void prng_set_state(prng *p, const uint64_t s[4]);
uint64_t prng_next(prng *p);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t prng_below(prng *p, uint64_t n);
/* Uniform double in [0, 1), 53 bits. */
double prng_unit(prng *p);
/* The published jump(): equivalent to 2^128 calls of prng_next. */
void prng_jump(prng *p);

#endif
