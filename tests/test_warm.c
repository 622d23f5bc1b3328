/*
 * test_warm.c - how a bake starts: the hydrological first guess, the
 * state file and warm starts (src/hydro_guess.c, src/warm.c, src/bake.c).
 *
 * A small valley is generated at test time (48 x 96 cells at 2 m, a
 * trapezoidal channel falling 1 % to an open south edge, a basin on its
 * course, a spring at the head; LBM, window 600 steps, tolerance 0.03):
 *   - from the first guess (simulation.initial "hydrology") the LBM is
 *     steady in at most 2/3 of the steps it needs from dry land
 *     ("scene"; measured 3000 vs 6000), and both steady states agree: the
 *     depth-weighted velocity difference is below the scene's tolerance
 *     and every cell that is water (>= 3 cm) in one is within one cell of
 *     water in the other;
 *   - the first guess fills the basin to its spill level (at least, the
 *     flow at the outlet raises it) and leaves a keep_dry basin alone;
 *   - the state file round-trips bit for bit, and is refused (WB_EINPUT,
 *     with a message saying why) for another grid, another terrain, a
 *     corrupt or truncated file and another version;
 *   - a warm start after the spring's discharge rose 25 % is steady in at
 *     most 3 windows (measured 3), and the manifest's start and window
 *     history say so.
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
#include "util.h"
#include "warm.h"

#define TMP "tests/tmp/test_warm"
#define NX 48
#define NY 96
#define DX 2.0

static void show(const struct wb_diags *d)
{
	char buf[2048];
	for (int i = 0; i < d->n; i++) {
		wb_diag_format(&d->v[i], buf, sizeof(buf));
		print_message("  %s\n", buf);
	}
}

static float valley_z(int i, int j)
{
	double x = (i + 0.5) * DX, y = (j + 0.5) * DX, c = NX * DX / 2;
	double a = fabs(x - c) - 4;
	double v = 20 - 0.01 * y + 0.3 * (a > 0 ? a : 0);
	double d = hypot(x - c, y - 100);
	if (d < 18)
		v -= 1.5 * (1 - (d / 18) * (d / 18));
	return (float)v;
}

/* Writes TMP/valley.r32f and TMP/<name>.json; returns the scene path
 * (static buffer). */
static const char *write_valley(const char *name, const char *initial,
				double discharge, const char *extra_sim)
{
	static char path[256];
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	unsigned char *b = malloc(NX * NY * 4);
	assert_non_null(b);
	for (int j = 0; j < NY; j++)
		for (int i = 0; i < NX; i++) {
			float z = valley_z(i, j);
			uint32_t u;
			memcpy(&u, &z, 4);
			for (int k = 0; k < 4; k++)
				b[4 * (i + j * NX) + k] = (unsigned char)(u >> (8 * k));
		}
	assert_int_equal(wb_write_file_atomic(TMP "/valley.r32f", b, NX * NY * 4, &d), WB_OK);
	free(b);
	char text[2048];
	snprintf(text, sizeof(text),
		 "{\"name\": \"valley\", \"version\": 1,\n"
		 " \"terrain\": {\"heightmap\": \"valley.r32f\", \"format\": \"r32f\", \"size\": [%d, %d],\n"
		 "   \"metres_per_pixel\": %g, \"height_scale\": 1, \"height_offset\": 0},\n"
		 " \"boundaries\": {\"west\": \"wall\", \"east\": \"wall\", \"north\": \"wall\", \"south\": \"open\"},\n"
		 " \"materials\": [{\"id\": 1, \"name\": \"w\", \"kind\": \"river\"}],\n"
		 " \"sources\": [{\"type\": \"spring\", \"name\": \"head\", \"point\": [48, 10], \"radius\": 3,\n"
		 "   \"discharge\": %g, \"material\": \"w\"}],\n"
		 " \"simulation\": {\"solver\": \"lbm\", \"manning\": 0.04, \"viscosity\": 0.5,\n"
		 "   \"max_steps\": 40000, \"tolerance\": 0.03, \"window\": 600,\n"
		 "   \"initial\": \"%s\"%s},\n"
		 " \"output\": {\"lods\": 1}}\n",
		 NX, NY, DX, discharge, initial, extra_sim ? extra_sim : "");
	snprintf(path, sizeof(path), TMP "/%s.json", name);
	assert_int_equal(wb_write_file_atomic(path, text, strlen(text), &d), WB_OK);
	wb_diags_release(&d);
	return path;
}

static void load(struct wb_bake *b, const char *scene)
{
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status st = wb_bake_load(b, scene, &d);
	if (st)
		show(&d);
	assert_int_equal(st, WB_OK);
	wb_diags_release(&d);
}

static void solve(struct wb_bake *b)
{
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_solve_opts o = { 0 };
	o.threads = 2;
	enum wb_status st = wb_bake_solve(b, &o, &d);
	if (st)
		show(&d);
	assert_int_equal(st, WB_OK);
	wb_diags_release(&d);
}

/* sqrt(sum hm |ua - ub|^2 / sum hm |ub|^2), hm the mean depth of both */
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

/* Cells water (>= thr) in a with no water in b within one cell. */
static long mask_misses(const struct wb_state *a, const struct wb_state *b,
			float thr)
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

static void test_first_guess_vs_dry(void **state)
{
	(void)state;
	struct wb_bake dry, fg;
	load(&dry, write_valley("dry", "scene", 0.4, NULL));
	solve(&dry);
	load(&fg, write_valley("guess", "hydrology", 0.4, NULL));
	solve(&fg);
	print_message("valley: from dry %ld steps, from the first guess %ld steps "
		      "(%ld lake cells, %ld channel cells, %.1f m^3 added)\n",
		      dry.rep.steps, fg.rep.steps, fg.rep.guess_lake_cells,
		      fg.rep.guess_channel_cells, fg.rep.guess_volume);
	assert_true(dry.rep.converged && fg.rep.converged);
	assert_int_equal(dry.rep.start, WB_START_SCENE);
	assert_int_equal(fg.rep.start, WB_START_HYDROLOGY);
	assert_true(fg.rep.guess_lake_cells > 0 && fg.rep.guess_channel_cells > 0);
	assert_true(3 * fg.rep.steps <= 2 * dry.rep.steps);
	/* one residual per window after the first, the last one below the
	 * tolerance */
	assert_true(fg.rep.n_windows >= 1);
	assert_true(fg.rep.win_residual[fg.rep.n_windows - 1] < fg.sc.sim.tolerance);
	assert_true(fg.rep.win_step[fg.rep.n_windows - 1] == fg.rep.steps);

	double dv = vel_diff(&fg.st, &dry.st);
	long ma = mask_misses(&fg.st, &dry.st, 0.03f);
	long mb = mask_misses(&dry.st, &fg.st, 0.03f);
	print_message("valley: velocity difference %.4f, wet cells beyond one cell %ld + %ld\n",
		      dv, ma, mb);
	assert_true(dv < fg.sc.sim.tolerance);
	assert_int_equal(ma, 0);
	assert_int_equal(mb, 0);

	/* the basin (centre (24, 50)) is filled to at least its spill level:
	 * the lowest terrain on the way out, the channel bed at the basin's
	 * downstream rim (y = 118 m) */
	float spill = valley_z(24, 59);
	size_t c = 24 + (size_t)50 * NX;
	assert_true(fg.r.z[c] + fg.guess_h[c] >= spill);
	assert_true(fg.r.z[c] + fg.guess_h[c] < spill + 0.3f);
	/* the first guess is no guess at the scene's start: dry start had
	 * no water */
	assert_true(dry.rep.start_volume == 0);
	assert_true(fg.rep.start_volume > 0);
	wb_bake_release(&dry);
	wb_bake_release(&fg);
}

/* Version 3 stores only the runs of WB_STATE_RUN values with a bit set:
 * a mostly dry state makes a small file that gives back every value bit
 * for bit (-0 and the last, shorter run included), and the same bytes on
 * 1 and 2 threads. A run dropped from the file, or a bitmap bit past the
 * last run, is refused as truncated or corrupt. */
static void test_state_runs(void **state)
{
	(void)state;
	const int nx = 1000, ny = 300; /* 300,000 cells: 1172 runs, the last of 224 */
	const size_t n = (size_t)nx * ny, R = (n + WB_STATE_RUN - 1) / WB_STATE_RUN;
	struct wb_raster r;
	struct wb_state s, t;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	assert_int_equal(wb_raster_alloc(&r, nx, ny, 2.0), WB_OK);
	memset(&s, 0, sizeof(s));
	s.nx = nx;
	s.ny = ny;
	s.h = calloc(n, sizeof(float));
	s.u = calloc(n, sizeof(float));
	s.v = calloc(n, sizeof(float));
	assert_non_null(s.h);
	assert_non_null(s.u);
	assert_non_null(s.v);
	for (size_t k = 0; k < n; k++)
		r.z[k] = (float)(k % 97) * 0.5f;
	/* a river: 10 cells of rows 0..99 near x = 500; a -0 in u far from
	   it; the grid's last cell */
	for (int y = 0; y < 100; y++)
		for (int x = 495; x < 505; x++) {
			s.h[x + (size_t)y * nx] = 0.25f + 0.001f * (float)y;
			s.u[x + (size_t)y * nx] = 1.5f;
		}
	s.u[7 * WB_STATE_RUN + 3] = -0.0f;
	s.v[n - 1] = 1e-30f;
	size_t runs = 0;
	for (size_t q = 0; q < R; q++)
		for (int c = 0; c < 3; c++) {
			const float *f = c == 0 ? s.h : c == 1 ? s.u : s.v;
			int any = 0;
			for (size_t k = q * WB_STATE_RUN; k < n && k < (q + 1) * WB_STATE_RUN; k++)
				any |= memcmp(&f[k], &(float){ 0.0f }, 4) != 0;
			runs += any ? (q + 1 < R ? WB_STATE_RUN : n - q * WB_STATE_RUN) : 0;
		}
	const char *p1 = TMP "/runs1.wbs", *p2 = TMP "/runs2.wbs";
	assert_int_equal(wb_state_save(p1, &r, WB_SOLVER_LBM, &s, NULL, NULL, 1, &d), WB_OK);
	assert_int_equal(wb_state_save(p2, &r, WB_SOLVER_LBM, &s, NULL, NULL, 2, &d), WB_OK);
	unsigned char *b1, *b2;
	size_t l1, l2;
	assert_int_equal(wb_read_file(p1, &b1, &l1, &d), WB_OK);
	assert_int_equal(wb_read_file(p2, &b2, &l2, &d), WB_OK);
	assert_int_equal(l1, l2);
	assert_memory_equal(b1, b2, l1);
	/* header, three bitmaps, the stored runs, the digest */
	assert_int_equal(l1, 80 + 3 * ((R + 7) / 8) + 4 * runs + 32);
	assert_true(l1 < 3 * n * 4 / 10); /* a tenth of the dense file */
	assert_int_equal(wb_state_load(p1, &r, &t, NULL, NULL, NULL, 2, &d), WB_OK);
	assert_memory_equal(t.h, s.h, n * sizeof(float));
	assert_memory_equal(t.u, s.u, n * sizeof(float));
	assert_memory_equal(t.v, s.v, n * sizeof(float));
	wb_state_free(&t);

	/* the digest covers everything: a flipped bit in a stored run */
	b1[80 + (R + 7) / 8 + 17] ^= 4;
	assert_int_equal(wb_write_file_atomic(TMP "/runsbad.wbs", b1, l1, &d), WB_OK);
	int from = d.n;
	assert_int_equal(wb_state_load(TMP "/runsbad.wbs", &r, &t, NULL, NULL, NULL, 0, &d),
			 WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "corrupt"));
	b1[80 + (R + 7) / 8 + 17] ^= 4;
	/* a run fewer in the file than the bitmap says */
	assert_int_equal(wb_write_file_atomic(TMP "/runsbad.wbs", b1,
					      l1 - 4 * WB_STATE_RUN, &d), WB_OK);
	from = d.n;
	assert_int_equal(wb_state_load(TMP "/runsbad.wbs", &r, &t, NULL, NULL, NULL, 0, &d),
			 WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "truncated"));
	assert_null(t.h);
	/* a bit past the last run of the depth's bitmap (digest redone) */
	b1[80 + (R + 7) / 8 - 1] |= 0x80;
	wb_sha256_pieces(b1, l1 - 32, 0, NULL, b1 + l1 - 32);
	assert_int_equal(wb_write_file_atomic(TMP "/runsbad.wbs", b1, l1, &d), WB_OK);
	from = d.n;
	assert_int_equal(wb_state_load(TMP "/runsbad.wbs", &r, &t, NULL, NULL, NULL, 0, &d),
			 WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "truncated or corrupt"));
	free(b1);
	free(b2);
	wb_state_free(&s);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

/* The digest of pieces: SHA-256 over the pieces' SHA-256s, in order, the
 * last piece shorter; the same on 1 and 2 threads and through get. */
static void copy_bytes(const void *data, size_t off, size_t n, unsigned char *buf)
{
	memcpy(buf, (const unsigned char *)data + off, n);
}

static void test_digest_of_pieces(void **state)
{
	(void)state;
	const size_t len = 2 * WB_SHA_PIECE + 12345;
	unsigned char *b = malloc(len), dg[3 * 32], want[32], got[32];
	assert_non_null(b);
	for (size_t k = 0; k < len; k++)
		b[k] = (unsigned char)(k * 2654435761u >> 13);
	wb_sha256(b, WB_SHA_PIECE, dg);
	wb_sha256(b + WB_SHA_PIECE, WB_SHA_PIECE, dg + 32);
	wb_sha256(b + 2 * WB_SHA_PIECE, 12345, dg + 64);
	wb_sha256(dg, sizeof(dg), want);
	assert_int_equal(wb_sha256_pieces(b, len, 1, NULL, got), 0);
	assert_memory_equal(got, want, 32);
	memset(got, 0, 32);
	assert_int_equal(wb_sha256_pieces(b, len, 2, copy_bytes, got), 0);
	assert_memory_equal(got, want, 32);
	/* one piece: the SHA-256 of its digest, not of the bytes */
	wb_sha256(b, 100, dg);
	wb_sha256(dg, 32, want);
	assert_int_equal(wb_sha256_pieces(b, 100, 2, NULL, got), 0);
	assert_memory_equal(got, want, 32);
	free(b);
}

static void test_keep_dry(void **state)
{
	(void)state;
	struct wb_bake b;
	load(&b, write_valley("keepdry", "hydrology", 0.4,
			      ", \"keep_dry\": [{\"name\": \"basin\", \"point\": [48, 100]}]"));
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_bake_guess(&b, &d), WB_OK);
	wb_diags_release(&d);
	assert_int_equal(b.guess.lake_cells, 0);
	assert_true(b.guess.kept_dry > 20);
	size_t c = 24 + (size_t)50 * NX;
	assert_true(b.guess_h[c] == 0.0f);
	/* the channel above the basin still has its water */
	assert_true(b.guess_h[24 + (size_t)20 * NX] > 0.02f);
	wb_bake_release(&b);

	/* the same basin named by a small polygon around that point */
	load(&b, write_valley("keepdrypoly", "hydrology", 0.4,
			      ", \"keep_dry\": [{\"name\": \"basin\", \"polygon\": "
			      "[[46, 98], [50, 98], [50, 102], [46, 102]]}]"));
	wb_diags_init(&d);
	assert_int_equal(wb_bake_guess(&b, &d), WB_OK);
	wb_diags_release(&d);
	assert_int_equal(b.guess.lake_cells, 0);
	assert_true(b.guess.kept_dry > 20);
	assert_true(b.guess_h[c] == 0.0f);
	assert_true(b.guess_h[24 + (size_t)20 * NX] > 0.02f);
	wb_bake_release(&b);
}

static void test_state_file(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_state s, t;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	assert_int_equal(wb_raster_alloc(&r, 7, 5, 1.5), WB_OK);
	memset(&s, 0, sizeof(s));
	s.nx = 7;
	s.ny = 5;
	s.dx = 1.5;
	s.h = malloc(35 * sizeof(float));
	s.u = malloc(35 * sizeof(float));
	s.v = malloc(35 * sizeof(float));
	float g[35];
	assert_non_null(s.h);
	assert_non_null(s.u);
	assert_non_null(s.v);
	for (int k = 0; k < 35; k++) {
		r.z[k] = (float)(k % 7) * 0.25f - (float)(k / 7);
		s.h[k] = (float)k * 0.01f;
		s.u[k] = -0.5f + (float)k / 35.0f;
		s.v[k] = 1.0f / (float)(k + 1);
		g[k] = (float)k * 0.02f;
	}
	struct wb_solve_report rep;
	memset(&rep, 0, sizeof(rep));
	rep.steps = 1234;
	rep.converged = 1;
	const char *p = TMP "/s.wbs";
	assert_int_equal(wb_state_save(p, &r, WB_SOLVER_SWE, &s, g, &rep, 0, &d), WB_OK);
	float *gl = NULL;
	int solver = -1;
	assert_int_equal(wb_state_load(p, &r, &t, &gl, NULL, &solver, 0, &d), WB_OK);
	assert_int_equal(solver, WB_SOLVER_SWE);
	assert_non_null(gl);
	assert_memory_equal(t.h, s.h, 35 * sizeof(float));
	assert_memory_equal(t.u, s.u, 35 * sizeof(float));
	assert_memory_equal(t.v, s.v, 35 * sizeof(float));
	assert_memory_equal(gl, g, 35 * sizeof(float));
	assert_null(t.foam);
	free(gl);
	wb_state_free(&t);

	/* another terrain: refused, saying why */
	int from = d.n;
	r.z[17] += 0.001f;
	assert_int_equal(wb_state_load(p, &r, &t, NULL, NULL, NULL, 0, &d), WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "different terrain"));
	assert_null(t.h);
	r.z[17] -= 0.001f;
	/* another grid */
	struct wb_raster r2;
	assert_int_equal(wb_raster_alloc(&r2, 5, 7, 1.5), WB_OK);
	from = d.n;
	assert_int_equal(wb_state_load(p, &r2, &t, NULL, NULL, NULL, 0, &d), WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "grid"));
	wb_raster_free(&r2);

	/* corrupt, truncated, another version */
	unsigned char *b;
	size_t len;
	assert_int_equal(wb_read_file(p, &b, &len, &d), WB_OK);
	b[100] ^= 1;
	assert_int_equal(wb_write_file_atomic(TMP "/bad.wbs", b, len, &d), WB_OK);
	from = d.n;
	assert_int_equal(wb_state_load(TMP "/bad.wbs", &r, &t, NULL, NULL, NULL, 0, &d), WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "corrupt"));
	b[100] ^= 1;
	assert_int_equal(wb_write_file_atomic(TMP "/bad.wbs", b, len - 5, &d), WB_OK);
	from = d.n;
	assert_int_equal(wb_state_load(TMP "/bad.wbs", &r, &t, NULL, NULL, NULL, 0, &d), WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "truncated"));
	b[8] = WB_STATE_VERSION + 1;
	assert_int_equal(wb_write_file_atomic(TMP "/bad.wbs", b, len, &d), WB_OK);
	from = d.n;
	assert_int_equal(wb_state_load(TMP "/bad.wbs", &r, &t, NULL, NULL, NULL, 0, &d), WB_EINPUT);
	assert_non_null(strstr(d.v[from].msg, "version"));
	free(b);
	from = d.n;
	assert_int_equal(wb_state_load(TMP "/missing.wbs", &r, &t, NULL, NULL, NULL, 0, &d), WB_EINPUT);

	wb_state_free(&s);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

/* A file with a valid digest but values no bake writes (crafted: the
 * digest proves integrity, not origin) is refused as input, naming the
 * field and the cell, not handed to the solver (a NaN velocity made the
 * SWE diverge, exit 3) */
static void test_state_hostile_values(void **state)
{
	(void)state;
	struct wb_raster r;
	struct wb_state s, t;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	assert_int_equal(wb_raster_alloc(&r, 4, 3, 1.0), WB_OK);
	memset(&s, 0, sizeof(s));
	s.nx = 4;
	s.ny = 3;
	s.dx = 1.0;
	s.h = calloc(12, sizeof(float));
	s.u = calloc(12, sizeof(float));
	s.v = calloc(12, sizeof(float));
	float g[12] = { 0 };
	assert_non_null(s.h);
	assert_non_null(s.u);
	assert_non_null(s.v);
	const char *p = TMP "/hostile.wbs";
	const struct {
		float *field;
		float value;
		int solver;
		const char *msg;
	} cases[] = {
		{ s.u, NAN, WB_SOLVER_SWE, "its u at cell (1, 2) is nan; expected a finite value" },
		{ s.v, INFINITY, WB_SOLVER_SWE, "its v at cell (1, 2) is inf;" },
		{ s.u, -3e38f, WB_SOLVER_SWE, "its u at cell (1, 2) is -3e+38;" },
		{ s.h, 3e38f, WB_SOLVER_LBM, "its depth at cell (1, 2) is 3e+38; expected a depth from 0 to 1e+18 m" },
		{ s.h, -1.0f, WB_SOLVER_LBM, "its depth at cell (1, 2) is -1;" },
		{ g, -3.4e38f, WB_SOLVER_LBM, "its first-guess depth at cell (1, 2) is -3.4e+38;" },
		{ g, NAN, WB_SOLVER_LBM, "its first-guess depth at cell (1, 2) is nan;" },
		{ NULL, 0, 7, "names solver 7; expected 0 (lbm) or 1 (swe)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].field)
			cases[i].field[1 + 2 * 4] = cases[i].value;
		assert_int_equal(wb_state_save(p, &r, cases[i].solver, &s, g, NULL, 1, &d), WB_OK);
		int from = d.n;
		assert_int_equal(wb_state_load(p, &r, &t, NULL, NULL, NULL, 1, &d), WB_EINPUT);
		assert_int_equal(d.n, from + 1);
		assert_non_null(strstr(d.v[from].msg, cases[i].msg));
		assert_null(t.h);
		if (cases[i].field)
			cases[i].field[1 + 2 * 4] = 0.0f;
	}
	/* the same file with -0 and large finite values is fine */
	s.u[5] = -0.0f;
	s.h[5] = 1e6f;
	s.v[5] = -1e3f;
	assert_int_equal(wb_state_save(p, &r, WB_SOLVER_SWE, &s, g, NULL, 1, &d), WB_OK);
	assert_int_equal(wb_state_load(p, &r, &t, NULL, NULL, NULL, 1, &d), WB_OK);
	assert_memory_equal(t.u, s.u, 12 * sizeof(float));
	wb_state_free(&t);
	wb_state_free(&s);
	wb_raster_free(&r);
	wb_diags_release(&d);
}

static void test_warm_start_after_discharge_change(void **state)
{
	(void)state;
	struct wb_bake a, b;
	struct wb_diags d;
	wb_diags_init(&d);
	load(&a, write_valley("warm_a", "hydrology", 0.4, NULL));
	solve(&a);
	assert_true(a.rep.converged);
	assert_int_equal(wb_state_save(TMP "/" WB_STATE_FILE, &a.r, a.sc.sim.solver,
				       &a.st, a.guess_h, &a.rep, 0, &d), WB_OK);
	/* the artist raises the spring's discharge by 25 % */
	load(&b, write_valley("warm_b", "hydrology", 0.5, NULL));
	assert_int_equal(wb_bake_warm(&b, TMP, 0, &d), WB_OK);
	solve(&b);
	long windows = b.rep.steps / b.sc.sim.window;
	print_message("valley warm start: %ld steps (%ld windows) after %ld from the first guess\n",
		      b.rep.steps, windows, a.rep.steps);
	assert_true(b.rep.converged);
	assert_int_equal(b.rep.start, WB_START_WARM);
	assert_true(windows <= 3);
	/* the new state is the new discharge's: the channel runs deeper */
	size_t k = 24 + (size_t)20 * NX;
	assert_true(b.st.h[k] > a.st.h[k] + 0.005f);
	assert_true(b.rep.balance_error < 1e-3);
	wb_bake_release(&a);
	wb_bake_release(&b);
	wb_diags_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_file),
		cmocka_unit_test(test_state_hostile_values),
		cmocka_unit_test(test_state_runs),
		cmocka_unit_test(test_digest_of_pieces),
		cmocka_unit_test(test_keep_dry),
		cmocka_unit_test(test_first_guess_vs_dry),
		cmocka_unit_test(test_warm_start_after_discharge_change),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
