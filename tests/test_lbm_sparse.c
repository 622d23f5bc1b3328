/*
 * test_lbm_sparse.c - the block-sparse LBM-SWE step (src/lbm.c,
 * "block-sparse step"; docs/scale.md "Block-sparse LBM stepping") against
 * the dense reference (lbm.sparse = 0, as WB_LBM_DENSE=1 selects).
 *
 * After every checkpoint both population buffers and both depth buffers
 * (ghost ring and padding included), the water books, the clamp count and
 * the hybrid's FV cells must be the same bytes, with 1 and 2 threads.
 * Scenes (generated here, sizes not multiples of the 32-cell block, so
 * partial blocks and the kernel's row tail are in play): a dam-break
 * front running into dry blocks, a spring on the corner of four blocks,
 * rain over a patch with a drain and a held level elsewhere, an inflow
 * edge into a dry channel, the hybrid's sheet flow (hybrid on and off),
 * a blocker deck over the front's path, and periodic west and east edges
 * (water near the east edge reaches the sleeping west blocks through
 * the ghost ring). The scenes with dry land also
 * check that the sparse step stepped fewer cells than the dense one. A
 * solve (window means, residual, steady test) compares the returned
 * fields and report bit for bit. Several processes (par.h, simulated in
 * one process by par_fake.h, 2 and 3 ranks): each rank's band and halo
 * rows must hold the one-process sparse bytes after every checkpoint,
 * pure LBM and hybrid, and the ranks together must step fewer cells than
 * the dense step.
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

#include <omp.h>

#include "lbm.h"
#include "par.h"
#include "par_fake.h"
#include "solve.h"

enum { SC_FRONT, SC_CORNER, SC_RAIN, SC_INFLOW, SC_SHEET, SC_DECK, SC_WRAP,
       SC_EDGE, SC_ZOU, SC_THIN, SC_THIN1, SC_PNS, SC_PALL, SC_ZOUR };

static struct wb_sim sim_of(int hybrid)
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
	s.lbm_hybrid = hybrid;
	return s;
}

/* Small deterministic roughness in [0, 1). */
static double rough(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return ((*s >> 16) % 1000) / 1000.0;
}

static void scene(struct wb_raster *r, int kind)
{
	unsigned s = 3;
	int nx = 170, ny = 150;
	double dx = 1.0;
	if (kind == SC_INFLOW)
		nx = 150, ny = 70;
	if (kind == SC_SHEET)
		nx = 120, ny = 60, dx = 5.0;
	if (kind == SC_ZOU || kind == SC_PNS || kind == SC_PALL)
		nx = 70, ny = 90;
	if (kind == SC_ZOUR)
		nx = 150, ny = 120;
	if (kind == SC_THIN || kind == SC_THIN1) /* bands of 1 or 2 rows */
		nx = 70, ny = kind == SC_THIN ? 8 : 7;
	assert_int_equal(wb_raster_alloc(r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double z = 0;
			switch (kind) {
			case SC_SHEET: /* test_lbm_fv's sheet: 8 % to the east */
				z = 100 - 0.08 * i * dx + 0.5 * rough(&s) +
				    0.6 * fabs(j - ny / 2.0) / ny * dx;
				break;
			case SC_INFLOW: /* a channel 0.2 % to the east */
				z = 0.002 * (nx - i) + 0.02 * rough(&s) +
				    (j < 10 || j >= ny - 10 ? 2.0 : 0.0);
				break;
			default: /* a bumpy plane, 1 % down to the south-east */
				z = 0.01 * (i + j) + 0.05 * rough(&s) +
				    0.3 * sin(0.11 * i) * cos(0.07 * j);
				break;
			}
			r->z[k] = (float)z;
		}
	for (int q = 0; q < 4; q++)
		r->edges[q].kind = WB_EDGE_OPEN;
	switch (kind) {
	case SC_FRONT:
	case SC_DECK:
		/* a column of water in the north-west, crossing block edges */
		for (int j = 20; j < 45; j++)
			for (int i = 25; i < 40; i++)
				r->h0[i + (size_t)j * nx] = 1.5f;
		if (kind == SC_DECK)
			for (int j = 30; j < 60; j++)
				for (int i = 44; i < 52; i++) {
					size_t k = i + (size_t)j * nx;
					r->block_bot[k] = r->z[k] + 0.4f;
					r->block_top[k] = r->z[k] + 0.6f;
					r->flags[k] |= WB_CELL_BLOCKER;
				}
		break;
	case SC_CORNER: /* a spring on the corner of four blocks */
		for (int j = 63; j < 65; j++)
			for (int i = 63; i < 65; i++) {
				r->src[i + (size_t)j * nx] = 0.05f;
				r->flags[i + (size_t)j * nx] |= WB_CELL_SOURCE;
			}
		break;
	case SC_RAIN: /* rain on a patch; a drain and a held level elsewhere */
		for (int j = 40; j < 80; j++)
			for (int i = 50; i < 100; i++) {
				r->src[i + (size_t)j * nx] = 2e-3f;
				r->flags[i + (size_t)j * nx] |= WB_CELL_SOURCE;
			}
		r->flags[100 + (size_t)100 * nx] |= WB_CELL_SINK_ALL;
		r->flags[150 + (size_t)20 * nx] |= WB_CELL_FIXED;
		r->fixed_level[150 + (size_t)20 * nx] =
			r->z[150 + (size_t)20 * nx] + 0.3f;
		break;
	case SC_INFLOW:
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].discharge = 0.3;
		r->edges[WB_WEST].depth = 0.4;
		r->edges[WB_NORTH].kind = WB_EDGE_WALL;
		r->edges[WB_SOUTH].kind = WB_EDGE_WALL;
		break;
	case SC_WRAP: /* periodic west-east: the water near the east edge
			 reaches the west blocks through the ghost ring */
		for (int j = 60; j < 90; j++)
			for (int i = nx - 12; i < nx; i++)
				r->h0[i + (size_t)j * nx] = 1.0f;
		r->edges[WB_WEST].kind = WB_EDGE_PERIODIC;
		r->edges[WB_EAST].kind = WB_EDGE_PERIODIC;
		break;
	case SC_EDGE: /* on the plane falling to the south-east: water
			 running into the south wall (free-slip: mirror
			 ghosts) and along it, out of the east open edge and
			 south along it (the bed transfers of its ghosts
			 read the depths across segment ends), and leaving
			 the north wall and west open edge: ghost segments
			 that the passes skip (lbm.c gseg_skips) wake up */
		for (int j = 2; j < 15; j++)
			for (int i = 2; i < 15; i++)
				r->h0[i + (size_t)j * nx] = 1.5f;
		for (int j = 40; j < 60; j++)
			for (int i = nx - 30; i < nx - 4; i++)
				r->h0[i + (size_t)j * nx] = 1.0f;
		/* deep water on the east edge spreading up it, north */
		for (int j = 100; j < 125; j++)
			for (int i = nx - 6; i < nx; i++)
				r->h0[i + (size_t)j * nx] = 2.0f;
		for (int j = ny - 20; j < ny - 6; j++)
			for (int i = 60; i < 90; i++)
				r->h0[i + (size_t)j * nx] = 1.0f;
		r->edges[WB_NORTH].kind = WB_EDGE_WALL;
		r->edges[WB_NORTH].free_slip = 1;
		r->edges[WB_SOUTH].kind = WB_EDGE_WALL;
		r->edges[WB_SOUTH].free_slip = 1;
		break;
	case SC_ZOU: /* inflow (west) and held level (east): Zou-He ghosts */
	case SC_THIN:
	case SC_THIN1:
	case SC_PNS:  /* ... with periodic north and south edges */
	case SC_PALL: /* every edge periodic */
		/* water along every edge, so that the ghosts of every row,
		   and the corners, hold water from the first step: the band
		   edges cross them */
		for (int j = 0; j < ny; j++)
			for (int i = 0; i < nx; i++)
				if (i < 5 || i >= nx - 5 || j < 3 || j >= ny - 3 ||
				    (i > 20 && i < 40 && j > 30 && j < 50))
					r->h0[i + (size_t)j * nx] =
						(float)(0.2 + 0.3 * rough(&s));
		if (kind == SC_PALL) {
			for (int q = 0; q < 4; q++)
				r->edges[q].kind = WB_EDGE_PERIODIC;
			break;
		}
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].discharge = 0.4;
		if (kind == SC_PNS) {
			r->edges[WB_NORTH].kind = WB_EDGE_PERIODIC;
			r->edges[WB_SOUTH].kind = WB_EDGE_PERIODIC;
			break; /* the east edge open: extrapolated ghosts */
		}
		r->edges[WB_EAST].kind = WB_EDGE_LEVEL;
		r->edges[WB_EAST].level = 3.0;
		break; /* north and south open */
	case SC_ZOUR: /* an inflow (west) into a pool in the north-west:
			 the bands follow it along the edge */
		for (int j = 0; j < 30; j++)
			for (int i = 0; i < 30; i++)
				r->h0[i + (size_t)j * nx] = (float)(0.5 + 0.3 * rough(&s));
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].discharge = 0.4;
		break;
	case SC_SHEET:
		for (int j = ny / 2 - 2; j < ny / 2 + 2; j++)
			for (int i = 2; i < 6; i++)
				r->src[i + (size_t)j * nx] =
					(float)(0.5 / (16 * dx * dx));
		break;
	}
}

static void assert_same(const struct lbm *a, const struct lbm *b,
			const char *what)
{
	int ok = a->cur == b->cur && a->step == b->step &&
		 a->clamped == b->clamped && a->vol_in == b->vol_in &&
		 a->vol_out == b->vol_out && a->fv_cells == b->fv_cells &&
		 a->nfv == b->nfv && a->rescales == b->rescales &&
		 memcmp(&a->time, &b->time, sizeof(a->time)) == 0;
	for (int t = 0; t < 2 && ok; t++) {
		for (int q = 0; q < LBM_Q && ok; q++)
			ok = memcmp(a->f[t][q], b->f[t][q],
				    a->ncell * sizeof(int32_t)) == 0;
		ok = ok && memcmp(a->h[t], b->h[t], a->ncell * sizeof(float)) == 0;
	}
	if (ok && a->nfv > 0)
		ok = memcmp(a->fvl, b->fvl, (size_t)a->nfv * sizeof(int32_t)) == 0;
	if (!ok)
		fail_msg("%s: sparse and dense differ after step %ld", what,
			 a->step);
}

/* Steps the scene sparse and dense side by side, comparing after the
 * first step and every 'every' steps; returns the share of the dense
 * cell-steps that the sparse step computed. */
static double compare(int kind, int hybrid, int threads, long steps,
		      long every, const char *what)
{
	struct wb_raster r;
	scene(&r, kind);
	struct wb_sim sim = sim_of(hybrid);
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm sp, dn;
	assert_int_equal(lbm_init(&sp, &r, &sim, threads, &d), WB_OK);
	assert_int_equal(lbm_init(&dn, &r, &sim, threads, &d), WB_OK);
	sp.threads = dn.threads = threads;
	assert_int_equal(sp.sparse, 1); /* the default */
	dn.sparse = 0;
	assert_int_equal(sp.hybrid, hybrid);
	assert_int_equal(lbm_step(&sp, 1, &d), WB_OK);
	assert_int_equal(lbm_step(&dn, 1, &d), WB_OK);
	assert_same(&sp, &dn, what);
	for (long k = 1; k < steps; k += every) {
		assert_int_equal(lbm_step(&sp, every, &d), WB_OK);
		assert_int_equal(lbm_step(&dn, every, &d), WB_OK);
		assert_same(&sp, &dn, what);
	}
	const double share = (double)sp.sb_cells / (double)dn.sb_cells;
	printf("%s, %d thread(s): %ld steps, sparse stepped %.1f %% of the cell-steps, clamped %ld, FV cell-steps %ld, in %lld out %lld\n",
	       what, threads, sp.step, 100 * share, sp.clamped, sp.fv_cells,
	       (long long)sp.vol_in, (long long)sp.vol_out);
	assert_true(dn.sb_cells == (long)r.nx * r.ny * dn.step);
	lbm_release(&sp);
	lbm_release(&dn);
	wb_diags_release(&d);
	wb_raster_free(&r);
	return share;
}

static void test_front(void **state)
{
	(void)state;
	for (int t = 1; t <= 2; t++) {
		double s = compare(SC_FRONT, 0, t, 400, 50, "front");
		assert_true(s < 0.8); /* dry blocks were skipped */
	}
}

static void test_edges(void **state)
{
	(void)state;
	for (int t = 1; t <= 2; t++) {
		assert_true(compare(SC_EDGE, 0, t, 300, 10, "edges") < 0.8);
		compare(SC_EDGE, 1, t, 200, 10, "edges, hybrid");
	}
}

static void test_front_hybrid(void **state)
{
	(void)state;
	for (int t = 1; t <= 2; t++)
		assert_true(compare(SC_FRONT, 1, t, 300, 40, "front, hybrid") < 0.8);
}

static void test_corner_spring(void **state)
{
	(void)state;
	for (int t = 1; t <= 2; t++)
		assert_true(compare(SC_CORNER, 0, t, 300, 25, "spring on a block corner") <
			    0.8);
	assert_true(compare(SC_CORNER, 1, 1, 200, 25, "spring on a block corner, hybrid") <
		    0.9);
}

static void test_rain_sink_level(void **state)
{
	(void)state;
	for (int t = 1; t <= 2; t++)
		compare(SC_RAIN, 0, t, 300, 50, "rain, drain, held level");
	compare(SC_RAIN, 1, 2, 200, 50, "rain, drain, held level, hybrid");
}

static void test_inflow_edge(void **state)
{
	(void)state;
	for (int t = 1; t <= 2; t++)
		assert_true(compare(SC_INFLOW, 0, t, 300, 20, "inflow edge") < 0.9);
	compare(SC_INFLOW, 1, 1, 200, 20, "inflow edge, hybrid");
}

static void test_sheet(void **state)
{
	(void)state;
	compare(SC_SHEET, 1, 1, 400, 50, "sheet, hybrid");
	compare(SC_SHEET, 1, 2, 200, 50, "sheet, hybrid");
	compare(SC_SHEET, 0, 2, 400, 50, "sheet, pure LBM");
}

static void test_periodic(void **state)
{
	(void)state;
	for (int t = 1; t <= 2; t++)
		assert_true(compare(SC_WRAP, 0, t, 300, 10, "periodic edges") < 0.8);
	compare(SC_WRAP, 1, 1, 200, 10, "periodic edges, hybrid");
}

static void test_deck(void **state)
{
	(void)state;
	compare(SC_DECK, 0, 2, 300, 50, "front under a deck");
}

/* The environment switch: WB_LBM_DENSE=1 at lbm_init selects the dense
 * step. */
static void test_env_dense(void **state)
{
	(void)state;
	struct wb_raster r;
	scene(&r, SC_CORNER);
	struct wb_sim sim = sim_of(0);
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	setenv("WB_LBM_DENSE", "1", 1);
	assert_int_equal(lbm_init(&L, &r, &sim, 1, &d), WB_OK);
	unsetenv("WB_LBM_DENSE");
	assert_int_equal(L.sparse, 0);
	assert_int_equal(lbm_step(&L, 3, &d), WB_OK);
	assert_true(L.sb_cells == 3L * r.nx * r.ny);
	lbm_release(&L);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* lbm_solve end to end (samples of the window means over the active
 * blocks only, the residual, the steady test): the same fields and
 * report as the dense solve, 1 and 2 threads. */
static void solve_pair(int kind, int hybrid, int threads)
{
	struct wb_raster r;
	scene(&r, kind);
	struct wb_sim sim = sim_of(hybrid);
	sim.max_steps = 1000;
	struct wb_solve_opts o = { .threads = threads };
	struct wb_state a, b;
	struct wb_solve_report ra, rb;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_solve(&r, &sim, &o, &a, &ra, &d), WB_OK);
	setenv("WB_LBM_DENSE", "1", 1);
	assert_int_equal(lbm_solve(&r, &sim, &o, &b, &rb, &d), WB_OK);
	unsetenv("WB_LBM_DENSE");
	const size_t n = (size_t)r.nx * r.ny;
	assert_memory_equal(a.h, b.h, n * sizeof(float));
	assert_memory_equal(a.u, b.u, n * sizeof(float));
	assert_memory_equal(a.v, b.v, n * sizeof(float));
	assert_int_equal(ra.steps, rb.steps);
	assert_int_equal(ra.converged, rb.converged);
	assert_memory_equal(&ra.residual, &rb.residual, sizeof(double));
	assert_memory_equal(&ra.vol_final, &rb.vol_final, sizeof(double));
	assert_int_equal(ra.clamped, rb.clamped);
	double hs = 0;
	for (size_t k = 0; k < n; k++)
		hs += a.h[k];
	printf("solve (scene %d, hybrid %d, %d thread(s)): %ld steps, residual %.3g, water %.4g m^3 (sparse = dense)\n",
	       kind, hybrid, threads, ra.steps, ra.residual, hs * r.dx * r.dx);
	assert_true(hs > 0 && ra.residual > 0); /* windows were closed */
	wb_state_free(&a);
	wb_state_free(&b);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void test_solve_identical(void **state)
{
	(void)state;
	solve_pair(SC_CORNER, 0, 1);
	solve_pair(SC_INFLOW, 0, 2);
	solve_pair(SC_FRONT, 1, 2);
}

/* Beyond the band and halo rows, what the next step of rank q reads of
 * the other bands (src/lbm.c greach): in the current buffer the ring
 * columns (ghost column and two interior columns at each side) of the two
 * rows past each halo row, and the ghost depths of the first of them in
 * the other buffer (extrap_bed's hb); with periodic north and south edges
 * the ring rows. A rank that fills every ghost from the whole ring
 * (LBM_PAR_ALL, the hybrid's ranks aside: they hold every row) holds the
 * ring of both buffers. */
static int cells_same(const struct lbm *L, const struct lbm *one, int t,
		      int hf, size_t c, size_t n)
{
	int ok = !memcmp(L->h[t] + c, one->h[t] + c, n * sizeof(float));
	for (int x = 0; x < LBM_Q && ok && !hf; x++)
		ok = !memcmp(L->f[t][x] + c, one->f[t][x] + c, n * sizeof(int32_t));
	return ok;
}

static int reach_same(const struct lbm *L, const struct lbm *one, int q)
{
	const int J0 = L->par->row0[q], J1 = L->par->row0[q + 1];
	const int cols[6] = { 0, 1, 2, L->nx - 1, L->nx, L->nx + 1 };
	const int rows[6] = { 0, 1, 2, L->ny - 1, L->ny, L->ny + 1 };
	int ok = 1;
	if (L->par_mode == LBM_PAR_ALL && !L->hybrid) {
		for (int t = 0; t < 2 && ok; t++)
			for (int R = 0; R < L->H && ok; R++)
				for (int c = 0; c < 6 && ok; c++)
					ok = cells_same(L, one, t, 0,
							(size_t)R * L->W + cols[c], 1);
		for (int t = 0; t < 2 && ok; t++)
			for (int k = 0; k < 6 && ok; k++)
				ok = cells_same(L, one, t, 0, (size_t)rows[k] * L->W,
						(size_t)L->W);
		return ok;
	}
	if (L->par_mode != LBM_PAR_OWN)
		return 1;
	/* interior rows J0 - 3, J0 - 2, J1 + 1, J1 + 2: padded + 1 */
	const int far[4] = { J0 - 2, J0 - 1, J1 + 2, J1 + 3 };
	for (int k = 0; k < 4 && ok; k++) {
		const int R = far[k];
		if (R < 1 || R > L->ny)
			continue;
		for (int c = 0; c < 6 && ok; c++) {
			const size_t n = (size_t)R * L->W + cols[c];
			ok = cells_same(L, one, L->cur, 0, n, 1);
			if (ok && (k == 1 || k == 2))
				ok = cells_same(L, one, !L->cur, 1, n, 1);
		}
	}
	if (L->edges[WB_NORTH].kind == WB_EDGE_PERIODIC)
		for (int k = 0; k < 6 && ok; k++)
			ok = cells_same(L, one, L->cur, 0, (size_t)rows[k] * L->W,
					(size_t)L->W);
	return ok;
}

/* Several processes: n ranks (one OpenMP thread each, one thread inside)
 * step the scene side by side with one sparse process; after every
 * checkpoint each rank's band and halo rows (both buffers) and the
 * books summed over all ranks must be the one process's bytes. Returns
 * the ranks' cell-steps over the dense ones. */
static double compare_ranks(int kind, int hybrid, int n, long steps,
			    long every, const char *what, int rebal)
{
	struct wb_raster r;
	scene(&r, kind);
	struct wb_sim sim = sim_of(hybrid);
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm one;
	assert_int_equal(lbm_init(&one, &r, &sim, 1, &d), WB_OK);
	one.threads = 1;
	struct world w;
	struct link links[NMAX];
	world_init(&w, links, n, r.ny);
	struct lbm *R = calloc((size_t)n, sizeof(*R));
	assert_non_null(R);
	int rc[NMAX] = { 0 }, ran = 0, moved[NMAX] = { 0 }, moves = 0;
	long bad_step = -1;
	int bad_rank = -1;
	long bad_cell = -1;
	for (long k = 0; k < steps; k += every) {
		assert_int_equal(lbm_step(&one, every, &d), WB_OK);
#pragma omp parallel num_threads(n) reduction(+ : ran)
		{
			const int q = omp_get_thread_num();
			struct wb_diags dq;
			wb_diags_init(&dq);
			if (omp_get_num_threads() == n) {
				ran = 1;
				if (k == 0) {
					rc[q] |= lbm_init(&R[q], &r, &sim, 1, &dq) != WB_OK;
					R[q].threads = 1;
					R[q].par = &w.p[q];
				}
				rc[q] |= lbm_step(&R[q], every, &dq) != WB_OK;
				/* the bands cut again by the water, as
				   lbm_solve does at its windows */
				if (rebal)
					moved[q] = lbm_par_rebalance(&R[q], NULL, 0);
			}
			wb_diags_release(&dq);
		}
		assert_int_equal(ran, n);
		ran = 0;
		for (int q = 0; q < n; q++) {
			assert_true(moved[q] >= 0);
			assert_int_equal(moved[q], moved[0]); /* a decision of all */
			assert_memory_equal(R[q].par->row0, R[0].par->row0,
					    ((size_t)n + 1) * sizeof(int));
		}
		moves += moved[0];
		for (int q = 0; q < n; q++) {
			assert_int_equal(rc[q], 0);
			const struct lbm *L = &R[q];
			int ok = L->cur == one.cur && L->vol_in == one.vol_in &&
				 L->vol_out == one.vol_out && L->clamped == one.clamped &&
				 L->nfv == one.nfv &&
				 (!L->nfv || !memcmp(L->fvl, one.fvl,
						     (size_t)L->nfv * sizeof(int32_t)));
			/* padded rows of the band and one halo row each side */
			const int J0 = L->par->row0[q], J1 = L->par->row0[q + 1];
			const size_t a = (size_t)J0 * L->W, e = (size_t)(J1 + 2) * L->W;
			for (int t = 0; t < 2 && ok; t++) {
				for (int x = 0; x < LBM_Q && ok; x++)
					ok = !memcmp(L->f[t][x] + a, one.f[t][x] + a,
						     (e - a) * sizeof(int32_t));
				ok = ok && !memcmp(L->h[t] + a, one.h[t] + a,
						   (e - a) * sizeof(float));
			}
			if (ok)
				ok = reach_same(L, &one, q);
			if (!ok && bad_step < 0) {
				bad_step = one.step, bad_rank = q;
				for (size_t c = a; c < e && bad_cell < 0; c++) {
					int df = memcmp(&L->h[L->cur][c], &one.h[one.cur][c], 4);
					for (int x = 0; x < LBM_Q; x++)
						df |= L->f[L->cur][x][c] != one.f[one.cur][x][c];
					if (df)
						bad_cell = (long)c;
				}
			}
		}
	}
	long cells = 0;
	for (int q = 0; q < n; q++) {
		cells += R[q].sb_cells;
		lbm_release(&R[q]);
	}
	const double share = (double)cells / ((double)r.nx * r.ny * one.step);
	printf("%s, %d ranks: %ld steps, the ranks stepped %.1f %% of the dense cell-steps (one process %.1f %%), FV cell-steps %ld; bands moved %d times\n",
	       what, n, one.step, 100 * share,
	       100.0 * one.sb_cells / ((double)r.nx * r.ny * one.step),
	       one.fv_cells, moves);
	if (bad_step >= 0)
		fail_msg("%s, %d ranks: rank %d differs from one process after step %ld (first in the current buffer: padded cell %ld, %ld)",
			 what, n, bad_rank, bad_step, bad_cell % (long)one.W,
			 bad_cell / (long)one.W);
	if (rebal) /* the water spreads from one band: the cut must follow */
		assert_true(moves > 0);
	free(R);
	lbm_release(&one);
	wb_diags_release(&d);
	wb_raster_free(&r);
	return share;
}

static void test_ranks(void **state)
{
	(void)state;
	for (int n = 2; n <= 3; n++)
		assert_true(compare_ranks(SC_FRONT, 0, n, 200, 10, "front", 0) < 0.8);
	assert_true(compare_ranks(SC_FRONT, 1, 3, 150, 25, "front, hybrid", 0) < 0.8);
	assert_true(compare_ranks(SC_INFLOW, 0, 3, 150, 15, "inflow edge", 0) < 0.9);
	compare_ranks(SC_RAIN, 1, 3, 100, 25, "rain, drain, held level, hybrid", 0);
	compare_ranks(SC_WRAP, 0, 2, 100, 10, "periodic edges", 0);
	compare_ranks(SC_EDGE, 0, 3, 200, 10, "walls and open edges", 0);
}

/* Edge ghosts next to band edges (src/lbm.c greach): each rank fills the
 * ghosts its rows read and books its own; Zou-He closures (inflow,
 * held level), extrapolated open edges, periodic edges and the corners,
 * wet in every row, with 2, 3 and 4 ranks; bands of one and two rows
 * (every rank then fills every ghost from the whole ring). */
static void test_ranks_edges(void **state)
{
	(void)state;
	for (int n = 2; n <= 4; n++) {
		compare_ranks(SC_ZOU, 0, n, 40, 4, "inflow, held level, open", 0);
		compare_ranks(SC_PNS, 0, n, 40, 4, "periodic north-south, inflow", 0);
	}
	compare_ranks(SC_PALL, 0, 3, 40, 4, "every edge periodic", 0);
	compare_ranks(SC_ZOUR, 0, 3, 150, 10, "inflow, bands follow", 1);
	compare_ranks(SC_THIN, 0, 3, 30, 3, "bands of 2 and 3 rows", 0);
	compare_ranks(SC_THIN1, 0, 4, 30, 3, "bands of 1 and 2 rows", 0);
	compare_ranks(SC_ZOU, 1, 3, 30, 5, "inflow, held level, hybrid", 0);
}

/* The bands follow the water (lbm_par_rebalance between checkpoints):
 * the rows that change hands carry the one process's bytes on. */
static void test_ranks_rebalance(void **state)
{
	(void)state;
	for (int n = 2; n <= 4; n++)
		compare_ranks(SC_FRONT, 0, n, 300, 10, "front, bands follow", 1);
	compare_ranks(SC_FRONT, 1, 3, 150, 10, "front, hybrid, bands follow", 1);
	compare_ranks(SC_CORNER, 0, 3, 200, 10, "spring, bands follow", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_front),
		cmocka_unit_test(test_front_hybrid),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_corner_spring),
		cmocka_unit_test(test_rain_sink_level),
		cmocka_unit_test(test_inflow_edge),
		cmocka_unit_test(test_sheet),
		cmocka_unit_test(test_periodic),
		cmocka_unit_test(test_deck),
		cmocka_unit_test(test_env_dense),
		cmocka_unit_test(test_solve_identical),
		cmocka_unit_test(test_ranks),
		cmocka_unit_test(test_ranks_rebalance),
		cmocka_unit_test(test_ranks_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
