/*
 * wtp.h - reader for wbake tile packs (.wtp), version 2.x.
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
 *     wtp_error err;
 *     if (wtp_open(&p, buf, len, 0, &err) != WTP_OK) puts(err.msg);
 *     wtp_location at;                       // world -> page, texel
 *     wtp_locate(&p, lod, wx, wy, &at, NULL);
 *     wtp_vat_entry e;
 *     wtp_vat(&p, lod, at.x, at.y, &e, NULL); // O(1)
 *     wtp_plane_dst dst[WTP_LAYER_COUNT];     // one slice per layer
 *     ...point dst[i].data / row_pitch at the upload buffer...
 *     if (e.state == WTP_DATA)
 *         wtp_page_decode(&p, e.page, NULL, 0, dst, work, &alloc, &err);
 *     else
 *         wtp_page_expand(&p, &e, dst, &err); // FLAT / EMPTY
 *
 * wtp_open() needs at least the tables in memory (the first tables_size
 * bytes: read WTP_HEADER_SIZE bytes, call wtp_tables_size(), read that
 * many); it checks the tables' CRC and every bound, so a truncated or
 * corrupt pack is rejected and never read out of bounds. With the whole
 * file in memory (len >= file_size), the page readers find payloads
 * themselves and wtp_verify() checks every byte; with the tables only,
 * read a page's stored bytes yourself (wtp_page_info() gives offset and
 * size) and pass them in.
 *
 * Versions: this reader reads format 2.x and refuses 1.x (WTP_EVERSION,
 * "re-bake"): version 1 heights are not seam-exact (docs/wtp-format.md,
 * "Changes"). 2.1 adds block-compressed layers (section 4.1: flow
 * BC5_SNORM, distance BC4_SNORM, foam BC4_UNORM, each with per-page
 * scales): wtp_page_decode_ex() writes their raw 4x4 blocks (33 block
 * rows, wtp_plane_rows()) for a direct upload and returns the scales;
 * wtp_bc_decode() decodes them to floats on the CPU.
 *
 * Memory: wtp_pack holds pointers into the caller's buffer, which must
 * outlive it. The reader allocates nothing but zlib's inflate state
 * (one block of about 7 KiB: 7,160 bytes with the zlib of Debian 12,
 * measured by tests/test_pack_api.c) inside each decode of a zlib page,
 * through the
 * wtp_allocator given to wtp_page_decode() (NULL: zlib's default,
 * malloc). Decoding a zlib page needs a caller 'work' buffer of
 * page_raw_size bytes.
 *
 * Errors: functions return WTP_OK (0) or a negative WTP_E* code; those
 * taking a wtp_error * (may be NULL) also write a one-line message there.
 *
 * Thread safety: wtp_open() fills the struct; every other function takes
 * a const wtp_pack * and writes only to its arguments, so any number of
 * threads may read one opened pack at once (each with its own wtp_error,
 * work buffer and destinations).
 */
#ifndef WTP_H
#define WTP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WTP_HEADER_SIZE 128
#define WTP_VERSION_MAJOR 2
#define WTP_VERSION_MINOR 1
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
	WTP_EZLIB = -7     /* zlib failed (out of memory) */
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
	WTP_FMT_R8_UNORM = 4,
	/* 2.1: block-compressed planes (section 4.1): a 16-byte scale
	   header, then 33 x 33 4x4 blocks of the page padded to 132 x 132 */
	WTP_FMT_BC5_SNORM = 5, /* flow: u, v = scale[c] * snorm */
	WTP_FMT_BC4_UNORM = 6, /* foam = scale[0] * unorm */
	WTP_FMT_BC4_SNORM = 7, /* distance = scale[0] * snorm */
	WTP_FMT_COUNT = 8
};
#define WTP_BC_HEADER 16   /* bytes of a BC plane's scale header */
#define WTP_BC_BLOCKS 33   /* 4x4 blocks per side of a 130-pixel page */
enum { WTP_CODEC_RAW = 0, WTP_CODEC_ZLIB = 1, WTP_CODEC_ZLIB_DELTA_SPLIT = 2 };
enum {
	WTP_META_SCENE_NAME = 1, WTP_META_TOOL = 2, WTP_META_SOLVER = 3,
	WTP_META_UNITS = 4, WTP_META_SCENE_SHA256 = 5,
	WTP_META_HEIGHTMAP_SHA256 = 6, WTP_META_MATERIAL = 16
};
#define WTP_LAYER_RELATIVE 1u /* layer flag: relative to the VAT height */

typedef struct {
	int code;       /* the WTP_E* code returned */
	char msg[160];  /* one line, NUL-terminated */
} wtp_error;

/* Allocator for zlib's inflate state: alloc(user, n) returns n bytes
 * (NULL when out of memory), free(user, ptr) releases them. */
typedef struct {
	void *(*alloc)(void *user, size_t n);
	void (*free)(void *user, void *ptr);
	void *user;
} wtp_allocator;

typedef struct {
	uint8_t id, format, component_bytes, components;
	uint32_t flags, plane_offset, plane_size;
} wtp_layer;

typedef struct {
	uint32_t nx, ny, px, py;
	double dx;
	uint64_t vat_offset;
	uint32_t n_flat, n_data, first_page, n_new_pages;
	double height_step; /* the largest page step of the LOD (m) */
} wtp_lod;

typedef struct {
	uint8_t state, has_water, material;
	int8_t step_log2; /* FLAT / DATA: the page's height step is
			     2^step_log2 m (decoded heights are multiples
			     of it, error <= step / 2); EMPTY: 0 */
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
	uint64_t hash;  /* FNV-1a 64 of the decoded bytes (wtp_hash64) */
} wtp_page_info_t;

typedef struct {
	uint32_t id, kind;
	double amplitude, frequency, speed;
	const char *name; /* not NUL-terminated: name_len bytes */
	uint32_t name_len;
} wtp_material;

/* Where one layer of a page goes: 130 rows of row_pitch bytes (>= 130 *
 * bytes per pixel), e.g. 256-byte aligned rows of a D3D12 upload buffer.
 * data NULL: skip the layer. Index i is layer i of the layer table. */
typedef struct {
	void *data;
	size_t row_pitch;
} wtp_plane_dst;

/* A world position in a LOD: page (x, y), texel coordinates (tx, ty) in
 * the stored 130x130 page (pixel centres at k + 0.5; the interior spans
 * [1, 129)), normalised (u, v) = (tx, ty) / 130 for a sampler over the
 * page's slice; inside = 0 past the LOD's pixel extent (dry there). */
typedef struct {
	uint32_t lod, x, y;
	float tx, ty, u, v;
	int inside;
} wtp_location;

/* GPU description of a layer format: bytes per pixel, components, and
 * the DXGI_FORMAT and VkFormat enum values to create a pool with. */
typedef struct {
	uint32_t bytes_per_pixel, components, dxgi_format, vk_format;
	uint32_t block_bytes; /* BC formats: bytes per 4x4 block (8 BC4, 16
				 BC5) and bytes_per_pixel 0; else 0 */
} wtp_format_desc;

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
} wtp_pack;

/* From the first WTP_HEADER_SIZE bytes: how many bytes wtp_open() needs
 * (tables_size), or 0 when buf is not a tile pack header. */
uint32_t wtp_tables_size(const void *buf, size_t len);
/* Open from memory (len >= tables_size; the whole file for page reads
 * without explicit payloads and for wtp_verify). Checks the CRC of the
 * tables and every structural rule. */
int wtp_open(wtp_pack *p, const void *buf, size_t len, unsigned flags,
	     wtp_error *err);

int wtp_layer_get(const wtp_pack *p, uint32_t i, wtp_layer *out);
/* Index of the layer with 'id' in the layer table, or -1. */
int wtp_layer_find(const wtp_pack *p, uint32_t id);
int wtp_lod_get(const wtp_pack *p, uint32_t lod, wtp_lod *out);
/* O(1): VAT entry of page (x, y) of 'lod'. */
int wtp_vat(const wtp_pack *p, uint32_t lod, uint32_t x, uint32_t y,
	    wtp_vat_entry *out, wtp_error *err);
int wtp_qt_level_get(const wtp_pack *p, uint32_t level, wtp_qt_level *out);
int wtp_qt_node_get(const wtp_pack *p, uint32_t level, uint32_t x,
		    uint32_t y, wtp_qt_node *out, wtp_error *err);
int wtp_page_info(const wtp_pack *p, uint32_t page, wtp_page_info_t *out,
		  wtp_error *err);
/* World position (m) to page and texel of 'lod' (docs section 11). */
int wtp_locate(const wtp_pack *p, uint32_t lod, double wx, double wy,
	       wtp_location *out, wtp_error *err);
/* Decode page 'page' into the layer destinations dst[0..n_layers).
 * 'stored' holds its stored_size payload bytes, or is NULL to take them
 * from the buffer given to wtp_open (which must then hold them). 'work'
 * is page_raw_size bytes of scratch (zlib codecs; may be NULL for RAW).
 * za: allocator for zlib (NULL: zlib's default). */
int wtp_page_decode(const wtp_pack *p, uint32_t page, const void *stored,
		    size_t stored_len, const wtp_plane_dst *dst, void *work,
		    const wtp_allocator *za, wtp_error *err);
/* wtp_page_decode plus the page's scales of its BC layers (section
 * 4.1): scale[2*i + c] for channel c of layer i (NULL: not wanted; 1 for
 * layers that are not block-compressed). A BC layer's destination
 * receives its WTP_BC_BLOCKS block rows (raw BC4 / BC5 blocks for a
 * direct upload into a 132x132 slice), each row_pitch bytes apart
 * (row_pitch >= 33 * block bytes); decoded value = scale * the texel the
 * GPU samples (UNORM [0, 1] or SNORM [-1, 1]). */
int wtp_page_decode_ex(const wtp_pack *p, uint32_t page, const void *stored,
		       size_t stored_len, const wtp_plane_dst *dst,
		       float *scale, void *work, const wtp_allocator *za,
		       wtp_error *err);
/* The same into one page_raw_size buffer, planes packed (section 4). */
int wtp_page_read(const wtp_pack *p, uint32_t page, const void *stored,
		  size_t stored_len, void *raw, void *work, wtp_error *err);
/* Fill the destinations of a FLAT or EMPTY entry with exactly the texels
 * a DATA page of the same content would decode to (section 6): height
 * relative 0 (FLAT, base = e->height) or dry, flow +0, material, distance
 * f16(+-distance_max), foam 0. */
int wtp_page_expand(const wtp_pack *p, const wtp_vat_entry *e,
		    const wtp_plane_dst *dst, wtp_error *err);
/* wtp_page_expand plus the scales of BC layers (as wtp_page_decode_ex:
 * 0 for flow and foam, (float)distance_max for distance). */
int wtp_page_expand_ex(const wtp_pack *p, const wtp_vat_entry *e,
		       const wtp_plane_dst *dst, float *scale,
		       wtp_error *err);
/* The same into one page_raw_size buffer, planes packed as
 * wtp_page_read() writes them (BC planes with their scale header). */
int wtp_page_expand_read(const wtp_pack *p, const wtp_vat_entry *e,
			 void *raw, wtp_error *err);
/* Upload geometry of layer l's destination: *rows rows (130, or 33
 * block rows for BC formats) of *row_bytes bytes (the least row pitch). */
int wtp_plane_rows(const wtp_pack *p, const wtp_layer *l, uint32_t *rows,
		   uint32_t *row_bytes);
/* Software decoder of a BC plane (for engines without BC and for
 * tests): 'blocks' holds 33 block rows 'block_pitch' bytes apart (as
 * wtp_page_decode_ex writes them), scale the layer's scale[0..comps);
 * writes 130 rows of 130 * components floats (decoded values: m/s, m,
 * foam), 'out_pitch' bytes apart. WTP_EARG for a format that is not BC. */
int wtp_bc_decode(uint32_t format, const void *blocks, size_t block_pitch,
		  const float *scale, float *out, size_t out_pitch);
/* dst[i] for the packed planes of a page_raw_size buffer 'raw' (BC
 * layers: the blocks after the plane's scale header). */
int wtp_layer_dst(const wtp_pack *p, void *raw, wtp_plane_dst *dst);
/* The n-th (0-based) metadata record with 'tag': value and length. */
int wtp_meta_find(const wtp_pack *p, uint32_t tag, uint32_t n,
		  const void **value, uint32_t *len, wtp_error *err);
uint32_t wtp_material_count(const wtp_pack *p);
/* i-th material record (walks the metadata: O(records)). */
int wtp_material_get(const wtp_pack *p, uint32_t i, wtp_material *out,
		     wtp_error *err);
/* Iterate the material records in O(1) each: start with *pos = 0;
 * returns 1 and the next record, 0 at the end. */
int wtp_material_next(const wtp_pack *p, uint32_t *pos, wtp_material *out);
/* "river", "lake", "ocean" or "?". */
const char *wtp_material_kind_name(uint32_t kind);
/* Everything of docs/wtp-format.md section 12; needs the whole file in
 * the buffer (len == file_size) and two page_raw_size buffers (work also
 * serves as a bitmap of referenced pages, checked when n_pages <=
 * 8 * page_raw_size). */
int wtp_verify(const wtp_pack *p, void *raw, void *work, wtp_error *err);

/* Bytes per pixel, components, DXGI and Vulkan values of a format. */
int wtp_format_info(uint32_t format, wtp_format_desc *out);
/* FNV-1a 64-bit hash (the page hash of section 8). */
uint64_t wtp_hash64(const void *data, size_t n);
/* binary16 bits to float (exact). */
float wtp_half_to_float(uint16_t h);
/* float to binary16 bits, round to nearest even (as the writer). */
uint16_t wtp_float_to_half(float f);
/* Pixel i of a decoded page's plane as float: converts by the layer's
 * format (BC formats: decodes the texel from its block and multiplies by
 * the plane's scale, section 4.1); for the relative height layer adds
 * 'base' (the VAT height) to wet values and returns WTP_DRY_HEIGHT for
 * dry ones. */
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

static int wtp__fail(wtp_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		err->code = code;
	}
	return code;
}

/* 2^e as a double, e in [-1022, 1023] (no libm) */
static double wtp__pow2(int e)
{
	uint64_t u = (uint64_t)(e + 1023) << 52;
	double d;
	memcpy(&d, &u, 8);
	return d;
}
/* 1 when d is a positive normal power of two */
static int wtp__is_pow2(double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	return d > 0 && (u & 0xFFFFFFFFFFFFFull) == 0 && (u >> 52) != 0;
}
/* 1 when v is an integer multiple of st (a power of two) */
static int wtp__multiple(double v, double st)
{
	double t = v / st;
	return t > -4e18 && t < 4e18 && t == (double)(int64_t)t;
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

/* component bytes, components of each format (BC: 1 byte per endpoint) */
static const uint8_t wtp__fmt_bytes[WTP_FMT_COUNT][2] = {
	{ 0, 0 }, { 2, 1 }, { 2, 2 }, { 1, 1 }, { 1, 1 }, { 1, 2 }, { 1, 1 },
	{ 1, 1 }
};
/* formats each layer id may have: the 2.0 one, and since 2.1 the BC one */
static const uint8_t wtp__layer_fmt[WTP_LAYER_COUNT][2] = {
	{ WTP_FMT_R16F, WTP_FMT_R16F }, { WTP_FMT_RG16F, WTP_FMT_BC5_SNORM },
	{ WTP_FMT_R8_UINT, WTP_FMT_R8_UINT },
	{ WTP_FMT_R16F, WTP_FMT_BC4_SNORM },
	{ WTP_FMT_R8_UNORM, WTP_FMT_BC4_UNORM }
};

static int wtp__is_bc(uint32_t f)
{
	return f >= WTP_FMT_BC5_SNORM && f <= WTP_FMT_BC4_SNORM;
}
static uint32_t wtp__bc_block(uint32_t f)
{
	return f == WTP_FMT_BC5_SNORM ? 16u : 8u;
}
/* rows of a plane's destination (130, or 33 block rows) and their bytes */
static uint32_t wtp__rows(const wtp_pack *p, const wtp_layer *l)
{
	return wtp__is_bc(l->format) ? WTP_BC_BLOCKS : p->page_side;
}
static uint32_t wtp__row_bytes(const wtp_pack *p, const wtp_layer *l)
{
	return wtp__is_bc(l->format)
		       ? WTP_BC_BLOCKS * wtp__bc_block(l->format)
		       : p->page_side * l->components * l->component_bytes;
}
/* bytes of the plane in a decoded page (section 4 / 4.1) */
static uint32_t wtp__plane_bytes(const wtp_pack *p, const wtp_layer *l)
{
	return wtp__is_bc(l->format)
		       ? WTP_BC_HEADER + wtp__rows(p, l) * wtp__row_bytes(p, l)
		       : p->page_pixels * l->components * l->component_bytes;
}

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
	const uint8_t *b = p->data + p->lod_table_offset + 64u * lod;
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
	out->height_step = wtp__f64(b + 48);
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
	out->step_log2 = (int8_t)(b[3] < 128 ? (int)b[3] : (int)b[3] - 256);
	out->height = wtp__f32(b + 4);
	out->page = wtp__u32(b + 8);
}

int wtp_vat(const wtp_pack *p, uint32_t lod, uint32_t x, uint32_t y,
	    wtp_vat_entry *out, wtp_error *err)
{
	wtp_lod l;
	if (wtp_lod_get(p, lod, &l) != WTP_OK)
		return wtp__fail(err, WTP_EARG, "no LOD %u", (unsigned)lod);
	if (x >= l.px || y >= l.py)
		return wtp__fail(err, WTP_EARG, "page (%u, %u) outside LOD %u "
				 "(%u x %u pages)", (unsigned)x, (unsigned)y,
				 (unsigned)lod, (unsigned)l.px,
				 (unsigned)l.py);
	wtp__vat_decode(p->data + l.vat_offset +
				12u * ((uint64_t)x + (uint64_t)y * l.px),
			out);
	return WTP_OK;
}

int wtp_qt_node_get(const wtp_pack *p, uint32_t level, uint32_t x,
		    uint32_t y, wtp_qt_node *out, wtp_error *err)
{
	wtp_qt_level q;
	if (wtp_qt_level_get(p, level, &q) != WTP_OK || x >= q.w || y >= q.h)
		return wtp__fail(err, WTP_EARG, "no quadtree node (%u, %u) at "
				 "level %u", (unsigned)x, (unsigned)y,
				 (unsigned)level);
	const uint8_t *b =
		p->data + q.node_offset + 12u * ((uint64_t)x + (uint64_t)y * q.w);
	out->has_water = (uint8_t)(b[0] & 1u);
	out->hmin = wtp__f32(b + 4);
	out->hmax = wtp__f32(b + 8);
	return WTP_OK;
}

int wtp_page_info(const wtp_pack *p, uint32_t page, wtp_page_info_t *out,
		  wtp_error *err)
{
	if (page >= p->n_pages)
		return wtp__fail(err, WTP_EARG, "no page %u (pack has %u)",
				 (unsigned)page, (unsigned)p->n_pages);
	const uint8_t *b = p->data + p->page_dir_offset + 32u * page;
	out->offset = wtp__u64(b);
	out->stored_size = wtp__u32(b + 8);
	out->raw_size = wtp__u32(b + 12);
	out->crc32 = wtp__u32(b + 16);
	out->codec = b[20];
	out->hash = wtp__u64(b + 24);
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

static int wtp__check_meta(const wtp_pack *p, wtp_error *err)
{
	uint32_t pos = 0;
	while (pos < p->meta_size) {
		if (p->meta_size - pos < 8)
			return wtp__fail(err, WTP_ECORRUPT, "metadata record at "
					 "%u truncated", (unsigned)pos);
		const uint8_t *b = p->data + p->meta_offset + pos;
		uint32_t len = wtp__u32(b + 4);
		uint32_t tag = wtp__u16(b);
		if (wtp__u16(b + 2) != 0)
			return wtp__fail(err, WTP_ECORRUPT, "metadata record at "
					 "%u: reserved field not zero",
					 (unsigned)pos);
		uint32_t room = p->meta_size - pos - 8;
		if (len > room || ((len + 3u) & ~3u) > room)
			return wtp__fail(err, WTP_ECORRUPT, "metadata record at "
					 "%u: length %u past the end",
					 (unsigned)pos, (unsigned)len);
		if (!wtp__zero(b + 8 + len, ((len + 3u) & ~3u) - len))
			return wtp__fail(err, WTP_ECORRUPT, "metadata record at "
					 "%u: padding not zero", (unsigned)pos);
		if (tag == WTP_META_MATERIAL && len < 32)
			return wtp__fail(err, WTP_ECORRUPT, "material record at "
					 "%u: %u bytes, need >= 32",
					 (unsigned)pos, (unsigned)len);
		if (tag == WTP_META_MATERIAL &&
		    (wtp__u32(b + 8) < 1 || wtp__u32(b + 8) > 255))
			return wtp__fail(err, WTP_ECORRUPT, "material record at "
					 "%u: id %u outside 1..255",
					 (unsigned)pos,
					 (unsigned)wtp__u32(b + 8));
		if ((tag == WTP_META_SCENE_SHA256 ||
		     tag == WTP_META_HEIGHTMAP_SHA256) && len != 32)
			return wtp__fail(err, WTP_ECORRUPT, "hash record at %u: "
					 "%u bytes, need 32", (unsigned)pos,
					 (unsigned)len);
		pos += 8u + ((len + 3u) & ~3u);
	}
	return WTP_OK;
}

int wtp_meta_find(const wtp_pack *p, uint32_t tag, uint32_t n,
		  const void **value, uint32_t *len, wtp_error *err)
{
	uint32_t pos = 0, t, l, seen = 0;
	const uint8_t *v;
	while (wtp__meta_next(p, &pos, &t, &v, &l))
		if (t == tag && seen++ == n) {
			*value = v;
			*len = l;
			return WTP_OK;
		}
	return wtp__fail(err, WTP_EARG, "no metadata record %u #%u",
			 (unsigned)tag, (unsigned)n);
}

int wtp_material_next(const wtp_pack *p, uint32_t *pos, wtp_material *out)
{
	uint32_t t, l;
	const uint8_t *b;
	while (wtp__meta_next(p, pos, &t, &b, &l)) {
		if (t != WTP_META_MATERIAL)
			continue;
		out->id = wtp__u32(b);
		out->kind = wtp__u32(b + 4);
		out->amplitude = wtp__f64(b + 8);
		out->frequency = wtp__f64(b + 16);
		out->speed = wtp__f64(b + 24);
		out->name = (const char *)(b + 32);
		out->name_len = l - 32;
		return 1;
	}
	return 0;
}

const char *wtp_material_kind_name(uint32_t kind)
{
	static const char *const names[3] = { "river", "lake", "ocean" };
	return kind < 3 ? names[kind] : "?";
}

uint32_t wtp_material_count(const wtp_pack *p)
{
	uint32_t pos = 0, t, l, n = 0;
	const uint8_t *v;
	while (wtp__meta_next(p, &pos, &t, &v, &l))
		n += t == WTP_META_MATERIAL;
	return n;
}

int wtp_material_get(const wtp_pack *p, uint32_t i, wtp_material *out,
		     wtp_error *err)
{
	const void *v;
	uint32_t len;
	int rc = wtp_meta_find(p, WTP_META_MATERIAL, i, &v, &len, err);
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

static int wtp__check_layers(const wtp_pack *p, wtp_error *err)
{
	uint32_t off = 0;
	int last = -1;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		const uint8_t *b = p->data + p->layer_table_offset + 16u * i;
		if (l.id >= WTP_LAYER_COUNT || (int)l.id <= last)
			return wtp__fail(err, WTP_ECORRUPT, "layer %u: id %u "
					 "unknown or out of order", (unsigned)i,
					 (unsigned)l.id);
		last = l.id;
		if ((l.format != wtp__layer_fmt[l.id][0] &&
		     l.format != wtp__layer_fmt[l.id][1]) ||
		    l.component_bytes != wtp__fmt_bytes[l.format][0] ||
		    l.components != wtp__fmt_bytes[l.format][1])
			return wtp__fail(err, WTP_ECORRUPT, "layer %u (%s): format "
					 "%u / %u x %u bytes not allowed",
					 (unsigned)i, wtp_layer_name(l.id),
					 (unsigned)l.format,
					 (unsigned)l.components,
					 (unsigned)l.component_bytes);
		if (l.flags != (l.id == WTP_LAYER_HEIGHT ? WTP_LAYER_RELATIVE
							 : 0u))
			return wtp__fail(err, WTP_ECORRUPT, "layer %u: flags 0x%x "
					 "not allowed", (unsigned)i,
					 (unsigned)l.flags);
		(void)b;
		uint32_t size = wtp__plane_bytes(p, &l);
		if (l.plane_offset != off || l.plane_size != size)
			return wtp__fail(err, WTP_ECORRUPT, "layer %u: plane at %u "
					 "size %u, expected %u size %u",
					 (unsigned)i, (unsigned)l.plane_offset,
					 (unsigned)l.plane_size, (unsigned)off,
					 (unsigned)size);
		off += size;
	}
	if (wtp_layer_find(p, WTP_LAYER_HEIGHT) != 0)
		return wtp__fail(err, WTP_ECORRUPT, "no height layer");
	if (off != p->page_raw_size)
		return wtp__fail(err, WTP_ECORRUPT, "page_raw_size %u, layers "
				 "sum to %u", (unsigned)p->page_raw_size,
				 (unsigned)off);
	return WTP_OK;
}

static int wtp__check_lods(const wtp_pack *p, wtp_error *err)
{
	wtp_lod prev;
	memset(&prev, 0, sizeof prev);
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod l;
		wtp_lod_get(p, k, &l);
		if (l.nx == 0 || l.ny == 0 || l.px == 0 || l.py == 0 ||
		    l.px != (l.nx - 1) / p->page_interior + 1 ||
		    l.py != (l.ny - 1) / p->page_interior + 1)
			return wtp__fail(err, WTP_ECORRUPT, "LOD %u: %u x %u px in "
					 "%u x %u pages is inconsistent",
					 (unsigned)k, (unsigned)l.nx,
					 (unsigned)l.ny, (unsigned)l.px,
					 (unsigned)l.py);
		if (k > 0 && (l.px != (prev.px + 1) / 2 ||
			      l.py != (prev.py + 1) / 2))
			return wtp__fail(err, WTP_ECORRUPT, "LOD %u: %u x %u pages, "
					 "LOD %u has %u x %u", (unsigned)k,
					 (unsigned)l.px, (unsigned)l.py,
					 (unsigned)k - 1, (unsigned)prev.px,
					 (unsigned)prev.py);
		if (!(l.dx > 0) || l.dx != p->dx0 * (double)(1u << k))
			return wtp__fail(err, WTP_ECORRUPT, "LOD %u: dx %g, "
					 "expected dx0 * 2^%u", (unsigned)k,
					 l.dx, (unsigned)k);
		if (!wtp__in_tables(p, l.vat_offset, (uint64_t)l.px * l.py,
				    12))
			return wtp__fail(err, WTP_ECORRUPT, "LOD %u: VAT at %llu "
					 "outside the tables", (unsigned)k,
					 (unsigned long long)l.vat_offset);
		{
			const uint8_t *lb =
				p->data + p->lod_table_offset + 64u * k;
			double st = l.height_step;
			/* a power of two in [2^-24, 32] (section 4) */
			if (!(st >= wtp__pow2(-24) && st <= 32.0) ||
			    !wtp__is_pow2(st) || !wtp__zero(lb + 56, 8))
				return wtp__fail(err, WTP_ECORRUPT, "LOD %u: "
						 "height step %g is not a "
						 "power of two in [2^-24, "
						 "32] or reserved bytes "
						 "set", (unsigned)k, st);
		}
		if (l.first_page > p->n_pages ||
		    l.n_new_pages > p->n_pages - l.first_page)
			return wtp__fail(err, WTP_ECORRUPT, "LOD %u: pages "
					 "[%u, +%u) outside the directory",
					 (unsigned)k, (unsigned)l.first_page,
					 (unsigned)l.n_new_pages);
		prev = l;
	}
	return WTP_OK;
}

static int wtp__check_vats(const wtp_pack *p, wtp_error *err)
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
				 (e.state == WTP_EMPTY
					  ? b[3] == 0
					  : e.step_log2 >= -24 &&
						    e.step_log2 <= 5);
			if (ok && e.state == WTP_DATA)
				ok = e.page < p->n_pages && e.material == 0;
			else if (ok)
				ok = e.page == WTP_NO_PAGE &&
				     (e.state == WTP_FLAT || e.material == 0);
			if (!ok)
				return wtp__fail(err, WTP_ECORRUPT, "LOD %u: VAT "
						 "entry %llu is malformed",
						 (unsigned)k,
						 (unsigned long long)i);
		}
	}
	return WTP_OK;
}

static int wtp__check_qt(const wtp_pack *p, wtp_error *err)
{
	wtp_qt_level prev;
	memset(&prev, 0, sizeof prev);
	if (p->n_qt_levels < p->n_lods || p->n_qt_levels > 64)
		return wtp__fail(err, WTP_ECORRUPT, "%u quadtree levels for %u "
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
				return wtp__fail(err, WTP_ECORRUPT, "quadtree "
						 "level %u above a 1x1 root",
						 (unsigned)k);
		}
		if (q.w != w || q.h != h)
			return wtp__fail(err, WTP_ECORRUPT, "quadtree level %u: %u x "
					 "%u nodes, expected %u x %u",
					 (unsigned)k, (unsigned)q.w,
					 (unsigned)q.h, (unsigned)w,
					 (unsigned)h);
		if (!wtp__in_tables(p, q.node_offset, (uint64_t)w * h, 12))
			return wtp__fail(err, WTP_ECORRUPT, "quadtree level %u "
					 "outside the tables", (unsigned)k);
		const uint8_t *b = p->data + q.node_offset;
		for (uint64_t i = 0; i < (uint64_t)w * h; i++, b += 12)
			if ((b[0] & ~1u) || b[1] || b[2] || b[3])
				return wtp__fail(err, WTP_ECORRUPT, "quadtree "
						 "level %u node %llu: reserved "
						 "bits set", (unsigned)k,
						 (unsigned long long)i);
		prev = q;
	}
	if (prev.w != 1 || prev.h != 1)
		return wtp__fail(err, WTP_ECORRUPT, "quadtree root level is %u x "
				 "%u, not 1 x 1", (unsigned)prev.w,
				 (unsigned)prev.h);
	return WTP_OK;
}

static int wtp__check_dir(const wtp_pack *p, wtp_error *err)
{
	uint64_t end = p->data_offset;
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(p, i, &e, NULL);
		const uint8_t *b = p->data + p->page_dir_offset + 32u * i;
		if (b[21] || b[22] || b[23] || e.codec > WTP_CODEC_ZLIB_DELTA_SPLIT)
			return wtp__fail(err, WTP_ECORRUPT, "page %u: codec %u or "
					 "reserved bytes bad", (unsigned)i,
					 (unsigned)e.codec);
		if (e.raw_size != p->page_raw_size || e.stored_size == 0 ||
		    (e.codec == WTP_CODEC_RAW && e.stored_size != e.raw_size))
			return wtp__fail(err, WTP_ECORRUPT, "page %u: stored %u / raw "
					 "%u bytes, page is %u", (unsigned)i,
					 (unsigned)e.stored_size,
					 (unsigned)e.raw_size,
					 (unsigned)p->page_raw_size);
		if (e.offset < end || e.offset % p->alignment != 0 ||
		    e.offset > p->file_size ||
		    e.stored_size > p->file_size - e.offset)
			return wtp__fail(err, WTP_ECORRUPT, "page %u at %llu (+%u) "
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

/* Tables must not overlap (section 2): every table's byte range. */
static int wtp__check_overlap(const wtp_pack *p, wtp_error *err)
{
	uint64_t r[2 * (4 + 32 + 64)];
	uint32_t n = 0;
	r[n++] = p->layer_table_offset, r[n++] = 16ull * p->n_layers;
	r[n++] = p->lod_table_offset, r[n++] = 64ull * p->n_lods;
	r[n++] = p->qt_level_table_offset, r[n++] = 16ull * p->n_qt_levels;
	r[n++] = p->page_dir_offset, r[n++] = 32ull * p->n_pages;
	r[n++] = p->meta_offset, r[n++] = p->meta_size;
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod l;
		wtp_lod_get(p, k, &l);
		r[n++] = l.vat_offset, r[n++] = 12ull * l.px * l.py;
	}
	for (uint32_t k = 0; k < p->n_qt_levels; k++) {
		wtp_qt_level q;
		wtp_qt_level_get(p, k, &q);
		r[n++] = q.node_offset, r[n++] = 12ull * q.w * q.h;
	}
	for (uint32_t i = 0; i < n; i += 2)
		for (uint32_t j = i + 2; j < n; j += 2)
			if (r[i + 1] && r[j + 1] && r[i] < r[j] + r[j + 1] &&
			    r[j] < r[i] + r[i + 1])
				return wtp__fail(err, WTP_ECORRUPT, "tables overlap "
						 "(bytes %llu+%llu and %llu+%llu)",
						 (unsigned long long)r[i],
						 (unsigned long long)r[i + 1],
						 (unsigned long long)r[j],
						 (unsigned long long)r[j + 1]);
	return WTP_OK;
}

int wtp_open(wtp_pack *p, const void *buf, size_t len, unsigned flags,
	     wtp_error *err)
{
	const uint8_t *b = (const uint8_t *)buf;
	memset(p, 0, sizeof *p);
	p->data = b;
	p->size = len;
	if (len < WTP_HEADER_SIZE)
		return wtp__fail(err, WTP_ETRUNC, "truncated: %zu bytes, the "
				 "header alone is %d", len, WTP_HEADER_SIZE);
	if (memcmp(b, wtp__magic, 8) != 0)
		return wtp__fail(err, WTP_EMAGIC, "not a tile pack (bad magic)");
	p->version_major = wtp__u16(b + 8);
	p->version_minor = wtp__u16(b + 10);
	if (p->version_major != WTP_VERSION_MAJOR)
		return wtp__fail(err, WTP_EVERSION, "format version %u.%u, this "
				 "reader reads %d.x%s", (unsigned)p->version_major,
				 (unsigned)p->version_minor, WTP_VERSION_MAJOR,
				 p->version_major < WTP_VERSION_MAJOR
					 ? " (re-bake: version 1 heights are "
					   "not seam-exact)"
					 : "");
	p->header_size = wtp__u32(b + 12);
	p->file_size = wtp__u64(b + 16);
	p->tables_size = wtp__u32(b + 24);
	p->tables_crc32 = wtp__u32(b + 28);
	if (p->header_size < WTP_HEADER_SIZE ||
	    p->tables_size < p->header_size)
		return wtp__fail(err, WTP_ECORRUPT, "header size %u / tables size "
				 "%u invalid", (unsigned)p->header_size,
				 (unsigned)p->tables_size);
	if (len < p->tables_size)
		return wtp__fail(err, WTP_ETRUNC, "truncated: %zu bytes, the tables "
				 "need %u", len, (unsigned)p->tables_size);
	if (!(flags & WTP_OPEN_NOCRC)) {
		uLong c = crc32(0L, Z_NULL, 0);
		static const uint8_t z4[4] = { 0, 0, 0, 0 };
		c = crc32(c, b, 28);
		c = crc32(c, z4, 4);
		c = crc32(c, b + 32, p->tables_size - 32);
		if ((uint32_t)c != p->tables_crc32)
			return wtp__fail(err, WTP_ECRC, "tables CRC mismatch "
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
		return wtp__fail(err, WTP_ECORRUPT, "reserved header bytes set");
	if (!(p->dx0 > 0 && p->dx0 < 1e30) ||
	    !(p->distance_max >= 0 && p->distance_max < 1e30) ||
	    p->origin[0] != p->origin[0] || p->origin[1] != p->origin[1])
		return wtp__fail(err, WTP_ECORRUPT, "bad dx0 / distance_max / "
				 "origin");
	if (p->page_interior != 128 || p->page_border != 1)
		return wtp__fail(err, WTP_ECORRUPT, "page interior %u border %u, "
				 "expected 128 and 1", (unsigned)p->page_interior,
				 (unsigned)p->page_border);
	p->page_side = p->page_interior + 2 * p->page_border;
	p->page_pixels = p->page_side * p->page_side;
	if (p->n_lods < 1 || p->n_lods > 32 || p->n_layers < 1 ||
	    p->n_layers > WTP_LAYER_COUNT)
		return wtp__fail(err, WTP_ECORRUPT, "%u LODs, %u layers",
				 (unsigned)p->n_lods, (unsigned)p->n_layers);
	if (p->alignment < 16 || p->alignment > (1u << 20) ||
	    (p->alignment & (p->alignment - 1)))
		return wtp__fail(err, WTP_ECORRUPT, "alignment %u",
				 (unsigned)p->alignment);
	uint64_t a = p->alignment;
	if (p->data_offset != (p->tables_size + a - 1) / a * a ||
	    p->file_size < p->data_offset || p->file_size % a != 0)
		return wtp__fail(err, WTP_ECORRUPT, "data offset %llu / file size "
				 "%llu inconsistent",
				 (unsigned long long)p->data_offset,
				 (unsigned long long)p->file_size);
	if (!wtp__in_tables(p, p->layer_table_offset, p->n_layers, 16) ||
	    !wtp__in_tables(p, p->lod_table_offset, p->n_lods, 64) ||
	    !wtp__in_tables(p, p->qt_level_table_offset, p->n_qt_levels, 16) ||
	    !wtp__in_tables(p, p->page_dir_offset, p->n_pages, 32) ||
	    !wtp__in_tables(p, p->meta_offset, p->meta_size, 1))
		return wtp__fail(err, WTP_ECORRUPT, "a table lies outside the "
				 "tables area");
	int rc;
	if ((rc = wtp__check_layers(p, err)) != WTP_OK ||
	    (rc = wtp__check_lods(p, err)) != WTP_OK ||
	    (rc = wtp__check_qt(p, err)) != WTP_OK ||
	    (rc = wtp__check_overlap(p, err)) != WTP_OK ||
	    (rc = wtp__check_vats(p, err)) != WTP_OK ||
	    (rc = wtp__check_dir(p, err)) != WTP_OK ||
	    (rc = wtp__check_meta(p, err)) != WTP_OK)
		return rc;
	if (err)
		err->code = 0, err->msg[0] = 0;
	return WTP_OK;
}

/* zlib allocation through the caller's allocator (or zlib's default). */
static voidpf wtp__zalloc(voidpf opaque, uInt items, uInt size)
{
	const wtp_allocator *a = (const wtp_allocator *)opaque;
	if (size && items > (size_t)-1 / size)
		return Z_NULL;
	return a->alloc(a->user, (size_t)items * size);
}
static void wtp__zfree(voidpf opaque, voidpf ptr)
{
	const wtp_allocator *a = (const wtp_allocator *)opaque;
	if (ptr)
		a->free(a->user, ptr);
}

static int wtp__inflate(uint32_t page, const uint8_t *in, uint32_t n,
			uint8_t *out, uint32_t raw, const wtp_allocator *za,
			wtp_error *err)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (za && za->alloc && za->free) {
		z.zalloc = wtp__zalloc;
		z.zfree = wtp__zfree;
		z.opaque = (voidpf)(uintptr_t)za;
	}
	if (inflateInit(&z) != Z_OK)
		return wtp__fail(err, WTP_EZLIB, "page %u: zlib init failed "
				 "(out of memory)", (unsigned)page);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = n;
	z.next_out = out;
	z.avail_out = raw;
	int zr = inflate(&z, Z_FINISH);
	uLong got = z.total_out;
	uInt left = z.avail_in;
	inflateEnd(&z);
	if (zr == Z_MEM_ERROR)
		return wtp__fail(err, WTP_EZLIB, "page %u: zlib out of memory",
				 (unsigned)page);
	/* the stream must end exactly at the last stored byte and inflate
	   to exactly raw bytes (section 8) */
	if (zr != Z_STREAM_END || got != raw || left != 0)
		return wtp__fail(err, WTP_ECORRUPT, "page %u: zlib stream bad "
				 "(%d, %lu of %u bytes, %u left)",
				 (unsigned)page, zr, (unsigned long)got,
				 (unsigned)raw, (unsigned)left);
	return WTP_OK;
}

/* Stored bytes of 'page': from 'stored' or from the pack's buffer; CRC
 * checked. */
static int wtp__stored(const wtp_pack *p, uint32_t page, const void *stored,
		       size_t stored_len, wtp_page_info_t *e,
		       const uint8_t **in, wtp_error *err)
{
	int rc = wtp_page_info(p, page, e, err);
	if (rc != WTP_OK)
		return rc;
	*in = (const uint8_t *)stored;
	if (!*in) {
		if (e->offset > p->size || e->stored_size > p->size - e->offset)
			return wtp__fail(err, WTP_ETRUNC, "page %u at %llu (+%u) "
					 "is past the %lu bytes in memory",
					 (unsigned)page,
					 (unsigned long long)e->offset,
					 (unsigned)e->stored_size,
					 (unsigned long)p->size);
		*in = p->data + e->offset;
	} else if (stored_len != e->stored_size) {
		return wtp__fail(err, WTP_EARG, "page %u: %lu bytes given, %u "
				 "stored", (unsigned)page,
				 (unsigned long)stored_len,
				 (unsigned)e->stored_size);
	}
	uint32_t c = wtp__crc(*in, e->stored_size);
	if (c != e->crc32)
		return wtp__fail(err, WTP_ECRC, "page %u: CRC mismatch (stored "
				 "%08x, computed %08x)", (unsigned)page,
				 (unsigned)e->crc32, (unsigned)c);
	return WTP_OK;
}

int wtp_plane_rows(const wtp_pack *p, const wtp_layer *l, uint32_t *rows,
		   uint32_t *row_bytes)
{
	if (!wtp__fmt_bytes[l->format < WTP_FMT_COUNT ? l->format : 0][0])
		return WTP_EARG;
	*rows = wtp__rows(p, l);
	*row_bytes = wtp__row_bytes(p, l);
	return WTP_OK;
}

int wtp_layer_dst(const wtp_pack *p, void *raw, wtp_plane_dst *dst)
{
	for (uint32_t i = 0; i < p->n_layers && i < WTP_LAYER_COUNT; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		uint32_t h = wtp__is_bc(l.format) ? WTP_BC_HEADER : 0u;
		dst[i].data = raw ? (uint8_t *)raw + l.plane_offset + h : NULL;
		dst[i].row_pitch = wtp__row_bytes(p, &l);
	}
	return WTP_OK;
}

static int wtp__check_dst(const wtp_pack *p, const wtp_plane_dst *dst,
			  wtp_error *err)
{
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		uint32_t rb = wtp__row_bytes(p, &l);
		if (dst[i].data && dst[i].row_pitch < rb)
			return wtp__fail(err, WTP_EARG, "layer %u: row pitch "
					 "%lu below %u bytes", (unsigned)i,
					 (unsigned long)dst[i].row_pitch,
					 (unsigned)rb);
	}
	return WTP_OK;
}

/* A BC plane's scale header and blocks (section 4.1): scales finite and
 * >= 0, the second 0 for one channel, reserved bytes 0; SNORM endpoints
 * never -128 (the writer's canonical form). */
static int wtp__check_bc(const wtp_pack *p, uint32_t page, const wtp_layer *l,
			 const uint8_t *plane, float *scale, wtp_error *err)
{
	float s0 = wtp__f32(plane), s1 = wtp__f32(plane + 4);
	/* finite, >= 0 and not -0 (the sign bits clear) */
	if (!(s0 >= 0 && s0 <= 3.4e38f) || !(s1 >= 0 && s1 <= 3.4e38f) ||
	    ((plane[3] | plane[7]) & 0x80) ||
	    (l->components == 1 && s1 != 0) || !wtp__zero(plane + 8, 8))
		return wtp__fail(err, WTP_ECORRUPT, "page %u: %s plane header "
				 "bad (scales %g, %g)", (unsigned)page,
				 wtp_layer_name(l->id), (double)s0, (double)s1);
	if (l->format != WTP_FMT_BC4_UNORM) {
		const uint8_t *b = plane + WTP_BC_HEADER;
		uint32_t n = wtp__rows(p, l) * wtp__row_bytes(p, l);
		for (uint32_t k = 0; k < n; k += 8)
			if (b[k] == 0x80 || b[k + 1] == 0x80)
				return wtp__fail(err, WTP_ECORRUPT, "page %u: %s "
						 "block %u: SNORM endpoint -128",
						 (unsigned)page,
						 wtp_layer_name(l->id),
						 (unsigned)(k / wtp__bc_block(
								 l->format)));
	}
	scale[0] = s0;
	scale[1] = l->components == 2 ? s1 : 1.0f;
	return WTP_OK;
}

int wtp_page_decode_ex(const wtp_pack *p, uint32_t page, const void *stored,
		       size_t stored_len, const wtp_plane_dst *dst,
		       float *scale, void *work, const wtp_allocator *za,
		       wtp_error *err)
{
	wtp_page_info_t e;
	const uint8_t *in;
	int rc = wtp__check_dst(p, dst, err);
	if (rc != WTP_OK)
		return rc;
	rc = wtp__stored(p, page, stored, stored_len, &e, &in, err);
	if (rc != WTP_OK)
		return rc;
	if (e.codec != WTP_CODEC_RAW) {
		if (!work)
			return wtp__fail(err, WTP_EARG, "page %u: a zlib page "
					 "needs a work buffer", (unsigned)page);
		rc = wtp__inflate(page, in, e.stored_size, (uint8_t *)work,
				  e.raw_size, za, err);
		if (rc != WTP_OK)
			return rc;
		in = (const uint8_t *)work;
	}
	const uint32_t S = p->page_side;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		const uint8_t *src = in + l.plane_offset;
		float sc[2] = { 1.0f, 1.0f };
		if (wtp__is_bc(l.format)) {
			/* BC planes are stored verbatim by every codec */
			rc = wtp__check_bc(p, page, &l, src, sc, err);
			if (rc != WTP_OK)
				return rc;
			src += WTP_BC_HEADER;
		}
		if (scale)
			scale[2 * i] = sc[0], scale[2 * i + 1] = sc[1];
		if (!dst[i].data)
			continue;
		uint8_t *out = (uint8_t *)dst[i].data;
		size_t pitch = dst[i].row_pitch;
		uint32_t cb = l.component_bytes, nc = l.components;
		uint32_t rowb = wtp__row_bytes(p, &l), rows = wtp__rows(p, &l);
		if (e.codec != WTP_CODEC_ZLIB_DELTA_SPLIT ||
		    wtp__is_bc(l.format)) {
			for (uint32_t r = 0; r < rows; r++)
				memcpy(out + r * pitch, src + (size_t)r * rowb,
				       rowb);
			continue;
		}
		/* undo the byte split and the row deltas (mod 2^(8 cb)) in
		   one pass; running sums per component (nc <= 2), restarted
		   each row, so the first pixel of a row is kept */
		uint32_t n = l.plane_size / cb, row = S * nc;
		for (uint32_t r = 0; r < S; r++) {
			unsigned acc[2] = { 0, 0 };
			uint8_t *d = out + r * pitch;
			uint32_t k0 = r * row;
			for (uint32_t k = k0; k < k0 + row; k += nc)
				for (uint32_t q = 0; q < nc; q++) {
					uint32_t j = k - k0 + q;
					if (cb == 1) {
						acc[q] += src[k + q];
						d[j] = (uint8_t)acc[q];
						continue;
					}
					acc[q] += (unsigned)src[k + q] |
						  ((unsigned)src[n + k + q] << 8);
					d[2 * j] = (uint8_t)acc[q];
					d[2 * j + 1] = (uint8_t)(acc[q] >> 8);
				}
		}
	}
	return WTP_OK;
}

int wtp_page_decode(const wtp_pack *p, uint32_t page, const void *stored,
		    size_t stored_len, const wtp_plane_dst *dst, void *work,
		    const wtp_allocator *za, wtp_error *err)
{
	return wtp_page_decode_ex(p, page, stored, stored_len, dst, NULL, work,
				  za, err);
}

static void wtp__put_bc_header(uint8_t *plane, const float *sc, uint32_t nc)
{
	memset(plane, 0, WTP_BC_HEADER);
	memcpy(plane, &sc[0], 4);
	if (nc == 2)
		memcpy(plane + 4, &sc[1], 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	for (int k = 0; k < 8; k += 4) {
		uint8_t t = plane[k];
		plane[k] = plane[k + 3], plane[k + 3] = t;
		t = plane[k + 1];
		plane[k + 1] = plane[k + 2], plane[k + 2] = t;
	}
#endif
}

int wtp_page_read(const wtp_pack *p, uint32_t page, const void *stored,
		  size_t stored_len, void *raw, void *work, wtp_error *err)
{
	wtp_plane_dst dst[WTP_LAYER_COUNT];
	float sc[2 * WTP_LAYER_COUNT];
	wtp_layer_dst(p, raw, dst);
	int rc = wtp_page_decode_ex(p, page, stored, stored_len, dst, sc, work,
				    NULL, err);
	if (rc != WTP_OK)
		return rc;
	/* the scale headers of BC planes, as stored (checked canonical) */
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		if (wtp__is_bc(l.format))
			wtp__put_bc_header((uint8_t *)raw + l.plane_offset,
					   sc + 2 * i, l.components);
	}
	return WTP_OK;
}

int wtp_page_expand_ex(const wtp_pack *p, const wtp_vat_entry *e,
		       const wtp_plane_dst *dst, float *scale, wtp_error *err)
{
	int rc = wtp__check_dst(p, dst, err);
	if (rc != WTP_OK)
		return rc;
	if (e->state != WTP_EMPTY && e->state != WTP_FLAT)
		return wtp__fail(err, WTP_EARG, "wtp_page_expand: state %u is "
				 "not EMPTY or FLAT", (unsigned)e->state);
	const int flat = e->state == WTP_FLAT;
	const uint32_t S = p->page_side;
	uint16_t dist = wtp_float_to_half((float)(flat ? p->distance_max
						      : -p->distance_max));
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		if (wtp__is_bc(l.format)) {
			/* distance: every texel +-1 (endpoints +-127) times
			   (float)distance_max; flow and foam: zero blocks */
			int d = l.id == WTP_LAYER_DISTANCE;
			if (scale) {
				scale[2 * i] = d ? (float)p->distance_max : 0.0f;
				scale[2 * i + 1] = l.components == 2 ? 0.0f : 1.0f;
			}
			if (!dst[i].data)
				continue;
			/* distance_max 0: zero blocks, +0 as a DATA page */
			uint8_t ep = (uint8_t)(!d || !(p->distance_max > 0) ? 0
					       : flat ? 0x7F : 0x81);
			uint32_t rowb = wtp__row_bytes(p, &l);
			for (uint32_t r = 0; r < WTP_BC_BLOCKS; r++) {
				uint8_t *o = (uint8_t *)dst[i].data +
					     r * dst[i].row_pitch;
				memset(o, 0, rowb);
				for (uint32_t k = 0; k < rowb; k += 8)
					o[k] = o[k + 1] = ep;
			}
			continue;
		}
		if (scale)
			scale[2 * i] = scale[2 * i + 1] = 1.0f;
		if (!dst[i].data)
			continue;
		uint32_t v;
		switch (l.id) {
		case WTP_LAYER_HEIGHT: v = flat ? 0u : WTP_DRY_HALF; break;
		case WTP_LAYER_MATERIAL: v = flat ? e->material : 0u; break;
		case WTP_LAYER_DISTANCE: v = dist; break;
		default: v = 0; break; /* flow 0 (+0), foam 0 */
		}
		for (uint32_t r = 0; r < S; r++) {
			uint8_t *d = (uint8_t *)dst[i].data + r * dst[i].row_pitch;
			for (uint32_t k = 0; k < S * l.components; k++) {
				if (l.component_bytes == 1) {
					d[k] = (uint8_t)v;
				} else {
					d[2 * k] = (uint8_t)v;
					d[2 * k + 1] = (uint8_t)(v >> 8);
				}
			}
		}
	}
	return WTP_OK;
}

int wtp_page_expand(const wtp_pack *p, const wtp_vat_entry *e,
		    const wtp_plane_dst *dst, wtp_error *err)
{
	return wtp_page_expand_ex(p, e, dst, NULL, err);
}

int wtp_page_expand_read(const wtp_pack *p, const wtp_vat_entry *e,
			 void *raw, wtp_error *err)
{
	wtp_plane_dst dst[WTP_LAYER_COUNT];
	float sc[2 * WTP_LAYER_COUNT];
	wtp_layer_dst(p, raw, dst);
	int rc = wtp_page_expand_ex(p, e, dst, sc, err);
	if (rc != WTP_OK)
		return rc;
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		if (wtp__is_bc(l.format))
			wtp__put_bc_header((uint8_t *)raw + l.plane_offset,
					   sc + 2 * i, l.components);
	}
	return WTP_OK;
}

/* Texel t (0..15, x + 4y) of one BC4 block (section 4.1): the value in
 * [0, 1] (UNORM) or [-1, 1] (SNORM), computed as one binary32 division
 * of exact integers, so every reader gets the same bits. */
static float wtp__bc4_texel(const uint8_t *b, int snorm, uint32_t t)
{
	int e0, e1, m = snorm ? 127 : 255;
	if (snorm) {
		e0 = (int8_t)b[0], e1 = (int8_t)b[1];
		e0 = e0 < -127 ? -127 : e0;
		e1 = e1 < -127 ? -127 : e1;
	} else {
		e0 = b[0], e1 = b[1];
	}
	uint64_t bits = 0;
	for (int k = 0; k < 6; k++)
		bits |= (uint64_t)b[2 + k] << (8 * k);
	uint32_t k = (uint32_t)(bits >> (3 * t)) & 7u;
	int w, num;
	if (e0 > e1) {
		w = 7;
		num = k == 0 ? 7 * e0 : k == 1 ? 7 * e1
			     : (int)(8 - k) * e0 + (int)(k - 1) * e1;
	} else {
		w = 5;
		num = k == 0 ? 5 * e0 : k == 1 ? 5 * e1
			     : k < 6 ? (int)(6 - k) * e0 + (int)(k - 1) * e1
			     : k == 6 ? (snorm ? -5 * m : 0) : 5 * m;
	}
	return (float)num / (float)(w * m);
}

int wtp_bc_decode(uint32_t format, const void *blocks, size_t block_pitch,
		  const float *scale, float *out, size_t out_pitch)
{
	if (!wtp__is_bc(format))
		return WTP_EARG;
	const uint32_t nc = wtp__fmt_bytes[format][1], bb = wtp__bc_block(format);
	const int snorm = format != WTP_FMT_BC4_UNORM;
	for (uint32_t y = 0; y < 130; y++) {
		float *o = (float *)(void *)((uint8_t *)out + y * out_pitch);
		const uint8_t *row = (const uint8_t *)blocks +
				     (y / 4) * block_pitch;
		for (uint32_t x = 0; x < 130; x++)
			for (uint32_t c = 0; c < nc; c++)
				o[x * nc + c] =
					scale[c] *
					wtp__bc4_texel(row + (x / 4) * bb + 8 * c,
						       snorm, x % 4 + 4 * (y % 4));
	}
	return WTP_OK;
}

int wtp_locate(const wtp_pack *p, uint32_t lod, double wx, double wy,
	       wtp_location *out, wtp_error *err)
{
	wtp_lod l;
	if (wtp_lod_get(p, lod, &l) != WTP_OK)
		return wtp__fail(err, WTP_EARG, "no LOD %u", (unsigned)lod);
	/* LOD pixel coordinates: pixel (i, j) covers [i, i+1) x [j, j+1) */
	double X = (wx - p->origin[0]) / l.dx, Y = (wy - p->origin[1]) / l.dx;
	double I = (double)p->page_interior;
	if (!(X >= 0 && Y >= 0 && X < (double)l.px * I &&
	      Y < (double)l.py * I))
		return wtp__fail(err, WTP_EARG, "(%g, %g) is outside LOD %u",
				 wx, wy, (unsigned)lod);
	out->lod = lod;
	out->x = (uint32_t)(X / I);
	out->y = (uint32_t)(Y / I);
	if (out->x >= l.px)
		out->x = l.px - 1;
	if (out->y >= l.py)
		out->y = l.py - 1;
	/* texel coordinates in the stored page: interior starts at the
	   border; sample at (tx / S, ty / S) with bilinear filtering */
	out->tx = (float)(X - (double)out->x * I + p->page_border);
	out->ty = (float)(Y - (double)out->y * I + p->page_border);
	out->u = out->tx / (float)p->page_side;
	out->v = out->ty / (float)p->page_side;
	out->inside = X < (double)l.nx && Y < (double)l.ny;
	return WTP_OK;
}

int wtp_format_info(uint32_t format, wtp_format_desc *out)
{
	static const wtp_format_desc f[WTP_FMT_COUNT] = {
		{ 0, 0, 0, 0, 0 },
		{ 2, 1, 54, 76, 0 },  /* R16_FLOAT / VK_FORMAT_R16_SFLOAT */
		{ 4, 2, 34, 83, 0 },  /* R16G16_FLOAT / VK_FORMAT_R16G16_SFLOAT */
		{ 1, 1, 62, 13, 0 },  /* R8_UINT / VK_FORMAT_R8_UINT */
		{ 1, 1, 61, 9, 0 },   /* R8_UNORM / VK_FORMAT_R8_UNORM */
		{ 0, 2, 84, 142, 16 }, /* BC5_SNORM / VK_FORMAT_BC5_SNORM_BLOCK */
		{ 0, 1, 80, 139, 8 }, /* BC4_UNORM / VK_FORMAT_BC4_UNORM_BLOCK */
		{ 0, 1, 81, 140, 8 }  /* BC4_SNORM / VK_FORMAT_BC4_SNORM_BLOCK */
	};
	if (format < 1 || format >= WTP_FMT_COUNT)
		return WTP_EARG;
	*out = f[format];
	return WTP_OK;
}

uint64_t wtp_hash64(const void *data, size_t n)
{
	const uint8_t *b = (const uint8_t *)data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int wtp_verify(const wtp_pack *p, void *raw, void *work, wtp_error *err)
{
	if (p->size != p->file_size)
		return wtp__fail(err, p->size < p->file_size ? WTP_ETRUNC
							     : WTP_ECORRUPT,
				 "file is %lu bytes, header says %llu",
				 (unsigned long)p->size,
				 (unsigned long long)p->file_size);
	/* Padding between the tables and the first page must be zero. */
	if (!wtp__zero(p->data + p->tables_size,
		       (size_t)(p->data_offset - p->tables_size)))
		return wtp__fail(err, WTP_ECORRUPT, "non-zero padding after the "
				 "tables");
	/* cheap checks first: padding, page CRCs; pages are decoded last */
	uint64_t end = p->data_offset;
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(p, i, &e, NULL);
		if (!wtp__zero(p->data + end, (size_t)(e.offset - end)))
			return wtp__fail(err, WTP_ECORRUPT, "non-zero padding "
					 "before page %u", (unsigned)i);
		end = e.offset + e.stored_size;
	}
	if (!wtp__zero(p->data + end, (size_t)(p->file_size - end)))
		return wtp__fail(err, WTP_ECORRUPT, "non-zero padding after the "
				 "last page");
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(p, i, &e, NULL);
		uint32_t c = wtp__crc(p->data + e.offset, e.stored_size);
		if (c != e.crc32)
			return wtp__fail(err, WTP_ECRC, "page %u: CRC mismatch "
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
			return wtp__fail(err, WTP_ECORRUPT, "LOD %u: first page "
					 "%u, expected %u", (unsigned)k,
					 (unsigned)l.first_page, (unsigned)next);
		next += l.n_new_pages;
		uint32_t nf = 0, nd = 0;
		for (uint32_t y = 0; y < l.py; y++)
			for (uint32_t x = 0; x < l.px; x++) {
				wtp_vat_entry v;
				wtp_vat(p, k, x, y, &v, NULL);
				nf += v.state == WTP_FLAT;
				nd += v.state == WTP_DATA;
				if (track && v.state == WTP_DATA &&
				    v.page < p->n_pages)
					seen[v.page / 8] |=
						(uint8_t)(1u << (v.page % 8));
				if (v.state == WTP_DATA && v.page >= next)
					return wtp__fail(err, WTP_ECORRUPT,
							 "LOD %u page (%u, %u) "
							 "points to page %u of "
							 "a finer LOD",
							 (unsigned)k,
							 (unsigned)x,
							 (unsigned)y,
							 (unsigned)v.page);
				if (v.state == WTP_EMPTY &&
				    (v.has_water ||
				     v.height != WTP_DRY_HEIGHT))
					return wtp__fail(err, WTP_ECORRUPT,
							 "LOD %u page (%u, %u): "
							 "EMPTY with water",
							 (unsigned)k,
							 (unsigned)x,
							 (unsigned)y);
				/* FLAT heights and DATA bases lie on the
				   LOD's height grid (section 4) */
				double st = wtp__pow2(v.step_log2);
				if (v.state != WTP_EMPTY &&
				    (!wtp__multiple((double)v.height, st) ||
				     st > l.height_step))
					return wtp__fail(err, WTP_ECORRUPT,
							 "LOD %u page (%u, %u): "
							 "height %.9g is not a "
							 "multiple of its "
							 "step %g (LOD max %g)",
							 (unsigned)k,
							 (unsigned)x,
							 (unsigned)y,
							 (double)v.height, st,
							 l.height_step);
			}
		if (nf != l.n_flat || nd != l.n_data)
			return wtp__fail(err, WTP_ECORRUPT, "LOD %u: %u FLAT / %u "
					 "DATA entries, table says %u / %u",
					 (unsigned)k, (unsigned)nf,
					 (unsigned)nd, (unsigned)l.n_flat,
					 (unsigned)l.n_data);
	}
	if (next != p->n_pages)
		return wtp__fail(err, WTP_ECORRUPT, "LODs introduce %u pages, "
				 "directory has %u", (unsigned)next,
				 (unsigned)p->n_pages);
	for (uint32_t i = 0; track && i < p->n_pages; i++)
		if (!(seen[i / 8] >> (i % 8) & 1u))
			return wtp__fail(err, WTP_ECORRUPT, "page %u is not "
					 "referenced by any VAT entry",
					 (unsigned)i);
	for (uint32_t i = 0; i < p->n_pages; i++) {
		int rc = wtp_page_read(p, i, NULL, 0, raw, work, err);
		if (rc != WTP_OK)
			return rc;
		wtp_page_info_t e;
		wtp_page_info(p, i, &e, NULL);
		uint64_t h = wtp_hash64(raw, p->page_raw_size);
		if (h != e.hash)
			return wtp__fail(err, WTP_ECORRUPT, "page %u: decoded "
					 "hash %016llx, directory says %016llx",
					 (unsigned)i, (unsigned long long)h,
					 (unsigned long long)e.hash);
	}
	if (err)
		err->code = 0, err->msg[0] = 0;
	return WTP_OK;
}

uint16_t wtp_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u); /* NaN */
	if (ax >= 0x477ff000u) /* rounds to >= 65536: infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) {
		/* below 2^-14: subnormal m * 2^-24; shift the mantissa with
		   its implicit bit, round to nearest even */
		if (ax < 0x33000000u) /* below 2^-25: rounds to 0 */
			return (uint16_t)sign;
		uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
		uint32_t sh = 126u - e; /* 14 + 112 - e + 1 - 1 */
		uint32_t h = m >> sh, rem = m & ((1u << sh) - 1u),
			 half = 1u << (sh - 1u);
		if (rem > half || (rem == half && (h & 1u)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t e = (ax >> 23) - 112u; /* rebias 127 -> 15 */
	uint32_t mant = ax & 0x7fffffu;
	uint32_t h = (e << 10) | (mant >> 13);
	uint32_t rem = mant & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++;
	return (uint16_t)(sign | h);
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
	if (wtp__is_bc(l->format)) {
		/* 2.x pages are 130 pixels wide */
		const uint8_t *pl = (const uint8_t *)raw + l->plane_offset;
		uint32_t x = i % 130u, y = i / 130u;
		if (component >= l->components || y >= 130u)
			return 0.0f;
		const uint8_t *blk = pl + WTP_BC_HEADER +
				     ((x / 4) + WTP_BC_BLOCKS * (y / 4)) *
					     wtp__bc_block(l->format) +
				     8 * component;
		return wtp__f32(pl + 4 * component) *
		       wtp__bc4_texel(blk, l->format != WTP_FMT_BC4_UNORM,
				      x % 4 + 4 * (y % 4));
	}
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
	static const char *const names[WTP_FMT_COUNT] = {
		"?", "R16F", "RG16F", "R8_UINT", "R8_UNORM", "BC5_SNORM",
		"BC4_UNORM", "BC4_SNORM"
	};
	return format < WTP_FMT_COUNT ? names[format] : "?";
}

#endif /* WTP_IMPLEMENTATION_DONE */
#endif /* WTP_IMPLEMENTATION */
