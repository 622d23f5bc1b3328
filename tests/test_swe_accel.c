/*
 * test_swe_accel.c - the SWE steady acceleration (simulation.
 * steady_acceleration "low_froude", sim.mass_scale > 0; docs/hydrology.md
 * "Steady acceleration"):
 *   - its steady states are the plain solver's: on SWASHES' subcritical
 *     bump and both MacDonald channels (the cases of test_validation.c)
 *     the accelerated steady depth meets the analytic limits of
 *     test_validation.c (1 % max) and lies within 0.2 % of the plain
 *     solver's steady depth, cell by cell; the water balance within
 *     1e-5 there (float depths over 24,000 steps);
 *   - the water balance stays exact (the continuity step, the sources and
 *     the edge volumes all run on eps dt): relative balance error below
 *     1e-6 on a spring-fed valley with an open edge;
 *   - a lake at rest stays at rest to the last bit (a fixed point of both
 *     updates);
 *   - the same bytes for 1 and 2 threads, and for the block-sparse and the
 *     dense step (WB_SWE_DENSE=1);
 *   - the option: "auto", "off", "low_froude" are read, anything else is
 *     an error naming simulation.steady_acceleration with its line; the
 *     bake uses it only for a SWE run to steady with an automatic dt,
 *     warns (naming the option) where "low_froude" cannot apply, and
 *     reports what it used (wb_solve_report.steady_accel; the manifest's
 *     solver.steady_acceleration).
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

#include "analytic.h"
#include "bake.h"
#include "solve.h"
#include "swe.h"
#include "util.h"
#include "wbake.h"

#define TMP "tests/tmp/test_swe_accel"
#define ACCEL 0.5 /* the bake's mass_scale (src/bake.c) */

static void show(const struct wb_diags *d)
{
	char buf[2048];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		print_message("  %s\n", buf);
	}
}

static struct wb_sim sim_base(double mass_scale)
{
	struct wb_sim s;
	memset(&s, 0, sizeof(s));
	s.solver = WB_SOLVER_SWE;
	s.viscosity = 0.01;
	s.max_steps = 100000;
	s.tolerance = 1e-5;
	s.window = 1000;
	s.dry_depth = 1e-4;
	s.seed = 1;
	s.maccormack = 1;
	s.mass_scale = mass_scale;
	return s;
}

static enum wb_status solve(const struct wb_raster *r, const struct wb_sim *sim,
			    long steps, int threads, struct wb_state *st,
			    struct wb_solve_report *rep)
{
	struct wb_solve_opts o;
	struct wb_diags d;
	memset(&o, 0, sizeof(o));
	o.steps = steps;
	o.threads = threads;
	memset(st, 0, sizeof(*st));
	memset(rep, 0, sizeof(*rep));
	wb_diags_init(&d);
	enum wb_status s = swe_solve(r, sim, &o, st, rep, &d);
	if (s != WB_OK)
		show(&d);
	wb_diags_release(&d);
	return s;
}

/* ---- the analytic steady cases ------------------------------------------ */

/* A 1D strip: nx x 3 cells, north and south periodic. */
static void strip(struct wb_raster *r, int nx, double dx)
{
	assert_int_equal(wb_raster_alloc(r, nx, 3, dx), WB_OK);
	r->edges[WB_NORTH].kind = WB_EDGE_PERIODIC;
	r->edges[WB_SOUTH].kind = WB_EDGE_PERIODIC;
}

/* kind 0: the subcritical bump (q 4.42, h_out 2 m); 1, 2: MacDonald's
 * sub- and supercritical channels (q 2, n 0.033); as test_validation.c */
static void setup_case(int kind, struct wb_raster *r, struct wb_sim *sim)
{
	const int nx = 400;
	if (kind == 0) {
		const double dx = 25.0 / nx;
		strip(r, nx, dx);
		for (int j = 0; j < 3; j++)
			for (int i = 0; i < nx; i++) {
				size_t k = i + (size_t)j * nx;
				r->z[k] = (float)an_bump_z((i + 0.5) * dx);
				r->h0[k] = (float)(2.0 - r->z[k]);
			}
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].discharge = 4.42;
		r->edges[WB_EAST].kind = WB_EDGE_LEVEL;
		r->edges[WB_EAST].level = 2.0;
		sim->viscosity = 0.001;
		sim->max_steps = 80000;
		return;
	}
	const int super = kind == 2;
	const double dx = 2.5, q = 2.0, n = 0.033;
	strip(r, nx, dx);
	for (int i = 0; i < nx; i++) {
		double x = (i + 0.5) * dx;
		for (int j = 0; j < 3; j++) {
			r->z[i + (size_t)j * nx] = (float)an_mcd_z(super, q, n, x);
			r->h0[i + (size_t)j * nx] = (float)an_mcd_h(super, x);
		}
	}
	r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r->edges[WB_WEST].discharge = q;
	if (super) {
		r->edges[WB_WEST].depth = an_mcd_h(1, 0);
		r->edges[WB_EAST].kind = WB_EDGE_OPEN;
	} else {
		r->edges[WB_EAST].kind = WB_EDGE_LEVEL;
		double xg = 1000.0 + 0.5 * dx;
		r->edges[WB_EAST].level = an_mcd_h(0, xg) + an_mcd_z(0, q, n, xg);
	}
	sim->manning = n;
}

static double exact(int kind, double x)
{
	return kind == 0 ? an_bump_depth(0, 4.42, 2.0, 0, x) :
			   an_mcd_h(kind == 2, x);
}

static void steady_case(int kind)
{
	static const char *const names[] = { "bump subcritical",
					     "MacDonald subcritical",
					     "MacDonald supercritical" };
	struct wb_state st[2];
	struct wb_solve_report rep[2];
	struct wb_raster r;
	for (int a = 0; a < 2; a++) {
		struct wb_sim sim = sim_base(a ? ACCEL : 0);
		setup_case(kind, &r, &sim);
		assert_int_equal(solve(&r, &sim, 0, 1, &st[a], &rep[a]), WB_OK);
		if (a == 0)
			wb_raster_free(&r);
	}
	const int nx = r.nx;
	double dx = r.dx, emax[2] = { 0, 0 }, dmax = 0;
	for (int i = 0; i < nx; i++) {
		double x = (i + 0.5) * dx, he = exact(kind, x);
		double h0 = st[0].h[i + (size_t)nx], h1 = st[1].h[i + (size_t)nx];
		emax[0] = fmax(emax[0], fabs(h0 - he) / he);
		emax[1] = fmax(emax[1], fabs(h1 - he) / he);
		dmax = fmax(dmax, fabs(h1 - h0) / h0);
	}
	print_message("ACCEL | %s | plain %ld steps (dt %.4g s, error %.3g %%, balance %.2g) | "
		      "accelerated %ld steps (dt %.4g s, error %.3g %%, balance %.2g) | "
		      "depth difference %.3g %%\n",
		      names[kind], rep[0].steps, rep[0].dt, 100 * emax[0],
		      rep[0].balance_error, rep[1].steps, rep[1].dt,
		      100 * emax[1], rep[1].balance_error, 100 * dmax);
	assert_true(rep[0].converged);
	assert_true(rep[1].converged);
	assert_true(emax[1] <= 0.01);
	assert_true(dmax <= 0.002);
	/* float depths over tens of thousands of steps: the plain solver's
	   own balance is of the order of 1e-6 on these cases */
	assert_true(rep[1].balance_error < 1e-5);
	/* the acceleration did something where the waves held the step
	   (subcritical; in the supercritical channel |u| > sqrt(g h) holds
	   it either way) */
	if (kind != 2)
		assert_true(rep[1].dt > rep[0].dt * 1.2);
	for (int a = 0; a < 2; a++)
		wb_state_free(&st[a]);
	wb_raster_free(&r);
}

static void test_bump_sub(void **state) { (void)state; steady_case(0); }
static void test_macdonald_sub(void **state) { (void)state; steady_case(1); }
static void test_macdonald_super(void **state) { (void)state; steady_case(2); }

/* ---- balance, rest, bytes ---------------------------------------------- */

/* nx x ny cells of 1 m: a valley sloping south to an open edge, a deep
 * pond in it, a spring at its head; walls elsewhere */
static void valley(struct wb_raster *r, int nx, int ny)
{
	assert_int_equal(wb_raster_alloc(r, nx, ny, 1.0), WB_OK);
	r->edges[WB_WEST].kind = WB_EDGE_WALL;
	r->edges[WB_EAST].kind = WB_EDGE_WALL;
	r->edges[WB_NORTH].kind = WB_EDGE_WALL;
	r->edges[WB_SOUTH].kind = WB_EDGE_OPEN;
	double c = nx / 2.0;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double x = i + 0.5, y = j + 0.5;
			double z = 10 - 0.02 * y + 0.2 * fabs(x - c);
			double d = hypot(x - c, y - ny / 2.0);
			if (d < nx / 6.0)
				z -= 3.0 * (1 - d * d / (nx * nx / 36.0));
			r->z[k] = (float)z;
			/* the pond full to its rim, the channel wet */
			double eta = 10 - 0.02 * (ny / 2.0 + nx / 6.0) + 0.05;
			r->h0[k] = (float)(eta > z ? eta - z : fabs(x - c) < 2 ? 0.05 : 0);
			if (hypot(x - c, y - 4) < 2)
				r->src[k] = 0.02f;
		}
}

static void test_balance(void **state)
{
	(void)state;
	struct wb_raster r;
	valley(&r, 48, 96);
	struct wb_sim sim = sim_base(ACCEL);
	sim.manning = 0.03;
	struct wb_state st;
	struct wb_solve_report rep;
	assert_int_equal(solve(&r, &sim, 3000, 1, &st, &rep), WB_OK);
	double vin = rep.vol_in, vout = rep.vol_out;
	print_message("balance: in %.4f m3, out %.4f m3, final %.4f m3, error %.3g\n",
		      vin, vout, rep.vol_final, rep.balance_error);
	assert_true(vin > 0.5 && vout > 0);
	assert_true(rep.balance_error < 1e-6);
	wb_state_free(&st);
	wb_raster_free(&r);
}

/* a closed basin at rest: the accelerated solver leaves it as it is */
static void test_rest(void **state)
{
	(void)state;
	struct wb_raster r;
	const int nx = 40, ny = 30;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, 1.0), WB_OK);
	for (int e = 0; e < 4; e++)
		r.edges[e].kind = WB_EDGE_WALL;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r.z[k] = (float)(0.01 * (i - 20) * (i - 20) + 0.02 * (j - 15) * (j - 15));
			r.h0[k] = r.z[k] < 3.0f ? 3.0f - r.z[k] : 0.0f;
		}
	struct wb_sim sim = sim_base(ACCEL);
	sim.manning = 0.03;
	struct wb_state st;
	struct wb_solve_report rep;
	assert_int_equal(solve(&r, &sim, 500, 1, &st, &rep), WB_OK);
	for (size_t k = 0; k < (size_t)nx * ny; k++) {
		assert_true(st.h[k] == r.h0[k]);
		assert_true(st.u[k] == 0.0f && st.v[k] == 0.0f);
	}
	wb_state_free(&st);
	wb_raster_free(&r);
}

static void same_bytes(const struct wb_state *a, const struct wb_state *b)
{
	size_t n = (size_t)a->nx * a->ny * sizeof(float);
	assert_memory_equal(a->h, b->h, n);
	assert_memory_equal(a->u, b->u, n);
	assert_memory_equal(a->v, b->v, n);
}

static void test_bytes(void **state)
{
	(void)state;
	/* 512 x 512: swe_threads_for() allows 2 threads from 256 Ki cells */
	struct wb_raster r;
	valley(&r, 512, 512);
	struct wb_sim sim = sim_base(ACCEL);
	sim.manning = 0.03;
	struct wb_state st[3];
	struct wb_solve_report rep[3];
	assert_int_equal(solve(&r, &sim, 150, 1, &st[0], &rep[0]), WB_OK);
	assert_int_equal(solve(&r, &sim, 150, 2, &st[1], &rep[1]), WB_OK);
	setenv("WB_SWE_DENSE", "1", 1);
	assert_int_equal(solve(&r, &sim, 150, 2, &st[2], &rep[2]), WB_OK);
	unsetenv("WB_SWE_DENSE");
	same_bytes(&st[0], &st[1]);
	same_bytes(&st[0], &st[2]);
	assert_true(rep[0].sim_time == rep[1].sim_time &&
		    rep[0].sim_time == rep[2].sim_time);
	for (int a = 0; a < 3; a++)
		wb_state_free(&st[a]);
	wb_raster_free(&r);
}

/* ---- the option ---------------------------------------------------------- */

static enum wb_status parse_accel(const char *value, int *accel,
				  struct wb_diags *d)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "{\"name\": \"t\", \"version\": 1,\n"
		 " \"terrain\": {\"heightmap\": \"t.r32f\", \"format\": \"r32f\", \"size\": [8, 8],\n"
		 "   \"metres_per_pixel\": 1, \"height_scale\": 1, \"height_offset\": 0},\n"
		 " \"boundaries\": {\"south\": \"open\"},\n"
		 " \"materials\": [{\"id\": 1, \"name\": \"w\", \"kind\": \"river\"}],\n"
		 " \"sources\": [{\"type\": \"spring\", \"point\": [4, 4], \"radius\": 1,\n"
		 "   \"discharge\": 0.1, \"material\": \"w\"}],\n"
		 " \"simulation\": {\"solver\": \"swe\",\n"
		 "   %s%s}}\n",
		 value ? "\"steady_acceleration\": " : "\"window\": 100",
		 value ? value : "");
	struct wb_scene sc;
	enum wb_status st = wb_scene_parse(text, strlen(text), "t.json", NULL, &sc, d);
	*accel = st == WB_OK ? sc.sim.steady_accel : -99;
	wb_scene_free(&sc);
	return st;
}

static void test_option(void **state)
{
	(void)state;
	struct wb_diags d;
	int a;
	const char *bad[] = { "\"on\"", "1", "true", "null", "[\"off\"]" };
	wb_diags_init(&d);
	assert_int_equal(parse_accel(NULL, &a, &d), WB_OK);
	assert_int_equal(a, -1);
	assert_int_equal(parse_accel("\"auto\"", &a, &d), WB_OK);
	assert_int_equal(a, -1);
	assert_int_equal(parse_accel("\"off\"", &a, &d), WB_OK);
	assert_int_equal(a, 0);
	assert_int_equal(parse_accel("\"low_froude\"", &a, &d), WB_OK);
	assert_int_equal(a, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int from = d.n;
		assert_int_equal(parse_accel(bad[i], &a, &d), WB_EINPUT);
		int named = 0;
		for (int k = from; k < d.n; k++)
			named |= d.v[k].path &&
				 strcmp(d.v[k].path, "simulation.steady_acceleration") == 0 &&
				 d.v[k].line == 9;
		if (!named)
			show(&d);
		assert_true(named);
	}
	wb_diags_release(&d);
}

/* a 32 x 64 valley scene (SWE, a spring, a south outlet) */
static const char *write_scene(void)
{
	static const char *path = TMP "/valley.json";
	const int nx = 32, ny = 64;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	unsigned char *b = malloc((size_t)nx * ny * 4);
	assert_non_null(b);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			float z = (float)(10 - 0.02 * j + 0.2 * fabs(i + 0.5 - nx / 2.0));
			uint32_t u;
			memcpy(&u, &z, 4);
			for (int k = 0; k < 4; k++)
				b[4 * (i + j * nx) + k] = (unsigned char)(u >> (8 * k));
		}
	assert_int_equal(wb_write_file_atomic(TMP "/valley.r32f", b, (size_t)nx * ny * 4, &d),
			 WB_OK);
	free(b);
	char text[1024];
	snprintf(text, sizeof(text),
		 "{\"name\": \"valley\", \"version\": 1,\n"
		 " \"terrain\": {\"heightmap\": \"valley.r32f\", \"format\": \"r32f\", \"size\": [%d, %d],\n"
		 "   \"metres_per_pixel\": 1, \"height_scale\": 1, \"height_offset\": 0},\n"
		 " \"boundaries\": {\"west\": \"wall\", \"east\": \"wall\", \"north\": \"wall\", \"south\": \"open\"},\n"
		 " \"materials\": [{\"id\": 1, \"name\": \"w\", \"kind\": \"river\"}],\n"
		 " \"sources\": [{\"type\": \"spring\", \"point\": [16, 6], \"radius\": 2,\n"
		 "   \"discharge\": 0.1, \"material\": \"w\"}],\n"
		 " \"simulation\": {\"solver\": \"swe\", \"manning\": 0.04,\n"
		 "   \"max_steps\": 300, \"window\": 100}}\n",
		 nx, ny);
	assert_int_equal(wb_write_file_atomic(path, text, strlen(text), &d), WB_OK);
	wb_diags_release(&d);
	return path;
}

/* Bake the scene with the option set to accel (-1 auto, 0 off, 1
 * low_froude), the solver, a user dt and --steps as given; returns whether
 * the run used the acceleration, *warned whether a warning named the
 * option. */
static int bake_with(int accel, int solver, double dt, long steps, int *warned)
{
	struct wb_bake b;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_bake_load(&b, write_scene(), &d), WB_OK);
	b.sc.sim.steady_accel = accel;
	b.sc.sim.solver = (enum wb_solver_kind)solver;
	b.sc.sim.dt = dt;
	struct wb_solve_opts o = { 0 };
	o.threads = 1;
	o.steps = steps;
	enum wb_status st = wb_bake_solve(&b, &o, &d);
	if (st)
		show(&d);
	assert_int_equal(st, WB_OK);
	*warned = 0;
	for (int k = 0; k < d.n; k++)
		*warned |= d.v[k].sev == WB_SEV_WARNING && d.v[k].path &&
			   strcmp(d.v[k].path, "simulation.steady_acceleration") == 0;
	int used = b.rep.steady_accel;
	/* used: the solver ran on the longer step */
	if (used)
		assert_true(b.rep.dt > 0);
	wb_bake_release(&b);
	wb_diags_release(&d);
	return used;
}

static void test_bake_rules(void **state)
{
	(void)state;
	int w;
	/* a SWE run to steady: used when asked, not by "auto" or "off" */
	assert_int_equal(bake_with(1, WB_SOLVER_SWE, 0, 0, &w), 1);
	assert_false(w);
	assert_int_equal(bake_with(-1, WB_SOLVER_SWE, 0, 0, &w), 0);
	assert_false(w);
	assert_int_equal(bake_with(0, WB_SOLVER_SWE, 0, 0, &w), 0);
	assert_false(w);
	/* where it cannot apply: off, with a warning naming the option */
	assert_int_equal(bake_with(1, WB_SOLVER_SWE, 0, 50, &w), 0);
	assert_true(w);
	assert_int_equal(bake_with(1, WB_SOLVER_SWE, 0.01, 0, &w), 0);
	assert_true(w);
	assert_int_equal(bake_with(1, WB_SOLVER_LBM, 0, 50, &w), 0);
	assert_true(w);
	/* "auto" where it cannot apply says nothing */
	assert_int_equal(bake_with(-1, WB_SOLVER_LBM, 0, 50, &w), 0);
	assert_false(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_option),
		cmocka_unit_test(test_bake_rules),
		cmocka_unit_test(test_rest),
		cmocka_unit_test(test_balance),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_bump_sub),
		cmocka_unit_test(test_macdonald_sub),
		cmocka_unit_test(test_macdonald_super),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
