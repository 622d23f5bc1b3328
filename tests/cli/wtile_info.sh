#!/bin/sh
# wtile info: header, layers, LODs with page counts by state, sizes and
# metadata of a corpus pack written by tests/test_pack.c; --json the same as
# one JSON object.
W=${BIN:-bin}/wtile
P=fuzz/corpus/fuzz_wtp/valid_states.wtp
T=tests/tmp/cli_wtile_info
mkdir -p "$T"
fail() { echo "FAIL: $*"; cat "$T/out" "$T/err"; exit 1; }
"$W" info "$P" >"$T/out" 2>"$T/err" || fail "info exit $?"
[ ! -s "$T/err" ] || fail "info wrote to stderr"
for want in \
	"$P: wtp 2.0, 37424 bytes, alignment 16" \
	"scene: synthetic, tool: wbake 0.1.0, solver: lbm" \
	"layers: height R16F (relative), material R8_UINT" \
	"lod 0: 1100x300 px, 9x3 pages, 1 m/px: 21 data, 2 flat, 4 empty, 19 new stored, height step 0.5 m" \
	"lod 1: 550x150 px, 5x2 pages, 2 m/px: 8 data, 0 flat, 2 empty, 8 new stored, height step 0.5 m" \
	"pages: 27 stored (0 raw)" \
	"quadtree: 5 levels, root water" \
	"materials: 3" \
	"  3 river kind river amplitude 0.1 frequency 1.5 speed 2" \
	"  1 pond kind lake amplitude 0.01 frequency 0.5 speed 0.2" \
	"scene_sha256: 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
do
	grep -qF -- "$want" "$T/out" || fail "info lacks '$want'"
done
"$W" info "$P" --json >"$T/out" 2>"$T/err" || fail "info --json exit $?"
for want in '"format_version":	"2.0"' '"file_bytes":	37424' '"px":	9' \
	'"data":	21' '"flat":	2' '"empty":	4' '"format":	"R16F"' \
	'"relative":	true' '"levels":	5' '"name":	"river"' '"kind":	"river"'
do
	grep -qF -- "$want" "$T/out" || fail "info --json lacks '$want'"
done
if command -v python3 >/dev/null 2>&1; then
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["lods"][0]["data"]==21 and len(d["layers"])==2' "$T/out" || fail "--json is not the JSON expected"
fi
echo ok
