/*
 * mkterrain.c - generate the sample heightmaps (16-bit greyscale PNGs).
 *
 *   mkterrain river|coast|lake OUT.png
 *
 * Writes a deterministic 256x256 terrain (1 m per pixel) and prints the
 * features' coordinates (metres; x = column, y = row from the top, north
 * up) so that scene files can place sources, blockers and exclusion zones.
 * Heights are in metres for a scene with height_scale 100 and offset 0:
 * pixel value v = round(z / 100 * 65535), z clamped to [0, 100].
 *
 * Construction: a river is a polyline densely sampled along its course,
 * each sample carrying its bed elevation zb. For a pixel at distance d from
 * the nearest sample k,
 *   z = zb[k] + 0.8 (d/w0)^2                 d <= w0 (channel, U-shaped)
 *   z = zb[k] + 0.8 + H smoothstep((d-w0)/W) + noise * smoothstep(...)
 * so the bed itself never carries noise and descends exactly as zb does.
 * Basins (lakes, sea, harbour) are combined with min(). Noise is value
 * noise from an integer hash of the lattice point (no time, no rand()), so
 * the output is byte-identical on every run and host.
 *
 * As a self-check the tool runs a priority flood (Barnes et al. 2014,
 * "Priority-Flood: an optimal depression-filling and watershed-labeling
 * algorithm") from the map edges and reports each depression's spill level
 * and depth, which is where standing water will collect.
 */
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"
#include "util.h"
#include "wbake.h"

#define N 256
#define ZMAX 100.0 /* metres at pixel value 65535 */

/* ---- noise ------------------------------------------------------------- */

static uint32_t hash3(int32_t x, int32_t y, uint32_t seed)
{
	uint32_t h = (uint32_t)x * 0x8da6b343u ^ (uint32_t)y * 0xd8163841u ^
		     seed * 0xcb1ab31fu;
	h ^= h >> 16;
	h *= 0x7feb352du;
	h ^= h >> 15;
	h *= 0x846ca68bu;
	h ^= h >> 16;
	return h;
}

static double lattice(int32_t x, int32_t y, uint32_t seed)
{
	return (double)hash3(x, y, seed) / 4294967295.0 * 2.0 - 1.0;
}

static double smooth(double t)
{
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	return t * t * (3 - 2 * t);
}

/* Value noise in [-1, 1] with lattice spacing 'cell' metres. */
static double vnoise(double x, double y, double cell, uint32_t seed)
{
	double fx = x / cell, fy = y / cell;
	double x0 = floor(fx), y0 = floor(fy);
	double tx = smooth(fx - x0), ty = smooth(fy - y0);
	int32_t ix = (int32_t)x0, iy = (int32_t)y0;
	double a = lattice(ix, iy, seed), b = lattice(ix + 1, iy, seed);
	double c = lattice(ix, iy + 1, seed), d = lattice(ix + 1, iy + 1, seed);
	return (a + (b - a) * tx) + ((c + (d - c) * tx) - (a + (b - a) * tx)) * ty;
}

/* Fractal sum of 4 octaves, roughly in [-1, 1]. */
static double fbm(double x, double y, double cell, uint32_t seed)
{
	double s = 0, amp = 0.5333;
	for (int o = 0; o < 4; o++) {
		s += amp * vnoise(x, y, cell, seed + (uint32_t)o * 101u);
		cell *= 0.5;
		amp *= 0.5;
	}
	return s;
}

/* ---- river courses ----------------------------------------------------- */

struct course {
	int n, cap;
	double *x, *y, *zb;
};

static void course_add(struct course *c, double x, double y, double zb)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->x = realloc(c->x, sizeof(double) * (size_t)c->cap);
		c->y = realloc(c->y, sizeof(double) * (size_t)c->cap);
		c->zb = realloc(c->zb, sizeof(double) * (size_t)c->cap);
		if (!c->x || !c->y || !c->zb) {
			fprintf(stderr, "mkterrain: out of memory\n");
			exit(4);
		}
	}
	c->x[c->n] = x;
	c->y[c->n] = y;
	c->zb[c->n] = zb;
	c->n++;
}

static void course_free(struct course *c)
{
	free(c->x);
	free(c->y);
	free(c->zb);
}

/* Nearest sample to (px, py): returns its index, distance in *d. */
static int course_nearest(const struct course *c, double px, double py,
			  double *d)
{
	int best = 0;
	double bd = 1e300;
	for (int k = 0; k < c->n; k++) {
		double dx = c->x[k] - px, dy = c->y[k] - py;
		double q = dx * dx + dy * dy;
		if (q < bd) {
			bd = q;
			best = k;
		}
	}
	*d = sqrt(bd);
	return best;
}

/* Valley cross-section: a U-shaped channel of half-width w0 (edges 0.8 m
 * above the bed), then walls blending over W metres from the channel edge
 * up to 'base', the surrounding terrain without the valley. */
struct valley {
	double w0, W;
};

static double valley_z(const struct course *c, const struct valley *v,
		       double px, double py, double base)
{
	double d;
	int k = course_nearest(c, px, py, &d);
	double q = (d < v->w0 ? d : v->w0) / v->w0;
	double floor_z = c->zb[k] + 0.8 * q * q;
	if (d <= v->w0)
		return floor_z;
	return floor_z + (base - floor_z) * smooth((d - v->w0) / v->W);
}

/* ---- priority flood: depressions -------------------------------------- */

struct heap {
	int n;
	int *idx;
	const double *key;
};

static void heap_push(struct heap *h, int i)
{
	int k = h->n++;
	h->idx[k] = i;
	while (k > 0) {
		int p = (k - 1) / 2;
		if (h->key[h->idx[p]] <= h->key[h->idx[k]])
			break;
		int t = h->idx[p];
		h->idx[p] = h->idx[k];
		h->idx[k] = t;
		k = p;
	}
}

static int heap_pop(struct heap *h)
{
	int top = h->idx[0];
	h->idx[0] = h->idx[--h->n];
	int k = 0;
	for (;;) {
		int l = 2 * k + 1, r = l + 1, m = k;
		if (l < h->n && h->key[h->idx[l]] < h->key[h->idx[m]])
			m = l;
		if (r < h->n && h->key[h->idx[r]] < h->key[h->idx[m]])
			m = r;
		if (m == k)
			break;
		int t = h->idx[m];
		h->idx[m] = h->idx[k];
		h->idx[k] = t;
		k = m;
	}
	return top;
}

/* Fill depressions of z (drainage to all map edges); report those deeper
 * than 0.05 m with their spill level, area and centroid. */
static void report_depressions(const double *z)
{
	double *fill = malloc(sizeof(double) * N * N);
	unsigned char *seen = calloc(N * N, 1);
	struct heap h = { 0, malloc(sizeof(int) * N * N), fill };
	if (!fill || !seen || !h.idx) {
		fprintf(stderr, "mkterrain: out of memory\n");
		exit(4);
	}
	for (int i = 0; i < N * N; i++)
		fill[i] = z[i];
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++)
			if (i == 0 || j == 0 || i == N - 1 || j == N - 1) {
				seen[i + j * N] = 1;
				heap_push(&h, i + j * N);
			}
	while (h.n) {
		int c = heap_pop(&h);
		int ci = c % N, cj = c / N;
		static const int di[4] = { 1, -1, 0, 0 }, dj[4] = { 0, 0, 1, -1 };
		for (int q = 0; q < 4; q++) {
			int ni = ci + di[q], nj = cj + dj[q];
			if (ni < 0 || nj < 0 || ni >= N || nj >= N)
				continue;
			int nb = ni + nj * N;
			if (seen[nb])
				continue;
			seen[nb] = 1;
			if (fill[nb] < fill[c])
				fill[nb] = fill[c];
			heap_push(&h, nb);
		}
	}
	/* Label connected wet regions (fill > z + 0.05) and report each. */
	int *lab = calloc(N * N, sizeof(int));
	int *stack = malloc(sizeof(int) * N * N);
	if (!lab || !stack) {
		fprintf(stderr, "mkterrain: out of memory\n");
		exit(4);
	}
	int nlab = 0, small = 0;
	for (int s = 0; s < N * N; s++) {
		if (lab[s] || fill[s] - z[s] <= 0.05)
			continue;
		nlab++;
		int sp = 0, area = 0;
		double sx = 0, sy = 0, maxd = 0, level = fill[s];
		stack[sp++] = s;
		lab[s] = nlab;
		while (sp) {
			int c = stack[--sp];
			int ci = c % N, cj = c / N;
			area++;
			sx += ci;
			sy += cj;
			if (fill[c] - z[c] > maxd)
				maxd = fill[c] - z[c];
			static const int di[4] = { 1, -1, 0, 0 },
					 dj[4] = { 0, 0, 1, -1 };
			for (int q = 0; q < 4; q++) {
				int ni = ci + di[q], nj = cj + dj[q];
				if (ni < 0 || nj < 0 || ni >= N || nj >= N)
					continue;
				int nb = ni + nj * N;
				if (!lab[nb] && fill[nb] - z[nb] > 0.05) {
					lab[nb] = nlab;
					stack[sp++] = nb;
				}
			}
		}
		if (area < 20) {
			small++;
			continue;
		}
		printf("  depression: spill level %.2f m, max depth %.2f m, "
		       "area %d m^2, centroid (%.0f, %.0f)\n", level, maxd,
		       area, sx / area, sy / area);
	}
	printf("  small depressions (< 20 m^2, > 5 cm deep): %d\n", small);
	free(lab);
	free(stack);
	free(fill);
	free(seen);
	free(h.idx);
}

/* ---- the terrains ------------------------------------------------------ */

/* River: spring at (128, 20), 30 m; lake basin centred (128, 110), spill
 * 28 m at the outlet (128, 140); waterfall of 8 m at y = 170; straight
 * stretch with the bridge at y = 215; exits the south edge at (128, 255),
 * bed 17.7 m. Outside the fall the bed slopes about 0.02, so that a river
 * with a Manning n around 0.05 stays subcritical (Froude < 1), the regime
 * the LBM-SWE solver is built for. */
static double river_bed(double y)
{
	if (y <= 20)
		return 30;
	if (y <= 80)
		return 30 - 1.2 * (y - 20) / 60;     /* 30 -> 28.8 */
	if (y <= 110)
		return 28.8 - 0.8 * (y - 80) / 30;   /* 28.8 -> 28 */
	if (y <= 140)
		return 28;                           /* lake sill */
	if (y < 170)
		return 28 - 0.6 * (y - 140) / 30;    /* 28 -> 27.4 */
	return 19.4 - 1.7 * (y - 170) / 85;          /* 19.4 -> 17.7 */
}

static double river_x(double y)
{
	const double pi = 3.14159265358979323846;
	if (y > 20 && y < 80)
		return 128 + 9 * sin(2 * pi * (y - 20) / 60);
	if (y > 140 && y < 162)
		return 128 - 5 * sin(pi * (y - 140) / 22);
	return 128;
}

static void gen_river(double *z)
{
	struct course c = { 0 };
	for (double y = 20; y <= 262; y += 0.25)
		course_add(&c, river_x(y), y, river_bed(y));
	struct valley v = { 6, 28 };
	const double lx = 128, ly = 110, R = 30, rim = 29.5, bed = 24;
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			/* Plateau: falls 52 m from north to south, 38 m above
			 * a straight line through the bed, with hills. */
			double base = 72 - 20.0 * j / 255 +
				      2.5 * fbm(i, j, 48, 11);
			double vz = valley_z(&c, &v, i, j, base);
			double r = hypot(i - lx, j - ly);
			double lz;
			if (r < R)
				lz = bed + (rim - bed) * (r / R) * (r / R);
			else
				lz = rim + (base - rim) * smooth((r - R) / v.W);
			z[i + j * N] = vz < lz ? vz : lz;
		}
	/* Monotone bed check along the course, outside the lake basin. */
	double prev = 1e9;
	int ok = 1;
	for (int k = 0; k < c.n && c.y[k] < N; k++) {
		int i = (int)lround(c.x[k]), j = (int)lround(c.y[k]);
		if (i < 0 || i >= N || j >= N)
			continue;
		if (hypot(i - lx, j - ly) < R + 1)
			continue;
		double zz = z[i + j * N];
		if (zz > prev + 0.02 && j > 20) /* 16-bit steps, bends */
			ok = 0;
		prev = zz;
	}
	course_free(&c);
	printf("river: a valley from a spring in the north to the south edge\n"
	       "  spring area: centre (128, 20), bed 30 m; valley head closed "
	       "to the north\n"
	       "  upper course: S-bend x = 128 + 9 sin(2 pi (y-20)/60) for "
	       "y 20..80, bed 30 -> 28.8 m (slope 0.02)\n"
	       "  lake basin: centre (128, 110), radius 30 m (rim %.1f m and "
	       "higher), bed %.0f m; spill level 28.0 m at the outlet sill "
	       "(128, 110..140)\n"
	       "  middle course: y 140..170, small bend to x = 123 at y = 151,"
	       " bed 28 -> 27.4 m (slope 0.02)\n"
	       "  cliff/waterfall: bed drops 8 m (27.4 -> 19.4 m) between rows "
	       "y = 169 and y = 170 at x ~128, across the whole valley\n"
	       "  lower course: straight along x = 128 from y = 170 to the "
	       "south edge, bed 19.4 -> 17.7 m (slope 0.02)\n"
	       "  bridge site: y = 215, bed %.1f m at x = 128; banks reach "
	       "%.1f m at x = 118/138 and %.1f m at x = 108/148\n"
	       "  exit: south edge (y = 255) at x = 128, bed %.1f m\n"
	       "  check: river bed non-increasing downstream outside the "
	       "lake: %s\n", rim, bed, river_bed(215),
	       z[118 + 215 * N], z[108 + 215 * N], z[128 + 255 * N],
	       ok ? "yes" : "NO");
}

/* Coast: sea level 20 m in the south-west; land rising to ~60 m in the
 * north-east; a river valley reaching the sea; a harbour bay with a
 * breakwater. */
static double coast_c0(double x, double y)
{
	return -20 + 6 * sin((x + y) / 40);
}

/* Harbour frame: origin H on the coastline, a along the coast (south-east),
 * b seaward (south-west). */
#define HB_X 50.0
#define HB_Y 80.0

static void hb_xy(double a, double b, double *x, double *y)
{
	const double r = 0.70710678118654752;
	*x = HB_X + a * r - b * r;
	*y = HB_Y + a * r + b * r;
}

static void gen_coast(double *z)
{
	const double s2 = sqrt(2.0);
	/* River course: polyline from the valley head to the sea. */
	const double P[][2] = { { 212, 24 }, { 196, 56 }, { 168, 90 },
				{ 140, 118 }, { 112, 150 }, { 88, 178 } };
	const int np = (int)(sizeof(P) / sizeof(P[0]));
	struct course c = { 0 };
	double len = 0;
	for (int s = 0; s + 1 < np; s++) {
		double L = hypot(P[s + 1][0] - P[s][0], P[s + 1][1] - P[s][1]);
		for (double t = 0; t < L; t += 0.25) {
			double x = P[s][0] + (P[s + 1][0] - P[s][0]) * t / L;
			double y = P[s][1] + (P[s + 1][1] - P[s][1]) * t / L;
			course_add(&c, x, y, 0);
		}
		len += L;
	}
	/* Find where the course crosses the coastline, and set the bed:
	 * 40 m at the head, 19 m at the mouth, then on down into the sea. */
	int mouth = 0;
	for (int k = 0; k < c.n; k++) {
		double e = (c.x[k] - c.y[k]) / s2 - coast_c0(c.x[k], c.y[k]);
		if (e < 0) {
			mouth = k;
			break;
		}
	}
	double slope = (40.0 - 19.0) / (mouth * 0.25);
	for (int k = 0; k < c.n; k++)
		c.zb[k] = 40 - slope * k * 0.25;
	struct valley v = { 5, 26 };
	const double s2i = 1 / s2;
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			double e = (i - j) / s2 - coast_c0(i, j);
			double g;
			if (e >= 0) {
				double t = e < 25 ? 0 : smooth((e - 25) / 90);
				g = 20 + 0.16 * (e < 25 ? e : 25) + 36 * t +
				    (1 + 6 * t) * fbm(i, j, 50, 5);
			} else {
				double sea = 20 + 0.3 * e;
				if (sea < 6)
					sea = 6;
				g = sea + 1.5 * fbm(i, j, 30, 7);
			}
			double vz = valley_z(&c, &v, i, j, g);
			if (vz < g)
				g = vz;
			/* Harbour basin: a in [-24, 24], b in [-16, 24],
			 * floor 12 m, vertical quay walls on the land side. */
			double dx = i - HB_X, dy = j - HB_Y;
			double ha = (dx + dy) * s2i, hb = (dy - dx) * s2i;
			if (fabs(ha) <= 24 && hb >= -16 && hb <= 24 && g > 12)
				g = 12;
			/* Breakwater, top 24 m, 4 m wide: west arm at
			 * a = -26 (b -18..26), main arm at b = 26 (a -26..6),
			 * east arm at a = 26 (b -18..14); entrance between
			 * the main arm's end and the east arm. */
			int on = (fabs(ha + 26) <= 2 && hb >= -18 && hb <= 28) ||
				 (fabs(hb - 26) <= 2 && ha >= -28 && ha <= 6) ||
				 (fabs(ha - 26) <= 2 && hb >= -18 && hb <= 14);
			if (on && g < 24)
				g = 24;
			z[i + j * N] = g;
		}
	printf("coast: sea in the south-west, land rising to the north-east\n"
	       "  sea level for the scene: 20.0 m (terrain below 20 m is sea "
	       "floor, 6..19 m, deeper to the south-west; deepest ~5 m)\n"
	       "  coastline (20 m contour) crosses");
	for (int x = 0; x < N; x += 50) {
		for (int y = 0; y < N; y++) {
			double e = (x - y) / s2 - coast_c0(x, y);
			if (e < 0) {
				printf(" (%d, %d)", x, y);
				break;
			}
		}
	}
	printf("; the sea is south-west of it\n"
	       "  beach: slope 0.16 for 25 m inland (20 -> 24 m), then land "
	       "rising to ~60 m (hills +-7 m) towards the north-east corner\n"
	       "  river valley: head at (212, 24) bed 40 m, course "
	       "(212,24) (196,56) (168,90) (140,118) (112,150) (88,178); "
	       "channel half-width 5 m, walls up to the land surface; bed "
	       "slope %.3f\n"
	       "  river mouth: the course meets the coastline near (%.0f, %.0f)"
	       ", bed 19 m there (1 m below sea level), continuing to the sea "
	       "floor\n", slope, c.x[mouth], c.y[mouth]);
	double x0, y0, x1, y1, x2, y2, x3, y3;
	printf("  harbour: a basin with floor 12 m (8 m deep at sea level 20) "
	       "cut into the shore, vertical quays on the land side, enclosed "
	       "by breakwaters (top 24 m, 4 m wide):\n");
	hb_xy(-26, -18, &x0, &y0);
	hb_xy(-26, 26, &x1, &y1);
	hb_xy(6, 26, &x2, &y2);
	printf("    west/main breakwater: centre line (%.0f, %.0f) -> "
	       "(%.0f, %.0f) -> (%.0f, %.0f)\n", x0, y0, x1, y1, x2, y2);
	hb_xy(26, -18, &x0, &y0);
	hb_xy(26, 14, &x1, &y1);
	printf("    east breakwater: (%.0f, %.0f) -> (%.0f, %.0f)\n", x0, y0,
	       x1, y1);
	hb_xy(6, 26, &x0, &y0);
	hb_xy(26, 14, &x1, &y1);
	printf("    entrance (gap ~18 m between the breakwater ends): between "
	       "(%.0f, %.0f) and (%.0f, %.0f)\n", x0, y0, x1, y1);
	hb_xy(-24, -16, &x0, &y0);
	hb_xy(24, -16, &x1, &y1);
	hb_xy(24, 24, &x2, &y2);
	hb_xy(-24, 24, &x3, &y3);
	printf("    harbour basin (ocean exclusion zone) polygon: (%.1f, %.1f) "
	       "(%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f)\n", x0, y0, x1, y1, x2,
	       y2, x3, y3);
	printf("  total river length %.0f m\n", len);
	course_free(&c);
}

/* Lake: closed elliptic bowl (rim >= 40 m, bottom 10 m) with an island
 * rising above 30 m. */
static void gen_lake(double *z)
{
	const double cx = 128, cy = 128, ax = 100, ay = 84;
	const double ix = 154, iy = 112; /* island */
	for (int j = 0; j < N; j++)
		for (int i = 0; i < N; i++) {
			double r = hypot((i - cx) / ax, (j - cy) / ay);
			double g;
			if (r < 1) {
				g = 10 + 30 * r * r +
				    0.8 * r * fbm(i, j, 24, 31);
			} else {
				double t = smooth((r - 1) / 0.3);
				g = 40 + 3 * t + (0.3 + 1.5 * t) *
				    (1 + fbm(i, j, 40, 37));
			}
			double di = hypot(i - ix, j - iy);
			double isl = 38 - 0.05 * di * di;
			if (isl > g)
				g = isl;
			z[i + j * N] = g;
		}
	printf("lake: a closed basin with an island\n"
	       "  basin: ellipse centre (128, 128), semi-axes 100 m (x) and "
	       "84 m (y); bottom 10 m at the centre, bowl z = 10 + 30 r^2 "
	       "(r = elliptic radius 0..1); bowl edge 40 m (r = 1); around it "
	       "a plateau of 40..46 m, over which the basin as a whole spills "
	       "at 44.0 m (see the depression report)\n"
	       "  island: peak 38 m at (154, 112); the 30 m contour is a circle"
	       " of radius ~12.6 m around it; at r = 0.26 the bowl is 12 m\n"
	       "  suggested lake level: 30 m (shoreline where r = 0.82: "
	       "about x 46..210, y 59..197), island top 8 m above it\n");
}

/* ---- open world --------------------------------------------------------- */

/* World: an S x S valley at 1 m per pixel (S = 4096 by default), for the
 * open-world sample (samples/world). Lengths scale with S, widths and
 * heights do not. A main river enters at the north edge and meanders to the
 * open south edge; three tributaries join it from the sides; two lakes sit
 * on its course (bowls whose outlet sill is the river bed); the bed drops
 * 6 m in one pixel row at y = 0.62 S (the waterfall); a bridge deck crosses
 * it at y = 0.88 S. Every course is stamped into a distance field (nearest
 * sample within its valley's reach), so generation costs O(samples * reach^2)
 * rather than O(pixels * samples). */
#define W_FALL 0.62
#define W_BRIDGE 0.88
#define W_DROP 6.0

struct wfeat {
	double S;
	double lake_y[2], lake_r;
};

static double world_main_x(const struct wfeat *f, double y)
{
	const double pi = 3.14159265358979323846;
	double S = f->S;
	return 0.5 * S + 0.10 * S * sin(2 * pi * y / (0.55 * S)) +
	       0.03 * S * sin(2 * pi * y / (0.17 * S) + 1.0);
}

/* Bed of the main river at row y before the lakes' sills: 60 m at the
 * north edge, about 0.01 slope, the fall drops W_DROP m. */
static double world_bed_raw(const struct wfeat *f, double y)
{
	double S = f->S, t = y / S;
	double z = 60.0 - 40.0 * t;
	if (t >= W_FALL)
		z -= W_DROP;
	return z;
}

/* With the lakes: through a lake the bed stays at the level of its outlet
 * (y = centre + radius), the spill level. */
static double world_bed(const struct wfeat *f, double y)
{
	for (int l = 0; l < 2; l++) {
		double y0 = f->lake_y[l] - f->lake_r, y1 = f->lake_y[l] + f->lake_r;
		if (y >= y0 && y <= y1)
			return world_bed_raw(f, y1);
	}
	return world_bed_raw(f, y);
}

/* Stamp the course into (dist, zb): for every pixel within 'reach' of a
 * sample, the nearest sample's distance and bed. */
static void course_stamp(const struct course *c, int S, double reach,
			 float *dist, float *zb)
{
	int R = (int)ceil(reach);
	for (int k = 0; k < c->n; k++) {
		int ci = (int)floor(c->x[k]), cj = (int)floor(c->y[k]);
		for (int j = cj - R; j <= cj + R; j++) {
			if (j < 0 || j >= S)
				continue;
			for (int i = ci - R; i <= ci + R; i++) {
				if (i < 0 || i >= S)
					continue;
				double dx = i + 0.5 - c->x[k], dy = j + 0.5 - c->y[k];
				double d = sqrt(dx * dx + dy * dy);
				size_t q = (size_t)i + (size_t)j * S;
				if (d < dist[q]) {
					dist[q] = (float)d;
					zb[q] = (float)c->zb[k];
				}
			}
		}
	}
}

/* min(z, valley of course c) with the valley of half-width w0 and walls W. */
static void course_carve(const struct course *c, int S, double w0, double Wv,
			 const double *base, double *z, float *dist, float *zb)
{
	size_t n = (size_t)S * S;
	for (size_t q = 0; q < n; q++)
		dist[q] = INFINITY;
	course_stamp(c, S, w0 + Wv, dist, zb);
	for (size_t q = 0; q < n; q++) {
		if (!(dist[q] < INFINITY))
			continue;
		double d = dist[q];
		double qq = (d < w0 ? d : w0) / w0;
		double fz = zb[q] + 0.8 * qq * qq;
		double vz = d <= w0 ? fz :
			    fz + (base[q] - fz) * smooth((d - w0) / Wv);
		if (vz < z[q])
			z[q] = vz;
	}
}

struct world_trib {
	double x0, y0, yj; /* start (edge side) and junction row */
};

/* Print the problems in d, release it; the exit code of an I/O error. */
static int print_fail(struct wb_diags *d)
{
	char buf[1024];
	for (int k = 0; k < d->n; k++) {
		wb_diag_format(&d->v[k], buf, sizeof(buf));
		fprintf(stderr, "mkterrain: %s\n", buf);
	}
	wb_diags_release(d);
	return 4;
}

/* Write DIR/scene.json for the world of size f->S (the committed
 * samples/world/scene.json is this file for S = 4096, with the heightmap
 * path pointing at the generated terrain). */
static int world_scene(const struct wfeat *f, const struct world_trib *tr,
		       const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/scene.json", dir);
	/* written whole or not at all: an earlier scene.json stays until
	 * the new one is complete */
	struct wb_diags d;
	struct wb_atomic a;
	wb_diags_init(&d);
	if (wb_atomic_open(&a, path, &d) != WB_OK)
		return print_fail(&d);
	FILE *o = a.f;
	double S = f->S;
	fprintf(o, "{\n  \"$schema\": \"../../schemas/scene.schema.json\",\n"
		"  \"name\": \"world\",\n  \"version\": 1,\n"
		"  \"origin\": [0, 0],\n  \"terrain\": {\n"
		"    \"heightmap\": \"terrain.png\",\n    \"format\": \"png\",\n"
		"    \"metres_per_pixel\": 1,\n    \"height_scale\": 100,\n"
		"    \"height_offset\": 0\n  },\n  \"boundaries\": {\n"
		"    \"west\": { \"type\": \"wall\", \"slip\": \"free-slip\" },\n"
		"    \"east\": { \"type\": \"wall\", \"slip\": \"free-slip\" },\n"
		"    \"north\": { \"type\": \"wall\", \"slip\": \"free-slip\" },\n"
		"    \"south\": \"open\"\n  },\n  \"initial_water\": \"dry\",\n"
		"  \"materials\": [\n"
		"    { \"id\": 1, \"name\": \"river\", \"kind\": \"river\" },\n"
		"    { \"id\": 2, \"name\": \"lake\", \"kind\": \"lake\" }\n  ],\n"
		"  \"sources\": [\n"
		"    { \"type\": \"river\", \"name\": \"main river\", \"width\": 14, "
		"\"discharge\": 20, \"material\": \"river\",\n      \"path\": [");
	for (int k = 0; k <= 32; k++) {
		double y = k == 0 ? 8 : k == 32 ? S - 1 : S * k / 32.0;
		fprintf(o, "%s[%.1f, %.1f]", k ? ", " : "", world_main_x(f, y), y);
		if (k % 4 == 3 && k < 32)
			fprintf(o, "\n               ");
	}
	fprintf(o, "] },\n");
	for (int t = 0; t < 3; t++) {
		double xj = world_main_x(f, tr[t].yj);
		fprintf(o, "    { \"type\": \"river\", \"name\": \"tributary %d\", "
			"\"width\": 8, \"discharge\": 4, \"material\": \"river\",\n"
			"      \"path\": [", t + 1);
		for (int k = 0; k <= 8; k++) {
			double s = (0.02 + 0.98 * k / 8.0);
			double x = tr[t].x0 + (xj - tr[t].x0) * s;
			double y = tr[t].y0 + (tr[t].yj - tr[t].y0) * s +
				   0.03 * S * sin(3.14159265358979 * s);
			fprintf(o, "%s[%.1f, %.1f]", k ? ", " : "", x, y);
		}
		fprintf(o, "] },\n");
	}
	for (int l = 0; l < 2; l++)
		fprintf(o, "    { \"type\": \"lake\", \"name\": \"lake %d\", "
			"\"seed\": [%.1f, %.1f], \"level\": %.2f, \"material\": "
			"\"lake\" }%s\n", l + 1, world_main_x(f, f->lake_y[l]),
			f->lake_y[l], world_bed(f, f->lake_y[l]), l ? "" : ",");
	double yb = W_BRIDGE * S, xb = world_main_x(f, yb), zb = world_bed(f, yb);
	fprintf(o, "  ],\n  \"blockers\": [\n"
		"    { \"name\": \"bridge deck\", \"polygon\": [[%.1f, %.1f], "
		"[%.1f, %.1f], [%.1f, %.1f], [%.1f, %.1f]],\n"
		"      \"bottom\": %.2f, \"top\": %.2f }\n  ],\n",
		xb - 40, yb - 3, xb + 40, yb - 3, xb + 40, yb + 3, xb - 40,
		yb + 3, zb + 4, zb + 6);
	fprintf(o, "  \"simulation\": {\n    \"solver\": \"swe\",\n"
		"    \"manning\": 0.035,\n    \"dry_depth\": 0.001,\n"
		"    \"max_steps\": 24000,\n    \"tolerance\": 0.03,\n"
		"    \"window\": 2000\n  },\n"
		"  \"output\": { \"lods\": 5, \"distance_max\": 64 }\n}\n");
	if (wb_atomic_commit(&a, &d) != WB_OK)
		return print_fail(&d);
	wb_diags_release(&d);
	return 0;
}

static int gen_world(double *z, int S, const char *dir)
{
	struct wfeat f;
	f.S = S;
	f.lake_y[0] = 0.30 * S;
	f.lake_y[1] = 0.78 * S;
	f.lake_r = 0.035 * S;
	const struct world_trib tr[3] = {
		{ 0.05 * S, 0.10 * S, 0.22 * S },
		{ 0.95 * S, 0.40 * S, 0.52 * S },
		{ 0.08 * S, 0.60 * S, 0.70 * S },
	};
	size_t n = (size_t)S * S;
	double *base = malloc(sizeof(double) * n);
	float *dist = malloc(sizeof(float) * n), *zb = malloc(sizeof(float) * n);
	if (!base || !dist || !zb) {
		free(base);
		free(dist);
		free(zb);
		fprintf(stderr, "mkterrain: out of memory\n");
		return 4;
	}
	/* plateau 30 m above the main bed's line, with hills */
	for (int j = 0; j < S; j++)
		for (int i = 0; i < S; i++) {
			size_t q = (size_t)i + (size_t)j * S;
			base[q] = world_bed_raw(&f, j) + 30.0 +
				  8.0 * fbm(i, j, 400, 21) + 2.0 * fbm(i, j, 60, 22);
			z[q] = base[q];
		}
	/* main river: from above the north edge to below the south edge */
	struct course c = { 0 };
	for (double y = -40; y <= S + 40; y += 0.5)
		course_add(&c, world_main_x(&f, y), y, world_bed(&f, y));
	course_carve(&c, S, 9, 70, base, z, dist, zb);
	course_free(&c);
	/* tributaries: a bend toward the junction, bed 12 m above the main
	   bed at the start, 0.3 m above it at the junction */
	for (int t = 0; t < 3; t++) {
		struct course ct = { 0 };
		double xj = world_main_x(&f, tr[t].yj), zj = world_bed(&f, tr[t].yj);
		double len = hypot(xj - tr[t].x0, tr[t].yj - tr[t].y0);
		int ns = (int)(2 * len);
		for (int k = 0; k <= ns; k++) {
			double s = (double)k / ns;
			double x = tr[t].x0 + (xj - tr[t].x0) * s;
			double y = tr[t].y0 + (tr[t].yj - tr[t].y0) * s +
				   0.03 * S * sin(3.14159265358979 * s);
			course_add(&ct, x, y, zj + 0.3 + 11.7 * (1 - s) * (1 - s));
		}
		course_carve(&ct, S, 5, 50, base, z, dist, zb);
		course_free(&ct);
	}
	/* lakes: bowls 5 m below the sill, walls to the valley */
	for (int l = 0; l < 2; l++) {
		double ly = f.lake_y[l], lx = world_main_x(&f, ly);
		double R = f.lake_r, sill = world_bed(&f, ly), bot = sill - 5.0;
		int j0 = (int)(ly - 2 * R), j1 = (int)(ly + 2 * R);
		int i0 = (int)(lx - 2 * R), i1 = (int)(lx + 2 * R);
		for (int j = j0 < 0 ? 0 : j0; j <= j1 && j < S; j++)
			for (int i = i0 < 0 ? 0 : i0; i <= i1 && i < S; i++) {
				double r = hypot(i + 0.5 - lx, j + 0.5 - ly);
				double lz = r < R ? bot + 5.5 * (r / R) * (r / R) :
					    sill + 0.5 + 20.0 * smooth((r - R) / R);
				size_t q = (size_t)i + (size_t)j * S;
				if (lz < z[q])
					z[q] = lz;
			}
	}
	free(base);
	free(dist);
	free(zb);
	/* water estimate: cells below the lakes' levels in their basins,
	   and the channels (half-widths 9 and 5 m) */
	double lake_cells = 0;
	for (int l = 0; l < 2; l++) {
		double ly = f.lake_y[l], lx = world_main_x(&f, ly);
		double lev = world_bed(&f, ly) + 0.2;
		for (int j = (int)(ly - f.lake_r); j <= (int)(ly + f.lake_r); j++)
			for (int i = (int)(lx - f.lake_r); i <= (int)(lx + f.lake_r); i++)
				if (i >= 0 && j >= 0 && i < S && j < S &&
				    z[(size_t)i + (size_t)j * S] < lev)
					lake_cells++;
	}
	double chan = 18.0 * S * 1.1;
	for (int t = 0; t < 3; t++)
		chan += 10.0 * hypot(world_main_x(&f, tr[t].yj) - tr[t].x0,
				     tr[t].yj - tr[t].y0);
	double yb = W_BRIDGE * S, xb = world_main_x(&f, yb);
	double yf = W_FALL * S, xf = world_main_x(&f, yf);
	printf("world: %d x %d valley, 1 m per pixel\n", S, S);
	printf("  main river: north edge (%.0f, 0) to south edge (%.0f, %d), "
	       "bed %.1f -> %.1f m, half-width 9 m\n", world_main_x(&f, 0),
	       world_main_x(&f, S), S, world_bed(&f, 0), world_bed(&f, S));
	for (int t = 0; t < 3; t++)
		printf("  tributary %d: from (%.0f, %.0f) to the junction "
		       "(%.0f, %.0f)\n", t + 1, tr[t].x0, tr[t].y0,
		       world_main_x(&f, tr[t].yj), tr[t].yj);
	for (int l = 0; l < 2; l++)
		printf("  lake %d: centre (%.0f, %.0f), radius %.0f m, level "
		       "(sill) %.2f m\n", l + 1, world_main_x(&f, f.lake_y[l]),
		       f.lake_y[l], f.lake_r, world_bed(&f, f.lake_y[l]));
	printf("  waterfall: bed drops %.0f m at (%.0f, %.0f)\n", W_DROP, xf, yf);
	printf("  bridge: deck across (%.0f, %.0f), bed %.1f m\n", xb, yb,
	       world_bed(&f, yb));
	printf("  water estimate: %.2f %% of the map\n",
	       100.0 * (lake_cells + chan) / ((double)S * S));
	return dir ? world_scene(&f, tr, dir) : 0;
}

/* ---- PNG output -------------------------------------------------------- */

static int write_png16(const char *path, const double *z, int n)
{
	struct wb_diags d;
	wb_diags_init(&d);
	struct wb_atomic a;
	unsigned char *img = malloc((size_t)n * n * 2);
	png_bytep *rows = malloc(sizeof(png_bytep) * (size_t)n);
	if (!img || !rows) {
		fprintf(stderr, "mkterrain: out of memory\n");
		free(img);
		free(rows);
		return 4;
	}
	for (size_t k = 0; k < (size_t)n * n; k++) {
		double v = z[k];
		v = v < 0 ? 0 : v > ZMAX ? ZMAX : v;
		long q = lround(v / ZMAX * 65535.0);
		img[2 * k] = (unsigned char)(q >> 8);
		img[2 * k + 1] = (unsigned char)q;
	}
	for (int j = 0; j < n; j++)
		rows[j] = img + (size_t)j * n * 2;
	if (wb_atomic_open(&a, path, &d) != WB_OK) {
		free(img);
		free(rows);
		return print_fail(&d);
	}
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
						  NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info || setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		wb_atomic_abort(&a);
		free(img);
		free(rows);
		fprintf(stderr, "mkterrain: %s: cannot write PNG\n", path);
		return 4;
	}
	png_init_io(png, a.f);
	png_set_IHDR(png, info, (png_uint_32)n, (png_uint_32)n, 16, PNG_COLOR_TYPE_GRAY,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	png_set_compression_level(png, n > N ? 3 : 9);
	png_set_rows(png, info, rows);
	png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
	png_destroy_write_struct(&png, &info);
	free(img);
	free(rows);
	if (wb_atomic_commit(&a, &d) != WB_OK)
		return print_fail(&d);
	wb_diags_release(&d);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "world") == 0) {
		/* mkterrain world [SIZE] [DIR] */
		int S = 4096;
		const char *dir = argc > 3 ? argv[3] : "build/world";
		if (argc > 4) {
			fprintf(stderr, "usage: mkterrain world [SIZE 256..32768] "
				"[DIR]\n");
			return 1;
		}
		long v = S;
		if (argc > 2 && wb_parse_long(argv[2], 256, 32768, &v)) {
			char e[128];
			wb_str_escape(e, sizeof(e), argv[2]);
			fprintf(stderr, "mkterrain: world SIZE expects a number from 256 to 32768, found '%s'\n"
				"usage: mkterrain world [SIZE 256..32768] [DIR]\n", e);
			return 1;
		}
		S = (int)v;
		if (!*dir) {
			fprintf(stderr, "mkterrain: world DIR is empty\n"
				"usage: mkterrain world [SIZE 256..32768] [DIR]\n");
			return 1;
		}
		double *zw = malloc(sizeof(double) * (size_t)S * S);
		if (!zw) {
			fprintf(stderr, "mkterrain: out of memory\n");
			return 4;
		}
		char png[4096];
		snprintf(png, sizeof(png), "%s/terrain.png", dir);
		struct wb_diags d;
		wb_diags_init(&d);
		if (wb_mkdirs(dir, &d) != WB_OK) {
			free(zw);
			return print_fail(&d);
		}
		wb_diags_release(&d);
		int rc = gen_world(zw, S, dir);
		if (rc == 0)
			rc = write_png16(png, zw, S);
		free(zw);
		if (rc == 0)
			printf("  wrote %s and %s/scene.json\n", png, dir);
		return rc;
	}
	if (argc != 3 || !*argv[2]) {
		if (argc == 3)
			fprintf(stderr, "mkterrain: OUT.png is empty\n");
		fprintf(stderr, "usage: mkterrain river|coast|lake OUT.png\n"
			"       mkterrain world [SIZE] [DIR]\n");
		return 1;
	}
	double *z = malloc(sizeof(double) * N * N);
	if (!z) {
		fprintf(stderr, "mkterrain: out of memory\n");
		return 4;
	}
	if (strcmp(argv[1], "river") == 0) {
		gen_river(z);
	} else if (strcmp(argv[1], "coast") == 0) {
		gen_coast(z);
	} else if (strcmp(argv[1], "lake") == 0) {
		gen_lake(z);
	} else {
		fprintf(stderr, "mkterrain: unknown terrain '%s' (river, coast "
			"or lake)\n", argv[1]);
		free(z);
		return 1;
	}
	double lo = 1e9, hi = -1e9;
	for (int k = 0; k < N * N; k++) {
		lo = z[k] < lo ? z[k] : lo;
		hi = z[k] > hi ? z[k] : hi;
	}
	printf("  size %dx%d pixels, 1 m per pixel; heights %.1f .. %.1f m "
	       "(height_scale 100, offset 0)\n", N, N, lo, hi);
	report_depressions(z);
	int rc = write_png16(argv[2], z, N);
	free(z);
	return rc;
}
