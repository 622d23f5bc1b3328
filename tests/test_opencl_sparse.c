/*
 * test_opencl_sparse.c - block-sparse SWE stepping on the OpenCL device
 * (src/cl.c swe_sparse_*, src/cl/swe.cl swe_blk_*; docs/opencl.md).
 *
 * The sparse step must give the bytes of the dense step. On generated
 * scenes where most 32 x 32 blocks are dry (a dam break spreading over a
 * bumpy plain, a river fed by an inflow edge with a spring in a dry field,
 * a sink, a fixed level and a flow modifier, a waterfall throwing
 * particles into a dry basin, a film draining off a slope) the device is
 * stepped three ways in lockstep -- sparse, dense (cl_swe_set_sparse 0),
 * and the CPU's swe_step -- and every 100 steps the padded fields (ghosts
 * included) h, u, v and foam, t and dt are compared with memcmp. The
 * solver entry (cl_swe_solve: window means, residual, books) must give
 * identical reports and states sparse, dense (WB_SWE_DENSE=1), with 1 or 2
 * host threads, and as the CPU's swe_solve. Each scene also asserts what
 * makes it a sparse test: few blocks active at the start, growth as the
 * water spreads, blocks going back to sleep as the slope drains.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl.h"
#include "solve.h"
#include "swe.h"

static int dev_index(void)
{
	const char *s = getenv("WB_CL_DEVICE");
	if (s && *s)
		return atoi(s);
	int k = cl_default_device();
	return k < 0 ? 0 : k;
}

static void sim_defaults(struct wb_sim *s)
{
	memset(s, 0, sizeof(*s));
	s->solver = WB_SOLVER_SWE;
	s->manning = 0.03;
	s->max_steps = 4000;
	s->tolerance = 1e-4;
	s->window = 100;
	s->dry_depth = 1e-3;
	s->seed = 7;
	s->foam_trapped = 1;
	s->foam_steep = 1;
	s->foam_trapped_min = 0.05;
	s->foam_trapped_max = 1;
	s->foam_steep_min = 0.02;
	s->foam_steep_max = 0.5;
	s->foam_diffusion = 0.1;
	s->foam_dissipation = 0.05;
}

/* ---- scenes ---------------------------------------------------------------- */

enum { SC_SPREAD, SC_RIVER, SC_FALL, SC_DRAIN };

static double bumps(int i, int j)
{
	return 0.15 * sin(0.21 * i) * cos(0.17 * j) + 0.05 * sin(0.05 * (i + 2 * j));
}

static void scene(struct wb_raster *r, struct wb_sim *sim, int kind)
{
	sim_defaults(sim);
	int nx = 192, ny = 160;
	if (kind == SC_RIVER)
		nx = 256, ny = 224;
	if (kind == SC_FALL)
		nx = 192, ny = 192;
	if (kind == SC_DRAIN)
		nx = 128, ny = 192;
	assert_int_equal(wb_raster_alloc(r, nx, ny, 1.0), WB_OK);
	for (int e = 0; e < 4; e++)
		r->edges[e].kind = WB_EDGE_WALL;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double z = 0, h = 0;
			switch (kind) {
			case SC_SPREAD:
				/* a 2 m deep pool behind a broken dam in the
				 * north-west corner, a plain falling to the
				 * south-east */
				z = 5.0 - 0.004 * i - 0.003 * j + bumps(i, j);
				if (i < 28 && j < 28)
					h = 7.0 - z;
				break;
			case SC_RIVER: {
				/* a meandering channel, 1 m deep, dry banks */
				double yc = 0.5 * ny + 10.0 * sin(6.2831853 * i / nx);
				double dy = fabs(j - yc);
				z = 10.0 - 0.002 * i + (dy > 5 ? 1.0 + 0.05 * (dy - 5) : 0.0) +
				    0.3 * bumps(i, j);
				h = dy <= 5 ? 10.6 - 0.002 * i - z : 0.0;
				break;
			}
			case SC_FALL:
				/* a channel on a ridge ending in a 6 m cliff
				 * above a dry basin */
				z = 6.0 - 0.002 * i + 0.5 * bumps(i, j);
				/* a dry terrace edge far from the water: waterfall
				 * candidates that never emit */
				if (j >= ny - 24 && i >= 2 * nx / 3)
					z -= 4.0;
				if (i < nx / 3 && fabs(j - 0.5 * ny) <= 14)
					z = 12.0 - 0.002 * i +
					    (fabs(j - 0.5 * ny) > 6 ? 1.5 : 0.0);
				h = i < nx / 3 && fabs(j - 0.5 * ny) <= 6 ?
					    12.5 - 0.002 * i - z : 0.0;
				break;
			default:
				/* a 2 cm film on a 20 % slope draining out of
				 * the open south edge */
				z = 40.0 - 0.2 * j + 0.02 * bumps(i, j);
				h = j >= 2 * ny / 3 ? 0.02 : 0.0;
				break;
			}
			r->z[k] = (float)z;
			r->h0[k] = (float)(h > 0 ? h : 0.0);
		}
	switch (kind) {
	case SC_SPREAD:
		sim->maccormack = 1;
		r->edges[WB_NORTH].free_slip = 0;
		r->edges[WB_WEST].free_slip = 1;
		r->edges[WB_EAST].kind = WB_EDGE_OPEN;
		r->edges[WB_SOUTH].kind = WB_EDGE_LEVEL;
		r->edges[WB_SOUTH].level = 1.0; /* below the terrain: dry */
		break;
	case SC_RIVER: {
		r->edges[WB_EAST].kind = WB_EDGE_OPEN;
		/* the river's spring at the channel head */
		for (int j = ny / 2 - 3; j < ny / 2 + 3; j++)
			for (int i = 1; i < 5; i++) {
				r->src[i + (size_t)j * nx] = 0.05f;
				r->flags[i + (size_t)j * nx] |= WB_CELL_SOURCE;
			}
		/* a spring in a dry field, on a block corner */
		for (int j = 30; j < 34; j++)
			for (int i = 62; i < 66; i++) {
				r->src[i + (size_t)j * nx] = 0.02f;
				r->flags[i + (size_t)j * nx] |= WB_CELL_SOURCE;
			}
		/* a sink and a fixed-level pond in the channel, a modifier */
		int ci = 3 * nx / 4;
		int cj = (int)(0.5 * ny + 10.0 * sin(6.2831853 * ci / nx));
		r->flags[ci + (size_t)cj * nx] |= WB_CELL_SINK_ALL;
		ci = nx / 2;
		cj = (int)(0.5 * ny + 10.0 * sin(6.2831853 * ci / nx));
		for (int j = cj - 2; j <= cj + 2; j++)
			for (int i = ci; i < ci + 4; i++) {
				size_t k = i + (size_t)j * nx;
				r->flags[k] |= WB_CELL_FIXED;
				r->fixed_level[k] = r->z[k] + r->h0[k] + 0.05f;
			}
		ci = nx / 4;
		cj = (int)(0.5 * ny + 10.0 * sin(6.2831853 * ci / nx));
		for (int j = cj - 3; j <= cj + 3; j++)
			for (int i = ci; i < ci + 6; i++) {
				size_t k = i + (size_t)j * nx;
				r->mod_u[k] = 0.3f;
				r->mod_v[k] = 0.05f;
				r->mod_k[k] = 0.2f;
				r->flags[k] |= WB_CELL_MODIFIER;
			}
		/* a blocker deck across the channel */
		ci = nx / 8;
		cj = (int)(0.5 * ny + 10.0 * sin(6.2831853 * ci / nx));
		for (int j = cj - 8; j <= cj + 8; j++)
			for (int i = ci; i < ci + 3; i++) {
				size_t k = i + (size_t)j * nx;
				r->block_bot[k] = 10.9f;
				r->block_top[k] = 12.0f;
				r->flags[k] |= WB_CELL_BLOCKER;
			}
		break;
	}
	case SC_FALL:
		sim->maccormack = 1;
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].discharge = 0.5;
		r->edges[WB_EAST].kind = WB_EDGE_OPEN;
		break;
	default:
		sim->dry_depth = 0.01;
		sim->foam_trapped = sim->foam_steep = 0; /* foam off */
		r->edges[WB_SOUTH].kind = WB_EDGE_OPEN;
		break;
	}
}

/* ---- lockstep comparison ------------------------------------------------------ */

struct fields {
	float *h, *u, *v, *foam;
	double t, dt;
};

static void fields_alloc(struct fields *f, long n)
{
	f->h = calloc((size_t)n, sizeof(float));
	f->u = calloc((size_t)n, sizeof(float));
	f->v = calloc((size_t)n, sizeof(float));
	f->foam = calloc((size_t)n, sizeof(float));
	assert_non_null(f->h);
	assert_non_null(f->u);
	assert_non_null(f->v);
	assert_non_null(f->foam);
}

static void fields_free(struct fields *f)
{
	free(f->h);
	free(f->u);
	free(f->v);
	free(f->foam);
}

/* first differing index of two float arrays, -1 when byte-identical */
static long first_diff(const float *a, const float *b, long n)
{
	if (!memcmp(a, b, (size_t)n * sizeof(float)))
		return -1;
	for (long k = 0; k < n; k++)
		if (memcmp(&a[k], &b[k], sizeof(float)))
			return k;
	return -1;
}

static void same_fields(const struct fields *a, const struct fields *b,
			long n, int foam, int W, const char *what, long step)
{
	const float *fa[] = { a->h, a->u, a->v, a->foam };
	const float *fb[] = { b->h, b->u, b->v, b->foam };
	const char *nm[] = { "h", "u", "v", "foam" };
	for (int q = 0; q < (foam ? 4 : 3); q++) {
		long k = first_diff(fa[q], fb[q], n);
		if (k >= 0)
			print_message("  %s, step %ld: %s differs at padded (%ld, %ld): %.9g vs %.9g\n",
				      what, step, nm[q], k % W, k / W, fa[q][k], fb[q][k]);
		assert_true(k < 0);
	}
	assert_true(a->t == b->t);
	assert_true(a->dt == b->dt);
}

/* Steps the scene sparse and dense on the device and on the CPU, compares
 * every 100 steps; returns the sparse run's active-block fractions over
 * the first and the last 100 steps. */
static void lockstep(int kind, long steps, double *first, double *last)
{
	struct wb_raster r;
	struct wb_sim sim;
	scene(&r, &sim, kind);
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	assert_int_equal(cl_env_open(dev_index(), &e, &d), WB_OK);
	struct cl_swe *sp = NULL, *de = NULL;
	assert_int_equal(cl_swe_create(e, &r, &sim, 2, &sp, &d), WB_OK);
	assert_int_equal(cl_swe_create(e, &r, &sim, 2, &de, &d), WB_OK);
	assert_int_equal(cl_swe_set_sparse(sp, 1), 1);
	assert_int_equal(cl_swe_set_sparse(de, 0), 0);
	struct swe_ctx cpu;
	assert_int_equal(swe_init(&cpu, &r, &sim, 2, &d), WB_OK);
	const long n = cpu.ncell;
	struct fields fs, fd, fc;
	fields_alloc(&fs, n);
	fields_alloc(&fd, n);
	long nblk = 0;
	long long a1 = 0;
	const char *names[] = { "spread", "river", "fall", "drain" };
	for (long k = 0; k < steps;) {
		/* compare after the first step, then every 100 */
		long run = k == 0 ? 1 : k == 1 ? 99 : 100;
		for (long q = 0; q < run; q++) {
			enum wb_status st = swe_step(&cpu, &d);
			if (st != WB_OK)
				print_message("cpu: %s\n", d.v[d.n - 1].msg);
			assert_int_equal(st, WB_OK);
		}
		assert_int_equal(cl_swe_run(sp, run, &d), WB_OK);
		assert_int_equal(cl_swe_run(de, run, &d), WB_OK);
		k += run;
		assert_int_equal(cl_swe_fields(sp, fs.h, fs.u, fs.v, fs.foam, &fs.t,
					       &fs.dt, &d), WB_OK);
		assert_int_equal(cl_swe_fields(de, fd.h, fd.u, fd.v, fd.foam, &fd.t,
					       &fd.dt, &d), WB_OK);
		fc.h = cpu.h;
		fc.u = cpu.u;
		fc.v = cpu.v;
		fc.foam = cpu.foam;
		fc.t = cpu.t;
		fc.dt = cpu.dt;
		int foam = cpu.foam_on;
		same_fields(&fs, &fd, n, foam, cpu.W, "sparse vs dense device", k);
		same_fields(&fs, &fc, n, foam, cpu.W, "sparse device vs cpu", k);
		long long acc;
		cl_swe_blocks(sp, &nblk, &acc);
		if (k == 1)
			*first = (double)acc / nblk;
		*last = (double)(acc - a1) / ((double)run * nblk);
		a1 = acc;
	}
	print_message("  %s: %ld steps identical (sparse, dense, cpu; particles %ld), active blocks %.1f %% of %ld at the first step, %.1f %% over the last 100\n",
		      names[kind], steps, cl_swe_particles(sp), 100 * *first,
		      nblk, 100 * *last);
	fields_free(&fs);
	fields_free(&fd);
	swe_release(&cpu);
	cl_swe_free(sp);
	cl_swe_free(de);
	cl_env_free(e);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

static void test_spread(void **state)
{
	(void)state;
	double a, b;
	lockstep(SC_SPREAD, 400, &a, &b);
	assert_true(a < 0.3);   /* a corner pool: few blocks at first */
	assert_true(b > 2 * a); /* the front wakes blocks */
}

static void test_river(void **state)
{
	(void)state;
	double a, b;
	lockstep(SC_RIVER, 400, &a, &b);
	assert_true(a < 0.7 && b < 0.7); /* the dry banks sleep */
}

static void test_fall(void **state)
{
	(void)state;
	double a, b;
	lockstep(SC_FALL, 400, &a, &b);
	assert_true(a < 0.7);
}

static void test_drain(void **state)
{
	(void)state;
	double a, b;
	lockstep(SC_DRAIN, 600, &a, &b);
	assert_true(b < a); /* drained blocks went to sleep */
}

/* ---- the solver entry: window means, books, thread count ------------------- */

static void solve(const struct wb_raster *r, const struct wb_sim *sim,
		  int opencl, int dense, int threads, struct wb_state *out,
		  struct wb_solve_report *rep)
{
	struct wb_solve_opts o = { 0 };
	o.threads = threads;
	o.cl_device = dev_index();
	o.opencl = opencl;
	struct wb_diags d;
	wb_diags_init(&d);
	if (dense)
		setenv("WB_SWE_DENSE", "1", 1);
	enum wb_status st = opencl ? cl_swe_solve(r, sim, &o, out, rep, &d) :
				     swe_solve(r, sim, &o, out, rep, &d);
	unsetenv("WB_SWE_DENSE");
	for (int k = 0; k < d.n; k++)
		print_message("%s\n", d.v[k].msg);
	assert_int_equal(st, WB_OK);
	wb_diags_release(&d);
}

/* books: exact, or (the CPU's, summed in another order) to 1e-13 */
static int same_sum(double a, double b, int exact)
{
	return exact ? a == b : fabs(a - b) <= 1e-13 * fmax(fabs(a), 1.0);
}

static void same_state(const struct wb_state *a, const struct wb_state *b,
		       const struct wb_solve_report *ra,
		       const struct wb_solve_report *rb, int exact)
{
	size_t n = (size_t)a->nx * a->ny * sizeof(float);
	print_message("  in %.17g / %.17g, out %.17g / %.17g, final %.17g / %.17g, clamped %ld / %ld\n",
		      ra->vol_in, rb->vol_in, ra->vol_out, rb->vol_out,
		      ra->vol_final, rb->vol_final, ra->clamped, rb->clamped);
	assert_memory_equal(a->h, b->h, n);
	assert_memory_equal(a->u, b->u, n);
	assert_memory_equal(a->v, b->v, n);
	assert_true((a->foam != NULL) == (b->foam != NULL));
	if (a->foam)
		assert_memory_equal(a->foam, b->foam, n);
	assert_int_equal(ra->steps, rb->steps);
	assert_int_equal(ra->converged, rb->converged);
	assert_true(memcmp(&ra->residual, &rb->residual, sizeof(double)) == 0);
	assert_true(ra->sim_time == rb->sim_time);
	assert_true(same_sum(ra->vol_in, rb->vol_in, exact));
	assert_true(same_sum(ra->vol_out, rb->vol_out, exact));
	assert_true(same_sum(ra->vol_final, rb->vol_final, exact));
	assert_int_equal(ra->clamped, rb->clamped);
}

static void test_solve_means(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_sim sim;
	scene(&r, &sim, SC_RIVER);
	sim.window = 100;
	sim.max_steps = 800;
	sim.tolerance = 0.05;
	struct wb_state s1, s2, s3, s4;
	struct wb_solve_report r1, r2, r3, r4;
	solve(&r, &sim, 1, 0, 2, &s1, &r1);
	solve(&r, &sim, 1, 1, 2, &s2, &r2);
	solve(&r, &sim, 1, 0, 1, &s3, &r3);
	solve(&r, &sim, 0, 0, 2, &s4, &r4);
	print_message("  river to steady: %ld steps (converged %d, residual %.3e); sparse = dense = 1 thread = cpu\n",
		      r1.steps, r1.converged, r1.residual);
	assert_true(r1.steps >= 2 * sim.window); /* window means were taken */
	same_state(&s1, &s2, &r1, &r2, 1);
	same_state(&s1, &s3, &r1, &r3, 1);
	same_state(&s1, &s4, &r1, &r4, 0);
	wb_state_free(&s1);
	wb_state_free(&s2);
	wb_state_free(&s3);
	wb_state_free(&s4);
	wb_raster_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_river),
		cmocka_unit_test(test_fall),
		cmocka_unit_test(test_drain),
		cmocka_unit_test(test_solve_means),
	};
	if (getenv("WB_TEST_ONLY"))
		cmocka_set_test_filter(getenv("WB_TEST_ONLY"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
