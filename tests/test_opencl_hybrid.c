/*
 * test_opencl_hybrid.c - the LBM/FV hybrid (src/lbm_fv.c, docs/lbm.md
 * "Supercritical flow") on the OpenCL back end (src/cl.c, cl_fv_*): the
 * device bake must give the CPU bake's bytes, on whatever OpenCL device
 * is present (PoCL on the CPU in make test; built only in OPENCL=1
 * builds).
 *
 * Each scene runs lbm_solve_hybrid (CPU, hybrid on) and cl_lbm_solve with
 * simulation.lbm_hybrid set, and compares every byte of the depth and
 * velocity fields and every figure of the report that the manifest shows
 * (steps, simulated time, volumes in and out, final volume, clamped
 * cell-steps, residual, convergence), and the FV note (its cell-step
 * count, which must be > 0: the FV update acted):
 *   - sheet flow from a spring down a rough 8 % slope, open edges (the
 *     spring's cells are FV cells: sources act after the FV update);
 *   - the SWASHES transcritical bump with a shock, coarse (inflow by
 *     discharge west, held level east, periodic north/south: the FV
 *     cells' HLL flux at inflow and level edges, edge_adj);
 *   - MacDonald's subcritical channel through its start-up (the cells
 *     next to the held-level closure are marked on the state they pull
 *     from it: the device fills the ghosts before lbm_fv_rows and flags
 *     those rows; the CPU bake clamps 0 cell-steps there, 918 before);
 *   - a steep 2D valley with an inflow by velocity, walls, a blocker, a
 *     drain, a held level and a flow modifier next to supercritical
 *     cells, 1200 steps with the convergence test on (window means: the FV cells' own
 *     state in every sample).
 * A lake at rest (no FV cell: no shore, the bed submerged; shorelines
 * are FV cells since the hybrid marks them) moves one byte per row
 * segment per step between host and device, nothing more. And
 * lbm_fv_mark_rows and lbm_fv_mark_segs, the marking on the rows or row
 * segments the device flags, are lbm_fv_mark's to the byte when the
 * rows or segments left out hold garbage.
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

#include "analytic.h"
#include "cl.h"
#include "lbm.h"
#include "solve.h"
#include "sheet_scene.h"

static int dev_index(void)
{
	const char *s = getenv("WB_CL_DEVICE");
	if (s && *s)
		return atoi(s);
	int k = cl_default_device();
	return k < 0 ? 0 : k;
}

static struct wb_sim sim_hybrid(void)
{
	struct wb_sim s;
	memset(&s, 0, sizeof(s));
	s.solver = WB_SOLVER_LBM;
	s.viscosity = 0.05;
	s.manning = 0.035;
	s.dry_depth = 1e-3;
	s.max_steps = 4000;
	s.window = 100;
	s.tolerance = 1e-3;
	s.lbm_hybrid = 1;
	return s;
}

/* The FV cell-steps of lbm_solve's note, or -1 when there is none. */
static long fv_note(const struct wb_diags *d)
{
	for (int k = 0; k < d->n; k++) {
		const char *m = d->v[k].msg;
		long n;
		if (m && strstr(m, "finite-volume update of the hybrid") &&
		    sscanf(m, "lbm: %ld cell-steps", &n) == 1)
			return n;
	}
	return -1;
}

/* The host-device traffic per step (kB) of the OpenCL bake's note, or -1. */
static double cl_note_kb(const struct wb_diags *d)
{
	for (int k = 0; k < d->n; k++) {
		const char *m = d->v[k].msg, *t;
		double kb;
		if (m && (t = strstr(m, "between host and device, ")) &&
		    sscanf(t + strlen("between host and device, "), "%lf kB per step",
			   &kb) == 1)
			return kb;
	}
	return -1;
}

/* Both bakes of scene r; every byte and figure compared. Returns the FV
 * cell-steps (-1: none); *kb the OpenCL bake's traffic per step. */
static long compare(const char *name, const struct wb_raster *r,
		    const struct wb_sim *sim, long steps, double *kb)
{
	struct wb_solve_opts o = { 0 };
	o.steps = steps;
	o.threads = 2;
	o.cl_device = dev_index();
	struct wb_diags dc, dg;
	wb_diags_init(&dc);
	wb_diags_init(&dg);
	struct wb_state a, b;
	struct wb_solve_report ra, rb;
	enum wb_status s1 = lbm_solve_hybrid(r, sim, &o, &a, &ra, &dc, 1);
	o.opencl = 1;
	enum wb_status s2 = cl_lbm_solve(r, sim, &o, &b, &rb, &dg);
	for (int k = 0; k < dc.n; k++)
		if (dc.v[k].sev == WB_SEV_ERROR)
			print_message("cpu: %s\n", dc.v[k].msg);
	for (int k = 0; k < dg.n; k++)
		if (dg.v[k].sev == WB_SEV_ERROR)
			print_message("opencl: %s\n", dg.v[k].msg);
	print_message("%s: CPU lattice speed re-chosen %ld times, h_deep %g m\n", name,
		      ra.rescales, ra.h_deep);
	assert_int_equal(s1, WB_OK);
	assert_int_equal(s2, WB_OK);
	const long fc = fv_note(&dc), fg = fv_note(&dg);
	print_message("%s: %ld steps%s, FV cell-steps %ld (OpenCL %ld), clamped %ld (%ld), in %.9g (%.9g) out %.9g (%.9g) m^3, %.2f s CPU, %.2f s OpenCL\n",
		      name, ra.steps, ra.converged ? " (steady)" : "", fc, fg,
		      ra.clamped, rb.clamped, ra.vol_in, rb.vol_in, ra.vol_out,
		      rb.vol_out, ra.seconds, rb.seconds);
	assert_int_equal(fg, fc);
	*kb = cl_note_kb(&dg);
	print_message("%s: host <-> device %.4g kB per step\n", name, *kb);
	assert_true(*kb >= 0);
	const size_t n = (size_t)r->nx * r->ny;
	assert_memory_equal(a.h, b.h, n * sizeof(float));
	assert_memory_equal(a.u, b.u, n * sizeof(float));
	assert_memory_equal(a.v, b.v, n * sizeof(float));
	assert_int_equal(ra.steps, rb.steps);
	assert_int_equal(ra.converged, rb.converged);
	assert_int_equal(ra.clamped, rb.clamped);
	/* where the limiter acted: the same blocks */
	assert_int_equal(ra.clamp_blocks, rb.clamp_blocks);
	assert_int_equal(ra.clamp_most_n, rb.clamp_most_n);
	assert_memory_equal(ra.clamp_box, rb.clamp_box, sizeof(ra.clamp_box));
	assert_memory_equal(ra.clamp_most, rb.clamp_most, sizeof(ra.clamp_most));
	assert_memory_equal(&ra.sim_time, &rb.sim_time, sizeof(double));
	assert_memory_equal(&ra.vol_initial, &rb.vol_initial, sizeof(double));
	assert_memory_equal(&ra.vol_final, &rb.vol_final, sizeof(double));
	assert_memory_equal(&ra.vol_in, &rb.vol_in, sizeof(double));
	assert_memory_equal(&ra.vol_out, &rb.vol_out, sizeof(double));
	assert_memory_equal(&ra.balance_error, &rb.balance_error, sizeof(double));
	assert_true((isnan(ra.residual) && isnan(rb.residual)) ||
		    memcmp(&ra.residual, &rb.residual, sizeof(double)) == 0);
	assert_true(ra.h_deep == rb.h_deep && ra.h_flood == rb.h_flood &&
		    ra.viscosity == rb.viscosity && ra.rescales == rb.rescales &&
		    ra.lattice_speed == rb.lattice_speed && ra.tau == rb.tau);
	assert_non_null(rb.lattice_speed_reason);
	assert_string_equal(ra.lattice_speed_reason, rb.lattice_speed_reason);
	wb_state_free(&a);
	wb_state_free(&b);
	wb_diags_release(&dc);
	wb_diags_release(&dg);
	return fc;
}

/* the sheet (sheet_scene.h) */
static void sheet_scene(struct wb_raster *r, int nx, int ny)
{
	assert_int_equal(sheet_scene_make(r, nx, ny), WB_OK);
}

static void test_sheet(void **state)
{
	(void)state;
	struct wb_raster r;
	sheet_scene(&r, 96, 48);
	struct wb_sim sim = sim_hybrid();
	double kb;
	assert_true(compare("sheet", &r, &sim, 600, &kb) > 0);
	wb_raster_free(&r);
}

/* SWASHES' bump with a shock (q = 0.18 m^2/s, held level 0.33 m) at
 * dx = 0.25 m, 3 rows, periodic north/south. */
static void test_bump_shock(void **state)
{
	(void)state;
	const int nx = 100, ny = 3;
	const double dx = 25.0 / nx;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r.z[k] = (float)an_bump_z((i + 0.5) * dx);
			r.h0[k] = (float)(0.33 - r.z[k]);
		}
	r.edges[WB_NORTH].kind = WB_EDGE_PERIODIC;
	r.edges[WB_SOUTH].kind = WB_EDGE_PERIODIC;
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].discharge = 0.18;
	r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
	r.edges[WB_EAST].level = 0.33;
	struct wb_sim sim = sim_hybrid();
	sim.viscosity = 0.01;
	sim.manning = 0;
	sim.dry_depth = 1e-4;
	double kb;
	assert_true(compare("bump shock", &r, &sim, 3000, &kb) > 0);
	wb_raster_free(&r);
}

/* MacDonald's subcritical channel of test_validation (1000 m at 2.5 m,
 * q = 2 m^2/s, n = 0.033, held level east), its first 1,600 steps: the
 * channel drains while the inflow ramps up, and from step 1,076 on the
 * cell next to the level closure pulls Froude numbers above LBM_FV_ON
 * from it that its stored state does not show. */
static void test_macdonald_startup(void **state)
{
	(void)state;
	const int nx = 400, ny = 3;
	const double dx = 2.5, q = 2.0, n = 0.033;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r.z[k] = (float)an_mcd_z(0, q, n, (i + 0.5) * dx);
			r.h0[k] = (float)an_mcd_h(0, (i + 0.5) * dx);
		}
	r.edges[WB_NORTH].kind = WB_EDGE_PERIODIC;
	r.edges[WB_SOUTH].kind = WB_EDGE_PERIODIC;
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].discharge = q;
	r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
	const double xg = 1000.0 + 0.5 * dx;
	r.edges[WB_EAST].level = an_mcd_h(0, xg) + an_mcd_z(0, q, n, xg);
	struct wb_sim sim = sim_hybrid();
	sim.viscosity = 0.01;
	sim.manning = n;
	sim.dry_depth = 1e-4;
	double kb;
	assert_true(compare("MacDonald start-up", &r, &sim, 1600, &kb) > 0);
	wb_raster_free(&r);
}

/* A steep valley (6 % down to the east, V-shaped across), inflow by
 * velocity west, walls north and south, open east; a blocker deck, a
 * drain, a held-level pond and a flow modifier in the channel. */
static void test_valley_steady(void **state)
{
	(void)state;
	const int nx = 80, ny = 40;
	const double dx = 2.0;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r.z[k] = (float)(20 - 0.06 * i * dx +
					 0.25 * fabs(j - ny / 2.0) * dx / 4);
			r.h0[k] = 0;
		}
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].velocity = 1.5;
	r.edges[WB_WEST].depth = 0.3;
	r.edges[WB_EAST].kind = WB_EDGE_OPEN;
	r.edges[WB_NORTH].kind = WB_EDGE_WALL;
	r.edges[WB_SOUTH].kind = WB_EDGE_WALL;
	const int jc = ny / 2;
	r.flags[50 + (size_t)(jc + 4) * nx] |= WB_CELL_SINK_ALL;
	for (int j = jc - 1; j <= jc; j++)
		for (int i = 60; i < 62; i++) {
			size_t k = i + (size_t)j * nx;
			r.flags[k] |= WB_CELL_FIXED;
			r.fixed_level[k] = r.z[k] + 0.2f;
		}
	r.mod_u[20 + (size_t)(jc - 2) * nx] = 0.5f;
	r.mod_v[20 + (size_t)(jc - 2) * nx] = 0.5f;
	r.mod_k[20 + (size_t)(jc - 2) * nx] = 2.0f;
	r.flags[20 + (size_t)(jc - 2) * nx] |= WB_CELL_MODIFIER;
	struct wb_sim sim = sim_hybrid();
	/* a lattice speed for 3.7 m deep water: the pond's water never makes
	 * lbm_step re-choose it (the OpenCL back end does not: docs/opencl.md) */
	sim.lattice_speed = 15;
	sim.max_steps = 1200;
	double kb;
	assert_true(compare("valley (window means)", &r, &sim, 0, &kb) > 0);
	wb_raster_free(&r);
}

/* lbm_fv_mark_rows (the marking on the rows the device flags) against
 * lbm_fv_mark on the same state: the rows that hold no wet cell are left
 * out and filled with garbage that a scan would mark (populations of a
 * fast, deep flow; depths of a dry cell two rows off), the result must be
 * lbm_fv_mark's to the byte. */
static void test_mark_rows(void **state)
{
	(void)state;
	struct wb_raster r;
	sheet_scene(&r, 96, 48);
	struct wb_sim sim = sim_hybrid();
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm a, b;
	assert_int_equal(lbm_init(&a, &r, &sim, 1, &d), WB_OK);
	assert_int_equal(lbm_init(&b, &r, &sim, 1, &d), WB_OK);
	assert_int_equal(lbm_step(&a, 150, &d), WB_OK);
	assert_int_equal(lbm_step(&b, 150, &d), WB_OK);
	uint8_t *scan = calloc((size_t)a.H, 1);
	assert_non_null(scan);
	const float hd = (float)a.p.h_dry;
	int nscan = 0;
	for (int j = 1; j <= a.ny; j++)
		for (int i = 1; i <= a.nx; i++)
			if (a.h[a.cur][i + j * a.W] > hd && !scan[j]) {
				scan[j] = 1;
				nscan++;
			}
	assert_true(nscan > 0 && nscan < a.ny); /* the spring's water has not
						   reached every row */
	int garbage = 0;
	for (int j = 1; j <= b.ny; j++) {
		const int nearby = scan[j] || scan[j - 1] || (j < b.ny && scan[j + 1]);
		for (int i = 1; i <= b.nx; i++) {
			const int n = i + j * b.W;
			if (!scan[j]) {
				for (int q = 0; q < LBM_Q; q++)
					b.f[b.cur][q][n] = q == 1 ? 1 << 26 : 1 << 22;
				garbage++;
			}
			if (!nearby)
				b.h[b.cur][n] = 0;
		}
	}
	assert_true(garbage > 0);
	lbm_fv_mark(&a);
	lbm_fv_mark_rows(&b, scan);
	print_message("mark rows: %d of %d rows scanned, %d FV cells\n", nscan,
		      a.ny, a.nfv);
	assert_true(a.nfv > 0);
	assert_int_equal(a.nfv, b.nfv);
	assert_memory_equal(a.fvl, b.fvl, (size_t)a.nfv * sizeof(int32_t));
	assert_memory_equal(a.fvf, b.fvf, a.ncell);
	assert_memory_equal(a.fvm, b.fvm, a.ncell * sizeof(float));
	assert_memory_equal(a.fvix, b.fvix, a.ncell * sizeof(int32_t));
	/* and a scan of every row marks the garbage: the test can fail */
	memset(scan, 1, (size_t)b.H);
	lbm_fv_mark_rows(&b, scan);
	assert_true(b.nfv > a.nfv);
	free(scan);
	lbm_release(&a);
	lbm_release(&b);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* lbm_fv_mark_segs, the marking on the row segments the device flags
 * (cl.c cl_fv_mark), is lbm_fv_mark's to the byte when the segments
 * left out hold garbage: populations outside the scanned segments,
 * depths outside them and the segments beside them, and stale
 * candidate flags (fvh) everywhere outside the scanned segments, which
 * the row pass writes only near a core cell and the column pass must
 * not read elsewhere. */
static void test_mark_segs(void **state)
{
	(void)state;
	struct wb_raster r;
	sheet_scene(&r, 150, 60);
	struct wb_sim sim = sim_hybrid();
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm a, b;
	assert_int_equal(lbm_init(&a, &r, &sim, 1, &d), WB_OK);
	assert_int_equal(lbm_init(&b, &r, &sim, 1, &d), WB_OK);
	assert_int_equal(lbm_step(&a, 400, &d), WB_OK);
	assert_int_equal(lbm_step(&b, 400, &d), WB_OK);
	const int ns = (a.nx + LBM_FV_SEG - 1) / LBM_FV_SEG;
	const size_t nsb = (size_t)a.H * ns;
	uint8_t *scan = calloc(nsb, 1), *work = calloc(3 * nsb, 1);
	assert_non_null(scan);
	assert_non_null(work);
	const float hd = (float)a.p.h_dry;
	int nscan = 0;
	for (int j = 1; j <= a.ny; j++)
		for (int i = 1; i <= a.nx; i++) {
			uint8_t *q = &scan[(size_t)j * ns + (i - 1) / LBM_FV_SEG];
			if (a.h[a.cur][i + j * a.W] > hd && !*q) {
				*q = 1;
				nscan++;
			}
		}
	/* some rows hold water in one segment and not in another */
	int mixed = 0;
	for (int j = 1; j <= a.ny; j++) {
		int on = 0;
		for (int s = 0; s < ns; s++)
			on += scan[(size_t)j * ns + s];
		mixed += on > 0 && on < ns;
	}
	assert_true(mixed > 0);
	int garbage = 0;
	for (int j = 1; j <= b.ny; j++)
		for (int i = 1; i <= b.nx; i++) {
			const int n = i + j * b.W, s = (i - 1) / LBM_FV_SEG;
			int nearby = 0;
			for (int dj = -1; dj <= 1; dj++)
				for (int ds = -1; ds <= 1; ds++)
					nearby |= s + ds >= 0 && s + ds < ns &&
						  scan[(size_t)(j + dj) * ns + s + ds];
			if (!scan[(size_t)j * ns + s]) {
				for (int q = 0; q < LBM_Q; q++)
					b.f[b.cur][q][n] = q == 1 ? 1 << 26 : 1 << 22;
				if (!(b.fvf[n] & 4))
					b.fvh[n] = 1;
				garbage++;
			}
			if (!nearby)
				b.h[b.cur][n] = 0;
		}
	assert_true(garbage > 0);
	lbm_fv_mark(&a);
	assert_int_equal(lbm_fv_mark_segs(&b, scan, work), 0);
	print_message("mark segments: %d of %d scanned (%d rows partly), %d FV cells\n",
		      nscan, a.ny * ns, mixed, a.nfv);
	assert_true(a.nfv > 0);
	assert_int_equal(a.nfv, b.nfv);
	assert_memory_equal(a.fvl, b.fvl, (size_t)a.nfv * sizeof(int32_t));
	assert_memory_equal(a.fvf, b.fvf, a.ncell);
	assert_memory_equal(a.fvm, b.fvm, a.ncell * sizeof(float));
	assert_memory_equal(a.fvix, b.fvix, a.ncell * sizeof(int32_t));
	/* and a scan of every segment marks the garbage: the test can fail */
	memset(scan, 1, nsb);
	lbm_fv_mark_segs(&b, scan, work);
	assert_true(b.nfv > a.nfv);
	free(scan);
	free(work);
	lbm_release(&a);
	lbm_release(&b);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* A lake at rest over a rough bowl, submerged, walls round it: no FV
 * cell, no row that could hold one (no dry cell: a shoreline would be
 * FV), so each step moves one byte per row segment (LBM_FV_SEG
 * columns) and nothing else. */
static void test_lake_no_transfer(void **state)
{
	(void)state;
	const int nx = 70, ny = 50;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, 2.0), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double x = (i - nx / 2.0) / nx, y = (j - ny / 2.0) / ny;
			r.z[k] = (float)(8 * (x * x + y * y) +
					 0.6 * cos(17 * x) * cos(13 * y));
			r.h0[k] = 5.0f - r.z[k];
		}
	struct wb_sim sim = sim_hybrid();
	double kb;
	assert_int_equal(compare("lake at rest", &r, &sim, 200, &kb), -1);
	/* kB: one byte per segment of a padded row */
	const double want = (ny + 2) * ((nx + LBM_FV_SEG - 1) / LBM_FV_SEG) / 1e3;
	print_message("lake at rest: %g kB per step (one byte per row segment: %g)\n",
		      kb, want);
	assert_true(fabs(kb - want) <= 1e-3 * want);
	wb_raster_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mark_rows),
		cmocka_unit_test(test_mark_segs),
		cmocka_unit_test(test_sheet),
		cmocka_unit_test(test_lake_no_transfer),
		cmocka_unit_test(test_bump_shock),
		cmocka_unit_test(test_macdonald_startup),
		cmocka_unit_test(test_valley_steady),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
