/*
 * bench_bake.c - wall time of baking the bundled river sample, end to end
 * (scene, raster, solver to steady state, maps, pages, pack, manifest), with
 * each solver on all cores.
 *
 *   bench river_bake_lbm_s <seconds> s
 *   bench river_bake_swe_s <seconds> s
 *   bench river_lbm_steps <steps> steps
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bake.h"
#include "output.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int bake_river(int solver, const char *name)
{
	struct wb_diags d;
	struct wb_bake b;
	struct wb_output_summary sum;
	char buf[2048];
	wb_diags_init(&d);
	double t0 = now_s();
	enum wb_status st = wb_bake_load(&b, "samples/river/scene.json", &d);
	if (!st) {
		struct wb_solve_opts o = { 0 };
		b.sc.sim.solver = (enum wb_solver_kind)solver;
		st = wb_bake_solve(&b, &o, &d);
	}
	if (!st) {
		struct wb_output_opts oo = { 0 };
		oo.outdir = "build/bench_out";
		oo.solver_name = name;
		oo.heightmap_sha256 = b.hm.sha256;
		st = wb_output_write(&b.sc, &b.r, &b.st, &b.rep, &oo, &sum, &d);
	}
	double t = now_s() - t0;
	for (int i = 0; i < d.n; i++) {
		wb_diag_format(&d.v[i], buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
	if (!st) {
		printf("bench river_bake_%s_s %.2f s\n", name, t);
		printf("bench river_%s_steps %ld steps\n", name, b.rep.steps);
		fprintf(stderr, "river %s: %ld steps, converged %d, residual %.3g\n",
			name, b.rep.steps, b.rep.converged, b.rep.residual);
	}
	wb_bake_release(&b);
	wb_diags_release(&d);
	return st;
}

int main(void)
{
	int rc = bake_river(WB_SOLVER_LBM, "lbm");
	rc |= bake_river(WB_SOLVER_SWE, "swe");
	return rc ? 1 : 0;
}
