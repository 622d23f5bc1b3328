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

/* Even-odd rule, as raster.c: is (x, y) inside polygon p? */
static int inside(const struct wb_polygon *p, double x, double y)
{
	int in = 0;
	for (int a = 0, b = p->n - 1; a < p->n; b = a++) {
		double xa = p->xy[2 * a], ya = p->xy[2 * a + 1];
		double xb = p->xy[2 * b], yb = p->xy[2 * b + 1];
		if ((ya > y) != (yb > y) &&
		    x < (xb - xa) * (y - ya) / (yb - ya) + xa)
			in = !in;
	}
	return in;
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
		for (int j = 0; j < r->ny; j++)
			for (int i = 0; i < r->nx; i++)
				if (inside(&kd->area, (i + 0.5) * r->dx,
					   (j + 0.5) * r->dx))
					m[i + (size_t)j * r->nx] = 1;
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

/* Progress wrapper: records the residual of every window (a new value
 * reported), then forwards to the caller's callback. */
struct hist {
	struct wb_solve_report *rep;
	double last;
	const struct wb_solve_opts *o;
};

static void hist_progress(void *user, long step, long max, double res)
{
	struct hist *h = user;
	if (res != h->last && h->rep->n_windows < WB_RES_HISTORY) {
		h->rep->win_step[h->rep->n_windows] = step;
		h->rep->win_residual[h->rep->n_windows++] = res;
		h->last = res;
	}
	if (h->o->progress)
		h->o->progress(h->o->progress_user, step, max, res);
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
	struct hist hs = { NULL, 1.0, o };
	struct wb_solve_report rep;
	struct wb_solve_opts so = *o;
	so.progress = hist_progress;
	so.progress_user = &hs;
	memset(&rep, 0, sizeof(rep));
	/* the solvers memset their report: keep the history apart */
	struct wb_solve_report hrep;
	memset(&hrep, 0, sizeof(hrep));
	hs.rep = &hrep;
	if (start)
		b->r.h0 = start;
	if (o->opencl) {
#ifdef WB_OPENCL
		st = swe ? cl_swe_solve(&b->r, &b->sc.sim, &so, &b->st, &rep, d) :
			   cl_lbm_solve(&b->r, &b->sc.sim, &so, &b->st, &rep, d);
#else
		st = wb_fail(d, WB_EUSAGE, NULL,
			     "OpenCL requested, but this build has no OpenCL path (make OPENCL=1)");
#endif
	} else {
		st = swe ? swe_solve(&b->r, &b->sc.sim, &so, &b->st, &rep, d) :
			   lbm_solve(&b->r, &b->sc.sim, &so, &b->st, &rep, d);
	}
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
	b->rep.n_windows = hrep.n_windows;
	memcpy(b->rep.win_step, hrep.win_step, sizeof(hrep.win_step));
	memcpy(b->rep.win_residual, hrep.win_residual,
	       sizeof(hrep.win_residual));
	/* the last window's residual when the solver stopped on it before
	 * reporting progress */
	if (rep.converged && b->rep.n_windows < WB_RES_HISTORY &&
	    (b->rep.n_windows == 0 ||
	     b->rep.win_residual[b->rep.n_windows - 1] != rep.residual)) {
		b->rep.win_step[b->rep.n_windows] = rep.steps;
		b->rep.win_residual[b->rep.n_windows++] = rep.residual;
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
