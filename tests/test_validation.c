/*
 * test_validation.c - both solvers (LBM-SWE, lbm.c, and SWE, swe.c) on the
 * analytic cases of SWASHES (Delestre et al. 2013; formulas in analytic.h)
 * and on still water, side by side, with the tolerances of issue 11:
 *
 *   case                              pass when
 *   bump, subcritical, nu 0.001       max |h - h_ex| / h_ex <= 1 %
 *   bump, transcritical, no shock     L1 of depth <= 1 %
 *   bump, transcritical, shock        L1 <= 1.5 %, jump within 2 cells
 *   MacDonald, sub- and supercritical max |h - h_ex| / h_ex <= 1 %
 *   Stoker and Ritter dam breaks      L1 <= 3 %, front within 2 cells
 *                                     (the limits of test_swe.c; the issue
 *                                     names no figure); LBM at the lowest
 *                                     viscosity its tau floor allows and
 *                                     at 0.01 m^2/s
 *   Thacker radial paraboloid         after one period at 200^2 and 400^2
 *                                     cells: shoreline within 1 cell at
 *                                     both (the bound halves with dx),
 *                                     depth L1 <= 1 % at 400^2 and
 *                                     smaller than at 200^2
 *   lake at rest, rough bed, islands, after 10,000 steps: surface flat to
 *   steep shores; ocean held at its   1e-6 m, speed < 1e-5 m/s, islands
 *   level against a coast             and land dry
 *   cylinder, Re = 100 (LBM)          Strouhal within 15 % of
 *                                     Williamson's 0.1664
 *   the coast sample, 2,000 steps     sea: mean |eta - level| <= 1 cm,
 *                                     max <= 0.5 m, speed <= 3 m/s
 *
 * L1 is sum |h - h_ex| / sum h_ex over the cells of the case. Every case
 * is a separate cmocka test per solver and prints one line
 *   VALID | case | solver | error | steps | clamped cell-steps | pass/FAIL
 * before it asserts, so docs/validation.md is filled from this output
 * (grep '^VALID'). WB_VALID_ONLY=PATTERN runs only the tests whose names
 * match (test_bump_*_lbm, ...); WB_VALID_PROFILE=1 prints the 1D cases'
 * profiles. The 1D cases are strips 3 cells wide with periodic north and
 * south edges. WB_TEST_QUICK=1 (sanitizer builds) runs the still water
 * 2,000 steps instead of 10,000 and the cylinder 3 periods instead of 8:
 * the same assertions.
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
#include "lbm.h"
#include "solve.h"
#include "swe.h"
#include "wbake.h"

enum { LBM = WB_SOLVER_LBM, SWE = WB_SOLVER_SWE };

/*
 * Known gaps: the LBM cases that miss issue 11's limits (the table in
 * docs/validation.md says by how much and why). None today: Thacker's
 * paraboloid, the last, left the list on 2026-11-27. Such a test still runs its case and prints
 * its VALID line; LIMIT() then records a miss instead of failing, and the
 * test FAILS when the case meets every limit, so that the list cannot
 * outlive the gap (not judged under WB_TEST_QUICK=1, whose shorter runs
 * are not the cases: the lake meets the limits after 2,000 steps
 * and not after 10,000). Setup checks (the run itself) are asserted as
 * usual.
 * The flags are set by GAP() around one case at a time (cmocka runs the
 * tests one after another).
 */
static int gap_mode, gap_missed;
#define LIMIT(c) do { \
		if (gap_mode) \
			gap_missed |= !(c); \
		else \
			assert_true(c); \
	} while (0)
#define GAP(call) do { \
		gap_mode = 1; \
		gap_missed = 0; \
		call; \
		gap_mode = 0; \
		if (!gap_missed && !quick()) \
			fail_msg("known gap closed: %s meets issue 11's limits now; " \
				 "take it off the known gaps (here and docs/validation.md)", #call); \
	} while (0)

static int quick(void)
{
	const char *q = getenv("WB_TEST_QUICK");
	return q && *q && *q != '0';
}

static const char *sname(int solver)
{
	return solver == LBM ? "LBM" : "SWE";
}

static void print_diags(const struct wb_diags *d)
{
	char buf[512];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		printf("  %s\n", buf);
	}
}

/* WB_VALID_PROFILE=1: the 1D cases print x, depth, exact depth per cell
 * (for whoever works on a solver; no assertion depends on it). */
static void profile(const char *cas, int solver, int i, double x, double h,
		    double he)
{
	const char *p = getenv("WB_VALID_PROFILE");
	if (p && *p && *p != '0')
		printf("PROFILE %s %s %d %.3f %.6f %.6f\n", cas, sname(solver), i,
		       x, h, he);
}

/* One table line (docs/validation.md). */
static void table(const char *cas, int solver, int ok, long steps,
		  long clamped, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void table(const char *cas, int solver, int ok, long steps,
		  long clamped, const char *fmt, ...)
{
	char err[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	printf("VALID | %s | %s | %s | %ld | %ld | %s\n", cas, sname(solver),
	       err, steps, clamped, ok ? "pass" : "FAIL");
	fflush(stdout);
}

static struct wb_sim sim_base(int solver)
{
	struct wb_sim s;
	memset(&s, 0, sizeof(s));
	s.solver = (enum wb_solver_kind)solver;
	s.viscosity = 0.01;
	s.max_steps = 100000;
	s.tolerance = 1e-5;
	s.window = 1000;
	s.dry_depth = 1e-4;
	s.seed = 1;
	s.maccormack = 1; /* the scene default */
	/* the LBM cases validate the LBM/FV hybrid (simulation.lbm_hybrid:
	   true, docs/lbm.md); the pure LBM clamps supercritical cells */
	s.lbm_hybrid = solver == LBM;
	return s;
}

/* Run the scene's solver: to a steady state (steps = 0) or exactly steps
 * steps. *st is zeroed first, so wb_state_free is always safe. */
static enum wb_status solve(const struct wb_raster *r, const struct wb_sim *sim,
			    long steps, struct wb_state *st,
			    struct wb_solve_report *rep, struct wb_diags *d)
{
	struct wb_solve_opts o;
	memset(&o, 0, sizeof(o));
	o.steps = steps;
	memset(st, 0, sizeof(*st));
	memset(rep, 0, sizeof(*rep));
	enum wb_status s = sim->solver == WB_SOLVER_LBM ?
		lbm_solve(r, sim, &o, st, rep, d) : swe_solve(r, sim, &o, st, rep, d);
	if (s != WB_OK)
		print_diags(d);
	return s;
}

/* Depth at simulated time T (the LBM: the nearest whole step, *t says
 * which time was reached; SWE: its last step is shortened to end at T). */
static enum wb_status run_until(const struct wb_raster *r,
				const struct wb_sim *sim, double T, float *h,
				double *t, long *steps, long *clamped,
				struct wb_diags *d)
{
	size_t n = (size_t)r->nx * r->ny;
	enum wb_status s;
	if (sim->solver == WB_SOLVER_LBM) {
		struct lbm_params p;
		s = lbm_params_choose(r, sim, &p, d);
		if (s != WB_OK) {
			print_diags(d);
			return s;
		}
		long k = lround(T / p.dt);
		struct wb_state st;
		struct wb_solve_report rep;
		s = solve(r, sim, k > 0 ? k : 1, &st, &rep, d);
		if (s == WB_OK) {
			memcpy(h, st.h, n * sizeof(float));
			*t = rep.sim_time;
			*steps = rep.steps;
			*clamped = (rep.clamped + rep.fv_capped + rep.fv_friction_first);
		}
		wb_state_free(&st);
		return s;
	}
	struct swe_ctx c;
	memset(&c, 0, sizeof(c));
	s = swe_init(&c, r, sim, 0, d);
	while (s == WB_OK && c.t < T - 1e-12) {
		if (c.dt > T - c.t)
			c.dt = T - c.t;
		s = swe_step(&c, d);
	}
	if (s == WB_OK) {
		for (int j = 0; j < r->ny; j++)
			for (int i = 0; i < r->nx; i++)
				h[i + (size_t)j * r->nx] =
					c.h[(long)i + 1 + ((long)j + 1) * c.W];
		*t = c.t;
		*steps = c.step;
		*clamped = c.clamped;
	} else {
		print_diags(d);
	}
	swe_release(&c);
	return s;
}

/* A 1D strip: nx x ny cells of dx, north and south periodic. */
static void strip(struct wb_raster *r, int nx, int ny, double dx)
{
	assert_int_equal(wb_raster_alloc(r, nx, ny, dx), WB_OK);
	r->edges[WB_NORTH].kind = WB_EDGE_PERIODIC;
	r->edges[WB_SOUTH].kind = WB_EDGE_PERIODIC;
}

/* ---- steady flow over a bump (SWASHES 3.1.1, 3.1.3, 3.1.4) -------------- */

/* kind 0: subcritical, q = 4.42, h_out = 2 m, nu = 0.001 m^2/s;
 * kind 1: transcritical without shock, q = 1.53, free outflow;
 * kind 2: transcritical with shock, q = 0.18, h_out = 0.33 m.
 * 25 m at dx = 0.0625 m (400 cells), from still water at the SWASHES
 * initial level (2 m, 0.66 m, 0.33 m), except that the transcritical
 * case starts dry behind the crest: with a free (zero-gradient) outflow
 * on a flat frictionless bed a standing jump at its conjugate depth is a
 * steady state wherever it stands, and the jump that the SWASHES start
 * (0.66 m at rest behind the crest) forms at the bump's foot stays there
 * (SWE: 0.90 m behind it, L1 39 %); starting dry, the supercritical
 * reach runs out freely, as the case intends. */
static void bump_case(int solver, int kind)
{
	static const double qs[3] = { 4.42, 1.53, 0.18 }, hout[3] = { 2.0, 0, 0.33 },
			    eta0[3] = { 2.0, 0.66, 0.33 };
	static const char *names[3] = { "bump subcritical nu 0.001",
					"bump transcritical", "bump shock" };
	const int nx = 400, ny = 3;
	const double dx = 25.0 / nx, q = qs[kind];
	struct wb_raster r;
	strip(&r, nx, ny, dx);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r.z[k] = (float)an_bump_z((i + 0.5) * dx);
			r.h0[k] = (float)(eta0[kind] - r.z[k]);
			if (kind == 1 && (i + 0.5) * dx > 10.0)
				r.h0[k] = 0;
		}
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].discharge = q;
	if (kind == 1) {
		r.edges[WB_EAST].kind = WB_EDGE_OPEN;
	} else {
		r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
		r.edges[WB_EAST].level = hout[kind];
	}
	struct wb_sim sim = sim_base(solver);
	if (kind == 0)
		sim.viscosity = 0.001;
	sim.max_steps = 80000;
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = solve(&r, &sim, 0, &st, &rep, &d);
	double xs = kind == 2 ? an_jump_x(q, hout[kind]) : 0;
	double num = 0, den = 0, emax = 0, xn = -1;
	if (rc == WB_OK) {
		for (int i = 0; i < nx; i++) {
			double x = (i + 0.5) * dx;
			double he = an_bump_depth(kind, q, hout[kind], xs, x);
			double hn = st.h[i + (size_t)1 * nx];
			profile(names[kind], solver, i, x, hn, he);
			num += fabs(hn - he);
			den += he;
			emax = fmax(emax, fabs(hn - he) / he);
		}
		if (kind == 2) {
			/* the jump: where the depth first rises through the
			 * middle of its two exact sides, east of the crest */
			double z = an_bump_z(xs);
			double h1 = an_depth_head(q, an_head_critical(q, 0.2), z, 1);
			double h2 = an_depth_head(q, an_head(q, hout[kind], 0), z, 0);
			double hm = 0.5 * (h1 + h2);
			for (int i = (int)(10.0 / dx) + 1; i < nx; i++) {
				double a = st.h[i - 1 + (size_t)nx], b = st.h[i + (size_t)nx];
				if (a < hm && b >= hm) {
					xn = (i - 0.5) * dx + dx * (hm - a) / (b - a);
					break;
				}
			}
		}
	}
	double l1 = den > 0 ? num / den : INFINITY;
	int ok = rc == WB_OK && rep.converged;
	if (kind == 0) {
		ok = ok && emax <= 0.01;
		table(names[kind], solver, ok, rep.steps, (rep.clamped + rep.fv_capped + rep.fv_friction_first),
		      "max depth error %.3g %% (L1 %.3g %%), converged %d",
		      100 * emax, 100 * l1, rep.converged);
	} else if (kind == 1) {
		ok = ok && l1 <= 0.01;
		table(names[kind], solver, ok, rep.steps, (rep.clamped + rep.fv_capped + rep.fv_friction_first),
		      "L1 %.3g %% (max %.3g %%), converged %d", 100 * l1,
		      100 * emax, rep.converged);
	} else {
		double jerr = xn < 0 ? INFINITY : fabs(xn - xs) / dx;
		ok = ok && l1 <= 0.015 && jerr <= 2.0;
		table(names[kind], solver, ok, rep.steps, (rep.clamped + rep.fv_capped + rep.fv_friction_first),
		      "L1 %.3g %%, jump %.3g cells off (%.3f m vs %.3f m), converged %d",
		      100 * l1, jerr, xn, xs, rep.converged);
	}
	assert_int_equal(rc, WB_OK);
	LIMIT(rep.converged);
	/* issue 11: no limiter acts on a validation case (the LBM's Froude
	 * clamp: supercritical cells go to the hybrid's FV update) */
	LIMIT((rep.clamped + rep.fv_capped + rep.fv_friction_first) == 0);
	if (kind == 0)
		LIMIT(emax <= 0.01);
	else if (kind == 1)
		LIMIT(l1 <= 0.01);
	else {
		LIMIT(l1 <= 0.015);
		LIMIT(fabs(xn - xs) <= 2.0 * dx);
	}
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void test_bump_sub_lbm(void **state) { (void)state; bump_case(LBM, 0); }
static void test_bump_sub_swe(void **state) { (void)state; bump_case(SWE, 0); }
static void test_bump_trans_lbm(void **state) { (void)state; bump_case(LBM, 1); }
static void test_bump_trans_swe(void **state) { (void)state; bump_case(SWE, 1); }
static void test_bump_shock_lbm(void **state) { (void)state; bump_case(LBM, 2); }
static void test_bump_shock_swe(void **state) { (void)state; bump_case(SWE, 2); }

/* ---- MacDonald's 1D channels with Manning friction (SWASHES 3.2.2/3) ---- */

/* 1000 m at dx = 2.5 m, q = 2 m^2/s, n = 0.033. Subcritical: inflow q,
 * outflow held at the exact depth; supercritical: inflow q at the exact
 * depth, free outflow. From the exact depth at rest. */
static void macdonald_case(int solver, int super)
{
	const int nx = 400, ny = 3;
	const double dx = 2.5, q = 2.0, n = 0.033;
	struct wb_raster r;
	strip(&r, nx, ny, dx);
	for (int i = 0; i < nx; i++) {
		double x = (i + 0.5) * dx;
		float z = (float)an_mcd_z(super, q, n, x);
		float h = (float)an_mcd_h(super, x);
		for (int j = 0; j < ny; j++) {
			r.z[i + (size_t)j * nx] = z;
			r.h0[i + (size_t)j * nx] = h;
		}
	}
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].discharge = q;
	if (super) {
		r.edges[WB_WEST].depth = an_mcd_h(1, 0);
		r.edges[WB_EAST].kind = WB_EDGE_OPEN;
	} else {
		r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
		/* the held level is the surface at the ghost cell's centre,
		 * half a cell beyond the channel's end */
		double xg = 1000.0 + 0.5 * dx;
		r.edges[WB_EAST].level = an_mcd_h(0, xg) + an_mcd_z(0, q, n, xg);
	}
	struct wb_sim sim = sim_base(solver);
	sim.manning = n;
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = solve(&r, &sim, 0, &st, &rep, &d);
	double emax = INFINITY, num = 0, den = 0;
	if (rc == WB_OK) {
		emax = 0;
		for (int i = 0; i < nx; i++) {
			double he = an_mcd_h(super, (i + 0.5) * dx);
			double hn = st.h[i + (size_t)nx];
			profile(super ? "MacDonald-super" : "MacDonald-sub", solver,
				i, (i + 0.5) * dx, hn, he);
			emax = fmax(emax, fabs(hn - he) / he);
			num += fabs(hn - he);
			den += he;
		}
	}
	/* issue 11: a limiter that remains must not act on a validation case */
	int ok = rc == WB_OK && rep.converged && emax <= 0.01 && (rep.clamped + rep.fv_capped + rep.fv_friction_first) == 0;
	table(super ? "MacDonald supercritical" : "MacDonald subcritical", solver,
	      ok, rep.steps, (rep.clamped + rep.fv_capped + rep.fv_friction_first),
	      "max depth error %.3g %% (L1 %.3g %%), converged %d", 100 * emax,
	      den > 0 ? 100 * num / den : INFINITY, rep.converged);
	assert_int_equal(rc, WB_OK);
	LIMIT(rep.converged);
	LIMIT(emax <= 0.01);
	LIMIT((rep.clamped + rep.fv_capped + rep.fv_friction_first) == 0);
	wb_state_free(&st);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void test_macdonald_sub_lbm(void **state) { (void)state; macdonald_case(LBM, 0); }
static void test_macdonald_sub_swe(void **state) { (void)state; macdonald_case(SWE, 0); }
static void test_macdonald_super_lbm(void **state) { (void)state; macdonald_case(LBM, 1); }
static void test_macdonald_super_swe(void **state) { (void)state; macdonald_case(SWE, 1); }

/* ---- dam breaks (SWASHES 4.1.1 Ritter, 4.1.2 Stoker) -------------------- */

/* 100 m channel at dx = 0.25 m, dam at 50 m holding 1 m against hr,
 * compared at t = 6 s over [x_A - 2 m, front + 2 m]; front: where the
 * depth crosses half the bore (Stoker) or 1 % of h_l (Ritter). */
static int dam_run(const struct wb_sim *sim, double hr, const char *cas)
{
	const int nx = 400, ny = 3;
	const double L = 100.0, dx = L / nx, x0 = 50.0, T = 6.0, hl = 1.0;
	struct wb_raster r;
	strip(&r, nx, ny, dx);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++)
			r.h0[i + (size_t)j * nx] = (i + 0.5) * dx < x0 ? (float)hl : (float)hr;
	float *h = malloc(sizeof(float) * nx * ny);
	assert_non_null(h);
	struct wb_diags d;
	wb_diags_init(&d);
	double t = 0;
	long steps = 0, clamped = 0;
	enum wb_status rc = run_until(&r, sim, T, h, &t, &steps, &clamped, &d);
	double l1 = INFINITY, fn = -1, xf, thr;
	double cl = sqrt(WB_GRAVITY * hl);
	if (hr > 0) {
		double cm = an_stoker_cm(hl, hr);
		xf = an_stoker_front(x0, t, hl, hr);
		thr = 0.5 * (cm * cm / WB_GRAVITY + hr);
	} else {
		thr = 0.01 * hl;
		xf = x0 + t * (2.0 * cl - 3.0 * sqrt(WB_GRAVITY * thr));
	}
	if (rc == WB_OK) {
		double num = 0, den = 0, xa = x0 - t * cl;
		for (int i = 0; i < nx; i++) {
			double x = (i + 0.5) * dx;
			if (x < xa - 2.0 || x > xf + 2.0)
				continue;
			double he = an_dam_depth(x, x0, t, hl, hr);
			profile(cas, sim->solver, i, x, h[i + (size_t)nx], he);
			num += fabs(h[i + (size_t)nx] - he);
			den += he;
		}
		l1 = num / den;
		for (int i = nx - 1; i > 0; i--) {
			double a = h[i - 1 + (size_t)nx], b = h[i + (size_t)nx];
			if (a >= thr && b < thr) {
				fn = (i - 0.5) * dx + dx * (a - thr) / (a - b);
				break;
			}
		}
	}
	double ferr = fn < 0 ? INFINITY : fabs(fn - xf) / dx;
	int ok = rc == WB_OK && l1 <= 0.03 && ferr <= 2.0;
	char nu[48] = "";
	if (sim->solver == WB_SOLVER_LBM) /* SWE has no viscosity term */
		snprintf(nu, sizeof(nu), ", nu %.3g m^2/s", sim->viscosity);
	table(cas, sim->solver, ok, steps, clamped,
	      "L1 %.3g %%, front %.3g cells off%s", 100 * l1, ferr, nu);
	free(h);
	wb_diags_release(&d);
	wb_raster_free(&r);
	return ok;
}

/* The LBM's lowest viscosity on this grid: the one its tau floor gives. */
static double lbm_nu_floor(double hl, double dx)
{
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, 8, 3, dx), WB_OK);
	for (int k = 0; k < 8 * 3; k++)
		r.h0[k] = (float)hl;
	struct wb_sim sim = sim_base(LBM);
	sim.viscosity = 1e-9;
	struct lbm_params p;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(lbm_params_choose(&r, &sim, &p, &d), WB_OK);
	wb_diags_release(&d);
	wb_raster_free(&r);
	return p.nu;
}

static void dam_case(int solver, double hr)
{
	const char *cas = hr > 0 ? "Stoker dam break" : "Ritter dam break";
	struct wb_sim sim = sim_base(solver);
	if (solver == SWE) {
		assert_true(dam_run(&sim, hr, cas));
		return;
	}
	/* from the tau floor up */
	double nus[2] = { lbm_nu_floor(1.0, 0.25), 0.01 };
	int ok = 1;
	for (int k = 0; k < 2; k++) {
		sim.viscosity = nus[k];
		ok &= dam_run(&sim, hr, cas);
	}
	LIMIT(ok);
}

static void test_stoker_lbm(void **state) { (void)state; dam_case(LBM, 0.5); }
static void test_stoker_swe(void **state) { (void)state; dam_case(SWE, 0.5); }
static void test_ritter_lbm(void **state) { (void)state; dam_case(LBM, 0.0); }
static void test_ritter_swe(void **state) { (void)state; dam_case(SWE, 0.0); }

/* ---- Thacker's radial paraboloid (SWASHES 4.2.1) ------------------------ */

/* a = 1 m, r0 = 0.8 m, h0 = 0.1 m on a 4 m square of n x n cells, one
 * period. *l1: depth L1 over the square; *shore: |r_num - r_ex| (m) of the
 * radius of the area wetter than 1 mm (1 % of h0). */
static enum wb_status thacker_run(int solver, int n, double *l1, double *shore,
				  long *steps, long *clamped)
{
	const double Ls = 4.0, dx = Ls / n, thr = 1e-3;
	struct an_thacker T = an_thacker_init(1.0, 0.8, 0.1);
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, n, n, dx), WB_OK);
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++) {
			double x = (i + 0.5) * dx - Ls / 2, y = (j + 0.5) * dx - Ls / 2;
			double rr = hypot(x, y);
			r.z[i + (size_t)j * n] = (float)an_thacker_z(&T, rr);
			r.h0[i + (size_t)j * n] = (float)an_thacker_h(&T, rr, 0);
		}
	struct wb_sim sim = sim_base(solver);
	/* the analytic solution is inviscid (and SWE has no viscous term):
	 * the LBM runs just above its tau floor on the 200^2 grid (2.8e-4
	 * m^2/s there, 1.4e-4 at 400^2), so that nothing is raised on either
	 * grid; at 1e-3 the viscous drag on the breathing, -8 a b nu r, is
	 * physics the scene asks for and adds 0.8 % to L1 at 400^2 (1.77 %
	 * against 0.95 %; docs/lbm.md, "Thacker") */
	sim.viscosity = 3e-4;
	sim.dry_depth = 1e-5;
	float *h = malloc(sizeof(float) * n * n);
	assert_non_null(h);
	struct wb_diags d;
	wb_diags_init(&d);
	double t = 0;
	enum wb_status rc = run_until(&r, &sim, 2 * AN_PI / T.omega, h, &t, steps,
				      clamped, &d);
	if (rc == WB_OK) {
		double num = 0, den = 0;
		long wet = 0;
		for (int j = 0; j < n; j++)
			for (int i = 0; i < n; i++) {
				double x = (i + 0.5) * dx - Ls / 2, y = (j + 0.5) * dx - Ls / 2;
				double he = an_thacker_h(&T, hypot(x, y), t);
				double hn = h[i + (size_t)j * n];
				num += fabs(hn - he);
				den += he;
				wet += hn > thr;
			}
		*l1 = num / den;
		*shore = fabs(sqrt(wet * dx * dx / AN_PI) - an_thacker_radius(&T, t, thr));
	}
	free(h);
	wb_diags_release(&d);
	wb_raster_free(&r);
	return rc;
}

static void thacker_case(int solver)
{
	const int n0 = 200;
	double l1[2] = { INFINITY, INFINITY }, sh[2] = { INFINITY, INFINITY };
	long steps[2] = { 0, 0 }, cl[2] = { 0, 0 };
	enum wb_status rc[2];
	for (int k = 0; k < 2; k++) {
		int n = n0 << k;
		double dx = 4.0 / n;
		rc[k] = thacker_run(solver, n, &l1[k], &sh[k], &steps[k], &cl[k]);
		int ok = rc[k] == WB_OK && sh[k] <= dx;
		if (k == 1)
			ok = ok && l1[1] <= 0.01 && l1[1] < l1[0];
		char cas[64];
		snprintf(cas, sizeof(cas), "Thacker radial %dx%d", n, n);
		table(cas, solver, ok, steps[k], cl[k],
		      "L1 %.3g %%, shoreline %.3g cells off%s", 100 * l1[k],
		      sh[k] / dx, k == 0 ? "" : l1[1] < l1[0] ? ", L1 converges" :
		      ", L1 does NOT converge");
	}
	assert_int_equal(rc[0], WB_OK);
	assert_int_equal(rc[1], WB_OK);
	LIMIT(sh[0] <= 4.0 / n0);       /* 1 cell at each resolution: */
	LIMIT(sh[1] <= 4.0 / (2 * n0)); /* the bound halves with dx */
	LIMIT(l1[1] <= 0.01);
	LIMIT(l1[1] < l1[0]);
}

static void test_thacker_lbm(void **state) { (void)state; thacker_case(LBM); }
static void test_thacker_swe(void **state) { (void)state; thacker_case(SWE); }

/* ---- still water --------------------------------------------------------- */

/* Deterministic value noise in [-1, 1] on a lattice of spacing 1 (cells). */
static double noise(int i, int j, unsigned seed)
{
	uint32_t x = (uint32_t)i * 374761393u + (uint32_t)j * 668265263u + seed * 2246822519u;
	x = (x ^ (x >> 13)) * 1274126177u;
	x ^= x >> 16;
	return (double)(x & 0xffffff) / (double)0x800000 - 1.0;
}

/* Surface and speed after 'steps' steps of a scene that starts at rest:
 * the largest |eta - level| over wet cells, the largest speed, and the
 * deepest water on cells that started dry. */
static void still_check(const struct wb_raster *r, int solver, long steps,
			double level, const char *cas)
{
	struct wb_sim sim = sim_base(solver);
	sim.manning = 0.03;
	sim.dry_depth = 1e-3;
	struct wb_state st;
	struct wb_solve_report rep;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = solve(r, &sim, steps, &st, &rep, &d);
	double deta = INFINITY, umax = INFINITY, hdry = INFINITY;
	if (rc == WB_OK) {
		deta = umax = hdry = 0;
		for (int k = 0; k < r->nx * r->ny; k++) {
			umax = fmax(umax, hypot(st.u[k], st.v[k]));
			if (r->h0[k] > 0)
				deta = fmax(deta, fabs(st.h[k] + r->z[k] - level));
			else
				hdry = fmax(hdry, st.h[k]);
		}
	}
	if (rc == WB_OK && getenv("WB_VALID_PROFILE") && *getenv("WB_VALID_PROFILE") != '0')
		for (int k = 0; k < r->nx * r->ny; k++) {
			double sp = hypot(st.u[k], st.v[k]);
			double de = r->h0[k] > 0 ? fabs(st.h[k] + r->z[k] - level) : 0;
			if (sp > 1e-5 || de > 1e-6 || (r->h0[k] == 0 && st.h[k] > 0))
				printf("STILL %d %d z %.6g h0 %.6g h %.6g deta %.3g speed %.3g\n",
				       k % r->nx, k / r->nx, r->z[k], r->h0[k], st.h[k], de, sp);
		}
	int ok = rc == WB_OK && deta <= 1e-6 && umax < 1e-5 && hdry < sim.dry_depth;
	table(cas, solver, ok, rep.steps, (rep.clamped + rep.fv_capped + rep.fv_friction_first),
	      "max |eta - level| %.3g m, max speed %.3g m/s, dry cells %.3g m",
	      deta, umax, hdry);
	assert_int_equal(rc, WB_OK);
	assert_int_equal(rep.steps, steps);
	LIMIT(deta <= 1e-6);
	LIMIT(umax < 1e-5);
	LIMIT(hdry < sim.dry_depth);
	wb_state_free(&st);
	wb_diags_release(&d);
}

/* A 64 x 64 m basin: rough bed (noise of +-0.25 m on every cell plus
 * smooth relief), three islands that emerge up to 1.5 m, and a steep shore
 * along the east side (slope 2: 2 m per cell) above the lake's level of
 * 1 m. */
static void lake_case(int solver)
{
	const int N = 64;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, N, N, 1.0), WB_OK);
	static const double isl[3][3] = { { 18, 20, 2.5 }, { 40, 44, 2.0 }, { 30, 10, 1.8 } };
	int dry = 0, steep = 0;
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			double z = 0.25 * noise(i, j, 1) + 0.2 * sin(0.3 * i) * cos(0.23 * j);
			for (int s = 0; s < 3; s++) {
				double dx = i - isl[s][0], dy = j - isl[s][1];
				z += isl[s][2] * exp(-(dx * dx + dy * dy) / 12.0);
			}
			if (i >= 54)
				z += 2.0 * (i - 53);
			/* on a grid of 2^-16 m (as a 16-bit heightmap is
			 * quantised) the water at rest, 1 - z, and its surface
			 * h + z are exact in float: the still state is exactly
			 * representable, and the test measures the scheme's
			 * balance, not the rounding of h0 */
			z = round(z * 65536.0) / 65536.0;
			size_t k = i + (size_t)j * N;
			r.z[k] = (float)z;
			r.h0[k] = z < 1.0 ? (float)(1.0 - z) : 0.0f;
			dry += z >= 1.0;
			steep += i == 53 && z < 1.0;
		}
	assert_true(dry > 100);  /* islands and shore emerge */
	assert_true(steep > 10); /* the steep shore holds water at its foot */
	still_check(&r, solver, quick() ? 2000 : 10000, 1.0,
		    "lake at rest, rough bed, islands");
	wb_raster_free(&r);
}

static void test_lake_lbm(void **state) { (void)state; lake_case(LBM); }
static void test_lake_swe(void **state) { (void)state; lake_case(SWE); }

/* An ocean source at level 0 (as a scene says it, rasterised by
 * wb_raster_build: the open sea held at its level, the band near the
 * coast free) over a 96 x 64 map at 10 m: a rough shelf falling to -12 m
 * in the west, a beach and a rocky headland in the east, two islets. */
static void ocean_case(int solver)
{
	const int nx = 96, ny = 64;
	static const char scene[] =
		"{ \"name\": \"coastcase\", \"version\": 1,\n"
		"  \"terrain\": { \"heightmap\": \"unused.png\", \"metres_per_pixel\": 10,\n"
		"               \"height_scale\": 1 },\n"
		"  \"materials\": [ { \"name\": \"sea\", \"kind\": \"ocean\" } ],\n"
		"  \"sources\": [ { \"type\": \"ocean\", \"level\": 0, \"material\": \"sea\" } ] }\n";
	struct wb_scene sc;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = wb_scene_parse(scene, sizeof(scene) - 1, "coastcase.json",
					   NULL, &sc, &d);
	print_diags(&d);
	assert_int_equal(rc, WB_OK);
	struct wb_heightmap hm;
	memset(&hm, 0, sizeof(hm));
	hm.nx = nx;
	hm.ny = ny;
	hm.z = malloc(sizeof(float) * nx * ny);
	assert_non_null(hm.z);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			double z = -12.0 + 0.2 * i + 0.6 * noise(i, j, 7) +
				   3.0 * sin(0.15 * j) * (i > 50);
			if (i > 70 && j > 20 && j < 36)
				z += 6.0 * (i - 70) / 4.0; /* headland: steep */
			double a = i - 30, b = j - 40, c = i - 45, e = j - 15;
			z += 14.0 * exp(-(a * a + b * b) / 10.0) +
			     11.0 * exp(-(c * c + e * e) / 6.0);
			hm.z[i + (size_t)j * nx] = (float)z;
		}
	struct wb_raster r;
	rc = wb_raster_build(&sc, &hm, &r, &d);
	print_diags(&d);
	assert_int_equal(rc, WB_OK);
	int fixed = 0, dry = 0;
	for (int k = 0; k < nx * ny; k++) {
		fixed += (r.flags[k] & WB_CELL_FIXED) != 0;
		dry += r.h0[k] == 0;
	}
	assert_true(fixed > 100); /* the open sea is held */
	assert_true(dry > 500);   /* there is land */
	still_check(&r, solver, quick() ? 2000 : 10000, 0.0,
		    "ocean at rest against a coast");
	wb_raster_free(&r);
	wb_heightmap_free(&hm);
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

static void test_ocean_lbm(void **state) { (void)state; ocean_case(LBM); }
static void test_ocean_swe(void **state) { (void)state; ocean_case(SWE); }

/* ---- the coast sample -------------------------------------------------- */

/* samples/coast as it is baked (wb_bake_load: scene, heightmap, raster),
 * 2,000 steps with the given solver (SWE: 81 s simulated, LBM: 66 s); the
 * full bake is longer than make test allows (SWE: 30,000 steps, 2 min on
 * 2 cores, LBM 4 min). On the sea's cells (the ocean's body) deeper than
 * 0.5 m: the mean |eta - level| at most 1 cm, the largest at most 0.5 m
 * and the speed below 3 m/s. The bounds on the largest values are loose
 * because the harbour (excluded from the ocean, dry at the start) fills
 * through its entrance in this time: SWE draws the sea down by 0.41 m
 * there at 2.3 m/s, while its mean stays at 3 mm; the failure of issue 11
 * moved a sea by tens of metres at tens of m/s. */
static void coast_case(int solver)
{
	struct wb_bake b;
	memset(&b, 0, sizeof(b));
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status rc = wb_bake_load(&b, "samples/coast/scene.json", &d);
	print_diags(&d);
	assert_int_equal(rc, WB_OK);
	int sea = -1;
	double level = 0;
	for (int s = 0; s < b.sc.n_sources; s++)
		if (b.sc.sources[s].kind == WB_SRC_OCEAN) {
			sea = s + 1;
			level = b.sc.sources[s].level;
		}
	assert_true(sea > 0);
	b.sc.sim.solver = (enum wb_solver_kind)solver;
	struct wb_solve_opts o;
	memset(&o, 0, sizeof(o));
	o.steps = 2000;
	rc = wb_bake_solve(&b, &o, &d);
	if (rc != WB_OK)
		print_diags(&d);
	double deta = INFINITY, umax = INFINITY, dmean = 0;
	long cells = 0;
	if (rc == WB_OK) {
		deta = umax = 0;
		for (int k = 0; k < b.r.nx * b.r.ny; k++) {
			if (b.r.body[k] != sea || b.st.h[k] < 0.5)
				continue;
			cells++;
			deta = fmax(deta, fabs(b.st.h[k] + b.r.z[k] - level));
			dmean += fabs(b.st.h[k] + b.r.z[k] - level);
			umax = fmax(umax, hypot(b.st.u[k], b.st.v[k]));
		}
	}
	dmean = cells ? dmean / cells : INFINITY;
	int ok = rc == WB_OK && cells > 1000 && dmean <= 0.01 && deta <= 0.5 &&
		 umax <= 3.0;
	table("coast sample, 2,000 steps", solver, ok, b.rep.steps, (b.rep.clamped + b.rep.fv_capped + b.rep.fv_friction_first),
	      "sea: max |eta - level| %.3g m, mean %.3g m, max speed %.3g m/s (%ld cells)",
	      deta, dmean, umax, cells);
	assert_int_equal(rc, WB_OK);
	assert_true(cells > 1000);
	assert_true(dmean <= 0.01);
	assert_true(deta <= 0.5);
	assert_true(umax <= 3.0);
	wb_bake_release(&b);
	wb_diags_release(&d);
}

static void test_coast_lbm(void **state) { (void)state; coast_case(LBM); }
static void test_coast_swe(void **state) { (void)state; coast_case(SWE); }

/* ---- vortex shedding behind a cylinder (a bridge pier) ------------------ */

/* D = 1 m pier in a 25 x 8 m channel of 1 m water at 0.5 m/s, Re = U D /
 * nu = 100; the period of the cross-flow velocity 2 D behind the pier
 * (upward zero crossings) after 9 reference periods of spin-up. LBM only:
 * the SWE solver has no viscosity term, so Re is not one of its
 * parameters (its wake chatters at the grid scale; docs/validation.md).
 * cylinder_case(SWE) gives the SWE figure quoted there. */
static void cylinder_case(int solver)
{
	const double dx = 0.1, D = 1.0, U = 0.5, Re = 100, depth = 1.0;
	const int nx = 250, ny = 80;
	const double xc = 6.0, yc = 0.5 * ny * dx + 0.05;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double x = (i + 0.5) * dx - xc, y = (j + 0.5) * dx - yc;
			double bx = x - 1.5 * D, by = y - 0.5 * D;
			r.h0[k] = (float)(depth + 0.02 * exp(-(bx * bx + by * by) / 0.2));
			if (x * x + y * y <= 0.25 * D * D) {
				r.block_bot[k] = r.z[k];
				r.block_top[k] = 10;
				r.flags[k] |= WB_CELL_BLOCKER;
			}
		}
	r.edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r.edges[WB_WEST].velocity = U;
	r.edges[WB_WEST].depth = depth;
	r.edges[WB_EAST].kind = WB_EDGE_LEVEL;
	r.edges[WB_EAST].level = depth;
	r.edges[WB_NORTH].free_slip = 1;
	r.edges[WB_SOUTH].free_slip = 1;
	struct wb_sim sim = sim_base(solver);
	sim.viscosity = U * D / Re;
	const double St_ref = 0.2175 - 5.1064 / Re, T_ref = D / (St_ref * U);
	const double t_spin = 9 * T_ref, t_run = (quick() ? 3 : 8) * T_ref;
	const int pi = (int)((xc + 2 * D) / dx), pj = (int)(yc / dx);
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	struct swe_ctx S;
	memset(&L, 0, sizeof(L));
	memset(&S, 0, sizeof(S));
	float *h = malloc(sizeof(float) * nx * ny), *u = malloc(sizeof(float) * nx * ny),
	      *v = malloc(sizeof(float) * nx * ny);
	assert_non_null(h);
	assert_non_null(u);
	assert_non_null(v);
	enum wb_status rc = solver == LBM ? lbm_init(&L, &r, &sim, 0, &d)
					  : swe_init(&S, &r, &sim, 0, &d);
	double t = 0, prev = 0, t_first = -1, t_last = -1, vmax = 0;
	const double every = 0.05, band = 0.02 * U; /* s between probe samples */
	int ups = 0, armed = 0;
	long k = 0;
	while (rc == WB_OK && t < t_spin + t_run) {
		double target = (double)(++k) * every, vv;
		if (solver == LBM) {
			long n = lround(target / L.p.dt) - L.step;
			if (n > 0)
				rc = lbm_step(&L, n, &d);
			t = L.step * L.p.dt;
			lbm_macro(&L, h, u, v);
			vv = v[pi + (size_t)pj * nx];
		} else {
			while (rc == WB_OK && S.t < target - 1e-12) {
				if (S.dt > target - S.t)
					S.dt = target - S.t;
				rc = swe_step(&S, &d);
			}
			t = S.t;
			long c = (long)pi + 1 + ((long)pj + 1) * S.W;
			vv = 0.5 * (S.v[c] + S.v[c + S.W]);
		}
		if (t < t_spin) {
			prev = vv;
			continue;
		}
		vmax = fmax(vmax, fabs(vv));
		/* upward zero crossings, each after the signal went below
		 * -band: grid-scale chatter does not count as a period */
		if (vv < -band)
			armed = 1;
		if (armed && prev < 0 && vv >= 0) {
			double tc = t - every * vv / (vv - prev);
			if (ups == 0)
				t_first = tc;
			t_last = tc;
			ups++;
			armed = 0;
		}
		prev = vv;
	}
	if (rc != WB_OK)
		print_diags(&d);
	double T = ups > 1 ? (t_last - t_first) / (ups - 1) : INFINITY;
	double St = D / (T * U);
	int ok = rc == WB_OK && vmax > 0.05 * U && ups >= 2 &&
		 fabs(St - St_ref) < 0.15 * St_ref;
	table("cylinder Re 100, Strouhal", solver, ok,
	      solver == LBM ? L.step : S.step,
	      solver == LBM ? L.clamped + L.fv_capped + L.fv_ff : S.clamped,
	      "St %.4f vs %.4f (%.3g %%), %d periods, |v| max %.3f m/s", St, St_ref,
	      100 * fabs(St - St_ref) / St_ref, ups - 1, vmax);
	assert_int_equal(rc, WB_OK);
	assert_true(vmax > 0.05 * U); /* it sheds */
	assert_true(ups >= 2);
	assert_true(fabs(St - St_ref) < 0.15 * St_ref);
	free(h);
	free(u);
	free(v);
	if (solver == LBM)
		lbm_release(&L);
	else
		swe_release(&S);
	wb_diags_release(&d);
	wb_raster_free(&r);
}

static void test_cylinder_lbm(void **state) { (void)state; cylinder_case(LBM); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bump_trans_lbm),
		cmocka_unit_test(test_bump_trans_swe),
		cmocka_unit_test(test_bump_shock_lbm),
		cmocka_unit_test(test_bump_shock_swe),
		cmocka_unit_test(test_bump_sub_lbm),
		cmocka_unit_test(test_bump_sub_swe),
		cmocka_unit_test(test_macdonald_sub_lbm),
		cmocka_unit_test(test_macdonald_sub_swe),
		cmocka_unit_test(test_macdonald_super_lbm),
		cmocka_unit_test(test_macdonald_super_swe),
		cmocka_unit_test(test_stoker_lbm),
		cmocka_unit_test(test_stoker_swe),
		cmocka_unit_test(test_ritter_lbm),
		cmocka_unit_test(test_ritter_swe),
		cmocka_unit_test(test_thacker_lbm),
		cmocka_unit_test(test_thacker_swe),
		cmocka_unit_test(test_lake_lbm),
		cmocka_unit_test(test_lake_swe),
		cmocka_unit_test(test_ocean_lbm),
		cmocka_unit_test(test_ocean_swe),
		cmocka_unit_test(test_coast_lbm),
		cmocka_unit_test(test_coast_swe),
		cmocka_unit_test(test_cylinder_lbm),
	};
	/* WB_VALID_ONLY=PATTERN runs only the matching tests (cmocka's
	 * filter: '*' and '?' wildcards), e.g. 'test_bump_*_lbm' */
	const char *only = getenv("WB_VALID_ONLY");
	if (only && *only)
		cmocka_set_test_filter(only);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
