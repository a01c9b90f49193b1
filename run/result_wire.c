/* result_wire - a run's digest as a versioned text record (see result_wire.h). */
#include "run/result_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void run_digest_of(const struct run_result *res, struct run_digest *out)
{
	memset(out, 0, sizeof *out);
	out->completed = res->out.completed;
	out->verified = res->out.verified;
	out->cause = res->out.cause;
	snprintf(out->side, sizeof out->side, "%s", run_side_name(res->out.side));
	out->fired = res->faults_injected;
	snprintf(out->detail, sizeof out->detail, "%s", res->out.detail ? res->out.detail : "");
}

int run_digest_encode(const struct run_digest *dg, char *buf, size_t cap)
{
	char esc[2 * CAUSE_DETAIL_MAX + 1];
	size_t k = 0;
	for (const char *p = dg->detail; *p && k + 2 < sizeof esc; p++) {
		if (*p == '\\' || *p == '\n')
			esc[k++] = '\\';
		esc[k++] = *p == '\n' ? 'n' : *p;
	}
	esc[k] = '\0';
	int n = snprintf(buf, cap, "migbed-run-result %d\nstatus %s\nverified %s\ncause %s\nside %s\nfired %" PRIu64
			 "\ndetail %s\nend\n", RUN_WIRE_VERSION, dg->completed ? "completed" : "failed",
			 dg->verified ? "true" : "false", cause_name(dg->cause), dg->side, dg->fired, esc);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

/* The next line of *p (up to end), without its newline, if it starts with key + ' '. */
static const char *field(const char **p, const char *end, const char *key, size_t *len)
{
	size_t kl = strlen(key);
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	if (!nl || (size_t)(nl - *p) < kl + 1 || memcmp(*p, key, kl) != 0 || (*p)[kl] != ' ')
		return NULL;
	const char *v = *p + kl + 1;
	*len = (size_t)(nl - v);
	*p = nl + 1;
	return memchr(v, '\0', *len) ? NULL : v;
}

static bool is(const char *v, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(v, s, n) == 0;
}

static int decode_detail(const char *v, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = v[i];
		if (ch == '\\') {
			if (++i == n || (v[i] != '\\' && v[i] != 'n'))
				return -EINVAL;
			ch = v[i] == 'n' ? '\n' : '\\';
		}
		if (k + 1 >= cap)
			return -EINVAL;
		out[k++] = ch;
	}
	out[k] = '\0';
	return 0;
}

static int decode_u64(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	if (n == 0 || n > 19)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

int run_digest_decode(const char *buf, size_t n, struct run_digest *out)
{
	const char *p = buf, *end = buf + n, *v;
	char name[64];
	size_t len;
	memset(out, 0, sizeof *out);
	if (!buf || n > RUN_WIRE_MAX || !(v = field(&p, end, "migbed-run-result", &len)) || !is(v, len, "1"))
		return -EINVAL;
	if (!(v = field(&p, end, "status", &len)) || !(is(v, len, "completed") || is(v, len, "failed")))
		return -EINVAL;
	out->completed = is(v, len, "completed");
	if (!(v = field(&p, end, "verified", &len)) || !(is(v, len, "true") || is(v, len, "false")))
		return -EINVAL;
	out->verified = is(v, len, "true");
	if (!(v = field(&p, end, "cause", &len)) || len >= sizeof name)
		return -EINVAL;
	memcpy(name, v, len);
	name[len] = '\0';
	out->cause = cause_lookup(name);
	if (out->cause == 0 && strcmp(name, cause_name(0)) != 0)
		return -EINVAL;
	if (out->completed != (out->cause == 0))   /* a failed run always names its cause */
		return -EINVAL;
	int side;
	if (!(v = field(&p, end, "side", &len)) || len >= sizeof out->side)
		return -EINVAL;
	memcpy(out->side, v, len);
	out->side[len] = '\0';
	if (run_side_lookup(out->side, &side))
		return -EINVAL;
	if (!(v = field(&p, end, "fired", &len)) || decode_u64(v, len, &out->fired))
		return -EINVAL;
	if (!(v = field(&p, end, "detail", &len)) || decode_detail(v, len, out->detail, sizeof out->detail))
		return -EINVAL;
	if ((size_t)(end - p) != 4 || memcmp(p, "end\n", 4) != 0)
		return -EINVAL;
	return 0;
}
