# Untrusted strings from the command line: a scene path holding terminal
# escape sequences is printed escaped (no raw ESC reaches stderr), and a
# scene file name that is not UTF-8 does not make manifest.json invalid
# JSON (its scene_file says "(not UTF-8)").
. tests/cli/lib.inc
W=$BIN/wbake
esc=$(printf '\033')
dir="$T/a${esc}[31mb"
mkdir -p "$dir"
cp samples/lake/terrain.png "$dir/"
bad=$(printf 'sc\377ene.json')
cp samples/lake/scene.json "$dir/$bad"

run 0 $W "$dir/$bad" --check
check "--check: no raw ESC on stderr" sh -c "! grep -q \"$esc\" '$T/err'"
expect_err_has 'a\x1b[31mb/sc\xffene.json: ok: scene '"'lake'"

run 0 $W "$dir/$bad" -o "$T/o" --solver swe --steps 5
check "bake: no raw ESC on stderr" sh -c "! grep -q \"$esc\" '$T/err'"
expect_err_has 'a\x1b[31mb/sc\xffene.json: baking '"'lake'"
check "manifest: scene_file is not the raw bytes" grep -q '"scene_file":[[:space:]]*"(not UTF-8)"' "$T/o/manifest.json"
check "manifest: no byte 0xff" sh -c "! grep -q \"$(printf '\377')\" '$T/o/manifest.json'"
finish
