#!/bin/sh
# bin-mpi/wbake (make MPI=1, docs/mpi.md): one bake over 1, 2 and 3 MPI
# ranks gives the same bytes - pack, manifest, state file - as one process
# of bin/wbake, for both solvers: the LBM and the SWE with waterfall
# particles (river sample, unfused step), the SWE's fused step and both
# solvers' steady-state windows (a flat basin, no waterfalls, run to
# convergence), the LBM/FV hybrid (volcano sample); ranks with other
# thread counts, several threads in a band.
# Ranks that run another scene or another binary, or more ranks than the
# rows allow, are refused at start (exit 2, rank and host named); a rank
# stopped during the bake ends all of them (its exit status, rank and host
# named) and OUTDIR keeps its previous output.
# Oversubscribed (3 ranks on 2 cores), shared memory only, no network.
. tests/cli/lib.inc
MB=${MPI_BIN:-bin-mpi}/wbake
if [ ! -x "$MB" ] || ! command -v mpirun >/dev/null 2>&1; then
	echo "FAIL: $MB or mpirun missing (make MPI=1; scripts/deps.sh mpi)"
	exit 1
fi
# Open MPI on one host: shared memory between the ranks, the runtime on
# the loopback interface, no probing of the network or of ssh
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
	OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm_rsh_agent=false \
	OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none \
	OMPI_MCA_mpi_yield_when_idle=1
# (make SAN=1 test: Open MPI keeps its start-up allocations to the end)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
ROOT=""
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
mpi() { # mpi NP ARGS...: NP ranks of bin-mpi/wbake
	n=$1; shift
	timeout 300 mpirun $ROOT --oversubscribe -np "$n" "$MB" "$@"
}
same() { # same DESCRIPTION DIR1 DIR2: equal file sets, equal bytes
	if ! diff -r "$2" "$3" >"$T/diff" 2>&1; then
		echo "FAIL: $1: $3 differs from $2"
		head -5 "$T/diff"
		fails=$((fails + 1))
	fi
}

# These scenes pin the pure LBM (its own halo exchange); the LBM/FV
# hybrid, the LBM's default, is checked across ranks with the volcano
# sample below (2b).
# 1. the river: LBM and SWE (waterfall particles), fixed steps
R=samples/river/.mpi-pure.json
sed 's|"simulation": {|"simulation": { "lbm_hybrid": false,|' samples/river/scene.json >"$R"
trap 'rm -rf "$T" "$R"' EXIT
for s in lbm swe; do
	run 0 "$BIN/wbake" $R -o "$T/$s-1" --solver $s --steps 40 --threads 1 --quiet
	for n in 1 2 3; do
		[ $s = swe ] && [ $n = 1 ] && continue
		run 0 mpi $n $R -o "$T/$s-m$n" --solver $s --steps 40 --threads 1 --quiet
		same "river $s, $n ranks" "$T/$s-1" "$T/$s-m$n"
	done
done
# other thread counts per rank (--threads may differ between ranks)
run 0 timeout 300 mpirun $ROOT --oversubscribe \
	-np 1 "$MB" $R -o "$T/swe-t2" --solver swe --steps 40 --threads 2 --quiet : \
	-np 1 "$MB" $R -o "$T/swe-t2" --solver swe --steps 40 --threads 1 --quiet
same "river swe, 2 ranks of 2 and 1 threads" "$T/swe-1" "$T/swe-t2"
check "the river's pack holds water" test -s "$T/lbm-m3/river.wtp"

# 2. a flat basin (no waterfalls: the SWE's fused step) with a spring and
#    a river, run to a steady state in windows of 50 steps
mkdir -p "$T/flat"
head -c $((72 * 60 * 2)) /dev/zero >"$T/flat/terrain.r16"
cat >"$T/flat/scene.json" <<'EOF'
{ "name": "flat", "version": 1,
  "terrain": { "heightmap": "terrain.r16", "format": "r16", "size": [72, 60],
               "metres_per_pixel": 1, "height_scale": 10 },
  "boundaries": { "west": "wall", "east": "wall", "north": "wall", "south": "open" },
  "initial_water": "dry",
  "materials": [ { "id": 1, "name": "w", "kind": "river" } ],
  "sources": [
    { "type": "spring", "name": "s", "point": [20, 10], "radius": 3, "discharge": 0.4, "material": "w" },
    { "type": "river", "name": "r", "width": 6, "discharge": 0.8, "material": "w",
      "path": [[50, 2], [45, 30], [50, 59]] } ],
  "simulation": { "solver": "swe", "lbm_hybrid": false, "manning": 0.03, "max_steps": 300, "window": 50 } }
EOF
F=$T/flat/scene.json
for s in swe lbm; do
	run 0 "$BIN/wbake" $F -o "$T/f$s-1" --solver $s --threads 1 --quiet
	for n in 2 3; do
		run 0 mpi $n $F -o "$T/f$s-m$n" --solver $s --threads 1 --quiet
		same "flat $s to steady, $n ranks" "$T/f$s-1" "$T/f$s-m$n"
	done
done
check "the flat bake kept its window residuals" grep -q '"residual"' "$T/fswe-1/manifest.json"
# a basin large enough for two SWE threads per band (one per 128 Ki
# cells): the fused step's thread blocks inside the bands
head -c $((640 * 440 * 2)) /dev/zero >"$T/flat/big.r16"
sed 's/terrain.r16/big.r16/; s/\[72, 60\]/[640, 440]/; s/"point": \[20, 10\]/"point": [200, 100]/; s/\[\[50, 2\], \[45, 30\], \[50, 59\]\]/[[500, 2], [450, 200], [500, 439]]/' \
	"$F" >"$T/flat/big.json"
run 0 "$BIN/wbake" "$T/flat/big.json" -o "$T/big-1" --steps 20 --threads 2 --quiet
run 0 mpi 3 "$T/flat/big.json" -o "$T/big-m3" --steps 20 --threads 2 --quiet
same "large basin swe, 3 ranks of 2 threads" "$T/big-1" "$T/big-m3"

# 2b. the LBM/FV hybrid (the volcano sample turns it on; 14 % of the
#     cell-steps of these 200 take the FV update): 1, 2 and 3 ranks
V=samples/volcano/scene.json
run 0 "$BIN/wbake" $V -o "$T/hy-1" --steps 200 --threads 1
expect_err_has "were advanced by the finite-volume update of the hybrid"
for n in 1 2 3; do
	run 0 mpi $n $V -o "$T/hy-m$n" --steps 200 --threads 1 --quiet
	same "volcano lbm with the hybrid, $n ranks" "$T/hy-1" "$T/hy-m$n"
done

# 2c. rows to ranks by the water (docs/mpi.md "How the work is split"):
#     a lake in the 30 north rows of a 72 x 120 grid, walled in by land
#     10 m higher, LBM: rank 0 holds the lake's rows in a short band, the
#     last rank the dry rest; the same bytes as one process whatever the
#     bands
{ head -c $((72 * 30 * 2)) /dev/zero
  head -c $((72 * 90 * 2)) /dev/zero | tr '\0' '\377'; } >"$T/flat/top.r16"
cat >"$T/flat/top.json" <<'EOF'
{ "name": "top", "version": 1,
  "terrain": { "heightmap": "top.r16", "format": "r16", "size": [72, 120],
               "metres_per_pixel": 1, "height_scale": 10 },
  "initial_water": "dry",
  "materials": [ { "id": 1, "name": "w", "kind": "lake" } ],
  "sources": [ { "type": "lake", "name": "l", "seed": [30, 12], "level": 1, "material": "w" } ],
  "simulation": { "solver": "lbm", "lbm_hybrid": false, "max_steps": 300, "window": 50 } }
EOF
run 0 "$BIN/wbake" "$T/flat/top.json" -o "$T/top-1" --solver lbm --steps 60 --threads 1 --quiet
run 0 mpi 3 "$T/flat/top.json" -o "$T/top-m3" --solver lbm --steps 60 --threads 1
same "rows by the water, lbm, 3 ranks" "$T/top-1" "$T/top-m3"
rows=$(sed -n 's|^mpi: rows by rank / their % of the expected work: ||p' "$T/err")
set -- $(echo "$rows" | tr '/ ' '  ')
check "rows by the water: $rows (a short first band, the dry rest last)" \
	test "${1:-0}" -lt 30 -a "${5:-0}" -gt 60 -a $(( ${1:-0} + ${3:-0} + ${5:-0} )) -eq 120
expect_err_has "mpi: million cell-steps stepped by rank: "
# the halo rows' share of what each rank received, apart: a part of it
tot=$(sed -n 's|^mpi: per step, by rank: MB received: ||p' "$T/err")
hal=$(sed -n 's|^mpi: per step, by rank: MB of halo rows received: ||p' "$T/err")
check "halo MB by rank ($hal) within the MB received ($tot), nonzero" \
	awk -v t="$tot" -v h="$hal" 'BEGIN { nt = split(t, a, " "); nh = split(h, b, " ");
		ok = nt == 3 && nh == 3; for (i = 1; i <= 3 && ok; i++) ok = b[i] > 0 && b[i] <= a[i];
		exit !ok }'

# 2d. the bands follow the water (lbm_par_rebalance): a spring in the
#     north of a 72 x 192 staircase (0.78 m down every 16 rows), from
#     dry land ("initial": "scene"), in windows of 300 steps (the bands
#     are cut again every 250 steps: inside a window, with its sums); the
#     water runs south through the bands, which are cut again as it
#     does. Pure LBM and the hybrid, 2 and 3 ranks: the same bytes as one
#     process, and the bands moved
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
	head -c $((72 * 16 * 2)) /dev/zero | tr '\0' "$(printf '\\%03o' $((250 - 20 * k)))"
done >"$T/flat/long.r16"
cat >"$T/flat/long.json" <<'EOF'
{ "name": "long", "version": 1,
  "terrain": { "heightmap": "long.r16", "format": "r16", "size": [72, 192],
               "metres_per_pixel": 1, "height_scale": 10 },
  "boundaries": { "west": "wall", "east": "wall", "north": "wall", "south": "open" },
  "initial_water": "dry",
  "materials": [ { "id": 1, "name": "w", "kind": "river" } ],
  "sources": [ { "type": "spring", "name": "s", "point": [36, 6], "radius": 3, "discharge": 20, "material": "w" } ],
  "simulation": { "solver": "lbm", "lbm_hybrid": false, "initial": "scene", "max_steps": 1000, "window": 300 } }
EOF
sed 's/"lbm_hybrid": false/"lbm_hybrid": true/' "$T/flat/long.json" >"$T/flat/longh.json"
for v in long longh; do
	run 0 "$BIN/wbake" "$T/flat/$v.json" -o "$T/$v-1" --threads 1 --quiet
	for n in 2 3; do
		run 0 mpi $n "$T/flat/$v.json" -o "$T/$v-m$n" --threads 1
		same "bands that follow the water ($v), $n ranks" "$T/$v-1" "$T/$v-m$n"
		moved=$(sed -n 's|^mpi: the bands were cut again \([0-9]*\) times.*|\1|p' "$T/err")
		check "the bands moved as the water spread ($v, $n ranks: ${moved:-no line})" \
			test "${moved:-0}" -gt 0
	done
done

# 2e. coarse levels (simulation.coarse_levels) over several ranks: every
#     rank solves the small coarse grids alone, then the bands step the
#     full grid; the same bytes as one process, both solvers (the bands
#     of the full grid were applied to the coarse ones before: a crash)
sed 's/"initial": "scene", "max_steps": 1000/"coarse_levels": 2, "max_steps": 400/' \
	"$T/flat/long.json" >"$T/flat/coarse.json"
for s in lbm swe; do
	run 0 "$BIN/wbake" "$T/flat/coarse.json" -o "$T/co$s-1" --solver $s --threads 1
	expect_err_has "coarse level 2x"
	run 0 mpi 2 "$T/flat/coarse.json" -o "$T/co$s-m2" --solver $s --threads 1 --quiet
	same "coarse levels ($s), 2 ranks" "$T/co$s-1" "$T/co$s-m2"
done

# 2f. water that outgrows its lattice speed during the run (re-chosen at
#     step 4), and water that then leaves the fixed-point range (a
#     divergence, exit 3): the rows flagged out of range travel between
#     ranks only then; 2 and 3 ranks give the one process's bytes, and
#     the same error naming the same cell and step
head -c $((48 * 48 * 2)) /dev/zero >"$T/flat/rc.r16"
cat >"$T/flat/rc.json" <<'EOF'
{ "name": "rc", "version": 1,
  "terrain": { "heightmap": "rc.r16", "format": "r16", "size": [48, 48],
               "metres_per_pixel": 1, "height_scale": 10 },
  "boundaries": { "west": "wall", "east": "wall", "north": "wall", "south": "wall" },
  "initial_water": { "level": 0.1 },
  "materials": [ { "id": 1, "name": "w", "kind": "lake" } ],
  "sources": [ { "type": "spring", "name": "s", "point": [24, 10], "radius": 3, "discharge": 12, "material": "w" } ],
  "simulation": { "solver": "lbm", "lbm_hybrid": false, "lattice_speed": 3, "viscosity": 0.5 } }
EOF
sed 's/"discharge": 12,/"discharge": 40,/' "$T/flat/rc.json" >"$T/flat/rcx.json"
run 0 "$BIN/wbake" "$T/flat/rc.json" -o "$T/rc-1" --steps 300 --threads 1
expect_err_has "outgrew the lattice speed 3 m/s"
run 3 "$BIN/wbake" "$T/flat/rcx.json" -o "$T/rcx-1" --steps 300 --threads 1
grep "error: lbm: diverged" "$T/err" >"$T/rcx-err1"
for n in 2 3; do
	run 0 mpi $n "$T/flat/rc.json" -o "$T/rc-m$n" --steps 300 --threads 1 --quiet
	same "lattice speed re-chosen during the run, $n ranks" "$T/rc-1" "$T/rc-m$n"
	run 3 mpi $n "$T/flat/rcx.json" -o "$T/rcx-m$n" --steps 300 --threads 1
	check "a divergence over $n ranks names the one process's cell and step" \
		sh -c "grep 'error: lbm: diverged' '$T/err' | sort -u | cmp -s - '$T/rcx-err1'"
done

# 3. ranks that differ are refused at start, every rank with exit 2
sed 's/"discharge": 0.4/"discharge": 0.5/' "$F" >"$T/flat/other.json"
run 2 timeout 120 mpirun $ROOT --oversubscribe -np 1 "$MB" $F -o "$T/x" --quiet : \
	-np 1 "$MB" "$T/flat/other.json" -o "$T/x" --quiet
expect_err_has "rank 1 of 2 (host $(hostname)): its scene file differs from rank 0's"
check "a refused bake writes nothing" test ! -e "$T/x"
cp "$MB" "$T/wbake-other" && printf 'x' >>"$T/wbake-other"
run 2 timeout 120 mpirun $ROOT --oversubscribe -np 2 "$MB" $F -o "$T/x" --quiet : \
	-np 1 "$T/wbake-other" $F -o "$T/x" --quiet
expect_err_has "rank 2 of 3 (host $(hostname)): its wbake binary differs from rank 0's"

# more ranks than the rows allow (two rows each): refused at start
head -c $((8 * 5 * 2)) /dev/zero >"$T/flat/small.r16"
sed 's/terrain.r16/small.r16/; s/\[72, 60\]/[8, 5]/; s/"point": \[20, 10\]/"point": [4, 2]/; s/\[\[50, 2\], \[45, 30\], \[50, 59\]\]/[[2, 0], [2, 4]]/' \
	"$F" >"$T/flat/small.json"
run 2 mpi 3 "$T/flat/small.json" -o "$T/x" --quiet
expect_err_has "error: 3 MPI ranks for a grid of 5 rows: each rank needs two rows at least"
check "a refused bake writes nothing" test ! -e "$T/x"

# 4. a rank stopped in the middle of the bake (SIGTERM to rank 1 only)
#    ends every rank with its status; the previous output stays
cp -r "$T/lbm-1" "$T/prev"
A="$R -o $T/lbm-1 --steps 1000000 --threads 1 --quiet"
run 143 timeout 120 mpirun $ROOT --oversubscribe -np 1 "$MB" $A : \
	-np 1 sh -c "$MB $A & p=\$!; sleep 2; kill -TERM \$p; wait \$p"
expect_err_has "wbake: rank 1 of 2 (host $(hostname)) failed (exit 143); ending the bake on every rank"
same "the previous output after a failed rank" "$T/prev" "$T/lbm-1"
finish
