# wbake's command line: usage errors exit 1 with a message naming the problem.
. tests/cli/lib.inc
W=$BIN/wbake
run 0 $W --help
expect_out_has "usage: wbake SCENE.json -o OUTDIR [options]"
run 0 $W --version
expect_out_has "wbake "
run 1 $W
expect_err "wbake: missing SCENE.json"
run 1 $W samples/lake/scene.json
expect_err "wbake: missing -o OUTDIR"
run 1 $W samples/lake/scene.json -o "$T/o" --frobnicate
expect_err "wbake: unknown option '--frobnicate'"
run 1 $W samples/lake/scene.json -o "$T/o" --threads 0
expect_err "wbake: --threads expects a number from 1 to 4096, found '0'"
run 1 $W samples/lake/scene.json -o "$T/o" --steps -5
expect_err "wbake: --steps expects a positive number of steps, found '-5'"
run 1 $W samples/lake/scene.json -o "$T/o" --solver fem
expect_err "wbake: --solver expects 'lbm' or 'swe', found 'fem'"
run 1 $W samples/lake/scene.json -o "$T/o" --device gpu
expect_err "wbake: --device expects 'cpu' or 'opencl', found 'gpu'"
run 1 $W samples/lake/scene.json -o
expect_err "wbake: option '-o' needs a value"
run 1 $W samples/lake/scene.json -o "$T/o" --from ''
expect_err "wbake: --from needs the directory of an earlier bake, found ''"
run 1 $W a.json b.json -o "$T/o"
expect_err "wbake: unexpected argument 'b.json' (one scene per run)"
finish
