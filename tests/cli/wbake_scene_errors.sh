# Bad scenes exit 2 and say where: file:line:col for syntax errors, the JSON
# path for semantic ones, every problem in one run; unknown keys only warn.
. tests/cli/lib.inc
W=$BIN/wbake
cp samples/lake/terrain.png "$T/terrain.png"

# a syntax error on line 3 is reported as line 3
printf '{\n  "name": "x",\n  "terrain": {"heightmap": "terrain.png",}\n}\n' > "$T/syntax.json"
run 2 $W "$T/syntax.json" --check
expect_err "$T/syntax.json:3:42: error: syntax error near '}'"

printf '{\n  "name": "x",\n  "terrain": {"heightmap": "terrain.png"\n' > "$T/eof.json"
run 2 $W "$T/eof.json" --check
expect_err "$T/eof.json:4:1: error: syntax error: unexpected end of file (an unclosed { or [, or a missing value?)"

# several semantic errors, all reported, with paths, found and expected
cat > "$T/sem.json" <<'J'
{
  "name": "x",
  "terrain": {"heightmap": "terrain.png", "metres_per_pixel": 0},
  "materials": [{"name": "lake", "kind": "lake"}],
  "sources": [
    {"type": "spring", "point": [10, 10], "discharge": 1, "material": "lake"},
    {"type": "spring", "point": [10, 10], "discharge": -2, "material": "mud"}
  ],
  "simulaton": {"solver": "lbm"}
}
J
run 2 $W "$T/sem.json" --check
expect_err "$T/sem.json:3:63: error: terrain.metres_per_pixel: expected a number > 0, found 0"
expect_err "$T/sem.json:7:56: error: sources[1].discharge: expected a number > 0, found -2"
expect_err_has "error: sources[1].material: no material \"mud\"; expected the name or id of one of \"materials\": \"lake\""
expect_err "$T/sem.json:9:16: warning: simulaton: unknown key \"simulaton\" ignored; did you mean \"simulation\"?"

# an unknown key alone is a warning: --check passes
sed 's/"simulaton"/"simulation"/; s/"metres_per_pixel": 0/"metres_per_pixel": 1/; s/-2/2/; s/"mud"/"lake"/; s/"discharge": 1,/"dischrage": 1, "discharge": 1,/' "$T/sem.json" > "$T/warn.json"
run 0 $W "$T/warn.json" --check
expect_err "$T/warn.json:6:56: warning: sources[0].dischrage: unknown key \"dischrage\" ignored; did you mean \"discharge\"?"

# not an object
printf '[1, 2]\n' > "$T/array.json"
run 2 $W "$T/array.json" --check
expect_err "$T/array.json:1:1: error: expected the scene to be a JSON object, found an array"

# missing scene file
run 2 $W "$T/nope.json" --check
expect_err_has "$T/nope.json: error: cannot open"

# a rasterisation error names the JSON path
cat > "$T/off.json" <<'J'
{"name": "x", "terrain": {"heightmap": "terrain.png"},
 "materials": [{"name": "w", "kind": "lake"}],
 "sources": [{"type": "spring", "point": [9999, 5], "discharge": 1, "material": "w"}]}
J
run 2 $W "$T/off.json" --check
expect_err "$T/off.json:3:42: error: sources[0].point: expected a point on the terrain (0..256, 0..256 m), found (9999, 5)"
finish
