/*
 * coarse.c - restriction of the solver grid and mass-exact prolongation of
 * a coarse depth (coarse.h, docs/hydrology.md "Coarse-to-fine").
 *
 * Restriction takes the fine raster, not the scene: every field is an
 * average or a rule over the k x k fine cells of a coarse cell, so the
 * discharge of every source is kept exactly and the coarse grid sees the
 * same blockers, held levels and modifiers the fine one does. Terrain is
 * the area mean (not the minimum): a channel narrower than a coarse cell
 * stays connected because the mean of a valley section is still below
 * the means beside it, and the mean bed makes a coarse depth mean the same
 * volume as the fine cells under the same surface. The minimum would
 * deepen every lake by the relief inside a coarse cell.
 *
 * Prolongation, per coarse cell C with surface eta = zc + hc and m fine
 * cells: h_k = max(0, eta - z_k) on its fine cells (walls excluded), then
 * h_k *= hc m / sum h_k. The surface shape follows the fine bed (banks dry,
 * the thalweg deep) and the cell's volume is the coarse one. Sums in
 * double, in index order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coarse.h"

#define WALL_GAP 1e-3f /* a blocker this close to the bed is a wall */

int wb_coarse_levels(int setting, int nx, int ny, int warm)
{
	int side = nx < ny ? nx : ny, l = 0;
	(void)warm;
	if (setting < 0)
		return 0; /* "auto": see coarse.h */
	while (l < setting && l < WB_COARSE_MAX && (side >> (l + 1)) >= 8)
		l++;
	return l;
}

static int is_wall(const struct wb_raster *r, long q)
{
	return r->block_bot && r->block_bot[q] <= r->z[q] + WALL_GAP;
}

enum wb_status wb_coarse_restrict(const struct wb_raster *f, int k,
				  struct wb_raster *c)
{
	if (k < 2 || k > WB_COARSE_FACTOR_MAX || f->nx < 1 || f->ny < 1)
		return WB_EUSAGE;
	int nx = (f->nx + k - 1) / k, ny = (f->ny + k - 1) / k;
	if (wb_raster_alloc(c, nx, ny, f->dx * k) != WB_OK)
		return WB_EIO;
	c->origin[0] = f->origin[0];
	c->origin[1] = f->origin[1];
	memcpy(c->edges, f->edges, sizeof(c->edges));
	c->total_inflow = f->total_inflow;
	for (int J = 0; J < ny; J++)
		for (int I = 0; I < nx; I++) {
			long C = I + (long)J * nx;
			double z = 0, h = 0, s = 0, mk = 0, mu = 0, mv = 0;
			double fix = 0, clear = INFINITY, top = -INFINITY;
			int m = 0, nfix = 0, nblk = 0, body = 0, line = 0;
			/* a row or a column of fine cells all blocked: a wall
			 * (or deck) crossing the coarse cell */
			int cols = 0, rows = 0, rowb[WB_COARSE_FACTOR_MAX] = { 0 },
			    colb[WB_COARSE_FACTOR_MAX] = { 0 };
			uint8_t fl = 0;
			for (int j = J * k; j < (J + 1) * k && j < f->ny; j++)
				for (int i = I * k; i < (I + 1) * k && i < f->nx; i++) {
					long q = i + (long)j * f->nx;
					uint8_t ff = f->flags ? f->flags[q] : 0;
					m++;
					z += f->z[q];
					h += f->h0 ? f->h0[q] : 0;
					s += f->src ? f->src[q] : 0;
					if (f->mod_k && f->mod_k[q] > 0) {
						mk += f->mod_k[q];
						mu += f->mod_k[q] * f->mod_u[q];
						mv += f->mod_k[q] * f->mod_v[q];
					}
					if (f->block_bot && f->block_bot[q] < INFINITY) {
						nblk++;
						rowb[j - J * k]++;
						colb[i - I * k]++;
						double cl = (double)f->block_bot[q] - f->z[q];
						if (cl < clear)
							clear = cl;
						if (f->block_top && f->block_top[q] > top)
							top = f->block_top[q];
					}
					if ((ff & WB_CELL_FIXED) && f->fixed_level) {
						nfix++;
						fix += f->fixed_level[q];
					}
					fl |= ff & (WB_CELL_SINK_ALL | WB_CELL_SOURCE |
						    WB_CELL_MODIFIER);
					if (!body && f->body)
						body = f->body[q];
				}
			rows = ((J + 1) * k < f->ny ? (J + 1) * k : f->ny) - J * k;
			cols = ((I + 1) * k < f->nx ? (I + 1) * k : f->nx) - I * k;
			for (int t = 0; t < k; t++)
				line |= (t < rows && rowb[t] == cols) ||
					(t < cols && colb[t] == rows);
			c->z[C] = (float)(z / m);
			c->h0[C] = (float)(h / m);
			c->src[C] = (float)(s / ((double)k * k));
			if (mk > 0) {
				c->mod_k[C] = (float)(mk / m);
				c->mod_u[C] = (float)(mu / mk);
				c->mod_v[C] = (float)(mv / mk);
			}
			if (2 * nblk >= m || line) {
				double bot = c->z[C] + clear;
				if (clear <= WALL_GAP)
					bot = c->z[C]; /* a wall stays a wall */
				c->block_bot[C] = (float)bot;
				c->block_top[C] = (float)top;
				fl |= WB_CELL_BLOCKER;
			}
			if (2 * nfix >= m) {
				fl |= WB_CELL_FIXED;
				c->fixed_level[C] = (float)(fix / nfix);
			}
			c->body[C] = (uint8_t)body;
			c->flags[C] = fl;
		}
	return WB_OK;
}

void wb_coarse_restrict_depth(const struct wb_raster *f, int k,
			      const float *hf, const struct wb_raster *c,
			      float *hc)
{
	for (int J = 0; J < c->ny; J++)
		for (int I = 0; I < c->nx; I++) {
			double h = 0;
			int m = 0;
			for (int j = J * k; j < (J + 1) * k && j < f->ny; j++)
				for (int i = I * k; i < (I + 1) * k && i < f->nx; i++) {
					h += hf[i + (long)j * f->nx];
					m++;
				}
			hc[I + (long)J * c->nx] = m ? (float)(h / m) : 0.0f;
		}
}

double wb_coarse_prolong(const struct wb_raster *c, const float *hc, int k,
			 const struct wb_raster *f, float *hf)
{
	double worst = 0;
	for (int J = 0; J < c->ny; J++)
		for (int I = 0; I < c->nx; I++) {
			long C = I + (long)J * c->nx;
			int j0 = J * k, j1 = (J + 1) * k < f->ny ? (J + 1) * k : f->ny;
			int i0 = I * k, i1 = (I + 1) * k < f->nx ? (I + 1) * k : f->nx;
			int m = (j1 - j0) * (i1 - i0), open = 0;
			double want = (double)(hc[C] > 0 ? hc[C] : 0) * m;
			double eta = (double)c->z[C] + (hc[C] > 0 ? hc[C] : 0);
			double sum = 0;
			for (int j = j0; j < j1; j++)
				for (int i = i0; i < i1; i++) {
					long q = i + (long)j * f->nx;
					double h = 0;
					if (!is_wall(f, q)) {
						open++;
						h = eta - f->z[q];
						if (!(h > 0))
							h = 0;
					}
					hf[q] = (float)h;
					sum += h;
				}
			if (!(want > 0)) {
				for (int j = j0; j < j1; j++)
					for (int i = i0; i < i1; i++)
						hf[i + (long)j * f->nx] = 0.0f;
				continue;
			}
			/* eta under every open bed (rounding), or all walls:
			 * spread the volume evenly over what can hold it */
			int even = !(sum > 0);
			double sc = even ? want / (open ? open : m) : want / sum;
			double got = 0;
			for (int j = j0; j < j1; j++)
				for (int i = i0; i < i1; i++) {
					long q = i + (long)j * f->nx;
					double h = even ? (open && is_wall(f, q) ? 0 : 1) : hf[q];
					hf[q] = (float)(h * sc);
					got += hf[q];
				}
			double e = fabs(got - want) / want;
			if (e > worst)
				worst = e;
		}
	return worst;
}

void wb_coarse_restrict_velocity(const struct wb_raster *f, int k,
				 const float *hf, const float *uf,
				 const float *vf, const struct wb_raster *c,
				 float *uc, float *vc)
{
	for (int J = 0; J < c->ny; J++)
		for (int I = 0; I < c->nx; I++) {
			double h = 0, qu = 0, qv = 0;
			for (int j = J * k; j < (J + 1) * k && j < f->ny; j++)
				for (int i = I * k; i < (I + 1) * k && i < f->nx; i++) {
					long q = i + (long)j * f->nx;
					double hq = hf[q] > 0 ? hf[q] : 0;
					h += hq;
					qu += hq * uf[q];
					qv += hq * vf[q];
				}
			long C = I + (long)J * c->nx;
			uc[C] = h > 0 ? (float)(qu / h) : 0.0f;
			vc[C] = h > 0 ? (float)(qv / h) : 0.0f;
		}
}

void wb_coarse_prolong_velocity(const struct wb_raster *c, const float *uc,
				const float *vc, int k,
				const struct wb_raster *f, const float *hf,
				float *uf, float *vf)
{
	for (int J = 0; J < c->ny; J++)
		for (int I = 0; I < c->nx; I++) {
			long C = I + (long)J * c->nx;
			int j0 = J * k, j1 = (J + 1) * k < f->ny ? (J + 1) * k : f->ny;
			int i0 = I * k, i1 = (I + 1) * k < f->nx ? (I + 1) * k : f->nx;
			double s1 = 0, s53 = 0;
			for (int j = j0; j < j1; j++)
				for (int i = i0; i < i1; i++) {
					double h = hf[i + (long)j * f->nx];
					if (h > 0) {
						s1 += h;
						s53 += pow(h, 5.0 / 3.0);
					}
				}
			double a = s53 > 0 ? s1 / s53 : 0;
			for (int j = j0; j < j1; j++)
				for (int i = i0; i < i1; i++) {
					long q = i + (long)j * f->nx;
					double h = hf[q];
					double w = h > 0 ? a * pow(h, 2.0 / 3.0) : 0;
					uf[q] = (float)(w * uc[C]);
					vf[q] = (float)(w * vc[C]);
				}
		}
}
