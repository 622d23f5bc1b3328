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
 * overrides it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "bake.h"
#include "swe.h"
#include "util.h"
#include "wbake.h"

#define REGION 256

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
	if (b.sc.sim.initial == WB_INIT_HYDROLOGY)
		r->h0 = b.guess_h;
	struct wb_sim sim = b.sc.sim;
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
		fflush(stdout);
	}
	printf("bench world_steady_windows %ld windows\n", w - 1);
	printf("bench world_steady_residual %.4g ratio\n", res);
	printf("bench world_steady_ms %.2f ms/step\n",
	       steps_all ? 1e3 * t_all / steps_all : 0.0);
	printf("bench world_steady_fill %.3g ratio\n", fill);
	swe_means_release(&M);
	swe_release(&s);
	r->h0 = scene_h0;
	wb_bake_release(&b);
	wb_diags_release(&d);
	return 0;
}
