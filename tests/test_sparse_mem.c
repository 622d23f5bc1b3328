/*
 * test_sparse_mem.c - memory of the block-sparse SWE step follows the water
 * (src/swe.c, docs/scale.md "Memory").
 *
 * The fields are calloc'd; the sparse step, the boundary passes and the
 * window means write only where water is or was, so the pages of dry land
 * are never backed by memory. Measured as the growth of the resident set
 * (/proc/self/statm) while a small pool in a large dry grid is stepped and
 * its window means are taken; the same run with the dense step must grow
 * by about the whole arrays (so the measurement can see the difference).
 * Linux only (skipped where /proc/self/statm is missing or under ASan,
 * whose allocator may touch what it hands out).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "hydro.h"
#include "swe.h"
#include "wbake.h"

#include "rss.h"


/* RSS growth (bytes) over init, 'steps' steps with means sampled every 5
 * steps and closed every 50, of a 'n' x 'n' dry grid with a 64 x 64 pool;
 * *fields: bytes of the context's and the means' grid arrays. */
static double run_growth(const struct wb_raster *r, int dense, int steps,
			 double *fields, long *act)
{
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.solver = WB_SOLVER_SWE;
	sim.dry_depth = 1e-3;
	sim.manning = 0.03;
	struct wb_diags d;
	wb_diags_init(&d);
	double r0 = rss_bytes();
	struct swe_ctx s;
	assert_int_equal(swe_init(&s, r, &sim, 2, &d), WB_OK);
	s.sp.on = !dense;
	struct swe_means m;
	assert_int_equal(swe_means_init(&m, &s, 50), 0);
	for (int k = 1; k <= steps; k++) {
		assert_int_equal(swe_step(&s, &d), WB_OK);
		if (k % 5 == 0)
			swe_means_sample(&m, &s);
		if (k % 50 == 0)
			swe_means_close(&m, &s);
	}
	double grown = rss_bytes() - r0;
	/* what the dense step and sample write: h h1 H u v u1 v1 bb fu fv
	   sh su sv (padded) */
	*fields = 13.0 * s.ncell * sizeof(float);
	*act = s.sp.n_act;
	swe_means_release(&m);
	swe_release(&s);
	wb_diags_release(&d);
	return grown;
}

static void test_memory_follows_water(void **state)
{
	(void)state;
#ifdef NO_RSS
	skip();
#endif
	if (rss_bytes() < 0)
		skip();
	if (rss_reads_free() != 1) {
		printf("skipped: " RSS_READ_COST);
		skip();
	}
	/* a wide grid: a row spans 4 pages, so a pool of ~130 columns
	   backs about one of them (rows are the pages' grain) */
	const int n = 4096, ny = 1024;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, n, ny, 1.0), WB_OK);
	for (int e = 0; e < 4; e++) {
		r.edges[e].kind = WB_EDGE_WALL;
		r.edges[e].free_slip = 1;
	}
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < n; i++) {
			size_t q = (size_t)i + (size_t)j * n;
			double x = i - 2100.0, y = j - 500.0;
			r.z[q] = (float)(1e-4 * (x * x + y * y));
			r.h0[q] = fabs(x) < 32 && fabs(y) < 32 ? 0.5f : 0.0f;
		}
	double fs, fd;
	long act;
	long act_d;
	double gs = run_growth(&r, 0, 200, &fs, &act);
	double gd = run_growth(&r, 1, 20, &fd, &act_d);
	assert_true(act > 0);
	printf("grid %dx%d: written arrays %.0f MiB; resident growth sparse "
	       "%.1f MiB (%ld blocks active of %ld), dense %.1f MiB\n", n, ny,
	       fs / 1048576.0, gs / 1048576.0, act,
	       (long)((n + 31) / 32) * ((ny + 31) / 32), gd / 1048576.0);
	/* sparse: the terrain and the blocker bottoms (2 of the 13 arrays),
	   and about a quarter of the rows' pages of the others where water
	   is */
	assert_true(gs < 0.35 * fs);
	/* dense: every page of the 13 */
	assert_true(gd > 0.8 * fd);
	wb_raster_free(&r);
}

/* The instantaneous residual (swe_residual: wbake --steps, the steady
 * test without window means) keeps a snapshot of u and v; taking it must
 * back only the pages where the velocities are or were nonzero, not the
 * whole grid (a dense copy is 8 bytes per cell: 2 GiB at 16384^2). The
 * snapshot must still be the velocities bit for bit, and a second call on
 * unchanged velocities must give 0. */
static void test_residual_snapshot_sparse(void **state)
{
	(void)state;
#ifdef NO_RSS
	skip();
#endif
	if (rss_bytes() < 0)
		skip();
	if (rss_reads_free() != 1) {
		printf("skipped: " RSS_READ_COST);
		skip();
	}
	const int n = 4096, ny = 1024;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, n, ny, 1.0), WB_OK);
	for (int e = 0; e < 4; e++) {
		r.edges[e].kind = WB_EDGE_WALL;
		r.edges[e].free_slip = 1;
	}
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < n; i++) {
			size_t q = (size_t)i + (size_t)j * n;
			double x = i - 1000.0, y = j - 600.0;
			r.z[q] = (float)(1e-4 * (x * x + y * y));
			r.h0[q] = fabs(x) < 40 && fabs(y) < 40 ? 0.5f : 0.0f;
		}
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.solver = WB_SOLVER_SWE;
	sim.dry_depth = 1e-3;
	sim.manning = 0.03;
	struct wb_diags d;
	wb_diags_init(&d);
	struct swe_ctx s;
	assert_int_equal(swe_init(&s, &r, &sim, 2, &d), WB_OK);
	for (int k = 0; k < 50; k++)
		assert_int_equal(swe_step(&s, &d), WB_OK);
	double r0 = rss_bytes();
	double a = swe_residual(&s);
	double grown = rss_bytes() - r0;
	double snap = 2.0 * s.ncell * sizeof(float);
	printf("residual snapshot: %.2f MiB resident for %.0f MiB of "
	       "snapshot arrays\n", grown / 1048576.0, snap / 1048576.0);
	assert_true(a > 0.0); /* the pool moved since the zero snapshot */
	assert_true(grown < 0.1 * snap);
	assert_memory_equal(s.usnap, s.u, (size_t)s.ncell * sizeof(float));
	assert_memory_equal(s.vsnap, s.v, (size_t)s.ncell * sizeof(float));
	assert_true(swe_residual(&s) == 0.0);
	assert_int_equal(swe_step(&s, &d), WB_OK);
	assert_true(swe_residual(&s) > 0.0);
	assert_memory_equal(s.usnap, s.u, (size_t)s.ncell * sizeof(float));
	assert_memory_equal(s.vsnap, s.v, (size_t)s.ncell * sizeof(float));
	swe_release(&s);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* Resident bytes of the mapping that starts at p (/proc/self/smaps
 * "Rss:", which leaves out pages only read, i.e. mapped to the shared
 * zero page), or -1. */
static double resident_of(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512], want[32];
	snprintf(want, sizeof want, "%lx-", (unsigned long)(uintptr_t)p);
	int in = 0;
	double kb = -1;
	while (fgets(line, sizeof line, f)) {
		if (strchr(line, '-') && strncmp(line, want, strlen(want)) == 0)
			in = 1;
		else if (in && strncmp(line, "Rss:", 4) == 0) {
			kb = strtod(line + 4, NULL);
			break;
		}
	}
	fclose(f);
	return kb < 0 ? -1 : kb * 1024.0;
}

/* n zero floats on their own pages, in a mapping of their own (guard
 * pages with other permissions on both sides keep the kernel from merging
 * it with a neighbour, so that smaps shows it alone). Free with
 * zero_pages_free. */
static float *zero_pages(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (n * sizeof(float) + pg - 1) / pg * pg + 2 * pg;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	mprotect(p, pg, PROT_NONE);
	mprotect(p + len - pg, pg, PROT_NONE);
	return (float *)(void *)(p + pg);
}

static void zero_pages_free(float *f, size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (n * sizeof(float) + pg - 1) / pg * pg + 2 * pg;
	munmap((char *)f - pg, len);
}

/* The first guess (src/hydro_guess.c) on a 4096 x 1024 slope with one
 * narrow channel fed by a spring: into zero pages (what the bake's
 * calloc'd outputs are at world scale) it writes only where it puts
 * water or flow, so dry land's pages stay unbacked (not 12 bytes per
 * cell). The outputs must equal those written over buffers full of other
 * bits. */
static void test_first_guess_outputs_sparse(void **state)
{
	(void)state;
	const int nx = 4096, ny = 1024;
	const size_t n = (size_t)nx * ny;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, 1.0), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			/* a valley falling 1 % to the south, a 9-cell channel
			   at x 2000..2008, high banks */
			float z = (float)(20.0 - 0.01 * j);
			if (i < 2000 || i > 2008)
				z += 3.0f + 0.001f * (float)abs(i - 2004);
			r.z[(size_t)i + (size_t)j * nx] = z;
		}
	for (int i = 2000; i <= 2008; i++) {
		r.src[(size_t)i + nx] = 0.05f;
		r.flags[(size_t)i + nx] |= WB_CELL_SOURCE;
	}
	r.edges[WB_SOUTH].kind = WB_EDGE_OPEN;
	struct hydro_guess_opts o = { 0.03, NULL };
	float *h = zero_pages(n), *u = zero_pages(n), *v = zero_pages(n);
	float *h2 = malloc(n * sizeof(float)), *u2 = malloc(n * sizeof(float));
	float *v2 = malloc(n * sizeof(float));
	assert_true(h && u && v && h2 && u2 && v2);
	assert_int_equal(hydro_first_guess(&r, &o, h, u, v, NULL), 0);
	double rh = resident_of(h), ru = resident_of(u), rv = resident_of(v);
	if (rh < 0 || ru < 0 || rv < 0)
		skip(); /* no smaps */
	double res = rh + ru + rv;
	double out = 3.0 * n * sizeof(float);
	printf("first guess: outputs %.2f MiB resident of %.0f MiB\n",
	       res / 1048576.0, out / 1048576.0);
	/* the channel backs one page per row of each output, a quarter
	   (where reading costs nothing resident: rss_reads_free) */
	if (rss_reads_free() == 1)
		assert_true(res < 0.3 * out);
	else
		printf("first guess: the residency bound is not checked: " RSS_READ_COST);
	long wet = 0;
	for (size_t k = 0; k < n; k++)
		wet += h[k] > 0;
	assert_true(wet >= 9L * (ny - 2)); /* the channel is wet */
	memset(h2, 0xff, n * sizeof(float));
	memset(u2, 0x80, n * sizeof(float)); /* -0: bits differ from +0 */
	memset(v2, 0x7f, n * sizeof(float));
	assert_int_equal(hydro_first_guess(&r, &o, h2, u2, v2, NULL), 0);
	assert_memory_equal(h, h2, n * sizeof(float));
	assert_memory_equal(u, u2, n * sizeof(float));
	assert_memory_equal(v, v2, n * sizeof(float));
	zero_pages_free(h, n);
	zero_pages_free(u, n);
	zero_pages_free(v, n);
	free(h2);
	free(u2);
	free(v2);
	wb_raster_free(&r);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_follows_water),
		cmocka_unit_test(test_residual_snapshot_sparse),
		cmocka_unit_test(test_first_guess_outputs_sparse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
