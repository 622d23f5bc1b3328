/*
 * manifest.c - OUTDIR/manifest.json: what was baked, for scripts and build
 * farms. The layout is schemas/manifest.schema.json (JSON Schema 2020-12).
 *
 * Determinism: keys are added in one fixed order; every number is printed
 * by us (cJSON raw values) with a fixed format - integers as integers,
 * metres and similar quantities with "%.6f", dimensionless small numbers
 * (residual, balance error, tau) with "%.6e" - so equal inputs give equal
 * bytes whatever the platform's shortest-float printing does. Non-finite
 * values become null. No timestamps, no host names, no absolute paths.
 */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbm.h" /* LBM_FV_MAX_SUB */
#include "maps.h"
#include "strutil.h"
#include "output.h"
#include "util.h"

/* Each helper returns 0 or -1 (out of memory); callers OR them together. */
static int put_raw(cJSON *o, const char *key, const char *text)
{
	cJSON *v = cJSON_CreateRaw(text);
	if (!v)
		return -1;
	if (cJSON_IsArray(o))
		return cJSON_AddItemToArray(o, v) ? 0 : -1;
	return cJSON_AddItemToObject(o, key, v) ? 0 : -1;
}

static int put_int(cJSON *o, const char *key, long long v)
{
	char b[32];
	snprintf(b, sizeof b, "%lld", v);
	return put_raw(o, key, b);
}

/* expo: "%.6e", else "%.6f" */
static int put_fmt(cJSON *o, const char *key, double v, int expo)
{
	char b[400];
	if (!isfinite(v))
		return put_raw(o, key, "null");
	if (v == 0)
		v = 0; /* no "-0" */
	if (expo)
		snprintf(b, sizeof b, "%.6e", v);
	else
		snprintf(b, sizeof b, "%.6f", v);
	return put_raw(o, key, b);
}

/* A box of cells (x0, x1, y0, y1) as metres: an array of 4 numbers. */
static int put_box(cJSON *o, const char *key, const int b[4], double dx)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);
	int e = !a;
	for (int k = 0; a && k < 4; k++)
		e |= !cJSON_AddItemToArray(a, cJSON_CreateNumber(b[k] * dx));
	return e;
}

static int put_f(cJSON *o, const char *key, double v)
{
	return put_fmt(o, key, v, 0);
}

static int put_e(cJSON *o, const char *key, double v)
{
	return put_fmt(o, key, v, 1);
}

static int put_str(cJSON *o, const char *key, const char *s)
{
	if (!s)
		return cJSON_AddNullToObject(o, key) ? 0 : -1;
	return cJSON_AddStringToObject(o, key, s) ? 0 : -1;
}

static int put_bool(cJSON *o, const char *key, int b)
{
	return cJSON_AddBoolToObject(o, key, b != 0) ? 0 : -1;
}

static int put_hash(cJSON *o, const char *key, const unsigned char *h)
{
	char hex[65];
	if (!h)
		return put_str(o, key, NULL);
	wb_hex(h, 32, hex);
	return put_str(o, key, hex);
}

static const char *const layer_names[WB_LAYER_COUNT] = {
	"height", "flow", "material", "distance", "foam"
};

static const char *mat_kind(enum wb_material_kind k)
{
	switch (k) {
	case WB_MAT_RIVER: return "river";
	case WB_MAT_LAKE: return "lake";
	case WB_MAT_OCEAN: return "ocean";
	}
	return "river";
}

static const char *basename_of(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

char *manifest_json(const struct wb_manifest_in *in)
{
	const struct wb_scene *sc = in->sc;
	const struct wb_pageset *ps = in->ps;
	int e = 0;
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	e |= put_str(root, "format", "wbake-manifest");
	e |= put_int(root, "manifest_version", 1);
	e |= put_str(root, "scene", sc->name);
	e |= put_str(root, "tool", "wbake");
	e |= put_str(root, "tool_version", WB_VERSION_STRING);

	cJSON *inp = cJSON_AddObjectToObject(root, "inputs");
	e |= !inp;
	if (inp) {
		/* the file name is the user's: JSON strings must be UTF-8 */
		const char *sf = basename_of(sc->file);
		e |= put_str(inp, "scene_file",
			     sf && wb_utf8_check(sf, strlen(sf)) == strlen(sf) ?
			     sf : "(not UTF-8)");
		e |= put_hash(inp, "scene_sha256", sc->scene_sha256);
		e |= put_str(inp, "heightmap_file",
			     basename_of(sc->terrain.heightmap));
		e |= put_hash(inp, "heightmap_sha256", in->heightmap_sha256);
	}

	const struct wb_solve_report *rep = in->rep;
	cJSON *sol = cJSON_AddObjectToObject(root, "solver");
	e |= !sol;
	if (sol) {
		e |= put_str(sol, "name", in->solver ? in->solver
			     : sc->sim.solver == WB_SOLVER_SWE ? "swe" : "lbm");
		e |= put_int(sol, "steps", rep ? rep->steps : 0);
		e |= put_bool(sol, "converged", rep && rep->converged);
		e |= put_e(sol, "residual", rep ? rep->residual : NAN);
		e |= put_f(sol, "sim_time_s", rep ? rep->sim_time : NAN);
		e |= put_e(sol, "dt_s", rep ? rep->dt : NAN);
		e |= put_f(sol, "lattice_speed_m_s",
			   rep ? rep->lattice_speed : NAN);
		e |= put_e(sol, "tau", rep ? rep->tau : NAN);
		e |= put_int(sol, "clamped", rep ? rep->clamped : 0);
		/* where the limiter acted during the run (LBM) */
		e |= put_int(sol, "clamped_blocks", rep ? rep->clamp_blocks : 0);
		if (rep && rep->clamp_blocks > 0) {
			const double dx = in->r->dx;
			e |= put_box(sol, "clamped_box_m", rep->clamp_box, dx);
			e |= put_box(sol, "clamped_most_box_m", rep->clamp_most, dx);
			e |= put_int(sol, "clamped_most", rep->clamp_most_n);
		}
		/* not steady: where the last window still changed */
		if (rep && rep->unsteady_tile > 0) {
			const double dx = in->r->dx;
			e |= put_box(sol, "unsteady_box_m", rep->unsteady_box, dx);
			e |= put_box(sol, "unsteady_most_box_m", rep->unsteady_most,
				     dx);
			e |= put_f(sol, "unsteady_box_share", rep->unsteady_box_share);
			e |= put_f(sol, "unsteady_most_share", rep->unsteady_most_share);
			e |= put_f(sol, "unsteady_tile_m", rep->unsteady_tile * dx);
		}
		/* how the run ended (output.h, wb_output_assess) */
		const struct wb_assess *a = in->assess;
		static const char *const stops[] = { "steady", "max_steps",
						     "steps" };
		e |= put_str(sol, "stop", a ? stops[a->stop] : NULL);
		e |= put_bool(sol, "steady", a && a->steady);
		e |= put_e(sol, "tolerance", a ? a->tolerance : NAN);
		e |= put_e(sol, "clamped_share", a ? a->clamped_share : NAN);
		/* where the limiter holds the flow at the end (output.c) */
		e |= put_int(sol, "limited_cells", a ? a->limit_cells : 0);
		if (a && a->limit_cells > 0) {
			cJSON *box = cJSON_AddArrayToObject(sol, "limited_box_m");
			e |= !box;
			for (int k = 0; box && k < 4; k++)
				e |= !cJSON_AddItemToArray(box,
					cJSON_CreateNumber(a->limit_box[k]));
		}
		/* the LBM's shallow water on steep cells (output.c) */
		e |= put_int(sol, "steep_cells", a ? a->steep_cells : 0);
		e |= put_int(sol, "moving_water_cells", a ? a->water_cells : 0);
		if (rep && rep->lattice_speed_reason) { /* LBM */
			e |= put_str(sol, "lattice_speed_reason",
				     rep->lattice_speed_reason);
			e |= put_f(sol, "h_deep_m", rep->h_deep);
			e |= put_f(sol, "flood_depth_m", rep->h_flood);
			e |= put_f(sol, "slope_speed_m_s", rep->slope_speed);
			e |= put_e(sol, "viscosity_m2_s", rep->viscosity);
			e |= put_e(sol, "viscosity_requested_m2_s",
				   rep->viscosity_requested);
			e |= put_int(sol, "lattice_speed_rechosen", rep->rescales);
			/* every automatic adjustment, in words */
			cJSON *adj = cJSON_AddArrayToObject(sol, "adjustments");
			char t[256];
			e |= !adj;
			if (adj && rep->viscosity > rep->viscosity_requested * 1.0001) {
				snprintf(t, sizeof(t),
					 "viscosity raised from %g to %g m^2/s (tau at its floor)",
					 rep->viscosity_requested, rep->viscosity);
				e |= !cJSON_AddItemToArray(adj, cJSON_CreateString(t));
			}
			e |= put_int(sol, "fv_substeps_capped", rep->fv_capped);
			if (adj && rep->fv_capped > 0) {
				snprintf(t, sizeof(t),
					 "hybrid finite-volume update capped at %d sub-steps in %ld steps ((|u| + c) dt / dx up to %.3g)",
					 LBM_FV_MAX_SUB, rep->fv_capped, rep->fv_cfl);
				e |= !cJSON_AddItemToArray(adj, cJSON_CreateString(t));
			}
			e |= put_int(sol, "fv_friction_first", rep->fv_friction_first);
			if (adj && rep->fv_friction_first > 0) {
				snprintf(t, sizeof(t),
					 "hybrid finite-volume friction applied before transport in %ld cell-steps faster than the lattice speed (up to %.3g m/s)",
					 rep->fv_friction_first, rep->fv_ff_speed);
				e |= !cJSON_AddItemToArray(adj, cJSON_CreateString(t));
			}
			if (adj && rep->rescales > 0) {
				snprintf(t, sizeof(t),
					 "lattice speed re-chosen %ld times during the run, to %g m/s (dt %g s)",
					 rep->rescales, rep->lattice_speed, rep->dt);
				e |= !cJSON_AddItemToArray(adj, cJSON_CreateString(t));
			}
		}
		/* how the bake started and how the residual fell */
		static const char *const starts[] = { "scene", "hydrology", "warm" };
		int sk = rep && rep->start >= 0 && rep->start <= 2 ? rep->start : 0;
		e |= put_str(sol, "start", starts[sk]);
		e |= put_f(sol, "start_volume_m3", rep ? rep->start_volume : NAN);
		e |= put_str(sol, "steady_acceleration",
			     rep && rep->steady_accel ? "low_froude" : "off");
		cJSON *fg = NULL;
		if (rep && rep->start == WB_START_HYDROLOGY) {
			fg = cJSON_AddObjectToObject(sol, "first_guess");
			e |= !fg;
		}
		if (fg) {
			e |= put_int(fg, "lake_cells", rep->guess_lake_cells);
			e |= put_int(fg, "channel_cells", rep->guess_channel_cells);
			e |= put_f(fg, "added_m3", rep->guess_volume);
		}
		cJSON *lvs = cJSON_AddArrayToObject(sol, "levels");
		e |= !lvs;
		for (int l = 0; lvs && rep && l < rep->n_levels; l++) {
			const struct wb_level_report *lr = &rep->level[l];
			cJSON *o = cJSON_CreateObject();
			e |= !o || !cJSON_AddItemToArray(lvs, o);
			if (!o)
				break;
			e |= put_int(o, "factor", lr->factor);
			e |= put_int(o, "nx", lr->nx);
			e |= put_int(o, "ny", lr->ny);
			e |= put_f(o, "dx_m", lr->dx);
			e |= put_int(o, "steps", lr->steps);
			e |= !cJSON_AddBoolToObject(o, "converged", lr->converged);
			e |= put_e(o, "residual", lr->residual);
		}
		cJSON *wins = cJSON_AddArrayToObject(sol, "windows");
		e |= !wins;
		for (int w = 0; wins && rep && w < rep->n_windows; w++) {
			cJSON *o = cJSON_CreateObject();
			e |= !o || !cJSON_AddItemToArray(wins, o);
			if (!o)
				break;
			e |= put_int(o, "step", rep->win_step[w]);
			e |= put_e(o, "residual", rep->win_residual[w]);
		}
	}
	cJSON *mb = cJSON_AddObjectToObject(root, "mass_balance");
	e |= !mb;
	if (mb) {
		e |= put_f(mb, "initial_m3", rep ? rep->vol_initial : NAN);
		e |= put_f(mb, "final_m3", rep ? rep->vol_final : NAN);
		e |= put_f(mb, "in_m3", rep ? rep->vol_in : NAN);
		e |= put_f(mb, "out_m3", rep ? rep->vol_out : NAN);
		e |= put_f(mb, "particles_m3", rep ? rep->vol_particles : NAN);
		e |= put_e(mb, "relative_error", rep ? rep->balance_error : NAN);
		const struct wb_assess *a = in->assess;
		e |= put_f(mb, "stored_change_m3", a ? a->storage_m3 : NAN);
		e |= put_bool(mb, "filling", a && a->filling);
	}

	cJSON *grid = cJSON_AddObjectToObject(root, "grid");
	e |= !grid;
	if (grid) {
		e |= put_int(grid, "nx", in->r->nx);
		e |= put_int(grid, "ny", in->r->ny);
		e |= put_f(grid, "dx_m", in->r->dx);
		cJSON *org = cJSON_AddArrayToObject(grid, "origin_m");
		e |= !org;
		if (org) {
			e |= put_f(org, NULL, in->r->origin[0]);
			e |= put_f(org, NULL, in->r->origin[1]);
		}
		e |= put_f(grid, "water_km2", in->water_km2);
	}

	cJSON *lay = cJSON_AddArrayToObject(root, "layers");
	e |= !lay;
	for (int l = 0; lay && l < WB_LAYER_COUNT; l++)
		if (ps->layers & (1u << l)) {
			cJSON *s = cJSON_CreateString(layer_names[l]);
			e |= !s || !cJSON_AddItemToArray(lay, s);
		}
	if (ps->bc_layers & ps->layers) { /* only then: 2.0 bakes unchanged */
		cJSON *bc = cJSON_AddObjectToObject(root, "compression");
		e |= !bc;
		for (int l = 0; bc && l < WB_LAYER_COUNT; l++)
			if (ps->bc_layers & ps->layers & (1u << l))
				e |= !cJSON_AddStringToObject(bc, layer_names[l],
							      l == WB_LAYER_FLOW ? "bc5"
										 : "bc4");
	}
	e |= put_f(root, "distance_max_m", ps->distance_max);
	e |= put_raw(root, "dry_height_sentinel_m", "-65504.0");

	long tot[3] = { 0, 0, 0 };
	cJSON *lods = cJSON_AddArrayToObject(root, "lods");
	e |= !lods;
	for (int k = 0; lods && k < ps->n_lods; k++) {
		const struct wb_lod_pages *lp = &ps->lods[k];
		long c[3] = { 0, 0, 0 };
		for (long i = 0; i < (long)lp->px * lp->py; i++)
			c[lp->pages[i].state]++;
		for (int t = 0; t < 3; t++)
			tot[t] += c[t];
		cJSON *o = cJSON_CreateObject();
		e |= !o || !cJSON_AddItemToArray(lods, o);
		if (!o)
			break;
		e |= put_int(o, "lod", k);
		e |= put_f(o, "dx_m", lp->dx);
		e |= put_int(o, "nx", lp->nx);
		e |= put_int(o, "ny", lp->ny);
		e |= put_int(o, "pages_x", lp->px);
		e |= put_int(o, "pages_y", lp->py);
		e |= put_int(o, "pages_data", c[WB_PAGE_DATA]);
		e |= put_int(o, "pages_flat", c[WB_PAGE_FLAT]);
		e |= put_int(o, "pages_empty", c[WB_PAGE_EMPTY]);
	}
	cJSON *pg = cJSON_AddObjectToObject(root, "pages");
	e |= !pg;
	if (pg) {
		e |= put_int(pg, "total", tot[0] + tot[1] + tot[2]);
		e |= put_int(pg, "data", tot[WB_PAGE_DATA]);
		e |= put_int(pg, "flat", tot[WB_PAGE_FLAT]);
		e |= put_int(pg, "empty", tot[WB_PAGE_EMPTY]);
		e |= put_int(pg, "data_unique",
			     in->pack ? in->pack->pages_unique : tot[WB_PAGE_DATA]);
	}
	cJSON *pk = cJSON_AddObjectToObject(root, "pack");
	e |= !pk;
	if (pk) {
		e |= put_str(pk, "file", in->pack_name);
		e |= put_int(pk, "bytes", in->pack ? in->pack->file_bytes : 0);
		e |= put_hash(pk, "sha256", in->pack_sha256);
		e |= put_int(pk, "raw_bytes", in->pack ? in->pack->raw_bytes : 0);
		e |= put_int(pk, "stored_bytes",
			     in->pack ? in->pack->stored_bytes : 0);
	}

	cJSON *mats = cJSON_AddArrayToObject(root, "materials");
	e |= !mats;
	for (int k = 0; mats && k < sc->n_materials; k++) {
		const struct wb_material *m = &sc->materials[k];
		cJSON *o = cJSON_CreateObject();
		e |= !o || !cJSON_AddItemToArray(mats, o);
		if (!o)
			break;
		e |= put_int(o, "id", m->id);
		e |= put_str(o, "name", m->name);
		e |= put_str(o, "kind", mat_kind(m->kind));
		e |= put_f(o, "amplitude", m->amplitude);
		e |= put_f(o, "frequency", m->frequency);
		e |= put_f(o, "speed", m->speed);
	}

	cJSON *falls = cJSON_AddArrayToObject(root, "waterfalls");
	e |= !falls;
	for (int k = 0; falls && in->st && k < in->st->n_falls; k++) {
		const struct wb_waterfall *w = &in->st->falls[k];
		cJSON *o = cJSON_CreateObject();
		e |= !o || !cJSON_AddItemToArray(falls, o);
		if (!o)
			break;
		e |= put_f(o, "x_m", w->x);
		e |= put_f(o, "y_m", w->y);
		e |= put_f(o, "width_m", w->width);
		e |= put_f(o, "flux_m3_s", w->flux);
		e |= put_f(o, "drop_m", w->drop);
	}

	char *txt = e ? NULL : cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		return NULL;
	/* end with a newline; cJSON's buffer is plain malloc (default hooks) */
	size_t n = strlen(txt);
	char *out = malloc(n + 2);
	if (out) {
		memcpy(out, txt, n);
		out[n] = '\n';
		out[n + 1] = 0;
	}
	cJSON_free(txt);
	return out;
}
