/*
 * pack.h - the tile pack writer (pack.c). The format is specified byte by
 * byte in docs/wtp-format.md; include/wtp.h is the engines' reader.
 */
#ifndef WB_PACK_H
#define WB_PACK_H

#include "pages.h"

struct wb_pack_meta {
	const char *scene_name;
	const char *tool_version;     /* WB_VERSION_STRING */
	const char *solver;           /* "lbm" / "swe" */
	const struct wb_material *materials;
	int n_materials;
	unsigned char scene_sha256[32];
	unsigned char heightmap_sha256[32];
	unsigned alignment;           /* page alignment in bytes: a power of
					 two in [16, 1 MiB]; 0 = 4096 */
};

struct wb_pack_stats {
	long pages_data, pages_flat, pages_empty;
	long pages_unique;            /* DATA pages after deduplication */
	long long file_bytes;
	long long raw_bytes, stored_bytes; /* page payloads */
};

/* Write the pack to 'path' atomically (temporary name, then rename).
 * Equal inputs give equal bytes. */
enum wb_status pack_write(const char *path, const struct wb_pageset *ps,
			  const struct wb_pack_meta *meta,
			  struct wb_pack_stats *stats, struct wb_diags *d);

/* Bytes of one decoded page holding the layers in 'layers' (1u << enum
 * wb_layer bits): the sum of the plane sizes of docs/wtp-format.md 4. */
size_t pack_page_raw_size(unsigned layers);
/* The same with the layers in 'bc' block-compressed (section 4.1). */
size_t pack_page_raw_size_bc(unsigned layers, unsigned bc);
/* Encode DATA page 'slot' of LOD 'lod' of 'ps' as the pack stores it
 * decoded (the layer planes of docs/wtp-format.md 4: heights snapped to
 * the LOD's height grid, FLAT neighbours' heights on the pixels they
 * share) into raw (pack_page_raw_size() bytes); *base receives the VAT
 * height. WB_EINPUT when a value cannot be encoded (NaN, missing layer
 * array, a surface range over 65 km). Exposed for tests. */
enum wb_status pack_encode_page(const struct wb_pageset *ps, int lod,
				long slot, unsigned char *raw, float *base,
				struct wb_diags *d);
/* binary32 -> binary16 bits, round to nearest, ties to even; overflow
 * gives infinity, NaN a quiet NaN. */
uint16_t pack_half(float f);

#endif
