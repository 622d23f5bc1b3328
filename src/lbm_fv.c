/*
 * lbm_fv.c - the hybrid of the LBM-SWE solver (lbm.c): cells where the
 * D2Q9 lattice cannot hold the flow are advanced by a finite-volume
 * shallow-water update instead (docs/lbm.md, "Supercritical flow: the
 * hybrid").
 *
 * Why: the D1Q3 part of D2Q9 is a kinetic scheme whose mass flux carries
 * the numerical diffusion (g h - u^2) / (2 e^2), negative above Froude 1
 * whatever e and tau, so supercritical reaches diverge or must be clamped.
 *
 * Which cells (lbm_fv_mark, after every step, from the stored state):
 * the core is every wet, open-sky cell (no blocker, not solid, no held
 * level, drain or modifier) whose Froude number exceeds LBM_FV_ON, or
 * exceeds LBM_FV_OFF and was core after the previous step (LBM_FV_OFF =
 * LBM_FV_ON: a hysteresis made the steady state depend on the path),
 * every wet cell next to a dry cell below its surface (a spilling
 * front) or next to any dry open-sky cell (a shoreline: shore()), and
 * every film (h < LBM_THIN h_dry) above Froude LBM_FV_FILM, and every
 * cell next to an inflow or level closure whose next pulled state (the
 * closure's populations included) exceeds LBM_FV_ON (edge_pulled_fr2);
 * the FV cells are the core dilated by LBM_FV_MARGIN cells (dry cells
 * included, so that a supercritical front always runs into FV cells),
 * less the cells that cannot be FV.
 *
 * The update (lbm_fv_update, after the kernel, which computed every cell,
 * and before the sources and sinks of the step; for FV cells the
 * kernel's result is replaced):
 *   mass: exact integers. Through every link to a cell that is not FV
 *     (an LBM cell or a periodic / wall ghost), the FV cell exchanges
 *     exactly what the LBM streaming moves through that link (the population each side
 *     sends when the link rule opens it, plus the rounded bed transfer
 *     the kernel adds), so the LBM neighbour's budget and the FV cell's
 *     agree to the unit. Through the axis faces between two FV cells the
 *     HLL mass flux, accumulated over the sub-steps and rounded once per
 *     face, is added to one side and taken from the other. A periodic
 *     ghost stands for its partner, a free-slip wall's ghost for the cell
 *     it mirrors (mirror_fv): a link to either whose cell is FV carries
 *     nothing (the HLL fluxes do). Total water
 *     therefore changes only as in the LBM (edges, sources).
 *   momentum: HLL fluxes (Harten, Lax, van Leer; wave speeds after
 *     Davis) on the four axis faces, second order in space and time:
 *     MUSCL face states (van Leer) from limited slopes of the surface
 *     eta (van Albada) and of both velocities (monotonised central where
 *     the flow expands along the axis, minmod where it is compressed;
 *     all were minmod, too diffusive at the start of Ritter's dam break:
 *     its tip 3.8 cells behind, now 1.9), the depth's slope being the
 *     surface's less the bed's (the bed linear through the cell centres:
 *     limiting depth and surface separately made the faces' bed follow
 *     the limiter, and MacDonald's near-critical channel broke into a
 *     train of small jumps, 2 % high and low); first order where a
 *     depth in the stencil is below h_dry or a face would lose half the
 *     depth; one-sided slopes next to inflow, level and open edges.
 *     The hydrostatic reconstruction of Audusse et al. (2004) at each
 *     face and its centred bed term -g h (z_+ - z_-) keep still water
 *     over any bed a fixed point. Heun's method (SSP Runge-Kutta 2) in
 *     each sub-step. Neighbour states: an FV cell's current stage (with
 *     its own slopes); an LBM cell's depth and momentum less its bed
 *     terms (first order: no slope, so the update reads no further than
 *     LBM_FV_REACH); walls reflect the face state. Manning friction
 *     implicit as the kernel, after the sub-steps.
 *   edges: an inflow brings its discharge with the momentum flux of the
 *     cell's face depth (or of the given depth where the inflow is at or
 *     above critical); a held level under subcritical flow puts the face
 *     at the level with the cell's discharge (HLL would hardly see the
 *     level where u - c is near 0: MacDonald's outflow stood 4.6 % high);
 *     an open edge continues the cell's face state (its flux is the
 *     cell's own; the ghost's copied populations carry the cell's bed
 *     terms and, through the kinetic exchange, tipped MacDonald's critical
 *     outflow into a subcritical one 7-21 % high). Mass through these
 *     faces is the FV flux; the edge books are corrected (edge_adj).
 *   re-initialisation: the FV cell's populations become the equilibrium
 *     of its new (h, hu, hv), rounded, plus, on each open link, the
 *     rounded bed transfer the kernel adds at the step's old depths, plus,
 *     in a subcritical FV cell next to an LBM cell, the non-equilibrium
 *     part of the kernel's own result for the cell (fv_neq: without it the
 *     interface cut off the TRT's antisymmetric part, MacDonald's channel
 *     stood 2.7 % high there) (so
 *     that the populations' total is exact, and an LBM neighbour
 *     of a cell at rest sees the LBM's own fixed point), the rest
 *     population keeping the exact integer remainder: the populations
 *     hold the depth plus those bed transfers, as the kernel's do (its
 *     rest population keeps h + sum of the rounded bed terms).
 *   state read (cell_moments): depth = sum of the populations less the
 *     rounded bed transfers of the cell's open links at the current
 *     depths (bed_sum), momentum = their first moment less the same
 *     terms. Before, the depth was the plain sum: a cell that turned
 *     from LBM to FV took the bed transfers in transit as depth (5.7 mm
 *     at a notch of the lake case's island), and the rebuilt equilibrium
 *     could not be at rest. Equilibrium and bed terms are rounded apart,
 *     so that a state at rest reads back with zero momentum exactly.
 *     Momentum below LBM_FV_QRES units of lattice momentum is zero (the
 *     rounding of the populations otherwise holds it against friction).
 *
 * Reach (for callers that gather rows: OpenCL, MPI): lbm_fv_update reads
 * the populations of the cells within 1 of an FV cell and the depths
 * within 2 (LBM_FV_REACH in lbm.h; the MUSCL slopes of an FV cell use its
 * axis neighbours' states, an FV neighbour's face state its own slopes),
 * and writes only the FV cells (populations, depth).
 *
 * Deterministic: double precision, the result does not depend on the
 * thread count. The update runs on L->threads threads over the FV list
 * (one parallel region, per-cell passes): each cell writes only its own
 * values; a face is computed once, by the cell west or north of it, and
 * stored (fv_faces), and each cell then adds its own and its incoming
 * faces' parts in the order of the serial loop this replaced (fv_sum:
 * ascending cells, faces east, south, west, north, the bed term after
 * the cell's own faces), so every double is that loop's; the sub-step
 * count is a maximum taken serially in list order; mass sums are
 * integers. The marking runs rows in parallel, each row reading the
 * state and writing its own flags.
 * Cost: marking reads the active blocks' cells once per step; the update
 * is proportional to the FV cells (the axis neighbours' classes and LBM
 * states found once per step, not per stage); per step its threads meet
 * about 4 + 6 ns times (ns sub-steps), which on a machine with more
 * runnable threads than cores can cost more than the work (docs/lbm.md,
 * "Cost").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lbm.h"
#include "par.h"

#define MAXD(a, b) ((a) > (b) ? (a) : (b))
#define MIND(a, b) ((a) < (b) ? (a) : (b))

/* per-FV-cell work: h, qx, qy (state), dh, dqx, dqy (sub-step sums),
 * kinetic mass per sub-step, mass flux sums east and south (m), the
 * state's velocities as the slopes (vel at h_thin: US, VS) and the face
 * states (at h_dry: UF, VF) read them, the slopes along x and y */
enum { W_H, W_QX, W_QY, W_H0, W_QX0, W_QY0, W_DH, W_DQX, W_DQY, W_FZ, W_FE,
       W_FS, W_US, W_VS, W_UF, W_VF, W_FF, W_SX, W_SY = W_SX + 4,
       W_N = W_SY + 4 };

static void fvwork_free(struct lbm_fvwork *x);

static inline int link_open_fv(float hx, float zx, float cx, float hy,
			       float zy, float cy, float hd)
{
	float ex = zx + hx, ey = zy + hy;
	float em = ex > ey ? ex : ey, zm = zx > zy ? zx : zy,
	      cm = cx < cy ? cx : cy;
	return (em > zm + hd) & (cm > em);
}

int lbm_fv_alloc(struct lbm *L)
{
	L->fvf = calloc(L->ncell, 1);
	L->fvh = calloc(L->ncell, 1);
	L->fvg = calloc(L->ncell, 1);
	L->fvm = calloc(L->ncell, sizeof(float));
	L->fvix = malloc(L->ncell * sizeof(int32_t));
	L->fvl = malloc(L->ncell * sizeof(int32_t));
	L->fvrow = calloc(2 * (size_t)L->H, sizeof(int));
	if (!L->fvf || !L->fvh || !L->fvg || !L->fvm || !L->fvix || !L->fvl || !L->fvrow)
		return -1;
	for (size_t k = 0; k < L->ncell; k++) {
		int i = (int)(k % (size_t)L->W), j = (int)(k / (size_t)L->W);
		L->fvix[k] = -1;
		L->fvg[k] = i >= 1 && j >= 1 && i <= L->nx && j <= L->ny;
	}
	L->nfv = 0;
	return 0;
}

void lbm_fv_free(struct lbm *L)
{
	free(L->fvf);
	free(L->fvh);
	free(L->fvg);
	free(L->fvm);
	free(L->fvix);
	free(L->fvl);
	free(L->fvrow);
	fvwork_free(L->fvx);
	L->fvf = L->fvh = L->fvg = NULL;
	L->fvm = NULL;
	L->fvix = L->fvl = NULL;
	L->fvrow = NULL;
	L->fvx = NULL;
	L->nfv = 0;
}

static inline int interior(const struct lbm *L, int n)
{
	return L->fvg[n] != 0;
}

/* Ghost x of an inflow or level edge (a closure's populations), corners
 * that continue one included. */
static inline int zou_ghost(const struct lbm *L, int x)
{
	if (interior(L, x))
		return 0;
	if (L->gkind[x] == LBM_G_ZOU)
		return 1;
	int i = x % L->W, j = x / L->W;
	int cx = i == 0 ? 0 : i == L->nx + 1 ? 1 : -1;
	int cy = j == 0 ? 0 : j == L->H - 1 ? 2 : -1;
	if (cx < 0 || cy < 0 || L->gkind[x] == LBM_G_SOLID)
		return 0;
	return L->ckind[cx | cy] == LBM_G_ZOU;
}

/* Ghost x of an open (zero-gradient) edge, corners that continue one
 * included. */
static inline int extrap_ghost(const struct lbm *L, int x)
{
	if (interior(L, x))
		return 0;
	if (L->gkind[x] == LBM_G_EXTRAP)
		return 1;
	int i = x % L->W, j = x / L->W;
	int cx = i == 0 ? 0 : i == L->nx + 1 ? 1 : -1;
	int cy = j == 0 ? 0 : j == L->H - 1 ? 2 : -1;
	if (cx < 0 || cy < 0 || L->gkind[x] == LBM_G_SOLID)
		return 0;
	return L->ckind[cx | cy] == LBM_G_EXTRAP;
}

/* An edge ghost whose faces the FV update computes (mass by its own
 * flux, the edge books corrected): inflow, level and open edges. */
static inline int edge_ghost(const struct lbm *L, int x)
{
	return zou_ghost(L, x) || extrap_ghost(L, x);
}

/* FV index of cell x (a periodic ghost stands for its partner), or -1. */
static inline int fv_of(const struct lbm *L, int x)
{
	if (interior(L, x))
		return L->fvix[x];
	if (L->gkind[x] == LBM_G_PERIODIC && interior(L, L->gpart[x]))
		return L->fvix[L->gpart[x]];
	return -1;
}

/* Whether x is a free-slip wall's ghost (not a corner) whose boundary
 * cell, the cell it mirrors (lbm_fill_ghosts), is an FV cell. */
static inline int mirror_fv(const struct lbm *L, int x)
{
	if (interior(L, x) || L->gkind[x] != LBM_G_MIRROR)
		return 0;
	const int i = x % L->W, j = x / L->W;
	const int ei = i == 0 || i == L->nx + 1, ej = j == 0 || j == L->H - 1;
	if (ei == ej)
		return 0;
	const int p = ej ? x + (j == 0 ? L->W : -L->W) : x + (i == 0 ? 1 : -1);
	return L->fvix[p] >= 0;
}

/* Momentum (lattice units, sum c_a F_a times unit: m) of cell n's stored
 * populations less the bed terms of its open links at the depths hA. */
static void moments_at(const struct lbm *L, const float *hA, int n,
		       double *h, double *mx, double *my)
{
	int32_t *const *A = L->f[L->cur];
	const float hd = (float)L->p.h_dry;
	int64_t m = 0, x = 0, y = 0;
	double bx = 0, by = 0;
	for (int a = 0; a < LBM_Q; a++) {
		m += A[a][n];
		x += (int64_t)lbm_cx[a] * A[a][n];
		y += (int64_t)lbm_cy[a] * A[a][n];
	}
	int64_t sb = 0;
	if (interior(L, n))
		for (int a = 1; a < LBM_Q; a++) {
			int q = n + lbm_cx[a] + lbm_cy[a] * L->W;
			if (!link_open_fv(hA[n], L->z[n], L->c[n], hA[q], L->z[q],
					  L->c[q], hd))
				continue;
			long b = lbm_bed_int(L, hA, n, q, a);
			sb += b;
			bx += lbm_cx[a] * (double)b;
			by += lbm_cy[a] * (double)b;
		}
	*h = (double)(m - sb) * L->unit;
	*mx = ((double)x - bx) * L->unit;
	*my = ((double)y - by) * L->unit;
}

static void cell_moments(const struct lbm *L, int n, double *h, double *mx,
			 double *my)
{
	moments_at(L, L->h[L->cur], n, h, mx, my);
}

/* The rounded bed transfers (units) that cell n's populations carry on
 * its open links at the current depths, as the kernel adds them: the
 * populations hold the depth plus these (in transit to the neighbours). */
static int64_t bed_sum(const struct lbm *L, int n)
{
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	int64_t sb = 0;
	if (!interior(L, n))
		return 0;
	for (int a = 1; a < LBM_Q; a++) {
		int q = n + lbm_cx[a] + lbm_cy[a] * L->W;
		if (link_open_fv(hA[n], L->z[n], L->c[n], hA[q], L->z[q], L->c[q],
				 hd))
			sb += lbm_bed_int(L, hA, n, q, a);
	}
	return sb;
}

unsigned char *lbm_fv_mask(const struct lbm *L, int *oom)
{
	*oom = 0;
	if (L->nfv == 0)
		return NULL;
	unsigned char *m = calloc((size_t)L->nx * L->ny, 1);
	if (!m) {
		*oom = 1;
		return NULL;
	}
	for (int k = 0; k < L->nfv; k++) {
		const int n = L->fvl[k];
		m[(size_t)(n / L->W - 1) * L->nx + (n % L->W - 1)] = 1;
	}
	return m;
}

void lbm_fv_state(const struct lbm *L, int n, float *h, float *u, float *v)
{
	double hh, mx, my;
	moments_at(L, L->h[L->bed_lvl ? !L->cur : L->cur], n, &hh, &mx, &my);
	const double hthin = LBM_THIN * L->p.h_dry;
	*h = (float)(hh > 0 ? hh : 0);
	if (hh > L->p.h_dry) {
		*u = (float)(mx * L->p.e / (hh > hthin ? hh : hthin));
		*v = (float)(my * L->p.e / (hh > hthin ? hh : hthin));
	} else {
		*u = *v = 0;
	}
}

/* Wet cell n next to a dry cell below its surface: water is about to
 * run onto dry ground there, a front that starts supercritical. */
static int spills(const struct lbm *L, int n)
{
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry, eta = L->z[n] + hA[n];
	for (int a = 1; a < LBM_Q; a++) {
		int x = n + lbm_cx[a] + lbm_cy[a] * L->W;
		if (hA[x] <= hd && L->z[x] + hd < eta && L->c[x] > eta &&
		    interior(L, x))
			return 1;
	}
	return 0;
}

/* Wet cell n on a shoreline: next to a dry open-sky interior cell. The
 * lattice's bed terms saturate where the bed steps by more than the
 * depth (m = min(dz, h)), and its rounding leaves still water there
 * moving (the lake case: 1.4e-5 m/s at a notch of an island after
 * 10,000 steps); the FV update's hydrostatic reconstruction keeps it at
 * rest, and moving shorelines are where the lattice is weakest. */
static int shore(const struct lbm *L, int n)
{
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	for (int a = 1; a < LBM_Q; a++) {
		int x = n + lbm_cx[a] + lbm_cy[a] * L->W;
		if (hA[x] <= hd && L->c[x] >= LBM_BIG && interior(L, x))
			return 1;
	}
	return 0;
}

/* Film n (h < h_thin) on a surface that falls toward an open neighbour
 * steeply enough to carry it past Froude LBM_FV_ON within one step, before
 * friction: g (eta_n - eta_x) / d dt > LBM_FV_ON sqrt(g h), d the link's
 * length. Rain on a hillslope makes such films out of still water; as
 * LBM cells they met the limiter in the step they started to move (the
 * jacksboro DEM at 80 m, rain 20 mm/h: 3.0e6 clamped cell-steps in 5,000
 * steps, median depth 2.6 mm). Still films, as at a lake's flat
 * surface, are not marked. */
static int film_drives(const struct lbm *L, int n)
{
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	const double g = L->p.g, h = hA[n];
	if (!(h > hd))
		return 0;
	const double lim = L->fv_on * sqrt(g * h) * L->p.dx / (g * L->p.dt);
	const double eta = (double)L->z[n] + h;
	for (int a = 1; a < LBM_Q; a++) {
		int x = n + lbm_cx[a] + lbm_cy[a] * L->W;
		if (!link_open_fv(hA[n], L->z[n], L->c[n], hA[x], L->z[x], L->c[x],
				  hd))
			continue;
		double d = eta - ((double)L->z[x] + (hA[x] > 0 ? hA[x] : 0));
		if ((a & 1 ? d : d * 0.70710678118654752) > lim)
			return 1;
	}
	return 0;
}

/* Froude number squared of the state the kernel will pull into cell n
 * next step, if n is next to an inflow / level ghost (0 otherwise):
 * the ghosts of f[cur] must hold this time level's closures
 * (lbm_fv_mark fills them; on OpenCL the device does, cl_fv_mark).
 * Why: the core test reads the stored state, the kernel the pulled one,
 * and next to a Zou-He closure they differ by what the closure sets: it
 * holds the depth of a level edge in one step, so a surface that stands
 * off the level by a wave becomes a discharge through the edge (a held
 * depth reflects a wave with twice its velocity). MacDonald's
 * subcritical channel, while it drains in the start-up: its last cell,
 * Froude 0.2-0.8 stored (as an FV cell or after the limiter), pulled
 * 1.1-1.3 (up to 5), was LBM in the step the clamp acted, 306 times
 * (918 clamped cell-steps). Marking it on the pulled state takes it to
 * the FV update in that step: 0 clamped, the channel as before (0.80 %).
 * Carrying the FV set to such an edge instead (LBM strips up to 3 .. 30
 * cells between an FV region and the closure made FV) left clamps or
 * diverged; taking a clamped cell over after the kernel, alone or with
 * its margin, diverged (step 1,783-1,819). */
static double edge_pulled_fr2(const struct lbm *L, int n)
{
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	int zou = 0;
	for (int a = 1; a < LBM_Q; a++) {
		int y = n - lbm_cx[a] - lbm_cy[a] * L->W;
		zou |= !interior(L, y) && L->gkind[y] == LBM_G_ZOU;
	}
	if (!zou)
		return 0;
	int64_t m = A[0][n], x = 0, y2 = 0;
	for (int a = 1; a < LBM_Q; a++) {
		int y = n - lbm_cx[a] - lbm_cy[a] * L->W;
		int32_t f = link_open_fv(hA[n], L->z[n], L->c[n], hA[y], L->z[y],
					 L->c[y], hd) ? A[a][y] : A[lbm_opp[a]][n];
		m += f;
		x += (int64_t)lbm_cx[a] * f;
		y2 += (int64_t)lbm_cy[a] * f;
	}
	const double un = L->unit, h = (double)m * un, e = L->p.e;
	if (!(h > L->p.h_dry))
		return 0;
	return ((double)x * x + (double)y2 * y2) * un * un * e * e / (h * h * L->p.g * h);
}

/* The candidate flags of one row (lbm_fv_mark), cells 1 .. nx of the
 * row at offset o; restrict pointers so that it vectorises. */
static void cand_row(const uint32_t *const *A, int o,
		     const float *restrict hn, const float *restrict hc,
		     const float *restrict hs, uint8_t *restrict cf, int nx,
		     float kf, float hdu, float thin_u, float t_off,
		     float t_film, float hdf, int all)
{
	const uint32_t *restrict a0 = A[0] + o, *restrict a1 = A[1] + o,
		       *restrict a2 = A[2] + o, *restrict a3 = A[3] + o,
		       *restrict a4 = A[4] + o, *restrict a5 = A[5] + o,
		       *restrict a6 = A[6] + o, *restrict a7 = A[7] + o,
		       *restrict a8 = A[8] + o;
	for (int i = 1; i <= nx; i++) {
		const uint32_t p15 = a1[i] + a2[i] + a8[i],
			       m15 = a4[i] + a5[i] + a6[i];
		const uint32_t p37 = a2[i] + a3[i] + a4[i],
			       m37 = a6[i] + a7[i] + a8[i];
		const float mf = (float)(int32_t)(a0[i] + p15 + m15 + a3[i] + a7[i]);
		const float X = (float)(int32_t)(p15 - m15),
			    Y = (float)(int32_t)(p37 - m37);
		const float lhs = (X * X + Y * Y) * kf;
		const float thr = mf < thin_u ? t_film : t_off;
		const int fast = lhs > thr * (mf * mf * mf);
		const int drynb = (hn[i - 1] <= hdf) | (hn[i] <= hdf) |
				  (hn[i + 1] <= hdf) | (hc[i - 1] <= hdf) |
				  (hc[i + 1] <= hdf) | (hs[i - 1] <= hdf) |
				  (hs[i] <= hdf) | (hs[i + 1] <= hdf);
		cf[i] = (uint8_t)((mf > hdu) & (fast | drynb | all |
						 (mf < thin_u)));
	}
}

/* The core flags (lbm_fv_mark: 2, or 2 | 8 for a film or front core; 0
 * for none) of cell n, whose flag is not 4, from the state, its
 * candidate flag fvh[n], its previous core bit and pe, the Froude number
 * squared it pulls next to an edge closure (edge_pulled_fr2, 0 where not
 * computed). */
static uint8_t core_of(const struct lbm *L, int n, double pe)
{
	int32_t *const *A = L->f[L->cur];
	const double e = L->p.e, g = L->p.g, un = L->unit;
	const double on2 = L->fv_on * L->fv_on, off2 = L->fv_off * L->fv_off;
	const double film2 = LBM_FV_FILM * LBM_FV_FILM;
	const double hd = L->p.h_dry;
	const int all = off2 <= 0;
	if (!L->fvh[n] && !(pe > on2))
		return 0;
	const int was = (L->fvf[n] & 2) != 0;
	uint8_t fl = 0;
	int64_t m = 0, x = 0, y = 0;
	for (int a = 0; a < LBM_Q; a++) {
		m += A[a][n];
		x += (int64_t)lbm_cx[a] * A[a][n];
		y += (int64_t)lbm_cy[a] * A[a][n];
	}
	const double h = (double)m * un;
	if (h > hd && all) {
		fl = 2; /* tests: every wet cell */
	} else if (h > hd) {
		/* Fr^2 = |M|^2 e^2 / (h^2 g h), M and h in units */
		double M2 = ((double)x * x + (double)y * y);
		double fr2 = M2 * e * e * un * un / (h * h * g * h);
		const int film = h < LBM_THIN * hd;
		if (fr2 > off2 || (film && fr2 > film2)) {
			/* without the bed terms */
			double hh, mx, my;
			cell_moments(L, n, &hh, &mx, &my);
			fr2 = (mx * mx + my * my) * e * e / (h * h * g * h);
		}
		if (fr2 > on2 || (was && fr2 > off2) || pe > on2)
			fl = 2;
		else if ((film && (fr2 > film2 || film_drives(L, n))) ||
			 spills(L, n))
			fl = 2 | 8; /* a film or front core (fv_neq) */
		else if (shore(L, n))
			fl = 2;
	}
	return fl;
}

/* Mark the FV cells for the next step from the current state. */
void lbm_fv_mark(struct lbm *L)
{
	if (!L->hybrid) /* the next step fills the ghosts first */
		return;
	lbm_fill_ghosts(L); /* the closures the next step pulls from */
	lbm_fv_mark_rows(L, NULL);
}

/* The core bits (2) of f within R cells of each cell i0 .. i1 of a row
 * (1 .. nx) into o; column-vectorised, one shift at a time over the
 * run, the same ORs as per cell. */
static void dilate_run(uint8_t *restrict o, const uint8_t *restrict f,
		       int i0, int i1, int R, int nx)
{
	for (int i = i0; i <= i1; i++)
		o[i] = 0;
	for (int di = -R; di <= R; di++) {
		const int lo = i0 > 1 - di ? i0 : 1 - di,
			  hi = i1 < nx - di ? i1 : nx - di;
		for (int i = lo; i <= hi; i++)
			o[i] |= f[i + di] & 2;
	}
}

/* rowc[H + j], j = 1 .. ny: the rows within R of row j with a core
 * cell (rowc[j] > 0); serial, in a fixed order. */
static void near_rows(const struct lbm *L, int *rowc, int R)
{
	int near = 0;
	for (int j = 1; j <= L->ny + R; j++) {
		if (j <= L->ny)
			near += rowc[j] > 0;
		if (j - 2 * R - 1 >= 1)
			near -= rowc[j - 2 * R - 1] > 0;
		if (j - R >= 1)
			rowc[L->H + j - R] = near; /* rows j - 2R .. j */
	}
}

/* Bit 1 (FV) on the n cells of row j from i0 that a core cell lies
 * within R rows of: the OR of the rows' in-row dilations (fvh) over the
 * rows within R that hold a core cell (rowc) and, with seg, whose
 * segment s was dilated (seg[jj * ns + s]); vectorised, a row at a time.
 * n <= 256. */
_Static_assert(LBM_FV_SEG <= 256, "or_rows takes a segment at once");
static void or_rows(uint8_t *restrict f, const uint8_t *fvh, const int *rowc,
		    const uint8_t *seg, int ns, int s, int j, int i0, int n,
		    int R, int ny, size_t W)
{
	uint8_t c[256];
	for (int t = 0; t < n; t++)
		c[t] = 0;
	for (int dj = -R; dj <= R; dj++) {
		const int jj = j + dj;
		if (jj < 1 || jj > ny || !rowc[jj] ||
		    (seg && !seg[(size_t)jj * ns + s]))
			continue;
		const uint8_t *restrict h = fvh + (size_t)jj * W + i0;
		for (int t = 0; t < n; t++)
			c[t] |= h[t];
	}
	for (int t = 0; t < n; t++)
		f[i0 + t] |= (uint8_t)(c[t] != 0);
}

/* The FV cells (flag bit 1, not 4) of row j, columns i0 .. i1, appended
 * to the list in ascending order, with the kernel's mask. */
static void list_run(struct lbm *L, int j, int i0, int i1, int *nf)
{
	for (int i = i0; i <= i1; i++) {
		const int n = i + j * L->W;
		if ((L->fvf[n] & 5) != 1)
			continue;
		L->fvix[n] = *nf;
		L->fvl[(*nf)++] = n;
		L->fvm[n] = 1.0f;
	}
}

/* Clear the previous list's cells from the kernel's mask. */
static void list_clear(struct lbm *L)
{
	for (int k = 0; k < L->nfv; k++) {
		L->fvm[L->fvl[k]] = 0.0f;
		L->fvix[L->fvl[k]] = -1;
	}
}

void lbm_fv_mark_rows(struct lbm *L, const uint8_t *scan)
{
	if (!L->hybrid)
		return;
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const double e = L->p.e, g = L->p.g, un = L->unit;
	const double off2 = L->fv_off * L->fv_off;
	const double film2 = LBM_FV_FILM * LBM_FV_FILM;
	const double hd = L->p.h_dry;
	const int W = L->W, R = L->fv_margin, nx = L->nx, ny = L->ny;
	uint8_t *fvf = L->fvf, *fvh = L->fvh;
	/* the candidate pass's constants (below) */
	const float kf = (float)(e * e / (un * g));
	const float hdu = (float)(hd / un), thin_u = (float)(LBM_THIN * hd / un);
	const float t_off = (float)(0.99 * off2), t_film = (float)(0.99 * film2);
	const float hdf = (float)hd;
	const int all = off2 <= 0;
	/* rows not scanned hold no core cell: the cells they had in the FV
	 * list are cleared as a scan would (every cell whose flag is neither
	 * 0 nor 4 is in the list) */
	for (int k = 0; scan && k < L->nfv; k++)
		if (!scan[L->fvl[k] / W])
			fvf[L->fvl[k]] = 0;
	/* per row, in one pass (a row reads and writes only its own flags,
	 * and the state, which the marking does not change): the
	 * candidates, the core, and the dilation within the row */
	int *rowc = L->fvrow;
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
	for (int j = 1; j <= ny; j++) {
		/* the runs of blocks the sparse step keeps (lbm_mark_spans) */
		const int32_t *sp;
		const int ns = scan && !scan[j] ? 0 : lbm_mark_spans(L, j, &sp);
		/* candidates (fvh, a superset of the core): wet cells whose
		 * raw Froude number (populations with their bed terms) passes
		 * 0.99 of the lowest threshold that can apply, or that have a
		 * dry neighbour (a spill); branch-free, in single precision,
		 * so that it vectorises */
		for (int s = 0; s < ns; s++) {
			const int o = j * W + sp[2 * s] - 1;
			cand_row((const uint32_t *const *)A, o, hA + o - W, hA + o,
				 hA + o + W, fvh + o, sp[2 * s + 1] - sp[2 * s] + 1,
				 kf, hdu, thin_u, t_off, t_film, hdf, all);
		}
		/* core (bit 2) of the candidates, exactly, from the state and
		 * the previous core; each cell reads and writes only its own
		 * flag */
		int nc = 0;
		for (int s = 0; s < ns; s++)
		for (int i = sp[2 * s]; i <= sp[2 * s + 1]; i++) {
			const int n = i + j * W;
			if (fvf[n] & 4) /* cannot be FV */
				continue;
			/* a cell next to an inflow or level closure: the state
			 * the kernel pulls next (edge_pulled_fr2; with scan,
			 * where the rows it pulls from were scanned: the
			 * device flags them where it passes, lbm.cl) */
			const double pe = (i == 1 || i == nx || j == 1 || j == ny) &&
				(!scan || (scan[j - 1] && scan[j + 1])) ?
				edge_pulled_fr2(L, n) : 0;
			const uint8_t fl = core_of(L, n, pe);
			fvf[n] = fl;
			nc += fl != 0;
		}
		rowc[j] = nc;
		/* dilate by R cells (Chebyshev), separably: here a core cell
		 * within R in the row (fvh: the candidates are used up), below
		 * within R rows (bit 1 of fvf); column-vectorised, one shift at
		 * a time over a run, the same ORs as per cell */
		if (!nc)
			continue;
		const int nr = lbm_mark_spans(L, j, &sp);
		for (int s = 0; s < nr; s++)
			dilate_run(fvh + (size_t)j * W, fvf + (size_t)j * W,
				   sp[2 * s], sp[2 * s + 1], R, nx);
	}
	near_rows(L, rowc, R);
	const int *rown = rowc + L->H;
	/* within R rows: a row at a time over a run (vectorised) */
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
	for (int j = 1; j <= ny; j++) {
		if (!rown[j])
			continue;
		const int32_t *sp;
		const int ns = lbm_mark_spans(L, j, &sp);
		uint8_t *restrict f = fvf + (size_t)j * W;
		for (int s = 0; s < ns; s++)
		for (int i0 = sp[2 * s]; i0 <= sp[2 * s + 1]; i0 += 256) {
			const int n = sp[2 * s + 1] - i0 + 1 < 256 ?
				      sp[2 * s + 1] - i0 + 1 : 256;
			or_rows(f, fvh, rowc, NULL, 0, 0, j, i0, n, R, ny,
				(size_t)W);
		}
	}
	/* the list (ascending), and the kernel's mask */
	list_clear(L);
	int nf = 0;
	for (int j = 1; j <= ny; j++) {
		const int32_t *sp;
		const int ns = rown[j] ? lbm_mark_spans(L, j, &sp) : 0;
		for (int s = 0; s < ns; s++)
			list_run(L, j, sp[2 * s], sp[2 * s + 1], &nf);
	}
	L->nfv = nf;
}

/* Whether segment s of padded row j is scanned (lbm_fv_mark_segs). */
static int seg_on(const uint8_t *scan, int ns, int j, int s)
{
	return s >= 0 && s < ns && scan[(size_t)j * ns + s];
}

/* The segment of interior column i (1 .. nx; the ghost columns go with
 * the first and last). */
static int seg_of(int i, int nx)
{
	i = i < 1 ? 1 : i > nx ? nx : i;
	return (i - 1) / LBM_FV_SEG;
}

int lbm_fv_mark_segs(struct lbm *L, const uint8_t *scan, uint8_t *work)
{
	if (!L->hybrid)
		return 0;
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const double e = L->p.e, g = L->p.g, un = L->unit;
	const double off2 = L->fv_off * L->fv_off;
	const double film2 = LBM_FV_FILM * LBM_FV_FILM;
	const double hd = L->p.h_dry;
	const int W = L->W, H = L->H, R = L->fv_margin, nx = L->nx, ny = L->ny;
	const int ns = (nx + LBM_FV_SEG - 1) / LBM_FV_SEG;
	const int dR = (R + LBM_FV_SEG - 1) / LBM_FV_SEG; /* segments R reaches */
	uint8_t *fvf = L->fvf, *fvh = L->fvh;
	/* per segment: holds a core cell; the row's cores dilated within
	 * the row were written to fvh there (the only segments of fvh the
	 * column pass reads: elsewhere fvh holds stale candidates); the
	 * column pass may have set an FV bit there */
	uint8_t *cseg = work, *dseg = work + (size_t)H * ns,
		*vseg = work + 2 * (size_t)H * ns;
	const float kf = (float)(e * e / (un * g));
	const float hdu = (float)(hd / un), thin_u = (float)(LBM_THIN * hd / un);
	const float t_off = (float)(0.99 * off2), t_film = (float)(0.99 * film2);
	const float hdf = (float)hd;
	const int all = off2 <= 0;
	/* cells of the list outside the scanned segments: cleared, as a
	 * scan that found no core there would */
	for (int k = 0; k < L->nfv; k++) {
		const int n = L->fvl[k];
		if (!scan[(size_t)(n / W) * ns + seg_of(n % W, nx)])
			fvf[n] = 0;
	}
	int *rowc = L->fvrow;
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
	for (int j = 1; j <= ny; j++) {
		const uint8_t *sc = scan + (size_t)j * ns;
		uint8_t *cs = cseg + (size_t)j * ns, *ds = dseg + (size_t)j * ns;
		int nc = 0;
		for (int s = 0; s < ns; s++) {
			cs[s] = 0;
			if (!sc[s])
				continue;
			const int i0 = s * LBM_FV_SEG + 1,
				  i1 = i0 + LBM_FV_SEG - 1 < nx ? i0 + LBM_FV_SEG - 1 : nx;
			const int o = j * W + i0 - 1;
			cand_row((const uint32_t *const *)A, o, hA + o - W, hA + o,
				 hA + o + W, fvh + o, i1 - i0 + 1, kf, hdu, thin_u,
				 t_off, t_film, hdf, all);
			for (int i = i0; i <= i1; i++) {
				const int n = i + j * W;
				if (fvf[n] & 4)
					continue;
				/* next to an edge closure: where the device
				 * flagged the segments of every cell it pulls
				 * from (lbm.cl lbm_fv_rows), f is current there */
				int ok = i == 1 || i == nx || j == 1 || j == ny;
				for (int dj = -1; ok && dj <= 1; dj++)
					for (int di = -1; ok && di <= 1; di++)
						ok = seg_on(scan, ns, j + dj,
							    seg_of(i + di, nx));
				const double pe = ok ? edge_pulled_fr2(L, n) : 0;
				const uint8_t fl = core_of(L, n, pe);
				fvf[n] = fl;
				cs[s] |= fl != 0;
				nc += fl != 0;
			}
		}
		rowc[j] = nc;
		for (int s = 0; s < ns; s++)
			ds[s] = 0;
		if (!nc)
			continue;
		for (int s = 0; s < ns; s++) {
			int d = 0;
			for (int t = s - dR; t <= s + dR; t++)
				d |= t >= 0 && t < ns && cs[t];
			ds[s] = (uint8_t)d;
		}
		/* dilate within the row (lbm_fv_mark_rows), on the segments
		 * within R of a core cell; fvf elsewhere is 0 or 4 */
		for (int s = 0; s < ns; s++) {
			if (!ds[s])
				continue;
			const int i0 = s * LBM_FV_SEG + 1;
			dilate_run(fvh + (size_t)j * W, fvf + (size_t)j * W, i0,
				   i0 + LBM_FV_SEG - 1 < nx ? i0 + LBM_FV_SEG - 1 : nx,
				   R, nx);
		}
	}
	near_rows(L, rowc, R);
	const int *rown = rowc + H;
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
	for (int j = 1; j <= ny; j++) {
		uint8_t *restrict vs = vseg + (size_t)j * ns;
		memset(vs, 0, (size_t)ns);
		if (!rown[j])
			continue;
		/* the segments some row within R wrote (vectorised) */
		for (int dj = -R; dj <= R; dj++) {
			const int jj = j + dj;
			if (jj < 1 || jj > ny || !rowc[jj])
				continue;
			const uint8_t *restrict d = dseg + (size_t)jj * ns;
			for (int s = 0; s < ns; s++)
				vs[s] |= d[s];
		}
		uint8_t *restrict f = fvf + (size_t)j * W;
		for (int s = 0; s < ns; s++) {
			if (!vs[s])
				continue;
			const int i0 = s * LBM_FV_SEG + 1,
				  i1 = i0 + LBM_FV_SEG - 1 < nx ? i0 + LBM_FV_SEG - 1 : nx;
			or_rows(f, fvh, rowc, dseg, ns, s, j, i0, i1 - i0 + 1, R,
				ny, (size_t)W);
		}
	}
	/* the list (ascending), and the kernel's mask */
	list_clear(L);
	int nf = 0;
	for (int j = 1; j <= ny; j++) {
		const uint8_t *vs = vseg + (size_t)j * ns;
		for (int s = 0; rown[j] && s < ns; s++) {
			if (!vs[s])
				continue;
			const int i0 = s * LBM_FV_SEG + 1;
			list_run(L, j, i0,
				 i0 + LBM_FV_SEG - 1 < nx ? i0 + LBM_FV_SEG - 1 : nx,
				 &nf);
		}
	}
	L->nfv = nf;
	return 0;
}

/* HLL flux across a face with normal along x (swap the roles of qx, qy
 * for y), hydrostatically reconstructed: left (hl, ql, pl, zl), right;
 * out: mass, normal and tangential momentum fluxes seen from the face,
 * and the pressure corrections of the left and right cells. */
static void hll(double g, double hL, double qL, double pL, double zL,
		double hR, double qR, double pR, double zR, double hthin,
		double *F, double *corrL, double *corrR)
{
	hL = MAXD(hL, 0);
	hR = MAXD(hR, 0);
	double zf = MAXD(zL, zR);
	double hl = MAXD(0, hL + zL - zf), hr = MAXD(0, hR + zR - zf);
	double uL = hL > hthin ? qL / hL : qL / hthin * (hL / hthin);
	double vL = hL > hthin ? pL / hL : pL / hthin * (hL / hthin);
	double uR = hR > hthin ? qR / hR : qR / hthin * (hR / hthin);
	double vR = hR > hthin ? pR / hR : pR / hthin * (hR / hthin);
	double cL = sqrt(g * hl), cR = sqrt(g * hr);
	double fl[3] = { hl * uL, hl * uL * uL + 0.5 * g * hl * hl, hl * uL * vL };
	double fr[3] = { hr * uR, hr * uR * uR + 0.5 * g * hr * hr, hr * uR * vR };
	double Ul[3] = { hl, hl * uL, hl * vL }, Ur[3] = { hr, hr * uR, hr * vR };
	double sL = MIND(uL - cL, uR - cR), sR = MAXD(uL + cL, uR + cR);
	if (hr <= 0) /* a dry side: the front runs at u + 2c (Toro) */
		sL = uL - cL, sR = uL + 2 * cL;
	else if (hl <= 0)
		sL = uR - 2 * cR, sR = uR + cR;
	if (hl <= 0 && hr <= 0) {
		F[0] = F[1] = F[2] = 0;
	} else if (sL >= 0) {
		memcpy(F, fl, sizeof(fl));
	} else if (sR <= 0) {
		memcpy(F, fr, sizeof(fr));
	} else {
		for (int q = 0; q < 3; q++)
			F[q] = (sR * fl[q] - sL * fr[q] + sL * sR * (Ur[q] - Ul[q])) /
			       (sR - sL);
	}
	*corrL = 0.5 * g * (hL * hL - hl * hl);
	*corrR = 0.5 * g * (hR * hR - hr * hr);
}

/* The state beyond an inflow / level edge (ghost x of FV cell y, whose
 * state is wy): an inflow by discharge or velocity brings its discharge
 * (ramped as the LBM closure) at the given depth, or at y's depth when
 * none is given; a held level, its depth with y's velocity. */
static void zou_state(const struct lbm *L, const double *wy, int y, int x,
		      double *h, double *qx, double *qy)
{
	const int inx = y % L->W - x % L->W, iny = y / L->W - x / L->W;
	const int s = inx > 0 ? WB_WEST : inx < 0 ? WB_EAST :
		      iny > 0 ? WB_NORTH : WB_SOUTH;
	const struct wb_edge *e = &L->edges[s];
	const double ramp = lbm_ramp(L), hy = MAXD(wy[W_H], 0);
	double zb = L->z[y], hg = hy;
	if (e->kind == WB_EDGE_INFLOW && e->has_level)
		hg = MAXD(e->level - zb, 0);
	else if (e->kind == WB_EDGE_INFLOW && e->depth > 0)
		hg = e->depth;
	if (e->kind == WB_EDGE_INFLOW && hg != hy)
		hg = L->ginit[x] + (hg - L->ginit[x]) * ramp;
	double qn;
	if (!isnan(L->gq[x])) {
		qn = L->gq[x] * ramp;
	} else if (!isnan(L->gvel[x])) {
		qn = L->gvel[x] * ramp * hg;
	} else { /* a held level */
		hg = L->ginit[x] + (L->gspec[x] - L->ginit[x]) * ramp;
		*h = hg;
		*qx = wy[W_QX];
		*qy = wy[W_QY];
		return;
	}
	*h = hg;
	*qx = inx ? inx * qn : 0;
	*qy = inx ? 0 : iny * qn;
}

/* The slope limiters of the MUSCL reconstruction (slopes), from the
 * one-sided differences a (minus side) and b (plus side); all are zero at
 * an extremum (a b <= 0). Minmod was the only one until Ritter's dam break
 * (docs/lbm.md): it is the most diffusive, and in the first second of a
 * dam break, when the fan is a few cells wide, it launched the thin tip
 * too slowly (the tip then coasts: the pressure gradient there is
 * negligible), 3.8 cells behind at t = 6 s. */

/* van Albada (1982): smooth in a and b, so that a steady jump converges
 * (van Leer's and MC's kinks on the surface set the shock bump's jump
 * flickering: not converged after 80,000 steps); for the surface. */
static inline double van_albada(double a, double b)
{
	if (a * b <= 0)
		return 0;
	return a * b * (a + b) / (a * a + b * b);
}

/* For the velocities: monotonised central (van Leer 1977), min(|a + b|
 * / 2, 2 |a|, 2 |b|) with their sign, where the flow expands along the
 * axis (the normal velocity rises across the stencil: a rarefaction, in
 * shallow water the only waves across which the velocity rises), minmod
 * where it is compressed (jumps and bores: both families' shocks have
 * u_left > u_right). MC everywhere took the coast sample with van Albada
 * on the surface to divergence at step 1,718; minmod is what the jumps
 * had before. */
static inline double vel_limit(double a, double b, int expands)
{
	if (a * b <= 0)
		return 0;
	double m = fabs(a) < fabs(b) ? a : b;
	if (!expands)
		return m;
	double c = 0.5 * (a + b);
	return fabs(c) < fabs(2 * m) ? c : 2 * m;
}

/* velocity of a state, desingularised below h_thin as the HLL flux */
static inline double vel(double h, double q, double hthin)
{
	h = MAXD(h, 0);
	return h > hthin ? q / h : q / hthin * (h / hthin);
}

/* Neighbour x of FV cell y across one axis face, as the update sees it
 * during one call of lbm_fv_update: what does not change over its
 * sub-steps, found once (fv_nb_find) rather than in every stage. */
enum { NB_LBM, NB_WALL, NB_FV, NB_OPEN, NB_ZOU };
struct fv_nb {
	double h, qx, qy; /* NB_LBM: the cell's state (depth, m^2/s) */
	double us, vs;    /* NB_LBM: its velocities as slopes() reads them */
	double z;         /* the bed the face sees (y's at walls, open edges) */
	int32_t x, ix;    /* padded index; FV index (fv_of), or -1 */
	uint8_t cls;      /* NB_* */
	uint8_t edge;     /* an inflow, level or open edge (edge_ghost) */
	uint8_t zin;      /* the face of an inflow by discharge or velocity */
	uint8_t zlev;     /* the face of a held level */
	uint8_t flipx;    /* a wall across x: the mirror flips qx (else qy) */
};

/* The axis neighbours of an FV cell, in face order: east (a = 1), south
 * (a = 3), west (a = 5), north (a = 7). */
static const int fv_dirs[4] = { 1, 3, 5, 7 };

/* What the update needs of neighbour x of FV cell y: the class of
 * nb_get's state (walls: the cell itself or a solid ghost; inflow and
 * level edges; open edges; FV cells, a periodic ghost standing for its
 * partner; else an LBM cell or a ghost copying one, whose depth and
 * momentum less its bed terms are read here, once a step). */
static void fv_nb_find(const struct lbm *L, int y, int x, struct fv_nb *nb)
{
	nb->x = x;
	nb->ix = fv_of(L, x);
	nb->edge = (uint8_t)edge_ghost(L, x);
	const int zg = nb->ix < 0 && zou_ghost(L, x) && interior(L, y);
	nb->zin = (uint8_t)(zg && (!isnan(L->gq[x]) || !isnan(L->gvel[x])));
	nb->zlev = (uint8_t)(zg && isnan(L->gq[x]) && isnan(L->gvel[x]));
	nb->flipx = (uint8_t)(x % L->W - y % L->W != 0);
	nb->h = nb->qx = nb->qy = nb->us = nb->vs = 0;
	if (nb->ix >= 0) {
		nb->cls = NB_FV;
		nb->z = L->z[x];
		return;
	}
	int solid = L->c[x] <= -LBM_BIG * 0.5f || L->c[x] < LBM_BIG;
	if (!interior(L, x)) {
		int k = L->gkind[x];
		solid |= k == LBM_G_SOLID;
		if (!solid && k == LBM_G_ZOU) {
			nb->cls = NB_ZOU;
			nb->z = L->z[x];
			return;
		}
		if (!solid && extrap_ghost(L, x)) {
			/* an open edge: zero gradient, y's own state (the
			 * ghost's copied populations carry y's bed terms) */
			nb->cls = NB_OPEN;
			nb->z = L->z[y];
			return;
		}
	}
	if (solid) {
		nb->cls = NB_WALL;
		nb->z = L->z[y];
		return;
	}
	const double e = L->p.e;
	double h;
	cell_moments(L, x, &h, &nb->qx, &nb->qy);
	nb->h = L->h[L->cur][x];
	nb->qx *= e;
	nb->qy *= e;
	nb->z = L->z[x];
	nb->cls = NB_LBM;
	const double hthin = LBM_THIN * L->p.h_dry;
	nb->us = vel(nb->h, nb->qx, hthin);
	nb->vs = vel(nb->h, nb->qy, hthin);
}

/* The centre state of neighbour nb of FV cell k (at y) seen through an
 * axis face: depth, momentum (m^2/s), bed; returns 1 for a wall (the
 * mirror of y's face state stands there), 2 for an FV cell (its own
 * slopes apply), 3 for an open edge (y's face state continues: the flux
 * is y's own), 0 otherwise (an LBM cell or an edge's state: first
 * order). */
static int nb_get(const struct lbm *L, const double *w, int k, int y,
		  const struct fv_nb *nb, double *h, double *qx, double *qy,
		  double *z)
{
	const double *wy = w + (size_t)k * W_N;
	*z = nb->z;
	switch (nb->cls) {
	case NB_FV: {
		const double *wx = w + (size_t)nb->ix * W_N;
		*h = wx[W_H], *qx = wx[W_QX], *qy = wx[W_QY];
		return 2;
	}
	case NB_ZOU:
		zou_state(L, wy, y, nb->x, h, qx, qy);
		return 0;
	case NB_OPEN:
		*h = wy[W_H], *qx = wy[W_QX], *qy = wy[W_QY];
		return 3;
	case NB_WALL: /* the mirror of y */
		*h = wy[W_H];
		*qx = nb->flipx ? -wy[W_QX] : wy[W_QX];
		*qy = nb->flipx ? wy[W_QY] : -wy[W_QY];
		return 1;
	default:
		*h = nb->h, *qx = nb->qx, *qy = nb->qy;
		return 0;
	}
}

/* The limited slopes (per cell, along x or y) of FV cell k at y, whose
 * neighbours are nb (fv_dirs order): depth, surface, normal and
 * tangential velocity, limited from the one-sided differences (MUSCL,
 * van Leer: the surface by van_albada, the velocities by vel_limit).
 * First order (zero slopes) next to films and dry cells (depth
 * below h_thin on either side), where a slope of the surface would
 * reach into the dry bed. */
static void slopes(const struct lbm *L, double *w, int k, int y,
		   const struct fv_nb *nb, int xdir, double hthin)
{
	double *wy = w + (size_t)k * W_N;
	double *s = wy + (xdir ? W_SX : W_SY);
	double h[3], eta[3], un[3], ut[3], zc[3];
	h[1] = MAXD(wy[W_H], 0);
	zc[1] = L->z[y];
	eta[1] = h[1] + L->z[y];
	un[1] = xdir ? wy[W_US] : wy[W_VS];
	ut[1] = xdir ? wy[W_VS] : wy[W_US];
	int edge = -1; /* the side (0, 2) of an inflow, level or open edge */
	for (int q = 0; q < 2; q++) {
		/* minus side: west or north; plus side: east or south */
		const struct fv_nb *n = nb + (q ? (xdir ? 0 : 1) : (xdir ? 2 : 3));
		const int o = q ? 2 : 0;
		double hx, qx, qy, zx;
		if (n->edge)
			edge = o;
		nb_get(L, w, k, y, n, &hx, &qx, &qy, &zx);
		hx = MAXD(hx, 0);
		h[o] = hx;
		zc[o] = zx;
		eta[o] = hx + zx;
		/* vel() of the same state: kept by FV and LBM cells */
		double us, vs;
		if (n->cls == NB_FV) {
			const double *wx = w + (size_t)n->ix * W_N;
			us = wx[W_US], vs = wx[W_VS];
		} else if (n->cls == NB_LBM) {
			us = n->us, vs = n->vs;
		} else {
			us = vel(hx, qx, hthin), vs = vel(hx, qy, hthin);
		}
		un[o] = xdir ? us : vs;
		ut[o] = xdir ? vs : us;
	}
	if (h[0] < hthin || h[1] < hthin || h[2] < hthin) {
		s[0] = s[1] = s[2] = s[3] = 0;
		return;
	}
	double sz;
	if (edge >= 0) { /* one-sided: the interior difference */
		int o = 2 - edge;
		double sg = edge == 0 ? 1 : -1;
		sz = sg * (zc[o] - zc[1]);
		s[1] = sg * (eta[o] - eta[1]);
		s[2] = sg * (un[o] - un[1]);
		s[3] = sg * (ut[o] - ut[1]);
	} else {
		sz = 0.5 * (zc[2] - zc[0]);
		s[1] = van_albada(eta[1] - eta[0], eta[2] - eta[1]);
		const int ex = un[2] > un[0];
		s[2] = vel_limit(un[1] - un[0], un[2] - un[1], ex);
		s[3] = vel_limit(ut[1] - ut[0], ut[2] - ut[1], ex);
	}
	/* the depth's slope: the surface's less the bed's (the bed linear
	 * through the centres), so that the faces' beds follow the bed
	 * and not the limiter; first order where a face would go dry */
	s[0] = s[1] - sz;
	if (fabs(s[0]) > h[1] || fabs(sz) > 0.5 * h[1])
		s[0] = s[1] = s[2] = s[3] = 0;
}

/* Face state of a cell with centre (h, qn, qt, z), whose velocities
 * vel(h, qn, hthin) and vel(h, qt, hthin) are un, ut, and slopes s (NULL:
 * first order, un and ut unused) on its plus (side 1) or minus (side -1)
 * face: depth, normal and tangential discharge, bed (surface less
 * depth). */
static void face(double h, double qn, double qt, double un, double ut,
		 double z, const double *s, int side, double hthin, double *hf,
		 double *qnf, double *qtf, double *zf)
{
	h = MAXD(h, 0);
	if (!s) {
		*hf = h, *qnf = qn, *qtf = qt, *zf = z;
		return;
	}
	double hh = MAXD(h + 0.5 * side * s[0], 0);
	double eta = h + z + 0.5 * side * s[1];
	*hf = hh;
	*zf = eta - hh;
	*qnf = hh * (un + 0.5 * side * s[2]);
	*qtf = hh * (ut + 0.5 * side * s[3]);
	if (hh <= hthin) { /* films: velocity as vel() reads it back */
		*qnf = (un + 0.5 * side * s[2]) * hthin * hthin / MAXD(hh, 1e-300);
		*qtf = (ut + 0.5 * side * s[3]) * hthin * hthin / MAXD(hh, 1e-300);
		if (hh <= 0)
			*qnf = *qtf = 0;
	}
}

/* The non-equilibrium part (units) to give FV cell y's new populations:
 * that of the populations the kernel left in y (f[!cur]: pulled and
 * collided, less the bed terms it added at the old depths, less the
 * equilibrium of their own moments, so that it carries neither mass nor
 * momentum); 0 unless y has an LBM neighbour (interior, or a periodic
 * ghost's partner), no neighbour shallower than h_thin, no film or front
 * core (fvf bit 8) within the margin, flow below Froude fv_on, no
 * population's part above 0.1 of an axis population at rest at the
 * lattice's design depth h_deep (a transient: the first steps of a dam
 * break, where keeping it put Ritter's front 3.1 instead of 1.9 cells
 * behind), and the inflow ramp is over. Why: below tau 0.55 the kernel's TRT keeps the
 * antisymmetric non-equilibrium of each pair almost whole (tau_m near 17
 * at tau 0.515); an FV cell re-initialised to the equilibrium alone cut
 * it off at the interface, and MacDonald's subcritical channel stood
 * 2.7 % high at the FV -> LBM interface (0.79 % with this). The
 * conditions: supercritical cells are what the FV update is there for;
 * next to films and in the margins of film, front and shore cores it
 * set the ocean-at-rest case of test_validation sloshing (7e-3 m,
 * 0.11 m/s after 10,000 steps instead of 1.2e-4 m, 1.6e-3 m/s), before
 * still water was an exact fixed point; since then the shore cores'
 * margins keep it (the ocean and the lake at rest stay exact, Thacker's
 * L1 at 400^2 0.99 -> 0.95 %); during
 * the inflow ramp MacDonald's LBM cells between the interface and the
 * held-level edge diverged at step 1,342, the ramp's end (cause not
 * found). The transient's scale was the axis population at the cell's
 * own depth until 2026-11-27: at a shallow interface (Thacker's
 * paraboloid, about 2 cm of water on a lattice for 10 cm) that scale is
 * about 25x smaller while the part of a smooth flow is about 5x, so
 * 106,624 of 107,304 interface cell-steps at 200^2 dropped it, and L1
 * stood at 4.6 % instead of 2.6 %. Reads populations and depths within 1 and fvf within
 * LBM_FV_MARGIN (the marking's own flags, on the host for OpenCL). */
static void fv_neq(const struct lbm *L, int y, float *neq)
{
	int32_t *const *B = L->f[!L->cur];
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	const double un = L->unit;
	for (int a = 0; a < LBM_Q; a++)
		neq[a] = 0;
	int nb = 0, thin = 0;
	const float hth = (float)(LBM_THIN * L->p.h_dry);
	for (int a = 1; a < LBM_Q; a++) {
		int x = y + lbm_cx[a] + lbm_cy[a] * L->W;
		int p = interior(L, x) ? x :
			L->gkind[x] == LBM_G_PERIODIC ? L->gpart[x] : -1;
		if (p < 0 || !interior(L, p))
			continue;
		nb |= L->fvix[p] < 0;
		thin |= hA[p] < hth;
	}
	if (!nb || thin || lbm_ramp(L) < 1.0)
		return;
	/* not in the margin of a film or front core */
	{
		const int R = L->fv_margin, i0 = y % L->W, j0 = y / L->W;
		for (int dj = -R; dj <= R; dj++)
			for (int di = -R; di <= R; di++) {
				int i = i0 + di, j = j0 + dj;
				if (i >= 1 && i <= L->nx && j >= 1 && j <= L->ny &&
				    (L->fvf[i + j * L->W] & 8))
					return;
			}
	}
	int32_t fi[LBM_Q];
	float f[LBM_Q];
	double m = 0, mx = 0, my = 0;
	int64_t mi = 0;
	for (int a = 0; a < LBM_Q; a++) {
		fi[a] = B[a][y];
		if (a) {
			int x = y + lbm_cx[a] + lbm_cy[a] * L->W;
			if (link_open_fv(hA[y], L->z[y], L->c[y], hA[x], L->z[x],
					 L->c[x], hd))
				fi[a] -= lbm_bed_int(L, hA, y, x, a);
		}
		f[a] = (float)fi[a];
		mi += fi[a];
		m += f[a];
		mx += lbm_cx[a] * f[a];
		my += lbm_cy[a] * f[a];
	}
	const double h = m * un;
	if (h <= LBM_THIN * L->p.h_dry)
		return;
	const double e = L->p.e, fr2 = L->fv_on * L->fv_on;
	if ((mx * mx + my * my) * un * un * e * e > fr2 * L->p.g * h * h * h)
		return;
	/* about the state's own equilibrium as the FV update rebuilds it
	 * (lbm_fv_update): R_a of its integer depth plus the rounded
	 * velocity part, so that a cell at rest carries none */
	float feq[LBM_Q], q0[LBM_Q];
	lbm_feq((float)h, (float)(mx / m), (float)(my / m),
		(float)(L->p.g / (e * e) * h), feq);
	lbm_feq((float)h, 0.0f, 0.0f, (float)(L->p.g / (e * e) * h), q0);
	const float inv = (float)(1.0 / un);
	const int32_t Hs = lbm_hs((float)(int32_t)mi * L->kp.unit, L->kp.kinv);
	/* the scale: an axis population at rest at the depth the lattice is
	   built for, g h_deep^2 / (6 e^2) (not at the cell's own depth:
	   the part of a smooth flow grows with h, that scale as h^2) */
	const double hs = L->p.h_deep;
	const float sc = (float)(L->p.g * hs * hs / (6 * e * e)) * inv;
	float big = 0;
	for (int a = 0; a < LBM_Q; a++) {
		neq[a] = a ? (float)(fi[a] - lbm_rq(L->kp.K, !(a & 1), Hs)) -
			     (feq[a] - q0[a]) * inv :
			     f[a] - feq[a] * inv;
		float r = a ? fabsf(neq[a]) / (lbm_w[a] * sc) : 0;
		big = r > big ? r : big;
	}
	if (big > 0.1) /* a transient, not the smooth flow it is for */
		for (int a = 0; a < LBM_Q; a++)
			neq[a] = 0;
}

/* The FV update's work, kept from step to step (grown, never shrunk;
 * freed by lbm_fv_free), per FV cell k of the list. */
struct lbm_fvwork {
	int cap;
	double *w;           /* W_N values */
	struct fv_nb *nb;    /* 4: the axis neighbours, fv_dirs order */
	double *fo;          /* 4 faces x FO_N: the face's contributions */
	int64_t *kin;        /* kinetic exchange a step, then the new mass */
	int64_t *fq;         /* 2: the rounded face mass east, south */
	double *spd;         /* |u| + c */
	int32_t *in0;        /* cap + 1: the cell's incoming faces are */
	int32_t *in;         /* in[in0[k] .. in0[k + 1]): 2 k' + q, ascending */
	/* several processes (lbm_fv_share): cap records of LBM_Q + 1
	   words, and the list's first entry of each interior row (ny + 1);
	   kept from step to step (allocated at the first share) */
	uint32_t *xb;
	long *rs;
};

/* A face's contributions (fo): to the cell's own sums (OQX, OQY; OH, an
 * edge face's mass) and, toward an FV neighbour, its mass flux r F[0]
 * (NH: taken from the cell, given to the neighbour) and the neighbour's
 * momentum (NQX, NQY). */
enum { FO_OQX, FO_OQY, FO_OH, FO_NH, FO_NQX, FO_NQY, FO_N };

/* Below this many FV cells the update runs on one thread (the fork
 * costs more); the result is the same either way. */
#define FV_PAR_MIN 64

static void fvwork_free(struct lbm_fvwork *x)
{
	if (!x)
		return;
	free(x->w);
	free(x->nb);
	free(x->fo);
	free(x->kin);
	free(x->fq);
	free(x->spd);
	free(x->in0);
	free(x->in);
	free(x->xb);
	free(x->rs);
	free(x);
}

/* The work for nf FV cells: L->fvx, grown as needed; NULL when out of
 * memory (L->fvx then stays as it was). */
static struct lbm_fvwork *fvwork_get(struct lbm *L, int nf)
{
	if (L->fvx && L->fvx->cap >= nf)
		return L->fvx;
	const size_t n = (size_t)nf + (size_t)nf / 4 + 64;
	struct lbm_fvwork *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->w = malloc(n * W_N * sizeof(double));
	x->nb = malloc(n * 4 * sizeof(struct fv_nb));
	x->fo = malloc(n * 4 * FO_N * sizeof(double));
	x->kin = malloc(n * sizeof(int64_t));
	x->fq = malloc(n * 2 * sizeof(int64_t));
	x->spd = malloc(n * sizeof(double));
	x->in0 = malloc((n + 1) * sizeof(int32_t));
	x->in = malloc(n * 2 * sizeof(int32_t));
	if (!x->w || !x->nb || !x->fo || !x->kin || !x->fq || !x->spd ||
	    !x->in0 || !x->in || n > INT32_MAX / 2) {
		fvwork_free(x);
		return NULL;
	}
	x->cap = (int)n;
	fvwork_free(L->fvx);
	L->fvx = x;
	return x;
}

/* The faces of FV cell k (at y) in one stage: the HLL flux of each of its
 * four axis faces (fv_dirs order) but the west and north faces toward FV
 * cells (those cells compute them as their east and south faces), into
 * fo (FO_N per face); the edge and face mass sums of the cell itself
 * (W_FZ, W_FE, W_FS) directly. */
static void fv_faces(const struct lbm *L, double *w, int k, int y,
		     const struct fv_nb *nb, double *fo, double r, double hv,
		     double hthin)
{
	const double g = L->p.g;
	double *wy = w + (size_t)k * W_N;
	for (int q = 0; q < 4; q++) {
		const int a = fv_dirs[q];
		const struct fv_nb *n = nb + q;
		const int ix = n->ix, xfv = ix >= 0;
		if (q >= 2 && xfv)
			continue;
		double hx, qxx, qyx, zx;
		int kind = nb_get(L, w, k, y, n, &hx, &qxx, &qyx, &zx);
		int xdir = lbm_cx[a] != 0, sgn = lbm_cx[a] + lbm_cy[a];
		const int sl = xdir ? W_SX : W_SY;
		/* y's face state, and x's (the mirror of y's at a wall;
		 * first order for LBM cells and edges) */
		double hy_f, qny_f, qty_f, zy_f;
		face(wy[W_H], xdir ? wy[W_QX] : wy[W_QY],
		     xdir ? wy[W_QY] : wy[W_QX], xdir ? wy[W_UF] : wy[W_VF],
		     xdir ? wy[W_VF] : wy[W_UF], L->z[y], wy + sl, sgn, hv,
		     &hy_f, &qny_f, &qty_f, &zy_f);
		double hx_f, qnx_f, qtx_f, zx_f;
		if (kind == 1 || kind == 3) {
			hx_f = hy_f, qnx_f = kind == 1 ? -qny_f : qny_f;
			qtx_f = qty_f, zx_f = zy_f;
		} else {
			const double *wx = kind == 2 ? w + (size_t)ix * W_N : NULL;
			double ux = 0, vx = 0;
			if (wx)
				ux = wx[W_UF], vx = wx[W_VF];
			face(hx, xdir ? qxx : qyx, xdir ? qyx : qxx, xdir ? ux : vx,
			     xdir ? vx : ux, zx, wx ? wx + sl : NULL, -sgn, hv,
			     &hx_f, &qnx_f, &qtx_f, &zx_f);
		}
		/* normal n along +x or +y; left = the cell on the minus side */
		double hl, ql, pl, zl, hr, qr, pr, zr;
		if (sgn > 0) {
			hl = hy_f, ql = qny_f, pl = qty_f, zl = zy_f;
			hr = hx_f, qr = qnx_f, pr = qtx_f, zr = zx_f;
		} else {
			hl = hx_f, ql = qnx_f, pl = qtx_f, zl = zx_f;
			hr = hy_f, qr = qny_f, pr = qty_f, zr = zy_f;
		}
		double F[3], cL, cR;
		hll(g, hl, ql, pl, zl, hr, qr, pr, zr, hv, F, &cL, &cR);
		if (n->zin) {
			/* an inflow: its discharge enters as given, with the
			 * momentum flux of the depth it enters at (the given
			 * depth where the inflow is at or above critical, else
			 * the cell's face depth) */
			double hb = MAXD(hy_f, hthin);
			if (qnx_f * qnx_f >= 0.98 * g * hx * hx * hx && hx > hthin)
				hb = hx;
			double ub = qnx_f / hb;
			F[0] = qnx_f;
			F[1] = qnx_f * ub + 0.5 * g * hb * hb;
			F[2] = 0;
			cL = cR = 0.5 * g * (hy_f * hy_f - hb * hb);
		}
		if (n->zlev && hx > hthin && hy_f > hthin &&
		    qny_f * qny_f < g * hy_f * hy_f * hy_f) {
			/* a held level under subcritical flow: the face stands
			 * at the level with the cell's discharge (the
			 * characteristic from the interior); HLL would hardly
			 * see the level where u - c is near 0 */
			F[0] = qny_f;
			F[1] = qny_f * qny_f / hx + 0.5 * g * hx * hx;
			F[2] = qny_f * qty_f / hx;
			cL = cR = 0;
		}
		if (kind == 3 && sgn * qny_f <= 0) {
			/* an open edge lets water out, never in (a zero-gradient
			 * inflow on steep terrain ran away: the volcano sample
			 * diverged) */
			F[0] = F[2] = 0;
			F[1] = 0.5 * g * hy_f * hy_f;
			cL = cR = 0;
		}
		double *f = fo + q * FO_N;
		/* y's update: outflow through a face on its plus side */
		double Fy1 = sgn > 0 ? F[1] + cL : F[1] + cR;
		double dqn = sgn > 0 ? -r * Fy1 : r * Fy1;
		double dqt = sgn > 0 ? -r * F[2] : r * F[2];
		f[FO_OQX] = xdir ? dqn : dqt;
		f[FO_OQY] = xdir ? dqt : dqn;
		if (!xfv && n->edge) { /* edge face: mass */
			double fm = sgn > 0 ? -r * F[0] : r * F[0];
			f[FO_OH] = fm;
			wy[W_FZ] += 0.5 * fm;
		}
		if (xfv) { /* FV neighbour: mass and its momentum */
			f[FO_NH] = r * F[0];
			wy[xdir ? W_FE : W_FS] += 0.5 * r * F[0];
			double Fx1 = F[1] + cR;
			f[FO_NQX] = xdir ? r * Fx1 : r * F[2];
			f[FO_NQY] = xdir ? r * F[2] : r * Fx1;
		}
	}
}

/* The velocities of an FV cell's state as slopes() (at h_thin) and the
 * face states (at hv) read them. */
static void fv_vel(double *wy, double hthin, double hv)
{
	wy[W_US] = vel(wy[W_H], wy[W_QX], hthin);
	wy[W_VS] = vel(wy[W_H], wy[W_QY], hthin);
	wy[W_UF] = vel(wy[W_H], wy[W_QX], hv);
	wy[W_VF] = vel(wy[W_H], wy[W_QY], hv);
}

/* The sums of one stage for FV cell k (at y): its faces' and its
 * neighbours' contributions added in the order of the serial update
 * this replaces (cell by cell ascending, each cell's faces in fv_dirs
 * order, a face's own part before the neighbour's, the bed term after
 * the cell's faces), so that every bit is the same whatever the thread
 * count; then the stage (Heun) itself. */
static void fv_sum(const struct lbm_fvwork *x, int k, int stage, double r,
		   double g, double hthin, double hv)
{
	double *wy = x->w + (size_t)k * W_N;
	const struct fv_nb *nb = x->nb + (size_t)k * 4;
	const double *fo = x->fo;
	double dh = wy[W_DH], dqx = wy[W_DQX], dqy = wy[W_DQY];
	int p = x->in0[k];
	const int pe = x->in0[k + 1];
	for (; p < pe && x->in[p] / 2 < k; p++) {
		const double *f = fo + ((size_t)(x->in[p] / 2) * 4 +
					(size_t)(x->in[p] % 2)) * FO_N;
		dh += f[FO_NH];
		dqx += f[FO_NQX];
		dqy += f[FO_NQY];
	}
	for (int q = 0; q < 4; q++) {
		const int xfv = nb[q].ix >= 0;
		if (q >= 2 && xfv)
			continue;
		const double *f = fo + ((size_t)k * 4 + (size_t)q) * FO_N;
		dqx += f[FO_OQX];
		dqy += f[FO_OQY];
		if (!xfv && nb[q].edge)
			dh += f[FO_OH];
		if (xfv)
			dh -= f[FO_NH];
		/* a face toward the cell itself (a periodic grid one cell
		 * wide): the neighbour's part right after */
		for (; p < pe && x->in[p] == 2 * k + q; p++) {
			dh += f[FO_NH];
			dqx += f[FO_NQX];
			dqy += f[FO_NQY];
		}
	}
	/* the bed inside the cell (Audusse et al. 2004, second order):
	 * -g h (z_+ - z_-) / dx per axis, z_+ - z_- = the surface slope less
	 * the depth slope */
	const double hc = MAXD(wy[W_H], 0);
	dqx -= r * g * hc * (wy[W_SX + 1] - wy[W_SX]);
	dqy -= r * g * hc * (wy[W_SY + 1] - wy[W_SY]);
	for (; p < pe; p++) {
		const double *f = fo + ((size_t)(x->in[p] / 2) * 4 +
					(size_t)(x->in[p] % 2)) * FO_N;
		dh += f[FO_NH];
		dqx += f[FO_NQX];
		dqy += f[FO_NQY];
	}
	if (stage == 0) {
		wy[W_H] += dh;
		wy[W_QX] += dqx;
		wy[W_QY] += dqy;
	} else {
		wy[W_H] = 0.5 * (wy[W_H0] + wy[W_H] + dh);
		wy[W_QX] = 0.5 * (wy[W_QX0] + wy[W_QX] + dqx);
		wy[W_QY] = 0.5 * (wy[W_QY0] + wy[W_QY] + dqy);
	}
	if (wy[W_H] <= hthin * 1e-3)
		wy[W_QX] = wy[W_QY] = 0;
	fv_vel(wy, hthin, hv);
}

/* The incoming faces of every FV cell (x->in0, x->in): the east and
 * south faces of the cells k0 .. k1 - 1 (whose first pass ran: all in
 * one process) that end in it, ascending by (cell, face), so that
 * fv_sum and the mass books add them in the serial order. */
static void fv_incoming(struct lbm_fvwork *x, int nf, int k0, int k1)
{
	int32_t *in0 = x->in0;
	for (int k = 0; k <= nf; k++)
		in0[k] = 0;
	for (int k = k0; k < k1; k++)
		for (int q = 0; q < 2; q++)
			if (x->nb[(size_t)k * 4 + q].ix >= 0)
				in0[x->nb[(size_t)k * 4 + q].ix + 1]++;
	for (int k = 0; k < nf; k++)
		in0[k + 1] += in0[k];
	/* fill, in0[ix] moving to the end of ix's run, then back */
	for (int k = k0; k < k1; k++)
		for (int q = 0; q < 2; q++) {
			const int ix = x->nb[(size_t)k * 4 + q].ix;
			if (ix >= 0)
				x->in[in0[ix]++] = 2 * k + q;
		}
	for (int k = nf; k > 0; k--)
		in0[k] = in0[k - 1];
	in0[0] = 0;
}

/* Manning friction, implicit as the kernel's: tau_b / rho = C_b u |u|,
 * C_b = g n^2 / h^(1/3), the factor 1 / (1 + C_b |u| dt / h) */
static void fv_friction(double *wy, double gn2, double dt, double hd)
{
	double hh = MAXD(wy[W_H], hd);
	double sp = sqrt(wy[W_QX] * wy[W_QX] + wy[W_QY] * wy[W_QY]) / hh;
	double cb = gn2 / cbrt(hh);
	double f = 1.0 / (1.0 + cb * sp * dt / hh);
	wy[W_QX] *= f;
	wy[W_QY] *= f;
}

/* Several processes, each with its band of the grid's rows (par.h;
 * not the coarse levels, which every rank runs alone): 1. */
static int fv_banded(const struct lbm *L)
{
	const struct wb_par *p = L->par;
	return p && p->size > 1 && p->ny == L->ny;
}

/* The first entry of the FV list (ascending padded index) in interior
 * row j or below it: nfv for j >= ny, 0 for j <= 0. */
static int fv_first_row(const struct lbm *L, int j)
{
	const long y = ((long)j + 1) * L->W;
	int lo = 0, hi = L->nfv;
	while (lo < hi) {
		const int m = lo + (hi - lo) / 2;
		if (L->fvl[m] < y)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* Several processes: the list's entries [*kb0, *kb1) in this rank's rows,
 * whose results it owns, and [*k0, *k1), the cells their ns sub-steps
 * read. A stage reads the state three cells away (a cell's sum reads its
 * west and north neighbours' faces, a face the slopes of the cell
 * beyond it, a slope that cell's neighbours), so ns sub-steps of two
 * stages reach 6 ns cells, the new masses one more (the incoming faces'
 * fluxes). Every FV cell is some rank's, so the ranks' owned results
 * are one process's result (tests/cli/wbake_mpi.sh; a reach of 2 ns
 * fails it). */
static void fv_band(const struct lbm *L, int ns, int *k0, int *k1,
		    int *kb0, int *kb1)
{
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	const int M = ns < 0 ? 0 : 6 * ns + 2; /* ns < 0: the band alone */
	*kb0 = fv_first_row(L, J0);
	*kb1 = fv_first_row(L, J1);
	*k0 = fv_first_row(L, J0 - M);
	*k1 = fv_first_row(L, J1 + M);
}

/* One rank's first pass over its band's FV cells (fv_fold_ranks): the
 * MAXD folds from 0 of the wave speeds and of the friction-first speeds
 * in the list's order, whether a NaN was among them, the count of the
 * cells faster than e and the edge books. */
struct fv_fold {
	double spd, ff;
	long long nff, eadj;
	int spd_nan, ff_nan, empty;
};

/* The fold in the list's order continued from s over a rank's cells,
 * from their fold r from 0: MAXD forgets what came before a NaN, and
 * the values are not negative, so it is r after a NaN and otherwise the
 * larger of s and r (r when s is a NaN). */
static double fold_on(double s, double r, int nan, int empty)
{
	if (empty)
		return s;
	if (nan || s != s)
		return r;
	return MAXD(s, r);
}

/* Several processes: every rank's fold f, combined in rank order into
 * one process's largest wave speed (*smax), friction-first count and
 * speed (L->fv_ff, L->fv_ff_u) and edge books (f->eadj): one exchange.
 * 0, or -1 (par->failed). */
static int fv_fold_ranks(struct lbm *L, struct fv_fold *f, double *smax)
{
	struct wb_par *p = L->par;
	enum { NW = 7, NR = 32 };
	uint64_t stack[NR * NW]; /* up to NR ranks no allocation a step */
	uint64_t *all = p->size <= NR ? stack :
			calloc((size_t)p->size * NW, sizeof(*all));
	if (!all) {
		p->failed = 1;
		return -1;
	}
	memset(all, 0, (size_t)p->size * NW * sizeof(*all));
	uint64_t *me = all + (size_t)p->rank * NW;
	memcpy(me + 0, &f->spd, 8);
	memcpy(me + 1, &f->ff, 8);
	memcpy(me + 2, &f->nff, 8);
	memcpy(me + 3, &f->eadj, 8);
	me[4] = (uint64_t)f->spd_nan;
	me[5] = (uint64_t)f->ff_nan;
	me[6] = (uint64_t)f->empty;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = r;
	const int e = p->allgather(p->user, all, NW * sizeof(*all), p->off);
	double s = 0, u = L->fv_ff_u;
	long long nff = 0, ea = 0;
	for (int r = 0; r < p->size && !e; r++) {
		const uint64_t *o = all + (size_t)r * NW;
		double rs, rf;
		long long n, a;
		memcpy(&rs, o + 0, 8);
		memcpy(&rf, o + 1, 8);
		memcpy(&n, o + 2, 8);
		memcpy(&a, o + 3, 8);
		s = fold_on(s, rs, o[4] != 0, o[6] != 0);
		u = fold_on(u, rf, o[5] != 0, o[6] != 0);
		nff += n;
		ea += a;
	}
	if (all != stack)
		free(all);
	if (e) {
		p->failed = 1;
		return -1;
	}
	*smax = s;
	L->fv_ff += nff;
	L->fv_ff_u = u;
	f->eadj = ea;
	return 0;
}

int lbm_fv_books(struct lbm *L, int64_t *edge_adj)
{
	if (!fv_banded(L) || L->nfv == 0)
		return 0;
	long long all = L->fv_eown;
	if (wb_par_sums(L->par, &all, 1))
		return -1;
	*edge_adj += (int64_t)all - L->fv_eown;
	return 0;
}

int lbm_fv_share(struct lbm *L, int64_t *edge_adj)
{
	if (!fv_banded(L) || L->nfv == 0)
		return 0;
	if (lbm_fv_books(L, edge_adj))
		return -1;
	struct wb_par *p = L->par;
	const int nf = L->nfv, ny = L->ny;
	int32_t *const *B = L->f[!L->cur];
	float *hB = L->h[!L->cur];
	/* the update's work (it holds nf cells after lbm_fv_update); its
	   buffers are kept, so a step allocates nothing */
	struct lbm_fvwork *x = L->fvx;
	if (x && x->cap >= nf && !x->xb)
		x->xb = malloc((size_t)x->cap * (LBM_Q + 1) * sizeof(*x->xb));
	if (x && !x->rs)
		x->rs = malloc(((size_t)ny + 1) * sizeof(*x->rs));
	if (!x || x->cap < nf || !x->xb || !x->rs) {
		p->failed = 1;
		return -1;
	}
	uint32_t *buf = x->xb;
	long *rs = x->rs;
	int kb0, kb1;
	{
		int J0, J1;
		wb_par_band(p, ny, &J0, &J1);
		kb0 = fv_first_row(L, J0);
		kb1 = fv_first_row(L, J1);
	}
	for (int k = kb0; k < kb1; k++) {
		const int y = L->fvl[k];
		uint32_t *o = buf + (size_t)k * (LBM_Q + 1);
		for (int a = 0; a < LBM_Q; a++)
			memcpy(o + a, &B[a][y], 4);
		memcpy(o + LBM_Q, &hB[y], 4);
	}
	/* entries by interior row (wb_par_list) */
	for (int j = 0, k = 0; j <= ny; j++) {
		const long y = ((long)j + 1) * L->W;
		while (k < nf && L->fvl[k] < y)
			k++;
		rs[j] = k;
	}
	int e = wb_par_list(p, buf, (LBM_Q + 1) * sizeof(*buf), rs);
	for (int k = 0; k < nf && !e; k++) {
		if (k >= kb0 && k < kb1)
			continue;
		const int y = L->fvl[k];
		const uint32_t *o = buf + (size_t)k * (LBM_Q + 1);
		for (int a = 0; a < LBM_Q; a++)
			memcpy(&B[a][y], o + a, 4);
		memcpy(&hB[y], o + LBM_Q, 4);
	}
	return e ? -1 : 0;
}

/* The first pass of lbm_fv_update on FV cell k: its state, the kinetic
 * exchange with its LBM neighbours, friction first where it is faster
 * than e, its wave speed and the neighbours of its axis faces. Returns
 * the change to the edge books (the closure's populations of inflow,
 * level and open edges, which the edge face's flux replaces). */
static int64_t fv_first(struct lbm *L, struct lbm_fvwork *x, int k)
{
	double *w = x->w;
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	const double e = L->p.e, g = L->p.g, dt = L->p.dt;
	const double hthin = LBM_THIN * L->p.h_dry, hdd = L->p.h_dry;
	const double n2 = L->p.manning * L->p.manning, hv = hdd;
	const int Wd = L->W;
	int64_t eadj = 0;
	const int y = L->fvl[k];
	double *wy = w + (size_t)k * W_N;
	double h, mx, my;
	cell_moments(L, y, &h, &mx, &my);
	wy[W_H] = h;
	wy[W_QX] = mx * e;
	wy[W_QY] = my * e;
	wy[W_FE] = wy[W_FS] = 0;
	int64_t km = 0;
	wy[W_FZ] = 0;
	for (int a = 1; a < LBM_Q; a++) {
		int xn = y + lbm_cx[a] + lbm_cy[a] * Wd;
		if (fv_of(L, xn) >= 0)
			continue;
		if (!link_open_fv(hA[y], L->z[y], L->c[y], hA[xn], L->z[xn],
				  L->c[xn], hd))
			continue;
		int64_t ex = (int64_t)A[lbm_opp[a]][xn] - A[a][y] +
			     (int64_t)lbm_bed_int(L, hA, y, xn, a);
		if (edge_ghost(L, xn)) {
			/* an inflow / level / open edge: the flux of the
			 * edge face replaces the closure's populations;
			 * the books (edge_flux counted these) follow */
			eadj -= ex;
			continue;
		}
		/* a free-slip wall's ghost returns its boundary cell's
		 * populations, reflected: a diagonal link into it stands
		 * for one to the cell beside y along the wall. Between two
		 * FV cells the HLL flux of their axis face carries that
		 * flow; the reflected populations would carry it a second
		 * time (a channel of 3 rows between free-slip walls moved
		 * 12 % more water than its depth and velocity showed).
		 * Toward an LBM cell the link stays: it is that cell's
		 * exact budget. */
		if (mirror_fv(L, xn))
			continue;
		km += ex;
	}
	x->kin[k] = km;
	double hp = MAXD(h, 0);
	double c = sqrt(g * hp);
	double u = hp > hdd ? fabs(wy[W_QX]) / hp : 0,
	       v = hp > hdd ? fabs(wy[W_QY]) / hp : 0;
	/* faster than the lattice speed, which the parameters choose
	 * above the fastest flow the terrain's slopes can give: a state
	 * that friction would take back within the step (a 2 mm film
	 * beside a lake reads the rounding of the lake's bed transfers
	 * as 0.3 m^2/s, 100 m/s and more: docs/lbm.md "Real elevation
	 * models"). Its friction comes before the sub-steps instead of
	 * after them, so that the sub-steps follow the flow friction
	 * leaves (the other order of the same splitting); counted
	 * (lbm_fv_report warns), none in the validation cases */
	wy[W_FF] = 0;
	if (MAXD(u, v) > e && n2 > 0) {
		wy[W_FF] = MAXD(u, v);
		fv_friction(wy, g * n2, dt, hdd);
		u = fabs(wy[W_QX]) / hp;
		v = fabs(wy[W_QY]) / hp;
	}
	x->spd[k] = MAXD(u, v) + c;
	fv_vel(wy, hthin, hv);
	for (int q = 0; q < 4; q++)
		fv_nb_find(L, y, y + lbm_cx[fv_dirs[q]] +
				 lbm_cy[fv_dirs[q]] * Wd,
			   x->nb + (size_t)k * 4 + q);
	return eadj;
}

void lbm_fv_update(struct lbm *L, int64_t *edge_adj)
{
	*edge_adj = 0;
	L->fv_eown = 0;
	const int nf = L->nfv;
	if (nf == 0)
		return;
	/* several processes (fv_banded): the first pass runs on the band's
	 * cells [kb0, kb1), then the ranks combine its maxima and books
	 * (fv_fold_ranks), then it runs on the cells the sub-steps read
	 * too, [k0, k1) (fv_band); the sub-steps run there and the results
	 * are written for the band's cells. One process: everything on the
	 * whole list. */
	const int banded = fv_banded(L);
	int k0 = 0, k1 = nf, kb0 = 0, kb1 = nf;
	if (banded)
		fv_band(L, -1, &k0, &k1, &kb0, &kb1);
	struct lbm_fvwork *x = fvwork_get(L, nf);
	if (!x) { /* out of memory: the LBM result stands */
		if (banded) { /* the other ranks wait for this one's pass */
			struct fv_fold none = { .empty = 1 };
			double smax = 0;
			fv_fold_ranks(L, &none, &smax);
		}
		return;
	}
	double *w = x->w;
	int32_t *const *A = L->f[L->cur];
	int32_t *const *B = L->f[!L->cur];
	const float *hA = L->h[L->cur];
	float *hB = L->h[!L->cur];
	const float hd = (float)L->p.h_dry;
	const double un = L->unit, e = L->p.e, g = L->p.g, dx = L->p.dx,
		     dt = L->p.dt;
	const double hthin = LBM_THIN * L->p.h_dry, hdd = L->p.h_dry;
	const double n2 = L->p.manning * L->p.manning;
	/* velocities below h_dry desingularised (0.01 h_dry moved Ritter's
	 * front 0.4 cells but let films run into Thacker's LBM cells: 40 ->
	 * 73,588 clamped cell-steps at 400^2) */
	const double hv = hdd;
	const int Wd = L->W;
	const int32_t *fvl = L->fvl;
	int64_t eadj = 0, eown = 0;
	int ns = 1;
	double r = 0;
	/* Every loop below gives each FV cell's values from the same
	 * arithmetic in the same order whatever the thread count: cells
	 * write only their own values, sums over cells are integers or
	 * taken in a fixed order (fv_sum, the serial maxima). */
	/* states, kinetic exchange with non-FV cells, wave speeds, the
	 * neighbours of the axis faces (fv_first) */
#pragma omp parallel for num_threads(L->threads) if (nf >= FV_PAR_MIN) schedule(static) reduction(+ : eadj)
	for (int k = kb0; k < kb1; k++)
		eadj += fv_first(L, x, k);
	/* sub-steps: (|u| + c) dts / dx <= LBM_FV_CFL (the neighbours'
	 * speeds are those of the LBM, below e); the maximum in the list's
	 * order (a NaN as before) */
	double smax = 0;
	if (!banded) {
		for (int k = 0; k < nf; k++) {
			smax = MAXD(smax, x->spd[k]);
			const double ff = w[(size_t)k * W_N + W_FF];
			L->fv_ff += ff > 0;
			L->fv_ff_u = MAXD(L->fv_ff_u, ff);
		}
	} else {
		struct fv_fold f = { .eadj = eadj, .empty = kb1 <= kb0 };
		for (int k = kb0; k < kb1; k++) {
			const double sp = x->spd[k];
			const double ff = w[(size_t)k * W_N + W_FF];
			f.spd = MAXD(f.spd, sp);
			f.ff = MAXD(f.ff, ff);
			f.spd_nan |= sp != sp;
			f.ff_nan |= ff != ff;
			f.nff += ff > 0;
		}
		if (fv_fold_ranks(L, &f, &smax))
			return; /* par->failed says why */
		eadj = f.eadj;
	}
	ns = (int)ceil(smax * dt / dx / LBM_FV_CFL);
	if (ns < 1)
		ns = 1;
	if (ns > L->fv_ns_max)
		L->fv_ns_max = ns;
	if (ns > LBM_FV_MAX_SUB) { /* counted: lbm_fv_report warns */
		ns = LBM_FV_MAX_SUB;
		L->fv_capped++;
		if (smax * dt / dx > L->fv_cfl)
			L->fv_cfl = smax * dt / dx;
	}
	r = dt / ns / dx;
	if (banded) { /* the cells the sub-steps read: their first pass */
		fv_band(L, ns, &k0, &k1, &kb0, &kb1);
#pragma omp parallel for num_threads(L->threads) if (nf >= FV_PAR_MIN) schedule(static)
		for (int k = k0; k < k1; k++)
			if (k < kb0 || k >= kb1)
				(void)fv_first(L, x, k);
	}
	fv_incoming(x, nf, k0, k1);
#pragma omp parallel num_threads(L->threads) if (nf >= FV_PAR_MIN)
	{
	/* each sub-step: Heun's method (SSP Runge-Kutta 2) on the MUSCL
	 * reconstruction: U* = U + D(U), U' = (U + U* + D(U*)) / 2; the
	 * face mass fluxes are summed with weight 1/2 per stage */
	for (int s = 0; s < ns; s++)
	for (int stage = 0; stage < 2; stage++) {
#pragma omp for schedule(static)
		for (int k = k0; k < k1; k++) {
			double *wy = w + (size_t)k * W_N;
			const struct fv_nb *nb = x->nb + (size_t)k * 4;
			wy[W_DH] = (double)x->kin[k] * un / ns;
			wy[W_DQX] = wy[W_DQY] = 0;
			if (stage == 0) {
				wy[W_H0] = wy[W_H];
				wy[W_QX0] = wy[W_QX];
				wy[W_QY0] = wy[W_QY];
			}
			slopes(L, w, k, fvl[k], nb, 1, hthin);
			slopes(L, w, k, fvl[k], nb, 0, hthin);
		}
#pragma omp for schedule(static)
		for (int k = k0; k < k1; k++)
			fv_faces(L, w, k, fvl[k], x->nb + (size_t)k * 4,
				 x->fo + (size_t)k * 4 * FO_N, r, hv, hthin);
		/* the last stage also starts the exact masses (the face sums
		 * are complete): old + kinetic exchange + the edge faces'
		 * rounded flux, and each face's rounded mass toward an FV
		 * cell (fq), given and taken below */
		const int last = s == ns - 1 && stage == 1;
#pragma omp for schedule(static) reduction(+ : eown)
		for (int k = k0; k < k1; k++) {
			fv_sum(x, k, stage, r, g, hthin, hv);
			if (!last)
				continue;
			const int y = fvl[k];
			const double *wy = w + (size_t)k * W_N;
			int64_t m = -bed_sum(L, y);
			for (int a = 0; a < LBM_Q; a++)
				m += A[a][y];
			int64_t fz = llrint(wy[W_FZ] / un);
			x->kin[k] += m + fz; /* becomes the new mass */
			if (k >= kb0 && k < kb1)
				eown += fz;
			for (int q = 0; q < 2; q++)
				x->fq[2 * k + q] = x->nb[(size_t)k * 4 + q].ix < 0 ? 0 :
					llrint((q ? wy[W_FS] : wy[W_FE]) / un);
		}
	}
	/* the new masses (integers: the order is free), friction, new
	 * depths, then the populations */
	int64_t *mnew = x->kin;
	const double qres = LBM_FV_QRES * un * e;
	const float inv = (float)(1.0 / un);
	const float ghk = (float)(g / (e * e));
#pragma omp for schedule(static)
	for (int k = kb0; k < kb1; k++) {
		const int y = fvl[k];
		double *wy = w + (size_t)k * W_N;
		mnew[k] -= x->fq[2 * k] + x->fq[2 * k + 1];
		for (int p = x->in0[k]; p < x->in0[k + 1]; p++)
			mnew[k] += x->fq[x->in[p]];
		double h = (double)mnew[k] * un;
		wy[W_H] = h;
		if (h > hd && n2 > 0 && !wy[W_FF])
			fv_friction(wy, g * n2, dt, hd);
		/* momentum below the resolution of the populations (a few
		 * units of lattice momentum: their rounding) is none; else
		 * the rounding of the re-initialisation holds it there
		 * against friction (still water kept 2 units, 3e-4 m/s in
		 * 1.7 cm of the ocean case) */
		if (fabs(wy[W_QX]) < qres && fabs(wy[W_QY]) < qres)
			wy[W_QX] = wy[W_QY] = 0;
		/* stored as the kernel stores a depth, (float)H unit */
		hB[y] = (float)(int32_t)mnew[k] * L->kp.unit;
		/* negative depths count 0 (as hf below): R_a of a negative
		 * depth is positive, and a cell in deficit would send it */
		const int32_t Hs0 = lbm_hs(hB[y], L->kp.kinv),
			      Hs = Hs0 > 0 ? Hs0 : 0;
		float hf = (float)MAXD(wy[W_H], 0.0);
		float U = 0, V = 0;
		if (wy[W_H] > hv) { /* the state's own velocity, films too */
			double hh = wy[W_H];
			U = (float)(wy[W_QX] / (hh * e));
			V = (float)(wy[W_QY] / (hh * e));
		}
		float feq[LBM_Q], q0[LBM_Q], neq[LBM_Q] = { 0 };
		lbm_feq(hf, U, V, ghk * hf, feq);
		lbm_feq(hf, 0.0f, 0.0f, ghk * hf, q0);
		fv_neq(L, y, neq);
		int64_t out = 0, sbn = 0;
		for (int a = 1; a < LBM_Q; a++) {
			int xn = y + lbm_cx[a] + lbm_cy[a] * Wd;
			int32_t b = 0;
			/* at the step's old depths, as the kernel's bed terms
			 * (and this update's exchange with LBM neighbours): with
			 * the new ones the populations' total drifted (volcano:
			 * relative balance error 3e-5) */
			if (link_open_fv(hA[y], L->z[y], L->c[y], hA[xn], L->z[xn],
					 L->c[xn], hd))
				b = lbm_bed_int(L, hA, y, xn, a);
			/* R_a of the new integer depth plus the rounded
			 * velocity part: a state at rest is the kernel's
			 * fixed point (lbm.h lbm_bi) */
			B[a][y] = lbm_rq(L->kp.K, !(a & 1), Hs) +
				  (int32_t)lrintf((feq[a] - q0[a]) * inv + neq[a]) + b;
			sbn += b;
			out += B[a][y];
		}
		B[0][y] = (int32_t)(mnew[k] + sbn - out);
	}
	}
	*edge_adj = eadj + eown;
	L->fv_eown = eown;
	L->fv_cells += nf;
}
