#!/bin/bash
# scripts/mpi_scaling.sh BUNDLE [JOB...]: the figures of docs/mpi.md
# ("Measured on a GPU host"): the pure LBM on OpenCL over 1, 2 and 4 GPUs
# of one host, one rank per GPU.
#   strong: the world 16384^2 (bin/mkterrain world 16384) on 1, 2, 4 GPUs
#   weak:   8192^2 on 1 GPU, 11584^2 on 2, 16384^2 on 4 (area per GPU kept)
# Every bake: --solver lbm --device opencl --steps $STEPS, the scene with
# "lbm_hybrid": false (the device kernel alone: the hybrid runs its FV update on the hosts), the dense
# step (WB_LBM_DENSE=1) unless the job ends in "sparse" (the default
# block-sparse step, on one rank or several). Pack and manifest of every rank count
# compared with cmp against the one-rank bake of the same world.
# WB_CL_OVERLAP=0 in the environment puts the exchange after the whole
# step, as before it went behind the interior rows (passed to the ranks).
# BUNDLE: scripts/mpi_bundle.sh BUNDLE bin-cl-mpi/wbake bin-cl/mkterrain
# JOBs (default: all, in this order): s16n4 s16n1 s16n2 w8n1 w11n2 s16n1sparse
#   (tag: s = strong, w = weak; n = ranks; sparse: the default step,
#   e.g. s16n2sparse; cma: Open MPI's single-copy transport,
#   e.g. w8n2sparsecma; old: the bundle's bin/wbake-old instead of
#   bin/wbake, the build to compare against, e.g. s16n4sparsecmaold;
#   prof: WB_CL_PROFILE=1, e.g. s16n4sparsecmaprof)
# Restartable: worlds and finished bakes are kept in $S (/tmp/wbscale) and
# skipped, a bake that would not end within LIMIT seconds of the start is
# not begun (call it again to go on); the lines to read are in
# $OUT/summary.txt, every bake's stderr in $OUT/logs.tar.gz.
set -u
D=${1:?usage: scripts/mpi_scaling.sh BUNDLE [JOB...]}
shift
[ $# -gt 0 ] || set -- s16n4 s16n1 s16n2 w8n1 w11n2 s16n1sparse
D=$(cd "$D" && pwd)
export WB_BUNDLE=$D
. "$D/env.sh"
O=${OUT:-/tmp/out}; S=${S:-/tmp/wbscale}; mkdir -p "$O" "$S"
STEPS=${STEPS:-1000}; LIMIT=${LIMIT:-570}
W=$D/bin/wbake; MK=$D/bin/mkterrain; RR=
[ "$(id -u)" = 0 ] && RR=--allow-run-as-root
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
log() { echo "[$(el) s] $*" | tee -a "$O/summary.txt"; }
if command -v nvidia-smi >/dev/null 2>&1; then
	ICD=/usr/lib/libnvidia-opencl.so.1
	[ -e $ICD ] || ICD=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/lib64/libnvidia-opencl.so.1 2>/dev/null | head -1)
	mkdir -p /etc/OpenCL/vendors && echo "$ICD" > /etc/OpenCL/vendors/nvidia.icd
	{ nvidia-smi -L; nvidia-smi topo -m; echo "cores $(nproc)"; free -g | head -2; df -h /tmp | tail -1; } >>"$O/summary.txt" 2>&1
fi
size() { case $1 in s16*) echo 16384 ;; w8*) echo 8192 ;; w11*) echo 11584 ;; *) echo "${1#t}" | sed 's/n.*//' ;; esac; }
ranks() { echo "$1" | sed 's/.*n\([0-9]*\).*/\1/'; }
# the worlds the jobs need, generated at once (one process each)
for n in $(for j in "$@"; do size "$j"; done | sort -u); do
	[ -s "$S/w$n/pure.json" ] && continue
	( t=$(date +%s); "$MK" world "$n" "$S/w$n" >"$S/gen$n.log" 2>&1 &&
	  sed 's|"simulation": {|"simulation": { "lbm_hybrid": false,|' "$S/w$n/scene.json" >"$S/w$n/pure.json" &&
	  log "world $n generated in $(( $(date +%s) - t )) s" ) &
done
wait
bake() { # bake JOB: one bake, its wall time and the mpi: lines
	j=$1; n=$(size "$j"); np=$(ranks "$j")
	[ -e "$S/ok_$j" ] && { log "$j: done in an earlier call"; return; }
	[ -s "$S/w$n/pure.json" ] || { log "$j: no world $n"; return; }
	# a bake that cannot end in time is not begun: the last wall time
	# of this size (or a guess) with a margin
	est=$(cat "$S/wall_$n" 2>/dev/null || echo $(( n / 64 + 20 )))
	if [ $(( $(el) + est * 12 / 10 )) -gt "$LIMIT" ]; then
		log "$j: not begun ($est s expected, $(( LIMIT - $(el) )) s left)"
		return
	fi
	dense=1; case $j in *sparse*) dense=0 ;; esac
	# a job ending in "cma": Open MPI's single-copy transport (Linux
	# cross-memory attach) instead of the bundle's copy in, copy out
	mech=none; case $j in *cma*) mech=cma ;; esac
	wb=$W; case $j in *old) wb=$D/bin/wbake-old ;; esac
	# a job ending in "prof": WB_CL_PROFILE=1 on every rank (each
	# rank's kernel time in the mpi: lines; the events cost a little)
	prof=0; case $j in *prof) prof=1 ;; esac
	rm -rf "$S/o_$j"
	t=$(date +%s)
	OMPI_MCA_btl_vader_single_copy_mechanism=$mech WB_LBM_DENSE=$dense WB_CL_PROFILE=$prof timeout $(( LIMIT - $(el) )) mpirun $RR $([ "$np" -gt "$(nproc)" ] && echo --oversubscribe) -x WB_LBM_DENSE -x WB_CL_PROFILE ${WB_CL_OVERLAP:+-x WB_CL_OVERLAP} -np "$np" \
		sh -c 'POCL_CACHE_DIR="$0/pocl.$OMPI_COMM_WORLD_RANK" exec "$@"' "$S" \
		"$wb" "$S/w$n/pure.json" -o "$S/o_$j" --solver lbm --device opencl \
		--steps "$STEPS" >"$S/$j.err" 2>&1
	rc=$?; w=$(( $(date +%s) - t ))
	cp "$S/$j.err" "$O/"
	log "$j: $n^2, $np rank(s), dense=$dense: rc=$rc, $w s wall"
	grep -E '^mpi:|^opencl:|^lbm|baking|error|failed|opencl profile' "$S/$j.err" | grep -v '^mpi: resident' | cut -c1-1500 | tee -a "$O/summary.txt"
	[ $rc = 0 ] || return
	echo $w >"$S/wall_$n"
	touch "$S/ok_$j"
	for r in "$S"/o_*; do # cmp against another finished bake of this world
		o=${r##*/o_}
		[ "$o" != "$j" ] && [ -e "$S/ok_$o" ] && [ "$(size "$o")" = "$n" ] || continue
		for f in world.wtp manifest.json; do
			cmp "$r/$f" "$S/o_$j/$f" >/dev/null 2>&1 &&
				log "SAME $f: $o $j" || log "DIFFER $f: $o $j"
		done
		break
	done
}
for j in "$@"; do bake "$j"; done
tar czf "$O/logs.tar.gz" -C "$S" $(cd "$S" && ls ./*.err ./gen*.log 2>/dev/null) 2>/dev/null
rm -f "$O"/*.err
log "end"
