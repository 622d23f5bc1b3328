/*
 * hydro.h - terrain hydrology on the solver grid: depression filling,
 * downstream reach, flow routing (used for the solvers' first guess,
 * src/hydro.c hydro_first_guess, and by the LBM to bound the deepest water a scene can
 * hold).
 *
 * Grids are nx*ny, row-major, index i = x + y*nx, metres. Neighbours are
 * the 8 cells around a cell (D8). Every function is deterministic: ties
 * are broken by cell index, never by thread or allocation order. Nothing
 * here prints or exits; functions return 0, or -1 when out of memory.
 */
#ifndef WB_HYDRO_H
#define WB_HYDRO_H

/* Priority-flood depression filling (Barnes, Lehman, Mulla 2014,
 * "Priority-flood: An optimal depression-filling and watershed-labeling
 * algorithm", Algorithm 2 "improved priority-flood", the epsilon-free
 * variant: filled depressions are exactly flat at their spill level).
 * z: terrain, nx*ny, metres. outlet: nx*ny mask, nonzero where water
 * leaves the domain (open edges, sinks, held levels); NULL means every
 * edge cell is an outlet.
 * level: out, nx*ny: the lowest water level at which cell i drains to an
 * outlet (>= z[i]); INFINITY where no outlet can be reached.
 * Cells whose z is not finite (NaN, +-INF) are treated as walls: level
 * INFINITY, water never passes them. A level of -0 is written +0.
 * The grid is cut into strips of rows flooded in parallel (OpenMP's
 * default team; src/hydro.c "the filled levels in parallel"); the levels
 * are the same bytes for any thread count.
 * Returns 0, or -1 when out of memory. */
int hydro_fill(const float *z, int nx, int ny, const unsigned char *outlet,
	       float *level);

/* The same with outlet levels: an outlet cell i starts at
 * max(z[i], outlet_level[i]) (a held lake or ocean surface) instead of
 * z[i]. outlet_level may be NULL (outlets start at z). */
int hydro_fill_levels(const float *z, int nx, int ny,
		      const unsigned char *outlet, const float *outlet_level,
		      float *level);

/* hydro_fill_levels on exactly 'strips' strips of rows (at most ny; 1:
 * one flood), whatever the thread count: the same bytes for any strips
 * (tests/test_hydro_fast.c). */
int hydro_fill_strips(const float *z, int nx, int ny,
		      const unsigned char *outlet, const float *outlet_level,
		      float *level, int strips);

/* Cells that water starting in the seed cells reaches flowing over the
 * filled surface 'level' (downhill or flat, 8 neighbours): j is reached
 * from reached i when level[j] <= level[i]. Seeds are reached. Cells whose
 * z is not finite are never reached. reach: out mask nx*ny (0/1).
 * Returns 0 or -1 (OOM). */
int hydro_downstream(const float *level, const float *z, int nx, int ny,
		     const unsigned char *seed, unsigned char *reach);

/* D8 receivers over a filled surface: rcv[i] is the neighbour of i that
 * water leaves i for, or -1 for outlets and cells with no way out. On
 * slopes it is the steepest descent of 'level' (drop over distance). On
 * flats (filled lakes) it follows the priority-flood's own order, toward
 * the spill point: the tree the priority-flood of hydro_fill_levels
 * would build there (each cell's first processed neighbour), replayed
 * set by set of equal-level cells without the flood (src/hydro.c
 * flat_parents), so every cell of a flat drains by a path that ends at
 * the flat's outlet. outlet / outlet_level as in hydro_fill_levels (they must
 * be the ones 'level' was filled with). order: out, nx*ny cell indices
 * from the outlets upstream (every cell after its receiver; cells with
 * level INFINITY at the end); may be NULL. Returns 0 or -1 (OOM). */
int hydro_receivers(const float *z, int nx, int ny,
		    const unsigned char *outlet, const float *outlet_level,
		    const float *level, int *rcv, int *order);

/* hydro_fill_levels then hydro_receivers: level, rcv and order are bit
 * for bit what the two calls give. order may be NULL. Returns 0 or -1
 * (OOM). */
int hydro_fill_receivers(const float *z, int nx, int ny,
			 const unsigned char *outlet,
			 const float *outlet_level, float *level, int *rcv,
			 int *order);

/* ---- the solvers' first guess (hydro_guess.c) --------------------------- */

struct wb_raster;

struct hydro_guess_opts {
	double manning;   /* s m^-1/3 for the normal depth; <= 0: 0.03 */
	/* nx*ny mask or NULL: a filled depression holding any marked cell
	 * stays as the scene has it (not filled, no channel water) */
	const unsigned char *keep_dry;
};

struct hydro_guess_report {
	long lake_cells;      /* cells under a filled depression's level */
	long channel_cells;   /* cells given a normal-depth channel */
	long kept_dry;        /* depression cells left dry by keep_dry */
	double lake_volume;   /* m^3 added to fill depressions */
	double channel_volume;/* m^3 added in channels */
	double discharge;     /* m^3/s routed to outlets (sources + inflows
				 - sinks) */
};

/* A hydrological first guess of the steady state (docs/hydrology.md):
 * every depression that the raster's sources (src > 0, rain included) and
 * inflow edges reach is filled to its spill level (hydro_fill_levels over
 * the terrain, blockers that reach the bed as walls, open / level edges,
 * sinks and held cells as outlets); the discharge is routed over the
 * filled surface (hydro_receivers, D8) and accumulated; every cell with
 * discharge outside lakes gets the Manning normal depth of its
 * cross-section (perpendicular to the routed direction, up to
 * HYDRO_SECTION_MAX cells each side while the terrain is below the
 * surface) on the slope of the filled surface over the next few cells
 * downstream, and the velocity of that depth along the routed direction;
 * a filled lake stands at the energy head of the flow through its outlet
 * (critical or normal depth, whichever is higher, plus its velocity head).
 * h, u, v: out, nx*ny; h >= r->h0 everywhere (the scene's initial water is
 * kept), u = v = 0 in lakes and dry cells. rep may be NULL.
 * Deterministic, single-threaded. Returns 0, or -1 when out of memory. */
int hydro_first_guess(const struct wb_raster *r,
		      const struct hydro_guess_opts *o, float *h, float *u,
		      float *v, struct hydro_guess_report *rep);

#define HYDRO_SECTION_MAX 64

#endif
