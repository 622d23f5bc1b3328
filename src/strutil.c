/*
 * strutil.c - UTF-8 checking, terminal-safe escaping and strict number
 * parsing (see strutil.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"

/* Length of the valid UTF-8 sequence starting at s[0] (at most n bytes
 * available), or 0 when s[0] does not start one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned lo = 0x80, hi = 0xBF; /* range of the second byte */
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0; /* no overlong forms */
		else if (c == 0xED)
			hi = 0x9F; /* no surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90; /* no overlong forms */
		else if (c == 0xF4)
			hi = 0x8F; /* nothing above U+10FFFF */
	} else {
		return 0; /* continuation byte, C0, C1 or F5..FF */
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (s[k] < 0x80 || s[k] > 0xBF)
			return 0;
	return len;
}

size_t wb_utf8_check(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		if (u[i] < 0x80) { /* fast path for ASCII */
			i++;
			continue;
		}
		size_t k = utf8_seq(u + i, n - i);
		if (!k)
			return i;
		i += k;
	}
	return n;
}

size_t wb_str_escape(char *out, size_t size, const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), need = 0, fitted = 0, i = 0;
	while (i < n) {
		char esc[8];
		const char *piece = (const char *)u + i;
		size_t k = 1, elen = 1;
		if (u[i] < 0x20 || u[i] == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
			piece = esc;
			elen = 4;
		} else if (u[i] >= 0x80) {
			k = utf8_seq(u + i, n - i);
			if (k == 0 || (u[i] == 0xC2 && u[i + 1] < 0xA0)) {
				/* invalid UTF-8, or a C1 control (U+0080..U+009F):
				 * escape one byte, resynchronise on the next */
				snprintf(esc, sizeof(esc), "\\x%02x", u[i]);
				piece = esc;
				elen = 4;
				k = 1;
			} else {
				elen = k;
			}
		}
		/* write whole pieces only, and only while everything before
		 * them was written */
		if (fitted == need && need + elen < size) {
			memcpy(out + need, piece, elen);
			fitted += elen;
		}
		need += elen;
		i += k;
	}
	if (size > 0)
		out[fitted] = 0;
	return need;
}

int wb_parse_long(const char *s, long lo, long hi, long *out)
{
	if (!s)
		return -1;
	/* strtol alone would skip leading spaces and take a '+' */
	const char *d = s[0] == '-' && lo < 0 ? s + 1 : s;
	if (*d < '0' || *d > '9')
		return -1;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}
