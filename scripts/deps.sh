#!/bin/sh
# Install the Debian packages wbake needs, when they are missing.
# Usage: scripts/deps.sh [build|test|opencl|fuzz|mpi]...   (default: build)
#
# Prerequisites: Debian 12, root or sudo, network to the Debian mirrors.
# Does nothing when everything is present. Otherwise prints one line per
# package set it installs; the full apt-get/dpkg output goes to the log
# ($WB_DEPS_LOG, default build/deps.log), whose end is printed on failure.
set -eu

# The package sets, one variable each: add a package to the set that needs it.
pkgs_compiler="gcc libc6-dev"                        # cc, ar, libgomp (OpenMP)
pkgs_build="libpng-dev zlib1g-dev libcjson-dev libstb-dev"
pkgs_test="libcmocka-dev chromium openmpi-bin libopenmpi-dev" # + MPI (docs/mpi.md)
pkgs_opencl="ocl-icd-opencl-dev opencl-headers pocl-opencl-icd"
pkgs_fuzz="clang libclang-rt-14-dev"                 # libFuzzer, ASan, UBSan
pkgs_mpi="openmpi-bin libopenmpi-dev"                # make MPI=1 (bin-mpi/wbake)

# Which sets each argument wants, in install order.
sets=""
add() { for s in "$@"; do case " $sets " in *" $s "*) ;; *) sets="$sets $s" ;; esac; done; }
for what in "${@:-build}"; do
	case $what in
	build)  add compiler build ;;
	test)   add compiler build test opencl fuzz ;;
	opencl) add compiler build opencl ;;
	fuzz)   add compiler build fuzz ;;
	mpi)    add compiler build mpi ;;
	*) echo "deps.sh: unknown set '$what' (expected build, test, opencl, fuzz or mpi)" >&2; exit 1 ;;
	esac
done

describe() {
	case $1 in
	compiler) echo "the C compiler" ;;
	build)    echo "the build libraries" ;;
	test)     echo "the test framework" ;;
	opencl)   echo "OpenCL (PoCL on the CPU)" ;;
	fuzz)     echo "clang and its sanitizer runtimes (fuzzers)" ;;
	mpi)      echo "Open MPI (mpicc, mpirun)" ;;
	*)        echo "$1" ;;
	esac
}

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}
missing_of() { # the packages of set $1 not installed yet
	eval "list=\$pkgs_$1"
	out=""
	for p in $list; do installed "$p" || out="$out $p"; done
	echo "${out# }"
}

todo=""
for s in $sets; do
	[ -n "$(missing_of "$s")" ] && todo="$todo $s"
done
[ -z "$todo" ] && exit 0

if [ "$(id -u)" = 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	for s in $todo; do
		echo "deps.sh: missing $(describe "$s"): $(missing_of "$s")" >&2
	done
	echo "deps.sh: run as root (or install sudo) so that they can be installed" >&2
	exit 1
fi

log=${WB_DEPS_LOG:-build/deps.log}
mkdir -p "$(dirname "$log")"
: >"$log"
fail() { # fail MESSAGE: say what failed, where the log is, apt's errors, its end
	echo "deps.sh: $1; full log: $log" >&2
	if grep -q '^E: ' "$log"; then
		echo "deps.sh: apt's errors:" >&2
		grep '^E: ' "$log" | tail -n 10 | sed 's/^/  | /' >&2
	fi
	echo "deps.sh: the log's last lines:" >&2
	tail -n 15 "$log" | sed 's/^/  | /' >&2
	exit 1
}
export DEBIAN_FRONTEND=noninteractive
echo "deps.sh: apt-get update (log: $log)" >&2
if ! $SUDO apt-get update >>"$log" 2>&1; then
	echo "deps.sh: apt-get update failed; trying the package lists already present" >&2
fi
for s in $todo; do
	m=$(missing_of "$s")
	[ -z "$m" ] && continue # installed with an earlier set
	echo "deps.sh: installing $(describe "$s"): $m" >&2
	echo "=== apt-get install $m" >>"$log"
	# shellcheck disable=SC2086
	$SUDO apt-get install -y --no-install-recommends $m >>"$log" 2>&1 ||
		fail "installing $m failed"
done
