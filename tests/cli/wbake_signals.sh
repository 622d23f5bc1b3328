# SIGINT and SIGTERM stop a bake cleanly: the solver stops within a few
# steps, wbake says so, exits 128 + the signal (130, 143), and OUTDIR keeps
# its previous output with nothing left beside it.
. tests/cli/lib.inc
W=$BIN/wbake
S=samples/lake/scene.json

wait_staging() {
	i=0
	while [ $i -lt 600 ]; do
		for f in "$T"/.o.wbake-tmp.*; do [ -d "$f" ] && return 0; done
		sleep 0.1; i=$((i + 1))
	done
	return 1
}
leftovers() { ls -A "$T" | grep -c '^\.o\.wbake-' ; }

run 0 $W $S -o "$T/o" --steps 20 --quiet
cp "$T/o/lake.wtp" "$T/old.wtp"
cp "$T/o/manifest.json" "$T/old.json"

# bake SIG: start a bake that would run for hours, send SIG once it solves.
# A background job of a script ignores SIGINT (POSIX); env gives it back
# its default, as an interactive shell would.
bake_and_send() {
	env --default-signal=INT $W $S -o "$T/o" --steps 100000000 >"$T/out" 2>"$T/err" &
	pid=$!
	check "$1: the bake started" wait_staging
	if [ -n "${2:-}" ]; then   # wait (at most 60 s) for stderr to match $2
		i=0
		while [ $i -lt 600 ] && ! grep -Eq "$2" "$T/err"; do
			sleep 0.1; i=$((i + 1))
		done
	fi
	sleep 0.3
	kill -$1 $pid
	wait $pid
	rc=$?
}

# (a build log gets a progress line every 5 s; an LBM run of fixed length
# measures no residual, so it reads "-")
progress='^lbm: step [0-9]+/100000000, residual -, [0-9]+s$'
bake_and_send TERM "$progress"
check "SIGTERM: exit 143" test "$rc" -eq 143
check "progress shows the residual as '-' until measured" grep -Eq "$progress" "$T/err"
expect_err "wbake: stopped by SIGTERM; $T/o keeps its previous contents"
check "SIGTERM: the solver said where it stopped" grep -q '^error: lbm: interrupted at step [0-9][0-9]*$' "$T/err"
check "SIGTERM: pack intact" cmp -s "$T/o/lake.wtp" "$T/old.wtp"
check "SIGTERM: manifest intact" cmp -s "$T/o/manifest.json" "$T/old.json"
check "SIGTERM: no staging directory or lock left" test "$(leftovers)" -eq 0

bake_and_send INT
check "SIGINT: exit 130" test "$rc" -eq 130
expect_err "wbake: stopped by SIGINT; $T/o keeps its previous contents"
check "SIGINT: pack intact" cmp -s "$T/o/lake.wtp" "$T/old.wtp"
check "SIGINT: manifest intact" cmp -s "$T/o/manifest.json" "$T/old.json"
check "SIGINT: no staging directory or lock left" test "$(leftovers)" -eq 0

# the SWE solver stops too
$W $S -o "$T/o" --solver swe --steps 100000000 >"$T/out" 2>"$T/err" &
pid=$!
check "swe: the bake started" wait_staging
sleep 0.3
kill -TERM $pid; wait $pid; rc=$?
check "swe SIGTERM: exit 143" test "$rc" -eq 143
check "swe: the solver said where it stopped" grep -q '^error: swe: interrupted at step [0-9][0-9]*$' "$T/err"
check "swe SIGTERM: pack intact" cmp -s "$T/o/lake.wtp" "$T/old.wtp"
check "swe SIGTERM: no leftovers" test "$(leftovers)" -eq 0

# --json still prints a summary with the status
$W $S -o "$T/o" --steps 100000000 --quiet --json >"$T/out" 2>"$T/err" &
pid=$!
check "json: the bake started" wait_staging
kill -TERM $pid; wait $pid; rc=$?
check "json SIGTERM: exit 143" test "$rc" -eq 143
expect_out_has '"status": 143'
check "json SIGTERM: pack intact" cmp -s "$T/o/lake.wtp" "$T/old.wtp"
finish
