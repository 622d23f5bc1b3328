/*
 * test_input.c - the input guards: UTF-8 checking and terminal escaping
 * (src/strutil.c), the one-pass JSON scanner that finds positions and
 * refuses what cJSON lets through (src/jscan.c), bounded reads of regular
 * files only (src/fileio.c), the diagnostics cap (src/diag.c) and the
 * scene limits (src/scene.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "jscan.h"
#include "scene_keys.h"
#include "strutil.h"
#include "util.h"
#include "wbake.h"

#define TMP "tests/tmp/test_input"

/* ---- UTF-8 ------------------------------------------------------------- */

static void test_utf8_check(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		size_t want; /* offset of the first bad byte; strlen when valid */
	} cases[] = {
		{ "", 0 },
		{ "plain ascii", 11 },
		{ "caf\xc3\xa9", 5 },                 /* U+00E9 */
		{ "\xe2\x82\xac", 3 },                /* U+20AC */
		{ "\xf0\x9f\x98\x80!", 5 },           /* U+1F600 */
		{ "\xf4\x8f\xbf\xbf", 4 },            /* U+10FFFF, the last */
		{ "\xef\xbb\xbf", 3 },                /* BOM as a character */
		{ "ab\xff", 2 },                      /* never valid */
		{ "a\x80", 1 },                       /* lone continuation */
		{ "\xc0\xaf", 0 },                    /* overlong '/' */
		{ "\xc1\xbf", 0 },                    /* overlong */
		{ "\xe0\x80\xaf", 0 },                /* overlong, 3 bytes */
		{ "\xf0\x80\x80\xaf", 0 },            /* overlong, 4 bytes */
		{ "x\xed\xa0\x80", 1 },               /* surrogate U+D800 */
		{ "\xed\x9f\xbf", 3 },                /* U+D7FF, just below */
		{ "\xf4\x90\x80\x80", 0 },            /* U+110000 */
		{ "\xf5\x80\x80\x80", 0 },
		{ "ok\xe2\x82", 2 },                  /* cut short */
		{ "\xc3(", 0 },                       /* bad continuation */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i].s);
		size_t got = wb_utf8_check(cases[i].s, n);
		if (got != cases[i].want)
			fail_msg("case %zu: offset %zu, expected %zu", i, got,
				 cases[i].want);
	}
	/* NUL bytes are valid UTF-8; the length bounds the check */
	assert_int_equal(wb_utf8_check("a\0b", 3), 3);
	assert_int_equal(wb_utf8_check("\xff", 0), 0);
}

/* ---- escaping ---------------------------------------------------------- */

static void test_escape(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "plain" },
		{ "a\x1b[31mred", "a\\x1b[31mred" },        /* ESC sequence */
		{ "t\tn\nr\r", "t\\x09n\\x0ar\\x0d" },
		{ "del\x7f", "del\\x7f" },
		{ "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac" },
		{ "c1\xc2\x9b" "2J", "c1\\xc2\\x9b2J" },   /* C1 CSI */
		{ "nbsp\xc2\xa0", "nbsp\xc2\xa0" },          /* U+00A0 is fine */
		{ "bad\xff\xfe", "bad\\xff\\xfe" },
		{ "cut\xe2\x82", "cut\\xe2\\x82" },
		{ "back\\slash", "back\\slash" },
	};
	char buf[64];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = wb_str_escape(buf, sizeof(buf), cases[i].in);
		assert_string_equal(buf, cases[i].out);
		assert_int_equal(n, strlen(cases[i].out));
	}
	/* truncation keeps whole escapes and reports the full length */
	char small[8];
	memset(small, 'Z', sizeof(small));
	size_t n = wb_str_escape(small, sizeof(small), "abcd\x1b" "efgh");
	assert_int_equal(n, 12);
	assert_string_equal(small, "abcd"); /* "\x1b" (4) does not fit in 3 */
	n = wb_str_escape(small, 1, "abc");
	assert_int_equal(n, 3);
	assert_string_equal(small, "");
	assert_int_equal(wb_str_escape(NULL, 0, "\x01"), 4);
	assert_int_equal(wb_str_escape(small, sizeof(small), NULL), 0);
}

static void test_diag_format_escapes(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	wb_diag_add(&d, WB_SEV_ERROR, "f\x1b.json", "materials[0].\x1b]0;x",
		    2, 3, "no material \"%s\"", "a\x1b[2Jb\xff");
	char buf[256];
	wb_diag_format(&d.v[0], buf, sizeof(buf));
	assert_string_equal(buf, "f\\x1b.json:2:3: error: materials[0].\\x1b]0;x: "
				 "no material \"a\\x1b[2Jb\\xff\"");
	for (const char *p = buf; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
	wb_diags_release(&d);
}

/* ---- the diagnostics cap ----------------------------------------------- */

static void test_diag_cap(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	for (int i = 0; i < WB_DIAGS_MAX + 500; i++)
		wb_diag_add(&d, WB_SEV_WARNING, "f", NULL, 0, 0, "w%d", i);
	assert_int_equal(d.warnings, WB_DIAGS_MAX + 500);
	assert_int_equal(d.n, WB_DIAGS_MAX);
	assert_int_equal(d.dropped, 500);
	/* warnings past the cap do not crowd out errors */
	wb_diag_add(&d, WB_SEV_ERROR, "f", NULL, 0, 0, "the error");
	assert_int_equal(d.n, WB_DIAGS_MAX + 1);
	assert_string_equal(d.v[d.n - 1].msg, "the error");
	assert_string_equal(d.v[WB_DIAGS_MAX - 1].msg, "w999");
	wb_diags_release(&d);
}

/* ---- jscan: positions -------------------------------------------------- */

/* Line and column of the n-th occurrence (from 1) of needle: the reference
 * the scanner's positions are checked against. */
static void where(const char *text, const char *needle, int nth, int *line,
		  int *col)
{
	const char *p = text;
	for (int k = 0; k < nth; k++) {
		p = strstr(k ? p + 1 : p, needle);
		assert_non_null(p);
	}
	*line = 1;
	*col = 1;
	for (const char *q = text; q < p; q++) {
		if (*q == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static void test_jscan_positions(void **state)
{
	(void)state;
	static const char text[] =
		"{\n"
		"  \"a\": 1,\n"
		"  \"b\": [10, {\"c\": \"x\\ny\", \"d.e\": true},\n"
		"        [20, 21]],\n"
		"\t\"\\u00e9t\\u00e9\": null,\n"
		"  \"a\": 2, \"f\": {\"g\": {\"h\": -1.5e3}}\n"
		"}\n";
	struct wb_jscan_loc locs[] = {
		{ "a", 0, 0 },          /* first of two: the first wins */
		{ "b", 0, 0 },
		{ "b[0]", 0, 0 },
		{ "b[1].c", 0, 0 },
		{ "b[1].d.e", 0, 0 },   /* a key with a dot, as scene.c joins it */
		{ "b[2][1]", 0, 0 },
		{ "\xc3\xa9t\xc3\xa9", 0, 0 }, /* keys are matched decoded */
		{ "f.g.h", 0, 0 },
		{ "b[1].c", 0, 0 },     /* asked twice: both filled */
		{ "nothere", 7, 7 },
		{ "b[3]", 7, 7 },
	};
	const struct {
		const char *needle;
		int nth;
	} ref[] = {
		{ "1,", 1 }, { "[10", 1 }, { "10", 1 }, { "\"x", 1 },
		{ "true", 1 }, { "21", 1 }, { "null", 1 }, { "-1.5e3", 1 },
		{ "\"x", 1 },
	};
	struct wb_jscan_result r;
	wb_jscan(text, strlen(text), 32, 0, locs, 11, &r);
	assert_int_equal(r.status, WB_JSCAN_OK);
	assert_int_equal(r.off, strlen(text) - 1);
	for (size_t k = 0; k < 9; k++) {
		int line, col;
		where(text, ref[k].needle, ref[k].nth, &line, &col);
		if (locs[k].line != line || locs[k].col != col)
			fail_msg("%s: %d:%d, expected %d:%d", locs[k].path,
				 locs[k].line, locs[k].col, line, col);
	}
	assert_int_equal(locs[9].line, 0);
	assert_int_equal(locs[9].col, 0);
	assert_int_equal(locs[10].line, 0);
}

/* Many paths located in one pass: every one right, and fast. */
static void test_jscan_many(void **state)
{
	(void)state;
	enum { N = 20000 };
	size_t cap = (size_t)N * 32 + 64, len = 0;
	char *text = malloc(cap);
	struct wb_jscan_loc *locs = calloc(N, sizeof(*locs));
	char (*paths)[32] = calloc(N, sizeof(*paths));
	assert_non_null(text);
	assert_non_null(locs);
	assert_non_null(paths);
	len += (size_t)snprintf(text + len, cap - len, "{\"list\": [\n");
	for (int i = 0; i < N; i++) {
		len += (size_t)snprintf(text + len, cap - len,
					"%*s{\"k%d\": %d}%s\n", i % 7, "", i, i,
					i + 1 < N ? "," : "");
		/* ask in reverse order, so that order does not help */
		snprintf(paths[N - 1 - i], sizeof(paths[0]), "list[%d].k%d", i, i);
		locs[N - 1 - i].path = paths[N - 1 - i];
	}
	len += (size_t)snprintf(text + len, cap - len, "]}\n");
	struct wb_jscan_result r;
	clock_t t0 = clock();
	wb_jscan(text, len, 32, 0, locs, N, &r);
	double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
	assert_int_equal(r.status, WB_JSCAN_OK);
	for (int i = 0; i < N; i++) {
		const struct wb_jscan_loc *l = &locs[N - 1 - i];
		int col = i % 7 + 1 + (int)strlen("{\"k\": ") +
			  snprintf(NULL, 0, "%d", i);
		if (l->line != i + 2 || l->col != col)
			fail_msg("%s at %d:%d, expected %d:%d", l->path,
				 l->line, l->col, i + 2, col);
	}
	/* one linear pass: 20,000 lookups over 0.4 MB; the quadratic rescan
	 * took minutes for this. 1 s leaves room for a slow, shared CI. */
	assert_true(sec < 1.0);
	free(paths);
	free(locs);
	free(text);
}

/* ---- jscan: what it refuses -------------------------------------------- */

static void test_jscan_refuses(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		enum wb_jscan_status st;
		const char *path;
		int line, col, in_key;
	} cases[] = {
		{ "{\"a\": [1, \"x\xffy\"]}", WB_JSCAN_UTF8, "a[1]", 1, 13, 0 },
		{ "{\"a\": {\n\"k\xc0\xaf\": 1}}", WB_JSCAN_UTF8, "a", 2, 3, 1 },
		{ "{\"name\": \"ri\\u0000ver\"}", WB_JSCAN_NUL, "name", 1, 13, 0 },
		{ "{\"a\\u0000\": 1}", WB_JSCAN_NUL, "", 1, 4, 1 },
		{ "{\"s\": \"\\uZZZZ\"}", WB_JSCAN_ESCAPE, "s", 1, 8, 0 },
		{ "[[[[1]]]]", WB_JSCAN_DEPTH, "[0][0][0]", 1, 4, 0 },
		{ "{\"a\": 1,}", WB_JSCAN_SYNTAX, "", 1, 9, 0 },
		{ "{\"a\" 1}", WB_JSCAN_SYNTAX, "a", 1, 6, 0 },
		{ "[1, 2", WB_JSCAN_SYNTAX, "", 1, 6, 0 },
		{ "\"\\ud800\"", WB_JSCAN_SYNTAX, "", 1, 2, 0 }, /* lone surrogate */
		{ "[1, 2, 3, 4]", WB_JSCAN_COUNT, "[2]", 1, 8, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct wb_jscan_result r;
		wb_jscan(cases[i].text, strlen(cases[i].text), 3, i == 10 ? 3 : 0,
			 NULL, 0, &r);
		if (r.status != cases[i].st || strcmp(r.path, cases[i].path) ||
		    r.line != cases[i].line || r.col != cases[i].col ||
		    r.in_key != cases[i].in_key)
			fail_msg("case %zu: status %d path '%s' %d:%d key %d", i,
				 (int)r.status, r.path, r.line, r.col, r.in_key);
	}
	/* a valid surrogate pair and the other escapes pass */
	static const char ok[] = "{\"\\ud83d\\ude00\": \"\\b\\f\\n\\r\\t\\\"\\\\\\/\\u00e9\"}";
	struct wb_jscan_result r;
	wb_jscan(ok, strlen(ok), 4, 0, NULL, 0, &r);
	assert_int_equal(r.status, WB_JSCAN_OK);
}

/* Syntax errors: where a reader would fix them, and what they are (it
 * was wherever cJSON's error pointer landed: the end of the file for a
 * trailing comma before a final newline). */
static void test_jscan_syntax(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int line, col;
		const char *msg; /* a part of the message */
		size_t len;      /* 0: strlen(text) */
	} cases[] = {
		{ "{\"a\": 1,}\n", 1, 9, "no trailing comma", 0 },
		{ "[1, 2,]\n", 1, 7, "no trailing comma", 0 },
		{ "{\"a\": [{\"b\": [1, 2,\n]}]}", 2, 1, "no trailing comma", 0 },
		{ "{\"a\": 1 \"b\": 2}", 1, 9, "a missing ','", 0 },
		{ "[{}\n{}]", 2, 1, "a missing ','", 0 },
		{ "{\"a\": x}", 1, 7, "a string needs double quotes", 0 },
		{ "{'a': 1}", 1, 2, "double quotes", 0 },
		{ "{\"a\": 1} // c", 1, 10, NULL, 0 }, /* trailing text: OK here */
		{ "{\"a\": /* c */ 1}", 1, 7, "no comments", 0 },
		{ "[01]", 1, 2, "leading zeros", 0 },
		{ "[1.]", 1, 2, "follow the decimal point", 0 },
		{ "[1.5e+]", 1, 2, "exponent needs digits", 0 },
		{ "[0x1F]", 1, 2, "decimal", 0 },
		{ "[\"ab\n\"]", 1, 2, "not closed on its line", 0 },
		{ "  \"abc", 1, 3, "not closed", 0 },
		{ "[\"a\tb\"]", 1, 4, "control character (byte 0x09)", 0 },
		{ "[\"a\\qb\"]", 1, 4, "invalid escape '\\q'", 0 },
		{ "[1\0]", 1, 3, "a NUL byte", 4 },
		{ "\0", 1, 1, "a NUL byte", 1 },
		{ "[1, \x01]", 1, 5, "control character (byte 0x01)", 0 },
		{ "{\"a\": [1}", 1, 9, "the '[' at line 1, column 7 is not closed", 0 },
		{ "{\n \"a\": [\n  1,\n", 4, 1, "end of file: expected a value (the '[' at line 2, column 7", 0 },
		{ "{\"a\": {}\n", 2, 1, "end of file: the '{' at line 1, column 1 is not closed", 0 },
		{ "{\"a\" 1}", 1, 6, "expected ':' after the member name \"a\"", 0 },
		{ "[true1]", 1, 2, "'true1'", 0 },
		{ "[nan]", 1, 2, "no NaN", 0 },
		{ "[\"\\udc00\"]", 1, 3, "second half of a surrogate pair", 0 },
		{ "", 1, 1, "end of file: expected a value", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct wb_jscan_result r;
		size_t n = cases[i].len ? cases[i].len : strlen(cases[i].text);
		wb_jscan(cases[i].text, n, 8, 0, NULL, 0, &r);
		if (!cases[i].msg) {
			assert_int_equal(r.status, WB_JSCAN_OK);
			continue;
		}
		if (r.status != WB_JSCAN_SYNTAX || r.line != cases[i].line ||
		    r.col != cases[i].col || !strstr(r.msg, cases[i].msg))
			fail_msg("case %zu: status %d at %d:%d '%s', expected %d:%d '%s'",
				 i, (int)r.status, r.line, r.col, r.msg,
				 cases[i].line, cases[i].col, cases[i].msg);
	}
	/* past a double: refused with the path, not read as infinity */
	struct wb_jscan_result r;
	wb_jscan("{\"a\": [0, -1e400]}", 18, 8, 0, NULL, 0, &r);
	assert_int_equal(r.status, WB_JSCAN_RANGE);
	assert_string_equal(r.path, "a[1]");
	assert_int_equal(r.col, 11);
	wb_jscan("[1e-400, 1.7976931348623157e308]", 32, 8, 0, NULL, 0, &r);
	assert_int_equal(r.status, WB_JSCAN_OK);
}

/* wb_jscan accepts only strict JSON, which cJSON accepts too, so that
 * "cJSON failed on text wb_jscan accepts" can only be out of memory; what
 * it refuses it describes, at a line and column that match the offset.
 * Checked over deterministic mutations of JSON snippets. */
static void test_jscan_agrees_with_cjson(void **state)
{
	(void)state;
	static const char *const seeds[] = {
		"{\"name\": \"x\", \"a\": [1, -2.5e3, true, false, null], \"o\": {}}",
		"[0, 1.0, 1e5, -0, 12345678901234567890, \"\\u00e9\\ud83d\\ude00\"]",
		"{\"k\": {\"l\": [[], [{}], \"s\\\\\\\"t\"]}}  ",
		" \t\n{ \"a\" : 1 , \"b\" : [ 2 , 3 ] }\n",
	};
	static const char alphabet[] = "{}[],:\"\\u0123456789.eE+-tfn aZ\x01\n\0'/\t";
	unsigned long long rng = 12345;
	char buf[160];
	int agree = 0, strict = 0;
	for (int iter = 0; iter < 30000; iter++) {
		const char *seed = seeds[iter % 4];
		size_t n = strlen(seed);
		memcpy(buf, seed, n);
		int muts = 1 + iter % 3;
		for (int m = 0; m < muts; m++) {
			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t pos = (size_t)(rng >> 33) % n;
			unsigned op = (unsigned)(rng >> 20) % 3;
			char ch = alphabet[(rng >> 40) % (sizeof(alphabet) - 1)];
			if (op == 0) { /* replace */
				buf[pos] = ch;
			} else if (op == 1 && n + 1 < sizeof(buf)) { /* insert */
				memmove(buf + pos + 1, buf + pos, n - pos);
				buf[pos] = ch;
				n++;
			} else if (n > 1) { /* delete */
				memmove(buf + pos, buf + pos + 1, n - pos - 1);
				n--;
			}
		}
		struct wb_jscan_result r;
		wb_jscan(buf, n, 1000, 0, NULL, 0, &r);
		const char *end = NULL;
		cJSON *root = cJSON_ParseWithLengthOpts(buf, n, &end, 0);
		int ok = root != NULL;
		if (r.status == WB_JSCAN_OK && !ok)
			fail_msg("jscan accepts, cJSON refuses '%.*s'", (int)n, buf);
		if (r.status == WB_JSCAN_OK && (size_t)(end - buf) != r.off)
			fail_msg("end differs on '%.*s': jscan %zu, cJSON %zu",
				 (int)n, buf, r.off, (size_t)(end - buf));
		if (r.status == WB_JSCAN_SYNTAX && !r.msg[0])
			fail_msg("no message for '%.*s'", (int)n, buf);
		/* line and col are those of off */
		int line = 1, col = 1;
		for (size_t k = 0; k < r.off && k < n; k++)
			if (buf[k] == '\n')
				line++, col = 1;
			else
				col++;
		if (r.off > n || r.line != line || r.col != col)
			fail_msg("'%.*s': off %zu at %d:%d, expected %d:%d", (int)n,
				 buf, r.off, r.line, r.col, line, col);
		cJSON_Delete(root);
		agree += ok == (r.status == WB_JSCAN_OK);
		strict += ok && r.status != WB_JSCAN_OK;
	}
	assert_true(agree > 20000);
	assert_true(strict > 100); /* "01", a control byte, ... refused */
}

/* ---- reading input files ----------------------------------------------- */

static void test_read_regular_only(void **state)
{
	(void)state;
	struct wb_diags d;
	wb_diags_init(&d);
	assert_int_equal(wb_mkdirs(TMP, &d), WB_OK);
	unsigned char *b = NULL;
	size_t n = 99;
	/* a FIFO is refused without blocking on the open */
	const char *fifo = TMP "/fifo";
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(wb_read_file(fifo, &b, &n, &d), WB_EINPUT);
	assert_null(b);
	assert_int_equal(n, 0);
	assert_string_equal(d.v[d.n - 1].msg,
		"cannot read: expected a regular file, found a FIFO (named pipe)");
	unlink(fifo);
	/* a device that never ends */
	assert_int_equal(wb_read_file("/dev/zero", &b, &n, &d), WB_EINPUT);
	assert_string_equal(d.v[d.n - 1].msg,
		"cannot read: expected a regular file, found a character device");
	assert_int_equal(wb_read_file(TMP, &b, &n, &d), WB_EINPUT);
	assert_string_equal(d.v[d.n - 1].msg,
		"cannot read: expected a regular file, found a directory");
	/* the cap: a file one byte over it is refused, at it is read */
	const char *f = TMP "/ten";
	FILE *fp = fopen(f, "wb");
	assert_non_null(fp);
	fputs("0123456789", fp);
	fclose(fp);
	assert_int_equal(wb_read_file_max(f, 9, "a test", &b, &n, &d), WB_EINPUT);
	assert_null(b);
	assert_string_equal(d.v[d.n - 1].msg,
		"too large: 10 bytes, more than the 9-byte limit for a test");
	assert_int_equal(wb_read_file_max(f, 10, "a test", &b, &n, &d), WB_OK);
	assert_int_equal(n, 10);
	assert_memory_equal(b, "0123456789", 11);
	free(b);
	unlink(f);
	wb_diags_release(&d);
}

/* ---- scene limits and strings ------------------------------------------ */

static enum wb_status parse(const char *text, struct wb_scene *sc,
			    struct wb_diags *d)
{
	wb_diags_init(d);
	return wb_scene_parse(text, strlen(text), "s.json", "dir", sc, d);
}

static void expect_one(const char *text, enum wb_status st, const char *line)
{
	struct wb_scene sc;
	struct wb_diags d;
	char buf[512];
	assert_int_equal(parse(text, &sc, &d), st);
	int found = 0;
	for (int i = 0; i < d.n; i++) {
		wb_diag_format(&d.v[i], buf, sizeof(buf));
		if (strcmp(buf, line) == 0)
			found = 1;
	}
	if (!found) {
		for (int i = 0; i < d.n; i++) {
			wb_diag_format(&d.v[i], buf, sizeof(buf));
			print_message("  have: %s\n", buf);
		}
		fail_msg("missing: %s", line);
	}
	wb_scene_free(&sc);
	wb_diags_release(&d);
}

#define HEAD "{\"name\": \"t\", \"terrain\": {\"heightmap\": \"t.png\"},\n"

static void test_scene_strings(void **state)
{
	(void)state;
	expect_one(HEAD "\"materials\": [{\"name\": \"a\xff\", \"kind\": \"lake\"}]}",
		   WB_EINPUT, "s.json:2:26: error: materials[0].name: a string is not valid UTF-8 (byte 0xff)");
	expect_one("{\"name\": \"ri\\u0000ver\", \"terrain\": {\"heightmap\": \"t.png\"}}",
		   WB_EINPUT, "s.json:1:13: error: name: a string holds \\u0000 (NUL), which is not allowed");
	expect_one(HEAD "\"sources\": [{\"type\": \"rain\", \"rate\": 1, \"material\": \"\\u001b[2J\"}]}",
		   WB_EINPUT, "s.json:2:53: error: sources[0].material: no material \"\\x1b[2J\"; expected the name or id of one of \"materials\" (none defined)");
	/* a long string is cut before a character, not inside one */
	char text[512], line[512], a59[60];
	memset(a59, 'a', 59);
	a59[59] = 0;
	snprintf(text, sizeof(text), HEAD "\"sources\": [{\"type\": \"rain\", \"rate\": 1, \"material\": \"%s\xc3\xa9tc\"}]}", a59);
	snprintf(line, sizeof(line), "s.json:2:53: error: sources[0].material: no material \"%s\"; expected the name or id of one of \"materials\" (none defined)", a59);
	expect_one(text, WB_EINPUT, line);
	expect_one("{\"name\": \"../up\", \"terrain\": {\"heightmap\": \"t.png\"}}",
		   WB_EINPUT, "s.json:1:10: error: name: expected a file-name-safe name (letters, digits, '-', '_', '.', at most 100, not starting with '.'), found \"../up\"");
	expect_one("{\"name\": \"a/b\", \"terrain\": {\"heightmap\": \"t.png\"}}",
		   WB_EINPUT, "s.json:1:10: error: name: expected a file-name-safe name (letters, digits, '-', '_', '.', at most 100, not starting with '.'), found \"a/b\"");
}

static void test_scene_limits(void **state)
{
	(void)state;
	/* nesting */
	char deep[256];
	size_t n = (size_t)snprintf(deep, sizeof(deep), "%s\"_c\": ", HEAD);
	for (int i = 0; i < 40; i++)
		deep[n++] = '[';
	deep[n] = 0;
	snprintf(deep + n, sizeof(deep) - n, "1");
	char want[256];
	{
		struct wb_scene sc;
		struct wb_diags d;
		assert_int_equal(parse(deep, &sc, &d), WB_EINPUT);
		assert_int_equal(d.n, 1);
		assert_int_equal(d.v[0].line, 2);
		assert_int_equal(d.v[0].col, 7 + 31);
		assert_string_equal(d.v[0].msg, "arrays and objects nested more than 32 deep");
		wb_scene_free(&sc);
		wb_diags_release(&d);
	}
	/* keys per object, points per polygon, polygons */
	size_t cap = 64u << 20;
	char *t = malloc(cap);
	assert_non_null(t);
	n = (size_t)snprintf(t, cap, "%s\"blockers\": [{\"bottom\": 0, \"top\": 1, \"polygon\": [", HEAD);
	for (int i = 0; i <= WB_SCENE_MAX_POINTS; i++)
		n += (size_t)snprintf(t + n, cap - n, "%s[%d, 0]", i ? "," : "", i % 10);
	n += (size_t)snprintf(t + n, cap - n, "]}]}");
	expect_one(t, WB_EINPUT, "s.json:2:49: error: blockers[0].polygon: expected at most 100000 points, found 100001");
	n = (size_t)snprintf(t, cap, "%s\"_many\": {", HEAD);
	for (int i = 0; i <= WB_SCENE_MAX_KEYS; i++)
		n += (size_t)snprintf(t + n, cap - n, "%s\"k%d\": 0", i ? "," : "", i);
	n += (size_t)snprintf(t + n, cap - n, "}, \"simulation\": {");
	for (int i = 0; i <= WB_SCENE_MAX_KEYS; i++)
		n += (size_t)snprintf(t + n, cap - n, "%s\"k%d\": 0", i ? "," : "", i);
	snprintf(t + n, cap - n, "}}");
	/* "_many" is not checked (a comment); simulation is, and the error
	 * points at its '{' */
	const char *obj = strstr(t, "\"simulation\": {") + 14;
	snprintf(want, sizeof(want), "s.json:2:%d: error: simulation: expected at most 1000 keys in an object, found 1001",
		 (int)(obj - (strchr(t, '\n') + 1)) + 1);
	expect_one(t, WB_EINPUT, want);
	n = (size_t)snprintf(t, cap, "%s\"modifiers\": [", HEAD);
	for (int i = 0; i <= WB_SCENE_MAX_POLYGONS; i++)
		n += (size_t)snprintf(t + n, cap - n, "%s{}", i ? "," : "");
	snprintf(t + n, cap - n, "]}");
	expect_one(t, WB_EINPUT, "s.json:2:14: error: modifiers: expected at most 10000 modifiers, found 10001");
	free(t);
}

/* Many problems: every warning located at its own line, in linear time. */
static void test_scene_many_warnings(void **state)
{
	(void)state;
	enum { B = 50, K = 900 };
	size_t cap = (size_t)B * K * 24 + 4096, n = 0;
	char *t = malloc(cap);
	assert_non_null(t);
	n += (size_t)snprintf(t + n, cap - n, "%s\"blockers\": [\n", HEAD);
	for (int b = 0; b < B; b++) {
		n += (size_t)snprintf(t + n, cap - n, "%s{\"polygon\": [[0, 0], [1, 0], [1, 1]], \"bottom\": 0, \"top\": 1\n",
				      b ? "," : "");
		for (int k = 0; k < K; k++)
			n += (size_t)snprintf(t + n, cap - n, ",  \"zz%d\": %d\n", k, k);
		n += (size_t)snprintf(t + n, cap - n, "}\n");
	}
	snprintf(t + n, cap - n, "]}\n");
	struct wb_scene sc;
	struct wb_diags d;
	clock_t t0 = clock();
	assert_int_equal(parse(t, &sc, &d), WB_OK);
	double sec = (double)(clock() - t0) / CLOCKS_PER_SEC;
	assert_int_equal(d.warnings, B * K + 1); /* + "no water" */
	assert_int_equal(d.n, WB_DIAGS_MAX);
	assert_int_equal(d.dropped, B * K + 1 - WB_DIAGS_MAX);
	for (int i = 0; i < d.n; i++) {
		int b = i / K, k = i % K;
		char path[64];
		snprintf(path, sizeof(path), "blockers[%d].zz%d", b, k);
		assert_string_equal(d.v[i].path, path);
		/* the position is the value's, after ",  \"zzK\": " */
		assert_int_equal(d.v[i].line, 3 + b * (K + 2) + 1 + k);
		assert_int_equal(d.v[i].col, 10 + snprintf(NULL, 0, "%d", k));
	}
	assert_true(sec < 2.0);
	wb_scene_free(&sc);
	wb_diags_release(&d);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_check),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_diag_format_escapes),
		cmocka_unit_test(test_diag_cap),
		cmocka_unit_test(test_jscan_positions),
		cmocka_unit_test(test_jscan_many),
		cmocka_unit_test(test_jscan_refuses),
		cmocka_unit_test(test_jscan_syntax),
		cmocka_unit_test(test_jscan_agrees_with_cjson),
		cmocka_unit_test(test_read_regular_only),
		cmocka_unit_test(test_scene_strings),
		cmocka_unit_test(test_scene_limits),
		cmocka_unit_test(test_scene_many_warnings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
