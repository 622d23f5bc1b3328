/*
 * swe_particles.c - waterfalls for the SWE solver: edges where the terrain
 * drops become particle emitters (GDC 2023 talk refs/000, "SWE + particles
 * system"; Chentanez & Mueller 2010).
 *
 * Detection: a face between cells 'up' and 'dn' is a candidate when the
 * terrain drops by more than SWE_FALL_DROP * dx (static test, at init); it
 * is active in a step when water flows from up to dn and dn's surface lies
 * below up's terrain (a free overfall).
 * Create: the face's flux of the step, Phi = u h_up dt dx (m^3, exactly what
 * the height integration took out of 'up'), is taken out of 'dn' again and
 * split into n = clamp(ceil(Phi / V_p), 1, 16) particles of volume Phi / n,
 * V_p = 0.01 dx^3, placed at random in dn's column (x, y uniform in the
 * cell, z uniform in up's water column: above dn's surface), with the face
 * velocity. Random numbers: splitmix64 of (seed, step, face, k).
 * Advance: v = (v + g dt) / (1 + C dt), C = drag |v|; x += v dt (talk).
 * Delete: a particle whose z falls to the surface H + h of the cell under
 * it deposits there; one that leaves through an open/inflow/level edge is
 * booked as outflow, a wall edge holds it inside, a periodic one wraps it.
 * Deposit (the talk's two passes, u, v and h coupled at the cell): pass 1
 * sums V, V u_p, V v_p per cell (serially, in pool order); pass 2 sets each
 * of the cell's four faces to (u_f h dx^2 + sum V u_p) / (h dx^2 + sum V)
 * and h += sum V / dx^2. The pool is compacted (stable) every 5 steps.
 * Everything that touches the grid is serial and in a fixed order; the
 * advance is parallel per particle: byte-identical for any thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swe.h"

#define P(s, i, j) ((long)(i) + 1 + ((long)(j) + 1) * (long)(s)->W)

static unsigned long long mix64(unsigned long long z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double swe_rand(unsigned long long seed, unsigned long long a,
		unsigned long long b, unsigned long long c)
{
	unsigned long long z = mix64(seed);
	z = mix64(z ^ a);
	z = mix64(z ^ (b * 0x632be59bd9b4e019ULL));
	z = mix64(z ^ (c * 0x85157af5ULL));
	return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

int swe_particles_reserve(struct swe_particles *p, long need)
{
	if (need <= p->cap)
		return 0;
	long cap = p->cap ? p->cap : 1024;
	while (cap < need)
		cap *= 2;
	double **f[] = { &p->x, &p->y, &p->z, &p->vx, &p->vy, &p->vz, &p->vol };
	for (size_t n = 0; n < sizeof(f) / sizeof(f[0]); n++) {
		double *a = realloc(*f[n], (size_t)cap * sizeof(double));
		if (!a)
			return -1;
		*f[n] = a;
	}
	int32_t *h = realloc(p->hit, (size_t)cap * sizeof(int32_t));
	if (!h)
		return -1;
	p->hit = h;
	p->cap = cap;
	return 0;
}

void swe_particles_release(struct swe_particles *p)
{
	if (!p)
		return;
	free(p->x);
	free(p->y);
	free(p->z);
	free(p->vx);
	free(p->vy);
	free(p->vz);
	free(p->vol);
	free(p->hit);
	memset(p, 0, sizeof(*p));
}

double swe_particles_volume(const struct swe_particles *p)
{
	double v = 0.0;
	for (long n = 0; n < p->n; n++)
		if (p->hit[n] == -1)
			v += p->vol[n];
	return v;
}

static int add_fall(struct swe_ctx *s, long *cap, int vface, int i, int j,
		    long face, long l, long r)
{
	float dH = s->H[l] - s->H[r];
	if (!(fabsf(dH) > (float)(SWE_FALL_DROP * s->dx)))
		return 0;
	if (s->n_falls == *cap) {
		long nc = *cap ? *cap * 2 : 64;
		struct swe_fall *f = realloc(s->falls, (size_t)nc * sizeof(*f));
		if (!f)
			return -1;
		s->falls = f;
		*cap = nc;
	}
	struct swe_fall *f = &s->falls[s->n_falls++];
	memset(f, 0, sizeof(*f));
	f->vface = vface;
	f->i = i;
	f->j = j;
	f->face = face;
	f->dir = dH > 0 ? 1 : -1;
	f->up = dH > 0 ? l : r;
	f->dn = dH > 0 ? r : l;
	return 0;
}

enum wb_status swe_falls_find(struct swe_ctx *s)
{
	long cap = 0;
	const long W = s->W;
	for (int j = 0; j < s->ny; j++)
		for (int i = 1; i < s->nx; i++) {
			long c = P(s, i, j);
			if (add_fall(s, &cap, 0, i, j, c, c - 1, c))
				return WB_EIO;
		}
	for (int j = 1; j < s->ny; j++)
		for (int i = 0; i < s->nx; i++) {
			long c = P(s, i, j);
			if (add_fall(s, &cap, 1, i, j, c, c - W, c))
				return WB_EIO;
		}
	if (s->n_falls == 0)
		return WB_OK;
	s->dep_v = calloc((size_t)s->ncell, sizeof(double));
	s->dep_pu = calloc((size_t)s->ncell, sizeof(double));
	s->dep_pv = calloc((size_t)s->ncell, sizeof(double));
	s->dep_list = malloc((size_t)s->ncell * sizeof(long));
	if (!s->dep_v || !s->dep_pu || !s->dep_pv || !s->dep_list)
		return WB_EIO;
	return WB_OK;
}

/* Face flux as the height integration computes it (same expression). */
static inline float fall_flux(float uf, float hl, float hr, float hmax)
{
	float hup = uf > 0.0f ? hl : hr;
	float hadj = 0.5f * (hl + hr) - hmax;
	hadj = hadj > 0.0f ? hadj : 0.0f;
	float hh = hup - hadj;
	return uf * (hh > 0.0f ? hh : 0.0f);
}

void swe_falls_activate(struct swe_ctx *s)
{
	const float eps = (float)fmax(s->sim.dry_depth, 1e-9);
	const float *h = s->h;
	const long W = s->W;
	for (long n = 0; n < s->n_falls; n++) {
		struct swe_fall *f = &s->falls[n];
		float uf = f->vface ? s->v[f->face] : s->u[f->face];
		long l = f->vface ? f->face - W : f->face - 1, r = f->face;
		f->flux_step = 0.0f;
		if (!((float)f->dir * uf > 0.0f) || !(h[f->up] > eps))
			continue;
		if (!(h[f->dn] + s->H[f->dn] < s->H[f->up]))
			continue;
		f->flux_step = fall_flux(uf, h[l], h[r], s->hmax_step);
	}
}

void swe_falls_emit(struct swe_ctx *s)
{
	struct swe_particles *p = &s->P;
	const double dx = s->dx, a = dx * dx;
	const double vp = SWE_PART_VOL * dx * dx * dx;
	/* the height step's k: eps dt under the CPU solver's steady
	   acceleration (the step's dtm = eps_m dt, swe.c); the OpenCL host
	   (cl.c) sets dt itself and runs without it (eps_m 1 or unset) */
	const double em = s->eps_m > 0 ? s->eps_m : 1.0;
	const float k = (float)(em * s->dt / s->dx);
	const long W = s->W;
	float *h1 = s->h1;
	for (long n = 0; n < s->n_falls; n++) {
		struct swe_fall *f = &s->falls[n];
		if (f->flux_step == 0.0f)
			continue;
		if (p->n + SWE_PART_MAX_PER_FACE > SWE_PART_CAP ||
		    swe_particles_reserve(p, p->n + SWE_PART_MAX_PER_FACE))
			continue; /* pool full: the water stays on the grid */
		float before = h1[f->dn];
		float take = k * fabsf(f->flux_step);
		float after = before - take;
		after = after > 0.0f ? after : 0.0f;
		h1[f->dn] = after;
		double vol = ((double)before - (double)after) * a;
		if (!(vol > 0.0))
			continue;
		f->emit_cur += vol;
		long cnt = (long)ceil(vol / vp);
		cnt = cnt < 1 ? 1 : cnt > SWE_PART_MAX_PER_FACE ?
				SWE_PART_MAX_PER_FACE : cnt;
		double pv = vol / (double)cnt;
		/* dn's cell coordinates */
		long dc = f->dn;
		int di = (int)(dc % W) - 1, dj = (int)(dc / W) - 1;
		float uf = f->vface ? s->v[f->face] : s->u[f->face];
		/* tangential velocity: average of up's two tangential faces */
		float ut = f->vface ? 0.5f * (s->u[f->up] + s->u[f->up + 1]) :
				      0.5f * (s->v[f->up] + s->v[f->up + W]);
		double zup = s->H[f->up], hup = s->h[f->up];
		for (long q = 0; q < cnt; q++) {
			unsigned long long key = (unsigned long long)s->step;
			double r1 = swe_rand(s->sim.seed, key, (unsigned long long)n, 3 * q);
			double r2 = swe_rand(s->sim.seed, key, (unsigned long long)n, 3 * q + 1);
			double r3 = swe_rand(s->sim.seed, key, (unsigned long long)n, 3 * q + 2);
			long m = p->n++;
			p->x[m] = (di + r1) * dx;
			p->y[m] = (dj + r2) * dx;
			p->z[m] = zup + r3 * hup;
			p->vx[m] = f->vface ? ut : uf;
			p->vy[m] = f->vface ? uf : ut;
			p->vz[m] = 0.0;
			p->vol[m] = pv;
			p->hit[m] = -1;
		}
	}
}

/* Move one coordinate back into [0, L) per the edge kinds; returns 0 to
 * keep the particle, 1 when it left through an open edge. */
static int edge_wrap(double *x, double *vx, double L, enum wb_edge_kind lo,
		     enum wb_edge_kind hi)
{
	if (*x < 0.0) {
		if (lo == WB_EDGE_PERIODIC) {
			*x += L;
		} else if (lo == WB_EDGE_WALL) {
			*x = 0.0;
			*vx = 0.0;
		} else {
			return 1;
		}
	} else if (*x >= L) {
		if (hi == WB_EDGE_PERIODIC) {
			*x -= L;
		} else if (hi == WB_EDGE_WALL) {
			*x = nextafter(L, 0.0);
			*vx = 0.0;
		} else {
			return 1;
		}
	}
	if (*x < 0.0 || *x >= L) /* periodic overshoot by more than L */
		*x = *x < 0.0 ? 0.0 : nextafter(L, 0.0);
	return 0;
}

void swe_particles_advance(struct swe_particles *p, const struct swe_ctx *s,
			   const float *h)
{
	const double dt = s->dt, g = s->g, dx = s->dx;
	const double Lx = s->nx * dx, Ly = s->ny * dx;
	const struct wb_edge *E = s->r->edges;
	const long n = p->n;
	double *restrict x = p->x, *restrict y = p->y, *restrict z = p->z;
	double *restrict vx = p->vx, *restrict vy = p->vy, *restrict vz = p->vz;
	int32_t *restrict hit = p->hit;
	int T = s->threads;
#pragma omp parallel for schedule(static) num_threads(T) if (n > 20000)
	for (long m = 0; m < n; m++) {
		if (hit[m] != -1)
			continue;
		double sp = sqrt(vx[m] * vx[m] + vy[m] * vy[m] + vz[m] * vz[m]);
		double den = 1.0 + SWE_PART_DRAG * sp * dt;
		vx[m] = vx[m] / den;
		vy[m] = vy[m] / den;
		vz[m] = (vz[m] - g * dt) / den;
		x[m] += vx[m] * dt;
		y[m] += vy[m] * dt;
		z[m] += vz[m] * dt;
		if (edge_wrap(&x[m], &vx[m], Lx, E[WB_WEST].kind,
			      E[WB_EAST].kind) ||
		    edge_wrap(&y[m], &vy[m], Ly, E[WB_NORTH].kind,
			      E[WB_SOUTH].kind)) {
			hit[m] = -2;
			continue;
		}
		int i = (int)(x[m] / dx), j = (int)(y[m] / dx);
		i = i < 0 ? 0 : i >= s->nx ? s->nx - 1 : i;
		j = j < 0 ? 0 : j >= s->ny ? s->ny - 1 : j;
		long c = P(s, i, j);
		if (z[m] <= (double)s->H[c] + (double)h[c])
			hit[m] = (int32_t)c;
	}
}

void swe_particles_step(struct swe_ctx *s)
{
	struct swe_particles *p = &s->P;
	const double a = s->dx * s->dx;
	const long W = s->W;
	float *h = s->h1, *u = s->u, *v = s->v;
	swe_particles_advance(p, s, h);
	/* pass 1: sums per cell, in pool order */
	s->n_dep = 0;
	for (long m = 0; m < p->n; m++) {
		int32_t c = p->hit[m];
		if (c == -2) {
			s->vol_out += p->vol[m];
			p->hit[m] = -3;
			continue;
		}
		if (c < 0)
			continue;
		if (s->dep_v[c] == 0.0)
			s->dep_list[s->n_dep++] = c;
		s->dep_v[c] += p->vol[m];
		s->dep_pu[c] += p->vol[m] * p->vx[m];
		s->dep_pv[c] += p->vol[m] * p->vy[m];
		p->hit[m] = -3;
	}
	/* pass 2: couple u, v and h at each touched cell */
	for (long n = 0; n < s->n_dep; n++) {
		long c = s->dep_list[n];
		double V = s->dep_v[c], m = (double)h[c] * a;
		double den = m + V;
		if (den > 0.0) {
			long fu[2] = { c, c + 1 }, fv[2] = { c, c + W };
			for (int q = 0; q < 2; q++) {
				u[fu[q]] = (float)(((double)u[fu[q]] * m +
						    s->dep_pu[c]) / den);
				v[fv[q]] = (float)(((double)v[fv[q]] * m +
						    s->dep_pv[c]) / den);
			}
		}
		h[c] = (float)((double)h[c] + V / a);
		s->dep_v[c] = s->dep_pu[c] = s->dep_pv[c] = 0.0;
	}
	/* compact (stable) every few steps */
	if (s->step % SWE_COMPACT_EVERY == 0) {
		long w = 0;
		for (long m = 0; m < p->n; m++) {
			if (p->hit[m] != -1)
				continue;
			if (w != m) {
				p->x[w] = p->x[m];
				p->y[w] = p->y[m];
				p->z[w] = p->z[m];
				p->vx[w] = p->vx[m];
				p->vy[w] = p->vy[m];
				p->vz[w] = p->vz[m];
				p->vol[w] = p->vol[m];
				p->hit[w] = -1;
			}
			w++;
		}
		p->n = w;
	}
}

/* ---- waterfall list ------------------------------------------------------ */

static int fall_cmp(const void *pa, const void *pb)
{
	const struct swe_fall *a = *(const struct swe_fall *const *)pa;
	const struct swe_fall *b = *(const struct swe_fall *const *)pb;
	int la = a->vface ? a->j : a->i, lb = b->vface ? b->j : b->i;
	int qa = a->vface ? a->i : a->j, qb = b->vface ? b->i : b->j;
	if (a->vface != b->vface)
		return a->vface - b->vface;
	if (a->dir != b->dir)
		return a->dir - b->dir;
	if (la != lb)
		return la < lb ? -1 : 1;
	return qa < qb ? -1 : qa > qb;
}

enum wb_status swe_falls_export(const struct swe_ctx *s, struct wb_state *out)
{
	out->falls = NULL;
	out->n_falls = 0;
	double tt = s->t_last + s->t_cur;
	if (s->n_falls == 0 || !(tt > 0.0))
		return WB_OK;
	const struct swe_fall **act = malloc((size_t)s->n_falls * sizeof(*act));
	if (!act)
		return WB_EIO;
	long na = 0;
	for (long n = 0; n < s->n_falls; n++)
		if (s->falls[n].emit_last + s->falls[n].emit_cur > 0.0)
			act[na++] = &s->falls[n];
	qsort(act, (size_t)na, sizeof(*act), fall_cmp);
	struct wb_waterfall *wf = na ? malloc((size_t)na * sizeof(*wf)) : NULL;
	if (na && !wf) {
		free(act);
		return WB_EIO;
	}
	int nw = 0;
	const double dx = s->dx;
	for (long n = 0; n < na;) {
		long e = n + 1;
		while (e < na && act[e]->vface == act[n]->vface &&
		       act[e]->dir == act[n]->dir &&
		       (act[e]->vface ? act[e]->j == act[n]->j :
					act[e]->i == act[n]->i) &&
		       (act[e]->vface ? act[e]->i - act[e - 1]->i :
					act[e]->j - act[e - 1]->j) == 1)
			e++;
		double xs = 0, ys = 0, flux = 0, drop = 0;
		for (long q = n; q < e; q++) {
			const struct swe_fall *f = act[q];
			/* face centre in grid metres */
			double fx = f->vface ? (f->i + 0.5) * dx : f->i * dx;
			double fy = f->vface ? f->j * dx : (f->j + 0.5) * dx;
			xs += fx;
			ys += fy;
			flux += (f->emit_last + f->emit_cur) / tt;
			drop += ((double)s->H[f->up] + s->h[f->up]) -
				((double)s->H[f->dn] + s->h[f->dn]);
		}
		double cnt = (double)(e - n);
		wf[nw].x = s->r->origin[0] + xs / cnt;
		wf[nw].y = s->r->origin[1] + ys / cnt;
		wf[nw].width = cnt * dx;
		wf[nw].flux = flux;
		wf[nw].drop = drop / cnt;
		nw++;
		n = e;
	}
	free(act);
	out->falls = wf;
	out->n_falls = nw;
	return WB_OK;
}
