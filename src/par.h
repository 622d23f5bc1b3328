/*
 * par.h - one bake over several processes: the row bands and the exchange
 * hooks the solvers call (docs/mpi.md). No MPI type appears here: the
 * library is the same with or without MPI; src/mpi_bake.c (make MPI=1) fills a
 * struct wb_par with Open MPI behind it, and a NULL struct wb_par * (the
 * default, wb_solve_opts.par) is one process.
 *
 * Decomposition: the interior rows 0 .. ny - 1 are cut into size bands,
 * band r = rows [row0[r], row0[r + 1]), chosen by wb_par_split() from a
 * per-row work estimate (the predicted water of the first guess), and on
 * CPU ranks of the LBM cut again as the water spreads
 * (lbm_par_rebalance: every rank moves its row0 the same way). Every
 * process has the whole grid's arrays, backed by memory where it writes
 * (its band, halo and ring; src/lbm.c field_alloc). In each phase of a step that computes rows
 * (the solvers' row kernels, which read their neighbours), a process
 * computes only the rows of its band; the phase's outputs - fields and the
 * per-row partials of every reduction - are then exchanged (wb_par_rows,
 * wb_par_list), so that each process again holds exactly the state one
 * process would hold in the rows it reads. Everything between those
 * phases (edges, ghosts, particles, foam, reductions, the time step)
 * runs the same code on the same bytes in every process that reads its
 * result, so it gives the same result everywhere. The one exception is
 * the LBM's edge ghosts on CPU and OpenCL ranks (src/lbm.c greach):
 * a ghost belongs to the band of its interior row (the north and south
 * ghost rows, and the corners, to the bands of rows 0 and ny - 1); a
 * rank books the edge flux of its own ghosts only (integers, summed over
 * the ranks) and fills only the ghosts its band and halo rows read, from
 * its neighbours' nearest row and the ring columns of the two rows after
 * it (wb_par_plan; on CPU ranks with the hybrid, or a band of fewer
 * than three rows, every ghost, from every row or the whole ring); the
 * other ghosts of its copy are stale and read by no one. Equal bytes for any number of processes follow by
 * construction: a row computes the same float operations whichever
 * process computes it, and every reduction still adds its per-row
 * partials in row order (or is an integer sum).
 *
 * Invariant the hooks rely on: a phase writes only into the rows it
 * computes (per-row partials into slots of those rows).
 */
#ifndef WB_PAR_H
#define WB_PAR_H

#include <stddef.h>
#include <stdint.h>

struct wb_par {
	int rank, size;
	int ny;        /* the grid's rows, as split */
	int *row0;     /* size + 1 band starts (row0[size] = ny) */
	double share;  /* this band's part of the work wb_par_split was
			  given (equal rows: its part of the rows) */
	/* Exchange: rank r owns elements [off[r], off[r + 1]) of buf
	 * (elements of elsize bytes); afterwards every rank holds all of
	 * them. 0 on success, -1 when the transport failed (the solver then
	 * stops with WB_EIO). */
	int (*allgather)(void *user, void *buf, size_t elsize, const long *off);
	/* Halo: rank r sends to_up (bytes) to rank r - 1 and to_dn to
	 * r + 1, and receives from_up from r - 1 and from_dn from r + 1
	 * (where those ranks exist; else the buffer is left alone). */
	int (*halo)(void *user, const void *to_up, const void *to_dn,
		    void *from_up, void *from_dn, size_t bytes);
	/* Halo of a size each message carries: n_up bytes at to_up to
	 * rank r - 1, n_dn at to_dn to r + 1; from_up and from_dn hold up
	 * to cap bytes, got[0] and got[1] are set to the bytes received
	 * from r - 1 and from r + 1 (0 where there is no such rank). */
	int (*halov)(void *user, const void *to_up, size_t n_up,
		     const void *to_dn, size_t n_dn, void *from_up,
		     void *from_dn, size_t cap, size_t *got);
	void *user;
	int failed;    /* an exchange failed (the solver stops with WB_EIO) */
	/* scratch for off (size + 1), owned by whoever made the struct */
	long *off;
	/* statistics: bytes this process received in exchanges, the
	 * exchanges' count and wall time (s, waiting for the others too) */
	double bytes;
	long calls;
	double secs;
	double hbytes;  /* of bytes: those of the halo exchanges */
	/* OpenCL ranks: wall time (s) of the steps' halo exchanges whole,
	 * from the end of the step kernel (gather kernel, device-to-host
	 * copy, MPI, host-to-device copy; the scatter kernel is enqueued) */
	double xsecs;
	/* the bands were cut again this many times as the water spread
	   (lbm_par_rebalance) */
	int rebalances;
};

/* Rows [*j0, *j1) this process computes: all rows when p is NULL. */
static inline void wb_par_band(const struct wb_par *p, int ny, int *j0,
			       int *j1)
{
	if (!p || p->size <= 1 || p->ny != ny) {
		*j0 = 0;
		*j1 = ny;
		return;
	}
	*j0 = p->row0[p->rank];
	*j1 = p->row0[p->rank + 1];
}

/* Cut ny rows into p->size bands of about equal work (work[j] >= 0 per
 * row; NULL: equal) into p->row0, in a fixed way (the same on every
 * rank). Each band gets at least three rows when ny >= 3 size (the
 * OpenCL ranks' least), two when ny >= 2 size. */
void wb_par_split(struct wb_par *p, int ny, const double *work);
/* wb_par_split's cut of ny rows into size bands, into row0 (size + 1). */
void wb_par_cut(int size, int ny, const double *work, int *row0);

/* Rows j (0 .. ny - 1) with sel[j] of a row-major array (row j at base +
 * j * row_elems elements) from the rank that owns them to every rank;
 * the other rows are left alone, and a row is stored only where its
 * bytes differ (untouched pages stay unbacked). No-op without p. */
int wb_par_rows_sel(struct wb_par *p, void *base, size_t elsize,
		    long row_elems, const uint8_t *sel);

/* Exchange rows of a row-major array: row j (0 .. ny - 1 + extra)
 * starts at base + (j + first) * row_elems elements (first: padded rows
 * above row 0; extra: rows past ny - 1 that the last band writes, as the
 * south faces). No-op without p. */
int wb_par_rows(struct wb_par *p, void *base, size_t elsize, long row_elems,
		int first, int extra);

/* Exchange a list ordered by rows: the entries of row j are
 * [row_start[j], row_start[j + 1]). No-op without p. */
int wb_par_list(struct wb_par *p, void *base, size_t elsize,
		const long *row_start);

/* hw halo rows each side of nf row-major arrays of the same layout (as
 * wb_par_rows), in one exchange. */
int wb_par_halo(struct wb_par *p, void *const *fields, int nf,
		size_t elsize, long row_elems, int first, int hw);

/* The boundary ring of nf padded fields (row j, column i at
 * base[(i + 1) + (j + 1) * W]): the ghost rows and the interior rows 0,
 * 1, ny - 2, ny - 1 whole, and the ghost columns and the interior columns
 * 0, 1, nx - 2, nx - 1 of every row, from their owners to every rank:
 * what the edge conditions (ghosts, boundary faces, edge fluxes) read
 * and write. */
int wb_par_ring(struct wb_par *p, void *const *fields, int nf,
		size_t elsize, long W, int nx, int ny);

/* Fields that live elsewhere (an OpenCL device): the exchange after a
 * step through one gather and one scatter by lists of padded cell
 * indices (base[(i + 1) + (j + 1) * W] is row j, column i; the CPU
 * ranks of the pure LBM use it too, lbm_par_exchange). Unlike
 * wb_par_halo + wb_par_ring (with which every rank computes every edge
 * ghost), a rank computes the edge ghosts and edge books of its own
 * rows only, so it needs from each neighbour: the nearest row whole, and
 * the ring columns (the ghost column and two interior columns at each
 * side) of the next two rows - how far an edge ghost's Zou-He closure
 * reads along the edge; with periodic north and south edges (rows = 1)
 * also the ring rows (ghost and two interior rows at each end) of every
 * rank. Every band needs three rows at least. The plan holds the lists: */
struct wb_par_plan {
	int *gather;    /* ng cells: to up (nh), to down (nh), this rank's
			   ring rows */
	long ng, nh;
	long nch;       /* chunks of WB_PAR_CHUNK cells in nh (below) */
	int *scatter;   /* ns cells: from up (if any), from down (if any),
			   every other rank's ring rows in rank order */
	long ns;
	long *roff;     /* size + 1: rank r's ring cells in the ring list */
	/* wb_par_plan_exchange's records, kept from one exchange to the
	   next (a new buffer every step costs its pages every step): cap
	   bytes at buf; ext: the caller's (e.g. memory the device copies by
	   DMA), else allocated there and freed by wb_par_plan_release */
	void *buf;
	size_t cap;
	int ext;
};
/* The bytes wb_par_plan_exchange needs at plan->buf for records of nf
 * elements of elsize bytes (0 for one process). */
size_t wb_par_plan_bytes(const struct wb_par *p,
			 const struct wb_par_plan *plan, int nf, size_t elsize);
/* Fill plan for p's bands on a grid of nx x ny interior cells. 0 on
 * success, -1 out of memory or a band of fewer than three rows (plan
 * then empty). */
int wb_par_plan_make(const struct wb_par *p, int nx, int ny, int rows,
		     struct wb_par_plan *plan);
void wb_par_plan_release(struct wb_par_plan *plan);
/* The halo parts travel in chunks of WB_PAR_CHUNK consecutive cells of a
 * part's list (nch chunks: the last one holds nh - (nch - 1) CH cells),
 * and only the chunks with a nonzero bit: a chunk not sent is zero. A
 * band edge that is mostly dry land sends a few chunks instead of a
 * whole row (docs/mpi.md "The halo's wet chunks"). A record is nf
 * elements of elsize bytes, the bytes of one cell; rec (= nf elsize) is
 * a multiple of 4.
 *
 * io with write = 0 gathers into buf (laid out as below from word
 * offset 0; words are uint32_t):
 *   - the records of the gather list's entries from 2 nh on (this rank's
 *     ring cells: m = ng - 2 nh records), in list order;
 *   - at byte m rec: the word count, a word 0, then 2 nch words tag;
 *   - then 2 nch chunk slots of CH records each: slot k < count holds
 *     the records of chunk tag[k] = d nch + c (part d: 0 the list's
 *     first nh entries, 1 the next nh; chunk c: their entries c CH ..
 *     c CH + CH - 1, zero past nh), every chunk of both parts with a
 *     nonzero bit once, in any order.
 * io with write = 1 scatters the records of cells[0 .. n - 1] from buf:
 *   - the records of the list's entries from np nh on (the other ranks'
 *     ring cells), np = the parts received (1 or 2: from up, from down);
 *   - then np nch words map (int32_t): entry p nch + c is the slot of
 *     part p's chunk c, or -1 where the chunk is zero;
 *   - then the slots, CH records each.
 * bytes: what of buf is meant (with write = 0: room for all slots). */
#define WB_PAR_CHUNK 32
typedef int (*wb_par_cells)(void *user, int write, const int *cells, long n,
			    void *buf, size_t bytes);
int wb_par_plan_exchange(struct wb_par *p, struct wb_par_plan *plan,
			 int nf, size_t elsize, wb_par_cells io, void *user);
/* Whether padded cell n lies in rank p->rank's rows (ghost rows with the
 * first and last band); 1 without p. */
int wb_par_owns_cell(const struct wb_par *p, int n, long W, int ny);
/* The smallest of every rank's v. */
int wb_par_min(struct wb_par *p, int v);

/* v[0 .. n - 1] := the sums of every rank's, added in rank order. */
int wb_par_sums(struct wb_par *p, long long *v, int n);

/* The sum of every rank's v, added in rank order (exact for integers). */
long long wb_par_sum(struct wb_par *p, long long v);

/* The LBM step's exchange (lbm_step): the totals of the per-row partials
 * and of the edge books (lbm.par_sum), then f and h of the step just
 * computed: every row's when a row went out of range; with the hybrid
 * nothing more (lbm_par_hybrid sent every row); else what the next step
 * of the neighbours reads (lbm.par_mode: LBM_PAR_OWN the plan of
 * wb_par_plan_make, as the OpenCL ranks; LBM_PAR_ALL, a band of fewer
 * than three rows, the halo row and the whole ring, wb_par_ring). */
struct lbm;
int lbm_par_exchange(struct lbm *L);
/* Once per run, before the first step (lbm_step calls it): how this
 * rank keeps the edge ghosts (lbm.par_mode) and, for LBM_PAR_OWN, the
 * plan (lbm.par_plan, released by lbm_release). 0, or -1 out of memory. */
int lbm_par_setup(struct lbm *L);
/* The plan again for bands that moved (lbm_par_rebalance); -1 (and
 * p->failed) when it cannot be made. */
int lbm_par_replan(struct lbm *L);
void lbm_par_release(struct lbm *L);
/* The LBM's block-sparse step (lbm.c): cut the rows again by the work
 * the next steps will do (the active blocks, as lbm_par_work weighs
 * them), when that takes the largest band's work down by LBM_PAR_GAIN
 * at least (lbm.h); the rows that change hands, and the rows next to every new band
 * edge, move to every rank with the populations and depths of both time
 * levels and the bed, and rows[0 .. nrows - 1] (arrays of nx floats per
 * interior row that follow the band: the window sums and means), and
 * the clamp map. Called by every rank at the same step, between steps
 * (lbm_solve: every LBM_PAR_REBAL steps or so).
 * 1: the bands moved; 0: they stay; -1: an exchange failed. The bytes of
 * the bake do not change: a row computes the same on any rank. */
int lbm_par_rebalance(struct lbm *L, float *const *rows, int nrows);
/* All rows of f[cur] / h[cur] to every rank (rare: a diverging step). */
int lbm_par_full(struct lbm *L, int which);
/* The LBM/FV hybrid (lbm_fv.c): after the kernel, the step's f and h of
 * every row to every rank - as runs of 32-cell chunks that hold a nonzero
 * bit, the rest being +0 (dry) - which then runs lbm_fv_update and
 * lbm_fv_mark on the bytes one process holds (the marking reads every
 * cell). */
int lbm_par_hybrid(struct lbm *L);

/* The hybrid on OpenCL ranks (cl.c, docs/mpi.md "The hybrid on OpenCL
 * ranks"): every rank's host holds nf padded fields of 4-byte cells
 * (padded row R at fld[q] + R * W, R = 0 .. ny + 1) current in the rows
 * it owns (padded row R: the band of interior row R - 1; the ghost rows
 * with the first and last band). Afterwards every rank holds, in every
 * padded row R with sel[q][R] (the same on every rank), field q's bytes
 * of the row's owner: sent as runs of 32-cell chunks that hold a nonzero
 * bit (of the row's selected fields), the other chunks +0 bits (cleared
 * where they are not). nf <= 16. 0 on success. */
int wb_par_sel_rows(struct wb_par *p, void *const *fld, int nf, long W,
		    const uint8_t *const *sel);
/* Per padded row flags v[0 .. ny + 1]: every rank's v over its own rows
 * and one row beyond each side, ORed, into v on every rank (the rest of
 * v is ignored and cleared). */
int wb_par_or_rows(struct wb_par *p, uint8_t *v);
/* The same with nb bytes a row: v[R nb .. R nb + nb - 1] for padded row
 * R, each byte ORed. */
int wb_par_or_rows_n(struct wb_par *p, uint8_t *v, size_t nb);

#endif
