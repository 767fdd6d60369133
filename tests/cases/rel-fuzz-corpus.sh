#!/usr/bin/env bash
# rel-fuzz-corpus.sh — replays the committed fuzz inputs through every fuzz target without
# libFuzzer: tests/fuzz/corpus/NAME (seeds built from nvcc output and option strings) and
# tests/fuzz/regress/NAME (inputs that once found a bug), with the plain driver
# $BUILD/fuzz/replay-NAME (tests/fuzz/replay.c). Every input must run to the end: a crash, a
# failed property or a sanitizer report (in a sanitizer build) fails the case.
. "$(dirname "$0")/lib.sh"
cd "$AG_ROOT" || exit 1
ran=0
for src in tests/fuzz/fuzz-*.c; do
  name=$(basename "$src" .c)
  name=${name#fuzz-}
  bin=$BUILD/fuzz/replay-$name
  [ -x "$bin" ] || ag_skip "skipped: $bin is not built (make BUILD=$BUILD)"
  dirs=(tests/fuzz/corpus/"$name")
  [ -d tests/fuzz/regress/"$name" ] && dirs+=(tests/fuzz/regress/"$name")
  [ -d "${dirs[0]}" ] || ag_fail "no seed corpus tests/fuzz/corpus/$name"
  timeout -k 5 120 "$bin" "${dirs[@]}" || ag_fail "replay-$name failed on its corpus (exit $?)"
  ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || ag_fail "no fuzz target found"
echo "rel-fuzz-corpus: $ran targets replayed their corpus without a finding"
