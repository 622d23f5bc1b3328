/*
 * maps.c - LOD0 maps from a solved state, and the water-aware pyramid step.
 *
 * Indexing: pixel (i, j) is element i + j*nx (include/wbake.h); LOD0 pixels
 * are the solver's cells (spacing r->dx, corner at r->origin).
 *
 * LOD0 layers (docs/maps.md has the full rules):
 *   wet       h > sim.dry_depth and h >= output.min_depth, and where
 *             h < WB_FLOW_DEPTH_FACTOR * min_depth also h |u| >=
 *             output.min_flow (sheet flow under rain is not water; the
 *             solver keeps all water, docs/hydrology.md)
 *   height    z + h on wet pixels; WB_DRY_HEIGHT (-65504, the most negative
 *             finite half float) on dry ones, so a runtime that gathers
 *             four texels tests "h < -65000" and never mistakes the
 *             sentinel for water at some height (terrain is validated far
 *             above it).
 *   flow      (u, v) m/s on wet pixels, 0 on dry ones.
 *   material  see maps_material(): region of a body -> its material; other
 *             wet pixels -> the body nearest through wet pixels (multi-source
 *             breadth-first search over 4-connected wet pixels; equal
 *             distance -> lowest body index); unreached -> first material.
 *   distance  exact Euclidean distance transform (Felzenszwalb & Huttenlocher,
 *             "Distance Transforms of Sampled Functions", ToC 2012): D_dry(p)
 *             = min over dry q of |p - q|^2 in pixels, D_wet likewise;
 *             sdf = +(sqrt(D_dry) - 1/2) dx in water, -(sqrt(D_wet) - 1/2) dx
 *             on land (the shoreline lies half a pixel from the centres of
 *             the boundary pixels), clamped to [-distance_max, distance_max].
 *   foam      st->foam clamped to [0, 1] on wet pixels, 0 on dry ones.
 *
 * Pyramid step (maps_downsample): parent (i, j) of children (2i+a, 2j+b),
 * a, b in {0, 1}, those inside the child extent counted. With W the wet
 * children:
 *   wet       W non-empty (water never vanishes going coarser, so the mesh
 *             at a low LOD covers the shore of the finer ones - the talk
 *             expands the mesh for the same reason)
 *   height    mean of the wet children's heights (dry ones do not drag it)
 *   depth     sum of the wet children's depths / 4 (water volume per area)
 *   flow      depth-weighted mean sum(d u) / sum(d): discharge is conserved
 *   material  most frequent among W; ties -> lowest id
 *   distance  mean of all children in extent, in metres (the zero set keeps
 *             tracking the LOD0 shoreline to sub-pixel accuracy)
 *   foam      mean over W
 * Sums run in double in fixed child order: exact for up to four floats, so
 * equal children give exactly their value back and results do not depend on
 * threads. OpenMP over rows.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

static int nthreads(int threads)
{
	return threads > 0 ? threads : 1;
}

void maps_free(struct wb_maps *m)
{
	if (!m)
		return;
	free(m->height);
	free(m->u);
	free(m->v);
	free(m->material);
	free(m->distance);
	free(m->foam);
	free(m->depth);
	memset(m, 0, sizeof *m);
}

static int maps_alloc(struct wb_maps *m, int nx, int ny, double dx, int foam)
{
	size_t n = (size_t)nx * (size_t)ny;
	memset(m, 0, sizeof *m);
	m->nx = nx;
	m->ny = ny;
	m->dx = dx;
	/* the fields that are 0 where dry come zeroed (for large maps, pages
	   the kernel backs only where a wet pixel is written): memory
	   follows the water; height (the dry sentinel) and distance are
	   written everywhere */
	m->height = malloc(n * sizeof(float));
	m->u = calloc(n, sizeof(float));
	m->v = calloc(n, sizeof(float));
	m->material = calloc(n, 1);
	m->distance = malloc(n * sizeof(float));
	m->depth = calloc(n, sizeof(float));
	if (foam)
		m->foam = calloc(n, sizeof(float));
	if (!m->height || !m->u || !m->v || !m->material || !m->distance ||
	    !m->depth || (foam && !m->foam)) {
		maps_free(m);
		return -1;
	}
	return 0;
}

/* ---- distance transform ------------------------------------------------ */

/* 1D lower envelope of parabolas (F&H algorithm 1): dst[q] = min_p
 * (q - p)^2 + f[p], f finite (BIG for "no feature"). v, z scratch of n and
 * n+1. Everything is an integer below 2^53 except the intersections. */
static void edt_1d(const double *restrict f, double *restrict dst, int n,
		   int *restrict v, double *restrict z)
{
	int k = 0;
	v[0] = 0;
	z[0] = -HUGE_VAL;
	z[1] = HUGE_VAL;
	for (int q = 1; q < n; q++) {
		double s;
		/* z[0] = -inf stops the loop at k = 0 */
		for (;;) {
			int p = v[k];
			s = ((f[q] + (double)q * q) - (f[p] + (double)p * p)) /
			    (2.0 * (q - p));
			if (s > z[k])
				break;
			k--;
		}
		k++;
		v[k] = q;
		z[k] = s;
		z[k + 1] = HUGE_VAL;
	}
	k = 0;
	for (int q = 0; q < n; q++) {
		while (z[k + 1] < q)
			k++;
		double t = q - v[k];
		dst[q] = t * t + f[v[k]];
	}
}

/* Squared distance (pixels^2) from every pixel to the nearest pixel with
 * feat[i] == want; >= big when there is none. */
static int edt_2d(const uint8_t *feat, uint8_t want, int nx, int ny,
		  int threads, double big, double *out)
{
	int fail = 0;
	/* Pass 1, columns: distance to the nearest feature in the same column
	 * (two scans), stored squared; rows processed in order, so each scan
	 * vectorises over x. Column blocks in parallel. */
	const int cb = 256;
	int nblk = (nx + cb - 1) / cb;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(static)
	for (int b = 0; b < nblk; b++) {
		int x0 = b * cb, x1 = x0 + cb < nx ? x0 + cb : nx;
		for (int j = 0; j < ny; j++) {
			const uint8_t *fr = feat + (size_t)j * nx;
			double *o = out + (size_t)j * nx;
			const double *op = j ? o - nx : NULL;
			for (int i = x0; i < x1; i++) {
				double g = big;
				if ((fr[i] != 0) == (want != 0))
					g = 0;
				else if (op && op[i] < big)
					g = op[i] + 1;
				o[i] = g;
			}
		}
		for (int j = ny - 2; j >= 0; j--) {
			double *o = out + (size_t)j * nx;
			const double *on = o + nx;
			for (int i = x0; i < x1; i++)
				if (on[i] + 1 < o[i])
					o[i] = on[i] + 1;
		}
		for (int j = 0; j < ny; j++) {
			double *o = out + (size_t)j * nx;
			for (int i = x0; i < x1; i++)
				o[i] = o[i] < big ? o[i] * o[i] : big;
		}
	}
	/* Pass 2, rows: 1D squared EDT of the column distances. */
#pragma omp parallel num_threads(nthreads(threads))
	{
		double *f = malloc((size_t)nx * sizeof(double));
		double *z = malloc(((size_t)nx + 1) * sizeof(double));
		int *v = malloc((size_t)nx * sizeof(int));
		int bad = !f || !z || !v;
		if (bad) {
#pragma omp atomic write
			fail = 1;
		}
#pragma omp for schedule(static)
		for (int j = 0; j < ny; j++) {
			if (bad)
				continue;
			double *o = out + (size_t)j * nx;
			memcpy(f, o, (size_t)nx * sizeof(double));
			edt_1d(f, o, nx, v, z);
		}
		free(f);
		free(z);
		free(v);
	}
	return fail ? -1 : 0;
}

int maps_signed_distance(const uint8_t *wet, int nx, int ny, double dx,
			 double dmax, int threads, float *out)
{
	size_t n = (size_t)nx * (size_t)ny;
	/* larger than any real squared distance, small enough that the
	 * parabola arithmetic stays exact */
	double big = 4.0 * ((double)nx * nx + (double)ny * ny) + 4.0;
	/* one buffer, two passes: the distance to the dry pixels gives the
	 * wet pixels' values, then the distance to the wet ones the dry
	 * pixels' (8 bytes per pixel less at the peak of the map stage) */
	double *dd = malloc(n * sizeof(double));
	if (!dd)
		return -1;
	float fmax = (float)dmax;
	for (int pass = 0; pass < 2; pass++) {
		if (edt_2d(wet, pass, nx, ny, threads, big, dd)) {
			free(dd);
			return -1;
		}
#pragma omp parallel for num_threads(nthreads(threads)) schedule(static)
		for (int j = 0; j < ny; j++) {
			for (int i = 0; i < nx; i++) {
				size_t k = (size_t)j * nx + i;
				if ((wet[k] != 0) != (pass == 0))
					continue;
				double s;
				if (pass == 0)
					s = dd[k] >= big ? dmax
							 : (sqrt(dd[k]) - 0.5) * dx;
				else
					s = dd[k] >= big ? -dmax
							 : -(sqrt(dd[k]) - 0.5) * dx;
				float f = (float)s;
				out[k] = f > fmax ? fmax : f < -fmax ? -fmax : f;
			}
		}
	}
	free(dd);
	return 0;
}

/* ---- material ---------------------------------------------------------- */

int maps_material(const struct wb_scene *sc, const uint8_t *wet,
		  const uint8_t *body, int nx, int ny, uint8_t *out)
{
	size_t n = (size_t)nx * (size_t)ny;
	uint8_t fallback = sc->n_materials > 0 ? (uint8_t)sc->materials[0].id : 0;
	/* body index b (1-based) -> material id, 0 when the body has none */
	uint8_t bid[256];
	memset(bid, 0, sizeof bid);
	for (int b = 1; b < 256 && b <= sc->n_sources; b++) {
		int m = sc->sources[b - 1].material;
		if (m >= 0 && m < sc->n_materials)
			bid[b] = (uint8_t)sc->materials[m].id;
	}
	/* label[k]: seeding body index (0 = none yet); dist[k]: BFS steps */
	uint8_t *label = calloc(n, 1);
	int32_t *dist = malloc(n * sizeof(int32_t));
	int32_t *queue = malloc(n * sizeof(int32_t));
	if (!label || !dist || !queue) {
		free(label);
		free(dist);
		free(queue);
		return -1;
	}
	size_t qh = 0, qt = 0;
	for (size_t k = 0; k < n; k++) {
		dist[k] = -1;
		if (wet[k] && body && body[k] && bid[body[k]]) {
			label[k] = body[k];
			dist[k] = 0;
			queue[qt++] = (int32_t)k;
		}
	}
	/* FIFO breadth-first search: all pixels at distance t are popped
	 * before any at t+1, so a pixel first reached at t+1 can still be
	 * lowered to a smaller body index by another pixel at t before it is
	 * popped and propagates its label. */
	while (qh < qt) {
		int32_t k = queue[qh++];
		int i = (int)(k % nx), j = (int)(k / nx);
		int32_t nb[4];
		int m = 0;
		if (i > 0)
			nb[m++] = k - 1;
		if (i + 1 < nx)
			nb[m++] = k + 1;
		if (j > 0)
			nb[m++] = k - nx;
		if (j + 1 < ny)
			nb[m++] = k + nx;
		for (int t = 0; t < m; t++) {
			int32_t q = nb[t];
			if (!wet[q])
				continue;
			if (dist[q] < 0) {
				dist[q] = dist[k] + 1;
				label[q] = label[k];
				queue[qt++] = q;
			} else if (dist[q] == dist[k] + 1 && label[k] < label[q]) {
				label[q] = label[k];
			}
		}
	}
	/* dry pixels: 0, stored only where out does not hold it yet (the
	   zeroed maps: memory follows the water) */
	for (size_t k = 0; k < n; k++) {
		uint8_t o = !wet[k] ? 0 : label[k] ? bid[label[k]] : fallback;
		if (out[k] != o)
			out[k] = o;
	}
	free(label);
	free(dist);
	free(queue);
	return 0;
}

/* ---- LOD0 -------------------------------------------------------------- */

enum wb_status maps_build(const struct wb_scene *sc, const struct wb_raster *r,
			  const struct wb_state *st, int threads,
			  struct wb_maps *m, struct wb_diags *d)
{
	memset(m, 0, sizeof *m);
	if (!st->h || !st->u || !st->v || !r->z)
		return wb_fail(d, WB_EINPUT, NULL,
			       "maps: solver state or terrain is missing");
	if (st->nx != r->nx || st->ny != r->ny || st->nx <= 0 || st->ny <= 0)
		return wb_fail(d, WB_EINPUT, NULL,
			       "maps: state is %dx%d but the grid is %dx%d",
			       st->nx, st->ny, r->nx, r->ny);
	if (!(r->dx > 0))
		return wb_fail(d, WB_EINPUT, NULL, "maps: grid spacing %g <= 0",
			       r->dx);
	double dmax = sc->output.distance_max;
	if (!(dmax > 0) || !isfinite(dmax))
		return wb_fail(d, WB_EINPUT, sc->file,
			       "output.distance_max must be > 0 (is %g)", dmax);
	int nx = r->nx, ny = r->ny;
	size_t n = (size_t)nx * (size_t)ny;
	if (maps_alloc(m, nx, ny, r->dx, st->foam != NULL))
		return wb_fail(d, WB_EIO, NULL, "maps: out of memory");
	uint8_t *wet = malloc(n);
	if (!wet) {
		maps_free(m);
		return wb_fail(d, WB_EIO, NULL, "maps: out of memory");
	}
	float dry = (float)sc->sim.dry_depth;
	float hmin = (float)sc->output.min_depth;
	float qmin = (float)sc->output.min_flow;
	float hflow = (float)(WB_FLOW_DEPTH_FACTOR * sc->output.min_depth);
	long bad = -1; /* first bad cell, in row order */
	const float *restrict h = st->h, *restrict u = st->u, *restrict v = st->v;
	const float *restrict z = r->z, *restrict fo = st->foam;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(static)
	for (int j = 0; j < ny; j++) {
		long rowbad = -1;
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)j * nx + i;
			int w = h[k] > dry;
			if (w && !(isfinite(h[k]) && isfinite(u[k]) &&
				   isfinite(v[k]) && isfinite(z[k]))) {
				if (rowbad < 0)
					rowbad = (long)k;
				w = 0;
			}
			if (w && h[k] < hmin)
				w = 0;
			if (w && qmin > 0 && h[k] < hflow &&
			    h[k] * sqrtf(u[k] * u[k] + v[k] * v[k]) < qmin)
				w = 0;
			wet[k] = (uint8_t)w;
			m->height[k] = w ? z[k] + h[k] : WB_DRY_HEIGHT;
			if (!w)
				continue; /* u, v, depth, foam: the zeros */
			m->u[k] = u[k];
			m->v[k] = v[k];
			m->depth[k] = h[k];
			if (fo) {
				float f = isfinite(fo[k]) ? fo[k] : 0.0f;
				m->foam[k] = f < 0 ? 0 : f > 1 ? 1 : f;
			}
		}
		if (rowbad >= 0) {
#pragma omp critical(maps_bad)
			if (bad < 0 || rowbad < bad)
				bad = rowbad;
		}
	}
	if (bad >= 0) {
		int i = (int)(bad % nx), j = (int)(bad / nx);
		free(wet);
		maps_free(m);
		return wb_fail(d, WB_ESIM, NULL,
			       "maps: non-finite water depth or velocity at cell "
			       "(%d, %d), world (%.2f, %.2f) m", i, j,
			       r->origin[0] + (i + 0.5) * r->dx,
			       r->origin[1] + (j + 0.5) * r->dx);
	}
	if (maps_material(sc, wet, r->body, nx, ny, m->material) ||
	    maps_signed_distance(wet, nx, ny, r->dx, dmax, threads,
				 m->distance)) {
		free(wet);
		maps_free(m);
		return wb_fail(d, WB_EIO, NULL, "maps: out of memory");
	}
	free(wet);
	return WB_OK;
}

/* ---- pyramid step ------------------------------------------------------ */

enum wb_status maps_downsample(const struct wb_maps *s, int threads,
			       struct wb_maps *m, struct wb_diags *d)
{
	int nx = (s->nx + 1) / 2, ny = (s->ny + 1) / 2;
	if (maps_alloc(m, nx, ny, 2.0 * s->dx, s->foam != NULL))
		return wb_fail(d, WB_EIO, NULL, "pyramid: out of memory");
	const int snx = s->nx, sny = s->ny;
#pragma omp parallel for num_threads(nthreads(threads)) schedule(static)
	for (int j = 0; j < ny; j++) {
		for (int i = 0; i < nx; i++) {
			size_t c[4];
			int nc = 0;
			for (int b = 0; b < 2; b++)
				for (int a = 0; a < 2; a++) {
					int x = 2 * i + a, y = 2 * j + b;
					if (x < snx && y < sny)
						c[nc++] = (size_t)y * snx + x;
				}
			double hs = 0, ds = 0, us = 0, vs = 0, fs = 0, dist = 0;
			int nw = 0;
			uint8_t mats[4];
			for (int t = 0; t < nc; t++) {
				size_t k = c[t];
				dist += s->distance[k];
				if (s->height[k] == WB_DRY_HEIGHT)
					continue;
				hs += s->height[k];
				ds += s->depth[k];
				us += (double)s->depth[k] * s->u[k];
				vs += (double)s->depth[k] * s->v[k];
				if (s->foam)
					fs += s->foam[k];
				mats[nw++] = s->material[k];
			}
			size_t o = (size_t)j * nx + i;
			m->distance[o] = (float)(dist / nc);
			if (!nw) { /* u, v, depth, material, foam: the zeros */
				m->height[o] = WB_DRY_HEIGHT;
				continue;
			}
			m->height[o] = (float)(hs / nw);
			m->depth[o] = (float)(ds / 4);
			m->u[o] = ds > 0 ? (float)(us / ds) : 0.0f;
			m->v[o] = ds > 0 ? (float)(vs / ds) : 0.0f;
			if (m->foam)
				m->foam[o] = (float)(fs / nw);
			int best = -1, bestc = 0;
			for (int t = 0; t < nw; t++) {
				int cnt = 0;
				for (int q = 0; q < nw; q++)
					cnt += mats[q] == mats[t];
				if (cnt > bestc ||
				    (cnt == bestc && mats[t] < mats[best])) {
					best = t;
					bestc = cnt;
				}
			}
			m->material[o] = mats[best];
		}
	}
	return WB_OK;
}
