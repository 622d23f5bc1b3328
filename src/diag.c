/*
 * diag.c - collecting problems for the caller to print (wb_diags).
 *
 * The library never prints: each module appends what went wrong, with the
 * file, JSON path and line/column when known, and returns a status. Out of
 * memory while recording a diagnostic drops the message but still counts it,
 * so a caller never mistakes a failure for success. Past WB_DIAGS_MAX errors
 * (or warnings) the messages are only counted.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"
#include "util.h"
#include "wbake.h"

void wb_diags_init(struct wb_diags *d)
{
	memset(d, 0, sizeof(*d));
}

void wb_diags_release(struct wb_diags *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].path);
		free(d->v[i].msg);
	}
	free(d->v);
	memset(d, 0, sizeof(*d));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void diag_addv(struct wb_diags *d, enum wb_severity sev,
		      const char *file, const char *path, int line, int col,
		      const char *fmt, va_list ap)
	__attribute__((format(printf, 7, 0)));
static void diag_addv(struct wb_diags *d, enum wb_severity sev,
		      const char *file, const char *path, int line, int col,
		      const char *fmt, va_list ap)
{
	if (sev == WB_SEV_ERROR)
		d->errors++;
	else if (sev == WB_SEV_WARNING)
		d->warnings++;
	if ((sev == WB_SEV_ERROR && d->errors > WB_DIAGS_MAX) ||
	    (sev == WB_SEV_WARNING && d->warnings > WB_DIAGS_MAX)) {
		d->dropped++;
		return;
	}
	if (d->n == d->cap) {
		int cap = d->cap ? d->cap * 2 : 8;
		struct wb_diag *v = realloc(d->v, (size_t)cap * sizeof(*v));
		if (!v)
			return;
		d->v = v;
		d->cap = cap;
	}
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	struct wb_diag *g = &d->v[d->n++];
	g->sev = sev;
	g->file = dup_or_null(file);
	g->path = dup_or_null(path);
	g->line = line;
	g->col = col;
	g->msg = strdup(buf);
}

void wb_diag_add(struct wb_diags *d, enum wb_severity sev, const char *file,
		 const char *path, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_addv(d, sev, file, path, line, col, fmt, ap);
	va_end(ap);
}

enum wb_status wb_fail(struct wb_diags *d, enum wb_status st, const char *file,
		       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_addv(d, WB_SEV_ERROR, file, NULL, 0, 0, fmt, ap);
	va_end(ap);
	return st;
}

/* At most this many bytes of a file name or JSON path, escaped, go into
 * a formatted diagnostic: a longer one (a 5 MB heightmap path in a hostile
 * scene) keeps its start and its end around "...", so that the message
 * after it still fits in the caller's line. */
#define DIAG_NAME_MAX 600

/* Append s, escaped, at buf + *n (size bytes in all), its middle elided
 * when its escaped form is longer than DIAG_NAME_MAX. */
static void put_name(char *buf, size_t size, size_t *n, const char *s)
{
	if (*n + 1 >= size)
		return;
	if (wb_str_escape(NULL, 0, s) <= DIAG_NAME_MAX) {
		*n += wb_str_escape(buf + *n, size - *n, s);
	} else {
		size_t room = size - *n;
		wb_str_escape(buf + *n, room < DIAG_NAME_MAX / 2 ? room : DIAG_NAME_MAX / 2, s);
		*n += strlen(buf + *n);
		*n += (size_t)snprintf(buf + *n, size - *n, "...");
		if (*n >= size)
			*n = size - 1;
		/* the last bytes: an escape takes at most 4 bytes per byte */
		size_t len = strlen(s), off = len - DIAG_NAME_MAX / 8;
		while (off < len && ((unsigned char)s[off] & 0xC0) == 0x80)
			off++; /* not inside a UTF-8 sequence */
		*n += wb_str_escape(buf + *n, size - *n, s + off);
	}
	if (*n >= size)
		*n = size - 1;
}

void wb_diag_format(const struct wb_diag *g, char *buf, size_t size)
{
	static const char *const sev[] = { "error", "warning", "note" };
	size_t n = 0;
	if (!size)
		return;
	buf[0] = 0;
#define PUT(...) do { \
		int k_ = snprintf(buf + n, size - n, __VA_ARGS__); \
		if (k_ > 0) n += (size_t)k_; \
		if (n >= size) n = size - 1; \
	} while (0)
#define PUTS(s) do { \
		n += wb_str_escape(buf + n, size - n, (s)); \
		if (n >= size) n = size - 1; \
	} while (0)
	if (g->file) {
		put_name(buf, size, &n, g->file);
		PUT(":");
		if (g->line > 0) {
			PUT("%d:", g->line);
			if (g->col > 0)
				PUT("%d:", g->col);
		}
		PUT(" ");
	}
	PUT("%s: ", sev[g->sev]);
	if (g->path) {
		put_name(buf, size, &n, g->path);
		PUT(": ");
	}
	PUTS(g->msg ? g->msg : "(out of memory)");
#undef PUT
#undef PUTS
}

void wb_diags_set_file(struct wb_diags *d, int from, const char *file)
{
	for (int i = from < 0 ? 0 : from; i < d->n; i++)
		if (!d->v[i].file && file)
			d->v[i].file = strdup(file); /* NULL again if out of memory */
}
