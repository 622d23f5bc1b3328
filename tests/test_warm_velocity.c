/*
 * test_warm_velocity.c - a SWE warm start (wbake --from) carries the
 * earlier bake's circulation (docs/hydrology.md "Warm starts").
 *
 * Scene: a 48 x 112 m valley at 1 m per cell whose creek runs through a
 * 4.5 m deep tarn (radius 16 m); SWE, window 500, tolerance 0.03. A deep
 * lake's gyre takes most of a bake to spin up from rest (the residual is
 * weighted by depth), so a warm start at rest is no faster than a fresh
 * bake. Asserted:
 *   - after an eddy modifier below the tarn moved 6 m, the warm start is
 *     steady (the solver's own window residual below the tolerance) in at
 *     most 3 windows, in fewer steps than the same start at rest (the
 *     solver run directly with the saved depth and no velocity) and than a
 *     fresh bake from the first guess; its steady state agrees with the
 *     fresh bake's (depth-weighted velocity difference below three times
 *     the tolerance, wet masks within one cell: the tarn's gyre has no one
 *     steady state to that precision, measured 0.042 before and 0.075
 *     since the SWE's friction counts the flow along each face, 2026-11-29,
 *     and 0.043-0.045 at tolerances 0.015-0.02, where the bake is steady
 *     by 0.01 per window; docs/hydrology.md "Warm starts"); the start
 *     holds exactly the
 *     saved water; 1 and 2 threads give the same bytes;
 *   - after a modifier inside the tarn moved, the tarn starts at rest (its
 *     old gyre would persist: another steady state, 0.2 off the fresh
 *     bake's when carried), and the warm start agrees with a fresh bake;
 *   - the state file keeps the modifier fields (version 2, bits 5-7) bit for
 *     bit; a version 1 file (no modifier fields) is still read, one
 *     claiming them is refused as corrupt.
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

#include "bake.h"
#include "solve.h"
#include "util.h"
#include "warm.h"

#define TMP "tests/tmp/test_warm_velocity"
#define NX 48
#define NY 112

static void show(const struct wb_diags *d)
{
	char buf[2048];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		print_message("  %s\n", buf);
	}
}

static float tarn_z(int i, int j)
{
	double x = i + 0.5, y = j + 0.5, c = NX / 2.0;
	double a = fabs(x - c) - 3;
	double v = 20 - 0.02 * y + 0.4 * (a > 0 ? a : 0);
	double d = hypot(x - c - 2, y - 56);
	if (d < 16)
		v -= 4.5 * (1 - (d / 16) * (d / 16));
	return (float)v;
}

static void write_terrain(void)
{
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	unsigned char *b = malloc((size_t)NX * NY * 4);
	assert_non_null(b);
	for (int j = 0; j < NY; j++)
		for (int i = 0; i < NX; i++) {
			float f = tarn_z(i, j);
			uint32_t u;
			memcpy(&u, &f, 4);
			for (int k = 0; k < 4; k++)
				b[4 * (i + (size_t)j * NX) + k] = (unsigned char)(u >> (8 * k));
		}
	assert_int_equal(wb_write_file_atomic(TMP "/tarn.r32f", b, (size_t)NX * NY * 4, &d),
			 WB_OK);
	free(b);
	wb_diags_release(&d);
}

static const char *write_scene(const char *name, double eddy_y)
{
	static char path[256];
	char text[2048];
	struct wb_diags d;
	wb_diags_init(&d);
	snprintf(text, sizeof(text),
		 "{\"name\": \"tarn\", \"version\": 1,\n"
		 " \"terrain\": {\"heightmap\": \"tarn.r32f\", \"format\": \"r32f\", \"size\": [%d, %d],\n"
		 "   \"metres_per_pixel\": 1, \"height_scale\": 1, \"height_offset\": 0},\n"
		 " \"boundaries\": {\"west\": \"wall\", \"east\": \"wall\", \"north\": \"wall\", \"south\": \"open\"},\n"
		 " \"materials\": [{\"id\": 1, \"name\": \"w\", \"kind\": \"river\"}],\n"
		 " \"sources\": [{\"type\": \"spring\", \"name\": \"head\", \"point\": [24, 6], \"radius\": 2,\n"
		 "   \"discharge\": 0.3, \"material\": \"w\"}],\n"
		 " \"modifiers\": [{\"name\": \"eddy\", \"center\": [24, %g], \"radius\": 4,\n"
		 "   \"direction\": [1, 0], \"speed\": 0.3, \"strength\": 0.2}],\n"
		 " \"simulation\": {\"solver\": \"swe\", \"manning\": 0.04,\n"
		 "   \"max_steps\": 40000, \"tolerance\": 0.03, \"window\": 500},\n"
		 " \"output\": {\"lods\": 1}}\n",
		 NX, NY, eddy_y);
	snprintf(path, sizeof(path), TMP "/%s.json", name);
	assert_int_equal(wb_write_file_atomic(path, text, strlen(text), &d), WB_OK);
	wb_diags_release(&d);
	return path;
}

static void bake(struct wb_bake *b, const char *scene, const char *from, int threads)
{
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status st = wb_bake_load(b, scene, &d);
	if (!st && from)
		st = wb_bake_warm(b, from, 0, &d);
	if (!st) {
		struct wb_solve_opts o = { 0 };
		o.threads = threads;
		st = wb_bake_solve(b, &o, &d);
	}
	if (st)
		show(&d);
	assert_int_equal(st, WB_OK);
	wb_diags_release(&d);
}

/* bake 'scene' from the first guess and save its state in TMP/dir */
static void bake_saved(struct wb_bake *a, const char *scene, const char *dir)
{
	struct wb_diags d;
	char path[256];
	wb_diags_init(&d);
	bake(a, scene, NULL, 2);
	assert_true(a->rep.converged);
	snprintf(path, sizeof(path), TMP "/%s", dir);
	assert_int_equal(wb_mkdirs(path, &d), WB_OK);
	snprintf(path, sizeof(path), TMP "/%s/" WB_STATE_FILE, dir);
	assert_int_equal(wb_state_save(path, &a->r, a->sc.sim.solver, &a->st,
				       a->guess_h, &a->rep, 0, &d), WB_OK);
	wb_diags_release(&d);
}

static double vel_diff(const struct wb_state *a, const struct wb_state *b)
{
	double num = 0, den = 0;
	for (size_t k = 0; k < (size_t)a->nx * a->ny; k++) {
		double hm = 0.5 * ((double)a->h[k] + b->h[k]);
		double du = (double)a->u[k] - b->u[k], dv = (double)a->v[k] - b->v[k];
		num += hm * (du * du + dv * dv);
		den += hm * ((double)b->u[k] * b->u[k] + (double)b->v[k] * b->v[k]);
	}
	return den > 0 ? sqrt(num / den) : 0;
}

static long misses(const struct wb_state *a, const struct wb_state *b, float thr)
{
	long miss = 0;
	for (int j = 0; j < a->ny; j++)
		for (int i = 0; i < a->nx; i++) {
			if (!(a->h[i + (size_t)j * a->nx] >= thr))
				continue;
			int ok = 0;
			for (int y = j - 1; y <= j + 1; y++)
				for (int x = i - 1; x <= i + 1; x++)
					if (x >= 0 && y >= 0 && x < a->nx && y < a->ny &&
					    b->h[x + (size_t)y * a->nx] >= thr)
						ok = 1;
			miss += !ok;
		}
	return miss;
}

/* the warm start's depth (a modifier move leaves the first guess as it
 * was, so it is the saved depth) run at rest: steps to steady */
static long steps_at_rest(struct wb_bake *b, const struct wb_state *saved)
{
	struct wb_diags d;
	struct wb_state st;
	struct wb_solve_report rep;
	wb_diags_init(&d);
	memset(&st, 0, sizeof(st));
	float *keep = b->r.h0;
	b->r.h0 = saved->h;
	b->r.u0 = b->r.v0 = NULL;
	struct wb_solve_opts o = { 0 };
	o.threads = 2;
	enum wb_status s = swe_solve(&b->r, &b->sc.sim, &o, &st, &rep, &d);
	b->r.h0 = keep;
	if (s)
		show(&d);
	assert_int_equal(s, WB_OK);
	assert_true(rep.converged);
	wb_state_free(&st);
	wb_diags_release(&d);
	return rep.steps;
}

static void test_warm_carries_circulation(void **state)
{
	(void)state;
	struct wb_bake a, b, b1, c;
	write_terrain();
	bake_saved(&a, write_scene("below", 95), "below");
	const char *moved = write_scene("below_moved", 101);
	bake(&b, moved, TMP "/below", 2);
	bake(&b1, moved, TMP "/below", 1);
	bake(&c, moved, NULL, 2);
	long w = b.sc.sim.window;
	long rest = steps_at_rest(&b, &a.st);
	double vd = vel_diff(&b.st, &c.st);
	float thr = (float)c.sc.output.min_depth;
	long m = misses(&b.st, &c.st, thr) + misses(&c.st, &b.st, thr);
	print_message("  before %ld steps; modifier moved below the tarn: warm %ld steps, at rest %ld, first guess %ld; "
		      "warm vs first guess: velocity difference %.4f, %ld wet misses\n",
		      a.rep.steps, b.rep.steps, rest, c.rep.steps, vd, m);
	assert_int_equal(b.rep.start, WB_START_WARM);
	assert_true(b.rep.converged);
	assert_true(b.rep.residual < b.sc.sim.tolerance);
	assert_true(b.rep.steps <= 3 * w);
	assert_true(b.rep.steps < rest);
	assert_true(c.rep.converged);
	assert_true(b.rep.steps < c.rep.steps);
	assert_true(vd < 3 * c.sc.sim.tolerance);
	assert_int_equal(m, 0);
	/* the start is the saved water, to the last bit of the sum */
	double vs = 0;
	size_t n = (size_t)NX * NY;
	for (size_t k = 0; k < n; k++)
		vs += a.st.h[k];
	assert_true(b.rep.start_volume == vs * b.r.dx * b.r.dx);
	assert_true(b.rep.balance_error < 1e-6);
	/* thread count changes no byte */
	assert_int_equal(b.rep.steps, b1.rep.steps);
	assert_memory_equal(b.st.h, b1.st.h, n * sizeof(float));
	assert_memory_equal(b.st.u, b1.st.u, n * sizeof(float));
	assert_memory_equal(b.st.v, b1.st.v, n * sizeof(float));
	wb_bake_release(&a);
	wb_bake_release(&b);
	wb_bake_release(&b1);
	wb_bake_release(&c);
}

static void test_warm_lake_modifier_at_rest(void **state)
{
	(void)state;
	struct wb_bake a, b, c;
	write_terrain();
	bake_saved(&a, write_scene("inside", 70), "inside");
	const char *moved = write_scene("inside_moved", 76);
	bake(&b, moved, TMP "/inside", 2);
	bake(&c, moved, NULL, 2);
	double vd = vel_diff(&b.st, &c.st);
	float thr = (float)c.sc.output.min_depth;
	long m = misses(&b.st, &c.st, thr) + misses(&c.st, &b.st, thr);
	print_message("  modifier moved inside the tarn: warm %ld steps, first guess %ld; velocity difference %.4f, %ld wet misses\n",
		      b.rep.steps, c.rep.steps, vd, m);
	assert_true(b.rep.converged);
	assert_true(c.rep.converged);
	assert_true(vd < 2 * c.sc.sim.tolerance);
	assert_int_equal(m, 0);
	wb_bake_release(&a);
	wb_bake_release(&b);
	wb_bake_release(&c);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (unsigned char)(v >> (8 * k));
}

static void test_state_modifier_fields(void **state)
{
	(void)state;
	struct wb_bake a;
	struct wb_diags d;
	struct wb_state t;
	float *mod[3];
	wb_diags_init(&d);
	write_terrain();
	memset(&a, 0, sizeof(a));
	assert_int_equal(wb_bake_load(&a, write_scene("fields", 95), &d), WB_OK);
	size_t n = (size_t)NX * NY;
	/* a state of the right shape: the solver's output is not needed */
	struct wb_state s = { NX, NY, 1.0, a.r.z, a.r.z, a.r.z, NULL, NULL, 0, NULL };
	const char *p = TMP "/fields.wbs";
	assert_int_equal(wb_state_save(p, &a.r, WB_SOLVER_SWE, &s, NULL, NULL, 0, &d), WB_OK);
	assert_int_equal(wb_state_load(p, &a.r, &t, NULL, mod, NULL, 0, &d), WB_OK);
	for (int c = 0; c < 3; c++)
		assert_non_null(mod[c]);
	assert_memory_equal(mod[0], a.r.mod_u, n * sizeof(float));
	assert_memory_equal(mod[1], a.r.mod_v, n * sizeof(float));
	assert_memory_equal(mod[2], a.r.mod_k, n * sizeof(float));
	for (int c = 0; c < 3; c++)
		free(mod[c]);
	wb_state_free(&t);

	/* version 1 (dense, one SHA-256 per hash; docs/state.md): fields
	 * bits 5-7 are refused ... */
	const float *ff[8] = { a.r.z, a.r.z, a.r.z, NULL, NULL,
			       a.r.mod_u, a.r.mod_v, a.r.mod_k };
	size_t len = 80 + 6 * n * 4 + 32;
	unsigned char *b = calloc(len, 1);
	assert_non_null(b);
	memcpy(b, "WBSTATE", 8);
	put_u32(b + 8, 1);
	put_u32(b + 12, NX);
	put_u32(b + 16, NY);
	put_u32(b + 20, WB_SOLVER_SWE);
	memcpy(b + 24, &a.r.dx, 8);
	assert_int_equal(wb_terrain_hash(&a.r, 1, 0, b + 32), 0);
	put_u32(b + 76, 7u | 7u << 5);
	unsigned char *q = b + 80;
	for (int c = 0; c < 8; c++)
		for (size_t k = 0; ff[c] && k < n; k++, q += 4)
			memcpy(q, &ff[c][k], 4); /* a little-endian machine */
	wb_sha256(b, len - 32, b + len - 32);
	assert_int_equal(wb_write_file_atomic(TMP "/v1bad.wbs", b, len, &d), WB_OK);
	int from = d.n;
	assert_int_equal(wb_state_load(TMP "/v1bad.wbs", &a.r, &t, NULL, mod, NULL, 0, &d),
			 WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "corrupt"));
	/* ... and as version 2 the same bytes are read, modifiers included */
	put_u32(b + 8, 2);
	wb_sha256(b, len - 32, b + len - 32);
	assert_int_equal(wb_write_file_atomic(TMP "/v2.wbs", b, len, &d), WB_OK);
	assert_int_equal(wb_state_load(TMP "/v2.wbs", &a.r, &t, NULL, mod, NULL, 0, &d), WB_OK);
	assert_memory_equal(t.h, a.r.z, n * sizeof(float));
	assert_memory_equal(mod[2], a.r.mod_k, n * sizeof(float));
	for (int c = 0; c < 3; c++)
		free(mod[c]);
	wb_state_free(&t);
	/* ... a version 2 file whose terrain hash is version 3's is another
	 * terrain: the hash follows the file's version */
	assert_int_equal(wb_terrain_hash(&a.r, 3, 0, b + 32), 0);
	wb_sha256(b, len - 32, b + len - 32);
	assert_int_equal(wb_write_file_atomic(TMP "/v2bad.wbs", b, len, &d), WB_OK);
	from = d.n;
	assert_int_equal(wb_state_load(TMP "/v2bad.wbs", &a.r, &t, NULL, mod, NULL, 0, &d),
			 WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "different terrain"));
	/* ... and a true version 1 file (depth, u, v) is read, no modifiers */
	assert_int_equal(wb_terrain_hash(&a.r, 1, 0, b + 32), 0);
	put_u32(b + 8, 1);
	size_t v1 = 80 + 3 * n * 4 + 32;
	put_u32(b + 76, 7);
	wb_sha256(b, v1 - 32, b + v1 - 32);
	assert_int_equal(wb_write_file_atomic(TMP "/v1.wbs", b, v1, &d), WB_OK);
	assert_int_equal(wb_state_load(TMP "/v1.wbs", &a.r, &t, NULL, mod, NULL, 0, &d), WB_OK);
	for (int c = 0; c < 3; c++)
		assert_null(mod[c]);
	assert_memory_equal(t.h, a.r.z, n * sizeof(float));
	wb_state_free(&t);
	free(b);
	wb_bake_release(&a);
	wb_diags_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_modifier_fields),
		cmocka_unit_test(test_warm_carries_circulation),
		cmocka_unit_test(test_warm_lake_modifier_at_rest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
