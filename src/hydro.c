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
 * The queue is a radix heap (below): the same pop order as a binary heap,
 * several times faster on large grids. The grid is flooded by strips of
 * rows in parallel and the strips joined exactly ("the filled levels in
 * parallel"); the receivers on flats replay the flood's tree per set of
 * equal-level cells (flat_parents).
 *
 * Workload: one pass, O(n) pushes and pops of a few sequential moves
 * each; memory 12 bytes (terrain, level, label) + 4 bytes (FIFO) per
 * cell plus 8 to 16 bytes per queued cell (the front, not the grid).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "hydro.h"

static const int DX8[8] = { 1, 1, 0, -1, -1, -1, 0, 1 };
static const int DY8[8] = { 0, 1, 1, 1, 0, -1, -1, -1 };

/* ---- a radix heap of (level, index) ------------------------------------
 *
 * The flood pops its queue in increasing (level, index) order and only
 * pushes keys above the last one popped (a neighbour enters the queue
 * only when it is higher than the level of the cell that pushes it), so a
 * monotone priority queue does: a radix heap (Ahuja, Mehlhorn, Orlin &
 * Tarjan 1990) on one 64-bit key, the level's bits mapped to an unsigned
 * order (high 32 bits) and the cell index (low 32 bits). Keys are unique
 * (one per cell), so it pops exactly the sequence a comparison heap
 * ordered by (level, index) pops: the same levels, flood tree and visit
 * order, bit for bit, at O(1) per push and a few sequential moves per pop
 * instead of O(log n) cache misses. Bucket b > 0 holds the keys whose
 * highest bit differing from the last key popped is bit b - 1. */

#define RH_BUCKETS 65

struct rheap {
	uint64_t last;
	uint64_t *b[RH_BUCKETS];
	long n[RH_BUCKETS], cap[RH_BUCKETS];
	long size;
};

/* The key of (level, index): float order as unsigned order; -0 and +0
 * compare equal as floats, so both map to +0's key (the index then
 * decides, as in the comparison). Levels are never NaN here. */
static uint64_t rh_key(float l, int idx)
{
	uint32_t u;
	l += 0.0f; /* -0 -> +0 */
	memcpy(&u, &l, sizeof(u));
	u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
	return ((uint64_t)u << 32) | (uint32_t)idx;
}

static int rh_bucket(uint64_t k, uint64_t last)
{
	uint64_t x = k ^ last;
	return x ? 64 - __builtin_clzll(x) : 0;
}

static int rh_append(struct rheap *h, int b, uint64_t k)
{
	if (h->n[b] == h->cap[b]) {
		long nc = h->cap[b] ? 2 * h->cap[b] : 1024;
		uint64_t *p = realloc(h->b[b], (size_t)nc * sizeof(*p));
		if (!p)
			return -1;
		h->b[b] = p;
		h->cap[b] = nc;
	}
	h->b[b][h->n[b]++] = k;
	return 0;
}

static int rh_push(struct rheap *h, float level, int idx)
{
	uint64_t k = rh_key(level, idx);
	if (rh_append(h, rh_bucket(k, h->last), k))
		return -1;
	h->size++;
	return 0;
}

/* Pops the cell of the smallest key into *cell; the heap must not be
 * empty. Returns 0, or -1 when out of memory. */
static int rh_pop(struct rheap *h, int *cell)
{
	if (h->n[0] == 0) {
		int b = 1;
		while (h->n[b] == 0)
			b++;
		const uint64_t *src = h->b[b];
		long cnt = h->n[b];
		uint64_t m = src[0];
		for (long k = 1; k < cnt; k++)
			if (src[k] < m)
				m = src[k];
		h->last = m;
		/* every key of bucket b differs from the new 'last' below bit
		 * b - 1: they move to lower buckets, never to b again */
		h->n[b] = 0;
		for (long k = 0; k < cnt; k++)
			if (rh_append(h, rh_bucket(src[k], m), src[k]))
				return -1;
	}
	h->size--;
	*cell = (int)(uint32_t)h->b[0][--h->n[0]];
	return 0;
}

/* A cell likely to be popped soon (the last key of the lowest non-empty
 * bucket: the next pop's bucket when it holds one key), or -1. Only a
 * prefetch hint. */
static int rh_peek(const struct rheap *h)
{
	for (int b = 0; b < RH_BUCKETS; b++)
		if (h->n[b])
			return (int)(uint32_t)h->b[b][h->n[b] - 1];
	return -1;
}

static void rh_free(struct rheap *h)
{
	for (int b = 0; b < RH_BUCKETS; b++)
		free(h->b[b]);
}

/* ---- priority-flood: the filled levels in parallel ------------------------
 *
 * The level of cell i is a bottleneck distance: the least, over the paths
 * from an outlet o to i that avoid walls, of the largest weight on the
 * path, a cell's weight being z, an outlet's max(z, outlet level). Any
 * flood order gives it, bit for bit (only comparisons, no arithmetic), so
 * it can be cut into strips of rows (after Barnes 2016, "Parallel
 * priority-flood depression filling for trillion cell digital elevation
 * models on desktops or clusters"):
 *
 *  1. Each strip floods on its own (in parallel), from its outlets (label
 *     1) and from its rows next to another strip at their z (each seed
 *     takes, when popped, the label of a neighbour already popped at or
 *     below it, else a new one). p(i) = the least within-strip path
 *     weight from the strip's seeds; label(i) = the seed whose flood tree
 *     holds i, so a path from that seed to i of weight p(i) exists.
 *  2. Every pair of 8-neighbours with different labels, within a strip or
 *     across two, is an edge between the labels of weight max(p, p').
 *  3. g(label) = the bottleneck distance from label 1 over these edges
 *     (Dijkstra with max), g = -inf for label 1.
 *  4. level(i) = max(p(i), g(label(i))).
 * Exact: a path from outlet to i crosses label pairs whose edge weights,
 * and p of its cells, are at most the path's weight (a cell's p is at
 * most the weight of the path's last piece inside its strip), so level
 * <= the true level; and the labels' seed paths and the crossings make a
 * real path of weight max(p(i), g), so level >= it.
 * Levels of -0 are written +0 (both floods), so the bytes do not depend
 * on which of two equal zeros a flood met first. */

/* Below this many rows per strip, or with one thread: one strip. */
#define FILL_STRIP_MIN 64

struct ehash { /* min edge weight per label pair, open addressing */
	uint64_t *k;
	float *w;
	size_t cap, n;
	uint64_t last;
	size_t lastslot;
};

static int eh_add(struct ehash *h, uint32_t a, uint32_t b, float w)
{
	if (a > b) {
		uint32_t t = a;
		a = b;
		b = t;
	}
	const uint64_t key = (uint64_t)a << 32 | b;
	if (h->n && key == h->last) { /* along a divide: the same pair again */
		if (w < h->w[h->lastslot])
			h->w[h->lastslot] = w;
		return 0;
	}
	if (2 * (h->n + 1) > h->cap) {
		size_t nc = h->cap ? 2 * h->cap : 1024;
		uint64_t *k = malloc(nc * sizeof(*k));
		float *ww = malloc(nc * sizeof(*ww));
		if (!k || !ww) {
			free(k);
			free(ww);
			return -1;
		}
		memset(k, 0xff, nc * sizeof(*k)); /* empty: all ones */
		for (size_t q = 0; q < h->cap; q++) {
			if (h->k[q] == UINT64_MAX)
				continue;
			size_t s = (size_t)((h->k[q] * 0x9e3779b97f4a7c15ull) >> 20) & (nc - 1);
			while (k[s] != UINT64_MAX)
				s = (s + 1) & (nc - 1);
			k[s] = h->k[q];
			ww[s] = h->w[q];
		}
		free(h->k);
		free(h->w);
		h->k = k;
		h->w = ww;
		h->cap = nc;
	}
	size_t s = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (h->cap - 1);
	while (h->k[s] != UINT64_MAX && h->k[s] != key)
		s = (s + 1) & (h->cap - 1);
	if (h->k[s] == UINT64_MAX) {
		h->k[s] = key;
		h->w[s] = w;
		h->n++;
	} else if (w < h->w[s]) {
		h->w[s] = w;
	}
	h->last = key;
	h->lastslot = s;
	return 0;
}

/* A cell of the strips' flood: terrain, level (p) and label side by side,
 * so a neighbour costs one cache line, not three (the front visits the
 * grid in level order, far from row order). lev is NaN while the cell is
 * open (not yet reached), INFINITY for walls. The tree this flood builds
 * on flats (each cell's first processed neighbour) is what flat_parents
 * replays. */
struct scell {
	float z, lev;
	int lab;
};

/* Step 1 for rows [y0, y1): w[].lev = p (INFINITY for walls, NaN where no
 * seed of the strip reaches), w[].lab = strip-local labels (0 none, 1 the
 * outlets, 2.. the seeds of the rows next to other strips); *nlab the
 * largest label. */
static int flood_strip(struct scell *w, int nx, int ny, int y0,
		       int y1, const unsigned char *outlet,
		       const float *outlet_level, int *nlab)
{
	const long n = (long)(y1 - y0) * nx;
	struct rheap h;
	int *pit = malloc((size_t)n * sizeof(*pit)), next = 2, rc = -1;
	long pit_head = 0, pit_tail = 0;
	memset(&h, 0, sizeof(h));
	if (!pit)
		goto fail;
	for (int y = y0; y < y1; y++)
		for (int x = 0; x < nx; x++) {
			const long i = x + (long)y * nx;
			if (!isnan(w[i].lev))
				continue; /* a wall */
			int is_out = outlet ? outlet[i] != 0 :
				     (x == 0 || y == 0 || x == nx - 1 || y == ny - 1);
			float l = w[i].z;
			if (is_out) {
				if (outlet_level && outlet_level[i] > l)
					l = outlet_level[i];
				w[i].lab = 1;
			} else if (!((y == y0 && y0 > 0) || (y == y1 - 1 && y1 < ny))) {
				continue;
			}
			w[i].lev = l;
			if (rh_push(&h, l, (int)i))
				goto fail;
		}
	while (h.size > 0 || pit_head < pit_tail) {
		int c;
		if (pit_head < pit_tail)
			c = pit[pit_head++];
		else if (rh_pop(&h, &c))
			goto fail;
		/* fetch the rows of the next cell while this one is done: the
		 * front jumps across the strip, memory latency dominates */
		int nxt = pit_head < pit_tail ? pit[pit_head] : rh_peek(&h);
		if (nxt >= 0) {
			__builtin_prefetch(&w[nxt]);
			if (nxt >= (long)(y0 + 1) * nx)
				__builtin_prefetch(&w[nxt - nx]);
			if (nxt + (long)nx < (long)y1 * nx)
				__builtin_prefetch(&w[nxt + nx]);
		}
		const float lc = w[c].lev;
		const int cx = c % nx, cy = c / nx;
		if (w[c].lab == 0) { /* a seed of the strip's edge rows */
			for (int k = 0; k < 8 && !w[c].lab; k++) {
				int x = cx + DX8[k], y = cy + DY8[k];
				if (x < 0 || y < y0 || x >= nx || y >= y1)
					continue;
				long j = x + (long)y * nx;
				if (w[j].lab && w[j].lev <= lc)
					w[c].lab = w[j].lab;
			}
			if (!w[c].lab)
				w[c].lab = next++;
		}
		for (int k = 0; k < 8; k++) {
			int x = cx + DX8[k], y = cy + DY8[k];
			if (x < 0 || y < y0 || x >= nx || y >= y1)
				continue;
			long j = x + (long)y * nx;
			if (!isnan(w[j].lev))
				continue;
			float zj = w[j].z;
			w[j].lab = w[c].lab;
			if (zj <= lc) {
				w[j].lev = lc;
				pit[pit_tail++] = (int)j;
			} else {
				w[j].lev = zj;
				if (rh_push(&h, zj, (int)j))
					goto fail;
			}
		}
	}
	*nlab = next - 1;
	rc = 0;
fail:
	free(pit);
	rh_free(&h);
	return rc;
}

/* A node of the label graph (step 3): its strip's first node plus the
 * label, label 1 of every strip being node 0. */
static uint32_t node_of(const uint32_t *first, int s, int l)
{
	return l == 1 ? 0 : first[s] + (uint32_t)(l - 2);
}

/* Step 3: Dijkstra with max over the edges (a CSR of both directions). */
struct gq {
	float g;
	uint32_t v;
};

static int gq_less(struct gq a, struct gq b)
{
	return a.g < b.g || (a.g == b.g && a.v < b.v);
}

static int graph_levels(uint32_t nn, struct ehash *hs, int ns, float *g)
{
	size_t ne = 0;
	for (int s = 0; s < ns; s++)
		ne += hs[s].n;
	uint32_t *off = calloc((size_t)nn + 1, sizeof(*off)), *to = NULL;
	float *ew = NULL;
	struct gq *q = NULL;
	int rc = -1;
	if (!off || ne > UINT32_MAX / 2)
		goto fail;
	to = malloc((2 * ne + 1) * sizeof(*to));
	ew = malloc((2 * ne + 1) * sizeof(*ew));
	q = malloc((2 * ne + 2) * sizeof(*q));
	if (!to || !ew || !q)
		goto fail;
	for (int s = 0; s < ns; s++)
		for (size_t k = 0; k < hs[s].cap; k++)
			if (hs[s].k[k] != UINT64_MAX) {
				off[(uint32_t)(hs[s].k[k] >> 32) + 1]++;
				off[(uint32_t)hs[s].k[k] + 1]++;
			}
	for (uint32_t v = 0; v < nn; v++)
		off[v + 1] += off[v];
	for (int s = 0; s < ns; s++)
		for (size_t k = 0; k < hs[s].cap; k++)
			if (hs[s].k[k] != UINT64_MAX) {
				uint32_t a = (uint32_t)(hs[s].k[k] >> 32),
					 b = (uint32_t)hs[s].k[k];
				to[off[a]] = b;
				ew[off[a]++] = hs[s].w[k];
				to[off[b]] = a;
				ew[off[b]++] = hs[s].w[k];
			}
	for (uint32_t v = nn; v > 0; v--) /* back to the starts */
		off[v] = off[v - 1];
	off[0] = 0;
	for (uint32_t v = 0; v < nn; v++)
		g[v] = INFINITY;
	g[0] = -INFINITY;
	size_t nq = 0;
	q[nq++] = (struct gq){ -INFINITY, 0 };
	while (nq > 0) {
		struct gq top = q[0];
		q[0] = q[--nq];
		for (size_t i = 0;;) { /* sift down */
			size_t l = 2 * i + 1, r = l + 1, m = i;
			if (l < nq && gq_less(q[l], q[m]))
				m = l;
			if (r < nq && gq_less(q[r], q[m]))
				m = r;
			if (m == i)
				break;
			struct gq t = q[i];
			q[i] = q[m];
			q[m] = t;
			i = m;
		}
		if (top.g > g[top.v])
			continue; /* an older entry */
		for (uint32_t e = off[top.v]; e < off[top.v + 1]; e++) {
			float c = ew[e] > top.g ? ew[e] : top.g;
			if (!(c < g[to[e]]))
				continue;
			g[to[e]] = c;
			size_t i = nq++; /* sift up */
			q[i] = (struct gq){ c, to[e] };
			while (i > 0 && gq_less(q[i], q[(i - 1) / 2])) {
				struct gq t = q[i];
				q[i] = q[(i - 1) / 2];
				q[(i - 1) / 2] = t;
				i = (i - 1) / 2;
			}
		}
	}
	rc = 0;
fail:
	free(off);
	free(to);
	free(ew);
	free(q);
	return rc;
}

static int fill_strips(const float *z, int nx, int ny,
		       const unsigned char *outlet, const float *outlet_level,
		       float *level, int ns)
{
	const long n = (long)nx * ny;
	struct scell *w = malloc((size_t)n * sizeof(*w));
	int *nlab = calloc((size_t)ns, sizeof(int));
	uint32_t *first = malloc(((size_t)ns + 1) * sizeof(*first));
	struct ehash *hs = calloc((size_t)ns, sizeof(*hs));
	float *g = NULL;
	int fail = 0, rc = -1;
	if (!w || !nlab || !first || !hs)
		goto out;
#define STRIP_Y(s) ((int)((long)ny * (s) / ns))
#pragma omp parallel for schedule(static, 1) reduction(| : fail)
	for (int s = 0; s < ns; s++) {
		for (long i = (long)STRIP_Y(s) * nx; i < (long)STRIP_Y(s + 1) * nx; i++) {
			w[i].z = z[i];
			w[i].lev = isfinite(z[i]) ? NAN : INFINITY;
			w[i].lab = 0;
		}
		fail |= flood_strip(w, nx, ny, STRIP_Y(s), STRIP_Y(s + 1),
				    outlet, outlet_level, &nlab[s]) != 0;
	}
	if (fail)
		goto out;
	first[0] = 1; /* node 0: the outlets */
	for (int s = 0; s < ns; s++) {
		if ((uint64_t)first[s] + (uint64_t)nlab[s] >= UINT32_MAX)
			goto out;
		first[s + 1] = first[s] + (uint32_t)(nlab[s] > 1 ? nlab[s] - 1 : 0);
	}
	/* step 2: each strip's pairs, and those with the next strip's first
	   row (east, south-west, south, south-east of each cell) */
#pragma omp parallel for schedule(static, 1) reduction(| : fail)
	for (int s = 0; s < ns; s++) {
		static const int ex[4] = { 1, -1, 0, 1 }, ey[4] = { 0, 1, 1, 1 };
		for (int y = STRIP_Y(s); y < STRIP_Y(s + 1) && !fail; y++)
			for (int x = 0; x < nx; x++) {
				const long i = x + (long)y * nx;
				if (!w[i].lab)
					continue;
				for (int k = 0; k < 4; k++) {
					int xx = x + ex[k], yy = y + ey[k];
					if (xx < 0 || xx >= nx || yy >= ny)
						continue;
					const long j = xx + (long)yy * nx;
					if (!w[j].lab)
						continue;
					int sj = yy < STRIP_Y(s + 1) ? s : s + 1;
					uint32_t a = node_of(first, s, w[i].lab),
						 b = node_of(first, sj, w[j].lab);
					if (a == b)
						continue;
					float m = w[i].lev > w[j].lev ? w[i].lev : w[j].lev;
					if (eh_add(&hs[s], a, b, m)) {
						fail = 1;
						break;
					}
				}
			}
	}
	if (fail || !(g = malloc((size_t)first[ns] * sizeof(*g))) ||
	    graph_levels(first[ns], hs, ns, g))
		goto out;
	/* step 4 */
#pragma omp parallel for schedule(static, 1)
	for (int s = 0; s < ns; s++)
		for (long i = (long)STRIP_Y(s) * nx; i < (long)STRIP_Y(s + 1) * nx; i++) {
			float l = INFINITY;
			if (w[i].lab) {
				float gl = g[node_of(first, s, w[i].lab)];
				l = w[i].lev >= gl ? w[i].lev : gl;
			}
			level[i] = l + 0.0f;
		}
#undef STRIP_Y
	rc = 0;
out:
	for (int s = 0; hs && s < ns; s++) {
		free(hs[s].k);
		free(hs[s].w);
	}
	free(hs);
	free(g);
	free(first);
	free(nlab);
	free(w);
	return rc;
}

int hydro_fill_strips(const float *z, int nx, int ny,
		      const unsigned char *outlet, const float *outlet_level,
		      float *level, int strips)
{
	if (nx <= 0 || ny <= 0)
		return 0;
	if (strips > ny)
		strips = ny;
	return fill_strips(z, nx, ny, outlet, outlet_level, level,
			   strips > 1 ? strips : 1);
}

int hydro_fill_levels(const float *z, int nx, int ny,
		      const unsigned char *outlet, const float *outlet_level,
		      float *level)
{
	int ns = omp_get_max_threads() * 2;
	if (ns > ny / FILL_STRIP_MIN)
		ns = ny / FILL_STRIP_MIN;
	return hydro_fill_strips(z, nx, ny, outlet, outlet_level, level, ns);
}

int hydro_fill(const float *z, int nx, int ny, const unsigned char *outlet,
	       float *level)
{
	return hydro_fill_levels(z, nx, ny, outlet, NULL, level);
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

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Receivers and order from the flood tree 'parent' of the filled surface
 * 'level' (hydro_receivers). */
static int receivers_from_tree(int nx, int ny, const float *level,
			       const int *parent, int *rcv, int *order)
{
	long n = (long)nx * ny;
	int rc = -1;
	int *first = NULL, *donor = NULL;
	if (order) {
		first = calloc((size_t)n + 1, sizeof(*first));
		donor = malloc((size_t)n * sizeof(*donor));
		if (!first || !donor)
			goto fail;
	}
	/* each cell on its own: any thread count gives the same receivers */
#pragma omp parallel for schedule(static)
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
	return rc;
}

/* The flood tree on the flats, without the flood: parent[i] for every
 * cell i that hydro_receivers sends along the tree (a finite level, not
 * an outlet, no neighbour strictly lower), exactly as the priority-flood
 * sets it; -1 for outlets, walls and unreached cells; i itself for the
 * other cells (a lower neighbour decides: the tree is not read there).
 *
 * Why it can be done apart: the flood processes cells in nondecreasing
 * level. The cells at level L visited before the L-phase are those of
 * the outlets and those beside a strictly lower cell (pushed on the heap
 * at key L); every other cell at level L is first visited during the
 * L-phase, by a processed neighbour at level L (a pit cell). In that
 * phase the heap pops its key-L cells in index order and drains the pit
 * (first in, first out) after each, visiting neighbours in DX8 order, and
 * a cell goes to the pit exactly when its level is L. So within a
 * connected set C of cells at level L the tree is: the heap cells of C by
 * index, each processed and followed by a breadth-first drain over C's
 * unvisited cells. Different sets never meet, so each set is replayed on
 * its own, and only the sets that hold a flat cell. */
static int flat_parents(const float *level, int nx, int ny,
			const unsigned char *outlet, int *parent)
{
	const long n = (long)nx * ny;
	unsigned char *mark = calloc((size_t)n, 1); /* 1 in a set, 2 visited */
	int *comp = malloc((size_t)n * sizeof(*comp)),
	    *pit = malloc((size_t)n * sizeof(*pit));
	if (!mark || !comp || !pit) {
		free(mark);
		free(comp);
		free(pit);
		return -1;
	}
#define IS_OUT(i) (outlet ? outlet[i] != 0 :                              \
		   ((i) % nx == 0 || (i) / nx == 0 || (i) % nx == nx - 1 || \
		    (i) / nx == ny - 1))
	/* the cells a lower neighbour decides, and the flats (mark 3) */
#pragma omp parallel for schedule(static)
	for (long i = 0; i < n; i++) {
		parent[i] = -1;
		if (!isfinite(level[i]) || IS_OUT(i))
			continue;
		const int cx = (int)(i % nx), cy = (int)(i / nx);
		int low = 0;
		for (int k = 0; k < 8 && !low; k++) {
			int x = cx + DX8[k], y = cy + DY8[k];
			if (x >= 0 && y >= 0 && x < nx && y < ny)
				low = level[x + (long)y * nx] < level[i];
		}
		if (low)
			parent[i] = (int)i;
		else
			mark[i] = 3;
	}
	for (long s = 0; s < n; s++) {
		if (mark[s] != 3)
			continue;
		/* the set of s: its cells at the same level, 8-connected */
		const float L = level[s];
		long m = 0, nh = 0;
		comp[m++] = (int)s;
		mark[s] = 1;
		for (long q = 0; q < m; q++) {
			const int c = comp[q], cx = c % nx, cy = c / nx;
			for (int k = 0; k < 8; k++) {
				int x = cx + DX8[k], y = cy + DY8[k];
				if (x < 0 || y < 0 || x >= nx || y >= ny)
					continue;
				long j = x + (long)y * nx;
				if ((mark[j] == 0 || mark[j] == 3) && level[j] == L) {
					mark[j] = 1;
					comp[m++] = (int)j;
				}
			}
		}
		/* its heap cells (outlets, cells beside a lower one) by index,
		   at the front of comp */
		for (long q = 0; q < m; q++) {
			const int c = comp[q];
			if (parent[c] >= 0 || IS_OUT(c)) {
				comp[q] = comp[nh];
				comp[nh++] = c;
			}
		}
		qsort(comp, (size_t)nh, sizeof(*comp), cmp_int);
		for (long q = 0; q < nh; q++)
			mark[comp[q]] = 2;
		/* the L-phase, replayed */
		for (long q = 0; q < nh; q++) {
			long head = 0, tail = 0;
			int c = comp[q];
			for (;;) {
				const int cx = c % nx, cy = c / nx;
				for (int k = 0; k < 8; k++) {
					int x = cx + DX8[k], y = cy + DY8[k];
					if (x < 0 || y < 0 || x >= nx || y >= ny)
						continue;
					long j = x + (long)y * nx;
					if (mark[j] != 1)
						continue;
					mark[j] = 2;
					parent[j] = c;
					pit[tail++] = (int)j;
				}
				if (head == tail)
					break;
				c = pit[head++];
			}
		}
	}
#undef IS_OUT
	free(pit);
	free(comp);
	free(mark);
	return 0;
}

int hydro_receivers(const float *z, int nx, int ny,
		    const unsigned char *outlet, const float *outlet_level,
		    const float *level, int *rcv, int *order)
{
	(void)z;
	(void)outlet_level;
	if (nx <= 0 || ny <= 0)
		return 0;
	int *parent = malloc((size_t)nx * ny * sizeof(*parent)), rc = -1;
	if (parent && !flat_parents(level, nx, ny, outlet, parent))
		rc = receivers_from_tree(nx, ny, level, parent, rcv, order);
	free(parent);
	return rc;
}

int hydro_fill_receivers(const float *z, int nx, int ny,
			 const unsigned char *outlet,
			 const float *outlet_level, float *level, int *rcv,
			 int *order)
{
	if (nx <= 0 || ny <= 0)
		return 0;
	if (hydro_fill_levels(z, nx, ny, outlet, outlet_level, level))
		return -1;
	return hydro_receivers(z, nx, ny, outlet, outlet_level, level, rcv,
			       order);
}
