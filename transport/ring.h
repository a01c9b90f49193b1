/* ring - a bounded FIFO of fixed-size elements, the one queue of transport/ (the front end's
 * per-endpoint queues in hca.c, the model's receive queues, parked WRs, raw CQs and CM events).
 *
 * Owns: one heap array of `cap` elements of `esz` bytes; the struct is the caller's (embedded),
 * its fields are read through the functions below only.
 * Guarantees: FIFO order; the capacity only grows, by ring_reserve, by doubling, never past
 * `max_elems` given at init (a ring with max_elems == cap is fixed-size); a failed reserve or
 * init leaves the ring as it was. Every misuse (push without room, pop of an empty ring, an
 * index past the length) is an assertion, never a silent overwrite.
 * The caller: inits before use (a zeroed ring is a valid empty ring with no room, fini-able),
 * reserves before pushing where room is not already bounded, fini's once. */
#ifndef MIGBED_TRANSPORT_RING_H
#define MIGBED_TRANSPORT_RING_H
#include <stdbool.h>
#include <stddef.h>

struct ring {
	unsigned char *v;
	size_t esz, cap, max_elems, head, len;
};

/* 0 or -ENOMEM (the ring is then zeroed); 0 < cap <= max_elems (asserted). */
int ring_init(struct ring *r, size_t esz, size_t cap, size_t max_elems);
void ring_fini(struct ring *r);
/* Make room for n more elements: 0 or -ENOMEM (over max_elems, or no memory). */
int ring_reserve(struct ring *r, size_t n);

size_t ring_len(const struct ring *r);
/* The i-th element from the head, i < ring_len (asserted). */
void *ring_at(const struct ring *r, size_t i);
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
