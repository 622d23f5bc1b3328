#!/bin/sh
# The engines' headers stand alone: include/wtp.h (with its implementation)
# and include/wtp_alloc.h compile as strict C99 with zlib only, no warnings.
T=tests/tmp/cli_wtile_header
mkdir -p "$T"
CC=${CC:-cc}
command -v "$CC" >/dev/null 2>&1 || { echo "no C compiler: skipped"; exit 0; }
cat >"$T/use.c" <<'C'
#define WTP_IMPLEMENTATION
#include "wtp.h"
#include "wtp_alloc.h"
int main(void)
{
	wtp_pack p;
	wtp_alloc a;
	wtp_alloc_init(&a, 64, 64);
	unsigned char junk[8] = { 0 };
	wtp_error err;
	wtp_format_desc fd;
	return wtp_open(&p, junk, sizeof junk, 0, &err) == WTP_ETRUNC &&
	       err.code == WTP_ETRUNC && wtp_format_info(WTP_FMT_RG16F, &fd) == WTP_OK &&
	       fd.bytes_per_pixel == 4 &&
	       wtp_alloc_take(&a) == 0 ? 0 : 1;
}
C
"$CC" -std=c99 -pedantic -Wall -Wextra -Wshadow -Wmissing-prototypes \
	-Wstrict-prototypes -Wconversion -Werror -Iinclude "$T/use.c" -lz \
	-o "$T/use" || { echo "FAIL: headers do not compile as C99"; exit 1; }
"$T/use" || { echo "FAIL: header smoke run"; exit 1; }
echo ok
