/*
 * test_pack_seams.c - the three data rules of format 2.0, through the real
 * pipeline (LOD0 maps -> maps_downsample pyramid -> pages_build ->
 * pack_write -> include/wtp.h):
 *
 *   seams     every LOD pixel that two or more pages store (borders, FLAT
 *             and EMPTY expansions included) decodes to the same height
 *             bits and the same distance bits in all of them;
 *   distance  every stored distance texel (EMPTY and FLAT expansions
 *             included) is f16(the LOD map's distance): no land-side
 *             distance is lost to EMPTY pages, and LOD1 agrees with the
 *             mean of its decoded LOD0 children within f16 rounding;
 *   bounds    every decoded wet interior height of a page lies inside the
 *             quadtree range of its node and of every ancestor.
 *
 * The world (dx 1 m, distance_max 20 m, 700 x 700 px, 3 LODs): a still lake
 * (x 60..459, y 60..499)
 * at 10 m (+-0.2 mm hash noise: FLAT pages inside), a river leaving it
 * eastward falling 0.05 m/m with 1 cm noise and a 30 m waterfall (pages of
 * very different height steps side by side), dry land far from both (EMPTY
 * pages) and near them (dry DATA pages that carry the land-side distance).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "maps.h"
#include "pack.h"
#include "util.h"
#include "wtp.h"

#define TMP "tests/tmp"
#define N 700
#define DMAX 20.0
#define NLODS 3
#define LAYERS ((1u << WB_LAYER_HEIGHT) | (1u << WB_LAYER_FLOW) | \
		(1u << WB_LAYER_MATERIAL) | (1u << WB_LAYER_DISTANCE))

static float hash01(unsigned x, unsigned y)
{
	uint32_t h = x * 0x9E3779B1u ^ (y + 0x7F4A7C15u) * 0x85EBCA77u;
	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 12;
	return (float)(h & 0xFFFFFF) / 16777216.0f - 0.5f;
}

struct world {
	struct wb_maps lod[NLODS];
	struct wb_pageset ps;
	unsigned char *pack;
	size_t len;
	wtp_pack p;
};

static void build_lod0(struct wb_maps *m)
{
	size_t n = (size_t)N * N;
	memset(m, 0, sizeof *m);
	m->nx = m->ny = N;
	m->dx = 1.0;
	m->height = malloc(n * sizeof(float));
	m->u = calloc(n, sizeof(float));
	m->v = calloc(n, sizeof(float));
	m->material = calloc(n, 1);
	m->distance = malloc(n * sizeof(float));
	m->depth = calloc(n, sizeof(float));
	uint8_t *wet = calloc(n, 1);
	assert_true(m->height && m->u && m->v && m->material && m->distance &&
		    m->depth && wet);
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			size_t k = (size_t)j * N + i;
			float h = WB_DRY_HEIGHT;
			if (i >= 60 && i < 460 && j >= 60 && j < 500) {
				h = 10.0f + 0.0004f * hash01((unsigned)i, (unsigned)j);
				m->material[k] = 1;
			} else if (i >= 460 && fabs(j - 240.0) < 25) {
				h = 10.0f - 0.05f * (float)(i - 460) +
				    0.01f * hash01((unsigned)i, (unsigned)j);
				if (i >= 600)
					h -= 30.0f;
				m->material[k] = 2;
				m->u[k] = 1.0f;
			}
			m->height[k] = h;
			if (h != WB_DRY_HEIGHT) {
				wet[k] = 1;
				m->depth[k] = 1.0f;
			}
		}
	assert_int_equal(maps_signed_distance(wet, N, N, 1.0, DMAX, 1,
					      m->distance), 0);
	free(wet);
}

static void world_build(struct world *w, const char *path)
{
	struct wb_diags d;
	wb_diags_init(&d);
	memset(w, 0, sizeof *w);
	build_lod0(&w->lod[0]);
	for (int k = 1; k < NLODS; k++)
		assert_int_equal(maps_downsample(&w->lod[k - 1], 1, &w->lod[k], &d),
				 WB_OK);
	double origin[2] = { 500.0, -250.0 };
	assert_int_equal(pages_build(&w->lod[0], NLODS, LAYERS, DMAX, origin, 1,
				     &w->ps, &d),
			 WB_OK);
	struct wb_material mats[2] = {
		{ 1, "lake", WB_MAT_LAKE, 0.01, 0.5, 0.2 },
		{ 2, "river", WB_MAT_RIVER, 0.1, 1.5, 2.0 },
	};
	struct wb_pack_meta meta;
	memset(&meta, 0, sizeof meta);
	meta.scene_name = "seams";
	meta.solver = "lbm";
	meta.materials = mats;
	meta.n_materials = 2;
	mkdir(TMP, 0777);
	enum wb_status s = pack_write(path, &w->ps, &meta, NULL, &d);
	if (s != WB_OK && d.n)
		print_error("%s\n", d.v[0].msg);
	assert_int_equal(s, WB_OK);
	assert_int_equal(wb_read_file(path, &w->pack, &w->len, &d), WB_OK);
	wb_diags_release(&d);
	assert_int_equal(wtp_open(&w->p, w->pack, w->len, 0, NULL), WTP_OK);
	unsigned char *raw = malloc(w->p.page_raw_size),
		      *work = malloc(w->p.page_raw_size);
	wtp_error err;
	int rc = wtp_verify(&w->p, raw, work, &err);
	if (rc != WTP_OK)
		print_error("verify: %s\n", err.msg);
	assert_int_equal(rc, WTP_OK);
	free(raw);
	free(work);
}

static void world_free(struct world *w)
{
	for (int k = 0; k < NLODS; k++)
		maps_free(&w->lod[k]);
	wb_pageset_free(&w->ps);
	free(w->pack);
}

/* Decode (or expand) page (x, y) of LOD k: heights as floats with the
 * base added, distances as raw f16 bits. */
static void page_get(const wtp_pack *p, uint32_t k, uint32_t x, uint32_t y,
		     float *h, uint16_t *dist, wtp_vat_entry *e)
{
	unsigned char *raw = malloc(p->page_raw_size),
		      *work = malloc(p->page_raw_size);
	assert_int_equal(wtp_vat(p, k, x, y, e, NULL), WTP_OK);
	wtp_plane_dst dst[WTP_LAYER_COUNT];
	wtp_layer_dst(p, raw, dst);
	if (e->state == WTP_DATA)
		assert_int_equal(wtp_page_read(p, e->page, NULL, 0, raw, work, NULL),
				 WTP_OK);
	else
		assert_int_equal(wtp_page_expand(p, e, dst, NULL), WTP_OK);
	wtp_layer lh, ld;
	assert_int_equal(wtp_layer_get(p, 0, &lh), WTP_OK);
	assert_int_equal(wtp_layer_get(p, (uint32_t)wtp_layer_find(p, WTP_LAYER_DISTANCE),
				       &ld),
			 WTP_OK);
	for (uint32_t i = 0; i < p->page_pixels; i++) {
		h[i] = wtp_pixel(&lh, raw, i, 0, e->height);
		const unsigned char *b = raw + ld.plane_offset + 2 * i;
		dist[i] = (uint16_t)(b[0] | b[1] << 8);
	}
	free(raw);
	free(work);
}

static void test_seams_exact(void **state)
{
	(void)state;
	struct world w;
	world_build(&w, TMP "/seams.wtp");
	float *h = malloc(130 * 130 * sizeof *h);
	uint16_t *dist = malloc(130 * 130 * sizeof *dist);
	long shared = 0, bad_h = 0, bad_d = 0;
	int states[3] = { 0, 0, 0 };
	int8_t smin = 127, smax = -128;
	for (uint32_t k = 0; k < w.p.n_lods; k++) {
		wtp_lod L;
		wtp_lod_get(&w.p, k, &L);
		size_t W = (size_t)L.px * 128, H = (size_t)L.py * 128;
		uint32_t *hb = calloc(W * H, 4);
		uint16_t *db = calloc(W * H, 2);
		uint8_t *seen = calloc(W * H, 1);
		for (uint32_t y = 0; y < L.py; y++)
			for (uint32_t x = 0; x < L.px; x++) {
				wtp_vat_entry e;
				page_get(&w.p, k, x, y, h, dist, &e);
				if (k == 0)
					states[e.state]++;
				if (e.state == WTP_DATA) {
					smin = e.step_log2 < smin ? e.step_log2 : smin;
					smax = e.step_log2 > smax ? e.step_log2 : smax;
				}
				for (int b = 0; b < 130; b++)
					for (int a = 0; a < 130; a++) {
						long X = (long)x * 128 + a - 1,
						     Y = (long)y * 128 + b - 1;
						X = X < 0 ? 0 : X >= (long)W ? (long)W - 1 : X;
						Y = Y < 0 ? 0 : Y >= (long)H ? (long)H - 1 : Y;
						size_t g = (size_t)Y * W + (size_t)X;
						uint32_t bits;
						memcpy(&bits, &h[a + 130 * b], 4);
						if (!seen[g]) {
							seen[g] = 1;
							hb[g] = bits;
							db[g] = dist[a + 130 * b];
							continue;
						}
						shared++;
						bad_h += hb[g] != bits;
						bad_d += db[g] != dist[a + 130 * b];
					}
			}
		free(hb);
		free(db);
		free(seen);
	}
	print_message("seams: %ld shared texels, %ld height and %ld distance "
		      "mismatches; LOD0 %d EMPTY %d FLAT %d DATA; DATA steps "
		      "2^%d..2^%d m\n", shared, bad_h, bad_d, states[0], states[1],
		      states[2], smin, smax);
	/* the world exercises what it should */
	assert_true(states[WTP_EMPTY] > 0 && states[WTP_FLAT] > 0 &&
		    states[WTP_DATA] > 0);
	assert_true(smax - smin >= 4); /* waterfall pages next to gentle ones */
	assert_true(shared > 20000);
	assert_int_equal(bad_h, 0);
	assert_int_equal(bad_d, 0);
	free(h);
	free(dist);
	world_free(&w);
}

static void test_distance_kept(void **state)
{
	(void)state;
	struct world w;
	world_build(&w, TMP "/seams_dist.wtp");
	float *h = malloc(130 * 130 * sizeof *h);
	uint16_t *dist = malloc(130 * 130 * sizeof *dist);
	long bad = 0, checked = 0, dry_data = 0;
	float *dec[2] = { NULL, NULL }; /* decoded interior distances, LOD0/1 */
	for (uint32_t k = 0; k < w.p.n_lods; k++) {
		const struct wb_maps *m = &w.lod[k];
		wtp_lod L;
		wtp_lod_get(&w.p, k, &L);
		if (k < 2)
			dec[k] = malloc((size_t)m->nx * m->ny * sizeof(float));
		for (uint32_t y = 0; y < L.py; y++)
			for (uint32_t x = 0; x < L.px; x++) {
				wtp_vat_entry e;
				page_get(&w.p, k, x, y, h, dist, &e);
				dry_data += k == 0 && e.state == WTP_DATA &&
					    !e.has_water;
				for (int b = 0; b < 130; b++)
					for (int a = 0; a < 130; a++) {
						long X = (long)x * 128 + a - 1,
						     Y = (long)y * 128 + b - 1;
						long mx = (long)L.px * 128 - 1,
						     my = (long)L.py * 128 - 1;
						X = X < 0 ? 0 : X > mx ? mx : X;
						Y = Y < 0 ? 0 : Y > my ? my : Y;
						float want = (float)-DMAX;
						if (X < m->nx && Y < m->ny)
							want = m->distance[Y * m->nx + X];
						uint16_t got = dist[a + 130 * b];
						checked++;
						bad += got != pack_half(want);
						if (k < 2 && a >= 1 && a <= 128 &&
						    b >= 1 && b <= 128 && X < m->nx &&
						    Y < m->ny)
							dec[k][Y * m->nx + X] =
								wtp_half_to_float(got);
					}
			}
	}
	/* LOD1 against the mean of its decoded LOD0 children: both f16 (step
	   2^-6 m between 16 and 32 m), the mean exact in double */
	long bad_lod = 0;
	double worst = 0;
	const struct wb_maps *m0 = &w.lod[0], *m1 = &w.lod[1];
	for (int j = 0; j < m1->ny; j++)
		for (int i = 0; i < m1->nx; i++) {
			double s = 0;
			int nc = 0;
			for (int c = 0; c < 4; c++) {
				int x = 2 * i + c % 2, y = 2 * j + c / 2;
				if (x < m0->nx && y < m0->ny) {
					s += dec[0][y * m0->nx + x];
					nc++;
				}
			}
			double e = fabs(dec[1][j * m1->nx + i] - s / nc);
			worst = e > worst ? e : worst;
			bad_lod += e > 1.0 / 64;
		}
	print_message("distance: %ld texels checked, %ld differ from the LOD map; "
		      "%ld dry DATA pages at LOD0; LOD1 vs LOD0 children: %ld over "
		      "1/64 m (worst %.4g m)\n", checked, bad, dry_data, bad_lod,
		      worst);
	assert_true(dry_data > 0); /* land within distance_max kept as DATA */
	assert_int_equal(bad, 0);
	assert_int_equal(bad_lod, 0);
	free(dec[0]);
	free(dec[1]);
	free(h);
	free(dist);
	world_free(&w);
}

static void test_bounds_conservative(void **state)
{
	(void)state;
	struct world w;
	world_build(&w, TMP "/seams_qt.wtp");
	float *h = malloc(130 * 130 * sizeof *h);
	uint16_t *dist = malloc(130 * 130 * sizeof *dist);
	long outside = 0, pages = 0;
	double worst = 0;
	for (uint32_t k = 0; k < w.p.n_lods; k++) {
		wtp_lod L;
		wtp_lod_get(&w.p, k, &L);
		for (uint32_t y = 0; y < L.py; y++)
			for (uint32_t x = 0; x < L.px; x++) {
				wtp_vat_entry e;
				page_get(&w.p, k, x, y, h, dist, &e);
				float lo = INFINITY, hi = -INFINITY;
				for (int b = 1; b <= 128; b++)
					for (int a = 1; a <= 128; a++) {
						float v = h[a + 130 * b];
						if (v == WTP_DRY_HEIGHT)
							continue;
						lo = fminf(lo, v);
						hi = fmaxf(hi, v);
					}
				if (!(lo <= hi))
					continue;
				pages++;
				for (uint32_t lv = k; lv < w.p.n_qt_levels; lv++) {
					wtp_qt_node nd;
					uint32_t s = lv - k;
					assert_int_equal(wtp_qt_node_get(&w.p, lv, x >> s,
									 y >> s, &nd, NULL),
							 WTP_OK);
					assert_true(nd.has_water);
					if (lo < nd.hmin || hi > nd.hmax) {
						outside++;
						worst = fmax(worst, fmax((double)nd.hmin - lo,
									 (double)hi - nd.hmax));
					}
				}
			}
	}
	print_message("bounds: %ld wet pages, %ld node ranges miss a decoded "
		      "height (worst %.3g m)\n", pages, outside, worst);
	assert_true(pages > 10);
	assert_int_equal(outside, 0);
	free(h);
	free(dist);
	world_free(&w);
}

/* Tables may not overlap (section 2): the metadata moved onto LOD0's VAT
 * (CRC recomputed) is refused at open. */
static void test_tables_disjoint(void **state)
{
	(void)state;
	struct world w;
	world_build(&w, TMP "/seams_overlap.wtp");
	wtp_lod l0;
	wtp_lod_get(&w.p, 0, &l0);
	unsigned char *c = malloc(w.len);
	memcpy(c, w.pack, w.len);
	uint32_t off = (uint32_t)l0.vat_offset;
	for (int i = 0; i < 4; i++)
		c[104 + i] = (unsigned char)(off >> (8 * i));
	memset(c + 28, 0, 4);
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), c, w.p.tables_size);
	for (int i = 0; i < 4; i++)
		c[28 + i] = (unsigned char)(crc >> (8 * i));
	wtp_pack p;
	wtp_error err;
	assert_int_equal(wtp_open(&p, c, w.len, 0, &err), WTP_ECORRUPT);
	assert_int_equal(err.code, WTP_ECORRUPT);
	assert_non_null(strstr(err.msg, "tables overlap"));
	free(c);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seams_exact),
		cmocka_unit_test(test_distance_kept),
		cmocka_unit_test(test_bounds_conservative),
		cmocka_unit_test(test_tables_disjoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
