# Block-compressed layers (pack format 2.1, docs/wtp-format.md 4.1): a
# sample baked with output.compression verifies, says BC5 / BC4 in wtile
# info, decodes within the error budget of section 4.1 against the same
# bake with 16-bit layers (wtile compare), streams with examples/stream,
# extracts, and patches with wtile diff / apply. Bad compression settings
# exit 2 naming the JSON path.
. tests/cli/lib.inc
W=$BIN/wbake
BUILD=${BUILD:-build/rel}
cp samples/coast/terrain.png "$T/terrain.png"
# OUTPUT-MEMBERS: the scene's output object with these members added
# (sed, no JSON tool needed: the sample's output is one line)
scene() {
	sed "s|\"output\": { \"lods\": 3, \"distance_max\": 32 }|\"output\": { \"lods\": 3, \"distance_max\": 32$1 }|" \
		samples/coast/scene.json
}
scene ', "compression": {"flow": "bc5", "distance": "bc4", "foam": "bc4"}' > "$T/bc.json"
check "the scene was edited" grep -q '"compression"' "$T/bc.json"
cp samples/coast/scene.json "$T/plain.json"

run 0 $W "$T/plain.json" -o "$T/plain" --steps 1500 --quiet
run 0 $W "$T/bc.json" -o "$T/bc" --steps 1500 --quiet
tr -d ' \t\n' < "$T/bc/manifest.json" > "$T/manifest.compact"
check "manifest names the compressed layers" \
	grep -qF '"compression":{"flow":"bc5","distance":"bc4","foam":"bc4"}' "$T/manifest.compact"
check "a manifest without compression has no key" \
	sh -c "! grep -q '\"compression\"' '$T/plain/manifest.json'"
P=$T/plain/coast.wtp
B=$T/bc/coast.wtp
run 0 $BIN/wtile verify "$B"
run 0 $BIN/wtile info "$B"
expect_out_has "wtp 2.1,"
expect_out_has "layers: height R16F (relative), flow BC5_SNORM, material R8_UINT, distance BC4_SNORM, foam BC4_UNORM"
run 0 $BIN/wtile info "$P"
expect_out_has "wtp 2.0,"
expect_out_has "flow RG16F"
run 0 $BIN/wtile info --json "$B"
check "info --json names BC5_SNORM" grep -q '"format":[[:space:]]*"BC5_SNORM"' "$T/out"
check "the BC pack is smaller" test "$(wc -c < "$B")" -lt "$(wc -c < "$P")"

# error budget (section 4.1): per texel at most scale/7 (SNORM) or
# scale/14 (UNORM) whatever the data; on this sample the RMS stays under
# 1 % of the page scale (measured 0.5 %, section 4.1's table)
run 0 $BIN/wtile compare "$P" "$B"
cp "$T/out" "$T/compare"
sed 's/^/  /' "$T/compare"
budget() { # LAYER MAXREL RMSREL
	line=$(grep "^$1 " "$T/compare")
	mx=$(echo "$line" | sed -n 's/.*of the page scale: max \([^,]*\), rms \(.*\)$/\1/p')
	rm_=$(echo "$line" | sed -n 's/.*of the page scale: max \([^,]*\), rms \(.*\)$/\2/p')
	check "$1: max $mx of the scale <= $2" awk -v a="$mx" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'
	check "$1: rms $rm_ of the scale <= $3" awk -v a="$rm_" -v b="$3" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }'
}
budget flow 0.142858 0.01
budget distance 0.142858 0.01
budget foam 0.071429 0.01
check "height unchanged by BC" grep -q '^height R16F: [0-9]* values, 0 differ' "$T/compare"
check "material unchanged by BC" grep -q '^material R8_UINT: [0-9]* values, 0 differ' "$T/compare"

# an engine's streamer and the extract command read BC pages
if [ -x "$BUILD/examples/stream" ]; then
	run 0 "$BUILD/examples/stream" "$B" --quiet
	expect_out_has "invariants held"
fi
run 0 $BIN/wtile extract "$B" --lod 0 --tile 0 0 --layer flow -o "$T/flow.pfm"
check "flow.pfm written" test -s "$T/flow.pfm"
run 0 $BIN/wtile extract "$B" --lod 0 --tile 1 1 --layer foam -o "$T/foam.png"

# patches are codec-agnostic: plain -> BC -> byte-identical BC pack
run 0 $BIN/wtile diff "$P" "$B" -o "$T/p.patch"
run 0 $BIN/wtile apply "$P" "$T/p.patch" -o "$T/applied.wtp"
check "apply gives the BC pack" cmp -s "$T/applied.wtp" "$B"

# compare refuses packs of different bakes
sed 's/"lods": 3/"lods": 1/' "$T/plain.json" > "$T/other.json"
run 0 $W "$T/other.json" -o "$T/other" --steps 10 --quiet
run 2 $BIN/wtile compare "$P" "$T/other/coast.wtp"
expect_err_has "compare:"
run 1 $BIN/wtile compare "$P"

# bad settings: exit 2, the JSON path named
bad() { # OUTPUT-MEMBERS EXPECTED-STDERR-PART
	scene "$1" > "$T/bad.json"
	run 2 $W "$T/bad.json" --check
	expect_err_has "$2"
}
bad ', "compression": {"height": "bc4"}' 'error: output.compression.height: heights cannot be block-compressed'
bad ', "compression": {"material": "bc4"}' 'error: output.compression.material: material ids cannot be block-compressed'
bad ', "compression": {"flow": "bc4"}' 'error: output.compression.flow: expected "bc5" or "none", found "bc4"'
bad ', "compression": {"foam": 1}' 'error: output.compression.foam: expected "bc4" or "none", found 1'
bad ', "compression": {"wind": "bc4"}' 'error: output.compression.wind: expected a layer name'
bad ', "compression": "bc5"' 'error: output.compression: expected an object, found "bc5"'
bad ', "layers": ["height", "flow"], "compression": {"foam": "bc4"}' 'error: output.compression.foam: the foam layer is not in output.layers'
scene ', "compression": {"flow": "none", "foam": "bc4"}' > "$T/ok.json"
run 0 $W "$T/ok.json" --check
finish
