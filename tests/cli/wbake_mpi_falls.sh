#!/bin/sh
# bin-mpi/wbake (make MPI=1, docs/mpi.md "Waterfall particles"): SWE
# waterfall particles that cross a band boundary keep their mass. A river
# runs south down a valley over three cliffs, at the rows where the bands
# of 2 ranks (row 30) and of 3 ranks (rows 20 and 40) meet: the water that
# goes over a cliff leaves the band above as particles and lands in the
# band below. The pack, manifest and state file must be the bytes of one
# process for 2 and 3 ranks, the falls must be listed, and the books must
# close (wbake fails a bake whose mass balance does not).
# Oversubscribed, shared memory only, no network (as wbake_mpi.sh).
. tests/cli/lib.inc
MB=${MPI_BIN:-bin-mpi}/wbake
if [ ! -x "$MB" ] || ! command -v mpirun >/dev/null 2>&1; then
	echo "FAIL: $MB or mpirun missing (make MPI=1; scripts/deps.sh mpi)"
	exit 1
fi
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
	OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm_rsh_agent=false \
	OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none \
	OMPI_MCA_mpi_yield_when_idle=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
ROOT=""
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
mpi() {
	n=$1; shift
	timeout 300 mpirun $ROOT --oversubscribe -np "$n" "$MB" "$@"
}

# terrain: 48 x 60 cells, 1 m; r16 in millimetres (height_scale 65.535);
# a V valley falling 2 cm a row to the south, with 4 m cliffs between rows
# 19|20, 29|30 and 39|40
NX=48 NY=60
mkdir -p "$T/falls"
j=0
while [ $j -lt $NY ]; do
	drop=0
	[ $j -ge 20 ] && drop=$((drop + 4000))
	[ $j -ge 30 ] && drop=$((drop + 4000))
	[ $j -ge 40 ] && drop=$((drop + 4000))
	i=0
	while [ $i -lt $NX ]; do
		d=$((i - NX / 2)); [ $d -lt 0 ] && d=$((-d))
		v=$((30000 - 20 * j - drop + 100 * d))
		printf "\\$(printf %03o $((v % 256)))\\$(printf %03o $((v / 256)))"
		i=$((i + 1))
	done
	j=$((j + 1))
done >"$T/falls/terrain.r16"
check "the terrain has every cell" test "$(wc -c <"$T/falls/terrain.r16")" -eq $((NX * NY * 2))
cat >"$T/falls/scene.json" <<EOF
{ "name": "falls", "version": 1,
  "terrain": { "heightmap": "terrain.r16", "format": "r16", "size": [$NX, $NY],
               "metres_per_pixel": 1, "height_scale": 65.535 },
  "boundaries": { "west": "wall", "east": "wall", "north": "wall", "south": "open" },
  "initial_water": "dry",
  "materials": [ { "id": 1, "name": "w", "kind": "river" } ],
  "sources": [
    { "type": "river", "name": "r", "width": 6, "discharge": 3, "material": "w",
      "path": [[24, 2], [24, 12]] } ],
  "simulation": { "solver": "swe", "manning": 0.03 } }
EOF
S=$T/falls/scene.json
run 0 "$BIN/wbake" $S -o "$T/one" --steps 150 --threads 1 --quiet
# the three cliffs fall (manifest "waterfalls": one entry per fall)
check "three falls listed" test "$(grep -o '"drop_m"' "$T/one/manifest.json" | wc -l)" -eq 3
for n in 2 3; do
	run 0 mpi $n $S -o "$T/m$n" --steps 150 --threads 1 --quiet
	if ! diff -r "$T/one" "$T/m$n" >"$T/diff" 2>&1; then
		echo "FAIL: falls, $n ranks: $T/m$n differs from one process"
		head -5 "$T/diff"
		fails=$((fails + 1))
	fi
done
finish
