/*
 * swe.cl - SWE kernels (staggered shallow water, Chentanez & Mueller 2010):
 * the device side of cl.c's cl_swe_*. Each kernel is the twin of a CPU
 * routine of swe.c / foam.c, operation for operation (see swe.c for the
 * equations):
 *   swe_modify      apply_modifiers (one list: u or v faces)
 *   swe_height      height_row: upwind height integration, face fluxes
 *   swe_book        book_edges: boundary-face fluxes booked as in / out
 *   swe_src, swe_fixed, swe_sink   apply_sources
 *   swe_ghost_we, swe_ghost_ns     fill_ghosts for h1
 *   swe_face_ghosts fill_face_ghosts
 *   swe_wall_drag   wall_drag (side-wall friction of no-slip walls)
 *   swe_mc_bound    MacCormack: boundary faces of the forward estimate
 *   swe_faces       face_row_k for the u face and the v face of one cell
 *                   (advection, pressure, friction, clamp, walls)
 *   swe_bc          set_bc_faces
 *   foam_ghosts, foam_gen, foam_adv  foam.c
 *   swe_resid_rows  swe_residual's per-row sums
 *   swe_mean_acc    swe_means_sample (window sums of the steady test)
 * Layout (swe.h): padded grid, stride W = nx + 2, cell (i, j) at
 * c = (i + 1) + (j + 1) W; u[c] is the face west of cell c, v[c] the face
 * north of it. One work item per cell (or per list item / edge face).
 * Block-sparse launches (cl.c, docs/opencl.md): the per-cell kernels
 * swe_height, swe_faces, foam_gen and foam_adv also run over a list of
 * SWE_BLK x SWE_BLK blocks (sp = 1: work-group (32, 4), group x = list
 * position, bl[] = bi | bj << 16); SWE_IJ maps the item to its cell. The
 * swe_blk_* kernels keep the active set on the device.
 * Reductions: maxima as integer atomic_max on the bit patterns of
 * non-negative floats (order-independent, as swe.c's bit maxima), clamp
 * counts per work-group slot, sums per item or per row in double: results
 * are deterministic run to run.
 */

#define SWE_BLK 32
/* the cell (i, j) of a 2D work item, dense (nx x ny) or block-sparse */
#define SWE_IJ(i, j)                                                     \
	int i = get_global_id(0), j = get_global_id(1);                  \
	if (sp) {                                                        \
		const int pk_ = bl[get_group_id(0)];                     \
		i = (pk_ & 0xffff) * SWE_BLK + (int)get_local_id(0);     \
		j = (pk_ >> 16) * SWE_BLK + (int)get_global_id(1);       \
	}

inline float swe_face_flux(float uf, float hl, float hr, float hmax)
{
	float hup = uf > 0.0f ? hl : hr;
	float hadj = MAXF(0.0f, 0.5f * (hl + hr) - hmax);
	return uf * MAXF(hup - hadj, 0.0f);
}

struct swe_fp {
	float gk, eps, umax, fric, fall;
};

/* Edge conditions, prepared on the host (sides: west, east, north, south).
 * gmode: ghost depth 0 copy, 1 constant a, 2 level max(0, a - H),
 * 3 max(h, a) (critical depth of a discharge). bkind: boundary face 0 wall,
 * 1 open (outflow only), 2 inflow (bvel > 0: velocity, else bdis / h),
 * 3 pressure/friction (level, periodic). */
struct swe_edges {
	int gmode[4];
	float ga[4];
	int bkind[4];
	float bvel[4], bdis[4];
	int per_we, per_ns;
	float tsgn[4]; /* sign of the tangential ghost faces (-1 no-slip) */
};

inline float swe_cbrt_pos(float x)
{
	uint b = as_uint(x);
	b = b / 3u + 709921077u;
	float y = as_float(b);
	for (int it = 0; it < 3; it++)
		y = (2.0f * y + x / (y * y)) * (1.0f / 3.0f);
	return y;
}

/* sqrt_pos of swe.c: the same operations, the same bits */
inline float swe_sqrt_pos(float x)
{
	uint b = as_uint(x);
	b = b / 2u + 532487669u;
	float y = as_float(b);
	for (int it = 0; it < 3; it++)
		y = 0.5f * (y + x / y);
	return y;
}

inline float swe_finish(float ua, float ot, float hl, float hr, float Hl,
			float Hr, float bbl, float bbr, struct swe_fp fp,
			int *nclamp)
{
	float el = hl + Hl, er = hr + Hr;
	float zf = MAXF(Hl, Hr);
	float grad = MAXF(er, zf) - MAXF(el, zf);
	/* a resolved slope: the whole drop, friction at the upwind depth
	 * (face_finish, swe.c) */
	int slope = (MINF(el, er) < zf) & (fabs(Hl - Hr) <= fp.fall);
	if (slope)
		grad = er - el;
	float un = ua - fp.gk * grad;
	if (fp.fric > 0.0f) { /* implicit Manning, as face_finish (swe.c) */
		float hf = MAXF(slope ? (un >= 0.0f ? hl : hr) :
					0.5f * (hl + hr), fp.eps);
		float k = fp.fric / (hf * swe_cbrt_pos(hf));
		float a = fabs(un), t = fabs(ot);
		float w0 = 2.0f * a / (1.0f + swe_sqrt_pos(1.0f + 4.0f * k * a));
		/* the flow along the face is friction too: Newton on the
		   whole speed S from above, then w (face_finish) */
		float S = w0 + t, t2 = t * t, a2 = a * a;
		for (int it = 0; it < 5; it++) {
			float p = 1.0f + k * S, e = S * S - t2;
			float f = e * p * p - a2;
			float g = 2.0f * p * (S * p + k * e);
			S = MAXF(S - f / MAXF(g, 1e-30f), t);
		}
		float w = a / (1.0f + k * S);
		un = copysign(t > 0.0f ? w : w0, un);
	}
	int dl = hl <= fp.eps, dr = hr <= fp.eps;
	int wall = (dl & dr) | (dl & (Hl > er)) | (dr & (Hr > el)) |
		   (MAXF(el, er) >= MINF(bbl, bbr));
	/* clamps of faces that are not walls are counted */
	int c = (un > fp.umax) | (un < -fp.umax);
	*nclamp += c & !wall;
	un = MINF(MAXF(un, -fp.umax), fp.umax);
	return wall ? 0.0f : un;
}

/* lw: this step's weights 1 - expf(-k dt), computed on the host with the
 * CPU's libm (a device exp may round differently) */
kernel void swe_modify(global float *f, global const int *lc,
		       global const float *lw, global const float *lt, int n)
{
	int q = get_global_id(0);
	if (q >= n)
		return;
	int c = lc[q];
	f[c] += lw[q] * (lt[q] - f[c]);
}

/* flags[0]: first row with a non-finite depth (atomic_min) */
kernel void swe_height(global const float *h, global const float *u,
		       global const float *v, global float *h1,
		       global float *fu, global float *fv, int W, int nx,
		       int ny, float k, float hmax, global int *flags, int sp,
		       global const int *bl)
{
	SWE_IJ(i, j)
	if (i >= nx || j >= ny)
		return;
	const int c = (i + 1) + (j + 1) * W;
	float fw = swe_face_flux(u[c], h[c - 1], h[c], hmax);
	float fe = swe_face_flux(u[c + 1], h[c], h[c + 1], hmax);
	float fn = swe_face_flux(v[c], h[c - W], h[c], hmax);
	float fs = swe_face_flux(v[c + W], h[c], h[c + W], hmax);
	float hn = h[c] - k * ((fe - fw) + (fs - fn));
	if (!(fabs(hn) <= FLT_MAX))
		atomic_min(&flags[0], j);
	h1[c] = hn < 0.0f ? 0.0f : hn;
	fu[c] = fw;
	fv[c] = fn;
	if (i == nx - 1)
		fu[c + 1] = fe;
	if (j == ny - 1)
		fv[c + W] = fs;
}

/* book_edges: item q < ny: west/east faces of row q; else north/south
 * faces of column q - ny. Adds fac * flux to its own slots. */
kernel void swe_book(global const float *h, global const float *u,
		     global const float *v, int W, int nx, int ny, float hmax,
		     real fac, int per_we, int per_ns, global real *acc_in,
		     global real *acc_out)
{
	const int q = get_global_id(0);
	if (q >= nx + ny)
		return;
	real in = 0, out = 0, a, b;
	if (q < ny) {
		if (per_we)
			return;
		int fw = 1 + (q + 1) * W, fe = (nx + 1) + (q + 1) * W;
		a = swe_face_flux(u[fw], h[fw - 1], h[fw], hmax);
		b = swe_face_flux(u[fe], h[fe - 1], h[fe], hmax);
	} else {
		if (per_ns)
			return;
		int i = q - ny;
		int fn = (i + 1) + W, fs = (i + 1) + (ny + 1) * W;
		a = swe_face_flux(v[fn], h[fn - W], h[fn], hmax);
		b = swe_face_flux(v[fs], h[fs - W], h[fs], hmax);
	}
	if (a > 0) in += a; else out -= a;
	if (b > 0) out += b; else in -= b;
	acc_in[q] += in * fac;
	acc_out[q] += out * fac;
}

kernel void swe_src(global float *h, global const int *lc,
		    global const float *lv, int n, float dt, real area,
		    global real *acc_in, global real *acc_out)
{
	int q = get_global_id(0);
	if (q >= n)
		return;
	int c = lc[q];
	float hn = MAXF(0.0f, h[c] + lv[q] * dt);
	real dv = ((real)hn - (real)h[c]) * area;
	if (dv > 0)
		acc_in[q] += dv;
	else
		acc_out[q] -= dv;
	h[c] = hn;
}

kernel void swe_fixed(global float *h, global const float *H,
		      global const int *lc, global const float *lv, int n,
		      real area, global real *acc_in, global real *acc_out)
{
	int q = get_global_id(0);
	if (q >= n)
		return;
	int c = lc[q];
	float t = MAXF(0.0f, lv[q] - H[c]);
	real dv = ((real)t - (real)h[c]) * area;
	if (dv > 0)
		acc_in[q] += dv;
	else
		acc_out[q] -= dv;
	h[c] = t;
}

kernel void swe_sink(global float *h, global const int *lc, int n,
		     real area, global real *acc_out)
{
	int q = get_global_id(0);
	if (q >= n)
		return;
	int c = lc[q];
	acc_out[q] += (real)h[c] * area;
	h[c] = 0.0f;
}

inline float swe_gdepth(int mode, float a, float hin, float Hg)
{
	switch (mode) {
	case 1: return a;
	case 2: return MAXF(0.0f, a - Hg);
	case 3: return MAXF(hin, a);
	default: return hin;
	}
}

/* fill_ghosts(h1), west and east ghosts of row j */
kernel void swe_ghost_we(global float *f, global const float *H, int W,
			 int nx, int ny, struct swe_edges E)
{
	const int j = get_global_id(0);
	if (j >= ny)
		return;
	int gw = (j + 1) * W, ge = (nx + 1) + (j + 1) * W;
	float iw = f[gw + 1], ie = f[ge - 1];
	if (E.per_we) {
		f[gw] = ie;
		f[ge] = iw;
		return;
	}
	f[gw] = swe_gdepth(E.gmode[0], E.ga[0], iw, H[gw]);
	f[ge] = swe_gdepth(E.gmode[1], E.ga[1], ie, H[ge]);
}

/* north and south ghosts of column i = get_global_id(0) - 1 (-1 .. nx,
 * corners copy the row's ghost end, after swe_ghost_we) */
kernel void swe_ghost_ns(global float *f, global const float *H, int W,
			 int nx, int ny, struct swe_edges E)
{
	const int i = (int)get_global_id(0) - 1;
	if (i > nx)
		return;
	int inside = i >= 0 && i < nx;
	int gn = i + 1, gs = (i + 1) + (ny + 1) * W;
	float in = f[gn + W], is = f[gs - W];
	if (E.per_ns) {
		f[gn] = is;
		f[gs] = in;
		return;
	}
	f[gn] = inside ? swe_gdepth(E.gmode[2], E.ga[2], in, H[gn]) : in;
	f[gs] = inside ? swe_gdepth(E.gmode[3], E.ga[3], is, H[gs]) : is;
}

/* fill_face_ghosts: item q <= nx: u ghost rows of face column q; item
 * q - (nx + 1) <= ny: v ghost columns of face row q - nx - 1 (copies times
 * the edges' tangential signs) */
kernel void swe_face_ghosts(global float *u, global float *v, int W, int nx,
			    int ny, struct swe_edges E)
{
	const int q = get_global_id(0);
	if (q <= nx) {
		u[(q + 1)] = E.tsgn[2] * u[(q + 1) + W];
		u[(q + 1) + (ny + 1) * W] = E.tsgn[3] * u[(q + 1) + ny * W];
	} else if (q <= nx + 1 + ny) {
		int j = q - nx - 1;
		v[(j + 1) * W] = E.tsgn[0] * v[1 + (j + 1) * W];
		v[(nx + 1) + (j + 1) * W] = E.tsgn[1] * v[nx + (j + 1) * W];
	}
}

/* wall_drag: side-wall friction of no-slip walls (cw[side] > 0). Item
 * q < nx: the u face of column q (q >= 1) in row 0 (north wall), then in
 * row ny - 1 (south); item q - nx < ny: the v face of row q - nx (>= 1) in
 * column 0 (west), then in column nx - 1 (east). */
inline float swe_drag1(float un, float hl, float hr, float cw, float eps)
{
	float hf = MAXF(0.5f * (hl + hr), eps);
	return un / (1.0f + cw * fabs(un) / swe_cbrt_pos(hf));
}

kernel void swe_wall_drag(global float *u, global float *v,
			  global const float *h, int W, int nx, int ny,
			  float cw_w, float cw_e, float cw_n, float cw_s,
			  float eps)
{
	const int q = get_global_id(0);
	if (q < nx) {
		if (q < 1)
			return;
		int cn = (q + 1) + W, cs = (q + 1) + ny * W;
		if (cw_n > 0.0f)
			u[cn] = swe_drag1(u[cn], h[cn - 1], h[cn], cw_n, eps);
		if (cw_s > 0.0f)
			u[cs] = swe_drag1(u[cs], h[cs - 1], h[cs], cw_s, eps);
	} else if (q < nx + ny) {
		int j = q - nx;
		if (j < 1)
			return;
		int cw0 = 1 + (j + 1) * W, ce = nx + (j + 1) * W;
		if (cw_w > 0.0f)
			v[cw0] = swe_drag1(v[cw0], h[cw0 - W], h[cw0], cw_w, eps);
		if (cw_e > 0.0f)
			v[ce] = swe_drag1(v[ce], h[ce - W], h[ce], cw_e, eps);
	}
}

/* MacCormack: boundary faces of the forward estimate hold the old values */
kernel void swe_mc_bound(global const float *u, global const float *v,
			 global float *ut, global float *vt, int W, int nx,
			 int ny)
{
	const int q = get_global_id(0);
	if (q < ny) {
		int fw = 1 + (q + 1) * W, fe = (nx + 1) + (q + 1) * W;
		ut[fw] = u[fw];
		ut[fe] = u[fe];
	} else if (q < ny + nx) {
		int i = q - ny;
		int fn = (i + 1) + W, fs = (i + 1) + (ny + 1) * W;
		vt[fn] = v[fn];
		vt[fs] = v[fs];
	}
}

inline float swe_sample(global const float *f, int c, int W, float ax,
			float ay, float *lo, float *hi)
{
	ax = MINF(MAXF(ax, -1.0f), 1.0f);
	ay = MINF(MAXF(ay, -1.0f), 1.0f);
	float wx = fabs(ax), wy = fabs(ay);
	int left = ax > 0.0f, up = ay > 0.0f;
	float f0 = f[c];
	float fx = left ? f[c - 1] : f[c + 1];
	float fy = up ? f[c - W] : f[c + W];
	float fxyu = left ? f[c - W - 1] : f[c - W + 1];
	float fxyd = left ? f[c + W - 1] : f[c + W + 1];
	float fxy = up ? fxyu : fxyd;
	float a0 = f0 + wx * (fx - f0);
	float a1 = fy + wx * (fxy - fy);
	*lo = MINF(MINF(f0, fx), MINF(fy, fxy));
	*hi = MAXF(MAXF(f0, fx), MAXF(fy, fxy));
	return a0 + wy * (a1 - a0);
}

inline float swe_front(float ua, float hl, float hr, float ub, float uf,
		       float eps)
{
	int wl = hl > eps, wr = hr > eps;
	float a = (wl & !wr & (ub > 0.0f)) ? MAXF(ua, ub) : ua;
	return (wr & !wl & (uf < 0.0f)) ? MINF(a, uf) : a;
}

inline float swe_cons_adv(float q0, float qm, float qp, float qtm, float qtp,
			  float fm, float f0, float fq, float tm, float tp,
			  float hf, float k)
{
	float ql = 0.5f * (fm + f0), qr = 0.5f * (f0 + fq);
	float adv = (MAXF(ql, 0.0f) * (q0 - qm) + MINF(qr, 0.0f) * (qp - q0)) +
		    (MAXF(tm, 0.0f) * (q0 - qtm) + MINF(tp, 0.0f) * (qtp - q0));
	/* the inflow bounds the divisor (cons_adv, swe.c) */
	float in = (MAXF(ql, 0.0f) - MINF(qr, 0.0f)) +
		   (MAXF(tm, 0.0f) - MINF(tp, 0.0f));
	return q0 - k * adv / MAXF(hf, k * in);
}

/* One face of face_row_k: xdir 1 the u face west of c, 0 the v face north
 * of c. Returns the new value; *ncl, *bad as face_row_k counts them. */
inline float swe_face1(global const float *u, global const float *v,
		       global const float *ut, global const float *vt,
		       global const float *fu, global const float *fv,
		       global const float *h, global const float *H,
		       global const float *bb, int c, int W, float k,
		       struct swe_fp fp, int xdir, int mode, int *ncl)
{
	const int A = xdir ? 1 : W, B = xdir ? W : 1;
	global const float *q = xdir ? u : v;
	global const float *o = xdir ? v : u;
	global const float *fq_ = xdir ? fu : fv;
	global const float *fo_ = xdir ? fv : fu;
	global const float *qt = xdir ? ut : vt;
	const float eps = fp.eps;
	float qc = q[c];
	float oa = xdir ? 0.25f * (o[c - 1] + o[c] + o[c - 1 + W] + o[c + W]) :
			  0.25f * (o[c] + o[c + 1] + o[c - W] + o[c - W + 1]);
	float ax = (xdir ? qc : oa) * k, ay = (xdir ? oa : qc) * k;
	float lo, hi, qa;
	float sl = swe_sample(q, c, W, ax, ay, &lo, &hi);
	if (mode == 1)
		return sl;
	if (mode == 0) {
		qa = sl;
	} else {
		float lo2, hi2;
		float back = swe_sample(qt, c, W, -ax, -ay, &lo2, &hi2);
		float corr = qt[c] + 0.5f * (qc - back);
		qa = MINF(MAXF(corr, lo), hi);
	}
	float hl = h[c - A], hr = h[c];
	float hf = 0.5f * (hl + hr);
	float tm = 0.5f * (fo_[c - A] + fo_[c]);
	float tp = 0.5f * (fo_[c - A + B] + fo_[c + B]);
	float qc2 = swe_cons_adv(qc, q[c - A], q[c + A], q[c - B], q[c + B],
				 fq_[c - A], fq_[c], fq_[c + A], tm, tp,
				 MAXF(hf, eps), k);
	qa = (q[c - A] > q[c + A]) & (hf > eps) ? qc2 : qa;
	qa = swe_front(qa, hl, hr, q[c - A], q[c + A], eps);
	return swe_finish(qa, oa, hl, hr, H[c - A], H[c], bb[c - A], bb[c], fp,
			  ncl);
}

/*
 * Faces of cell (i, j): the u face (i >= 1) and the v face (j >= 1).
 * mode 1 writes the forward estimate to ut / vt; modes 0 and 2 write
 * u1 / v1, count clamps into clamp_acc[group], raise stats[0] (max |u|
 * bits), stats[1] (max h1 bits, over every cell) and flags[1] / flags[2]
 * (first row with a non-finite u / v).
 */
kernel void swe_faces(global const float *u, global const float *v,
		      global float *ut, global float *vt,
		      global const float *fu, global const float *fv,
		      global const float *h, global const float *H,
		      global const float *bb, global float *u1,
		      global float *v1, int W, int nx, int ny, float k,
		      struct swe_fp fp, int mode, global ulong *clamp_acc,
		      global uint *stats, global int *flags, int sp,
		      global const int *bl)
{
	local uint lcl, lum, lhm;
	SWE_IJ(i, j)
	const int lid = get_local_id(0) + get_local_id(1) * get_local_size(0);
	if (lid == 0)
		lcl = lum = lhm = 0;
	barrier(CLK_LOCAL_MEM_FENCE);
	if (i < nx && j < ny) {
		const int c = (i + 1) + (j + 1) * W;
		int ncl = 0;
		uint um = 0;
		if (i >= 1) {
			float un = swe_face1(u, v, ut, vt, fu, fv, h, H, bb, c, W,
					     k, fp, 1, mode, &ncl);
			if (mode == 1) {
				ut[c] = un;
			} else {
				u1[c] = un;
				um = as_uint(fabs(un));
				if (!(fabs(un) <= FLT_MAX))
					atomic_min(&flags[1], j);
			}
		}
		if (j >= 1) {
			float vn = swe_face1(u, v, ut, vt, fu, fv, h, H, bb, c, W,
					     k, fp, 0, mode, &ncl);
			if (mode == 1) {
				vt[c] = vn;
			} else {
				v1[c] = vn;
				uint b = as_uint(fabs(vn));
				um = b > um ? b : um;
				if (!(fabs(vn) <= FLT_MAX))
					atomic_min(&flags[2], j);
			}
		}
		if (mode != 1) {
			if (ncl)
				atomic_add(&lcl, (uint)ncl);
			if (um)
				atomic_max(&lum, um);
			uint hb = as_uint(h[c]);
			if (hb)
				atomic_max(&lhm, hb);
		}
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	if (lid == 0 && mode != 1) {
		if (lcl) {
			int grp = get_group_id(0) + get_group_id(1) * get_num_groups(0);
			clamp_acc[grp] += lcl;
		}
		if (lum)
			atomic_max(&stats[0], lum);
		if (lhm)
			atomic_max(&stats[1], lhm);
	}
}

inline float swe_bcface(int kind, float vel, float dis, int sign, float uold,
			float uin, int l, int r, float hg,
			global const float *h, global const float *H,
			global const float *bb, struct swe_fp fp, int *ncl)
{
	switch (kind) {
	case 0:
		return 0.0f;
	case 1:
		return sign > 0 ? MINF(uin, 0.0f) : MAXF(uin, 0.0f);
	case 2: {
		float ve = vel > 0 ? vel : hg > 0.0f ? dis / hg : 0.0f;
		return (float)sign * ve;
	}
	default:
		return swe_finish(uold, 0.0f, h[l], h[r], H[l], H[r], bb[l],
				  bb[r], fp, ncl);
	}
}

/* set_bc_faces: item q < ny: west/east u faces of row q; else north/south
 * v faces of column q - ny. Clamps into bc_cl[q], |u| maximum into
 * stats[0]. */
kernel void swe_bc(global const float *u, global const float *v,
		   global float *u1, global float *v1, global const float *h,
		   global const float *H, global const float *bb, int W,
		   int nx, int ny, struct swe_fp fp, struct swe_edges E,
		   global ulong *bc_cl, global uint *stats)
{
	const int q = get_global_id(0);
	if (q >= nx + ny)
		return;
	int ncl = 0;
	uint um;
	if (q < ny) {
		int fw = 1 + (q + 1) * W, fe = (nx + 1) + (q + 1) * W;
		u1[fw] = swe_bcface(E.bkind[0], E.bvel[0], E.bdis[0], 1, u[fw],
				    nx > 1 ? u1[fw + 1] : u[fw + 1], fw - 1, fw,
				    h[fw - 1], h, H, bb, fp, &ncl);
		if (E.per_we)
			u1[fe] = u1[fw];
		else
			u1[fe] = swe_bcface(E.bkind[1], E.bvel[1], E.bdis[1], -1,
					    u[fe], nx > 1 ? u1[fe - 1] : u[fe - 1],
					    fe - 1, fe, h[fe], h, H, bb, fp, &ncl);
		uint a = as_uint(fabs(u1[fw])), b = as_uint(fabs(u1[fe]));
		um = a > b ? a : b;
	} else {
		int i = q - ny;
		int fn = (i + 1) + W, fs = (i + 1) + (ny + 1) * W;
		v1[fn] = swe_bcface(E.bkind[2], E.bvel[2], E.bdis[2], 1, v[fn],
				    ny > 1 ? v1[fn + W] : v[fn + W], fn - W, fn,
				    h[fn - W], h, H, bb, fp, &ncl);
		if (E.per_ns)
			v1[fs] = v1[fn];
		else
			v1[fs] = swe_bcface(E.bkind[3], E.bvel[3], E.bdis[3], -1,
					    v[fs], ny > 1 ? v1[fs - W] : v[fs - W],
					    fs - W, fs, h[fs], h, H, bb, fp, &ncl);
		uint a = as_uint(fabs(v1[fn])), b = as_uint(fabs(v1[fs]));
		um = a > b ? a : b;
	}
	bc_cl[q] += ncl;
	if (um)
		atomic_max(&stats[0], um);
}

/* foam.c */
struct foam_par {
	float eps, alpha, decay, dt, idx, kta, kst, ta0, ta1, st0, st1, k;
};

inline float foam_clamp(float I, float tmin, float tmax)
{
	if (!(tmax > tmin))
		return I >= tmin ? 1.0f : 0.0f;
	float a = I < tmax ? I : tmax, b = I < tmin ? I : tmin;
	return (a - b) / (tmax - tmin);
}

inline float foam_pick(float a, float b)
{
	return fabs(a) > fabs(b) ? a : b;
}

/* foam_step: the ghost ring copies the edge cells (no foam diffuses
 * out); item q < nx: north / south ghosts of column q, else west / east
 * ghosts of row q - nx */
kernel void foam_ghosts(global float *f, int W, int nx, int ny)
{
	const int q = get_global_id(0);
	if (q < nx) {
		f[q + 1] = f[(q + 1) + W];
		f[(q + 1) + (ny + 1) * W] = f[(q + 1) + ny * W];
	} else if (q < nx + ny) {
		int j = q - nx;
		f[(j + 1) * W] = f[1 + (j + 1) * W];
		f[(nx + 1) + (j + 1) * W] = f[nx + (j + 1) * W];
	}
}

kernel void foam_gen(global const float *h, global const float *H,
		     global const float *u, global const float *v,
		     global const float *f, global float *o, int W, int nx,
		     int ny, struct foam_par p, int sp, global const int *bl)
{
	SWE_IJ(i, j)
	if (i >= nx || j >= ny)
		return;
	const int c = (i + 1) + (j + 1) * W;
	if (!(h[c] > p.eps)) {
		o[c] = 0.0f;
		return;
	}
	float du = u[c + 1] - u[c], dv = v[c + W] - v[c];
	float ita = sqrt(du * du + dv * dv);
	float ec = h[c] + H[c];
	int nb[4] = { c - 1, c + 1, c - W, c + W };
	float e[4], lap = 0.0f;
	for (int q = 0; q < 4; q++) {
		int in = h[nb[q]] > p.eps;
		e[q] = in ? h[nb[q]] + H[nb[q]] : ec;
		lap += in ? f[nb[q]] - f[c] : 0.0f;
	}
	float gx = foam_pick(e[1] - ec, ec - e[0]) * p.idx;
	float gy = foam_pick(e[3] - ec, ec - e[2]) * p.idx;
	float ist = sqrt(gx * gx + gy * gy);
	float gen = p.dt * (p.kta * foam_clamp(ita, p.ta0, p.ta1) +
			    p.kst * foam_clamp(ist, p.st0, p.st1));
	float phi = (f[c] + p.alpha * lap) * p.decay + gen;
	o[c] = phi < 0.0f ? 0.0f : phi > 1.0f ? 1.0f : phi;
}

kernel void foam_adv(global const float *h, global const float *u,
		     global const float *v, global const float *f,
		     global float *o, int W, int nx, int ny, struct foam_par p,
		     int sp, global const int *bl)
{
	SWE_IJ(i, j)
	if (i >= nx || j >= ny)
		return;
	const int c = (i + 1) + (j + 1) * W;
	if (!(h[c] > p.eps)) {
		o[c] = 0.0f;
		return;
	}
	const float fimax = (float)(nx - 1), fjmax = (float)(ny - 1);
	const int i0max = nx >= 2 ? nx - 2 : 0, j0max = ny >= 2 ? ny - 2 : 0;
	float uc = 0.5f * (u[c] + u[c + 1]), vc = 0.5f * (v[c] + v[c + W]);
	float fi = (float)i - uc * p.k, fj = (float)j - vc * p.k;
	fi = fi < 0.0f ? 0.0f : fi > fimax ? fimax : fi;
	fj = fj < 0.0f ? 0.0f : fj > fjmax ? fjmax : fj;
	int i0 = (int)fi, j0 = (int)fj;
	i0 = i0 < i0max ? i0 : i0max;
	j0 = j0 < j0max ? j0 : j0max;
	float tx = fi - (float)i0, ty = fj - (float)j0;
	int b = i0 + 1 + (j0 + 1) * W;
	float a0 = f[b] + tx * (f[b + 1] - f[b]);
	float a1 = f[b + W] + tx * (f[b + W + 1] - f[b + W]);
	float phi = a0 + ty * (a1 - a0);
	o[c] = phi < 0.0f ? 0.0f : phi > 1.0f ? 1.0f : phi;
}

/* swe_residual, row j (0 .. ny): u faces of row j (0 .. nx) when j < ny,
 * v faces of face row j (0 .. nx - 1). */
kernel void swe_resid_rows(global const float *u, global const float *v,
			   global const float *us, global const float *vs,
			   int W, int nx, int ny, global real *num,
			   global real *den)
{
	const int j = get_global_id(0);
	if (j > ny)
		return;
	real a = 0, b = 0;
	int base = 1 + (j + 1) * W;
	if (j < ny)
		for (int c = base; c <= base + nx; c++) {
			real du = (real)u[c] - us[c];
			a += du * du;
			b += (real)u[c] * u[c];
		}
	for (int c = base; c < base + nx; c++) {
		real dv = (real)v[c] - vs[c];
		a += dv * dv;
		b += (real)v[c] * v[c];
	}
	num[j] = a;
	den[j] = b;
}

/* swe_means_sample: the window sums of h, u, v (element by element, in
 * sample order: the same float additions as the host's) */
kernel void swe_mean_acc(global const float *h, global const float *u,
			 global const float *v, global float *sh,
			 global float *su, global float *sv, int n)
{
	const int q = get_global_id(0);
	if (q >= n)
		return;
	sh[q] += h[q];
	su[q] += u[q];
	sv[q] += v[q];
}

/* The cells the host's particle code touches: gathered into a compact
 * buffer for the host, and scattered back after it. */
kernel void wb_gather(global const float *f, global const int *cells, int n,
		      global float *out, int off)
{
	const int k = get_global_id(0);
	if (k < n)
		out[off + k] = f[cells[k]];
}

kernel void wb_scatter(global float *f, global const int *cells, int n,
		       global const float *in, int off)
{
	const int k = get_global_id(0);
	if (k < n)
		f[cells[k]] = in[off + k];
}

/* ---- block-sparse stepping: the active set on the device ----------------
 * (cl.c, swe_sparse_pass; the rule is swe.c's, docs/scale.md.) Blocks are
 * SWE_BLK x SWE_BLK cells, b = bi + bj nbx; lists hold bi | bj << 16. A
 * block is wet when a cell of its box (with the ghost ring of edge blocks)
 * is deeper than eps (or not finite) or a face there has a bit set;
 * active when a wet or 'always' block (sources, fixed levels, modifiers,
 * and the blocks the host's waterfall code touches this step) lies in its
 * 3 x 3 neighbourhood; halo when an active one does. List order depends on
 * the atomics, results do not: every cell is written by one item and every
 * reduction is a maximum or an integer sum. */

/* interior columns [i0, i1) and rows [j0, j1) of block (bi, bj), widened
 * to the ghost ring at the grid's edges when ghosts */
inline void swe_blk_box(int bi, int bj, int nx, int ny, int ghosts, int *i0,
			int *i1, int *j0, int *j1)
{
	*i0 = bi * SWE_BLK;
	*j0 = bj * SWE_BLK;
	*i1 = MINF(*i0 + SWE_BLK, nx);
	*j1 = MINF(*j0 + SWE_BLK, ny);
	if (ghosts) {
		*i0 -= *i0 == 0;
		*j0 -= *j0 == 0;
		*i1 += *i1 == nx;
		*j1 += *j1 == ny;
	}
}

/* One work-group per block: of list bl (n entries), or of every block
 * (all = 1, group = b). Sets wet[b] = 1 for wet blocks. */
kernel void swe_blk_scan(global const float *h, global const float *u,
			 global const float *v, int W, int nx, int ny,
			 int nbx, float eps, global const int *bl, int all,
			 global uchar *wet)
{
	local int any;
	const int g = get_group_id(0), lid = get_local_id(0);
	const int ls = get_local_size(0);
	int bi, bj;
	if (all) {
		bi = g % nbx;
		bj = g / nbx;
	} else {
		bi = bl[g] & 0xffff;
		bj = bl[g] >> 16;
	}
	if (lid == 0)
		any = 0;
	barrier(CLK_LOCAL_MEM_FENCE);
	int i0, i1, j0, j1;
	swe_blk_box(bi, bj, nx, ny, 1, &i0, &i1, &j0, &j1);
	const int bw = i1 - i0, n = bw * (j1 - j0);
	uint acc = 0;
	for (int q = lid; q < n; q += ls) {
		const int i = i0 + q % bw, j = j0 + q / bw;
		const int c = (i + 1) + (j + 1) * W;
		/* the ghost rows of u and ghost columns of v are copies
		 * (fill_face_ghosts: -0 at a no-slip wall), rewritten every
		 * step from the interior faces and read only by faces of wet
		 * cells: their value counts, not the sign of a zero */
		const int gu = j < 0 || j >= ny, gv = i < 0 || i >= nx;
		acc |= (gu ? (uint)(u[c] != 0.0f) : as_uint(u[c])) |
		       (gv ? (uint)(v[c] != 0.0f) : as_uint(v[c])) |
		       (uint)!(h[c] <= eps);
	}
	if (acc)
		any = 1;
	barrier(CLK_LOCAL_MEM_FENCE);
	if (lid == 0 && any)
		wet[bi + bj * nbx] = 1;
}

/* wet[list[q]] = 1 (blocks the host forces into the active set) */
kernel void swe_blk_mark(global uchar *wet, global const int *list, int n)
{
	const int q = get_global_id(0);
	if (q < n)
		wet[list[q]] = 1;
}

/* act[b]: a wet or always block in the 3 x 3 neighbourhood */
kernel void swe_blk_act(global const uchar *wet, global const uchar *always,
			global uchar *act, int nbx, int nby)
{
	const int b = get_global_id(0);
	if (b >= nbx * nby)
		return;
	const int bi = b % nbx, bj = b / nbx;
	int on = 0;
	for (int y = MAXF(bj - 1, 0); y <= MINF(bj + 1, nby - 1); y++)
		for (int x = MAXF(bi - 1, 0); x <= MINF(bi + 1, nbx - 1); x++)
			on |= wet[x + y * nbx] | always[x + y * nbx];
	act[b] = (uchar)(on != 0);
}

/* The lists of the step: active blocks (cnt[0]), halo blocks (cnt[1]),
 * blocks leaving the active set (cnt[2], swe_blk_sleep), with touch[b]
 * |= act[b] (the window's sample set) and *filmmax raised by the films of
 * sleeping blocks; clears wet for the next pass. */
kernel void swe_blk_lists(global const uchar *act, global const uchar *pact,
			  global uchar *wet, global uchar *touch,
			  global const uint *film, int nbx, int nby,
			  global int *actl, global int *halol,
			  global int *leavel, global int *cnt,
			  global uint *filmmax)
{
	const int b = get_global_id(0);
	if (b >= nbx * nby)
		return;
	const int bi = b % nbx, bj = b / nbx, pk = bi | (bj << 16);
	int hl = 0;
	for (int y = MAXF(bj - 1, 0); y <= MINF(bj + 1, nby - 1); y++)
		for (int x = MAXF(bi - 1, 0); x <= MINF(bi + 1, nbx - 1); x++)
			hl |= act[x + y * nbx];
	const int a = act[b];
	if (a)
		actl[atomic_inc(&cnt[0])] = pk;
	if (hl)
		halol[atomic_inc(&cnt[1])] = pk;
	if (pact[b] && !a)
		leavel[atomic_inc(&cnt[2])] = pk;
	else if (!a && film[b])
		atomic_max(filmmax, film[b]);
	if (a)
		touch[b] = 1;
	wet[b] = 0;
}

/* A block leaving the active set (group g < cnt[2] of leavel): the dense
 * step would leave its depths as they are and close its faces: h1 = h,
 * u1 = v1 = 0 over its box (ghosts of edge blocks included); film[b] =
 * the largest depth bits of its cells, into *filmmax too. */
kernel void swe_blk_sleep(global const float *h, global float *h1,
			  global float *u1, global float *v1, int W, int nx,
			  int ny, int nbx, global const int *leavel,
			  global const int *cnt, global uint *film,
			  global uint *filmmax)
{
	local uint m;
	const int g = get_group_id(0), lid = get_local_id(0);
	const int ls = get_local_size(0);
	if (g >= cnt[2])
		return;
	const int bi = leavel[g] & 0xffff, bj = leavel[g] >> 16;
	if (lid == 0)
		m = 0;
	barrier(CLK_LOCAL_MEM_FENCE);
	int i0, i1, j0, j1;
	swe_blk_box(bi, bj, nx, ny, 1, &i0, &i1, &j0, &j1);
	const int bw = i1 - i0, n = bw * (j1 - j0);
	uint hm = 0;
	for (int q = lid; q < n; q += ls) {
		int i = i0 + q % bw, j = j0 + q / bw;
		int c = (i + 1) + (j + 1) * W;
		float hv = h[c];
		h1[c] = hv;
		u1[c] = 0.0f;
		v1[c] = 0.0f;
		if (i >= 0 && j >= 0 && i < nx && j < ny) {
			uint hb = as_uint(hv);
			hm = hb > hm ? hb : hm;
		}
	}
	if (hm)
		atomic_max(&m, hm);
	barrier(CLK_LOCAL_MEM_FENCE);
	if (lid == 0) {
		film[bi + bj * nbx] = m;
		if (m)
			atomic_max(filmmax, m);
	}
}

/* The blocks whose window sums can change (cnt[3]): touched this window
 * (active at some step), holding a film, or on the grid's edge (ghosts);
 * every other block holds +0 depths and faces since before the window
 * began, and adding +0 to its +0 sums changes no bit. */
kernel void swe_blk_samples(global const uchar *touch, global const uint *film,
			    int nbx, int nby, global int *list,
			    global int *cnt)
{
	const int b = get_global_id(0);
	if (b >= nbx * nby)
		return;
	const int bi = b % nbx, bj = b / nbx;
	if (touch[b] || film[b] || bi == 0 || bj == 0 || bi == nbx - 1 ||
	    bj == nby - 1)
		list[atomic_inc(&cnt[3])] = bi | (bj << 16);
}

/* swe_mean_acc over the listed blocks (boxes with ghosts) */
kernel void swe_mean_blk(global const float *h, global const float *u,
			 global const float *v, global float *sh,
			 global float *su, global float *sv, int W, int nx,
			 int ny, global const int *bl)
{
	const int g = get_group_id(0), lid = get_local_id(0);
	const int ls = get_local_size(0);
	const int bi = bl[g] & 0xffff, bj = bl[g] >> 16;
	int i0, i1, j0, j1;
	swe_blk_box(bi, bj, nx, ny, 1, &i0, &i1, &j0, &j1);
	const int bw = i1 - i0, n = bw * (j1 - j0);
	for (int q = lid; q < n; q += ls) {
		int c = (i0 + q % bw + 1) + (j0 + q / bw + 1) * W;
		sh[c] += h[c];
		su[c] += u[c];
		sv[c] += v[c];
	}
}

/* swe_means_close, row j: the window means at cell centres into mh, mu,
 * mv (nx x ny; mu, mv are the previous window's pu, pv swapped by the
 * host), the row's sums of the relative change (rn, rd, rh; the host adds
 * them in row order). Operation for operation as swe.c. */
kernel void swe_means_rows(global const float *sh, global const float *su,
			   global const float *sv, global float *mh,
			   global float *mu, global float *mv,
			   global const float *pu, global const float *pv,
			   int W, int nx, int ny, float w, float thin,
			   global real *rn, global real *rd, global real *rh)
{
	const int j = get_global_id(0);
	if (j >= ny)
		return;
	real a = 0, b = 0, hh = 0;
	for (int i = 0; i < nx; i++) {
		int c = (i + 1) + (j + 1) * W, q = i + j * nx;
		float h = sh[c] * w;
		float uc = 0.5f * (su[c] + su[c + 1]) * w;
		float vc = 0.5f * (sv[c] + sv[c + W]) * w;
		mh[q] = h;
		float mq = h > thin ? uc : 0.0f, nq = h > thin ? vc : 0.0f;
		mu[q] = mq;
		mv[q] = nq;
		if (!(h > thin))
			continue;
		real du = (real)mq - pu[q];
		real dv = (real)nq - pv[q];
		a += h * (du * du + dv * dv);
		b += h * ((real)mq * mq + (real)nq * nq);
		hh += h;
	}
	rn[j] = a;
	rd[j] = b;
	rh[j] = hh;
}
