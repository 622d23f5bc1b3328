/*
 * unsteady.c - where a bake that stopped before steady is still changing
 * (solve.h, wb_unsteady_where).
 *
 * The steady test compares the mean velocity of two windows, weighted by
 * depth (the residual's numerator: h |u1 - u0|^2 over the cells deeper
 * than the film limit). This sums that numerator by square tiles and
 * reports the tile holding the most of it and the box around the fewest
 * tiles, the largest first, that hold at least half: a technical artist
 * told "not steady" is also told where to look (a lake's gyre, a jet, a
 * basin still filling). Each tile is summed by one thread, cells in row
 * order, and the total in tile order: the same bytes for any thread
 * count.
 */
#include <stdlib.h>
#include <string.h>

#include "solve.h"

/* at most this many tiles along a side */
#define TILES_MAX 32

struct tile {
	double a;
	int k;
};

/* larger first; equal ones in row-major order */
static int by_share(const void *x, const void *y)
{
	const struct tile *p = x, *q = y;
	if (p->a != q->a)
		return p->a < q->a ? 1 : -1;
	return (p->k > q->k) - (p->k < q->k);
}

static void tile_box(int k, int tx, int T, int nx, int ny, int b[4])
{
	int ti = k % tx, tj = k / tx;
	b[0] = ti * T;
	b[1] = (ti + 1) * T < nx ? (ti + 1) * T : nx;
	b[2] = tj * T;
	b[3] = (tj + 1) * T < ny ? (tj + 1) * T : ny;
}

int wb_unsteady_where(int nx, int ny, const float *h, const float *u1,
		      const float *v1, const float *u0, const float *v0,
		      float thin, struct wb_solve_report *rep)
{
	rep->unsteady_tile = 0;
	if (nx <= 0 || ny <= 0 || !h || !u1 || !v1 || !u0 || !v0)
		return 0;
	int T = WB_CLAMP_BLOCK;
	while ((nx + T - 1) / T > TILES_MAX || (ny + T - 1) / T > TILES_MAX)
		T *= 2;
	const int tx = (nx + T - 1) / T, ty = (ny + T - 1) / T;
	struct tile *t = calloc((size_t)tx * ty, sizeof(*t));
	if (!t)
		return -1;
#pragma omp parallel for schedule(dynamic, 1)
	for (int k = 0; k < tx * ty; k++) {
		int b[4];
		tile_box(k, tx, T, nx, ny, b);
		double a = 0.0;
		for (int j = b[2]; j < b[3]; j++)
			for (size_t q = (size_t)j * nx + b[0];
			     q < (size_t)j * nx + b[1]; q++) {
				if (!(h[q] > thin))
					continue;
				double du = (double)u1[q] - u0[q];
				double dv = (double)v1[q] - v0[q];
				a += h[q] * (du * du + dv * dv);
			}
		t[k].a = a;
		t[k].k = k;
	}
	double tot = 0.0;
	for (int k = 0; k < tx * ty; k++)
		tot += t[k].a;
	if (!(tot > 0.0)) {
		free(t);
		return 0;
	}
	qsort(t, (size_t)tx * ty, sizeof(*t), by_share);
	tile_box(t[0].k, tx, T, nx, ny, rep->unsteady_most);
	rep->unsteady_most_share = t[0].a / tot;
	memcpy(rep->unsteady_box, rep->unsteady_most, sizeof(rep->unsteady_box));
	double s = 0.0;
	for (int k = 0; k < tx * ty && s < 0.5 * tot; k++) {
		int b[4];
		tile_box(t[k].k, tx, T, nx, ny, b);
		rep->unsteady_box[0] = b[0] < rep->unsteady_box[0] ? b[0] : rep->unsteady_box[0];
		rep->unsteady_box[1] = b[1] > rep->unsteady_box[1] ? b[1] : rep->unsteady_box[1];
		rep->unsteady_box[2] = b[2] < rep->unsteady_box[2] ? b[2] : rep->unsteady_box[2];
		rep->unsteady_box[3] = b[3] > rep->unsteady_box[3] ? b[3] : rep->unsteady_box[3];
		s += t[k].a;
	}
	rep->unsteady_box_share = s / tot;
	rep->unsteady_tile = T;
	free(t);
	return 0;
}
