/*
 * preview.h - PNG pictures of the maps for artists (preview.c), and the
 * per-page PNGs of --pages png.
 *
 * preview_write() writes into 'dir' (created if missing):
 *   height.png    water surface: a blue ramp from the lowest to the highest
 *                 surface, shaded by the surface normal (light from the
 *                 north-west); land dark grey
 *   flow.png      direction as hue (east red, south yellow-green, west cyan,
 *                 north violet), speed as brightness, white arrows on a
 *                 regular lattice (length proportional to speed)
 *   material.png  one colour per material id (fixed palette), land dark
 *   distance.png  diverging ramp: water blue, land brown, white at the
 *                 shore, saturated at +-distance_max; thin contours every
 *                 distance_max / 4
 *   foam.png      foam density as grey (only when foam is present)
 * Maps smaller than 1024 pixels a side are enlarged by a whole factor
 * (nearest neighbour, up to 8x) to about 1024 so that arrows and contours
 * stay readable. Equal maps give equal bytes. Files are written atomically.
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

/* The previews of one map (any LOD) into dir. */
enum wb_status preview_write(const struct wb_maps *m, double distance_max,
			     const char *dir, struct wb_diags *d);

/* The DATA pages of ps as PNGs under dir/lod<k>/. */
enum wb_status preview_pages(const struct wb_pageset *ps, const char *dir,
			     struct wb_diags *d);

#endif
