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
		PUTS(g->file);
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
		PUTS(g->path);
		PUT(": ");
	}
	PUTS(g->msg ? g->msg : "(out of memory)");
#undef PUT
#undef PUTS
}
