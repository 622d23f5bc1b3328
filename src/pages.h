/*
 * pages.h - LOD pyramid cut into 130x130 pages: the seam between the maps
 * (maps.c, pages.c) and the pack writer (pack.c).
 *
 * LOD k has pixel spacing dx * 2^k metres. Its pixels are cut into pages of
 * WB_PAGE_INTERIOR x WB_PAGE_INTERIOR interior pixels, stored as
 * WB_PAGE_SIZE x WB_PAGE_SIZE with a WB_PAGE_BORDER pixel border copied from
 * the neighbouring pages (clamped at the world edge). Page (px, py) of a LOD
 * covers the interior pixels [px*128, px*128+128) x [py*128, py*128+128);
 * pixels past the LOD's extent are dry. Page (px, py) of LOD k+1 covers
 * pages (2px..2px+1, 2py..2py+1) of LOD k: the per-page min/max heights form
 * the CDLOD quadtree.
 *
 * Pixel values (row-major, 130*130 per layer, row 0 = border row above the
 * page): height is the water surface elevation in metres, or WB_DRY_HEIGHT
 * for dry pixels; flow is u, v interleaved (m/s); material is the material
 * id (0 = dry); distance is the signed distance to the shoreline in metres
 * (positive in water), clamped to +-distance_max; foam is 0..1.
 */
#ifndef WB_PAGES_H
#define WB_PAGES_H

#include "wbake.h"

#define WB_PAGE_INTERIOR 128
#define WB_PAGE_BORDER 1
#define WB_PAGE_SIZE 130
#define WB_PAGE_PIXELS (WB_PAGE_SIZE * WB_PAGE_SIZE)
/* Dry sentinel of the height layer: the most negative finite half float, so
 * a runtime can test "h < -65000" on gathered texels in R16F or R32F. */
#define WB_DRY_HEIGHT (-65504.0f)

enum wb_page_state { WB_PAGE_EMPTY = 0, WB_PAGE_FLAT = 1, WB_PAGE_DATA = 2 };

struct wb_page {
	enum wb_page_state state;
	int has_water;
	float hmin, hmax;   /* surface range over wet interior pixels */
	float flat_height;  /* FLAT: the one surface height */
	uint8_t flat_material; /* FLAT: the one material id (added for maps.c: a
				  FLAT page is all wet, flow 0, foam 0, distance
				  +distance_max, one material; docs/maps.md) */
	/* DATA pages only (NULL otherwise); WB_PAGE_PIXELS values each */
	float *height;      /* 1 value per pixel */
	float *flow;        /* 2 values per pixel: u, v */
	uint8_t *material;  /* 1 value per pixel */
	float *distance;    /* 1 value per pixel */
	float *foam;        /* 1 value per pixel, NULL without a foam layer */
};

struct wb_lod_pages {
	int lod;
	int nx, ny;          /* LOD pixel extent */
	double dx;           /* metres per pixel */
	int px, py;          /* pages across and down */
	struct wb_page *pages; /* px * py, page (x, y) at x + y * px */
};

struct wb_pageset {
	int n_lods;
	struct wb_lod_pages *lods; /* lods[k] is LOD k */
	unsigned layers;     /* 1u << enum wb_layer bits present */
	unsigned bc_layers;  /* of those, stored block-compressed (flow BC5,
				distance and foam BC4; docs/wtp-format.md
				4.1); 0 for 2.0 packs */
	double origin[2];    /* world position of LOD0 pixel (0,0)'s corner */
	double dx0;          /* LOD0 metres per pixel */
	double distance_max;
};

void wb_pageset_free(struct wb_pageset *ps);

#endif
