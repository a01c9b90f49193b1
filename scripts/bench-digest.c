/* SPDX-License-Identifier: MIT */
/* bench-digest - the memory digest's cost, side by side with the hand-written hash it replaced
 * (make bench, scripts/bench.sh "digest"; issue 17). Prints one line per guest:
 *   NAME new-ms old-ms ratio
 * ratio = new / old (<= 1.0: the XXH3-128 digest is not slower). Guests: an 8 GiB model guest
 * (STAMP, every page written: 16 MiB of stamps) and a 256 MiB guest of real bytes. Each time is
 * the best of `reps` rounds. The old hash is kept here only to measure against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/mem.h"
#include "transport/proto.h"

static uint64_t old_hash(uint64_t h, const void *data, size_t len)   /* the pre-XXH3 stream_digest */
{
	const uint8_t *p = data;
	const uint64_t prime = 0x100000001b3ull;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h ^= w;
		h *= prime;
		h ^= h >> 29;
	}
	for (; i < len; i++) {
		h ^= p[i];
		h *= prime;
	}
	return h;
}

static uint64_t old_mem_digest(const mem *m, size_t b)   /* the pre-XXH3 proto_mem_digest */
{
	uint64_t h = 0x6a09e667f3bcc909ull ^ (uint64_t)b;
	if (mem_repr(m) == MEM_REPR_BYTES) {
		const uint8_t *p = mem_block_ptr((mem *)m, b);
		uint64_t bytes = mem_block_bytes(m, b), ps = mem_page_size(m);
		for (uint64_t off = 0; off < bytes; off += 1u << 20) {
			uint64_t n = bytes - off < (1u << 20) ? bytes - off : (1u << 20);
			if (!mem_pages_zero(m, b, off / ps, (n + ps - 1) / ps))
				h = old_hash(h, p + off, n);
			else
				h = old_hash(h, "Z", 1);
		}
		return h;
	}
	uint64_t st[512], pages = mem_block_pages(m, b);
	for (uint64_t pg = 0; pg < pages;) {
		uint64_t n = pages - pg < 512 ? pages - pg : 512;
		mem_page_stamps(m, b, pg, n, st);
		h = old_hash(h, st, (size_t)n * sizeof st[0]);
		pg += n;
	}
	return h;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int bench(const char *name, enum mem_repr repr, uint64_t bytes, int reps)
{
	const struct mem_block_spec spec[] = { { "ram", bytes } };
	mem *m = NULL;
	if (mem_new(4096, 1, spec, repr, 1, &m))
		return 1;
	if (repr == MEM_REPR_BYTES) {
		uint8_t *p = mem_block_ptr(m, 0);
		for (uint64_t i = 0; i < bytes; i++)
			p[i] = (uint8_t)(i * 7 + (i >> 12));
	} else {
		mem_write_pages(m, 0, 0, mem_block_pages(m, 0));
	}
	double best_new = 1e30, best_old = 1e30;
	volatile uint64_t sink = 0;
	for (int r = 0; r < reps; r++) {
		struct digest d;
		double t0 = now_ms();
		if (proto_mem_digest(m, 0, &d))
			return 1;
		double t1 = now_ms();
		sink ^= old_mem_digest(m, 0) ^ d.lo;
		double t2 = now_ms();
		best_new = t1 - t0 < best_new ? t1 - t0 : best_new;
		best_old = t2 - t1 < best_old ? t2 - t1 : best_old;
	}
	(void)sink;
	printf("%s %.2f %.2f %.3f\n", name, best_new, best_old, best_old > 0 ? best_new / best_old : 0);
	mem_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 5;
	if (reps < 1)
		reps = 1;
	return bench("model-8g", MEM_REPR_STAMP, 8ull << 30, reps) || bench("bytes-256m", MEM_REPR_BYTES, 256ull << 20, reps);
}
