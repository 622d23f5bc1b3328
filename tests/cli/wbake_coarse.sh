# Coarse-to-fine (simulation.coarse_levels, docs/hydrology.md): a bake with
# coarse levels prints one line per level in its log and lists the levels
# in the manifest (solver.levels), the same on OpenCL as on the CPU;
# "auto" uses none; a run
# of a fixed step count uses none; a bad value is an error naming the key
# and its line.
. tests/cli/lib.inc
W=$BIN/wbake
S=samples/lake/scene.json

mk() { # mk NAME SIMULATION-KEYS: the lake sample with extra simulation keys
	sed "s/\"simulation\": {/\"simulation\": {$2/" $S > "$T/$1.json"
	sed -i "s|\"heightmap\": \"|\"heightmap\": \"$(pwd)/samples/lake/|" "$T/$1.json"
}

mk two '"coarse_levels": 2, "window": 100, '
sed -i 's/"max_steps": 4000/"max_steps": 600/' "$T/two.json"
run 0 $W "$T/two.json" -o "$T/a"
expect_err_has "lbm: coarse level 4x ("
expect_err_has "lbm: coarse level 2x ("
# the manifest: factor 4 then 2, each with its steps
check "manifest lists the levels" sh -c "tr -d ' \t\n' < '$T/a/manifest.json' |
	grep -Eq '\"levels\":\[\{\"factor\":4,\"nx\":[0-9]+,\"ny\":[0-9]+,\"dx_m\":[0-9.]+,\"steps\":[1-9][0-9]*,[^]]*\{\"factor\":2,[^]]*\"steps\":[1-9]'"
# the same on OpenCL (PoCL in make test): the LBM's fixed-point
# distributions give the same bytes, coarse levels included
CLW=${CL_BIN:-bin-cl}/wbake
if [ -x "$CLW" ]; then
	run 0 $CLW "$T/two.json" -o "$T/acl" --quiet --device opencl
	check "OpenCL: the same pack as the CPU" cmp -s "$T/a/lake.wtp" "$T/acl/lake.wtp"
	check "OpenCL: the same manifest levels" sh -c "tr -d ' \t\n' < '$T/a/manifest.json' | grep -o '\"levels\":\[[^]]*\]' > '$T/l1' &&
		tr -d ' \t\n' < '$T/acl/manifest.json' | grep -o '\"levels\":\[[^]]*\]' > '$T/l2' && test -s '$T/l1' && cmp -s '$T/l1' '$T/l2'"
fi
# auto: no level
run 0 $W $S -o "$T/b" --steps 50 --quiet
check "no levels by default" sh -c "tr -d ' \t\n' < '$T/b/manifest.json' | grep -q '\"levels\":\[\]'"
# --steps: none either, even when asked
run 0 $W "$T/two.json" -o "$T/c" --steps 50
# (the closing 'time:' line names the stage "first guess and coarse levels"
# in every bake)
check "no coarse level with --steps" sh -c "! grep -v '^time: ' '$T/err' | grep -q 'coarse level'"

mk bad '"coarse_levels": 9, '
run 2 $W "$T/bad.json" --check
expect_err_has "bad.json:14:35: error: simulation.coarse_levels: expected a number of at most 3, found 9"
mk bad2 '"coarse_levels": "fast", '
run 2 $W "$T/bad2.json" --check
expect_err_has 'simulation.coarse_levels: expected "auto" or a whole number in [0, 3], found "fast"'
finish
