/*
 * test_opencl.c - the OpenCL back end (src/cl.c, src/cl/ kernels) against
 * the CPU solvers, on whatever OpenCL device is present (PoCL on the CPU in
 * make test; built only in OPENCL=1 builds).
 *
 *   - device listing and a clear WB_EUSAGE for a device index that does not
 *     exist (never a silent CPU run); kernels that do not build are
 *     WB_ESIM with the compiler's log;
 *   - LBM-SWE and SWE, 500 steps on generated scenes (128x96, the other
 *     variants 80x60 to keep make test short) that exercise every
 *     boundary kind (inflow by discharge and by velocity, level, open,
 *     no-slip and free-slip walls, periodic), wet/dry fronts over an
 *     island, a blocker, sources, a sink, a fixed level and a flow
 *     modifier, and for SWE foam, MacCormack advection and a cliff with
 *     waterfall particles (kept on the host): depth, velocity and foam
 *     match lbm_solve / swe_solve within 1e-4 of the field's largest
 *     magnitude (docs/opencl.md: the kernels repeat the CPU arithmetic
 *     operation for operation, so most fields are in fact bit-identical,
 *     on PoCL and on an NVIDIA H200 alike), the same status as the CPU,
 *     and the same mass bookkeeping (final volume to 1e-5 (LBM) or the
 *     tolerance (SWE), balance error to 1e-6);
 *   - two device runs give identical bytes (no floating-point atomics);
 *   - the run to a steady state (window-mean convergence test, LBM up to
 *     1200 steps, SWE up to 1500 at tolerance 1e-2) stops at the same step
 *     as the CPU and matches its mean fields within 1e-3.
 * Scenes are generated here; tolerances are stated at each assertion.
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
#include "lbm.h"
#include "solve.h"

static int dev_index(void)
{
	const char *s = getenv("WB_CL_DEVICE");
	if (s && *s)
		return atoi(s);
	int k = cl_default_device();
	return k < 0 ? 0 : k;
}

/* ---- scenes --------------------------------------------------------------- */

static void sim_defaults(struct wb_sim *s, enum wb_solver_kind k)
{
	memset(s, 0, sizeof(*s));
	s->solver = k;
	s->manning = 0.03;
	s->viscosity = 0.5;
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

/*
 * A river valley: terrain slopes down to the east (1 %) with a V-shaped
 * cross-section, an island (dry) in the middle, a blocker deck, a source
 * and a sink, a fixed-level pond, a flow modifier. variant selects the
 * edges: 0 inflow (discharge) west, open east, no-slip north, free-slip
 * south; 1 inflow (velocity) west, level east; 2 periodic west/east,
 * periodic north/south (a tilted doubly-periodic channel, no specials).
 */
static void scene_valley(struct wb_raster *r, int nx, int ny, int variant)
{
	const double dx = 2.0;
	assert_int_equal(wb_raster_alloc(r, nx, ny, dx), WB_OK);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			double x = (i + 0.5) * dx, y = (j + 0.5) * dx;
			double yc = 0.5 * ny * dx;
			double z = 10.0 - 0.01 * x + 0.04 * fabs(y - yc);
			double ri = (i - 0.55 * nx) * dx, rj = (j - 0.5 * ny) * dx;
			double isl = 3.0 - sqrt(ri * ri + rj * rj) * 0.25;
			if (variant == 2)
				z = 10.0 + 0.3 * sin(2 * 3.14159265358979 * i / nx) *
						   cos(2 * 3.14159265358979 * j / ny);
			else if (isl > 0)
				z += isl;
			r->z[k] = (float)z;
			double surf = variant == 2 ? 11.0 : 10.6 - 0.01 * x;
			r->h0[k] = (float)(surf > z ? surf - z : 0.0);
		}
	if (variant == 2) {
		for (int e = 0; e < 4; e++)
			r->edges[e].kind = WB_EDGE_PERIODIC;
		/* a modifier drives the flow around the periodic box */
		for (int j = ny / 4; j < 3 * ny / 4; j++)
			for (int i = 0; i < nx / 8; i++) {
				size_t k = i + (size_t)j * nx;
				r->mod_u[k] = 0.5f;
				r->mod_v[k] = 0.1f;
				r->mod_k[k] = 0.5f;
				r->flags[k] |= WB_CELL_MODIFIER;
			}
		return;
	}
	if (variant == 0) {
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].discharge = 0.4;
		r->edges[WB_EAST].kind = WB_EDGE_OPEN;
		r->edges[WB_NORTH].kind = WB_EDGE_WALL;
		r->edges[WB_SOUTH].kind = WB_EDGE_WALL;
		r->edges[WB_SOUTH].free_slip = 1;
	} else {
		r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
		r->edges[WB_WEST].velocity = 0.3;
		r->edges[WB_EAST].kind = WB_EDGE_LEVEL;
		r->edges[WB_EAST].level = 10.6 - 0.01 * nx * dx;
	}
	/* blocker deck across the channel, 0.5 m above the initial surface */
	for (int j = 0; j < ny; j++)
		for (int i = nx / 4; i < nx / 4 + 3; i++) {
			size_t k = i + (size_t)j * nx;
			double s = r->z[k] + r->h0[k];
			r->block_bot[k] = (float)(s + 0.5);
			r->block_top[k] = (float)(s + 1.5);
			r->flags[k] |= WB_CELL_BLOCKER;
		}
	/* spring, sink, fixed-level pond, modifier */
	for (int j = ny / 2 - 2; j < ny / 2 + 2; j++)
		for (int i = nx / 8; i < nx / 8 + 4; i++) {
			size_t k = i + (size_t)j * nx;
			r->src[k] = 2e-3f;
			r->flags[k] |= WB_CELL_SOURCE;
		}
	r->src[(size_t)(3 * nx / 4) + (size_t)(ny / 2 + 4) * nx] = -5e-3f;
	r->flags[(size_t)(3 * nx / 4) + (size_t)(ny / 2 + 4) * nx] |= WB_CELL_SOURCE;
	size_t sink = (size_t)(7 * nx / 8) + (size_t)(ny / 2) * nx;
	r->flags[sink] |= WB_CELL_SINK_ALL;
	for (int j = ny / 2 - 3; j < ny / 2 + 3; j++)
		for (int i = nx / 3; i < nx / 3 + 5; i++) {
			size_t k = i + (size_t)j * nx;
			r->flags[k] |= WB_CELL_FIXED;
			r->fixed_level[k] = r->z[k] + r->h0[k] + 0.05f;
		}
	for (int j = ny / 2 - 6; j < ny / 2 + 6; j++)
		for (int i = 2 * nx / 3; i < 2 * nx / 3 + 6; i++) {
			size_t k = i + (size_t)j * nx;
			r->mod_u[k] = 0.2f;
			r->mod_v[k] = -0.1f;
			r->mod_k[k] = 0.2f;
			r->flags[k] |= WB_CELL_MODIFIER;
		}
}

/* ---- comparisons ------------------------------------------------------------ */

/* max |a - b| / max(max |a|, floor) over n values */
static double rel_diff(const float *a, const float *b, size_t n, double floor_)
{
	double dm = 0, am = floor_;
	for (size_t k = 0; k < n; k++) {
		double d = fabs((double)a[k] - b[k]);
		if (!(d <= dm))
			dm = d; /* NaN propagates */
		if (fabs(a[k]) > am)
			am = fabs(a[k]);
	}
	return dm / am;
}

static void compare_states(const struct wb_state *cpu, const struct wb_state *gpu,
			   double tol, const char *what)
{
	assert_int_equal(cpu->nx, gpu->nx);
	assert_int_equal(cpu->ny, gpu->ny);
	size_t n = (size_t)cpu->nx * cpu->ny;
	double eh = rel_diff(cpu->h, gpu->h, n, 1e-3);
	double eu = rel_diff(cpu->u, gpu->u, n, 1e-3);
	double ev = rel_diff(cpu->v, gpu->v, n, 1e-3);
	double ef = cpu->foam && gpu->foam ? rel_diff(cpu->foam, gpu->foam, n, 1e-3) : 0;
	print_message("  %s: relative max difference h %.2e u %.2e v %.2e foam %.2e (tolerance %.0e)\n",
		      what, eh, eu, ev, ef, tol);
	assert_true(eh <= tol);
	assert_true(eu <= tol);
	assert_true(ev <= tol);
	assert_true(ef <= tol);
	assert_true((cpu->foam != NULL) == (gpu->foam != NULL));
}

static void run_both(const struct wb_raster *r, const struct wb_sim *sim,
		     long steps, struct wb_state *cpu, struct wb_state *gpu,
		     struct wb_solve_report *rc, struct wb_solve_report *rg)
{
	struct wb_solve_opts o = { 0 };
	o.steps = steps;
	o.threads = 2;
	o.cl_device = dev_index();
	struct wb_diags d;
	wb_diags_init(&d);
	memset(cpu, 0, sizeof(*cpu));
	memset(gpu, 0, sizeof(*gpu));
	enum wb_status s1 = sim->solver == WB_SOLVER_SWE ?
		swe_solve(r, sim, &o, cpu, rc, &d) :
		/* these scenes leave lbm_hybrid off (sim_defaults): the CPU's
		 * pure LBM (test_opencl_hybrid compares the hybrid) */
		lbm_solve_hybrid(r, sim, &o, cpu, rc, &d, 0);
	for (int k = 0; k < d.n; k++)
		if (d.v[k].sev == WB_SEV_ERROR)
			print_message("cpu: %s\n", d.v[k].msg);
	assert_true(s1 == WB_OK || s1 == WB_ESIM);
	wb_diags_release(&d);
	wb_diags_init(&d);
	o.opencl = 1;
	enum wb_status s2 = sim->solver == WB_SOLVER_SWE ?
		cl_swe_solve(r, sim, &o, gpu, rg, &d) : cl_lbm_solve(r, sim, &o, gpu, rg, &d);
	for (int k = 0; k < d.n; k++)
		if (d.v[k].sev == WB_SEV_ERROR)
			print_message("opencl: %s\n", d.v[k].msg);
	/* the same verdict as the CPU (WB_ESIM: its mass-balance check) */
	assert_int_equal(s2, s1);
	wb_diags_release(&d);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_list_devices(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	char *text = NULL;
	assert_int_equal(wb_cl_list_devices(&text, &d), WB_OK);
	assert_non_null(text);
	assert_non_null(strstr(text, "0: "));
	assert_non_null(strstr(text, "compute units"));
	print_message("%s", text);
	free(text);
	/* a device that does not exist is a usage error, not a CPU run */
	struct wb_raster r;
	struct wb_sim sim;
	scene_valley(&r, 16, 12, 0);
	sim_defaults(&sim, WB_SOLVER_LBM);
	struct wb_solve_opts o = { 0 };
	o.steps = 5;
	o.opencl = 1;
	o.cl_device = 999;
	struct wb_state st;
	struct wb_solve_report rep;
	assert_int_equal(cl_lbm_solve(&r, &sim, &o, &st, &rep, &d), WB_EUSAGE);
	assert_true(d.errors >= 1);
	assert_null(st.h);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

/* Kernels that do not compile are WB_ESIM with the compiler's log in the
 * message (here: a build option that breaks the preprocessor). */
static void test_build_error(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	struct cl_env *e = NULL;
	assert_int_equal(cl_env_open_opts(dev_index(), "-DWB_FP64=(", &e, &d),
			 WB_ESIM);
	assert_null(e);
	assert_true(d.errors >= 1);
	assert_non_null(strstr(d.v[d.n - 1].msg, "do not build"));
	assert_non_null(strstr(d.v[d.n - 1].msg, "compiler log"));
	wb_diags_release(&d);
}

static void lbm_case(int variant)
{
	struct wb_raster r;
	struct wb_sim sim;
	if (variant == 0)
		scene_valley(&r, 128, 96, variant);
	else
		scene_valley(&r, 80, 60, variant);
	sim_defaults(&sim, WB_SOLVER_LBM);
	struct wb_state cpu, gpu;
	struct wb_solve_report rc, rg;
	run_both(&r, &sim, 500, &cpu, &gpu, &rc, &rg);
	char what[64];
	snprintf(what, sizeof(what), "lbm variant %d, 500 steps", variant);
	compare_states(&cpu, &gpu, 1e-4, what);
	assert_int_equal(rg.steps, 500);
	assert_int_equal(rg.bytes_per_cell, 92); /* 88 + zi (exact rest) */
	/* mass: the device closes its own balance, and books the same flows */
	print_message("  volumes cpu %.6f + %.6f - %.6f = %.6f, opencl %.6f + %.6f - %.6f = %.6f, clamped %ld / %ld\n",
		      rc.vol_initial, rc.vol_in, rc.vol_out, rc.vol_final,
		      rg.vol_initial, rg.vol_in, rg.vol_out, rg.vol_final,
		      rc.clamped, rg.clamped);
	assert_true(fabs(rg.balance_error - rc.balance_error) < 1e-6);
	assert_true(fabs(rg.vol_final - rc.vol_final) <= 1e-5 * rc.vol_final);
	double flow = fmax(rc.vol_in, 1e-9);
	assert_true(fabs(rg.vol_in - rc.vol_in) <= 1e-4 * flow + 1e-9);
	assert_true(fabs(rg.vol_out - rc.vol_out) <= 1e-4 * fmax(rc.vol_out, flow) + 1e-9);
	/* clamp counts agree to within a few cells of rounding near the limit */
	assert_true(labs(rg.clamped - rc.clamped) <= 5 + rc.clamped / 10000);
	wb_state_free(&cpu);
	wb_state_free(&gpu);
	wb_raster_free(&r);
}

static void test_lbm_discharge_open_walls(void **state)
{
	(void)state;
	lbm_case(0);
}

static void test_lbm_velocity_level(void **state)
{
	(void)state;
	lbm_case(1);
}

static void test_lbm_periodic(void **state)
{
	(void)state;
	lbm_case(2);
}

static void test_lbm_deterministic(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_sim sim;
	scene_valley(&r, 64, 48, 0);
	sim_defaults(&sim, WB_SOLVER_LBM);
	struct wb_solve_opts o = { 0 };
	o.steps = 200;
	o.opencl = 1;
	o.cl_device = dev_index();
	struct wb_state a, b;
	struct wb_solve_report ra, rb;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(cl_lbm_solve(&r, &sim, &o, &a, &ra, &d), WB_OK);
	assert_int_equal(cl_lbm_solve(&r, &sim, &o, &b, &rb, &d), WB_OK);
	size_t n = (size_t)r.nx * r.ny * sizeof(float);
	assert_memory_equal(a.h, b.h, n);
	assert_memory_equal(a.u, b.u, n);
	assert_memory_equal(a.v, b.v, n);
	assert_true(ra.vol_in == rb.vol_in && ra.vol_out == rb.vol_out);
	assert_int_equal(ra.clamped, rb.clamped);
	assert_int_equal(ra.clamp_blocks, rb.clamp_blocks);
	assert_memory_equal(ra.clamp_box, rb.clamp_box, sizeof(ra.clamp_box));
	assert_int_equal(ra.clamp_most_n, rb.clamp_most_n);
	wb_state_free(&a);
	wb_state_free(&b);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

static void test_lbm_steady(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_sim sim;
	scene_valley(&r, 48, 36, 0);
	sim_defaults(&sim, WB_SOLVER_LBM);
	sim.max_steps = 1200;
	struct wb_state cpu, gpu;
	struct wb_solve_report rc, rg;
	run_both(&r, &sim, 0, &cpu, &gpu, &rc, &rg);
	print_message("  steady: cpu %ld steps (converged %d, residual %.2e), opencl %ld steps (converged %d, residual %.2e)\n",
		      rc.steps, rc.converged, rc.residual, rg.steps, rg.converged,
		      rg.residual);
	assert_int_equal(rc.converged, rg.converged);
	/* the same convergence test on the same fields: equal step counts
	 * unless the residual sits on the tolerance within rounding */
	assert_true(labs(rc.steps - rg.steps) <= sim.window);
	compare_states(&cpu, &gpu, 1e-3, "lbm steady state");
	wb_state_free(&cpu);
	wb_state_free(&gpu);
	wb_raster_free(&r);
}

/* ---- SWE ------------------------------------------------------------------ */

/*
 * variant 0: the valley (inflow by discharge, open outflow, walls, island,
 * blocker, sources, sink, fixed level, modifier), foam on;
 * variant 1: the same with MacCormack advection and inflow by velocity
 * into a level edge;
 * variant 2: a cliff across the channel (terrain drops 6 m at x = nx/2):
 * waterfall particles on the host, foam on;
 * variant 3: doubly periodic box with a bump and a modifier.
 */
static void swe_case(int variant, long steps, double tol)
{
	struct wb_raster r;
	struct wb_sim sim;
	int sz = variant == 0 ? 128 : 80;
	scene_valley(&r, sz, sz * 3 / 4, variant == 3 ? 2 : variant == 1 ? 1 : 0);
	sim_defaults(&sim, WB_SOLVER_SWE);
	if (variant == 1)
		sim.maccormack = 1;
	if (variant == 2)
		for (int j = 0; j < r.ny; j++)
			for (int i = r.nx / 2; i < r.nx; i++) {
				size_t k = i + (size_t)j * r.nx;
				r.z[k] -= 6.0f;
				r.h0[k] = 0.0f;
			}
	struct wb_state cpu, gpu;
	struct wb_solve_report rc, rg;
	run_both(&r, &sim, steps, &cpu, &gpu, &rc, &rg);
	char what[64];
	snprintf(what, sizeof(what), "swe variant %d, %ld steps", variant, steps);
	if (cpu.h)
		compare_states(&cpu, &gpu, tol, what);
	print_message("  volumes cpu %.6f + %.6f - %.6f = %.6f (+ %.6f in flight), opencl %.6f + %.6f - %.6f = %.6f (+ %.6f), clamped %ld / %ld, falls %d / %d\n",
		      rc.vol_initial, rc.vol_in, rc.vol_out, rc.vol_final,
		      rc.vol_particles, rg.vol_initial, rg.vol_in, rg.vol_out,
		      rg.vol_final, rg.vol_particles, rc.clamped, rg.clamped,
		      cpu.n_falls, gpu.n_falls);
	assert_int_equal(rg.steps, steps);
	assert_true(fabs(rg.sim_time - rc.sim_time) <= tol * rc.sim_time);
	/* the same balance (the CPU's own verdict may be WB_ESIM) */
	assert_true(fabs(rg.balance_error - rc.balance_error) <= 1e-6);
	assert_true(fabs(rg.vol_final - rc.vol_final) <= tol * rc.vol_final);
	assert_true(fabs(rg.vol_particles - rc.vol_particles) <=
		    tol * rc.vol_final + 1e-9);
	if (variant == 2)
		assert_true(rc.vol_particles > 0 || cpu.n_falls > 0);
	assert_int_equal(cpu.n_falls, gpu.n_falls);
	wb_state_free(&cpu);
	wb_state_free(&gpu);
	wb_raster_free(&r);
}

static void test_swe_valley_foam(void **state)
{
	(void)state;
	swe_case(0, 500, 1e-4);
}

static void test_swe_maccormack_level(void **state)
{
	(void)state;
	swe_case(1, 500, 1e-4);
}

static void test_swe_cliff_particles(void **state)
{
	(void)state;
	swe_case(2, 500, 1e-4);
}

static void test_swe_periodic(void **state)
{
	(void)state;
	swe_case(3, 500, 1e-4);
}

static void test_swe_steady(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_sim sim;
	scene_valley(&r, 48, 36, 0);
	sim_defaults(&sim, WB_SOLVER_SWE);
	sim.max_steps = 1500;
	sim.tolerance = 1e-2;
	struct wb_state cpu, gpu;
	struct wb_solve_report rc, rg;
	run_both(&r, &sim, 0, &cpu, &gpu, &rc, &rg);
	print_message("  swe steady: cpu %ld steps (converged %d, residual %.2e), opencl %ld steps (converged %d, residual %.2e)\n",
		      rc.steps, rc.converged, rc.residual, rg.steps, rg.converged,
		      rg.residual);
	assert_int_equal(rc.converged, rg.converged);
	/* the same window-mean test on the same fields */
	assert_true(labs(rc.steps - rg.steps) <= sim.window);
	compare_states(&cpu, &gpu, 1e-3, "swe steady state (window means)");
	wb_state_free(&cpu);
	wb_state_free(&gpu);
	wb_raster_free(&r);
}

static void test_swe_deterministic(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_sim sim;
	scene_valley(&r, 64, 48, 0);
	sim_defaults(&sim, WB_SOLVER_SWE);
	struct wb_solve_opts o = { 0 };
	o.steps = 150;
	o.opencl = 1;
	o.cl_device = dev_index();
	struct wb_state a, b;
	struct wb_solve_report ra, rb;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(cl_swe_solve(&r, &sim, &o, &a, &ra, &d), WB_OK);
	assert_int_equal(cl_swe_solve(&r, &sim, &o, &b, &rb, &d), WB_OK);
	size_t n = (size_t)r.nx * r.ny * sizeof(float);
	assert_memory_equal(a.h, b.h, n);
	assert_memory_equal(a.u, b.u, n);
	assert_memory_equal(a.v, b.v, n);
	assert_memory_equal(a.foam, b.foam, n);
	assert_true(ra.vol_in == rb.vol_in && ra.vol_out == rb.vol_out);
	assert_true(ra.sim_time == rb.sim_time);
	wb_state_free(&a);
	wb_state_free(&b);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_devices),
		cmocka_unit_test(test_build_error),
		cmocka_unit_test(test_lbm_discharge_open_walls),
		cmocka_unit_test(test_lbm_velocity_level),
		cmocka_unit_test(test_lbm_periodic),
		cmocka_unit_test(test_lbm_deterministic),
		cmocka_unit_test(test_lbm_steady),
		cmocka_unit_test(test_swe_valley_foam),
		cmocka_unit_test(test_swe_maccormack_level),
		cmocka_unit_test(test_swe_cliff_particles),
		cmocka_unit_test(test_swe_periodic),
		cmocka_unit_test(test_swe_steady),
		cmocka_unit_test(test_swe_deterministic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
