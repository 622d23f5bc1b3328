/*
 * test_sparse.c - block-sparse SWE stepping (src/swe.c, docs/scale.md)
 * against the dense reference: after every checkpoint the depth, the face
 * velocities (ghosts included), foam, the particle pool, time, time step,
 * volume books and clamp count must be the same bytes, for 1 and 2
 * threads. Scenes: the three samples' rasters, a waterfall with particles
 * and foam (MacCormack), water spreading into dry blocks (blocks wake),
 * and water draining away (blocks sleep); the last two also check that
 * the sparse step really skipped blocks.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "swe.h"
#include "wbake.h"

static struct wb_sim sim_plain(void)
{
	struct wb_sim s;
	memset(&s, 0, sizeof(s));
	s.solver = WB_SOLVER_SWE;
	s.dry_depth = 1e-4;
	s.seed = 7;
	return s;
}

static int same_f(const float *a, const float *b, long n)
{
	if (!a || !b)
		return a == b;
	return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

static int same_d(const double *a, const double *b, long n)
{
	if (n == 0)
		return 1;
	return memcmp(a, b, (size_t)n * sizeof(double)) == 0;
}

/* Byte comparison of everything a later step or the export reads. */
static void assert_same_state(const struct swe_ctx *a, const struct swe_ctx *b,
			      const char *what, long step)
{
	long nc = a->ncell;
	int ok = same_f(a->h, b->h, nc) && same_f(a->u, b->u, nc) &&
		 same_f(a->v, b->v, nc) && same_f(a->foam, b->foam, nc) &&
		 a->P.n == b->P.n && memcmp(&a->t, &b->t, sizeof(a->t)) == 0 &&
		 memcmp(&a->dt, &b->dt, sizeof(a->dt)) == 0 &&
		 memcmp(&a->vol_in, &b->vol_in, sizeof(double)) == 0 &&
		 memcmp(&a->vol_out, &b->vol_out, sizeof(double)) == 0 &&
		 a->clamped == b->clamped;
	if (ok && a->P.n > 0) {
		long n = a->P.n;
		ok = same_d(a->P.x, b->P.x, n) && same_d(a->P.y, b->P.y, n) &&
		     same_d(a->P.z, b->P.z, n) && same_d(a->P.vx, b->P.vx, n) &&
		     same_d(a->P.vy, b->P.vy, n) && same_d(a->P.vz, b->P.vz, n) &&
		     same_d(a->P.vol, b->P.vol, n);
	}
	if (!ok)
		fail_msg("%s: sparse and dense differ after step %ld", what, step);
}

struct run_stats {
	long act_first, act_last, act_min, act_max, nblk, particles;
	double wet_frac;
};

/* Steps the raster densely and sparsely side by side for 'steps' steps
 * with 'threads' threads, comparing every 'every' steps. */
/* Particles dropped from 20 m over the east of the grid (dry blocks far
 * from any water): their deposits must wake those blocks. */
static void drop_particles(struct swe_ctx *s)
{
	const long n = 200;
	assert_int_equal(swe_particles_reserve(&s->P, s->P.n + n), 0);
	for (long m = 0; m < n; m++) {
		long q = s->P.n + m;
		s->P.x[q] = (s->nx - 8 - (m % 5) * 4) * s->dx;
		s->P.y[q] = (4.0 + 0.35 * (double)m) * s->dx;
		s->P.z[q] = 20.0 + 0.05 * (double)m;
		s->P.vx[q] = 0.5;
		s->P.vy[q] = 0.0;
		s->P.vz[q] = 0.0;
		s->P.vol[q] = 1e-3;
		s->P.hit[q] = -1;
	}
	s->P.n += n;
}

static void compare_run_x(const struct wb_raster *r, const struct wb_sim *sim,
			  int threads, long steps, long every,
			  const char *what, struct run_stats *st, int drop);
/* drop: bit 0 drops particles onto dry blocks, bit 1 times the threads */

static void compare_run(const struct wb_raster *r, const struct wb_sim *sim,
			int threads, long steps, long every, const char *what,
			struct run_stats *st)
{
	compare_run_x(r, sim, threads, steps, every, what, st, 0);
}

static void compare_run_x(const struct wb_raster *r, const struct wb_sim *sim,
			  int threads, long steps, long every,
			  const char *what, struct run_stats *st, int drop)
{
	struct swe_ctx dn, sp;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(swe_init(&dn, r, sim, threads, &d), WB_OK);
	assert_int_equal(swe_init(&sp, r, sim, threads, &d), WB_OK);
	dn.sp.on = 0;
	sp.sp.on = 1;
	sp.sp.thr_cells = 1; /* every thread, however few blocks are active */
	sp.sp.tune = 0;      /* not one thread by timing */
	if (drop & 2) {
		/* the timed choice, probing from the start: the thread
		   count changes between steps */
		sp.sp.tune = 1;
		sp.sp.t_period = 2;
	}
	if (drop & 1) {
		/* the deposit buffers exist with waterfall faces */
		assert_true(dn.n_falls > 0);
		drop_particles(&dn);
		drop_particles(&sp);
	}
	/* window means (the steady-state test of swe_solve): the sparse
	   sample and close visit only the blocks that can hold water */
	struct swe_means mdn, msp;
	assert_int_equal(swe_means_init(&mdn, &dn, 30), 0);
	assert_int_equal(swe_means_init(&msp, &sp, 30), 0);
	long nwin = 0;
	memset(st, 0, sizeof(*st));
	st->nblk = sp.sp.nblk;
	st->act_min = sp.sp.nblk;
	for (long k = 1; k <= steps; k++) {
		assert_int_equal(swe_step(&dn, &d), WB_OK);
		assert_int_equal(swe_step(&sp, &d), WB_OK);
		if (k == 1)
			st->act_first = sp.sp.n_act;
		st->act_last = sp.sp.n_act;
		st->act_min = sp.sp.n_act < st->act_min ? sp.sp.n_act : st->act_min;
		st->act_max = sp.sp.n_act > st->act_max ? sp.sp.n_act : st->act_max;
		if (sp.P.n > st->particles)
			st->particles = sp.P.n;
		if (k % every == 0 || k == steps)
			assert_same_state(&dn, &sp, what, k);
		if (k % 3 == 0) {
			swe_means_sample(&mdn, &dn);
			swe_means_sample(&msp, &sp);
		}
		if (k % 30 == 0) {
			double ma = swe_means_close(&mdn, &dn);
			double mb = swe_means_close(&msp, &sp);
			assert_memory_equal(&ma, &mb, sizeof(ma));
			size_t n = (size_t)sp.nx * sp.ny * sizeof(float);
			size_t np = (size_t)sp.ncell * sizeof(float);
			assert_memory_equal(mdn.mh, msp.mh, n);
			assert_memory_equal(mdn.mu, msp.mu, n);
			assert_memory_equal(mdn.mv, msp.mv, n);
			assert_memory_equal(mdn.pu, msp.pu, n);
			assert_memory_equal(mdn.pv, msp.pv, n);
			assert_memory_equal(mdn.sh, msp.sh, np);
			assert_memory_equal(mdn.su, msp.su, np);
			assert_memory_equal(mdn.sv, msp.sv, np);
			nwin++;
		}
	}
	assert_true(nwin > 0 || steps < 30);
	swe_means_release(&mdn);
	swe_means_release(&msp);
	/* the residual and the volume are sums over the grid in a fixed
	   order: the same too */
	double va = swe_grid_volume(&dn), vb = swe_grid_volume(&sp);
	assert_memory_equal(&va, &vb, sizeof(va));
	double ra = swe_residual(&dn), rb = swe_residual(&sp);
	assert_memory_equal(&ra, &rb, sizeof(ra));
	long wet = 0;
	for (int j = 0; j < sp.ny; j++)
		for (int i = 0; i < sp.nx; i++)
			wet += sp.h[i + 1 + (long)(j + 1) * sp.W] > 1e-3f;
	st->wet_frac = (double)wet / ((double)sp.nx * sp.ny);
	printf("%s, %d thread(s): %ld steps identical; active blocks first "
	       "%ld, last %ld, range %ld..%ld of %ld; particles up to %ld; "
	       "wet %.1f %%\n", what, threads, steps, st->act_first,
	       st->act_last, st->act_min, st->act_max, st->nblk,
	       st->particles, 100.0 * st->wet_frac);
	if (drop & 2) /* both choices ran (and were timed) */
		assert_true(isfinite(sp.sp.t_cost[0]) &&
			    isfinite(sp.sp.t_cost[1]));
	swe_release(&dn);
	swe_release(&sp);
	wb_diags_release(&d);
}

/* ---- the samples ------------------------------------------------------------ */

static void sample_run(const char *name, long steps)
{
	char path[256];
	snprintf(path, sizeof(path), "samples/%s/scene.json", name);
	struct wb_scene sc;
	struct wb_heightmap hm;
	struct wb_raster r;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_scene_load(path, &sc, &d), WB_OK);
	assert_int_equal(wb_heightmap_load(&sc.terrain, &hm, &d), WB_OK);
	assert_int_equal(wb_raster_build(&sc, &hm, &r, &d), WB_OK);
	struct wb_sim sim = sc.sim;
	sim.solver = WB_SOLVER_SWE;
	if (!(sim.dry_depth > 0))
		sim.dry_depth = 1e-3;
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, steps, 50, name, &st);
	}
	wb_raster_free(&r);
	wb_heightmap_free(&hm);
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_samples(void **state)
{
	(void)state;
	sample_run("river", 300);
	sample_run("lake", 200);
	sample_run("coast", 200);
}

/* The thread count chosen by timing (sparse_tune) switches between one
 * thread and two during the run; the bytes stay the dense bytes. */
static void test_tuned_threads(void **state)
{
	(void)state;
	struct wb_scene sc;
	struct wb_heightmap hm;
	struct wb_raster r;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_scene_load("samples/river/scene.json", &sc, &d),
			 WB_OK);
	assert_int_equal(wb_heightmap_load(&sc.terrain, &hm, &d), WB_OK);
	assert_int_equal(wb_raster_build(&sc, &hm, &r, &d), WB_OK);
	struct wb_sim sim = sc.sim;
	sim.solver = WB_SOLVER_SWE;
	if (!(sim.dry_depth > 0))
		sim.dry_depth = 1e-3;
	struct run_stats st;
	compare_run_x(&r, &sim, 2, 120, 10, "river, timed threads", &st, 2);
	wb_raster_free(&r);
	wb_heightmap_free(&hm);
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

/* ---- generated scenes ------------------------------------------------------- */

static void raster(struct wb_raster *r, int nx, int ny, double dx)
{
	assert_int_equal(wb_raster_alloc(r, nx, ny, dx), WB_OK);
	for (int e = 0; e < 4; e++) {
		r->edges[e].kind = WB_EDGE_WALL;
		r->edges[e].free_slip = 1;
	}
}

/* A plateau 10 m high over the west 56 m, falling to 2 m (8 m cliff: a
 * waterfall); inflow from the west edge; the low ground drains east. */
static void test_waterfall(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 128, ny = 80;
	raster(&r, nx, ny, 1.0);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t q = (size_t)i + (size_t)j * nx;
			r.z[q] = i < 56 ? 10.0f - 0.01f * i : 2.0f - 0.01f * i;
			r.h0[q] = i < 6 && j > 20 && j < 60 ? 0.4f : 0.0f;
		}
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].velocity = 1.0;
	r.edges[WB_WEST].depth = 0.4;
	r.edges[WB_EAST].kind = WB_EDGE_OPEN;
	struct wb_sim sim = sim_plain();
	sim.manning = 0.03;
	sim.maccormack = 1;
	sim.foam_trapped = 1.0;
	sim.foam_steep = 1.0;
	sim.foam_trapped_min = 0.1;
	sim.foam_trapped_max = 2.0;
	sim.foam_steep_min = 0.05;
	sim.foam_steep_max = 0.5;
	sim.foam_diffusion = 0.05;
	sim.foam_dissipation = 0.2;
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, 700, 25, "waterfall", &st);
		/* the fall made particles, and the dry low ground was
		   skipped at the start */
		assert_true(st.particles > 0);
		assert_true(st.act_first < st.nblk);
		/* particles landing on dry blocks far from the water */
		compare_run_x(&r, &sim, t, 80, 5, "waterfall, dropped particles",
			      &st, 1);
		assert_true(st.act_max > st.act_first);
	}
	wb_raster_free(&r);
}

/* A dam break in one corner of a wide flat basin with a bump: the water
 * spreads into blocks that start dry (they wake). */
static void test_spreading(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 200, ny = 160;
	raster(&r, nx, ny, 1.0);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t q = (size_t)i + (size_t)j * nx;
			double bx = (i - 120.0) / 15.0, by = (j - 90.0) / 15.0;
			r.z[q] = (float)(0.8 * exp(-(bx * bx + by * by)));
			r.h0[q] = i < 30 && j < 30 ? 1.5f : 0.0f;
		}
	r.edges[WB_SOUTH].free_slip = 0; /* one no-slip wall */
	struct wb_sim sim = sim_plain();
	sim.manning = 0.02;
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, 500, 50, "spreading", &st);
		assert_true(st.act_first <= 4); /* the corner and its neighbours */
		assert_true(st.act_last > 3 * st.act_first); /* woken */
	}
	wb_raster_free(&r);
}

/* A dam break in the middle of one block, farther than SWE_WAKE_MARGIN
 * from its edges: the first step steps that block alone (its neighbours
 * wake only once the water is near them: a whole ring of 8 before), and
 * the bytes stay the dense bytes while the front crosses the margins into
 * the neighbours and beyond. */
static void test_wake_margin(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 192, ny = 192;
	raster(&r, nx, ny, 1.0);
	const int a = 2 * SWE_BLOCK + SWE_WAKE_MARGIN + 6;
	const int b = 3 * SWE_BLOCK - SWE_WAKE_MARGIN - 6;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t q = (size_t)i + (size_t)j * nx;
			r.z[q] = (float)(0.001 * i);
			r.h0[q] = i >= a && i < b && j >= a && j < b ? 0.3f : 0.0f;
		}
	struct wb_sim sim = sim_plain();
	sim.manning = 0.02;
	sim.maccormack = 1;
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, 300, 10, "wake margin", &st);
		assert_int_equal(st.act_first, 1);
		assert_true(st.act_max >= 9); /* the front reached them all */
	}
	wb_raster_free(&r);
}

/* Blocker decks and MacCormack on a spreading front. */
static void test_spreading_mc_blocker(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 160, ny = 130;
	raster(&r, nx, ny, 1.0);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t q = (size_t)i + (size_t)j * nx;
			r.z[q] = (float)(0.002 * i);
			r.h0[q] = j > 40 && j < 90 && i < 25 ? 1.2f : 0.0f;
			int deck = i >= 40 && i < 46 && j > 30 && j < 100;
			r.block_bot[q] = deck ? 0.9f : INFINITY;
			r.block_top[q] = deck ? 1.5f : -INFINITY;
		}
	struct wb_sim sim = sim_plain();
	sim.manning = 0.03;
	sim.maccormack = 1;
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, 400, 40, "spreading under a deck", &st);
		assert_true(st.act_last > st.act_first);
	}
	wb_raster_free(&r);
}

/* Water on a slope drains out of the open east edge: blocks the water
 * leaves go to sleep (their films stay as the dense step leaves them). */
static void test_drying(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 160, ny = 64;
	raster(&r, nx, ny, 1.0);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t q = (size_t)i + (size_t)j * nx;
			r.z[q] = (float)(12.0 - 0.1 * i + 0.05 * sin(0.3 * j));
			r.h0[q] = i < 48 ? 0.03f : 0.0f;
		}
	r.edges[WB_EAST].kind = WB_EDGE_OPEN;
	struct wb_sim sim = sim_plain();
	sim.manning = 0.03;
	sim.dry_depth = 1e-2; /* films below 1 cm stop */
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, 1200, 100, "drying", &st);
		assert_true(st.act_last < st.act_max); /* blocks slept */
	}
	wb_raster_free(&r);
}

/* Films (depths at most the dry depth) in blocks far from the water:
 * they never wake, but their depths count in the window means, which the
 * sparse sample must add (compare_run compares the means). */
static void test_films(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 256, ny = 224;
	raster(&r, nx, ny, 1.0);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t q = (size_t)i + (size_t)j * nx;
			r.z[q] = (float)(1.0 - 0.001 * i - 0.002 * j);
			int film = i >= 70 && i < 90 && j >= 70 && j < 90;
			int pool = i >= 200 && i < 230 && j >= 170 && j < 200;
			r.h0[q] = film ? 0.5e-4f : pool ? 0.8f : 0.0f;
		}
	struct wb_sim sim = sim_plain(); /* dry depth 1e-4 */
	struct wb_diags d;
	wb_diags_init(&d);
	/* the film's block (2, 2) sleeps and is marked as holding water */
	struct swe_ctx s;
	assert_int_equal(swe_init(&s, &r, &sim, 1, &d), WB_OK);
	for (int k = 0; k < 40; k++)
		assert_int_equal(swe_step(&s, &d), WB_OK);
	long qf = 2L * s.sp.nbx + 2;
	assert_false(s.sp.act[qf]);
	assert_false(s.sp.halo[qf]);
	assert_true(s.sp.nz[qf]);
	assert_false(s.sp.nz[0]); /* dry corner */
	swe_release(&s);
	wb_diags_release(&d);
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, 200, 50, "films", &st);
		assert_true(st.act_max < st.nblk / 2);
	}
	wb_raster_free(&r);
}

/* A spring on the last column and row of a dry block, strong enough to
 * wet its cell in one step: the faces it shares with the next blocks open
 * in the step that wets it, so those blocks must be stepped although no
 * block around them was wet when the step began. */
static void test_source_edge(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 96, ny = 96;
	raster(&r, nx, ny, 1.0);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++)
			r.z[(size_t)i + (size_t)j * nx] = 0.001f * i;
	r.src[31 + (size_t)31 * nx] = 2.0f;
	struct wb_sim sim = sim_plain();
	sim.manning = 0.02;
	for (int t = 1; t <= 2; t++) {
		struct run_stats st;
		compare_run(&r, &sim, t, 200, 1, "spring on a block edge", &st);
	}
	wb_raster_free(&r);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_tuned_threads),
		cmocka_unit_test(test_waterfall),
		cmocka_unit_test(test_spreading),
		cmocka_unit_test(test_spreading_mc_blocker),
		cmocka_unit_test(test_drying),
		cmocka_unit_test(test_films),
		cmocka_unit_test(test_source_edge),
		cmocka_unit_test(test_wake_margin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
