/*
 * wtile - inspect, verify and extract from a tile pack (docs/wtp-format.md).
 *
 *   wtile info PACK [--json]     header, layers, LODs, page counts by state,
 *                                sizes, metadata
 *   wtile verify PACK            exit 0 only if every table, page and padding
 *                                byte checks out (format section 12)
 *   wtile extract PACK --lod L --tile X Y --layer NAME -o FILE(.png|.pfm)
 *                                one stored page (130x130, border included)
 *   wtile diff OLD NEW -o PATCH  a patch holding NEW's tables and only the
 *                                page payloads OLD lacks (format "Patches")
 *   wtile apply OLD PATCH -o OUT OUT byte-identical to the NEW of the diff
 *   wtile compare REF TEST       per layer, the error of TEST's decoded
 *                                values against REF's (same bake, e.g.
 *                                REF 16-bit and TEST block-compressed):
 *                                max |err| and RMS, absolute and relative
 *                                to TEST's per-page scale (format 4.1)
 *
 * Strings from the pack (scene name, tool, materials) are printed with
 * control characters, backslashes and invalid UTF-8 escaped as \xNN, so a
 * hostile pack cannot drive the terminal.
 *
 * Exit codes: 0 ok, 1 usage (bad command, option or value), 2 the pack is
 * invalid (or verify found a problem), 4 I/O error (cannot read the pack,
 * cannot write the output).
 *
 * Extract writes PFM in SI units (height in m with dry pixels at
 * WB_DRY_HEIGHT, flow as 3 channels u, v, 0 in m/s, material ids, distance
 * in m, foam 0..1), or an 8-bit PNG for a look: height grey over the
 * page's wet range (0 = dry), flow RGB 128 + 127 (u, v) / max|u, v|,
 * material ids, distance 128 + 127 d / distance_max, foam 255 f. EMPTY and
 * FLAT pages are expanded as format section 6 says.
 *
 * Uses the engines' reader include/wtp.h (compiled into the library by
 * src/pack.c).
 */
#include "wtp.h"

#include <cJSON.h>
#include <math.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "strutil.h"
#include "util.h"

#define SIDE 130
#define NPX (SIDE * SIDE)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wtile info PACK [--json]\n"
		"       wtile verify PACK\n"
		"       wtile extract PACK --lod L --tile X Y --layer NAME "
		"-o FILE(.png|.pfm)\n"
		"       wtile diff OLD NEW -o PATCH\n"
		"       wtile apply OLD PATCH -o OUT\n"
		"       wtile compare REF TEST\n"
		"layers: height flow material distance foam\n"
		"exit: 0 ok, 1 usage, 2 invalid pack, 4 I/O error\n");
}

static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "wtile: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	usage(stderr);
	return 1;
}

/* An option that takes a value (a1, or the pair a1 a2), given a second
 * time (b1 or b1 b2): a usage error showing both, not the last one
 * silently. */
static int twice(const char *opt, const char *a1, const char *a2,
		 const char *b1, const char *b2)
{
	char e[4][128];
	wb_str_escape(e[0], sizeof(e[0]), a1);
	wb_str_escape(e[1], sizeof(e[1]), a2 ? a2 : "");
	wb_str_escape(e[2], sizeof(e[2]), b1);
	wb_str_escape(e[3], sizeof(e[3]), b2 ? b2 : "");
	return usage_err("option '%s' given twice ('%s%s%s', then '%s%s%s'); give it once",
			 opt, e[0], a2 ? " " : "", e[1], e[2], b2 ? " " : "", e[3]);
}

static void print_diags(const struct wb_diags *d)
{
	char buf[1024];
	for (int k = 0; k < d->n; k++) {
		wb_diag_format(&d->v[k], buf, sizeof buf);
		fprintf(stderr, "wtile: %s\n", buf);
	}
}

/* Read the pack; 0 ok, else the exit code (4: cannot read). */
static int load(const char *path, unsigned char **buf, size_t *len)
{
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status s = wb_read_file(path, buf, len, &d);
	if (s != WB_OK) {
		print_diags(&d);
		wb_diags_release(&d);
		return 4;
	}
	wb_diags_release(&d);
	return 0;
}

/* Length of the valid UTF-8 sequence at s (n bytes left) that is not a
 * C1 control (U+0080..U+009F), or 0. */
static size_t utf8_ok(const unsigned char *s, size_t n)
{
	size_t k;
	uint32_t c;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		k = 2, c = s[0] & 0x1Fu;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		k = 3, c = s[0] & 0x0Fu;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		k = 4, c = s[0] & 0x07u;
	else
		return 0;
	if (k > n)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3Fu);
	}
	if ((k == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) ||
	    (k == 4 && (c < 0x10000 || c > 0x10FFFF)) || c < 0xA0)
		return 0;
	return k;
}

/* n bytes of an untrusted string, terminal-safe (malloc'd, NUL-ended):
 * control characters, DEL, backslash, C1 controls and invalid UTF-8 become
 * \xNN (backslash \\). */
static char *escape(const void *v, size_t n)
{
	const unsigned char *s = v;
	char *o = malloc(4 * n + 1), *q = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t k;
		if (s[i] >= 0x20 && s[i] < 0x7F && s[i] != '\\') {
			*q++ = (char)s[i++];
		} else if (s[i] == '\\') {
			*q++ = '\\';
			*q++ = '\\';
			i++;
		} else if (s[i] >= 0x80 && (k = utf8_ok(s + i, n - i)) > 0) {
			memcpy(q, s + i, k);
			q += k;
			i += k;
		} else {
			q += sprintf(q, "\\x%02x", s[i++]);
		}
	}
	*q = 0;
	return o;
}

static char *meta_string(const wtp_pack *p, uint32_t tag, int raw)
{
	const void *v;
	uint32_t len;
	if (wtp_meta_find(p, tag, 0, &v, &len, NULL) != WTP_OK)
		len = 0;
	if (!raw)
		return escape(v, len);
	char *s = malloc(len + 1);
	if (!s)
		return NULL;
	if (len)
		memcpy(s, v, len);
	s[len] = 0;
	return s;
}

static void meta_hex(const wtp_pack *p, uint32_t tag, char out[65])
{
	const void *v;
	uint32_t len;
	out[0] = 0;
	if (wtp_meta_find(p, tag, 0, &v, &len, NULL) == WTP_OK && len == 32)
		wb_hex(v, 32, out);
}

/* ---- info -------------------------------------------------------------- */

struct lod_count {
	uint32_t empty, flat, data;
};

static void count_lod(const wtp_pack *p, uint32_t k, const wtp_lod *L,
		      struct lod_count *c)
{
	memset(c, 0, sizeof *c);
	for (uint32_t y = 0; y < L->py; y++)
		for (uint32_t x = 0; x < L->px; x++) {
			wtp_vat_entry e;
			if (wtp_vat(p, k, x, y, &e, NULL) != WTP_OK)
				continue;
			c->empty += e.state == WTP_EMPTY;
			c->flat += e.state == WTP_FLAT;
			c->data += e.state == WTP_DATA;
		}
}

static int cmd_info(const wtp_pack *p, const char *path, int json)
{
	unsigned long long raw = 0, stored = 0;
	uint32_t n_rawc = 0;
	for (uint32_t i = 0; i < p->n_pages; i++) {
		wtp_page_info_t pi;
		wtp_page_info(p, i, &pi, NULL);
		raw += pi.raw_size;
		stored += pi.stored_size;
		n_rawc += pi.codec == WTP_CODEC_RAW;
	}
	/* terminal text escaped; JSON gets the raw bytes (cJSON escapes) */
	char *scene = meta_string(p, WTP_META_SCENE_NAME, json);
	char *tool = meta_string(p, WTP_META_TOOL, json);
	char *solver = meta_string(p, WTP_META_SOLVER, json);
	char *units = meta_string(p, WTP_META_UNITS, json);
	char *ppath = escape(path, strlen(path));
	char hs[65], hh[65];
	meta_hex(p, WTP_META_SCENE_SHA256, hs);
	meta_hex(p, WTP_META_HEIGHTMAP_SHA256, hh);
	wtp_qt_node root = { 0, 0, 0 };
	wtp_qt_node_get(p, p->n_qt_levels - 1, 0, 0, &root, NULL);
	int rc = 0;
	uint32_t n_mat = wtp_material_count(p), mpos = 0;
	wtp_material m;
	if (!scene || !tool || !solver || !units || !ppath) {
		fprintf(stderr, "wtile: out of memory\n");
		rc = 4;
		goto done;
	}
	if (!json) {
		printf("%s: wtp %u.%u, %llu bytes, alignment %u, tables %u bytes "
		       "(crc32 %08x)\n", ppath, (unsigned)p->version_major,
		       (unsigned)p->version_minor,
		       (unsigned long long)p->file_size, (unsigned)p->alignment,
		       (unsigned)p->tables_size, (unsigned)p->tables_crc32);
		printf("scene: %s, tool: %s, solver: %s\n", scene, tool, solver);
		printf("world: origin %.17g %.17g m, %.17g m/px at LOD0, "
		       "pages %u+2x%u px, distance_max %g m\n", p->origin[0],
		       p->origin[1], p->dx0, (unsigned)p->page_interior,
		       (unsigned)p->page_border, p->distance_max);
		printf("layers:");
		for (uint32_t i = 0; i < p->n_layers; i++) {
			wtp_layer l;
			wtp_layer_get(p, i, &l);
			printf("%s %s %s%s", i ? "," : "", wtp_layer_name(l.id),
			       wtp_format_name(l.format),
			       (l.flags & WTP_LAYER_RELATIVE) ? " (relative)" : "");
		}
		printf("\n");
		for (uint32_t k = 0; k < p->n_lods; k++) {
			wtp_lod L;
			struct lod_count c;
			wtp_lod_get(p, k, &L);
			count_lod(p, k, &L, &c);
			printf("lod %u: %ux%u px, %ux%u pages, %g m/px: %u data, "
			       "%u flat, %u empty, %u new stored, height step "
			       "%g m\n", (unsigned)k,
			       (unsigned)L.nx, (unsigned)L.ny, (unsigned)L.px,
			       (unsigned)L.py, L.dx, (unsigned)c.data,
			       (unsigned)c.flat, (unsigned)c.empty,
			       (unsigned)L.n_new_pages, L.height_step);
		}
		printf("pages: %u stored (%u raw), %llu bytes decoded, %llu bytes "
		       "stored (%.2fx)\n", (unsigned)p->n_pages,
		       (unsigned)n_rawc, raw, stored,
		       stored ? (double)raw / (double)stored : 0.0);
		printf("quadtree: %u levels, root %s", (unsigned)p->n_qt_levels,
		       root.has_water ? "water" : "dry");
		if (root.has_water)
			printf(" %g..%g m", root.hmin, root.hmax);
		printf("\n");
		printf("materials: %u\n", (unsigned)n_mat);
		/* one pass over the records: O(n), not O(n^2) */
		while (wtp_material_next(p, &mpos, &m)) {
			char *name = escape(m.name, m.name_len);
			if (!name) {
				fprintf(stderr, "wtile: out of memory\n");
				rc = 4;
				goto done;
			}
			char kind[16];
			if (m.kind < 3)
				snprintf(kind, sizeof kind, "%s",
					 wtp_material_kind_name(m.kind));
			else
				snprintf(kind, sizeof kind, "unknown-%u",
					 (unsigned)m.kind);
			printf("  %u %s kind %s amplitude %g frequency %g speed "
			       "%g\n", (unsigned)m.id, name, kind, m.amplitude,
			       m.frequency, m.speed);
			free(name);
		}
		printf("units: %s\n", units);
		printf("scene_sha256: %s\nheightmap_sha256: %s\n", hs, hh);
		goto done;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "file", path);
	char ver[32];
	snprintf(ver, sizeof ver, "%u.%u", (unsigned)p->version_major,
		 (unsigned)p->version_minor);
	cJSON_AddStringToObject(o, "format_version", ver);
	cJSON_AddNumberToObject(o, "file_bytes", (double)p->file_size);
	cJSON_AddNumberToObject(o, "alignment", p->alignment);
	cJSON_AddNumberToObject(o, "tables_bytes", p->tables_size);
	char crc[16];
	snprintf(crc, sizeof crc, "%08x", (unsigned)p->tables_crc32);
	cJSON_AddStringToObject(o, "tables_crc32", crc);
	cJSON_AddStringToObject(o, "scene", scene);
	cJSON_AddStringToObject(o, "tool", tool);
	cJSON_AddStringToObject(o, "solver", solver);
	cJSON_AddStringToObject(o, "units", units);
	cJSON_AddStringToObject(o, "scene_sha256", hs);
	cJSON_AddStringToObject(o, "heightmap_sha256", hh);
	double org[2] = { p->origin[0], p->origin[1] };
	cJSON_AddItemToObject(o, "origin", cJSON_CreateDoubleArray(org, 2));
	cJSON_AddNumberToObject(o, "dx0", p->dx0);
	cJSON_AddNumberToObject(o, "page_interior", p->page_interior);
	cJSON_AddNumberToObject(o, "page_border", p->page_border);
	cJSON_AddNumberToObject(o, "distance_max", p->distance_max);
	cJSON *ls = cJSON_AddArrayToObject(o, "layers");
	for (uint32_t i = 0; i < p->n_layers; i++) {
		wtp_layer l;
		wtp_layer_get(p, i, &l);
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "name", wtp_layer_name(l.id));
		cJSON_AddStringToObject(j, "format", wtp_format_name(l.format));
		cJSON_AddBoolToObject(j, "relative",
				      (l.flags & WTP_LAYER_RELATIVE) != 0);
		cJSON_AddItemToArray(ls, j);
	}
	cJSON *lods = cJSON_AddArrayToObject(o, "lods");
	for (uint32_t k = 0; k < p->n_lods; k++) {
		wtp_lod L;
		struct lod_count c;
		wtp_lod_get(p, k, &L);
		count_lod(p, k, &L, &c);
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "lod", k);
		cJSON_AddNumberToObject(j, "nx", L.nx);
		cJSON_AddNumberToObject(j, "ny", L.ny);
		cJSON_AddNumberToObject(j, "px", L.px);
		cJSON_AddNumberToObject(j, "py", L.py);
		cJSON_AddNumberToObject(j, "dx", L.dx);
		cJSON_AddNumberToObject(j, "data", c.data);
		cJSON_AddNumberToObject(j, "flat", c.flat);
		cJSON_AddNumberToObject(j, "empty", c.empty);
		cJSON_AddNumberToObject(j, "new_pages", L.n_new_pages);
		cJSON_AddNumberToObject(j, "height_step", L.height_step);
		cJSON_AddItemToArray(lods, j);
	}
	cJSON *pg = cJSON_AddObjectToObject(o, "pages");
	cJSON_AddNumberToObject(pg, "stored", p->n_pages);
	cJSON_AddNumberToObject(pg, "stored_raw_codec", n_rawc);
	cJSON_AddNumberToObject(pg, "decoded_bytes", (double)raw);
	cJSON_AddNumberToObject(pg, "stored_bytes", (double)stored);
	cJSON *qt = cJSON_AddObjectToObject(o, "quadtree");
	cJSON_AddNumberToObject(qt, "levels", p->n_qt_levels);
	cJSON_AddBoolToObject(qt, "root_has_water", root.has_water);
	cJSON_AddNumberToObject(qt, "root_hmin", root.hmin);
	cJSON_AddNumberToObject(qt, "root_hmax", root.hmax);
	cJSON *ms = cJSON_AddArrayToObject(o, "materials");
	while (wtp_material_next(p, &mpos, &m)) {
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)m.name_len, m.name);
		cJSON *j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "id", m.id);
		cJSON_AddStringToObject(j, "name", name);
		if (m.kind < 3)
			cJSON_AddStringToObject(j, "kind",
						wtp_material_kind_name(m.kind));
		else
			cJSON_AddNumberToObject(j, "kind", m.kind);
		cJSON_AddNumberToObject(j, "amplitude", m.amplitude);
		cJSON_AddNumberToObject(j, "frequency", m.frequency);
		cJSON_AddNumberToObject(j, "speed", m.speed);
		cJSON_AddItemToArray(ms, j);
	}
	char *txt = cJSON_Print(o);
	cJSON_Delete(o);
	if (!txt) {
		fprintf(stderr, "wtile: out of memory\n");
		rc = 4;
		goto done;
	}
	printf("%s\n", txt);
	free(txt);
done:
	free(ppath);
	free(scene);
	free(tool);
	free(solver);
	free(units);
	return rc;
}

/* ---- verify ------------------------------------------------------------ */

static int cmd_verify(const wtp_pack *p, const char *path)
{
	unsigned char *raw = malloc(p->page_raw_size);
	unsigned char *work = malloc(p->page_raw_size);
	if (!raw || !work) {
		free(raw);
		free(work);
		fprintf(stderr, "wtile: out of memory\n");
		return 4;
	}
	/* every page on its own first, so all bad pages are named */
	uint32_t bad = 0;
	wtp_error err;
	if (p->size == p->file_size)
		for (uint32_t i = 0; i < p->n_pages; i++)
			if (wtp_page_read(p, i, NULL, 0, raw, work, &err) !=
			    WTP_OK) {
				fprintf(stderr, "wtile: %s: %s\n", path, err.msg);
				bad++;
			}
	int rc = 0;
	if (bad) {
		fprintf(stderr, "wtile: %s: verify failed: %u of %u pages bad\n",
			path, (unsigned)bad, (unsigned)p->n_pages);
		rc = 2;
	} else if (wtp_verify(p, raw, work, &err) != WTP_OK) {
		fprintf(stderr, "wtile: %s: verify failed: %s\n", path, err.msg);
		rc = 2;
	} else {
		printf("%s: ok (%u pages, %llu bytes)\n", path,
		       (unsigned)p->n_pages, (unsigned long long)p->file_size);
	}
	free(raw);
	free(work);
	return rc;
}

/* ---- extract ----------------------------------------------------------- */

static const char *ext_of(const char *path)
{
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	return dot && (!slash || dot > slash) ? dot : "";
}

static int write_png(const char *path, const unsigned char *px, int channels,
		     struct wb_diags *d)
{
	struct wb_atomic at;
	if (wb_atomic_open(&at, path, d) != WB_OK)
		return 4;
	png_image img;
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	img.width = SIDE;
	img.height = SIDE;
	img.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
	if (!png_image_write_to_stdio(&img, at.f, 0, px, 0, NULL)) {
		wb_fail(d, WB_EIO, path, "cannot write PNG: %s", img.message);
		wb_atomic_abort(&at);
		return 4;
	}
	return wb_atomic_commit(&at, d) == WB_OK ? 0 : 4;
}

static int cmd_extract(const wtp_pack *p, const char *path, long lod, long tx,
		       long ty, const char *layer, const char *out)
{
	int id = -1;
	for (int i = 0; i < WTP_LAYER_COUNT; i++)
		if (!strcmp(layer, wtp_layer_name((uint32_t)i)))
			id = i;
	if (id < 0)
		return usage_err("unknown layer '%s'", layer);
	int li = wtp_layer_find(p, (uint32_t)id);
	if (li < 0) {
		fprintf(stderr, "wtile: %s has no %s layer\n", path, layer);
		return 1;
	}
	const char *ext = ext_of(out);
	int pfm = !strcmp(ext, ".pfm");
	if (!pfm && strcmp(ext, ".png"))
		return usage_err("output '%s' must end in .png or .pfm", out);
	if (lod >= (long)p->n_lods) {
		fprintf(stderr, "wtile: --lod %ld: %s has LODs 0..%u\n", lod,
			path, (unsigned)p->n_lods - 1);
		return 1;
	}
	wtp_lod L;
	wtp_lod_get(p, (uint32_t)lod, &L);
	if (tx >= (long)L.px || ty >= (long)L.py) {
		fprintf(stderr, "wtile: --tile %ld %ld: LOD %ld has %ux%u pages\n",
			tx, ty, lod, (unsigned)L.px, (unsigned)L.py);
		return 1;
	}
	wtp_vat_entry e;
	wtp_vat(p, (uint32_t)lod, (uint32_t)tx, (uint32_t)ty, &e, NULL);
	wtp_layer l;
	wtp_layer_get(p, (uint32_t)li, &l);
	int ch = id == WTP_LAYER_FLOW ? 2 : 1;
	float *v = calloc((size_t)NPX * 3, sizeof *v);
	unsigned char *raw = malloc(p->page_raw_size);
	unsigned char *work = malloc(p->page_raw_size);
	unsigned char *img = malloc((size_t)NPX * 3);
	int rc = 0;
	struct wb_diags d;
	wb_diags_init(&d);
	if (!v || !raw || !work || !img) {
		fprintf(stderr, "wtile: out of memory\n");
		rc = 4;
		goto done;
	}
	{
		/* EMPTY / FLAT expand as format section 6 says */
		wtp_error err;
		int r = e.state == WTP_DATA
				? wtp_page_read(p, e.page, NULL, 0, raw, work, &err)
				: wtp_page_expand_read(p, &e, raw, &err);
		if (r != WTP_OK) {
			fprintf(stderr, "wtile: %s: %s\n", path, err.msg);
			rc = 2;
			goto done;
		}
		for (uint32_t i = 0; i < NPX; i++)
			for (int c = 0; c < ch; c++)
				v[i * ch + c] = wtp_pixel(&l, raw, i, (uint32_t)c,
							  e.height);
	}
	if (pfm) {
		if (ch == 2) { /* PFM colour: u, v, 0 */
			for (uint32_t i = NPX; i-- > 0;) {
				float u = v[2 * i], w = v[2 * i + 1];
				v[3 * i] = u;
				v[3 * i + 1] = w;
				v[3 * i + 2] = 0;
			}
		}
		if (wb_pfm_write(out, v, SIDE, SIDE, ch == 2 ? 3 : 1, &d) != WB_OK) {
			print_diags(&d);
			rc = 4;
		}
		goto done;
	}
	if (id == WTP_LAYER_HEIGHT) {
		float lo = INFINITY, hi = -INFINITY;
		for (uint32_t i = 0; i < NPX; i++)
			if (v[i] != WTP_DRY_HEIGHT) {
				lo = fminf(lo, v[i]);
				hi = fmaxf(hi, v[i]);
			}
		for (uint32_t i = 0; i < NPX; i++)
			img[i] = v[i] == WTP_DRY_HEIGHT ? 0
				 : hi > lo ? (unsigned char)(1.5f + 254.0f * (v[i] - lo) / (hi - lo))
				 : 255;
	} else if (id == WTP_LAYER_FLOW) {
		float m = 0;
		for (uint32_t i = 0; i < 2 * NPX; i++)
			m = fmaxf(m, fabsf(v[i]));
		m = m > 0 ? m : 1;
		for (uint32_t i = 0; i < NPX; i++) {
			img[3 * i] = (unsigned char)lrintf(128 + 127 * v[2 * i] / m);
			img[3 * i + 1] = (unsigned char)lrintf(128 + 127 * v[2 * i + 1] / m);
			img[3 * i + 2] = 0;
		}
	} else {
		for (uint32_t i = 0; i < NPX; i++) {
			float x = v[i];
			if (id == WTP_LAYER_DISTANCE)
				x = p->distance_max > 0
					    ? 128 + 127 * x / (float)p->distance_max
					    : 128;
			else if (id == WTP_LAYER_FOAM)
				x = 255 * x;
			x = x < 0 ? 0 : x > 255 ? 255 : x;
			img[i] = (unsigned char)lrintf(x);
		}
	}
	rc = write_png(out, img, ch == 2 ? 3 : 1, &d);
	if (rc)
		print_diags(&d);
done:
	if (rc == 0)
		printf("%s: LOD %ld page (%ld, %ld) %s %s -> %s\n", path, lod, tx,
		       ty, e.state == WTP_DATA ? "DATA" : e.state == WTP_FLAT ? "FLAT" : "EMPTY",
		       layer, out);
	wb_diags_release(&d);
	free(v);
	free(raw);
	free(work);
	free(img);
	return rc;
}

/* ---- diff / apply (docs/wtp-format.md section 13) ---------------------- */

#define PATCH_HDR 64
static const unsigned char patch_magic[8] = { 0x89, 'W', 'T', 'p', 0x0D,
					      0x0A, 0x1A, 0x0A };

static void p32(unsigned char *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}
static void p64(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t g32(const unsigned char *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}
static uint64_t g64(const unsigned char *b)
{
	return (uint64_t)g32(b) | (uint64_t)g32(b + 4) << 32;
}
static uint32_t crc_of(const unsigned char *b, size_t n)
{
	uLong c = crc32(0L, Z_NULL, 0);
	while (n) {
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
		c = crc32(c, b, k);
		b += k;
		n -= k;
	}
	return (uint32_t)c;
}

/* Open a whole pack for diff/apply: 0, or the exit code (message out). */
static int open_full(const char *path, unsigned char **buf, size_t *len,
		     wtp_pack *p)
{
	int rc = load(path, buf, len);
	if (rc)
		return rc;
	wtp_error err;
	if (wtp_open(p, *buf, *len, 0, &err) != WTP_OK) {
		fprintf(stderr, "wtile: %s: %s\n", path, err.msg);
		return 2;
	}
	if (p->file_size != *len) {
		fprintf(stderr, "wtile: %s: file is %zu bytes, header says "
			"%llu\n", path, *len, (unsigned long long)p->file_size);
		return 2;
	}
	return 0;
}

struct hidx {
	uint64_t h;
	uint32_t i;
};
static int hidx_cmp(const void *a, const void *b)
{
	const struct hidx *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int write_all(const char *path, const unsigned char *b1, size_t n1,
		     const unsigned char *b2, size_t n2)
{
	struct wb_diags d;
	struct wb_atomic at;
	wb_diags_init(&d);
	if (wb_atomic_open(&at, path, &d) != WB_OK)
		goto fail;
	if (fwrite(b1, 1, n1, at.f) != n1 ||
	    (n2 && fwrite(b2, 1, n2, at.f) != n2)) {
		wb_fail(&d, WB_EIO, path, "cannot write");
		wb_atomic_abort(&at);
		goto fail;
	}
	if (wb_atomic_commit(&at, &d) != WB_OK)
		goto fail;
	wb_diags_release(&d);
	return 0;
fail:
	print_diags(&d);
	wb_diags_release(&d);
	return 4;
}

static int cmd_diff(const char *oldp, const char *newp, const char *out)
{
	unsigned char *ob = NULL, *nb = NULL, *pt = NULL;
	size_t ol = 0, nl = 0;
	wtp_pack o, n;
	struct hidx *ix = NULL;
	int rc = open_full(oldp, &ob, &ol, &o);
	if (!rc)
		rc = open_full(newp, &nb, &nl, &n);
	if (rc)
		goto done;
	ix = malloc(((size_t)o.n_pages + 1) * sizeof *ix);
	size_t cap = PATCH_HDR + n.tables_size + 4 * (size_t)n.n_pages;
	uint64_t inl = 0;
	for (uint32_t i = 0; i < n.n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(&n, i, &e, NULL);
		inl += e.stored_size;
	}
	pt = malloc(cap + (size_t)inl);
	if (!ix || !pt) {
		fprintf(stderr, "wtile: out of memory\n");
		rc = 4;
		goto done;
	}
	for (uint32_t i = 0; i < o.n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(&o, i, &e, NULL);
		ix[i].h = e.hash;
		ix[i].i = i;
	}
	qsort(ix, o.n_pages, sizeof *ix, hidx_cmp);
	memset(pt, 0, PATCH_HDR);
	memcpy(pt + PATCH_HDR, nb, n.tables_size);
	unsigned char *src = pt + PATCH_HDR + n.tables_size;
	unsigned char *pay = src + 4 * (size_t)n.n_pages;
	uint32_t n_inline = 0;
	uint64_t used = 0;
	for (uint32_t i = 0; i < n.n_pages; i++) {
		wtp_page_info_t e;
		wtp_page_info(&n, i, &e, NULL);
		/* an OLD page with the same decoded hash AND the same stored
		   bytes is copied by apply; anything else travels inline */
		uint32_t from = 0xFFFFFFFFu;
		size_t lo = 0, hi = o.n_pages;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (ix[mid].h < e.hash)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t j = lo; j < o.n_pages && ix[j].h == e.hash; j++) {
			wtp_page_info_t f;
			wtp_page_info(&o, ix[j].i, &f, NULL);
			if (f.stored_size == e.stored_size &&
			    f.crc32 == e.crc32 &&
			    !memcmp(ob + f.offset, nb + e.offset, e.stored_size)) {
				from = ix[j].i;
				break;
			}
		}
		p32(src + 4 * (size_t)i, from);
		if (from == 0xFFFFFFFFu) {
			memcpy(pay + used, nb + e.offset, e.stored_size);
			used += e.stored_size;
			n_inline++;
		}
	}
	size_t total = cap + (size_t)used;
	memcpy(pt, patch_magic, 8);
	pt[8] = 1; /* patch version 1 */
	p32(pt + 12, n.n_pages);
	p64(pt + 16, o.file_size);
	p32(pt + 24, o.tables_crc32);
	p32(pt + 28, n.tables_size);
	p64(pt + 32, n.file_size);
	p32(pt + 40, crc_of(nb, nl));
	p32(pt + 44, n_inline);
	p64(pt + 48, used);
	p32(pt + 56, crc_of(pt, total));
	rc = write_all(out, pt, total, NULL, 0);
	if (!rc)
		printf("%s: %u of %u pages changed, %zu bytes (new pack %llu "
		       "bytes)\n", out, (unsigned)n_inline, (unsigned)n.n_pages,
		       total, (unsigned long long)n.file_size);
done:
	free(ix);
	free(pt);
	free(ob);
	free(nb);
	return rc;
}

static int patch_bad(const char *path, const char *what)
{
	fprintf(stderr, "wtile: %s: %s\n", path, what);
	return 2;
}

static int cmd_apply(const char *oldp, const char *patchp, const char *out)
{
	unsigned char *ob = NULL, *pt = NULL, *nb = NULL;
	size_t ol = 0, pl = 0;
	wtp_pack o, n;
	wtp_error err;
	int rc = open_full(oldp, &ob, &ol, &o);
	if (!rc)
		rc = load(patchp, &pt, &pl);
	if (rc)
		goto done;
	if (pl < PATCH_HDR || memcmp(pt, patch_magic, 8)) {
		rc = patch_bad(patchp, "not a wtile patch");
		goto done;
	}
	if (pt[8] != 1 || pt[9] || pt[10] || pt[11] || g32(pt + 60)) {
		rc = patch_bad(patchp, "unsupported patch version");
		goto done;
	}
	{
		uint32_t c = g32(pt + 56);
		memset(pt + 56, 0, 4);
		if (crc_of(pt, pl) != c) {
			rc = patch_bad(patchp, "patch CRC mismatch: corrupt");
			goto done;
		}
	}
	uint32_t np = g32(pt + 12), ts = g32(pt + 28), n_inline = g32(pt + 44);
	uint64_t nsize = g64(pt + 32), used = g64(pt + 48);
	if (g64(pt + 16) != o.file_size || g32(pt + 24) != o.tables_crc32) {
		rc = patch_bad(patchp, "patch was made against another pack "
				       "than OLD");
		goto done;
	}
	if ((uint64_t)ts + 4ull * np + used + PATCH_HDR != pl ||
	    nsize > ((uint64_t)1 << 40) || ts > nsize) {
		rc = patch_bad(patchp, "patch sizes inconsistent");
		goto done;
	}
	nb = calloc(1, (size_t)nsize ? (size_t)nsize : 1);
	if (!nb) {
		fprintf(stderr, "wtile: out of memory\n");
		rc = 4;
		goto done;
	}
	memcpy(nb, pt + PATCH_HDR, ts);
	if (wtp_open(&n, nb, (size_t)nsize, 0, &err) != WTP_OK ||
	    n.n_pages != np || n.file_size != nsize) {
		rc = patch_bad(patchp, "tables in the patch invalid");
		goto done;
	}
	{
		const unsigned char *src = pt + PATCH_HDR + ts;
		const unsigned char *pay = src + 4 * (size_t)np;
		uint64_t at = 0;
		uint32_t seen_inline = 0;
		for (uint32_t i = 0; i < np; i++) {
			wtp_page_info_t e, f;
			wtp_page_info(&n, i, &e, NULL);
			uint32_t from = g32(src + 4 * (size_t)i);
			const unsigned char *bytes;
			if (from == 0xFFFFFFFFu) {
				if (e.stored_size > used - at) {
					rc = patch_bad(patchp, "inline pages "
						       "truncated");
					goto done;
				}
				bytes = pay + at;
				at += e.stored_size;
				seen_inline++;
			} else {
				if (wtp_page_info(&o, from, &f, NULL) != WTP_OK ||
				    f.stored_size != e.stored_size ||
				    f.crc32 != e.crc32) {
					rc = patch_bad(patchp, "a page it takes "
						       "from OLD does not "
						       "match");
					goto done;
				}
				bytes = ob + f.offset;
			}
			memcpy(nb + e.offset, bytes, e.stored_size);
		}
		if (at != used || seen_inline != n_inline) {
			rc = patch_bad(patchp, "inline page count wrong");
			goto done;
		}
	}
	if (crc_of(nb, (size_t)nsize) != g32(pt + 40)) {
		rc = patch_bad(patchp, "result CRC mismatch");
		goto done;
	}
	rc = write_all(out, nb, (size_t)nsize, NULL, 0);
	if (!rc)
		printf("%s: %llu bytes\n", out, (unsigned long long)nsize);
done:
	free(ob);
	free(pt);
	free(nb);
	return rc;
}

/* ---- main -------------------------------------------------------------- */


/* ---- compare ----------------------------------------------------------- */

struct errstat {
	double max, sum2, maxrel, sum2rel;
	long n, nrel, differ;
};

static void errstat_add(struct errstat *st, double e, double scale, int bc)
{
	e = fabs(e);
	st->n++;
	st->sum2 += e * e;
	st->max = e > st->max ? e : st->max;
	if (e != 0)
		st->differ++;
	if (bc && scale > 0) {
		double r = e / scale;
		st->nrel++;
		st->sum2rel += r * r;
		st->maxrel = r > st->maxrel ? r : st->maxrel;
	}
}

static int cmd_compare(const char *refp, const char *testp)
{
	static const char *const unit[WTP_LAYER_COUNT] = { "m", "m/s", "",
							   "m", "" };
	unsigned char *b1 = NULL, *b2 = NULL, *r1 = NULL, *r2 = NULL, *w = NULL;
	size_t n1 = 0, n2 = 0;
	wtp_pack a, b;
	int rc = open_full(refp, &b1, &n1, &a);
	if (!rc)
		rc = open_full(testp, &b2, &n2, &b);
	if (rc)
		goto done;
	rc = 2;
	if (a.n_lods != b.n_lods) {
		fprintf(stderr, "wtile: compare: %u and %u LODs\n",
			(unsigned)a.n_lods, (unsigned)b.n_lods);
		goto done;
	}
	for (uint32_t k = 0; k < a.n_lods; k++) {
		wtp_lod la, lb;
		wtp_lod_get(&a, k, &la);
		wtp_lod_get(&b, k, &lb);
		if (la.nx != lb.nx || la.ny != lb.ny) {
			fprintf(stderr, "wtile: compare: LOD %u is %ux%u px in "
				"%s, %ux%u in %s\n", (unsigned)k,
				(unsigned)la.nx, (unsigned)la.ny, refp,
				(unsigned)lb.nx, (unsigned)lb.ny, testp);
			goto done;
		}
	}
	size_t rs = a.page_raw_size > b.page_raw_size ? a.page_raw_size
						       : b.page_raw_size;
	r1 = malloc(rs);
	r2 = malloc(rs);
	w = malloc(rs);
	if (!r1 || !r2 || !w) {
		fprintf(stderr, "wtile: out of memory\n");
		rc = 4;
		goto done;
	}
	struct errstat st[WTP_LAYER_COUNT];
	memset(st, 0, sizeof st);
	int la_i[WTP_LAYER_COUNT], lb_i[WTP_LAYER_COUNT];
	for (int id = 0; id < WTP_LAYER_COUNT; id++) {
		la_i[id] = wtp_layer_find(&a, (uint32_t)id);
		lb_i[id] = wtp_layer_find(&b, (uint32_t)id);
	}
	wtp_layer lha;
	wtp_layer_get(&a, 0, &lha);
	for (uint32_t k = 0; k < a.n_lods; k++) {
		wtp_lod L;
		wtp_lod_get(&a, k, &L);
		for (uint32_t y = 0; y < L.py; y++)
			for (uint32_t x = 0; x < L.px; x++) {
				wtp_vat_entry ea, eb;
				wtp_error err;
				wtp_vat(&a, k, x, y, &ea, NULL);
				wtp_vat(&b, k, x, y, &eb, NULL);
				const char *bad = NULL;
				if ((ea.state == WTP_DATA
					     ? wtp_page_read(&a, ea.page, NULL, 0, r1, w, &err)
					     : wtp_page_expand_read(&a, &ea, r1, &err)) != WTP_OK)
					bad = refp;
				else if ((eb.state == WTP_DATA
						  ? wtp_page_read(&b, eb.page, NULL, 0, r2, w, &err)
						  : wtp_page_expand_read(&b, &eb, r2, &err)) != WTP_OK)
					bad = testp;
				if (bad) {
					fprintf(stderr, "wtile: %s: %s\n", bad, err.msg);
					goto done;
				}
				for (uint32_t i = 0; i < NPX; i++) {
					int wet = wtp_pixel(&lha, r1, i, 0, ea.height) !=
						  WTP_DRY_HEIGHT;
					for (int id = 0; id < WTP_LAYER_COUNT; id++) {
						if (la_i[id] < 0 || lb_i[id] < 0)
							continue;
						/* height, flow, foam where REF is wet;
						   distance (the shore fade) and
						   material everywhere */
						if (!wet && id != WTP_LAYER_DISTANCE &&
						    id != WTP_LAYER_MATERIAL)
							continue;
						wtp_layer l1, l2;
						wtp_layer_get(&a, (uint32_t)la_i[id], &l1);
						wtp_layer_get(&b, (uint32_t)lb_i[id], &l2);
						int bc = l2.format >= WTP_FMT_BC5_SNORM;
						for (uint32_t c = 0; c < l1.components; c++) {
							float s = 0;
							if (bc)
								memcpy(&s, r2 + l2.plane_offset + 4 * c, 4);
							double v1 = wtp_pixel(&l1, r1, i, c, ea.height);
							double v2 = wtp_pixel(&l2, r2, i, c, eb.height);
							errstat_add(&st[id], v2 - v1, s, bc);
						}
					}
				}
			}
	}
	printf("%s against %s:\n", testp, refp);
	for (int id = 0; id < WTP_LAYER_COUNT; id++) {
		if (la_i[id] < 0 || lb_i[id] < 0)
			continue;
		wtp_layer l2;
		wtp_layer_get(&b, (uint32_t)lb_i[id], &l2);
		const struct errstat *e = &st[id];
		printf("%s %s: %ld values, %ld differ, max %.6g %s, rms %.6g %s",
		       wtp_layer_name((uint32_t)id), wtp_format_name(l2.format),
		       e->n, e->differ, e->max, unit[id],
		       e->n ? sqrt(e->sum2 / (double)e->n) : 0.0, unit[id]);
		if (e->nrel)
			printf("; of the page scale: max %.6g, rms %.6g",
			       e->maxrel, sqrt(e->sum2rel / (double)e->nrel));
		printf("\n");
	}
	rc = 0;
done:
	free(b1);
	free(b2);
	free(r1);
	free(r2);
	free(w);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		usage(stdout);
		return 0;
	}
	if (strcmp(cmd, "info") && strcmp(cmd, "verify") && strcmp(cmd, "extract") &&
	    strcmp(cmd, "diff") && strcmp(cmd, "apply") && strcmp(cmd, "compare"))
		return usage_err("unknown command '%s'", cmd);
	const char *pack = NULL, *pack2 = NULL, *layer = NULL, *out = NULL;
	int two = !strcmp(cmd, "diff") || !strcmp(cmd, "apply");
	int cmp = !strcmp(cmd, "compare");
	int json = 0;
	long lod = -1, tx = -1, ty = -1;
	/* an option that takes a value may be given once (flags: any
	 * number of times); values are shown escaped */
	const char *seen_lod = NULL;
	int seen_tile = 0; /* argv index of the first --tile's X */
	char e1[128], e2[128];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		int ext = !strcmp(cmd, "extract");
		if (!strcmp(a, "--json") && !strcmp(cmd, "info")) {
			json = 1;
		} else if (ext && !strcmp(a, "--lod")) {
			if (i + 1 >= argc)
				return usage_err("--lod needs a LOD number");
			if (seen_lod)
				return twice(a, seen_lod, NULL, argv[i + 1], NULL);
			seen_lod = argv[i + 1];
			wb_str_escape(e1, sizeof(e1), argv[++i]);
			if (wb_parse_long(argv[i], 0, 31, &lod))
				return usage_err("--lod needs a LOD number (0..31), got '%s'", e1);
		} else if (ext && !strcmp(a, "--tile")) {
			if (i + 2 >= argc)
				return usage_err("--tile needs two page indices X Y");
			if (seen_tile)
				return twice(a, argv[seen_tile], argv[seen_tile + 1],
					     argv[i + 1], argv[i + 2]);
			seen_tile = i + 1;
			wb_str_escape(e1, sizeof(e1), argv[i + 1]);
			wb_str_escape(e2, sizeof(e2), argv[i + 2]);
			if (wb_parse_long(argv[i + 1], 0, 1 << 24, &tx) ||
			    wb_parse_long(argv[i + 2], 0, 1 << 24, &ty))
				return usage_err("--tile needs two page indices X Y (0..16777216), got '%s' '%s'", e1, e2);
			i += 2;
		} else if (ext && !strcmp(a, "--layer")) {
			if (i + 1 >= argc)
				return usage_err("--layer needs a name");
			if (layer)
				return twice(a, layer, NULL, argv[i + 1], NULL);
			layer = argv[++i];
		} else if ((ext || two) && !strcmp(a, "-o")) {
			if (i + 1 >= argc)
				return usage_err("-o needs a file name");
			if (out)
				return twice(a, out, NULL, argv[i + 1], NULL);
			out = argv[++i];
			if (!*out) /* not a temporary in the current directory */
				return usage_err("-o needs a file name, found ''");
		} else if (a[0] == '-' && a[1]) {
			wb_str_escape(e1, sizeof(e1), a);
			return usage_err("unknown option '%s'", e1);
		} else if (!pack) {
			pack = a;
		} else if ((two || cmp) && !pack2) {
			pack2 = a;
		} else {
			wb_str_escape(e1, sizeof(e1), a);
			return usage_err("unexpected argument '%s'", e1);
		}
	}
	if (!pack)
		return usage_err("%s: no pack given", cmd);
	if (!strcmp(cmd, "extract") && (lod < 0 || tx < 0 || !layer || !out))
		return usage_err("extract needs --lod, --tile, --layer and -o");
	if (two && (!pack2 || !out))
		return usage_err("%s needs two files and -o", cmd);
	if (cmp && !pack2)
		return usage_err("compare needs two packs");
	if (cmp)
		return cmd_compare(pack, pack2);
	if (two)
		return !strcmp(cmd, "diff") ? cmd_diff(pack, pack2, out)
					    : cmd_apply(pack, pack2, out);
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc = load(pack, &buf, &len);
	if (rc)
		return rc;
	wtp_pack p;
	wtp_error err;
	if (wtp_open(&p, buf, len, 0, &err) != WTP_OK) {
		fprintf(stderr, "wtile: %s: %s\n", pack, err.msg);
		if (!strcmp(cmd, "verify"))
			fprintf(stderr, "wtile: %s: verify failed\n", pack);
		free(buf);
		return 2;
	}
	if (!strcmp(cmd, "info"))
		rc = cmd_info(&p, pack, json);
	else if (!strcmp(cmd, "verify"))
		rc = cmd_verify(&p, pack);
	else
		rc = cmd_extract(&p, pack, lod, tx, ty, layer, out);
	free(buf);
	return rc;
}
