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
expect_err "wbake: --steps expects a number of steps from 1 to 1000000000, found '-5'"
run 1 $W samples/lake/scene.json -o "$T/o" --solver fem
expect_err "wbake: --solver expects 'lbm' or 'swe', found 'fem'"
run 1 $W samples/lake/scene.json -o "$T/o" --device gpu
expect_err "wbake: --device expects 'cpu' or 'opencl', found 'gpu'"
run 1 $W samples/lake/scene.json -o
expect_err "wbake: option '-o' needs a value"
run 1 $W samples/lake/scene.json -o "$T/o" --from ''
expect_err "wbake: --from needs the directory of an earlier bake, found ''"
# an empty scene name is a usage error (it was ": error: cannot open", exit 2)
run 1 $W '' --check
expect_err "wbake: SCENE.json needs a file name, found ''"
run 1 $W a.json b.json -o "$T/o"
expect_err "wbake: unexpected argument 'b.json' (one scene per run)"

# numbers are read whole: no spaces, no '+', nothing after the digits
for v in ' 5' '5 ' '+5' '5x' '0x10' '' '1e3' '99999999999999999999999'; do
	run 1 $W samples/lake/scene.json -o "$T/o" --steps "$v"
	expect_err "wbake: --steps expects a number of steps from 1 to 1000000000, found '$v'"
done
run 1 $W samples/lake/scene.json -o "$T/o" --threads ' 2'
expect_err "wbake: --threads expects a number from 1 to 4096, found ' 2'"
run 1 $W samples/lake/scene.json -o "$T/o" --threads 4097
expect_err "wbake: --threads expects a number from 1 to 4096, found '4097'"
run 1 $W samples/lake/scene.json -o "$T/o" --cl-device ' 0'
expect_err "wbake: --cl-device expects a device index from 0 to 1000, found ' 0'"
run 1 $W samples/lake/scene.json -o "$T/o" --cl-device -0
expect_err "wbake: --cl-device expects a device index from 0 to 1000, found '-0'"
# a value shown in a message has its control characters escaped
run 1 $W samples/lake/scene.json -o "$T/o" --steps "$(printf '1\033[2J')"
expect_err "wbake: --steps expects a number of steps from 1 to 1000000000, found '1\\x1b[2J'"

# an option that takes a value, given twice, is a usage error naming both
# values (the last one silently won before); flags twice are harmless
run 1 $W samples/lake/scene.json -o "$T/a" -o "$T/b"
expect_err "wbake: option '-o' given twice ('$T/a', then '$T/b'); give it once"
run 1 $W samples/lake/scene.json -o "$T/a" --out "$T/b"
expect_err "wbake: option '--out' given twice ('$T/a', then '$T/b'); give it once"
run 1 $W samples/lake/scene.json -o "$T/o" --steps 5 --steps 7
expect_err "wbake: option '--steps' given twice ('5', then '7'); give it once"
run 1 $W samples/lake/scene.json -o "$T/o" --threads 2 --threads 2
expect_err "wbake: option '--threads' given twice ('2', then '2'); give it once"
run 1 $W samples/lake/scene.json -o "$T/o" --solver lbm --solver swe
expect_err "wbake: option '--solver' given twice ('lbm', then 'swe'); give it once"
run 1 $W samples/lake/scene.json -o "$T/o" --device cpu --device opencl
expect_err "wbake: option '--device' given twice ('cpu', then 'opencl'); give it once"
run 1 $W samples/lake/scene.json -o "$T/o" --cl-device 0 --cl-device 1
expect_err "wbake: option '--cl-device' given twice ('0', then '1'); give it once"
run 1 $W samples/lake/scene.json -o "$T/o" --from "$T/x" --from "$T/y"
expect_err "wbake: option '--from' given twice ('$T/x', then '$T/y'); give it once"
run 1 $W samples/lake/scene.json -o "$T/o" --pages png --pages png
expect_err "wbake: option '--pages' given twice ('png', then 'png'); give it once"
run 0 $W samples/lake/scene.json --check --quiet --quiet --check --json --json
finish
