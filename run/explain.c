/* SPDX-License-Identifier: MIT */
/* explain - naming the migbed causes a QEMU log fits. See explain.h for the rules. */
#include "run/explain.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json_in.h"
#include "vocab/cause.h"
#include "vocab/vocab.h"

#define PAT_TOKS_MAX 32
#define PAT_ROW_MAX 400
#define PATS_MAX 320
#define LINE_PATS_MAX 48
#define LOG_LINES_MAX (1ul << 22)     /* physical lines read per log */
#define JSON_BYTES_MAX (1ul << 20)    /* a JSON log is read whole, up to this */
#define OBSERVED_BONUS 20
#define READ_BONUS 10
#define STATUS_FACTOR 3
#define AFTERMATH_DIVISOR 4

enum tok_kind { TOK_LIT, TOK_INT, TOK_UINT, TOK_HEX, TOK_STR };

struct tok {
	enum tok_kind kind;
	const char *s;   /* TOK_LIT: into the pattern's row */
	size_t len;
};

struct pattern {
	int cause;
	int side;                  /* observed and read rows: the side QEMU prints it on; else -1 */
	bool observed;             /* "[7.2 observed dst] text": a real QEMU's exact line */
	bool read;                 /* "[8.2 read dst] FORMAT": a format read from QEMU's source */
	bool status_line;          /* names a work-completion status: "ibv_poll_cq wc.status=" */
	bool aftermath;            /* a line every failure ends with: it says that, not why */
	char version[16];          /* "7.2"; "" */
	char note[96];             /* "wrong rkey", "trace"; "" */
	char row[PAT_ROW_MAX];     /* the row as in the table, tag included */
	struct tok tok[PAT_TOKS_MAX];
	int ntok;
	int anchor;                /* index of the longest literal token; -1 none */
	size_t lit_len;            /* literal characters: the pattern's specificity */
};

struct mline {                     /* a line some pattern matched */
	unsigned long line_no;
	char *text;
	unsigned marks;            /* side_marks_of(text) */
	int npats;
	short pats[LINE_PATS_MAX];
};

struct unplaced {
	unsigned long line_no;
	char *text;
};

struct log {
	char name[256];
	int side;                  /* given, or inferred by explain_rank; -1 unknown */
	bool given, inferred;
	bool json;                 /* query-migrate / QMP: a source's, unless its lines say */
	unsigned long lines, placed;
	unsigned long mark_votes[VOCAB_SIDE_COUNT];   /* unmatched lines' side marks */
	struct mline *m;
	size_t nm, cap;
	struct unplaced un[EXPLAIN_KEEP_UNPLACED];
	size_t n_un;
	unsigned long skipped_lines;   /* blank lines before the first text: line numbers start after */
};

struct acc {
	struct explain_cause pub;
	long side_score[VOCAB_SIDE_COUNT];
	struct explain_line lines[EXPLAIN_KEEP_LINES];
	char fields[EXPLAIN_KEEP_LINES][96];
	char versions[32];
	char notes[192];
};

struct explain {
	const struct pattern *pat;         /* the cause table compiled (compiled_table) */
	int npat;
	struct log logs[EXPLAIN_LOGS_MAX];
	size_t nlogs;
	struct acc acc[CAUSE_COUNT];
	bool seen[PATS_MAX];       /* an observed row some line of a log of its side matched */
	int order[CAUSE_COUNT];
	size_t ncauses;
	bool ranked;
};

/* --- patterns ------------------------------------------------------------------------------ */

/* The conversion at f (just past '%'): its token kind; *used = its length. */
static enum tok_kind conv_kind(const char *f, size_t *used)
{
	size_t i = 0;
	while (f[i] && strchr("-+ #0", f[i]))
		i++;
	while ((f[i] >= '0' && f[i] <= '9') || f[i] == '*' || f[i] == '.')
		i++;
	while (f[i] && strchr("hlzjtLq", f[i]))
		i++;
	char c = f[i];
	*used = i + (c ? 1 : 0);
	switch (c) {
	case 'd': case 'i': return TOK_INT;
	case 'u': return TOK_UINT;
	case 'x': case 'X': case 'p': return TOK_HEX;
	default: return TOK_STR;
	}
}

static int add_tok(struct pattern *p, enum tok_kind k, const char *s, size_t len)
{
	if (p->ntok == PAT_TOKS_MAX)
		return -E2BIG;
	if (k == TOK_LIT && p->ntok && p->tok[p->ntok - 1].kind == TOK_LIT &&
	    p->tok[p->ntok - 1].s + p->tok[p->ntok - 1].len == s) {
		p->tok[p->ntok - 1].len += len;         /* "%%" joins its neighbours */
		return 0;
	}
	p->tok[p->ntok++] = (struct tok){ k, s, len };
	return 0;
}

/* Tokens of text: a printf format, or (literal) the exact text of an observed line. */
static int tokenize(struct pattern *p, const char *text, bool literal)
{
	const char *s = text;
	while (*s) {
		const char *pc = literal ? NULL : strchr(s, '%');
		if (!pc) {
			if (add_tok(p, TOK_LIT, s, strlen(s)))
				return -E2BIG;
			break;
		}
		if (pc > s && add_tok(p, TOK_LIT, s, (size_t)(pc - s)))
			return -E2BIG;
		if (pc[1] == '%') {
			if (add_tok(p, TOK_LIT, pc + 1, 1))
				return -E2BIG;
			s = pc + 2;
			continue;
		}
		size_t used;
		enum tok_kind k = conv_kind(pc + 1, &used);
		if (add_tok(p, k, pc, 0))
			return -E2BIG;
		s = pc + 1 + used;
	}
	p->anchor = -1;
	for (int i = 0; i < p->ntok; i++) {
		if (p->tok[i].kind != TOK_LIT)
			continue;
		p->lit_len += p->tok[i].len;
		if (p->anchor < 0 || p->tok[i].len > p->tok[p->anchor].len)
			p->anchor = i;
	}
	return p->lit_len ? 0 : -EINVAL;
}

/* "7.2 observed dst, wrong rkey" or "8.2 read src" -> version, side, note, and which kind.
 * -EINVAL if it is not that shape. */
static int parse_observed_tag(struct pattern *p, const char *tag, size_t n)
{
	char t[160];
	if (n >= sizeof t)
		return -EINVAL;
	memcpy(t, tag, n);
	t[n] = '\0';
	const char *word = " observed ";
	char *obs = strstr(t, word);
	if (!obs) {
		word = " read ";
		obs = strstr(t, word);
	}
	if (!obs || obs == t || (size_t)(obs - t) >= sizeof p->version)
		return -EINVAL;
	memcpy(p->version, t, (size_t)(obs - t));
	p->version[obs - t] = '\0';
	char *sd = obs + strlen(word);
	size_t sl = strcspn(sd, ",: ");
	char side[8];
	if (sl >= sizeof side)
		return -EINVAL;
	memcpy(side, sd, sl);
	side[sl] = '\0';
	p->side = vocab_side_lookup(side);
	if (p->side < 0)
		return -EINVAL;
	const char *note = sd + sl;
	while (*note && strchr(",: ", *note))
		note++;
	snprintf(p->note, sizeof p->note, "%s", note);
	p->observed = word[1] == 'o';
	p->read = !p->observed;
	return 0;
}

/* What QEMU prints once a migration has failed, whatever the cause: the lines weigh a quarter. */
static const char *const aftermath[] = {
	"load of migration failed", "RDMA is in an error state waiting migration to abort!",
	"Early error. Sending error.", "error while loading state",
};

/* Compile one row (not NUL-terminated: len bytes) into p. 1 compiled, 0 commentary, <0 bad. */
static int compile_row(struct pattern *p, int cause, const char *row, size_t len)
{
	memset(p, 0, sizeof *p);
	p->cause = cause;
	p->side = -1;
	if (len >= sizeof p->row)
		return -E2BIG;
	memcpy(p->row, row, len);
	p->row[len] = '\0';
	const char *text = p->row;
	if (p->row[0] == '[' || p->row[0] == '(') {
		const char *close = strchr(p->row, p->row[0] == '[' ? ']' : ')');
		if (!close)
			return -EINVAL;
		text = close + 1;
		while (*text == ' ')
			text++;
		if (!*text)
			return 0;                         /* "(...)": commentary */
		size_t tl = (size_t)(close - p->row - 1);
		if (p->row[0] == '[') {
			if (parse_observed_tag(p, p->row + 1, tl))
				return -EINVAL;
		} else if (tl > 5 && !strncmp(p->row + 1, "QEMU ", 5)) {
			snprintf(p->version, sizeof p->version, "%.*s", (int)(tl - 5), p->row + 6);
		} else {
			snprintf(p->note, sizeof p->note, "%.*s", (int)tl, p->row + 1);
		}
	}
	p->status_line = strstr(text, "wc.status=") != NULL;
	for (size_t i = 0; i < sizeof aftermath / sizeof aftermath[0]; i++)
		p->aftermath |= !strncmp(text, aftermath[i], strlen(aftermath[i]));
	int rc = tokenize(p, text, p->observed);
	return rc ? rc : 1;
}

static int compile_all(struct pattern *pat, int *npat)
{
	*npat = 0;
	for (int c = CAUSE_FIRST; c < CAUSE_END; c++) {
		const char *all = cause_qemu(c);
		while (all && *all) {
			const char *end = strstr(all, " | ");
			size_t len = end ? (size_t)(end - all) : strlen(all);
			if (*npat == PATS_MAX)
				return -E2BIG;
			int rc = compile_row(&pat[*npat], c, all, len);
			if (rc < 0)
				return rc;
			*npat += rc;
			all += len + (end ? 3 : 0);
		}
	}
	return 0;
}

/* The cause table compiled once per process (it is constant): every explain shares it, read
 * only. Never freed (reachable to the end, as the table it is built from). Not thread-safe on
 * the first call; migbed calls it from one thread. */
static int compiled_table(const struct pattern **pat, int *npat)
{
	static struct pattern *table;
	static int n;
	if (!table) {
		struct pattern *t = calloc(PATS_MAX, sizeof *t);
		if (!t)
			return -ENOMEM;
		int rc = compile_all(t, &n);
		if (rc) {
			free(t);
			return rc;
		}
		table = t;
	}
	*pat = table;
	*npat = n;
	return 0;
}

/* --- matching ------------------------------------------------------------------------------ */

struct capture {
	const char *at[PAT_TOKS_MAX];
	size_t len[PAT_TOKS_MAX];
};

static size_t span_of(enum tok_kind k, const char *s)
{
	size_t i = 0;
	if (k == TOK_INT && s[0] == '-')
		i++;
	size_t d = i;
	while (s[i] && (k == TOK_HEX ? strchr("0123456789abcdefABCDEFx", s[i]) != NULL : (s[i] >= '0' && s[i] <= '9')))
		i++;
	return i > d ? i : 0;
}

/* The first place at or after s where the literal lit (len bytes, not NUL-terminated) starts;
 * NULL if none. */
static const char *find_lit(const char *s, const char *lit, size_t len)
{
	for (; (s = strchr(s, lit[0])); s++)
		if (!strncmp(s, lit, len))
			return s;
	return NULL;
}

/* What match_from already found not to match, in the (pattern, line) pair being matched: token
 * ti from offset off of the line failed if fail_at[ti][off] == fail_gen. Whether the rest of a
 * pattern matches from a place does not depend on how the tokens before it got there, so each
 * (token, offset) is tried once: a pattern of k adjacent %u or %s against a line of n digits is
 * then about k * n * n steps, not n choose k (the explain fuzzer's timeout: 1.2 s for one
 * 313-byte input before). Lines are cut to EXPLAIN_LINE_MAX before matching. One thread, as the
 * compiled table. */
static uint32_t fail_at[PAT_TOKS_MAX][EXPLAIN_LINE_MAX];
static uint32_t fail_gen;
static const char *fail_base;
static unsigned long match_steps;   /* match_step calls since the last explain_row_* began */

unsigned long explain_match_steps(void)
{
	return match_steps;
}

static void fail_reset(const char *line)
{
	if (++fail_gen == 0) {   /* wrapped: stamps of 2^32 pairs ago would look current */
		memset(fail_at, 0, sizeof fail_at);
		fail_gen = 1;
	}
	fail_base = line;
}

static bool match_step(const struct pattern *p, int ti, const char *s, struct capture *cap);

/* Does p match s from token ti on (the rest of the line may follow)? Depth: ntok. */
static bool match_from(const struct pattern *p, int ti, const char *s, struct capture *cap)
{
	if (ti == p->ntok)
		return true;
	size_t off = (size_t)(s - fail_base);
	assert(off < EXPLAIN_LINE_MAX);
	if (fail_at[ti][off] == fail_gen)
		return false;
	match_steps++;
	if (match_step(p, ti, s, cap))
		return true;
	fail_at[ti][off] = fail_gen;
	return false;
}

static bool match_step(const struct pattern *p, int ti, const char *s, struct capture *cap)
{
	const struct tok *t = &p->tok[ti];
	cap->at[ti] = s;
	if (t->kind == TOK_LIT) {
		cap->len[ti] = t->len;
		return !strncmp(s, t->s, t->len) && match_from(p, ti + 1, s + t->len, cap);
	}
	size_t rest = strlen(s);
	if (t->kind == TOK_STR && ti + 1 < p->ntok && p->tok[ti + 1].kind == TOK_LIT) {
		/* shortest first: only where the literal after it starts can the rest match */
		const struct tok *next = &p->tok[ti + 1];
		for (const char *q = s; (q = find_lit(q, next->s, next->len)); q++) {
			cap->len[ti] = (size_t)(q - s);
			if (match_from(p, ti + 1, q, cap))
				return true;
		}
		return false;
	}
	if (t->kind == TOK_STR) {                  /* shortest first: the token after it decides */
		for (size_t n = ti + 1 == p->ntok ? rest : 0; n <= rest; n++) {
			cap->len[ti] = n;
			if (match_from(p, ti + 1, s + n, cap))
				return true;
		}
		return false;
	}
	for (size_t n = span_of(t->kind, s); n > 0; n--) {   /* a number: longest first */
		cap->len[ti] = n;
		if (match_from(p, ti + 1, s + n, cap))
			return true;
	}
	return false;
}

/* The first place in line p matches (the leftmost start, each token as match_from takes it).
 * Only starts that can match are tried: none without the longest literal; where the first
 * token is a literal, where it occurs; where it is a %s, the line's start alone (a %s from
 * there takes whatever a later start would skip). */
static bool match_line(const struct pattern *p, const char *line, struct capture *cap)
{
	assert(strlen(line) < EXPLAIN_LINE_MAX);
	if (p->anchor >= 0 && !find_lit(line, p->tok[p->anchor].s, p->tok[p->anchor].len))
		return false;
	fail_reset(line);
	const struct tok *t0 = &p->tok[0];
	if (t0->kind == TOK_LIT) {
		for (const char *s = line; (s = find_lit(s, t0->s, t0->len)); s++)
			if (match_from(p, 0, s, cap))
				return true;
		return false;
	}
	if (t0->kind == TOK_STR)
		return *line && match_from(p, 0, line, cap);
	for (const char *s = line; *s; s++)
		if (match_from(p, 0, s, cap))
			return true;
	return false;
}

static void fields_text(const struct pattern *p, const struct capture *cap, char *out, size_t n)
{
	size_t w = 0;
	out[0] = '\0';
	for (int i = 0; i < p->ntok && w + 1 < n; i++) {
		if (p->tok[i].kind == TOK_LIT)
			continue;
		int k = snprintf(out + w, n - w, "%s%.*s", w ? ", " : "", (int)cap->len[i], cap->at[i]);
		if (k < 0)
			break;
		w += (size_t)k;
	}
}

/* text cut to a line's bound, as a log's lines are (match_line's memo covers that much). */
static const char *cut_line(const char *text, char *buf)
{
	size_t n = strlen(text);
	if (n < EXPLAIN_LINE_MAX)
		return text;
	memcpy(buf, text, EXPLAIN_LINE_MAX - 1);
	buf[EXPLAIN_LINE_MAX - 1] = '\0';
	return buf;
}

int explain_row_match(const char *row, const char *text, char *fields, size_t n)
{
	static struct pattern p;               /* large: not on the stack */
	static char cut[EXPLAIN_LINE_MAX];
	struct capture cap;
	match_steps = 0;
	int rc = compile_row(&p, CAUSE_FIRST, row, strlen(row));
	if (rc <= 0)
		return -1;
	if (!match_line(&p, cut_line(text, cut), &cap))
		return 0;
	if (fields && n)
		fields_text(&p, &cap, fields, n);
	return 1;
}

/* The decimal digits at s (len bytes, an optional '-') are a value an int holds. */
static bool fits_int(const char *s, size_t len)
{
	char buf[24];
	if (len >= sizeof buf)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	long long v = strtoll(buf, NULL, 10);
	return errno == 0 && v >= INT32_MIN && v <= INT32_MAX;
}

int explain_row_fill(const char *format, const char *text, char *out, size_t n)
{
	static struct pattern p;               /* large: not on the stack */
	struct capture cap;
	if (!out || !n || !format || !text || format[0] == '[' || format[0] == '(')
		return -1;
	static char cut[EXPLAIN_LINE_MAX];
	match_steps = 0;
	int rc = compile_row(&p, CAUSE_FIRST, format, strlen(format));
	if (rc <= 0)
		return -1;
	if (!match_line(&p, cut_line(text, cut), &cap))
		return 0;
	const char *from = cap.at[0];
	size_t len = 0;
	for (int i = 0; i < p.ntok; i++) {
		size_t tl = cap.len[i];
		if (p.tok[i].kind == TOK_INT && !fits_int(cap.at[i], tl))
			return 0;   /* QEMU's %d of a larger uint32: what it prints is not known here */
		if (i + 1 == p.ntok && p.tok[i].kind == TOK_STR) {   /* a last %s: up to migbed's " (" */
			const char *paren = strstr(cap.at[i], " (");
			if (paren && (size_t)(paren - cap.at[i]) < tl)
				tl = (size_t)(paren - cap.at[i]);
		}
		len = (size_t)(cap.at[i] - from) + tl;
	}
	if (len >= n)
		len = n - 1;
	memcpy(out, from, len);
	out[len] = '\0';
	return 1;
}

/* --- reading logs -------------------------------------------------------------------------- */

struct explain *explain_new(void)
{
	struct explain *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	if (compiled_table(&x->pat, &x->npat)) {
		explain_free(x);
		return NULL;
	}
	return x;
}

void explain_free(struct explain *x)
{
	if (!x)
		return;
	for (size_t k = 0; k < x->nlogs; k++) {
		struct log *l = &x->logs[k];
		for (size_t i = 0; i < l->nm; i++)
			free(l->m[i].text);
		free(l->m);
		for (size_t i = 0; i < l->n_un; i++)
			free(l->un[i].text);
	}
	free(x);
}

static void keep_unplaced(struct log *l, unsigned long line_no, const char *text)
{
	if (l->n_un == EXPLAIN_KEEP_UNPLACED)
		return;
	char *t = strdup(text);
	if (!t)
		return;                                  /* only the listing loses it */
	l->un[l->n_un++] = (struct unplaced){ line_no, t };
}

/* Lines only one side prints, beyond the observed rows (which say their side themselves). */
static const struct {
	const char *text;
	enum vocab_side side;
} side_marks[] = {
	{ "load of migration failed", VOCAB_SIDE_DST },
	{ "error while loading state", VOCAB_SIDE_DST },
	{ "receive cm event, cm event is", VOCAB_SIDE_DST },
	{ "failed to save SaveStateEntry", VOCAB_SIDE_SRC },
	{ "receive cm event while wait comp channel", VOCAB_SIDE_SRC },
	{ "connecting to destination", VOCAB_SIDE_SRC },
	{ "Was expecting a REGISTER RESULT", VOCAB_SIDE_SRC },
	{ "Was expecting a RAM BLOCKS RESULT", VOCAB_SIDE_SRC },
	{ "Was expecting a QEMU FILE", VOCAB_SIDE_DST },
	{ "Wanted wrid WRITE RDMA", VOCAB_SIDE_SRC },
	{ "qemu_rdma_accept", VOCAB_SIDE_DST },
	{ "dest_init RDMA Device opened", VOCAB_SIDE_DST },
	{ "source_resolve_host RDMA Device opened", VOCAB_SIDE_SRC },
};

/* The sides the marks above give text: a bit per side. */
static unsigned side_marks_of(const char *text)
{
	unsigned bits = 0;
	for (size_t k = 0; k < sizeof side_marks / sizeof side_marks[0]; k++)
		if (strstr(text, side_marks[k].text))
			bits |= 1u << side_marks[k].side;
	return bits;
}



/* Match one line against every pattern (any side: the side is decided later). */
static int add_line(struct explain *x, struct log *l, unsigned long line_no, const char *text)
{
	struct mline m = { .line_no = line_no, .marks = side_marks_of(text) };
	struct capture cap;
	l->lines++;
	for (int i = 0; i < x->npat && m.npats < LINE_PATS_MAX; i++)
		if (match_line(&x->pat[i], text, &cap))
			m.pats[m.npats++] = (short)i;
	if (!m.npats) {
		for (int sd = 0; sd < VOCAB_SIDE_COUNT; sd++)
			l->mark_votes[sd] += (m.marks >> sd) & 1u;
		keep_unplaced(l, line_no, text);
		return 0;
	}
	if (l->nm == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 64;
		struct mline *nm = realloc(l->m, nc * sizeof *nm);
		if (!nm)
			return -ENOMEM;
		l->m = nm;
		l->cap = nc;
	}
	m.text = strdup(text);
	if (!m.text)
		return -ENOMEM;
	l->m[l->nm++] = m;
	return 0;
}

/* A physical line: newline and CR cut, bounded, blank lines skipped. */
static int add_raw_line(struct explain *x, struct log *l, unsigned long line_no, char *s)
{
	size_t n = strcspn(s, "\r\n");
	if (n >= EXPLAIN_LINE_MAX)
		n = EXPLAIN_LINE_MAX - 1;
	s[n] = '\0';
	if (s[strspn(s, " \t")] == '\0')
		return 0;
	return add_line(x, l, line_no, s);
}

/* Where in buf[0..at) a JSON document starts: its line (after the skipped blank lines) and
 * column (0-based, as jansson counts), for citations and errors. */
static void json_pos(const struct log *l, const char *buf, size_t at, unsigned long *line, size_t *col)
{
	size_t bol = 0;
	*line = 1 + l->skipped_lines;
	for (size_t i = 0; i < at; i++)
		if (buf[i] == '\n') {
			++*line;
			bol = i + 1;
		}
	*col = at - bol;
}

struct json_walk {
	struct explain *x;
	struct log *l;
	const char *text;      /* the document's text: a key's line is found in it */
	size_t len, cursor;    /* the text is searched forward from cursor, keys in document order */
	unsigned long line0;   /* the line the document's text starts on */
};

/* The line of the next `"key"` in the document's text (jansson keeps no positions of values). */
static unsigned long key_line(struct json_walk *w, const char *key)
{
	char pat[16];
	size_t pl = (size_t)snprintf(pat, sizeof pat, "\"%s\"", key);
	unsigned long line = w->line0;
	for (size_t i = 0; i < w->cursor; i++)
		line += w->text[i] == '\n';
	for (size_t i = w->cursor; i + pl <= w->len; i++) {
		if (!memcmp(w->text + i, pat, pl)) {
			w->cursor = i + pl;
			return line;
		}
		line += w->text[i] == '\n';
	}
	return w->line0;
}

/* query-migrate / QMP replies: every "error-desc" and "desc" string, at any depth, in document
 * order, is a line (control characters as spaces), cited by the line its key is on. */
static int walk_json(struct json_walk *w, const json_t *v)
{
	const char *key;
	json_t *m;
	size_t i;
	int rc = 0;
	if (json_is_array(v))
		json_array_foreach(v, i, m)
			if (!rc)
				rc = walk_json(w, m);
	if (!json_is_object(v))
		return rc;
	json_object_foreach((json_t *)v, key, m) {
		if (rc)
			break;
		if ((!strcmp(key, "error-desc") || !strcmp(key, "desc")) && json_is_string(m)) {
			char text[EXPLAIN_LINE_MAX];
			snprintf(text, sizeof text, "%s", json_string_value(m));
			for (char *c = text; *c; c++)
				if ((unsigned char)*c < 0x20)
					*c = ' ';
			rc = add_line(w->x, w->l, key_line(w, key), text);
		} else {
			rc = walk_json(w, m);
		}
	}
	return rc;
}

/* The log's JSON documents, one after another (QMP replies one a line, or one query-migrate
 * reply over many lines), read by the one JSON reader: a document that is not JSON is refused
 * as FILE:LINE:COLUMN. */
static int add_json(struct explain *x, struct log *l, const char *buf, size_t n, struct diag *d)
{
	size_t at = 0;
	while ((at += strspn(buf + at, " \t\r\n")) < n) {
		json_error_t e;
		json_t *doc = json_loadb(buf + at, n - at, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &e);
		unsigned long line;
		size_t col;
		json_pos(l, buf, at, &line, &col);
		if (!doc)
			return diag_set(d, "%s:%lu:%zu: %s", l->name, line + (unsigned long)(e.line > 0 ? e.line - 1 : 0),
					(e.line == 1 ? col : 0) + (size_t)(e.column > 0 ? e.column : 0), e.text);
		struct json_walk w = { x, l, buf + at, e.position, 0, line };
		int rc = walk_json(&w, doc);
		json_decref(doc);
		if (rc)
			return diag_set(d, "%s: out of memory", l->name), rc;
		at += e.position;
	}
	return 0;
}

static int read_json(struct explain *x, struct log *l, FILE *f, struct diag *d)
{
	char *buf = malloc(JSON_BYTES_MAX + 1);
	if (!buf)
		return diag_set(d, "%s: out of memory", l->name), -ENOMEM;
	size_t n = fread(buf, 1, JSON_BYTES_MAX, f);
	int rc = 0;
	if (ferror(f))
		rc = diag_set(d, "%s: read error", l->name);
	else if (!feof(f) && fgetc(f) != EOF)
		rc = diag_set(d, "%s: a JSON log over %lu bytes", l->name, JSON_BYTES_MAX);
	if (!rc) {
		buf[n] = '\0';
		rc = add_json(x, l, buf, n, d);
	}
	free(buf);
	return rc;
}

static int read_text(struct explain *x, struct log *l, FILE *f, int first, struct diag *d)
{
	char *buf = NULL;
	size_t cap = 0;
	unsigned long line_no = l->skipped_lines;
	int rc = 0;
	if (first != EOF && ungetc(first, f) == EOF)
		return diag_set(d, "%s: read error", l->name);
	while (getline(&buf, &cap, f) >= 0) {
		if (++line_no > LOG_LINES_MAX) {
			rc = diag_set(d, "%s: more than %lu lines", l->name, LOG_LINES_MAX);
			goto out;
		}
		rc = add_raw_line(x, l, line_no, buf);
		if (rc) {
			diag_set(d, "%s:%lu: out of memory", l->name, line_no);
			goto out;
		}
	}
	if (ferror(f))
		rc = diag_set(d, "%s: read error", l->name);
out:
	free(buf);
	return rc;
}

int explain_add(struct explain *x, const char *name, int side, FILE *f, struct diag *d)
{
	if (!x || !name || !f || x->ranked)
		return diag_set(d, "explain: bad call");
	if (x->nlogs == EXPLAIN_LOGS_MAX)
		return diag_set(d, "%s: at most %d logs", name, EXPLAIN_LOGS_MAX), -E2BIG;
	if (side != EXPLAIN_SIDE_ANY && (side < 0 || side >= VOCAB_SIDE_COUNT))
		return diag_set(d, "%s: bad side", name);
	struct log *l = &x->logs[x->nlogs++];
	snprintf(l->name, sizeof l->name, "%s", name);
	l->side = side;
	l->given = side != EXPLAIN_SIDE_ANY;
	int c;
	do
		l->skipped_lines += (c = fgetc(f)) == '\n';
	while (c == ' ' || c == '\t' || c == '\r' || c == '\n');
	if (c == '{') {
		l->json = true;
		if (ungetc(c, f) == EOF)
			return diag_set(d, "%s: read error", name);
		return read_json(x, l, f, d);
	}
	return read_text(x, l, f, c, d);
}

/* --- ranking -------------------------------------------------------------------------------- */

static int infer_side(const struct explain *x, const struct log *l)
{
	unsigned long votes[VOCAB_SIDE_COUNT];
	memcpy(votes, l->mark_votes, sizeof votes);
	for (size_t i = 0; i < l->nm; i++) {
		unsigned seen = l->m[i].marks;
		for (int j = 0; j < l->m[i].npats; j++) {
			const struct pattern *p = &x->pat[l->m[i].pats[j]];
			if (p->observed || p->read)
				seen |= 1u << p->side;
		}
		for (int s = 0; s < VOCAB_SIDE_COUNT; s++)
			votes[s] += (seen >> s) & 1u;
	}
	if (votes[VOCAB_SIDE_SRC] > votes[VOCAB_SIDE_DST])
		return VOCAB_SIDE_SRC;
	if (votes[VOCAB_SIDE_DST] > votes[VOCAB_SIDE_SRC])
		return VOCAB_SIDE_DST;
	return -1;
}

static void infer_sides(struct explain *x)
{
	for (size_t k = 0; k < x->nlogs; k++) {
		struct log *l = &x->logs[k];
		if (l->given)
			continue;
		l->side = infer_side(x, l);
		if (l->side < 0 && l->json)
			l->side = VOCAB_SIDE_SRC;   /* a failed destination exits: query-migrate is the source's */
		l->inferred = l->side >= 0;
	}
	if (x->nlogs != 2)
		return;
	struct log *a = &x->logs[0], *b = &x->logs[1];
	/* the content said nothing: two logs are the source's then the destination's */
	if (a->side < 0 && b->side < 0) {
		a->side = VOCAB_SIDE_SRC;
		b->side = VOCAB_SIDE_DST;
	} else if (a->side < 0) {
		a->side = b->side == VOCAB_SIDE_SRC ? VOCAB_SIDE_DST : VOCAB_SIDE_SRC;
	} else if (b->side < 0) {
		b->side = a->side == VOCAB_SIDE_SRC ? VOCAB_SIDE_DST : VOCAB_SIDE_SRC;
	}
}

/* A pattern's weight on a line of a log of this side; 0 when it does not apply. */
static long weight(const struct pattern *p, int side)
{
	if ((p->observed || p->read) && side >= 0 && p->side != side)
		return 0;
	long w = (long)p->lit_len;
	if (p->observed)
		w += side >= 0 ? OBSERVED_BONUS : OBSERVED_BONUS / 2;
	if (p->read)
		w += side >= 0 ? READ_BONUS : READ_BONUS / 2;
	if (p->aftermath)
		w /= AFTERMATH_DIVISOR;
	return p->status_line ? w * STATUS_FACTOR : w;
}

static void add_word(char *set, size_t n, const char *word, const char *sep)
{
	if (!word[0])
		return;
	for (const char *s = set; (s = strstr(s, word)); s++) {   /* already there */
		size_t wl = strlen(word);
		if ((s == set || s[-1] == ' ' || s[-1] == ';') && (!s[wl] || s[wl] == ';' || s[wl] == ' '))
			return;
	}
	size_t used = strlen(set);
	snprintf(set + used, n - used, "%s%s", used ? sep : "", word);
}

static void credit(struct explain *x, size_t k, const struct mline *m, int ci, int pi, long w)
{
	struct acc *a = &x->acc[ci];
	const struct log *l = &x->logs[k];
	const struct pattern *p = &x->pat[pi];
	a->pub.score += w;
	if (l->side >= 0)
		a->side_score[l->side] += w;
	else if (p->observed || p->read)
		a->side_score[p->side] += w;
	if (p->observed || p->read) {
		add_word(a->versions, sizeof a->versions, p->version, " ");
		add_word(a->notes, sizeof a->notes, p->note, "; ");
	}
	if (strstr(m->text, "ibv_poll_cq "))
		a->pub.wc_status_lines = true;
	if (a->pub.n_lines < EXPLAIN_KEEP_LINES) {
		size_t j = a->pub.n_lines;
		struct capture cap;
		a->fields[j][0] = '\0';
		if (match_line(p, m->text, &cap))
			fields_text(p, &cap, a->fields[j], sizeof a->fields[j]);
		a->lines[j] = (struct explain_line){ .log = (int)k, .line_no = m->line_no, .text = m->text,
						     .row = p->row, .fields = a->fields[j], .observed = p->observed,
						     .read = p->read };
	}
	a->pub.n_lines++;
}

/* One line: its most specific reading(s) take it, each the whole weight. Returns 1 if placed. */
static int score_line(struct explain *x, size_t k, const struct mline *m)
{
	long best[CAUSE_COUNT] = { 0 };
	int bestpat[CAUSE_COUNT];
	long top = 0;
	for (int j = 0; j < m->npats; j++) {
		const struct pattern *p = &x->pat[m->pats[j]];
		long w = weight(p, x->logs[k].side);
		if (p->observed && p->side == x->logs[k].side)
			x->seen[m->pats[j]] = true;
		int ci = p->cause - CAUSE_FIRST;
		if (w > best[ci]) {
			best[ci] = w;
			bestpat[ci] = m->pats[j];
		}
		if (w > top)
			top = w;
	}
	if (!top)
		return 0;
	for (int ci = 0; ci < CAUSE_COUNT; ci++)
		if (best[ci] == top)
			credit(x, k, m, ci, bestpat[ci], top);
	return 1;
}

/* Per cause: its observed rows of a side some log is of that no line matched. Of two causes
 * the lines read equally well, the one QEMU would have printed more of is the likelier. */
static void count_missing(struct explain *x)
{
	bool have[VOCAB_SIDE_COUNT] = { false };
	for (size_t k = 0; k < x->nlogs; k++)
		if (x->logs[k].side >= 0)
			have[x->logs[k].side] = true;
	for (int i = 0; i < x->npat; i++) {
		const struct pattern *p = &x->pat[i];
		if (p->observed && have[p->side] && !x->seen[i])
			x->acc[p->cause - CAUSE_FIRST].pub.missing++;
	}
}

static const struct explain *sort_x;   /* qsort has no context argument in C11 */

static int by_rank(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct acc *A = &sort_x->acc[a], *B = &sort_x->acc[b];
	if (A->pub.score != B->pub.score)
		return A->pub.score > B->pub.score ? -1 : 1;
	if (A->pub.missing != B->pub.missing)
		return A->pub.missing < B->pub.missing ? -1 : 1;
	int ca = cause_is_consequence(a + CAUSE_FIRST), cb = cause_is_consequence(b + CAUSE_FIRST);
	if (ca != cb)
		return ca - cb;
	return a - b;
}

static int by_line(const void *pa, const void *pb)
{
	const struct unplaced *a = pa, *b = pb;
	return a->line_no < b->line_no ? -1 : a->line_no > b->line_no;
}

size_t explain_rank(struct explain *x)
{
	if (!x || x->ranked)
		return x ? x->ncauses : 0;
	x->ranked = true;
	infer_sides(x);
	for (size_t k = 0; k < x->nlogs; k++) {
		struct log *l = &x->logs[k];
		for (size_t i = 0; i < l->nm; i++) {
			if (score_line(x, k, &l->m[i]))
				l->placed++;
			else
				keep_unplaced(l, l->m[i].line_no, l->m[i].text);
		}
		qsort(l->un, l->n_un, sizeof l->un[0], by_line);
	}
	count_missing(x);
	for (int ci = 0; ci < CAUSE_COUNT; ci++) {
		struct acc *a = &x->acc[ci];
		if (!a->pub.score)
			continue;
		a->pub.cause = ci + CAUSE_FIRST;
		a->pub.side = a->side_score[VOCAB_SIDE_SRC] >= a->side_score[VOCAB_SIDE_DST] ? VOCAB_SIDE_SRC : VOCAB_SIDE_DST;
		if (!a->side_score[VOCAB_SIDE_SRC] && !a->side_score[VOCAB_SIDE_DST])
			a->pub.side = -1;
		a->pub.versions = a->versions;
		a->pub.notes = a->notes;
		x->order[x->ncauses++] = ci;
	}
	sort_x = x;
	qsort(x->order, x->ncauses, sizeof x->order[0], by_rank);
	sort_x = NULL;
	return x->ncauses;
}

const struct explain_cause *explain_cause_at(const struct explain *x, size_t i)
{
	return x && i < x->ncauses ? &x->acc[x->order[i]].pub : NULL;
}

const struct explain_line *explain_cause_line(const struct explain *x, size_t i, size_t j)
{
	const struct explain_cause *c = explain_cause_at(x, i);
	if (!c || j >= c->n_lines || j >= EXPLAIN_KEEP_LINES)
		return NULL;
	return &x->acc[x->order[i]].lines[j];
}

size_t explain_log_count(const struct explain *x)
{
	return x ? x->nlogs : 0;
}

const char *explain_log_name(const struct explain *x, size_t k)
{
	return x && k < x->nlogs ? x->logs[k].name : NULL;
}

int explain_log_side(const struct explain *x, size_t k, bool *inferred)
{
	if (!x || k >= x->nlogs)
		return -1;
	if (inferred)
		*inferred = x->logs[k].inferred;
	return x->logs[k].side;
}

unsigned long explain_log_lines(const struct explain *x, size_t k, unsigned long *placed)
{
	if (!x || k >= x->nlogs)
		return 0;
	if (placed)
		*placed = x->logs[k].placed;
	return x->logs[k].lines;
}

const char *explain_log_unplaced(const struct explain *x, size_t k, size_t j, unsigned long *line_no)
{
	if (!x || k >= x->nlogs || j >= x->logs[k].n_un)
		return NULL;
	if (line_no)
		*line_no = x->logs[k].un[j].line_no;
	return x->logs[k].un[j].text;
}

const char *explain_log_line(const struct explain *x, size_t k, size_t j, unsigned long *line_no)
{
	if (!x || k >= x->nlogs || j >= x->logs[k].nm)
		return NULL;
	if (line_no)
		*line_no = x->logs[k].m[j].line_no;
	return x->logs[k].m[j].text;
}
