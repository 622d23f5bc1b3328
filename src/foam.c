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
/* The row loops vectorise only with if-conversion of float compares and
 * sqrtf as an instruction: no-trapping-math and no-math-errno allow both
 * and change no value (no FP exception is ever enabled, errno is never
 * read, sqrt is correctly rounded either way). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#endif
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "swe.h"

#define P(s, i, j) ((long)(i) + 1 + ((long)(j) + 1) * (long)(s)->W)

float foam_clampf(float I, float tmin, float tmax)
{
	if (!(tmax > tmin))
		return I >= tmin ? 1.0f : 0.0f;
	float a = I < tmax ? I : tmax, b = I < tmin ? I : tmin;
	return (a - b) / (tmax - tmin);
}

/* *p = x only when the bits differ: the ghost ring touches both ends of
 * every row, and storing the +0 a fresh page reads would back that page
 * (docs/scale.md "Memory"). */
static inline void set_if_diff(float *p, float x)
{
	uint32_t a, b;
	memcpy(&a, p, sizeof(a));
	memcpy(&b, &x, sizeof(b));
	if (a != b)
		*p = x;
}

static inline float pick(float a, float b)
{
	return fabsf(a) > fabsf(b) ? a : b;
}

/* foam_clampf with the degenerate case decided by the caller (deg =
 * !(tmax > tmin), the same for every cell): the same value, and a loop
 * that calls it has no branch left, so it vectorises. */
static inline float clampf_sel(float I, float tmin, float tmax, int deg)
{
	float a = I < tmax ? I : tmax, b = I < tmin ? I : tmin;
	float r = (a - b) / (tmax - tmin);
	return deg ? (I >= tmin ? 1.0f : 0.0f) : r;
}

/* Cells per span: a span with no wet cell is stored as zeros without the
 * arithmetic (block-sparse rows are mostly dry bank); other spans run the
 * branch-free loop, every cell computed and a dry one selected to 0. The
 * value of a wet cell is the same float expression as the scalar form:
 * each of the four Laplacian terms is added, 0.0f for a dry neighbour. */
#define FOAM_SPAN 16

static int span_wet(const float *restrict h, long c, int n, float eps)
{
	int w = 0;
#pragma omp simd reduction(| : w)
	for (int q = 0; q < n; q++)
		w |= h[c + q] > eps;
	return w;
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
	const int dta = !(ta1 > ta0), dst = !(st1 > st0);
	long base = P(s, 0, j);
	for (int i0 = ia; i0 < ib; i0 += FOAM_SPAN) {
		int n = ib - i0 < FOAM_SPAN ? ib - i0 : FOAM_SPAN;
		long c0 = base + i0;
		if (!span_wet(h, c0, n, eps)) {
			for (int q = 0; q < n; q++)
				o[c0 + q] = 0.0f;
			continue;
		}
float ta2[FOAM_SPAN], st2[FOAM_SPAN], ph[FOAM_SPAN];
		/* 1: the squared magnitudes and the diffused, decayed foam */
#pragma omp simd
		for (int q = 0; q < n; q++) {
			long c = c0 + q;
			float du = u[c + 1] - u[c], dv = v[c + W] - v[c];
			float ec = h[c] + H[c], fc = f[c];
			/* ghost cells hold the edge's depth and foam */
			float hw = h[c - 1], he = h[c + 1];
			float hs = h[c - W], hn = h[c + W];
			int iw = hw > eps, ie = he > eps;
			int is = hs > eps, in = hn > eps;
			float ew = iw ? hw + H[c - 1] : ec;
			float ee = ie ? he + H[c + 1] : ec;
			float es = is ? hs + H[c - W] : ec;
			float en = in ? hn + H[c + W] : ec;
			float lap = 0.0f;
			lap += iw ? f[c - 1] - fc : 0.0f;
			lap += ie ? f[c + 1] - fc : 0.0f;
			lap += is ? f[c - W] - fc : 0.0f;
			lap += in ? f[c + W] - fc : 0.0f;
			float gx = pick(ee - ec, ec - ew) * idx;
			float gy = pick(en - ec, ec - es) * idx;
			ta2[q] = du * du + dv * dv;
			st2[q] = gx * gx + gy * gy;
			ph[q] = (fc + alpha * lap) * decay;
		}
		/* 2: the square roots (a call that may set errno: not in a
		   vector loop) */
		for (int q = 0; q < n; q++) {
			ta2[q] = sqrtf(ta2[q]);
			st2[q] = sqrtf(st2[q]);
		}
		/* 3: generation, clamp, dry cells 0 */
#pragma omp simd
		for (int q = 0; q < n; q++) {
			long c = c0 + q;
			float gen = dt * (kta * clampf_sel(ta2[q], ta0, ta1, dta) +
					  kst * clampf_sel(st2[q], st0, st1, dst));
			float phi = ph[q] + gen;
			phi = phi < 0.0f ? 0.0f : phi > 1.0f ? 1.0f : phi;
			o[c] = h[c] > eps ? phi : 0.0f;
		}
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
	const int Wi = (int)W;
	long base = P(s, 0, j);
	for (int s0 = ia; s0 < ib; s0 += FOAM_SPAN) {
		int n = ib - s0 < FOAM_SPAN ? ib - s0 : FOAM_SPAN;
		long c0 = base + s0;
		if (!span_wet(h, c0, n, eps)) {
			for (int q = 0; q < n; q++)
				o[c0 + q] = 0.0f;
			continue;
		}
		const float *fr = f + c0;
#pragma omp simd
		for (int q = 0; q < n; q++) {
			long c = c0 + q;
			int i = s0 + q;
			float uc = 0.5f * (u[c] + u[c + 1]);
			float vc = 0.5f * (v[c] + v[c + W]);
			float fi = (float)i - uc * k, fj = (float)j - vc * k;
			/* a NaN velocity (a diverging step, reported after
			   this) reads cell 0 instead of being undefined */
			fi = fi < 0.0f ? 0.0f : fi > fimax ? fimax : fi;
			fj = fj < 0.0f ? 0.0f : fj > fjmax ? fjmax : fj;
			fi = fi == fi ? fi : 0.0f;
			fj = fj == fj ? fj : 0.0f;
			int i0 = (int)fi, j0 = (int)fj;
			i0 = i0 < i0max ? i0 : i0max;
			j0 = j0 < j0max ? j0 : j0max;
			float tx = fi - (float)i0, ty = fj - (float)j0;
			/* offset of the departure cell from the row's cell
			   s0 (at most a row away: an int) */
			int b = (i0 - s0) + (j0 - j) * Wi;
			float a0 = fr[b] + tx * (fr[b + 1] - fr[b]);
			float a1 = fr[b + Wi] + tx * (fr[b + Wi + 1] - fr[b + Wi]);
			float phi = a0 + ty * (a1 - a0);
			phi = phi < 0.0f ? 0.0f : phi > 1.0f ? 1.0f : phi;
			o[c] = h[c] > eps ? phi : 0.0f;
		}
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
		set_if_diff(&f[P(s, i, -1)], f[P(s, i, 0)]);
		set_if_diff(&f[P(s, i, ny)], f[P(s, i, ny - 1)]);
	}
	for (int j = 0; j < ny; j++) {
		set_if_diff(&f[P(s, -1, j)], f[P(s, 0, j)]);
		set_if_diff(&f[P(s, nx, j)], f[P(s, nx - 1, j)]);
	}
	/* block-sparse (swe.h): only the active blocks' columns; every
	   other cell is dry and holds 0 in foam and foam1 already. One
	   parallel region for both passes (the adv pass reads foam1 one row
	   away: the loop's barrier); rows handed out dynamically, as a
	   sparse row's work depends on its water */
#pragma omp parallel num_threads(T)
	{
#pragma omp for schedule(dynamic, 8)
		for (int j = 0; j < ny; j++) {
			int n, whole[2];
			const int *r = swe_row_runs(s, j, 1, &n, whole);
			for (int m = 0; m < n; m++)
				gen_row(s, j, r[2 * m], r[2 * m + 1], h, u, v,
					eps, alpha, decay, dt);
		}
#pragma omp for schedule(dynamic, 8)
		for (int j = 0; j < ny; j++) {
			int n, whole[2];
			const int *r = swe_row_runs(s, j, 1, &n, whole);
			for (int m = 0; m < n; m++)
				adv_row(s, j, r[2 * m], r[2 * m + 1], h, u, v,
					eps, k);
		}
	}
}
