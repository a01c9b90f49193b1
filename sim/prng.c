/* SPDX-License-Identifier: MIT */
/* prng - xoshiro256** 1.0 seeded by splitmix64 (see prng.h).
 *
 * Written from the algorithm's published definition (Blackman & Vigna, "Scrambled linear
 * pseudorandom number generators", 2018; prng.di.unimi.it). */
#include <assert.h>
#include <stdint.h>

#include "sim/prng.h"

static inline uint64_t rotl64(uint64_t x, unsigned k)
{
	return (x << k) | (x >> (64u - k));
}

uint64_t prng_splitmix64(uint64_t *state)
{
	uint64_t z;

	assert(state);
	*state += UINT64_C(0x9e3779b97f4a7c15);
	z = *state;
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void prng_seed(prng *p, uint64_t seed)
{
	uint64_t st = seed;

	assert(p);
	for (int i = 0; i < 4; i++)
		p->s[i] = prng_splitmix64(&st);
	/* splitmix64 is a bijection of its counter, so four consecutive outputs are never
	 * all zero; xoshiro's only forbidden state cannot occur. */
	assert(p->s[0] | p->s[1] | p->s[2] | p->s[3]);
}

void prng_seed_stream(prng *p, uint64_t seed, uint64_t stream_id)
{
	uint64_t st = stream_id;

	/* The stream id is hashed first so that (seed, id) and (seed + 1, id - 1) or similar
	 * near pairs do not share a splitmix64 sequence. */
	prng_seed(p, seed ^ prng_splitmix64(&st));
}

void prng_set_state(prng *p, const uint64_t s[4])
{
	assert(p && s);
	assert((s[0] | s[1] | s[2] | s[3]) != 0 && "xoshiro256** state must not be all zero");
	for (int i = 0; i < 4; i++)
		p->s[i] = s[i];
}

uint64_t prng_next(prng *p)
{
	uint64_t *s = p->s;
	const uint64_t result = rotl64(s[1] * 5, 7) * 9;
	const uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return result;
}

/* Lemire's multiply-and-reject: the high 64 bits of x * n are uniform in [0, n) once the
 * low part falls outside the biased zone [0, 2^64 mod n). */
uint64_t prng_below(prng *p, uint64_t n)
{
	/* Each try is rejected with probability < 1/2; 2^-128 is not going to happen. */
	enum { MAX_TRIES = 128 };
	const uint64_t threshold = (0 - n) % n;       /* 2^64 mod n */

	assert(p);
	assert(n > 0);
	for (int i = 0; i < MAX_TRIES; i++) {
		unsigned __int128 m = (unsigned __int128)prng_next(p) * n;
		if ((uint64_t)m >= threshold)
			return (uint64_t)(m >> 64);
	}
	assert(!"prng_below: rejection sampling did not terminate");
	return 0;
}

double prng_unit(prng *p)
{
	return (double)(prng_next(p) >> 11) * 0x1.0p-53;
}

void prng_jump(prng *p)
{
	static const uint64_t jump[4] = {
		UINT64_C(0x180ec6d33cfd0aba), UINT64_C(0xd5a61266f0c9392c),
		UINT64_C(0xa9582618e03fc9aa), UINT64_C(0x39abdc4529b1661c),
	};
	uint64_t acc[4] = { 0, 0, 0, 0 };

	assert(p);
	for (int i = 0; i < 4; i++) {
		for (unsigned b = 0; b < 64; b++) {
			if (jump[i] & (UINT64_C(1) << b)) {
				for (int j = 0; j < 4; j++)
					acc[j] ^= p->s[j];
			}
			prng_next(p);
		}
	}
	for (int j = 0; j < 4; j++)
		p->s[j] = acc[j];
}
