/*
 * test_lbm.c - validation of the LBM-SWE solver (lbm.c) against analytic
 * solutions and conservation laws. Every scene is built here by hand as a
 * struct wb_raster.
 *
 *  - lake at rest over an immersed and over an emerging bump (wet/dry
 *    island), 10,000 steps: the surface stays flat (|eta - eta0| < 1e-5 m)
 *    and the largest speed stays below 1e-5 m/s;
 *  - closed basin with an initial Gaussian hump: total volume drifts by less
 *    than 1e-6 relative over 10,000 steps (the fixed-point storage makes
 *    it exact: the reported balance error is 0);
 *  - steady subcritical flow over a bump (Zhou 2004, 7.2.1; SWASHES):
 *    surface within 1% of the depth of the Bernoulli solution;
 *  - flow past a cylinder at Re = 100: Strouhal number within 15% of
 *    Williamson's fit St = 0.2175 - 5.1064 / Re (0.1664);
 *  - determinism: byte-identical fields for 1 and 2 threads, and the
 *    kernel's fast path bit-identical to its general path;
 *  - wet/dry: a dam break onto a dry slope keeps h >= 0, finite, and the
 *    mass balance closes;
 *  - sources and sinks: the reported volume in / out matches the rates;
 *  - a bridge deck above the water lets the discharge pass below it, a deck
 *    reaching into the water is a wall (flow stops, water is stored).
 * WB_TEST_QUICK=1 (set it for sanitizer builds) shortens the long runs.
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

#include "lbm.h"
#include "solve.h"
#include "wbake.h"

static int quick(void)
{
	const char *q = getenv("WB_TEST_QUICK");
	return q && *q && *q != '0';
}

/* ---- raster helpers ---------------------------------------------------- */

static void print_diags(const struct wb_diags *d)
{
	char buf[512];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		printf("  %s\n", buf);
	}
}

static struct wb_sim sim_default(void)
{
	struct wb_sim s;
	memset(&s, 0, sizeof(s));
	s.solver = WB_SOLVER_LBM;
	s.viscosity = 0.01;
	s.max_steps = 10000;
	s.tolerance = 1e-6;
	s.window = 500;
	s.dry_depth = 1e-3;
	return s;
}

/* ---- lake at rest ------------------------------------------------------ */

static void lake_at_rest(double top)
{
	const int N = 64;
	const double dx = 1.0, level = 1.0;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, N, N, dx), WB_OK);
	int dry = 0;
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			double x = (i + 0.5 - N / 2.0) * dx, y = (j + 0.7 - N / 2.0) * dx;
			double z = top * exp(-(x * x + y * y) / 60.0) +
				   0.1 * sin(0.3 * i) * cos(0.2 * j);
			size_t k = i + (size_t)j * N;
			r.z[k] = (float)z;
			r.h0[k] = (float)(level - z > 0 ? level - z : 0);
			dry += r.h0[k] == 0;
		}
	if (top > level)
		assert_true(dry > 10); /* the island really emerges */
	r.edges[WB_EAST].free_slip = 1; /* one free-slip wall too */
	struct wb_sim sim = sim_default();
	sim.manning = 0.03;
	sim.viscosity = 0.1;  /* eddy viscosity of a 1 m grid */
	sim.dry_depth = 0.01; /* shoreline films under 1 cm stay put */
	struct wb_solve_opts o = { .threads = 0, .steps = quick() ? 2000 : 10000 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status s = lbm_solve(&r, &sim, &o, &st, &rep, &d);
	assert_int_equal(s, WB_OK);
	assert_int_equal(rep.steps, o.steps);
	double umax = 0, deta = 0;
	for (int k = 0; k < N * N; k++) {
		double sp = hypot(st.u[k], st.v[k]);
		umax = sp > umax ? sp : umax;
		if (r.h0[k] > 0) {
			double e = fabs(st.h[k] + r.z[k] - level);
			deta = e > deta ? e : deta;
		} else {
			assert_true(st.h[k] < sim.dry_depth); /* island stays dry */
		}
	}
	printf("lake at rest (top %.1f m): max speed %.3g m/s, max |eta - eta0| %.3g m, clamped %ld, balance %.3g\n",
	       top, umax, deta, rep.clamped, rep.balance_error);
	assert_true(umax < 1e-5);
	assert_true(deta < 1e-5);
	assert_true(rep.balance_error < 1e-5);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void test_lake_immersed(void **state)
{
	(void)state;
	lake_at_rest(0.6);
}

static void test_lake_emerging(void **state)
{
	(void)state;
	lake_at_rest(1.5);
}

/* ---- closed basin: mass conservation ------------------------------------ */

static void test_basin_mass(void **state)
{
	(void)state;
	const int N = 64;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, N, N, 1.0), WB_OK);
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			double x = i - 20.0, y = j - 30.0;
			size_t k = i + (size_t)j * N;
			r.z[k] = (float)(0.2 * cos(0.1 * i) * sin(0.13 * j));
			r.h0[k] = (float)(1.0 - r.z[k] + 0.5 * exp(-(x * x + y * y) / 20.0));
		}
	struct wb_sim sim = sim_default();
	sim.manning = 0.02;
	struct wb_solve_opts o = { .threads = 0, .steps = quick() ? 2000 : 10000 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_solve(&r, &sim, &o, &st, &rep, &d), WB_OK);
	double v0 = 0, v1 = 0;
	for (int k = 0; k < N * N; k++)
		v0 += r.h0[k];
	v1 = rep.vol_final;
	double drift = fabs(v1 - v0) / v0;
	double umax = 0;
	for (int k = 0; k < N * N; k++)
		umax = fmax(umax, hypot(st.u[k], st.v[k]));
	printf("basin: volume %.9g -> %.9g, drift %.3g, max speed %.3g m/s\n",
	       v0, v1, drift, umax);
	assert_true(umax > 1e-3); /* it really moved */
	assert_true(drift < 1e-6);
	assert_true(fabs(rep.vol_initial - v0) / v0 < 1e-6);
	assert_true(rep.vol_in == 0 && rep.vol_out == 0);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}


/* ---- steady subcritical flow over a bump (Zhou 7.2.1, SWASHES) ---------- */

/* Subcritical root of h + q^2 / (2 g h^2) = E - z (Newton from above). */
static double bernoulli_depth(double q, double E, double z)
{
	double h = E - z;
	for (int it = 0; it < 100; it++) {
		double f = h + q * q / (2 * WB_GRAVITY * h * h) - (E - z);
		double df = 1 - q * q / (WB_GRAVITY * h * h * h);
		double dh = f / df;
		h -= dh;
		if (fabs(dh) < 1e-14)
			break;
	}
	return h;
}

static void test_bump_subcritical(void **state)
{
	(void)state;
	const int nx = 250, ny = 4;
	const double dx = 0.1, q = 4.42, hout = 2.0;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			double x = (i + 0.5) * dx;
			double z = 0.2 - 0.05 * (x - 10) * (x - 10);
			size_t k = i + (size_t)j * nx;
			r.z[k] = (float)(z > 0 ? z : 0);
			r.h0[k] = (float)(hout - r.z[k]);
		}
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].discharge = q;
	r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
	r.edges[WB_EAST].level = hout;
	r.edges[WB_NORTH].kind = WB_EDGE_PERIODIC;
	r.edges[WB_SOUTH].kind = WB_EDGE_PERIODIC;
	struct wb_sim sim = sim_default();
	sim.viscosity = 0.05;
	sim.tolerance = 1e-5;
	sim.window = 1000;
	sim.max_steps = quick() ? 6000 : 60000;
	struct wb_solve_opts o = { .threads = 0 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = lbm_solve(&r, &sim, &o, &st, &rep, &d);
	print_diags(&d);
	assert_int_equal(rc, WB_OK);
	const double E = hout + q * q / (2 * WB_GRAVITY * hout * hout);
	double emax = 0, qerr = 0;
	for (int i = 1; i < nx - 1; i++) { /* closures set the end cells */
		size_t k = i + (size_t)1 * nx;
		double h = bernoulli_depth(q, E, r.z[k]);
		double err = fabs(st.h[k] + r.z[k] - (h + r.z[k])) / h;
		emax = fmax(emax, err);
		qerr = fmax(qerr, fabs(st.h[k] * st.u[k] - q) / q);
	}
	printf("bump: %ld steps (converged %d, residual %.2g), e %.3g m/s, tau %.3f: max surface error %.3g of depth, discharge error %.3g, balance %.2g\n",
	       rep.steps, rep.converged, rep.residual, rep.lattice_speed, rep.tau,
	       emax, qerr, rep.balance_error);
	if (!quick()) {
		assert_true(rep.converged);
		assert_true(emax < 0.01);
		assert_true(qerr < 0.01);
	}
	assert_true(rep.balance_error < 1e-9);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* ---- vortex shedding behind a cylinder (bridge pier) -------------------- */

static void test_cylinder_strouhal(void **state)
{
	(void)state;
	const double dx = 0.1, D = 1.0, U = 0.5, Re = 100, depth = 1.0;
	const int nx = 250, ny = 80;
	const double xc = 6.0, yc = 0.5 * ny * dx + 0.05; /* off centre: breaks symmetry */
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, dx), WB_OK);
	int solid = 0;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double x = (i + 0.5) * dx - xc, y = (j + 0.5) * dx - yc;
			/* a small mound beside the wake breaks the symmetry */
			double bx = x - 1.5 * D, by = y - 0.5 * D;
			r.h0[k] = (float)(depth + 0.02 * exp(-(bx * bx + by * by) / 0.2));
			if (x * x + y * y <= 0.25 * D * D) { /* pier down to the bed */
				r.block_bot[k] = r.z[k];
				r.block_top[k] = 10;
				r.flags[k] |= WB_CELL_BLOCKER;
				solid++;
			}
		}
	assert_true(solid > 60);
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].velocity = U;
	r.edges[WB_WEST].depth = depth;
	r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
	r.edges[WB_EAST].level = depth;
	r.edges[WB_NORTH].free_slip = 1;
	r.edges[WB_SOUTH].free_slip = 1;
	struct wb_sim sim = sim_default();
	sim.viscosity = U * D / Re;
	struct lbm L;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_init(&L, &r, &sim, 0, &d), WB_OK);
	const double T_ref = D / (0.1664 * U); /* Williamson: St = 0.2175 - 5.1064/Re */
	const long spin = (long)(9 * T_ref / L.p.dt), every = 5;
	const long run = (long)((quick() ? 3 : 8) * T_ref / L.p.dt);
	const int probe = (int)((xc + 2 * D) / dx) + (int)(yc / dx) * nx;
	float *h = malloc(sizeof(float) * nx * ny), *u = malloc(sizeof(float) * nx * ny),
	      *v = malloc(sizeof(float) * nx * ny);
	assert_non_null(v);
	assert_int_equal(lbm_step(&L, spin, &d), WB_OK);
	double prev = 0, t_first = -1, t_last = -1, vmax = 0;
	int ups = 0;
	for (long s = 0; s <= run; s += every) {
		assert_int_equal(lbm_step(&L, every, &d), WB_OK);
		lbm_macro(&L, h, u, v);
		double vv = v[probe], t = L.step * L.p.dt;
		vmax = fmax(vmax, fabs(vv));
		if (s > 0 && prev < 0 && vv >= 0) { /* upward zero crossing */
			double tc = t - every * L.p.dt * vv / (vv - prev);
			if (ups == 0)
				t_first = tc;
			t_last = tc;
			ups++;
		}
		prev = vv;
	}
	double T = ups > 1 ? (t_last - t_first) / (ups - 1) : INFINITY;
	double St = D / (T * U), St_ref = 0.2175 - 5.1064 / Re;
	printf("cylinder Re %.0f: tau %.3f, e %.2f m/s, %d periods, T %.2f s, St %.4f (reference %.4f), |v| probe max %.3f m/s\n",
	       Re, L.p.tau, L.p.e, ups - 1, T, St, St_ref, vmax);
	assert_true(vmax > 0.05 * U); /* it sheds */
	assert_true(ups >= 2);
	assert_true(fabs(St - St_ref) < 0.15 * St_ref);
	free(h);
	free(u);
	free(v);
	lbm_release(&L);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* ---- determinism: 1 and 2 threads give the same bytes ------------------- */

static void river_scene(struct wb_raster *r, int nx, int ny)
{
	assert_int_equal(wb_raster_alloc(r, nx, ny, 1.0), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double valley = 0.002 * (j - ny / 2.0) * (j - ny / 2.0);
			r->z[k] = (float)(3.0 - 0.01 * i + valley +
					  0.2 * sin(0.21 * i) * cos(0.17 * j));
			r->h0[k] = (float)(j > ny / 2 - 8 && j < ny / 2 + 8 ? 0.5 : 0);
		}
	for (int j = ny / 2 - 3; j < ny / 2 + 3; j++) /* a spring */
		r->src[2 + (size_t)j * nx] = 0.05f;
	for (int j = ny / 2 - 10; j < ny / 2 + 10; j++) { /* a modifier */
		size_t k = nx / 2 + (size_t)j * nx;
		r->mod_u[k] = 0.3f;
		r->mod_v[k] = 0.1f;
		r->mod_k[k] = 0.5f;
		r->flags[k] |= WB_CELL_MODIFIER;
	}
	r->edges[WB_EAST].kind = WB_EDGE_OPEN;
}

static void test_threads_identical(void **state)
{
	(void)state;
	const int nx = 300, ny = 240; /* > 64k cells: really two threads */
	struct wb_raster r;
	river_scene(&r, nx, ny);
	struct wb_sim sim = sim_default();
	sim.manning = 0.035;
	sim.viscosity = 0.05;
	struct wb_state a, b;
	struct wb_solve_report ra, rb;
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_solve_opts o = { .threads = 1, .steps = quick() ? 50 : 300 };
	assert_int_equal(lbm_solve(&r, &sim, &o, &a, &ra, &d), WB_OK);
	o.threads = 2;
	assert_int_equal(lbm_solve(&r, &sim, &o, &b, &rb, &d), WB_OK);
	size_t n = (size_t)nx * ny * sizeof(float);
	assert_memory_equal(a.h, b.h, n);
	assert_memory_equal(a.u, b.u, n);
	assert_memory_equal(a.v, b.v, n);
	assert_true(ra.vol_final == rb.vol_final && ra.clamped == rb.clamped);
	printf("threads: in %.6g out %.6g balance %.3g, clamped %ld\n", ra.vol_in, ra.vol_out, ra.balance_error, ra.clamped);
	assert_true(ra.vol_in > 0 && ra.balance_error < 1e-12);
	wb_state_free(&a);
	wb_state_free(&b);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* ---- the kernel's fast path and dry-block skip are bit-identical to the
 * general path ------------------------------------------------------------ */

static void test_fast_path_identical(void **state)
{
	(void)state;
	const int nx = 203, ny = 64; /* a tail block too */
	struct wb_raster r;
	river_scene(&r, nx, ny);
	for (int j = 0; j < ny; j++) /* deep, flat-ish water in the middle */
		for (int i = 60; i < 140; i++)
			r.h0[i + (size_t)j * nx] = 2.0f;
	struct wb_sim sim = sim_default();
	sim.manning = 0.03;
	sim.viscosity = 0.02;
	struct lbm a, b;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_init(&a, &r, &sim, 1, &d), WB_OK);
	assert_int_equal(lbm_init(&b, &r, &sim, 1, &d), WB_OK);
	int nfast = 0;
	for (size_t q = 0; q < (size_t)a.H * a.nb; q++)
		nfast += a.blk[q] != 0;
	assert_true(nfast > 100);
	b.no_shortcuts = 1; /* b: general path only */
	assert_int_equal(lbm_step(&a, 300, &d), WB_OK);
	assert_int_equal(lbm_step(&b, 300, &d), WB_OK);
	for (int q = 0; q < LBM_Q; q++)
		assert_memory_equal(a.f[a.cur][q], b.f[b.cur][q],
				    a.ncell * sizeof(int32_t));
	assert_memory_equal(a.h[a.cur], b.h[b.cur], a.ncell * sizeof(float));
	assert_true(a.clamped == b.clamped);
	lbm_release(&a);
	lbm_release(&b);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* ---- the 16-lane (AVX-512) kernel gives the 8-lane kernel's bits ---------
 * Both widths run the same IEEE operations per lane; the wet/dry river
 * (general, fast and dry blocks side by side, positivity fixes, a tail)
 * is stepped with each, and with the general path only, for a BGK and a
 * TRT relaxation time. On a CPU
 * without AVX-512 both runs use 8 lanes and the test still checks that
 * the simd8 switch changes nothing. A fourth run on the unpadded layout
 * (W = nx + 2, rows not aligned; lbm_init pads W to a multiple of 16)
 * must give the same interior cells. */

static void test_simd_widths_identical(void **state)
{
	(void)state;
	const int nx = 203, ny = 64;
	struct wb_raster r;
	river_scene(&r, nx, ny);
	for (int j = 0; j < ny; j++)
		for (int i = 60; i < 140; i++)
			r.h0[i + (size_t)j * nx] = 2.0f;
	struct wb_diags d;
	wb_diags_init(&d);
	const double visc[2] = { 0.3, 0.02 }; /* BGK, TRT (tau < 0.55) */
	for (int t = 0; t < 2; t++) {
		struct wb_sim sim = sim_default();
		sim.manning = 0.03;
		sim.viscosity = visc[t];
		struct lbm a, b, c, u;
		assert_int_equal(lbm_init(&a, &r, &sim, 1, &d), WB_OK);
		assert_int_equal(lbm_init(&b, &r, &sim, 1, &d), WB_OK);
		assert_int_equal(lbm_init(&c, &r, &sim, 1, &d), WB_OK);
		assert_int_equal(lbm_init_layout(&u, &r, &sim, 1, 0, &d), WB_OK);
		assert_true((a.p.omega_m != a.p.omega) == (t == 1));
		assert_true(a.W % 16 == 0 && a.W >= nx + 2 && u.W == nx + 2);
		b.simd8 = 1;
		c.no_shortcuts = 1; /* c: general path only, widest kernel */
		assert_int_equal(lbm_kernel_lanes(&b), 8);
		printf("simd: %d lanes vs 8, tau %.3f (%s)\n", lbm_kernel_lanes(&a),
		       a.p.tau, t ? "TRT" : "BGK");
		assert_int_equal(lbm_step(&a, 300, &d), WB_OK);
		assert_int_equal(lbm_step(&b, 300, &d), WB_OK);
		assert_int_equal(lbm_step(&c, 300, &d), WB_OK);
		assert_int_equal(lbm_step(&u, 300, &d), WB_OK);
		for (int q = 0; q < LBM_Q; q++) {
			for (int j = 0; j < ny; j++)
				assert_memory_equal(a.f[a.cur][q] + 1 + (j + 1) * a.W,
						    u.f[u.cur][q] + 1 + (j + 1) * u.W,
						    nx * sizeof(int32_t));
			assert_memory_equal(a.f[a.cur][q], b.f[b.cur][q],
					    a.ncell * sizeof(int32_t));
			assert_memory_equal(a.f[a.cur][q], c.f[c.cur][q],
					    a.ncell * sizeof(int32_t));
		}
		assert_memory_equal(a.h[a.cur], b.h[b.cur], a.ncell * sizeof(float));
		assert_memory_equal(a.h[a.cur], c.h[c.cur], a.ncell * sizeof(float));
		for (int j = 0; j < ny; j++)
			assert_memory_equal(a.h[a.cur] + 1 + (j + 1) * a.W,
					    u.h[u.cur] + 1 + (j + 1) * u.W,
					    nx * sizeof(float));
		assert_true(a.clamped == b.clamped && a.clamped == c.clamped &&
			    a.clamped == u.clamped && a.clamped > 0);
		lbm_release(&u);
		lbm_release(&a);
		lbm_release(&b);
		lbm_release(&c);
	}
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* ---- a bridge deck: water passes below it, a low deck is a wall ---------- */

static double deck_case(double bottom, double *umean_down)
{
	const int nx = 120, ny = 16;
	const double q = 0.5, depth = 1.0;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, 1.0), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r.h0[k] = (float)depth;
			if (i >= 55 && i < 58) { /* deck across the channel */
				r.block_bot[k] = (float)bottom;
				r.block_top[k] = (float)(bottom + 1);
				r.flags[k] |= WB_CELL_BLOCKER;
			}
		}
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].discharge = q;
	r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
	r.edges[WB_EAST].level = depth;
	r.edges[WB_NORTH].free_slip = 1;
	r.edges[WB_SOUTH].free_slip = 1;
	struct wb_sim sim = sim_default();
	sim.viscosity = 0.05;
	/* 2400 steps also under WB_TEST_QUICK: a small grid, and the flow under
	 * the high deck needs them to settle at the lattice speed chosen now */
	struct wb_solve_opts o = { .threads = 0, .steps = 2400 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = lbm_solve(&r, &sim, &o, &st, &rep, &d);
	print_diags(&d);
	assert_int_equal(rc, WB_OK);
	double qd = 0;
	for (int j = 0; j < ny; j++) {
		size_t k = 90 + (size_t)j * nx;
		qd += st.h[k] * st.u[k] / ny;
	}
	*umean_down = qd;
	assert_true(rep.balance_error < 1e-12);
	double stored = rep.vol_final - rep.vol_initial;
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
	return stored;
}

static void test_bridge_deck(void **state)
{
	(void)state;
	double q_high, q_low;
	double s_high = deck_case(2.0, &q_high); /* deck above the water */
	double s_low = deck_case(0.5, &q_low);   /* deck in the water: wall */
	printf("deck: high deck passes %.3f m^2/s downstream (inflow 0.5), stored %.1f m^3; low deck passes %.4f m^2/s, stored %.1f m^3\n",
	       q_high, s_high, q_low, s_low);
	assert_true(fabs(q_high - 0.5) < 0.1 * 0.5);
	assert_true(fabs(q_low) < 0.02 * 0.5);
	assert_true(s_low > 5 * fabs(s_high) && s_low > 100);
}

/* ---- wet/dry: dam break onto a dry, rough, sloping plain ----------------- */

static void test_wetdry_dam_break(void **state)
{
	(void)state;
	const int nx = 200, ny = 40;
	const double h0 = 1.0;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, 0.5), WB_OK);
	int dry0 = 0;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r.z[k] = (float)(-0.005 * i + 0.02 * sin(0.7 * i + 0.3 * j));
			r.h0[k] = (float)(i < 40 ? h0 - r.z[k] : 0);
			dry0 += r.h0[k] == 0;
		}
	struct wb_sim sim = sim_default();
	sim.manning = 0.03;
	sim.viscosity = 0.05;
	sim.dry_depth = 1e-3;
	struct wb_solve_opts o = { .threads = 0, .steps = quick() ? 500 : 3000 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = lbm_solve(&r, &sim, &o, &st, &rep, &d);
	print_diags(&d);
	assert_int_equal(rc, WB_OK);
	double hmin = 1e9, umax = 0, umax_thin = 0;
	int wet_now = 0;
	for (int k = 0; k < nx * ny; k++) {
		assert_true(isfinite(st.h[k]) && isfinite(st.u[k]) && isfinite(st.v[k]));
		hmin = fmin(hmin, st.h[k]);
		double sp = hypot(st.u[k], st.v[k]);
		umax = fmax(umax, sp);
		if (st.h[k] < 0.01)
			umax_thin = fmax(umax_thin, sp);
		wet_now += r.h0[k] == 0 && st.h[k] > 0.01;
	}
	printf("dam break: min h %.3g m, max speed %.3g m/s (films < 1 cm: %.3g), %d of %d dry cells wetted, clamped %ld, balance %.2g\n",
	       hmin, umax, umax_thin, wet_now, dry0, rep.clamped, rep.balance_error);
	assert_true(hmin >= 0);
	assert_true(wet_now > dry0 / 4); /* the front ran out over the plain */
	/* no spurious fast flow: below the Ritter front speed 2 sqrt(g h0), and
	 * films no faster than their wave speed sqrt(g 1 cm) */
	assert_true(umax < 2 * sqrt(WB_GRAVITY * h0));
	assert_true(umax_thin <= sqrt(WB_GRAVITY * 0.01) * 1.001);
	assert_true(rep.balance_error < 1e-12);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* ---- sources, sinks, drains and fixed levels: the balance closes --------- */

static void test_sources_sinks(void **state)
{
	(void)state;
	const int N = 48;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, N, N, 2.0), WB_OK);
	for (int k = 0; k < N * N; k++)
		r.h0[k] = 0.5f;
	double rate_in = 0, rate_out = 0;
	for (int j = 5; j < 9; j++)
		for (int i = 5; i < 9; i++) {
			r.src[i + j * N] = 1e-3f;        /* spring, m/s */
			r.src[i + 30 + j * N] = -2e-4f;  /* slow sink */
			rate_in += 1e-3 * 4.0;
			rate_out += 2e-4 * 4.0;
		}
	r.flags[40 + 40 * N] |= WB_CELL_SINK_ALL; /* a drain */
	r.flags[10 + 40 * N] |= WB_CELL_FIXED;    /* a held level */
	r.fixed_level[10 + 40 * N] = 0.7f;
	struct wb_sim sim = sim_default();
	sim.viscosity = 0.05;
	struct wb_solve_opts o = { .threads = 0, .steps = 2000 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_solve(&r, &sim, &o, &st, &rep, &d), WB_OK);
	double T = rep.sim_time;
	printf("sources: in %.6g m^3 (spring %.6g + level), out %.6g m^3 (sink %.6g + drain + level), final %.6g, balance %.2g\n",
	       rep.vol_in, rate_in * T, rep.vol_out, rate_out * T, rep.vol_final,
	       rep.balance_error);
	/* the spring delivers its rate (the fixed cell adds a little) */
	assert_true(rep.vol_in >= rate_in * T * (1 - 1e-5));
	assert_true(rep.vol_out >= rate_out * T * (1 - 1e-5));
	assert_true(rep.balance_error < 1e-12);
	printf("held cell depth %.4f m, drain %.4f m\n", st.h[10 + 40 * N], st.h[40 + 40 * N]);
	assert_true(fabs(st.h[10 + 40 * N] - 0.7) < 1e-6); /* held level */
	assert_true(st.h[40 + 40 * N] == 0);                /* drained */
	/* the held cell fed the basin (its level is above the basin's) */
	assert_true(rep.vol_in > rate_in * T + 1.0);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* ---- a bake that diverges stops with WB_ESIM and says where and when ----- */

static void test_divergence_reported(void **state)
{
	(void)state;
	const int N = 32;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, N, N, 1.0), WB_OK);
	/* a closed flat basin under a source of 2 m/s everywhere: the depth
	 * grows without bound; the lattice speed is re-chosen as it does (a
	 * too-small given speed no longer stops the run), until the water
	 * leaves the fixed-point range the run was set up for (12 x the
	 * deepest water expected): WB_ESIM naming where and when */
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			r.h0[i + j * N] = 0.5f;
			r.src[i + j * N] = 2.0f;
		}
	struct wb_sim sim = sim_default();
	sim.lattice_speed = 1.0; /* g h = 5 e^2: re-chosen at once */
	struct wb_solve_opts o = { .threads = 0, .steps = 5000 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_solve(&r, &sim, &o, &st, &rep, &d), WB_ESIM);
	int found = 0;
	for (int i = 0; i < d.n; i++)
		found |= d.v[i].sev == WB_SEV_ERROR && strstr(d.v[i].msg, "diverged at step") &&
			 strstr(d.v[i].msg, "cell (");
	print_diags(&d);
	assert_true(found);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

/* A terrain or start with a non-finite cell is refused naming the first
 * such cell in row order, whichever thread reached which row first
 * (lbm_init_layout sets the rows up in parallel). */
static void test_bad_cell_named(void **state)
{
	(void)state;
	const int nx = 300, ny = 240; /* > 64k cells: two threads */
	struct wb_raster r;
	river_scene(&r, nx, ny);
	r.z[3 + (size_t)200 * nx] = NAN;
	r.h0[250 + (size_t)151 * nx] = NAN;
	r.z[17 + (size_t)150 * nx] = INFINITY;
	struct wb_sim sim = sim_default();
	struct wb_solve_opts o = { .threads = 2, .steps = 1 };
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_solve(&r, &sim, &o, &st, &rep, &d), WB_EINPUT);
	int found = 0;
	for (int i = 0; i < d.n; i++)
		found |= d.v[i].sev == WB_SEV_ERROR &&
			 strstr(d.v[i].msg, "cell (17, 150) has a non-finite") != NULL;
	print_diags(&d);
	assert_true(found);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

int main(int argc, char **argv)
{
	if (argc > 1) /* run only the tests matching a pattern */
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lake_immersed),
		cmocka_unit_test(test_lake_emerging),
		cmocka_unit_test(test_basin_mass),
		cmocka_unit_test(test_bump_subcritical),
		cmocka_unit_test(test_cylinder_strouhal),
		cmocka_unit_test(test_threads_identical),
		cmocka_unit_test(test_fast_path_identical),
		cmocka_unit_test(test_simd_widths_identical),
		cmocka_unit_test(test_bridge_deck),
		cmocka_unit_test(test_wetdry_dam_break),
		cmocka_unit_test(test_sources_sinks),
		cmocka_unit_test(test_divergence_reported),
		cmocka_unit_test(test_bad_cell_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
