#!/bin/sh
# Install the Debian packages wbake needs, when they are missing.
# Usage: scripts/deps.sh [build|test|opencl|fuzz]...
# Prints what it installs; does nothing when everything is present.
set -eu

pkgs_build="libpng-dev zlib1g-dev libcjson-dev libstb-dev"
pkgs_test="libcmocka-dev chromium"
pkgs_opencl="ocl-icd-opencl-dev opencl-headers pocl-opencl-icd"
pkgs_fuzz="clang libclang-rt-14-dev"

want=""
for what in "${@:-build}"; do
	case $what in
	build)  want="$want $pkgs_build" ;;
	test)   want="$want $pkgs_build $pkgs_test $pkgs_opencl" ;;
	opencl) want="$want $pkgs_build $pkgs_opencl" ;;
	fuzz)   want="$want $pkgs_fuzz" ;;
	*) echo "deps.sh: unknown set '$what'" >&2; exit 1 ;;
	esac
done

missing=""
for p in $want; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		case " $missing " in *" $p "*) ;; *) missing="$missing $p" ;; esac
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "deps.sh: missing packages:$missing" >&2
	echo "deps.sh: run as root (or install sudo) so they can be installed" >&2
	exit 1
fi
echo "deps.sh: installing missing packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2 || true
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
echo "deps.sh: installed:$missing" >&2
