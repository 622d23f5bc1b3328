/*
 * hydro_ref.h - a plain reference for src/hydro.c (test_hydro_fast.c,
 * bench_hydro_guess.c): the priority-flood of Barnes et al. 2014 on a
 * binary heap ordered by (level, index), with the pit FIFO, and the D8
 * receivers and donor order exactly as hydro.h defines them. Written for
 * clarity, not speed: the fast path must give the same bits.
 */
#ifndef WB_HYDRO_REF_H
#define WB_HYDRO_REF_H

#include <math.h>
#include <stdlib.h>

static const int REF_DX[8] = { 1, 1, 0, -1, -1, -1, 0, 1 };
static const int REF_DY[8] = { 0, 1, 1, 1, 0, -1, -1, -1 };

struct ref_heap {
	float *key;
	int *idx;
	long n;
};

static int ref_less(const struct ref_heap *h, long a, long b)
{
	if (h->key[a] != h->key[b])
		return h->key[a] < h->key[b];
	return h->idx[a] < h->idx[b];
}

static void ref_swap(struct ref_heap *h, long a, long b)
{
	float k = h->key[a];
	int i = h->idx[a];
	h->key[a] = h->key[b];
	h->idx[a] = h->idx[b];
	h->key[b] = k;
	h->idx[b] = i;
}

static void ref_push(struct ref_heap *h, float key, int idx)
{
	long c = h->n++;
	h->key[c] = key;
	h->idx[c] = idx;
	while (c > 0 && ref_less(h, c, (c - 1) / 2)) {
		ref_swap(h, c, (c - 1) / 2);
		c = (c - 1) / 2;
	}
}

static int ref_pop(struct ref_heap *h)
{
	int top = h->idx[0];
	h->n--;
	ref_swap(h, 0, h->n);
	for (long c = 0;;) {
		long l = 2 * c + 1, r = l + 1, m = c;
		if (l < h->n && ref_less(h, l, m))
			m = l;
		if (r < h->n && ref_less(h, r, m))
			m = r;
		if (m == c)
			break;
		ref_swap(h, c, m);
		c = m;
	}
	return top;
}

/* level and the flood tree (parent: the cell whose visit reached it, -1
 * for outlets, walls and unreached cells). Returns 0 or -1 (OOM). */
static int ref_flood(const float *z, int nx, int ny, const unsigned char *outlet,
		     const float *outlet_level, float *level, int *parent)
{
	long n = (long)nx * ny, ph = 0, pt = 0;
	struct ref_heap h = { malloc((size_t)n * sizeof(float)),
			      malloc((size_t)n * sizeof(int)), 0 };
	int *pit = malloc((size_t)n * sizeof(int));
	unsigned char *closed = calloc((size_t)n, 1);
	int rc = -1;
	if (!h.key || !h.idx || !pit || !closed)
		goto out;
	for (long i = 0; i < n; i++) {
		level[i] = INFINITY;
		parent[i] = -1;
		closed[i] = !isfinite(z[i]);
	}
	for (long i = 0; i < n; i++) {
		int x = (int)(i % nx), y = (int)(i / nx);
		int o = outlet ? outlet[i] != 0 :
			(x == 0 || y == 0 || x == nx - 1 || y == ny - 1);
		if (!o || closed[i])
			continue;
		level[i] = z[i];
		if (outlet_level && outlet_level[i] > level[i])
			level[i] = outlet_level[i];
		closed[i] = 1;
		ref_push(&h, level[i], (int)i);
	}
	while (h.n > 0 || ph < pt) {
		int c = ph < pt ? pit[ph++] : ref_pop(&h);
		for (int k = 0; k < 8; k++) {
			int x = c % nx + REF_DX[k], y = c / nx + REF_DY[k];
			if (x < 0 || y < 0 || x >= nx || y >= ny)
				continue;
			long j = x + (long)y * nx;
			if (closed[j])
				continue;
			closed[j] = 1;
			parent[j] = c;
			if (z[j] <= level[c]) {
				level[j] = level[c];
				pit[pt++] = (int)j;
			} else {
				level[j] = z[j];
				ref_push(&h, z[j], (int)j);
			}
		}
	}
	for (long i = 0; i < n; i++)
		level[i] += 0.0f; /* a level of -0 is written +0 (hydro.h) */
	rc = 0;
out:
	free(closed);
	free(pit);
	free(h.idx);
	free(h.key);
	return rc;
}

/* Receivers (steepest descent, ties to the lower index; the flood tree on
 * flats) and the order (breadth first from the roots in index order over
 * donors in index order, unreachable cells last; O(n^2): small grids
 * only). order may be NULL. */
static int ref_receivers(const float *z, int nx, int ny,
			 const unsigned char *outlet, const float *outlet_level,
			 float *level, int *rcv, int *order)
{
	long n = (long)nx * ny;
	int *parent = malloc((size_t)n * sizeof(int));
	if (!parent || ref_flood(z, nx, ny, outlet, outlet_level, level, parent)) {
		free(parent);
		return -1;
	}
	for (long i = 0; i < n; i++) {
		rcv[i] = -1;
		if (!isfinite(level[i]) || parent[i] < 0)
			continue;
		int best = -1;
		double best_s = 0;
		for (int k = 0; k < 8; k++) {
			int x = (int)(i % nx) + REF_DX[k], y = (int)(i / nx) + REF_DY[k];
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
		rcv[i] = best >= 0 ? best : parent[i];
	}
	free(parent);
	if (!order)
		return 0;
	/* the order: repeated scans are slow but obviously right */
	long m = 0;
	for (long i = 0; i < n; i++)
		if (rcv[i] < 0 && isfinite(level[i]))
			order[m++] = (int)i;
	for (long q = 0; q < m; q++)
		for (long i = 0; i < n && q < m; i++)
			if (rcv[i] == order[q])
				order[m++] = (int)i;
	for (long i = 0; i < n; i++)
		if (!isfinite(level[i]))
			order[m++] = (int)i;
	return 0;
}

#endif
