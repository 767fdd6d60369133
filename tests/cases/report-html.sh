#!/usr/bin/env bash
# report-html.sh — tools/autograph-report --html: the page is self-contained (no URL it could
# fetch, no external script, style or image) and escapes what the dump says; loaded in headless
# Chromium it renders: its own inline check sets the title to "ok" (both SVG plots drawn, the
# tables present, no script error), the DOM holds the expected elements (a bar per state, the
# cumulative curve, one collapsible block per sequence with its kernels, the fallback rows) and no
# console error is logged. A page with a plot removed must fail that check, so the check checks.
# Skips (77) when chromium is not installed; the static checks run first either way.
. "$(dirname "$0")/lib.sh"
rep=$AG_ROOT/tools/autograph-report
fx=$AG_ROOT/tests/fixtures/report
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
d=$AG_TMP/html
mkdir -p "$d"

# A dump whose names would break a page that did not escape them.
python3 - "$fx/basic.json" "$d/evil.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["process"]["argv"] = ["<script>document.title='pwned'</script>", "&amp;"]
d["sequences"][0]["kernels"][0]["name"] = d["sequences"][0]["kernels"][0]["demangled"] = \
    "k<\"x\">&'</title><img src=http://example.invalid/x>"
d["sequences"][0]["reason"] = "<b>bold</b>"
json.dump(d, open(sys.argv[2], "w"))
PY
for n in basic truncated empty evil; do
  f=$fx/$n.json; [ $n = evil ] && f=$d/evil.json
  "$rep" --top 0 --html "$d/$n.html" "$f" >"$d/$n.out" 2>"$d/$n.err" ||
    ag_fail "$n: --html failed: $(cat "$d/$n.err")"
  [ -s "$d/$n.html" ] || ag_fail "$n: no page written"
  # Self-contained: the only URL is the SVG namespace; nothing is loaded from anywhere.
  python3 - "$d/$n.html" <<'PY' || ag_fail "$n: the page is not self-contained"
import re, sys
from html.parser import HTMLParser
bad = []
class P(HTMLParser):
    def handle_starttag(self, tag, attrs):
        if tag in ("link", "iframe", "object", "embed", "img", "image", "use", "a"):
            bad.append("<%s>" % tag)
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "srcset", "action") or \
               (k == "xmlns" and v != "http://www.w3.org/2000/svg") or k.startswith("on"):
                bad.append("%s=%s" % (k, v))
        if tag == "script" and attrs:
            bad.append("<script %s>" % attrs)
    def handle_data(self, data):
        if self.lasttag in ("style", "script") and re.search(r"url\(|@import|https?:|fetch|XMLHttp", data):
            bad.append("reference in <%s>" % self.lasttag)
P().feed(open(sys.argv[1], encoding="utf-8").read())
sys.exit("external references: %s" % sorted(set(bad)) if bad else 0)
PY
done
grep -q '&lt;script&gt;' "$d/evil.html" && grep -q '&lt;b&gt;bold' "$d/evil.html" ||
  ag_fail "dump text was not escaped"
echo "ok: 4 pages written, self-contained, dump text escaped"

chrome=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chrome" ] || ag_skip "skipped: chromium is not installed (tools/setup --test installs it)"

# render NAME PAGE — the DOM of PAGE after its scripts ran, in $d/NAME.dom; console in NAME.log.
render() {
  HOME=$d timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$d/profile-$1" --enable-logging=stderr --v=0 \
    --dump-dom "file://$2" >"$d/$1.dom" 2>"$d/$1.log"
  local rc=$?
  [ $rc = 0 ] && [ -s "$d/$1.dom" ] || { tail -5 "$d/$1.log" >&2; ag_fail "$1: chromium exit status $rc"; }
}
# count NAME REGEX — occurrences of REGEX in NAME's DOM.
count() {
  grep -oE -- "$2" "$d/$1.dom" | wc -l
}
for n in basic truncated empty evil; do
  render $n "$d/$n.html"
  title=$(grep -oE '<title>[^<]*</title>' "$d/$n.dom" | head -1)
  [ "$title" = "<title>ok</title>" ] || ag_fail "$n: the page's self-check says $title"
  ! grep -E 'Uncaught|CONSOLE.*(error|ERROR)' "$d/$n.log" >&2 || ag_fail "$n: console errors"
  [ "$(count $n '<svg id="plot-states"')" = 1 ] && [ "$(count $n '<svg id="plot-coverage"')" = 1 ] ||
    ag_fail "$n: the plots are missing from the DOM"
done
echo "ok: 4 pages render in headless chromium and pass their own check"

# Expected elements of basic.json: bars for 5 states and the launches outside sequences, 3 of
# them with replays; the curve; 6 sequences with 22 kernel rows; 6 fallback reasons.
[ "$(count basic 'class="bar"')" = 6 ] || ag_fail "basic: $(count basic 'class="bar"') bars, expected 6"
[ "$(count basic 'class="bar-replayed"')" = 3 ] || ag_fail "basic: replayed bars"
[ "$(count basic '<polyline class="curve"')" = 1 ] || ag_fail "basic: no cumulative curve"
[ "$(count basic '<details class="seq">')" = 6 ] || ag_fail "basic: $(count basic '<details class="seq">') sequences"
[ "$(count basic '<tr><td class="n">[0-9]+</td><td><code')" = 22 ] || ag_fail "basic: kernel rows"
grep -q 'vector_add_k(float\*, float\*, float\*, int)' "$d/basic.dom" || ag_fail "basic: names not demangled"
fbrows=$(python3 - "$d/basic.dom" <<'PY'
import re, sys
t = re.search(r'<table id="fallbacks">(.*?)</table>', open(sys.argv[1]).read(), re.S).group(1)
print(" ".join(re.findall(r'<tr><td>([a-z_]+)</td>', t)))
PY
)
[ "$fbrows" = "flushed demoted mismatch denied layout_unknown capturing" ] || ag_fail "basic: fallback rows '$fbrows'"
# The sequence blocks are in saving order and open on demand.
seqs=$(grep -oE '<summary>sequence [0-9]+' "$d/basic.dom" | awk '{ printf "%s ", $2 }')
[ "$seqs" = "2 1 6 3 4 5 " ] || ag_fail "basic: sequence order '$seqs'"
[ "$(count empty 'class="bar"')" = 0 ] && grep -q 'no estimated saving' "$d/empty.dom" ||
  ag_fail "empty: unexpected plot content"
echo "ok: the DOM holds the expected bars, curve, sequences, kernels and fallbacks"

# Negative control: the self-check notices a missing plot.
python3 - "$d/basic.html" "$d/broken.html" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(re.sub(r'<svg id="plot-coverage".*?</svg>', "", page, flags=re.S))
PY
render broken "$d/broken.html"
grep -q '<title>error: missing plot-coverage</title>' "$d/broken.dom" ||
  ag_fail "the self-check did not notice a missing plot: $(grep -o '<title>[^<]*</title>' "$d/broken.dom" | head -1)"
echo "ok: the self-check fails a page without its plot"

# And it draws: a screenshot is a non-trivial PNG.
HOME=$d timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$d/profile-shot" --window-size=1000,1400 --screenshot="$d/basic.png" \
  "file://$d/basic.html" >/dev/null 2>&1 || ag_fail "screenshot failed"
[ "$(head -c 4 "$d/basic.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ] &&
  [ "$(stat -c %s "$d/basic.png")" -gt 20000 ] || ag_fail "screenshot is not a plausible PNG"
echo "ok: screenshot $(stat -c %s "$d/basic.png") bytes"
echo "report-html: ok"
