/*
 * test_lbm_fv.c - the LBM / finite-volume hybrid (src/lbm_fv.c,
 * docs/lbm.md "Supercritical flow") on a 2D scene where it acts: sheet
 * flow from a spring down a rough 8 % slope, open edges.
 *
 *   - the FV update takes cells over (FV cell-steps > 0) and no limiter of
 *     the LBM cells acts (0 clamped cell-steps, which the pure LBM cannot
 *     do on this scene: it clamps, asserted too);
 *   - mass is exact to the integer unit every step: water on the grid =
 *     initial + what crossed the edges and came from the spring;
 *   - the bytes do not depend on the thread count (1 vs 2 threads, a grid
 *     large enough for two);
 *   - rain beside a sloshing lake at 80 m: films that read speeds above
 *     the lattice speed take their friction first (counted, warned) and
 *     the FV update keeps the sub-steps of flow at the lattice speed;
 *     films that start to run are FV cells (0 clamped).
 * Scenes are generated here.
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

#include "lbm.h"
#include "solve.h"
#include "channel_scene.h"
#include "sheet_scene.h"

/* the sheet (sheet_scene.h) */
static void sheet_scene(struct wb_raster *r, int nx, int ny)
{
	assert_int_equal(sheet_scene_make(r, nx, ny), WB_OK);
}

static struct wb_sim sheet_sim(void)
{
	return sheet_scene_sim(1); /* simulation.lbm_hybrid: true */
}

static void test_sheet_exact_mass_no_clamp(void **state)
{
	(void)state;
	struct wb_raster r;
	sheet_scene(&r, 120, 60);
	struct wb_sim sim = sheet_sim();
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	assert_int_equal(lbm_init(&L, &r, &sim, 1, &d), WB_OK);
	assert_true(L.hybrid);
	const int64_t m0 = lbm_mass(&L);
	for (int k = 0; k < 40; k++) {
		assert_int_equal(lbm_step(&L, 50, &d), WB_OK);
		/* exact: every unit on the grid came in or is still there */
		assert_true(lbm_mass(&L) == m0 + L.vol_in - L.vol_out);
	}
	printf("sheet: %ld steps, FV cell-steps %ld, FV cells now %d, clamped %ld, in %lld out %lld units\n",
	       L.step, L.fv_cells, L.nfv, L.clamped, (long long)L.vol_in,
	       (long long)L.vol_out);
	assert_true(L.fv_cells > 0);
	assert_true(L.nfv > 0);
	assert_true(L.vol_in > 0); /* the spring's water, counted */
	assert_int_equal(L.clamped, 0);
	/* nor did the FV update need more than its 64 sub-steps */
	assert_int_equal(L.fv_capped, 0);
	lbm_release(&L);

	/* the pure LBM (the default) on the same scene needs its limiters */
	sim.lbm_hybrid = 0;
	assert_int_equal(lbm_init(&L, &r, &sim, 1, &d), WB_OK);
	assert_false(L.hybrid);
	assert_int_equal(lbm_step(&L, 2000, &d), WB_OK);
	printf("sheet, pure LBM: clamped %ld\n", L.clamped);
	assert_true(L.clamped > 0);
	assert_true(lbm_mass(&L) == m0 + L.vol_in - L.vol_out);
	lbm_release(&L);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void test_sheet_threads_identical(void **state)
{
	(void)state;
	struct wb_raster r;
	sheet_scene(&r, 300, 240); /* > 64k cells: two threads run */
	struct wb_sim sim = sheet_sim();
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm a, b;
	assert_int_equal(lbm_init(&a, &r, &sim, 1, &d), WB_OK);
	assert_int_equal(lbm_init(&b, &r, &sim, 2, &d), WB_OK);
	assert_int_equal(a.threads, 1);
	assert_int_equal(b.threads, 2);
	assert_int_equal(lbm_step(&a, 400, &d), WB_OK);
	assert_int_equal(lbm_step(&b, 400, &d), WB_OK);
	assert_true(a.fv_cells > 0);
	assert_int_equal(a.fv_cells, b.fv_cells);
	for (int q = 0; q < LBM_Q; q++)
		assert_memory_equal(a.f[a.cur][q], b.f[b.cur][q],
				    a.ncell * sizeof(int32_t));
	assert_memory_equal(a.h[a.cur], b.h[b.cur], a.ncell * sizeof(float));
	assert_true(a.clamped == b.clamped && a.vol_in == b.vol_in &&
		    a.vol_out == b.vol_out);
	lbm_release(&a);
	lbm_release(&b);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* nx x nx cells of 80 m: a bowl 14 m deep in hills sloping 10 % up to
 * the edges (rough, fixed pseudo-random), a lake in the bowl whose
 * surface starts tilted by 2 m (it sloshes: its depths change by
 * decimetres a step), rain of 20 mm/h everywhere, open edges. The films
 * the rain makes beside the sloshing lake read the rounding of the
 * lake's bed transfers as momentum (docs/lbm.md "Real elevation
 * models"), which made the FV update run at its sub-step cap. */
static void rain_lake_scene(struct wb_raster *r, int nx)
{
	const double dx = 80.0, c = (nx - 1) / 2.0, rb = nx / 5.0;
	assert_int_equal(wb_raster_alloc(r, nx, nx, dx), WB_OK);
	unsigned s = 7;
	for (int j = 0; j < nx; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			s = s * 1103515245u + 12345u;
			const double d = hypot(i - c, j - c);
			const double bowl = d < rb ? 14.0 * (1 - (d / rb) * (d / rb)) : 0;
			r->z[k] = (float)(300 + 0.1 * dx * (d > rb ? d - rb : 0) -
					  bowl + 3.0 * ((s >> 16) % 1000) / 1000.0);
			const double eta = 298 + 2.0 * (i - c) / rb;
			r->h0[k] = d < rb - 1 && eta > r->z[k] ? (float)(eta - r->z[k]) : 0;
			r->src[k] = (float)(0.020 / 3600); /* m/s of rain */
		}
	for (int q = 0; q < 4; q++)
		r->edges[q].kind = WB_EDGE_OPEN;
}

/* The films beside the lake: no step of the FV update needs more than
 * its sub-steps (their friction comes first where they read a speed
 * above the lattice speed, counted), mass exact every step, and what
 * the FV cells keep is below the lattice speed. */
static void test_rain_lake_films(void **state)
{
	(void)state;
	struct wb_raster r;
	rain_lake_scene(&r, 64);
	struct wb_sim sim = sheet_sim();
	sim.viscosity = 1.0;
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	assert_int_equal(lbm_init(&L, &r, &sim, 1, &d), WB_OK);
	assert_true(L.hybrid);
	const int64_t m0 = lbm_mass(&L);
	double umax = 0;
	for (int k = 0; k < 30; k++) {
		assert_int_equal(lbm_step(&L, 10, &d), WB_OK);
		assert_true(lbm_mass(&L) == m0 + L.vol_in - L.vol_out);
		for (int q = 0; q < L.nfv; q++) {
			float h, u, v;
			lbm_fv_state(&L, L.fvl[q], &h, &u, &v);
			if (h > 10 * sim.dry_depth)
				umax = fmax(umax, hypot(u, v));
		}
	}
	printf("rain lake: e %.3g m/s, %ld steps, FV cell-steps %ld, friction first %ld (up to %.3g m/s), capped %ld, most sub-steps %d, fastest FV cell %.3g m/s, clamped %ld\n",
	       L.p.e, L.step, L.fv_cells, L.fv_ff, L.fv_ff_u, L.fv_capped,
	       L.fv_ns_max, umax, L.clamped);
	assert_true(L.vol_in > 0);
	assert_int_equal(L.fv_capped, 0);
	/* the sub-steps of flow no faster than the lattice speed e (e dt /
	 * dx = 1) with the deepest water's waves, sqrt(g h_deep) =
	 * e sqrt(LBM_GH_RATIO): without the friction first, 7 */
	assert_true(L.fv_ns_max <=
		    (int)ceil((1 + sqrt(LBM_GH_RATIO)) / LBM_FV_CFL));
	assert_true(L.fv_ff > 0);
	assert_true(L.fv_ff_u > L.p.e);
	assert_true(umax < L.p.e);
	/* the rain's films that start to run on the slopes are FV cells
	 * (lbm_fv.c film_drives): no limiter acts (as LBM cells: 3) */
	assert_int_equal(L.clamped, 0);
	/* the report: the count in the manifest's field, and a warning */
	struct wb_solve_report rep;
	memset(&rep, 0, sizeof rep);
	struct wb_diags d2;
	wb_diags_init(&d2);
	lbm_fv_report(&L, &rep, &d2);
	assert_true(rep.fv_friction_first == L.fv_ff && rep.fv_capped == 0);
	int warned = 0;
	for (int k = 0; k < d2.n; k++)
		warned += d2.v[k].sev == WB_SEV_WARNING &&
			  strstr(d2.v[k].msg, "read a speed above the lattice speed") != NULL;
	assert_int_equal(warned, 1);
	wb_diags_release(&d2);
	lbm_release(&L);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* Uniform supercritical flow between free-slip walls: a channel 200 m
 * long and 3 cells wide on a 2 % slope (Manning 0.03), 0.5 m^2/s in at
 * the west, open to the east, started at Manning's normal depth
 * (n q / sqrt(S))^0.6 = 0.2602 m (Froude 1.19, so the hybrid's FV cells
 * carry it). The steady state is that depth and discharge everywhere:
 *   - the depth over the middle within 1.5 % of the normal depth, and
 *     no pile-up at the open outlet (the last 10 columns within 3 %);
 *   - the discharge the state shows (mean of h u) within 2 % of the
 *     inflow (the output velocity is the one after the step's implicit
 *     friction, about 1 % below the one that moved the water);
 *   - mass exact to the unit.
 * The reflected populations of a free-slip wall's ghosts once carried
 * the wall rows' flow a second time beside the FV cells' own fluxes: the
 * state settled at 0.242 m and 0.445 m^2/s while 0.5 went through, and
 * with 16 rows the outlet rose to 0.46 m (lbm_fv.c mirror_fv). */
static void test_freeslip_channel(void **state)
{
	(void)state;
	const int nx = 200, ny = 3;
	const double S = 0.02, q = 0.5, n = 0.03;
	const double hn = channel_normal_depth(n, q, S);
	struct wb_raster r;
	assert_int_equal(channel_scene_make(&r, nx, ny, 10, S, n, q,
					    WB_EDGE_WALL, 1), WB_OK);
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.solver = WB_SOLVER_LBM;
	sim.viscosity = 0.01;
	sim.manning = n;
	sim.dry_depth = 1e-4;
	sim.maccormack = 1;
	sim.lbm_hybrid = 1;
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	assert_int_equal(lbm_init(&L, &r, &sim, 1, &d), WB_OK);
	const int64_t m0 = lbm_mass(&L);
	assert_int_equal(lbm_step(&L, 6000, &d), WB_OK);
	assert_true(lbm_mass(&L) == m0 + L.vol_in - L.vol_out);
	assert_true(L.nfv > 0);
	float *h = calloc((size_t)nx * ny, sizeof(float));
	float *u = calloc((size_t)nx * ny, sizeof(float));
	assert_non_null(h);
	assert_non_null(u);
	lbm_macro(&L, h, u, NULL);
	double hmid = 0, qmid = 0, hout = 0;
	int nmid = 0;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			if (i >= nx / 4 && i < 3 * nx / 4) {
				hmid += h[k];
				qmid += (double)h[k] * u[k];
				nmid++;
			}
			if (i >= nx - 10)
				hout = fmax(hout, fabs(h[k] - hn) / hn);
		}
	hmid /= nmid;
	qmid /= nmid;
	printf("free-slip channel: depth %.4f m (normal %.4f, %+.2f %%), state's discharge %.4f m^2/s (in %.2f), outlet off by %.2f %%, FV cells %d\n",
	       hmid, hn, 100 * (hmid / hn - 1), qmid, q, 100 * hout, L.nfv);
	assert_true(fabs(hmid / hn - 1) < 0.015);
	assert_true(fabs(qmid / q - 1) < 0.02);
	assert_true(hout < 0.03);
	free(h);
	free(u);
	lbm_release(&L);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sheet_exact_mass_no_clamp),
		cmocka_unit_test(test_sheet_threads_identical),
		cmocka_unit_test(test_rain_lake_films),
		cmocka_unit_test(test_freeslip_channel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
