/*
 * bench_hydro.c - steps to steady from dry land against the hydrological
 * first guess and warm starts, on the bundled river sample (issue 12's
 * targets; docs/hydrology.md quotes the figures):
 *
 *   bench river_<solver>_w<window>_dry_steps <steps> steps
 *   bench river_<solver>_w<window>_guess_steps <steps> steps
 *   bench river_<solver>_w<window>_speedup <dry / guess> x
 *   bench river_<solver>_w<window>_velocity_diff <rel> 1
 *        depth-weighted velocity difference of the two steady states,
 *        sqrt(sum hm |ua - ub|^2 / sum hm |ub|^2), hm the mean depth
 *   bench river_<solver>_w<window>_wet_misses <cells> cells
 *        cells water (>= output.min_depth) in one steady state with no
 *        water within one cell in the other, both ways
 *   bench river_<solver>_w<window>_wet_cells <cells> cells  (from dry)
 *   bench river_guess_ms <ms> ms           the first guess alone
 *   bench river_warm_modifier_windows <n> windows   after moving the eddy
 *   bench river_warm_discharge_windows <n> windows  creek discharge +20 %
 *
 * window is the sample's (4000 steps) and 1000: the convergence test
 * needs two windows at least, so with 4000 the speedup cannot pass
 * 24000 / 8000 = 3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bake.h"
#include "util.h"
#include "warm.h"

#define RIVER "samples/river/scene.json"
#define OUT "build/bench_hydro"

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

/* Load the river; solver, start and window set; 'from' a state directory
 * or NULL; discharge factor for the creek, modifier shift (m, along y). */
static int bake(struct wb_bake *b, int solver, int initial, long window,
		const char *from, double qf, double shift)
{
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status st = wb_bake_load(b, RIVER, &d);
	if (!st && (qf != 1.0 || shift != 0.0)) {
		/* change the scene as an artist would, then rasterise again */
		for (int i = 0; i < b->sc.n_sources; i++)
			if (b->sc.sources[i].kind == WB_SRC_RIVER)
				b->sc.sources[i].discharge *= qf;
		for (int i = 0; i < b->sc.n_modifiers; i++)
			b->sc.modifiers[i].center[1] += shift;
		wb_raster_free(&b->r);
		st = wb_raster_build(&b->sc, &b->hm, &b->r, &d);
	}
	if (!st) {
		b->sc.sim.solver = (enum wb_solver_kind)solver;
		b->sc.sim.initial = initial;
		if (window > 0)
			b->sc.sim.window = window;
		if (from)
			st = wb_bake_warm(b, from, &d);
	}
	if (!st) {
		struct wb_solve_opts o = { 0 };
		st = wb_bake_solve(b, &o, &d);
	}
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

static long misses(const struct wb_state *a, const struct wb_state *b,
		   float thr, long *wet)
{
	long miss = 0;
	*wet = 0;
	for (int j = 0; j < a->ny; j++)
		for (int i = 0; i < a->nx; i++) {
			if (!(a->h[i + (size_t)j * a->nx] >= thr))
				continue;
			(*wet)++;
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

static int compare(int solver, const char *name, long window)
{
	struct wb_bake dry, fg;
	int rc = bake(&dry, solver, WB_INIT_SCENE, window, NULL, 1, 0);
	rc |= bake(&fg, solver, WB_INIT_HYDROLOGY, window, NULL, 1, 0);
	if (!rc) {
		long w = dry.sc.sim.window, wet, wet2;
		float thr = (float)dry.sc.output.min_depth;
		long m = misses(&fg.st, &dry.st, thr, &wet2) +
			 misses(&dry.st, &fg.st, thr, &wet);
		printf("bench river_%s_w%ld_dry_steps %ld steps\n", name, w, dry.rep.steps);
		printf("bench river_%s_w%ld_guess_steps %ld steps\n", name, w, fg.rep.steps);
		printf("bench river_%s_w%ld_speedup %.2f x\n", name, w,
		       (double)dry.rep.steps / (double)fg.rep.steps);
		printf("bench river_%s_w%ld_velocity_diff %.4f 1\n", name, w,
		       vel_diff(&fg.st, &dry.st));
		printf("bench river_%s_w%ld_wet_misses %ld cells\n", name, w, m);
		printf("bench river_%s_w%ld_wet_cells %ld cells\n", name, w, wet);
		fprintf(stderr, "river %s window %ld: dry %ld steps (converged %d), guess %ld (converged %d), tolerance %g\n",
			name, w, dry.rep.steps, dry.rep.converged, fg.rep.steps,
			fg.rep.converged, dry.sc.sim.tolerance);
	}
	wb_bake_release(&dry);
	wb_bake_release(&fg);
	return rc;
}

static int warm(void)
{
	struct wb_bake a, b, c;
	struct wb_diags d;
	wb_diags_init(&d);
	int rc = bake(&a, WB_SOLVER_LBM, WB_INIT_HYDROLOGY, 0, NULL, 1, 0);
	if (!rc) {
		rc = wb_mkdirs(OUT, &d) ||
		     wb_state_save(OUT "/" WB_STATE_FILE, &a.r, a.sc.sim.solver,
				   &a.st, a.guess_h, &a.rep, &d);
		if (rc)
			show(&d);
	}
	if (!rc) {
		double t0 = now_s();
		rc = wb_bake_guess(&a, &d);
		printf("bench river_guess_ms %.1f ms\n", 1e3 * (now_s() - t0));
	}
	if (!rc) {
		rc = bake(&b, WB_SOLVER_LBM, WB_INIT_HYDROLOGY, 0, OUT, 1, 20);
		if (!rc)
			printf("bench river_warm_modifier_windows %ld windows\n",
			       b.rep.steps / b.sc.sim.window);
		wb_bake_release(&b);
		rc |= bake(&c, WB_SOLVER_LBM, WB_INIT_HYDROLOGY, 0, OUT, 1.2, 0);
		if (!rc)
			printf("bench river_warm_discharge_windows %ld windows\n",
			       c.rep.steps / c.sc.sim.window);
		wb_bake_release(&c);
	}
	wb_bake_release(&a);
	wb_diags_release(&d);
	return rc;
}

int main(void)
{
	int rc = compare(WB_SOLVER_LBM, "lbm", 0);
	rc |= compare(WB_SOLVER_LBM, "lbm", 1000);
	rc |= compare(WB_SOLVER_SWE, "swe", 0);
	rc |= warm();
	return rc ? 1 : 0;
}
