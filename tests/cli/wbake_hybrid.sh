# simulation.lbm_hybrid (docs/lbm.md "Supercritical flow"): the LBM/FV
# hybrid is the default (a scene that does not say runs it). A bad value
# is exit 2 with its JSON path; it changes the bake (its FV cell-steps are
# named in the log); on OpenCL it bakes the CPU's bytes (docs/opencl.md);
# under MPI one process's bytes (tests/cli/wbake_mpi.sh).
. tests/cli/lib.inc
W=$BIN/wbake
# the lake sample with the hybrid asked for (or a bad value)
mk() { # mk NAME VALUE
	sed "s|\"simulation\": {|\"simulation\": { \"lbm_hybrid\": $2,|" \
		samples/lake/scene.json > "samples/lake/.$1.json"
}
trap 'rm -rf "$T" samples/lake/.hy*.json samples/volcano/.hyoff.json samples/volcano/.hydef.json' EXIT
mk hyon true
mk hyoff false
mk hybad '"yes"'
run 2 $W samples/lake/.hybad.json --check
expect_err_has "simulation.lbm_hybrid: expected true or false, found"
run 0 $W samples/lake/.hyon.json --check
# on the CPU it acts where the lattice cannot hold the flow: the
# volcano's flanks (its scene sets lbm_hybrid: true); a copy set to false
# bakes the pure LBM, whose Froude limiter holds those cells instead
sed 's|"lbm_hybrid": true|"lbm_hybrid": false|' samples/volcano/scene.json \
	> samples/volcano/.hyoff.json
run 0 $W samples/volcano/scene.json -o "$T/on" --steps 200
expect_err_has "were advanced by the finite-volume update of the hybrid"
on_cl=$(sed -n 's/.*clamped \([0-9]*\) cell-steps.*/\1/p' "$T/err")
on_fv=$(sed -n 's/^note: lbm: \([0-9]*\) cell-steps .*finite-volume.*/\1/p' "$T/err")
run 0 $W samples/volcano/.hyoff.json -o "$T/off" --steps 200
check "pure LBM: no FV update" sh -c "! grep -q 'finite-volume update' '$T/err'"
off_cl=$(sed -n 's/.*clamped \([0-9]*\) cell-steps.*/\1/p' "$T/err")
check "the hybrid clamps fewer cell-steps (${on_cl:-?} vs ${off_cl:-?})" \
	test "${on_cl:-0}" -lt "${off_cl:-0}"
# the default: a copy that does not say bakes the hybrid's bytes
sed 's|"lbm_hybrid": true, ||' samples/volcano/scene.json >samples/volcano/.hydef.json
check "the copy does not say" sh -c "! grep -q lbm_hybrid samples/volcano/.hydef.json"
run 0 $W samples/volcano/.hydef.json -o "$T/def" --steps 200
def_fv=$(sed -n 's/^note: lbm: \([0-9]*\) cell-steps .*finite-volume.*/\1/p' "$T/err")
# (the pack's header holds the scene's hash: the FV cell-steps compared)
check "default: the hybrid's FV cell-steps (${def_fv:-?} vs ${on_fv:-?})" \
	test -n "$on_fv" -a "${def_fv:-x}" = "$on_fv"
CLW=${CL_BIN:-bin-cl}/wbake
if [ -x "$CLW" ]; then
	# OpenCL: the FV update runs on the host on rows read back from the
	# device (docs/opencl.md): the CPU bake's bytes, pack, state file and
	# manifest alike
	run 0 $CLW samples/volcano/scene.json -o "$T/cl" --steps 200 --device opencl
	expect_err_has "were advanced by the finite-volume update of the hybrid"
	expect_err_has "the hybrid's FV update and marking ran on the host"
	for f in volcano.wtp state.wbs manifest.json; do
		check "OpenCL hybrid: $f is the CPU's" cmp -s "$T/on/$f" "$T/cl/$f"
	done
fi
# under MPI the hybrid gives one process's bytes: tests/cli/wbake_mpi.sh
finish
