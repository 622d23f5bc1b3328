/*
 * jscan.h - one linear pass over JSON text (jscan.c): checks what cJSON does
 * not, and finds where values are.
 *
 * cJSON keeps no positions and accepts strings that are not UTF-8 or that
 * hold "\u0000" (which silently truncates them). wb_jscan() walks the text
 * once, iteratively (no recursion), accepting strict JSON (RFC 8259, a
 * subset of what cJSON 1.7 accepts), and
 *   - stops at the first string (or key) that is not valid UTF-8, holds a
 *     "\u0000" escape or a "\u" escape without four hex digits, and at the
 *     first array or object nested deeper than max_depth, and at the
 *     value past max_values (cJSON spends ~70 bytes on each), giving the
 *     problem's JSON path, line and column;
 *   - stops at the first syntax error, saying what is wrong and where
 *     (the '}' after a trailing comma, the token before which a ',' is
 *     missing, the opening quote of an unclosed string, the '{' or '['
 *     left open at the end of the file); because it accepts nothing cJSON
 *     refuses, a caller whose cJSON parse failed on text wb_jscan accepts
 *     knows the failure was out of memory;
 *   - refuses a number that overflows a double (1e400), which cJSON would
 *     silently read as infinity;
 *   - fills line and column for each requested JSON path ("a.b[3].c", as
 *     scene.c builds them) with an open-addressed hash of the paths and an
 *     incrementally hashed current path: the cost is one pass over the text
 *     however many paths are asked for (the old per-diagnostic rescan made
 *     100,000 warnings quadratic).
 * Lines and columns are 1-based; the column counts bytes, as the syntax
 * errors do. Paths longer than WB_JSCAN_PATHN - 1 bytes are not located.
 */
#ifndef WB_JSCAN_H
#define WB_JSCAN_H

#include <stddef.h>

#define WB_JSCAN_PATHN 256
#define WB_JSCAN_MAX_DEPTH 256

enum wb_jscan_status {
	WB_JSCAN_OK,
	WB_JSCAN_SYNTAX,  /* not JSON: msg says what, line and col where */
	WB_JSCAN_DEPTH,   /* nested deeper than max_depth */
	WB_JSCAN_UTF8,    /* a string or key is not valid UTF-8 */
	WB_JSCAN_NUL,     /* a string or key holds \u0000 */
	WB_JSCAN_ESCAPE,  /* a \u escape without four hex digits */
	WB_JSCAN_COUNT,   /* more than max_values values */
	WB_JSCAN_NOMEM,   /* no memory for the path table: nothing located */
	WB_JSCAN_RANGE,   /* a number past a double's range (msg says which) */
};

/* One path to locate: in, path; out, line and col of the first value at
 * that path (0 when absent). */
struct wb_jscan_loc {
	const char *path;
	int line, col;
};

struct wb_jscan_result {
	enum wb_jscan_status status;
	size_t off;       /* OK: end of the root value; else where it stopped */
	int line, col;    /* of off */
	int in_key;       /* the problem is in an object key (path: its object) */
	int byte;         /* UTF8: the offending byte */
	char path[WB_JSCAN_PATHN]; /* JSON path of the value at fault */
	char msg[200];    /* SYNTAX, RANGE: what is wrong, in a sentence
			   * (no "syntax error: " prefix, no position) */
};

/* Scan text[0..len) (a UTF-8 byte order mark is not skipped: the caller
 * strips it). max_depth is clamped to WB_JSCAN_MAX_DEPTH; max_values <= 0
 * means no limit. locs may be NULL when n is 0. */
void wb_jscan(const char *text, size_t len, int max_depth, long max_values,
	      struct wb_jscan_loc *locs, size_t n, struct wb_jscan_result *res);

/* The 1-based line and byte column of offset off in text[0..len), with the
 * line ends wb_jscan counts (a line feed, or a carriage return not followed
 * by one). */
void wb_jscan_linecol(const char *text, size_t len, size_t off, int *line,
		      int *col);

#endif
