/*
 * bench_lbm.c - throughput of the LBM-SWE step (lbm.c) with its roofline.
 *
 * Prints, as 'bench <name> <value> <unit>':
 *   copy_gbs          STREAM-like copy b[i] = a[i] over 2 x 256 MiB, counting
 *                     bytes read + written, all threads
 *   d2q9_plain_mlups  a plain D2Q9 BGK step (incompressible equilibrium, no
 *                     forcing, no boundaries), SoA float, fused pull streaming
 *                     and collision, vectorised like lbm.c, 72 bytes per cell
 *   lbm_mlups         the full LBM-SWE step (lbm_step: ghost ring, fused
 *                     kernel, bed slope, friction, clamps, bookkeeping) on a
 *                     fully wet 2048 x 2048 domain, all threads
 *   lbm_vs_plain      lbm_mlups / d2q9_plain_mlups (same run)
 *   lbm_bytes_per_cell, lbm_gbs   memory traffic per cell update and the
 *                     bandwidth it implies at lbm_mlups
 *   lbm_lanes         vector width the LBM kernel ran with (16: AVX-512,
 *                     8: AVX2; same results)
 *   lbm_mlups is the dense step (lbm.sparse = 0, as WB_LBM_DENSE=1);
 *   lbm_wet_sparse_mlups  the block-sparse step (the default) on the same
 *                     fully wet grid: every block active, its overhead
 *   lbm_general_mlups the dense step there with the kernel's general path
 *                     only (no_shortcuts): what shallow water, wet/dry
 *                     fronts, bed steps and blockers cost per cell
 * Block-sparse LBM on the open-world sample (docs/scale.md, "Block-sparse
 * LBM stepping"; the scene of WB_WORLD_SCENE, which make bench generates,
 * else build/world-2048/scene.json; solver LBM, started from the
 * hydrological first guess, SPIN sparse steps before measuring):
 *   lbm_world_cells        grid size (Mcells)
 *   lbm_world_wet          cells deeper than the dry depth (%)
 *   lbm_world_active       cells of the stepped blocks (%, mean)
 *   lbm_world_sparse_sps, lbm_world_dense_sps   steps per second of the
 *                          sparse and the dense step on the same state
 *   lbm_world_speedup      their ratio
 *   lbm_world_active_mlups cells of the stepped blocks per second
 *   lbm_world_active_vs_dense  lbm_world_active_mlups / lbm_mlups (the
 *                          dense kernel on the fully wet grid, same run;
 *                          target 0.7)
 *   lbm_world_sparse_rss, lbm_world_dense_rss   resident growth of the
 *                          LBM context over lbm_init after the sparse
 *                          spin-up, and after the dense steps (MiB)
 *   lbm_world_sparse_bytes_per_active_cell, lbm_world_dense_bytes_per_cell
 *                          the first per cell of the stepped blocks, the
 *                          second per cell of the grid (issue 14: within
 *                          1.5x)
 * Each figure is the best of a few repetitions. Grid and step counts are
 * fixed; WB_TEST_QUICK=1 uses a 512 x 512 grid.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <omp.h>

#include "hydro.h"
#include "lbm.h"
#ifdef WB_OPENCL
#include "cl.h"
#endif
#include "wbake.h"
#include "rss.h"

typedef float v8f __attribute__((vector_size(32)));

static v8f ld(const float *p)
{
	v8f v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static void st(float *p, v8f v)
{
	memcpy(p, &v, sizeof(v));
}

static double bench_copy(int threads)
{
	const size_t n = (size_t)64 << 20; /* 64 Mi floats = 256 MiB */
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	if (!a || !b) {
		free(a);
		free(b);
		return 0;
	}
#pragma omp parallel for num_threads(threads) schedule(static)
	for (size_t i = 0; i < n; i++) {
		a[i] = (float)(i & 1023);
		b[i] = 0;
	}
	double best = 1e30;
	for (int r = 0; r < 5; r++) {
		double t = omp_get_wtime();
#pragma omp parallel for num_threads(threads) schedule(static)
		for (size_t i = 0; i < n; i++)
			b[i] = a[i];
		t = omp_get_wtime() - t;
		best = t < best ? t : best;
	}
	volatile float sink = b[n / 2];
	(void)sink;
	free(a);
	free(b);
	return 2.0 * n * sizeof(float) / best / 1e9;
}

/* one row of a plain D2Q9 BGK step, 8 cells at a time (nx multiple of 8) */
static void plain_row(float *const *A, float *const *B, int W, int jj, int nx,
		      float om)
{
	const float w0 = 4.0f / 9, w1 = 1.0f / 9, w2 = 1.0f / 36;
	for (int i = 1; i + 8 <= nx + 1; i += 8) {
		int n = jj * W + i;
		v8f f0 = ld(A[0] + n), f1 = ld(A[1] + n - 1), f2 = ld(A[2] + n - 1 - W),
		    f3 = ld(A[3] + n - W), f4 = ld(A[4] + n + 1 - W),
		    f5 = ld(A[5] + n + 1), f6 = ld(A[6] + n + 1 + W),
		    f7 = ld(A[7] + n + W), f8 = ld(A[8] + n - 1 + W);
		v8f r = ((f0 + f1) + (f2 + f3)) + ((f4 + f5) + (f6 + f7)) + f8;
		v8f ir = 1.0f / r;
		v8f ux = ((f1 + f2 + f8) - (f4 + f5 + f6)) * ir;
		v8f uy = ((f2 + f3 + f4) - (f6 + f7 + f8)) * ir;
		v8f uu = 1.5f * (ux * ux + uy * uy);
		v8f c2 = ux + uy, c4 = uy - ux;
#define EQ(w, cu) ((w) * r * (1.0f + 3.0f * (cu) + 4.5f * (cu) * (cu) - uu))
		st(B[0] + n, f0 + om * (EQ(w0, 0.0f * ux) - f0));
		st(B[1] + n, f1 + om * (EQ(w1, ux) - f1));
		st(B[2] + n, f2 + om * (EQ(w2, c2) - f2));
		st(B[3] + n, f3 + om * (EQ(w1, uy) - f3));
		st(B[4] + n, f4 + om * (EQ(w2, c4) - f4));
		st(B[5] + n, f5 + om * (EQ(w1, -ux) - f5));
		st(B[6] + n, f6 + om * (EQ(w2, -c2) - f6));
		st(B[7] + n, f7 + om * (EQ(w1, -uy) - f7));
		st(B[8] + n, f8 + om * (EQ(w2, -c4) - f8));
#undef EQ
	}
}

static double bench_plain(int N, int steps, int threads)
{
	const int W = N + 2;
	const size_t nc = (size_t)W * (N + 2);
	float *f[2][9];
	for (int b = 0; b < 2; b++)
		for (int a = 0; a < 9; a++) {
			f[b][a] = malloc(nc * sizeof(float));
			if (!f[b][a])
				return 0;
			for (size_t k = 0; k < nc; k++)
				f[b][a][k] = a == 0 ? 4.0f / 9 : a % 2 ? 1.0f / 9 : 1.0f / 36;
		}
	double best = 1e30;
	for (int r = 0; r < 3; r++) {
		double t = omp_get_wtime();
		for (int s = 0; s < steps; s++) {
			float *const *A = f[s & 1], *const *B = f[!(s & 1)];
#pragma omp parallel for num_threads(threads) schedule(static)
			for (int jj = 1; jj <= N; jj++)
				plain_row(A, B, W, jj, N, 1.0f / 0.6f);
		}
		t = omp_get_wtime() - t;
		best = t < best ? t : best;
	}
	for (int b = 0; b < 2; b++)
		for (int a = 0; a < 9; a++)
			free(f[b][a]);
	return (double)N * N * steps / best / 1e6;
}

static double bench_lbm(int N, int steps, int threads, int *lanes,
			double *sparse_mlups, double *general_mlups)
{
	struct wb_raster r;
	memset(&r, 0, sizeof(r));
	r.nx = r.ny = N;
	r.dx = 1.0;
	size_t n = (size_t)N * N;
	r.z = malloc(n * sizeof(float));
	r.h0 = malloc(n * sizeof(float));
	if (!r.z || !r.h0)
		return 0;
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			size_t k = i + (size_t)j * N;
			r.z[k] = (float)(0.3 * sin(0.05 * i) * cos(0.04 * j) - 1e-4 * i);
			r.h0[k] = (float)(2.0 - r.z[k]);
		}
	for (int s = 0; s < 4; s++)
		r.edges[s].kind = WB_EDGE_WALL;
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.manning = 0.03;
	sim.viscosity = 0.1;
	sim.dry_depth = 1e-3;
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	double best = 1e30;
	double bsp = 1e30;
	if (lbm_init(&L, &r, &sim, threads, &d) == WB_OK) {
		*lanes = lbm_kernel_lanes(&L);
		lbm_step(&L, 2, &d); /* warm up */
		/* dense and sparse batches alternate (the same machine load) */
		for (int rep = 0; rep < 3; rep++) {
			L.sparse = 0;
			double t = omp_get_wtime();
			if (lbm_step(&L, steps, &d) != WB_OK)
				break;
			t = omp_get_wtime() - t;
			best = t < best ? t : best;
			L.sparse = 1;
			L.sb_valid = 0; /* flags were not kept by the dense step */
			lbm_step(&L, 1, &d);
			t = omp_get_wtime();
			if (lbm_step(&L, steps, &d) != WB_OK)
				break;
			t = omp_get_wtime() - t;
			bsp = t < bsp ? t : bsp;
		}
		/* the general path only (no fast path, no dry skip), dense */
		double bg = 1e30;
		L.sparse = 0;
		L.no_shortcuts = 1;
		for (int rep = 0; rep < 2; rep++) {
			double t = omp_get_wtime();
			if (lbm_step(&L, steps, &d) != WB_OK)
				break;
			t = omp_get_wtime() - t;
			bg = t < bg ? t : bg;
		}
		*general_mlups = (double)n * steps / bg / 1e6;
		lbm_release(&L);
	}
	*sparse_mlups = (double)n * steps / bsp / 1e6;
	wb_diags_release(&d);
	free(r.z);
	free(r.h0);
	return (double)n * steps / best / 1e6;
}

#ifdef WB_OPENCL
/* OPENCL=1 builds, WB_BENCH_CL=1: the world's LBM on the default OpenCL
 * device, sparse (spin-up, then timed) and dense (timed from the start:
 * its step does not depend on the water). */
static int bench_world_cl(const struct wb_raster *r, const struct wb_sim *sim,
			  long spin, int steps)
{
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	int k = cl_default_device();
	if (cl_env_open(k < 0 ? 0 : k, &e, &d) != WB_OK) {
		printf("# bench_lbm: no OpenCL device\n");
		return -1;
	}
	double t[2] = { 0, 0 }, cells[2] = { 0, 0 };
	for (int dense = 0; dense < 2; dense++) {
		struct cl_lbm *c = NULL;
		if (dense)
			setenv("WB_LBM_DENSE", "1", 1);
		enum wb_status st = cl_lbm_create(e, r, sim, 0, 0, &c, &d);
		unsetenv("WB_LBM_DENSE");
		if (st != WB_OK)
			return -1;
		if (cl_lbm_enqueue(c, dense ? 5 : spin, &d) != WB_OK ||
		    cl_lbm_sync(c, &d) != WB_OK)
			return -1;
		int on;
		long long c0 = cl_lbm_cells(c, &on);
		double t0 = omp_get_wtime();
		if (cl_lbm_enqueue(c, steps, &d) != WB_OK ||
		    cl_lbm_sync(c, &d) != WB_OK)
			return -1;
		t[dense] = omp_get_wtime() - t0;
		cells[dense] = (double)(cl_lbm_cells(c, &on) - c0);
		cl_lbm_free(c);
	}
	printf("bench lbm_cl_world_active %.2f %%\n",
	       100.0 * cells[0] / cells[1]);
	printf("bench lbm_cl_world_sparse_sps %.1f steps/s\n", steps / t[0]);
	printf("bench lbm_cl_world_dense_sps %.1f steps/s\n", steps / t[1]);
	printf("bench lbm_cl_world_speedup %.2f ratio\n", t[1] / t[0]);
	printf("bench lbm_cl_world_dense_mlups %.0f MLUPS\n",
	       cells[1] / t[1] / 1e6);
	printf("bench lbm_cl_world_active_mlups %.0f MLUPS\n",
	       cells[0] / t[0] / 1e6);
	printf("bench lbm_cl_world_active_vs_dense %.3f ratio\n",
	       (cells[0] / t[0]) / (cells[1] / t[1]));
	cl_env_free(e);
	wb_diags_release(&d);
	return 0;
}
#endif

/* The world sample with the LBM (see the header); 0, or -1 when its
 * scene cannot be loaded (the lines are left out). */
static int bench_world_lbm(int threads, long spin, int steps, double dense_mlups)
{
	const char *env = getenv("WB_WORLD_SCENE");
	const char *path = env && *env ? env : "build/world-2048/scene.json";
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_scene sc;
	struct wb_heightmap hm;
	struct wb_raster r;
	if (wb_scene_load(path, &sc, &d) != WB_OK ||
	    wb_heightmap_load(&sc.terrain, &hm, &d) != WB_OK ||
	    wb_raster_build(&sc, &hm, &r, &d) != WB_OK) {
		printf("# bench_lbm: no world scene at %s (bin/mkterrain world SIZE DIR)\n",
		       path);
		wb_diags_release(&d);
		return -1;
	}
	wb_heightmap_free(&hm);
	const size_t n = (size_t)r.nx * r.ny;
	float *h = malloc(n * sizeof(float)), *u = malloc(n * sizeof(float)),
	      *v = malloc(n * sizeof(float));
	struct hydro_guess_opts go = { .manning = sc.sim.manning };
	if (!h || !u || !v || hydro_first_guess(&r, &go, h, u, v, NULL) != 0) {
		printf("# bench_lbm: first guess failed\n");
		return -1;
	}
	memcpy(r.h0, h, n * sizeof(float));
	free(h);
	free(u);
	free(v);
	struct wb_sim sim = sc.sim;
	sim.solver = WB_SOLVER_LBM;
	sim.lbm_hybrid = 0;
#ifdef WB_OPENCL
	const char *cl = getenv("WB_BENCH_CL");
	if (cl && *cl == '1') {
		int rc = bench_world_cl(&r, &sim, spin, steps);
		wb_raster_free(&r);
		wb_scene_free(&sc);
		wb_diags_release(&d);
		return rc;
	}
#endif
	struct lbm L;
	const double rss0 = rss_bytes();
	if (lbm_init(&L, &r, &sim, threads, &d) != WB_OK) {
		printf("# bench_lbm: lbm_init failed on the world\n");
		return -1;
	}
	double t0 = omp_get_wtime();
	if (lbm_step(&L, spin, &d) != WB_OK) {
		printf("# bench_lbm: the world's spin-up failed\n");
		return -1;
	}
	double tspin = omp_get_wtime() - t0;
	/* the context's resident memory after the sparse spin-up (arrays
	   from mmap: only written pages count, src/lbm.c field_alloc) */
	const double rss_sp = rss_bytes() - rss0;
	long wet = 0;
	const float hd = (float)L.p.h_dry;
	for (int j = 0; j < L.ny; j++)
		for (int i = 0; i < L.nx; i++)
			wet += L.h[L.cur][(i + 1) + (size_t)(j + 1) * L.W] > hd;
	double tsp = 1e30, tdn = 1e30, cells = 0;
	for (int rep = 0; rep < 3; rep++) {
		long c0 = L.sb_cells;
		double t = omp_get_wtime();
		if (lbm_step(&L, steps, &d) != WB_OK)
			return -1;
		t = omp_get_wtime() - t;
		if (t < tsp) {
			tsp = t;
			cells = (double)(L.sb_cells - c0);
		}
		L.sparse = 0;
		int k = steps / 4 > 0 ? steps / 4 : 1;
		t = omp_get_wtime();
		if (lbm_step(&L, k, &d) != WB_OK)
			return -1;
		t = (omp_get_wtime() - t) * steps / k;
		tdn = t < tdn ? t : tdn;
		L.sparse = 1;
		L.sb_valid = 0;
	}
	const double act = cells / (double)steps;
	const double rss_dn = rss_bytes() - rss0; /* the dense steps wrote all */
	printf("# %s: LBM from the first guess, %d thread(s), spin-up %ld steps in %.1f s, %d special cells, %d x %d blocks\n",
	       path, threads, spin, tspin, L.nsp, L.sbx, L.sby);
	printf("bench lbm_world_cells %.3f Mcells\n", (double)n / 1e6);
	printf("bench lbm_world_wet %.2f %%\n", 100.0 * wet / (double)n);
	printf("bench lbm_world_active %.2f %%\n", 100.0 * act / (double)n);
	printf("bench lbm_world_sparse_sps %.2f steps/s\n", steps / tsp);
	printf("bench lbm_world_dense_sps %.2f steps/s\n", steps / tdn);
	printf("bench lbm_world_speedup %.2f ratio\n", tdn / tsp);
	printf("bench lbm_world_active_mlups %.1f MLUPS\n", cells / tsp / 1e6);
	printf("bench lbm_world_active_vs_dense %.3f ratio\n",
	       dense_mlups > 0 ? cells / tsp / 1e6 / dense_mlups : 0);
	if (rss0 >= 0 && act > 0) {
		printf("bench lbm_world_sparse_rss %.0f MiB\n", rss_sp / 1048576.0);
		printf("bench lbm_world_dense_rss %.0f MiB\n", rss_dn / 1048576.0);
		printf("bench lbm_world_sparse_bytes_per_active_cell %.0f B\n",
		       rss_sp / act);
		printf("bench lbm_world_dense_bytes_per_cell %.0f B\n",
		       rss_dn / (double)n);
	}
	lbm_release(&L);
	wb_raster_free(&r);
	wb_scene_free(&sc);
	wb_diags_release(&d);
	return 0;
}

int main(void)
{
	const char *q = getenv("WB_TEST_QUICK");
	int quick = q && *q && *q != '0';
	int N = quick ? 512 : 2048, steps = quick ? 5 : 10;
	int threads = omp_get_num_procs();
	/* WB_BENCH_WORLD_ONLY=1: only the world lines (profiling; WB_BENCH_SPIN,
	 * WB_BENCH_STEPS; with WB_BENCH_CL=1 in OPENCL=1 builds: on the
	 * OpenCL device, lbm_cl_world_* lines) */
	const char *wo = getenv("WB_BENCH_WORLD_ONLY");
	if (wo && *wo == '1') {
		const char *sp = getenv("WB_BENCH_SPIN"), *ns = getenv("WB_BENCH_STEPS");
		return bench_world_lbm(threads, sp ? atol(sp) : quick ? 20 : 200,
				       ns ? atoi(ns) : quick ? 10 : 40, 0) != 0;
	}
	double copy = bench_copy(threads);
	double plain = bench_plain(N, steps, threads);
	int lanes = 0;
	double lbm_sp = 0, lbm_gen = 0;
	double lbm = bench_lbm(N, steps, threads, &lanes, &lbm_sp, &lbm_gen);
	printf("bench copy_gbs %.2f GB/s\n", copy);
	printf("bench d2q9_plain_mlups %.1f MLUPS\n", plain);
	printf("bench lbm_mlups %.1f MLUPS\n", lbm);
	printf("bench lbm_vs_plain %.3f ratio\n", plain > 0 ? lbm / plain : 0);
	printf("bench lbm_bytes_per_cell %d B\n", LBM_BYTES_PER_CELL);
	printf("bench lbm_gbs %.2f GB/s\n", lbm * LBM_BYTES_PER_CELL / 1e3);
	printf("bench lbm_lanes %d lanes\n", lanes);
	printf("bench lbm_wet_sparse_mlups %.1f MLUPS\n", lbm_sp);
	printf("bench lbm_general_mlups %.1f MLUPS\n", lbm_gen);
	fflush(stdout);
	bench_world_lbm(threads, quick ? 20 : 200, quick ? 10 : 40, lbm);
	return 0;
}
