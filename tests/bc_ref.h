/*
 * bc_ref.h - a reference BC4 texel decoder for the tests, written from the
 * text of docs/wtp-format.md section 4.1 alone (not from include/wtp.h or
 * src/bc.c), so that the reader's decoder and the writer's encoder are
 * checked against the document (test helper, header-only).
 */
#ifndef BC_REF_H
#define BC_REF_H

/* "bytes 0 and 1 are the endpoints e0, e1: u8 for UNORM, i8 two's
 * complement for SNORM, where -128 reads as -127; bytes 2..7 are a 48-bit
 * little-endian integer whose bits 3t..3t+2 are the index k of texel t =
 * x + 4y. If e0 > e1 the palette is e0, e1, then ((8-k) e0 + (k-1) e1) / 7
 * for k = 2..7; else e0, e1, ((6-k) e0 + (k-1) e1) / 5 for k = 2..5, MIN,
 * MAX (0, 255 UNORM; -127, 127 SNORM). The unit value is N / (w M), one
 * binary32 division of the integers N = w * palette value, w = 7 or 5,
 * M = 255 or 127; the decoded value is scale * unit in binary32." */
static inline float ref_texel(const unsigned char *blk, int snorm, int x, int y)
{
	int M = snorm ? 127 : 255;
	int e0 = snorm ? (signed char)blk[0] : blk[0];
	int e1 = snorm ? (signed char)blk[1] : blk[1];
	if (snorm && e0 == -128)
		e0 = -127;
	if (snorm && e1 == -128)
		e1 = -127;
	int t = x + 4 * y, bit = 3 * t, k = 0;
	for (int j = 0; j < 3; j++) { /* bit by bit across byte edges */
		int b = bit + j;
		k |= ((blk[2 + b / 8] >> (b % 8)) & 1) << j;
	}
	int num[8], w;
	if (e0 > e1) {
		w = 7;
		num[0] = 7 * e0;
		num[1] = 7 * e1;
		for (int i = 2; i < 8; i++)
			num[i] = (8 - i) * e0 + (i - 1) * e1;
	} else {
		w = 5;
		num[0] = 5 * e0;
		num[1] = 5 * e1;
		for (int i = 2; i < 6; i++)
			num[i] = (6 - i) * e0 + (i - 1) * e1;
		num[6] = snorm ? -5 * 127 : 0;
		num[7] = 5 * M;
	}
	return (float)num[k] / (float)(w * M);
}

#endif
