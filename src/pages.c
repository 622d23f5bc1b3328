/*
 * pages.c - the LOD pyramid cut into 130x130 pages, classified EMPTY / FLAT
 * / DATA, with the CDLOD quadtree ranges (has_water, hmin, hmax).
 *
 * Geometry (pages.h): LOD k is maps_downsample() applied k times to LOD0
 * (spacing dx0 * 2^k). Its page grid has pages_x = ceil(nx / 128) by
 * pages_y = ceil(ny / 128) pages; the padded image is pages_x*128 by
 * pages_y*128, pixels past the LOD's extent being dry (height
 * WB_DRY_HEIGHT, flow 0, material 0, foam 0, distance -distance_max).
 * Stored pixel (a, b), a, b in [0, 130), of page (px, py) is padded pixel
 * (clamp(px*128 + a - 1), clamp(py*128 + b - 1)), clamped to the padded
 * image: the 1-pixel border is exactly the neighbouring page's interior
 * edge, and at the world edge a copy of the page's own edge pixel, so
 * bilinear filtering inside [0.5, 129.5] never leaves the page.
 *
 * Classification of a page:
 *   EMPTY  what a runtime rebuilds as all dry with distance -distance_max
 *          is exactly the page: no wet pixel among all 130x130 and, with
 *          a distance layer, every distance <= -distance_max (the page
 *          is farther than distance_max from water); has_water = 0,
 *          hmin = hmax = 0. A dry page nearer the shore is DATA (with
 *          has_water = 0 when no interior pixel is wet), so the land-side
 *          distance survives and LOD k+1 agrees with its LOD k children.
 *   FLAT   a runtime rebuilds every layer from one value, so all 130x130
 *          pixels (border included) are wet, max - min of the surface is
 *          <= WB_FLAT_HEIGHT_TOL (1 mm), and for the layers present |u|,
 *          |v| <= WB_FLAT_FLOW_TOL (1 mm/s), one material, distance =
 *          +distance_max (deep inside water), foam <= WB_FLAT_FOAM_TOL.
 *          flat_height = (min + max) / 2 rounded to a multiple of
 *          WB_FLAT_GRID (2^-10 m), flat_material = the material. Two
 *          FLAT pages that touch (8-neighbours: their footprints share
 *          border pixels) must have the same flat_height, or the seam
 *          between them would step: the later one in raster order is
 *          made DATA.
 *   DATA   everything else; the page's pixels are kept.
 * hmin / hmax: range of the wet interior surface heights; at LOD k > 0
 * widened to cover the four child pages of LOD k-1 (always true already
 * since coarse heights are means of finer ones, but stated explicitly so
 * that the quadtree nests for CDLOD culling). has_water likewise.
 *
 * Pages are independent: OpenMP over pages, results identical for any
 * thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void pages_cut(const struct wb_maps *m, int px, int py, double distance_max,
	       float *height, float *flow, uint8_t *material, float *distance,
	       float *foam)
{
	int pw = (m->nx + WB_PAGE_INTERIOR - 1) / WB_PAGE_INTERIOR;
	int ph = (m->ny + WB_PAGE_INTERIOR - 1) / WB_PAGE_INTERIOR;
	int xmax = pw * WB_PAGE_INTERIOR - 1, ymax = ph * WB_PAGE_INTERIOR - 1;
	int xs[WB_PAGE_SIZE];
	for (int a = 0; a < WB_PAGE_SIZE; a++)
		xs[a] = clampi(px * WB_PAGE_INTERIOR + a - WB_PAGE_BORDER, 0,
			       xmax);
	float dneg = (float)-distance_max;
	for (int b = 0; b < WB_PAGE_SIZE; b++) {
		int y = clampi(py * WB_PAGE_INTERIOR + b - WB_PAGE_BORDER, 0,
			       ymax);
		size_t row = (size_t)y * m->nx;
		for (int a = 0; a < WB_PAGE_SIZE; a++) {
			int x = xs[a];
			size_t o = (size_t)b * WB_PAGE_SIZE + a;
			if (x >= m->nx || y >= m->ny) {
				if (height)
					height[o] = WB_DRY_HEIGHT;
				if (flow)
					flow[2 * o] = flow[2 * o + 1] = 0;
				if (material)
					material[o] = 0;
				if (distance)
					distance[o] = dneg;
				if (foam)
					foam[o] = 0;
				continue;
			}
			size_t k = row + x;
			if (height)
				height[o] = m->height[k];
			if (flow) {
				flow[2 * o] = m->u[k];
				flow[2 * o + 1] = m->v[k];
			}
			if (material)
				material[o] = m->material[k];
			if (distance)
				distance[o] = m->distance[k];
			if (foam)
				foam[o] = m->foam ? m->foam[k] : 0;
		}
	}
}

static void page_release(struct wb_page *p)
{
	free(p->height);
	free(p->flow);
	free(p->material);
	free(p->distance);
	free(p->foam);
	p->height = p->flow = p->distance = p->foam = NULL;
	p->material = NULL;
}

/* Cut and classify page (px, py); 0 or -1 out of memory. */
#define WB_FLAT_GRID (1.0 / 1024.0)
#define WB_FLAT_NEAR_SPAN 3.0f   /* m */
#define WB_FLAT_FAR_SPAN 300.0f  /* m */

static int page_make(const struct wb_maps *m, int px, int py, unsigned layers,
		     double dmax, int no_flat, struct wb_page *p)
{
	const size_t n = WB_PAGE_PIXELS;
	memset(p, 0, sizeof *p);
	/* cut every layer, needed or not, for the classification; drop the
	 * unrequested ones afterwards */
	p->height = malloc(n * sizeof(float));
	p->flow = malloc(2 * n * sizeof(float));
	p->material = malloc(n);
	p->distance = malloc(n * sizeof(float));
	if (m->foam)
		p->foam = malloc(n * sizeof(float));
	if (!p->height || !p->flow || !p->material || !p->distance ||
	    (m->foam && !p->foam)) {
		page_release(p);
		return -1;
	}
	pages_cut(m, px, py, dmax, p->height, p->flow, p->material,
		  p->distance, p->foam);

	/* interior range */
	float lo = INFINITY, hi = -INFINITY;
	for (int b = 1; b <= WB_PAGE_INTERIOR; b++)
		for (int a = 1; a <= WB_PAGE_INTERIOR; a++) {
			float h = p->height[b * WB_PAGE_SIZE + a];
			if (h == WB_DRY_HEIGHT)
				continue;
			lo = h < lo ? h : lo;
			hi = h > hi ? h : hi;
		}
	if (!(lo <= hi)) {
		/* EMPTY only when the expansion (all dry, distance -dmax)
		   equals the page, border included */
		int empty = 1;
		float dneg = (float)-dmax;
		for (size_t k = 0; k < n && empty; k++)
			if (p->height[k] != WB_DRY_HEIGHT ||
			    ((layers & (1u << WB_LAYER_DISTANCE)) &&
			     p->distance[k] > dneg))
				empty = 0;
		if (empty) {
			page_release(p);
			p->state = WB_PAGE_EMPTY;
			return 0;
		}
		p->has_water = 0;
		p->hmin = p->hmax = 0;
		goto data;
	}
	p->has_water = 1;
	p->hmin = lo;
	p->hmax = hi;

	/* FLAT test over all 130x130 pixels */
	int flat = !no_flat;
	float flo = INFINITY, fhi = -INFINITY;
	float fmax = (float)dmax;
	for (size_t k = 0; k < n && flat; k++) {
		float h = p->height[k];
		if (h == WB_DRY_HEIGHT) {
			flat = 0;
			break;
		}
		flo = h < flo ? h : flo;
		fhi = h > fhi ? h : fhi;
		if (fhi - flo > WB_FLAT_HEIGHT_TOL)
			flat = 0;
		if ((layers & (1u << WB_LAYER_FLOW)) &&
		    (fabsf(p->flow[2 * k]) > WB_FLAT_FLOW_TOL ||
		     fabsf(p->flow[2 * k + 1]) > WB_FLAT_FLOW_TOL))
			flat = 0;
		if ((layers & (1u << WB_LAYER_MATERIAL)) &&
		    p->material[k] != p->material[0])
			flat = 0;
		if ((layers & (1u << WB_LAYER_DISTANCE)) &&
		    p->distance[k] < fmax)
			flat = 0;
		if ((layers & (1u << WB_LAYER_FOAM)) && p->foam &&
		    p->foam[k] > WB_FLAT_FOAM_TOL)
			flat = 0;
	}
	if (flat) {
		p->state = WB_PAGE_FLAT;
		p->flat_height = (float)(WB_FLAT_GRID *
					 rint(((double)flo + fhi) / 2 /
					      WB_FLAT_GRID));
		p->flat_material = p->material[0];
		page_release(p);
		return 0;
	}
data:
	p->state = WB_PAGE_DATA;
	if (!(layers & (1u << WB_LAYER_HEIGHT))) {
		free(p->height);
		p->height = NULL;
	}
	if (!(layers & (1u << WB_LAYER_FLOW))) {
		free(p->flow);
		p->flow = NULL;
	}
	if (!(layers & (1u << WB_LAYER_MATERIAL))) {
		free(p->material);
		p->material = NULL;
	}
	if (!(layers & (1u << WB_LAYER_DISTANCE))) {
		free(p->distance);
		p->distance = NULL;
	}
	if (!(layers & (1u << WB_LAYER_FOAM))) {
		free(p->foam);
		p->foam = NULL;
	}
	return 0;
}

static void lod_release(struct wb_lod_pages *l)
{
	if (!l->pages)
		return;
	for (long k = 0; k < (long)l->px * l->py; k++)
		page_release(&l->pages[k]);
	free(l->pages);
	l->pages = NULL;
}

static enum wb_status lod_cut(const struct wb_maps *m, int lod, unsigned layers,
			      double dmax, int threads, struct wb_lod_pages *l,
			      struct wb_diags *d)
{
	l->lod = lod;
	l->nx = m->nx;
	l->ny = m->ny;
	l->dx = m->dx;
	l->px = (m->nx + WB_PAGE_INTERIOR - 1) / WB_PAGE_INTERIOR;
	l->py = (m->ny + WB_PAGE_INTERIOR - 1) / WB_PAGE_INTERIOR;
	long np = (long)l->px * l->py;
	l->pages = calloc((size_t)np, sizeof *l->pages);
	if (!l->pages)
		return wb_fail(d, WB_EIO, NULL, "pages: out of memory");
	int fail = 0;
#pragma omp parallel for num_threads(threads > 0 ? threads : 1) \
	schedule(dynamic, 1)
	for (long k = 0; k < np; k++) {
		if (page_make(m, (int)(k % l->px), (int)(k / l->px), layers,
			      dmax, 0, &l->pages[k])) {
#pragma omp atomic write
			fail = 1;
		}
	}
	if (fail)
		return wb_fail(d, WB_EIO, NULL, "pages: out of memory");
	/* wet range of the DATA pages' 130x130 pixels */
	float *span = calloc((size_t)np, sizeof *span);
	if (!span)
		return wb_fail(d, WB_EIO, NULL, "pages: out of memory");
	for (long k = 0; k < np; k++) {
		const struct wb_page *p = &l->pages[k];
		float lo = INFINITY, hi = -INFINITY;
		for (int i = 0; p->height && i < WB_PAGE_PIXELS; i++)
			if (p->height[i] != WB_DRY_HEIGHT) {
				lo = fminf(lo, p->height[i]);
				hi = fmaxf(hi, p->height[i]);
			}
		span[k] = lo <= hi ? hi - lo : 0;
	}
	/* a FLAT page becomes DATA (serial, raster order) when
	   - a touching FLAT page has another height (the seam between them
	     would step), or
	   - a DATA page within 1 page spans more than WB_FLAT_NEAR_SPAN or
	     one within 2 pages more than WB_FLAT_FAR_SPAN: the pack's height
	     grid on the shared pixels (docs/wtp-format.md 4) would then be
	     coarser than the FLAT height's 2^-10 m */
	for (long k = 0; k < np; k++) {
		struct wb_page *p = &l->pages[k];
		int x = (int)(k % l->px), y = (int)(k / l->px), clash = 0;
		if (p->state != WB_PAGE_FLAT)
			continue;
		for (int j = y - 2; j <= y + 2 && !clash; j++)
			for (int i = x - 2; i <= x + 2; i++) {
				if (i < 0 || j < 0 || i >= l->px ||
				    j >= l->py || (i == x && j == y))
					continue;
				long o = i + (long)j * l->px;
				const struct wb_page *q = &l->pages[o];
				int near = abs(i - x) <= 1 && abs(j - y) <= 1;
				if ((near && q->state == WB_PAGE_FLAT &&
				     q->flat_height != p->flat_height) ||
				    span[o] > (near ? WB_FLAT_NEAR_SPAN
						    : WB_FLAT_FAR_SPAN)) {
					clash = 1;
					break;
				}
			}
		if (clash && page_make(m, x, y, layers, dmax, 1, p)) {
			free(span);
			return wb_fail(d, WB_EIO, NULL, "pages: out of memory");
		}
	}
	free(span);
	return WB_OK;
}

/* Widen LOD k's ranges to cover LOD k-1's pages beneath. */
static void lod_nest(struct wb_lod_pages *l, const struct wb_lod_pages *c)
{
	for (int py = 0; py < l->py; py++)
		for (int px = 0; px < l->px; px++) {
			struct wb_page *p = &l->pages[px + py * l->px];
			for (int b = 0; b < 2; b++)
				for (int a = 0; a < 2; a++) {
					int cx = 2 * px + a, cy = 2 * py + b;
					if (cx >= c->px || cy >= c->py)
						continue;
					const struct wb_page *q =
						&c->pages[cx + cy * c->px];
					if (!q->has_water)
						continue;
					if (!p->has_water) {
						p->has_water = 1;
						p->hmin = q->hmin;
						p->hmax = q->hmax;
						continue;
					}
					p->hmin = q->hmin < p->hmin ? q->hmin
								    : p->hmin;
					p->hmax = q->hmax > p->hmax ? q->hmax
								    : p->hmax;
				}
		}
}

enum wb_status pages_build(const struct wb_maps *lod0, int n_lods,
			   unsigned layers, double distance_max,
			   const double origin[2], int threads,
			   struct wb_pageset *ps, struct wb_diags *d)
{
	memset(ps, 0, sizeof *ps);
	if (n_lods < 1 || n_lods > 24)
		return wb_fail(d, WB_EINPUT, NULL,
			       "pages: %d LODs requested (1..24)", n_lods);
	layers &= (1u << WB_LAYER_COUNT) - 1;
	if (!lod0->foam)
		layers &= ~(1u << WB_LAYER_FOAM);
	ps->lods = calloc((size_t)n_lods, sizeof *ps->lods);
	if (!ps->lods)
		return wb_fail(d, WB_EIO, NULL, "pages: out of memory");
	ps->layers = layers;
	ps->origin[0] = origin ? origin[0] : 0;
	ps->origin[1] = origin ? origin[1] : 0;
	ps->dx0 = lod0->dx;
	ps->distance_max = distance_max;

	enum wb_status s = WB_OK;
	struct wb_maps cur = { 0 }, next;
	const struct wb_maps *m = lod0;
	for (int k = 0; k < n_lods; k++) {
		ps->n_lods = k + 1;
		if (k > 0) {
			s = maps_downsample(m, threads, &next, d);
			maps_free(&cur);
			if (s != WB_OK)
				break;
			cur = next;
			m = &cur;
		}
		s = lod_cut(m, k, layers, distance_max, threads, &ps->lods[k],
			    d);
		if (s != WB_OK)
			break;
		if (k > 0)
			lod_nest(&ps->lods[k], &ps->lods[k - 1]);
	}
	maps_free(&cur);
	if (s != WB_OK) {
		for (int k = 0; k < n_lods; k++)
			lod_release(&ps->lods[k]);
		free(ps->lods);
		memset(ps, 0, sizeof *ps);
	}
	return s;
}
