/* SPDX-License-Identifier: MIT */
/* profile - the peer profiles' table (see profile.h and docs/profiles.md for each row's
 * evidence: the QEMU change that introduced or removed the behaviour). */
#include "transport/profile.h"

#include <stdio.h>
#include <string.h>

#include "vocab/cause.h"

static const struct proto_profile profiles[PROTO_IMPL_COUNT] = {
	[PROTO_IMPL_MIGBED] = {
		.name = "migbed", .versions = "migbed",
		.summary = "migbed's own peer: every wait bounded, every check strict, ERROR always sent",
		.chunk_param = true,
	},
	[PROTO_IMPL_QEMU_6_1] = {
		.name = "qemu-6.1", .versions = "QEMU .. 6.1",
		.summary = "one CQ for sends and receives: an out-of-order RECV is dropped and the wait for it hangs",
		.qemu = true, .shared_cq = true, .error_as_ready = true, .compress_fill = true,
		.swallow_poll_error = true, .uninit_header = true, .accept_returns_ok = true,
	},
	[PROTO_IMPL_QEMU_7_2] = {
		.name = "qemu-7.2", .versions = "QEMU 6.2 .. 8.0, 8.1.3 .. 8.1.x",
		.summary = "separate send and recv CQs; polling errors between pages ignored; a non-zero COMPRESS fills the range",
		.qemu = true, .error_as_ready = true, .compress_fill = true,
		.swallow_poll_error = true, .uninit_header = true, .accept_returns_ok = true,
		.log_tag = "7.2", .log_kind = PROTO_LOG_OBSERVED,
	},
	[PROTO_IMPL_QEMU_8_1] = {
		.name = "qemu-8.1", .versions = "QEMU 8.1.0 .. 8.1.2",
		.summary = "as 7.2, and a multifd flush record sent inside every registration round that reaches the end of RAM: "
			   "the destination bails out (\"Too many requests in this message\")",
		.qemu = true, .error_as_ready = true, .compress_fill = true,
		.swallow_poll_error = true, .uninit_header = true, .accept_returns_ok = true, .flush_on_wrap = true,
	},
	[PROTO_IMPL_QEMU_8_2] = {
		.name = "qemu-8.2", .versions = "QEMU 8.2 .. 11.0",
		.summary = "the 2023 error-handling series: zeroed headers, every polling error fails, a non-zero COMPRESS is refused; 1 MiB chunks",
		.qemu = true, .error_as_ready = true, .log_tag = "8.2", .log_kind = PROTO_LOG_SOURCE,
	},
	[PROTO_IMPL_QEMU_11_1] = {
		.name = "qemu-11.1", .versions = "QEMU 11.1",
		.summary = "as 8.2, with x-rdma-chunk-size (1 MiB .. 1 GiB; nothing on the wire says which)",
		.qemu = true, .error_as_ready = true, .chunk_param = true,
		.log_tag = "8.2", .log_kind = PROTO_LOG_SOURCE,   /* 11.1's rdma.c not read: 8.2's lines */
	},
};

const struct proto_profile *proto_profile(enum proto_impl impl)
{
	if ((int)impl < 0 || impl >= PROTO_IMPL_COUNT)
		impl = PROTO_IMPL_MIGBED;
	return &profiles[impl];
}

int proto_profile_lookup(const char *name)
{
	for (int i = 0; name && i < PROTO_IMPL_COUNT; i++)
		if (strcmp(profiles[i].name, name) == 0)
			return i;
	return -1;
}

size_t proto_profile_names(char *buf, size_t n, const char *sep)
{
	size_t len = 0;
	if (n)
		buf[0] = '\0';
	for (int i = 0; i < PROTO_IMPL_COUNT; i++) {
		int w = snprintf(buf + (len < n ? len : n), len < n ? n - len : 0, "%s%s", i ? sep : "",
				 profiles[i].name);
		len += (size_t)(w > 0 ? w : 0);
	}
	return len;
}

const char *proto_log_kind_word(enum proto_log_kind k)
{
	return k == PROTO_LOG_OBSERVED ? "observed" : k == PROTO_LOG_SOURCE ? "read" : NULL;
}

static void copy_cut(char *dst, size_t n, const char *s, size_t len)
{
	if (!dst || !n)
		return;
	if (len >= n)
		len = n - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
}

/* The rows of cause_qemu are separated by " | "; a version's row starts "[TAG WORD SIDE",
 * then ']' (no note) or ", " / ": " and the note, and its tag ends at the first ']'. */
int proto_profile_qemu_line(const struct proto_profile *p, int cause, enum vocab_side side, size_t *pos,
			    char *buf, size_t n, char *note, size_t note_n)
{
	const char *all = cause_qemu(cause);
	const char *word = p ? proto_log_kind_word(p->log_kind) : NULL;
	char want[48];
	if (!p || !p->log_tag || !word || !all || !n)
		return 0;
	snprintf(want, sizeof want, "[%s %s %s", p->log_tag, word, vocab_side_token(side));
	size_t wl = strlen(want), total = strlen(all);
	while (*pos < total) {
		const char *row = all + *pos;
		const char *end = strstr(row, " | ");
		size_t rl = end ? (size_t)(end - row) : strlen(row);
		*pos += rl + (end ? 3 : 0);
		const char *close = memchr(row, ']', rl);
		if (rl <= wl || strncmp(row, want, wl) != 0 || !close || !strchr("],:", row[wl]))
			continue;
		const char *nt = row + wl;
		while (nt < close && strchr(",: ", *nt))
			nt++;
		copy_cut(note, note_n, nt, (size_t)(close - nt));
		const char *text = close + 1;
		while (text < row + rl && *text == ' ')
			text++;
		copy_cut(buf, n, text, (size_t)(row + rl - text));
		return 1;
	}
	return 0;
}
