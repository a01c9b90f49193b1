/* SPDX-License-Identifier: MIT */
/* mem - the guest memory model (contract in sim/mem.h).
 *
 * Stamps. mem_mix() turns (seed, block, page, old stamp) into a new stamp with the
 * splitmix64 finalizer; 0 (zero page) and MEM_STAMP_UNKNOWN are never produced. A page
 * whose content is not the expansion of any stamp (a torn or corrupted page) has the stamp
 * MEM_STAMP_UNKNOWN: STAMP memories store it when such a page is copied in, BYTES memories
 * derive it from the bytes. An unknown page never compares equal to anything but an
 * identical byte page, so verification fails, and a later guest write mixes the unknown
 * value in, so the corruption is never "healed" (identically in both representations).
 *
 * BYTES. One anonymous private mapping per block, aligned to the page size. A per-block
 * bitmap marks pages that may be non-zero (set by mem_write_pages and mem_copy, cleared by
 * mem_zero_pages); a clear bit lets mem_pages_zero, mem_compare and mem_write_pages skip
 * the bytes. That is only sound while nothing else writes the block, so once a block's real
 * address has been handed out (mem_block_addr, mem_block_ptr: an RDMA device or the caller
 * may now write into it behind the model's back) the block is *exposed* and every page is
 * checked by its bytes.
 *
 * STAMP. One uint64 per page, in an array the kernel allocates lazily (calloc of a large size
 * maps zero-fill pages), and a bit per leaf of MEM_LEAF_PAGES stamps (one 4 KiB page of the
 * array) set once a non-zero stamp was stored in it. A clear bit means all stamps of the
 * leaf are 0, and the leaf is never read nor written: reading a never-written page's stamp
 * (mem_pages_zero, mem_compare, the digest) would allocate that part of the array too, so
 * the model's memory follows the pages the guest wrote, not the guest's size (a 1 TiB guest
 * has 2 GiB of stamps, nearly all zero). Block addresses are synthetic: each STAMP memory owns one of
 * MEM_SYNTH_SLOTS regions of 16 TiB at MEM_SYNTH_BASE (top byte 0x5a: a non-canonical
 * address, so an accidental dereference faults at once and no real pointer can alias it).
 * The lowest free region is taken, so a run that frees its memories before the next one
 * starts sees the same addresses again. Blocks are 1 GiB aligned and separated by >= 1 GiB.
 */
#include "sim/mem.h"

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MEM_MAX_BLOCKS       64u
#define MEM_NAME_MAX_BYTES   255u              /* QEMU's RAMBlock idstr is char[256] */
#define MEM_PAGE_MIN_BYTES   512ull
#define MEM_PAGE_MAX_BYTES   (1ull << 30)
#define MEM_STAMP_UNKNOWN    UINT64_MAX
#define MEM_SYNTH_BASE       0x5a00000000000000ull
#define MEM_SYNTH_SLOT_SHIFT 44u                /* 16 TiB per STAMP memory */
#define MEM_SYNTH_SLOTS      4096u              /* 4096 * 16 TiB = 2^56: top byte stays 0x5a */
#define MEM_SYNTH_GAP_BYTES  (1ull << 30)
#define MEM_GOLDEN           0x9e3779b97f4a7c15ull
#define MEM_LEAF_SHIFT       9u                 /* 512 stamps: 4 KiB of the stamp array */
#define MEM_LEAF_PAGES       (1ull << MEM_LEAF_SHIFT)

struct mem_block {
	char *name;
	uint64_t size_bytes;
	uint64_t n_pages;
	uint64_t addr;
	uint8_t *bytes;          /* BYTES: page-aligned start inside the mapping */
	uint64_t *maybe_nonzero; /* BYTES: one bit per page */
	uint64_t *stamps;        /* STAMP: one per page (a leaf whose bit is clear: all 0, untouched) */
	uint64_t *leaf_used;     /* STAMP: one bit per MEM_LEAF_PAGES pages: a stamp there may be != 0 */
	uint64_t mix_hash;       /* mem_mix's part that depends on (seed, block) only */
	bool exposed;            /* BYTES: real address handed out (see top comment) */
};

struct mem {
	enum mem_repr repr;
	uint64_t page_size;
	uint64_t seed_hash;
	size_t n_blocks;
	int synth_slot;          /* STAMP: region index; -1 for BYTES */
	uint64_t footprint_bytes;
	struct mem_block *blocks;
};

/* ---- pure helpers ----------------------------------------------------------------------- */

static uint64_t mem_fmix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* splitmix64 (same stream as prng_splitmix64). */
static uint64_t mem_splitmix64(uint64_t *state)
{
	*state += MEM_GOLDEN;
	return mem_fmix(*state);
}

/* The part of a new stamp that depends on (seed, block) only: computed once per block. */
static uint64_t mem_mix_block(uint64_t seed_hash, size_t b)
{
	return mem_fmix(seed_hash ^ mem_fmix((uint64_t)b + MEM_GOLDEN));
}

/* A page's new stamp from its old one: mix(seed, block, page, old), where mix_hash is
 * mem_mix_block(seed, block). */
static uint64_t mem_mix(uint64_t mix_hash, uint64_t page, uint64_t old)
{
	uint64_t h = mem_fmix(mix_hash ^ mem_fmix(page + 2 * MEM_GOLDEN));
	h = mem_fmix(h ^ mem_fmix(old + 3 * MEM_GOLDEN));
	if (h == 0 || h == MEM_STAMP_UNKNOWN)
		h = 1;
	return h;
}

static bool mem_is_pow2(uint64_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static uint64_t mem_align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static void mem_put_le64(uint8_t *p, uint64_t v)
{
	uint64_t le = htole64(v);
	memcpy(p, &le, sizeof le);
}

static uint64_t mem_get_le64(const uint8_t *p)
{
	uint64_t le;
	memcpy(&le, p, sizeof le);
	return le64toh(le);
}

static bool mem_bytes_all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i + 8 <= n; i += 8)
		if (mem_get_le64(p + i) != 0)
			return false;
	return true;
}

/* A page's bytes for a stamp: stamp, then its splitmix64 stream (page_size % 8 == 0). */
static void mem_expand(uint8_t *p, uint64_t page_size, uint64_t stamp)
{
	uint64_t state = stamp;
	mem_put_le64(p, stamp);
	for (uint64_t i = 8; i < page_size; i += 8)
		mem_put_le64(p + i, mem_splitmix64(&state));
}

/* The stamp a page's bytes stand for: 0, a valid stamp, or MEM_STAMP_UNKNOWN. */
static uint64_t mem_derive(const uint8_t *p, uint64_t page_size)
{
	uint64_t stamp = mem_get_le64(p);
	if (stamp == 0)
		return mem_bytes_all_zero(p, page_size) ? 0 : MEM_STAMP_UNKNOWN;
	if (stamp == MEM_STAMP_UNKNOWN)
		return MEM_STAMP_UNKNOWN;
	uint64_t state = stamp;
	for (uint64_t i = 8; i < page_size; i += 8)
		if (mem_get_le64(p + i) != mem_splitmix64(&state))
			return MEM_STAMP_UNKNOWN;
	return stamp;
}

/* ---- block helpers ---------------------------------------------------------------------- */

/* m->blocks points to non-const storage even through a const mem: the exposure flag is
 * bookkeeping about who may write the bytes, not content. */
static struct mem_block *mem_blk(const mem *m, size_t b)
{
	assert(m != NULL);
	assert(b < m->n_blocks);
	return &m->blocks[b];
}

static void mem_assert_pages(const struct mem_block *blk, uint64_t first, uint64_t n)
{
	assert(first <= blk->n_pages);
	assert(n <= blk->n_pages - first);
	(void)blk, (void)first, (void)n;
}

static uint8_t *mem_page_bytes(const mem *m, const struct mem_block *blk, uint64_t page)
{
	assert(m->repr == MEM_REPR_BYTES && page < blk->n_pages);
	return blk->bytes + page * m->page_size;
}

static bool mem_bit(const struct mem_block *blk, uint64_t page)
{
	return (blk->maybe_nonzero[page / 64] >> (page % 64)) & 1u;
}

static void mem_bit_set(struct mem_block *blk, uint64_t page, bool on)
{
	uint64_t mask = 1ull << (page % 64);
	if (on)
		blk->maybe_nonzero[page / 64] |= mask;
	else
		blk->maybe_nonzero[page / 64] &= ~mask;
}

/* BYTES: may the page hold anything but zeros? */
static bool mem_maybe_nonzero(const struct mem_block *blk, uint64_t page)
{
	return blk->exposed || mem_bit(blk, page);
}

/* STAMP: may a stamp of the leaf holding page be non-zero? (else: untouched, all 0) */
static bool mem_leaf_used(const struct mem_block *blk, uint64_t page)
{
	uint64_t leaf = page >> MEM_LEAF_SHIFT;
	return (blk->leaf_used[leaf / 64] >> (leaf % 64)) & 1u;
}

/* The stamp of one page, either representation. */
static uint64_t mem_stamp_of(const mem *m, const struct mem_block *blk, uint64_t page)
{
	if (m->repr == MEM_REPR_STAMP)
		return mem_leaf_used(blk, page) ? blk->stamps[page] : 0;
	if (!mem_maybe_nonzero(blk, page))
		return 0;
	return mem_derive(mem_page_bytes(m, blk, page), m->page_size);
}

/* Make one page hold `stamp`, either representation. */
static void mem_store_stamp(mem *m, struct mem_block *blk, uint64_t page, uint64_t stamp)
{
	if (m->repr == MEM_REPR_STAMP) {
		uint64_t leaf = page >> MEM_LEAF_SHIFT;
		if (!mem_leaf_used(blk, page)) {
			if (stamp == 0)
				return;           /* a zero over an untouched leaf: nothing to write */
			blk->leaf_used[leaf / 64] |= 1ull << (leaf % 64);
		}
		blk->stamps[page] = stamp;
		return;
	}
	uint8_t *p = mem_page_bytes(m, blk, page);
	if (stamp == 0) {
		/* Only touch a page that may hold data: untouched pages stay unallocated. */
		if (mem_maybe_nonzero(blk, page) && !mem_bytes_all_zero(p, m->page_size))
			memset(p, 0, m->page_size);
		mem_bit_set(blk, page, false);
		return;
	}
	mem_expand(p, m->page_size, stamp);
	mem_bit_set(blk, page, true);
}

/* ---- synthetic address regions ---------------------------------------------------------- */

static pthread_mutex_t mem_synth_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t mem_synth_used[MEM_SYNTH_SLOTS / 64];

static int mem_synth_alloc(void)
{
	int slot = -ENOMEM;
	pthread_mutex_lock(&mem_synth_lock);
	for (unsigned i = 0; i < MEM_SYNTH_SLOTS; i++) {
		if (!((mem_synth_used[i / 64] >> (i % 64)) & 1u)) {
			mem_synth_used[i / 64] |= 1ull << (i % 64);
			slot = (int)i;
			break;
		}
	}
	pthread_mutex_unlock(&mem_synth_lock);
	return slot;
}

static void mem_synth_release(int slot)
{
	assert(slot >= 0 && (unsigned)slot < MEM_SYNTH_SLOTS);
	pthread_mutex_lock(&mem_synth_lock);
	assert((mem_synth_used[slot / 64] >> (slot % 64)) & 1u);
	mem_synth_used[slot / 64] &= ~(1ull << (slot % 64));
	pthread_mutex_unlock(&mem_synth_lock);
}

/* Place every block in the region of m->synth_slot; -EINVAL if they do not fit. */
static int mem_synth_layout(mem *m)
{
	uint64_t region = MEM_SYNTH_BASE + ((uint64_t)m->synth_slot << MEM_SYNTH_SLOT_SHIFT);
	uint64_t region_bytes = 1ull << MEM_SYNTH_SLOT_SHIFT;
	uint64_t next = MEM_SYNTH_GAP_BYTES; /* offset in the region */
	for (size_t b = 0; b < m->n_blocks; b++) {
		struct mem_block *blk = &m->blocks[b];
		if (blk->size_bytes > region_bytes - next)
			return -EINVAL;
		blk->addr = region + next;
		next = mem_align_up(next + blk->size_bytes, MEM_SYNTH_GAP_BYTES) + MEM_SYNTH_GAP_BYTES;
		if (next > region_bytes)
			next = region_bytes;
	}
	return 0;
}

/* ---- construction ----------------------------------------------------------------------- */

static int mem_check_specs(uint64_t page_size, size_t n_blocks, const struct mem_block_spec *specs,
			   enum mem_repr repr)
{
	if (!mem_is_pow2(page_size) || page_size < MEM_PAGE_MIN_BYTES || page_size > MEM_PAGE_MAX_BYTES)
		return -EINVAL;
	if (n_blocks == 0 || n_blocks > MEM_MAX_BLOCKS || specs == NULL)
		return -EINVAL;
	if (repr != MEM_REPR_BYTES && repr != MEM_REPR_STAMP)
		return -EINVAL;
	for (size_t b = 0; b < n_blocks; b++) {
		const struct mem_block_spec *s = &specs[b];
		if (s->name == NULL || s->name[0] == '\0')
			return -EINVAL;
		if (strnlen(s->name, MEM_NAME_MAX_BYTES + 1) > MEM_NAME_MAX_BYTES)
			return -EINVAL;
		if (s->size_bytes == 0 || s->size_bytes % page_size != 0)
			return -EINVAL;
		for (size_t o = 0; o < b; o++)
			if (strcmp(specs[o].name, s->name) == 0)
				return -EINVAL;
	}
	return 0;
}

/* Anonymous, lazily zero mapping of size_bytes whose start is aligned to align_bytes. */
static int mem_map_block(struct mem_block *blk, uint64_t align_bytes)
{
	uint64_t sys_page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t extra = align_bytes > sys_page ? align_bytes - sys_page : 0;
	if (blk->size_bytes > SIZE_MAX - extra)
		return -ENOMEM;
	size_t map_bytes = (size_t)(blk->size_bytes + extra);
	void *p = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	uintptr_t start = (uintptr_t)p;
	uintptr_t aligned = (uintptr_t)mem_align_up(start, align_bytes > sys_page ? align_bytes : sys_page);
	uintptr_t end = start + (uintptr_t)mem_align_up(map_bytes, sys_page);
	uintptr_t used_end = aligned + (uintptr_t)mem_align_up(blk->size_bytes, sys_page);
	if (aligned > start)
		munmap(p, aligned - start);
	if (end > used_end)
		munmap((void *)used_end, end - used_end);
	blk->bytes = (uint8_t *)aligned;
	blk->addr = (uint64_t)aligned;
	assert(blk->addr % align_bytes == 0);
	return 0;
}

static void mem_unmap_block(struct mem_block *blk)
{
	if (blk->bytes == NULL)
		return;
	uint64_t sys_page = (uint64_t)sysconf(_SC_PAGESIZE);
	munmap(blk->bytes, (size_t)mem_align_up(blk->size_bytes, sys_page));
	blk->bytes = NULL;
}

/* Allocate a block's storage and count it in the footprint. */
static int mem_block_init(mem *m, struct mem_block *blk, const struct mem_block_spec *s)
{
	assert(blk->size_bytes == s->size_bytes && blk->n_pages * m->page_size == s->size_bytes);
	blk->name = strdup(s->name);
	if (blk->name == NULL)
		return -ENOMEM;
	m->footprint_bytes += strlen(blk->name) + 1;
	if (blk->n_pages > SIZE_MAX / sizeof(uint64_t))
		return -ENOMEM;
	if (m->repr == MEM_REPR_STAMP) {
		size_t leaves = (size_t)((blk->n_pages + MEM_LEAF_PAGES - 1) >> MEM_LEAF_SHIFT);
		blk->stamps = calloc((size_t)blk->n_pages, sizeof(uint64_t));
		blk->leaf_used = calloc((leaves + 63) / 64, sizeof(uint64_t));
		if (blk->stamps == NULL || blk->leaf_used == NULL)
			return -ENOMEM;
		m->footprint_bytes += blk->n_pages * sizeof(uint64_t);
		return 0;
	}
	size_t words = (size_t)((blk->n_pages + 63) / 64);
	blk->maybe_nonzero = calloc(words, sizeof(uint64_t));
	if (blk->maybe_nonzero == NULL)
		return -ENOMEM;
	m->footprint_bytes += words * sizeof(uint64_t) + blk->size_bytes;
	return mem_map_block(blk, m->page_size);
}

int mem_new(uint64_t page_size, size_t n_blocks, const struct mem_block_spec *specs,
	    enum mem_repr repr, uint64_t seed, mem **out)
{
	mem *m = NULL;
	int rc = mem_check_specs(page_size, n_blocks, specs, repr);
	if (rc < 0 || out == NULL)
		return -EINVAL;
	rc = -ENOMEM;
	m = calloc(1, sizeof *m);
	if (m == NULL)
		goto out;
	m->repr = repr;
	m->page_size = page_size;
	m->seed_hash = mem_fmix(seed ^ 0x6d656d2d73656564ull); /* "mem-seed" */
	m->synth_slot = -1;
	m->n_blocks = n_blocks;
	m->footprint_bytes = sizeof *m + n_blocks * sizeof(struct mem_block);
	m->blocks = calloc(n_blocks, sizeof(struct mem_block));
	if (m->blocks == NULL)
		goto out;
	for (size_t b = 0; b < n_blocks; b++) {
		m->blocks[b].size_bytes = specs[b].size_bytes;
		m->blocks[b].n_pages = specs[b].size_bytes / page_size;
		m->blocks[b].mix_hash = mem_mix_block(m->seed_hash, b);
	}
	if (repr == MEM_REPR_STAMP) { /* addresses first: a layout that does not fit costs nothing */
		m->synth_slot = mem_synth_alloc();
		rc = m->synth_slot < 0 ? m->synth_slot : mem_synth_layout(m);
		if (rc < 0)
			goto out;
	}
	for (size_t b = 0; b < n_blocks; b++) {
		rc = mem_block_init(m, &m->blocks[b], &specs[b]);
		if (rc < 0)
			goto out;
	}
	*out = m;
	m = NULL;
	rc = 0;
out:
	mem_free(m);
	return rc;
}

void mem_free(mem *m)
{
	if (m == NULL)
		return;
	for (size_t b = 0; m->blocks != NULL && b < m->n_blocks; b++) {
		struct mem_block *blk = &m->blocks[b];
		mem_unmap_block(blk);
		free(blk->maybe_nonzero);
		free(blk->stamps);
		free(blk->leaf_used);
		free(blk->name);
	}
	if (m->synth_slot >= 0)
		mem_synth_release(m->synth_slot);
	free(m->blocks);
	free(m);
}

/* ---- accessors -------------------------------------------------------------------------- */

enum mem_repr mem_repr(const mem *m)
{
	assert(m != NULL);
	return m->repr;
}

uint64_t mem_page_size(const mem *m)
{
	assert(m != NULL);
	return m->page_size;
}

size_t mem_n_blocks(const mem *m)
{
	assert(m != NULL);
	return m->n_blocks;
}

const char *mem_block_name(const mem *m, size_t b)
{
	return mem_blk(m, b)->name;
}

uint64_t mem_block_bytes(const mem *m, size_t b)
{
	return mem_blk(m, b)->size_bytes;
}

uint64_t mem_block_pages(const mem *m, size_t b)
{
	return mem_blk(m, b)->n_pages;
}

uint64_t mem_block_addr(const mem *m, size_t b)
{
	struct mem_block *blk = mem_blk(m, b);
	if (m->repr == MEM_REPR_BYTES)
		blk->exposed = true;
	return blk->addr;
}

void *mem_block_ptr(mem *m, size_t b)
{
	struct mem_block *blk = mem_blk(m, b);
	if (m->repr != MEM_REPR_BYTES)
		return NULL;
	blk->exposed = true;
	return blk->bytes;
}

int mem_resolve(const mem *m, uint64_t addr, uint64_t len, size_t *b, uint64_t *off)
{
	if (m == NULL || b == NULL || off == NULL)
		return -EINVAL;
	for (size_t i = 0; i < m->n_blocks; i++) {
		const struct mem_block *blk = &m->blocks[i];
		if (addr < blk->addr || addr - blk->addr >= blk->size_bytes)
			continue;
		uint64_t o = addr - blk->addr;
		if (len > blk->size_bytes - o)
			return -EFAULT;
		*b = i;
		*off = o;
		return 0;
	}
	return -EFAULT;
}

/* ---- guest operations ------------------------------------------------------------------- */

/* STAMP: a written page's old stamp and its new one, stored (the new one is never 0, so
 * the leaf becomes used). The old stamp is returned for a twin that may share the result. */
static uint64_t mem_stamp_write(struct mem_block *blk, uint64_t page, uint64_t *next)
{
	uint64_t leaf = page >> MEM_LEAF_SHIFT, bit = 1ull << (leaf % 64);
	uint64_t *used = &blk->leaf_used[leaf / 64];
	uint64_t old = (*used & bit) ? blk->stamps[page] : 0;
	*used |= bit;
	*next = mem_mix(blk->mix_hash, page, old);
	blk->stamps[page] = *next;
	return old;
}

/* The general write of one page (either representation): its old stamp, *next the new one. */
static uint64_t mem_page_write(mem *m, struct mem_block *blk, uint64_t page, uint64_t *next)
{
	uint64_t old = mem_stamp_of(m, blk, page);
	*next = mem_mix(blk->mix_hash, page, old);
	mem_store_stamp(m, blk, page, *next);
	return old;
}

/* One page of twin: the same stamp as m's page got when it held the same old stamp and the
 * seeds match (the mix is the same function of the same values), else its own mix. */
static void mem_twin_write(mem *twin, struct mem_block *tblk, uint64_t page, bool same_mix,
			   uint64_t old, uint64_t next)
{
	if (twin->repr == MEM_REPR_STAMP) {
		uint64_t leaf = page >> MEM_LEAF_SHIFT, bit = 1ull << (leaf % 64);
		uint64_t *used = &tblk->leaf_used[leaf / 64];
		uint64_t told = (*used & bit) ? tblk->stamps[page] : 0;
		*used |= bit;
		tblk->stamps[page] = same_mix && told == old ? next : mem_mix(tblk->mix_hash, page, told);
		return;
	}
	uint64_t told = mem_stamp_of(twin, tblk, page);
	uint64_t tnext = same_mix && told == old ? next : mem_mix(tblk->mix_hash, page, told);
	mem_store_stamp(twin, tblk, page, tnext);
}

void mem_write_pages_twin(mem *m, mem *twin, size_t b, uint64_t first, uint64_t n)
{
	struct mem_block *blk = mem_blk(m, b);
	struct mem_block *tblk = twin && twin != m ? mem_blk(twin, b) : NULL;
	mem_assert_pages(blk, first, n);
	if (tblk)
		mem_assert_pages(tblk, first, n);
	bool same_mix = tblk && tblk->mix_hash == blk->mix_hash;
	bool stamps = m->repr == MEM_REPR_STAMP;
	for (uint64_t p = first; p < first + n; p++) {
		uint64_t next, old = stamps ? mem_stamp_write(blk, p, &next) : mem_page_write(m, blk, p, &next);
		if (tblk)
			mem_twin_write(twin, tblk, p, same_mix, old, next);
	}
	if (twin == m)   /* the same memory twice: written twice, as two calls would */
		mem_write_pages_twin(m, NULL, b, first, n);
}

void mem_write_pages(mem *m, size_t b, uint64_t first, uint64_t n)
{
	mem_write_pages_twin(m, NULL, b, first, n);
}

uint64_t mem_page_stamp(const mem *m, size_t b, uint64_t page)
{
	const struct mem_block *blk = mem_blk(m, b);
	assert(page < blk->n_pages);
	return mem_stamp_of(m, blk, page);
}

void mem_page_stamps(const mem *m, size_t b, uint64_t first, uint64_t n, uint64_t *out)
{
	const struct mem_block *blk = mem_blk(m, b);
	mem_assert_pages(blk, first, n);
	if (m->repr != MEM_REPR_STAMP) {
		for (uint64_t i = 0; i < n; i++)
			out[i] = mem_stamp_of(m, blk, first + i);
		return;
	}
	for (uint64_t i = 0; i < n;) {   /* a leaf at a time: untouched leaves are zeros */
		uint64_t p = first + i;
		uint64_t k = MEM_LEAF_PAGES - (p & (MEM_LEAF_PAGES - 1));
		k = k < n - i ? k : n - i;
		if (mem_leaf_used(blk, p))
			memcpy(out + i, blk->stamps + p, (size_t)k * sizeof *out);
		else
			memset(out + i, 0, (size_t)k * sizeof *out);
		i += k;
	}
}

bool mem_pages_zero(const mem *m, size_t b, uint64_t first, uint64_t n)
{
	const struct mem_block *blk = mem_blk(m, b);
	mem_assert_pages(blk, first, n);
	for (uint64_t p = first; p < first + n; p++) {
		if (m->repr == MEM_REPR_STAMP) {
			if (!mem_leaf_used(blk, p))
				p |= MEM_LEAF_PAGES - 1;   /* the rest of the leaf is 0 too */
			else if (blk->stamps[p] != 0)
				return false;
		} else if (!blk->exposed && blk->maybe_nonzero[p / 64] == 0 && p % 64 == 0) {
			p += 63; /* 64 pages known zero */
		} else if (mem_maybe_nonzero(blk, p) &&
			   !mem_bytes_all_zero(mem_page_bytes(m, blk, p), m->page_size)) {
			return false;
		}
	}
	return true;
}

void mem_zero_pages(mem *m, size_t b, uint64_t first, uint64_t n)
{
	struct mem_block *blk = mem_blk(m, b);
	mem_assert_pages(blk, first, n);
	for (uint64_t p = first; p < first + n; p++) {
		if (m->repr == MEM_REPR_STAMP && !mem_leaf_used(blk, p))
			p |= MEM_LEAF_PAGES - 1;   /* an untouched leaf is all 0 already */
		else
			mem_store_stamp(m, blk, p, 0);
	}
}

void mem_fill_pages(mem *m, size_t b, uint64_t first, uint64_t n, uint8_t ch)
{
	struct mem_block *blk = mem_blk(m, b);
	mem_assert_pages(blk, first, n);
	for (uint64_t p = first; p < first + n; p++) {
		if (ch == 0 || m->repr == MEM_REPR_STAMP) {
			mem_store_stamp(m, blk, p, MEM_FILL_STAMP(ch));
			continue;
		}
		memset(mem_page_bytes(m, blk, p), ch, m->page_size);
		mem_bit_set(blk, p, true);
	}
}

/* ---- copy ------------------------------------------------------------------------------- */

static int mem_copy_check(const mem *src, size_t sb, uint64_t soff, const mem *dst, size_t db,
			  uint64_t doff, uint64_t len)
{
	if (src == NULL || dst == NULL || sb >= src->n_blocks || db >= dst->n_blocks)
		return -EINVAL;
	if (src->page_size != dst->page_size)
		return -EINVAL;
	uint64_t ps = src->page_size;
	bool stamp = src->repr == MEM_REPR_STAMP || dst->repr == MEM_REPR_STAMP;
	if (stamp && (soff % ps != 0 || doff % ps != 0 || len % ps != 0))
		return -EINVAL;
	uint64_t sbytes = src->blocks[sb].size_bytes, dbytes = dst->blocks[db].size_bytes;
	if (soff > sbytes || len > sbytes - soff || doff > dbytes || len > dbytes - doff)
		return -EFAULT;
	return 0;
}

/* Page by page through stamps (at least one side STAMP). Within one memory the ranges may
 * overlap: copied backwards when the destination lies after the source, as memmove. */
static void mem_copy_stamps(const mem *src, size_t sb, uint64_t sp, mem *dst, size_t db,
			    uint64_t dp, uint64_t n)
{
	const struct mem_block *sblk = &src->blocks[sb];
	struct mem_block *dblk = &dst->blocks[db];
	if (sblk == dblk && dp > sp) {
		for (uint64_t i = n; i > 0; i--)
			mem_store_stamp(dst, dblk, dp + i - 1, mem_stamp_of(src, sblk, sp + i - 1));
		return;
	}
	for (uint64_t i = 0; i < n; i++)
		mem_store_stamp(dst, dblk, dp + i, mem_stamp_of(src, sblk, sp + i));
}

int mem_copy(const mem *src, size_t sb, uint64_t soff, mem *dst, size_t db, uint64_t doff,
	     uint64_t len)
{
	int rc = mem_copy_check(src, sb, soff, dst, db, doff, len);
	if (rc < 0 || len == 0)
		return rc;
	uint64_t ps = src->page_size;
	if (src->repr == MEM_REPR_BYTES && dst->repr == MEM_REPR_BYTES) {
		struct mem_block *dblk = &dst->blocks[db];
		memmove(dblk->bytes + doff, src->blocks[sb].bytes + soff, (size_t)len);
		for (uint64_t p = doff / ps; p <= (doff + len - 1) / ps; p++)
			mem_bit_set(dblk, p, true);
		return 0;
	}
	mem_copy_stamps(src, sb, soff / ps, dst, db, doff / ps, len / ps);
	return 0;
}

/* ---- compare ---------------------------------------------------------------------------- */

static bool mem_same_layout(const mem *a, const mem *b)
{
	if (a->page_size != b->page_size || a->n_blocks != b->n_blocks)
		return false;
	for (size_t i = 0; i < a->n_blocks; i++) {
		if (a->blocks[i].size_bytes != b->blocks[i].size_bytes)
			return false;
		if (strcmp(a->blocks[i].name, b->blocks[i].name) != 0)
			return false;
	}
	return true;
}

static bool mem_page_equal(const mem *a, const mem *b, size_t blk_i, uint64_t p)
{
	const struct mem_block *ba = &a->blocks[blk_i], *bb = &b->blocks[blk_i];
	if (a->repr == MEM_REPR_BYTES && b->repr == MEM_REPR_BYTES) {
		if (!mem_maybe_nonzero(ba, p) && !mem_maybe_nonzero(bb, p))
			return true;
		return memcmp(mem_page_bytes(a, ba, p), mem_page_bytes(b, bb, p), (size_t)a->page_size) == 0;
	}
	uint64_t sa = mem_stamp_of(a, ba, p), sb = mem_stamp_of(b, bb, p);
	return sa == sb && sa != MEM_STAMP_UNKNOWN;
}

/* STAMP on both sides: are the leaves holding page p (a leaf's first page) equal as a whole,
 * so mem_page_equal holds for each of their pages? Both untouched (all 0), or the same
 * stamps and none of them unknown; false sends the caller page by page. */
static bool mem_leaves_equal(const struct mem_block *ba, const struct mem_block *bb, uint64_t p)
{
	bool ua = mem_leaf_used(ba, p), ub = mem_leaf_used(bb, p);
	if (!ua && !ub)
		return true;
	if (!ua || !ub)
		return false;
	uint64_t k = ba->n_pages - p < MEM_LEAF_PAGES ? ba->n_pages - p : MEM_LEAF_PAGES;
	if (memcmp(ba->stamps + p, bb->stamps + p, (size_t)k * sizeof *ba->stamps) != 0)
		return false;
	bool unknown = false;
	for (uint64_t i = 0; i < k; i++)
		unknown |= ba->stamps[p + i] == MEM_STAMP_UNKNOWN;
	return !unknown;
}

int mem_compare(const mem *a, const mem *b, size_t *bad_block, uint64_t *bad_page)
{
	if (a == NULL || b == NULL || !mem_same_layout(a, b))
		return -EINVAL;
	bool stamps = a->repr == MEM_REPR_STAMP && b->repr == MEM_REPR_STAMP;
	for (size_t i = 0; i < a->n_blocks; i++) {
		for (uint64_t p = 0; p < a->blocks[i].n_pages; p++) {
			if (stamps && p % MEM_LEAF_PAGES == 0 && mem_leaves_equal(&a->blocks[i], &b->blocks[i], p)) {
				p |= MEM_LEAF_PAGES - 1;   /* the whole leaf is equal (all 0 when untouched) */
				continue;
			}
			if (mem_page_equal(a, b, i, p))
				continue;
			if (bad_block != NULL)
				*bad_block = i;
			if (bad_page != NULL)
				*bad_page = p;
			return 1;
		}
	}
	return 0;
}

uint64_t mem_footprint_bytes(const mem *m)
{
	assert(m != NULL);
	return m->footprint_bytes;
}
