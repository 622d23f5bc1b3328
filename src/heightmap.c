/*
 * heightmap.c - load a terrain heightmap and scale it to metres.
 *
 * Formats (docs/heightmap.md):
 *   png   8- or 16-bit greyscale PNG (colour type 0); any other colour type
 *         or bit depth is rejected, naming what was found. Value v maps to
 *         z = v / maxval * height_scale + height_offset, maxval 255 or 65535.
 *   r16   headerless little-endian uint16, width*height values, row 0 first;
 *         width and height come from the terrain description. Same scaling
 *         with maxval 65535.
 *   r32f  headerless little-endian IEEE float32, width*height values;
 *         z = v * height_scale + height_offset; NaN and infinities rejected
 *         with the pixel position.
 * Output: wb_heightmap.z[i + j*nx], row j = 0 is the first (top) image row,
 * as everywhere in wbake (wbake.h). Scaling is done in double and rounded
 * once to float, so results do not depend on the host or thread count.
 *
 * Every failure is WB_EINPUT naming the file and saying what was found
 * against what was expected (WB_EIO only for out of memory). The decoder
 * works from memory and must survive arbitrary bytes (fuzz/fuzz_heightmap.c):
 * libpng reports errors by longjmp, so everything the PNG path allocates is
 * owned by a struct outside the function that calls setjmp and released in
 * one place afterwards. Dimensions are capped (HM_MAX_DIM, HM_MAX_PIXELS),
 * and a PNG that claims more pixel data than its compressed stream could
 * possibly hold (deflate expands at most ~1032:1) is rejected as truncated
 * before anything image-sized is allocated.
 *
 * The loader reads nothing it does not need: only regular files, a raw file
 * only when it is exactly width*height*bytes long, a PNG only up to a cap
 * derived from the dimensions in its IHDR (png_file_cap), checked first.
 */
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "wbake.h"

#define HM_MAX_DIM 32768
#define HM_MAX_PIXELS ((size_t)1 << 28) /* 1 GiB of float output */
/* Upper bound of the deflate expansion ratio, with a margin. */
#define HM_MAX_INFLATE 1100

static const char *hm_name(const struct wb_terrain_desc *t)
{
	return t && t->heightmap ? t->heightmap : "<heightmap>";
}

static const char *fmt_name(enum wb_hm_format f)
{
	switch (f) {
	case WB_HM_PNG: return "png";
	case WB_HM_R16: return "r16";
	case WB_HM_R32F: return "r32f";
	}
	return "?";
}

/* Check dimensions against the caps; 0 when fine. */
static int dims_ok(long long w, long long h)
{
	return w > 0 && h > 0 && w <= HM_MAX_DIM && h <= HM_MAX_DIM &&
	       (size_t)(w * h) <= HM_MAX_PIXELS;
}

/* z = v/max*scale + offset, rounded once to float; 0 when representable. */
static int scale_to_float(double v, double max, const struct wb_terrain_desc *t,
			  float *out)
{
	double z = max > 0 ? v / max * t->height_scale + t->height_offset
			   : v * t->height_scale + t->height_offset;
	if (!isfinite(z) || fabs(z) > 3.0e38)
		return -1;
	*out = (float)z;
	return 0;
}

/* ---- raw formats ------------------------------------------------------- */

static enum wb_status decode_raw(const unsigned char *data, size_t len,
				 const struct wb_terrain_desc *t,
				 struct wb_heightmap *hm, struct wb_diags *d)
{
	const char *name = hm_name(t);
	const char *fn = fmt_name(t->format);
	size_t bpp = t->format == WB_HM_R16 ? 2 : 4;
	if (t->width <= 0 || t->height <= 0)
		return wb_fail(d, WB_EINPUT, name,
			       "%s heightmap needs the terrain width and height "
			       "(found %dx%d)", fn, t->width, t->height);
	if (!dims_ok(t->width, t->height))
		return wb_fail(d, WB_EINPUT, name,
			       "%dx%d heightmap is too large (at most %dx%d and "
			       "%zu pixels)", t->width, t->height, HM_MAX_DIM,
			       HM_MAX_DIM, HM_MAX_PIXELS);
	size_t n = (size_t)t->width * (size_t)t->height;
	if (len != n * bpp)
		return wb_fail(d, WB_EINPUT, name,
			       "expected %zu bytes for %dx%d %s, found %zu",
			       n * bpp, t->width, t->height, fn, len);
	float *z = malloc(n * sizeof(*z));
	if (!z)
		return wb_fail(d, WB_EIO, name, "out of memory for %dx%d "
			       "heightmap", t->width, t->height);
	for (size_t k = 0; k < n; k++) {
		const unsigned char *p = data + k * bpp;
		int bad;
		if (bpp == 2) {
			unsigned v = (unsigned)p[0] | (unsigned)p[1] << 8;
			bad = scale_to_float(v, 65535.0, t, &z[k]);
		} else {
			uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
			float v;
			memcpy(&v, &u, 4);
			if (!isfinite(v)) {
				free(z);
				return wb_fail(d, WB_EINPUT, name,
					"pixel (%zu, %zu) is %s; r32f heights "
					"must be finite",
					k % (size_t)t->width,
					k / (size_t)t->width,
					isnan(v) ? "NaN" : "infinite");
			}
			bad = scale_to_float(v, 0, t, &z[k]);
		}
		if (bad) {
			free(z);
			return wb_fail(d, WB_EINPUT, name,
				       "pixel (%zu, %zu) scales to a height "
				       "outside the float range",
				       k % (size_t)t->width,
				       k / (size_t)t->width);
		}
	}
	hm->nx = t->width;
	hm->ny = t->height;
	hm->z = z;
	return WB_OK;
}

/* ---- PNG --------------------------------------------------------------- */

/* Everything the PNG path owns; lives in the caller of the setjmp function
 * so that longjmp never leaves it indeterminate. */
struct png_src {
	const unsigned char *p;
	size_t len, pos;
	int eof;              /* the reader ran past the end of the buffer */
	char msg[256];        /* libpng's error, or ours */
	unsigned char *rows;  /* whole image (interlaced) or one row */
	float *z;
	unsigned w, h;
};

static void png_src_read(png_structp png, png_bytep out, size_t n)
{
	struct png_src *s = png_get_io_ptr(png);
	if (n > s->len - s->pos) {
		s->eof = 1;
		png_error(png, "unexpected end of file");
	}
	memcpy(out, s->p + s->pos, n);
	s->pos += n;
}

static void png_src_error(png_structp png, png_const_charp msg)
{
	struct png_src *s = png_get_error_ptr(png);
	snprintf(s->msg, sizeof(s->msg), "%s", msg);
	png_longjmp(png, 1);
}

static void png_src_warning(png_structp png, png_const_charp msg)
{
	/* The library never prints; libpng warnings are about ancillary
	 * chunks that do not affect the heights. */
	(void)png;
	(void)msg;
}

/* Returns 0 on success, -1 on a libpng error (s->msg, s->eof), 1 on our own
 * validation error (s->msg). Uses no local variable after setjmp returns
 * the second time. */
static int png_decode_jmp(struct png_src *s, png_structp png, png_infop info,
			  const struct wb_terrain_desc *t)
{
	if (setjmp(png_jmpbuf(png)))
		return -1;
	png_set_read_fn(png, s, png_src_read);
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	/* Let the fuzzer past the checksums into the decoder proper. */
	png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
#endif
	png_read_info(png, info);
	png_uint_32 w, h;
	int depth, ctype, interlace;
	png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL,
		     NULL);
	if (ctype != PNG_COLOR_TYPE_GRAY || (depth != 8 && depth != 16)) {
		static const char *const names[] = {
			[PNG_COLOR_TYPE_GRAY] = "greyscale",
			[PNG_COLOR_TYPE_RGB] = "RGB",
			[PNG_COLOR_TYPE_PALETTE] = "palette",
			[PNG_COLOR_TYPE_GRAY_ALPHA] = "greyscale+alpha",
			[PNG_COLOR_TYPE_RGB_ALPHA] = "RGBA",
		};
		const char *cn = ctype >= 0 && ctype <= 6 && names[ctype] ?
				 names[ctype] : "unknown";
		snprintf(s->msg, sizeof(s->msg),
			 "PNG is %d-bit %s (colour type %d); expected 8- or "
			 "16-bit greyscale (colour type 0)", depth, cn, ctype);
		return 1;
	}
	if (!dims_ok(w, h)) {
		snprintf(s->msg, sizeof(s->msg),
			 "%ux%u PNG is too large (at most %dx%d and %zu "
			 "pixels)", (unsigned)w, (unsigned)h, HM_MAX_DIM,
			 HM_MAX_DIM, HM_MAX_PIXELS);
		return 1;
	}
	if ((t->width > 0 && (png_uint_32)t->width != w) ||
	    (t->height > 0 && (png_uint_32)t->height != h)) {
		snprintf(s->msg, sizeof(s->msg),
			 "PNG is %ux%u but the terrain says %dx%d",
			 (unsigned)w, (unsigned)h, t->width, t->height);
		return 1;
	}
	size_t bpp = (size_t)depth / 8;
	size_t rowbytes = (size_t)w * bpp;
	size_t raw = (size_t)h * (rowbytes + 1);
	if (raw / HM_MAX_INFLATE > s->len) {
		s->eof = 1;
		snprintf(s->msg, sizeof(s->msg),
			 "%ux%u %d-bit image data cannot fit in a %zu-byte "
			 "file", (unsigned)w, (unsigned)h, depth, s->len);
		return 1;
	}
	int passes = png_set_interlace_handling(png);
	png_read_update_info(png, info);
	if (png_get_rowbytes(png, info) != rowbytes) {
		snprintf(s->msg, sizeof(s->msg), "unexpected PNG row size");
		return 1;
	}
	/* Interlaced images are assembled over the passes in a whole-image
	 * buffer; others are converted one row at a time. */
	s->rows = malloc(passes > 1 ? rowbytes * h : rowbytes);
	s->z = malloc((size_t)w * h * sizeof(float));
	if (!s->rows || !s->z) {
		snprintf(s->msg, sizeof(s->msg),
			 "out of memory for %ux%u heightmap", (unsigned)w,
			 (unsigned)h);
		return 2;
	}
	double maxval = depth == 16 ? 65535.0 : 255.0;
	for (int pass = 0; pass < passes; pass++) {
		for (png_uint_32 y = 0; y < h; y++) {
			unsigned char *row = passes > 1 ?
				s->rows + (size_t)y * rowbytes : s->rows;
			png_read_row(png, row, NULL);
			if (pass != passes - 1)
				continue;
			float *zr = s->z + (size_t)y * w;
			for (png_uint_32 x = 0; x < w; x++) {
				unsigned v = depth == 16 ?
					(unsigned)row[2 * x] << 8 | row[2 * x + 1] :
					row[x];
				if (scale_to_float(v, maxval, t, &zr[x])) {
					snprintf(s->msg, sizeof(s->msg),
						 "pixel (%u, %u) scales to a "
						 "height outside the float "
						 "range", (unsigned)x,
						 (unsigned)y);
					return 1;
				}
			}
		}
	}
	png_read_end(png, NULL);
	s->w = w;
	s->h = h;
	return 0;
}

static enum wb_status decode_png(const unsigned char *data, size_t len,
				 const struct wb_terrain_desc *t,
				 struct wb_heightmap *hm, struct wb_diags *d)
{
	const char *name = hm_name(t);
	if (len < 8 || png_sig_cmp(data, 0, 8) != 0)
		return wb_fail(d, WB_EINPUT, name, "not a PNG file (%s)",
			       len < 8 ? "shorter than the PNG signature"
				       : "bad signature");
	struct png_src s;
	memset(&s, 0, sizeof(s));
	s.p = data;
	s.len = len;
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s,
						 png_src_error,
						 png_src_warning);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info) {
		png_destroy_read_struct(&png, &info, NULL);
		return wb_fail(d, WB_EIO, name, "out of memory (libpng)");
	}
	int rc = png_decode_jmp(&s, png, info, t);
	png_destroy_read_struct(&png, &info, NULL);
	free(s.rows);
	if (rc != 0) {
		free(s.z);
		if (rc == 2)
			return wb_fail(d, WB_EIO, name, "%s", s.msg);
		if (s.eof)
			return wb_fail(d, WB_EINPUT, name, "truncated PNG: %s",
				       s.msg);
		if (rc < 0)
			return wb_fail(d, WB_EINPUT, name, "corrupt PNG: %s",
				       s.msg);
		return wb_fail(d, WB_EINPUT, name, "%s", s.msg);
	}
	hm->nx = (int)s.w;
	hm->ny = (int)s.h;
	hm->z = s.z;
	return WB_OK;
}

/* ---- public ------------------------------------------------------------ */

enum wb_status wb_heightmap_decode(const unsigned char *data, size_t len,
				   const struct wb_terrain_desc *t,
				   struct wb_heightmap *hm, struct wb_diags *d)
{
	memset(hm, 0, sizeof(*hm));
	const char *name = hm_name(t);
	if (!isfinite(t->height_scale) || !isfinite(t->height_offset))
		return wb_fail(d, WB_EINPUT, name,
			       "height_scale and height_offset must be finite");
	enum wb_status st;
	switch (t->format) {
	case WB_HM_PNG:
		st = decode_png(data, len, t, hm, d);
		break;
	case WB_HM_R16:
	case WB_HM_R32F:
		st = decode_raw(data, len, t, hm, d);
		break;
	default:
		return wb_fail(d, WB_EINPUT, name, "unknown heightmap format %d",
			       (int)t->format);
	}
	if (st == WB_OK)
		wb_sha256(data, len, hm->sha256);
	return st;
}

/* Largest PNG file accepted for a w x h image: twice its 16-bit pixel data
 * with filter bytes (stored, incompressible deflate blocks add ~0.01%, chunk
 * headers ~0.2%) plus 1 MiB for ancillary chunks. */
static size_t png_file_cap(unsigned long long w, unsigned long long h)
{
	return (size_t)(2 * h * (2 * w + 1)) + ((size_t)1 << 20);
}

/* The byte cap of the heightmap file, found before anything is read: raw
 * formats must be exactly width*height*bytes; a PNG's IHDR (at a fixed
 * offset) gives its dimensions, checked against the caps here. Returns
 * WB_OK with *cap set, or an error (reported). */
static enum wb_status input_cap(int fd, size_t size,
				const struct wb_terrain_desc *t, size_t *cap,
				struct wb_diags *d)
{
	const char *name = hm_name(t);
	const char *fn = fmt_name(t->format);
	if (t->format == WB_HM_R16 || t->format == WB_HM_R32F) {
		size_t bpp = t->format == WB_HM_R16 ? 2 : 4;
		if (t->width <= 0 || t->height <= 0 ||
		    !dims_ok(t->width, t->height)) {
			*cap = 0; /* read nothing: decode_raw says what is
				     wrong with the dimensions */
			return WB_OK;
		}
		size_t want = (size_t)t->width * (size_t)t->height * bpp;
		if (size != want)
			return wb_fail(d, WB_EINPUT, name,
				       "expected %zu bytes for %dx%d %s, found %zu",
				       want, t->width, t->height, fn, size);
		*cap = want;
		return WB_OK;
	}
	/* PNG: signature (8), IHDR length (4) and type (4), width, height */
	unsigned char h[24];
	ssize_t got = pread(fd, h, sizeof(h), 0);
	*cap = png_file_cap(HM_MAX_PIXELS, 1);
	if (got == (ssize_t)sizeof(h) && png_sig_cmp(h, 0, 8) == 0 &&
	    memcmp(h + 12, "IHDR", 4) == 0) {
		unsigned long long w = (unsigned long long)h[16] << 24 |
			(unsigned long long)h[17] << 16 |
			(unsigned long long)h[18] << 8 | h[19];
		unsigned long long ht = (unsigned long long)h[20] << 24 |
			(unsigned long long)h[21] << 16 |
			(unsigned long long)h[22] << 8 | h[23];
		if (!w || !ht) /* libpng only says "Invalid IHDR data" */
			return wb_fail(d, WB_EINPUT, name,
				       "PNG is %llux%llu pixels; a heightmap needs at least 1x1",
				       w, ht);
		if (!dims_ok((long long)w, (long long)ht))
			return wb_fail(d, WB_EINPUT, name,
				       "%llux%llu PNG is too large (at most %dx%d "
				       "and %zu pixels)", w, ht, HM_MAX_DIM,
				       HM_MAX_DIM, HM_MAX_PIXELS);
		*cap = png_file_cap(w, ht);
	}
	return WB_OK;
}

enum wb_status wb_heightmap_load(const struct wb_terrain_desc *t,
				 struct wb_heightmap *hm, struct wb_diags *d)
{
	memset(hm, 0, sizeof(*hm));
	if (!t->heightmap || !*t->heightmap)
		return wb_fail(d, WB_EINPUT, NULL, "no heightmap file given");
	int fd;
	size_t size, cap = 0;
	unsigned char *data = NULL;
	size_t len = 0;
	enum wb_status st = wb_input_open(t->heightmap, &fd, &size, d);
	if (st != WB_OK)
		return st;
	st = input_cap(fd, size, t, &cap, d);
	if (st == WB_OK && cap)
		st = wb_input_read(fd, t->heightmap, size, cap,
				   "this heightmap", &data, &len, d);
	close(fd);
	if (st == WB_OK)
		st = wb_heightmap_decode(data ? data : (const unsigned char *)"",
					 len, t, hm, d);
	free(data);
	return st;
}

void wb_heightmap_free(struct wb_heightmap *hm)
{
	if (!hm)
		return;
	free(hm->z);
	memset(hm, 0, sizeof(*hm));
}
