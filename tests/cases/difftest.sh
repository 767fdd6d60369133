#!/usr/bin/env bash
# difftest.sh — differential testing on generated programs (tests/difftest, docs/difftest.md).
#
# Runs tests/difftest/difftest.py on the programs `make` generated from tests/difftest/ci-seeds
# (random, race-free CUDA programs: streams of every kind, events, syncs and queries, copies,
# memsets, host functions, threads, the program's own capture and graph, cudaMallocAsync,
# changing scalars, pointers and shapes, 4 KiB parameter structs, plus the hostile moves named
# in each entry) and on the checked-in regression programs tests/difftest/regress/CLASS-SEED.cu.
# Each program's plain output must be identical under SIM_SEED=1, 2, 3 (else the generator is
# wrong), and its output with the library identical under every configuration (AUTOGRAPH_*
# settings, another SIM_SEED, a graph-API fault); the statistics must match the program's
# launch count, and at least half of the programs must replay graphs (the library did work).
#
# DIFFTEST_HOSTILE gates the regression programs: a program CLASS-SEED runs only when CLASS is
# in the list (default `all`: the library has a fix for every class; docs/difftest.md).
. "$(dirname "$0")/lib.sh"
ag_need
hostile=${DIFFTEST_HOSTILE:-all}
# Under the sanitizers (every run several times slower) two configurations instead of nine and
# no graph-API faults (engine-faults-* run those there), within the runner's time limit: the
# default settings, and another seed with every fusion and graphs from the first repeat. Under
# ThreadSanitizer, programs that dlclose a CUDA plugin are left out: nvcc's registration code
# calls atexit(), which binds to ThreadSanitizer's interceptor, and the handler then runs at exit
# after dlclose unmapped it (the program dies without the library too; life-plugin is skipped
# there for the same reason).
configs=()
no_plugins=0
case "${AG_SAN_PRELOAD:-}" in
"") ;;
*libtsan*) configs=(--configs default,seed11-fuse) no_plugins=1 ;;
*) configs=(--configs default,seed11-fuse) ;;
esac
uses_plugins() { grep -q 'libdt-plugin' "$1"; }
progs=()
for s in $(grep -v '^#' "$AG_ROOT/tests/difftest/ci-seeds"); do
  [ -x "$BUILD/tests/difftest/ci/$s" ] || ag_skip "skipped: $BUILD/tests/difftest/ci/$s is not built"
  if [ $no_plugins = 1 ] && uses_plugins "$BUILD/tests/difftest/ci/$s.cu"; then
    echo "not run under ThreadSanitizer (dlcloses a plugin): $s"
    continue
  fi
  progs+=("$BUILD/tests/difftest/ci/$s")
done
for f in plugin-a plugin-b image; do
  [ -f "$BUILD/tests/difftest/libdt-$f.so" ] || ag_skip "skipped: $BUILD/tests/difftest/libdt-$f.so is not built"
done
gated=()
for src in "$AG_ROOT"/tests/difftest/regress/*.cu; do
  [ -f "$src" ] || continue
  name=$(basename "$src" .cu)
  class=${name%-*}
  case ",$hostile," in
    *",all,"* | *",$class,"*) ;;
    *) gated+=("$name"); continue ;;
  esac
  if [ $no_plugins = 1 ] && uses_plugins "$src"; then
    echo "not run under ThreadSanitizer (dlcloses a plugin): $name"
    continue
  fi
  [ -x "$BUILD/tests/difftest/regress/$name" ] || ag_skip "skipped: $BUILD/tests/difftest/regress/$name is not built"
  progs+=("$BUILD/tests/difftest/regress/$name")
done
[ ${#gated[@]} -gt 0 ] && echo "not run (DIFFTEST_HOSTILE=$hostile): ${gated[*]}"
export DT_TIMEOUT=${DT_TIMEOUT:-$AG_PROG_TIMEOUT}
python3 "$AG_ROOT/tests/difftest/difftest.py" --keep "$AG_TMP/difftest" --jobs 2 "${configs[@]}" \
  --require-replay 0.5 --prog "${progs[@]}" || ag_fail "differential test failed (see above)"
