/*
 * pack_synth.h - synthetic wb_pagesets for the pack tests, benchmark and
 * fuzz corpus (test helper, header-only).
 *
 * The world, in LOD0 pixel coordinates X = world x / dx0 (Y likewise):
 *   pond    X < 256: still water at 20 m, material 1        -> FLAT pages
 *   lake    256 <= X < 768: ripples 30 + 0.05 sin(2 pi X/128) sin(2 pi
 *           Y/128), periodic with the page, material 2     -> equal pages
 *   river   X >= 768: wet where |Y - (ny/2 + 40 sin(X/60))| < 30, surface
 *           falling 0.02 m per m from 1200 m, flow along the river,
 *           foam, material 3, optional hash noise on the surface
 *   dry     everywhere else and past the LOD's extent.
 * LOD k samples the same functions at its own pixel centres (X = (i+0.5)
 * * 2^k); the page cut follows pages.h (border pixels from the
 * neighbours, clamped to the padded image). Classification: EMPTY without
 * a wet interior pixel, FLAT when all 130x130 pixels are pond, else DATA.
 */
#ifndef PACK_SYNTH_H
#define PACK_SYNTH_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pages.h"

struct synth_opts {
	int nx, ny, n_lods;
	unsigned layers;
	double dx0;
	double noise;  /* m of hash noise on the river surface */
	int no_pond;   /* 1: no FLAT region */
};

struct synth_px {
	float h, u, v, dist, foam;
	uint8_t mat;
};

static inline float synth_hash(unsigned x, unsigned y)
{
	uint32_t h = x * 0x9E3779B1u ^ (y + 0x7F4A7C15u) * 0x85EBCA77u;
	h ^= h >> 15;
	h *= 0x2C1B3C6Du;
	h ^= h >> 12;
	return (float)(h & 0xFFFFFF) / 16777216.0f - 0.5f;
}

/* The world at LOD0 pixel coordinates (X, Y) (pixel centres). */
static inline void synth_eval(const struct synth_opts *o, double X, double Y,
			      double dmax, struct synth_px *p)
{
	const double pi = 3.14159265358979323846;
	memset(p, 0, sizeof *p);
	p->h = WB_DRY_HEIGHT;
	p->dist = (float)-dmax;
	if (X < 0 || Y < 0 || X >= o->nx || Y >= o->ny)
		return;
	if (X < 256 && !o->no_pond) {
		p->h = 20.0f;
		p->mat = 1;
		p->dist = (float)dmax;
		return;
	}
	if (X < 768 && X >= (o->no_pond ? 0 : 256)) {
		p->h = (float)(30 + 0.05 * sin(2 * pi * X / 128) *
					   sin(2 * pi * Y / 128));
		p->u = (float)(0.1 * cos(2 * pi * Y / 128));
		p->mat = 2;
		p->dist = (float)dmax;
		return;
	}
	double yc = o->ny / 2.0 + 40 * sin(X / 60);
	double e = fabs(Y - yc);
	double dist = (30 - e) * o->dx0;
	dist = dist > dmax ? dmax : dist < -dmax ? -dmax : dist;
	p->dist = (float)dist;
	if (e >= 30)
		return;
	p->h = (float)(1200 - 0.02 * X * o->dx0 +
		       o->noise * synth_hash((unsigned)X, (unsigned)Y));
	double s = 1 - (e / 30) * (e / 30);
	double dy = 40 * cos(X / 60) / 60;
	p->u = (float)(2.0 * s / sqrt(1 + dy * dy));
	p->v = (float)(2.0 * s * dy / sqrt(1 + dy * dy));
	p->foam = (float)(0.5 + 0.5 * sin(X / 17) * cos(Y / 13));
	p->mat = 3;
}

/* Fill ps; returns 0, or -1 when out of memory (ps freed). */
static inline int synth_pageset(const struct synth_opts *o,
				struct wb_pageset *ps)
{
	const double dmax = 16;
	memset(ps, 0, sizeof *ps);
	ps->n_lods = o->n_lods;
	ps->layers = o->layers;
	ps->origin[0] = 1000.5;
	ps->origin[1] = -2000.25;
	ps->dx0 = o->dx0;
	ps->distance_max = dmax;
	ps->lods = calloc((size_t)o->n_lods, sizeof *ps->lods);
	if (!ps->lods)
		return -1;
	int nx = o->nx, ny = o->ny;
	for (int k = 0; k < o->n_lods; k++) {
		struct wb_lod_pages *l = &ps->lods[k];
		l->lod = k;
		l->nx = nx;
		l->ny = ny;
		l->dx = o->dx0 * (double)(1 << k);
		l->px = (nx + 127) / 128;
		l->py = (ny + 127) / 128;
		l->pages = calloc((size_t)l->px * l->py, sizeof *l->pages);
		if (!l->pages)
			goto oom;
		double sc = (double)(1 << k);
		for (int py = 0; py < l->py; py++)
			for (int px = 0; px < l->px; px++) {
				struct wb_page *pg = &l->pages[px + py * l->px];
				float *h = malloc(WB_PAGE_PIXELS * sizeof *h);
				float *fl = malloc(2 * WB_PAGE_PIXELS * sizeof *fl);
				uint8_t *m = malloc(WB_PAGE_PIXELS);
				float *di = malloc(WB_PAGE_PIXELS * sizeof *di);
				float *fo = malloc(WB_PAGE_PIXELS * sizeof *fo);
				if (!h || !fl || !m || !di || !fo) {
					free(h); free(fl); free(m); free(di);
					free(fo);
					goto oom;
				}
				int wet_in = 0, all_pond = 1;
				float lo = INFINITY, hi = -INFINITY;
				for (int b = 0; b < WB_PAGE_SIZE; b++)
					for (int a = 0; a < WB_PAGE_SIZE; a++) {
						int i = px * 128 + a - 1,
						    j = py * 128 + b - 1;
						int mx = l->px * 128 - 1,
						    my = l->py * 128 - 1;
						i = i < 0 ? 0 : i > mx ? mx : i;
						j = j < 0 ? 0 : j > my ? my : j;
						struct synth_px s;
						if (i >= nx || j >= ny)
							synth_eval(o, -1, -1, dmax, &s);
						else
							synth_eval(o, (i + 0.5) * sc,
								   (j + 0.5) * sc,
								   dmax, &s);
						int q = a + b * WB_PAGE_SIZE;
						h[q] = s.h;
						fl[2 * q] = s.u;
						fl[2 * q + 1] = s.v;
						m[q] = s.mat;
						di[q] = s.dist;
						fo[q] = s.foam;
						if (s.mat != 1)
							all_pond = 0;
						int in = a >= 1 && a <= 128 &&
							 b >= 1 && b <= 128;
						if (in && s.h != WB_DRY_HEIGHT) {
							wet_in = 1;
							lo = s.h < lo ? s.h : lo;
							hi = s.h > hi ? s.h : hi;
						}
					}
				pg->has_water = wet_in;
				pg->hmin = wet_in ? lo : 0;
				pg->hmax = wet_in ? hi : 0;
				if (!wet_in || all_pond) {
					pg->state = wet_in ? WB_PAGE_FLAT
							   : WB_PAGE_EMPTY;
					pg->flat_height = wet_in ? 20.0f : 0;
					pg->flat_material = wet_in ? 1 : 0;
					free(h); free(fl); free(m); free(di);
					free(fo);
					continue;
				}
				pg->state = WB_PAGE_DATA;
				pg->height = h;
				if (o->layers & (1u << WB_LAYER_FLOW)) pg->flow = fl;
				else free(fl);
				if (o->layers & (1u << WB_LAYER_MATERIAL)) pg->material = m;
				else free(m);
				if (o->layers & (1u << WB_LAYER_DISTANCE)) pg->distance = di;
				else free(di);
				if (o->layers & (1u << WB_LAYER_FOAM)) pg->foam = fo;
				else free(fo);
			}
		nx = (nx + 1) / 2;
		ny = (ny + 1) / 2;
	}
	return 0;
oom:
	wb_pageset_free(ps);
	return -1;
}

/* Wet area of LOD0 in km^2. */
static inline double synth_water_km2(const struct wb_pageset *ps)
{
	const struct wb_lod_pages *l = &ps->lods[0];
	long wet = 0;
	for (int k = 0; k < l->px * l->py; k++) {
		const struct wb_page *p = &l->pages[k];
		if (p->state == WB_PAGE_FLAT) {
			int x0 = (k % l->px) * 128, y0 = (k / l->px) * 128;
			int w = l->nx - x0 < 128 ? l->nx - x0 : 128;
			int h = l->ny - y0 < 128 ? l->ny - y0 : 128;
			wet += (long)w * h;
		} else if (p->state == WB_PAGE_DATA) {
			for (int b = 1; b <= 128; b++)
				for (int a = 1; a <= 128; a++)
					wet += p->height[a + b * WB_PAGE_SIZE] !=
					       WB_DRY_HEIGHT &&
					       (k % l->px) * 128 + a - 1 < l->nx &&
					       (k / l->px) * 128 + b - 1 < l->ny;
		}
	}
	return (double)wet * ps->dx0 * ps->dx0 / 1e6;
}

#endif
