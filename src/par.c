/*
 * par.c - row bands and the exchange helpers of par.h (no MPI here).
 */
#include <stdint.h>

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
	p->row0[0] = 0;
	for (int r = 1; r < n; r++) {
		double goal = tot * r / n;
		int lo = p->row0[r - 1] + (ny >= n ? 1 : 0);
		int hi = ny >= n ? ny - (n - r) : ny;
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
	return p->allgather(p->user, b, elsize, p->off);
}

int wb_par_list(struct wb_par *p, void *base, size_t elsize,
		const long *row_start)
{
	if (!p || p->size <= 1)
		return 0;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = row_start[p->row0[r]];
	return p->allgather(p->user, base, elsize, p->off);
}

int lbm_par_exchange(struct lbm *L)
{
	struct wb_par *p = L->par;
	const int nb = !L->cur;
	int e = 0;
	for (int a = 0; a < LBM_Q; a++)
		e |= wb_par_rows(p, L->f[nb][a], sizeof(int32_t), L->W, 1, 0);
	e |= wb_par_rows(p, L->h[nb], sizeof(float), L->W, 1, 0);
	e |= wb_par_rows(p, L->row_clamp, sizeof(long), 1, 1, 0);
	e |= wb_par_rows(p, L->row_bad, sizeof(int), 1, 1, 0);
	e |= wb_par_rows(p, L->row_in, sizeof(int64_t), 1, 1, 0);
	e |= wb_par_rows(p, L->row_out, sizeof(int64_t), 1, 1, 0);
	return e;
}
