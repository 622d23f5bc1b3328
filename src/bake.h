/*
 * bake.h - the pipeline in three calls, shared by bin/wbake, the end-to-end
 * tests and the benchmarks:
 *
 *   wb_bake_load()   scene file -> scene, heightmap, raster
 *   wb_bake_solve()  raster -> state (the scene's solver, on the CPU or, in
 *                    OPENCL=1 builds with o->opencl, on an OpenCL device)
 *   wb_output_write() (output.h) state -> pack and manifest
 *
 * wb_bake_release() frees everything (also after a failed step).
 *
 * wb_bake_solve() also keeps the residual of every convergence window
 * (the relative change of the window-mean flow, which the progress
 * callback carries; each is filed under the step of its window's end) in
 * b->hist, for the report.
 * The first LBM window has nothing to compare with and reports exactly 1:
 * values of exactly 1 are not kept. At most WB_HIST_MAX points: when full, every other point is
 * dropped and only every second window is kept from then on. Runs with
 * o->steps (no convergence windows) keep none.
 */
#ifndef WB_BAKE_H
#define WB_BAKE_H

#include "wbake.h"

#define WB_HIST_MAX 1024

struct wb_residual_hist {
	long step[WB_HIST_MAX];
	double value[WB_HIST_MAX];
	int n;
	long window, stride; /* kept: steps that are multiples of this */
};

struct wb_bake {
	struct wb_scene sc;
	struct wb_heightmap hm;
	struct wb_raster r;
	struct wb_state st;
	struct wb_solve_report rep;
	int loaded, solved;
	struct wb_residual_hist hist;
};

enum wb_status wb_bake_load(struct wb_bake *b, const char *scene_path,
			    struct wb_diags *d);
enum wb_status wb_bake_solve(struct wb_bake *b, const struct wb_solve_opts *o,
			     struct wb_diags *d);
void wb_bake_release(struct wb_bake *b);

#endif
