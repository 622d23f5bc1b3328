/*
 * probe_lbm_rest.c - which populations of a lake or ocean at rest move, by
 * how many units, and which term's rounding moves them (issue 11, item 3;
 * docs/lbm.md, "The ocean at rest, measured"). Not a test: it asserts
 * nothing and prints a report. Build: make build/rel/tests/probe_lbm_rest;
 * run: build/rel/tests/probe_lbm_rest [ocean|lake] [steps].
 *
 * It builds test_validation's ocean case (the same raster), initialises
 * the LBM with the validation's parameters (hybrid on), steps once and,
 * for every LBM cell (not FV, not held), splits the change of each
 * outgoing population B_a into the terms of the update at rest:
 *   B_a(t+1) - B_a(t) = RND(d_eq + d_M + bed_a) - beta_a
 * where F_a is the pulled population, beta_a = B_a(t) - F_a the bed
 * transfer the state carries along the link, d_eq = omega (feq_a(h, 0) -
 * F_a) the collision's pull toward the float equilibrium (exact
 * arithmetic), d_M the part of the momentum the pulled populations carry
 * (sum c_a F_a != 0) and bed_a the kernel's bed transfer (float, as the
 * kernel computes it). Then it steps on and prints how many populations
 * differ from the initial state.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "lbm.h"
#include "solve.h"
#include "wbake.h"

static double noise(int i, int j, unsigned seed)
{
	uint32_t x = (uint32_t)i * 374761393u + (uint32_t)j * 668265263u + seed * 2246822519u;
	x = (x ^ (x >> 13)) * 1274126177u;
	x ^= x >> 16;
	return (double)(x & 0xffffff) / (double)0x800000 - 1.0;
}

/* test_validation.c's ocean_case raster */
static int ocean_raster(struct wb_raster *r)
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
	if (wb_scene_parse(scene, sizeof(scene) - 1, "coastcase.json", NULL, &sc,
			   &d) != WB_OK)
		return -1;
	struct wb_heightmap hm;
	memset(&hm, 0, sizeof(hm));
	hm.nx = nx;
	hm.ny = ny;
	hm.z = malloc(sizeof(float) * nx * ny);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			double z = -12.0 + 0.2 * i + 0.6 * noise(i, j, 7) +
				   3.0 * sin(0.15 * j) * (i > 50);
			if (i > 70 && j > 20 && j < 36)
				z += 6.0 * (i - 70) / 4.0;
			double a = i - 30, b = j - 40, c = i - 45, e = j - 15;
			z += 14.0 * exp(-(a * a + b * b) / 10.0) +
			     11.0 * exp(-(c * c + e * e) / 6.0);
			hm.z[i + (size_t)j * nx] = (float)z;
		}
	int rc = wb_raster_build(&sc, &hm, r, &d) == WB_OK ? 0 : -1;
	wb_heightmap_free(&hm);
	wb_scene_free(&sc);
	wb_diags_release(&d);
	return rc;
}

/* test_validation.c's lake_case raster */
static int lake_raster(struct wb_raster *r)
{
	const int N = 64;
	if (wb_raster_alloc(r, N, N, 1.0) != WB_OK)
		return -1;
	static const double isl[3][3] = { { 18, 20, 2.5 }, { 40, 44, 2.0 }, { 30, 10, 1.8 } };
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			double z = 0.25 * noise(i, j, 1) + 0.2 * sin(0.3 * i) * cos(0.23 * j);
			for (int s = 0; s < 3; s++) {
				double dx = i - isl[s][0], dy = j - isl[s][1];
				z += isl[s][2] * exp(-(dx * dx + dy * dy) / 12.0);
			}
			if (i >= 54)
				z += 2.0 * (i - 53);
			z = round(z * 65536.0) / 65536.0;
			size_t k = i + (size_t)j * N;
			r->z[k] = (float)z;
			r->h0[k] = z < 1.0 ? (float)(1.0 - z) : 0.0f;
		}
	return 0;
}

static int link_open(float hx, float zx, float cx, float hy, float zy, float cy,
		     float hd)
{
	float ex = zx + hx, ey = zy + hy;
	float em = ex > ey ? ex : ey, zm = zx > zy ? zx : zy, cm = cx < cy ? cx : cy;
	return (em > zm + hd) & (cm > em);
}

int main(int argc, char **argv)
{
	const int ocean = argc < 2 || strcmp(argv[1], "lake") != 0;
	const long steps = argc > 2 ? atol(argv[2]) : 100;
	struct wb_raster r;
	if ((ocean ? ocean_raster(&r) : lake_raster(&r)) != 0) {
		fprintf(stderr, "probe: raster failed\n");
		return 1;
	}
	struct wb_sim sim;
	memset(&sim, 0, sizeof(sim));
	sim.solver = WB_SOLVER_LBM;
	sim.viscosity = 0.01;
	sim.max_steps = 100000;
	sim.tolerance = 1e-5;
	sim.window = 1000;
	sim.seed = 1;
	sim.maccormack = 1;
	sim.lbm_hybrid = 1;
	sim.manning = 0.03;
	sim.dry_depth = 1e-3;
	struct wb_diags d;
	wb_diags_init(&d);
	struct lbm L;
	if (lbm_init(&L, &r, &sim, 1, &d) != WB_OK) {
		fprintf(stderr, "probe: lbm_init failed\n");
		return 1;
	}
	printf("probe %s: h_deep %.3f m, e %.3f m/s, tau %.4f (%s), unit %.3g m, "
	       "float h exact below %.3f m\n",
	       ocean ? "ocean" : "lake", L.p.h_deep, L.p.e, L.p.tau,
	       L.kp.trt ? "TRT" : "BGK", L.unit, 16777216.0 * L.unit);
	const size_t nc = L.ncell;
	const int W = L.W;
	int32_t *B0[LBM_Q];
	for (int a = 0; a < LBM_Q; a++) {
		B0[a] = malloc(nc * sizeof(int32_t));
		memcpy(B0[a], L.f[L.cur][a], nc * sizeof(int32_t));
	}
	lbm_fill_ghosts(&L);
	const float *hA = L.h[L.cur];
	const float hd = (float)L.p.h_dry;
	const double om = L.p.omega, ghk = L.p.g * L.unit / (L.p.e * L.p.e);
	/* step-1 attribution over the LBM cells */
	long cells = 0, cM = 0, cdeep = 0, pops = 0, moved = 0, by_eq = 0,
	     by_bed = 0, by_both = 0;
	double mx_eq = 0, mx_bed = 0;
	long hist_eq[4] = { 0 }, hist_bed[4] = { 0 };
	static const double lim[4] = { 0.05, 0.25, 0.5, 1e30 };
	int32_t *pred[LBM_Q];
	for (int a = 0; a < LBM_Q; a++)
		pred[a] = calloc(nc, sizeof(int32_t));
	uint8_t *cls = calloc(nc, 1); /* 1 LBM wet, 2 FV, 3 special */
	for (int j = 0; j < L.ny; j++)
		for (int i = 0; i < L.nx; i++) {
			const int n = (j + 1) * W + i + 1;
			if (hA[n] <= hd)
				continue;
			int sp = 0;
			for (int s = 0; s < L.nsp; s++)
				sp |= L.sp[s].n == n;
			cls[n] = sp ? 3 : (L.fvf && (L.fvf[n] & 1)) ? 2 : 1;
			if (cls[n] != 1)
				continue;
			int32_t F[LBM_Q];
			int op[LBM_Q];
			F[0] = B0[0][n];
			int64_t H = F[0], Mx = 0, My = 0;
			for (int a = 1; a < LBM_Q; a++) {
				const int y = n + lbm_cx[a] + lbm_cy[a] * W;
				const int x = n - lbm_cx[a] - lbm_cy[a] * W;
				op[a] = link_open(hA[n], L.z[n], L.c[n], hA[y], L.z[y],
						  L.c[y], hd);
				const int ob = link_open(hA[n], L.z[n], L.c[n], hA[x],
							 L.z[x], L.c[x], hd);
				F[a] = ob ? B0[a][x] : B0[lbm_opp[a]][n];
				H += F[a];
				Mx += lbm_cx[a] * F[a];
				My += lbm_cy[a] * F[a];
			}
			cells++;
			cM += Mx != 0 || My != 0;
			cdeep += H > 16777216;
			for (int a = 1; a < LBM_Q; a++) {
				const double w = lbm_w[a];
				const double feq = w * (double)H * ghk * (double)H / 6.0;
				const double deq = om * (feq - F[a]);
				const int y = n + lbm_cx[a] + lbm_cy[a] * W;
				float bed = 0;
				if (op[a]) {
					float hx = hA[n] > 0 ? hA[n] : 0, hy = hA[y] > 0 ? hA[y] : 0;
					float D = L.z[y] - L.z[n];
					float mxx = fminf(fmaxf(D, 0.0f), hx),
					      myy = fminf(fmaxf(-D, 0.0f), hy);
					bed = (myy * (hy + (hy - myy)) - mxx * (hx + (hx - mxx))) *
					      L.kp.Gai * (w == 1.0 ? 1.0f : 0.25f);
				}
				const double beta = (double)B0[a][n] - F[a];
				const double dbed = bed - beta;
				pops++;
				mx_eq = fmax(mx_eq, fabs(deq));
				mx_bed = fmax(mx_bed, fabs(dbed));
				for (int k = 0; k < 4; k++)
					if (fabs(deq) < lim[k]) {
						hist_eq[k]++;
						break;
					}
				for (int k = 0; k < 4; k++)
					if (fabs(dbed) < lim[k]) {
						hist_bed[k]++;
						break;
					}
				const long rq = lrint(deq + dbed);
				pred[a][n] = (int32_t)rq;
				if (rq != 0) {
					moved++;
					const int e1 = lrint(deq) != 0 || fabs(deq) > 0.25,
						  e2 = lrint(dbed) != 0 || fabs(dbed) > 0.25;
					by_eq += e1 && !e2;
					by_bed += e2 && !e1;
					by_both += e1 && e2;
				}
			}
		}
	printf("step 1, LBM cells %ld (deeper than float-exact %ld), pulled momentum != 0 in %ld\n",
	       cells, cdeep, cM);
	printf("  |d_eq| = omega |feq_a(h,0) - F_a| (units): <0.05 %ld, <0.25 %ld, <0.5 %ld, more %ld; max %.3f\n",
	       hist_eq[0], hist_eq[1], hist_eq[2], hist_eq[3], mx_eq);
	printf("  |bed_a - beta_a| (kernel float bed vs carried transfer): <0.05 %ld, <0.25 %ld, <0.5 %ld, more %ld; max %.3f\n",
	       hist_bed[0], hist_bed[1], hist_bed[2], hist_bed[3], mx_bed);
	printf("  predicted moved populations %ld of %ld: equilibrium term %ld, bed term %ld, both %ld\n",
	       moved, pops, by_eq, by_bed, by_both);
	if (lbm_step(&L, 1, &d) != WB_OK) {
		fprintf(stderr, "probe: step failed\n");
		return 1;
	}
	long ch[4] = { 0 }, chc[4] = { 0 }, agree = 0, lbmch = 0;
	int32_t mxd[4] = { 0 };
	for (size_t n = 0; n < nc; n++) {
		if (!cls[n])
			continue;
		int any = 0;
		for (int a = 0; a < LBM_Q; a++) {
			const int32_t dd = L.f[L.cur][a][n] - B0[a][n];
			if (dd) {
				ch[cls[n]]++;
				any = 1;
				if (abs(dd) > mxd[cls[n]])
					mxd[cls[n]] = abs(dd);
			}
			if (cls[n] == 1 && a > 0) {
				lbmch += dd != 0;
				agree += dd == pred[a][n];
			}
		}
		chc[cls[n]] += any;
	}
	printf("step 1 measured: LBM cells changed %ld (populations %ld, max %d units; "
	       "a>=1 changed %ld, attribution agrees on %ld of %ld)\n",
	       chc[1], ch[1], mxd[1], lbmch, agree, pops);
	printf("  FV cells changed %ld (populations %ld, max %d); held cells changed %ld (populations %ld, max %d)\n",
	       chc[2], ch[2], mxd[2], chc[3], ch[3], mxd[3]);
	for (long s = 2; s <= steps; s++) {
		if (lbm_step(&L, 1, &d) != WB_OK)
			return 1;
		if (s == 10 || s == 100 || s == 1000 || s == steps) {
			long c = 0;
			int32_t m = 0;
			for (size_t n = 0; n < nc; n++)
				for (int a = 0; a < LBM_Q; a++)
					if (cls[n]) {
						int32_t dd = L.f[L.cur][a][n] - B0[a][n];
						c += dd != 0;
						m = abs(dd) > m ? abs(dd) : m;
					}
			printf("step %ld: populations differing from the start %ld, max %d units, clamped %ld\n",
			       s, c, m, L.clamped);
		}
	}
	lbm_release(&L);
	wb_raster_free(&r);
	wb_diags_release(&d);
	return 0;
}
