# example.sh — sourced by the tests/cases/torch-sim-ex-*.sh cases (after lib.sh and sim-env.sh):
# torch_example NAME STEPS CPU ARGS… runs examples/NAME.py with --device cuda on the simulator
# (real PyTorch, the PyPI CUDA wheel) at the small size ARGS gives, and fails the case unless
#   - with the library (LD_PRELOAD, another simulator seed) it prints the same output as without,
#     bit for bit (checksum included), timing lines aside;
#   - when CPU is 1, its `value` equals CPU PyTorch's within relative 1e-6 (measured: 5e-8 and
#     less; an example drawing the device's random numbers has no CPU counterpart);
#   - through the launcher with one timed step instead of STEPS, the launches of the extra steps
#     were at least 95% replayed from graphs (the share is printed).
# The runs go two at a time (independent processes; CI has two cores): the startup of PyTorch is
# most of each. On a loaded machine the simulated Python spends more than the default
# AUTOGRAPH_HOLD_US (1 ms) between some launches, so the library would submit held launches early
# (hold_timeout fallbacks) and replay less; the runs with the library therefore allow 200 ms: the
# examples never wait for the device without calling CUDA, the case the bound is for, and the
# bound changes only when held launches are submitted, never what runs.
export AUTOGRAPH_HOLD_US=200000

torch_example() {
  local name=$1 n=$2 with_cpu=$3 d=$AG_TMP
  shift 3
  local script=$AG_ROOT/examples/$name.py
  local args=(--device cuda --warmup 2 --threads 1 "$@")
  local cpu_args=("${args[@]}")
  cpu_args[1]=cpu
  ag_run "$d/$name.plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$script" "${args[@]}" --steps "$n" &
  ag_run "$d/$name.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$d/$name.long.json" \
    "$TORCH_SIM" "$PY" "$script" "${args[@]}" --steps "$n"
  wait
  ag_run "$d/$name.short" env SIM_SEED=3 "$AG_ROOT/tools/autograph" --lib "$AG_LIB" --stats="$d/$name.short.json" -- \
    "$TORCH_SIM" "$PY" "$script" "${args[@]}" --steps 1 &
  [ "$with_cpu" = 0 ] || ag_run "$d/$name.cpu" "$TORCH_SIM" "$PY" "$script" "${cpu_args[@]}" --steps "$n"
  wait
  for r in plain lib short; do
    [ "$(cat "$d/$name.$r.rc")" = 0 ] || { tail -n 30 "$d/$name.$r.err" >&2; ag_fail "$name ($r) exited $(cat "$d/$name.$r.rc")"; }
    grep -Ev '^(warmup_s|median_step_ms):' "$d/$name.$r.out" >"$d/$name.$r.cmp"
    grep -Eq '^checksum: [0-9a-f]{16}$' "$d/$name.$r.cmp" || ag_fail "$name ($r): no checksum line"
  done
  grep -q '^device: cuda ' "$d/$name.plain.cmp" || ag_fail "$name did not run on the device"
  if ! cmp -s "$d/$name.plain.cmp" "$d/$name.lib.cmp"; then
    diff -u "$d/$name.plain.cmp" "$d/$name.lib.cmp" >&2
    ag_fail "$name: the result differs with the library"
  fi
  if [ "$with_cpu" != 0 ]; then
    [ "$(cat "$d/$name.cpu.rc")" = 0 ] || { tail -n 30 "$d/$name.cpu.err" >&2; ag_fail "$name on the CPU exited $(cat "$d/$name.cpu.rc")"; }
    python3 - "$d/$name.plain.out" "$d/$name.cpu.out" <<'PY' || ag_fail "$name: the device's result is not the CPU's"
import sys
dev, cpu = (float(next(l.split()[1] for l in open(p) if l.startswith("value:"))) for p in sys.argv[1:])
print(f"value: device {dev:.9e}, cpu {cpu:.9e}")
sys.exit(0 if abs(dev - cpu) <= 1e-6 * max(1.0, abs(cpu)) else 1)
PY
  fi
  ag_expect "$d/$name.long.json" "replayed > 0" "graph_launches > 0"
  python3 - "$name" "$d/$name.short.json" "$d/$name.long.json" <<'PY' || ag_fail "$name: the steady state is not replayed"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[2:])
launches, replayed = b["launches"] - a["launches"], b["replayed"] - a["replayed"]
share = replayed / launches if launches else 0
print(f"{sys.argv[1]}: the extra steps made {launches} launches, {replayed} replayed ({share:.1%})")
sys.exit(0 if launches > 0 and share >= 0.95 else 1)
PY
  # What a fusion of elementwise chains would replace (src/chain.h): a measure, not a check.
  python3 - "$name" "$d/$name.long.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[2]))
ew, ch, r = st.get("elementwise", 0), st.get("chained", 0), st["replayed"]
print(f"{sys.argv[1]}: of {r} replayed launches, {ew} elementwise ({ew / r if r else 0:.1%}), "
      f"{ch} of them in chains ({ch / ew if ew else 0:.1%})")
PY
  echo "$name: $(grep '^checksum' "$d/$name.plain.out") with and without the library"
}
