/*
 * wtp.h - reader for wbake tile packs (.wtp), version 1.x.
 * Single header, C99, depends on zlib only. The format is specified byte by
 * byte in docs/wtp-format.md; this reader follows it.
 *
 * Build: in exactly one C file write
 *     #define WTP_IMPLEMENTATION
 *     #include "wtp.h"
 * and link with -lz. Other files include it without the define.
 *
 * Use:
 *     wtp_pack p;
 *     if (wtp_open(&p, buf, len, 0) != WTP_OK) puts(p.err);
 *     wtp_vat_entry e;
 *     wtp_vat(&p, lod, x, y, &e);           // O(1)
 *     if (e.state == WTP_DATA)
 *         wtp_page_read(&p, e.page, NULL, 0, raw, work);  // planes in raw
 *
 * wtp_open() needs at least the tables in memory (the first tables_size
 * bytes: read WTP_HEADER_SIZE bytes, call wtp_tables_size(), read that
 * many); it checks the tables' CRC and every bound, so a truncated or
 * corrupt pack is rejected with a message in p.err and never read out of
 * bounds. With the whole file in memory (len >= file_size), wtp_page_read()
 * finds payloads itself and wtp_verify() checks every byte; with the
 * tables only, read a page's stored bytes yourself (wtp_page_info() gives
 * offset and size) and pass them to wtp_page_read().
 *
 * Memory: wtp_pack holds pointers into the caller's buffer, which must
 * outlive it; the reader allocates nothing itself. The only allocation is
 * zlib's inflate state (about 44 KiB through zlib's default allocator,
 * malloc), taken and released inside each wtp_page_read() of a ZLIB or
 * ZLIB_DELTA_SPLIT page. Decoding needs two caller buffers of
 * page_raw_size bytes (raw: the result; work: scratch for
 * ZLIB_DELTA_SPLIT).
 *
 * Errors: functions return WTP_OK (0) or a negative WTP_E* code and write
 * a one-line message into p->err (wtp_open(): also on failure).
 *
 * Thread safety: after wtp_open(), calls that only read (every function
 * but wtp_open) may run concurrently on one wtp_pack except that they
 * write p->err on failure; give each thread its own copy of the struct
 * (a plain struct copy) when you need the messages.
 */
#ifndef WTP_H
#define WTP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WTP_HEADER_SIZE 128
#define WTP_VERSION_MAJOR 1
#define WTP_VERSION_MINOR 0
#define WTP_DRY_HEIGHT (-65504.0f)
#define WTP_DRY_HALF 0xFBFFu /* binary16 bits of WTP_DRY_HEIGHT */
#define WTP_NO_PAGE 0xFFFFFFFFu

enum {
	WTP_OK = 0,
	WTP_ETRUNC = -1,   /* buffer shorter than the pack says */
	WTP_EMAGIC = -2,   /* not a tile pack */
	WTP_EVERSION = -3, /* unsupported major version */
	WTP_ECORRUPT = -4, /* a field or table breaks the format */
	WTP_ECRC = -5,     /* a CRC does not match */
	WTP_EARG = -6,     /* bad argument (index out of range, ...) */
	WTP_EZLIB = -7     /* zlib failed (out of memory or bad stream) */
};

/* wtp_open() flags */
#define WTP_OPEN_NOCRC 1u /* skip the tables CRC (diagnostics, fuzzing) */

enum { WTP_EMPTY = 0, WTP_FLAT = 1, WTP_DATA = 2 };
enum {
	WTP_LAYER_HEIGHT = 0, WTP_LAYER_FLOW = 1, WTP_LAYER_MATERIAL = 2,
	WTP_LAYER_DISTANCE = 3, WTP_LAYER_FOAM = 4, WTP_LAYER_COUNT = 5
};
enum {
	WTP_FMT_R16F = 1, WTP_FMT_RG16F = 2, WTP_FMT_R8_UINT = 3,
	WTP_FMT_R8_UNORM = 4
};
enum { WTP_CODEC_RAW = 0, WTP_CODEC_ZLIB = 1, WTP_CODEC_ZLIB_DELTA_SPLIT = 2 };
enum {
	WTP_META_SCENE_NAME = 1, WTP_META_TOOL = 2, WTP_META_SOLVER = 3,
	WTP_META_UNITS = 4, WTP_META_SCENE_SHA256 = 5,
	WTP_META_HEIGHTMAP_SHA256 = 6, WTP_META_MATERIAL = 16
};
#define WTP_LAYER_RELATIVE 1u /* layer flag: relative to the VAT height */

typedef struct {
	uint8_t id, format, component_bytes, components;
	uint32_t flags, plane_offset, plane_size;
} wtp_layer;

typedef struct {
	uint32_t nx, ny, px, py;
	double dx;
	uint64_t vat_offset;
	uint32_t n_flat, n_data, first_page, n_new_pages;
} wtp_lod;

typedef struct {
	uint8_t state, has_water, material;
	float height;   /* EMPTY: dry; FLAT: surface; DATA: height base */
	uint32_t page;  /* DATA: directory index, else WTP_NO_PAGE */
} wtp_vat_entry;

typedef struct {
	uint32_t w, h;
	uint64_t node_offset;
} wtp_qt_level;

typedef struct {
	uint8_t has_water;
	float hmin, hmax;
} wtp_qt_node;

typedef struct {
	uint64_t offset;
	uint32_t stored_size, raw_size, crc32;
	uint8_t codec;
} wtp_page_info_t;

typedef struct {
	uint32_t id, kind;
	double amplitude, frequency, speed;
	const char *name; /* not NUL-terminated: name_len bytes */
	uint32_t name_len;
} wtp_material;

/* An opened pack. Fields are read-only for the caller. */
typedef struct {
	const uint8_t *data; /* the caller's buffer */
	size_t size;         /* its length */
	uint16_t version_major, version_minor;
	uint32_t header_size, tables_size, tables_crc32;
	uint64_t file_size, data_offset;
	double origin[2], dx0, distance_max;
	uint32_t page_interior, page_border, page_side, page_pixels;
	uint32_t n_lods, n_layers, alignment, n_pages, n_qt_levels;
	uint32_t page_raw_size;
	uint32_t layer_table_offset, lod_table_offset, qt_level_table_offset;
	uint32_t page_dir_offset, meta_offset, meta_size;
	char err[160];
} wtp_pack;

/* From the first WTP_HEADER_SIZE bytes: how many bytes wtp_open() needs
 * (tables_size), or 0 when buf is not a tile pack header. */
uint32_t wtp_tables_size(const void *buf, size_t len);
/* Open from memory (len >= tables_size; the whole file for page reads
 * without explicit payloads and for wtp_verify). Checks the CRC of the
 * tables and every structural rule. */
int wtp_open(wtp_pack *p, const void *buf, size_t len, unsigned flags);

int wtp_layer_get(const wtp_pack *p, uint32_t i, wtp_layer *out);
/* Index of the layer with 'id' in the layer table, or -1. */
int wtp_layer_find(const wtp_pack *p, uint32_t id);
int wtp_lod_get(const wtp_pack *p, uint32_t lod, wtp_lod *out);
/* O(1): VAT entry of page (x, y) of 'lod'. */
int wtp_vat(wtp_pack *p, uint32_t lod, uint32_t x, uint32_t y,
	    wtp_vat_entry *out);
int wtp_qt_level_get(const wtp_pack *p, uint32_t level, wtp_qt_level *out);
int wtp_qt_node_get(wtp_pack *p, uint32_t level, uint32_t x, uint32_t y,
		    wtp_qt_node *out);
int wtp_page_info(wtp_pack *p, uint32_t page, wtp_page_info_t *out);
/* Decode page 'page' into raw (page_raw_size bytes). 'stored' holds its
 * stored_size payload bytes, or is NULL to take them from the buffer given
 * to wtp_open (which must then hold them). 'work' is page_raw_size bytes
 * of scratch (needed for ZLIB_DELTA_SPLIT; may be NULL for other
 * codecs). */
int wtp_page_read(wtp_pack *p, uint32_t page, const void *stored,
		  size_t stored_len, void *raw, void *work);
/* The n-th (0-based) metadata record with 'tag': value and length. */
int wtp_meta_find(wtp_pack *p, uint32_t tag, uint32_t n, const void **value,
		  uint32_t *len);
uint32_t wtp_material_count(const wtp_pack *p);
int wtp_material_get(wtp_pack *p, uint32_t i, wtp_material *out);
/* Everything of docs/wtp-format.md section 12; needs the whole file in
 * the buffer (len == file_size) and two page_raw_size buffers (work also
 * serves as a bitmap of referenced pages, checked when n_pages <=
 * 8 * page_raw_size). */
int wtp_verify(wtp_pack *p, void *raw, void *work);

/* binary16 bits to float (exact). */
float wtp_half_to_float(uint16_t h);
/* Pixel i of a decoded page's plane as float: converts by the layer's
 * format; for the relative height layer adds 'base' (the VAT height) to
 * wet values and returns WTP_DRY_HEIGHT for dry ones. */
float wtp_pixel(const wtp_layer *l, const void *raw, uint32_t i,
		uint32_t component, float base);
/* Name of a layer id ("height", "flow", ...) or of a format, or "?". */
const char *wtp_layer_name(uint32_t id);
const char *wtp_format_name(uint32_t format);

#ifdef __cplusplus
}
#endif
#endif /* WTP_H */

/* ======================================================================= */
#ifdef WTP_IMPLEMENTATION
#ifndef WTP_IMPLEMENTATION_DONE
#define WTP_IMPLEMENTATION_DONE

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

static const uint8_t wtp__magic[8] = { 0x89, 'W', 'T', 'P', 0x0D, 0x0A,
				       0x1A, 0x0A };

static uint16_t wtp__u16(const uint8_t *b)
{
	return (uint16_t)(b[0] | (b[1] << 8));
}
static uint32_t wtp__u32(const uint8_t *b)
{
	return (uint32_t)b[0] | ((uint32_t)b[1] << 8) |
	       ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}
static uint64_t wtp__u64(const uint8_t *b)
{
	return (uint64_t)wtp__u32(b) | ((uint64_t)wtp__u32(b + 4) << 32);
}
static float wtp__f32(const uint8_t *b)
{
	uint32_t u = wtp__u32(b);
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static double wtp__f64(const uint8_t *b)
{
	uint64_t u = wtp__u64(b);
	double f;
	memcpy(&f, &u, 8);
	return f;
}

static int wtp__fail(wtp_pack *p, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof p->err, fmt, ap);
	va_end(ap);
	return code;
}

static int wtp__zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* [off, off + n*size) inside the tables, past the header. */
static int wtp__in_tables(const wtp_pack *p, uint64_t off, uint64_t n,
			  uint64_t size)
{
	if (off < p->header_size || off > p->tables_size)
		return 0;
	if (n > (p->tables_size - off) / size)
		return 0;
	return 1;
}

static uint32_t wtp__crc(const uint8_t *b, uint64_t n)
{
	uLong c = crc32(0L, Z_NULL, 0);
	while (n > 0) {
		uInt k = n > 0x40000000u ? 0x40000000u : (uInt)n;
		c = crc32(c, b, k);
		b += k;
		n -= k;
	}
	return (uint32_t)c;
}

uint32_t wtp_tables_size(const void *buf, size_t len)
{
	const uint8_t *b = (const uint8_t *)buf;
	if (len < WTP_HEADER_SIZE || memcmp(b, wtp__magic, 8) != 0)
		return 0;
	return wtp__u32(b + 24);
}

static const uint8_t wtp__fmt_bytes[5][2] = {
	{ 0, 0 }, { 2, 1 }, { 2, 2 }, { 1, 1 }, { 1, 1 }
};
/* format each layer id must have in version 1 */
static const uint8_t wtp__layer_fmt[WTP_LAYER_COUNT] = {
	WTP_FMT_R16F, WTP_FMT_RG16F, WTP_FMT_R8_UINT, WTP_FMT_R16F,
	WTP_FMT_R8_UNORM
};

int wtp_layer_get(const wtp_pack *p, uint32_t i, wtp_layer *out)
{
	if (i >= p->n_layers)
		return WTP_EARG;
	const uint8_t *b = p->data + p->layer_table_offset + 16u * i;
	out->id = b[0];
	out->format = b[1];
	out->component_bytes = b[2];
	out->components = b[3];
	out->flags = wtp__u32(b + 4);
	out->plane_offset = wtp__u32(b + 8);
	out->plane_size = wtp__u32(b + 12);
	return WTP_OK;
}

int wtp_layer_find(const wtp_pack *p, uint32_t id)
{
	wtp_layer l;
	for (uint32_t i = 0; i < p->n_layers; i++)
		if (wtp_layer_get(p, i, &l) == WTP_OK && l.id == id)
			return (int)i;
	return -1;
}

int wtp_lod_get(const wtp_pack *p, uint32_t lod, wtp_lod *out)
{
	if (lod >= p->n_lods)
		return WTP_EARG;
	const uint8_t *b = p->data + p->lod_table_offset + 48u * lod;
	out->nx = wtp__u32(b);
	out->ny = wtp__u32(b + 4);
	out->px = wtp__u32(b + 8);
	out->py = wtp__u32(b + 12);
	out->dx = wtp__f64(b + 16);
	out->vat_offset = wtp__u64(b + 24);
	out->n_flat = wtp__u32(b + 32);
	out->n_data = wtp__u32(b + 36);
	out->first_page = wtp__u32(b + 40);
	out->n_new_pages = wtp__u32(b + 44);
	return WTP_OK;
}

int wtp_qt_level_get(const wtp_pack *p, uint32_t level, wtp_qt_level *out)
{
	if (level >= p->n_qt_levels)
		return WTP_EARG;
	const uint8_t *b = p->data + p->qt_level_table_offset + 16u * level;
	out->w = wtp__u32(b);
	out->h = wtp__u32(b + 4);
	out->node_offset = wtp__u64(b + 8);
	return WTP_OK;
}

static void wtp__vat_decode(const uint8_t *b, wtp_vat_entry *out)
{
	out->state = b[0];
	out->has_water = (uint8_t)(b[1] & 1u);
	out->material = b[2];
	out->height = wtp__f32(b + 4);
	out->page = wtp__u32(b + 8);
}

int wtp_vat(wtp_pack *p, uint32_t lod, uint32_t x, uint32_t y,
	    wtp_vat_entry *out)
{
	wtp_lod l;
	if (wtp_lod_get(p, lod, &l) != WTP_OK)
		return wtp__fail(p, WTP_EARG, "no LOD %u", (unsigned)lod);
	if (x >= l.px || y >= l.py)
		return wtp__fail(p, WTP_EARG, "page (%u, %u) outside LOD %u "
				 "(%u x %u pages)", (unsigned)x, (unsigned)y,
				 (unsigned)lod, (unsigned)l.px,
				 (unsigned)l.py);
	wtp__vat_decode(p->data + l.vat_offset +
				12u * ((uint64_t)x + (uint64_t)y * l.px),
			out);
	return WTP_OK;
}

int wtp_qt_node_get(wtp_pack *p, uint32_t level, uint32_t x, uint32_t y,
		    wtp_qt_node *out)
{
	wtp_qt_level q;
	if (wtp_qt_level_get(p, level, &q) != WTP_OK || x >= q.w || y >= q.h)
		return wtp__fail(p, WTP_EARG, "no quadtree node (%u, %u) at "
				 "level %u", (unsigned)x, (unsigned)y,
				 (unsigned)level);
	const uint8_t *b =
		p->data + q.node_offset + 12u * ((uint64_t)x + (uint64_t)y * q.w);
	out->has_water = (uint8_t)(b[0] & 1u);
	out->hmin = wtp__f32(b + 4);
	out->hmax = wtp__f32(b + 8);
	return WTP_OK;
}

int wtp_page_info(wtp_pack *p, uint32_t page, wtp_page_info_t *out)
{
	if (page >= p->n_pages)
		return wtp__fail(p, WTP_EARG, "no page %u (pack has %u)",
				 (unsigned)page, (unsigned)p->n_pages);
	const uint8_t *b = p->data + p->page_dir_offset + 24u * page;
	out->offset = wtp__u64(b);
	out->stored_size = wtp__u32(b + 8);
	out->raw_size = wtp__u32(b + 12);
	out->crc32 = wtp__u32(b + 16);
	out->codec = b[20];
	return WTP_OK;
}

/* Walk the metadata records; on each call *pos advances. */
static int wtp__meta_next(const wtp_pack *p, uint32_t *pos, uint32_t *tag,
			  const uint8_t **val, uint32_t *len)
{
	if (*pos >= p->meta_size)
		return 0;
	const uint8_t *b = p->data + p->meta_offset + *pos;
	*tag = wtp__u16(b);
	*len = wtp__u32(b + 4);
	*val = b + 8;
	*pos += 8u + ((*len + 3u) & ~3u);
	return 1;
}

static int wtp__check_meta(wtp_pack *p)
{
	uint32_t pos = 0;
	while (pos < p->meta_size) {
		if (p->meta_size - pos < 8)
			return wtp__fail(p, WTP_ECORRUPT, "metadata record at "
					 "%u truncated", (unsigned)pos);
		const uint8_t *b = p->data + p->meta_offset + pos;
		uint32_t len = wtp__u32(b + 4);
		uint32_t tag = wtp__u16(b);
		if (wtp__u16(b + 2) != 0)
			return wtp__fail(p, WTP_ECORRUPT, "metadata record at "
					 "%u: reserved field not zero",
					 (unsigned)pos);
		uint32_t room = p->meta_size - pos - 8;
		if (len > room || ((len + 3u) & ~3u) > room)
			return wtp__fail(p, WTP_ECORRUPT, "metadata record at "
					 "%u: length %u past the end",
					 (unsigned)pos, (unsigned)len);
		if (!wtp__zero(b + 8 + len, ((len + 3u) & ~3u) - len))
			return wtp__fail(p, WTP_ECORRUPT, "metadata record at "
					 "%u: padding not zero", (unsigned)pos);
		if (tag == WTP_META_MATERIAL && len < 32)
			return wtp__fail(p, WTP_ECORRUPT, "material record at "
					 "%u: %u bytes, need >= 32",
					 (unsigned)pos, (unsigned)len);
		if ((tag == WTP_META_SCENE_SHA256 ||
		     tag == WTP_META_HEIGHTMAP_SHA256) && len != 32)
			return wtp__fail(p, WTP_ECORRUPT, "hash record at %u: "
					 "%u bytes, need 32", (unsigned)pos,
					 (unsigned)len);
		pos += 8u + ((len + 3u) & ~3u);
	}
	return WTP_OK;
}

int wtp_meta_find(wtp_pack *p, uint32_t tag, uint32_t n, const void **value,
		  uint32_t *len)
{
	uint32_t pos = 0, t, l, seen = 0;
	const uint8_t *v;
	while (wtp__meta_next(p, &pos, &t, &v, &l))
		if (t == tag && seen++ == n) {
			*value = v;
			*len = l;
			return WTP_OK;
		}
	return wtp__fail(p, WTP_EARG, "no metadata record %u #%u",
			 (unsigned)tag, (unsigned)n);
}

uint32_t wtp_material_count(const wtp_pack *p)
{
	uint32_t pos = 0, t, l, n = 0;
	const uint8_t *v;
	while (wtp__meta_next(p, &pos, &t, &v, &l))
		n += t == WTP_META_MATERIAL;
	return n;
}

int wtp_material_get(wtp_pack *p, uint32_t i, wtp_material *out)
{
	const void *v;
	uint32_t len;
	int rc = wtp_meta_find(p, WTP_META_MATERIAL, i, &v, &len);
	if (rc != WTP_OK)
		return rc;
	const uint8_t *b = (const uint8_t *)v;
	out->id = wtp__u32(b);
	out->kind = wtp__u32(b + 4);
	out->amplitude = wtp__f64(b + 8);
	out->frequency = wtp__f64(b + 16);
	out->speed = wtp__f64(b + 24);
	out->name = (const char *)(b + 32);
	out->name_len = len - 32;
	return WTP_OK;
}

static int wtp__check_layers(wtp_pack *p)
{
	uint32_t off = 0;
	int last = -1;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		const uint8_t *b = p->data + p->layer_table_offset + 16u * i;
		if (l.id >= WTP_LAYER_COUNT || (int)l.id <= last)
			return wtp__fail(p, WTP_ECORRUPT, "layer %u: id %u "
					 "unknown or out of order", (unsigned)i,
					 (unsigned)l.id);
		last = l.id;
		if (l.format != wtp__layer_fmt[l.id] ||
		    l.component_bytes != wtp__fmt_bytes[l.format][0] ||
		    l.components != wtp__fmt_bytes[l.format][1])
			return wtp__fail(p, WTP_ECORRUPT, "layer %u (%s): format "
					 "%u / %u x %u bytes not allowed",
					 (unsigned)i, wtp_layer_name(l.id),
					 (unsigned)l.format,
					 (unsigned)l.components,
					 (unsigned)l.component_bytes);
		if (l.flags != (l.id == WTP_LAYER_HEIGHT ? WTP_LAYER_RELATIVE
							 : 0u))
			return wtp__fail(p, WTP_ECORRUPT, "layer %u: flags 0x%x "
					 "not allowed", (unsigned)i,
					 (unsigned)l.flags);
		(void)b;
		uint32_t size = p->page_pixels * l.components *
				l.component_bytes;
		if (l.plane_offset != off || l.plane_size != size)
			return wtp__fail(p, WTP_ECORRUPT, "layer %u: plane at %u "
					 "size %u, expected %u size %u",
					 (unsigned)i, (unsigned)l.plane_offset,
					 (unsigned)l.plane_size, (unsigned)off,
					 (unsigned)size);
		off += size;
	}
	if (wtp_layer_find(p, WTP_LAYER_HEIGHT) != 0)
		return wtp__fail(p, WTP_ECORRUPT, "no height layer");
	if (off != p->page_raw_size)
		return wtp__fail(p, WTP_ECORRUPT, "page_raw_size %u, layers "
				 "sum to %u", (unsigned)p->page_raw_size,
				 (unsigned)off);
	return WTP_OK;
}

static int wtp__check_lods(wtp_pack *p)
{
	wtp_lod prev;
	memset(&prev, 0, sizeof prev);
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod l;
		wtp_lod_get(p, k, &l);
		if (l.nx == 0 || l.ny == 0 || l.px == 0 || l.py == 0 ||
		    l.px != (l.nx - 1) / p->page_interior + 1 ||
		    l.py != (l.ny - 1) / p->page_interior + 1)
			return wtp__fail(p, WTP_ECORRUPT, "LOD %u: %u x %u px in "
					 "%u x %u pages is inconsistent",
					 (unsigned)k, (unsigned)l.nx,
					 (unsigned)l.ny, (unsigned)l.px,
					 (unsigned)l.py);
		if (k > 0 && (l.px != (prev.px + 1) / 2 ||
			      l.py != (prev.py + 1) / 2))
			return wtp__fail(p, WTP_ECORRUPT, "LOD %u: %u x %u pages, "
					 "LOD %u has %u x %u", (unsigned)k,
					 (unsigned)l.px, (unsigned)l.py,
					 (unsigned)k - 1, (unsigned)prev.px,
					 (unsigned)prev.py);
		if (!(l.dx > 0) || l.dx != p->dx0 * (double)(1u << k))
			return wtp__fail(p, WTP_ECORRUPT, "LOD %u: dx %g, "
					 "expected dx0 * 2^%u", (unsigned)k,
					 l.dx, (unsigned)k);
		if (!wtp__in_tables(p, l.vat_offset, (uint64_t)l.px * l.py,
				    12))
			return wtp__fail(p, WTP_ECORRUPT, "LOD %u: VAT at %llu "
					 "outside the tables", (unsigned)k,
					 (unsigned long long)l.vat_offset);
		if (l.first_page > p->n_pages ||
		    l.n_new_pages > p->n_pages - l.first_page)
			return wtp__fail(p, WTP_ECORRUPT, "LOD %u: pages "
					 "[%u, +%u) outside the directory",
					 (unsigned)k, (unsigned)l.first_page,
					 (unsigned)l.n_new_pages);
		prev = l;
	}
	return WTP_OK;
}

static int wtp__check_vats(wtp_pack *p)
{
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod l;
		wtp_lod_get(p, k, &l);
		uint64_t n = (uint64_t)l.px * l.py;
		const uint8_t *b = p->data + l.vat_offset;
		for (uint64_t i = 0; i < n; i++, b += 12) {
			wtp_vat_entry e;
			wtp__vat_decode(b, &e);
			int ok = e.state <= WTP_DATA && (b[1] & ~1u) == 0 &&
				 b[3] == 0;
			if (ok && e.state == WTP_DATA)
				ok = e.page < p->n_pages && e.material == 0;
			else if (ok)
				ok = e.page == WTP_NO_PAGE &&
				     (e.state == WTP_FLAT || e.material == 0);
			if (!ok)
				return wtp__fail(p, WTP_ECORRUPT, "LOD %u: VAT "
						 "entry %llu is malformed",
						 (unsigned)k,
						 (unsigned long long)i);
		}
	}
	return WTP_OK;
}

static int wtp__check_qt(wtp_pack *p)
{
	wtp_qt_level prev;
	memset(&prev, 0, sizeof prev);
	if (p->n_qt_levels < p->n_lods || p->n_qt_levels > 64)
		return wtp__fail(p, WTP_ECORRUPT, "%u quadtree levels for %u "
				 "LODs", (unsigned)p->n_qt_levels,
				 (unsigned)p->n_lods);
	for (uint32_t k = 0; k < p->n_qt_levels; k++) {
		wtp_qt_level q;
		wtp_qt_level_get(p, k, &q);
		uint32_t w, h;
		if (k < p->n_lods) {
			wtp_lod l;
			wtp_lod_get(p, k, &l);
			w = l.px;
			h = l.py;
		} else {
			w = (prev.w + 1) / 2;
			h = (prev.h + 1) / 2;
			if (prev.w == 1 && prev.h == 1)
				return wtp__fail(p, WTP_ECORRUPT, "quadtree "
						 "level %u above a 1x1 root",
						 (unsigned)k);
		}
		if (q.w != w || q.h != h)
			return wtp__fail(p, WTP_ECORRUPT, "quadtree level %u: %u x "
					 "%u nodes, expected %u x %u",
					 (unsigned)k, (unsigned)q.w,
					 (unsigned)q.h, (unsigned)w,
					 (unsigned)h);
		if (!wtp__in_tables(p, q.node_offset, (uint64_t)w * h, 12))
			return wtp__fail(p, WTP_ECORRUPT, "quadtree level %u "
					 "outside the tables", (unsigned)k);
		const uint8_t *b = p->data + q.node_offset;
		for (uint64_t i = 0; i < (uint64_t)w * h; i++, b += 12)
			if ((b[0] & ~1u) || b[1] || b[2] || b[3])
				return wtp__fail(p, WTP_ECORRUPT, "quadtree "
						 "level %u node %llu: reserved "
						 "bits set", (unsigned)k,
						 (unsigned long long)i);
		prev = q;
	}
	if (prev.w != 1 || prev.h != 1)
		return wtp__fail(p, WTP_ECORRUPT, "quadtree root level is %u x "
				 "%u, not 1 x 1", (unsigned)prev.w,
				 (unsigned)prev.h);
	return WTP_OK;
}

static int wtp__check_dir(wtp_pack *p)
{
	uint64_t end = p->data_offset;
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(p, i, &e);
		const uint8_t *b = p->data + p->page_dir_offset + 24u * i;
		if (b[21] || b[22] || b[23] || e.codec > WTP_CODEC_ZLIB_DELTA_SPLIT)
			return wtp__fail(p, WTP_ECORRUPT, "page %u: codec %u or "
					 "reserved bytes bad", (unsigned)i,
					 (unsigned)e.codec);
		if (e.raw_size != p->page_raw_size || e.stored_size == 0 ||
		    (e.codec == WTP_CODEC_RAW && e.stored_size != e.raw_size))
			return wtp__fail(p, WTP_ECORRUPT, "page %u: stored %u / raw "
					 "%u bytes, page is %u", (unsigned)i,
					 (unsigned)e.stored_size,
					 (unsigned)e.raw_size,
					 (unsigned)p->page_raw_size);
		if (e.offset < end || e.offset % p->alignment != 0 ||
		    e.offset > p->file_size ||
		    e.stored_size > p->file_size - e.offset)
			return wtp__fail(p, WTP_ECORRUPT, "page %u at %llu (+%u) "
					 "misplaced (previous end %llu, file "
					 "%llu)", (unsigned)i,
					 (unsigned long long)e.offset,
					 (unsigned)e.stored_size,
					 (unsigned long long)end,
					 (unsigned long long)p->file_size);
		end = e.offset + e.stored_size;
	}
	return WTP_OK;
}

int wtp_open(wtp_pack *p, const void *buf, size_t len, unsigned flags)
{
	const uint8_t *b = (const uint8_t *)buf;
	memset(p, 0, sizeof *p);
	p->data = b;
	p->size = len;
	if (len < WTP_HEADER_SIZE)
		return wtp__fail(p, WTP_ETRUNC, "truncated: %zu bytes, the "
				 "header alone is %d", len, WTP_HEADER_SIZE);
	if (memcmp(b, wtp__magic, 8) != 0)
		return wtp__fail(p, WTP_EMAGIC, "not a tile pack (bad magic)");
	p->version_major = wtp__u16(b + 8);
	p->version_minor = wtp__u16(b + 10);
	if (p->version_major != WTP_VERSION_MAJOR)
		return wtp__fail(p, WTP_EVERSION, "format version %u.%u, this "
				 "reader reads %d.x", (unsigned)p->version_major,
				 (unsigned)p->version_minor, WTP_VERSION_MAJOR);
	p->header_size = wtp__u32(b + 12);
	p->file_size = wtp__u64(b + 16);
	p->tables_size = wtp__u32(b + 24);
	p->tables_crc32 = wtp__u32(b + 28);
	if (p->header_size < WTP_HEADER_SIZE ||
	    p->tables_size < p->header_size)
		return wtp__fail(p, WTP_ECORRUPT, "header size %u / tables size "
				 "%u invalid", (unsigned)p->header_size,
				 (unsigned)p->tables_size);
	if (len < p->tables_size)
		return wtp__fail(p, WTP_ETRUNC, "truncated: %zu bytes, the tables "
				 "need %u", len, (unsigned)p->tables_size);
	if (!(flags & WTP_OPEN_NOCRC)) {
		uLong c = crc32(0L, Z_NULL, 0);
		static const uint8_t z4[4] = { 0, 0, 0, 0 };
		c = crc32(c, b, 28);
		c = crc32(c, z4, 4);
		c = crc32(c, b + 32, p->tables_size - 32);
		if ((uint32_t)c != p->tables_crc32)
			return wtp__fail(p, WTP_ECRC, "tables CRC mismatch "
					 "(stored %08x, computed %08x): header "
					 "or tables corrupt",
					 (unsigned)p->tables_crc32,
					 (unsigned)c);
	}
	p->origin[0] = wtp__f64(b + 32);
	p->origin[1] = wtp__f64(b + 40);
	p->dx0 = wtp__f64(b + 48);
	p->distance_max = wtp__f64(b + 56);
	p->page_interior = wtp__u16(b + 64);
	p->page_border = wtp__u16(b + 66);
	p->n_lods = wtp__u16(b + 68);
	p->n_layers = wtp__u16(b + 70);
	p->alignment = wtp__u32(b + 72);
	p->n_pages = wtp__u32(b + 76);
	p->n_qt_levels = wtp__u32(b + 80);
	p->page_raw_size = wtp__u32(b + 84);
	p->layer_table_offset = wtp__u32(b + 88);
	p->lod_table_offset = wtp__u32(b + 92);
	p->qt_level_table_offset = wtp__u32(b + 96);
	p->page_dir_offset = wtp__u32(b + 100);
	p->meta_offset = wtp__u32(b + 104);
	p->meta_size = wtp__u32(b + 108);
	p->data_offset = wtp__u64(b + 112);
	if (!wtp__zero(b + 120, 8))
		return wtp__fail(p, WTP_ECORRUPT, "reserved header bytes set");
	if (!(p->dx0 > 0 && p->dx0 < 1e30) ||
	    !(p->distance_max >= 0 && p->distance_max < 1e30) ||
	    p->origin[0] != p->origin[0] || p->origin[1] != p->origin[1])
		return wtp__fail(p, WTP_ECORRUPT, "bad dx0 / distance_max / "
				 "origin");
	if (p->page_interior != 128 || p->page_border != 1)
		return wtp__fail(p, WTP_ECORRUPT, "page interior %u border %u, "
				 "expected 128 and 1", (unsigned)p->page_interior,
				 (unsigned)p->page_border);
	p->page_side = p->page_interior + 2 * p->page_border;
	p->page_pixels = p->page_side * p->page_side;
	if (p->n_lods < 1 || p->n_lods > 32 || p->n_layers < 1 ||
	    p->n_layers > WTP_LAYER_COUNT)
		return wtp__fail(p, WTP_ECORRUPT, "%u LODs, %u layers",
				 (unsigned)p->n_lods, (unsigned)p->n_layers);
	if (p->alignment < 16 || p->alignment > (1u << 20) ||
	    (p->alignment & (p->alignment - 1)))
		return wtp__fail(p, WTP_ECORRUPT, "alignment %u",
				 (unsigned)p->alignment);
	uint64_t a = p->alignment;
	if (p->data_offset != (p->tables_size + a - 1) / a * a ||
	    p->file_size < p->data_offset || p->file_size % a != 0)
		return wtp__fail(p, WTP_ECORRUPT, "data offset %llu / file size "
				 "%llu inconsistent",
				 (unsigned long long)p->data_offset,
				 (unsigned long long)p->file_size);
	if (!wtp__in_tables(p, p->layer_table_offset, p->n_layers, 16) ||
	    !wtp__in_tables(p, p->lod_table_offset, p->n_lods, 48) ||
	    !wtp__in_tables(p, p->qt_level_table_offset, p->n_qt_levels, 16) ||
	    !wtp__in_tables(p, p->page_dir_offset, p->n_pages, 24) ||
	    !wtp__in_tables(p, p->meta_offset, p->meta_size, 1))
		return wtp__fail(p, WTP_ECORRUPT, "a table lies outside the "
				 "tables area");
	int rc;
	if ((rc = wtp__check_layers(p)) != WTP_OK ||
	    (rc = wtp__check_lods(p)) != WTP_OK ||
	    (rc = wtp__check_qt(p)) != WTP_OK ||
	    (rc = wtp__check_vats(p)) != WTP_OK ||
	    (rc = wtp__check_dir(p)) != WTP_OK ||
	    (rc = wtp__check_meta(p)) != WTP_OK)
		return rc;
	p->err[0] = 0;
	return WTP_OK;
}

static int wtp__inflate(wtp_pack *p, uint32_t page, const uint8_t *in,
			uint32_t n, uint8_t *out, uint32_t raw)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (inflateInit(&z) != Z_OK)
		return wtp__fail(p, WTP_EZLIB, "page %u: zlib init failed",
				 (unsigned)page);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = n;
	z.next_out = out;
	z.avail_out = raw;
	int zr = inflate(&z, Z_FINISH);
	uLong got = z.total_out;
	uInt left = z.avail_in;
	inflateEnd(&z);
	if (zr != Z_STREAM_END || got != raw || left != 0)
		return wtp__fail(p, WTP_ECORRUPT, "page %u: zlib stream bad "
				 "(%d, %lu of %u bytes, %u left)",
				 (unsigned)page, zr, (unsigned long)got,
				 (unsigned)raw, (unsigned)left);
	return WTP_OK;
}

int wtp_page_read(wtp_pack *p, uint32_t page, const void *stored,
		  size_t stored_len, void *raw, void *work)
{
	wtp_page_info_t e;
	int rc = wtp_page_info(p, page, &e);
	if (rc != WTP_OK)
		return rc;
	const uint8_t *in = (const uint8_t *)stored;
	if (!in) {
		if (e.offset > p->size || e.stored_size > p->size - e.offset)
			return wtp__fail(p, WTP_ETRUNC, "page %u at %llu (+%u) "
					 "is past the %zu bytes in memory",
					 (unsigned)page,
					 (unsigned long long)e.offset,
					 (unsigned)e.stored_size, p->size);
		in = p->data + e.offset;
	} else if (stored_len != e.stored_size) {
		return wtp__fail(p, WTP_EARG, "page %u: %zu bytes given, %u "
				 "stored", (unsigned)page, stored_len,
				 (unsigned)e.stored_size);
	}
	uint32_t c = wtp__crc(in, e.stored_size);
	if (c != e.crc32)
		return wtp__fail(p, WTP_ECRC, "page %u: CRC mismatch (stored "
				 "%08x, computed %08x)", (unsigned)page,
				 (unsigned)e.crc32, (unsigned)c);
	uint8_t *out = (uint8_t *)raw;
	switch (e.codec) {
	case WTP_CODEC_RAW:
		memcpy(out, in, e.raw_size);
		return WTP_OK;
	case WTP_CODEC_ZLIB:
		return wtp__inflate(p, page, in, e.stored_size, out,
				    e.raw_size);
	case WTP_CODEC_ZLIB_DELTA_SPLIT:
		break;
	default:
		return wtp__fail(p, WTP_ECORRUPT, "page %u: codec %u",
				 (unsigned)page, (unsigned)e.codec);
	}
	if (!work)
		return wtp__fail(p, WTP_EARG, "page %u: ZLIB_DELTA_SPLIT needs a work "
				 "buffer", (unsigned)page);
	uint8_t *w = (uint8_t *)work;
	rc = wtp__inflate(p, page, in, e.stored_size, w, e.raw_size);
	if (rc != WTP_OK)
		return rc;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		uint32_t cb = l.component_bytes;
		uint32_t n = l.plane_size / cb;
		const uint8_t *src = w + l.plane_offset;
		uint8_t *dst = out + l.plane_offset;
		/* undo the byte split and the row deltas (mod 2^(8 cb)) in one
		   pass; version 1 formats have cb = 1 or 2 (checked at open) */
		/* running sums per component (nc <= 2), restarted each row;
		   they start at 0, so the first pixel of a row is kept */
		uint32_t nc = l.components, row = p->page_side * nc;
		for (uint32_t k0 = 0; k0 < n; k0 += row) {
			unsigned acc[2] = { 0, 0 };
			for (uint32_t k = k0; k < k0 + row; k += nc)
				for (uint32_t q = 0; q < nc; q++) {
					if (cb == 1) {
						acc[q] += src[k + q];
						dst[k + q] = (uint8_t)acc[q];
						continue;
					}
					acc[q] += (unsigned)src[k + q] |
						  ((unsigned)src[n + k + q] << 8);
					dst[2 * (k + q)] = (uint8_t)acc[q];
					dst[2 * (k + q) + 1] = (uint8_t)(acc[q] >> 8);
				}
		}
	}
	return WTP_OK;
}

int wtp_verify(wtp_pack *p, void *raw, void *work)
{
	if (p->size != p->file_size)
		return wtp__fail(p, p->size < p->file_size ? WTP_ETRUNC
							   : WTP_ECORRUPT,
				 "file is %zu bytes, header says %llu", p->size,
				 (unsigned long long)p->file_size);
	/* Padding between the tables and the first page must be zero. */
	if (!wtp__zero(p->data + p->tables_size,
		       (size_t)(p->data_offset - p->tables_size)))
		return wtp__fail(p, WTP_ECORRUPT, "non-zero padding after the "
				 "tables");
	/* cheap checks first: padding, page CRCs; pages are decoded last */
	uint64_t end = p->data_offset;
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(p, i, &e);
		if (!wtp__zero(p->data + end, (size_t)(e.offset - end)))
			return wtp__fail(p, WTP_ECORRUPT, "non-zero padding "
					 "before page %u", (unsigned)i);
		end = e.offset + e.stored_size;
	}
	if (!wtp__zero(p->data + end, (size_t)(p->file_size - end)))
		return wtp__fail(p, WTP_ECORRUPT, "non-zero padding after the "
				 "last page");
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(p, i, &e);
		uint32_t c = wtp__crc(p->data + e.offset, e.stored_size);
		if (c != e.crc32)
			return wtp__fail(p, WTP_ECRC, "page %u: CRC mismatch "
					 "(stored %08x, computed %08x)",
					 (unsigned)i, (unsigned)e.crc32,
					 (unsigned)c);
	}
	/* Pages by LOD: contiguous ranges, coarsest first. 'work' (now free)
	   holds one bit per page: referenced by some VAT entry. */
	uint8_t *seen = (uint8_t *)work;
	int track = p->n_pages <= 8ull * p->page_raw_size;
	if (track)
		memset(seen, 0, (p->n_pages + 7) / 8);
	uint32_t next = 0;
	for (uint32_t k = p->n_lods; k-- > 0;) {
		wtp_lod l;
		wtp_lod_get(p, k, &l);
		if (l.first_page != next)
			return wtp__fail(p, WTP_ECORRUPT, "LOD %u: first page %u, "
					 "expected %u", (unsigned)k,
					 (unsigned)l.first_page, (unsigned)next);
		next += l.n_new_pages;
		uint32_t nf = 0, nd = 0;
		for (uint32_t y = 0; y < l.py; y++)
			for (uint32_t x = 0; x < l.px; x++) {
				wtp_vat_entry v;
				wtp_vat(p, k, x, y, &v);
				nf += v.state == WTP_FLAT;
				nd += v.state == WTP_DATA;
				if (track && v.state == WTP_DATA &&
				    v.page < p->n_pages)
					seen[v.page / 8] |=
						(uint8_t)(1u << (v.page % 8));
				if (v.state == WTP_DATA && v.page >= next)
					return wtp__fail(p, WTP_ECORRUPT, "LOD "
							 "%u page (%u, %u) "
							 "points to page %u of "
							 "a finer LOD",
							 (unsigned)k,
							 (unsigned)x,
							 (unsigned)y,
							 (unsigned)v.page);
				if (v.state == WTP_EMPTY &&
				    (v.has_water ||
				     v.height != WTP_DRY_HEIGHT))
					return wtp__fail(p, WTP_ECORRUPT, "LOD "
							 "%u page (%u, %u): "
							 "EMPTY with water",
							 (unsigned)k,
							 (unsigned)x,
							 (unsigned)y);
			}
		if (nf != l.n_flat || nd != l.n_data)
			return wtp__fail(p, WTP_ECORRUPT, "LOD %u: %u FLAT / %u "
					 "DATA entries, table says %u / %u",
					 (unsigned)k, (unsigned)nf,
					 (unsigned)nd, (unsigned)l.n_flat,
					 (unsigned)l.n_data);
	}
	if (next != p->n_pages)
		return wtp__fail(p, WTP_ECORRUPT, "LODs introduce %u pages, "
				 "directory has %u", (unsigned)next,
				 (unsigned)p->n_pages);
	for (uint32_t i = 0; track && i < p->n_pages; i++)
		if (!(seen[i / 8] >> (i % 8) & 1u))
			return wtp__fail(p, WTP_ECORRUPT, "page %u is not "
					 "referenced by any VAT entry",
					 (unsigned)i);
	for (uint32_t i = 0; i < p->n_pages; i++) {
		int rc = wtp_page_read(p, i, NULL, 0, raw, work);
		if (rc != WTP_OK)
			return rc;
	}
	p->err[0] = 0;
	return WTP_OK;
}

float wtp_half_to_float(uint16_t h)
{
	uint32_t s = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
	if (e == 0) {
		/* zero or subnormal: m * 2^-24, exact in float */
		float f = (float)m * (1.0f / 16777216.0f);
		return (h & 0x8000u) ? -f : f;
	}
	if (e == 31)
		u = s | 0x7f800000u | (m << 13);
	else
		u = s | ((e + 112u) << 23) | (m << 13);
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float wtp_pixel(const wtp_layer *l, const void *raw, uint32_t i,
		uint32_t component, float base)
{
	const uint8_t *b = (const uint8_t *)raw + l->plane_offset +
			   ((size_t)i * l->components + component) *
				   l->component_bytes;
	switch (l->format) {
	case WTP_FMT_R16F:
	case WTP_FMT_RG16F: {
		uint16_t h = wtp__u16(b);
		if (!(l->flags & WTP_LAYER_RELATIVE))
			return wtp_half_to_float(h);
		if (h == WTP_DRY_HALF)
			return WTP_DRY_HEIGHT;
		return base + wtp_half_to_float(h);
	}
	case WTP_FMT_R8_UINT:
		return (float)b[0];
	case WTP_FMT_R8_UNORM:
		return (float)b[0] / 255.0f;
	default:
		return 0.0f;
	}
}

const char *wtp_layer_name(uint32_t id)
{
	static const char *const names[WTP_LAYER_COUNT] = {
		"height", "flow", "material", "distance", "foam"
	};
	return id < WTP_LAYER_COUNT ? names[id] : "?";
}

const char *wtp_format_name(uint32_t format)
{
	static const char *const names[5] = { "?", "R16F", "RG16F", "R8_UINT",
					      "R8_UNORM" };
	return format < 5 ? names[format] : "?";
}

#endif /* WTP_IMPLEMENTATION_DONE */
#endif /* WTP_IMPLEMENTATION */
