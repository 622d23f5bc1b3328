#!/bin/sh
# Runs every test of make test and prints one closing line:
#   'N passed, N failed'
# Unit and solver tests are cmocka programs ($BUILD/tests/test_*); each cmocka
# test counts once. Each CLI script tests/cli/*.sh counts once (exit 0 = pass).
# Each fuzz target's corpus replay counts once, and so does its timed
# libFuzzer run.
BUILD=${BUILD:-build/rel}
BIN=${BIN:-bin}
export BIN BUILD
pass=0
fail=0
failed=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT

CL_BUILD=${CL_BUILD:-$BUILD-cl}
for t in "$BUILD"/tests/test_* "$CL_BUILD"/tests/test_opencl*; do
	[ -x "$t" ] || continue
	case $t in *.o|*.d) continue ;; esac
	name=$(basename "$t")
	start=$(date +%s)
	CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$log" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	p=${p:-0}; f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	pass=$((pass + p)); fail=$((fail + f))
	k=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	echo "  $name: $p passed, $f failed${k:+, $k skipped} ($(( $(date +%s) - start ))s)"
	grep '^skipped: \|: the residency bound is not checked' "$log" | sort -u | sed 's/^/    | /'
	if [ "$f" -ne 0 ]; then
		failed="$failed $name"
		sed 's/^/    | /' "$log"
	fi
done

for s in tests/cli/*.sh; do
	[ -f "$s" ] || continue
	name=cli/$(basename "$s" .sh)
	if sh "$s" >"$log" 2>&1; then
		pass=$((pass + 1)); echo "  $name: ok"
	else
		fail=$((fail + 1)); failed="$failed $name"
		echo "  $name: FAILED"; sed 's/^/    | /' "$log"
	fi
done

for r in "$BUILD"/replay/fuzz_*; do
	[ -x "$r" ] || continue
	case $r in *.o|*.d) continue ;; esac
	name=$(basename "$r")
	corpus=fuzz/corpus/$name
	if "$r" "$corpus" >"$log" 2>&1; then
		pass=$((pass + 1)); echo "  replay/$name: ok ($(ls "$corpus" | wc -l) inputs)"
	else
		fail=$((fail + 1)); failed="$failed replay/$name"
		echo "  replay/$name: FAILED"; sed 's/^/    | /' "$log"
	fi
done

# Each libFuzzer target (build/fuzz/, built by make test with clang) also
# runs for FUZZ_SECONDS (default 20; 0 skips): new inputs go to
# build/fuzz/corpus-new/, a crash fails and names its reproducer file.
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
if [ "$FUZZ_SECONDS" -gt 0 ]; then
	for src in fuzz/fuzz_*.c; do
		name=fuzz/$(basename "$src" .c)
		if sh fuzz/run.sh "build/$name" "$FUZZ_SECONDS" >"$log" 2>&1; then
			pass=$((pass + 1)); echo "  $name: ok ($(tail -n 1 "$log"))"
		else
			fail=$((fail + 1)); failed="$failed $name"
			echo "  $name: FAILED"; sed 's/^/    | /' "$log"
		fi
	done
fi

[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
