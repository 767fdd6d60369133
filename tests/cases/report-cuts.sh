#!/usr/bin/env bash
# report-cuts.sh — the calls that end a sequence early, by name and count, in the statistics
# JSON, the dump, and the text and HTML reports (tests/progs/e-cut.cu: a step of two phases of 40
# launches whose second phase, learned whole in the first WARM steps, is cut after K launches by
# cudaMemcpyAsync + cudaStreamSynchronize in every later step). With AUTOGRAPH_MIN_SEQ=40 the
# counts are exact: one cut, of sequence 2 (40 launches) after K launches, STEPS - WARM times;
# phase A (sequence 1) replayed from step 2 on (AUTOGRAPH_REPEATS=1). Two settings of K/STEPS/WARM show the numbers
# follow the program, and a run with no mid-step copy shows no cut at all. The HTML page, loaded
# in headless Chromium, draws the repeated step as three runs (40 replayed, K cut, 40 - K passed
# through) with one cut mark naming the calls.
. "$(dirname "$0")/lib.sh"
ag_need e-cut
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
# One graph launch per replay (AUTOGRAPH_CHUNK_US=0): the runs below are whole sequences. The hold
# bound raised to 1 s: on a loaded machine or under a sanitizer a held launch may wait past the
# default (1 ms), which splits that step's run, and the page's strip counts identical steps.
export AUTOGRAPH_MIN_SEQ=40 AUTOGRAPH_CHUNK_US=0 AUTOGRAPH_HOLD_US=1000000
rep=$AG_ROOT/tools/autograph-report

# check K STEPS WARM — one run with statistics and dump; checks both and the text report.
check() {
  local k=$1 steps=$2 warm=$3 d=$AG_TMP/dump-$1-$2-$3.json
  AG_EXPECT_REPLAY=1 ag_compare_prog e-cut "$k" "$steps" "$warm"
  local cuts=$((steps - warm)) replayed=$((40 * (steps - 1) + 40 * (warm - 1)))
  local want="[{'sequence': 2, 'length': 40, 'after': $k, 'calls': ['cudaMemcpyAsync', 'cudaStreamSynchronize'], 'count': $cuts, 'launches': $((k * cuts))}]"
  [ "$cuts" = 0 ] && want="[]"
  ag_expect "$AG_STATS" "st['cuts'] == $want" "st['cuts_omitted'] == 0" \
    "fb['flushed'] == $((k * cuts))" "replayed == $replayed" "sequences == 2"
  AUTOGRAPH_DUMP=$d AG_EXPECT_REPLAY=1 ag_rerun e-cut dump "$k" "$steps" "$warm"
  local step="[(1, 40, 'replayed'), (2, $k, 'cut'), (None, $((40 - k)), 'passed')]"
  [ "$cuts" = 0 ] && step="[(1, 40, 'replayed'), (2, 40, 'replayed')]"
  dump_check "$d" "totals['cuts'] == $want" \
    "[(r['sequence'], r['launches'], r['outcome']) for r in runs][-len($step):] == $step" \
    "d['runs_total'] == len(runs)"
  "$rep" "$d" >"$AG_TMP/text" || ag_fail "autograph-report failed on $d"
  if [ "$cuts" != 0 ]; then
    grep -qxF "  cudaMemcpyAsync + cudaStreamSynchronize after $k of 40 launches of sequence 2, $cuts times ($((k * cuts)) launches passed through)" "$AG_TMP/text" ||
      { cat "$AG_TMP/text"; ag_fail "the text report does not name the cut"; }
    grep -qE "^ +$k launches cut +\(sequence 2\), ended by cudaMemcpyAsync \+ cudaStreamSynchronize$" "$AG_TMP/text" ||
      { cat "$AG_TMP/text"; ag_fail "the text report's repeated step lacks the cut run"; }
  else
    grep -qxF "  (none)" "$AG_TMP/text" || ag_fail "a run without cuts reports some"
  fi
  echo "ok: K=$k STEPS=$steps WARM=$warm: $cuts cuts after $k launches in statistics, dump and text"
}
. "$(dirname "$0")/dump-schema.sh"
check 15 20 3
check 7 12 4
check 15 8 8

# The HTML page of the first run: the strip of the repeated step, in headless Chromium.
d=$AG_TMP/dump-15-20-3.json h=$AG_TMP/step.html
"$rep" --html "$h" "$d" >/dev/null || ag_fail "--html failed"
grep -q 'id="plot-step"' "$h" || ag_fail "no strip in the page"
chrome=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chrome" ] || ag_skip "skipped: chromium is not installed (tools/setup --test installs it)"
HOME=$AG_TMP timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$AG_TMP/profile" --dump-dom "file://$h" >"$AG_TMP/step.dom" 2>"$AG_TMP/chrome.log" ||
  { tail -5 "$AG_TMP/chrome.log"; ag_fail "chromium failed"; }
python3 - "$AG_TMP/step.dom" <<'PY' || ag_fail "the rendered strip is not as expected"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
title = re.search(r"<title>([^<]*)</title>", dom).group(1)
assert title == "ok", "the page's self-check says %r" % title
svg = re.search(r'<svg id="plot-step".*?</svg>', dom, re.S).group(0)
runs = re.findall(r'<rect class="run run-(\w+)" data-launches="(\d+)"', svg)
assert runs == [("replayed", "40"), ("cut", "15"), ("passed", "25")], runs
marks = re.findall(r'<g class="cut-mark">.*?<text[^>]*>([^<]*)</text>', svg, re.S)
assert marks == ["cudaMemcpyAsync + cudaStreamSynchronize after 15 launches of sequence 2"], marks
assert 'data-repeats="17"' in svg, "the step should repeat 17 times in a row"
rows = re.findall(r'<tr class="cut" title="([^"]*)"', dom)
assert rows == ["cudaMemcpyAsync + cudaStreamSynchronize after 15 of 40 launches of sequence 2, 17 times"], rows
print("ok: the strip shows 40 replayed, 15 cut, 25 passed through, one cut mark; the cuts table one row")
PY
