/*
 * test_hydro_fast.c - the fast priority-flood of src/hydro.c (radix heap,
 * interleaved work array, one flood for level and receivers, parallel
 * receivers) against the plain reference of tests/hydro_ref.h (binary
 * heap ordered by (level, index)), bit for bit: filled levels, receivers
 * and the donor order, from hydro_fill, hydro_fill_levels,
 * hydro_receivers and hydro_fill_receivers, with 1 and 2 threads, on
 *   - random terrains (continuous heights: few ties);
 *   - quantised terrains (heights in a few steps: large flats, plateaus
 *     and ties everywhere, where the flood order decides the receivers);
 *   - nested pits (a pit in a pit in a basin) and plateaus with a notch;
 *   - walls (NaN, +-INF) cutting the grid, a closed region no outlet
 *     reaches, -0 and +0 side by side (equal as floats);
 *   - outlet masks with held outlet levels (sinks inside the grid, one
 *     edge open), and 1 x N, N x 1 strips;
 * and the levels flooded by strips of rows in parallel (hydro_fill_strips,
 * 2 to ny strips) against the same reference.
 * The priority-flood's filled surface is unique, but the receivers on
 * flats follow the flood's visiting order, so the fast queue must pop in
 * exactly the reference's order; any difference fails here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "hydro.h"
#include "hydro_ref.h"

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

enum kind { RANDOM, QUANT, NESTED, PLATEAU, WALLS, ZEROS };

static void terrain(float *z, int nx, int ny, enum kind k, uint64_t seed)
{
	uint64_t s = seed * 2654435761u + 1;
	for (int y = 0; y < ny; y++)
		for (int x = 0; x < nx; x++) {
			long i = x + (long)y * nx;
			double r = rng_unit(&s);
			double cx = x - nx / 2.0, cy = y - ny / 2.0;
			double d = sqrt(cx * cx + cy * cy);
			switch (k) {
			case RANDOM:
				z[i] = (float)(10 * r + 0.05 * y);
				break;
			case QUANT:
				z[i] = (float)floor(4 * r * r);
				break;
			case NESTED: /* basin, pit in it, pit in the pit */
				z[i] = (float)(d < nx / 3.0 ? 5 - 0.1 * d : 8 + 0.01 * d);
				if (d < nx / 6.0)
					z[i] = (float)(2 + 0.2 * d);
				if (d < 2)
					z[i] = 1;
				z[i] += (float)(0.001 * floor(3 * r));
				break;
			case PLATEAU: /* a flat top with a notch, flat floor */
				z[i] = d < nx / 4.0 ? 7.0f : (d < nx / 3.0 ? 9.0f : 3.0f);
				if (y == ny / 2 && x > nx / 2 && d < nx / 3.0)
					z[i] = 6.5f;
				break;
			case WALLS:
				z[i] = (float)floor(3 * r);
				if (x == nx / 3 && y > 0)
					z[i] = NAN;
				if (y == ny / 2 && x < nx / 3)
					z[i] = (x & 1) ? INFINITY : -INFINITY;
				break;
			case ZEROS:
				z[i] = (r < 0.3) ? -0.0f : (r < 0.6 ? 0.0f : (float)floor(2 * r));
				break;
			}
		}
}

/* One case: every fast entry point against the reference, both thread
 * counts. */
static void check(const float *z, int nx, int ny, const unsigned char *out,
		  const float *ol)
{
	long n = (long)nx * ny;
	float *rl = malloc((size_t)n * sizeof(float)), *fl = malloc((size_t)n * sizeof(float));
	int *rr = malloc((size_t)n * sizeof(int)), *fr = malloc((size_t)n * sizeof(int));
	int *ro = malloc((size_t)n * sizeof(int)), *fo = malloc((size_t)n * sizeof(int));
	assert_non_null(rl);
	assert_non_null(fl);
	assert_non_null(rr);
	assert_non_null(fr);
	assert_non_null(ro);
	assert_non_null(fo);
	assert_int_equal(ref_receivers(z, nx, ny, out, ol, rl, rr, ro), 0);
	for (int t = 1; t <= 2; t++) {
		omp_set_num_threads(t);
		memset(fl, 0x55, (size_t)n * sizeof(float));
		assert_int_equal(hydro_fill_levels(z, nx, ny, out, ol, fl), 0);
		assert_memory_equal(fl, rl, (size_t)n * sizeof(float));
		/* the levels flooded by strips of rows: 2, 3 and 7 strips,
		   and strips of one row */
		const int strips[] = { 2, 3, 7, ny };
		for (int q = 0; q < 4; q++) {
			memset(fl, 0x55, (size_t)n * sizeof(float));
			assert_int_equal(hydro_fill_strips(z, nx, ny, out, ol, fl, strips[q]), 0);
			assert_memory_equal(fl, rl, (size_t)n * sizeof(float));
		}
		if (!ol) {
			memset(fl, 0x55, (size_t)n * sizeof(float));
			assert_int_equal(hydro_fill(z, nx, ny, out, fl), 0);
			assert_memory_equal(fl, rl, (size_t)n * sizeof(float));
		}
		memset(fr, 0x55, (size_t)n * sizeof(int));
		memset(fo, 0x55, (size_t)n * sizeof(int));
		assert_int_equal(hydro_receivers(z, nx, ny, out, ol, rl, fr, fo), 0);
		assert_memory_equal(fr, rr, (size_t)n * sizeof(int));
		assert_memory_equal(fo, ro, (size_t)n * sizeof(int));
		memset(fl, 0x55, (size_t)n * sizeof(float));
		memset(fr, 0x55, (size_t)n * sizeof(int));
		memset(fo, 0x55, (size_t)n * sizeof(int));
		assert_int_equal(hydro_fill_receivers(z, nx, ny, out, ol, fl, fr, fo), 0);
		assert_memory_equal(fl, rl, (size_t)n * sizeof(float));
		assert_memory_equal(fr, rr, (size_t)n * sizeof(int));
		assert_memory_equal(fo, ro, (size_t)n * sizeof(int));
		memset(fr, 0x55, (size_t)n * sizeof(int));
		assert_int_equal(hydro_fill_receivers(z, nx, ny, out, ol, fl, fr, NULL), 0);
		assert_memory_equal(fr, rr, (size_t)n * sizeof(int));
	}
	omp_set_num_threads(1);
	free(rl);
	free(fl);
	free(rr);
	free(fr);
	free(ro);
	free(fo);
}

static void test_kinds_edges(void **state)
{
	(void)state;
	const int sizes[][2] = { { 61, 47 }, { 64, 64 }, { 1, 37 }, { 29, 1 }, { 2, 2 } };
	for (int k = RANDOM; k <= ZEROS; k++)
		for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			for (uint64_t seed = 1; seed <= 3; seed++) {
				int nx = sizes[s][0], ny = sizes[s][1];
				float *z = malloc((size_t)nx * ny * sizeof(float));
				assert_non_null(z);
				terrain(z, nx, ny, (enum kind)k, seed + 10 * s);
				check(z, nx, ny, NULL, NULL);
				free(z);
			}
}

/* Outlet masks: one open edge held above its terrain, a few sinks inside,
 * a region fenced by walls that no outlet reaches. */
static void test_outlets_levels(void **state)
{
	(void)state;
	const int nx = 57, ny = 50;
	long n = (long)nx * ny;
	float *z = malloc((size_t)n * sizeof(float));
	float *ol = malloc((size_t)n * sizeof(float));
	unsigned char *out = calloc((size_t)n, 1);
	assert_non_null(z);
	assert_non_null(ol);
	assert_non_null(out);
	for (int k = RANDOM; k <= ZEROS; k++)
		for (uint64_t seed = 1; seed <= 3; seed++) {
			uint64_t s = seed * 77 + (uint64_t)k;
			terrain(z, nx, ny, (enum kind)k, seed);
			memset(out, 0, (size_t)n);
			for (long i = 0; i < n; i++)
				ol[i] = -INFINITY;
			for (int x = 0; x < nx; x++) {
				out[x] = 1; /* north edge open, held at 2.5 */
				ol[x] = 2.5f;
			}
			for (int q = 0; q < 6; q++) {
				long i = (long)(rng_unit(&s) * n);
				out[i] = 1; /* a sink */
				ol[i] = q & 1 ? -INFINITY : (float)(3 * rng_unit(&s));
			}
			/* a fenced pocket in the south-east corner */
			for (int y = ny - 12; y < ny; y++)
				z[nx - 12 + (long)y * nx] = NAN;
			for (int x = nx - 12; x < nx; x++)
				z[x + (long)(ny - 12) * nx] = NAN;
			check(z, nx, ny, out, ol);
			check(z, nx, ny, out, NULL);
		}
	free(out);
	free(ol);
	free(z);
}

/* A larger quantised grid: many flats and a deep front, where the radix
 * heap's buckets are redistributed many times. */
static void test_large_flats(void **state)
{
	(void)state;
	const int nx = 200, ny = 150;
	float *z = malloc((size_t)nx * ny * sizeof(float));
	assert_non_null(z);
	terrain(z, nx, ny, QUANT, 5);
	check(z, nx, ny, NULL, NULL);
	terrain(z, nx, ny, NESTED, 6);
	check(z, nx, ny, NULL, NULL);
	free(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_edges),
		cmocka_unit_test(test_outlets_levels),
		cmocka_unit_test(test_large_flats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
