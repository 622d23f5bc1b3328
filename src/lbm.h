/*
 * lbm.h - internal API of the lattice Boltzmann shallow-water solver
 * (LBM-SWE, lbm.c; method notes in docs/lbm.md).
 *
 * The public entry point is lbm_solve() (solve.h). This header exposes the
 * solver context, its parameters, the equilibrium and the stepping calls so
 * that tests can drive the solver step by step and an OpenCL back end can
 * reuse the set-up, the boundary filling and the bookkeeping and replace only
 * the per-row kernel (lbm_kernel_row).
 *
 * Lattice (D2Q9, the talk's numbering; +y is south, j grows):
 *   a:   0    1    2    3    4    5    6    7    8
 *   cx:  0    1    1    0   -1   -1   -1    0    1
 *   cy:  0    0    1    1    1    0   -1   -1   -1
 *   opposite(a) = a+4 mod 8 for a >= 1; e_a = e c_a, e = dx/dt.
 *
 * Memory layout (structure of arrays): every field has a one-cell
 * ghost ring, stride W >= nx + 2, interior cell (i, j) is element
 * P(i, j) = (i + 1) + (j + 1) * W. lbm_init pads W to a multiple of 16
 * (columns nx + 2 .. W - 1 are unused zeros) and offsets the bases of f,
 * h, z and c so that element 1, hence interior column 0 of every row, is
 * 64-byte aligned: the kernel's 16-cell units (8-cell ones: half lines)
 * store whole cache lines instead of straddling two (lbm_init_layout with
 * align 0: W = nx + 2, plain allocations, as the OpenCL kernels assume).
 * Fields: f[2][9] (post-collision
 * distributions, double-buffered: the step reads f[cur], writes f[!cur];
 * stored as 32-bit fixed point, f = F * unit, so that streaming and the
 * mass budget are exact integer arithmetic: the rest population is stored
 * as the remainder F_0 = sum(F_in) + sum(bed_a) - sum_{a>=1} F_a, and the
 * bed-slope transfers bed_a are rounded antisymmetrically, so the water
 * volume changes only by the edge fluxes and sources, counted exactly),
 * h[2] (depth after streaming, double-buffered, stored as (float)H unit),
 * z (terrain), zi (integer bed potential, units, wrapping: lbm_bi) and c
 * (ceiling: +LBM_BIG open sky, a blocker deck's bottom elevation, or
 * -LBM_BIG solid).
 * One cell update (fused pull-streaming + collision + forcing) reads 9 f,
 * 9 neighbour h, z, zi, c (each once from memory) and writes 9 f and h
 * (all 4-byte: int32 f, float h, z, int32 zi, float c):
 * 9*4*2 + 4*2 + 4 + 4 + 4 = 92 bytes per cell (LBM_BYTES_PER_CELL).
 *
 * Per-cell update (lbm_kernel_row), for the link from x to y = x + c_a:
 *   open(x,y) = max(eta_x, eta_y) > max(z_x, z_y) + h_dry
 *               && min(c_x, c_y) > max(eta_x, eta_y),   eta = z + h_old
 *   pull:   f_abar(x) = open ? f*_abar(y) : f*_a(x)   (bounce-back)
 *   moments h = sum f, M = sum c_a f (lattice units, hu = e M),
 *           U = M / max(h, LBM_THIN h_dry), clamped to |U| <= min(U_max, Fr_max
 *           sqrt(g h)/e); friction U_f = U_c / (1 + g n^2 dx |U_c| h^-4/3)
 *   collide f'_a = f_a + omega (feq_a(h, U_c) - f_a)   (BGK; for tau <
 *           LBM_TAU_TRT the antisymmetric part of each pair relaxes with
 *           omega_m, the TRT magic-1/4 rate)
 *   force   + w_a c_a . dM / 3,  dM = h U_f - (1-omega) M - omega h U_c
 *           (sets the post-collision momentum to h U_f exactly)
 *           + w_a g / (6 e^2) [phi(h_y, z_x - z_y) - phi(h_x, z_y - z_x)]
 *           if open, phi(h, d) = m (2h - m), m = min(max(d, 0), h), depths
 *           h_old (bed slope as a hydrostatic reconstruction: the lower
 *           cell keeps what the step holds back; balances feq exactly at
 *           rest, antisymmetric); computed in integers as lbm_bi and the
 *           collision in deviation form about the integer rest
 *           equilibrium lbm_rq, so that still water is an exact fixed
 *           point of the integer update (lbm_kernel.h, docs/lbm.md)
 *   positivity: if a population sent toward a cell shallower than
 *           h_pos = LBM_POS h_dry (or the rest population of such a cell)
 *           is negative, blend toward h q_a (q = 4/9, 1/9, 1/36) just
 *           enough that it is not (counted as a clamp).
 * Sources, sinks, fixed-level cells and flow modifiers are applied after
 * the row's cells (lbm_special list); edges fill the ghost ring before each
 * step (lbm_fill_ghosts).
 */
#ifndef WB_LBM_H
#define WB_LBM_H

#include <math.h>
#include <stdint.h>

#include "wbake.h"

#define LBM_Q 9
#define LBM_BIG 1e30f
#define LBM_BYTES_PER_CELL 92
#define LBM_GH_RATIO 0.16   /* auto e: g h_deepest = 0.16 e^2 */
/* smallest relaxation time used: below it (TRT) the subcritical bump test
 * of docs/lbm.md leaves 1 % (tau 0.5135: 0.36 %; 0.508: 63 %, the level
 * closure at the outlet rings and the reservoir fills up) */
#define LBM_TAU_MIN 0.515
#define LBM_TAU_TRT 0.55    /* below: two-relaxation-time collision */
#define LBM_U_MAX 0.5       /* velocity clamp |u| <= 0.5 e */
#define LBM_FR_MAX 1.0      /* Froude clamp |u| <= sqrt(g h) (the talk) */
#define LBM_THIN 10.0       /* films thinner than 10 h_dry move at M / h_thin */
/* Steady-state test: the window-mean velocity change is relative to the
 * depth-weighted RMS speed, but never to less than LBM_RES_FLOOR m/s, so still water whose
 * round-off motion is far below anything a flow map shows (tolerance 1e-4:
 * 1e-5 m/s) counts as steady. */
#define LBM_RES_FLOOR 0.1
/* Samples per steady-state window (at least): the window mean of a flow
 * with grid-scale chatter converges as 1/sqrt(samples). */
#define LBM_SAMPLES 64
#define LBM_SAMPLE_MIN 5    /* but not more often than every 5 steps */
/* several processes (lbm_par_rebalance): the bands are cut again every
 * LBM_PAR_REBAL steps or so (a multiple of the sampling interval), when
 * that takes the largest band's work down by LBM_PAR_GAIN at least */
#define LBM_PAR_REBAL 250
#define LBM_PAR_GAIN 0.05
#define LBM_H_LIMIT 6.0     /* OpenCL: depth above 6 h_deep: diverged */
/* CPU: water deeper than LBM_H_RESCALE h_deep (g h > 0.48 e^2) re-chooses
 * the lattice speed (lbm_rescale); deeper than LBM_H_RANGE times the
 * initial h_deep leaves the fixed-point range: diverged */
#define LBM_H_RESCALE 3.0
#define LBM_H_RANGE 12.0
/* Hybrid (lbm_fv.c): cells above Froude LBM_FV_ON (staying while above
 * LBM_FV_OFF; equal: a hysteresis made steady states depend on the
 * path), dilated by LBM_FV_MARGIN cells, take a finite-volume
 * update; its sub-steps keep (|u| + c) dt / dx below LBM_FV_CFL. */
#define LBM_FV_ON 0.8
#define LBM_FV_OFF 0.8
#define LBM_FV_MARGIN 3
#define LBM_FV_FILM 0.1 /* films (h < LBM_THIN h_dry) above this Froude */
#define LBM_FV_CFL 0.45
#define LBM_FV_MAX_SUB 64 /* its sub-steps at most (more: counted, warned) */
/* FV momentum below LBM_FV_QRES units of lattice momentum (unit e, the
 * rounding of the populations it is stored in) is zero */
#define LBM_FV_QRES 3.0
/* Rows (and columns) around an FV cell that lbm_fv_update reads: the
 * populations of its 8 neighbours and the depths of their neighbours
 * (2 cells: the bed terms of an LBM neighbour's momentum); the MUSCL
 * slopes use only the 4 axis neighbours' states. It writes only the FV
 * cells themselves (populations and depth). */
#define LBM_FV_REACH 2
#define LBM_POS 2.0         /* populations sent toward cells shallower than
			       2 h_dry are kept >= 0 */

extern const int lbm_cx[LBM_Q], lbm_cy[LBM_Q], lbm_opp[LBM_Q];
extern const float lbm_w[LBM_Q]; /* 1 axis, 1/4 diagonal (0 for a = 0) */

/* Numerical parameters, chosen by lbm_params_choose(). */
struct lbm_params {
	double g, dx;
	double e, dt;      /* lattice speed (m/s), time step (s) */
	double tau, omega; /* relaxation time, omega = 1 / tau */
	double omega_m;    /* rate of the antisymmetric moments (= omega: BGK) */
	double nu;         /* kinematic viscosity actually simulated (m^2/s) */
	double h_dry;      /* m: below this a cell is dry */
	double h_deep;     /* m: deepest water expected (sets e) */
	double manning;
	double u_max;      /* velocity clamp (m/s) */
	double fr_max;
	int tau_limited;   /* 1 when tau was raised to LBM_TAU_MIN */
	double nu_req;     /* viscosity asked for (m^2/s) */
	double h_flood;    /* m: deepest water of the flood bound (flood_depth) */
	/* m/s: the fastest flow the start's water drives down its slopes
	 * (Manning at the start's depths, the steepest fall of the surface;
	 * slope_speed), and that plus the wave speed there; NAN without
	 * friction, 0 without water on a slope */
	double u_slope, uc_slope;
	int e_why;         /* LBM_E_*: what set e */
};

/* What chose the lattice speed (lbm_params.e_why). */
enum { LBM_E_DEPTH, LBM_E_INFLOW, LBM_E_GIVEN, LBM_E_RESCALED, LBM_E_SLOPE };

/* Choose e, dt, tau from dx, the viscosity and the deepest water:
 * e = sqrt(g h_deep / LBM_GH_RATIO), at least 2.5 x any inflow velocity,
 * or sim->lattice_speed or dx/sim->dt when given; tau = 0.5 + 3 nu /
 * (e dx), raised to LBM_TAU_MIN with a warning. h_deep is the deepest of
 * the initial water, held levels, edge depths/levels, 1.5 x the critical
 * depth of inflows and the flood bound: the depressions that the scene's
 * water can reach filled to their spill level (hydro_fill_levels).
 * WB_EINPUT (named in d) for parameters that cannot work. */
enum wb_status lbm_params_choose(const struct wb_raster *r,
				 const struct wb_sim *sim,
				 struct lbm_params *p, struct wb_diags *d);

/* Equilibrium of Zhou (2004) with the talk's weights, lattice units:
 * U = u/e, V = v/e, ghe = g h / e^2. out[9]. */
static inline void lbm_feq(float h, float U, float V, float ghe, float *out)
{
	/* feq_0 = h - 5 g h^2/(6 e^2) - 2 h u.u/(3 e^2), computed as the
	 * remainder h - sum_{a>=1} feq_a so that the sum is h to round-off */
	float uu = U * U + V * V;
	float hb = h * (ghe - uu) * (1.0f / 6.0f), rest = 0;
	for (int a = 1; a < LBM_Q; a++) {
		float cu = (float)lbm_cx[a] * U + (float)lbm_cy[a] * V;
		out[a] = lbm_w[a] * (hb + h * cu * (1.0f / 3.0f) +
				     h * cu * cu * 0.5f);
	}
	rest = ((out[1] + out[3]) + (out[5] + out[7])) +
	       ((out[2] + out[4]) + (out[6] + out[8]));
	out[0] = h - rest;
}

/* Constants of the fused update (lbm_kernel.h), from the parameters; the
 * OpenCL host passes the same values to its kernel. Depths in metres for
 * the link rule (hd, hpos), else in fixed-point units ("_u", hthin). */
struct lbm_kpar {
	float hd, hpos;              /* h_dry, h_pos (m) */
	float hd_u, hthin, hpos_u, hlim_u; /* h_dry, h_thin, h_pos, 6 h_deep */
	float ghk;                   /* g unit / e^2 */
	float umax2, fr2;            /* U_max^2, Fr_max^2 */
	float kf;                    /* g n^2 dx unit^(-4/3) */
	float om, om1, om6, omh;     /* omega, 1 - omega, omega/6, omega/2 */
	float nom13;                 /* -(1 - omega_m) / 3 */
	float om1h, omm1h;           /* (1 - omega)/2, (1 - omega_m)/2 (TRT) */
	float unit;                  /* metres per unit */
	float Gai, Gdi;              /* bed weights over the unit (lbm.kGi) */
	float K;                     /* g unit / (6 e^2): lbm_rq */
	float kinv;                  /* 1 / unit (lbm.kinv): lbm_hs */
	float ommh;                  /* omega_m / 2 (TRT deviation form) */
	int trt;                     /* omega_m != omega (as floats) */
};

/* Exact rest (docs/lbm.md, "Still water, exactly"): still water is a
 * fixed point of the integer update because the collision relaxes the
 * deviation from an integer rest equilibrium and the bed transfer is a
 * difference of the same rounded rest equilibria over an integer bed
 * potential. The helpers below are the scalar form of what the kernel
 * (lbm_kernel.h) and src/cl/lbm.cl compute, operation for operation.
 *
 * lbm_rq: the rest equilibrium of direction a (diag: a diagonal) in
 * units for the integer depth H: round(w_a K h^2), h = (float)H,
 * K = g unit / (6 e^2), rounded ties to even. */
static inline int32_t lbm_rq(float K, int diag, int32_t H)
{
	const float h = (float)H, k = K * (h * h);
	return (int32_t)lrintf(diag ? k * 0.25f : k);
}

/* The integer depth (units) that a stored depth h (metres, float: the
 * kernel stores (float)H unit) stands for: round(h / unit) in float. Both
 * cells of a link read it from the same bytes, so it is the same number
 * for both. */
static inline int32_t lbm_hs(float h, float kinv)
{
	return (int32_t)lrintf(h * kinv);
}

/* The bed step (units) from x to y: zi_y - zi_x of the integer bed
 * potential (lbm.zi, wrapping), saturated at +-(2^31 - 1) where the
 * float step (zy - zx) / unit is beyond +-2e9 units (deeper than the
 * fixed-point range: the clamp to the depth acts). Antisymmetric. */
static inline int32_t lbm_dz(int32_t zix, int32_t ziy, float zx, float zy,
			     float kinv)
{
	const float Df = (zy - zx) * kinv;
	if (Df > 2e9f)
		return 0x7fffffff;
	if (Df < -2e9f)
		return -0x7fffffff;
	return (int32_t)((uint32_t)ziy - (uint32_t)zix);
}

/* The integer bed transfer of the link x -> y (direction a, diag: a
 * diagonal) with integer depths Hx, Hy (negative counts 0) and bed step
 * D = lbm_dz: the part of the lower cell's rest population that the step
 * holds back, as a difference of rounded rest equilibria,
 *   Bi = [R(Hy) - R(Hy - my)] - [R(Hx) - R(Hx - mx)],
 *   mx = min(max(D, 0), Hx), my = min(max(-D, 0), Hy).
 * Exactly antisymmetric for any state; at rest (Hx - mx = Hy - my) it is
 * R(Hy) - R(Hx), so a population R(Hx) + Bi arrives in y as R(Hy). */
static inline int32_t lbm_bi(float K, int diag, int32_t Hx, int32_t Hy,
			     int32_t D)
{
	Hx = Hx > 0 ? Hx : 0;
	Hy = Hy > 0 ? Hy : 0;
	int32_t mx = D > 0 ? D : 0, my = D < 0 ? -D : 0;
	mx = mx < Hx ? mx : Hx;
	my = my < Hy ? my : Hy;
	return (lbm_rq(K, diag, Hy) - lbm_rq(K, diag, Hy - my)) -
	       (lbm_rq(K, diag, Hx) - lbm_rq(K, diag, Hx - mx));
}
/* Cells with work outside the vectorised kernel (sorted by index). */
struct lbm_special {
	int32_t n;          /* padded index */
	uint8_t flags;      /* WB_CELL_FIXED, WB_CELL_SINK_ALL */
	float src;          /* m/s, < 0 sink */
	float level;        /* fixed surface elevation */
	float mu, mv, mk;   /* modifier target (m/s) and rate (1/s) */
};

struct wb_par_plan;
enum { LBM_PAR_ALL = 1, LBM_PAR_OWN = 2 };

/* Ghost cell kinds (lbm.gkind, ghost ring only). */
enum { LBM_G_SOLID, LBM_G_PERIODIC, LBM_G_MIRROR, LBM_G_EXTRAP, LBM_G_ZOU };

struct lbm {
	int nx, ny, W, H;   /* H = ny + 2 */
	size_t ncell;       /* W * H */
	struct lbm_params p;
	int threads;
	int32_t *f[2][LBM_Q]; /* fixed point: f = F * unit (m) */
	double unit;          /* metres per integer unit: 16 h_deep / 2^31 */
	float kinv;           /* 1 / unit */
	float kG[LBM_Q];      /* bed-slope weights w_a g / (6 e^2) (a >= 1) */
	float kGi[LBM_Q];     /* kG / unit: integer bed transfer weights */
	float *h[2];
	/* the depths at which the bed transfers that f[cur]'s populations
	 * carry were computed: h[!cur] after a step (the depths it read),
	 * h[cur] after lbm_init (bed_lvl 0 or 1: h[cur] or h[!cur]) */
	int bed_lvl;
	float *z, *c;
	int32_t *zi;        /* integer bed potential (units, wrapping): the
			       bed transfer's steps (lbm_dz, lbm_bi) */
	int cur;
	uint8_t *gkind;     /* per padded cell (ghosts only meaningful) */
	int32_t *gpart;     /* partner interior cell of a ghost (-1 none) */
	float *gspec;       /* ZOU ghosts: target depth (<=0 none) */
	float *gq;          /* ZOU ghosts: inward discharge m^2/s, or NaN */
	float *gvel;        /* ZOU ghosts: inward velocity m/s, or NaN */
	float *ginit;       /* ZOU ghosts: initial depth at the edge */
	struct wb_edge edges[4];
	uint8_t ckind[4];   /* corner q (west/east = q & 1, north/south = q & 2):
			       kind of the ghost it copies (LBM_G_*) */
	uint8_t cflip[4];   /* corner copy reflected: 1 in x, 2 in y, 0 not */
	long ramp_steps;    /* inflow / level ramp */
	uint8_t *blk;       /* per padded row and 8-cell block: fast path allowed */
	float *bdz;         /* per padded row and 8-cell block: largest bed step */
	int no_shortcuts;   /* tests: no fast path, no dry-block skip */
	int simd8;          /* tests: 8-lane kernel even where AVX-512 runs */
	void *mem[2 * LBM_Q + 5]; /* allocations behind f, h, z, c, zi */
	struct lbm_kpar kp; /* kernel constants (lbm_kernel_params) */
	int nb;             /* blocks per row */
	struct lbm_special *sp;
	int nsp;
	int *sp_row;        /* specials of row j: sp[sp_row[j] .. sp_row[j+1]) */
	/* per-row partials (reduced serially) */
	long *row_clamp;
	/* clamped cell-steps of the run per interior row j and run of
	 * WB_CLAMP_BLOCK columns: cmap[j * cnx + i / WB_CLAMP_BLOCK] (each
	 * row written by the thread stepping it; lbm_clamp_where sums it) */
	uint32_t *cmap;
	int cnx;
	int *row_bad;
	int64_t *row_in, *row_out;
	/* several processes: the step's totals of row_clamp, row_in,
	   row_out, of the rows flagged bad, and of the edge books (mass
	   in and out through the edge ghosts each band owns, edge_flux),
	   over every band (lbm_par_exchange) */
	int64_t par_sum[6];
	int64_t par_edge[2]; /* this band's edge books of the step */
	/* several processes, how the edge ghosts are kept (lbm_par_setup):
	   0 not decided yet; LBM_PAR_ALL every rank fills every ghost from
	   the whole ring (the hybrid, or a band of fewer than three rows);
	   LBM_PAR_OWN a rank fills the ghosts its band and halo read, and
	   exchanges with its neighbours only (par_plan) */
	int par_mode;
	struct wb_par_plan *par_plan;
	/* bookkeeping */
	long step;
	double time;          /* simulated seconds (dt changes on a rescale) */
	double ramp_time;     /* s: inflow / level ramp */
	double h_deep0;       /* h_deep at the start: sets unit */
	long rescales;        /* lattice speed re-chosen during the run */
	int64_t vol_in, vol_out; /* integer units (times unit dx^2 = m^3) */
	long clamped;
	double origin[2];
	struct wb_par *par;   /* several processes (par.h); NULL: one */
	/* hybrid (lbm_fv.c): 0 = pure LBM (the Froude clamp holds every
	 * supercritical cell) */
	int hybrid;
	double fv_on, fv_off; /* Froude thresholds (LBM_FV_ON, LBM_FV_OFF) */
	int fv_margin;        /* LBM_FV_MARGIN */
	uint8_t *fvf;       /* per padded cell: 1 FV, 2 core, 4 never FV */
	uint8_t *fvh;       /* per padded cell: work of the dilation */
	uint8_t *fvg;       /* per padded cell: 1 interior, 0 ghost ring */
	int *fvrow;         /* 2 H: core cells per row, then core rows near */
	float *fvm;         /* per padded cell: 1.0f in FV cells (kernel) */
	int32_t *fvl;       /* the FV cells, ascending padded index */
	int32_t *fvix;      /* per padded cell: index in fvl, or -1 */
	int nfv;
	struct lbm_fvwork *fvx; /* lbm_fv_update's work (lbm_fv.c) */
	long fv_cells;      /* cell-steps advanced by the FV update */
	long fv_capped;     /* steps whose FV update needed more than its
			       LBM_FV_MAX_SUB sub-steps (it ran past its CFL limit) */
	double fv_cfl;      /* the largest (|u| + c) dt / dx it then met */
	long fv_ff;         /* FV cell-steps faster than e, whose friction
			       came before the sub-steps (lbm_fv_update) */
	double fv_ff_u;     /* the largest speed such a cell read, m/s */
	int fv_ns_max;      /* the most sub-steps one FV update took */
	int64_t fv_eown;    /* lbm_fv_update's edge books of this rank's
			       FV cells (several processes, lbm_fv_books) */
	/* block-sparse step (lbm.c "block-sparse step", docs/scale.md):
	 * LBM_SB x LBM_SB interior cells per block, block (bx, by) holds
	 * interior columns LBM_SB bx .. and rows LBM_SB by .. */
	int sparse;         /* 1 (default): step the active blocks only;
			       0 (WB_LBM_DENSE=1 at lbm_init): every cell */
	int sbx, sby;       /* blocks per row, per column */
	int sb_valid;       /* the block flags describe f[cur] (0: rescan) */
	uint16_t *sb_wet;   /* per block: where f[cur], h[cur] hold a nonzero
			       bit: LBM_SB_ANY, and its border cells
			       (LBM_SB_W .. LBM_SB_SE) */
	uint8_t *sb_keep;   /* per block: holds a special (counts as wet) */
	uint8_t *sb_act;    /* per block: wet or next to a wet block */
	uint8_t *sb_run;    /* per block: stepped (sb_act, wet ghost near) */
	uint8_t *sb_was;    /* per block: in the last lbm_fv_mark scan */
	uint8_t *sb_zero[2]; /* per block: f[b], h[b] are 0 in its cells */
	uint8_t *sb_rw;     /* per padded row and block: nonzero output: 1
			       any cell, 2 the first, 4 the last */
	int32_t *sb_span[2]; /* per block row: runs of sb_run [0] and
				sb_act [1] blocks as first, last padded
				column; LBM_SB_MAXSPAN pairs a row */
	int *sb_nspan[2];   /* per block row: the runs in sb_span */
	uint8_t *sb_idle;   /* per block row, this step: no block stepped,
			       none to clear, no flags read (sb_idle_set):
			       sb_row does nothing there */
	int32_t sb_full[2]; /* the whole row: 1, nx */
	long sb_cells;      /* interior cell-steps the kernel stepped */
	/* the ghost passes (lbm_fill_ghosts) by segments of LBM_SB ghosts
	   along an edge (edge s: segments sb_gs[s] .. sb_gs[s + 1] - 1,
	   beside the interior blocks of that edge): sb_gk 0 walls only,
	   1 with open-edge ghosts, 2 never skipped (inflow, level or
	   periodic ghosts, or next to them); sb_gz[b]: the segment's ghosts
	   in f[b], h[b] hold only +0 bits; sb_gsk: this fill skips it */
	uint8_t *sb_gk, *sb_gz[2], *sb_gsk;
	int sb_gs[5];
};

/* The integer bed transfer (units) of the link x -> y in direction a at
 * the stored depths h (lbm_bi with lbm_hs, lbm_dz and the constants of
 * L->kp), as the kernel adds it on an open link. */
static inline int32_t lbm_bed_int(const struct lbm *L, const float *h, int x,
				  int y, int a)
{
	const float ki = L->kp.kinv;
	return lbm_bi(L->kp.K, !(a & 1), lbm_hs(h[x], ki), lbm_hs(h[y], ki),
		      lbm_dz(L->zi[x], L->zi[y], L->z[x], L->z[y], ki));
}

/* The water stands level across the link x -> y at the depths h: the
 * same integer surface zi + H (wrapping, as lbm_dz), or either end dry
 * (H <= 0: no surface to compare). Still water is level on every link
 * (lbm_rest_depth gives all of it one integer surface). */
static inline int lbm_level(const struct lbm *L, const float *h, int x, int y)
{
	const float ki = L->kp.kinv;
	const int32_t Hx = lbm_hs(h[x], ki), Hy = lbm_hs(h[y], ki);
	if (Hx <= 0 || Hy <= 0)
		return 1;
	return (uint32_t)L->zi[x] + (uint32_t)Hx ==
	       (uint32_t)L->zi[y] + (uint32_t)Hy;
}

/* The integer depth (units) of water standing at z + h over a bed at z:
 * the rounded surface less the rounded bed (the initial state, the held
 * levels' reset; the bed potential lbm.zi is built from it). */
int64_t lbm_rest_depth(const struct lbm *L, float z, float h);

#define LBM_SB 32
enum { LBM_SB_ANY = 1, LBM_SB_W = 2, LBM_SB_E = 4, LBM_SB_N = 8,
       LBM_SB_S = 16, LBM_SB_NW = 32, LBM_SB_NE = 64, LBM_SB_SW = 128,
       LBM_SB_SE = 256, LBM_SB_ALL = 511 };
#define LBM_SB_MAXSPAN(L) (((L)->sbx + 1) / 2)

/* The column runs of padded row jj (1 .. ny) that the hybrid's marking
 * (lbm_fv_mark) must scan: *sp gets n pairs (first, last padded column,
 * inclusive); n returned. Outside them every cell is dry with dry
 * neighbours within LBM_SB cells, where the marks are 0 (lbm.c). */
int lbm_mark_spans(const struct lbm *L, int jj, const int32_t **sp);

/* Several processes with the hybrid (par.c lbm_par_hybrid): interior row
 * j of another band was received, and padded columns [c0, c1) of it hold
 * a run of its nonzero bits; c0 < 0: the row starts (no run yet). Keeps
 * the block-sparse step's output flags of that row (a superset). */
void lbm_sb_row_recv(struct lbm *L, int j, long c0, long c1);

/* 1 when lbm_init will pick the block-sparse step (the default; the
 * environment's WB_LBM_DENSE=1 selects the dense step, for comparisons). */
int lbm_sparse_default(void);

/* Several processes stepping the LBM's active blocks (par.c): the work
 * of each of the raster's ny rows, work[j], as the cells the block-sparse
 * step is expected to step in row j from the start's water h0 (NULL: the
 * raster's) and its sources (blocks with water or a source, and their
 * neighbours), plus a row's fixed cost; for wb_par_split. Returns the
 * expected stepped cells of the whole grid. */
double lbm_par_work(const struct wb_raster *r, const float *h0, double *work);

/* Set up the context from the raster (initial water at rest). threads: 0 =
 * all cores. Owns its memory: lbm_release(). */
enum wb_status lbm_init(struct lbm *L, const struct wb_raster *r,
			const struct wb_sim *sim, int threads,
			struct wb_diags *d);
void lbm_release(struct lbm *L);
/* lbm_init with the layout chosen: align 1 (lbm_init) pads W to a multiple
 * of 16 with interior column 0 64-byte aligned, align 0 keeps W = nx + 2
 * (OpenCL: its kernels take the east ghost column as W - 1). */
enum wb_status lbm_init_layout(struct lbm *L, const struct wb_raster *r,
			       const struct wb_sim *sim, int threads, int align,
			       struct wb_diags *d);
/* Free the host copies of the distributions f (an OpenCL back end that
 * keeps them on the device); L->f become NULL. */
void lbm_free_f(struct lbm *L);

/* Ghost cell g of edge s (WB_WEST..) at position k along it, its boundary
 * cell p (padded indices) and the inward normal (nxn, nyn). */
void lbm_edge_cell(const struct lbm *L, int s, int k, int *g, int *p,
		   int *nxn, int *nyn);

/* Inflow / level ramp factor at the current step: 0 .. 1 over ramp_steps. */
double lbm_ramp(const struct lbm *L);

/* Fill the ghost ring of f[cur] / h[cur] from the edge conditions. */
void lbm_fill_ghosts(struct lbm *L);

/* One row of the fused step (jj: padded row 1..ny), reading f[cur] and
 * writing f[!cur] with the constants in L->kp; adds to the row's
 * partials. */
void lbm_kernel_row(struct lbm *L, int jj);
/* The same on interior columns i0 .. i1 - 1 only: i0 a multiple of 8,
 * i1 one too or nx; each cell's result is lbm_kernel_row's. */
void lbm_kernel_cols(struct lbm *L, int jj, int i0, int i1);

/* Vector width the kernel runs with: 16 (AVX-512 present at run time and
 * L->simd8 == 0) or 8. The results are the same bits either way. */
int lbm_kernel_lanes(const struct lbm *L);

/* Fill k from L->p and L->unit (lbm_init and lbm_step do, into L->kp). */
void lbm_kernel_params(const struct lbm *L, struct lbm_kpar *k);

/* Advance n steps. Water deeper than LBM_H_RESCALE h_deep re-chooses the
 * lattice speed (lbm_rescale, a warning in d); WB_ESIM with where and
 * when in d if the run diverges. */
enum wb_status lbm_step(struct lbm *L, long n, struct wb_diags *d);

/* Re-choose the lattice speed for water hmax deep (e' = sqrt(g 1.5 hmax /
 * LBM_GH_RATIO), at least 1.25 e) and continue from the current flow:
 * every cell's populations become feq(h, u; e') plus the non-equilibrium
 * part scaled so that the viscous stress it carries is kept, the rest
 * population keeps the exact remainder (mass unchanged to the bit);
 * tau follows from the viscosity. A warning in d says when and why. */
void lbm_rescale(struct lbm *L, double hmax, struct wb_diags *d);
/* The depth the lattice speed p->e is chosen for: g h = LBM_GH_RATIO e^2
 * (water LBM_H_RESCALE times deeper makes lbm_step re-choose e). */
double lbm_depth_for(const struct lbm_params *p);

/* The hybrid (lbm_fv.c). lbm_fv_alloc: the per-cell arrays (-1: out of
 * memory); lbm_fv_free releases them (NULL ok). lbm_fv_mark chooses the
 * FV cells of the next step from the current state; lbm_fv_update
 * replaces their result in f[!cur] / h[!cur] after the kernel and the
 * specials (exact integer mass, see lbm_fv.c); *edge_adj: the change
 * to the water that crossed inflow and level edges this step as
 * edge_flux counted it (the FV cells take the HLL flux there). */
int lbm_fv_alloc(struct lbm *L);
void lbm_fv_free(struct lbm *L);
void lbm_fv_mark(struct lbm *L);
/* lbm_fv_mark for a caller whose copy of the state is current only in
 * some rows (the OpenCL back end): scan[j] (padded rows 0 .. H - 1)
 * nonzero for the rows to look at; the result is lbm_fv_mark's when
 * every row holding a core cell (lbm_fv.c) is scanned, f[cur] is current
 * in the scanned rows and h[cur] in them and the rows next to them (a
 * row without a core cell adds nothing to the marking). scan NULL: every
 * row. */
void lbm_fv_mark_rows(struct lbm *L, const uint8_t *scan);
/* lbm_fv_mark_rows by row segments (the OpenCL back end, src/cl.c):
 * segment s of padded row j is the interior columns LBM_FV_SEG s + 1 ..
 * LBM_FV_SEG (s + 1) (at most nx; the ghost columns go with the first
 * and last segment), scan[j ns + s] (ns = (nx + LBM_FV_SEG - 1) /
 * LBM_FV_SEG, padded rows 0 .. H - 1) nonzero for the segments to look
 * at. The result is lbm_fv_mark's when every segment holding a core
 * cell is scanned, f[cur] is current in the scanned segments, h[cur] in
 * them and the segments beside them in the row and the rows either
 * side, and, next to an inflow or level closure, a cell's test that the
 * closure's pull decides is made only where the segments of the cells
 * it pulls from are scanned (the caller scans them where it may pass).
 * work: 3 H ns bytes of scratch. Returns 0. */
#define LBM_FV_SEG 32
int lbm_fv_mark_segs(struct lbm *L, const uint8_t *scan, uint8_t *work);
void lbm_fv_update(struct lbm *L, int64_t *edge_adj);
/* Several processes (par.h): lbm_fv_update runs on the rank's band and
 * the cells its sub-steps read (the largest wave speed and the first
 * pass's books combined over the ranks in one exchange), and writes the
 * results of the band's FV cells alone. lbm_fv_books then adds the other ranks' edge
 * books to *edge_adj (one exchange; every rank the same sum);
 * lbm_fv_share does that and gives every rank every FV cell's result in
 * f[!cur] and h[!cur] (the CPU ranks, whose marking reads every row).
 * 0, or -1 when the exchange failed (par->failed). No-ops in one
 * process or without FV cells. */
int lbm_fv_books(struct lbm *L, int64_t *edge_adj);
int lbm_fv_share(struct lbm *L, int64_t *edge_adj);
/* The report's clamp_blocks, clamp_box, clamp_most and clamp_most_n
 * from a run's clamp map (lbm.cmap: ny rows of (nx + WB_CLAMP_BLOCK - 1)
 * / WB_CLAMP_BLOCK counts). Returns the map's total, which equals the
 * run's clamped cell-steps. */
long lbm_clamp_where(const uint32_t *map, int nx, int ny,
		     struct wb_solve_report *rep);

/* The hybrid's sub-step cap (LBM_FV_MAX_SUB) and its friction-first
 * cells into the report (fv_capped, fv_cfl, fv_friction_first,
 * fv_ff_speed) and, where they acted, warnings. */
void lbm_fv_report(const struct lbm *L, struct wb_solve_report *rep,
		   struct wb_diags *d);
/* Depth and velocity (m, m/s) of FV cell n: its own state (its
 * populations less the bed terms), not the pulled LBM moments. */
void lbm_fv_state(const struct lbm *L, int n, float *h, float *u, float *v);
/* The cells that are FV now, as a mask of nx x ny bytes (wb_state fv);
 * NULL when there are none, or with *oom set when memory ran out. */
unsigned char *lbm_fv_mask(const struct lbm *L, int *oom);

/* lbm_solve (solve.h) with the hybrid on (1) or off (0: pure LBM, the
 * Froude clamp holds supercritical cells); lbm_solve passes the scene's
 * simulation.lbm_hybrid. */
enum wb_status lbm_solve_hybrid(const struct wb_raster *r,
				const struct wb_sim *sim,
				const struct wb_solve_opts *o, struct wb_state *out,
				struct wb_solve_report *rep, struct wb_diags *d,
				int hybrid);

/* Macroscopic fields at the current time (depth m, velocity m/s), nx*ny
 * unpadded arrays of the caller; u, v may be NULL. */
void lbm_macro(struct lbm *L, float *h, float *u, float *v);

/* Water on the grid: exact integer units, and m^3. */
int64_t lbm_mass(const struct lbm *L);
double lbm_volume(const struct lbm *L);

#endif
