/*
 * test_coarse.c - coarse-to-fine starts (src/coarse.c, src/bake.c,
 * docs/hydrology.md "Coarse-to-fine"):
 *   - restriction keeps every source's discharge exactly (sum src dx^2),
 *     the terrain's mean, a one-cell wall as a wall, a deck's gap;
 *   - prolongation keeps the water volume of every coarse cell (relative
 *     error < 1e-6 after rounding to float), lays the coarse surface over
 *     the fine bed (cells above it stay dry, walls stay dry, the deepest
 *     fine cell gets the most water) and carries the momentum h u of
 *     every coarse cell;
 *   - simulation.coarse_levels: "auto" and 0..3 are read, anything else is
 *     an error naming simulation.coarse_levels; how many levels a grid
 *     gets;
 *   - on the test valley of test_warm.c (SWE): a bake with two coarse
 *     levels is steady, its steady state agrees with the one-level bake's
 *     (depth-weighted velocity difference below the scene's tolerance,
 *     every water cell within one cell of water in the other), the report
 *     lists both levels with their steps, the full-resolution run needs
 *     no more steps than the one-level bake's (measured 2400 against
 *     3000), and the result is
 *     byte-identical with 1 and 2 threads.
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

#include "bake.h"
#include "coarse.h"
#include "util.h"

#define TMP "tests/tmp/test_coarse"

static void show(const struct wb_diags *d)
{
	char buf[2048];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		print_message("  %s\n", buf);
	}
}

/* deterministic pseudo-random in [0, 1) */
static double rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return ((*s >> 8) & 0xffffff) / 16777216.0;
}

/* A 37 x 29 grid (not a multiple of the factors: partial coarse cells)
 * of rough terrain, sources and sinks, a one-cell wall along column 9
 * and a deck over columns 20..23 */
static void rough_raster(struct wb_raster *r)
{
	unsigned s = 7;
	assert_int_equal(wb_raster_alloc(r, 37, 29, 1.5), WB_OK);
	for (int j = 0; j < r->ny; j++)
		for (int i = 0; i < r->nx; i++) {
			long q = i + (long)j * r->nx;
			r->z[q] = (float)(10 + 0.05 * j + 0.8 * rnd(&s));
			r->h0[q] = rnd(&s) < 0.4 ? 0.0f : (float)(0.5 * rnd(&s));
			if (rnd(&s) < 0.1)
				r->src[q] = (float)(1e-3 * (rnd(&s) - 0.3));
			if (i == 9 && j > 3) {
				r->block_bot[q] = r->z[q];
				r->block_top[q] = r->z[q] + 3;
			}
			if (i >= 20 && i <= 23 && j >= 10 && j <= 13) {
				r->block_bot[q] = r->z[q] + 1.2f;
				r->block_top[q] = r->z[q] + 2.0f;
			}
		}
}

static void test_restrict(void **state)
{
	(void)state;
	struct wb_raster f, c;
	rough_raster(&f);
	for (int k = 2; k <= 4; k *= 2) {
		assert_int_equal(wb_coarse_restrict(&f, k, &c), WB_OK);
		assert_int_equal(c.nx, (37 + k - 1) / k);
		assert_int_equal(c.ny, (29 + k - 1) / k);
		assert_true(c.dx == 1.5 * k);
		double qf = 0, qc = 0, zf = 0;
		for (long q = 0; q < (long)f.nx * f.ny; q++)
			qf += (double)f.src[q] * f.dx * f.dx;
		for (long q = 0; q < (long)c.nx * c.ny; q++)
			qc += (double)c.src[q] * c.dx * c.dx;
		assert_true(fabs(qf - qc) <= 1e-6 * fabs(qf));
		/* the mean terrain of the full coarse cell (0, 0) */
		for (int j = 0; j < k; j++)
			for (int i = 0; i < k; i++)
				zf += f.z[i + j * f.nx];
		assert_true(fabs(c.z[0] - zf / (k * k)) < 1e-4);
		/* the wall along fine column 9 is a wall in the coarse column
		 * holding it (rows well inside it) */
		for (int J = 2; J < c.ny - 1; J++) {
			long C = 9 / k + (long)J * c.nx;
			assert_true(c.block_bot[C] <= c.z[C] + 1e-3f);
		}
		/* the deck keeps its 1.2 m gap over the mean bed */
		long D = 21 / k + (long)(11 / k) * c.nx;
		assert_true(isfinite(c.block_bot[D]));
		assert_true(fabs(c.block_bot[D] - c.z[D] - 1.2) < 1e-3);
		wb_raster_free(&c);
	}
	wb_raster_free(&f);
}

static void test_prolong_mass(void **state)
{
	(void)state;
	struct wb_raster f, c;
	rough_raster(&f);
	size_t n = (size_t)f.nx * f.ny;
	float *hf = malloc(n * sizeof(float)), *uf = malloc(n * sizeof(float)),
	      *vf = malloc(n * sizeof(float));
	assert_non_null(hf);
	assert_non_null(uf);
	assert_non_null(vf);
	for (int k = 2; k <= 4; k *= 2) {
		assert_int_equal(wb_coarse_restrict(&f, k, &c), WB_OK);
		unsigned s = 11;
		size_t nc = (size_t)c.nx * c.ny;
		float *uc = malloc(nc * sizeof(float)), *vc = malloc(nc * sizeof(float));
		assert_non_null(uc);
		assert_non_null(vc);
		for (size_t C = 0; C < nc; C++) {
			/* some dry, some shallow (surface below some fine
			 * beds), some deep */
			double x = rnd(&s);
			c.h0[C] = x < 0.2 ? 0.0f : (float)(x < 0.6 ? 0.05 * rnd(&s) : 2 * rnd(&s));
			uc[C] = (float)(rnd(&s) - 0.5);
			vc[C] = (float)(rnd(&s) - 0.5);
		}
		double worst = wb_coarse_prolong(&c, c.h0, k, &f, hf);
		assert_true(worst < 1e-6);
		wb_coarse_prolong_velocity(&c, uc, vc, k, &f, hf, uf, vf);
		for (int J = 0; J < c.ny; J++)
			for (int I = 0; I < c.nx; I++) {
				long C = I + (long)J * c.nx;
				double vol = 0, mu = 0, mv = 0, hmax = 0, zmin = INFINITY;
				int m = 0;
				for (int j = J * k; j < (J + 1) * k && j < f.ny; j++)
					for (int i = I * k; i < (I + 1) * k && i < f.nx; i++) {
						long q = i + (long)j * f.nx;
						m++;
						assert_true(hf[q] >= 0);
						vol += hf[q];
						mu += (double)hf[q] * uf[q];
						mv += (double)hf[q] * vf[q];
						int wall = f.block_bot[q] <= f.z[q] + 1e-3f;
						if (wall)
							assert_true(hf[q] == 0.0f);
						if (!wall && f.z[q] < zmin)
							zmin = f.z[q];
						/* above the coarse surface: dry */
						if (!wall && f.z[q] >= c.z[C] + c.h0[C] &&
						    c.h0[C] > 0 && vol > 0)
							assert_true(hf[q] == 0.0f);
						if (hf[q] > hmax)
							hmax = hf[q];
					}
				double want = (double)c.h0[C] * m;
				assert_true(fabs(vol - want) <= 1e-6 * want + 1e-12);
				double qn = fabs(uc[C]) + fabs(vc[C]);
				assert_true(fabs(mu - uc[C] * want) <= 1e-5 * (qn * want + 1e-9));
				assert_true(fabs(mv - vc[C] * want) <= 1e-5 * (qn * want + 1e-9));
				/* the lowest open fine cell holds the most water */
				for (int j = J * k; j < (J + 1) * k && j < f.ny; j++)
					for (int i = I * k; i < (I + 1) * k && i < f.nx; i++) {
						long q = i + (long)j * f.nx;
						if (f.z[q] == zmin && want > 0 &&
						    !(f.block_bot[q] <= f.z[q] + 1e-3f))
							assert_true(hf[q] >= hmax * (1 - 1e-6));
					}
			}
		/* restriction of the prolonged depth gives the coarse depth */
		float *back = malloc(nc * sizeof(float));
		assert_non_null(back);
		wb_coarse_restrict_depth(&f, k, hf, &c, back);
		for (size_t C = 0; C < nc; C++)
			assert_true(fabs(back[C] - c.h0[C]) <= 1e-6 * c.h0[C] + 1e-9);
		free(back);
		free(uc);
		free(vc);
		wb_raster_free(&c);
	}
	free(hf);
	free(uf);
	free(vf);
	wb_raster_free(&f);
}

static void test_levels_rule(void **state)
{
	(void)state;
	/* auto: none (measured: no gain, docs/hydrology.md) */
	assert_int_equal(wb_coarse_levels(-1, 256, 256, 0), 0);
	assert_int_equal(wb_coarse_levels(-1, 4096, 4096, 0), 0);
	assert_int_equal(wb_coarse_levels(-1, 4096, 4096, 1), 0);
	/* forced: as asked, but never below 8 cells a side */
	assert_int_equal(wb_coarse_levels(0, 4096, 4096, 0), 0);
	assert_int_equal(wb_coarse_levels(3, 256, 256, 1), 3);
	assert_int_equal(wb_coarse_levels(3, 40, 256, 0), 2);
	assert_int_equal(wb_coarse_levels(2, 15, 15, 0), 0);
}

static enum wb_status parse_levels(const char *value, int *levels,
				   struct wb_diags *d)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "{\"name\": \"t\", \"version\": 1,\n"
		 " \"terrain\": {\"heightmap\": \"t.r32f\", \"format\": \"r32f\", \"size\": [8, 8],\n"
		 "   \"metres_per_pixel\": 1, \"height_scale\": 1, \"height_offset\": 0},\n"
		 " \"boundaries\": {\"south\": \"open\"},\n"
		 " \"materials\": [{\"id\": 1, \"name\": \"w\", \"kind\": \"river\"}],\n"
		 " \"sources\": [{\"type\": \"spring\", \"point\": [4, 4], \"radius\": 1,\n"
		 "   \"discharge\": 0.1, \"material\": \"w\"}],\n"
		 " \"simulation\": {%s%s}}\n",
		 value ? "\"coarse_levels\": " : "", value ? value : "");
	struct wb_scene sc;
	enum wb_status st = wb_scene_parse(text, strlen(text), "t.json", NULL, &sc, d);
	*levels = st == WB_OK ? sc.sim.coarse_levels : -99;
	wb_scene_free(&sc);
	return st;
}

static void test_scene_option(void **state)
{
	(void)state;
	struct wb_diags d;
	int lv;
	const char *bad[] = { "4", "-1", "1.5", "\"fast\"", "true", "[1]" };
	wb_diags_init(&d);
	assert_int_equal(parse_levels(NULL, &lv, &d), WB_OK);
	assert_int_equal(lv, -1);
	assert_int_equal(parse_levels("\"auto\"", &lv, &d), WB_OK);
	assert_int_equal(lv, -1);
	assert_int_equal(parse_levels("0", &lv, &d), WB_OK);
	assert_int_equal(lv, 0);
	assert_int_equal(parse_levels("3", &lv, &d), WB_OK);
	assert_int_equal(lv, 3);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int from = d.n;
		assert_int_equal(parse_levels(bad[i], &lv, &d), WB_EINPUT);
		assert_true(d.n > from);
		int named = 0;
		for (int k = from; k < d.n; k++)
			named |= d.v[k].path && strcmp(d.v[k].path, "simulation.coarse_levels") == 0 &&
				 d.v[k].line > 0;
		if (!named)
			show(&d);
		assert_true(named);
	}
	wb_diags_release(&d);
}

/* ---- end to end on a small valley --------------------------------------- */

#define NX 64
#define NY 128
#define DX 2.0

static float valley_z(int i, int j)
{
	double x = (i + 0.5) * DX, y = (j + 0.5) * DX, c = NX * DX / 2;
	double a = fabs(x - c) - 4;
	double v = 20 - 0.01 * y + 0.3 * (a > 0 ? a : 0);
	/* the basin off the channel's axis: a jet into a symmetric basin
	 * may settle against either bank (two steady states) */
	double d = hypot(x - c - 7, y - 100);
	if (d < 18)
		v -= 1.5 * (1 - (d / 18) * (d / 18));
	return (float)v;
}

/* The valley's tolerance is 0.02: the window-to-window residual bounds
 * the distance to the steady state only loosely, and at 0.03 the
 * one-level bake stopped (2,400 steps) 0.034 from the two-level one's
 * state once the SWE's friction counted the flow along each face
 * (2026-11-29; 0.017 before). Both approach the same state: 0.016 apart
 * at 0.02, 0.003 at 0.01. */
static const char *write_valley(const char *name, int levels)
{
	static char path[256];
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	unsigned char *b = malloc(NX * NY * 4);
	assert_non_null(b);
	for (int j = 0; j < NY; j++)
		for (int i = 0; i < NX; i++) {
			float z = valley_z(i, j);
			uint32_t u;
			memcpy(&u, &z, 4);
			for (int k = 0; k < 4; k++)
				b[4 * (i + j * NX) + k] = (unsigned char)(u >> (8 * k));
		}
	assert_int_equal(wb_write_file_atomic(TMP "/valley.r32f", b, NX * NY * 4, &d), WB_OK);
	free(b);
	char text[2048];
	snprintf(text, sizeof(text),
		 "{\"name\": \"valley\", \"version\": 1,\n"
		 " \"terrain\": {\"heightmap\": \"valley.r32f\", \"format\": \"r32f\", \"size\": [%d, %d],\n"
		 "   \"metres_per_pixel\": %g, \"height_scale\": 1, \"height_offset\": 0},\n"
		 " \"boundaries\": {\"west\": \"wall\", \"east\": \"wall\", \"north\": \"wall\", \"south\": \"open\"},\n"
		 " \"materials\": [{\"id\": 1, \"name\": \"w\", \"kind\": \"river\"}],\n"
		 " \"sources\": [{\"type\": \"spring\", \"name\": \"head\", \"point\": [64, 10], \"radius\": 3,\n"
		 "   \"discharge\": 0.6, \"material\": \"w\"}],\n"
		 " \"simulation\": {\"solver\": \"swe\", \"manning\": 0.04,\n"
		 "   \"max_steps\": 40000, \"tolerance\": %g, \"window\": 600,\n"
		 "   \"coarse_levels\": %d},\n"
		 " \"output\": {\"lods\": 1}}\n",
		 NX, NY, DX, 0.02, levels);
	snprintf(path, sizeof(path), TMP "/%s.json", name);
	assert_int_equal(wb_write_file_atomic(path, text, strlen(text), &d), WB_OK);
	wb_diags_release(&d);
	return path;
}

static void bake(struct wb_bake *b, const char *scene, int threads)
{
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status st = wb_bake_load(b, scene, &d);
	if (!st) {
		struct wb_solve_opts o = { 0 };
		o.threads = threads;
		st = wb_bake_solve(b, &o, &d);
	}
	if (st)
		show(&d);
	assert_int_equal(st, WB_OK);
	wb_diags_release(&d);
}

static double vel_diff(const struct wb_state *a, const struct wb_state *b)
{
	double num = 0, den = 0;
	for (size_t k = 0; k < (size_t)a->nx * a->ny; k++) {
		double hm = 0.5 * ((double)a->h[k] + b->h[k]);
		double du = (double)a->u[k] - b->u[k], dv = (double)a->v[k] - b->v[k];
		num += hm * (du * du + dv * dv);
		den += hm * ((double)b->u[k] * b->u[k] + (double)b->v[k] * b->v[k]);
	}
	return den > 0 ? sqrt(num / den) : 0;
}

static long misses(const struct wb_state *a, const struct wb_state *b, float thr)
{
	long miss = 0;
	for (int j = 0; j < a->ny; j++)
		for (int i = 0; i < a->nx; i++) {
			if (!(a->h[i + (size_t)j * a->nx] >= thr))
				continue;
			int ok = 0;
			for (int y = j - 1; y <= j + 1; y++)
				for (int x = i - 1; x <= i + 1; x++)
					if (x >= 0 && y >= 0 && x < a->nx && y < a->ny &&
					    b->h[x + (size_t)y * a->nx] >= thr)
						ok = 1;
			miss += !ok;
		}
	return miss;
}

static void test_coarse_bake(void **state)
{
	(void)state;
	struct wb_bake one, two, two1;
	bake(&one, write_valley("one", 0), 2);
	bake(&two, write_valley("two", 2), 2);
	assert_true(one.rep.converged);
	assert_true(two.rep.converged);
	assert_int_equal(one.rep.n_levels, 0);
	assert_int_equal(two.rep.n_levels, 2);
	assert_int_equal(two.rep.level[0].factor, 4);
	assert_int_equal(two.rep.level[0].nx, NX / 4);
	assert_int_equal(two.rep.level[1].factor, 2);
	assert_int_equal(two.rep.level[1].ny, NY / 2);
	for (int l = 0; l < 2; l++)
		assert_true(two.rep.level[l].steps > 0);
	double vd = vel_diff(&two.st, &one.st);
	float thr = (float)one.sc.output.min_depth;
	long m = misses(&two.st, &one.st, thr) + misses(&one.st, &two.st, thr);
	print_message("  coarse-to-fine: %ld + %ld + %ld steps (one level: %ld), velocity difference %.4f, %ld wet misses\n",
		      two.rep.level[0].steps, two.rep.level[1].steps, two.rep.steps,
		      one.rep.steps, vd, m);
	assert_true(vd < one.sc.sim.tolerance);
	assert_int_equal(m, 0);
	/* the full-resolution run starts closer to steady (measured 2400
	 * against 3000 steps: the carried velocity spares the basin's
	 * spin-up) */
	assert_true(two.rep.steps <= one.rep.steps);
	/* the start carried to the full grid holds the water of the 2x level
	 * exactly: what the solver started with (vol_initial) */
	assert_true(fabs(two.rep.vol_initial - two.rep.start_volume) <=
		    1e-6 * two.rep.start_volume);
	/* the same bytes with one thread */
	bake(&two1, TMP "/two.json", 1);
	size_t n = (size_t)NX * NY;
	assert_int_equal(two1.rep.steps, two.rep.steps);
	assert_memory_equal(two1.st.h, two.st.h, n * sizeof(float));
	assert_memory_equal(two1.st.u, two.st.u, n * sizeof(float));
	wb_bake_release(&two1);
	wb_bake_release(&one);
	wb_bake_release(&two);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restrict),
		cmocka_unit_test(test_prolong_mass),
		cmocka_unit_test(test_levels_rule),
		cmocka_unit_test(test_scene_option),
		cmocka_unit_test(test_coarse_bake),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
