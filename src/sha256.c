/*
 * sha256.c - SHA-256 (FIPS 180-4, section 6.2) and hex formatting.
 *
 * Used to fingerprint inputs (scene, heightmap) so that a manifest states
 * exactly what was baked. Written from the standard:
 *   message padded with 0x80, zeros, and the 64-bit big-endian bit length
 *   to a multiple of 512 bits; each 512-bit block expanded to 64 words
 *   W_t = s1(W_{t-2}) + W_{t-7} + s0(W_{t-15}) + W_{t-16}, with
 *   s0(x) = ROTR7 ^ ROTR18 ^ SHR3, s1(x) = ROTR17 ^ ROTR19 ^ SHR10;
 *   64 rounds T1 = h + S1(e) + Ch(e,f,g) + K_t + W_t, T2 = S0(a) + Maj(a,b,c),
 *   S0 = ROTR2 ^ ROTR13 ^ ROTR22, S1 = ROTR6 ^ ROTR11 ^ ROTR25.
 * Checked against the FIPS 180-2 appendix vectors in tests/test_io.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha_block(uint32_t hs[8], const unsigned char *p)
{
	uint32_t w[64];
	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
		       (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
	for (int t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^
			      (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^
			      (w[t - 2] >> 10);
		w[t] = s1 + w[t - 7] + s0 + w[t - 16];
	}
	uint32_t a = hs[0], b = hs[1], c = hs[2], d = hs[3];
	uint32_t e = hs[4], f = hs[5], g = hs[6], h = hs[7];
	for (int t = 0; t < 64; t++) {
		uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = h + S1 + ch + sha_k[t] + w[t];
		uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = S0 + maj;
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	hs[0] += a; hs[1] += b; hs[2] += c; hs[3] += d;
	hs[4] += e; hs[5] += f; hs[6] += g; hs[7] += h;
}

void wb_sha256(const void *data, size_t len, unsigned char out[32])
{
	uint32_t hs[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	const unsigned char *p = data;
	size_t n = len;
	while (n >= 64) {
		sha_block(hs, p);
		p += 64;
		n -= 64;
	}
	/* Final one or two blocks: the tail, 0x80, zeros, 64-bit length. */
	unsigned char tail[128];
	memset(tail, 0, sizeof(tail));
	if (n)
		memcpy(tail, p, n);
	tail[n] = 0x80;
	size_t tl = n + 1 + 8 <= 64 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8u;
	for (int i = 0; i < 8; i++)
		tail[tl - 1 - (size_t)i] = (unsigned char)(bits >> (8 * i));
	sha_block(hs, tail);
	if (tl == 128)
		sha_block(hs, tail + 64);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(hs[i] >> 24);
		out[4 * i + 1] = (unsigned char)(hs[i] >> 16);
		out[4 * i + 2] = (unsigned char)(hs[i] >> 8);
		out[4 * i + 3] = (unsigned char)hs[i];
	}
}

/* wb_sha256_pieces (util.h): SHA-256 of each WB_SHA_PIECE bytes, in
 * parallel, then SHA-256 of the digests in order. */
int wb_sha256_pieces(const void *data, size_t len, int threads,
		     void (*get)(const void *data, size_t off, size_t n,
				 unsigned char *buf),
		     unsigned char out[32])
{
	const size_t np = (len + WB_SHA_PIECE - 1) / WB_SHA_PIECE;
	unsigned char *dg = malloc(np ? np * 32 : 1);
	if (!dg)
		return -1;
	int fail = 0;
#pragma omp parallel num_threads(wb_threads(threads)) reduction(| : fail)
	{
		unsigned char *buf = get ? malloc(WB_SHA_PIECE) : NULL;
		fail |= get && !buf;
#pragma omp for schedule(dynamic, 1)
		for (size_t k = 0; k < np; k++) {
			const size_t off = k * WB_SHA_PIECE,
				     n = len - off < WB_SHA_PIECE ? len - off :
								    WB_SHA_PIECE;
			if (!get) {
				wb_sha256((const unsigned char *)data + off, n,
					  dg + 32 * k);
			} else if (buf) {
				get(data, off, n, buf);
				wb_sha256(buf, n, dg + 32 * k);
			}
		}
		free(buf);
	}
	if (!fail)
		wb_sha256(dg, np * 32, out);
	free(dg);
	return fail ? -1 : 0;
}

void wb_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = 0;
}
