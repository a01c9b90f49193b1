/* SPDX-License-Identifier: MIT */
/* size - SIZE arguments (see size.h). */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim/size.h"

struct size_unit {
	char letter;
	unsigned shift;
};

/* Formatting's units (size_format); parsing also takes B and, as QEMU, P and E. */
static const struct size_unit size_units[] = {
	{ 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 },
};
#define N_SIZE_UNITS (sizeof size_units / sizeof size_units[0])
#define SIZE_FRAC_DIGITS 18       /* 10^18 < 2^60: the long division below cannot overflow */

/* Leading decimal digits of s into *out; *end always points past them. 0, -EINVAL (no
 * digit), -ERANGE (more than 2^64-1; *out untouched). */
int size_parse_digits(const char *s, uint64_t *out, const char **end)
{
	uint64_t v = 0;
	const char *p = s;
	int overflow = 0;

	/* 19 digits are below 10^19 < 2^64: no overflow check needed for them */
	for (int i = 0; i < 19 && *p >= '0' && *p <= '9'; i++, p++)
		v = v * 10 + (uint64_t)(*p - '0');
	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t digit = (uint64_t)(*p - '0');
		if (v > (UINT64_MAX - digit) / 10)
			overflow = 1;     /* keep scanning so *end is right */
		else
			v = v * 10 + digit;
	}
	*end = p;
	if (p == s)
		return -EINVAL;
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

/* The shift of a unit suffix, either case as QEMU's qemu_strtosz: "" -> 0, "B"/"b" -> 0,
 * "K"/"k"/"KiB" -> 10, ... "E"/"e" -> 60; -1 if unknown. */
static int unit_shift(const char *suffix)
{
	static const char letters[] = "BKMGTPE";
	if (suffix[0] == '\0')
		return 0;
	const char *l = strchr(letters, toupper((unsigned char)suffix[0]));
	if (!l || !*l)
		return -1;
	int shift = (int)(l - letters) * 10;
	if (suffix[1] != '\0' && (shift == 0 || strcmp(suffix + 1, "iB") != 0))
		return -1;
	return shift;
}

/* ".DIGITS" (none is fine: "1.k") at s: the first SIZE_FRAC_DIGITS digits as num / *den
 * (more are read and dropped); *end past them. Not at a '.': 0 / 1. */
static void parse_fraction(const char *s, uint64_t *num, uint64_t *den, const char **end)
{
	*num = 0;
	*den = 1;
	if (*s != '.') {
		*end = s;
		return;
	}
	for (s++; *s >= '0' && *s <= '9'; s++) {
		if (*den > UINT64_C(100000000000000000))   /* SIZE_FRAC_DIGITS read */
			continue;
		*num = *num * 10 + (uint64_t)(*s - '0');
		*den *= 10;
	}
	*end = s;
}

/* num / den (num < den <= 10^18) times 2^shift, rounded half up: binary long division, exact. */
static uint64_t fraction_scaled(uint64_t num, uint64_t den, unsigned shift)
{
	uint64_t q = 0, r = num;
	for (unsigned i = 0; i < shift; i++) {
		r <<= 1;
		q <<= 1;
		if (r >= den) {
			r -= den;
			q |= 1;
		}
	}
	return q + (r >= den - r);
}

int size_parse(const char *s, uint64_t *out)
{
	uint64_t v = 0, num, den;
	const char *end;
	int shift, rc;

	if (!s || !out)
		return -EINVAL;
	rc = size_parse_digits(s, &v, &end);
	if (rc == -EINVAL)
		return -EINVAL;
	parse_fraction(end, &num, &den, &end);
	shift = unit_shift(end);
	if (shift < 0 || (num != 0 && shift == 0))
		return -EINVAL;           /* malformed wins over too large: "99999999999999999999X"; a
					   * fraction needs a unit above bytes, as in QEMU */
	if (rc)
		return rc;
	if (shift > 0 && v > (UINT64_MAX >> shift))
		return -ERANGE;
	uint64_t whole = v << shift, part = num ? fraction_scaled(num, den, (unsigned)shift) : 0;
	if (whole > UINT64_MAX - part)
		return -ERANGE;
	*out = whole + part;
	return 0;
}

int size_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *end;
	int rc;

	if (!s || !out)
		return -EINVAL;
	rc = size_parse_digits(s, &v, &end);
	if (rc == -EINVAL || *end != '\0')
		return -EINVAL;
	if (rc)
		return rc;
	*out = v;
	return 0;
}

const char *size_format(uint64_t bytes, char *buf, size_t buflen)
{
	const struct size_unit *best = NULL;

	if (!buf || buflen == 0)
		return buf;
	for (size_t i = 0; bytes != 0 && i < N_SIZE_UNITS; i++) {
		uint64_t mask = (UINT64_C(1) << size_units[i].shift) - 1;
		if ((bytes & mask) == 0)
			best = &size_units[i];
	}
	if (best)
		snprintf(buf, buflen, "%llu%c", (unsigned long long)(bytes >> best->shift),
			 best->letter);
	else
		snprintf(buf, buflen, "%llu", (unsigned long long)bytes);
	return buf;
}
