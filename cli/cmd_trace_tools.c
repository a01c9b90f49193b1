/* SPDX-License-Identifier: MIT */
/* cmd_trace_tools - `migbed trace stat FILE [--json]` and `migbed trace check FILE`.
 *
 * stat streams the trace once through the reader API, keeping one page bitmap for the
 * unique pages of the whole trace and one per working-set window size; nothing is printed
 * until the whole file has been read, so a bad trace prints only its diagnostic. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "sim/json.h"
#include "sim/json_in.h"
#include "sim/size.h"
#include "sim/trace.h"

#define MIB (1024.0 * 1024.0)
#define N_WINDOWS 3

static const uint64_t window_ns[N_WINDOWS] = {
	UINT64_C(100000000), UINT64_C(1000000000), UINT64_C(10000000000),
};

/* ------------------------------------------------------------------- page bitmap */

/* One bit per guest page; `touched` has one bit per word of `words` that is non-zero, so a
 * window's bitmap is cleared in time proportional to what it holds, not the guest size. */
struct pagemap {
	uint64_t *words;
	uint64_t *touched;
	size_t n_words;
};

static int pagemap_init(struct pagemap *m, uint64_t n_pages)
{
	m->n_words = (size_t)((n_pages + 63) / 64);
	m->words = calloc(m->n_words ? m->n_words : 1, sizeof *m->words);
	m->touched = calloc((m->n_words + 63) / 64 + 1, sizeof *m->touched);
	return m->words && m->touched ? 0 : -ENOMEM;
}

static void pagemap_free(struct pagemap *m)
{
	free(m->words);
	free(m->touched);
}

/* Set pages [first, first + n); returns how many were not set before. */
static uint64_t pagemap_set(struct pagemap *m, uint64_t first, uint64_t n)
{
	uint64_t last = first + n - 1, added = 0;

	for (uint64_t w = first / 64; w <= last / 64; w++) {
		uint64_t lo = w == first / 64 ? first % 64 : 0;
		uint64_t hi = w == last / 64 ? last % 64 : 63;
		uint64_t mask = (hi == 63 ? ~UINT64_C(0) : (UINT64_C(1) << (hi + 1)) - 1) &
				~((UINT64_C(1) << lo) - 1);
		uint64_t fresh = mask & ~m->words[w];
		if (!fresh)
			continue;
		if (!m->words[w])
			m->touched[w / 64] |= UINT64_C(1) << (w % 64);
		m->words[w] |= fresh;
		added += (uint64_t)__builtin_popcountll(fresh);
	}
	return added;
}

static void pagemap_clear(struct pagemap *m)
{
	for (size_t t = 0; t < (m->n_words + 63) / 64; t++) {
		uint64_t bits = m->touched[t];
		while (bits) {
			unsigned b = (unsigned)__builtin_ctzll(bits);
			m->words[t * 64 + b] = 0;
			bits &= bits - 1;
		}
		m->touched[t] = 0;
	}
}

/* ----------------------------------------------------------------- statistics */

struct window_stat {
	uint64_t window_ns;
	uint64_t n_full;             /* complete windows in [0, duration) */
	uint64_t cur;                /* index of the window being filled */
	uint64_t cur_pages, sum_pages, max_pages;
	struct pagemap map;
};

struct trace_stats {
	struct trace_header h;
	uint64_t block_first[TRACE_MAX_BLOCKS];  /* block's first page in one global index */
	uint64_t total_pages;
	uint64_t epochs, pages_written, unique_pages;
	uint64_t layout_pages;                   /* version 2: pages non-zero at start (ranges summed) */
	struct pagemap all;
	size_t n_windows;
	struct window_stat win[N_WINDOWS];
};

static void window_finish(struct window_stat *w)
{
	if (w->cur < w->n_full) {
		w->sum_pages += w->cur_pages;
		if (w->cur_pages > w->max_pages)
			w->max_pages = w->cur_pages;
	}
	if (w->cur_pages)
		pagemap_clear(&w->map);
	w->cur_pages = 0;
}

static int stats_init(struct trace_stats *s, const struct trace_header *h)
{
	memset(s, 0, sizeof *s);
	s->h = *h;
	for (size_t b = 0; b < h->n_blocks; b++) {
		s->block_first[b] = s->total_pages;
		s->total_pages += h->blocks[b].size_bytes / h->page_size;
	}
	if (pagemap_init(&s->all, s->total_pages))
		return -ENOMEM;
	for (size_t i = 0; i < N_WINDOWS && window_ns[i] <= h->duration_ns; i++) {
		struct window_stat *w = &s->win[s->n_windows++];
		w->window_ns = window_ns[i];
		w->n_full = h->duration_ns / window_ns[i];
		if (pagemap_init(&w->map, s->total_pages))
			return -ENOMEM;
	}
	return 0;
}

static void stats_free(struct trace_stats *s)
{
	pagemap_free(&s->all);
	for (size_t i = 0; i < s->n_windows; i++)
		pagemap_free(&s->win[i].map);
}

static void stats_epoch(struct trace_stats *s, uint64_t t_ns)
{
	s->epochs++;
	for (size_t i = 0; i < s->n_windows; i++) {
		struct window_stat *w = &s->win[i];
		uint64_t idx = t_ns / w->window_ns;
		if (idx != w->cur) {
			window_finish(w);
			w->cur = idx;
		}
	}
}

static int stats_range(struct trace_stats *s, const struct trace_range *r)
{
	uint64_t first = s->block_first[r->block] + r->first_page;

	if (__builtin_add_overflow(s->pages_written, r->n_pages, &s->pages_written))
		return -ERANGE;
	s->unique_pages += pagemap_set(&s->all, first, r->n_pages);
	for (size_t i = 0; i < s->n_windows; i++) {
		struct window_stat *w = &s->win[i];
		if (w->cur < w->n_full)
			w->cur_pages += pagemap_set(&w->map, first, r->n_pages);
	}
	return 0;
}

/* Read the whole trace into s. 0, or an exit status with the message printed. */
static int stats_collect(const char *path, struct trace_stats *s, bool quiet)
{
	trace_reader *r = NULL;
	struct trace_range rg;
	struct progress pr;
	struct diag d;
	uint64_t t_ns, epochs = 0;
	int rc;

	progress_init(&pr, quiet);
	rc = trace_open(path, &r, &d);
	if (rc)
		return cli_usage_error("trace stat: %s", d.msg);
	if (stats_init(s, trace_header(r))) {
		rc = cli_usage_error("trace stat: %s: out of memory for the page bitmaps "
				     "(%" PRIu64 " pages)", path, s->total_pages);
		goto out;
	}
	while ((rc = trace_next_layout(r, &rg)) > 0)
		s->layout_pages += rg.n_pages;    /* at most the guest's pages per range: no overflow */
	while (rc == 0 && (rc = trace_next_epoch(r, &t_ns)) > 0) {
		if (progress_due(&pr))
			progress_show(&pr, "trace stat: %s: epoch %" PRIu64 ", %.1f s of the workload", path, epochs,
				      (double)t_ns / 1e9);
		epochs++;
		stats_epoch(s, t_ns);
		while ((rc = trace_next_range(r, &rg)) > 0)
			if (stats_range(s, &rg)) {
				rc = cli_usage_error("trace stat: %s: pages written overflow "
						     "64 bits", path);
				goto out;
			}
		if (rc < 0)
			break;
	}
	if (rc < 0) {
		progress_end(&pr);
		rc = cli_usage_error("trace stat: %s", trace_diag(r));
		goto out;
	}
	for (size_t i = 0; i < s->n_windows; i++)
		window_finish(&s->win[i]);
	rc = 0;
out:
	progress_end(&pr);
	trace_close(r);
	return rc;
}

/* --------------------------------------------------------------------- output */

static double mib_of(const struct trace_stats *s, double pages)
{
	return pages * (double)s->h.page_size / MIB;
}

static double dirty_rate_mib_per_s(const struct trace_stats *s)
{
	return mib_of(s, (double)s->pages_written) / ((double)s->h.duration_ns / 1e9);
}

static double window_mean(const struct window_stat *w)
{
	return w->n_full ? (double)w->sum_pages / (double)w->n_full : 0.0;
}

static void print_text(const char *path, const struct trace_stats *s)
{
	char a[32], t[24];

	printf("file            %s\n", path);
	printf("page size       %s (%" PRIu64 " bytes)\n",
	       size_format(s->h.page_size, a, sizeof a), s->h.page_size);
	printf("blocks          %zu\n", s->h.n_blocks);
	for (size_t b = 0; b < s->h.n_blocks; b++)
		printf("  %-13s %s (%" PRIu64 " bytes, %" PRIu64 " pages)\n", s->h.blocks[b].name,
		       size_format(s->h.blocks[b].size_bytes, a, sizeof a),
		       s->h.blocks[b].size_bytes, s->h.blocks[b].size_bytes / s->h.page_size);
	printf("duration        %s\n", trace_format_time(s->h.duration_ns, t, sizeof t));
	if (s->h.version >= TRACE_VERSION_LAYOUT)
		printf("layout          %" PRIu64 " pages non-zero at start (%.3f MiB, %.1f %% of the "
		       "guest; the rest never touched)\n", s->layout_pages,
		       mib_of(s, (double)s->layout_pages),
		       100.0 * (double)s->layout_pages / (double)s->total_pages);
	printf("epochs          %" PRIu64 "\n", s->epochs);
	printf("pages written   %" PRIu64 "\n", s->pages_written);
	printf("unique pages    %" PRIu64 " (%.3f MiB)\n", s->unique_pages,
	       mib_of(s, (double)s->unique_pages));
	printf("bytes written   %.0f (%.3f MiB)\n", (double)s->pages_written *
	       (double)s->h.page_size, mib_of(s, (double)s->pages_written));
	printf("dirty rate      %.3f MiB/s (bytes written / duration)\n",
	       dirty_rate_mib_per_s(s));
	printf("working set     unique pages written per window (complete windows only)\n");
	printf("  %-8s %8s %14s %12s %12s %12s\n", "window", "windows", "mean pages",
	       "mean MiB", "max pages", "max MiB");
	if (s->n_windows == 0)
		printf("  (the duration is shorter than the smallest window, 100ms)\n");
	for (size_t i = 0; i < s->n_windows; i++) {
		const struct window_stat *w = &s->win[i];
		printf("  %-8s %8" PRIu64 " %14.1f %12.3f %12" PRIu64 " %12.3f\n",
		       trace_format_time(w->window_ns, t, sizeof t), w->n_full, window_mean(w),
		       mib_of(s, window_mean(w)), w->max_pages, mib_of(s, (double)w->max_pages));
	}
}

static json_t *stat_json(const char *path, const struct trace_stats *s)
{
	json_t *blocks = json_array(), *ws = json_array();
	for (size_t b = 0; b < s->h.n_blocks; b++)
		json_add(&blocks, json_pack("{s:o,s:o,s:o}", "name", json_of_str(s->h.blocks[b].name), "size-bytes",
					    json_of_u64(s->h.blocks[b].size_bytes), "pages",
					    json_of_u64(s->h.blocks[b].size_bytes / s->h.page_size)));
	for (size_t i = 0; i < s->n_windows; i++) {
		const struct window_stat *w = &s->win[i];
		json_add(&ws, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "window-ns", json_of_u64(w->window_ns), "windows",
					json_of_u64(w->n_full), "mean-pages", json_of_fixed(window_mean(w), 1), "mean-mib",
					json_of_fixed(mib_of(s, window_mean(w)), 3), "max-pages", json_of_u64(w->max_pages),
					"max-mib", json_of_fixed(mib_of(s, (double)w->max_pages), 3)));
	}
	json_t *doc = json_pack("{s:o,s:I,s:o,s:o}", "file", json_of_str(path), "version", (json_int_t)s->h.version,
				"page-size", json_of_u64(s->h.page_size), "blocks", blocks);
	if (s->h.version >= TRACE_VERSION_LAYOUT)
		json_set(&doc, "layout-pages", json_of_u64(s->layout_pages));
	json_set(&doc, "duration-ns", json_of_u64(s->h.duration_ns));
	json_set(&doc, "epochs", json_of_u64(s->epochs));
	json_set(&doc, "pages-written", json_of_u64(s->pages_written));
	json_set(&doc, "unique-pages", json_of_u64(s->unique_pages));
	json_set(&doc, "bytes-written", json_of_fixed((double)s->pages_written * (double)s->h.page_size, 0));
	json_set(&doc, "dirty-rate-mib-per-s", json_of_fixed(dirty_rate_mib_per_s(s), 3));
	json_set(&doc, "working-set", ws);
	return doc;
}

/* -------------------------------------------------------------------- options */

static const char stat_usage[] =
	"usage: migbed trace stat FILE [--json] [--quiet]\n"
	"\n"
	"Summarise a trace (format: docs/trace-format.md; FILE.zst is read through zstd):\n"
	"page size, blocks, duration, epochs, pages written (sum of the range lengths),\n"
	"unique pages, bytes written, the average dirty rate (bytes written / duration, in\n"
	"MiB/s), and the working set: for windows of 100ms, 1s and 10s (those not longer\n"
	"than the duration), the mean and max number of unique pages written per window,\n"
	"over the complete windows [k*W, (k+1)*W) inside the duration.\n"
	"\n"
	"options:\n"
	"  --json      print the same as one JSON object (keys in a fixed order)\n"
	"  --quiet     no progress line on a terminal\n"
	"  -h, --help  this help\n"
	"\n"
	"exit status: 0 printed, 2 bad usage or a bad trace (FILE:LINE: problem on stderr,\n"
	"nothing on stdout; `migbed trace check FILE` lists every defect)\n";

static const char check_usage[] =
	"usage: migbed trace check FILE\n"
	"\n"
	"Validate a trace (format: docs/trace-format.md; FILE.zst is read through zstd) and\n"
	"report EVERY defect, one \"FILE:LINE: problem\" line each on stderr: bad or missing\n"
	"magic/version, bad or misordered header lines, unknown or duplicate blocks, pages out\n"
	"of range, bad ranges (A > B), epoch times not increasing or not before the duration,\n"
	"range lines before any epoch, unknown keywords, non-text bytes, over-long lines,\n"
	"truncated files (no final newline, cut zstd frame). Checking stops after 1000.\n"
	"On success prints \"FILE: ok, N epochs\" on stdout.\n"
	"\n"
	"options:\n"
	"  -h, --help  this help\n"
	"\n"
	"exit status: 0 no defect, 2 defects found or bad usage\n";

/* Parse [--json] [--help] FILE. Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const char *name, const char *usage,
		      bool *json, bool *quiet, const char **file)
{
	static const struct option stat_opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;                   /* glibc: restart scanning */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", stat_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return CLI_EXIT_OK;
		}
		if (c == 'j' && json) {
			*json = true;
			continue;
		}
		if (c == 'q' && quiet) {
			*quiet = true;
			continue;
		}
		return cli_usage_error("trace %s: unknown option '%s' (see migbed trace %s "
				       "--help)", name, argv[optind - 1], name);
	}
	if (optind >= argc)
		return cli_usage_error("trace %s: missing FILE (see migbed trace %s --help)",
				       name, name);
	if (optind + 1 < argc)
		return cli_usage_error("trace %s: unexpected argument '%s' (one FILE)", name,
				       argv[optind + 1]);
	*file = argv[optind];
	return -1;
}

int cmd_trace_stat(int argc, char **argv)
{
	struct trace_stats *s = calloc(1, sizeof *s);
	const char *file = NULL;
	bool json = false, quiet = false;
	int rc;

	if (!s)
		return cli_usage_error("trace stat: out of memory");
	rc = parse_args(argc, argv, "stat", stat_usage, &json, &quiet, &file);
	if (rc >= 0)
		goto out;
	rc = stats_collect(file, s, quiet);
	if (rc)
		goto out;
	if (json) {
		rc = cli_print_json("trace stat", stat_json(file, s));
		goto out;
	}
	print_text(file, s);
	rc = fflush(stdout) == 0 ? CLI_EXIT_OK : cli_usage_error("trace stat: write error");
out:
	stats_free(s);
	free(s);
	return rc;
}

static void print_defect(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "%s\n", line);
}

int cmd_trace_check(int argc, char **argv)
{
	const char *file = NULL;
	uint64_t epochs = 0;
	long defects;
	int rc = parse_args(argc, argv, "check", check_usage, NULL, NULL, &file);

	if (rc >= 0)
		return rc;
	defects = trace_check_epochs(file, print_defect, NULL, &epochs);
	if (defects < 0)
		return CLI_EXIT_USAGE;        /* unreadable: already reported */
	if (defects > 0) {
		fprintf(stderr, "migbed: trace check: %s: %ld defect%s\n", file, defects,
			defects == 1 ? "" : "s");
		return CLI_EXIT_USAGE;
	}
	printf("%s: ok, %" PRIu64 " epoch%s\n", file, epochs, epochs == 1 ? "" : "s");
	return CLI_EXIT_OK;
}
