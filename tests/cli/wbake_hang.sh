# Hostile geometry never hangs wbake: polygons billions of cells off the
# grid, a nanometre grid, coordinates near the limits of a double, degenerate
# polygons and huge vertex counts all end --check within seconds, with exit
# 2 and a message naming the JSON path, or pass when the scene is valid.
# (Before the fix, a polygon 2^31 cells away made the cell range overflow and
# --check loop forever.) Every run is under 'timeout': a hang fails as 124.
. tests/cli/lib.inc
W=$BIN/wbake
cp samples/lake/terrain.png "$T/terrain.png"   # 256x256 cells at 1 m

# far FILE X Y MPP: every kind of polygon and region about (X, Y) metres away
far() {
	cat > "$1" <<J
{
  "name": "far",
  "terrain": {"heightmap": "terrain.png", "metres_per_pixel": $4},
  "materials": [{"name": "w", "kind": "lake"}],
  "initial_water": {"areas": [{"polygon": [[$2, $3], [$2, 1$3], [1$2, $3]], "level": 1}]},
  "sources": [
    {"type": "spring", "point": [0.01, 0.01], "discharge": 1, "material": "w"},
    {"type": "lake", "polygon": [[-$2, 0], [-$2, 0.01], [-1$2, 0]], "level": 50, "material": "w"},
    {"type": "rain", "rate": 1, "region": [[0, $3], [0.01, $3], [0, 1$3]]},
    {"type": "sink", "region": [[$2, -$3], [1$2, -$3], [$2, -1$3]], "discharge": 1},
    {"type": "ocean", "level": 200, "exclude": [[[$2, $3], [$2, 1$3], [1$2, $3]]], "material": "w"}
  ],
  "blockers": [{"polygon": [[$2, $3], [$2, 1$3], [1$2, $3]], "bottom": 1, "top": 2}],
  "modifiers": [
    {"polygon": [[$2, 0], [$2, 0.01], [1$2, 0]], "velocity": [1, 0], "falloff": "linear", "falloff_width": 5},
    {"center": [-$2, 0.005], "radius": 0.01, "velocity": [1, 0]}
  ]
}
J
}
expect_far() { # expect_far FILE TERRAIN_SIZE: the messages of a far scene
	expect_err "$1:5:43: error: initial_water.areas[0].polygon: the polygon covers no cell of the $2 m terrain"
	expect_err "$1:8:33: error: sources[1].polygon: the polygon covers no cell of the $2 m terrain"
	expect_err "$1:9:43: error: sources[2].region: the region covers no cell of the $2 m terrain"
	expect_err "$1:10:32: error: sources[3].region: the region covers no cell of the $2 m terrain"
	expect_err "$1:13:28: error: blockers[0].polygon: the polygon covers no cell of the $2 m terrain"
	expect_err "$1:15:5: error: modifiers[0]: the region covers no cell of the $2 m terrain"
	expect_err "$1:16:5: error: modifiers[1]: the region covers no cell of the $2 m terrain"
}

# 3e9 cells away at 1 m (more than 2^31 cells), then at 1 mm per pixel
far "$T/far.json" 3000000000 3000000000 1
run 2 timeout 10 $W "$T/far.json" --check
expect_far "$T/far.json" 256x256
far "$T/far_mm.json" 3000000 3000000 0.001
run 2 timeout 10 $W "$T/far_mm.json" --check
expect_far "$T/far_mm.json" 0.256x0.256
# ... and near the largest double: 1e300 cells away
far "$T/far_max.json" 1e300 1e300 1
run 2 timeout 10 $W "$T/far_max.json" --check
expect_far "$T/far_max.json" 256x256

# a nanometre grid is refused by the scene check, naming the key
sed 's/"metres_per_pixel": 1}/"metres_per_pixel": 1e-9}/' "$T/far.json" > "$T/nano.json"
run 2 timeout 10 $W "$T/nano.json" --check
expect_err "$T/nano.json:3:63: error: terrain.metres_per_pixel: expected at least 0.001 (1 mm per pixel), found 1e-09"

# polygons reaching +-1e300 cover the whole grid: valid, and quick
cat > "$T/huge.json" <<'J'
{
  "name": "huge",
  "terrain": {"heightmap": "terrain.png"},
  "materials": [{"name": "w", "kind": "lake"}],
  "sources": [{"type": "rain", "rate": 1, "region": [[-1e300, -1e300], [1e300, -1e300], [0, 1e300]]},
              {"type": "river", "path": [[1, 1], [1e300, 1e300]], "width": 2, "discharge": 1, "material": "w"}],
  "blockers": [{"polygon": [[-1e300, -1e300], [1e300, -1e300], [1e300, 1e300], [-1e300, 1e300]], "bottom": 1, "top": 2}],
  "modifiers": [{"polygon": [[-1e300, -1e300], [1e300, -1e300], [0, 1e300]], "velocity": [1, 0], "falloff": "smooth", "falloff_width": 10}]
}
J
run 0 timeout 10 $W "$T/huge.json" --check
expect_err "$T/huge.json: ok: scene 'huge', 256x256 cells at 1 m, 2 sources, 1 blockers, 1 modifiers, 1 materials, inflow 1.02 m^3/s, 0 warnings"

# degenerate polygons (one point three times, collinear points) cover nothing
cat > "$T/degen.json" <<'J'
{
  "name": "degen",
  "terrain": {"heightmap": "terrain.png"},
  "initial_water": {"areas": [{"polygon": [[5, 5], [5, 5], [5, 5]], "level": 1}]},
  "blockers": [{"polygon": [[0, 0], [100, 100], [200, 200], [50, 50]], "bottom": 1, "top": 2}],
  "modifiers": [{"polygon": [[10.5, 0], [10.5, 100], [10.5, 50]], "velocity": [1, 0], "falloff": "linear", "falloff_width": 3}]
}
J
run 2 timeout 10 $W "$T/degen.json" --check
expect_err "$T/degen.json:4:43: error: initial_water.areas[0].polygon: the polygon covers no cell of the 256x256 m terrain"
expect_err "$T/degen.json:5:28: error: blockers[0].polygon: the polygon covers no cell of the 256x256 m terrain"
expect_err "$T/degen.json:6:17: error: modifiers[0]: the region covers no cell of the 256x256 m terrain"

# 60,000-vertex polygons over the whole grid and a 20,000-point river: the
# fill is row by row (was cells x vertices: about 40 s here), the corridor
# and the falloff visit only the cells near each segment
awk 'BEGIN {
	n = 60000; pi = 3.14159265358979
	printf "{\"name\": \"many\", \"terrain\": {\"heightmap\": \"terrain.png\"},\n"
	printf " \"materials\": [{\"name\": \"w\", \"kind\": \"river\"}],\n \"blockers\": [{\"bottom\": 1, \"top\": 2, \"polygon\": ["
	for (k = 0; k < n; k++) {
		rr = (k % 2) ? 120 : 100
		printf "%s[%.4f, %.4f]", k ? ", " : "", 128 + rr * cos(2 * pi * k / n), 128 + rr * sin(2 * pi * k / n)
	}
	printf "]}],\n \"modifiers\": [{\"velocity\": [1, 0], \"falloff\": \"smooth\", \"falloff_width\": 8, \"polygon\": ["
	for (k = 0; k < n; k++)
		printf "%s[%.4f, %.4f]", k ? ", " : "", 128 + 110 * cos(2 * pi * k / n), 128 + 90 * sin(2 * pi * k / n)
	printf "]}],\n \"sources\": [{\"type\": \"river\", \"width\": 6, \"discharge\": 1, \"material\": \"w\", \"path\": ["
	for (k = 0; k <= 20000; k++)
		printf "%s[%.4f, %.4f]", k ? ", " : "", 5 + 246 * k / 20000, 128 + 100 * sin(k / 300)
	printf "]}]}\n"
}' > "$T/many.json"
run 0 timeout 20 $W "$T/many.json" --check
expect_err_has "$T/many.json: ok: scene 'many', 256x256 cells at 1 m, 1 sources, 1 blockers, 1 modifiers"

# a falloff along thousands of long edges criss-crossing the grid would take
# edges x cells: refused with the estimate, before any of that work
awk 'BEGIN {
	printf "{\"name\": \"spiky\", \"terrain\": {\"heightmap\": \"terrain.png\"},\n \"modifiers\": [{\"velocity\": [1, 0], \"falloff\": \"linear\", \"falloff_width\": 100, \"polygon\": ["
	for (k = 0; k < 8000; k++)
		printf "%s[%d, %d]", k ? ", " : "", (k % 2) ? 0 : 255, k * 255 / 8000
	printf "]}]}\n"
}' > "$T/spiky.json"
run 2 timeout 10 $W "$T/spiky.json" --check
expect_err_has "error: modifiers[0].polygon: a 100 m falloff along these 8000 edges would visit "
expect_err_has " cells (at most 1e+08 in all): use fewer vertices or a smaller falloff_width"
# the bound is for the whole scene: two such modifiers of 1500 edges each
# (some 6e7 cells each) pass one by one, not together
awk 'BEGIN {
	printf "{\"name\": \"spiky2\", \"terrain\": {\"heightmap\": \"terrain.png\"},\n \"modifiers\": ["
	for (m = 0; m < 2; m++) {
		printf "%s{\"velocity\": [1, 0], \"falloff\": \"linear\", \"falloff_width\": 100, \"polygon\": [", m ? ", " : ""
		for (k = 0; k < 1500; k++)
			printf "%s[%d, %d]", k ? ", " : "", (k % 2) ? 0 : 255, k * 255 / 1500
		printf "]}"
	}
	printf "]}\n"
}' > "$T/spiky2.json"
run 2 timeout 20 $W "$T/spiky2.json" --check
expect_err_has "error: modifiers[1].polygon: a 100 m falloff along these 1500 edges would visit "
if grep -qF "modifiers[0]" "$T/err"; then
	echo "FAIL: modifiers[0] alone is within the bound"; fails=$((fails + 1))
fi
finish
