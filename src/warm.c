/*
 * warm.c - save and load the solver state file (warm.h, docs/state.md).
 *
 * Layout, version 3 (all integers and floats little-endian, no padding):
 *   0   8   magic "WBSTATE\0"
 *   8   4   u32 version (3)
 *   12  4   u32 nx
 *   16  4   u32 ny
 *   20  4   u32 solver (0 lbm, 1 swe)
 *   24  8   f64 dx (m)
 *   32  32  terrain hash (wb_terrain_hash)
 *   64  8   u64 steps of the bake that wrote it
 *   72  4   u32 flags (bit 0: converged)
 *   76  4   u32 fields: a bit mask, bit 0 depth, 1 u, 2 v, 3 foam,
 *           4 first-guess depth, 5-7 the modifier's u, v, rate
 *   80  ... the fields present, in bit order, each cut into runs of
 *           WB_STATE_RUN values (row-major, x + y nx; the last run
 *           shorter): a bitmap of the runs stored (bit r of byte r / 8),
 *           then those runs' f32 values; the others are all +0
 *   end 32  the digest of pieces (wb_sha256_pieces) of every byte before
 * Versions 1 and 2 stored every value (no bitmaps) and hashed the file
 * and the terrain with one SHA-256 each; they are still read.
 * A run is stored when any of its values has a bit set (-0 included), so
 * the fields come back bit for bit; dry land costs a bit per run. The
 * file is built in memory (the stored runs, not the grid), then written
 * atomically.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "warm.h"

#define HDR 80
static const char MAGIC[8] = { 'W', 'B', 'S', 'T', 'A', 'T', 'E', 0 };
/* The largest magnitude a loaded value may have: past it the solvers'
 * squares (u u, g h h) overflow single precision. */
#define STATE_MAX_ABS 1e18f
static const char *const state_field_names[WB_STATE_NFIELDS] = {
	"depth", "u", "v", "foam", "first-guess depth",
	"modifier u", "modifier v", "modifier rate"
};

/* Whether field c (bit order) is a depth, which must not be negative. */
static int state_depth(int c)
{
	return c == 0 || c == 4;
}

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

/* wb_sha256_pieces' get: the elevations' bytes, f32 little-endian. */
static void z_bytes(const void *data, size_t off, size_t n, unsigned char *buf)
{
	const float *z = data;
	for (size_t k = 0; k < n / 4; k++)
		putf(buf + 4 * k, z[off / 4 + k]);
}

int wb_terrain_hash(const struct wb_raster *r, int version, int threads,
		    unsigned char out[32])
{
	const size_t n = (size_t)r->nx * r->ny;
	if (version >= 3)
		return wb_sha256_pieces(r->z, n * 4, threads, z_bytes, out);
	/* versions 1 and 2: one SHA-256 of all the bytes */
	unsigned char *b = malloc(n * 4 + 1);
	if (!b)
		return -1;
	z_bytes(r->z, 0, n * 4, b);
	wb_sha256(b, n * 4, out);
	free(b);
	return 0;
}

/* A run is stored when any of its values has a bit set. */
static int run_set(const float *f, size_t k0, size_t k1)
{
	uint32_t any = 0;
	for (size_t k = k0; k < k1; k++) {
		uint32_t u;
		memcpy(&u, &f[k], 4);
		any |= u;
	}
	return any != 0;
}

enum wb_status wb_state_save(const char *path, const struct wb_raster *r,
			     int solver, const struct wb_state *st,
			     const float *guess_h,
			     const struct wb_solve_report *rep, int threads,
			     struct wb_diags *d)
{
	const size_t n = (size_t)r->nx * r->ny, R = (n + WB_STATE_RUN - 1) / WB_STATE_RUN,
		     mb = (R + 7) / 8;
	if (st->nx != r->nx || st->ny != r->ny || !st->h || !st->u || !st->v)
		return wb_fail(d, WB_EIO, path, "state: no solved state to save");
	int mods = 0;
	for (size_t k = 0; r->mod_k && k < n && !mods; k++)
		mods = r->mod_k[k] > 0;
	const float *f[WB_STATE_NFIELDS] = { st->h, st->u, st->v, st->foam, guess_h,
					     mods ? r->mod_u : NULL, mods ? r->mod_v : NULL,
					     mods ? r->mod_k : NULL };
	const int T = wb_threads(threads);
	uint32_t mask = 0;
	/* where each field's runs go: off[c R + q] is the file offset of
	   run q of field c, or SIZE_MAX when it is not stored */
	size_t *off = malloc((R ? R : 1) * WB_STATE_NFIELDS * sizeof(*off)),
	       start[WB_STATE_NFIELDS + 1], len = HDR;
	if (!off)
		return wb_fail(d, WB_EIO, path, "state: out of memory");
	for (int c = 0; c < WB_STATE_NFIELDS; c++) {
		start[c] = len;
		if (!f[c])
			continue;
		mask |= 1u << c;
		size_t *o = off + (size_t)c * R;
#pragma omp parallel for num_threads(T) schedule(static, 4096)
		for (size_t q = 0; q < R; q++) {
			size_t k1 = (q + 1) * WB_STATE_RUN;
			o[q] = run_set(f[c], q * WB_STATE_RUN, k1 < n ? k1 : n);
		}
		size_t at = len + mb; /* in index order: the same bytes always */
		for (size_t q = 0; q < R; q++) {
			if (!o[q]) {
				o[q] = SIZE_MAX;
				continue;
			}
			o[q] = at;
			at += (q + 1 < R ? WB_STATE_RUN : n - q * WB_STATE_RUN) * 4;
		}
		len = at;
	}
	start[WB_STATE_NFIELDS] = len;
	len += 32;
	unsigned char *b = calloc(len, 1);
	if (!b) {
		free(off);
		return wb_fail(d, WB_EIO, path, "state: out of memory");
	}
	memcpy(b, MAGIC, 8);
	put32(b + 8, WB_STATE_VERSION);
	put32(b + 12, (uint32_t)r->nx);
	put32(b + 16, (uint32_t)r->ny);
	put32(b + 20, (uint32_t)solver);
	uint64_t dxb;
	memcpy(&dxb, &r->dx, 8);
	put64(b + 24, dxb);
	int e = wb_terrain_hash(r, WB_STATE_VERSION, threads, b + 32);
	put64(b + 64, rep ? (uint64_t)rep->steps : 0);
	put32(b + 72, rep && rep->converged ? 1u : 0u);
	put32(b + 76, mask);
	for (int c = 0; c < WB_STATE_NFIELDS; c++) {
		if (!f[c])
			continue;
		const size_t *o = off + (size_t)c * R;
		unsigned char *bm = b + start[c];
#pragma omp parallel for num_threads(T) schedule(static, 4096)
		for (size_t q = 0; q < R; q++) {
			if (o[q] == SIZE_MAX)
				continue;
			size_t k1 = (q + 1) * WB_STATE_RUN;
			if (k1 > n)
				k1 = n;
			unsigned char *p = b + o[q];
			for (size_t k = q * WB_STATE_RUN; k < k1; k++, p += 4)
				putf(p, f[c][k]);
		}
		for (size_t q = 0; q < R; q++)
			if (o[q] != SIZE_MAX)
				bm[q / 8] |= (unsigned char)(1u << (q % 8));
	}
	free(off);
	e |= wb_sha256_pieces(b, len - 32, threads, NULL, b + len - 32);
	enum wb_status s = e ? wb_fail(d, WB_EIO, path, "state: out of memory") :
			       wb_write_file_atomic(path, b, len, d);
	free(b);
	return s;
}

/* The fields of a version 3 file (b, len bytes, its digest checked), in
 * bit order of mask, into f[c] (malloc'd, n values each). Returns 0, 1
 * when the runs do not fill the file exactly (truncated or corrupt), or
 * -1 when out of memory. */
static int read_runs(const unsigned char *b, size_t len, uint32_t mask,
		     size_t n, float **f[WB_STATE_NFIELDS])
{
	const size_t R = (n + WB_STATE_RUN - 1) / WB_STATE_RUN, mb = (R + 7) / 8,
		     end = len - 32;
	size_t at = HDR;
	for (int c = 0; c < WB_STATE_NFIELDS; c++) {
		if (!(mask & (1u << c)))
			continue;
		if (mb > end - at)
			return 1;
		const unsigned char *bm = b + at;
		at += mb;
		if (R % 8 && bm[mb - 1] >> (R % 8)) /* bits past the last run */
			return 1;
		float *v = calloc(n ? n : 1, sizeof(float));
		if (!v)
			return -1;
		*f[c] = v;
		for (size_t q = 0; q < R; q++) {
			if (!(bm[q / 8] >> (q % 8) & 1))
				continue;
			size_t k0 = q * WB_STATE_RUN, k1 = k0 + WB_STATE_RUN;
			if (k1 > n)
				k1 = n;
			if ((k1 - k0) * 4 > end - at)
				return 1;
			for (size_t k = k0; k < k1; k++, at += 4)
				v[k] = getf(b + at);
		}
	}
	return at == end ? 0 : 1;
}

enum wb_status wb_state_load(const char *path, const struct wb_raster *r,
			     struct wb_state *st, float **guess_h, float *mod[3],
			     int *solver, int threads, struct wb_diags *d)
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
	if (ver < 1 || ver > WB_STATE_VERSION) {
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
	   together or not at all; versions 1 and 2 store every value */
	if ((mask & 7u) != 7u || mask >> (ver == 1 ? 5 : WB_STATE_NFIELDS) ||
	    ((mask >> 5) != 0 && (mask >> 5) != 7u) || nx == 0 || ny == 0 || nx > (1u << 20) ||
	    ny > (1u << 20) ||
	    (ver < 3 && len != HDR + (size_t)nf * nx * ny * 4 + 32)) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state file is truncated or corrupt (%zu bytes for a %ux%u grid with fields 0x%x)",
			    len, nx, ny, mask);
		goto out;
	}
	if ((int)nx != r->nx || (int)ny != r->ny || dx != r->dx) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state is for a %ux%u grid at %g m, this scene's grid is %dx%d at %g m: warm start refused",
			    nx, ny, dx, r->nx, r->ny, r->dx);
		goto out;
	}
	size_t n = (size_t)nx * ny;
	float **f[WB_STATE_NFIELDS] = { &st->h, &st->u, &st->v, &st->foam, &gh,
				       &fm[0], &fm[1], &fm[2] };
	if (ver >= 3) { /* the runs first: a short file is named so */
		int e = read_runs(b, len, mask, n, f);
		if (e) {
			s = e < 0 ? wb_fail(d, WB_EIO, path, "state: out of memory") :
				    wb_fail(d, WB_EINPUT, path,
					    "state file is truncated or corrupt (%zu bytes do not hold the runs of a %ux%u grid with fields 0x%x)",
					    len, nx, ny, mask);
			goto bad;
		}
	}
	if (ver >= 3 ? wb_sha256_pieces(b, len - 32, threads, NULL, sum) :
		       (wb_sha256(b, len - 32, sum), 0)) {
		s = wb_fail(d, WB_EIO, path, "state: out of memory");
		goto bad;
	}
	if (memcmp(sum, b + len - 32, 32) != 0) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state file is corrupt (its SHA-256 does not match)");
		goto bad;
	}
	if (wb_terrain_hash(r, (int)ver, threads, th)) {
		s = wb_fail(d, WB_EIO, path, "state: out of memory");
		goto bad;
	}
	if (memcmp(th, b + 32, 32) != 0) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state is for a different terrain (terrain hash differs): warm start refused");
		goto bad;
	}
	st->nx = (int)nx;
	st->ny = (int)ny;
	st->dx = dx;
	const unsigned char *p = b + HDR;
	for (int c = 0; ver < 3 && c < WB_STATE_NFIELDS; c++) {
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
	/* The digest only proves that the bytes are as written, not that a
	 * wbake wrote them: every value the start reads is checked, so that
	 * a crafted file is refused here (exit 2, naming it) instead of
	 * making the solver diverge (a NaN velocity) or the pack fail. */
	for (int c = 0; c < WB_STATE_NFIELDS; c++) {
		const float *v = *f[c];
		if (!v)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (isfinite(v[k]) && !(v[k] < 0 && state_depth(c)) &&
			    fabsf(v[k]) <= STATE_MAX_ABS)
				continue;
			s = wb_fail(d, WB_EINPUT, path,
				    "state file is corrupt: its %s at cell (%zu, %zu) is %g; expected %s",
				    state_field_names[c], k % nx, k / nx, (double)v[k],
				    state_depth(c) ? "a depth from 0 to 1e+18 m" :
						     "a finite value within +-1e+18");
			goto bad;
		}
	}
	uint32_t sv = get32(b + 20);
	if (sv != WB_SOLVER_LBM && sv != WB_SOLVER_SWE) {
		s = wb_fail(d, WB_EINPUT, path,
			    "state file names solver %u; expected 0 (lbm) or 1 (swe)",
			    sv);
		goto bad;
	}
	if (solver)
		*solver = (int)sv;
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
