#!/usr/bin/env bash
# examples-launch-loop.sh — the CUDA C example (examples/launch_loop.cu) on the simulator,
# without and with the library: the same checksum, and most launches served by graph replays
# (its steps repeat, with one argument changing every step, so replays need node updates).
. "$(dirname "$0")/lib.sh"
ag_need
prog=$BUILD/examples/launch_loop
[ -x "$prog" ] || ag_skip "skipped: $prog is not built"
d=$AG_TMP
args=(--steps 40 --kernels 12 --n 1024 --warmup 3)
ag_run "$d/plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" "${args[@]}"
ag_run "$d/plain2" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" "${args[@]}"
ag_run "$d/lib" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/stats.json" \
  "$prog" "${args[@]}"
for r in plain plain2 lib; do
  [ "$(cat "$d/$r.rc")" = 0 ] || { tail -n 20 "$d/$r.err" >&2; ag_fail "$r run exited $(cat "$d/$r.rc")"; }
  grep -Eq '^checksum: [0-9a-f]{16}$' "$d/$r.out" || ag_fail "$r run printed no checksum"
  grep -v '^median_step_us:' "$d/$r.out" >"$d/$r.cmp"
done
cmp -s "$d/plain.cmp" "$d/plain2.cmp" || ag_fail "two runs without the library differ"
if ! cmp -s "$d/plain.cmp" "$d/lib.cmp"; then
  diff -u "$d/plain.cmp" "$d/lib.cmp" >&2
  ag_fail "the result differs with the library"
fi
# 43 steps x 12 launches; each step's launches repeat with one argument changed every time.
ag_expect "$d/stats.json" "launches == 43 * 12" "replayed > 0" "replayed >= 0.8 * launches" \
  "updates > 0" "passthrough + replayed == launches"
cat "$d/lib.out"
echo "examples-launch-loop: identical checksum, launches replayed"
