/* SPDX-License-Identifier: MIT */
/* digest - XXH3-128 content digests (see digest.h). */
#include "sim/digest.h"

#include <assert.h>
#include <stdio.h>
#include <xxhash.h>

_Static_assert(sizeof(XXH128_canonical_t) == DIGEST_BYTES, "canonical XXH128 is 16 bytes");

static struct digest from_xxh(XXH128_hash_t h)
{
	return (struct digest){ .hi = h.high64, .lo = h.low64 };
}

struct digest digest_of(const void *data, size_t len)
{
	return from_xxh(XXH3_128bits(data, len));
}

digest_state *digest_begin(uint64_t seed)
{
	XXH3_state_t *s = XXH3_createState();
	if (s && XXH3_128bits_reset_withSeed(s, seed) != XXH_OK) {
		XXH3_freeState(s);
		s = NULL;
	}
	return (digest_state *)s;
}

void digest_add(digest_state *s, const void *data, size_t len)
{
	XXH_errorcode rc = XXH3_128bits_update((XXH3_state_t *)s, data, len);
	assert(rc == XXH_OK);   /* fails only for a NULL state with len > 0 */
	(void)rc;
}

struct digest digest_end(digest_state *s)
{
	struct digest d = from_xxh(XXH3_128bits_digest((XXH3_state_t *)s));
	XXH3_freeState((XXH3_state_t *)s);
	return d;
}

bool digest_eq(struct digest a, struct digest b)
{
	return a.hi == b.hi && a.lo == b.lo;
}

void digest_put(struct digest d, uint8_t out[DIGEST_BYTES])
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, (XXH128_hash_t){ .low64 = d.lo, .high64 = d.hi });
	for (size_t i = 0; i < DIGEST_BYTES; i++)
		out[i] = c.digest[i];
}

struct digest digest_get(const uint8_t in[DIGEST_BYTES])
{
	XXH128_canonical_t c;
	for (size_t i = 0; i < DIGEST_BYTES; i++)
		c.digest[i] = in[i];
	return from_xxh(XXH128_hashFromCanonical(&c));
}

const char *digest_hex(struct digest d, char out[DIGEST_HEX_LEN])
{
	snprintf(out, DIGEST_HEX_LEN, "%016llx%016llx", (unsigned long long)d.hi, (unsigned long long)d.lo);
	return out;
}
