/* SPDX-License-Identifier: MIT */
/* test_alloc - for unit tests only: include it from exactly one *_test.c of a test binary.
 *
 * It interposes calloc and realloc (a definition in the executable wins over the C library's;
 * the allocator underneath does the work: glibc's, or ASan's in make check-asan, see
 * test_real_alloc.h; not for valgrind), so that a test can fail one allocation of the code under
 * test and check that it ends in a named cause with nothing half-done or leaked:
 *   test_alloc.any_in = N           the N-th calloc or realloc from now returns NULL, once
 *   test_alloc.calloc_in = N        the N-th calloc from now, once
 *   test_alloc.realloc_in = N       the N-th realloc from now, once
 *   test_alloc.realloc_from_bytes   > 0: every realloc to at least that many bytes fails
 *   test_alloc.malloc_in = N        the N-th malloc from now (counted apart from any_in: the
 *                                   C library's and cmocka's own mallocs count too), once
 *   test_alloc.failed               allocations failed so far (read it; reset it at will) */
#ifndef MIGBED_TRANSPORT_TEST_ALLOC_H
#define MIGBED_TRANSPORT_TEST_ALLOC_H
#include <stddef.h>

#include "transport/test_real_alloc.h"

static struct {
	long any_in, calloc_in, realloc_in, malloc_in, failed;
	size_t realloc_from_bytes;
} test_alloc;

static int test_alloc_due(long *countdown)
{
	return *countdown > 0 && --*countdown == 0;
}

void *malloc(size_t n);
void *malloc(size_t n)
{
	/* the global itself, not through a pointer: the loader mallocs before ASan has set up its
	 * shadow memory, and ASan checks a load through a pointer (make check-asan) */
	if (test_alloc.malloc_in > 0 && --test_alloc.malloc_in == 0) {
		test_alloc.failed++;
		return NULL;
	}
	return REAL_ALLOC(malloc)(n);
}

void *calloc(size_t n, size_t size);
void *calloc(size_t n, size_t size)
{
	int any = test_alloc_due(&test_alloc.any_in), own = test_alloc_due(&test_alloc.calloc_in);
	if (any || own) {
		test_alloc.failed++;
		return NULL;
	}
	return REAL_ALLOC(calloc)(n, size);
}

void *realloc(void *p, size_t size);
void *realloc(void *p, size_t size)
{
	int any = test_alloc_due(&test_alloc.any_in), own = test_alloc_due(&test_alloc.realloc_in);
	if (any || own || (test_alloc.realloc_from_bytes && size >= test_alloc.realloc_from_bytes)) {
		test_alloc.failed++;
		return NULL;
	}
	return REAL_ALLOC(realloc)(p, size);
}

#endif
