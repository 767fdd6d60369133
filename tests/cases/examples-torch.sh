#!/usr/bin/env bash
# examples-torch.sh — every PyTorch example (examples/*.py) runs briefly on the CPU, without and
# with the library preloaded, and prints the same result.
#
# CPU PyTorch makes no CUDA call, so this proves the library harmless inside a real PyTorch
# process: it loads, intercepts dlsym for the whole interpreter, writes its statistics at exit
# (launches == 0), logs nothing, and the examples' deterministic checksums are unchanged. Each
# example runs with a few steps at small sizes; the timing lines are left out of the comparison.
#
# The interpreter is $AG_PYTHON when set (it must have torch); otherwise the first of python3 on
# PATH, /usr/bin/python3 (where Debian's python3-torch installs) and python that imports torch.
# Without one the case is skipped, saying so.
. "$(dirname "$0")/lib.sh"
[ -f "$AG_LIB" ] || ag_skip "skipped: $AG_LIB is not built"
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ left in the source tree
# Under ASan: no leak check at the interpreter's exit. LeakSanitizer stops every thread to scan
# memory, and with PyTorch's thread pools winding down at exit its tracer can crash ("Tracer
# caught signal 11", seen on a loaded machine), failing the run; the leaks it would report in
# this process are CPython's and PyTorch's own (suppressed in tests/sanitizers/lsan.supp), while
# the library's allocations are leak-checked in every other case.
[ -z "${ASAN_OPTIONS:-}" ] || export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"

has_torch() { "$1" -c 'import torch' >/dev/null 2>&1; }
if [ -n "${AG_PYTHON:-}" ]; then
  has_torch "$AG_PYTHON" || ag_fail "AG_PYTHON=$AG_PYTHON cannot import torch"
  py=$AG_PYTHON
else
  py=
  for c in python3 /usr/bin/python3 python; do
    command -v "$c" >/dev/null 2>&1 && has_torch "$c" && { py=$c; break; }
  done
  [ -n "$py" ] || ag_skip "skipped: no Python with torch (install python3-torch, or set AG_PYTHON)"
fi
echo "python: $(command -v "$py") (torch $("$py" -c 'import torch; print(torch.__version__)'))"

# Small sizes: a few seconds per run. One CPU thread, set explicitly, so that both runs use the
# same reduction order whatever the machine (and no spinning worker threads on a busy one).
common=(--device cpu --steps 3 --warmup 2 --threads 1)
declare -A size=(
  [mlp]="--batch-size 16 --width 64"
  [dropout_lr]="--batch-size 16 --width 64"
  [gpt_decode]="--tokens 4 --prompt 4 --context 16 --layers 2 --dim 32 --vocab 64"
  [resnet_small_batch]="--batch-size 2 --image-size 16 --width 8"
  [resnet_large_batch]="--batch-size 8 --image-size 16 --width 8"
)
d=$AG_TMP
n=0
for script in "$AG_ROOT"/examples/*.py; do
  name=$(basename "$script" .py)
  [ -n "${size[$name]+x}" ] || continue # modules (common.py, resnet.py), not examples
  # shellcheck disable=SC2206
  args=("${common[@]}" ${size[$name]})
  ag_run "$d/$name.plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$py" "$script" "${args[@]}"
  rm -f "$d/$name.json"
  ag_run "$d/$name.lib" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/$name.json" \
    "$py" "$script" "${args[@]}"
  for r in plain lib; do
    [ "$(cat "$d/$name.$r.rc")" = 0 ] || { tail -n 20 "$d/$name.$r.err" >&2; ag_fail "$name ($r) exited $(cat "$d/$name.$r.rc")"; }
    grep -Ev '^(warmup_s|median_step_ms):' "$d/$name.$r.out" >"$d/$name.$r.cmp"
    grep -Eq '^checksum: [0-9a-f]{16}$' "$d/$name.$r.cmp" || ag_fail "$name ($r): no checksum line"
  done
  if ! cmp -s "$d/$name.plain.cmp" "$d/$name.lib.cmp"; then
    diff -u "$d/$name.plain.cmp" "$d/$name.lib.cmp" >&2
    ag_fail "$name: the result differs with the library preloaded"
  fi
  if grep -a '^autograph: ' "$d/$name.lib.err" >&2; then
    ag_fail "$name: the library logged in a process that made no CUDA call"
  fi
  [ -s "$d/$name.json" ] || ag_fail "$name: the library wrote no statistics ($d/$name.json)"
  ag_expect "$d/$name.json" "launches == 0" "graphs == 0"
  echo "$name: $(grep '^checksum' "$d/$name.plain.out") identical, median_step_ms" \
    "$(sed -n 's/^median_step_ms: //p' "$d/$name.plain.out") without," \
    "$(sed -n 's/^median_step_ms: //p' "$d/$name.lib.out") with the library"
  n=$((n + 1))
done
[ "$n" = 5 ] || ag_fail "expected 5 examples, ran $n"
# --profile (examples/common.py): the same result, and a Chrome trace with one ProfilerStep# range
# per timed step, which autograph-predict reads.
# shellcheck disable=SC2206
args=("${common[@]}" ${size[mlp]})
ag_run "$d/mlp.prof" env LD_PRELOAD="$AG_PRELOAD_BASE" "$py" "$AG_ROOT/examples/mlp.py" "${args[@]}" --profile "$d/mlp.trace.json"
[ "$(cat "$d/mlp.prof.rc")" = 0 ] || { tail -n 20 "$d/mlp.prof.err" >&2; ag_fail "mlp --profile exited $(cat "$d/mlp.prof.rc")"; }
grep -Ev '^(warmup_s|median_step_ms):' "$d/mlp.prof.out" | cmp -s - "$d/mlp.plain.cmp" || ag_fail "mlp --profile: another result"
python3 - "$d/mlp.trace.json" <<'PY' || ag_fail "mlp --profile: not the trace expected"
import json, sys
t = json.load(open(sys.argv[1]))
# Kineto's format (an object with traceEvents), or a bare list of events from a PyTorch built
# without Kineto (Debian's python3-torch).
ev = t["traceEvents"] if isinstance(t, dict) else t
steps = sorted(e["name"] for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"))
ops = sum(1 for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("aten::"))
print(f"mlp --profile: {steps}, {ops} operator rows")
sys.exit(0 if steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"] and ops > 0 else 1)
PY
echo "examples-torch: all $n examples unchanged with the library"
