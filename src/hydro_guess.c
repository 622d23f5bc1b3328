/*
 * hydro_guess.c - the solvers' hydrological first guess (hydro.h,
 * docs/hydrology.md).
 *
 * Steps, all on the solver grid (cell i = x + y nx, spacing dx):
 *  1. Flood terrain zf: the terrain, with cells that a blocker closes down
 *     to the bed (bottom <= z + 1 mm) as walls (NaN). Outlets: cells of
 *     open edges (at z, or at the edge's level when it holds one), level
 *     edges and inflow edges with a level (at that level), drain-all sinks
 *     (at z), held cells (WB_CELL_FIXED, at fixed_level).
 *     level = priority-flood of zf (hydro_fill_levels).
 *  2. Seeds: cells with src > 0 (springs, rivers, rain) and the cells of
 *     inflow edges. reach = hydro_downstream(level, seeds).
 *  3. Lakes: reached cells with level > zf get depth level - z, except the
 *     depressions (connected cells at one level above the terrain) that
 *     hold a keep_dry cell.
 *  4. Discharge: Q_i = src_i dx^2 (sinks subtract, never below 0), plus
 *     the inflow edges' discharge per cell, accumulated down the D8
 *     receivers of the filled surface (hydro_receivers), donors first.
 *  5. Channels: for each reached non-lake cell with Q > 0: direction and
 *     slope S from the cell HYDRO_SLOPE_CELLS receivers downstream (S the
 *     drop of the filled surface over the path length, at least
 *     HYDRO_SLOPE_MIN); the cross-section is the line through the cell
 *     perpendicular to that direction, each side walked while the terrain
 *     is below the surface and not below the centre's (section_k); the
 *     surface eta solves Manning's
 *         Q_section = (1/n) sqrt(S) sum_k (eta - z_k)^(5/3) dx
 *     by bisection, Q_section the discharge of every routed line the
 *     section crosses (parallel D8 lines on a flat bed share it).
 *  6. Painting: the cells of each channel's section, and every other cell
 *     through the first channel cell downstream of it ('height above
 *     nearest drainage'), take that channel's surface: depth max(scene
 *     depth, eta - z); velocity (1/n) d^(2/3) sqrt(S) along the channel's
 *     direction, zero in lakes. Lakes, and the cells that drain through
 *     one, stand instead at the energy head of their outlet
 *     (outlet_energy): E = eta_s + Q^2 / (2 g A^2) on the outlet's
 *     section, eta_s the higher of the normal-depth and the critical
 *     surface (1.5 h_c above the sill on a steep outlet, h_n + v_n^2/2g
 *     on a mild one, for a rectangle).
 * Everything runs serially in index order: identical output for any
 * thread count.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hydro.h"
#include "wbake.h"

#define HYDRO_SLOPE_CELLS 6
#define HYDRO_SLOPE_MIN 5e-4
#define HYDRO_MANNING_DEFAULT 0.03
#define HYDRO_WALL_GAP 1e-3f
#define ECACHE 256 /* outlets' energy levels cached (a power of 2) */

static int edge_side(int x, int y, int nx, int ny, int *sides)
{
	int n = 0;
	if (x == 0)
		sides[n++] = WB_WEST;
	if (x == nx - 1)
		sides[n++] = WB_EAST;
	if (y == 0)
		sides[n++] = WB_NORTH;
	if (y == ny - 1)
		sides[n++] = WB_SOUTH;
	return n;
}

/* The cross-section at surface eta: the cells at unit steps from the
 * centre (cx, cy) along +-(px, py) (a unit vector, rounded to cells), each
 * side walked while the terrain is below eta and not below the centre's
 * (lower ground belongs to another drainage line), at most
 * HYDRO_SECTION_MAX cells. Returns the conveyance factor sum_k
 * d_k^(5/3) w; *qs gets the discharge of the routed lines the section
 * crosses (sum of q over its cells: parallel D8 lines on a flat channel
 * bed share one section and its discharge); A and B, where not NULL, its
 * flow area and top width. */
static double section_k(const float *zf, const double *q, int nx, int ny,
			int cx, int cy, double px, double py, double eta,
			double w, double *qs, double *A, double *B)
{
	long c = cx + (long)cy * nx;
	double zc = zf[c];
	double k = 0, a = 0, b = 0;
	if (eta > zc) {
		k = pow(eta - zc, 5.0 / 3.0) * w;
		a = (eta - zc) * w;
		b = w;
	}
	double qq = q[c];
	for (int sgn = -1; sgn <= 1; sgn += 2)
		for (int s = 1; s <= HYDRO_SECTION_MAX; s++) {
			int x = cx + (int)lround(sgn * s * px);
			int y = cy + (int)lround(sgn * s * py);
			if (x < 0 || y < 0 || x >= nx || y >= ny)
				break;
			long j = x + (long)y * nx;
			double zz = zf[j];
			if (!(zz < eta) || zz < zc)
				break; /* also stops at walls (NaN) */
			k += pow(eta - zz, 5.0 / 3.0) * w;
			a += (eta - zz) * w;
			b += w;
			qq += q[j] > 0 ? q[j] : 0.0;
		}
	*qs = qq;
	if (A)
		*A = a;
	if (B)
		*B = b;
	return k;
}

/* The level of still water upstream of channel cell c (a lake that spills
 * into it): the energy head of the flow through c's section,
 *     E = eta_s + Q^2 / (2 g A(eta_s)^2),   eta_s = max(eta_n, eta_c),
 * eta_n the normal-depth surface (Manning, step 5), eta_c the critical
 * one (Q^2 B = g A^3: the least energy for Q through the section). On a
 * mild outlet the flow leaves the lake at normal depth and the lake
 * stands at its energy; on a steep one it passes through critical depth
 * at the sill (the control) and the lake stands at E_c = the minimum
 * specific energy (1.5 h_c for a rectangle). Standing water has no
 * velocity head, so a lake at eta_n alone (the guess before) is below
 * its steady level by the outlet's velocity head or more. */
static double outlet_energy(const float *zf, const double *q, int nx, int ny,
			    long c, double px, double py, double eta_n,
			    double dx)
{
	int cx = (int)(c % nx), cy = (int)(c / nx);
	double qs, qd, A, B; /* qd: the same as qs, unused */
	section_k(zf, q, nx, ny, cx, cy, px, py, eta_n, dx, &qs, NULL, NULL);
	if (!(qs > 0))
		return eta_n;
	const double g = 9.81;
	double lo = zf[c], hi = zf[c] + cbrt(qs * qs / (g * dx * dx)) + 1e-6;
	for (int it = 0; it < 40; it++) {
		double mid = 0.5 * (lo + hi);
		section_k(zf, q, nx, ny, cx, cy, px, py, mid, dx, &qd, &A, &B);
		if (g * A * A * A < qs * qs * B)
			lo = mid;
		else
			hi = mid;
	}
	double es = hi > eta_n ? hi : eta_n;
	section_k(zf, q, nx, ny, cx, cy, px, py, es, dx, &qd, &A, &B);
	if (!(A > 0))
		return eta_n;
	return es + qs * qs / (2 * g * A * A);
}

/* Memory at world scale (docs/scale.md "Host stages"): the discharge q
 * and the outputs are written only where a value changes, so that their
 * pages away from the water stay unbacked (q is calloc'd here; callers may
 * pass calloc'd h, u, v). Same bytes as the plain stores and sums. */

/* *p = x, storing only when the bits differ. */
static void store_if_diff(float *p, float x)
{
	uint32_t a, b;
	memcpy(&a, p, sizeof(a));
	memcpy(&b, &x, sizeof(b));
	if (a != b)
		*p = x;
}

/* *q += x, leaving out the additions that cannot change *q: x = +-0 with
 * *q not -0 (y + +-0 = y for y != -0; -0 + +0 would give +0). */
static void add_if_changes(double *q, double x)
{
	if (x != 0 || signbit(*q))
		*q += x;
}

int hydro_first_guess(const struct wb_raster *r,
		      const struct hydro_guess_opts *o, float *h, float *u,
		      float *v, struct hydro_guess_report *rep)
{
	const int nx = r->nx, ny = r->ny;
	const long n = (long)nx * ny;
	const double dx = r->dx;
	double nman = o && o->manning > 0 ? o->manning : HYDRO_MANNING_DEFAULT;
	struct hydro_guess_report R;
	int rc = -1;
	float *zf = NULL, *ol = NULL, *lv = NULL;
	unsigned char *out = NULL, *seed = NULL, *reach = NULL, *dry = NULL;
	int *rcv = NULL, *order = NULL, *stack = NULL;
	double *q = NULL;
	float *eta = NULL, *sl = NULL, *dir = NULL;
	int *chan = NULL;

	memset(&R, 0, sizeof(R));
	if (nx <= 0 || ny <= 0)
		goto done;
	zf = malloc((size_t)n * sizeof(*zf));
	ol = malloc((size_t)n * sizeof(*ol));
	lv = malloc((size_t)n * sizeof(*lv));
	eta = malloc((size_t)n * sizeof(*eta));
	sl = malloc((size_t)n * sizeof(*sl));
	dir = malloc((size_t)n * 2 * sizeof(*dir));
	chan = malloc((size_t)n * sizeof(*chan));
	out = calloc((size_t)n, 1);
	seed = calloc((size_t)n, 1);
	reach = calloc((size_t)n, 1);
	dry = calloc((size_t)n, 1);
	rcv = malloc((size_t)n * sizeof(*rcv));
	order = malloc((size_t)n * sizeof(*order));
	stack = malloc((size_t)n * sizeof(*stack));
	q = calloc((size_t)n, sizeof(*q));
	if (!zf || !ol || !lv || !eta || !sl || !dir || !chan || !out ||
	    !seed || !reach || !dry || !rcv || !order || !stack || !q)
		goto fail;

	/* 1. flood terrain and outlets */
	for (long i = 0; i < n; i++) {
		float z = r->z[i];
		if (r->block_bot && r->block_bot[i] <= z + HYDRO_WALL_GAP)
			z = NAN; /* a blocker down to the bed: a wall */
		zf[i] = z;
		ol[i] = -INFINITY;
		uint8_t fl = r->flags ? r->flags[i] : 0;
		if (fl & WB_CELL_SINK_ALL)
			out[i] = 1;
		if ((fl & WB_CELL_FIXED) && r->fixed_level) {
			out[i] = 1;
			ol[i] = r->fixed_level[i];
		}
	}
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nx; x++) {
			int sides[4], ns = edge_side(x, y, nx, ny, sides);
			long i = x + (long)y * nx;
			for (int s = 0; s < ns; s++) {
				const struct wb_edge *e = &r->edges[sides[s]];
				if (e->kind == WB_EDGE_OPEN || e->kind == WB_EDGE_LEVEL ||
				    (e->kind == WB_EDGE_INFLOW && e->has_level)) {
					out[i] = 1;
					if ((e->kind != WB_EDGE_OPEN || e->has_level) &&
					    e->level > ol[i])
						ol[i] = (float)e->level;
				}
				if (e->kind == WB_EDGE_INFLOW) {
					double qe = e->discharge > 0 ? e->discharge :
						    e->velocity * e->depth;
					q[i] += qe * dx;
					seed[i] = 1;
				}
			}
		}
	/* the receivers of step 4 come from the same flood */
	if (hydro_fill_receivers(zf, nx, ny, out, ol, lv, rcv, order))
		goto fail;

	/* 2. where the water goes */
	for (long i = 0; i < n; i++) {
		double s = r->src ? r->src[i] : 0.0;
		if (s > 0)
			seed[i] = 1;
		add_if_changes(&q[i], s * dx * dx);
	}
	if (hydro_downstream(lv, zf, nx, ny, seed, reach))
		goto fail;

	/* 3. depressions to keep dry: flood each marked cell's depression
	 * (connected cells at the same level above the terrain) */
	if (o && o->keep_dry) {
		long top = 0;
		for (long i = 0; i < n; i++)
			if (o->keep_dry[i] && isfinite(lv[i]) && lv[i] > zf[i]) {
				dry[i] = 1;
				stack[top++] = (int)i;
			}
		while (top > 0) {
			int c = stack[--top];
			int cx = c % nx, cy = c / nx;
			for (int dy = -1; dy <= 1; dy++)
				for (int ddx = -1; ddx <= 1; ddx++) {
					int x = cx + ddx, y = cy + dy;
					if (x < 0 || y < 0 || x >= nx || y >= ny)
						continue;
					long j = x + (long)y * nx;
					if (dry[j] || !(lv[j] > zf[j]) || lv[j] != lv[c])
						continue;
					dry[j] = 1;
					stack[top++] = (int)j;
				}
		}
	}
	for (long i = 0; i < n; i++) {
		float h0 = r->h0 ? r->h0[i] : 0.0f;
		store_if_diff(&h[i], h0 > 0 ? h0 : 0.0f);
		store_if_diff(&u[i], 0.0f);
		store_if_diff(&v[i], 0.0f);
		if (dry[i]) {
			R.kept_dry++;
			continue;
		}
		if (reach[i] && isfinite(lv[i]) && lv[i] > zf[i] &&
		    !(r->flags && (r->flags[i] & WB_CELL_FIXED))) {
			float d = lv[i] - r->z[i];
			R.lake_cells++;
			if (d > h[i]) {
				R.lake_volume += (d - h[i]) * dx * dx;
				h[i] = d;
			}
		}
	}

	/* 4. route and accumulate, donors first (rcv, order: step 1) */
	for (long k = n - 1; k >= 0; k--) {
		int i = order[k];
		if (q[i] < 0)
			q[i] = 0; /* a sink takes what arrives, no more */
		if (rcv[i] >= 0)
			add_if_changes(&q[rcv[i]], q[i]);
		else if (isfinite(lv[i]))
			R.discharge += q[i];
	}

	/* 5. channels: Manning normal depth on each cross-section */
	for (long i = 0; i < n; i++) {
		eta[i] = NAN;
		if (!reach[i] || dry[i] || !(q[i] > 0) || rcv[i] < 0 ||
		    !(lv[i] <= zf[i]) || (r->flags && (r->flags[i] & WB_CELL_FIXED)))
			continue;
		int cx = (int)(i % nx), cy = (int)(i / nx);
		/* slope of the filled surface and the flow direction over the
		 * next cells downstream */
		double dist = 0;
		int c = (int)i;
		for (int s = 0; s < HYDRO_SLOPE_CELLS && rcv[c] >= 0; s++) {
			int nc = rcv[c];
			dist += ((nc % nx != c % nx) && (nc / nx != c / nx)) ?
				dx * 1.4142135623730951 : dx;
			c = nc;
		}
		double slope = dist > 0 ? ((double)lv[i] - lv[c]) / dist : 0;
		if (!(slope > HYDRO_SLOPE_MIN))
			slope = HYDRO_SLOPE_MIN;
		double fx = c % nx - cx, fy = c / nx - cy;
		double len = sqrt(fx * fx + fy * fy);
		fx /= len;
		fy /= len;
		double sq = sqrt(slope);
		/* Manning: Q_section = K(eta) sqrt(S) / n. The upper bracket:
		 * the section's largest discharge through one cell */
		double qmax;
		section_k(zf, q, nx, ny, cx, cy, -fy, fx, INFINITY, dx, &qmax, NULL, NULL);
		double lo = zf[i], hi = zf[i] + pow(qmax * nman / (sq * dx), 0.6) + 1e-6;
		for (int it = 0; it < 40; it++) {
			double mid = 0.5 * (lo + hi), qs;
			double k = section_k(zf, q, nx, ny, cx, cy, -fy, fx, mid, dx, &qs, NULL, NULL);
			if (k * sq / nman < qs)
				lo = mid;
			else
				hi = mid;
		}
		eta[i] = (float)hi;
		sl[i] = (float)sq;
		dir[2 * i] = (float)fx;
		dir[2 * i + 1] = (float)fy;
		R.channel_cells++;
	}
	/* 6. banks and lakes take the surface of the first channel cell
	 * downstream (receivers first, so it is known): 'height above
	 * nearest drainage' inundation. seed (no longer needed) becomes
	 * 'drains through a lake to its channel': such cells stand at the
	 * lake's level, the outlet's energy head (outlet_energy), not at the
	 * flow surface in the outlet */
	for (long k = 0; k < n; k++) {
		int i = order[k];
		chan[i] = -1;
		seed[i] = 0;
		if (!isnan(eta[i]))
			chan[i] = i;
		else if (rcv[i] >= 0) {
			chan[i] = chan[rcv[i]];
			seed[i] = (reach[i] && isfinite(lv[i]) && lv[i] > zf[i]) ||
				  seed[rcv[i]];
		}
	}
	/* ... and the cells of each channel's own cross-section (parallel
	 * D8 lines on a flat bed that never join the channel's line) */
	for (long i = 0; i < n; i++) {
		if (isnan(eta[i]))
			continue;
		int cx = (int)(i % nx), cy = (int)(i / nx);
		double px = -dir[2 * i + 1], py = dir[2 * i];
		for (int sgn = -1; sgn <= 1; sgn += 2)
			for (int s = 1; s <= HYDRO_SECTION_MAX; s++) {
				int x = cx + (int)lround(sgn * s * px);
				int y = cy + (int)lround(sgn * s * py);
				if (x < 0 || y < 0 || x >= nx || y >= ny)
					break;
				long j = x + (long)y * nx;
				if (!(zf[j] < eta[i]) || zf[j] < zf[i])
					break;
				if (chan[j] < 0 || eta[chan[j]] < eta[i]) {
					chan[j] = (int)i;
					seed[j] = 0;
				}
			}
	}
	int ec_key[ECACHE];
	float ec_val[ECACHE];
	for (int k = 0; k < ECACHE; k++)
		ec_key[k] = -1;
	for (long i = 0; i < n; i++) {
		int c = chan[i];
		if (c < 0 || !reach[c] || dry[i] || !isfinite(zf[i]) ||
		    (r->flags && (r->flags[i] & WB_CELL_FIXED)))
			continue;
		/* banks stand at the surface of the flow in their channel,
		 * lakes (and what drains through them) at the outlet's energy
		 * head; a few outlets serve many lake cells: cached */
		float lev = eta[c];
		if (seed[i]) {
			unsigned slot = (unsigned)c & (ECACHE - 1);
			if (ec_key[slot] != c) {
				ec_key[slot] = c;
				ec_val[slot] = (float)outlet_energy(
					zf, q, nx, ny, c, -dir[2 * c + 1], dir[2 * c],
					eta[c], dx);
			}
			lev = ec_val[slot];
		}
		float d = lev - r->z[i];
		if (!(d > h[i]))
			continue;
		R.channel_volume += (d - h[i]) * dx * dx;
		h[i] = d;
		if (lv[i] > zf[i])
			continue; /* lakes are still */
		double sp = pow(d, 2.0 / 3.0) * sl[c] / nman;
		u[i] = (float)(sp * dir[2 * c]);
		v[i] = (float)(sp * dir[2 * c + 1]);
	}
done:
	rc = 0;
	if (rep)
		*rep = R;
fail:
	free(q);
	free(stack);
	free(order);
	free(rcv);
	free(dry);
	free(reach);
	free(seed);
	free(out);
	free(chan);
	free(dir);
	free(sl);
	free(eta);
	free(lv);
	free(ol);
	free(zf);
	return rc;
}
