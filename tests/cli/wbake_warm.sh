# Starts: every bake writes OUTDIR/state.wbs; --from starts from it (the
# manifest says "warm"), and refuses a state of another terrain or grid, a
# missing one and a corrupt one with exit code 2 and a message naming the
# file; --dump-fields writes the first guess; simulation.initial and
# keep_dry are checked like every key.
. tests/cli/lib.inc
W=$BIN/wbake
S=samples/lake/scene.json

run 0 $W $S -o "$T/a" --steps 20 --quiet --dump-fields
check "state written" test -s "$T/a/state.wbs"
check "first guess dumped" test -s "$T/a/fields/first_guess_depth.pfm"
check "manifest says how it started" grep -Eq '"start":[[:space:]]*"hydrology"' "$T/a/manifest.json"
check "manifest has the window history" grep -Eq '"windows":[[:space:]]*\[' "$T/a/manifest.json"

run 0 $W $S -o "$T/b" --steps 20 --quiet --from "$T/a"
check "warm start recorded" grep -Eq '"start":[[:space:]]*"warm"' "$T/b/manifest.json"

# another terrain (the river sample): refused
run 2 $W samples/river/scene.json -o "$T/c" --steps 20 --quiet --from "$T/a"
expect_err_has "state.wbs: error: state is for a"
expect_err_has "warm start refused"
check "nothing written" test ! -e "$T/c/manifest.json"
# no state there
run 2 $W $S -o "$T/c" --steps 20 --quiet --from "$T/nowhere"
expect_err "$T/nowhere: error: expected the output directory of an earlier bake, found nothing of this name"
# a corrupt state
cp "$T/a/state.wbs" "$T/bad.wbs" && mkdir -p "$T/bad" &&
	printf 'X' | dd of="$T/bad.wbs" bs=1 seek=200 conv=notrunc 2>/dev/null &&
	mv "$T/bad.wbs" "$T/bad/state.wbs"
run 2 $W $S -o "$T/c" --steps 20 --quiet --from "$T/bad"
expect_err_has "corrupt"
# --from without a directory is a usage error
run 1 $W $S -o "$T/c" --from

# the new keys are validated
sed 's/"simulation": {/"simulation": {"initial": "wet", "keep_dry": [{"name": "k"}], /' \
	$S > "$T/keys.json"
sed -i "s|\"heightmap\": \"|\"heightmap\": \"$(pwd)/samples/lake/|" "$T/keys.json"
run 2 $W "$T/keys.json" --check
expect_err_has "simulation.initial"
expect_err_has "simulation.keep_dry[0]"
finish
