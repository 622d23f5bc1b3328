/*
 * swe.h - internal API of the staggered shallow-water solver (SWE) with
 * waterfall particles and grid foam (swe.c, swe_particles.c, foam.c).
 *
 * The public entry point is swe_solve() (solve.h). This header exposes the
 * solver context and its passes so that another back end (OpenCL) can reuse
 * the set-up, the boundary handling, the particles and the bookkeeping and
 * replace only the per-row kernels.
 *
 * Layout: every grid field is stored with a one-cell ghost ring, stride
 * W = nx + 2; interior cell (i, j) is element P(i, j) = (i + 1) + (j + 1) * W.
 * Faces share the index of the cell they bound on the west / north:
 *   u[P(i, j)] is the x-velocity on the face between (i-1, j) and (i, j)
 *              (i = 0 .. nx: face nx is the east boundary, in the ghost column);
 *   v[P(i, j)] is the y-velocity on the face between (i, j-1) and (i, j)
 *              (j = 0 .. ny: face ny is the south boundary, in the ghost row).
 * h and H (terrain) of ghost cells are filled from the edge conditions every
 * step, so the per-row kernels have no boundary branches.
 *
 * Determinism: rows are processed in parallel, every reduction goes through
 * per-row partials summed serially, particles are created, deposited and
 * compacted serially in a fixed order; random numbers are a counter-based
 * hash of (seed, step, face, k). Results are byte-identical for any thread
 * count.
 */
#ifndef WB_SWE_H
#define WB_SWE_H

#include <stdint.h>

#include "wbake.h"

/* Fixed numerical constants of the method (docs/swe.md says why). */
#define SWE_CFL_ADV 0.25      /* |u| dt/dx per face: keeps upwind depth >= 0 */
#define SWE_CFL_WAVE 0.5      /* sqrt(g h) dt/dx */
/* steady acceleration (sim.mass_scale > 0): |u| dt/dx per face of the
   momentum step (semi-Lagrangian trace within a cell; the upwind depth
   stays >= 0 since eps |u| dt/dx <= SWE_CFL_ADV is kept too), and the
   least eps whatever mass_scale asks */
#define SWE_ACC_CFL_ADV 0.5
#define SWE_ACC_EPS_MIN 0.01
#define SWE_VEL_ALPHA 0.5     /* velocity clamp |u| <= alpha dx/dt */
#define SWE_OVERSHOOT_BETA 0.5 /* h_avgmax = beta dx^2 / (g dt^2) */
#define SWE_FALL_DROP 2.0     /* waterfall edge: terrain drop > this * dx */
#define SWE_PART_VOL 0.01     /* particle volume target, times dx^3 */
#define SWE_PART_MAX_PER_FACE 16
#define SWE_PART_DRAG 0.02    /* 1/m: quadratic drag, terminal speed sqrt(g/k) */
#define SWE_PART_CAP 4000000L /* pool limit; beyond it water stays on the grid */
#define SWE_COMPACT_EVERY 5   /* steps between pool compactions */
/* Steady state (swe_solve): window means of at least SWE_SAMPLES samples;
 * their relative change is measured against at least SWE_RES_FLOOR m/s
 * (depth-weighted RMS), so still water converges; cells shallower than
 * SWE_THIN dry_depth are films and do not count. */
#define SWE_SAMPLES 32
#define SWE_RES_FLOOR 0.1
#define SWE_THIN 10.0

/* One candidate waterfall face: terrain drops by more than SWE_FALL_DROP*dx
 * from cell 'up' to cell 'dn' across face 'face' (an index into u when
 * 'vface' is 0, into v otherwise). */
struct swe_fall {
	int vface;
	int dir;          /* +1: up -> dn along +x/+y, -1 along -x/-y */
	long face, up, dn; /* padded indices */
	int i, j;         /* interior index of the face (as u/v faces) */
	double emit_cur, emit_last; /* m^3 emitted in the current / last window */
	float flux_step;  /* face flux (m^2/s) of this step, 0 when inactive */
};

/* Particle pool (structure of arrays). World coordinates: x, y in metres
 * from the grid corner, z elevation in metres. */
struct swe_particles {
	long n, cap;
	double *x, *y, *z, *vx, *vy, *vz, *vol;
	int32_t *hit; /* per particle after advance: -1 flying, -2 gone (left
			 the domain), else padded cell index of impact */
};

/* Sparse per-cell actions prepared at init (padded cell indices). */
struct swe_cell_list {
	long n;
	long *c;
	float *val;
};

/* Block-sparse stepping (swe.c, docs/scale.md): the grid is cut into
 * SWE_BLOCK x SWE_BLOCK blocks. A block is wet when a cell (ghosts of edge
 * blocks included) is deeper than the dry depth or an owned face has a
 * velocity whose bits are not 0; active when it is wet, or a neighbour (of
 * 8) is wet within SWE_WAKE_MARGIN cells of it (or it holds a source,
 * fixed-level cell or modifier face, or a particle deposit of this step;
 * such a block wakes all 8 neighbours); halo when it or a neighbour is
 * active. The height step and the
 * MacCormack forward pass run on halo blocks, the velocity step on active
 * blocks. Every other block's update would leave its dry depths as they
 * are and its faces closed (no flux), so skipping it gives the dense
 * bytes; a block leaving a set gets the values the dense path would
 * write. */
#define SWE_BLOCK 32
/* Cells from a block's edge within which its water wakes the neighbour
 * across that edge (or corner). One step reads at most two cells away
 * (docs/scale.md "Why the bytes are the dense bytes"); 4 leaves a margin. */
#define SWE_WAKE_MARGIN 4
/* Timed thread choice of the sparse passes (struct swe_sparse, tune):
 * steps per timed batch, first and largest steps between probes. */
#define SWE_TUNE_BATCH 4
#define SWE_TUNE_PERIOD 128
#define SWE_TUNE_PERIOD_MAX 4096
struct swe_sparse {
	int on;               /* 1: block-sparse step (default; WB_SWE_DENSE=1
				 in the environment or on = 0 after swe_init
				 selects the dense reference) */
	int nbx, nby;
	long nblk;
	uint8_t *always;      /* blocks with sources, fixed cells, modifiers */
	uint8_t *act, *halo;  /* this step's sets (act also: deposits) */
	uint8_t *pact, *phalo; /* the previous step's */
	uint8_t *wet;
	uint8_t *wmask;       /* per wet block: the neighbours its water is
				 within SWE_WAKE_MARGIN cells of (bit
				 (dj + 1) * 3 + (di + 1), centre left out) */
	float *film;          /* largest depth of a sleeping block (<= eps) */
	uint8_t *nz;          /* a sleeping block holds a depth other than
				 +-0 (a film): swe_means_sample adds it; set
				 when it leaves the active set, constant
				 while it sleeps */
	int *runs;            /* per band: halo runs then active runs, pairs
				 (ia, ib) of columns, at most nbx + 1 each */
	int *nrun;            /* per band: [2 b] halo runs, [2 b + 1] active */
	int *strip;           /* per thread: a row's strip runs (6 (nbx + 1)) */
	int first;            /* no previous step: scan every block */
	int nthr;             /* threads of the sparse passes (sparse_threads) */
	long thr_cells;       /* active cells per thread at least (1 << 15;
				 tests: 1) */
	/* Thread choice by timing (sparse_tune): with few active cells, or on
	   a machine whose cores other programs share, one thread can beat
	   all of them (the passes' barriers wait for a thread that is not
	   running). Every few hundred steps, a short batch runs with the
	   other choice and the faster per active block is kept. The choice
	   changes no byte (every pass is thread-count independent). */
	int tune;             /* 1: choose by timing (default); 0: nthr from
				 thr_cells alone (tests) */
	int t_best, t_cur;    /* 0: one thread, 1: every allowed thread */
	int t_cnt;            /* steps in the current batch */
	long t_next;          /* steps until the next probe */
	long t_period;        /* steps between probes (doubles while the
				 probes lose) */
	double t_acc;         /* seconds per active block, summed over the
				 batch */
	double t_cost[2];     /* last batch's mean for each choice */
	long n_act, n_halo;   /* blocks in the sets this step */
	long act_steps;       /* sum of n_act over the steps (statistics) */
};

struct swe_ctx;
/* Column runs of row j to step: the active blocks' (active = 1) or the
 * halo's (0) when sparse, else the whole row (written to whole[2]); *n
 * runs, pairs (ia, ib). */
const int *swe_row_runs(const struct swe_ctx *s, int j, int active, int *n,
			int whole[2]);

struct swe_ctx {
	int nx, ny, W;
	long ncell;           /* W * (ny + 2) */
	double dx, g;
	struct wb_sim sim;
	int threads;
	const struct wb_raster *r;
	/* fields (padded) */
	float *h, *h1;        /* depth now / after height integration */
	float *H;             /* terrain, ghosts filled at init */
	float *u, *v, *u1, *v1; /* face velocities, double buffered */
	float *ut, *vt;       /* MacCormack forward estimates */
	float *usnap, *vsnap; /* snapshot for the convergence residual */
	float *bb;            /* blocker bottom (+INF none) */
	float *fu, *fv;       /* face mass fluxes (m^2/s) of the height step */
	float *foam, *foam1;  /* NULL when foam is off */
	/* sparse actions */
	struct swe_cell_list src, fixed, sink, mod_u, mod_v;
	float *mod_tu, *mod_tv; /* modifier targets for mod_u / mod_v lists */
	/* waterfalls */
	struct swe_fall *falls;
	long n_falls;
	struct swe_particles P;
	double *dep_v, *dep_pu, *dep_pv; /* per-cell deposit sums (if n_falls) */
	long *dep_list;
	long n_dep;
	double t_cur, t_last; /* simulated time of the current / last window */
	/* per-row scratch */
	double *row_d, *row_d2;
	long *row_l;
	/* fused step (swe.c, no waterfalls): per thread rings of 4 rows of W
	   floats for fu, fv and the MacCormack estimates ut, vt; first entry of each row (ny + 1) in the src, fixed
	   and sink lists; their volume changes of the step, per entry */
	float *ring;
	uint8_t *cls;         /* per thread, W bytes: block kinds of a face row */
	long *src_row, *fix_row, *sink_row;
	double *src_dv, *fix_dv, *sink_dv;
	int has_blk;          /* some cell has a blocker (bb < +INF) */
	float tsgn[4];        /* per edge (enum wb_edge_side order): sign of the
				 tangential ghost faces, -1 at a no-slip wall
				 (and side-wall friction), else +1 */
	/* time stepping and bookkeeping */
	double dt, t;
	/* steady acceleration (sim.mass_scale, docs/hydrology.md): the
	   continuity equation runs on dtm = eps_m dt (eps_m = 1: plain),
	   the advective CFL and the velocity clamp on cfl_adv, vel_alpha */
	double dtm, eps_m, cfl_adv, vel_alpha;
	float hmax_step;      /* h_avgmax of this step (overshoot reduction) */
	float hdep_max;       /* largest depth of h, ghosts included: below
				 h_avgmax no flux needs the overshoot term */
	long step;
	double vol_initial, vol_in, vol_out;
	long clamped;
	int foam_on;
	/* divergence report */
	long bad_cell;
	struct swe_sparse sp;
	struct wb_par *par;   /* several processes (par.h); NULL: one */
	int par_err;          /* an exchange inside a pass failed */
};

/* swe.c */
enum wb_status swe_init(struct swe_ctx *s, const struct wb_raster *r,
			const struct wb_sim *sim, int threads,
			struct wb_diags *d);
/* Threads worth using on this grid: at most one per 128 Ki cells (on
 * small grids the fork/join and barriers of the passes cost more than the
 * work; results do not depend on the thread count). */
int swe_threads_for(const struct wb_raster *r, int threads);

/* The speed after implicit Manning friction of a face (what every face
 * of the step uses; exposed for tests): the root w of
 * w (1 + k sqrt(w^2 + t^2)) = a, a and t >= 0, k = g n^2 dt / h^(4/3). */
float swe_manning_speed(float a, float t, float k);

/* The momentum-conservative advection of one face velocity q0 (every
 * face of the step where the flow compresses; exposed for tests): qm, qp
 * the faces behind and ahead, qtm, qtp across, fm, f0, fq their and this
 * face's mass fluxes, tm, tp the fluxes at the face's ends (m^2/s), hf
 * the face's depth, k = dt / dx. */
float swe_cons_adv(float q0, float qm, float qp, float qtm, float qtp,
		   float fm, float f0, float fq, float tm, float tp, float hf,
		   float k);
/* One full step (dt chosen from CFL unless sim.dt > 0 caps it). WB_ESIM
 * with the place and step named in d when the state becomes non-finite. */
enum wb_status swe_step(struct swe_ctx *s, struct wb_diags *d);
/* Relative change ||U - U_snap|| / ||U|| of the face velocities since the
 * previous call, then snapshot U. 0 when both are zero. */
double swe_residual(struct swe_ctx *s);
/* m^3 of water on the grid (interior cells), summed in a fixed order. */
double swe_grid_volume(const struct swe_ctx *s);
/* Fill *out (malloc'd fields, caller frees with wb_state_free): depth,
 * cell-centre velocity (average of the two faces), foam, waterfall list. */
enum wb_status swe_export(const struct swe_ctx *s, struct wb_state *out,
			  struct wb_diags *d);
void swe_release(struct swe_ctx *s);
/* Free one of the context's grid fields (&s->u1, ...; they come from mmap,
 * not malloc) and set it to NULL; swe_release skips NULLs. */
void swe_field_drop(struct swe_ctx *s, float **f);

/* Window means of the steady-state test (swe_solve; docs/swe.md "Steady
 * state"): the depth and the face velocities are summed every 'every'
 * steps; at the end of each window their means go to cell centres. */
struct swe_means {
	long every, nsamp, windows;
	long ncell, n;         /* sizes of the padded sums and of the means */
	uint8_t *blk;          /* per block: bit 0 sampled in this window,
				  bits 1, 2 in the one / two before (where
				  the sums and means can be nonzero) */
	float *sh, *su, *sv;   /* padded sums over the window's samples */
	float *mh, *mu, *mv;   /* last window's means, nx * ny, cell centres */
	float *pu, *pv;        /* the window before's mean velocity */
};
/* Allocate (zeroed) for the context's grid; 0 on success. Release even
 * after a failure. */
int swe_means_init(struct swe_means *m, const struct swe_ctx *s, long window);
void swe_means_release(struct swe_means *m);
/* Add the context's h, u, v to the sums (m->nsamp + 1). */
void swe_means_sample(struct swe_means *m, const struct swe_ctx *s);
/* Close the window from the sums (m->nsamp samples): means into mh, mu,
 * mv (the previous ones to pu, pv), sums cleared; the relative change
 * of the mean velocity, INFINITY after the first window. */
double swe_means_close(struct swe_means *m, const struct swe_ctx *s);

/* swe_particles.c */
/* Find candidate waterfall faces (static terrain test); allocates s->falls
 * and, when there are any, the deposit buffers. */
enum wb_status swe_falls_find(struct swe_ctx *s);
/* Mark the candidates active this step (flow from up to dn, dn's surface
 * below up's terrain) and store their face flux. Call before the height
 * integration. */
void swe_falls_activate(struct swe_ctx *s);
/* After the height integration: take the active faces' flux out of the
 * downstream cells and emit it as particles. */
void swe_falls_emit(struct swe_ctx *s);
/* Advance every particle (parallel), then deposit those that hit water or
 * terrain (serial, in pool order) and compact the pool every few steps. */
void swe_particles_step(struct swe_ctx *s);
double swe_particles_volume(const struct swe_particles *p);
void swe_particles_release(struct swe_particles *p);
/* Grow the pool to hold at least 'need' particles; 0 on success. */
int swe_particles_reserve(struct swe_particles *p, long need);
/* Advance only (parallel over particles); used by the benchmark. */
void swe_particles_advance(struct swe_particles *p, const struct swe_ctx *s,
			   const float *h);
/* Build the waterfall list of the state from the candidates' emission. */
enum wb_status swe_falls_export(const struct swe_ctx *s, struct wb_state *out);

/* foam.c */
/* One foam step on s->foam with depth h (after height integration) and the
 * new face velocities u, v: generation (trapped air, steepness, clamped),
 * diffusion, dissipation, semi-Lagrangian advection. */
void foam_step(struct swe_ctx *s, const float *h, const float *u,
	       const float *v);
/* The talk's clamping function (Ihmsen et al. 2012):
 * (min(I, tmax) - min(I, tmin)) / (tmax - tmin); a step at tmin when
 * tmax <= tmin. */
float foam_clampf(float I, float tmin, float tmax);

/* Counter-based random number in [0, 1) from (seed, a, b, c). */
double swe_rand(unsigned long long seed, unsigned long long a,
		unsigned long long b, unsigned long long c);

#endif
