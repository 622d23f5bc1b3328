/*
 * raster.c - put the scene onto the simulation grid (struct wb_raster).
 *
 * Scene coordinates are metres in the terrain's frame: (0, 0) is the corner
 * of the heightmap's first pixel, x along columns, y down the rows; cell
 * (i, j) has its centre at ((i + 0.5) dx, (j + 0.5) dx). A cell is inside a
 * polygon when its centre is (even-odd rule), inside a disc when its centre
 * is within the radius; a disc smaller than a cell still takes the cell its
 * centre falls in, so small springs never vanish.
 *
 * What each scene element becomes:
 *   initial level / areas   h0 = max(0, level - z) (areas: inside polygons)
 *   river                   discharge Q (m^3/s) enters through a disc of
 *                           diameter 'width' at the path's first point
 *                           (src = Q / disc area, m/s); the corridor of that
 *                           width along the path is the river's region (body)
 *   spring                  Q through its disc; the disc is its region
 *   lake                    h0 to the level inside the polygon, or in the
 *                           cells below the level 4-connected to the seed;
 *                           those cells are its region
 *   ocean                   cells below the level reachable from the map edge
 *                           through cells below the level, outside the
 *                           exclusion polygons: h0 to the level; those more
 *                           than WB_OCEAN_FREE_BAND cells from any non-ocean
 *                           cell are held at the level (WB_CELL_FIXED), so
 *                           the water near the shore (river mouths) moves
 *   rain                    src += rate / 3.6e6 (mm/h -> m/s) in the region
 *                           or everywhere
 *   sink                    src -= Q / area, or WB_CELL_SINK_ALL
 *   blocker                 block_bot = lowest bottom, block_top = highest top
 *   modifier                weight w in [0, 1] from the falloff (distance
 *                           from the region's edge over falloff_width);
 *                           overlapping modifiers add rates and average the
 *                           targets by rate: k = sum k_i, t = sum k_i t_i / k
 * Region precedence for the body layer: lakes and oceans over rivers and
 * springs; within a kind, the first in the scene.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wbake.h"

#define WB_OCEAN_FREE_BAND 8

struct bbox { int i0, i1, j0, j1; }; /* inclusive cell ranges, may be empty */

/* The cells whose centres may lie within 'pad' of the points' bounding box.
 * The range is clipped to the grid in double before it becomes int, so
 * coordinates far off the grid (or a tiny metres_per_pixel) give an empty
 * or clipped box, never an out-of-range conversion: every loop over a box
 * is bounded by the grid (a bound that overflows to an infinity is clipped
 * like any other; NaN gives an empty box). */
static struct bbox bbox_of(const struct wb_raster *r, const double *xy, int n,
			   double pad)
{
	double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
	for (int k = 0; k < n; k++) {
		x0 = fmin(x0, xy[2 * k] - pad);
		x1 = fmax(x1, xy[2 * k] + pad);
		y0 = fmin(y0, xy[2 * k + 1] - pad);
		y1 = fmax(y1, xy[2 * k + 1] + pad);
	}
	struct bbox b = { 0, -1, 0, -1 };
	double fi0 = floor(x0 / r->dx - 0.5), fi1 = ceil(x1 / r->dx);
	double fj0 = floor(y0 / r->dx - 0.5), fj1 = ceil(y1 / r->dx);
	if (isnan(fi0) || isnan(fi1) || isnan(fj0) || isnan(fj1))
		return b;
	if (x1 < 0 || y1 < 0 || x0 > r->nx * r->dx || y0 > r->ny * r->dx ||
	    fi1 < 0 || fj1 < 0 || fi0 > r->nx - 1 || fj0 > r->ny - 1)
		return b;
	b.i0 = (int)fmax(0, fi0);
	b.i1 = (int)fmin(r->nx - 1, fi1);
	b.j0 = (int)fmax(0, fj0);
	b.j1 = (int)fmin(r->ny - 1, fj1);
	return b;
}

static double seg_dist(double x, double y, double xa, double ya, double xb,
		       double yb)
{
	double dx = xb - xa, dy = yb - ya, l2 = dx * dx + dy * dy;
	double t = l2 > 0 ? ((x - xa) * dx + (y - ya) * dy) / l2 : 0;
	if (isinf(l2)) { /* a segment longer than 1e154 m: scale first */
		double sc = 1 / fmax(fabs(dx), fabs(dy));
		double ux = dx * sc, uy = dy * sc;
		t = ((x - xa) * sc * ux + (y - ya) * sc * uy) / (ux * ux + uy * uy);
	}
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	return hypot(x - (xa + t * dx), y - (ya + t * dy));
}

static double cx(const struct wb_raster *r, int i) { return (i + 0.5) * r->dx; }

/* Mark cells of a disc into 'mask' (1 = inside); returns the count. */
static long disc_mask(const struct wb_raster *r, double x, double y,
		      double radius, uint8_t *mask)
{
	double c[2] = { x, y };
	struct bbox b = bbox_of(r, c, 1, radius + r->dx);
	long n = 0;
	for (int j = b.j0; j <= b.j1; j++)
		for (int i = b.i0; i <= b.i1; i++)
			if (hypot(cx(r, i) - x, cx(r, j) - y) <= radius) {
				mask[i + (size_t)j * r->nx] = 1;
				n++;
			}
	if (n == 0) {
		double fi = floor(x / r->dx), fj = floor(y / r->dx);
		if (fi >= 0 && fj >= 0 && fi < r->nx && fj < r->ny) {
			mask[(size_t)fi + (size_t)fj * r->nx] = 1;
			n = 1;
		}
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

struct pedge { double ylo, yhi; int a; }; /* edge from vertex a-1 to a */

static int cmp_pedge(const void *a, const void *b)
{
	double x = ((const struct pedge *)a)->ylo, y = ((const struct pedge *)b)->ylo;
	return (x > y) - (x < y);
}

/* First cell i of [i0, i1 + 1] whose centre is at or right of x (i1 + 1
 * when none is): a guess from the division, then the exact comparison the
 * per-cell test makes. */
static int first_at_or_right(const struct wb_raster *r, double x, int i0,
			     int i1)
{
	double g = ceil(x / r->dx - 0.5);
	int i = !(g > i0) ? i0 : g > i1 + 1 ? i1 + 1 : (int)g; /* NaN: i0 */
	while (i > i0 && cx(r, i - 1) >= x)
		i--;
	while (i <= i1 && cx(r, i) < x)
		i++;
	return i;
}

/* Call fn(ctx, j, i0, i1) for each run [i0, i1] of cells of row j whose
 * centres are inside the polygon (even-odd rule), rows in order; returns
 * the count of cells, or -1 when out of memory. Row by row: the x at which
 * each edge crosses the row's centre line, sorted; a cell is inside when
 * an odd number of crossings lie to its right, so the cells between two
 * neighbouring crossings are all in or all out. That is the classic
 * per-point crossing test with the same arithmetic, but the edges a row
 * crosses come from a list sorted by their lower end (an active edge
 * table) and a run costs two comparisons at its ends, so the work is
 * O(n log n + crossings) plus what fn does, not O(cells * n). */
typedef void (*run_fn)(void *ctx, int j, int i0, int i1);

static long polygon_runs(const struct wb_raster *r, const struct wb_polygon *p,
			 run_fn fn, void *ctx)
{
	struct bbox b = bbox_of(r, p->xy, p->n, 0);
	if (b.i1 < b.i0 || b.j1 < b.j0)
		return 0;
	struct pedge *ed = malloc((size_t)p->n * sizeof(*ed));
	int *act = malloc((size_t)p->n * sizeof(int));
	double *xs = malloc((size_t)p->n * sizeof(double));
	long n = -1;
	if (!ed || !act || !xs)
		goto done;
	int m = 0;
	for (int a = 0, e = p->n - 1; a < p->n; e = a++) {
		double ya = p->xy[2 * a + 1], yb = p->xy[2 * e + 1];
		if (ya == yb || isnan(ya) || isnan(yb))
			continue; /* crosses no row: (ya > y) == (yb > y) */
		ed[m].ylo = fmin(ya, yb);
		ed[m].yhi = fmax(ya, yb);
		ed[m++].a = a;
	}
	qsort(ed, (size_t)m, sizeof(*ed), cmp_pedge);
	n = 0;
	int next = 0, na = 0;
	for (int j = b.j0; j <= b.j1; j++) {
		double y = cx(r, j);
		/* active: ylo <= y < yhi, i.e. (ya > y) != (yb > y) */
		while (next < m && ed[next].ylo <= y)
			act[na++] = next++;
		int k = 0, keep = 0;
		for (int t = 0; t < na; t++) {
			const struct pedge *pe = &ed[act[t]];
			if (!(pe->yhi > y))
				continue; /* passed for good: rows only go down */
			act[keep++] = act[t];
			int a = pe->a, e = a ? a - 1 : p->n - 1;
			double xa = p->xy[2 * a], ya = p->xy[2 * a + 1];
			double xb = p->xy[2 * e], yb = p->xy[2 * e + 1];
			double xi = (xb - xa) * (y - ya) / (yb - ya) + xa;
			if (!isfinite(xi)) { /* the product overflowed (|x| > 1e154) */
				double f = (y - ya) / (yb - ya); /* in [0, 1] */
				xi = xa * (1 - f) + xb * f;
			}
			if (!isnan(xi)) /* x < NaN never holds */
				xs[k++] = xi;
		}
		na = keep;
		if (k == 0)
			continue;
		qsort(xs, (size_t)k, sizeof(double), cmp_double);
		/* the cells with q crossings at or left of their centre,
		 * xs[q - 1] <= x < xs[q], are inside when k - q is odd */
		int lo = first_at_or_right(r, -INFINITY, b.i0, b.i1);
		for (int q = 0; q <= k && lo <= b.i1; q++) {
			int hi = q < k ? first_at_or_right(r, xs[q], lo, b.i1)
				       : b.i1 + 1;
			if (((k - q) & 1) && hi > lo) {
				fn(ctx, j, lo, hi - 1);
				n += hi - lo;
			}
			lo = hi;
		}
	}
done:
	free(ed);
	free(act);
	free(xs);
	return n;
}

struct mask_ctx { const struct wb_raster *r; unsigned char *mask; };

static void mask_run(void *ctx, int j, int i0, int i1)
{
	struct mask_ctx *c = ctx;
	memset(c->mask + i0 + (size_t)j * c->r->nx, 1, (size_t)(i1 - i0 + 1));
}

/* Mark the cells whose centres are inside the polygon (even-odd rule) into
 * 'mask'; returns the count, or -1 when out of memory (polygon_runs). */
long wb_raster_polygon_mask(const struct wb_raster *r,
			    const struct wb_polygon *p, unsigned char *mask)
{
	struct mask_ctx c = { r, mask };
	return polygon_runs(r, p, mask_run, &c);
}

/* The cells of row j whose centres may lie within 'pad' of segment s (x0,
 * y0, x1, y1): the row's centre line cut by the segment's capsule (its two
 * end discs and the band between them; the capsule is convex, so the cut is
 * one interval), widened by two cells against rounding and clipped to the
 * grid in double. Empty (i1 < i0) when the row misses the capsule. */
static void seg_row_span(const struct wb_raster *r, const double *s,
			 double pad, int j, int *i0, int *i1)
{
	double y = cx(r, j), lo = INFINITY, hi = -INFINITY;
	for (int e = 0; e < 2; e++) { /* the end discs */
		double dy = y - s[2 * e + 1];
		if (fabs(dy) <= pad) {
			double h = sqrt(pad * pad - dy * dy);
			lo = fmin(lo, s[2 * e] - h);
			hi = fmax(hi, s[2 * e] + h);
		}
	}
	double ux = s[2] - s[0], uy = s[3] - s[1], L = hypot(ux, uy), ry = y - s[1];
	if (L > 0) { /* the band: 0 <= (P - A).u <= L^2, |u x (P - A)| <= pad L */
		double blo = -INFINITY, bhi = INFINITY;
		if (uy != 0) {
			double p0 = (ux * ry - pad * L) / uy, p1 = (ux * ry + pad * L) / uy;
			blo = fmax(blo, s[0] + fmin(p0, p1));
			bhi = fmin(bhi, s[0] + fmax(p0, p1));
		} else if (!(fabs(ux * ry) <= pad * L)) {
			bhi = -INFINITY;
		}
		if (ux != 0) {
			double q0 = -ry * uy / ux, q1 = (L * L - ry * uy) / ux;
			blo = fmax(blo, s[0] + fmin(q0, q1));
			bhi = fmin(bhi, s[0] + fmax(q0, q1));
		} else if (!(ry * uy >= 0 && ry * uy <= L * L)) {
			bhi = -INFINITY;
		}
		if (blo <= bhi) {
			lo = fmin(lo, blo);
			hi = fmax(hi, bhi);
		}
	}
	*i0 = 0;
	*i1 = -1;
	double f0 = floor(lo / r->dx - 0.5) - 2, f1 = ceil(hi / r->dx - 0.5) + 2;
	if (isnan(f0) || isnan(f1) || f0 > f1 || f1 < 0 || f0 > r->nx - 1)
		return;
	*i0 = (int)fmax(0, f0);
	*i1 = (int)fmin(r->nx - 1, f1);
}

/* Work bound of the distance loops below (cells visited over all segments:
 * per segment, its capsule of radius 'pad', row by row). Each is clipped to
 * the grid, but a detailed outline whose segments criss-cross a large grid
 * could still ask for segments x cells; past this many cells over the whole
 * scene (1e8: a few seconds) it is refused with a message instead. The
 * estimate is O(1) per segment: rows of its box times the longest cut of a
 * row by its capsule, plus the widening. */
#define WB_RASTER_WORK_MAX 1e8

static double seg_work(const struct wb_raster *r, const struct wb_polygon *p,
		       int closed, double pad)
{
	double w = 0;
	int segs = closed ? p->n : p->n - 1;
	for (int a = 0; a < segs; a++) {
		int e = (a + 1) % p->n;
		double s[4] = { p->xy[2 * a], p->xy[2 * a + 1], p->xy[2 * e],
				p->xy[2 * e + 1] };
		struct bbox b = bbox_of(r, s, 2, pad + r->dx);
		if (b.i1 < b.i0 || b.j1 < b.j0)
			continue;
		double ax = fabs(s[2] - s[0]), ay = fabs(s[3] - s[1]);
		double cut = ax + 2 * pad;
		if (ay > 0)
			cut = fmin(cut, 2 * pad * hypot(ax, ay) / ay);
		w += (double)(b.j1 - b.j0 + 1) *
		     fmin(b.i1 - b.i0 + 1, cut / r->dx + 6);
	}
	return w;
}

/* Mark the cells whose centres lie within 'half' of the polyline; returns
 * the count. Each segment visits only the cells near it (its capsule, row by
 * row), so the work is about the corridor's area, not cells times segments;
 * the test per cell is the same distance as over the whole line. */
static long corridor_mask(const struct wb_raster *r, const struct wb_polygon *p,
			  double half, uint8_t *mask)
{
	long n = 0;
	for (int a = 0; a + 1 < p->n; a++) {
		const double *s = p->xy + 2 * a;
		struct bbox b = bbox_of(r, s, 2, half + r->dx);
		for (int j = b.j0; j <= b.j1; j++) {
			int i0, i1;
			seg_row_span(r, s, half, j, &i0, &i1);
			for (int i = i0; i <= i1; i++) {
				size_t k = i + (size_t)j * r->nx;
				if (!mask[k] && seg_dist(cx(r, i), cx(r, j), s[0], s[1],
							 s[2], s[3]) <= half) {
					mask[k] = 1;
					n++;
				}
			}
		}
	}
	return n;
}

/* dist[k] = min(dist[k], distance from cell k to the closed outline) for the
 * cells within 'reach' of it (others keep their value: the caller only
 * needs distances up to 'reach'). Work: the cells near each edge. */
static void outline_near(const struct wb_raster *r, const struct wb_polygon *p,
			 double reach, double *dist)
{
	for (int a = 0; a < p->n; a++) {
		int e = (a + 1) % p->n;
		double s[4] = { p->xy[2 * a], p->xy[2 * a + 1], p->xy[2 * e],
				p->xy[2 * e + 1] };
		struct bbox b = bbox_of(r, s, 2, reach + r->dx);
		for (int j = b.j0; j <= b.j1; j++) {
			int i0, i1;
			seg_row_span(r, s, reach, j, &i0, &i1);
			for (int i = i0; i <= i1; i++) {
				size_t k = i + (size_t)j * r->nx;
				dist[k] = fmin(dist[k], seg_dist(cx(r, i), cx(r, j),
								 s[0], s[1], s[2], s[3]));
			}
		}
	}
}

/* Modifiers. Each adds, in scene order, its rate kk = strength * w and
 * its rate-weighted target kk * (u, v) to the cells of its region (modw:
 * k, k*u, k*v per cell). Where the weight w is certainly 1 (a polygon's
 * cells beyond the falloff, all of them without one; a disc's core) the
 * cells take the constant (strength, strength * target) in a loop with no
 * geometry in it; only the others (the falloff band, a disc's rim)
 * evaluate the weight. The arithmetic is the per-cell definition's, so
 * are the bits. The work is a few additions per cell covered: the
 * geometry costs per row and per cell of the falloff band, not per cell
 * of the region. */
struct mod_ctx {
	struct wb_raster *r;
	double *modw;
	const double *dist; /* distance to the outline (polygons with a ramp) */
	const struct wb_modifier *md;
	int ramp;
	long cells;
};

/* Cells k0 .. k0 + len - 1 (one row) at weight 1. */
static void mod_span(struct mod_ctx *c, size_t k0, int len)
{
	double a = c->md->strength, b = a * c->md->target[0],
	       d = a * c->md->target[1];
	double *restrict w = c->modw + 3 * k0;
	uint8_t *restrict f = c->r->flags + k0;
	for (int t = 0; t < len; t++) {
		w[3 * t] += a;
		w[3 * t + 1] += b;
		w[3 * t + 2] += d;
		f[t] |= WB_CELL_MODIFIER;
	}
	c->cells += len;
}

/* Cell k, 'inward' metres inside the region's edge: the weight from the
 * falloff. */
static void mod_cell(struct mod_ctx *c, size_t k, double inward)
{
	const struct wb_modifier *md = c->md;
	double w = 1, t = md->falloff_width > 0 ?
			  fmin(1, inward / md->falloff_width) : 1;
	if (md->falloff == WB_FALLOFF_LINEAR)
		w = t;
	else if (md->falloff == WB_FALLOFF_SMOOTH)
		w = t * t * (3 - 2 * t);
	double kk = md->strength * w;
	c->modw[3 * k] += kk;
	c->modw[3 * k + 1] += kk * md->target[0];
	c->modw[3 * k + 2] += kk * md->target[1];
	c->r->flags[k] |= WB_CELL_MODIFIER;
	c->cells++;
}

/* A run of a polygon modifier's cells (polygon_runs). */
static void mod_poly_run(void *ctx, int j, int i0, int i1)
{
	struct mod_ctx *c = ctx;
	size_t k0 = i0 + (size_t)j * c->r->nx;
	int len = i1 - i0 + 1;
	if (!c->ramp) {
		mod_span(c, k0, len);
		return;
	}
	double fw = c->md->falloff_width;
	for (int t = 0; t < len;) {
		int s = t;
		while (t < len && c->dist[k0 + t] >= fw)
			t++;
		if (t > s)
			mod_span(c, k0 + s, t - s);
		if (t < len) {
			mod_cell(c, k0 + t, c->dist[k0 + t]);
			t++;
		}
	}
}

/* Row j of a disc modifier (centre c, radius R) within its box bb. The
 * cells whose centres may be within R and those certainly within R - fw
 * (fw: the falloff width, 0 without a ramp), where the weight is exactly 1,
 * come from square roots widened (narrowed) by a margin of a cell plus
 * rounding; the exact per-cell test (hypot) decides every cell between
 * them, so the cells taken and their weights are the definition's and only
 * the rim pays for the test. */
static void mod_disc_row(struct mod_ctx *c, struct bbox bb, int j)
{
	const struct wb_raster *r = c->r;
	const double *ctr = c->md->center;
	double R = c->md->radius, fw = c->ramp ? c->md->falloff_width : 0;
	double y = cx(r, j), dy = fabs(y - ctr[1]);
	double m = r->dx + 1e-9 * (R + fabs(ctr[0]) + fabs(ctr[1]) + fabs(y));
	double ro = R + m, rc = R - fw - m;
	if (!(dy <= ro))
		return;
	int i0 = bb.i0, i1 = bb.i1, c0 = i1 + 1, c1 = i1;
	double ho = sqrt(ro * ro - dy * dy);
	double lo = floor((ctr[0] - ho) / r->dx - 0.5) - 1;
	double hi = ceil((ctr[0] + ho) / r->dx - 0.5) + 1;
	if (lo > i0)
		i0 = lo > i1 ? i1 + 1 : (int)lo;
	if (hi < i1)
		i1 = hi < i0 ? i0 - 1 : (int)hi;
	if (rc > 0 && dy < rc) {
		double hc = sqrt(rc * rc - dy * dy);
		double a = ceil((ctr[0] - hc) / r->dx - 0.5) + 1;
		double b = floor((ctr[0] + hc) / r->dx - 0.5) - 1;
		if (a <= b && a <= i1 && b >= i0) {
			c0 = a < i0 ? i0 : (int)a;
			c1 = b > i1 ? i1 : (int)b;
		}
	}
	size_t row = (size_t)j * r->nx;
	for (int i = i0; i <= i1; i++) {
		if (i == c0) {
			mod_span(c, row + c0, c1 - c0 + 1);
			i = c1;
			continue;
		}
		double dd = hypot(cx(r, i) - ctr[0], y - ctr[1]);
		if (dd <= R)
			mod_cell(c, row + i, R - dd);
	}
}

/* Set the cells of box b to v (mask) or to INFINITY (dist): the per-element
 * work of blockers and modifiers stays within their box, not the grid. */
static void box_clear(const struct wb_raster *r, struct bbox b, uint8_t *mask,
		      double *dist)
{
	for (int j = b.j0; j <= b.j1; j++) {
		size_t k0 = b.i0 + (size_t)j * r->nx;
		if (b.i1 < b.i0)
			return;
		if (mask)
			memset(mask + k0, 0, (size_t)(b.i1 - b.i0 + 1));
		if (dist)
			for (int i = 0; i <= b.i1 - b.i0; i++)
				dist[k0 + i] = INFINITY;
	}
}

static int inside_domain(const struct wb_raster *r, double x, double y)
{
	return x >= 0 && y >= 0 && x <= r->nx * r->dx && y <= r->ny * r->dx;
}

static void set_body(struct wb_raster *r, const uint8_t *mask, int body,
		     int override)
{
	size_t n = (size_t)r->nx * r->ny;
	for (size_t k = 0; k < n; k++)
		if (mask[k] && (override || !r->body[k]))
			r->body[k] = (uint8_t)body;
}

/* 4-connected flood from the cells already in 'mask' (or from 'seed') over
 * cells with z < level; marks them in mask. Uses 'stack' of n entries. */
static long flood_below(const struct wb_raster *r, double level, uint8_t *mask,
			const uint8_t *blocked, int32_t *stack, long top)
{
	long count = top;
	while (top > 0) {
		int32_t k = stack[--top];
		int i = k % r->nx, j = k / r->nx;
		const int nb[4][2] = { { 1, 0 }, { -1, 0 }, { 0, 1 }, { 0, -1 } };
		for (int q = 0; q < 4; q++) {
			int a = i + nb[q][0], b = j + nb[q][1];
			if (a < 0 || b < 0 || a >= r->nx || b >= r->ny)
				continue;
			int32_t m = a + b * r->nx;
			if (mask[m] || r->z[m] >= level || (blocked && blocked[m]))
				continue;
			mask[m] = 1;
			stack[top++] = m;
			count++;
		}
	}
	return count;
}

void wb_raster_free(struct wb_raster *r)
{
	if (!r)
		return;
	free(r->z);
	free(r->h0);
	free(r->u0);
	free(r->v0);
	free(r->src);
	free(r->block_bot);
	free(r->block_top);
	free(r->fixed_level);
	free(r->mod_u);
	free(r->mod_v);
	free(r->mod_k);
	free(r->body);
	free(r->flags);
	memset(r, 0, sizeof(*r));
}

enum wb_status wb_raster_alloc(struct wb_raster *r, int nx, int ny, double dx)
{
	memset(r, 0, sizeof(*r));
	size_t n = (size_t)nx * ny;
	r->nx = nx;
	r->ny = ny;
	r->dx = dx;
	r->z = calloc(n, sizeof(float));
	r->h0 = calloc(n, sizeof(float));
	r->src = calloc(n, sizeof(float));
	r->block_bot = malloc(n * sizeof(float));
	r->block_top = malloc(n * sizeof(float));
	r->fixed_level = calloc(n, sizeof(float));
	r->mod_u = calloc(n, sizeof(float));
	r->mod_v = calloc(n, sizeof(float));
	r->mod_k = calloc(n, sizeof(float));
	r->body = calloc(n, 1);
	r->flags = calloc(n, 1);
	if (!r->z || !r->h0 || !r->src || !r->block_bot || !r->block_top ||
	    !r->fixed_level || !r->mod_u || !r->mod_v || !r->mod_k || !r->body ||
	    !r->flags) {
		wb_raster_free(r);
		return WB_EIO;
	}
	for (size_t k = 0; k < n; k++) {
		r->block_bot[k] = INFINITY;
		r->block_top[k] = -INFINITY;
	}
	for (int e = 0; e < 4; e++)
		r->edges[e].kind = WB_EDGE_WALL;
	return WB_OK;
}

#define ERRP(path, ...) wb_diag_add(d, WB_SEV_ERROR, sc->file, path, 0, 0, __VA_ARGS__)

enum wb_status wb_raster_build(const struct wb_scene *sc,
			       const struct wb_heightmap *hm,
			       struct wb_raster *r, struct wb_diags *d)
{
	int errors0 = d->errors;
	char p[128];
	if (wb_raster_alloc(r, hm->nx, hm->ny, sc->terrain.dx) != WB_OK)
		return wb_fail(d, WB_EIO, sc->file,
			       "out of memory for a %dx%d grid", hm->nx, hm->ny);
	r->origin[0] = sc->origin[0];
	r->origin[1] = sc->origin[1];
	memcpy(r->edges, sc->edges, sizeof(r->edges));
	size_t n = (size_t)r->nx * r->ny;
	uint8_t *mask = calloc(n, 1);
	int32_t *stack = malloc(n * sizeof(int32_t));
	double *modw = calloc(n * 3, sizeof(double)); /* k, k*u, k*v */
	double *dist = NULL; /* modifiers' distance to their outline */
	double work_done = 0; /* cells visited by corridors and falloffs */
	if (!mask || !stack || !modw) {
		free(mask);
		free(stack);
		free(modw);
		wb_raster_free(r);
		return wb_fail(d, WB_EIO, sc->file,
			       "out of memory for a %dx%d grid", hm->nx, hm->ny);
	}
	memcpy(r->z, hm->z, n * sizeof(float));
	double W = r->nx * r->dx, H = r->ny * r->dx;

	/* initial water */
	if (sc->init_has_level)
		for (size_t k = 0; k < n; k++)
			r->h0[k] = (float)fmax(0, sc->init_level - r->z[k]);
	for (int a = 0; a < sc->n_init_areas; a++) {
		memset(mask, 0, n);
		long in = wb_raster_polygon_mask(r, &sc->init_areas[a], mask);
		if (in < 0)
			goto oom;
		if (in == 0) {
			snprintf(p, sizeof(p), "initial_water.areas[%d].polygon", a);
			ERRP(p, "the polygon covers no cell of the %gx%g m terrain", W, H);
		}
		for (size_t k = 0; k < n; k++)
			if (mask[k])
				r->h0[k] = (float)fmax(r->h0[k],
						       sc->init_area_levels[a] - r->z[k]);
	}

	/* rivers and springs (regions first, lakes/oceans override) */
	for (int s = 0; s < sc->n_sources; s++) {
		const struct wb_source *src = &sc->sources[s];
		if (src->kind != WB_SRC_RIVER && src->kind != WB_SRC_SPRING)
			continue;
		double x, y, rad;
		if (src->kind == WB_SRC_RIVER) {
			x = src->path.xy[0];
			y = src->path.xy[1];
			rad = src->width / 2;
			snprintf(p, sizeof(p), "sources[%d].path[0]", s);
		} else {
			x = src->point[0];
			y = src->point[1];
			rad = src->radius;
			snprintf(p, sizeof(p), "sources[%d].point", s);
		}
		if (!inside_domain(r, x, y)) {
			ERRP(p, "expected a point on the terrain (0..%g, 0..%g m), found (%g, %g)",
			     W, H, x, y);
			continue;
		}
		memset(mask, 0, n);
		long cells = disc_mask(r, x, y, rad, mask);
		double rate = src->discharge / (cells * r->dx * r->dx);
		for (size_t k = 0; k < n; k++)
			if (mask[k]) {
				r->src[k] += (float)rate;
				r->flags[k] |= WB_CELL_SOURCE;
			}
		r->total_inflow += src->discharge;
		if (src->kind == WB_SRC_RIVER) {
			double work = seg_work(r, &src->path, 0, src->width / 2);
			if (work > WB_RASTER_WORK_MAX - work_done) {
				snprintf(p, sizeof(p), "sources[%d].path", s);
				ERRP(p, "the %g m wide corridor along these %d points would visit %.3g cells (at most %.3g in all): use fewer points or shorter segments",
				     src->width, src->path.n, work, WB_RASTER_WORK_MAX);
				continue;
			}
			work_done += work;
			memset(mask, 0, n);
			corridor_mask(r, &src->path, src->width / 2, mask);
		}
		set_body(r, mask, s + 1, 0);
	}

	/* lakes */
	for (int s = 0; s < sc->n_sources; s++) {
		const struct wb_source *src = &sc->sources[s];
		if (src->kind != WB_SRC_LAKE)
			continue;
		memset(mask, 0, n);
		long cells;
		if (src->area.n) {
			long inside = wb_raster_polygon_mask(r, &src->area, mask);
			if (inside < 0)
				goto oom;
			cells = 0;
			for (size_t k = 0; k < n; k++)
				if (mask[k] && r->z[k] >= src->level)
					mask[k] = 0;
				else if (mask[k])
					cells++;
			snprintf(p, sizeof(p), "sources[%d].polygon", s);
			if (!inside)
				ERRP(p, "the polygon covers no cell of the %gx%g m terrain", W, H);
			else if (!cells)
				ERRP(p, "no cell inside the polygon lies below the lake level %g m",
				     src->level);
		} else {
			snprintf(p, sizeof(p), "sources[%d].seed", s);
			double x = src->point[0], y = src->point[1];
			if (!inside_domain(r, x, y)) {
				ERRP(p, "expected a point on the terrain (0..%g, 0..%g m), found (%g, %g)",
				     W, H, x, y);
				continue;
			}
			int i = (int)fmin(r->nx - 1, floor(x / r->dx));
			int j = (int)fmin(r->ny - 1, floor(y / r->dx));
			int32_t k0 = i + j * r->nx;
			if (r->z[k0] >= src->level) {
				ERRP(p, "the terrain at the seed (%g m) is not below the lake level %g m",
				     r->z[k0], src->level);
				continue;
			}
			mask[k0] = 1;
			stack[0] = k0;
			cells = flood_below(r, src->level, mask, NULL, stack, 1);
			/* a lake that reaches the map edge is an ocean in disguise */
			int edge = 0;
			for (size_t k = 0; k < n && !edge; k++)
				if (mask[k]) {
					int a = (int)(k % (size_t)r->nx), b = (int)(k / (size_t)r->nx);
					edge = a == 0 || b == 0 || a == r->nx - 1 || b == r->ny - 1;
				}
			if (edge)
				wb_diag_add(d, WB_SEV_WARNING, sc->file, p, 0, 0,
					    "the lake filled from this seed reaches the map edge (%ld cells); is the level too high?",
					    cells);
		}
		for (size_t k = 0; k < n; k++)
			if (mask[k])
				r->h0[k] = (float)fmax(r->h0[k], src->level - r->z[k]);
		set_body(r, mask, s + 1, 1);
	}

	/* oceans */
	for (int s = 0; s < sc->n_sources; s++) {
		const struct wb_source *src = &sc->sources[s];
		if (src->kind != WB_SRC_OCEAN)
			continue;
		uint8_t *ex = calloc(n, 1);
		if (!ex)
			goto oom;
		for (int e = 0; e < src->n_exclude; e++)
			if (wb_raster_polygon_mask(r, &src->exclude[e], ex) < 0) {
				free(ex);
				goto oom;
			}
		memset(mask, 0, n);
		long top = 0;
		for (int j = 0; j < r->ny; j++)
			for (int i = 0; i < r->nx; i++) {
				if (i && j && i != r->nx - 1 && j != r->ny - 1)
					continue;
				int32_t k = i + j * r->nx;
				if (r->z[k] < src->level && !ex[k] && !mask[k]) {
					mask[k] = 1;
					stack[top++] = k;
				}
			}
		long cells = flood_below(r, src->level, mask, ex, stack, top);
		free(ex);
		snprintf(p, sizeof(p), "sources[%d].level", s);
		if (!cells) {
			ERRP(p, "no terrain at the map edge lies below the ocean level %g m",
			     src->level);
			continue;
		}
		for (size_t k = 0; k < n; k++)
			if (mask[k])
				r->h0[k] = (float)fmax(r->h0[k], src->level - r->z[k]);
		set_body(r, mask, s + 1, 1);
		/* hold the open sea: cells farther than the band from land */
		int B = WB_OCEAN_FREE_BAND;
		for (int j = 0; j < r->ny; j++)
			for (int i = 0; i < r->nx; i++) {
				size_t k = i + (size_t)j * r->nx;
				if (!mask[k])
					continue;
				int open = 1;
				for (int b = -B; b <= B && open; b++)
					for (int a = -B; a <= B && open; a++) {
						int ii = i + a, jj = j + b;
						if (ii < 0 || jj < 0 || ii >= r->nx || jj >= r->ny)
							continue;
						if (!mask[ii + (size_t)jj * r->nx])
							open = 0;
					}
				if (open) {
					r->flags[k] |= WB_CELL_FIXED;
					r->fixed_level[k] = (float)src->level;
				}
			}
	}

	/* rain and sinks */
	for (int s = 0; s < sc->n_sources; s++) {
		const struct wb_source *src = &sc->sources[s];
		if (src->kind == WB_SRC_RAIN) {
			double rate = src->rate_mm_h / 3.6e6;
			memset(mask, 0, n);
			long cells;
			if (src->area.n) {
				cells = wb_raster_polygon_mask(r, &src->area, mask);
				if (cells < 0)
					goto oom;
				if (!cells) {
					snprintf(p, sizeof(p), "sources[%d].region", s);
					ERRP(p, "the region covers no cell of the %gx%g m terrain", W, H);
				}
			} else {
				memset(mask, 1, n);
				cells = (long)n;
			}
			for (size_t k = 0; k < n; k++)
				if (mask[k])
					r->src[k] += (float)rate;
			r->total_inflow += rate * cells * r->dx * r->dx;
		} else if (src->kind == WB_SRC_SINK) {
			memset(mask, 0, n);
			long cells;
			if (src->has_point) {
				snprintf(p, sizeof(p), "sources[%d].point", s);
				if (!inside_domain(r, src->point[0], src->point[1])) {
					ERRP(p, "expected a point on the terrain (0..%g, 0..%g m), found (%g, %g)",
					     W, H, src->point[0], src->point[1]);
					continue;
				}
				cells = disc_mask(r, src->point[0], src->point[1],
						  src->radius, mask);
			} else {
				snprintf(p, sizeof(p), "sources[%d].region", s);
				cells = wb_raster_polygon_mask(r, &src->area, mask);
				if (cells < 0)
					goto oom;
				if (!cells) {
					ERRP(p, "the region covers no cell of the %gx%g m terrain", W, H);
					continue;
				}
			}
			double rate = src->drain_all ? 0 :
				      src->discharge / (cells * r->dx * r->dx);
			for (size_t k = 0; k < n; k++)
				if (mask[k]) {
					r->src[k] -= (float)rate;
					if (src->drain_all)
						r->flags[k] |= WB_CELL_SINK_ALL;
				}
		}
	}

	/* blockers */
	for (int b = 0; b < sc->n_blockers; b++) {
		const struct wb_blocker *bl = &sc->blockers[b];
		struct bbox bb = bbox_of(r, bl->area.xy, bl->area.n, 0);
		box_clear(r, bb, mask, NULL); /* wb_raster_polygon_mask marks only in bb */
		long in = wb_raster_polygon_mask(r, &bl->area, mask);
		if (in < 0)
			goto oom;
		if (!in) {
			snprintf(p, sizeof(p), "blockers[%d].polygon", b);
			ERRP(p, "the polygon covers no cell of the %gx%g m terrain", W, H);
			continue;
		}
		for (int j = bb.j0; j <= bb.j1; j++)
			for (int i = bb.i0; i <= bb.i1; i++) {
				size_t k = i + (size_t)j * r->nx;
				if (!mask[k])
					continue;
				r->block_bot[k] = fminf(r->block_bot[k], (float)bl->bottom);
				r->block_top[k] = fmaxf(r->block_top[k], (float)bl->top);
				r->flags[k] |= WB_CELL_BLOCKER;
			}
	}

	/* modifiers */
	for (int m = 0; m < sc->n_modifiers; m++) {
		const struct wb_modifier *md = &sc->modifiers[m];
		/* the distance to the edge matters only within the falloff */
		int ramp = md->falloff != WB_FALLOFF_NONE && md->falloff_width > 0;
		struct mod_ctx mc = { r, modw, NULL, md, ramp, 0 };
		if (md->area.n) {
			double work = ramp ? seg_work(r, &md->area, 1,
						      md->falloff_width) : 0;
			if (work > WB_RASTER_WORK_MAX - work_done) {
				snprintf(p, sizeof(p), "modifiers[%d].polygon", m);
				ERRP(p, "a %g m falloff along these %d edges would visit %.3g cells (at most %.3g in all): use fewer vertices or a smaller falloff_width",
				     md->falloff_width, md->area.n, work, WB_RASTER_WORK_MAX);
				continue;
			}
			work_done += work;
			if (ramp) {
				if (!dist && !(dist = malloc(n * sizeof(double))))
					goto oom;
				/* every cell outline_near may visit */
				box_clear(r, bbox_of(r, md->area.xy, md->area.n,
						     md->falloff_width + r->dx),
					  NULL, dist);
				outline_near(r, &md->area, md->falloff_width, dist);
				mc.dist = dist;
			}
			if (polygon_runs(r, &md->area, mod_poly_run, &mc) < 0)
				goto oom;
		} else {
			struct bbox bb = bbox_of(r, md->center, 1, md->radius);
			for (int j = bb.j0; j <= bb.j1; j++)
				mod_disc_row(&mc, bb, j);
		}
		if (!mc.cells) {
			snprintf(p, sizeof(p), "modifiers[%d]", m);
			ERRP(p, "the region covers no cell of the %gx%g m terrain", W, H);
		}
	}
	for (size_t k = 0; k < n; k++)
		if (modw[3 * k] > 0) {
			r->mod_k[k] = (float)modw[3 * k];
			r->mod_u[k] = (float)(modw[3 * k + 1] / modw[3 * k]);
			r->mod_v[k] = (float)(modw[3 * k + 2] / modw[3 * k]);
		}

	/* edges */
	static const char *const side[] = { "west", "east", "north", "south" };
	for (int e = 0; e < 4; e++) {
		const struct wb_edge *ed = &r->edges[e];
		double len = (e < 2 ? r->ny : r->nx) * r->dx;
		if (ed->kind != WB_EDGE_INFLOW)
			continue;
		if (ed->discharge > 0)
			r->total_inflow += ed->discharge * len;
		else
			r->total_inflow += ed->velocity * ed->depth * len;
		(void)side;
	}

	free(mask);
	free(stack);
	free(modw);
	free(dist);
	if (d->errors > errors0) {
		wb_raster_free(r);
		return WB_EINPUT;
	}
	return WB_OK;
oom:
	free(mask);
	free(stack);
	free(modw);
	free(dist);
	wb_raster_free(r);
	return wb_fail(d, WB_EIO, sc->file, "out of memory for a %dx%d grid",
		       hm->nx, hm->ny);
}
