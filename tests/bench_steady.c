/*
 * bench_steady.c - steps to steady from dry land, from the hydrological
 * first guess, and coarse-to-fine (issue 12; docs/hydrology.md quotes the
 * figures). Every start runs in the same process on one thread, so the
 * from-dry reference is of the same run:
 *
 *   bench steady_<case>_<start>_steps <n> steps
 *        full-resolution steps to steady (0 when not steady)
 *   bench steady_<case>_<start>_work <n> steps
 *        the same plus the coarse levels' steps weighted by their share of
 *        the cells (a 2x coarser step costs about a quarter of a step)
 *   bench steady_<case>_<start>_speedup <dry / start> x   (by work)
 *   bench steady_<case>_<start>_velocity_diff <rel> 1
 *        against the steady state from dry: sqrt(sum hm |ua - ub|^2 /
 *        sum hm |ub|^2), hm the mean depth
 *   bench steady_<case>_<start>_wet_misses <n> cells
 *        water cells (>= output.min_depth) of one state with no water
 *        within one cell in the other, both ways
 *   bench steady_<case>_<start>_seconds <s> s    wall time, levels included
 *   bench steady_<case>_oracle_steps <n> steps   (SWE cases) the bound of
 *        any start: the solver started from its own steady state (a run
 *        from the first guess to a tenth of the tolerance: depth scaled to
 *        the water on the grid, and velocity) until the scene's tolerance
 *        certifies it again; at least two windows
 *   bench steady_<case>_oracle_rest_steps <n> steps  the same depth at
 *        rest: what the best possible depth alone gives
 *   bench steady_<case>_oracle_speedup <dry / oracle> x
 *
 * <start>: dry (simulation.initial "scene", no coarse levels), guess (the
 * first guess, no coarse levels), c2f (the first guess, two coarse levels),
 * and for the SWE cases accel (the first guess with
 * simulation.steady_acceleration "low_froude", docs/hydrology.md "Steady
 * acceleration"; its _velocity_diff and _wet_misses are against the
 * plain guess's steady state too: steady_<case>_accel_guess_velocity_diff,
 * _accel_guess_wet_misses, and _accel_volume_diff, the relative difference
 * of the water on the grid and in flight against the plain guess's).
 * Cases: river_lbm and river_swe (samples/river, window 1000: with the
 * sample's 4000 no start can beat 24000 / 8000 = 3x, the convergence test
 * needing two windows), and, when WB_STEADY_WORLD names a scene (e.g.
 * build/world-1024/scene.json from bin/mkterrain world 1024), world: it
 * takes tens of minutes on a shared 2-core machine, so make bench skips it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bake.h"
#include "solve.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void show(struct wb_diags *d)
{
	char buf[2048];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
}

static int bake(struct wb_bake *b, const char *scene, int solver, int initial,
		int levels, int accel, long window, double *secs)
{
	struct wb_diags d;
	wb_diags_init(&d);
	double t0 = now_s();
	enum wb_status st = wb_bake_load(b, scene, &d);
	if (!st) {
		if (solver >= 0)
			b->sc.sim.solver = (enum wb_solver_kind)solver;
		b->sc.sim.initial = initial;
		b->sc.sim.coarse_levels = levels;
		b->sc.sim.steady_accel = accel;
		if (window > 0)
			b->sc.sim.window = window;
		struct wb_solve_opts o = { 0 };
		o.threads = 1;
		st = wb_bake_solve(b, &o, &d);
	}
	*secs = now_s() - t0;
	if (st)
		show(&d);
	wb_diags_release(&d);
	return st;
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

/* full-resolution steps plus the coarse levels' by their share of cells */
static double work(const struct wb_bake *b)
{
	double w = (double)b->rep.steps;
	double n = (double)b->r.nx * b->r.ny;
	for (int l = 0; l < b->rep.n_levels; l++)
		w += (double)b->rep.level[l].steps * b->rep.level[l].nx *
		     b->rep.level[l].ny / n;
	return w;
}

static int run_case(const char *name, const char *scene, int solver, long window)
{
	static const char *const starts[] = { "dry", "guess", "c2f", "accel" };
	const int init[] = { WB_INIT_SCENE, WB_INIT_HYDROLOGY, WB_INIT_HYDROLOGY,
			     WB_INIT_HYDROLOGY };
	const int levels[] = { 0, 0, 2, 0 };
	const int accel[] = { 0, 0, 0, 1 };
	struct wb_bake b[4];
	double secs[4];
	int rc = 0;
	memset(b, 0, sizeof(b));
	/* the steady acceleration is the SWE solver's */
	int ns = solver == WB_SOLVER_LBM ? 3 : 4;
	for (int s = 0; s < ns && !rc; s++)
		rc = bake(&b[s], scene, solver, init[s], levels[s], accel[s], window,
			  &secs[s]);
	for (int s = 0; s < ns && !rc; s++) {
		float thr = (float)b[0].sc.output.min_depth;
		long steps = b[s].rep.converged ? b[s].rep.steps : 0;
		double wk = b[s].rep.converged ? work(&b[s]) : 0;
		double w0 = b[0].rep.converged ? work(&b[0]) : 0;
		printf("bench steady_%s_%s_steps %ld steps\n", name, starts[s], steps);
		printf("bench steady_%s_%s_work %.0f steps\n", name, starts[s], wk);
		if (s > 0) {
			printf("bench steady_%s_%s_speedup %.2f x\n", name, starts[s],
			       wk > 0 && w0 > 0 ? w0 / wk : 0.0);
			printf("bench steady_%s_%s_velocity_diff %.4f 1\n", name, starts[s],
			       vel_diff(&b[s].st, &b[0].st));
			printf("bench steady_%s_%s_wet_misses %ld cells\n", name, starts[s],
			       misses(&b[s].st, &b[0].st, thr) +
			       misses(&b[0].st, &b[s].st, thr));
		}
		if (s == 3) {
			/* against the plain solver from the same start */
			printf("bench steady_%s_accel_guess_velocity_diff %.4f 1\n", name,
			       vel_diff(&b[3].st, &b[1].st));
			printf("bench steady_%s_accel_guess_wet_misses %ld cells\n", name,
			       misses(&b[3].st, &b[1].st, thr) +
			       misses(&b[1].st, &b[3].st, thr));
			double va = b[3].rep.vol_final + b[3].rep.vol_particles;
			double vg = b[1].rep.vol_final + b[1].rep.vol_particles;
			printf("bench steady_%s_accel_volume_diff %.4f 1\n", name,
			       vg > 0 ? (va - vg) / vg : 0.0);
			printf("bench steady_%s_accel_balance_error %.3g 1\n", name,
			       b[3].rep.balance_error);
		}
		printf("bench steady_%s_%s_seconds %.1f s\n", name, starts[s], secs[s]);
		fprintf(stderr, "%s %s: %ld steps (converged %d, residual %.3g, dt %.4g s)",
			name, starts[s], b[s].rep.steps, b[s].rep.converged,
			b[s].rep.residual, b[s].rep.dt);
		for (int l = 0; l < b[s].rep.n_levels; l++)
			fprintf(stderr, ", level %dx %ld steps (%.1f s)",
				b[s].rep.level[l].factor, b[s].rep.level[l].steps,
				b[s].rep.level[l].seconds);
		fputc('\n', stderr);
	}
	for (int s = 0; s < 4; s++)
		wb_bake_release(&b[s]);
	return rc;
}

/* The best any start can do (see the header): the solver from its own
 * steady state, with and without its velocity. */
static int oracle(const char *name, const char *scene, long window)
{
	struct wb_bake b;
	double secs;
	memset(&b, 0, sizeof(b));
	int rc = bake(&b, scene, WB_SOLVER_SWE, WB_INIT_HYDROLOGY, 0, 0, window, &secs);
	long dry = 0;
	if (!rc) {
		/* the from-dry reference of this run */
		struct wb_bake c;
		memset(&c, 0, sizeof(c));
		rc = bake(&c, scene, WB_SOLVER_SWE, WB_INIT_SCENE, 0, 0, window, &secs);
		dry = c.rep.converged ? c.rep.steps : 0;
		wb_bake_release(&c);
	}
	struct wb_diags d;
	wb_diags_init(&d);
	size_t n = (size_t)b.r.nx * b.r.ny;
	struct wb_sim sim = b.sc.sim;
	struct wb_solve_opts o = { 0 };
	o.threads = 1;
	struct wb_state st, s2;
	struct wb_solve_report rep, r2;
	memset(&st, 0, sizeof(st));
	float *h0 = malloc(n * sizeof(float)), *scene_h0 = b.r.h0;
	rc |= !h0;
	if (!rc) {
		sim.tolerance = b.sc.sim.tolerance / 10;
		sim.max_steps = 20 * (sim.max_steps > 0 ? sim.max_steps : 100000);
		b.r.h0 = b.guess_h;
		rc = swe_solve(&b.r, &sim, &o, &st, &rep, &d) != WB_OK || !rep.converged;
		fprintf(stderr, "%s oracle: %ld steps to a tenth of the tolerance (converged %d, residual %.3g)\n",
			name, rep.steps, rep.converged, rep.residual);
	}
	long steps[2] = { 0, 0 };
	for (int withu = 0; withu < 2 && !rc; withu++) {
		double vs = 0;
		for (size_t k = 0; k < n; k++)
			vs += st.h[k];
		double sc = (rep.vol_final + rep.vol_particles) / (b.r.dx * b.r.dx) / vs;
		for (size_t k = 0; k < n; k++)
			h0[k] = (float)(st.h[k] * sc);
		b.r.h0 = h0;
		b.r.u0 = withu ? st.u : NULL;
		b.r.v0 = withu ? st.v : NULL;
		sim = b.sc.sim;
		memset(&s2, 0, sizeof(s2));
		rc = swe_solve(&b.r, &sim, &o, &s2, &r2, &d) != WB_OK;
		steps[withu] = !rc && r2.converged ? r2.steps : 0;
		wb_state_free(&s2);
	}
	b.r.h0 = scene_h0;
	b.r.u0 = b.r.v0 = NULL;
	if (!rc) {
		printf("bench steady_%s_oracle_steps %ld steps\n", name, steps[1]);
		printf("bench steady_%s_oracle_rest_steps %ld steps\n", name, steps[0]);
		printf("bench steady_%s_oracle_speedup %.2f x\n", name,
		       steps[1] > 0 ? (double)dry / steps[1] : 0.0);
	} else {
		show(&d);
	}
	free(h0);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_bake_release(&b);
	return rc;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *river = "samples/river/scene.json";
	int rc = run_case("river_lbm", river, WB_SOLVER_LBM, 1000);
	rc |= run_case("river_swe", river, WB_SOLVER_SWE, 1000);
	rc |= oracle("river_swe", river, 1000);
	const char *world = getenv("WB_STEADY_WORLD");
	if (world && *world) {
		rc |= run_case("world", world, -1, 0);
		rc |= oracle("world", world, 0);
	}
	return rc ? 1 : 0;
}
