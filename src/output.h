/*
 * output.h - from a solved state to OUTDIR/<name>.wtp and OUTDIR/manifest.json.
 *
 * wb_output_write() builds the LOD0 maps, the pyramid and the pages, writes
 * the tile pack and the manifest under temporary names and renames them, so
 * a failed bake leaves an earlier output intact. Equal inputs give
 * byte-identical files whatever the thread count.
 */
#ifndef WB_OUTPUT_H
#define WB_OUTPUT_H

#include "wbake.h"

struct wb_output_opts {
	const char *outdir;     /* created if missing */
	int threads;            /* 0 = all cores */
	int pages_png;          /* also write OUTDIR/pages/... PNGs */
	int preview;            /* also write OUTDIR/preview/... PNGs */
	const char *solver_name; /* "lbm" or "swe", for the manifest */
	const unsigned char *heightmap_sha256; /* 32 bytes (wb_heightmap.sha256)
						for the manifest; NULL: unknown */
};

struct wb_output_summary {
	char pack_path[4096];
	char manifest_path[4096];
	long pages_data, pages_flat, pages_empty;
	long long pack_bytes;
	double water_km2;       /* wet area at LOD0 */
};

enum wb_status wb_output_write(const struct wb_scene *sc,
			       const struct wb_raster *r,
			       const struct wb_state *st,
			       const struct wb_solve_report *rep,
			       const struct wb_output_opts *o,
			       struct wb_output_summary *sum,
			       struct wb_diags *d);

#endif
