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
 */
#ifndef WB_BAKE_H
#define WB_BAKE_H

#include "wbake.h"

struct wb_bake {
	struct wb_scene sc;
	struct wb_heightmap hm;
	struct wb_raster r;
	struct wb_state st;
	struct wb_solve_report rep;
	int loaded, solved;
};

enum wb_status wb_bake_load(struct wb_bake *b, const char *scene_path,
			    struct wb_diags *d);
enum wb_status wb_bake_solve(struct wb_bake *b, const struct wb_solve_opts *o,
			     struct wb_diags *d);
void wb_bake_release(struct wb_bake *b);

#endif
