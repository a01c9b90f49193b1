/* SPDX-License-Identifier: MIT */
/* record - the pure half of `migbed record` (cli/cmd_record.c does the process side): the text
 * of /proc/PID/maps into the mappings worth recording, a region argument, block names, and
 * /proc/PID/pagemap entries into page ranges. No I/O, no clock: everything here is fed bytes
 * and is unit-tested with crafted /proc text (sim/record_test.c).
 *
 * pagemap entries (Documentation/admin-guide/mm/pagemap.rst in the kernel): one 64-bit word
 * per virtual page; bit 63 present, bit 62 swapped, bit 55 soft-dirty (written since the last
 * `echo 4 > /proc/PID/clear_refs`, on kernels built with CONFIG_MEM_SOFT_DIRTY). */
#ifndef MIGBED_SIM_RECORD_H
#define MIGBED_SIM_RECORD_H
#include <stddef.h>
#include <stdint.h>
#include "sim/diag.h"
#include "sim/trace.h"

#define RECORD_PM_PRESENT (UINT64_C(1) << 63)
#define RECORD_PM_SWAPPED (UINT64_C(1) << 62)
#define RECORD_PM_SOFT_DIRTY (UINT64_C(1) << 55)

/* Which pages a scan turns into ranges. */
enum record_pages {
	RECORD_PAGES_POPULATED,   /* present or swapped: the layout at the start (epoch 0) */
	RECORD_PAGES_DIRTY,       /* soft-dirty and populated: written since the last clear */
};

enum record_kind { RECORD_ANON, RECORD_HEAP, RECORD_STACK, RECORD_REGION };

/* One mapping of /proc/PID/maps, [start, end). */
struct record_map {
	uint64_t start, end;
	enum record_kind kind;
};

/* One line of /proc/PID/maps ("START-END PERMS OFFSET MAJ:MIN INODE [PATH]", no newline).
 * 1 and *out set: a private writable anonymous mapping (no path, [heap], [stack] or
 * [anon:NAME]); 0: a mapping of another kind (file-backed, shared, read-only, [vdso] ...);
 * -EINVAL with d = "FILE:LINE: problem" for a malformed line. */
int record_maps_line(const char *line, const char *file, unsigned long lineno,
		     struct record_map *out, struct diag *d);

/* A whole maps text (NUL-terminated): the recordable mappings in file order into out[0..max).
 * Returns how many there are (may exceed max: only max are stored), or -EINVAL (d set). */
long record_maps_parse(const char *text, const char *file, struct record_map *out, size_t max,
		       struct diag *d);

/* Is [start, start + len) wholly inside the mappings of a maps text (any kind)? 1 yes, 0 no,
 * -EINVAL with d set for a malformed line. */
int record_maps_cover(const char *text, const char *file, uint64_t start, uint64_t len,
		      struct diag *d);

/* "ADDR+LEN": ADDR in hexadecimal (0x optional), LEN a SIZE (4096, 64K, 1G ...); both
 * multiples of page_size, LEN > 0, no wrap past 2^64. 0, or -EINVAL with d = the problem. */
int record_region_parse(const char *arg, uint64_t page_size, uint64_t *start, uint64_t *len,
			struct diag *d);

/* The trace block name of a recorded mapping: "PID/KIND:HEXSTART" ("812/anon:7f3a1c000000"),
 * within the trace's name alphabet and length. Returns buf (TRACE_BLOCK_NAME_MAX + 1). */
const char *record_block_name(long pid, enum record_kind kind, uint64_t start, char *buf,
			      size_t buflen);

/* Does a pagemap entry count for this kind of scan? */
int record_page_counts(uint64_t entry, enum record_pages which);

/* Pagemap entries -> runs of consecutive counted pages. Feed the entries of one mapping in
 * order, in pieces of any size; fn gets every maximal run (first page index within the
 * mapping, page count) in increasing order. A non-zero return from fn stops the scan and is
 * returned by feed/end. */
typedef int (*record_run_fn)(void *arg, uint64_t first_page, uint64_t n_pages);

struct record_scan {
	enum record_pages which;
	record_run_fn fn;
	void *arg;
	uint64_t next_page;        /* index of the next entry to be fed */
	uint64_t run_first, run_len;
	uint64_t pages;            /* counted pages so far */
	uint64_t runs;             /* runs handed to fn so far */
};

void record_scan_begin(struct record_scan *s, enum record_pages which, record_run_fn fn,
		       void *arg);
int record_scan_feed(struct record_scan *s, const uint64_t *entries, size_t n);
int record_scan_end(struct record_scan *s);

#endif
