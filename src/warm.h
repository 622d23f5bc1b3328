/*
 * warm.h - the solver state file OUTDIR/state.wbs that every bake writes
 * and `wbake --from EARLIER_OUT` starts from (format: docs/state.md).
 *
 * The file records the grid (nx, ny, dx), a SHA-256 of the solver grid's
 * terrain, the solver and its step count, and the steady fields (depth,
 * velocity, foam when simulated), closed by a SHA-256 of everything before
 * it. A state is only accepted for the same grid and terrain.
 */
#ifndef WB_WARM_H
#define WB_WARM_H

#include "wbake.h"

#define WB_STATE_FILE "state.wbs"
#define WB_STATE_VERSION 3 /* reads 1 to 3 */
#define WB_STATE_RUN 256   /* values per run of a field (version 3) */
/* depth, u, v, foam, first-guess depth, modifier u, v, rate (version 2) */
#define WB_STATE_NFIELDS 8

/* The terrain hash of a state file of 'version': of r->z as little-endian
 * float32 bytes, row-major; one SHA-256 of them (versions 1 and 2) or
 * their digest of pieces (3 and later, wb_sha256_pieces on 'threads'
 * threads). Returns 0, or -1 when out of memory. */
int wb_terrain_hash(const struct wb_raster *r, int version, int threads,
		    unsigned char out[32]);

/* Write 'st' (the state solved on grid r by 'solver', enum
 * wb_solver_kind) to 'path', atomically, with the hydrological first
 * guess of the same scene (guess_h, may be NULL), which lets a warm start
 * carry over a changed discharge (bake.c), and r's modifier fields when a
 * modifier covers any cell (a warm start finds where they changed).
 * rep may be NULL (steps 0). 'threads' (0: all cores) hash and pack
 * the file; its bytes do not depend on them.
 * WB_EIO when it cannot be written. */
enum wb_status wb_state_save(const char *path, const struct wb_raster *r,
			     int solver, const struct wb_state *st,
			     const float *guess_h,
			     const struct wb_solve_report *rep, int threads,
			     struct wb_diags *d);

/* Read the state file 'path' for grid r into *st (h, u, v, and foam when
 * saved; caller frees with wb_state_free). *guess_h (guess_h may be NULL)
 * gets the saved first-guess depth, malloc'd (caller frees), or NULL when
 * the file has none. mod (may be NULL) gets the saved modifier fields
 * mod[0..2] = target u, v and rate, malloc'd (caller frees), or NULLs when
 * the file has none (version 1, or no modifier then). *solver (may be
 * NULL) gets the solver that wrote it; 'threads' (0: all cores) check
 * the hashes. WB_EINPUT with a message naming the file when it
 * is missing, truncated, corrupt, of another version, or from a different
 * grid or terrain; WB_EIO out of memory. */
enum wb_status wb_state_load(const char *path, const struct wb_raster *r,
			     struct wb_state *st, float **guess_h, float *mod[3],
			     int *solver, int threads, struct wb_diags *d);

#endif
