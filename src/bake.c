/*
 * bake.c - the pipeline steps shared by wbake, tests and benchmarks
 * (see bake.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bake.h"
#include "coarse.h"
#include "lbm.h"
#include "par.h"
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
	/* the raster holds its own copy of the terrain: the heightmap's
	 * (4 bytes per cell, 1 GiB at 16384^2) is not read again; its size
	 * and hash stay */
	free(b->hm.z);
	b->hm.z = NULL;
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
	/* calloc'd: the guess writes only where there is water or flow, so
	 * dry land costs no memory at world scale (docs/scale.md) */
	b->guess_h = calloc(n, sizeof(float));
	b->guess_u = calloc(n, sizeof(float));
	b->guess_v = calloc(n, sizeof(float));
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

enum wb_status wb_bake_warm(struct wb_bake *b, const char *dir, int threads,
			    struct wb_diags *d)
{
	/* say what 'dir' is when it is not a directory, rather than
	   "DIR/state.wbs: cannot open: Not a directory" */
	struct stat sb;
	if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
		return wb_fail(d, WB_EINPUT, dir,
			       "expected the output directory of an earlier bake, found %s",
			       wb_file_kind(sb.st_mode));
	if (stat(dir, &sb) != 0 && errno == ENOENT)
		return wb_fail(d, WB_EINPUT, dir,
			       "expected the output directory of an earlier bake, found nothing of this name");
	char *path = wb_path_join(dir, WB_STATE_FILE);
	if (!path)
		return wb_fail(d, WB_EIO, dir, "out of memory");
	wb_state_free(&b->warm);
	free(b->warm_guess);
	b->warm_guess = NULL;
	for (int c = 0; c < 3; c++) {
		free(b->warm_mod[c]);
		b->warm_mod[c] = NULL;
	}
	enum wb_status st = wb_state_load(path, &b->r, &b->warm,
					  &b->warm_guess, b->warm_mod,
					  &b->warm_solver, threads, d);
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

/* The scene's solver on raster r, on the CPU or the OpenCL device. */
static enum wb_status run_solver(const struct wb_raster *r,
				 const struct wb_sim *sim,
				 const struct wb_solve_opts *o,
				 struct wb_state *out, struct wb_solve_report *rep,
				 struct wb_diags *d)
{
	int swe = sim->solver == WB_SOLVER_SWE;
	if (o->opencl) {
#ifdef WB_OPENCL
		return swe ? cl_swe_solve(r, sim, o, out, rep, d) :
			     cl_lbm_solve(r, sim, o, out, rep, d);
#else
		return wb_fail(d, WB_EUSAGE, NULL,
			       "OpenCL requested, but this build has no OpenCL path (make OPENCL=1)");
#endif
	}
	return swe ? swe_solve(r, sim, o, out, rep, d) :
		     lbm_solve(r, sim, o, out, rep, d);
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Coarse-to-fine (coarse.h): solve the start (h, u, v on the fine grid,
 * nx*ny each) on grids 2^levels .. 2 times coarser, each level starting
 * from the one before carried over with the volume (and the momentum) of
 * every coarse cell kept, and replace h, u, v with the last level's state
 * carried to the fine grid. A coarse level runs the scene's simulation
 * with the window and the step cap divided by its factor (its time step
 * is about that much longer, so a window spans the same simulated time)
 * and need not converge. A level that fails (diverges) leaves h, u, v as
 * they were and ends the coarse levels with a warning; cancellation and
 * out of memory are returned. */
static enum wb_status coarse_to_fine(struct wb_bake *b, int levels,
				     const struct wb_solve_opts *o, float *h,
				     float *u, float *v, struct wb_diags *d)
{
	struct wb_raster prev, cr;
	struct wb_state ps, cs;
	enum wb_status st = WB_OK;
	int pk = 0;
	memset(&prev, 0, sizeof(prev));
	memset(&ps, 0, sizeof(ps));
	memset(&cs, 0, sizeof(cs));
	for (int l = levels; l >= 1; l--) {
		int k = 1 << l;
		if (wb_coarse_restrict(&b->r, k, &cr) != WB_OK ||
		    !(cr.u0 = malloc((size_t)cr.nx * cr.ny * sizeof(float))) ||
		    !(cr.v0 = malloc((size_t)cr.nx * cr.ny * sizeof(float)))) {
			wb_raster_free(&cr);
			st = wb_fail(d, WB_EIO, NULL, "coarse level: out of memory");
			goto out;
		}
		if (!ps.h) {
			wb_coarse_restrict_depth(&b->r, k, h, &cr, cr.h0);
			wb_coarse_restrict_velocity(&b->r, k, h, u, v, &cr,
						    cr.u0, cr.v0);
		} else {
			wb_coarse_prolong(&prev, ps.h, pk / k, &cr, cr.h0);
			wb_coarse_prolong_velocity(&prev, ps.u, ps.v, pk / k, &cr,
						   cr.h0, cr.u0, cr.v0);
		}
		struct wb_sim sim = b->sc.sim;
		sim.mass_scale = 0; /* no steady acceleration on coarse grids */
		long w = sim.window > 0 ? sim.window : 200;
		sim.window = w / k > 0 ? w / k : 1;
		if (sim.max_steps > 0)
			sim.max_steps = sim.max_steps / k > 0 ? sim.max_steps / k : 1;
		if (sim.dt > 0)
			sim.dt *= k;
		struct wb_solve_opts co = *o;
		co.steps = 0;
		/* several processes: each solves the small coarse grid alone,
		   the same bytes on every rank (the bands cut the full grid) */
		co.par = NULL;
		struct wb_solve_report rep;
		struct wb_diags cd;
		wb_diags_init(&cd);
		memset(&rep, 0, sizeof(rep));
		double t0 = wall_s();
		st = run_solver(&cr, &sim, &co, &cs, &rep, &cd);
		if ((st == WB_ESIM || st == WB_EINPUT) && cd.n > 0) {
			char msg[1024];
			wb_diag_format(&cd.v[cd.n - 1], msg, sizeof(msg));
			wb_diag_add(d, WB_SEV_WARNING, NULL, "simulation.coarse_levels", 0, 0,
				    "the %dx coarser grid failed (%s); the bake starts at full resolution without it",
				    k, msg);
		}
		wb_diags_release(&cd);
		if (st != WB_OK) {
			wb_raster_free(&cr);
			wb_state_free(&cs);
			wb_state_free(&ps);
			if (st == WB_ESIM || st == WB_EINPUT)
				st = WB_OK; /* h, u, v untouched */
			goto out;
		}
		struct wb_level_report *lr = &b->rep.level[b->rep.n_levels++];
		lr->factor = k;
		lr->nx = cr.nx;
		lr->ny = cr.ny;
		lr->dx = cr.dx;
		lr->steps = rep.steps;
		lr->converged = rep.converged;
		lr->residual = rep.residual;
		lr->seconds = wall_s() - t0;
		wb_raster_free(&prev);
		wb_state_free(&ps);
		prev = cr;
		ps = cs;
		memset(&cs, 0, sizeof(cs));
		pk = k;
	}
	if (ps.h) {
		wb_coarse_prolong(&prev, ps.h, pk, &b->r, h);
		wb_coarse_prolong_velocity(&prev, ps.u, ps.v, pk, &b->r, h, u, v);
	}
out:
	wb_raster_free(&prev);
	wb_state_free(&ps);
	return st;
}

/* Warm start (SWE): set su, sv to zero in every lake of the first guess
 * (connected still water: guess depth > 0, guess velocity 0; 4-neighbour)
 * within one cell of a cell whose modifier changed since the saved bake
 * (target velocity or rate; a state without modifier fields had none). A
 * lake's circulation is not unique: carried into a lake whose modifier
 * moved, the old gyre persists and the bake settles on another steady
 * state than a fresh one (docs/hydrology.md "Warm starts"); such a lake
 * starts at rest. Serial, index order. Returns -1 when out of memory. */
static int rest_modified_lakes(const struct wb_bake *b, float *su, float *sv)
{
	const struct wb_raster *r = &b->r;
	const int nx = r->nx, ny = r->ny;
	size_t n = (size_t)nx * ny;
	float *const *om = b->warm_mod;
	unsigned char *seen = calloc(n, 1);
	unsigned char *chg = calloc(n, 1);
	size_t *stack = malloc(n * sizeof(size_t));
	if (!seen || !chg || !stack) {
		free(seen);
		free(chg);
		free(stack);
		return -1;
	}
	for (size_t k = 0; k < n; k++) {
		float ou = om[0] ? om[0][k] : 0.0f, ov = om[1] ? om[1][k] : 0.0f;
		float ok = om[2] ? om[2][k] : 0.0f;
		float nu = r->mod_u ? r->mod_u[k] : 0.0f, nv = r->mod_v ? r->mod_v[k] : 0.0f;
		float nk = r->mod_k ? r->mod_k[k] : 0.0f;
		chg[k] = (ok > 0 || nk > 0) && (ou != nu || ov != nv || ok != nk);
	}
#define STILL(q) (b->guess_h[q] > 0 && b->guess_u[q] == 0 && b->guess_v[q] == 0)
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)i + (size_t)j * nx;
			if (seen[k] || !STILL(k))
				continue;
			int near = 0;
			for (int y = j - 1; y <= j + 1 && !near; y++)
				for (int x = i - 1; x <= i + 1; x++)
					if (x >= 0 && y >= 0 && x < nx && y < ny &&
					    chg[(size_t)x + (size_t)y * nx])
						near = 1;
			if (!near)
				continue;
			size_t top = 0;
			stack[top++] = k;
			seen[k] = 1;
			while (top > 0) {
				size_t q = stack[--top];
				su[q] = sv[q] = 0.0f;
				int qi = (int)(q % (size_t)nx), qj = (int)(q / (size_t)nx);
				const int di[4] = { 1, -1, 0, 0 }, dj[4] = { 0, 0, 1, -1 };
				for (int e = 0; e < 4; e++) {
					int x = qi + di[e], y = qj + dj[e];
					if (x < 0 || y < 0 || x >= nx || y >= ny)
						continue;
					size_t m = (size_t)x + (size_t)y * nx;
					if (!seen[m] && STILL(m)) {
						seen[m] = 1;
						stack[top++] = m;
					}
				}
			}
		}
#undef STILL
	free(seen);
	free(chg);
	free(stack);
	return 0;
}

/* simulation.steady_acceleration resolved for the full-resolution run
 * (docs/hydrology.md "Steady acceleration"): the mass_scale to run the
 * SWE solver with, 0 for none. It needs the SWE solver on the CPU, a run
 * to steady (not --steps, which follows the transient) and an automatic
 * dt (the acceleration chooses dt itself); "low_froude" where it cannot
 * apply is a warning naming why. "auto" is off: it measured no gain worth
 * its cost (docs/hydrology.md). Coarse levels run without it. */
#define WB_ACCEL_MASS_SCALE 0.5
static double steady_accel(const struct wb_bake *b,
			   const struct wb_solve_opts *o, struct wb_diags *d)
{
	const struct wb_sim *sim = &b->sc.sim;
	if (sim->steady_accel <= 0) /* "off", or "auto" */
		return 0.0;
	const char *why = sim->solver != WB_SOLVER_SWE ? "the LBM solver has none" :
			  o->opencl ? "the OpenCL path has none" :
			  o->steps > 0 ? "a run of a fixed step count (--steps) follows the transient" :
			  sim->dt > 0 ? "simulation.dt is fixed (the acceleration chooses the time step)" :
			  NULL;
	if (why) {
		wb_diag_add(d, WB_SEV_WARNING, b->sc.file,
			    "simulation.steady_acceleration", 0, 0,
			    "\"low_froude\" is not used: %s", why);
		return 0.0;
	}
	/* a caller (bench) may set the scale itself */
	return sim->mass_scale > 0 ? sim->mass_scale : WB_ACCEL_MASS_SCALE;
}

enum wb_status wb_bake_solve(struct wb_bake *b, const struct wb_solve_opts *o,
			     struct wb_diags *d)
{
	enum wb_status st;
	size_t n = (size_t)b->r.nx * b->r.ny;
	wb_state_free(&b->st);
	memset(&b->rep, 0, sizeof(b->rep));
	struct wb_level_report lv[WB_LEVELS_MAX];
	/* the start: warm state, first guess or the scene's water. The first
	 * guess is made in every case: the state file keeps it, so that a
	 * later warm start can carry over a changed discharge */
	float *scene_h0 = b->r.h0, *start = NULL;
	int how = WB_START_SCENE;
	st = wb_bake_guess(b, d);
	if (st != WB_OK)
		return st;
	float *su = NULL, *sv = NULL; /* the start's velocity, or none */
	if (b->warm.h) {
		start = malloc(n * sizeof(float));
		/* SWE: the saved velocities too: a steady flow's circulation
		 * (a lake's gyre) takes most of a bake to spin up from rest,
		 * and a change (a moved modifier, more discharge) leaves most
		 * of it as it was (docs/hydrology.md "Warm starts"). The LBM
		 * starts at rest: it gained little and its lakes settled on
		 * another circulation than a fresh bake's */
		int carry = b->sc.sim.solver == WB_SOLVER_SWE;
		su = carry && b->warm.u ? malloc(n * sizeof(float)) : NULL;
		sv = carry && b->warm.v ? malloc(n * sizeof(float)) : NULL;
		if (!start || (carry && ((b->warm.u && !su) || (b->warm.v && !sv)))) {
			free(start);
			free(su);
			free(sv);
			return wb_fail(d, WB_EIO, NULL, "out of memory");
		}
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
			/* velocity only where the saved bake had water and the
			 * start has: new water starts at rest */
			int moving = h > 0 && b->warm.h[k] > 0;
			if (su)
				su[k] = moving ? b->warm.u[k] : 0.0f;
			if (sv)
				sv[k] = moving ? b->warm.v[k] : 0.0f;
		}
		if (!su || !sv) {
			free(su);
			free(sv);
			su = sv = NULL;
		} else if (rest_modified_lakes(b, su, sv)) {
			free(start);
			free(su);
			free(sv);
			return wb_fail(d, WB_EIO, NULL, "out of memory");
		}
		how = WB_START_WARM;
	} else if (b->sc.sim.initial == WB_INIT_HYDROLOGY) {
		start = b->guess_h;
		how = WB_START_HYDROLOGY;
	}
	/* coarse-to-fine: the start solved on coarser grids first (not for
	 * runs of a fixed step count, which test the solver itself) */
	int levels = o->steps > 0 ? 0 :
		     wb_coarse_levels(b->sc.sim.coarse_levels, b->r.nx, b->r.ny,
				      b->warm.h != NULL);
	if (levels > 0) {
		float *cf = malloc(n * sizeof(float));
		if (!su)
			su = calloc(n, sizeof(float));
		if (!sv)
			sv = calloc(n, sizeof(float));
		if (!cf || !su || !sv) {
			free(cf);
			free(su);
			free(sv);
			if (start != b->guess_h)
				free(start);
			return wb_fail(d, WB_EIO, NULL, "out of memory");
		}
		for (size_t k = 0; k < n; k++) {
			cf[k] = start ? start[k] : scene_h0 ? scene_h0[k] : 0.0f;
			if (start == b->guess_h) {
				su[k] = b->guess_u[k];
				sv[k] = b->guess_v[k];
			}
		}
		if (start != b->guess_h)
			free(start);
		start = cf;
		st = coarse_to_fine(b, levels, o, start, su, sv, d);
		if (st != WB_OK) {
			free(start);
			free(su);
			free(sv);
			return st;
		}
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
	b->r.u0 = su;
	b->r.v0 = sv;
	/* several ranks stepping the LBM's active blocks: rows to ranks by
	 * the blocks the start's water makes active (par.c lbm_par_work);
	 * the SWE and the LBM's dense step cost the same per row wet or dry
	 * and keep the caller's equal rows */
	if (o->par && o->par->size > 1 && b->sc.sim.solver != WB_SOLVER_SWE &&
	    lbm_sparse_default()) {
		double *work = malloc((size_t)b->r.ny * sizeof(double));
		if (!work) {
			st = wb_fail(d, WB_EIO, NULL, "out of memory");
		} else {
			lbm_par_work(&b->r, NULL, work);
			wb_par_split(o->par, b->r.ny, work);
			free(work);
		}
	}
	struct wb_sim fsim = b->sc.sim;
	fsim.mass_scale = st == WB_OK ? steady_accel(b, o, d) : 0;
	if (st == WB_OK)
		st = run_solver(&b->r, &fsim, &oo, &b->st, &rep, d);
	/* LBM stops at a converged window without a progress call */
	if (st == WB_OK && oo.progress == hist_progress && rep.converged)
		hist_add(h, rep.steps, rep.residual, 1);
	double v0 = 0, vs = 0, vg = 0;
	for (size_t k = 0; k < n; k++) {
		v0 += scene_h0 ? scene_h0[k] : 0;
		vs += b->r.h0 ? b->r.h0[k] : 0;
		vg += b->guess_h[k];
	}
	b->r.h0 = scene_h0;
	b->r.u0 = b->r.v0 = NULL;
	free(su);
	free(sv);
	if (start != b->guess_h)
		free(start);
	int nl = b->rep.n_levels;
	memcpy(lv, b->rep.level, sizeof(lv));
	b->rep = rep;
	b->rep.n_levels = nl;
	memcpy(b->rep.level, lv, sizeof(lv));
	b->rep.start = how;
	b->rep.steady_accel = fsim.mass_scale > 0;
	b->rep.start_volume = vs * b->r.dx * b->r.dx;
	if (how == WB_START_HYDROLOGY) {
		b->rep.guess_lake_cells = b->guess.lake_cells;
		b->rep.guess_channel_cells = b->guess.channel_cells;
		b->rep.guess_volume = (vg - v0) * b->r.dx * b->r.dx;
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
	for (int c = 0; c < 3; c++)
		free(b->warm_mod[c]);
	free(b->guess_h);
	free(b->guess_u);
	free(b->guess_v);
	wb_raster_free(&b->r);
	wb_heightmap_free(&b->hm);
	wb_scene_free(&b->sc);
	memset(b, 0, sizeof(*b));
}
