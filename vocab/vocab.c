/* SPDX-License-Identifier: MIT */
/* vocab - name tables and parsers generated from the X-macro lists (see vocab.h). */
#include "vocab/vocab.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

/* Every table is dense: an entry's value is its position (so arrays index by value). */
#define POS_CHECK_(NAME, v, ...) _Static_assert(VOCAB_POS_##NAME == (v), #NAME " out of order");
enum { /* positions of the WC statuses */
#define X(NAME, v, text) VOCAB_POS_##NAME,
	VOCAB_WC_STATUS(X)
#undef X
};
VOCAB_WC_STATUS(POS_CHECK_)
#undef POS_CHECK_

#define CM_POS_CHECK_(NAME, v, tok) _Static_assert(VOCAB_CM_POS_##NAME == (v), #NAME " out of order");
enum {
#define X(NAME, v, tok) VOCAB_CM_POS_##NAME,
	VOCAB_CM_EVENT(X)
#undef X
};
VOCAB_CM_EVENT(CM_POS_CHECK_)
#undef CM_POS_CHECK_

#define MSG_POS_CHECK_(NAME, v, qname, tok) _Static_assert(VOCAB_MSG_POS_##NAME == (v), #NAME " out of order");
enum {
#define X(NAME, v, qname, tok) VOCAB_MSG_POS_##NAME,
	VOCAB_MSG_TYPE(X)
#undef X
};
VOCAB_MSG_TYPE(MSG_POS_CHECK_)
#undef MSG_POS_CHECK_

static const char *const wc_name[] = {
#define X(NAME, v, text) #NAME,
	VOCAB_WC_STATUS(X)
#undef X
};
static const char *const wc_text[] = {
#define X(NAME, v, text) text,
	VOCAB_WC_STATUS(X)
#undef X
};
static const char *const cm_name[] = {
#define X(NAME, v, tok) "RDMA_CM_EVENT_" #NAME,
	VOCAB_CM_EVENT(X)
#undef X
};
static const char *const cm_token[] = {
#define X(NAME, v, tok) #tok,
	VOCAB_CM_EVENT(X)
#undef X
};
static const char *const msg_name[] = {
#define X(NAME, v, qname, tok) qname,
	VOCAB_MSG_TYPE(X)
#undef X
};
static const char *const msg_token[] = {
#define X(NAME, v, qname, tok) #tok,
	VOCAB_MSG_TYPE(X)
#undef X
};
static const char *const side_token[] = {
#define X(NAME, tok, alias) #tok,
	VOCAB_SIDE(X)
#undef X
};
static const char *const side_alias[] = {
#define X(NAME, tok, alias) #alias,
	VOCAB_SIDE(X)
#undef X
};
static const char *const site_token[FAULT_SITE_COUNT] = {
#define X(NAME, tok, cls, canon) [FAULT_SITE_##NAME] = tok,
	VOCAB_FAULT_SITE(X)
#undef X
#define X(NAME, v, tok) [FAULT_SITE_CM_EVENT + (v)] = "cm." #tok,
	VOCAB_CM_EVENT(X)
#undef X
#define X(NAME, v, qname, tok) [FAULT_SITE_MSG + (v)] = "msg." #tok,
	VOCAB_MSG_TYPE(X)
#undef X
};
static const char *const site_canonical[FAULT_SITE_CM_EVENT] = {
#define X(NAME, tok, cls, canon) [FAULT_SITE_##NAME] = canon,
	VOCAB_FAULT_SITE(X)
#undef X
};

_Static_assert(sizeof wc_name / sizeof *wc_name == VOCAB_WC_STATUS_COUNT, "WC status count");
_Static_assert(sizeof cm_name / sizeof *cm_name == VOCAB_CM_EVENT_COUNT, "CM event count");
_Static_assert(sizeof msg_name / sizeof *msg_name == VOCAB_MSG_TYPE_COUNT, "message type count");
_Static_assert(sizeof side_token / sizeof *side_token == VOCAB_SIDE_COUNT, "side count");
_Static_assert(FAULT_SITE_CM_EVENT == VOCAB_FAULT_SITE_FIXED_COUNT, "fixed fault sites");

static int lookup(const char *const *t, int n, const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < n; i++)
		if (!strcmp(t[i], s))
			return i;
	return -1;
}

const char *vocab_wc_status_name(int s)
{
	return s >= 0 && s < VOCAB_WC_STATUS_COUNT ? wc_name[s] : "UNKNOWN";
}

const char *vocab_wc_status_text(int s)
{
	return s >= 0 && s < VOCAB_WC_STATUS_COUNT ? wc_text[s] : "unknown";
}

const char *vocab_cm_event_name(int t)
{
	return t >= 0 && t < VOCAB_CM_EVENT_COUNT ? cm_name[t] : "UNKNOWN EVENT";
}

const char *vocab_cm_event_token(int t)
{
	return t >= 0 && t < VOCAB_CM_EVENT_COUNT ? cm_token[t] : NULL;
}

const char *vocab_msg_type_name(unsigned t)
{
	return t < VOCAB_MSG_TYPE_COUNT ? msg_name[t] : "??BAD CONTROL VALUE??";
}

const char *vocab_msg_type_token(unsigned t)
{
	return t < VOCAB_MSG_TYPE_COUNT ? msg_token[t] : "bad";
}

const char *vocab_side_token(int s)
{
	return s >= 0 && s < VOCAB_SIDE_COUNT ? side_token[s] : "?";
}

const char *vocab_fault_site_token(int site)
{
	return site >= 0 && site < FAULT_SITE_COUNT ? site_token[site] : "?";
}

const char *vocab_fault_site_canonical(int site)
{
	if (site < 0 || site >= FAULT_SITE_COUNT)
		return "?";
	return site < FAULT_SITE_CM_EVENT ? site_canonical[site] : "drop";
}

enum fault_site fault_site_cm(int event_type)
{
	assert(event_type >= 0 && event_type < VOCAB_CM_EVENT_COUNT);
	return (enum fault_site)(FAULT_SITE_CM_EVENT + event_type);
}

enum fault_site fault_site_msg(uint32_t msg_type)
{
	assert(msg_type < VOCAB_MSG_TYPE_COUNT);
	return (enum fault_site)(FAULT_SITE_MSG + (int)msg_type);
}

const char *vocab_side_alias(int s)
{
	return s >= 0 && s < VOCAB_SIDE_COUNT ? side_alias[s] : "?";
}

int vocab_side_parse(const char *name)
{
	int s = lookup(side_token, VOCAB_SIDE_COUNT, name);
	return s >= 0 ? s : lookup(side_alias, VOCAB_SIDE_COUNT, name);
}

int vocab_fault_site_lookup(const char *tok) { return lookup(site_token, FAULT_SITE_COUNT, tok); }
int vocab_wc_status_lookup(const char *name) { return lookup(wc_name, VOCAB_WC_STATUS_COUNT, name); }
int vocab_cm_event_lookup(const char *tok) { return lookup(cm_token, VOCAB_CM_EVENT_COUNT, tok); }
int vocab_msg_type_lookup(const char *tok) { return lookup(msg_token, VOCAB_MSG_TYPE_COUNT, tok); }
int vocab_side_lookup(const char *tok) { return lookup(side_token, VOCAB_SIDE_COUNT, tok); }
