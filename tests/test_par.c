/*
 * test_par.c - the row bands and exchange helpers of src/par.h without
 * MPI: wb_par_split's bands (contiguous, three rows at least where the
 * grid allows, work within one row's weight of the even share, each
 * band's share), lbm_par_work's rows by the water, and wb_par_rows / wb_par_list /
 * wb_par_halo / wb_par_ring against a transport that simulates N ranks in
 * one process (one thread and one copy of the field per rank; an exchange
 * pulls the owners' elements from their copies). After each exchange a rank must hold the
 * true values exactly where the helper promises them (every row; the halo
 * rows; the ring's rows and columns) and keep its own band untouched;
 * elsewhere it keeps what it had; wb_par_plan_exchange (the OpenCL
 * path's one-copy exchange by cell lists) must leave exactly the cells
 * par.h promises (nearest rows, the ring columns two rows further, the
 * ring rows when asked), on narrow grids too; wb_par_sel_rows (the
 * hybrid on OpenCL ranks) must leave every selected row of every field
 * the owner's, dry chunks included, and nothing else changed, and
 * wb_par_or_rows the OR of the ranks' flags. MPI itself:
 * tests/cli/wbake_mpi.sh, tests/cli/wbake_mpi_opencl.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "lbm.h"
#include "par.h"
#include "wbake.h"

#define NMAX 8

/* ---- wb_par_split ------------------------------------------------------- */

static void check_split(int n, int ny, const double *work)
{
	int row0[NMAX + 1];
	long off[NMAX + 1];
	struct wb_par p;
	memset(&p, 0, sizeof(p));
	p.size = n;
	p.row0 = row0;
	p.off = off;
	wb_par_split(&p, ny, work);
	assert_int_equal(row0[0], 0);
	assert_int_equal(row0[n], ny);
	double tot = 0, wmax = 0;
	for (int j = 0; j < ny; j++) {
		double w = work ? work[j] : 1.0;
		tot += w;
		wmax = w > wmax ? w : wmax;
	}
	/* three rows at least (an OpenCL rank's least) where ny allows */
	const int least = ny >= 3 * n ? 3 : 2;
	double shares = 0;
	for (int r = 0; r < n; r++) {
		assert_true(row0[r + 1] - row0[r] >= least); /* ny >= 2 n here */
		double bw = 0;
		for (int j = row0[r]; j < row0[r + 1]; j++)
			bw += work ? work[j] : 1.0;
		/* the greedy cut: within one row's work of the even share,
		   unless the minimum forced the band */
		if (row0[r + 1] - row0[r] > least)
			assert_true(bw <= tot / n + wmax + 1e-9);
		p.rank = r; /* each rank's share of the work */
		wb_par_split(&p, ny, work);
		assert_true(p.share >= 0 && p.share <= 1);
		assert_true(p.share * tot >= bw * (1 - 1e-12) - 1e-12 &&
			    p.share * tot <= bw * (1 + 1e-12) + 1e-12);
		shares += p.share;
	}
	assert_true(shares > 1 - 1e-9 && shares < 1 + 1e-9);
}

static void test_split_bands(void **state)
{
	(void)state;
	double w[1000];
	for (int n = 1; n <= NMAX; n++) {
		int sizes[] = { 2 * n, 2 * n + 1, 37, 1000 };
		for (int k = 0; k < 4; k++) {
			int ny = sizes[k];
			check_split(n, ny, NULL);
			for (int j = 0; j < ny; j++) /* wet middle, dry ends */
				w[j] = (j > ny / 3 && j < ny / 2) ? 4.0 : 0.25;
			check_split(n, ny, w);
			for (int j = 0; j < ny; j++) /* all the water in one row */
				w[j] = j == ny - 1 ? 100.0 : 0.0;
			check_split(n, ny, w);
		}
	}
	/* equal work: band sizes differ by one row at most */
	int row0[NMAX + 1];
	long off[NMAX + 1];
	struct wb_par p = { .size = 7, .row0 = row0, .off = off };
	wb_par_split(&p, 100, NULL);
	for (int r = 0; r < 7; r++) {
		int len = row0[r + 1] - row0[r];
		assert_true(len == 14 || len == 15);
	}
}

/* lbm_par_work: rows by the water the block-sparse step will step.
 * A 256 x 512 grid dry but for a lake over rows 40..99 and a spring at
 * row 400: two ranks get the lake's block rows and the spring's split
 * evenly by stepped cells, not rows, and a dry row still costs its
 * block flags (a band of dry rows is not free). */
static void test_work_by_water(void **state)
{
	(void)state;
	struct wb_raster r;
	assert_int_equal(wb_raster_alloc(&r, 256, 512, 1.0), WB_OK);
	for (int j = 40; j < 100; j++)
		for (int i = 100; i < 160; i++)
			r.h0[(size_t)j * 256 + i] = 1.0f;
	r.src[(size_t)400 * 256 + 17] = 1e-3f;
	double *w = malloc(512 * sizeof(double));
	assert_non_null(w);
	double tot = lbm_par_work(&r, NULL, w);
	/* blocks of 32: the lake's wet blocks are rows 32..127 (block rows
	   1..3) x columns 96..159 (block columns 3..4), dilated by one:
	   block rows 0..4, columns 2..5: 5 x 4 blocks; the spring's block
	   (12, 0) dilated: block rows 11..13, columns 0..1: 3 x 2 */
	assert_true(tot == 1024.0 * (5 * 4 + 3 * 2));
	assert_true(w[0] == 32.0 * 4 + 8 + 2);
	assert_true(w[200] == 8 + 2); /* dry: its flags and ghosts */
	assert_true(w[11 * 32] == 32.0 * 2 + 8 + 2);
	int row0[3];
	long off[3];
	struct wb_par p = { .size = 2, .row0 = row0, .off = off };
	wb_par_split(&p, 512, w);
	/* the lake's work is 20 of 26 block units: rank 0 ends inside the
	   lake's block rows, far above the middle row */
	assert_true(row0[1] > 32 && row0[1] < 160);
	double w0 = 0, wt = 0;
	for (int j = 0; j < 512; j++) {
		wt += w[j];
		w0 += j < row0[1] ? w[j] : 0;
	}
	assert_true(w0 <= wt / 2 + 32.0 * 4 + 10 && w0 >= wt / 2 - (32.0 * 4 + 10));
	/* with the start's water given instead of the raster's: none */
	float *dry = calloc((size_t)256 * 512, sizeof(float));
	assert_non_null(dry);
	tot = lbm_par_work(&r, dry, w);
	assert_true(tot == 1024.0 * 3 * 2);
	free(dry);
	free(w);
	wb_raster_free(&r);
}

#include "par_fake.h"

enum { X_ROWS, X_HALO, X_RING, X_LIST };

/* Every rank's exchange of kind x at once; nonzero when one failed or
 * the ranks did not all run. */
static int exchange(struct world *w, int x, void **buf, const long *start,
		    int W, int nx, int ny)
{
	int rc[NMAX] = { 0 }, ran = 0;
#pragma omp parallel num_threads(w->n) reduction(+ : ran)
	{
		int r = omp_get_thread_num();
		if (omp_get_num_threads() == w->n) {
			struct wb_par *p = &w->p[r];
			ran = 1;
			rc[r] = x == X_ROWS ? wb_par_rows(p, buf[r], sizeof(float), W, 1, 0) :
				x == X_HALO ? wb_par_halo(p, &buf[r], 1, sizeof(float), W, 1, 2) :
				x == X_RING ? wb_par_ring(p, &buf[r], 1, sizeof(float), W, nx, ny) :
					      wb_par_list(p, buf[r], sizeof(double), start);
		}
	}
	int e = ran != w->n;
	for (int r = 0; r < w->n; r++)
		e |= rc[r];
	return e;
}

/* The padded field (nx + 2) x (ny + 2): true value of padded (I, J). */
static float truth(int I, int J)
{
	return (float)(1000 * J + I + 1);
}

/* Rank r's copy: the truth in its band's padded rows (ghost rows with the
 * first / last band), -r - 1 elsewhere. */
static float *rank_copy(const struct world *w, int r, int W, int ny)
{
	float *f = malloc((size_t)W * (ny + 2) * sizeof(float));
	assert_non_null(f);
	for (int J = 0; J < ny + 2; J++) {
		int j = J - 1 < 0 ? 0 : J - 1 >= ny ? ny - 1 : J - 1;
		int mine = j >= w->row0[r] && j < w->row0[r + 1];
		for (int I = 0; I < W; I++)
			f[(size_t)J * W + I] = mine ? truth(I, J) : (float)(-r - 1);
	}
	return f;
}

/* wb_par_rows_sel: the selected rows from their owners to every rank, the
 * other rows as they were; bands moved by wb_par_cut keep their rows'
 * bytes (lbm_par_rebalance's use). */
static void test_rows_sel(void **state)
{
	(void)state;
	for (int n = 2; n <= 5; n++) {
		const int nx = 9, ny = 23, W = nx + 2;
		struct world w;
		struct link links[NMAX];
		world_init(&w, links, n, ny);
		uint8_t sel[23];
		for (int j = 0; j < ny; j++)
			sel[j] = j % 3 == 1 || j == ny - 1;
		float *f[NMAX];
		for (int r = 0; r < n; r++)
			f[r] = rank_copy(&w, r, W, ny);
		int rc[NMAX] = { 0 }, ran = 0;
#pragma omp parallel num_threads(n) reduction(+ : ran)
		{
			int r = omp_get_thread_num();
			if (omp_get_num_threads() == n) {
				ran = 1;
				rc[r] = wb_par_rows_sel(&w.p[r], f[r] + W,
							sizeof(float), W, sel);
			}
		}
		assert_int_equal(ran, n);
		for (int r = 0; r < n; r++) {
			assert_int_equal(rc[r], 0);
			for (int j = 0; j < ny; j++) {
				int mine = j >= w.row0[r] && j < w.row0[r + 1];
				for (int I = 0; I < W; I++) {
					float v = f[r][(size_t)(j + 1) * W + I];
					if (mine || sel[j])
						assert_true(v == truth(I, j + 1));
					else
						assert_true(v == (float)(-r - 1));
				}
			}
			free(f[r]);
		}
		/* a cut by other weights: the same on every rank, every row
		   in one band, at least three rows each (ny >= 3 n) */
		double wt[23];
		for (int j = 0; j < ny; j++)
			wt[j] = j < 5 ? 100.0 : 1.0;
		int a[NMAX + 1], b[NMAX + 1];
		wb_par_cut(n, ny, wt, a);
		wb_par_cut(n, ny, wt, b);
		assert_memory_equal(a, b, ((size_t)n + 1) * sizeof(int));
		assert_int_equal(a[0], 0);
		assert_int_equal(a[n], ny);
		for (int r = 0; r < n; r++)
			assert_true(a[r + 1] - a[r] >= 3);
		assert_true(a[1] < w.row0[1]); /* the heavy rows: a short band */
	}
}

static void test_exchanges(void **state)
{
	(void)state;
	for (int n = 2; n <= 5; n++) {
		const int nx = 9, ny = 23, W = nx + 2;
		struct world w;
		struct link links[NMAX];
		world_init(&w, links, n, ny);
		float *f[NMAX];
		/* every row */
		for (int r = 0; r < n; r++)
			f[r] = rank_copy(&w, r, W, ny);
		assert_int_equal(exchange(&w, X_ROWS, (void **)f, NULL, W, nx, ny), 0);
		for (int r = 0; r < n; r++)
			for (int J = 1; J <= ny; J++)
				for (int I = 0; I < W; I++)
					assert_true(f[r][J * W + I] == truth(I, J));
		/* halos of two rows: those rows true, the rest as before */
		for (int r = 0; r < n; r++) {
			free(f[r]);
			f[r] = rank_copy(&w, r, W, ny);
		}
		assert_int_equal(exchange(&w, X_HALO, (void **)f, NULL, W, nx, ny), 0);
		for (int r = 0; r < n; r++) {
			int j0 = w.row0[r], j1 = w.row0[r + 1];
			for (int j = 0; j < ny; j++) {
				int want = j >= j0 - 2 && j < j1 + 2;
				for (int I = 0; I < W; I++) {
					float v = f[r][(j + 1) * W + I];
					if (want)
						assert_true(v == truth(I, j + 1));
					else
						assert_true(v == (float)(-r - 1));
				}
			}
		}
		/* the ring: ghost and two interior lines at each end, whole
		   rows and the columns of every row */
		for (int r = 0; r < n; r++) {
			free(f[r]);
			f[r] = rank_copy(&w, r, W, ny);
		}
		assert_int_equal(exchange(&w, X_RING, (void **)f, NULL, W, nx, ny), 0);
		for (int r = 0; r < n; r++) {
			int j0 = w.row0[r], j1 = w.row0[r + 1];
			for (int J = 0; J < ny + 2; J++)
				for (int I = 0; I < W; I++) {
					int j = J - 1 < 0 ? 0 : J - 1 >= ny ? ny - 1 : J - 1;
					int mine = j >= j0 && j < j1;
					int ring = J <= 2 || J >= ny - 1 || I <= 2 ||
						   I >= nx - 1;
					float v = f[r][(size_t)J * W + I];
					if (mine || ring)
						assert_true(v == truth(I, J));
					else
						assert_true(v == (float)(-r - 1));
				}
		}
		for (int r = 0; r < n; r++)
			free(f[r]);
		/* a list ordered by rows: 0..3 entries per row */
		long start[24];
		start[0] = 0;
		for (int j = 0; j < ny; j++)
			start[j + 1] = start[j] + j % 4;
		double *l[NMAX];
		size_t bytes = (size_t)start[ny] * sizeof(double);
		for (int r = 0; r < n; r++) {
			l[r] = malloc(bytes);
			assert_non_null(l[r]);
			for (int j = 0; j < ny; j++)
				for (long e = start[j]; e < start[j + 1]; e++)
					l[r][e] = j >= w.row0[r] && j < w.row0[r + 1] ?
							  (double)e : -1.0;
		}
		assert_int_equal(exchange(&w, X_LIST, (void **)l, start, W, nx, ny), 0);
		for (int r = 0; r < n; r++) {
			for (long e = 0; e < start[ny]; e++)
				assert_true(l[r][e] == (double)e);
			free(l[r]);
		}
	}
}

/* ---- wb_par_plan_exchange (the OpenCL path's exchange) ------------------ */

/* Two padded fields of one rank, read and written by cell (wb_par_cells,
 * par.h's layouts, as src/cl/par.cl does them on a device): the second
 * holds the first's values negated (zero where it is zero). */
struct cells_user {
	float *f[2];
	const struct wb_par_plan *plan;
	int np;         /* halo parts received: 1 or 2 */
	long chunks;    /* nonzero chunks gathered, summed */
	long slots;     /* chunks gathered from, summed */
};

static int cells_io(void *user, int write, const int *cells, long n,
		    void *buf, size_t bytes)
{
	struct cells_user *u = user;
	const long nh = u->plan->nh, nch = u->plan->nch, CH = WB_PAR_CHUNK;
	float *b = buf;
	if (!write) {
		/* the ring cells, then the count, the numbers, the slots:
		   the chunks in reverse order (the device's is any) */
		const long m = n - 2 * nh;
		for (long k = 0; k < m; k++)
			for (int q = 0; q < 2; q++)
				b[2 * k + q] = u->f[q][cells[2 * nh + k]];
		uint32_t *hdr = (uint32_t *)(b + 2 * m), cnt = 0;
		float *slot = (float *)(hdr + 2 + 2 * nch);
		for (long g = 2 * nch - 1; g >= 0; g--) {
			const long d = g / nch, c = g % nch;
			float v[2 * WB_PAR_CHUNK] = { 0 };
			int any = 0;
			for (long l = 0; l < CH && c * CH + l < nh; l++)
				for (int q = 0; q < 2; q++) {
					v[2 * l + q] = u->f[q][cells[d * nh + c * CH + l]];
					uint32_t bits;
					memcpy(&bits, &v[2 * l + q], 4);
					any |= bits != 0;
				}
			if (!any)
				continue;
			hdr[2 + cnt] = (uint32_t)g;
			memcpy(slot + 2 * CH * cnt++, v, sizeof(v));
		}
		hdr[0] = cnt;
		hdr[1] = 0;
		u->chunks += cnt;
		u->slots += 2 * nch;
		assert_true((char *)(slot + 2 * CH * cnt) <= (char *)buf + bytes);
		return 0;
	}
	const long hp = u->np * nh, o = n - hp;
	const int32_t *map = (const int32_t *)(b + 2 * o);
	const float *slot = (const float *)(map + u->np * nch);
	for (long k = 0; k < n; k++) {
		float v[2] = { 0, 0 };
		if (k < hp) {
			int32_t sl = map[(k / nh) * nch + (k % nh) / CH];
			if (sl >= 0) {
				const float *r = slot + 2 * (sl * CH + (k % nh) % CH);
				assert_true((const char *)(r + 2) <= (char *)buf + bytes);
				v[0] = r[0];
				v[1] = r[1];
			}
		} else {
			v[0] = b[2 * (k - hp)];
			v[1] = b[2 * (k - hp) + 1];
		}
		for (int q = 0; q < 2; q++)
			u->f[q][cells[k]] = v[q];
	}
	return 0;
}

/* Every rank's plan exchange (halo of one row and the ring) at once, and
 * every rank's smallest-value reduction of 100 - r. */
static int plan_exchange(struct world *w, struct cells_user *u, int nx,
			 int ny, int rows, int *mins)
{
	int rc[NMAX] = { 0 }, ran = 0;
#pragma omp parallel num_threads(w->n) reduction(+ : ran)
	{
		int r = omp_get_thread_num();
		if (omp_get_num_threads() == w->n) {
			struct wb_par_plan plan;
			ran = 1;
			rc[r] = wb_par_plan_make(&w->p[r], nx, ny, rows, &plan);
			u[r].plan = &plan;
			u[r].np = (r > 0) + (r + 1 < w->n);
#pragma omp barrier
			if (!rc[r])
				rc[r] = wb_par_plan_exchange(&w->p[r], &plan, 2,
							     sizeof(float),
							     cells_io, &u[r]);
			wb_par_plan_release(&plan);
#pragma omp barrier
			mins[r] = wb_par_min(&w->p[r], 100 - r);
		}
	}
	int e = ran != w->n;
	for (int r = 0; r < w->n; r++)
		e |= rc[r];
	return e;
}

/* The plan test's true value: truth, zero in whole 32-cell chunks of
 * some rows (dry: not sent, and the receiver's other values must become
 * zero) and in single cells of chunks that are sent. */
static float ztruth(int I, int J)
{
	return ((I / 32 + J) % 3 == 0 && I < 64) || I % 7 == 3 ?
		0.0f : truth(I, J);
}

static void test_plan_exchange(void **state)
{
	(void)state;
	/* narrow grids too: their ring columns overlap; wide ones: rows of
	   several chunks */
	const int sizes[][2] = { { 9, 23 }, { 3, 11 }, { 4, 12 }, { 1, 15 },
				 { 70, 23 }, { 140, 16 } };
	long sent = 0, all = 0;
	for (int s = 0; s < 6; s++)
		for (int n = 2; n <= 5; n++)
			for (int rows = 0; rows <= 1; rows++) {
				const int nx = sizes[s][0], ny = sizes[s][1], W = nx + 2;
				struct world w;
				struct link links[NMAX];
				struct cells_user u[NMAX];
				int mins[NMAX];
				world_init(&w, links, n, ny);
				memset(u, 0, sizeof(u));
				for (int r = 0; r < n; r++) {
					u[r].f[0] = rank_copy(&w, r, W, ny);
					u[r].f[1] = rank_copy(&w, r, W, ny);
					for (int c = 0; c < W * (ny + 2); c++) {
						float t = u[r].f[0][c] == (float)(-r - 1) ?
							u[r].f[0][c] : ztruth(c % W, c / W);
						u[r].f[0][c] = t;
						u[r].f[1][c] = t != 0.0f ? -t : 0.0f;
					}
				}
				int rc = plan_exchange(&w, u, nx, ny, rows, mins);
				if (ny < 3 * n) { /* bands of two rows: refused */
					assert_int_not_equal(rc, 0);
					for (int r = 0; r < n; r++) {
						free(u[r].f[0]);
						free(u[r].f[1]);
					}
					continue;
				}
				assert_int_equal(rc, 0);
				/* the band, the next row each side whole, the
				   ring columns of the two rows after it, the ring
				   rows when asked; nothing else changed */
				for (int r = 0; r < n; r++) {
					int j0 = w.row0[r], j1 = w.row0[r + 1];
					int up = r > 0, dn = r + 1 < n;
					assert_int_equal(mins[r], 100 - (n - 1));
					for (int J = 0; J < ny + 2; J++)
						for (int I = 0; I < W; I++) {
							int j = J - 1 < 0 ? 0 : J - 1 >= ny ? ny - 1 : J - 1;
							int col = I <= 2 || I >= nx - 1;
							int want = (j >= j0 && j < j1) ||
								   (up && J - 1 == j0 - 1) ||
								   (dn && J - 1 == j1) ||
								   (col && up && (J - 1 == j0 - 2 || J - 1 == j0 - 3)) ||
								   (col && dn && (J - 1 == j1 + 1 || J - 1 == j1 + 2)) ||
								   (rows && (J <= 2 || J >= ny - 1));
							float v = u[r].f[0][(size_t)J * W + I],
							      m = u[r].f[1][(size_t)J * W + I];
							float t = want ? ztruth(I, J) : (float)(-r - 1);
							assert_true(v == t);
							assert_true(m == (t != 0.0f ? -t : 0.0f));
						}
					free(u[r].f[0]);
					free(u[r].f[1]);
					sent += u[r].chunks;
					all += u[r].slots;
				}
			}
	/* zero chunks were left out, and not all of them */
	assert_true(sent > 0 && sent < all);
}

/* ---- wb_par_sel_rows, wb_par_or_rows (the hybrid on OpenCL ranks) ---- */

/* Field q's true value at padded (I, J): zero in some 32-cell chunks
 * (dry), so that runs start and end inside rows, nonzero elsewhere. */
static float sel_truth(int q, int I, int J)
{
	return (I / 32 + J + q) % 3 == 0 || (J + q) % 5 == 0 ?
		0.0f : (float)(1000 * J + I + 1 + 100000 * q);
}

static void test_sel_rows(void **state)
{
	(void)state;
	/* one and several chunks a row, a short last chunk */
	const int sizes[][2] = { { 9, 23 }, { 100, 13 }, { 62, 30 } };
	for (int s = 0; s < 3; s++)
		for (int n = 2; n <= 5; n++) {
			const int nx = sizes[s][0], ny = sizes[s][1], W = nx + 2,
				  H = ny + 2;
			if (ny < 2 * n)
				continue;
			struct world w;
			struct link links[NMAX];
			world_init(&w, links, n, ny);
			/* field 0: rows J % 3 != 0; field 1: even rows (the
			   same on every rank) */
			uint8_t s0[64], s1[64];
			for (int J = 0; J < H; J++) {
				s0[J] = J % 3 != 0;
				s1[J] = J % 2 == 0;
			}
			const uint8_t *sel[2] = { s0, s1 };
			float *f[NMAX][2];
			uint8_t v[NMAX][64];
			for (int r = 0; r < n; r++)
				for (int q = 0; q < 2; q++) {
					f[r][q] = malloc((size_t)W * H * sizeof(float));
					assert_non_null(f[r][q]);
					for (int J = 0; J < H; J++)
						for (int I = 0; I < W; I++)
							f[r][q][J * W + I] =
								wb_par_owns_cell(&w.p[r], (long)J * W, W, ny) ?
								sel_truth(q, I, J) : (float)(-r - 1);
				}
			/* flags: rank r's own rows and one each side hold
			   (J + r) % 4 == 0, the rest 1 (to be ignored) */
			for (int r = 0; r < n; r++)
				for (int J = 0; J < H; J++)
					v[r][J] = 1;
			for (int r = 0; r < n; r++) {
				const int a = r == 0 ? 0 : w.row0[r],
					  b = r + 1 == n ? H : w.row0[r + 1] + 2;
				for (int J = a; J < b; J++)
					v[r][J] = (J + r) % 4 == 0;
			}
			int rc[NMAX] = { 0 }, ran = 0;
#pragma omp parallel num_threads(n) reduction(+ : ran)
			{
				int r = omp_get_thread_num();
				if (omp_get_num_threads() == n) {
					void *fl[2] = { f[r][0], f[r][1] };
					ran = 1;
					rc[r] = wb_par_sel_rows(&w.p[r], fl, 2, W, sel);
					rc[r] |= wb_par_or_rows(&w.p[r], v[r]);
				}
			}
			assert_int_equal(ran, n);
			for (int r = 0; r < n; r++) {
				assert_int_equal(rc[r], 0);
				for (int q = 0; q < 2; q++) {
					for (int J = 0; J < H; J++)
						for (int I = 0; I < W; I++) {
							const int own = wb_par_owns_cell(&w.p[r], (long)J * W, W, ny);
							const float t = own || sel[q][J] ?
								sel_truth(q, I, J) : (float)(-r - 1);
							assert_true(f[r][q][J * W + I] == t);
						}
					free(f[r][q]);
				}
				/* the OR of every rank's range */
				for (int J = 0; J < H; J++) {
					int want = 0;
					for (int k = 0; k < n; k++) {
						const int a = k == 0 ? 0 : w.row0[k],
							  b = k + 1 == n ? H : w.row0[k + 1] + 2;
						want |= J >= a && J < b && (J + k) % 4 == 0;
					}
					assert_int_equal(v[r][J], want);
				}
			}
		}
}

static void test_one_process(void **state)
{
	(void)state;
	/* no struct wb_par: all rows, nothing exchanged, sums are v */
	int j0, j1;
	wb_par_band(NULL, 17, &j0, &j1);
	assert_int_equal(j0, 0);
	assert_int_equal(j1, 17);
	float x = 3;
	assert_int_equal(wb_par_rows(NULL, &x, sizeof(x), 1, 0, 0), 0);
	void *f[1] = { &x };
	assert_int_equal(wb_par_halo(NULL, f, 1, sizeof(x), 1, 0, 2), 0);
	assert_int_equal(wb_par_ring(NULL, f, 1, sizeof(x), 1, 1, 1), 0);
	assert_true(wb_par_sum(NULL, 42) == 42);
	assert_true(x == 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_bands),
		cmocka_unit_test(test_work_by_water),
		cmocka_unit_test(test_exchanges),
		cmocka_unit_test(test_rows_sel),
		cmocka_unit_test(test_plan_exchange),
		cmocka_unit_test(test_sel_rows),
		cmocka_unit_test(test_one_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
