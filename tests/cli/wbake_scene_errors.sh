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

# an empty file is said to be empty, not "an unclosed { or [" at 1:1
: > "$T/empty.json"
run 2 $W "$T/empty.json" --check
expect_err "$T/empty.json: error: the file is empty: expected a scene, a JSON object"
printf ' \n\t\r\n' > "$T/blank.json"
run 2 $W "$T/blank.json" --check
expect_err "$T/blank.json: error: the file is empty (only white space): expected a scene, a JSON object"

# a file cut off after '{', ',' or ':' without a final newline fails at
# its end, as with one (it said "syntax error near '{'" at 1:1)
printf '{' > "$T/cut1.json"
run 2 $W "$T/cut1.json" --check
expect_err "$T/cut1.json:1:2: error: syntax error: unexpected end of file (an unclosed { or [, or a missing value?)"
printf '{"name": "x",' > "$T/cut2.json"
run 2 $W "$T/cut2.json" --check
expect_err "$T/cut2.json:1:14: error: syntax error: unexpected end of file (an unclosed { or [, or a missing value?)"
printf '{"name": "x"}}' > "$T/cut3.json"
run 2 $W "$T/cut3.json" --check
expect_err "$T/cut3.json:1:14: error: syntax error: unexpected text after the scene object"

# names (materials, sources, blockers, modifiers, keep_dry) are at most 64
# bytes: they end up in the pack, the manifest and messages
long65=$(awk 'BEGIN { for (i = 0; i < 65; i++) printf "L" }')
long64=$(awk 'BEGIN { for (i = 0; i < 64; i++) printf "L" }')
e40=$(awk 'BEGIN { for (i = 0; i < 40; i++) printf "L" }')
big=$(awk 'BEGIN { for (i = 0; i < 100000; i++) printf "b" }')
b40=$(awk 'BEGIN { for (i = 0; i < 40; i++) printf "b" }')
u33=$(awk 'BEGIN { for (i = 0; i < 33; i++) printf "\303\251" }') # 33 x e-acute: 66 bytes
u20=$(awk 'BEGIN { for (i = 0; i < 20; i++) printf "\303\251" }')
names() { # names FILE MATERIAL SOURCE BLOCKER MODIFIER KEEP_DRY
	cat > "$1" <<J
{"name": "x", "terrain": {"heightmap": "terrain.png"},
 "materials": [{"name": "$2", "kind": "lake"}],
 "sources": [{"type": "spring", "name": "$3", "point": [10, 10], "discharge": 1, "material": 1}],
 "blockers": [{"name": "$4", "polygon": [[0, 0], [5, 0], [5, 5]], "bottom": 0, "top": 100}],
 "modifiers": [{"name": "$5", "center": [20, 20], "radius": 5, "velocity": [1, 0]}],
 "simulation": {"keep_dry": [{"name": "$6", "point": [30, 30]}]}}
J
}
names "$T/long.json" "$long65" "$big" "$u33" "$long65" "$long65"
run 2 $W "$T/long.json" --check
expect_err "$T/long.json:2:25: error: materials[0].name: expected a name of at most 64 bytes, found 65 bytes: \"$e40...\""
expect_err "$T/long.json:3:41: error: sources[0].name: expected a name of at most 64 bytes, found 100000 bytes: \"$b40...\""
expect_err "$T/long.json:4:24: error: blockers[0].name: expected a name of at most 64 bytes, found 66 bytes: \"$u20...\""
expect_err "$T/long.json:5:25: error: modifiers[0].name: expected a name of at most 64 bytes, found 65 bytes: \"$e40...\""
expect_err "$T/long.json:6:39: error: simulation.keep_dry[0].name: expected a name of at most 64 bytes, found 65 bytes: \"$e40...\""
check "five name errors" test "$(grep -c 'expected a name of at most 64 bytes' "$T/err")" -eq 5
names "$T/ok64.json" "$long64" "$long64" "$long64" "$long64" "$long64"
run 0 $W "$T/ok64.json" --check

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
