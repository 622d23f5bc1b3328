#!/bin/sh
# bin-cl-mpi/wbake (make OPENCL=1 MPI=1, docs/mpi.md): the LBM on OpenCL
# over 2 and 3 MPI ranks, each rank stepping its band on its device (here
# PoCL on the CPU, two or three processes sharing it), gives the same bytes
# - pack, manifest, state file - as one OpenCL process (bin-cl/wbake) and
# as the CPU: the river and the coast samples for fixed steps (sources,
# open and level edges, clamps), and a flat basin run to a steady state (window means and their
# residual, summed over the bands in row order). The SWE likewise (each
# rank's device steps its band; the rows of each pass are exchanged): the
# river with its waterfall particles, the coast's level edges and the
# flat basin's open edge, to a steady state (window means on the device).
# The LBM's block-sparse step over ranks: a front crossing the bands.
# The LBM/FV hybrid (the LBM's default; its FV update and marking run on
# the host of every rank, on the rows each reads from its own device and
# the rows the others send: docs/mpi.md "The hybrid on OpenCL ranks"):
# the river with its waterfall reach, the coast's level edges, a
# supercritical front down a steep slope whose FV cells cross the bands,
# a basin to a steady state (the FV cells' state in the window means) - on 1, 2 and 3 ranks, the bytes of
# one CPU process (pack, manifest, state file). Sections 1-5 pin the pure
# LBM (their scenes say "lbm_hybrid": false).
. tests/cli/lib.inc
MB=${CL_MPI_BIN:-bin-cl-mpi}/wbake
CLW=${CL_BIN:-bin-cl}/wbake
if [ ! -x "$MB" ] || [ ! -x "$CLW" ] || ! command -v mpirun >/dev/null 2>&1; then
	echo "FAIL: $MB, $CLW or mpirun missing (make OPENCL=1 MPI=1)"
	exit 1
fi
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
	OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm_rsh_agent=false \
	OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none \
	OMPI_MCA_mpi_yield_when_idle=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
ROOT=""
[ "$(id -u)" = 0 ] && ROOT=--allow-run-as-root
mpi() { # mpi NP ARGS...: NP ranks of bin-cl-mpi/wbake on OpenCL
	n=$1; shift
	# each rank its own PoCL kernel cache: ranks that build the same
	# program at once in one cache raced there (clang's rename of PoCL's
	# temporary failed: CL_BUILD_PROGRAM_FAILURE on one rank)
	i=0
	while [ $i -lt "$n" ]; do mkdir -p "$T/pocl.$i"; i=$((i + 1)); done
	timeout 300 mpirun $ROOT --oversubscribe -np "$n" sh -c \
		'POCL_CACHE_DIR="$0/pocl.$OMPI_COMM_WORLD_RANK" exec "$@"' "$T" \
		"$MB" "$@" --device opencl
}
same() { # same DESCRIPTION DIR1 DIR2: equal file sets, equal bytes
	if ! diff -r "$2" "$3" >"$T/diff" 2>&1; then
		echo "FAIL: $1: $3 differs from $2"
		head -5 "$T/diff"
		fails=$((fails + 1))
	fi
}

# 1. the river, LBM, fixed steps: OpenCL 1 process = 2, 3 ranks (and its
#    pack is the CPU's; the manifest says which device)
R=samples/river/.mpi-cl-pure.json
sed 's|"simulation": {|"simulation": { "lbm_hybrid": false,|' samples/river/scene.json >"$R"
C=samples/coast/.mpi-cl-pure.json
sed 's|"simulation": {|"simulation": { "lbm_hybrid": false,|' samples/coast/scene.json >"$C"
trap 'rm -rf "$T" "$R" "$C"' EXIT
run 0 "$CLW" $R -o "$T/c1" --solver lbm --steps 40 --threads 1 --quiet --device opencl
run 0 "$CLW" $R -o "$T/cpu" --solver lbm --steps 40 --threads 1 --quiet --device cpu
check "river lbm: the OpenCL pack is the CPU's" cmp "$T/cpu/river.wtp" "$T/c1/river.wtp"
for n in 2 3; do
	run 0 mpi $n $R -o "$T/m$n" --solver lbm --steps 40 --threads 1 --quiet
	same "river lbm on OpenCL, $n ranks" "$T/c1" "$T/m$n"
done
check "the river's pack holds water" test -s "$T/m3/river.wtp"
# the coast: a level (Zou-He) edge on the west, across the bands' edges
# (the closure reads two rows along the edge: without the ring columns of
# the neighbours' rows the bytes differ); the pure LBM, as the river
run 0 "$CLW" $C -o "$T/co1" --solver lbm --steps 60 --threads 1 --quiet --device opencl
for n in 2 3; do
	run 0 mpi $n $C -o "$T/co$n" --solver lbm --steps 60 --threads 1 --quiet
	same "coast lbm on OpenCL, $n ranks" "$T/co1" "$T/co$n"
done

# 2. a flat basin with a spring and a river to a steady state (windows
#    of 50 steps): the window means and residual over the bands
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
  "simulation": { "solver": "lbm", "lbm_hybrid": false, "manning": 0.03, "max_steps": 300, "window": 50 } }
EOF
F=$T/flat/scene.json
run 0 "$CLW" $F -o "$T/f1" --threads 1 --quiet --device opencl
check "the flat bake kept its window residuals" grep -q '"residual"' "$T/f1/manifest.json"
for n in 2 3; do
	run 0 mpi $n $F -o "$T/fm$n" --threads 1 --quiet
	same "flat lbm to steady on OpenCL, $n ranks" "$T/f1" "$T/fm$n"
done

# 3. the SWE: the river for 200 steps (waterfall particles: created,
#    flying, deposited - the fall's face, between rows 169 and 170, is
#    about where the bands of 3 ranks meet; the source, the tarn, the
#    blocker, the modifier, MacCormack, foam), 1, 2 and 3 ranks (2
#    threads each for 3: any thread count) = one OpenCL process = the CPU
run 0 "$CLW" samples/river/scene.json -o "$T/s1" --solver swe --steps 200 --threads 1 --quiet --device opencl
run 0 "$CLW" samples/river/scene.json -o "$T/scpu" --solver swe --steps 200 --threads 1 --quiet --device cpu
check "river swe: the OpenCL pack is the CPU's" cmp "$T/scpu/river.wtp" "$T/s1/river.wtp"
check "river swe: the falls shed particles" \
	grep -Eq '"particles_m3":[[:space:]]*[1-9]' "$T/s1/manifest.json"
for n in 1 2 3; do
	th=1; [ $n = 3 ] && th=2
	run 0 mpi $n samples/river/scene.json -o "$T/sm$n" --solver swe --steps 200 --threads $th --quiet
	same "river swe on OpenCL, $n ranks" "$T/s1" "$T/sm$n"
	check "river swe, $n ranks: the pack is one process's" cmp "$T/s1/river.wtp" "$T/sm$n/river.wtp"
done
# the coast (level edges west and south, across every band) and the
# flat basin to a steady state (open south edge; window means, residual)
run 0 "$CLW" samples/coast/scene.json -o "$T/sc1" --solver swe --steps 100 --threads 1 --quiet --device opencl
run 0 "$CLW" $F -o "$T/sf1" --solver swe --threads 1 --quiet --device opencl
check "the flat swe bake measured its window residual" \
	grep -Eq '"residual":[[:space:]]*[0-9]' "$T/sf1/manifest.json"
# (one rank count each, to keep the test short: the river has all three)
run 0 mpi 3 samples/coast/scene.json -o "$T/sc3" --solver swe --steps 100 --threads 1 --quiet
same "coast swe on OpenCL, 3 ranks" "$T/sc1" "$T/sc3"
run 0 mpi 2 $F -o "$T/sf2" --solver swe --threads 1 --quiet
same "flat swe to steady on OpenCL, 2 ranks" "$T/sf1" "$T/sf2"
# 5. the LBM's block-sparse step over OpenCL ranks (docs/mpi.md): a
#    front from a spring runs down a 5 % slope from dry land across the
#    bands of 2 and 3 ranks; blocks of a band that only the halo rows make
#    wet must wake (the halo scatter sets their flags: without it the
#    balance fails). The dense step over ranks (WB_LBM_DENSE=1) is the
#    same bytes. The slope is written here: one 16-bit value per row.
mkdir -p "$T/front"
j=0
while [ $j -lt 96 ]; do
	v=$((50000 - j * 328))
	b=$(printf '\\%03o\\%03o' $((v % 256)) $((v / 256)))
	i=0
	while [ $i -lt 96 ]; do printf "$b"; i=$((i + 1)); done
	j=$((j + 1))
done >"$T/front/terrain.r16"
cat >"$T/front/scene.json" <<'EOF2'
{ "name": "front", "version": 1,
  "terrain": { "heightmap": "terrain.r16", "format": "r16", "size": [96, 96],
               "metres_per_pixel": 1, "height_scale": 10 },
  "boundaries": { "west": "wall", "east": "wall", "north": "wall", "south": "open" },
  "initial_water": "dry",
  "materials": [ { "id": 1, "name": "w", "kind": "river" } ],
  "sources": [
    { "type": "spring", "name": "s", "point": [48, 6], "radius": 3, "discharge": 1.5, "material": "w" } ],
  "simulation": { "solver": "lbm", "lbm_hybrid": false, "initial": "scene", "manning": 0.03, "max_steps": 2000, "window": 100 } }
EOF2
run 0 "$BIN/wbake" "$T/front/scene.json" -o "$T/fr1" --steps 500 --threads 1 --quiet
for n in 2 3; do
	run 0 mpi $n "$T/front/scene.json" -o "$T/frm$n" --steps 500 --threads 1 --quiet
	same "a front across the bands, sparse LBM on OpenCL, $n ranks" "$T/fr1" "$T/frm$n"
done
export WB_LBM_DENSE=1
run 0 mpi 2 "$T/front/scene.json" -o "$T/frd2" --steps 500 --threads 1 --quiet
unset WB_LBM_DENSE
same "a front across the bands, dense LBM on OpenCL, 2 ranks" "$T/fr1" "$T/frd2"
# 5b. the halo travels as its nonzero chunks (src/par.h WB_PAR_CHUNK): a
#    chunk that was wet and is now zero is not sent, and the receiver must
#    zero its copy. Water over the band edges of 2 and 3 ranks (rows 48;
#    32, 64) runs into sinks that empty every cell there (drain_all): the
#    edge rows go from wet to zero after the first step (a scatter that
#    leaves chunks not sent alone fails the mass balance here).
cat >"$T/front/drain.json" <<'EOF2'
{ "name": "drain", "version": 1,
  "terrain": { "heightmap": "terrain.r16", "format": "r16", "size": [96, 96],
               "metres_per_pixel": 1, "height_scale": 10 },
  "boundaries": { "west": "wall", "east": "wall", "north": "wall", "south": "open" },
  "initial_water": { "areas": [ { "polygon": [[10, 28], [86, 28], [86, 70], [10, 70]], "level": 7.5 } ] },
  "materials": [ { "id": 1, "name": "w", "kind": "river" } ],
  "sources": [
    { "type": "sink", "drain_all": true, "region": [[10, 45], [86, 45], [86, 51], [10, 51]] },
    { "type": "sink", "drain_all": true, "region": [[10, 29], [86, 29], [86, 35], [10, 35]] },
    { "type": "sink", "drain_all": true, "region": [[10, 61], [86, 61], [86, 67], [10, 67]] } ],
  "simulation": { "solver": "lbm", "lbm_hybrid": false, "initial": "scene", "manning": 0.03, "max_steps": 2000, "window": 100 } }
EOF2
run 0 "$BIN/wbake" "$T/front/drain.json" -o "$T/dr1" --steps 300 --threads 1 --quiet
for n in 2 3; do
	run 0 mpi $n "$T/front/drain.json" -o "$T/drm$n" --steps 300 --threads 1 --quiet
	same "wet band edges drained to zero, sparse LBM on OpenCL, $n ranks" "$T/dr1" "$T/drm$n"
done
# every rank's wait for its device and, profiled, its kernels' time per
# step (docs/mpi.md): one pair per rank, the kernels' time measured
export WB_CL_PROFILE=1
run 0 mpi 2 "$T/front/drain.json" -o "$T/drp" --steps 300 --threads 1
unset WB_CL_PROFILE
pw=$(sed -n 's|^mpi: per step, by rank: ms the host waited for its device / ms of kernels (WB_CL_PROFILE=1): \(.*\)$|\1|p' "$T/err")
check "each rank's device wait and kernel time per step ($pw)" \
	awk -v l="$pw" 'BEGIN { n = split(l, a, " "); if (n != 2) exit 1
		for (i = 1; i <= n; i++) { if (split(a[i], b, "/") != 2 || !(b[1] >= 0) || !(b[2] > 0)) exit 1 }
		exit 0 }'
same "profiled, the same bytes" "$T/dr1" "$T/drp"
# the host's time in a device solve, enqueueing and waiting: both
# measured, together within the solve's seconds
run 0 "$CLW" "$T/front/drain.json" -o "$T/drc" --steps 100 --threads 1 --device opencl
ocl=$(sed -n 's|^opencl: of the solve.s \([0-9.e+-]*\) s the host spent \([0-9.e+-]*\) s enqueueing the steps and \([0-9.e+-]*\) s waiting for the device$|\1 \2 \3|p' "$T/err")
check "the host's enqueueing and waiting ($ocl: solve, enqueue, wait) within the solve" \
	awk -v l="$ocl" 'BEGIN { n = split(l, a, " "); exit !(n == 3 && a[2] > 0 && a[3] > 0 && a[2] + a[3] <= a[1] * 1.001) }'

# 6. the LBM/FV hybrid (the default of a scene that does not say) on
#    1, 2 and 3 OpenCL ranks = one CPU process, every file. The river:
#    the waterfall reach's FV cells (7 % of the cell-steps) lie across
#    the bands of 2 and 3 ranks.
run 0 "$BIN/wbake" samples/river/scene.json -o "$T/hy" --solver lbm --steps 150 --threads 1 --quiet --device cpu
for n in 1 2 3; do
	run 0 mpi $n samples/river/scene.json -o "$T/hy$n" --solver lbm --steps 150 --threads 1
	same "river, the hybrid on OpenCL, $n ranks" "$T/hy" "$T/hy$n"
	expect_err_has "the hybrid's FV update and marking ran on the host"
done
expect_err_has "received"
# the coast: level edges west and south, across every band; the
# marking reads the ghosts next to a band's edge rows, which the halo
# exchange's ring columns close (marked before the exchange, 2 and 3
# ranks differ from one process here)
run 0 "$BIN/wbake" samples/coast/scene.json -o "$T/hc" --solver lbm --steps 100 --threads 1 --quiet --device cpu
for n in 2 3; do
	run 0 mpi $n samples/coast/scene.json -o "$T/hc$n" --solver lbm --steps 100 --threads 1 --quiet
	same "coast, the hybrid on OpenCL, $n ranks" "$T/hc" "$T/hc$n"
done
# a spring on a 20 % slope (the front of section 5, four times as
# steep): its spilling, supercritical front runs from row 3 across the
# band edges of 2 and 3 ranks (rows 32, 48, 64) to row 69 in 500 steps,
# its FV cells (17 % of the cell-steps) moving from band to band; the
# sparse step on every rank, and the dense step on 2
sed -e 's|"height_scale": 10|"height_scale": 40|' -e 's|"lbm_hybrid": false, ||' \
	-e 's|"name": "front"|"name": "steep"|' "$T/front/scene.json" >"$T/front/steep.json"
run 0 "$BIN/wbake" "$T/front/steep.json" -o "$T/st" --steps 500 --threads 1 --device cpu
expect_err_has "were advanced by the finite-volume update of the hybrid"
for n in 1 2 3; do
	run 0 mpi $n "$T/front/steep.json" -o "$T/st$n" --steps 500 --threads 1 --quiet
	same "a steep front across the bands, the hybrid on OpenCL, $n ranks" "$T/st" "$T/st$n"
done
export WB_LBM_DENSE=1
run 0 mpi 2 "$T/front/steep.json" -o "$T/std2" --steps 500 --threads 1 --quiet
unset WB_LBM_DENSE
same "a steep front, the hybrid on OpenCL, dense, 2 ranks" "$T/st" "$T/std2"
# the basin of section 2 with the hybrid, to its window means (the FV
# cells' own state goes into each sample: cl_fv_macro)
sed 's|"lbm_hybrid": false, ||' "$F" >"$T/flat/hybrid.json"
run 0 "$BIN/wbake" "$T/flat/hybrid.json" -o "$T/fh" --threads 1 --quiet --device cpu
run 0 mpi 3 "$T/flat/hybrid.json" -o "$T/fh3" --threads 1 --quiet
same "flat basin to steady, the hybrid on OpenCL, 3 ranks" "$T/fh" "$T/fh3"
finish
