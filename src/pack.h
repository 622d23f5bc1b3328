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

#endif
