/*
 * bench_swe.c - throughput of the SWE solver (src/swe.c).
 *
 *   bench swe_mcells <v> Mcells/s       full step (height integration,
 *                                       semi-Lagrangian advection, pressure,
 *                                       walls, boundaries, CFL) on a wet
 *                                       2048 x 2048 domain, all cores; the
 *                                       best of 6 batches of 8 steps after
 *                                       a warm-up step (MacCormack: of 4)
 *   bench swe_mcells_maccormack <v> Mcells/s   the same with MacCormack
 *   bench swe_mcells_still <v> Mcells/s the first scene without its
 *                                       waves: a lake at rest (velocities
 *                                       at round-off level) around a mound
 *   bench swe_copy_mcells <v> Mcells/s  reference measured in the same
 *                                       run: a pass reading 4 and writing
 *                                       3 floats per cell (the fused
 *                                       step's traffic) over the grid
 *   bench swe_vs_copy <v> ratio         swe_mcells / swe_copy_mcells: less
 *                                       sensitive to the machine's load
 *   bench swe_particles <v> Mparticles/s      particle advance + deposition
 *                                       (1M particles over a 512^2 pool)
 *
 * Usage: bench_swe [threads]. Scenes are generated here: a basin with a
 * sloping, wavy bed, water 2 m deep with a raised mound and, so that every
 * face moves, surface waves over the whole domain (0.3 m, 6 x 5 waves).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "solve.h"
#include "swe.h"
#include "util.h"

static int make_raster(struct wb_raster *r, int n, double dx, int waves)
{
	memset(r, 0, sizeof(*r));
	r->nx = r->ny = n;
	r->dx = dx;
	r->z = malloc((size_t)n * n * sizeof(float));
	r->h0 = malloc((size_t)n * n * sizeof(float));
	if (!r->z || !r->h0)
		return -1;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++) {
			double x = (double)i / n, y = (double)j / n;
			double z = 0.3 * x + 0.2 * sin(12.0 * x) * cos(9.0 * y);
			double m = 0.5 * exp(-((x - 0.4) * (x - 0.4) +
					      (y - 0.6) * (y - 0.6)) / 0.01);
			r->z[i + (size_t)j * n] = (float)z;
			double w = waves ? 0.3 * sin(12.0 * 3.14159265358979 * x) *
						   cos(10.0 * 3.14159265358979 * y) :
					   0.0;
			r->h0[i + (size_t)j * n] = (float)(2.0 - z + m + w);
		}
	for (int e = 0; e < 4; e++)
		r->edges[e].kind = WB_EDGE_WALL;
	return 0;
}

/* Mcells/s of full steps on the raster: after a warm-up step, the best of
 * 'reps' batches of 'steps' steps (a batch that shared the cores with
 * another program does not count against the solver). */
static double bench_grid(const struct wb_raster *r, int maccormack, int steps,
			 int reps, int threads)
{
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.dry_depth = 1e-3;
	sim.maccormack = maccormack;
	struct wb_diags d;
	wb_diags_init(&d);
	struct swe_ctx s;
	if (swe_init(&s, r, &sim, wb_threads(threads), &d))
		return -1;
	if (swe_step(&s, &d)) /* warm up */
		return -1;
	double best = 0.0;
	for (int rep = 0; rep < reps; rep++) {
		double t0 = omp_get_wtime();
		for (int k = 0; k < steps; k++)
			if (swe_step(&s, &d))
				return -1;
		double rate = (double)r->nx * r->ny * steps /
			      (omp_get_wtime() - t0) / 1e6;
		best = rate > best ? rate : best;
	}
	swe_release(&s);
	wb_diags_release(&d);
	return best;
}

static double bench_particles(int threads)
{
	const int n = 512;
	struct wb_raster r;
	if (make_raster(&r, n, 1.0, 0))
		return -1;
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.dry_depth = 1e-3;
	struct wb_diags d;
	wb_diags_init(&d);
	struct swe_ctx s;
	if (swe_init(&s, &r, &sim, wb_threads(threads), &d))
		return -1;
	/* deposit buffers exist only with waterfall faces: make them */
	if (!s.dep_v) {
		s.dep_v = calloc((size_t)s.ncell, sizeof(double));
		s.dep_pu = calloc((size_t)s.ncell, sizeof(double));
		s.dep_pv = calloc((size_t)s.ncell, sizeof(double));
		s.dep_list = malloc((size_t)s.ncell * sizeof(long));
		if (!s.dep_v || !s.dep_pu || !s.dep_pv || !s.dep_list)
			return -1;
	}
	const long np = 1000000;
	if (swe_particles_reserve(&s.P, np))
		return -1;
	for (long m = 0; m < np; m++) {
		s.P.x[m] = swe_rand(1, 0, (unsigned long long)m, 0) * n;
		s.P.y[m] = swe_rand(1, 0, (unsigned long long)m, 1) * n;
		s.P.z[m] = 3.0 + 40.0 * swe_rand(1, 0, (unsigned long long)m, 2);
		s.P.vx[m] = 2.0 * swe_rand(1, 0, (unsigned long long)m, 3) - 1.0;
		s.P.vy[m] = 2.0 * swe_rand(1, 0, (unsigned long long)m, 4) - 1.0;
		s.P.vz[m] = 0.0;
		s.P.vol[m] = 1e-3;
		s.P.hit[m] = -1;
	}
	s.P.n = np;
	s.dt = 0.02;
	float *h1 = s.h1;
	s.h1 = s.h; /* deposit into the current depth */
	double work = 0, t0 = omp_get_wtime();
	for (int k = 0; k < 50; k++) {
		work += (double)s.P.n;
		s.step = k;
		swe_particles_step(&s);
	}
	double sec = omp_get_wtime() - t0;
	s.h1 = h1;
	swe_release(&s);
	wb_diags_release(&d);
	free(r.z);
	free(r.h0);
	return work / sec / 1e6;
}

/* Mcells/s of a pass that reads 4 and writes 3 floats per cell, parallel
 * over rows like the solver: the memory traffic of the fused step. */
static double bench_copy(int n, int threads, int reps)
{
	size_t nc = (size_t)n * n;
	float *a[7];
	for (int q = 0; q < 7; q++) {
		a[q] = malloc(nc * sizeof(float));
		if (!a[q])
			return -1;
		for (size_t c = 0; c < nc; c++)
			a[q][c] = (float)(c % 1000) * 1e-3f;
	}
	double t0 = omp_get_wtime();
	for (int k = 0; k < reps; k++) {
#pragma omp parallel for schedule(static) num_threads(wb_threads(threads))
		for (int j = 0; j < n; j++) {
			const float *restrict p0 = a[0] + (size_t)j * n;
			const float *restrict p1 = a[1] + (size_t)j * n;
			const float *restrict p2 = a[2] + (size_t)j * n;
			const float *restrict p3 = a[3] + (size_t)j * n;
			float *restrict q0 = a[4] + (size_t)j * n;
			float *restrict q1 = a[5] + (size_t)j * n;
			float *restrict q2 = a[6] + (size_t)j * n;
			for (int i = 0; i < n; i++) {
				q0[i] = p0[i] + p3[i];
				q1[i] = p1[i] + p3[i];
				q2[i] = p2[i] + p3[i];
			}
		}
	}
	double sec = omp_get_wtime() - t0;
	double chk = 0.0;
	for (int q = 4; q < 7; q++) {
		chk += a[q][nc / 2];
		free(a[q]);
	}
	for (int q = 0; q < 4; q++)
		free(a[q]);
	return chk < 0 ? -1 : (double)nc * reps / sec / 1e6;
}

int main(int argc, char **argv)
{
	/* optional: thread count (default all cores) */
	int threads = argc > 1 ? atoi(argv[1]) : 0;
	struct wb_raster r, rs;
	if (make_raster(&r, 2048, 1.0, 1) || make_raster(&rs, 2048, 1.0, 0)) {
		fprintf(stderr, "bench_swe: out of memory\n");
		return 1;
	}
	double cp = bench_copy(2048, threads, 20);
	double a = bench_grid(&r, 0, 8, 6, threads);
	double b = bench_grid(&r, 1, 4, 6, threads);
	double st = bench_grid(&rs, 0, 8, 6, threads);
	double cp2 = bench_copy(2048, threads, 20);
	free(r.z);
	free(r.h0);
	free(rs.z);
	free(rs.h0);
	double p = bench_particles(threads);
	if (a < 0 || b < 0 || st < 0 || p < 0 || cp < 0 || cp2 < 0) {
		fprintf(stderr, "bench_swe: a run failed\n");
		return 1;
	}
	/* the copy pass before and after the solver runs: their mean */
	cp = 0.5 * (cp + cp2);
	printf("bench swe_mcells %.1f Mcells/s\n", a);
	printf("bench swe_mcells_maccormack %.1f Mcells/s\n", b);
	printf("bench swe_mcells_still %.1f Mcells/s\n", st);
	printf("bench swe_copy_mcells %.1f Mcells/s\n", cp);
	printf("bench swe_vs_copy %.3f ratio\n", a / cp);
	printf("bench swe_particles %.2f Mparticles/s\n", p);
	return 0;
}
