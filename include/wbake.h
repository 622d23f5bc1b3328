/*
 * wbake.h - the wbake library: scene, terrain, rasterised grid, solver state.
 *
 * wbake bakes water (surface height, flow, material ID, distance field) for
 * open worlds. The pipeline is
 *
 *   wb_scene_load()      JSON scene -> struct wb_scene        (src/scene.c)
 *   wb_raster_build()    scene + heightmap -> struct wb_raster (src/raster.c)
 *   lbm_solve()/swe_solve()  raster -> struct wb_state        (src/lbm.c, swe.c)
 *   maps, pyramid, pages, pack                                 (src/maps.c ...)
 *
 * Errors: every library call returns an enum wb_status (WB_OK on success; the
 * values are the exit codes of the command-line tools) and appends
 * human-readable problems to a struct wb_diags. The library never prints and
 * never exits; the mains in bake/ and tools/ decide what to show.
 *
 * Grid convention (everywhere in wbake): cell (i, j), column i in [0, nx),
 * row j in [0, ny), is element i + j*nx of every field. Row 0 is the first
 * (top) row of the heightmap image. World coordinates in metres: cell (i, j)
 * covers x in [i*dx, (i+1)*dx), y in [j*dx, (j+1)*dx) relative to the
 * scene's origin, so +y points down the image ("south"). Edges: west is
 * i = 0, east i = nx-1, north j = 0, south j = ny-1. Velocity u is along +x,
 * v along +y, in m/s.
 *
 * Ownership: functions named *_free release what the matching load/build
 * function allocated; each accepts NULL and zeroed structs.
 */
#ifndef WBAKE_H
#define WBAKE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define WB_VERSION_STRING "0.1.0"
#define WB_GRAVITY 9.81

/* Status codes; equal to the exit codes of DESIGN.md. */
enum wb_status {
	WB_OK = 0,
	WB_EUSAGE = 1, /* bad command line or option value */
	WB_EINPUT = 2, /* invalid scene or input file */
	WB_ESIM = 3,   /* simulation failed: diverged, NaN, mass lost */
	WB_EIO = 4,    /* could not write output, or out of memory */
	WB_ECANCEL = 130, /* stopped by the caller's cancel flag (wbake exits
			     130 after SIGINT, 143 after SIGTERM) */
};

/* ---- diagnostics ------------------------------------------------------- */

enum wb_severity { WB_SEV_ERROR, WB_SEV_WARNING, WB_SEV_NOTE };

struct wb_diag {
	enum wb_severity sev;
	char *file; /* may be NULL */
	char *path; /* JSON path such as "sources[2].width", may be NULL */
	int line, col; /* 1-based; 0 when unknown */
	char *msg;
};

/* At most WB_DIAGS_MAX errors and as many warnings are stored; the rest
 * are counted (errors, warnings) and in 'dropped', so that a hostile scene
 * with a million problems cannot grow memory. */
#define WB_DIAGS_MAX 1000
struct wb_diags {
	struct wb_diag *v;
	int n, cap;
	int errors, warnings;
	int dropped; /* counted but not stored */
};

void wb_diags_init(struct wb_diags *d);
void wb_diags_release(struct wb_diags *d);
/* Append one problem; printf-style message. file/path may be NULL. */
void wb_diag_add(struct wb_diags *d, enum wb_severity sev, const char *file,
		 const char *path, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
/* Shorthand for an error without path/line; returns 'st' so callers can
 * write: return wb_fail(d, WB_EIO, file, "cannot write: %s", strerror(e)); */
enum wb_status wb_fail(struct wb_diags *d, enum wb_status st, const char *file,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Format one diagnostic as "file:line:col: error: path: msg" into buf.
 * File, path and message are escaped for a terminal (wb_str_escape of
 * src/strutil.h): they may hold bytes from an untrusted scene. */
void wb_diag_format(const struct wb_diag *g, char *buf, size_t size);

/* ---- scene ------------------------------------------------------------- */

enum wb_hm_format { WB_HM_PNG, WB_HM_R16, WB_HM_R32F };

struct wb_terrain_desc {
	char *heightmap;       /* resolved path (relative paths are made
				  relative to the scene file's directory) */
	enum wb_hm_format format;
	int width, height;     /* required for r16/r32f; read from png */
	double dx;             /* metres per pixel, > 0 */
	double height_scale;   /* metres per unit: png/r16 value v (0..65535 or
				  0..255) maps to v/max*scale + offset; r32f
				  value v maps to v*scale + offset */
	double height_offset;
};

enum wb_edge_kind {
	WB_EDGE_WALL, WB_EDGE_OPEN, WB_EDGE_INFLOW, WB_EDGE_LEVEL, WB_EDGE_PERIODIC
};
enum wb_edge_side { WB_WEST, WB_EAST, WB_NORTH, WB_SOUTH };

struct wb_edge {
	enum wb_edge_kind kind;
	int free_slip;     /* wall: 1 free-slip, 0 no-slip (default) */
	/* inflow: exactly one of discharge (m^2/s per metre of edge, > 0) or
	   velocity (m/s into the domain, > 0) is set; the other is 0. depth (m)
	   is the water depth at the edge (0 = use the local depth). */
	double discharge, velocity, depth;
	/* level: fixed water surface elevation (m). Also used by inflow when
	   has_level is set. */
	double level;
	int has_level;
};

struct wb_polygon {
	int n;
	double *xy; /* n points, x0 y0 x1 y1 ... in metres */
};

enum wb_source_kind {
	WB_SRC_RIVER, WB_SRC_SPRING, WB_SRC_LAKE, WB_SRC_OCEAN, WB_SRC_RAIN,
	WB_SRC_SINK
};

struct wb_source {
	enum wb_source_kind kind;
	char *name;        /* may be NULL */
	int material;      /* index into scene->materials, -1 when none (sinks) */
	/* river: polyline (path), width (m), discharge (m^3/s) entering at the
	   first point. spring: point, radius, discharge. */
	struct wb_polygon path;
	double width, discharge;
	double point[2], radius;
	int has_point;
	/* lake: polygon area or seed point, surface level (m). ocean: level and
	   exclusion polygons. */
	struct wb_polygon area; /* lake polygon, rain/sink region (n = 0: none) */
	double level;
	struct wb_polygon *exclude;
	int n_exclude;
	/* rain: rate in mm/h over area (or everywhere when area.n == 0). */
	double rate_mm_h;
	/* sink: at point (radius) or in area; removes discharge m^3/s, or all
	   water reaching it when drain_all is set. */
	int drain_all;
};

struct wb_blocker {
	char *name;
	struct wb_polygon area;
	double bottom, top; /* elevations (m); water passes below bottom */
};

enum wb_falloff { WB_FALLOFF_NONE, WB_FALLOFF_LINEAR, WB_FALLOFF_SMOOTH };

struct wb_modifier {
	char *name;
	struct wb_polygon area;  /* polygon, or ... */
	double center[2], radius; /* ... a disc when area.n == 0 */
	double target[2];        /* target velocity (m/s) */
	double strength;         /* 1/s: relaxation rate toward the target */
	enum wb_falloff falloff;
	double falloff_width;    /* m, from the region's edge inward */
};

enum wb_material_kind { WB_MAT_RIVER, WB_MAT_LAKE, WB_MAT_OCEAN };

/* The longest name (bytes of UTF-8, without the NUL) of a material, source,
 * blocker, modifier or keep_dry entry: names end up in the pack's metadata,
 * the manifest and messages, so a scene may not make them unbounded. */
#define WB_NAME_MAX 64

/* The largest |x| or |y| of a scene's origin (m): world positions are the
 * origin plus cells times spacing in double precision, exact to well
 * below a millimetre within this range. */
#define WB_ORIGIN_MAX 1e9

struct wb_material {
	int id;            /* written into the material layer, 1..255 */
	char *name;        /* at most WB_NAME_MAX bytes */
	enum wb_material_kind kind;
	double amplitude, frequency, speed; /* wave parameters for the runtime */
};

enum wb_solver_kind { WB_SOLVER_LBM, WB_SOLVER_SWE };

struct wb_sim {
	enum wb_solver_kind solver;
	double manning;        /* Manning n (s m^-1/3), >= 0 */
	double viscosity;      /* kinematic, m^2/s, > 0 */
	double lattice_speed;  /* e = dx/dt (m/s); 0 = auto */
	double dt;             /* s; 0 = auto */
	long max_steps;        /* step cap */
	double tolerance;      /* relative velocity change for steady state */
	long window;           /* steps between convergence checks */
	double dry_depth;      /* m: below this a cell counts as dry */
	unsigned long long seed; /* random seed (SWE particles) */
	/* foam (SWE) */
	double foam_trapped, foam_steep;   /* generation rates */
	double foam_trapped_min, foam_trapped_max; /* clamping function bounds */
	double foam_steep_min, foam_steep_max;
	double foam_diffusion, foam_dissipation;
	int maccormack;        /* SWE: MacCormack advection instead of SL */
	int lbm_hybrid;        /* LBM: simulation.lbm_hybrid, the LBM/FV
				  hybrid of lbm_fv.c (CPU, one process) */
	int initial;           /* enum wb_initial: how the solver starts */
	/* simulation.coarse_levels: grids 2^L coarser solved first
	   (src/coarse.h, docs/hydrology.md); -1 "auto" (the scene default),
	   0 none. A zeroed struct wb_sim means none. */
	int coarse_levels;
	/* simulation.steady_acceleration (docs/hydrology.md "Steady
	   acceleration"): -1 "auto" (the scene default), 0 "off",
	   1 "low_froude". wb_bake_solve() resolves it into mass_scale. */
	int steady_accel;
	/* SWE pseudo-time of the continuity equation: 0 = off (the plain
	   solver); > 0 = on: dh/dt = eps (s - div(h u)) with eps chosen per
	   step in [mass_scale, 1] (the least that lets the gravity waves
	   follow the doubled advective CFL), and the storage of a window
	   joins the convergence test. Same fixed points of the depth
	   update; volume exact. A zeroed struct wb_sim means off. */
	double mass_scale;
};

/* simulation.initial: the solver's start (docs/hydrology.md) */
enum wb_initial {
	WB_INIT_HYDROLOGY = 0, /* the scene's water plus the hydrological
				  first guess (filled depressions, channels) */
	WB_INIT_SCENE = 1,     /* the scene's initial water only */
};

/* simulation.keep_dry[i]: a depression the first guess leaves dry (the
 * depression holding 'point', or every depression a cell of 'area' lies
 * in) */
struct wb_keep_dry {
	char *name;
	struct wb_polygon area; /* n = 0: use point */
	double point[2];
};

enum wb_layer {
	WB_LAYER_HEIGHT, WB_LAYER_FLOW, WB_LAYER_MATERIAL, WB_LAYER_DISTANCE,
	WB_LAYER_FOAM, WB_LAYER_COUNT
};

struct wb_output {
	int lods;            /* number of LODs, >= 1 */
	unsigned layers;     /* bit mask of 1u << enum wb_layer */
	unsigned bc_layers;  /* of those, block-compressed in the pack
				(output.compression; docs/wtp-format.md 4.1) */
	double distance_max; /* m: distance field clamp */
	/* what counts as water in the maps (docs/hydrology.md): depth at
	   least min_depth (m; 0: sim.dry_depth) and, where shallower than
	   WB_FLOW_DEPTH_FACTOR * min_depth, unit discharge h|u| at least
	   min_flow (m^2/s; 0: no flow test) */
	double min_depth;
	double min_flow;
};
#define WB_FLOW_DEPTH_FACTOR 10
#define WB_MIN_DEPTH_DEFAULT 0.03     /* m */
#define WB_MIN_FLOW_RAIN_DEFAULT 0.01 /* m^2/s, scenes with rain */

struct wb_scene {
	char *file;          /* path of the scene file as given */
	char *dir;           /* its directory, for relative paths */
	char *name;          /* used for OUTDIR/<name>.wtp */
	int version;
	double origin[2];    /* world position of the grid's corner (m) */
	struct wb_terrain_desc terrain;
	struct wb_edge edges[4]; /* indexed by enum wb_edge_side */
	/* initial water: level everywhere (has_level), or in polygons */
	int init_has_level;
	double init_level;
	struct wb_polygon *init_areas;
	double *init_area_levels;
	int n_init_areas;
	struct wb_source *sources;
	int n_sources;
	struct wb_blocker *blockers;
	int n_blockers;
	struct wb_modifier *modifiers;
	int n_modifiers;
	struct wb_material *materials;
	int n_materials;
	struct wb_keep_dry *keep_dry; /* simulation.keep_dry */
	int n_keep_dry;
	struct wb_sim sim;
	struct wb_output output;
	unsigned char scene_sha256[32]; /* hash of the scene file bytes */
};

/* Parse and validate the scene in 'path'. On success fills *sc (free with
 * wb_scene_free) and returns WB_OK; may add warnings. On failure returns
 * WB_EINPUT (or WB_EIO when the file cannot be read) with every problem
 * found in d. */
enum wb_status wb_scene_load(const char *path, struct wb_scene *sc,
			     struct wb_diags *d);
/* Same, from memory; 'file' names the buffer in messages, 'dir' resolves
 * relative paths (may be NULL: current directory). */
enum wb_status wb_scene_parse(const char *text, size_t len, const char *file,
			      const char *dir, struct wb_scene *sc,
			      struct wb_diags *d);
void wb_scene_free(struct wb_scene *sc);
/* Give diagnostics d->v[from..] that name a JSON path of 'file' but no line
 * (those of later steps, such as the rasteriser) the line and column of
 * that path in the scene text. */
void wb_scene_locate(const char *text, size_t len, const char *file,
		     struct wb_diags *d, int from);

/* ---- terrain ----------------------------------------------------------- */

struct wb_heightmap {
	int nx, ny;
	float *z; /* metres, nx*ny, row 0 = first image row */
	unsigned char sha256[32]; /* hash of the file bytes */
};

/* Load the heightmap the terrain description names and scale it to metres.
 * Missing, unreadable, truncated or wrongly-sized files are WB_EINPUT with
 * the file named. */
enum wb_status wb_heightmap_load(const struct wb_terrain_desc *t,
				 struct wb_heightmap *hm, struct wb_diags *d);
/* Decode from memory (used by the loader and the fuzz target). */
enum wb_status wb_heightmap_decode(const unsigned char *data, size_t len,
				   const struct wb_terrain_desc *t,
				   struct wb_heightmap *hm, struct wb_diags *d);
void wb_heightmap_free(struct wb_heightmap *hm);

/* ---- rasterised grid: the solvers' input ------------------------------- */

/* Per-cell flag bits of wb_raster.flags. */
enum {
	WB_CELL_BLOCKER = 1 << 0, /* a blocker spans this cell */
	WB_CELL_FIXED   = 1 << 1, /* surface held at fixed_level (ocean) */
	WB_CELL_SINK_ALL = 1 << 2, /* drains all water reaching it */
	WB_CELL_MODIFIER = 1 << 3,
	WB_CELL_SOURCE  = 1 << 4,
};

struct wb_raster {
	int nx, ny;
	double dx;            /* m */
	double origin[2];
	float *z;             /* terrain elevation (m) */
	float *h0;            /* initial water depth (m), >= 0 */
	float *u0, *v0;       /* initial velocity (m/s) at cell centres, NULL:
				 at rest (wb_raster_alloc leaves them NULL;
				 the SWE solver reads them, the LBM starts at
				 rest) */
	float *src;           /* water added per unit area (m/s); < 0 sinks */
	float *block_bot;     /* blocker bottom elevation (m), +INF if none */
	float *block_top;     /* blocker top elevation (m), -INF if none */
	float *fixed_level;   /* surface elevation (m) of WB_CELL_FIXED cells */
	float *mod_u, *mod_v; /* modifier target velocity (m/s) */
	float *mod_k;         /* modifier relaxation rate (1/s), 0 = none */
	uint8_t *body;        /* water body (index into scene sources + 1) whose
				 region covers the cell, 0 = none */
	uint8_t *flags;       /* WB_CELL_* bits */
	struct wb_edge edges[4];
	double total_inflow;  /* m^3/s entering through sources and edges
				 (informational, sinks not subtracted) */
};

/* Allocate every field of an nx x ny grid at spacing dx (metres): all zero,
 * no blockers (block_bot +INF, block_top -INF), walls on every edge. For
 * callers that build a raster by hand (tests, tools). WB_EIO when out of
 * memory (nothing left allocated). Free with wb_raster_free(). */
enum wb_status wb_raster_alloc(struct wb_raster *r, int nx, int ny, double dx);
/* Rasterise the scene over the heightmap. */
enum wb_status wb_raster_build(const struct wb_scene *sc,
			       const struct wb_heightmap *hm,
			       struct wb_raster *r, struct wb_diags *d);
void wb_raster_free(struct wb_raster *r);
/* Set mask[i + j nx] = 1 for every cell of r whose centre is inside the
 * polygon (even-odd rule; cells outside are left as they are). Work is
 * bounded by the polygon's box clipped to the grid. Returns the number of
 * cells marked, or -1 when out of memory. */
long wb_raster_polygon_mask(const struct wb_raster *r,
			    const struct wb_polygon *p, unsigned char *mask);

/* ---- solver state: the solvers' output --------------------------------- */

struct wb_waterfall {
	double x, y;       /* world position (m) of the edge's centre */
	double width;      /* m */
	double flux;       /* m^3/s falling */
	double drop;       /* m: height of the fall */
};

struct wb_state {
	int nx, ny;
	double dx;
	float *h;          /* depth (m) */
	float *u, *v;      /* depth-averaged velocity (m/s) at cell centres */
	float *foam;       /* foam density 0..1, NULL when not simulated */
	struct wb_waterfall *falls;
	int n_falls;
	/* LBM hybrid: 1 where the finite-volume update holds the cell at the
	 * end (its flow may be supercritical: no limiter holds it), 0 where
	 * the lattice does; NULL when no cell is FV */
	unsigned char *fv;
};

void wb_state_free(struct wb_state *s);

/* Progress callback: called from the solving thread every few steps;
 * residual is NAN until the first convergence check has measured it. */
typedef void (*wb_progress_fn)(void *user, long step, long max_steps,
			       double residual);

/* Window callback: called by the CPU LBM solver (one process) when a
 * window of its steady-state test closes. For diagnostics
 * (tests/bench_world_steady.c); the arrays are the solver's, nx * ny
 * values each in rows, valid during the call only. */
struct wb_window_info {
	long step;
	int nx, ny;
	const float *h;          /* the window's mean depth (m) */
	const float *u0, *v0;    /* the window before's mean velocity (m/s) */
	const float *u1, *v1;    /* this window's */
	double residual;         /* NAN at the first window */
	double volume;           /* m^3 on the grid now */
	double vol_in, vol_out;  /* m^3 since the start */
};
typedef void (*wb_window_fn)(void *user, const struct wb_window_info *w);

struct wb_par;

struct wb_solve_opts {
	int threads;         /* 0 = all cores */
	long steps;          /* > 0: run exactly this many steps, no conv. stop */
	wb_progress_fn progress; /* may be NULL */
	void *progress_user;
	int opencl;          /* run on an OpenCL device (OPENCL=1 builds) */
	int cl_device;       /* index in the list wb_cl_list_devices() gives */
	/* may be NULL; when *cancel becomes non-zero (a signal handler of the
	   caller sets it) the solver stops within a few steps and returns
	   WB_ECANCEL */
	const volatile sig_atomic_t *cancel;
	/* one bake over several processes (src/par.h, make MPI=1): this
	   process's rows and the exchange hooks; NULL: one process */
	struct wb_par *par;
	wb_window_fn window; /* may be NULL */
	void *window_user;
};

/* How a bake's solver started (manifest solver.start). */
enum wb_start {
	WB_START_SCENE = 0,     /* the scene's initial water */
	WB_START_HYDROLOGY = 1, /* the hydrological first guess (hydro.h) */
	WB_START_WARM = 2,      /* an earlier bake's saved state (--from) */
};
#define WB_RES_HISTORY 1024 /* = WB_HIST_MAX of src/bake.h */

/* One coarse level of a coarse-to-fine start (manifest solver.levels) */
struct wb_level_report {
	int factor;          /* cells of the solver grid per coarse cell side */
	int nx, ny;
	double dx;           /* m */
	long steps;
	int converged;
	double residual;     /* last window's; NAN when not measured */
	double seconds;      /* wall time of the level's solve */
};
#define WB_LEVELS_MAX 4

#define WB_CLAMP_BLOCK 32 /* cells: the grain of clamp_blocks */

struct wb_solve_report {
	long steps;
	int converged;
	double residual;     /* last relative velocity change; NAN when no
				convergence check measured it */
	double sim_time;     /* s of simulated time */
	double dt, lattice_speed, tau; /* chosen parameters (tau: LBM only) */
	double vol_initial, vol_final; /* m^3 of water on the grid */
	double vol_in, vol_out;        /* m^3 entered / left (sources, edges) */
	double vol_particles;          /* m^3 in flight (SWE) */
	double balance_error;  /* |initial + in - out - final| / max(...) */
	long clamped;        /* cell-steps clamped by the stability checks */
	/* LBM: where they were, over the whole run: the blocks of
	 * WB_CLAMP_BLOCK x WB_CLAMP_BLOCK cells that hold clamped cell-steps,
	 * the box around them and the block with the most (cells x0, x1, y0,
	 * y1, the ends exclusive; on a tie the first in row-major order);
	 * clamp_blocks 0: nothing clamped, or SWE */
	long clamp_blocks;
	int clamp_box[4], clamp_most[4];
	long clamp_most_n;
	/* a run to steady that stopped at its step cap after two windows or
	 * more: where the last window's change of the mean velocity sits
	 * (the residual's numerator, depth times the squared change, summed
	 * by square tiles of unsteady_tile cells, at most 32 along a side):
	 * the tile with the most (cells x0, x1, y0, y1, the ends exclusive)
	 * and its share of the whole, and the box around the fewest tiles,
	 * the largest first, that hold at least half, with their share.
	 * unsteady_tile 0: not measured (steady, --steps, one window, no
	 * change) */
	int unsteady_tile;
	int unsteady_most[4], unsteady_box[4];
	double unsteady_most_share, unsteady_box_share;
	/* LBM hybrid: steps whose finite-volume update needed more than its
	 * sub-step cap (LBM_FV_MAX_SUB, src/lbm.h), and the largest (|u| +
	 * c) dt / dx it then met (it ran beyond its stability limit: a
	 * warning and a manifest entry) */
	long fv_capped;
	double fv_cfl;
	/* LBM hybrid: FV cell-steps that read a speed above the lattice
	 * speed and had their friction before the sub-steps instead of after
	 * them, and the largest such speed (m/s; a warning and a manifest
	 * entry) */
	long fv_friction_first;
	double fv_ff_speed;
	/* LBM: what set the lattice speed ("depth", "inflow velocity",
	 * "given", "re-chosen during the run"; static string, NULL for SWE),
	 * the depth it was chosen for and the flood bound of the terrain (m),
	 * the times it was re-chosen, the viscosity simulated and asked for
	 * (m^2/s; they differ when tau was raised to its floor) */
	const char *lattice_speed_reason;
	double h_deep, h_flood;
	double slope_speed;  /* LBM: m/s, the fastest flow the start's water
				drives down its slopes (Manning); NAN without
				friction */
	long rescales;
	double viscosity, viscosity_requested;
	int bytes_per_cell;  /* solver memory traffic per cell update */
	double seconds;      /* wall time */
	/* LBM: the interior cell-steps this process stepped (the block-sparse
	 * step skips dry blocks; over several processes its band's: how the
	 * split by water held up; not in the manifest) */
	long long cells_stepped;
	/* LBM on OpenCL: the host's seconds in the solve enqueueing the
	 * steps (the halo exchanges not counted) and waiting for the device
	 * at its checks (not in the manifest): a host that waits little is
	 * what bounds the step, not the device */
	double host_enqueue_s, host_wait_s;
	/* with WB_CL_PROFILE=1: the device's seconds in kernels over the
	 * whole solve (0 when not profiled; not in the manifest) */
	double dev_kernel_s;
	/* the solver's seconds before its first step (its own set-up:
	 * lattice or grids, initial state, device uploads), a part of
	 * 'seconds' (not in the manifest) */
	double setup_s;
	/* how the bake started (filled by wb_bake_solve, src/bake.c, after
	   the solver; the solvers leave them zero) */
	int start;           /* enum wb_start */
	long guess_lake_cells, guess_channel_cells; /* first guess */
	double guess_volume; /* m^3 the first guess added */
	double start_volume; /* m^3 on the grid at the start */
	int steady_accel;    /* the full-resolution run used the SWE steady
				acceleration (simulation.steady_acceleration
				resolved: 0 off, 1 low_froude) */
	/* residual after each convergence window, as the solver reported it
	   (step at which it was reported); the first n_windows <=
	   WB_RES_HISTORY entries */
	/* coarse-to-fine (src/coarse.h): the coarse levels solved before this
	   run, coarsest first (n_levels 0: none); filled by wb_bake_solve */
	int n_levels;
	struct wb_level_report level[WB_LEVELS_MAX];
	int n_windows;
	long win_step[WB_RES_HISTORY];
	double win_residual[WB_RES_HISTORY];
};

#endif /* WBAKE_H */
