#!/bin/sh
# wtile: usage errors exit 1 with a message naming the problem; a pack that
# cannot be read is an I/O error (exit 4); --help exits 0.
W=${BIN:-bin}/wtile
P=fuzz/corpus/fuzz_wtp/valid_states.wtp
T=tests/tmp/cli_wtile_usage
mkdir -p "$T"
fail() { echo "FAIL: $*"; cat "$T/err" 2>/dev/null; exit 1; }
# expect CODE 'stderr substring' ARGS...
expect() {
	code=$1; msg=$2; shift 2
	"$W" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq "$code" ] || fail "wtile $*: exit $rc, want $code"
	grep -qF -- "$msg" "$T/err" || fail "wtile $*: stderr lacks '$msg'"
}
expect 1 "usage: wtile info PACK [--json]"
expect 1 "wtile: unknown command 'frob'" frob "$P"
expect 1 "wtile: info: no pack given" info
expect 1 "wtile: unknown option '--bogus'" info "$P" --bogus
expect 1 "wtile: unexpected argument 'extra'" verify "$P" extra
expect 1 "wtile: unknown option '--json'" verify "$P" --json
expect 1 "wtile: extract needs --lod, --tile, --layer and -o" extract "$P" --lod 0
expect 1 "wtile: --lod needs a LOD number (0..31), got 'x'" extract "$P" --lod x --tile 0 0 --layer height -o "$T/a.pfm"
expect 1 "wtile: --tile needs two page indices X Y" extract "$P" --lod 0 --tile 0 --layer height -o "$T/a.pfm"
expect 1 "wtile: unknown layer 'nope'" extract "$P" --lod 0 --tile 0 0 --layer nope -o "$T/a.pfm"
expect 1 "must end in .png or .pfm" extract "$P" --lod 0 --tile 0 0 --layer height -o "$T/a.txt"
expect 1 "wtile: --lod 9: $P has LODs 0..1" extract "$P" --lod 9 --tile 0 0 --layer height -o "$T/a.pfm"
expect 1 "wtile: --tile 9 0: LOD 0 has 9x3 pages" extract "$P" --lod 0 --tile 9 0 --layer height -o "$T/a.pfm"
expect 1 "has no flow layer" extract "$P" --lod 0 --tile 0 0 --layer flow -o "$T/a.pfm"
# numbers are read whole (no spaces, no '+'); values are shown escaped
expect 1 "wtile: --lod needs a LOD number (0..31), got ' 0'" extract "$P" --lod ' 0' --tile 0 0 --layer height -o "$T/a.pfm"
expect 1 "wtile: --lod needs a LOD number (0..31), got '+0'" extract "$P" --lod +0 --tile 0 0 --layer height -o "$T/a.pfm"
expect 1 "wtile: --lod needs a LOD number (0..31), got '0\\x1b'" extract "$P" --lod "$(printf '0\033')" --tile 0 0 --layer height -o "$T/a.pfm"
expect 1 "wtile: --tile needs two page indices X Y (0..16777216), got '0' ' 0'" extract "$P" --lod 0 --tile 0 ' 0' --layer height -o "$T/a.pfm"
expect 1 "wtile: --tile needs two page indices X Y (0..16777216), got '0x1' '0'" extract "$P" --lod 0 --tile 0x1 0 --layer height -o "$T/a.pfm"
# an option that takes a value, given twice, is a usage error naming both
expect 1 "wtile: option '--lod' given twice ('0', then '1'); give it once" extract "$P" --lod 0 --lod 1 --tile 0 0 --layer height -o "$T/a.pfm"
expect 1 "wtile: option '--tile' given twice ('0 0', then '1 1'); give it once" extract "$P" --lod 0 --tile 0 0 --tile 1 1 --layer height -o "$T/a.pfm"
expect 1 "wtile: option '--layer' given twice ('height', then 'flow'); give it once" extract "$P" --lod 0 --tile 0 0 --layer height --layer flow -o "$T/a.pfm"
expect 1 "wtile: option '-o' given twice ('$T/a.pfm', then '$T/b.pfm'); give it once" extract "$P" --lod 0 --tile 0 0 --layer height -o "$T/a.pfm" -o "$T/b.pfm"
expect 1 "wtile: option '-o' given twice ('$T/p1', then '$T/p2'); give it once" diff "$P" "$P" -o "$T/p1" -o "$T/p2"
# an empty -o is a usage error (diff and apply made a temporary in the
# current directory and failed at the rename, exit 4)
expect 1 "wtile: -o needs a file name, found ''" diff "$P" "$P" -o ''
expect 1 "wtile: -o needs a file name, found ''" apply "$P" "$P" -o ''
expect 1 "wtile: -o needs a file name, found ''" extract "$P" --lod 0 --tile 0 0 --layer height -o ''
[ ! -e "$T/a.pfm" ] || fail "an output was written on a usage error"
[ ! -e "$T/b.pfm" ] || fail "an output was written on a usage error"
# a flag given twice is harmless
"$W" info "$P" --json --json >"$T/out" 2>"$T/err" || fail "info --json --json: exit $?"
expect 4 "tests/tmp/cli_wtile_usage/missing.wtp" info "$T/missing.wtp"
expect 4 "missing.wtp" verify "$T/missing.wtp"
"$W" --help >"$T/out" 2>"$T/err" || fail "--help exit $?"
grep -qF "wtile verify PACK" "$T/out" || fail "--help text"
echo ok
