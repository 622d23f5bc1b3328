# Outputs: a bake writes a verifiable pack and a manifest; a failed bake
# (bad scene, unwritable output) exits with its code and leaves the earlier
# output untouched, with no temporary files behind.
. tests/cli/lib.inc
W=$BIN/wbake
S=samples/lake/scene.json

run 0 $W $S -o "$T/o" --steps 50 --quiet --json
check "pack written" test -s "$T/o/lake.wtp"
check "manifest written" test -s "$T/o/manifest.json"
expect_out_has '"status": 0'
expect_out_has '"pack": "'
check "quiet means no progress" test ! -s "$T/err"
# the stages' wall times: in --json only, never in the manifest
check "json: timings of every stage" grep -Eq '"timings": \{"total_s": [0-9.]+, "load_s": [0-9.]+, "before_solver_s": [0-9.]+, "solver_s": [0-9.]+, "solver_setup_s": [0-9.]+, "outputs_s": [0-9.]+, "state_s": [0-9.]+\}' "$T/out"
check "manifest: no timings" sh -c "! grep -q timings '$T/o/manifest.json'"
run 0 $BIN/wtile verify "$T/o/lake.wtp"
check "manifest names the scene" grep -q '"lake"' "$T/o/manifest.json"
cp "$T/o/lake.wtp" "$T/before.wtp"
cp "$T/o/manifest.json" "$T/before.json"

# a bad scene into the same directory: exit 2, the earlier output intact
printf '{"name": "lake", "terrain": {"heightmap": "missing.png"}}' > "$T/bad.json"
run 2 $W "$T/bad.json" -o "$T/o"
check "pack untouched" cmp -s "$T/o/lake.wtp" "$T/before.wtp"
check "manifest untouched" cmp -s "$T/o/manifest.json" "$T/before.json"

# the output directory is a file: exit 4
: > "$T/file"
run 4 $W $S -o "$T/file" --steps 10 --quiet
expect_err_has "error: cannot create directory"

# the pack cannot be renamed into place: exit 4, no temporaries left
mkdir -p "$T/o2/lake.wtp"
run 4 $W $S -o "$T/o2" --steps 10 --quiet
check "no temporary files" sh -c "! ls '$T/o2' | grep -q tmp"

# equal inputs, equal bytes: the same bake again, with one thread
run 0 $W $S -o "$T/o3" --steps 50 --quiet --threads 1
check "same pack with 1 thread" cmp -s "$T/o3/lake.wtp" "$T/before.wtp"
check "same manifest with 1 thread" cmp -s "$T/o3/manifest.json" "$T/before.json"
finish
