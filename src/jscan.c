/*
 * jscan.c - one iterative pass over JSON text: UTF-8, NUL escapes, depth,
 * and the line and column of requested JSON paths (see jscan.h).
 *
 * The grammar is RFC 8259's, which is a subset of what cJSON 1.7's parser
 * (cJSON.c parse_value and friends) accepts, so that "wb_jscan accepts,
 * cJSON failed" can only mean cJSON ran out of memory. cJSON is laxer, and
 * what it lets through silently is refused here, at the byte at fault:
 * white space other than space, tab, CR and LF (cJSON skips every byte
 * <= 32, NUL included), raw control bytes in strings, numbers such as
 * "01", "1." or "-" (cJSON takes whatever strtod() reads), numbers longer
 * than 63 bytes (cJSON cuts them there), literals run into a word
 * ("truex"), invalid UTF-8, "\u0000" and "\u" without four hex digits
 * (which cJSON turns into a NUL), and numbers out of a double's range.
 *
 * A syntax error is described (res->msg) and placed where a reader would
 * fix it: the '}' after a trailing comma, the token where a ',' is
 * missing, the opening quote of a string that is not closed, the first
 * byte of a bad number; at the end of the file, the '{' or '[' left open.
 *
 * Workload: the whole scene once before cJSON parses it, and once more
 * after validation when diagnostics need positions; O(text + paths).
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	int line, col;  /* of the '{' or '[' */
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

/* Whether byte k of t[0..len) ends a line: a line feed, or a carriage
 * return not followed by one (old Mac files; CR LF counts once, at its
 * LF). */
static int ends_line(const unsigned char *t, size_t len, size_t k)
{
	return t[k] == '\n' || (t[k] == '\r' && (k + 1 >= len || t[k + 1] != '\n'));
}

static int line_end(const struct scan *s, size_t k)
{
	return ends_line(s->t, s->len, k);
}

void wb_jscan_linecol(const char *text, size_t len, size_t off, int *line,
		      int *col)
{
	int l = 1;
	size_t start = 0;
	for (size_t k = 0; k < off && k < len; k++)
		if (ends_line((const unsigned char *)text, len, k)) {
			l++;
			start = k + 1;
		}
	*line = l;
	*col = (int)((off < len ? off : len) - start) + 1;
}

/* Count the line ends of t[from..to) into line/lstart. */
static void lines_to(struct scan *s, size_t from, size_t to)
{
	for (size_t k = from; k < to; k++)
		if (line_end(s, k)) {
			s->line++;
			s->lstart = k + 1;
		}
}

static void skip_ws(struct scan *s)
{
	while (s->i < s->len && (s->t[s->i] == ' ' || s->t[s->i] == '\t' ||
				 s->t[s->i] == '\n' || s->t[s->i] == '\r')) {
		if (line_end(s, s->i)) {
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

/* What is at t[off], for "found ...": short and printable once escaped. */
static void found_at(const struct scan *s, size_t off, char *buf, size_t n)
{
	const unsigned char *t = s->t;
	if (off >= s->len) {
		snprintf(buf, n, "the end of the file");
		return;
	}
	unsigned c = t[off];
	size_t k = 1, cap = 24;
	if (c == 0) {
		snprintf(buf, n, "a NUL byte");
	} else if (c < 0x20 || c == 0x7f) {
		snprintf(buf, n, "a control character (byte 0x%02x)", c);
	} else if (c == '"') {
		while (off + k < s->len && k < cap && t[off + k] != '"' &&
		       t[off + k] >= 0x20)
			k++;
		int closed = off + k < s->len && t[off + k] == '"';
		snprintf(buf, n, "'%.*s%s'", (int)(k + closed), (const char *)t + off,
			 closed ? "" : "...");
	} else if (c >= 0x80) {
		size_t m = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
		if (off + m <= s->len &&
		    wb_utf8_check((const char *)t + off, m) == m)
			snprintf(buf, n, "'%.*s'", (int)m, (const char *)t + off);
		else
			snprintf(buf, n, "byte 0x%02x", c);
	} else if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
		   (c >= 'a' && c <= 'z') || c == '_' || c == '-' || c == '+' ||
		   c == '.') {
		while (off + k < s->len && k < cap &&
		       ((t[off + k] >= '0' && t[off + k] <= '9') ||
			(t[off + k] >= 'A' && t[off + k] <= 'Z') ||
			(t[off + k] >= 'a' && t[off + k] <= 'z') ||
			t[off + k] == '_' || t[off + k] == '-' ||
			t[off + k] == '+' || t[off + k] == '.'))
			k++;
		snprintf(buf, n, "'%.*s%s'", (int)k, (const char *)t + off,
			 k == cap ? "..." : "");
	} else {
		snprintf(buf, n, "'%c'", c);
	}
}

/* A syntax error at off (on the counters' current line), described. */
static int syntax(struct scan *s, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int syntax(struct scan *s, size_t off, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->res->msg, sizeof(s->res->msg), fmt, ap);
	va_end(ap);
	return stop(s, WB_JSCAN_SYNTAX, off);
}

/* A hint for what was found where a value, a member name, ',' or a
 * closing bracket should be: the mistakes JSON written by hand makes. */
static const char *hint_at(const struct scan *s, size_t off)
{
	const unsigned char *t = s->t;
	if (off >= s->len)
		return "";
	size_t k = 0;
	char w[16];
	while (off + k < s->len && k < sizeof(w) - 1 &&
	       ((t[off + k] >= 'A' && t[off + k] <= 'Z') ||
		(t[off + k] >= 'a' && t[off + k] <= 'z')))
		w[k] = (char)t[off + k], k++;
	w[k] = 0;
	if (t[off] == '\'')
		return " (strings and member names take double quotes)";
	if (t[off] == '/' && off + 1 < s->len &&
	    (t[off + 1] == '/' || t[off + 1] == '*'))
		return " (JSON has no comments)";
	if (t[off] == 0)
		return " (a scene is UTF-8 text: is this a binary or UTF-16 file?)";
	if (off + 3 <= s->len && t[off] == 0xE2 && t[off + 1] == 0x80 &&
	    t[off + 2] >= 0x98 && t[off + 2] <= 0x9F)
		return " (a typographic quote: JSON takes plain double quotes)";
	if (off + 3 <= s->len && t[off] == 0xEF && t[off + 1] == 0xBB &&
	    t[off + 2] == 0xBF)
		return " (a byte order mark is allowed only at the start of the file)";
	if (strcasecmp(w, "nan") == 0 || strcasecmp(w, "infinity") == 0 ||
	    strcasecmp(w, "inf") == 0)
		return " (JSON has no NaN or Infinity)";
	if (strcasecmp(w, "true") == 0 || strcasecmp(w, "false") == 0 ||
	    strcasecmp(w, "null") == 0)
		return " (JSON's literals are true, false and null, in lower case)";
	if (k)
		return " (a string needs double quotes)";
	return "";
}

/* " (the '{' at line L, column C is not closed)" for frame f. */
static void open_note(const struct frame *f, char *buf, size_t n)
{
	snprintf(buf, n, "the '%c' at line %d, column %d is not closed",
		 f->obj ? '{' : '[', f->line, f->col);
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
	size_t open = s->i, start = s->i + 1, end = start;
	/* the closing quote, or the first raw control byte before it */
	while (end < s->len && t[end] != '"' && t[end] >= 0x20) {
		if (t[end] == '\\' && end + 1 < s->len && t[end + 1] >= 0x20)
			end++;
		end++;
	}
	if (end >= s->len)
		return syntax(s, open, "string not closed: no '\"' after it before the end of the file");
	size_t stopk = end; /* content to check: t[start..stopk) */
	if (t[end] != '"' && t[end - 1] == '\\')
		stopk = end + 1; /* a backslash before a control byte: a bad escape */
	s->klen = 0;
	s->key_ovf = 0;
	size_t k = start;
	while (k < stopk) {
		if (t[k] != '\\') {
			size_t r = k;
			while (r < stopk && t[r] != '\\')
				r++;
			if (r > end)
				r = end;
			size_t bad = wb_utf8_check((const char *)t + k, r - k);
			lines_to(s, k, k + bad);
			if (bad < r - k) {
				s->res->byte = t[k + bad];
				return stop(s, WB_JSCAN_UTF8, k + bad);
			}
			if (is_key)
				key_put(s, t + k, r - k);
			k = r;
			if (k >= end)
				break;
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
				return stop(s, WB_JSCAN_ESCAPE, k);
			long cp = hex4(t + k + 2);
			if (cp < 0)
				return stop(s, WB_JSCAN_ESCAPE, k);
			if (cp == 0)
				return stop(s, WB_JSCAN_NUL, k);
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return syntax(s, k, "\\u%04lX is the second half of a surrogate pair, without a first (\\uD800..\\uDBFF) before it",
					      (unsigned long)cp);
			size_t seq = 6;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				long lo = end - k >= 12 && t[k + 6] == '\\' &&
					  t[k + 7] == 'u' ? hex4(t + k + 8) : -1;
				if (lo < 0xDC00 || lo > 0xDFFF)
					return syntax(s, k, "\\u%04lX is the first half of a surrogate pair: a \\uDC00..\\uDFFF must follow it",
						      (unsigned long)cp);
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
		default: {
			char f[48];
			if (c >= 0x20 && c < 0x7f)
				snprintf(f, sizeof(f), "'\\%c'", c);
			else
				found_at(s, k + 1, f, sizeof(f));
			return syntax(s, k, "invalid escape%s%s in a string (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
				      c >= 0x20 && c < 0x7f ? " " : ": '\\' followed by ", f);
		}
		}
		if (is_key)
			key_put(s, out, olen);
		k += 2;
	}
	if (t[end] != '"') {
		/* a raw control byte; the counters are at the string's line */
		if (t[end] == '\n' || t[end] == '\r')
			return syntax(s, open, "string not closed on its line (a line break in a string is written \\n)");
		if (t[end] == 0)
			return syntax(s, end, "a NUL byte in a string");
		return syntax(s, end, "a raw control character (byte 0x%02x) in a string; write it as \\u%04X%s",
			      t[end], t[end], t[end] == '\t' ? " or \\t" : "");
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

static int numchar(unsigned c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	       (c >= 'a' && c <= 'z') || c == '+' || c == '-' || c == '.';
}

/* The number at s->i (a '-' or a digit): the whole run of number-like
 * characters must be one strict JSON number, so that "01", "1.", "1e",
 * "0x10" and "-Infinity" are refused at their first byte. */
static int scan_number(struct scan *s)
{
	const char *p = (const char *)s->t + s->i;
	size_t m = 0;
	while (s->i + m < s->len && numchar(s->t[s->i + m]))
		m++;
	int show = m > 30 ? 30 : (int)m;
	const char *more = m > 30 ? "..." : "";
	if (strict_number(p, m) != m) {
		const char *why = "";
		const char *d = p[0] == '-' ? p + 1 : p;
		size_t dm = p[0] == '-' ? m - 1 : m;
		const char *dot = memchr(p, '.', m);
		const char *e = NULL;
		for (size_t k = 0; k < m; k++)
			if (p[k] == 'e' || p[k] == 'E') {
				e = p + k;
				break;
			}
		if (dm == 0)
			why = " (a '-' must be followed by digits)";
		else if ((d[0] < '0' || d[0] > '9') && d[0] != '.')
			why = dm >= 3 && (strncasecmp(d, "inf", 3) == 0 ||
					  strncasecmp(d, "nan", 3) == 0)
				      ? " (JSON has no NaN or Infinity)"
				      : "";
		else if (dm > 1 && d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))
			why = " (JSON numbers are decimal)";
		else if (dm > 1 && d[0] == '0' && d[1] >= '0' && d[1] <= '9')
			why = " (JSON numbers have no leading zeros)";
		else if (d[0] == '.' )
			why = " (a digit must come before the decimal point)";
		else if (dot && (dot + 1 == p + m || dot[1] < '0' || dot[1] > '9'))
			why = " (a digit must follow the decimal point)";
		else if (e && (e + 1 == p + m ||
			       ((e[1] < '0' || e[1] > '9') &&
				(e + 2 == p + m || e[2] < '0' || e[2] > '9'))))
			why = " (the exponent needs digits)";
		return syntax(s, s->i, "invalid number '%.*s%s'%s", show, p, more,
			      why);
	}
	/* cJSON reads at most 63 bytes of a number */
	if (m > 63)
		return syntax(s, s->i, "number '%.*s%s' too long: at most 63 characters",
			      show, p, more);
	char buf[64];
	memcpy(buf, p, m);
	buf[m] = 0;
	if (isinf(strtod(buf, NULL))) {
		snprintf(s->res->msg, sizeof(s->res->msg),
			 "the number %s is out of range (a double holds at most 1.8e308)",
			 buf);
		return stop(s, WB_JSCAN_RANGE, s->i);
	}
	s->i += m;
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

/* A word at t[off]: a letter, then letters, digits or '_'; its length. */
static size_t word_len(const struct scan *s, size_t off)
{
	size_t k = 0;
	while (off + k < s->len &&
	       ((s->t[off + k] >= 'A' && s->t[off + k] <= 'Z') ||
		(s->t[off + k] >= 'a' && s->t[off + k] <= 'z') ||
		(k && ((s->t[off + k] >= '0' && s->t[off + k] <= '9') ||
		       s->t[off + k] == '_'))))
		k++;
	return k;
}

/* The member name just decoded, shortened for a message. */
static void key_note(const struct scan *s, char *buf, size_t n)
{
	int k = s->klen > 40 ? 40 : (int)s->klen;
	snprintf(buf, n, "\"%.*s%s\"", k, s->key,
		 s->klen > 40 || s->key_ovf ? "..." : "");
}

void wb_jscan(const char *text, size_t len, int max_depth, long max_values,
	      struct wb_jscan_loc *locs, size_t n, struct wb_jscan_result *res)
{
	struct frame fr[WB_JSCAN_MAX_DEPTH];
	struct scan s;
	char f[64], note[96];
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
	int prev = 0; /* what the value follows: 0 (nothing), '[', ',' or ':' */
	skip_ws(&s);
value:
	at_value(&s);
	if (max_values > 0 && ++values > max_values) {
		stop(&s, WB_JSCAN_COUNT, s.i);
		goto out;
	}
	if (s.i >= s.len) {
		if (depth) {
			open_note(&fr[depth - 1], note, sizeof(note));
			syntax(&s, s.i, "unexpected end of file: expected a value (%s)",
			       note);
		} else {
			syntax(&s, s.i, "unexpected end of file: expected a value");
		}
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
					    s.ovf, s.line,
					    (int)(s.i - s.lstart + 1) };
		depth++;
		s.i++;
		skip_ws(&s);
		if (s.i < s.len && s.t[s.i] == (fr[depth - 1].obj ? '}' : ']')) {
			s.i++;
			depth--;
			goto after;
		}
		if (fr[depth - 1].obj) {
			prev = '{';
			goto key;
		}
		path_append(&s, "[0]", 3);
		prev = '[';
		goto value;
	case '"':
		if (scan_string(&s, 0) < 0)
			goto out;
		goto after;
	default:
		break;
	}
	{
		size_t w = word_len(&s, s.i);
		const unsigned char *p = s.t + s.i;
		if ((w == 4 && memcmp(p, "null", 4) == 0) ||
		    (w == 4 && memcmp(p, "true", 4) == 0) ||
		    (w == 5 && memcmp(p, "false", 5) == 0)) {
			s.i += w;
			goto after;
		}
		if (!w && (*p == '-' || (*p >= '0' && *p <= '9'))) {
			if (scan_number(&s) < 0)
				goto out;
			goto after;
		}
		found_at(&s, s.i, f, sizeof(f));
		if (*p == ']' && prev == ',')
			syntax(&s, s.i, "expected a value after ',', found %s (JSON allows no trailing comma)",
			       f);
		else if ((*p == '.' || *p == '+') && s.i + 1 < s.len &&
			 s.t[s.i + 1] >= '0' && s.t[s.i + 1] <= '9')
			syntax(&s, s.i, "expected a value, found %s (a JSON number starts with a digit or '-')",
			       f);
		else if (prev == ':') {
			key_note(&s, note, sizeof(note));
			syntax(&s, s.i, "expected a value for the member %s, found %s%s",
			       note, f, hint_at(&s, s.i));
		} else {
			syntax(&s, s.i, "expected a value, found %s%s", f,
			       hint_at(&s, s.i));
		}
		goto out;
	}
key:
	path_restore(&s, &fr[depth - 1]);
	if (s.i >= s.len || s.t[s.i] != '"') {
		found_at(&s, s.i, f, sizeof(f));
		open_note(&fr[depth - 1], note, sizeof(note));
		if (s.i >= s.len)
			syntax(&s, s.i, "unexpected end of file: expected a member name (%s)",
			       note);
		else if (s.t[s.i] == '}' && prev == ',')
			syntax(&s, s.i, "expected a member name after ',', found '}' (JSON allows no trailing comma)");
		else
			syntax(&s, s.i, "expected a member name in double quotes, found %s%s",
			       f, hint_at(&s, s.i));
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
		found_at(&s, s.i, f, sizeof(f));
		key_note(&s, note, sizeof(note));
		if (s.i >= s.len)
			syntax(&s, s.i, "unexpected end of file: expected ':' after the member name %s",
			       note);
		else
			syntax(&s, s.i, "expected ':' after the member name %s, found %s",
			       note, f);
		goto out;
	}
	s.i++;
	skip_ws(&s);
	prev = ':';
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
		struct frame *fp = &fr[depth - 1];
		char close = fp->obj ? '}' : ']';
		if (s.i < s.len && s.t[s.i] == ',') {
			s.i++;
			skip_ws(&s);
			prev = ',';
			if (fp->obj)
				goto key;
			char ix[32];
			int k = snprintf(ix, sizeof(ix), "[%ld]", ++fp->idx);
			path_restore(&s, fp);
			path_append(&s, ix, (size_t)k);
			goto value;
		}
		if (s.i < s.len && s.t[s.i] == close) {
			s.i++;
			depth--;
			path_restore(&s, fp);
			goto after;
		}
		path_restore(&s, fp);
		found_at(&s, s.i, f, sizeof(f));
		open_note(fp, note, sizeof(note));
		if (s.i >= s.len) {
			syntax(&s, s.i, "unexpected end of file: %s", note);
		} else {
			unsigned c = s.t[s.i];
			int starts = c == '"' || c == '{' || c == '[' || c == '-' ||
				     (c >= '0' && c <= '9') || word_len(&s, s.i);
			if (c == '}' || c == ']')
				syntax(&s, s.i, "expected ',' or '%c', found %s (%s)",
				       close, f, note);
			else if (starts)
				syntax(&s, s.i, "expected ',' or '%c', found %s (a missing ','?)",
				       close, f);
			else
				syntax(&s, s.i, "expected ',' or '%c', found %s%s",
				       close, f, hint_at(&s, s.i));
		}
	}
out:
	free(s.slot);
	free(s.next);
	free(s.lh);
}
