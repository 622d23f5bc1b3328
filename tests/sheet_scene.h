/*
 * sheet_scene.h -- the sheet-flow scene of the LBM hybrid's tests
 * (test_lbm_fv, test_lbm_where, test_opencl_hybrid): nx x ny cells of
 * 5 m falling 8 % to the east, a rough surface (0.5 m, fixed
 * pseudo-random), a side slope toward the centre line, a 0.5 m^3/s
 * spring near the west edge; all edges open. Generated, not stored.
 * sheet_scene_sim: its simulation settings, the LBM with or without the
 * hybrid.
 */
#ifndef WB_TESTS_SHEET_SCENE_H
#define WB_TESTS_SHEET_SCENE_H

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "wbake.h"

/* WB_OK, or what wb_raster_alloc returned */
static inline enum wb_status sheet_scene_make(struct wb_raster *r, int nx,
					      int ny)
{
	const double dx = 5.0;
	enum wb_status st = wb_raster_alloc(r, nx, ny, dx);
	if (st != WB_OK)
		return st;
	unsigned s = 1;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			s = s * 1103515245u + 12345u;
			r->z[k] = (float)(100 - 0.08 * i * dx +
					  0.5 * ((s >> 16) % 1000) / 1000.0 +
					  0.6 * fabs(j - ny / 2.0) / ny * dx);
			r->h0[k] = 0;
		}
	for (int j = ny / 2 - 2; j < ny / 2 + 2; j++)
		for (int i = 2; i < 6; i++)
			r->src[i + (size_t)j * nx] = (float)(0.5 / (16 * dx * dx));
	for (int q = 0; q < 4; q++)
		r->edges[q].kind = WB_EDGE_OPEN;
	return WB_OK;
}

static inline struct wb_sim sheet_scene_sim(int hybrid)
{
	struct wb_sim s;
	memset(&s, 0, sizeof(s));
	s.solver = WB_SOLVER_LBM;
	s.viscosity = 0.05;
	s.manning = 0.035;
	s.dry_depth = 1e-3;
	s.lbm_hybrid = hybrid; /* simulation.lbm_hybrid */
	return s;
}

#endif
