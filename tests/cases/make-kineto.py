#!/usr/bin/env python3
"""make-kineto.py — the torch.profiler (Kineto) trace that a program run under the library
would give, built from the library's dump of that run, for the `autograph-report --kineto`
tests (the simulator has no CUPTI).

  make-kineto.py DUMP OUT EXPECTED [--foreign N] [--replays-only]

The runs of the dump (oldest first; the run must fit in the dump's last 1024) are replayed in
order on one stream, with the event shapes of make-trace.py (which the tests check against
real traces): a run passed through or cut becomes ordinary launches, each a cpu_op, a
cudaLaunchKernel row inside it, its kernel and the ac2g flow between them; a replayed run
becomes the cpu_ops of the held launches (without a launch row: the library held them), then
one kernel per node with the correlation id of the graph launch, which has no API row: the
library launches its graphs with the driver's cuGraphLaunch, which Kineto does not record (a
trace of torch 2.11 on an H200 shows it: tests/fixtures/kineto). The op of node q of sequence S is
named "op:S.q" and the kernel keeps its name, so that a link can be checked. A run passed
through whose sequence the dump does not name is the first occurrence of the next sequence
(ids are given in the order sequences are first seen) when its length is that sequence's, the
rest of a sequence cut just before when it fits, else kernels named "unknown".
--foreign N adds N graph launches (cudaGraphLaunch rows: a program's own graphs) of kernels no
sequence has but the first (sequence 1's first);
--replays-only leaves out the runs passed through (a trace that began after the sequences
were learned: no launch of theirs to link to).

EXPECTED gets, for each replayed kernel in trace order, [sequence, node, name and External id of
the op of the replayed step that made its launch].
"""
import importlib.util
import json
import os
import sys

spec = importlib.util.spec_from_file_location(
    "make_trace", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-trace.py"))
mt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mt)


def main(dump_path, out, expected_path, foreign=0, replays_only=False):
    d = json.load(open(dump_path))
    seqs = {s["id"]: s for s in d["sequences"] if s["id"] > 0}
    tr = mt.Trace()
    expected = []
    next_id = 1
    cut = None  # (sequence, launches done) of a run cut just before
    chunk = {}  # sequence -> its next node, while its replay goes on in chunks

    def ordinary(s, nodes):
        for q in nodes:
            k = s["kernels"][q] if s else {"name": "unknown"}
            name = "op:%d.%d" % (s["id"], q) if s else "op:unknown"
            tr.launch(k["name"], tuple(k.get("grid", (1, 1, 1))), tuple(k.get("block", (1, 1, 1))),
                      op=name)

    tr.call("cudaMalloc", 20000)
    for r in d["runs"]:
        s, n = seqs.get(r["sequence"]), r["launches"]
        if r["outcome"] in ("passed", "cut"):
            if s is None and cut and cut[1] + n <= len(seqs[cut[0]]["kernels"]):
                s, first = seqs[cut[0]], cut[1]
            elif s is None and next_id in seqs and len(seqs[next_id]["kernels"]) == n:
                s, first = seqs[next_id], 0
            else:
                # A cut run: its launches held after the chunks launched before the cut.
                first = chunk.pop(s["id"], 0) if s else 0
            if s and s["id"] == next_id:
                next_id += 1
            if not replays_only:
                ordinary(s, range(first, first + n) if s else range(n))
            cut = (s["id"], first + n) if r["outcome"] == "cut" and s else None
        else:
            first = chunk.pop(s["id"], 0)
            nodes = list(range(first, first + n))
            # A chunk launched once complete, or the part of one held when the hold bound
            # passed (launched with its other nodes disabled): the run goes on after it.
            if ("chunk complete" in r["calls"] or "hold bound (AUTOGRAPH_HOLD_US)" in r["calls"]) \
                    and first + n < len(s["kernels"]):
                chunk[s["id"]] = first + n
            # The held launches' ops: the program made them, the library held the launches.
            ext = {}
            for q in nodes:
                ext[q] = tr.corr
                tr._add({"ph": "X", "cat": "cpu_op", "name": "op:%d.%d" % (s["id"], q),
                         "pid": tr.pid, "tid": tr.tid, "ts": tr.t, "dur": 1500,
                         "args": {"External id": tr.corr}})
                tr.corr += 1
                tr.t += 2000
            graph(tr, [(s["kernels"][q]["name"], s["kernels"][q]) for q in nodes])
            expected += [[s["id"], q, "op:%d.%d" % (s["id"], q), ext[q]] for q in nodes]
            cut = None
        tr.call("cudaStreamSynchronize")
    for i in range(foreign):
        # Its first kernel is the first of sequence 1: only the others tell it apart.
        first = seqs[1]["kernels"][0]["name"] if 1 in seqs else "foreign_kernel_0"
        graph(tr, [(first, {})] + [("foreign_kernel_%d" % j, {}) for j in (1, 2)],
              api="cudaGraphLaunch")
    tr.write(out)
    with open(expected_path, "w") as f:
        json.dump(expected, f)


def graph(tr, kernels, stream=7, device=0, api=None):
    """One graph launch and its kernels, in order: with api None, as the library's
    cuGraphLaunch shows (no API row, no flow start); else a row of that name (cudaGraphLaunch, a
    runtime row, as a program's own graph; cuGraphLaunch, a driver row)."""
    c = tr.corr
    tr.corr += 1
    ts = tr.t - 1000  # inside the op just made
    if api:
        tr._add({"ph": "X", "cat": "cuda_driver" if api.startswith("cu") else "cuda_runtime",
                 "name": api, "pid": tr.pid, "tid": tr.tid, "ts": ts, "dur": 800,
                 "args": {"cbid": 514 if api.startswith("cu") else 311, "correlation": c}})
        tr._add({"ph": "s", "id": c, "pid": tr.pid, "tid": tr.tid, "ts": ts, "cat": "ac2g",
                 "name": "ac2g"})
    t = max(tr.gpu_free.get(stream, 0), ts + 4000)
    for name, k in kernels:
        tr._add({"ph": "X", "cat": "kernel", "name": name, "pid": device, "tid": stream,
                 "ts": t, "dur": 3000,
                 "args": {"queued": 0, "device": device, "context": 1,
                          "stream": stream, "correlation": c, "registers per thread": 32,
                          "shared memory": k.get("shmem", 0), "blocks per SM": 0.5,
                          "warps per SM": 2.0, "grid": list(k.get("grid", (1, 1, 1))),
                          "block": list(k.get("block", (1, 1, 1))),
                          "est. achieved occupancy %": 0}})
        tr._add({"ph": "f", "id": c, "pid": device, "tid": stream, "ts": t, "cat": "ac2g",
                 "name": "ac2g", "bp": "e"})
        t += 3500
    tr.gpu_free[stream] = t
    tr.t += 1000


if __name__ == "__main__":
    a = sys.argv[1:]
    foreign = 0
    if "--foreign" in a:
        i = a.index("--foreign")
        foreign = int(a[i + 1])
        del a[i:i + 2]
    replays_only = "--replays-only" in a
    if replays_only:
        a.remove("--replays-only")
    main(*a, foreign=foreign, replays_only=replays_only)
