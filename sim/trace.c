/* SPDX-License-Identifier: MIT */
/* trace - page-dirtying traces, format v1 and v2 (see trace.h and docs/trace-format.md).
 *
 * Reading: one input layer (plain read() or libzstd streaming decompression) fills a text
 * buffer that starts small and grows on demand (a long line) up to TRACE_LINE_MAX_BYTES plus
 * one read chunk; lines are cut out of it in place. One line parser serves both the reader API (first defect is fatal and sticky) and
 * trace_check (every defect is reported, parsing resumes at the next line).
 *
 * Writing: text is formatted into a buffer that goes to FILE.tmp through write() or
 * ZSTD_compressStream2; close fsyncs and renames, abort unlinks. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "sim/outfile.h"
#include "sim/size.h"
#include "sim/trace.h"

#define TRACE_MAGIC "migbed-trace"
#define TRACE_LINE_MAX_BYTES (1024 * 1024)     /* longest line a reader accepts */
#define TRACE_READ_CHUNK_BYTES (128 * 1024)
#define TRACE_TEXT_CAP_BYTES (TRACE_LINE_MAX_BYTES + TRACE_READ_CHUNK_BYTES + 1)
#define TRACE_TEXT_FIRST_BYTES (16 * 1024)     /* the text buffer's first size: most traces' lines fit */
#define TRACE_ZREAD_BYTES (32 * 1024)          /* compressed bytes read at a time */
#define TRACE_CHECK_MAX_DEFECTS 1000           /* trace_check stops after this many */
#define TRACE_MIN_PAGE_BYTES UINT64_C(512)
#define TRACE_MAX_PAGE_BYTES (UINT64_C(1) << 30)
#define TRACE_WRITE_BUF_BYTES (256 * 1024)
#define TRACE_WRAP_BYTES 4000                  /* the writer starts a new range line past this */
#define TRACE_COMMENT_MAX_BYTES 4000
#define PAGES_UNKNOWN UINT64_MAX               /* check mode: a block whose size is bad */

/* ------------------------------------------------------------------ shared text helpers */

struct time_unit {
	const char *name;
	uint64_t ns;
};

/* Largest first: the writer picks the first unit that divides the time exactly. */
static const struct time_unit time_units[] = {
	{ "s", UINT64_C(1000000000) }, { "ms", UINT64_C(1000000) }, { "us", UINT64_C(1000) },
	{ "ns", UINT64_C(1) },
};
#define N_TIME_UNITS (sizeof time_units / sizeof time_units[0])

static const char *const keywords[] = { TRACE_MAGIC, "page-size", "block", "duration", "epoch" };
#define N_KEYWORDS (sizeof keywords / sizeof keywords[0])

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* "250ms" -> 250000000. 0, -EINVAL (malformed or no unit), -ERANGE (past 2^64-1 ns). */
static int parse_time_ns(const char *s, uint64_t *out_ns)
{
	uint64_t v = 0;
	const char *unit;
	int rc = size_parse_digits(s, &v, &unit);

	if (rc == -EINVAL)
		return -EINVAL;
	for (size_t i = 0; i < N_TIME_UNITS; i++) {
		if (strcmp(unit, time_units[i].name) != 0)
			continue;
		if (rc)
			return rc;
		if (v > UINT64_MAX / time_units[i].ns)
			return -ERANGE;
		*out_ns = v * time_units[i].ns;
		return 0;
	}
	return -EINVAL;
}

/* Decimal digits of v into out (no NUL); returns the count (1..20). */
static size_t format_u64(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/* Shortest exact form of a time: 60000000000 -> "60s", 1500000 -> "1500us"; NUL-terminated
 * into buf (at least 24 bytes); returns the length. */
static size_t format_time(char *buf, uint64_t ns)
{
	const struct time_unit *u = &time_units[N_TIME_UNITS - 1];
	size_t n;

	for (size_t i = 0; ns != 0 && i < N_TIME_UNITS; i++) {
		if (ns % time_units[i].ns == 0) {
			u = &time_units[i];
			break;
		}
	}
	if (ns == 0)
		u = &time_units[0];
	n = format_u64(buf, ns / u->ns);
	memcpy(buf + n, u->name, strlen(u->name) + 1);
	return n + strlen(u->name);
}

static bool is_keyword(const char *s)
{
	for (size_t i = 0; i < N_KEYWORDS; i++)
		if (!strcmp(s, keywords[i]))
			return true;
	return false;
}

static bool block_name_ok(const char *s);

bool trace_block_name_valid(const char *name, uint32_t version)
{
	return name && block_name_ok(name) && !is_keyword(name) &&
	       !(version >= TRACE_VERSION_LAYOUT && !strcmp(name, "layout"));
}

static bool block_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > TRACE_BLOCK_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
			  c == '.' || c == '_' || c == ':' || c == '/' || c == '-';
		if (!ok)
			return false;
	}
	return true;
}

static bool page_size_ok(uint64_t page_size)
{
	return page_size >= TRACE_MIN_PAGE_BYTES && page_size <= TRACE_MAX_PAGE_BYTES &&
	       (page_size & (page_size - 1)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* Next blank-separated token of *pos, NUL-terminated in place; NULL at the end. */
static char *next_token(char **pos)
{
	char *p = *pos, *tok;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0') {
		*pos = p;
		return NULL;
	}
	tok = p;
	while (*p != '\0' && *p != ' ' && *p != '\t')
		p++;
	if (*p != '\0')
		*p++ = '\0';
	*pos = p;
	return tok;
}

/* "P" or "A-B" -> [*a, *b]. 0, -EINVAL (malformed), -ERANGE (number too large). */
static int parse_range_token(const char *tok, uint64_t *a, uint64_t *b)
{
	const char *end;
	int rc = size_parse_digits(tok, a, &end), rc2;

	if (rc == -EINVAL)
		return -EINVAL;
	if (*end == '\0') {
		*b = *a;
		return rc;
	}
	if (*end != '-')
		return -EINVAL;
	rc2 = size_parse_digits(end + 1, b, &end);
	if (rc2 == -EINVAL || *end != '\0')
		return -EINVAL;
	return rc ? rc : rc2;
}

/* Whether the rest of a line is one or more range tokens (without modifying it). */
static bool rest_is_ranges(const char *p)
{
	size_t n_tokens = 0;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			return n_tokens > 0;
		if (!is_digit(*p))
			return false;
		while (is_digit(*p))
			p++;
		if (*p == '-') {
			p++;
			if (!is_digit(*p))
				return false;
			while (is_digit(*p))
				p++;
		}
		if (*p != '\0' && *p != ' ' && *p != '\t')
			return false;
		n_tokens++;
	}
}

/* Length of a valid UTF-8 sequence starting at s (at most n bytes), 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;              /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;              /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;              /* past U+10FFFF */
	if (len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* ------------------------------------------------------------------------- input layer */

struct trace_in {
	int fd;
	bool zst;
	ZSTD_DCtx *dctx;
	unsigned char *zbuf;         /* compressed bytes; [zpos, zlen) not yet decompressed */
	size_t zcap, zpos, zlen;
	bool raw_eof;                /* read() returned 0 */
	bool frame_open;             /* inside a zstd frame: ZSTD_decompressStream said > 0 */
	bool out_was_full;           /* the last decompression filled its output: call again */
	bool sniffed;                /* first bytes of a plain file looked at */
	char *buf;                   /* text; [start, end) not yet cut into lines */
	size_t cap;                  /* buf's size: grows to TRACE_TEXT_CAP_BYTES as lines need */
	size_t start, end;
	bool eof;                    /* no more text */
};

enum { PARSE_HEADER, PARSE_BODY };

struct trace_reader {
	char *path;
	struct trace_in in;
	struct trace_header h;
	uint64_t pages[TRACE_MAX_BLOCKS];        /* block sizes in pages (or PAGES_UNKNOWN) */
	unsigned long block_line[TRACE_MAX_BLOCKS];
	size_t last_block;                       /* lookup cache */
	unsigned long lineno;                    /* lines cut so far (1-based once cut) */
	unsigned long content_lines;             /* lines with a keyword or block name */
	bool seen_magic, seen_page_size, seen_duration, in_body;
	bool order_reported;                     /* one out-of-order report per header */
	bool have_epoch;                         /* a well-formed epoch line was seen */
	uint64_t last_t_ns, epoch_t_ns;
	unsigned long last_epoch_line;
	uint64_t n_epochs;
	/* reader API state */
	bool in_epoch, in_layout, pending_epoch, at_eof;
	char *cur;                               /* rest of the current range line */
	uint32_t cur_block;
	int err;                                 /* sticky first error (reader API) */
	struct diag d;
	/* trace_check */
	bool checking;
	trace_report_fn report;
	void *report_arg;
	long defects;
};

enum line_kind { LINE_NONE, LINE_EPOCH, LINE_RANGES, LINE_LAYOUT };
enum { LINE_BAD = 2 };       /* next_line: a defective line was reported and skipped */

/* One defect at a line. Reader API: the first one becomes the sticky error. trace_check:
 * reported, counted, and parsing goes on. Returns -EINVAL either way. */
static int defect(struct trace_reader *r, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int defect(struct trace_reader *r, unsigned long line, const char *fmt, ...)
{
	char msg[DIAG_MSG_MAX];
	va_list ap;

	if (!r->checking && r->err)
		return r->err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_at(&r->d, r->path, line, "%s", msg);
	if (!r->checking) {
		r->err = -EINVAL;
		return -EINVAL;
	}
	r->defects++;
	if (r->report)
		r->report(r->report_arg, r->d.msg);
	return -EINVAL;
}

/* An error that ends reading (I/O, corrupt compression): sticky in both modes. */
static int fatal(struct trace_reader *r, int err, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fatal(struct trace_reader *r, int err, unsigned long line, const char *fmt, ...)
{
	char msg[DIAG_MSG_MAX];
	va_list ap;

	assert(err < 0);
	if (r->err)
		return r->err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_at(&r->d, r->path, line, "%s", msg);
	r->err = err;
	if (r->checking) {
		r->defects++;
		if (r->report)
			r->report(r->report_arg, r->d.msg);
	}
	return err;
}

/* The line a defect at the current end of the data belongs to. */
static unsigned long tail_line(const struct trace_reader *r)
{
	unsigned long line = r->lineno + (r->in.start < r->in.end ? 1 : 0);
	return line ? line : 1;
}

/* read() with EINTR retried: bytes read, 0 at the end, -errno. */
static ssize_t read_some(int fd, void *buf, size_t n)
{
	for (int tries = 0; tries < 1000; tries++) {
		ssize_t got = read(fd, buf, n);
		if (got >= 0)
			return got;
		if (errno != EINTR)
			return -errno;
	}
	return -EINTR;
}

static int fill_plain(struct trace_reader *r, size_t space)
{
	struct trace_in *in = &r->in;
	static const unsigned char zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	ssize_t got = read_some(in->fd, in->buf + in->end, space);

	if (got < 0)
		return fatal(r, (int)got, tail_line(r), "read error: %s", strerror((int)-got));
	if (got == 0) {
		in->eof = true;
		return 0;
	}
	in->end += (size_t)got;
	if (!in->sniffed) {               /* the first read starts at the file's first byte */
		in->sniffed = true;
		if ((size_t)got >= sizeof zstd_magic &&
		    !memcmp(in->buf + in->end - (size_t)got, zstd_magic, sizeof zstd_magic))
			return fatal(r, -EINVAL, 1, "zstd-compressed data, but the file name does "
				     "not end in .zst (rename it, or decompress it with unzstd)");
	}
	return 1;
}

/* Decompress until some text is produced: 1, 0 at the end, <0 fatal. */
static int fill_zstd(struct trace_reader *r, size_t space)
{
	struct trace_in *in = &r->in;

	for (;;) {
		ZSTD_inBuffer zin;
		ZSTD_outBuffer zout = { in->buf + in->end, space, 0 };
		size_t ret;

		if (in->zpos == in->zlen && !in->out_was_full) {
			ssize_t got;
			if (in->raw_eof) {
				if (in->frame_open)
					return fatal(r, -EINVAL, tail_line(r), "truncated zstd "
						     "frame: the compressed file is cut short");
				in->eof = true;
				return 0;
			}
			got = read_some(in->fd, in->zbuf, in->zcap);
			if (got < 0)
				return fatal(r, (int)got, tail_line(r), "read error: %s",
					     strerror((int)-got));
			in->zpos = 0;
			in->zlen = (size_t)got;
			in->raw_eof = got == 0;
			continue;
		}
		zin = (ZSTD_inBuffer){ in->zbuf, in->zlen, in->zpos };
		ret = ZSTD_decompressStream(in->dctx, &zout, &zin);
		if (ZSTD_isError(ret))
			return fatal(r, -EINVAL, tail_line(r), "bad zstd data: %s%s",
				     ZSTD_getErrorName(ret), in->sniffed ? "" :
				     " (is this really a .zst file?)");
		in->sniffed = true;
		in->zpos = zin.pos;
		in->frame_open = ret != 0;
		in->out_was_full = zout.pos == zout.size;
		in->end += zout.pos;
		if (zout.pos > 0)
			return 1;
	}
}

/* Make room and read more text: 1, 0 at the end, <0 fatal. */
static int fill(struct trace_reader *r)
{
	struct trace_in *in = &r->in;
	size_t space;

	if (in->start > 0) {
		memmove(in->buf, in->buf + in->start, in->end - in->start);
		in->end -= in->start;
		in->start = 0;
	}
	assert(in->end <= TRACE_LINE_MAX_BYTES);
	if (in->cap - 1 - in->end < TRACE_READ_CHUNK_BYTES && in->cap < TRACE_TEXT_CAP_BYTES &&
	    in->end > in->cap / 2) {   /* a line longer than half the buffer: double it */
		size_t cap = in->cap * 2 < TRACE_TEXT_CAP_BYTES ? in->cap * 2 : TRACE_TEXT_CAP_BYTES;
		char *buf = realloc(in->buf, cap);
		if (!buf)
			return fatal(r, -ENOMEM, tail_line(r), "out of memory (a line of %zu bytes)",
				     in->end);
		in->buf = buf;
		in->cap = cap;
	}
	space = in->cap - 1 - in->end;
	if (space > TRACE_READ_CHUNK_BYTES)
		space = TRACE_READ_CHUNK_BYTES;
	return in->zst ? fill_zstd(r, space) : fill_plain(r, space);
}

/* Drop text up to and including the next newline (after an over-long line). */
static int skip_rest_of_line(struct trace_reader *r)
{
	struct trace_in *in = &r->in;

	for (;;) {
		char *nl = memchr(in->buf + in->start, '\n', in->end - in->start);
		int rc;
		if (nl) {
			in->start = (size_t)(nl + 1 - in->buf);
			return 0;
		}
		in->start = in->end;
		if (in->eof)
			return 0;
		rc = fill(r);
		if (rc < 0)
			return rc;
	}
}

/* Whether the 8 bytes at s are all printable ASCII (0x20..0x7e): the common case, checked
 * a word at a time (each test is exact: no borrow or carry crosses a byte unless a byte is
 * out of range already). */
static bool word_printable_ascii(const unsigned char *s)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	uint64_t w;
	memcpy(&w, s, sizeof w);
	uint64_t below_space = (w - ones * 0x20) & ~w & highs;      /* a byte < 0x20 */
	uint64_t from_del = (((w & ~highs) + ones) | w) & highs;    /* a byte >= 0x7f */
	return (below_space | from_del) == 0;
}

/* Reject control characters and bad UTF-8 in a cut line; strip a trailing '\r'. */
static int check_text(struct trace_reader *r, char *line, size_t len)
{
	const unsigned char *s = (const unsigned char *)line;

	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	for (size_t i = 0; i < len;) {
		size_t n = 1;
		if (len - i >= 8 && word_printable_ascii(s + i))
			n = 8;
		else if (s[i] >= 0x80)
			n = utf8_seq_len(s + i, len - i);
		else if ((s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
			n = 0;
		if (n == 0) {
			defect(r, r->lineno, "non-text byte 0x%02x at column %zu (binary data or "
			       "not UTF-8?)", s[i], i + 1);
			return LINE_BAD;
		}
		i += n;
	}
	return 1;
}

/* Cut the next line: 1 (*line set, NUL-terminated), 0 at the end, LINE_BAD (a defective
 * line was reported and skipped), <0 fatal. */
static int next_line(struct trace_reader *r, char **line)
{
	struct trace_in *in = &r->in;

	for (;;) {
		char *nl = memchr(in->buf + in->start, '\n', in->end - in->start);
		int rc;
		if (nl && (size_t)(nl - (in->buf + in->start)) <= TRACE_LINE_MAX_BYTES) {
			*nl = '\0';
			*line = in->buf + in->start;
			in->start = (size_t)(nl + 1 - in->buf);
			r->lineno++;
			return check_text(r, *line, (size_t)(nl - *line));
		}
		if (nl || in->end - in->start > TRACE_LINE_MAX_BYTES) {
			r->lineno++;
			defect(r, r->lineno, "line too long (more than %d bytes)",
			       TRACE_LINE_MAX_BYTES);
			rc = skip_rest_of_line(r);
			return rc < 0 ? rc : LINE_BAD;
		}
		if (in->eof) {
			if (in->start == in->end)
				return 0;
			r->lineno++;
			in->start = in->end;
			defect(r, r->lineno, "truncated file: the last line has no newline "
			       "(file cut short?)");
			return LINE_BAD;
		}
		rc = fill(r);
		if (rc < 0)
			return rc;
	}
}

/* ------------------------------------------------------------------------ line parser */

static int find_block(struct trace_reader *r, const char *name)
{
	if (r->last_block < r->h.n_blocks && !strcmp(r->h.blocks[r->last_block].name, name))
		return (int)r->last_block;
	for (size_t i = 0; i < r->h.n_blocks; i++) {
		if (!strcmp(r->h.blocks[i].name, name)) {
			r->last_block = i;
			return (int)i;
		}
	}
	return -1;
}

static int expect_end(struct trace_reader *r, char *pos, const char *what)
{
	char *extra = next_token(&pos);
	if (extra)
		return defect(r, r->lineno, "unexpected '%s' after %s", extra, what);
	return 0;
}

/* Header lines after the first epoch, or out of order: reported (the first misordering
 * only, so one swapped pair is one defect); trace_check then takes the line's content. */
static int header_order(struct trace_reader *r, const char *kw, bool misplaced,
			const char *rule)
{
	if (r->in_body)
		return defect(r, r->lineno, "header line '%s' after the first epoch (header "
			      "lines come before the epochs)", kw);
	if (misplaced && !r->order_reported) {
		r->order_reported = true;
		return defect(r, r->lineno, "'%s' line out of order: %s (order: migbed-trace, "
			      "page-size, block..., duration, layout... in version 2)", kw, rule);
	}
	return 0;
}

static int on_magic(struct trace_reader *r, char *pos)
{
	char *v = next_token(&pos);

	if (r->seen_magic || r->content_lines != 1)
		return defect(r, r->lineno, "'%s' line must be the first line (bad or "
			      "duplicate magic)", TRACE_MAGIC);
	r->seen_magic = true;
	if (!v)
		return defect(r, r->lineno, "missing version after '%s' (expected '%s %d')",
			      TRACE_MAGIC, TRACE_MAGIC, TRACE_VERSION);
	if (strcmp(v, "1") != 0 && strcmp(v, "2") != 0)
		return defect(r, r->lineno, "unsupported trace version '%s' (this migbed reads "
			      "versions %d to %d)", v, TRACE_VERSION, TRACE_VERSION_MAX);
	r->h.version = v[0] == '2' ? TRACE_VERSION_LAYOUT : TRACE_VERSION;
	return expect_end(r, pos, "the version");
}

static int on_page_size(struct trace_reader *r, char *pos)
{
	char *v = next_token(&pos);
	uint64_t bytes = 0;
	int rc;

	if (r->seen_page_size)
		return defect(r, r->lineno, "duplicate 'page-size' line");
	rc = header_order(r, "page-size", r->h.n_blocks > 0, "after a block line");
	if (rc && !r->checking)
		return rc;
	r->seen_page_size = true;
	if (!v)
		return defect(r, r->lineno, "missing SIZE after 'page-size' (e.g. 4K)");
	if (size_parse(v, &bytes) != 0)
		return defect(r, r->lineno, "bad page-size '%s' (expected a SIZE such as 4K)", v);
	if (!page_size_ok(bytes))
		return defect(r, r->lineno, "bad page-size %s: not a power of two between 512 "
			      "and 1G", v);
	r->h.page_size = bytes;
	return expect_end(r, pos, "the page size");
}

/* Size of a declared block: sets pages[] (PAGES_UNKNOWN when the size is bad). */
static int block_size(struct trace_reader *r, size_t b, const char *v)
{
	struct trace_block *blk = &r->h.blocks[b];
	uint64_t bytes = 0;
	char ps[32];

	r->pages[b] = PAGES_UNKNOWN;
	if (!v)
		return defect(r, r->lineno, "missing SIZE after block name '%s'", blk->name);
	if (size_parse(v, &bytes) != 0)
		return defect(r, r->lineno, "bad size '%s' for block '%s' (expected a SIZE "
			      "such as 1G)", v, blk->name);
	if (bytes == 0)
		return defect(r, r->lineno, "block '%s' has size 0", blk->name);
	if (r->h.page_size == 0)
		return 0;                 /* no valid page size: reported already */
	if (bytes % r->h.page_size != 0)
		return defect(r, r->lineno, "block '%s' size %s is not a multiple of the "
			      "page size (%s)", blk->name, v,
			      size_format(r->h.page_size, ps, sizeof ps));
	blk->size_bytes = bytes;
	blk->line = r->lineno;
	r->pages[b] = bytes / r->h.page_size;
	return 0;
}

static int on_block(struct trace_reader *r, char *pos)
{
	char *name, *v;
	int dup, rc;

	rc = header_order(r, "block", !r->seen_page_size || r->seen_duration,
			  r->seen_duration ? "after 'duration'" : "before 'page-size'");
	if (rc && !r->checking)
		return rc;
	name = next_token(&pos);
	v = next_token(&pos);
	if (!name)
		return defect(r, r->lineno, "missing block name after 'block'");
	if (!trace_block_name_valid(name, r->h.version))
		return defect(r, r->lineno, "bad block name '%s' (1-%d characters of A-Z a-z "
			      "0-9 . _ : / -, not a keyword)", name, TRACE_BLOCK_NAME_MAX);
	dup = find_block(r, name);
	if (dup >= 0)
		return defect(r, r->lineno, "duplicate block '%s' (first declared on line %lu)",
			      name, r->block_line[dup]);
	if (r->h.n_blocks == TRACE_MAX_BLOCKS)
		return defect(r, r->lineno, "too many blocks (at most %d)", TRACE_MAX_BLOCKS);
	memcpy(r->h.blocks[r->h.n_blocks].name, name, strlen(name) + 1);
	r->block_line[r->h.n_blocks] = r->lineno;
	r->h.n_blocks++;
	rc = block_size(r, r->h.n_blocks - 1, v);
	if (rc)
		return rc;
	return expect_end(r, pos, "the block size");
}

static int on_duration(struct trace_reader *r, char *pos)
{
	char *v = next_token(&pos);
	uint64_t ns = 0;
	int rc;

	if (r->seen_duration)
		return defect(r, r->lineno, "duplicate 'duration' line");
	rc = header_order(r, "duration", r->h.n_blocks == 0, "before any block line");
	if (rc && !r->checking)
		return rc;
	r->seen_duration = true;
	if (!v)
		return defect(r, r->lineno, "missing TIME after 'duration' (e.g. 60s)");
	rc = parse_time_ns(v, &ns);
	if (rc == -ERANGE)
		return defect(r, r->lineno, "duration '%s' too large", v);
	if (rc)
		return defect(r, r->lineno, "bad duration '%s' (expected an integer with a "
			      "unit ns, us, ms or s, e.g. 60s)", v);
	if (ns == 0)
		return defect(r, r->lineno, "duration must be more than 0");
	r->h.duration_ns = ns;
	return expect_end(r, pos, "the duration");
}

/* At the first epoch line (or the end of a trace without epochs): the header is complete. */
static int header_complete(struct trace_reader *r, unsigned long line, const char *where)
{
	int rc = 0;

	if (!r->seen_page_size)
		rc = defect(r, line, "missing 'page-size' line %s", where);
	if (rc && !r->checking)
		return rc;
	if (r->h.n_blocks == 0)
		rc = defect(r, line, "missing 'block' line %s", where);
	if (rc && !r->checking)
		return rc;
	if (!r->seen_duration)
		rc = defect(r, line, "missing 'duration' line %s", where);
	return rc;
}

static int on_epoch(struct trace_reader *r, char *pos, enum line_kind *kind)
{
	char *v = next_token(&pos);
	char a[24], b[24];
	uint64_t t = 0;
	int rc;

	if (!r->in_body) {
		r->in_body = true;
		rc = header_complete(r, r->lineno, "before the first epoch");
		if (rc && !r->checking)
			return rc;
	}
	if (!v)
		return defect(r, r->lineno, "missing TIME after 'epoch' (e.g. 10ms)");
	rc = parse_time_ns(v, &t);
	if (rc == -ERANGE)
		return defect(r, r->lineno, "epoch time '%s' too large", v);
	if (rc)
		return defect(r, r->lineno, "bad epoch time '%s' (expected an integer with a "
			      "unit ns, us, ms or s, e.g. 250ms)", v);
	if (r->have_epoch && t <= r->last_t_ns) {
		format_time(b, r->last_t_ns);
		rc = defect(r, r->lineno, "epoch time %s is not after the previous epoch (%s on "
			    "line %lu): epoch times must strictly increase", v, b,
			    r->last_epoch_line);
	} else if (r->h.duration_ns != 0 && t >= r->h.duration_ns) {
		format_time(a, r->h.duration_ns);
		rc = defect(r, r->lineno, "epoch time %s is not before the duration (%s)", v, a);
	}
	r->have_epoch = true;
	r->last_t_ns = t;
	r->last_epoch_line = r->lineno;
	if (rc)
		return rc;
	rc = expect_end(r, pos, "the epoch time");
	if (rc)
		return rc;
	r->epoch_t_ns = t;
	r->n_epochs++;
	*kind = LINE_EPOCH;
	return 0;
}

static int on_ranges(struct trace_reader *r, const char *name, char *pos, enum line_kind *kind)
{
	int b = find_block(r, name);

	if (b < 0 && rest_is_ranges(pos))
		return defect(r, r->lineno, "unknown block '%s' (not declared by a 'block' "
			      "line)", name);
	if (b < 0)
		return defect(r, r->lineno, "unknown keyword '%s' (expected migbed-trace, "
			      "page-size, block, duration, epoch or a block name)", name);
	if (!r->in_body)
		return defect(r, r->lineno, "range line before any epoch (range lines list "
			      "the pages written at the epoch above them)");
	while (*pos == ' ' || *pos == '\t')
		pos++;
	if (*pos == '\0')
		return defect(r, r->lineno, "no ranges after block name '%s'", name);
	r->cur = pos;
	r->cur_block = (uint32_t)b;
	*kind = LINE_RANGES;
	return 0;
}

/* Version 2: 'layout BLOCK RANGE...', after 'duration' and before the first epoch. */
static int on_layout(struct trace_reader *r, char *pos, enum line_kind *kind)
{
	char *name;
	int b, rc;

	if (r->h.version < TRACE_VERSION_LAYOUT)
		return defect(r, r->lineno, "'layout' lines need trace version %d (this trace "
			      "says '%s %u')", TRACE_VERSION_LAYOUT, TRACE_MAGIC, r->h.version);
	rc = header_order(r, "layout", !r->seen_duration, "before 'duration'");
	if (rc && !r->checking)
		return rc;
	if (r->in_body)
		return rc;
	name = next_token(&pos);
	if (!name)
		return defect(r, r->lineno, "missing block name after 'layout'");
	b = find_block(r, name);
	if (b < 0)
		return defect(r, r->lineno, "unknown block '%s' in 'layout' (not declared by a "
			      "'block' line)", name);
	while (*pos == ' ' || *pos == '\t')
		pos++;
	if (*pos == '\0')
		return defect(r, r->lineno, "no ranges after 'layout %s'", name);
	r->cur = pos;
	r->cur_block = (uint32_t)b;
	*kind = LINE_LAYOUT;
	return 0;
}

/* Classify and handle one cut line. */
static int parse_line(struct trace_reader *r, char *line, enum line_kind *kind)
{
	char *hash = strchr(line, '#');
	char *pos = line, *kw;

	*kind = LINE_NONE;
	if (hash)
		*hash = '\0';
	kw = next_token(&pos);
	if (!kw)
		return 0;
	r->content_lines++;
	if (r->content_lines == 1 && strcmp(kw, TRACE_MAGIC) != 0) {
		int rc = defect(r, r->lineno, "missing magic line '%s %d' (not a migbed trace?)",
				TRACE_MAGIC, TRACE_VERSION);
		if (!r->checking)
			return rc;
	}
	if (!strcmp(kw, TRACE_MAGIC))
		return on_magic(r, pos);
	if (!strcmp(kw, "page-size"))
		return on_page_size(r, pos);
	if (!strcmp(kw, "block"))
		return on_block(r, pos);
	if (!strcmp(kw, "duration"))
		return on_duration(r, pos);
	if (!strcmp(kw, "epoch"))
		return on_epoch(r, pos, kind);
	if (!strcmp(kw, "layout") && (r->h.version >= TRACE_VERSION_LAYOUT || find_block(r, kw) < 0))
		return on_layout(r, pos, kind);
	return on_ranges(r, kw, pos, kind);
}

/* 1 to 19 leading digits at *p (no overflow possible) into *v, *p moved past them: true;
 * false (nothing moved) for none or more than 19. */
static bool short_number(char **p, uint64_t *v)
{
	char *q = *p;
	uint64_t x = 0;
	int n = 0;

	for (; n < 19 && is_digit(*q); n++, q++)
		x = x * 10 + (uint64_t)(*q - '0');
	if (n == 0 || is_digit(*q))
		return false;
	*p = q;
	*v = x;
	return true;
}

/* The common case of parse_next_range, without cutting the token out: a well-formed "P" or
 * "A-B" (A <= B, inside the block, at most 19 digits each). 1 with *out set and r->cur past
 * the token as next_token leaves it; 0 (nothing changed) for anything else: the end of the
 * line, a defect, a long number, which the general path handles. */
static int quick_range(struct trace_reader *r, struct trace_range *out)
{
	char *p = r->cur;
	uint64_t a, b, pages = r->pages[r->cur_block];

	while (*p == ' ' || *p == '\t')
		p++;
	if (!short_number(&p, &a))
		return 0;
	b = a;
	if (*p == '-' && (p++, !short_number(&p, &b)))
		return 0;
	if ((*p != ' ' && *p != '\t' && *p != '\0') || a > b || (pages != PAGES_UNKNOWN && b >= pages))
		return 0;
	r->cur = *p != '\0' ? p + 1 : p;
	out->block = r->cur_block;
	out->first_page = a;
	out->n_pages = b - a + 1;
	return 1;
}

/* Next range of the current range line: 1, 0 (line done), -EINVAL. */
static int parse_next_range(struct trace_reader *r, struct trace_range *out)
{
	const struct trace_block *blk = &r->h.blocks[r->cur_block];
	uint64_t a = 0, b = 0, pages = r->pages[r->cur_block];
	char *tok;
	int rc;

	if (quick_range(r, out))
		return 1;
	tok = next_token(&r->cur);
	if (!tok)
		return 0;
	rc = parse_range_token(tok, &a, &b);
	if (rc == -ERANGE)
		return defect(r, r->lineno, "page number too large in '%s'", tok);
	if (rc)
		return defect(r, r->lineno, "bad range '%s' (expected P or A-B, decimal page "
			      "indices)", tok);
	if (a > b)
		return defect(r, r->lineno, "bad range '%s': start after end", tok);
	if (pages != PAGES_UNKNOWN && b >= pages)
		return defect(r, r->lineno, "page %llu out of range for block '%s' (%llu pages: "
			      "0-%llu)", (unsigned long long)b, blk->name,
			      (unsigned long long)pages, (unsigned long long)(pages - 1));
	out->block = r->cur_block;
	out->first_page = a;
	out->n_pages = b - a + 1;
	return 1;
}

/* Next line with content: 1 (*kind set), 0 at the end, <0 error. Reader API only. */
static int next_content(struct trace_reader *r, enum line_kind *kind)
{
	for (;;) {
		char *line;
		int rc = next_line(r, &line);
		if (rc == LINE_BAD || rc < 0)
			return r->err ? r->err : -EINVAL;
		if (rc == 0)
			return 0;
		rc = parse_line(r, line, kind);
		if (rc)
			return rc;
		if (*kind != LINE_NONE)
			return 1;
	}
}

static void reader_free(struct trace_reader *r)
{
	if (!r)
		return;
	if (r->in.fd >= 0)
		close(r->in.fd);
	ZSTD_freeDCtx(r->in.dctx);
	free(r->in.zbuf);
	free(r->in.buf);
	free(r->path);
	free(r);
}

static int reader_new(const char *path, struct trace_reader **out, struct diag *d)
{
	struct trace_reader *r = calloc(1, sizeof *r);
	int rc = -ENOMEM;

	if (!r) {
		diag_set(d, "%s: out of memory", path);
		return -ENOMEM;
	}
	r->in.fd = -1;
	r->path = strdup(path);
	r->in.cap = TRACE_TEXT_FIRST_BYTES;
	r->in.buf = malloc(r->in.cap);
	r->in.zst = ends_with(path, ".zst");
	if (r->in.zst) {
		r->in.zcap = TRACE_ZREAD_BYTES;
		r->in.zbuf = malloc(r->in.zcap);
		r->in.dctx = ZSTD_createDCtx();
	}
	if (!r->path || !r->in.buf || (r->in.zst && (!r->in.zbuf || !r->in.dctx))) {
		diag_set(d, "%s: out of memory", path);
		goto out;
	}
	r->in.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->in.fd < 0) {
		rc = -errno;
		diag_set(d, "%s: cannot open: %s", path, strerror(errno));
		goto out;
	}
	*out = r;
	return 0;
out:
	reader_free(r);
	return rc;
}

/* ------------------------------------------------------------------------- reader API */

int trace_open(const char *path, trace_reader **out, struct diag *d)
{
	trace_reader *r = NULL;
	enum line_kind kind = LINE_NONE;
	int rc;

	diag_clear(d);
	if (!path || !out)
		return diag_set(d, "trace_open: no path");
	rc = reader_new(path, &r, d);
	if (rc)
		return rc;
	rc = next_content(r, &kind);
	if (rc == 0 && r->content_lines == 0)
		rc = defect(r, 1, "empty trace: missing magic line '%s %d'", TRACE_MAGIC,
			    TRACE_VERSION);
	else if (rc == 0)
		rc = header_complete(r, r->lineno, "(end of file)");
	if (rc < 0)
		goto out;
	assert(rc == 0 || kind == LINE_EPOCH || kind == LINE_LAYOUT);   /* a range line: a defect */
	r->in_layout = rc == 1 && kind == LINE_LAYOUT;
	r->pending_epoch = rc == 1 && kind == LINE_EPOCH;
	r->at_eof = rc == 0;
	*out = r;
	return 0;
out:
	if (d)
		*d = r->d;
	reader_free(r);
	return rc;
}

const struct trace_header *trace_header(const trace_reader *r)
{
	return r ? &r->h : NULL;
}

/* The next range of the section *in_section marks (an epoch's, or the layout's): 1 and *out,
 * 0 when the section ends (at the next epoch line or the end: r->pending_epoch, r->at_eof),
 * <0 an error. */
static int next_range_in(trace_reader *r, struct trace_range *out, bool *in_section)
{
	if (!r || !out)
		return -EINVAL;
	if (r->err)
		return r->err;
	for (unsigned long guard = 0; *in_section; guard++) {
		enum line_kind kind = LINE_NONE;
		int rc;
		assert(guard <= r->lineno + 1);   /* every turn consumes a line or a token */
		if (r->cur) {
			rc = parse_next_range(r, out);
			if (rc != 0)
				return rc;
			r->cur = NULL;
		}
		rc = next_content(r, &kind);
		if (rc < 0)
			return rc;
		if (rc == 0 || kind == LINE_EPOCH) {
			*in_section = false;
			r->pending_epoch = rc == 1;
			r->at_eof = rc == 0;
		}
	}
	return 0;
}

int trace_next_range(trace_reader *r, struct trace_range *out)
{
	return next_range_in(r, out, r ? &r->in_epoch : NULL);
}

int trace_next_layout(trace_reader *r, struct trace_range *out)
{
	return next_range_in(r, out, r ? &r->in_layout : NULL);
}

int trace_next_epoch(trace_reader *r, uint64_t *t_ns)
{
	struct trace_range skip;
	int rc;

	if (!r || !t_ns)
		return -EINVAL;
	do                                /* bounded by the layout ranges left */
		rc = trace_next_layout(r, &skip);
	while (rc > 0);
	if (rc < 0)
		return rc;
	do                                /* bounded by the ranges left in this epoch */
		rc = trace_next_range(r, &skip);
	while (rc > 0);
	if (rc < 0)
		return rc;
	if (r->at_eof)
		return 0;
	assert(r->pending_epoch);
	r->pending_epoch = false;
	r->in_epoch = true;
	*t_ns = r->epoch_t_ns;
	return 1;
}

const char *trace_diag(const trace_reader *r)
{
	return r ? r->d.msg : "";
}

void trace_close(trace_reader *r)
{
	reader_free(r);
}

/* -------------------------------------------------------------------------- trace_check */

/* Every range of a range line, each bad one reported. */
static void check_ranges(struct trace_reader *r)
{
	struct trace_range rg;

	while (r->cur && *r->cur) {
		if (parse_next_range(r, &rg) == 0)
			break;
	}
	r->cur = NULL;
}

long trace_check_epochs(const char *path, trace_report_fn report, void *arg,
			uint64_t *n_epochs)
{
	struct trace_reader *r = NULL;
	struct diag d;
	long result;
	int rc;

	if (n_epochs)
		*n_epochs = 0;
	if (!path)
		return -EINVAL;
	rc = reader_new(path, &r, &d);
	if (rc) {
		if (report)
			report(arg, d.msg);
		return rc;
	}
	r->checking = true;
	r->report = report;
	r->report_arg = arg;
	while (r->defects < TRACE_CHECK_MAX_DEFECTS) {
		enum line_kind kind = LINE_NONE;
		char *line;
		rc = next_line(r, &line);
		if (rc <= 0)
			break;
		if (rc == LINE_BAD)
			continue;
		if (parse_line(r, line, &kind) == 0 && (kind == LINE_RANGES || kind == LINE_LAYOUT))
			check_ranges(r);
	}
	if (rc == 0 && r->content_lines == 0)
		defect(r, 1, "empty trace: missing magic line '%s %d'", TRACE_MAGIC, TRACE_VERSION);
	else if (rc == 0 && !r->in_body)
		header_complete(r, r->lineno, "(end of file)");
	if (r->defects >= TRACE_CHECK_MAX_DEFECTS && report) {
		diag_at(&r->d, r->path, r->lineno, "too many defects (%d): stopped checking here",
			TRACE_CHECK_MAX_DEFECTS);
		report(arg, r->d.msg);
	}
	if (n_epochs)
		*n_epochs = r->n_epochs;
	result = r->defects;
	reader_free(r);
	return result;
}

long trace_check(const char *path, trace_report_fn report, void *arg)
{
	return trace_check_epochs(path, report, arg, NULL);
}

/* ------------------------------------------------------------------------------ writer */

struct trace_writer {
	char *path;                  /* as given, for messages */
	struct outfile out;          /* where the bytes go (sim/outfile.h: "-", in place, tmp+rename) */
	ZSTD_CCtx *cctx;
	struct trace_header h;
	uint64_t pages[TRACE_MAX_BLOCKS];
	char *buf;                   /* formatted text not yet written */
	size_t len;
	unsigned char *zbuf;
	size_t zcap;
	bool header_written, have_epoch, line_open, line_layout;
	uint32_t line_block;
	size_t line_bytes;
	uint64_t last_t_ns;
	int err;                     /* sticky I/O error */
	struct diag d;
};

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	for (int tries = 0; n > 0 && tries < 1000000; tries++) {
		ssize_t put = write(fd, p, n);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return -errno;
		p += put;
		n -= (size_t)put;
	}
	return n == 0 ? 0 : -EIO;
}

static int writer_io_error(struct trace_writer *w, int err, const char *what)
{
	if (!w->err) {
		w->err = err;
		diag_set(&w->d, "%s: %s: %s", outfile_writing(&w->out), what, strerror(-err));
	}
	return w->err;
}

/* Push bytes through the compressor (mode ZSTD_e_continue or ZSTD_e_end) to the file. */
static int zstd_push(struct trace_writer *w, const void *src, size_t n, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { src, n, 0 };

	for (unsigned long guard = 0; guard < (n / 1024 + 1) * 1024 + 1024; guard++) {
		ZSTD_outBuffer out = { w->zbuf, w->zcap, 0 };
		size_t left = ZSTD_compressStream2(w->cctx, &out, &in, mode);
		int rc;
		if (ZSTD_isError(left)) {
			w->err = -EIO;
			diag_set(&w->d, "%s: zstd: %s", outfile_writing(&w->out), ZSTD_getErrorName(left));
			return w->err;
		}
		rc = write_all(w->out.fd, w->zbuf, out.pos);
		if (rc)
			return writer_io_error(w, rc, "write");
		if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
			return 0;
	}
	return writer_io_error(w, -EIO, "zstd did not make progress");
}

static int writer_flush(struct trace_writer *w)
{
	int rc;

	if (w->err || w->len == 0)
		return w->err;
	if (w->cctx) {
		rc = zstd_push(w, w->buf, w->len, ZSTD_e_continue);
	} else {
		rc = write_all(w->out.fd, w->buf, w->len);
		if (rc)
			rc = writer_io_error(w, rc, "write");
	}
	w->len = 0;
	return rc;
}

/* Room for n more bytes in the buffer (n is small: one line piece). */
static int writer_reserve(struct trace_writer *w, size_t n)
{
	assert(n <= TRACE_WRITE_BUF_BYTES);
	if (w->len + n > TRACE_WRITE_BUF_BYTES)
		return writer_flush(w);
	return w->err;
}

static void put_str(struct trace_writer *w, const char *s, size_t n)
{
	assert(w->len + n <= TRACE_WRITE_BUF_BYTES);
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static int writer_header(struct trace_writer *w)
{
	char line[64 + TRACE_BLOCK_NAME_MAX];
	char size[32], t[24];
	int rc, n;

	if (w->header_written)
		return 0;
	w->header_written = true;
	n = snprintf(line, sizeof line, "page-size %s\n",
		     size_format(w->h.page_size, size, sizeof size));
	if ((rc = writer_reserve(w, (size_t)n)) != 0)
		return rc;
	put_str(w, line, (size_t)n);
	for (size_t b = 0; b < w->h.n_blocks; b++) {
		n = snprintf(line, sizeof line, "block %s %s\n", w->h.blocks[b].name,
			     size_format(w->h.blocks[b].size_bytes, size, sizeof size));
		if ((rc = writer_reserve(w, (size_t)n)) != 0)
			return rc;
		put_str(w, line, (size_t)n);
	}
	format_time(t, w->h.duration_ns);
	n = snprintf(line, sizeof line, "duration %s\n", t);
	if ((rc = writer_reserve(w, (size_t)n)) != 0)
		return rc;
	put_str(w, line, (size_t)n);
	return 0;
}

/* End the open range line, if any. */
static int writer_end_line(struct trace_writer *w)
{
	int rc;

	if (!w->line_open)
		return 0;
	if ((rc = writer_reserve(w, 1)) != 0)
		return rc;
	put_str(w, "\n", 1);
	w->line_open = false;
	return 0;
}

static int header_valid(const struct trace_header *h, struct diag *d)
{
	char ps[32];

	if (h->version != TRACE_VERSION && h->version != TRACE_VERSION_LAYOUT)
		return diag_set(d, "trace header: version %u (%d or %d)", h->version,
				TRACE_VERSION, TRACE_VERSION_LAYOUT);
	if (!page_size_ok(h->page_size))
		return diag_set(d, "trace header: page size %llu is not a power of two between "
				"512 and 1G", (unsigned long long)h->page_size);
	if (h->duration_ns == 0)
		return diag_set(d, "trace header: duration must be more than 0");
	if (h->n_blocks == 0 || h->n_blocks > TRACE_MAX_BLOCKS)
		return diag_set(d, "trace header: %zu blocks (1 to %d)", h->n_blocks,
				TRACE_MAX_BLOCKS);
	for (size_t b = 0; b < h->n_blocks; b++) {
		const struct trace_block *blk = &h->blocks[b];
		if (memchr(blk->name, '\0', sizeof blk->name) == NULL ||
		    !trace_block_name_valid(blk->name, h->version))
			return diag_set(d, "trace header: block %zu: bad name", b);
		for (size_t o = 0; o < b; o++)
			if (!strcmp(h->blocks[o].name, blk->name))
				return diag_set(d, "trace header: duplicate block '%s'", blk->name);
		if (blk->size_bytes == 0 || blk->size_bytes % h->page_size != 0)
			return diag_set(d, "trace header: block '%s' size %llu is not a positive "
					"multiple of the page size (%s)", blk->name,
					(unsigned long long)blk->size_bytes,
					size_format(h->page_size, ps, sizeof ps));
	}
	return 0;
}

static void writer_free(struct trace_writer *w)
{
	if (!w)
		return;
	outfile_abort(&w->out);
	ZSTD_freeCCtx(w->cctx);
	free(w->zbuf);
	free(w->buf);
	free(w->path);
	free(w);
}

/* Allocate the writer and its compressor; no file yet. */
static int writer_new(const char *path, const struct trace_header *h, struct trace_writer **out,
		      struct diag *d)
{
	struct trace_writer *w = calloc(1, sizeof *w);
	bool ok;

	if (!w) {
		diag_set(d, "%s: out of memory", path);
		return -ENOMEM;
	}
	w->out.fd = -1;
	w->h = *h;
	w->path = strdup(path);
	w->buf = malloc(TRACE_WRITE_BUF_BYTES);
	ok = w->path && w->buf;
	if (ok && ends_with(path, ".zst")) {
		w->zcap = ZSTD_CStreamOutSize();
		w->zbuf = malloc(w->zcap);
		w->cctx = ZSTD_createCCtx();
		ok = w->zbuf && w->cctx &&
		     !ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, 3)) &&
		     !ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1));
	}
	if (!ok) {
		writer_free(w);
		diag_set(d, "%s: out of memory", path);
		return -ENOMEM;
	}
	for (size_t b = 0; b < h->n_blocks; b++)
		w->pages[b] = h->blocks[b].size_bytes / h->page_size;
	*out = w;
	return 0;
}

int trace_writer_open(const char *path, const struct trace_header *h, trace_writer **out,
		      struct diag *d)
{
	char magic[32];
	struct trace_writer *w = NULL;
	int rc;

	diag_clear(d);
	if (!path || !*path || !h || !out)
		return diag_set(d, "trace_writer_open: no path or header");
	rc = header_valid(h, d);
	if (rc)
		return rc;
	rc = writer_new(path, h, &w, d);
	if (rc)
		return rc;
	rc = outfile_open(&w->out, path);
	if (rc) {
		diag_set(d, "%s: cannot write: %s", path, strerror(-rc));
		writer_free(w);
		return rc;
	}
	snprintf(magic, sizeof magic, "%s %u\n", TRACE_MAGIC, h->version);
	put_str(w, magic, strlen(magic));
	*out = w;
	return 0;
}

int trace_writer_comment(trace_writer *w, const char *text)
{
	size_t n;
	int rc;

	if (!w || !text)
		return -EINVAL;
	if (w->err)
		return w->err;
	n = strlen(text);
	if (w->have_epoch)
		return diag_set(&w->d, "trace writer: comment after the first epoch");
	if (n > TRACE_COMMENT_MAX_BYTES)
		return diag_set(&w->d, "trace writer: comment longer than %d bytes",
				TRACE_COMMENT_MAX_BYTES);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return diag_set(&w->d, "trace writer: control character in a comment");
	}
	if ((rc = writer_end_line(w)) != 0 || (rc = writer_reserve(w, n + 3)) != 0)
		return rc;
	put_str(w, "# ", 2);
	put_str(w, text, n);
	put_str(w, "\n", 1);
	return 0;
}

int trace_writer_epoch(trace_writer *w, uint64_t t_ns)
{
	char line[32];
	size_t n;
	int rc;

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	if (w->have_epoch && t_ns <= w->last_t_ns)
		return diag_set(&w->d, "trace writer: epoch %llu ns is not after the previous "
				"epoch (%llu ns)", (unsigned long long)t_ns,
				(unsigned long long)w->last_t_ns);
	if (t_ns >= w->h.duration_ns)
		return diag_set(&w->d, "trace writer: epoch %llu ns is not before the duration "
				"(%llu ns)", (unsigned long long)t_ns,
				(unsigned long long)w->h.duration_ns);
	if ((rc = writer_header(w)) != 0 || (rc = writer_end_line(w)) != 0)
		return rc;
	memcpy(line, "epoch ", 6);
	n = 6 + format_time(line + 6, t_ns);
	line[n++] = '\n';
	if ((rc = writer_reserve(w, n)) != 0)
		return rc;
	put_str(w, line, n);
	w->have_epoch = true;
	w->line_layout = false;
	w->last_t_ns = t_ns;
	return 0;
}

static int range_valid(struct trace_writer *w, const struct trace_range *r)
{
	uint64_t pages;

	if (r->block >= w->h.n_blocks)
		return diag_set(&w->d, "trace writer: block index %u (the header has %zu)",
				r->block, w->h.n_blocks);
	pages = w->pages[r->block];
	if (r->n_pages == 0 || r->first_page >= pages || r->n_pages > pages - r->first_page)
		return diag_set(&w->d, "trace writer: pages %llu+%llu out of range for block "
				"'%s' (%llu pages)", (unsigned long long)r->first_page,
				(unsigned long long)r->n_pages, w->h.blocks[r->block].name,
				(unsigned long long)pages);
	return 0;
}

/* One range of an epoch, or of the layout (w->line_layout: before the first epoch). */
static int writer_range(trace_writer *w, const struct trace_range *r)
{
	char piece[TRACE_BLOCK_NAME_MAX + 56];   /* "layout ", the name, " A-B" */
	size_t n = 0;
	int rc;

	if ((rc = range_valid(w, r)) != 0)
		return rc;
	if (w->line_open && (w->line_block != r->block || w->line_bytes >= TRACE_WRAP_BYTES))
		if ((rc = writer_end_line(w)) != 0)
			return rc;
	if (!w->line_open) {
		size_t name_len = strlen(w->h.blocks[r->block].name);
		if (w->line_layout) {
			memcpy(piece, "layout ", 7);
			n = 7;
		}
		memcpy(piece + n, w->h.blocks[r->block].name, name_len);
		n += name_len;
		w->line_open = true;
		w->line_block = r->block;
		w->line_bytes = 0;
	}
	piece[n++] = ' ';
	n += format_u64(piece + n, r->first_page);
	if (r->n_pages > 1) {
		piece[n++] = '-';
		n += format_u64(piece + n, r->first_page + r->n_pages - 1);
	}
	if ((rc = writer_reserve(w, n)) != 0)
		return rc;
	put_str(w, piece, n);
	w->line_bytes += n;
	return 0;
}

int trace_writer_range(trace_writer *w, const struct trace_range *r)
{
	if (!w || !r)
		return -EINVAL;
	if (w->err)
		return w->err;
	if (!w->have_epoch)
		return diag_set(&w->d, "trace writer: range before any epoch");
	return writer_range(w, r);
}

int trace_writer_layout(trace_writer *w, const struct trace_range *r)
{
	int rc;

	if (!w || !r)
		return -EINVAL;
	if (w->err)
		return w->err;
	if (w->h.version < TRACE_VERSION_LAYOUT)
		return diag_set(&w->d, "trace writer: a layout needs a version %d header",
				TRACE_VERSION_LAYOUT);
	if (w->have_epoch)
		return diag_set(&w->d, "trace writer: layout after the first epoch");
	if ((rc = writer_header(w)) != 0)
		return rc;
	w->line_layout = true;
	return writer_range(w, r);
}

int trace_writer_close(trace_writer *w)
{
	int rc;

	if (!w)
		return -EINVAL;
	if ((rc = writer_header(w)) != 0 || (rc = writer_end_line(w)) != 0 ||
	    (rc = writer_flush(w)) != 0)
		goto out;
	if (w->cctx && (rc = zstd_push(w, NULL, 0, ZSTD_e_end)) != 0)
		goto out;
	/* fsync + close + rename onto the target (in place: close; standard output: nothing) */
	rc = outfile_commit(&w->out);
	if (rc) {
		writer_io_error(w, rc, "commit");
		goto out;
	}
	writer_free(w);
	return 0;
out:
	trace_writer_abort(w);
	return rc;
}

void trace_writer_abort(trace_writer *w)
{
	if (!w)
		return;
	writer_free(w);             /* outfile_abort: closes, removes the temporary */
}

const char *trace_writer_diag(const trace_writer *w)
{
	return w ? w->d.msg : "";
}

const char *trace_format_time(uint64_t ns, char *buf, size_t buflen)
{
	char tmp[24];

	if (!buf || buflen == 0)
		return buf;
	format_time(tmp, ns);
	snprintf(buf, buflen, "%s", tmp);
	return buf;
}
