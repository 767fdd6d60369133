#!/usr/bin/env bash
# tools-predict-graphs.sh — autograph-predict on traces with graph launches: a program's own
# (cudaGraphLaunch) and the library's (cuGraphLaunch, as a trace of a run under it shows). Six
# steps of 8 ordinary launches and one graph launch of 5 kernels, then a synchronisation: the
# graph launches and their kernels are counted apart from the launches (48), as already
# replayed (no launch overhead to remove), and the report says so; the kernels of graph launches
# with no API row (Kineto does not record the driver's cuGraphLaunch) are counted as kernels
# without a call. With the real trace of a
# program that uses graphs (hta_trace_diff_test: 12 cudaGraphLaunch, beside the repository as for
# tools/bench), the same counts from its events.
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
d=$AG_TMP
python3 - "$AG_ROOT/tests/cases/make-kineto.py" "$d" <<'PY' || ag_fail "writing the traces failed"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mk", sys.argv[1])
mk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mk)
for api in ("cudaGraphLaunch", "cuGraphLaunch", None):
    tr = mk.mt.Trace()
    for s in range(6):
        tr.begin_step(s)
        for k in range(8):
            tr.launch("k%d" % k, (4, 1, 1), (128, 1, 1))
        graph = [("g%d" % j, {"grid": (2, 1, 1), "block": (64, 1, 1)}) for j in range(5)]
        mk.graph(tr, graph, api=api)
        tr.call("cudaStreamSynchronize")
        tr.end_step()
    tr.write("%s/%s.json" % (sys.argv[2], api or "norow"))
PY
for api in cudaGraphLaunch cuGraphLaunch; do
  "$pred" --json --repeats 2 "$d/$api.json" >"$d/$api.out" || ag_fail "autograph-predict failed on $api"
  ag_expect "$d/$api.out" "launches == 48" "st['trace_graph_launches'] == 6" "st['trace_graph_kernels'] == 30" \
    "replayed <= 48" "st['unmatched_launches'] == 0"
  "$pred" --repeats 2 "$d/$api.json" >"$d/$api.txt" || ag_fail "autograph-predict failed on $api"
  grep -E '^  graph launches +6 running 30 kernels already replayed from graphs \(no launch overhead to remove' "$d/$api.txt" ||
    { cat "$d/$api.txt"; ag_fail "the text report does not count $api"; }
  echo "ok: $api: 48 launches, 6 graph launches of 30 kernels counted apart"
done
# The library's cuGraphLaunch as Kineto records it: no API row, kernels with a correlation id no
# call has.
"$pred" --json --repeats 2 "$d/norow.json" >"$d/norow.out" || ag_fail "autograph-predict failed"
ag_expect "$d/norow.out" "launches == 48" "st['trace_graph_launches'] == 0" \
  "st['trace_kernels_without_call'] == 30" "st['unmatched_launches'] == 0"
"$pred" --repeats 2 "$d/norow.json" | grep -E '^  kernels without call  30 \(no runtime or driver event' ||
  ag_fail "the text report does not count the kernels without a call"
# A real trace (tests/fixtures/kineto, an H200): 3 steps of 6 eager launches (12 runtime, 6
# driver), a torch.cuda.graph of 6 kernels launched with cudaGraphLaunch and with the driver's
# cuGraphLaunch, which has no API row.
"$pred" --json "$AG_ROOT/tests/fixtures/kineto/h200-graphs.json.gz" >"$d/h200.out" ||
  ag_fail "autograph-predict failed on the H200 trace"
ag_expect "$d/h200.out" "launches == 18" "st['launches_driver'] == 6" "st['trace_graph_launches'] == 3" \
  "st['trace_graph_kernels'] == 18" "st['trace_kernels_without_call'] == 18"
echo "ok: the H200 trace: 18 launches, 3 cudaGraphLaunch of 18 kernels, 18 kernels of cuGraphLaunch without a call"
traces=${AG_TRACES:-$AG_ROOT/../shared/traces}
[ -f "$traces/hta_trace_diff_test.json.gz" ] ||
  { echo "skipped the real trace: none in $traces (AG_TRACES)"; exit 0; }
"$pred" --json "$traces/hta_trace_diff_test.json.gz" >"$d/real.out" || ag_fail "autograph-predict failed on the real trace"
ag_expect "$d/real.out" "launches == 4866" "st['trace_graph_launches'] == 12" "st['trace_graph_kernels'] == 4464"
echo "ok: hta_trace_diff_test: 4866 launches, 12 graph launches of 4464 kernels"
