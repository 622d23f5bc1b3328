/*
 * wpreview - preview pictures from a tile pack.
 *
 *   wpreview PACK.wtp -o DIR [--lod L] [--scene SCENE.json]
 *
 * Reads the pack with the engines' reader (include/wtp.h), reassembles one
 * LOD from its pages (EMPTY pages dry, FLAT pages from their VAT value,
 * DATA pages decoded), and writes DIR/height.png, flow.png, material.png,
 * distance.png (and foam.png when the pack has foam) as described in
 * src/preview.h. The pack holds no terrain: with --scene, the scene's
 * heightmap (averaged down to the LOD) gives the shaded relief and
 * depth.png; without it the water is drawn on grey. Scene name and
 * material names come from the pack. Default LOD: the finest whose sides
 * are at most 2048 pixels. Exit codes as wbake: 0 ok, 1 usage, 2 bad pack
 * or scene, 4 I/O error.
 */
/* the reader's implementation is compiled into the library (pack.c) */
#include "wtp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bake.h"
#include "maps.h"
#include "preview.h"
#include "strutil.h"
#include "util.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: wpreview PACK.wtp -o DIR [--lod L] [--scene SCENE.json]\n"
		   "  writes DIR/height.png flow.png material.png distance.png"
		   " [foam.png]\n"
		   "  --scene: draw over the scene's terrain, and write depth.png\n");
}

/* "wpreview: " and fmt with up to three strings from the command line
 * (a, b, c; NULL when fmt uses fewer), shown escaped, then the usage;
 * returns the usage exit code, 1. */
static int usage_err(const char *fmt, const char *a, const char *b,
		     const char *c) __attribute__((format(printf, 1, 0)));
static int usage_err(const char *fmt, const char *a, const char *b,
		     const char *c)
{
	char e[3][128];
	wb_str_escape(e[0], sizeof(e[0]), a);
	wb_str_escape(e[1], sizeof(e[1]), b);
	wb_str_escape(e[2], sizeof(e[2]), c);
	fprintf(stderr, "wpreview: ");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
	fprintf(stderr, fmt, e[0], e[1], e[2]);
#pragma GCC diagnostic pop
	fprintf(stderr, "\n");
	usage(stderr);
	return 1;
}

static void print_diags(const struct wb_diags *d)
{
	char buf[1024];
	for (int k = 0; k < d->n; k++) {
		wb_diag_format(&d->v[k], buf, sizeof buf);
		fprintf(stderr, "wpreview: %s\n", buf);
	}
}

/* Layer by id: 1 and *l filled, or 0 when the pack lacks it. */
static int layer(const wtp_pack *p, uint32_t id, wtp_layer *l)
{
	int i = wtp_layer_find(p, id);
	return i >= 0 && wtp_layer_get(p, (uint32_t)i, l) == WTP_OK;
}

/* Assemble LOD 'lod' into m; 0 ok, 2 bad pack, 4 out of memory. */
static int assemble(const wtp_pack *p, uint32_t lod, struct wb_maps *m,
		    wtp_error *err)
{
	wtp_lod L;
	memset(m, 0, sizeof *m);
	if (wtp_lod_get(p, lod, &L) != WTP_OK)
		return 2;
	wtp_layer lh, lf, lm, ld, lo;
	int has_h = layer(p, WTP_LAYER_HEIGHT, &lh);
	int has_f = layer(p, WTP_LAYER_FLOW, &lf);
	int has_m = layer(p, WTP_LAYER_MATERIAL, &lm);
	int has_d = layer(p, WTP_LAYER_DISTANCE, &ld);
	int has_o = layer(p, WTP_LAYER_FOAM, &lo);
	size_t n = (size_t)L.nx * L.ny;
	m->nx = (int)L.nx;
	m->ny = (int)L.ny;
	m->dx = L.dx;
	m->height = malloc(n * sizeof(float));
	m->u = calloc(n, sizeof(float));
	m->v = calloc(n, sizeof(float));
	m->material = calloc(n, 1);
	m->distance = malloc(n * sizeof(float));
	m->depth = calloc(n, sizeof(float));
	m->foam = has_o ? calloc(n, sizeof(float)) : NULL;
	uint8_t *raw = malloc(p->page_raw_size), *work = malloc(p->page_raw_size);
	if (!m->height || !m->u || !m->v || !m->material || !m->distance ||
	    !m->depth || (has_o && !m->foam) || !raw || !work) {
		free(raw);
		free(work);
		return 4;
	}
	float dmax = (float)p->distance_max;
	const uint32_t side = p->page_side, in = p->page_interior,
		       bd = p->page_border;
	for (uint32_t py = 0; py < L.py; py++)
		for (uint32_t px = 0; px < L.px; px++) {
			wtp_vat_entry e;
			if (wtp_vat(p, lod, px, py, &e, err) != WTP_OK)
				goto bad;
			if (e.state == WTP_DATA &&
			    wtp_page_read(p, e.page, NULL, 0, raw, work, err) != WTP_OK)
				goto bad;
			for (uint32_t b = 0; b < in; b++) {
				uint32_t y = py * in + b;
				if (y >= L.ny)
					break;
				for (uint32_t a = 0; a < in; a++) {
					uint32_t x = px * in + a;
					if (x >= L.nx)
						break;
					size_t k = (size_t)y * L.nx + x;
					uint32_t i = (b + bd) * side + a + bd;
					if (e.state == WTP_EMPTY) {
						m->height[k] = WB_DRY_HEIGHT;
						m->distance[k] = -dmax;
					} else if (e.state == WTP_FLAT) {
						m->height[k] = e.height;
						m->material[k] = e.material;
						m->distance[k] = dmax;
					} else {
						m->height[k] = has_h ? wtp_pixel(&lh, raw, i, 0, e.height)
								     : 0.0f;
						if (has_f) {
							m->u[k] = wtp_pixel(&lf, raw, i, 0, 0);
							m->v[k] = wtp_pixel(&lf, raw, i, 1, 0);
						}
						if (has_m)
							m->material[k] = (uint8_t)wtp_pixel(&lm, raw, i, 0, 0);
						m->distance[k] = has_d ? wtp_pixel(&ld, raw, i, 0, 0)
								       : 0.0f;
						if (has_o)
							m->foam[k] = wtp_pixel(&lo, raw, i, 0, 0);
					}
				}
			}
		}
	free(raw);
	free(work);
	return 0;
bad:
	free(raw);
	free(work);
	return 2;
}

/* The scene's terrain averaged down to the LOD's nx x ny pixels of
 * f x f cells; NULL out of memory. */
static float *terrain_at(const struct wb_raster *r, int nx, int ny, int f)
{
	float *t = malloc((size_t)nx * ny * sizeof(float));
	for (int j = 0; t && j < ny; j++)
		for (int i = 0; i < nx; i++) {
			double s = 0;
			int n = 0;
			for (int y = j * f; y < (j + 1) * f && y < r->ny; y++)
				for (int x = i * f; x < (i + 1) * f && x < r->nx; x++) {
					s += r->z[(size_t)y * r->nx + x];
					n++;
				}
			t[(size_t)j * nx + i] = n ? (float)(s / n) : 0.0f;
		}
	return t;
}

/* Materials of the pack as scene materials (names point into the pack
 * buffer's copies in names[]). */
static int pack_materials(wtp_pack *p, struct wb_material *mt,
			  char names[][WB_NAME_MAX + 1], int max)
{
	int n = 0;
	for (uint32_t i = 0; i < wtp_material_count(p) && n < max; i++) {
		wtp_material w;
		if (wtp_material_get(p, i, &w, NULL) != WTP_OK)
			continue;
		memset(&mt[n], 0, sizeof mt[n]);
		mt[n].id = (int)w.id;
		mt[n].kind = (enum wb_material_kind)(w.kind <= 2 ? w.kind : 0);
		/* wbake writes at most WB_NAME_MAX bytes; a longer name (a
		 * pack from elsewhere) is cut */
		snprintf(names[n], WB_NAME_MAX + 1, "%.*s",
			 (int)(w.name_len < WB_NAME_MAX ? w.name_len : WB_NAME_MAX),
			 w.name ? w.name : "");
		mt[n].name = names[n];
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *pack = NULL, *out = NULL, *scene = NULL, *lod_arg = NULL;
	long lod = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], **dst = NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o")) {
			dst = &out;
		} else if (!strcmp(a, "--scene")) {
			dst = &scene;
		} else if (!strcmp(a, "--lod")) {
			dst = &lod_arg;
		} else if (a[0] == '-' && a[1]) {
			return usage_err("unknown option '%s'", a, NULL, NULL);
		} else if (!pack) {
			pack = a;
		} else {
			return usage_err("unexpected argument '%s' (one pack per run)", a, NULL, NULL);
		}
		if (!dst)
			continue;
		/* an option that takes a value may be given once */
		if (i + 1 >= argc)
			return usage_err("option '%s' needs a value", a, NULL, NULL);
		if (*dst)
			return usage_err("option '%s' given twice ('%s', then '%s'); give it once",
					 a, *dst, argv[i + 1]);
		*dst = argv[++i];
	}
	if (lod_arg && wb_parse_long(lod_arg, 0, 31, &lod))
		return usage_err("--lod expects a LOD number from 0 to 31, found '%s'",
				 lod_arg, NULL, NULL);
	if (!pack)
		return usage_err("missing PACK.wtp", NULL, NULL, NULL);
	if (!out)
		return usage_err("missing -o DIR", NULL, NULL, NULL);
	if (!*out) /* it wrote the pictures into the current directory */
		return usage_err("-o needs a directory name, found ''", NULL,
				 NULL, NULL);
	struct wb_diags d;
	wb_diags_init(&d);
	unsigned char *buf = NULL;
	size_t len = 0;
	enum wb_status s = wb_read_file(pack, &buf, &len, &d);
	if (s != WB_OK) {
		print_diags(&d);
		wb_diags_release(&d);
		return s;
	}
	wtp_pack p;
	wtp_error err;
	if (wtp_open(&p, buf, len, 0, &err) != WTP_OK) {
		fprintf(stderr, "wpreview: %s: %s\n", pack, err.msg);
		free(buf);
		wb_diags_release(&d);
		return 2;
	}
	if (lod < 0) {
		lod = (long)p.n_lods - 1;
		for (uint32_t k = 0; k < p.n_lods; k++) {
			wtp_lod L;
			if (wtp_lod_get(&p, k, &L) == WTP_OK && L.nx <= 2048 &&
			    L.ny <= 2048) {
				lod = k;
				break;
			}
		}
	}
	if (lod >= (long)p.n_lods) {
		fprintf(stderr, "wpreview: %s has %u LODs; --lod %ld is out of range\n",
			pack, p.n_lods, lod);
		free(buf);
		wb_diags_release(&d);
		return 1;
	}
	struct wb_maps m;
	int rc = assemble(&p, (uint32_t)lod, &m, &err);
	if (rc == 2)
		fprintf(stderr, "wpreview: %s: %s\n", pack, err.msg);
	else if (rc == 4)
		fprintf(stderr, "wpreview: out of memory\n");
	struct wb_bake b;
	memset(&b, 0, sizeof b);
	float *terrain = NULL;
	if (rc == 0 && scene) {
		s = wb_bake_load(&b, scene, &d);
		if (s != WB_OK) {
			print_diags(&d);
			rc = s;
		} else if (lod > 24 || (b.r.nx + (1 << lod) - 1) >> lod != m.nx ||
			   (b.r.ny + (1 << lod) - 1) >> lod != m.ny) {
			fprintf(stderr, "wpreview: %s: the scene's grid (%dx%d) is not the pack's (LOD %ld: %dx%d)\n",
				scene, b.r.nx, b.r.ny, lod, m.nx, m.ny);
			rc = 2;
		} else if (!(terrain = terrain_at(&b.r, m.nx, m.ny, 1 << lod))) {
			fprintf(stderr, "wpreview: out of memory\n");
			rc = 4;
		} else {
			/* depth from the surface over the averaged terrain */
			for (size_t k = 0; k < (size_t)m.nx * m.ny; k++)
				m.depth[k] = m.height[k] == WB_DRY_HEIGHT ? 0.0f :
					     m.height[k] > terrain[k] ? m.height[k] - terrain[k] : 0.0f;
		}
	}
	if (rc == 0) {
		if (!terrain) { /* no depth picture without the terrain */
			free(m.depth);
			m.depth = NULL;
		}
		struct wb_material mt[255]; /* ids 1..255 */
		char names[255][WB_NAME_MAX + 1];
		char name[256] = "";
		const void *v;
		uint32_t vl;
		if (wtp_meta_find(&p, WTP_META_SCENE_NAME, 0, &v, &vl, NULL) == WTP_OK)
			snprintf(name, sizeof name, "%.*s", (int)(vl < 255 ? vl : 255),
				 (const char *)v);
		struct preview_in pi = { 0 };
		pi.m = &m;
		pi.terrain = terrain;
		pi.scene = name;
		pi.materials = mt;
		pi.n_materials = pack_materials(&p, mt, names, 255);
		pi.distance_max = p.distance_max;
		s = preview_write(&pi, out, &d);
		if (s != WB_OK) {
			print_diags(&d);
			rc = s;
		} else {
			printf("wpreview: LOD %ld (%dx%d, %.3g m/px) -> %s/\n", lod,
			       m.nx, m.ny, m.dx, out);
		}
	}
	free(terrain);
	wb_bake_release(&b);
	maps_free(&m);
	free(buf);
	wb_diags_release(&d);
	return rc;
}
