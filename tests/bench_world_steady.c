/*
 * bench_world_steady.c - what keeps the open-world sample from a steady
 * state (issue 14, docs/scale.md "Steady state of the world").
 *
 * Runs the bake's start (wb_bake_load, the hydrological first guess as the
 * initial depth, as wbake does with simulation.initial "hydrology") and the
 * CPU SWE solver window by window with swe_solve's steady-state test (window
 * means, swe_means_close), and prints per window:
 *
 *   # window K step S t T s: residual R (tolerance TOL); net volume
 *     +dV m^3 (in I, out O, grid G m^3, particles P); active blocks A %;
 *     particles N; ms/step M; top regions: (x, y) share ...
 *
 * where the regions are the 256 x 256 m squares with the largest part of
 * the residual's numerator (sum h |du|^2 of the window means): a lake that
 * fills, a river front that advances, the waterfall's particles and foam.
 * Then the summary lines:
 *
 *   bench world_steady_windows <v> windows    windows run
 *   bench world_steady_residual <v> ratio     residual of the last window
 *   bench world_steady_ms <v> ms/step         mean wall time per step
 *   bench world_steady_fill <v> ratio         (in - out) / in over the
 *                                             last window: 0 when what
 *                                             enters leaves, 1 filling
 *
 * Usage: bench_world_steady [SCENE [WINDOWS [threads]]]; the scene comes
 * from 'mkterrain world SIZE DIR' (make bench: WB_WORLD_SCENE, the
 * 2048^2 world); WINDOWS defaults to 3 (make bench), WB_STEADY_WINDOWS
 * overrides it. WB_STEADY_WINDOW=N: windows of N steps instead of the
 * scene's; WB_STEADY_DRY=1: start from the scene's water, not the guess;
 * WB_STEADY_FEATURES=1 (guess starts): after every window, where the water
 * stored since the start went per feature of the guess (feat_print).
 *
 * WB_STEADY_SOLVER=lbm (the LBM/FV hybrid) or lbmpure (the pure LBM, its
 * Froude clamp): the CPU LBM through lbm_solve's window callback instead,
 * WINDOWS windows, the same start; per window the residual, the top
 * regions and the numerator's share by the window mean's depth and Froude
 * number (what holds the residual up: deep lakes, the channels, the
 * supercritical reaches).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "bake.h"
#include "lbm.h"
#include "swe.h"
#include "util.h"
#include "wbake.h"

#define REGION 256

/* WB_STEADY_FEATURES=1: where the water stored since the start went, per
 * feature of the first guess (docs/scale.md "Steady state of the world"):
 * each lake of the guess (connected still water, 8-neighbour, at least
 * 20 cells), the guess's channels per region, the banks (dry in the guess,
 * within BANK cells of its water) and the cells farther off (hillslopes),
 * from the last window's mean depth against the guess. */
#define BANK 3
struct feat {
	int nx, ny;
	double dx;
	const float *z, *gh, *gu, *gv;
	uint8_t *cls;   /* 0 far dry, 1 lake, 2 channel, 3 bank */
	int *lab;       /* lake component, -1 none */
	int nlab;
};

static int feat_init(struct feat *f, const struct wb_raster *r,
		     const float *gh, const float *gu, const float *gv)
{
	const int nx = r->nx, ny = r->ny;
	long n = (long)nx * ny;
	f->nx = nx;
	f->ny = ny;
	f->dx = r->dx;
	f->z = r->z;
	f->gh = gh;
	f->gu = gu;
	f->gv = gv;
	f->cls = calloc((size_t)n, 1);
	f->lab = malloc((size_t)n * sizeof(int));
	long *st = malloc((size_t)n * sizeof(long));
	if (!f->cls || !f->lab || !st)
		return 1;
	for (long i = 0; i < n; i++) {
		f->lab[i] = -1;
		if (gh[i] > 0)
			f->cls[i] = gu[i] == 0 && gv[i] == 0 ? 1 : 2;
	}
	for (long i = 0; i < n; i++) {
		if (f->cls[i])
			continue;
		int x = (int)(i % nx), y = (int)(i / nx);
		for (int dy = -BANK; dy <= BANK && !f->cls[i]; dy++)
			for (int dd = -BANK; dd <= BANK; dd++) {
				int a = x + dd, b = y + dy;
				if (a < 0 || b < 0 || a >= nx || b >= ny)
					continue;
				uint8_t c = f->cls[a + (long)b * nx];
				if (c == 1 || c == 2) {
					f->cls[i] = 3;
					break;
				}
			}
	}
	/* the bank pass marked cells with 3 while scanning: fine, 3 is not
	 * 1 or 2, so no bank spreads from a bank */
	f->nlab = 0;
	for (long i = 0; i < n; i++) {
		if (f->cls[i] != 1 || f->lab[i] >= 0)
			continue;
		long top = 0, cnt = 0;
		st[top++] = i;
		f->lab[i] = f->nlab;
		while (top) {
			long c = st[--top];
			cnt++;
			int x = (int)(c % nx), y = (int)(c / nx);
			for (int dy = -1; dy <= 1; dy++)
				for (int dd = -1; dd <= 1; dd++) {
					int a = x + dd, b = y + dy;
					if (a < 0 || b < 0 || a >= nx || b >= ny)
						continue;
					long j = a + (long)b * nx;
					if (f->cls[j] == 1 && f->lab[j] < 0) {
						f->lab[j] = f->nlab;
						st[top++] = j;
					}
				}
		}
		f->nlab++;
	}
	free(st);
	return 0;
}

static void feat_print(const struct feat *f, const float *mh, const float *mu,
		       const float *mv)
{
	const int nx = f->nx, ny = f->ny;
	long n = (long)nx * ny;
	double a = f->dx * f->dx;
	double dv[4] = { 0 }, gvol[4] = { 0 };
	long wet[4] = { 0 };
	int nl = f->nlab;
	double *L = calloc((size_t)nl * 8, sizeof(double));
	int rx = (nx + REGION - 1) / REGION, ry = (ny + REGION - 1) / REGION;
	double *R = calloc((size_t)rx * ry * 6, sizeof(double));
	if (!L || !R) {
		free(L);
		free(R);
		return;
	}
	for (long i = 0; i < n; i++) {
		int c = f->cls[i];
		double d = (double)mh[i] - f->gh[i];
		dv[c] += d * a;
		gvol[c] += f->gh[i] * a;
		if (mh[i] > 0.01)
			wet[c]++;
		if (c == 1) {
			double *l = L + 8 * f->lab[i];
			l[0] += 1;
			l[1] += f->z[i] + f->gh[i];
			l[2] += f->z[i] + mh[i];
			l[3] += d * a;
			l[4] += i % nx;
			l[5] += i / nx;
			l[6] += mh[i] * sqrt((double)mu[i] * mu[i] + (double)mv[i] * mv[i]);
			l[7] += mh[i];
		}
		if (c == 2) {
			double *q = R + 6 * ((i % nx) / REGION + (long)((i / nx) / REGION) * rx);
			double gs = sqrt((double)f->gu[i] * f->gu[i] + (double)f->gv[i] * f->gv[i]);
			double ms = sqrt((double)mu[i] * mu[i] + (double)mv[i] * mv[i]);
			q[0] += d * a;
			q[1] += f->gh[i];
			q[2] += mh[i];
			q[3] += f->gh[i] * gs; /* guessed unit discharge */
			q[4] += mh[i] * ms;
			q[5] += 1;
		}
	}
	static const char *nm[4] = { "far dry", "lakes", "channels", "banks" };
	for (int c = 0; c < 4; c++)
		printf("#   %-8s guess %.6g m^3, stored since %+.6g m^3, wet (>1 cm) %ld cells\n",
		       nm[c], gvol[c], dv[c], wet[c]);
	for (int k = 0; k < nl; k++) {
		double *l = L + 8 * k;
		if (l[0] < 20)
			continue;
		printf("#   lake at (%.0f, %.0f), %.0f cells: surface guess %.3f m, now %.3f m; stored %+.1f m^3; mean |hu|/h %.3f m/s\n",
		       l[4] / l[0], l[5] / l[0], l[0], l[1] / l[0], l[2] / l[0],
		       l[3], l[7] > 0 ? l[6] / l[7] : 0.0);
	}
	for (long q = 0; q < (long)rx * ry; q++) {
		double *p = R + 6 * q;
		if (p[5] < 1)
			continue;
		printf("#   channels (%ld, %ld): %.0f cells, stored %+.1f m^3, mean depth guess %.3f now %.3f, mean q guess %.4f now %.4f m^2/s\n",
		       (q % rx) * REGION + REGION / 2, (q / rx) * REGION + REGION / 2,
		       p[5], p[0], p[1] / p[5], p[2] / p[5], p[3] / p[5], p[4] / p[5]);
	}
	free(L);
	free(R);
}

/* Per-region share of the numerator of the last closed window. */
static void top_regions(const struct swe_means *m, const struct swe_ctx *s,
			char *out, size_t len)
{
	const int nx = s->nx, ny = s->ny;
	const float thin = (float)(SWE_THIN * fmax(s->sim.dry_depth, 1e-9));
	int rx = (nx + REGION - 1) / REGION, ry = (ny + REGION - 1) / REGION;
	double *a = calloc((size_t)rx * ry, sizeof(double));
	if (!a) {
		snprintf(out, len, "(out of memory)");
		return;
	}
	double tot = 0;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			long q = i + (long)j * nx;
			float h = m->mh[q];
			if (!(h > thin))
				continue;
			double du = (double)m->mu[q] - m->pu[q];
			double dv = (double)m->mv[q] - m->pv[q];
			double c = h * (du * du + dv * dv);
			a[(i / REGION) + (long)(j / REGION) * rx] += c;
			tot += c;
		}
	size_t o = 0;
	out[0] = 0;
	for (int k = 0; k < 3 && tot > 0; k++) {
		long best = 0;
		for (long q = 1; q < (long)rx * ry; q++)
			if (a[q] > a[best])
				best = q;
		if (!(a[best] > 0))
			break;
		int n = snprintf(out + o, len - o, "%s(%ld, %ld) %.0f %%",
				 k ? ", " : "", (best % rx) * REGION + REGION / 2,
				 (best / rx) * REGION + REGION / 2,
				 100.0 * a[best] / tot);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
		a[best] = 0;
	}
	free(a);
}

/* The LBM's windows (WB_STEADY_SOLVER=lbm or lbmpure). */
struct lbm_win {
	double g, thin, t0;
	long window;
	double in, out, vol; /* at the last window's close */
};

static void lbm_window(void *user, const struct wb_window_info *wi)
{
	struct lbm_win *W = user;
	const int nx = wi->nx, ny = wi->ny;
	const float *h = wi->h, *u0 = wi->u0, *v0 = wi->v0, *u1 = wi->u1,
		    *v1 = wi->v1;
	int rx = (nx + REGION - 1) / REGION, ry = (ny + REGION - 1) / REGION;
	double *a = calloc((size_t)rx * ry, sizeof(double));
	if (!a)
		return;
	/* shares: depth < 0.5, 0.5..2, >= 2 m; Froude < 0.5, 0.5..0.9,
	 * 0.9..1.1, >= 1.1 */
	double bd[3] = { 0 }, bf[4] = { 0 }, tot = 0, den = 0;
	long wet = 0;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			long q = i + (long)j * nx;
			double hq = h[q];
			if (!(hq > W->thin))
				continue;
			wet++;
			double du = (double)u1[q] - u0[q], dv = (double)v1[q] - v0[q];
			double c = hq * (du * du + dv * dv);
			double sp = sqrt((double)u1[q] * u1[q] + (double)v1[q] * v1[q]);
			double fr = sp / sqrt(W->g * hq);
			den += hq * sp * sp;
			tot += c;
			a[(i / REGION) + (long)(j / REGION) * rx] += c;
			bd[hq < 0.5 ? 0 : hq < 2 ? 1 : 2] += c;
			bf[fr < 0.5 ? 0 : fr < 0.9 ? 1 : fr < 1.1 ? 2 : 3] += c;
		}
	char top[256];
	size_t o = 0;
	top[0] = 0;
	for (int k = 0; k < 4 && tot > 0; k++) {
		long best = 0;
		for (long q = 1; q < (long)rx * ry; q++)
			if (a[q] > a[best])
				best = q;
		if (!(a[best] > 0))
			break;
		int n = snprintf(top + o, sizeof(top) - o, "%s(%ld, %ld) %.0f %%",
				 k ? ", " : "", (best % rx) * REGION + REGION / 2,
				 (best / rx) * REGION + REGION / 2,
				 100.0 * a[best] / tot);
		if (n < 0 || (size_t)n >= sizeof(top) - o)
			break;
		o += (size_t)n;
		a[best] = 0;
	}
	free(a);
	double t = omp_get_wtime();
	double pc = tot > 0 ? 100.0 / tot : 0;
	double in = wi->vol_in - W->in, out = wi->vol_out - W->out;
	printf("# window step %ld: residual %.4g; %.1f ms/step; volume %.6g "
	       "m^3, in %.4g, out %.4g, stored %+.4g (%.1f %% of in); %ld wet "
	       "cells; sqrt(num/den) %.4g; by depth <0.5 %.0f %%, 0.5-2 %.0f %%, >=2 "
	       "%.0f %%; by Froude <0.5 %.0f %%, 0.5-0.9 %.0f %%, 0.9-1.1 %.0f "
	       "%%, >=1.1 %.0f %%; top regions: %s\n", wi->step, wi->residual,
	       1e3 * (t - W->t0) / W->window, wi->volume, in, out,
	       wi->volume - W->vol, in > 0 ? 100.0 * (wi->volume - W->vol) / in :
	       0.0, wet,
	       den > 0 ? sqrt(tot / den) : 0.0, bd[0] * pc, bd[1] * pc,
	       bd[2] * pc, bf[0] * pc, bf[1] * pc, bf[2] * pc, bf[3] * pc, top);
	fflush(stdout);
	W->t0 = t;
	W->in = wi->vol_in;
	W->out = wi->vol_out;
	W->vol = wi->volume;
}

int main(int argc, char **argv)
{
	const char *env = getenv("WB_WORLD_SCENE");
	const char *path = argc > 1 ? argv[1] :
			   env && *env ? env : "build/world-2048/scene.json";
	const char *we = getenv("WB_STEADY_WINDOWS");
	long nwin = argc > 2 ? atol(argv[2]) : we && *we ? atol(we) : 3;
	int threads = wb_threads(argc > 3 ? atoi(argv[3]) : 0);
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_bake b;
	memset(&b, 0, sizeof(b));
	if (wb_bake_load(&b, path, &d) != WB_OK ||
	    wb_bake_guess(&b, &d) != WB_OK) {
		char buf[1024];
		wb_diag_format(&d.v[d.n - 1], buf, sizeof(buf));
		fprintf(stderr, "bench_world_steady: %s\n(generate it with "
			"bin/mkterrain world SIZE DIR)\n", buf);
		return 1;
	}
	struct wb_raster *r = &b.r;
	float *scene_h0 = r->h0;
	const char *dry = getenv("WB_STEADY_DRY");
	if (b.sc.sim.initial == WB_INIT_HYDROLOGY && !(dry && *dry == '1'))
		r->h0 = b.guess_h;
	const char *gv = getenv("WB_STEADY_GUESS_VEL");
	if (r->h0 == b.guess_h && gv && *gv == '1') {
		r->u0 = b.guess_u;
		r->v0 = b.guess_v;
	}
	struct wb_sim sim = b.sc.sim;
	const char *wenv = getenv("WB_STEADY_WINDOW");
	if (wenv && atol(wenv) > 0)
		sim.window = atol(wenv);
	const char *lenv = getenv("WB_STEADY_SOLVER");
	if (lenv && (!strcmp(lenv, "lbm") || !strcmp(lenv, "lbmpure"))) {
		long win = sim.window > 0 ? sim.window : 200;
		sim.solver = WB_SOLVER_LBM;
		sim.max_steps = win * (nwin + 1);
		struct lbm_win W = { 9.81, LBM_THIN * sim.dry_depth,
				     omp_get_wtime(), win, 0, 0, 0 };
		struct wb_solve_opts o;
		memset(&o, 0, sizeof(o));
		o.threads = threads;
		o.window = lbm_window;
		o.window_user = &W;
		struct wb_state out;
		struct wb_solve_report rep;
		memset(&out, 0, sizeof(out));
		memset(&rep, 0, sizeof(rep));
		printf("# %s: %s, %d thread(s), window %ld steps, tolerance "
		       "%g, start: %s\n", path, lenv, threads, win,
		       sim.tolerance, r->h0 == b.guess_h ? "first guess" :
		       "scene water");
		fflush(stdout);
		enum wb_status st = lbm_solve_hybrid(r, &sim, &o, &out, &rep, &d,
						     !strcmp(lenv, "lbm"));
		printf("bench world_steady_lbm_steps %ld steps\n", rep.steps);
		printf("bench world_steady_lbm_converged %d flag\n",
		       rep.converged);
		printf("bench world_steady_lbm_residual %.4g ratio\n",
		       rep.residual);
		wb_state_free(&out);
		r->h0 = scene_h0;
		r->u0 = r->v0 = NULL;
		wb_bake_release(&b);
		wb_diags_release(&d);
		return st == WB_OK ? 0 : 1;
	}
	sim.solver = WB_SOLVER_SWE;
	long window = sim.window > 0 ? sim.window : 200;
	double tol = sim.tolerance > 0 ? sim.tolerance : 1e-4;
	struct swe_ctx s;
	int T = swe_threads_for(r, threads);
	if (swe_init(&s, r, &sim, T, &d) != WB_OK) {
		fprintf(stderr, "bench_world_steady: swe_init failed\n");
		return 1;
	}
	struct swe_means M;
	if (swe_means_init(&M, &s, window)) {
		fprintf(stderr, "bench_world_steady: out of memory\n");
		return 1;
	}
	printf("# %s: %dx%d, %d thread(s), window %ld steps, tolerance %g, "
	       "start: %s (%ld lake and %ld channel cells)\n", path, s.nx,
	       s.ny, T, window, tol,
	       r->h0 == b.guess_h ? "first guess" : "scene water",
	       b.guess.lake_cells, b.guess.channel_cells);
	const char *fe = getenv("WB_STEADY_FEATURES");
	struct feat F;
	memset(&F, 0, sizeof(F));
	int feats = fe && *fe == '1' && r->h0 == b.guess_h;
	if (feats && feat_init(&F, r, b.guess_h, b.guess_u, b.guess_v)) {
		fprintf(stderr, "bench_world_steady: out of memory\n");
		return 1;
	}
	double res = NAN, fill = NAN, t_all = 0;
	long steps_all = 0, w;
	for (w = 1; w <= nwin; w++) {
		double in0 = s.vol_in, out0 = s.vol_out;
		long act = 0;
		double t0 = omp_get_wtime();
		for (long k = 0; k < window; k++) {
			if (swe_step(&s, &d) != WB_OK) {
				fprintf(stderr, "bench_world_steady: step failed\n");
				return 1;
			}
			act += s.sp.n_act;
			if (s.step % M.every == 0)
				swe_means_sample(&M, &s);
		}
		res = swe_means_close(&M, &s);
		double t = omp_get_wtime() - t0;
		t_all += t;
		steps_all += window;
		double in = s.vol_in - in0, out = s.vol_out - out0;
		fill = in > 0 ? (in - out) / in : 0;
		char top[256];
		top_regions(&M, &s, top, sizeof(top));
		printf("# window %ld step %ld t %.0f s: residual %.4g (tolerance "
		       "%g); net volume %+.4g m^3 (in %.4g, out %.4g, grid %.6g, "
		       "particles %.4g m^3); active blocks %.2f %%; particles "
		       "%ld; %.1f ms/step; top regions: %s\n", w, s.step, s.t,
		       res, tol, in - out, in, out, swe_grid_volume(&s),
		       swe_particles_volume(&s.P),
		       100.0 * act / ((double)window * s.sp.nblk), s.P.n,
		       1e3 * t / window, top);
		if (feats)
			feat_print(&F, M.mh, M.mu, M.mv);
		fflush(stdout);
	}
	free(F.cls);
	free(F.lab);
	printf("bench world_steady_windows %ld windows\n", w - 1);
	printf("bench world_steady_residual %.4g ratio\n", res);
	printf("bench world_steady_ms %.2f ms/step\n",
	       steps_all ? 1e3 * t_all / steps_all : 0.0);
	printf("bench world_steady_fill %.3g ratio\n", fill);
	swe_means_release(&M);
	swe_release(&s);
	r->h0 = scene_h0;
	r->u0 = r->v0 = NULL;
	wb_bake_release(&b);
	wb_diags_release(&d);
	return 0;
}
