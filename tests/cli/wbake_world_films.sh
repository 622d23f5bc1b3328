# The SWE on the open-world sample (bin/mkterrain world 1024): films at
# the foot of a cliff beside a lake once took momentum from their
# neighbours' fluxes faster than they held water (the momentum-conservative
# advection's weights above 1), flipped between +30 and -30 m/s every step
# and held the whole map's time step at 0.008-0.013 s (src/swe.c
# cons_adv). The fastest real flow of that world is about 7 m/s (a chute
# of 2 m steps), so the step, min(0.25 dx / max|u|, 0.5 dx / sqrt(g h)),
# stays above 0.03 s: the mean step over 1500 steps must be above 0.03 s
# (0.0177 s before the fix, 0.0414 with it).
. tests/cli/lib.inc
W=${W:-$BIN/wbake}
run 0 ${MKTERRAIN:-$BIN/mkterrain} world 1024 "$T/w"
run 0 $W "$T/w/scene.json" -o "$T/o" --steps 1500 --quiet
dt=$(sed -n 's/^[[:space:]]*"dt_s":[[:space:]]*\([0-9.e+-]*\),\{0,1\}$/\1/p' "$T/o/manifest.json" | head -n 1)
check "world 1024, 1500 SWE steps: mean step $dt s above 0.03 s" \
	awk -v d="$dt" 'BEGIN { exit !(d > 0.03) }'
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
