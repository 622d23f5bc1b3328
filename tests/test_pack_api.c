/*
 * test_pack_api.c - the engine-facing calls of include/wtp.h (format 2.0):
 * decode into a caller's row pitch, FLAT / EMPTY expansion, world position
 * to page and texel, per-format GPU values, the zlib allocator hook, error
 * messages through wtp_error, and concurrent reads of one const pack.
 * Packs are synthesised at test time (tests/pack_synth.h) into tests/tmp/.
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

#include "pack.h"
#include "util.h"
#include "wtp.h"
#include "pack_synth.h"

#define TMP "tests/tmp"
#define ALL_LAYERS ((1u << WB_LAYER_COUNT) - 1)

struct fixture {
	struct wb_pageset ps;
	unsigned char *buf;
	size_t len;
	wtp_pack p;
};

static void fixture_make(struct fixture *f, const char *path)
{
	struct synth_opts o = { 1100, 300, 2, ALL_LAYERS, 1.0, 0.003, 0 };
	memset(f, 0, sizeof *f);
	assert_int_equal(synth_pageset(&o, &f->ps), 0);
	struct wb_pack_meta m;
	memset(&m, 0, sizeof m);
	m.scene_name = "api";
	struct wb_diags d;
	wb_diags_init(&d);
	mkdir(TMP, 0777);
	assert_int_equal(pack_write(path, &f->ps, &m, NULL, &d), WB_OK);
	assert_int_equal(wb_read_file(path, &f->buf, &f->len, &d), WB_OK);
	wb_diags_release(&d);
	assert_int_equal(wtp_open(&f->p, f->buf, f->len, 0, NULL), WTP_OK);
}

static void fixture_free(struct fixture *f)
{
	wb_pageset_free(&f->ps);
	free(f->buf);
}

/* Pitched decode: each layer into rows of 256-byte multiples (D3D12),
 * padding untouched, rows equal to the packed decode. */
static void test_row_pitch(void **state)
{
	(void)state;
	struct fixture f;
	fixture_make(&f, TMP "/api_pitch.wtp");
	const wtp_pack *p = &f.p;
	unsigned char *raw = malloc(p->page_raw_size), *work = malloc(p->page_raw_size);
	size_t pitch[WTP_LAYER_COUNT], total = 0;
	wtp_plane_dst dst[WTP_LAYER_COUNT];
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_format_desc fd;
		wtp_layer_get(p, i, &l);
		assert_int_equal(wtp_format_info(l.format, &fd), WTP_OK);
		assert_int_equal(fd.bytes_per_pixel, (uint32_t)l.components * l.component_bytes);
		pitch[i] = (130 * fd.bytes_per_pixel + 255) / 256 * 256;
		total += pitch[i] * 130;
	}
	unsigned char *up = malloc(total);
	for (uint32_t pg = 0; pg < p->n_pages; pg++) {
		memset(up, 0xA5, total);
		size_t off = 0;
		for (uint32_t i = 0; i < p->n_layers; i++) {
			dst[i].data = up + off;
			dst[i].row_pitch = pitch[i];
			off += pitch[i] * 130;
		}
		assert_int_equal(wtp_page_decode(p, pg, NULL, 0, dst, work, NULL, NULL),
				 WTP_OK);
		assert_int_equal(wtp_page_read(p, pg, NULL, 0, raw, work, NULL), WTP_OK);
		for (uint32_t i = 0; i < p->n_layers; i++) {
			wtp_layer l;
			wtp_layer_get(p, i, &l);
			size_t rowb = 130u * l.components * l.component_bytes;
			for (uint32_t r = 0; r < 130; r++) {
				const unsigned char *row = (unsigned char *)dst[i].data + r * pitch[i];
				assert_memory_equal(row, raw + l.plane_offset + r * rowb, rowb);
				for (size_t k = rowb; k < pitch[i]; k++)
					assert_int_equal(row[k], 0xA5);
			}
		}
	}
	/* a pitch below one row is refused with a message */
	wtp_error err;
	wtp_layer_dst(p, raw, dst);
	dst[0].row_pitch = 259;
	assert_int_equal(wtp_page_decode(p, 0, NULL, 0, dst, work, NULL, &err), WTP_EARG);
	assert_string_equal(err.msg, "layer 0: row pitch 259 below 260 bytes");
	free(up);
	free(raw);
	free(work);
	fixture_free(&f);
}

/* FLAT / EMPTY expansion: the texels a DATA page of the same content
 * would hold (section 6). */
static void test_expand(void **state)
{
	(void)state;
	struct fixture f;
	fixture_make(&f, TMP "/api_expand.wtp");
	const wtp_pack *p = &f.p;
	unsigned char *raw = malloc(p->page_raw_size);
	wtp_plane_dst dst[WTP_LAYER_COUNT];
	wtp_layer_dst(p, raw, dst);
	wtp_layer l[WTP_LAYER_COUNT];
	for (uint32_t i = 0; i < p->n_layers; i++)
		wtp_layer_get(p, i, &l[i]);
	int seen[3] = { 0, 0, 0 };
	wtp_lod L;
	wtp_lod_get(p, 0, &L);
	for (uint32_t y = 0; y < L.py; y++)
		for (uint32_t x = 0; x < L.px; x++) {
			wtp_vat_entry e;
			wtp_vat(p, 0, x, y, &e, NULL);
			if (e.state == WTP_DATA) {
				assert_int_equal(wtp_page_expand(p, &e, dst, NULL), WTP_EARG);
				continue;
			}
			seen[e.state]++;
			memset(raw, 0x5A, p->page_raw_size);
			assert_int_equal(wtp_page_expand(p, &e, dst, NULL), WTP_OK);
			int flat = e.state == WTP_FLAT;
			for (uint32_t i = 0; i < p->page_pixels; i++) {
				float h = wtp_pixel(&l[0], raw, i, 0, e.height);
				assert_true(flat ? h == e.height : h == WTP_DRY_HEIGHT);
				const unsigned char *fl = raw + l[1].plane_offset + 4 * i;
				assert_true(fl[0] == 0 && fl[1] == 0 && fl[2] == 0 && fl[3] == 0);
				assert_int_equal(raw[l[2].plane_offset + i], flat ? e.material : 0);
				const unsigned char *di = raw + l[3].plane_offset + 2 * i;
				uint16_t want = pack_half((float)(flat ? 16.0 : -16.0));
				assert_int_equal(di[0] | di[1] << 8, want);
				assert_int_equal(raw[l[4].plane_offset + i], 0);
			}
		}
	assert_true(seen[WTP_EMPTY] > 0 && seen[WTP_FLAT] > 0);
	free(raw);
	fixture_free(&f);
}

/* World position -> (page, texel): the texel's LOD pixel is the one
 * containing the position, at every LOD; outside the grid is refused. */
static void test_locate(void **state)
{
	(void)state;
	struct fixture f;
	fixture_make(&f, TMP "/api_locate.wtp");
	const wtp_pack *p = &f.p;
	uint32_t s = 99;
	for (int it = 0; it < 5000; it++) {
		uint32_t k = (uint32_t)it % p->n_lods;
		wtp_lod L;
		wtp_lod_get(p, k, &L);
		s = s * 1664525u + 1013904223u;
		double X = (double)(s >> 8) / 16777216.0 * L.px * 128;
		s = s * 1664525u + 1013904223u;
		double Y = (double)(s >> 8) / 16777216.0 * L.py * 128;
		double wx = p->origin[0] + X * L.dx, wy = p->origin[1] + Y * L.dx;
		wtp_location at;
		assert_int_equal(wtp_locate(p, k, wx, wy, &at, NULL), WTP_OK);
		uint32_t i = (uint32_t)floor((wx - p->origin[0]) / L.dx);
		uint32_t j = (uint32_t)floor((wy - p->origin[1]) / L.dx);
		assert_int_equal(at.x, i / 128);
		assert_int_equal(at.y, j / 128);
		/* the stored pixel under (tx, ty) is LOD pixel (i, j) */
		assert_int_equal(at.x * 128 + (uint32_t)floorf(at.tx) - 1, i);
		assert_int_equal(at.y * 128 + (uint32_t)floorf(at.ty) - 1, j);
		assert_true(at.tx >= 1 && at.tx < 129 && at.ty >= 1 && at.ty < 129);
		assert_true(fabsf(at.u * 130 - at.tx) < 1e-3f);
		assert_int_equal(at.inside, i < L.nx && j < L.ny);
	}
	wtp_location at;
	wtp_error err;
	assert_int_equal(wtp_locate(p, 0, p->origin[0] - 1, p->origin[1], &at, &err),
			 WTP_EARG);
	assert_non_null(strstr(err.msg, "outside LOD 0"));
	assert_int_equal(wtp_locate(p, 7, p->origin[0], p->origin[1], &at, &err), WTP_EARG);
	fixture_free(&f);
}

static void test_format_info(void **state)
{
	(void)state;
	wtp_format_desc d;
	assert_int_equal(wtp_format_info(WTP_FMT_R16F, &d), WTP_OK);
	assert_true(d.bytes_per_pixel == 2 && d.dxgi_format == 54 && d.vk_format == 76);
	assert_int_equal(wtp_format_info(WTP_FMT_RG16F, &d), WTP_OK);
	assert_true(d.bytes_per_pixel == 4 && d.components == 2 && d.dxgi_format == 34 &&
		    d.vk_format == 83);
	assert_int_equal(wtp_format_info(WTP_FMT_R8_UINT, &d), WTP_OK);
	assert_true(d.bytes_per_pixel == 1 && d.dxgi_format == 62 && d.vk_format == 13);
	assert_int_equal(wtp_format_info(WTP_FMT_R8_UNORM, &d), WTP_OK);
	assert_true(d.bytes_per_pixel == 1 && d.dxgi_format == 61 && d.vk_format == 9);
	assert_int_equal(wtp_format_info(0, &d), WTP_EARG);
	/* 5..7: the BC formats of 2.1 (tests/test_bc.c) */
	assert_int_equal(wtp_format_info(WTP_FMT_COUNT, &d), WTP_EARG);
	/* the header's f16 conversion is the writer's */
	for (uint32_t u = 0; u < 0x7f800000u; u += 4099) {
		float x;
		memcpy(&x, &u, 4);
		assert_int_equal(wtp_float_to_half(x), pack_half(x));
		assert_int_equal(wtp_float_to_half(-x), pack_half(-x));
	}
}

struct counting {
	int allocs, frees, fail;
	size_t bytes;
};
static void *c_alloc(void *user, size_t n)
{
	struct counting *c = user;
	if (c->fail)
		return NULL;
	c->allocs++;
	c->bytes += n;
	return malloc(n);
}
static void c_free(void *user, void *ptr)
{
	struct counting *c = user;
	c->frees++;
	free(ptr);
}

/* zlib allocates through the caller's allocator, frees all it took, and
 * an allocator that fails gives WTP_EZLIB with a message. */
static void test_allocator(void **state)
{
	(void)state;
	struct fixture f;
	fixture_make(&f, TMP "/api_alloc.wtp");
	const wtp_pack *p = &f.p;
	unsigned char *raw = malloc(p->page_raw_size), *work = malloc(p->page_raw_size);
	wtp_plane_dst dst[WTP_LAYER_COUNT];
	wtp_layer_dst(p, raw, dst);
	struct counting c = { 0, 0, 0, 0 };
	wtp_allocator a = { c_alloc, c_free, &c };
	uint32_t zpages = 0;
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t pi;
		wtp_page_info(p, i, &pi, NULL);
		zpages += pi.codec != WTP_CODEC_RAW;
		assert_int_equal(wtp_page_decode(p, i, NULL, 0, dst, work, &a, NULL), WTP_OK);
		assert_int_equal(wtp_hash64(raw, p->page_raw_size), pi.hash);
	}
	assert_true(zpages > 0);
	assert_true(c.allocs >= (int)zpages);
	assert_int_equal(c.allocs, c.frees);
	print_message("allocator: %d allocations, %zu bytes for %u zlib pages\n", c.allocs,
		      c.bytes, zpages);
	c.fail = 1;
	wtp_error err;
	uint32_t z = 0;
	while (z < p->n_pages) {
		wtp_page_info_t pi;
		wtp_page_info(p, z, &pi, NULL);
		if (pi.codec != WTP_CODEC_RAW)
			break;
		z++;
	}
	assert_int_equal(wtp_page_decode(p, z, NULL, 0, dst, work, &a, &err), WTP_EZLIB);
	assert_int_equal(err.code, WTP_EZLIB);
	assert_non_null(strstr(err.msg, "out of memory"));
	free(raw);
	free(work);
	fixture_free(&f);
}

/* Four threads decode every page of one const pack at once, each with its
 * own buffers and wtp_error; results equal the serial decode. */
static void test_threads(void **state)
{
	(void)state;
	struct fixture f;
	fixture_make(&f, TMP "/api_threads.wtp");
	const wtp_pack *p = &f.p;
	uint64_t *h = calloc(p->n_pages, sizeof *h);
	int bad = 0;
#pragma omp parallel num_threads(4) reduction(+ : bad)
	{
		unsigned char *raw = malloc(p->page_raw_size), *work = malloc(p->page_raw_size);
		wtp_error err;
#pragma omp for schedule(dynamic, 1)
		for (long i = 0; i < (long)p->n_pages * 4; i++) {
			uint32_t pg = (uint32_t)(i % p->n_pages);
			if (wtp_page_read(p, pg, NULL, 0, raw, work, &err) != WTP_OK) {
				bad++;
				continue;
			}
			uint64_t v = wtp_hash64(raw, p->page_raw_size);
			wtp_page_info_t pi;
			wtp_page_info(p, pg, &pi, &err);
			bad += v != pi.hash;
			if (i < (long)p->n_pages)
				h[pg] = v;
		}
		free(raw);
		free(work);
	}
	assert_int_equal(bad, 0);
	for (uint32_t i = 0; i < p->n_pages; i++)
		assert_true(h[i] != 0);
	free(h);
	fixture_free(&f);
}

/* Errors name what failed; no message field lives in the pack. */
static void test_errors(void **state)
{
	(void)state;
	struct fixture f;
	fixture_make(&f, TMP "/api_err.wtp");
	wtp_error err;
	wtp_vat_entry e;
	assert_int_equal(wtp_vat(&f.p, 0, 99, 0, &e, &err), WTP_EARG);
	assert_string_equal(err.msg, "page (99, 0) outside LOD 0 (9 x 3 pages)");
	assert_int_equal(wtp_vat(&f.p, 0, 99, 0, &e, NULL), WTP_EARG);
	unsigned char v1[128];
	memcpy(v1, f.buf, 128);
	v1[8] = 1; /* version 1.0 */
	wtp_pack q;
	assert_int_equal(wtp_open(&q, v1, sizeof v1, 0, &err), WTP_EVERSION);
	assert_string_equal(err.msg, "format version 1.0, this reader reads 2.x (re-bake: "
				     "version 1 heights are not seam-exact)");
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_row_pitch),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_locate),
		cmocka_unit_test(test_format_info),
		cmocka_unit_test(test_allocator),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
