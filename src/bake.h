/*
 * bake.h - the pipeline in three calls, shared by bin/wbake, the end-to-end
 * tests and the benchmarks:
 *
 *   wb_bake_load()   scene file -> scene, heightmap, raster
 *   wb_bake_warm()   optional: start from an earlier bake's state file
 *                    (warm.h) instead of the first guess
 *   wb_bake_solve()  raster -> state (the scene's solver, on the CPU or, in
 *                    OPENCL=1 builds with o->opencl, on an OpenCL device).
 *                    The first guess (hydro.h) is always made and kept
 *                    in guess_h/u/v. The solver starts from, in this
 *                    order: the warm state plus the change of the first
 *                    guess since the earlier bake; with
 *                    simulation.initial "hydrology" (the default) the
 *                    first guess; else the scene's water. A SWE
 *                    warm start also starts with the saved velocities,
 *                    except in first-guess lakes next to a modifier
 *                    that changed (those start at rest). rep
 *                    records which (rep.start) and the residual of every
 *                    window.
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

#include "hydro.h"
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
	/* the first guess the solver started from (NULL when it did not) */
	float *guess_h, *guess_u, *guess_v;
	struct hydro_guess_report guess;
	struct wb_state warm; /* wb_bake_warm's state (h NULL: none) */
	float *warm_guess;    /* the first guess saved with it, or NULL */
	float *warm_mod[3];   /* its modifier target u, v and rate, or NULLs */
	int warm_solver;
};

enum wb_status wb_bake_load(struct wb_bake *b, const char *scene_path,
			    struct wb_diags *d);
enum wb_status wb_bake_solve(struct wb_bake *b, const struct wb_solve_opts *o,
			     struct wb_diags *d);
/* Load OUTDIR/state.wbs of an earlier bake ('dir') for b's loaded grid,
 * its hashes checked on 'threads' threads (0: all cores): WB_EINPUT (file
 * named) when missing or of another grid / terrain. */
enum wb_status wb_bake_warm(struct wb_bake *b, const char *dir, int threads,
			    struct wb_diags *d);
/* The first guess alone for b's loaded raster into b->guess_* (also done
 * by wb_bake_solve when the scene asks for it). */
enum wb_status wb_bake_guess(struct wb_bake *b, struct wb_diags *d);
void wb_bake_release(struct wb_bake *b);

#endif
