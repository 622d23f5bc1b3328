/*
 * wtp_alloc.h - the runtime tile allocator of the Photon Water talk
 * (refs/000, "Tile allocator"): a pool of up to 64 x 64 tile slots (an
 * 8192 x 8192 texture of 128-pixel tiles, 8320 x 8320 with our 130-pixel
 * pages) tracked by 64 rows of 64-bit masks plus one 64-bit row mask.
 *
 *   bit x of rows[y] = 1  <=>  slot (x, y) is free
 *   bit y of row_mask = 1 <=>  rows[y] != 0 (row y has a free slot)
 *
 * Allocation takes the lowest set bit of row_mask (row y), then the lowest
 * set bit of rows[y] (column x), clears it, and clears bit y of row_mask
 * when the row became full: two bit scans (BSF / tzcnt), O(1), always the
 * first free slot in row-major order. Free sets the bit again (and the row
 * bit). One allocation is one tile.
 *
 * Header-only, C99, no allocation: every function is static inline.
 * Slots are numbered s = x + 64*y; a pool smaller than 64 x 64 (for a 1k
 * to 8k texture) is made by wtp_alloc_init() with w x h slots.
 */
#ifndef WTP_ALLOC_H
#define WTP_ALLOC_H

#include <stdint.h>

#define WTP_ALLOC_DIM 64
#define WTP_ALLOC_NONE (-1)

typedef struct {
	uint64_t rows[WTP_ALLOC_DIM];
	uint64_t row_mask;
	uint32_t w, h; /* pool size in slots */
} wtp_alloc;

/* Index of the lowest set bit of v (v != 0). */
static inline int wtp_alloc_lsb(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
	return __builtin_ctzll(v);
#else
	int n = 0;
	while (!(v & 1u)) {
		v >>= 1;
		n++;
	}
	return n;
#endif
}

/* A pool of w x h free slots (1..64 each; out-of-range values clamp). */
static inline void wtp_alloc_init(wtp_alloc *a, uint32_t w, uint32_t h)
{
	w = w < 1 ? 1 : w > WTP_ALLOC_DIM ? WTP_ALLOC_DIM : w;
	h = h < 1 ? 1 : h > WTP_ALLOC_DIM ? WTP_ALLOC_DIM : h;
	a->w = w;
	a->h = h;
	uint64_t row = w == 64 ? ~(uint64_t)0 : (((uint64_t)1 << w) - 1);
	for (uint32_t y = 0; y < WTP_ALLOC_DIM; y++)
		a->rows[y] = y < h ? row : 0;
	a->row_mask = h == 64 ? ~(uint64_t)0 : (((uint64_t)1 << h) - 1);
}

/* Take the first free slot: returns x + 64*y, or WTP_ALLOC_NONE when the
 * pool is full. */
static inline int wtp_alloc_take(wtp_alloc *a)
{
	if (!a->row_mask)
		return WTP_ALLOC_NONE;
	int y = wtp_alloc_lsb(a->row_mask);
	int x = wtp_alloc_lsb(a->rows[y]);
	a->rows[y] &= ~((uint64_t)1 << x);
	if (!a->rows[y])
		a->row_mask &= ~((uint64_t)1 << y);
	return x + WTP_ALLOC_DIM * y;
}

/* Give slot s back. Returns 0, or -1 when s is outside the pool or
 * already free (a double free leaves the pool unchanged). */
static inline int wtp_alloc_free(wtp_alloc *a, int s)
{
	if (s < 0)
		return -1;
	uint32_t x = (uint32_t)s % WTP_ALLOC_DIM, y = (uint32_t)s / WTP_ALLOC_DIM;
	if (x >= a->w || y >= a->h || (a->rows[y] >> x) & 1u)
		return -1;
	a->rows[y] |= (uint64_t)1 << x;
	a->row_mask |= (uint64_t)1 << y;
	return 0;
}

/* Free slots left (popcount over the rows). */
static inline uint32_t wtp_alloc_free_count(const wtp_alloc *a)
{
	uint32_t n = 0;
	for (uint32_t y = 0; y < WTP_ALLOC_DIM; y++) {
		uint64_t v = a->rows[y];
		while (v) {
			v &= v - 1;
			n++;
		}
	}
	return n;
}

#endif /* WTP_ALLOC_H */
