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
 * Each figure is the best of a few repetitions. Grid and step counts are
 * fixed; WB_TEST_QUICK=1 uses a 512 x 512 grid.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>

#include "lbm.h"
#include "wbake.h"

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

static double bench_lbm(int N, int steps, int threads, int *lanes)
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
	if (lbm_init(&L, &r, &sim, threads, &d) == WB_OK) {
		*lanes = lbm_kernel_lanes(&L);
		lbm_step(&L, 2, &d); /* warm up */
		for (int rep = 0; rep < 3; rep++) {
			double t = omp_get_wtime();
			if (lbm_step(&L, steps, &d) != WB_OK)
				break;
			t = omp_get_wtime() - t;
			best = t < best ? t : best;
		}
		lbm_release(&L);
	}
	wb_diags_release(&d);
	free(r.z);
	free(r.h0);
	return (double)n * steps / best / 1e6;
}

int main(void)
{
	const char *q = getenv("WB_TEST_QUICK");
	int quick = q && *q && *q != '0';
	int N = quick ? 512 : 2048, steps = quick ? 5 : 10;
	int threads = omp_get_num_procs();
	double copy = bench_copy(threads);
	double plain = bench_plain(N, steps, threads);
	int lanes = 0;
	double lbm = bench_lbm(N, steps, threads, &lanes);
	printf("bench copy_gbs %.2f GB/s\n", copy);
	printf("bench d2q9_plain_mlups %.1f MLUPS\n", plain);
	printf("bench lbm_mlups %.1f MLUPS\n", lbm);
	printf("bench lbm_vs_plain %.3f ratio\n", plain > 0 ? lbm / plain : 0);
	printf("bench lbm_bytes_per_cell %d B\n", LBM_BYTES_PER_CELL);
	printf("bench lbm_gbs %.2f GB/s\n", lbm * LBM_BYTES_PER_CELL / 1e3);
	printf("bench lbm_lanes %d lanes\n", lanes);
	return 0;
}
