/* SPDX-License-Identifier: MIT */
/* hw - hardware profiles (see hw.h). */
#include "run/hw.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/line.h"

/* A cost key: its field of struct hca_cost, in ns (or bytes/s) = value x mul. */
struct hw_key {
	const char *name;
	const char *unit;
	size_t off;
	uint64_t mul;
	uint64_t lo, hi;       /* bounds of the value, in the key's unit */
	const char *help;
};

#define F(f) offsetof(struct hca_cost, f)
#define T_NS 1000000000000ull   /* 1000 s in ns: a bound no cost of one step comes near */
static const struct hw_key keys[] = {
	{ "link-gbps", "Gb/s", F(link_bytes_per_s), 125000000u, 1, 10000,
	  "link rate: a WRITE or SEND of B bytes occupies the link B / rate" },
	{ "link-mbps", "Mb/s", F(link_bytes_per_s), 125000u, 1, 10000000,
	  "the link rate in Mb/s, for links under 1 Gb/s (soft-RoCE); the same rate as link-gbps, the later wins" },
	{ "latency-ns", "ns", F(msg_latency_ns), 1, 0, T_NS, "one-way latency of every message" },
	{ "wr-overhead-ns", "ns", F(wr_overhead_ns), 1, 0, T_NS, "per work request, on the link" },
	{ "reg-fixed-ns", "ns", F(reg_fixed_ns), 1, 0, T_NS, "per ibv_reg_mr, either side" },
	{ "src-reg-ns-per-page", "ns", F(reg_per_page_ns), 1, 0, T_NS / 1000,
	  "source: ibv_reg_mr per 4 KiB page pinned" },
	{ "dst-reg-ns-per-page", "ns", F(dst_reg_per_page_ns), 1, 0, T_NS / 1000,
	  "destination: ibv_reg_mr per 4 KiB page pinned" },
	{ "dst-zero-fill-ns-per-page", "ns", F(dst_zero_fill_per_page_ns), 1, 0, T_NS / 1000,
	  "destination, on top: per never-touched guest page its pinning faults in and zero-fills" },
	{ "dereg-fixed-ns", "ns", F(dereg_fixed_ns), 1, 0, T_NS, "per ibv_dereg_mr" },
	{ "odp-fault-ns", "ns", F(odp_fault_ns), 1, 0, T_NS, "per 4 KiB page an ODP MR faults in under a WRITE" },
	{ "wait-running-us", "us", F(wait_running_ns), 1000, 0, T_NS / 1000,
	  "source: every blocking control wait, guest running" },
	{ "wait-stopped-us", "us", F(wait_stopped_ns), 1000, 0, T_NS / 1000,
	  "source: every blocking control wait, guest stopped" },
	{ "setup-ms", "ms", F(setup_ns), 1000000, 0, T_NS / 1000000, "migration setup before the first RAM page" },
	{ "downtime-floor-ms", "ms", F(downtime_floor_ns), 1000000, 0, T_NS / 1000000,
	  "fixed cost at the switchover with the guest stopped (device state, final sync), in every downtime" },
};
#undef F
#define N_KEYS (sizeof keys / sizeof keys[0])
_Static_assert(N_KEYS <= HW_KEYS_MAX, "HW_KEYS_MAX is too small");

size_t hw_n_keys(void) { return N_KEYS; }
const char *hw_key_name(size_t i) { return i < N_KEYS ? keys[i].name : NULL; }
const char *hw_key_unit(size_t i) { return i < N_KEYS ? keys[i].unit : NULL; }
const char *hw_key_help(size_t i) { return i < N_KEYS ? keys[i].help : NULL; }

static uint64_t *fld(struct hca_cost *c, size_t i) { return (uint64_t *)((char *)c + keys[i].off); }

uint64_t hw_key_get(const struct hca_cost *c, size_t i)
{
	if (i >= N_KEYS)
		return 0;
	return *(const uint64_t *)((const char *)c + keys[i].off) / keys[i].mul;
}

static int key_index(const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (!strcmp(keys[i].name, name))
			return (int)i;
	return -1;
}

/* A decimal integer, digits only. */
static int parse_u64(const char *v, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = x;
	return 0;
}

int hw_set(struct hca_cost *c, const char *key, const char *value, const char *where, struct diag *d)
{
	int i = key_index(key);
	uint64_t x;
	if (i < 0)
		return diag_set(d, "%s: unknown hardware key '%s' (see migbed hw keys)", where, key);
	const struct hw_key *k = &keys[i];
	if (parse_u64(value, &x) || x < k->lo || x > k->hi)
		return diag_set(d, "%s: %s: '%s' is not a whole number of %s from %llu to %llu", where, key, value,
				k->unit, (unsigned long long)k->lo, (unsigned long long)k->hi);
	*fld(c, (size_t)i) = x * k->mul;   /* bounds: no overflow */
	return 0;
}

int hw_set_pair(struct hca_cost *c, const char *pair, const char *where, struct diag *d)
{
	char buf[256];
	const char *eq = strchr(pair, '=');
	if (!eq || strlen(pair) >= sizeof buf)
		return diag_set(d, "%s: '%s' is not KEY=VALUE (see migbed hw keys)", where, pair);
	memcpy(buf, pair, strlen(pair) + 1);
	buf[eq - pair] = '\0';
	return hw_set(c, line_trim(buf), line_trim(buf + (eq - pair) + 1), where, d);
}

/* ---- finding a profile ------------------------------------------------------------------ */

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

#ifndef MIGBED_DATADIR
#define MIGBED_DATADIR "/usr/local/share/migbed"
#endif

const char *hw_datadir(void)
{
	const char *env = getenv("MIGBED_DATADIR");
	return env && env[0] ? env : MIGBED_DATADIR;
}

/* BIN/../hw and BIN/../share/migbed/hw beside the running binary; their real paths into seen */
static void each_exe_dir(void (*fn)(const char *dir, void *arg), void *arg, char seen[2][PATH_MAX])
{
	char exe[PATH_MAX], buf[HW_PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k <= 0)
		return;
	exe[k] = '\0';
	for (int up = 0; up < 2; up++) {   /* BIN/migbed -> BIN/.. */
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
	}
	static const char *const under[] = { "hw", "share/migbed/hw" };
	for (size_t i = 0; i < sizeof under / sizeof under[0]; i++) {
		int w = snprintf(buf, sizeof buf, "%.*s/%s", (int)(sizeof buf - 32), exe, under[i]);
		if (w > 0 && (size_t)w < sizeof buf && is_dir(buf) && realpath(buf, seen[i]))
			fn(buf, arg);
	}
}

void hw_each_dir(void (*fn)(const char *dir, void *arg), void *arg)
{
	const char *env = getenv("MIGBED_HW_PATH");
	char buf[HW_PATH_MAX], real[PATH_MAX], seen[2][PATH_MAX] = { "", "" };
	if (env && env[0] && strlen(env) < sizeof buf) {   /* dir:dir:... */
		memcpy(buf, env, strlen(env) + 1);
		for (char *save = NULL, *tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
			if (is_dir(tok))
				fn(tok, arg);
	}
	each_exe_dir(fn, arg, seen);
	int w = snprintf(buf, sizeof buf, "%s/hw", hw_datadir());   /* unless it was one of those */
	if (w > 0 && (size_t)w < sizeof buf && is_dir(buf) && realpath(buf, real) &&
	    strcmp(real, seen[0]) && strcmp(real, seen[1]))
		fn(buf, arg);
}

struct find_ctx {
	const char *name;
	char *path;
	size_t n;
	bool found;
	char looked[512];
};

static void find_in(const char *dir, void *arg)
{
	struct find_ctx *f = arg;
	char p[HW_PATH_MAX];
	size_t l = strlen(f->looked);
	if (l + 4 < sizeof f->looked)
		snprintf(f->looked + l, sizeof f->looked - l, "%s%s", l ? ", " : "", dir);
	int w = snprintf(p, sizeof p, "%s/%s.hw", dir, f->name);
	if (f->found || w < 0 || (size_t)w >= sizeof p || (size_t)w >= f->n || access(p, R_OK) != 0)
		return;
	memcpy(f->path, p, (size_t)w + 1);
	f->found = true;
}

static bool is_file_arg(const char *v)
{
	size_t l = strlen(v);
	return strchr(v, '/') || (l > 3 && !strcmp(v + l - 3, ".hw"));
}

int hw_find(const char *v, char *path, size_t n, struct diag *d)
{
	if (!v[0])
		return diag_set(d, "hw: an empty profile name");
	if (is_file_arg(v)) {
		if (strlen(v) >= n)
			return diag_set(d, "%s: path too long", v);
		memcpy(path, v, strlen(v) + 1);
		return 0;
	}
	for (const char *s = v; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.'))
			return diag_set(d, "hw: '%s' is not a profile name (letters, digits, '-', '_', '.') "
					   "nor a file (a path with '/' or ending in .hw)", v);
	struct find_ctx f = { .name = v, .path = path, .n = n };
	hw_each_dir(find_in, &f);
	if (!f.found) {
		diag_set(d, "hw: no profile '%s' (looked in %s; see migbed hw list)", v, f.looked[0] ? f.looked : "no folder");
		return -ENOENT;
	}
	return 0;
}

/* ---- reading a file ------------------------------------------------------------------------ */

static int text_key(struct hw_profile *p, const char *k, const char *v, const char *where, struct diag *d)
{
	char *dst = !strcmp(k, "description") ? p->description : p->reference;
	if (strlen(v) >= HW_TEXT_MAX)
		return diag_set(d, "%s: %s: longer than %d bytes", where, k, HW_TEXT_MAX - 1);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int load_line(struct hw_profile *p, char *line, const char *where, unsigned long *first, unsigned long lineno,
		     struct diag *d)
{
	char *s = line_trim(line);
	if (!*s || *s == '#')
		return 0;
	char *eq = strchr(s, '=');
	if (!eq)
		return diag_set(d, "%s: expected 'key = value', got '%s'", where, s);
	*eq = '\0';
	char *k = line_trim(s), *v = line_trim(eq + 1);
	if (!*v)
		return diag_set(d, "%s: key '%s' has no value", where, k);
	bool text = !strcmp(k, "description") || !strcmp(k, "reference");
	int i = text ? (int)N_KEYS + (k[0] == 'r') : key_index(k);
	if (i < 0)
		return diag_set(d, "%s: unknown hardware key '%s' (see migbed hw keys)", where, k);
	if (first[i])
		return diag_set(d, "%s: key '%s' given twice (first on line %lu)", where, k, first[i]);
	first[i] = lineno;
	if (text)
		return text_key(p, k, v, where, d);
	p->given[i] = true;
	return hw_set(&p->cost, k, v, where, d);
}

int hw_load_file(const char *path, struct hw_profile *out, struct diag *d)
{
	struct hw_profile *p = calloc(1, sizeof *p);
	FILE *f = p ? fopen(path, "r") : NULL;
	char line[1024];
	unsigned long lineno = 0, first[N_KEYS + 2] = { 0 };
	int rc = 0, got;
	if (!p)
		return diag_set(d, "%s: out of memory", path);
	if (!f) {
		diag_set(d, "%s: cannot open hardware profile: %s", path, strerror(errno));
		free(p);
		return -ENOENT;
	}
	hca_cost_defaults(&p->cost);
	snprintf(p->path, sizeof p->path, "%s", path);
	while (rc == 0 && (got = line_read(f, line, sizeof line)) != 0) {
		char where[HW_PATH_MAX + 24];
		snprintf(where, sizeof where, "%s:%lu", path, ++lineno);
		if (got < 0)
			rc = got == -E2BIG ? diag_set(d, "%s: line longer than %zu bytes", where, sizeof line - 2)
					   : diag_set(d, "%s: a NUL byte in the line", where);
		else
			rc = load_line(p, line, where, first, lineno, d);
	}
	if (rc == 0 && ferror(f))
		rc = diag_set(d, "%s: read error", path);
	fclose(f);
	if (rc == 0)
		*out = *p;   /* nothing half-read reaches the caller */
	free(p);
	return rc;
}

int hw_load(const char *v, struct hw_profile *p, struct diag *d)
{
	char path[HW_PATH_MAX];
	int rc = hw_find(v, path, sizeof path, d);
	return rc ? rc : hw_load_file(path, p, d);
}

void hw_write(FILE *f, const struct hw_profile *p)
{
	if (p->description[0])
		fprintf(f, "description = %s\n", p->description);
	if (p->reference[0])
		fprintf(f, "reference = %s\n", p->reference);
	for (size_t i = 0; i < N_KEYS; i++) {
		/* link-gbps only when it says the rate exactly (link-mbps, written after it, always does) */
		if (!strcmp(keys[i].name, "link-gbps") && p->cost.link_bytes_per_s % keys[i].mul)
			continue;
		fprintf(f, "%s = %llu\n", keys[i].name, (unsigned long long)hw_key_get(&p->cost, i));
	}
}
