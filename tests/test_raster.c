/*
 * test_raster.c - the rasteriser's fast paths (row-by-row polygon fill,
 * per-segment corridors and falloffs, cell ranges clipped in double) against
 * the definitions they replace, evaluated cell by cell over every vertex:
 *   inside polygon   even-odd crossing test at the cell centre
 *   river corridor   distance from the centre to the polyline <= width / 2
 *   modifier weight  strength * falloff(distance to the closed outline)
 * on random polygons (fixed seeds; vertices on half-metres too, so centres
 * fall exactly on edges), which must agree exactly, bit for bit; and
 * polygons billions of cells away, which must be reported, not loop.
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

#include "wbake.h"

/* ---- the reference definitions, per cell over all vertices -------------- */

static int ref_inside(const double *xy, int n, double x, double y)
{
	int in = 0;
	for (int a = 0, b = n - 1; a < n; b = a++) {
		double xa = xy[2 * a], ya = xy[2 * a + 1];
		double xb = xy[2 * b], yb = xy[2 * b + 1];
		if ((ya > y) != (yb > y) &&
		    x < (xb - xa) * (y - ya) / (yb - ya) + xa)
			in = !in;
	}
	return in;
}

static double ref_seg(double x, double y, double xa, double ya, double xb,
		      double yb)
{
	double dx = xb - xa, dy = yb - ya, l2 = dx * dx + dy * dy;
	double t = l2 > 0 ? ((x - xa) * dx + (y - ya) * dy) / l2 : 0;
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	return hypot(x - (xa + t * dx), y - (ya + t * dy));
}

static double ref_outline(const double *xy, int n, int closed, double x,
			  double y)
{
	double d = INFINITY;
	for (int a = 0; a < (closed ? n : n - 1); a++) {
		int b = (a + 1) % n;
		d = fmin(d, ref_seg(x, y, xy[2 * a], xy[2 * a + 1], xy[2 * b],
				    xy[2 * b + 1]));
	}
	return d;
}

/* ---- random scenes ------------------------------------------------------ */

static uint32_t rnd(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* uniform in [lo, hi], every fourth on a half-metre */
static double coord(uint32_t *s, double lo, double hi)
{
	double v = lo + (hi - lo) * (rnd(s) / 16777216.0);
	return rnd(s) % 4 == 0 ? floor(v * 2) / 2 : v;
}

static char *append(char *p, char *end, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(p, (size_t)(end - p), fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && k < end - p);
	return p + k;
}

static char *points(char *p, char *end, const double *xy, int n)
{
	p = append(p, end, "[");
	for (int k = 0; k < n; k++)
		p = append(p, end, "%s[%.17g, %.17g]", k ? ", " : "", xy[2 * k],
			   xy[2 * k + 1]);
	return append(p, end, "]");
}

static void flat(struct wb_heightmap *hm, int nx, int ny)
{
	memset(hm, 0, sizeof(*hm));
	hm->nx = nx;
	hm->ny = ny;
	hm->z = calloc((size_t)nx * ny, sizeof(float));
	assert_non_null(hm->z);
}

static void test_random_polygons_match_definitions(void **state)
{
	(void)state;
	enum { NX = 61, NY = 47, MAXV = 40 };
	static char text[1 << 16];
	double blk[2 * MAXV], mod[2 * MAXV], riv[2 * 12];
	long inside_cells = 0, corridor_cells = 0, ramp_cells = 0;
	for (uint32_t trial = 0; trial < 60; trial++) {
		uint32_t s = 12345u + trial * 7919u;
		double dx = trial % 3 == 0 ? 0.7 : 1.0;
		double W = NX * dx, H = NY * dx;
		int nb = 3 + (int)(rnd(&s) % (MAXV - 2));
		int nm = 3 + (int)(rnd(&s) % (MAXV - 2));
		int nr = 2 + (int)(rnd(&s) % 11);
		for (int k = 0; k < nb; k++) {
			blk[2 * k] = coord(&s, -8, W + 8);
			blk[2 * k + 1] = coord(&s, -8, H + 8);
		}
		for (int k = 0; k < nm; k++) {
			mod[2 * k] = coord(&s, -8, W + 8);
			mod[2 * k + 1] = coord(&s, -8, H + 8);
		}
		riv[0] = coord(&s, 1, W - 1);
		riv[1] = coord(&s, 1, H - 1);
		for (int k = 1; k < nr; k++) {
			riv[2 * k] = coord(&s, -5, W + 5);
			riv[2 * k + 1] = coord(&s, -5, H + 5);
		}
		double width = 0.5 + 12 * (rnd(&s) / 16777216.0);
		double fw = (double[]){ 0, 0.6, 3, 11.5 }[rnd(&s) % 4];
		const char *falloff = (const char *[]){ "none", "linear", "smooth" }[rnd(&s) % 3];

		char *p = text, *end = text + sizeof(text);
		p = append(p, end, "{\"name\": \"r\", \"terrain\": {\"heightmap\": \"t.png\", "
			   "\"metres_per_pixel\": %g}, \"materials\": [{\"name\": \"w\", "
			   "\"kind\": \"river\"}], \"sources\": [{\"type\": \"river\", "
			   "\"width\": %.17g, \"discharge\": 1, \"material\": \"w\", \"path\": ",
			   dx, width);
		p = points(p, end, riv, nr);
		p = append(p, end, "}], \"blockers\": [{\"bottom\": 1, \"top\": 2, \"polygon\": ");
		p = points(p, end, blk, nb);
		p = append(p, end, "}], \"modifiers\": [{\"velocity\": [1, 0], \"strength\": 0.5, "
			   "\"falloff\": \"%s\", \"falloff_width\": %g, \"polygon\": ",
			   falloff, fw);
		p = points(p, end, mod, nm);
		append(p, end, "}]}");

		struct wb_scene sc;
		struct wb_diags d;
		struct wb_heightmap hm;
		struct wb_raster r;
		wb_diags_init(&d);
		assert_int_equal(wb_scene_parse(text, strlen(text), "r.json", ".", &sc, &d), WB_OK);
		flat(&hm, NX, NY);
		enum wb_status st = wb_raster_build(&sc, &hm, &r, &d);
		/* a blocker or modifier that misses every cell is an error; the
		 * reference must then find no cell either */
		int any_b = 0, any_m = 0;
		for (int j = 0; j < NY; j++)
			for (int i = 0; i < NX; i++) {
				double x = (i + 0.5) * dx, y = (j + 0.5) * dx;
				any_b |= ref_inside(blk, nb, x, y);
				any_m |= ref_inside(mod, nm, x, y);
			}
		if (!any_b || !any_m) {
			assert_int_equal(st, WB_EINPUT);
			goto next;
		}
		assert_int_equal(st, WB_OK);
		for (int j = 0; j < NY; j++)
			for (int i = 0; i < NX; i++) {
				size_t k = i + (size_t)j * NX;
				double x = (i + 0.5) * dx, y = (j + 0.5) * dx;
				int in_b = ref_inside(blk, nb, x, y);
				if (in_b != !!(r.flags[k] & WB_CELL_BLOCKER))
					fail_msg("trial %u: blocker cell (%d, %d): reference %d", trial, i, j, in_b);
				inside_cells += in_b;
				int in_r = ref_outline(riv, nr, 0, x, y) <= width / 2;
				if (in_r != (r.body[k] == 1))
					fail_msg("trial %u: corridor cell (%d, %d): reference %d", trial, i, j, in_r);
				corridor_cells += in_r;
				float want = 0;
				if (ref_inside(mod, nm, x, y)) {
					double inward = ref_outline(mod, nm, 1, x, y);
					double t = fw > 0 ? fmin(1, inward / fw) : 1, w = 1;
					if (!strcmp(falloff, "linear"))
						w = t;
					else if (!strcmp(falloff, "smooth"))
						w = t * t * (3 - 2 * t);
					want = (float)(0.5 * w);
					ramp_cells += w < 1;
				}
				if (memcmp(&want, &r.mod_k[k], sizeof(float)))
					fail_msg("trial %u: modifier cell (%d, %d): %.9g, reference %.9g",
						 trial, i, j, r.mod_k[k], want);
			}
		wb_raster_free(&r);
next:
		wb_heightmap_free(&hm);
		wb_scene_free(&sc);
		wb_diags_release(&d);
	}
	/* the trials did exercise every path */
	assert_true(inside_cells > 1000);
	assert_true(corridor_cells > 1000);
	assert_true(ramp_cells > 200);
}

static int has_diag(const struct wb_diags *d, const char *text)
{
	char buf[512];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		if (strstr(buf, text))
			return 1;
	}
	return 0;
}

/* Polygons 3e9 cells and 1e300 m away: reported at once, naming the path
 * (the cell range of such a polygon used to overflow an int and loop). */
static void test_far_polygons_reported(void **state)
{
	(void)state;
	const double far[] = { 3e9, -3e9, 1e300, -1e300 };
	for (int f = 0; f < 4; f++) {
		char text[1024];
		double v = far[f];
		snprintf(text, sizeof(text),
			 "{\"name\": \"f\", \"terrain\": {\"heightmap\": \"t.png\"}, "
			 "\"blockers\": [{\"bottom\": 1, \"top\": 2, \"polygon\": "
			 "[[%.17g, 0], [%.17g, 5], [%.17g, 0]]}], "
			 "\"modifiers\": [{\"center\": [4, %.17g], \"radius\": 3, \"velocity\": [1, 0]}]}",
			 v, v, v * 1.001, v);
		struct wb_scene sc;
		struct wb_diags d;
		struct wb_heightmap hm;
		struct wb_raster r;
		wb_diags_init(&d);
		assert_int_equal(wb_scene_parse(text, strlen(text), "f.json", ".", &sc, &d), WB_OK);
		flat(&hm, 20, 10);
		assert_int_equal(wb_raster_build(&sc, &hm, &r, &d), WB_EINPUT);
		assert_int_equal(d.errors, 2);
		assert_true(has_diag(&d, "blockers[0].polygon: the polygon covers no cell of the 20x10 m terrain"));
		assert_true(has_diag(&d, "modifiers[0]: the region covers no cell of the 20x10 m terrain"));
		wb_heightmap_free(&hm);
		wb_scene_free(&sc);
		wb_diags_release(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_polygons_match_definitions),
		cmocka_unit_test(test_far_polygons_reported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
