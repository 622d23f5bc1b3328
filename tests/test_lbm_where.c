/*
 * test_lbm_where.c - where the LBM's stability limiter acted (issue 11:
 * "the report says where it acted"): the run's clamp map (lbm.cmap, one
 * count per row and 32 columns) and its summary (lbm_clamp_where: the
 * 32 x 32 blocks, their box, the block with the most).
 *
 *   - the summary of a made-up map: box, the most, a tie, a grid whose
 *     size is no multiple of 32, an empty map;
 *   - the pure LBM (its Froude clamp acts) on a dam break over a dry bed:
 *     the map holds every clamped cell-step (its total equals the run's
 *     count) and nothing where no wave can have been (upstream of the
 *     rarefaction's head, beyond the front);
 *   - the same map from every kernel path: 1 and 2 threads, 8 and 16
 *     lanes, the fast paths and the general one, dense and block-sparse
 *     (a 2D sheet flow that clamps in many blocks);
 *   - lbm_solve reports it (clamp_blocks, box, the most), and nothing
 *     where nothing was clamped (the hybrid on the same sheet).
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
#include "sheet_scene.h"

static void test_summary(void **state)
{
	(void)state;
	/* 70 x 40 cells: 3 x 2 blocks, the last ones partial */
	const int nx = 70, ny = 40, cnx = 3;
	uint32_t *m = calloc((size_t)ny * cnx, sizeof(uint32_t));
	assert_non_null(m);
	struct wb_solve_report rep;
	memset(&rep, 0xff, sizeof(rep));
	assert_int_equal(lbm_clamp_where(m, nx, ny, &rep), 0);
	assert_int_equal(rep.clamp_blocks, 0);
	assert_int_equal(rep.clamp_most_n, 0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(rep.clamp_box[k], 0);

	m[5 * cnx + 1] = 7;   /* block (1, 0): 7 + 3 = 10 */
	m[31 * cnx + 1] = 3;
	m[35 * cnx + 2] = 10; /* block (2, 1): 10, a tie, later in row order */
	m[39 * cnx + 0] = 4;  /* block (0, 1): 4 */
	assert_int_equal(lbm_clamp_where(m, nx, ny, &rep), 24);
	assert_int_equal(rep.clamp_blocks, 3);
	const int box[4] = { 0, 70, 0, 40 }, most[4] = { 32, 64, 0, 32 };
	for (int k = 0; k < 4; k++) {
		assert_int_equal(rep.clamp_box[k], box[k]);
		assert_int_equal(rep.clamp_most[k], most[k]);
	}
	assert_int_equal(rep.clamp_most_n, 10);

	m[35 * cnx + 2] = 11; /* now the most: clipped at the grid's corner */
	assert_int_equal(lbm_clamp_where(m, nx, ny, &rep), 25);
	const int most2[4] = { 64, 70, 32, 40 };
	for (int k = 0; k < 4; k++)
		assert_int_equal(rep.clamp_most[k], most2[k]);
	free(m);
}

static long map_total(const struct lbm *L)
{
	struct wb_solve_report rep;
	memset(&rep, 0, sizeof(rep));
	return lbm_clamp_where(L->cmap, L->nx, L->ny, &rep);
}

/* A dam break onto a dry bed (Ritter: 1 m against nothing at x0 = 150 m,
 * 400 x 8 cells of 1 m, walls), pure LBM: its Froude clamp acts in the
 * rarefaction and at the front. No clamp can be upstream of the
 * rarefaction's head (x0 - c t, the still water it has not reached) or
 * beyond the front (x0 + 2 c t, dry land): the box lies within, give or
 * take the block grain. */
static void test_dam_break_pure(void **state)
{
	(void)state;
	const int nx = 400, ny = 8;
	const double dx = 1.0, x0 = 150.0, hl = 1.0;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++)
			r.h0[i + (size_t)j * nx] = (i + 0.5) * dx < x0 ? (float)hl : 0;
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.solver = WB_SOLVER_LBM;
	sim.viscosity = 0.01;
	sim.dry_depth = 1e-4;
	sim.lbm_hybrid = 0; /* the pure LBM: its limiter holds the fast flow */
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	assert_int_equal(lbm_init(&L, &r, &sim, 1, &d), WB_OK);
	assert_int_equal(lbm_step(&L, 60, &d), WB_OK);
	const double t = L.time, c = sqrt(WB_GRAVITY * hl);
	struct wb_solve_report rep;
	memset(&rep, 0, sizeof(rep));
	long total = lbm_clamp_where(L.cmap, L.nx, L.ny, &rep);
	printf("dam break, pure LBM, t = %.2f s: clamped %ld, map %ld in %ld blocks, x %d..%d cells (rarefaction head %.1f m, front %.1f m)\n",
	       t, L.clamped, total, rep.clamp_blocks, rep.clamp_box[0],
	       rep.clamp_box[1], x0 - c * t, x0 + 2 * c * t);
	assert_true(L.clamped > 0);
	assert_int_equal(total, L.clamped);
	assert_true(rep.clamp_blocks > 0);
	const double B = WB_CLAMP_BLOCK * dx;
	assert_true(rep.clamp_box[0] * dx >= x0 - c * t - B);
	assert_true(rep.clamp_box[1] * dx <= x0 + 2 * c * t + B);
	assert_true(rep.clamp_box[1] * dx - rep.clamp_box[0] * dx < nx * dx);
	assert_int_equal(rep.clamp_box[2], 0);
	assert_int_equal(rep.clamp_box[3], ny);
	assert_true(rep.clamp_most_n > 0 && rep.clamp_most_n <= L.clamped);
	assert_true(rep.clamp_most[0] >= rep.clamp_box[0] &&
		    rep.clamp_most[1] <= rep.clamp_box[1]);
	lbm_release(&L);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* the sheet (sheet_scene.h) */
static void sheet_scene(struct wb_raster *r, int nx, int ny)
{
	assert_int_equal(sheet_scene_make(r, nx, ny), WB_OK);
}


/* kernel paths: threads, 8 lanes, general path, dense */
static void run_sheet(const struct wb_raster *r, int threads, int simd8,
		      int general, int dense, long steps, uint32_t **map,
		      long *clamped)
{
	struct wb_sim sim = sheet_scene_sim(0);
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	assert_int_equal(lbm_init(&L, r, &sim, threads, &d), WB_OK);
	L.simd8 = simd8;
	L.no_shortcuts = general;
	if (dense)
		L.sparse = 0;
	assert_int_equal(lbm_step(&L, steps, &d), WB_OK);
	size_t n = (size_t)L.ny * L.cnx;
	*map = malloc(n * sizeof(uint32_t));
	assert_non_null(*map);
	memcpy(*map, L.cmap, n * sizeof(uint32_t));
	*clamped = L.clamped;
	assert_int_equal(map_total(&L), L.clamped);
	lbm_release(&L);
	wb_diags_release(&d);
}

static void test_paths_identical(void **state)
{
	(void)state;
	struct wb_raster r;
	sheet_scene(&r, 300, 240); /* > 64k cells: two threads run */
	const long steps = 300;
	const size_t n = (size_t)240 * ((300 + WB_CLAMP_BLOCK - 1) / WB_CLAMP_BLOCK);
	uint32_t *ref, *m;
	long cref, c;
	run_sheet(&r, 1, 0, 0, 0, steps, &ref, &cref);
	long blocks = 0;
	{
		struct wb_solve_report rep;
		memset(&rep, 0, sizeof(rep));
		lbm_clamp_where(ref, 300, 240, &rep);
		blocks = rep.clamp_blocks;
	}
	printf("sheet, pure LBM, %ld steps: clamped %ld in %ld blocks\n", steps,
	       cref, blocks);
	assert_true(cref > 0);
	assert_true(blocks > 1);
	const int variants[4][4] = { { 2, 0, 0, 0 }, { 1, 1, 0, 0 },
				     { 1, 0, 1, 0 }, { 2, 0, 0, 1 } };
	for (int v = 0; v < 4; v++) {
		run_sheet(&r, variants[v][0], variants[v][1], variants[v][2],
			  variants[v][3], steps, &m, &c);
		assert_int_equal(c, cref);
		assert_memory_equal(m, ref, n * sizeof(uint32_t));
		free(m);
	}
	free(ref);
	wb_raster_free(&r);
}

static void test_solve_reports(void **state)
{
	(void)state;
	struct wb_raster r;
	sheet_scene(&r, 120, 60);
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_solve_opts o;
	memset(&o, 0, sizeof(o));
	o.steps = 300;
	for (int hybrid = 0; hybrid < 2; hybrid++) {
		struct wb_sim sim = sheet_scene_sim(hybrid);
		struct wb_state st;
		struct wb_solve_report rep;
		memset(&st, 0, sizeof(st));
		memset(&rep, 0, sizeof(rep));
		assert_int_equal(lbm_solve(&r, &sim, &o, &st, &rep, &d), WB_OK);
		printf("sheet, lbm_solve, hybrid %d: clamped %ld in %ld blocks, the most %ld\n",
		       hybrid, rep.clamped, rep.clamp_blocks, rep.clamp_most_n);
		if (hybrid) { /* the hybrid: nothing clamped, nothing reported */
			assert_int_equal(rep.clamped, 0);
			assert_int_equal(rep.clamp_blocks, 0);
		} else {
			assert_true(rep.clamped > 0);
			assert_true(rep.clamp_blocks > 0);
			assert_true(rep.clamp_most_n > 0 &&
				    rep.clamp_most_n <= rep.clamped);
			assert_true(rep.clamp_box[0] <= rep.clamp_most[0] &&
				    rep.clamp_most[1] <= rep.clamp_box[1] &&
				    rep.clamp_box[2] <= rep.clamp_most[2] &&
				    rep.clamp_most[3] <= rep.clamp_box[3]);
			assert_true(rep.clamp_box[1] <= 120 && rep.clamp_box[3] <= 60);
		}
		wb_state_free(&st);
	}
	wb_diags_release(&d);
	wb_raster_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_dam_break_pure),
		cmocka_unit_test(test_paths_identical),
		cmocka_unit_test(test_solve_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
