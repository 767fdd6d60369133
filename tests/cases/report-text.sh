#!/usr/bin/env bash
# report-text.sh — tools/autograph-report's text report on the hand-written dumps in
# tests/fixtures/report: the totals and coverage figures appear, sequences are sorted by estimated
# saving (ties by id), fallback reasons are sorted by count with their advice, the verdict says
# what launch counts cannot show, C++ names are demangled (by the dump, or by c++filt when it is on
# PATH, else left mangled), and partial or truncated dumps and empty ones are reported sanely.
. "$(dirname "$0")/lib.sh"
rep=$AG_ROOT/tools/autograph-report
fx=$AG_ROOT/tests/fixtures/report
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
d=$AG_TMP/report
mkdir -p "$d"

# run NAME ARGS… — runs the report, which must succeed without a word on stderr.
run() {
  local n=$1; shift
  "$rep" "$@" >"$d/$n.out" 2>"$d/$n.err"
  local rc=$?
  [ $rc = 0 ] || { cat "$d/$n.err" >&2; ag_fail "$n: exit status $rc"; }
  [ ! -s "$d/$n.err" ] || ag_fail "$n: unexpected stderr: $(cat "$d/$n.err")"
}
# has NAME REGEX… — every extended regex matches a line of NAME's output.
has() {
  local n=$1 re; shift
  for re in "$@"; do
    grep -qE -- "$re" "$d/$n.out" || { cat "$d/$n.out" >&2; ag_fail "$n: no line matches '$re'"; }
  done
}
# section NAME HEADING — the lines after HEADING up to the next blank line.
section() {
  awk -v h="$2" 'index($0, h) == 1 { on = 1; next } on && /^$/ { exit } on' "$d/$1.out"
}

run basic --kernels "$fx/basic.json"
has basic '^autograph report: .*basic\.json \(pid 4242, written at exit\)$' \
  '^command: python3 train\.py --epochs 1$' '^CUDA: runtime 13000, driver 13000$' \
  '^options: AUTOGRAPH_DENY=nccl\*, AUTOGRAPH_REPEATS=2$' \
  '^Totals: 1000 launches, 644 replayed, 356 passed through; 4 graphs, 171 graph launches, 37 node updates; 6 sequences, 1 demoted, 1 evicted$' \
  '^Coverage: 64\.4% of launches replayed \(644 of 1000\)$' \
  '^ +runtime +700 +548 +78\.3%$' '^ +driver +250 +48 +19\.2%$' '^ +cudnn +50 +48 +96\.0%$' \
  '^ +2 +5 +50 +48 +graphed +- +720\.0 us$' '^ +3 +2 +40 +10 +demoted +replay did not pay +1\.5 us$' \
  '^ +6 +6 +20 +15 +evicted +cache full +90\.0 us$' \
  '^ +3 cudnn +sm80_xmma_fprop_implicit_gemm \[cudnnConvolutionForward\]$' \
  'scale_bf16\(void\*, float, void\*, int\)$' \
  '^Verdict: 64\.4% of 1000 launches were replayed from graphs, saving an estimated 1\.25 ms .*largest fallback is flushed \(150 launches\)\. .*cannot tell whether the program is launch-bound'
order=$(section basic "Sequences by estimated time saved" | awk '$1 ~ /^[0-9]+$/ && NF >= 7 { printf "%s ", $1 }')
[ "$order" = "2 1 6 3 4 5 " ] || ag_fail "sequences not sorted by saving, then id: '$order'"
fb=$(section basic "Fallbacks" | awk '{ printf "%s:%s ", $1, $2 }')
[ "$fb" = "flushed:150 demoted:60 mismatch:60 denied:48 layout_unknown:30 capturing:8 " ] ||
  ag_fail "fallbacks not sorted by count, then name: '$fb'"
# Concrete advice per reason.
has basic '^ +flushed +150 .*\.item\(\).*move it' '^ +mismatch +60 .*shapes .*change between steps' \
  '^ +denied +48 .*AUTOGRAPH_DENY' '^ +layout_unknown +30 .*driver >= 550 \(CUDA 12\.4' \
  '^ +capturing +8 .*captures this stream itself' '^ +demoted +60 .*replay did not pay'
echo "ok: totals, coverage by path, sorted sequences and fallbacks, advice, verdict"

# Demangling: c++filt when present; without it, the mangled name (the dump's own stays).
if command -v c++filt >/dev/null; then
  has basic '^ +0 runtime +vector_add_k\(float\*, float\*, float\*, int\)$' \
    'cutlass::Kernel<cutlass::gemm>\(cutlass::gemm::Params\)$'
  echo "ok: names demangled by c++filt"
fi
mkdir -p "$d/bin"
# The interpreter itself, not a wrapper script that needs PATH.
ln -sf "$(python3 -c 'import sys; print(sys.executable)')" "$d/bin/python3"
PATH=$d/bin "$rep" --kernels "$fx/basic.json" >"$d/nofilt.out" 2>"$d/nofilt.err" ||
  ag_fail "without c++filt: $(cat "$d/nofilt.err")"
has nofilt '^ +0 runtime +_Z12vector_add_kPfS_S_i$' 'scale_bf16\(void\*, float, void\*, int\)$'
echo "ok: without c++filt the mangled name is shown"

run top --top 2 "$fx/basic.json"
[ "$(section top "Sequences by" | grep -cE '^ +[0-9]+ +[0-9]+ ')" = 2 ] || ag_fail "--top 2 listed $(section top "Sequences by")"
has top '^  \.\.\. 4 more \(--top 0 lists all\)$'
run all --top 0 "$fx/basic.json"
[ "$(section all "Sequences by" | grep -cE '^ +[0-9]+ +[0-9]+ ')" = 6 ] || ag_fail "--top 0 did not list all"
echo "ok: --top"

run empty "$fx/empty.json"
has empty '^Coverage: - of launches replayed \(0 of 0\)$' '^  \(none\)$' '^Verdict: .*no kernel launches'
run trunc "$fx/truncated.json"
has trunc '^note: written at signal, before the program ended' \
  '^note: the dump is truncated \(sequences listed: 1, omitted: 40\)' \
  '^ +cooperative +995 .*cuLaunchKernelEx' '^ +graph_error +3 .*log' '^ +new_reason +2 +no advice known' \
  '^ +17 +4 +1001 +1000 +graphed +- +8\.00 ms$'
! grep -q attributes "$d/trunc.out" || ag_fail "a reason with no launches was listed"
echo "ok: empty, partial and truncated dumps"

# A reader that stops early is not an error.
"$rep" --top 0 --kernels "$fx/basic.json" 2>"$d/pipe.err" | head -1 >/dev/null
[ ! -s "$d/pipe.err" ] || ag_fail "closed pipe: $(cat "$d/pipe.err")"
echo "ok: closed pipe"
echo "report-text: ok"
