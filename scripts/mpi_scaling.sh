#!/bin/bash
# scripts/mpi_scaling.sh BUNDLE: the figures of docs/mpi.md ("Measured on
# a GPU host"): strong and weak scaling of the world on 1, 2, 4 GPUs (on
# one GPU: its rate, and ranks sharing it), and CPU ranks; logs in $OUT.
set -u
D=${1:?usage: scripts/mpi_scaling.sh BUNDLE (scripts/mpi_bundle.sh BUNDLE bin-cl-mpi/wbake bin-cl/mkterrain)}
export WB_BUNDLE=$D
. "$D/env.sh"
O=${OUT:-/tmp/out}; mkdir -p "$O"
ICD=/usr/lib/libnvidia-opencl.so.1
[ -e $ICD ] || ICD=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/lib64/libnvidia-opencl.so.1 2>/dev/null | head -1)
mkdir -p /etc/OpenCL/vendors && echo "$ICD" > /etc/OpenCL/vendors/nvidia.icd
nvidia-smi -L; NG=$(nvidia-smi -L | grep -c GPU); echo "GPUs $NG cores $(nproc)"; free -g | head -2
W=$D/bin/wbake; MK=$D/bin/mkterrain; RR=--allow-run-as-root
$W --list-devices 2>&1 | head -8
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s]"; }
run() { # run TAG NP ARGS...
	tag=$1; np=$2; shift 2
	/usr/bin/time -f "%e s wall, %M KB max RSS (mpirun)" timeout ${TMO:-200} mpirun $RR -np $np $W "$@" -o /tmp/o_$tag >"$O/$tag.err" 2>&1
	echo "$(el) $tag np=$np rc=$? :: $(grep -E '^mpi:|^lbm: stopped|wall' "$O/$tag.err" | tr '\n' ' ' | cut -c1-600)"
}
same() { cmp "/tmp/o_$1/$3" "/tmp/o_$2/$3" && echo "SAME $1 $2 $3" || echo "DIFFER $1 $2 $3"; }
# sanity: the river, 1 and 2 ranks on the GPUs, bytes compared
TMO=60 run river1 1 samples/river/scene.json --solver lbm --steps 200 --device opencl
TMO=60 run river2 2 samples/river/scene.json --solver lbm --steps 200 --device opencl
same river1 river2 river.wtp; same river1 river2 manifest.json
SIZES="8192 2896"; [ $NG -ge 2 ] && SIZES="4096 5792 8192 2896"
for n in $SIZES; do $MK world $n /tmp/w$n >/dev/null & done; wait; el
G="--solver lbm --device opencl --steps 500"
run g8192n1 1 /tmp/w8192/scene.json $G
[ $NG -ge 2 ] && run g8192n2 2 /tmp/w8192/scene.json $G && same g8192n1 g8192n2 world.wtp
[ $NG -ge 4 ] && run g8192n4 4 /tmp/w8192/scene.json $G && same g8192n1 g8192n4 world.wtp
[ $NG -ge 2 ] && run g4096n1 1 /tmp/w4096/scene.json $G
[ $NG -ge 2 ] && run g5792n2 2 /tmp/w5792/scene.json $G
# one GPU only: 2 and 4 ranks share it (the exchange's cost and bytes)
[ $NG -lt 2 ] && run g8192s2 2 /tmp/w8192/scene.json $G && same g8192n1 g8192s2 world.wtp
[ $NG -lt 4 ] && run g8192s4 4 /tmp/w8192/scene.json $G && same g8192n1 g8192s4 world.wtp
# CPU ranks: the same cores per rank (a quarter of the host each)
C=$(( $(nproc) / 4 ))
for np in 1 2 4; do run c2896n$np $np /tmp/w2896/scene.json --solver lbm --steps 200 --threads $C; done
same c2896n1 c2896n4 world.wtp
el
