/*
 * bc.h - block-compression encoder for the pack's GPU-ready layers
 * (BC4 and BC5 of docs/wtp-format.md section 4.1; the decoder is in
 * include/wtp.h). Written from the format's description, not from
 * another encoder.
 *
 * A BC4 block holds 16 texels (4x4, row-major) of one channel in 8 bytes:
 * two 8-bit endpoints e0, e1 and a 3-bit palette index per texel. e0 > e1
 * selects 8 evenly spaced values from e0 to e1; e0 <= e1 selects 6 values
 * from e0 to e1 plus the format's two extremes (0 and 255 for UNORM, -127
 * and 127 for SNORM). BC5 is two BC4 blocks (red, then green).
 *
 * Targets are given in code units: UNORM [0, 255], SNORM [-127, 127]. The
 * encoder tries candidate endpoint pairs of both modes (around the block's
 * min/max, palettes reaching past them, the values between the format's
 * extremes, least-squares refits of the best indices, a descent), keeps
 * the least squared error among those whose largest error is within
 * (ceil(max) - floor(min)) / 14 code units (first found on ties, in a
 * fixed order): that bound holds for every texel. Deterministic: the
 * result depends only on the 16 targets.
 */
#ifndef WB_BC_H
#define WB_BC_H

#include <stddef.h>

#define BC_PAD 132      /* a 130-pixel page side padded to 4x4 blocks */
#define BC_BLOCKS 33    /* blocks per padded side */
#define BC_HEADER 16    /* bytes of a BC plane's scale header */

/* Encode one BC4 block of targets t[16] (code units, clamped to the
 * format's range) into out[8]. snorm: 0 UNORM, 1 SNORM. Returns the
 * block's largest |decoded - target| in code units. */
double bc4_encode_block(const double t[16], int snorm, unsigned char out[8]);

/* The per-texel error bound the encoder guarantees for a block whose
 * targets span [lo, hi] (code units). */
double bc4_block_bound(double lo, double hi);

/* Encode channel 'comp' of a 130x130 plane v (comps values per pixel,
 * row-major) as BC_BLOCKS x BC_BLOCKS BC4 blocks: pixel (x, y) of the
 * 132x132 padded image is v's pixel (min(x, 129), min(y, 129)); its code
 * target is v / scale * M (M 127 SNORM, 255 UNORM), clamped to the range
 * (scale 0: every block zero). Block (bx, by) goes to blocks + (bx + 33 by)
 * * stride + offset (BC4: stride 8, offset 0; BC5: stride 16, offset 0 for
 * red, 8 for green). */
void bc4_encode_plane(const float *v, int comps, int comp, int snorm,
		      float scale, unsigned char *blocks, size_t stride,
		      size_t offset);

#endif
