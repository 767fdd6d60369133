#!/usr/bin/env bash
# rel-soak.sh — the reliability soak: tests/progs/r-soak.cu (4 threads, 8 streams, random
# seeded sequence shapes, synchronisation and shape changes) run again and again with new seeds
# for AG_SOAK_SECONDS (default 20; `make soak` runs it for 600), each seed once without the
# library and once with it under a small graph cache (AUTOGRAPH_MAX_GRAPHS=4, so graphs are
# evicted and rebuilt all the time) and several randomly placed graph-API faults (SIM_FAIL with
# three distinct graph APIs, each failing at a call drawn from the seed, a quarter of them from
# that call on). Every run must print byte-identical results (they encode the order of every
# launch), agree with the statistics (no launch lost or counted twice:
# passthrough + replayed == launches), and keep memory bounded: the preloaded run's peak RSS
# (VmHWM) at most AG_SOAK_RSS_MIB (64) above the plain run's, and its resident set may not grow
# by more than 16 MiB between a quarter of the run and the end (not checked under a sanitizer,
# whose own memory dominates; its leak checker stands in). Over the whole soak there must
# be replays, evictions and reported graph failures. The figures are printed at the end.
. "$(dirname "$0")/lib.sh"
ag_need r-soak
secs=${AG_SOAK_SECONDS:-20}
rounds=${AG_SOAK_ROUNDS:-3000}
rss_slack=$(( ${AG_SOAK_RSS_MIB:-64} * 1024 ))
prog=$BUILD/tests/progs/r-soak
d=$AG_TMP/soak
mkdir -p "$d"
apis=(cuGraphCreate cuGraphAddKernelNode cuGraphInstantiateWithFlags cuGraphLaunch
      cuGraphExecKernelNodeSetParams cuGraphDestroy cuGraphExecDestroy)

# The program's own determinism, once.
ag_run "$d/p1" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" "$rounds" 1
ag_ok "$d/p1"
ag_run "$d/p2" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" "$rounds" 1
ag_same "$d/p1" "$d/p2"

start=$SECONDS seed=0 runs=0 faults=0 launches=0 diffs=0 peak=0 peak_plain=0
replayed=0 evictions=0 graph_errors=0 graphs=0
fig() { sed -n "s/.* $2=\([0-9.]*\).*/\1/p" "$1" | tail -n 1; }
while :; do
  seed=$((seed + 1))
  RANDOM=$seed
  fail=""
  for _ in 1 2 3; do
    api=${apis[RANDOM % ${#apis[@]}]}
    while [[ ",$fail" == *",$api:"* ]]; do api=${apis[RANDOM % ${#apis[@]}]}; done
    point=$((RANDOM % 200 + 1))
    [ $((RANDOM % 4)) = 0 ] && point="$point+"
    fail="${fail:+$fail,}$api:$point"
  done
  ag_run "$d/plain" env LD_PRELOAD="$AG_PRELOAD_BASE" "$prog" "$rounds" "$seed"
  ag_ok "$d/plain"
  rm -f "$d/stats.json"
  ag_run "$d/lib" env LD_PRELOAD="$(ag_preload "$AG_LIB")" AUTOGRAPH_STATS="$d/stats.json" \
    AUTOGRAPH_MAX_GRAPHS=4 SIM_FAIL="$fail" "$prog" "$rounds" "$seed"
  if ! (ag_same "$d/plain" "$d/lib"); then
    diffs=$((diffs + 1))
    ag_fail "seed $seed (SIM_FAIL=$fail): results differ with the library"
  fi
  ag_check_stats "$d/stats.json" "$(tail -n 1 "$d/plain.out")" >/dev/null
  read -r r e g gr < <(python3 -c '
import json, sys
st = json.load(open(sys.argv[1])); fb = st.get("fallbacks", {})
print(st["replayed"], st.get("evictions", 0), fb.get("graph_error", 0) + fb.get("demoted", 0),
      st.get("graphs", 0))' "$d/stats.json")
  replayed=$((replayed + r)) evictions=$((evictions + e)) graph_errors=$((graph_errors + g))
  graphs=$((graphs + gr))
  hwm=$(fig "$d/lib.err" peak_rss_kib) hwm0=$(fig "$d/plain.err" peak_rss_kib)
  q=$(fig "$d/lib.err" rss_quarter_kib) end=$(fig "$d/lib.err" rss_end_kib)
  [ -n "$hwm" ] && [ -n "$hwm0" ] || ag_fail "seed $seed: no memory figures on stderr"
  # Under a sanitizer the resident set is mostly its own (freed memory held in quarantine grows
  # it by tens of MiB, with the library or without): leaks are the leak checker's to find then.
  if [ -z "${AG_SAN_PRELOAD:-}" ]; then
    [ "$hwm" -le $((hwm0 + rss_slack)) ] ||
      ag_fail "seed $seed: peak RSS ${hwm} KiB with the library, ${hwm0} KiB without"
    [ "$end" -le $((q + 16384)) ] ||
      ag_fail "seed $seed: resident set grew from ${q} KiB to ${end} KiB during the run"
  fi
  [ "$hwm" -gt "$peak" ] && peak=$hwm
  [ "$hwm0" -gt "$peak_plain" ] && peak_plain=$hwm0
  launches=$((launches + $(fig "$d/lib.err" launches)))
  runs=$((runs + 1)) faults=$((faults + 3))
  echo "seed $seed: identical (SIM_FAIL=$fail; replayed=$r evictions=$e graph_fallbacks=$g; peak ${hwm} KiB)"
  [ $((SECONDS - start)) -ge "$secs" ] && break
done
[ "$replayed" -gt 0 ] || ag_fail "no launch was ever replayed"
[ "$evictions" -gt 0 ] || ag_fail "no graph was ever evicted with AUTOGRAPH_MAX_GRAPHS=4"
[ "$graph_errors" -gt 0 ] || ag_fail "no injected graph failure was ever reported"
echo "soak: threads=4 streams=8 runs=$runs rounds_per_run=$rounds launches=$launches" \
     "faults_armed=$faults launches_in_graph_fallbacks=$graph_errors graphs=$graphs replayed=$replayed" \
     "evictions=$evictions duration_s=$((SECONDS - start)) differences=$diffs" \
     "peak_rss_kib=$peak (without the library: $peak_plain)"
