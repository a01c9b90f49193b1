/* SPDX-License-Identifier: MIT */
/* size - SIZE arguments: a decimal byte count with an optional binary unit, as QEMU's
 * qemu_strtosz (util/cutils.c) reads them.
 *
 * Accepted: "4096", "64K", "64k", "1M", "1G", "2T", "1P", "1E" (K=2^10 ... E=2^60, either
 * case; also "64KiB", "1MiB", ...), "1B"/"1b" (bytes), fractions with a unit above bytes
 * ("1.5G", "0.5k", "1.k"), their exact value rounded half up (QEMU goes through a double;
 * digits past the 18th after the point are dropped).
 * Rejected: empty, signs, spaces, hex, exponents ("1e3", "1.5e3K"), a fraction of bytes
 * ("1.5", "1.5B"), unknown units, overflow past 2^64-1. */
#ifndef MIGBED_SIM_SIZE_H
#define MIGBED_SIM_SIZE_H
#include <stddef.h>
#include <stdint.h>

/* 0 and *out set, or -EINVAL (malformed) / -ERANGE (too large); *out untouched on error. */
int size_parse(const char *s, uint64_t *out);
/* Shortest exact form: 1048576 -> "1M", 4096 -> "4K", 1000 -> "1000". Returns buf. */
const char *size_format(uint64_t bytes, char *buf, size_t buflen);
/* Decimal unsigned integer, no sign, no unit: 0, -EINVAL or -ERANGE. */
int size_parse_u64(const char *s, uint64_t *out);
/* Leading decimal digits of s into *out; *end always points past them. 0, -EINVAL (no
 * digit), -ERANGE (more than 2^64-1; *out untouched). */
int size_parse_digits(const char *s, uint64_t *out, const char **end);

#endif
