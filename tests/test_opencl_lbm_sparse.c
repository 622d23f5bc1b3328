/*
 * test_opencl_lbm_sparse.c - block-sparse LBM-SWE stepping on the OpenCL
 * device (src/cl.c "LBM block-sparse stepping", src/cl/lbm.cl lbm_blk_*;
 * docs/scale.md "Block-sparse LBM stepping").
 *
 * On generated scenes where most 32 x 32 blocks are dry (a dam-break front
 * on a bumpy plane, a spring on the corner of four blocks with a drain
 * and a held level, an inflow edge into a dry channel, periodic edges
 * whose ghost ring carries water into sleeping blocks, on two sides and on
 * all four) the device is
 * stepped sparse and dense (WB_LBM_DENSE=1 at creation) in lockstep with
 * the CPU's sparse lbm_step, and the depth and velocity fields
 * (cl_lbm_macro, lbm_macro) are compared with memcmp after the first step
 * and then every 40 steps. Each scene also asserts that the sparse device
 * step computed fewer cells than the dense one. The solver entry
 * (cl_lbm_solve: window means, residual, books) gives the same state and
 * report sparse and dense (the window's samples taken on the blocks the
 * next step runs, lbm_enq_sample), on every scene.
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

#include "cl.h"
#include "lbm.h"
#include "solve.h"

static int dev_index(void)
{
	const char *s = getenv("WB_CL_DEVICE");
	if (s && *s)
		return atoi(s);
	int k = cl_default_device();
	return k < 0 ? 0 : k;
}

enum { SC_FRONT, SC_CORNER, SC_INFLOW, SC_WRAP, SC_WRAP4 };

static struct wb_sim sim_of(void)
{
	struct wb_sim s;
	memset(&s, 0, sizeof(s));
	s.solver = WB_SOLVER_LBM;
	s.viscosity = 0.02;
	s.manning = 0.03;
	s.dry_depth = 1e-3;
	s.max_steps = 100000;
	s.window = 100;
	s.tolerance = 1e-6;
	return s;
}

static double rough(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return ((*s >> 16) % 1000) / 1000.0;
}

static void scene(struct wb_raster *r, int kind)
{
	unsigned s = 5;
	int nx = 150, ny = 130;
	if (kind == SC_INFLOW)
		nx = 140, ny = 70;
	if (kind == SC_WRAP)
		nx = 200, ny = 100;
	if (kind == SC_WRAP4)
		nx = 384, ny = 384;
	assert_int_equal(wb_raster_alloc(r, nx, ny, 1.0), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			double z = kind == SC_WRAP4 ? 0.02 * rough(&s) :
				   kind == SC_INFLOW ?
				0.002 * (nx - i) + 0.02 * rough(&s) +
				(j < 10 || j >= ny - 10 ? 2.0 : 0.0) :
				0.01 * (i + j) + 0.05 * rough(&s) +
				0.3 * sin(0.11 * i) * cos(0.07 * j);
			r->z[i + (size_t)j * nx] = (float)z;
		}
	for (int q = 0; q < 4; q++)
		r->edges[q].kind = WB_EDGE_OPEN;
	switch (kind) {
	case SC_FRONT:
		for (int j = 20; j < 45; j++)
			for (int i = 25; i < 40; i++)
				r->h0[i + (size_t)j * nx] = 1.5f;
		break;
	case SC_CORNER:
		for (int j = 63; j < 65; j++)
			for (int i = 63; i < 65; i++) {
				r->src[i + (size_t)j * nx] = 0.05f;
				r->flags[i + (size_t)j * nx] |= WB_CELL_SOURCE;
			}
		r->flags[100 + (size_t)100 * nx] |= WB_CELL_SINK_ALL;
		r->flags[130 + (size_t)20 * nx] |= WB_CELL_FIXED;
		r->fixed_level[130 + (size_t)20 * nx] =
			r->z[130 + (size_t)20 * nx] + 0.3f;
		break;
	case SC_INFLOW:
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].discharge = 0.3;
		r->edges[WB_WEST].depth = 0.4;
		r->edges[WB_NORTH].kind = WB_EDGE_WALL;
		r->edges[WB_SOUTH].kind = WB_EDGE_WALL;
		break;
	case SC_WRAP:
		/* a few cells from the east edge: it reaches the ghost ring
		 * after the first step (which steps every block) */
		for (int j = 40; j < 70; j++)
			for (int i = nx - 24; i < nx - 8; i++)
				r->h0[i + (size_t)j * nx] = 1.0f;
		r->edges[WB_WEST].kind = WB_EDGE_PERIODIC;
		r->edges[WB_EAST].kind = WB_EDGE_PERIODIC;
		break;
	case SC_WRAP4:
		/* every edge periodic, a flat bed (the pools spread every
		 * way), a shallow pool 3 cells from each edge
		 * (so that its water reaches the edge after the first step,
		 * which steps every block), at
		 * rows and columns (block row or column 3 or 9 of 12) far from
		 * the others: each side's ghost row or column carries water
		 * into sleeping blocks of the opposite side, that no water on
		 * the grid is near */
		for (int j = 0; j < ny; j++)
			for (int i = 0; i < nx; i++) {
				const int w = i >= 3 && i < 8 && j >= 100 && j < 108,
					  e = i >= nx - 8 && i < nx - 3 && j >= 290 && j < 298,
					  n = j >= 3 && j < 8 && i >= 290 && i < 298,
					  so = j >= ny - 8 && j < ny - 3 && i >= 100 && i < 108;
				if (w || e || n || so)
					r->h0[i + (size_t)j * nx] = 0.2f;
			}
		for (int q = 0; q < 4; q++)
			r->edges[q].kind = WB_EDGE_PERIODIC;
		break;
	}
}

static void lockstep(int kind, long steps)
{
	static const char *names[] = { "front", "corner spring", "inflow",
				       "periodic", "periodic on every edge" };
	struct wb_raster r;
	scene(&r, kind);
	struct wb_sim sim = sim_of();
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	assert_int_equal(cl_env_open(dev_index(), &e, &d), WB_OK);
	struct cl_lbm *sp = NULL, *dn = NULL;
	assert_int_equal(cl_lbm_create(e, &r, &sim, 2, 0, &sp, &d), WB_OK);
	setenv("WB_LBM_DENSE", "1", 1);
	assert_int_equal(cl_lbm_create(e, &r, &sim, 2, 0, &dn, &d), WB_OK);
	unsetenv("WB_LBM_DENSE");
	int on = 0;
	cl_lbm_cells(sp, &on);
	assert_int_equal(on, 1);
	cl_lbm_cells(dn, &on);
	assert_int_equal(on, 0);
	struct lbm cpu;
	assert_int_equal(lbm_init(&cpu, &r, &sim, 2, &d), WB_OK);
	const size_t n = (size_t)r.nx * r.ny;
	float *f[9];
	for (int q = 0; q < 9; q++)
		assert_non_null(f[q] = malloc(n * sizeof(float)));
	for (long k = 0; k < steps;) {
		long run = k == 0 ? 1 : 40;
		assert_int_equal(cl_lbm_enqueue(sp, run, &d), WB_OK);
		assert_int_equal(cl_lbm_enqueue(dn, run, &d), WB_OK);
		assert_int_equal(lbm_step(&cpu, run, &d), WB_OK);
		assert_int_equal(cl_lbm_sync(sp, &d), WB_OK);
		assert_int_equal(cl_lbm_sync(dn, &d), WB_OK);
		k += run;
		assert_int_equal(cl_lbm_macro(sp, f[0], f[1], f[2], &d), WB_OK);
		assert_int_equal(cl_lbm_macro(dn, f[3], f[4], f[5], &d), WB_OK);
		lbm_macro(&cpu, f[6], f[7], f[8]);
		for (int q = 0; q < 3; q++) {
			if (memcmp(f[q], f[q + 3], n * sizeof(float)))
				fail_msg("%s: sparse and dense device differ (field %d) after step %ld",
					 names[kind], q, k);
			if (memcmp(f[q], f[q + 6], n * sizeof(float)))
				fail_msg("%s: sparse device and cpu differ (field %d) after step %ld",
					 names[kind], q, k);
		}
	}
	double hs = 0;
	for (size_t q = 0; q < n; q++)
		hs += f[0][q];
	const long long cs = cl_lbm_cells(sp, &on), cd = cl_lbm_cells(dn, &on);
	print_message("  %s: %ld steps identical (sparse device, dense device, cpu), water %.4g m^3, sparse stepped %.1f %% of the dense cell-steps\n",
		      names[kind], steps, hs, 100.0 * (double)cs / (double)cd);
	assert_true(hs > 0);
	assert_true(cd == (long long)n * steps);
	assert_true(cs < cd);
	for (int q = 0; q < 9; q++)
		free(f[q]);
	lbm_release(&cpu);
	cl_lbm_free(sp);
	cl_lbm_free(dn);
	cl_env_free(e);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

static void test_front(void **state)
{
	(void)state;
	lockstep(SC_FRONT, 321);
}

static void test_corner(void **state)
{
	(void)state;
	lockstep(SC_CORNER, 281);
}

static void test_inflow(void **state)
{
	(void)state;
	lockstep(SC_INFLOW, 281);
}

static void test_periodic(void **state)
{
	(void)state;
	lockstep(SC_WRAP, 241);
}

/* Every side's ghost cells (src/cl/lbm.cl lbm_blk_edge): without the
 * north or the south ghost row, or the west or east ghost column, the
 * sparse device leaves a block asleep that the wrapped water enters. */
static void test_periodic4(void **state)
{
	(void)state;
	lockstep(SC_WRAP4, 121);
}

/* cl_lbm_solve sparse and dense: the same state and report. */
/* cl_lbm_solve to its step cap, sparse and dense: the window means (sampled
 * on the blocks the next step runs, lbm_enq_sample), the residual and the
 * books. On the front and the inflow most blocks are dry, so a sample
 * that missed a cell with water (a block beside a wet one, a ghost ring)
 * would change the means. */
static void solve_case(int kind, const char *name, long window)
{
	struct wb_raster r;
	scene(&r, kind);
	struct wb_sim sim = sim_of();
	sim.max_steps = 800;
	sim.window = window;
	struct wb_solve_opts o = { 0 };
	o.threads = 2;
	o.opencl = 1;
	o.cl_device = dev_index();
	struct wb_state a, b;
	struct wb_solve_report ra, rb;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(cl_lbm_solve(&r, &sim, &o, &a, &ra, &d), WB_OK);
	setenv("WB_LBM_DENSE", "1", 1);
	assert_int_equal(cl_lbm_solve(&r, &sim, &o, &b, &rb, &d), WB_OK);
	unsetenv("WB_LBM_DENSE");
	const size_t n = (size_t)r.nx * r.ny * sizeof(float);
	assert_memory_equal(a.h, b.h, n);
	assert_memory_equal(a.u, b.u, n);
	assert_memory_equal(a.v, b.v, n);
	assert_int_equal(ra.steps, rb.steps);
	assert_memory_equal(&ra.residual, &rb.residual, sizeof(double));
	assert_memory_equal(&ra.vol_final, &rb.vol_final, sizeof(double));
	assert_true(ra.vol_in == rb.vol_in && ra.vol_out == rb.vol_out);
	assert_int_equal(ra.clamped, rb.clamped);
	/* the means hold water: something was sampled */
	double hs = 0;
	for (size_t q = 0; q < (size_t)r.nx * r.ny; q++)
		hs += a.h[q];
	print_message("  solve (%s, window %ld): %ld steps, residual %.3g, mean water %.4g m^3, sparse = dense\n",
		      name, window, ra.steps, ra.residual, hs * r.dx * r.dx);
	assert_true(ra.steps == 800 && ra.residual > 0 && hs > 0);
	wb_state_free(&a);
	wb_state_free(&b);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

static void test_solve(void **state)
{
	(void)state;
	solve_case(SC_CORNER, "corner spring", 100);
	solve_case(SC_WRAP, "periodic", 100);
	/* a window of 13 steps is sampled every step (lbm_solve's
	 * sample_every: no divisor from 2 to 5), so the steps where water
	 * first reaches a block's border are sampled too */
	solve_case(SC_FRONT, "front", 13);
	solve_case(SC_INFLOW, "inflow", 13);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_front),
		cmocka_unit_test(test_corner),
		cmocka_unit_test(test_inflow),
		cmocka_unit_test(test_periodic),
		cmocka_unit_test(test_periodic4),
		cmocka_unit_test(test_solve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
