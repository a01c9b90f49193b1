/* SPDX-License-Identifier: MIT */
/* ring - a bounded FIFO of fixed-size elements, the one queue of transport/ (the front end's
 * per-endpoint queues in hca.c, the model's receive queues, parked WRs, raw CQs and CM events,
 * the verbs backend's CM event queues, connect-request queues and completion stashes).
 *
 * Owns: one heap array of `cap` elements of `esz` bytes (ring_init), or none: ring_init_over
 * puts a fixed ring over the caller's array (e.g. one embedded next to the ring), which it
 * never frees or grows. The struct is the caller's (embedded), its fields are read through
 * the functions below only.
 * Guarantees: FIFO order; the capacity only grows, by ring_reserve, by doubling, never past
 * `max_elems` given at init (a ring with max_elems == cap is fixed-size; a ring over the
 * caller's array always is); a failed reserve or init leaves the ring as it was. Every misuse
 * (push without room, pop of an empty ring, an index past the length) is an assertion, never
 * a silent overwrite.
 * The caller: inits before use (a zeroed ring is a valid empty ring with no room, fini-able),
 * reserves (or checks ring_room) before pushing where room is not already bounded, fini's
 * once; the array under ring_init_over outlives the ring and does not move. */
#ifndef MIGBED_TRANSPORT_RING_H
#define MIGBED_TRANSPORT_RING_H
#include <assert.h>
#include <stdbool.h>
#include <stddef.h>

struct ring {
	unsigned char *v;
	size_t esz, cap, max_elems, head, len;
	bool over;                    /* v is the caller's array (ring_init_over) */
};

/* 0 or -ENOMEM (the ring is then zeroed); 0 < cap <= max_elems (asserted). */
int ring_init(struct ring *r, size_t esz, size_t cap, size_t max_elems);
/* A fixed ring of cap elements of esz bytes over the caller's array buf (cap * esz bytes):
 * allocates nothing, cannot fail; cap > 0 (asserted). */
void ring_init_over(struct ring *r, void *buf, size_t esz, size_t cap);
/* Frees the heap array (not the caller's); the ring is then zeroed. */
void ring_fini(struct ring *r);
/* Make room for n more elements: 0 or -ENOMEM (over max_elems, or no memory). */
int ring_reserve(struct ring *r, size_t n);

/* ring_len, ring_room and ring_at are inline: the model's completion queues are looked at
 * several times per page sent. */
static inline size_t ring_len(const struct ring *r)
{
	return r->len;
}

/* How many more elements ring_push takes now, without a ring_reserve. */
static inline size_t ring_room(const struct ring *r)
{
	assert(r->len <= r->cap);
	return r->cap - r->len;
}

/* The i-th element from the head, i < ring_len (asserted). */
static inline void *ring_at(const struct ring *r, size_t i)
{
	assert(i < r->len);
	return r->v + ((r->head + i) % r->cap) * r->esz;
}
/* Append; there is room (asserted). */
void ring_push(struct ring *r, const void *e);
/* Take the head into *out (NULL: discard); the ring is not empty (asserted). */
void ring_pop(struct ring *r, void *out);
/* ring_pop if there is a head: true, else false. */
bool ring_get(struct ring *r, void *out);
/* Put back at the head what was just taken from it; there is room (asserted). */
void ring_unget(struct ring *r, const void *e);
/* Forget the element pushed last (undo of ring_push); not empty (asserted). */
void ring_drop_back(struct ring *r);

#endif
