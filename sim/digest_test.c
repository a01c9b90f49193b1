/* SPDX-License-Identifier: MIT */
/* digest_test - XXH3-128 digests: known values (from `xxhsum -H2`, xxhash 0.8.1), pieces equal
 * the whole, one differing byte anywhere changes the digest, the canonical form. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "sim/digest.h"

static void hex_is(struct digest d, const char *want)
{
	char h[DIGEST_HEX_LEN];
	assert_string_equal(digest_hex(d, h), want);
}

/* printf '' | xxhsum -H2; printf 'The quick brown fox jumps over the lazy dog' | xxhsum -H2 */
static void test_known_values(void **st)
{
	(void)st;
	hex_is(digest_of("", 0), "99aa06d3014798d86001c324468d497f");
	const char *fox = "The quick brown fox jumps over the lazy dog";
	hex_is(digest_of(fox, strlen(fox)), "ddd650205ca3e7fa24a1cc2e3a8a7651");
	static uint8_t a[4096];
	memset(a, 'a', sizeof a);   /* head -c 4096 /dev/zero | tr '\0' a | xxhsum -H2 */
	hex_is(digest_of(a, sizeof a), "e594ed23b869217688a30670e919701e");
}

/* an incremental digest over pieces of any size is the one-shot digest of the whole */
static void test_pieces_equal_whole(void **st)
{
	(void)st;
	static uint8_t buf[10000];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	struct digest whole = digest_of(buf, sizeof buf);
	static const size_t pieces[] = { 1, 7, 8, 64, 240, 4096, 9999 };
	for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
		digest_state *s = digest_begin(0);
		assert_non_null(s);
		for (size_t off = 0; off < sizeof buf; off += pieces[k])
			digest_add(s, buf + off, sizeof buf - off < pieces[k] ? sizeof buf - off : pieces[k]);
		assert_true(digest_eq(digest_end(s), whole));
	}
	digest_state *s = digest_begin(1);   /* the seed counts */
	assert_non_null(s);
	digest_add(s, buf, sizeof buf);
	assert_false(digest_eq(digest_end(s), whole));
}

/* two memories differing in one byte, at any offset and any bit, digest differently; so do
 * lengths that differ only by trailing zero bytes */
static void test_one_byte_anywhere(void **st)
{
	(void)st;
	enum { N = 8192 + 13 };
	static uint8_t a[N], b[N];
	struct digest base = digest_of(a, N);
	for (size_t i = 0; i < N; i++) {
		memcpy(b, a, N);
		b[i] ^= (uint8_t)(1u << (i % 8));
		struct digest d = digest_of(b, N);
		assert_false(digest_eq(d, base));
		assert_false(d.hi == base.hi);   /* both halves depend on every byte */
		assert_false(d.lo == base.lo);
	}
	assert_false(digest_eq(digest_of(a, N - 1), base));
}

static void test_canonical_form(void **st)
{
	(void)st;
	struct digest d = { .hi = 0x0102030405060708ull, .lo = 0x1112131415161718ull };
	uint8_t c[DIGEST_BYTES];
	digest_put(d, c);
	static const uint8_t want[DIGEST_BYTES] = { 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18 };
	assert_memory_equal(c, want, sizeof want);
	assert_true(digest_eq(digest_get(c), d));
	hex_is(d, "01020304050607081112131415161718");
	assert_false(digest_eq(d, (struct digest){ .hi = d.hi, .lo = 0 }));
	assert_false(digest_eq(d, (struct digest){ .hi = 0, .lo = d.lo }));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_values),
		cmocka_unit_test(test_pieces_equal_whole),
		cmocka_unit_test(test_one_byte_anywhere),
		cmocka_unit_test(test_canonical_form),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
