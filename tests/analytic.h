/*
 * analytic.h - analytic solutions of the shallow-water equations for the
 * validation tests (tests/test_validation.c), after SWASHES: Delestre et
 * al., "SWASHES: a compilation of shallow water analytic solutions for
 * hydraulic and environmental studies", Int. J. Numer. Meth. Fluids 72
 * (2013). Section numbers below are the paper's.
 *
 * Everything is static and header-only (one test program includes it);
 * g = WB_GRAVITY; depths in m, discharges per unit width q in m^2/s.
 * Roots are found by bisection on brackets that are proven in the comments,
 * so every function returns a finite value for the documented inputs.
 */
#ifndef WB_TEST_ANALYTIC_H
#define WB_TEST_ANALYTIC_H

#include <math.h>

#include "wbake.h"

#define AN_PI 3.14159265358979323846

/* ---- steady flow over a bump (3.1.1 .. 3.1.4) ---------------------------- */

/* The bed of the bump cases: 25 m channel, max(0, 0.2 - 0.05 (x - 10)^2). */
static inline double an_bump_z(double x)
{
	double z = 0.2 - 0.05 * (x - 10.0) * (x - 10.0);
	return z > 0 ? z : 0;
}

/* Critical depth of discharge q: (q^2 / g)^(1/3). */
static inline double an_hc(double q)
{
	return cbrt(q * q / WB_GRAVITY);
}

/* Depth of head E (energy level h + q^2/(2 g h^2) + z) over bed z, on the
 * subcritical (super = 0: h >= hc) or supercritical (super = 1: h <= hc)
 * branch. f(h) = h + q^2/(2 g h^2) + z - E has f(hc) <= 0 whenever the
 * head can pass z (E >= 1.5 hc + z; where it cannot, hc is returned),
 * f -> +inf as h -> 0 and f(E - z) > 0, so each branch has one root in its
 * bracket. */
static inline double an_depth_head(double q, double E, double z, int super)
{
	double hc = an_hc(q), k = q * q / (2.0 * WB_GRAVITY);
	if (hc + k / (hc * hc) + z >= E)
		return hc;
	double lo = super ? 1e-9 : hc, hi = super ? hc : E - z;
	for (int it = 0; it < 200; it++) {
		double m = 0.5 * (lo + hi);
		double f = m + k / (m * m) + z - E;
		/* subcritical: f rises with h; supercritical: f falls */
		if ((f > 0) != (super != 0))
			hi = m;
		else
			lo = m;
	}
	return 0.5 * (lo + hi);
}

/* Head of a flow that is critical over the crest zM: 1.5 hc + zM. */
static inline double an_head_critical(double q, double zM)
{
	return 1.5 * an_hc(q) + zM;
}

/* Head of a flow of depth h over bed z. */
static inline double an_head(double q, double h, double z)
{
	return h + q * q / (2.0 * WB_GRAVITY * h * h) + z;
}

/* Momentum flux q^2/h + g h^2/2 (Rankine-Hugoniot for a steady jump:
 * equal on both sides). */
static inline double an_momentum(double q, double h)
{
	return q * q / h + 0.5 * WB_GRAVITY * h * h;
}

/* Transcritical flow with a hydraulic jump (3.1.4): critical at the crest
 * (x = 10), supercritical behind it until the jump, subcritical after it
 * with the head Ed of the outflow depth hout (bed 0 there). The jump stands
 * where the momentum fluxes of the two branches are equal. The subcritical
 * branch exists only where z <= Ed - 1.5 hc (an_depth_head returns hc
 * above that): at that point on the lee slope it is critical, and the
 * supercritical branch, shallower, carries more momentum; at the outlet
 * (x = 25) it carries less whenever a jump exists (hout above the conjugate
 * depth of the supercritical outflow). Bisection between the two; returns
 * the jump position (m), or 25 when there is none. */
static inline double an_jump_x(double q, double hout)
{
	double Eu = an_head_critical(q, 0.2), Ed = an_head(q, hout, 0);
	double zl = Ed - 1.5 * an_hc(q);
	double lo = zl < 0.2 ? 10.0 + sqrt((0.2 - (zl > 0 ? zl : 0)) / 0.05) : 10.0;
	double hi = 25.0;
	for (int it = 0; it < 200; it++) {
		double m = 0.5 * (lo + hi), z = an_bump_z(m);
		double h1 = an_depth_head(q, Eu, z, 1), h2 = an_depth_head(q, Ed, z, 0);
		/* upstream of the jump the supercritical side pushes harder */
		if (an_momentum(q, h1) > an_momentum(q, h2))
			lo = m;
		else
			hi = m;
	}
	return 0.5 * (lo + hi);
}

/* Exact depth of the three bump cases at x:
 *   kind 0 subcritical (3.1.1): head of hout everywhere;
 *   kind 1 transcritical without shock (3.1.3): critical at the crest,
 *          subcritical before it, supercritical after;
 *   kind 2 transcritical with shock (3.1.4): as 1 up to the jump xs
 *          (an_jump_x), subcritical with the head of hout after it. */
static inline double an_bump_depth(int kind, double q, double hout, double xs,
				   double x)
{
	double z = an_bump_z(x);
	if (kind == 0)
		return an_depth_head(q, an_head(q, hout, 0), z, 0);
	double Eu = an_head_critical(q, 0.2);
	if (x <= 10.0)
		return an_depth_head(q, Eu, z, 0);
	if (kind == 1 || x < xs)
		return an_depth_head(q, Eu, z, 1);
	return an_depth_head(q, an_head(q, hout, 0), z, 0);
}

/* ---- MacDonald's 1D channels with Manning friction (3.2.2, 3.2.3) -------- */

/* Exact depth of the 1000 m channel, q = 2 m^2/s: subcritical (super = 0)
 * (4/g)^(1/3) (1 + exp(-16 (x/1000 - 1/2)^2) / 2), or supercritical
 * (4/g)^(1/3) (1 - exp(-36 (x/1000 - 1/2)^2) / 5). */
static inline double an_mcd_h(int super, double x)
{
	double s = x / 1000.0 - 0.5, h1 = cbrt(4.0 / WB_GRAVITY);
	return super ? h1 * (1.0 - 0.2 * exp(-36.0 * s * s))
		     : h1 * (1.0 + 0.5 * exp(-16.0 * s * s));
}

static inline double an_mcd_dh(int super, double x)
{
	double s = x / 1000.0 - 0.5, h1 = cbrt(4.0 / WB_GRAVITY);
	return super ? h1 * 0.2 * 72.0 * s * exp(-36.0 * s * s) / 1000.0
		     : -h1 * 0.5 * 32.0 * s * exp(-16.0 * s * s) / 1000.0;
}

/* Bed slope that makes h the steady solution with discharge q and Manning
 * n: z' = -(1 - q^2/(g h^3)) h' - n^2 q^2 / h^(10/3). */
static inline double an_mcd_dz(int super, double q, double n, double x)
{
	double h = an_mcd_h(super, x), dh = an_mcd_dh(super, x);
	return -(1.0 - q * q / (WB_GRAVITY * h * h * h)) * dh -
	       n * n * q * q / pow(h, 10.0 / 3.0);
}

/* Bed elevation with z(1000) = 0: the integral of -z' from x to 1000
 * (composite Simpson, 2000 intervals per 1000 m: error far below 1e-9 m). */
static inline double an_mcd_z(int super, double q, double n, double x)
{
	int m = (int)ceil((1000.0 - x) / 0.5);
	if (m < 2)
		m = 2;
	if (m & 1)
		m++;
	double hstep = (1000.0 - x) / m, s = 0;
	for (int k = 0; k <= m; k++) {
		double w = (k == 0 || k == m) ? 1 : (k & 1) ? 4 : 2;
		s += w * an_mcd_dz(super, q, n, x + k * hstep);
	}
	return -s * hstep / 3.0;
}

/* ---- dam breaks (4.1.1 Ritter, 4.1.2 Stoker) ----------------------------- */

/* Stoker middle-state celerity cm: root of
 * -8 g hr cm^2 (sqrt(g hl) - cm)^2 + (cm^2 - g hr)^2 (cm^2 + g hr) = 0
 * between sqrt(g hr) (where it is negative) and sqrt(g hl) (positive). */
static inline double an_stoker_cm(double hl, double hr)
{
	const double g = WB_GRAVITY;
	double lo = sqrt(g * hr), hi = sqrt(g * hl);
	for (int it = 0; it < 200; it++) {
		double cm = 0.5 * (lo + hi), c2 = cm * cm;
		double a = sqrt(g * hl) - cm;
		double f = -8.0 * g * hr * c2 * a * a +
			   (c2 - g * hr) * (c2 - g * hr) * (c2 + g * hr);
		if (f < 0)
			lo = cm;
		else
			hi = cm;
	}
	return 0.5 * (lo + hi);
}

/* Shock (Stoker) position at time t of a dam at x0. */
static inline double an_stoker_front(double x0, double t, double hl, double hr)
{
	double cl = sqrt(WB_GRAVITY * hl), cm = an_stoker_cm(hl, hr);
	return x0 + t * (2.0 * cm * cm * (cl - cm)) / (cm * cm - WB_GRAVITY * hr);
}

/* Depth at x, time t > 0 of a dam at x0 holding hl against hr (0: dry bed,
 * Ritter; > 0: wet bed, Stoker), flat frictionless bed. */
static inline double an_dam_depth(double x, double x0, double t, double hl,
				  double hr)
{
	const double g = WB_GRAVITY;
	double cl = sqrt(g * hl);
	if (x <= x0 - t * cl)
		return hl;
	if (hr <= 0) {
		if (x >= x0 + 2.0 * t * cl)
			return 0.0;
		double a = cl - (x - x0) / (2.0 * t);
		return 4.0 / (9.0 * g) * a * a;
	}
	double cm = an_stoker_cm(hl, hr);
	if (x <= x0 + t * (2.0 * cl - 3.0 * cm)) {
		double a = cl - (x - x0) / (2.0 * t);
		return 4.0 / (9.0 * g) * a * a;
	}
	if (x <= an_stoker_front(x0, t, hl, hr))
		return cm * cm / g;
	return hr;
}

/* ---- Thacker's radially symmetric paraboloid (4.2.1) --------------------- */

/* Bowl z(r) = -h0 (1 - r^2/a^2); the water's surface is a paraboloid that
 * breathes with period 2 pi / omega, omega = sqrt(8 g h0) / a, starting at
 * rest with shoreline radius r0: A = (a^2 - r0^2) / (a^2 + r0^2),
 * c(t) = 1 - A cos(omega t),
 *   h(r, t) = h0 (sqrt(1 - A^2) / c - 1 - r^2/a^2 ((1 - A^2)/c^2 - 1)) - z(r)
 * where positive, else 0. */
struct an_thacker {
	double a, r0, h0, A, omega;
};

static inline struct an_thacker an_thacker_init(double a, double r0, double h0)
{
	struct an_thacker t = { a, r0, h0, 0, 0 };
	t.A = (a * a - r0 * r0) / (a * a + r0 * r0);
	t.omega = sqrt(8.0 * WB_GRAVITY * h0) / a;
	return t;
}

static inline double an_thacker_z(const struct an_thacker *T, double r)
{
	return -T->h0 * (1.0 - r * r / (T->a * T->a));
}

static inline double an_thacker_h(const struct an_thacker *T, double r,
				  double t)
{
	double c = 1.0 - T->A * cos(T->omega * t), s = 1.0 - T->A * T->A;
	double eta = T->h0 * (sqrt(s) / c - 1.0 -
			      r * r / (T->a * T->a) * (s / (c * c) - 1.0));
	double h = eta - an_thacker_z(T, r);
	return h > 0 ? h : 0;
}

/* Radius at which the exact depth equals hthr >= 0 (the shoreline for 0):
 * the depth is h0 (sqrt(s)/c - r^2 s / (a^2 c^2)), falling in r. */
static inline double an_thacker_radius(const struct an_thacker *T, double t,
				       double hthr)
{
	double c = 1.0 - T->A * cos(T->omega * t), s = 1.0 - T->A * T->A;
	double r2 = (sqrt(s) / c - hthr / T->h0) * T->a * T->a * c * c / s;
	return r2 > 0 ? sqrt(r2) : 0;
}

#endif
