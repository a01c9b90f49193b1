/* SPDX-License-Identifier: MIT */
/* qemu_stream - reader of a real QEMU's migration stream (see qemu_stream.h). Every record
 * is parsed all-or-nothing: if its bytes are not all there yet, nothing is consumed and
 * the reader asks for more, so a record split across QEMU FILE messages is read once. */
#include "transport/qemu_stream.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QS_MAGIC 0x5145564du
#define QS_VERSION 3u
#define QS_MAX_UNREAD_BYTES (64u << 20)
#define QS_RAM_VERSION 4u

enum qs_type {
	QS_EOF = 0x00,
	QS_START = 0x01,
	QS_PART = 0x02,
	QS_END = 0x03,
	QS_FULL = 0x04,
	QS_SUBSECTION = 0x05,
	QS_VMDESC = 0x06,
	QS_CONFIGURATION = 0x07,
	QS_COMMAND = 0x08,
	QS_FOOTER = 0x7e
};

enum qs_state { RS_HEADER, RS_CONFIG, RS_TOP, RS_RAM, RS_FOOTER, RS_VMDESC, RS_VMDESC_BODY, RS_DONE, RS_ERROR };

/* The device sections of `-M none` (QEMU 7.2) with their fixed state size. */
struct qs_known {
	const char *name;
	uint32_t version;
	size_t bytes;
};
static const struct qs_known qs_known[] = {
	{ "timer", 2, 24 },        /* cpu_ticks_offset, unused 8 bytes, cpu_clock_offset */
	{ "globalstate", 1, 104 }, /* be32 size, char runstate[100] */
};

struct qemu_stream {
	struct qemu_stream_opts o;
	uint8_t *buf;
	size_t len, cap, pos;
	uint64_t consumed;          /* bytes dropped from buf's front */
	enum qs_state st;
	char machine[STREAM_NAME_MAX + 1];
	struct stream_block blocks[STREAM_MAX_BLOCKS];
	size_t n_blocks;
	bool ram_started, ram_ended, ram_in_start, ram_first_word, have_block;
	uint32_t ram_sid, footer_sid;
	uint8_t ram_kind;           /* QS_START / QS_PART / QS_END of the open ram section */
	uint32_t sids[QEMU_STREAM_MAX_SECTIONS];
	size_t n_sids;
	size_t cur_block;
	struct qemu_stream_page page;
	char sec_name[STREAM_NAME_MAX + 1];
	size_t sec_at, sec_len;
	uint32_t vmdesc_left;
	uint64_t hooks;
	int cause;
	char err[320];
	/* translate */
	bool hdr_out, ram_open;
	char exp_name[STREAM_MAX_BLOCKS][STREAM_NAME_MAX + 1];
	struct digest exp_digest[STREAM_MAX_BLOCKS];
	size_t n_exp;
};

void qemu_stream_opts_defaults(struct qemu_stream_opts *o)
{
	memset(o, 0, sizeof *o);
	o->vmdesc = true;
}

int qemu_stream_new(const struct qemu_stream_opts *o, qemu_stream **out)
{
	if (!out)
		return -EINVAL;
	qemu_stream *r = calloc(1, sizeof *r);
	if (!r)
		return -ENOMEM;
	if (o)
		r->o = *o;
	else
		qemu_stream_opts_defaults(&r->o);
	*out = r;
	return 0;
}

void qemu_stream_free(qemu_stream *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r);
}

int qemu_stream_feed(qemu_stream *r, const void *data, size_t len)
{
	if (!r || (!data && len))
		return -EINVAL;
	if (r->pos > 0) {           /* drop what was read; pointers handed out end here */
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->consumed += r->pos;
		r->pos = 0;
	}
	if (len > QS_MAX_UNREAD_BYTES - r->len)
		return -EOVERFLOW;
	if (r->len + len > r->cap) {
		size_t cap = r->cap ? r->cap : 64 * 1024;
		while (cap < r->len + len)
			cap *= 2;
		uint8_t *nb = realloc(r->buf, cap);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = cap;
	}
	if (len)
		memcpy(r->buf + r->len, data, len);
	r->len += len;
	return 0;
}

/* ---- helpers ---------------------------------------------------------------------------- */

static size_t avail(const qemu_stream *r) { return r->len - r->pos; }

static uint64_t rd_be(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | b[i];
	return v;
}

/* "offset N: what (bytes 55 aa ...)"; the error is final. */
static enum qemu_stream_event fail(qemu_stream *r, size_t at, int cause, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum qemu_stream_event fail(qemu_stream *r, size_t at, int cause, const char *fmt, ...)
{
	assert(at <= r->len);
	int o = snprintf(r->err, sizeof r->err, "offset %llu: ", (unsigned long long)(r->consumed + at));
	va_list ap;
	va_start(ap, fmt);
	if (o > 0 && (size_t)o < sizeof r->err)
		o += vsnprintf(r->err + o, sizeof r->err - (size_t)o, fmt, ap);
	va_end(ap);
	size_t n = r->len - at < 12 ? r->len - at : 12;
	bool opened = o > 0 && (size_t)o < sizeof r->err - 16;   /* room for the quoted bytes */
	if (opened)
		o += snprintf(r->err + o, sizeof r->err - (size_t)o, n ? " (bytes" : " (no bytes)");
	for (size_t i = 0; opened && i < n && o > 0 && (size_t)o < sizeof r->err - 5; i++)
		o += snprintf(r->err + o, sizeof r->err - (size_t)o, " %02x", r->buf[at + i]);
	if (opened && n && o > 0 && (size_t)o < sizeof r->err - 2)
		snprintf(r->err + o, sizeof r->err - (size_t)o, ")");
	r->cause = cause;
	r->st = RS_ERROR;
	return QEMU_STREAM_EV_ERROR;
}

/* A name of `n` bytes at p: printable ASCII only (QEMU's idstr are). */
static bool name_ok(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return n > 0;
}

static const struct qs_known *known_section(const char *name)
{
	for (size_t i = 0; i < sizeof qs_known / sizeof qs_known[0]; i++)
		if (strcmp(qs_known[i].name, name) == 0)
			return &qs_known[i];
	return NULL;
}

/* ---- file header and configuration ------------------------------------------------------ */

static enum qemu_stream_event read_header(qemu_stream *r)
{
	if (avail(r) < 8)
		return QEMU_STREAM_EV_NEED_MORE;
	const uint8_t *b = r->buf + r->pos;
	if (rd_be(b, 4) != QS_MAGIC)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "bad file magic (want QEVM 51 45 56 4d)");
	if (rd_be(b + 4, 4) != QS_VERSION)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_UNSUPPORTED, "file version %u (migbed reads version 3)",
			    (unsigned)rd_be(b + 4, 4));
	r->pos += 8;
	r->st = RS_CONFIG;
	return qemu_stream_next(r);
}

static enum qemu_stream_event read_config(qemu_stream *r)
{
	if (avail(r) < 5)
		return QEMU_STREAM_EV_NEED_MORE;
	const uint8_t *b = r->buf + r->pos;
	if (b[0] != QS_CONFIGURATION)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "expected the configuration section (0x07)");
	uint64_t n = rd_be(b + 1, 4);
	if (n == 0 || n > STREAM_NAME_MAX)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "machine name length %llu", (unsigned long long)n);
	if (avail(r) < 5 + n + 1)   /* + the next byte: a subsection would start there */
		return QEMU_STREAM_EV_NEED_MORE;
	if (!name_ok(b + 5, n))
		return fail(r, r->pos + 5, CAUSE_QEMU_STREAM_MALFORMED, "machine name is not printable");
	if (b[5 + n] == QS_SUBSECTION)
		return fail(r, r->pos + 5 + n, CAUSE_QEMU_STREAM_UNSUPPORTED,
			    "configuration subsection (QEMU capabilities/uuid checks are not read)");
	memcpy(r->machine, b + 5, n);
	r->machine[n] = '\0';
	r->pos += 5 + n;
	r->st = RS_TOP;
	return qemu_stream_next(r);
}

/* ---- the "ram" section ------------------------------------------------------------------- */

/* The MEM_SIZE block list at r->pos + 8. 1 read, 0 need more, -1 error. */
static int read_block_list(qemu_stream *r, uint64_t total)
{
	size_t at = r->pos + 8, n = 0;
	uint64_t sum = 0;
	while (sum < total) {
		if (n == STREAM_MAX_BLOCKS) {
			fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED, "more than %d RAM blocks", STREAM_MAX_BLOCKS);
			return -1;
		}
		if (r->len - at < 1)
			return 0;
		size_t nl = r->buf[at];
		if (r->len - at < 1 + nl + 8)
			return 0;
		if (!name_ok(r->buf + at + 1, nl)) {
			fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "RAM block name empty or not printable");
			return -1;
		}
		struct stream_block *sb = &r->blocks[n];
		memcpy(sb->name, r->buf + at + 1, nl);
		sb->name[nl] = '\0';
		sb->length = rd_be(r->buf + at + 1 + nl, 8);
		for (size_t i = 0; i < n; i++)
			if (strcmp(r->blocks[i].name, sb->name) == 0) {
				fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "RAM block '%s' listed twice", sb->name);
				return -1;
			}
		if (sb->length == 0 || sb->length % QEMU_STREAM_PAGE_BYTES || sb->length > total - sum) {
			fail(r, at, CAUSE_QEMU_STREAM_MALFORMED,
			     "RAM block '%s' length 0x%llx: not whole pages, or past the MEM_SIZE total 0x%llx",
			     sb->name, (unsigned long long)sb->length, (unsigned long long)total);
			return -1;
		}
		sum += sb->length;
		at += 1 + nl + 8;
		n++;
	}
	r->n_blocks = n;
	r->pos = at;
	return 1;
}

static enum qemu_stream_event read_mem_size(qemu_stream *r, uint64_t w)
{
	uint64_t total = w & ~(uint64_t)(QEMU_STREAM_PAGE_BYTES - 1);
	if (!r->ram_in_start || !r->ram_first_word || r->n_blocks)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "MEM_SIZE not first in the RAM START section");
	if (total == 0)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "MEM_SIZE total is 0");
	int rc = read_block_list(r, total);
	if (rc < 0)
		return QEMU_STREAM_EV_ERROR;
	if (rc == 0)
		return QEMU_STREAM_EV_NEED_MORE;
	r->ram_first_word = false;
	return QEMU_STREAM_EV_BLOCKS;
}

/* ZERO / PAGE, with or without CONTINUE. */
static enum qemu_stream_event read_page(qemu_stream *r, uint64_t w, unsigned flags)
{
	size_t at = r->pos, need = 8;
	size_t b = r->cur_block;
	if (!r->n_blocks)
		return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "page before the RAM block list");
	if (!(flags & QEMU_RAM_FLAG_CONTINUE)) {
		if (avail(r) < need + 1 || avail(r) < need + 1 + r->buf[at + 8])
			return QEMU_STREAM_EV_NEED_MORE;
		size_t nl = r->buf[at + 8];
		for (b = 0; b < r->n_blocks; b++)
			if (strlen(r->blocks[b].name) == nl && memcmp(r->blocks[b].name, r->buf + at + 9, nl) == 0)
				break;
		if (b == r->n_blocks)
			return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "page of a RAM block not in the block list");
		need += 1 + nl;
	} else if (!r->have_block) {
		return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "CONTINUE page with no block before it");
	}
	size_t body = (flags & QEMU_RAM_FLAG_PAGE) ? QEMU_STREAM_PAGE_BYTES : 1;
	if (avail(r) < need + body)
		return QEMU_STREAM_EV_NEED_MORE;
	uint64_t off = w & ~(uint64_t)(QEMU_STREAM_PAGE_BYTES - 1);
	if (off >= r->blocks[b].length)
		return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "page offset 0x%llx past block '%s' (0x%llx bytes)",
			    (unsigned long long)off, r->blocks[b].name, (unsigned long long)r->blocks[b].length);
	r->cur_block = b;
	r->have_block = true;
	r->page.block = b;
	r->page.offset_bytes = off;
	r->page.data = (flags & QEMU_RAM_FLAG_PAGE) ? r->buf + at + need : NULL;
	r->page.fill = (flags & QEMU_RAM_FLAG_PAGE) ? 0 : r->buf[at + need];
	r->pos += need + body;
	return QEMU_STREAM_EV_PAGE;
}

static enum qemu_stream_event read_ram_word(qemu_stream *r)
{
	if (avail(r) < 8)
		return QEMU_STREAM_EV_NEED_MORE;
	uint64_t w = rd_be(r->buf + r->pos, 8);
	unsigned flags = (unsigned)(w & (QEMU_STREAM_PAGE_BYTES - 1));
	if (flags == QEMU_RAM_FLAG_MEM_SIZE)
		return read_mem_size(r, w);
	if (r->ram_in_start && r->ram_first_word)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "RAM START section does not begin with MEM_SIZE");
	if (w == QEMU_RAM_FLAG_EOS) {
		r->pos += 8;
		r->st = RS_FOOTER;
		r->footer_sid = r->ram_sid;
		return QEMU_STREAM_EV_RAM_EOS;
	}
	if (w == QEMU_RAM_FLAG_HOOK) {
		r->pos += 8;
		r->hooks++;
		return QEMU_STREAM_EV_HOOK;
	}
	unsigned kind = flags & ~QEMU_RAM_FLAG_CONTINUE;
	if (kind == QEMU_RAM_FLAG_ZERO || kind == QEMU_RAM_FLAG_PAGE)
		return read_page(r, w, flags);
	if (kind == QEMU_RAM_FLAG_XBZRLE || kind == QEMU_RAM_FLAG_COMPRESS_PAGE)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_UNSUPPORTED,
			    "%s page (switch the xbzrle/compress capability off)",
			    kind == QEMU_RAM_FLAG_XBZRLE ? "XBZRLE" : "compressed");
	return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "unknown combination of RAM flags 0x%x", flags);
}

/* ---- sections ----------------------------------------------------------------------------- */

static enum qemu_stream_event read_footer(qemu_stream *r)
{
	if (avail(r) < 5)
		return QEMU_STREAM_EV_NEED_MORE;
	const uint8_t *b = r->buf + r->pos;
	if (b[0] != QS_FOOTER || rd_be(b + 1, 4) != r->footer_sid)
		return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "missing section footer (7e %08x)",
			    (unsigned)r->footer_sid);
	r->pos += 5;
	r->st = RS_TOP;
	return qemu_stream_next(r);
}

static enum qemu_stream_event open_ram(qemu_stream *r, size_t at, size_t hdr, uint32_t sid, uint32_t inst,
				       uint32_t ver)
{
	if (r->buf[at] != QS_START)
		return fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED, "\"ram\" as a FULL section (postcopy/snapshot?)");
	if (r->ram_started)
		return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "second START of the \"ram\" section");
	if (inst != 0 || ver != QS_RAM_VERSION)
		return fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED, "\"ram\" instance %u version %u (want 0, 4)", inst, ver);
	r->ram_started = true;
	r->ram_sid = sid;
	r->ram_in_start = true;
	r->ram_first_word = true;
	r->ram_kind = QS_START;
	r->pos = at + hdr;
	r->st = RS_RAM;
	return qemu_stream_next(r);
}

/* A FULL device section of known fixed size, with its footer. */
static enum qemu_stream_event read_device(qemu_stream *r, size_t at, size_t hdr, uint32_t sid, uint32_t ver)
{
	const struct qs_known *k = known_section(r->sec_name);
	if (!k || r->buf[at] != QS_FULL)
		return fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED,
			    "section '%s' (migbed reads -M none's ram, timer, globalstate)", r->sec_name);
	if (ver != k->version)
		return fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED, "section '%s' version %u (want %u)", r->sec_name,
			    ver, k->version);
	if (avail(r) < hdr + k->bytes + 5)
		return QEMU_STREAM_EV_NEED_MORE;
	const uint8_t *body = r->buf + at + hdr;
	if (body[k->bytes] == QS_SUBSECTION)
		return fail(r, at + hdr + k->bytes, CAUSE_QEMU_STREAM_UNSUPPORTED, "subsection in '%s'", r->sec_name);
	if (strcmp(k->name, "globalstate") == 0 && rd_be(body, 4) > 100)
		return fail(r, at + hdr, CAUSE_QEMU_STREAM_MALFORMED, "globalstate run-state size %u > 100",
			    (unsigned)rd_be(body, 4));
	r->sec_at = at + hdr;
	r->sec_len = k->bytes;
	r->pos = at + hdr + k->bytes;
	r->footer_sid = sid;
	r->st = RS_FOOTER;
	return QEMU_STREAM_EV_SECTION;
}

static enum qemu_stream_event read_section_start(qemu_stream *r)
{
	size_t at = r->pos;
	if (avail(r) < 6 || avail(r) < 6 + (size_t)r->buf[at + 5] + 8)
		return QEMU_STREAM_EV_NEED_MORE;
	uint32_t sid = (uint32_t)rd_be(r->buf + at + 1, 4);
	size_t nl = r->buf[at + 5];
	if (!name_ok(r->buf + at + 6, nl))
		return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "section name empty or not printable");
	for (size_t i = 0; i < r->n_sids; i++)
		if (r->sids[i] == sid)
			return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "section id %u used twice", sid);
	if (r->n_sids == QEMU_STREAM_MAX_SECTIONS)
		return fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED, "more than %u sections", QEMU_STREAM_MAX_SECTIONS);
	memcpy(r->sec_name, r->buf + at + 6, nl);
	r->sec_name[nl] = '\0';
	uint32_t inst = (uint32_t)rd_be(r->buf + at + 6 + nl, 4);
	uint32_t ver = (uint32_t)rd_be(r->buf + at + 10 + nl, 4);
	if (strcmp(r->sec_name, "ram") == 0) {
		enum qemu_stream_event e = open_ram(r, at, 6 + nl + 8, sid, inst, ver);
		if (e != QEMU_STREAM_EV_ERROR)
			r->sids[r->n_sids++] = sid;
		return e;
	}
	if (!r->ram_ended)
		return fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED, "device section '%s' before RAM ended (iterative device?)",
			    r->sec_name);
	enum qemu_stream_event e = read_device(r, at, 6 + nl + 8, sid, ver);
	if (e == QEMU_STREAM_EV_SECTION)
		r->sids[r->n_sids++] = sid;
	return e;
}

static enum qemu_stream_event read_section_part(qemu_stream *r)
{
	size_t at = r->pos;
	if (avail(r) < 5)
		return QEMU_STREAM_EV_NEED_MORE;
	uint32_t sid = (uint32_t)rd_be(r->buf + at + 1, 4);
	if (!r->ram_started || r->ram_ended || sid != r->ram_sid)
		return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "%s of section %u, which is not an open RAM section",
			    r->buf[at] == QS_PART ? "PART" : "END", sid);
	r->ram_kind = r->buf[at];
	r->ram_in_start = false;
	r->pos += 5;
	r->st = RS_RAM;
	return qemu_stream_next(r);
}

static enum qemu_stream_event read_top(qemu_stream *r)
{
	if (avail(r) < 1)
		return QEMU_STREAM_EV_NEED_MORE;
	size_t at = r->pos;
	switch (r->buf[at]) {
	case QS_START:
	case QS_FULL:
		return read_section_start(r);
	case QS_PART:
	case QS_END:
		return read_section_part(r);
	case QS_EOF:
		if (!r->ram_ended)
			return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "EOF before the RAM section's END");
		r->pos++;
		r->st = r->o.vmdesc ? RS_VMDESC : RS_DONE;
		return r->o.vmdesc ? qemu_stream_next(r) : QEMU_STREAM_EV_EOF;
	case QS_COMMAND:
		return fail(r, at, CAUSE_QEMU_STREAM_UNSUPPORTED, "QEMU_VM_COMMAND (postcopy/colo/switchover)");
	default:
		return fail(r, at, CAUSE_QEMU_STREAM_MALFORMED, "unknown section type 0x%02x", r->buf[at]);
	}
}

/* ---- end of stream --------------------------------------------------------------------- */

static enum qemu_stream_event read_vmdesc(qemu_stream *r)
{
	if (r->st == RS_VMDESC) {
		if (avail(r) < 5)
			return QEMU_STREAM_EV_NEED_MORE;
		if (r->buf[r->pos] != QS_VMDESC)
			return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "expected the VM description (0x06) after EOF");
		uint64_t n = rd_be(r->buf + r->pos + 1, 4);
		if (n > QEMU_STREAM_VMDESC_MAX_BYTES)
			return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "VM description of %llu bytes",
				    (unsigned long long)n);
		r->vmdesc_left = (uint32_t)n;
		r->pos += 5;
		r->st = RS_VMDESC_BODY;
	}
	size_t n = avail(r) < r->vmdesc_left ? avail(r) : r->vmdesc_left;
	r->pos += n;     /* the JSON is for humans and analysis tools: skipped */
	r->vmdesc_left -= (uint32_t)n;
	if (r->vmdesc_left)
		return QEMU_STREAM_EV_NEED_MORE;
	r->st = RS_DONE;
	return QEMU_STREAM_EV_EOF;
}

enum qemu_stream_event qemu_stream_next(qemu_stream *r)
{
	switch (r->st) {
	case RS_HEADER:
		return read_header(r);
	case RS_CONFIG:
		return read_config(r);
	case RS_TOP:
		return read_top(r);
	case RS_RAM: {
		enum qemu_stream_event e = read_ram_word(r);
		if (e == QEMU_STREAM_EV_RAM_EOS && r->ram_kind == QS_END)
			r->ram_ended = true;
		return e;
	}
	case RS_FOOTER:
		return read_footer(r);
	case RS_VMDESC:
	case RS_VMDESC_BODY:
		return read_vmdesc(r);
	case RS_DONE:
		if (avail(r))
			return fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "bytes after the end of the stream");
		return QEMU_STREAM_EV_NEED_MORE;
	case RS_ERROR:
	default:
		return QEMU_STREAM_EV_ERROR;
	}
}

static const char *state_want(const qemu_stream *r)
{
	switch (r->st) {
	case RS_HEADER: return "the file header";
	case RS_CONFIG: return "the configuration section";
	case RS_TOP: return r->ram_ended ? "a device section or EOF" : "a RAM section";
	case RS_RAM: return "a RAM flag word or its page";
	case RS_FOOTER: return "a section footer";
	case RS_VMDESC: return "the VM description";
	case RS_VMDESC_BODY: return "the rest of the VM description";
	default: return "nothing";
	}
}

int qemu_stream_finish(qemu_stream *r)
{
	if (r->st == RS_DONE && avail(r) == 0)
		return 0;
	if (r->st == RS_ERROR)
		return -r->cause;
	if (r->st == RS_DONE) {   /* the stream was complete; more bytes came after its end */
		(void)fail(r, r->pos, CAUSE_QEMU_STREAM_MALFORMED, "bytes after the end of the stream");
		return -CAUSE_QEMU_STREAM_MALFORMED;
	}
	(void)fail(r, r->pos, CAUSE_QEMU_STREAM_TRUNCATED, "stream ends while expecting %s", state_want(r));
	return -CAUSE_QEMU_STREAM_TRUNCATED;
}

size_t qemu_stream_n_blocks(const qemu_stream *r) { return r->n_blocks; }
const struct stream_block *qemu_stream_block(const qemu_stream *r, size_t i)
{
	return i < r->n_blocks ? &r->blocks[i] : NULL;
}
const struct qemu_stream_page *qemu_stream_page(const qemu_stream *r) { return &r->page; }
const char *qemu_stream_section_name(const qemu_stream *r) { return r->sec_name; }
const uint8_t *qemu_stream_section_data(const qemu_stream *r, size_t *len)
{
	*len = r->sec_len;
	return r->sec_len ? r->buf + r->sec_at : NULL;
}
const char *qemu_stream_machine(const qemu_stream *r) { return r->machine; }
uint64_t qemu_stream_offset(const qemu_stream *r) { return r->consumed + r->pos; }
uint64_t qemu_stream_hooks(const qemu_stream *r) { return r->hooks; }
int qemu_stream_cause(const qemu_stream *r) { return r->st == RS_ERROR ? r->cause : 0; }
const char *qemu_stream_error(const qemu_stream *r) { return r->err; }

/* ---- adapter to migbed's stream v1 ------------------------------------------------------ */

int qemu_stream_expect_digest(qemu_stream *r, const char *name, struct digest digest)
{
	if (!r || !name || !*name || strlen(name) > STREAM_NAME_MAX)
		return -EINVAL;
	size_t i = 0;
	while (i < r->n_exp && strcmp(r->exp_name[i], name) != 0)
		i++;
	if (i == STREAM_MAX_BLOCKS)
		return -ENOSPC;
	snprintf(r->exp_name[i], sizeof r->exp_name[i], "%s", name);
	r->exp_digest[i] = digest;
	if (i == r->n_exp)
		r->n_exp++;
	return 0;
}

static int put_blocks(const qemu_stream *r, struct stream_buf *out)
{
	uint64_t total = 0;
	for (size_t i = 0; i < r->n_blocks; i++)
		total += r->blocks[i].length;
	int rc = stream_put_u8(out, STREAM_RAM_START);
	rc = rc ? rc : stream_put_be64(out, total | STREAM_FLAG_MEM_SIZE);
	for (size_t i = 0; rc == 0 && i < r->n_blocks; i++) {
		size_t nl = strlen(r->blocks[i].name);
		rc = stream_put_u8(out, (uint8_t)nl);
		rc = rc ? rc : stream_put_bytes(out, r->blocks[i].name, nl);
		rc = rc ? rc : stream_put_be64(out, r->blocks[i].length);
	}
	return rc;
}

/* VERIFY (expected digests in the source's block order) + EOF. */
static int put_end(const qemu_stream *r, struct stream_buf *out, struct cause_ctx *cx)
{
	int rc = stream_put_u8(out, STREAM_VERIFY);
	rc = rc ? rc : stream_put_be32(out, (uint32_t)r->n_blocks);
	for (size_t b = 0; rc == 0 && b < r->n_blocks; b++) {
		size_t i = 0;
		while (i < r->n_exp && strcmp(r->exp_name[i], r->blocks[b].name) != 0)
			i++;
		if (i == r->n_exp)
			return cause_set(cx, CAUSE_INTERNAL, "no expected content given for RAM block '%s'",
					 r->blocks[b].name);
		rc = stream_put_digest(out, r->exp_digest[i]);
	}
	return rc ? rc : stream_put_u8(out, STREAM_EOF);
}

static int put_device(const qemu_stream *r, struct stream_buf *out)
{
	size_t n;
	const uint8_t *d = qemu_stream_section_data(r, &n);
	int rc = stream_put_u8(out, STREAM_DEVICE);
	rc = rc ? rc : stream_put_be32(out, (uint32_t)n);
	rc = rc ? rc : stream_put_bytes(out, d, n);
	return rc ? rc : stream_put_digest(out, digest_of(d, n));
}

/* One event -> migbed v1 bytes. */
static int translate_event(qemu_stream *r, enum qemu_stream_event e, struct stream_buf *out,
			   struct cause_ctx *cx)
{
	int rc = 0;
	switch (e) {
	case QEMU_STREAM_EV_BLOCKS:
		rc = put_blocks(r, out);
		r->ram_open = true;
		break;
	case QEMU_STREAM_EV_HOOK:
	case QEMU_STREAM_EV_RAM_EOS:
		if (!r->ram_open)
			rc = stream_put_u8(out, STREAM_RAM_PART);
		rc = rc ? rc : stream_put_be64(out, e == QEMU_STREAM_EV_HOOK ? STREAM_FLAG_HOOK : STREAM_FLAG_EOS);
		r->ram_open = e == QEMU_STREAM_EV_HOOK;
		break;
	case QEMU_STREAM_EV_SECTION:
		rc = put_device(r, out);
		break;
	case QEMU_STREAM_EV_EOF:
		rc = put_end(r, out, cx);
		break;
	case QEMU_STREAM_EV_PAGE:
	default:
		break;
	}
	if (rc && !cx->cause)
		cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "stream buffer: %s", strerror(-rc));
	return rc ? -cx->cause : 0;
}

int qemu_stream_translate(qemu_stream *r, const void *data, size_t len, struct stream_buf *out,
			  struct cause_ctx *cx)
{
	int rc = qemu_stream_feed(r, data, len);
	if (rc)
		return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "QEMU stream buffer: %s", strerror(-rc));
	/* each event consumes >= 1 byte, so the bytes fed bound the loop */
	for (size_t i = 0; i <= r->len + 1; i++) {
		enum qemu_stream_event e = qemu_stream_next(r);
		if (e == QEMU_STREAM_EV_NEED_MORE)
			return 0;
		if (e == QEMU_STREAM_EV_ERROR)
			return cause_set(cx, r->cause, "QEMU migration stream: %s", r->err);
		if (!r->hdr_out) {
			rc = stream_put_be32(out, STREAM_MAGIC);
			rc = rc ? rc : stream_put_be32(out, STREAM_VERSION);
			if (rc)
				return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "stream buffer: %s", strerror(-rc));
			r->hdr_out = true;
		}
		if ((rc = translate_event(r, e, out, cx)))
			return rc;
	}
	return cause_set(cx, CAUSE_INTERNAL, "QEMU stream reader made no progress");
}

int qemu_stream_filter(void *arg, const void *data, size_t len, struct stream_buf *out, struct cause_ctx *cx)
{
	return qemu_stream_translate(arg, data, len, out, cx);
}

int qemu_stream_filter_end(void *arg, struct cause_ctx *cx)
{
	qemu_stream *r = arg;
	int rc = qemu_stream_finish(r);
	if (rc == -CAUSE_QEMU_STREAM_TRUNCATED)
		return cause_set(cx, CAUSE_QEMU_STREAM_TRUNCATED, "the source disconnected mid-stream: %s",
				 qemu_stream_error(r));
	return 0;
}

/* ---- writer: migbed stream v1 -> QEMU 7.2 -M none ------------------------------------------ */

#define QW_RAM_SID 2u          /* the section ids of the captured stream */
#define QW_TIMER_SID 0u
#define QW_GLOBALSTATE_SID 4u
#define QW_RUNSTATE_BYTES 100u
#define QW_FLAG_MASK 0xfffu    /* flags live below TARGET_PAGE_SIZE */

/* The VM description QEMU 7.2 -M none sends (captured); its loader reads and skips it. */
static const char qw_vmdesc[] =
	"{\"page_size\": 4096, \"devices\": [{\"name\": \"timer\", \"instance_id\": 0, \"vmsd_name\": \"timer\", "
	"\"version\": 2, \"fields\": [{\"name\": \"cpu_ticks_offset\", \"type\": \"int64\", \"size\": 8}, "
	"{\"name\": \"unused\", \"type\": \"unused_buffer\", \"size\": 8}, {\"name\": \"cpu_clock_offset\", "
	"\"type\": \"int64\", \"size\": 8}]}, {\"name\": \"globalstate\", \"instance_id\": 0, \"vmsd_name\": "
	"\"globalstate\", \"version\": 1, \"fields\": [{\"name\": \"size\", \"type\": \"uint32\", \"size\": 4}, "
	"{\"name\": \"runstate\", \"type\": \"buffer\", \"size\": 100}]}]}";

enum qw_state { WS_HEADER, WS_TOP, WS_RAM, WS_DONE, WS_ERROR };

struct qemu_stream_writer {
	struct qemu_stream_writer_opts o;
	char runstate[QW_RUNSTATE_BYTES];
	struct stream_buf in;
	size_t pos;
	uint64_t consumed;          /* bytes dropped from in's front */
	enum qw_state st;
	bool ram_started, ram_in_start, ram_first_word, ram_ended;
	size_t n_blocks;
};

void qemu_stream_writer_opts_defaults(struct qemu_stream_writer_opts *o)
{
	memset(o, 0, sizeof *o);
	o->runstate = "running";
	o->vmdesc = true;
}

int qemu_stream_writer_new(const struct qemu_stream_writer_opts *o, qemu_stream_writer **out)
{
	struct qemu_stream_writer_opts d;
	qemu_stream_writer_opts_defaults(&d);
	if (o)
		d = *o;
	if (!out || !d.runstate || !*d.runstate || strlen(d.runstate) >= QW_RUNSTATE_BYTES)
		return -EINVAL;
	qemu_stream_writer *w = calloc(1, sizeof *w);
	if (!w)
		return -ENOMEM;
	w->o = d;
	memcpy(w->runstate, d.runstate, strlen(d.runstate));   /* zero padded, as QEMU's */
	w->o.runstate = w->runstate;
	*out = w;
	return 0;
}

void qemu_stream_writer_free(qemu_stream_writer *w)
{
	if (!w)
		return;
	stream_buf_free(&w->in);
	free(w);
}

static size_t w_avail(const qemu_stream_writer *w) { return w->in.len - w->pos; }
static const uint8_t *w_at(const qemu_stream_writer *w) { return w->in.data + w->pos; }

static int w_fail(qemu_stream_writer *w, struct cause_ctx *cx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int w_fail(qemu_stream_writer *w, struct cause_ctx *cx, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	w->st = WS_ERROR;
	return cause_set(cx, CAUSE_INTERNAL, "migbed stream -> QEMU stream: offset %llu: %s",
			 (unsigned long long)(w->consumed + w->pos), what);
}

static int put_section_start(struct stream_buf *out, uint8_t type, uint32_t sid, const char *name,
			     uint32_t version)
{
	size_t n = strlen(name);
	int rc = stream_put_u8(out, type);
	rc = rc ? rc : stream_put_be32(out, sid);
	rc = rc ? rc : stream_put_u8(out, (uint8_t)n);
	rc = rc ? rc : stream_put_bytes(out, name, n);
	rc = rc ? rc : stream_put_be32(out, 0);          /* instance id */
	return rc ? rc : stream_put_be32(out, version);
}

static int put_footer(struct stream_buf *out, uint32_t sid)
{
	int rc = stream_put_u8(out, QS_FOOTER);
	return rc ? rc : stream_put_be32(out, sid);
}

/* An empty END section closes RAM before the first non-RAM record. */
static int w_end_ram(qemu_stream_writer *w, struct stream_buf *out)
{
	if (w->ram_ended)
		return 0;
	w->ram_ended = true;
	int rc = stream_put_u8(out, QS_END);
	rc = rc ? rc : stream_put_be32(out, QW_RAM_SID);
	rc = rc ? rc : stream_put_be64(out, QEMU_RAM_FLAG_EOS);
	return rc ? rc : put_footer(out, QW_RAM_SID);
}

/* timer (zero offsets, as captured), globalstate, EOF, VM description. */
static int w_put_end(const qemu_stream_writer *w, struct stream_buf *out)
{
	static const uint8_t timer[24];
	size_t vn = sizeof qw_vmdesc - 1;
	int rc = put_section_start(out, QS_FULL, QW_TIMER_SID, "timer", 2);
	rc = rc ? rc : stream_put_bytes(out, timer, sizeof timer);
	rc = rc ? rc : put_footer(out, QW_TIMER_SID);
	rc = rc ? rc : put_section_start(out, QS_FULL, QW_GLOBALSTATE_SID, "globalstate", 1);
	rc = rc ? rc : stream_put_be32(out, (uint32_t)strlen(w->runstate) + 1);
	rc = rc ? rc : stream_put_bytes(out, w->runstate, QW_RUNSTATE_BYTES);
	rc = rc ? rc : put_footer(out, QW_GLOBALSTATE_SID);
	rc = rc ? rc : stream_put_u8(out, QS_EOF);
	if (rc || !w->o.vmdesc)
		return rc;
	rc = stream_put_u8(out, QS_VMDESC);
	rc = rc ? rc : stream_put_be32(out, (uint32_t)vn);
	return rc ? rc : stream_put_bytes(out, qw_vmdesc, vn);
}

/* The MEM_SIZE word and its block list, copied as is. 1 done, 0 need more, <0 error. */
static int w_mem_size(qemu_stream_writer *w, uint64_t word, struct stream_buf *out, struct cause_ctx *cx)
{
	uint64_t total = word & ~(uint64_t)QW_FLAG_MASK, sum = 0;
	size_t at = 8, n = 0;
	if (!w->ram_in_start || !w->ram_first_word)
		return w_fail(w, cx, "MEM_SIZE not first in RAM START");
	while (sum < total) {
		if (n == STREAM_MAX_BLOCKS)
			return w_fail(w, cx, "more than %d RAM blocks", STREAM_MAX_BLOCKS);
		if (w_avail(w) < at + 1 || w_avail(w) < at + 1 + w_at(w)[at] + 8)
			return 0;
		size_t nl = w_at(w)[at];
		uint64_t len = rd_be(w_at(w) + at + 1 + nl, 8);
		if (nl == 0 || len == 0 || len > total - sum)
			return w_fail(w, cx, "RAM block %zu: empty name or length 0x%llx past the total 0x%llx", n,
				      (unsigned long long)len, (unsigned long long)total);
		if (!name_ok(w_at(w) + at + 1, nl))   /* QEMU's reader (and this file's) refuses it */
			return w_fail(w, cx, "RAM block %zu: name not printable ASCII", n);
		for (size_t prev = 8; prev < at; prev += 1 + w_at(w)[prev] + 8)   /* so does a name twice */
			if (w_at(w)[prev] == nl && !memcmp(w_at(w) + prev + 1, w_at(w) + at + 1, nl))
				return w_fail(w, cx, "RAM block %zu: name listed twice", n);
		sum += len;
		at += 1 + nl + 8;
		n++;
	}
	if (n == 0)
		return w_fail(w, cx, "MEM_SIZE total is 0");
	int rc = stream_put_bytes(out, w_at(w), at);
	if (rc)
		return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "QEMU stream buffer: %s", strerror(-rc));
	w->n_blocks = n;
	w->ram_first_word = false;
	w->pos += at;
	return 1;
}

/* One be64 word of a RAM section. 1 done, 0 need more, <0 error. */
static int w_ram_word(qemu_stream_writer *w, struct stream_buf *out, struct cause_ctx *cx)
{
	if (w_avail(w) < 8)
		return 0;
	uint64_t word = rd_be(w_at(w), 8);
	if ((word & QW_FLAG_MASK) == STREAM_FLAG_MEM_SIZE)
		return w_mem_size(w, word, out, cx);
	if (w->ram_in_start && w->ram_first_word)
		return w_fail(w, cx, "RAM START does not begin with MEM_SIZE");
	int rc;
	if (word == STREAM_FLAG_HOOK) {
		rc = stream_put_be64(out, QEMU_RAM_FLAG_HOOK);
	} else if (word == STREAM_FLAG_MULTIFD_FLUSH) {
		rc = stream_put_be64(out, QEMU_RAM_FLAG_MULTIFD_FLUSH);
	} else if (word == STREAM_FLAG_EOS) {
		rc = stream_put_be64(out, QEMU_RAM_FLAG_EOS);
		rc = rc ? rc : put_footer(out, QW_RAM_SID);
		w->st = WS_TOP;
	} else {
		return w_fail(w, cx, "RAM flag word 0x%llx (migbed sends MEM_SIZE, HOOK, MULTIFD_FLUSH, EOS)",
			      (unsigned long long)word);
	}
	if (rc)
		return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "QEMU stream buffer: %s", strerror(-rc));
	w->pos += 8;
	return 1;
}

/* DEVICE / VERIFY: skipped whole (QEMU knows neither); they end RAM. */
static int w_skip_record(qemu_stream_writer *w, struct stream_buf *out, struct cause_ctx *cx)
{
	uint8_t tag = w_at(w)[0];
	if (w_avail(w) < 5)
		return 0;
	uint64_t n = rd_be(w_at(w) + 1, 4);
	if (tag == STREAM_VERIFY && n > STREAM_MAX_BLOCKS)
		return w_fail(w, cx, "VERIFY of %llu blocks", (unsigned long long)n);
	if (tag == STREAM_DEVICE && n > STREAM_DEVICE_MAX)
		return w_fail(w, cx, "DEVICE of %llu bytes", (unsigned long long)n);
	size_t need = 5 + (size_t)(tag == STREAM_DEVICE ? n + DIGEST_BYTES : n * DIGEST_BYTES);
	if (w_avail(w) < need)
		return 0;
	if (!w->ram_started)
		return w_fail(w, cx, "%s before RAM START", tag == STREAM_DEVICE ? "DEVICE" : "VERIFY");
	int rc = w_end_ram(w, out);
	if (rc)
		return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "QEMU stream buffer: %s", strerror(-rc));
	w->pos += need;
	return 1;
}

static int w_open_ram(qemu_stream_writer *w, uint8_t tag, struct stream_buf *out, struct cause_ctx *cx)
{
	int rc;
	if (tag == STREAM_RAM_START) {
		if (w->ram_started)
			return w_fail(w, cx, "second RAM START");
		rc = put_section_start(out, QS_START, QW_RAM_SID, "ram", QS_RAM_VERSION);
		w->ram_started = w->ram_first_word = true;
	} else {
		if (!w->ram_started || w->ram_ended)
			return w_fail(w, cx, "RAM PART %s", w->ram_ended ? "after the device state" : "before RAM START");
		rc = stream_put_u8(out, QS_PART);
		rc = rc ? rc : stream_put_be32(out, QW_RAM_SID);
	}
	if (rc)
		return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "QEMU stream buffer: %s", strerror(-rc));
	w->ram_in_start = tag == STREAM_RAM_START;
	w->st = WS_RAM;
	w->pos++;
	return 1;
}

static int w_top(qemu_stream_writer *w, struct stream_buf *out, struct cause_ctx *cx)
{
	if (w_avail(w) < 1)
		return 0;
	uint8_t tag = w_at(w)[0];
	int rc;
	switch (tag) {
	case STREAM_RAM_START:
	case STREAM_RAM_PART:
		return w_open_ram(w, tag, out, cx);
	case STREAM_DEVICE:
	case STREAM_VERIFY:
		return w_skip_record(w, out, cx);
	case STREAM_EOF:
		if (!w->ram_started)
			return w_fail(w, cx, "EOF before RAM START");
		rc = w_end_ram(w, out);
		if ((rc = rc ? rc : w_put_end(w, out)))
			return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "QEMU stream buffer: %s", strerror(-rc));
		w->pos++;
		w->st = WS_DONE;
		return 1;
	default:
		return w_fail(w, cx, "unknown record tag 0x%02x", tag);
	}
}

static int w_header(qemu_stream_writer *w, struct stream_buf *out, struct cause_ctx *cx)
{
	if (w_avail(w) < 8)
		return 0;
	if (rd_be(w_at(w), 4) != STREAM_MAGIC || rd_be(w_at(w) + 4, 4) != STREAM_VERSION)
		return w_fail(w, cx, "not a migbed stream header of version %u", STREAM_VERSION);
	int rc = stream_put_be32(out, QS_MAGIC);
	rc = rc ? rc : stream_put_be32(out, QS_VERSION);
	rc = rc ? rc : stream_put_u8(out, QS_CONFIGURATION);
	rc = rc ? rc : stream_put_be32(out, 4);
	rc = rc ? rc : stream_put_bytes(out, "none", 4);
	if (rc)
		return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "QEMU stream buffer: %s", strerror(-rc));
	w->pos += 8;
	w->st = WS_TOP;
	return 1;
}

/* One record: 1 done, 0 need more, <0 error. */
static int w_step(qemu_stream_writer *w, struct stream_buf *out, struct cause_ctx *cx)
{
	switch (w->st) {
	case WS_HEADER:
		return w_header(w, out, cx);
	case WS_TOP:
		return w_top(w, out, cx);
	case WS_RAM:
		return w_ram_word(w, out, cx);
	case WS_DONE:
		return w_avail(w) ? w_fail(w, cx, "bytes after EOF") : 0;
	case WS_ERROR:
	default:
		return cause_set(cx, CAUSE_INTERNAL, "migbed stream -> QEMU stream: already failed");
	}
}

int qemu_stream_write(qemu_stream_writer *w, const void *data, size_t len, struct stream_buf *out,
		      struct cause_ctx *cx)
{
	if (!w || !out || !cx || (!data && len))
		return -CAUSE_INTERNAL;
	if (w->pos > 0) {           /* drop what was translated */
		memmove(w->in.data, w->in.data + w->pos, w->in.len - w->pos);
		w->in.len -= w->pos;
		w->consumed += w->pos;
		w->pos = 0;
	}
	int rc = stream_put_bytes(&w->in, data, len);
	if (rc)
		return cause_set(cx, CAUSE_RESOURCE_EXHAUSTED, "migbed stream buffer: %s", strerror(-rc));
	/* every step consumes >= 1 byte, so the bytes held bound the loop */
	for (size_t i = 0; i <= w->in.len; i++) {
		rc = w_step(w, out, cx);
		if (rc <= 0)
			return rc;
		assert(w->pos <= w->in.len);
	}
	return cause_set(cx, CAUSE_INTERNAL, "migbed stream -> QEMU stream: no progress");
}

int qemu_stream_write_finish(qemu_stream_writer *w, struct cause_ctx *cx)
{
	if (w->st == WS_DONE && w_avail(w) == 0)
		return 0;
	if (w->st == WS_ERROR)
		return -(cx->cause ? cx->cause : CAUSE_INTERNAL);
	return w_fail(w, cx, "the migbed stream ended before its EOF");
}

int qemu_stream_out_filter(void *arg, const void *data, size_t len, struct stream_buf *out,
			   struct cause_ctx *cx)
{
	return qemu_stream_write(arg, data, len, out, cx);
}
