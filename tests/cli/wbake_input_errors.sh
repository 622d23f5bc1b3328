# Bad heightmaps and unreadable files exit 2 and name the file.
. tests/cli/lib.inc
W=$BIN/wbake
scene() { # scene FILE HEIGHTMAP_JSON
	printf '{"name": "x", "terrain": %s,\n "initial_water": {"level": 1}}\n' "$2" > "$1"
}

scene "$T/missing.json" '{"heightmap": "nothere.png"}'
run 2 $W "$T/missing.json" --check
expect_err_has "$T/nothere.png: error: cannot open:"

printf 'this is not a png' > "$T/text.png"
scene "$T/notpng.json" '{"heightmap": "text.png"}'
run 2 $W "$T/notpng.json" --check
expect_err "$T/text.png: error: not a PNG file (bad signature)"

head -c 300 samples/lake/terrain.png > "$T/cut.png"
scene "$T/cut.json" '{"heightmap": "cut.png"}'
run 2 $W "$T/cut.json" --check
expect_err_has "$T/cut.png: error: truncated PNG"

head -c 1000 /dev/zero > "$T/h.r16"
scene "$T/r16.json" '{"heightmap": "h.r16", "size": [256, 256]}'
run 2 $W "$T/r16.json" --check
expect_err "$T/h.r16: error: expected 131072 bytes for 256x256 r16, found 1000"

scene "$T/nosize.json" '{"heightmap": "h.r16"}'
run 2 $W "$T/nosize.json" --check
expect_err_has "error: terrain: missing required key \"size\""

# a raw r32f with a NaN
printf '\000\000\200\077\000\000\300\177\000\000\200\077\000\000\200\077' > "$T/nan.r32f"
scene "$T/nan.json" '{"heightmap": "nan.r32f", "size": [2, 2]}'
run 2 $W "$T/nan.json" --check
expect_err "$T/nan.r32f: error: pixel (1, 0) is NaN; r32f heights must be finite"

# a directory where the scene should be
mkdir -p "$T/dir.json"
run 2 $W "$T/dir.json" --check
expect_err_has "$T/dir.json: error: cannot read"

# a good raw terrain passes --check and --dump-fields writes the inputs
printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100\000\000\240\100\000\000\300\100' > "$T/ok.r32f"
scene "$T/ok.json" '{"heightmap": "ok.r32f", "size": [3, 2], "height_scale": 2}'
run 0 $W "$T/ok.json" --check --dump-fields -o "$T/o"
for f in terrain initial_depth source blocker; do
	check "fields/$f.pfm written" test -s "$T/o/fields/$f.pfm"
done
# PFM: "Pf\n3 2\n-1.0\n" (12 bytes), then 6 floats, rows bottom to top:
# the first value is the bottom row's first height, 4 * 2 = 8 m
check "terrain.pfm header" sh -c "head -c 12 '$T/o/fields/terrain.pfm' | tr '\\n' ' ' | grep -qx 'Pf 3 2 -1.0 '"
check "terrain.pfm size" sh -c "test \$(wc -c < '$T/o/fields/terrain.pfm') -eq 36"
check "terrain.pfm bottom row first" sh -c "od -An -j12 -N4 -tf4 '$T/o/fields/terrain.pfm' | grep -qw 8"
# --from names what it was given when that is not an earlier bake's
# directory (it said "X/state.wbs: cannot open: Not a directory")
head -c 40 /dev/zero > "$T/f.r16"
scene "$T/from.json" '{"heightmap": "f.r16", "size": [4, 5]}'
: > "$T/plain"
run 2 $W "$T/from.json" -o "$T/fo" --from "$T/plain" --steps 1 --quiet
expect_err "$T/plain: error: expected the output directory of an earlier bake, found a regular file"
mkfifo "$T/pipe"
run 2 timeout 10 $W "$T/from.json" -o "$T/fo" --from "$T/pipe" --steps 1 --quiet
expect_err "$T/pipe: error: expected the output directory of an earlier bake, found a FIFO (named pipe)"
run 2 $W "$T/from.json" -o "$T/fo" --from "$T/nowhere" --steps 1 --quiet
expect_err "$T/nowhere: error: expected the output directory of an earlier bake, found nothing of this name"
check "--from refused: no output" test ! -e "$T/fo"
finish
