/*
 * bench_hydro_guess.c - the hydrological first guess at scale (issue 14's
 * host set-up; docs/hydrology.md quotes the figures):
 *
 *   bench hydro_guess_<N> <s> s          hydro_first_guess on a generated
 *                                        N x N valley (4096 by default:
 *                                        a meandering channel, noise, 40
 *                                        closed bowls, springs upstream,
 *                                        the south edge open)
 *   bench hydro_flood_<N>_fast <s> s     hydro_fill_receivers (level,
 *                                        receivers, order: one flood)
 *   bench hydro_flood_<N>_ref <s> s      the same from the plain reference
 *                                        (tests/hydro_ref.h: binary heap,
 *                                        a flood for the levels and one
 *                                        for the receivers, as the first
 *                                        guess did before), same run
 *   bench hydro_flood_<N>_speedup <x> x  ref / fast (the outputs are
 *                                        compared bit for bit: exit 1 if
 *                                        they differ)
 *   bench hydro_fill_<N>_one <s> s       hydro_fill_levels' levels by one
 *                                        flood (hydro_fill_strips, 1)
 *   bench hydro_fill_<N>_strips <s> s    the same by strips of rows in
 *                                        parallel (hydro_fill_levels),
 *                                        same run, compared bit for bit
 *   bench hydro_fill_<N>_strips_speedup <x> x   one / strips
 *   bench hydro_guess_world <s> s        wb_bake_guess on the world scene
 *                                        of WB_WORLD_SCENE, when set (make
 *                                        bench: build/world-2048)
 *
 * Usage: bench_hydro_guess [N]. Timings are single runs with the default
 * thread count (the first guess's flood is serial; the levels alone are
 * flooded by strips).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bake.h"
#include "hydro.h"
#include "hydro_ref.h"
#include "wbake.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float hash01(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return (float)(x >> 8) * (1.0f / 16777216.0f);
}

static void valley(struct wb_raster *r, int n)
{
	for (int j = 0; j < n; j++) {
		double y = (double)j / n;
		double cx = 0.5 + 0.15 * sin(6.0 * y) + 0.05 * sin(23.0 * y);
		for (int i = 0; i < n; i++) {
			double x = (double)i / n;
			double z = 200.0 * (1.0 - y) + 300.0 * fabs(x - cx) +
				   8.0 * sin(40.0 * x) * cos(37.0 * y) +
				   0.5 * hash01((uint32_t)(i + (size_t)j * n));
			r->z[i + (size_t)j * n] = (float)z;
		}
	}
	for (int b = 0; b < 40; b++) {
		int bx = (int)(hash01(2 * b + 1) * n), by = (int)(hash01(2 * b + 2) * n);
		int rad = n / 64 + 1;
		for (int j = by - rad; j <= by + rad; j++)
			for (int i = bx - rad; i <= bx + rad; i++) {
				if (i < 0 || j < 0 || i >= n || j >= n)
					continue;
				double d = hypot(i - bx, j - by) / rad;
				if (d < 1)
					r->z[i + (size_t)j * n] -= (float)(6.0 * (1 - d * d));
			}
	}
	for (int s = 0; s < 8; s++) {
		int j = n / 50 + s, i = (int)((0.5 + 0.15 * sin(6.0 * j / n)) * n);
		r->src[i + (size_t)j * n] = 1e-3f;
	}
	r->edges[WB_SOUTH].kind = WB_EDGE_OPEN;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	int n = argc > 1 ? atoi(argv[1]) : 4096;
	if (n < 16 || n > 32768) {
		fprintf(stderr, "usage: bench_hydro_guess [N (16..32768)]\n");
		return 1;
	}
	size_t cells = (size_t)n * n;
	struct wb_raster r;
	if (wb_raster_alloc(&r, n, n, 1.0) != WB_OK)
		return 1;
	valley(&r, n);
	float *h = malloc(cells * sizeof(float)), *u = malloc(cells * sizeof(float));
	float *v = malloc(cells * sizeof(float)), *fl = malloc(cells * sizeof(float));
	float *rl = malloc(cells * sizeof(float));
	int *fr = malloc(cells * sizeof(int)), *fo = malloc(cells * sizeof(int));
	int *rr = malloc(cells * sizeof(int));
	unsigned char *out = calloc(cells, 1);
	int rc = 1;
	if (!h || !u || !v || !fl || !rl || !fr || !fo || !rr || !out)
		goto done;

	struct hydro_guess_opts go = { 0.03, NULL };
	struct hydro_guess_report rep;
	double t0 = now_s();
	if (hydro_first_guess(&r, &go, h, u, v, &rep))
		goto done;
	printf("bench hydro_guess_%d %.2f s\n", n, now_s() - t0);
	fprintf(stderr, "guess: %ld lake cells, %ld channel cells\n",
		rep.lake_cells, rep.channel_cells);

	for (int i = 0; i < n; i++)
		out[i + (size_t)(n - 1) * n] = 1; /* the open south edge */
	t0 = now_s();
	if (hydro_fill_receivers(r.z, n, n, out, NULL, fl, fr, fo))
		goto done;
	double tf = now_s() - t0;
	t0 = now_s();
	if (ref_flood(r.z, n, n, out, NULL, rl, rr) ||
	    ref_receivers(r.z, n, n, out, NULL, rl, rr, NULL))
		goto done;
	double tr = now_s() - t0;
	if (memcmp(fl, rl, cells * sizeof(float)) || memcmp(fr, rr, cells * sizeof(int))) {
		fprintf(stderr, "bench_hydro_guess: fast and reference differ\n");
		goto done;
	}
	printf("bench hydro_flood_%d_fast %.2f s\n", n, tf);
	printf("bench hydro_flood_%d_ref %.2f s\n", n, tr);
	printf("bench hydro_flood_%d_speedup %.2f x\n", n, tr / tf);
	/* the levels alone (hydro_fill_levels, the LBM's flood bound): the
	   strips in parallel against one flood, the same bytes */
	t0 = now_s();
	if (hydro_fill_strips(r.z, n, n, out, NULL, rl, 1))
		goto done;
	tr = now_s() - t0;
	t0 = now_s();
	if (hydro_fill_levels(r.z, n, n, out, NULL, fl))
		goto done;
	tf = now_s() - t0;
	if (memcmp(fl, rl, cells * sizeof(float))) {
		fprintf(stderr, "bench_hydro_guess: the strips' levels differ\n");
		goto done;
	}
	printf("bench hydro_fill_%d_one %.2f s\n", n, tr);
	printf("bench hydro_fill_%d_strips %.2f s\n", n, tf);
	printf("bench hydro_fill_%d_strips_speedup %.2f x\n", n, tr / tf);

	const char *scene = getenv("WB_WORLD_SCENE");
	if (scene) {
		struct wb_bake b;
		struct wb_diags d;
		wb_diags_init(&d);
		if (wb_bake_load(&b, scene, &d) != WB_OK) {
			fprintf(stderr, "bench_hydro_guess: cannot load %s\n", scene);
			wb_diags_release(&d);
			goto done;
		}
		t0 = now_s();
		enum wb_status st = wb_bake_guess(&b, &d);
		double tg = now_s() - t0;
		if (st == WB_OK)
			printf("bench hydro_guess_world %.2f s\n", tg);
		fprintf(stderr, "world %s: %d x %d\n", scene, b.r.nx, b.r.ny);
		wb_bake_release(&b);
		wb_diags_release(&d);
		if (st != WB_OK)
			goto done;
	}
	rc = 0;
done:
	free(out);
	free(rr);
	free(fo);
	free(fr);
	free(rl);
	free(fl);
	free(v);
	free(u);
	free(h);
	wb_raster_free(&r);
	return rc;
}
