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

/* ---- text -------------------------------------------------------------- */

/* stb_easy_font (Debian libstb-dev) turns a string into axis-aligned quads:
 * no font file is needed at run time. Its tables are static but never
 * written (we do not call stb_easy_font_spacing). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

struct canvas {
	int w, h;
	uint8_t *px; /* RGB, rows top first */
};

static const uint8_t ink[3] = { 32, 32, 36 };
static const uint8_t paper[3] = { 250, 250, 247 };
static const uint8_t white[3] = { 255, 255, 255 };
static const uint8_t grey[3] = { 120, 120, 120 };

static void fill(struct canvas *c, int x0, int y0, int x1, int y1,
		 const uint8_t rgb[3])
{
	x0 = x0 < 0 ? 0 : x0;
	y0 = y0 < 0 ? 0 : y0;
	x1 = x1 > c->w ? c->w : x1;
	y1 = y1 > c->h ? c->h : y1;
	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++)
			memcpy(c->px + 3 * ((size_t)y * c->w + x), rgb, 3);
}

static void frame(struct canvas *c, int x0, int y0, int x1, int y1,
		  const uint8_t rgb[3])
{
	fill(c, x0, y0, x1, y0 + 1, rgb);
	fill(c, x0, y1 - 1, x1, y1, rgb);
	fill(c, x0, y0, x0 + 1, y1, rgb);
	fill(c, x1 - 1, y0, x1, y1, rgb);
}

/* Width in pixels of s drawn at scale sc. */
static int text_w(const char *s, int sc)
{
	return sc * stb_easy_font_width((char *)s);
}

/* Draw s (ASCII, at most 120 characters) with its top-left at (x, y), each
 * font unit sc pixels. */
static void text(struct canvas *c, int x, int y, int sc, const char *s,
		 const uint8_t rgb[3])
{
	char buf[32768], str[121];
	snprintf(str, sizeof str, "%s", s);
	int nq = stb_easy_font_print(0, 0, str, NULL, buf, sizeof buf);
	for (int q = 0; q < nq; q++) {
		const float *v0 = (const float *)(buf + 64 * q);
		const float *v2 = (const float *)(buf + 64 * q + 32);
		fill(c, x + sc * (int)lroundf(v0[0]), y + sc * (int)lroundf(v0[1]),
		     x + sc * (int)lroundf(v2[0]), y + sc * (int)lroundf(v2[1]), rgb);
	}
}

/* ---- colours ----------------------------------------------------------- */

struct stop {
	double t, r, g, b;
};

/* Piecewise-linear colour ramp, t clamped to [0, 1]. */
static void ramp(const struct stop *s, int n, double t, double out[3])
{
	t = t < 0 ? 0 : t > 1 ? 1 : t;
	int k = 0;
	while (k + 2 < n && t > s[k + 1].t)
		k++;
	double a = s[k + 1].t > s[k].t ? (t - s[k].t) / (s[k + 1].t - s[k].t) : 0;
	a = a < 0 ? 0 : a > 1 ? 1 : a;
	out[0] = s[k].r + a * (s[k + 1].r - s[k].r);
	out[1] = s[k].g + a * (s[k + 1].g - s[k].g);
	out[2] = s[k].b + a * (s[k + 1].b - s[k].b);
}

/* depth: pale cyan (shallow) to navy (deep) */
static const struct stop ramp_depth[] = {
	{ 0.00, 0.84, 0.95, 0.98 }, { 0.25, 0.50, 0.80, 0.92 },
	{ 0.55, 0.17, 0.55, 0.77 }, { 0.80, 0.03, 0.32, 0.61 },
	{ 1.00, 0.03, 0.19, 0.42 },
};
/* surface height: deep blue (low) to pale yellow (high) */
static const struct stop ramp_height[] = {
	{ 0.00, 0.15, 0.20, 0.58 }, { 0.30, 0.17, 0.50, 0.72 },
	{ 0.60, 0.25, 0.71, 0.77 }, { 0.85, 0.63, 0.85, 0.71 },
	{ 1.00, 1.00, 1.00, 0.80 },
};
/* speed: blue (still) through pale yellow to red (fast) */
static const struct stop ramp_speed[] = {
	{ 0.00, 0.19, 0.21, 0.58 }, { 0.25, 0.27, 0.46, 0.71 },
	{ 0.45, 0.45, 0.68, 0.82 }, { 0.65, 1.00, 0.88, 0.56 },
	{ 0.85, 0.96, 0.43, 0.26 }, { 1.00, 0.65, 0.00, 0.15 },
};
/* foam: dark water to white */
static const struct stop ramp_foam[] = {
	{ 0.00, 0.10, 0.22, 0.38 }, { 0.50, 0.45, 0.62, 0.75 },
	{ 1.00, 1.00, 1.00, 1.00 },
};
/* signed distance: brown (land, -dmax) - white (shore) - blue (+dmax) */
static const struct stop ramp_dist[] = {
	{ 0.00, 0.55, 0.32, 0.10 }, { 0.25, 0.80, 0.64, 0.42 },
	{ 0.50, 0.97, 0.97, 0.97 }, { 0.75, 0.50, 0.72, 0.88 },
	{ 1.00, 0.05, 0.25, 0.58 },
};

static void to8(const double c[3], uint8_t out[3])
{
	for (int t = 0; t < 3; t++) {
		double v = c[t] < 0 ? 0 : c[t] > 1 ? 1 : c[t];
		out[t] = (uint8_t)lround(v * 255.0);
	}
}

/* Material colour: by kind (ocean navy, lake blue, river cyan-blue), the
 * n-th material of a kind a step lighter; ids the scene does not name get
 * a neutral lilac. */
static void material_rgb(const struct preview_in *in, int id, uint8_t out[3])
{
	static const double base[3][3] = {
		{ 0.25, 0.66, 0.85 }, /* river */
		{ 0.16, 0.44, 0.74 }, /* lake */
		{ 0.08, 0.22, 0.55 }, /* ocean */
	};
	for (int k = 0; k < in->n_materials; k++) {
		const struct wb_material *mt = &in->materials[k];
		if (mt->id != id)
			continue;
		int kind = (int)mt->kind;
		kind = kind < 0 || kind > 2 ? 0 : kind;
		int rank = 0;
		for (int q = 0; q < k; q++)
			rank += (int)in->materials[q].kind == kind;
		double l = 0.22 * (rank % 4), c[3];
		for (int t = 0; t < 3; t++)
			c[t] = base[kind][t] + (1 - base[kind][t]) * l;
		to8(c, out);
		return;
	}
	double c[3] = { 0.62, 0.55, 0.80 };
	to8(c, out);
}

/* ---- numbers ----------------------------------------------------------- */

/* A round step (1, 2, 2.5 or 5 times a power of ten) near range / n. */
static double nice_step(double range, int n)
{
	if (!(range > 0) || !isfinite(range))
		return 1;
	double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 2.25 ? 2 : m < 3.5 ? 2.5 : m < 7.5 ? 5 : 10) * p;
}

/* Decimals that show multiples of step exactly (step from nice_step). */
static int decimals(double step)
{
	int k = 0;
	while (k < 6 && fabs(step * pow(10, k) - round(step * pow(10, k))) > 1e-6)
		k++;
	return k;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* ---- the display grid -------------------------------------------------- */

/*
 * Maps larger than PREVIEW_SIDE pixels a side are pooled by a whole factor
 * f: a display pixel is wet when any of its f x f map pixels is (so thin
 * rivers stay visible), water values are means over the wet ones, the
 * material is the most frequent wet one (lowest id on ties), the distance
 * the largest, the terrain the mean. Smaller maps are enlarged by a whole
 * factor sc (nearest for water, bilinear for the terrain, so the relief is
 * smooth while water pixels show the true resolution).
 */
#define PREVIEW_SIDE 1024

struct pv {
	const struct preview_in *in;
	int f, sc, nx, ny, W, H;
	double mpp; /* metres per output pixel */
	struct wb_maps m; /* display grid (aliases in->m when f == 1) */
	float *terrain;   /* display grid, NULL without terrain */
	float *tz;        /* output pixels */
	uint8_t *base;    /* output pixels: shaded relief, contours */
	double zlo, zhi, ci;
	int own;
};

static void scale_for(int nx, int ny, int *f, int *sc)
{
	int side = nx > ny ? nx : ny;
	*f = side > PREVIEW_SIDE ? (side + PREVIEW_SIDE - 1) / PREVIEW_SIDE : 1;
	*sc = side > PREVIEW_SIDE ? 1 : PREVIEW_SIDE / (side > 0 ? side : 1);
	*sc = *sc > 8 ? 8 : *sc < 1 ? 1 : *sc;
}

#define MARGIN 16
#define HEAD 52
#define FOOT 120
#define MIN_W 780

void preview_canvas_size(int nx, int ny, int *w, int *h)
{
	int f, sc;
	scale_for(nx, ny, &f, &sc);
	int W = (nx + f - 1) / f * sc, H = (ny + f - 1) / f * sc;
	*w = (W > MIN_W ? W : MIN_W) + 2 * MARGIN;
	*h = HEAD + H + FOOT;
}

static int pool(struct pv *p)
{
	const struct wb_maps *s = p->in->m;
	int f = p->f, nx = p->nx, ny = p->ny;
	size_t n = (size_t)nx * ny;
	struct wb_maps *m = &p->m;
	m->nx = nx;
	m->ny = ny;
	m->dx = s->dx * f;
	m->height = malloc(n * sizeof(float));
	m->u = malloc(n * sizeof(float));
	m->v = malloc(n * sizeof(float));
	m->depth = malloc(n * sizeof(float));
	m->distance = malloc(n * sizeof(float));
	m->material = malloc(n);
	m->foam = s->foam ? malloc(n * sizeof(float)) : NULL;
	p->own = 1;
	if (p->in->terrain)
		p->terrain = malloc(n * sizeof(float));
	if (!m->height || !m->u || !m->v || !m->depth || !m->distance ||
	    !m->material || (s->foam && !m->foam) ||
	    (p->in->terrain && !p->terrain))
		return -1;
	for (int b = 0; b < ny; b++)
		for (int a = 0; a < nx; a++) {
			double sh = 0, sd = 0, su = 0, sv = 0, sf = 0, st = 0;
			double dist = -INFINITY;
			int wet = 0, all = 0, cnt[256] = { 0 }, best = 0;
			for (int y = b * f; y < (b + 1) * f && y < s->ny; y++)
				for (int x = a * f; x < (a + 1) * f && x < s->nx; x++) {
					size_t k = (size_t)y * s->nx + x;
					all++;
					if (p->terrain)
						st += p->in->terrain[k];
					dist = fmax(dist, s->distance[k]);
					if (s->height[k] == WB_DRY_HEIGHT)
						continue;
					wet++;
					sh += s->height[k];
					sd += s->depth ? s->depth[k] : 0;
					su += s->u[k];
					sv += s->v[k];
					sf += s->foam ? s->foam[k] : 0;
					int id = s->material[k];
					cnt[id]++;
					if (cnt[id] > cnt[best] ||
					    (cnt[id] == cnt[best] && id < best))
						best = id;
				}
			size_t k = (size_t)b * nx + a;
			m->height[k] = wet ? (float)(sh / wet) : WB_DRY_HEIGHT;
			m->depth[k] = wet ? (float)(sd / wet) : 0.0f;
			m->u[k] = wet ? (float)(su / wet) : 0.0f;
			m->v[k] = wet ? (float)(sv / wet) : 0.0f;
			m->material[k] = (uint8_t)(wet ? best : 0);
			m->distance[k] = (float)dist;
			if (m->foam)
				m->foam[k] = wet ? (float)(sf / wet) : 0.0f;
			if (p->terrain)
				p->terrain[k] = (float)(st / (all ? all : 1));
		}
	return 0;
}

void preview_hillshade(const float *z, int nx, int ny, double dx,
		       float *shade)
{
	/* light from the north-west (azimuth 315), 45 degrees up; x east,
	   y south (rows down), z up */
	const double lz = sqrt(0.5), lxy = -0.5;
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			int iw = i > 0 ? i - 1 : i, ie = i + 1 < nx ? i + 1 : i;
			int jn = j > 0 ? j - 1 : j, js = j + 1 < ny ? j + 1 : j;
			double gx = ie > iw ? (z[(size_t)j * nx + ie] - z[(size_t)j * nx + iw]) /
				     ((ie - iw) * dx) : 0;
			double gy = js > jn ? (z[(size_t)js * nx + i] - z[(size_t)jn * nx + i]) /
				     ((js - jn) * dx) : 0;
			/* normal (-gx, -gy, 1) / |.|, light (lxy, lxy, lz) */
			double l = (-gx * lxy - gy * lxy + lz) / sqrt(gx * gx + gy * gy + 1);
			shade[(size_t)j * nx + i] = (float)(l > 0 ? l : 0);
		}
}

static void pv_free(struct pv *p)
{
	if (p->own) {
		maps_free(&p->m);
		free(p->terrain);
	}
	free(p->tz);
	free(p->base);
}

/* Terrain on the output pixels, its relief and contours into p->base. */
static int pv_base(struct pv *p)
{
	int W = p->W, H = p->H, sc = p->sc;
	size_t N = (size_t)W * H;
	p->base = malloc(N * 3);
	if (!p->base)
		return -1;
	if (!p->terrain) {
		for (size_t k = 0; k < N; k++)
			memset(p->base + 3 * k, 214, 3);
		return 0;
	}
	p->tz = malloc(N * sizeof(float));
	float *shade = malloc(N * sizeof(float));
	if (!p->tz || !shade) {
		free(shade);
		return -1;
	}
	for (int y = 0; y < H; y++) {
		double fy = (y + 0.5) / sc - 0.5;
		fy = fy < 0 ? 0 : fy > p->ny - 1 ? p->ny - 1 : fy;
		int j0 = (int)fy, j1 = j0 + 1 < p->ny ? j0 + 1 : j0;
		double ty = fy - j0;
		for (int x = 0; x < W; x++) {
			double fx = (x + 0.5) / sc - 0.5;
			fx = fx < 0 ? 0 : fx > p->nx - 1 ? p->nx - 1 : fx;
			int i0 = (int)fx, i1 = i0 + 1 < p->nx ? i0 + 1 : i0;
			double tx = fx - i0;
			const float *t = p->terrain;
			double a = t[(size_t)j0 * p->nx + i0] * (1 - tx) +
				   t[(size_t)j0 * p->nx + i1] * tx;
			double b = t[(size_t)j1 * p->nx + i0] * (1 - tx) +
				   t[(size_t)j1 * p->nx + i1] * tx;
			p->tz[(size_t)y * W + x] = (float)(a * (1 - ty) + b * ty);
		}
	}
	preview_hillshade(p->tz, W, H, p->mpp, shade);
	p->zlo = INFINITY;
	p->zhi = -INFINITY;
	for (size_t k = 0; k < N; k++) {
		p->zlo = fmin(p->zlo, p->tz[k]);
		p->zhi = fmax(p->zhi, p->tz[k]);
	}
	p->ci = nice_step(p->zhi - p->zlo, 12);
	const double flat = sqrt(0.5);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			size_t k = (size_t)y * W + x;
			double t = p->zhi > p->zlo ? (p->tz[k] - p->zlo) / (p->zhi - p->zlo) : 0;
			/* hypsometric tint: olive-beige low, pale stone high */
			double tint[3] = { 0.80 + 0.14 * t, 0.80 + 0.12 * t, 0.66 + 0.22 * t };
			/* flat ground 0.95, slopes facing away no darker than 0.45 */
			double lum = 0.45 + 0.5 * shade[k] / flat;
			lum = lum > 1.1 ? 1.1 : lum;
			double c[3] = { tint[0] * lum, tint[1] * lum, tint[2] * lum };
			double lv = floor(p->tz[k] / p->ci);
			int edge = (x + 1 < W && floor(p->tz[k + 1] / p->ci) != lv) ||
				   (y + 1 < H && floor(p->tz[k + W] / p->ci) != lv);
			if (edge) {
				/* every fifth contour darker (index contours) */
				double top = fmax(lv, fmax(x + 1 < W ? floor(p->tz[k + 1] / p->ci) : lv,
							  y + 1 < H ? floor(p->tz[k + W] / p->ci) : lv));
				double dk = fmod(top, 5.0) == 0 ? 0.55 : 0.75;
				c[0] *= dk;
				c[1] *= dk;
				c[2] *= dk;
			}
			to8(c, p->base + 3 * k);
		}
	free(shade);
	return 0;
}

static int pv_init(struct pv *p, const struct preview_in *in)
{
	memset(p, 0, sizeof *p);
	p->in = in;
	scale_for(in->m->nx, in->m->ny, &p->f, &p->sc);
	p->nx = (in->m->nx + p->f - 1) / p->f;
	p->ny = (in->m->ny + p->f - 1) / p->f;
	p->W = p->nx * p->sc;
	p->H = p->ny * p->sc;
	p->mpp = in->m->dx * p->f / p->sc;
	if (p->f > 1) {
		if (pool(p))
			return -1;
	} else {
		p->m = *in->m;
		p->terrain = (float *)in->terrain;
	}
	return pv_base(p);
}

/* ---- the pictures ------------------------------------------------------ */

static const char *const kind_name[PREVIEW_COUNT] = {
	"depth", "height", "flow", "material", "distance", "foam"
};
static const char *const kind_title[PREVIEW_COUNT] = {
	"water depth", "water surface height", "flow: speed and direction",
	"water material", "signed distance to the shore", "foam density"
};

const char *preview_name(enum preview_kind k)
{
	return k < PREVIEW_COUNT ? kind_name[k] : "";
}

const char *preview_title(enum preview_kind k)
{
	return k < PREVIEW_COUNT ? kind_title[k] : "";
}

int preview_available(const struct preview_in *in, enum preview_kind k)
{
	if (k == PREVIEW_DEPTH)
		return in->m->depth != NULL;
	if (k == PREVIEW_FOAM)
		return in->m->foam != NULL;
	return k < PREVIEW_COUNT;
}

static int is_wet(const struct wb_maps *m, size_t k)
{
	return m->height[k] != WB_DRY_HEIGHT;
}

/* The value a wet display pixel shows in a colour-bar picture. */
static double value_of(const struct wb_maps *m, enum preview_kind k, size_t q)
{
	switch (k) {
	case PREVIEW_DEPTH: return m->depth[q];
	case PREVIEW_HEIGHT: return m->height[q];
	case PREVIEW_FLOW: return hypot(m->u[q], m->v[q]);
	case PREVIEW_FOAM: return m->foam[q];
	default: return 0;
	}
}

/* Colour-bar range of a picture: [lo, hi] with tick spacing *step. Depth
 * and speed run from 0 to their 99th percentile (a few extreme pixels do
 * not wash the rest out), heights over their 1st..99th, foam 0..1. */
static void range_of(const struct pv *p, enum preview_kind k, double *lo,
		     double *hi, double *step)
{
	const struct wb_maps *m = &p->m;
	size_t n = (size_t)m->nx * m->ny, nw = 0;
	*lo = 0;
	*hi = 1;
	if (k == PREVIEW_DISTANCE) {
		double dm = p->in->distance_max > 0 ? p->in->distance_max : 1;
		*lo = -dm;
		*hi = dm;
		*step = dm / 2;
		return;
	}
	if (k == PREVIEW_FOAM) {
		*step = 0.25;
		return;
	}
	float *v = malloc((n ? n : 1) * sizeof(float));
	if (v)
		for (size_t q = 0; q < n; q++)
			if (is_wet(m, q))
				v[nw++] = (float)value_of(m, k, q);
	if (v && nw) {
		qsort(v, nw, sizeof(float), cmp_float);
		double a = v[(nw - 1) / 100], b = v[(nw - 1) - (nw - 1) / 100];
		if (k == PREVIEW_HEIGHT) {
			*step = nice_step(b - a > 0 ? b - a : 1, 4);
			*lo = floor(a / *step) * *step;
			*hi = ceil(b / *step) * *step;
			if (*hi <= *lo)
				*hi = *lo + *step;
		} else {
			*step = nice_step(b > 0 ? b : 1, 4);
			*hi = ceil(b / *step) * *step;
			if (*hi <= 0)
				*hi = *step;
		}
	} else {
		*step = 0.25;
	}
	free(v);
}

static void colour_of(const struct pv *p, enum preview_kind k, size_t q,
		      double lo, double hi, uint8_t out[3])
{
	const struct wb_maps *m = &p->m;
	double c[3], t = hi > lo ? (value_of(m, k, q) - lo) / (hi - lo) : 0;
	switch (k) {
	case PREVIEW_DEPTH: ramp(ramp_depth, 5, t, c); break;
	case PREVIEW_HEIGHT: ramp(ramp_height, 5, t, c); break;
	case PREVIEW_FLOW: ramp(ramp_speed, 6, t, c); break;
	case PREVIEW_FOAM: ramp(ramp_foam, 3, t, c); break;
	case PREVIEW_MATERIAL: material_rgb(p->in, m->material[q], out); return;
	default: ramp(ramp_dist, 5, (m->distance[q] - lo) / (hi - lo), c); break;
	}
	to8(c, out);
}

static void blend(uint8_t *dst, const uint8_t src[3], double a)
{
	for (int t = 0; t < 3; t++)
		dst[t] = (uint8_t)lround(a * src[t] + (1 - a) * dst[t]);
}

/* A thick line: squares of half-width r stamped along it. */
static void stroke(struct canvas *c, double x0, double y0, double x1,
		   double y1, int r, const uint8_t rgb[3])
{
	double dx = x1 - x0, dy = y1 - y0;
	int n = (int)ceil(fmax(fabs(dx), fabs(dy))) + 1;
	for (int t = 0; t <= n; t++) {
		int x = (int)lround(x0 + dx * t / n), y = (int)lround(y0 + dy * t / n);
		fill(c, x - r, y - r, x + r + 1, y + r + 1, rgb);
	}
}

/* An arrow centred on (cx, cy) along (ux, uy), len pixels long: a white
 * halo under a dark core, readable over every colour of the speed ramp. */
static void arrow(struct canvas *c, double cx, double cy, double ux, double uy,
		  double len)
{
	double s = hypot(ux, uy);
	if (!(s > 0) || len < 4)
		return;
	ux /= s;
	uy /= s;
	double x0 = cx - ux * len / 2, y0 = cy - uy * len / 2;
	double x1 = cx + ux * len / 2, y1 = cy + uy * len / 2;
	double hl = fmax(4.0, len * 0.4), ca = cos(2.6), sa = sin(2.6);
	double hx[2] = { x1 + hl * (ux * ca - uy * sa), x1 + hl * (ux * ca + uy * sa) };
	double hy[2] = { y1 + hl * (ux * sa + uy * ca), y1 + hl * (-ux * sa + uy * ca) };
	static const uint8_t core[3] = { 20, 20, 24 };
	for (int pass = 0; pass < 2; pass++) {
		int r = pass ? 0 : 1;
		const uint8_t *col = pass ? core : white;
		stroke(c, x0, y0, x1, y1, r, col);
		stroke(c, x1, y1, hx[0], hy[0], r, col);
		stroke(c, x1, y1, hx[1], hy[1], r, col);
	}
}

/* Arrow lattice step in output pixels: about 32 arrows along the longer
 * side, at least 20 pixels apart. */
static int arrow_step(const struct pv *p)
{
	int step = (p->W > p->H ? p->W : p->H) / 32;
	return step < 20 ? 20 : step;
}

/* The map area at (ox, oy). */
static void draw_map(const struct pv *p, enum preview_kind k, struct canvas *c,
		     int ox, int oy, double lo, double hi)
{
	const struct wb_maps *m = &p->m;
	int sc = p->sc;
	/* distance: contours every distance_max / 4 on the display grid */
	double dstep = (hi - lo) / 8;
	for (int y = 0; y < p->H; y++)
		for (int x = 0; x < p->W; x++) {
			size_t q = (size_t)(y / sc) * m->nx + x / sc;
			uint8_t *o = c->px + 3 * ((size_t)(y + oy) * c->w + x + ox);
			memcpy(o, p->base + 3 * ((size_t)y * p->W + x), 3);
			uint8_t col[3];
			if (k == PREVIEW_DISTANCE) {
				colour_of(p, k, q, lo, hi, col);
				blend(o, col, 0.72);
				int i = x / sc, j = y / sc;
				double lv = floor(m->distance[q] / dstep);
				int edge = (x % sc == sc - 1 && i + 1 < m->nx &&
					    floor(m->distance[q + 1] / dstep) != lv) ||
					   (y % sc == sc - 1 && j + 1 < m->ny &&
					    floor(m->distance[q + m->nx] / dstep) != lv);
				if (edge && fabs(m->distance[q]) < hi) {
					static const uint8_t dk[3] = { 60, 60, 60 };
					blend(o, dk, 0.6);
				}
				continue;
			}
			if (!is_wet(m, q))
				continue;
			colour_of(p, k, q, lo, hi, col);
			blend(o, col, 0.9);
		}
	if (k != PREVIEW_FLOW)
		return;
	/* arrows on a lattice of about 32 along the longer side; length 0.9
	   lattice step at the top of the colour bar */
	int step = arrow_step(p);
	for (int y = step / 2; y < p->H; y += step)
		for (int x = step / 2; x < p->W; x += step) {
			size_t q = (size_t)(y / sc) * m->nx + x / sc;
			if (!is_wet(m, q))
				continue;
			double s = hypot(m->u[q], m->v[q]) / hi;
			arrow(c, ox + x, oy + y, m->u[q], m->v[q],
			      0.9 * step * (s > 1 ? 1 : s));
		}
}

static void fmt_value(char *buf, size_t n, double v, int dec)
{
	snprintf(buf, n, "%.*f", dec, fabs(v) < 0.5 * pow(10, -dec) ? 0.0 : v);
}

/* Horizontal colour bar with ticks and labels; returns its right edge. */
static int colour_bar(const struct pv *p, enum preview_kind k, struct canvas *c,
		      int x0, int y0, double lo, double hi, double step,
		      const char *unit)
{
	const int bw = 360, bh = 18;
	const struct stop *st = k == PREVIEW_DEPTH ? ramp_depth :
				k == PREVIEW_HEIGHT ? ramp_height :
				k == PREVIEW_FLOW ? ramp_speed :
				k == PREVIEW_FOAM ? ramp_foam : ramp_dist;
	int ns = k == PREVIEW_FLOW ? 6 : k == PREVIEW_FOAM ? 3 : 5;
	for (int x = 0; x < bw; x++) {
		double col[3];
		uint8_t rgb[3];
		ramp(st, ns, (x + 0.5) / bw, col);
		to8(col, rgb);
		fill(c, x0 + x, y0, x0 + x + 1, y0 + bh, rgb);
	}
	frame(c, x0 - 1, y0 - 1, x0 + bw + 1, y0 + bh + 1, ink);
	int dec = decimals(step);
	for (int t = 0; t <= 64; t++) {
		double v = lo + t * step;
		if (v > hi + 1e-9 * (hi - lo))
			break;
		int x = x0 + (int)lround((v - lo) / (hi - lo) * (bw - 1));
		fill(c, x, y0 + bh, x + 1, y0 + bh + 6, ink);
		char lab[48];
		fmt_value(lab, sizeof lab, v, dec);
		text(c, x - text_w(lab, 2) / 2, y0 + bh + 9, 2, lab, ink);
	}
	text(c, x0 + bw + 12, y0 + 2, 2, unit, ink);
	(void)p;
	return x0 + bw + 12 + text_w(unit, 2);
}

/* Scale bar in metres (about a quarter of the map), right-aligned at xr. */
static void scale_bar(const struct pv *p, struct canvas *c, int xr, int y0)
{
	double m = nice_step(p->W * p->mpp / 4, 1);
	/* nice_step gives 1, 2, 2.5, 5: keep 1, 2, 5 for a scale bar */
	double pw = pow(10, floor(log10(m) + 1e-9));
	if (fabs(m / pw - 2.5) < 1e-9)
		m = 2 * pw;
	int len = (int)lround(m / p->mpp);
	while (len > 300) {
		m /= 2;
		len = (int)lround(m / p->mpp);
	}
	len = len < 4 ? 4 : len;
	int x0 = xr - len;
	for (int s = 0; s < 4; s++) {
		int a = x0 + len * s / 4, b = x0 + len * (s + 1) / 4;
		fill(c, a, y0, b, y0 + 8, s % 2 ? white : ink);
	}
	frame(c, x0 - 1, y0 - 1, xr + 1, y0 + 9, ink);
	char lab[64];
	snprintf(lab, sizeof lab, "%g %s", m >= 1000 ? m / 1000 : m,
		 m >= 1000 ? "km" : "m");
	text(c, x0 - text_w("0", 2) / 2, y0 + 14, 2, "0", ink);
	text(c, xr - text_w(lab, 2) / 2, y0 + 14, 2, lab, ink);
}

static void north_arrow(struct canvas *c, int cx, int y0)
{
	for (int t = 0; t < 18; t++) {
		int hw = t * 7 / 18;
		fill(c, cx - hw, y0 + t, cx + hw + 1, y0 + t + 1, ink);
	}
	fill(c, cx - 1, y0 + 18, cx + 2, y0 + 30, ink);
	text(c, cx - text_w("N", 2) / 2, y0 + 34, 2, "N", ink);
}

static void material_legend(const struct pv *p, struct canvas *c, int x0,
			    int y0, int xmax)
{
	const struct wb_maps *m = &p->m;
	int used[256] = { 0 };
	for (size_t q = 0; q < (size_t)m->nx * m->ny; q++)
		if (is_wet(m, q))
			used[m->material[q]] = 1;
	static const char *const kinds[3] = { "river", "lake", "ocean" };
	int x = x0, y = y0, rows = 1, shown = 0, left = 0;
	for (int id = 0; id < 256; id++) {
		if (!used[id])
			continue;
		char lab[160];
		const struct wb_material *mt = NULL;
		for (int k = 0; k < p->in->n_materials; k++)
			if (p->in->materials[k].id == id)
				mt = &p->in->materials[k];
		int kind = mt ? (int)mt->kind : 0;
		if (mt)
			snprintf(lab, sizeof lab, "%d %.40s (%s)", id,
				 mt->name ? mt->name : "", kinds[kind < 0 || kind > 2 ? 0 : kind]);
		else
			snprintf(lab, sizeof lab, "%d (not in the scene)", id);
		int wdt = 24 + text_w(lab, 2) + 24;
		if (x > x0 && x + wdt > xmax) {
			if (rows == 3) {
				left++;
				continue;
			}
			rows++;
			x = x0;
			y += 24;
		}
		uint8_t rgb[3];
		material_rgb(p->in, id, rgb);
		fill(c, x, y, x + 18, y + 16, rgb);
		frame(c, x - 1, y - 1, x + 19, y + 17, ink);
		text(c, x + 24, y + 2, 2, lab, ink);
		x += wdt;
		shown++;
	}
	if (!shown)
		text(c, x0, y0 + 2, 2, "no water", grey);
	if (left) {
		char lab[48];
		snprintf(lab, sizeof lab, "+%d more", left);
		text(c, x, y + 2, 2, lab, grey);
	}
}

static enum wb_status pv_render(const struct pv *p, enum preview_kind k,
				struct preview_image *img, struct wb_diags *d)
{
	int cw, ch;
	preview_canvas_size(p->in->m->nx, p->in->m->ny, &cw, &ch);
	struct canvas c = { cw, ch, malloc((size_t)cw * ch * 3) };
	if (!c.px)
		return wb_fail(d, WB_EIO, NULL, "preview: out of memory");
	fill(&c, 0, 0, cw, ch, paper);
	double lo, hi, step;
	range_of(p, k, &lo, &hi, &step);
	int ox = MARGIN + (cw - 2 * MARGIN - p->W) / 2, oy = HEAD;
	draw_map(p, k, &c, ox, oy, lo, hi);
	frame(&c, ox - 1, oy - 1, ox + p->W + 1, oy + p->H + 1, ink);

	/* header: scene and picture, then the grid */
	char t[256];
	snprintf(t, sizeof t, "%.60s - %s", p->in->scene && *p->in->scene ?
		 p->in->scene : "(unnamed scene)", kind_title[k]);
	text(&c, MARGIN, 14, 3, t, ink);
	/* footer: legend left, scale and north right */
	int fy = HEAD + p->H + 14, xr = cw - MARGIN;
	static const char *const leg[PREVIEW_COUNT] = {
		"depth below the surface", "surface elevation",
		"speed; arrows: direction, length ~ speed", "material id and name",
		"+ in water, - on land",
		"foam density (0 none, 1 full)"
	};
	text(&c, MARGIN, fy, 2, leg[k], ink);
	if (k == PREVIEW_MATERIAL) {
		material_legend(p, &c, MARGIN, fy + 24, xr - 260);
	} else {
		static const char *const unit[PREVIEW_COUNT] = {
			"m", "m", "m/s", "", "m", ""
		};
		int right = colour_bar(p, k, &c, MARGIN + 24, fy + 24, lo, hi, step, unit[k]);
		if (k == PREVIEW_FLOW) {
			double len = 0.9 * arrow_step(p) * 0.5;
			arrow(&c, right + 16 + len / 2, fy + 33, 1, 0, len);
			char lab[64];
			fmt_value(lab, sizeof lab, hi / 2, decimals(step) + 1);
			snprintf(t, sizeof t, "%s m/s", lab);
			text(&c, right + 24 + (int)len, fy + 26, 2, t, ink);
		}
	}
	if (p->terrain) {
		int dec = decimals(p->ci);
		char a[32], b[32], e[32];
		fmt_value(a, sizeof a, p->ci, dec);
		fmt_value(b, sizeof b, p->zlo, 1);
		fmt_value(e, sizeof e, p->zhi, 1);
		snprintf(t, sizeof t, "terrain %s..%s m, contours every %s m", b, e, a);
	} else {
		snprintf(t, sizeof t, "no terrain here (wpreview --scene draws it)");
	}
	if (k == PREVIEW_DISTANCE) {
		size_t o = strlen(t);
		snprintf(t + o, sizeof t - o, "; distance lines every %g m", hi / 4);
	}
	text(&c, MARGIN, fy + 78, 2, t, grey);
	snprintf(t, sizeof t, "%d x %d px, %g m/px", p->in->m->nx, p->in->m->ny,
		 p->in->m->dx);
	text(&c, xr - text_w(t, 2), fy + 78, 2, t, grey);
	scale_bar(p, &c, xr - 60, fy + 30);
	north_arrow(&c, xr - 14, fy + 4);
	img->w = cw;
	img->h = ch;
	img->rgb = c.px;
	return WB_OK;
}

enum wb_status preview_render(const struct preview_in *in, enum preview_kind k,
			      struct preview_image *img, struct wb_diags *d)
{
	memset(img, 0, sizeof *img);
	if (!in || !in->m || in->m->nx <= 0 || in->m->ny <= 0 ||
	    !preview_available(in, k))
		return wb_fail(d, WB_EINPUT, NULL, "preview: nothing to draw");
	struct pv p;
	enum wb_status s = WB_OK;
	if (pv_init(&p, in))
		s = wb_fail(d, WB_EIO, NULL, "preview: out of memory");
	else
		s = pv_render(&p, k, img, d);
	pv_free(&p);
	return s;
}

void preview_image_release(struct preview_image *img)
{
	if (img) {
		free(img->rgb);
		memset(img, 0, sizeof *img);
	}
}

enum wb_status preview_write(const struct preview_in *in, const char *dir,
			     struct wb_diags *d)
{
	if (!in || !in->m || in->m->nx <= 0 || in->m->ny <= 0)
		return wb_fail(d, WB_EINPUT, dir, "preview: empty map");
	enum wb_status s = wb_mkdirs(dir, d);
	if (s != WB_OK)
		return s;
	struct pv p;
	if (pv_init(&p, in)) {
		pv_free(&p);
		return wb_fail(d, WB_EIO, dir, "preview: out of memory");
	}
	for (int k = 0; s == WB_OK && k < PREVIEW_COUNT; k++) {
		if (!preview_available(in, (enum preview_kind)k))
			continue;
		struct preview_image img;
		s = pv_render(&p, (enum preview_kind)k, &img, d);
		if (s != WB_OK)
			break;
		char name[32];
		snprintf(name, sizeof name, "%s.png", kind_name[k]);
		char *path = wb_path_join(dir, name);
		char title[160];
		snprintf(title, sizeof title, "%.80s: %s",
			 in->scene ? in->scene : "", kind_title[k]);
		const char *tx[] = { "Title", title, "Software", "wbake " WB_VERSION_STRING, NULL };
		s = path ? preview_png_write(path, img.w, img.h, 3, 8, img.rgb, tx, d)
			 : wb_fail(d, WB_EIO, dir, "out of memory");
		free(path);
		preview_image_release(&img);
	}
	pv_free(&p);
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
