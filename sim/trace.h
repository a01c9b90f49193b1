/* SPDX-License-Identifier: MIT */
/* trace - migbed page-dirtying traces, format v1 (docs/trace-format.md).
 *
 * A trace declares the page size, the guest's RAM blocks and the workload's duration, then
 * epochs in virtual time, each listing the pages written at that time as ranges per block.
 * Example:
 *
 *   migbed-trace 1
 *   page-size 4K
 *   block pc.ram 1G
 *   duration 60s
 *   epoch 0ms
 *   pc.ram 0-262143
 *   epoch 10ms
 *   pc.ram 17 40-99
 *
 * Version 2 ('migbed-trace 2') may add 'layout BLOCK RANGE...' lines after 'duration':
 * the pages that hold data when the trace starts (the rest are zero, never touched).
 *
 * Files ending in ".zst" are zstd-compressed (libzstd). Reading streams: only the header and
 * the current line are in memory. Writing goes to FILE.tmp and is renamed on success, so a
 * failed write never leaves a half-written FILE. */
#ifndef MIGBED_SIM_TRACE_H
#define MIGBED_SIM_TRACE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "sim/diag.h"

#define TRACE_VERSION 1            /* the version every writer uses unless it has a layout */
#define TRACE_VERSION_LAYOUT 2     /* version 2 adds 'layout' lines: the pages non-zero at start */
#define TRACE_VERSION_MAX 2        /* the newest version read */
#define TRACE_MAX_BLOCKS 64
#define TRACE_BLOCK_NAME_MAX 63   /* bytes, [A-Za-z0-9._:/-] */

struct trace_block {
	char name[TRACE_BLOCK_NAME_MAX + 1];
	uint64_t size_bytes;          /* multiple of page_size */
	unsigned long line;           /* its 'block' line in the file (1-based; 0: not read from a file) */
};

struct trace_header {
	uint32_t version;             /* 1, or 2 (TRACE_VERSION_LAYOUT) when it may have layout lines */
	uint64_t page_size;           /* power of two, 512 .. 1G */
	uint64_t duration_ns;         /* every epoch time is < duration_ns */
	size_t n_blocks;
	struct trace_block blocks[TRACE_MAX_BLOCKS];
};

/* Pages [first_page, first_page + n_pages) of block `block` (index into the header). */
struct trace_range {
	uint32_t block;
	uint64_t first_page;
	uint64_t n_pages;
};

typedef struct trace_reader trace_reader;

/* Is name a valid block name for a trace of this version (1-63 characters of A-Z a-z 0-9
 * . _ : / -, not a keyword; not 'layout' in version 2)? What the reader and writer check. */
bool trace_block_name_valid(const char *name, uint32_t version);

/* Open and read the header. -EINVAL with d = "FILE:LINE: problem" on bad input, -errno on
 * I/O errors (d set too). */
int trace_open(const char *path, trace_reader **out, struct diag *d);
const struct trace_header *trace_header(const trace_reader *r);
/* Version 2: the next range of the initial layout (the pages that hold data before the
 * workload starts, not writes; every other page is zero, a hole): 1 and *out set, 0 when
 * the layout is done (always 0 for version 1, or once trace_next_epoch was called), <0
 * error. Read it right after trace_open. */
int trace_next_layout(trace_reader *r, struct trace_range *out);
/* Next epoch: 1 and *t_ns set, 0 at the end of the trace, <0 on error (see trace_diag).
 * Ranges of the previous epoch (or layout ranges) not yet read are skipped (and validated). */
int trace_next_epoch(trace_reader *r, uint64_t *t_ns);
/* Next range of the current epoch: 1 and *out set, 0 at the end of the epoch, <0 error. */
int trace_next_range(trace_reader *r, struct trace_range *out);
/* The diagnostic of the last error ("FILE:LINE: problem"). */
const char *trace_diag(const trace_reader *r);
void trace_close(trace_reader *r);

/* Validate the whole file; calls report(file:line: problem) for every defect found (a
 * reader that resynchronises at the next line). Returns the number of defects, or
 * -errno when the file cannot be read at all (also reported). */
typedef void (*trace_report_fn)(void *arg, const char *diag_line);
long trace_check(const char *path, trace_report_fn report, void *arg);
/* trace_check that also counts the well-formed epoch lines seen (*n_epochs, may be NULL). */
long trace_check_epochs(const char *path, trace_report_fn report, void *arg,
			uint64_t *n_epochs);

typedef struct trace_writer trace_writer;

/* path by the rules of sim/outfile.h: "-" (or the file standard output is) is standard output,
 * an existing non-regular file (device, FIFO, symlink to one) is written in place, anything
 * else goes to FILE.tmp beside the file path resolves to (symlinks followed) and is renamed
 * onto it by trace_writer_close. A path ending in .zst is zstd compressed ("-" never is).
 * A directory, a missing directory or no permission is refused here, nothing created:
 * -errno with d = "PATH: cannot write: why". */
int trace_writer_open(const char *path, const struct trace_header *h, trace_writer **out,
		      struct diag *d);
/* Version 2 headers only: one range of the initial layout; before the first epoch. */
int trace_writer_layout(trace_writer *w, const struct trace_range *r);
/* Epoch times must be strictly increasing and < duration. */
int trace_writer_epoch(trace_writer *w, uint64_t t_ns);
int trace_writer_range(trace_writer *w, const struct trace_range *r);
/* Optional comment line ("# text") in the header area; only before the first epoch. */
int trace_writer_comment(trace_writer *w, const char *text);
/* Flush, fsync, rename FILE.tmp onto FILE (in place: close). 0 or -errno. Frees w. */
int trace_writer_close(trace_writer *w);
/* Remove FILE.tmp (in place or standard output: what was written stays). Frees w. */
void trace_writer_abort(trace_writer *w);
/* Why the writer's last call failed (bad input or I/O error), "" if none. */
const char *trace_writer_diag(const trace_writer *w);

/* A time in its shortest exact form, as the writer prints it: 60000000000 -> "60s",
 * 1500000 -> "1500us", 0 -> "0s". Returns buf (24 bytes are always enough). */
const char *trace_format_time(uint64_t ns, char *buf, size_t buflen);

#endif
