/*
 * report.h - OUTDIR/report.html: one page that shows how a bake went, for
 * artists who judge a bake without opening an engine (report.c).
 *
 * The page holds, in this order: a one-line verdict, the previews of
 * OUTDIR/preview/ (preview.h) as thumbnails that open full size on click
 * (CSS :target, no script), every automatic adjustment (the notes and
 * warnings of the bake, and the count of clamped cell-steps), the residual
 * per convergence window as an inline SVG plot (log scale, tolerance
 * line), the mass balance, the waterfalls (SWE particles), the solver and
 * the parameters it used next to the scene's values ("auto" resolved), the
 * scene summary (grid, terrain, boundaries, sources, materials, blockers,
 * modifiers), and the pack's size, SHA-256 and page counts per LOD (read
 * back from the pack file).
 *
 * The page is self-contained: no network, no script, inline CSS and SVG;
 * the previews are linked beside it as preview/<name>.png. It holds no
 * timestamp, no wall time and no absolute path of the baking machine
 * (files are named by their base name), so equal bakes give equal bytes
 * and farms can diff it. Every string from the scene is HTML-escaped.
 *
 * Status: WB_OK; WB_EINPUT when the pack cannot be read as a pack;
 * WB_EIO out of memory or when the file cannot be written. Never prints.
 */
#ifndef WB_REPORT_H
#define WB_REPORT_H

#include "wbake.h"

struct report_in {
	const struct wb_scene *sc;          /* required */
	const struct wb_raster *r;          /* grid and terrain; may be NULL */
	const struct wb_state *st;          /* waterfalls; may be NULL */
	const struct wb_solve_report *rep;  /* may be NULL (not solved) */
	const char *solver;                 /* "lbm" / "swe"; NULL: scene's */
	const char *device;                 /* "cpu" / "opencl"; NULL: cpu */
	long steps_forced;                  /* --steps N, 0 when none */
	const long *res_step;               /* residual per window: steps */
	const double *res_value;            /* ... and values */
	int n_res;
	const struct wb_diags *diags;       /* the bake's notes and warnings */
	const char *outdir;                 /* previews under outdir/preview */
	const char *pack_path;              /* NULL: no pack section */
};

/* The page as a NUL-terminated string in *html (malloc'd; the caller
 * frees). */
enum wb_status report_html(const struct report_in *in, char **html,
			   struct wb_diags *d);

/* report_html() written atomically to in->outdir/report.html. */
enum wb_status report_write(const struct report_in *in, struct wb_diags *d);

/* s with & < > " ' replaced by entities, appended to a malloc'd string
 * (caller frees); NULL out of memory. */
char *report_escape(const char *s);

#endif
