/* SPDX-License-Identifier: MIT */
/* fuzz - what every harness in fuzz/ shares (docs/fuzzing.md).
 *
 * A harness is one file fuzz/fuzz_NAME.c defining LLVMFuzzerTestOneInput. It is built twice:
 * with clang and libFuzzer (`make fuzz`: -fsanitize=fuzzer,address,undefined) to search, and
 * with the project's compiler as a plain binary with fuzz/replay.c's main(), which runs every
 * file of fuzz/corpus/NAME/ and fuzz/regress/NAME/ once (`make check`). A property that does
 * not hold is FUZZ_CHECK's abort(): a crash to libFuzzer, a failed test to `make check`.
 *
 * Inputs are taken apart with a cursor (fz_*): a harness reads a mode byte, lengths and
 * values from the front and uses the rest as text or bytes, so every input is valid to it. */
#ifndef MIGBED_FUZZ_FUZZ_H
#define MIGBED_FUZZ_FUZZ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                          \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                  \
			fputc('\n', stderr);                                           \
			abort();                                                       \
		}                                                                      \
	} while (0)

/* A cursor over the input: reads past the end give zeros (and no bytes). */
struct fz {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->p++;
}

static inline uint64_t fz_u64(struct fz *f, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | fz_u8(f);
	return v;
}

/* Up to n bytes: *len set to how many are left when fewer. */
static inline const uint8_t *fz_bytes(struct fz *f, size_t n, size_t *len)
{
	const uint8_t *p = f->p;
	*len = n < f->n ? n : f->n;
	f->p += *len;
	f->n -= *len;
	return p;
}

/* The input as a file: path of a file in this process's own temporary folder (made once in
 * /dev/shm, else $TMPDIR or /tmp; removed at exit), holding exactly data[0..size). suffix: ".zst", ".scn", ... 
 * NULL when it cannot be written (the harness then skips the input). */
const char *fuzz_file(const char *suffix, const void *data, size_t size);

/* A copy of data[0..size) as a NUL-terminated string (cut at its first NUL); free() it. */
char *fuzz_cstr(const uint8_t *data, size_t size);

/* A parser's message without the bytes it quotes at the offset (" (bytes 55 aa ...)"): those
 * are the bytes fed so far, which depend on the pieces; the rest must not. */
static inline void fz_cut_bytes(char *msg)
{
	for (char *b = msg; (b = strstr(b, " (bytes ")) != NULL; b++)
		if (!strchr(b + 2, '(')) {
			*b = '\0';
			return;
		}
}

#endif
