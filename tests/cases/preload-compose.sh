#!/usr/bin/env bash
# preload-compose.sh — the library composes with another preloaded library, before or after it
# in LD_PRELOAD: the program's output is unchanged, the other library's constructor ran, and
# the statistics still match the program's own launch count.
. "$(dirname "$0")/lib.sh"
ag_need train-loop driver-api
command -v "${CC:-cc}" >/dev/null || ag_skip "skipped: no C compiler to build the other library"

# A library that does nothing but leave a mark from its constructor.
other=$AG_TMP/libother.so
cat >"$AG_TMP/other.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void other_init(void) {
  const char *mark = getenv("OTHER_MARK");
  FILE *f = mark ? fopen(mark, "a") : NULL;
  if (f) {
    fputs("loaded\n", f);
    fclose(f);
  }
}
C
"${CC:-cc}" -shared -fPIC -o "$other" "$AG_TMP/other.c" || ag_fail "cannot build $other"

for name in train-loop driver-api; do
  d=$AG_TMP/$name
  mkdir -p "$d"
  ag_run "$d/plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$BUILD/tests/progs/$name"
  ag_ok "$d/plain"
  for order in "$other $AG_LIB" "$AG_LIB $other"; do
    rm -f "$d/stats.json" "$d/mark"
    ag_run "$d/both" env LD_PRELOAD="$(ag_preload "$order")" OTHER_MARK="$d/mark" \
      AUTOGRAPH_STATS="$d/stats.json" "$BUILD/tests/progs/$name"
    ag_same "$d/plain" "$d/both"
    [ -s "$d/mark" ] || ag_fail "$name: the other preloaded library did not load ($order)"
    ag_check_stats "$d/stats.json" "$(tail -n 1 "$d/plain.out")" launch
    echo "$name: composes with LD_PRELOAD=\"${order//$AG_TMP\//}\""
  done
done
