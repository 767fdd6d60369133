# sim-env.sh — sourced by the tests/cases/torch-sim-* cases (after lib.sh): skips (exit 77,
# saying why) unless real PyTorch can run on the simulator here, and sets TORCH_SIM (the
# launcher) and PY (its python). Each run of PyTorch gets AG_PROG_TIMEOUT=240 s unless set: a
# run takes 10-30 s on a loaded two-core machine, most of it Python imports.
#
# Needs the torch environment of `tools/setup --torch` (BUILD/torch-venv) and the simulator. Not
# run under the sanitizer builds (AG_SAN_PRELOAD set): the PyPI wheel and CPython are not
# instrumented, so the sanitizers would check nothing there that the rest of the suite does not
# already check in the library and the simulator, while their runtimes in front of a 1 GB
# uninstrumented process multiply a run that already takes tens of seconds.
[ -z "${AG_SAN_PRELOAD:-}" ] || ag_skip "skipped under sanitizers: real PyTorch is not instrumented (see tests/torch/sim-env.sh)"
[ -f "$AG_LIB" ] || ag_skip "skipped: $AG_LIB is not built"
[ -x "$BUILD/torch-venv/bin/python" ] || ag_skip "skipped: no torch environment in $BUILD/torch-venv (run tools/setup --torch)"
[ -f "$AG_SIM/libtorchtwins.so" ] || ag_skip "skipped: the simulator ($AG_SIM) is not built"
TORCH_SIM=$AG_ROOT/tools/torch-sim
PY=python
export PYTHONDONTWRITEBYTECODE=1
# The wheel's libraries must come from the preload, not from the simulator folder on the path.
unset LD_LIBRARY_PATH
AG_PROG_TIMEOUT=${AG_PROG_TIMEOUT_TORCH:-240}

# torch_four_runs PREFIX LONG SHORT SCRIPT [ARG…] — the four runs of a training or inference script
# that the torch-sim cases compare, two at a time: PREFIX.plain (SIM_SEED=1, LONG steps, without
# the library), PREFIX.lib (SIM_SEED=2, LONG, with it, statistics in PREFIX.long.json),
# PREFIX.short (SIM_SEED=3, SHORT, with it, PREFIX.short.json) and PREFIX.cpu (LONG, `cpu`
# appended: the script runs on the CPU). The step count follows the script's own arguments. Fails
# when a run exits non-zero (showing its last lines) or when plain and lib print different output.
torch_four_runs() {
  local pre=$1 long=$2 short=$3 r
  shift 3
  echo "$short" >"$pre.short.steps"
  ag_run "$pre.plain" env SIM_SEED=1 "$TORCH_SIM" "$PY" "$@" "$long" &
  ag_run "$pre.lib" env SIM_SEED=2 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$pre.long.json" "$TORCH_SIM" "$PY" "$@" "$long"
  wait
  ag_run "$pre.short" env SIM_SEED=3 LD_PRELOAD="$AG_LIB" AUTOGRAPH_STATS="$pre.short.json" "$TORCH_SIM" "$PY" "$@" "$short" &
  ag_run "$pre.cpu" "$TORCH_SIM" "$PY" "$@" "$long" cpu
  wait
  for r in plain lib short cpu; do
    [ "$(cat "$pre.$r.rc")" = 0 ] || { tail -n 30 "$pre.$r.err" >&2; ag_fail "${pre##*/} ($r) exited $(cat "$pre.$r.rc")"; }
  done
  cmp -s "$pre.plain.out" "$pre.lib.out" ||
    { diff -u "$pre.plain.out" "$pre.lib.out" >&2; ag_fail "${pre##*/}: the result differs with the library"; }
}

# torch_steady PREFIX — the steady state of torch_four_runs' PREFIX: the launches that the long
# run with the library made beyond the short one's (the steps past the short run's), the share of
# them replayed, and of them the elementwise ones and those in chains (what a fusion of chains
# would replace). Prints them; fails when no launch was made or less than 90% were replayed.
# A difference of two runs, so it is exact only where both end alike: what is held at exit is
# submitted as it is, and a sequence need not end where a step does (one may span two steps), so
# each run's last few launches are replayed or not by where it stops in its sequences; a short
# run that stops in a step whose sequences are still being learned adds that step's launches,
# replayed in the long run, to the difference. The share is therefore accurate to about one
# sequence's launches, and can come out a little above 100%.
torch_steady() {
  python3 - "${1##*/}" "$1.short.json" "$1.long.json" "$(cat "$1.short.steps")" <<'PY' || ag_fail "${1##*/}: the steady state is not replayed"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[2:4])
first = sys.argv[4]
launches, replayed = b["launches"] - a["launches"], b["replayed"] - a["replayed"]
ew, ch = b["elementwise"] - a["elementwise"], b["chained"] - a["chained"]
share = replayed / launches if launches else 0
print(f"{sys.argv[1]}: the steps beyond the first {first} made {launches} launches, {replayed} replayed ({share:.1%}); "
      f"of these, {ew} elementwise, {ch} in chains ({ch / ew if ew else 0:.1%})")
if replayed > launches:  # not a failure: see above (a hold of the short run that timed out does the same)
    print(f"{sys.argv[1]}: more replayed than launched: the runs stop at different points of their sequences, "
          f"or a hold of the short run reached its bound ({a.get('hold_timeouts', 0)} did)")
sys.exit(0 if launches > 0 and share >= 0.90 else 1)
PY
}

# fchain_run DIR TAG SEED TABLE CMD… — CMD (a python script and its arguments) under the library
# with AUTOGRAPH_FUSE=chains and the calibration TABLE, the kernel cache in DIR/cache, statistics
# in DIR/TAG.json; fails the case unless it exits 0 printing what DIR/plain.out holds (the run
# without the library).
fchain_run() {
  local d=$1 tag=$2 seed=$3 table=$4
  shift 4
  ag_run "$d/$tag" env SIM_SEED="$seed" LD_PRELOAD="$AG_LIB" AUTOGRAPH_FUSE=chains AUTOGRAPH_FUSE_TABLES="$table" \
    AUTOGRAPH_CACHE_DIR="$d/cache" SIM_NVRTC_CACHE="$d/sim-nvrtc" AUTOGRAPH_STATS="$d/$tag.json" \
    AUTOGRAPH_HOLD_US=200000 "$TORCH_SIM" "$PY" "$@"
  [ "$(cat "$d/$tag.rc")" = 0 ] || { tail -n 20 "$d/$tag.err" >&2; ag_fail "${1##*/} ($tag) exited $(cat "$d/$tag.rc")"; }
  cmp -s "$d/plain.out" "$d/$tag.out" || { diff -u "$d/plain.out" "$d/$tag.out" >&2; ag_fail "$tag: the results differ with the library"; }
  echo "$tag: identical with the library"
}

# fchain_summary JSON — one line of a run's statistics of chains and the run-time compiler.
fchain_summary() {
  python3 - "$1" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
ch, fu = st.get("chained", 0), st.get("chained_fused", 0)
print(f"  launches {st['launches']}, replayed {st['replayed']}, elementwise {st.get('elementwise', 0)}, "
      f"chained {ch}, fused by generated kernels {fu} ({fu / ch if ch else 0:.1%}) in "
      f"{st.get('fused_by_pattern', {}).get('elementwise_chain', 0)} runs; fills fused {st.get('fills_fused', 0)} in "
      f"{st.get('fused_by_pattern', {}).get('fill_group', 0)} groups; jit: {st.get('jit', {})}")
PY
}
