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
 * INFINITY, water never passes them.
 * Returns 0, or -1 when out of memory. */
int hydro_fill(const float *z, int nx, int ny, const unsigned char *outlet,
	       float *level);

/* The same with outlet levels: an outlet cell i starts at
 * max(z[i], outlet_level[i]) (a held lake or ocean surface) instead of
 * z[i]. outlet_level may be NULL (outlets start at z). */
int hydro_fill_levels(const float *z, int nx, int ny,
		      const unsigned char *outlet, const float *outlet_level,
		      float *level);

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
 * the spill point: the flood order computed by hydro_fill_levels is
 * replayed, so every cell of a flat drains by a path that ends at the
 * flat's outlet. outlet / outlet_level as in hydro_fill_levels (they must
 * be the ones 'level' was filled with). order: out, nx*ny cell indices
 * from the outlets upstream (every cell after its receiver; cells with
 * level INFINITY at the end); may be NULL. Returns 0 or -1 (OOM). */
int hydro_receivers(const float *z, int nx, int ny,
		    const unsigned char *outlet, const float *outlet_level,
		    const float *level, int *rcv, int *order);

#endif
