#!/usr/bin/env bash
# trace-faults.sh — demotions, failed builds and evictions in the trace. Graph-API failures are
# injected with SIM_FAIL (as engine-faults-*.sh do): a failing graph launch demotes the sequence
# (a "demote" event whose reason names the CUDA error, and a flush of the held launches for
# graph_error); a failing instantiation gives a build with ok false; a failing node update
# demotes too. A graph cache of one graph (AUTOGRAPH_MAX_GRAPHS=1) with two sequences
# alternating evicts (one "evict" event per eviction). Output identical every time; every trace
# agrees with the statistics of its run (trace-lib.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace-lib.sh"

AG_EXPECT_REPLAY=1 ag_compare_prog e-long-loop
SIM_FAIL=cuGraphLaunch:2 AUTOGRAPH_TRACE=$AG_TMP/launch.json ag_rerun e-long-loop fail-launch
ag_trace_check "$AG_TMP/launch.json" "$AG_STATS" "len(demotes) == 1" \
  "'graph path failed' in demotes[0]['args']['reason']" \
  "any(f['args']['fallback'] == 'graph_error' and f['args']['cause'] == 'graph error' for f in flushes)" \
  "demotes[0]['args']['seq'] == builds[0]['args']['seq']"

for api in cuGraphInstantiateWithFlags cuGraphInstantiate cuGraphInstantiateWithParams; do
  rm -f "$AG_TMP/inst.json"
  SIM_FAIL=$api:1 AUTOGRAPH_TRACE=$AG_TMP/inst.json ag_rerun e-long-loop "fail-$api"
  if (ag_expect "$AG_STATS" "demotions > 0") >/dev/null 2>&1; then
    ag_trace_check "$AG_TMP/inst.json" "$AG_STATS" "any(not b['args']['ok'] for b in builds)" \
      "len(demotes) >= 1"
    inst=$api
  fi
done
[ -n "${inst:-}" ] || ag_fail "no instantiation failure was reported (none of the APIs is used?)"

AG_EXPECT_REPLAY=1 ag_compare_prog train-loop
SIM_FAIL=cuGraphExecKernelNodeSetParams:3 AUTOGRAPH_TRACE=$AG_TMP/update.json ag_rerun train-loop fail-update
ag_expect "$AG_STATS" "demotions == 1"
ag_trace_check "$AG_TMP/update.json" "$AG_STATS" "len(demotes) == 1"

AG_EXPECT_REPLAY=1 ag_compare_prog e-flush event
AUTOGRAPH_MAX_GRAPHS=1 AUTOGRAPH_TRACE=$AG_TMP/evict.json ag_rerun e-flush evict event
ag_expect "$AG_STATS" "evictions > 0"
ag_trace_check "$AG_TMP/evict.json" "$AG_STATS" "len(evicts) > 0" \
  "all(e['args']['seq'] in {b['args']['seq'] for b in builds} for e in evicts)"
echo "trace-faults: ok"
