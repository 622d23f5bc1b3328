# Bad scenes exit 2 and say where: file:line:col for syntax errors, the JSON
# path for semantic ones, every problem in one run; unknown keys only warn.
. tests/cli/lib.inc
W=$BIN/wbake
cp samples/lake/terrain.png "$T/terrain.png"

# a syntax error on line 3 is reported as line 3
printf '{\n  "name": "x",\n  "terrain": {"heightmap": "terrain.png",}\n}\n' > "$T/syntax.json"
run 2 $W "$T/syntax.json" --check
expect_err "$T/syntax.json:3:42: error: syntax error: expected a member name after ',', found '}' (JSON allows no trailing comma)"

printf '{\n  "name": "x",\n  "terrain": {"heightmap": "terrain.png"\n' > "$T/eof.json"
run 2 $W "$T/eof.json" --check
expect_err "$T/eof.json:4:1: error: syntax error: unexpected end of file: the '{' at line 3, column 14 is not closed"

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

# an origin beyond the range where a centimetre still shows in world
# positions (1e308 was accepted and printed with 309 digits)
sed 's/"simulaton"/"simulation"/; s/"metres_per_pixel": 0/"metres_per_pixel": 1/; s/-2/2/; s/"mud"/"lake"/; s/"name": "x",/"name": "x", "origin": [1e308, -5],/' "$T/sem.json" > "$T/origin.json"
run 2 $W "$T/origin.json" --check
expect_err "$T/origin.json:2:26: error: origin: expected world coordinates between -1000000000 and 1000000000 m, found [1e+308, -5]"
sed 's/1e308/-999999999.5/' "$T/origin.json" > "$T/origin_ok.json"
run 0 $W "$T/origin_ok.json" --check

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
expect_err "$T/cut1.json:1:2: error: syntax error: unexpected end of file: expected a member name (the '{' at line 1, column 1 is not closed)"
printf '{"name": "x",' > "$T/cut2.json"
run 2 $W "$T/cut2.json" --check
expect_err "$T/cut2.json:1:14: error: syntax error: unexpected end of file: expected a member name (the '{' at line 1, column 1 is not closed)"
printf '{"name": "x"}}' > "$T/cut3.json"
run 2 $W "$T/cut3.json" --check
expect_err "$T/cut3.json:1:14: error: syntax error: unexpected text after the scene object"

# Syntax errors are placed at the fault and say what it is. They were
# placed where cJSON's error pointer happened to land: '{"a": 1,}' and a
# newline was "unexpected end of file" at 2:1, '{,}' was at the '}', an
# unclosed string inside it; and "01", "1.", a tab or a NUL byte were
# accepted (cJSON takes them), a NUL at the start giving "missing name".
# syn PRINTF_FORMAT LINE:COL MESSAGE: the scene printf writes fails there
syn() {
	printf "$1" > "$T/syn.json"
	run 2 $W "$T/syn.json" --check
	expect_err "$T/syn.json:$2: error: syntax error: $3"
	check "one problem for '$1'" test "$(grep -c ': error: ' "$T/err")" -eq 1
}
syn '{"a": 1,}\n' 1:9 "expected a member name after ',', found '}' (JSON allows no trailing comma)"
# line ends: CR LF counts once, a lone CR (old Mac files) is a line end too
syn '{\r\n  "a": 1,\r\n}\r\n' 3:1 "expected a member name after ',', found '}' (JSON allows no trailing comma)"
syn '{\r  "a": 1,\r}\r' 3:1 "expected a member name after ',', found '}' (JSON allows no trailing comma)"
syn '[1, 2,]\n' 1:7 "expected a value after ',', found ']' (JSON allows no trailing comma)"
syn '{"a": {"b": [1,\n  {"c": 2,}]}}\n' 2:11 "expected a member name after ',', found '}' (JSON allows no trailing comma)"
syn '{"a": [[1, 2],\n\t]}\n' 2:2 "expected a value after ',', found ']' (JSON allows no trailing comma)"
syn '{"a": 1\n "b": 2}\n' 2:2 "expected ',' or '}', found '\"b\"' (a missing ','?)"
syn '{"a": [1 2]}\n' 1:10 "expected ',' or ']', found '2' (a missing ','?)"
syn '{"a": [1}\n' 1:9 "expected ',' or ']', found '}' (the '[' at line 1, column 7 is not closed)"
syn '{"a": foo}\n' 1:7 "expected a value for the member \"a\", found 'foo' (a string needs double quotes)"
syn "{'a': 1}\\n" 1:2 "expected a member name in double quotes, found ''' (strings and member names take double quotes)"
syn '{"a": 1, // note\n "b": 2}\n' 1:10 "expected a member name in double quotes, found '/' (JSON has no comments)"
syn '{"a": /* note */ 1}\n' 1:7 "expected a value for the member \"a\", found '/' (JSON has no comments)"
syn '{"a": 01}\n' 1:7 "invalid number '01' (JSON numbers have no leading zeros)"
syn '{"a": 1.}\n' 1:7 "invalid number '1.' (a digit must follow the decimal point)"
syn '{"a": -}\n' 1:7 "invalid number '-' (a '-' must be followed by digits)"
syn '{"a": 1e}\n' 1:7 "invalid number '1e' (the exponent needs digits)"
syn '{"a": .5}\n' 1:7 "expected a value, found '.5' (a JSON number starts with a digit or '-')"
syn '{"a": NaN}\n' 1:7 "expected a value for the member \"a\", found 'NaN' (JSON has no NaN or Infinity)"
syn '{"a": -Infinity}\n' 1:7 "invalid number '-Infinity' (JSON has no NaN or Infinity)"
syn '{"a": True}\n' 1:7 "expected a value for the member \"a\", found 'True' (JSON's literals are true, false and null, in lower case)"
syn '{"a": "abc}\n' 1:7 'string not closed on its line (a line break in a string is written \n)'
syn '{\n  "a": "abc' 2:8 "string not closed: no '\"' after it before the end of the file"
syn '{"a": "x\ty"}\n' 1:9 'a raw control character (byte 0x09) in a string; write it as \u0009 or \t'
syn '{"a": "\\x"}\n' 1:8 'invalid escape '"'"'\x'"'"' in a string (JSON has \" \\ \/ \b \f \n \r \t \uXXXX)'
syn '{"a"\n  1}\n' 2:3 "expected ':' after the member name \"a\", found '1'"
syn '{"a":}\n' 1:6 "expected a value for the member \"a\", found '}'"
syn '{,}\n' 1:2 "expected a member name in double quotes, found ','"
syn '{"a": 1\000}\n' 1:8 "expected ',' or '}', found a NUL byte (a scene is UTF-8 text: is this a binary or UTF-16 file?)"
syn '\000{"a": 1}\n' 1:1 "expected a value, found a NUL byte (a scene is UTF-8 text: is this a binary or UTF-16 file?)"
syn '{"a": 1}\000\n' 1:9 "a NUL byte (a scene is UTF-8 text) after the scene object"
# text after the root value is placed with the same line ends
syn '{"a": 1}\r\n\r  x\n' 3:3 "unexpected text after the scene object"
syn '{"a": 1\f}\n' 1:8 "expected ',' or '}', found a control character (byte 0x0c)"
syn '{"a": \342\200\234x\342\200\235}\n' 1:7 "expected a value for the member \"a\", found '$(printf '\342\200\234')' (a typographic quote: JSON takes plain double quotes)"
# a byte order mark at the start is skipped; columns count after it
syn '\357\273\277{"a": 1,}\n' 1:9 "expected a member name after ',', found '}' (JSON allows no trailing comma)"
# past a double's range: refused with its path, not read as infinity
printf '{"name": "x", "terrain": {"heightmap": "terrain.png"},\n "initial_water": {"level": 1e400}}\n' > "$T/inf.json"
run 2 $W "$T/inf.json" --check
expect_err "$T/inf.json:2:29: error: initial_water.level: the number 1e400 is out of range (a double holds at most 1.8e308)"
# a value's line and column after lone CRs (scene.c offset_to_linecol)
printf '{"name": "x",\r "terrain": 5}\r' > "$T/crpath.json"
run 2 $W "$T/crpath.json" --check
expect_err "$T/crpath.json:2:13: error: terrain: expected an object, found 5"
# UTF-16 is named as such
printf '\377\376{\000}\000' > "$T/utf16.json"
run 2 $W "$T/utf16.json" --check
expect_err "$T/utf16.json: error: the file is UTF-16 (it starts with the byte order mark ff fe): save the scene as UTF-8"

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
