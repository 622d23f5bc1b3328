/*
 * par.c - row bands and the exchange helpers of par.h (no MPI here).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbm.h"
#include "par.h"

void wb_par_split(struct wb_par *p, int ny, const double *work)
{
	const int n = p->size;
	p->ny = ny;
	double tot = 0;
	for (int j = 0; j < ny; j++)
		tot += work ? work[j] : 1.0;
	/* band r ends at the first row where the running sum reaches
	 * (r + 1) / n of the total, leaving room for the bands after it */
	double acc = 0;
	int j = 0;
	/* two rows at least per band (the halos are two rows deep) */
	const int least = ny >= 2 * n ? 2 : ny >= n ? 1 : 0;
	p->row0[0] = 0;
	for (int r = 1; r < n; r++) {
		double goal = tot * r / n;
		int lo = p->row0[r - 1] + least;
		int hi = ny - (n - r) * least;
		while (j < ny && (j < lo || acc + (work ? work[j] : 1.0) <= goal) &&
		       j < hi) {
			acc += work ? work[j] : 1.0;
			j++;
		}
		p->row0[r] = j;
	}
	p->row0[n] = ny;
}

int wb_par_rows(struct wb_par *p, void *base, size_t elsize, long row_elems,
		int first, int extra)
{
	if (!p || p->size <= 1)
		return 0;
	char *b = (char *)base + (size_t)first * row_elems * elsize;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = (long)(p->row0[r] + (r == p->size ? extra : 0)) *
			    row_elems;
	int e = p->allgather(p->user, b, elsize, p->off);
	p->failed |= e != 0;
	return e;
}

int wb_par_list(struct wb_par *p, void *base, size_t elsize,
		const long *row_start)
{
	if (!p || p->size <= 1)
		return 0;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = row_start[p->row0[r]];
	int e = p->allgather(p->user, base, elsize, p->off);
	p->failed |= e != 0;
	return e;
}

int wb_par_halo(struct wb_par *p, void *base, size_t elsize, long row_elems,
		int first, int hw)
{
	if (!p || p->size <= 1)
		return 0;
	char *b = (char *)base + (size_t)first * row_elems * elsize;
	int e = p->halo(p->user, b, (size_t)row_elems * elsize, hw);
	p->failed |= e != 0;
	return e;
}

long long wb_par_sum(struct wb_par *p, long long v)
{
	if (!p || p->size <= 1)
		return v;
	long long *all = calloc((size_t)p->size, sizeof(*all));
	if (!all) {
		p->failed = 1;
		return v;
	}
	all[p->rank] = v;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = r;
	p->failed |= p->allgather(p->user, all, sizeof(*all), p->off) != 0;
	long long t = 0;
	for (int r = 0; r < p->size; r++)
		t += all[r];
	free(all);
	return t;
}

/* The padded rows (or columns) of the ring: the ghost line and the two
 * interior lines at each end (distinct, ascending); their count. */
static int ring_lines(int n, int out[6])
{
	int c[6] = { 0, 1, 2, n - 1, n, n + 1 }, k = 0;
	for (int q = 0; q < 6; q++)
		if (c[q] >= 0 && c[q] <= n + 1 && (k == 0 || c[q] > out[k - 1]))
			out[k++] = c[q];
	return k;
}

/* Owner of padded row R: the band of interior row R - 1 (the ghost rows
 * go with rows 0 and ny - 1). */
static int owns(const struct wb_par *p, int r, int R, int ny)
{
	int j = R - 1 < 0 ? 0 : R - 1 >= ny ? ny - 1 : R - 1;
	return j >= p->row0[r] && j < p->row0[r + 1];
}

int wb_par_ring(struct wb_par *p, void *base, size_t elsize, long W, int nx,
		int ny)
{
	if (!p || p->size <= 1)
		return 0;
	int rows[6], nr = ring_lines(ny, rows), cols[6], nc = ring_lines(nx, cols);
	size_t rb = (size_t)W * elsize, cb = (size_t)nc * elsize;
	char *f = base;
	char *buf = malloc((size_t)nr * rb + (size_t)ny * cb);
	if (!buf) {
		p->failed = 1;
		return -1;
	}
	const int me = p->rank, j0 = p->row0[me], j1 = p->row0[me + 1];
	/* whole padded rows: ownership is monotone in the row, so rank r's
	   rows are a contiguous run of the list */
	for (int k = 0; k < nr; k++)
		if (owns(p, me, rows[k], ny))
			memcpy(buf + k * rb, f + (size_t)rows[k] * rb, rb);
	int k = 0;
	for (int r = 0; r < p->size; r++) {
		p->off[r] = k;
		while (k < nr && owns(p, r, rows[k], ny))
			k++;
	}
	p->off[p->size] = k;
	int e = k != nr; /* cannot happen with non-empty bands */
	if (!e)
		e = p->allgather(p->user, buf, rb, p->off);
	/* the columns of every interior row: by band */
	char *cbuf = buf + (size_t)nr * rb;
	for (int j = j0; j < j1; j++)
		for (int q = 0; q < nc; q++)
			memcpy(cbuf + (size_t)j * cb + q * elsize,
			       f + ((size_t)(j + 1) * W + cols[q]) * elsize,
			       elsize);
	for (int r = 0; r <= p->size; r++)
		p->off[r] = p->row0[r];
	e |= p->allgather(p->user, cbuf, cb, p->off);
	for (int q = 0; q < nr; q++)
		memcpy(f + (size_t)rows[q] * rb, buf + q * rb, rb);
	for (int j = 0; j < ny; j++)
		for (int q = 0; q < nc; q++)
			memcpy(f + ((size_t)(j + 1) * W + cols[q]) * elsize,
			       cbuf + (size_t)j * cb + q * elsize, elsize);
	free(buf);
	p->failed |= e != 0;
	return e;
}

/* After a step: the per-row partials to all; then, when a row went bad
 * (the step checks the depth range and may rescale: rare), all rows of
 * f and h; else the halo rows and the boundary ring, which are all the
 * next step reads from other ranks. */
int lbm_par_exchange(struct lbm *L)
{
	struct wb_par *p = L->par;
	const int nb = !L->cur;
	int e = 0;
	e |= wb_par_rows(p, L->row_clamp, sizeof(long), 1, 1, 0);
	e |= wb_par_rows(p, L->row_bad, sizeof(int), 1, 1, 0);
	e |= wb_par_rows(p, L->row_in, sizeof(int64_t), 1, 1, 0);
	e |= wb_par_rows(p, L->row_out, sizeof(int64_t), 1, 1, 0);
	int bad = 0;
	for (int j = 1; j <= L->ny; j++)
		bad |= L->row_bad[j] != 0;
	if (bad)
		return e | lbm_par_full(L, nb);
	for (int a = 0; a < LBM_Q; a++) {
		e |= wb_par_halo(p, L->f[nb][a], sizeof(int32_t), L->W, 1, 1);
		e |= wb_par_ring(p, L->f[nb][a], sizeof(int32_t), L->W, L->nx,
				 L->ny);
	}
	e |= wb_par_halo(p, L->h[nb], sizeof(float), L->W, 1, 1);
	e |= wb_par_ring(p, L->h[nb], sizeof(float), L->W, L->nx, L->ny);
	return e;
}

int lbm_par_full(struct lbm *L, int which)
{
	struct wb_par *p = L->par;
	int e = 0;
	for (int a = 0; a < LBM_Q; a++)
		e |= wb_par_rows(p, L->f[which][a], sizeof(int32_t), L->W, 1, 0);
	e |= wb_par_rows(p, L->h[which], sizeof(float), L->W, 1, 0);
	return e;
}
