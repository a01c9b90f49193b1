/* SPDX-License-Identifier: MIT */
/* test_real_alloc - for unit tests that interpose malloc, calloc, realloc or free: the
 * allocator underneath. glibc's own (__libc_*), or in an AddressSanitizer build (gcc's
 * libsanitizer, which defines the same functions as __interceptor_*) the sanitizer's, so that
 * every block has one owner and ASan still checks it (make check-asan). glibc and gcc only. */
#ifndef MIGBED_TRANSPORT_TEST_REAL_ALLOC_H
#define MIGBED_TRANSPORT_TEST_REAL_ALLOC_H
#include <stddef.h>

#ifdef __SANITIZE_ADDRESS__
#define REAL_ALLOC(fn) __interceptor_##fn
#define REAL_ALLOC_SANITIZED 1     /* the C library's own callers (strdup) bypass the interposer */
#else
#define REAL_ALLOC(fn) __libc_##fn
#define REAL_ALLOC_SANITIZED 0
#endif
void *REAL_ALLOC(malloc)(size_t n);
void *REAL_ALLOC(calloc)(size_t n, size_t size);
void *REAL_ALLOC(realloc)(void *p, size_t n);
void REAL_ALLOC(free)(void *p);

#endif
