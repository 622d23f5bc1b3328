#!/bin/sh
# wtile extract: one stored 130x130 page of a layer as PFM (SI units) or PNG;
# FLAT and EMPTY pages expand to their constant values.
W=${BIN:-bin}/wtile
P=fuzz/corpus/fuzz_wtp/valid_states.wtp
A=fuzz/corpus/fuzz_wtp/valid_all_layers.wtp
T=tests/tmp/cli_wtile_extract
mkdir -p "$T"
rm -f "$T"/*
fail() { echo "FAIL: $*"; cat "$T/err" 2>/dev/null; exit 1; }
run() { "$W" "$@" >"$T/out" 2>"$T/err" || fail "wtile $*: exit $?"; }
# DATA page of the lake (LOD0 page 3, 0): heights near 30 m
run extract "$P" --lod 0 --tile 3 0 --layer height -o "$T/h.pfm"
grep -qF "LOD 0 page (3, 0) DATA height -> $T/h.pfm" "$T/out" || fail "extract line"
[ "$(head -n 1 "$T/h.pfm")" = "Pf" ] || fail "not a 1-channel PFM"
size=$(wc -c <"$T/h.pfm")
hdr=$(head -n 3 "$T/h.pfm" | wc -c)
[ "$size" -eq $((hdr + 130 * 130 * 4)) ] || fail "PFM size $size"
[ "$(sed -n 2p "$T/h.pfm")" = "130 130" ] || fail "PFM dimensions"
v=$(od -An -tf4 -j "$hdr" -N4 "$T/h.pfm" | tr -d ' ')
awk -v v="$v" 'BEGIN { exit !(v > 29.9 && v < 30.1) }' || fail "lake height $v"
# FLAT page (the pond, LOD0 page 0, 0): 20 m everywhere, material 1
run extract "$P" --lod 0 --tile 0 0 --layer height -o "$T/f.pfm"
grep -qF "FLAT" "$T/out" || fail "FLAT not reported"
n20=$(od -An -v -tf4 -j "$hdr" "$T/f.pfm" | tr -s ' ' '\n' | grep -c '^20$')
[ "$n20" -eq 16900 ] || fail "FLAT page: $n20 of 16900 pixels at 20 m"
run extract "$P" --lod 0 --tile 0 0 --layer material -o "$T/m.pfm"
n1=$(od -An -v -tf4 -j "$hdr" "$T/m.pfm" | tr -s ' ' '\n' | grep -c '^1$')
[ "$n1" -eq 16900 ] || fail "FLAT material: $n1 of 16900 pixels"
# EMPTY page: dry sentinel
run extract "$P" --lod 0 --tile 8 2 --layer height -o "$T/e.pfm"
grep -qF "EMPTY" "$T/out" || fail "EMPTY not reported"
nd=$(od -An -v -tf4 -j "$hdr" "$T/e.pfm" | tr -s ' ' '\n' | grep -c '^-65504$')
[ "$nd" -eq 16900 ] || fail "EMPTY page: $nd dry pixels"
# flow: 3-channel PFM; PNGs
run extract "$A" --lod 1 --tile 0 0 --layer flow -o "$T/flow.pfm"
[ "$(head -n 1 "$T/flow.pfm")" = "PF" ] || fail "flow is not a 3-channel PFM"
fsize=$(wc -c <"$T/flow.pfm")
[ "$fsize" -eq $((hdr + 130 * 130 * 12)) ] || fail "flow PFM size $fsize"
for l in height flow material distance foam; do
	run extract "$A" --lod 0 --tile 1 0 --layer $l -o "$T/$l.png"
	[ "$(od -An -tx1 -N8 "$T/$l.png" | tr -d ' ')" = "89504e470d0a1a0a" ] || fail "$l.png is not a PNG"
done
# unwritable output: I/O error
"$W" extract "$P" --lod 0 --tile 3 0 --layer height -o "$T/no/such/dir/h.pfm" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 4 ] || fail "unwritable output: exit $rc, want 4"
echo ok
