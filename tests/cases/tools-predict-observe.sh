#!/usr/bin/env bash
# tools-predict-observe.sh — autograph-predict applies the library's rule of what each call
# observes to hand-made traces, and finds each stream call's stream as
# docs/predictor.md says: from its copy or memset on the GPU, else from the stream its thread
# last launched on, else every stream.
#
# Six steps of six launches on stream 7 (thread 1), each ending with cudaDeviceSynchronize,
# with calls in the middle of every step (after the third launch). With --repeats 2 steps 3 to
# 6 are replayed (24 launches) whatever the calls are (a step cut in two is two sequences, each
# graphed), so what shows a cut is the number of graph launches: 4 for whole steps, 8 for
# steps cut in two (each sequence one graph launched at its end: --chunk-us 0).
#   quiet     event queries and an event synchronisation from another thread, cudaMalloc, and a
#             memset whose GPU event is on another stream (13): no cut, 4 graph launches;
#   memset    a memset on stream 7 (its GPU event says so): a cut, 8;
#   record    cudaEventRecord from thread 1 (no GPU event: thread 1's last stream, 7): a cut, 8;
#   elsewhere cudaEventRecord from a thread that never launched: every stream, a cut, 8;
#   other     cudaStreamSynchronize from a thread whose last launch was on stream 13: no cut, 4.
. "$(dirname "$0")/lib.sh"
pred=$BUILD/autograph-predict
[ -x "$pred" ] || ag_skip "skipped: $pred is not built"
d=$AG_TMP
python3 - "$AG_ROOT/tests/cases/make-trace.py" "$d" <<'PY' || ag_fail "writing the traces failed"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mt", sys.argv[1])
mt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mt)
for variant in ("quiet", "memset", "record", "elsewhere", "other"):
    tr = mt.Trace(tid=1)
    if variant == "other":
        tr.launch("side", (2, 1, 1), (64, 1, 1), stream=13, tid=2)
    for s in range(6):
        tr.begin_step(s)
        for k in range(6):
            tr.launch("k%d" % k, (4, 1, 1), (128, 1, 1))
            if k != 2:
                continue
            if variant == "quiet":
                tr.call("cudaEventQuery", tid=2)
                tr.call("cudaEventSynchronize", tid=2)
                tr.call("cudaMalloc")
                tr.call("cudaMemsetAsync", stream=13, gpu="gpu_memset")
            elif variant == "memset":
                tr.call("cudaMemsetAsync", stream=7, gpu="gpu_memset")
            elif variant == "record":
                tr.call("cudaEventRecord")
            elif variant == "elsewhere":
                tr.call("cudaEventRecord", tid=3)
            else:
                tr.call("cudaStreamSynchronize", tid=2)
        tr.call("cudaDeviceSynchronize")
        tr.end_step()
    tr.write("%s/%s.json" % (sys.argv[2], variant))
PY
for v in quiet memset record elsewhere other; do
  "$pred" --json --repeats 2 --min-seq 2 --chunk-us 0 "$d/$v.json" >"$d/$v.out" || ag_fail "autograph-predict failed on $v"
done
for v in quiet other; do
  ag_expect "$d/$v.out" "replayed == 24" "graph_launches == 4"
done
for v in memset record elsewhere; do
  ag_expect "$d/$v.out" "replayed == 24" "graph_launches == 8"
done
echo "tools-predict-observe: each call cuts only what it observes"
