/*
 * scene.c - parse and validate a wbake scene (format v1) into struct wb_scene.
 *
 * The format is described by schemas/scene.schema.json; this file is its
 * implementation and must agree with it (tests/test_scene.c checks that every
 * key the parser knows is in the schema and the other way round).
 *
 * Error reporting is the point of this file: a technical artist edits the
 * scene by hand and reruns. Syntax errors carry file, line and column.
 * Semantic errors carry the JSON path ("sources[2].width"), what was found and
 * what was expected, and the line of the offending value when it can be
 * located. Validation goes on after an error so that one run reports every
 * problem. Unknown keys are warnings that name the closest known key.
 *
 * The text is hostile until checked (limits in scene_keys.h): before cJSON
 * sees it, one pass of wb_jscan (jscan.c) checks the syntax, strictly
 * (RFC 8259: no trailing commas, no "01", no raw control bytes in
 * strings, none of which cJSON refuses), and refuses nesting past
 * WB_SCENE_MAX_DEPTH, more than WB_SCENE_MAX_VALUES values, invalid UTF-8,
 * "\u0000" (which cJSON would silently cut strings at) and numbers past a
 * double (which cJSON reads as infinity), naming the line and column and,
 * past the syntax, the JSON path. cJSON's own error pointer is not used:
 * it lands after the fault, often at the end of the file. Because cJSON
 * accepts all strict JSON, a cJSON failure on text wb_jscan accepted is
 * out of memory: WB_EIO, exit 4, not a syntax error. Positions of the
 * semantic diagnostics are found together in one more pass at the end
 * (locate_all), and duplicate keys by sorting, so that no number of
 * problems makes the parse quadratic.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jscan.h"
#include "scene_keys.h"
#include "strutil.h"
#include "util.h"
#include "wbake.h"

struct ctx {
	struct wb_diags *d;
	const char *file;
	int bad; /* errors found */
	int oom; /* out of memory: the result is WB_EIO */
};

/* ---- locating values in the text --------------------------------------- */

/* Line and column (1-based) of byte offset 'off'. */
static long scan_ws(const char *t, size_t len, size_t i)
{
	while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' ||
			   t[i] == '\r'))
		i++;
	return (long)i;
}

/*
 * Give the diagnostics d->v[from..] of 'file' that name a JSON path but no
 * line the line and column of that path, in one pass over the text
 * (wb_jscan): diagnostics are recorded without positions and located
 * together at the end, so that many of them cost no more than a few.
 */
static void locate_all(const char *text, size_t len, const char *file,
		       struct wb_diags *d, int from)
{
	size_t n = 0;
	for (int i = from; i < d->n; i++)
		if (d->v[i].path && !d->v[i].line && d->v[i].file && file &&
		    strcmp(d->v[i].file, file) == 0)
			n++;
	if (!n)
		return;
	struct wb_jscan_loc *locs = calloc(n, sizeof(*locs));
	int *which = calloc(n, sizeof(*which));
	if (!locs || !which)
		goto out; /* positions are a help, not a requirement */
	n = 0;
	for (int i = from; i < d->n; i++)
		if (d->v[i].path && !d->v[i].line && d->v[i].file && file &&
		    strcmp(d->v[i].file, file) == 0) {
			locs[n].path = d->v[i].path;
			which[n++] = i;
		}
	struct wb_jscan_result res;
	wb_jscan(text, len, WB_JSCAN_MAX_DEPTH, 0, locs, n, &res);
	for (size_t k = 0; k < n; k++) {
		d->v[which[k]].line = locs[k].line;
		d->v[which[k]].col = locs[k].col;
	}
out:
	free(locs);
	free(which);
}

static void report(struct ctx *c, enum wb_severity sev, const char *path,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void report(struct ctx *c, enum wb_severity sev, const char *path,
		   const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sev == WB_SEV_ERROR)
		c->bad++;
	/* line and column: located all at once by locate_all() */
	wb_diag_add(c->d, sev, c->file, path, 0, 0, "%s", msg);
}

/* Out of memory: reported (if the report itself can be stored) and the
 * parse ends as WB_EIO, exit 4, not as an invalid scene. */
static void oom(struct ctx *c, const char *path)
{
	c->oom = 1;
	report(c, WB_SEV_ERROR, path, "out of memory");
}

/* strdup that records running out of memory. */
static char *dup_str(struct ctx *c, const char *path, const char *s)
{
	char *r = strdup(s);
	if (!r)
		oom(c, path);
	return r;
}

#define ERR(c, path, ...) report(c, WB_SEV_ERROR, path, __VA_ARGS__)

/* ---- paths ------------------------------------------------------------- */

/* Build "parent.key" or "parent[i]" into buf. */
static const char *pkey(char *buf, size_t n, const char *parent,
			const char *key)
{
	if (!parent || !*parent)
		snprintf(buf, n, "%s", key);
	else
		snprintf(buf, n, "%s.%s", parent, key);
	return buf;
}

static const char *pidx(char *buf, size_t n, const char *parent, int i)
{
	snprintf(buf, n, "%s[%d]", parent, i);
	return buf;
}

#define PATHN 256

/* ---- describing what was found ----------------------------------------- */

static const char *kind_of(const cJSON *v)
{
	if (!v)
		return "nothing";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	return "an invalid value";
}

/* Whether text[0..len) is only JSON white space (or nothing). */
static int blank(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", text[i]) || !text[i])
			return 0;
	return 1;
}

/* Precision for printing at most max bytes of the (valid UTF-8) string s
 * without cutting a character in two. */
static int cut(const char *s, int max)
{
	int n = 0;
	while (n < max && s[n])
		n++;
	if (n == max && s[n])
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--; /* s[n] continues a character: end before it */
	return n;
}

static void found(const cJSON *v, char *buf, size_t n)
{
	if (cJSON_IsNumber(v))
		snprintf(buf, n, "%.15g", v->valuedouble);
	else if (cJSON_IsString(v))
		snprintf(buf, n, "\"%.*s\"", cut(v->valuestring, 60),
			 v->valuestring);
	else
		snprintf(buf, n, "%s", kind_of(v));
}

/* ---- unknown keys ------------------------------------------------------ */

static int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return 99;
	int prev[65], cur[65];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int cost = tolower((unsigned char)a[i - 1]) !=
				   tolower((unsigned char)b[j - 1]);
			int m = prev[j - 1] + cost;
			if (prev[j] + 1 < m)
				m = prev[j] + 1;
			if (cur[j - 1] + 1 < m)
				m = cur[j - 1] + 1;
			cur[j] = m;
		}
		memcpy(prev, cur, sizeof(int) * (lb + 1));
	}
	return prev[lb];
}

/* Order of keys for finding duplicates: by name, then by position. */
struct keyref {
	const char *k;
	int pos;
};

static int keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int r = strcmp(x->k, y->k);
	return r ? r : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Warn about keys of 'obj' that are not in the NULL-terminated list 'known',
 * and about duplicate keys (found by sorting: n log n, not n^2). More than
 * WB_SCENE_MAX_KEYS keys is an error and nothing else is checked. */
static void check_keys(struct ctx *c, const cJSON *obj, const char *path,
		       const char *const *known)
{
	char p[PATHN];
	int n = 0;
	for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next)
		n++;
	if (n > WB_SCENE_MAX_KEYS) {
		ERR(c, path && *path ? path : NULL,
		    "expected at most %d keys in an object, found %d",
		    WB_SCENE_MAX_KEYS, n);
		return;
	}
	unsigned char dup[WB_SCENE_MAX_KEYS] = { 0 };
	struct keyref refs[WB_SCENE_MAX_KEYS];
	int m = 0;
	for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next, m++)
		refs[m] = (struct keyref){ it->string ? it->string : "", m };
	qsort(refs, (size_t)m, sizeof(refs[0]), keyref_cmp);
	for (int i = 1; i < m; i++)
		if (strcmp(refs[i].k, refs[i - 1].k) == 0)
			dup[refs[i].pos] = 1;
	int pos = 0;
	for (const cJSON *it = obj ? obj->child : NULL; it; it = it->next, pos++) {
		const char *k = it->string;
		if (!k)
			continue;
		if (dup[pos])
			report(c, WB_SEV_WARNING, pkey(p, sizeof(p), path, k),
			       "duplicate key \"%s\": the last one is used", k);
		int ok = 0;
		for (int i = 0; known[i]; i++)
			if (strcmp(known[i], k) == 0)
				ok = 1;
		if (ok || k[0] == '$' || (k[0] == '_' ))
			continue; /* "$schema", "_comment" and friends */
		const char *best = NULL;
		int bd = 99;
		size_t kl = strlen(k);
		for (int i = 0; known[i]; i++) {
			/* the distance is at least the difference in length:
			 * skip keys that cannot be close enough to suggest */
			size_t ol = strlen(known[i]);
			if ((kl > ol ? kl - ol : ol - kl) > 1 + kl / 3)
				continue;
			int e = edit_distance(k, known[i]);
			if (e < bd) {
				bd = e;
				best = known[i];
			}
		}
		if (best && bd <= 1 + (int)kl / 3)
			report(c, WB_SEV_WARNING, pkey(p, sizeof(p), path, k),
			       "unknown key \"%.*s\" ignored; did you mean \"%s\"?",
			       cut(k, 60), k, best);
		else
			report(c, WB_SEV_WARNING, pkey(p, sizeof(p), path, k),
			       "unknown key \"%.*s%s\" ignored", cut(k, 60), k,
			       k[cut(k, 60)] ? "..." : "");
	}
}

/* ---- typed getters ----------------------------------------------------- */

/* Case-sensitive member lookup; last duplicate wins (as warned). */
static const cJSON *member(const cJSON *obj, const char *key)
{
	const cJSON *r = NULL;
	if (!cJSON_IsObject(obj))
		return NULL;
	for (const cJSON *it = obj->child; it; it = it->next)
		if (it->string && strcmp(it->string, key) == 0)
			r = it;
	return r;
}

enum { OPT = 0, REQ = 1 };

/* Number in [lo, hi] (lo_open: strictly greater than lo). Returns 1 when
 * present and valid (stored in *out), 0 when absent (default kept), -1 bad. */
static int get_num(struct ctx *c, const cJSON *obj, const char *parent,
		   const char *key, int req, double lo, int lo_open, double hi,
		   double *out)
{
	char p[PATHN], f[96];
	const cJSON *v = member(obj, key);
	pkey(p, sizeof(p), parent, key);
	if (!v) {
		if (req) {
			ERR(c, parent && *parent ? parent : NULL,
			    "missing required key \"%s\" (%s)", key, p);
			return -1;
		}
		return 0;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
		found(v, f, sizeof(f));
		ERR(c, p, "expected a number, found %s", f);
		return -1;
	}
	double x = v->valuedouble;
	if (lo_open ? !(x > lo) : !(x >= lo)) {
		if (hi >= 1e5)
			ERR(c, p, "expected a number %s %g, found %.15g",
			    lo_open ? ">" : ">=", lo, x);
		else
			ERR(c, p, "expected a number in %s%g, %g], found %.15g",
			    lo_open ? "(" : "[", lo, hi, x);
		return -1;
	}
	if (!(x <= hi)) {
		ERR(c, p, "expected a number of at most %g, found %.15g", hi, x);
		return -1;
	}
	*out = x;
	return 1;
}

static int get_int(struct ctx *c, const cJSON *obj, const char *parent,
		   const char *key, int req, long lo, long hi, long *out)
{
	double x;
	int r = get_num(c, obj, parent, key, req, (double)lo, 0, (double)hi, &x);
	if (r <= 0)
		return r;
	if (x != floor(x)) {
		char p[PATHN];
		ERR(c, pkey(p, sizeof(p), parent, key),
		    "expected a whole number, found %.15g", x);
		return -1;
	}
	*out = (long)x;
	return 1;
}

static int get_bool(struct ctx *c, const cJSON *obj, const char *parent,
		    const char *key, int *out)
{
	char p[PATHN], f[96];
	const cJSON *v = member(obj, key);
	if (!v)
		return 0;
	if (!cJSON_IsBool(v)) {
		found(v, f, sizeof(f));
		ERR(c, pkey(p, sizeof(p), parent, key),
		    "expected true or false, found %s", f);
		return -1;
	}
	*out = cJSON_IsTrue(v);
	return 1;
}

/* String; returns 1 and sets *out (borrowed), 0 absent, -1 bad. */
static int get_str(struct ctx *c, const cJSON *obj, const char *parent,
		   const char *key, int req, const char **out)
{
	char p[PATHN], f[96];
	const cJSON *v = member(obj, key);
	pkey(p, sizeof(p), parent, key);
	if (!v) {
		if (req) {
			ERR(c, parent && *parent ? parent : NULL,
			    "missing required key \"%s\" (%s)", key, p);
			return -1;
		}
		return 0;
	}
	if (!cJSON_IsString(v) || !v->valuestring) {
		found(v, f, sizeof(f));
		ERR(c, p, "expected a string, found %s", f);
		return -1;
	}
	*out = v->valuestring;
	return 1;
}

/* The "name" of an entry (materials, sources, blockers, modifiers,
 * keep_dry): a string of at most WB_NAME_MAX bytes, since it ends up in the
 * pack, the manifest and messages. Returns as get_str. */
static int get_name(struct ctx *c, const cJSON *obj, const char *parent,
		    int req, const char **out)
{
	const char *s;
	int r = get_str(c, obj, parent, "name", req, &s);
	if (r <= 0)
		return r;
	size_t n = strlen(s);
	if (n > WB_NAME_MAX) {
		char p[PATHN];
		ERR(c, pkey(p, sizeof(p), parent, "name"),
		    "expected a name of at most %d bytes, found %zu bytes: \"%.*s...\"",
		    WB_NAME_MAX, n, cut(s, 40), s);
		return -1;
	}
	*out = s;
	return 1;
}

/* One of a set of words; returns index, -2 absent, -1 bad. */
static int get_enum(struct ctx *c, const cJSON *obj, const char *parent,
		    const char *key, int req, const char *const *words)
{
	const char *s;
	int r = get_str(c, obj, parent, key, req, &s);
	if (r <= 0)
		return r == 0 ? -2 : -1;
	for (int i = 0; words[i]; i++)
		if (strcmp(s, words[i]) == 0)
			return i;
	char p[PATHN], list[256] = "";
	for (int i = 0; words[i]; i++) {
		strncat(list, i ? ", \"" : "\"", sizeof(list) - strlen(list) - 1);
		strncat(list, words[i], sizeof(list) - strlen(list) - 1);
		strncat(list, "\"", sizeof(list) - strlen(list) - 1);
	}
	ERR(c, pkey(p, sizeof(p), parent, key), "expected one of %s, found \"%.*s\"",
	    list, cut(s, 60), s);
	return -1;
}

/* What a pair of numbers at 'path' is, by its key, for messages. */
static const char *pair_kind(const char *path)
{
	const char *dot = strrchr(path, '.');
	const char *key = dot ? dot + 1 : path;
	if (!strcmp(key, "size"))
		return "[width, height] in pixels";
	if (!strcmp(key, "velocity"))
		return "a velocity [u, v] in m/s";
	if (!strcmp(key, "direction"))
		return "a direction [x, y]";
	return "a point [x, y] in metres";
}

/* A point [x, y]. */
static int get_point(struct ctx *c, const cJSON *v, const char *path,
		     double out[2])
{
	char f[96];
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
	    !cJSON_IsNumber(v->child) || !cJSON_IsNumber(v->child->next) ||
	    !isfinite(v->child->valuedouble) ||
	    !isfinite(v->child->next->valuedouble)) {
		int k = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
		if (cJSON_IsArray(v))
			snprintf(f, sizeof(f), "an array of %d %s", k,
				 k == 2 ? "non-numbers or non-finite numbers" :
				 k == 1 ? "item" : "items");
		else
			found(v, f, sizeof(f));
		ERR(c, path, "expected %s, found %s", pair_kind(path), f);
		return -1;
	}
	out[0] = v->child->valuedouble;
	out[1] = v->child->next->valuedouble;
	return 1;
}

static int get_point_key(struct ctx *c, const cJSON *obj, const char *parent,
			 const char *key, int req, double out[2])
{
	char p[PATHN];
	const cJSON *v = member(obj, key);
	if (!v) {
		if (req)
			ERR(c, parent, "missing required key \"%s\"", key);
		return req ? -1 : 0;
	}
	return get_point(c, v, pkey(p, sizeof(p), parent, key), out);
}

/* A list of at least 'min' points. */
static int get_points(struct ctx *c, const cJSON *v, const char *path, int min,
		      struct wb_polygon *poly)
{
	char f[96], p[PATHN];
	if (!cJSON_IsArray(v)) {
		found(v, f, sizeof(f));
		ERR(c, path, "expected an array of points [[x, y], ...], found %s",
		    f);
		return -1;
	}
	int n = cJSON_GetArraySize(v);
	if (n < min) {
		ERR(c, path, "expected at least %d points, found %d", min, n);
		return -1;
	}
	if (n > WB_SCENE_MAX_POINTS) {
		ERR(c, path, "expected at most %d points, found %d",
		    WB_SCENE_MAX_POINTS, n);
		return -1;
	}
	poly->xy = calloc((size_t)n * 2, sizeof(double));
	if (!poly->xy) {
		oom(c, path);
		return -1;
	}
	int i = 0, bad = 0;
	for (const cJSON *it = v->child; it; it = it->next, i++)
		if (get_point(c, it, pidx(p, sizeof(p), path, i),
			      poly->xy + 2 * i) < 0)
			bad = 1;
	poly->n = n;
	return bad ? -1 : 1;
}

static int get_points_key(struct ctx *c, const cJSON *obj, const char *parent,
			  const char *key, int req, int min,
			  struct wb_polygon *poly)
{
	char p[PATHN];
	const cJSON *v = member(obj, key);
	if (!v) {
		if (req)
			ERR(c, parent, "missing required key \"%s\"", key);
		return req ? -1 : 0;
	}
	return get_points(c, v, pkey(p, sizeof(p), parent, key), min, poly);
}

static int expect_object(struct ctx *c, const cJSON *v, const char *path)
{
	char f[96];
	if (cJSON_IsObject(v))
		return 1;
	found(v, f, sizeof(f));
	ERR(c, path, "expected an object, found %s", f);
	return 0;
}

/* The array of 'what' at 'path': allocates its count + 1 zeroed items of
 * 'size' bytes into *out and returns the count; -1 (reported) when v is not
 * an array, holds more than 'max' items, or memory runs out. */
static int alloc_array(struct ctx *c, const cJSON *v, const char *path,
		       const char *what, int max, size_t size, void **out)
{
	*out = NULL;
	if (!cJSON_IsArray(v)) {
		char f[96];
		found(v, f, sizeof(f));
		ERR(c, path, "expected an array of %s, found %s", what, f);
		return -1;
	}
	int n = cJSON_GetArraySize(v);
	if (n > max) {
		ERR(c, path, "expected at most %d %s, found %d", max, what, n);
		return -1;
	}
	*out = calloc((size_t)n + 1, size);
	if (!*out) {
		oom(c, path);
		return -1;
	}
	return n;
}

/* ---- sections ---------------------------------------------------------- */

static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	if (a < b)
		return 0;
	for (size_t i = 0; i < b; i++)
		if (tolower((unsigned char)s[a - b + i]) != suf[i])
			return 0;
	return 1;
}

static void parse_terrain(struct ctx *c, const cJSON *t, struct wb_scene *sc)
{
	static const char *const fmts[] = { "png", "r16", "r32f", NULL };
	struct wb_terrain_desc *td = &sc->terrain;
	if (!t) {
		ERR(c, NULL, "missing required key \"terrain\"");
		return;
	}
	if (!expect_object(c, t, "terrain"))
		return;
	check_keys(c, t, "terrain", wb_keys_terrain);
	const char *hm;
	if (get_str(c, t, "terrain", "heightmap", REQ, &hm) > 0) {
		if (!*hm)
			ERR(c, "terrain.heightmap", "expected a file name, found \"\"");
		else if (!(td->heightmap = wb_path_join(sc->dir, hm)))
			oom(c, "terrain.heightmap");
	}
	int f = get_enum(c, t, "terrain", "format", OPT, fmts);
	if (f >= 0)
		td->format = (enum wb_hm_format)f;
	else if (f == -2 && td->heightmap)
		td->format = ends_with(td->heightmap, ".r32") ||
				     ends_with(td->heightmap, ".r32f") ||
				     ends_with(td->heightmap, ".f32") ?
			     WB_HM_R32F :
		     ends_with(td->heightmap, ".r16") || ends_with(td->heightmap, ".raw") ?
			     WB_HM_R16 : WB_HM_PNG;
	const cJSON *size = member(t, "size");
	if (size) {
		double wh[2];
		if (get_point(c, size, "terrain.size", wh) > 0) {
			if (wh[0] < 1 || wh[1] < 1 || wh[0] > 65536 ||
			    wh[1] > 65536 || wh[0] != floor(wh[0]) ||
			    wh[1] != floor(wh[1]))
				ERR(c, "terrain.size",
				    "expected [width, height] in whole pixels 1..65536, found [%g, %g]",
				    wh[0], wh[1]);
			else {
				td->width = (int)wh[0];
				td->height = (int)wh[1];
			}
		}
	} else if (f >= 0 && f != WB_HM_PNG) {
		ERR(c, "terrain", "missing required key \"size\": raw %s heightmaps need [width, height]",
		    fmts[f]);
	} else if (f == -2 && td->format != WB_HM_PNG) {
		ERR(c, "terrain", "missing required key \"size\": raw heightmaps need [width, height]");
	}
	td->dx = 1.0;
	if (get_num(c, t, "terrain", "metres_per_pixel", OPT, 0, 1, 1e6, &td->dx) > 0 &&
	    td->dx < 1e-3) /* below 1 mm a cell's area and volumes underflow into nonsense */
		ERR(c, "terrain.metres_per_pixel",
		    "expected at least 0.001 (1 mm per pixel), found %g", td->dx);
	td->height_scale = 1.0;
	get_num(c, t, "terrain", "height_scale", OPT, -1e9, 0, 1e9,
		&td->height_scale);
	td->height_offset = 0.0;
	get_num(c, t, "terrain", "height_offset", OPT, -1e9, 0, 1e9,
		&td->height_offset);
}

static void parse_edges(struct ctx *c, const cJSON *b, struct wb_scene *sc)
{
	static const char *const sides[] = { "west", "east", "north", "south", NULL };
	static const char *const kinds[] = { "wall", "open", "inflow", "level",
					     "periodic", NULL };
	static const char *const slips[] = { "no-slip", "free-slip", NULL };
	for (int s = 0; s < 4; s++)
		sc->edges[s].kind = WB_EDGE_WALL;
	if (!b)
		return;
	if (!expect_object(c, b, "boundaries"))
		return;
	check_keys(c, b, "boundaries", wb_keys_boundaries);
	for (int s = 0; s < 4; s++) {
		char p[PATHN];
		const cJSON *e = member(b, sides[s]);
		struct wb_edge *ed = &sc->edges[s];
		if (!e)
			continue;
		pkey(p, sizeof(p), "boundaries", sides[s]);
		if (cJSON_IsString(e)) { /* shorthand: "west": "open" */
			int k = -1;
			for (int i = 0; kinds[i]; i++)
				if (strcmp(kinds[i], e->valuestring) == 0)
					k = i;
			if (k == WB_EDGE_WALL || k == WB_EDGE_OPEN ||
			    k == WB_EDGE_PERIODIC)
				ed->kind = (enum wb_edge_kind)k;
			else
				ERR(c, p, "expected \"wall\", \"open\", \"periodic\" or an object {\"type\": ...}, found \"%.*s\"",
				    cut(e->valuestring, 40), e->valuestring);
			continue;
		}
		if (!expect_object(c, e, p))
			continue;
		check_keys(c, e, p, wb_keys_edge);
		int k = get_enum(c, e, p, "type", REQ, kinds);
		if (k < 0)
			continue;
		ed->kind = (enum wb_edge_kind)k;
		switch (ed->kind) {
		case WB_EDGE_WALL: {
			int sl = get_enum(c, e, p, "slip", OPT, slips);
			ed->free_slip = sl == 1;
			break;
		}
		case WB_EDGE_INFLOW: {
			int hq = get_num(c, e, p, "discharge", OPT, 0, 1, 1e6,
					 &ed->discharge);
			int hv = get_num(c, e, p, "velocity", OPT, 0, 1, 1e3,
					 &ed->velocity);
			if (hq == 0 && hv == 0)
				ERR(c, p, "inflow needs \"discharge\" (m^2/s per metre of edge) or \"velocity\" (m/s)");
			else if (hq > 0 && hv > 0)
				ERR(c, p, "inflow takes \"discharge\" or \"velocity\", not both");
			get_num(c, e, p, "depth", OPT, 0, 1, 1e4, &ed->depth);
			if (hv > 0 && !member(e, "depth"))
				ERR(c, p, "an inflow given by \"velocity\" needs a \"depth\" (m)");
			break;
		}
		case WB_EDGE_LEVEL:
			if (get_num(c, e, p, "level", REQ, -1e6, 0, 1e6,
				    &ed->level) > 0)
				ed->has_level = 1;
			break;
		case WB_EDGE_OPEN:
		case WB_EDGE_PERIODIC:
			break;
		}
	}
	/* periodic must pair */
	for (int s = 0; s < 4; s += 2) {
		int a = sc->edges[s].kind == WB_EDGE_PERIODIC;
		int b2 = sc->edges[s + 1].kind == WB_EDGE_PERIODIC;
		if (a != b2)
			ERR(c, "boundaries",
			    "\"periodic\" must be set on both %s and %s edges",
			    sides[s], sides[s + 1]);
	}
}

static void parse_initial(struct ctx *c, const cJSON *w, struct wb_scene *sc)
{
	if (!w)
		return;
	if (cJSON_IsString(w)) {
		if (strcmp(w->valuestring, "dry") != 0)
			ERR(c, "initial_water", "expected \"dry\" or an object, found \"%.*s\"",
			    cut(w->valuestring, 40), w->valuestring);
		return;
	}
	if (!expect_object(c, w, "initial_water"))
		return;
	check_keys(c, w, "initial_water", wb_keys_initial);
	if (get_num(c, w, "initial_water", "level", OPT, -1e6, 0, 1e6,
		    &sc->init_level) > 0)
		sc->init_has_level = 1;
	const cJSON *areas = member(w, "areas");
	if (!areas)
		return;
	if (!cJSON_IsArray(areas)) {
		char f[96];
		found(areas, f, sizeof(f));
		ERR(c, "initial_water.areas", "expected an array of {\"polygon\", \"level\"}, found %s", f);
		return;
	}
	int n = cJSON_GetArraySize(areas);
	if (n > WB_SCENE_MAX_POLYGONS) {
		ERR(c, "initial_water.areas", "expected at most %d areas, found %d",
		    WB_SCENE_MAX_POLYGONS, n);
		return;
	}
	sc->init_areas = calloc((size_t)n + 1, sizeof(*sc->init_areas));
	sc->init_area_levels = calloc((size_t)n + 1, sizeof(double));
	if (!sc->init_areas || !sc->init_area_levels) {
		oom(c, "initial_water.areas");
		return;
	}
	sc->n_init_areas = n;
	int i = 0;
	for (const cJSON *a = areas->child; a; a = a->next, i++) {
		char p[PATHN];
		pidx(p, sizeof(p), "initial_water.areas", i);
		if (!expect_object(c, a, p))
			continue;
		check_keys(c, a, p, wb_keys_initial_area);
		get_points_key(c, a, p, "polygon", REQ, 3, &sc->init_areas[i]);
		get_num(c, a, p, "level", REQ, -1e6, 0, 1e6,
			&sc->init_area_levels[i]);
	}
}

static void parse_materials(struct ctx *c, const cJSON *m, struct wb_scene *sc)
{
	static const char *const kinds[] = { "river", "lake", "ocean", NULL };
	void *items;
	int n;
	if (!m || (n = alloc_array(c, m, "materials", "materials", WB_SCENE_MAX_MATERIALS,
				   sizeof(*sc->materials), &items)) < 0)
		return;
	sc->materials = items;
	sc->n_materials = n;
	int i = 0;
	for (const cJSON *it = m->child; it; it = it->next, i++) {
		char p[PATHN];
		struct wb_material *mt = &sc->materials[i];
		pidx(p, sizeof(p), "materials", i);
		mt->id = i + 1;
		if (!expect_object(c, it, p))
			continue;
		check_keys(c, it, p, wb_keys_material);
		long id;
		if (get_int(c, it, p, "id", OPT, 1, 255, &id) > 0)
			mt->id = (int)id;
		const char *name;
		if (get_name(c, it, p, REQ, &name) > 0)
			mt->name = dup_str(c, p, name);
		int k = get_enum(c, it, p, "kind", REQ, kinds);
		if (k >= 0)
			mt->kind = (enum wb_material_kind)k;
		const cJSON *w = member(it, "waves");
		mt->amplitude = 0.05;
		mt->frequency = 0.5;
		mt->speed = 1.0;
		if (w) {
			char q[PATHN];
			pkey(q, sizeof(q), p, "waves");
			if (expect_object(c, w, q)) {
				check_keys(c, w, q, wb_keys_waves);
				get_num(c, w, q, "amplitude", OPT, 0, 0, 100, &mt->amplitude);
				get_num(c, w, q, "frequency", OPT, 0, 0, 1000, &mt->frequency);
				get_num(c, w, q, "speed", OPT, 0, 0, 1000, &mt->speed);
			}
		}
		for (int j = 0; j < i; j++) {
			if (sc->materials[j].id == mt->id)
				ERR(c, p, "material id %d is already used by materials[%d]",
				    mt->id, j);
			if (mt->name && sc->materials[j].name &&
			    strcmp(mt->name, sc->materials[j].name) == 0)
				ERR(c, p, "material name \"%s\" is already used by materials[%d]",
				    mt->name, j);
		}
	}
}

/* Material reference by name or id; returns index or -1. */
static int material_ref(struct ctx *c, const cJSON *obj, const char *parent,
			const struct wb_scene *sc, int req)
{
	char p[PATHN], f[96];
	const cJSON *v = member(obj, "material");
	pkey(p, sizeof(p), parent, "material");
	if (!v) {
		if (req)
			ERR(c, parent, "missing required key \"material\": every water body names a material of \"materials\"");
		return -1;
	}
	for (int i = 0; i < sc->n_materials; i++) {
		const struct wb_material *m = &sc->materials[i];
		if (cJSON_IsString(v) && m->name && strcmp(m->name, v->valuestring) == 0)
			return i;
		if (cJSON_IsNumber(v) && v->valuedouble == m->id)
			return i;
	}
	found(v, f, sizeof(f));
	if (cJSON_IsString(v) || cJSON_IsNumber(v)) {
		char names[256] = "";
		for (int i = 0; i < sc->n_materials && strlen(names) < 200; i++) {
			strncat(names, i ? ", \"" : "\"", sizeof(names) - strlen(names) - 1);
			strncat(names, sc->materials[i].name ? sc->materials[i].name : "?",
				sizeof(names) - strlen(names) - 1);
			strncat(names, "\"", sizeof(names) - strlen(names) - 1);
		}
		ERR(c, p, "no material %s; expected the name or id of one of \"materials\"%s%s",
		    f, sc->n_materials ? ": " : " (none defined)", names);
	} else {
		ERR(c, p, "expected a material name or id, found %s", f);
	}
	return -1;
}

static void parse_sources(struct ctx *c, const cJSON *s, struct wb_scene *sc)
{
	static const char *const kinds[] = { "river", "spring", "lake", "ocean",
					     "rain", "sink", NULL };
	void *items;
	int n;
	if (!s || (n = alloc_array(c, s, "sources", "sources", WB_SCENE_MAX_SOURCES,
				   sizeof(*sc->sources), &items)) < 0)
		return;
	sc->sources = items;
	sc->n_sources = n;
	int i = 0;
	for (const cJSON *it = s->child; it; it = it->next, i++) {
		char p[PATHN];
		struct wb_source *src = &sc->sources[i];
		pidx(p, sizeof(p), "sources", i);
		src->material = -1;
		if (!expect_object(c, it, p))
			continue;
		int k = get_enum(c, it, p, "type", REQ, kinds);
		const char *name;
		if (get_name(c, it, p, OPT, &name) > 0)
			src->name = dup_str(c, p, name);
		if (k < 0) {
			check_keys(c, it, p, wb_keys_source_any);
			continue;
		}
		src->kind = (enum wb_source_kind)k;
		switch (src->kind) {
		case WB_SRC_RIVER:
			check_keys(c, it, p, wb_keys_source_river);
			get_points_key(c, it, p, "path", REQ, 2, &src->path);
			get_num(c, it, p, "width", REQ, 0, 1, 1e5, &src->width);
			get_num(c, it, p, "discharge", REQ, 0, 1, 1e7, &src->discharge);
			src->material = material_ref(c, it, p, sc, REQ);
			break;
		case WB_SRC_SPRING:
			check_keys(c, it, p, wb_keys_source_spring);
			if (get_point_key(c, it, p, "point", REQ, src->point) > 0)
				src->has_point = 1;
			src->radius = 2.0;
			get_num(c, it, p, "radius", OPT, 0, 1, 1e5, &src->radius);
			get_num(c, it, p, "discharge", REQ, 0, 1, 1e7, &src->discharge);
			src->material = material_ref(c, it, p, sc, REQ);
			break;
		case WB_SRC_LAKE: {
			check_keys(c, it, p, wb_keys_source_lake);
			int hp = get_points_key(c, it, p, "polygon", OPT, 3, &src->area);
			int hs = get_point_key(c, it, p, "seed", OPT, src->point);
			if (hs > 0)
				src->has_point = 1;
			if (hp == 0 && hs == 0)
				ERR(c, p, "a lake needs a \"polygon\" or a \"seed\" point");
			else if (hp > 0 && hs > 0)
				ERR(c, p, "a lake takes a \"polygon\" or a \"seed\" point, not both");
			get_num(c, it, p, "level", REQ, -1e6, 0, 1e6, &src->level);
			src->material = material_ref(c, it, p, sc, REQ);
			break;
		}
		case WB_SRC_OCEAN: {
			check_keys(c, it, p, wb_keys_source_ocean);
			get_num(c, it, p, "level", REQ, -1e6, 0, 1e6, &src->level);
			const cJSON *ex = member(it, "exclude");
			if (ex) {
				char q[PATHN], r[PATHN];
				pkey(q, sizeof(q), p, "exclude");
				if (!cJSON_IsArray(ex)) {
					char f[96];
					found(ex, f, sizeof(f));
					ERR(c, q, "expected an array of polygons, found %s", f);
				} else {
					int m = cJSON_GetArraySize(ex);
					src->exclude = m > WB_SCENE_MAX_EXCLUDE ? NULL :
						calloc((size_t)m + 1, sizeof(*src->exclude));
					if (m > WB_SCENE_MAX_EXCLUDE)
						ERR(c, q, "expected at most %d polygons, found %d",
						    WB_SCENE_MAX_EXCLUDE, m);
					else if (!src->exclude)
						oom(c, q);
					else {
						src->n_exclude = m;
						int j = 0;
						for (const cJSON *e = ex->child; e; e = e->next, j++)
							get_points(c, e, pidx(r, sizeof(r), q, j), 3,
								   &src->exclude[j]);
					}
				}
			}
			src->material = material_ref(c, it, p, sc, REQ);
			break;
		}
		case WB_SRC_RAIN:
			check_keys(c, it, p, wb_keys_source_rain);
			get_num(c, it, p, "rate", REQ, 0, 1, 1e4, &src->rate_mm_h);
			get_points_key(c, it, p, "region", OPT, 3, &src->area);
			src->material = material_ref(c, it, p, sc, OPT);
			break;
		case WB_SRC_SINK: {
			check_keys(c, it, p, wb_keys_source_sink);
			int hp = get_point_key(c, it, p, "point", OPT, src->point);
			int hr = get_points_key(c, it, p, "region", OPT, 3, &src->area);
			if (hp > 0)
				src->has_point = 1;
			if (hp == 0 && hr == 0)
				ERR(c, p, "a sink needs a \"point\" (with \"radius\") or a \"region\"");
			else if (hp > 0 && hr > 0)
				ERR(c, p, "a sink takes a \"point\" or a \"region\", not both");
			src->radius = 2.0;
			get_num(c, it, p, "radius", OPT, 0, 1, 1e5, &src->radius);
			int hq = get_num(c, it, p, "discharge", OPT, 0, 1, 1e7,
					 &src->discharge);
			int hd = get_bool(c, it, p, "drain_all", &src->drain_all);
			if (hq == 0 && !(hd > 0 && src->drain_all))
				ERR(c, p, "a sink needs a \"discharge\" (m^3/s removed) or \"drain_all\": true");
			else if (hq > 0 && hd > 0 && src->drain_all)
				ERR(c, p, "a sink takes \"discharge\" or \"drain_all\", not both");
			break;
		}
		}
	}
}

static void parse_blockers(struct ctx *c, const cJSON *b, struct wb_scene *sc)
{
	void *items;
	int n;
	if (!b || (n = alloc_array(c, b, "blockers", "blockers", WB_SCENE_MAX_POLYGONS,
				   sizeof(*sc->blockers), &items)) < 0)
		return;
	sc->blockers = items;
	sc->n_blockers = n;
	int i = 0;
	for (const cJSON *it = b->child; it; it = it->next, i++) {
		char p[PATHN];
		struct wb_blocker *bl = &sc->blockers[i];
		pidx(p, sizeof(p), "blockers", i);
		if (!expect_object(c, it, p))
			continue;
		check_keys(c, it, p, wb_keys_blocker);
		const char *name;
		if (get_name(c, it, p, OPT, &name) > 0)
			bl->name = dup_str(c, p, name);
		get_points_key(c, it, p, "polygon", REQ, 3, &bl->area);
		int hb = get_num(c, it, p, "bottom", REQ, -1e6, 0, 1e6, &bl->bottom);
		int ht = get_num(c, it, p, "top", REQ, -1e6, 0, 1e6, &bl->top);
		if (hb > 0 && ht > 0 && !(bl->top > bl->bottom)) {
			char q[PATHN];
			ERR(c, pkey(q, sizeof(q), p, "top"),
			    "expected top above bottom (%g m), found %g", bl->bottom,
			    bl->top);
		}
	}
}

static void parse_modifiers(struct ctx *c, const cJSON *m, struct wb_scene *sc)
{
	static const char *const falloffs[] = { "none", "linear", "smooth", NULL };
	void *items;
	int n;
	if (!m || (n = alloc_array(c, m, "modifiers", "modifiers", WB_SCENE_MAX_POLYGONS,
				   sizeof(*sc->modifiers), &items)) < 0)
		return;
	sc->modifiers = items;
	sc->n_modifiers = n;
	int i = 0;
	for (const cJSON *it = m->child; it; it = it->next, i++) {
		char p[PATHN];
		struct wb_modifier *md = &sc->modifiers[i];
		pidx(p, sizeof(p), "modifiers", i);
		if (!expect_object(c, it, p))
			continue;
		check_keys(c, it, p, wb_keys_modifier);
		const char *name;
		if (get_name(c, it, p, OPT, &name) > 0)
			md->name = dup_str(c, p, name);
		int hp = get_points_key(c, it, p, "polygon", OPT, 3, &md->area);
		int hc = get_point_key(c, it, p, "center", OPT, md->center);
		if (hc > 0)
			get_num(c, it, p, "radius", REQ, 0, 1, 1e6, &md->radius);
		if (hp == 0 && hc == 0)
			ERR(c, p, "a modifier needs a \"polygon\" or a \"center\" and \"radius\"");
		else if (hp > 0 && hc > 0)
			ERR(c, p, "a modifier takes a \"polygon\" or a \"center\", not both");
		double dir[2];
		int hv = get_point_key(c, it, p, "velocity", OPT, md->target);
		int hd = get_point_key(c, it, p, "direction", OPT, dir);
		if (hd > 0) {
			double s = 1.0, l = hypot(dir[0], dir[1]);
			char q[PATHN];
			get_num(c, it, p, "speed", REQ, 0, 0, 1e3, &s);
			if (l == 0)
				ERR(c, pkey(q, sizeof(q), p, "direction"),
				    "expected a non-zero direction, found [0, 0]");
			else {
				md->target[0] = dir[0] / l * s;
				md->target[1] = dir[1] / l * s;
			}
		}
		if (hv == 0 && hd == 0)
			ERR(c, p, "a modifier needs a target \"velocity\" [u, v] or a \"direction\" with a \"speed\"");
		else if (hv > 0 && hd > 0)
			ERR(c, p, "a modifier takes \"velocity\" or \"direction\", not both");
		md->strength = 0.5;
		get_num(c, it, p, "strength", OPT, 0, 1, 1e3, &md->strength);
		md->falloff = WB_FALLOFF_SMOOTH;
		int f = get_enum(c, it, p, "falloff", OPT, falloffs);
		if (f >= 0)
			md->falloff = (enum wb_falloff)f;
		md->falloff_width = 0;
		get_num(c, it, p, "falloff_width", OPT, 0, 0, 1e6, &md->falloff_width);
	}
}

static void sim_defaults(struct wb_sim *s)
{
	s->solver = WB_SOLVER_LBM;
	s->manning = 0.03;
	s->viscosity = 0.01;
	s->lattice_speed = 0;
	s->dt = 0;
	s->max_steps = 20000;
	s->tolerance = 1e-4;
	s->window = 200;
	s->dry_depth = 1e-3;
	s->seed = 1;
	s->foam_trapped = 1.0;
	s->foam_steep = 1.0;
	s->foam_trapped_min = 0.5;
	s->foam_trapped_max = 3.0;
	s->foam_steep_min = 0.1;
	s->foam_steep_max = 1.0;
	s->foam_diffusion = 0.05;
	s->foam_dissipation = 0.2;
	s->maccormack = 1;
	s->coarse_levels = -1; /* "auto" */
	s->steady_accel = -1;  /* "auto" */
	s->lbm_hybrid = 1; /* the LBM/FV hybrid (docs/lbm.md) */
}

/* "auto" or a positive number. */
static void get_auto(struct ctx *c, const cJSON *obj, const char *parent,
		     const char *key, double hi, double *out)
{
	const cJSON *v = member(obj, key);
	if (v && cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0) {
		*out = 0;
		return;
	}
	if (v && !cJSON_IsNumber(v)) {
		char p[PATHN], f[96];
		found(v, f, sizeof(f));
		ERR(c, pkey(p, sizeof(p), parent, key),
		    "expected \"auto\" or a number > 0, found %s", f);
		return;
	}
	get_num(c, obj, parent, key, OPT, 0, 1, hi, out);
}

/* simulation.keep_dry: [{"name", "point" | "polygon"}] */
static void parse_keep_dry(struct ctx *c, const cJSON *k, struct wb_scene *sc)
{
	const char *base = "simulation.keep_dry";
	void *items;
	int n;
	if (!k || (n = alloc_array(c, k, base, base, 1 << 16,
				   sizeof(*sc->keep_dry), &items)) < 0)
		return;
	sc->keep_dry = items;
	sc->n_keep_dry = n;
	int i = 0;
	for (const cJSON *it = k->child; it; it = it->next, i++) {
		char p[PATHN];
		struct wb_keep_dry *kd = &sc->keep_dry[i];
		pidx(p, sizeof(p), base, i);
		if (!expect_object(c, it, p))
			continue;
		check_keys(c, it, p, wb_keys_keep_dry);
		const char *name;
		if (get_name(c, it, p, REQ, &name) > 0)
			kd->name = strdup(name);
		int hp = member(it, "point") != NULL, ha = member(it, "polygon") != NULL;
		if (hp == ha)
			ERR(c, p, "expected exactly one of \"point\" or \"polygon\"");
		else if (hp)
			get_point_key(c, it, p, "point", REQ, kd->point);
		else
			get_points_key(c, it, p, "polygon", REQ, 3, &kd->area);
	}
}

static void parse_sim(struct ctx *c, const cJSON *s, struct wb_scene *sc)
{
	static const char *const solvers[] = { "lbm", "swe", NULL };
	struct wb_sim *sim = &sc->sim;
	sim_defaults(sim);
	if (!s)
		return;
	if (!expect_object(c, s, "simulation"))
		return;
	check_keys(c, s, "simulation", wb_keys_sim);
	int k = get_enum(c, s, "simulation", "solver", OPT, solvers);
	if (k >= 0)
		sim->solver = (enum wb_solver_kind)k;
	get_num(c, s, "simulation", "manning", OPT, 0, 0, 1, &sim->manning);
	get_num(c, s, "simulation", "viscosity", OPT, 0, 1, 1e4, &sim->viscosity);
	get_auto(c, s, "simulation", "lattice_speed", 1e6, &sim->lattice_speed);
	get_auto(c, s, "simulation", "dt", 1e4, &sim->dt);
	get_int(c, s, "simulation", "max_steps", OPT, 1, 1000000000L, &sim->max_steps);
	get_num(c, s, "simulation", "tolerance", OPT, 0, 1, 1, &sim->tolerance);
	get_int(c, s, "simulation", "window", OPT, 1, 1000000L, &sim->window);
	get_num(c, s, "simulation", "dry_depth", OPT, 0, 1, 10, &sim->dry_depth);
	long seed;
	if (get_int(c, s, "simulation", "seed", OPT, 0, 2147483647L, &seed) > 0)
		sim->seed = (unsigned long long)seed;
	static const char *const advs[] = { "semi-lagrangian", "maccormack", NULL };
	int a = get_enum(c, s, "simulation", "advection", OPT, advs);
	if (a >= 0)
		sim->maccormack = a == 1;
	get_bool(c, s, "simulation", "lbm_hybrid", &sim->lbm_hybrid);
	static const char *const inits[] = { "hydrology", "scene", NULL };
	int ini = get_enum(c, s, "simulation", "initial", OPT, inits);
	if (ini >= 0)
		sim->initial = ini == 1 ? WB_INIT_SCENE : WB_INIT_HYDROLOGY;
	parse_keep_dry(c, member(s, "keep_dry"), sc);
	/* coarse_levels: "auto" or 0..WB_COARSE_MAX (src/coarse.h) */
	const cJSON *cl = member(s, "coarse_levels");
	if (cl && cJSON_IsString(cl)) {
		if (strcmp(cl->valuestring, "auto") != 0)
			ERR(c, "simulation.coarse_levels",
			    "expected \"auto\" or a whole number in [0, 3], found \"%.*s\"",
			    cut(cl->valuestring, 60), cl->valuestring);
	} else if (cl) {
		long lv;
		if (!cJSON_IsNumber(cl)) {
			char f[96];
			found(cl, f, sizeof(f));
			ERR(c, "simulation.coarse_levels",
			    "expected \"auto\" or a whole number in [0, 3], found %s", f);
		} else if (get_int(c, s, "simulation", "coarse_levels", OPT, 0, 3, &lv) > 0)
			sim->coarse_levels = (int)lv;
	}
	/* steady_acceleration (docs/hydrology.md "Steady acceleration") */
	static const char *const accs[] = { "auto", "off", "low_froude", NULL };
	int acc = get_enum(c, s, "simulation", "steady_acceleration", OPT, accs);
	if (acc >= 0)
		sim->steady_accel = acc - 1;
	const cJSON *f = member(s, "foam");
	if (f && expect_object(c, f, "simulation.foam")) {
		const char *p = "simulation.foam";
		check_keys(c, f, p, wb_keys_foam);
		get_num(c, f, p, "trapped_air", OPT, 0, 0, 1e3, &sim->foam_trapped);
		get_num(c, f, p, "steepness", OPT, 0, 0, 1e3, &sim->foam_steep);
		get_num(c, f, p, "trapped_air_min", OPT, 0, 0, 1e3, &sim->foam_trapped_min);
		get_num(c, f, p, "trapped_air_max", OPT, 0, 0, 1e3, &sim->foam_trapped_max);
		get_num(c, f, p, "steepness_min", OPT, 0, 0, 1e3, &sim->foam_steep_min);
		get_num(c, f, p, "steepness_max", OPT, 0, 0, 1e3, &sim->foam_steep_max);
		get_num(c, f, p, "diffusion", OPT, 0, 0, 1e3, &sim->foam_diffusion);
		get_num(c, f, p, "dissipation", OPT, 0, 0, 1e3, &sim->foam_dissipation);
		if (!(sim->foam_trapped_max > sim->foam_trapped_min))
			ERR(c, "simulation.foam.trapped_air_max",
			    "expected trapped_air_max above trapped_air_min (%g), found %g",
			    sim->foam_trapped_min, sim->foam_trapped_max);
		if (!(sim->foam_steep_max > sim->foam_steep_min))
			ERR(c, "simulation.foam.steepness_max",
			    "expected steepness_max above steepness_min (%g), found %g",
			    sim->foam_steep_min, sim->foam_steep_max);
	}
}

/* output.compression: {"flow": "bc5", "distance": "bc4", "foam": "bc4"}
 * (each also "none"), the layers stored block-compressed
 * (docs/wtp-format.md 4.1). Height stays R16F (its seams are bit-exact)
 * and material R8_UINT (ids are categorical: section 4.1 says why). */
static void parse_compression(struct ctx *c, const cJSON *o,
			      struct wb_output *out)
{
	static const char *const names[WB_LAYER_COUNT] = {
		"height", "flow", "material", "distance", "foam"
	};
	const cJSON *v = member(o, "compression");
	out->bc_layers = 0;
	if (!v || !expect_object(c, v, "output.compression"))
		return;
	for (const cJSON *it = v->child; it; it = it->next) {
		char p[PATHN], f[96];
		const char *key = it->string ? it->string : "";
		pkey(p, sizeof(p), "output.compression", key);
		int k = -1;
		for (int j = 0; j < WB_LAYER_COUNT; j++)
			if (strcmp(names[j], key) == 0)
				k = j;
		if (k == WB_LAYER_HEIGHT) {
			ERR(c, p, "heights cannot be block-compressed: they stay 16-bit (R16F, bit-exact seams)");
			continue;
		}
		if (k == WB_LAYER_MATERIAL) {
			ERR(c, p, "material ids cannot be block-compressed: BC4 interpolates between ids (docs/wtp-format.md 4.1)");
			continue;
		}
		if (k < 0) {
			ERR(c, p, "expected a layer name: \"flow\", \"distance\" or \"foam\"");
			continue;
		}
		const char *want = k == WB_LAYER_FLOW ? "bc5" : "bc4";
		found(it, f, sizeof(f));
		if (!cJSON_IsString(it) || (strcmp(it->valuestring, want) != 0 &&
					    strcmp(it->valuestring, "none") != 0)) {
			ERR(c, p, "expected \"%s\" or \"none\", found %s", want, f);
			continue;
		}
		if (strcmp(it->valuestring, "none") == 0)
			continue;
		if (!(out->layers & (1u << k))) {
			ERR(c, p, "the %s layer is not in output.layers", names[k]);
			continue;
		}
		out->bc_layers |= 1u << k;
	}
}

static void parse_output(struct ctx *c, const cJSON *o, struct wb_scene *sc)
{
	static const char *const layers[] = { "height", "flow", "material",
					      "distance", "foam", NULL };
	struct wb_output *out = &sc->output;
	out->lods = 4;
	out->layers = (1u << WB_LAYER_COUNT) - 1;
	out->distance_max = 64;
	out->min_depth = WB_MIN_DEPTH_DEFAULT;
	/* under rain, sheet flow on hillslopes is not water (sources are
	 * parsed before the output) */
	out->min_flow = 0;
	for (int i = 0; i < sc->n_sources; i++)
		if (sc->sources[i].kind == WB_SRC_RAIN)
			out->min_flow = WB_MIN_FLOW_RAIN_DEFAULT;
	if (!o)
		return;
	if (!expect_object(c, o, "output"))
		return;
	check_keys(c, o, "output", wb_keys_output);
	long lods;
	if (get_int(c, o, "output", "lods", OPT, 1, 16, &lods) > 0)
		out->lods = (int)lods;
	get_num(c, o, "output", "distance_max", OPT, 0, 1, 1e6, &out->distance_max);
	get_num(c, o, "output", "min_depth", OPT, 0, 0, 100, &out->min_depth);
	get_num(c, o, "output", "min_flow", OPT, 0, 0, 1e3, &out->min_flow);
	const cJSON *l = member(o, "layers");
	if (!l) {
		parse_compression(c, o, out);
		return;
	}
	if (!cJSON_IsArray(l)) {
		char f[96];
		found(l, f, sizeof(f));
		ERR(c, "output.layers", "expected an array of layer names, found %s", f);
		return;
	}
	out->layers = 0;
	int i = 0;
	for (const cJSON *it = l->child; it; it = it->next, i++) {
		char p[PATHN];
		pidx(p, sizeof(p), "output.layers", i);
		int k = -1;
		if (cJSON_IsString(it))
			for (int j = 0; layers[j]; j++)
				if (strcmp(layers[j], it->valuestring) == 0)
					k = j;
		if (k < 0) {
			char f[96];
			found(it, f, sizeof(f));
			ERR(c, p, "expected one of \"height\", \"flow\", \"material\", \"distance\", \"foam\", found %s",
			    f);
			continue;
		}
		out->layers |= 1u << k;
	}
	if (!(out->layers & (1u << WB_LAYER_HEIGHT)))
		ERR(c, "output.layers", "the \"height\" layer is required: pages are classified by it");
	parse_compression(c, o, out);
}

/* Cross-checks that need the whole scene. */
static void check_scene(struct ctx *c, struct wb_scene *sc)
{
	int bodies = 0;
	for (int i = 0; i < sc->n_sources; i++)
		if (sc->sources[i].kind != WB_SRC_SINK)
			bodies++;
	int inflow = 0;
	for (int s = 0; s < 4; s++)
		if (sc->edges[s].kind == WB_EDGE_INFLOW ||
		    sc->edges[s].kind == WB_EDGE_LEVEL)
			inflow = 1;
	if (!bodies && !inflow && !sc->init_has_level && !sc->n_init_areas)
		report(c, WB_SEV_WARNING, NULL,
		       "the scene has no water: no sources, no inflow or level edge, no initial water");
}

/* ---- entry points ------------------------------------------------------ */

static char *dirname_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

enum wb_status wb_scene_parse(const char *text, size_t len, const char *file,
			      const char *dir, struct wb_scene *sc,
			      struct wb_diags *d)
{
	struct ctx c = { d, file, 0, 0 };
	int first = d->n;
	memset(sc, 0, sizeof(*sc));
	sc->file = strdup(file ? file : "<scene>");
	sc->dir = strdup(dir ? dir : ".");
	if (!sc->file || !sc->dir)
		return wb_fail(d, WB_EIO, file, "out of memory");
	wb_sha256(text, len, sc->scene_sha256);
	sim_defaults(&sc->sim);

	if (len > WB_SCENE_MAX_BYTES)
		return wb_fail(d, WB_EINPUT, file,
			       "too large: %zu bytes, more than the %zu-byte "
			       "limit for a scene", len, WB_SCENE_MAX_BYTES);
	if (len >= 3 && (unsigned char)text[0] == 0xEF &&
	    (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF) {
		text += 3; /* UTF-8 byte order mark */
		len -= 3;
	}
	if (len >= 2 && (((unsigned char)text[0] == 0xFF &&
			  (unsigned char)text[1] == 0xFE) ||
			 ((unsigned char)text[0] == 0xFE &&
			  (unsigned char)text[1] == 0xFF)))
		return wb_fail(d, WB_EINPUT, file,
			       "the file is UTF-16 (it starts with the byte order mark %02x %02x): save the scene as UTF-8",
			       (unsigned char)text[0], (unsigned char)text[1]);
	if (blank(text, len)) {
		wb_diag_add(d, WB_SEV_ERROR, file, NULL, 0, 0,
			    "the file is empty%s: expected a scene, a JSON object",
			    len ? " (only white space)" : "");
		return WB_EINPUT;
	}
	/* Syntax, and what cJSON does not check: nesting, UTF-8, NUL
	 * escapes, numbers past a double. wb_jscan says what and where. */
	struct wb_jscan_result js;
	wb_jscan(text, len, WB_SCENE_MAX_DEPTH, WB_SCENE_MAX_VALUES, NULL, 0, &js);
	if (js.status != WB_JSCAN_OK) {
		const char *what = js.in_key ? "a key" : "a string";
		const char *path = js.path[0] ? js.path : NULL;
		if (js.status == WB_JSCAN_SYNTAX)
			wb_diag_add(d, WB_SEV_ERROR, file, NULL, js.line, js.col,
				    "syntax error: %s", js.msg);
		else if (js.status == WB_JSCAN_RANGE)
			wb_diag_add(d, WB_SEV_ERROR, file, path, js.line, js.col,
				    "%s", js.msg);
		else if (js.status == WB_JSCAN_DEPTH)
			wb_diag_add(d, WB_SEV_ERROR, file, path, js.line, js.col,
				    "arrays and objects nested more than %d deep",
				    WB_SCENE_MAX_DEPTH);
		else if (js.status == WB_JSCAN_COUNT)
			wb_diag_add(d, WB_SEV_ERROR, file, path, js.line, js.col,
				    "more than %d values (numbers, strings, arrays, objects) in the scene",
				    WB_SCENE_MAX_VALUES);
		else if (js.status == WB_JSCAN_UTF8)
			wb_diag_add(d, WB_SEV_ERROR, file, path, js.line, js.col,
				    "%s is not valid UTF-8 (byte 0x%02x)", what,
				    js.byte);
		else if (js.status == WB_JSCAN_NUL)
			wb_diag_add(d, WB_SEV_ERROR, file, path, js.line, js.col,
				    "%s holds \\u0000 (NUL), which is not allowed",
				    what);
		else if (js.status == WB_JSCAN_ESCAPE)
			wb_diag_add(d, WB_SEV_ERROR, file, path, js.line, js.col,
				    "%s holds a \\u escape without four hex digits",
				    what);
		else /* NOMEM: only with paths to locate, never here */
			return wb_fail(d, WB_EIO, file, "out of memory");
		return WB_EINPUT;
	}
	/* only white space may follow the scene object */
	size_t off = (size_t)scan_ws(text, len, js.off);
	if (off < len) {
		int line, col;
		wb_jscan_linecol(text, len, off, &line, &col);
		wb_diag_add(d, WB_SEV_ERROR, file, NULL, line, col,
			    "syntax error: %s after the %s",
			    text[off] ? "unexpected text" :
			    "a NUL byte (a scene is UTF-8 text)",
			    text[js.off - 1] == '}' ? "scene object" :
			    "first JSON value");
		return WB_EINPUT;
	}
	cJSON *root = cJSON_ParseWithLengthOpts(text, js.off, NULL, 0);
	if (!root)
		/* the text is strict JSON, which cJSON accepts (jscan.c):
		 * cJSON can only have failed to allocate */
		return wb_fail(d, WB_EIO, file,
			       "out of memory parsing the scene (%zu bytes)",
			       len);
	if (!cJSON_IsObject(root)) {
		char f[96];
		found(root, f, sizeof(f));
		wb_diag_add(d, WB_SEV_ERROR, file, NULL, 1, 1,
			    "expected the scene to be a JSON object, found %s", f);
		cJSON_Delete(root);
		return WB_EINPUT;
	}
	check_keys(&c, root, "", wb_keys_root);

	const char *name;
	if (get_str(&c, root, "", "name", REQ, &name) > 0) {
		int okname = *name != 0 && strlen(name) <= 100;
		for (const char *q = name; *q; q++)
			if (!isalnum((unsigned char)*q) && !strchr("-_.", *q))
				okname = 0;
		if (!okname || name[0] == '.')
			ERR(&c, "name",
			    "expected a file-name-safe name (letters, digits, '-', '_', '.', at most 100, not starting with '.'), found \"%.*s\"",
			    cut(name, 60), name);
		else
			sc->name = dup_str(&c, "name", name);
	}
	long version = 1;
	if (get_int(&c, root, "", "version", OPT, 1, 1000, &version) > 0 &&
	    version != 1)
		ERR(&c, "version",
		    "this wbake reads scene format version 1, found version %ld",
		    version);
	sc->version = (int)version;
	const cJSON *org = member(root, "origin");
	if (org && get_point(&c, org, "origin", sc->origin) > 0 &&
	    (fabs(sc->origin[0]) > WB_ORIGIN_MAX ||
	     fabs(sc->origin[1]) > WB_ORIGIN_MAX))
		/* world positions are origin + cells x spacing in double,
		 * well below a millimetre within this bound (beyond it they
		 * lose precision, and the manifest printed hundreds of
		 * digits) */
		ERR(&c, "origin", "expected world coordinates between -%.0f and %.0f m, found [%.6g, %.6g]",
		    WB_ORIGIN_MAX, WB_ORIGIN_MAX, sc->origin[0], sc->origin[1]);

	/* materials first: sources refer to them */
	parse_materials(&c, member(root, "materials"), sc);
	parse_terrain(&c, member(root, "terrain"), sc);
	parse_edges(&c, member(root, "boundaries"), sc);
	parse_initial(&c, member(root, "initial_water"), sc);
	parse_sources(&c, member(root, "sources"), sc);
	parse_blockers(&c, member(root, "blockers"), sc);
	parse_modifiers(&c, member(root, "modifiers"), sc);
	parse_sim(&c, member(root, "simulation"), sc);
	parse_output(&c, member(root, "output"), sc);
	check_scene(&c, sc);
	cJSON_Delete(root);
	locate_all(text, len, file, d, first);
	return c.oom ? WB_EIO : c.bad ? WB_EINPUT : WB_OK;
}

enum wb_status wb_scene_load(const char *path, struct wb_scene *sc,
			     struct wb_diags *d)
{
	unsigned char *text;
	size_t len;
	memset(sc, 0, sizeof(*sc));
	enum wb_status st = wb_read_file_max(path, WB_SCENE_MAX_BYTES,
					     "a scene", &text, &len, d);
	if (st != WB_OK)
		return st;
	char *dir = dirname_of(path);
	if (!dir) {
		free(text);
		return wb_fail(d, WB_EIO, path, "out of memory");
	}
	st = wb_scene_parse((const char *)text, len, path, dir, sc, d);
	free(dir);
	free(text);
	return st;
}

void wb_scene_locate(const char *text, size_t len, const char *file,
		     struct wb_diags *d, int from)
{
	if (len >= 3 && (unsigned char)text[0] == 0xEF &&
	    (unsigned char)text[1] == 0xBB && (unsigned char)text[2] == 0xBF) {
		text += 3; /* as wb_scene_parse: columns count after the BOM */
		len -= 3;
	}
	locate_all(text, len, file, d, from);
}

static void poly_free(struct wb_polygon *p)
{
	if (p)
		free(p->xy);
}

void wb_scene_free(struct wb_scene *sc)
{
	if (!sc)
		return;
	free(sc->file);
	free(sc->dir);
	free(sc->name);
	free(sc->terrain.heightmap);
	for (int i = 0; i < sc->n_init_areas; i++)
		poly_free(&sc->init_areas[i]);
	free(sc->init_areas);
	free(sc->init_area_levels);
	for (int i = 0; i < sc->n_sources; i++) {
		struct wb_source *s = &sc->sources[i];
		free(s->name);
		poly_free(&s->path);
		poly_free(&s->area);
		for (int j = 0; j < s->n_exclude; j++)
			poly_free(&s->exclude[j]);
		free(s->exclude);
	}
	free(sc->sources);
	for (int i = 0; i < sc->n_blockers; i++) {
		free(sc->blockers[i].name);
		poly_free(&sc->blockers[i].area);
	}
	free(sc->blockers);
	for (int i = 0; i < sc->n_modifiers; i++) {
		free(sc->modifiers[i].name);
		poly_free(&sc->modifiers[i].area);
	}
	free(sc->modifiers);
	for (int i = 0; i < sc->n_keep_dry; i++) {
		free(sc->keep_dry[i].name);
		poly_free(&sc->keep_dry[i].area);
	}
	free(sc->keep_dry);
	for (int i = 0; i < sc->n_materials; i++)
		free(sc->materials[i].name);
	free(sc->materials);
	memset(sc, 0, sizeof(*sc));
}
