/* SPDX-License-Identifier: MIT */
/* fuzz_trace - trace files (sim/trace.h, docs/trace-format.md), text and zstd, as `run
 * --trace`, `--dst-layout` and `trace check` read them.
 *
 * The streaming reader (what `run` uses) and the validator (`trace check`) agree: a file the
 * reader reads to its end without an error has no defect for trace_check, and a file the
 * reader refuses has at least one, every diagnostic "FILE:LINE: problem". What the reader
 * hands out holds the format's promises: epochs strictly increasing and before the duration,
 * ranges inside their block. The same text compressed with zstd (mode bit 0) reads the same:
 * the same epochs, ranges and diagnostic (after the file name). */
#include "fuzz/fuzz.h"

#include <string.h>
#include <zstd.h>

#include "sim/trace.h"

#define MAX_STEPS 100000u

struct seen {
	uint64_t hash, steps;
	int rc;
	char diag[DIAG_MSG_MAX];
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

static void diag_ok(const char *path, const char *msg)
{
	size_t pl = strlen(path);
	FUZZ_CHECK(!strncmp(msg, path, pl) && msg[pl] == ':', "diagnostic not 'FILE:...': %s", msg);
}

/* Read the file with the streaming reader; *s what it saw. */
static void read_trace(const char *path, struct seen *s)
{
	trace_reader *r;
	struct diag d = { 0 };
	memset(s, 0, sizeof *s);
	s->hash = 0xcbf29ce484222325ull;
	int rc = trace_open(path, &r, &d);
	if (rc != 0) {
		s->rc = rc;
		diag_ok(path, d.msg);
		snprintf(s->diag, sizeof s->diag, "%s", d.msg + strlen(path));
		return;
	}
	const struct trace_header *h = trace_header(r);
	FUZZ_CHECK(h->n_blocks >= 1 && h->n_blocks <= TRACE_MAX_BLOCKS, "%zu blocks", h->n_blocks);
	FUZZ_CHECK(h->page_size >= 512 && !(h->page_size & (h->page_size - 1)), "page size %llu",
		   (unsigned long long)h->page_size);
	uint64_t t, last = 0;
	bool first = true;
	struct trace_range lg;   /* version 2: the initial layout, inside its blocks as any range */
	while (s->steps < MAX_STEPS && (rc = trace_next_layout(r, &lg)) == 1) {
		s->steps++;
		FUZZ_CHECK(h->version == TRACE_VERSION_LAYOUT && lg.block < h->n_blocks && lg.n_pages >= 1 &&
			   lg.first_page < h->blocks[lg.block].size_bytes / h->page_size &&
			   lg.n_pages <= h->blocks[lg.block].size_bytes / h->page_size - lg.first_page,
			   "layout %u:%llu+%llu outside its block", lg.block, (unsigned long long)lg.first_page,
			   (unsigned long long)lg.n_pages);
		s->hash = mix(s->hash, lg.first_page ^ (lg.n_pages << 20));
	}
	while (s->steps < MAX_STEPS && rc >= 0 && (rc = trace_next_epoch(r, &t)) == 1) {
		s->steps++;
		FUZZ_CHECK(t < h->duration_ns && (first || t > last), "epoch %llu after %llu, duration %llu",
			   (unsigned long long)t, (unsigned long long)last, (unsigned long long)h->duration_ns);
		first = false;
		last = t;
		s->hash = mix(s->hash, t);
		struct trace_range g;
		while (s->steps < MAX_STEPS && (rc = trace_next_range(r, &g)) == 1) {
			s->steps++;
			FUZZ_CHECK(g.block < h->n_blocks && g.n_pages >= 1 &&
				   g.first_page < h->blocks[g.block].size_bytes / h->page_size &&
				   g.n_pages <= h->blocks[g.block].size_bytes / h->page_size - g.first_page,
				   "range %u:%llu+%llu outside its block", g.block, (unsigned long long)g.first_page,
				   (unsigned long long)g.n_pages);
			s->hash = mix(mix(mix(s->hash, g.block), g.first_page), g.n_pages);
		}
		if (rc < 0)
			break;
	}
	s->rc = s->steps >= MAX_STEPS ? 1 : rc;
	if (rc < 0) {
		diag_ok(path, trace_diag(r));
		snprintf(s->diag, sizeof s->diag, "%s", trace_diag(r) + strlen(path));
	}
	trace_close(r);
}

struct report {
	const char *path;
	long n;
};

static void on_defect(void *arg, const char *line)
{
	struct report *rp = arg;
	diag_ok(rp->path, line);
	rp->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	uint8_t mode = fz_u8(&f);
	static struct seen plain, zst;
	const char *path = fuzz_file(".trace", f.p, f.n);
	if (!path)
		return 0;
	char *saved = strdup(path);
	if (!saved)
		abort();
	read_trace(saved, &plain);
	if (plain.rc != 1 || plain.steps < MAX_STEPS) {   /* a whole read: trace check agrees */
		struct report rp = { saved, 0 };
		long defects = trace_check(saved, on_defect, &rp);
		FUZZ_CHECK(defects == rp.n, "trace_check: %ld defects, %ld reported", defects, rp.n);
		if (plain.rc == 0)
			FUZZ_CHECK(defects == 0, "read to its end, but trace check finds %ld defects", defects);
		else
			FUZZ_CHECK(defects > 0, "the reader refuses it (%s), trace check finds nothing", plain.diag);
	}
	free(saved);
	if (mode & 1) {
		size_t cap = ZSTD_compressBound(f.n);
		void *z = malloc(cap ? cap : 1);
		if (!z)
			abort();
		size_t zn = ZSTD_compress(z, cap, f.p, f.n, 1);
		FUZZ_CHECK(!ZSTD_isError(zn), "ZSTD_compress: %s", ZSTD_getErrorName(zn));
		path = fuzz_file(".zst", z, zn);
		free(z);
		if (!path)
			return 0;
		saved = strdup(path);
		if (!saved)
			abort();
		read_trace(saved, &zst);
		FUZZ_CHECK(plain.rc == zst.rc && plain.hash == zst.hash && plain.steps == zst.steps,
			   "zstd reads otherwise: rc %d/%d, %llu/%llu steps", plain.rc, zst.rc,
			   (unsigned long long)plain.steps, (unsigned long long)zst.steps);
		/* text that begins with zstd's magic: the plain reader names it (compressed data in a
		 * file not named .zst), the .zst reader finds the same bytes as content (a binary
		 * byte); both refuse it, in words of their own */
		static const uint8_t magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
		if (f.n < 4 || memcmp(f.p, magic, 4))
			FUZZ_CHECK(!strcmp(plain.diag, zst.diag), "zstd's diagnostic differs: '%s' / '%s'", plain.diag,
				   zst.diag);
		free(saved);
	} else if (mode & 2) {   /* the bytes as they come, as a .zst file: refused or read, named */
		path = fuzz_file(".zst", f.p, f.n);
		if (!path)
			return 0;
		saved = strdup(path);
		if (!saved)
			abort();
		read_trace(saved, &zst);
		free(saved);
	}
	return 0;
}
