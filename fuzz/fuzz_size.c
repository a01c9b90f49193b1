/* SPDX-License-Identifier: MIT */
/* fuzz_size - SIZE and TIME values (sim/size.h; the CLI's and scenarios' number keys).
 *
 * Text direction: whatever size_parse accepts, size_format writes back in a form it parses to
 * the same value (format(parse(x)) parses, and equal). Value direction: any 64-bit value
 * formats to text that parses back to it. size_parse_u64 and size_parse_digits agree with
 * size_parse where they overlap. The same text as the value of a number key of `migbed run`
 * (runcfg_set): accepted or refused with a message, never anything else. */
#include "fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "cli/runcfg.h"
#include "sim/size.h"
#include "sim/trace.h"

static void text_direction(const char *s)
{
	uint64_t v = 0, back = 0, u = 0, dg = 0;
	char buf[32];
	int rc = size_parse(s, &v);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE, "size_parse(\"%s\") = %d", s, rc);
	if (rc == 0) {
		size_format(v, buf, sizeof buf);
		FUZZ_CHECK(size_parse(buf, &back) == 0 && back == v, "\"%s\" = %llu formats as \"%s\" -> %llu", s,
			   (unsigned long long)v, buf, (unsigned long long)back);
	}
	int ru = size_parse_u64(s, &u);
	FUZZ_CHECK(ru == 0 || ru == -EINVAL || ru == -ERANGE, "size_parse_u64 = %d", ru);
	if (ru == 0)   /* a plain number is a SIZE of bytes */
		FUZZ_CHECK(rc == 0 && v == u, "\"%s\": u64 %llu, size rc %d %llu", s, (unsigned long long)u, rc,
			   (unsigned long long)v);
	const char *end = NULL;
	int rd = size_parse_digits(s, &dg, &end);
	FUZZ_CHECK(end != NULL && end >= s && end <= s + strlen(s), "digits end outside \"%s\"", s);
	if (rd == 0 && *end == '\0')
		FUZZ_CHECK(ru == 0 && u == dg, "\"%s\": digits %llu, u64 rc %d", s, (unsigned long long)dg, ru);
}

static void value_direction(uint64_t v)
{
	char buf[32], tbuf[24];
	uint64_t back = 0;
	size_format(v, buf, sizeof buf);
	FUZZ_CHECK(size_parse(buf, &back) == 0 && back == v, "%llu formats as \"%s\" -> %llu",
		   (unsigned long long)v, buf, (unsigned long long)back);
	trace_format_time(v, tbuf, sizeof tbuf);
	FUZZ_CHECK(strlen(tbuf) > 1 && strlen(tbuf) < sizeof tbuf, "time %llu -> \"%s\"", (unsigned long long)v, tbuf);
}

/* The text as the value of one of `migbed run`'s keys. */
static void as_key(uint8_t pick, const char *s)
{
	size_t n = runcfg_n_keys();
	const char *key = runcfg_key_name(pick % n);
	struct runcfg *c = calloc(1, sizeof *c);
	struct diag d = { 0 };
	if (!c)
		abort();
	runcfg_defaults(c);
	int rc = runcfg_set(c, key, s, "fuzz:1", &d);
	if (rc != 0)
		FUZZ_CHECK(d.msg[0] != '\0', "key %s, value \"%s\": refused without a message", key, s);
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t pick = fz_u8(&f);
	uint64_t v = fz_u64(&f, 8);
	value_direction(v);
	value_direction(v >> (pick & 63));
	char *s = fuzz_cstr(f.p, f.n);
	text_direction(s);
	as_key(pick, s);
	free(s);
	return 0;
}
