/*
 * test_preview.c - the preview pictures (src/preview.c): shaded relief
 * against the analytic cosine, legends and swatches present, material
 * colours from the scene's kinds, thin water kept when large maps are
 * pooled, arrows that follow the flow, equal bytes for equal input.
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
#include <unistd.h>

#include "maps.h"
#include "preview.h"
#include "util.h"

/* ---- synthetic maps ---------------------------------------------------- */

struct world {
	struct wb_maps m;
	float *terrain;
};

/* nx x ny, terrain sloping down to the east (z = 0.1 * (nx - i) * dx),
 * wet in columns [w0, w1) with depth 0.5 + row / ny, flow (u, v), material
 * id mat. */
static void world_init(struct world *w, int nx, int ny, int w0, int w1,
		       float u, float v, int mat)
{
	size_t n = (size_t)nx * ny;
	memset(w, 0, sizeof *w);
	w->m.nx = nx;
	w->m.ny = ny;
	w->m.dx = 1.0;
	w->m.height = malloc(n * sizeof(float));
	w->m.u = malloc(n * sizeof(float));
	w->m.v = malloc(n * sizeof(float));
	w->m.depth = malloc(n * sizeof(float));
	w->m.distance = malloc(n * sizeof(float));
	w->m.material = malloc(n);
	w->terrain = malloc(n * sizeof(float));
	assert_non_null(w->m.height && w->m.u && w->m.v && w->m.depth &&
			w->m.distance && w->m.material && w->terrain);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)j * nx + i;
			int wet = i >= w0 && i < w1;
			w->terrain[k] = (float)(0.1 * (nx - i));
			w->m.depth[k] = wet ? (float)(0.5 + (double)j / ny) : 0.0f;
			w->m.height[k] = wet ? w->terrain[k] + w->m.depth[k] : WB_DRY_HEIGHT;
			w->m.u[k] = wet ? u : 0.0f;
			w->m.v[k] = wet ? v : 0.0f;
			w->m.material[k] = (uint8_t)(wet ? mat : 0);
			w->m.distance[k] = wet ? 1.0f : -1.0f;
		}
}

static void world_free(struct world *w)
{
	maps_free(&w->m);
	free(w->terrain);
}

static struct preview_in input(const struct world *w)
{
	struct preview_in in = { 0 };
	in.m = &w->m;
	in.terrain = w->terrain;
	in.scene = "unit";
	in.distance_max = 8;
	return in;
}

static void render(const struct preview_in *in, enum preview_kind k,
		   struct preview_image *img)
{
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(preview_render(in, k, img, &d), WB_OK);
	wb_diags_release(&d);
	int w, h;
	preview_canvas_size(in->m->nx, in->m->ny, &w, &h);
	assert_int_equal(img->w, w);
	assert_int_equal(img->h, h);
}

/* Pixels of img within rows [y0, y1) equal to rgb (within tol per
 * channel). */
static long count_rgb(const struct preview_image *img, int y0, int y1,
		      int r, int g, int b, int tol)
{
	long n = 0;
	for (int y = y0 < 0 ? 0 : y0; y < y1 && y < img->h; y++)
		for (int x = 0; x < img->w; x++) {
			const uint8_t *p = img->rgb + 3 * ((size_t)y * img->w + x);
			n += abs(p[0] - r) <= tol && abs(p[1] - g) <= tol &&
			     abs(p[2] - b) <= tol;
		}
	return n;
}

/* ---- tests ------------------------------------------------------------- */

static void test_hillshade_planes(void **state)
{
	(void)state;
	enum { N = 9 };
	float z[N * N], s[N * N];
	/* flat ground: cos(45 degrees) everywhere, edges included */
	for (int k = 0; k < N * N; k++)
		z[k] = 5.0f;
	preview_hillshade(z, N, N, 2.0, s);
	for (int k = 0; k < N * N; k++)
		assert_float_equal(s[k], sqrt(0.5), 1e-6);
	/* rising to the east with slope a: faces west, half toward a light
	   from the north-west: (a/2 + sqrt(1/2)) / sqrt(1 + a^2) */
	const double as[3] = { 0.25, 1.0, 3.0 };
	for (int t = 0; t < 3; t++) {
		for (int j = 0; j < N; j++)
			for (int i = 0; i < N; i++)
				z[j * N + i] = (float)(as[t] * i * 2.0);
		preview_hillshade(z, N, N, 2.0, s);
		double want = (as[t] / 2 + sqrt(0.5)) / sqrt(1 + as[t] * as[t]);
		for (int k = 0; k < N * N; k++)
			assert_float_equal(s[k], want, 1e-5);
	}
	/* a steep face toward the south-east is in shadow: 0 */
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++)
			z[j * N + i] = (float)(-4.0 * (i + j));
	preview_hillshade(z, N, N, 1.0, s);
	assert_float_equal(s[4 * N + 4], 0.0, 1e-9);
	/* rows run south: rising to the south faces north, lit as the
	   east-rising plane; rising to the north faces south, darker */
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++)
			z[j * N + i] = (float)j;
	preview_hillshade(z, N, N, 1.0, s);
	assert_float_equal(s[4 * N + 4], (0.5 + sqrt(0.5)) / sqrt(2.0), 1e-5);
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++)
			z[j * N + i] = (float)-j;
	preview_hillshade(z, N, N, 1.0, s);
	assert_float_equal(s[4 * N + 4], (sqrt(0.5) - 0.5) / sqrt(2.0), 1e-5);
}

static void test_depth_legend_and_title(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 200, 150, 80, 120, 0.5f, 0.0f, 1);
	struct preview_in in = input(&w);
	struct preview_image img;
	render(&in, PREVIEW_DEPTH, &img);
	int cw, ch;
	preview_canvas_size(200, 150, &cw, &ch);
	/* 200 px enlarged 5x to 1000: map rows 52 .. 52 + 750 */
	int map_end = ch - 120;
	/* the colour bar: both ends of the depth ramp below the map */
	assert_true(count_rgb(&img, map_end, ch, 214, 242, 250, 2) >= 20);
	assert_true(count_rgb(&img, map_end, ch, 8, 48, 107, 2) >= 20);
	/* text: ink in the title band and in the legend */
	assert_true(count_rgb(&img, 0, 50, 32, 32, 36, 0) > 200);
	assert_true(count_rgb(&img, map_end, ch, 32, 32, 36, 0) > 500);
	/* water pixels are blue: in the middle of the wet band */
	const uint8_t *p = img.rgb + 3 * ((size_t)(52 + 375) * cw + cw / 2);
	assert_true(p[2] > p[0] + 40);
	/* dry land left of the band is not blue (tinted relief) */
	p = img.rgb + 3 * ((size_t)(52 + 375) * cw + cw / 2 - 300);
	assert_true(p[0] >= p[2]);
	preview_image_release(&img);
	/* without terrain: no depth picture from a pack, others on grey */
	in.terrain = NULL;
	render(&in, PREVIEW_HEIGHT, &img);
	p = img.rgb + 3 * ((size_t)(52 + 375) * cw + cw / 2 - 300);
	assert_int_equal(p[0], 214);
	assert_int_equal(p[2], 214);
	preview_image_release(&img);
	world_free(&w);
}

static void test_material_colours(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 100, 80, 30, 70, 0, 0, 7);
	struct wb_material mats[2] = { { 0 }, { 0 } };
	mats[0].id = 3;
	mats[0].name = "creek";
	mats[0].kind = WB_MAT_RIVER;
	mats[1].id = 7;
	mats[1].name = "sea";
	mats[1].kind = WB_MAT_OCEAN;
	struct preview_in in = input(&w);
	in.materials = mats;
	in.n_materials = 2;
	struct preview_image img;
	render(&in, PREVIEW_MATERIAL, &img);
	int cw, ch;
	preview_canvas_size(100, 80, &cw, &ch);
	/* the ocean swatch (navy 20, 56, 140) in the legend, the unused river
	   material not */
	assert_true(count_rgb(&img, ch - 120, ch, 20, 56, 140, 0) >= 18 * 16);
	assert_int_equal(count_rgb(&img, ch - 120, ch, 64, 168, 217, 0), 0);
	/* the ocean on the map is blue, not yellow-green */
	const uint8_t *p = img.rgb + 3 * ((size_t)(52 + 400) * cw + cw / 2);
	assert_true(p[2] > p[1] + 40 && p[2] > p[0] + 60);
	preview_image_release(&img);
	world_free(&w);
}

/* Dark arrow cores (20, 20, 24) in the map area. */
static long arrow_pixels(const struct preview_image *img, int ch)
{
	return count_rgb(img, 52, ch - 120, 20, 20, 24, 0);
}

static void test_flow_arrows(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 128, 128, 0, 128, 1.0f, 0.0f, 1);
	struct preview_in in = input(&w);
	struct preview_image img;
	int cw, ch;
	preview_canvas_size(128, 128, &cw, &ch);
	render(&in, PREVIEW_FLOW, &img);
	long moving = arrow_pixels(&img, ch);
	/* 32 x 32 arrows of about 0.9 * 32 pixels */
	assert_true(moving > 32 * 32 * 20);
	/* they point east: the head's strokes (about 6 pixels off the
	   shaft) lie east of an arrow's centre, none west of it. Lattice step
	   1024 / 32 = 32, centres at 16 + 32 k, map at (16, 52). */
	int cx = 16 + 16 + 32 * 5, cy = 52 + 16 + 32 * 5;
	long east = 0, west = 0;
	for (int dy = 3; dy <= 6; dy++)
		for (int dx = 1; dx <= 15; dx++)
			for (int sgn = -1; sgn <= 1; sgn += 2) {
				const uint8_t *e = img.rgb + 3 * ((size_t)(cy + sgn * dy) * img.w + cx + dx);
				const uint8_t *q = img.rgb + 3 * ((size_t)(cy + sgn * dy) * img.w + cx - dx);
				east += e[0] == 20 && e[1] == 20 && e[2] == 24;
				west += q[0] == 20 && q[1] == 20 && q[2] == 24;
			}
	assert_true(east >= 4);
	assert_int_equal(west, 0);
	preview_image_release(&img);
	/* still water: no arrows */
	for (size_t k = 0; k < 128 * 128; k++)
		w.m.u[k] = 0;
	render(&in, PREVIEW_FLOW, &img);
	assert_int_equal(arrow_pixels(&img, ch), 0);
	preview_image_release(&img);
	world_free(&w);
}

static void test_large_map_keeps_thin_water(void **state)
{
	(void)state;
	/* 3000 x 60: pooled by 3 to 1000 x 20; one wet column 1 px wide */
	struct world w;
	world_init(&w, 3000, 60, 1501, 1502, 0, 0, 1);
	struct preview_in in = input(&w);
	in.terrain = NULL;
	struct preview_image img;
	render(&in, PREVIEW_DEPTH, &img);
	/* map 1000 wide centred in a 1032 canvas: pooled column 500 */
	int ox = 16;
	long blue = 0;
	for (int y = 52; y < 52 + 20; y++) {
		const uint8_t *p = img.rgb + 3 * ((size_t)y * img.w + ox + 500);
		blue += p[2] > p[0] + 20;
	}
	assert_int_equal(blue, 20);
	preview_image_release(&img);
	world_free(&w);
}

static void test_write_deterministic(void **state)
{
	(void)state;
	struct world w;
	world_init(&w, 90, 70, 20, 50, 0.3f, -0.2f, 1);
	struct preview_in in = input(&w);
	char base[] = "tests/tmp/previewXXXXXX";
	mkdir("tests", 0777);
	mkdir("tests/tmp", 0777);
	assert_non_null(mkdtemp(base));
	char d1[600], d2[600];
	snprintf(d1, sizeof d1, "%s/a", base);
	snprintf(d2, sizeof d2, "%s/b", base);
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(preview_write(&in, d1, &d), WB_OK);
	assert_int_equal(preview_write(&in, d2, &d), WB_OK);
	for (int k = 0; k < PREVIEW_COUNT; k++) {
		char f1[700], f2[700];
		snprintf(f1, sizeof f1, "%s/%s.png", d1, preview_name((enum preview_kind)k));
		snprintf(f2, sizeof f2, "%s/%s.png", d2, preview_name((enum preview_kind)k));
		if (k == PREVIEW_FOAM) { /* no foam in these maps */
			assert_int_not_equal(access(f1, F_OK), 0);
			continue;
		}
		unsigned char *a, *b;
		size_t na, nb;
		assert_int_equal(wb_read_file(f1, &a, &na, &d), WB_OK);
		assert_int_equal(wb_read_file(f2, &b, &nb, &d), WB_OK);
		assert_true(na == nb && na > 1000);
		assert_memory_equal(a, b, na);
		free(a);
		free(b);
		unlink(f1);
		unlink(f2);
	}
	rmdir(d1);
	rmdir(d2);
	rmdir(base);
	wb_diags_release(&d);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hillshade_planes),
		cmocka_unit_test(test_depth_legend_and_title),
		cmocka_unit_test(test_material_colours),
		cmocka_unit_test(test_flow_arrows),
		cmocka_unit_test(test_large_map_keeps_thin_water),
		cmocka_unit_test(test_write_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
