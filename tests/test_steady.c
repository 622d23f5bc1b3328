/*
 * test_steady.c - the LBM-SWE steady-state stop (lbm_solve in src/lbm.c,
 * docs/lbm.md "Steady state").
 *
 * A window is steady when the depth-weighted change of the window-mean
 * velocity is below the tolerance AND the water stored changed by at most
 * tolerance x (inflow + outflow) of the window. Three closed 48 x 48 basins,
 * 1 m deep over a flat bed, walls all round:
 *   - at rest: steady after the first windows, volume unchanged exactly;
 *   - with a small source (1e-4 m/s over 3 x 3 cells): its flow is far
 *     below the 0.1 m/s floor, so the velocity test alone would call it
 *     steady while the basin fills; it must run to the cap, unconverged;
 *   - with the same source and an equal sink: in and out balance, steady.
 * And the window callback (wb_solve_opts.window): called once per window,
 * with the arrays the residual was computed from and the books.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "lbm.h"
#include "solve.h"
#include "wbake.h"

enum { N = 48 };

static void basin(struct wb_raster *r, double src, double sink)
{
	assert_int_equal(wb_raster_alloc(r, N, N, 1.0), WB_OK);
	for (int k = 0; k < N * N; k++)
		r->h0[k] = 1.0f;
	for (int j = -1; j <= 1; j++)
		for (int i = -1; i <= 1; i++) {
			int a = (12 + i) + (size_t)(24 + j) * N;
			int b = (36 + i) + (size_t)(24 + j) * N;
			r->src[a] = (float)src;
			r->src[b] = (float)-sink;
			if (src != 0)
				r->flags[a] |= WB_CELL_SOURCE;
		}
}

static void sim_of(struct wb_sim *s)
{
	memset(s, 0, sizeof(*s));
	s->solver = WB_SOLVER_LBM;
	s->manning = 0.03;
	s->viscosity = 0.05;
	s->dry_depth = 1e-3;
	s->window = 200;
	s->tolerance = 1e-3;
	s->max_steps = 3000;
}

static void solve(double src, double sink, struct wb_solve_report *rep)
{
	struct wb_raster r;
	struct wb_sim sim;
	struct wb_state st;
	struct wb_diags d;
	basin(&r, src, sink);
	sim_of(&sim);
	wb_diags_init(&d);
	struct wb_solve_opts o;
	memset(&o, 0, sizeof(o));
	assert_int_equal(lbm_solve(&r, &sim, &o, &st, rep, &d), WB_OK);
	print_message("src %g sink %g: %ld steps, converged %d, residual %.3g, "
		      "volume %.6f -> %.6f m^3, in %.4f out %.4f\n", src, sink,
		      rep->steps, rep->converged, rep->residual,
		      rep->vol_initial, rep->vol_final, rep->vol_in,
		      rep->vol_out);
	assert_true(rep->balance_error < 1e-9);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void test_rest_is_steady(void **state)
{
	(void)state;
	struct wb_solve_report rep;
	solve(0, 0, &rep);
	assert_true(rep.converged);
	assert_true(rep.residual < 1e-3);
	assert_true(rep.steps < 3000);
	assert_true(rep.vol_final == rep.vol_initial); /* exact integers */
}

static void test_filling_is_not_steady(void **state)
{
	(void)state;
	struct wb_solve_report rep;
	solve(1e-4, 0, &rep);
	/* the flow is slow (residual under the tolerance), the basin fills */
	assert_true(rep.residual < 1e-3);
	assert_false(rep.converged);
	assert_int_equal(rep.steps, 3000);
	assert_true(rep.vol_final > rep.vol_initial + 0.5 * rep.vol_in);
}

static void test_balanced_is_steady(void **state)
{
	(void)state;
	struct wb_solve_report rep;
	solve(1e-4, 1e-4, &rep);
	assert_true(rep.converged);
	assert_true(rep.steps < 3000);
	/* what came in went out, to the tolerance */
	assert_true(fabs(rep.vol_in - rep.vol_out) <= 1e-3 * rep.vol_in + 1e-9);
}

/* What the window callback saw. */
struct seen {
	int calls, first_nan, steps_ok;
	long last_step;
	double res, res_again, vol, in, out;
};

static void on_window(void *user, const struct wb_window_info *w)
{
	struct seen *s = user;
	if (s->calls == 0)
		s->first_nan = isnan(w->residual);
	s->steps_ok &= w->step == (long)(s->calls + 1) * 200 &&
		       w->nx == N && w->ny == N;
	s->calls++;
	s->last_step = w->step;
	s->res = w->residual;
	s->vol = w->volume;
	s->in = w->vol_in;
	s->out = w->vol_out;
	/* the residual again, from the arrays given (lbm.c rel_change) */
	double num = 0, den = 0, hs = 0;
	for (int k = 0; k < N * N; k++) {
		double h = w->h[k];
		if (!(h > LBM_THIN * 1e-3))
			continue;
		double du = (double)w->u1[k] - w->u0[k],
		       dv = (double)w->v1[k] - w->v0[k];
		num += h * (du * du + dv * dv);
		den += h * ((double)w->u1[k] * w->u1[k] +
			    (double)w->v1[k] * w->v1[k]);
		hs += h;
	}
	den = fmax(den, LBM_RES_FLOOR * LBM_RES_FLOOR * hs);
	s->res_again = den > 0 ? sqrt(num / den) : 0;
}

static void test_window_callback(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_sim sim;
	struct wb_state st;
	struct wb_diags d;
	struct wb_solve_report rep;
	basin(&r, 1e-4, 0);
	sim_of(&sim);
	wb_diags_init(&d);
	struct seen s = { 0, 0, 1, 0, 0, 0, 0, 0, 0 };
	struct wb_solve_opts o;
	memset(&o, 0, sizeof(o));
	o.window = on_window;
	o.window_user = &s;
	assert_int_equal(lbm_solve(&r, &sim, &o, &st, &rep, &d), WB_OK);
	print_message("window callback: %d calls, last at step %ld, residual "
		      "%.6g (again %.6g), volume %.6f m^3\n", s.calls,
		      s.last_step, s.res, s.res_again, s.vol);
	/* 3000 steps of 200-step windows, the filling basin: never steady */
	assert_int_equal(s.calls, 15);
	assert_true(s.first_nan && s.steps_ok);
	assert_int_equal(s.last_step, rep.steps);
	assert_true(s.res == rep.residual);
	assert_true(fabs(s.res_again - s.res) <= 1e-9 * s.res);
	assert_true(s.vol == rep.vol_final);
	assert_true(s.in == rep.vol_in && s.out == rep.vol_out);
	assert_true(fabs(s.vol - (rep.vol_initial + s.in - s.out)) <=
		    1e-9 * s.vol);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rest_is_steady),
		cmocka_unit_test(test_filling_is_not_steady),
		cmocka_unit_test(test_balanced_is_steady),
		cmocka_unit_test(test_window_callback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
