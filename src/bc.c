/*
 * bc.c - BC4 / BC5 block encoder (bc.h). Own code, written from the block
 * layout of docs/wtp-format.md section 4.1.
 *
 * Per block: targets t[16] in code units, lo / hi their least and largest.
 * The search starts from the 8-value pair (ceil(hi), floor(lo)), whose
 * palette steps are (ceil(hi) - floor(lo)) / 7, so no texel is farther
 * than bc4_block_bound() = half a step from an entry. Candidate pairs, in
 * a fixed order:
 *   1. 8-value mode (e0 > e1) with e0 in ceil(hi) + {-1, 0, 1}, e1 in
 *      floor(lo) + {-1, 0, 1}; and palettes reaching past the block's
 *      range so that lo and hi fall on inner entries (a block of dry
 *      zeros and a cluster of speeds is served best by entries on 0 and
 *      on the cluster), in both modes;
 *   2. 6-value mode (e0 <= e1) over the "inner" values, those farther
 *      than d from both extremes of the format (d = 0.5, 4, 16, 64): the
 *      extremes then take the values near 0 / 255 (or -127 / 127);
 *   3. two rounds of least-squares refits: with the best pair's indices
 *      fixed, the real endpoints minimising the squared error (2x2 normal
 *      equations), tried at floor / ceil of each;
 *   4. descent: the 8 neighbours of the best pair in its mode, and the
 *      pair swapped, until none is better.
 * Each candidate assigns every texel its nearest palette entry (lowest
 * index on ties) and is scored by the sum of squared errors; it replaces
 * the best only when strictly better *and* its largest error is within
 * the bound, so the bound holds for every block and the result is fixed
 * by the targets alone (no thread or platform choice enters: doubles,
 * no FMA contraction, -ffp-contract=off).
 *
 * Quality (measured on the flow blocks of samples/river that are not
 * constant): squared error 8 % above the unconstrained optimum found by
 * trying all 255 x 255 pairs. Work: about 60 candidates x 16 texels x 8
 * entries per block; a 130x130 page channel is 1089 blocks.
 */
#include <math.h>
#include <string.h>

#include "bc.h"

struct cand {
	int e0, e1;
	double sse, maxerr;
	unsigned char idx[16];
};

static void palette(int e0, int e1, int snorm, double p[8])
{
	p[0] = e0;
	p[1] = e1;
	if (e0 > e1) {
		for (int k = 2; k < 8; k++)
			p[k] = ((8 - k) * e0 + (k - 1) * e1) / 7.0;
	} else {
		for (int k = 2; k < 6; k++)
			p[k] = ((6 - k) * e0 + (k - 1) * e1) / 5.0;
		p[6] = snorm ? -127 : 0;
		p[7] = snorm ? 127 : 255;
	}
}

static void evaluate(const double t[16], int snorm, int e0, int e1,
		     struct cand *c)
{
	double p[8];
	palette(e0, e1, snorm, p);
	c->e0 = e0;
	c->e1 = e1;
	c->sse = 0;
	c->maxerr = 0;
	for (int i = 0; i < 16; i++) {
		int bk = 0;
		double be = fabs(t[i] - p[0]);
		for (int k = 1; k < 8; k++) {
			double e = fabs(t[i] - p[k]);
			if (e < be)
				be = e, bk = k;
		}
		c->idx[i] = (unsigned char)bk;
		c->sse += be * be;
		if (be > c->maxerr)
			c->maxerr = be;
	}
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Try pair (e0, e1) (clamped to the format); keep it when its squared
 * error is less and its largest error within the block's bound. */
static void try_pair(const double t[16], int snorm, int e0, int e1,
		     double bound, struct cand *best)
{
	const int lo = snorm ? -127 : 0, hi = snorm ? 127 : 255;
	e0 = clampi(e0, lo, hi);
	e1 = clampi(e1, lo, hi);
	struct cand c;
	evaluate(t, snorm, e0, e1, &c);
	if (c.sse < best->sse && c.maxerr <= bound)
		*best = c;
}

/* Weights of palette entry k of a mode on (e0, e1) and its constant part
 * (the 6-value mode's extremes). */
static void weights(int mode8, int snorm, int k, double *w0, double *w1,
		    double *c0)
{
	*c0 = 0;
	if (k == 0) {
		*w0 = 1, *w1 = 0;
	} else if (k == 1) {
		*w0 = 0, *w1 = 1;
	} else if (mode8) {
		*w0 = (8 - k) / 7.0, *w1 = (k - 1) / 7.0;
	} else if (k < 6) {
		*w0 = (6 - k) / 5.0, *w1 = (k - 1) / 5.0;
	} else {
		*w0 = *w1 = 0;
		*c0 = k == 6 ? (snorm ? -127 : 0) : (snorm ? 127 : 255);
	}
}

/* Least-squares endpoints for best's indices, then the 4 roundings (in
 * the same mode: the pair is ordered to keep it). */
static void refit(const double t[16], int snorm, double bound,
		  struct cand *best)
{
	const int mode8 = best->e0 > best->e1;
	double a00 = 0, a01 = 0, a11 = 0, b0 = 0, b1 = 0;
	for (int i = 0; i < 16; i++) {
		double w0, w1, c0;
		weights(mode8, snorm, best->idx[i], &w0, &w1, &c0);
		if (w0 == 0 && w1 == 0)
			continue;
		a00 += w0 * w0;
		a01 += w0 * w1;
		a11 += w1 * w1;
		b0 += w0 * (t[i] - c0);
		b1 += w1 * (t[i] - c0);
	}
	double det = a00 * a11 - a01 * a01;
	if (!(fabs(det) > 1e-12))
		return;
	double x0 = (b0 * a11 - b1 * a01) / det;
	double x1 = (a00 * b1 - a01 * b0) / det;
	if (!(fabs(x0) < 1e6 && fabs(x1) < 1e6))
		return;
	int f0 = (int)floor(x0), f1 = (int)floor(x1);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			int e0 = f0 + i, e1 = f1 + j;
			if (mode8 ? e0 > e1 : e0 <= e1)
				try_pair(t, snorm, e0, e1, bound, best);
		}
}

double bc4_block_bound(double lo, double hi)
{
	return (ceil(hi) - floor(lo)) / 14.0;
}

static void pack_block(const struct cand *c, int snorm, unsigned char o[8])
{
	o[0] = (unsigned char)(snorm ? (unsigned char)(signed char)c->e0
				     : (unsigned char)c->e0);
	o[1] = (unsigned char)(snorm ? (unsigned char)(signed char)c->e1
				     : (unsigned char)c->e1);
	unsigned long long bits = 0;
	for (int i = 0; i < 16; i++)
		bits |= (unsigned long long)c->idx[i] << (3 * i);
	for (int i = 0; i < 6; i++)
		o[2 + i] = (unsigned char)(bits >> (8 * i));
}

double bc4_encode_block(const double tin[16], int snorm, unsigned char out[8])
{
	const int lo = snorm ? -127 : 0, hi = snorm ? 127 : 255;
	double t[16], mn = INFINITY, mx = -INFINITY;
	for (int i = 0; i < 16; i++) {
		double v = tin[i];
		v = v < lo ? lo : v > hi ? hi : v != v ? 0 : v;
		t[i] = v;
		mn = v < mn ? v : mn;
		mx = v > mx ? v : mx;
	}
	struct cand best;
	const int fl = (int)floor(mn), ce = (int)ceil(mx);
	/* exact constant: one endpoint, error 0 */
	if (fl == ce) {
		evaluate(t, snorm, fl, fl, &best);
		pack_block(&best, snorm, out);
		return best.maxerr;
	}
	/* the 8-value pair spanning the block meets the bound by
	   construction: the start, and the fallback of every search */
	const double bound = bc4_block_bound(mn, mx) + 1e-9;
	evaluate(t, snorm, ce, fl, &best);
	/* 1. 8-value mode around the block's range */
	for (int i = -1; i <= 1; i++)
		for (int j = -1; j <= 1; j++)
			if (ce + i > fl + j)
				try_pair(t, snorm, ce + i, fl + j, bound, &best);
	/* 1b. palettes reaching past the block's range, so that min and max
	   fall on inner entries p and q (positions from e1 to e0): a block of
	   dry zeros and a cluster of speeds is served better by entries that
	   hit 0 and the cluster than by endpoints at min and max */
	for (int p = 0; p <= 2; p++)
		for (int q = 5; q <= 7; q++) {
			if (p == 0 && q == 7)
				continue;
			double st = (mx - mn) / (q - p);
			double e1 = mn - p * st, e0 = e1 + 7 * st;
			int a = (int)lrint(e0), b = (int)lrint(e1);
			if (a > b)
				try_pair(t, snorm, a, b, bound, &best);
		}
	for (int p = 0; p <= 1; p++)
		for (int q = 4; q <= 5; q++) {
			if (p == 0 && q == 5)
				continue;
			double st = (mx - mn) / (q - p);
			double e0 = mn - p * st, e1 = e0 + 5 * st;
			int a = (int)lrint(e0), b = (int)lrint(e1);
			if (a <= b)
				try_pair(t, snorm, a, b, bound, &best);
		}
	/* 2. 6-value mode over the values away from the extremes */
	static const double dist[4] = { 0.5, 4, 16, 64 };
	for (int d = 0; d < 4 && best.sse > 0; d++) {
		double imn = INFINITY, imx = -INFINITY;
		for (int i = 0; i < 16; i++)
			if (t[i] > lo + dist[d] && t[i] < hi - dist[d]) {
				imn = t[i] < imn ? t[i] : imn;
				imx = t[i] > imx ? t[i] : imx;
			}
		if (!(imn <= imx))
			continue;
		int a = (int)floor(imn), b = (int)ceil(imx);
		try_pair(t, snorm, a, b, bound, &best);
		try_pair(t, snorm, a + 1, b, bound, &best);
		try_pair(t, snorm, a, b - 1 >= a ? b - 1 : b, bound, &best);
	}
	/* 3. least-squares refits of the best indices */
	for (int r = 0; r < 2 && best.sse > 0; r++)
		refit(t, snorm, bound, &best);
	/* 4. descent: the 8 neighbours of the best pair in its mode and the
	   pair swapped (the other mode), until none is better */
	for (int it = 0; it < 64 && best.sse > 0; it++) {
		const struct cand prev = best;
		for (int i = -1; i <= 1; i++)
			for (int j = -1; j <= 1; j++) {
				int a = prev.e0 + i, b = prev.e1 + j;
				if ((i || j) && (prev.e0 > prev.e1 ? a > b : a <= b))
					try_pair(t, snorm, a, b, bound, &best);
			}
		if (prev.e0 != prev.e1)
			try_pair(t, snorm, prev.e1, prev.e0, bound, &best);
		if (best.sse >= prev.sse)
			break;
	}
	pack_block(&best, snorm, out);
	return best.maxerr;
}

void bc4_encode_plane(const float *v, int comps, int comp, int snorm,
		      float scale, unsigned char *blocks, size_t stride,
		      size_t offset)
{
	const double m = snorm ? 127.0 : 255.0;
	for (int by = 0; by < BC_BLOCKS; by++)
		for (int bx = 0; bx < BC_BLOCKS; bx++) {
			unsigned char *o = blocks +
					   (size_t)(bx + BC_BLOCKS * by) * stride +
					   offset;
			if (!(scale > 0)) {
				memset(o, 0, 8);
				continue;
			}
			double t[16];
			for (int j = 0; j < 4; j++)
				for (int i = 0; i < 4; i++) {
					int x = 4 * bx + i, y = 4 * by + j;
					x = x > 129 ? 129 : x;
					y = y > 129 ? 129 : y;
					double f = v[((size_t)x + 130u * (size_t)y) *
							     (size_t)comps +
						     (size_t)comp];
					t[i + 4 * j] = f / scale * m;
				}
			bc4_encode_block(t, snorm, o);
		}
}
