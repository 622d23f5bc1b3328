/*
 * lbm.c - lattice Boltzmann shallow-water solver (LBM-SWE), after Zhou,
 * "Lattice Boltzmann Methods for Shallow Water Flows" (Springer 2004), as
 * used by the Photon Water System talk (refs/000) to bake flow maps.
 *
 * Model (D2Q9, BGK, lattice speed e = dx/dt, relaxation time tau):
 *   f_a(x + e_a dt, t + dt) = f_a - (f_a - feq_a) / tau + S_a
 *   feq_0 = h - 5 g h^2 / (6 e^2) - 2 h u.u / (3 e^2)
 *   feq_a = w_a h (g h / (6 e^2) + e_a.u / (3 e^2) + (e_a.u)^2 / (2 e^4)
 *           - u.u / (6 e^2)),   w_a = 1 (axis), 1/4 (diagonal)
 *   h = sum f_a,  h u = sum e_a f_a,  nu = e dx (2 tau - 1) / 6.
 * Forcing (momentum source F, per unit area, m^2/s^2):
 *   bed slope  -g h dz/dx, centred on each link and weighted with w_a so that
 *              a lake at rest is an exact fixed point (docs/lbm.md);
 *   friction   -C_b u |u|, C_b = g n^2 / h^(1/3) (Manning), implicit;
 *   modifiers  h k (u_target - u), implicit;
 *   stability  clamps of |u| (u.u < e^2 and Froude < 1, as the talk does).
 * The momentum part is added as S_a = w_a c_a . dM / 3 (sum_a c_a S_a = dM,
 * sum_a S_a = 0). Boundaries: ghost ring filled before each step (walls
 * no-slip / free-slip, periodic, zero-gradient outflow, and the talk's
 * Zou-He-type closures for inflow and fixed level). Wet/dry: depth
 * threshold h_dry; a link is a wall unless the higher water surface of its
 * two cells stands above the higher bed (and below any blocker deck).
 *
 * Layout, indexing and bytes per cell: see lbm.h. Rows are processed in
 * parallel (OpenMP, static schedule), each cell independently from the
 * previous step's arrays; reductions go through per-row partials summed
 * serially, so results are byte-identical for any thread count.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, madvise */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __AVX__
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include "hydro.h"
#include "lbm.h"
#include "par.h"
#include "solve.h"

const int lbm_cx[LBM_Q] = { 0, 1, 1, 0, -1, -1, -1, 0, 1 };
const int lbm_cy[LBM_Q] = { 0, 0, 1, 1, 1, 0, -1, -1, -1 };
const int lbm_opp[LBM_Q] = { 0, 5, 6, 7, 8, 1, 2, 3, 4 };
const float lbm_w[LBM_Q] = { 0.0f, 1.0f, 0.25f, 1.0f, 0.25f,
			     1.0f, 0.25f, 1.0f, 0.25f };
/* positive zero-momentum state used by the positivity fix */
static const float lbm_q[LBM_Q] = { 4.0f / 9, 1.0f / 9, 1.0f / 36, 1.0f / 9,
				    1.0f / 36, 1.0f / 9, 1.0f / 36, 1.0f / 9,
				    1.0f / 36 };

#define MAXF(a, b) ((a) > (b) ? (a) : (b))
#define MINF(a, b) ((a) < (b) ? (a) : (b))

static int dir_of(int cx, int cy)
{
	for (int a = 0; a < LBM_Q; a++)
		if (lbm_cx[a] == cx && lbm_cy[a] == cy)
			return a;
	return -1;
}

/* Fixed-point rounding to nearest, ties to even: round(-x) = -round(x), so
 * antisymmetric transfers stay exactly antisymmetric. |x| < 2^30. */
static inline int32_t fx_round(float x)
{
	return (int32_t)lrintf(x); /* round half to even: symmetric */
}

/* The link rule (see lbm.h). Symmetric in its two cells, bit for bit. */
static inline int link_open(float hx, float zx, float cx, float hy, float zy,
			    float cy, float hd)
{
	float ex = zx + hx, ey = zy + hy;
	float em = MAXF(ex, ey), zm = MAXF(zx, zy), cm = MINF(cx, cy);
	return (em > zm + hd) & (cm > em);
}

/* ---- parameters -------------------------------------------------------- */

static int is_level_edge(const struct wb_edge *e)
{
	return e->kind == WB_EDGE_LEVEL ||
	       (e->kind == WB_EDGE_OPEN && e->has_level);
}

static void params_set_e(struct lbm_params *p, double e, double dx);

/* Deepest water the terrain can hold where water can get (m), into *out:
 * the terrain is filled to its spill levels (priority flood, hydro.c)
 * toward the outlets (open and level edges, drains, sinks, held levels at
 * their level); the water of the initial state, sources, inflows and held
 * levels flows down the filled surface (hydro_downstream), and every
 * depression it reaches fills to its spill level. A basin with no outlet
 * that sources or inflows feed can fill to the highest terrain. Returns 0,
 * or -1 when out of memory. */
static int flood_depth(const struct wb_raster *r, double hd, double *out)
{
	const int nx = r->nx, ny = r->ny;
	const size_t n = (size_t)nx * ny;
	unsigned char *outlet = calloc(n, 1), *seed = calloc(n, 1),
		      *feed = calloc(n, 1), *reach = calloc(n, 1),
		      *rfeed = calloc(n, 1);
	float *olev = malloc(n * sizeof(float)), *level = malloc(n * sizeof(float));
	int rc = -1;
	*out = 0;
	if (!outlet || !seed || !feed || !reach || !rfeed || !olev || !level)
		goto done;
	float zmax = -INFINITY;
	for (size_t k = 0; k < n; k++) {
		uint8_t fl = r->flags ? r->flags[k] : 0;
		float src = r->src ? r->src[k] : 0.0f;
		olev[k] = r->z[k];
		zmax = MAXF(zmax, r->z[k]);
		if ((fl & WB_CELL_SINK_ALL) || src < 0)
			outlet[k] = 1;
		if ((fl & WB_CELL_FIXED) && r->fixed_level) {
			outlet[k] = seed[k] = feed[k] = 1;
			olev[k] = MAXF(r->z[k], r->fixed_level[k]);
		}
		if (src > 0)
			seed[k] = feed[k] = 1;
		if (r->h0 && r->h0[k] > hd)
			seed[k] = 1;
	}
	for (int s = 0; s < 4; s++) {
		const struct wb_edge *e = &r->edges[s];
		int len = (s == WB_WEST || s == WB_EAST) ? ny : nx;
		for (int q = 0; q < len; q++) {
			int i = s == WB_WEST ? 0 : s == WB_EAST ? nx - 1 : q;
			int j = s == WB_NORTH ? 0 : s == WB_SOUTH ? ny - 1 : q;
			size_t k = i + (size_t)j * nx;
			if (e->kind == WB_EDGE_OPEN || is_level_edge(e)) {
				outlet[k] = 1;
				if (e->has_level) {
					olev[k] = MAXF(r->z[k], (float)e->level);
					if (e->level > r->z[k])
						seed[k] = feed[k] = 1;
				}
			}
			if (e->kind == WB_EDGE_INFLOW)
				seed[k] = feed[k] = 1;
		}
	}
	if (hydro_fill_levels(r->z, nx, ny, outlet, olev, level) != 0 ||
	    hydro_downstream(level, r->z, nx, ny, seed, reach) != 0 ||
	    hydro_downstream(level, r->z, nx, ny, feed, rfeed) != 0)
		goto done;
	double hm = 0;
	for (size_t k = 0; k < n; k++) {
		if (!reach[k] || !isfinite(r->z[k]))
			continue;
		if (isfinite(level[k]))
			hm = MAXF(hm, (double)level[k] - r->z[k]);
		else if (rfeed[k]) /* fed basin without an outlet */
			hm = MAXF(hm, (double)zmax - r->z[k]);
	}
	*out = hm;
	rc = 0;
done:
	free(outlet);
	free(seed);
	free(feed);
	free(reach);
	free(rfeed);
	free(olev);
	free(level);
	return rc;
}

/* The fastest flow the start's water (r->h0, the first guess included)
 * drives down its slopes: from each cell deeper than 10 h_dry toward each
 * of its 8 neighbours, Manning's velocity h^(2/3) S^(1/2) / n on the fall
 * S of the surface toward a wet neighbour, at the shallower depth, or of
 * the bed toward a dry one, at the cell's (an upper bound where the bed
 * drops by more than the depth: a waterfall's lip);
 * *u the largest, *uc the largest of it plus sqrt(g h). NAN without
 * friction (n = 0: nothing bounds it). */
static void slope_speed(const struct wb_raster *r, double h_dry, double n,
			double g, double *u, double *uc)
{
	*u = *uc = 0;
	if (!(n > 0)) {
		*u = *uc = NAN;
		return;
	}
	if (!r->h0)
		return;
	const int nx = r->nx, ny = r->ny;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			const size_t k = i + (size_t)j * nx;
			const double h = r->h0[k];
			if (!(h > 10 * h_dry))
				continue;
			const double eta = r->z[k] + h;
			for (int a = 1; a < LBM_Q; a++) {
				int ii = i + lbm_cx[a], jj = j + lbm_cy[a];
				if (ii < 0 || ii >= nx || jj < 0 || jj >= ny)
					continue;
				const size_t q = ii + (size_t)jj * nx;
				/* toward water its surface, at the shallower
				 * of the two depths (a lake's outlet flows at
				 * the channel's); toward dry land the bed, at
				 * the cell's depth (a front runs down it) */
				const int wet = r->h0[q] > 10 * h_dry;
				const double hf = wet && r->h0[q] < h ? r->h0[q] : h;
				const double fall = (wet ? eta - (r->z[q] + r->h0[q]) :
						     r->z[k] - r->z[q]) /
						    (r->dx * ((a & 1) ? 1.0 : M_SQRT2));
				if (!(fall > 0))
					continue;
				const double v = pow(hf, 2.0 / 3.0) * sqrt(fall) / n;
				*u = v > *u ? v : *u;
				*uc = v + sqrt(g * hf) > *uc ? v + sqrt(g * hf) : *uc;
			}
		}
}

enum wb_status lbm_params_choose(const struct wb_raster *r,
				 const struct wb_sim *sim,
				 struct lbm_params *p, struct wb_diags *d)
{
	memset(p, 0, sizeof(*p));
	p->g = WB_GRAVITY;
	p->dx = r->dx;
	if (!(r->dx > 0) || r->nx < 1 || r->ny < 1)
		return wb_fail(d, WB_EINPUT, NULL,
			       "lbm: grid %dx%d with cell size %g m cannot be simulated",
			       r->nx, r->ny, r->dx);
	if (sim->viscosity < 0 || sim->manning < 0 || sim->lattice_speed < 0 ||
	    sim->dt < 0 || sim->dry_depth < 0)
		return wb_fail(d, WB_EINPUT, NULL,
			       "lbm: negative viscosity, manning, lattice_speed, dt or dry_depth");
	p->h_dry = sim->dry_depth > 0 ? sim->dry_depth : 1e-3;
	p->manning = sim->manning;
	p->fr_max = LBM_FR_MAX;

	/* deepest water expected */
	size_t n = (size_t)r->nx * r->ny;
	double hd = 0;
	for (size_t k = 0; k < n; k++) {
		double h = r->h0 ? r->h0[k] : 0;
		if (r->flags && (r->flags[k] & WB_CELL_FIXED) && r->fixed_level)
			h = MAXF(h, (double)r->fixed_level[k] - r->z[k]);
		hd = MAXF(hd, h);
	}
	for (int s = 0; s < 4; s++) {
		const struct wb_edge *e = &r->edges[s];
		int len = (s == WB_WEST || s == WB_EAST) ? r->ny : r->nx;
		for (int k = 0; k < len; k++) {
			int i = s == WB_WEST ? 0 : s == WB_EAST ? r->nx - 1 : k;
			int j = s == WB_NORTH ? 0 : s == WB_SOUTH ? r->ny - 1 : k;
			double zb = r->z[i + (size_t)j * r->nx], h = 0;
			if (is_level_edge(e) ||
			    (e->kind == WB_EDGE_INFLOW && e->has_level))
				h = e->level - zb;
			else if (e->kind == WB_EDGE_INFLOW || e->kind == WB_EDGE_OPEN)
				h = e->depth;
			if (e->kind == WB_EDGE_INFLOW && e->discharge > 0)
				h = MAXF(h, 1.5 * cbrt(e->discharge * e->discharge / p->g));
			hd = MAXF(hd, h);
		}
	}
	/* the deepest water the terrain can hold where water can get:
	 * depressions that sources, inflows, initial water or held levels
	 * reach, filled to their spill level (priority flood, hydro.c) */
	double hf = 0;
	if (flood_depth(r, p->h_dry, &hf) != 0)
		return wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
	p->h_flood = hf;
	hd = MAXF(hd, hf);
	if (hd < 10 * p->h_dry)
		hd = MAXF(10 * p->h_dry, 1.0); /* thin sheets only: 1 m */
	p->h_deep = hd;

	double e = sqrt(p->g * hd / LBM_GH_RATIO);
	p->e_why = LBM_E_DEPTH;
	/* the fastest flow the slopes drive: with the hybrid such flow is
	 * the FV update's, whose sub-steps must hold it (at most
	 * LBM_FV_MAX_SUB of LBM_FV_CFL each); the pure LBM clamps it at
	 * Froude 1, below its velocity clamp at any e chosen for h_deep */
	slope_speed(r, p->h_dry, p->manning, p->g, &p->u_slope, &p->uc_slope);
	if (sim->lbm_hybrid && isfinite(p->uc_slope) &&
	    p->uc_slope > e * LBM_FV_CFL * LBM_FV_MAX_SUB) {
		e = p->uc_slope / (LBM_FV_CFL * LBM_FV_MAX_SUB);
		p->e_why = LBM_E_SLOPE;
	}
	for (int s = 0; s < 4; s++) /* inflow velocities within the clamp */
		if (r->edges[s].kind == WB_EDGE_INFLOW &&
		    2.5 * r->edges[s].velocity > e) {
			e = 2.5 * r->edges[s].velocity;
			p->e_why = LBM_E_INFLOW;
		}
	if (sim->lattice_speed > 0 && sim->dt > 0 &&
	    fabs(sim->lattice_speed * sim->dt - r->dx) > 1e-6 * r->dx)
		return wb_fail(d, WB_EINPUT, NULL,
			       "lbm: lattice_speed %g m/s and dt %g s disagree with dx %g m (e = dx/dt)",
			       sim->lattice_speed, sim->dt, r->dx);
	if (sim->lattice_speed > 0)
		e = sim->lattice_speed, p->e_why = LBM_E_GIVEN;
	else if (sim->dt > 0)
		e = r->dx / sim->dt, p->e_why = LBM_E_GIVEN;
	if (p->g * hd >= e * e)
		wb_diag_add(d, WB_SEV_WARNING, NULL, NULL, 0, 0,
			    "lbm: lattice speed %g m/s is too small for %g m deep water (g h < e^2 fails); the solver will raise it when the water gets there",
			    e, hd);
	p->nu_req = sim->viscosity;
	params_set_e(p, e, r->dx);
	if (p->tau_limited)
		wb_diag_add(d, WB_SEV_WARNING, NULL, NULL, 0, 0,
			    "lbm: viscosity %g m^2/s needs tau %.4f < %.3f (the smallest tau at which the collision stays accurate) at dx %g m, e %g m/s; simulating %g m^2/s instead (smaller cells or a larger viscosity avoid this)",
			    p->nu_req, 0.5 + 3.0 * p->nu_req / (e * r->dx),
			    LBM_TAU_MIN, r->dx, e, p->nu);
	return WB_OK;
}

/* e-dependent parameters: dt, tau (>= LBM_TAU_MIN), the TRT rate, the
 * simulated viscosity and the velocity clamp, for lattice speed e and the
 * requested viscosity p->nu_req. */
static void params_set_e(struct lbm_params *p, double e, double dx)
{
	p->e = e;
	p->dt = dx / e;
	double tau = 0.5 + 3.0 * p->nu_req / (e * dx);
	p->tau_limited = tau < LBM_TAU_MIN;
	if (p->tau_limited)
		tau = LBM_TAU_MIN;
	p->tau = tau;
	p->omega = 1.0 / tau;
	/* BGK as Zhou; close to tau = 1/2 BGK turns unstable where waves meet
	 * boundaries, so there the antisymmetric moments relax at the TRT
	 * rate of Ginzburg's magic parameter (tau+ - 1/2)(tau- - 1/2) = 1/4,
	 * which keeps the viscosity and the equilibria unchanged */
	p->omega_m = p->omega;
	if (tau < LBM_TAU_TRT)
		p->omega_m = 1.0 / (0.5 + 0.25 / (tau - 0.5));
	p->nu = e * dx * (2 * tau - 1) / 6;
	p->u_max = LBM_U_MAX * e;
}

/* ---- set-up ------------------------------------------------------------ */

static void rescale_params(struct lbm *L, double hmax, struct wb_diags *d);
static int sb_alloc(struct lbm *L);
static void sb_free(struct lbm *L);
static void field_free(void *raw, size_t ncell);

void lbm_release(struct lbm *L)
{
	if (!L)
		return;
	for (size_t k = 0; k < sizeof(L->mem) / sizeof(L->mem[0]); k++)
		field_free(L->mem[k], L->ncell);
	free(L->gkind);
	free(L->gpart);
	free(L->gspec);
	free(L->gq);
	free(L->gvel);
	free(L->ginit);
	free(L->sp);
	free(L->sp_row);
	free(L->blk);
	free(L->bdz);
	free(L->row_clamp);
	free(L->cmap);
	free(L->row_bad);
	free(L->row_in);
	free(L->row_out);
	sb_free(L);
	lbm_fv_free(L);
	lbm_par_release(L);
	memset(L, 0, sizeof(*L));
}

void lbm_free_f(struct lbm *L)
{
	for (int b = 0; b < 2; b++)
		for (int a = 0; a < LBM_Q; a++) {
			field_free(L->mem[b * LBM_Q + a], L->ncell);
			L->mem[b * LBM_Q + a] = NULL;
			L->f[b][a] = NULL;
		}
}

/* A zeroed field of ncell 4-byte elements (the allocation in *raw): with
 * align, W a multiple of 16 and element 1 at a 64-byte boundary, so that
 * interior column 0 of every row starts a cache line. Straight from mmap
 * (anonymous, private, no swap reserved): zero pages the kernel backs
 * with memory only on their first write, so that the resident memory
 * follows the cells written - the block-sparse step's active blocks in
 * one process, a rank's band under MPI (docs/scale.md "Memory",
 * docs/mpi.md "Memory"). Freed by field_free with the same ncell. */
static size_t field_bytes(size_t ncell)
{
	return ((ncell + 15) * 4 + 63) / 64 * 64;
}

static void *field_alloc(size_t ncell, int align, void **raw)
{
	void *p = mmap(NULL, field_bytes(ncell), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	*raw = p == MAP_FAILED ? NULL : p;
	if (!*raw)
		return NULL;
	return align ? (char *)p + 15 * 4 : p;
}

static void field_free(void *raw, size_t ncell)
{
	if (raw)
		munmap(raw, field_bytes(ncell));
}

static inline int PIX(const struct lbm *L, int i, int j)
{
	return (i + 1) + (j + 1) * L->W;
}

/* Neighbour (cx, cy) of padded cell n, or -1 unless it is an interior
 * cell. */
static int interior_nb(const struct lbm *L, int n, int cx, int cy)
{
	int i = n % L->W + cx, j = n / L->W + cy;
	if (i < 1 || j < 1 || i > L->nx || j > L->ny)
		return -1;
	return i + j * L->W;
}

static int is_ghost(const struct lbm *L, int n)
{
	int i = n % L->W, j = n / L->W;
	return i == 0 || j == 0 || i == L->nx + 1 || j == L->H - 1;
}

void lbm_edge_cell(const struct lbm *L, int s, int k, int *g, int *p,
		   int *nxn, int *nyn)
{
	switch (s) {
	case WB_WEST:
		*g = PIX(L, -1, k), *p = PIX(L, 0, k), *nxn = 1, *nyn = 0;
		break;
	case WB_EAST:
		*g = PIX(L, L->nx, k), *p = PIX(L, L->nx - 1, k), *nxn = -1,
		*nyn = 0;
		break;
	case WB_NORTH:
		*g = PIX(L, k, -1), *p = PIX(L, k, 0), *nxn = 0, *nyn = 1;
		break;
	default:
		*g = PIX(L, k, L->ny), *p = PIX(L, k, L->ny - 1), *nxn = 0,
		*nyn = -1;
		break;
	}
}

static int edge_len(const struct lbm *L, int s)
{
	return (s == WB_WEST || s == WB_EAST) ? L->ny : L->nx;
}

/* The integer depth (units) of water standing at z + h over a bed at z:
 * the rounded surface less the rounded bed (exact rest: the initial
 * state and the held levels' reset). The surface is the float z + h the
 * link rule sees, snapped to the grid of 2^-16 m (a 16-bit heightmap's
 * step at 1 m): water given as h = level - z, rounded to float, then has
 * one integer surface, where z + h is off the level by the rounding of h
 * and z (several units; a still lake would start with a ripple that the
 * exact update keeps). Never below the bed. */
int64_t lbm_rest_depth(const struct lbm *L, float z, float h)
{
	const float eta = z + h;
	const double es = h > 0.0f ? nearbyint((double)eta * 65536.0) / 65536.0 :
				     (double)z;
	const int64_t zb = llrint((double)z / L->unit),
		      H = llrint(es / L->unit) - zb;
	return H > 0 ? H : 0;
}

/* The initial depth (m) of raster cell k: its water, or its held level. */
static float init_depth(const struct wb_raster *r, size_t k)
{
	float z = r->z[k];
	float h = r->h0 ? MAXF(r->h0[k], 0.0f) : 0.0f;
	uint8_t fl = r->flags ? r->flags[k] : 0;
	if ((fl & WB_CELL_FIXED) && r->fixed_level)
		h = MAXF(h, r->fixed_level[k] - z);
	return h;
}

static void init_ghosts(struct lbm *L, const struct wb_raster *r)
{
	const float hd = (float)L->p.h_dry;
	for (int s = 0; s < 4; s++) {
		const struct wb_edge *e = &L->edges[s];
		for (int k = 0; k < edge_len(L, s); k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			int kind = LBM_G_SOLID, part = p;
			float spec = 0, gq = NAN, gvel = NAN;
			float zb = L->z[p];
			switch (e->kind) {
			case WB_EDGE_WALL:
				kind = e->free_slip ? LBM_G_MIRROR : LBM_G_SOLID;
				break;
			case WB_EDGE_PERIODIC:
				kind = LBM_G_PERIODIC;
				part = s == WB_WEST ? PIX(L, L->nx - 1, k) :
				       s == WB_EAST ? PIX(L, 0, k) :
				       s == WB_NORTH ? PIX(L, k, L->ny - 1) :
						       PIX(L, k, 0);
				break;
			case WB_EDGE_OPEN:
				if (e->has_level || e->depth > 0) {
					kind = LBM_G_ZOU;
					spec = e->has_level ?
						(float)(e->level - zb) : (float)e->depth;
					if (spec <= hd)
						kind = LBM_G_SOLID;
				} else {
					kind = LBM_G_EXTRAP;
				}
				break;
			case WB_EDGE_LEVEL:
				kind = LBM_G_ZOU;
				spec = (float)(e->level - zb);
				if (spec <= hd)
					kind = LBM_G_SOLID;
				break;
			case WB_EDGE_INFLOW: {
				kind = LBM_G_ZOU;
				double depth = e->has_level ? e->level - zb : e->depth;
				if (e->discharge > 0) {
					gq = (float)e->discharge;
					double hc = cbrt(e->discharge * e->discharge / L->p.g);
					spec = (float)MAXF(depth, hc);
				} else {
					gvel = (float)e->velocity;
					if (depth > 0) {
						gq = (float)(e->velocity * depth);
						spec = (float)depth;
					} else {
						spec = (float)(2 * hd);
					}
				}
				break;
			}
			}
			L->gkind[g] = (uint8_t)kind;
			/* what only some kinds read, stored for those alone: the
			 * ghosts of both ends of every row would otherwise back
			 * every page of these per-cell arrays (calloc, zero
			 * pages; a wall reads none of them) */
			if (kind == LBM_G_PERIODIC || kind == LBM_G_EXTRAP)
				L->gpart[g] = part;
			if (kind == LBM_G_ZOU) {
				L->gspec[g] = spec;
				L->gq[g] = gq;
				L->gvel[g] = gvel;
				L->ginit[g] = L->h[0][p];
			}
			L->z[g] = L->z[part];
			L->zi[g] = L->zi[part];
			L->c[g] = kind == LBM_G_SOLID ? -LBM_BIG : L->c[part];
		}
	}
	/* corners: with both pairs periodic, a copy of the opposite interior
	 * corner; with one pair periodic, a copy of the other end of the
	 * non-periodic edge's ghost line (that edge continues periodically;
	 * ckind keeps the kind copied, for the closures and the bookkeeping);
	 * otherwise solid */
	int pwe = L->edges[WB_WEST].kind == WB_EDGE_PERIODIC,
	    pns = L->edges[WB_NORTH].kind == WB_EDGE_PERIODIC;
	for (int q = 0; q < 4; q++) {
		int ci = (q & 1) ? L->nx : -1, cj = (q & 2) ? L->ny : -1;
		int g = PIX(L, ci, cj);
		int part = PIX(L, ci < 0 ? 0 : L->nx - 1, cj < 0 ? 0 : L->ny - 1);
		int kind = LBM_G_SOLID, ck = LBM_G_SOLID;
		if (pwe && pns) {
			part = PIX(L, ci < 0 ? L->nx - 1 : 0, cj < 0 ? L->ny - 1 : 0);
			kind = ck = LBM_G_PERIODIC;
		} else if (pns) { /* copy the W/E ghost at the other row end */
			part = PIX(L, ci, cj < 0 ? L->ny - 1 : 0);
			ck = L->gkind[part];
			kind = ck == LBM_G_SOLID ? LBM_G_SOLID : LBM_G_PERIODIC;
		} else if (pwe) {
			part = PIX(L, ci < 0 ? L->nx - 1 : 0, cj);
			ck = L->gkind[part];
			kind = ck == LBM_G_SOLID ? LBM_G_SOLID : LBM_G_PERIODIC;
		} else {
			/* next to an inflow / level / outflow edge: continue its
			 * ghost line past the wall (a reflected copy), so that the
			 * closure of the edge's end cell is used as computed */
			int gx = PIX(L, ci, cj < 0 ? 0 : L->ny - 1);
			int gy = PIX(L, ci < 0 ? 0 : L->nx - 1, cj);
			int kx = L->gkind[gx], ky = L->gkind[gy];
			if (kx == LBM_G_ZOU || kx == LBM_G_EXTRAP) {
				part = gx, ck = kx, kind = LBM_G_PERIODIC;
				L->cflip[q] = 2;
			} else if (ky == LBM_G_ZOU || ky == LBM_G_EXTRAP) {
				part = gy, ck = ky, kind = LBM_G_PERIODIC;
				L->cflip[q] = 1;
			}
		}
		L->gkind[g] = (uint8_t)kind;
		L->ckind[q] = (uint8_t)ck;
		L->gpart[g] = part;
		L->z[g] = L->z[part];
		L->zi[g] = L->zi[part];
		L->c[g] = kind == LBM_G_SOLID ? -LBM_BIG : L->c[part];
	}
	(void)r;
}

/* Value cell p receives in direction a after streaming, in integer
 * units, using only interior sources (ghost sources count as walls; a
 * closed link bounces p's own back): for the closures. */
static int32_t pull_interior_int(const struct lbm *L, int p, int a)
{
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	if (a == 0)
		return A[0][p];
	int y = p - lbm_cx[a] - lbm_cy[a] * L->W;
	int real = !is_ghost(L, y) || L->gkind[y] == LBM_G_PERIODIC ||
		   L->gkind[y] == LBM_G_MIRROR;
	if (real &&
	    link_open(hA[p], L->z[p], L->c[p], hA[y], L->z[y], L->c[y],
		      (float)L->p.h_dry))
		return A[a][y];
	return A[lbm_opp[a]][p];
}

/* pull_interior_int in metres (the closures' float arithmetic) */
static float pull_interior(const struct lbm *L, int p, int a)
{
	return (float)pull_interior_int(L, p, a) * (float)L->unit;
}

double lbm_ramp(const struct lbm *L)
{
	if (L->ramp_time <= 0 || L->time >= L->ramp_time)
		return 1.0;
	/* smoothstep: no jump in the rate of change at either end */
	double x = L->time / L->ramp_time;
	return x * x * (3 - 2 * x);
}

/* *p = v, storing only when the bits differ: the ghost passes write both
 * ends of every row, and a store of the +0 a fresh page reads would back
 * that page with memory (field_alloc). */
static inline void put32(int32_t *p, int32_t v)
{
	if (*p != v)
		*p = v;
}

static inline void putf(float *p, float v)
{
	uint32_t a, b;
	memcpy(&a, p, 4);
	memcpy(&b, &v, 4);
	if (a != b)
		*p = v;
}

/* The integer bed transfer the kernel adds on the link x -> x + c_a at
 * the depths hA: lbm_bed_int where the link is open, else 0 (and 0
 * toward a corner ghost, whose depth the same ghost pass writes). */
static int32_t bed_open(const struct lbm *L, const float *hA, int x, int a)
{
	const int y = x + lbm_cx[a] + lbm_cy[a] * L->W;
	if (y < 0 || (size_t)y >= L->ncell)
		return 0;
	const int i = y % L->W, j = y / L->W;
	if ((i == 0 || i == L->nx + 1) && (j == 0 || j == L->H - 1))
		return 0;
	if (!link_open(hA[x], L->z[x], L->c[x], hA[y], L->z[y], L->c[y],
		       (float)L->p.h_dry))
		return 0;
	return lbm_bed_int(L, hA, x, y, a);
}

/* An outflow ghost g (zero gradient) holds the populations of an
 * interior cell p, population a copied from population b = flip(a) of p
 * (flip 1 reflects x, 2 y: the corners). Each carries the bed transfer
 * of p's own link b, not of g's link a into the interior: on a sloping
 * bed, still water at an open edge moved (an ocean over real bathymetry
 * ran at 40 m/s from its open edges). Swap them for the populations
 * that enter the interior, so that a resting p gives a resting ghost
 * exactly. Both at the depths hb at which the kernel computed the
 * copied one (lbm.h bed_lvl; the ghost's own there is p's: the fill
 * that stored it). Only where the water stands level across both links
 * (lbm_level: the same integer surface, or a dry end): the copy
 * continues p's depth down the slope of p's own links, which is right
 * for water running down a slope across the edge (MacDonald's
 * supercritical channel choked into a jump with the ghost's own, flat,
 * links; rain running off hillslopes no longer settled). */
static void extrap_bed(struct lbm *L, int32_t *const *A, const float *hb,
		       int g, int p, int flip)
{
	for (int a = 1; a < LBM_Q; a++) {
		if (interior_nb(L, g, lbm_cx[a], lbm_cy[a]) < 0)
			continue;
		const int b = dir_of(flip == 1 ? -lbm_cx[a] : lbm_cx[a],
				     flip == 2 ? -lbm_cy[a] : lbm_cy[a]);
		const int y = g + lbm_cx[a] + lbm_cy[a] * L->W,
			  q = p + lbm_cx[b] + lbm_cy[b] * L->W;
		if (!lbm_level(L, hb, p, q) || !lbm_level(L, hb, g, y))
			continue;
		const uint32_t v = (uint32_t)A[a][g] +
				   (uint32_t)bed_open(L, hb, g, a) -
				   (uint32_t)bed_open(L, hb, p, b);
		put32(&A[a][g], (int32_t)v);
	}
}

static int sb_use(const struct lbm *L);

/* ---- which edge ghosts a process fills and books ----------------------
 *
 * One process fills every ghost and books every edge ghost. Several
 * (par.h): a ghost row or column cell belongs to the band of its
 * interior row (the north and south ghost rows, and the corners, to the
 * bands of rows 0 and ny - 1). Each rank books (edge_flux) the ghosts of
 * its band only, the books summed over the ranks as integers
 * (lbm_par_exchange: exact, so any cut gives the one process's sums).
 * With LBM_PAR_OWN (lbm_par_setup: the pure LBM, every band three rows
 * at least) a rank also fills only the ghosts that its next steps read,
 * from what its neighbours sent (wb_par_plan: the nearest row whole, the
 * ring columns of the two rows after it):
 *   - the kernel reads the ghosts of the band's rows and of the halo
 *     rows (rows J0 - 1 .. J1; the north / south ghost rows with rows 0
 *     and ny - 1);
 *   - a Zou-He closure of row k writes ghosts of rows k - 1, k, k + 1 and
 *     reads the interior cells of rows k - 1 .. k + 1 next to the edge:
 *     the closures of rows J0 - 2 .. J1 + 1, reading rows J0 - 3 ..
 *     J1 + 2;
 *   - extrap_bed on a ghost of row k reads the depths hb (the other time
 *     buffer) of the ghosts of rows k - 1 .. k + 1, which this rank's own
 *     pass 1 of the previous step wrote: pass 1 runs on rows J0 - 2 ..
 *     J1 + 1;
 *   - the corners, with periodic north and south edges, copy the ghost of
 *     the far end's row after pass 1: rank 0 runs pass 1 on row ny - 1
 *     too, the last rank on row 0 (from the ring rows, exchanged whole).
 * Other ranks' ghosts past those rows are not read; they hold whatever
 * last came in (docs/mpi.md "Edge ghosts by band"). */
struct greach {
	int p1[2];  /* west / east rows [p1[0], p1[1]) of pass 1 */
	int xr;     /* and this row (-1: none) */
	int ex[2];  /* rows of extrap_bed */
	int zh[2];  /* rows of the Zou-He closures */
	int bk[2];  /* rows booked (edge_flux) */
	int n, s;   /* fill the north / south ghost row and its corners */
	int bn, bs; /* book them */
};

static void ghost_reach(const struct lbm *L, struct greach *g)
{
	const int ny = L->ny;
	int J0, J1;
	wb_par_band(L->par, ny, &J0, &J1);
	g->bk[0] = J0;
	g->bk[1] = J1;
	g->bn = J0 == 0;
	g->bs = J1 == ny;
	g->xr = -1;
	if (L->par_mode != LBM_PAR_OWN) {
		g->p1[0] = g->ex[0] = g->zh[0] = 0;
		g->p1[1] = g->ex[1] = g->zh[1] = ny;
		g->n = g->s = 1;
		return;
	}
	g->p1[0] = g->zh[0] = J0 - 2 > 0 ? J0 - 2 : 0;
	g->p1[1] = g->zh[1] = J1 + 2 < ny ? J1 + 2 : ny;
	g->ex[0] = J0 - 1 > 0 ? J0 - 1 : 0;
	g->ex[1] = J1 + 1 < ny ? J1 + 1 : ny;
	g->n = g->bn;
	g->s = g->bs;
	if (L->edges[WB_NORTH].kind == WB_EDGE_PERIODIC && g->n != g->s) {
		const int x = g->n ? ny - 1 : 0;
		g->xr = x >= g->p1[0] && x < g->p1[1] ? -1 : x;
	}
}

/* Cells [*k0, *k1) of edge s: rows r of the west and east edges; all of
 * the north (south) edge when n (so), else none. */
static void edge_span(const struct lbm *L, int s, const int r[2],
		      int n, int so, int *k0, int *k1)
{
	*k0 = 0;
	if (s == WB_WEST || s == WB_EAST) {
		*k0 = r[0];
		*k1 = r[1];
	} else {
		*k1 = (s == WB_NORTH ? n : so) ? L->nx : 0;
	}
}

/* The interior block beside segment q of edge s (lbm.h sb_gs). */
static int gseg_block(const struct lbm *L, int s, int q)
{
	switch (s) {
	case WB_WEST:
		return q * L->sbx;
	case WB_EAST:
		return q * L->sbx + L->sbx - 1;
	case WB_NORTH:
		return q;
	default:
		return (L->sby - 1) * L->sbx + q;
	}
}

/* Whether the rows of the block beside segment q of edge s lie in this
 * process's band (where its block flags are its own step's). */
static int gseg_mine(const struct lbm *L, int s, int q, int J0, int J1)
{
	const int by = gseg_block(L, s, q) / L->sbx;
	const int r0 = by * LBM_SB,
		  r1 = r0 + LBM_SB < L->ny ? r0 + LBM_SB : L->ny;
	return r0 >= J0 && r1 <= J1;
}

/* The block-sparse step: which ghost segments the passes of
 * lbm_fill_ghosts would leave as they are, so that it skips them. A
 * segment of walls (mirror ghosts) copies the interior cells beside it:
 * if its ghosts hold +0 bits (sb_gz) and the block beside it does
 * (sb_zero), it copies zeros onto zeros. An open-edge segment's ghosts
 * copy the same cells and then add bed transfers, which read the depths
 * hb of the cells within one cell of its ghosts and of the cells beside
 * them (lbm.c extrap_bed): with those depths +0 too (the blocks beside
 * the segment and its two neighbours, and their ghosts, in the buffer of
 * hb) every transfer is 0 (lbm_bi with no depth; a closed link gives 0).
 * Inflow, level and periodic ghosts, and their neighbours, which the
 * closures write into, are never skipped. Several processes: only beside
 * blocks of this band (the flags of other rows are not this process's). */
static void gseg_skips(struct lbm *L)
{
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	const int c = L->cur, hb = L->bed_lvl ? !L->cur : L->cur;
	for (int s = 0; s < 4; s++) {
		const int q0 = L->sb_gs[s], nq = L->sb_gs[s + 1] - q0;
		for (int q = 0; q < nq; q++) {
			int ok = L->sb_gk[q0 + q] < 2 && L->sb_gz[c][q0 + q] &&
				 gseg_mine(L, s, q, J0, J1) &&
				 L->sb_zero[c][gseg_block(L, s, q)];
			for (int t = q - 1; ok && L->sb_gk[q0 + q] == 1 && t <= q + 1;
			     t++)
				if (t >= 0 && t < nq)
					ok = gseg_mine(L, s, t, J0, J1) &&
					     L->sb_zero[hb][gseg_block(L, s, t)] &&
					     L->sb_gz[hb][q0 + t];
			L->sb_gsk[q0 + q] = (uint8_t)ok;
		}
	}
}

/* After the passes: which segments' ghosts hold only +0 bits now (those
 * skipped still do); only the segments the passes reached (g: the rest
 * are read by no one here, their flags not at all). */
static void gseg_zero(struct lbm *L, const struct greach *g)
{
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	for (int s = 0; s < 4; s++) {
		int e0, e1;
		edge_span(L, s, g->p1, g->n, g->s, &e0, &e1);
		if (e1 <= e0)
			continue;
		for (int q = L->sb_gs[s] + e0 / LBM_SB;
		     q <= L->sb_gs[s] + (e1 - 1) / LBM_SB; q++) {
			if (L->sb_gsk[q])
				continue;
			const int k0 = (q - L->sb_gs[s]) * LBM_SB;
			const int k1 = k0 + LBM_SB < edge_len(L, s) ?
				k0 + LBM_SB : edge_len(L, s);
			uint32_t acc = 0;
			for (int k = k0; k < k1; k++) {
				int gc, p, nxn, nyn;
				lbm_edge_cell(L, s, k, &gc, &p, &nxn, &nyn);
				for (int a = 0; a < LBM_Q; a++)
					acc |= (uint32_t)A[a][gc];
				uint32_t b;
				memcpy(&b, &hA[gc], 4);
				acc |= b;
			}
			L->sb_gz[L->cur][q] = (uint8_t)(acc == 0);
		}
	}
}

/* Pass 1 of lbm_fill_ghosts on cell k of edge s: copies, mirrors and
 * ghost depths. */
static void ghost_pass1(struct lbm *L, int s, int k, double ramp)
{
	int32_t *const *A = L->f[L->cur];
	float *hA = L->h[L->cur];
	int g, p, nxn, nyn;
	lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
	int part = L->gpart[g];
	switch (L->gkind[g]) {
	case LBM_G_PERIODIC:
	case LBM_G_EXTRAP:
		for (int a = 0; a < LBM_Q; a++)
			put32(&A[a][g], A[a][part]);
		putf(&hA[g], hA[part]);
		break;
	case LBM_G_MIRROR:
		for (int a = 0; a < LBM_Q; a++) {
			int cx = lbm_cx[a], cy = lbm_cy[a];
			if (nxn)
				cx = -cx;
			else
				cy = -cy;
			put32(&A[a][g], A[dir_of(cx, cy)][p]);
		}
		putf(&hA[g], hA[p]);
		break;
	case LBM_G_ZOU: {
		float hs = (float)(L->ginit[g] +
				   (L->gspec[g] - L->ginit[g]) * ramp);
		putf(&hA[g], MAXF(hA[p], hs));
		break;
	}
	default:
		break;
	}
}

void lbm_fill_ghosts(struct lbm *L)
{
	int32_t *const *A = L->f[L->cur];
	const float inv = (float)(1.0 / L->unit);
	float *hA = L->h[L->cur];
	const double ramp = lbm_ramp(L);
	const float e = (float)L->p.e;
	/* the depths of the bed transfers in f[cur] (lbm.h bed_lvl) */
	const float *hb = L->h[L->bed_lvl ? !L->cur : L->cur];
	/* several processes: the ghosts this one's rows read (greach) */
	struct greach G;
	ghost_reach(L, &G);
	/* the block-sparse step: segments whose passes would store nothing */
	const uint8_t *skip = NULL;
	if (sb_use(L) && L->sb_valid && L->sb_gsk) {
		gseg_skips(L);
		skip = L->sb_gsk;
	}
	/* pass 1: copies, mirrors and ghost depths */
	for (int s = 0; s < 4; s++) {
		int k0, k1;
		edge_span(L, s, G.p1, G.n, G.s, &k0, &k1);
		for (int k = k0; k < k1; k++) {
			if (skip && skip[L->sb_gs[s] + k / LBM_SB]) {
				k |= LBM_SB - 1; /* the segment's last */
				continue;
			}
			ghost_pass1(L, s, k, ramp);
		}
		if (G.xr >= 0 && (s == WB_WEST || s == WB_EAST))
			ghost_pass1(L, s, G.xr, ramp);
	}
	for (int q = 0; q < 4; q++) {
		int g = PIX(L, (q & 1) ? L->nx : -1, (q & 2) ? L->ny : -1);
		if (!((q & 2) ? G.s : G.n))
			continue;
		if (L->gkind[g] == LBM_G_PERIODIC) {
			for (int a = 0; a < LBM_Q; a++) {
				int cx = lbm_cx[a], cy = lbm_cy[a];
				if (L->cflip[q] == 1)
					cx = -cx;
				else if (L->cflip[q] == 2)
					cy = -cy;
				put32(&A[a][g], A[dir_of(cx, cy)][L->gpart[g]]);
			}
			putf(&hA[g], hA[L->gpart[g]]);
			/* a corner continuing an open edge: its ghost's copy
			 * of the interior corner cell (before the edge's
			 * correction below) */
			if (L->cflip[q] && L->ckind[q] == LBM_G_EXTRAP)
				extrap_bed(L, A, hb, g, L->gpart[L->gpart[g]],
					   L->cflip[q]);
		}
	}
	/* the open edges' populations into the interior (extrap_bed; after
	 * the corners, which copied them as they were) */
	for (int s = 0; s < 4; s++) {
		int k0, k1;
		edge_span(L, s, G.ex, G.n, G.s, &k0, &k1);
		for (int k = k0; k < k1; k++) {
			if (skip && skip[L->sb_gs[s] + k / LBM_SB]) {
				k |= LBM_SB - 1;
				continue;
			}
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			if (L->gkind[g] == LBM_G_EXTRAP)
				extrap_bed(L, A, hb, g, L->gpart[g], 0);
		}
	}
	/* pass 2: the talk's closures (Zou-He type) for inflow and level
	 * edges. With inward normal n, a tangent t and Q = q / e the inward
	 * discharge in depth units:
	 *   f_n     = f_-n + 2Q/3
	 *   f_(n+t) = f_(-n-t) + (f_-t - f_t)/2 + Q/6
	 *   f_(n-t) = f_(-n+t) + (f_t - f_-t)/2 + Q/6
	 * so that h u . n = q and the tangential velocity is zero; Q follows
	 * from the given discharge, from velocity * depth, or from the given
	 * depth h: Q = h - (f_0 + f_t + f_-t) - 2 (f_-n + f_-n+t + f_-n-t). */
	for (int s = 0; s < 4; s++) {
		int k0, k1;
		edge_span(L, s, G.zh, G.n, G.s, &k0, &k1);
		for (int k = k0; k < k1; k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			if (L->gkind[g] != LBM_G_ZOU)
				continue;
			int tx = -nyn, ty = nxn;
			int dn = dir_of(nxn, nyn), dnt = dir_of(nxn + tx, nyn + ty),
			    dnmt = dir_of(nxn - tx, nyn - ty);
			int g1 = p - lbm_cx[dnt] - lbm_cy[dnt] * L->W;
			int g2 = p - lbm_cx[dnmt] - lbm_cy[dnmt] * L->W;
			if (isnan(L->gq[g]) && isnan(L->gvel[g]) &&
			    (ramp >= 1.0 || L->ginit[g] == L->gspec[g])) {
				/* a held depth at its level: in integers, toward
				 * the level's integer depth (lbm_rest_depth), so
				 * that still water is the closure's fixed point
				 * (Q = 0, the ghost's populations the pulled
				 * ones: R_a of the cell's depth) */
				const int64_t T = lbm_rest_depth(L, L->z[p], L->gspec[g]);
				const int32_t F0 = pull_interior_int(L, p, 0),
					      Ft = pull_interior_int(L, p, dir_of(tx, ty)),
					      Fmt = pull_interior_int(L, p, dir_of(-tx, -ty)),
					      Fmn = pull_interior_int(L, p, dir_of(-nxn, -nyn)),
					      Fmnt = pull_interior_int(L, p, dir_of(-nxn + tx, -nyn + ty)),
					      Fmnmt = pull_interior_int(L, p, dir_of(-nxn - tx, -nyn - ty));
				const int64_t kn = (int64_t)F0 + Ft + Fmt +
						   2 * ((int64_t)Fmn + Fmnt + Fmnmt);
				const float Q = (float)(T - kn), dtq = (float)(Fmt - Ft);
				put32(&A[dn][g], Fmn + fx_round(2 * Q / 3));
				put32(&A[dnt][g1], Fmnmt + fx_round(dtq / 2 + Q / 6));
				put32(&A[dnmt][g2], Fmnt + fx_round(-dtq / 2 + Q / 6));
				continue;
			}
			float f0 = pull_interior(L, p, 0);
			float ft = pull_interior(L, p, dir_of(tx, ty));
			float fmt = pull_interior(L, p, dir_of(-tx, -ty));
			float fmn = pull_interior(L, p, dir_of(-nxn, -nyn));
			float fmnt = pull_interior(L, p, dir_of(-nxn + tx, -nyn + ty));
			float fmnmt = pull_interior(L, p, dir_of(-nxn - tx, -nyn - ty));
			float known = f0 + ft + fmt + 2 * (fmn + fmnt + fmnmt);
			float Q;
			if (!isnan(L->gq[g])) {
				Q = (float)(L->gq[g] * ramp) / e;
			} else if (!isnan(L->gvel[g])) {
				float un = (float)(L->gvel[g] * ramp) / e;
				Q = known / (1 - un) * un;
			} else {
				float hs = (float)(L->ginit[g] +
						   (L->gspec[g] - L->ginit[g]) * ramp);
				Q = hs - known;
			}
			put32(&A[dn][g], fx_round((fmn + 2 * Q / 3) * inv));
			put32(&A[dnt][g1], fx_round((fmnmt + (fmt - ft) / 2 + Q / 6) * inv));
			put32(&A[dnmt][g2], fx_round((fmnt + (ft - fmt) / 2 + Q / 6) * inv));
		}
	}
	if (skip)
		gseg_zero(L, &G);
}

/* Integer bed-slope transfer of the link from x to y in direction a, as
 * the kernel rounds it (same float operations in the same order). */
static int32_t bed_int(const struct lbm *L, int x, int y, int a)
{
	return lbm_bed_int(L, L->h[L->cur], x, y, a);
}

/* Mass crossing the ZOU / EXTRAP ghosts this step, in integer units, with
 * the kernel's own link rule; the bed-slope transfers of boundary cells
 * toward these ghosts have no partner cell and count as inflow. Serial,
 * fixed order. */
static void edge_flux(const struct lbm *L, int64_t *in, int64_t *out)
{
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	int64_t si = 0, so = 0;
	/* ghost g's net exchange this step (populations can be negative, so
	 * each ghost's net inflow counts as in, a net outflow as out) */
#define GHOST_NET(g)                                                         \
	do {                                                                 \
		int64_t net = 0;                                             \
		for (int a = 1; a < LBM_Q; a++) {                            \
			int y = interior_nb(L, g, lbm_cx[a], lbm_cy[a]);     \
			if (y < 0 || !link_open(hA[g], L->z[g], L->c[g], hA[y], \
						L->z[y], L->c[y], hd))       \
				continue;                                    \
			net += (int64_t)A[a][g] - A[lbm_opp[a]][y] +         \
			       bed_int(L, y, g, lbm_opp[a]);                 \
		}                                                            \
		if (net > 0)                                                 \
			si += net;                                           \
		else                                                         \
			so -= net;                                           \
	} while (0)
	/* several processes: the ghosts of this band (greach) */
	struct greach G;
	ghost_reach(L, &G);
	for (int s = 0; s < 4; s++) {
		int k0, k1;
		edge_span(L, s, G.bk, G.bn, G.bs, &k0, &k1);
		for (int k = k0; k < k1; k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			if (L->gkind[g] == LBM_G_ZOU || L->gkind[g] == LBM_G_EXTRAP)
				GHOST_NET(g);
		}
	}
	for (int q = 0; q < 4; q++) {
		int g = PIX(L, (q & 1) ? L->nx : -1, (q & 2) ? L->ny : -1);
		if (!((q & 2) ? G.bs : G.bn))
			continue;
		if (L->gkind[g] != LBM_G_SOLID &&
		    (L->ckind[q] == LBM_G_ZOU || L->ckind[q] == LBM_G_EXTRAP))
			GHOST_NET(g);
	}
#undef GHOST_NET
	*in = si;
	*out = so;
}

/* Initial state at rest, exactly the kernel's fixed point (lbm.h
 * lbm_bi): direction a >= 1 holds the rounded rest equilibrium R_a(Hs) of
 * the cell's integer depth plus the integer bed transfer of its open
 * link (and the rounded velocity part of the equilibrium where the start
 * has a velocity), the rest population the remainder of the integer depth
 * H (rest_depth) plus those transfers. */
static void init_state(struct lbm *L, const struct wb_raster *r)
{
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry;
	const float inv = (float)(1.0 / L->unit);
	const float ghk = (float)(L->p.g / (L->p.e * L->p.e));
	const float K = L->kp.K, kinv = L->kp.kinv;
	/* each cell writes its own populations: rows in any order */
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 16)
	for (int j = 0; j < L->ny; j++)
		for (int i = 0; i < L->nx; i++) {
			int n = PIX(L, i, j);
			size_t k = i + (size_t)j * L->nx;
			float dfq[LBM_Q] = { 0 };
			/* a start with velocity (r->u0/v0: coarse-to-fine,
			 * src/bake.c), in lattice units */
			if (r->u0 && r->v0 && hA[n] > hd) {
				float U = (float)(r->u0[k] / L->p.e);
				float V = (float)(r->v0[k] / L->p.e);
				float q0[LBM_Q];
				lbm_feq(hA[n], U, V, ghk * hA[n], dfq);
				lbm_feq(hA[n], 0.0f, 0.0f, ghk * hA[n], q0);
				for (int a = 1; a < LBM_Q; a++)
					dfq[a] -= q0[a];
			}
			const int32_t Hs = lbm_hs(hA[n], kinv);
			int64_t tot = lbm_rest_depth(L, L->z[n], init_depth(r, k)),
				out = 0;
			for (int a = 1; a < LBM_Q; a++) {
				int y = n + lbm_cx[a] + lbm_cy[a] * L->W;
				int32_t b = 0;
				if (link_open(hA[n], L->z[n], L->c[n], hA[y], L->z[y],
					      L->c[y], hd))
					b = bed_int(L, n, y, a);
				tot += b;
				int32_t fa = lbm_rq(K, !(a & 1), Hs) +
					     fx_round(dfq[a] * inv) + b;
				if (fa) /* dry cells: left unwritten (field_alloc) */
					A[a][n] = fa;
				out += fa;
			}
			if (tot - out)
				A[0][n] = (int32_t)(tot - out);
		}
}

/* bed-slope weights w_a g / (6 e^2), as the kernel's Gai, Gdi, and over
 * the unit */
static void set_bed_weights(struct lbm *L)
{
	for (int a = 1; a < LBM_Q; a++)
		L->kG[a] = lbm_w[a] == 1.0f ? (float)(L->p.g / (6 * L->p.e * L->p.e)) :
			   0.25f * (float)(L->p.g / (6 * L->p.e * L->p.e));
	for (int a = 1; a < LBM_Q; a++)
		L->kGi[a] = L->kG[a] * L->kinv;
}

enum wb_status lbm_init(struct lbm *L, const struct wb_raster *r,
			const struct wb_sim *sim, int threads,
			struct wb_diags *d)
{
	return lbm_init_layout(L, r, sim, threads, 1, d);
}

/* The kernel's fast-path blocks (lbm.h blk, bdz) of every interior row,
 * rows in parallel (each block is written by one item). */
static void fast_blocks(struct lbm *L)
{
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 16)
	for (int jj = 1; jj <= L->ny; jj++)
		for (int b = 0; b * 8 + 8 <= L->nx; b++) {
			int ok = 1, flat = 1;
			float dzm = 0;
			for (int dj = -1; dj <= 1; dj++)
				for (int di = 0; di < 10; di++)
					ok &= L->c[(size_t)(jj + dj) * L->W + b * 8 + di] >=
					      LBM_BIG;
			const float hpos = (float)(LBM_POS * L->p.h_dry);
			for (int di = 1; di <= 8; di++) {
				size_t n = (size_t)jj * L->W + b * 8 + di;
				for (int a = 1; a < LBM_Q; a++) {
					float dz = L->z[n + lbm_cx[a] + lbm_cy[a] * L->W] -
						   L->z[n];
					flat &= dz <= hpos && -dz <= hpos;
					dzm = MAXF(dzm, MAXF(dz, -dz));
				}
			}
			L->blk[(size_t)jj * L->nb + b] = (uint8_t)(ok ? 1 + flat : 0);
			L->bdz[(size_t)jj * L->nb + b] = dzm;
		}
}

enum wb_status lbm_init_layout(struct lbm *L, const struct wb_raster *r,
			       const struct wb_sim *sim, int threads, int align,
			       struct wb_diags *d)
{
	memset(L, 0, sizeof(*L));
	enum wb_status st = lbm_params_choose(r, sim, &L->p, d);
	if (st != WB_OK)
		return st;
	for (int s = 0; s < 4; s += 2) {
		int pa = r->edges[s].kind == WB_EDGE_PERIODIC,
		    pb = r->edges[s + 1].kind == WB_EDGE_PERIODIC;
		if (pa != pb)
			return wb_fail(d, WB_EINPUT, NULL,
				       "lbm: periodic edges come in pairs (west/east, north/south)");
	}
	L->unit = 16.0 * L->p.h_deep / 2147483648.0;
	L->kinv = (float)(1.0 / L->unit);
	L->h_deep0 = L->p.h_deep;
	set_bed_weights(L);
	L->nx = r->nx;
	L->ny = r->ny;
	L->W = align ? (r->nx + 2 + 15) / 16 * 16 : r->nx + 2;
	L->H = r->ny + 2;
	L->ncell = (size_t)L->W * L->H;
	L->origin[0] = r->origin[0];
	L->origin[1] = r->origin[1];
	memcpy(L->edges, r->edges, sizeof(L->edges));
#ifdef _OPENMP
	L->threads = threads > 0 ? threads : omp_get_num_procs();
#else
	L->threads = 1;
#endif
	/* a fork/join per step costs more than a small grid's work: one
	 * thread per 64k cells at most (results do not depend on it) */
	long maxt = ((long)r->nx * r->ny) / 65536 + 1;
	if (L->threads > maxt)
		L->threads = (int)maxt;
	if (L->threads < 1)
		L->threads = 1;
	int fail = 0;
	for (int b = 0; b < 2; b++) {
		for (int a = 0; a < LBM_Q; a++)
			fail |= !(L->f[b][a] = field_alloc(L->ncell, align,
							   &L->mem[b * LBM_Q + a]));
		fail |= !(L->h[b] = field_alloc(L->ncell, align,
						&L->mem[2 * LBM_Q + b]));
	}
	fail |= !(L->z = field_alloc(L->ncell, align, &L->mem[2 * LBM_Q + 2]));
	fail |= !(L->c = field_alloc(L->ncell, align, &L->mem[2 * LBM_Q + 3]));
	fail |= !(L->zi = field_alloc(L->ncell, align, &L->mem[2 * LBM_Q + 4]));
	fail |= !(L->gkind = calloc(L->ncell, 1));
	fail |= !(L->gpart = calloc(L->ncell, sizeof(int32_t)));
	fail |= !(L->gspec = calloc(L->ncell, sizeof(float)));
	fail |= !(L->gq = calloc(L->ncell, sizeof(float)));
	fail |= !(L->gvel = calloc(L->ncell, sizeof(float)));
	fail |= !(L->ginit = calloc(L->ncell, sizeof(float)));
	fail |= !(L->sp_row = calloc((size_t)L->ny + 1, sizeof(int)));
	fail |= !(L->row_clamp = calloc((size_t)L->H, sizeof(long)));
	L->cnx = (L->nx + WB_CLAMP_BLOCK - 1) / WB_CLAMP_BLOCK;
	fail |= !(L->cmap = calloc((size_t)L->ny * L->cnx, sizeof(uint32_t)));
	fail |= !(L->row_bad = calloc((size_t)L->H, sizeof(int)));
	fail |= !(L->row_in = calloc((size_t)L->H, sizeof(int64_t)));
	fail |= !(L->row_out = calloc((size_t)L->H, sizeof(int64_t)));
	if (fail) {
		lbm_release(L);
		return wb_fail(d, WB_EIO, NULL,
			       "lbm: out of memory for a %dx%d grid", r->nx, r->ny);
	}
	const float hd = (float)L->p.h_dry;
	/* per cell and independent: rows in parallel (a row notes its first
	 * bad cell, the first row with one is reported, as a scan in order
	 * would); nsp is an integer sum */
	int nsp = 0;
	int *bad = calloc((size_t)r->ny, sizeof(int));
	if (!bad) {
		lbm_release(L);
		return wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
	}
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 16) \
	reduction(+ : nsp)
	for (int j = 0; j < r->ny; j++)
		for (int i = 0; i < r->nx; i++) {
			size_t k = i + (size_t)j * r->nx;
			int n = PIX(L, i, j);
			float z = r->z[k];
			float h = init_depth(r, k);
			uint8_t fl = r->flags ? r->flags[k] : 0;
			if (!(h >= 0) || !isfinite(z)) {
				bad[j] = i + 1;
				break;
			}
			float bot = r->block_bot ? r->block_bot[k] : INFINITY;
			float c = LBM_BIG;
			if (bot < LBM_BIG)
				c = bot <= z + hd ? -LBM_BIG : bot;
			L->z[n] = z;
			L->c[n] = c;
			/* exact rest (lbm.h lbm_bi): the integer depth H is the
			 * rounded surface less the rounded bed; the depth is
			 * stored as the kernel stores it, (float)H unit, and
			 * the bed potential is the rounded surface less the
			 * integer depth that stored depth stands for, so that
			 * water at rest has one integer surface */
			int64_t Hn = lbm_rest_depth(L, z, h);
			float hs = (float)(int32_t)Hn * (float)L->unit;
			int64_t zi = llrint((double)z / L->unit) +
				     (Hn - lbm_hs(hs, L->kinv));
			if (zi)
				L->zi[n] = (int32_t)(uint32_t)(uint64_t)zi;
			h = hs;
			if (h != 0 || signbit(h)) /* a fresh page reads +0: dry cells stay
					unbacked (field_alloc) */
				L->h[0][n] = L->h[1][n] = h;
			float src = r->src ? r->src[k] : 0.0f;
			float mk = r->mod_k ? r->mod_k[k] : 0.0f;
			if (src != 0 || (fl & (WB_CELL_FIXED | WB_CELL_SINK_ALL)) ||
			    mk > 0)
				nsp++;
		}
	for (int j = 0; j < r->ny; j++)
		if (bad[j]) {
			int i = bad[j] - 1;
			free(bad);
			lbm_release(L);
			return wb_fail(d, WB_EINPUT, NULL,
				       "lbm: cell (%d, %d) has a non-finite terrain or depth", i, j);
		}
	free(bad);
	L->sp = calloc((size_t)nsp + 1, sizeof(*L->sp));
	if (!L->sp) {
		lbm_release(L);
		return wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
	}
	for (int j = 0; j < r->ny; j++) {
		L->sp_row[j] = L->nsp;
		for (int i = 0; i < r->nx; i++) {
			size_t k = i + (size_t)j * r->nx;
			uint8_t fl = r->flags ? r->flags[k] : 0;
			float src = r->src ? r->src[k] : 0.0f;
			float mk = r->mod_k ? r->mod_k[k] : 0.0f;
			if (!(src != 0 || (fl & (WB_CELL_FIXED | WB_CELL_SINK_ALL)) ||
			      mk > 0))
				continue;
			struct lbm_special *q = &L->sp[L->nsp++];
			q->n = PIX(L, i, j);
			q->flags = fl & (WB_CELL_FIXED | WB_CELL_SINK_ALL);
			q->src = src;
			q->level = r->fixed_level ? r->fixed_level[k] : 0;
			q->mu = r->mod_u ? r->mod_u[k] : 0;
			q->mv = r->mod_v ? r->mod_v[k] : 0;
			q->mk = mk > 0 ? mk : 0;
		}
	}
	L->sp_row[r->ny] = L->nsp;
	init_ghosts(L, r);
	/* 8-cell blocks whose 3 x 10 stencil is open sky (no blocker, solid
	 * or solid ghost) and whose elevations are small enough that z + h
	 * separates h_pos from h_dry: candidates for the kernel's fast path
	 * (blk 2: no bed step of the block's links above h_pos); bdz: the
	 * largest bed step |z_y - z_x| of the block's links (the step clamp
	 * of the bed term is a no-op where the water is deeper) */
	L->nb = (L->nx + 7) / 8;
	L->blk = calloc((size_t)L->H * L->nb, 1);
	L->bdz = calloc((size_t)L->H * L->nb, sizeof(float));
	if (!L->blk || !L->bdz) {
		lbm_release(L);
		return wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
	}
	float zmax = 0; /* a maximum: the same in any order */
#pragma omp parallel for num_threads(L->threads) reduction(max : zmax)
	for (size_t q = 0; q < L->ncell; q++)
		zmax = MAXF(zmax, fabsf(L->z[q]));
	if (zmax < 8192)
		fast_blocks(L);
	L->cur = 0;
	/* a given lattice speed too small for the water the start holds:
	 * re-chosen before the populations are set (set at the given speed,
	 * the rest populations of deep water, g h / e^2 times its depth,
	 * overflowed their integers below about 1.6 m/s for 4.7 m deep
	 * water, and the run diverged at its first step) */
	if (L->p.h_deep > LBM_H_RESCALE * lbm_depth_for(&L->p))
		rescale_params(L, L->p.h_deep, d);
	lbm_kernel_params(L, &L->kp);
	lbm_fill_ghosts(L); /* ghost depths for the link rule */
	init_state(L, r);
	if (sb_alloc(L) != 0) {
		lbm_release(L);
		return wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
	}
	/* the hybrid (lbm_fv.c); the OpenCL back end runs it on the host
	 * on rows read back from the device (cl.c, cl_fv_*) */
	L->hybrid = sim->lbm_hybrid != 0;
	L->fv_on = LBM_FV_ON;
	L->fv_off = LBM_FV_OFF;
	L->fv_margin = LBM_FV_MARGIN;
	if (L->hybrid) {
		if (lbm_fv_alloc(L) != 0) {
			lbm_release(L);
			return wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
		}
		for (size_t q = 0; q < L->ncell; q++)
			if (L->c[q] < LBM_BIG)
				L->fvf[q] = 4; /* blockers, solids: never FV */
		for (int q = 0; q < L->nsp; q++) /* held levels, drains and
						      modifiers stay LBM */
			if (L->sp[q].flags || L->sp[q].mk > 0)
				L->fvf[L->sp[q].n] = 4;
		lbm_fv_mark(L);
	}
	/* ramp inflow and level edges over four passes of a gravity wave
	 * across the domain (smoothstep): with two, linear, the start-up
	 * surge of the subcritical bump went transcritical over the crest
	 * and the Froude clamp acted on 4320 cell-steps; with four, on none */
	int ramped = 0;
	for (int s = 0; s < 4; s++)
		ramped |= L->edges[s].kind == WB_EDGE_INFLOW ||
			  is_level_edge(&L->edges[s]);
	if (ramped) {
		double len = (double)(L->nx + L->ny) * L->p.dx;
		/* the depth the run was set up for (h_deep0), not the one a
		 * re-chosen lattice speed is chosen for */
		double T = 4 * len / sqrt(L->p.g * L->h_deep0);
		L->ramp_steps = (long)ceil(T / L->p.dt);
		L->ramp_time = L->ramp_steps * L->p.dt;
	}
	return WB_OK;
}

/* ---- the step ---------------------------------------------------------- */

/* The fused step is written with GCC/Clang vector extensions (lbm_kernel.h,
 * 8 cells per vector, or 16 on AVX-512 machines), so that it vectorises
 * whatever the auto-vectoriser decides (the selects would otherwise need
 * -fno-trapping-math). Every lane performs the scalar IEEE operations of
 * the formulas in lbm_kernel.h in the same order (explicit fused
 * multiply-adds only: -ffp-contract=off), so a cell's result does not
 * depend on its lane, on the vector width or on the thread that computes
 * it. */

/* Kernel inputs: arrays addressed as base[n + offset], stride W. */
struct lbm_kin {
	const int32_t *A[LBM_Q];
	const float *hA, *z, *c;
	const int32_t *zi; /* integer bed potential (lbm.zi) */
	const float *fv; /* 1 in cells of the hybrid's FV update, or NULL */
	int W;
	/* the row's clamp map (lbm.cmap), counted per WB_CLAMP_BLOCK cells
	 * from padded index cbase (the row's first interior cell), or NULL */
	uint32_t *cmap;
	int cbase;
};

struct lbm_kout {
	int32_t *B[LBM_Q];
	float *hB;
};

void lbm_kernel_params(const struct lbm *L, struct lbm_kpar *k)
{
	const struct lbm_params *p = &L->p;
	const double un = L->unit;
	memset(k, 0, sizeof(*k));
	k->hd = (float)p->h_dry;
	k->hpos = (float)(LBM_POS * p->h_dry);
	k->hd_u = (float)(p->h_dry / un);
	k->hthin = (float)(LBM_THIN * p->h_dry / un);
	k->hpos_u = (float)(LBM_POS * p->h_dry / un);
	k->hlim_u = (float)(MINF(LBM_H_RESCALE * lbm_depth_for(p),
				 LBM_H_RANGE * L->h_deep0) / un);
	k->ghk = (float)(p->g * un / (p->e * p->e));
	k->umax2 = (float)(LBM_U_MAX * LBM_U_MAX);
	k->fr2 = (float)(p->fr_max * p->fr_max);
	k->kf = (float)(p->g * p->manning * p->manning * p->dx /
			(un * cbrt(un)));
	k->om = (float)p->omega;
	k->om1 = (float)(1.0 - p->omega);
	k->om6 = (float)(p->omega / 6.0);
	k->omh = (float)(p->omega / 2.0);
	k->nom13 = (float)(-(1.0 - p->omega_m) / 3.0);
	k->om1h = (float)((1.0 - p->omega) / 2.0);
	k->omm1h = (float)((1.0 - p->omega_m) / 2.0);
	k->trt = (float)p->omega_m != (float)p->omega;
	k->unit = (float)un;
	k->Gai = L->kGi[1];
	k->Gdi = L->kGi[2];
	k->K = (float)(p->g * un / (6.0 * p->e * p->e));
	k->kinv = L->kinv;
	k->ommh = (float)(p->omega_m / 2.0);
}

/* the vector helpers are static (inlined): the ABI note about passing
 * 32- and 64-byte vectors without AVX (generic builds) does not apply */
#pragma GCC diagnostic ignored "-Wpsabi"

#define LBM_VW 8
#include "lbm_kernel.h"
#undef LBM_VW

/* The 16-lane (AVX-512) kernel: GCC on x86-64 with AVX2 and FMA as the
 * base, chosen at run time where the CPU has AVX-512 F/DQ/BW/VL. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
	defined(__AVX2__) && defined(__FMA__)
#define LBM_HAVE16 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl")
#define LBM_VW 16
#include "lbm_kernel.h"
#undef LBM_VW

#pragma GCC pop_options
#endif

int lbm_kernel_lanes(const struct lbm *L)
{
#ifdef LBM_HAVE16
	if (!L->simd8 && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl"))
		return 16;
#endif
	return 8;
}

/* The fused step on interior columns i0 .. i1 - 1 of padded row jj: i0
 * a multiple of 8, i1 one too or nx (the tail of the row). */
static void kernel_cols(struct lbm *L, int jj, int i0, int i1)
{
	const int W = L->W, nx = i1;
	const struct lbm_kpar k = L->kp;
	struct lbm_kin in;
	struct lbm_kout out;
	for (int a = 0; a < LBM_Q; a++) {
		in.A[a] = L->f[L->cur][a];
		out.B[a] = L->f[!L->cur][a];
	}
	in.hA = L->h[L->cur];
	in.z = L->z;
	in.zi = L->zi;
	in.c = L->c;
	in.fv = L->nfv > 0 ? L->fvm : NULL;
	in.W = W;
	in.cmap = L->cmap + (size_t)(jj - 1) * L->cnx;
	in.cbase = jj * W + 1;
	out.hB = L->h[!L->cur];
	long nclamp = 0;
	int nbad = 0;
	const int n0 = jj * W + 1 + i0;
	const uint8_t *blk = L->blk + (size_t)jj * L->nb + i0 / 8;
	const float *bdz = L->bdz + (size_t)jj * L->nb + i0 / 8;
	const int nfull = (nx - i0) / 8;
#ifdef LBM_HAVE16
	if (lbm_kernel_lanes(L) == 16)
		row16(&in, &out, &k, blk, bdz, nfull, n0, L->no_shortcuts, &nclamp,
		      &nbad);
	else
#endif
		row8(&in, &out, &k, blk, bdz, nfull, n0, L->no_shortcuts, &nclamp,
		     &nbad);
	const int i = nfull * 8; /* from i0 */
	if (i0 + i < nx) {
		/* tail: copy a 3 x 10 window around the last cells and run the
		 * same eight-lane code on it; only valid lanes are stored */
		enum { TW = 10 };
		int32_t tA[LBM_Q][3 * TW], tB[LBM_Q][8], tzi[3 * TW];
		float th_[3 * TW], tz[3 * TW], tc[3 * TW], thB[8];
		const int left = nx - i0 - i;
		for (int r = 0; r < 3; r++)
			for (int q = 0; q < TW; q++) {
				/* columns past the east neighbour repeat it */
				int qq = q < left + 2 ? q : left + 1;
				int src = n0 + i + (r - 1) * W + (qq - 1);
				int dst = r * TW + q;
				for (int a = 0; a < LBM_Q; a++)
					tA[a][dst] = in.A[a][src];
				th_[dst] = in.hA[src];
				tz[dst] = in.z[src];
				tzi[dst] = in.zi[src];
				tc[dst] = in.c[src];
			}
		struct lbm_kin tin;
		struct lbm_kout tout;
		for (int a = 0; a < LBM_Q; a++) {
			tin.A[a] = tA[a];
			tout.B[a] = tB[a];
		}
		tin.hA = th_;
		tin.z = tz;
		tin.zi = tzi;
		tin.c = tc;
		tin.fv = NULL;
		tin.W = TW;
		tin.cmap = NULL; /* counted below, at the row's columns */
		tin.cbase = 0;
		tout.hB = thB;
		vm8 cl = { 0 }, bd = { 0 };
		if (k.trt)
			cell8(&tin, TW + 1, &tout, 0, &k, &cl, &bd, 0, 1);
		else
			cell8(&tin, TW + 1, &tout, 0, &k, &cl, &bd, 0, 0);
		for (int l = 0; l < left; l++) {
			for (int a = 0; a < LBM_Q; a++)
				out.B[a][n0 + i + l] = tB[a][l];
			out.hB[n0 + i + l] = thB[l];
			if (cl[l] != 0 && !(in.fv && in.fv[n0 + i + l] > 0.5f)) {
				nclamp++;
				in.cmap[(i0 + i + l) / WB_CLAMP_BLOCK]++;
			}
			nbad += bd[l] != 0;
		}
	}
	L->row_clamp[jj] += nclamp;
	L->row_bad[jj] += nbad;
}

void lbm_kernel_row(struct lbm *L, int jj)
{
	kernel_cols(L, jj, 0, L->nx);
}

void lbm_kernel_cols(struct lbm *L, int jj, int i0, int i1)
{
	kernel_cols(L, jj, i0, i1);
}
/* Sources, sinks, fixed levels and modifiers of one row, on f[!cur]. */
static void specials_row(struct lbm *L, int j)
{
	int32_t *const *B = L->f[!L->cur];
	const double dt = L->p.dt, e = L->p.e;
	const float ghk = (float)(L->p.g / (e * e));
	const float hd = (float)L->p.h_dry;
	const float un = (float)L->unit, inv = (float)(1.0 / L->unit);
	int64_t in = 0, out = 0;
	long ncl = 0;
	for (int k = L->sp_row[j]; k < L->sp_row[j + 1]; k++) {
		const struct lbm_special *q = &L->sp[k];
		const int n = q->n;
		float f[LBM_Q];
		int64_t tot = 0;
		for (int a = 0; a < LBM_Q; a++) {
			tot += B[a][n];
			f[a] = (float)B[a][n] * un;
		}
		const float hp = (float)tot * un;
		if (q->flags & WB_CELL_SINK_ALL) {
			out += tot;
			for (int a = 0; a < LBM_Q; a++)
				B[a][n] = 0;
			continue;
		}
		int64_t target = tot;
		if (q->mk > 0 && hp > hd) {
			float Mx = 0, My = 0;
			for (int a = 1; a < LBM_Q; a++) {
				Mx += lbm_cx[a] * f[a];
				My += lbm_cy[a] * f[a];
			}
			float U = Mx / hp, V = My / hp;
			float kd = (float)(q->mk * dt), al = kd / (1 + kd);
			float dMx = hp * al * (q->mu / (float)e - U);
			float dMy = hp * al * (q->mv / (float)e - V);
			float mn = 0;
			for (int a = 1; a < LBM_Q; a++) {
				f[a] += lbm_w[a] * (lbm_cx[a] * dMx + lbm_cy[a] * dMy) / 3;
				mn = MINF(mn, f[a]);
			}
			if (mn < 0) { /* positivity, as in the kernel */
				float rmin = 0;
				for (int a = 0; a < LBM_Q; a++)
					rmin = MINF(rmin, f[a] / lbm_q[a]);
				float r = rmin / hp, th = -r / (1 - r);
				for (int a = 0; a < LBM_Q; a++)
					f[a] += th * (hp * lbm_q[a] - f[a]);
				ncl++;
				L->cmap[(size_t)j * L->cnx +
					(n % L->W - 1) / WB_CLAMP_BLOCK]++;
			}
		}
		if (q->src > 0) {
			int64_t add = fx_round((float)(q->src * dt) * inv);
			target += add;
			in += add;
		} else if (q->src < 0 && tot > 0) {
			int64_t rem = fx_round((float)(-q->src * dt) * inv);
			if (rem > tot)
				rem = tot;
			float keep = (float)(1.0 - (double)rem / (double)tot);
			for (int a = 0; a < LBM_Q; a++)
				f[a] *= keep;
			target -= rem;
			out += rem;
		}
		if (q->flags & WB_CELL_FIXED) {
			/* reset to the level at rest, exactly as the initial
			 * state (init_state): R_a of the level's integer depth
			 * plus the integer bed transfers of its open links, as
			 * the kernel computed them for this step (the
			 * neighbours hold the opposite ones), plus the rounded
			 * velocity part of the equilibrium; the velocity from
			 * the momentum less those transfers (the bed's force,
			 * not flow), in integers where nothing else changed
			 * the populations, so that still water has none */
			const float *hA = L->h[L->cur];
			int32_t bi[LBM_Q] = { 0 };
			int64_t mxi = 0, myi = 0;
			float Mx = 0, My = 0, hc = (float)target * un;
			for (int a = 1; a < LBM_Q; a++) {
				int y = n + lbm_cx[a] + lbm_cy[a] * L->W;
				if (link_open(hA[n], L->z[n], L->c[n], hA[y], L->z[y],
					      L->c[y], hd))
					bi[a] = bed_int(L, n, y, a);
				mxi += (int64_t)lbm_cx[a] * ((int64_t)B[a][n] - bi[a]);
				myi += (int64_t)lbm_cy[a] * ((int64_t)B[a][n] - bi[a]);
				Mx += lbm_cx[a] * (f[a] - (float)bi[a] * un);
				My += lbm_cy[a] * (f[a] - (float)bi[a] * un);
			}
			if (!(q->mk > 0 && hp > hd) && !(q->src < 0 && tot > 0)) {
				Mx = (float)mxi * un;
				My = (float)myi * un;
			}
			float hf = MAXF(q->level - L->z[n], 0.0f);
			float U = hc > hd ? Mx / hc : 0.0f;
			float V = hc > hd ? My / hc : 0.0f;
			float q0[LBM_Q];
			lbm_feq(hf, U, V, ghk * hf, f);
			lbm_feq(hf, 0.0f, 0.0f, ghk * hf, q0);
			const int64_t Ht = lbm_rest_depth(L, L->z[n], hf);
			const int32_t Hs = lbm_hs((float)(int32_t)Ht * L->kp.unit,
						  L->kp.kinv);
			int64_t t1 = Ht, rest = 0;
			for (int a = 1; a < LBM_Q; a++) {
				B[a][n] = lbm_rq(L->kp.K, !(a & 1), Hs) +
					  fx_round((f[a] - q0[a]) * inv) + bi[a];
				t1 += bi[a];
				rest += B[a][n];
			}
			B[0][n] = (int32_t)(t1 - rest);
			if (t1 > target)
				in += t1 - target;
			else
				out += target - t1;
			continue;
		}
		int64_t rest = 0;
		for (int a = 1; a < LBM_Q; a++) {
			B[a][n] = fx_round(f[a] * inv);
			rest += B[a][n];
		}
		B[0][n] = (int32_t)(target - rest);
	}
	L->row_in[j + 1] += in;
	L->row_out[j + 1] += out;
	L->row_clamp[j + 1] += ncl;
}

/* ---- block-sparse step -------------------------------------------------
 *
 * The interior is cut into LBM_SB x LBM_SB blocks. A step computes only
 * the blocks of sb_run: those holding a nonzero bit in f[cur] or h[cur]
 * (sb_wet; a block with a special counts as wet), their 8 neighbours
 * (sb_act), and the blocks an inflow or level ghost cell with a nonzero
 * bit touches. Everywhere else the dense step writes zeros: a cell's
 * update reads its own populations, the populations it pulls from its 8
 * neighbours and the depths of its 3 x 3 neighbourhood (z and c only
 * through terms that multiply a depth: the link rule decides between two
 * zeros, the bed transfer is min(max(dz, 0), +0) = 0 either way); with all
 * of those +0 the update is the dry case of lbm_kernel.h (dry8): h = +0,
 * every population 0, no clamp, no bad cell. So a block outside sb_run
 * must hold zeros in f[!cur] and h[!cur] after the step: sb_zero says
 * where a buffer is known to, and the step clears a sleeping block's
 * output once when it is not. Nothing else writes there: specials lie in
 * sb_keep blocks, the hybrid's FV cells lie within LBM_FV_MARGIN <
 * LBM_SB cells of a wet cell (sb_act). Hence both buffers of every block
 * hold the dense values after every step: fields, packs and manifests
 * are the dense bytes. Per-row partials (clamps, bad cells, sources) are
 * integer sums and a sleeping block adds 0 to them. */

static void sb_free(struct lbm *L)
{
	free(L->sb_wet);
	free(L->sb_keep);
	free(L->sb_act);
	free(L->sb_run);
	free(L->sb_was);
	free(L->sb_zero[0]);
	free(L->sb_zero[1]);
	free(L->sb_rw);
	free(L->sb_idle);
	free(L->sb_gk);
	free(L->sb_gz[0]);
	free(L->sb_gz[1]);
	free(L->sb_gsk);
	for (int k = 0; k < 2; k++) {
		free(L->sb_span[k]);
		free(L->sb_nspan[k]);
	}
}

/* Several processes (par.h): each steps the blocks of its band's rows
 * that this rule selects, from the flags of the rows it holds exactly:
 * its band and the halo rows next to it (sb_rw_halo), and, with the
 * hybrid, every other band's rows as lbm_par_hybrid received them
 * (lbm_sb_row_recv). A cell of the band reads only the band and the
 * halo rows, so flags that miss water further away, or that flag a
 * block too many (the kernel then computes its zeros), give the same
 * bytes. */
static int sb_use(const struct lbm *L)
{
	return L->sparse && L->sb_wet;
}

/* The block flags (zeroed: sb_valid 0 makes the first step scan); the
 * specials' blocks are kept. WB_LBM_DENSE=1 selects the dense step. */
int lbm_sparse_default(void)
{
	const char *e = getenv("WB_LBM_DENSE");
	return !(e && e[0] == '1');
}

static int sb_alloc(struct lbm *L)
{
	L->sparse = lbm_sparse_default();
	L->sb_full[0] = 1;
	L->sb_full[1] = L->nx;
	L->sbx = (L->nx + LBM_SB - 1) / LBM_SB;
	L->sby = (L->ny + LBM_SB - 1) / LBM_SB;
	const size_t nb = (size_t)L->sbx * L->sby;
	L->sb_wet = calloc(nb, sizeof(uint16_t));
	L->sb_keep = calloc(nb, 1);
	L->sb_act = calloc(nb, 1);
	L->sb_run = calloc(nb, 1);
	L->sb_was = calloc(nb, 1);
	L->sb_zero[0] = calloc(nb, 1);
	L->sb_zero[1] = calloc(nb, 1);
	L->sb_rw = calloc((size_t)L->H * L->sbx, 1);
	L->sb_idle = calloc((size_t)L->sby, 1);
	int fail = !L->sb_wet || !L->sb_keep || !L->sb_act || !L->sb_run ||
		   !L->sb_was || !L->sb_zero[0] || !L->sb_zero[1] || !L->sb_rw ||
		   !L->sb_idle;
	for (int k = 0; k < 2; k++) {
		L->sb_span[k] = malloc((size_t)L->sby * 2 * LBM_SB_MAXSPAN(L) *
				       sizeof(int32_t));
		L->sb_nspan[k] = calloc((size_t)L->sby, sizeof(int));
		fail |= !L->sb_span[k] || !L->sb_nspan[k];
	}
	if (fail)
		return -1;
	for (int q = 0; q < L->nsp; q++) {
		int i = L->sp[q].n % L->W - 1, j = L->sp[q].n / L->W - 1;
		L->sb_keep[(j / LBM_SB) * L->sbx + i / LBM_SB] = 1;
	}
	/* the edges' ghost segments and what their ghosts do */
	int ns = 0;
	for (int s = 0; s < 4; s++) {
		L->sb_gs[s] = ns;
		ns += (edge_len(L, s) + LBM_SB - 1) / LBM_SB;
	}
	L->sb_gs[4] = ns;
	L->sb_gk = calloc((size_t)ns, 1);
	L->sb_gz[0] = calloc((size_t)ns, 1);
	L->sb_gz[1] = calloc((size_t)ns, 1);
	L->sb_gsk = calloc((size_t)ns, 1);
	if (!L->sb_gk || !L->sb_gz[0] || !L->sb_gz[1] || !L->sb_gsk)
		return -1;
	for (int s = 0; s < 4; s++)
		for (int k = 0; k < edge_len(L, s); k++) {
			int g, p, nxn, nyn;
			lbm_edge_cell(L, s, k, &g, &p, &nxn, &nyn);
			const int kd = L->gkind[g];
			uint8_t *t = &L->sb_gk[L->sb_gs[s] + k / LBM_SB];
			if (kd == LBM_G_ZOU || kd == LBM_G_PERIODIC)
				*t = 2;
			else if (kd == LBM_G_EXTRAP && *t < 1)
				*t = 1;
		}
	/* a closure writes the ghosts next to its own (g1, g2) */
	for (int s = 0; s < 4; s++)
		for (int q = L->sb_gs[s]; q < L->sb_gs[s + 1]; q++)
			if (L->sb_gk[q] == 2)
				for (int t = q - 1; t <= q + 1; t += 2)
					if (t >= L->sb_gs[s] && t < L->sb_gs[s + 1] &&
					    L->sb_gk[t] < 2)
						L->sb_gk[t] = 3; /* 2, not spread */
	for (int q = 0; q < ns; q++)
		L->sb_gk[q] = L->sb_gk[q] == 3 ? 2 : L->sb_gk[q];
	L->sb_valid = 0;
	return 0;
}

/* A nonzero bit in cells n .. n + len - 1 of f, h. */
static int seg_nonzero(int32_t *const *f, const float *h, size_t n, int len)
{
	uint32_t acc = 0;
	for (int a = 0; a < LBM_Q; a++) {
		const int32_t *p = f[a] + n;
		for (int i = 0; i < len; i++)
			acc |= (uint32_t)p[i];
	}
	for (int i = 0; i < len; i++) {
		uint32_t b;
		memcpy(&b, h + n + i, sizeof(b));
		acc |= b;
	}
	return acc != 0;
}

static inline int sb_width(const struct lbm *L, int bx)
{
	int w = L->nx - bx * LBM_SB;
	return w < LBM_SB ? w : LBM_SB;
}

/* Runs of blocks with flag[] set in every block row, as padded columns. */
static void sb_spans(struct lbm *L, const uint8_t *flag, int k)
{
	for (int by = 0; by < L->sby; by++) {
		int32_t *sp = L->sb_span[k] + (size_t)by * 2 * LBM_SB_MAXSPAN(L);
		int ns = 0;
		const uint8_t *f = flag + (size_t)by * L->sbx;
		for (int bx = 0; bx < L->sbx; bx++) {
			if (!f[bx])
				continue;
			if (bx > 0 && f[bx - 1]) {
				sp[2 * ns - 1] += sb_width(L, bx);
				continue;
			}
			sp[2 * ns] = 1 + bx * LBM_SB;
			sp[2 * ns + 1] = bx * LBM_SB + sb_width(L, bx);
			ns++;
		}
		L->sb_nspan[k][by] = ns;
	}
}

/* The border bit of neighbour (dx, dy) that faces a block: its cells
 * within one cell of the block (a column, a row, a corner cell). */
static int sb_facing(int dx, int dy)
{
	static const uint16_t f[3][3] = {
		{ LBM_SB_SE, LBM_SB_S, LBM_SB_SW },
		{ LBM_SB_E, LBM_SB_ANY, LBM_SB_W },
		{ LBM_SB_NE, LBM_SB_N, LBM_SB_NW },
	};
	return f[dy + 1][dx + 1];
}

/* sb_act: blocks with a nonzero bit, or next to a block whose cells
 * facing them hold one (keep blocks count as nonzero everywhere); with
 * the hybrid, every neighbour of such a block (its FV cells reach
 * LBM_FV_MARGIN cells beyond a wet cell, its marks read further). Then
 * its runs. */
static void sb_dilate(struct lbm *L)
{
	const int X = L->sbx, Y = L->sby;
	for (int by = 0; by < Y; by++)
		for (int bx = 0; bx < X; bx++) {
			int a = 0;
			for (int dy = -1; dy <= 1; dy++)
				for (int dx = -1; dx <= 1; dx++) {
					int x = bx + dx, y = by + dy;
					if (x < 0 || x >= X || y < 0 || y >= Y)
						continue;
					int w = L->sb_wet[y * X + x] |
						(L->sb_keep[y * X + x] ? LBM_SB_ALL : 0);
					a |= L->hybrid ? w : w & sb_facing(dx, dy);
				}
			L->sb_act[by * X + bx] = (uint8_t)(a != 0);
		}
	sb_spans(L, L->sb_act, 1);
}

/* Every flag from f[cur], h[cur] (set-up, after a rescale): the last
 * marking scanned every block, the other buffer is not known to be 0. */
static void sb_scan(struct lbm *L)
{
	const int X = L->sbx, Y = L->sby;
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 1)
	for (int by = 0; by < Y; by++)
		for (int bx = 0; bx < X; bx++) {
			int w = 0;
			for (int j = by * LBM_SB; j < L->ny && j < (by + 1) * LBM_SB && !w;
			     j++)
				w = seg_nonzero(A, hA, (size_t)PIX(L, bx * LBM_SB, j),
						sb_width(L, bx));
			/* its border: as if every border cell held water */
			L->sb_wet[by * X + bx] = (uint16_t)(w ? LBM_SB_ALL : 0);
			L->sb_zero[L->cur][by * X + bx] = (uint8_t)!w;
			L->sb_zero[!L->cur][by * X + bx] = 0;
			L->sb_was[by * X + bx] = 1;
		}
	/* the ghosts: not known (a rescale, rows moved between ranks) */
	memset(L->sb_gz[0], 0, (size_t)L->sb_gs[4]);
	memset(L->sb_gz[1], 0, (size_t)L->sb_gs[4]);
	sb_dilate(L);
	L->sb_valid = 1;
}

/* sb_run: sb_act and the blocks within one cell of a ghost cell of f[cur]
 * / h[cur] with a nonzero bit (filled by lbm_fill_ghosts); its runs. */
static void sb_run_set(struct lbm *L)
{
	const int X = L->sbx, W = L->W, nx = L->nx, ny = L->ny;
	const size_t nb = (size_t)X * L->sby;
	memcpy(L->sb_run, L->sb_act, nb);
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const uint8_t *gz = L->sb_gz[L->cur]; /* segments known +0 */
	/* the ghosts of the rows the kernel reads: the band's and its
	   halo's (several processes; the others' are not this one's) */
	int J0, J1;
	wb_par_band(L->par, ny, &J0, &J1);
	for (int gj = J0; gj <= J1 + 1; gj++) {
		const int edge = gj == 0 || gj == ny + 1;
		for (int gi = 0; gi <= nx + 1; gi += edge ? 1 : nx + 1) {
			const int corner = (gi == 0 || gi == nx + 1) && edge;
			const int q = corner ? -1 :
				edge ? L->sb_gs[gj ? WB_SOUTH : WB_NORTH] + (gi - 1) / LBM_SB :
				       L->sb_gs[gi ? WB_EAST : WB_WEST] + (gj - 1) / LBM_SB;
			if ((q >= 0 && gz[q]) ||
			    !seg_nonzero(A, hA, (size_t)gi + (size_t)gj * W, 1))
				continue;
			for (int j = gj - 1; j <= gj + 1; j++)
				for (int i = gi - 1; i <= gi + 1; i++)
					if (i >= 1 && i <= nx && j >= 1 && j <= ny)
						L->sb_run[((j - 1) / LBM_SB) * X +
							  (i - 1) / LBM_SB] = 1;
		}
	}
	sb_spans(L, L->sb_run, 0);
}

int lbm_mark_spans(const struct lbm *L, int jj, const int32_t **sp)
{
	if (!sb_use(L) || !L->sb_valid) {
		*sp = L->sb_full;
		return 1;
	}
	const int by = (jj - 1) / LBM_SB;
	*sp = L->sb_span[1] + (size_t)by * 2 * LBM_SB_MAXSPAN(L);
	return L->sb_nspan[1][by];
}

/* Whether sb_after reads the output flags (sb_rw) of block row by for
 * blocks it did not step: several processes, the block rows that rows
 * came in to by the exchange (see there). */
static int sb_recv_row(const struct lbm *L, int by, int J0, int J1)
{
	if (!L->par)
		return 0;
	if (L->hybrid)
		return by * LBM_SB < J0 || (by + 1) * LBM_SB > J1;
	return (J0 > 0 && by == (J0 - 1) / LBM_SB) ||
	       (J1 < L->ny && by == J1 / LBM_SB);
}

/* sb_idle for this step (after sb_run_set): a block row with no block
 * to step, none whose output may hold a nonzero bit (sb_zero), and no
 * flags that sb_after reads. sb_row's loop over its blocks would then
 * store only output flags that nothing reads before the row is stepped
 * again (and then each is stored anew), so it is skipped: on a world
 * that is mostly dry land that loop, over every row and every block of
 * it, was a cost of the whole map each step. */
static void sb_idle_set(struct lbm *L)
{
	const int X = L->sbx;
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	const uint8_t *zb = L->sb_zero[!L->cur];
	for (int by = 0; by < L->sby; by++) {
		int busy = L->sb_nspan[0][by] > 0 || sb_recv_row(L, by, J0, J1);
		const uint8_t *run = L->sb_run + (size_t)by * X,
			      *z = zb + (size_t)by * X;
		for (int bx = 0; bx < X && !busy; bx++)
			busy = run[bx] || !z[bx];
		L->sb_idle[by] = (uint8_t)!busy;
	}
}

/* The sparse step of padded row jj: the kernel on the runs of sb_run,
 * which blocks' output has a nonzero bit (sb_rw), and zeros in the
 * sleeping blocks whose output buffer may hold something else. */
static void sb_row(struct lbm *L, int jj)
{
	const int by = (jj - 1) / LBM_SB, X = L->sbx;
	if (L->sb_idle[by])
		return;
	const int32_t *sp = L->sb_span[0] + (size_t)by * 2 * LBM_SB_MAXSPAN(L);
	for (int s = 0; s < L->sb_nspan[0][by]; s++)
		kernel_cols(L, jj, sp[2 * s] - 1, sp[2 * s + 1]);
	int32_t *const *B = L->f[!L->cur];
	float *hB = L->h[!L->cur];
	const uint8_t *run = L->sb_run + (size_t)by * X;
	const uint8_t *zb = L->sb_zero[!L->cur] + (size_t)by * X;
	uint8_t *rw = L->sb_rw + (size_t)jj * X;
	for (int bx = 0; bx < X; bx++) {
		const size_t n = (size_t)jj * L->W + 1 + (size_t)bx * LBM_SB;
		const int w = sb_width(L, bx);
		if (run[bx]) {
			rw[bx] = (uint8_t)(seg_nonzero(B, hB, n, w) ?
				 1 | (seg_nonzero(B, hB, n, 1) ? 2 : 0) |
				 (seg_nonzero(B, hB, n + w - 1, 1) ? 4 : 0) : 0);
			continue;
		}
		rw[bx] = 0;
		/* nothing to clear where it reads zeros already: a store of
		   them would back dry land's pages (field_alloc) */
		if (zb[bx] || !seg_nonzero(B, hB, n, w))
			continue;
		for (int a = 0; a < LBM_Q; a++)
			memset(B[a] + n, 0, (size_t)w * sizeof(int32_t));
		memset(hB + n, 0, (size_t)w * sizeof(float));
	}
}

/* After the sparse step (kernel, specials, FV update), before the swap:
 * the flags of f[!cur], which becomes f[cur]. */
static void sb_after(struct lbm *L)
{
	const int X = L->sbx, Y = L->sby, nb = X * Y;
	uint8_t *zb = L->sb_zero[!L->cur];
	/* several processes: rows other processes computed came in by the
	 * exchange (the halo rows; with the hybrid every row), whether or
	 * not this one ran their blocks: such blocks take their flags from
	 * sb_rw too (sb_rw_halo, lbm_sb_row_recv; zero in the rows of this
	 * band that were not run) */
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	for (int b = 0; b < nb; b++) {
		const int by0 = b / X;
		const int recv = sb_recv_row(L, by0, J0, J1);
		if (!L->sb_run[b] && !recv) {
			L->sb_wet[b] = 0;
			zb[b] = 1;
			continue;
		}
		const int by = b / X, bx = b % X;
		const int j0 = by * LBM_SB,
			  j1 = (by + 1) * LBM_SB < L->ny ? (by + 1) * LBM_SB : L->ny;
		const uint8_t *rw = L->sb_rw + bx;
		int any = 0, wc = 0, ec = 0;
		for (int j = j0; j < j1; j++) {
			const int r = rw[(size_t)(j + 1) * X];
			any |= r & 1;
			wc |= r & 2;
			ec |= r & 4;
		}
		const int rn = rw[(size_t)(j0 + 1) * X], rs = rw[(size_t)j1 * X];
		int w = (any ? LBM_SB_ANY : 0) | (wc ? LBM_SB_W : 0) |
			(ec ? LBM_SB_E : 0) | (rn & 1 ? LBM_SB_N : 0) |
			(rs & 1 ? LBM_SB_S : 0) | (rn & 2 ? LBM_SB_NW : 0) |
			(rn & 4 ? LBM_SB_NE : 0) | (rs & 2 ? LBM_SB_SW : 0) |
			(rs & 4 ? LBM_SB_SE : 0);
		if (L->sb_keep[b]) /* the specials wrote after the kernel */
			w = LBM_SB_ALL;
		L->sb_wet[b] = (uint16_t)w;
		zb[b] = (uint8_t)!w;
	}
	for (int k = 0; k < L->nfv; k++) { /* the FV update wrote there */
		const int n = L->fvl[k];
		const int b = ((n / L->W - 1) / LBM_SB) * X + (n % L->W - 1) / LBM_SB;
		L->sb_wet[b] = LBM_SB_ALL;
		zb[b] = 0;
	}
}

/* Several processes: the output flags (sb_rw) of interior row j from
 * f[!cur], h[!cur] as they are (a halo row just received). */
static void sb_rw_scan(struct lbm *L, int j)
{
	int32_t *const *B = L->f[!L->cur];
	const float *hB = L->h[!L->cur];
	uint8_t *rw = L->sb_rw + (size_t)(j + 1) * L->sbx;
	for (int bx = 0; bx < L->sbx; bx++) {
		const size_t n = (size_t)PIX(L, bx * LBM_SB, j);
		const int w = sb_width(L, bx);
		rw[bx] = (uint8_t)(seg_nonzero(B, hB, n, w) ?
			 1 | (seg_nonzero(B, hB, n, 1) ? 2 : 0) |
			 (seg_nonzero(B, hB, n + w - 1, 1) ? 4 : 0) : 0);
	}
}

/* The halo rows of this process's band (lbm_par_exchange wrote them). */
static void sb_rw_halo(struct lbm *L)
{
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	if (J0 > 0)
		sb_rw_scan(L, J0 - 1);
	if (J1 < L->ny)
		sb_rw_scan(L, J1);
}

void lbm_sb_row_recv(struct lbm *L, int j, long c0, long c1)
{
	if (!sb_use(L))
		return;
	uint8_t *rw = L->sb_rw + (size_t)(j + 1) * L->sbx;
	if (c0 < 0) {
		memset(rw, 0, (size_t)L->sbx);
		return;
	}
	long a = c0 > 1 ? c0 : 1, b = c1 < L->nx + 1 ? c1 : L->nx + 1;
	if (a >= b)
		return;
	for (long bx = (a - 1) / LBM_SB; bx <= (b - 2) / LBM_SB; bx++)
		rw[bx] = 7; /* nonzero somewhere, maybe at both ends */
}

/* After the swap: the next step's sb_act, and the hybrid's marks of the
 * blocks that leave it set to the dense values there (0: no wet cell
 * within LBM_SB cells; cells that can never be FV keep their flag). */
static void sb_next(struct lbm *L)
{
	const int X = L->sbx, nb = X * L->sby;
	sb_dilate(L);
	for (int b = 0; b < nb; b++) {
		if (L->sb_was[b] && !L->sb_act[b] && L->fvf) {
			const int by = b / X, bx = b % X, w = sb_width(L, bx);
			for (int j = by * LBM_SB; j < L->ny && j < (by + 1) * LBM_SB;
			     j++) {
				const size_t n = (size_t)PIX(L, bx * LBM_SB, j);
				for (int i = 0; i < w; i++) {
					if (!(L->fvf[n + i] & 4))
						L->fvf[n + i] = 0;
					L->fvh[n + i] = 0;
				}
			}
		}
		L->sb_was[b] = L->sb_act[b];
	}
}

/* Deepest and shallowest water of f[!cur] (the step just computed), m. */
static void depth_range(const struct lbm *L, double *hmax, double *hmin)
{
	int32_t *const *B = L->f[!L->cur];
	int64_t mx = 0, mn = 0;
	for (int j = 0; j < L->ny; j++) {
		if (!L->row_bad[j + 1])
			continue;
		for (int i = 0; i < L->nx; i++) {
			int n = PIX(L, i, j);
			int64_t t = 0;
			for (int a = 0; a < LBM_Q; a++)
				t += B[a][n];
			mx = t > mx ? t : mx;
			mn = t < mn ? t : mn;
		}
	}
	*hmax = (double)mx * L->unit;
	*hmin = (double)mn * L->unit;
}

static void locate_bad(const struct lbm *L, struct wb_diags *d)
{
	int32_t *const *B = L->f[!L->cur];
	for (int j = 0; j < L->ny; j++) {
		if (!L->row_bad[j + 1])
			continue;
		int ib = 0;
		double worst = -1;
		for (int i = 0; i < L->nx; i++) {
			int n = PIX(L, i, j);
			double hp = 0;
			for (int a = 0; a < LBM_Q; a++)
				hp += fabs((double)B[a][n]);
			if (hp > worst)
				worst = hp, ib = i;
		}
		wb_diag_add(d, WB_SEV_ERROR, NULL, NULL, 0, 0,
			    "lbm: diverged at step %ld (t = %.3f s): cell (%d, %d) at x = %.2f m, y = %.2f m: depth not finite or beyond +-%g m, the range the run was set up for (%g x the %g m deepest water expected; e = %g m/s, tau = %g)",
			    L->step + 1, L->time + L->p.dt, ib, j,
			    L->origin[0] + (ib + 0.5) * L->p.dx,
			    L->origin[1] + (j + 0.5) * L->p.dx,
			    LBM_H_RANGE * L->h_deep0, LBM_H_RANGE, L->h_deep0,
			    L->p.e, L->p.tau);
		return;
	}
	wb_diag_add(d, WB_SEV_ERROR, NULL, NULL, 0, 0,
		    "lbm: diverged at step %ld", L->step + 1);
}

enum wb_status lbm_step(struct lbm *L, long nsteps, struct wb_diags *d)
{
	lbm_kernel_params(L, &L->kp); /* L->p may have been changed */
	if (L->par && !L->par_mode && lbm_par_setup(L))
		return wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
	for (long s = 0; s < nsteps; s++) {
		lbm_fill_ghosts(L);
		int64_t ein, eout;
		edge_flux(L, &ein, &eout);
		if (L->par) { /* this band's, summed by lbm_par_exchange */
			L->par_edge[0] = ein;
			L->par_edge[1] = eout;
			ein = eout = 0;
		}
		const int H = L->H;
		/* several processes (par.h): this one's rows, then the
		   exchange of what the rows wrote */
		int J0, J1;
		wb_par_band(L->par, L->ny, &J0, &J1);
		const int sparse = sb_use(L);
		if (sparse) {
			if (!L->sb_valid)
				sb_scan(L);
			sb_run_set(L);
			sb_idle_set(L);
			for (int by = 0; by < L->sby; by++) {
				const int32_t *sp = L->sb_span[0] +
					(size_t)by * 2 * LBM_SB_MAXSPAN(L);
				const int rows = L->ny - by * LBM_SB < LBM_SB ?
					L->ny - by * LBM_SB : LBM_SB;
				/* this process's rows of the block row */
				int r0 = by * LBM_SB, r1 = by * LBM_SB + rows;
				r0 = r0 > J0 ? r0 : J0;
				r1 = r1 < J1 ? r1 : J1;
				if (r1 <= r0)
					continue;
				for (int k = 0; k < L->sb_nspan[0][by]; k++)
					L->sb_cells += (long)(sp[2 * k + 1] - sp[2 * k] + 1) *
						       (r1 - r0);
			}
		} else {
			L->sb_cells += (long)L->nx * (J1 - J0);
		}
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
		for (int jj = J0 + 1; jj < J1 + 1; jj++) {
			L->row_clamp[jj] = 0;
			L->row_bad[jj] = 0;
			L->row_in[jj] = 0;
			L->row_out[jj] = 0;
			if (sparse)
				sb_row(L, jj);
			else
				lbm_kernel_row(L, jj);
			if (!L->nfv)
				specials_row(L, jj - 1);
		}
		int64_t eadj = 0;
		if (L->par && L->hybrid && lbm_par_hybrid(L))
			return wb_fail(d, WB_EIO, NULL,
				       "lbm: step %ld: exchange between processes failed",
				       L->step + 1);
		lbm_fv_update(L, &eadj);
		if (L->par && L->hybrid && lbm_fv_share(L, &eadj))
			return wb_fail(d, WB_EIO, NULL,
				       "lbm: step %ld: exchange between processes failed",
				       L->step + 1);
		if (L->nfv) { /* sources and sinks of FV cells act on its result */
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
			for (int jj = 1; jj < H - 1; jj++)
				specials_row(L, jj - 1);
		}
		if (L->par && (lbm_par_exchange(L) || L->par->failed))
			return wb_fail(d, WB_EIO, NULL,
				       "lbm: step %ld: exchange between processes failed",
				       L->step + 1);
		if (L->par && sparse)
			sb_rw_halo(L);
		int bad = 0;
		int64_t in = ein + (eadj > 0 ? eadj : 0),
			out = eout + (eadj < 0 ? -eadj : 0);
		if (L->par) { /* every band's, summed (lbm_par_exchange) */
			L->clamped += L->par_sum[0];
			in += L->par_sum[1] + L->par_sum[4];
			out += L->par_sum[2] + L->par_sum[5];
			bad = L->par_sum[3] != 0;
		}
		for (int jj = 1; jj < H - 1 && !L->par; jj++) {
			L->clamped += L->row_clamp[jj];
			bad |= L->row_bad[jj] != 0;
			in += L->row_in[jj];
			out += L->row_out[jj];
		}
		double hmax = 0, hmin = 0;
		if (bad) {
			/* deeper than the lattice speed was chosen for: fine
			 * unless it left the fixed-point range (diverged) */
			depth_range(L, &hmax, &hmin);
			double lim = 0.999 * LBM_H_RANGE * L->h_deep0;
			if (!(hmax < lim) || !(hmin > -lim)) {
				locate_bad(L, d);
				return WB_ESIM;
			}
		}
		L->vol_in += in;
		L->vol_out += out;
		if (sparse)
			sb_after(L);
		L->cur = !L->cur;
		L->bed_lvl = 1;
		L->step++;
		L->time += L->p.dt;
		if (sparse)
			sb_next(L);
		lbm_fv_mark(L);
		if (bad && hmax > LBM_H_RESCALE * lbm_depth_for(&L->p) * 0.999) {
			lbm_rescale(L, hmax, d);
			lbm_kernel_params(L, &L->kp);
			L->sb_valid = 0;
		}
	}
	return WB_OK;
}

double lbm_depth_for(const struct lbm_params *p)
{
	return LBM_GH_RATIO * p->e * p->e / p->g;
}

long lbm_clamp_where(const uint32_t *map, int nx, int ny,
		     struct wb_solve_report *rep)
{
	const int B = WB_CLAMP_BLOCK, cnx = (nx + B - 1) / B;
	const int cny = (ny + B - 1) / B;
	long total = 0, blocks = 0, most = 0;
	int bx0 = cnx, bx1 = -1, by0 = cny, by1 = -1, mx = 0, my = 0;
	for (int by = 0; by < cny; by++)
		for (int bx = 0; bx < cnx; bx++) {
			long n = 0;
			for (int j = by * B; j < ny && j < (by + 1) * B; j++)
				n += map[(size_t)j * cnx + bx];
			if (!n)
				continue;
			total += n;
			blocks++;
			bx0 = bx < bx0 ? bx : bx0;
			bx1 = bx > bx1 ? bx : bx1;
			by0 = by < by0 ? by : by0;
			by1 = by > by1 ? by : by1;
			if (n > most) {
				most = n;
				mx = bx;
				my = by;
			}
		}
	rep->clamp_blocks = blocks;
	rep->clamp_most_n = most;
	if (blocks) {
		const int box[4] = { bx0 * B, (bx1 + 1) * B, by0 * B, (by1 + 1) * B };
		const int hot[4] = { mx * B, (mx + 1) * B, my * B, (my + 1) * B };
		for (int k = 0; k < 4; k++) {
			const int lim = k < 2 ? nx : ny;
			rep->clamp_box[k] = box[k] < lim ? box[k] : lim;
			rep->clamp_most[k] = hot[k] < lim ? hot[k] : lim;
		}
	} else {
		memset(rep->clamp_box, 0, sizeof(rep->clamp_box));
		memset(rep->clamp_most, 0, sizeof(rep->clamp_most));
	}
	return total;
}

void lbm_fv_report(const struct lbm *L, struct wb_solve_report *rep,
		   struct wb_diags *d)
{
	rep->fv_capped = L->fv_capped;
	rep->fv_cfl = L->fv_cfl;
	if (L->fv_capped > 0)
		wb_diag_add(d, WB_SEV_WARNING, NULL, NULL, 0, 0,
			    "lbm: in %ld of %ld steps the hybrid's finite-volume update needed more than its %d sub-steps ((|u| + c) dt / dx up to %.3g against %g per sub-step) and ran beyond its stability limit: flow that fast there (thin films on steep slopes) is not resolved and the bake is slow; the SWE solver (--solver swe) resolves it",
			    L->fv_capped, L->step, LBM_FV_MAX_SUB, L->fv_cfl,
			    LBM_FV_CFL);
	/* most of the bake in the FV update (rain over a whole DEM): the
	 * SWE solver's step costs a fraction of it (docs/lbm.md "Real
	 * elevation models": jacksboro under rain, 99.9 % FV, about 50x) */
	const double cs = (double)L->step * L->nx * L->ny;
	if (L->hybrid && cs > 0 && (double)L->fv_cells > 0.5 * cs)
		wb_diag_add(d, WB_SEV_NOTE, NULL, NULL, 0, 0,
			    "lbm: most of this bake (%.3g %% of the cell-steps) ran as the hybrid's finite-volume update, whose step costs many times the SWE solver's (about 50x on the jacksboro DEM under rain, docs/lbm.md \"Real elevation models\"); the SWE solver (--solver swe) bakes such a scene faster",
			    100.0 * (double)L->fv_cells / cs);
	rep->fv_friction_first = L->fv_ff;
	rep->fv_ff_speed = L->fv_ff_u;
	if (L->fv_ff > 0)
		wb_diag_add(d, WB_SEV_WARNING, NULL, NULL, 0, 0,
			    "lbm: %ld finite-volume cell-steps of the hybrid read a speed above the lattice speed %.4g m/s (up to %.3g m/s), faster than the terrain's slopes can drive water; their Manning friction was applied before the step's transport instead of after it (docs/lbm.md \"Real elevation models\"): thin films beside changing deep water (the rounding of the populations' bed transfers); the SWE solver (--solver swe) has none",
			    L->fv_ff, L->p.e, L->fv_ff_u);
}

/* lbm_rescale's new lattice speed for water hmax deep, and what follows
 * from it (dt, tau, the bed weights, the ramp's steps), with its warning;
 * the populations are the caller's. */
static void rescale_params(struct lbm *L, double hmax, struct wb_diags *d)
{
	struct lbm_params *p = &L->p;
	const double e0 = p->e, nu0 = p->nu, hd0 = lbm_depth_for(p);
	double e1 = MAXF(sqrt(p->g * 1.5 * hmax / LBM_GH_RATIO), 1.25 * e0);
	p->h_deep = e1 * e1 * LBM_GH_RATIO / p->g; /* what e1 is chosen for */
	params_set_e(p, e1, p->dx);
	p->e_why = LBM_E_RESCALED;
	set_bed_weights(L);
	/* the ramp ends at the same simulated time */
	if (L->ramp_time > L->time)
		L->ramp_steps = L->step + (long)ceil((L->ramp_time - L->time) / p->dt);
	L->rescales++;
	wb_diag_add(d, WB_SEV_WARNING, NULL, NULL, 0, 0,
		    "lbm: water %.3g m deep at step %ld (t = %.3f s) outgrew the lattice speed %.4g m/s (chosen for %.3g m); continuing with %.4g m/s (dt %.3g s, tau %.4f, viscosity %g m^2/s%s)",
		    hmax, L->step, L->time, e0, hd0,
		    e1, p->dt, p->tau, p->nu,
		    p->nu > nu0 * 1.0001 ? ", raised: tau at its floor" : "");
}

void lbm_rescale(struct lbm *L, double hmax, struct wb_diags *d)
{
	struct lbm_params *p = &L->p;
	const double e0 = p->e, tau0 = p->tau;
	L->sb_valid = 0; /* every cell changes: the sparse step rescans */
	rescale_params(L, hmax, d);
	const double e1 = p->e;
	/* non-equilibrium part: it carries the viscous stress
	 * (1 - 1/(2 tau)) e^2 sum c c f_neq, kept across the change */
	const float sne = (float)((e0 * e0 * (1 - 0.5 / tau0)) /
				  (e1 * e1 * (1 - 0.5 / p->tau)));
	const float r = (float)(e0 / e1), un = (float)L->unit,
		    inv = (float)(1.0 / L->unit);
	const float gk0 = (float)(p->g / (e0 * e0)), gk1 = (float)(p->g / (e1 * e1));
	const float hthin = (float)(LBM_THIN * p->h_dry);
	int32_t *const *A = L->f[L->cur];
	for (int j = 0; j < L->ny; j++)
		for (int i = 0; i < L->nx; i++) {
			int n = PIX(L, i, j);
			int64_t tot = 0;
			float f[LBM_Q], h = 0, Mx = 0, My = 0;
			for (int a = 0; a < LBM_Q; a++) {
				tot += A[a][n];
				f[a] = (float)A[a][n] * un;
			}
			if (tot == 0)
				continue;
			for (int a = 1; a < LBM_Q; a++) {
				Mx += lbm_cx[a] * f[a];
				My += lbm_cy[a] * f[a];
			}
			h = (float)tot * un;
			float hh = MAXF(h, 0.0f);
			float U = Mx / MAXF(h, hthin), V = My / MAXF(h, hthin);
			float q0[LBM_Q], q1[LBM_Q];
			lbm_feq(hh, U, V, gk0 * hh, q0);
			lbm_feq(hh, U * r, V * r, gk1 * hh, q1);
			int64_t out = 0;
			for (int a = 1; a < LBM_Q; a++) {
				A[a][n] = fx_round((q1[a] + sne * (f[a] - q0[a])) * inv);
				out += A[a][n];
			}
			A[0][n] = (int32_t)(tot - out);
		}
}

/* ---- macroscopic fields ------------------------------------------------ */

/* lbm_macro of interior columns i0 .. i1 - 1 of row j (0-based), the
 * ghosts filled, before the specials' values. */
static void macro_cols(struct lbm *L, int j, int i0, int i1, float *hout,
		       float *uout, float *vout)
{
	int32_t *const *A = L->f[L->cur];
	const float *hA = L->h[L->cur];
	const float hd = (float)L->p.h_dry, e = (float)L->p.e;
	const float un = (float)L->unit;
	const float ghk = (float)(L->p.g / (L->p.e * L->p.e));
	const float umax2 = (float)(LBM_U_MAX * LBM_U_MAX);
	const float fr2 = (float)(L->p.fr_max * L->p.fr_max);
	{
		for (int i = i0; i < i1; i++) {
			int n = PIX(L, i, j);
			/* exact integer moments, each rounded once (a float
			 * sum of the populations in metres was off by a few
			 * ulps: 1.9e-6 m in 8 m of still water) */
			int64_t hi = 0, xi = 0, yi = 0;
			for (int a = 0; a < LBM_Q; a++) {
				int64_t f;
				if (a == 0) {
					f = A[0][n];
				} else {
					int y = n - lbm_cx[a] - lbm_cy[a] * L->W;
					int o = link_open(hA[n], L->z[n], L->c[n], hA[y],
							  L->z[y], L->c[y], hd);
					f = o ? A[a][y] : A[lbm_opp[a]][n];
				}
				hi += f;
				xi += lbm_cx[a] * f;
				yi += lbm_cy[a] * f;
			}
			const float h = (float)((double)hi * (double)un),
				    Mx = (float)((double)xi * (double)un),
				    My = (float)((double)yi * (double)un);
			float inv = 1.0f / MAXF(h, (float)(LBM_THIN * L->p.h_dry));
			float U = Mx * inv, V = My * inv;
			float sp2 = U * U + V * V;
			float lim2 = MINF(umax2, fr2 * ghk * h);
			float sc = sp2 > lim2 ? sqrtf(lim2 / sp2) : 1.0f;
			if (!(h > hd))
				sc = 0;
			size_t k = i + (size_t)j * L->nx;
			if (L->nfv > 0 && L->fvix[n] >= 0) {
				/* a cell of the FV update: its own state */
				float fh, fu, fv;
				lbm_fv_state(L, n, &fh, &fu, &fv);
				if (hout)
					hout[k] = fh;
				if (uout)
					uout[k] = fu;
				if (vout)
					vout[k] = fv;
				continue;
			}
			if (hout)
				hout[k] = MAXF(h, 0.0f);
			if (uout)
				uout[k] = sc * U * e;
			if (vout)
				vout[k] = sc * V * e;
		}
	}
}

/* Held levels and drains show their state after the step's specials. */
static void macro_specials(const struct lbm *L, float *hout, float *uout,
			   float *vout)
{
	for (int q = 0; q < L->nsp; q++) {
		const struct lbm_special *sp = &L->sp[q];
		int i = sp->n % L->W - 1, j = sp->n / L->W - 1;
		size_t k = i + (size_t)j * L->nx;
		if (sp->flags & WB_CELL_SINK_ALL) {
			if (hout)
				hout[k] = 0;
			if (uout)
				uout[k] = 0;
			if (vout)
				vout[k] = 0;
		} else if ((sp->flags & WB_CELL_FIXED) && hout) {
			hout[k] = MAXF(sp->level - L->z[sp->n], 0.0f);
		}
	}
}

void lbm_macro(struct lbm *L, float *hout, float *uout, float *vout)
{
	lbm_fill_ghosts(L);
	int J0, J1; /* several processes: this one's rows (par.h) */
	wb_par_band(L->par, L->ny, &J0, &J1);
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
	for (int j = J0; j < J1; j++)
		macro_cols(L, j, 0, L->nx, hout, uout, vout);
	macro_specials(L, hout, uout, vout);
}

/* One sample of the window mean: h, u, v = lbm_macro, added to sh, su,
 * sv. Sparse: only over the blocks the next step would run (sb_run with
 * the ghosts just filled); elsewhere lbm_macro gives +0 (no water within
 * one cell: h = max(+0, +0), u = 0 (+0 U) e with U = +0 / h_thin), and
 * adding +0 to a sum that started at +0 leaves it as it is (it cannot
 * be -0), so sh, su, sv are the dense sums bit for bit; h, u, v hold
 * stale values there, which the caller does not read. */
static void sample_add(struct lbm *L, float *h, float *u, float *v,
		       float *sh, float *su, float *sv)
{
	if (!sb_use(L) || !L->sb_valid) {
		lbm_macro(L, h, u, v);
		/* several processes: this one's rows (lbm_macro computed
		   only those), so that a rank backs its band's pages only */
		int J0, J1;
		wb_par_band(L->par, L->ny, &J0, &J1);
		const size_t n = (size_t)L->nx * J1;
		for (size_t q = (size_t)L->nx * J0; q < n; q++) {
			sh[q] += h[q];
			su[q] += u[q];
			sv[q] += v[q];
		}
		return;
	}
	lbm_fill_ghosts(L);
	sb_run_set(L);
	const int M = 2 * LBM_SB_MAXSPAN(L);
	int J0, J1; /* several processes: this one's rows, as above */
	wb_par_band(L->par, L->ny, &J0, &J1);
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
	for (int j = J0; j < J1; j++) {
		const int by = j / LBM_SB;
		const int32_t *sp = L->sb_span[0] + (size_t)by * M;
		for (int s = 0; s < L->sb_nspan[0][by]; s++)
			macro_cols(L, j, sp[2 * s] - 1, sp[2 * s + 1], h, u, v);
	}
	macro_specials(L, h, u, v);
#pragma omp parallel for num_threads(L->threads) schedule(dynamic, 8)
	for (int j = J0; j < J1; j++) {
		const int by = j / LBM_SB;
		const int32_t *sp = L->sb_span[0] + (size_t)by * M;
		for (int s = 0; s < L->sb_nspan[0][by]; s++)
			for (size_t q = (size_t)j * L->nx + sp[2 * s] - 1;
			     q < (size_t)j * L->nx + sp[2 * s + 1]; q++) {
				sh[q] += h[q];
				su[q] += u[q];
				sv[q] += v[q];
			}
	}
}

int64_t lbm_mass(const struct lbm *L)
{
	int32_t *const *A = L->f[L->cur];
	int64_t v = 0;
	int J0, J1; /* several processes: theirs added (exact integers) */
	wb_par_band(L->par, L->ny, &J0, &J1);
	for (int j = J0; j < J1; j++)
		for (int i = 0; i < L->nx; i++) {
			int n = PIX(L, i, j);
			for (int a = 0; a < LBM_Q; a++)
				v += A[a][n];
		}
	return L->par ? (int64_t)wb_par_sum(L->par, v) : v;
}

double lbm_volume(const struct lbm *L)
{
	return (double)lbm_mass(L) * L->unit * L->p.dx * L->p.dx;
}

/* ---- the solver -------------------------------------------------------- */

static double now_s(void)
{
#ifdef _OPENMP
	return omp_get_wtime();
#else
	return 0;
#endif
}

/* Relative change between two window-mean velocity fields in the
 * depth-weighted (kinetic-energy) norm
 *   res = sqrt( sum h |du|^2 / max(sum h |u|^2, LBM_RES_FLOOR^2 sum h) ),
 * h the new window's mean depth, over the cells deeper than h_thin (films
 * do not count: their velocity is not produced). Each cell weighs with its
 * water, as in the kinetic energy: a bank cell 2 cm deep that flickers wet
 * and dry weighs 1/25 of the 0.5 m deep channel beside it. Summed per row,
 * then serially. */
static double rel_change(const struct lbm *L, const float *h, const float *u0,
			 const float *v0, const float *u1, const float *v1)
{
	double num = 0, den = 0, hs = 0;
	const float hthin = (float)(LBM_THIN * L->p.h_dry);
	/* several processes (par.h): each its rows' partials, exchanged,
	   then all added in row order */
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	double *part = L->par ? malloc((size_t)L->ny * 3 * sizeof(double)) : NULL;
	if (L->par && !part) {
		L->par->failed = 1;
		return 0;
	}
	for (int j = J0; j < J1; j++) {
		double rn = 0, rd = 0, rh = 0;
		for (int i = 0; i < L->nx; i++) {
			size_t k = i + (size_t)j * L->nx;
			if (!(h[k] > hthin))
				continue;
			double du = (double)u1[k] - u0[k], dv = (double)v1[k] - v0[k];
			rn += h[k] * (du * du + dv * dv);
			rd += h[k] * ((double)u1[k] * u1[k] + (double)v1[k] * v1[k]);
			rh += h[k];
		}
		if (part) {
			part[3 * j] = rn;
			part[3 * j + 1] = rd;
			part[3 * j + 2] = rh;
			continue;
		}
		num += rn;
		den += rd;
		hs += rh;
	}
	if (part) {
		wb_par_rows(L->par, part, 3 * sizeof(double), 1, 0, 0);
		for (int j = 0; j < L->ny; j++) {
			num += part[3 * j];
			den += part[3 * j + 1];
			hs += part[3 * j + 2];
		}
		free(part);
	}
	den = MAXF(den, LBM_RES_FLOOR * LBM_RES_FLOOR * hs);
	return den > 0 ? sqrt(num / den) : 0;
}

/* Steps between samples of the window mean: the largest divisor of the
 * window that gives at least LBM_SAMPLES samples, or samples every
 * LBM_SAMPLE_MIN steps (a sample costs about one step of a mostly dry
 * grid), whichever is sparser (1 for short windows). */
static long sample_every(long window)
{
	long most = window / LBM_SAMPLES;
	for (long s = most > LBM_SAMPLE_MIN ? most : LBM_SAMPLE_MIN; s > 1; s--)
		if (window % s == 0)
			return s;
	return 1;
}

enum wb_status lbm_solve(const struct wb_raster *r, const struct wb_sim *sim,
			 const struct wb_solve_opts *o, struct wb_state *out,
			 struct wb_solve_report *rep, struct wb_diags *d)
{
	return lbm_solve_hybrid(r, sim, o, out, rep, d, sim->lbm_hybrid);
}

/* Several processes, the pure LBM: this rank never reads the rows of the
 * other bands past its halo (the kernel reads one row beyond the band,
 * the edge conditions the ring columns of the two rows after it, or,
 * with LBM_PAR_ALL, the whole boundary ring, which the exchange keeps up
 * to date; docs/mpi.md), yet lbm_init wrote the initial water, the bed
 * and the wall heights of every row. Give the pages of those rows back
 * (they read +0 again); with LBM_PAR_ALL keeping the ring: its columns
 * of those rows are put back where they are nonzero. So a rank's f, h, z
 * and c stay backed in its band (and halo) only. */
static void par_trim(struct lbm *L)
{
	int J0, J1;
	wb_par_band(L->par, L->ny, &J0, &J1);
	/* padded rows kept: the ring rows 0 .. 2, ny - 1 .. ny + 1 and the
	   band with two rows each side (three: LBM_PAR_OWN, which reads the
	   ring columns of the third) */
	const int own = L->par_mode == LBM_PAR_OWN;
	const long pg = sysconf(_SC_PAGESIZE);
	const int cols[6] = { 0, 1, 2, L->nx - 1, L->nx, L->nx + 1 };
	int runs[2][2] = { { 3, J0 - 1 - own }, { J1 + 3 + own, L->ny - 1 } };
	/* the populations and depths of both buffers, the bed z and the
	   wall heights c (read through the same cells) */
	enum { NA = 2 * (LBM_Q + 1) + 3 };
	char *arr[NA];
	int na = 0;
	for (int b = 0; b < 2; b++) {
		for (int q = 0; q < LBM_Q; q++)
			arr[na++] = (char *)L->f[b][q];
		arr[na++] = (char *)L->h[b];
	}
	arr[na++] = (char *)L->z;
	arr[na++] = (char *)L->c;
	arr[na++] = (char *)L->zi;
	float *keep = malloc((size_t)L->H * 6 * sizeof(float));
	if (!keep || pg <= 0) {
		free(keep);
		return; /* then the pages stay: only memory, not bytes */
	}
	for (int x = 0; x < na; x++) {
		char *base = arr[x];
		float *kp = keep;
		for (int k = 0; k < 2; k++) {
			const int a = runs[k][0], e = runs[k][1];
			if (e <= a)
				continue;
			for (int jj = a; jj < e; jj++)
				for (int c = 0; c < 6; c++)
					memcpy(&kp[(size_t)jj * 6 + c],
					       base + ((size_t)jj * L->W + cols[c]) * 4, 4);
			uintptr_t lo = (uintptr_t)(base + (size_t)a * L->W * 4),
				  hi = (uintptr_t)(base + (size_t)e * L->W * 4);
			lo = (lo + (uintptr_t)pg - 1) / (uintptr_t)pg * (uintptr_t)pg;
			hi = hi / (uintptr_t)pg * (uintptr_t)pg;
			if (hi > lo)
				madvise((void *)lo, hi - lo, MADV_DONTNEED);
			/* the page-aligned ends kept their bytes; the ring
			   columns back where they were nonzero */
			for (int jj = a; jj < e && !own; jj++)
				for (int c = 0; c < 6; c++) {
					char *at = base + ((size_t)jj * L->W + cols[c]) * 4;
					if (memcmp(at, &kp[(size_t)jj * 6 + c], 4))
						memcpy(at, &kp[(size_t)jj * 6 + c], 4);
				}
		}
	}
	free(keep);
}

/* par.h. The work of a row: 32 cells per active block of its block row
 * (what the CPU's sparse step steps), and one for the row itself
 * (lbm_par_work, the first cut, counts a row as a cell per block column:
 * an OpenCL rank's row costs more than a CPU rank's); each rank weighs
 * the rows of its band, where its block flags are exact, and the weights
 * are gathered, so every rank cuts the same bands. */
int lbm_par_rebalance(struct lbm *L, float *const *rows, int nrows)
{
	struct wb_par *p = L->par;
	if (!p || p->size <= 1 || p->ny != L->ny || !sb_use(L) ||
	    !L->sb_valid)
		return 0;
	const int n = p->size, ny = L->ny, X = L->sbx;
	int J0, J1;
	wb_par_band(p, ny, &J0, &J1);
	double *work = calloc((size_t)ny, sizeof(double));
	int *nr = malloc(((size_t)n + 1) * sizeof(int));
	uint8_t *sel = calloc((size_t)L->H + (size_t)ny, 1);
	int res = 0;
	if (!work || !nr || !sel) {
		p->failed = 1;
		res = -1;
		goto out;
	}
	for (int j = J0; j < J1; j++) {
		const uint8_t *a = L->sb_act + (size_t)(j / LBM_SB) * X;
		int act = 0;
		for (int b = 0; b < X; b++)
			act += a[b];
		/* a dry row costs the step a few flag reads per block,
		   next to some hundred operations per stepped cell */
		work[j] = (double)LBM_SB * act + 1;
	}
	if (wb_par_rows(p, work, sizeof(double), 1, 0, 0) || p->failed) {
		res = -1;
		goto out;
	}
	wb_par_cut(n, ny, work, nr);
	double om = 0, nm = 0;
	for (int r = 0; r < n; r++) {
		double a = 0, b = 0;
		for (int j = p->row0[r]; j < p->row0[r + 1]; j++)
			a += work[j];
		for (int j = nr[r]; j < nr[r + 1]; j++)
			b += work[j];
		om = MAXF(om, a);
		nm = MAXF(nm, b);
	}
	if (!(nm <= (1 - LBM_PAR_GAIN) * om))
		goto out; /* not worth a move */
	/* sel: per padded row, what moves with the populations; mv: per
	   interior row, the rows that change hands */
	uint8_t *mv = sel + L->H;
	for (int r = 0; r < n; r++)
		for (int j = nr[r]; j < nr[r + 1]; j++)
			if (j < p->row0[r] || j >= p->row0[r + 1])
				mv[j] = sel[j + 1] = 1;
	/* the rows next to every new band edge, three each side: the new
	   halo rows and the ring columns the edge ghosts read (greach) */
	for (int r = 1; r < n; r++)
		for (int R = nr[r] - 2; R <= nr[r] + 3; R++)
			if (R >= 0 && R < L->H)
				sel[R] = 1;
	if (!L->hybrid) {
		/* the hybrid's ranks hold every row already (lbm_par_hybrid);
		   the pure LBM's hold their band, halo and ring */
		void *fa[LBM_Q + 4], *fb[LBM_Q + 1];
		const uint8_t *sa[LBM_Q + 4];
		for (int q = 0; q < LBM_Q; q++) {
			fa[q] = L->f[L->cur][q];
			fb[q] = L->f[!L->cur][q];
		}
		fa[LBM_Q] = L->h[L->cur];
		fb[LBM_Q] = L->h[!L->cur];
		fa[LBM_Q + 1] = L->z;
		fa[LBM_Q + 2] = L->c;
		fa[LBM_Q + 3] = L->zi;
		for (int q = 0; q < LBM_Q + 4; q++)
			sa[q] = sel;
		if (wb_par_sel_rows(p, fa, LBM_Q + 4, L->W, sa) ||
		    wb_par_sel_rows(p, fb, LBM_Q + 1, L->W, sa)) {
			res = -1;
			goto out;
		}
	}
	for (int k = 0; k < nrows; k++)
		wb_par_rows_sel(p, rows[k], sizeof(float), L->nx, mv);
	wb_par_rows_sel(p, L->cmap, sizeof(uint32_t), L->cnx, mv);
	if (p->failed) {
		res = -1;
		goto out;
	}
	wb_par_split(p, ny, work); /* nr, and this band's share */
	p->rebalances++;
	if (lbm_par_replan(L)) { /* the exchange of the new bands */
		res = -1;
		goto out;
	}
	if (!L->hybrid) {
		/* the rows outside the band and its halo: no output flags
		   (as for rows never run), no pages */
		wb_par_band(p, ny, &J0, &J1);
		for (int j = 0; j < ny; j++)
			if (j < J0 - 1 || j > J1)
				memset(L->sb_rw + (size_t)(j + 1) * X, 0, (size_t)X);
		par_trim(L);
	}
	L->sb_valid = 0; /* every block's flags from the state (sb_scan) */
	res = 1;
out:
	free(work);
	free(nr);
	free(sel);
	return res;
}

enum wb_status lbm_solve_hybrid(const struct wb_raster *r,
				const struct wb_sim *sim,
				const struct wb_solve_opts *o, struct wb_state *out,
				struct wb_solve_report *rep, struct wb_diags *d,
				int hybrid)
{
	double t0 = now_s();
	struct lbm L;
	memset(out, 0, sizeof(*out));
	memset(rep, 0, sizeof(*rep));
	enum wb_status st = lbm_init(&L, r, sim, o ? o->threads : 0, d);
	if (st != WB_OK)
		return st;
	L.par = o ? o->par : NULL;
	if (!hybrid) {
		lbm_fv_free(&L);
		L.hybrid = 0;
	}
	if (L.par && lbm_par_setup(&L)) {
		st = wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
		lbm_release(&L);
		return st;
	}
	if (L.par && !L.hybrid)
		par_trim(&L);
	size_t n = (size_t)r->nx * r->ny;
	/* window sums of h, u, v (sampled every 'every' steps), the last
	 * window's means and the previous window's mean velocity */
	float *h = calloc(n, sizeof(float)), *u = calloc(n, sizeof(float)),
	      *v = calloc(n, sizeof(float)), *up = calloc(n, sizeof(float)),
	      *vp = calloc(n, sizeof(float));
	float *sh = calloc(n, sizeof(float)), *su = calloc(n, sizeof(float)),
	      *sv = calloc(n, sizeof(float)), *mh = calloc(n, sizeof(float));
	if (!h || !u || !v || !up || !vp || !sh || !su || !sv || !mh) {
		st = wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
		goto done;
	}
	rep->vol_initial = lbm_volume(&L);
	long fixed = o && o->steps > 0 ? o->steps : 0;
	long cap = fixed ? fixed : (sim->max_steps > 0 ? sim->max_steps : 100000);
	long window = sim->window > 0 ? sim->window : 200;
	double tol = sim->tolerance > 0 ? sim->tolerance : 1e-4;
	long every = sample_every(window);
	long pevery = window < 100 ? window : 100, nsamp = 0, windows = 0;
	const long rebal = every * ((LBM_PAR_REBAL + every - 1) / every);
	double res = INFINITY;
	const float hthin = (float)(LBM_THIN * L.p.h_dry);
	/* water stored and passed through at the start of the window */
	int64_t wm = lbm_mass(&L), wio = L.vol_in + L.vol_out;
	rep->setup_s = now_s() - t0;
	while (L.step < cap) {
		if (o && o->cancel && *o->cancel) {
			st = wb_fail(d, WB_ECANCEL, NULL,
				     "lbm: interrupted at step %ld", L.step);
			goto done;
		}
		long k = every - L.step % every;
		if (cap - L.step < k)
			k = cap - L.step;
		st = lbm_step(&L, k, d);
		if (st != WB_OK)
			goto done;
		if (!fixed && L.step % every == 0) {
			/* sample for the window mean (per cell: deterministic) */
			sample_add(&L, h, u, v, sh, su, sv);
			nsamp++;
		}
		if (!fixed && L.step % window == 0 && nsamp > 0) {
			const float w = 1.0f / (float)nsamp;
			/* several processes: the band's rows (the others are
			   neither sampled nor read: rel_change and the output
			   take the band's); stores only where the bits change,
			   so that dry land stays on unbacked zero pages */
			int J0, J1;
			wb_par_band(L.par, L.ny, &J0, &J1);
			for (size_t q = (size_t)r->nx * J0; q < (size_t)r->nx * J1; q++) {
				float hq = sh[q] * w;
				putf(&mh[q], hq);
				/* films: no velocity produced */
				putf(&u[q], hq > hthin ? su[q] * w : 0.0f);
				putf(&v[q], hq > hthin ? sv[q] * w : 0.0f);
				putf(&sh[q], 0.0f);
				putf(&su[q], 0.0f);
				putf(&sv[q], 0.0f);
			}
			nsamp = 0;
			if (windows++ > 0)
				res = rel_change(&L, mh, up, vp, u, v);
			if (o && o->window && !L.par) {
				const double cu = L.unit * L.p.dx * L.p.dx;
				struct wb_window_info wi = {
					L.step, r->nx, r->ny, mh, up, vp, u, v,
					windows > 1 ? res : NAN, lbm_volume(&L),
					(double)L.vol_in * cu, (double)L.vol_out * cu
				};
				o->window(o->window_user, &wi);
			}
			float *t = up;
			up = u, u = t;
			t = vp, vp = v, v = t;
			/* steady also means the water stored does not change:
			 * by at most tol of what passed through the window
			 * (exact integers: a closed basin changes by 0) */
			int64_t m1 = lbm_mass(&L), io1 = L.vol_in + L.vol_out;
			int still = llabs(m1 - wm) <= tol * (double)(io1 - wio);
			wm = m1;
			wio = io1;
			if (res < tol && still &&
			    L.step >= L.ramp_steps + 2 * window) {
				rep->converged = 1;
				break;
			}
		}
		/* several processes: the bands follow the water, every
		   rebal steps (at a sample: the window's sums and the last
		   window's means, which follow the band, move with it) */
		if (L.par && L.step % rebal == 0 && L.step < cap) {
			float *const rows[6] = { sh, su, sv, mh, up, vp };
			if (lbm_par_rebalance(&L, rows, 6) < 0) {
				st = wb_fail(d, WB_EIO, NULL,
					     "lbm: step %ld: exchange between processes failed",
					     L.step);
				goto done;
			}
		}
		if (o && o->progress && L.step % pevery == 0)
			o->progress(o->progress_user, L.step, cap,
				    isfinite(res) ? res : NAN);
	}
	out->nx = r->nx;
	out->ny = r->ny;
	out->dx = r->dx;
	out->h = malloc(n * sizeof(float));
	out->u = malloc(n * sizeof(float));
	out->v = malloc(n * sizeof(float));
	if (!out->h || !out->u || !out->v) {
		st = wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
		goto done;
	}
	int oom;
	out->fv = lbm_fv_mask(&L, &oom);
	if (oom) {
		st = wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
		goto done;
	}
	if (windows > 0) {
		/* a steady bake returns the last window's time-averaged flow */
		memcpy(out->h, mh, n * sizeof(float));
		memcpy(out->u, up, n * sizeof(float));
		memcpy(out->v, vp, n * sizeof(float));
	} else {
		lbm_macro(&L, out->h, out->u, out->v);
	}
	/* not steady: where the last window still changed (u, v: the
	   window before's means, in the band's rows like up, vp) */
	const int unsteady = !fixed && !rep->converged && windows >= 2;
	if (L.par) { /* several processes: each had its rows (par.h) */
		wb_par_rows(L.par, out->h, sizeof(float), r->nx, 0, 0);
		wb_par_rows(L.par, out->u, sizeof(float), r->nx, 0, 0);
		wb_par_rows(L.par, out->v, sizeof(float), r->nx, 0, 0);
		if (unsteady) {
			wb_par_rows(L.par, u, sizeof(float), r->nx, 0, 0);
			wb_par_rows(L.par, v, sizeof(float), r->nx, 0, 0);
		}
		/* where the limiter acted: each band's rows of the map */
		wb_par_rows(L.par, L.cmap, sizeof(uint32_t), L.cnx, 0, 0);
		if (L.par->failed) {
			st = wb_fail(d, WB_EIO, NULL,
				     "lbm: exchange between processes failed");
			goto done;
		}
	}
	if (unsteady && wb_unsteady_where(r->nx, r->ny, out->h, out->u, out->v,
					  u, v, (float)(LBM_THIN * L.p.h_dry),
					  rep)) {
		st = wb_fail(d, WB_EIO, NULL, "lbm: out of memory");
		goto done;
	}
	double dx2 = L.p.dx * L.p.dx;
	rep->steps = L.step;
	rep->residual = isfinite(res) ? res : NAN; /* NAN: not measured */
	rep->sim_time = L.time;
	rep->dt = L.p.dt;
	rep->lattice_speed = L.p.e;
	rep->tau = L.p.tau;
	rep->h_deep = L.p.h_deep;
	rep->h_flood = L.p.h_flood;
	rep->viscosity = L.p.nu;
	rep->viscosity_requested = L.p.nu_req;
	rep->rescales = L.rescales;
	{
		static const char *why[] = { "depth", "inflow velocity", "given",
					     "re-chosen during the run",
					     "slope flow" };
		rep->lattice_speed_reason = why[L.p.e_why];
	}
	rep->slope_speed = L.p.u_slope;
	rep->vol_final = lbm_volume(&L);
	rep->vol_in = (double)L.vol_in * L.unit * dx2;
	rep->vol_out = (double)L.vol_out * L.unit * dx2;
	double scale = MAXF(MAXF(rep->vol_initial, rep->vol_final),
			    MAXF(rep->vol_in, rep->vol_out));
	rep->balance_error =
		scale > 0 ? fabs(rep->vol_initial + rep->vol_in - rep->vol_out -
				 rep->vol_final) / scale : 0;
	rep->clamped = L.clamped;
	lbm_clamp_where(L.cmap, L.nx, L.ny, rep);
	rep->bytes_per_cell = LBM_BYTES_PER_CELL;
	if (L.fv_cells > 0)
		wb_diag_add(d, WB_SEV_NOTE, NULL, NULL, 0, 0,
			    "lbm: %ld cell-steps (%.3g %% of the wet and dry cell-steps) were advanced by the finite-volume update of the hybrid (supercritical flow, spilling fronts)",
			    L.fv_cells,
			    100.0 * (double)L.fv_cells /
				    ((double)L.step * L.nx * L.ny));
	lbm_fv_report(&L, rep, d);
	if (rep->balance_error > 1e-3) {
		st = wb_fail(d, WB_ESIM, NULL,
			     "lbm: mass balance does not close after %ld steps: initial %g + in %g - out %g != final %g m^3",
			     L.step, rep->vol_initial, rep->vol_in, rep->vol_out,
			     rep->vol_final);
	}
done:
	if (st != WB_OK && st != WB_ESIM)
		wb_state_free(out);
	rep->seconds = now_s() - t0;
	rep->cells_stepped = L.sb_cells;
	free(h);
	free(u);
	free(v);
	free(up);
	free(vp);
	free(sh);
	free(su);
	free(sv);
	free(mh);
	lbm_release(&L);
	return st;
}
