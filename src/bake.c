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
#include "warm.h"

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

/* simulation.keep_dry as a cell mask (NULL when the scene has none). */
static unsigned char *keep_dry_mask(const struct wb_scene *sc,
				    const struct wb_raster *r, int *oom)
{
	*oom = 0;
	if (sc->n_keep_dry <= 0)
		return NULL;
	size_t n = (size_t)r->nx * r->ny;
	unsigned char *m = calloc(n, 1);
	if (!m) {
		*oom = 1;
		return NULL;
	}
	for (int k = 0; k < sc->n_keep_dry; k++) {
		const struct wb_keep_dry *kd = &sc->keep_dry[k];
		if (kd->area.n == 0) {
			/* scene coordinates are in the terrain's frame */
			double fx = floor(kd->point[0] / r->dx);
			double fy = floor(kd->point[1] / r->dx);
			if (fx >= 0 && fy >= 0 && fx < r->nx && fy < r->ny)
				m[(size_t)fx + (size_t)fy * r->nx] = 1;
			continue;
		}
		if (wb_raster_polygon_mask(r, &kd->area, m) < 0) {
			free(m);
			*oom = 1;
			return NULL;
		}
	}
	return m;
}

enum wb_status wb_bake_guess(struct wb_bake *b, struct wb_diags *d)
{
	size_t n = (size_t)b->r.nx * b->r.ny;
	int oom;
	free(b->guess_h);
	free(b->guess_u);
	free(b->guess_v);
	b->guess_h = malloc(n * sizeof(float));
	b->guess_u = malloc(n * sizeof(float));
	b->guess_v = malloc(n * sizeof(float));
	unsigned char *dry = keep_dry_mask(&b->sc, &b->r, &oom);
	struct hydro_guess_opts go = { b->sc.sim.manning, dry };
	if (oom || !b->guess_h || !b->guess_u || !b->guess_v ||
	    hydro_first_guess(&b->r, &go, b->guess_h, b->guess_u, b->guess_v,
			      &b->guess)) {
		free(dry);
		return wb_fail(d, WB_EIO, NULL, "first guess: out of memory");
	}
	free(dry);
	return WB_OK;
}

enum wb_status wb_bake_warm(struct wb_bake *b, const char *dir,
			    struct wb_diags *d)
{
	char *path = wb_path_join(dir, WB_STATE_FILE);
	if (!path)
		return wb_fail(d, WB_EIO, dir, "out of memory");
	wb_state_free(&b->warm);
	free(b->warm_guess);
	b->warm_guess = NULL;
	enum wb_status st = wb_state_load(path, &b->r, &b->warm,
					  &b->warm_guess, &b->warm_solver, d);
	free(path);
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
	size_t n = (size_t)b->r.nx * b->r.ny;
	wb_state_free(&b->st);
	memset(&b->rep, 0, sizeof(b->rep));
	/* the start: warm state, first guess or the scene's water. The first
	 * guess is made in every case: the state file keeps it, so that a
	 * later warm start can carry over a changed discharge */
	float *scene_h0 = b->r.h0, *start = NULL;
	int how = WB_START_SCENE;
	st = wb_bake_guess(b, d);
	if (st != WB_OK)
		return st;
	if (b->warm.h) {
		start = malloc(n * sizeof(float));
		if (!start)
			return wb_fail(d, WB_EIO, NULL, "out of memory");
		for (size_t k = 0; k < n; k++) {
			float h = b->warm.h[k];
			/* what the scene changed, as the first guesses see it:
			 * more or less discharge, a source moved */
			if (b->warm_guess)
				h += b->guess_h[k] - b->warm_guess[k];
			if (!(h > 0))
				h = 0;
			/* the scene's own water (a lake level raised) */
			if (scene_h0 && scene_h0[k] > h)
				h = scene_h0[k];
			/* no water inside a blocker that now reaches the bed */
			if (b->r.block_bot && b->r.block_bot[k] <= b->r.z[k] + 1e-3f)
				h = 0;
			start[k] = h;
		}
		how = WB_START_WARM;
	} else if (b->sc.sim.initial == WB_INIT_HYDROLOGY) {
		start = b->guess_h;
		how = WB_START_HYDROLOGY;
	}
	/* the residual of every window, for the report and the manifest */
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
	struct wb_solve_report rep;
	memset(&rep, 0, sizeof(rep));
	if (start)
		b->r.h0 = start;
	if (o->opencl) {
#ifdef WB_OPENCL
		st = swe ? cl_swe_solve(&b->r, &b->sc.sim, &oo, &b->st, &rep, d) :
			   cl_lbm_solve(&b->r, &b->sc.sim, &oo, &b->st, &rep, d);
#else
		st = wb_fail(d, WB_EUSAGE, NULL,
			     "OpenCL requested, but this build has no OpenCL path (make OPENCL=1)");
#endif
	} else {
		st = swe ? swe_solve(&b->r, &b->sc.sim, &oo, &b->st, &rep, d) :
			   lbm_solve(&b->r, &b->sc.sim, &oo, &b->st, &rep, d);
	}
	/* LBM stops at a converged window without a progress call */
	if (st == WB_OK && oo.progress == hist_progress && rep.converged)
		hist_add(h, rep.steps, rep.residual, 1);
	double v0 = 0, vs = 0;
	for (size_t k = 0; k < n; k++) {
		v0 += scene_h0 ? scene_h0[k] : 0;
		vs += b->r.h0 ? b->r.h0[k] : 0;
	}
	b->r.h0 = scene_h0;
	if (start != b->guess_h)
		free(start);
	b->rep = rep;
	b->rep.start = how;
	b->rep.start_volume = vs * b->r.dx * b->r.dx;
	if (how == WB_START_HYDROLOGY) {
		b->rep.guess_lake_cells = b->guess.lake_cells;
		b->rep.guess_channel_cells = b->guess.channel_cells;
		b->rep.guess_volume = (vs - v0) * b->r.dx * b->r.dx;
	}
	b->rep.n_windows = h->n < WB_RES_HISTORY ? h->n : WB_RES_HISTORY;
	for (int w = 0; w < b->rep.n_windows; w++) {
		b->rep.win_step[w] = h->step[w];
		b->rep.win_residual[w] = h->value[w];
	}
	b->solved = st == WB_OK;
	return st;
}

void wb_bake_release(struct wb_bake *b)
{
	if (!b)
		return;
	wb_state_free(&b->st);
	wb_state_free(&b->warm);
	free(b->warm_guess);
	free(b->guess_h);
	free(b->guess_u);
	free(b->guess_v);
	wb_raster_free(&b->r);
	wb_heightmap_free(&b->hm);
	wb_scene_free(&b->sc);
	memset(b, 0, sizeof(*b));
}
