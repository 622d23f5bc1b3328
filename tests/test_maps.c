/*
 * test_maps.c - maps, pyramid, pages, previews and wb_output_write.
 *
 * Synthetic worlds are built by hand (zeroed wb_scene / wb_raster /
 * wb_state plus the fields the map stage reads): a sloping valley with a
 * meandering river, a still lake held at one level and dry hills. Checks:
 *   - the distance transform equals brute-force Euclidean distance
 *     (tolerance 1e-4 m), clamps, and handles all-wet / all-dry grids;
 *   - the material rule on hand-made cases (regions, nearest body through
 *     water, ties to the lowest body, unreached water, sinks);
 *   - the dry sentinel and wet values at LOD0;
 *   - the pyramid is water-aware (dry children do not drag heights, flow
 *     is depth-weighted, distances stay in metres);
 *   - every page border equals the neighbouring page's interior for every
 *     layer and LOD (clamped at the world edge), and every stored pixel
 *     equals the LOD image it was cut from;
 *   - EMPTY and FLAT pages are detected, ripples or flow make DATA, and the
 *     quadtree ranges nest;
 *   - wb_output_write gives byte-identical packs and manifests with 1 and
 *     2 threads and across runs, and a manifest that parses and agrees
 *     with the summary; previews and page PNGs are written.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "maps.h"
#include "output.h"
#include "preview.h"
#include "util.h"

/* ---- synthetic worlds -------------------------------------------------- */

struct world {
	struct wb_scene sc;
	struct wb_raster r;
	struct wb_state st;
	struct wb_material mats[2];
	struct wb_source src[3];
};

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static void scene_init(struct world *w, int lods, double dmax, int foam)
{
	memset(w, 0, sizeof *w);
	w->sc.name = "synthetic";
	w->sc.file = "synthetic.json";
	w->sc.terrain.heightmap = "synthetic.r32";
	w->mats[0].id = 3;
	w->mats[0].name = "river";
	w->mats[0].kind = WB_MAT_RIVER;
	w->mats[0].amplitude = 0.1;
	w->mats[1].id = 7;
	w->mats[1].name = "lake";
	w->mats[1].kind = WB_MAT_LAKE;
	w->src[0].kind = WB_SRC_RIVER;
	w->src[0].material = 0;
	w->src[1].kind = WB_SRC_LAKE;
	w->src[1].material = 1;
	w->src[2].kind = WB_SRC_SINK;
	w->src[2].material = -1;
	w->sc.materials = w->mats;
	w->sc.n_materials = 2;
	w->sc.sources = w->src;
	w->sc.n_sources = 3;
	w->sc.sim.dry_depth = 1e-3;
	w->sc.output.lods = lods;
	w->sc.output.layers = (1u << WB_LAYER_COUNT) - 1;
	if (!foam)
		w->sc.output.layers &= ~(1u << WB_LAYER_FOAM);
	w->sc.output.distance_max = dmax;
	for (int k = 0; k < 32; k++)
		w->sc.scene_sha256[k] = (unsigned char)(k * 7 + 1);
}

static void grid_alloc(struct world *w, int nx, int ny, double dx, int foam)
{
	size_t n = (size_t)nx * ny;
	w->r.nx = w->st.nx = nx;
	w->r.ny = w->st.ny = ny;
	w->r.dx = w->st.dx = dx;
	w->r.origin[0] = 1000;
	w->r.origin[1] = -500;
	w->r.z = calloc(n, sizeof(float));
	w->r.body = calloc(n, 1);
	w->st.h = calloc(n, sizeof(float));
	w->st.u = calloc(n, sizeof(float));
	w->st.v = calloc(n, sizeof(float));
	w->st.foam = foam ? calloc(n, sizeof(float)) : NULL;
	assert_non_null(w->r.z);
	assert_non_null(w->r.body);
	assert_non_null(w->st.h);
	assert_non_null(w->st.u);
	assert_non_null(w->st.v);
}

static void world_free(struct world *w)
{
	free(w->r.z);
	free(w->r.body);
	free(w->st.h);
	free(w->st.u);
	free(w->st.v);
	free(w->st.foam);
	free(w->st.falls);
}

/* Valley world: terrain falls to the east; a river meanders west to east
 * (region of body 1 at its west end), a lake (body 2) with a flat surface
 * fills a basin in the south-west, everything else is dry. */
static void valley(struct world *w, int nx, int ny, int foam, uint64_t seed)
{
	grid_alloc(w, nx, ny, 1.0, foam);
	double lake_level = 12.0;
	int lx1 = nx / 2, ly0 = ny / 2;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)j * nx + i;
			double yc = ny * 0.25 + ny * 0.12 * sin(i * 0.02);
			double dy = j - yc;
			double z = 30.0 - 0.01 * i + 0.002 * dy * dy;
			double h = 0;
			if (fabs(dy) < 14) {
				h = 1.2 - 0.005 * dy * dy;
				z = 30.0 - 0.01 * i - 1.2;
			}
			if (i < lx1 && j >= ly0) {
				/* lake basin: bowl below the level, rim above */
				double cx = lx1 * 0.5, cy = (ly0 + ny) * 0.5;
				double rr = hypot((i - cx) / (lx1 * 0.45),
						  (j - cy) / ((ny - ly0) * 0.45));
				z = rr < 1 ? lake_level - 3 * (1 - rr * rr)
					   : lake_level + 2 * (rr - 1) + 0.5;
				h = z < lake_level ? lake_level - z : 0;
				if (rr < 0.3)
					w->r.body[k] = 2;
			} else if (h > 0) {
				w->st.u[k] = (float)(1.0 + 0.3 * cos(j * 0.1));
				w->st.v[k] = (float)(0.2 * sin(i * 0.05));
				if (i < 40)
					w->r.body[k] = 1;
				if (foam)
					w->st.foam[k] = (float)rng_unit(&seed);
			}
			if (h <= 0)
				h = 0;
			w->r.z[k] = (float)z;
			w->st.h[k] = (float)h;
		}
	w->st.falls = calloc(1, sizeof *w->st.falls);
	assert_non_null(w->st.falls);
	w->st.n_falls = 1;
	w->st.falls[0].x = 1100.5;
	w->st.falls[0].y = -420.25;
	w->st.falls[0].width = 6;
	w->st.falls[0].flux = 3.5;
	w->st.falls[0].drop = 4.25;
}

/* ---- distance transform ------------------------------------------------ */

static void brute_sdf(const uint8_t *wet, int nx, int ny, double dx,
		      double dmax, int i, int j, double *out)
{
	double best = INFINITY;
	int me = wet[(size_t)j * nx + i] != 0;
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nx; x++)
			if ((wet[(size_t)y * nx + x] != 0) != me) {
				double dd = hypot(x - i, y - j);
				best = dd < best ? dd : best;
			}
	double s = isinf(best) ? dmax : (best - 0.5) * dx;
	s = s > dmax ? dmax : s;
	*out = me ? s : -s;
}

static void test_distance_exact(void **state)
{
	(void)state;
	uint64_t seed = 42;
	const int sizes[][2] = { { 37, 23 }, { 1, 19 }, { 31, 1 }, { 64, 48 } };
	for (int t = 0; t < 4; t++) {
		int nx = sizes[t][0], ny = sizes[t][1];
		size_t n = (size_t)nx * ny;
		uint8_t *wet = malloc(n);
		float *sdf = malloc(n * sizeof(float));
		assert_non_null(wet);
		assert_non_null(sdf);
		/* blobs: wet where a sum of random bumps is positive */
		double bx[4], by[4];
		for (int b = 0; b < 4; b++) {
			bx[b] = rng_unit(&seed) * nx;
			by[b] = rng_unit(&seed) * ny;
		}
		for (int j = 0; j < ny; j++)
			for (int i = 0; i < nx; i++) {
				double v = -0.4;
				for (int b = 0; b < 4; b++)
					v += exp(-(pow(i - bx[b], 2) +
						   pow(j - by[b], 2)) / 60.0);
				wet[(size_t)j * nx + i] =
					v > 0 || rng_unit(&seed) < 0.05;
			}
		double dx = 0.75, dmax = 9.0;
		for (int threads = 1; threads <= 2; threads++) {
			assert_int_equal(maps_signed_distance(wet, nx, ny, dx, dmax,
							      threads, sdf), 0);
			for (int j = 0; j < ny; j++)
				for (int i = 0; i < nx; i++) {
					double ref;
					brute_sdf(wet, nx, ny, dx, dmax, i, j, &ref);
					double got = sdf[(size_t)j * nx + i];
					if (fabs(got - ref) > 1e-4)
						fail_msg("sdf(%d,%d) of %dx%d = %g, "
							 "brute force %g", i, j,
							 nx, ny, got, ref);
				}
		}
		free(wet);
		free(sdf);
	}
}

static void test_distance_uniform(void **state)
{
	(void)state;
	uint8_t wet[12 * 10];
	float sdf[12 * 10];
	memset(wet, 1, sizeof wet);
	assert_int_equal(maps_signed_distance(wet, 12, 10, 1, 5, 1, sdf), 0);
	for (int k = 0; k < 120; k++)
		assert_true(sdf[k] == 5.0f);
	memset(wet, 0, sizeof wet);
	assert_int_equal(maps_signed_distance(wet, 12, 10, 1, 5, 1, sdf), 0);
	for (int k = 0; k < 120; k++)
		assert_true(sdf[k] == -5.0f);
	/* one wet column at i = 0: dry pixel i is -(i - 0.5) m */
	for (int j = 0; j < 10; j++)
		wet[j * 12] = 1;
	assert_int_equal(maps_signed_distance(wet, 12, 10, 2.0, 100, 1, sdf), 0);
	for (int j = 0; j < 10; j++) {
		assert_float_equal(sdf[j * 12], 1.0, 1e-6); /* half a pixel */
		for (int i = 1; i < 12; i++)
			assert_float_equal(sdf[j * 12 + i], -(i - 0.5) * 2.0, 1e-5);
	}
}

/* ---- material rule ----------------------------------------------------- */

static void test_material_rule(void **state)
{
	(void)state;
	struct world w;
	scene_init(&w, 1, 8, 0);
	/* 1 row of 11 pixels: body1 at 0, body2 at 10, equidistant pixel 5
	 * (tie -> body 1), then a separate pool and a sink region */
	enum { NX = 11, NY = 3 };
	uint8_t wet[NX * NY], body[NX * NY], mat[NX * NY];
	memset(wet, 0, sizeof wet);
	memset(body, 0, sizeof body);
	for (int i = 0; i < NX; i++)
		wet[i] = 1;
	body[0] = 1;
	body[10] = 2;
	/* row 2: an isolated pool (0..2) and water in a sink region (6..8) */
	wet[2 * NX + 0] = wet[2 * NX + 1] = wet[2 * NX + 2] = 1;
	wet[2 * NX + 6] = wet[2 * NX + 7] = wet[2 * NX + 8] = 1;
	body[2 * NX + 7] = 3;
	/* a dry pixel inside a body region stays material 0 */
	body[1 * NX + 4] = 1;
	assert_int_equal(maps_material(&w.sc, wet, body, NX, NY, mat), 0);
	for (int i = 0; i <= 5; i++)
		assert_int_equal(mat[i], 3); /* nearest body 1, tie at 5 */
	for (int i = 6; i <= 10; i++)
		assert_int_equal(mat[i], 7);
	for (int i = 0; i < NX; i++)
		assert_int_equal(mat[NX + i], 0);
	/* unreached pool and sink water: the first material */
	assert_int_equal(mat[2 * NX + 0], 3);
	assert_int_equal(mat[2 * NX + 7], 3);
	assert_int_equal(mat[2 * NX + 3], 0);
	/* path through water, not the straight line: a U-shaped channel.
	 * Body 2 sits close in straight line but far through water. */
	enum { UX = 9, UY = 5 };
	uint8_t uw[UX * UY], ub[UX * UY], um[UX * UY];
	memset(uw, 0, sizeof uw);
	memset(ub, 0, sizeof ub);
	for (int i = 0; i < UX; i++)
		uw[i] = uw[4 * UX + i] = 1; /* top and bottom rows */
	for (int j = 0; j < UY; j++)
		uw[j * UX + 8] = 1; /* joined at the east end */
	ub[4 * UX + 0] = 2; /* body 2 at bottom-left */
	ub[0 * UX + 8] = 1; /* body 1 at top-right */
	assert_int_equal(maps_material(&w.sc, uw, ub, UX, UY, um), 0);
	/* top-left (0,0): 8 steps to body 1, 4+8+... = 16 to body 2 */
	assert_int_equal(um[0], 3);
	/* bottom (4,4): 4 steps to body 2, 4+4 = 8 to body 1 */
	assert_int_equal(um[4 * UX + 4], 7);
	/* without materials, unreached water gets 0 */
	w.sc.n_materials = 0;
	w.sc.n_sources = 0;
	assert_int_equal(maps_material(&w.sc, wet, body, NX, NY, mat), 0);
	assert_int_equal(mat[0], 0);
}

/* ---- LOD0 maps --------------------------------------------------------- */

static void test_lod0_values(void **state)
{
	(void)state;
	struct world w;
	struct wb_diags d;
	wb_diags_init(&d);
	scene_init(&w, 3, 8, 1);
	valley(&w, 200, 150, 1, 7);
	struct wb_maps m;
	assert_int_equal(maps_build(&w.sc, &w.r, &w.st, 2, &m, &d), WB_OK);
	long wet = 0, dry = 0;
	for (size_t k = 0; k < 200 * 150; k++) {
		if (w.st.h[k] > 1e-3f) {
			wet++;
			assert_true(m.height[k] == w.r.z[k] + w.st.h[k]);
			assert_true(m.height[k] > -1000);
			assert_true(m.u[k] == w.st.u[k]);
			assert_true(m.distance[k] > 0);
			assert_true(m.material[k] == 3 || m.material[k] == 7);
			assert_true(m.foam[k] >= 0 && m.foam[k] <= 1);
		} else {
			dry++;
			assert_true(m.height[k] == WB_DRY_HEIGHT);
			assert_true(m.u[k] == 0 && m.v[k] == 0);
			assert_int_equal(m.material[k], 0);
			assert_true(m.distance[k] < 0);
			assert_true(m.foam[k] == 0);
		}
		assert_true(fabsf(m.distance[k]) <= 8.0f);
	}
	assert_true(wet > 1000 && dry > 1000);
	maps_free(&m);
	/* a NaN on a wet cell is a simulation failure naming the cell */
	w.st.u[20 * 200 + 30] = NAN;
	w.st.h[20 * 200 + 30] = 1;
	assert_int_equal(maps_build(&w.sc, &w.r, &w.st, 1, &m, &d), WB_ESIM);
	assert_non_null(strstr(d.v[d.n - 1].msg, "(30, 20)"));
	/* a size mismatch is an input error */
	w.st.u[20 * 200 + 30] = 0;
	w.st.nx = 199;
	assert_int_equal(maps_build(&w.sc, &w.r, &w.st, 1, &m, &d), WB_EINPUT);
	w.st.nx = 200;
	world_free(&w);
	wb_diags_release(&d);
}

static void test_downsample_rules(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	/* 3x2 map: block (0..1, 0..1) has one wet pixel; pixel column 2 has
	 * two wet pixels of different depth and velocity */
	float height[6] = { 5.0f, WB_DRY_HEIGHT, 2.0f,
			    WB_DRY_HEIGHT, WB_DRY_HEIGHT, 4.0f };
	float depth[6] = { 0.5f, 0, 1.0f, 0, 0, 3.0f };
	float u[6] = { 2.0f, 0, 1.0f, 0, 0, -1.0f };
	float v[6] = { 0, 0, 0.5f, 0, 0, 0.5f };
	uint8_t mat[6] = { 3, 0, 3, 0, 0, 7 };
	float dist[6] = { 0.5f, -0.5f, 0.5f, -1.5f, -0.5f, 1.5f };
	struct wb_maps s = { 3, 2, 1.0, height, u, v, mat, dist, NULL, depth };
	struct wb_maps p;
	assert_int_equal(maps_downsample(&s, 1, &p, &d), WB_OK);
	assert_int_equal(p.nx, 2);
	assert_int_equal(p.ny, 1);
	assert_float_equal(p.dx, 2.0, 0);
	/* dry children do not drag the height */
	assert_true(p.height[0] == 5.0f);
	assert_true(p.u[0] == 2.0f);
	assert_int_equal(p.material[0], 3);
	/* distances: mean in metres over children in extent */
	assert_float_equal(p.distance[0], (0.5 - 0.5 - 1.5 - 0.5) / 4, 1e-6);
	assert_float_equal(p.distance[1], (0.5 + 1.5) / 2, 1e-6);
	/* heights: plain mean; flow: depth-weighted sum(d u)/sum(d) */
	assert_float_equal(p.height[1], 3.0, 1e-6);
	assert_float_equal(p.u[1], (1.0 * 1 + 3.0 * -1) / 4.0, 1e-6);
	assert_float_equal(p.v[1], 0.5, 1e-6);
	/* material tie (one each) -> lowest id */
	assert_int_equal(p.material[1], 3);
	/* depth carries volume per area */
	assert_float_equal(p.depth[1], 4.0 / 4, 1e-6);
	maps_free(&p);
	wb_diags_release(&d);
}

/* ---- pages ------------------------------------------------------------- */

/* The page's pixel (a, b) for one layer as a comparable tuple. */
struct px {
	float h, u, v, dist, foam;
	int mat;
	int known_dist; /* distance known (not an EMPTY page) */
};

static struct px page_px(const struct wb_pageset *ps, const struct wb_page *p,
			 int a, int b)
{
	struct px r = { 0 };
	size_t k = (size_t)b * WB_PAGE_SIZE + a;
	if (p->state == WB_PAGE_EMPTY) {
		r.h = WB_DRY_HEIGHT;
		return r;
	}
	if (p->state == WB_PAGE_FLAT) {
		r.h = p->flat_height;
		r.mat = p->flat_material;
		r.dist = (float)ps->distance_max;
		r.known_dist = 1;
		return r;
	}
	r.h = p->height[k];
	r.u = p->flow[2 * k];
	r.v = p->flow[2 * k + 1];
	r.mat = p->material[k];
	r.dist = p->distance[k];
	r.foam = p->foam ? p->foam[k] : 0;
	r.known_dist = 1;
	return r;
}

/* Border pixels equal the neighbour's interior (exactly for DATA pages,
 * within the FLAT tolerances for FLAT ones, dry for EMPTY ones), and at
 * the world edge the page's own clamped pixel. Returns pixels checked. */
static long check_borders(const struct wb_pageset *ps)
{
	long checked = 0;
	for (int l = 0; l < ps->n_lods; l++) {
		const struct wb_lod_pages *lp = &ps->lods[l];
		int W = lp->px * WB_PAGE_INTERIOR, H = lp->py * WB_PAGE_INTERIOR;
		for (int py = 0; py < lp->py; py++)
			for (int px = 0; px < lp->px; px++) {
				const struct wb_page *p = &lp->pages[px + py * lp->px];
				if (p->state != WB_PAGE_DATA)
					continue;
				for (int b = 0; b < WB_PAGE_SIZE; b++)
					for (int a = 0; a < WB_PAGE_SIZE; a++) {
						if (a > 0 && a < WB_PAGE_SIZE - 1 &&
						    b > 0 && b < WB_PAGE_SIZE - 1)
							continue;
						/* global padded coordinate, clamped */
						int gx = px * 128 + a - 1, gy = py * 128 + b - 1;
						gx = gx < 0 ? 0 : gx >= W ? W - 1 : gx;
						gy = gy < 0 ? 0 : gy >= H ? H - 1 : gy;
						int qx = gx / 128, qy = gy / 128;
						const struct wb_page *q =
							&lp->pages[qx + qy * lp->px];
						struct px s = page_px(ps, p, a, b);
						struct px t = page_px(ps, q, gx - qx * 128 + 1,
								      gy - qy * 128 + 1);
						if (q->state == WB_PAGE_DATA) {
							if (memcmp(&s, &t, sizeof s))
								fail_msg("LOD %d page (%d,%d) border (%d,%d) != page (%d,%d)",
									 l, px, py, a, b, qx, qy);
						} else if (q->state == WB_PAGE_FLAT) {
							assert_true(fabsf(s.h - t.h) <= WB_FLAT_HEIGHT_TOL);
							assert_true(fabsf(s.u) <= WB_FLAT_FLOW_TOL);
							assert_int_equal(s.mat, t.mat);
							assert_true(s.dist == t.dist);
						} else {
							assert_true(s.h == WB_DRY_HEIGHT);
							assert_true(s.u == 0 && s.v == 0);
							assert_int_equal(s.mat, 0);
							assert_true(s.dist <= 0);
						}
						checked++;
					}
			}
	}
	return checked;
}

static void test_page_borders(void **state)
{
	(void)state;
	struct world w;
	struct wb_diags d;
	wb_diags_init(&d);
	scene_init(&w, 4, 6, 1);
	valley(&w, 700, 530, 1, 11);
	struct wb_maps m0;
	assert_int_equal(maps_build(&w.sc, &w.r, &w.st, 2, &m0, &d), WB_OK);
	struct wb_pageset ps;
	assert_int_equal(pages_build(&m0, 4, w.sc.output.layers, 6, w.r.origin,
				     2, &ps, &d), WB_OK);
	assert_int_equal(ps.n_lods, 4);
	long data = 0;
	for (int l = 0; l < 4; l++)
		for (int k = 0; k < ps.lods[l].px * ps.lods[l].py; k++)
			data += ps.lods[l].pages[k].state == WB_PAGE_DATA;
	assert_true(data >= 10);
	assert_true(check_borders(&ps) > data * 4 * 128);

	/* every stored pixel is the LOD image's pixel at the clamped place
	 * (dry past the extent) */
	struct wb_maps cur = m0, nxt;
	for (int l = 0; l < 4; l++) {
		if (l > 0) {
			assert_int_equal(maps_downsample(&cur, 1, &nxt, &d), WB_OK);
			if (l > 1)
				maps_free(&cur);
			cur = nxt;
		}
		const struct wb_lod_pages *lp = &ps.lods[l];
		assert_int_equal(lp->nx, cur.nx);
		assert_int_equal(lp->ny, cur.ny);
		assert_float_equal(lp->dx, ldexp(1.0, l), 0);
		for (int k = 0; k < lp->px * lp->py; k++) {
			const struct wb_page *p = &lp->pages[k];
			int px = k % lp->px, py = k / lp->px;
			if (p->state != WB_PAGE_DATA)
				continue;
			for (int b = 0; b < WB_PAGE_SIZE; b++)
				for (int a = 0; a < WB_PAGE_SIZE; a++) {
					int x = px * 128 + a - 1, y = py * 128 + b - 1;
					x = x < 0 ? 0 : x >= lp->px * 128 ? lp->px * 128 - 1 : x;
					y = y < 0 ? 0 : y >= lp->py * 128 ? lp->py * 128 - 1 : y;
					size_t o = (size_t)b * WB_PAGE_SIZE + a;
					if (x >= cur.nx || y >= cur.ny) {
						assert_true(p->height[o] == WB_DRY_HEIGHT);
						assert_true(p->distance[o] == -6.0f);
						continue;
					}
					size_t q = (size_t)y * cur.nx + x;
					assert_true(p->height[o] == cur.height[q]);
					assert_true(p->flow[2 * o] == cur.u[q]);
					assert_true(p->flow[2 * o + 1] == cur.v[q]);
					assert_int_equal(p->material[o], cur.material[q]);
					assert_true(p->distance[o] == cur.distance[q]);
					assert_true(p->foam[o] == cur.foam[q]);
				}
		}
	}
	if (ps.n_lods > 1)
		maps_free(&cur);
	maps_free(&m0);
	wb_pageset_free(&ps);
	world_free(&w);
	wb_diags_release(&d);
}

/* 4x4 pages of 128, all one still lake at 7 m over an uneven bed (no
 * shore anywhere: distance +dmax), with perturbations kept 32 px inside
 * four pages so that neighbouring borders do not see them: (1,1) a 1 cm
 * ripple, (3,1) a 5 mm/s drift, (1,3) a dry island, (3,3) another body's
 * material. Those four are DATA, every other page FLAT. */
static int in_centre(int i, int j, int px, int py)
{
	return i >= px * 128 + 32 && i < px * 128 + 96 && j >= py * 128 + 32 &&
	       j < py * 128 + 96;
}

static void test_flat_empty(void **state)
{
	(void)state;
	struct world w;
	struct wb_diags d;
	wb_diags_init(&d);
	const int nx = 512, ny = 512;
	scene_init(&w, 2, 4, 0);
	grid_alloc(&w, nx, ny, 1.0, 0);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)j * nx + i;
			float h = 1.0f + 0.5f * (float)((i + 3 * j) % 4);
			float z = 7.0f - h;
			w.r.body[k] = 2;
			if (in_centre(i, j, 1, 1))
				z += 0.01f * (float)((i + j) % 2);
			if (in_centre(i, j, 3, 1))
				w.st.v[k] = 0.005f;
			if (in_centre(i, j, 1, 3) && i % 128 >= 60 && i % 128 < 70 &&
			    j % 128 >= 60 && j % 128 < 70) {
				h = 0;
				z = 8;
			}
			if (in_centre(i, j, 3, 3))
				w.r.body[k] = 1;
			w.r.z[k] = z;
			w.st.h[k] = h;
		}
	struct wb_maps m0;
	assert_int_equal(maps_build(&w.sc, &w.r, &w.st, 1, &m0, &d), WB_OK);
	struct wb_pageset ps;
	assert_int_equal(pages_build(&m0, 2, w.sc.output.layers, 4, w.r.origin,
				     1, &ps, &d), WB_OK);
	const struct wb_lod_pages *l0 = &ps.lods[0];
	assert_int_equal(l0->px, 4);
	assert_int_equal(l0->py, 4);
	for (int py = 0; py < 4; py++)
		for (int px = 0; px < 4; px++) {
			const struct wb_page *p = &l0->pages[px + 4 * py];
			int data = (px & 1) && (py & 1);
			assert_true(p->has_water);
			if (!data) {
				assert_int_equal(p->state, WB_PAGE_FLAT);
				assert_true(p->flat_height == 7.0f);
				assert_int_equal(p->flat_material, 7);
				assert_null(p->height);
				assert_null(p->flow);
				continue;
			}
			assert_int_equal(p->state, WB_PAGE_DATA);
			assert_non_null(p->height);
			assert_non_null(p->flow);
		}
	assert_true(l0->pages[1 + 4].hmax - l0->pages[1 + 4].hmin > 0.009f);
	assert_int_equal(l0->pages[3 + 12].material[64 * 130 + 64], 3);
	assert_true(l0->pages[1 + 12].height[65 * 130 + 65] == WB_DRY_HEIGHT);
	assert_true(check_borders(&ps) > 0);
	maps_free(&m0);
	wb_pageset_free(&ps);

	/* now a world of lake only, with a dry rim one page wide around a
	 * 3x3-page lake: the centre page is 128 px from any shore -> FLAT;
	 * the others touch a shore within dmax -> DATA; rim pages are DATA
	 * without water: their pixels lie within dmax of the lake, so an
	 * EMPTY page (distance -dmax everywhere) would lose the land-side
	 * distance (format 2.0: EMPTY only beyond dmax from water). */
	world_free(&w);
	const int n2 = 5 * 128;
	scene_init(&w, 3, 4, 0);
	grid_alloc(&w, n2, n2, 1.0, 0);
	for (int j = 0; j < n2; j++)
		for (int i = 0; i < n2; i++) {
			size_t k = (size_t)j * n2 + i;
			int in = i >= 128 && i < 512 && j >= 128 && j < 512;
			w.st.h[k] = in ? 1.5f + 0.25f * (float)((i * 7 + j) % 3) : 0;
			w.r.z[k] = in ? 9.0f - w.st.h[k] : 10.0f;
			w.r.body[k] = 2;
		}
	assert_int_equal(maps_build(&w.sc, &w.r, &w.st, 2, &m0, &d), WB_OK);
	assert_int_equal(pages_build(&m0, 3, w.sc.output.layers, 4, w.r.origin,
				     2, &ps, &d), WB_OK);
	l0 = &ps.lods[0];
	for (int py = 0; py < 5; py++)
		for (int px = 0; px < 5; px++) {
			const struct wb_page *p = &l0->pages[px + py * 5];
			int lake = px >= 1 && px <= 3 && py >= 1 && py <= 3;
			if (!lake) {
				assert_int_equal(p->state, WB_PAGE_DATA);
				assert_false(p->has_water);
				float dmin = 0;
				for (int q = 0; q < WB_PAGE_PIXELS; q++)
					dmin = fmaxf(dmin, p->distance[q] + 4.0f);
				assert_true(dmin > 0); /* some pixel above -dmax */
			} else if (px == 2 && py == 2) {
				assert_int_equal(p->state, WB_PAGE_FLAT);
				assert_true(fabsf(p->flat_height - 9.0f) < 1e-5f);
				assert_int_equal(p->flat_material, 7);
				assert_null(p->height);
				assert_true(p->has_water);
				assert_true(p->hmin == 9.0f && p->hmax == 9.0f);
			} else {
				assert_int_equal(p->state, WB_PAGE_DATA);
			}
		}
	/* quadtree: LOD1 and LOD2 ranges cover their children */
	for (int l = 1; l < 3; l++) {
		const struct wb_lod_pages *up = &ps.lods[l], *dn = &ps.lods[l - 1];
		for (int k = 0; k < up->px * up->py; k++) {
			const struct wb_page *p = &up->pages[k];
			int px = k % up->px, py = k / up->px;
			for (int c = 0; c < 4; c++) {
				int cx = 2 * px + (c & 1), cy = 2 * py + (c >> 1);
				if (cx >= dn->px || cy >= dn->py)
					continue;
				const struct wb_page *q = &dn->pages[cx + cy * dn->px];
				if (!q->has_water)
					continue;
				assert_true(p->has_water);
				assert_true(p->hmin <= q->hmin && p->hmax >= q->hmax);
			}
		}
	}
	assert_true(check_borders(&ps) > 0);
	maps_free(&m0);
	wb_pageset_free(&ps);
	world_free(&w);
	wb_diags_release(&d);
}

/* ---- output ------------------------------------------------------------ */

static unsigned char *slurp(const char *path, size_t *n)
{
	unsigned char *b = NULL;
	struct wb_diags d;
	wb_diags_init(&d);
	if (wb_read_file(path, &b, n, &d) != WB_OK)
		b = NULL;
	wb_diags_release(&d);
	return b;
}

static void assert_same_file(const char *a, const char *b)
{
	size_t na, nb;
	unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
	assert_non_null(x);
	assert_non_null(y);
	assert_true(na == nb);
	assert_memory_equal(x, y, na);
	free(x);
	free(y);
}

static int is_png(const char *path, int w, int h, int bits)
{
	size_t n;
	unsigned char *b = slurp(path, &n);
	int ok = b && n > 33 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8) &&
		 (int)((b[16] << 24) | (b[17] << 16) | (b[18] << 8) | b[19]) == w &&
		 (int)((b[20] << 24) | (b[21] << 16) | (b[22] << 8) | b[23]) == h &&
		 b[24] == bits;
	free(b);
	return ok;
}

/* rm -r of a directory this test created */
static void remove_tree(const char *path)
{
	DIR *dir = opendir(path);
	if (dir) {
		struct dirent *e;
		while ((e = readdir(dir))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[1024];
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			remove_tree(sub);
		}
		closedir(dir);
		rmdir(path);
	} else {
		unlink(path);
	}
}

static void run_output(struct world *w, const char *dir, int threads,
		       int extras, struct wb_output_summary *sum)
{
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_solve_report rep = { 0 };
	rep.steps = 1234;
	rep.converged = 1;
	rep.residual = 3.25e-7;
	rep.vol_initial = 10;
	rep.vol_final = 1000.5;
	rep.vol_in = 1200;
	rep.vol_out = 209.5;
	rep.balance_error = 1e-9;
	unsigned char hm[32];
	for (int k = 0; k < 32; k++)
		hm[k] = (unsigned char)(255 - k);
	struct wb_output_opts o = { 0 };
	o.outdir = dir;
	o.threads = threads;
	o.preview = extras;
	o.pages_png = extras;
	o.solver_name = "swe";
	o.heightmap_sha256 = hm;
	enum wb_status s = wb_output_write(&w->sc, &w->r, &w->st, &rep, &o, sum, &d);
	if (s != WB_OK) {
		char buf[512];
		for (int k = 0; k < d.n; k++) {
			wb_diag_format(&d.v[k], buf, sizeof buf);
			print_error("%s\n", buf);
		}
	}
	assert_int_equal(s, WB_OK);
	wb_diags_release(&d);
}

static void test_output_deterministic(void **state)
{
	(void)state;
	struct world w;
	scene_init(&w, 3, 8, 1);
	valley(&w, 300, 260, 1, 5);
	char base[] = "tests/tmp/maps_outXXXXXX";
	mkdir("tests", 0777);
	mkdir("tests/tmp", 0777);
	assert_non_null(mkdtemp(base));
	char d1[512], d2[512], d3[512], f1[600], f2[600];
	snprintf(d1, sizeof d1, "%s/t1", base);
	snprintf(d2, sizeof d2, "%s/t2", base);
	snprintf(d3, sizeof d3, "%s/t1b", base);
	struct wb_output_summary s1, s2, s3;
	run_output(&w, d1, 1, 1, &s1);
	run_output(&w, d2, 2, 0, &s2);
	run_output(&w, d3, 1, 0, &s3);
	assert_true(s1.pages_data > 0);
	assert_true(s1.pages_empty > 0);
	assert_int_equal(s1.pages_data, s2.pages_data);
	assert_true(s1.pack_bytes == s2.pack_bytes && s1.pack_bytes > 0);
	assert_same_file(s1.pack_path, s2.pack_path);
	assert_same_file(s1.pack_path, s3.pack_path);
	assert_same_file(s1.manifest_path, s2.manifest_path);
	assert_same_file(s1.manifest_path, s3.manifest_path);
	/* writing again over an existing output gives the same bytes */
	run_output(&w, d2, 2, 0, &s2);
	assert_same_file(s1.pack_path, s2.pack_path);
	/* no temporaries left behind */
	snprintf(f1, sizeof f1, "%s/synthetic.wtp.tmp.%d", d2, (int)getpid());
	assert_int_not_equal(access(f1, F_OK), 0);

	/* the manifest parses and agrees with the summary */
	size_t n;
	char *txt = (char *)slurp(s1.manifest_path, &n);
	assert_non_null(txt);
	cJSON *j = cJSON_Parse(txt);
	assert_non_null(j);
	cJSON *pg = cJSON_GetObjectItem(j, "pages");
	assert_int_equal((long)cJSON_GetNumberValue(cJSON_GetObjectItem(pg, "data")),
			 s1.pages_data);
	assert_int_equal((long)cJSON_GetNumberValue(cJSON_GetObjectItem(pg, "flat")),
			 s1.pages_flat);
	assert_int_equal((long)cJSON_GetNumberValue(cJSON_GetObjectItem(pg, "empty")),
			 s1.pages_empty);
	cJSON *pk = cJSON_GetObjectItem(j, "pack");
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(pk, "file")),
			    "synthetic.wtp");
	assert_true((long long)cJSON_GetNumberValue(cJSON_GetObjectItem(pk, "bytes")) ==
		    s1.pack_bytes);
	/* the pack hash is the hash of the file */
	size_t np;
	unsigned char *pack = slurp(s1.pack_path, &np), hash[32];
	char hex[65];
	assert_non_null(pack);
	wb_sha256(pack, np, hash);
	wb_hex(hash, 32, hex);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(pk, "sha256")), hex);
	free(pack);
	cJSON *lods = cJSON_GetObjectItem(j, "lods");
	assert_int_equal(cJSON_GetArraySize(lods), 3);
	cJSON *falls = cJSON_GetObjectItem(j, "waterfalls");
	assert_int_equal(cJSON_GetArraySize(falls), 1);
	assert_float_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(
		cJSON_GetArrayItem(falls, 0), "drop_m")), 4.25, 1e-9);
	cJSON *sol = cJSON_GetObjectItem(j, "solver");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sol, "converged")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "layers")), 5);
	assert_null(strstr(txt, base)); /* no paths of this machine */
	cJSON_Delete(j);
	free(txt);

	/* previews and page PNGs */
	const char *names[] = { "height", "flow", "material", "distance", "foam" };
	for (int k = 0; k < 5; k++) {
		snprintf(f2, sizeof f2, "%s/preview/%s.png", d1, names[k]);
		/* map enlarged by whole pixels to about 1024 (1024 / 300 =
		   3), framed by title and legend */
		int pw, ph;
		preview_canvas_size(300, 260, &pw, &ph);
		assert_true(pw >= 900 && ph >= 780);
		assert_true(is_png(f2, pw, ph, 8));
	}
	int found = 0;
	for (int py = 0; py < 3 && !found; py++)
		for (int px = 0; px < 3 && !found; px++) {
			snprintf(f2, sizeof f2, "%s/pages/lod0/%d_%d_height.png", d1, px, py);
			if (access(f2, F_OK) == 0) {
				assert_true(is_png(f2, 130, 130, 16));
				snprintf(f2, sizeof f2, "%s/pages/lod0/%d_%d_material.png", d1, px, py);
				assert_true(is_png(f2, 130, 130, 8));
				found = 1;
			}
		}
	assert_true(found);
	world_free(&w);
	remove_tree(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distance_exact),
		cmocka_unit_test(test_distance_uniform),
		cmocka_unit_test(test_material_rule),
		cmocka_unit_test(test_lod0_values),
		cmocka_unit_test(test_downsample_rules),
		cmocka_unit_test(test_page_borders),
		cmocka_unit_test(test_flat_empty),
		cmocka_unit_test(test_output_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
