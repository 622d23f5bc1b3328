#!/bin/sh
# examples/stream.c (built by make as $BUILD/examples/stream): streams the
# DATA pages nearest a moving camera into a 64x64 pool with wtp.h and
# wtp_alloc.h, evicting the farthest, and checks every frame that no slot
# is double-booked, that the resident set is the nearest pages and that
# the pool holds the right texels. Run on a generated 4-LOD pack (85
# pages; budgets below and above that) and on a corpus
# pack; a deliberately broken streamer (--no-evict) must be caught.
BUILD=${BUILD:-build/rel}
S=$BUILD/examples/stream
T=tests/tmp/cli_wtile_example_stream
rm -rf "$T" && mkdir -p "$T"
CC=${CC:-cc}
fail() { echo "FAIL: $*"; cat "$T/out" "$T/err" 2>/dev/null | tail -20; exit 1; }
[ -x "$S" ] || fail "$S not built (make builds examples/)"
command -v "$CC" >/dev/null 2>&1 || { echo "no C compiler: skipped"; exit 0; }
cat >"$T/gen.c" <<'C'
#include <stdio.h>
#include "pack.h"
#include "pack_synth.h"
int main(int argc, char **argv)
{
	struct synth_opts o = { 2600, 1300, 4, (1u << WB_LAYER_HEIGHT) |
			       (1u << WB_LAYER_FLOW) | (1u << WB_LAYER_DISTANCE),
			       1.0, 0.002, 0 };
	struct wb_pageset ps;
	struct wb_pack_meta m = { 0 };
	struct wb_diags d;
	if (argc != 2 || synth_pageset(&o, &ps))
		return 1;
	m.scene_name = "stream";
	wb_diags_init(&d);
	enum wb_status s = pack_write(argv[1], &ps, &m, NULL, &d);
	wb_pageset_free(&ps);
	wb_diags_release(&d);
	return s == WB_OK ? 0 : 2;
}
C
# the library of a sanitizer build (make SAN=1 test) needs the runtimes
case $BUILD in */san*) SANFLAGS="-fsanitize=address,undefined" ;; *) SANFLAGS= ;; esac
"$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -fopenmp $SANFLAGS -Iinclude -Isrc -Itests \
	"$T/gen.c" "$BUILD/libwbake.a" -lpng -lz -lcjson -lm -o "$T/gen" \
	2>"$T/err" || fail "generator does not build"
"$T/gen" "$T/world.wtp" || fail "generator failed"
for b in 16 64 4096; do
	"$S" "$T/world.wtp" --budget $b --frames 200 --quiet >"$T/out" 2>"$T/err" || fail "budget $b: exit $?"
	grep -q "budget $b, .* evictions, .*: invariants held" "$T/out" || fail "budget $b summary"
	cat "$T/out"
done
grep -q " 0 evictions" "$T/out" || fail "budget 4096 evicted pages of a pack that fits"
"$S" "$T/world.wtp" --budget 16 --frames 200 --quiet >"$T/out" 2>&1
grep -q "budget 16, [0-9]* uploads (max [0-9]* a frame), 0 evictions" "$T/out" && fail "no evictions at budget 16"
"$S" fuzz/corpus/fuzz_wtp/valid_states.wtp --budget 8 --quiet >"$T/out" 2>"$T/err" || fail "corpus pack: exit $?"
"$S" "$T/world.wtp" --budget 16 --frames 50 --quiet --no-evict >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 3 ] || fail "broken streamer: exit $rc, want 3"
grep -qxF "stream: frame 1: invariant broken: resident set is not the nearest pages" "$T/err" || fail "broken streamer message"
"$S" >"$T/out" 2>"$T/err"; [ $? -eq 1 ] || fail "usage exit"
echo ok
