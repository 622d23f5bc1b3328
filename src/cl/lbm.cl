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
 * distributions of one time level are one buffer, f_a at a * N + n
 * (N = W (ny + 2)). Work item (i, j) of lbm_step reads f_a from its
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

inline float lbm_rsqrt(float x)
{
	uint i = as_uint(x);
	i = 0x5f3759dfu - (i >> 1);
	float y = as_float(i);
	y = y * (1.5f - 0.5f * x * y * y);
	y = y * (1.5f - 0.5f * x * y * y);
	y = y * (1.5f - 0.5f * x * y * y);
	return y;
}

/* x^(-1/3), x > 0: lbm.c's vrcbrt (guess from the integer bits divided
 * in float, four Newton steps) */
inline float lbm_rcbrt(float x)
{
	int i = as_int(x);
	float fi = (float)i * (1.0f / 3.0f);
	i = 0x54a2fa8c - convert_int_rtz(fi);
	float y = as_float(i);
	for (int k = 0; k < 4; k++)
		y = y * (4.0f - x * y * y * y) * (1.0f / 3.0f);
	return y;
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

/* pull_interior of lbm.c */
inline float lbm_pull_interior(global const float *A, global const float *hA,
			       global const float *z, global const float *c,
			       int N, int W, int H, float hd, int p, int a)
{
	if (a == 0)
		return A[p];
	int y = p - lbm_cxs[a] - lbm_cys[a] * W;
	if (!lbm_is_ghost(y, W, H) &&
	    lbm_link_open(hA[p], z[p], c[p], hA[y], z[y], c[y], hd))
		return A[a * N + y];
	return A[lbm_opps[a] * N + p];
}

inline float lbm_ramped(float ginit, float gspec, real ramp)
{
	return (float)((real)ginit + (real)(gspec - ginit) * ramp);
}

/*
 * Ghost ring. Items [0, n1): pass 1, gi = (g, p, part, kind | nrm << 8)
 * with nrm = 1 when the edge's normal is along x; gf = (ginit, gspec, gq,
 * gvel). Items [n1, n1 + n2): pass 2 (Zou-He), gi = (g, p, nxn + 1,
 * nyn + 1). The two passes write disjoint ghost values and read only
 * interior ones, so one launch runs both.
 */
kernel void lbm_ghost(global float *A, global float *hA,
		      global const float *z, global const float *c,
		      global const int4 *gi, global const float4 *gf,
		      int n1, int n2, int N, int W, int H, float hd, float e,
		      real ramp)
{
	int k = get_global_id(0);
	if (k >= n1 + n2)
		return;
	int4 q = gi[k];
	float4 s = gf[k];
	int g = q.x, p = q.y;
	if (k < n1) {
		int kind = q.w & 255, nrm = q.w >> 8, part = q.z;
		if (kind == LBM_G_PERIODIC || kind == LBM_G_EXTRAP) {
			for (int a = 0; a < 9; a++)
				A[a * N + g] = A[a * N + part];
			hA[g] = hA[part];
		} else if (kind == LBM_G_MIRROR) {
			for (int a = 0; a < 9; a++)
				A[a * N + g] = A[(nrm ? lbm_flipx[a] : lbm_flipy[a]) * N + p];
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
#define PULL(a) lbm_pull_interior(A, hA, z, c, N, W, H, hd, p, (a))
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
	A[dn * N + g] = fmn + 2 * Q / 3;
	int g1 = p - lbm_cxs[dnt] - lbm_cys[dnt] * W;
	int g2 = p - lbm_cxs[dnmt] - lbm_cys[dnmt] * W;
	A[dnt * N + g1] = fmnmt + (fmt - ft) / 2 + Q / 6;
	A[dnmt * N + g2] = fmnt + (ft - fmt) / 2 + Q / 6;
}

/* edge_flux of lbm.c for flux ghost k; adds to its own accumulators. */
kernel void lbm_flux(global const float *A, global const float *hA,
		     global const float *z, global const float *c,
		     global const int *fg, int nf, int N, int W, int H,
		     float hd, global real *acc_in, global real *acc_out)
{
	int k = get_global_id(0);
	if (k >= nf)
		return;
	int g = fg[k];
	real si = 0, so = 0;
	for (int a = 1; a < 9; a++) {
		int y = g + lbm_cxs[a] + lbm_cys[a] * W;
		if (lbm_is_ghost(y, W, H))
			continue;
		if (!lbm_link_open(hA[g], z[g], c[g], hA[y], z[y], c[y], hd))
			continue;
		si += A[a * N + g];
		so += A[lbm_opps[a] * N + y];
	}
	acc_in[k] += si;
	acc_out[k] += so;
}

/* Parameters of lbm_step, computed on the host exactly as lbm_kernel_row
 * computes them. */
struct lbm_kp {
	float hd, om, om1, ghk, Gax, Gdg, umax2, fr2, kf, hlim;
};

/*
 * The fused step (lbm_kernel_row) for interior cell (i, j) =
 * (get_global_id(0), get_global_id(1)). Counts clamps per work-group into
 * clamp_acc[group] (each group owns its slot: no atomics across groups)
 * and marks a diverged step in *bad (atomic_min of an integer: the
 * earliest step, deterministic).
 */
kernel void lbm_step(global const float *restrict A, global float *restrict B,
		     global const float *restrict hA, global float *restrict hB,
		     global const float *restrict z, global const float *restrict c,
		     int N, int W, int nx, int ny, struct lbm_kp kp,
		     global ulong *clamp_acc, global int *bad, int step)
{
	local uint lcount;
	const int i = get_global_id(0), j = get_global_id(1);
	const int lid = get_local_id(0) + get_local_id(1) * get_local_size(0);
	if (lid == 0)
		lcount = 0;
	barrier(CLK_LOCAL_MEM_FENCE);
	if (i < nx && j < ny) {
		const int n = (i + 1) + (j + 1) * W;
		const float hd = kp.hd, om = kp.om, om1 = kp.om1, ghk = kp.ghk;
		const float Gax = kp.Gax, Gdg = kp.Gdg, umax2 = kp.umax2;
		const float fr2 = kp.fr2, kf = kp.kf, hlim = kp.hlim;
		const float third = 1.0f / 3.0f;
		int nclamp = 0, nbad = 0;
		const float hx = hA[n], zx = z[n], cx = c[n], ex = zx + hx;
		const float zxd = zx + hd;
#define LINK(a, off)                                                        \
	const float hy##a = hA[n + (off)], zy##a = z[n + (off)];            \
	const float ey##a = zy##a + hy##a;                                   \
	const float em##a = MAXF(ex, ey##a);                                 \
	const float zm##a = MAXF(zxd, zy##a + hd);                           \
	const float cm##a = MINF(cx, c[n + (off)]);                          \
	const int o##a = (em##a > zm##a) & (cm##a > em##a);                 \
	float dz##a = zy##a - zx;                                            \
	dz##a = dz##a < -hy##a ? -hy##a : (dz##a > hx ? hx : dz##a);         \
	const float t##a = -(hx + hy##a) * dz##a;                           \
	const float s##a = t##a * (float)o##a;
		LINK(1, 1)
		LINK(2, 1 + W)
		LINK(3, W)
		LINK(4, -1 + W)
		LINK(5, -1)
		LINK(6, -1 - W)
		LINK(7, -W)
		LINK(8, 1 - W)
#undef LINK
		global const float *A0 = A, *A1 = A + N, *A2 = A + 2 * N,
			*A3 = A + 3 * N, *A4 = A + 4 * N, *A5 = A + 5 * N,
			*A6 = A + 6 * N, *A7 = A + 7 * N, *A8 = A + 8 * N;
		const float f0 = A0[n];
		const float f5 = o1 ? A5[n + 1] : A1[n];
		const float f6 = o2 ? A6[n + 1 + W] : A2[n];
		const float f7 = o3 ? A7[n + W] : A3[n];
		const float f8 = o4 ? A8[n - 1 + W] : A4[n];
		const float f1 = o5 ? A1[n - 1] : A5[n];
		const float f2 = o6 ? A2[n - 1 - W] : A6[n];
		const float f3 = o7 ? A3[n - W] : A7[n];
		const float f4 = o8 ? A4[n + 1 - W] : A8[n];
		const float h = ((f0 + f1) + (f2 + f3)) + ((f4 + f5) + (f6 + f7)) + f8;
		const float Mx = (f1 + f2 + f8) - (f4 + f5 + f6);
		const float My = (f2 + f3 + f4) - (f6 + f7 + f8);
		const float hf = MAXF(h, hd);
		const float inv = 1.0f / hf;
		const float U = Mx * inv, V = My * inv;
		const float ghe = ghk * h;
		const float sp2 = U * U + V * V;
		const float fl2 = fr2 * ghe;
		const float lim2 = MINF(umax2, fl2);
		const int cl = sp2 > lim2;
		const float sq = MAXF(lim2, 1e-30f) * lbm_rsqrt(MAXF(lim2 * sp2, 1e-30f));
		const float sc = cl ? sq : 1.0f;
		const float Uc = sc * U, Vc = sc * V;
		const int clv = (cl & (h > hd)) | (ghe >= 1.0f);
		const float y3 = lbm_rcbrt(hf);
		const float h43 = y3 * y3 * y3 * y3;
		const float sp2c = MAXF(Uc * Uc + Vc * Vc, 1e-30f);
		const float spc = sp2c * lbm_rsqrt(sp2c);
		const float rf = 1.0f / (1.0f + kf * spc * h43);
		const float uu = Uc * Uc + Vc * Vc;
		const float hb = h * (ghe - uu) * (1.0f / 6.0f);
		const float h3 = h * third, h2 = h * 0.5f;
		const float c1 = Uc, c2 = Uc + Vc, c3 = Vc, c4 = Vc - Uc;
		const float q1 = hb + h3 * c1 + h2 * c1 * c1;
		const float q5 = hb - h3 * c1 + h2 * c1 * c1;
		const float q3 = hb + h3 * c3 + h2 * c3 * c3;
		const float q7 = hb - h3 * c3 + h2 * c3 * c3;
		const float q2 = 0.25f * (hb + h3 * c2 + h2 * c2 * c2);
		const float q6 = 0.25f * (hb - h3 * c2 + h2 * c2 * c2);
		const float q4 = 0.25f * (hb + h3 * c4 + h2 * c4 * c4);
		const float q8 = 0.25f * (hb - h3 * c4 + h2 * c4 * c4);
		/* rest population as the remainder (sum feq = h to round-off) */
		const float q0 = h - (((q1 + q3) + (q5 + q7)) + ((q2 + q4) + (q6 + q8)));
		const float dMx = h * (Uc * rf) - om1 * Mx - om * h * Uc;
		const float dMy = h * (Vc * rf) - om1 * My - om * h * Vc;
		const float ax = dMx * third, ay = dMy * third;
		const float dg2 = 0.25f * (ax + ay), dg4 = 0.25f * (ay - ax);
		float p0 = f0 + om * (q0 - f0);
		float p1 = f1 + om * (q1 - f1) + ax + Gax * s1;
		float p2 = f2 + om * (q2 - f2) + dg2 + Gdg * s2;
		float p3 = f3 + om * (q3 - f3) + ay + Gax * s3;
		float p4 = f4 + om * (q4 - f4) + dg4 + Gdg * s4;
		float p5 = f5 + om * (q5 - f5) - ax + Gax * s5;
		float p6 = f6 + om * (q6 - f6) - dg2 + Gdg * s6;
		float p7 = f7 + om * (q7 - f7) - ay + Gax * s7;
		float p8 = f8 + om * (q8 - f8) - dg4 + Gdg * s8;
		const float hp = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)) + p8;
		float rmin = MINF(p0 * 2.25f, p1 * 9.0f);
		rmin = MINF(rmin, p3 * 9.0f);
		rmin = MINF(rmin, p5 * 9.0f);
		rmin = MINF(rmin, p7 * 9.0f);
		rmin = MINF(rmin, p2 * 36.0f);
		rmin = MINF(rmin, p4 * 36.0f);
		rmin = MINF(rmin, p6 * 36.0f);
		rmin = MINF(rmin, p8 * 36.0f);
		const int neg = rmin < 0.0f;
		const int pos = hp > 0.0f;
		const float r = rmin / MAXF(hp, 1e-30f);
		const float tr = -r / (1.0f - r);
		const float th = neg ? (pos ? tr : 1.0f) : 0.0f;
		const float T = pos ? hp : 0.0f;
		nclamp = clv | neg; /* one count per cell, as lbm.c */
		nbad += !(hp < hlim);
		B[n] = p0 + th * (T * (4.0f / 9) - p0);
		B[N + n] = p1 + th * (T * (1.0f / 9) - p1);
		B[2 * N + n] = p2 + th * (T * (1.0f / 36) - p2);
		B[3 * N + n] = p3 + th * (T * (1.0f / 9) - p3);
		B[4 * N + n] = p4 + th * (T * (1.0f / 36) - p4);
		B[5 * N + n] = p5 + th * (T * (1.0f / 9) - p5);
		B[6 * N + n] = p6 + th * (T * (1.0f / 36) - p6);
		B[7 * N + n] = p7 + th * (T * (1.0f / 9) - p7);
		B[8 * N + n] = p8 + th * (T * (1.0f / 36) - p8);
		hB[n] = h;
		if (nbad)
			atomic_min(bad, step);
		if (nclamp)
			atomic_add(&lcount, (uint)nclamp);
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	if (lid == 0 && lcount) {
		int grp = get_group_id(0) + get_group_id(1) * get_num_groups(0);
		clamp_acc[grp] += lcount;
	}
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
 * mu, mv, mk, z) at 6 k. flags: 2 fixed, 4 sink-all (WB_CELL_*).
 * Accumulates the mass it adds / removes and its clamps into its own slots.
 */
kernel void lbm_special(global float *B, global const int2 *si,
			global const float *sf, int nsp, int N, real dt,
			real e, float ghk, float hd, global real *acc_in,
			global real *acc_out, global ulong *acc_cl)
{
	int k = get_global_id(0);
	if (k >= nsp)
		return;
	const int n = si[k].x, flags = si[k].y;
	const float src = sf[6 * k], level = sf[6 * k + 1], mu = sf[6 * k + 2],
		    mv = sf[6 * k + 3], mk = sf[6 * k + 4], zn = sf[6 * k + 5];
	float f[9];
	real hp = 0, in = 0, out = 0;
	uint ncl = 0;
	for (int a = 0; a < 9; a++) {
		f[a] = B[a * N + n];
		hp += f[a];
	}
	if (flags & 4) {
		out += hp;
		for (int a = 0; a < 9; a++)
			B[a * N + n] = 0;
		acc_out[k] += out;
		return;
	}
	if (mk > 0 && hp > hd) {
		float Mx = 0, My = 0;
		for (int a = 1; a < 9; a++) {
			Mx += lbm_cxs[a] * f[a];
			My += lbm_cys[a] * f[a];
		}
		float U = Mx / (float)hp, V = My / (float)hp;
		float kd = (float)(mk * dt), al = kd / (1 + kd);
		float dMx = (float)hp * al * (mu / (float)e - U);
		float dMy = (float)hp * al * (mv / (float)e - V);
		float mn = 0;
		for (int a = 1; a < 9; a++) {
			f[a] += lbm_ws[a] * (lbm_cxs[a] * dMx + lbm_cys[a] * dMy) / 3;
			mn = MINF(mn, f[a]);
		}
		if (mn < 0) {
			float rmin = 0;
			for (int a = 0; a < 9; a++)
				rmin = MINF(rmin, f[a] / lbm_qs[a]);
			float r = rmin / (float)hp, th = -r / (1 - r);
			for (int a = 0; a < 9; a++)
				f[a] += th * ((float)hp * lbm_qs[a] - f[a]);
			ncl++;
		}
	}
	if (src > 0) {
		float add = (float)(src * dt);
		f[0] += add;
		in += add;
	} else if (src < 0 && hp > 0) {
		real rem = MINF(-src * dt, hp);
		float keep = (float)(1 - rem / hp);
		real after = 0;
		for (int a = 0; a < 9; a++) {
			f[a] *= keep;
			after += f[a];
		}
		out += hp - after;
	}
	if (flags & 2) {
		real h0 = 0, Mx = 0, My = 0;
		for (int a = 0; a < 9; a++) {
			h0 += f[a];
			Mx += lbm_cxs[a] * f[a];
			My += lbm_cys[a] * f[a];
		}
		float hf = MAXF(level - zn, 0.0f);
		float U = h0 > hd ? (float)(Mx / h0) : 0.0f;
		float V = h0 > hd ? (float)(My / h0) : 0.0f;
		lbm_feq9(hf, U, V, ghk * hf, f);
		real h1 = 0;
		for (int a = 0; a < 9; a++)
			h1 += f[a];
		if (h1 > h0)
			in += h1 - h0;
		else
			out += h0 - h1;
	}
	for (int a = 0; a < 9; a++)
		B[a * N + n] = f[a];
	acc_in[k] += in;
	acc_out[k] += out;
	acc_cl[k] += ncl;
}

/* lbm_macro of lbm.c: depth and velocity (m, m/s) of interior cell (i, j)
 * into unpadded nx*ny arrays. */
kernel void lbm_macro(global const float *A, global const float *hA,
		      global const float *z, global const float *c, int N,
		      int W, int nx, int ny, float hd, float e, float ghk,
		      float umax2, float fr2, global float *ho,
		      global float *uo, global float *vo)
{
	const int i = get_global_id(0), j = get_global_id(1);
	if (i >= nx || j >= ny)
		return;
	const int n = (i + 1) + (j + 1) * W;
	float h = 0, Mx = 0, My = 0;
	for (int a = 0; a < 9; a++) {
		float f;
		if (a == 0) {
			f = A[n];
		} else {
			int y = n - lbm_cxs[a] - lbm_cys[a] * W;
			int o = lbm_link_open(hA[n], z[n], c[n], hA[y], z[y], c[y], hd);
			f = o ? A[a * N + y] : A[lbm_opps[a] * N + n];
		}
		h += f;
		Mx += lbm_cxs[a] * f;
		My += lbm_cys[a] * f;
	}
	float inv = 1.0f / MAXF(h, hd);
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

/* lbm_volume's row sums: row j of f (interior), in lbm_volume's order
 * (cell by cell, then direction). One work item per row. */
kernel void lbm_rowsum(global const float *A, int N, int W, int nx, int ny,
		       global real *rows)
{
	const int j = get_global_id(0);
	if (j >= ny)
		return;
	real row = 0;
	for (int i = 0; i < nx; i++) {
		int n = (i + 1) + (j + 1) * W;
		for (int a = 0; a < 9; a++)
			row += A[a * N + n];
	}
	rows[j] = row;
}

/* rel_change of lbm.c, per row: num = sum |du|^2, den = sum |u1|^2, wet =
 * cells with h > hd. One work item per row (called every window steps). */
kernel void wb_resid_rows(global const float *h, global const float *u0,
			  global const float *v0, global const float *u1,
			  global const float *v1, int nx, int ny, float hd,
			  global real *num, global real *den, global int *wet)
{
	const int j = get_global_id(0);
	if (j >= ny)
		return;
	real rn = 0, rd = 0;
	int w = 0;
	for (int i = 0; i < nx; i++) {
		int k = i + j * nx;
		real du = (real)u1[k] - u0[k], dv = (real)v1[k] - v0[k];
		rn += du * du + dv * dv;
		rd += (real)u1[k] * u1[k] + (real)v1[k] * v1[k];
		w += h[k] > hd;
	}
	num[j] = rn;
	den[j] = rd;
	wet[j] = w;
}
