/*
 * report.c - OUTDIR/report.html (report.h says what the page holds).
 *
 * The page is built in one growing buffer (struct sb) with fixed number
 * formats; nothing in it depends on the clock, the machine or the thread
 * count. The pack is read back from disk for its size, hash and page
 * counts, so the page describes the file that was written. The residual
 * plot is SVG drawn here: log10 of the residual against the step.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preview.h"
#include "report.h"
#include "util.h"
#include "wtp.h"

/* ---- a growing string -------------------------------------------------- */

struct sb {
	char *s;
	size_t n, cap;
	int oom;
};

static void sb_put(struct sb *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *t = realloc(b->s, cap);
		if (!t) {
			b->oom = 1;
			return;
		}
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, len);
	b->n += len;
	b->s[b->n] = 0;
}

static void sb_str(struct sb *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static void sb_printf(struct sb *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	if ((size_t)k < sizeof buf) {
		sb_put(b, buf, (size_t)k);
		return;
	}
	char *big = malloc((size_t)k + 1);
	if (!big) {
		b->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)k + 1, fmt, ap);
	va_end(ap);
	sb_put(b, big, (size_t)k);
	free(big);
}

/* Escaped text. */
static void sb_esc(struct sb *b, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '&': sb_str(b, "&amp;"); break;
		case '<': sb_str(b, "&lt;"); break;
		case '>': sb_str(b, "&gt;"); break;
		case '"': sb_str(b, "&quot;"); break;
		case '\'': sb_str(b, "&#39;"); break;
		default: sb_put(b, s, 1); break;
		}
}

char *report_escape(const char *s)
{
	struct sb b = { 0 };
	sb_put(&b, "", 0);
	sb_esc(&b, s);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* ---- small helpers ----------------------------------------------------- */

static const char *base_name(const char *p)
{
	if (!p)
		return "";
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static const char *solver_name(const struct report_in *in)
{
	if (in->solver)
		return in->solver;
	return in->sc->sim.solver == WB_SOLVER_SWE ? "swe" : "lbm";
}

/* One table row: a header cell and an escaped value. */
static void row(struct sb *b, const char *key, const char *val)
{
	sb_str(b, "<tr><th>");
	sb_esc(b, key);
	sb_str(b, "</th><td>");
	sb_esc(b, val);
	sb_str(b, "</td></tr>\n");
}

static void rowf(struct sb *b, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void rowf(struct sb *b, const char *key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	row(b, key, buf);
}

static const char *edge_kind(enum wb_edge_kind k)
{
	switch (k) {
	case WB_EDGE_WALL: return "wall";
	case WB_EDGE_OPEN: return "open";
	case WB_EDGE_INFLOW: return "inflow";
	case WB_EDGE_LEVEL: return "level";
	case WB_EDGE_PERIODIC: return "periodic";
	}
	return "?";
}

static const char *source_kind(enum wb_source_kind k)
{
	switch (k) {
	case WB_SRC_RIVER: return "river";
	case WB_SRC_SPRING: return "spring";
	case WB_SRC_LAKE: return "lake";
	case WB_SRC_OCEAN: return "ocean";
	case WB_SRC_RAIN: return "rain";
	case WB_SRC_SINK: return "sink";
	}
	return "?";
}

static const char *mat_kind(enum wb_material_kind k)
{
	return k == WB_MAT_OCEAN ? "ocean" : k == WB_MAT_LAKE ? "lake" : "river";
}

/* "auto" for an unset (0) scene value, else the number. */
static void scene_val(char *buf, size_t n, double v, const char *unit)
{
	if (v > 0)
		snprintf(buf, n, "%.6g %s", v, unit);
	else
		snprintf(buf, n, "auto");
}

/* ---- sections ---------------------------------------------------------- */

static void sec_scene(struct sb *b, const struct report_in *in)
{
	const struct wb_scene *sc = in->sc;
	const struct wb_raster *r = in->r;
	sb_str(b, "<section id=\"scene\"><h2>Scene</h2>\n<table class=\"kv\">\n");
	row(b, "name", sc->name ? sc->name : "");
	row(b, "scene file", base_name(sc->file));
	if (r && r->nx > 0) {
		rowf(b, "grid", "%d x %d cells at %.6g m (%.6g x %.6g m)", r->nx,
		     r->ny, r->dx, r->nx * r->dx, r->ny * r->dx);
		rowf(b, "origin", "%.6g, %.6g m", r->origin[0], r->origin[1]);
		double lo = INFINITY, hi = -INFINITY;
		for (size_t k = 0; k < (size_t)r->nx * r->ny; k++) {
			lo = fmin(lo, r->z[k]);
			hi = fmax(hi, r->z[k]);
		}
		rowf(b, "terrain elevation", "%.2f to %.2f m", lo, hi);
		rowf(b, "inflow", "%.6g m\xc2\xb3/s (sources and edges)",
		     r->total_inflow);
	}
	static const char *const fmts[3] = { "png", "r16", "r32f" };
	rowf(b, "heightmap", "%s (%s, scale %.6g m, offset %.6g m)",
	     base_name(sc->terrain.heightmap),
	     fmts[sc->terrain.format <= WB_HM_R32F ? sc->terrain.format : 0],
	     sc->terrain.height_scale, sc->terrain.height_offset);
	static const char *const side[4] = { "west", "east", "north", "south" };
	char buf[256];
	int o = 0;
	for (int k = 0; k < 4; k++)
		o += snprintf(buf + o, sizeof buf - (size_t)o, "%s%s %s", k ? ", " : "",
			      side[k], edge_kind(sc->edges[k].kind));
	row(b, "boundaries", buf);
	rowf(b, "output", "%d LODs, distance field clamped at %.6g m",
	     sc->output.lods, sc->output.distance_max);
	sb_str(b, "</table>\n");

	sb_printf(b, "<h3>Sources (%d)</h3>\n", sc->n_sources);
	if (sc->n_sources) {
		sb_str(b, "<table><tr><th>#</th><th>type</th><th>name</th><th>material</th><th>amount</th></tr>\n");
		for (int k = 0; k < sc->n_sources; k++) {
			const struct wb_source *s = &sc->sources[k];
			char amt[128] = "";
			switch (s->kind) {
			case WB_SRC_RIVER:
			case WB_SRC_SPRING:
				snprintf(amt, sizeof amt, "%.6g m\xc2\xb3/s", s->discharge);
				break;
			case WB_SRC_LAKE:
			case WB_SRC_OCEAN:
				snprintf(amt, sizeof amt, "level %.6g m", s->level);
				break;
			case WB_SRC_RAIN:
				snprintf(amt, sizeof amt, "%.6g mm/h", s->rate_mm_h);
				break;
			case WB_SRC_SINK:
				if (s->drain_all)
					snprintf(amt, sizeof amt, "drains all");
				else
					snprintf(amt, sizeof amt, "-%.6g m\xc2\xb3/s", s->discharge);
				break;
			}
			const char *mat = "";
			if (s->material >= 0 && s->material < sc->n_materials)
				mat = sc->materials[s->material].name;
			sb_printf(b, "<tr><td>%d</td><td>%s</td><td>", k,
				  source_kind(s->kind));
			sb_esc(b, s->name ? s->name : "");
			sb_str(b, "</td><td>");
			sb_esc(b, mat ? mat : "");
			sb_str(b, "</td><td>");
			sb_esc(b, amt);
			sb_str(b, "</td></tr>\n");
		}
		sb_str(b, "</table>\n");
	}
	sb_printf(b, "<h3>Materials (%d)</h3>\n", sc->n_materials);
	if (sc->n_materials) {
		sb_str(b, "<table><tr><th>id</th><th>name</th><th>kind</th><th>waves: amplitude, frequency, speed</th></tr>\n");
		for (int k = 0; k < sc->n_materials; k++) {
			const struct wb_material *m = &sc->materials[k];
			sb_printf(b, "<tr><td>%d</td><td>", m->id);
			sb_esc(b, m->name ? m->name : "");
			sb_printf(b, "</td><td>%s</td><td>%.6g m, %.6g Hz, %.6g m/s</td></tr>\n",
				  mat_kind(m->kind), m->amplitude, m->frequency, m->speed);
		}
		sb_str(b, "</table>\n");
	}
	sb_printf(b, "<h3>Blockers (%d) and modifiers (%d)</h3>\n",
		  sc->n_blockers, sc->n_modifiers);
	if (sc->n_blockers || sc->n_modifiers) {
		sb_str(b, "<ul>\n");
		for (int k = 0; k < sc->n_blockers; k++) {
			sb_str(b, "<li>blocker <b>");
			sb_esc(b, sc->blockers[k].name ? sc->blockers[k].name : "");
			sb_printf(b, "</b>: water passes below %.6g m, top %.6g m</li>\n",
				  sc->blockers[k].bottom, sc->blockers[k].top);
		}
		for (int k = 0; k < sc->n_modifiers; k++) {
			const struct wb_modifier *m = &sc->modifiers[k];
			sb_str(b, "<li>modifier <b>");
			sb_esc(b, m->name ? m->name : "");
			sb_printf(b, "</b>: toward (%.6g, %.6g) m/s at %.6g /s</li>\n",
				  m->target[0], m->target[1], m->strength);
		}
		sb_str(b, "</ul>\n");
	}
	sb_str(b, "</section>\n");
}

static void sec_solver(struct sb *b, const struct report_in *in)
{
	const struct wb_sim *s = &in->sc->sim;
	const struct wb_solve_report *rep = in->rep;
	const char *sv = solver_name(in);
	int swe = !strcmp(sv, "swe");
	char a[64];
	sb_str(b, "<section id=\"solver\"><h2>Solver and parameters</h2>\n");
	sb_printf(b, "<p>%s on the %s. ", swe ? "SWE (staggered shallow water, Chentanez &amp; M&uuml;ller 2010)" :
		  "LBM-SWE (D2Q9 lattice Boltzmann shallow water, Zhou 2004)",
		  in->device && !strcmp(in->device, "opencl") ? "OpenCL device" : "CPU");
	if (!rep)
		sb_str(b, "Not run.</p>\n");
	else if (in->steps_forced > 0)
		sb_printf(b, "Ran exactly %ld steps (--steps): no convergence stop.</p>\n",
			  in->steps_forced);
	else
		sb_printf(b, "%s after %ld steps (%.6g s simulated); last window residual %.3g against a tolerance of %.3g.</p>\n",
			  rep->converged ? "<b class=\"ok\">Steady</b>" :
			  "<b class=\"warn\">Stopped at the step cap, not steady</b>",
			  rep->steps, rep->sim_time, rep->residual,
			  s->tolerance > 0 ? s->tolerance : 1e-4);
	sb_str(b, "<table><tr><th>parameter</th><th>scene</th><th>used</th></tr>\n");
#define PARAM(name, sceneval, usedfmt, ...) do { \
		sb_str(b, "<tr><th>" name "</th><td>"); sb_esc(b, sceneval); \
		sb_printf(b, "</td><td>" usedfmt "</td></tr>\n", __VA_ARGS__); } while (0)
	if (rep) {
		scene_val(a, sizeof a, s->dt, "s");
		PARAM("time step dt", a, "%.6g s", rep->dt);
		if (!swe) {
			scene_val(a, sizeof a, s->lattice_speed, "m/s");
			PARAM("lattice speed e = dx/dt", a, "%.6g m/s", rep->lattice_speed);
			PARAM("relaxation time tau", "(from viscosity)", "%.6g", rep->tau);
		}
	}
	snprintf(a, sizeof a, "%.6g", s->manning);
	PARAM("Manning n", a, "%.6g s/m^(1/3)", s->manning);
	snprintf(a, sizeof a, "%.6g m\xc2\xb2/s", s->viscosity);
	PARAM("viscosity", a, "%.6g m\xc2\xb2/s", s->viscosity);
	snprintf(a, sizeof a, "%ld", s->max_steps);
	PARAM("step cap", s->max_steps > 0 ? a : "auto", "%ld", in->steps_forced > 0 ?
	      in->steps_forced : s->max_steps > 0 ? s->max_steps : 100000);
	snprintf(a, sizeof a, "%ld steps", s->window);
	PARAM("convergence window", s->window > 0 ? a : "auto", "%ld steps",
	      s->window > 0 ? s->window : 200);
	snprintf(a, sizeof a, "%.6g", s->tolerance);
	PARAM("tolerance", s->tolerance > 0 ? a : "auto", "%.6g",
	      s->tolerance > 0 ? s->tolerance : 1e-4);
	snprintf(a, sizeof a, "%.6g m", s->dry_depth);
	PARAM("dry below", a, "%.6g m", s->dry_depth);
	if (swe) {
		PARAM("advection", s->maccormack ? "MacCormack" : "semi-Lagrangian",
		      "%s", s->maccormack ? "MacCormack" : "semi-Lagrangian");
		snprintf(a, sizeof a, "%llu", s->seed);
		PARAM("particle seed", a, "%llu", s->seed);
	}
#undef PARAM
	sb_str(b, "</table>\n</section>\n");
}

static void sec_adjust(struct sb *b, const struct report_in *in)
{
	sb_str(b, "<section id=\"adjustments\"><h2>Automatic adjustments and warnings</h2>\n");
	int n = 0;
	if (in->diags)
		for (int k = 0; k < in->diags->n; k++)
			n += in->diags->v[k].sev != WB_SEV_ERROR;
	if (in->rep && in->rep->clamped)
		sb_printf(b, "<p class=\"warn\">%ld cell-steps were clamped by the stability checks.</p>\n",
			  in->rep->clamped);
	else if (in->rep)
		sb_str(b, "<p>No cell was clamped by the stability checks.</p>\n");
	if (!n) {
		sb_str(b, "<p>None: the bake reported no note and no warning.</p>\n</section>\n");
		return;
	}
	sb_str(b, "<ul class=\"diags\">\n");
	char buf[2048];
	for (int k = 0; k < in->diags->n; k++) {
		const struct wb_diag *g = &in->diags->v[k];
		if (g->sev == WB_SEV_ERROR)
			continue;
		wb_diag_format(g, buf, sizeof buf);
		sb_printf(b, "<li class=\"%s\">", g->sev == WB_SEV_WARNING ? "warn" : "note");
		sb_esc(b, buf);
		sb_str(b, "</li>\n");
	}
	sb_str(b, "</ul>\n</section>\n");
}

static void sec_residual(struct sb *b, const struct report_in *in)
{
	sb_str(b, "<section id=\"residual\"><h2>Convergence: residual per window</h2>\n");
	double tol = in->sc->sim.tolerance > 0 ? in->sc->sim.tolerance : 1e-4;
	int n = 0;
	for (int k = 0; k < in->n_res; k++)
		n += in->res_value[k] > 0 && isfinite(in->res_value[k]);
	if (!n) {
		sb_str(b, in->steps_forced > 0 ?
		       "<p>No convergence windows: the run had a fixed step count (--steps).</p>\n" :
		       "<p>No residual was recorded (the run ended before a second window).</p>\n");
		sb_str(b, "</section>\n");
		return;
	}
	double lo = log10(tol), hi = log10(tol);
	long smax = 1;
	for (int k = 0; k < in->n_res; k++) {
		double v = in->res_value[k];
		if (!(v > 0) || !isfinite(v))
			continue;
		lo = fmin(lo, log10(v));
		hi = fmax(hi, log10(v));
		smax = in->res_step[k] > smax ? in->res_step[k] : smax;
	}
	lo = floor(lo);
	hi = ceil(hi);
	if (hi <= lo)
		hi = lo + 1;
	const int W = 720, H = 280, L = 70, R = 20, T = 16, B = 44;
	const double pw = W - L - R, ph = H - T - B;
	sb_printf(b, "<svg class=\"plot\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"residual per window\">\n",
		  W, H, W, H);
	sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\" stroke=\"#888\"/>\n",
		  L, T, pw, ph);
	/* decades */
	for (int e = (int)lo; e <= (int)hi; e++) {
		double y = T + ph * (hi - e) / (hi - lo);
		sb_printf(b, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			  "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n",
			  L, L + pw, y, y, L - 6, y + 4, e);
	}
	/* steps: about 6 round ticks */
	double st = 1;
	{
		double raw = smax / 6.0, p = pow(10, floor(log10(raw > 1 ? raw : 1)));
		double m = raw / p;
		st = (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
	}
	for (int t = 0; t * st <= smax + 1e-9; t++) {
		double x = L + pw * t * st / smax;
		sb_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.1f\" stroke=\"#888\"/>"
			  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
			  x, x, T + (int)ph, T + ph + 5, x, T + ph + 19, t * st);
	}
	double ty = T + ph * (hi - log10(tol)) / (hi - lo);
	sb_printf(b, "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c33\" stroke-dasharray=\"6 4\"/>"
		  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#c33\">tolerance %.3g</text>\n",
		  L, L + pw, ty, ty, L + pw - 4, ty - 5, tol);
	sb_str(b, "<polyline fill=\"none\" stroke=\"#1f5fa8\" stroke-width=\"2\" points=\"");
	for (int k = 0; k < in->n_res; k++) {
		double v = in->res_value[k];
		if (!(v > 0) || !isfinite(v))
			continue;
		sb_printf(b, "%.1f,%.1f ", L + pw * in->res_step[k] / smax,
			  T + ph * (hi - log10(v)) / (hi - lo));
	}
	sb_str(b, "\"/>\n");
	for (int k = 0; k < in->n_res; k++) {
		double v = in->res_value[k];
		if (!(v > 0) || !isfinite(v))
			continue;
		sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#1f5fa8\"><title>step %ld: %.3g</title></circle>\n",
			  L + pw * in->res_step[k] / smax,
			  T + ph * (hi - log10(v)) / (hi - lo), in->res_step[k], v);
	}
	sb_printf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">solver step</text>\n",
		  L + pw / 2, H - 6);
	sb_printf(b, "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">relative change per window</text>\n",
		  T + ph / 2);
	sb_str(b, "</svg>\n");
	sb_printf(b, "<p>%d windows. The residual is the relative change of the window-mean flow between two windows; the bake is steady when it falls below the tolerance (and the stored water stops changing).</p>\n",
		  n);
	sb_str(b, "<details><summary>values</summary><table><tr><th>step</th><th>residual</th></tr>\n");
	for (int k = 0; k < in->n_res; k++)
		sb_printf(b, "<tr><td>%ld</td><td>%.4g</td></tr>\n", in->res_step[k],
			  in->res_value[k]);
	sb_str(b, "</table></details>\n</section>\n");
}

static void sec_mass(struct sb *b, const struct report_in *in)
{
	const struct wb_solve_report *r = in->rep;
	if (!r)
		return;
	sb_str(b, "<section id=\"mass\"><h2>Mass balance</h2>\n<table class=\"kv num\">\n");
	rowf(b, "water at the start", "%.6g m\xc2\xb3", r->vol_initial);
	rowf(b, "+ entered (sources, edges)", "%.6g m\xc2\xb3", r->vol_in);
	rowf(b, "- left (sinks, edges)", "%.6g m\xc2\xb3", r->vol_out);
	rowf(b, "= water at the end", "%.6g m\xc2\xb3", r->vol_final);
	if (r->vol_particles > 0)
		rowf(b, "+ in flight (waterfall particles)", "%.6g m\xc2\xb3",
		     r->vol_particles);
	double gap = r->vol_initial + r->vol_in - r->vol_out - r->vol_final -
		     r->vol_particles;
	rowf(b, "gap", "%.3g m\xc2\xb3", gap);
	rowf(b, "relative error", "%.3g", r->balance_error);
	sb_str(b, "</table>\n");
	sb_printf(b, "<p class=\"%s\">%s</p>\n", r->balance_error <= 1e-3 ? "ok" : "warn",
		  r->balance_error <= 1e-3 ? "The balance closes (relative error at most 1e-3)." :
		  "The balance does not close: water was created or lost.");
	sb_str(b, "</section>\n");
}

static void sec_falls(struct sb *b, const struct report_in *in)
{
	sb_str(b, "<section id=\"waterfalls\"><h2>Waterfalls</h2>\n");
	const struct wb_state *st = in->st;
	if (strcmp(solver_name(in), "swe")) {
		sb_str(b, "<p>The LBM solver does not turn falls into particles; bake with the SWE solver to list waterfalls.</p>\n</section>\n");
		return;
	}
	if (!st || st->n_falls == 0) {
		sb_str(b, "<p>None: no water falls over a terrain drop.</p>\n</section>\n");
		return;
	}
	sb_printf(b, "<p>%d waterfall%s (SWE particles).</p>\n", st->n_falls,
		  st->n_falls == 1 ? "" : "s");
	sb_str(b, "<table class=\"num\"><tr><th>#</th><th>x (m)</th><th>y (m)</th><th>width (m)</th><th>flux (m\xc2\xb3/s)</th><th>drop (m)</th></tr>\n");
	for (int k = 0; k < st->n_falls; k++) {
		const struct wb_waterfall *f = &st->falls[k];
		sb_printf(b, "<tr><td>%d</td><td>%.2f</td><td>%.2f</td><td>%.3g</td><td>%.4g</td><td>%.3g</td></tr>\n",
			  k, f->x, f->y, f->width, f->flux, f->drop);
	}
	sb_str(b, "</table>\n</section>\n");
}

static enum wb_status sec_pack(struct sb *b, const struct report_in *in,
			       struct wb_diags *d)
{
	if (!in->pack_path)
		return WB_OK;
	unsigned char *buf = NULL;
	size_t len = 0;
	enum wb_status s = wb_read_file(in->pack_path, &buf, &len, d);
	if (s != WB_OK)
		return s;
	wtp_pack p;
	wtp_error werr;
	if (wtp_open(&p, buf, len, 0, &werr) != WTP_OK) {
		s = wb_fail(d, WB_EINPUT, in->pack_path, "report: %s", werr.msg);
		free(buf);
		return s;
	}
	unsigned char h[32];
	char hex[65];
	wb_sha256(buf, len, h);
	wb_hex(h, 32, hex);
	sb_str(b, "<section id=\"pack\"><h2>Tile pack</h2>\n<table class=\"kv\">\n");
	row(b, "file", base_name(in->pack_path));
	rowf(b, "size", "%zu bytes (%.2f MiB)", len, len / 1048576.0);
	sb_printf(b, "<tr><th>SHA-256</th><td><code>%s</code></td></tr>\n", hex);
	char lay[256] = "";
	size_t o = 0;
	for (uint32_t k = 0; k < p.n_layers; k++) {
		wtp_layer l;
		if (wtp_layer_get(&p, k, &l) == WTP_OK && o < sizeof lay)
			o += (size_t)snprintf(lay + o, sizeof lay - o, "%s%s", k ? ", " : "",
					      wtp_layer_name(l.id));
	}
	row(b, "layers", lay);
	rowf(b, "pages", "%u stored", p.n_pages);
	sb_str(b, "</table>\n<h3>Pages per LOD</h3>\n");
	sb_str(b, "<table class=\"num\"><tr><th>LOD</th><th>pixels</th><th>m/px</th><th>page grid</th><th>data</th><th>flat</th><th>empty</th></tr>\n");
	long td = 0, tf = 0, te = 0;
	for (uint32_t k = 0; k < p.n_lods; k++) {
		wtp_lod L;
		if (wtp_lod_get(&p, k, &L) != WTP_OK)
			continue;
		long all = (long)L.px * L.py, e = all - L.n_flat - L.n_data;
		td += L.n_data;
		tf += L.n_flat;
		te += e;
		sb_printf(b, "<tr><td>%u</td><td>%u x %u</td><td>%.6g</td><td>%u x %u</td><td>%u</td><td>%u</td><td>%ld</td></tr>\n",
			  k, L.nx, L.ny, L.dx, L.px, L.py, L.n_data, L.n_flat, e);
	}
	sb_printf(b, "<tr class=\"total\"><td colspan=\"4\">all LODs</td><td>%ld</td><td>%ld</td><td>%ld</td></tr>\n",
		  td, tf, te);
	sb_str(b, "</table>\n<p>DATA pages hold pixels; FLAT pages are one height (no pixels); EMPTY pages are dry.</p>\n</section>\n");
	free(buf);
	return WB_OK;
}

/* Width and height from a PNG's IHDR; 0 when not a PNG. */
static int png_size(const char *path, int *w, int *h)
{
	unsigned char hd[24];
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(hd, 1, sizeof hd, f);
	fclose(f);
	if (n < 24 || memcmp(hd, "\x89PNG\r\n\x1a\n", 8))
		return 0;
	*w = (hd[16] << 24) | (hd[17] << 16) | (hd[18] << 8) | hd[19];
	*h = (hd[20] << 24) | (hd[21] << 16) | (hd[22] << 8) | hd[23];
	return *w > 0 && *h > 0;
}

static void sec_previews(struct sb *b, const struct report_in *in)
{
	sb_str(b, "<section id=\"previews\"><h2>Previews</h2>\n");
	int shown[PREVIEW_COUNT] = { 0 }, ws[PREVIEW_COUNT], hs[PREVIEW_COUNT], n = 0;
	for (int k = 0; k < PREVIEW_COUNT; k++) {
		char name[64];
		snprintf(name, sizeof name, "preview/%s.png", preview_name((enum preview_kind)k));
		char *path = in->outdir ? wb_path_join(in->outdir, name) : NULL;
		if (path && png_size(path, &ws[k], &hs[k]))
			shown[k] = 1, n++;
		free(path);
	}
	if (!n) {
		sb_str(b, "<p>No previews were written.</p>\n</section>\n");
		return;
	}
	sb_str(b, "<p>Water over the shaded terrain. Click a picture to see it full size; click again to close.</p>\n<div class=\"grid\">\n");
	for (int k = 0; k < PREVIEW_COUNT; k++) {
		if (!shown[k])
			continue;
		const char *nm = preview_name((enum preview_kind)k);
		sb_printf(b, "<figure><a href=\"#z-%s\"><img src=\"preview/%s.png\" width=\"%d\" height=\"%d\" alt=\"%s\"></a><figcaption>%s</figcaption></figure>\n",
			  nm, nm, ws[k], hs[k], preview_title((enum preview_kind)k),
			  preview_title((enum preview_kind)k));
	}
	sb_str(b, "</div>\n");
	for (int k = 0; k < PREVIEW_COUNT; k++) {
		if (!shown[k])
			continue;
		const char *nm = preview_name((enum preview_kind)k);
		sb_printf(b, "<a class=\"lb\" id=\"z-%s\" href=\"#previews\"><img src=\"preview/%s.png\" width=\"%d\" height=\"%d\" alt=\"%s, full size\"></a>\n",
			  nm, nm, ws[k], hs[k], preview_title((enum preview_kind)k));
	}
	sb_str(b, "</section>\n");
}

static const char css[] =
	"body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;background:#f4f3ef;margin:0}\n"
	"main{max-width:1120px;margin:0 auto;padding:18px 24px 60px}\n"
	"h1{font-size:26px;margin:8px 0 2px}h2{font-size:19px;margin:28px 0 8px;border-bottom:2px solid #d8d4c8;padding-bottom:3px}\n"
	"h3{font-size:15px;margin:16px 0 6px}\n"
	"nav a{margin-right:12px;color:#1f5fa8}\n"
	"table{border-collapse:collapse;background:#fff;margin:6px 0}\n"
	"th,td{padding:3px 10px;border:1px solid #ddd;text-align:left;vertical-align:top}\n"
	"table.kv th{background:#f0efe9;font-weight:600;width:210px}\n"
	"tr:nth-child(even) td{background:#fafaf7}\n"
	"table.num td{font-variant-numeric:tabular-nums}\n"
	"tr.total td{font-weight:600}\n"
	".ok{color:#17703a}.warn{color:#a4460c}\n"
	"ul.diags li{font-family:ui-monospace,monospace;font-size:13px;margin:2px 0}\n"
	"ul.diags li.warn::marker{color:#a4460c}\n"
	"svg.plot{background:#fff;border:1px solid #ddd;font:12px sans-serif;max-width:100%;height:auto}\n"
	".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(290px,1fr));gap:14px}\n"
	"figure{margin:0;background:#fff;border:1px solid #ddd;padding:6px}\n"
	"figure img{width:100%;height:auto;display:block;cursor:zoom-in}\n"
	"figcaption{font-size:13px;color:#555;padding-top:4px}\n"
	".lb{display:none;position:fixed;inset:0;background:rgba(20,20,20,.9);overflow:auto;z-index:10;text-align:center;cursor:zoom-out}\n"
	".lb:target{display:block}\n"
	".lb img{max-width:none;margin:20px auto;display:inline-block}\n"
	"code{font-size:13px;word-break:break-all}\n"
	"footer{margin-top:30px;color:#777;font-size:13px}\n";

enum wb_status report_html(const struct report_in *in, char **html,
			   struct wb_diags *d)
{
	*html = NULL;
	if (!in || !in->sc)
		return wb_fail(d, WB_EUSAGE, NULL, "report: no scene");
	struct sb b = { 0 };
	const char *name = in->sc->name ? in->sc->name : "";
	sb_str(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		   "<meta name=\"generator\" content=\"wbake " WB_VERSION_STRING "\">\n<title>wbake report: ");
	sb_esc(&b, name);
	sb_str(&b, "</title>\n<style>\n");
	sb_str(&b, css);
	sb_str(&b, "</style>\n</head>\n<body>\n<main>\n<h1>Bake report: ");
	sb_esc(&b, name);
	sb_str(&b, "</h1>\n<p>");
	if (in->rep) {
		const struct wb_solve_report *r = in->rep;
		sb_printf(&b, "%s, %s after %ld steps, mass balance error %.2g, %ld clamped.",
			  !strcmp(solver_name(in), "swe") ? "SWE" : "LBM-SWE",
			  in->steps_forced > 0 ? "fixed step count" :
			  r->converged ? "steady" : "not steady",
			  r->steps, r->balance_error, r->clamped);
	}
	sb_str(&b, "</p>\n<nav><a href=\"#previews\">previews</a>"
		   "<a href=\"#adjustments\">adjustments</a><a href=\"#residual\">residual</a>"
		   "<a href=\"#mass\">mass balance</a><a href=\"#waterfalls\">waterfalls</a>"
		   "<a href=\"#solver\">solver</a><a href=\"#scene\">scene</a>"
		   "<a href=\"#pack\">pack</a></nav>\n");
	/* pictures first: what an artist looks at; the numbers below */
	sec_previews(&b, in);
	sec_adjust(&b, in);
	sec_residual(&b, in);
	sec_mass(&b, in);
	sec_falls(&b, in);
	sec_solver(&b, in);
	sec_scene(&b, in);
	enum wb_status s = sec_pack(&b, in, d);
	if (s != WB_OK) {
		free(b.s);
		return s;
	}
	sb_str(&b, "<footer>wbake " WB_VERSION_STRING ". Equal bakes give this page byte for byte.</footer>\n</main>\n</body>\n</html>\n");
	if (b.oom) {
		free(b.s);
		return wb_fail(d, WB_EIO, NULL, "report: out of memory");
	}
	*html = b.s;
	return WB_OK;
}

enum wb_status report_write(const struct report_in *in, struct wb_diags *d)
{
	if (!in || !in->outdir)
		return wb_fail(d, WB_EUSAGE, NULL, "report: no output directory");
	char *html = NULL;
	enum wb_status s = report_html(in, &html, d);
	if (s != WB_OK)
		return s;
	char *path = wb_path_join(in->outdir, "report.html");
	s = path ? wb_write_file_atomic(path, html, strlen(html), d)
		 : wb_fail(d, WB_EIO, in->outdir, "out of memory");
	free(path);
	free(html);
	return s;
}
