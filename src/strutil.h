/*
 * strutil.h - checking and showing untrusted strings (strutil.c).
 *
 * Scene files, pack metadata and file names come from outside and may hold
 * any bytes. Before such a string reaches a terminal or a JSON document it
 * is either checked (wb_utf8_check) or escaped (wb_str_escape), so that an
 * escape sequence in a material name cannot drive the user's terminal and
 * invalid UTF-8 never ends up inside manifest.json.
 *
 * Command-line values are untrusted too: wb_parse_long reads a number
 * strictly (the whole string, no spaces), so that ' 5' or '5x' is refused
 * with a message rather than taken as 5.
 *
 * No function here allocates; all are pure and thread-safe.
 */
#ifndef WB_STRUTIL_H
#define WB_STRUTIL_H

#include <stddef.h>

/* Offset of the first byte of s[0..n) that does not start a valid UTF-8
 * sequence (RFC 3629: no overlong forms, no surrogates U+D800..U+DFFF,
 * nothing above U+10FFFF), or n when all n bytes are valid UTF-8. NUL bytes
 * are valid UTF-8; callers that refuse them check separately. */
size_t wb_utf8_check(const char *s, size_t n);

/* Copy the NUL-terminated string s into out (size bytes, always
 * NUL-terminated when size > 0) so that it is safe to print on a terminal:
 * C0 controls (bytes < 0x20), DEL (0x7f), the C1 controls U+0080..U+009F
 * and bytes that are not valid UTF-8 become "\xHH" (one per byte). Valid
 * printable UTF-8, backslashes included, is kept as is: the result is for
 * reading, not for decoding back. Escapes are never cut in half by truncation.
 * Returns the length the whole escaped string needs (not counting the NUL),
 * like snprintf; a result >= size means out was truncated. */
size_t wb_str_escape(char *out, size_t size, const char *s);

/* Parse s, a command-line value, as a whole decimal integer in [lo, hi]:
 * digits only, with a leading '-' only when lo < 0; no spaces, no '+', no
 * "0x", nothing after the digits. Returns 0 and sets *out, or -1 (leaving
 * *out alone) when s is NULL, empty, anything else or out of range. */
int wb_parse_long(const char *s, long lo, long hi, long *out);

#endif
