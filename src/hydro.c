/*
 * hydro.c - depression filling, downstream reach and D8 receivers (see
 * hydro.h).
 *
 * Priority-flood (Barnes, Lehman & Mulla 2014, Algorithm 2): the outlets
 * are pushed on a priority queue keyed by their level; the lowest cell c
 * is popped and each unvisited neighbour n gets level max(z[n], level[c]).
 * A neighbour at or below level[c] is inside a depression: it is flooded
 * to exactly level[c] (epsilon-free: lakes are flat) and goes to a FIFO
 * ('pit') that is drained before the queue, so the cells of a depression
 * cost O(1) each instead of O(log n). The queue orders by (level, index),
 * so the result and the visiting order depend on nothing but the input.
 *
 * Workload: one pass, O(n log n) over the non-depression cells; memory
 * 1 byte + 12 bytes per cell (visited mask, heap, FIFO).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hydro.h"

static const int DX8[8] = { 1, 1, 0, -1, -1, -1, 0, 1 };
static const int DY8[8] = { 0, 1, 1, 1, 0, -1, -1, -1 };

/* ---- a binary min-heap of (level, index) ------------------------------- */

struct heap {
	float *key;
	int *idx;
	long n, cap;
};

static int heap_less(const struct heap *h, long a, long b)
{
	if (h->key[a] != h->key[b])
		return h->key[a] < h->key[b];
	return h->idx[a] < h->idx[b];
}

static void heap_swap(struct heap *h, long a, long b)
{
	float k = h->key[a];
	int i = h->idx[a];
	h->key[a] = h->key[b];
	h->idx[a] = h->idx[b];
	h->key[b] = k;
	h->idx[b] = i;
}

/* The heap never holds more than nx*ny entries (each cell is pushed at most
 * once), so its arrays are allocated once at full size. */
static void heap_push(struct heap *h, float key, int idx)
{
	long c = h->n++;
	h->key[c] = key;
	h->idx[c] = idx;
	while (c > 0) {
		long p = (c - 1) / 2;
		if (!heap_less(h, c, p))
			break;
		heap_swap(h, c, p);
		c = p;
	}
}

static int heap_pop(struct heap *h)
{
	int top = h->idx[0];
	h->n--;
	if (h->n > 0) {
		h->key[0] = h->key[h->n];
		h->idx[0] = h->idx[h->n];
		long c = 0;
		for (;;) {
			long l = 2 * c + 1, r = l + 1, m = c;
			if (l < h->n && heap_less(h, l, m))
				m = l;
			if (r < h->n && heap_less(h, r, m))
				m = r;
			if (m == c)
				break;
			heap_swap(h, c, m);
			c = m;
		}
	}
	return top;
}

/* ---- priority-flood ---------------------------------------------------- */

/* Fills level[]; when parent is not NULL also the flood tree (parent[n] =
 * the cell whose pop pushed n, -1 for outlets and unreached cells) and
 * visit (the pop order; returns the number of cells popped in *n_visit). */
static int flood(const float *z, int nx, int ny, const unsigned char *outlet,
		 const float *outlet_level, float *level, int *parent,
		 int *visit, long *n_visit)
{
	long n = (long)nx * ny;
	int rc = -1;
	struct heap h = { 0 };
	int *pit = NULL;
	unsigned char *closed = NULL;
	long pit_head = 0, pit_tail = 0, nv = 0;

	if (nx <= 0 || ny <= 0) {
		if (n_visit)
			*n_visit = 0;
		return 0;
	}
	h.key = malloc((size_t)n * sizeof(*h.key));
	h.idx = malloc((size_t)n * sizeof(*h.idx));
	pit = malloc((size_t)n * sizeof(*pit));
	closed = calloc((size_t)n, 1);
	if (!h.key || !h.idx || !pit || !closed)
		goto fail;
	h.cap = n;

	for (long i = 0; i < n; i++) {
		level[i] = INFINITY;
		if (parent)
			parent[i] = -1;
		if (!isfinite(z[i]))
			closed[i] = 1; /* a wall */
	}
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nx; x++) {
			long i = x + (long)y * nx;
			int is_out = outlet ? outlet[i] != 0 :
				     (x == 0 || y == 0 || x == nx - 1 || y == ny - 1);
			if (!is_out || closed[i])
				continue;
			float l = z[i];
			if (outlet_level && outlet_level[i] > l)
				l = outlet_level[i];
			level[i] = l;
			closed[i] = 1;
			heap_push(&h, l, (int)i);
		}

	while (h.n > 0 || pit_head < pit_tail) {
		int c = pit_head < pit_tail ? pit[pit_head++] : heap_pop(&h);
		if (visit)
			visit[nv] = c;
		nv++;
		int cx = c % nx, cy = c / nx;
		for (int k = 0; k < 8; k++) {
			int x = cx + DX8[k], y = cy + DY8[k];
			if (x < 0 || y < 0 || x >= nx || y >= ny)
				continue;
			long j = x + (long)y * nx;
			if (closed[j])
				continue;
			closed[j] = 1;
			if (parent)
				parent[j] = c;
			if (z[j] <= level[c]) {
				level[j] = level[c];
				pit[pit_tail++] = (int)j;
			} else {
				level[j] = z[j];
				heap_push(&h, z[j], (int)j);
			}
		}
	}
	if (n_visit)
		*n_visit = nv;
	rc = 0;
fail:
	free(closed);
	free(pit);
	free(h.idx);
	free(h.key);
	return rc;
}

int hydro_fill_levels(const float *z, int nx, int ny,
		      const unsigned char *outlet, const float *outlet_level,
		      float *level)
{
	return flood(z, nx, ny, outlet, outlet_level, level, NULL, NULL, NULL);
}

int hydro_fill(const float *z, int nx, int ny, const unsigned char *outlet,
	       float *level)
{
	return flood(z, nx, ny, outlet, NULL, level, NULL, NULL, NULL);
}

/* ---- downstream reach -------------------------------------------------- */

int hydro_downstream(const float *level, const float *z, int nx, int ny,
		     const unsigned char *seed, unsigned char *reach)
{
	long n = (long)nx * ny;
	if (nx <= 0 || ny <= 0)
		return 0;
	int *stack = malloc((size_t)n * sizeof(*stack));
	if (!stack)
		return -1;
	long top = 0;
	memset(reach, 0, (size_t)n);
	for (long i = 0; i < n; i++)
		if (seed[i] && isfinite(z[i])) {
			reach[i] = 1;
			stack[top++] = (int)i;
		}
	/* Each cell enters the stack once (marked when pushed), so the stack
	 * never exceeds n entries. */
	while (top > 0) {
		int c = stack[--top];
		int cx = c % nx, cy = c / nx;
		for (int k = 0; k < 8; k++) {
			int x = cx + DX8[k], y = cy + DY8[k];
			if (x < 0 || y < 0 || x >= nx || y >= ny)
				continue;
			long j = x + (long)y * nx;
			if (reach[j] || !isfinite(z[j]) || !(level[j] <= level[c]))
				continue;
			reach[j] = 1;
			stack[top++] = (int)j;
		}
	}
	free(stack);
	return 0;
}

/* ---- D8 receivers ------------------------------------------------------ */

int hydro_receivers(const float *z, int nx, int ny,
		    const unsigned char *outlet, const float *outlet_level,
		    const float *level, int *rcv, int *order)
{
	long n = (long)nx * ny, nv = 0;
	int rc = -1;
	float *lv = NULL;
	int *parent = NULL, *first = NULL, *donor = NULL;
	if (nx <= 0 || ny <= 0)
		return 0;
	lv = malloc((size_t)n * sizeof(*lv));
	parent = malloc((size_t)n * sizeof(*parent));
	first = calloc((size_t)n + 1, sizeof(*first));
	donor = malloc((size_t)n * sizeof(*donor));
	if (!lv || !parent || !first || !donor)
		goto fail;
	/* the flood tree, for flats */
	if (flood(z, nx, ny, outlet, outlet_level, lv, parent, NULL, &nv))
		goto fail;

	for (long i = 0; i < n; i++) {
		rcv[i] = -1;
		if (!isfinite(level[i]) || parent[i] < 0)
			continue; /* outlet, wall or no way out */
		int cx = (int)(i % nx), cy = (int)(i / nx);
		int best = -1;
		double best_s = 0.0;
		for (int k = 0; k < 8; k++) {
			int x = cx + DX8[k], y = cy + DY8[k];
			if (x < 0 || y < 0 || x >= nx || y >= ny)
				continue;
			long j = x + (long)y * nx;
			if (!(level[j] < level[i]))
				continue;
			double s = ((double)level[i] - level[j]) /
				   ((k & 1) ? 1.4142135623730951 : 1.0);
			if (s > best_s || (s == best_s && best >= 0 && j < best)) {
				best_s = s;
				best = (int)j;
			}
		}
		/* strictly downhill: steepest descent; on a flat: the flood
		 * tree, which leads to the flat's spill point */
		rcv[i] = best >= 0 ? best : parent[i];
	}

	if (order) {
		/* receivers before donors: breadth first from the roots, in
		 * index order, over donor lists in index order */
		for (long i = 0; i < n; i++)
			if (rcv[i] >= 0)
				first[rcv[i] + 1]++;
		for (long i = 0; i < n; i++)
			first[i + 1] += first[i];
		for (long i = 0; i < n; i++)
			if (rcv[i] >= 0)
				donor[first[rcv[i]]++] = (int)i;
		for (long i = n; i > 0; i--)
			first[i] = first[i - 1];
		first[0] = 0;
		long m = 0;
		for (long i = 0; i < n; i++)
			if (rcv[i] < 0 && isfinite(level[i]))
				order[m++] = (int)i;
		for (long q = 0; q < m; q++) {
			int c = order[q];
			for (int k = first[c]; k < first[c + 1]; k++)
				order[m++] = donor[k];
		}
		for (long i = 0; i < n; i++)
			if (!isfinite(level[i]))
				order[m++] = (int)i;
	}
	rc = 0;
fail:
	free(donor);
	free(first);
	free(parent);
	free(lv);
	return rc;
}
