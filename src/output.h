/*
 * output.h - from a solved state to OUTDIR/<name>.wtp, OUTDIR/manifest.json
 * and the optional previews, page PNGs and fields, replaced as one set.
 *
 * The output directory is replaced whole. A bake claims OUTDIR before it
 * solves (wb_outdir_open): it checks the path, takes an exclusive lock
 * beside OUTDIR, removes what killed bakes left behind and creates a
 * private staging directory beside OUTDIR; everything is written there;
 * wb_outdir_commit() fsyncs it and swaps it with OUTDIR in one atomic
 * renameat2(RENAME_EXCHANGE), then deletes the old tree. At every moment
 * OUTDIR is the complete old output or the complete new one. Names in
 * OUTDIR's parent P, for OUTDIR = P/N:
 *
 *   P/.N.wbake-lock          the lock (flock; holds the holder's pid while
 *                            held, removed when the bake ends)
 *   P/.N.wbake-tmp.XXXXXX    the staging directory (mkdtemp, mode 0700
 *                            until the swap); after the swap it holds the
 *                            old tree until that is deleted
 *   P/.N.wbake-old.XXXXXX    only on file systems without RENAME_EXCHANGE:
 *                            the old output during the two-rename fallback
 *
 * A bake that holds the lock removes every .N.wbake-tmp.* it finds (their
 * owners are gone: the lock says so) and puts a .N.wbake-old.* back when
 * OUTDIR is missing (a fallback swap cut in the middle), else removes it.
 * Nothing is ever opened through a symlink: the lock is opened O_NOFOLLOW
 * and must be a regular file of ours with one link, the staging name is
 * random and exclusive, and trees are removed with *at() calls that never
 * follow links.
 *
 * Since the whole directory is replaced, wbake writes only into a new or
 * empty directory or an earlier output of its own: one that holds nothing
 * but manifest.json, *.wtp files, preview/, fields/, pages/ and leftovers
 * of older wbake versions (*.tmp.*). Anything else is refused (WB_EIO,
 * naming the entry) before the solve, and so is a mount point (a rename
 * cannot move it).
 *
 * Equal inputs give byte-identical files whatever the thread count.
 */
#ifndef WB_OUTPUT_H
#define WB_OUTPUT_H

#include <signal.h>
#include <sys/types.h>

#include "wbake.h"

/* ---- the output directory, replaced as a set --------------------------- */

struct wb_outdir {
	char *outdir;    /* as the caller named it (messages) */
	char *parent;    /* resolved directory holding OUTDIR */
	char *name;      /* OUTDIR's last component */
	char *staging;   /* parent/.name.wbake-tmp.XXXXXX: write here */
	char *lockname;  /* .name.wbake-lock */
	int parent_fd, lock_fd;
	int existed;     /* OUTDIR existed when claimed */
	mode_t mode;     /* mode the new OUTDIR gets */
	int held;        /* claimed, not yet committed or aborted */
	int no_exchange; /* tests: act as if the file system had no
			    RENAME_EXCHANGE (the two-rename fallback) */
};

/* Claim 'outdir' for a bake: check it (WB_EUSAGE for an empty name; WB_EIO
 * naming the path for a non-directory, an unwritable or missing parent, a
 * foreign entry inside, a lock held by another bake - the message names its
 * pid - or any system error, with strerror), take the lock, clean up
 * leftovers and create the staging directory (od->staging). The parent is
 * created when missing. On failure nothing is held and *od is zeroed. */
enum wb_status wb_outdir_open(struct wb_outdir *od, const char *outdir,
			      struct wb_diags *d);
/* Make the staging directory OUTDIR: fsync it, swap it in, delete the old
 * tree, release the lock. On failure OUTDIR is the old output (or absent
 * when it was), the staging tree is removed and the lock released. A
 * failure to delete the old tree after the swap is only a warning. */
enum wb_status wb_outdir_commit(struct wb_outdir *od, struct wb_diags *d);
/* Drop the staging tree and release the lock; OUTDIR untouched. Accepts a
 * zeroed, committed or aborted *od. */
void wb_outdir_abort(struct wb_outdir *od);

/* ---- how the bake ended ------------------------------------------------ */

enum wb_stop { WB_STOP_STEADY, WB_STOP_MAX_STEPS, WB_STOP_STEPS };

struct wb_assess {
	enum wb_stop stop;      /* steady, step cap reached, or --steps N */
	int steady;             /* stop == WB_STOP_STEADY */
	double residual;        /* NAN when never measured */
	double tolerance;       /* the steady-state test's tolerance */
	double storage_m3;      /* final - initial water on the grid */
	double mean_rise_m;     /* storage_m3 over the map's area */
	int filling;            /* inflow, ~no outflow, stored water rising */
	double clamped_share;   /* clamped / (cells * steps) */
	/* where the limiter holds the flow at the end (clamped > 0 and a
	   state given): wet cells at Froude >= 0.99, their box (x0, x1, y0,
	   y1 in m) and the fastest of them */
	long limit_cells;
	double limit_box[4];
	double limit_x, limit_y, limit_fr;
	/* the LBM's shallow water on steep cells (a state given): moving
	   water cells (as deep as output.min_depth, at least 5 cm/s) on LBM
	   cells whose bed falls to a wet neighbour by more than their depth
	   (and by at most WB_CLIFF_DX dx: a cliff's water falls); out of
	   water_cells, the moving water cells; their box (m) */
	long steep_cells, water_cells;
	double steep_box[4];
};

/* a bed step above WB_CLIFF_DX cells' width is a cliff (SWE_FALL_DROP,
   LBM_FALL) */
#define WB_CLIFF_DX 2.0

/* Judge a solver report: fills *a and, when d is not NULL, adds a warning
 * for a bake stopped at max_steps unconverged (naming residual and
 * tolerance) and for a basin that fills (inflow with almost no outflow) -
 * a note instead when fixed_steps > 0, where neither is unexpected - and a
 * note explaining clamped cell-steps as a share and, with the final state
 * st (may be NULL), where the limiter holds the flow at the end: a warning
 * when it holds cells there (the result's physics is limited), a note when
 * the clamps were transient. For the LBM, with st, a warning when more
 * than WB_STEEP_SHARE of the moving water stands on LBM cells whose bed
 * falls more than its depth over a cell (steep_cells): the LBM drives
 * such water by its depth, not by the slope (docs/validation.md). */
#define WB_STEEP_SHARE 0.05
void wb_output_assess(const struct wb_scene *sc, const struct wb_raster *r,
		      const struct wb_solve_report *rep,
		      const struct wb_state *st, long fixed_steps,
		      struct wb_assess *a, struct wb_diags *d);

/* ---- writing ----------------------------------------------------------- */

struct wb_output_opts {
	const char *outdir;     /* OUTDIR */
	struct wb_outdir *claim; /* NULL: wb_output_write claims, writes and
				    commits OUTDIR itself; else the caller's
				    claim: files go to claim->staging and the
				    caller commits (or aborts) */
	int threads;            /* 0 = all cores */
	int pages_png;          /* also write OUTDIR/pages/... PNGs */
	int preview;            /* also write OUTDIR/preview/... PNGs */
	const char *solver_name; /* "lbm" or "swe", for the manifest */
	const unsigned char *heightmap_sha256; /* 32 bytes (wb_heightmap.sha256)
						for the manifest; NULL: unknown */
	long fixed_steps;       /* the run's --steps (0: to steady state) */
	const volatile sig_atomic_t *cancel; /* set: stop with WB_ECANCEL
						before OUTDIR is replaced */
};

struct wb_output_summary {
	char pack_path[4096];   /* final paths, under OUTDIR */
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
