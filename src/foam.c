/*
 * foam.c - grid foam for the SWE solver (GDC 2023 talk refs/000, "Grid-based
 * foam simulation"; clamping function from Ihmsen et al. 2012).
 *
 * Foam density phi in [0, 1] at cell centres (padded grid of swe.h).
 * Per step of length dt, on wet cells (h > dry_depth; dry cells hold 0):
 *   generation  phi += dt (k_ta Phi(I_ta, ta_min, ta_max)
 *                          + k_st Phi(I_st, st_min, st_max))
 *     trapped air I_ta = |(u_{i+1/2,j} - u_{i-1/2,j}, v_{i,j+1/2} - v_{i,j-1/2})|
 *                  (m/s: the velocity difference across the cell, as the
 *                  talk's shader computes it; the slide's formula mixes
 *                  face indices and is not what the code does),
 *     steepness   I_st = |grad(h + H)| with, per axis, the one-sided
 *                  difference of larger magnitude (talk's shader); a dry
 *                  neighbour counts as level with the cell, so shorelines
 *                  and cliffs make no foam;
 *     Phi(I, a, b) = (min(I, b) - min(I, a)) / (b - a);
 *   diffusion   phi += alpha (sum of wet neighbours - n phi),
 *               alpha = min(0.2, D dt / dx^2)   (D = foam_diffusion, m^2/s:
 *               the talk's alpha per step made independent of dt and dx);
 *   dissipation phi /= 1 + r dt                 (r = foam_dissipation, 1/s:
 *               the talk's diffusion conserves foam, so decay is separate);
 *   advection   semi-Lagrangian with the cell-centre SWE velocity.
 * Rows in parallel, no reductions: byte-identical for any thread count.
 */
#include <math.h>

#include "swe.h"

#define P(s, i, j) ((long)(i) + 1 + ((long)(j) + 1) * (long)(s)->W)

float foam_clampf(float I, float tmin, float tmax)
{
	if (!(tmax > tmin))
		return I >= tmin ? 1.0f : 0.0f;
	float a = I < tmax ? I : tmax, b = I < tmin ? I : tmin;
	return (a - b) / (tmax - tmin);
}

static inline float pick(float a, float b)
{
	return fabsf(a) > fabsf(b) ? a : b;
}

static void gen_row(struct swe_ctx *s, int j, int ia, int ib,
		    const float *restrict h, const float *restrict u,
		    const float *restrict v, float eps, float alpha,
		    float decay, float dt)
{
	const long W = s->W;
	const float *restrict H = s->H;
	const float *restrict f = s->foam;
	float *restrict o = s->foam1;
	const float idx = (float)(1.0 / s->dx);
	const struct wb_sim *sm = &s->sim;
	const float kta = (float)sm->foam_trapped, kst = (float)sm->foam_steep;
	const float ta0 = (float)sm->foam_trapped_min, ta1 = (float)sm->foam_trapped_max;
	const float st0 = (float)sm->foam_steep_min, st1 = (float)sm->foam_steep_max;
	long base = P(s, 0, j);
	for (int i = ia; i < ib; i++) {
		long c = base + i;
		if (!(h[c] > eps)) {
			o[c] = 0.0f;
			continue;
		}
		float du = u[c + 1] - u[c], dv = v[c + W] - v[c];
		float ita = sqrtf(du * du + dv * dv);
		float ec = h[c] + H[c];
		long nb[4] = { c - 1, c + 1, c - W, c + W };
		float e[4], lap = 0.0f;
		int in[4];
		for (int q = 0; q < 4; q++) {
			/* ghost cells hold the edge's depth and foam */
			in[q] = h[nb[q]] > eps;
			e[q] = in[q] ? h[nb[q]] + H[nb[q]] : ec;
			lap += in[q] ? f[nb[q]] - f[c] : 0.0f;
		}
		float gx = pick(e[1] - ec, ec - e[0]) * idx;
		float gy = pick(e[3] - ec, ec - e[2]) * idx;
		float ist = sqrtf(gx * gx + gy * gy);
		float gen = dt * (kta * foam_clampf(ita, ta0, ta1) +
				  kst * foam_clampf(ist, st0, st1));
		float phi = (f[c] + alpha * lap) * decay + gen;
		o[c] = phi < 0.0f ? 0.0f : phi > 1.0f ? 1.0f : phi;
	}
}

static void adv_row(struct swe_ctx *s, int j, int ia, int ib,
		    const float *restrict h, const float *restrict u,
		    const float *restrict v, float eps, float k)
{
	const long W = s->W;
	const int nx = s->nx, ny = s->ny;
	const float *restrict f = s->foam1;
	float *restrict o = s->foam;
	const float fimax = (float)(nx - 1), fjmax = (float)(ny - 1);
	const int i0max = nx >= 2 ? nx - 2 : 0, j0max = ny >= 2 ? ny - 2 : 0;
	long base = P(s, 0, j);
	for (int i = ia; i < ib; i++) {
		long c = base + i;
		if (!(h[c] > eps)) {
			o[c] = 0.0f;
			continue;
		}
		float uc = 0.5f * (u[c] + u[c + 1]), vc = 0.5f * (v[c] + v[c + W]);
		float fi = (float)i - uc * k, fj = (float)j - vc * k;
		fi = fi < 0.0f ? 0.0f : fi > fimax ? fimax : fi;
		fj = fj < 0.0f ? 0.0f : fj > fjmax ? fjmax : fj;
		int i0 = (int)fi, j0 = (int)fj;
		i0 = i0 < i0max ? i0 : i0max;
		j0 = j0 < j0max ? j0 : j0max;
		float tx = fi - (float)i0, ty = fj - (float)j0;
		long b = (long)i0 + 1 + ((long)j0 + 1) * W;
		float a0 = f[b] + tx * (f[b + 1] - f[b]);
		float a1 = f[b + W] + tx * (f[b + W + 1] - f[b + W]);
		float phi = a0 + ty * (a1 - a0);
		o[c] = phi < 0.0f ? 0.0f : phi > 1.0f ? 1.0f : phi;
	}
}

void foam_step(struct swe_ctx *s, const float *h, const float *u,
	       const float *v)
{
	const float dt = (float)s->dt;
	const float eps = (float)fmax(s->sim.dry_depth, 1e-9);
	double al = s->sim.foam_diffusion * s->dt / (s->dx * s->dx);
	const float alpha = (float)(al < 0.2 ? al : 0.2);
	const float decay = (float)(1.0 / (1.0 + s->sim.foam_dissipation * s->dt));
	const float k = (float)(s->dt / s->dx);
	const int nx = s->nx, ny = s->ny;
	int T = s->sp.on ? s->sp.nthr : s->threads;
	/* ghost ring: copies of the edge cells, so no foam diffuses out */
	float *f = s->foam;
	for (int i = 0; i < nx; i++) {
		f[P(s, i, -1)] = f[P(s, i, 0)];
		f[P(s, i, ny)] = f[P(s, i, ny - 1)];
	}
	for (int j = 0; j < ny; j++) {
		f[P(s, -1, j)] = f[P(s, 0, j)];
		f[P(s, nx, j)] = f[P(s, nx - 1, j)];
	}
	/* block-sparse (swe.h): only the active blocks' columns; every
	   other cell is dry and holds 0 in foam and foam1 already */
#pragma omp parallel for schedule(static) num_threads(T)
	for (int j = 0; j < ny; j++) {
		int n, whole[2];
		const int *r = swe_row_runs(s, j, 1, &n, whole);
		for (int m = 0; m < n; m++)
			gen_row(s, j, r[2 * m], r[2 * m + 1], h, u, v, eps,
				alpha, decay, dt);
	}
#pragma omp parallel for schedule(static) num_threads(T)
	for (int j = 0; j < ny; j++) {
		int n, whole[2];
		const int *r = swe_row_runs(s, j, 1, &n, whole);
		for (int m = 0; m < n; m++)
			adv_row(s, j, r[2 * m], r[2 * m + 1], h, u, v, eps, k);
	}
}
