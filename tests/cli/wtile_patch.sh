#!/bin/sh
# wtile diff / apply: a patch from OLD to NEW holds NEW's tables and only the
# page payloads OLD lacks; apply OLD PATCH gives a file byte-identical to
# NEW. Packs are generated here (synthetic pagesets, tests/pack_synth.h):
# NEW tilts the heights of two LOD0 pages and renames a material. Errors:
# a patch applied to another pack, a corrupt patch, usage.
W=${BIN:-bin}/wtile
BUILD=${BUILD:-build/rel}
T=tests/tmp/cli_wtile_patch
rm -rf "$T" && mkdir -p "$T"
CC=${CC:-cc}
fail() { echo "FAIL: $*"; cat "$T/out" "$T/err" 2>/dev/null; exit 1; }
command -v "$CC" >/dev/null 2>&1 || { echo "no C compiler: skipped"; exit 0; }
[ -f "$BUILD/libwbake.a" ] || fail "$BUILD/libwbake.a not built"
cat >"$T/gen.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include "pack.h"
#include "pack_synth.h"
/* gen OUT VARIANT: 0 base, 1 two pages tilted by 0.25 m and material 3
   renamed, 2 like 0 with another river noise (every river page differs) */
int main(int argc, char **argv)
{
	if (argc != 3)
		return 1;
	int var = atoi(argv[2]);
	struct synth_opts o = { 1100, 300, 2, (1u << WB_LAYER_HEIGHT) |
			       (1u << WB_LAYER_FLOW) | (1u << WB_LAYER_MATERIAL),
			       1.0, var == 2 ? 0.01 : 0.0, 0 };
	struct wb_pageset ps;
	if (synth_pageset(&o, &ps))
		return 4;
	int changed = 0;
	for (long i = 0; var == 1 && i < (long)ps.lods[0].px * ps.lods[0].py &&
			 changed < 2; i++) {
		struct wb_page *p = &ps.lods[0].pages[i];
		if (p->state != WB_PAGE_DATA || i < 10)
			continue;
		for (int k = 0; k < WB_PAGE_PIXELS; k++)
			if (p->height[k] != WB_DRY_HEIGHT)
				p->height[k] += 0.25f * (float)(k % 130) / 130;
		changed++;
	}
	struct wb_material mats[3] = {
		{ 1, "pond", WB_MAT_LAKE, 0.01, 0.5, 0.2 },
		{ 2, "lake", WB_MAT_LAKE, 0.05, 0.3, 0.5 },
		{ 3, var == 1 ? "stream" : "river", WB_MAT_RIVER, 0.1, 1.5, 2.0 },
	};
	struct wb_pack_meta m = { 0 };
	m.scene_name = "patch";
	m.solver = "lbm";
	m.materials = mats;
	m.n_materials = 3;
	struct wb_diags d;
	wb_diags_init(&d);
	enum wb_status s = pack_write(argv[1], &ps, &m, NULL, &d);
	if (s != WB_OK && d.n)
		fprintf(stderr, "%s\n", d.v[0].msg);
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
for v in 0 1 2; do "$T/gen" "$T/p$v.wtp" $v || fail "gen $v"; done
cmp -s "$T/p0.wtp" "$T/p1.wtp" && fail "variants are equal"

# diff: only the two changed pages travel
"$W" diff "$T/p0.wtp" "$T/p1.wtp" -o "$T/a.patch" >"$T/out" 2>"$T/err" || fail "diff exit $?"
size=$(wc -c <"$T/a.patch")
new=$(wc -c <"$T/p1.wtp")
grep -qxF "$T/a.patch: 2 of 29 pages changed, $size bytes (new pack $new bytes)" "$T/out" || fail "diff summary"
[ "$size" -lt $((new / 4)) ] || fail "patch of $size bytes for a $new byte pack"
"$W" apply "$T/p0.wtp" "$T/a.patch" -o "$T/out.wtp" >"$T/out" 2>"$T/err" || fail "apply exit $?"
grep -qxF "$T/out.wtp: $new bytes" "$T/out" || fail "apply summary"
cmp "$T/out.wtp" "$T/p1.wtp" || fail "apply result differs from NEW"
"$W" verify "$T/out.wtp" >"$T/out" 2>"$T/err" || fail "applied pack does not verify"

# identical packs: no page travels; a whole different bake: all do
"$W" diff "$T/p0.wtp" "$T/p0.wtp" -o "$T/same.patch" >"$T/out" 2>"$T/err" || fail "diff same"
grep -qF ": 0 of 27 pages changed" "$T/out" || fail "identical packs: pages sent"
"$W" apply "$T/p0.wtp" "$T/same.patch" -o "$T/same.wtp" >/dev/null 2>&1 || fail "apply same"
cmp -s "$T/same.wtp" "$T/p0.wtp" || fail "apply same differs"
"$W" diff "$T/p0.wtp" "$T/p2.wtp" -o "$T/b.patch" >"$T/out" 2>"$T/err" || fail "diff noisy"
"$W" apply "$T/p0.wtp" "$T/b.patch" -o "$T/b.wtp" >/dev/null 2>&1 || fail "apply noisy"
cmp -s "$T/b.wtp" "$T/p2.wtp" || fail "apply noisy differs"

# wrong base, corrupt patch, not a patch: exit 2, OUT not written
"$W" apply "$T/p2.wtp" "$T/a.patch" -o "$T/x.wtp" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "wrong base: exit $rc"
grep -qxF "wtile: $T/a.patch: patch was made against another pack than OLD" "$T/err" || fail "wrong base message"
cp "$T/a.patch" "$T/c.patch"
printf '\001' | dd of="$T/c.patch" bs=1 seek=300 conv=notrunc 2>/dev/null
"$W" apply "$T/p0.wtp" "$T/c.patch" -o "$T/x.wtp" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "corrupt patch: exit $rc"
grep -qxF "wtile: $T/c.patch: patch CRC mismatch: corrupt" "$T/err" || fail "corrupt message"
"$W" apply "$T/p0.wtp" "$T/p1.wtp" -o "$T/x.wtp" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "not a patch: exit $rc"
grep -qxF "wtile: $T/p1.wtp: not a wtile patch" "$T/err" || fail "not a patch message"
[ ! -e "$T/x.wtp" ] || fail "an output was written on error"
"$W" diff "$T/p0.wtp" -o "$T/y.patch" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 1 ] || fail "diff with one pack: exit $rc"
grep -qxF "wtile: diff needs two files and -o" "$T/err" || fail "usage message"
echo ok
