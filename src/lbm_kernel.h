/*
 * lbm_kernel.h - the fused LBM-SWE cell update of lbm.c (pull streaming,
 * bounce-back, collision, forcing, clamps, positivity), written once for a
 * vector width LBM_VW and included by lbm.c twice: LBM_VW 8 (AVX2 + FMA, or
 * generic vectors) and LBM_VW 16 (AVX-512, compiled under a target pragma
 * and chosen at run time). Not a public header: lbm.c defines struct
 * lbm_kin, lbm_kout and lbm_kpar before including it.
 *
 * Every lane performs the same IEEE single-precision operations in the
 * same order, whatever the width: adds, multiplies, divisions and square
 * roots (correctly rounded), explicit fused multiply-adds FMA(a, b, c) =
 * a b + c rounded once, min / max with the x86 semantics (the second
 * operand unless the comparison holds), conversions rounding to nearest
 * even. So a cell's result depends neither on its lane nor on the width,
 * and src/cl/lbm.cl repeats the sequence operation for operation.
 *
 * Units: depths and populations in the update are in fixed-point units
 * (f = F unit metres, lbm.h), except the link rule, which reads the
 * stored depths, elevations and ceilings in metres. The update of one
 * cell, with F_a pulled, H = sum F_a, h = (float)H, M = (float)sum c_a F_a
 * (exact integer sums), is
 *   U = M / max(h, h_thin), |U|^2 = U.U,  L2 = max(min(U_max^2, Fr^2 ghe), 0)
 *   U_c = U sqrt(L2 / |U|^2) where |U|^2 > min(U_max^2, Fr^2 ghe), else U
 *   uu = min(|U|^2, L2) = |U_c|^2,   ghe = g h unit / e^2
 *   r_f = 1 / (1 + k_f sqrt(uu) max(h, h_dry)^(-4/3))      (Manning)
 *   A = omega h (ghe - uu) / 6,  C = omega h / 2,  B = (h r_f U_c - (1 -
 *       omega_m) M) / 3,  e_a = w_a (A + C (c_a.U_c)^2),  B_a = w_a c_a.B
 * and, in deviation form about the integer rest equilibrium R_a(Hc)
 * (lbm.h lbm_rq; Hc = lbm_hs of the depth h unit the cell stores), for
 * the pair (a, abar):
 *   P_a = F_a + RND(-omega/2 ((F_a - R_a) + (F_abar - R_a))
 *                   - omega_m/2 (F_a - F_abar) + (e_a - omega R0_a) + B_a)
 *         + Bi_a
 * with omega R0_a = w_a omega h ghe / 6 in float (e_a - omega R0_a is 0
 * bit for bit at U_c = 0), i.e. f_a + omega (feq_a - f_a) (omega_m on the
 * antisymmetric part) plus the forcing, one rounding per population.
 * Bi_a is the integer bed transfer of the open link to y = n + c_a
 * (lbm.h lbm_bi: rounded rest equilibria of the integer depths of the
 * stored depths h_x, h_y over the integer bed potential zi; 0 on closed
 * links), exactly antisymmetric, so still water is an exact fixed point
 * (docs/lbm.md, "Still water, exactly"). The rest population keeps the
 * exact remainder H + sum Bi_a - sum_{a>=1} P_a. The float rest
 * population p_0 = (1 - omega) f_0 + omega h - (5 A + 3 C uu) only
 * matters to the positivity fix, which blends the lanes that need it
 * (and rounds them) instead.
 */

#define LBM_CAT_(a, b) a##b
#define LBM_CAT(a, b) LBM_CAT_(a, b)
#define VN(x) LBM_CAT(x, LBM_VW)

#define vf VN(vf)
#define vi VN(vi)
#define vu VN(vu)
#define vm VN(vm)
typedef float vf __attribute__((vector_size(LBM_VW * 4)));
typedef int32_t vi __attribute__((vector_size(LBM_VW * 4)));
/* integer sums wrap (unsigned) so that a diverging run, caught right after
 * the step, is not undefined behaviour; in range they equal signed sums */
typedef uint32_t vu __attribute__((vector_size(LBM_VW * 4)));
#if LBM_VW == 16
typedef __mmask16 vm; /* lane masks: AVX-512 mask registers */
#else
typedef vi vm;        /* lane masks: all ones or zero per lane */
#endif

#define LD VN(ld_)
#define LDI VN(ldi_)
#define ST VN(st_)
#define STI VN(sti_)
#define SEL VN(sel_)
#define SELI VN(seli_)
#define MX VN(max_)
#define MN VN(min_)
#define FMA VN(fma_)
#define SQRT VN(sqrt_)
#define RND VN(round_)
#define CVT VN(cvt_)
#define SPL VN(splat_)
#define LT VN(lt_)
#define GT VN(gt_)
#define GE VN(ge_)
#define ANY VN(any_)
#define CNT VN(count_)
#define MNOT VN(not_)
#define RCBRT VN(rcbrt_)
#define IMX VN(imax_)
#define IMN VN(imin_)
#define RQA VN(rqa_)
#define RQD VN(rqd_)
#define DZ VN(dz_)
#define CELL VN(cell)
#define CELLG VN(cellg)
#define CELLF VN(cellf)
#define ROW VN(row)
#define STMIN VN(stmin)
#define FASTK VN(fastk)
#define FVM VN(fvm)

static inline vf LD(const float *p)
{
	vf v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline vi LDI(const int32_t *p)
{
	vi v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void ST(float *p, vf v)
{
	memcpy(p, &v, sizeof(v));
}

static inline void STI(int32_t *p, vi v)
{
	memcpy(p, &v, sizeof(v));
}

/* a scalar in every lane (zero + x would be a real addition: -0) */
static inline vf SPL(float x)
{
#if LBM_VW == 16
	return (vf)_mm512_set1_ps(x);
#elif defined(__AVX__)
	return (vf)_mm256_set1_ps(x);
#else
	vf v;
	for (int l = 0; l < LBM_VW; l++)
		v[l] = x;
	return v;
#endif
}

static inline vf CVT(vi v)
{
	return __builtin_convertvector(v, vf);
}

#if LBM_VW == 16
static inline vf SEL(vm m, vf a, vf b)
{
	return (vf)_mm512_mask_blend_ps(m, (__m512)b, (__m512)a);
}
static inline vi SELI(vm m, vi a, vi b)
{
	return (vi)_mm512_mask_blend_epi32(m, (__m512i)b, (__m512i)a);
}
static inline vf MX(vf a, vf b)
{
	return (vf)_mm512_max_ps((__m512)a, (__m512)b);
}
static inline vf MN(vf a, vf b)
{
	return (vf)_mm512_min_ps((__m512)a, (__m512)b);
}
static inline vf FMA(vf a, vf b, vf c)
{
	return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
static inline vf SQRT(vf a)
{
	return (vf)_mm512_sqrt_ps((__m512)a);
}
static inline vi RND(vf x)
{
	return (vi)_mm512_cvtps_epi32((__m512)x);
}
static inline vm LT(vf a, vf b)
{
	return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_LT_OQ);
}
static inline vm GT(vf a, vf b)
{
	return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_GT_OQ);
}
static inline vm GE(vf a, vf b)
{
	return _mm512_cmp_ps_mask((__m512)a, (__m512)b, _CMP_GE_OQ);
}
static inline vm MNOT(vm m)
{
	return (vm)~m;
}
static inline int ANY(vm m)
{
	return m != 0;
}
static inline int CNT(vm m)
{
	return __builtin_popcount((unsigned)m);
}
#define VM_ALL ((vm)0xffff)
#else /* 8 lanes */
static inline vf SEL(vm m, vf a, vf b)
{
#ifdef __AVX__
	return (vf)_mm256_blendv_ps((__m256)b, (__m256)a, (__m256)m);
#else
	return (vf)((m & (vi)a) | (~m & (vi)b));
#endif
}
static inline vi SELI(vm m, vi a, vi b)
{
	return (m & a) | (~m & b);
}
static inline vf MX(vf a, vf b)
{
#ifdef __AVX__
	return (vf)_mm256_max_ps((__m256)a, (__m256)b);
#else
	return SEL(a > b, a, b);
#endif
}
static inline vf MN(vf a, vf b)
{
#ifdef __AVX__
	return (vf)_mm256_min_ps((__m256)a, (__m256)b);
#else
	return SEL(a < b, a, b);
#endif
}
static inline vf FMA(vf a, vf b, vf c)
{
#ifdef __FMA__
	return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
	vf r;
	for (int l = 0; l < 8; l++)
		r[l] = fmaf(a[l], b[l], c[l]);
	return r;
#endif
}
static inline vf SQRT(vf a)
{
#ifdef __AVX__
	return (vf)_mm256_sqrt_ps((__m256)a);
#else
	vf r;
	for (int l = 0; l < 8; l++)
		r[l] = sqrtf(a[l]);
	return r;
#endif
}
/* round to nearest, ties to even, to fixed point (as fx_round); out of
 * range values are caught by the kernel's divergence check */
static inline vi RND(vf x)
{
#ifdef __AVX__
	return (vi)_mm256_cvtps_epi32((__m256)x);
#else
	vi r;
	for (int l = 0; l < 8; l++)
		r[l] = (int32_t)lrintf(fminf(fmaxf(x[l], -2e9f), 2e9f));
	return r;
#endif
}
static inline vm LT(vf a, vf b)
{
	return a < b;
}
static inline vm GT(vf a, vf b)
{
	return a > b;
}
static inline vm GE(vf a, vf b)
{
	return a >= b;
}
static inline vm MNOT(vm m)
{
	return ~m;
}
static inline int ANY(vm m)
{
#ifdef __AVX__
	return _mm256_movemask_ps((__m256)m) != 0;
#else
	int a = 0;
	for (int l = 0; l < 8; l++)
		a |= m[l] != 0;
	return a;
#endif
}
static inline int CNT(vm m)
{
#ifdef __AVX__
	return __builtin_popcount((unsigned)_mm256_movemask_ps((__m256)m));
#else
	int s = 0;
	for (int l = 0; l < 8; l++)
		s += m[l] != 0;
	return s;
#endif
}
#define VM_ALL ((vm){ -1, -1, -1, -1, -1, -1, -1, -1 })
#endif

/* x^(-1/3), x > 0 (normal): guess from the integer bits (divided by 3 in
 * float, truncated), two Newton steps y <- y (4 - x y^3) / 3
 * (3.5% -> 0.25% -> 1e-5) */
static inline vf RCBRT(vf x)
{
	const vf zero = { 0 };
	vi i = (vi)x;
	vf fi = CVT(i) * (1.0f / 3.0f);
	i = 0x54a2fa8c - __builtin_convertvector(fi, vi);
	vf y = (vf)i;
	for (int k = 0; k < 2; k++) {
		vf y3 = (y * y) * y;
		y = (y * FMA(-x, y3, zero + 4.0f)) * (1.0f / 3.0f);
	}
	return y;
}

/* integer max / min (lane masks from the comparison, both widths) */
static inline vi IMX(vi a, vi b)
{
	const vi m = (vi)(a > b);
	return (m & a) | (~m & b);
}

static inline vi IMN(vi a, vi b)
{
	const vi m = (vi)(a < b);
	return (m & a) | (~m & b);
}

/* rest equilibria (lbm.h lbm_rq) of an axis and a diagonal direction */
static inline vi RQA(vf K, vi H)
{
	const vf h = CVT(H);
	return RND(K * (h * h));
}

static inline vi RQD(vf K, vi H)
{
	const vf h = CVT(H);
	return RND((K * (h * h)) * 0.25f);
}

/* the bed step (lbm.h lbm_dz) */
static inline vi DZ(vi zix, vi ziy, vf zx, vf zy, vf ki)
{
	const vf Df = (zy - zx) * ki;
	const vi w = (vi)((vu)ziy - (vu)zix);
	const vi hi = (vi)(Df > SPL(2e9f)), lo = (vi)(Df < SPL(-2e9f));
	const vi s = (hi & 0x7fffffff) | (~hi & w);
	return (lo & -0x7fffffff) | (~lo & s);
}

/* LBM_VW cells n .. n + LBM_VW - 1 of one row, written at m of the output
 * arrays. Returns the clamp and bad-cell masks through *clamp, *bad.
 * fast = 1: every cell of the 3 x (LBM_VW + 2) stencil is deeper than
 * h_pos and open sky (no blocker or solid), so every link is open, every
 * depth positive and no positivity fix of a neighbour can trigger; the
 * result is then bit-identical to fast = 0 (the selects would all pick the
 * open / unchanged values), only cheaper. fast = 2: also no bed step of
 * the cells' links exceeds the smallest depth of the stencil (the bed
 * term is computed in full either way since the reconstruction).
 * trt: two relaxation rates (omega_m != omega), else BGK. */
static inline __attribute__((always_inline)) void
CELL(const struct lbm_kin *in, int n, const struct lbm_kout *out, int m,
     const struct lbm_kpar *k, vm *clamp, vm *bad, const int fast,
     const int trt)
{
	const int W = in->W;
	const float *hA = in->hA, *z = in->z, *c = in->c;
	const vf zero = { 0 };
	const vf hx = LD(hA + n), zx = LD(z + n);
	const vf cx = fast ? zero : LD(c + n);
	const vf ex = zx + hx, zxd = zx + k->hd;
	const vi zi0 = { 0 };
	const vf ki = SPL(k->kinv), Kv = SPL(k->K);
	const vi zix = LDI(in->zi + n);
	/* integer depths of the stored depths (lbm.h lbm_hs), negative 0 */
	const vi Hxp = IMX(RND(hx * ki), zi0);
	const vi RXa = RQA(Kv, Hxp), RXd = RQD(Kv, Hxp);
	/* link to y = n + off (direction a): open mask o_a; integer bed
	 * transfer (lbm.h lbm_bi) on open links */
#define LINK(a, off, RQ, RX)                                                 \
	const vf hy##a = LD(hA + n + (off)), zy##a = LD(z + n + (off));      \
	const vm o##a = fast ? VM_ALL :                                      \
		  GT(MX(ex, zy##a + hy##a), MX(zxd, zy##a + k->hd)) &          \
		  GT(MN(cx, LD(c + n + (off))), MX(ex, zy##a + hy##a));        \
	const vi Hy##a = IMX(RND(hy##a * ki), zi0);                          \
	const vi D##a = DZ(zix, LDI(in->zi + n + (off)), zx, zy##a, ki);     \
	const vi mx##a = IMN(IMX(D##a, zi0), Hxp);                           \
	const vi my##a = IMN(IMX(zi0 - D##a, zi0), Hy##a);                   \
	const vi t##a = (RQ(Kv, Hy##a) - RQ(Kv, Hy##a - my##a)) -            \
			(RX - RQ(Kv, Hxp - mx##a));                          \
	const vi bed##a = fast ? t##a : SELI(o##a, t##a, zi0);
	LINK(1, 1, RQA, RXa)
	LINK(2, 1 + W, RQD, RXd)
	LINK(3, W, RQA, RXa)
	LINK(4, -1 + W, RQD, RXd)
	LINK(5, -1, RQA, RXa)
	LINK(6, -1 - W, RQD, RXd)
	LINK(7, -W, RQA, RXa)
	LINK(8, 1 - W, RQD, RXd)
#undef LINK
	/* pull streaming; a closed link bounces the cell's own value back */
	const int32_t *const *A = in->A;
	const vi F0 = LDI(A[0] + n);
#define PULL(a, b, off)                                                     \
	(fast ? LDI(A[a] + n + (off)) :                                      \
		SELI(o##b, LDI(A[a] + n + (off)), LDI(A[b] + n)))
	const vi F5 = PULL(5, 1, 1);
	const vi F6 = PULL(6, 2, 1 + W);
	const vi F7 = PULL(7, 3, W);
	const vi F8 = PULL(8, 4, -1 + W);
	const vi F1 = PULL(1, 5, -1);
	const vi F2 = PULL(2, 6, -1 - W);
	const vi F3 = PULL(3, 7, -W);
	const vi F4 = PULL(4, 8, 1 - W);
#undef PULL
	/* exact mass received and momentum (integer sums), the exact
	 * (antisymmetric) bed transfers */
#define U_(x) ((vu)(x))
	const vu Hin = ((U_(F0) + U_(F1)) + (U_(F2) + U_(F3))) +
		       ((U_(F4) + U_(F5)) + (U_(F6) + U_(F7))) + U_(F8);
	const vu Sb = ((U_(bed1) + U_(bed2)) + (U_(bed3) + U_(bed4))) +
		      ((U_(bed5) + U_(bed6)) + (U_(bed7) + U_(bed8)));
	const vf h = CVT((vi)Hin);
	const vf Mx = CVT((vi)((U_(F1) + U_(F2) + U_(F8)) -
			       (U_(F4) + U_(F5) + U_(F6))));
	const vf My = CVT((vi)((U_(F2) + U_(F3) + U_(F4)) -
			       (U_(F6) + U_(F7) + U_(F8))));
	/* thin films (h < h_thin = 10 h_dry) move at M / h_thin: their momentum
	 * decays, so round-off in tiny depths cannot make fast films */
	const vf ihf = (zero + 1.0f) / MX(h, SPL(k->hthin));
	const vf U = Mx * ihf, V = My * ihf;
	/* stability clamps |u| <= 0.5 e, Froude <= 1 (the talk) */
	const vf ghe = k->ghk * h;
	const vf sp2 = FMA(U, U, V * V);
	const vf lim2 = MN(SPL(k->umax2), k->fr2 * ghe);
	const vm cl = GT(sp2, lim2);
	const vf l2p = MX(lim2, zero);
	const vf sc = SEL(cl, SQRT(l2p / MX(sp2, zero + 1e-30f)), zero + 1.0f);
	const vf Uc = sc * U, Vc = sc * V;
	const vf uu = MN(sp2, l2p);
	*clamp = (cl & GT(h, SPL(k->hd_u))) | GE(ghe, zero + 1.0f);
	/* Manning friction, implicit: r_f = 1 / (1 + k_f |U_c| h^-4/3) */
	const vf y = RCBRT(MX(h, SPL(k->hd_u)));
	const vf y2 = y * y;
	const vf rf = (zero + 1.0f) /
		      FMA(k->kf * SQRT(uu), y2 * y2, zero + 1.0f);
	/* equilibrium (times omega) and forcing, collected per direction */
	const vf Aq = (ghe - uu) * (h * k->om6);
	const vf Cq = h * k->omh;
	const vf hr = (h * rf) * (1.0f / 3.0f);
	const vf Bx = FMA(SPL(k->nom13), Mx, hr * Uc);
	const vf By = FMA(SPL(k->nom13), My, hr * Vc);
	const vf eX = FMA(Cq * Uc, Uc, Aq), eY = FMA(Cq * Vc, Vc, Aq);
	const vf c2 = Uc + Vc, c4 = Vc - Uc;
	const vf Ad = Aq * 0.25f, Cd = Cq * 0.25f;
	const vf e2 = FMA(Cd * c2, c2, Ad), e4 = FMA(Cd * c4, c4, Ad);
	const vf B2 = (Bx + By) * 0.25f, B4 = (By - Bx) * 0.25f;
	/* deviation form: relax F_a - R_a(Hc) (integers, exact) toward the
	 * velocity part of the equilibrium, omega (feq_a(h, u) - feq_a(h, 0))
	 * (0 at rest, bit for bit: Aq = A0 there), Hc the integer depth the
	 * stored depth h unit stands for */
	const vf hv = h * k->unit;
	const vi Hc = RND(hv * ki);
	const vi Rca = RQA(Kv, Hc), Rcd = RQD(Kv, Hc);
	const vf A0 = ghe * (h * k->om6), A0d = A0 * 0.25f;
	const vf mX = eX - A0, mY = eY - A0, m2 = e2 - A0d, m4 = e4 - A0d;
	const vf nomh = SPL(-k->omh), nommh = SPL(-k->ommh),
		 ommh = SPL(k->ommh);
	vi P1, P2, P3, P4, P5, P6, P7, P8;
#define PAIR(a, b, R, mq, Bq)                                                \
	{                                                                    \
		const vf ss = CVT((F##a - R) + (F##b - R));                  \
		const vf fd = CVT(F##a - F##b);                               \
		const vf base = FMA(nomh, ss, mq);                           \
		P##a = (F##a + RND(FMA(nommh, fd, base + (Bq)))) + bed##a;   \
		P##b = (F##b + RND(FMA(ommh, fd, base - (Bq)))) + bed##b;    \
	}
	PAIR(1, 5, Rca, mX, Bx)
	PAIR(3, 7, Rca, mY, By)
	PAIR(2, 6, Rcd, m2, B2)
	PAIR(4, 8, Rcd, m4, B4)
#undef PAIR
	(void)trt;
	/* positivity where it matters: populations sent toward shallow cells
	 * (h < h_pos) and the rest population of a shallow cell must not be
	 * negative, or depths could go negative; there, blend toward hp q_a
	 * (q = 4/9, 1/9, 1/36) just enough. Deeper water keeps the negative
	 * populations the equilibrium has at Froude numbers above ~0.3. */
	*bad = MNOT(LT(h, SPL(k->hlim_u)));
	/* a population matters if it goes to a shallow open neighbour, or
	 * (bounced back or kept) if this cell is shallow; on the fast path no
	 * neighbour is shallow, but this cell may have become so */
	const vm sh = LT(h, SPL(k->hpos_u));
	if (!fast || ANY(sh)) {
		const vf om1 = SPL(k->om1);
		const vf p1 = CVT(P1), p2 = CVT(P2), p3 = CVT(P3), p4 = CVT(P4),
			 p5 = CVT(P5), p6 = CVT(P6), p7 = CVT(P7), p8 = CVT(P8);
		const vf big = zero + 1e30f, hpos = SPL(k->hpos);
		const vf p0 = FMA(om1, CVT(F0),
				  h * k->om - FMA(Aq, zero + 5.0f, (Cq * 3.0f) * uu));
		const vf hp = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)) + p8;
		vf rmin = MN(SEL(sh, p0 * 2.25f, big),
			     SEL(sh | (o1 & LT(hy1, hpos)), p1 * 9.0f, big));
		rmin = MN(rmin, SEL(sh | (o3 & LT(hy3, hpos)), p3 * 9.0f, big));
		rmin = MN(rmin, SEL(sh | (o5 & LT(hy5, hpos)), p5 * 9.0f, big));
		rmin = MN(rmin, SEL(sh | (o7 & LT(hy7, hpos)), p7 * 9.0f, big));
		rmin = MN(rmin, SEL(sh | (o2 & LT(hy2, hpos)), p2 * 36.0f, big));
		rmin = MN(rmin, SEL(sh | (o4 & LT(hy4, hpos)), p4 * 36.0f, big));
		rmin = MN(rmin, SEL(sh | (o6 & LT(hy6, hpos)), p6 * 36.0f, big));
		rmin = MN(rmin, SEL(sh | (o8 & LT(hy8, hpos)), p8 * 36.0f, big));
		const vm neg = LT(rmin, zero);
		*clamp |= neg;
		if (ANY(neg)) { /* else nothing changes */
			const vm pos = GT(hp, zero);
			const vf r = rmin / MX(hp, zero + 1e-30f);
			const vf th = SEL(neg, SEL(pos, -r / (1.0f - r), zero + 1.0f),
					  zero);
			const vf T = SEL(pos, hp, zero);
			P1 = SELI(neg, RND(FMA(th, T * (1.0f / 9) - p1, p1)), P1);
			P2 = SELI(neg, RND(FMA(th, T * (1.0f / 36) - p2, p2)), P2);
			P3 = SELI(neg, RND(FMA(th, T * (1.0f / 9) - p3, p3)), P3);
			P4 = SELI(neg, RND(FMA(th, T * (1.0f / 36) - p4, p4)), P4);
			P5 = SELI(neg, RND(FMA(th, T * (1.0f / 9) - p5, p5)), P5);
			P6 = SELI(neg, RND(FMA(th, T * (1.0f / 36) - p6, p6)), P6);
			P7 = SELI(neg, RND(FMA(th, T * (1.0f / 9) - p7, p7)), P7);
			P8 = SELI(neg, RND(FMA(th, T * (1.0f / 36) - p8, p8)), P8);
		}
	}
	int32_t *const *B = out->B;
	/* the rest population takes the remainder: exact mass budget */
	STI(B[0] + m, (vi)((Hin + Sb) - (((U_(P1) + U_(P2)) + (U_(P3) + U_(P4))) +
					 ((U_(P5) + U_(P6)) + (U_(P7) + U_(P8))))));
#undef U_
	STI(B[1] + m, P1);
	STI(B[2] + m, P2);
	STI(B[3] + m, P3);
	STI(B[4] + m, P4);
	STI(B[5] + m, P5);
	STI(B[6] + m, P6);
	STI(B[7] + m, P7);
	STI(B[8] + m, P8);
	ST(out->hB + m, hv);
}

/* The general update of LBM_VW cells, out of line: the fast paths fall
 * back to it for a vector with a cell shallower than h_pos. */
static __attribute__((noinline)) void
CELLG(const struct lbm_kin *in, int n, const struct lbm_kout *out, int m,
      const struct lbm_kpar *k, vm *clamp, vm *bad, int trt)
{
	if (trt)
		CELL(in, n, out, m, k, clamp, bad, 0, 1);
	else
		CELL(in, n, out, m, k, clamp, bad, 0, 0);
}

/* CELL for fast = 1 or 2, the same operations on every lane in another
 * order: the moments first, then one direction at a time (pulled
 * population, bed transfer of its link, collision, rounding, store), so
 * that few values stay live (the pulled populations are loaded again
 * after a compiler barrier rather than kept in registers). A vector with
 * a cell shallower than h_pos (a positivity fix may apply) goes to CELLG. */
static inline __attribute__((always_inline)) void
CELLF(const struct lbm_kin *in, int n, const struct lbm_kout *out, int m,
      const struct lbm_kpar *k, vm *clamp, vm *bad, const int fast,
      const int trt)
{
	const int W = in->W;
	const float *hA = in->hA, *z = in->z;
	const int32_t *const *A = in->A;
	int32_t *const *B = out->B;
	const vf zero = { 0 };
	/* pulled populations: every link is open */
	const int off[LBM_Q] = { 0, -1, -1 - W, -W, 1 - W, 1, 1 + W, W, -1 + W };
#define F_(a) LDI(A[a] + n + off[a])
#define U_(x) ((vu)(x))
	const vi F1 = F_(1), F2 = F_(2), F3 = F_(3), F4 = F_(4), F5 = F_(5),
		 F6 = F_(6), F7 = F_(7), F8 = F_(8);
	const vu Hin = ((U_(F_(0)) + U_(F1)) + (U_(F2) + U_(F3))) +
		       ((U_(F4) + U_(F5)) + (U_(F6) + U_(F7))) + U_(F8);
	const vf h = CVT((vi)Hin);
	if (ANY(LT(h, SPL(k->hpos_u)))) {
		CELLG(in, n, out, m, k, clamp, bad, trt);
		return;
	}
	const vf Mx = CVT((vi)((U_(F1) + U_(F2) + U_(F8)) -
			       (U_(F4) + U_(F5) + U_(F6))));
	const vf My = CVT((vi)((U_(F2) + U_(F3) + U_(F4)) -
			       (U_(F6) + U_(F7) + U_(F8))));
	/* as CELL */
	const vf ihf = (zero + 1.0f) / MX(h, SPL(k->hthin));
	const vf U = Mx * ihf, V = My * ihf;
	const vf ghe = k->ghk * h;
	const vf sp2 = FMA(U, U, V * V);
	const vf lim2 = MN(SPL(k->umax2), k->fr2 * ghe);
	const vm cl = GT(sp2, lim2);
	const vf l2p = MX(lim2, zero);
	vf Uc = U, Vc = V; /* = 1 U where no lane is clamped */
	if (ANY(cl)) {
		const vf sc = SEL(cl, SQRT(l2p / MX(sp2, zero + 1e-30f)),
				  zero + 1.0f);
		Uc = sc * U;
		Vc = sc * V;
	}
	const vf uu = MN(sp2, l2p);
	*clamp = (cl & GT(h, SPL(k->hd_u))) | GE(ghe, zero + 1.0f);
	*bad = MNOT(LT(h, SPL(k->hlim_u)));
	const vf y = RCBRT(MX(h, SPL(k->hd_u)));
	const vf y2 = y * y;
	const vf rf = (zero + 1.0f) /
		      FMA(k->kf * SQRT(uu), y2 * y2, zero + 1.0f);
	const vf Aq = (ghe - uu) * (h * k->om6);
	const vf Cq = h * k->omh;
	const vf hr = (h * rf) * (1.0f / 3.0f);
	const vf Bx = FMA(SPL(k->nom13), Mx, hr * Uc);
	const vf By = FMA(SPL(k->nom13), My, hr * Vc);
	const vf eX = FMA(Cq * Uc, Uc, Aq), eY = FMA(Cq * Vc, Vc, Aq);
	const vf c2 = Uc + Vc, c4 = Vc - Uc;
	const vf Ad = Aq * 0.25f, Cd = Cq * 0.25f;
	const vf e2 = FMA(Cd * c2, c2, Ad), e4 = FMA(Cd * c4, c4, Ad);
	const vf B2 = (Bx + By) * 0.25f, B4 = (By - Bx) * 0.25f;
	/* as CELL: the deviation form about R_a(Hc) */
	const vf hv = h * k->unit;
	ST(out->hB + m, hv);
	const vf ki = SPL(k->kinv), Kv = SPL(k->K);
	const vi zi0 = { 0 };
	const vi Hc = RND(hv * ki);
	const vi Rca = RQA(Kv, Hc), Rcd = RQD(Kv, Hc);
	const vf A0 = ghe * (h * k->om6), A0d = A0 * 0.25f;
	const vf mX = eX - A0, mY = eY - A0, m2 = e2 - A0d, m4 = e4 - A0d;
	const vf nomh = SPL(-k->omh), nommh = SPL(-k->ommh),
		 ommh = SPL(k->ommh);
	__asm__("" ::: "memory"); /* reload rather than keep F_a */
	const vf hx = LD(hA + n), zx = LD(z + n);
	const vi zix = LDI(in->zi + n);
	const vi Hxp = IMX(RND(hx * ki), zi0);
	const vi RXa = RQA(Kv, Hxp), RXd = RQD(Kv, Hxp);
	vu Ps = { 0 }, Sb = { 0 };
	/* integer bed transfer of the link to n + c_a (as CELL's LINK) */
#define BED(a, RQ, RX)                                                      \
	vi bed##a;                                                           \
	{                                                                    \
		const vf hy = LD(hA + n - off[a]), zy = LD(z + n - off[a]);  \
		const vi Hy = IMX(RND(hy * ki), zi0);                        \
		const vi D = DZ(zix, LDI(in->zi + n - off[a]), zx, zy, ki);  \
		const vi mxv = IMN(IMX(D, zi0), Hxp);                        \
		const vi myv = IMN(IMX(zi0 - D, zi0), Hy);                   \
		bed##a = (RQ(Kv, Hy) - RQ(Kv, Hy - myv)) -                   \
			 (RX - RQ(Kv, Hxp - mxv));                           \
	}
#define OUT(a, P)                                                           \
	{                                                                    \
		const vi Pv = (P);                                           \
		STI(B[a] + m, Pv);                                           \
		Ps += U_(Pv);                                                \
		Sb += U_(bed##a);                                            \
	}
#define PAIR(a, b, RQ, RX, R, mq, Bq)                                       \
	{                                                                    \
		const vi Fa = F_(a), Fb = F_(b);                             \
		const vf ss = CVT((Fa - R) + (Fb - R));                      \
		const vf fd = CVT(Fa - Fb);                                  \
		const vf base = FMA(nomh, ss, mq);                           \
		BED(a, RQ, RX)                                               \
		OUT(a, (Fa + RND(FMA(nommh, fd, base + (Bq)))) + bed##a)     \
		BED(b, RQ, RX)                                               \
		OUT(b, (Fb + RND(FMA(ommh, fd, base - (Bq)))) + bed##b)      \
	}
	PAIR(1, 5, RQA, RXa, Rca, mX, Bx)
	PAIR(3, 7, RQA, RXa, Rca, mY, By)
	PAIR(2, 6, RQD, RXd, Rcd, m2, B2)
	PAIR(4, 8, RQD, RXd, Rcd, m4, B4)
#undef PAIR
#undef BED
#undef OUT
	(void)trt;
	(void)fast;
	/* the rest population takes the remainder: exact mass budget */
	STI(B[0] + m, (vi)((Hin + Sb) - Ps));
#undef F_
#undef U_
}

/* The smallest depth (metres) of the 3 x (LBM_VW + 2) stencil of the cells
 * n .. n + LBM_VW - 1, per lane (over its 3 x 3 neighbourhood). */
static inline vf STMIN(const struct lbm_kin *in, int n)
{
	const int W = in->W;
	const float *hA = in->hA;
	vf mn = MN(MN(LD(hA + n - 1 - W), LD(hA + n - W)), LD(hA + n + 1 - W));
	mn = MN(mn, MN(MN(LD(hA + n - 1), LD(hA + n)), LD(hA + n + 1)));
	return MN(mn, MN(MN(LD(hA + n - 1 + W), LD(hA + n + W)), LD(hA + n + 1 + W)));
}

/* The fast path for open-sky blocks (blk) whose stencil's smallest depth
 * is mn: none below h_pos, 1; and 2 where no bed step (dz, the largest
 * of the blocks) exceeds the depth either, so the step clamp is a no-op;
 * else 0. */
static inline int FASTK(vf mn, float hpos, float dz)
{
	if (ANY(LT(mn, SPL(hpos))))
		return 0;
	return ANY(LT(mn, SPL(dz))) ? 1 : 2;
}

/* The clamp mask cl of the cells n .. without the cells that the
 * finite-volume update of the hybrid (lbm_fv.c) takes over this step
 * (in->fv: 1 there, 0 elsewhere; NULL when there are none): their
 * kernel result is discarded, so its limiters did not act. */
static inline vm FVM(const struct lbm_kin *in, int n, vm cl)
{
	if (!in->fv)
		return cl;
	return cl & LT(LD(in->fv + n), SPL(0.5f));
}

/* The clamp map (lbm.cmap): one count per lane set in m, at its column
 * (cells n ..; rare: the caller tests the count first). */
#define CMAP VN(cmap_)
static inline void CMAP(const struct lbm_kin *in, int n, vm m)
{
	if (!in->cmap)
		return;
#if LBM_VW == 16
	for (unsigned b = (unsigned)m; b; b &= b - 1)
		in->cmap[(n + __builtin_ctz(b) - in->cbase) / WB_CLAMP_BLOCK]++;
#else
	for (int l = 0; l < LBM_VW; l++)
		if (m[l])
			in->cmap[(n + l - in->cbase) / WB_CLAMP_BLOCK]++;
#endif
}

#if LBM_VW == 8
/* Eight cells that hold no water, whose neighbours hold none and that
 * receive nothing: every input of the update is zero (bit patterns), so
 * its result is zero too (h = 0, all populations 0, no clamp). */
static inline int dry8(const struct lbm_kin *in, int n)
{
	const int W = in->W;
	const float *hA = in->hA;
	const int32_t *const *A = in->A;
	vi acc = LDI(A[0] + n);
	for (int dj = -1; dj <= 1; dj++)
		for (int di = -1; di <= 1; di++)
			acc |= (vi)LD(hA + n + di + dj * W);
	acc |= LDI(A[5] + n + 1) | LDI(A[6] + n + 1 + W) | LDI(A[7] + n + W) |
	       LDI(A[8] + n - 1 + W) | LDI(A[1] + n - 1) |
	       LDI(A[2] + n - 1 - W) | LDI(A[3] + n - W) | LDI(A[4] + n + 1 - W);
	for (int a = 1; a < LBM_Q; a++)
		acc |= LDI(A[a] + n);
	return !ANY(acc != 0);
}

/* What the 8-cell block at n needs: -1 nothing (dry8: it gives zeros),
 * 1 or 2 a fast path (blk says the block is open sky, and FASTK), 0 the
 * general update. */
static inline int block_kind(const struct lbm_kin *in, int n, int blk,
			     float bdz, int no_shortcuts, float hpos)
{
	if (no_shortcuts)
		return 0;
	const int f = blk ? FASTK(STMIN(in, n), hpos, bdz) : 0;
	return f ? f : dry8(in, n) ? -1 : 0;
}

/* One 8-cell block of the kind block_kind gave, in one piece. */
static __attribute__((noinline)) void
block8(const struct lbm_kin *in, const struct lbm_kout *out, int n,
       const struct lbm_kpar *k, int kind, long *ncl, int *nbad)
{
	vm cl = { 0 }, bd = { 0 };
	if (kind < 0) { /* dry and nothing arriving: the update gives zeros */
		const vi zi = { 0 };
		const vf zf = { 0 };
		for (int a = 0; a < LBM_Q; a++)
			STI(out->B[a] + n, zi);
		ST(out->hB + n, zf);
		return;
	}
	if (kind == 2 && k->trt)
		CELLF(in, n, out, n, k, &cl, &bd, 2, 1);
	else if (kind == 2)
		CELLF(in, n, out, n, k, &cl, &bd, 2, 0);
	else if (kind == 1 && k->trt)
		CELLF(in, n, out, n, k, &cl, &bd, 1, 1);
	else if (kind == 1)
		CELLF(in, n, out, n, k, &cl, &bd, 1, 0);
	else
		CELLG(in, n, out, n, k, &cl, &bd, k->trt);
	const vm m = FVM(in, n, cl);
	const int q = CNT(m);
	if (q) {
		*ncl += q;
		CMAP(in, n, m);
	}
	*nbad += CNT(bd);
}
#endif

/* nb full 8-cell blocks of a row from n0 (all but a tail of the row).
 * With 16 lanes a vector spans two blocks; where one of them is dry both
 * go to block8. (The arguments are copied to locals whose address does
 * not escape, so that the compiler knows the stores cannot change them.) */
static void ROW(const struct lbm_kin *inp, const struct lbm_kout *outp,
		const struct lbm_kpar *kp, const uint8_t *blk, const float *bdz,
		int nb, int n0, int no_shortcuts, long *ncl, int *nbad)
{
	enum { PER = LBM_VW / 8 };
	const struct lbm_kin in_ = *inp, *in = &in_;
	const struct lbm_kout out_ = *outp, *out = &out_;
	const struct lbm_kpar k_ = *kp, *k = &k_;
	const int trt = k->trt, nu = nb / PER;
	long c = 0;
	int bad = 0;
	for (int u = 0; u < nu; u++) {
		const int n = n0 + LBM_VW * u;
		int kd[PER], f = 0, split = 0;
		if (PER > 1 && !no_shortcuts && blk[PER * u] && blk[PER * u + 1])
			/* both blocks open sky: fast at once? */
			f = FASTK(STMIN(in, n), k->hpos,
				  bdz[PER * u] > bdz[PER * u + 1] ? bdz[PER * u] :
								    bdz[PER * u + 1]);
		if (!f) {
			f = 2;
			for (int h = 0; h < PER; h++) {
				kd[h] = block_kind(in, n + 8 * h, blk[PER * u + h],
						   bdz[PER * u + h], no_shortcuts,
						   k->hpos);
				split |= kd[h] < 0;
				f = kd[h] < f ? kd[h] : f;
			}
		}
		if (split) {
			for (int h = 0; h < PER; h++)
				block8(inp, outp, n + 8 * h, kp, kd[h], &c, &bad);
			continue;
		}
		vm cl, bd;
		if (f == 2 && trt)
			CELLF(in, n, out, n, k, &cl, &bd, 2, 1);
		else if (f == 2)
			CELLF(in, n, out, n, k, &cl, &bd, 2, 0);
		else if (f == 1 && trt)
			CELLF(in, n, out, n, k, &cl, &bd, 1, 1);
		else if (f == 1)
			CELLF(in, n, out, n, k, &cl, &bd, 1, 0);
		else
			CELLG(in, n, out, n, k, &cl, &bd, trt);
		const vm m = FVM(in, n, cl);
		const int q = CNT(m);
		if (q) {
			c += q;
			CMAP(in, n, m);
		}
		bad += CNT(bd);
	}
	for (int b = nu * PER; b < nb; b++) {
		const int n = n0 + 8 * b;
		block8(inp, outp, n, kp,
		       block_kind(in, n, blk[b], bdz[b], no_shortcuts, k->hpos), &c,
		       &bad);
	}
	*ncl += c;
	*nbad += bad;
}

#undef vf
#undef vi
#undef vu
#undef vm
#undef LD
#undef LDI
#undef ST
#undef STI
#undef SEL
#undef SELI
#undef MX
#undef MN
#undef FMA
#undef SQRT
#undef RND
#undef CVT
#undef SPL
#undef LT
#undef GT
#undef GE
#undef ANY
#undef CNT
#undef MNOT
#undef RCBRT
#undef IMX
#undef IMN
#undef RQA
#undef RQD
#undef DZ
#undef CELL
#undef CELLG
#undef CELLF
#undef ROW
#undef STMIN
#undef FASTK
#undef FVM
#undef CMAP
#undef VM_ALL
#undef VN
