/* SPDX-License-Identifier: MIT */
/* digest - the 128-bit content digest (XXH3-128 of libxxhash) that two-process and QEMU modes
 * compare memory and device state by: their only equality check, so it is a well-studied
 * 128-bit hash, not a hand-written 64-bit one (a collision would be a silent false pass).
 *
 * digest_of(data, len) is XXH3-128 with seed 0: the value `xxhsum -H2` prints. An incremental
 * digest (digest_begin/add/end) over pieces equals digest_of over their concatenation with the
 * same seed. On the wire and in text a digest is its canonical form: 16 bytes big-endian, high
 * half first (digest_put/digest_get), 32 lower-case hex digits (digest_hex). */
#ifndef MIGBED_SIM_DIGEST_H
#define MIGBED_SIM_DIGEST_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIGEST_BYTES 16
#define DIGEST_HEX_LEN 33                 /* 32 hex digits and the NUL */

struct digest {
	uint64_t hi, lo;
};

typedef struct digest_state digest_state;

struct digest digest_of(const void *data, size_t len);
/* NULL when out of memory; digest_end returns the digest and frees the state. */
digest_state *digest_begin(uint64_t seed);
void digest_add(digest_state *s, const void *data, size_t len);
struct digest digest_end(digest_state *s);

bool digest_eq(struct digest a, struct digest b);
void digest_put(struct digest d, uint8_t out[DIGEST_BYTES]);
struct digest digest_get(const uint8_t in[DIGEST_BYTES]);
const char *digest_hex(struct digest d, char out[DIGEST_HEX_LEN]);

#endif
