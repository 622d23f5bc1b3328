/*
 * solve.h - the two solvers' entry points (LBM-SWE: lbm.c, SWE: swe.c).
 *
 * Both take the rasterised scene (struct wb_raster, include/wbake.h) and the
 * scene's simulation parameters, run to a steady state (or exactly
 * o->steps steps when o->steps > 0), and fill *out with depth and velocity
 * at cell centres (plus foam and waterfalls for SWE). *out is owned by the
 * caller afterwards (wb_state_free). *rep receives the chosen parameters,
 * the step count, residual and the mass balance.
 *
 * Status: WB_OK; WB_EINPUT for parameters that cannot work (named in d);
 * WB_ESIM when the run diverges (NaN, negative depth, mass not conserved):
 * d says where (cell and world position) and when (step); WB_EIO out of
 * memory. Results are byte-identical for any o->threads.
 */
#ifndef WB_SOLVE_H
#define WB_SOLVE_H

#include "wbake.h"

enum wb_status lbm_solve(const struct wb_raster *r, const struct wb_sim *sim,
			 const struct wb_solve_opts *o, struct wb_state *out,
			 struct wb_solve_report *rep, struct wb_diags *d);

enum wb_status swe_solve(const struct wb_raster *r, const struct wb_sim *sim,
			 const struct wb_solve_opts *o, struct wb_state *out,
			 struct wb_solve_report *rep, struct wb_diags *d);

/* Where the last window's change sits (unsteady.c): fills rep's
 * unsteady_* from the last two window means (nx * ny values each, rows;
 * h the last window's mean depth, (u1, v1) its mean velocity, (u0, v0)
 * the window before's; cells no deeper than thin do not count, as in the
 * residual). unsteady_tile stays 0 when nothing changed. -1: out of
 * memory (nothing filled). */
int wb_unsteady_where(int nx, int ny, const float *h, const float *u1,
		      const float *v1, const float *u0, const float *v0,
		      float thin, struct wb_solve_report *rep);

#endif
