/*
 * preview.h - PNG pictures of the maps for artists (preview.c), and the
 * per-page PNGs of --pages png.
 *
 * preview_write() writes into 'dir' (created if missing) one picture per
 * layer, each the water drawn over a shaded relief of the terrain
 * (hillshade lit from the north-west, 45 degrees up, hypsometric tint,
 * contour lines at a round interval, every fifth darker), framed by a
 * title (scene name and layer), the grid size, a legend (colour bar with
 * values and units, or named material swatches), a scale bar in metres and
 * a north arrow:
 *   depth.png     water depth, pale cyan (shallow) to navy (deep), 0 to the
 *                 99th percentile (only when the maps carry depth)
 *   height.png    water surface elevation, blue (low) to pale yellow (high),
 *                 1st to 99th percentile
 *   flow.png      speed, blue (still) to red (fast), 0 to the 99th
 *                 percentile, with arrows (white halo, dark core) on a
 *                 lattice: direction, length proportional to speed
 *   material.png  one colour per material, from its kind (river cyan-blue,
 *                 lake blue, ocean navy; later materials of a kind lighter),
 *                 named in the legend
 *   distance.png  signed distance over land and water: brown (land) - white
 *                 (shore) - blue (water), lines every distance_max / 4
 *   foam.png      foam density, dark water to white (only with foam)
 * Maps up to 1024 pixels a side are enlarged by a whole factor (up to 8x)
 * to about 1024; larger maps are pooled by a whole factor to at most 1024,
 * a pooled pixel wet when any of its pixels is, so thin rivers stay
 * visible. Text is drawn with stb_easy_font (no font file). Equal inputs
 * give equal bytes; files are written atomically.
 *
 * preview_pages() writes OUTDIR/pages/lod<k>/<x>_<y>_<layer>.png for every
 * DATA page (FLAT and EMPTY pages have no pixels; the pack says their
 * values). Encodings, each stated in the PNG's tEXt chunks:
 *   height    16-bit grey: 0 dry, else v -> offset + (v - 1) * scale m
 *   flow      16-bit RGB: R, G = 32768 + round(u / scale * 32767), same for
 *             v; B = 65535 wet, 0 dry
 *   material  8-bit grey: the id
 *   distance  16-bit grey: v -> -dmax + v * 2 dmax / 65535 m
 *   foam      8-bit grey: round(foam * 255)
 */
#ifndef WB_PREVIEW_H
#define WB_PREVIEW_H

#include "maps.h"

/* Write a PNG atomically. channels 1..4 (grey, grey+alpha, RGB, RGBA),
 * bits 8 (uint8_t samples) or 16 (uint16_t samples, host order), rows top
 * first. text: NULL, or key, value, key, value, ..., NULL (tEXt chunks). */
enum wb_status preview_png_write(const char *path, int w, int h, int channels,
				 int bits, const void *pixels,
				 const char *const *text, struct wb_diags *d);

/* What the pictures are made of. m: one LOD (any size); terrain: m->nx *
 * m->ny terrain elevations (m) on the same grid, or NULL (water on grey,
 * and no depth picture unless m->depth is set); scene: the name in the
 * titles; materials: names and kinds for the material legend (may be
 * NULL). */
struct preview_in {
	const struct wb_maps *m;
	const float *terrain;
	const char *scene;
	const struct wb_material *materials;
	int n_materials;
	double distance_max;
};

enum preview_kind {
	PREVIEW_DEPTH, PREVIEW_HEIGHT, PREVIEW_FLOW, PREVIEW_MATERIAL,
	PREVIEW_DISTANCE, PREVIEW_FOAM, PREVIEW_COUNT
};

/* File stem ("depth", "height", ...) and title of a picture. */
const char *preview_name(enum preview_kind k);
const char *preview_title(enum preview_kind k);
/* 1 when in has what picture k needs (depth: m->depth; foam: m->foam). */
int preview_available(const struct preview_in *in, enum preview_kind k);

/* Size in pixels of every picture of an nx x ny map (frame included). */
void preview_canvas_size(int nx, int ny, int *w, int *h);

struct preview_image {
	int w, h;
	uint8_t *rgb; /* w*h RGB, rows top first; preview_image_release() */
};

/* One picture into memory (img->rgb malloc'd, owned by the caller). */
enum wb_status preview_render(const struct preview_in *in, enum preview_kind k,
			      struct preview_image *img, struct wb_diags *d);
void preview_image_release(struct preview_image *img);

/* Every available picture into dir as <name>.png. */
enum wb_status preview_write(const struct preview_in *in, const char *dir,
			     struct wb_diags *d);

/* Shaded relief of z (nx x ny, spacing dx m): the cosine between the
 * surface normal and a light from the north-west (azimuth 315 degrees,
 * 45 degrees up), clamped at 0; flat ground gives sqrt(1/2). Central
 * differences, one-sided at the edges. */
void preview_hillshade(const float *z, int nx, int ny, double dx,
		       float *shade);

/* The DATA pages of ps as PNGs under dir/lod<k>/. */
enum wb_status preview_pages(const struct wb_pageset *ps, const char *dir,
			     struct wb_diags *d);

#endif
