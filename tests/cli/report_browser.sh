# report.html in a real browser: a small SWE bake of samples/river with
# --report is opened in headless Chromium (Debian's chromium, installed by
# scripts/deps.sh test). Checks: the page logs nothing to the console,
# raises no error, every image loads (naturalWidth > 0), the residual plot
# has its points, and a screenshot is not blank (many colours, read back in
# the browser from a data: URI). The report is byte-identical for a second
# bake with another thread count. No network; works as root (--no-sandbox).
. tests/cli/lib.inc
CHROMIUM=${CHROMIUM:-chromium}
if ! command -v "$CHROMIUM" >/dev/null 2>&1; then
	echo "FAIL: '$CHROMIUM' not found: run 'sh scripts/deps.sh test' (it installs chromium)"
	exit 1
fi
ABS=$(pwd)/$T
chrome() { # chrome ARGS... : headless, isolated profile, no network
	timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
		--no-first-run --disable-extensions --disable-background-networking \
		--user-data-dir="$ABS/profile" --hide-scrollbars "$@"
}

# a short SWE run that still has a dozen convergence windows
mkdir -p "$T/s"
cp samples/river/terrain.png "$T/s/"
sed -e 's/"max_steps": [0-9]*/"max_steps": 1800/' -e 's/"window": [0-9]*/"window": 150/' \
    -e 's/"solver": "lbm"/"solver": "swe"/' samples/river/scene.json > "$T/s/scene.json"
run 0 $BIN/wbake "$T/s/scene.json" -o "$T/o" --report --quiet --threads 2
check "report written" test -s "$T/o/report.html"
run 0 $BIN/wbake "$T/s/scene.json" -o "$T/o2" --report --quiet --threads 1
check "report identical for equal bakes" cmp -s "$T/o/report.html" "$T/o2/report.html"
for p in depth height flow material distance foam; do
	check "preview $p identical" cmp -s "$T/o/preview/$p.png" "$T/o2/preview/$p.png"
done
# wpreview draws the same pictures from the pack: with --scene over the
# terrain (and depth.png), without it on grey and without depth
run 0 $BIN/wpreview "$T/o/river.wtp" -o "$T/wp" --scene "$T/s/scene.json"
check "wpreview --scene writes depth.png" test -s "$T/wp/depth.png"
check "wpreview writes flow.png" test -s "$T/wp/flow.png"
run 0 $BIN/wpreview "$T/o/river.wtp" -o "$T/wp2"
check "wpreview without a scene: no depth.png" test ! -e "$T/wp2/depth.png"
check "wpreview without a scene: material.png" test -s "$T/wp2/material.png"
check "no absolute path in the report" sh -c "! grep -qF '$ABS' '$T/o/report.html'"
check "no script in the report" sh -c "! grep -qi '<script' '$T/o/report.html'"

# the page with a checker put in front of it: records errors, then on load
# writes its verdict into the title, which --dump-dom prints
cat > "$T/checker" <<'JS'
<script>
var E = [];
addEventListener("error", function (e) {
	E.push(e.message || (e.target && e.target.src) || "error");
}, true);
addEventListener("load", function () {
	var b = [], im = document.images;
	for (var i = 0; i < im.length; i++)
		if (!im[i].complete || !(im[i].naturalWidth > 0))
			b.push(im[i].getAttribute("src"));
	document.title = (b.length || E.length ? "VERDICT FAIL" : "VERDICT OK") +
		" images=" + im.length +
		" points=" + document.querySelectorAll("svg circle").length +
		" bad=" + b.join(",") + " errors=" + E.join(",");
});
</script>
JS
sed "/^<head>\$/r $T/checker" "$T/o/report.html" > "$T/o/check.html"
chrome --enable-logging=stderr --v=0 --virtual-time-budget=10000 \
	--dump-dom "file://$ABS/o/check.html" > "$T/dom" 2> "$T/log"
verdict=$(sed -n 's|.*<title>\(VERDICT[^<]*\)</title>.*|\1|p' "$T/dom")
echo "browser: $verdict"
case $verdict in
"VERDICT OK images=12 points="*) ;;
*) echo "FAIL: the browser's verdict: '${verdict:-none}' (want OK with 12 images)"
   tail -5 "$T/log"; fails=$((fails + 1)) ;;
esac
pts=$(echo "$verdict" | sed -n 's/.*points=\([0-9]*\).*/\1/p')
check "residual plot has points (${pts:-0})" test "${pts:-0}" -ge 5
if grep -q 'CONSOLE' "$T/log"; then
	echo "FAIL: the page wrote to the console:"; grep 'CONSOLE' "$T/log" | head -5
	fails=$((fails + 1))
fi

# a screenshot of the page, then its pixels read back in the browser
chrome --window-size=1200,1600 --screenshot="$ABS/shot.png" \
	"file://$ABS/o/report.html" > /dev/null 2>&1
check "screenshot written" test -s "$T/shot.png"
{
	printf '<!DOCTYPE html><html><head><title>none</title></head><body><img id="i" src="data:image/png;base64,'
	base64 -w0 "$T/shot.png"
	printf '"><script>addEventListener("load",function(){var i=document.getElementById("i"),c=document.createElement("canvas");c.width=i.naturalWidth;c.height=i.naturalHeight;var x=c.getContext("2d");x.drawImage(i,0,0);var d=x.getImageData(0,0,c.width,c.height).data,s={},n=0,dark=0;for(var k=0;k<d.length;k+=4){var q=(d[k]>>3)+"."+(d[k+1]>>3)+"."+(d[k+2]>>3);if(!s[q]){s[q]=1;n++}if(d[k]+d[k+1]+d[k+2]<300)dark++}document.title="PIXELS w="+c.width+" colours="+n+" dark="+dark})</script></body></html>'
} > "$T/px.html"
chrome --virtual-time-budget=10000 --dump-dom "file://$ABS/px.html" > "$T/pxdom" 2>/dev/null
px=$(sed -n 's|.*<title>\(PIXELS[^<]*\)</title>.*|\1|p' "$T/pxdom")
echo "screenshot: $px"
colours=$(echo "$px" | sed -n 's/.*colours=\([0-9]*\).*/\1/p')
dark=$(echo "$px" | sed -n 's/.*dark=\([0-9]*\).*/\1/p')
check "screenshot not blank (${colours:-0} colours)" test "${colours:-0}" -ge 100
check "screenshot has text (${dark:-0} dark pixels)" test "${dark:-0}" -ge 2000
finish
