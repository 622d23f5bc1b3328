/*
 * maps.h - internal API of the map stage: LOD0 maps from a solved state
 * (maps.c), the water-aware LOD pyramid and the page cutter (pages.c),
 * previews (preview.h) and the manifest (manifest.c). Used by output.c,
 * tools/wpreview.c and the tests; engines never see it.
 *
 * A struct wb_maps is one LOD as full images, structure of arrays, pixel
 * (i, j) at i + j*nx (the grid convention of include/wbake.h). The rules
 * (dry sentinel, material rule, distance, downsampling, FLAT) are stated in
 * docs/maps.md and in the file headers of maps.c and pages.c.
 */
#ifndef WB_MAPS_H
#define WB_MAPS_H

#include "pack.h"
#include "pages.h"
#include "wbake.h"

/* FLAT page tolerances: every one of the 130x130 pixels (border included)
 * is wet and within these of the page's single value. */
#define WB_FLAT_HEIGHT_TOL 1e-3f /* m: max - min surface height */
#define WB_FLAT_FLOW_TOL 1e-3f   /* m/s: |u| and |v| */
#define WB_FLAT_FOAM_TOL 1e-3f   /* foam density */

struct wb_maps {
	int nx, ny;
	double dx;         /* metres per pixel */
	float *height;     /* surface elevation (m), WB_DRY_HEIGHT where dry */
	float *u, *v;      /* velocity (m/s), 0 where dry */
	uint8_t *material; /* material id, 0 where dry */
	float *distance;   /* signed distance to the shore (m), + in water,
			      clamped to +-distance_max */
	float *foam;       /* 0..1, 0 where dry; NULL when not simulated */
	float *depth;      /* weight for flow averaging: LOD0 the water depth
			      (m), LODk the water volume per pixel area (m) */
};

/* Build the LOD0 maps at solver resolution from the solved state. Wet means
 * st->h > sc->sim.dry_depth. Foam is taken when st->foam is non-NULL.
 * m is filled (free with maps_free). WB_EINPUT for inconsistent inputs
 * (sizes differ, distance_max <= 0), WB_ESIM for a non-finite depth or
 * velocity on a wet cell (position named), WB_EIO out of memory. */
enum wb_status maps_build(const struct wb_scene *sc, const struct wb_raster *r,
			  const struct wb_state *st, int threads,
			  struct wb_maps *m, struct wb_diags *d);

/* One pyramid step: dst (allocated here, free with maps_free) gets
 * ceil(nx/2) x ceil(ny/2) pixels of spacing 2*dx, water-aware (maps.c). */
enum wb_status maps_downsample(const struct wb_maps *src, int threads,
			       struct wb_maps *dst, struct wb_diags *d);

void maps_free(struct wb_maps *m);

/* Signed distance to the shoreline in metres for the mask wet[] (nonzero =
 * wet): exact squared Euclidean distance transform between pixel centres
 * (Felzenszwalb & Huttenlocher), shoreline half a pixel from the boundary
 * pixels' centres: wet pixels get (sqrt(D_dry) - 0.5) * dx, dry pixels
 * -(sqrt(D_wet) - 0.5) * dx, clamped to [-dmax, dmax]; with no pixel of
 * the other kind on the grid, +-dmax. Returns 0, or -1 out of memory. */
int maps_signed_distance(const uint8_t *wet, int nx, int ny, double dx,
			 double dmax, int threads, float *out);

/* Material rule (maps.c header, docs/maps.md): wet pixels inside the region
 * of a water body whose source has a material take that material's id;
 * other wet pixels take the material of the body region nearest through
 * 4-connected wet pixels (ties: lowest body index); wet pixels connected
 * to no body take the first material's id (0 without materials). body may
 * be NULL. Returns 0, or -1 out of memory. */
int maps_material(const struct wb_scene *sc, const uint8_t *wet,
		  const uint8_t *body, int nx, int ny, uint8_t *out);

/* The pyramid and the pages: LOD0 = lod0, LODk+1 = maps_downsample(LODk),
 * every LOD cut into 130x130 pages and classified EMPTY / FLAT / DATA, with
 * has_water, hmin, hmax nested as a quadtree (a page's range covers its
 * four children's). layers: 1u << WB_LAYER_* present in the DATA pages
 * (foam is dropped when lod0->foam is NULL). ps filled here, free with
 * wb_pageset_free (pack.c). */
enum wb_status pages_build(const struct wb_maps *lod0, int n_lods,
			   unsigned layers, double distance_max,
			   const double origin[2], int threads,
			   struct wb_pageset *ps, struct wb_diags *d);

/* One 130x130 page of one LOD map, border included, into the given buffers
 * (any may be NULL; flow is u,v interleaved). Stored pixel (a, b) is LOD
 * pixel (px*128 + a - 1, py*128 + b - 1) clamped to the page grid
 * [0, pages_x*128) x [0, pages_y*128); pixels past the map's extent are dry
 * (distance -distance_max). */
void pages_cut(const struct wb_maps *m, int px, int py, double distance_max,
	       float *height, float *flow, uint8_t *material, float *distance,
	       float *foam);

/* ---- manifest (manifest.c) --------------------------------------------- */

struct wb_assess;

struct wb_manifest_in {
	const struct wb_scene *sc;
	const struct wb_raster *r;       /* grid size, spacing, origin */
	const struct wb_state *st;       /* waterfalls */
	const struct wb_solve_report *rep; /* may be NULL */
	const struct wb_assess *assess;  /* output.h; may be NULL */
	const char *solver;              /* "lbm" / "swe", may be NULL */
	const struct wb_pageset *ps;
	const struct wb_pack_stats *pack;
	const char *pack_name;           /* file name within OUTDIR */
	unsigned char pack_sha256[32];
	const unsigned char *heightmap_sha256; /* 32 bytes, may be NULL */
	double water_km2;
};

/* OUTDIR/manifest.json text (schemas/manifest.schema.json): fixed key
 * order, fixed number formats, no timestamps, so equal inputs give equal
 * bytes. Returns a malloc'd NUL-terminated string (caller frees), NULL out
 * of memory. */
char *manifest_json(const struct wb_manifest_in *in);

#endif
