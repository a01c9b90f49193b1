/* SPDX-License-Identifier: MIT */
/* ring - a bounded FIFO of fixed-size elements (see ring.h for the contract). */
#include "transport/ring.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ring_init(struct ring *r, size_t esz, size_t cap, size_t max_elems)
{
	assert(esz > 0 && cap > 0 && cap <= max_elems);
	memset(r, 0, sizeof(*r));
	r->v = calloc(cap, esz);
	if (!r->v)
		return -ENOMEM;
	r->esz = esz;
	r->cap = cap;
	r->max_elems = max_elems;
	return 0;
}

void ring_init_over(struct ring *r, void *buf, size_t esz, size_t cap)
{
	assert(buf && esz > 0 && cap > 0);
	memset(r, 0, sizeof(*r));
	r->v = buf;
	r->esz = esz;
	r->cap = cap;
	r->max_elems = cap;
	r->over = true;
}

void ring_fini(struct ring *r)
{
	if (!r->over)
		free(r->v);
	memset(r, 0, sizeof(*r));
}

int ring_reserve(struct ring *r, size_t n)
{
	size_t cap = r->cap;
	unsigned char *v;

	if (r->len + n <= r->cap)
		return 0;
	if (cap == 0)
		return -ENOMEM;           /* never initialised: no element size */
	while (cap < r->len + n)
		cap *= 2;
	if (cap > r->max_elems)
		return -ENOMEM;
	assert(!r->over && "a ring over the caller's array is fixed");
	v = malloc(cap * r->esz);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->len; i++)
		memcpy(v + i * r->esz, ring_at(r, i), r->esz);
	free(r->v);
	r->v = v;
	r->cap = cap;
	r->head = 0;
	return 0;
}

void ring_push(struct ring *r, const void *e)
{
	assert(r->len < r->cap && "ring room was reserved");
	r->len++;
	memcpy(ring_at(r, r->len - 1), e, r->esz);
}

void ring_pop(struct ring *r, void *out)
{
	assert(r->len > 0);
	if (out)
		memcpy(out, ring_at(r, 0), r->esz);
	r->head = (r->head + 1) % r->cap;
	r->len--;
}

bool ring_get(struct ring *r, void *out)
{
	if (r->len == 0)
		return false;
	ring_pop(r, out);
	return true;
}

void ring_unget(struct ring *r, const void *e)
{
	assert(r->len < r->cap);
	r->head = (r->head + r->cap - 1) % r->cap;
	r->len++;
	memcpy(ring_at(r, 0), e, r->esz);
}

void ring_drop_back(struct ring *r)
{
	assert(r->len > 0);
	r->len--;
}
