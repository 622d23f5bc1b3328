/*
 * pfm.c - PFM (Portable Float Map, Netpbm) write and read.
 *
 * Format: ASCII header "Pf" (one channel) or "PF" (three, interleaved RGB),
 * whitespace, width, whitespace, height, whitespace, a scale whose sign
 * gives the byte order (negative: little-endian, positive: big-endian), one
 * whitespace character, then width*height*channels 4-byte IEEE floats.
 * Rows are stored bottom to top: the first row in the file is the bottom
 * row of the picture. wbake's grid has row 0 at the top (wbake.h), so grid
 * row j is file row ny-1-j. We always write "-1.0" (little-endian) and
 * encode bytes explicitly, so output is identical on any host.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Limit on width and height, so that size arithmetic never overflows. */
#define PFM_MAX_DIM 1000000

static void put_f32le(unsigned char *p, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	p[0] = (unsigned char)u;
	p[1] = (unsigned char)(u >> 8);
	p[2] = (unsigned char)(u >> 16);
	p[3] = (unsigned char)(u >> 24);
}

static float get_f32(const unsigned char *p, int big)
{
	uint32_t u;
	if (big)
		u = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		    (uint32_t)p[2] << 8 | p[3];
	else
		u = (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
		    (uint32_t)p[1] << 8 | p[0];
	float v;
	memcpy(&v, &u, 4);
	return v;
}

enum wb_status wb_pfm_write(const char *path, const float *data, int nx,
			    int ny, int channels, struct wb_diags *d)
{
	if (nx <= 0 || ny <= 0 || nx > PFM_MAX_DIM || ny > PFM_MAX_DIM ||
	    (channels != 1 && channels != 3))
		return wb_fail(d, WB_EIO, path,
			       "cannot write PFM of %dx%d with %d channels",
			       nx, ny, channels);
	size_t rowlen = (size_t)nx * (size_t)channels;
	unsigned char *row = malloc(rowlen * 4);
	if (!row)
		return wb_fail(d, WB_EIO, path, "out of memory");
	struct wb_atomic a;
	enum wb_status st = wb_atomic_open(&a, path, d);
	if (st != WB_OK) {
		free(row);
		return st;
	}
	int ok = fprintf(a.f, "%s\n%d %d\n-1.0\n", channels == 1 ? "Pf" : "PF",
			 nx, ny) > 0;
	for (int r = 0; ok && r < ny; r++) {
		const float *src = data + (size_t)(ny - 1 - r) * rowlen;
		for (size_t k = 0; k < rowlen; k++)
			put_f32le(row + 4 * k, src[k]);
		ok = fwrite(row, 4, rowlen, a.f) == rowlen;
	}
	free(row);
	if (!ok) {
		int e = errno;
		wb_atomic_abort(&a);
		return wb_fail(d, WB_EIO, path, "cannot write: %s",
			       strerror(e ? e : EIO));
	}
	return wb_atomic_commit(&a, d);
}

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

/* Read one whitespace-delimited token of the header into tok. */
static int pfm_token(const unsigned char *b, size_t n, size_t *pos, char *tok,
		     size_t cap)
{
	size_t p = *pos, k = 0;
	while (p < n && is_space(b[p]))
		p++;
	while (p < n && !is_space(b[p]) && k + 1 < cap)
		tok[k++] = (char)b[p++];
	tok[k] = 0;
	if (k == 0 || (p < n && !is_space(b[p])))
		return -1;
	*pos = p;
	return 0;
}

static int parse_int(const char *s, int *v)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10);
	if (errno || *end || end == s || x <= 0 || x > PFM_MAX_DIM)
		return -1;
	*v = (int)x;
	return 0;
}

enum wb_status wb_pfm_read(const char *path, float **data, int *nx, int *ny,
			   int *channels, struct wb_diags *d)
{
	*data = NULL;
	*nx = *ny = *channels = 0;
	unsigned char *buf;
	size_t len;
	enum wb_status st = wb_read_file(path, &buf, &len, d);
	if (st != WB_OK)
		return st;
	char tok[64];
	size_t pos = 0;
	int ch, w, h;
	if (pfm_token(buf, len, &pos, tok, sizeof(tok)) < 0 ||
	    (strcmp(tok, "Pf") != 0 && strcmp(tok, "PF") != 0)) {
		free(buf);
		return wb_fail(d, WB_EINPUT, path,
			       "not a PFM file (expected 'Pf' or 'PF')");
	}
	ch = tok[1] == 'f' ? 1 : 3;
	if (pfm_token(buf, len, &pos, tok, sizeof(tok)) < 0 ||
	    parse_int(tok, &w) < 0 ||
	    pfm_token(buf, len, &pos, tok, sizeof(tok)) < 0 ||
	    parse_int(tok, &h) < 0) {
		free(buf);
		return wb_fail(d, WB_EINPUT, path,
			       "bad PFM header: width and height");
	}
	char *end;
	if (pfm_token(buf, len, &pos, tok, sizeof(tok)) < 0) {
		free(buf);
		return wb_fail(d, WB_EINPUT, path, "bad PFM header: scale");
	}
	double scale = strtod(tok, &end);
	if (*end || scale == 0 || scale != scale || pos >= len) {
		free(buf);
		return wb_fail(d, WB_EINPUT, path, "bad PFM header: scale '%s'",
			       tok);
	}
	pos++; /* the single whitespace character ending the header */
	int big = scale > 0;
	size_t rowlen = (size_t)w * (size_t)ch;
	size_t need = rowlen * (size_t)h * 4;
	if (len - pos < need) {
		free(buf);
		return wb_fail(d, WB_EINPUT, path,
			       "truncated PFM: expected %zu bytes of data for "
			       "%dx%dx%d, found %zu", need, w, h, ch,
			       len - pos);
	}
	float *out = malloc(need ? need : 1);
	if (!out) {
		free(buf);
		return wb_fail(d, WB_EIO, path, "out of memory");
	}
	for (int r = 0; r < h; r++) {
		const unsigned char *src = buf + pos + (size_t)r * rowlen * 4;
		float *dst = out + (size_t)(h - 1 - r) * rowlen;
		for (size_t k = 0; k < rowlen; k++)
			dst[k] = get_f32(src + 4 * k, big);
	}
	free(buf);
	*data = out;
	*nx = w;
	*ny = h;
	*channels = ch;
	return WB_OK;
}
