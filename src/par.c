/*
 * par.c - row bands and the exchange helpers of par.h (no MPI here).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbm.h"
#include "par.h"

/* memcpy, storing only when the bytes differ (see wb_par_ring). */
static void put_bytes(void *dst, const void *src, size_t n)
{
	if (memcmp(dst, src, n))
		memcpy(dst, src, n);
}

void wb_par_cut(int n, int ny, const double *work, int *row0)
{
	double tot = 0;
	for (int j = 0; j < ny; j++)
		tot += work ? work[j] : 1.0;
	/* band r ends at the first row where the running sum reaches
	 * (r + 1) / n of the total, leaving room for the bands after it */
	double acc = 0;
	int j = 0;
	/* three rows at least per band (an OpenCL rank's least; the halos
	 * are two rows deep) */
	const int least = ny >= 3 * n ? 3 : ny >= 2 * n ? 2 : ny >= n ? 1 : 0;
	row0[0] = 0;
	for (int r = 1; r < n; r++) {
		double goal = tot * r / n;
		int lo = row0[r - 1] + least;
		int hi = ny - (n - r) * least;
		while (j < ny && (j < lo || acc + (work ? work[j] : 1.0) <= goal) &&
		       j < hi) {
			acc += work ? work[j] : 1.0;
			j++;
		}
		row0[r] = j;
	}
	row0[n] = ny;
}

void wb_par_split(struct wb_par *p, int ny, const double *work)
{
	p->ny = ny;
	wb_par_cut(p->size, ny, work, p->row0);
	double tot = 0, mine = 0;
	for (int j = 0; j < ny; j++)
		tot += work ? work[j] : 1.0;
	for (int q = p->row0[p->rank]; q < p->row0[p->rank + 1]; q++)
		mine += work ? work[q] : 1.0;
	p->share = tot > 0 ? mine / tot : 0;
}

int wb_par_rows_sel(struct wb_par *p, void *base, size_t elsize,
		    long row_elems, const uint8_t *sel)
{
	if (!p || p->size <= 1)
		return 0;
	const int n = p->size, me = p->rank;
	const size_t rb = (size_t)row_elems * elsize;
	/* the selected rows in row order: rank r's are [off[r], off[r + 1]) */
	long *off = calloc((size_t)n + 1, sizeof(long));
	int e = !off;
	for (int r = 0; r < n && !e; r++) {
		long k = 0;
		for (int j = p->row0[r]; j < p->row0[r + 1]; j++)
			k += sel[j] != 0;
		off[r + 1] = off[r] + k;
	}
	char *buf = NULL;
	if (!e && off[n] == 0) {
		free(off);
		return p->failed;
	}
	if (!e)
		e = !(buf = malloc((size_t)off[n] * rb));
	if (!e) {
		char *w = buf + (size_t)off[me] * rb;
		for (int j = p->row0[me]; j < p->row0[me + 1]; j++)
			if (sel[j]) {
				memcpy(w, (char *)base + (size_t)j * rb, rb);
				w += rb;
			}
		/* whole rows as elements: row_elems * elsize bytes each */
		memcpy(p->off, off, ((size_t)n + 1) * sizeof(long));
		e = p->allgather(p->user, buf, rb, p->off);
	}
	for (int r = 0; r < n && !e; r++) {
		if (r == me)
			continue;
		const char *rd = buf + (size_t)off[r] * rb;
		for (int j = p->row0[r]; j < p->row0[r + 1]; j++)
			if (sel[j]) {
				put_bytes((char *)base + (size_t)j * rb, rd, rb);
				rd += rb;
			}
	}
	free(buf);
	free(off);
	p->failed |= e != 0;
	return e | p->failed;
}

int wb_par_rows(struct wb_par *p, void *base, size_t elsize, long row_elems,
		int first, int extra)
{
	if (!p || p->size <= 1)
		return 0;
	char *b = (char *)base + (size_t)first * row_elems * elsize;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = (long)(p->row0[r] + (r == p->size ? extra : 0)) *
			    row_elems;
	int e = p->allgather(p->user, b, elsize, p->off);
	p->failed |= e != 0;
	return e;
}

int wb_par_list(struct wb_par *p, void *base, size_t elsize,
		const long *row_start)
{
	if (!p || p->size <= 1)
		return 0;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = row_start[p->row0[r]];
	int e = p->allgather(p->user, base, elsize, p->off);
	p->failed |= e != 0;
	return e;
}

int wb_par_halo(struct wb_par *p, void *const *fields, int nf,
		size_t elsize, long row_elems, int first, int hw)
{
	if (!p || p->size <= 1)
		return 0;
	const int r = p->rank, j0 = p->row0[r], j1 = p->row0[r + 1];
	const size_t rb = (size_t)row_elems * elsize, blk = (size_t)hw * rb,
		     all = blk * (size_t)nf;
	char *buf = j1 - j0 >= hw ? calloc(4, all) : NULL;
	if (!buf) {
		p->failed = 1;
		return -1;
	}
	char *to_up = buf, *to_dn = buf + all, *from_up = buf + 2 * all,
	     *from_dn = buf + 3 * all;
	for (int q = 0; q < nf; q++) {
		const char *b = (const char *)fields[q] + (size_t)first * rb;
		memcpy(to_up + q * blk, b + (size_t)j0 * rb, blk);
		memcpy(to_dn + q * blk, b + (size_t)(j1 - hw) * rb, blk);
	}
	int e = p->halo(p->user, to_up, to_dn, from_up, from_dn, all);
	for (int q = 0; q < nf && !e; q++) {
		char *b = (char *)fields[q] + (size_t)first * rb;
		if (r > 0) /* band r - 1 has hw rows at least (wb_par_split) */
			memcpy(b + (size_t)(j0 - hw) * rb, from_up + q * blk, blk);
		if (r + 1 < p->size)
			memcpy(b + (size_t)j1 * rb, from_dn + q * blk, blk);
	}
	free(buf);
	p->failed |= e != 0;
	return e;
}

int wb_par_sums(struct wb_par *p, long long *v, int n)
{
	if (!p || p->size <= 1)
		return 0;
	long long *all = calloc((size_t)p->size * (size_t)n, sizeof(*all));
	if (!all) {
		p->failed = 1;
		return -1;
	}
	memcpy(all + (size_t)p->rank * n, v, (size_t)n * sizeof(*all));
	for (int r = 0; r <= p->size; r++)
		p->off[r] = r;
	int e = p->allgather(p->user, all, (size_t)n * sizeof(*all), p->off);
	for (int k = 0; k < n && !e; k++) {
		long long t = 0;
		for (int r = 0; r < p->size; r++)
			t += all[(size_t)r * n + k];
		v[k] = t;
	}
	free(all);
	p->failed |= e != 0;
	return e;
}

long long wb_par_sum(struct wb_par *p, long long v)
{
	if (!p || p->size <= 1)
		return v;
	long long *all = calloc((size_t)p->size, sizeof(*all));
	if (!all) {
		p->failed = 1;
		return v;
	}
	all[p->rank] = v;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = r;
	p->failed |= p->allgather(p->user, all, sizeof(*all), p->off) != 0;
	long long t = 0;
	for (int r = 0; r < p->size; r++)
		t += all[r];
	free(all);
	return t;
}


/* The padded rows (or columns) of the ring: the ghost line and the two
 * interior lines at each end (distinct, ascending); their count. */
static int ring_lines(int n, int out[6])
{
	int c[6] = { 0, 1, 2, n - 1, n, n + 1 }, k = 0;
	for (int q = 0; q < 6; q++)
		if (c[q] >= 0 && c[q] <= n + 1 && (k == 0 || c[q] > out[k - 1]))
			out[k++] = c[q];
	return k;
}

/* Owner of padded row R: the band of interior row R - 1 (the ghost rows
 * go with rows 0 and ny - 1). */
static int owns(const struct wb_par *p, int r, int R, int ny)
{
	int j = R - 1 < 0 ? 0 : R - 1 >= ny ? ny - 1 : R - 1;
	return j >= p->row0[r] && j < p->row0[r + 1];
}

int wb_par_ring(struct wb_par *p, void *const *fields, int nf,
		size_t elsize, long W, int nx, int ny)
{
	if (!p || p->size <= 1)
		return 0;
	int rows[6], nr = ring_lines(ny, rows), cols[6], nc = ring_lines(nx, cols);
	/* a ring row: the row of every field; a column record: the ring
	   columns of one row of every field */
	const size_t fb = (size_t)W * elsize, rb = fb * (size_t)nf,
		     cb = (size_t)nc * elsize * (size_t)nf;
	char *buf = malloc((size_t)nr * rb + (size_t)ny * cb);
	if (!buf) {
		p->failed = 1;
		return -1;
	}
	const int me = p->rank, j0 = p->row0[me], j1 = p->row0[me + 1];
	/* whole padded rows: ownership is monotone in the row, so rank r's
	   rows are a contiguous run of the list */
	for (int k = 0; k < nr; k++)
		if (owns(p, me, rows[k], ny))
			for (int q = 0; q < nf; q++)
				memcpy(buf + k * rb + q * fb,
				       (char *)fields[q] + (size_t)rows[k] * fb, fb);
	int k = 0;
	for (int r = 0; r < p->size; r++) {
		p->off[r] = k;
		while (k < nr && owns(p, r, rows[k], ny))
			k++;
	}
	p->off[p->size] = k;
	int e = k != nr; /* cannot happen with non-empty bands */
	if (!e)
		e = p->allgather(p->user, buf, rb, p->off);
	/* the columns of every interior row: by band */
	char *cbuf = buf + (size_t)nr * rb;
	for (int j = j0; j < j1; j++)
		for (int q = 0; q < nf; q++)
			for (int c = 0; c < nc; c++)
				memcpy(cbuf + (size_t)j * cb + ((size_t)q * nc + c) * elsize,
				       (char *)fields[q] + ((size_t)(j + 1) * W + cols[c]) * elsize,
				       elsize);
	for (int r = 0; r <= p->size; r++)
		p->off[r] = p->row0[r];
	e |= p->allgather(p->user, cbuf, cb, p->off);
	/* stored only where the bytes differ: the ring columns lie at both
	   ends of every row, and a store of the zeros a fresh page reads
	   would back every page of the grid on every rank (src/lbm.c
	   field_alloc: a rank's memory follows its band) */
	for (int x = 0; x < nr && !e; x++)
		for (int q = 0; q < nf; q++)
			put_bytes((char *)fields[q] + (size_t)rows[x] * fb,
				  buf + x * rb + q * fb, fb);
	for (int j = 0; j < ny && !e; j++)
		for (int q = 0; q < nf; q++)
			for (int c = 0; c < nc; c++)
				put_bytes((char *)fields[q] + ((size_t)(j + 1) * W + cols[c]) * elsize,
					  cbuf + (size_t)j * cb + ((size_t)q * nc + c) * elsize,
					  elsize);
	free(buf);
	p->failed |= e != 0;
	return e;
}

/* A cell's record in the exchanges of LBM_PAR_OWN: its 9 populations and
 * its depth in buffer b. n: the plan's index (rows of nx + 2 cells), not
 * the solver's (rows of L->W, which may be wider). */
static void lbm_rec_get(const struct lbm *L, int b, int n, char *rec)
{
	n = n / (L->nx + 2) * L->W + n % (L->nx + 2);
	for (int a = 0; a < LBM_Q; a++)
		memcpy(rec + 4 * a, &L->f[b][a][n], 4);
	memcpy(rec + 4 * LBM_Q, &L->h[b][n], 4);
}

/* ... stored only where the bytes differ (a rank's memory follows its
 * band: src/lbm.c field_alloc) */
static void lbm_rec_put(struct lbm *L, int b, int n, const char *rec)
{
	n = n / (L->nx + 2) * L->W + n % (L->nx + 2);
	for (int a = 0; a < LBM_Q; a++)
		put_bytes(&L->f[b][a][n], rec + 4 * a, 4);
	put_bytes(&L->h[b][n], rec + 4 * LBM_Q, 4);
}

/* wb_par_cells (par.h's layouts) on the step's output, f[!cur] and
 * h[!cur], of a CPU rank: the plan's records one cell at a time (a few
 * rows' worth a step); the halo's chunks that hold a nonzero bit only,
 * a chunk not sent being stored as +0. */
static int lbm_par_cells(void *user, int write, const int *cells, long n,
			 void *buf, size_t bytes)
{
	struct lbm *L = user;
	const struct wb_par *p = L->par;
	const struct wb_par_plan *q = L->par_plan;
	const int b = !L->cur, up = p->rank > 0, dn = p->rank + 1 < p->size;
	const long nh = q->nh, nch = q->nch, CH = WB_PAR_CHUNK;
	const size_t rec = (LBM_Q + 1) * 4, crec = (size_t)CH * rec;
	char *o = buf;
	if (!write) {
		const long m = n - 2 * nh; /* this rank's ring cells */
		if ((size_t)m * rec + (2 + 2 * (size_t)nch) * 4 +
		    2 * (size_t)nch * crec > bytes)
			return -1;
		for (long k = 0; k < m; k++)
			lbm_rec_get(L, b, cells[2 * nh + k], o + (size_t)k * rec);
		uint32_t hdr[2] = { 0, 0 };
		char *tag = o + (size_t)m * rec + 8,
		     *slot = tag + 2 * (size_t)nch * 4;
		for (int d = 0; d < 2; d++) {
			if (!(d ? dn : up)) /* no one to send it to */
				continue;
			for (long c = 0; c < nch; c++) {
				const long k0 = d * nh + c * CH,
					   k1 = k0 + CH < (d + 1) * nh ? k0 + CH : (d + 1) * nh;
				char *w = slot + (size_t)hdr[0] * crec;
				uint32_t acc = 0;
				for (long k = k0; k < k1; k++) {
					lbm_rec_get(L, b, cells[k], w + (size_t)(k - k0) * rec);
					for (size_t x = 0; x < rec; x += 4) {
						uint32_t v;
						memcpy(&v, w + (size_t)(k - k0) * rec + x, 4);
						acc |= v;
					}
				}
				if (!acc)
					continue;
				memset(w + (size_t)(k1 - k0) * rec, 0,
				       (size_t)(CH - (k1 - k0)) * rec);
				const uint32_t t = (uint32_t)(d * nch + c);
				memcpy(tag + (size_t)hdr[0] * 4, &t, 4);
				hdr[0]++;
			}
		}
		memcpy(o + (size_t)m * rec, hdr, 8);
		return 0;
	}
	/* the ring records of the other ranks, the map, the slots */
	const int np = up + dn;
	const long ring = n - np * nh;
	const size_t head = (size_t)ring * rec + (size_t)np * nch * 4;
	if (ring < 0 || head > bytes)
		return -1;
	for (long k = 0; k < ring; k++)
		lbm_rec_put(L, b, cells[np * nh + k], o + (size_t)k * rec);
	const char *map = o + (size_t)ring * rec, *slots = o + head;
	const size_t nslot = (bytes - head) / crec;
	static const char zero[(LBM_Q + 1) * 4];
	for (int d = 0; d < np; d++)
		for (long c = 0; c < nch; c++) {
			int32_t sl;
			memcpy(&sl, map + ((size_t)d * nch + c) * 4, 4);
			if (sl >= 0 && (size_t)sl >= nslot)
				return -1;
			const long k0 = d * nh + c * CH,
				   k1 = k0 + CH < (d + 1) * nh ? k0 + CH : (d + 1) * nh;
			for (long k = k0; k < k1; k++)
				lbm_rec_put(L, b, cells[k], sl < 0 ? zero :
					    slots + (size_t)sl * crec + (size_t)(k - k0) * rec);
		}
	return 0;
}

/* Ring rows in the plan: only where the north and south ghosts copy the
 * far end's rows. */
static int lbm_plan_rows(const struct lbm *L)
{
	return L->edges[WB_NORTH].kind == WB_EDGE_PERIODIC ||
	       L->edges[WB_SOUTH].kind == WB_EDGE_PERIODIC;
}

int lbm_par_setup(struct lbm *L)
{
	struct wb_par *p = L->par;
	if (L->par_mode)
		return 0;
	L->par_mode = LBM_PAR_ALL;
	if (!p || p->size <= 1 || p->ny != L->ny || L->hybrid)
		return 0;
	struct wb_par_plan *q = calloc(1, sizeof(*q));
	if (!q)
		return -1;
	for (int r = 0; r < p->size; r++)
		if (p->row0[r + 1] - p->row0[r] < 3) { /* LBM_PAR_ALL */
			free(q);
			return 0;
		}
	if (wb_par_plan_make(p, L->nx, L->ny, lbm_plan_rows(L), q)) {
		free(q);
		return -1;
	}
	L->par_plan = q;
	L->par_mode = LBM_PAR_OWN;
	return 0;
}

int lbm_par_replan(struct lbm *L)
{
	struct wb_par *p = L->par;
	if (L->par_mode != LBM_PAR_OWN)
		return 0;
	wb_par_plan_release(L->par_plan);
	if (wb_par_plan_make(p, L->nx, L->ny, lbm_plan_rows(L), L->par_plan)) {
		p->failed = 1; /* a band of fewer than three rows, or memory */
		return -1;
	}
	return 0;
}

void lbm_par_release(struct lbm *L)
{
	if (L->par_plan)
		wb_par_plan_release(L->par_plan);
	free(L->par_plan);
	L->par_plan = NULL;
	L->par_mode = 0;
}

/* After a step: the per-row partials and the edge books to all; then,
 * when a row went bad (the step checks the depth range and may rescale:
 * rare), all rows of f and h; else what the next step reads from other
 * ranks: with the hybrid nothing more (lbm_par_hybrid sent every row);
 * LBM_PAR_OWN the plan's cells (the neighbours' nearest row, the ring
 * columns of the two rows after it, and the ring rows where the north
 * and south edges are periodic); LBM_PAR_ALL the halo rows and the
 * whole boundary ring. */
int lbm_par_exchange(struct lbm *L)
{
	struct wb_par *p = L->par;
	const int nb = !L->cur;
	int e = 0;
	/* the books: this band's rows and edge ghosts, then every band's in
	   rank order (integers: the one process's sums); the rows flagged
	   bad only when there are some (depth_range, locate_bad read them) */
	int J0, J1;
	wb_par_band(p, L->ny, &J0, &J1);
	long long v[6] = { 0, 0, 0, 0, L->par_edge[0], L->par_edge[1] };
	for (int j = J0 + 1; j <= J1; j++) {
		v[0] += L->row_clamp[j];
		v[1] += L->row_in[j];
		v[2] += L->row_out[j];
		v[3] += L->row_bad[j] != 0;
	}
	e |= wb_par_sums(p, v, 6);
	for (int k = 0; k < 6; k++)
		L->par_sum[k] = v[k];
	if (!e && v[3]) {
		e |= wb_par_rows(p, L->row_bad, sizeof(int), 1, 1, 0);
		return e | lbm_par_full(L, nb);
	}
	if (L->hybrid || e)
		return e;
	if (L->par_mode == LBM_PAR_OWN)
		return wb_par_plan_exchange(p, L->par_plan, LBM_Q + 1, 4,
					    lbm_par_cells, L);
	/* one halo and one ring exchange for the 9 populations and h */
	void *f[LBM_Q + 1];
	for (int a = 0; a < LBM_Q; a++)
		f[a] = L->f[nb][a];
	f[LBM_Q] = L->h[nb];
	e |= wb_par_halo(p, f, LBM_Q + 1, 4, L->W, 1, 1);
	e |= wb_par_ring(p, f, LBM_Q + 1, 4, L->W, L->nx, L->ny);
	return e;
}

int lbm_par_full(struct lbm *L, int which)
{
	struct wb_par *p = L->par;
	int e = 0;
	for (int a = 0; a < LBM_Q; a++)
		e |= wb_par_rows(p, L->f[which][a], sizeof(int32_t), L->W, 1, 0);
	e |= wb_par_rows(p, L->h[which], sizeof(float), L->W, 1, 0);
	return e;
}

/* The ring rows rank r owns, whole; their count (cells NULL: count). */
static long ring_cells(const struct wb_par *p, int r, int nx, int ny,
		       int *cells)
{
	const long W = nx + 2;
	int rows[6], nr = ring_lines(ny, rows);
	long n = 0;
	for (int k = 0; k < nr; k++)
		if (owns(p, r, rows[k], ny))
			for (long x = 0; x < W; x++, n++)
				if (cells)
					cells[n] = (int)(rows[k] * W + x);
	return n;
}

/* The cells a band edge sends: padded row R whole, then the ring columns
 * of rows R + d and R + 2 d (d = +1: into the band, toward the far side). */
static long edge_cells(int R, int d, const int *cols, int nc, long W,
		       int *out)
{
	long n = 0;
	for (long x = 0; x < W; x++)
		out[n++] = (int)(R * W + x);
	for (int s = 1; s <= 2; s++)
		for (int c = 0; c < nc; c++)
			out[n++] = (int)((R + s * d) * W + cols[c]);
	return n;
}

int wb_par_plan_make(const struct wb_par *p, int nx, int ny, int rows,
		     struct wb_par_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	const long W = nx + 2;
	const int me = p->rank, n = p->size, j0 = p->row0[me],
		  j1 = p->row0[me + 1], up = me > 0, dn = me + 1 < n;
	int cols[6], nc = ring_lines(nx, cols);
	for (int r = 0; r < n; r++)
		if (p->row0[r + 1] - p->row0[r] < 3)
			return -1;
	plan->roff = calloc((size_t)n + 1, sizeof(long));
	if (!plan->roff)
		return -1;
	for (int r = 0; r < n && rows; r++)
		plan->roff[r + 1] = plan->roff[r] + ring_cells(p, r, nx, ny, NULL);
	for (int r = 0; r < n && !rows; r++)
		plan->roff[r + 1] = 0;
	const long all = plan->roff[n], mine = plan->roff[me + 1] - plan->roff[me];
	plan->nh = W + 2L * nc;
	plan->nch = (plan->nh + WB_PAR_CHUNK - 1) / WB_PAR_CHUNK;
	plan->ng = 2 * plan->nh + mine;
	plan->ns = (up + dn) * plan->nh + all - mine;
	plan->gather = malloc((size_t)plan->ng * sizeof(int));
	plan->scatter = malloc((size_t)(plan->ns + 1) * sizeof(int));
	if (!plan->gather || !plan->scatter) {
		wb_par_plan_release(plan);
		return -1;
	}
	/* interior row j is padded row j + 1; up: rows j0, j0 + 1, j0 + 2;
	   down: rows j1 - 1, j1 - 2, j1 - 3; received the same way */
	edge_cells(j0 + 1, 1, cols, nc, W, plan->gather);
	edge_cells(j1, -1, cols, nc, W, plan->gather + plan->nh);
	if (rows)
		ring_cells(p, me, nx, ny, plan->gather + 2 * plan->nh);
	long s = 0;
	if (up)
		s += edge_cells(j0, -1, cols, nc, W, plan->scatter + s);
	if (dn)
		s += edge_cells(j1 + 1, 1, cols, nc, W, plan->scatter + s);
	for (int r = 0; r < n && rows; r++)
		if (r != me)
			s += ring_cells(p, r, nx, ny, plan->scatter + s);
	return 0;
}

int wb_par_owns_cell(const struct wb_par *p, int n, long W, int ny)
{
	return !p || p->size <= 1 || owns(p, p->rank, (int)(n / W), ny);
}

void wb_par_plan_release(struct wb_par_plan *plan)
{
	if (!plan->ext)
		free(plan->buf);
	free(plan->gather);
	free(plan->scatter);
	free(plan->roff);
	memset(plan, 0, sizeof(*plan));
}

/* wb_par_plan_exchange's regions at plan->buf, in bytes (see par.h for
 * the gathered and scattered layouts): g the gathered records, out[2]
 * and in[2] the messages to and from the neighbours (up, down: the word
 * n, n chunk numbers, n chunks), ring the whole ring list, s the records
 * to scatter. */
struct zlay {
	size_t rec, crec, g, gbytes, msg, out[2], in[2], ring, s, end;
};

static void zlay(const struct wb_par *p, const struct wb_par_plan *plan,
		 int nf, size_t elsize, struct zlay *z)
{
	const long all = plan->roff[p->size],
		   mine = plan->roff[p->rank + 1] - plan->roff[p->rank];
	const size_t nch = (size_t)plan->nch;
	z->rec = (size_t)nf * elsize;
	z->crec = WB_PAR_CHUNK * z->rec;
	z->g = 0;
	z->gbytes = (size_t)mine * z->rec + (2 + 2 * nch) * 4 + 2 * nch * z->crec;
	z->msg = (1 + nch) * 4 + nch * z->crec;
	z->out[0] = z->gbytes;
	z->out[1] = z->out[0] + z->msg;
	z->in[0] = z->out[1] + z->msg;
	z->in[1] = z->in[0] + z->msg;
	z->ring = z->in[1] + z->msg;
	z->s = z->ring + (size_t)all * z->rec;
	z->end = z->s + (size_t)all * z->rec + 2 * nch * 4 + 2 * nch * z->crec;
}

size_t wb_par_plan_bytes(const struct wb_par *p,
			 const struct wb_par_plan *plan, int nf, size_t elsize)
{
	if (!p || p->size <= 1 || !plan->roff)
		return 0;
	struct zlay z;
	zlay(p, plan, nf, elsize, &z);
	return z.end;
}

/* The message of part d (0: to up, 1: to down) from the gathered chunks:
 * their count, their numbers, their records. Its bytes. */
static size_t zmsg(const struct zlay *z, long nch, const char *g, long mine,
		   int d, char *out)
{
	const uint32_t *hdr = (const uint32_t *)(g + (size_t)mine * z->rec);
	const uint32_t cnt = hdr[0], *tag = hdr + 2;
	const char *slot = (const char *)(tag + 2 * nch);
	uint32_t n = 0, *num = (uint32_t *)out + 1;
	for (uint32_t k = 0; k < cnt; k++)
		if ((long)tag[k] / nch == d)
			num[n++] = (uint32_t)(tag[k] % (uint32_t)nch);
	char *dat = out + (1 + (size_t)n) * 4;
	n = 0;
	for (uint32_t k = 0; k < cnt; k++)
		if ((long)tag[k] / nch == d)
			memcpy(dat + (size_t)n++ * z->crec,
			       slot + (size_t)k * z->crec, z->crec);
	((uint32_t *)out)[0] = n;
	return (1 + (size_t)n) * 4 + (size_t)n * z->crec;
}

/* A received message of got bytes into part p's map entries and slots
 * from *ns on; -1 when it is not a well-formed message. */
static int zput(const struct zlay *z, long nch, const char *in, size_t got,
		int32_t *map, char *slots, long *ns)
{
	if (got < 4)
		return -1;
	uint32_t n;
	memcpy(&n, in, 4);
	if (n > (uint32_t)nch || got != (1 + (size_t)n) * 4 + n * z->crec)
		return -1;
	const uint32_t *num = (const uint32_t *)in + 1;
	const char *dat = in + (1 + (size_t)n) * 4;
	for (long c = 0; c < nch; c++)
		map[c] = -1;
	for (uint32_t k = 0; k < n; k++) {
		if (num[k] >= (uint32_t)nch || map[num[k]] >= 0)
			return -1;
		map[num[k]] = (int32_t)*ns;
		memcpy(slots + (size_t)*ns * z->crec, dat + (size_t)k * z->crec,
		       z->crec);
		++*ns;
	}
	return 0;
}

int wb_par_plan_exchange(struct wb_par *p, struct wb_par_plan *plan,
			 int nf, size_t elsize, wb_par_cells io, void *user)
{
	if (!p || p->size <= 1)
		return 0;
	const int me = p->rank, up = me > 0, dn = me + 1 < p->size;
	const long all = plan->roff[p->size], nch = plan->nch,
		   mine = plan->roff[me + 1] - plan->roff[me];
	struct zlay z;
	zlay(p, plan, nf, elsize, &z);
	if (plan->cap < z.end) {
		void *nb = plan->ext ? NULL : realloc(plan->buf, z.end);
		if (!nb) {
			p->failed = 1;
			return -1;
		}
		plan->buf = nb;
		plan->cap = z.end;
	}
	char *b = plan->buf, *g = b + z.g, *ring = b + z.ring, *s = b + z.s;
	int e = io(user, 0, plan->gather, plan->ng, g, z.gbytes);
	if (!e) {
		const uint32_t *hdr = (const uint32_t *)(g + (size_t)mine * z.rec);
		e = hdr[0] > 2 * (uint32_t)nch ? -1 : 0;
		for (uint32_t k = 0; !e && k < hdr[0]; k++)
			e = hdr[2 + k] >= 2 * (uint32_t)nch ? -1 : 0;
	}
	size_t got[2] = { 0, 0 };
	if (!e) {
		size_t len[2];
		for (int d = 0; d < 2; d++)
			len[d] = zmsg(&z, nch, g, mine, d, b + z.out[d]);
		e = p->halov(p->user, b + z.out[0], len[0], b + z.out[1], len[1],
			     b + z.in[0], b + z.in[1], z.msg, got);
	}
	if (!e && all > 0) { /* the same on every rank */
		memcpy(ring + (size_t)plan->roff[me] * z.rec, g,
		       (size_t)mine * z.rec);
		e = p->allgather(p->user, ring, z.rec, plan->roff);
	}
	if (!e) {
		/* the other ranks' ring records in rank order, the map of
		   the parts received (from up, from down), their slots */
		size_t k = 0;
		for (int r = 0; r < p->size; r++) {
			if (r == me)
				continue;
			size_t c = (size_t)(plan->roff[r + 1] - plan->roff[r]);
			memcpy(s + k * z.rec, ring + (size_t)plan->roff[r] * z.rec,
			       c * z.rec);
			k += c;
		}
		const int np = up + dn;
		int32_t *map = (int32_t *)(s + k * z.rec);
		char *slots = (char *)(map + np * nch);
		long ns = 0;
		int part = 0;
		for (int d = 0; d < 2 && !e; d++)
			if (d ? dn : up)
				e = zput(&z, nch, b + z.in[d], got[d],
					 map + part++ * nch, slots, &ns);
		if (!e)
			e = io(user, 1, plan->scatter, plan->ns, s,
			       (size_t)(slots - s) + (size_t)ns * z.crec);
	}
	p->failed |= e != 0;
	return e;
}

int wb_par_min(struct wb_par *p, int v)
{
	if (!p || p->size <= 1)
		return v;
	int *all = calloc((size_t)p->size, sizeof(*all));
	if (!all) {
		p->failed = 1;
		return v;
	}
	all[p->rank] = v;
	for (int r = 0; r <= p->size; r++)
		p->off[r] = r;
	p->failed |= p->allgather(p->user, all, sizeof(*all), p->off) != 0;
	int m = all[0];
	for (int r = 1; r < p->size; r++)
		m = all[r] < m ? all[r] : m;
	free(all);
	return m;
}

/* ---- rows to ranks by the water (wb_par_split's work) ------------------
 *
 * The block-sparse step (lbm.c) costs a rank the cells of the blocks it
 * steps: a block with water or a source, and the blocks next to one
 * (water moves a cell a step; a dry block next to a wet one must be
 * stepped to receive it). From the start's water that is known before
 * the first step: a world that is 1 % water, cut into equal rows, gives
 * the band with the river's delta most of the work and a mountain band
 * none. The split only moves work between ranks: every row computes the
 * same operations on whichever rank, so the bytes do not change. Each row
 * also costs its block flags and its ghosts, whatever its water. */
double lbm_par_work(const struct wb_raster *r, const float *h0, double *work)
{
	const int nx = r->nx, ny = r->ny;
	const int bx = (nx + LBM_SB - 1) / LBM_SB, by = (ny + LBM_SB - 1) / LBM_SB;
	if (!h0)
		h0 = r->h0;
	unsigned char *wet = calloc((size_t)bx * by, 1);
	if (!wet) { /* equal rows */
		for (int j = 0; j < ny; j++)
			work[j] = 1.0;
		return (double)nx * ny;
	}
	for (int j = 0; j < ny; j++) {
		const size_t row = (size_t)j * nx;
		unsigned char *w = wet + (size_t)(j / LBM_SB) * bx;
		for (int i = 0; i < nx; i++)
			if ((h0 && h0[row + i] > 0) ||
			    (r->src && r->src[row + i] > 0) ||
			    (r->flags && (r->flags[row + i] &
					  (WB_CELL_FIXED | WB_CELL_SOURCE))))
				w[i / LBM_SB] = 1;
	}
	double total = 0;
	for (int b = 0; b < by; b++) {
		int act = 0;
		for (int a = 0; a < bx; a++) {
			int on = 0;
			for (int q = b - 1; q <= b + 1 && !on; q++)
				for (int p = a - 1; p <= a + 1 && !on; p++)
					on = q >= 0 && q < by && p >= 0 && p < bx &&
					     wet[(size_t)q * bx + p];
			act += on;
		}
		const int j1 = (b + 1) * LBM_SB < ny ? (b + 1) * LBM_SB : ny;
		for (int j = b * LBM_SB; j < j1; j++) {
			work[j] = (double)LBM_SB * act + bx + 2;
			total += (double)LBM_SB * act;
		}
	}
	free(wet);
	return total;
}

/* ---- the LBM/FV hybrid's exchange ------------------------------------
 *
 * lbm_fv_mark runs on every rank on the whole grid (the marks read every
 * wet cell; lbm_fv_update runs on the band and the rows its sub-steps
 * read, lbm_fv.c fv_band, and lbm_fv_share gives every rank the
 * results), so every rank must hold the step's f and h as one process
 * does. Most of a world is dry, and a dry cell's populations and
 * depth are all +0 bits (the block-sparse step relies on it too). So each
 * rank sends, per row of its band, only the runs of HY_CH-cell chunks
 * that hold a nonzero bit in any of the ten fields, with their bytes; a
 * receiver copies those runs and clears, in its copy of the row, the
 * chunks outside them that still hold something (a store only where a
 * bit differs: untouched pages stay unbacked). Afterwards every rank
 * holds exactly the bytes an exchange of whole rows gave (lbm_par_full),
 * for about 40 bytes per wet cell instead of per cell. */
#define HY_CH 32 /* cells per chunk */
#define HY_UNIT 128 /* allgather element: a rank's record is padded to it */

static int hy_chunk_nonzero(void *const *fld, int nf, size_t at, size_t n)
{
	for (int q = 0; q < nf; q++) {
		const unsigned char *b = (const unsigned char *)fld[q] + at * 4;
		uint64_t acc = 0;
		size_t k = 0;
		for (; k + 8 <= n * 4; k += 8) {
			uint64_t w;
			memcpy(&w, b + k, 8);
			acc |= w;
		}
		for (; k < n * 4; k++)
			acc |= b[k];
		if (acc)
			return 1;
	}
	return 0;
}

/* Every rank's record (units of HY_UNIT bytes at mine) into a new *all,
 * rank r's at units p->off[r] .. p->off[r + 1]; len: size + 1 longs,
 * zero. Nonzero when the exchange failed or memory ran out. */
static int hy_gather(struct wb_par *p, const unsigned char *mine,
		     size_t units, long *len, unsigned char **all)
{
	const int n = p->size, me = p->rank;
	len[me] = (long)units;
	for (int r = 0; r <= n; r++)
		p->off[r] = r;
	if (p->allgather(p->user, len, sizeof(long), p->off))
		return 1;
	long tot = 0;
	for (int r = 0; r < n; r++) {
		p->off[r] = tot;
		tot += len[r];
	}
	p->off[n] = tot;
	*all = malloc((size_t)(tot ? tot : 1) * HY_UNIT);
	if (!*all)
		return 1;
	memcpy(*all + (size_t)p->off[me] * HY_UNIT, mine, units * HY_UNIT);
	return tot ? p->allgather(p->user, *all, HY_UNIT, p->off) != 0 : 0;
}

int lbm_par_hybrid(struct lbm *L)
{
	struct wb_par *p = L->par;
	if (!p || p->size <= 1)
		return 0;
	const int nb = !L->cur, nf = LBM_Q + 1, me = p->rank, n = p->size;
	void *fld[LBM_Q + 1];
	for (int a = 0; a < LBM_Q; a++)
		fld[a] = L->f[nb][a];
	fld[LBM_Q] = L->h[nb];
	const long W = L->W;
	const int nch = (int)((W + HY_CH - 1) / HY_CH);
	const int j0 = p->row0[me], j1 = p->row0[me + 1];
	/* this band's record: per row, the run count, the runs (first,
	   end chunk), then the runs' cells field by field */
	uint8_t *nz = malloc((size_t)nch);
	long *len = calloc((size_t)n + 1, sizeof(long));
	size_t bytes = 0;
	int e = !nz || !len;
	for (int j = j0; j < j1 && !e; j++) {
		const size_t row = (size_t)(j + 1) * W;
		int runs = 0;
		for (int c = 0; c < nch; c++) {
			size_t a = (size_t)c * HY_CH,
			       m = a + HY_CH <= (size_t)W ? HY_CH : (size_t)W - a;
			nz[c] = (uint8_t)hy_chunk_nonzero(fld, nf, row + a, m);
			if (nz[c] && (c == 0 || !nz[c - 1]))
				runs++;
			if (nz[c])
				bytes += m * 4 * (size_t)nf;
		}
		bytes += 4 + 8 * (size_t)runs;
	}
	/* a band without a nonzero bit sends nothing (its rows: zeros) */
	size_t units = bytes == 4 * (size_t)(j1 - j0) ? 0 :
		       (bytes + HY_UNIT - 1) / HY_UNIT;
	unsigned char *mine = e ? NULL : calloc(units ? units : 1, HY_UNIT);
	e |= !mine;
	unsigned char *w = mine;
	for (int j = j0; j < j1 && !e && units; j++) {
		const size_t row = (size_t)(j + 1) * W;
		int32_t cnt = 0, *pc = (int32_t *)(void *)w;
		w += 4;
		for (int c = 0; c < nch;) {
			size_t a = (size_t)c * HY_CH,
			       m = a + HY_CH <= (size_t)W ? HY_CH : (size_t)W - a;
			if (!hy_chunk_nonzero(fld, nf, row + a, m)) {
				c++;
				continue;
			}
			int c1 = c + 1;
			while (c1 < nch) {
				size_t a1 = (size_t)c1 * HY_CH,
				       m1 = a1 + HY_CH <= (size_t)W ? HY_CH : (size_t)W - a1;
				if (!hy_chunk_nonzero(fld, nf, row + a1, m1))
					break;
				c1++;
			}
			int32_t run[2] = { c, c1 };
			memcpy(w, run, 8);
			w += 8;
			size_t b0 = (size_t)c * HY_CH, b1 = (size_t)c1 * HY_CH;
			if (b1 > (size_t)W)
				b1 = (size_t)W;
			for (int q = 0; q < nf; q++) {
				memcpy(w, (char *)fld[q] + (row + b0) * 4, (b1 - b0) * 4);
				w += (b1 - b0) * 4;
			}
			cnt++;
			c = c1;
		}
		memcpy(pc, &cnt, 4);
	}
	/* the records' sizes (units), then the records */
	unsigned char *all = NULL;
	if (!e)
		e = hy_gather(p, mine, units, len, &all);
	/* the other bands' rows: their runs, zeros elsewhere */
	for (int r = 0; r < n && !e; r++) {
		if (r == me)
			continue;
		const unsigned char *rd = all + (size_t)p->off[r] * HY_UNIT,
				    *end = all + (size_t)p->off[r + 1] * HY_UNIT;
		const int dry = rd == end; /* a dry band sent nothing */
		for (int j = p->row0[r]; j < p->row0[r + 1] && !e; j++) {
			const size_t row = (size_t)(j + 1) * W;
			int32_t cnt = 0;
			lbm_sb_row_recv(L, j, -1, -1); /* the sparse step's flags */
			if (!dry) {
				e |= end - rd < 4;
				if (!e)
					memcpy(&cnt, rd, 4);
				rd += 4;
			}
			e |= cnt < 0 || cnt > nch || (size_t)(end - rd) < 8 * (size_t)cnt;
			int c = 0;
			for (int k = 0; k <= cnt && !e; k++) {
				int32_t run[2] = { nch, nch };
				if (k < cnt) {
					memcpy(run, rd, 8);
					rd += 8;
					e |= run[0] < c || run[1] <= run[0] || run[1] > nch;
					if (!e) {
						size_t b0 = (size_t)run[0] * HY_CH,
						       b1 = (size_t)run[1] * HY_CH;
						b1 = b1 > (size_t)W ? (size_t)W : b1;
						e |= (size_t)(end - rd) <
						     (b1 - b0) * 4 * (size_t)nf;
					}
					if (e)
						break;
				}
				/* chunks c .. run[0] - 1: zero */
				for (; c < run[0]; c++) {
					size_t a = (size_t)c * HY_CH,
					       m = a + HY_CH <= (size_t)W ? HY_CH : (size_t)W - a;
					if (!hy_chunk_nonzero(fld, nf, row + a, m))
						continue;
					for (int q = 0; q < nf; q++)
						memset((char *)fld[q] + (row + a) * 4, 0, m * 4);
				}
				if (k == cnt)
					break;
				size_t b0 = (size_t)run[0] * HY_CH,
				       b1 = (size_t)run[1] * HY_CH;
				if (b1 > (size_t)W)
					b1 = (size_t)W;
				for (int q = 0; q < nf; q++) {
					put_bytes((char *)fld[q] + (row + b0) * 4, rd,
						  (b1 - b0) * 4);
					rd += (b1 - b0) * 4;
				}
				lbm_sb_row_recv(L, j, (long)b0, (long)b1);
				c = run[1];
			}
		}
	}
	free(all);
	free(mine);
	free(len);
	free(nz);
	p->failed |= e != 0;
	return e | p->failed;
}

/* ---- the hybrid on OpenCL ranks: selected rows as nonzero runs -------
 *
 * cl.c's hybrid runs lbm_fv_update (its sub-steps by band: lbm_fv.c
 * fv_band) and the marking on every rank's host,
 * on rows each rank reads back from its own device: the rows it owns
 * (padded row R: the band of interior row R - 1, the ghost rows with the
 * first and last bands, as owns() above). wb_par_sel_rows hands those
 * rows to every rank with lbm_par_hybrid's chunk scheme, but only the
 * rows the host code will read (sel, the same on every rank), so what
 * moves follows the FV rows, not the band. */

/* First padded row of rank r (r = size: H). */
static int pad0(const struct wb_par *p, int r)
{
	return r == 0 ? 0 : r == p->size ? p->ny + 2 : p->row0[r] + 1;
}

/* The fields q of padded row R with sel[q][R]; their count. */
static int sel_fields(void *const *fld, int nf, const uint8_t *const *sel,
		      int R, void **out)
{
	int k = 0;
	for (int q = 0; q < nf; q++)
		if (sel[q][R])
			out[k++] = fld[q];
	return k;
}

/* Size of a chunk: HY_CH cells, the last one of a row shorter. */
static size_t chunk_len(int c, long W)
{
	size_t a = (size_t)c * HY_CH;
	return a + HY_CH <= (size_t)W ? HY_CH : (size_t)W - a;
}

int wb_par_sel_rows(struct wb_par *p, void *const *fld, int nf, long W,
		    const uint8_t *const *sel)
{
	if (!p || p->size <= 1)
		return 0;
	enum { MAXF = 16 };
	if (nf > MAXF)
		return -1;
	const int me = p->rank, n = p->size;
	const int nch = (int)((W + HY_CH - 1) / HY_CH);
	void *g[MAXF];
	/* this rank's record: per selected row, the run count, the runs
	   (first, end chunk), then the runs' cells field by field */
	size_t bytes = 0;
	for (int R = pad0(p, me); R < pad0(p, me + 1); R++) {
		const int k = sel_fields(fld, nf, sel, R, g);
		if (!k)
			continue;
		bytes += 4;
		for (int c = 0, prev = 0; c < nch; c++) {
			const size_t m = chunk_len(c, W);
			const int nz = hy_chunk_nonzero(g, k, (size_t)R * W +
							(size_t)c * HY_CH, m);
			bytes += nz ? m * 4 * (size_t)k + (prev ? 0 : 8) : 0;
			prev = nz;
		}
	}
	const size_t units = (bytes + HY_UNIT - 1) / HY_UNIT;
	unsigned char *mine = calloc(units ? units : 1, HY_UNIT);
	long *len = calloc((size_t)n + 1, sizeof(long));
	int e = !mine || !len;
	unsigned char *w = mine;
	for (int R = pad0(p, me); R < pad0(p, me + 1) && !e; R++) {
		const int k = sel_fields(fld, nf, sel, R, g);
		if (!k)
			continue;
		const size_t row = (size_t)R * W;
		int32_t cnt = 0;
		unsigned char *pc = w;
		w += 4;
		for (int c = 0; c < nch;) {
			if (!hy_chunk_nonzero(g, k, row + (size_t)c * HY_CH,
					      chunk_len(c, W))) {
				c++;
				continue;
			}
			int c1 = c + 1;
			while (c1 < nch &&
			       hy_chunk_nonzero(g, k, row + (size_t)c1 * HY_CH,
						chunk_len(c1, W)))
				c1++;
			int32_t run[2] = { c, c1 };
			memcpy(w, run, 8);
			w += 8;
			size_t b0 = (size_t)c * HY_CH, b1 = (size_t)c1 * HY_CH;
			b1 = b1 > (size_t)W ? (size_t)W : b1;
			for (int q = 0; q < k; q++) {
				memcpy(w, (char *)g[q] + (row + b0) * 4, (b1 - b0) * 4);
				w += (b1 - b0) * 4;
			}
			cnt++;
			c = c1;
		}
		memcpy(pc, &cnt, 4);
	}
	e |= !e && (size_t)(w - mine) != bytes; /* the two passes agree */
	unsigned char *all = NULL;
	if (!e)
		e = hy_gather(p, mine, units, len, &all);
	/* the other ranks' selected rows: their runs, zeros elsewhere */
	for (int r = 0; r < n && !e; r++) {
		if (r == me)
			continue;
		const unsigned char *rd = all + (size_t)p->off[r] * HY_UNIT,
				    *end = all + (size_t)p->off[r + 1] * HY_UNIT;
		for (int R = pad0(p, r); R < pad0(p, r + 1) && !e; R++) {
			const int k = sel_fields(fld, nf, sel, R, g);
			if (!k)
				continue;
			const size_t row = (size_t)R * W;
			int32_t cnt = 0;
			e |= end - rd < 4;
			if (e)
				break;
			memcpy(&cnt, rd, 4);
			rd += 4;
			e |= cnt < 0 || cnt > nch;
			int c = 0;
			for (int t = 0; t <= cnt && !e; t++) {
				int32_t run[2] = { nch, nch };
				if (t < cnt) {
					e |= end - rd < 8;
					if (e)
						break;
					memcpy(run, rd, 8);
					rd += 8;
					e |= run[0] < c || run[1] <= run[0] || run[1] > nch;
					if (!e) {
						size_t b0 = (size_t)run[0] * HY_CH,
						       b1 = (size_t)run[1] * HY_CH;
						b1 = b1 > (size_t)W ? (size_t)W : b1;
						e |= (size_t)(end - rd) < (b1 - b0) * 4 * (size_t)k;
					}
					if (e)
						break;
				}
				for (; c < run[0]; c++) { /* zero chunks */
					const size_t a = (size_t)c * HY_CH,
						     m = chunk_len(c, W);
					if (!hy_chunk_nonzero(g, k, row + a, m))
						continue;
					for (int q = 0; q < k; q++)
						memset((char *)g[q] + (row + a) * 4, 0, m * 4);
				}
				if (t == cnt)
					break;
				size_t b0 = (size_t)run[0] * HY_CH,
				       b1 = (size_t)run[1] * HY_CH;
				b1 = b1 > (size_t)W ? (size_t)W : b1;
				for (int q = 0; q < k; q++) {
					put_bytes((char *)g[q] + (row + b0) * 4, rd,
						  (b1 - b0) * 4);
					rd += (b1 - b0) * 4;
				}
				c = run[1];
			}
		}
	}
	free(all);
	free(mine);
	free(len);
	p->failed |= e != 0;
	return e | p->failed;
}

int wb_par_or_rows(struct wb_par *p, uint8_t *v)
{
	return wb_par_or_rows_n(p, v, 1);
}

int wb_par_or_rows_n(struct wb_par *p, uint8_t *v, size_t nb)
{
	if (!p || p->size <= 1)
		return 0;
	const int me = p->rank, n = p->size, H = p->ny + 2;
	/* rank r's range: its own padded rows and one beyond each side */
	long *off = calloc((size_t)n + 1, sizeof(long));
	uint8_t *all = NULL;
	int e = !off;
	for (int r = 0; r < n && !e; r++)
		off[r + 1] = off[r] + pad0(p, r + 1) + (r + 1 < n) -
			     (pad0(p, r) - (r > 0));
	if (!e)
		e = !(all = malloc((size_t)off[n] * nb + 1));
	if (!e) {
		memcpy(all + off[me] * nb, v + (pad0(p, me) - (me > 0)) * nb,
		       (size_t)(off[me + 1] - off[me]) * nb);
		memcpy(p->off, off, ((size_t)n + 1) * sizeof(long));
		e = p->allgather(p->user, all, nb, p->off);
	}
	if (!e) {
		memset(v, 0, (size_t)H * nb);
		for (int r = 0; r < n; r++) {
			const long a = pad0(p, r) - (r > 0);
			for (long k = 0; k < (off[r + 1] - off[r]) * (long)nb; k++)
				v[a * (long)nb + k] |= all[off[r] * (long)nb + k];
		}
	}
	free(all);
	free(off);
	p->failed |= e != 0;
	return e | p->failed;
}
