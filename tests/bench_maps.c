/*
 * bench_maps.c - tiling throughput: LOD0 maps (sentinel, material BFS,
 * exact distance transform) + water-aware pyramid + page cutting and
 * classification, on a synthetic 2048x2048 solved state (meandering river,
 * a lake, dry land; 6 LODs, every layer with foam), all cores.
 *
 * Prints (best of 3 runs):
 *   bench tile_pages_per_s <pages of all LODs / s> pages/s
 *   bench maps_lod0_mpix_per_s <LOD0 megapixels / s of maps_build> Mpix/s
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "maps.h"
#include "util.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
	const int n = 2048, lods = 6;
	size_t cells = (size_t)n * n;
	struct wb_material mats[2] = { { .id = 1 }, { .id = 2 } };
	struct wb_source src[2] = { { .material = 0 }, { .material = 1 } };
	struct wb_scene sc;
	memset(&sc, 0, sizeof sc);
	sc.name = "bench";
	sc.materials = mats;
	sc.n_materials = 2;
	sc.sources = src;
	sc.n_sources = 2;
	sc.sim.dry_depth = 1e-3;
	sc.output.lods = lods;
	sc.output.layers = (1u << WB_LAYER_COUNT) - 1;
	sc.output.distance_max = 16;
	struct wb_raster r;
	struct wb_state st;
	memset(&r, 0, sizeof r);
	memset(&st, 0, sizeof st);
	r.nx = st.nx = n;
	r.ny = st.ny = n;
	r.dx = st.dx = 1;
	r.z = malloc(cells * sizeof(float));
	r.body = calloc(cells, 1);
	st.h = malloc(cells * sizeof(float));
	st.u = malloc(cells * sizeof(float));
	st.v = malloc(cells * sizeof(float));
	st.foam = malloc(cells * sizeof(float));
	if (!r.z || !r.body || !st.h || !st.u || !st.v || !st.foam) {
		fprintf(stderr, "bench_maps: out of memory\n");
		return 1;
	}
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++) {
			size_t k = (size_t)j * n + i;
			double yc = n * 0.3 + n * 0.1 * sin(i * 0.005);
			double dy = j - yc, h = 0, z = 50 - 0.01 * i;
			double u = 0, v = 0;
			if (fabs(dy) < 60) {
				h = 2 - dy * dy / 1800.0;
				u = 1.5 * (1 - dy * dy / 3600.0);
				v = 0.3 * cos(i * 0.005);
				if (i < 64)
					r.body[k] = 1;
			}
			double lr = hypot(i - n * 0.6, j - n * 0.72);
			if (lr < n * 0.2) {
				z = 20 - 5 * (1 - lr / (n * 0.2)) +
				    0.3 * sin(i * 0.1) * cos(j * 0.07);
				h = 20 - z;
				u = v = 0;
				if (lr < 30)
					r.body[k] = 2;
			}
			r.z[k] = (float)z;
			st.h[k] = (float)(h > 0 ? h : 0);
			st.u[k] = (float)u;
			st.v[k] = (float)v;
			st.foam[k] = (float)(0.5 + 0.5 * sin(i * 0.3 + j * 0.2));
		}
	struct wb_diags d;
	wb_diags_init(&d);
	int threads = wb_threads(0);
	double best = INFINITY, best_maps = INFINITY;
	long pages = 0;
	for (int rep = 0; rep < 3; rep++) {
		struct wb_maps m;
		struct wb_pageset ps;
		double t0 = now();
		if (maps_build(&sc, &r, &st, threads, &m, &d) != WB_OK) {
			fprintf(stderr, "bench_maps: maps_build failed\n");
			return 1;
		}
		double t1 = now();
		if (pages_build(&m, lods, sc.output.layers, sc.output.distance_max,
				r.origin, threads, &ps, &d) != WB_OK) {
			fprintf(stderr, "bench_maps: pages_build failed\n");
			return 1;
		}
		double t2 = now();
		pages = 0;
		for (int l = 0; l < ps.n_lods; l++)
			pages += (long)ps.lods[l].px * ps.lods[l].py;
		best = fmin(best, t2 - t0);
		best_maps = fmin(best_maps, t1 - t0);
		maps_free(&m);
		wb_pageset_free(&ps);
	}
	printf("bench tile_pages_per_s %.1f pages/s\n", pages / best);
	printf("bench maps_lod0_mpix_per_s %.1f Mpix/s\n",
	       cells / 1e6 / best_maps);
	wb_diags_release(&d);
	free(r.z);
	free(r.body);
	free(st.h);
	free(st.u);
	free(st.v);
	free(st.foam);
	return 0;
}
