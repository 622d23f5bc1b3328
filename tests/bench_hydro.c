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
 *   bench river_swe_warm_modifier_steps <n> steps   the same with the SWE
 *        solver at window 1000: the warm start carries the saved
 *        velocities (docs/hydrology.md "Warm starts")
 *   bench river_swe_warm_modifier_rest_steps <n> steps  the same start at
 *        rest (the solver run directly on the warm start's depth)
 *   bench river_swe_warm_modifier_velocity_diff <rel> 1  against a fresh
 *        bake of the changed scene from the first guess
 *   bench river_swe_warm_discharge_steps, _rest_steps, _velocity_diff: the
 *        same after the creek's discharge rose 20 %
 *   bench rain_<solver>_steps <steps> steps  a generated rain scene (64 x 64
 *        cells at 4 m, a valley with two closed depressions, 20 mm/h
 *        everywhere), from the first guess; 0 when not steady
 *   bench rain_<solver>_water_fraction <pct> %  water in the maps
 *        (output.min_depth / min_flow) of the map's area
 *   bench rain_<solver>_wet_fraction <pct> %    cells deeper than the
 *        solver's dry depth (what counted as water before)
 *
 * window is the sample's (4000 steps) and 1000: the convergence test
 * needs two windows at least, so with 4000 the speedup cannot pass
 * 24000 / 8000 = 3.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bake.h"
#include "solve.h"
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
			st = wb_bake_warm(b, from, 0, &d);
	}
	if (!st) {
		/* one thread: the figures are step counts, and the machine
		 * running the benchmarks may be shared */
		struct wb_solve_opts o = { 0 };
		o.threads = 1;
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
				   &a.st, a.guess_h, &a.rep, 0, &d);
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

/* steps to steady of b's own start run at rest (its solver called
 * directly with the start depth of b's warm start and no velocity) */
static long steps_at_rest(struct wb_bake *b)
{
	struct wb_diags d;
	struct wb_state st;
	struct wb_solve_report rep;
	size_t n = (size_t)b->r.nx * b->r.ny;
	wb_diags_init(&d);
	memset(&st, 0, sizeof(st));
	memset(&rep, 0, sizeof(rep));
	float *h = malloc(n * sizeof(float)), *keep = b->r.h0;
	if (!h)
		return -1;
	for (size_t k = 0; k < n; k++) { /* as wb_bake_solve's warm start */
		float v = b->warm.h[k] +
			  (b->warm_guess ? b->guess_h[k] - b->warm_guess[k] : 0.0f);
		h[k] = v > 0 ? v : 0;
	}
	b->r.h0 = h;
	struct wb_solve_opts o = { 0 };
	o.threads = 1;
	enum wb_status st2 = swe_solve(&b->r, &b->sc.sim, &o, &st, &rep, &d);
	b->r.h0 = keep;
	free(h);
	if (st2)
		show(&d);
	wb_state_free(&st);
	wb_diags_release(&d);
	return st2 || !rep.converged ? 0 : rep.steps;
}

static int warm_swe(void)
{
	struct wb_bake a;
	struct wb_diags d;
	wb_diags_init(&d);
	int rc = bake(&a, WB_SOLVER_SWE, WB_INIT_HYDROLOGY, 1000, NULL, 1, 0);
	if (!rc) {
		rc = wb_mkdirs(OUT "/swe", &d) ||
		     wb_state_save(OUT "/swe/" WB_STATE_FILE, &a.r, a.sc.sim.solver,
				   &a.st, a.guess_h, &a.rep, 0, &d);
		if (rc)
			show(&d);
	}
	const char *what[2] = { "modifier", "discharge" };
	const double qf[2] = { 1, 1.2 }, shift[2] = { 20, 0 };
	for (int c = 0; c < 2 && !rc; c++) {
		struct wb_bake w, f;
		rc = bake(&w, WB_SOLVER_SWE, WB_INIT_HYDROLOGY, 1000, OUT "/swe", qf[c], shift[c]);
		rc |= bake(&f, WB_SOLVER_SWE, WB_INIT_HYDROLOGY, 1000, NULL, qf[c], shift[c]);
		if (!rc) {
			printf("bench river_swe_warm_%s_steps %ld steps\n", what[c],
			       w.rep.converged ? w.rep.steps : 0);
			printf("bench river_swe_warm_%s_rest_steps %ld steps\n", what[c],
			       steps_at_rest(&w));
			printf("bench river_swe_warm_%s_velocity_diff %.4f 1\n", what[c],
			       vel_diff(&w.st, &f.st));
			fprintf(stderr, "river swe warm start after the %s change: %ld steps, fresh bake %ld\n",
				what[c], w.rep.steps, f.rep.steps);
		}
		wb_bake_release(&w);
		wb_bake_release(&f);
	}
	wb_bake_release(&a);
	wb_diags_release(&d);
	return rc;
}

static int rain(int solver, const char *name)
{
	enum { W = 64, H = 64 };
	const double dx = 4.0;
	struct wb_diags d;
	struct wb_bake b;
	wb_diags_init(&d);
	memset(&b, 0, sizeof(b));
	int rc = wb_mkdirs(OUT, &d) != WB_OK;
	unsigned char *buf = malloc(W * H * 4);
	rc |= !buf;
	for (int j = 0; !rc && j < H; j++)
		for (int i = 0; i < W; i++) {
			double x = (i + 0.5) * dx, y = (j + 0.5) * dx;
			double v = 30 - 0.02 * y + 0.12 * fabs(x - W * dx / 2);
			const double bowl[2][4] = { { 70, 90, 20, 5 }, { 190, 150, 24, 6 } };
			for (int k = 0; k < 2; k++) {
				double r = hypot(x - bowl[k][0], y - bowl[k][1]);
				if (r < bowl[k][2])
					v -= bowl[k][3] * (1 - (r / bowl[k][2]) * (r / bowl[k][2]));
			}
			float f = (float)v;
			uint32_t u;
			memcpy(&u, &f, 4);
			for (int q = 0; q < 4; q++)
				buf[4 * (i + j * W) + q] = (unsigned char)(u >> (8 * q));
		}
	if (!rc)
		rc = wb_write_file_atomic(OUT "/rain.r32f", buf, W * H * 4, &d) != WB_OK;
	free(buf);
	char text[1536];
	snprintf(text, sizeof(text),
		 "{\"name\": \"rain\", \"version\": 1,\n"
		 " \"terrain\": {\"heightmap\": \"rain.r32f\", \"format\": \"r32f\", \"size\": [%d, %d],\n"
		 "   \"metres_per_pixel\": %g, \"height_scale\": 1, \"height_offset\": 0},\n"
		 " \"boundaries\": {\"west\": \"wall\", \"east\": \"wall\", \"north\": \"wall\", \"south\": \"open\"},\n"
		 " \"materials\": [{\"id\": 1, \"name\": \"w\", \"kind\": \"river\"}],\n"
		 " \"sources\": [{\"type\": \"rain\", \"name\": \"storm\", \"rate\": 20, \"material\": \"w\"}],\n"
		 " \"simulation\": {\"solver\": \"%s\", \"manning\": 0.04, \"viscosity\": 0.5,\n"
		 "   \"max_steps\": 60000, \"tolerance\": 0.03, \"window\": 1000},\n"
		 " \"output\": {\"lods\": 1}}\n", W, H, dx, name);
	if (!rc)
		rc = wb_write_file_atomic(OUT "/rain.json", text, strlen(text), &d) != WB_OK;
	if (!rc)
		rc = wb_bake_load(&b, OUT "/rain.json", &d) != WB_OK;
	if (!rc) {
		struct wb_solve_opts o = { 0 };
		o.threads = 1;
		rc = wb_bake_solve(&b, &o, &d) != WB_OK;
	}
	if (!rc) {
		size_t n = (size_t)W * H;
		long wet = 0, water = 0;
		double hmin = b.sc.output.min_depth, qmin = b.sc.output.min_flow;
		for (size_t k = 0; k < n; k++) {
			double h = b.st.h[k];
			double q = h * hypot(b.st.u[k], b.st.v[k]);
			wet += h > b.sc.sim.dry_depth;
			water += h >= hmin && (h >= WB_FLOW_DEPTH_FACTOR * hmin || q >= qmin);
		}
		printf("bench rain_%s_steps %ld steps\n", name,
		       b.rep.converged ? b.rep.steps : 0);
		printf("bench rain_%s_water_fraction %.1f %%\n", name, 100.0 * water / n);
		printf("bench rain_%s_wet_fraction %.1f %%\n", name, 100.0 * wet / n);
		fprintf(stderr, "rain %s: %ld steps, converged %d, residual %.3g\n", name,
			b.rep.steps, b.rep.converged, b.rep.residual);
	}
	if (rc)
		show(&d);
	wb_bake_release(&b);
	wb_diags_release(&d);
	return rc;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int rc = compare(WB_SOLVER_LBM, "lbm", 0);
	rc |= compare(WB_SOLVER_LBM, "lbm", 1000);
	rc |= compare(WB_SOLVER_SWE, "swe", 0);
	rc |= warm();
	rc |= warm_swe();
	rc |= rain(WB_SOLVER_SWE, "swe");
	rc |= rain(WB_SOLVER_LBM, "lbm");
	return rc ? 1 : 0;
}
