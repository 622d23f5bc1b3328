/*
 * test_pack.c - the tile pack: writer (src/pack.c) against the reader
 * (include/wtp.h) and docs/wtp-format.md, and the runtime allocator
 * (include/wtp_alloc.h).
 *
 * Pagesets are synthesised at test time (tests/pack_synth.h). Tolerances:
 * f16 round-to-nearest-even has a relative error <= 2^-11 (plus 2^-25
 * absolute near zero); heights relative to the page base add the f32
 * rounding of base + offset (<= 2^-24 relative). Packs go to tests/tmp/.
 *
 * With WTP_CORPUS_DIR set, test_corpus also writes the fuzz corpus (small
 * valid packs and corrupted variants) into that directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "pack.h"
#include "util.h"
#include "wtp.h"
#include "wtp_alloc.h"
#include "pack_synth.h"

#define ALL_LAYERS ((1u << WB_LAYER_COUNT) - 1)
#define TMP "tests/tmp"

static void mk_tmp(void)
{
	mkdir(TMP, 0777);
}

static void synth2(struct wb_pageset *ps, int nx, int ny, int lods,
		   unsigned layers, double noise, int no_pond)
{
	struct synth_opts o = { nx, ny, lods, layers, 1.0, noise, no_pond };
	assert_int_equal(synth_pageset(&o, ps), 0);
}

static void synth(struct wb_pageset *ps, int nx, int ny, int lods,
		  unsigned layers, double noise)
{
	struct synth_opts o = { nx, ny, lods, layers, 1.0, noise, 0 };
	assert_int_equal(synth_pageset(&o, ps), 0);
}

static struct wb_material mats[3] = {
	{ 1, "pond", WB_MAT_LAKE, 0.01, 0.5, 0.2 },
	{ 2, "lake", WB_MAT_LAKE, 0.05, 0.3, 0.5 },
	{ 3, "river", WB_MAT_RIVER, 0.1, 1.5, 2.0 },
};

static struct wb_pack_meta test_meta(unsigned align)
{
	struct wb_pack_meta m;
	memset(&m, 0, sizeof m);
	m.scene_name = "synthetic";
	m.tool_version = WB_VERSION_STRING;
	m.solver = "lbm";
	m.materials = mats;
	m.n_materials = 3;
	for (int i = 0; i < 32; i++) {
		m.scene_sha256[i] = (unsigned char)i;
		m.heightmap_sha256[i] = (unsigned char)(255 - i);
	}
	m.alignment = align;
	return m;
}

static void write_pack(const char *path, const struct wb_pageset *ps,
		       unsigned align, struct wb_pack_stats *st)
{
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_pack_meta m = test_meta(align);
	enum wb_status s = pack_write(path, ps, &m, st, &d);
	if (s != WB_OK && d.n)
		print_error("%s\n", d.v[0].msg);
	assert_int_equal(s, WB_OK);
	wb_diags_release(&d);
}

static unsigned char *load(const char *path, size_t *len)
{
	struct wb_diags d;
	wb_diags_init(&d);
	unsigned char *buf = NULL;
	assert_int_equal(wb_read_file(path, &buf, len, &d), WB_OK);
	wb_diags_release(&d);
	return buf;
}

/* Open and verify; returns the first failing code (WTP_OK when sound). */
static int open_verify(const unsigned char *b, size_t n)
{
	wtp_pack p;
	int rc = wtp_open(&p, b, n, 0, NULL);
	if (rc != WTP_OK)
		return rc;
	unsigned char *raw = malloc(p.page_raw_size), *work = malloc(p.page_raw_size);
	assert_non_null(raw);
	assert_non_null(work);
	rc = wtp_verify(&p, raw, work, NULL);
	free(raw);
	free(work);
	return rc;
}

/* ZLIB_DELTA_SPLIT's filters written from the spec with integer values
 * (the writer works byte by byte with borrows). */
static void filter_page(const wtp_pack *p, const unsigned char *raw,
			unsigned char *out)
{
	for (uint32_t li = 0; li < p->n_layers; li++) {
		wtp_layer l;
		wtp_layer_get(p, li, &l);
		uint32_t c = l.components, cb = l.component_bytes;
		uint32_t n = l.plane_size / cb, row = 130 * c;
		const unsigned char *s = raw + l.plane_offset;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t v = s[k * cb] | (cb > 1 ? (uint32_t)s[k * cb + 1] << 8 : 0);
			uint32_t u = 0;
			if (k % row >= c)
				u = s[(k - c) * cb] | (cb > 1 ? (uint32_t)s[(k - c) * cb + 1] << 8 : 0);
			uint32_t d = (v - u) & (cb > 1 ? 0xffffu : 0xffu);
			for (uint32_t j = 0; j < cb; j++)
				out[l.plane_offset + j * n + k] = (unsigned char)(d >> (8 * j));
		}
	}
}

/* ---- half floats ----------------------------------------------------- */

static void test_half_rne(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 0x7c00; h++) {
		float f = wtp_half_to_float((uint16_t)h);
		assert_int_equal(pack_half(f), h);
		assert_int_equal(pack_half(-f), h | 0x8000u);
		float g = h < 0x7bff ? wtp_half_to_float((uint16_t)(h + 1))
				     : 65536.0f;
		uint32_t hn = h + 1; /* 0x7c00 = infinity after 65504 */
		float mid = (f + g) * 0.5f; /* exact: 12 significant bits */
		assert_true(mid > f && mid < g);
		assert_int_equal(pack_half(mid), (h & 1u) ? hn : h);
		assert_int_equal(pack_half(nextafterf(mid, 0.0f)), h);
		assert_int_equal(pack_half(nextafterf(mid, INFINITY)), hn);
	}
	assert_int_equal(pack_half(INFINITY), 0x7c00);
	assert_int_equal(pack_half(-1e30f), 0xfc00);
	uint16_t nan = pack_half(NAN);
	assert_true((nan & 0x7c00u) == 0x7c00u && (nan & 0x3ffu) != 0);
	assert_int_equal(pack_half(WB_DRY_HEIGHT), WTP_DRY_HALF);
	assert_true(wtp_half_to_float(WTP_DRY_HALF) == WB_DRY_HEIGHT);
	assert_true(wtp_half_to_float(1) == ldexpf(1.0f, -24));
}

/* ---- round trip -------------------------------------------------------- */

static double half_tol(double v)
{
	return fabs(v) * ldexp(1, -11) + ldexp(1, -25);
}

static void check_page_values(const wtp_pack *p, const struct wb_pageset *ps,
			      const struct wb_page *pg, const unsigned char *raw,
			      float base, double step, double lod_step)
{
	wtp_layer l[WB_LAYER_COUNT];
	int idx[WB_LAYER_COUNT];
	for (int id = 0; id < WB_LAYER_COUNT; id++) {
		idx[id] = wtp_layer_find(p, (uint32_t)id);
		assert_int_equal(idx[id] >= 0, (ps->layers >> id) & 1u);
		if (idx[id] >= 0)
			assert_int_equal(wtp_layer_get(p, (uint32_t)idx[id], &l[id]),
					 WTP_OK);
	}
	float lo = INFINITY, hi = -INFINITY;
	for (int i = 0; i < WB_PAGE_PIXELS; i++)
		if (pg->height[i] != WB_DRY_HEIGHT) {
			lo = fminf(lo, pg->height[i]);
			hi = fmaxf(hi, pg->height[i]);
		}
	double range = lo <= hi ? (double)hi - lo : 0;
	for (uint32_t i = 0; i < WB_PAGE_PIXELS; i++) {
		float h = wtp_pixel(&l[0], raw, i, 0, base);
		if (pg->height[i] == WB_DRY_HEIGHT) {
			assert_true(h == WB_DRY_HEIGHT);
		} else {
			/* on the LOD's grid: the nearest multiple of the
			   step (section 4), exactly */
			(void)range;
			assert_true(fabs(h - pg->height[i]) <= lod_step / 2);
			assert_true(fmod((double)h, step) == 0);
		}
		if (idx[1] >= 0)
			for (uint32_t c = 0; c < 2; c++) {
				float f = pg->flow[2 * i + c];
				assert_true(fabs(wtp_pixel(&l[1], raw, i, c, 0) - f) <=
					    half_tol(f));
			}
		if (idx[2] >= 0)
			assert_true(wtp_pixel(&l[2], raw, i, 0, 0) ==
				    (float)pg->material[i]);
		if (idx[3] >= 0)
			assert_true(fabs(wtp_pixel(&l[3], raw, i, 0, 0) -
					 pg->distance[i]) <=
				    half_tol(pg->distance[i]));
		if (idx[4] >= 0)
			assert_true(fabs(wtp_pixel(&l[4], raw, i, 0, 0) -
					 pg->foam[i]) <= 0.5 / 255 + 1e-6);
	}
}

static void test_roundtrip(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 1000, 700, 4, ALL_LAYERS, 0.3);
	struct wb_pack_stats st;
	write_pack(TMP "/pack_rt.wtp", &ps, 0, &st);
	size_t n;
	unsigned char *b = load(TMP "/pack_rt.wtp", &n);
	assert_int_equal((long long)n, st.file_bytes);
	assert_int_equal(open_verify(b, n), WTP_OK);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	assert_true(p.origin[0] == ps.origin[0] && p.origin[1] == ps.origin[1]);
	assert_true(p.dx0 == ps.dx0 && p.distance_max == ps.distance_max);
	assert_int_equal(p.n_lods, 4);
	assert_int_equal(p.n_layers, 5);
	assert_int_equal(p.alignment, 4096);
	assert_int_equal(p.page_interior, 128);
	assert_int_equal(p.page_border, 1);
	assert_int_equal(p.page_raw_size, pack_page_raw_size(ALL_LAYERS));
	static const uint8_t fmts[5] = { WTP_FMT_R16F, WTP_FMT_RG16F,
					 WTP_FMT_R8_UINT, WTP_FMT_R16F,
					 WTP_FMT_R8_UNORM };
	for (uint32_t i = 0; i < 5; i++) {
		wtp_layer l;
		assert_int_equal(wtp_layer_get(&p, i, &l), WTP_OK);
		assert_int_equal(l.id, i);
		assert_int_equal(l.format, fmts[i]);
	}
	unsigned char *raw = malloc(p.page_raw_size),
		      *work = malloc(p.page_raw_size),
		      *ref = malloc(p.page_raw_size);
	long nd = 0, nf = 0, ne = 0;
	uint64_t prev_off = 0;
	for (uint32_t k = 0; k < p.n_lods; k++) {
		const struct wb_lod_pages *L = &ps.lods[k];
		wtp_lod lod;
		assert_int_equal(wtp_lod_get(&p, k, &lod), WTP_OK);
		assert_int_equal(lod.nx, L->nx);
		assert_int_equal(lod.ny, L->ny);
		assert_int_equal(lod.px, L->px);
		assert_int_equal(lod.py, L->py);
		assert_true(lod.dx == ldexp(1.0, (int)k));
		for (int y = 0; y < L->py; y++)
			for (int x = 0; x < L->px; x++) {
				const struct wb_page *pg = &L->pages[x + y * L->px];
				wtp_vat_entry e;
				assert_int_equal(wtp_vat(&p, k, (uint32_t)x, (uint32_t)y, &e, NULL), WTP_OK);
				assert_int_equal(e.state, (int)pg->state);
				if (pg->state == WB_PAGE_EMPTY) {
					ne++;
					assert_true(e.height == WB_DRY_HEIGHT);
					continue;
				}
				assert_int_equal(e.has_water, pg->has_water);
				if (pg->state == WB_PAGE_FLAT) {
					nf++;
					assert_memory_equal(&e.height, &pg->flat_height, 4);
					assert_int_equal(e.material, pg->flat_material);
					continue;
				}
				nd++;
				float base;
				struct wb_diags d;
				wb_diags_init(&d);
				assert_int_equal(pack_encode_page(&ps, (int)k, x + (long)y * L->px, ref, &base, &d), WB_OK);
				wb_diags_release(&d);
				assert_memory_equal(&e.height, &base, 4);
				assert_int_equal(wtp_page_read(&p, e.page, NULL, 0, raw, work, NULL), WTP_OK);
				assert_memory_equal(raw, ref, p.page_raw_size);
				check_page_values(&p, &ps, pg, raw, e.height, ldexp(1.0, e.step_log2),
						  lod.height_step);
			}
	}
	/* directory: aligned, increasing; coarse LODs first */
	for (uint32_t i = 0; i < p.n_pages; i++) {
		wtp_page_info_t pi;
		assert_int_equal(wtp_page_info(&p, i, &pi, NULL), WTP_OK);
		assert_int_equal(pi.offset % 4096, 0);
		assert_true(pi.offset > prev_off);
		prev_off = pi.offset;
		assert_true(pi.codec == WTP_CODEC_ZLIB_DELTA_SPLIT);
		assert_true(pi.stored_size < pi.raw_size);
	}
	wtp_lod top;
	wtp_lod_get(&p, 3, &top);
	assert_int_equal(top.first_page, 0);
	assert_int_equal(st.pages_data, nd);
	assert_int_equal(st.pages_flat, nf);
	assert_int_equal(st.pages_empty, ne);
	assert_int_equal(st.pages_unique, p.n_pages);
	assert_true(nd > 10 && nf > 0 && ne > 0);
	/* the periodic lake gives equal pages: stored once */
	assert_true(st.pages_unique < st.pages_data);
	free(raw);
	free(work);
	free(ref);
	free(b);
	wb_pageset_free(&ps);
}

/* Pages sharing a directory entry encode to equal bytes; Morton order
 * within a LOD. */
static void test_dedup_order(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 1024, 512, 2, ALL_LAYERS, 0.0);
	struct wb_pack_stats st;
	write_pack(TMP "/pack_dd.wtp", &ps, 0, &st);
	size_t n;
	unsigned char *b = load(TMP "/pack_dd.wtp", &n);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	size_t rs = p.page_raw_size;
	unsigned char *first = calloc(p.n_pages, rs), *cur = malloc(rs);
	char *seen = calloc(p.n_pages, 1);
	int shared = 0;
	for (uint32_t k = 0; k < p.n_lods; k++) {
		const struct wb_lod_pages *L = &ps.lods[k];
		for (int i = 0; i < L->px * L->py; i++) {
			wtp_vat_entry e;
			wtp_vat(&p, k, (uint32_t)(i % L->px), (uint32_t)(i / L->px), &e, NULL);
			if (e.state != WTP_DATA)
				continue;
			float base;
			assert_int_equal(pack_encode_page(&ps, (int)k, i, cur, &base, NULL), WB_OK);
			if (seen[e.page]) {
				shared++;
				assert_memory_equal(first + e.page * rs, cur, rs);
			} else {
				seen[e.page] = 1;
				memcpy(first + e.page * rs, cur, rs);
			}
		}
	}
	assert_true(shared > 0);
	/* distinct entries are distinct pages */
	for (uint32_t i = 0; i < p.n_pages; i++)
		for (uint32_t j = i + 1; j < p.n_pages; j++)
			assert_true(memcmp(first + i * rs, first + j * rs, rs) != 0);
	/* LOD0 pages introduced in Morton order: walk the slots by key */
	wtp_lod l0;
	wtp_lod_get(&p, 0, &l0);
	uint32_t next = l0.first_page;
	for (uint32_t key = 0; key < 64 * 64; key++) {
		uint32_t x = 0, y = 0;
		for (int bit = 0; bit < 6; bit++) {
			x |= ((key >> (2 * bit)) & 1u) << bit;
			y |= ((key >> (2 * bit + 1)) & 1u) << bit;
		}
		if (x >= l0.px || y >= l0.py)
			continue;
		wtp_vat_entry e;
		wtp_vat(&p, 0, x, y, &e, NULL);
		if (e.state == WTP_DATA && e.page >= l0.first_page) {
			assert_true(e.page <= next);
			if (e.page == next)
				next++;
		}
	}
	assert_int_equal(next, l0.first_page + l0.n_new_pages);
	free(first);
	free(cur);
	free(seen);
	free(b);
	wb_pageset_free(&ps);
}

/* ---- quadtree ---------------------------------------------------------- */

struct node {
	int water;
	float lo, hi;
};

/* Expected node from the DECODED pack: the wet interior range of each
 * page as a reader decodes it (FLAT: its height), united with the
 * children's. Bounds of decoded values are what culling needs. */
static struct node expect_node(const wtp_pack *p, int k, int x, int y)
{
	struct node n = { 0, 0, 0 };
	if (k < (int)p->n_lods) {
		wtp_lod L;
		wtp_lod_get(p, (uint32_t)k, &L);
		if (x >= (int)L.px || y >= (int)L.py)
			return n;
		wtp_vat_entry e;
		assert_int_equal(wtp_vat(p, (uint32_t)k, (uint32_t)x, (uint32_t)y,
					 &e, NULL), WTP_OK);
		if (e.state == WTP_FLAT) {
			n.water = 1;
			n.lo = n.hi = e.height;
		} else if (e.state == WTP_DATA) {
			unsigned char *raw = malloc(p->page_raw_size),
				      *work = malloc(p->page_raw_size);
			assert_int_equal(wtp_page_read(p, e.page, NULL, 0, raw,
						       work, NULL), WTP_OK);
			wtp_layer lh;
			wtp_layer_get(p, 0, &lh);
			for (uint32_t b = 1; b <= 128; b++)
				for (uint32_t a = 1; a <= 128; a++) {
					float h = wtp_pixel(&lh, raw, a + b * 130,
							    0, e.height);
					if (h == WTP_DRY_HEIGHT)
						continue;
					if (!n.water)
						n.water = 1, n.lo = n.hi = h;
					n.lo = fminf(n.lo, h);
					n.hi = fmaxf(n.hi, h);
				}
			assert_int_equal(e.has_water, n.water);
			free(raw);
			free(work);
		}
	}
	if (k == 0)
		return n;
	for (int c = 0; c < 4; c++) {
		struct node ch = expect_node(p, k - 1, 2 * x + c % 2, 2 * y + c / 2);
		if (!ch.water)
			continue;
		if (!n.water) {
			n = ch;
			continue;
		}
		n.lo = fminf(n.lo, ch.lo);
		n.hi = fmaxf(n.hi, ch.hi);
	}
	return n;
}

static void test_quadtree(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	/* 2 LODs of 9 x 5 pages: levels above up to a 1x1 root */
	synth(&ps, 1100, 600, 2, 1u << WB_LAYER_HEIGHT, 0.0);
	write_pack(TMP "/pack_qt.wtp", &ps, 64, NULL);
	size_t n;
	unsigned char *b = load(TMP "/pack_qt.wtp", &n);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	/* 9x5 -> 5x3 -> 3x2 -> 2x1 -> 1x1 */
	assert_int_equal(p.n_qt_levels, 5);
	wtp_qt_level q;
	assert_int_equal(wtp_qt_level_get(&p, 4, &q), WTP_OK);
	assert_int_equal(q.w, 1);
	assert_int_equal(q.h, 1);
	for (uint32_t k = 0; k < p.n_qt_levels; k++) {
		wtp_qt_level_get(&p, k, &q);
		for (uint32_t y = 0; y < q.h; y++)
			for (uint32_t x = 0; x < q.w; x++) {
				wtp_qt_node nd;
				assert_int_equal(wtp_qt_node_get(&p, k, x, y, &nd, NULL), WTP_OK);
				struct node e = expect_node(&p, (int)k, (int)x, (int)y);
				assert_int_equal(nd.has_water, e.water);
				assert_true(nd.hmin == e.lo && nd.hmax == e.hi);
				if (k == 0 || !nd.has_water)
					continue;
				wtp_qt_level qc;
				wtp_qt_level_get(&p, k - 1, &qc);
				for (uint32_t c = 0; c < 4; c++) {
					wtp_qt_node cn;
					if (2 * x + c % 2 >= qc.w || 2 * y + c / 2 >= qc.h)
						continue;
					wtp_qt_node_get(&p, k - 1, 2 * x + c % 2, 2 * y + c / 2, &cn, NULL);
					if (cn.has_water)
						assert_true(cn.hmin >= nd.hmin && cn.hmax <= nd.hmax);
				}
			}
	}
	wtp_qt_node root;
	wtp_qt_node_get(&p, 4, 0, 0, &root, NULL);
	assert_int_equal(root.has_water, 1);
	/* the pageset's raw range, within half a height step */
	wtp_lod L0;
	wtp_lod_get(&p, 0, &L0);
	assert_true(root.hmin <= 20.0f + L0.height_step / 2 &&
		    root.hmax >= 1100.0f - L0.height_step / 2);
	free(b);
	wb_pageset_free(&ps);
}

/* ---- metadata ---------------------------------------------------------- */

static int str_is(const void *v, uint32_t len, const char *s)
{
	return len == strlen(s) && memcmp(v, s, len) == 0;
}

static void test_metadata(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 300, 200, 2, ALL_LAYERS, 0.0);
	write_pack(TMP "/pack_meta.wtp", &ps, 0, NULL);
	size_t n;
	unsigned char *b = load(TMP "/pack_meta.wtp", &n);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	const void *v;
	uint32_t len;
	assert_int_equal(wtp_meta_find(&p, WTP_META_SCENE_NAME, 0, &v, &len, NULL), WTP_OK);
	assert_true(str_is(v, len, "synthetic"));
	assert_int_equal(wtp_meta_find(&p, WTP_META_TOOL, 0, &v, &len, NULL), WTP_OK);
	assert_true(str_is(v, len, "wbake " WB_VERSION_STRING));
	assert_int_equal(wtp_meta_find(&p, WTP_META_SOLVER, 0, &v, &len, NULL), WTP_OK);
	assert_true(str_is(v, len, "lbm"));
	assert_int_equal(wtp_meta_find(&p, WTP_META_UNITS, 0, &v, &len, NULL), WTP_OK);
	assert_true(len > 0 && memchr(v, 'm', len));
	assert_int_equal(wtp_meta_find(&p, WTP_META_SCENE_SHA256, 0, &v, &len, NULL), WTP_OK);
	assert_int_equal(len, 32);
	assert_int_equal(((const unsigned char *)v)[31], 31);
	assert_int_equal(wtp_meta_find(&p, WTP_META_HEIGHTMAP_SHA256, 0, &v, &len, NULL), WTP_OK);
	assert_int_equal(((const unsigned char *)v)[0], 255);
	assert_int_equal(wtp_material_count(&p), 3);
	for (uint32_t i = 0; i < 3; i++) {
		wtp_material m;
		assert_int_equal(wtp_material_get(&p, i, &m, NULL), WTP_OK);
		assert_int_equal(m.id, mats[i].id);
		assert_int_equal(m.kind, mats[i].kind);
		assert_true(m.amplitude == mats[i].amplitude);
		assert_true(m.frequency == mats[i].frequency);
		assert_true(m.speed == mats[i].speed);
		assert_int_equal(m.name_len, strlen(mats[i].name));
		assert_memory_equal(m.name, mats[i].name, m.name_len);
	}
	assert_int_not_equal(wtp_meta_find(&p, WTP_META_MATERIAL, 3, &v, &len, NULL), WTP_OK);
	free(b);
	wb_pageset_free(&ps);
}

/* ---- determinism ------------------------------------------------------- */

static void test_deterministic(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 700, 500, 3, ALL_LAYERS, 0.2);
	int nt = omp_get_max_threads();
	omp_set_num_threads(1);
	write_pack(TMP "/pack_det1.wtp", &ps, 0, NULL);
	omp_set_num_threads(4);
	write_pack(TMP "/pack_det4.wtp", &ps, 0, NULL);
	omp_set_num_threads(nt);
	write_pack(TMP "/pack_detn.wtp", &ps, 0, NULL);
	size_t n1, n4, nn;
	unsigned char *a = load(TMP "/pack_det1.wtp", &n1);
	unsigned char *b = load(TMP "/pack_det4.wtp", &n4);
	unsigned char *c = load(TMP "/pack_detn.wtp", &nn);
	assert_int_equal(n1, n4);
	assert_int_equal(n1, nn);
	assert_memory_equal(a, b, n1);
	assert_memory_equal(a, c, n1);
	/* a second, equal pageset built anew gives the same bytes */
	struct wb_pageset ps2;
	synth(&ps2, 700, 500, 3, ALL_LAYERS, 0.2);
	write_pack(TMP "/pack_det2.wtp", &ps2, 0, NULL);
	size_t n2;
	unsigned char *e = load(TMP "/pack_det2.wtp", &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(a, e, n1);
	free(a);
	free(b);
	free(c);
	free(e);
	wb_pageset_free(&ps);
	wb_pageset_free(&ps2);
}

/* ---- RAW fallback, errors ---------------------------------------------- */

static void recrc(unsigned char *b);

static void test_raw_fallback(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth2(&ps, 128, 128, 1, ALL_LAYERS, 0.0, 1);
	struct wb_page *pg = &ps.lods[0].pages[0];
	assert_int_equal(pg->state, WB_PAGE_DATA);
	/* as incompressible as the format allows: every value random bits
	   of its format; heights random over +-32768 m (on the grid of the
	   LOD's height step, version 2 heights keep at most 12 bits of
	   entropy in 16, so zlib always saves more than 1/64 here) */
	uint32_t s = 12345;
	for (int i = 0; i < WB_PAGE_PIXELS; i++) {
		uint16_t r[4];
		for (int q = 0; q < 4; q++) {
			s = s * 1664525u + 1013904223u;
			r[q] = (uint16_t)(s >> 16);
			if ((r[q] & 0x7c00u) >= 0x7800u)
				r[q] ^= 0x4000u; /* exponent <= 29: |v| < 32768 */
		}
		pg->height[i] = wtp_half_to_float(r[0]);
		pg->flow[2 * i] = wtp_half_to_float(r[1]);
		pg->flow[2 * i + 1] = wtp_half_to_float(r[2]);
		pg->distance[i] = wtp_half_to_float(r[3]);
		s = s * 1664525u + 1013904223u;
		pg->material[i] = (uint8_t)(s >> 24);
		pg->foam[i] = (float)((s >> 16) & 0xff) / 255.0f;
	}
	pg->height[0] = -32768.0f;
	pg->height[1] = 32768.0f;
	ps.distance_max = 65504;
	struct wb_pack_stats st;
	write_pack(TMP "/pack_raw.wtp", &ps, 16, &st);
	size_t n;
	unsigned char *b = load(TMP "/pack_raw.wtp", &n);
	assert_int_equal(open_verify(b, n), WTP_OK);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	wtp_lod L;
	wtp_lod_get(&p, 0, &L);
	assert_true(L.height_step == 32.0); /* 65536 m / 4090 -> 2^5 */
	wtp_page_info_t pi;
	assert_int_equal(wtp_page_info(&p, 0, &pi, NULL), WTP_OK);
	size_t rs = p.page_raw_size;
	unsigned char *ref = malloc(rs), *raw = malloc(rs), *spl = malloc(rs);
	float base;
	assert_int_equal(pack_encode_page(&ps, 0, 0, ref, &base, NULL), WB_OK);
	assert_true(base == 0.0f);
	/* the writer follows the rule of docs/wtp-format.md 8, recomputed */
	{
		uLongf cl = compressBound(rs);
		unsigned char *z = malloc(cl);
		filter_page(&p, ref, spl);
		assert_int_equal(compress2(z, &cl, spl, rs, 6), Z_OK);
		int want_raw = cl > rs - rs / 64;
		assert_int_equal(pi.codec, want_raw ? WTP_CODEC_RAW
						    : WTP_CODEC_ZLIB_DELTA_SPLIT);
		assert_int_equal(pi.stored_size, want_raw ? rs : cl);
		assert_int_equal(st.stored_bytes, (long long)pi.stored_size);
		free(z);
	}
	/* the page rewritten as RAW (stored = decoded bytes): the reader
	   decodes it, from the buffer and from separate stored bytes */
	size_t nn = (size_t)((pi.offset + rs + 15) / 16 * 16);
	unsigned char *c = calloc(1, nn);
	memcpy(c, b, (size_t)pi.offset);
	memcpy(c + pi.offset, ref, rs);
	unsigned char *de = c + p.page_dir_offset;
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), ref, (uInt)rs);
	for (int i = 0; i < 4; i++) {
		de[8 + i] = (unsigned char)(rs >> (8 * i));
		de[16 + i] = (unsigned char)(crc >> (8 * i));
	}
	de[20] = WTP_CODEC_RAW;
	for (int i = 0; i < 8; i++)
		c[16 + i] = (unsigned char)((uint64_t)nn >> (8 * i));
	recrc(c);
	assert_int_equal(open_verify(c, nn), WTP_OK);
	assert_int_equal(wtp_open(&p, c, nn, 0, NULL), WTP_OK);
	assert_int_equal(wtp_page_read(&p, 0, NULL, 0, raw, NULL, NULL), WTP_OK);
	assert_memory_equal(raw, ref, rs);
	memset(raw, 0, rs);
	assert_int_equal(wtp_page_read(&p, 0, c + pi.offset, rs, raw, NULL, NULL),
			 WTP_OK);
	assert_memory_equal(raw, ref, rs);
	free(c);
	free(raw);
	free(ref);
	free(spl);
	free(b);
	wb_pageset_free(&ps);
}

static enum wb_status write_status(const char *path, struct wb_pageset *ps,
				   const char *want)
{
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_pack_meta m = test_meta(0);
	enum wb_status s = pack_write(path, ps, &m, NULL, &d);
	if (want) {
		assert_true(d.errors > 0);
		if (!strstr(d.v[0].msg, want))
			print_error("message '%s' lacks '%s'\n", d.v[0].msg, want);
		assert_non_null(strstr(d.v[0].msg, want));
	}
	wb_diags_release(&d);
	return s;
}

static void test_errors(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 300, 300, 2, ALL_LAYERS, 0.0);
	const char *path = TMP "/pack_err.wtp";
	remove(path);
	ps.layers &= ~(1u << WB_LAYER_HEIGHT);
	assert_int_equal(write_status(path, &ps, "height layer"), WB_EINPUT);
	ps.layers = ALL_LAYERS;
	ps.lods[1].px++;
	assert_int_equal(write_status(path, &ps, "LOD 1"), WB_EINPUT);
	ps.lods[1].px--;
	struct wb_page *pg = NULL;
	for (int i = 0; i < ps.lods[0].px * ps.lods[0].py && !pg; i++)
		if (ps.lods[0].pages[i].state == WB_PAGE_DATA)
			pg = &ps.lods[0].pages[i];
	assert_non_null(pg);
	float keep = pg->height[500];
	pg->height[500] = NAN;
	assert_int_equal(write_status(path, &ps, "NaN"), WB_EINPUT);
	pg->height[500] = keep;
	float *f = pg->foam;
	pg->foam = NULL;
	assert_int_equal(write_status(path, &ps, "missing"), WB_EINPUT);
	pg->foam = f;
	struct stat sb;
	assert_int_not_equal(stat(path, &sb), 0); /* nothing half-written */
	assert_int_equal(write_status(TMP "/no/such/dir/p.wtp", &ps, NULL), WB_EIO);
	assert_int_equal(write_status(path, &ps, NULL), WB_OK);
	assert_int_equal(stat(path, &sb), 0);
	wb_pageset_free(&ps);
	wb_pageset_free(NULL);
	wb_pageset_free(&ps); /* zeroed: fine */
}

/* ---- corruption: every byte flipped, every truncation --------------------- */

static void flip_all(const char *path, size_t stride)
{
	size_t n;
	unsigned char *b = load(path, &n);
	assert_int_equal(open_verify(b, n), WTP_OK);
	unsigned char *c = malloc(n);
	static const unsigned char masks[2] = { 0x01, 0xA5 };
	for (size_t i = 0; i < n; i += stride)
		for (int m = 0; m < 2; m++) {
			memcpy(c, b, n);
			c[i] ^= masks[m];
			if (open_verify(c, n) == WTP_OK)
				fail_msg("%s: flipping byte %zu by 0x%02x undetected",
					 path, i, masks[m]);
		}
	for (size_t len = 0; len < n; len += (len < 256 ? 1 : stride * 7 + 1))
		if (open_verify(b, len) == WTP_OK)
			fail_msg("%s: truncation to %zu bytes undetected", path, len);
	/* one byte appended */
	unsigned char *e = malloc(n + 1);
	memcpy(e, b, n);
	e[n] = 0;
	assert_int_not_equal(open_verify(e, n + 1), WTP_OK);
	free(e);
	free(c);
	free(b);
}

static void test_corruption(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 200, 130, 2, ALL_LAYERS, 0.0);
	write_pack(TMP "/pack_flip16.wtp", &ps, 16, NULL);
	flip_all(TMP "/pack_flip16.wtp", 1);
	/* default alignment: most bytes are padding; every 3rd byte */
	write_pack(TMP "/pack_flip4k.wtp", &ps, 0, NULL);
	flip_all(TMP "/pack_flip4k.wtp", 3);
	wb_pageset_free(&ps);
}

/* Structural rules hold even when the CRC is recomputed after an edit. */
static uint32_t rd32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static void recrc(unsigned char *b)
{
	uint32_t ts = rd32(b + 24);
	memset(b + 28, 0, 4);
	uint32_t c = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, ts);
	for (int i = 0; i < 4; i++)
		b[28 + i] = (unsigned char)(c >> (8 * i));
}

static void test_verify_structure(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 1100, 300, 2, 1u << WB_LAYER_HEIGHT, 0.0);
	write_pack(TMP "/pack_struct.wtp", &ps, 16, NULL);
	size_t n;
	unsigned char *b = load(TMP "/pack_struct.wtp", &n);
	unsigned char *c = malloc(n);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	wtp_lod l0;
	wtp_lod_get(&p, 0, &l0);
	/* find two DATA entries of LOD0 with different pages */
	long ia = -1, ib = -1;
	uint32_t pa = 0;
	for (long i = 0; i < (long)(l0.px * l0.py); i++) {
		const unsigned char *v = b + l0.vat_offset + 12 * i;
		if (v[0] != WTP_DATA)
			continue;
		if (ia < 0) {
			ia = i;
			pa = rd32(v + 8);
		} else if (rd32(v + 8) != pa && ib < 0) {
			ib = i;
		}
	}
	assert_true(ia >= 0 && ib >= 0);
	/* sanity: re-CRC of an untouched pack keeps it valid */
	memcpy(c, b, n);
	recrc(c);
	assert_int_equal(open_verify(c, n), WTP_OK);
	/* every entry pointing to pa -> ib's page: pa unreferenced (or
	   referenced from a finer LOD only) */
	memcpy(c, b, n);
	for (long i = 0; i < (long)(l0.px * l0.py); i++) {
		unsigned char *v = c + l0.vat_offset + 12 * i;
		if (v[0] == WTP_DATA && rd32(v + 8) == pa)
			memcpy(v + 8, b + l0.vat_offset + 12 * ib + 8, 4);
	}
	wtp_lod l1;
	wtp_lod_get(&p, 1, &l1);
	for (long i = 0; i < (long)(l1.px * l1.py); i++) {
		unsigned char *v = c + l1.vat_offset + 12 * i;
		if (v[0] == WTP_DATA && rd32(v + 8) == pa)
			memcpy(v + 8, b + l0.vat_offset + 12 * ib + 8, 4);
	}
	recrc(c);
	assert_int_equal(open_verify(c, n), WTP_ECORRUPT);
	/* a DATA entry turned FLAT: counts disagree with the LOD table */
	memcpy(c, b, n);
	c[l0.vat_offset + 12 * ib] = WTP_FLAT;
	memset(c + l0.vat_offset + 12 * ib + 8, 0xff, 4);
	recrc(c);
	assert_int_equal(open_verify(c, n), WTP_ECORRUPT);
	/* reserved header bytes, layer plane size, VAT reserved byte,
	   quadtree reserved bits, page directory reserved bytes */
	size_t offs[5] = { 121, p.layer_table_offset + 12,
			   (size_t)l0.vat_offset + 3, 0, p.page_dir_offset + 22 };
	wtp_qt_level q;
	wtp_qt_level_get(&p, 0, &q);
	offs[3] = (size_t)q.node_offset + 1;
	for (int k = 0; k < 5; k++) {
		memcpy(c, b, n);
		if (k == 2) /* VAT byte 3: the step exponent, -24..5 */
			c[offs[k]] = 0x7f;
		else
			c[offs[k]] ^= 0x10;
		recrc(c);
		assert_int_equal(open_verify(c, n), WTP_ECORRUPT);
	}
	/* with the CRC skipped the same edits are still refused */
	memcpy(c, b, n);
	c[121] = 1;
	assert_int_equal(wtp_open(&p, c, n, WTP_OPEN_NOCRC, NULL), WTP_ECORRUPT);
	free(c);
	free(b);
	wb_pageset_free(&ps);
}

/* The stored bytes follow docs/wtp-format.md 8: inflating a payload gives
 * the filtered page; and the reader also decodes a plain ZLIB page. */
static void test_codec_spec(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth2(&ps, 128, 128, 1, ALL_LAYERS, 0.0, 1);
	const struct wb_page *pg = &ps.lods[0].pages[0];
	assert_int_equal(pg->state, WB_PAGE_DATA);
	write_pack(TMP "/pack_codec.wtp", &ps, 16, NULL);
	size_t n;
	unsigned char *b = load(TMP "/pack_codec.wtp", &n);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	assert_int_equal(p.n_pages, 1);
	size_t rs = p.page_raw_size;
	unsigned char *ref = malloc(rs), *filt = malloc(rs), *inf = malloc(rs),
		      *raw = malloc(rs), *work = malloc(rs);
	float base;
	assert_int_equal(pack_encode_page(&ps, 0, 0, ref, &base, NULL), WB_OK);
	filter_page(&p, ref, filt);
	wtp_page_info_t pi;
	wtp_page_info(&p, 0, &pi, NULL);
	assert_int_equal(pi.codec, WTP_CODEC_ZLIB_DELTA_SPLIT);
	uLongf il = rs;
	assert_int_equal(uncompress(inf, &il, b + pi.offset, pi.stored_size), Z_OK);
	assert_int_equal(il, rs);
	assert_memory_equal(inf, filt, rs);
	/* the last (only) page rewritten as plain ZLIB: new size, CRC,
	   file_size; the reader decodes the same page */
	uLongf zl = compressBound(rs);
	unsigned char *z = malloc(zl);
	assert_int_equal(compress2(z, &zl, ref, rs, 9), Z_OK);
	size_t nn = (size_t)((pi.offset + zl + 15) / 16 * 16);
	unsigned char *c = calloc(1, nn);
	memcpy(c, b, (size_t)pi.offset);
	memcpy(c + pi.offset, z, zl);
	unsigned char *de = c + p.page_dir_offset;
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), z, (uInt)zl);
	for (int i = 0; i < 4; i++) {
		de[8 + i] = (unsigned char)(zl >> (8 * i));
		de[16 + i] = (unsigned char)(crc >> (8 * i));
	}
	de[20] = WTP_CODEC_ZLIB;
	for (int i = 0; i < 8; i++)
		c[16 + i] = (unsigned char)((uint64_t)nn >> (8 * i));
	recrc(c);
	assert_int_equal(open_verify(c, nn), WTP_OK);
	assert_int_equal(wtp_open(&p, c, nn, 0, NULL), WTP_OK);
	assert_int_equal(wtp_page_read(&p, 0, NULL, 0, raw, work, NULL), WTP_OK);
	assert_memory_equal(raw, ref, rs);
	free(c);
	free(z);
	free(ref);
	free(filt);
	free(inf);
	free(raw);
	free(work);
	free(b);
	wb_pageset_free(&ps);
}

/* ---- dry sentinel through a gather4 -------------------------------------- */

static void test_gather4_dry(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth2(&ps, 128, 128, 1, 1u << WB_LAYER_HEIGHT, 0.0, 1);
	struct wb_page *pg = &ps.lods[0].pages[0];
	assert_int_equal(pg->state, WB_PAGE_DATA);
	/* a mountain lake at 3000 m with a pattern of dry pixels */
	for (int i = 0; i < WB_PAGE_PIXELS; i++) {
		int a = i % WB_PAGE_SIZE, c = i / WB_PAGE_SIZE;
		pg->height[i] = ((a * 7 + c * 3) % 5 == 0) ? WB_DRY_HEIGHT
			: 3000.0f + 0.25f * (float)sin(a * 0.1) * (float)c / 130.0f;
	}
	write_pack(TMP "/pack_g4.wtp", &ps, 0, NULL);
	size_t n;
	unsigned char *b = load(TMP "/pack_g4.wtp", &n);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	wtp_vat_entry e;
	wtp_vat(&p, 0, 0, 0, &e, NULL);
	assert_int_equal(e.state, WTP_DATA);
	unsigned char *raw = malloc(p.page_raw_size), *work = malloc(p.page_raw_size);
	assert_int_equal(wtp_page_read(&p, e.page, NULL, 0, raw, work, NULL), WTP_OK);
	/* gather4 of the R16F texels around every texel corner: the shader
	   test 'texel < -65000' finds exactly the dry ones */
	for (int c = 0; c + 1 < WB_PAGE_SIZE; c++)
		for (int a = 0; a + 1 < WB_PAGE_SIZE; a++) {
			int dry = 0, want = 0;
			for (int q = 0; q < 4; q++) {
				int i = (a + q % 2) + (c + q / 2) * WB_PAGE_SIZE;
				uint16_t t = (uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8);
				float texel = wtp_half_to_float(t);
				dry += texel < -65000.0f;
				want += pg->height[i] == WB_DRY_HEIGHT;
				if (pg->height[i] == WB_DRY_HEIGHT)
					assert_int_equal(t, WTP_DRY_HALF);
				else
					assert_true(fabsf(e.height + texel - pg->height[i]) < 1e-3f);
			}
			assert_int_equal(dry, want);
		}
	free(raw);
	free(work);
	free(b);
	wb_pageset_free(&ps);
}

/* ---- runtime: allocator and pool streaming -------------------------------- */

static void test_alloc(void **state)
{
	(void)state;
	wtp_alloc a;
	wtp_alloc_init(&a, 64, 64);
	assert_int_equal(wtp_alloc_free_count(&a), 4096);
	for (int s = 0; s < 4096; s++)
		assert_int_equal(wtp_alloc_take(&a), s); /* lowest set bit */
	assert_int_equal(wtp_alloc_take(&a), WTP_ALLOC_NONE);
	assert_int_equal(a.row_mask, 0);
	assert_int_equal(wtp_alloc_free(&a, 100), 0);
	assert_int_equal(wtp_alloc_free(&a, 100), -1); /* double free */
	assert_int_equal(wtp_alloc_free(&a, 4000), 0);
	assert_int_equal(wtp_alloc_free(&a, 5), 0);
	assert_int_equal(wtp_alloc_free_count(&a), 3);
	assert_int_equal(wtp_alloc_take(&a), 5);
	assert_int_equal(wtp_alloc_take(&a), 100);
	assert_int_equal(wtp_alloc_take(&a), 4000);
	assert_int_equal(wtp_alloc_take(&a), WTP_ALLOC_NONE);
	/* a 7 x 7 pool (a 1k texture of 130-pixel pages) */
	wtp_alloc_init(&a, 7, 7);
	for (int i = 0; i < 49; i++) {
		int s = wtp_alloc_take(&a);
		assert_int_equal(s, (i % 7) + 64 * (i / 7));
	}
	assert_int_equal(wtp_alloc_take(&a), WTP_ALLOC_NONE);
	assert_int_equal(wtp_alloc_free(&a, 7), -1); /* outside the pool */
	assert_int_equal(wtp_alloc_free(&a, 64 * 3 + 2), 0);
	assert_int_equal(wtp_alloc_take(&a), 64 * 3 + 2);
}

#define POOL_SLOTS 64
#define POOL_PX 130

struct rt_entry { /* the table the runtime samples, one texel per page */
	uint8_t state;
	float height;
	int slot;
};

static void test_stream_pool(void **state)
{
	(void)state;
	mk_tmp();
	struct wb_pageset ps;
	synth(&ps, 1000, 700, 4, ALL_LAYERS, 0.3);
	write_pack(TMP "/pack_pool.wtp", &ps, 0, NULL);
	size_t n;
	unsigned char *b = load(TMP "/pack_pool.wtp", &n);
	wtp_pack p;
	assert_int_equal(wtp_open(&p, b, n, 0, NULL), WTP_OK);
	wtp_alloc al;
	wtp_alloc_init(&al, POOL_SLOTS, POOL_SLOTS);
	/* the pool texture: 64 x 64 slots of 130 x 130 R16F texels, kept per
	   slot so the test does not hold the whole 8320^2 texture */
	uint16_t **pool = calloc(POOL_SLOTS * POOL_SLOTS, sizeof *pool);
	int *page_slot = malloc(p.n_pages * sizeof *page_slot);
	for (uint32_t i = 0; i < p.n_pages; i++)
		page_slot[i] = -1;
	struct rt_entry *table[32];
	unsigned char *raw = malloc(p.page_raw_size), *work = malloc(p.page_raw_size);
	wtp_layer lh;
	wtp_layer_get(&p, (uint32_t)wtp_layer_find(&p, WTP_LAYER_HEIGHT), &lh);
	int used = 0;
	for (uint32_t k = p.n_lods; k-- > 0;) { /* coarse first, as stored */
		wtp_lod L;
		wtp_lod_get(&p, k, &L);
		table[k] = calloc((size_t)L.px * L.py, sizeof *table[k]);
		for (uint32_t y = 0; y < L.py; y++)
			for (uint32_t x = 0; x < L.px; x++) {
				wtp_vat_entry e;
				wtp_vat(&p, k, x, y, &e, NULL);
				struct rt_entry *t = &table[k][x + y * L.px];
				t->state = e.state;
				t->height = e.height;
				t->slot = -1;
				if (e.state != WTP_DATA)
					continue;
				if (page_slot[e.page] < 0) {
					int s = wtp_alloc_take(&al);
					assert_int_equal(s, used); /* first free slot */
					used++;
					assert_int_equal(wtp_page_read(&p, e.page, NULL, 0, raw, work, NULL), WTP_OK);
					pool[s] = malloc(POOL_PX * POOL_PX * 2);
					memcpy(pool[s], raw + lh.plane_offset, POOL_PX * POOL_PX * 2);
					page_slot[e.page] = s;
				}
				t->slot = page_slot[e.page];
			}
	}
	assert_int_equal((uint32_t)used, p.n_pages);
	assert_int_equal(wtp_alloc_free_count(&al), 4096u - p.n_pages);
	/* sample like a shader: world position -> table -> pool texel */
	uint32_t s = 7;
	for (int it = 0; it < 20000; it++) {
		s = s * 1664525u + 1013904223u;
		uint32_t k = (s >> 8) % p.n_lods;
		const struct wb_lod_pages *Lp = &ps.lods[k];
		wtp_lod Lq;
		wtp_lod_get(&p, (uint32_t)k, &Lq);
		s = s * 1664525u + 1013904223u;
		int i = (int)((s >> 8) % (uint32_t)Lp->nx);
		s = s * 1664525u + 1013904223u;
		int j = (int)((s >> 8) % (uint32_t)Lp->ny);
		double wx = p.origin[0] + (i + 0.5) * p.dx0 * (1 << k);
		double wy = p.origin[1] + (j + 0.5) * p.dx0 * (1 << k);
		/* runtime side: only the pack's header and table */
		double fx = (wx - p.origin[0]) / (p.dx0 * (1 << k));
		double fy = (wy - p.origin[1]) / (p.dx0 * (1 << k));
		int px = (int)floor(fx / 128), py = (int)floor(fy / 128);
		int a = (int)floor(fx) - px * 128 + 1, c = (int)floor(fy) - py * 128 + 1;
		const struct rt_entry *t = &table[k][px + py * Lp->px];
		float h;
		if (t->state == WTP_EMPTY)
			h = WB_DRY_HEIGHT;
		else if (t->state == WTP_FLAT)
			h = t->height;
		else {
			float texel = wtp_half_to_float(pool[t->slot][a + c * POOL_PX]);
			h = texel < -65000.0f ? WB_DRY_HEIGHT : t->height + texel;
		}
		/* truth from the pageset */
		const struct wb_page *pg = &Lp->pages[px + py * Lp->px];
		float want = pg->state == WB_PAGE_EMPTY ? WB_DRY_HEIGHT
			   : pg->state == WB_PAGE_FLAT ? pg->flat_height
			   : pg->height[a + c * WB_PAGE_SIZE];
		/* f16 offsets from the page base: error <= range / 4096 */
		float lo = want, hi = want;
		for (int q = 0; pg->state == WB_PAGE_DATA && q < WB_PAGE_PIXELS; q++)
			if (pg->height[q] != WB_DRY_HEIGHT) {
				lo = fminf(lo, pg->height[q]);
				hi = fmaxf(hi, pg->height[q]);
			}
		if (want == WB_DRY_HEIGHT)
			assert_true(h == WB_DRY_HEIGHT);
		else
			assert_true(fabsf(h - want) <= (float)Lq.height_step / 2);
	}
	/* evict LOD0 and LOD1 pages: their slots return to the pool */
	int freed = 0;
	for (uint32_t i = 0; i < p.n_pages; i++) {
		wtp_lod l2;
		wtp_lod_get(&p, 1, &l2);
		if (i >= l2.first_page) {
			assert_int_equal(wtp_alloc_free(&al, page_slot[i]), 0);
			freed++;
		}
	}
	assert_int_equal(wtp_alloc_free_count(&al), 4096u - p.n_pages + (uint32_t)freed);
	wtp_lod l2;
	wtp_lod_get(&p, 1, &l2);
	assert_int_equal(wtp_alloc_take(&al), (int)l2.first_page); /* lowest freed */
	for (int i = 0; i < POOL_SLOTS * POOL_SLOTS; i++)
		free(pool[i]);
	for (uint32_t k = 0; k < p.n_lods; k++)
		free(table[k]);
	free(pool);
	free(page_slot);
	free(raw);
	free(work);
	free(b);
	wb_pageset_free(&ps);
}

/* ---- fuzz corpus (only with WTP_CORPUS_DIR) -------------------------------- */

static void corpus_put(const char *dir, const char *name, const unsigned char *b,
		       size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	assert_int_equal(wb_write_file_atomic(path, b, n, NULL), WB_OK);
}

static void test_corpus(void **state)
{
	(void)state;
	const char *dir = getenv("WTP_CORPUS_DIR");
	if (!dir)
		skip();
	mk_tmp();
	struct {
		const char *name;
		int nx, ny, lods;
		unsigned layers;
		int no_pond;
		unsigned bc; /* block-compressed layers (format 2.1) */
	} v[] = {
		{ "valid_states.wtp", 1100, 300, 2,
		  (1u << WB_LAYER_HEIGHT) | (1u << WB_LAYER_MATERIAL), 0, 0 },
		{ "valid_all_layers.wtp", 256, 140, 2, ALL_LAYERS, 0, 0 },
		{ "valid_height.wtp", 140, 128, 1, 1u << WB_LAYER_HEIGHT, 1, 0 },
		{ "valid_2lod.wtp", 200, 130, 2, (1u << WB_LAYER_HEIGHT) | (1u << WB_LAYER_MATERIAL), 1, 0 },
		{ "valid_bc.wtp", 256, 140, 1, ALL_LAYERS, 1,
		  (1u << WB_LAYER_FLOW) | (1u << WB_LAYER_DISTANCE) | (1u << WB_LAYER_FOAM) },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct synth_opts o = { v[i].nx, v[i].ny, v[i].lods, v[i].layers, 1.0, 0.0,
					v[i].no_pond };
		struct wb_pageset ps;
		assert_int_equal(synth_pageset(&o, &ps), 0);
		ps.bc_layers = v[i].bc;
		char path[256];
		snprintf(path, sizeof path, TMP "/corpus_%zu.wtp", i);
		write_pack(path, &ps, 16, NULL);
		size_t n;
		unsigned char *b = load(path, &n);
		assert_true(n < 64 * 1024);
		corpus_put(dir, v[i].name, b, n);
		if (i == 1) { /* variants of the smallest pack */
			char name[64];
			unsigned char *c = malloc(n);
			size_t cuts[4] = { 64, 200, n / 2, n - 1 };
			for (int j = 0; j < 4; j++) {
				snprintf(name, sizeof name, "trunc_%zu.wtp", cuts[j]);
				corpus_put(dir, name, b, cuts[j]);
			}
			size_t flips[6] = { 9, 30, 70, 130, 300, n - 20 };
			for (int j = 0; j < 6; j++) {
				memcpy(c, b, n);
				c[flips[j]] ^= 0x40;
				snprintf(name, sizeof name, "flip_%zu.wtp", flips[j]);
				corpus_put(dir, name, c, n);
			}
			free(c);
		}
		free(b);
		wb_pageset_free(&ps);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_half_rne),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_dedup_order),
		cmocka_unit_test(test_quadtree),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_raw_fallback),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_corruption),
		cmocka_unit_test(test_verify_structure),
		cmocka_unit_test(test_codec_spec),
		cmocka_unit_test(test_gather4_dry),
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_stream_pool),
		cmocka_unit_test(test_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
