/* SPDX-License-Identifier: MIT */
/* record - /proc text and pagemap entries into what a trace holds (see record.h). */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sim/record.h"
#include "sim/size.h"

static const char *const kind_names[] = {
	[RECORD_ANON] = "anon", [RECORD_HEAP] = "heap", [RECORD_STACK] = "stack",
	[RECORD_REGION] = "region",
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *p)
{
	while (is_blank(*p))
		p++;
	return p;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Leading hex digits of p into *out (at most 16 of them); *end past them. 0 or -EINVAL. */
static int parse_hex(const char *p, uint64_t *out, const char **end)
{
	uint64_t v = 0;
	int n = 0, dgt;

	while ((dgt = hex_digit(p[n])) >= 0) {
		if (n == 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)dgt;
		n++;
	}
	*end = p + n;
	*out = v;
	return n ? 0 : -EINVAL;
}

/* "START-END": the address range. */
static int parse_range(const char *p, struct record_map *m, const char **end)
{
	if (parse_hex(p, &m->start, &p) || *p != '-' || parse_hex(p + 1, &m->end, &p))
		return -EINVAL;
	*end = p;
	return m->end > m->start ? 0 : -EINVAL;
}

/* The field after the blanks at p: its start and length (0 at the end of the line). */
static size_t field(const char **p)
{
	size_t n = 0;

	*p = skip_blanks(*p);
	while ((*p)[n] && !is_blank((*p)[n]))
		n++;
	return n;
}

/* The kind of an anonymous mapping by its path (the rest of the line), or -1 if it is not one. */
static int anon_kind(const char *path)
{
	size_t n = strlen(path);

	while (n && is_blank(path[n - 1]))
		n--;
	if (n == 0)
		return RECORD_ANON;
	if (n == 6 && !strncmp(path, "[heap]", 6))
		return RECORD_HEAP;
	if (n == 7 && !strncmp(path, "[stack]", 7))
		return RECORD_STACK;
	if (n > 7 && !strncmp(path, "[anon:", 6) && path[n - 1] == ']')
		return RECORD_ANON;
	return -1;
}

int record_maps_line(const char *line, const char *file, unsigned long lineno,
		     struct record_map *out, struct diag *d)
{
	struct record_map m = { 0 };
	const char *p = skip_blanks(line), *f;
	size_t n;

	if (parse_range(p, &m, &p) || !is_blank(*p))
		return diag_at(d, file, lineno, "bad address range (expected START-END in hex, START < END)");
	f = p;
	n = field(&f);
	if (n != 4 || strspn(f, "rwxps-") < 4 || (f[3] != 'p' && f[3] != 's'))
		return diag_at(d, file, lineno, "bad permissions field (expected 4 of rwxps-, e.g. rw-p)");
	bool writable_private = f[1] == 'w' && f[3] == 'p';
	p = f + n;
	for (int i = 0; i < 3; i++) {    /* offset, device, inode */
		f = p;
		n = field(&f);
		if (n == 0)
			return diag_at(d, file, lineno, "missing %s field", i == 0 ? "offset" : i == 1 ? "device" : "inode");
		p = f + n;
	}
	bool no_inode = n == 1 && *f == '0';
	int kind = anon_kind(skip_blanks(p));
	if (!writable_private || !no_inode || kind < 0)
		return 0;
	m.kind = (enum record_kind)kind;
	*out = m;
	return 1;
}

long record_maps_parse(const char *text, const char *file, struct record_map *out, size_t max,
		       struct diag *d)
{
	char line[4096 + 256];
	unsigned long lineno = 0;
	long found = 0;

	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		struct record_map m;
		lineno++;
		if (n >= sizeof line)
			return diag_at(d, file, lineno, "line too long (more than %zu bytes)", sizeof line - 1);
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (nl ? 1 : 0);
		if (n == 0)
			continue;
		int rc = record_maps_line(line, file, lineno, &m, d);
		if (rc < 0)
			return rc;
		if (rc && (size_t)found < max)
			out[found] = m;
		found += rc;
	}
	return found;
}

int record_maps_cover(const char *text, const char *file, uint64_t start, uint64_t len,
		      struct diag *d)
{
	uint64_t cursor = start, end = start + len;
	unsigned long lineno = 0;

	for (const char *p = text; *p && cursor < end;) {
		const char *nl = strchr(p, '\n'), *after;
		struct record_map m;
		lineno++;
		if (*p != '\n') {
			if (parse_range(skip_blanks(p), &m, &after) || !is_blank(*after))
				return diag_at(d, file, lineno, "bad address range (expected START-END in hex, START < END)");
			if (m.start <= cursor && cursor < m.end)
				cursor = m.end;        /* lines come in address order */
		}
		p = nl ? nl + 1 : p + strlen(p);
	}
	return cursor >= end;
}

int record_region_parse(const char *arg, uint64_t page_size, uint64_t *start, uint64_t *len,
			struct diag *d)
{
	const char *plus = strchr(arg, '+'), *p = arg, *end;
	uint64_t a, n;

	assert(page_size && (page_size & (page_size - 1)) == 0);
	if (!plus)
		return diag_set(d, "bad region '%s' (expected ADDR+LEN, e.g. 0x7f0000000000+64M)", arg);
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	if (parse_hex(p, &a, &end) || end != plus)
		return diag_set(d, "bad region '%s': ADDR is not a hexadecimal address", arg);
	if (size_parse(plus + 1, &n))
		return diag_set(d, "bad region '%s': LEN is not a SIZE (4096, 64K, 1G ...)", arg);
	if (n == 0 || a % page_size || n % page_size)
		return diag_set(d, "bad region '%s': ADDR and LEN must be multiples of the page size "
				"(%llu) and LEN more than 0", arg, (unsigned long long)page_size);
	if (a + n < a)
		return diag_set(d, "bad region '%s': ADDR+LEN is past the end of the address space", arg);
	*start = a;
	*len = n;
	return 0;
}

const char *record_block_name(long pid, enum record_kind kind, uint64_t start, char *buf,
			      size_t buflen)
{
	int n = snprintf(buf, buflen, "%ld/%s:%llx", pid, kind_names[kind], (unsigned long long)start);
	assert(n > 0 && (size_t)n < buflen && n <= TRACE_BLOCK_NAME_MAX);
	(void)n;
	return buf;
}

int record_page_counts(uint64_t entry, enum record_pages which)
{
	bool populated = (entry & (RECORD_PM_PRESENT | RECORD_PM_SWAPPED)) != 0;

	if (which == RECORD_PAGES_POPULATED)
		return populated;
	return populated && (entry & RECORD_PM_SOFT_DIRTY);
}

void record_scan_begin(struct record_scan *s, enum record_pages which, record_run_fn fn,
		       void *arg)
{
	memset(s, 0, sizeof *s);
	s->which = which;
	s->fn = fn;
	s->arg = arg;
}

static int flush_run(struct record_scan *s)
{
	int rc = 0;

	if (s->run_len) {
		s->runs++;
		s->pages += s->run_len;
		rc = s->fn(s->arg, s->run_first, s->run_len);
	}
	s->run_len = 0;
	return rc;
}

int record_scan_feed(struct record_scan *s, const uint64_t *entries, size_t n)
{
	for (size_t i = 0; i < n; i++, s->next_page++) {
		if (record_page_counts(entries[i], s->which)) {
			if (s->run_len == 0)
				s->run_first = s->next_page;
			s->run_len++;
			continue;
		}
		int rc = flush_run(s);
		if (rc) {
			s->next_page++;
			return rc;
		}
	}
	return 0;
}

int record_scan_end(struct record_scan *s)
{
	return flush_run(s);
}
