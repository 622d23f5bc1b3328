/*
 * test_unsteady.c - where a bake that stopped before steady still changes
 * (src/unsteady.c wb_unsteady_where, the solvers' unsteady_* report).
 *
 *   - the tiling on made-up fields: shares, the tile with the most, the
 *     box around the fewest tiles that hold half, films left out, ties,
 *     edge tiles, the tile size on a wide grid, nothing changed, and the
 *     same report for 1 and 2 threads;
 *   - both solvers on a sloshing basin that cannot meet a tolerance of
 *     1e-12: the report of a run to 1000 steps equals the tiling, done
 *     here, of its result (the last window's means) against the result of
 *     the same run stopped one window earlier (the window before's means:
 *     the runs are deterministic, so that is the same field).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "lbm.h"
#include "solve.h"
#include "swe.h"
#include "wbake.h"

static void fields(int nx, int ny, float **h, float **u1, float **v1,
		   float **u0, float **v0)
{
	size_t n = (size_t)nx * ny;
	*h = calloc(n, sizeof(float));
	*u1 = calloc(n, sizeof(float));
	*v1 = calloc(n, sizeof(float));
	*u0 = calloc(n, sizeof(float));
	*v0 = calloc(n, sizeof(float));
	assert_non_null(*h && *u1 && *v1 && *u0 && *v0);
	for (size_t q = 0; q < n; q++)
		(*h)[q] = 1.0f;
}

static void box_is(const int *b, int x0, int x1, int y0, int y1)
{
	assert_int_equal(b[0], x0);
	assert_int_equal(b[1], x1);
	assert_int_equal(b[2], y0);
	assert_int_equal(b[3], y1);
}

static void test_tiles(void **state)
{
	(void)state;
	enum { NX = 100, NY = 70 };
	float *h, *u1, *v1, *u0, *v0;
	fields(NX, NY, &h, &u1, &v1, &u0, &v0);
	/* tiles of 32: 4 x 3, the last column 4 cells wide, the last row 6 */
	for (int k = 0; k < 10; k++) /* 10 in tile (2, 1) */
		u1[(70 + k) + 40 * NX] = 1.0f;
	for (int k = 0; k < 6; k++) /* 3 in tile (0, 0): 2 m deep, v by 0.5 */
		v0[(3 + k) + 5 * NX] = 0.5f, h[(3 + k) + 5 * NX] = 2.0f;
	for (int k = 0; k < 5; k++) /* 5 in the corner tile (3, 2) */
		u1[(96 + k % 4) + (64 + k) * NX] = -1.0f;
	/* films (h <= thin) do not count, however fast */
	u1[50 + 10 * NX] = 100.0f, h[50 + 10 * NX] = 0.01f;
	struct wb_solve_report rep;
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(wb_unsteady_where(NX, NY, h, u1, v1, u0, v0, 0.01f,
					   &rep), 0);
	assert_int_equal(rep.unsteady_tile, 32);
	box_is(rep.unsteady_most, 64, 96, 32, 64);
	assert_true(fabs(rep.unsteady_most_share - 10.0 / 18.0) < 1e-12);
	/* 10 of 18 is more than half already */
	box_is(rep.unsteady_box, 64, 96, 32, 64);
	/* the film counts once it is deeper than thin */
	struct wb_solve_report r2;
	memset(&r2, 0, sizeof(r2));
	h[50 + 10 * NX] = 0.0f;
	u1[50 + 10 * NX] = 0.0f;
	for (int k = 0; k < 10; k++) /* now 10 in tile (0, 0) too */
		u1[(3 + k) + 20 * NX] = 1.0f, h[(3 + k) + 20 * NX] = 0.4f;
	assert_int_equal(wb_unsteady_where(NX, NY, h, u1, v1, u0, v0, 0.01f,
					   &r2), 0);
	/* tile (0, 0): 6 x 2 x 0.25 + 10 x 0.4 = 7, tile (2, 1): 10, tile
	   (3, 2): 5; half of 22 needs the two largest */
	box_is(r2.unsteady_most, 64, 96, 32, 64);
	assert_true(fabs(r2.unsteady_most_share - 10.0 / 22.0) < 1e-6);
	box_is(r2.unsteady_box, 0, 96, 0, 64);
	assert_true(fabs(r2.unsteady_box_share - 17.0 / 22.0) < 1e-6);
	/* the same for 1 and 2 threads */
	struct wb_solve_report r1;
	memset(&r1, 0, sizeof(r1));
	int nt = omp_get_max_threads();
	omp_set_num_threads(1);
	assert_int_equal(wb_unsteady_where(NX, NY, h, u1, v1, u0, v0, 0.01f,
					   &r1), 0);
	omp_set_num_threads(nt > 1 ? nt : 2);
	assert_int_equal(r1.unsteady_tile, r2.unsteady_tile);
	assert_memory_equal(r1.unsteady_most, r2.unsteady_most, sizeof(r1.unsteady_most));
	assert_memory_equal(r1.unsteady_box, r2.unsteady_box, sizeof(r1.unsteady_box));
	assert_true(r1.unsteady_most_share == r2.unsteady_most_share);
	assert_true(r1.unsteady_box_share == r2.unsteady_box_share);
	/* a tie goes to the first tile in row-major order */
	memset(u1, 0, NX * NY * sizeof(float));
	memset(v0, 0, NX * NY * sizeof(float));
	for (size_t q = 0; q < (size_t)NX * NY; q++)
		h[q] = 1.0f;
	u1[40 + 40 * NX] = 1.0f; /* tile (1, 1) */
	u1[10 + 40 * NX] = 1.0f; /* tile (0, 1) */
	assert_int_equal(wb_unsteady_where(NX, NY, h, u1, v1, u0, v0, 0.01f,
					   &rep), 0);
	box_is(rep.unsteady_most, 0, 32, 32, 64);
	box_is(rep.unsteady_box, 0, 32, 32, 64);
	assert_true(rep.unsteady_box_share == 0.5);
	/* nothing changed: not measured */
	memcpy(u0, u1, NX * NY * sizeof(float));
	assert_int_equal(wb_unsteady_where(NX, NY, h, u1, v1, u0, v0, 0.01f,
					   &rep), 0);
	assert_int_equal(rep.unsteady_tile, 0);
	free(h), free(u1), free(v1), free(u0), free(v0);

	/* a wide grid: at most 32 tiles along a side, so 2048 / 32 = 64 */
	fields(2048, 40, &h, &u1, &v1, &u0, &v0);
	u1[2047 + 39 * 2048] = 1.0f;
	assert_int_equal(wb_unsteady_where(2048, 40, h, u1, v1, u0, v0, 0.01f,
					   &rep), 0);
	assert_int_equal(rep.unsteady_tile, 64);
	box_is(rep.unsteady_most, 1984, 2048, 0, 40);
	assert_true(rep.unsteady_most_share == 1.0);
	free(h), free(u1), free(v1), free(u0), free(v0);
}

/* A 64 x 48 basin, 1 m deep on a bed that rises eastward, a spring in
 * the west and a sink in the east: flow that a tolerance of 1e-12 never
 * calls steady. */
enum { BX = 64, BY = 48 };

static void basin(struct wb_raster *r)
{
	assert_int_equal(wb_raster_alloc(r, BX, BY, 1.0), WB_OK);
	for (int j = 0; j < BY; j++)
		for (int i = 0; i < BX; i++) {
			r->z[i + j * BX] = 0.005f * i;
			r->h0[i + j * BX] = 1.0f - 0.005f * i;
		}
	for (int j = -1; j <= 1; j++)
		for (int i = -1; i <= 1; i++) {
			int a = (10 + i) + (30 + j) * BX;
			int b = (50 + i) + (12 + j) * BX;
			r->src[a] = 2e-3f;
			r->flags[a] |= WB_CELL_SOURCE;
			r->src[b] = -2e-3f;
		}
}

/* Solve the basin for max_steps (fixed: exactly that many, --steps). */
static void run(int solver, long steps, int fixed, struct wb_state *st,
		struct wb_solve_report *rep)
{
	struct wb_raster r;
	struct wb_sim sim;
	struct wb_diags d;
	basin(&r);
	memset(&sim, 0, sizeof(sim));
	sim.solver = solver;
	sim.manning = 0.03;
	sim.viscosity = 0.05;
	sim.dry_depth = 1e-3;
	sim.window = 200;
	sim.tolerance = 1e-12;
	sim.max_steps = steps;
	sim.maccormack = 1;
	struct wb_solve_opts o;
	memset(&o, 0, sizeof(o));
	o.steps = fixed ? steps : 0;
	wb_diags_init(&d);
	enum wb_status s = solver == WB_SOLVER_SWE ?
				   swe_solve(&r, &sim, &o, st, rep, &d) :
				   lbm_solve(&r, &sim, &o, st, rep, &d);
	assert_int_equal(s, WB_OK);
	assert_false(rep->converged);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void check_solver(int solver, float thin)
{
	struct wb_state a, b;
	struct wb_solve_report ra, rb;
	run(solver, 1000, 0, &a, &ra);
	run(solver, 800, 0, &b, &rb);
	struct wb_solve_report want;
	memset(&want, 0, sizeof(want));
	assert_int_equal(wb_unsteady_where(BX, BY, a.h, a.u, a.v, b.u, b.v,
					   thin, &want), 0);
	print_message("%s: residual %.3g, %.3g %% of the change within x %d..%d, y %d..%d, %.3g %% in x %d..%d, y %d..%d (tiles of %d)\n",
		      solver == WB_SOLVER_SWE ? "swe" : "lbm", ra.residual,
		      100 * ra.unsteady_box_share, ra.unsteady_box[0],
		      ra.unsteady_box[1], ra.unsteady_box[2], ra.unsteady_box[3],
		      100 * ra.unsteady_most_share, ra.unsteady_most[0],
		      ra.unsteady_most[1], ra.unsteady_most[2],
		      ra.unsteady_most[3], ra.unsteady_tile);
	assert_int_equal(want.unsteady_tile, 32);
	assert_int_equal(ra.unsteady_tile, want.unsteady_tile);
	assert_memory_equal(ra.unsteady_most, want.unsteady_most, sizeof(want.unsteady_most));
	assert_memory_equal(ra.unsteady_box, want.unsteady_box, sizeof(want.unsteady_box));
	assert_true(ra.unsteady_most_share == want.unsteady_most_share);
	assert_true(ra.unsteady_box_share == want.unsteady_box_share);
	assert_true(ra.unsteady_box_share >= 0.5 && ra.unsteady_box_share <= 1.0);
	wb_state_free(&a);
	wb_state_free(&b);
}

static void test_swe_reports_where(void **state)
{
	(void)state;
	check_solver(WB_SOLVER_SWE, (float)(SWE_THIN * 1e-3));
}

static void test_lbm_reports_where(void **state)
{
	(void)state;
	check_solver(WB_SOLVER_LBM, (float)(LBM_THIN * 1e-3));
}

/* --steps runs (no windows) report nothing */
static void test_steps_reports_nothing(void **state)
{
	(void)state;
	struct wb_state st;
	struct wb_solve_report rep;
	run(WB_SOLVER_SWE, 600, 1, &st, &rep);
	assert_int_equal(rep.unsteady_tile, 0);
	wb_state_free(&st);
	run(WB_SOLVER_LBM, 600, 1, &st, &rep);
	assert_int_equal(rep.unsteady_tile, 0);
	wb_state_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiles),
		cmocka_unit_test(test_swe_reports_where),
		cmocka_unit_test(test_lbm_reports_where),
		cmocka_unit_test(test_steps_reports_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
