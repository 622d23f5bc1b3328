/*
 * bake.c - the pipeline steps shared by wbake, tests and benchmarks
 * (see bake.h).
 */
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#ifdef WB_OPENCL
#include "cl.h"
#endif
#include "solve.h"
#include "util.h"

enum wb_status wb_bake_load(struct wb_bake *b, const char *scene_path,
			    struct wb_diags *d)
{
	memset(b, 0, sizeof(*b));
	enum wb_status st = wb_scene_load(scene_path, &b->sc, d);
	if (!st)
		st = wb_heightmap_load(&b->sc.terrain, &b->hm, d);
	if (!st) {
		int from = d->n;
		st = wb_raster_build(&b->sc, &b->hm, &b->r, d);
		if (d->n > from) {
			/* point the rasteriser's messages at their lines */
			struct wb_diags quiet;
			unsigned char *text;
			size_t len;
			wb_diags_init(&quiet);
			if (wb_read_file(scene_path, &text, &len, &quiet) == WB_OK) {
				wb_scene_locate((const char *)text, len, b->sc.file, d, from);
				free(text);
			}
			wb_diags_release(&quiet);
		}
	}
	b->loaded = st == WB_OK;
	return st;
}

enum wb_status wb_bake_solve(struct wb_bake *b, const struct wb_solve_opts *o,
			     struct wb_diags *d)
{
	enum wb_status st;
	int swe = b->sc.sim.solver == WB_SOLVER_SWE;
	wb_state_free(&b->st);
	memset(&b->rep, 0, sizeof(b->rep));
	if (o->opencl) {
#ifdef WB_OPENCL
		st = swe ? cl_swe_solve(&b->r, &b->sc.sim, o, &b->st, &b->rep, d) :
			   cl_lbm_solve(&b->r, &b->sc.sim, o, &b->st, &b->rep, d);
#else
		st = wb_fail(d, WB_EUSAGE, NULL,
			     "OpenCL requested, but this build has no OpenCL path (make OPENCL=1)");
#endif
	} else {
		st = swe ? swe_solve(&b->r, &b->sc.sim, o, &b->st, &b->rep, d) :
			   lbm_solve(&b->r, &b->sc.sim, o, &b->st, &b->rep, d);
	}
	b->solved = st == WB_OK;
	return st;
}

void wb_bake_release(struct wb_bake *b)
{
	if (!b)
		return;
	wb_state_free(&b->st);
	wb_raster_free(&b->r);
	wb_heightmap_free(&b->hm);
	wb_scene_free(&b->sc);
	memset(b, 0, sizeof(*b));
}
