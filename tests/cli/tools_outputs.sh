# Outputs that are not regular files are refused (exit 4) and left as they
# are, by every tool that writes a named file: the atomic rename used to put
# the new file in place of the node itself (as root, "mkterrain river
# /dev/null" turned /dev/null into a PNG). FIFOs stand in for devices here,
# so that a regression cannot damage the machine running the tests.
# An empty output name is a usage error (exit 1; mkterrain world '' wrote
# /terrain.png and /scene.json); mkterrain world writes scene.json
# atomically, as the terrain (an earlier one was truncated first).
. tests/cli/lib.inc
P=fuzz/corpus/fuzz_wtp/valid_states.wtp
MK=$BIN/mkterrain
WT=$BIN/wtile
WP=$BIN/wpreview

# is_fifo PATH: still a FIFO, and no temporary left beside it
is_fifo() {
	check "$1 is still a FIFO" test -p "$1"
	check "no temporary beside $1" test -z "$(ls "$(dirname "$1")" | grep -F "$(basename "$1").tmp")"
}
mkfifo "$T/f.png" "$T/f.pfm" "$T/f.wtp"
ln -s f.png "$T/link.png"

run 4 timeout 20 $MK river "$T/f.png"
expect_err "mkterrain: $T/f.png: error: cannot write: '$T/f.png' is a FIFO (named pipe), not a regular file (left as it is)"
is_fifo "$T/f.png"
run 4 timeout 20 $MK lake "$T/link.png"
expect_err "mkterrain: $T/link.png: error: cannot write: '$T/link.png' is a FIFO (named pipe), not a regular file (left as it is)"
check "link.png is still a link" test -L "$T/link.png"
is_fifo "$T/f.png"
mkdir "$T/d.png"
run 4 timeout 20 $MK coast "$T/d.png"
expect_err "mkterrain: $T/d.png: error: cannot write: '$T/d.png' is a directory, not a regular file (left as it is)"

run 1 $MK river ''
expect_err "mkterrain: OUT.png is empty"
# (mkterrain world '' is refused the same way; not run here, since a
# regression would write /terrain.png and /scene.json)
: > "$T/plain"
run 4 timeout 20 $MK world 256 "$T/plain"
expect_err "mkterrain: $T/plain: error: cannot create directory: '$T/plain' is a regular file, not a directory"
# world: a FIFO where scene.json goes is refused and kept
mkdir "$T/w"
mkfifo "$T/w/scene.json"
run 4 timeout 20 $MK world 256 "$T/w"
expect_err "mkterrain: $T/w/scene.json: error: cannot write: '$T/w/scene.json' is a FIFO (named pipe), not a regular file (left as it is)"
is_fifo "$T/w/scene.json"

run 4 timeout 20 $WT extract "$P" --lod 0 --tile 0 0 --layer height -o "$T/f.pfm"
expect_err "wtile: $T/f.pfm: error: cannot write: '$T/f.pfm' is a FIFO (named pipe), not a regular file (left as it is)"
is_fifo "$T/f.pfm"
run 4 timeout 20 $WT extract "$P" --lod 0 --tile 0 0 --layer height -o "$T/link.png"
is_fifo "$T/f.png"
run 4 timeout 20 $WT diff "$P" "$P" -o "$T/f.wtp"
expect_err_has "'$T/f.wtp' is a FIFO (named pipe), not a regular file (left as it is)"
is_fifo "$T/f.wtp"

mkdir "$T/pv"
mkfifo "$T/pv/height.png"
run 4 timeout 20 $WP "$P" -o "$T/pv"
expect_err "wpreview: $T/pv/height.png: error: cannot write: '$T/pv/height.png' is a FIFO (named pipe), not a regular file (left as it is)"
is_fifo "$T/pv/height.png"
finish
