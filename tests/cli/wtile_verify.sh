#!/bin/sh
# wtile verify: exit 0 on a sound pack; exit 2 naming what failed when any
# byte is changed (tables, pages or padding: every 7th byte here), when the
# pack is truncated or has trailing bytes, or when it is not a pack; a
# version 1.0 pack is refused with the advice to re-bake.
W=${BIN:-bin}/wtile
P=fuzz/corpus/fuzz_wtp/valid_all_layers.wtp
T=tests/tmp/cli_wtile_verify
mkdir -p "$T"
fail() { echo "FAIL: $*"; cat "$T/out" "$T/err" 2>/dev/null; exit 1; }
"$W" verify "$P" >"$T/out" 2>"$T/err" || fail "sound pack: exit $?"
grep -qF "$P: ok (2 pages, 1568 bytes)" "$T/out" || fail "ok line"
size=$(wc -c <"$P")
pos=0
while [ "$pos" -lt "$size" ]; do
	cp "$P" "$T/f.wtp"
	old=$(od -An -tu1 -j "$pos" -N1 "$P" | tr -d ' ')
	new=$(( (old + 1) % 256 ))
	printf "\\$(printf %o "$new")" | dd of="$T/f.wtp" bs=1 seek="$pos" conv=notrunc 2>/dev/null
	"$W" verify "$T/f.wtp" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "byte $pos changed: exit $rc, want 2"
	grep -qF "verify failed" "$T/err" || fail "byte $pos: no 'verify failed'"
	pos=$((pos + 7))
done
# a page payload byte: the page is named
cp "$P" "$T/f.wtp"
printf '\001' | dd of="$T/f.wtp" bs=1 seek=900 conv=notrunc 2>/dev/null
"$W" verify "$T/f.wtp" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "page byte: exit $rc"
grep -qF "CRC mismatch" "$T/err" || fail "page byte: no CRC message"
# truncations
for n in 0 10 127 128 500 1567; do
	head -c "$n" "$P" >"$T/t.wtp"
	"$W" verify "$T/t.wtp" >"$T/out" 2>"$T/err"; rc=$?
	[ "$rc" -eq 2 ] || fail "truncated to $n: exit $rc, want 2"
done
grep -qF "file is 1567 bytes, header says 1568" "$T/err" || fail "truncation message"
cat "$P" "$P" >"$T/t.wtp"
"$W" verify "$T/t.wtp" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "trailing bytes: exit $rc"
printf 'hello, not a pack, hello, not a pack, hello, not a pack, hello, not a pack, hello, not a pack, hello, not a pack, hello, not a pack\n' >"$T/t.wtp"
"$W" verify "$T/t.wtp" >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "text file: exit $rc"
grep -qF "not a tile pack" "$T/err" || fail "bad magic message"
# a version 1.0 pack (kept in the corpus): refused, with the advice
"$W" verify fuzz/corpus/fuzz_wtp/v1_valid_states.wtp >"$T/out" 2>"$T/err"; rc=$?
[ "$rc" -eq 2 ] || fail "version 1 pack: exit $rc"
grep -qxF "wtile: fuzz/corpus/fuzz_wtp/v1_valid_states.wtp: format version 1.0, this reader reads 2.x (re-bake: version 1 heights are not seam-exact)" "$T/err" || fail "version 1 message"
echo ok
