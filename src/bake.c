/*
 * bake.c - the pipeline steps shared by wbake, tests and benchmarks
 * (see bake.h).
 */
#include <math.h>
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

/* The progress callback wb_bake_solve() puts in front of the caller's. */
struct hist_tap {
	struct wb_residual_hist *h;
	wb_progress_fn user;
	void *user_data;
};

static void hist_add(struct wb_residual_hist *h, long step, double res,
		     int last)
{
	/* exactly 1 is the solvers' "nothing to compare with yet" */
	if (step <= 0 || (step % h->stride && !last) || res == 1.0 ||
	    !(res >= 0) || !isfinite(res))
		return;
	if (h->n > 0 && h->step[h->n - 1] >= step)
		return; /* reported twice (SWE at convergence) */
	if (h->n == WB_HIST_MAX) {
		int k = 0;
		for (int i = 0; i < h->n; i++)
			if (h->step[i] % (2 * h->stride) == 0) {
				h->step[k] = h->step[i];
				h->value[k++] = h->value[i];
			}
		h->n = k;
		h->stride *= 2;
		if (step % h->stride && !last)
			return;
	}
	h->step[h->n] = step;
	h->value[h->n++] = res;
}

static void hist_progress(void *user, long step, long max_steps,
			  double residual)
{
	struct hist_tap *t = user;
	/* progress comes every min(window, 100) steps, after the window
	   check: the residual it carries is that of the last window end */
	hist_add(t->h, step / t->h->window * t->h->window, residual, 0);
	if (t->user)
		t->user(t->user_data, step, max_steps, residual);
}

enum wb_status wb_bake_solve(struct wb_bake *b, const struct wb_solve_opts *o,
			     struct wb_diags *d)
{
	enum wb_status st;
	int swe = b->sc.sim.solver == WB_SOLVER_SWE;
	wb_state_free(&b->st);
	memset(&b->rep, 0, sizeof(b->rep));
	struct wb_residual_hist *h = &b->hist;
	h->n = 0;
	h->window = b->sc.sim.window > 0 ? b->sc.sim.window : 200;
	h->stride = h->window;
	struct hist_tap tap = { h, o->progress, o->progress_user };
	struct wb_solve_opts oo = *o;
	if (o->steps <= 0) {
		oo.progress = hist_progress;
		oo.progress_user = &tap;
	}
	o = &oo;
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
	/* LBM stops at a converged window without a progress call */
	if (st == WB_OK && oo.progress == hist_progress && b->rep.converged)
		hist_add(h, b->rep.steps, b->rep.residual, 1);
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
