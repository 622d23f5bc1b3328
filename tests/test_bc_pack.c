/*
 * test_bc_pack.c - packs with block-compressed layers (format 2.1,
 * docs/wtp-format.md section 4.1) written by src/pack.c and read with
 * include/wtp.h: every BC page decoded with the reference decoder of
 * tests/bc_ref.h (from the spec text) and held to the error budget against
 * the baked floats; the other layers unchanged; raw blocks into a row
 * pitch with their scales; FLAT / EMPTY expansion; byte-identical output
 * for 1 and 3 threads; dedup; a pack without BC stays 2.0; corrupt BC
 * payloads rejected. Packs are synthesised at test time (pack_synth.h).
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

#include "bc.h"
#include "pack.h"
#include "util.h"
#include "wtp.h"
#include "pack_synth.h"
#include "bc_ref.h"

#define TMP "tests/tmp"
#define ALL_LAYERS ((1u << WB_LAYER_COUNT) - 1)
#define BC_ALL ((1u << WB_LAYER_FLOW) | (1u << WB_LAYER_DISTANCE) | \
		(1u << WB_LAYER_FOAM))

struct pk {
	unsigned char *buf;
	size_t len;
	wtp_pack p;
};

static void make(struct wb_pageset *ps, int nx, int ny, int lods,
		 double noise)
{
	struct synth_opts o = { nx, ny, lods, ALL_LAYERS, 1.0, noise, 0 };
	assert_int_equal(synth_pageset(&o, ps), 0);
}

static void write_open(const struct wb_pageset *ps, const char *name,
		       unsigned align, struct pk *k)
{
	char path[256];
	mkdir(TMP, 0777);
	snprintf(path, sizeof path, TMP "/%s", name);
	struct wb_pack_meta m;
	memset(&m, 0, sizeof m);
	m.scene_name = "bc";
	m.alignment = align;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status s = pack_write(path, ps, &m, NULL, &d);
	if (s != WB_OK && d.n)
		print_error("%s\n", d.v[0].msg);
	assert_int_equal(s, WB_OK);
	assert_int_equal(wb_read_file(path, &k->buf, &k->len, &d), WB_OK);
	wb_diags_release(&d);
	wtp_error err;
	if (wtp_open(&k->p, k->buf, k->len, 0, &err) != WTP_OK)
		fail_msg("%s", err.msg);
}

/* The page's values of layer id, channel c, as the writer clamps them. */
static float baked(const struct wb_page *pg, int id, int i, int c)
{
	float v = id == WB_LAYER_FLOW ? pg->flow[2 * i + c]
		  : id == WB_LAYER_DISTANCE ? pg->distance[i] : pg->foam[i];
	if (id == WB_LAYER_FOAM)
		return v < 0 ? 0 : v > 1 ? 1 : v;
	return v > 65504.0f ? 65504.0f : v < -65504.0f ? -65504.0f : v;
}

/* Every DATA page of every LOD: BC planes decoded by the reference
 * decoder within the per-block bound of section 4.1 of the baked values,
 * the scale the page's largest |value|, the reader's wtp_pixel equal to
 * the reference; height and material planes byte-equal to the 2.0 pack's.
 * Returns the largest error relative to the scale. */
static double check_pages(const struct wb_pageset *ps, const struct pk *bc,
			  const struct pk *plain)
{
	unsigned char *raw = malloc(bc->p.page_raw_size);
	unsigned char *work = malloc(bc->p.page_raw_size);
	unsigned char *raw0 = malloc(plain->p.page_raw_size);
	unsigned char *work0 = malloc(plain->p.page_raw_size);
	assert_true(raw && work && raw0 && work0);
	double worst = 0;
	long pages = 0;
	for (int k = 0; k < ps->n_lods; k++) {
		const struct wb_lod_pages *L = &ps->lods[k];
		for (long s = 0; s < (long)L->px * L->py; s++) {
			const struct wb_page *pg = &L->pages[s];
			wtp_vat_entry e, e0;
			assert_int_equal(wtp_vat(&bc->p, (uint32_t)k, (uint32_t)(s % L->px),
						 (uint32_t)(s / L->px), &e, NULL), WTP_OK);
			assert_int_equal(wtp_vat(&plain->p, (uint32_t)k,
						 (uint32_t)(s % L->px),
						 (uint32_t)(s / L->px), &e0, NULL), WTP_OK);
			assert_int_equal(e.state, e0.state);
			assert_true(memcmp(&e.height, &e0.height, 4) == 0);
			if (e.state != WTP_DATA)
				continue;
			pages++;
			assert_int_equal(wtp_page_read(&bc->p, e.page, NULL, 0, raw,
						       work, NULL), WTP_OK);
			assert_int_equal(wtp_page_read(&plain->p, e0.page, NULL, 0,
						       raw0, work0, NULL), WTP_OK);
			for (uint32_t li = 0; li < bc->p.n_layers; li++) {
				wtp_layer l, l0;
				wtp_layer_get(&bc->p, li, &l);
				wtp_layer_get(&plain->p, li, &l0);
				assert_int_equal(l.id, l0.id);
				if (l.format < WTP_FMT_BC5_SNORM) {
					assert_int_equal(l.format, l0.format);
					assert_memory_equal(raw + l.plane_offset,
							    raw0 + l0.plane_offset,
							    l.plane_size);
					continue;
				}
				const int snorm = l.format != WTP_FMT_BC4_UNORM;
				const double M = snorm ? 127 : 255;
				const int nc = l.components, bb = 8 * nc;
				const unsigned char *pl = raw + l.plane_offset;
				for (int c = 0; c < nc; c++) {
					float sc, want = 0;
					memcpy(&sc, pl + 4 * c, 4);
					for (int i = 0; i < 130 * 130; i++)
						want = fmaxf(want, fabsf(baked(pg, l.id, i, c)));
					assert_true(sc == want);
					for (int by = 0; by < 33; by++)
						for (int bx = 0; bx < 33; bx++) {
							double lo = 1e9, hi = -1e9;
							for (int j = 0; j < 16; j++) {
								int x = 4 * bx + j % 4, y = 4 * by + j / 4;
								x = x > 129 ? 129 : x;
								y = y > 129 ? 129 : y;
								double t = sc > 0 ? baked(pg, l.id, x + 130 * y, c) / sc * M : 0;
								lo = fmin(lo, t), hi = fmax(hi, t);
							}
							double bound = sc / M * bc4_block_bound(lo, hi) + 1e-6 * sc;
							const unsigned char *blk = pl + WTP_BC_HEADER +
										   (bx + 33 * by) * bb + 8 * c;
							for (int j = 0; j < 16; j++) {
								int x = 4 * bx + j % 4, y = 4 * by + j / 4;
								if (x > 129 || y > 129)
									continue;
								int i = x + 130 * y;
								float r = sc * ref_texel(blk, snorm, j % 4, j / 4);
								float lib = wtp_pixel(&l, raw, (uint32_t)i,
										      (uint32_t)c, 0);
								assert_memory_equal(&r, &lib, 4);
								double err = fabs((double)r - baked(pg, l.id, i, c));
								assert_true(err <= bound);
								if (sc > 0 && err / sc > worst)
									worst = err / sc;
							}
						}
				}
			}
		}
	}
	assert_true(pages > 0);
	free(raw);
	free(work);
	free(raw0);
	free(work0);
	return worst;
}

static void test_roundtrip(void **state)
{
	(void)state;
	struct wb_pageset ps;
	struct pk bc, plain;
	make(&ps, 1100, 300, 2, 0.003);
	write_open(&ps, "bc_plain.wtp", 0, &plain);
	ps.bc_layers = BC_ALL;
	write_open(&ps, "bc_all.wtp", 0, &bc);
	/* 2.1 with BC formats; without BC the pack stays 2.0 */
	assert_int_equal(bc.p.version_minor, 1);
	assert_int_equal(plain.p.version_minor, 0);
	static const uint8_t fmt[5] = { WTP_FMT_R16F, WTP_FMT_BC5_SNORM,
					WTP_FMT_R8_UINT, WTP_FMT_BC4_SNORM,
					WTP_FMT_BC4_UNORM };
	for (uint32_t i = 0; i < 5; i++) {
		wtp_layer l;
		wtp_layer_get(&bc.p, i, &l);
		assert_int_equal(l.format, fmt[i]);
	}
	assert_int_equal(bc.p.page_raw_size, pack_page_raw_size_bc(ALL_LAYERS, BC_ALL));
	/* 2 x 16900 height + 16 + 33*33*16 flow + 16900 material + 2 x
	   (16 + 33*33*8) distance, foam */
	assert_int_equal(bc.p.page_raw_size, 33800 + 17440 + 16900 + 8728 + 8728);
	unsigned char *raw = malloc(bc.p.page_raw_size);
	unsigned char *work = malloc(bc.p.page_raw_size);
	wtp_error err;
	if (wtp_verify(&bc.p, raw, work, &err) != WTP_OK)
		fail_msg("%s", err.msg);
	/* same pages deduplicated (the periodic lake) */
	assert_int_equal(bc.p.n_pages, plain.p.n_pages);
	assert_true(bc.len < plain.len);
	double worst = check_pages(&ps, &bc, &plain);
	print_message("synthetic pack: largest BC error %.4f of the page scale\n",
		      worst);
	free(raw);
	free(work);
	free(bc.buf);
	free(plain.buf);
	wb_pageset_free(&ps);
}

/* Each BC layer alone; a writer asked to compress height or material
 * refuses. */
static void test_per_layer(void **state)
{
	(void)state;
	struct wb_pageset ps;
	struct pk plain;
	make(&ps, 700, 200, 1, 0);
	write_open(&ps, "bc_pl_plain.wtp", 0, &plain);
	static const int ids[3] = { WB_LAYER_FLOW, WB_LAYER_DISTANCE, WB_LAYER_FOAM };
	for (int n = 0; n < 3; n++) {
		struct pk one;
		ps.bc_layers = 1u << ids[n];
		write_open(&ps, "bc_pl_one.wtp", 0, &one);
		for (uint32_t i = 0; i < one.p.n_layers; i++) {
			wtp_layer l;
			wtp_layer_get(&one.p, i, &l);
			assert_int_equal(l.format >= WTP_FMT_BC5_SNORM, l.id == ids[n]);
		}
		check_pages(&ps, &one, &plain);
		free(one.buf);
	}
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_pack_meta m;
	memset(&m, 0, sizeof m);
	ps.bc_layers = 1u << WB_LAYER_MATERIAL;
	assert_int_equal(pack_write(TMP "/bc_bad.wtp", &ps, &m, NULL, &d), WB_EINPUT);
	assert_non_null(strstr(d.v[0].msg, "block compression"));
	wb_diags_release(&d);
	free(plain.buf);
	wb_pageset_free(&ps);
}

/* The raw blocks into a 256-byte row pitch with their scales, rows equal
 * to the packed plane, padding untouched; the software decoder on them
 * equals wtp_pixel. FLAT and EMPTY expansions decode to flow 0, foam 0
 * and distance +-(float)distance_max. */
static void test_pitch_expand(void **state)
{
	(void)state;
	struct wb_pageset ps;
	struct pk bc;
	make(&ps, 1100, 300, 1, 0.003);
	ps.bc_layers = BC_ALL;
	write_open(&ps, "bc_pitch.wtp", 0, &bc);
	const wtp_pack *p = &bc.p;
	unsigned char *raw = malloc(p->page_raw_size);
	unsigned char *work = malloc(p->page_raw_size);
	const size_t pitch = 768, slice = pitch * 130;
	unsigned char *up = malloc(slice * WTP_LAYER_COUNT);
	float *f = malloc(130 * 130 * 2 * sizeof *f);
	assert_true(raw && work && up && f);
	int seen[3] = { 0, 0, 0 };
	for (uint32_t y = 0; y < 3; y++)
		for (uint32_t x = 0; x < 9; x++) {
			wtp_vat_entry e;
			if (wtp_vat(p, 0, x, y, &e, NULL) != WTP_OK)
				continue;
			seen[e.state] = 1;
			wtp_plane_dst dst[WTP_LAYER_COUNT];
			for (uint32_t i = 0; i < p->n_layers; i++)
				dst[i].data = up + slice * i, dst[i].row_pitch = pitch;
			memset(up, 0xAB, slice * WTP_LAYER_COUNT);
			float sc[2 * WTP_LAYER_COUNT];
			if (e.state == WTP_DATA) {
				assert_int_equal(wtp_page_decode_ex(p, e.page, NULL, 0, dst, sc,
								    work, NULL, NULL), WTP_OK);
				assert_int_equal(wtp_page_read(p, e.page, NULL, 0, raw,
							       work, NULL), WTP_OK);
			} else {
				assert_int_equal(wtp_page_expand_ex(p, &e, dst, sc, NULL),
						 WTP_OK);
				assert_int_equal(wtp_page_expand_read(p, &e, raw, NULL),
						 WTP_OK);
			}
			for (uint32_t i = 0; i < p->n_layers; i++) {
				wtp_layer l;
				wtp_layer_get(p, i, &l);
				uint32_t rows, rb;
				assert_int_equal(wtp_plane_rows(p, &l, &rows, &rb), WTP_OK);
				int isbc = l.format >= WTP_FMT_BC5_SNORM;
				assert_int_equal(rows, isbc ? 33 : 130);
				const unsigned char *pl = raw + l.plane_offset +
							  (isbc ? WTP_BC_HEADER : 0);
				for (uint32_t r = 0; r < 130; r++) {
					const unsigned char *row = up + slice * i + r * pitch;
					if (r < rows)
						assert_memory_equal(row, pl + r * rb, rb);
					for (size_t b = r < rows ? rb : 0; b < pitch; b++)
						assert_int_equal(row[b], 0xAB);
				}
				if (!isbc)
					continue;
				float hs[2] = { 0, 0 };
				memcpy(hs, raw + l.plane_offset, 4 * l.components);
				assert_true(sc[2 * i] == hs[0]);
				assert_int_equal(wtp_bc_decode(l.format, up + slice * i, pitch,
							       sc + 2 * i, f,
							       130 * l.components * sizeof *f),
						 WTP_OK);
				for (uint32_t t = 0; t < 130 * 130; t++)
					for (uint32_t c = 0; c < l.components; c++) {
						float a = f[t * l.components + c];
						float b = wtp_pixel(&l, raw, t, c, 0);
						assert_memory_equal(&a, &b, 4);
						if (e.state == WTP_DATA)
							continue;
						float want = l.id != WB_LAYER_DISTANCE ? 0.0f
							     : e.state == WTP_FLAT
								     ? (float)p->distance_max
								     : -(float)p->distance_max;
						assert_true(a == want);
					}
			}
		}
	assert_true(seen[WTP_EMPTY] && seen[WTP_FLAT] && seen[WTP_DATA]);
	free(raw);
	free(work);
	free(up);
	free(f);
	free(bc.buf);
	wb_pageset_free(&ps);
}

/* Equal inputs give equal bytes whatever the thread count. */
static void test_threads(void **state)
{
	(void)state;
	struct wb_pageset ps;
	struct pk a, b;
	make(&ps, 1100, 300, 2, 0.01);
	ps.bc_layers = BC_ALL;
	int nt = omp_get_max_threads();
	omp_set_num_threads(1);
	write_open(&ps, "bc_t1.wtp", 0, &a);
	omp_set_num_threads(3);
	write_open(&ps, "bc_t3.wtp", 0, &b);
	omp_set_num_threads(nt);
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.buf, b.buf, a.len);
	free(a.buf);
	free(b.buf);
	wb_pageset_free(&ps);
}

/* Replace page 'page' of the pack in memory by 'raw' stored RAW (the
 * pack is written with 1 MiB alignment, so it fits in place), fixing the
 * directory entry and the tables CRC, so that only the BC checks can
 * object. */
static void restore_raw(struct pk *k, uint32_t page, const unsigned char *raw)
{
	wtp_page_info_t pi;
	assert_int_equal(wtp_page_info(&k->p, page, &pi, NULL), WTP_OK);
	unsigned char *b = k->buf;
	memset(b + pi.offset, 0, pi.stored_size);
	memcpy(b + pi.offset, raw, k->p.page_raw_size);
	unsigned char *d = b + k->p.page_dir_offset + 32u * page;
	uint32_t n = k->p.page_raw_size, c = (uint32_t)crc32(0L, raw, n);
	for (int i = 0; i < 4; i++) {
		d[8 + i] = (unsigned char)(n >> (8 * i));
		d[16 + i] = (unsigned char)(c >> (8 * i));
	}
	d[20] = WTP_CODEC_RAW;
	memset(b + 28, 0, 4);
	uint32_t t = (uint32_t)crc32(0L, b, k->p.tables_size);
	for (int i = 0; i < 4; i++)
		b[28 + i] = (unsigned char)(t >> (8 * i));
	assert_int_equal(wtp_open(&k->p, k->buf, k->len, 0, NULL), WTP_OK);
}

static void test_corrupt(void **state)
{
	(void)state;
	struct wb_pageset ps;
	struct pk k;
	make(&ps, 700, 150, 1, 0.003);
	ps.bc_layers = BC_ALL;
	write_open(&ps, "bc_corrupt.wtp", 1u << 20, &k);
	const uint32_t rs = k.p.page_raw_size, pg = k.p.n_pages - 1;
	unsigned char *raw = malloc(rs), *bad = malloc(rs), *work = malloc(rs);
	unsigned char *orig = malloc(k.len);
	assert_true(raw && bad && work && orig);
	memcpy(orig, k.buf, k.len);
	assert_int_equal(wtp_page_read(&k.p, pg, NULL, 0, raw, work, NULL), WTP_OK);
	wtp_layer lf, ld;
	wtp_layer_get(&k.p, 1, &lf); /* flow BC5 */
	wtp_layer_get(&k.p, 3, &ld); /* distance BC4 SNORM */
	/* the RAW rewrite itself is a valid page */
	restore_raw(&k, pg, raw);
	assert_int_equal(wtp_page_read(&k.p, pg, NULL, 0, bad, work, NULL), WTP_OK);
	assert_memory_equal(bad, raw, rs);
	assert_int_equal(wtp_verify(&k.p, bad, work, NULL), WTP_OK);
	static const struct {
		int layer, off;
		unsigned char v[4];
		const char *msg;
	} cases[] = {
		{ 1, 0, { 0x00, 0x00, 0xC0, 0x7F }, "header bad" },  /* NaN scale */
		{ 1, 4, { 0x00, 0x00, 0x80, 0xBF }, "header bad" },  /* -1 */
		{ 1, 0, { 0x00, 0x00, 0x80, 0x7F }, "header bad" },  /* +inf */
		{ 1, 12, { 1, 0, 0, 0 }, "header bad" },             /* reserved */
		{ 3, 4, { 0x00, 0x00, 0x80, 0x3F }, "header bad" },  /* 2nd scale */
		{ 3, 4, { 0x00, 0x00, 0x00, 0x80 }, "header bad" },  /* -0 */
		{ 1, WTP_BC_HEADER + 8 * 50, { 0x80 }, "-128" },   /* SNORM -128 */
		{ 3, WTP_BC_HEADER + 8 * 77 + 1, { 0x80 }, "-128" },
	};
	for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
		memcpy(bad, raw, rs);
		const wtp_layer *l = cases[n].layer == 1 ? &lf : &ld;
		memcpy(bad + l->plane_offset + cases[n].off, cases[n].v,
		       cases[n].off >= WTP_BC_HEADER ? 1 : 4);
		memcpy(k.buf, orig, k.len);
		assert_int_equal(wtp_open(&k.p, k.buf, k.len, 0, NULL), WTP_OK);
		restore_raw(&k, pg, bad);
		wtp_error err;
		assert_int_equal(wtp_page_read(&k.p, pg, NULL, 0, work, bad, &err),
				 WTP_ECORRUPT);
		assert_non_null(strstr(err.msg, cases[n].msg));
		assert_non_null(strstr(err.msg, wtp_layer_name(l->id)));
		assert_int_equal(wtp_verify(&k.p, work, bad, &err), WTP_ECORRUPT);
		/* the other pages still read */
		for (uint32_t i = 0; i < pg; i++)
			assert_int_equal(wtp_page_read(&k.p, i, NULL, 0, work, bad, NULL),
					 WTP_OK);
	}
	free(raw);
	free(bad);
	free(work);
	free(orig);
	free(k.buf);
	wb_pageset_free(&ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_per_layer),
		cmocka_unit_test(test_pitch_expand),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_corrupt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
