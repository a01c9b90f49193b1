/* size - SIZE arguments (see size.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sim/size.h"

struct size_unit {
	char letter;
	unsigned shift;
};

static const struct size_unit size_units[] = {
	{ 'K', 10 }, { 'M', 20 }, { 'G', 30 }, { 'T', 40 },
};
#define N_SIZE_UNITS (sizeof size_units / sizeof size_units[0])

/* Leading decimal digits of s into *out; *end always points past them. 0, -EINVAL (no
 * digit), -ERANGE (more than 2^64-1; *out untouched). */
int size_parse_digits(const char *s, uint64_t *out, const char **end)
{
	uint64_t v = 0;
	const char *p = s;
	int overflow = 0;

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

/* The shift for a unit suffix: "" -> 0, "K"/"KiB" -> 10, ...; -1 if unknown. */
static int unit_shift(const char *suffix)
{
	if (suffix[0] == '\0')
		return 0;
	for (size_t i = 0; i < N_SIZE_UNITS; i++) {
		if (suffix[0] != size_units[i].letter)
			continue;
		if (suffix[1] == '\0' || !strcmp(suffix + 1, "iB"))
			return (int)size_units[i].shift;
		return -1;
	}
	return -1;
}

int size_parse(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	const char *end;
	int shift, rc;

	if (!s || !out)
		return -EINVAL;
	rc = size_parse_digits(s, &v, &end);
	shift = rc == -EINVAL ? -1 : unit_shift(end);
	if (shift < 0)
		return -EINVAL;           /* malformed wins over too large: "99999999999999999999X" */
	if (rc)
		return rc;
	if (shift > 0 && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
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
