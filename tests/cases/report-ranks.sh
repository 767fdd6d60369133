#!/usr/bin/env bash
# report-ranks.sh — output paths that name the process, for the processes of one job (torchrun's
# ranks, its agent, launchers): AUTOGRAPH_STATS, AUTOGRAPH_DUMP and AUTOGRAPH_TRACE with %r
# (RANK, else LOCAL_RANK, else 0), %p (the process id) and %h (the host). Two "ranks" of
# tests/progs/e-cut.cu write one statistics file, dump and trace each, named by their rank;
# a process that launches no kernel (here sh -c true, preloaded as torchrun's agent would be)
# writes none where the path names the process, and never replaces a report where it does not;
# autograph-report puts the two dumps side by side, with their totals; a path with an unknown
# placeholder is refused with a warning naming the variable, and nothing is written there.
. "$(dirname "$0")/lib.sh"
ag_need e-cut
command -v python3 >/dev/null || ag_skip "skipped: python3 is not installed"
d=$AG_TMP/ranks
mkdir -p "$d"
host=$(hostname)
host=${host%%.*}
ag_compare_prog e-cut 10 8 2
for r in 0 1; do
  ag_run "$d/rank$r" env LD_PRELOAD="$(ag_preload "$AG_LIB")" RANK=$r \
    AUTOGRAPH_STATS="$d/stats-%r.json" AUTOGRAPH_DUMP="$d/dump-%r.json" \
    AUTOGRAPH_TRACE="$d/trace-%r-%h.json" "$BUILD/tests/progs/e-cut" 10 8 2
  ag_same "$AG_TMP/e-cut/plain1" "$d/rank$r"
  [ -s "$d/stats-$r.json" ] && [ -s "$d/dump-$r.json" ] && [ -s "$d/trace-$r-$host.json" ] ||
    ag_fail "rank $r: a report is missing: $(ls "$d")"
  ag_expect "$d/stats-$r.json" "launches > 0" "replayed > 0"
done
# The agent: preloaded, no launch. With %p it writes nothing; with a fixed path that exists it
# leaves the file as it is.
before=$(ls "$d" | wc -l)
cp "$d/stats-0.json" "$d/fixed.json"
env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/agent-%p.json" \
  AUTOGRAPH_DUMP="$d/agent-dump-%p.json" sh -c true || ag_fail "the preloaded shell failed"
env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/fixed.json" sh -c true ||
  ag_fail "the preloaded shell failed"
[ "$(ls "$d" | wc -l)" = $((before + 1)) ] || ag_fail "a process without launches wrote a report: $(ls "$d")"
cmp -s "$d/stats-0.json" "$d/fixed.json" || ag_fail "a process without launches replaced a report"
# Side by side.
out=$("$AG_ROOT/tools/autograph-report" "$d/dump-0.json" "$d/dump-1.json") || ag_fail "autograph-report failed"
echo "$out" | head -20
grep -q "^autograph report: 2 dumps side by side" <<<"$out" || ag_fail "no side-by-side table"
l0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["launches"])' "$d/stats-0.json")
grep -qE "^  launches +$l0 +$l0\$" <<<"$out" || ag_fail "the launches row does not show $l0 for each rank"
[ "$(grep -c '^autograph report: .*dump-[01].json' <<<"$out")" = 2 ] || ag_fail "not one report per dump"
# A path with an unknown placeholder is refused, loudly.
ag_run "$d/bad" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/bad-%d.json" \
  "$BUILD/tests/progs/e-cut" 10 3 2
ag_ok "$d/bad"
grep -q 'AUTOGRAPH_STATS=.*unknown placeholder' "$d/bad.err" || ag_fail "no warning for %d"
[ ! -e "$d/bad-%d.json" ] || ag_fail "a report was written to a refused path"
echo "report-ranks: one report per rank, none from a process without launches"
