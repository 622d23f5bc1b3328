# Hostile inputs: every one fails fast with exit 2 (or 4 for out of memory)
# and a message naming the file and what is wrong; nothing blocks, nothing
# grows memory without bound, nothing reaches the terminal unescaped.
# Large inputs are generated here, never committed.
. tests/cli/lib.inc
W=$BIN/wbake
ESC=$(printf '\033')

# ms since the epoch (GNU date), for the timing checks
now_ms() { date +%s%3N; }
# no_raw_esc: stderr holds no raw ESC or BEL byte
no_raw_esc() {
	if grep -q "$ESC" "$T/err" || grep -q "$(printf '\007')" "$T/err"; then
		echo "FAIL: raw escape bytes reached stderr"
		fails=$((fails + 1))
	fi
}

head -c 40 /dev/zero > "$T/h.r16" # 4x5 r16
hscene() { # hscene FILE TERRAIN_JSON
	printf '{"name": "x", "terrain": %s, "initial_water": {"level": 1}}\n' "$2" > "$1"
}

# ---- not regular files --------------------------------------------------
mkfifo "$T/fifo.json"
run 2 timeout 10 $W "$T/fifo.json" --check
expect_err "$T/fifo.json: error: cannot read: expected a regular file, found a FIFO (named pipe)"

mkfifo "$T/fifo.r16"
hscene "$T/fifoh.json" '{"heightmap": "fifo.r16", "size": [4, 5]}'
run 2 timeout 10 $W "$T/fifoh.json" --check
expect_err "$T/fifo.r16: error: cannot read: expected a regular file, found a FIFO (named pipe)"

run 2 timeout 10 $W /dev/zero --check
expect_err "/dev/zero: error: cannot read: expected a regular file, found a character device"

hscene "$T/zero.json" '{"heightmap": "/dev/zero", "size": [4, 5]}'
run 2 timeout 10 $W "$T/zero.json" --check
expect_err "/dev/zero: error: cannot read: expected a regular file, found a character device"
hscene "$T/zeropng.json" '{"heightmap": "/dev/zero"}'
run 2 timeout 10 $W "$T/zeropng.json" --check
expect_err "/dev/zero: error: cannot read: expected a regular file, found a character device"

mkdir "$T/hdir.png"
hscene "$T/hdir.json" '{"heightmap": "hdir.png"}'
run 2 $W "$T/hdir.json" --check
expect_err "$T/hdir.png: error: cannot read: expected a regular file, found a directory"

# an output "directory" that is something else: refused at once (exit 4),
# saying what it is; nothing is read from or written to it
hscene "$T/ok.json" '{"heightmap": "h.r16", "size": [4, 5]}'
mkfifo "$T/ofifo"
run 4 timeout 10 $W "$T/ok.json" -o "$T/ofifo" --steps 1 --quiet
expect_err "$T/ofifo: error: cannot create directory: '$T/ofifo' is a FIFO (named pipe), not a directory"
run 4 timeout 10 $W "$T/ok.json" -o /dev/null --steps 1 --quiet
expect_err "/dev/null: error: cannot create directory: '/dev/null' is a character device, not a directory"
run 4 timeout 10 $W "$T/ok.json" -o /dev/null/out --steps 1 --quiet
expect_err "/dev/null: error: cannot create directory: '/dev/null' is a character device, not a directory"

# ---- sizes ---------------------------------------------------------------
# a raw heightmap must be exactly width*height*bytes: a 1 GiB sparse file
# declared 4x5 is refused from its size alone, without being read
truncate -s 1G "$T/big.r16"
hscene "$T/bigraw.json" '{"heightmap": "big.r16", "size": [4, 5]}'
t0=$(now_ms)
run 2 timeout 10 $W "$T/bigraw.json" --check
expect_err "$T/big.r16: error: expected 40 bytes for 4x5 r16, found 1073741824"
check "1 GiB raw refused in under 2 s" test $(( $(now_ms) - t0 )) -lt 2000
rm -f "$T/big.r16"

# a PNG whose IHDR claims 100000x100000: refused before decoding
printf '\211PNG\r\n\032\n\000\000\000\015IHDR\000\001\206\240\000\001\206\240\020\000\000\000\000\000\000\000\000' > "$T/huge.png"
hscene "$T/hugepng.json" '{"heightmap": "huge.png"}'
run 2 $W "$T/hugepng.json" --check
expect_err "$T/huge.png: error: 100000x100000 PNG is too large (at most 32768x32768 and 268435456 pixels)"

# a PNG whose IHDR says 0 wide: said so (libpng only said "corrupt PNG:
# Invalid IHDR data")
printf '\211PNG\r\n\032\n\000\000\000\015IHDR\000\000\000\000\000\000\000\012\020\000\000\000\000\000\000\000\000' > "$T/zero.png"
hscene "$T/zeropng0.json" '{"heightmap": "zero.png"}'
run 2 $W "$T/zeropng0.json" --check
expect_err "$T/zero.png: error: PNG is 0x10 pixels; a heightmap needs at least 1x1"

# a 4x4 PNG with 2 MiB of chunks after it: more than such an image needs
printf '\211PNG\r\n\032\n\000\000\000\015IHDR\000\000\000\004\000\000\000\004\020\000\000\000\000\000\000\000\000' > "$T/fat.png"
head -c 2097152 /dev/zero >> "$T/fat.png"
hscene "$T/fatpng.json" '{"heightmap": "fat.png"}'
run 2 $W "$T/fatpng.json" --check
expect_err "$T/fat.png: error: too large: 2097185 bytes, more than the 1048648-byte limit for this heightmap"

# a scene over 16 MiB is refused from its size
head -c 17000000 /dev/zero | tr '\0' ' ' > "$T/huge.json"
run 2 $W "$T/huge.json" --check
expect_err "$T/huge.json: error: too large: 17000000 bytes, more than the 16777216-byte limit for a scene"
rm -f "$T/huge.json"

# ---- counts and time ----------------------------------------------------
# 100,000 unknown keys in one object: past the 1000-key limit
awk 'BEGIN { printf "{\"name\": \"x\", \"terrain\": {\"heightmap\": \"h.r16\", \"size\": [4, 5]}, \"initial_water\": {\"level\": 1}";
	for (i = 0; i < 100000; i++) printf ", \"k%d\": 0", i; print "}" }' > "$T/keys.json"
t0=$(now_ms)
run 2 $W "$T/keys.json" --check
expect_err "$T/keys.json: error: expected at most 1000 keys in an object, found 100003"
check "100,000 keys refused in under 3 s" test $(( $(now_ms) - t0 )) -lt 3000

# 99,700 unknown keys over 100 blockers: all warned about and located in
# one pass (this took minutes when each warning rescanned the text); the
# first 20 are listed, the rest counted
awk 'BEGIN { printf "{\"name\": \"x\", \"terrain\": {\"heightmap\": \"h.r16\", \"size\": [4, 5]}, \"initial_water\": {\"level\": 1}, \"blockers\": [\n";
	for (b = 0; b < 100; b++) { printf "%s{\"polygon\": [[0, 0], [1, 0], [1, 1]], \"bottom\": 0, \"top\": 1", b ? "," : "";
		for (i = 0; i < 997; i++) printf ",\n \"k%d\": 0", i; print "}" }
	print "]}" }' > "$T/warn.json"
t0=$(now_ms)
run 0 $W "$T/warn.json" --check
check "99,700 warnings in under 3 s" test $(( $(now_ms) - t0 )) -lt 3000
expect_err "$T/warn.json:3:8: warning: blockers[0].k0: unknown key \"k0\" ignored"
expect_err "$T/warn.json:22:9: warning: blockers[0].k19: unknown key \"k19\" ignored"
expect_err "wbake: ... and 99680 more problems not shown (at most 20 errors and 20 warnings are listed)"
check "20 warnings listed" test "$(grep -c ': warning: ' "$T/err")" -eq 20
expect_err_has "99700 warnings"

# 10,000 modifiers over the whole 256x256 map (5000 polygons, 5000 discs
# with a smooth falloff): each adds its rate to every cell, a few additions
# per cell; the geometry (crossings, distances) is per row and per cell of
# the falloff band. This took 7..12 s when every cell of every modifier ran
# the crossing or distance test; about 1 s now.
awk -v t="$PWD/samples/lake/terrain.png" 'BEGIN { printf "{\"name\": \"m\", \"terrain\": {\"heightmap\": \"%s\"}, \"initial_water\": {\"level\": 1}, \"modifiers\": [\n", t;
	for (i = 0; i < 10000; i++) {
		if (i % 2) printf ",\n{\"center\": [128, 128], \"radius\": 400, \"falloff_width\": 20, \"velocity\": [1, 0]}";
		else printf "%s{\"polygon\": [[0, 0], [256, 0], [256, 256], [0, 256]], \"velocity\": [0, 1]}", i ? ",\n" : "" }
	print "]}" }' > "$T/mods.json"
t0=$(now_ms)
run 0 $W "$T/mods.json" --check
check "10,000 whole-map modifiers checked in under 5 s" test $(( $(now_ms) - t0 )) -lt 5000
expect_err_has "$T/mods.json: ok: scene 'm', 256x256 cells at 1 m, 0 sources, 0 blockers, 10000 modifiers"

# nesting deeper than 32
awk 'BEGIN { printf "{\"name\": \"x\", \"_c\": "; for (i = 0; i < 100000; i++) printf "["; print "" }' > "$T/deep.json"
run 2 $W "$T/deep.json" --check
# the 32nd '[' (col 21 + 31) is the 33rd level; its path is _c and 31 "[0]"
expect_err "$T/deep.json:1:52: error: _c$(awk 'BEGIN { for (i = 0; i < 31; i++) printf "[0]" }'): arrays and objects nested more than 32 deep"

# more than 1,000,000 values
awk 'BEGIN { printf "{\"name\": \"x\", \"_c\": [0"; for (i = 0; i < 1000000; i++) printf ",0"; print "]}" }' > "$T/values.json"
run 2 $W "$T/values.json" --check
# value 1,000,001 is element 999,997 (after the object, "x" and the array)
expect_err "$T/values.json:1:2000016: error: _c[999997]: more than 1000000 values (numbers, strings, arrays, objects) in the scene"

# ---- strings --------------------------------------------------------------
printf '{"name": "x", "terrain": {"heightmap": "h.r16", "size": [4, 5]},\n "materials": [{"name": "caf\351", "kind": "lake"}]}\n' > "$T/utf8.json"
run 2 $W "$T/utf8.json" --check
expect_err "$T/utf8.json:2:29: error: materials[0].name: a string is not valid UTF-8 (byte 0xe9)"

printf '{"name": "ri\\u0000ver", "terrain": {"heightmap": "h.r16", "size": [4, 5]}}\n' > "$T/nul.json"
run 2 $W "$T/nul.json" --check
expect_err "$T/nul.json:1:13: error: name: a string holds \\u0000 (NUL), which is not allowed"
check "no ri.wtp" test ! -e "$T/ri.wtp"

# escape sequences from the scene are shown escaped, never sent raw
printf '{"name": "a\\u001b[31mb", "terrain": {"heightmap": "h.r16", "size": [4, 5]}}\n' > "$T/escname.json"
run 2 $W "$T/escname.json" --check
expect_err "$T/escname.json:1:10: error: name: expected a file-name-safe name (letters, digits, '-', '_', '.', at most 100, not starting with '.'), found \"a\\x1b[31mb\""
no_raw_esc

printf '{"name": "x", "terrain": {"heightmap": "h.r16", "size": [4, 5]},\n "sources": [{"type": "rain", "rate": 1, "material": "m\\u001b]0;owned\\u0007"}], "k\\u009b2J": 1}\n' > "$T/escmat.json"
run 2 $W "$T/escmat.json" --check
expect_err "$T/escmat.json:2:54: error: sources[0].material: no material \"m\\x1b]0;owned\\x07\"; expected the name or id of one of \"materials\" (none defined)"
expect_err "$T/escmat.json:2:94: warning: k\\xc2\\x9b2J: unknown key \"k\\xc2\\x9b2J\" ignored"
no_raw_esc

# ---- long names and numbers, shown so that the message survives ----------
# a 100,000-byte heightmap path: its middle is elided, the error after it
# is shown (it was cut off at 2 KiB, with no "error:" left on the line)
awk 'BEGIN { printf "{\"name\": \"x\", \"terrain\": {\"heightmap\": \""; for (i = 0; i < 100000; i++) printf "a"; print "\"}}" }' > "$T/longpath.json"
run 2 $W "$T/longpath.json" --check
expect_err_has "aaa...aaa"
expect_err_has "aaaa: error: cannot open: File name too long"
check "long path: one short line" test "$(wc -c < "$T/err")" -lt 1000

# a 100,000-byte unknown key: its first 60 bytes, and "ignored"
awk 'BEGIN { printf "{\"name\": \"x\", \"terrain\": {\"heightmap\": \"h.r16\", \"size\": [4, 5]}, \"initial_water\": {\"level\": 1}, \"";
	for (i = 0; i < 100000; i++) printf "k"; print "\": 0}" }' > "$T/longkey.json"
run 0 $W "$T/longkey.json" --check
expect_err_has ": unknown key \"$(awk 'BEGIN { for (i = 0; i < 60; i++) printf "k" }')...\" ignored"

# a number beside its limit is shown with all its digits, not "found 1e+06"
hscene "$T/lvl.json" '{"heightmap": "h.r16", "size": [4, 5]}'
sed -i 's/"level": 1/"level": 1000005/' "$T/lvl.json"
run 2 $W "$T/lvl.json" --check
expect_err "$T/lvl.json:1:93: error: initial_water.level: expected a number of at most 1e+06, found 1000005"
# terrain.size is a size in pixels, not a point in metres
hscene "$T/size3.json" '{"heightmap": "h.r16", "size": [4, 5, 6]}'
run 2 $W "$T/size3.json" --check
expect_err "$T/size3.json:1:57: error: terrain.size: expected [width, height] in pixels, found an array of 3 items"

# water surfaces 950 km apart on one page: the pack cannot hold them; the
# error (exit 2) names the scene and what to check, not only "pack:"
row=""; i=0
while [ $i -lt 64 ]; do # 30 columns at 0 m, a 4-column wall, 30 at ~900 km
	if [ $i -lt 30 ]; then row="$row\\000\\000"
	elif [ $i -lt 34 ]; then row="$row\\377\\377"
	else row="$row\\146\\346"; fi
	i=$((i + 1))
done
: > "$T/two.r16"
i=0; while [ $i -lt 64 ]; do printf "$row" >> "$T/two.r16"; i=$((i + 1)); done
cat > "$T/two.json" <<'J'
{"name": "two", "terrain": {"heightmap": "two.r16", "size": [64, 64], "height_scale": 1000000},
 "materials": [{"name": "w", "kind": "lake"}],
 "sources": [{"type": "lake", "seed": [10, 10], "level": 5, "material": "w"},
             {"type": "lake", "seed": [50, 10], "level": 950000, "material": "w"}]}
J
run 2 timeout 60 $W "$T/two.json" -o "$T/two" --steps 3 --threads 1 --quiet
expect_err "$T/two.json: error: pack: LOD 0: the water surface spans more than 130 km within a page or between neighbouring pages, more than the pack's heights (half floats relative to a page base) hold; check terrain.height_scale and the water levels"
check "pack range: no output" test ! -e "$T/two"

# ---- out of memory is exit 4 --------------------------------------------
# 990,000 values need ~70 MB of cJSON nodes; under a 50 MB address-space
# limit the parse fails for want of memory, which is not a syntax error.
awk 'BEGIN { printf "{\"name\": \"x\", \"terrain\": {\"heightmap\": \"h.r16\", \"size\": [4, 5]}, \"initial_water\": {\"level\": 1}, \"_c\": [0";
	for (i = 0; i < 990000; i++) printf ",0"; print "]}" }' > "$T/oom.json"
run 0 $W "$T/oom.json" --check
if sh -c 'ulimit -v 50000; exec "$0" --version' "$W" >/dev/null 2>&1; then
	run 4 sh -c "ulimit -v 50000; exec $W '$T/oom.json' --check"
	expect_err "$T/oom.json: error: out of memory parsing the scene ($(wc -c < "$T/oom.json") bytes)"
else
	echo "note: wbake does not start under ulimit -v (sanitizer build?): OOM check skipped"
fi
finish
