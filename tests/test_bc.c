/*
 * test_bc.c - the BC4 / BC5 encoder (src/bc.c) and the reader's decoder
 * (include/wtp.h wtp_bc_decode, wtp_pixel) against a reference decoder
 * written here from the text of docs/wtp-format.md section 4.1 alone, and
 * the error budget of section 4.1 on synthetic worst cases.
 *
 * Budget (section 4.1): per texel, |decoded - value| <= scale / M *
 * (ceil(hi) - floor(lo)) / 14 with lo, hi the block's least and largest
 * target in code units (value / scale * M, M = 127 SNORM, 255 UNORM), plus
 * binary32 rounding (1e-6 scale here); so at most scale / 7 (SNORM) or
 * scale / 14 (UNORM) whatever the data. The measured figures of the
 * synthetic cases are asserted against the numbers the document gives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bc.h"
#include "wtp.h"

#include "bc_ref.h"

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* ---- block level ------------------------------------------------------- */

/* Encode, then check the reference decode against the targets: the
 * encoder's reported error is the real one and within the bound. */
static double check_block(const double t[16], int snorm)
{
	unsigned char b[8];
	double rep = bc4_encode_block(t, snorm, b);
	double M = snorm ? 127 : 255, lo = 1e9, hi = -1e9, mx = 0;
	for (int i = 0; i < 16; i++) {
		lo = t[i] < lo ? t[i] : lo;
		hi = t[i] > hi ? t[i] : hi;
	}
	for (int i = 0; i < 16; i++) {
		double d = fabs(ref_texel(b, snorm, i % 4, i / 4) * M - t[i]);
		mx = d > mx ? d : mx;
	}
	assert_true(fabs(mx - rep) < 1e-3);
	assert_true(mx <= bc4_block_bound(lo, hi) + 1e-4);
	if (snorm)
		assert_true(b[0] != 0x80 && b[1] != 0x80);
	return mx;
}

static void test_block_exact(void **state)
{
	(void)state;
	double t[16];
	for (int snorm = 0; snorm < 2; snorm++) {
		int lo = snorm ? -127 : 0, hi = snorm ? 127 : 255;
		/* constants, extremes and any two codes are exact */
		for (int a = lo; a <= hi; a += 7)
			for (int c = lo; c <= hi; c += 11) {
				for (int i = 0; i < 16; i++)
					t[i] = (i * 7 + a) % 3 ? a : c;
				assert_true(check_block(t, snorm) < 1e-4);
			}
		/* a linear ramp through 8 evenly spaced codes is exact */
		for (int i = 0; i < 16; i++)
			t[i] = lo + 14 * (i % 8);
		assert_true(check_block(t, snorm) < 1e-4);
	}
	/* three ids with one of them 0 (dry + two materials; section 4.1,
	   "material") are exact in the 6-value mode */
	for (int i = 0; i < 16; i++)
		t[i] = i < 5 ? 0 : i < 11 ? 3 : 7;
	assert_true(check_block(t, 0) < 1e-4);
}

/* Random blocks of every shape: reference decode = reported error <=
 * bound, and the search is never worse than the plain 8-value min/max
 * pair. */
static void test_block_bound_quality(void **state)
{
	(void)state;
	uint32_t s = 12345;
	double worse = 0;
	for (int n = 0; n < 20000; n++) {
		int snorm = n & 1;
		double lo = snorm ? -127 : 0, span = snorm ? 254 : 255;
		double a = lo + span * (lcg(&s) % 1000) / 1000.0;
		double w = span * (lcg(&s) % 1000) / 1000.0 / (1 + n % 5);
		double t[16];
		for (int i = 0; i < 16; i++) {
			double u = (lcg(&s) % 100000) / 100000.0;
			t[i] = a + w * (n % 3 ? u : (i % 4) / 3.0 + 0.01 * u);
			t[i] = t[i] > lo + span ? lo + span : t[i];
		}
		check_block(t, snorm);
		/* SSE against the min/max pair */
		unsigned char b[8];
		bc4_encode_block(t, snorm, b);
		double M = snorm ? 127 : 255, e1 = 0, e2 = 0, mn = 1e9, mx = -1e9;
		for (int i = 0; i < 16; i++) {
			double d = ref_texel(b, snorm, i % 4, i / 4) * M - t[i];
			e1 += d * d;
			mn = t[i] < mn ? t[i] : mn;
			mx = t[i] > mx ? t[i] : mx;
		}
		int E0 = (int)ceil(mx), E1 = (int)floor(mn);
		if (E0 > E1) {
			for (int i = 0; i < 16; i++) {
				double p[8], best = 1e9;
				p[0] = E0, p[1] = E1;
				for (int k = 2; k < 8; k++)
					p[k] = ((8 - k) * E0 + (k - 1) * E1) / 7.0;
				for (int k = 0; k < 8; k++)
					best = fmin(best, fabs(p[k] - t[i]));
				e2 += best * best;
			}
			if (e1 - e2 > worse)
				worse = e1 - e2;
		}
	}
	/* the search starts from the min/max pair: never worse than it */
	assert_true(worse <= 1e-3); /* binary32 decode vs exact palette */
}

/* Deterministic: the same targets give the same bytes. */
static void test_block_deterministic(void **state)
{
	(void)state;
	uint32_t s = 99;
	for (int n = 0; n < 2000; n++) {
		double t[16];
		for (int i = 0; i < 16; i++)
			t[i] = (double)(lcg(&s) % 25500) / 100.0;
		unsigned char a[8], b[8];
		bc4_encode_block(t, 0, a);
		bc4_encode_block(t, 0, b);
		assert_memory_equal(a, b, 8);
	}
}

/* ---- plane level: the library decoder equals the reference ------------- */

struct plane {
	float v[130 * 130 * 2];
	unsigned char blocks[33 * 33 * 16];
	float scale[2];
};

static void encode_plane(struct plane *pl, int comps, int snorm)
{
	for (int c = 0; c < comps; c++) {
		float s = 0;
		for (int i = 0; i < 130 * 130; i++)
			s = fmaxf(s, fabsf(pl->v[i * comps + c]));
		pl->scale[c] = s;
		bc4_encode_plane(pl->v, comps, c, snorm, s, pl->blocks,
				 (size_t)(8 * comps), (size_t)(8 * c));
	}
}

/* Error statistics of a decoded plane against pl->v (relative to the
 * scale); asserts the per-block bound of every texel. */
static void plane_errors(const struct plane *pl, int comps, int snorm,
			 uint32_t fmt, double *maxrel, double *rmsrel)
{
	static float out[130 * 130 * 2];
	assert_int_equal(wtp_bc_decode(fmt, pl->blocks, 33u * 8 * comps,
				       pl->scale, out, 130 * comps * sizeof(float)),
			 WTP_OK);
	const double M = snorm ? 127 : 255;
	double mx = 0, s2 = 0;
	long n = 0;
	for (int c = 0; c < comps; c++) {
		double sc = pl->scale[c];
		for (int by = 0; by < 33; by++)
			for (int bx = 0; bx < 33; bx++) {
				double lo = 1e9, hi = -1e9;
				for (int j = 0; j < 16; j++) {
					int x = 4 * bx + j % 4, y = 4 * by + j / 4;
					x = x > 129 ? 129 : x;
					y = y > 129 ? 129 : y;
					double t = sc > 0 ? pl->v[(x + 130 * y) * comps + c] /
								    sc * M
							  : 0;
					lo = fmin(lo, t), hi = fmax(hi, t);
				}
				double bound = sc / M * bc4_block_bound(lo, hi) +
					       1e-6 * sc;
				for (int j = 0; j < 16; j++) {
					int x = 4 * bx + j % 4, y = 4 * by + j / 4;
					if (x > 129 || y > 129)
						continue;
					int i = x + 130 * y;
					const unsigned char *blk =
						pl->blocks + (bx + 33 * by) * 8 * comps + 8 * c;
					float r = pl->scale[c] * ref_texel(blk, snorm, j % 4, j / 4);
					/* library decoder == reference, bit for bit */
					assert_memory_equal(&r, &out[i * comps + c], 4);
					double e = fabs((double)r - pl->v[i * comps + c]);
					assert_true(e <= bound);
					double rel = sc > 0 ? e / sc : 0;
					mx = fmax(mx, rel);
					s2 += rel * rel;
					n++;
				}
			}
	}
	*maxrel = mx;
	*rmsrel = sqrt(s2 / (double)n);
}

/* Synthetic cases of section 4.1: the worst case, independent uniform
 * noise over the whole range in every texel (no spatial coherence at
 * all); a shore, flow 0 on land and full speed next to it (two values per
 * block: exact); a smooth river profile. The document's figures (of the
 * page scale): noise BC5_SNORM max 0.1417 (bound 1/7) rms 0.0583, noise
 * BC4_UNORM max 0.0708 (bound 1/14) rms 0.0291, smooth BC5_SNORM max
 * 0.0045 rms 0.0015. */
static void test_worst_cases(void **state)
{
	(void)state;
	struct plane *pl = calloc(1, sizeof *pl);
	assert_non_null(pl);
	uint32_t s = 7;
	double mx, rms;
	/* noise, BC5 SNORM */
	for (int i = 0; i < 130 * 130 * 2; i++)
		pl->v[i] = (float)((lcg(&s) % 200001) / 100000.0 - 1.0) * 3.5f;
	encode_plane(pl, 2, 1);
	plane_errors(pl, 2, 1, WTP_FMT_BC5_SNORM, &mx, &rms);
	print_message("noise BC5_SNORM: max %.5f rms %.5f of the scale\n", mx, rms);
	assert_true(mx <= 1.0 / 7 + 1e-6);
	assert_true(rms <= 0.0583);
	/* noise, BC4 UNORM */
	for (int i = 0; i < 130 * 130; i++)
		pl->v[i] = (float)((lcg(&s) % 100001) / 100000.0);
	encode_plane(pl, 1, 0);
	plane_errors(pl, 1, 0, WTP_FMT_BC4_UNORM, &mx, &rms);
	print_message("noise BC4_UNORM: max %.5f rms %.5f of the scale\n", mx, rms);
	assert_true(mx <= 1.0 / 14 + 1e-6);
	assert_true(rms <= 0.0291);
	/* a shore every 5 pixels: 0 then -2.5 / +2.5 m/s */
	for (int i = 0; i < 130 * 130; i++) {
		int x = i % 130, y = i / 130;
		pl->v[2 * i] = (x + y) % 5 < 2 ? 0.0f : 2.5f;
		pl->v[2 * i + 1] = (x * 3 + y) % 5 < 2 ? 0.0f : -2.5f;
	}
	encode_plane(pl, 2, 1);
	plane_errors(pl, 2, 1, WTP_FMT_BC5_SNORM, &mx, &rms);
	/* two values per block (0 and the page's full speed) are exact */
	assert_true(mx < 1e-6);
	/* smooth flow (a river's profile): far below the worst case */
	for (int i = 0; i < 130 * 130; i++) {
		int x = i % 130, y = i / 130;
		pl->v[2 * i] = (float)(2.0 * sin(y / 40.0) + 0.01 * x);
		pl->v[2 * i + 1] = (float)(0.5 * cos(x / 25.0));
	}
	encode_plane(pl, 2, 1);
	plane_errors(pl, 2, 1, WTP_FMT_BC5_SNORM, &mx, &rms);
	print_message("smooth BC5_SNORM: max %.5f rms %.5f of the scale\n", mx, rms);
	assert_true(mx <= 0.0045);
	assert_true(rms <= 0.0015);
	/* scale 0: zero blocks decode to +0 */
	memset(pl->v, 0, sizeof pl->v);
	encode_plane(pl, 2, 1);
	plane_errors(pl, 2, 1, WTP_FMT_BC5_SNORM, &mx, &rms);
	assert_true(mx == 0);
	for (int i = 0; i < 33 * 33 * 16; i++)
		assert_int_equal(pl->blocks[i], 0);
	free(pl);
}

/* Padding: the texels past 130 repeat the last column / row (clamp), so
 * the last block column encodes exactly the pixels 128, 129, 129, 129. */
static void test_padding(void **state)
{
	(void)state;
	struct plane *pl = calloc(1, sizeof *pl);
	assert_non_null(pl);
	for (int i = 0; i < 130 * 130; i++) {
		int x = i % 130, y = i / 130;
		/* two codes per block, except where a 4x4 grid from 0 splits */
		pl->v[i] = (x >= 128 || y >= 128) ? ((x + y) % 2 ? 1.0f : 0.2f)
						  : 0.5f;
	}
	encode_plane(pl, 1, 0);
	/* block (32, 32): pixels (128..129)^2 only, two values: exact up
	   to the UNORM rounding of 0.2 * 255 = 51 */
	const unsigned char *blk = pl->blocks + (32 + 33 * 32) * 8;
	for (int j = 0; j < 16; j++) {
		int x = 128 + (j % 4 > 1 ? 1 : j % 4), y = 128 + (j / 4 > 1 ? 1 : j / 4);
		float want = (x + y) % 2 ? 1.0f : 0.2f;
		assert_true(fabsf(ref_texel(blk, 0, j % 4, j / 4) - want) < 1e-6f);
	}
	free(pl);
}

/* The reader's format table: DXGI and Vulkan values of the BC formats. */
static void test_format_values(void **state)
{
	(void)state;
	static const struct {
		uint32_t fmt, comps, dxgi, vk, block;
		const char *name;
	} want[] = {
		{ WTP_FMT_BC5_SNORM, 2, 84, 142, 16, "BC5_SNORM" },
		{ WTP_FMT_BC4_UNORM, 1, 80, 139, 8, "BC4_UNORM" },
		{ WTP_FMT_BC4_SNORM, 1, 81, 140, 8, "BC4_SNORM" },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		wtp_format_desc d;
		assert_int_equal(wtp_format_info(want[i].fmt, &d), WTP_OK);
		assert_int_equal(d.components, want[i].comps);
		assert_int_equal(d.dxgi_format, want[i].dxgi);
		assert_int_equal(d.vk_format, want[i].vk);
		assert_int_equal(d.block_bytes, want[i].block);
		assert_int_equal(d.bytes_per_pixel, 0);
		assert_string_equal(wtp_format_name(want[i].fmt), want[i].name);
	}
	wtp_format_desc d;
	assert_int_equal(wtp_format_info(WTP_FMT_R16F, &d), WTP_OK);
	assert_int_equal(d.block_bytes, 0);
	assert_int_equal(wtp_format_info(WTP_FMT_COUNT, &d), WTP_EARG);
	float sc[2] = { 1, 1 }, out[4];
	unsigned char blk[16] = { 0 };
	assert_int_equal(wtp_bc_decode(WTP_FMT_R16F, blk, 16, sc, out, 16),
			 WTP_EARG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_exact),
		cmocka_unit_test(test_block_bound_quality),
		cmocka_unit_test(test_block_deterministic),
		cmocka_unit_test(test_worst_cases),
		cmocka_unit_test(test_padding),
		cmocka_unit_test(test_format_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
