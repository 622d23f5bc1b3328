# Samples bake to a steady state (issue 11, item 5): samples/volcano (a real
# elevation model, R's volcano dataset, scripts/volcano.R) with SWE and
# with LBM (with its LBM / finite-volume hybrid, which the volcano scene
# turns on: simulation.lbm_hybrid, docs/lbm.md). The SWE bake must exit 0, report "converged": true in its manifest
# (the run stopped on the steady-state test, not on max_steps), close its
# mass balance and write a pack that verifies. (samples/coast with LBM:
# tests/test_validation.c, test_coast_lbm; its full bake is too long here.)
. tests/cli/lib.inc
W=$BIN/wbake

# steady SAMPLE SOLVER
steady() {
	o=$T/$1-$2
	run 0 $W samples/$1/scene.json -o "$o" --solver "$2" --quiet
	m=$o/manifest.json
	check "$1 with $2: manifest written" test -s "$m"
	[ -s "$m" ] || return
	check "$1 with $2: steady (manifest solver.converged)" \
		grep -q '"converged":[[:space:]]*true' "$m"
	check "$1 with $2: solver named in the manifest" \
		grep -q "\"name\":[[:space:]]*\"$2\"" "$m"
	# relative_error is printed as %e: zero, or below 1e-6
	check "$1 with $2: mass balance closes to 1e-6" \
		grep -Eq '"relative_error":[[:space:]]*(0\.0+e\+00|[0-9]\.[0-9]+e-(0[7-9]|[1-9][0-9]))[,}]?$' "$m"
	run 0 $BIN/wtile verify "$o/$1.wtp"
	grep -E '"(steps|converged|clamped)"' "$m" | tr -d '\t\n' | sed "s/^/$1 $2: /"
	echo
}

# For a sample that is a known gap (issue 11, docs/validation.md: none
# now; the LBM volcano was one until the hybrid), the bake must say so:
# exit 0 without
# --require-steady but a warning naming residual and tolerance, "steady":
# false and "stop": "max_steps" in the manifest (--require-steady turns
# it into exit 3: tests/cli/wbake_messages.sh). The check fails once the LBM bake is steady, so that
# this gap is taken off the list then.
known_gap_not_steady() {
	o=$T/$1-$2
	run 0 $W samples/$1/scene.json -o "$o" --solver "$2" --quiet
	m=$o/manifest.json
	if grep -q '"converged":[[:space:]]*true' "$m" 2>/dev/null; then
		echo "FAIL: known gap closed: $1 with $2 is steady now; use 'steady $1 $2'"
		fails=$((fails + 1))
		return
	fi
	expect_err_has "not steady after"
	check "$1 with $2: manifest says not steady" \
		grep -q '"steady":[[:space:]]*false' "$m"
	check "$1 with $2: manifest says it stopped at max_steps" \
		grep -q '"stop":[[:space:]]*"max_steps"' "$m"
	run 0 $BIN/wtile verify "$o/$1.wtp"
}

# short SAMPLE SOLVER STEPS: under WB_TEST_QUICK (the sanitizer build,
# make SAN=1 test) the LBM volcano's 52,000 steps to steady take longer
# than the whole suite may; a fixed-step bake still runs every stage
# (hybrid, maps, pages, pack) under the sanitizers and must close its
# mass balance and verify. The steady check runs in every normal make test.
short() {
	o=$T/$1-$2
	run 0 $W samples/$1/scene.json -o "$o" --solver "$2" --steps "$3" --quiet
	m=$o/manifest.json
	check "$1 with $2, $3 steps: manifest written" test -s "$m"
	[ -s "$m" ] || return
	check "$1 with $2, $3 steps: step count in the manifest" \
		grep -q "\"steps\":[[:space:]]*$3[,}]\?\$" "$m"
	check "$1 with $2, $3 steps: mass balance closes to 1e-6" \
		grep -Eq '"relative_error":[[:space:]]*(0\.0+e\+00|[0-9]\.[0-9]+e-(0[7-9]|[1-9][0-9]))[,}]?$' "$m"
	run 0 $BIN/wtile verify "$o/$1.wtp"
}

steady volcano swe
if [ "${WB_TEST_QUICK:-0}" = 1 ]; then
	echo "WB_TEST_QUICK=1: the LBM volcano runs 2000 steps, not to steady"
	short volcano lbm 2000
else
	steady volcano lbm
fi
finish
