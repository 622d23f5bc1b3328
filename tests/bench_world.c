/*
 * bench_world.c - block-sparse SWE on the open-world sample (docs/scale.md).
 *
 *   bench world_cells <v> Mcells               grid size of the world
 *   bench world_spinup_steps <v> steps         sparse steps run before
 *                                              measuring (rivers filling)
 *   bench world_active_blocks <v> %            blocks stepped (mean over
 *                                              the measured steps)
 *   bench world_sparse_ms <v> ms/step          time per step, block-sparse
 *   bench world_dense_ms <v> ms/step           time per step, dense, on the
 *                                              same state right after
 *   bench world_speedup <v> ratio              dense / sparse time per step
 *   bench world_active_mcells <v> Mcells/s     cells of the active blocks
 *                                              stepped per second (sparse)
 *   bench wet_dense_mcells <v> Mcells/s        the dense step on a fully wet
 *                                              1024^2 grid (bench_swe's
 *                                              waves) with the world's
 *                                              solver settings, same run
 *   bench wet_sparse_mcells <v> Mcells/s       the sparse step there (every
 *                                              block active: its overhead)
 *   bench world_active_vs_dense <v> ratio      world_active_mcells /
 *                                              wet_dense_mcells (target 0.7)
 *   bench world_active_cpu_ns <v> ns           CPU time per active cell, one
 *                                              thread (CLOCK_PROCESS_CPUTIME_ID:
 *                                              what the machine's other
 *                                              programs change least)
 *   bench wet_dense_cpu_ns <v> ns              the same per cell for the
 *                                              dense step on the wet grid
 *   bench world_active_vs_dense_cpu <v> ratio  their ratio, dense / sparse
 *                                              (the per-core form of
 *                                              world_active_vs_dense)
 *   bench world_peak_rss <v> MiB               peak resident memory of this
 *                                              process (getrusage)
 *   bench world_sparse_rss <v> MiB             resident growth over swe_init
 *                                              and the sparse spin-up
 *   bench world_dense_rss <v> MiB              the same after the dense
 *                                              steps (every page written)
 *   bench world_sparse_bytes_per_active_cell   sparse growth / cells of the
 *                                              active blocks (B)
 *   bench world_dense_bytes_per_cell <v> B     dense growth / cells
 *   bench world_mem_per_active_vs_dense <v>    their ratio (target 1.5)
 *
 * Usage: bench_world [SCENE [SPINUP [STEPS [threads]]]]. The scene comes
 * from 'mkterrain world SIZE DIR' (make bench generates
 * build/world-$(BENCH_WORLD_SIZE)/scene.json); WB_WORLD_SCENE overrides the
 * default path. Timings take the best of several batches (a batch that
 * shared the cores with another program does not count against the
 * solver); the world's sparse batches and the wet grid's alternate.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "swe.h"
#include "util.h"
#include "wbake.h"
#include "rss.h"

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

/* Cells in the active blocks of the last step. */
static double active_cells(const struct swe_ctx *s)
{
	double n = 0;
	for (long q = 0; q < s->sp.nblk; q++) {
		if (!s->sp.act[q])
			continue;
		int bi = (int)(q % s->sp.nbx), bj = (int)(q / s->sp.nbx);
		int w = s->nx - bi * SWE_BLOCK, h = s->ny - bj * SWE_BLOCK;
		n += (double)(w < SWE_BLOCK ? w : SWE_BLOCK) *
		     (h < SWE_BLOCK ? h : SWE_BLOCK);
	}
	return n;
}

/* Best seconds per step over 'reps' batches of 'steps'; *cells: mean
 * active cells per step (sparse). */
static double time_steps(struct swe_ctx *s, int steps, int reps, double *cells,
			 struct wb_diags *d)
{
	double best = INFINITY, sum = 0;
	long n = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = omp_get_wtime();
		for (int k = 0; k < steps; k++) {
			if (swe_step(s, d))
				return -1;
			if (s->sp.on) {
				sum += active_cells(s);
				n++;
			}
		}
		double t = (omp_get_wtime() - t0) / steps;
		best = t < best ? t : best;
	}
	if (cells)
		*cells = n ? sum / n : (double)s->nx * s->ny;
	return best;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Least CPU seconds per step over 'reps' batches of 'steps' on one
 * thread (the context's thread count is restored; no result depends on
 * it); *cells as time_steps. */
static double cpu_steps(struct swe_ctx *s, int steps, int reps, double *cells,
			struct wb_diags *d)
{
	int t = s->threads;
	s->threads = 1;
	double best = INFINITY, sum = 0;
	long n = 0;
	for (int r = 0; r < reps; r++) {
		double c0 = cpu_now();
		for (int k = 0; k < steps; k++) {
			if (swe_step(s, d)) {
				s->threads = t;
				return -1;
			}
			if (s->sp.on) {
				sum += active_cells(s);
				n++;
			}
		}
		double c = (cpu_now() - c0) / steps;
		best = c < best ? c : best;
	}
	s->threads = t;
	if (cells)
		*cells = n ? sum / n : (double)s->nx * s->ny;
	return best;
}

static double peak_mib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
	const char *env = getenv("WB_WORLD_SCENE");
	const char *path = argc > 1 ? argv[1] :
			   env && *env ? env : "build/world-2048/scene.json";
	long spin = argc > 2 ? atol(argv[2]) : 400;
	int steps = argc > 3 ? atoi(argv[3]) : 20;
	int threads = wb_threads(argc > 4 ? atoi(argv[4]) : 0);
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_scene sc;
	struct wb_heightmap hm;
	struct wb_raster r;
	if (wb_scene_load(path, &sc, &d) != WB_OK ||
	    wb_heightmap_load(&sc.terrain, &hm, &d) != WB_OK ||
	    wb_raster_build(&sc, &hm, &r, &d) != WB_OK) {
		char buf[1024];
		wb_diag_format(&d.v[d.n - 1], buf, sizeof(buf));
		fprintf(stderr, "bench_world: %s\n(generate it with "
			"bin/mkterrain world SIZE DIR)\n", buf);
		return 1;
	}
	wb_heightmap_free(&hm);
	struct wb_sim sim = sc.sim;
	sim.solver = WB_SOLVER_SWE;
	struct swe_ctx s;
	double rss0 = rss_bytes();
	if (swe_init(&s, &r, &sim, threads, &d) != WB_OK) {
		fprintf(stderr, "bench_world: swe_init failed\n");
		return 1;
	}
	s.sp.on = 1;
	double ts0 = omp_get_wtime();
	for (long k = 0; k < spin; k++)
		if (swe_step(&s, &d)) {
			fprintf(stderr, "bench_world: spin-up failed\n");
			return 1;
		}
	double tspin = omp_get_wtime() - ts0;
	/* the context's resident memory with the sparse step (the raster
	   and the scene were loaded before rss0) */
	double rss_sparse = rss_bytes() - rss0;
	double act_spin = active_cells(&s);
	/* the dense step on a fully wet grid with the world's physics
	   (MacCormack, friction, foam, dry depth: the same per-cell work),
	   its batches interleaved with the world's sparse ones, so that both
	   see the same load of the machine */
	struct wb_raster w;
	struct swe_ctx wd, wsp;
	if (make_wet(&w, 1024) || swe_init(&wd, &w, &sim, threads, &d) ||
	    swe_init(&wsp, &w, &sim, threads, &d)) {
		fprintf(stderr, "bench_world: out of memory\n");
		return 1;
	}
	wd.sp.on = 0;
	wsp.sp.on = 1;
	if (swe_step(&wd, &d) || swe_step(&wsp, &d))
		return 1;
	double tsp = INFINITY, twd = INFINITY, tws = INFINITY, cells = 0;
	for (int rep = 0; rep < 5; rep++) {
		double c, t;
		t = time_steps(&s, steps, 1, &c, &d);
		if (t < tsp) {
			tsp = t;
			cells = c;
		}
		t = time_steps(&wd, 8, 1, NULL, &d);
		twd = t < twd ? t : twd;
		t = time_steps(&wsp, 8, 1, NULL, &d);
		tws = t < tws ? t : tws;
	}
	/* per core: CPU time on one thread, alternating as above */
	double cw = INFINITY, cd = INFINITY, ccells = 0;
	for (int rep = 0; rep < 3; rep++) {
		double c, t = cpu_steps(&s, steps, 1, &c, &d);
		if (t < cw) {
			cw = t;
			ccells = c;
		}
		t = cpu_steps(&wd, 4, 1, NULL, &d);
		cd = t < cd ? t : cd;
	}
	double cpu_ns[2] = { 1e9 * cw / ccells,
			     1e9 * cd / ((double)w.nx * w.ny) };
	double wet[2] = { (double)w.nx * w.ny / twd / 1e6,
			  (double)w.nx * w.ny / tws / 1e6 };
	swe_release(&wd);
	swe_release(&wsp);
	wb_raster_free(&w);
	s.sp.on = 0;
	double tdn = time_steps(&s, steps > 4 ? steps / 4 : 1, 3, NULL, &d);
	double ncell = (double)s.nx * s.ny;
	double rss_dense = rss_bytes() - rss0; /* every page written now */
	double rss_world = peak_mib();
	swe_release(&s);
	wb_raster_free(&r);
	wb_scene_free(&sc);
	wb_diags_release(&d);

	double act_mc = cells / tsp / 1e6;
	printf("# %s, %d thread(s); spin-up %.1f s\n", path, threads, tspin);
	printf("bench world_cells %.3f Mcells\n", ncell / 1e6);
	printf("bench world_spinup_steps %ld steps\n", spin);
	printf("bench world_active_blocks %.2f %%\n", 100.0 * cells / ncell);
	printf("bench world_sparse_ms %.2f ms/step\n", 1e3 * tsp);
	printf("bench world_dense_ms %.2f ms/step\n", 1e3 * tdn);
	printf("bench world_speedup %.2f ratio\n", tdn / tsp);
	printf("bench world_active_mcells %.1f Mcells/s\n", act_mc);
	printf("bench wet_dense_mcells %.1f Mcells/s\n", wet[0]);
	printf("bench wet_sparse_mcells %.1f Mcells/s\n", wet[1]);
	printf("bench world_active_vs_dense %.2f ratio\n", act_mc / wet[0]);
	printf("bench world_active_cpu_ns %.1f ns\n", cpu_ns[0]);
	printf("bench wet_dense_cpu_ns %.1f ns\n", cpu_ns[1]);
	printf("bench world_active_vs_dense_cpu %.2f ratio\n",
	       cpu_ns[1] / cpu_ns[0]);
	printf("bench world_peak_rss %.0f MiB\n", rss_world);
	if (rss0 >= 0) {
		/* the SWE context's resident bytes: sparse after the spin-up
		   per cell of its active blocks, dense (after the dense
		   steps, which write every page) per cell */
		double bs = rss_sparse / act_spin, bd = rss_dense / ncell;
		printf("bench world_sparse_rss %.0f MiB\n",
		       rss_sparse / 1048576.0);
		printf("bench world_dense_rss %.0f MiB\n",
		       rss_dense / 1048576.0);
		printf("bench world_sparse_bytes_per_active_cell %.0f B\n", bs);
		printf("bench world_dense_bytes_per_cell %.0f B\n", bd);
		printf("bench world_mem_per_active_vs_dense %.2f ratio\n",
		       bs / bd);
	}
	return 0;
}
