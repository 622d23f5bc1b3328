/*
 * par_fake.h - a transport of N simulated ranks for the tests of src/par.h
 * (tests/test_par.c, tests/test_lbm_sparse.c): one OpenMP thread per rank;
 * an exchange registers the caller's buffer, waits for all (an orphaned
 * barrier), pulls the owners' elements from their buffers and waits again
 * before anyone may change them. Include after cmocka.h, par.h, omp.h.
 */
#ifndef WB_PAR_FAKE_H
#define WB_PAR_FAKE_H

#ifndef NMAX
#define NMAX 8
#endif

struct world {
	int n;
	struct wb_par p[NMAX];
	int row0[NMAX + 1];            /* the bands world_init cut */
	int rrow0[NMAX][NMAX + 1];     /* each rank's own (they may move) */
	long off[NMAX][NMAX + 1];
	char *reg[NMAX];
	const void *up[NMAX], *dn[NMAX]; /* halo buffers sent up / down */
	size_t nup[NMAX], ndn[NMAX];     /* and their bytes (halov) */
};

struct link {
	struct world *w;
	int rank;
};

static int fake_gather(void *user, void *buf, size_t elsize, const long *off)
{
	struct link *l = user;
	struct world *w = l->w;
	w->reg[l->rank] = buf;
#pragma omp barrier
	for (int q = 0; q < w->n; q++)
		if (q != l->rank)
			memcpy((char *)buf + off[q] * elsize,
			       w->reg[q] + off[q] * elsize,
			       (size_t)(off[q + 1] - off[q]) * elsize);
#pragma omp barrier
	return 0;
}

static int fake_halo(void *user, const void *to_up, const void *to_dn,
		     void *from_up, void *from_dn, size_t bytes)
{
	struct link *l = user;
	struct world *w = l->w;
	const int r = l->rank;
	w->up[r] = to_up;
	w->dn[r] = to_dn;
#pragma omp barrier
	if (r > 0) /* what the rank above sent down */
		memcpy(from_up, w->dn[r - 1], bytes);
	if (r + 1 < w->n)
		memcpy(from_dn, w->up[r + 1], bytes);
#pragma omp barrier
	return 0;
}

static int fake_halov(void *user, const void *to_up, size_t n_up,
		      const void *to_dn, size_t n_dn, void *from_up,
		      void *from_dn, size_t cap, size_t *got)
{
	struct link *l = user;
	struct world *w = l->w;
	const int r = l->rank;
	w->up[r] = to_up;
	w->dn[r] = to_dn;
	w->nup[r] = n_up;
	w->ndn[r] = n_dn;
	got[0] = got[1] = 0;
#pragma omp barrier
	int e = 0;
	if (r > 0) {
		got[0] = w->ndn[r - 1];
		e |= got[0] > cap;
		if (got[0] <= cap)
			memcpy(from_up, w->dn[r - 1], got[0]);
	}
	if (r + 1 < w->n) {
		got[1] = w->nup[r + 1];
		e |= got[1] > cap;
		if (got[1] <= cap)
			memcpy(from_dn, w->up[r + 1], got[1]);
	}
#pragma omp barrier
	return e ? -1 : 0;
}

static void world_init(struct world *w, struct link *links, int n, int ny)
{
	memset(w, 0, sizeof(*w));
	w->n = n;
	for (int r = 0; r < n; r++) {
		struct wb_par *p = &w->p[r];
		p->rank = r;
		p->size = n;
		p->row0 = w->rrow0[r];
		p->off = w->off[r];
		p->allgather = fake_gather;
		p->halo = fake_halo;
		p->halov = fake_halov;
		links[r].w = w;
		links[r].rank = r;
		p->user = &links[r];
	}
	wb_par_split(&w->p[0], ny, NULL);
	memcpy(w->row0, w->rrow0[0], sizeof(w->row0));
	for (int r = 1; r < n; r++) {
		w->p[r].ny = ny;
		memcpy(w->rrow0[r], w->row0, sizeof(w->row0));
	}
}

#endif
