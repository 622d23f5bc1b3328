/*
 * bench_opencl_world.c - block-sparse SWE on an OpenCL device: the open
 * world (bin/mkterrain world SIZE DIR) against the dense kernel on a fully
 * wet grid, and the world's wall time to a steady state (docs/opencl.md,
 * docs/scale.md). OPENCL=1 builds only.
 *
 *   build/rel-cl/tests/bench_opencl_world [SCENE] [--device K] [--wet N]
 *       [--spin S] [--steps T] [--steady SECONDS] [--max-steps M]
 *       [--no-guess]
 *
 * SCENE defaults to $WB_WORLD_SCENE, else build/world-2048/scene.json.
 * Prints 'bench <name> <value> <unit>' lines:
 * --no-guess starts from the scene's water instead of the hydrological
 * first guess (simulation.initial "hydrology", as wbake starts).
 *   wet_ocl_dense_mcells      dense SWE step on a fully wet N x N grid with
 *                             the world's solver settings (MacCormack,
 *                             friction, foam), Mcells/s
 *   wet_ocl_sparse_mcells     the sparse step there (every block active)
 *   world_ocl_setup_s         host set-up of the world: scene + heightmap,
 *                             raster, first guess, swe_init, uploads (the
 *                             parts on stderr)
 *   world_ocl_active_blocks   % of the blocks stepped (after S spin-up steps)
 *   world_ocl_sparse_ms       ms per sparse step on the world
 *   world_ocl_dense_ms        ms per dense step on the same state
 *   world_ocl_active_mcells   active cells stepped per second (sparse)
 *   world_ocl_active_vs_dense world_ocl_active_mcells / wet_ocl_dense_mcells
 *                             (issue 14's target: at least 0.7)
 *   with --steady: cl_swe_solve on the world (the scene's window and
 *   tolerance; at most M steps, stopped after SECONDS of solving):
 *   world_ocl_steady_steps, world_ocl_steady_converged (0/1),
 *   world_ocl_steady_residual, world_ocl_steady_solve_s and
 *   world_ocl_steady_wall_s (set-up included).
 * Defaults: N = 4096, S = 2000, T = 200 on a GPU; N = 256, S = 50, T = 20
 * otherwise.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl.h"
#include "hydro.h"
#include "solve.h"
#include "wbake.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_diags(const struct wb_diags *d)
{
	char buf[8192];
	for (int k = 0; k < d->n; k++) {
		wb_diag_format(&d->v[k], buf, sizeof(buf));
		fprintf(stderr, "bench_opencl_world: %s\n", buf);
	}
}

/* bench_world's wet grid: waves over a gentle slope, wet everywhere */
static int make_wet(struct wb_raster *r, int n)
{
	if (wb_raster_alloc(r, n, n, 1.0) != WB_OK)
		return -1;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++) {
			double x = (double)i / n, y = (double)j / n;
			double z = 0.3 * x + 0.2 * sin(12.0 * x) * cos(9.0 * y);
			double w = 0.3 * sin(12.0 * 3.14159265358979 * x) *
				   cos(10.0 * 3.14159265358979 * y);
			r->z[i + (size_t)j * n] = (float)z;
			r->h0[i + (size_t)j * n] = (float)(2.0 - z + w);
		}
	return 0;
}

/* seconds per step of T steps; *blocks: active blocks per step */
static double time_steps(struct cl_swe *c, long steps, double *blocks,
			 struct wb_diags *d)
{
	long nblk;
	long long a0, a1;
	cl_swe_blocks(c, &nblk, &a0);
	double t0 = now_s();
	if (cl_swe_run(c, steps, d) != WB_OK)
		return -1;
	double t = (now_s() - t0) / steps;
	cl_swe_blocks(c, &nblk, &a1);
	if (blocks)
		*blocks = (double)(a1 - a0) / steps;
	return t;
}

struct stop {
	double t0, limit;
	volatile sig_atomic_t cancel;
	long last_step;
	double last_res;
};

static void progress(void *user, long step, long max, double res)
{
	struct stop *s = user;
	(void)max;
	s->last_step = step;
	s->last_res = res;
	if (now_s() - s->t0 > s->limit)
		s->cancel = 1;
}

int main(int argc, char **argv)
{
	const char *env = getenv("WB_WORLD_SCENE");
	const char *path = env && *env ? env : "build/world-2048/scene.json";
	int dev = -2, wetn = 0;
	long spin = -1, steps = 0, maxsteps = 0;
	double steady = 0;
	int guess = 1;
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--device") && k + 1 < argc)
			dev = atoi(argv[++k]);
		else if (!strcmp(argv[k], "--wet") && k + 1 < argc)
			wetn = atoi(argv[++k]);
		else if (!strcmp(argv[k], "--spin") && k + 1 < argc)
			spin = atol(argv[++k]);
		else if (!strcmp(argv[k], "--steps") && k + 1 < argc)
			steps = atol(argv[++k]);
		else if (!strcmp(argv[k], "--steady") && k + 1 < argc)
			steady = atof(argv[++k]);
		else if (!strcmp(argv[k], "--no-guess"))
			guess = 0;
		else if (!strcmp(argv[k], "--max-steps") && k + 1 < argc)
			maxsteps = atol(argv[++k]);
		else if (argv[k][0] != '-')
			path = argv[k];
		else {
			fprintf(stderr, "usage: %s [SCENE] [--device K] [--wet N] [--spin S] [--steps T] [--steady SECONDS] [--max-steps M] [--no-guess]\n",
				argv[0]);
			return 1;
		}
	}
	if (dev == -2)
		dev = cl_default_device();
	if (dev < 0) {
		fprintf(stderr, "bench_opencl_world: no OpenCL device\n");
		return 1;
	}
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	if (cl_env_open(dev, &e, &d) != WB_OK) {
		print_diags(&d);
		return 1;
	}
	int gpu = cl_env_is_gpu(e);
	wetn = wetn > 0 ? wetn : gpu ? 4096 : 256;
	spin = spin >= 0 ? spin : gpu ? 2000 : 50;
	steps = steps > 0 ? steps : gpu ? 200 : 20;
	fprintf(stderr, "bench_opencl_world: device %d: %s; %s\n", dev,
		cl_env_name(e), path);

	/* the world: load, rasterise, first guess */
	int rc = 1;
	struct wb_scene sc;
	struct wb_heightmap hm;
	struct wb_raster r, w;
	memset(&sc, 0, sizeof(sc));
	memset(&r, 0, sizeof(r));
	memset(&w, 0, sizeof(w));
	float *gh = NULL, *gu = NULL, *gv = NULL, *h0 = NULL;
	struct cl_swe *c = NULL;
	double t0 = now_s();
	if (wb_scene_load(path, &sc, &d) != WB_OK ||
	    wb_heightmap_load(&sc.terrain, &hm, &d) != WB_OK) {
		print_diags(&d);
		fprintf(stderr, "(generate it with bin/mkterrain world SIZE DIR)\n");
		goto out;
	}
	double tload = now_s() - t0;
	t0 = now_s();
	if (wb_raster_build(&sc, &hm, &r, &d) != WB_OK) {
		print_diags(&d);
		wb_heightmap_free(&hm);
		goto out;
	}
	wb_heightmap_free(&hm);
	double traster = now_s() - t0;
	t0 = now_s();
	size_t n = (size_t)r.nx * r.ny;
	double tguess = 0;
	if (guess && sc.sim.initial == WB_INIT_HYDROLOGY) {
		gh = malloc(n * sizeof(float));
		gu = malloc(n * sizeof(float));
		gv = malloc(n * sizeof(float));
		struct hydro_guess_opts go = { sc.sim.manning, NULL };
		if (!gh || !gu || !gv ||
		    hydro_first_guess(&r, &go, gh, gu, gv, NULL)) {
			fprintf(stderr, "bench_opencl_world: out of memory\n");
			goto out;
		}
		h0 = r.h0;
		r.h0 = gh;
		tguess = now_s() - t0;
	}
	struct wb_sim sim = sc.sim;
	sim.solver = WB_SOLVER_SWE;
	if (cl_swe_create(e, &r, &sim, 0, &c, &d) != WB_OK) {
		print_diags(&d);
		goto out;
	}
	double tinit, tup;
	cl_swe_setup_seconds(c, &tinit, &tup);
	fprintf(stderr, "bench_opencl_world: %dx%d cells; set-up: scene + heightmap %.2f s, raster %.2f s, first guess %.2f s, swe_init %.2f s, device buffers and uploads %.2f s\n",
		r.nx, r.ny, tload, traster, tguess, tinit, tup);
	printf("bench world_ocl_cells %.1f Mcells\n", (double)n / 1e6);
	printf("bench world_ocl_setup_s %.2f s\n",
	       tload + traster + tguess + tinit + tup);
	fflush(stdout);
	t0 = now_s();
	if (cl_swe_run(c, spin, &d) != WB_OK) {
		print_diags(&d);
		goto out;
	}
	double tspin = now_s() - t0;
	double blocks = 0;
	double tsp = time_steps(c, steps, &blocks, &d);
	long nblk;
	long long acc;
	cl_swe_blocks(c, &nblk, &acc);
	cl_swe_set_sparse(c, 0);
	double tdn = time_steps(c, steps / 4 + 1, NULL, &d);
	cl_swe_free(c);
	c = NULL;
	if (tsp < 0 || tdn < 0) {
		print_diags(&d);
		goto out;
	}
	/* the wet grid, the same solver settings */
	if (make_wet(&w, wetn) || cl_swe_create(e, &w, &sim, 0, &c, &d) != WB_OK) {
		print_diags(&d);
		goto out;
	}
	cl_swe_set_sparse(c, 0);
	double twd = 0, tws = 0;
	if (cl_swe_run(c, 10, &d) != WB_OK || (twd = time_steps(c, steps, NULL, &d)) < 0) {
		print_diags(&d);
		goto out;
	}
	cl_swe_set_sparse(c, 1);
	if (cl_swe_run(c, 2, &d) != WB_OK || (tws = time_steps(c, steps, NULL, &d)) < 0) {
		print_diags(&d);
		goto out;
	}
	cl_swe_free(c);
	c = NULL;
	double wet = (double)wetn * wetn / twd / 1e6;
	double act = blocks * 1024.0 / tsp / 1e6;
	fprintf(stderr, "bench_opencl_world: spin-up %ld steps in %.1f s\n", spin,
		tspin);
	printf("bench wet_ocl_dense_mcells %.0f Mcells/s\n", wet);
	printf("bench wet_ocl_sparse_mcells %.0f Mcells/s\n",
	       (double)wetn * wetn / tws / 1e6);
	printf("bench world_ocl_active_blocks %.2f %%\n", 100.0 * blocks / nblk);
	printf("bench world_ocl_sparse_ms %.3f ms/step\n", 1e3 * tsp);
	printf("bench world_ocl_dense_ms %.3f ms/step\n", 1e3 * tdn);
	printf("bench world_ocl_speedup %.1f ratio\n", tdn / tsp);
	printf("bench world_ocl_active_mcells %.0f Mcells/s\n", act);
	printf("bench world_ocl_active_vs_dense %.2f ratio\n", act / wet);
	fflush(stdout);
	if (steady > 0) {
		struct stop stp = { now_s(), steady, 0, 0, NAN };
		struct wb_solve_opts o = { 0 };
		o.opencl = 1;
		o.cl_device = dev;
		o.progress = progress;
		o.progress_user = &stp;
		o.cancel = &stp.cancel;
		if (maxsteps > 0)
			sim.max_steps = maxsteps;
		struct wb_state st;
		struct wb_solve_report rep;
		memset(&rep, 0, sizeof(rep));
		double ts = now_s();
		enum wb_status s = cl_swe_solve(&r, &sim, &o, &st, &rep, &d);
		double tsolve = now_s() - ts;
		if (s == WB_OK)
			wb_state_free(&st);
		else if (s != WB_ECANCEL) {
			print_diags(&d);
			goto out;
		}
		long nsteps = s == WB_OK ? rep.steps : stp.last_step;
		double res = s == WB_OK ? rep.residual : stp.last_res;
		fprintf(stderr, "bench_opencl_world: steady run: %s after %ld steps (%.0f s simulated), residual %.3g (tolerance %.3g, window %ld)\n",
			s == WB_OK ? (rep.converged ? "steady" : "step limit") :
				     "stopped at the time limit",
			nsteps, rep.sim_time, res, sim.tolerance, sim.window);
		printf("bench world_ocl_steady_steps %ld steps\n", nsteps);
		printf("bench world_ocl_steady_converged %d bool\n",
		       s == WB_OK && rep.converged);
		printf("bench world_ocl_steady_residual %.4g ratio\n", res);
		printf("bench world_ocl_steady_solve_s %.1f s\n", tsolve);
		printf("bench world_ocl_steady_wall_s %.1f s\n",
		       tsolve + tload + traster + tguess);
	}
	rc = 0;
out:
	cl_swe_free(c);
	if (h0)
		r.h0 = h0;
	free(gh);
	free(gu);
	free(gv);
	wb_raster_free(&r);
	wb_raster_free(&w);
	wb_scene_free(&sc);
	cl_env_free(e);
	wb_diags_release(&d);
	return rc;
}
