/*
 * preview.c - PNG previews of the maps and per-page PNGs (preview.h says
 * what each picture shows and how the page PNGs encode values).
 *
 * PNGs are written with libpng (16-bit grey and RGB are needed for the
 * page dumps, which stb_image_write cannot do) through wb_atomic_open, so a
 * reader never sees half a picture. Colours are computed in double from the
 * map values alone: equal maps give equal bytes.
 */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preview.h"
#include "util.h"

/* ---- PNG --------------------------------------------------------------- */

static void png_err(png_structp png, png_const_charp msg)
{
	char *buf = png_get_error_ptr(png);
	snprintf(buf, 256, "%s", msg);
	png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

struct png_job {
	FILE *f;
	int w, h, channels, bits;
	png_bytep *rows;
	png_text tx[8];
	int ntx;
};

/* Everything after setjmp: reads only *j, so nothing it needs lives in a
 * local that longjmp could clobber. 0, or -1 after a libpng error. */
static int png_run(png_structp png, png_infop info, const struct png_job *j)
{
	static const int types[5] = { 0, PNG_COLOR_TYPE_GRAY,
				      PNG_COLOR_TYPE_GRAY_ALPHA,
				      PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGBA };
	if (setjmp(png_jmpbuf(png)))
		return -1;
	png_init_io(png, j->f);
	png_set_IHDR(png, info, (png_uint_32)j->w, (png_uint_32)j->h, j->bits,
		     types[j->channels], PNG_INTERLACE_NONE,
		     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	if (j->ntx)
		png_set_text(png, info, j->tx, j->ntx);
	png_write_info(png, info);
	if (j->bits == 16) {
		const uint16_t one = 1;
		if (*(const uint8_t *)&one == 1)
			png_set_swap(png); /* PNG is big-endian */
	}
	png_write_image(png, j->rows);
	png_write_end(png, info);
	return 0;
}

/* Encode into an open stream; 0 or -1 with err filled. */
static int png_encode(FILE *f, int w, int h, int channels, int bits,
		      const void *pixels, const char *const *text,
		      png_bytep *rows, char *err)
{
	struct png_job j;
	memset(&j, 0, sizeof j);
	j.f = f;
	j.w = w;
	j.h = h;
	j.channels = channels;
	j.bits = bits;
	j.rows = rows;
	for (; text && j.ntx < 8 && text[2 * j.ntx]; j.ntx++) {
		j.tx[j.ntx].compression = PNG_TEXT_COMPRESSION_NONE;
		j.tx[j.ntx].key = (png_charp)text[2 * j.ntx];
		j.tx[j.ntx].text = (png_charp)text[2 * j.ntx + 1];
	}
	size_t stride = (size_t)w * channels * (bits / 8);
	for (int y = 0; y < h; y++)
		rows[y] = (png_bytep)pixels + (size_t)y * stride;
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, err,
						  png_err, png_warn);
	if (!png) {
		snprintf(err, 256, "out of memory");
		return -1;
	}
	png_infop info = png_create_info_struct(png);
	int rc = -1;
	if (!info)
		snprintf(err, 256, "out of memory");
	else
		rc = png_run(png, info, &j);
	png_destroy_write_struct(&png, info ? &info : NULL);
	return rc;
}

enum wb_status preview_png_write(const char *path, int w, int h, int channels,
				 int bits, const void *pixels,
				 const char *const *text, struct wb_diags *d)
{
	if (w <= 0 || h <= 0 || channels < 1 || channels > 4 ||
	    (bits != 8 && bits != 16))
		return wb_fail(d, WB_EINPUT, path, "png: bad image shape");
	png_bytep *rows = malloc((size_t)h * sizeof *rows);
	if (!rows)
		return wb_fail(d, WB_EIO, path, "out of memory");
	struct wb_atomic a;
	enum wb_status s = wb_atomic_open(&a, path, d);
	if (s != WB_OK) {
		free(rows);
		return s;
	}
	char err[256] = "";
	errno = 0; /* libpng's "Write Error" does not say why; errno does */
	if (png_encode(a.f, w, h, channels, bits, pixels, text, rows, err)) {
		int e = errno;
		wb_atomic_abort(&a);
		free(rows);
		return wb_fail(d, WB_EIO, path, "cannot write PNG: %s%s%s", err,
			       e ? ": " : "", e ? strerror(e) : "");
	}
	free(rows);
	return wb_atomic_commit(&a, d);
}

/* ---- colours ----------------------------------------------------------- */

static const uint8_t land_rgb[3] = { 46, 42, 38 };

static void put(uint8_t *p, double r, double g, double b)
{
	double c[3] = { r, g, b };
	for (int t = 0; t < 3; t++) {
		double v = c[t] < 0 ? 0 : c[t] > 1 ? 1 : c[t];
		p[t] = (uint8_t)lround(v * 255.0);
	}
}

/* hue in [0, 1), s, v in [0, 1] -> rgb */
static void hsv(double hue, double s, double v, double *r, double *g, double *b)
{
	double h6 = (hue - floor(hue)) * 6.0;
	int i = (int)h6 % 6;
	double f = h6 - floor(h6);
	double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
	switch (i) {
	case 0: *r = v; *g = t; *b = p; break;
	case 1: *r = q; *g = v; *b = p; break;
	case 2: *r = p; *g = v; *b = t; break;
	case 3: *r = p; *g = q; *b = v; break;
	case 4: *r = t; *g = p; *b = v; break;
	default: *r = v; *g = p; *b = q; break;
	}
}

static int wet_at(const struct wb_maps *m, size_t k)
{
	return m->height[k] != WB_DRY_HEIGHT;
}

/* Draw a 1-pixel line (integer DDA) in white with a dark outline. */
static void line(uint8_t *img, int w, int h, double x0, double y0, double x1,
		 double y1)
{
	double dx = x1 - x0, dy = y1 - y0;
	int n = (int)ceil(fmax(fabs(dx), fabs(dy))) + 1;
	for (int t = 0; t <= n; t++) {
		int x = (int)lround(x0 + dx * t / n);
		int y = (int)lround(y0 + dy * t / n);
		if (x < 0 || y < 0 || x >= w || y >= h)
			continue;
		uint8_t *p = img + 3 * ((size_t)y * w + x);
		p[0] = p[1] = p[2] = 255;
	}
}

static void arrow(uint8_t *img, int w, int h, double cx, double cy, double ux,
		  double uy, double len)
{
	double s = sqrt(ux * ux + uy * uy);
	if (!(s > 0) || len < 1)
		return;
	ux /= s;
	uy /= s;
	double x0 = cx - ux * len / 2, y0 = cy - uy * len / 2;
	double x1 = cx + ux * len / 2, y1 = cy + uy * len / 2;
	line(img, w, h, x0, y0, x1, y1);
	double hl = fmax(2.0, len * 0.35);
	/* head: two strokes at +-150 degrees from the direction */
	double c = cos(2.618), sn = sin(2.618);
	line(img, w, h, x1, y1, x1 + hl * (ux * c - uy * sn),
	     y1 + hl * (ux * sn + uy * c));
	line(img, w, h, x1, y1, x1 + hl * (ux * c + uy * sn),
	     y1 + hl * (-ux * sn + uy * c));
}

/* ---- previews ---------------------------------------------------------- */

static enum wb_status write_rgb(const char *dir, const char *name, int w,
				int h, const uint8_t *img, struct wb_diags *d)
{
	char *p = wb_path_join(dir, name);
	if (!p)
		return wb_fail(d, WB_EIO, dir, "out of memory");
	enum wb_status s = preview_png_write(p, w, h, 3, 8, img, NULL, d);
	free(p);
	return s;
}

static void draw_height(const struct wb_maps *m, uint8_t *img)
{
	int nx = m->nx, ny = m->ny;
	double lo = INFINITY, hi = -INFINITY;
	for (size_t k = 0; k < (size_t)nx * ny; k++)
		if (wet_at(m, k)) {
			lo = fmin(lo, m->height[k]);
			hi = fmax(hi, m->height[k]);
		}
	double range = hi > lo ? hi - lo : 1.0;
	/* light from the north-west, 45 degrees up */
	const double L[3] = { -0.5, -0.5, 0.70710678 };
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)j * nx + i;
			uint8_t *p = img + 3 * k;
			if (!wet_at(m, k)) {
				memcpy(p, land_rgb, 3);
				continue;
			}
			double hc = m->height[k];
			size_t kw = i > 0 ? k - 1 : k, ke = i + 1 < nx ? k + 1 : k;
			size_t kn = j > 0 ? k - nx : k, ks = j + 1 < ny ? k + nx : k;
			double hw = wet_at(m, kw) ? m->height[kw] : hc;
			double he = wet_at(m, ke) ? m->height[ke] : hc;
			double hn = wet_at(m, kn) ? m->height[kn] : hc;
			double hs = wet_at(m, ks) ? m->height[ks] : hc;
			/* slopes exaggerated 4x so gentle rivers show relief */
			double gx = 4.0 * (he - hw) / (2 * m->dx);
			double gy = 4.0 * (hs - hn) / (2 * m->dx);
			double nl = sqrt(gx * gx + gy * gy + 1);
			double lam = (-gx * L[0] - gy * L[1] + L[2]) / nl;
			double shade = 0.45 + 0.55 * fmax(0.0, lam) / L[2];
			double t = (hc - lo) / range;
			put(p, (0.08 + 0.40 * t) * shade, (0.22 + 0.60 * t) * shade,
			    (0.50 + 0.45 * t) * shade);
		}
}

static void draw_flow(const struct wb_maps *m, uint8_t *img)
{
	int nx = m->nx, ny = m->ny;
	double smax = 0;
	for (size_t k = 0; k < (size_t)nx * ny; k++)
		if (wet_at(m, k))
			smax = fmax(smax, hypot(m->u[k], m->v[k]));
	if (!(smax > 0))
		smax = 1;
	for (size_t k = 0; k < (size_t)nx * ny; k++) {
		uint8_t *p = img + 3 * k;
		if (!wet_at(m, k)) {
			memcpy(p, land_rgb, 3);
			continue;
		}
		double s = hypot(m->u[k], m->v[k]) / smax, r, g, b;
		double hue = atan2(m->v[k], m->u[k]) / 6.283185307179586;
		/* still water grey, fast water saturated and bright */
		hsv(hue, 0.9 * sqrt(s), 0.3 + 0.7 * sqrt(s), &r, &g, &b);
		put(p, r, g, b);
	}
}

/* Arrows on the upscaled picture big (sc output pixels per map pixel): a
 * lattice of about 48 arrows along the longer side, at least 12 output
 * pixels apart, length proportional to speed (0.9 lattice step at the
 * fastest). */
static void draw_arrows(const struct wb_maps *m, uint8_t *big, int sc)
{
	int nx = m->nx, ny = m->ny, W = nx * sc, H = ny * sc;
	double smax = 0;
	for (size_t k = 0; k < (size_t)nx * ny; k++)
		if (wet_at(m, k))
			smax = fmax(smax, hypot(m->u[k], m->v[k]));
	if (!(smax > 0))
		return;
	int step = (W > H ? W : H) / 48;
	step = step < 12 ? 12 : step;
	for (int y = step / 2; y < H; y += step)
		for (int x = step / 2; x < W; x += step) {
			size_t k = (size_t)(y / sc) * nx + x / sc;
			if (!wet_at(m, k))
				continue;
			double s = hypot(m->u[k], m->v[k]) / smax;
			arrow(big, W, H, x, y, m->u[k], m->v[k], 0.9 * step * s);
		}
}

static void draw_material(const struct wb_maps *m, uint8_t *img)
{
	for (size_t k = 0; k < (size_t)m->nx * m->ny; k++) {
		uint8_t *p = img + 3 * k;
		if (!wet_at(m, k)) {
			memcpy(p, land_rgb, 3);
			continue;
		}
		int id = m->material[k];
		if (!id) {
			put(p, 0.8, 0.8, 0.8);
			continue;
		}
		double r, g, b;
		/* golden-ratio hues: neighbouring ids get distant colours */
		hsv(0.58 + id * 0.618033988749895, 0.65, 0.95, &r, &g, &b);
		put(p, r, g, b);
	}
}

static void draw_distance(const struct wb_maps *m, double dmax, uint8_t *img)
{
	int nx = m->nx, ny = m->ny;
	double step = dmax / 4;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			size_t k = (size_t)j * nx + i;
			double dd = m->distance[k], t = fmin(1.0, fabs(dd) / dmax);
			uint8_t *p = img + 3 * k;
			if (dd >= 0) /* white -> deep blue */
				put(p, 1 - 0.92 * t, 1 - 0.70 * t, 1 - 0.35 * t);
			else /* white -> brown */
				put(p, 1 - 0.45 * t, 1 - 0.65 * t, 1 - 0.85 * t);
			double c = floor(dd / step);
			int edge = (i + 1 < nx && floor(m->distance[k + 1] / step) != c) ||
				   (j + 1 < ny && floor(m->distance[k + nx] / step) != c);
			if (edge && fabs(dd) < dmax) {
				p[0] = (uint8_t)(p[0] * 0.6);
				p[1] = (uint8_t)(p[1] * 0.6);
				p[2] = (uint8_t)(p[2] * 0.6);
			}
		}
}

static void draw_foam(const struct wb_maps *m, uint8_t *img)
{
	for (size_t k = 0; k < (size_t)m->nx * m->ny; k++) {
		uint8_t *p = img + 3 * k;
		if (!wet_at(m, k)) {
			memcpy(p, land_rgb, 3);
			continue;
		}
		double f = m->foam[k];
		put(p, 0.10 + 0.9 * f, 0.20 + 0.8 * f, 0.35 + 0.65 * f);
	}
}

/* Nearest-neighbour upscale of an RGB picture by sc. */
static void upscale(const uint8_t *img, int nx, int ny, int sc, uint8_t *big)
{
	size_t W = (size_t)nx * sc;
	for (int y = 0; y < ny * sc; y++)
		for (int x = 0; x < nx * sc; x++)
			memcpy(big + 3 * (y * W + x),
			       img + 3 * ((size_t)(y / sc) * nx + x / sc), 3);
}

enum wb_status preview_write(const struct wb_maps *m, double distance_max,
			     const char *dir, struct wb_diags *d)
{
	enum wb_status s = wb_mkdirs(dir, d);
	if (s != WB_OK)
		return s;
	/* small maps are enlarged (whole pixels) to about 1024 a side so
	 * that arrows and contours stay readable */
	int side = m->nx > m->ny ? m->nx : m->ny;
	int sc = 1024 / side;
	sc = sc < 1 ? 1 : sc > 8 ? 8 : sc;
	int W = m->nx * sc, H = m->ny * sc;
	uint8_t *img = malloc((size_t)m->nx * m->ny * 3);
	uint8_t *big = sc > 1 ? malloc((size_t)W * H * 3) : img;
	if (!img || !big) {
		free(img);
		if (sc > 1)
			free(big);
		return wb_fail(d, WB_EIO, dir, "preview: out of memory");
	}
	for (int pic = 0; s == WB_OK && pic < 5; pic++) {
		const char *name = NULL;
		switch (pic) {
		case 0: draw_height(m, img); name = "height.png"; break;
		case 1: draw_flow(m, img); name = "flow.png"; break;
		case 2: draw_material(m, img); name = "material.png"; break;
		case 3:
			draw_distance(m, distance_max > 0 ? distance_max : 1, img);
			name = "distance.png";
			break;
		default:
			if (!m->foam)
				continue;
			draw_foam(m, img);
			name = "foam.png";
			break;
		}
		if (sc > 1)
			upscale(img, m->nx, m->ny, sc, big);
		if (pic == 1)
			draw_arrows(m, big, sc);
		s = write_rgb(dir, name, W, H, big, d);
	}
	free(img);
	if (sc > 1)
		free(big);
	return s;
}

/* ---- per-page PNGs ----------------------------------------------------- */

static enum wb_status page_png(const char *dir, int x, int y, const char *layer,
			       int channels, int bits, const void *px,
			       const char *const *text, struct wb_diags *d)
{
	char name[96];
	snprintf(name, sizeof name, "%d_%d_%s.png", x, y, layer);
	char *p = wb_path_join(dir, name);
	if (!p)
		return wb_fail(d, WB_EIO, dir, "out of memory");
	enum wb_status s = preview_png_write(p, WB_PAGE_SIZE, WB_PAGE_SIZE,
					     channels, bits, px, text, d);
	free(p);
	return s;
}

static enum wb_status page_pngs(const struct wb_page *pg, int x, int y,
				double dmax, const char *dir, uint16_t *w16,
				uint8_t *w8, struct wb_diags *d)
{
	const int n = WB_PAGE_PIXELS;
	char a[64], b[64];
	enum wb_status s = WB_OK;
	if (pg->height) {
		double lo = INFINITY, hi = -INFINITY;
		for (int k = 0; k < n; k++)
			if (pg->height[k] != WB_DRY_HEIGHT) {
				lo = fmin(lo, pg->height[k]);
				hi = fmax(hi, pg->height[k]);
			}
		if (!(lo <= hi))
			lo = hi = 0;
		double sc = hi > lo ? (hi - lo) / 65534.0 : 1e-6;
		for (int k = 0; k < n; k++)
			w16[k] = pg->height[k] == WB_DRY_HEIGHT
				? 0 : (uint16_t)(1 + lround((pg->height[k] - lo) / sc));
		snprintf(a, sizeof a, "%.9g", lo);
		snprintf(b, sizeof b, "%.9g", sc);
		const char *tx[] = { "wbake.layer", "height m = offset + (v-1)*scale, 0 dry",
				     "wbake.offset", a, "wbake.scale", b, NULL };
		s = page_png(dir, x, y, "height", 1, 16, w16, tx, d);
	}
	if (s == WB_OK && pg->flow) {
		double sm = 1e-6;
		for (int k = 0; k < 2 * n; k++)
			sm = fmax(sm, fabs(pg->flow[k]));
		for (int k = 0; k < n; k++) {
			w16[3 * k] = (uint16_t)(32768 + lround(pg->flow[2 * k] / sm * 32767));
			w16[3 * k + 1] = (uint16_t)(32768 + lround(pg->flow[2 * k + 1] / sm * 32767));
			w16[3 * k + 2] = pg->height && pg->height[k] == WB_DRY_HEIGHT ? 0 : 65535;
		}
		snprintf(b, sizeof b, "%.9g", sm);
		const char *tx[] = { "wbake.layer", "flow m/s = (v-32768)/32767*scale",
				     "wbake.scale", b, NULL };
		s = page_png(dir, x, y, "flow", 3, 16, w16, tx, d);
	}
	if (s == WB_OK && pg->material) {
		const char *tx[] = { "wbake.layer", "material id, 0 dry", NULL };
		s = page_png(dir, x, y, "material", 1, 8, pg->material, tx, d);
	}
	if (s == WB_OK && pg->distance) {
		for (int k = 0; k < n; k++) {
			double t = (pg->distance[k] + dmax) / (2 * dmax);
			t = t < 0 ? 0 : t > 1 ? 1 : t;
			w16[k] = (uint16_t)lround(t * 65535);
		}
		snprintf(b, sizeof b, "%.9g", dmax);
		const char *tx[] = { "wbake.layer", "distance m = -dmax + v*2*dmax/65535",
				     "wbake.dmax", b, NULL };
		s = page_png(dir, x, y, "distance", 1, 16, w16, tx, d);
	}
	if (s == WB_OK && pg->foam) {
		for (int k = 0; k < n; k++)
			w8[k] = (uint8_t)lround(fmin(1, fmax(0, pg->foam[k])) * 255);
		const char *tx[] = { "wbake.layer", "foam = v/255", NULL };
		s = page_png(dir, x, y, "foam", 1, 8, w8, tx, d);
	}
	return s;
}

enum wb_status preview_pages(const struct wb_pageset *ps, const char *dir,
			     struct wb_diags *d)
{
	uint16_t *w16 = malloc((size_t)WB_PAGE_PIXELS * 3 * sizeof(uint16_t));
	uint8_t *w8 = malloc(WB_PAGE_PIXELS);
	enum wb_status s = WB_OK;
	if (!w16 || !w8)
		s = wb_fail(d, WB_EIO, dir, "pages: out of memory");
	for (int l = 0; s == WB_OK && l < ps->n_lods; l++) {
		const struct wb_lod_pages *lp = &ps->lods[l];
		char sub[32];
		snprintf(sub, sizeof sub, "lod%d", l);
		char *ld = wb_path_join(dir, sub);
		if (!ld) {
			s = wb_fail(d, WB_EIO, dir, "out of memory");
			break;
		}
		s = wb_mkdirs(ld, d);
		for (int k = 0; s == WB_OK && k < lp->px * lp->py; k++) {
			const struct wb_page *pg = &lp->pages[k];
			if (pg->state == WB_PAGE_DATA)
				s = page_pngs(pg, k % lp->px, k / lp->px,
					      ps->distance_max, ld, w16, w8, d);
		}
		free(ld);
	}
	free(w16);
	free(w8);
	return s;
}
