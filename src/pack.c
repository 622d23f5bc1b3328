/*
 * pack.c - the tile pack writer: struct wb_pageset -> OUTDIR/<name>.wtp.
 *
 * The format is docs/wtp-format.md (normative); section numbers below refer
 * to it. Also home of the reader's implementation (include/wtp.h is an
 * stb-style header: the library compiles it here once, so tools and tests
 * link it) and of wb_pageset_free().
 *
 * Steps of pack_write():
 *   1. check the pageset (shapes, layers, LOD nesting px_k = ceil(px_{k-1}/2));
 *   2. VAT entries for EMPTY / FLAT slots; the list of DATA slots in file
 *      order: LODs coarsest first, Morton order of (x, y) within a LOD (9);
 *   3. DATA pages in batches: encode and hash in parallel (OpenMP over
 *      pages), deduplicate serially in file order (hash = CRC-32 and
 *      Adler-32 of the encoded bytes, then a byte compare against the
 *      earlier page re-encoded), compress the new ones in parallel
 *      (row deltas, byte-split planes, zlib level 6; RAW unless that
 *      saves 1/64),
 *      append them
 *      serially at aligned offsets. Each page's bytes depend on that page
 *      only and the order is fixed, so the output is identical for any
 *      thread count;
 *   4. the quadtree (7): own page range united with the children's, levels
 *      above the coarsest LOD up to a 1x1 root;
 *   5. the tables (header, layers, LODs, quadtree levels, VATs, quadtree
 *      nodes, page directory, metadata) with their CRC, then the pages,
 *      written under a temporary name and renamed (wb_atomic_*).
 *
 * Height encoding (4): every FLAT / DATA page has a power-of-two step
 * (lod_steps(), iterated to a fixed point); a pixel's decoded height is
 * its height snapped to the largest step of the pages holding it, or a
 * FLAT neighbour's height, so it is the same in every page that stores it
 * (bit-equal seams). R16F offsets from a base on the page's grid are then
 * exact. Dry pixels hold the half 0xFBFF (WB_DRY_HEIGHT) whatever the
 * base. The quadtree ranges are those of the decoded heights; the page
 * directory holds the FNV-1a 64 hash of each decoded page.
 *
 * Memory: the pageset is the caller's; the writer holds the encoded pages
 * of one batch (64 pages x ~0.5 MB) plus the compressed page area (the
 * size of the pack, far smaller than the float pageset).
 */
#include <math.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <zlib.h>

#define WTP_IMPLEMENTATION
#include "wtp.h"

#include "bc.h"
#include "pack.h"
#include "util.h"

#define PACK_ALIGN_DEFAULT 4096u
#define PACK_BATCH 64
#define PACK_ZLEVEL 6
#define PACK_MIN_SAVING 64 /* RAW unless zlib saves raw/64 (8) */
#define PACK_MAX_OFFSET 65000.0f /* |relative height| limit (4) */

/* ---- small helpers --------------------------------------------------- */

static void put16(unsigned char *b, unsigned v)
{
	b[0] = (unsigned char)v;
	b[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}
static void putf32(unsigned char *b, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	put32(b, u);
}
static void putf64(unsigned char *b, double f)
{
	uint64_t u;
	memcpy(&u, &f, 8);
	put64(b, u);
}

uint16_t pack_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u); /* NaN */
	if (ax >= 0x47800000u)                    /* >= 65536: infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) {
		/* below 2^-14: subnormal half m * 2^-24. |f| * 2^24 is exact;
		   rintf rounds to nearest even in the default mode. */
		float a;
		memcpy(&a, &ax, 4);
		return (uint16_t)(sign | (uint32_t)rintf(a * 16777216.0f));
	}
	uint32_t e = (ax >> 23) - 112u; /* rebias 127 -> 15 */
	uint32_t mant = ax & 0x7fffffu;
	uint32_t h = (e << 10) | (mant >> 13);
	uint32_t rem = mant & 0x1fffu;
	/* the carry of h++ runs into the exponent (and up to infinity),
	   which is what rounding wants */
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++;
	return (uint16_t)(sign | h);
}

/* Interleave: x on even bits, y on odd bits (Morton / Z-order key). */
static uint64_t spread32(uint32_t v)
{
	uint64_t x = v;
	x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
	x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
	x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
	x = (x | (x << 2)) & 0x3333333333333333ull;
	x = (x | (x << 1)) & 0x5555555555555555ull;
	return x;
}

struct keyed {
	uint64_t key;
	uint32_t idx;
};

static int keyed_cmp(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* ---- layers ---------------------------------------------------------- */

struct layer_desc {
	int id, format, cbytes, comps;
	int bc;                      /* block-compressed (4.1) */
	uint32_t offset, size;
};

/* Layers that may be stored block-compressed, and their BC format */
#define PACK_BC_ALLOWED ((1u << WB_LAYER_FLOW) | (1u << WB_LAYER_DISTANCE) | \
			 (1u << WB_LAYER_FOAM))
static int bc_format(int id)
{
	return id == WB_LAYER_FLOW ? WTP_FMT_BC5_SNORM
	       : id == WB_LAYER_FOAM ? WTP_FMT_BC4_UNORM : WTP_FMT_BC4_SNORM;
}

static const int layer_format[WB_LAYER_COUNT][3] = {
	/* format, component bytes, components */
	{ WTP_FMT_R16F, 2, 1 }, { WTP_FMT_RG16F, 2, 2 },
	{ WTP_FMT_R8_UINT, 1, 1 }, { WTP_FMT_R16F, 2, 1 },
	{ WTP_FMT_R8_UNORM, 1, 1 },
};

static int layers_describe(unsigned layers, unsigned bc,
			   struct layer_desc *out)
{
	int n = 0;
	uint32_t off = 0;
	for (int id = 0; id < WB_LAYER_COUNT; id++) {
		if (!(layers & (1u << id)))
			continue;
		struct layer_desc *l = &out[n++];
		l->id = id;
		l->bc = (bc & PACK_BC_ALLOWED & (1u << id)) != 0;
		l->format = l->bc ? bc_format(id) : layer_format[id][0];
		l->cbytes = l->bc ? 1 : layer_format[id][1];
		l->comps = layer_format[id][2];
		l->offset = off;
		/* BC: scale header, then 33 x 33 blocks of 8 bytes per
		   channel (BC4 8, BC5 16) */
		l->size = l->bc ? (uint32_t)(BC_HEADER + BC_BLOCKS * BC_BLOCKS *
						       8 * l->comps)
				: (uint32_t)(WB_PAGE_PIXELS * l->cbytes * l->comps);
		off += l->size;
	}
	return n;
}

size_t pack_page_raw_size_bc(unsigned layers, unsigned bc)
{
	struct layer_desc l[WB_LAYER_COUNT];
	int n = layers_describe(layers, bc, l);
	return n ? l[n - 1].offset + l[n - 1].size : 0;
}

size_t pack_page_raw_size(unsigned layers)
{
	return pack_page_raw_size_bc(layers, 0);
}

/* A BC plane (4.1): per channel c, scale[c] = the largest |value| of the
 * page (the values as the layer clamps them), then the blocks of value /
 * scale[c] (scale 0: zero blocks, decoding to 0). */
static void encode_bc(const struct layer_desc *l, const float *v,
		      unsigned char *restrict o)
{
	float sc[2] = { 0, 0 };
	const int nc = l->comps;
	for (int i = 0; i < WB_PAGE_PIXELS * nc; i++) {
		float a = fabsf(v[i]);
		if (a > sc[i % nc])
			sc[i % nc] = a;
	}
	memset(o, 0, BC_HEADER);
	putf32(o, sc[0]);
	if (nc == 2)
		putf32(o + 4, sc[1]);
	const int snorm = l->format != WTP_FMT_BC4_UNORM;
	for (int c = 0; c < nc; c++)
		bc4_encode_plane(v, nc, c, snorm, sc[c], o + BC_HEADER,
				 (size_t)(8 * nc), (size_t)(8 * c));
}

/* ---- page encoding (4) ----------------------------------------------- */

enum enc_err {
	ENC_OK, ENC_NOARRAY, ENC_NAN_HEIGHT, ENC_RANGE, ENC_NAN_FLOW,
	ENC_NAN_DIST, ENC_NAN_FOAM, ENC_FLAT, ENC_NOMEM
};

static const char *enc_msg(int e)
{
	switch (e) {
	case ENC_NOARRAY: return "a layer's pixel array is missing";
	case ENC_NAN_HEIGHT: return "height is NaN or infinite";
	case ENC_RANGE: return "the water surface spans more than 130 km "
			       "within a page or between neighbouring pages, "
			       "more than the pack's heights (half floats "
			       "relative to a page base) hold; check "
			       "terrain.height_scale and the water levels";
	case ENC_NAN_FLOW: return "flow is NaN";
	case ENC_NAN_DIST: return "distance is NaN";
	case ENC_NAN_FOAM: return "foam is NaN";
	case ENC_NOMEM: return "out of memory";
	case ENC_FLAT: return "two FLAT pages around it have different "
			      "heights on the pixels they share";
	default: return "ok";
	}
}

static float clamp_half(float v)
{
	return v > 65504.0f ? 65504.0f : v < -65504.0f ? -65504.0f : v;
}

/* Height quantisation context of one LOD (section 4, "height grid"):
 * every page has a step q (a power of two); a pixel's decoded height is
 * its height snapped to the largest step of the pages whose 130x130
 * footprints hold it, or, in a FLAT page's footprint, the FLAT page's
 * height. Both depend on the pixel only, not on the page it is read
 * from, so the two sides of every seam decode to the same bits. */
struct hctx {
	const struct wb_lod_pages *l;
	const float *q;     /* per page: its step */
};

#define PACK_FLAT_STEP (1.0f / 1024.0f) /* smallest FLAT step (2^-10 m) */

/* Snap h to a grid of step q: q * rint(h / q), exact in binary32. */
static float snapq(float h, float q)
{
	return rintf(h / q) * q;
}

/* The decoded height of FLAT page s. */
static float flat_value(const struct hctx *c, long s)
{
	return snapq(c->l->pages[s].flat_height, c->q[s]);
}

/* Stored pixel (a, b) of page (x, y): *qp = the largest step of the
 * pages holding it; returns 1 with *fv = the FLAT value when a FLAT page
 * holds it (FLAT pages that touch agree, checked by the writer), else 0. */
static int pix_rule(const struct hctx *c, int x, int y, int a, int b,
		    float *qp, float *fv)
{
	const struct wb_lod_pages *l = c->l;
	long s0 = x + (long)y * l->px;
	*qp = c->q[s0];
	int flat = 0;
	if (l->pages[s0].state == WB_PAGE_FLAT) {
		*fv = flat_value(c, s0);
		flat = 1;
	}
	if (a > 1 && a < WB_PAGE_INTERIOR && b > 1 && b < WB_PAGE_INTERIOR)
		return flat;
	int dxs[2] = { 0, 0 }, dys[2] = { 0, 0 }, nx = 0, ny = 0;
	if (a <= 1 && x > 0)
		dxs[nx++] = -1;
	if (a >= WB_PAGE_INTERIOR && x + 1 < l->px)
		dxs[nx++] = 1;
	if (b <= 1 && y > 0)
		dys[ny++] = -1;
	if (b >= WB_PAGE_INTERIOR && y + 1 < l->py)
		dys[ny++] = 1;
	for (int j = -1; j < ny; j++)
		for (int i = -1; i < nx; i++) {
			int ox = i < 0 ? 0 : dxs[i], oy = j < 0 ? 0 : dys[j];
			if (!ox && !oy)
				continue;
			long s = (x + ox) + (long)(y + oy) * l->px;
			if (c->q[s] > *qp)
				*qp = c->q[s];
			if (!flat && l->pages[s].state == WB_PAGE_FLAT) {
				*fv = flat_value(c, s);
				flat = 1;
			}
		}
	return flat;
}

/* Decoded height of wet pixel i of DATA page (x, y) with height h. */
static float pix_value(const struct hctx *c, int x, int y, int i, float h)
{
	float qp, fv;
	if (pix_rule(c, x, y, i % WB_PAGE_SIZE, i / WB_PAGE_SIZE, &qp, &fv))
		return fv;
	return snapq(h, qp);
}

/* Range of the decoded wet heights of DATA page s and its base;
 * returns 0, or 1 when the page's step is too small for them (an offset
 * over 2048 steps or a value past 2^24 steps). */
static int page_fit(const struct hctx *c, long s, float *base)
{
	const struct wb_page *pg = &c->l->pages[s];
	const int x = (int)(s % c->l->px), y = (int)(s / c->l->px);
	const float q = c->q[s];
	float lo = INFINITY, hi = -INFINITY;
	for (int i = 0; i < WB_PAGE_PIXELS; i++) {
		float h = pg->height[i];
		if (h == WB_DRY_HEIGHT || !isfinite(h))
			continue;
		float v = pix_value(c, x, y, i, h);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	*base = 0;
	if (!(lo <= hi))
		return 0;
	float b = snapq((lo + hi) * 0.5f, q);
	*base = b;
	double lim = 2048.0 * q;
	if (fabs((double)hi - b) > lim || fabs((double)lo - b) > lim ||
	    fabs((double)hi) >= 16777216.0 * q ||
	    fabs((double)lo) >= 16777216.0 * q || fabs((double)b) > 1e30)
		return 1;
	return 0;
}

/* Smallest power of two >= v, in [2^-24, 2^6]; 2^6 means too large. */
static float pow2_at_least(double v)
{
	int e = -24;
	while (e < 6 && ldexp(1.0, e) < v)
		e++;
	return (float)ldexp(1.0, e);
}

/* The steps of every page of a LOD (section 4):
 *   DATA  start at the smallest power of two q >= R / 4090 (R: the wet
 *         range of its 130x130 pixels) and >= max|h| / 2^23, then
 *         doubled while its decoded heights (which may use a neighbour's
 *         larger step on shared pixels) do not fit 2048 steps of the base;
 *   FLAT  2^-10 m (or max|h| / 2^23 when larger), raised to the largest
 *         step of its 8 neighbours, so that its height decodes the same
 *         on every pixel of its footprint;
 *   EMPTY 0 (no height).
 * Iterated to the fixed point (steps only grow). Returns 0, -1 when a
 * page needs more than 32 m (a surface range over 65 km), -2 out of
 * memory. */
static int lod_steps(const struct wb_lod_pages *l, float *q)
{
	long np = (long)l->px * l->py;
	struct hctx c = { l, q };
	for (long s = 0; s < np; s++) {
		const struct wb_page *pg = &l->pages[s];
		q[s] = 0;
		if (pg->state == WB_PAGE_FLAT) {
			q[s] = pow2_at_least(fmax(PACK_FLAT_STEP,
						  fabs(pg->flat_height) /
							  8388608.0));
			continue;
		}
		if (pg->state != WB_PAGE_DATA || !pg->height)
			continue;
		double lo = INFINITY, hi = -INFINITY;
		for (int i = 0; i < WB_PAGE_PIXELS; i++) {
			float h = pg->height[i];
			if (h == WB_DRY_HEIGHT || !isfinite(h))
				continue;
			lo = h < lo ? h : lo;
			hi = h > hi ? h : hi;
		}
		q[s] = lo <= hi ? pow2_at_least(fmax((hi - lo) / 4090.0,
						     fmax(fabs(lo), fabs(hi)) /
							     8388608.0))
				: PACK_FLAT_STEP;
	}
	/* Jacobi passes: every page is judged on the steps of the previous
	   pass (in parallel), then all changes apply; the result does not
	   depend on the thread count */
	float *nq = malloc((size_t)(np ? np : 1) * sizeof *nq);
	if (!nq)
		return -2;
	int rc = -1;
	for (int pass = 0; pass < 64; pass++) {
		int changed = 0, big = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(| : changed, big)
		for (long s = 0; s < np; s++) {
			const struct wb_page *pg = &l->pages[s];
			nq[s] = q[s];
			if (pg->state == WB_PAGE_EMPTY)
				continue;
			if (q[s] > 32.0f) {
				big = 1;
				continue;
			}
			if (pg->state == WB_PAGE_FLAT) {
				int x = (int)(s % l->px), y = (int)(s / l->px);
				for (int j = y - 1; j <= y + 1; j++)
					for (int i = x - 1; i <= x + 1; i++)
						if (i >= 0 && j >= 0 && i < l->px &&
						    j < l->py &&
						    q[i + (long)j * l->px] > nq[s]) {
							nq[s] = q[i + (long)j * l->px];
							changed = 1;
						}
				continue;
			}
			float b;
			if (pg->height && page_fit(&c, s, &b)) {
				nq[s] = q[s] * 2;
				changed = 1;
			}
		}
		if (big)
			break;
		memcpy(q, nq, (size_t)np * sizeof *q);
		if (!changed) {
			rc = 0;
			break;
		}
	}
	free(nq);
	return rc;
}

/* Decoded interior range of a page (quadtree, section 7). */
struct range {
	int water;
	float lo, hi;
};

static int encode(const struct layer_desc *ld, int nl, const struct hctx *c,
		  long slot, unsigned char *restrict raw, float *base,
		  struct range *rg)
{
	const int n = WB_PAGE_PIXELS;
	const struct wb_page *pg = &c->l->pages[slot];
	const int px = (int)(slot % c->l->px), py = (int)(slot / c->l->px);
	float *tmp = NULL; /* clamped values of a BC layer */
	int rc = ENC_OK;
	*base = 0;
	for (int li = 0; li < nl; li++)
		if (ld[li].bc && !tmp &&
		    !(tmp = malloc(2 * (size_t)n * sizeof *tmp)))
			return ENC_NOMEM;
	if (rg)
		rg->water = 0, rg->lo = rg->hi = 0;
	for (int li = 0; li < nl; li++) {
		const struct layer_desc *l = &ld[li];
		unsigned char *restrict o = raw + l->offset;
		switch (l->id) {
		case WB_LAYER_HEIGHT: {
			const float *restrict h = pg->height;
			if (!h) {
				rc = ENC_NOARRAY;
				goto out;
			}
			for (int i = 0; i < n; i++)
				if (h[i] != WB_DRY_HEIGHT && !isfinite(h[i])) {
					rc = ENC_NAN_HEIGHT;
					goto out;
				}
			float b;
			if (page_fit(c, slot, &b)) {
				rc = ENC_RANGE;
				goto out;
			}
			for (int i = 0; i < n; i++) {
				if (h[i] == WB_DRY_HEIGHT) {
					put16(o + 2 * i, WTP_DRY_HALF);
					continue;
				}
				int a = i % WB_PAGE_SIZE, bb = i / WB_PAGE_SIZE;
				float v = pix_value(c, px, py, i, h[i]);
				float d = v - b;
				uint16_t hb = pack_half(d);
				/* exact by construction (page_fit); checked
				   so that a seam can never differ */
				if (!(fabsf(d) <= PACK_MAX_OFFSET) ||
				    wtp_half_to_float(hb) != d || b + d != v) {
					rc = ENC_RANGE;
					goto out;
				}
				put16(o + 2 * i, hb);
				if (rg && a >= 1 && a <= WB_PAGE_INTERIOR &&
				    bb >= 1 && bb <= WB_PAGE_INTERIOR) {
					if (!rg->water)
						rg->water = 1, rg->lo = rg->hi = v;
					rg->lo = v < rg->lo ? v : rg->lo;
					rg->hi = v > rg->hi ? v : rg->hi;
				}
			}
			*base = b;
			break;
		}
		case WB_LAYER_FLOW: {
			const float *restrict f = pg->flow;
			if (!f) {
				rc = ENC_NOARRAY;
				goto out;
			}
			for (int i = 0; i < 2 * n; i++) {
				if (isnan(f[i])) {
					rc = ENC_NAN_FLOW;
					goto out;
				}
				/* -0 stored as +0 (section 4) */
				float v = clamp_half(f[i]) + 0.0f;
				if (l->bc) {
					tmp[i] = v;
					continue;
				}
				put16(o + 2 * i, pack_half(v));
			}
			if (l->bc)
				encode_bc(l, tmp, o);
			break;
		}
		case WB_LAYER_MATERIAL:
			if (!pg->material) {
				rc = ENC_NOARRAY;
				goto out;
			}
			memcpy(o, pg->material, (size_t)n);
			break;
		case WB_LAYER_DISTANCE: {
			const float *restrict f = pg->distance;
			if (!f) {
				rc = ENC_NOARRAY;
				goto out;
			}
			for (int i = 0; i < n; i++) {
				if (isnan(f[i])) {
					rc = ENC_NAN_DIST;
					goto out;
				}
				if (l->bc) {
					tmp[i] = clamp_half(f[i]);
					continue;
				}
				put16(o + 2 * i, pack_half(clamp_half(f[i])));
			}
			if (l->bc)
				encode_bc(l, tmp, o);
			break;
		}
		case WB_LAYER_FOAM: {
			const float *restrict f = pg->foam;
			if (!f) {
				rc = ENC_NOARRAY;
				goto out;
			}
			for (int i = 0; i < n; i++) {
				float v = f[i];
				if (isnan(v)) {
					rc = ENC_NAN_FOAM;
					goto out;
				}
				v = v < 0 ? 0 : v > 1 ? 1 : v;
				if (l->bc) {
					tmp[i] = v;
					continue;
				}
				o[i] = (unsigned char)floorf(v * 255.0f + 0.5f);
			}
			if (l->bc)
				encode_bc(l, tmp, o);
			break;
		}
		}
	}
out:
	free(tmp);
	return rc;
}

enum wb_status pack_encode_page(const struct wb_pageset *ps, int lod,
				long slot, unsigned char *raw, float *base,
				struct wb_diags *d)
{
	struct layer_desc ld[WB_LAYER_COUNT];
	int nl = layers_describe(ps->layers, ps->bc_layers, ld);
	const struct wb_lod_pages *l = &ps->lods[lod];
	float *q = malloc((size_t)l->px * l->py * sizeof *q);
	if (!q)
		return wb_fail(d, WB_EIO, NULL, "pack: out of memory");
	int lr = lod_steps(l, q);
	if (lr) {
		free(q);
		return lr == -2 ? wb_fail(d, WB_EIO, NULL, "pack: out of memory")
				: wb_fail(d, WB_EINPUT, NULL, "pack: LOD %d: %s",
					  lod, enc_msg(ENC_RANGE));
	}
	struct hctx c = { l, q };
	int e = encode(ld, nl, &c, slot, raw, base, NULL);
	free(q);
	if (e != ENC_OK)
		return wb_fail(d, WB_EINPUT, NULL, "pack: %s", enc_msg(e));
	return WB_OK;
}

/* Codec ZLIB_DELTA_SPLIT's filters (section 8), in one pass: within each
 * row, each component value minus the same component of the pixel to its
 * left (mod 2^(8 cb), pixel 0 kept), stored byte-split: byte j of the
 * plane's k-th component goes to out[offset + j*n + k]. */
static void delta_split(const struct layer_desc *ld, int nl,
			const unsigned char *restrict in,
			unsigned char *restrict out)
{
	for (int li = 0; li < nl; li++) {
		const struct layer_desc *l = &ld[li];
		if (l->bc) { /* BC planes are stored verbatim (4.1) */
			memcpy(out + l->offset, in + l->offset, l->size);
			continue;
		}
		uint32_t cb = (uint32_t)l->cbytes, c = (uint32_t)l->comps;
		uint32_t n = l->size / cb, row = WB_PAGE_SIZE * c;
		const unsigned char *restrict s = in + l->offset;
		unsigned char *restrict t = out + l->offset;
		for (uint32_t k0 = 0; k0 < n; k0 += row) {
			unsigned prev[2] = { 0, 0 }; /* first pixel kept */
			for (uint32_t k = k0; k < k0 + row; k += c)
				for (uint32_t q = 0; q < c; q++) {
					if (cb == 1) {
						t[k + q] = (unsigned char)(s[k + q] - prev[q]);
						prev[q] = s[k + q];
						continue;
					}
					/* cb == 2: the 2-byte formats of version 1 */
					unsigned v = s[2 * (k + q)] |
						     (unsigned)s[2 * (k + q) + 1] << 8;
					unsigned d = v - prev[q];
					prev[q] = v;
					t[k + q] = (unsigned char)d;
					t[n + k + q] = (unsigned char)(d >> 8);
				}
		}
	}
}

/* ---- growable byte buffer -------------------------------------------- */

struct buf {
	unsigned char *p;
	size_t len, cap;
};

static int buf_reserve(struct buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 1 << 16;
	while (cap < b->len + more)
		cap *= 2;
	unsigned char *np = realloc(b->p, cap);
	if (!np)
		return -1;
	b->p = np;
	b->cap = cap;
	return 0;
}

static int buf_put(struct buf *b, const void *src, size_t n)
{
	if (!n)
		return 0;
	if (buf_reserve(b, n))
		return -1;
	memcpy(b->p + b->len, src, n);
	b->len += n;
	return 0;
}

static int buf_zero(struct buf *b, size_t n)
{
	if (!n)
		return 0;
	if (buf_reserve(b, n))
		return -1;
	memset(b->p + b->len, 0, n);
	b->len += n;
	return 0;
}

/* ---- writer state ---------------------------------------------------- */

struct vat_ent {
	uint8_t state, flags, material;
	int8_t qexp;     /* FLAT / DATA: log2 of the page's height step */
	float height;
	uint32_t page;
};

struct dir_ent {
	uint64_t rel;    /* offset from data_offset */
	uint64_t hash;   /* FNV-1a 64 of the decoded bytes */
	uint32_t stored, raw, crc;
	uint8_t codec;
	int lod;         /* where it was first met, for byte compares */
	long slot;
};

struct slot_ref {
	int lod;
	long slot;
};

struct qt_node {
	uint8_t water;
	float lo, hi;
};

struct hash_ent {
	uint64_t h;
	uint32_t page; /* UINT32_MAX: free */
};

struct writer {
	const struct wb_pageset *ps;
	struct layer_desc ld[WB_LAYER_COUNT];
	int nl;
	uint32_t raw_size, align;
	struct vat_ent **vat;       /* per LOD */
	uint32_t *first_page, *n_new;
	struct dir_ent *dir;
	uint32_t n_dir, cap_dir;
	struct hash_ent *ht;
	uint32_t ht_cap;
	struct buf data;
	struct qt_node **qt;
	uint32_t *qw, *qh;
	int nq;
	float **q;                  /* per LOD, per slot: height step (4) */
	struct range **rng;         /* per LOD, per slot: decoded range */
};

/* The per-page hash of section 8: FNV-1a 64 of the decoded bytes (the
 * reader's wtp_hash64); also the deduplication key. */
static uint64_t page_hash(const unsigned char *raw, size_t n)
{
	return wtp_hash64(raw, n);
}

static int ht_grow(struct writer *w)
{
	uint32_t cap = w->ht_cap ? w->ht_cap * 2 : 1024;
	struct hash_ent *t = malloc(cap * sizeof *t);
	if (!t)
		return -1;
	for (uint32_t i = 0; i < cap; i++)
		t[i].page = UINT32_MAX;
	for (uint32_t i = 0; i < w->ht_cap; i++) {
		if (w->ht[i].page == UINT32_MAX)
			continue;
		uint32_t j = (uint32_t)(w->ht[i].h & (cap - 1));
		while (t[j].page != UINT32_MAX)
			j = (j + 1) & (cap - 1);
		t[j] = w->ht[i];
	}
	free(w->ht);
	w->ht = t;
	w->ht_cap = cap;
	return 0;
}


/* Find an earlier page with the same bytes; UINT32_MAX when none. 'tmp'
 * is raw_size bytes of scratch. */
static uint32_t dedup_find(struct writer *w, uint64_t h,
			   const unsigned char *raw, unsigned char *tmp)
{
	if (!w->ht_cap)
		return UINT32_MAX;
	uint32_t j = (uint32_t)(h & (w->ht_cap - 1));
	for (; w->ht[j].page != UINT32_MAX; j = (j + 1) & (w->ht_cap - 1)) {
		if (w->ht[j].h != h)
			continue;
		const struct dir_ent *e = &w->dir[w->ht[j].page];
		float b;
		struct hctx c = { &w->ps->lods[e->lod], w->q[e->lod] };
		if (encode(w->ld, w->nl, &c, e->slot, tmp, &b, NULL) == ENC_OK &&
		    memcmp(tmp, raw, w->raw_size) == 0)
			return w->ht[j].page;
	}
	return UINT32_MAX;
}

static int ht_insert(struct writer *w, uint64_t h, uint32_t page)
{
	if ((w->n_dir + 1) * 2 > w->ht_cap && ht_grow(w))
		return -1;
	uint32_t j = (uint32_t)(h & (w->ht_cap - 1));
	while (w->ht[j].page != UINT32_MAX)
		j = (j + 1) & (w->ht_cap - 1);
	w->ht[j].h = h;
	w->ht[j].page = page;
	return 0;
}

static void writer_release(struct writer *w)
{
	const struct wb_pageset *ps = w->ps;
	if (w->vat)
		for (int k = 0; k < ps->n_lods; k++)
			free(w->vat[k]);
	free(w->vat);
	if (w->qt)
		for (int k = 0; k < w->nq; k++)
			free(w->qt[k]);
	free(w->qt);
	if (w->rng)
		for (int k = 0; k < ps->n_lods; k++)
			free(w->rng[k]);
	free(w->rng);
	if (w->q)
		for (int k = 0; k < ps->n_lods; k++)
			free(w->q[k]);
	free(w->q);
	free(w->qw);
	free(w->qh);
	free(w->first_page);
	free(w->n_new);
	free(w->dir);
	free(w->ht);
	free(w->data.p);
}

/* ---- checks ---------------------------------------------------------- */

static enum wb_status check_pageset(const struct wb_pageset *ps,
				    const struct wb_pack_meta *meta,
				    struct wb_diags *d)
{
	if (!ps || ps->n_lods < 1 || ps->n_lods > 32 || !ps->lods)
		return wb_fail(d, WB_EINPUT, NULL, "pack: pageset has %d LODs "
			       "(1..32)", ps ? ps->n_lods : 0);
	if (ps->layers & ~((1u << WB_LAYER_COUNT) - 1))
		return wb_fail(d, WB_EINPUT, NULL, "pack: unknown layer bits "
			       "0x%x", ps->layers);
	if (!(ps->layers & (1u << WB_LAYER_HEIGHT)))
		return wb_fail(d, WB_EINPUT, NULL, "pack: the height layer is "
			       "required (the VAT and quadtree rest on it)");
	if (ps->bc_layers & ~PACK_BC_ALLOWED)
		return wb_fail(d, WB_EINPUT, NULL, "pack: block compression "
			       "asked for layers 0x%x; only flow, distance and "
			       "foam can be (docs/wtp-format.md 4.1)",
			       ps->bc_layers & ~PACK_BC_ALLOWED);
	if (!(ps->dx0 > 0) || !isfinite(ps->dx0) ||
	    !isfinite(ps->origin[0]) || !isfinite(ps->origin[1]) ||
	    !(ps->distance_max >= 0) || !isfinite(ps->distance_max))
		return wb_fail(d, WB_EINPUT, NULL, "pack: bad dx0 %g, origin "
			       "or distance_max %g", ps->dx0,
			       ps->distance_max);
	unsigned a = meta && meta->alignment ? meta->alignment
					     : PACK_ALIGN_DEFAULT;
	if (a < 16 || a > (1u << 20) || (a & (a - 1)))
		return wb_fail(d, WB_EINPUT, NULL, "pack: alignment %u is not "
			       "a power of two in [16, 1 MiB]", a);
	for (int k = 0; k < ps->n_lods; k++) {
		const struct wb_lod_pages *l = &ps->lods[k];
		if (l->nx < 1 || l->ny < 1 ||
		    l->px != (l->nx - 1) / WB_PAGE_INTERIOR + 1 ||
		    l->py != (l->ny - 1) / WB_PAGE_INTERIOR + 1 || !l->pages)
			return wb_fail(d, WB_EINPUT, NULL, "pack: LOD %d: %d x %d "
				       "px in %d x %d pages", k, l->nx, l->ny,
				       l->px, l->py);
		if ((long long)l->px * l->py > (1 << 24))
			return wb_fail(d, WB_EINPUT, NULL, "pack: LOD %d has %d "
				       "x %d pages (max 2^24)", k, l->px,
				       l->py);
		if (k > 0 && (l->px != (ps->lods[k - 1].px + 1) / 2 ||
			      l->py != (ps->lods[k - 1].py + 1) / 2))
			return wb_fail(d, WB_EINPUT, NULL, "pack: LOD %d has %d x "
				       "%d pages, LOD %d has %d x %d: each LOD "
				       "must halve the page grid (rounding "
				       "up)", k, l->px, l->py, k - 1,
				       ps->lods[k - 1].px, ps->lods[k - 1].py);
		for (long i = 0; i < (long)l->px * l->py; i++) {
			const struct wb_page *p = &l->pages[i];
			if (p->state != WB_PAGE_EMPTY && p->state != WB_PAGE_FLAT &&
			    p->state != WB_PAGE_DATA)
				return wb_fail(d, WB_EINPUT, NULL, "pack: LOD %d "
					       "page (%ld, %ld): state %d", k,
					       i % l->px, i / l->px,
					       (int)p->state);
			if ((p->has_water && p->state != WB_PAGE_EMPTY &&
			     (!isfinite(p->hmin) || !isfinite(p->hmax))) ||
			    (p->state == WB_PAGE_FLAT &&
			     !isfinite(p->flat_height)))
				return wb_fail(d, WB_EINPUT, NULL, "pack: LOD %d "
					       "page (%ld, %ld): non-finite "
					       "height range", k, i % l->px,
					       i / l->px);
		}
	}
	return WB_OK;
}

/* ---- steps ----------------------------------------------------------- */

/* Morton-ordered slot indices of LOD k (caller frees). */
static uint32_t *morton_order(const struct wb_lod_pages *l)
{
	long n = (long)l->px * l->py;
	struct keyed *k = malloc((size_t)n * sizeof *k);
	uint32_t *out = malloc((size_t)n * sizeof *out);
	if (!k || !out) {
		free(k);
		free(out);
		return NULL;
	}
	for (long i = 0; i < n; i++) {
		k[i].idx = (uint32_t)i;
		k[i].key = spread32((uint32_t)(i % l->px)) |
			   (spread32((uint32_t)(i / l->px)) << 1);
	}
	qsort(k, (size_t)n, sizeof *k, keyed_cmp);
	for (long i = 0; i < n; i++)
		out[i] = k[i].idx;
	free(k);
	return out;
}

/* Encode, dedup, compress and append the DATA pages of 'refs' (file
 * order). */
static enum wb_status pack_pages(struct writer *w, const struct slot_ref *refs,
				 long n_refs, struct wb_diags *d)
{
	const size_t rs = w->raw_size;
	const size_t cs = compressBound((uLong)rs);
	enum wb_status st = WB_OK;
	unsigned char *raw = malloc(PACK_BATCH * rs);
	unsigned char *work = malloc(PACK_BATCH * rs);
	unsigned char *comp = malloc(PACK_BATCH * cs);
	unsigned char *tmp = malloc(rs);
	int err[PACK_BATCH];
	float base[PACK_BATCH];
	uint64_t hash[PACK_BATCH];
	uint32_t page[PACK_BATCH];
	int fresh[PACK_BATCH];
	uLongf clen[PACK_BATCH];
	if (!raw || !work || !comp || !tmp) {
		st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
		goto done;
	}
	for (long b0 = 0; b0 < n_refs; b0 += PACK_BATCH) {
		int nb = (int)(n_refs - b0 < PACK_BATCH ? n_refs - b0
							 : PACK_BATCH);
#pragma omp parallel for schedule(dynamic)
		for (int i = 0; i < nb; i++) {
			const struct slot_ref *r = &refs[b0 + i];
			unsigned char *rp = raw + (size_t)i * rs;
			struct hctx c = { &w->ps->lods[r->lod], w->q[r->lod] };
			err[i] = encode(w->ld, w->nl, &c, r->slot, rp, &base[i],
					&w->rng[r->lod][r->slot]);
			if (err[i] == ENC_OK)
				hash[i] = page_hash(rp, rs);
		}
		for (int i = 0; i < nb; i++) {
			const struct slot_ref *r = &refs[b0 + i];
			const struct wb_lod_pages *l = &w->ps->lods[r->lod];
			if (err[i] != ENC_OK) {
				st = wb_fail(d, WB_EINPUT, NULL, "pack: LOD %d page "
					     "(%ld, %ld): %s", r->lod,
					     r->slot % l->px, r->slot / l->px,
					     enc_msg(err[i]));
				goto done;
			}
			fresh[i] = 0;
			page[i] = dedup_find(w, hash[i], raw + (size_t)i * rs,
					     tmp);
			if (page[i] != UINT32_MAX)
				continue;
			if (w->n_dir == w->cap_dir) {
				uint32_t nc = w->cap_dir ? 2 * w->cap_dir : 256;
				struct dir_ent *nd =
					realloc(w->dir, nc * sizeof *nd);
				if (!nd) {
					st = wb_fail(d, WB_EIO, NULL,
						     "pack: out of memory");
					goto done;
				}
				w->dir = nd;
				w->cap_dir = nc;
			}
			page[i] = w->n_dir++;
			fresh[i] = 1;
			memset(&w->dir[page[i]], 0, sizeof w->dir[0]);
			w->dir[page[i]].hash = hash[i];
			w->dir[page[i]].lod = r->lod;
			w->dir[page[i]].slot = r->slot;
			w->n_new[r->lod]++;
			if (ht_insert(w, hash[i], page[i])) {
				st = wb_fail(d, WB_EIO, NULL,
					     "pack: out of memory");
				goto done;
			}
		}
#pragma omp parallel for schedule(dynamic)
		for (int i = 0; i < nb; i++) {
			if (!fresh[i])
				continue;
			unsigned char *wp = work + (size_t)i * rs;
			delta_split(w->ld, w->nl, raw + (size_t)i * rs, wp);
			clen[i] = (uLongf)cs;
			if (compress2(comp + (size_t)i * cs, &clen[i], wp,
				      (uLong)rs, PACK_ZLEVEL) != Z_OK)
				clen[i] = 0; /* store raw */
		}
		for (int i = 0; i < nb; i++) {
			const struct slot_ref *r = &refs[b0 + i];
			struct vat_ent *v = &w->vat[r->lod][r->slot];
			v->height = base[i];
			v->page = page[i];
			v->flags = w->rng[r->lod][r->slot].water ? 1 : 0;
			if (!fresh[i])
				continue;
			struct dir_ent *e = &w->dir[page[i]];
			const unsigned char *src;
			size_t pad = (w->align - w->data.len % w->align) %
				     w->align;
			if (buf_zero(&w->data, pad)) {
				st = wb_fail(d, WB_EIO, NULL,
					     "pack: out of memory");
				goto done;
			}
			e->rel = w->data.len;
			e->raw = (uint32_t)rs;
			/* keep the zlib stream only when it saves at least
			   1/64 of the page (as ZFS keeps a compressed block
			   only when it saves 1/8): a RAW page is uploaded
			   straight from a direct read, no inflate */
			if (clen[i] > 0 && clen[i] <= rs - rs / PACK_MIN_SAVING) {
				e->codec = WTP_CODEC_ZLIB_DELTA_SPLIT;
				e->stored = (uint32_t)clen[i];
				src = comp + (size_t)i * cs;
			} else {
				e->codec = WTP_CODEC_RAW;
				e->stored = (uint32_t)rs;
				src = raw + (size_t)i * rs;
			}
			e->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), src,
						 e->stored);
			if (buf_put(&w->data, src, e->stored)) {
				st = wb_fail(d, WB_EIO, NULL,
					     "pack: out of memory");
				goto done;
			}
		}
	}
	{
		size_t pad = (w->align - w->data.len % w->align) % w->align;
		if (buf_zero(&w->data, pad))
			st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
	}
done:
	free(raw);
	free(work);
	free(comp);
	free(tmp);
	return st;
}

static void qt_merge(struct qt_node *n, const struct qt_node *c)
{
	if (!c->water)
		return;
	if (!n->water) {
		*n = *c;
		return;
	}
	n->lo = c->lo < n->lo ? c->lo : n->lo;
	n->hi = c->hi > n->hi ? c->hi : n->hi;
}

static int build_quadtree(struct writer *w)
{
	const struct wb_pageset *ps = w->ps;
	int nq = ps->n_lods;
	uint32_t tw = (uint32_t)ps->lods[nq - 1].px,
		 th = (uint32_t)ps->lods[nq - 1].py;
	while (tw > 1 || th > 1) {
		tw = (tw + 1) / 2;
		th = (th + 1) / 2;
		nq++;
	}
	w->nq = nq;
	w->qt = calloc((size_t)nq, sizeof *w->qt);
	w->qw = calloc((size_t)nq, sizeof *w->qw);
	w->qh = calloc((size_t)nq, sizeof *w->qh);
	if (!w->qt || !w->qw || !w->qh)
		return -1;
	for (int k = 0; k < nq; k++) {
		if (k < ps->n_lods) {
			w->qw[k] = (uint32_t)ps->lods[k].px;
			w->qh[k] = (uint32_t)ps->lods[k].py;
		} else {
			w->qw[k] = (w->qw[k - 1] + 1) / 2;
			w->qh[k] = (w->qh[k - 1] + 1) / 2;
		}
		w->qt[k] = calloc((size_t)w->qw[k] * w->qh[k],
				  sizeof *w->qt[k]);
		if (!w->qt[k])
			return -1;
		for (uint32_t y = 0; y < w->qh[k]; y++)
			for (uint32_t x = 0; x < w->qw[k]; x++) {
				struct qt_node *n = &w->qt[k][x + y * w->qw[k]];
				if (k < ps->n_lods) {
					long s = x + (long)y * w->qw[k];
					const struct wb_page *p =
						&ps->lods[k].pages[s];
					/* ranges of the DECODED heights */
					if (p->state == WB_PAGE_FLAT) {
						n->water = 1;
						n->lo = n->hi = snapq(
							p->flat_height,
							w->q[k][s]);
					} else if (p->state == WB_PAGE_DATA &&
						   w->rng[k][s].water) {
						n->water = 1;
						n->lo = w->rng[k][s].lo;
						n->hi = w->rng[k][s].hi;
					}
				}
				if (k == 0)
					continue;
				for (uint32_t cy = 2 * y;
				     cy < 2 * y + 2 && cy < w->qh[k - 1]; cy++)
					for (uint32_t cx = 2 * x;
					     cx < 2 * x + 2 && cx < w->qw[k - 1];
					     cx++)
						qt_merge(n, &w->qt[k - 1][cx + cy * w->qw[k - 1]]);
			}
	}
	return 0;
}

/* Metadata records (10). */
static int meta_rec(struct buf *b, unsigned tag, const void *v, size_t n)
{
	unsigned char h[8];
	put16(h, tag);
	put16(h + 2, 0);
	put32(h + 4, (uint32_t)n);
	if (buf_put(b, h, 8) || (n && buf_put(b, v, n)))
		return -1;
	return buf_zero(b, (4 - n % 4) % 4);
}

static int meta_str(struct buf *b, unsigned tag, const char *s)
{
	return meta_rec(b, tag, s ? s : "", s ? strlen(s) : 0);
}

static int build_meta(struct buf *b, const struct wb_pack_meta *m)
{
	static const unsigned char zero[32];
	char tool[64];
	snprintf(tool, sizeof tool, "wbake %s",
		 m && m->tool_version ? m->tool_version : WB_VERSION_STRING);
	if (meta_str(b, WTP_META_SCENE_NAME, m ? m->scene_name : NULL) ||
	    meta_str(b, WTP_META_TOOL, tool) ||
	    meta_str(b, WTP_META_SOLVER, m ? m->solver : NULL) ||
	    meta_str(b, WTP_META_UNITS,
		     "height=m flow=m/s distance=m foam=1 dx=m") ||
	    meta_rec(b, WTP_META_SCENE_SHA256, m ? m->scene_sha256 : zero,
		     32) ||
	    meta_rec(b, WTP_META_HEIGHTMAP_SHA256,
		     m ? m->heightmap_sha256 : zero, 32))
		return -1;
	for (int i = 0; m && i < m->n_materials; i++) {
		const struct wb_material *mt = &m->materials[i];
		size_t nl = mt->name ? strlen(mt->name) : 0;
		unsigned char *v = malloc(32 + nl);
		if (!v)
			return -1;
		put32(v, (uint32_t)mt->id);
		put32(v + 4, (uint32_t)mt->kind);
		putf64(v + 8, mt->amplitude);
		putf64(v + 16, mt->frequency);
		putf64(v + 24, mt->speed);
		if (nl)
			memcpy(v + 32, mt->name, nl);
		int rc = meta_rec(b, WTP_META_MATERIAL, v, 32 + nl);
		free(v);
		if (rc)
			return -1;
	}
	return 0;
}

/* Header and tables (3..10) into t; data_offset etc. computed here. */
static enum wb_status build_tables(struct writer *w,
				   const struct wb_pack_meta *meta,
				   struct buf *t, uint64_t *data_offset,
				   struct wb_diags *d)
{
	const struct wb_pageset *ps = w->ps;
	struct buf mb = { 0 };
	if (build_meta(&mb, meta)) {
		free(mb.p);
		return wb_fail(d, WB_EIO, NULL, "pack: out of memory");
	}
	uint64_t off = WTP_HEADER_SIZE;
	uint64_t layer_off = off;
	off += 16u * (uint64_t)w->nl;
	uint64_t lod_off = off;
	off += 64u * (uint64_t)ps->n_lods;
	uint64_t qtl_off = off;
	off += 16u * (uint64_t)w->nq;
	uint64_t *vat_off = calloc((size_t)ps->n_lods, sizeof *vat_off);
	uint64_t *node_off = calloc((size_t)w->nq, sizeof *node_off);
	if (!vat_off || !node_off) {
		free(vat_off);
		free(node_off);
		free(mb.p);
		return wb_fail(d, WB_EIO, NULL, "pack: out of memory");
	}
	for (int k = ps->n_lods - 1; k >= 0; k--) {
		vat_off[k] = off;
		off += 12u * (uint64_t)ps->lods[k].px * ps->lods[k].py;
	}
	for (int k = w->nq - 1; k >= 0; k--) {
		node_off[k] = off;
		off += 12u * (uint64_t)w->qw[k] * w->qh[k];
	}
	uint64_t dir_off = off;
	off += 32u * (uint64_t)w->n_dir;
	uint64_t meta_off = off;
	off += mb.len;
	enum wb_status st = WB_OK;
	if (off > UINT32_MAX) {
		st = wb_fail(d, WB_EINPUT, NULL, "pack: tables of %llu bytes "
			     "exceed 4 GiB", (unsigned long long)off);
		goto done;
	}
	if (buf_reserve(t, (size_t)off)) {
		st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
		goto done;
	}
	memset(t->p, 0, (size_t)off);
	t->len = (size_t)off;
	unsigned char *b = t->p;
	uint64_t a = w->align;
	*data_offset = (off + a - 1) / a * a;

	/* header (3) */
	static const unsigned char magic[8] = { 0x89, 'W', 'T', 'P', 0x0D,
						0x0A, 0x1A, 0x0A };
	memcpy(b, magic, 8);
	put16(b + 8, WTP_VERSION_MAJOR);
	/* 2.1 only where a 2.1 feature is used: a pack without BC layers
	   stays a 2.0 pack, byte for byte */
	put16(b + 10, (ps->bc_layers & ps->layers) ? WTP_VERSION_MINOR : 0);
	put32(b + 12, WTP_HEADER_SIZE);
	put64(b + 16, *data_offset + w->data.len);
	put32(b + 24, (uint32_t)off);
	putf64(b + 32, ps->origin[0]);
	putf64(b + 40, ps->origin[1]);
	putf64(b + 48, ps->dx0);
	putf64(b + 56, ps->distance_max);
	put16(b + 64, WB_PAGE_INTERIOR);
	put16(b + 66, WB_PAGE_BORDER);
	put16(b + 68, (unsigned)ps->n_lods);
	put16(b + 70, (unsigned)w->nl);
	put32(b + 72, w->align);
	put32(b + 76, w->n_dir);
	put32(b + 80, (uint32_t)w->nq);
	put32(b + 84, w->raw_size);
	put32(b + 88, (uint32_t)layer_off);
	put32(b + 92, (uint32_t)lod_off);
	put32(b + 96, (uint32_t)qtl_off);
	put32(b + 100, (uint32_t)dir_off);
	put32(b + 104, (uint32_t)meta_off);
	put32(b + 108, (uint32_t)mb.len);
	put64(b + 112, *data_offset);

	/* layer table (4) */
	for (int i = 0; i < w->nl; i++) {
		unsigned char *e = b + layer_off + 16u * (unsigned)i;
		const struct layer_desc *l = &w->ld[i];
		e[0] = (unsigned char)l->id;
		e[1] = (unsigned char)l->format;
		e[2] = (unsigned char)l->cbytes;
		e[3] = (unsigned char)l->comps;
		put32(e + 4, l->id == WB_LAYER_HEIGHT ? WTP_LAYER_RELATIVE : 0);
		put32(e + 8, l->offset);
		put32(e + 12, l->size);
	}
	/* LOD table (5) and VATs (6) */
	for (int k = 0; k < ps->n_lods; k++) {
		const struct wb_lod_pages *l = &ps->lods[k];
		unsigned char *e = b + lod_off + 64u * (unsigned)k;
		uint32_t nf = 0, nd = 0;
		long n = (long)l->px * l->py;
		for (long i = 0; i < n; i++) {
			const struct vat_ent *v = &w->vat[k][i];
			unsigned char *ve = b + vat_off[k] + 12u * (uint64_t)i;
			nf += v->state == WTP_FLAT;
			nd += v->state == WTP_DATA;
			ve[0] = v->state;
			ve[1] = v->flags;
			ve[2] = v->material;
			ve[3] = (unsigned char)v->qexp;
			putf32(ve + 4, v->height);
			put32(ve + 8, v->page);
		}
		put32(e, (uint32_t)l->nx);
		put32(e + 4, (uint32_t)l->ny);
		put32(e + 8, (uint32_t)l->px);
		put32(e + 12, (uint32_t)l->py);
		putf64(e + 16, ldexp(ps->dx0, k));
		put64(e + 24, vat_off[k]);
		put32(e + 32, nf);
		put32(e + 36, nd);
		put32(e + 40, w->first_page[k]);
		put32(e + 44, w->n_new[k]);
		{
			float qm = 0;
			for (long i = 0; i < n; i++)
				qm = w->q[k][i] > qm ? w->q[k][i] : qm;
			putf64(e + 48, (double)qm);
		}
	}
	/* quadtree (7) */
	for (int k = 0; k < w->nq; k++) {
		unsigned char *e = b + qtl_off + 16u * (unsigned)k;
		put32(e, w->qw[k]);
		put32(e + 4, w->qh[k]);
		put64(e + 8, node_off[k]);
		for (uint64_t i = 0; i < (uint64_t)w->qw[k] * w->qh[k]; i++) {
			const struct qt_node *q = &w->qt[k][i];
			unsigned char *ne = b + node_off[k] + 12u * i;
			ne[0] = q->water;
			putf32(ne + 4, q->water ? q->lo : 0.0f);
			putf32(ne + 8, q->water ? q->hi : 0.0f);
		}
	}
	/* page directory (8) */
	for (uint32_t i = 0; i < w->n_dir; i++) {
		const struct dir_ent *e = &w->dir[i];
		unsigned char *de = b + dir_off + 32u * (uint64_t)i;
		put64(de, *data_offset + e->rel);
		put32(de + 8, e->stored);
		put32(de + 12, e->raw);
		put32(de + 16, e->crc);
		de[20] = e->codec;
		put64(de + 24, e->hash);
	}
	/* metadata (10) */
	if (mb.len)
		memcpy(b + meta_off, mb.p, mb.len);
	put32(b + 28, (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)off));
done:
	free(vat_off);
	free(node_off);
	free(mb.p);
	return st;
}

enum wb_status pack_write(const char *path, const struct wb_pageset *ps,
			  const struct wb_pack_meta *meta,
			  struct wb_pack_stats *stats, struct wb_diags *d)
{
	enum wb_status st = check_pageset(ps, meta, d);
	if (st != WB_OK)
		return st;
	struct writer w;
	memset(&w, 0, sizeof w);
	w.ps = ps;
	w.nl = layers_describe(ps->layers, ps->bc_layers, w.ld);
	w.raw_size = (uint32_t)pack_page_raw_size_bc(ps->layers,
						     ps->bc_layers);
	w.align = meta && meta->alignment ? meta->alignment
					  : PACK_ALIGN_DEFAULT;
	struct slot_ref *refs = NULL;
	long n_refs = 0;
	struct buf t = { 0 };
	struct wb_atomic at;
	memset(&at, 0, sizeof at);

	w.vat = calloc((size_t)ps->n_lods, sizeof *w.vat);
	w.q = calloc((size_t)ps->n_lods, sizeof *w.q);
	w.rng = calloc((size_t)ps->n_lods, sizeof *w.rng);
	w.first_page = calloc((size_t)ps->n_lods, sizeof *w.first_page);
	w.n_new = calloc((size_t)ps->n_lods, sizeof *w.n_new);
	long total = 0;
	for (int k = 0; k < ps->n_lods; k++)
		total += (long)ps->lods[k].px * ps->lods[k].py;
	refs = malloc((size_t)(total ? total : 1) * sizeof *refs);
	if (!w.vat || !w.first_page || !w.n_new || !refs || !w.q ||
	    !w.rng) {
		st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
		goto fail;
	}
	for (int k = 0; k < ps->n_lods; k++) {
		w.q[k] = malloc((size_t)ps->lods[k].px * ps->lods[k].py *
				sizeof *w.q[k]);
		if (!w.q[k]) {
			st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
			goto fail;
		}
		int lr = lod_steps(&ps->lods[k], w.q[k]);
		if (lr) {
			st = lr == -2 ? wb_fail(d, WB_EIO, NULL,
						"pack: out of memory")
				      : wb_fail(d, WB_EINPUT, NULL,
						"pack: LOD %d: %s", k,
						enc_msg(ENC_RANGE));
			goto fail;
		}
		w.rng[k] = calloc((size_t)ps->lods[k].px * ps->lods[k].py,
				  sizeof *w.rng[k]);
		if (!w.rng[k]) {
			st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
			goto fail;
		}
	}
	/* FLAT pages expand to one height on all 130x130 pixels: two FLAT
	   pages whose footprints overlap (8-neighbours) must agree there */
	for (int k = 0; k < ps->n_lods; k++) {
		const struct wb_lod_pages *l = &ps->lods[k];
		for (long i = 0; i < (long)l->px * l->py; i++) {
			const struct wb_page *p = &l->pages[i];
			int x = (int)(i % l->px), y = (int)(i / l->px);
			if (p->state != WB_PAGE_FLAT)
				continue;
			for (int j = y; j <= y + 1 && j < l->py; j++)
				for (int q = x - 1; q <= x + 1; q++) {
					if (q < 0 || q >= l->px ||
					    (j == y && q <= x))
						continue;
					const struct wb_page *o =
						&l->pages[q + (long)j * l->px];
					if (o->state == WB_PAGE_FLAT &&
					    snapq(o->flat_height,
						  w.q[k][q + (long)j * l->px]) !=
						    snapq(p->flat_height,
							  w.q[k][i])) {
						st = wb_fail(d, WB_EINPUT, NULL,
							     "pack: LOD %d: FLAT "
							     "pages (%d, %d) and "
							     "(%d, %d) touch but "
							     "have heights %.9g "
							     "and %.9g", k, x, y,
							     q, j,
							     (double)p->flat_height,
							     (double)o->flat_height);
						goto fail;
					}
				}
		}
	}
	/* VAT entries; DATA slots in file order (9) */
	for (int k = ps->n_lods - 1; k >= 0; k--) {
		const struct wb_lod_pages *l = &ps->lods[k];
		long n = (long)l->px * l->py;
		w.vat[k] = calloc((size_t)n, sizeof *w.vat[k]);
		uint32_t *ord = morton_order(l);
		if (!w.vat[k] || !ord) {
			free(ord);
			st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
			goto fail;
		}
		for (long j = 0; j < n; j++) {
			uint32_t i = ord[j];
			const struct wb_page *p = &l->pages[i];
			struct vat_ent *v = &w.vat[k][i];
			v->page = WTP_NO_PAGE;
			if (p->state != WB_PAGE_EMPTY) {
				int ex;
				frexpf(w.q[k][i], &ex);
				v->qexp = (int8_t)(ex - 1);
			}
			switch (p->state) {
			case WB_PAGE_EMPTY:
				v->state = WTP_EMPTY;
				v->height = WB_DRY_HEIGHT;
				break;
			case WB_PAGE_FLAT:
				v->state = WTP_FLAT;
				v->flags = p->has_water ? 1 : 0;
				v->material = p->flat_material;
				v->height = snapq(p->flat_height, w.q[k][i]);
				break;
			case WB_PAGE_DATA:
				v->state = WTP_DATA;
				v->flags = p->has_water ? 1 : 0;
				refs[n_refs].lod = k;
				refs[n_refs].slot = i;
				n_refs++;
				break;
			}
		}
		free(ord);
	}
	st = pack_pages(&w, refs, n_refs, d);
	if (st != WB_OK)
		goto fail;
	{
		uint32_t next = 0;
		for (int k = ps->n_lods - 1; k >= 0; k--) {
			w.first_page[k] = next;
			next += w.n_new[k];
		}
	}
	if (build_quadtree(&w)) {
		st = wb_fail(d, WB_EIO, NULL, "pack: out of memory");
		goto fail;
	}
	uint64_t data_offset = 0;
	st = build_tables(&w, meta, &t, &data_offset, d);
	if (st != WB_OK)
		goto fail;

	st = wb_atomic_open(&at, path, d);
	if (st != WB_OK)
		goto fail;
	{
		static const unsigned char zeros[4096];
		size_t pad = (size_t)(data_offset - t.len);
		errno = 0;
		if (fwrite(t.p, 1, t.len, at.f) != t.len)
			goto write_fail;
		while (pad > 0) {
			size_t k = pad < sizeof zeros ? pad : sizeof zeros;
			if (fwrite(zeros, 1, k, at.f) != k)
				goto write_fail;
			pad -= k;
		}
		if (w.data.len &&
		    fwrite(w.data.p, 1, w.data.len, at.f) != w.data.len)
			goto write_fail;
	}
	st = wb_atomic_commit(&at, d);
	if (st != WB_OK)
		goto fail;
	if (stats) {
		memset(stats, 0, sizeof *stats);
		for (int k = 0; k < ps->n_lods; k++)
			for (long i = 0; i < (long)ps->lods[k].px * ps->lods[k].py;
			     i++) {
				int s = w.vat[k][i].state;
				stats->pages_data += s == WTP_DATA;
				stats->pages_flat += s == WTP_FLAT;
				stats->pages_empty += s == WTP_EMPTY;
			}
		stats->pages_unique = (long)w.n_dir;
		stats->file_bytes = (long long)(data_offset + w.data.len);
		for (uint32_t i = 0; i < w.n_dir; i++) {
			stats->raw_bytes += w.dir[i].raw;
			stats->stored_bytes += w.dir[i].stored;
		}
	}
	free(refs);
	free(t.p);
	writer_release(&w);
	return WB_OK;

write_fail:
	st = wb_fail(d, WB_EIO, path, "cannot write the pack: %s",
		     strerror(errno ? errno : EIO));
	wb_atomic_abort(&at);
fail:
	free(refs);
	free(t.p);
	writer_release(&w);
	return st;
}

void wb_pageset_free(struct wb_pageset *ps)
{
	if (!ps)
		return;
	for (int k = 0; ps->lods && k < ps->n_lods; k++) {
		struct wb_lod_pages *l = &ps->lods[k];
		if (!l->pages)
			continue;
		for (long i = 0; i < (long)l->px * l->py; i++) {
			struct wb_page *p = &l->pages[i];
			free(p->height);
			free(p->flow);
			free(p->material);
			free(p->distance);
			free(p->foam);
		}
		free(l->pages);
	}
	free(ps->lods);
	memset(ps, 0, sizeof *ps);
}
