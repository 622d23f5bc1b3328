#!/bin/sh
# scripts/mpi_bundle.sh DIR [PROGRAM...]: a self-contained copy of
# bin-mpi/wbake (or bin-cl-mpi/wbake) and the Open MPI runtime it needs,
# for hosts that have no Open MPI, libpng, cJSON or OpenCL ICD loader
# installed (docs/mpi.md, "Hosts without Open MPI"). DIR gets bin/ (the
# programs and mpirun), lib/ (every shared library they and Open MPI's
# plugins load, glibc aside), ompi/ (plugins, help files) and env.sh:
#   . DIR/env.sh; mpirun -np 4 DIR/bin/wbake SCENE -o OUT --device opencl
# The GPU driver's OpenCL library stays the host's: register it with
#   echo /usr/lib/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
# (the path where the driver put it; on the device hosts here the
# x86_64-linux-gnu one does not load, and a host that also has pocl.icd
# then bakes on its CPUs without a word: check the log's device line)
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [PROGRAM...]" >&2; exit 1; }
D=$1; shift
[ $# -ge 1 ] || set -- bin-mpi/wbake
RUN=$(command -v orterun || command -v mpirun)
PLUG=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
HELP=$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p')
[ -d "$PLUG" ] && [ -d "$HELP" ] || { echo "$0: ompi_info does not name Open MPI's plugin and help directories" >&2; exit 1; }
rm -rf "$D"; mkdir -p "$D/bin" "$D/lib" "$D/ompi/plugins" "$D/ompi/share"
cp "$@" "$D/bin/"
cp -L "$RUN" "$D/bin/mpirun"
cp "$PLUG"/*.so "$D/ompi/plugins/"
cp -r "$HELP" "$D/ompi/share/openmpi"
for f in "$D"/bin/* "$D"/ompi/plugins/*.so; do ldd "$f" 2>/dev/null || true; done |
	awk '/=> \//{print $3}' | sort -u | grep -v -e '/libc\.so' -e '/libm\.so' \
	-e '/libpthread\.so' -e '/libdl\.so' -e '/librt\.so' |
	while read -r l; do cp -L "$l" "$D/lib/"; done
cat >"$D/env.sh" <<'EOF'
# . DIR/env.sh: the Open MPI runtime of this bundle (relocated prefix)
B=${WB_BUNDLE:-$(cd "$(dirname "${BASH_SOURCE:-$0}")" && pwd)}
export PATH=$B/bin:$PATH
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$B/ompi OPAL_LIBDIR=$B/lib OPAL_BINDIR=$B/bin \
	OPAL_DATADIR=$B/ompi/share OPAL_PKGDATADIR=$B/ompi/share/openmpi
export OMPI_MCA_mca_base_component_path=$B/ompi/plugins \
	OMPI_MCA_mca_base_component_show_load_errors=0 \
	PMIX_MCA_pcompress_base_silence_warning=1 HWLOC_PLUGINS_PATH=$B/none
# one host: shared memory between the ranks, no network probing, no
# binding (each rank runs its own threads)
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none \
	OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm_rsh_agent=false \
	OMPI_MCA_pml=ob1 OMPI_MCA_hwloc_base_binding_policy=none
EOF
echo "$D: $(du -sh "$D" | cut -f1); run: . $D/env.sh; mpirun -np N $D/bin/$(basename "$1") ..."
