/*
 * swe.c - staggered-grid shallow-water solver (Chentanez & Mueller, "Real-time
 * Simulation of Large Bodies of Water with Small Scale Details", SCA 2010;
 * the GDC 2023 talk refs/000, "Runtime fluid simulation").
 *
 * Equations (h depth, H terrain, eta = h + H surface, u = (u, v)):
 *   dh/dt + div(h u) = s                      (mass, s = sources/sinks)
 *   du/dt + (u . grad) u = -g grad(eta) - g n^2 |u| u / h^(4/3)
 * split into, per step of length dt (k = dt/dx):
 *   1. height integration, mass-conservative with upwind depth:
 *        h_ij -= k ((h~u)_{i+1/2,j} - (h~u)_{i-1/2,j}
 *                 + (h~v)_{i,j+1/2} - (h~v)_{i,j-1/2})
 *        (h~u)_{i+1/2} = u_{i+1/2} * (u > 0 ? h_i : h_{i+1})
 *   2. velocity advection, semi-Lagrangian (x_back = x - dt u(x), bilinear)
 *      or MacCormack (refs/001 appendix, with the sign of the correction
 *      fixed: phi = phi^ + (phi^n - phi_back)/2, clamped to the departure
 *      stencil);
 *   3. pressure: u_{i+1/2} -= g k (eta'_{i+1} - eta'_i) with
 *      eta' = max(eta, max(H_i, H_{i+1})): a cell whose surface lies below
 *      the face's higher terrain pushes with the terrain, not its surface
 *      (lake at rest over steps stays at rest; a free overfall accelerates
 *      with the upstream depth only);
 *   then friction (implicit Manning), velocity clamp |u| <= alpha dx/dt, and
 *   walls: face i+1/2 is a wall (u = 0) when both cells are dry, or
 *      h_i <= eps and H_i > H_{i+1} + h_{i+1}, or
 *      h_{i+1} <= eps and H_{i+1} > H_i + h_i            (talk, corrected),
 *   or when the higher surface reaches a blocker deck of either cell.
 * Scene edges of kind wall stop the normal velocity; a no-slip wall also
 * mirrors the tangential velocity with the opposite sign into the ghost
 * faces and takes momentum from the faces along it by side-wall friction,
 *   du/dt = -g n^2 |u| u / (h^(1/3) dx)   (Manning on the wall's area h dx,
 * implicit, at the start of the step: wall_drag).
 * Overshoot reduction (C&M): the upwind depth of a flux is reduced by
 *   h_adj = max(0, (h_i + h_{i+1})/2 - h_avgmax), h_avgmax = beta dx^2/(g dt^2),
 * active only with a user time step larger than the wave CFL allows.
 * Adaptive dt: min(0.25 dx / max|u|, 0.5 dx / sqrt(g max h)); a user dt
 * (sim.dt > 0) is capped by the first (it keeps upwind depths >= 0).
 * Steady acceleration (sim.mass_scale > 0, no user dt; docs/hydrology.md):
 * the continuity step, the sources and the edge and waterfall volumes run
 * on eps dt, eps in [mass_scale, 1] per step, so the waves' speed is
 * sqrt(eps g h) and dt = min(0.5 dx / max|u|, 0.25 dx / (eps max|u|),
 * 0.5 dx / sqrt(eps g max h)); the velocity clamp and h_avgmax follow.
 * The depth update's fixed points are the plain ones (div(h u) = s).
 * Waterfalls and particles: swe_particles.c. Foam: foam.c.
 * Steady state (swe_solve): window means of depth and flow, their
 * depth-weighted relative change against a 0.1 m/s floor (docs/swe.md).
 *
 * Indexing: see swe.h (padded grid, stride W = nx + 2, faces share the index
 * of the cell to their east/south). Parallel over rows (OpenMP), reductions
 * through per-row partials summed serially: byte-identical for any thread
 * count.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef _OPENMP
#include <omp.h>
#else /* serial build (e.g. make fuzz: clang -fopenmp=libgomp defines no _OPENMP) */
static inline int omp_get_thread_num(void) { return 0; }
static inline int omp_get_num_threads(void) { return 1; }
static inline double omp_get_wtime(void) { return 0; }
#endif

/* Vectorising the row kernels needs if-conversion of float compares;
 * no-trapping-math allows it and changes no result (no FP exceptions are
 * ever enabled). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "par.h"
#include "solve.h"
#include "swe.h"
#include "util.h"

/* The row kernels are also built for x86-64-v4 (AVX-512) and picked at
 * run time: the same IEEE operations per lane, no contraction, so results
 * do not depend on the clone that runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
	!defined(__SANITIZE_ADDRESS__) && !defined(SWE_NO_CLONES)
#define SWE_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define SWE_CLONES
#endif

#define P(s, i, j) ((long)(i) + 1 + ((long)(j) + 1) * (long)(s)->W)

/* Helpers of the row kernels: always inlined, since a call left in a row
 * loop stops its vectorisation (gcc's inlining limits drop them once there
 * are many kernel variants). */
#define SWE_INLINE static inline __attribute__((always_inline))

/* Grid fields come straight from mmap: zero pages that the kernel backs
 * with memory only on their first write, whatever malloc's thresholds
 * (a calloc'd block reused from the heap would be cleared, i.e. written,
 * in full). The sparse step writes only where water is or was, so the
 * resident memory follows the water (docs/scale.md "Memory"). Freed with
 * ffree and the same n. */
static float *falloc(long n)
{
	if (n <= 0)
		return NULL;
	void *p = mmap(NULL, (size_t)n * sizeof(float), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void ffree(float *p, long n)
{
	if (p)
		munmap(p, (size_t)n * sizeof(float));
}

/* *p = x, storing only when the bits differ: the boundary passes write
 * one value per row at both ends of the row, and a store of the +0 a page
 * already reads would make the kernel back that page with memory. */
SWE_INLINE void setf(float *p, float x)
{
	uint32_t a, b;
	memcpy(&a, p, sizeof(a));
	memcpy(&b, &x, sizeof(b));
	if (a != b)
		*p = x;
}

SWE_INLINE float maxf(float a, float b)
{
	return a > b ? a : b;
}

SWE_INLINE float minf(float a, float b)
{
	return a < b ? a : b;
}

/* Flux (m^2/s) through the face with velocity uf between cells of depth hl
 * (west/north) and hr, upwind depth reduced by the overshoot term. Both
 * cells of a face evaluate exactly this expression, so mass moves exactly. */
SWE_INLINE float face_flux(float uf, float hl, float hr, float hmax)
{
	float hup = uf > 0.0f ? hl : hr;
	float hadj = maxf(0.0f, 0.5f * (hl + hr) - hmax);
	return uf * maxf(hup - hadj, 0.0f);
}

/* gk = g dt / dx, eps the dry depth, umax the velocity clamp, fric
 * g n^2 dt, fall the bed step (m) above which a face between two wet
 * cells is a cliff (face_finish) */
struct face_par {
	float gk, eps, umax, fric, fall;
};

/* Cube root for the Manning term, vectorisable and deterministic: bit
 * estimate (x / 3 in the exponent) and three Newton steps, relative error
 * below 1e-6 for normal x > 0. */
SWE_INLINE float cbrt_pos(float x)
{
	uint32_t b;
	memcpy(&b, &x, sizeof(b));
	b = b / 3u + 709921077u;
	float y;
	memcpy(&y, &b, sizeof(y));
	for (int it = 0; it < 3; it++)
		y = (2.0f * y + x / (y * y)) * (1.0f / 3.0f);
	return y;
}

/* Square root for x >= 1 (implicit Manning), vectorisable and
 * deterministic like cbrt_pos: bit estimate (half the exponent, within
 * 4 %) and three Newton steps, relative error below 1e-7. */
SWE_INLINE float sqrt_pos(float x)
{
	uint32_t b;
	memcpy(&b, &x, sizeof(b));
	b = b / 2u + 532487669u;
	float y;
	memcpy(&y, &b, sizeof(y));
	for (int it = 0; it < 3; it++)
		y = 0.5f * (y + x / y);
	return y;
}

/* The speed after implicit Manning friction of a face whose advected
 * speed is a (>= 0) with t (>= 0) along the face, k = g n^2 dt / h^(4/3):
 * the root w of w (1 + k sqrt(w^2 + t^2)) = a (face_finish). */
SWE_INLINE float manning_speed(float a, float t, float k)
{
	float w0 = 2.0f * a / (1.0f + sqrt_pos(1.0f + 4.0f * k * a));
	/* the flow along the face (t, the other component there, as
	 * advected) is friction too: w (1 + k S) = a with S =
	 * sqrt(w^2 + t^2), Manning's law for the whole speed. Before
	 * 2026-11-29 only the face's own component counted, so flow at
	 * 45 degrees to the grid ran 2^(1/4) too fast at a given depth
	 * (a film on a diagonal slope 10 % too thin). Solved for S:
	 * (S^2 - t^2)(1 + k S)^2 = a^2 is convex and rising for S >= t,
	 * and S0 = w0 + t lies above the root (w0, the root for t = 0,
	 * is above w, and S <= w + t), so Newton steps from it stay
	 * above and close in; then
	 * w = a / (1 + k S). Five steps, one division each, relative
	 * error below 5e-7 for k a up to 1e8 and t / a from 1e-4 to 1e4
	 * (against bisection in double). The same root as the Newton
	 * iteration on w with a square root per step (2026-11-29),
	 * which cost about 30 % of a river SWE bake */
	float S = w0 + t, t2 = t * t, a2 = a * a;
	for (int it = 0; it < 5; it++) {
		float p = 1.0f + k * S, e = S * S - t2;
		float f = e * p * p - a2;
		float g = 2.0f * p * (S * p + k * e);
		S = maxf(S - f / maxf(g, 1e-30f), t);
	}
	float w = a / (1.0f + k * S);
	return t > 0.0f ? w : w0;
}

float swe_manning_speed(float a, float t, float k)
{
	return manning_speed(a, t, k);
}

/* Velocity clamp |u| <= umax (C&M); *nclamp counts the faces it changes
 * (a NaN goes to -umax uncounted, as before: the face kernels report it by
 * their maximum). */
SWE_INLINE float clamp_face(float un, float umax, int *nclamp)
{
	*nclamp += fabsf(un) > umax; /* un > umax or un < -umax */
	return minf(maxf(un, -umax), umax);
}

/* Pressure, friction, clamp and walls for one face whose advected velocity
 * is ua; cells l (west/north) and r. *nclamp counts clamps of faces that
 * are not walls. clampit = 0: no clamp (the caller clamps the stored value
 * afterwards with clamp_face; a wall's 0 is never clamped). dry = 0: both
 * cells are known wet (the dry-cell walls are left out); blk = 0: no
 * blocker in the grid (bbl = bbr = +INF; the deck test, false for finite
 * surfaces, is left out). */
SWE_INLINE float face_finish(float ua, float ot, float hl, float hr,
				float Hl, float Hr, float bbl, float bbr,
				const struct face_par *fp, const int dry,
				const int blk, const int clampit, int *nclamp)
{
	float el = hl + Hl, er = hr + Hr;
	/* the surface drop across the face. Over a cliff (a bed step above
	 * fall, where the waterfalls take over) the lower surface is taken
	 * no lower than the higher bed: the water is driven by its own
	 * depth, not by the height of the fall. On a resolved slope the
	 * whole drop drives it, and its friction takes the upwind depth (a
	 * film pouring into a lake runs at the film's speed, not at the
	 * lake's): before 2026-11-29 a film thinner than the bed's fall over
	 * one cell (S dx > h) ran at g h / dx instead of g S, 1.5-2x too
	 * deep on a 5 % slope at 1 m cells (docs/swe.md "One step", 5).
	 * Where the lower surface reaches the higher bed both rules agree. */
	float zf = maxf(Hl, Hr);
	float grad = maxf(er, zf) - maxf(el, zf);
	int slope = (minf(el, er) < zf) & (fabsf(Hl - Hr) <= fp->fall);
	if (slope)
		grad = er - el;
	float un = ua - fp->gk * grad;
	/* implicit Manning: the speed w after friction solves
	 * w (1 + k w) = |un|, k = g n^2 dt / h^(4/3), so that a steady
	 * state balances friction at the speed it has: k w^2 = g S dt is
	 * Manning's, whatever dt. The linearised w = |un| / (1 + k |un|)
	 * (before 2026-11-29) charged the friction of |un|, which includes
	 * this step's gravity: where k g S dt is not small (thin films
	 * under a time step set by deep water) a steady film ran at half
	 * its Manning speed. w = 2 |un| / (1 + sqrt(1 + 4 k |un|)), the
	 * root without cancellation; sqrt_pos keeps it off libm (the same
	 * bits vectorised and on OpenCL). fric = 0 is exact. */
	if (fp->fric > 0.0f) {
		float hf = maxf(slope ? (un >= 0.0f ? hl : hr) :
					0.5f * (hl + hr), fp->eps);
		float k = fp->fric / (hf * cbrt_pos(hf));
		float a = fabsf(un), t = fabsf(ot);
		un = copysignf(manning_speed(a, t, k), un);
	}
	int wall = 0;
	if (dry) {
		int dl = hl <= fp->eps, dr = hr <= fp->eps;
		wall = (dl & dr) | (dl & (Hl > er)) | (dr & (Hr > el));
	}
	if (blk)
		wall |= maxf(el, er) >= minf(bbl, bbr);
	if (!clampit)
		return wall ? 0.0f : un;
	return wall ? 0.0f : clamp_face(un, fp->umax, nclamp);
}

/* ---- ghost cells and boundary faces ------------------------------------ */

static float ghost_depth(const struct swe_ctx *s, const struct wb_edge *e,
			 float hin, float Hg)
{
	switch (e->kind) {
	case WB_EDGE_INFLOW:
		if (e->depth > 0)
			return (float)e->depth;
		if (e->has_level)
			return maxf(0.0f, (float)e->level - Hg);
		if (e->discharge > 0) {
			float hc = (float)cbrt(e->discharge * e->discharge / s->g);
			return maxf(hin, hc);
		}
		return hin;
	case WB_EDGE_LEVEL:
		return maxf(0.0f, (float)e->level - Hg);
	default:
		return hin;
	}
}

/* Fill the ghost ring of a cell field f (h or H) from the edge kinds. For
 * H (is_h = 0) every kind copies the neighbour (periodic: the opposite). */
static void fill_ghosts(const struct swe_ctx *s, float *f, int is_h)
{
	const int nx = s->nx, ny = s->ny;
	const struct wb_edge *E = s->r->edges;
	for (int j = 0; j < ny; j++) {
		long gw = P(s, -1, j), ge = P(s, nx, j);
		float iw = f[P(s, 0, j)], ie = f[P(s, nx - 1, j)];
		if (E[WB_WEST].kind == WB_EDGE_PERIODIC) {
			setf(&f[gw], ie);
			setf(&f[ge], iw);
			continue;
		}
		setf(&f[gw], is_h ? ghost_depth(s, &E[WB_WEST], iw, s->H[gw]) : iw);
		setf(&f[ge], is_h ? ghost_depth(s, &E[WB_EAST], ie, s->H[ge]) : ie);
	}
	for (int i = -1; i <= nx; i++) {
		/* i = -1 and nx are corners: copy the row's (ghost) end */
		int inside = i >= 0 && i < nx;
		long gn = P(s, i, -1), gs = P(s, i, ny);
		float in = f[P(s, i, 0)], is = f[P(s, i, ny - 1)];
		if (E[WB_NORTH].kind == WB_EDGE_PERIODIC) {
			setf(&f[gn], is);
			setf(&f[gs], in);
			continue;
		}
		setf(&f[gn], is_h && inside ?
			     ghost_depth(s, &E[WB_NORTH], in, s->H[gn]) : in);
		setf(&f[gs], is_h && inside ?
			     ghost_depth(s, &E[WB_SOUTH], is, s->H[gs]) : is);
	}
}

/* Velocity on one boundary face. 'sign' is +1 where the interior lies on
 * the +x/+y side (west, north), -1 on east/south. uold is the face's value
 * before this step, uin the adjacent interior face's new value, hg the
 * ghost depth; l/r are the cells west/north and east/south of the face. */
static float bc_face(const struct swe_ctx *s, const struct wb_edge *e,
		     int sign, float uold, float uin, long l, long r,
		     float hg, const float *h, const struct face_par *fp,
		     int *nclamp)
{
	switch (e->kind) {
	case WB_EDGE_WALL:
		return 0.0f;
	case WB_EDGE_OPEN:
		/* zero gradient, outflow only */
		return sign > 0 ? minf(uin, 0.0f) : maxf(uin, 0.0f);
	case WB_EDGE_INFLOW: {
		float vel = e->velocity > 0 ? (float)e->velocity :
			    hg > 0.0f ? (float)e->discharge / hg : 0.0f;
		return (float)sign * vel;
	}
	case WB_EDGE_LEVEL:
	case WB_EDGE_PERIODIC:
	default:
		/* an edge face: no flow along it counted (the ghosts' other
		   component is not at hand) */
		return face_finish(uold, 0.0f, h[l], h[r], s->H[l], s->H[r],
				   s->bb[l], s->bb[r], fp, 1, 1, 1, nclamp);
	}
}

static void set_bc_faces(struct swe_ctx *s, const float *uold,
			 const float *vold, float *un, float *vn,
			 const float *h, const struct face_par *fp)
{
	const int nx = s->nx, ny = s->ny;
	const long W = s->W;
	const struct wb_edge *E = s->r->edges;
	int ncl = 0;
	for (int j = 0; j < ny; j++) {
		long fw = P(s, 0, j), fe = P(s, nx, j);
		setf(&un[fw], bc_face(s, &E[WB_WEST], 1, uold[fw],
				      nx > 1 ? un[fw + 1] : uold[fw + 1],
				      fw - 1, fw, h[fw - 1], h, fp, &ncl));
		if (E[WB_WEST].kind == WB_EDGE_PERIODIC)
			setf(&un[fe], un[fw]);
		else
			setf(&un[fe], bc_face(s, &E[WB_EAST], -1, uold[fe],
					      nx > 1 ? un[fe - 1] : uold[fe - 1],
					      fe - 1, fe, h[fe], h, fp, &ncl));
	}
	for (int i = 0; i < nx; i++) {
		long fn = P(s, i, 0), fs = P(s, i, ny);
		setf(&vn[fn], bc_face(s, &E[WB_NORTH], 1, vold[fn],
				      ny > 1 ? vn[fn + W] : vold[fn + W],
				      fn - W, fn, h[fn - W], h, fp, &ncl));
		if (E[WB_NORTH].kind == WB_EDGE_PERIODIC)
			setf(&vn[fs], vn[fn]);
		else
			setf(&vn[fs], bc_face(s, &E[WB_SOUTH], -1, vold[fs],
					      ny > 1 ? vn[fs - W] : vold[fs - W],
					      fs - W, fs, h[fs], h, fp, &ncl));
	}
	s->clamped += ncl;
}

/* ---- passes ------------------------------------------------------------- */

/* The row kernels are written branch-free (selects, integer reductions) so
 * that gcc vectorises them with gathers for the bilinear samples; a float
 * max of non-negative values is taken on the bit patterns, which order the
 * same way, since a float max reduction would not vectorise under strict
 * IEEE semantics. */
SWE_INLINE uint32_t fbits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof(u));
	return u;
}

SWE_INLINE float bitsf(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* 1. height integration of cells ia .. ib - 1 of row j into h1; the face
 * fluxes go to fu / fv (read again by the momentum-conservative
 * advection). Returns nonzero when a new depth is not finite. */
SWE_CLONES
static int height_row(const struct swe_ctx *s, int j, int ia, int ib, float k,
		      float hmax)
{
	const int W = s->W;
	const float *restrict h = s->h;
	const float *restrict u = s->u;
	const float *restrict v = s->v;
	float *restrict h1 = s->h1;
	float *restrict fu = s->fu;
	float *restrict fv = s->fv;
	const int c0 = (int)P(s, ia, j), c1 = (int)P(s, ib, j);
	int bad = 0;
#pragma omp simd reduction(| : bad)
	for (int c = c0; c < c1; c++) {
		float fw = face_flux(u[c], h[c - 1], h[c], hmax);
		float fe = face_flux(u[c + 1], h[c], h[c + 1], hmax);
		float fn = face_flux(v[c], h[c - W], h[c], hmax);
		float fs = face_flux(v[c + W], h[c], h[c + W], hmax);
		float hn = h[c] - k * ((fe - fw) + (fs - fn));
		bad |= !(fabsf(hn) <= FLT_MAX);
		h1[c] = hn < 0.0f ? 0.0f : hn; /* keeps a NaN for the report */
		fu[c] = fw;
		fv[c] = fn;
	}
	if (ib == s->nx)
		fu[c1] = face_flux(u[c1], h[c1 - 1], h[c1], hmax);
	if (j == s->ny - 1)
		for (int c = c0; c < c1; c++)
			fv[c + W] = face_flux(v[c + W], h[c], h[c + W], hmax);
	return bad;
}

SWE_INLINE float clampf(float x, float lo, float hi)
{
	return minf(maxf(x, lo), hi);
}

/* Bilinear sample of face field f around face c at the point displaced by
 * (-ax, -ay) cells. The displacement is at most one cell (|u| dt/dx <= 0.25
 * by the CFL step; the clamp to 1 only acts on faces that particles have
 * just struck), so the four samples lie in the 3x3 block around c and are
 * picked with selects from contiguous loads instead of gathers. Outside
 * the domain the ghost faces hold copies of the edge faces
 * (fill_face_ghosts), so a trace leaving it reads the edge value, as a
 * clamped semi-Lagrangian trace does. The four samples' range goes to
 * *lo, *hi (MacCormack clamp). */
SWE_INLINE float local_sample(const float *f, int c, int W, float ax,
				 float ay, float *lo, float *hi)
{
	/* |clamp(a, -1, 1)| and its sign, NaN included (weight 1, right) */
	float wx = minf(fabsf(ax), 1.0f), wy = minf(fabsf(ay), 1.0f);
	int left = ax > 0.0f, up = ay > 0.0f;
	/* all nine loaded, then selected: a conditional load would become a
	   masked one */
	float f0 = f[c], fw = f[c - 1], fe = f[c + 1];
	float fn = f[c - W], fnw = f[c - W - 1], fne = f[c - W + 1];
	float fs = f[c + W], fsw = f[c + W - 1], fse = f[c + W + 1];
	float fx = left ? fw : fe;
	float fy = up ? fn : fs;
	float fxyu = left ? fnw : fne;
	float fxyd = left ? fsw : fse;
	float fxy = up ? fxyu : fxyd;
	float a0 = f0 + wx * (fx - f0);
	float a1 = fy + wx * (fxy - fy);
	*lo = minf(minf(f0, fx), minf(fy, fxy));
	*hi = maxf(maxf(f0, fx), maxf(fy, fxy));
	return a0 + wy * (a1 - a0);
}

/* local_sample on a field given as three rows (above, this, below),
 * indexed by column i: the same loads and operations. */
SWE_INLINE float local_sample_rows(const float *fm, const float *f0,
				   const float *fp, int i, float ax, float ay,
				   float *lo, float *hi)
{
	/* |clamp(a, -1, 1)| and its sign, NaN included (weight 1, right) */
	float wx = minf(fabsf(ax), 1.0f), wy = minf(fabsf(ay), 1.0f);
	int left = ax > 0.0f, up = ay > 0.0f;
	float g0 = f0[i], gw = f0[i - 1], ge = f0[i + 1];
	float gn = fm[i], gnw = fm[i - 1], gne = fm[i + 1];
	float gs = fp[i], gsw = fp[i - 1], gse = fp[i + 1];
	float fx = left ? gw : ge;
	float fy = up ? gn : gs;
	float fxyu = left ? gnw : gne;
	float fxyd = left ? gsw : gse;
	float fxy = up ? fxyu : fxyd;
	float a0 = g0 + wx * (fx - g0);
	float a1 = fy + wx * (fxy - fy);
	*lo = minf(minf(g0, fx), minf(fy, fxy));
	*hi = maxf(maxf(g0, fx), maxf(fy, fxy));
	return a0 + wy * (a1 - a0);
}

/* Wet/dry front: on a face with one wet cell, the advected velocity is at
 * least the one of the face behind it on the wet side when that one points
 * at the dry cell (zero-gradient extrapolation into the dry region). Plain
 * semi-Lagrangian advection would sample the zero velocities of dry faces
 * and hold the front back. ub/uf: faces behind l / beyond r. */
SWE_INLINE float front_extrapolate(float ua, float hl, float hr, float ub,
				      float uf, float eps)
{
	int wl = hl > eps, wr = hr > eps;
	float a = (wl & !wr & (ub > 0.0f)) ? maxf(ua, ub) : ua;
	return (wr & !wl & (uf < 0.0f)) ? minf(a, uf) : a;
}

struct row_out {
	float umax, hmax;
	int bad, nclamp;
};

/* Face mass fluxes of the height step seen by the velocity row j, as rows
 * indexed by column i (element i: the face of cell (i, r), as u / v):
 * fu of rows j - 1 and j, fv of rows j - 1, j and j + 1. They point into
 * the full fu / fv arrays (unfused step) or into a thread's ring of the
 * last rows (fused step). */
struct flux_rows {
	const float *fuM, *fuJ, *fvM, *fvJ, *fvP;
	/* MacCormack: forward estimates of rows j - 1, j, j + 1 (ut, vt),
	   indexed by column i (i = -1 .. nx readable); fwd: where the
	   forward pass (mode 1) writes row j */
	const float *utM, *ut0, *utP, *vtM, *vt0, *vtP;
	float *fwd;
};

/* Advection of one face velocity q0 (u on an x-face, v on a y-face) in
 * momentum-conservative upwind form (Stelling & Duinmeijer 2003):
 *   q -= k / h_f [ (Q+ q*+ - Q- q*-) - q (Q+ - Q-) ]    along the normal
 *              + [ (T+ q*T+ - T- q*T-) - q (T+ - T-) ]  across it,
 * Q = mass flux at the two cell centres (average of their face fluxes),
 * T = mass flux at the two face ends, q* the upwind face velocity. With the
 * upwind choice each bracket reduces to
 *   max(Q-, 0) (q - q_behind) + min(Q+, 0) (q_ahead - q),
 * which is what is computed. Used where the flow compresses (q behind >
 * q ahead): there the semi-Lagrangian form, which conserves velocity
 * instead of momentum, makes bores too slow.
 * The new value is q0 plus the inflows' weights k max(Q, 0) / h_f times
 * (q_donor - q0): a mean of q0 and the donors' velocities as long as the
 * weights add up to at most 1, i.e. as long as the water that enters the
 * face's control volume in one step (k times the inflowing fluxes) is
 * no more than it holds (h_f). The time step bounds |u| dt / dx only, so
 * a film next to a strong flux (the foot of a cliff beside a lake, a
 * bank beside a jet) can take weights above 1: its velocity then
 * overshoots the donors' with the sign flipped, grows each step until
 * friction and the clamp hold it, and sets the time step for the whole
 * map (the 1024^2 world: films of 2 mm at +-30 m/s a step, dt 0.008 s).
 * So the divisor is at least the inflow, k in: where the control volume
 * would be overturned in one step its new velocity is the inflow-weighted
 * mean of the donors' velocities, which is what the exact conservative
 * update (the new momentum over the new mass) tends to when the inflow
 * dominates. Below that it is the plain form, so every case of
 * test_validation is the same (2026-11-30).
 * qm/qp: faces behind/ahead along the normal, qtm/qtp across; fm, f0, fq:
 * mass fluxes of those faces and this one; tm/tp: mass flux at the ends. */
SWE_INLINE float cons_adv(float q0, float qm, float qp, float qtm,
			     float qtp, float fm, float f0, float fq,
			     float tm, float tp, float hf, float k)
{
	float ql = 0.5f * (fm + f0), qr = 0.5f * (f0 + fq);
	float adv = (maxf(ql, 0.0f) * (q0 - qm) + minf(qr, 0.0f) * (qp - q0)) +
		    (maxf(tm, 0.0f) * (q0 - qtm) + minf(tp, 0.0f) * (qtp - q0));
	float in = (maxf(ql, 0.0f) - minf(qr, 0.0f)) +
		   (maxf(tm, 0.0f) - minf(tp, 0.0f));
	return q0 - k * adv / maxf(hf, k * in);
}

float swe_cons_adv(float q0, float qm, float qp, float qtm, float qtp,
		   float fm, float f0, float fq, float tm, float tp, float hf,
		   float k)
{
	return cons_adv(q0, qm, qp, qtm, qtp, fm, f0, fq, tm, tp, hf, k);
}

/* Pointers of one face row (see face_row_k), gathered so that the span
 * kernel below can be instantiated per block kind. */
struct face_ptrs {
	const float *q, *o, *fqm, *fq0, *fqp, *tma, *tmb, *tpa, *tpb;
	const float *h, *H, *bb, *tM, *t0, *tP;
	float *out;
};

/* Block kinds of the span kernel: which advected value the faces take
 * (SPAN_BOTH computes both and selects per face) and whether every cell
 * next to the faces is known wet (then the front extrapolation and the
 * dry-cell walls are identities and are left out). */
enum { SPAN_BOTH = 0, SPAN_SL = 1, SPAN_CONS = 2 };

/* Faces i = ib .. ie - 1 of a row in mode 0 or 2 (face_row_k). Each face
 * gets exactly the value of the general path (SPAN_BOTH, wet = 0): a block
 * kind only leaves out the operations whose result its faces do not use. */
SWE_INLINE void
face_span(const struct face_ptrs *pp, int base, int W, int ib, int ie,
	  float k, const int xdir, const int mode, const int blk,
	  const int path, const int wet, const struct face_par *fpl)
{
	const int A = xdir ? 1 : W, B = xdir ? W : 1;
	const float *restrict q = pp->q;
	const float *restrict o = pp->o;
	const float *restrict fqm = pp->fqm;
	const float *restrict fq0 = pp->fq0;
	const float *restrict fqp = pp->fqp;
	const float *restrict tma = pp->tma;
	const float *restrict tmb = pp->tmb;
	const float *restrict tpa = pp->tpa;
	const float *restrict tpb = pp->tpb;
	const float *restrict h = pp->h;
	const float *restrict H = pp->H;
	const float *restrict bb = pp->bb;
	const float *restrict tM = pp->tM;
	const float *restrict t0 = pp->t0;
	const float *restrict tP = pp->tP;
	float *restrict out = pp->out;
	const float eps = fpl->eps;
#pragma omp simd
	for (int i = ib; i < ie; i++) {
		const int c = base + i;
		float qc = q[c];
		float hl = h[c - A], hr = h[c];
		float hf = 0.5f * (hl + hr);
		float qa = 0.0f, qs = 0.0f, qc2 = 0.0f;
		/* the other component at this face: mean of the 4 around it
		   (the trace's direction, and friction) */
		float oa = xdir ? 0.25f * (o[c - 1] + o[c] + o[c - 1 + W] +
					   o[c + W]) :
				  0.25f * (o[c] + o[c + 1] + o[c - W] +
					   o[c - W + 1]);
		if (path != SPAN_CONS) {
			float ax = (xdir ? qc : oa) * k, ay = (xdir ? oa : qc) * k;
			float lo, hi;
			float sl = local_sample(q, c, W, ax, ay, &lo, &hi);
			if (mode == 0) {
				qs = sl;
			} else {
				float lo2, hi2;
				float back = local_sample_rows(tM, t0, tP, i, -ax,
							       -ay, &lo2, &hi2);
				float corr = t0[i] + 0.5f * (qc - back);
				qs = clampf(corr, lo, hi);
			}
		}
		if (path != SPAN_SL) {
			/* u faces: fv of rows j (tm) and j + 1 (tp), columns
			   i - 1 and i; v faces: fu of rows j - 1 and j, column
			   i (tm) and i + 1 (tp) */
			float tm = 0.5f * (tma[xdir ? i - 1 : i] + tmb[i]);
			float tp = 0.5f * (tpa[xdir ? i - 1 : i + 1] +
					   tpb[xdir ? i : i + 1]);
			qc2 = cons_adv(qc, q[c - A], q[c + A], q[c - B],
				       q[c + B], fqm[xdir ? i - 1 : i], fq0[i],
				       fqp[xdir ? i + 1 : i], tm, tp,
				       wet ? hf : maxf(hf, eps), k);
		}
		if (path == SPAN_BOTH)
			qa = ((q[c - A] > q[c + A]) & (hf > eps)) ? qc2 : qs;
		else
			qa = path == SPAN_SL ? qs : qc2;
		if (!wet)
			qa = front_extrapolate(qa, hl, hr, q[c - A], q[c + A],
					       eps);
		int ncl = 0;
		out[c] = face_finish(qa, oa, hl, hr, H[c - A], H[c],
				     blk ? bb[c - A] : INFINITY,
				     blk ? bb[c] : INFINITY, fpl, !wet, blk, 0,
				     &ncl);
	}
}

/* Faces per block of the block dispatch in face_row_k. */
#define SWE_FACE_BLOCK 16

/* 2 + 3 for the faces of one row, u faces (xdir = 1: faces i = 1..nx-1 of
 * row j) or v faces (xdir = 0: faces between rows j-1 and j, j >= 1).
 * A is the index step along the face normal, B across it.
 * mode 0: semi-Lagrangian, then finish into u1/v1;
 * mode 1: forward semi-Lagrangian estimate into ut/vt only (MacCormack);
 * mode 2: MacCormack backward step, correction, clamp, finish.
 * Modes 0 and 2 go through the row in blocks of SWE_FACE_BLOCK faces: a
 * block whose faces all take the semi-Lagrangian value (or all the
 * conservative one) next to wet cells only computes that one (smooth
 * flow is mostly such blocks); other blocks compute both and select per
 * face. The values are the same either way. */
SWE_INLINE void
face_row_k(struct swe_ctx *s, int j, int ia, int ib, float k, const int xdir,
	   const int mode, const int fric, const int blk,
	   const struct face_par *fp, const struct flux_rows *fr,
	   struct row_out *ro)
{
	const int W = s->W;
	const int nx = ib; /* faces (and cells) ia .. ib - 1 of the row */
	const int A = xdir ? 1 : W;
	/* face fluxes by column i (struct flux_rows): this component's
	   behind / at / ahead of the face along its normal, and the other
	   component's at the two ends of the face (m: the end behind, p: the
	   end ahead, each the mean of the two faces there) */
	struct face_ptrs pp = {
		xdir ? s->u : s->v, xdir ? s->v : s->u,
		xdir ? fr->fuJ : fr->fvM, xdir ? fr->fuJ : fr->fvJ,
		xdir ? fr->fuJ : fr->fvP, xdir ? fr->fvJ : fr->fuM,
		xdir ? fr->fvJ : fr->fuJ, xdir ? fr->fvP : fr->fuM,
		xdir ? fr->fvP : fr->fuJ, s->h1, s->H, s->bb,
		xdir ? fr->utM : fr->vtM, xdir ? fr->ut0 : fr->vt0,
		xdir ? fr->utP : fr->vtP, xdir ? s->u1 : s->v1
	};
	const float eps = fp->eps;
	struct face_par fpl = *fp;
	if (!fric)
		fpl.fric = 0.0f;
	const int base = (int)P(s, 0, j);
	const int i0 = xdir && ia < 1 ? 1 : ia;
	if (mode == 1) {
		const float *restrict q = pp.q;
		const float *restrict o = pp.o;
		float *restrict fwd = fr->fwd;
#pragma omp simd
		for (int i = i0; i < nx; i++) {
			const int c = base + i;
			float qc = q[c];
			float oa = xdir ? 0.25f * (o[c - 1] + o[c] + o[c - 1 + W] +
						   o[c + W]) :
					  0.25f * (o[c] + o[c + 1] + o[c - W] +
						   o[c - W + 1]);
			float ax = (xdir ? qc : oa) * k, ay = (xdir ? oa : qc) * k;
			float lo, hi;
			fwd[i] = local_sample(q, c, W, ax, ay, &lo, &hi);
		}
		memset(ro, 0, sizeof(*ro));
		return;
	}
	uint32_t umax = 0, hm = 0;
	int ncl = 0;
	const float *restrict q = pp.q;
	const float *restrict h = pp.h;
	/* per face: 1 takes the conservative value, 2 both cells are wet,
	   4 both cells are dry (h <= eps: face_finish's dry-cell wall, 0.0f
	   whatever the advected value) */
	uint8_t *restrict cls = s->cls + (size_t)omp_get_thread_num() * s->W;
#pragma omp simd
	for (int i = i0; i < nx; i++) {
		const int c = base + i;
		float hl = h[c - A], hr = h[c];
		int cons = (q[c - A] > q[c + A]) & (0.5f * (hl + hr) > eps);
		int wet = (hl > eps) & (hr > eps);
		int dry = (hl <= eps) & (hr <= eps);
		cls[i] = (uint8_t)(cons | wet << 1 | dry << 2);
	}
	const uint64_t w2 = 0x0202020202020202ull, w3 = 0x0303030303030303ull;
	const uint64_t w4 = 0x0404040404040404ull;
	float *restrict o1 = pp.out;
	int i = i0;
	for (; i + SWE_FACE_BLOCK <= nx; i += SWE_FACE_BLOCK) {
		int sl = 1, cn = 1, wet = 1, dry = 1;
		for (int w = 0; w < SWE_FACE_BLOCK; w += 8) {
			uint64_t x;
			memcpy(&x, cls + i + w, sizeof(x));
			sl &= x == w2;
			cn &= x == w3;
			wet &= (x & w2) == w2;
			dry &= (x & w4) == w4;
		}
		int ie = i + SWE_FACE_BLOCK;
		if (dry) {
			/* the general path's value for every face here (the
			   bank of a river's active block, mostly): the wall */
			for (int f = i; f < ie; f++)
				o1[base + f] = 0.0f;
		} else if (sl)
			face_span(&pp, base, W, i, ie, k, xdir, mode, blk,
				  SPAN_SL, 1, &fpl);
		else if (cn)
			face_span(&pp, base, W, i, ie, k, xdir, mode, blk,
				  SPAN_CONS, 1, &fpl);
		else if (wet)
			face_span(&pp, base, W, i, ie, k, xdir, mode, blk,
				  SPAN_BOTH, 1, &fpl);
		else
			face_span(&pp, base, W, i, ie, k, xdir, mode, blk,
				  SPAN_BOTH, 0, &fpl);
	}
	face_span(&pp, base, W, i, nx, k, xdir, mode, blk, SPAN_BOTH, 0, &fpl);
	/* the clamp, its count and the largest |u| of the row, from the
	   stored values */
	float *restrict out = pp.out;
	const float um = fpl.umax;
	/* u rows also give the row's largest depth (faces from i = 1, the
	   cell of i = 0 apart) */
	if (xdir && ia == 0)
		hm = fbits(h[base]);
#pragma omp simd reduction(max : umax, hm) reduction(+ : ncl)
	for (int c = base + i0; c < base + nx; c++) {
		float un = clamp_face(out[c], um, &ncl);
		out[c] = un;
		uint32_t ab = fbits(fabsf(un));
		umax = ab > umax ? ab : umax;
		if (xdir) {
			uint32_t hb = fbits(h[c]);
			hm = hb > hm ? hb : hm;
		}
	}
	ro->umax = bitsf(umax);
	ro->hmax = bitsf(hm);
	/* |u| bits above FLT_MAX's: an infinity or a NaN */
	ro->bad = umax > 0x7f7fffffu;
	ro->nclamp = ncl;
}

/* Ghost faces for the local samples: u in the ghost rows and v in the ghost
 * columns copy the adjacent edge faces, times the edge's tangential sign
 * (s->tsgn: -1 at a no-slip wall, whose tangential velocity is then 0
 * midway, on the wall; +1 elsewhere: zero gradient). */
static void fill_face_ghosts(const struct swe_ctx *s, float *u, float *v)
{
	const int nx = s->nx, ny = s->ny;
	const float *g = s->tsgn;
	for (int i = 0; i <= nx; i++) {
		u[P(s, i, -1)] = g[WB_NORTH] * u[P(s, i, 0)];
		u[P(s, i, ny)] = g[WB_SOUTH] * u[P(s, i, ny - 1)];
	}
	for (int j = 0; j <= ny; j++) {
		setf(&v[P(s, -1, j)], g[WB_WEST] * v[P(s, 0, j)]);
		setf(&v[P(s, nx, j)], g[WB_EAST] * v[P(s, nx - 1, j)]);
	}
}

/* Side-wall friction of no-slip walls (docs/swe.md): the tangential faces
 * next to such a wall lose momentum to it as to the bed, with the scene's
 * Manning n on the wall's wetted area h dx:
 *   du/dt = -g n^2 |u| u / (h^(1/3) dx),
 * integrated implicitly, u / (1 + cw |u| / h_f^(1/3)) with cw = g n^2 dt/dx
 * and h_f the mean depth of the face's cells (at least eps). cw = 0 (no
 * friction) leaves the faces as they are. The OpenCL twin is swe_wall_drag
 * (cl/swe.cl). */
SWE_INLINE float wall_drag1(float un, float hl, float hr, float cw,
			       float eps)
{
	float hf = maxf(0.5f * (hl + hr), eps);
	return un / (1.0f + cw * fabsf(un) / cbrt_pos(hf));
}

static void wall_drag(struct swe_ctx *s)
{
	const int nx = s->nx, ny = s->ny;
	const long W = s->W;
	if (!(s->sim.manning > 0))
		return;
	const float cw = (float)(s->g * s->sim.manning * s->sim.manning *
				 s->dt / s->dx);
	const float eps = (float)fmax(s->sim.dry_depth, 1e-9);
	const float *h = s->h;
	if (!(cw > 0.0f))
		return;
	for (int side = WB_NORTH; side <= WB_SOUTH; side++) {
		if (s->tsgn[side] > 0.0f)
			continue;
		int row = side == WB_NORTH ? 0 : ny - 1;
		for (int i = 1; i < nx; i++) {
			long c = P(s, i, row);
			s->u[c] = wall_drag1(s->u[c], h[c - 1], h[c], cw, eps);
		}
	}
	for (int side = WB_WEST; side <= WB_EAST; side++) {
		if (s->tsgn[side] > 0.0f)
			continue;
		int col = side == WB_WEST ? 0 : nx - 1;
		for (int j = 1; j < ny; j++) {
			long c = P(s, col, j);
			setf(&s->v[c],
			     wall_drag1(s->v[c], h[c - W], h[c], cw, eps));
		}
	}
}

typedef void (*row_fn)(struct swe_ctx *, int, int, int, float,
		       const struct face_par *, const struct flux_rows *,
		       struct row_out *);

/* Faces ia .. ib - 1 of row j (0 .. nx: the whole row). */
#define ROW_FN(name, xd, md, fr, bk)                                          \
	SWE_CLONES static void name(struct swe_ctx *s, int j, int ia, int ib, \
				    float k, const struct face_par *fp,       \
				    const struct flux_rows *frw,              \
				    struct row_out *ro)                       \
	{                                                                     \
		face_row_k(s, j, ia, ib, k, xd, md, fr, bk, fp, frw, ro);     \
	}
ROW_FN(u_fwd, 1, 1, 0, 0)
ROW_FN(v_fwd, 0, 1, 0, 0)
ROW_FN(u_sl, 1, 0, 0, 1)
ROW_FN(u_sl_f, 1, 0, 1, 1)
ROW_FN(u_mc, 1, 2, 0, 1)
ROW_FN(u_mc_f, 1, 2, 1, 1)
ROW_FN(v_sl, 0, 0, 0, 1)
ROW_FN(v_sl_f, 0, 0, 1, 1)
ROW_FN(v_mc, 0, 2, 0, 1)
ROW_FN(v_mc_f, 0, 2, 1, 1)
ROW_FN(u_sl_n, 1, 0, 0, 0)
ROW_FN(u_sl_fn, 1, 0, 1, 0)
ROW_FN(u_mc_n, 1, 2, 0, 0)
ROW_FN(u_mc_fn, 1, 2, 1, 0)
ROW_FN(v_sl_n, 0, 0, 0, 0)
ROW_FN(v_sl_fn, 0, 0, 1, 0)
ROW_FN(v_mc_n, 0, 2, 0, 0)
ROW_FN(v_mc_fn, 0, 2, 1, 0)

/* Row kernels by [x or y faces][MacCormack][friction][blockers]. */
static const row_fn face_rows[2][2][2][2] = {
	{ { { v_sl_n, v_sl }, { v_sl_fn, v_sl_f } },
	  { { v_mc_n, v_mc }, { v_mc_fn, v_mc_f } } },
	{ { { u_sl_n, u_sl }, { u_sl_fn, u_sl_f } },
	  { { u_mc_n, u_mc }, { u_mc_fn, u_mc_f } } },
};

/* ---- set-up -------------------------------------------------------------- */

static int sparse_init(struct swe_ctx *s);
static void sparse_release(struct swe_sparse *b);


static int list_add(struct swe_cell_list *l, long *cap, long c, float val)
{
	if (l->n == *cap) {
		long nc = *cap ? *cap * 2 : 64;
		long *a = realloc(l->c, (size_t)nc * sizeof(*a));
		if (!a)
			return -1;
		l->c = a;
		float *b = realloc(l->val, (size_t)nc * sizeof(*b));
		if (!b)
			return -1;
		l->val = b;
		*cap = nc;
	}
	l->c[l->n] = c;
	l->val[l->n] = val;
	l->n++;
	return 0;
}

static void list_free(struct swe_cell_list *l)
{
	free(l->c);
	free(l->val);
	memset(l, 0, sizeof(*l));
}

/* Modifier faces: relaxation rate and target are the averages of the two
 * cells (faces with rate 0 skipped). */
static int build_modifier_lists(struct swe_ctx *s)
{
	const struct wb_raster *r = s->r;
	const int nx = s->nx, ny = s->ny;
	long cu = 0, cv = 0, nu = 0, nv = 0;
	if (!r->mod_k)
		return 0;
	float *tu = NULL, *tv = NULL;
	/* interior faces only: edge faces belong to the edge conditions */
	for (int j = 0; j < ny; j++)
		for (int i = 1; i < nx; i++) {
			int a = i - 1, b = i;
			long ia = a + (long)j * nx, ib = b + (long)j * nx;
			float kk = 0.5f * (r->mod_k[ia] + r->mod_k[ib]);
			if (!(kk > 0.0f))
				continue;
			if (list_add(&s->mod_u, &cu, P(s, i, j), kk))
				return -1;
			if (nu == 0 || s->mod_u.n > nu) {
				nu = cu;
				float *t = realloc(tu, (size_t)nu * sizeof(*t));
				if (!t)
					return -1;
				tu = t;
			}
			tu[s->mod_u.n - 1] = 0.5f * (r->mod_u[ia] + r->mod_u[ib]);
		}
	for (int j = 1; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			int a = j - 1, b = j;
			long ia = i + (long)a * nx, ib = i + (long)b * nx;
			float kk = 0.5f * (r->mod_k[ia] + r->mod_k[ib]);
			if (!(kk > 0.0f))
				continue;
			if (list_add(&s->mod_v, &cv, P(s, i, j), kk))
				return -1;
			if (nv == 0 || s->mod_v.n > nv) {
				nv = cv;
				float *t = realloc(tv, (size_t)nv * sizeof(*t));
				if (!t)
					return -1;
				tv = t;
			}
			tv[s->mod_v.n - 1] = 0.5f * (r->mod_v[ia] + r->mod_v[ib]);
		}
	s->mod_tu = tu;
	s->mod_tv = tv;
	return 0;
}

/* First entry of each row j = 0 .. ny (ny: the end) of a cell list; the
 * lists are built in row-major order, so their cells ascend. Caller frees. */
static long *list_rows(const struct swe_ctx *s, const struct swe_cell_list *l)
{
	long *r = malloc((size_t)(s->ny + 1) * sizeof(long));
	if (!r)
		return NULL;
	long n = 0;
	for (int j = 0; j <= s->ny; j++) {
		while (n < l->n && l->c[n] < P(s, -1, j))
			n++;
		r[j] = n;
	}
	return r;
}

double swe_grid_volume(const struct swe_ctx *s)
{
	double vol = 0.0;
	int J0, J1; /* several processes: row sums exchanged (par.h) */
	wb_par_band(s->par, s->ny, &J0, &J1);
	for (int j = J0; j < J1; j++) {
		double row = 0.0;
		const float *h = s->h + P(s, 0, j);
		for (int i = 0; i < s->nx; i++)
			row += (double)h[i];
		s->row_d[j] = row;
	}
	if (s->par)
		wb_par_rows(s->par, s->row_d, sizeof(double), 1, 0, 0);
	for (int j = 0; j < s->ny; j++)
		vol += s->row_d[j];
	return vol * s->dx * s->dx;
}

/* Apply fixed-level cells to h, with the volume change booked. */
static void apply_fixed(struct swe_ctx *s, float *h)
{
	for (long n = 0; n < s->fixed.n; n++) {
		long c = s->fixed.c[n];
		float t = maxf(0.0f, s->fixed.val[n] - s->H[c]);
		double dv = ((double)t - (double)h[c]) * s->dx * s->dx;
		if (dv > 0)
			s->vol_in += dv;
		else
			s->vol_out -= dv;
		h[c] = t;
	}
}

static void next_dt(struct swe_ctx *s, float umax, float hmax)
{
	double dx = s->dx;
	for (long n = 0; n < s->mod_u.n; n++)
		umax = maxf(umax, fabsf(s->mod_tu[n]));
	for (long n = 0; n < s->mod_v.n; n++)
		umax = maxf(umax, fabsf(s->mod_tv[n]));
	double hw = hmax > 1e-3 ? hmax : 1e-3;
	double eps = 1.0;
	if (s->sim.mass_scale > 0 && !(s->sim.dt > 0)) {
		/* steady acceleration: the eps that slows the gravity waves
		   (speed sqrt(eps g h)) to the advective step, at least
		   mass_scale (the depth settles in pseudo-time eps dt: a
		   smaller eps speeds the flow up and slows the storage
		   down, docs/hydrology.md) */
		eps = umax > 0 ? (SWE_CFL_WAVE * SWE_CFL_WAVE) /
					 (s->cfl_adv * s->cfl_adv) *
					 (double)umax * umax / (s->g * hw) :
				 SWE_ACC_EPS_MIN;
		eps = fmin(fmax(eps, fmax(s->sim.mass_scale, SWE_ACC_EPS_MIN)), 1.0);
	}
	double dta = umax > 0 ? s->cfl_adv * dx / umax : INFINITY;
	/* the upwind depth: eps |u| dt/dx <= SWE_CFL_ADV */
	double dtp = umax > 0 ? SWE_CFL_ADV * dx / (eps * umax) : INFINITY;
	double dtw = SWE_CFL_WAVE * dx / sqrt(eps * s->g * hw);
	double dt;
	if (s->sim.dt > 0)
		dt = fmin(s->sim.dt, dta);
	else
		dt = fmin(fmin(dta, dtp), dtw);
	s->dt = dt;
	s->eps_m = eps;
	s->dtm = eps * dt;
}

static void initial_dt(struct swe_ctx *s)
{
	float umax = 0.0f, hmax = 0.0f;
	for (long c = 0; c < s->ncell; c++) {
		umax = maxf(umax, maxf(fabsf(s->u[c]), fabsf(s->v[c])));
		hmax = maxf(hmax, s->h[c]);
	}
	next_dt(s, umax, hmax);
}

enum wb_status swe_init(struct swe_ctx *s, const struct wb_raster *r,
			const struct wb_sim *sim, int threads,
			struct wb_diags *d)
{
	memset(s, 0, sizeof(*s));
	if (!r || r->nx < 1 || r->ny < 1 || !(r->dx > 0) || !r->z || !r->h0)
		return wb_fail(d, WB_EINPUT, NULL,
			       "swe: raster is empty or has no terrain/depth");
	if ((r->edges[WB_WEST].kind == WB_EDGE_PERIODIC) !=
	    (r->edges[WB_EAST].kind == WB_EDGE_PERIODIC) ||
	    (r->edges[WB_NORTH].kind == WB_EDGE_PERIODIC) !=
	    (r->edges[WB_SOUTH].kind == WB_EDGE_PERIODIC))
		return wb_fail(d, WB_EINPUT, NULL,
			       "swe: periodic edges must come in pairs (west/east, north/south)");
	if (!(sim->dt >= 0) || !(sim->dry_depth >= 0) || !(sim->manning >= 0))
		return wb_fail(d, WB_EINPUT, NULL,
			       "swe: dt, dry_depth and manning must be >= 0");
	s->r = r;
	s->sim = *sim;
	s->threads = threads > 0 ? threads : 1;
	s->nx = r->nx;
	s->ny = r->ny;
	s->W = r->nx + 2;
	s->ncell = (long)s->W * (r->ny + 2);
	s->dx = r->dx;
	s->g = WB_GRAVITY;
	s->bad_cell = -1;
	for (int e = 0; e < 4; e++)
		s->tsgn[e] = r->edges[e].kind == WB_EDGE_WALL &&
				     !r->edges[e].free_slip ? -1.0f : 1.0f;
	long nc = s->ncell;
	s->h = falloc(nc);
	s->h1 = falloc(nc);
	s->H = falloc(nc);
	s->u = falloc(nc);
	s->v = falloc(nc);
	s->u1 = falloc(nc);
	s->v1 = falloc(nc);
	s->usnap = falloc(nc);
	s->vsnap = falloc(nc);
	s->bb = falloc(nc);
	s->fu = falloc(nc);
	s->fv = falloc(nc);
	if (sim->maccormack) {
		s->ut = falloc(nc);
		s->vt = falloc(nc);
	}
	s->foam_on = sim->foam_trapped > 0 || sim->foam_steep > 0;
	if (s->foam_on) {
		s->foam = falloc(nc);
		s->foam1 = falloc(nc);
	}
	int rows = r->ny + 2;
	s->row_d = calloc((size_t)rows, sizeof(double));
	s->row_d2 = calloc((size_t)rows, sizeof(double));
	s->row_l = calloc((size_t)rows, sizeof(long));
	if (!s->h || !s->h1 || !s->H || !s->u || !s->v || !s->u1 || !s->v1 ||
	    !s->usnap || !s->vsnap || !s->bb || !s->fu || !s->fv ||
	    (sim->maccormack && (!s->ut || !s->vt)) ||
	    (s->foam_on && (!s->foam || !s->foam1)) || !s->row_d ||
	    !s->row_d2 || !s->row_l)
		goto oom;
	for (long c = 0; c < nc; c++)
		s->bb[c] = INFINITY;
	long csrc = 0, cfix = 0, csink = 0;
	for (int j = 0; j < s->ny; j++)
		for (int i = 0; i < s->nx; i++) {
			long q = i + (long)j * s->nx, c = P(s, i, j);
			if (!isfinite(r->z[q]) || !isfinite(r->h0[q])) {
				swe_release(s);
				return wb_fail(d, WB_EINPUT, NULL,
					       "swe: non-finite terrain or depth at cell (%d, %d)",
					       i, j);
			}
			s->H[c] = r->z[q];
			if (r->h0[q] > 0) /* else the calloc'd +0 */
				s->h[c] = r->h0[q];
			if (r->block_bot && r->block_bot[q] < INFINITY) {
				s->bb[c] = r->block_bot[q];
				s->has_blk = 1;
			}
			uint8_t fl = r->flags ? r->flags[q] : 0;
			int bad = 0;
			if ((fl & WB_CELL_FIXED) && r->fixed_level)
				bad |= list_add(&s->fixed, &cfix, c,
						r->fixed_level[q]);
			else if (r->src && r->src[q] != 0.0f)
				bad |= list_add(&s->src, &csrc, c, r->src[q]);
			if (fl & WB_CELL_SINK_ALL)
				bad |= list_add(&s->sink, &csink, c, 0.0f);
			if (bad)
				goto oom;
		}
	fill_ghosts(s, s->H, 0);
	/* corners of H: copy the nearest ghost so every read is finite */
	if (build_modifier_lists(s))
		goto oom;
	apply_fixed(s, s->h);
	s->vol_in = s->vol_out = 0.0;
	fill_ghosts(s, s->h, 1);
	/* a start with velocity (r->u0/v0, coarse-to-fine: src/bake.c):
	 * a face between two wet cells takes their mean */
	if (r->u0 && r->v0) {
		const float wd = (float)fmax(sim->dry_depth, 1e-9);
		for (int j = 0; j < s->ny; j++)
			for (int i = 0; i < s->nx; i++) {
				long q = i + (long)j * s->nx, c = P(s, i, j);
				if (i > 0 && s->h[c] > wd && s->h[c - 1] > wd)
					s->u[c] = 0.5f * (r->u0[q - 1] + r->u0[q]);
				if (j > 0 && s->h[c] > wd && s->h[c - s->W] > wd)
					s->v[c] = 0.5f * (r->v0[q - s->nx] + r->v0[q]);
			}
	}
	/* inflow faces start at their velocity */
	{
		struct face_par fp = { 0.0f, (float)fmax(sim->dry_depth, 1e-9),
				       INFINITY, 0.0f, 0.0f };
		/* u, v, u1, v1 are all +0 here; set_bc_faces writes only
		   the boundary faces, copied back (no dense copy: memory
		   follows the water) */
		set_bc_faces(s, s->u, s->v, s->u1, s->v1, s->h, &fp);
		for (int j = 0; j < s->ny; j++) {
			setf(&s->u[P(s, 0, j)], s->u1[P(s, 0, j)]);
			setf(&s->u[P(s, s->nx, j)], s->u1[P(s, s->nx, j)]);
		}
		for (int i = 0; i < s->nx; i++) {
			setf(&s->v[P(s, i, 0)], s->v1[P(s, i, 0)]);
			setf(&s->v[P(s, i, s->ny)], s->v1[P(s, i, s->ny)]);
		}
		s->clamped = 0;
	}
	if (swe_falls_find(s))
		goto oom;
	s->ring = malloc((size_t)s->threads * 16 * (size_t)s->W * sizeof(float));
	s->cls = malloc((size_t)s->threads * (size_t)s->W);
	s->src_row = list_rows(s, &s->src);
	s->fix_row = list_rows(s, &s->fixed);
	s->sink_row = list_rows(s, &s->sink);
	s->src_dv = malloc((size_t)(s->src.n + 1) * sizeof(double));
	s->fix_dv = malloc((size_t)(s->fixed.n + 1) * sizeof(double));
	s->sink_dv = malloc((size_t)(s->sink.n + 1) * sizeof(double));
	if (!s->ring || !s->cls || !s->src_row || !s->fix_row || !s->sink_row ||
	    !s->src_dv || !s->fix_dv || !s->sink_dv)
		goto oom;
	if (sparse_init(s))
		goto oom;
	s->vol_initial = swe_grid_volume(s);
	s->hdep_max = 0.0f;
	for (long c = 0; c < nc; c++)
		s->hdep_max = maxf(s->hdep_max, s->h[c]);
	s->cfl_adv = sim->mass_scale > 0 && !(sim->dt > 0) ? SWE_ACC_CFL_ADV :
							      SWE_CFL_ADV;
	/* the clamp at the same multiple of the CFL velocity as plain */
	s->vel_alpha = SWE_VEL_ALPHA * s->cfl_adv / SWE_CFL_ADV;
	initial_dt(s);
	return WB_OK;
oom:
	swe_release(s);
	return wb_fail(d, WB_EIO, NULL, "swe: out of memory for a %dx%d grid",
		       r->nx, r->ny);
}

void swe_field_drop(struct swe_ctx *s, float **f)
{
	ffree(*f, s->ncell);
	*f = NULL;
}

void swe_release(struct swe_ctx *s)
{
	if (!s)
		return;
	float **f[] = { &s->h, &s->h1, &s->H, &s->u, &s->v, &s->u1, &s->v1,
			&s->ut, &s->vt, &s->usnap, &s->vsnap, &s->bb, &s->fu, &s->fv,
			&s->foam, &s->foam1 };
	for (size_t n = 0; n < sizeof(f) / sizeof(f[0]); n++) {
		ffree(*f[n], s->ncell);
		*f[n] = NULL;
	}
	free(s->mod_tu);
	free(s->mod_tv);
	free(s->row_d);
	free(s->row_d2);
	free(s->row_l);
	free(s->ring);
	free(s->cls);
	free(s->src_row);
	free(s->fix_row);
	free(s->sink_row);
	free(s->src_dv);
	free(s->fix_dv);
	free(s->sink_dv);
	list_free(&s->src);
	list_free(&s->fixed);
	list_free(&s->sink);
	list_free(&s->mod_u);
	list_free(&s->mod_v);
	free(s->falls);
	free(s->dep_v);
	free(s->dep_pu);
	free(s->dep_pv);
	free(s->dep_list);
	swe_particles_release(&s->P);
	sparse_release(&s->sp);
	memset(s, 0, sizeof(*s));
}

/* ---- one step ------------------------------------------------------------ */

/* Largest value of the ghost ring of f (a NaN stays out; the interior's
 * non-finite depths are reported by the height step). */
static float ghost_max(const struct swe_ctx *s, const float *f)
{
	const long W = s->W, last = (long)(s->ny + 1) * W;
	float m = 0.0f;
	for (long c = 0; c < W; c++)
		m = maxf(m, maxf(f[c], f[last + c]));
	for (long c = W; c < last; c += W)
		m = maxf(m, maxf(f[c], f[c + W - 1]));
	return m;
}

/* Boundary fluxes of this step's height integration, booked as in/out. */
static void book_edges(struct swe_ctx *s, float hmax)
{
	const int nx = s->nx, ny = s->ny;
	const long W = s->W;
	const float *h = s->h, *u = s->u, *v = s->v;
	const struct wb_edge *E = s->r->edges;
	double fac = s->dtm * s->dx, in = 0.0, out = 0.0;
	if (E[WB_WEST].kind != WB_EDGE_PERIODIC)
		for (int j = 0; j < ny; j++) {
			long fw = P(s, 0, j), fe = P(s, nx, j);
			double a = face_flux(u[fw], h[fw - 1], h[fw], hmax);
			double b = face_flux(u[fe], h[fe - 1], h[fe], hmax);
			if (a > 0) in += a; else out -= a;
			if (b > 0) out += b; else in -= b;
		}
	if (E[WB_NORTH].kind != WB_EDGE_PERIODIC)
		for (int i = 0; i < nx; i++) {
			long fn = P(s, i, 0), fs = P(s, i, ny);
			double a = face_flux(v[fn], h[fn - W], h[fn], hmax);
			double b = face_flux(v[fs], h[fs - W], h[fs], hmax);
			if (a > 0) in += a; else out -= a;
			if (b > 0) out += b; else in -= b;
		}
	s->vol_in += in * fac;
	s->vol_out += out * fac;
}

static void apply_sources(struct swe_ctx *s, float *h)
{
	double a = s->dx * s->dx;
	for (long n = 0; n < s->src.n; n++) {
		long c = s->src.c[n];
		float hn = maxf(0.0f, h[c] + s->src.val[n] * (float)s->dtm);
		double dv = ((double)hn - (double)h[c]) * a;
		if (dv > 0)
			s->vol_in += dv;
		else
			s->vol_out -= dv;
		h[c] = hn;
	}
	apply_fixed(s, h);
	for (long n = 0; n < s->sink.n; n++) {
		long c = s->sink.c[n];
		s->vol_out += (double)h[c] * a;
		h[c] = 0.0f;
	}
}

/* Modifiers relax the current face velocities toward their targets. */
static void apply_modifiers(struct swe_ctx *s)
{
	for (long n = 0; n < s->mod_u.n; n++) {
		long c = s->mod_u.c[n];
		float w = 1.0f - expf(-s->mod_u.val[n] * (float)s->dt);
		s->u[c] += w * (s->mod_tu[n] - s->u[c]);
	}
	for (long n = 0; n < s->mod_v.n; n++) {
		long c = s->mod_v.c[n];
		float w = 1.0f - expf(-s->mod_v.val[n] * (float)s->dt);
		s->v[c] += w * (s->mod_tv[n] - s->v[c]);
	}
}

static enum wb_status diverged_at(struct swe_ctx *s, struct wb_diags *d,
				  const char *what, int bi, int bj)
{
	double x = s->r->origin[0] + (bi + 0.5) * s->dx;
	double y = s->r->origin[1] + (bj + 0.5) * s->dx;
	s->bad_cell = bi + (long)bj * s->nx;
	return wb_fail(d, WB_ESIM, NULL,
		       "swe: diverged at step %ld (t = %.6g s, dt = %.3g s): "
		       "non-finite %s at cell (%d, %d), world (%.2f, %.2f) m",
		       s->step, s->t, s->dt, what, bi, bj, x, y);
}

/* The first non-finite value of row jrow of f names the cell. */
static enum wb_status diverged(struct swe_ctx *s, struct wb_diags *d,
			       const char *what, const float *f, int jrow)
{
	int bi = 0;
	if (s->par) /* several processes: the row may be another's */
		wb_par_rows(s->par, (void *)f, sizeof(float), s->W, 1, 1);
	for (int i = 0; i <= s->nx; i++) {
		float x = f[P(s, i, jrow)];
		if (!isfinite(x)) {
			bi = i < s->nx ? i : s->nx - 1;
			break;
		}
	}
	return diverged_at(s, d, what, bi, jrow);
}

/* MacCormack forward estimates of all faces into ut / vt (their boundary
 * faces hold the old values, their ghosts copy the edge faces). */
/* ---- several processes (par.h) ---------------------------------------------
 * A process computes the rows [J0, J1) of each row phase; par_sync then
 * hands what the phase wrote in those rows (fields, per-row partials, the
 * volume changes of the row actions) to the others, so that every process
 * holds the one-process state again. Nonzero when the exchange failed. */
enum { PAR_HEIGHT, PAR_MC, PAR_VELOCITY, PAR_FUSED, PAR_FOAM };

static int par_sync(struct swe_ctx *s, int phase, struct row_out *ro)
{
	struct wb_par *p = s->par;
	const long W = s->W;
	const int ny = s->ny;
	int e = 0;
	if (phase == PAR_MC) {
		e |= wb_par_rows(p, s->ut, sizeof(float), W, 1, 0);
		e |= wb_par_rows(p, s->vt, sizeof(float), W, 1, 0);
		return e;
	}
	if (phase == PAR_FUSED) {
		/* the fused step reads two rows around each row it computes
		   and the edge conditions the ring: only those go (halo mode;
		   the unfused step's particles read everywhere: all rows) */
		void *f[3] = { s->h1, s->u1, s->v1 };
		e |= wb_par_halo(p, f, 3, sizeof(float), W, 1, 2);
		e |= wb_par_ring(p, f, 3, sizeof(float), W, s->nx, ny);
		e |= wb_par_rows(p, s->row_l, sizeof(long), 1, 0, 0);
	}
	if (phase == PAR_FOAM) {
		void *f[1] = { s->foam };
		e |= wb_par_halo(p, f, 1, sizeof(float), W, 1, 2);
		e |= wb_par_ring(p, f, 1, sizeof(float), W, s->nx, ny);
	}
	if (phase == PAR_HEIGHT) {
		e |= wb_par_rows(p, s->h1, sizeof(float), W, 1, 0);
		e |= wb_par_rows(p, s->row_l, sizeof(long), 1, 0, 0);
	}
	if (phase == PAR_HEIGHT) {
		e |= wb_par_rows(p, s->fu, sizeof(float), W, 1, 0);
		e |= wb_par_rows(p, s->fv, sizeof(float), W, 1, 1);
	}
	if (phase == PAR_FUSED) {
		if (s->src.n)
			e |= wb_par_list(p, s->src_dv, sizeof(double), s->src_row);
		if (s->fixed.n)
			e |= wb_par_list(p, s->fix_dv, sizeof(double), s->fix_row);
		if (s->sink.n)
			e |= wb_par_list(p, s->sink_dv, sizeof(double), s->sink_row);
	}
	if (phase == PAR_VELOCITY) {
		e |= wb_par_rows(p, s->u1, sizeof(float), W, 1, 0);
		e |= wb_par_rows(p, s->v1, sizeof(float), W, 1, 0);
	}
	if (phase == PAR_VELOCITY || phase == PAR_FUSED) {
		e |= wb_par_rows(p, ro, sizeof(*ro), 1, 0, 0);
		e |= wb_par_rows(p, ro + ny, sizeof(*ro), 1, 0, 0);
	}
	return e;
}

static void mc_forward(struct swe_ctx *s, float k, const struct face_par *fp)
{
	const int nx = s->nx, ny = s->ny;
	for (int j = 0; j < ny; j++) {
		s->ut[P(s, 0, j)] = s->u[P(s, 0, j)];
		s->ut[P(s, nx, j)] = s->u[P(s, nx, j)];
	}
	for (int i = 0; i < nx; i++) {
		s->vt[P(s, i, 0)] = s->v[P(s, i, 0)];
		s->vt[P(s, i, ny)] = s->v[P(s, i, ny)];
	}
	int J0, J1;
	wb_par_band(s->par, ny, &J0, &J1);
#pragma omp parallel for schedule(static) num_threads(s->threads)
	for (int j = J0; j < J1; j++) {
		struct row_out tmp;
		struct flux_rows frw;
		memset(&frw, 0, sizeof(frw));
		frw.fwd = s->ut + P(s, 0, j);
		u_fwd(s, j, 0, nx, k, fp, &frw, &tmp);
		frw.fwd = s->vt + P(s, 0, j);
		if (j > 0)
			v_fwd(s, j, 0, nx, k, fp, &frw, &tmp);
	}
	if (s->par)
		s->par_err |= par_sync(s, PAR_MC, NULL);
	fill_face_ghosts(s, s->ut, s->vt);
}

/* ---- fused step (no waterfalls) -------------------------------------------
 * Velocity row j needs the new depth of rows j - 1 and j and the height
 * step's face fluxes of rows j - 1 .. j + 1 (fv of row r: the faces
 * between rows r - 1 and r). So one sweep over the rows computes, for
 * r = j0 - 1 .. j1: the fluxes of row r (into a ring of four rows per
 * thread), the depth of row r - 1 (with its sources, fixed and sink cells
 * applied at once; their volume changes are kept per list entry and booked
 * serially afterwards, in the unfused order), then the faces of row r - 1.
 * Each thread sweeps a block of rows [j0, j1); the depth of its last row is
 * computed before a barrier, so that the next block's first faces read it.
 * Every value is the same float expression as in the unfused passes (the
 * flux of a face is computed once and read by both of its cells), so the
 * results are identical, for any thread count. Memory traffic per cell:
 * read h, u, v, H (bb with blockers), write h1, u1, v1; the fluxes stay in
 * cache. */

/* Flux of face_flux when no face's mean depth reaches hmax: the overshoot
 * term max(0, (hl + hr)/2 - hmax) is then exactly 0 and the upwind depth
 * (>= 0) is taken whole, so the value is face_flux's, bit for bit. */
SWE_INLINE float face_flux_noadj(float uf, float hl, float hr)
{
	return uf * (uf > 0.0f ? hl : hr);
}

/* Face fluxes of row r: fuR[i] of the x-face of cell (i, r) (i = 0 .. nx),
 * fvR[i] of its north face (i = 0 .. nx - 1). noadj: every depth of h
 * (ghosts included) is below hmax (face_flux_noadj). */
SWE_INLINE void flux_row_k(const struct swe_ctx *s, int r, float hmax,
			   float *restrict fuR, float *restrict fvR,
			   const int noadj)
{
	const int W = s->W, nx = s->nx;
	const float *restrict h = s->h;
	const float *restrict u = s->u;
	const float *restrict v = s->v;
	const int base = (int)P(s, 0, r);
#pragma omp simd
	for (int i = 0; i < nx; i++) {
		const int c = base + i;
		if (noadj) {
			fuR[i] = face_flux_noadj(u[c], h[c - 1], h[c]);
			fvR[i] = face_flux_noadj(v[c], h[c - W], h[c]);
		} else {
			fuR[i] = face_flux(u[c], h[c - 1], h[c], hmax);
			fvR[i] = face_flux(v[c], h[c - W], h[c], hmax);
		}
	}
	fuR[nx] = face_flux(u[base + nx], h[base + nx - 1], h[base + nx], hmax);
}

SWE_CLONES
static void flux_row_adj(const struct swe_ctx *s, int r, float hmax,
			 float *restrict fuR, float *restrict fvR)
{
	flux_row_k(s, r, hmax, fuR, fvR, 0);
}

SWE_CLONES
static void flux_row_noadj(const struct swe_ctx *s, int r, float hmax,
			   float *restrict fuR, float *restrict fvR)
{
	flux_row_k(s, r, hmax, fuR, fvR, 1);
}

static void flux_row(const struct swe_ctx *s, int r, float hmax,
		     float *restrict fuR, float *restrict fvR)
{
	if (s->hdep_max < hmax)
		flux_row_noadj(s, r, hmax, fuR, fvR);
	else
		flux_row_adj(s, r, hmax, fuR, fvR);
}

/* Depth of row j from its fluxes: h1 = h - k ((fe - fw) + (fs - fn)).
 * Returns 1 + the first column with a non-finite depth, 0 if none. */
SWE_CLONES
static long height_row_fused(const struct swe_ctx *s, int j, float k,
			     const float *restrict fuJ,
			     const float *restrict fvJ,
			     const float *restrict fvP)
{
	const int nx = s->nx;
	const float *restrict h = s->h + P(s, 0, j);
	float *restrict h1 = s->h1 + P(s, 0, j);
	int bad = 0;
#pragma omp simd reduction(| : bad)
	for (int i = 0; i < nx; i++) {
		float hn = h[i] - k * ((fuJ[i + 1] - fuJ[i]) + (fvP[i] - fvJ[i]));
		bad |= !(fabsf(hn) <= FLT_MAX);
		h1[i] = hn < 0.0f ? 0.0f : hn; /* keeps a NaN for the report */
	}
	if (!bad)
		return 0;
	for (int i = 0; i < nx; i++)
		if (!isfinite(h1[i]))
			return 1 + i;
	return 1;
}

/* Sources, fixed-level and sink-all cells of row j (as apply_sources,
 * per cell in the same order); the volume changes go to *_dv. */
static void row_actions(struct swe_ctx *s, int j, float *h)
{
	const double a = s->dx * s->dx;
	for (long n = s->src_row[j]; n < s->src_row[j + 1]; n++) {
		long c = s->src.c[n];
		float hn = maxf(0.0f, h[c] + s->src.val[n] * (float)s->dtm);
		s->src_dv[n] = ((double)hn - (double)h[c]) * a;
		h[c] = hn;
	}
	for (long n = s->fix_row[j]; n < s->fix_row[j + 1]; n++) {
		long c = s->fixed.c[n];
		float t = maxf(0.0f, s->fixed.val[n] - s->H[c]);
		s->fix_dv[n] = ((double)t - (double)h[c]) * s->dx * s->dx;
		h[c] = t;
	}
	for (long n = s->sink_row[j]; n < s->sink_row[j + 1]; n++) {
		long c = s->sink.c[n];
		s->sink_dv[n] = (double)h[c] * a;
		h[c] = 0.0f;
	}
}

/* Book the volume changes of row_actions in list order (as apply_sources). */
static void book_actions(struct swe_ctx *s)
{
	for (long n = 0; n < s->src.n; n++) {
		double dv = s->src_dv[n];
		if (dv > 0)
			s->vol_in += dv;
		else
			s->vol_out -= dv;
	}
	for (long n = 0; n < s->fixed.n; n++) {
		double dv = s->fix_dv[n];
		if (dv > 0)
			s->vol_in += dv;
		else
			s->vol_out -= dv;
	}
	for (long n = 0; n < s->sink.n; n++)
		s->vol_out += s->sink_dv[n];
}

static void height_and_actions(struct swe_ctx *s, int j, float k,
			       const float *fuJ, const float *fvJ,
			       const float *fvP, long *rb)
{
	rb[j] = height_row_fused(s, j, k, fuJ, fvJ, fvP);
	row_actions(s, j, s->h1);
}

/* MacCormack forward estimates of row r into the ring rows utR / vtR
 * (column i at [i], i = -1 .. nx), as mc_forward and fill_face_ghosts
 * leave ut / vt: boundary faces hold the old values, u's ghost rows -1 and
 * ny copy rows 0 and ny - 1 (utPrev: the ring row of r - 1; utGhost: the
 * ring row of -1, written at r = 0), v's ghost columns copy columns 0 and
 * nx - 1 (copies times the edges' tangential signs). */
static void mc_ring_rows(struct swe_ctx *s, int r, float k,
			 const struct face_par *fp, float *utR, float *vtR,
			 const float *utPrev, float *utGhost)
{
	const int nx = s->nx, ny = s->ny;
	struct row_out tmp;
	struct flux_rows frw;
	memset(&frw, 0, sizeof(frw));
	if (r < ny) {
		utR[0] = s->u[P(s, 0, r)];
		utR[nx] = s->u[P(s, nx, r)];
		frw.fwd = utR;
		u_fwd(s, r, 0, nx, k, fp, &frw, &tmp);
		if (r == 0)
			for (int i = 0; i <= nx; i++)
				utGhost[i] = s->tsgn[WB_NORTH] * utR[i];
	} else {
		for (int i = 0; i <= nx; i++)
			utR[i] = s->tsgn[WB_SOUTH] * utPrev[i];
	}
	if (r > 0 && r < ny) {
		frw.fwd = vtR;
		v_fwd(s, r, 0, nx, k, fp, &frw, &tmp);
	} else {
		memcpy(vtR, s->v + P(s, 0, r), (size_t)nx * sizeof(float));
	}
	vtR[-1] = s->tsgn[WB_WEST] * vtR[0];
	vtR[nx] = s->tsgn[WB_EAST] * vtR[nx - 1];
}

static void fused_pass(struct swe_ctx *s, float k, float kh, float hmax,
		       const struct face_par *fp, int mc, row_fn urow,
		       row_fn vrow, struct row_out *ro, long *rb)
{
	const int ny = s->ny;
	const long W = s->W;
	int J0, J1;
	wb_par_band(s->par, ny, &J0, &J1);
#pragma omp parallel num_threads(s->threads)
	{
		int t = omp_get_thread_num(), nt = omp_get_num_threads();
		int j0 = J0 + (int)((long)(J1 - J0) * t / nt);
		int j1 = J0 + (int)((long)(J1 - J0) * (t + 1) / nt);
		float *ring = s->ring + (size_t)t * 16 * W;
#define FU(r) (ring + ((r) & 3) * W)
#define FV(r) (ring + (4 + ((r) & 3)) * W)
#define UT(r) (ring + (8 + ((r) & 3)) * W + 1)
#define VT(r) (ring + (12 + ((r) & 3)) * W + 1)
		if (j1 > j0) {
			int j = j1 - 1;
			flux_row(s, j, hmax, FU(j), FV(j));
			flux_row(s, j + 1, hmax, FU(j + 1), FV(j + 1));
			height_and_actions(s, j, kh, FU(j), FV(j), FV(j + 1), rb);
		}
		if (t == 0 && J0 > 0 && J1 > J0) {
			/* another process's last depth row, which this band's
			   first faces read: computed here too (same bytes) */
			int j = J0 - 1;
			flux_row(s, j, hmax, FU(j), FV(j));
			flux_row(s, j + 1, hmax, FU(j + 1), FV(j + 1));
			height_and_actions(s, j, kh, FU(j), FV(j), FV(j + 1), rb);
		}
#pragma omp barrier
		for (int r = j0 > 0 ? j0 - 1 : 0; j1 > j0 && r <= j1; r++) {
			flux_row(s, r, hmax, FU(r), FV(r));
			if (mc)
				mc_ring_rows(s, r, k, fp, UT(r), VT(r), UT(r - 1),
					     UT(-1));
			int j = r - 1;
			if (j < j0)
				continue;
			if (j < j1 - 1)
				height_and_actions(s, j, kh, FU(j), FV(j), FV(r),
						   rb);
			struct flux_rows frw = { FU(j - 1), FU(j), FV(j - 1),
						 FV(j), FV(r), UT(j - 1), UT(j),
						 UT(r), VT(j - 1), VT(j), VT(r),
						 NULL };
			urow(s, j, 0, s->nx, k, fp, &frw, &ro[j]);
			if (j > 0)
				vrow(s, j, 0, s->nx, k, fp, &frw, &ro[ny + j]);
			else
				memset(&ro[ny], 0, sizeof(ro[ny]));
		}
#undef FU
#undef FV
#undef UT
#undef VT
	}
}

/* ---- block-sparse step ------------------------------------------------------
 * (swe.h, struct swe_sparse; docs/scale.md.) Why skipping a block gives the
 * dense bytes: a block outside the active set has no wet block among its
 * 8 neighbours, so within two cells of it every depth is at most eps (the
 * dry depth) and every face velocity is +0. The dense update would give
 * there fluxes u * h_up = +0, depths h - k (+0) = h, and, both cells of
 * every face being dry, the dry-cell wall: velocity +0 (face_finish);
 * foam 0 on dry cells. Those are the values the block already holds in h,
 * h1, u, u1, v, v1, foam and foam1 (h1 = h and u1 = v1 = 0 are written
 * when it leaves the active set, after a step in which its h, u, v were
 * already so). The height step and the forward estimates also run one
 * cell around the active runs (strips), so that every depth, flux and
 * estimate an active face reads is computed as the dense path computes
 * it. Sources, fixed cells and modifiers keep their blocks active; a
 * particle deposit wakes its blocks for the velocity step of its step (with
 * the zero fluxes the dense step has there). Boundary faces, ghosts,
 * particles and every sum stay dense, in their fixed order; the largest
 * depth takes the sleeping blocks' films into account. */

static int sparse_init(struct swe_ctx *s)
{
	struct swe_sparse *b = &s->sp;
	const char *e = getenv("WB_SWE_DENSE");
	b->on = !(e && *e && strcmp(e, "0") != 0);
	b->nbx = (s->nx + SWE_BLOCK - 1) / SWE_BLOCK;
	b->nby = (s->ny + SWE_BLOCK - 1) / SWE_BLOCK;
	b->nblk = (long)b->nbx * b->nby;
	b->first = 1;
	b->nthr = s->threads;
	b->thr_cells = 1L << 15;
	b->tune = 1;
	b->t_best = b->t_cur = 1;
	b->t_period = SWE_TUNE_PERIOD;
	b->t_next = 0;
	b->t_cost[0] = b->t_cost[1] = INFINITY;
	size_t n = (size_t)b->nblk;
	b->always = calloc(n, 1);
	b->act = calloc(n, 1);
	b->halo = calloc(n, 1);
	b->pact = calloc(n, 1);
	b->phalo = calloc(n, 1);
	b->wet = calloc(n, 1);
	b->wmask = calloc(n, 1);
	b->film = calloc(n, sizeof(float));
	b->nz = calloc(n, 1);
	b->runs = malloc((size_t)b->nby * 2 * (size_t)(b->nbx + 1) * 2 *
			 sizeof(int));
	b->nrun = calloc((size_t)b->nby * 2, sizeof(int));
	b->strip = malloc((size_t)s->threads * 6 * (size_t)(b->nbx + 1) *
			  sizeof(int));
	if (!b->always || !b->act || !b->halo || !b->pact || !b->phalo ||
	    !b->wet || !b->wmask || !b->film || !b->nz || !b->runs || !b->nrun ||
	    !b->strip)
		return -1;
	const struct swe_cell_list *L[] = { &s->src, &s->fixed, &s->mod_u,
					    &s->mod_v };
	for (int l = 0; l < 4; l++)
		for (long m = 0; m < L[l]->n; m++) {
			long c = L[l]->c[m];
			int i = (int)(c % s->W) - 1, j = (int)(c / s->W) - 1;
			b->always[(j / SWE_BLOCK) * (long)b->nbx + i / SWE_BLOCK] = 1;
		}
	return 0;
}

static void sparse_release(struct swe_sparse *b)
{
	free(b->always);
	free(b->act);
	free(b->halo);
	free(b->pact);
	free(b->phalo);
	free(b->wet);
	free(b->wmask);
	free(b->film);
	free(b->nz);
	free(b->runs);
	free(b->nrun);
	free(b->strip);
	memset(b, 0, sizeof(*b));
}

/* Columns and rows of block (bi, bj), interior cells; ghosts added for
 * edge blocks when 'ghosts'. */
static void block_box(const struct swe_ctx *s, int bi, int bj, int ghosts,
		      int *i0, int *i1, int *j0, int *j1)
{
	*i0 = bi * SWE_BLOCK;
	*j0 = bj * SWE_BLOCK;
	*i1 = *i0 + SWE_BLOCK < s->nx ? *i0 + SWE_BLOCK : s->nx;
	*j1 = *j0 + SWE_BLOCK < s->ny ? *j0 + SWE_BLOCK : s->ny;
	if (ghosts) {
		*i0 -= *i0 == 0;
		*j0 -= *j0 == 0;
		*i1 += *i1 == s->nx;
		*j1 += *j1 == s->ny;
	}
}

/* Neighbour bits of the wake masks: (dj + 1) * 3 + (di + 1), the centre
 * (4) left out. */
#define WAKE_BIT(di, dj) (1u << (((dj) + 1) * 3 + ((di) + 1)))
#define WAKE_ALL 0x1efu /* every neighbour: bits 0..8 but 4 */

/* A cell deeper than eps (or not finite) or a face velocity with a bit
 * set in the block (ghost ring and the far boundary faces of edge blocks
 * included): 0 when there is none, else 0x10 (the centre bit) with the
 * bits of the neighbours that such a cell or face lies within
 * SWE_WAKE_MARGIN cells of (rows or columns of the block's edge
 * towards them, ghosts included). */
static unsigned block_wet(const struct swe_ctx *s, int bi, int bj, float eps)
{
	int i0, i1, j0, j1;
	block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
	const int M = SWE_WAKE_MARGIN;
	const int I0 = bi * SWE_BLOCK, J0 = bj * SWE_BLOCK;
	const int I1 = I0 + SWE_BLOCK < s->nx ? I0 + SWE_BLOCK : s->nx;
	const int J1 = J0 + SWE_BLOCK < s->ny ? J0 + SWE_BLOCK : s->ny;
	/* a block narrower than two margins (the last column or row of
	   blocks) wakes every neighbour when wet */
	const int narrow = I1 - I0 < 2 * M || J1 - J0 < 2 * M;
	const uint32_t *u = (const uint32_t *)(const void *)s->u;
	const uint32_t *v = (const uint32_t *)(const void *)s->v;
	const float *h = s->h;
	unsigned m = 0;
	for (int j = j0; j < j1; j++) {
		const long c0 = P(s, i0, j), c1 = P(s, i1, j);
		const long cw = P(s, I0 + M, j), ce = P(s, I1 - M, j);
		uint32_t aw = 0, am = 0, ae = 0;
		int ww = 0, wm = 0, we = 0;
		long c = c0;
		for (; c < cw && c < c1; c++) {
			aw |= u[c] | v[c];
			ww |= !(h[c] <= eps);
		}
		for (; c < ce && c < c1; c++) {
			am |= u[c] | v[c];
			wm |= !(h[c] <= eps);
		}
		for (; c < c1; c++) {
			ae |= u[c] | v[c];
			we |= !(h[c] <= eps);
		}
		int west = (aw != 0) | ww, east = (ae != 0) | we;
		if (!(west | east | (am != 0) | wm))
			continue;
		if (narrow)
			return 0x10u | WAKE_ALL;
		int north = j < J0 + M, south = j >= J1 - M;
		m |= 0x10u;
		m |= west ? WAKE_BIT(-1, 0) : 0;
		m |= east ? WAKE_BIT(1, 0) : 0;
		if (north) {
			m |= WAKE_BIT(0, -1);
			m |= west ? WAKE_BIT(-1, -1) : 0;
			m |= east ? WAKE_BIT(1, -1) : 0;
		}
		if (south) {
			m |= WAKE_BIT(0, 1);
			m |= west ? WAKE_BIT(-1, 1) : 0;
			m |= east ? WAKE_BIT(1, 1) : 0;
		}
	}
	return m;
}

/* What the dense boundary passes write into a sleeping edge block: its
 * ghost depths (fill_ghosts) and its boundary faces (set_bc_faces): wet
 * when a ghost is deeper than eps or a boundary face moves. */
static int edge_wet(const struct swe_ctx *s, int bi, int bj, float eps)
{
	int i0, i1, j0, j1;
	block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
	const float *h = s->h, *u = s->u, *v = s->v;
	int wet = 0;
	for (int j = j0; j < j1; j++) {
		if (i0 < 0)
			wet |= !(h[P(s, -1, j)] <= eps) | (u[P(s, 0, j)] != 0.0f);
		if (i1 > s->nx)
			wet |= !(h[P(s, s->nx, j)] <= eps) |
			       (u[P(s, s->nx, j)] != 0.0f);
	}
	for (int i = i0; i < i1; i++) {
		if (j0 < 0)
			wet |= !(h[P(s, i, -1)] <= eps) | (v[P(s, i, 0)] != 0.0f);
		if (j1 > s->ny)
			wet |= !(h[P(s, i, s->ny)] <= eps) |
			       (v[P(s, i, s->ny)] != 0.0f);
	}
	return wet;
}

/* Largest depth of the block's interior cells (films of a sleeping
 * block: the dense step's largest depth counts them). */
static float block_hmax(const struct swe_ctx *s, int bi, int bj)
{
	int i0, i1, j0, j1;
	block_box(s, bi, bj, 0, &i0, &i1, &j0, &j1);
	float m = 0.0f;
	for (int j = j0; j < j1; j++)
		for (long c = P(s, i0, j); c < P(s, i1, j); c++)
			m = maxf(m, s->h[c]);
	return m;
}

/* Memory follows the water: the fields are calloc'd (pages the kernel
 * maps on first write), and the block transitions write only what differs,
 * so a page that never held water is never written and costs no memory. */

/* dst[0..n) = src[0..n), writing only when the bytes differ. */
static void copy_if_diff(float *dst, const float *src, size_t n)
{
	if (memcmp(dst, src, n * sizeof(float)) != 0)
		memcpy(dst, src, n * sizeof(float));
}

/* f[0..n) = +0, writing only when a bit is set. */
static void zero_if_set(float *f, size_t n)
{
	const uint32_t *b = (const uint32_t *)(const void *)f;
	uint32_t acc = 0;
	for (size_t k = 0; k < n; k++)
		acc |= b[k];
	if (acc)
		memset(f, 0, n * sizeof(float));
}

/* Zero fields f[0..nf) over the block (ghosts of edge blocks included). */
static void block_zero(const struct swe_ctx *s, int bi, int bj, float **f,
		       int nf)
{
	int i0, i1, j0, j1;
	block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
	for (int q = 0; q < nf; q++) {
		if (!f[q])
			continue;
		for (int j = j0; j < j1; j++)
			zero_if_set(f[q] + P(s, i0, j), (size_t)(i1 - i0));
	}
}

/* A depth of the block (ghosts of edge blocks included) other than +-0. */
static int block_nonzero(const struct swe_ctx *s, int bi, int bj)
{
	int i0, i1, j0, j1;
	block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
	const uint32_t *h = (const uint32_t *)(const void *)s->h;
	uint32_t acc = 0;
	for (int j = j0; j < j1; j++)
		for (long c = P(s, i0, j); c < P(s, i1, j); c++)
			acc |= h[c] & 0x7fffffffu;
	return acc != 0;
}

/* Column runs of the blocks set in 'set' along band bj into out (pairs);
 * returns their number. */
static int band_runs(const struct swe_ctx *s, const uint8_t *set, int bj,
		     int *out)
{
	const int nbx = s->sp.nbx;
	int n = 0;
	for (int bi = 0; bi < nbx; bi++) {
		if (!set[(long)bj * nbx + bi])
			continue;
		int ia = bi * SWE_BLOCK;
		while (bi + 1 < nbx && set[(long)bj * nbx + bi + 1])
			bi++;
		int ib = (bi + 1) * SWE_BLOCK;
		out[2 * n] = ia;
		out[2 * n + 1] = ib < s->nx ? ib : s->nx;
		n++;
	}
	return n;
}

static void sparse_runs(struct swe_ctx *s)
{
	struct swe_sparse *b = &s->sp;
	const long stride = 2L * (b->nbx + 1);
	for (int bj = 0; bj < b->nby; bj++) {
		b->nrun[2 * bj] = band_runs(s, b->halo, bj,
					    b->runs + (2 * bj) * stride);
		b->nrun[2 * bj + 1] = band_runs(s, b->act, bj,
						b->runs + (2 * bj + 1) * stride);
	}
}

/* Threads for the sparse passes: at most one per thr_cells active cells
 * (the passes' fork/join costs more than the work of a small set), one
 * when the timing says so (sparse_tune); no result depends on the
 * thread count. */
static void sparse_threads(struct swe_ctx *s)
{
	long per = s->sp.n_act * (long)SWE_BLOCK * SWE_BLOCK / s->sp.thr_cells;
	int n = per < 1 ? 1 : per < s->threads ? (int)per : s->threads;
	s->sp.nthr = s->sp.tune && !s->sp.t_cur ? 1 : n;
}

/* After a sparse step of 'sec' seconds: batches of SWE_TUNE_BATCH steps
 * are timed per active block; the current choice's cost is refreshed by
 * each batch, and every t_period steps one batch runs with the other
 * choice (a probe). A probe that wins becomes the choice; one that loses
 * doubles the period (up to SWE_TUNE_PERIOD_MAX), so that on a machine
 * where it keeps losing the probes cost well under 1 % of the steps. */
static void sparse_tune(struct swe_sparse *b, int threads, double sec)
{
	if (!b->tune || threads < 2)
		return;
	b->t_acc += sec / (double)(b->n_act > 0 ? b->n_act : 1);
	if (++b->t_cnt < SWE_TUNE_BATCH)
		return;
	double c = b->t_acc / b->t_cnt;
	b->t_acc = 0;
	b->t_cnt = 0;
	if (b->t_cur != b->t_best) { /* a probe */
		if (c < b->t_cost[b->t_best]) {
			b->t_best = b->t_cur;
			b->t_period = SWE_TUNE_PERIOD;
		} else if (b->t_period < SWE_TUNE_PERIOD_MAX) {
			b->t_period *= 2;
		}
		b->t_cost[b->t_cur] = c;
		b->t_cur = b->t_best;
		b->t_next = b->t_period;
		return;
	}
	b->t_cost[b->t_cur] = c;
	b->t_next -= SWE_TUNE_BATCH;
	if (b->t_next <= 0)
		b->t_cur = !b->t_best;
}

/* set = src dilated by one block (8 neighbours). */
static void dilate(const struct swe_sparse *b, const uint8_t *src,
		   uint8_t *set)
{
	for (int bj = 0; bj < b->nby; bj++)
		for (int bi = 0; bi < b->nbx; bi++) {
			int on = 0;
			for (int dj = -1; dj <= 1 && !on; dj++)
				for (int di = -1; di <= 1; di++) {
					int x = bi + di, y = bj + dj;
					if (x >= 0 && y >= 0 && x < b->nbx &&
					    y < b->nby && src[(long)y * b->nbx + x]) {
						on = 1;
						break;
					}
				}
			set[(long)bj * b->nbx + bi] = (uint8_t)on;
		}
}

/* set = the wet blocks and the neighbours their water is near: block q
 * is set when it is wet or a neighbour's mask has the bit pointing at q
 * (masks packed to 8 bits: the 9-bit WAKE_BIT layout without the centre). */
static void wake(const struct swe_sparse *b, const uint8_t *wet,
		 const uint8_t *mask, uint8_t *set)
{
	for (int bj = 0; bj < b->nby; bj++)
		for (int bi = 0; bi < b->nbx; bi++) {
			long q = (long)bj * b->nbx + bi;
			int on = wet[q];
			for (int dj = -1; dj <= 1 && !on; dj++)
				for (int di = -1; di <= 1; di++) {
					int x = bi + di, y = bj + dj;
					if ((di | dj) == 0 || x < 0 || y < 0 ||
					    x >= b->nbx || y >= b->nby)
						continue;
					/* from the neighbour towards q */
					int k = (-dj + 1) * 3 + (-di + 1);
					int bit = k < 4 ? k : k - 1;
					if (mask[(long)y * b->nbx + x] >> bit & 1) {
						on = 1;
						break;
					}
				}
			set[q] = (uint8_t)on;
		}
}

/* The activity pass at the start of a step: wet blocks (scanned where
 * water can be: last step's active blocks, edge blocks, or every block on
 * the first step), the active and halo sets, the zeros of blocks leaving
 * them, the column runs. */
static void sparse_activity(struct swe_ctx *s)
{
	struct swe_sparse *b = &s->sp;
	const int nbx = b->nbx, nby = b->nby;
	const float eps = (float)fmax(s->sim.dry_depth, 1e-9);
	uint8_t *t = b->pact;
	b->pact = b->act;
	b->act = t;
	t = b->phalo;
	b->phalo = b->halo;
	b->halo = t;
#pragma omp parallel for schedule(dynamic, 16) num_threads(b->nthr)
	for (long q = 0; q < b->nblk; q++) {
		int bi = (int)(q % nbx), bj = (int)(q / nbx);
		int edge = bi == 0 || bj == 0 || bi == nbx - 1 || bj == nby - 1;
		unsigned m = b->first || b->pact[q] ? block_wet(s, bi, bj, eps) :
			     edge && edge_wet(s, bi, bj, eps) ? 0x10u | WAKE_ALL :
			     0u;
		b->wet[q] = (uint8_t)(m != 0);
		b->wmask[q] = (uint8_t)(m & 0xfu) | (uint8_t)((m >> 1) & 0xf0u);
	}
	if (b->first) {
		/* as if every block left both sets: h1 = h, zeros */
		memset(b->pact, 1, (size_t)b->nblk);
		memset(b->phalo, 1, (size_t)b->nblk);
	}
	b->first = 0;
	/* a block with a source, held level or modifier counts as wet: it
	   can wet a cell on its edge within this step, and the faces that
	   cell shares with the next block open in the same step */
	for (long q = 0; q < b->nblk; q++)
		if (b->always[q]) {
			b->wet[q] = 1;
			b->wmask[q] = 0xff;
		}
	wake(b, b->wet, b->wmask, b->act);
	dilate(b, b->act, b->halo);
	float *fa[] = { s->u1, s->v1 };
	float *fh[] = { s->fu, s->fv, s->ut, s->vt };
	long na = 0, nh = 0;
	for (long q = 0; q < b->nblk; q++) {
		int bi = (int)(q % nbx), bj = (int)(q / nbx);
		if (b->pact[q] && !b->act[q]) {
			/* the dense step leaves its depths (films at most
			   eps deep) as they are and closes its faces */
			int i0, i1, j0, j1;
			block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
			for (int j = j0; j < j1; j++)
				copy_if_diff(s->h1 + P(s, i0, j),
					     s->h + P(s, i0, j),
					     (size_t)(i1 - i0));
			block_zero(s, bi, bj, fa, 2);
			b->film[q] = block_hmax(s, bi, bj);
			b->nz[q] = (uint8_t)block_nonzero(s, bi, bj);
		}
		if (b->phalo[q] && !b->halo[q])
			block_zero(s, bi, bj, fh, 4);
		na += b->act[q];
		nh += b->halo[q];
	}
	b->n_act = na;
	b->n_halo = nh;
	sparse_threads(s);
	sparse_runs(s);
}

/* A block woken by a deposit after the height step: its fluxes and those
 * of the ring cells in blocks that are not active were not computed this
 * step (stale values may lie there); the dense values are 0 (closed
 * faces). */
static void deposit_wake(struct swe_ctx *s, long bq)
{
	struct swe_sparse *b = &s->sp;
	int bi = (int)(bq % b->nbx), bj = (int)(bq / b->nbx);
	int i0, i1, j0, j1;
	block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
	i0 -= i0 >= 0;
	j0 -= j0 >= 0;
	i1 += i1 <= s->nx - 1;
	j1 += j1 <= s->ny - 1;
	for (int j = j0; j < j1; j++)
		for (int i = i0; i < i1; i++) {
			int ci = i < 0 ? 0 : i >= s->nx ? s->nx - 1 : i;
			int cj = j < 0 ? 0 : j >= s->ny ? s->ny - 1 : j;
			long q = (cj / SWE_BLOCK) * (long)b->nbx + ci / SWE_BLOCK;
			if (q != bq && b->act[q])
				continue;
			s->fu[P(s, i, j)] = 0.0f;
			s->fv[P(s, i, j)] = 0.0f;
		}
	b->act[bq] = 1;
}

/* After the particle step: the blocks of the cells and faces a deposit
 * changed (cell c, faces c, c + 1, c + W) join the active set for this
 * step's velocity step, their neighbours the halo (forward estimates).
 * Returns 1 when a set changed. */
static int sparse_deposits(struct swe_ctx *s)
{
	struct swe_sparse *b = &s->sp;
	int changed = 0;
	for (long n = 0; n < s->n_dep; n++) {
		long c = s->dep_list[n];
		int i = (int)(c % s->W) - 1, j = (int)(c / s->W) - 1;
		for (int q = 0; q < 3; q++) {
			int ii = i + (q == 1), jj = j + (q == 2);
			if (ii >= s->nx || jj >= s->ny)
				continue;
			long bq = (jj / SWE_BLOCK) * (long)b->nbx + ii / SWE_BLOCK;
			if (!b->act[bq]) {
				deposit_wake(s, bq);
				changed = 1;
			}
		}
	}
	if (!changed)
		return 0;
	/* a block may enter the halo here: its fluxes (of the old, zero
	   velocities) are the zeros it holds */
	uint8_t *nh = b->wet; /* wet is not needed any more this step */
	dilate(b, b->act, nh);
	long na = 0, nhn = 0;
	for (long q = 0; q < b->nblk; q++) {
		b->halo[q] |= nh[q];
		na += b->act[q];
		nhn += b->halo[q];
	}
	b->n_act = na;
	b->n_halo = nhn;
	sparse_threads(s);
	sparse_runs(s);
	return 1;
}

const int *swe_row_runs(const struct swe_ctx *s, int j, int active, int *n,
			int whole[2])
{
	if (!s->sp.on || s->sp.first) { /* dense, or no activity pass yet */
		whole[0] = 0;
		whole[1] = s->nx;
		*n = 1;
		return whole;
	}
	const struct swe_sparse *b = &s->sp;
	int bj = j / SWE_BLOCK;
	*n = b->nrun[2 * bj + active];
	return b->runs + (2 * bj + active) * 2L * (b->nbx + 1);
}

static const int *band_run(const struct swe_ctx *s, int j, int active,
			   int *n)
{
	const struct swe_sparse *b = &s->sp;
	int bj = j / SWE_BLOCK;
	*n = b->nrun[2 * bj + active];
	return b->runs + (2 * bj + active) * 2L * (b->nbx + 1);
}

/* Columns of row j whose depth, fluxes and forward estimates an active
 * face reads: the active runs of the bands of rows j - 1 .. j + 1, one
 * column wider on each side, merged (the strips of the halo blocks that
 * matter; the rest of a halo block is never read). out: at least 2 (nbx
 * + 1) ints; returns the number of runs. */
static int strip_runs(const struct swe_ctx *s, int j, int *out)
{
	int n = 0, bj = j / SWE_BLOCK;
	int bands[3] = { (j > 0 ? j - 1 : j) / SWE_BLOCK, bj,
			 (j + 1 < s->ny ? j + 1 : j) / SWE_BLOCK };
	for (int q = 0; q < 3; q++) {
		if ((q == 0 && bands[0] == bj) || (q == 2 && bands[2] == bj))
			continue;
		int m;
		const int *r = band_run(s, bands[q] * SWE_BLOCK, 1, &m);
		for (int x = 0; x < m; x++) {
			int ia = r[2 * x] > 0 ? r[2 * x] - 1 : 0;
			int ib = r[2 * x + 1] < s->nx ? r[2 * x + 1] + 1 : s->nx;
			/* insert sorted by start, merging overlaps */
			int p = n;
			while (p > 0 && out[2 * (p - 1)] > ia) {
				out[2 * p] = out[2 * (p - 1)];
				out[2 * p + 1] = out[2 * (p - 1) + 1];
				p--;
			}
			out[2 * p] = ia;
			out[2 * p + 1] = ib;
			n++;
		}
	}
	int w = 0;
	for (int x = 0; x < n; x++) {
		if (w > 0 && out[2 * x] <= out[2 * (w - 1) + 1]) {
			if (out[2 * x + 1] > out[2 * (w - 1) + 1])
				out[2 * (w - 1) + 1] = out[2 * x + 1];
			continue;
		}
		out[2 * w] = out[2 * x];
		out[2 * w + 1] = out[2 * x + 1];
		w++;
	}
	return w;
}

/* Height integration on the strips; rb[j] as height_row. */
static void sparse_height(struct swe_ctx *s, float k, float hmax, long *rb)
{
#pragma omp parallel for schedule(dynamic, 8) num_threads(s->sp.nthr)
	for (int j = 0; j < s->ny; j++) {
		int *r = s->sp.strip + (size_t)omp_get_thread_num() * 6 *
					       (s->sp.nbx + 1);
		int n = strip_runs(s, j, r);
		int bad = 0;
		for (int m = 0; m < n; m++)
			bad |= height_row(s, j, r[2 * m], r[2 * m + 1], k, hmax);
		rb[j] = bad;
	}
}

static void ro_merge(struct row_out *a, const struct row_out *b)
{
	a->umax = maxf(a->umax, b->umax);
	a->hmax = maxf(a->hmax, b->hmax);
	a->bad |= b->bad;
	a->nclamp += b->nclamp;
}

/* mc_forward on the strips (boundary faces and ghosts as there), when mc,
 * then the velocity step on the active runs (ro as in the unfused
 * path), in one parallel region: the loop's barrier orders the estimates
 * before the velocity rows that read them one row away. */
static void sparse_velocity(struct swe_ctx *s, float k,
			    const struct face_par *fp, int mc, row_fn urow,
			    row_fn vrow, struct row_out *ro)
{
	const int nx = s->nx, ny = s->ny;
	const float *fu = s->fu, *fv = s->fv;
	if (mc) {
		/* boundary faces: stored where they differ (a row's first
		   and last page stay unbacked on dry land) */
		for (int j = 0; j < ny; j++) {
			setf(&s->ut[P(s, 0, j)], s->u[P(s, 0, j)]);
			setf(&s->ut[P(s, nx, j)], s->u[P(s, nx, j)]);
		}
		for (int i = 0; i < nx; i++) {
			setf(&s->vt[P(s, i, 0)], s->v[P(s, i, 0)]);
			setf(&s->vt[P(s, i, ny)], s->v[P(s, i, ny)]);
		}
	}
#pragma omp parallel num_threads(s->sp.nthr)
	{
		if (mc) {
#pragma omp for schedule(dynamic, 8)
			for (int j = 0; j < ny; j++) {
				int *r = s->sp.strip +
					 (size_t)omp_get_thread_num() * 6 *
						 (s->sp.nbx + 1);
				int n = strip_runs(s, j, r);
				struct row_out tmp;
				struct flux_rows frw;
				memset(&frw, 0, sizeof(frw));
				for (int m = 0; m < n; m++) {
					frw.fwd = s->ut + P(s, 0, j);
					u_fwd(s, j, r[2 * m], r[2 * m + 1], k,
					      fp, &frw, &tmp);
					frw.fwd = s->vt + P(s, 0, j);
					if (j > 0)
						v_fwd(s, j, r[2 * m],
						      r[2 * m + 1], k, fp, &frw,
						      &tmp);
				}
			}
#pragma omp single
			fill_face_ghosts(s, s->ut, s->vt);
		}
#pragma omp for schedule(dynamic, 8)
		for (int j = 0; j < ny; j++) {
			struct flux_rows frw = {
				fu + P(s, 0, j - 1), fu + P(s, 0, j),
				fv + P(s, 0, j - 1), fv + P(s, 0, j),
				fv + P(s, 0, j + 1), NULL, NULL, NULL, NULL,
				NULL, NULL, NULL
			};
			if (mc) {
				frw.utM = s->ut + P(s, 0, j - 1);
				frw.ut0 = s->ut + P(s, 0, j);
				frw.utP = s->ut + P(s, 0, j + 1);
				frw.vtM = s->vt + P(s, 0, j - 1);
				frw.vt0 = s->vt + P(s, 0, j);
				frw.vtP = s->vt + P(s, 0, j + 1);
			}
			memset(&ro[j], 0, sizeof(ro[j]));
			memset(&ro[ny + j], 0, sizeof(ro[ny + j]));
			int n;
			const int *r = band_run(s, j, 1, &n);
			for (int m = 0; m < n; m++) {
				struct row_out a;
				urow(s, j, r[2 * m], r[2 * m + 1], k, fp, &frw,
				     &a);
				ro_merge(&ro[j], &a);
				if (j > 0) {
					vrow(s, j, r[2 * m], r[2 * m + 1], k,
					     fp, &frw, &a);
					ro_merge(&ro[ny + j], &a);
				}
			}
		}
	}
}

static enum wb_status par_failed(struct swe_ctx *s, struct wb_diags *d)
{
	return wb_fail(d, WB_EIO, NULL,
		       "swe: step %ld: exchange between processes failed",
		       s->step + 1);
}

enum wb_status swe_step(struct swe_ctx *s, struct wb_diags *d)
{
	const int nx = s->nx, ny = s->ny;
	/* the continuity step's dt (steady acceleration: eps dt, else dt;
	   here, since a caller may shorten s->dt between steps) */
	s->dtm = s->eps_m * s->dt;
	const float k = (float)(s->dt / s->dx);
	/* the continuity step (steady acceleration: eps k, else k) */
	const float kh = (float)(s->dtm / s->dx);
	const double dt = s->dt, dtm = s->dtm;
	/* h_avgmax; effectively infinite under the wave CFL (of the waves
	   slowed by eps under steady acceleration) */
	const float hmax = (float)(SWE_OVERSHOOT_BETA * s->dx * s->dx /
				   (s->eps_m * s->g * dt * dt));
	int T = s->threads;
	double tw0 = s->sp.on ? omp_get_wtime() : 0;

	s->hmax_step = hmax;
	apply_modifiers(s);
	wall_drag(s);
	swe_falls_activate(s);

	struct face_par fp;
	fp.gk = (float)(s->g * dt / s->dx);
	fp.eps = (float)fmax(s->sim.dry_depth, 1e-9);
	fp.umax = (float)(s->vel_alpha * s->dx / dt);
	fp.fric = (float)(s->g * s->sim.manning * s->sim.manning * dt);
	fp.fall = (float)(SWE_FALL_DROP * s->dx);
	int mc = s->sim.maccormack != 0, fr = fp.fric > 0.0f;
	row_fn urow = face_rows[1][mc][fr][s->has_blk];
	row_fn vrow = face_rows[0][mc][fr][s->has_blk];
	/* without waterfalls nothing between the height integration and the
	   advection reaches beyond a cell: both run in one pass over the rows */
	int fused = s->n_falls == 0 && s->P.n == 0;
	struct row_out *ro = malloc(sizeof(*ro) * (size_t)(2 * ny + 2));
	if (!ro)
		return wb_fail(d, WB_EIO, NULL, "swe: out of memory");
	long *rb = s->row_l;

	if (s->sp.on) {
		/* block-sparse: the unfused order on the active blocks */
		sparse_activity(s);
		sparse_height(s, kh, hmax, rb);
		for (int j = 0; j < ny; j++)
			if (rb[j]) {
				free(ro);
				return diverged(s, d, "depth", s->h1, j);
			}
		book_edges(s, hmax);
		swe_falls_emit(s);
		apply_sources(s, s->h1);
		if (s->P.n > 0 || s->n_falls > 0) {
			swe_particles_step(s);
			sparse_deposits(s);
		}
		fill_ghosts(s, s->h1, 1);
		fill_face_ghosts(s, s->u, s->v);
		sparse_velocity(s, k, &fp, mc, urow, vrow, ro);
		s->sp.act_steps += s->sp.n_act;
		/* the sleeping blocks' films count in the largest depth */
		for (long q = 0; q < s->sp.nblk; q++)
			if (!s->sp.act[q])
				ro[0].hmax = maxf(ro[0].hmax, s->sp.film[q]);
	} else if (fused) {
		s->sp.first = 1; /* block sets not kept: rescan when back */
		book_edges(s, hmax);
		fill_face_ghosts(s, s->u, s->v);
		fused_pass(s, k, kh, hmax, &fp, mc, urow, vrow, ro, rb);
		if (s->par && par_sync(s, PAR_FUSED, ro)) {
			free(ro);
			return par_failed(s, d);
		}
		for (int j = 0; j < ny; j++)
			if (rb[j]) {
				free(ro);
				return diverged_at(s, d, "depth", (int)rb[j] - 1,
						   j);
			}
		book_actions(s);
		fill_ghosts(s, s->h1, 1);
	} else {
		s->sp.first = 1;
		/* 1. height integration */
		int J0, J1;
		wb_par_band(s->par, ny, &J0, &J1);
#pragma omp parallel for schedule(static) num_threads(T)
		for (int j = J0; j < J1; j++)
			rb[j] = height_row(s, j, 0, nx, kh, hmax);
		if (s->par && par_sync(s, PAR_HEIGHT, ro)) {
			free(ro);
			return par_failed(s, d);
		}
		for (int j = 0; j < ny; j++)
			if (rb[j]) {
				free(ro);
				return diverged(s, d, "depth", s->h1, j);
			}
		book_edges(s, hmax);
		swe_falls_emit(s);
		apply_sources(s, s->h1);
		if (s->P.n > 0 || s->n_falls > 0)
			swe_particles_step(s);
		fill_ghosts(s, s->h1, 1);

		/* 2 + 3. advection, pressure, friction, clamp, walls */
		fill_face_ghosts(s, s->u, s->v);
		if (mc)
			mc_forward(s, k, &fp);
		const float *fu = s->fu, *fv = s->fv;
#pragma omp parallel for schedule(static) num_threads(T)
		for (int j = J0; j < J1; j++) {
			struct flux_rows frw = {
				fu + P(s, 0, j - 1), fu + P(s, 0, j),
				fv + P(s, 0, j - 1), fv + P(s, 0, j),
				fv + P(s, 0, j + 1), NULL, NULL, NULL, NULL,
				NULL, NULL, NULL
			};
			if (mc) {
				frw.utM = s->ut + P(s, 0, j - 1);
				frw.ut0 = s->ut + P(s, 0, j);
				frw.utP = s->ut + P(s, 0, j + 1);
				frw.vtM = s->vt + P(s, 0, j - 1);
				frw.vt0 = s->vt + P(s, 0, j);
				frw.vtP = s->vt + P(s, 0, j + 1);
			}
			urow(s, j, 0, nx, k, &fp, &frw, &ro[j]);
			if (j > 0)
				vrow(s, j, 0, nx, k, &fp, &frw, &ro[ny + j]);
			else
				memset(&ro[ny], 0, sizeof(ro[ny]));
		}
		if (s->par && (s->par_err || par_sync(s, PAR_VELOCITY, ro))) {
			free(ro);
			return par_failed(s, d);
		}
	}
	set_bc_faces(s, s->u, s->v, s->u1, s->v1, s->h1, &fp);
	float umax = 0.0f, hm = 0.0f;
	for (int j = 0; j < ny; j++) {
		if (ro[j].bad) {
			free(ro);
			return diverged(s, d, "x-velocity", s->u1, j);
		}
		if (ro[ny + j].bad) {
			free(ro);
			return diverged(s, d, "y-velocity", s->v1, j);
		}
		umax = maxf(umax, maxf(ro[j].umax, ro[ny + j].umax));
		hm = maxf(hm, ro[j].hmax);
		s->clamped += ro[j].nclamp + ro[ny + j].nclamp;
	}
	free(ro);
	for (int j = 0; j < ny; j++) {
		umax = maxf(umax, fabsf(s->u1[P(s, 0, j)]));
		umax = maxf(umax, fabsf(s->u1[P(s, nx, j)]));
	}
	for (int i = 0; i < nx; i++) {
		umax = maxf(umax, fabsf(s->v1[P(s, i, 0)]));
		umax = maxf(umax, fabsf(s->v1[P(s, i, ny)]));
	}
	float *t;
	t = s->u; s->u = s->u1; s->u1 = t;
	t = s->v; s->v = s->v1; s->v1 = t;
	t = s->h; s->h = s->h1; s->h1 = t;

	if (s->foam_on)
		foam_step(s, s->h, s->u, s->v);
	if (s->par && s->foam_on && !s->sp.on && fused &&
	    par_sync(s, PAR_FOAM, NULL))
		return par_failed(s, d);

	s->t += dt;
	s->t_cur += dtm; /* the waterfalls' discharge: per mass time */
	s->step++;
	s->hdep_max = maxf(hm, ghost_max(s, s->h));
	next_dt(s, umax, hm);
	if (s->sp.on)
		sparse_tune(&s->sp, s->threads, omp_get_wtime() - tw0);
	return WB_OK;
}

/* dst[0..n) = src[0..n), a page (1024 floats from the mmap'd base) at a
 * time, storing only the pages that differ: the snapshot of the
 * instantaneous residual then backs memory only where the velocities
 * are or were nonzero (a dense memcpy backed 8 bytes per cell of the
 * whole grid, 2 GiB at 16384^2). Same bytes as memcpy. */
static void copy_pages_if_diff(float *dst, const float *src, long n)
{
	const long pg = 1024;
	for (long c = 0; c < n; c += pg)
		copy_if_diff(dst + c, src + c, (size_t)(n - c < pg ? n - c : pg));
}

double swe_residual(struct swe_ctx *s)
{
	const int nx = s->nx, ny = s->ny;
	double *dn = s->row_d, *nn = s->row_d2;
	int T = s->threads;
	int J0, J1; /* several processes: row sums exchanged (par.h) */
	wb_par_band(s->par, ny, &J0, &J1);
	if (J1 == ny)
		J1 = ny + 1;
#pragma omp parallel for schedule(static) num_threads(T)
	for (int j = J0; j < J1; j++) {
		double a = 0.0, b = 0.0;
		long base = P(s, 0, j);
		if (j < ny)
			for (long c = base; c <= base + nx; c++) {
				double du = (double)s->u[c] - s->usnap[c];
				a += du * du;
				b += (double)s->u[c] * s->u[c];
			}
		for (long c = base; c < base + nx; c++) {
			double dv = (double)s->v[c] - s->vsnap[c];
			a += dv * dv;
			b += (double)s->v[c] * s->v[c];
		}
		dn[j] = a;
		nn[j] = b;
	}
	if (s->par) {
		wb_par_rows(s->par, dn, sizeof(double), 1, 0, 1);
		wb_par_rows(s->par, nn, sizeof(double), 1, 0, 1);
	}
	double a = 0.0, b = 0.0;
	for (int j = 0; j <= ny; j++) {
		a += dn[j];
		b += nn[j];
	}
	copy_pages_if_diff(s->usnap, s->u, s->ncell);
	copy_pages_if_diff(s->vsnap, s->v, s->ncell);
	if (b <= 0.0)
		return a > 0.0 ? 1.0 : 0.0;
	return sqrt(a / b);
}

enum wb_status swe_export(const struct swe_ctx *s, struct wb_state *out,
			  struct wb_diags *d)
{
	const int nx = s->nx, ny = s->ny;
	const long W = s->W;
	size_t n = (size_t)nx * ny;
	memset(out, 0, sizeof(*out));
	out->nx = nx;
	out->ny = ny;
	out->dx = s->dx;
	/* zeroed (for large grids: pages the kernel backs on first write) and
	   written where a value is not +0, so the state's memory follows the
	   water */
	out->h = calloc(n, sizeof(float));
	out->u = calloc(n, sizeof(float));
	out->v = calloc(n, sizeof(float));
	if (s->foam_on)
		out->foam = calloc(n, sizeof(float));
	if (!out->h || !out->u || !out->v || (s->foam_on && !out->foam))
		goto oom;
#pragma omp parallel for schedule(static) num_threads(s->threads)
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			long c = P(s, i, j);
			size_t q = (size_t)i + (size_t)j * nx;
			setf(&out->h[q], s->h[c]);
			setf(&out->u[q], 0.5f * (s->u[c] + s->u[c + 1]));
			setf(&out->v[q], 0.5f * (s->v[c] + s->v[c + W]));
			if (out->foam)
				setf(&out->foam[q], s->foam[c]);
		}
	if (swe_falls_export(s, out))
		goto oom;
	return WB_OK;
oom:
	free(out->h);
	free(out->u);
	free(out->v);
	free(out->foam);
	free(out->falls);
	memset(out, 0, sizeof(*out));
	return wb_fail(d, WB_EIO, NULL, "swe: out of memory for the result");
}

/* ---- driver -------------------------------------------------------------- */

/* Steps between samples: the largest divisor of the window that gives at
 * least SWE_SAMPLES samples (1 for short windows). */
static long swe_sample_every(long window)
{
	for (long e = window / SWE_SAMPLES; e > 1; e--)
		if (window % e == 0)
			return e;
	return 1;
}

int swe_means_init(struct swe_means *m, const struct swe_ctx *s, long window)
{
	memset(m, 0, sizeof(*m));
	m->every = swe_sample_every(window);
	long n = (long)s->nx * s->ny;
	long nb = (long)((s->nx + SWE_BLOCK - 1) / SWE_BLOCK) *
		  ((s->ny + SWE_BLOCK - 1) / SWE_BLOCK);
	m->blk = calloc((size_t)nb, 1);
	m->ncell = s->ncell;
	m->n = n;
	m->sh = falloc(s->ncell);
	m->su = falloc(s->ncell);
	m->sv = falloc(s->ncell);
	m->mh = falloc(n);
	m->mu = falloc(n);
	m->mv = falloc(n);
	m->pu = falloc(n);
	m->pv = falloc(n);
	return m->blk && m->sh && m->su && m->sv && m->mh && m->mu && m->mv &&
	       m->pu && m->pv ? 0 : -1;
}

void swe_means_release(struct swe_means *m)
{
	ffree(m->sh, m->ncell);
	ffree(m->su, m->ncell);
	ffree(m->sv, m->ncell);
	float *f[] = { m->mh, m->mu, m->mv, m->pu, m->pv };
	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
		ffree(f[k], m->n);
	free(m->blk);
	memset(m, 0, sizeof(*m));
}

/* The block sets of the sparse step are up to date (an activity pass ran
 * and no dense step since). */
static int means_sparse(const struct swe_ctx *s)
{
	return s->sp.on && !s->sp.first;
}

/* A bit other than a sign in h, u or v of the block (ghost ring of edge
 * blocks included): read only, so the pages of dry land stay unbacked. */
static int block_bits(const struct swe_ctx *s, int bi, int bj)
{
	int i0, i1, j0, j1;
	block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
	const uint32_t *h = (const uint32_t *)(const void *)s->h;
	const uint32_t *u = (const uint32_t *)(const void *)s->u;
	const uint32_t *v = (const uint32_t *)(const void *)s->v;
	uint32_t acc = 0;
	for (int j = j0; j < j1; j++)
		for (long c = P(s, i0, j); c < P(s, i1, j); c++)
			acc |= (h[c] | u[c] | v[c]) & 0x7fffffffu;
	return acc != 0;
}

/* Add the current depth and face velocities to the sums (element by
 * element: the same bytes for any thread count). Sparse: only the blocks
 * whose h, u, v can hold a bit other than a sign (the halo, the sleeping
 * blocks with films, the edge blocks where the dense boundary passes
 * wrote such a bit) are added; everywhere else the dense step would add +-0
 * to a sum that starts at +0, which leaves it as it is. A block's box
 * includes the ghost ring of edge blocks, so every padded element is in
 * exactly one box. */
void swe_means_sample(struct swe_means *m, const struct swe_ctx *s)
{
	const long W = s->W;
	const struct swe_sparse *b = &s->sp;
	if (!means_sparse(s)) {
		long nb = (long)((s->nx + SWE_BLOCK - 1) / SWE_BLOCK) *
			  ((s->ny + SWE_BLOCK - 1) / SWE_BLOCK);
		for (long q = 0; q < nb; q++)
			m->blk[q] |= 1;
#pragma omp parallel for schedule(static) num_threads(s->threads)
		for (int j = 0; j < s->ny + 2; j++)
			for (long c = j * W; c < (j + 1) * W; c++) {
				m->sh[c] += s->h[c];
				m->su[c] += s->u[c];
				m->sv[c] += s->v[c];
			}
		m->nsamp++;
		return;
	}
	const int nbx = b->nbx, nby = b->nby;
#pragma omp parallel for schedule(dynamic, 16) num_threads(b->nthr)
	for (long q = 0; q < b->nblk; q++) {
		int bi = (int)(q % nbx), bj = (int)(q / nbx);
		int edge = bi == 0 || bj == 0 || bi == nbx - 1 || bj == nby - 1;
		if (!(b->halo[q] || b->act[q] || b->nz[q] ||
		      (edge && block_bits(s, bi, bj))))
			continue;
		m->blk[q] |= 1;
		int i0, i1, j0, j1;
		block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
		for (int j = j0; j < j1; j++)
			for (long c = P(s, i0, j); c < P(s, i1, j); c++) {
				m->sh[c] += s->h[c];
				m->su[c] += s->u[c];
				m->sv[c] += s->v[c];
			}
	}
	m->nsamp++;
}

/* Cells i0 .. i1 - 1 of row j of the window close (see below). */
static void means_close_run(struct swe_means *m, const struct swe_ctx *s,
			    int j, int i0, int i1, float w, float thin,
			    double *a, double *b, double *hh)
{
	const int nx = s->nx;
	const long W = s->W;
	for (int i = i0; i < i1; i++) {
		long c = P(s, i, j), q = i + (long)j * nx;
		float h = m->sh[c] * w;
		float uc = 0.5f * (m->su[c] + m->su[c + 1]) * w;
		float vc = 0.5f * (m->sv[c] + m->sv[c + W]) * w;
		m->mh[q] = h;
		m->mu[q] = h > thin ? uc : 0.0f;
		m->mv[q] = h > thin ? vc : 0.0f;
		if (!(h > thin))
			continue;
		double du = (double)m->mu[q] - m->pu[q];
		double dv = (double)m->mv[q] - m->pv[q];
		*a += h * (du * du + dv * dv);
		*b += h * ((double)m->mu[q] * m->mu[q] +
			   (double)m->mv[q] * m->mv[q]);
		*hh += h;
	}
}

/* Close the window: means at cell centres (films thinner than
 * SWE_THIN dry_depth get no velocity), sums cleared; returns the relative
 * change of the mean velocity against the window before,
 *   sqrt( sum h |du|^2 / max(sum h |u|^2, SWE_RES_FLOOR^2 sum h) )
 * over the cells deeper than the film limit (h: the new mean depth), or
 * INFINITY for the first window. Row sums added serially.
 * Sparse: only the blocks sampled in this window or in one of the two
 * before are visited (elsewhere the sums are +0, so the means are 0 and
 * nothing is added, and mh / mu hold the zeros the dense pass would
 * write); a row's cells are still visited in ascending order and the rows
 * summed in order, so the sums are the dense sums, bit for bit. */
double swe_means_close(struct swe_means *m, const struct swe_ctx *s)
{
	const int nx = s->nx, ny = s->ny;
	const float w = 1.0f / (float)m->nsamp;
	const float thin = (float)(SWE_THIN * fmax(s->sim.dry_depth, 1e-9));
	const int nbx = (nx + SWE_BLOCK - 1) / SWE_BLOCK;
	const int nby = (ny + SWE_BLOCK - 1) / SWE_BLOCK;
	float *t = m->pu;
	m->pu = m->mu;
	m->mu = t;
	t = m->pv;
	m->pv = m->mv;
	m->mv = t;
	double *rn = s->row_d, *rd = s->row_d2;
	double *rh = malloc((size_t)ny * sizeof(double));
	if (!rh)
		return INFINITY;
	int J0, J1; /* several processes: row sums exchanged (par.h) */
	wb_par_band(s->par, ny, &J0, &J1);
	const uint8_t *blk = m->blk;
	/* sums filled by a dense step or by another back end (OpenCL): every
	   block */
	const uint8_t any = means_sparse(s) ? 7 : 0;
#pragma omp parallel for schedule(static) num_threads(s->threads)
	for (int j = J0; j < J1; j++) {
		double a = 0.0, b = 0.0, hh = 0.0;
		const uint8_t *band = blk + (long)(j / SWE_BLOCK) * nbx;
		for (int bi = 0; bi < nbx; bi++) {
			if (any && !(band[bi] & any))
				continue;
			int i0 = bi * SWE_BLOCK;
			while (bi + 1 < nbx && (!any || (band[bi + 1] & any)))
				bi++;
			int i1 = (bi + 1) * SWE_BLOCK < nx ?
					 (bi + 1) * SWE_BLOCK : nx;
			means_close_run(m, s, j, i0, i1, w, thin, &a, &b, &hh);
		}
		rn[j] = a;
		rd[j] = b;
		rh[j] = hh;
	}
	if (s->par) {
		wb_par_rows(s->par, rn, sizeof(double), 1, 0, 0);
		wb_par_rows(s->par, rd, sizeof(double), 1, 0, 0);
		wb_par_rows(s->par, rh, sizeof(double), 1, 0, 0);
	}
	double num = 0.0, den = 0.0, hs = 0.0;
	for (int j = 0; j < ny; j++) {
		num += rn[j];
		den += rd[j];
		hs += rh[j];
	}
	free(rh);
	/* clear the sums where a sample went (ghost ring of edge blocks
	   included, as sampled) */
	for (int bj = 0; bj < nby; bj++)
		for (int bi = 0; bi < nbx; bi++) {
			uint8_t *f = m->blk + (long)bj * nbx + bi;
			if (!any || (*f & 1)) {
				int i0, i1, j0, j1;
				block_box(s, bi, bj, 1, &i0, &i1, &j0, &j1);
				size_t len = (size_t)(i1 - i0) * sizeof(float);
				for (int j = j0; j < j1; j++) {
					memset(m->sh + P(s, i0, j), 0, len);
					memset(m->su + P(s, i0, j), 0, len);
					memset(m->sv + P(s, i0, j), 0, len);
				}
			}
			*f = (uint8_t)((*f << 1) & 6);
		}
	m->nsamp = 0;
	if (m->windows++ == 0)
		return INFINITY;
	den = fmax(den, SWE_RES_FLOOR * SWE_RES_FLOOR * hs);
	return den > 0.0 ? sqrt(num / den) : 0.0;
}

int swe_threads_for(const struct wb_raster *r, int threads)
{
	long per = r ? ((long)r->nx * r->ny) >> 17 : 1;
	if (per < 1)
		per = 1;
	return threads < per ? threads : (int)per;
}

enum wb_status swe_solve(const struct wb_raster *r, const struct wb_sim *sim,
			 const struct wb_solve_opts *o, struct wb_state *out,
			 struct wb_solve_report *rep, struct wb_diags *d)
{
	double t0 = omp_get_wtime();
	struct wb_solve_opts defo;
	if (!o) {
		memset(&defo, 0, sizeof(defo));
		o = &defo;
	}
	memset(rep, 0, sizeof(*rep));
	if (o->opencl) /* the CPU solver; wb_bake_solve() picks cl_swe_solve */
		return wb_fail(d, WB_EUSAGE, NULL,
			       "swe: swe_solve() runs on the CPU; use cl_swe_solve() (OPENCL=1 builds) for --device opencl");
	struct swe_ctx s;
	int T = swe_threads_for(r, wb_threads(o->threads));
	enum wb_status st = swe_init(&s, r, sim, T, d);
	if (st)
		return st;
	s.par = o->par;
	if (s.par && s.par->size > 1)
		s.sp.on = 0; /* the dense path: the same bytes (docs/scale.md) */
	/* as lbm_solve: defaults for unset limits, progress every
	   min(window, 100) steps, no convergence stop before two windows */
	long max = o->steps > 0 ? o->steps :
		   sim->max_steps > 0 ? sim->max_steps : 100000;
	long window = sim->window > 0 ? sim->window : 200;
	double tol = sim->tolerance > 0 ? sim->tolerance : 1e-4;
	long every = window < 100 ? window : 100;
	double res = NAN; /* until the first window measures it */
	int conv = 0;
	/* a run to convergence compares window means (particles make the
	   instantaneous field noisy); a run of fixed length reports the change
	   since the last window's snapshot */
	struct swe_means M;
	int means = o->steps <= 0;
	if (means && swe_means_init(&M, &s, window)) {
		swe_means_release(&M);
		swe_release(&s);
		return wb_fail(d, WB_EIO, NULL, "swe: out of memory");
	}
	if (!means)
		swe_residual(&s); /* snapshot the start */
	/* steady acceleration: the depth settles in pseudo-time eps dt, which
	   the velocity residual alone does not see; the water stored in a
	   window must be a small share of what came in or went out (the
	   larger of the two ratios is the window's residual) */
	int acc = means && sim->mass_scale > 0;
	double acc_v = acc ? swe_grid_volume(&s) : 0.0, acc_in = s.vol_in,
	       acc_out = s.vol_out;
	rep->setup_s = omp_get_wtime() - t0;
	while (s.step < max) {
		if (o->cancel && *o->cancel) {
			st = wb_fail(d, WB_ECANCEL, NULL,
				     "swe: interrupted at step %ld", s.step);
			goto done;
		}
		st = swe_step(&s, d);
		if (st)
			goto done;
		if (means && s.step % M.every == 0)
			swe_means_sample(&M, &s);
		if (s.step % window == 0) {
			res = means ? swe_means_close(&M, &s) : swe_residual(&s);
			if (acc) {
				/* |stored| / max(in, out) over the window,
				   particles in flight counted as stored */
				double v = swe_grid_volume(&s) +
					   swe_particles_volume(&s.P);
				double thr = fmax(s.vol_in - acc_in,
						  s.vol_out - acc_out);
				double sr = thr > 0 ? fabs(v - acc_v) / thr :
					    (v != acc_v ? INFINITY : 0.0);
				if (isfinite(res) && !(sr <= res))
					res = sr;
				acc_v = v;
				acc_in = s.vol_in;
				acc_out = s.vol_out;
			}
			for (long n = 0; n < s.n_falls; n++) {
				s.falls[n].emit_last = s.falls[n].emit_cur;
				s.falls[n].emit_cur = 0.0;
			}
			s.t_last = s.t_cur;
			s.t_cur = 0.0;
			if (means && res < tol && s.step >= 2 * window) {
				conv = 1;
				if (o->progress)
					o->progress(o->progress_user, s.step,
						    max, res);
				break;
			}
		}
		if (o->progress && (s.step % every == 0 || s.step == max))
			o->progress(o->progress_user, s.step, max,
				    isfinite(res) ? res : NAN);
	}
	double vf = swe_grid_volume(&s);
	double vp = swe_particles_volume(&s.P);
	rep->steps = s.step;
	rep->converged = conv;
	rep->residual = isfinite(res) ? res : NAN; /* NAN: not measured */
	rep->sim_time = s.t;
	rep->dt = s.step > 0 ? s.t / (double)s.step : s.dt;
	rep->vol_initial = s.vol_initial;
	rep->vol_final = vf;
	rep->vol_in = s.vol_in;
	rep->vol_out = s.vol_out;
	rep->vol_particles = vp;
	double ref = fmax(fmax(s.vol_initial + s.vol_in, vf + vp), 1e-30);
	rep->balance_error =
		fabs(s.vol_initial + s.vol_in - s.vol_out - vf - vp) / ref;
	rep->clamped = s.clamped;
	/* unfused (waterfalls): height: read h, u, v, write h1, fu, fv;
	   velocity: read u, v, h1, H, bb, fu, fv, write u1, v1; fused: read
	   h, u, v, H (bb with blockers), write h1, u1, v1 (fluxes, forward
	   estimates and the depth just written stay in cache). Unfused
	   MacCormack: + read u, v, write ut, vt (forward pass), read ut, vt
	   (correction) */
	if (s.n_falls > 0)
		rep->bytes_per_cell = 4 * (6 + 9 + (sim->maccormack ? 6 : 0));
	else
		rep->bytes_per_cell = 4 * (7 + s.has_blk);
	if (rep->balance_error > 1e-4) {
		st = wb_fail(d, WB_ESIM, NULL,
			     "swe: water not conserved after %ld steps "
			     "(t = %.6g s): relative balance error %.3g",
			     s.step, s.t, rep->balance_error);
		goto done;
	}
	if (s.par) {
		/* several processes: every row of the result to every rank */
		const long W = s.W;
		wb_par_rows(s.par, s.h, sizeof(float), W, 1, 0);
		wb_par_rows(s.par, s.u, sizeof(float), W, 1, 0);
		wb_par_rows(s.par, s.v, sizeof(float), W, 1, 1);
		if (s.foam_on)
			wb_par_rows(s.par, s.foam, sizeof(float), W, 1, 0);
		if (means && M.windows > 0) {
			wb_par_rows(s.par, M.mh, sizeof(float), s.nx, 0, 0);
			wb_par_rows(s.par, M.mu, sizeof(float), s.nx, 0, 0);
			wb_par_rows(s.par, M.mv, sizeof(float), s.nx, 0, 0);
		}
		if (means && !conv && M.windows >= 2) { /* the window before */
			wb_par_rows(s.par, M.pu, sizeof(float), s.nx, 0, 0);
			wb_par_rows(s.par, M.pv, sizeof(float), s.nx, 0, 0);
		}
		if (s.par->failed) {
			st = par_failed(&s, d);
			goto done;
		}
	}
	/* not steady: where the last window still changed */
	if (means && !conv && M.windows >= 2 &&
	    wb_unsteady_where(s.nx, s.ny, M.mh, M.mu, M.mv, M.pu, M.pv,
			      (float)(SWE_THIN * fmax(s.sim.dry_depth, 1e-9)),
			      rep)) {
		st = wb_fail(d, WB_EIO, NULL, "swe: out of memory");
		goto done;
	}
	st = swe_export(&s, out, d);
	if (st == WB_OK && means && M.windows > 0) {
		/* as lbm_solve: a run to convergence returns the last window's
		   mean depth and flow (foam and waterfalls as they are) */
		size_t n = (size_t)s.nx * s.ny;
		for (size_t q = 0; q < n; q++) {
			setf(&out->h[q], M.mh[q]);
			setf(&out->u[q], M.mu[q]);
			setf(&out->v[q], M.mv[q]);
		}
	}
done:
	rep->seconds = omp_get_wtime() - t0;
	if (st && rep->steps == 0) {
		rep->steps = s.step;
		rep->sim_time = s.t;
	}
	if (means)
		swe_means_release(&M);
	swe_release(&s);
	return st;
}
