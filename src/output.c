/*
 * output.c - wb_output_write(): from a solved state to OUTDIR/<name>.wtp and
 * OUTDIR/manifest.json (output.h).
 *
 * Steps: LOD0 maps (maps.c) -> pyramid and pages (pages.c) -> pack
 * (pack_write, pack.c, atomic) -> SHA-256 of the pack as written ->
 * optional previews of the finest LOD no larger than 2048 pixels on a side
 * (OUTDIR/preview/) and per-page PNGs (OUTDIR/pages/) -> manifest
 * (manifest.c, atomic, written last so that a manifest always describes a
 * complete pack). Nothing here depends on the thread count except speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps.h"
#include "output.h"
#include "pack.h"
#include "preview.h"
#include "util.h"

static enum wb_status join(char *dst, size_t n, const char *dir,
			   const char *name, struct wb_diags *d)
{
	char *p = wb_path_join(dir, name);
	if (!p)
		return wb_fail(d, WB_EIO, dir, "out of memory");
	size_t len = strlen(p);
	if (len >= n) {
		free(p);
		return wb_fail(d, WB_EIO, dir, "output path too long");
	}
	memcpy(dst, p, len + 1);
	free(p);
	return WB_OK;
}

/* Previews of LOD0 over the terrain (preview.c pools large maps itself,
 * keeping thin water visible). */
static enum wb_status write_previews(const struct wb_maps *lod0,
				     const struct wb_scene *sc,
				     const struct wb_raster *r,
				     const char *outdir, struct wb_diags *d)
{
	struct preview_in pi = { 0 };
	pi.m = lod0;
	pi.terrain = r->nx == lod0->nx && r->ny == lod0->ny ? r->z : NULL;
	pi.scene = sc->name;
	pi.materials = sc->materials;
	pi.n_materials = sc->n_materials;
	pi.distance_max = sc->output.distance_max;
	char *dir = wb_path_join(outdir, "preview");
	enum wb_status s = dir ? preview_write(&pi, dir, d)
			       : wb_fail(d, WB_EIO, outdir, "out of memory");
	free(dir);
	return s;
}

enum wb_status wb_output_write(const struct wb_scene *sc,
			       const struct wb_raster *r,
			       const struct wb_state *st,
			       const struct wb_solve_report *rep,
			       const struct wb_output_opts *o,
			       struct wb_output_summary *sum,
			       struct wb_diags *d)
{
	struct wb_output_summary dummy;
	if (!sum)
		sum = &dummy;
	memset(sum, 0, sizeof *sum);
	if (!o || !o->outdir || !*o->outdir)
		return wb_fail(d, WB_EUSAGE, NULL, "no output directory");
	if (!sc->name || !*sc->name || strchr(sc->name, '/'))
		return wb_fail(d, WB_EINPUT, sc->file,
			       "scene name '%s' cannot name a file",
			       sc->name ? sc->name : "");
	int threads = wb_threads(o->threads);
	struct wb_maps m = { 0 };
	struct wb_pageset ps = { 0 };
	unsigned char *packbuf = NULL;
	char *json = NULL;
	char packname[1024];
	enum wb_status s;

	snprintf(packname, sizeof packname, "%s.wtp", sc->name);
	s = join(sum->pack_path, sizeof sum->pack_path, o->outdir, packname, d);
	if (s == WB_OK)
		s = join(sum->manifest_path, sizeof sum->manifest_path,
			 o->outdir, "manifest.json", d);
	if (s == WB_OK)
		s = maps_build(sc, r, st, threads, &m, d);
	if (s != WB_OK)
		goto out;

	size_t n = (size_t)m.nx * m.ny;
	long wet = 0;
	for (size_t k = 0; k < n; k++)
		wet += m.height[k] != WB_DRY_HEIGHT;
	sum->water_km2 = (double)wet * m.dx * m.dx / 1e6;

	unsigned layers = sc->output.layers;
	s = pages_build(&m, sc->output.lods, layers, sc->output.distance_max,
			r->origin, threads, &ps, d);
	if (s != WB_OK)
		goto out;
	s = wb_mkdirs(o->outdir, d);
	if (s != WB_OK)
		goto out;

	struct wb_pack_meta meta = { 0 };
	meta.scene_name = sc->name;
	meta.tool_version = WB_VERSION_STRING;
	meta.solver = o->solver_name ? o->solver_name
		    : sc->sim.solver == WB_SOLVER_SWE ? "swe" : "lbm";
	meta.materials = sc->materials;
	meta.n_materials = sc->n_materials;
	memcpy(meta.scene_sha256, sc->scene_sha256, 32);
	if (o->heightmap_sha256)
		memcpy(meta.heightmap_sha256, o->heightmap_sha256, 32);
	struct wb_pack_stats stats = { 0 };
	s = pack_write(sum->pack_path, &ps, &meta, &stats, d);
	if (s != WB_OK)
		goto out;

	/* hash what is on disk, not what we meant to write */
	size_t plen = 0;
	s = wb_read_file(sum->pack_path, &packbuf, &plen, d);
	if (s != WB_OK) {
		s = WB_EIO;
		goto out;
	}
	struct wb_manifest_in mi = { 0 };
	wb_sha256(packbuf, plen, mi.pack_sha256);
	free(packbuf);
	packbuf = NULL;

	if (o->preview) {
		s = write_previews(&m, sc, r, o->outdir, d);
		if (s != WB_OK)
			goto out;
	}
	if (o->pages_png) {
		char *pd = wb_path_join(o->outdir, "pages");
		s = pd ? preview_pages(&ps, pd, d)
		       : wb_fail(d, WB_EIO, o->outdir, "out of memory");
		free(pd);
		if (s != WB_OK)
			goto out;
	}

	mi.sc = sc;
	mi.r = r;
	mi.st = st;
	mi.rep = rep;
	mi.solver = meta.solver;
	mi.ps = &ps;
	mi.pack = &stats;
	mi.pack_name = packname;
	mi.heightmap_sha256 = o->heightmap_sha256;
	mi.water_km2 = sum->water_km2;
	stats.file_bytes = stats.file_bytes ? stats.file_bytes
					    : (long long)plen;
	json = manifest_json(&mi);
	if (!json) {
		s = wb_fail(d, WB_EIO, sum->manifest_path,
			    "manifest: out of memory");
		goto out;
	}
	s = wb_write_file_atomic(sum->manifest_path, json, strlen(json), d);
	if (s != WB_OK)
		goto out;

	for (int k = 0; k < ps.n_lods; k++)
		for (long i = 0; i < (long)ps.lods[k].px * ps.lods[k].py; i++)
			switch (ps.lods[k].pages[i].state) {
			case WB_PAGE_DATA: sum->pages_data++; break;
			case WB_PAGE_FLAT: sum->pages_flat++; break;
			case WB_PAGE_EMPTY: sum->pages_empty++; break;
			}
	sum->pack_bytes = (long long)plen;
out:
	free(json);
	free(packbuf);
	wb_pageset_free(&ps);
	maps_free(&m);
	return s;
}
