# Outputs replaced as a set (src/output.h): whatever stops a bake - kill -9
# at any moment, a full disk, a concurrent bake - OUTDIR holds the complete
# old output or the complete new one, byte for byte; leftovers of killed
# bakes go away with the next bake; no temporary is opened through a
# symlink someone planted.
. tests/cli/lib.inc
W=$BIN/wbake
# the lake sample with a spring in it: the lake alone is still water,
# which the LBM keeps exactly at rest (docs/lbm.md, "Still water,
# exactly"), so that 20 and 60 steps would bake the same bytes
S=$T/lake.json
sed -e "s|\"terrain.png\"|\"$(pwd)/samples/lake/terrain.png\"|" \
    -e 's|"level": 30, "material": "lake" }|"level": 30, "material": "lake" },\
    { "type": "spring", "name": "inlet", "point": [100, 128], "radius": 3, "discharge": 0.5, "material": "lake" }|' \
    samples/lake/scene.json > "$S"
P=$(cd "$T" && pwd -P)   # OUTDIR's parent as wbake resolves it

# the pack's SHA-256 as the manifest records it
man_sha() { sed -n 's/.*"sha256":[[:space:]]*"\([0-9a-f]*\)".*/\1/p' "$1/manifest.json" | tail -n 1; }
# the manifest describes the pack beside it
consistent() { [ "$(man_sha "$1")" = "$(sha256sum "$1/lake.wtp" | cut -d' ' -f1)" ]; }
# OUTDIR is exactly the old (A) or the new (B) output: same files, same bytes
old_or_new() {
	for ref in "$T/A" "$T/B"; do
		if [ "$(ls -A "$1")" = "$(ls -A "$ref")" ] &&
		   cmp -s "$1/lake.wtp" "$ref/lake.wtp" &&
		   cmp -s "$1/manifest.json" "$ref/manifest.json"; then
			return 0
		fi
	done
	return 1
}
# wait (at most 60 s) until a staging directory of OUTDIR $1 appears
wait_staging() {
	i=0
	while [ $i -lt 600 ]; do
		for f in "$T"/.$1.wbake-tmp.*; do [ -d "$f" ] && return 0; done
		sleep 0.1; i=$((i + 1))
	done
	return 1
}
leftovers() { ls -A "$T" | grep -c "^\.$1\.wbake-" ; }

# the two outputs every interrupted bake must fall back on
run 0 $W $S -o "$T/A" --steps 20 --quiet
run 0 $W $S -o "$T/B" --steps 60 --quiet
check "A consistent" consistent "$T/A"
check "B consistent" consistent "$T/B"
check "A and B differ" sh -c "! cmp -s '$T/A/lake.wtp' '$T/B/lake.wtp'"
check "no lock or staging left after a bake" test "$(leftovers A)" -eq 0

# a new bake over an old output replaces it whole (a file of an older
# wbake's output that the new one does not write goes away with it)
cp -R "$T/A" "$T/o"
: > "$T/o/old.wtp"
run 0 $W $S -o "$T/o" --steps 60 --quiet
check "replaced by the new output" old_or_new "$T/o"
check "the new output, not the old" cmp -s "$T/o/lake.wtp" "$T/B/lake.wtp"
check "old files gone" test ! -e "$T/o/old.wtp"

# kill -9 while solving: the old output, a leftover staging directory and
# lock; the next bake removes both
rm -rf "$T/o" && cp -R "$T/A" "$T/o"
$W $S -o "$T/o" --steps 100000000 --quiet 2>/dev/null &
pid=$!
check "staging directory appears" wait_staging o
kill -9 $pid; wait $pid 2>/dev/null
check "killed while solving: the old output" old_or_new "$T/o"
check "killed: the staging directory is left" test "$(ls -d "$T"/.o.wbake-tmp.* | wc -l)" -eq 1
run 0 $W $S -o "$T/o" --steps 60 --quiet
check "the next bake: new output" cmp -s "$T/o/lake.wtp" "$T/B/lake.wtp"
check "the next bake removed the leftovers" test "$(leftovers o)" -eq 0

# kill -9 at many moments of a whole bake (load, solve, pages, pack,
# manifest, swap): always the old or the new output, never a mix
for t in 0.05 0.2 0.4 0.6 0.7 0.8 0.9 1.0 1.1 1.2 1.4 1.7; do
	rm -rf "$T/o" && cp -R "$T/A" "$T/o"
	$W $S -o "$T/o" --steps 60 --quiet 2>/dev/null &
	pid=$!
	sleep $t
	kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
	check "kill -9 after ${t}s: old or new output" old_or_new "$T/o"
	check "kill -9 after ${t}s: manifest matches pack" consistent "$T/o"
done
run 0 $W $S -o "$T/o" --steps 60 --quiet
check "after the kills: no leftovers" test "$(leftovers o)" -eq 0

# two bakes into one OUTDIR: the second is refused at once, naming the pid
rm -rf "$T/o" && cp -R "$T/A" "$T/o"
$W $S -o "$T/o" --steps 100000000 --quiet 2>/dev/null &
pid=$!
check "first bake started" wait_staging o
run 4 $W $S -o "$T/o" --steps 10 --quiet
expect_err "$T/o: error: another wbake (pid $pid) is writing this output directory (lock '$P/.o.wbake-lock'); wait for it to finish or stop it"
kill -9 $pid; wait $pid 2>/dev/null
check "refused bake: old output" old_or_new "$T/o"

# full disk (a file size limit: EFBIG) while writing the pack: exit 4 with
# the errno text, the old output intact, no staging left
rm -rf "$T/o" && cp -R "$T/A" "$T/o"
run 4 sh -c "ulimit -f 64 && exec $W $S -o '$T/o' --steps 60 --quiet"
expect_err_has "File too large"
expect_err_has "lake.wtp: error: cannot write"
expect_err "wbake: $T/o keeps its previous contents"
check "full disk: old output" old_or_new "$T/o"
check "full disk: A intact" cmp -s "$T/o/lake.wtp" "$T/A/lake.wtp"
check "full disk: nothing left" test "$(leftovers o)" -eq 0

# a really full disk, in a private mount namespace (skipped where unshare
# or tmpfs is not allowed): tmpfs sizes around what the old output plus the
# new pack take, so that the disk fills while writing the pack, while
# writing the manifest, or not at all. Each time: exit 4 with the errno
# text and the old output intact, or exit 0 with the new one.
kib() { echo $(( ($(wc -c < "$1") + 4095) / 4096 * 4 )); }
# (the old output is a whole set: pack, manifest and the solver state;
# the new set is staged beside it: its pack comes first, then the
# manifest, then the state)
need=$(( $(kib "$T/A/lake.wtp") + $(kib "$T/A/manifest.json") + $(kib "$T/A/state.wbs") + $(kib "$T/B/lake.wtp") ))
all=$(( need + $(kib "$T/B/manifest.json") + $(kib "$T/B/state.wbs") + 16 ))
mkdir -p "$T/disk"
if unshare -rm sh -c "mount -t tmpfs -o size=64k tmpfs '$T/disk'" 2>/dev/null; then
	: > "$T/disk.log"
	for sz in $((need - 8)) $((need - 4)) $need $((need + 4)) $((need + 8)) $((need + 12)) $all; do
		unshare -rm sh -c "
			mount -t tmpfs -o size=${sz}k tmpfs '$T/disk' && cp -R '$T/A' '$T/disk/o' || exit
			$W $S -o '$T/disk/o' --steps 60 --quiet 2>'$T/err.$sz'
			rc=\$?
			if [ \$rc -eq 4 ] && cmp -s '$T/disk/o/lake.wtp' '$T/A/lake.wtp' &&
			   cmp -s '$T/disk/o/manifest.json' '$T/A/manifest.json' &&
			   [ \"\$(ls -A '$T/disk')\" = o ]; then echo \"$sz old\"
			elif [ \$rc -eq 0 ] && cmp -s '$T/disk/o/lake.wtp' '$T/B/lake.wtp' &&
			   cmp -s '$T/disk/o/manifest.json' '$T/B/manifest.json' &&
			   [ \"\$(ls -A '$T/disk')\" = o ]; then echo \"$sz new\"
			else echo \"$sz MIXED rc=\$rc\"; fi" >> "$T/disk.log"
	done
	check "full tmpfs: always the old or the new output" sh -c "! grep -q MIXED '$T/disk.log' && [ \$(wc -l < '$T/disk.log') -eq 7 ]"
	check "full tmpfs: some bake fit" grep -q new "$T/disk.log"
	check "full tmpfs: the pack did not fit" sh -c "cat '$T'/err.* | grep -q 'lake.wtp: error: cannot write the pack: No space left on device'"
	check "full tmpfs: the manifest did not fit" sh -c "cat '$T'/err.* | grep -q 'manifest.json: error: cannot write: No space left on device'"
	check "full tmpfs: says the old output stays" sh -c "cat '$T'/err.* | grep -qx 'wbake: $T/disk/o keeps its previous contents'"
	# a mount point cannot be swapped: refused before the solve
	unshare -rm sh -c "mount -t tmpfs tmpfs '$T/disk' && exec $W $S -o '$T/disk' --steps 100000000 --quiet" 2>"$T/err"
	check "mount point: exit 4" test $? -eq 4
	expect_err "$T/disk: error: is a mount point, and wbake replaces the whole output directory: give -o a directory inside it"
else
	echo "note: no tmpfs in a mount namespace here; ENOSPC tested through ulimit -f only"
fi

# symlinks planted at every predictable name are never followed
echo victim > "$T/victim"
mkdir -p "$T/victimdir" && echo keep > "$T/victimdir/keep"
ln -s "$T/victim" "$T/.o.wbake-lock"
run 4 $W $S -o "$T/o" --steps 10 --quiet
expect_err "$T/o: error: cannot open the lock file '$P/.o.wbake-lock': Too many levels of symbolic links (it is a symbolic link; wbake does not follow it)"
check "lock symlink: target unchanged" grep -qx victim "$T/victim"
check "lock symlink: old output" cmp -s "$T/o/lake.wtp" "$T/A/lake.wtp"
rm "$T/.o.wbake-lock"
ln -s "$T/victimdir" "$T/.o.wbake-tmp.AAAAAA"
ln -s "$T/victimdir" "$T/.o.wbake-old.AAAAAA"
ln -s "$T/victim" "$T/o/lake.wtp.tmp.$$"    # the name older wbakes used
ln -s "$T/victim" "$T/o/manifest.json.tmp.$$"
run 0 $W $S -o "$T/o" --steps 60 --quiet
check "planted symlinks: new output" cmp -s "$T/o/lake.wtp" "$T/B/lake.wtp"
check "planted symlinks: file target unchanged" grep -qx victim "$T/victim"
check "planted symlinks: directory target unchanged" grep -qx keep "$T/victimdir/keep"
check "planted symlinks: staging-named links left alone" test -L "$T/.o.wbake-tmp.AAAAAA"
check "old-style temporaries went with the old tree" test ! -e "$T/o/lake.wtp.tmp.$$"

# a directory holding what wbake did not write is refused before the solve
mkdir -p "$T/mine" && echo notes > "$T/mine/notes.txt"
run 4 $W $S -o "$T/mine" --steps 100000000 --quiet
expect_err "$T/mine: error: the output directory holds 'notes.txt', which wbake did not write; wbake replaces the whole directory, so give -o a new or empty directory or an earlier output of wbake"
check "foreign file kept" grep -qx notes "$T/mine/notes.txt"
check "refused: nothing left" test "$(leftovers mine)" -eq 0
finish
