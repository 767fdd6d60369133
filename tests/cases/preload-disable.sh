#!/usr/bin/env bash
# preload-disable.sh — AUTOGRAPH_DISABLE=1 makes the library a pure pass-through that writes no
# statistics: same output as without it, and no stats file even when AUTOGRAPH_STATS names one.
. "$(dirname "$0")/lib.sh"
ag_need train-loop driver-api
for name in train-loop driver-api; do
  d=$AG_TMP/$name
  mkdir -p "$d"
  ag_run "$d/plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/$name"
  ag_ok "$d/plain"
  ag_run "$d/disabled" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_DISABLE=1 \
    AUTOGRAPH_STATS="$d/stats.json" "$BUILD/tests/progs/$name"
  ag_same "$d/plain" "$d/disabled"
  [ ! -e "$d/stats.json" ] || ag_fail "$name: AUTOGRAPH_DISABLE=1 still wrote $d/stats.json"
  echo "$name: disabled library is invisible and writes no statistics"
done
