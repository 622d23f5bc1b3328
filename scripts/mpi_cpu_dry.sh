#!/bin/bash
# scripts/mpi_cpu_dry.sh BUNDLE SIZE STEPS "RANKS..." [OTHER]: CPU ranks on
# the world of SIZE^2 (bin/mkterrain world SIZE) started from dry land as
# the pure LBM ("initial": "scene", window 500), STEPS steps, one thread
# per rank, for each rank count: BUNDLE/bin/wbake and, when named, the
# program BUNDLE/bin/OTHER (an earlier build, for a same-run comparison).
# Prints the mpi: lines (ms per step, cell-steps by rank, the cuts) and
# compares every output with the one rank's. BUNDLE: scripts/mpi_bundle.sh
# DIR bin-mpi/wbake [OLD] bin/mkterrain (docs/mpi.md "The bands follow the
# water").
set -u
B=$(cd "$1" && pwd); S=$2; N=$3; R=$4; OTHER=${5:-}
. "$B/env.sh"
export OMPI_MCA_rmaps_base_oversubscribe=1
W=${TMPDIR:-/tmp}/wb-cpu-dry; rm -rf "$W"; mkdir -p "$W"; cd "$W" || exit 1
"$B/bin/mkterrain" world "$S" w >/dev/null 2>&1 || { echo "mkterrain failed"; exit 1; }
sed 's/"solver": "swe",/"solver": "lbm", "lbm_hybrid": false, "initial": "scene",/; s/"window": 2000/"window": 500/' \
	w/scene.json >w/dry.json
ROOT=""; [ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
for n in $R; do
	for b in $OTHER wbake; do
		mpirun $ROOT -np "$n" "$B/bin/$b" w/dry.json -o "o-$b-$n" --steps "$N" --threads 1 >log 2>&1
		grep "^mpi: [0-9]* ranks*: steps\|stepped by rank\|cut again\|rows by\|error:" log | sed "s/^/$b, $n: /"
	done
done
for f in o-*; do
	cmp -s "$f/world.wtp" o-wbake-1/world.wtp && cmp -s "$f/manifest.json" o-wbake-1/manifest.json &&
		cmp -s "$f/state.wbs" o-wbake-1/state.wbs && echo "$f: the one rank's bytes" || echo "$f: DIFFERS"
done
