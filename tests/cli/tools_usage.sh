# wpreview's and mkterrain's command lines: usage errors exit 1 with a
# message naming the option and the value; numbers are read whole; an
# option that takes a value may be given once.
. tests/cli/lib.inc
P=fuzz/corpus/fuzz_wtp/valid_states.wtp
WP=$BIN/wpreview
MK=$BIN/mkterrain

run 1 $WP
expect_err "wpreview: missing PACK.wtp"
run 1 $WP "$P"
expect_err "wpreview: missing -o DIR"
run 1 $WP "$P" -o
expect_err "wpreview: option '-o' needs a value"
run 1 $WP "$P" -o "$T/w" --frob
expect_err "wpreview: unknown option '--frob'"
# an empty -o wrote the pictures into the current directory (run in $T)
case $WP in /*) AWP=$WP ;; *) AWP=$PWD/$WP ;; esac
run 1 sh -c 'cd "$1" && exec "$2" "$3" -o ""' sh "$T" "$AWP" "$PWD/$P"
expect_err "wpreview: -o needs a directory name, found ''"
check "no picture written in the current directory" test ! -e "$T/height.png"
run 1 $WP "$P" "$P" -o "$T/w"
expect_err "wpreview: unexpected argument '$P' (one pack per run)"
for v in ' 0' '0 ' '+0' '-1' '32' 'x' ''; do
	run 1 $WP "$P" -o "$T/w" --lod "$v"
	expect_err "wpreview: --lod expects a LOD number from 0 to 31, found '$v'"
done
run 1 $WP "$P" -o "$T/w" -o "$T/w2"
expect_err "wpreview: option '-o' given twice ('$T/w', then '$T/w2'); give it once"
run 1 $WP "$P" -o "$T/w" --lod 0 --lod 1
expect_err "wpreview: option '--lod' given twice ('0', then '1'); give it once"
run 1 $WP "$P" -o "$T/w" --scene a.json --scene b.json
expect_err "wpreview: option '--scene' given twice ('a.json', then 'b.json'); give it once"
check "nothing written on a usage error" test ! -e "$T/w" -a ! -e "$T/w2"
run 0 $WP "$P" -o "$T/w" --lod 0
check "wpreview --lod 0 writes height.png" test -s "$T/w/height.png"

for v in ' 512' '512 ' '+512' '0x200' '255' '32769' ''; do
	run 1 $MK world "$v" "$T/mk"
	expect_err "mkterrain: world SIZE expects a number from 256 to 32768, found '$v'"
done
check "nothing written on a usage error" test ! -e "$T/mk"
finish
