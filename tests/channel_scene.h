/*
 * channel_scene.h -- the straight channels of the uniform-flow tests
 * (test_lbm_fv test_freeslip_channel, test_swe test_normal_depth_sheet):
 * nx x ny cells of 1 m, the bed z0 - S (i + 0.5) falling to the east,
 * q m^2/s in through the west edge, the east edge open, the north and
 * south edges of the given kind (free_slip for walls), every cell at
 * Manning's normal depth (n q / sqrt(S))^0.6 to start. Generated, not
 * stored.
 */
#ifndef WB_TESTS_CHANNEL_SCENE_H
#define WB_TESTS_CHANNEL_SCENE_H

#include <math.h>
#include <stddef.h>

#include "wbake.h"

/* Manning's normal depth of q m^2/s on slope S with roughness n. */
static inline double channel_normal_depth(double n, double q, double S)
{
	return pow(n * q / sqrt(S), 0.6);
}

/* WB_OK, or what wb_raster_alloc returned */
static inline enum wb_status channel_scene_make(struct wb_raster *r, int nx,
						int ny, double z0, double S,
						double n, double q,
						enum wb_edge_kind sides,
						int free_slip)
{
	enum wb_status st = wb_raster_alloc(r, nx, ny, 1.0);
	if (st != WB_OK)
		return st;
	const double hn = channel_normal_depth(n, q, S);
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = i + (size_t)j * nx;
			r->z[k] = (float)(z0 - S * (i + 0.5));
			r->h0[k] = (float)hn;
		}
	r->edges[WB_WEST].kind = WB_EDGE_INFLOW;
	r->edges[WB_WEST].discharge = q;
	r->edges[WB_EAST].kind = WB_EDGE_OPEN;
	r->edges[WB_NORTH].kind = r->edges[WB_SOUTH].kind = sides;
	r->edges[WB_NORTH].free_slip = r->edges[WB_SOUTH].free_slip = free_slip;
	return WB_OK;
}

#endif
