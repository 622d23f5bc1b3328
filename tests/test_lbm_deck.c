/*
 * test_lbm_deck.c - the LBM / finite-volume hybrid (src/lbm_fv.c) under a
 * low blocker deck on a steep channel (docs/lbm.md, "Supercritical flow",
 * known problems): a 6 % channel fed 0.45 m^2/s (normal depth about
 * 0.18 m, Froude about 2 with n = 0.03) runs under a deck whose bottom is
 * 0.2 m above the bed, so the supercritical flow reaches the deck's
 * ceiling. With the first-order FV update the hybrid diverged at the deck
 * after 1,722 steps.
 *
 *   - the run stays finite (lbm_step never reports divergence, every depth
 *     and velocity finite) for 4,000 steps;
 *   - mass is exact to the integer unit every 100 steps: water on the
 *     grid = initial + what crossed the edges;
 *   - the deck holds the water back, as the link rule makes a deck that
 *     the water reaches a wall (docs/lbm.md, "Blockers"; test_lbm's low
 *     deck): the water under the deck stays under its ceiling (surface <=
 *     deck bottom + h_dry), and no cell is more than 0.5 m deeper than a
 *     flat pond holding the grid's water upstream of the deck would be at
 *     the deck (no spike, no runaway);
 *   - the hybrid acts (FV cell-steps > 0).
 * The scene is generated here.
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

enum { NX = 160, NY = 8, DECK0 = 80, DECK1 = 84 };
static const double DX = 1.0, SLOPE = 0.06, Q = 0.45, MANNING = 0.03,
		    CLEAR = 0.2;

static double bed(int i)
{
	return SLOPE * (NX - i - 0.5) * DX;
}

static void deck_scene(struct wb_raster *r)
{
	assert_int_equal(wb_raster_alloc(r, NX, NY, DX), WB_OK);
	/* normal depth: q = h^(5/3) sqrt(S) / n */
	const double hn = pow(Q * MANNING / sqrt(SLOPE), 0.6);
	for (int j = 0; j < NY; j++)
		for (int i = 0; i < NX; i++) {
			size_t k = i + (size_t)j * NX;
			r->z[k] = (float)bed(i);
			r->h0[k] = (float)hn;
			if (i >= DECK0 && i < DECK1) {
				r->block_bot[k] = (float)(bed(i) + CLEAR);
				r->block_top[k] = (float)(bed(i) + CLEAR + 1.0);
				r->flags[k] |= WB_CELL_BLOCKER;
			}
		}
	r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r->edges[WB_WEST].discharge = Q;
	r->edges[WB_WEST].depth = hn;
	r->edges[WB_EAST].kind = WB_EDGE_OPEN;
	r->edges[WB_NORTH].free_slip = 1;
	r->edges[WB_SOUTH].free_slip = 1;
}

static void test_steep_channel_under_low_deck(void **state)
{
	(void)state;
	struct wb_raster r;
	deck_scene(&r);
	const double hn = pow(Q * MANNING / sqrt(SLOPE), 0.6);
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.solver = WB_SOLVER_LBM;
	sim.viscosity = 0.01;
	sim.manning = MANNING;
	sim.dry_depth = 1e-3;
	sim.lbm_hybrid = 1;
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	assert_int_equal(lbm_init(&L, &r, &sim, 1, &d), WB_OK);
	assert_true(L.hybrid);
	const int64_t m0 = lbm_mass(&L);
	for (int k = 0; k < 40; k++) {
		enum wb_status rc = lbm_step(&L, 100, &d);
		if (rc != WB_OK) {
			char buf[512];
			for (int i = 0; i < d.n; i++) {
				wb_diag_format(&d.v[i], buf, sizeof(buf));
				printf("  %s\n", buf);
			}
		}
		assert_int_equal(rc, WB_OK);
		assert_true(lbm_mass(&L) == m0 + L.vol_in - L.vol_out);
	}
	float *h = malloc(sizeof(float) * NX * NY),
	      *u = malloc(sizeof(float) * NX * NY),
	      *v = malloc(sizeof(float) * NX * NY);
	assert_non_null(h);
	assert_non_null(u);
	assert_non_null(v);
	lbm_macro(&L, h, u, v);
	double hmax = 0, over = -1e9, emax = -1e9, vol = 0;
	int finite = 1;
	for (int j = 0; j < NY; j++)
		for (int i = 0; i < NX; i++) {
			size_t k = i + (size_t)j * NX;
			finite &= isfinite(h[k]) && isfinite(u[k]) && isfinite(v[k]);
			hmax = fmax(hmax, h[k]);
			emax = fmax(emax, bed(i) + h[k]);
			vol += h[k] * DX * DX;
			if (i >= DECK0 && i < DECK1)
				over = fmax(over, bed(i) + h[k] -
						  (bed(i) + CLEAR + sim.dry_depth));
		}
	/* the level of a flat pond of volume vol upstream of the deck
	 * (bisection) */
	double lo = bed(DECK0), hi = bed(0) + vol / (NY * DX * DX);
	for (int it = 0; it < 100; it++) {
		double m = 0.5 * (lo + hi), vm = 0;
		for (int i = 0; i < DECK0; i++)
			vm += fmax(0, m - bed(i)) * NY * DX * DX;
		if (vm > vol)
			hi = m;
		else
			lo = m;
	}
	printf("deck: %ld steps, FV cell-steps %ld, clamped %ld, max depth %.3f m (normal %.3f), surface under the deck %.4f m from its ceiling, highest surface %.3f m, flat pond %.3f m, water %.1f m^3 (in %.1f)\n",
	       L.step, L.fv_cells, L.clamped, hmax, hn, -over, emax, lo, vol,
	       (double)(L.vol_in - L.vol_out) * L.unit * DX * DX);
	assert_true(finite);
	assert_true(over <= 0);
	assert_true(hmax <= lo - bed(DECK0 - 1) + 0.5);
	assert_true(L.fv_cells > 0);
	free(h);
	free(u);
	free(v);
	lbm_release(&L);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steep_channel_under_low_deck),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
