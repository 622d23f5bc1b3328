/*
 * warm.c - save and load the solver state file (warm.h, docs/state.md).
 *
 * Layout (all integers and floats little-endian, no padding):
 *   0   8   magic "WBSTATE\0"
 *   8   4   u32 version (1)
 *   12  4   u32 nx
 *   16  4   u32 ny
 *   20  4   u32 solver (0 lbm, 1 swe)
 *   24  8   f64 dx (m)
 *   32  32  terrain SHA-256 (wb_terrain_hash)
 *   64  8   u64 steps of the bake that wrote it
 *   72  4   u32 flags (bit 0: converged)
 *   76  4   u32 fields: a bit mask, bit 0 depth, 1 u, 2 v, 3 foam,
 *           4 first-guess depth; depth, u and v always present
 *   80  ... the fields present, in bit order, each nx*ny f32, row-major
 *           (x + y nx), row 0 first
 *   end 32  SHA-256 of every byte before it
 * The whole file is read into memory (the fields are 12-16 bytes a cell,
 * like the solver's own output).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "warm.h"

#define HDR 80
static const char MAGIC[8] = { 'W', 'B', 'S', 'T', 'A', 'T', 'E', 0 };

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void putf(unsigned char *p, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	put32(p, u);
}

static float getf(const unsigned char *p)
{
	uint32_t u = get32(p);
	float f;
	memcpy(&f, &u, 4);
	return f;
}

void wb_terrain_hash(const struct wb_raster *r, unsigned char out[32])
{
	size_t n = (size_t)r->nx * r->ny;
	unsigned char *b = malloc(n * 4 + 1);
	if (!b) {
		/* hash the size alone: still refuses other grids */
		unsigned char s[8];
		put32(s, (uint32_t)r->nx);
		put32(s + 4, (uint32_t)r->ny);
		wb_sha256(s, sizeof(s), out);
		return;
	}
	for (size_t k = 0; k < n; k++)
		putf(b + 4 * k, r->z[k]);
	wb_sha256(b, n * 4, out);
	free(b);
}

enum wb_status wb_state_save(const char *path, const struct wb_raster *r,
			     int solver, const struct wb_state *st,
			     const float *guess_h,
			     const struct wb_solve_report *rep,
			     struct wb_diags *d)
{
	size_t n = (size_t)r->nx * r->ny;
	if (st->nx != r->nx || st->ny != r->ny || !st->h || !st->u || !st->v)
		return wb_fail(d, WB_EIO, path, "state: no solved state to save");
	int mods = 0;
	for (size_t k = 0; r->mod_k && k < n && !mods; k++)
		mods = r->mod_k[k] > 0;
	const float *f[WB_STATE_NFIELDS] = { st->h, st->u, st->v, st->foam, guess_h,
					     mods ? r->mod_u : NULL, mods ? r->mod_v : NULL,
					     mods ? r->mod_k : NULL };
	uint32_t mask = 0, nf = 0;
	for (int c = 0; c < WB_STATE_NFIELDS; c++)
		if (f[c]) {
			mask |= 1u << c;
			nf++;
		}
	size_t len = HDR + (size_t)nf * n * 4 + 32;
	unsigned char *b = calloc(len, 1);
	if (!b)
		return wb_fail(d, WB_EIO, path, "state: out of memory");
	memcpy(b, MAGIC, 8);
	put32(b + 8, WB_STATE_VERSION);
	put32(b + 12, (uint32_t)r->nx);
	put32(b + 16, (uint32_t)r->ny);
	put32(b + 20, (uint32_t)solver);
	uint64_t dxb;
	memcpy(&dxb, &r->dx, 8);
	put64(b + 24, dxb);
	wb_terrain_hash(r, b + 32);
	put64(b + 64, rep ? (uint64_t)rep->steps : 0);
	put32(b + 72, rep && rep->converged ? 1u : 0u);
	put32(b + 76, mask);
	unsigned char *p = b + HDR;
	for (int c = 0; c < WB_STATE_NFIELDS; c++)
		for (size_t k = 0; f[c] && k < n; k++, p += 4)
			putf(p, f[c][k]);
	wb_sha256(b, len - 32, b + len - 32);
	enum wb_status s = wb_write_file_atomic(path, b, len, d);
	free(b);
	return s;
}

enum wb_status wb_state_load(const char *path, const struct wb_raster *r,
			     struct wb_state *st, float **guess_h, float *mod[3],
			     int *solver, struct wb_diags *d)
{
	float *gh = NULL, *fm[3] = { NULL, NULL, NULL };
	unsigned char *b = NULL, sum[32], th[32];
	size_t len;
	enum wb_status s;
	memset(st, 0, sizeof(*st));
	if (guess_h)
		*guess_h = NULL;
	if (mod)
		mod[0] = mod[1] = mod[2] = NULL;
	s = wb_read_file(path, &b, &len, d);
	if (s != WB_OK)
		return s;
	if (len < HDR + 32 || memcmp(b, MAGIC, 8) != 0) {
		s = wb_fail(d, WB_EINPUT, path,
			    "not a wbake state file (expected magic \"WBSTATE\" and at least %d bytes)",
			    HDR + 32);
		goto out;
	}
	uint32_t ver = get32(b + 8);
	if (ver != 1 && ver != WB_STATE_VERSION) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state file version %u, this wbake reads versions 1 to %d",
			    ver, WB_STATE_VERSION);
		goto out;
	}
	uint32_t nx = get32(b + 12), ny = get32(b + 16), mask = get32(b + 76);
	uint32_t nf = 0;
	for (int c = 0; c < 32; c++)
		nf += (mask >> c) & 1u;
	uint64_t dxb = get64(b + 24);
	double dx;
	memcpy(&dx, &dxb, 8);
	/* version 1 has the first five fields; the modifier's three come
	   together or not at all */
	if ((mask & 7u) != 7u || mask >> (ver == 1 ? 5 : WB_STATE_NFIELDS) ||
	    ((mask >> 5) != 0 && (mask >> 5) != 7u) || nx == 0 || ny == 0 || nx > (1u << 20) ||
	    ny > (1u << 20) ||
	    len != HDR + (size_t)nf * nx * ny * 4 + 32) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state file is truncated or corrupt (%zu bytes for a %ux%u grid with fields 0x%x)",
			    len, nx, ny, mask);
		goto out;
	}
	wb_sha256(b, len - 32, sum);
	if (memcmp(sum, b + len - 32, 32) != 0) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state file is corrupt (its SHA-256 does not match)");
		goto out;
	}
	if ((int)nx != r->nx || (int)ny != r->ny || dx != r->dx) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state is for a %ux%u grid at %g m, this scene's grid is %dx%d at %g m: warm start refused",
			    nx, ny, dx, r->nx, r->ny, r->dx);
		goto out;
	}
	wb_terrain_hash(r, th);
	if (memcmp(th, b + 32, 32) != 0) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state is for a different terrain (terrain hash differs): warm start refused");
		goto out;
	}
	size_t n = (size_t)nx * ny;
	st->nx = (int)nx;
	st->ny = (int)ny;
	st->dx = dx;
	float **f[WB_STATE_NFIELDS] = { &st->h, &st->u, &st->v, &st->foam, &gh,
				       &fm[0], &fm[1], &fm[2] };
	const unsigned char *p = b + HDR;
	for (int c = 0; c < WB_STATE_NFIELDS; c++) {
		if (!(mask & (1u << c)))
			continue;
		*f[c] = malloc(n * sizeof(float));
		if (!*f[c]) {
			s = wb_fail(d, WB_EIO, path, "state: out of memory");
			goto bad;
		}
		for (size_t k = 0; k < n; k++, p += 4)
			(*f[c])[k] = getf(p);
	}
	for (size_t k = 0; k < n; k++)
		if (!(st->h[k] >= 0) || !isfinite(st->h[k])) {
			s = wb_fail(d, WB_EINPUT, path,
				    "state file has a negative or non-finite depth at cell (%zu, %zu)",
				    k % nx, k / nx);
			goto bad;
		}
	if (solver)
		*solver = (int)get32(b + 20);
	if (guess_h)
		*guess_h = gh;
	else
		free(gh);
	for (int c = 0; c < 3; c++) {
		if (mod)
			mod[c] = fm[c];
		else
			free(fm[c]);
	}
	free(b);
	return WB_OK;
bad:
	wb_state_free(st);
	free(gh);
	for (int c = 0; c < 3; c++)
		free(fm[c]);
out:
	free(b);
	return s;
}
