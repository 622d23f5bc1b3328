/*
 * lbm.cl - LBM-SWE (D2Q9, Zhou 2004) kernels: the device side of cl.c's
 * cl_lbm_*. Each kernel is the OpenCL twin of a CPU routine of lbm.c and
 * must stay operation-for-operation identical to it (see lbm.h for the
 * model, the link rule and the forcing):
 *   lbm_ghost    lbm_fill_ghosts: pass 1 (copies, mirrors, ghost depths)
 *                and pass 2 (Zou-He closures) from prepared lists
 *   lbm_flux     edge_flux: mass crossing the inflow/level/outflow ghosts,
 *                accumulated per ghost (fixed order on the host)
 *   lbm_step     lbm_kernel_row: fused pull streaming, bounce-back,
 *                collision, forcing, clamps and positivity, one work item
 *                per interior cell
 *   lbm_special  specials_row: sources, sinks, fixed levels, modifiers
 *   lbm_macro    lbm_macro: depth and velocity at cell centres
 *   lbm_rowsum   lbm_volume's per-row sums
 *
 * Layout (lbm.h): structure of arrays, padded grid with a one-cell ghost
 * ring, stride W = nx + 2, cell (i, j) at n = (i + 1) + (j + 1) W; the nine
 * distributions of one time level are one buffer of 32-bit fixed-point
 * integers (f = F * unit metres, lbm.h), F_a at a * N + n (N = W (ny + 2)),
 * computed in 64 bits (WB_SLICE, common.cl): 9 N passes 2^31 above ~15000^2.
 * Masses are integer sums, so the bookkeeping slots are exact 64-bit
 * integers and the device's mass budget is the CPU's to the last unit. Work item (i, j) of lbm_step reads f_a from its
 * upstream neighbour (pull), so every read and write of a work-group row
 * is contiguous (coalesced).
 */

/* direction from (cx, cy): index (cx + 1) + 3 (cy + 1) */
constant int lbm_dir[9] = { 6, 7, 8, 5, 0, 1, 4, 3, 2 };
constant int lbm_cxs[9] = { 0, 1, 1, 0, -1, -1, -1, 0, 1 };
constant int lbm_cys[9] = { 0, 0, 1, 1, 1, 0, -1, -1, -1 };
constant int lbm_opps[9] = { 0, 5, 6, 7, 8, 1, 2, 3, 4 };
constant float lbm_ws[9] = { 0.0f, 1.0f, 0.25f, 1.0f, 0.25f,
			     1.0f, 0.25f, 1.0f, 0.25f };
constant float lbm_qs[9] = { 4.0f / 9, 1.0f / 9, 1.0f / 36, 1.0f / 9,
			     1.0f / 36, 1.0f / 9, 1.0f / 36, 1.0f / 9,
			     1.0f / 36 };
/* mirror of direction a across a wall normal to x / to y */
constant int lbm_flipx[9] = { 0, 5, 4, 3, 2, 1, 8, 7, 6 };
constant int lbm_flipy[9] = { 0, 1, 8, 7, 6, 5, 4, 3, 2 };

#define LBM_G_PERIODIC 1
#define LBM_G_MIRROR 2
#define LBM_G_EXTRAP 3
#define LBM_G_ZOU 4

/* x^(-1/3), x > 0: lbm_kernel.h's RCBRT (guess from the integer bits
 * divided in float, two Newton steps y <- y (4 - x y^3) / 3) */
inline float lbm_rcbrt(float x)
{
	int i = as_int(x);
	float fi = (float)i * (1.0f / 3.0f);
	i = 0x54a2fa8c - convert_int_rtz(fi);
	float y = as_float(i);
	for (int k = 0; k < 2; k++) {
		float y3 = (y * y) * y;
		y = (y * fma(-x, y3, 4.0f)) * (1.0f / 3.0f);
	}
	return y;
}

/* fixed point, round to nearest, ties to even (lbm.c fx_round, vround;
 * out-of-range values are caught by the divergence check) */
inline int lbm_fx(float x)
{
	return convert_int_rte(x);
}


/* bed_term of lbm.c: negative depths count 0; the part of the lower
 * cell's population that the step reflects (hydrostatic reconstruction) */
inline float lbm_bed(float hx, float zx, float hy, float zy)
{
	hx = hx > 0.0f ? hx : 0.0f;
	hy = hy > 0.0f ? hy : 0.0f;
	float D = zy - zx;
	float mx = D > 0.0f ? D : 0.0f, my = -D > 0.0f ? -D : 0.0f;
	mx = mx < hx ? mx : hx;
	my = my < hy ? my : hy;
	return my * (hy + (hy - my)) - mx * (hx + (hx - mx));
}

/* exact rest (lbm.h lbm_rq, lbm_hs, lbm_dz, lbm_bi): the rounded rest
 * equilibrium of an integer depth, the integer depth a stored depth
 * stands for, the bed step of the integer bed potential, the integer bed
 * transfer of a link */
inline int lbm_rq(float K, int diag, int H)
{
	const float h = (float)H, k = K * (h * h);
	return lbm_fx(diag ? k * 0.25f : k);
}

inline int lbm_hs(float h, float kinv)
{
	return lbm_fx(h * kinv);
}

inline int lbm_dz(int zix, int ziy, float zx, float zy, float kinv)
{
	const float Df = (zy - zx) * kinv;
	if (Df > 2e9f)
		return 0x7fffffff;
	if (Df < -2e9f)
		return -0x7fffffff;
	return as_int((uint)ziy - (uint)zix);
}

inline int lbm_bi(float K, int diag, int Hx, int Hy, int D)
{
	Hx = Hx > 0 ? Hx : 0;
	Hy = Hy > 0 ? Hy : 0;
	int mx = D > 0 ? D : 0, my = D < 0 ? -D : 0;
	mx = mx < Hx ? mx : Hx;
	my = my < Hy ? my : Hy;
	return (lbm_rq(K, diag, Hy) - lbm_rq(K, diag, Hy - my)) -
	       (lbm_rq(K, diag, Hx) - lbm_rq(K, diag, Hx - mx));
}

inline int lbm_link_open(float hx, float zx, float cx, float hy, float zy,
			 float cy, float hd)
{
	float ex = zx + hx, ey = zy + hy;
	float em = MAXF(ex, ey), zm = MAXF(zx, zy), cm = MINF(cx, cy);
	return (em > zm + hd) & (cm > em);
}

inline int lbm_is_ghost(int n, int W, int H)
{
	int i = n % W, j = n / W;
	return i == 0 || j == 0 || i == W - 1 || j == H - 1;
}

/* lbm.c bed_open: the bed transfer the kernel adds on the link x -> x +
 * c_a at the depths hA (0 on a closed link, off the array, toward a
 * corner ghost) */
inline int lbm_bed_open(global const float *hA, global const float *z,
			global const float *c, global const int *zi, int W,
			int H, float hd, float K, float kinv, int x, int a)
{
	const int y = x + lbm_cxs[a] + lbm_cys[a] * W;
	if (y < 0 || y >= W * H)
		return 0;
	const int i = y % W, j = y / W;
	if ((i == 0 || i == W - 1) && (j == 0 || j == H - 1))
		return 0;
	if (!lbm_link_open(hA[x], z[x], c[x], hA[y], z[y], c[y], hd))
		return 0;
	return lbm_bi(K, !(a & 1), lbm_hs(hA[x], kinv), lbm_hs(hA[y], kinv),
		      lbm_dz(zi[x], zi[y], z[x], z[y], kinv));
}

/* lbm.h lbm_level */
inline int lbm_level(global const float *hA, global const int *zi,
		     float kinv, int x, int y)
{
	const int Hx = lbm_hs(hA[x], kinv), Hy = lbm_hs(hA[y], kinv);
	if (Hx <= 0 || Hy <= 0)
		return 1;
	return (uint)zi[x] + (uint)Hx == (uint)zi[y] + (uint)Hy;
}

/* lbm.c extrap_bed: an open edge's ghost g, populations copied from
 * interior cell p (reflected by flip), gets the bed transfers of its own
 * links into the interior instead of p's, at the depths hA those were
 * computed at (lbm.h bed_lvl), where the water stands level (lbm_level) */
inline void lbm_extrap_bed(global int *A, global const float *hA,
			   global const float *z, global const float *c,
			   global const int *zi, int N, int W, int H,
			   float hd, float K, float kinv, int g, int p,
			   int flip)
{
	for (int a = 1; a < 9; a++) {
		const int y = g + lbm_cxs[a] + lbm_cys[a] * W;
		if (y < 0 || y >= W * H || lbm_is_ghost(y, W, H))
			continue;
		const int b = flip == 1 ? lbm_flipx[a] :
			      flip == 2 ? lbm_flipy[a] : a;
		const int q = p + lbm_cxs[b] + lbm_cys[b] * W;
		if (!lbm_level(hA, zi, kinv, p, q) ||
		    !lbm_level(hA, zi, kinv, g, y))
			continue;
		const uint v = (uint)A[WB_SLICE(a, N, g)] +
			       (uint)lbm_bed_open(hA, z, c, zi, W, H, hd, K,
						  kinv, g, a) -
			       (uint)lbm_bed_open(hA, z, c, zi, W, H, hd, K,
						  kinv, p, b);
		A[WB_SLICE(a, N, g)] = as_int(v);
	}
}

/* pull_interior of lbm.c */
inline float lbm_pull_interior(global const int *A, global const float *hA,
			       global const float *z, global const float *c,
			       global const uchar *gk, int N, int W, int H,
			       float hd, float un, int p, int a)
{
	if (a == 0)
		return (float)A[p] * un;
	int y = p - lbm_cxs[a] - lbm_cys[a] * W;
	int real = !lbm_is_ghost(y, W, H) || gk[y] == LBM_G_PERIODIC ||
		   gk[y] == LBM_G_MIRROR;
	if (real && lbm_link_open(hA[p], z[p], c[p], hA[y], z[y], c[y], hd))
		return (float)A[WB_SLICE(a, N, y)] * un;
	return (float)A[WB_SLICE(lbm_opps[a], N, p)] * un;
}

/* lbm_pull_interior in integer units (lbm.c pull_interior_int) */
inline int lbm_pull_interior_int(global const int *A, global const float *hA,
				 global const float *z, global const float *c,
				 global const uchar *gk, int N, int W, int H,
				 float hd, int p, int a)
{
	if (a == 0)
		return A[p];
	int y = p - lbm_cxs[a] - lbm_cys[a] * W;
	int real = !lbm_is_ghost(y, W, H) || gk[y] == LBM_G_PERIODIC ||
		   gk[y] == LBM_G_MIRROR;
	if (real && lbm_link_open(hA[p], z[p], c[p], hA[y], z[y], c[y], hd))
		return A[WB_SLICE(a, N, y)];
	return A[WB_SLICE(lbm_opps[a], N, p)];
}

inline float lbm_ramped(float ginit, float gspec, real ramp)
{
	return (float)((real)ginit + (real)(gspec - ginit) * ramp);
}

/*
 * Ghost ring, items [k0, k1) of the list. Items [0, n1): pass 1 (edges,
 * then corners, which may copy an edge ghost, with the open edges' bed
 * transfers (lbm.c extrap_bed): two launches), gi = (g, p, part, kind |
 * nrm << 8 | flip << 10 | bed << 12 | only << 13) with nrm = 1 when the
 * edge's normal is along x, flip the corner's reflection (lbm.c cflip),
 * bed: extrap_bed after the copy (from part), only: extrap_bed alone
 * (an open edge's ghost, in the second launch);
 * gf = (ginit, gspec, gq, gvel). Items [n1, n1 + n2): pass 2 (Zou-He,
 * which reads periodic and mirror ghosts: a third launch), gi = (g, p,
 * nxn + 1, nyn + 1). gk: ghost kind per padded cell.
 */
kernel void lbm_ghost(global int *A, global float *hA,
		      global const float *z, global const float *c,
		      global const uchar *gk, global const int4 *gi,
		      global const float4 *gf, int k0, int k1, int n1, int N,
		      int W, int H, float hd, float e, float un, float inv,
		      real ramp, global const int *gH, global const int *zi,
		      float K, float kinv, global const float *hb)
{
	int k = k0 + (int)get_global_id(0);
	if (k >= k1)
		return;
	int4 q = gi[k];
	float4 s = gf[k];
	int g = q.x, p = q.y;
	if (k < n1) {
		int kind = q.w & 255, nrm = (q.w >> 8) & 1,
		    flip = (q.w >> 10) & 3, bed = (q.w >> 12) & 1,
		    only = (q.w >> 13) & 1;
		int part = q.z;
		if (only) {
			lbm_extrap_bed(A, hb, z, c, zi, N, W, H, hd, K, kinv,
				       g, part, 0);
		} else if (kind == LBM_G_PERIODIC || kind == LBM_G_EXTRAP) {
			/* corners next to an open edge copy its ghost line,
			 * reflected (flip 1: across x, 2: across y) */
			for (int a = 0; a < 9; a++) {
				int b = flip == 1 ? lbm_flipx[a] :
					flip == 2 ? lbm_flipy[a] : a;
				A[WB_SLICE(a, N, g)] = A[WB_SLICE(b, N, part)];
			}
			hA[g] = hA[part];
			if (bed)
				lbm_extrap_bed(A, hb, z, c, zi, N, W, H, hd, K,
					       kinv, g, part, flip);
		} else if (kind == LBM_G_MIRROR) {
			for (int a = 0; a < 9; a++)
				A[WB_SLICE(a, N, g)] = A[WB_SLICE(nrm ? lbm_flipx[a] : lbm_flipy[a], N, p)];
			hA[g] = hA[p];
		} else if (kind == LBM_G_ZOU) {
			float hs = lbm_ramped(s.x, s.y, ramp);
			hA[g] = MAXF(hA[p], hs);
		}
		return;
	}
	int nxn = q.z - 1, nyn = q.w - 1;
	int tx = -nyn, ty = nxn;
	int dn = lbm_dir[(nxn + 1) + 3 * (nyn + 1)];
	int dnt = lbm_dir[(nxn + tx + 1) + 3 * (nyn + ty + 1)];
	int dnmt = lbm_dir[(nxn - tx + 1) + 3 * (nyn - ty + 1)];
	int g1 = p - lbm_cxs[dnt] - lbm_cys[dnt] * W;
	int g2 = p - lbm_cxs[dnmt] - lbm_cys[dnmt] * W;
	if (isnan(s.z) && isnan(s.w) && (ramp >= 1.0 || s.x == s.y)) {
		/* a held depth at its level, in integers (lbm.c): toward
		 * the level's integer depth gH[k] (the host's
		 * lbm_rest_depth) */
#define PULLI(a) lbm_pull_interior_int(A, hA, z, c, gk, N, W, H, hd, p, (a))
		const int F0 = PULLI(0);
		const int Ft = PULLI(lbm_dir[(tx + 1) + 3 * (ty + 1)]);
		const int Fmt = PULLI(lbm_dir[(-tx + 1) + 3 * (-ty + 1)]);
		const int Fmn = PULLI(lbm_dir[(-nxn + 1) + 3 * (-nyn + 1)]);
		const int Fmnt = PULLI(lbm_dir[(-nxn + tx + 1) + 3 * (-nyn + ty + 1)]);
		const int Fmnmt = PULLI(lbm_dir[(-nxn - tx + 1) + 3 * (-nyn - ty + 1)]);
#undef PULLI
		const long kn = (long)F0 + Ft + Fmt + 2 * ((long)Fmn + Fmnt + Fmnmt);
		const float Q = (float)((long)gH[k] - kn), dtq = (float)(Fmt - Ft);
		A[WB_SLICE(dn, N, g)] = Fmn + lbm_fx(2 * Q / 3);
		A[WB_SLICE(dnt, N, g1)] = Fmnmt + lbm_fx(dtq / 2 + Q / 6);
		A[WB_SLICE(dnmt, N, g2)] = Fmnt + lbm_fx(-dtq / 2 + Q / 6);
		return;
	}
#define PULL(a) lbm_pull_interior(A, hA, z, c, gk, N, W, H, hd, un, p, (a))
	float f0 = PULL(0);
	float ft = PULL(lbm_dir[(tx + 1) + 3 * (ty + 1)]);
	float fmt = PULL(lbm_dir[(-tx + 1) + 3 * (-ty + 1)]);
	float fmn = PULL(lbm_dir[(-nxn + 1) + 3 * (-nyn + 1)]);
	float fmnt = PULL(lbm_dir[(-nxn + tx + 1) + 3 * (-nyn + ty + 1)]);
	float fmnmt = PULL(lbm_dir[(-nxn - tx + 1) + 3 * (-nyn - ty + 1)]);
#undef PULL
	float known = f0 + ft + fmt + 2 * (fmn + fmnt + fmnmt);
	float Q;
	float gq = s.z, gvel = s.w;
	if (!isnan(gq)) {
		Q = (float)((real)gq * ramp) / e;
	} else if (!isnan(gvel)) {
		float un = (float)((real)gvel * ramp) / e;
		Q = known / (1 - un) * un;
	} else {
		float hs = lbm_ramped(s.x, s.y, ramp);
		Q = hs - known;
	}
	A[WB_SLICE(dn, N, g)] = lbm_fx((fmn + 2 * Q / 3) * inv);
	A[WB_SLICE(dnt, N, g1)] = lbm_fx((fmnmt + (fmt - ft) / 2 + Q / 6) * inv);
	A[WB_SLICE(dnmt, N, g2)] = lbm_fx((fmnt + (ft - fmt) / 2 + Q / 6) * inv);
}

/* edge_flux of lbm.c for flux ghost k, in integer units (with the
 * bed-slope transfer of the boundary cell toward the ghost); adds to its
 * own accumulators. Gai, Gdi: lbm.c's kGi (bed weight over the
 * unit) for axis and diagonal links. */
kernel void lbm_flux(global const int *A, global const float *hA,
		     global const float *z, global const float *c,
		     global const int *fg, int nf, int N, int W, int H,
		     float hd, float Gai, float Gdi, global long *acc_in,
		     global long *acc_out, global const int *zi, float K,
		     float kinv)
{
	int k = get_global_id(0);
	if (k >= nf)
		return;
	int g = fg[k];
	/* the ghost's net exchange this step (populations can be negative,
	 * so a net inflow counts as in, a net outflow as out) */
	long net = 0;
	for (int a = 1; a < 9; a++) {
		int y = g + lbm_cxs[a] + lbm_cys[a] * W;
		/* corner ghosts: neighbours outside the array are no links */
		if (y < 0 || y >= W * H || lbm_is_ghost(y, W, H))
			continue;
		if (!lbm_link_open(hA[g], z[g], c[g], hA[y], z[y], c[y], hd))
			continue;
		int b = lbm_opps[a];
		net += (long)A[WB_SLICE(a, N, g)] - A[WB_SLICE(b, N, y)] +
		       lbm_bi(K, !(b & 1), lbm_hs(hA[y], kinv),
			      lbm_hs(hA[g], kinv),
			      lbm_dz(zi[y], zi[g], z[y], z[g], kinv));
	}
	if (net > 0)
		acc_in[k] += net;
	else
		acc_out[k] -= net;
}

/* Parameters of lbm_step: lbm.h's struct lbm_kpar, filled on the host by
 * lbm_kernel_params (depths in metres for the link rule, else in units). */
struct lbm_kp {
	float hd, hpos, hd_u, hthin, hpos_u, hlim_u, ghk, umax2, fr2, kf, om,
		om1, om6, omh, nom13, om1h, omm1h, unit, Gai, Gdi, K, kinv, ommh;
	int trt;
};

/*
 * The fused step (lbm_kernel_row) for interior cell (i, j) (of block blk
 * in the block-sparse step). Counts clamped cells into the 32-bit slot of
 * its row and 32 columns (the clamp map) and marks a diverged
 * step in *bad (atomic_min of an integer: the earliest step,
 * deterministic).
 */
inline void lbm_cell(global const int *restrict A, global int *restrict B,
		     global const float *restrict hA, global float *restrict hB,
		     global const float *restrict z, global const float *restrict c,
		     int N, int W, int nx, int ny, struct lbm_kp kp,
		     global uint *clamp_acc, global int *bad, int step,
		     int sparse, global uint *wet_out, int j0, int j1,
		     global const int *restrict zi, int i, int j, int blk)
{
	/* several processes: the rows of this band, [j0, j1) */
	if (i < nx && j < ny && j >= j0 && j < j1) {
		const int n = (i + 1) + (j + 1) * W;
		/* every candidate population is loaded up front (independent
		 * loads in flight together); the link rule then picks */
		global const int *A0 = A, *A1 = A + WB_SLICE(1, N, 0),
			*A2 = A + WB_SLICE(2, N, 0), *A3 = A + WB_SLICE(3, N, 0),
			*A4 = A + WB_SLICE(4, N, 0), *A5 = A + WB_SLICE(5, N, 0),
			*A6 = A + WB_SLICE(6, N, 0), *A7 = A + WB_SLICE(7, N, 0),
			*A8 = A + WB_SLICE(8, N, 0);
		const int F0 = A0[n];
		const int r5 = A5[n + 1], r6 = A6[n + 1 + W], r7 = A7[n + W],
			  r8 = A8[n - 1 + W], r1 = A1[n - 1], r2 = A2[n - 1 - W],
			  r3 = A3[n - W], r4 = A4[n + 1 - W];
		const int b1 = A1[n], b2 = A2[n], b3 = A3[n], b4 = A4[n],
			  b5 = A5[n], b6 = A6[n], b7 = A7[n], b8 = A8[n];
		const float hd = kp.hd, tiny = 1e-30f;
		const float hx = hA[n], zx = z[n], cx = c[n], ex = zx + hx;
		const float zxd = zx + hd;
		const float K = kp.K, ki = kp.kinv;
		const int zix = zi[n];
		/* integer depths of the stored depths, negative 0 */
		const int Hxp = max(lbm_fx(hx * ki), 0);
		const int RXa = lbm_rq(K, 0, Hxp), RXd = lbm_rq(K, 1, Hxp);
		/* link rule and integer bed transfer, lbm_kernel.h's LINK */
#define LINK(a, off, dg, RX)                                                \
	const float hy##a = hA[n + (off)], zy##a = z[n + (off)];            \
	const float em##a = MAXF(ex, zy##a + hy##a);                         \
	const float zm##a = MAXF(zxd, zy##a + hd);                           \
	const float cm##a = MINF(cx, c[n + (off)]);                          \
	const int o##a = (em##a > zm##a) & (cm##a > em##a);                 \
	const int Hy##a = max(lbm_fx(hy##a * ki), 0);                        \
	const int D##a = lbm_dz(zix, zi[n + (off)], zx, zy##a, ki);          \
	const int mx##a = min(max(D##a, 0), Hxp);                            \
	const int my##a = min(max(-D##a, 0), Hy##a);                         \
	const int t##a = (lbm_rq(K, dg, Hy##a) - lbm_rq(K, dg, Hy##a - my##a)) - \
			 (RX - lbm_rq(K, dg, Hxp - mx##a));                 \
	const int bed##a = o##a ? t##a : 0;
		LINK(1, 1, 0, RXa)
		LINK(2, 1 + W, 1, RXd)
		LINK(3, W, 0, RXa)
		LINK(4, -1 + W, 1, RXd)
		LINK(5, -1, 0, RXa)
		LINK(6, -1 - W, 1, RXd)
		LINK(7, -W, 0, RXa)
		LINK(8, 1 - W, 1, RXd)
#undef LINK
		/* pull streaming; a closed link bounces the cell's own value */
		const int F5 = o1 ? r5 : b1;
		const int F6 = o2 ? r6 : b2;
		const int F7 = o3 ? r7 : b3;
		const int F8 = o4 ? r8 : b4;
		const int F1 = o5 ? r1 : b5;
		const int F2 = o6 ? r2 : b6;
		const int F3 = o7 ? r3 : b7;
		const int F4 = o8 ? r4 : b8;
		/* exact mass and momentum received (integer sums wrap, unsigned,
		 * as lbm.c's), exact (antisymmetric) bed transfers */
#define U(x) ((uint)(x))
		const uint Hin = ((U(F0) + U(F1)) + (U(F2) + U(F3))) +
				 ((U(F4) + U(F5)) + (U(F6) + U(F7))) + U(F8);
		const uint Sb = ((U(bed1) + U(bed2)) + (U(bed3) + U(bed4))) +
				((U(bed5) + U(bed6)) + (U(bed7) + U(bed8)));
		const float h = (float)as_int(Hin);
		const float Mx = (float)as_int((U(F1) + U(F2) + U(F8)) -
					       (U(F4) + U(F5) + U(F6)));
		const float My = (float)as_int((U(F2) + U(F3) + U(F4)) -
					       (U(F6) + U(F7) + U(F8)));
		/* thin films (h < h_thin) move at M / h_thin (lbm.c) */
		const float ihf = 1.0f / MAXF(h, kp.hthin);
		const float Uv = Mx * ihf, V = My * ihf;
		const float ghe = kp.ghk * h;
		const float sp2 = fma(Uv, Uv, V * V);
		const float lim2 = MINF(kp.umax2, kp.fr2 * ghe);
		const int cl = sp2 > lim2;
		const float l2p = MAXF(lim2, 0.0f);
		const float sc = cl ? sqrt(l2p / MAXF(sp2, tiny)) : 1.0f;
		const float Uc = sc * Uv, Vc = sc * V;
		const float uu = MINF(sp2, l2p);
		const int clv = (cl & (h > kp.hd_u)) | (ghe >= 1.0f);
		/* Manning friction, implicit */
		const float y = lbm_rcbrt(MAXF(h, kp.hd_u));
		const float y2 = y * y;
		const float rf = 1.0f / fma(kp.kf * sqrt(uu), y2 * y2, 1.0f);
		/* equilibrium (times omega) and forcing per direction */
		const float Aq = (ghe - uu) * (h * kp.om6);
		const float Cq = h * kp.omh;
		const float hr = (h * rf) * (1.0f / 3.0f);
		const float Bx = fma(kp.nom13, Mx, hr * Uc);
		const float By = fma(kp.nom13, My, hr * Vc);
		const float eX = fma(Cq * Uc, Uc, Aq), eY = fma(Cq * Vc, Vc, Aq);
		const float c2 = Uc + Vc, c4 = Vc - Uc;
		const float Ad = Aq * 0.25f, Cd = Cq * 0.25f;
		const float e2 = fma(Cd * c2, c2, Ad), e4 = fma(Cd * c4, c4, Ad);
		const float B2 = (Bx + By) * 0.25f, B4 = (By - Bx) * 0.25f;
		/* deviation form about R_a(Hc) (lbm_kernel.h) */
		const float hv = h * kp.unit;
		const int Hc = lbm_fx(hv * ki);
		const int Rca = lbm_rq(K, 0, Hc), Rcd = lbm_rq(K, 1, Hc);
		const float Ar = ghe * (h * kp.om6), Ard = Ar * 0.25f;
		const float mX = eX - Ar, mY = eY - Ar, m2 = e2 - Ard,
			    m4 = e4 - Ard;
		const float nomh = -kp.omh, nommh = -kp.ommh, ommh = kp.ommh;
		int P1, P2, P3, P4, P5, P6, P7, P8;
#define PAIR(a, b, R, mq, Bq)                                               \
	{                                                                    \
		const float ss = (float)((F##a - R) + (F##b - R));           \
		const float fd = (float)(F##a - F##b);                        \
		const float base = fma(nomh, ss, mq);                        \
		P##a = (F##a + lbm_fx(fma(nommh, fd, base + (Bq)))) + bed##a; \
		P##b = (F##b + lbm_fx(fma(ommh, fd, base - (Bq)))) + bed##b;  \
	}
		PAIR(1, 5, Rca, mX, Bx)
		PAIR(3, 7, Rca, mY, By)
		PAIR(2, 6, Rcd, m2, B2)
		PAIR(4, 8, Rcd, m4, B4)
#undef PAIR
		const float om1 = kp.om1;
		const float p1 = (float)P1, p2 = (float)P2, p3 = (float)P3,
			    p4 = (float)P4, p5 = (float)P5, p6 = (float)P6,
			    p7 = (float)P7, p8 = (float)P8;
		const float p0 = fma(om1, (float)F0,
				     h * kp.om - fma(Aq, 5.0f, (Cq * 3.0f) * uu));
		const float hp = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)) + p8;
		/* positivity only for populations that go to a shallow open
		 * neighbour, or stay (bounced back or kept) in a shallow cell */
		const float hpos = kp.hpos, big = 1e30f;
		const int sh = h < kp.hpos_u;
		float rmin = MINF(sh ? p0 * 2.25f : big,
				  (sh | (o1 & (hy1 < hpos))) ? p1 * 9.0f : big);
		rmin = MINF(rmin, (sh | (o3 & (hy3 < hpos))) ? p3 * 9.0f : big);
		rmin = MINF(rmin, (sh | (o5 & (hy5 < hpos))) ? p5 * 9.0f : big);
		rmin = MINF(rmin, (sh | (o7 & (hy7 < hpos))) ? p7 * 9.0f : big);
		rmin = MINF(rmin, (sh | (o2 & (hy2 < hpos))) ? p2 * 36.0f : big);
		rmin = MINF(rmin, (sh | (o4 & (hy4 < hpos))) ? p4 * 36.0f : big);
		rmin = MINF(rmin, (sh | (o6 & (hy6 < hpos))) ? p6 * 36.0f : big);
		rmin = MINF(rmin, (sh | (o8 & (hy8 < hpos))) ? p8 * 36.0f : big);
		const int neg = rmin < 0.0f;
		const int nclamp = clv | neg; /* one count per cell, as lbm.c */
		const int nbad = !(h < kp.hlim_u);
		/* positivity blend only where needed (lbm.c: only when a lane
		 * of the vector needs it; th = 0 leaves finite populations as
		 * they are, so skipping it is the same) */
		if (neg) {
			const int pos = hp > 0.0f;
			const float r = rmin / MAXF(hp, tiny);
			const float th = pos ? -r / (1.0f - r) : 1.0f;
			const float T = pos ? hp : 0.0f;
			P1 = lbm_fx(fma(th, T * (1.0f / 9) - p1, p1));
			P2 = lbm_fx(fma(th, T * (1.0f / 36) - p2, p2));
			P3 = lbm_fx(fma(th, T * (1.0f / 9) - p3, p3));
			P4 = lbm_fx(fma(th, T * (1.0f / 36) - p4, p4));
			P5 = lbm_fx(fma(th, T * (1.0f / 9) - p5, p5));
			P6 = lbm_fx(fma(th, T * (1.0f / 36) - p6, p6));
			P7 = lbm_fx(fma(th, T * (1.0f / 9) - p7, p7));
			P8 = lbm_fx(fma(th, T * (1.0f / 36) - p8, p8));
		}
		/* the rest population takes the remainder: exact mass budget */
		const int P0 = (int)((Hin + Sb) - (((U(P1) + U(P2)) + (U(P3) + U(P4))) +
						   ((U(P5) + U(P6)) + (U(P7) + U(P8)))));
#undef U
		B[n] = P0;
		B[WB_SLICE(1, N, n)] = P1;
		B[WB_SLICE(2, N, n)] = P2;
		B[WB_SLICE(3, N, n)] = P3;
		B[WB_SLICE(4, N, n)] = P4;
		B[WB_SLICE(5, N, n)] = P5;
		B[WB_SLICE(6, N, n)] = P6;
		B[WB_SLICE(7, N, n)] = P7;
		B[WB_SLICE(8, N, n)] = P8;
		hB[n] = hv;
		if (sparse && (P0 | P1 | P2 | P3 | P4 | P5 | P6 | P7 | P8 |
			       as_int(hv)) != 0)
			atomic_or(&wet_out[blk], 1u);
		if (nbad)
			atomic_min(bad, step);
		/* an integer count per row and 32 columns (lbm.c's clamp map,
		 * WB_CLAMP_BLOCK; integer atomics: deterministic) */
		if (nclamp)
			atomic_inc(&clamp_acc[i / 32 + j * ((nx + 31) / 32)]);
	}
}

/*
 * The step: cell (get_global_id(0), get_global_id(1)) of the grid
 * (round_up(nx, slx), ny), or, block-sparse (lbm_blk_run), blocks
 * blist[0 .. cnt[which]): work-groups (32, 1) or (32, 4), those of
 * group column g working on row get_global_id(1) of blocks g, g + groups,
 * ... (get_num_groups(0) groups per row; the count is read
 * here, on the device: the host launches a fixed number of groups and
 * never waits for the lists).
 */
kernel void lbm_step(global const int *restrict A, global int *restrict B,
		     global const float *restrict hA, global float *restrict hB,
		     global const float *restrict z, global const float *restrict c,
		     int N, int W, int nx, int ny, struct lbm_kp kp,
		     global uint *clamp_acc, global int *bad, int step,
		     global const int *blist, int sparse, int nbx, int slx,
		     global uint *wet_out, int j0, int j1,
		     global const int *restrict zi, global const int *cnt,
		     int which, global const int *zlist, int znb)
{
	if (!sparse) {
		lbm_cell(A, B, hA, hB, z, c, N, W, nx, ny, kp, clamp_acc, bad,
			 step, sparse, wet_out, j0, j1, zi,
			 (int)get_global_id(0), (int)get_global_id(1), 0);
		return;
	}
	const int n = cnt[which], ng = (int)get_num_groups(0);
	for (int g = (int)get_group_id(0); g < n; g += ng) {
		const int blk = blist[g];
		lbm_cell(A, B, hA, hB, z, c, N, W, nx, ny, kp, clamp_acc, bad,
			 step, sparse, wet_out, j0, j1, zi,
			 (blk % nbx) * 32 + (int)get_local_id(0),
			 (blk / nbx) * 32 + (int)get_global_id(1), blk);
	}
	/* znb > 0: the sleeping blocks whose output buffer may hold a
	 * nonzero bit, zlist[znb - 1 - g] for g < cnt[1] (lbm_blk_run lists
	 * them from the back), get the dense step's zeros in the band's
	 * rows: blocks apart from those stepped, so in the same launch (a
	 * launch of its own cost about as much as a short list's step on
	 * each rank of several) */
	const int m = znb > 0 ? cnt[1] : 0;
	const int i0 = (int)get_local_id(0), jy = (int)get_global_id(1);
	for (int g = (int)get_group_id(0); g < m; g += ng) {
		const int blk = zlist[znb - 1 - g];
		const int i = (blk % nbx) * 32 + i0, j = (blk / nbx) * 32 + jy;
		if (i < nx && j < ny && j >= j0 && j < j1) {
			const int n = (i + 1) + (j + 1) * W;
			for (int a = 0; a < 9; a++)
				B[WB_SLICE(a, N, n)] = 0;
			hB[n] = 0.0f;
		}
	}
}

/*
 * Block-sparse step (lbm.c "block-sparse step", docs/scale.md): one item
 * per 32 x 32 block b. It is stepped (listed from the front of blist)
 * when it or one of its 8 neighbours holds a nonzero bit in f[cur] /
 * h[cur] (wet_in), holds a special (keep), or a ghost cell within one
 * cell of it holds one (the ghost ring is filled); its wet_out starts as
 * keep and lbm_step ORs in its output. Otherwise the dense step would
 * write zeros there: when wet_out says the output buffer may hold
 * something else, b is listed from the back for lbm_step to clear. cnt[0],
 * cnt[1]: the two counts, cnt[2]: the cells of the stepped blocks (the
 * order within the lists does not matter:
 * every cell is written by one item, the clamp slots are integer).
 */
/*
 * The ghost cells of the grid's outer ring that hold a nonzero bit, per
 * block (lbm_blk_live's third condition): one item per ghost cell of the
 * padded rows [r0, r1) of the west and east ghost columns and of the whole
 * north (north) and south (south) ghost rows; a nonzero cell sets estamp[b] = stamp for
 * every edge block b whose padded box (the block and its one-cell ring)
 * holds it. lbm_blk_live then reads one word per edge block instead of
 * walking the box's ghost cells in one item (up to 68 cells of 10 arrays,
 * serially: the list kernel was as long as that walk).
 */
kernel void lbm_blk_edge(global const int *A, global const float *hA, int N,
			 int W, int nx, int ny, int nbx, int nby, int r0,
			 int r1, global uint *estamp, uint stamp, int north,
			 int south, global int *cnt, global ulong *cells,
			 int reset)
{
	const int t = (int)get_global_id(0), nr = r1 - r0, H = ny + 2;
	/* before a step's lists (reset): the counts of lbm_blk_run zeroed,
	 * the cells of the last step's list added to *cells first (in this
	 * launch, not one of its own: lbm_blk_run runs after it) */
	if (reset && t == 0) {
		cells[0] += (ulong)(uint)cnt[2];
		cnt[0] = cnt[1] = cnt[2] = cnt[3] = 0;
	}
	int col, g, p;
	if (t < 2 * nr) {
		col = 1;
		g = t < nr ? 0 : nx + 1;
		p = r0 + (t < nr ? t : t - nr);
	} else if (t < 2 * nr + (north + south) * W) {
		/* the north ghost row when north, the south one when south
		 * (several processes: a band far from a side reads neither) */
		const int u = t - 2 * nr;
		col = 0;
		g = u < W && north ? 0 : ny + 1;
		p = u < W ? u : u - W;
	} else {
		return;
	}
	if (col && p >= H)
		return;
	const int n = col ? g + p * W : p + g * W;
	uint acc = as_uint(hA[n]);
	for (int a = 0; a < 9; a++)
		acc |= (uint)A[WB_SLICE(a, N, n)];
	if (!acc)
		return;
	/* the blocks along this side whose box [32 b, min(len, 32 b + 32) + 1]
	 * holds position p: b = p / 32 - 1 and p / 32 (p <= 32 b + 33) */
	const int nbs = col ? nby : nbx, len = col ? ny : nx;
	for (int b = p / 32 - 1; b <= p / 32; b++) {
		if (b < 0 || b >= nbs || p > min(len, 32 * b + 32) + 1)
			continue;
		/* the side's own blocks: the west / north ghosts are in the
		 * boxes of the first block column / row, the east / south ones
		 * in the last */
		const int e = g == 0 ? 0 : (col ? nbx : nby) - 1;
		const int blk = col ? e + b * nbx : b + e * nbx;
		atomic_max(&estamp[blk], stamp);
	}
}

/* Whether block b = (bx, by) runs (lbm_blk_run): it or one of its 8
 * neighbours holds a nonzero bit (wet_in), it holds a special (keep), or,
 * on the grid's edge, a ghost cell within one cell of it holds one
 * (estamp[b] == stamp: lbm_blk_edge ran on this state). */
inline int lbm_blk_live(global const uint *wet_in, global const uint *keep,
			global const uint *estamp, uint stamp, int nx, int ny,
			int nbx, int nby, int bx, int by)
{
	uint run = keep[bx + by * nbx];
	for (int dy = -1; dy <= 1; dy++)
		for (int dx = -1; dx <= 1; dx++) {
			const int x = bx + dx, y = by + dy;
			if (x >= 0 && x < nbx && y >= 0 && y < nby)
				run |= wet_in[x + y * nbx];
		}
	if (!run && (bx == 0 || by == 0 || bx == nbx - 1 || by == nby - 1))
		run = estamp[bx + by * nbx] == stamp;
	return run != 0;
}

kernel void lbm_blk_run(global const uint *wet_in, global uint *wet_out,
			global const uint *keep, global const uint *estamp,
			uint stamp, int nx, int ny,
			int nbx, int nby, global int *blist, global int *cnt,
			int j0, int j1, global int *elist, int edge)
{
	const int b = get_global_id(0);
	if (b >= nbx * nby)
		return;
	const int bx = b % nbx, by = b / nbx;
	/* several processes: blocks without a row of this band [j0, j1)
	 * are neither stepped nor cleared here; their flags are those the
	 * exchange's scatter sets (par_cells_scatter) */
	const int r0 = max(by * 32, j0), r1 = min(min(ny, by * 32 + 32), j1);
	if (r1 <= r0) {
		wet_out[b] = 0;
		return;
	}
	if (lbm_blk_live(wet_in, keep, estamp, stamp, nx, ny, nbx, nby, bx, by)) {
		/* edge > 0 (the exchange behind the interior, cl.c): a block
		 * with a row among the band's first or last edge rows goes
		 * to elist, stepped first */
		if (r0 < j0 + edge || r1 > j1 - edge)
			elist[atomic_inc(&cnt[3])] = b;
		else
			blist[atomic_inc(&cnt[0])] = b;
		atomic_add(&cnt[2], (min(nx, bx * 32 + 32) - bx * 32) * (r1 - r0));
		wet_out[b] = keep[b];
	} else {
		if (wet_out[b])
			blist[nbx * nby - 1 - atomic_inc(&cnt[1])] = b;
		wet_out[b] = 0;
	}
}

/*
 * The blocks of a window sample (cl.c lbm_enq_sample): those with a row
 * of the band [j0, j1) that the next step would run (lbm_blk_live, the
 * ghosts filled), listed in list[0 .. cnt[0]) (cnt[0] zeroed before).
 * Elsewhere every population that lbm_macro pulls is 0, so it would give
 * +0 depth and velocity, and adding +0 leaves a window sum as it is.
 */
kernel void lbm_blk_sample(global const uint *wet_in, global const uint *keep,
			   global const uint *estamp, uint stamp, int nx,
			   int ny, int nbx, int nby, int j0,
			   int j1, global int *list, global int *cnt)
{
	const int b = get_global_id(0);
	if (b >= nbx * nby)
		return;
	const int bx = b % nbx, by = b / nbx;
	const int r0 = max(by * 32, j0), r1 = min(min(ny, by * 32 + 32), j1);
	if (r1 > r0 &&
	    lbm_blk_live(wet_in, keep, estamp, stamp, nx, ny, nbx, nby, bx, by))
		list[atomic_inc(&cnt[0])] = b;
}

/* Equilibrium lbm_feq of lbm.h. */
inline void lbm_feq9(float h, float U, float V, float ghe, float *out)
{
	float uu = U * U + V * V;
	float hb = h * (ghe - uu) * (1.0f / 6.0f);
	for (int a = 1; a < 9; a++) {
		float cu = (float)lbm_cxs[a] * U + (float)lbm_cys[a] * V;
		out[a] = lbm_ws[a] * (hb + h * cu * (1.0f / 3.0f) +
				      h * cu * cu * 0.5f);
	}
	out[0] = h - (((out[1] + out[3]) + (out[5] + out[7])) +
		      ((out[2] + out[4]) + (out[6] + out[8])));
}

/*
 * specials_row of lbm.c for special k: si = (n, flags), sf = (src, level,
 * mu, mv, mk, z) at 6 k. flags: 2 fixed, 4 sink-all (WB_CELL_*). Integer
 * mass as lbm.c; adds what it books and its clamps to its own slots.
 */
kernel void lbm_special(global int *B, global const int2 *si,
			global const float *sf, int nsp, int N, real dt,
			real e, float ghk, float hd, float un, float inv,
			global long *acc_in, global long *acc_out,
			global ulong *acc_cl, global const float *hA,
			global const float *z, global const float *c, int W,
			float Gai, float Gdi, global const int *zi, float K,
			float kinv)
{
	int k = get_global_id(0);
	if (k >= nsp)
		return;
	const int n = si[k].x, flags = si[k].y;
	const float src = sf[8 * k], level = sf[8 * k + 1], mu = sf[8 * k + 2],
		    mv = sf[8 * k + 3], mk = sf[8 * k + 4], zn = sf[8 * k + 5];
	float f[9];
	long tot = 0, in = 0, out = 0;
	uint ncl = 0;
	for (int a = 0; a < 9; a++) {
		tot += B[WB_SLICE(a, N, n)];
		f[a] = (float)B[WB_SLICE(a, N, n)] * un;
	}
	const float hp = (float)tot * un;
	if (flags & 4) {
		out += tot;
		for (int a = 0; a < 9; a++)
			B[WB_SLICE(a, N, n)] = 0;
		acc_out[k] += out;
		return;
	}
	long target = tot;
	if (mk > 0 && hp > hd) {
		float Mx = 0, My = 0;
		for (int a = 1; a < 9; a++) {
			Mx += lbm_cxs[a] * f[a];
			My += lbm_cys[a] * f[a];
		}
		float U = Mx / hp, V = My / hp;
		float kd = (float)(mk * dt), al = kd / (1 + kd);
		float dMx = hp * al * (mu / (float)e - U);
		float dMy = hp * al * (mv / (float)e - V);
		float mn = 0;
		for (int a = 1; a < 9; a++) {
			f[a] += lbm_ws[a] * (lbm_cxs[a] * dMx + lbm_cys[a] * dMy) / 3;
			mn = MINF(mn, f[a]);
		}
		if (mn < 0) {
			float rmin = 0;
			for (int a = 0; a < 9; a++)
				rmin = MINF(rmin, f[a] / lbm_qs[a]);
			float r = rmin / hp, th = -r / (1 - r);
			for (int a = 0; a < 9; a++)
				f[a] += th * (hp * lbm_qs[a] - f[a]);
			ncl++;
		}
	}
	if (src > 0) {
		long add = lbm_fx((float)(src * dt) * inv);
		target += add;
		in += add;
	} else if (src < 0 && tot > 0) {
		long rem = lbm_fx((float)(-src * dt) * inv);
		if (rem > tot)
			rem = tot;
		float keep = (float)(1.0 - (real)rem / (real)tot);
		for (int a = 0; a < 9; a++)
			f[a] *= keep;
		target -= rem;
		out += rem;
	}
	if (flags & 2) {
		/* reset to the level at rest, exactly as the initial state
		 * (specials_row of lbm.c): R_a of the level's integer depth
		 * (the host's, sf[8 k + 6]) plus the integer bed transfers of
		 * the open links plus the rounded velocity part */
		int bi[9] = { 0 };
		long mxi = 0, myi = 0;
		float Mx = 0, My = 0, hc = (float)target * un;
		for (int a = 1; a < 9; a++) {
			int y = n + lbm_cxs[a] + lbm_cys[a] * W;
			if (lbm_link_open(hA[n], z[n], c[n], hA[y], z[y], c[y], hd))
				bi[a] = lbm_bi(K, !(a & 1), lbm_hs(hA[n], kinv),
					       lbm_hs(hA[y], kinv),
					       lbm_dz(zi[n], zi[y], z[n], z[y], kinv));
			const long ba = (long)B[WB_SLICE(a, N, n)] - bi[a];
			mxi += lbm_cxs[a] * ba;
			myi += lbm_cys[a] * ba;
			Mx += lbm_cxs[a] * (f[a] - (float)bi[a] * un);
			My += lbm_cys[a] * (f[a] - (float)bi[a] * un);
		}
		if (!(mk > 0 && hp > hd) && !(src < 0 && tot > 0)) {
			Mx = (float)mxi * un;
			My = (float)myi * un;
		}
		float hf = MAXF(level - zn, 0.0f);
		float U = hc > hd ? Mx / hc : 0.0f;
		float V = hc > hd ? My / hc : 0.0f;
		float q0[9];
		lbm_feq9(hf, U, V, ghk * hf, f);
		lbm_feq9(hf, 0.0f, 0.0f, ghk * hf, q0);
		const int Ht = as_int(sf[8 * k + 6]);
		const int Hs = lbm_hs((float)Ht * un, kinv);
		long t1 = Ht, rest = 0;
		for (int a = 1; a < 9; a++) {
			const int q = lbm_rq(K, !(a & 1), Hs) +
				      lbm_fx((f[a] - q0[a]) * inv) + bi[a];
			B[WB_SLICE(a, N, n)] = q;
			t1 += bi[a];
			rest += q;
		}
		B[n] = (int)(t1 - rest);
		if (t1 > target)
			in += t1 - target;
		else
			out += target - t1;
		acc_in[k] += in;
		acc_out[k] += out;
		acc_cl[k] += ncl;
		return;
	}
	long rest = 0;
	for (int a = 1; a < 9; a++) {
		int q = lbm_fx(f[a] * inv);
		B[WB_SLICE(a, N, n)] = q;
		rest += q;
	}
	B[n] = (int)(target - rest);
	acc_in[k] += in;
	acc_out[k] += out;
	acc_cl[k] += ncl;
}

/* lbm_macro of lbm.c: depth and velocity (m, m/s) of interior cell (i, j)
 * into unpadded nx*ny arrays. */
inline void lbm_macro_at(global const int *A, global const float *hA,
			 global const float *z, global const float *c, int N,
			 int W, int nx, float hd, float hthin, float un,
			 float e, float ghk, float umax2, float fr2,
			 global float *ho, global float *uo, global float *vo,
			 int i, int j)
{
	const int n = (i + 1) + (j + 1) * W;
	/* exact integer moments, each rounded once (lbm.c macro_cols) */
	long hi = 0, xi = 0, yi = 0;
	for (int a = 0; a < 9; a++) {
		long f;
		if (a == 0) {
			f = A[n];
		} else {
			int y = n - lbm_cxs[a] - lbm_cys[a] * W;
			int o = lbm_link_open(hA[n], z[n], c[n], hA[y], z[y], c[y], hd);
			f = o ? A[WB_SLICE(a, N, y)] : A[WB_SLICE(lbm_opps[a], N, n)];
		}
		hi += f;
		xi += lbm_cxs[a] * f;
		yi += lbm_cys[a] * f;
	}
	const float h = (float)((real)hi * (real)un),
		    Mx = (float)((real)xi * (real)un),
		    My = (float)((real)yi * (real)un);
	float inv = 1.0f / MAXF(h, hthin);
	float U = Mx * inv, V = My * inv;
	float sp2 = U * U + V * V;
	float lim2 = MINF(umax2, fr2 * ghk * h);
	float sc = sp2 > lim2 ? sqrt(lim2 / sp2) : 1.0f;
	if (!(h > hd))
		sc = 0;
	const int k = i + j * nx;
	ho[k] = MAXF(h, 0.0f);
	uo[k] = sc * U * e;
	vo[k] = sc * V * e;
}

kernel void lbm_macro(global const int *A, global const float *hA,
		      global const float *z, global const float *c, int N,
		      int W, int nx, int ny, float hd, float hthin, float un,
		      float e, float ghk, float umax2, float fr2, global float *ho,
		      global float *uo, global float *vo)
{
	const int i = get_global_id(0), j = get_global_id(1);
	if (i < nx && j < ny)
		lbm_macro_at(A, hA, z, c, N, W, nx, hd, hthin, un, e, ghk,
			     umax2, fr2, ho, uo, vo, i, j);
}

/* lbm_macro on the cells of the band's rows [j0, j1) of the blocks
 * list[0 .. cnt[0]) (lbm_blk_sample; work-groups (32, 1) as lbm_step's
 * block-sparse launch). */
kernel void lbm_macro_blk(global const int *A, global const float *hA,
			  global const float *z, global const float *c, int N,
			  int W, int nx, int ny, float hd, float hthin,
			  float un, float e, float ghk, float umax2, float fr2,
			  global float *ho, global float *uo, global float *vo,
			  global const int *list, global const int *cnt,
			  int nbx, int j0, int j1)
{
	const int m = cnt[0], ng = (int)get_num_groups(0);
	for (int g = (int)get_group_id(0); g < m; g += ng) {
		const int blk = list[g];
		const int i = (blk % nbx) * 32 + (int)get_local_id(0);
		const int j = (blk / nbx) * 32 + (int)get_global_id(1);
		if (i < nx && j < ny && j >= j0 && j < j1)
			lbm_macro_at(A, hA, z, c, N, W, nx, hd, hthin, un, e,
				     ghk, umax2, fr2, ho, uo, vo, i, j);
	}
}

/* The end of lbm_macro: held levels and drains show their state after the
 * step's specials (si, sf as lbm_special). */
kernel void lbm_macro_fix(global const int2 *si, global const float *sf,
			  int nsp, int W, int nx, global float *ho,
			  global float *uo, global float *vo)
{
	int q = get_global_id(0);
	if (q >= nsp)
		return;
	const int n = si[q].x, flags = si[q].y;
	const int i = n % W - 1, j = n / W - 1;
	const int k = i + j * nx;
	if (flags & 4) {
		ho[k] = 0;
		uo[k] = 0;
		vo[k] = 0;
	} else if (flags & 2) {
		ho[k] = MAXF(sf[8 * q + 1] - sf[8 * q + 5], 0.0f);
	}
}

/* lbm_mass's row sums (exact integers). One work item per row. */
kernel void lbm_rowsum(global const int *A, int N, int W, int nx, int ny,
		       global long *rows)
{
	const int j = get_global_id(0);
	if (j >= ny)
		return;
	long row = 0;
	for (int i = 0; i < nx; i++) {
		int n = (i + 1) + (j + 1) * W;
		for (int a = 0; a < 9; a++)
			row += A[WB_SLICE(a, N, n)];
	}
	rows[j] = row;
}

/* lbm_solve's window means: sums of the sampled fields, per cell. */
kernel void lbm_accum(global const float *h, global const float *u,
		      global const float *v, global float *sh, global float *su,
		      global float *sv, int n)
{
	const int q = get_global_id(0);
	if (q >= n)
		return;
	sh[q] += h[q];
	su[q] += u[q];
	sv[q] += v[q];
}

/* lbm_accum on the cells lbm_macro_blk wrote (the same list and rows). */
kernel void lbm_accum_blk(global const float *h, global const float *u,
			  global const float *v, global float *sh,
			  global float *su, global float *sv, int nx, int ny,
			  global const int *list, global const int *cnt,
			  int nbx, int j0, int j1)
{
	const int m = cnt[0], ng = (int)get_num_groups(0);
	for (int g = (int)get_group_id(0); g < m; g += ng) {
		const int blk = list[g];
		const int i = (blk % nbx) * 32 + (int)get_local_id(0);
		const int j = (blk / nbx) * 32 + (int)get_global_id(1);
		if (i < nx && j < ny && j >= j0 && j < j1) {
			const int q = i + j * nx;
			sh[q] += h[q];
			su[q] += u[q];
			sv[q] += v[q];
		}
	}
}

/* ... and the means of a window (films produce no velocity); the sums are
 * reset. */
kernel void lbm_wmean(global float *sh, global float *su, global float *sv,
		      global float *mh, global float *u, global float *v, int n,
		      float w, float hthin)
{
	const int q = get_global_id(0);
	if (q >= n)
		return;
	mh[q] = sh[q] * w;
	u[q] = mh[q] > hthin ? su[q] * w : 0.0f;
	v[q] = mh[q] > hthin ? sv[q] * w : 0.0f;
	sh[q] = su[q] = sv[q] = 0;
}

/* rel_change of lbm.c, per row, over cells deeper than h_thin, depth
 * weighted: num = sum h |du|^2, den = sum h |u1|^2, hs = sum h. One work
 * item per row (called once a window). */
kernel void wb_resid_rows(global const float *h, global const float *u0,
			  global const float *v0, global const float *u1,
			  global const float *v1, int nx, int ny, float hthin,
			  global real *num, global real *den, global real *hs)
{
	const int j = get_global_id(0);
	if (j >= ny)
		return;
	real rn = 0, rd = 0, rh = 0;
	for (int i = 0; i < nx; i++) {
		int k = i + j * nx;
		if (!(h[k] > hthin))
			continue;
		real du = (real)u1[k] - u0[k], dv = (real)v1[k] - v0[k];
		rn += h[k] * (du * du + dv * dv);
		rd += h[k] * ((real)u1[k] * u1[k] + (real)v1[k] * v1[k]);
		rh += h[k];
	}
	num[j] = rn;
	den[j] = rd;
	hs[j] = rh;
}

/* ---- the LBM/FV hybrid (cl.c's cl_fv_*; the FV update itself runs on
 * the host, lbm_fv.c) ------------------------------------------------------ */

/* Row segments that may hold a core cell of lbm_fv_mark (lbm_fv.c: a
 * wet cell whose Froude number passes the thresholds, that spills onto a
 * dry neighbour below its surface, or that has a dry open-sky neighbour,
 * a shoreline): such a cell sets segs[j ns + (i - 1) / sg] (padded row
 * j, interior column i; segments of sg = LBM_FV_SEG columns, ns a row)
 * to 1; a cell next to an edge closure that may pass on the state it
 * pulls sets its own segment and those of the cells it pulls from (the
 * host's test reads them); segs zeroed by the host. A superset, so that no rounding can
 * leave a row out (extra rows cost a transfer, never a result): the host
 * passes half of lbm_fv.c's Froude thresholds, applied to the raw
 * moments (as its candidate test) and to the moments less the bed terms
 * (as its core test, with a margin); moving films (film_drives, with
 * half its threshold); the spill test is lbm_fv.c's
 * spills, the same float operations on the same bytes. Segments
 * without a core cell mark nothing (lbm_fv_mark_segs). A change to the
 * core criteria of lbm_fv.c must be made here too. */
kernel void lbm_fv_rows(global const int *A, global const float *hA,
			global const float *z, global const float *c, int N,
			int W, int nx, int ny, float kf, float hdu, float thin_u,
			float t_off, float t_film, float hdf, int all, float Gai,
			float Gdi, global uchar *segs, global const uchar *gk,
			float t_on, float t_drive, int ns, int sg)
{
	const int i = get_global_id(0) + 1, j = get_global_id(1) + 1;
	if (i > nx || j > ny)
		return;
	const int n = i + j * W;
	/* a cell next to an inflow or level closure (lbm_fv.c
	 * edge_pulled_fr2): the state the kernel pulls next, from the ghosts
	 * cl_fv_mark filled for it; its row and the rows it pulls from (the
	 * host's test reads them) */
	if ((i == 1) | (i == nx) | (j == 1) | (j == ny)) {
		int zou = 0;
		for (int a = 1; a < 9; a++) {
			const int ii = i - lbm_cxs[a], jj = j - lbm_cys[a];
			const int y = n - lbm_cxs[a] - lbm_cys[a] * W;
			zou |= !((ii >= 1) & (ii <= nx) & (jj >= 1) & (jj <= ny)) &&
			       gk[y] == LBM_G_ZOU;
		}
		long pm = A[n], px = 0, py = 0;
		for (int a = 1; a < 9 && zou; a++) {
			const int y = n - lbm_cxs[a] - lbm_cys[a] * W;
			const long f = lbm_link_open(hA[n], z[n], c[n], hA[y], z[y],
						     c[y], hdf) ?
				(long)A[WB_SLICE(a, N, y)] :
				(long)A[WB_SLICE(lbm_opps[a], N, n)];
			pm += f;
			px += lbm_cxs[a] * f;
			py += lbm_cys[a] * f;
		}
		/* loosened as the tests below (t_on: half of LBM_FV_ON^2),
		 * and whatever the stored depth: a superset of the host's */
		const float ph = (float)pm, pxf = (float)px, pyf = (float)py;
		if (zou && ph > 0.5f * hdu &&
		    (pxf * pxf + pyf * pyf) * kf > t_on * (ph * ph * ph))
			for (int dj = -1; dj <= 1; dj++)
				for (int di = -1; di <= 1; di++) {
					const int ii = clamp(i + di, 1, nx);
					segs[(j + dj) * ns + (ii - 1) / sg] = 1;
				}
	}
	const uint a0 = (uint)A[n], a1 = (uint)A[WB_SLICE(1, N, n)],
		   a2 = (uint)A[WB_SLICE(2, N, n)], a3 = (uint)A[WB_SLICE(3, N, n)],
		   a4 = (uint)A[WB_SLICE(4, N, n)], a5 = (uint)A[WB_SLICE(5, N, n)],
		   a6 = (uint)A[WB_SLICE(6, N, n)], a7 = (uint)A[WB_SLICE(7, N, n)],
		   a8 = (uint)A[WB_SLICE(8, N, n)];
	const uint p15 = a1 + a2 + a8, m15 = a4 + a5 + a6;
	const uint p37 = a2 + a3 + a4, m37 = a6 + a7 + a8;
	const float mf = (float)as_int(a0 + p15 + m15 + a3 + a7);
	if (!(mf > hdu))
		return;
	const float X = (float)as_int(p15 - m15), Y = (float)as_int(p37 - m37);
	const float thr = mf < thin_u ? t_film : t_off;
	const float m3 = thr * (mf * mf * mf);
	int hit = ((X * X + Y * Y) * kf > m3) | all;
	const float eta = z[n] + hA[n];
	if (hit && !all) {
		/* the core test takes the bed terms of the open links out of
		 * the momentum (lbm_fv.c cell_moments): so does this one, with
		 * a margin for the float sums that covers their rounding */
		float bx = 0.0f, by = 0.0f, ab = 0.0f;
		for (int a = 1; a < 9; a++) {
			const int q = n + lbm_cxs[a] + lbm_cys[a] * W;
			if (!lbm_link_open(hA[n], z[n], c[n], hA[q], z[q], c[q], hdf))
				continue;
			const float b = lbm_bed(hA[n], z[n], hA[q], z[q]) *
					((a & 1) ? Gai : Gdi);
			bx += lbm_cxs[a] * b;
			by += lbm_cys[a] * b;
			ab += fabs(b);
		}
		/* (the host's bed terms are the integer lbm_bi: within a
		 * few units of these per link, inside the slack) */
		const float slack = 1e-4f * (fabs(X) + fabs(Y) + ab) + 48.0f;
		const float mx = fabs(X - bx) + slack, my = fabs(Y - by) + slack;
		hit = (mx * mx + my * my) * kf > m3;
	}
	/* a film whose surface falls toward an open neighbour by more than
	 * K sqrt(h) (lbm_fv.c film_drives; t_drive is half its K, the
	 * diagonal's length rounded up: a superset) */
	if (!hit && mf < 1.01f * thin_u) {
		const float lim = t_drive * sqrt(fmax(hA[n], 0.0f));
		for (int a = 1; a < 9; a++) {
			const int q = n + lbm_cxs[a] + lbm_cys[a] * W;
			if (!lbm_link_open(hA[n], z[n], c[n], hA[q], z[q], c[q], hdf))
				continue;
			const float d = eta - (z[q] + fmax(hA[q], 0.0f));
			hit |= ((a & 1) ? d : d * 0.7f) > lim;
		}
	}
	for (int dj = -1; dj <= 1 && !hit; dj++)
		for (int di = -1; di <= 1; di++) {
			const int x = n + di + dj * W;
			const int in = (i + di >= 1) & (i + di <= nx) &
				       (j + dj >= 1) & (j + dj <= ny);
			/* a spill, or a shoreline (lbm_fv.c shore: a dry
			 * open-sky neighbour; c = 1e30f is LBM_BIG) */
			hit |= in & (x != n) & (hA[x] <= hdf) &
			       (((z[x] + hdf < eta) & (c[x] > eta)) |
				(c[x] >= 1e30f));
		}
	if (hit) /* every writer stores the same value */
		segs[j * ns + (i - 1) / sg] = 1;
}

/* The hybrid's transfers (src/cl.c fv_xfer): cell t of a part, whose
 * runs are run[3 r] for r = r0 .. r0 + nr - 1 (the first padded cell,
 * the count, the offset in the part: ascending), of the na arrays of src
 * (slice cells apart) packed into val at po + a cells + t (gather), or
 * back (scatter). One item per cell; its run by bisection. */
static long fv_cell(global const long *run, ulong r0, ulong nr, ulong t)
{
	ulong lo = r0, hi = r0 + nr - 1;
	while (lo < hi) {
		const ulong mid = (lo + hi + 1) / 2;
		if ((ulong)run[3 * mid + 2] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return run[3 * lo] + (long)(t - (ulong)run[3 * lo + 2]);
}

kernel void lbm_fv_gather(global const uint *src, ulong slice, int na,
			  global const long *run, ulong r0, ulong nr,
			  global uint *val, ulong po, ulong cells)
{
	const ulong t = get_global_id(0);
	if (t >= cells)
		return;
	const long n = fv_cell(run, r0, nr, t);
	for (int a = 0; a < na; a++)
		val[po + a * cells + t] = src[a * slice + n];
}

kernel void lbm_fv_scatter(global uint *dst, ulong slice, int na,
			   global const long *run, ulong r0, ulong nr,
			   global const uint *val, ulong po, ulong cells)
{
	const ulong t = get_global_id(0);
	if (t >= cells)
		return;
	const long n = fv_cell(run, r0, nr, t);
	for (int a = 0; a < na; a++)
		dst[a * slice + n] = val[po + a * cells + t];
}

/* The FV cells' macroscopic values (lbm_fv_state, computed on the host)
 * into lbm_macro's output: cell idx[k] (unpadded) gets val[3k .. 3k + 2]. */
kernel void lbm_fv_put(global const int *idx, global const float *val, int n,
		       global float *ho, global float *uo, global float *vo)
{
	const int k = get_global_id(0);
	if (k >= n)
		return;
	ho[idx[k]] = val[WB_SLICE(k, 3, 0)];
	uo[idx[k]] = val[WB_SLICE(k, 3, 1)];
	vo[idx[k]] = val[WB_SLICE(k, 3, 2)];
}
