#!/usr/bin/env bash
# life-plugin.sh — kernel records must not outlive their module (tests/progs/l-plugin.cu).
# Plugin A (pkA(int *x, int a)) is dlopened, run until its steps are replayed as a graph, and
# dlclosed; plugin B (pkB(int a, int *x)) is loaded at the same address, so its host stub has
# A's address (the program fails unless it does), and run; then A again. With the library the
# output must be identical, under three seeds, and each plugin must be learnt afresh: three
# kernel records, three graphs, nothing demoted. A library that kept A's record under the stub's
# address replays A's graph with B's arguments (an earlier version of the library did, and crashed).
. "$(dirname "$0")/lib.sh"
case "${AG_SAN_PRELOAD:-}" in
*libtsan*)
  # nvcc's registration code calls atexit(), which binds to ThreadSanitizer's interceptor: the
  # handler then runs at exit, after dlclose unmapped it (the program dies without the library).
  ag_skip "skipped under ThreadSanitizer: its atexit interceptor outlives a dlclosed plugin" ;;
esac
for p in l-plugin-a.so l-plugin-b.so; do
  [ -f "$BUILD/tests/plugins/$p" ] || ag_skip "skipped: $BUILD/tests/plugins/$p is not built"
done
# Whether B lands at A's address is the loader's doing: a thread that maps memory meanwhile (the
# sanitizers' and the library's) can take the place. A run that fails only for that is run again,
# up to three times in all.
if [ -z "${AG_LIFE_PLUGIN_TRY:-}" ]; then
  for try in 1 2 3; do
    mkdir -p "$AG_TMP/try$try"
    AG_LIFE_PLUGIN_TRY=$try AG_TMP=$AG_TMP/try$try bash "$0" >"$AG_TMP/try$try.log" 2>&1
    rc=$?
    cat "$AG_TMP/try$try.log"
    [ $rc != 0 ] && grep -q "the plugins' stubs are not at one address" "$AG_TMP/try$try.log" || exit $rc
    echo "(the stubs were not at one address: once more)"
  done
  exit 1
fi
expect() {
  ag_expect "$AG_STATS" "graphs == 3" "st['kernels'] == 3" "demotions == 0" "replayed >= 48" \
    "fb['graph_error'] == 0" "st['forgotten']['kernels'] >= 2" "st['forgotten']['graphs'] >= 2"
}
d=$AG_TMP/l-plugin
SIM_SEED=1 AG_EXPECT_REPLAY=1 ag_compare_prog l-plugin -- launch copy
expect
grep -q '^stubs of pkA, pkB, pkA at one address: yes$' "$d/plain1.out" ||
  ag_fail "the plugins' stubs were not at one address"
for seed in 2 3; do
  SIM_SEED=$seed ag_run "$d/plain-seed$seed" env LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/l-plugin"
  ag_same "$d/plain1" "$d/plain-seed$seed"
  SIM_SEED=$seed AG_EXPECT_REPLAY=1 ag_rerun l-plugin "seed$seed" -- launch copy
  expect
done
