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
 * differ from the initial state. Last, it runs a scalar model of the
 * arithmetic that would make still water an exact fixed point (run_model,
 * below) on the same raster, at rest and with a 1 cm bump.
 * PROBE_DEBUG=1 lists the model's changed populations of step 1.
 * Since the kernel implements the model (docs/lbm.md, "Still water,
 * exactly"), the measured lines read 0 changed populations in LBM, FV
 * and held cells; the attribution lines still split the change by the
 * float arithmetic that was replaced (feq_a(h, 0) and the float bed
 * transfer), so they say by how much that arithmetic was off, not what
 * the kernel does.
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


/* ---- a scalar model of the proposed exact-rest arithmetic ------------
 * Pure LBM (no FV cells, held cells freed, every ghost and every cell
 * dry at the start solid), the
 * kernel's TRT collision and forcing, but: the collision about the
 * integer rest equilibrium R_a(H) (deviation form, exactly 0 at rest),
 * and the bed transfer as a difference of rounded rest equilibria of
 * integer depths over an integer bed potential Zi,
 *   Bi(x -> y) = [R(H_y) - R(H_y - m_y)] - [R(H_x) - R(H_x - m_x)],
 * m the step clamped to [0, H]; the link rule on integer surfaces. */
struct model {
	int W, Hh;
	size_t nc;
	int32_t *A[LBM_Q], *B[LBM_Q], *Hs, *Hn, *Zi;
	uint8_t *in;
	float K, hthin, om, omm, nom13, kf, hdu;
	int old; /* 1: the kernel's present arithmetic (float bed, rounded p) */
	int dither; /* 1: the float bed transfer's fraction inside the rounding */
};

static int32_t Rq(const struct model *m, int a, int64_t H)
{
	float h = (float)H, k = m->K * (h * h);
	return (int32_t)lrintf(lbm_w[a] == 1.0f ? k : k * 0.25f);
}

static int mopen(const struct model *m, int x, int y)
{
	if (!m->in[x] || !m->in[y])
		return 0;
	int64_t sx = (int64_t)m->Zi[x] + m->Hs[x], sy = (int64_t)m->Zi[y] + m->Hs[y];
	int64_t zm = m->Zi[x] > m->Zi[y] ? m->Zi[x] : m->Zi[y];
	return (sx > sy ? sx : sy) > zm + (int64_t)m->hdu;
}

static int32_t bint(const struct model *m, int a, int x, int y)
{
	int64_t hx = m->Hs[x] > 0 ? m->Hs[x] : 0, hy = m->Hs[y] > 0 ? m->Hs[y] : 0;
	int64_t D = (int64_t)m->Zi[y] - m->Zi[x];
	int64_t mx = D > 0 ? (D < hx ? D : hx) : 0, my = -D > 0 ? (-D < hy ? -D : hy) : 0;
	return (Rq(m, a, hy) - Rq(m, a, hy - my)) - (Rq(m, a, hx) - Rq(m, a, hx - mx));
}

static void model_step(struct model *m)
{
	for (size_t n = 0; n < m->nc; n++) {
		if (!m->in[n])
			continue;
		int32_t F[LBM_Q];
		int op[LBM_Q];
		F[0] = m->A[0][n];
		int64_t H = F[0], Mx = 0, My = 0, Sb = 0;
		for (int a = 1; a < LBM_Q; a++) {
			const int off = lbm_cx[a] + lbm_cy[a] * m->W;
			F[a] = mopen(m, (int)n - off, (int)n) ? m->A[a][n - off] :
								  m->A[lbm_opp[a]][n];
			op[a] = mopen(m, (int)n, (int)n + off);
			H += F[a];
			Mx += lbm_cx[a] * F[a];
			My += lbm_cy[a] * F[a];
		}
		const float h = (float)H, ih = 1.0f / (h > m->hthin ? h : m->hthin);
		const float U = (float)Mx * ih, V = (float)My * ih, uu = U * U + V * V;
		const float ghe = m->K * 6.0f * h;
		const float cb = cbrtf(h > m->hdu ? h : m->hdu);
		const float rf = 1.0f / (1.0f + m->kf * sqrtf(uu) / (cb * cb * cb * cb));
		const float hr = h * rf / 3.0f;
		const float Bx = m->nom13 * (float)Mx + hr * U, By = m->nom13 * (float)My + hr * V;
		const float Aq = (ghe - uu) * (h * m->om / 6), A0 = ghe * (h * m->om / 6);
		const float Cq = h * m->om / 2;
		int64_t Ps = 0;
		for (int a = 1; a < LBM_Q; a++) {
			const int b = lbm_opp[a];
			const float cu = lbm_cx[a] * U + lbm_cy[a] * V,
				    cB = lbm_cx[a] * Bx + lbm_cy[a] * By;
			const float w = lbm_w[a] == 1.0f ? 1.0f : 0.25f;
			const float mot = w * (Aq + Cq * cu * cu) - w * A0;
			const int32_t R = Rq(m, a, H);
			const float d = -m->om / 2 * (float)((F[a] - R) + (F[b] - R)) -
					m->omm / 2 * (float)(F[a] - F[b]) + mot + w * cB;
			int32_t bi = 0;
			if (op[a] && !m->old) {
				const int off = lbm_cx[a] + lbm_cy[a] * m->W;
				bi = bint(m, a, (int)n, (int)n + off);
			}
			float bf = 0;
			if (m->old || m->dither) {
				if (op[a]) {
					const int y = (int)n + lbm_cx[a] + lbm_cy[a] * m->W;
					const float hx = (float)(m->Hs[n] > 0 ? m->Hs[n] : 0),
						    hy = (float)(m->Hs[y] > 0 ? m->Hs[y] : 0),
						    D = (float)((int64_t)m->Zi[y] - m->Zi[n]);
					const float mx = fminf(fmaxf(D, 0), hx), my = fminf(fmaxf(-D, 0), hy);
					bf = m->K * w * (my * (hy + (hy - my)) - mx * (hx + (hx - mx)));
				}
			}
			if (m->old) {
				const float p = (1 - m->om) / 2 * (float)(F[a] + F[b]) +
						(1 - m->omm) / 2 * (float)(F[a] - F[b]) +
						w * (Aq + Cq * cu * cu) + w * cB + bf;
				Sb += lrintf(bf);
				m->B[a][n] = (int32_t)lrintf(p);
				Ps += m->B[a][n];
				continue;
			}
			Sb += bi;
			/* the dither is within half a unit: RND(0 + it) = 0,
			 * so it cannot move still water */
			const float dith = m->dither ? bf - (float)lrintf(bf) : 0.0f;
			m->B[a][n] = F[a] + (int32_t)lrintf(d + dith) + bi;
			Ps += m->B[a][n];
		}
		m->B[0][n] = (int32_t)(H + Sb - Ps);
		m->Hn[n] = (int32_t)H;
	}
	for (int a = 0; a < LBM_Q; a++) {
		int32_t *t = m->A[a];
		m->A[a] = m->B[a];
		m->B[a] = t;
	}
	int32_t *t = m->Hs;
	m->Hs = m->Hn;
	m->Hn = t;
}

static void run_model(const struct lbm *L, const struct wb_raster *r, long steps)
{
	struct model m;
	memset(&m, 0, sizeof(m));
	if (getenv("PROBE_DEBUG"))
		for (int k = 0; k < r->nx * r->ny; k++)
			if (r->h0[k] > 0 && (double)r->z[k] + r->h0[k] != 0.0)
				printf("  surface off: (%d,%d) z %.9g h0 %.9g eta %.3g flags %d\n",
				       k % r->nx, k / r->nx, r->z[k], r->h0[k],
				       (double)r->z[k] + r->h0[k], r->flags[k]);
	m.W = r->nx + 2;
	m.Hh = r->ny + 2;
	m.nc = (size_t)m.W * m.Hh;
	for (int a = 0; a < LBM_Q; a++) {
		m.A[a] = calloc(m.nc, 4);
		m.B[a] = calloc(m.nc, 4);
	}
	m.Hs = calloc(m.nc, 4);
	m.Hn = calloc(m.nc, 4);
	m.Zi = calloc(m.nc, 4);
	m.in = calloc(m.nc, 1);
	const double inv = 1.0 / L->unit;
	m.K = (float)(L->p.g * L->unit / (L->p.e * L->p.e) / 6.0);
	m.hthin = L->kp.hthin;
	m.hdu = L->kp.hd_u;
	m.om = (float)L->p.omega;
	m.omm = (float)L->p.omega_m;
	m.nom13 = L->kp.nom13;
	m.kf = L->kp.kf;
	m.old = getenv("PROBE_OLD") && *getenv("PROBE_OLD") == '1';
	m.dither = getenv("PROBE_DITHER") && *getenv("PROBE_DITHER") == '1';
	for (int j = 0; j < r->ny; j++)
		for (int i = 0; i < r->nx; i++) {
			const size_t k = i + (size_t)j * r->nx;
			const int n = (j + 1) * m.W + i + 1;
			/* cells dry at the start are walls: the ocean has
			 * pockets below its level joined to the sea by a
			 * diagonal only, which the hybrid's axis-only FV
			 * faces at the shore keep dry and a pure LBM fills */
			m.in[n] = r->h0[k] > 0;
			m.Zi[n] = (int32_t)llrint((double)r->z[k] * inv);
			if (r->h0[k] > 0)
				m.Hs[n] = (int32_t)(llrint(((double)r->z[k] + r->h0[k]) * inv) -
						    m.Zi[n]);
		}
	for (size_t n = 0; n < m.nc; n++) {
		if (!m.in[n])
			continue;
		int64_t Sb = 0, Ps = 0;
		for (int a = 1; a < LBM_Q; a++) {
			const int off = lbm_cx[a] + lbm_cy[a] * m.W;
			int32_t bi = mopen(&m, (int)n, (int)n + off) ?
				bint(&m, a, (int)n, (int)n + off) : 0;
			Sb += bi;
			m.A[a][n] = Rq(&m, a, m.Hs[n]) + bi;
			Ps += m.A[a][n];
		}
		m.A[0][n] = (int32_t)(m.Hs[n] + Sb - Ps);
	}
	int32_t *A0[LBM_Q];
	int64_t mass0 = 0;
	for (int a = 0; a < LBM_Q; a++) {
		A0[a] = malloc(m.nc * 4);
		memcpy(A0[a], m.A[a], m.nc * 4);
		for (size_t n = 0; n < m.nc; n++)
			mass0 += m.A[a][n];
	}
	for (long s = 1; s <= steps; s++) {
		model_step(&m);
		if (s == 1 && getenv("PROBE_DEBUG"))
			for (size_t n = 0; n < m.nc; n++)
				for (int a = 0; a < LBM_Q; a++)
					if (m.A[a][n] != A0[a][n])
						printf("  changed n %zu (%zu,%zu) a %d: %d -> %d, H %d S %lld\n",
						       n, n % m.W - 1, n / m.W - 1, a, A0[a][n], m.A[a][n],
						       m.Hs[n], (long long)m.Hs[n] + m.Zi[n]);
		if (s == 1 || s == 10 || s == 100 || s == 1000 || s == steps) {
			long c = 0;
			int32_t mx = 0;
			int64_t mass = 0;
			for (int a = 0; a < LBM_Q; a++)
				for (size_t n = 0; n < m.nc; n++) {
					int32_t dd = m.A[a][n] - A0[a][n];
					c += dd != 0;
					mx = abs(dd) > mx ? abs(dd) : mx;
					mass += m.A[a][n];
				}
			/* the validation's figures: surface of the cells wet
			 * at the start, speed everywhere */
			double de = 0, um = 0;
			for (int j = 0; j < r->ny; j++)
				for (int i = 0; i < r->nx; i++) {
					const int n = (j + 1) * m.W + i + 1;
					const size_t k = i + (size_t)j * r->nx;
					const double hm = (double)m.Hs[n] * L->unit;
					if (r->h0[k] > 0)
						de = fmax(de, fabs(hm + r->z[k] - (r->z[k] + r->h0[k])));
					if (m.Hs[n] <= 0)
						continue;
					/* momentum of the populations the cell
					 * pulls next step (the stored ones carry
					 * the bed transfers) */
					double Mx = 0, My = 0;
					for (int a = 1; a < LBM_Q; a++) {
						const int off = lbm_cx[a] + lbm_cy[a] * m.W;
						const double F = mopen(&m, n - off, n) ?
							m.A[a][n - off] : m.A[lbm_opp[a]][n];
						Mx += lbm_cx[a] * F;
						My += lbm_cy[a] * F;
					}
					const double hh = fmax((double)m.Hs[n], (double)m.hthin);
					um = fmax(um, hypot(Mx, My) / hh * L->p.e);
				}
			printf("model step %ld: populations differing from the start %ld, max %d units, mass change %lld units; "
			       "max |eta - eta0| %.3g m, max speed %.3g m/s\n",
			       s, c, mx, (long long)(mass - mass0), de, um);
		}
	}
	/* off rest: 1 cm more water in one wet cell near the middle */
	int bump = -1;
	for (int j = r->ny / 2; j < r->ny && bump < 0; j++)
		for (int i = r->nx / 3; i < r->nx && bump < 0; i++)
			if (m.Hs[(j + 1) * m.W + i + 1] > 0)
				bump = (j + 1) * m.W + i + 1;
	const int32_t add = (int32_t)llrint(0.01 * inv);
	m.A[0][bump] += add;
	for (long s = 1; s <= steps; s++) {
		model_step(&m);
		if (getenv("PROBE_DEBUG") && s % 1000 == 0) {
			double lo = 1e30, hi = -1e30;
			for (size_t n = 0; n < m.nc; n++)
				if (m.in[n] && m.Hs[n] > 0) {
					double e = ((double)m.Hs[n] + m.Zi[n]) * L->unit;
					lo = fmin(lo, e);
					hi = fmax(hi, e);
				}
			long mv = 0; /* populations this step changed */
			for (int a = 0; a < LBM_Q; a++)
				for (size_t n = 0; n < m.nc; n++)
					mv += m.A[a][n] != m.B[a][n];
			printf("  bump step %ld: surface range %.3g m, populations changed by the step %ld\n",
			       s, hi - lo, mv);
		}
	}
	double emax = 0;
	int64_t mass = 0;
	for (size_t n = 0; n < m.nc; n++) {
		for (int a = 0; a < LBM_Q; a++)
			mass += m.A[a][n];
		if (!m.in[n] || m.Hs[n] <= 0)
			continue;
		emax = fmax(emax, fabs((double)m.Hs[n] + m.Zi[n] -
				       (double)(m.Hs[bump] + m.Zi[bump])) * L->unit);
	}
	printf("model with a 1 cm bump, %ld steps later: mass change %lld units (bump %d), surface range %.3g m\n",
	       steps, (long long)(mass - mass0 - add), add, emax);
	for (int a = 0; a < LBM_Q; a++) {
		free(m.A[a]);
		free(m.B[a]);
		free(A0[a]);
	}
	free(m.Hs);
	free(m.Hn);
	free(m.Zi);
	free(m.in);
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
	run_model(&L, &r, steps);
	lbm_release(&L);
	wb_raster_free(&r);
	wb_diags_release(&d);
	return 0;
}
