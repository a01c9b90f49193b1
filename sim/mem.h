/* SPDX-License-Identifier: MIT */
/* mem - the guest memory model: RAM blocks made of pages whose content is a deterministic
 * function of (seed, block, page, write history), so a destination copy can be verified
 * page by page.
 *
 * Every page holds a 64-bit *stamp*: 0 for a never-written (zero) page; a guest write
 * replaces it by mix(seed, block, page, old stamp) (never 0). Two representations behind
 * one interface:
 *   MEM_REPR_BYTES  real page bytes (mmap'd, page aligned, lazily zero). A page's bytes are
 *                   its stamp expanded by splitmix64: the first 8 bytes are the stamp
 *                   (little endian). Needed for real RDMA. Addresses are real pointers.
 *   MEM_REPR_STAMP  one uint64 per page (an 8 GiB guest with 4 KiB pages: 16 MiB reserved),
 *                   allocated only where a non-zero stamp was stored: the memory used follows
 *                   the pages written, not the guest's size (a 1 TiB guest fits). Block
 *                   addresses are synthetic (never dereferenced); data moves by mem_copy.
 * Zero pages are cheap to detect in both (STAMP: stamp 0; BYTES: a written-bitmap plus a
 * byte check only for pages that were ever written or copied into). */
#ifndef MIGBED_SIM_MEM_H
#define MIGBED_SIM_MEM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mem_repr { MEM_REPR_BYTES, MEM_REPR_STAMP };

struct mem_block_spec {
	const char *name;
	uint64_t size_bytes;              /* multiple of page_size */
};

typedef struct mem mem;

/* -EINVAL (bad sizes), -ENOMEM. */
int mem_new(uint64_t page_size, size_t n_blocks, const struct mem_block_spec *specs,
	    enum mem_repr repr, uint64_t seed, mem **out);
void mem_free(mem *m);

enum mem_repr mem_repr(const mem *m);
uint64_t mem_page_size(const mem *m);
size_t mem_n_blocks(const mem *m);
const char *mem_block_name(const mem *m, size_t b);
uint64_t mem_block_bytes(const mem *m, size_t b);
uint64_t mem_block_pages(const mem *m, size_t b);
/* The block's "host virtual address": a real pointer (BYTES) or a synthetic, unique,
 * page-aligned address (STAMP). Stable for the life of m. */
uint64_t mem_block_addr(const mem *m, size_t b);
/* Real pointer to the block's bytes (BYTES), NULL for STAMP. */
void *mem_block_ptr(mem *m, size_t b);
/* Find the block containing [addr, addr+len): 0 and *b, *off set, -EFAULT if none. */
int mem_resolve(const mem *m, uint64_t addr, uint64_t len, size_t *b, uint64_t *off);

/* A guest write to pages [first, first+n) of block b: each page gets a new stamp. */
void mem_write_pages(mem *m, size_t b, uint64_t first, uint64_t n);
/* mem_write_pages on m, then on twin (NULL: none; it must have m's layout), with the same
 * result as the two calls; a page holding the same stamp in both is mixed once when their
 * seeds match (the engine's source and its shadow, run/run.c's source oracle). */
void mem_write_pages_twin(mem *m, mem *twin, size_t b, uint64_t first, uint64_t n);
uint64_t mem_page_stamp(const mem *m, size_t b, uint64_t page);
/* The stamps of pages [first, first+n) of block b into out[0..n), as mem_page_stamp each. */
void mem_page_stamps(const mem *m, size_t b, uint64_t first, uint64_t n, uint64_t *out);
bool mem_pages_zero(const mem *m, size_t b, uint64_t first, uint64_t n);
/* Make pages zero (applying a COMPRESS). */
void mem_zero_pages(mem *m, size_t b, uint64_t first, uint64_t n);
/* Fill pages with the byte ch (a COMPRESS with a non-zero value, as QEMU before the check
 * applied it): ch 0 is mem_zero_pages; a STAMP page gets the stamp MEM_FILL_STAMP(ch). */
#define MEM_FILL_STAMP(ch) (UINT64_C(0x0101010101010101) * (uint8_t)(ch))
void mem_fill_pages(mem *m, size_t b, uint64_t first, uint64_t n, uint8_t ch);

/* Copy len bytes from src block sb at byte offset soff to dst block db at doff (an RDMA
 * WRITE's effect). STAMP on either side: offsets and len must be page aligned (-EINVAL
 * otherwise). Page sizes must match. 0, -EINVAL, -EFAULT (out of block). */
int mem_copy(const mem *src, size_t sb, uint64_t soff, mem *dst, size_t db, uint64_t doff,
	     uint64_t len);

/* Page-by-page comparison of two memories with the same layout (either representation).
 * 0 equal; 1 different, *bad_block, *bad_page = the first difference; -EINVAL layouts
 * differ. */
int mem_compare(const mem *a, const mem *b, size_t *bad_block, uint64_t *bad_page);
/* Bytes of memory used by the model itself (for benchmarks). */
uint64_t mem_footprint_bytes(const mem *m);

#endif
