# Messages a person can act on: an unconverged bake and a basin that keeps
# filling are warnings naming the numbers (and recorded in the manifest),
# --require-steady makes them exit 3, the residual reads "-" / null until a
# convergence check measured it, clamped cell-steps are given as a share,
# and a bad output directory is refused before the solve.
. tests/cli/lib.inc
W=$BIN/wbake
N='[0-9][0-9.e+-]*'   # a number in a message

# expect_err_re REGEX: stderr holds a line matching REGEX (grep -E, whole line)
expect_err_re() {
	if ! grep -qxE -- "$1" "$T/err"; then
		echo "FAIL: stderr lacks a line matching: $1"
		sed 's/^/  stderr: /' "$T/err" | head -20
		fails=$((fails + 1))
	fi
}
# man KEY: the manifest's value of "KEY" (first occurrence)
man() { sed -n "s/^[[:space:]]*\"$1\":[[:space:]]*\\([^,]*\\),\\{0,1\\}\$/\\1/p" "$2/manifest.json" | head -n 1; }
expect_man() { # expect_man DIR KEY VALUE
	v=$(man "$2" "$1")
	if [ "$v" != "$3" ]; then
		echo "FAIL: $1/manifest.json: \"$2\" is '$v', expected '$3'"
		fails=$((fails + 1))
	fi
}

# a flat 256 m square map (64 x 64 cells of 4 m), heights all 0
head -c 16384 /dev/zero > "$T/flat.r32f"
terrain='"terrain": {"heightmap": "flat.r32f", "size": [64, 64], "metres_per_pixel": 4}'
inflow='{"type": "inflow", "discharge": 0.5}'

# inflow on every edge, nothing leaves: not steady at max_steps, filling
cat > "$T/fill.json" <<EOS
{"name": "fill", $terrain,
 "boundaries": {"west": $inflow, "east": $inflow, "north": $inflow, "south": $inflow},
 "initial_water": {"level": 1}, "materials": [{"name": "w", "kind": "lake"}],
 "simulation": {"solver": "swe", "max_steps": 600, "window": 100}}
EOS
run 0 $W "$T/fill.json" -o "$T/fill"
expect_err_re "$T/fill.json: warning: simulation.max_steps: not steady after 600 steps: residual $N, tolerance 0.0001; $N % of the last window's change of the mean flow \\(depth-weighted, as the residual\\) is within x $N\\.\\.$N m, y $N\\.\\.$N m, $N % in x $N\\.\\.$N m, y $N\\.\\.$N m; raise simulation.max_steps or the tolerance, or look for water that cannot settle"
# where: tiles of 32 cells (64 x 64 cells of 4 m: two along a side)
expect_man "$T/fill" unsteady_tile_m 128.000000
expect_err_re "$T/fill.json: warning: the water has no way out and is still rising: $N m\\^3 came in, 0 m\\^3 left, and the water stored rose by $N m\\^3 \\($N m over the whole map\\); the scene has no open edge, level edge, ocean or sink: add one, or lower the inflow"
expect_err_re "swe: stopped at max_steps, not steady after 600 steps \\($N s simulated, $N s\\): residual $N \\(tolerance 0.0001\\), volume $N m\\^3 \\(in $N, out 0\\), balance error $N, clamped 0 % of cell-steps"
expect_man "$T/fill" stop '"max_steps"'
expect_man "$T/fill" steady false
expect_man "$T/fill" converged false
expect_man "$T/fill" tolerance 1.000000e-04
expect_man "$T/fill" filling true
check "fill: residual recorded" sh -c "grep -Eq '\"residual\":[[:space:]]+[0-9]\\.[0-9]{6}e[-+][0-9]+,' '$T/fill/manifest.json'"
# the water stored grew by ~ the inflow: 4 edges x 256 m x 0.5 m^2/s
rise=$(man stored_change_m3 "$T/fill"); vin=$(man in_m3 "$T/fill")
check "fill: stored change equals the inflow" awk -v a="$rise" -v b="$vin" 'BEGIN { exit !(b > 0 && a > 0.99 * b && a < 1.01 * b) }'

# --require-steady: exit 3, the earlier output stays
cp "$T/fill/fill.wtp" "$T/fill.wtp"
run 3 $W "$T/fill.json" -o "$T/fill" --require-steady --quiet
expect_err "wbake: --require-steady: the bake is not steady"
expect_err "wbake: $T/fill keeps its previous contents"
check "require-steady: output kept" cmp -s "$T/fill/fill.wtp" "$T/fill.wtp"
run 1 $W "$T/fill.json" -o "$T/fill" --require-steady --steps 10
expect_err "wbake: --require-steady and --steps exclude each other (a run of fixed length never stops on a steady state)"

# a basin at rest: steady, no warning, --require-steady is happy
cat > "$T/rest.json" <<EOS
{"name": "rest", $terrain, "initial_water": {"level": 1},
 "materials": [{"name": "w", "kind": "lake"}],
 "simulation": {"solver": "lbm", "max_steps": 2000, "window": 100, "viscosity": 1}}
EOS
# (viscosity 1 m^2/s: on 4 m cells a smaller one needs tau below its floor,
# which is a warning of its own)
run 0 $W "$T/rest.json" -o "$T/rest" --require-steady
expect_err_re "lbm: steady after $N steps \\($N s simulated, $N s\\): residual $N \\(tolerance 0.0001\\), volume 65536 m\\^3 \\(in 0, out 0\\), balance error 0, clamped 0 % of cell-steps"
check "steady: no warning" sh -c "! grep -q warning '$T/err'"
# where the wall time went, by stage (--json has them as "timings")
expect_err_re "time: $N s in all: load $N s, first guess and coarse levels $N s, solver $N s \\(its set-up $N s\\), outputs $N s, state file $N s"
expect_man "$T/rest" stop '"steady"'
expect_man "$T/rest" steady true
expect_man "$T/rest" filling false

# the same with an open edge: still rising, but it names the outlet case
cat > "$T/open.json" <<EOS
{"name": "open", $terrain, "initial_water": {"level": 0.5},
 "boundaries": {"west": {"type": "inflow", "velocity": 3, "depth": 0.5}, "east": "open"},
 "materials": [{"name": "w", "kind": "river"}], "simulation": {"solver": "swe", "initial": "scene"}}
EOS
run 0 $W "$T/open.json" -o "$T/open" --steps 200
expect_err_re "$T/open.json: note: the water is still rising: $N m\\^3 came in, $N m\\^3 left, and the water stored rose by $N m\\^3 \\($N m over the whole map\\); it has not reached an outlet yet: run longer, or check that the open edges, level edges or sinks can drain it"

# residual: "-" and null until measured, on both solvers
for solver in lbm swe; do
	run 0 $W samples/lake/scene.json -o "$T/l$solver" --solver $solver --steps 30 --json
	expect_err_re "$solver: stopped \\(--steps\\) after 30 steps \\($N s simulated, $N s\\): residual - \\(tolerance 0.0001\\), volume $N m\\^3 \\(in 0, out 0\\), balance error $N, clamped 0 % of cell-steps"
	expect_out_has '"residual": null'
	expect_out_has '"stop": "steps"'
	expect_man "$T/l$solver" residual null
	expect_man "$T/l$solver" stop '"steps"'
done
# the same on OpenCL (PoCL in make test), where the summary said 0
CLW=${CL_BIN:-bin-cl}/wbake
if [ -x "$CLW" ]; then
	for solver in lbm swe; do
		run 0 $CLW samples/lake/scene.json -o "$T/c$solver" --solver $solver --steps 30 --json --device opencl
		expect_err_re "$solver: stopped \\(--steps\\) after 30 steps \\($N s simulated, $N s\\): residual - \\(tolerance 0.0001\\), volume $N m\\^3 \\(in 0, out 0\\), balance error $N, clamped 0 % of cell-steps"
		expect_out_has '"residual": null'
		expect_man "$T/c$solver" residual null
	done
fi
# an SWE run of fixed length measures its residual at each window
run 0 $W "$T/fill.json" -o "$T/fill2" --steps 200 --quiet --json
check "swe --steps 200, window 100: residual measured" sh -c "grep -Eq '\"residual\": [0-9]' '$T/out'"

# clamped cell-steps as a share of all cell-steps
run 0 $W samples/river/scene.json -o "$T/river" --steps 300 --json
clamped=$(sed -n 's/.*"clamped": \([0-9]*\),.*/\1/p' "$T/out")
check "river: some cell-steps clamped" test "${clamped:-0}" -gt 0
share=$(awk -v c="$clamped" 'BEGIN { printf "%.3g", 100 * c / (256 * 256 * 300) }')
# ... where it acted during the run (blocks of 32 x 32 cells) and where it
# holds the flow at the end: boxes inside the map
expect_err_re "samples/river/scene.json: (warning|note): the stability limiter clamped $clamped cell-steps, $share % of all cell-steps \\(256 x 256 cells x 300 steps\\) in [1-9][0-9]* blocks of 32 x 32 cells within x $N\\.\\.$N m, y $N\\.\\.$N m, the most \\([1-9][0-9]*\\) in x $N\\.\\.$N m, y $N\\.\\.$N m; (at the end it holds [1-9][0-9]* cells at Froude 1, within x $N\\.\\.$N m, y $N\\.\\.$N m \\(the fastest at x $N m, y $N m\\): supercritical flow there is not resolved; the SWE solver \\(--solver swe\\) resolves it|at the end no cell flows at its limit \\(Froude 1\\): the clamps were transient)"
blk=$(man clamped_blocks "$T/river")
check "river: manifest clamped_blocks counts blocks of the map" test "${blk:-0}" -ge 1 -a "${blk:-0}" -le 64
check "river: manifest has where the limiter acted" grep -q '"clamped_box_m"' "$T/river/manifest.json"
lim=$(man limited_cells "$T/river")
check "river: manifest limited_cells is a count" test "${lim:-x}" -ge 0
[ "${lim:-0}" -gt 0 ] && check "river: manifest has the box" grep -q '"limited_box_m"' "$T/river/manifest.json"
expect_err_re "lbm: stopped \\(--steps\\) after 300 steps .*, clamped $share % of cell-steps"

# bad output directories are refused before the solve (a bake of 10^8
# steps would run for hours): usage 1 or I/O 4, at once
run 1 $W "$T/rest.json" -o ''
expect_err "wbake: -o needs a directory name, found ''"
: > "$T/file"
run 4 timeout 60 $W "$T/rest.json" -o "$T/file" --steps 100000000
expect_err "$T/file: error: cannot create directory: '$T/file' is a regular file, not a directory"
check "refused before the solve" sh -c "! grep -q baking '$T/err'"
run 4 timeout 60 $W "$T/rest.json" -o "$T/file/sub/out" --steps 100000000
expect_err "$T/file/sub: error: cannot create directory: '$T/file' is a regular file, not a directory"
check "refused before the solve (parent)" sh -c "! grep -q baking '$T/err'"
if [ "$(id -u)" -ne 0 ]; then  # root writes anywhere
	mkdir -p "$T/ro" && chmod 555 "$T/ro"
	run 4 timeout 60 $W "$T/rest.json" -o "$T/ro/out" --steps 100000000
	expect_err_has "Permission denied"
	chmod 755 "$T/ro"
fi
finish
