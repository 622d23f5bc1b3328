#!/bin/sh
# Runs one libFuzzer target (built by make fuzz) for a bounded time.
# Usage: sh fuzz/run.sh build/fuzz/TARGET [SECONDS]     (default 20 s)
#
# New inputs go to build/fuzz/corpus-new/TARGET (the first corpus dir, the
# only one libFuzzer writes to); the committed fuzz/corpus/TARGET is read
# only. Crashes, leaks, per-input timeouts (10 s) and inputs above the RSS
# limit (2048 MB) are written to build/fuzz/artifacts/TARGET/ and fail the
# run, which names the reproducer file and how to replay it. libFuzzer's
# whole output is in build/fuzz/TARGET.log. More than 2000 new inputs are
# first merged down to those that add coverage.
# Prints one closing line; exit 0 when no input failed.
set -u
bin=$1
secs=${2:-20}
name=$(basename "$bin")
seeds=fuzz/corpus/$name
new=build/fuzz/corpus-new/$name
art=build/fuzz/artifacts/$name
log=build/fuzz/$name.log
if [ ! -x "$bin" ]; then
	echo "fuzz/run.sh: $bin is not built (make fuzz)"
	exit 1
fi
if [ ! -d "$seeds" ]; then
	echo "fuzz/run.sh: no corpus $seeds"
	exit 1
fi
mkdir -p "$new" "$art"
# Nightly runs in one checkout keep adding inputs: past 2000, keep only
# those that add coverage (libFuzzer's merge) so the directory stays small.
if [ "$(ls "$new" | wc -l)" -gt 2000 ]; then
	rm -rf "$new.min" && mkdir -p "$new.min" &&
		"$bin" -merge=1 -rss_limit_mb=2048 "$new.min" "$new" >"$log" 2>&1 &&
		rm -rf "$new" && mv "$new.min" "$new" ||
		echo "fuzz/run.sh: could not minimise $new (see $log); kept as is"
fi
before=$(ls "$new" | wc -l)
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$art/" -print_final_stats=1 "$new" "$seeds" >"$log" 2>&1
rc=$?
seed=$(sed -n 's/^INFO: Seed: \([0-9]*\).*/\1/p' "$log" | head -n 1)
runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
added=$(( $(ls "$new" | wc -l) - before ))
if [ "$rc" -eq 0 ]; then
	echo "$name: ${runs:-?} runs in ${secs}s, $added new inputs in $new (seed ${seed:-?})"
	exit 0
fi
repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
what=$(grep -m 1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer): [a-zA-Z_-]+|runtime error: .*|ALARM: .*|out-of-memory .*' "$log" | head -n 1)
echo "$name: FAILED (exit $rc, seed ${seed:-?}): ${what:-see the log}"
if [ -n "$repro" ]; then
	echo "  reproducer: $repro"
	echo "  replay it:  $bin $repro   (or build/rel/replay/$name $repro)"
fi
echo "  full log: $log; its end:"
tail -n 40 "$log" | sed 's/^/  | /'
exit 1
