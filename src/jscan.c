/*
 * jscan.c - one iterative pass over JSON text: UTF-8, NUL escapes, depth,
 * and the line and column of requested JSON paths (see jscan.h).
 *
 * The grammar follows cJSON 1.7's parser (cJSON.c parse_value and friends)
 * so that "wb_jscan accepts, cJSON failed" can only mean cJSON ran out of
 * memory: whitespace is any byte <= 32; strings end at the first unescaped
 * quote, accept raw control bytes, and take the escapes b f n r t " \ / u
 * with surrogate pairs checked as cJSON does; numbers are what strtod()
 * reads of the longest run (at most 63 bytes) of "0-9 + - e E .".
 * Stricter than cJSON (so reported, not silently accepted): invalid UTF-8,
 * "\u0000", and "\u" without four hex digits, which cJSON turns into a NUL.
 *
 * Workload: the whole scene once before cJSON parses it, and once more
 * after validation when diagnostics need positions; O(text + paths).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "strutil.h"

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= FNV_PRIME;
	}
	return h;
}

struct frame {
	int obj;        /* object (1) or array (0) */
	long idx;       /* index of the current element */
	size_t plen;    /* the container's own path */
	uint64_t h;
	int ovf;
};

struct scan {
	const unsigned char *t;
	size_t len, i;
	int line;
	size_t lstart;  /* offset of the current line's first byte */
	/* the path of the value being scanned, and its hash */
	char path[WB_JSCAN_PATHN];
	size_t plen;
	uint64_t h;
	int ovf;        /* path too long: not located */
	/* requested paths: open addressing on their hash; equal paths are
	 * chained through next[] (index + 1, 0 ends) */
	struct wb_jscan_loc *locs;
	size_t n, mask;
	size_t *slot, *next;
	uint64_t *lh;
	struct wb_jscan_result *res;
	char key[WB_JSCAN_PATHN]; /* decoded key (truncated) */
	size_t klen;
	int key_ovf;
};

/* Count the newlines of t[from..to) into line/lstart. */
static void lines_to(struct scan *s, size_t from, size_t to)
{
	const unsigned char *p = s->t + from, *e = s->t + to;
	while (p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
		s->line++;
		s->lstart = (size_t)(p - s->t) + 1;
		p++;
	}
}

static void skip_ws(struct scan *s)
{
	while (s->i < s->len && s->t[s->i] <= 32) {
		if (s->t[s->i] == '\n') {
			s->line++;
			s->lstart = s->i + 1;
		}
		s->i++;
	}
}

/* Stop with status st at offset off (line/col from the counters, which must
 * have been brought up to off). Returns -1 for the caller to propagate. */
static int stop(struct scan *s, enum wb_jscan_status st, size_t off)
{
	struct wb_jscan_result *r = s->res;
	r->status = st;
	r->off = off;
	r->line = s->line;
	r->col = (int)(off - s->lstart + 1);
	snprintf(r->path, sizeof(r->path), "%s", s->path);
	return -1;
}

static void path_restore(struct scan *s, const struct frame *f)
{
	s->plen = f->plen;
	s->h = f->h;
	s->ovf = f->ovf;
	s->path[s->plen] = 0;
}

static void path_append(struct scan *s, const char *p, size_t n)
{
	if (s->ovf || s->plen + n >= WB_JSCAN_PATHN) {
		s->ovf = 1;
		return;
	}
	memcpy(s->path + s->plen, p, n);
	s->plen += n;
	s->path[s->plen] = 0;
	s->h = fnv(s->h, p, n);
}

/* A value starts at s->i: fill the requested locations of its path. */
static void at_value(struct scan *s)
{
	if (!s->n || s->ovf)
		return;
	for (size_t j = s->h & s->mask; s->slot[j]; j = (j + 1) & s->mask) {
		size_t k = s->slot[j] - 1;
		if (s->lh[k] != s->h || strlen(s->locs[k].path) != s->plen ||
		    memcmp(s->locs[k].path, s->path, s->plen) != 0)
			continue;
		if (s->locs[k].line)
			return; /* the first value at this path wins */
		for (size_t m = k + 1; m; m = s->next[m - 1]) {
			s->locs[m - 1].line = s->line;
			s->locs[m - 1].col = (int)(s->i - s->lstart + 1);
		}
		return;
	}
}

static int hexval(unsigned c)
{
	if (c >= '0' && c <= '9')
		return (int)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (int)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (int)(c - 'A' + 10);
	return -1;
}

/* Four hex digits at p: the value, or -1. */
static long hex4(const unsigned char *p)
{
	long v = 0;
	for (int k = 0; k < 4; k++) {
		int x = hexval(p[k]);
		if (x < 0)
			return -1;
		v = v * 16 + x;
	}
	return v;
}

static void key_put(struct scan *s, const void *p, size_t n)
{
	if (s->key_ovf || s->klen + n >= sizeof(s->key)) {
		s->key_ovf = 1;
		return;
	}
	memcpy(s->key + s->klen, p, n);
	s->klen += n;
}

/* The string at s->i (a '"'). is_key: decode it into s->key. */
static int scan_string(struct scan *s, int is_key)
{
	const unsigned char *t = s->t;
	size_t start = s->i + 1, end = start;
	while (end < s->len && t[end] != '"') {
		if (t[end] == '\\') {
			if (end + 1 >= s->len)
				break;
			end++;
		}
		end++;
	}
	if (end >= s->len) {
		lines_to(s, s->i, s->len);
		return stop(s, WB_JSCAN_SYNTAX, s->len);
	}
	s->klen = 0;
	s->key_ovf = 0;
	size_t k = start;
	while (k < end) {
		if (t[k] != '\\') {
			size_t r = k;
			while (r < end && t[r] != '\\')
				r++;
			size_t bad = wb_utf8_check((const char *)t + k, r - k);
			lines_to(s, k, k + bad);
			if (bad < r - k) {
				s->res->byte = t[k + bad];
				return stop(s, WB_JSCAN_UTF8, k + bad);
			}
			if (is_key)
				key_put(s, t + k, r - k);
			k = r;
			continue;
		}
		unsigned char c = t[k + 1], out[4];
		size_t olen = 1;
		switch (c) {
		case 'b': out[0] = '\b'; break;
		case 'f': out[0] = '\f'; break;
		case 'n': out[0] = '\n'; break;
		case 'r': out[0] = '\r'; break;
		case 't': out[0] = '\t'; break;
		case '"': case '\\': case '/': out[0] = c; break;
		case 'u': {
			if (end - k < 6)
				return stop(s, WB_JSCAN_SYNTAX, k);
			long cp = hex4(t + k + 2);
			if (cp < 0)
				return stop(s, WB_JSCAN_ESCAPE, k);
			if (cp == 0)
				return stop(s, WB_JSCAN_NUL, k);
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return stop(s, WB_JSCAN_SYNTAX, k);
			size_t seq = 6;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (end - k < 12 || t[k + 6] != '\\' ||
				    t[k + 7] != 'u')
					return stop(s, WB_JSCAN_SYNTAX, k);
				long lo = hex4(t + k + 8);
				if (lo < 0xDC00 || lo > 0xDFFF)
					return stop(s, WB_JSCAN_SYNTAX, k);
				cp = 0x10000 + (((cp & 0x3FF) << 10) | (lo & 0x3FF));
				seq = 12;
			}
			if (cp < 0x80) {
				out[0] = (unsigned char)cp;
			} else if (cp < 0x800) {
				out[0] = (unsigned char)(0xC0 | cp >> 6);
				out[1] = (unsigned char)(0x80 | (cp & 0x3F));
				olen = 2;
			} else if (cp < 0x10000) {
				out[0] = (unsigned char)(0xE0 | cp >> 12);
				out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
				out[2] = (unsigned char)(0x80 | (cp & 0x3F));
				olen = 3;
			} else {
				out[0] = (unsigned char)(0xF0 | cp >> 18);
				out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
				out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
				out[3] = (unsigned char)(0x80 | (cp & 0x3F));
				olen = 4;
			}
			if (is_key)
				key_put(s, out, olen);
			k += seq;
			continue;
		}
		default:
			return stop(s, WB_JSCAN_SYNTAX, k);
		}
		if (is_key)
			key_put(s, out, olen);
		k += 2;
	}
	s->i = end + 1;
	return 0;
}

/* Length of a strict JSON number at p[0..m), or 0. */
static size_t strict_number(const char *p, size_t m)
{
	size_t k = 0;
	if (k < m && p[k] == '-')
		k++;
	if (k < m && p[k] == '0')
		k++;
	else if (k < m && p[k] >= '1' && p[k] <= '9')
		while (k < m && p[k] >= '0' && p[k] <= '9')
			k++;
	else
		return 0;
	if (k < m && p[k] == '.') {
		size_t f = ++k;
		while (k < m && p[k] >= '0' && p[k] <= '9')
			k++;
		if (k == f)
			return 0;
	}
	if (k < m && (p[k] == 'e' || p[k] == 'E')) {
		k++;
		if (k < m && (p[k] == '+' || p[k] == '-'))
			k++;
		size_t e = k;
		while (k < m && p[k] >= '0' && p[k] <= '9')
			k++;
		if (k == e)
			return 0;
	}
	return k;
}

static int scan_number(struct scan *s)
{
	char buf[64];
	size_t m = 0;
	while (m < sizeof(buf) - 1 && s->i + m < s->len &&
	       s->t[s->i + m] != 0 &&
	       strchr("0123456789+-eE.", s->t[s->i + m])) {
		buf[m] = (char)s->t[s->i + m];
		m++;
	}
	buf[m] = 0;
	size_t used = strict_number(buf, m);
	if (used != m) { /* what cJSON's strtod() would take */
		char *e;
		strtod(buf, &e);
		used = (size_t)(e - buf);
	}
	if (!used)
		return stop(s, WB_JSCAN_SYNTAX, s->i);
	s->i += used;
	return 0;
}

static int build_table(struct scan *s)
{
	size_t ns = 16;
	while (ns < 2 * s->n)
		ns *= 2;
	s->slot = calloc(ns, sizeof(*s->slot));
	s->next = calloc(s->n, sizeof(*s->next));
	s->lh = calloc(s->n, sizeof(*s->lh));
	if (!s->slot || !s->next || !s->lh)
		return -1;
	s->mask = ns - 1;
	for (size_t k = 0; k < s->n; k++) {
		const char *p = s->locs[k].path ? s->locs[k].path : "";
		size_t pl = strlen(p);
		s->locs[k].line = s->locs[k].col = 0;
		s->lh[k] = fnv(FNV_OFFSET, p, pl);
		size_t j = s->lh[k] & s->mask;
		for (; s->slot[j]; j = (j + 1) & s->mask) {
			size_t o = s->slot[j] - 1;
			if (s->lh[o] == s->lh[k] && strcmp(s->locs[o].path, p) == 0)
				break;
		}
		if (s->slot[j]) { /* same path as an earlier one: chain */
			size_t head = s->slot[j] - 1;
			s->next[k] = s->next[head];
			s->next[head] = k + 1;
		} else {
			s->slot[j] = k + 1;
		}
	}
	return 0;
}

void wb_jscan(const char *text, size_t len, int max_depth, long max_values,
	      struct wb_jscan_loc *locs, size_t n, struct wb_jscan_result *res)
{
	struct frame fr[WB_JSCAN_MAX_DEPTH];
	struct scan s;
	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.t = (const unsigned char *)text;
	s.len = len;
	s.line = 1;
	s.h = FNV_OFFSET;
	s.res = res;
	if (max_depth > WB_JSCAN_MAX_DEPTH)
		max_depth = WB_JSCAN_MAX_DEPTH;
	for (size_t k = 0; k < n; k++)
		if (!locs[k].path)
			locs[k].path = "";
	s.locs = locs;
	s.n = locs ? n : 0;
	if (s.n && build_table(&s) != 0) {
		s.n = 0;
		res->status = WB_JSCAN_NOMEM;
		goto out;
	}
	int depth = 0;
	long values = 0;
	skip_ws(&s);
value:
	at_value(&s);
	if (max_values > 0 && ++values > max_values) {
		stop(&s, WB_JSCAN_COUNT, s.i);
		goto out;
	}
	if (s.i >= s.len) {
		stop(&s, WB_JSCAN_SYNTAX, s.i);
		goto out;
	}
	switch (s.t[s.i]) {
	case '{':
	case '[':
		if (depth >= max_depth) {
			stop(&s, WB_JSCAN_DEPTH, s.i);
			goto out;
		}
		fr[depth] = (struct frame){ s.t[s.i] == '{', 0, s.plen, s.h,
					    s.ovf };
		depth++;
		s.i++;
		skip_ws(&s);
		if (s.i < s.len && s.t[s.i] == (fr[depth - 1].obj ? '}' : ']')) {
			s.i++;
			depth--;
			goto after;
		}
		if (fr[depth - 1].obj)
			goto key;
		path_append(&s, "[0]", 3);
		goto value;
	case '"':
		if (scan_string(&s, 0) < 0)
			goto out;
		goto after;
	default:
		break;
	}
	if (s.len - s.i >= 4 && memcmp(s.t + s.i, "null", 4) == 0)
		s.i += 4;
	else if (s.len - s.i >= 5 && memcmp(s.t + s.i, "false", 5) == 0)
		s.i += 5;
	else if (s.len - s.i >= 4 && memcmp(s.t + s.i, "true", 4) == 0)
		s.i += 4;
	else if (s.t[s.i] == '-' || (s.t[s.i] >= '0' && s.t[s.i] <= '9')) {
		if (scan_number(&s) < 0)
			goto out;
	} else {
		stop(&s, WB_JSCAN_SYNTAX, s.i);
		goto out;
	}
	goto after;
key:
	path_restore(&s, &fr[depth - 1]);
	if (s.i >= s.len || s.t[s.i] != '"') {
		stop(&s, WB_JSCAN_SYNTAX, s.i);
		goto out;
	}
	if (scan_string(&s, 1) < 0) {
		res->in_key = 1;
		goto out;
	}
	if (s.key_ovf)
		s.ovf = 1;
	else {
		if (s.plen)
			path_append(&s, ".", 1);
		path_append(&s, s.key, s.klen);
	}
	skip_ws(&s);
	if (s.i >= s.len || s.t[s.i] != ':') {
		stop(&s, WB_JSCAN_SYNTAX, s.i);
		goto out;
	}
	s.i++;
	skip_ws(&s);
	goto value;
after:
	if (depth == 0) {
		res->status = WB_JSCAN_OK;
		res->off = s.i;
		res->line = s.line;
		res->col = (int)(s.i - s.lstart + 1);
		goto out;
	}
	skip_ws(&s);
	{
		struct frame *f = &fr[depth - 1];
		if (s.i < s.len && s.t[s.i] == ',') {
			s.i++;
			skip_ws(&s);
			if (f->obj)
				goto key;
			char ix[32];
			int k = snprintf(ix, sizeof(ix), "[%ld]", ++f->idx);
			path_restore(&s, f);
			path_append(&s, ix, (size_t)k);
			goto value;
		}
		if (s.i < s.len && s.t[s.i] == (f->obj ? '}' : ']')) {
			s.i++;
			depth--;
			path_restore(&s, f);
			goto after;
		}
		path_restore(&s, f);
		stop(&s, WB_JSCAN_SYNTAX, s.i);
	}
out:
	free(s.slot);
	free(s.next);
	free(s.lh);
}
