/*
 * coarse.h - coarse-to-fine starts (docs/hydrology.md, "Coarse-to-fine"):
 * restrict the solver grid by an integer factor, carry a coarse depth back
 * to the finer grid with the water volume of every coarse cell kept.
 *
 * Grids as everywhere in wbake: cell (i, j) is element i + j nx. A coarse
 * cell (I, J) of factor k covers the fine cells i in [kI, kI + k),
 * j in [kJ, kJ + k) that exist (the last row and column of coarse cells
 * may cover fewer than k x k fine cells when k does not divide the size).
 * Nothing here prints, exits or uses threads: results are the same on any
 * machine and thread count.
 */
#ifndef WB_COARSE_H
#define WB_COARSE_H

#include "wbake.h"

/* Grids of a coarse-to-fine start are at factors 2^L, L = levels..1. */
#define WB_COARSE_MAX 3
#define WB_COARSE_FACTOR_MAX (1 << WB_COARSE_MAX)
/* The number of coarse levels simulation.coarse_levels asks for on an
 * nx x ny grid: 'setting' >= 0 is taken as it is (at most WB_COARSE_MAX,
 * and never so many that the coarsest grid has fewer than 8 cells along
 * a side, warm start or not); < 0 ("auto") is 0 today: on every scene
 * measured (docs/hydrology.md, "Coarse-to-fine, measured") a coarse start
 * left the full-resolution steps where the first guess puts them, since
 * what remains after the guess is the full-resolution circulation of
 * lakes, which no coarser grid has. 'warm' (nonzero for a warm start) is
 * for a rule that needs it. */
int wb_coarse_levels(int setting, int nx, int ny, int warm);

/* Restrict fine raster f by factor k (>= 2) into *c (allocated here; free
 * with wb_raster_free; 2 <= k <= WB_COARSE_FACTOR_MAX, else WB_EUSAGE): nx = ceil(f->nx / k), dx = k f->dx, and per
 * coarse cell:
 *   z           mean terrain of its fine cells (volume-consistent: a
 *               coarse depth h over the mean bed holds the same water as
 *               the fine cells under the same surface, see prolong);
 *   h0          mean depth (the volume of the fine cells);
 *   src         sum / k^2: every source's and sink's discharge (m^3/s)
 *               is kept exactly;
 *   blockers    when at least half its fine cells have one, or a whole
 *               row or column of them does (a wall across it), with the
 *               least clearance (bottom - z) of those over the mean bed
 *               and the highest top: a one-cell wall of the fine grid
 *               stays a wall, a deck keeps its gap;
 *   held cells  (WB_CELL_FIXED) when at least half are held, at the mean
 *               of their levels;
 *   sinks       WB_CELL_SINK_ALL when any fine cell drains all;
 *   modifiers   mean relaxation rate, rate-weighted mean target;
 *   body, flags the first nonzero body; source / modifier flags of any.
 * Edges are copied (inflow per metre of edge and levels are
 * resolution-free), as are origin and total_inflow. WB_EIO when out of
 * memory (nothing left allocated). */
enum wb_status wb_coarse_restrict(const struct wb_raster *f, int k,
				  struct wb_raster *c);

/* Mean depth of the fine depth hf (f->nx x f->ny) over each coarse cell
 * of factor k into hc (c->nx x c->ny): the same water volume per cell. */
void wb_coarse_restrict_depth(const struct wb_raster *f, int k,
			      const float *hf, const struct wb_raster *c,
			      float *hc);

/* Carry the coarse depth hc (grid c, factor k over grid f) to hf, keeping
 * the water volume of every coarse cell: the coarse surface eta = zc + hc
 * is laid over the fine bed (hf = max(0, eta - z) on the fine cells that
 * are not walls: blockers down to the bed), then scaled so that the fine
 * cells hold hc times their count (when eta is below every fine bed the
 * volume is spread evenly). Velocities: wb_coarse_prolong_velocity.
 * Returns the largest relative volume error
 * of a coarse cell after rounding to float (a few 1e-7). */
double wb_coarse_prolong(const struct wb_raster *c, const float *hc, int k,
			 const struct wb_raster *f, float *hf);

/* Discharge-weighted mean velocity of each coarse cell of factor k:
 * uc = sum h u / sum h over its fine cells (0 where dry): the coarse
 * cell carries the fine cells' discharge. */
void wb_coarse_restrict_velocity(const struct wb_raster *f, int k,
				 const float *hf, const float *uf,
				 const float *vf, const struct wb_raster *c,
				 float *uc, float *vc);

/* Carry the coarse velocity to the fine cells (depth hf, from
 * wb_coarse_prolong) by discharge: each fine cell's share of the coarse
 * cell's discharge grows as h^(5/3) (Manning: u ~ h^(2/3)), so
 *   u_k = uc h_k^(2/3) sum h / sum h^(5/3),
 * which keeps sum h_k u_k = uc sum h_k (the coarse cell's momentum); 0 on
 * dry cells. */
void wb_coarse_prolong_velocity(const struct wb_raster *c, const float *uc,
				const float *vc, int k,
				const struct wb_raster *f, const float *hf,
				float *uf, float *vf);

#endif
