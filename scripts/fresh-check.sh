#!/bin/sh
# Checks that the repository builds and passes CI on a fresh Debian 12 that
# has nothing but git and make: debootstraps a minimal bookworm (variant
# minbase) into .fresh/root, installs git and make there, clones this
# repository's HEAD into it with that git, and runs 'bash .ci/run' with
# CI=true inside the chroot. Everything else (compiler, libraries, clang, ...)
# must be installed by the repository itself (scripts/deps.sh).
#
# Usage (as root, on a Debian or Ubuntu host with debootstrap):
#   scripts/fresh-check.sh [--keep]
#     --keep   leave .fresh/root in place afterwards (default: removed)
# Environment: WB_MIRROR=URL overrides the Debian mirror, which is otherwise
# the host's (from /etc/apt/sources.list.d/*, then /etc/apt/sources.list),
# or http://deb.debian.org/debian.
# Only committed work is checked (the clone is of HEAD). The whole output
# also goes to .fresh/check.log. Exit status: that of .ci/run, or 1 when the
# chroot could not be set up.
set -eu

keep=0
for a in "$@"; do
	case $a in
	--keep) keep=1 ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "fresh-check: unknown option '$a' (try --help)" >&2; exit 1 ;;
	esac
done

cd "$(dirname "$0")/.."
repo=$(pwd)
if [ "$(id -u)" != 0 ]; then
	echo "fresh-check: must run as root (debootstrap, chroot and mount need it)" >&2
	exit 1
fi
for c in debootstrap chroot mount umount git; do
	command -v "$c" >/dev/null 2>&1 || {
		echo "fresh-check: '$c' not found (apt-get install debootstrap git)" >&2
		exit 1
	}
done

work=$repo/.fresh
root=$work/root
log=$work/check.log
mkdir -p "$work"
: >"$log"
say() { echo "fresh-check: $*" | tee -a "$log" >&2; }

# Mount points under $root still mounted (deepest first).
mounted_under() {
	awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r
}
mounts=""
cleanup() {
	rc=$?
	trap - EXIT INT TERM HUP
	for m in $(mounted_under); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null ||
			echo "fresh-check: could not unmount $m" >&2
	done
	if [ -n "$(mounted_under)" ]; then
		echo "fresh-check: still mounted under $root; not removing it" >&2
	elif [ "$keep" = 0 ] && [ -d "$root" ]; then
		rm -rf "$root"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if [ -n "$(mounted_under)" ]; then
	echo "fresh-check: something is still mounted under $root:" >&2
	mounted_under >&2
	exit 1
fi
rm -rf "$root"

# The host's Debian mirror: the first URI of a bookworm (not -security or
# -updates) entry, deb822 (.sources) or one-line (.list) style.
host_mirror() {
	for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list \
		 /etc/apt/sources.list; do
		[ -f "$f" ] || continue
		case $f in
		*.sources) awk '
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { if (deb && bw && uri != "") { print uri; exit }
				     deb = 0; bw = 0; uri = ""; next }
			tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == "bookworm") bw = 1 }
			tolower($1) == "enabled:" && tolower($2) == "no" { deb = 0 }
			END { if (deb && bw && uri != "") print uri }' "$f" ;;
		*) awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) while (i <= NF && $i !~ /\]$/) i++
				       if ($2 ~ /^\[/) i++
				       if ($(i + 1) == "bookworm") { print $i; exit } }' "$f" ;;
		esac
	done | head -n 1
}
mirror=${WB_MIRROR:-$(host_mirror)}
mirror=${mirror:-http://deb.debian.org/debian}

say "debootstrap bookworm (minbase) from $mirror into .fresh/root (log: .fresh/check.log)"
start=$(date +%s)
if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >>"$log" 2>&1; then
	say "debootstrap failed; its last lines:"
	tail -n 20 "$log" >&2
	exit 1
fi

# What a chroot needs to run apt, a compiler and the tests: /proc, /sys
# (read-only), and a private /dev (a tmpfs with the usual nodes and its own
# devpts instance, so nothing of the host's /dev is shared).
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mount -t tmpfs -o mode=0755,nosuid dev "$root/dev"
for n in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
	set -- $n
	mknod -m 666 "$root/dev/$1" c "$2" "$3"
done
mkdir -m 755 "$root/dev/pts"
mkdir -m 1777 "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

in_root() {
	chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

say "installing git and make in the chroot"
if ! in_root sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git make' >>"$log" 2>&1; then
	say "apt-get install git make failed in the chroot; its last lines:"
	tail -n 20 "$log" >&2
	exit 1
fi

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	say "warning: uncommitted changes are not part of the check (it clones HEAD)"
fi
head=$(git rev-parse --short HEAD)
git bundle create "$root/tmp/wbake.bundle" HEAD >>"$log" 2>&1
say "cloning HEAD ($head) with the chroot's git into /root/wbake"
in_root git clone -q /tmp/wbake.bundle /root/wbake >>"$log" 2>&1 || {
	say "git clone failed in the chroot"; tail -n 20 "$log" >&2; exit 1; }

say "running 'bash .ci/run' with CI=true in the chroot"
set +e
{ in_root CI=true sh -c 'cd /root/wbake && exec bash .ci/run' 2>&1; echo $? >"$work/rc"; } |
	tee -a "$log"
set -e
rc=$(cat "$work/rc" 2>/dev/null || echo 1)
rm -f "$work/rc"
secs=$(( $(date +%s) - start ))
if [ "$rc" = 0 ]; then
	say "PASS: a fresh bookworm with git and make ran .ci/run with exit 0 (${secs}s in all)"
else
	say "FAIL: .ci/run exited $rc in the fresh bookworm (${secs}s); log: .fresh/check.log"
fi
exit "$rc"
