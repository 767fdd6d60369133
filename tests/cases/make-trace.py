#!/usr/bin/env python3
"""make-trace.py — writes synthetic torch.profiler traces for the autograph-predict tests.

The traces have the shape Kineto's Chrome trace export has (PyTorch 2.x, Kineto's
output_json.cpp): an object with "schemaVersion", "deviceProperties", "baseTimeNanoseconds",
"traceEvents" and "traceName"; complete events ("ph": "X") with "ts" and "dur" in microseconds
printed as "<us>.<ns:03>"; "cuda_runtime" events (cudaLaunchKernel, cudaMemcpyAsync,
cudaStreamSynchronize, …) with args "cbid" and "correlation"; "kernel" events on the GPU
(pid = device, tid = stream) with args "queued", "device", "context", "stream", "correlation",
"registers per thread", "shared memory", "blocks per SM", "warps per SM", "grid", "block",
"est. achieved occupancy %"; "user_annotation" events "ProfilerStep#N" around each step, their
"gpu_user_annotation" twins, "cpu_op" events, "ac2g" flow events and metadata ("ph": "M")
events, which the predictor must skip.

Times are integer nanoseconds inside, so every expected value a test computes is exact.

Used as a module (Trace) by tests, or from the command line:
  make-trace.py train OUT [--steps N] [--kernels K] [--vary | --vary-grid] [--gz] [--launch-us X]
                          [--kernel-us X] [--host-gap-us X] [--sync NAME]
  make-trace.py trainloop OUT [--steps N] [--gz]   (the launch and ordering-call sequence of
                                                    tests/progs/train-loop.cu)
"""
import argparse
import gzip
import json

RUNTIME_CBID = {"cudaLaunchKernel": 211, "cudaMemcpyAsync": 41, "cudaMemcpy": 31,
                "cudaStreamSynchronize": 131, "cudaDeviceSynchronize": 165,
                "cudaMalloc": 20, "cudaFree": 22, "cudaMemsetAsync": 51,
                "cudaStreamIsCapturing": 317, "cudaGetDevice": 17, "cudaEventRecord": 135,
                "cudaStreamWaitEvent": 147, "cudaLaunchKernelExC": 430, "cudaEventQuery": 138,
                "cudaEventSynchronize": 137, "cudaStreamQuery": 132}


def us(ns):
    """Kineto prints microseconds with three decimals from integer nanoseconds."""
    return "%d.%03d" % (ns // 1000, ns % 1000)


class Trace:
    def __init__(self, pid=4242, tid=4242, base=1700000000000000000):
        self.ev = []          # (sort key, json text)
        self.t = 1000000      # host clock, ns (relative to baseTimeNanoseconds)
        self.gpu_free = {}    # stream -> ns when its last kernel ends
        self.corr = 1
        self.pid, self.tid, self.base = pid, tid, base
        self.step_start = None
        self.steps = []
        self.launches = []    # (name, launch dur ns, kernel ts, kernel dur, stream) in order

    def _add(self, obj):
        parts = []
        for k, v in obj.items():
            if k in ("ts", "dur"):
                parts.append('"%s": %s' % (k, us(v)))
            else:
                parts.append('"%s": %s' % (k, json.dumps(v)))
        self.ev.append("{" + ", ".join(parts) + "}")

    def launch(self, name, grid=(1, 1, 1), block=(128, 1, 1), shmem=0, stream=7, device=0,
               launch_ns=5000, kernel_ns=3000, host_gap_ns=2000, latency_ns=4000, tid=None,
               api="cudaLaunchKernel", cat="cuda_runtime", kernel_ts=None, op="aten::op"):
        c = self.corr
        self.corr += 1
        tid = self.tid if tid is None else tid
        ts = self.t
        # The cpu_op that launched it (aten::...), then the runtime call inside it.
        self._add({"ph": "X", "cat": "cpu_op", "name": op, "pid": self.pid, "tid": tid,
                   "ts": ts, "dur": launch_ns + 500, "args": {"External id": c}})
        self._add({"ph": "X", "cat": cat, "name": api, "pid": self.pid, "tid": tid, "ts": ts,
                   "dur": launch_ns,
                   "args": {"External id": c, "cbid": RUNTIME_CBID.get(api, 0), "correlation": c}})
        self._add({"ph": "s", "id": c, "pid": self.pid, "tid": tid, "ts": ts, "cat": "ac2g",
                   "name": "ac2g"})
        if kernel_ts is None:
            kernel_ts = max(self.gpu_free.get(stream, 0), ts + latency_ns)
        self.gpu_free[stream] = kernel_ts + kernel_ns
        self._add({"ph": "X", "cat": "kernel", "name": name, "pid": device, "tid": stream,
                   "ts": kernel_ts, "dur": kernel_ns,
                   "args": {"External id": c, "queued": 0, "device": device, "context": 1,
                            "stream": stream, "correlation": c, "registers per thread": 32,
                            "shared memory": shmem, "blocks per SM": 0.5, "warps per SM": 2.0,
                            "grid": list(grid), "block": list(block),
                            "est. achieved occupancy %": 0}})
        self._add({"ph": "f", "id": c, "pid": device, "tid": stream, "ts": kernel_ts,
                   "cat": "ac2g", "name": "ac2g", "bp": "e"})
        self.launches.append((name, launch_ns, kernel_ts, kernel_ns, stream))
        self.t = ts + launch_ns + host_gap_ns

    def call(self, name, dur_ns=None, stream=7, tid=None, host_gap_ns=2000, gpu=None,
             device=0):
        """A runtime call; a synchronising one lasts until the stream is idle. gpu: the
        category of the copy or memset it puts on `stream` ("gpu_memcpy", "gpu_memset"), which
        the GPU side records with the call's correlation id, or None."""
        c = self.corr
        self.corr += 1
        if dur_ns is None:
            dur_ns = max(self.gpu_free.get(stream, 0) - self.t, 0) + 3000
        self._add({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": self.pid,
                   "tid": self.tid if tid is None else tid, "ts": self.t, "dur": dur_ns,
                   "args": {"cbid": RUNTIME_CBID.get(name, 0), "correlation": c}})
        if gpu:
            ts = max(self.gpu_free.get(stream, 0), self.t + 2000)
            self._add({"ph": "X", "cat": gpu, "name": "Memset (Device)" if gpu == "gpu_memset"
                       else "Memcpy DtoD (Device -> Device)", "pid": device, "tid": stream,
                       "ts": ts, "dur": 1000,
                       "args": {"device": device, "context": 1, "stream": stream,
                                "correlation": c, "bytes": 4096}})
            self.gpu_free[stream] = ts + 1000
        self.t += dur_ns + host_gap_ns

    def begin_step(self, n):
        self.step_start = (n, self.t)
        self.t += 1000

    def end_step(self):
        n, start = self.step_start
        self.t += 1000
        self._add({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % n,
                   "pid": self.pid, "tid": self.tid, "ts": start, "dur": self.t - start,
                   "args": {"External id": 0}})
        self._add({"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#%d" % n,
                   "pid": 0, "tid": 7, "ts": start + 10, "dur": self.t - start - 20,
                   "args": {"External id": 0}})
        self.steps.append((n, start, self.t - start))
        self.t += 1000

    def text(self):
        meta = [
            '{"name": "process_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": 0, '
            '"args": {"name": "python"}}' % self.pid,
            '{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": 0, "tid": 7, '
            '"args": {"name": "stream 7"}}',
        ]
        end = ('{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", '
               '"ts": %s}' % us(self.t))
        return ('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n'
                '  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d,\n  "traceEvents": [\n  '
                % self.base + ",\n  ".join(meta + self.ev + [end]) +
                '\n  ],\n  "traceName": "synthetic.pt.trace.json"\n}\n')

    def write(self, path, gz=False):
        data = self.text().encode()
        if gz:
            with gzip.open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "wb") as f:
                f.write(data)


def train(out, steps=10, kernels=8, vary=False, gz=False, launch_us=5.0, kernel_us=3.0,
          host_gap_us=2.0, sync="cudaStreamSynchronize", vary_grid=False):
    """A training-like loop: each step launches the same `kernels` kernels (with vary, with a
    block that changes every step; with vary_grid, a grid that does) and ends with one ordering
    call."""
    tr = Trace()
    tr.call("cudaMalloc", 20000)
    for s in range(steps):
        tr.begin_step(s)
        for k in range(kernels):
            grid = (1 + k + (s * 7 if vary_grid else 0), 1, 1)
            block = (32 * (1 + (k + s) % 32) if vary else 256, 1, 1)
            tr.launch("void k%d<float>(float*, int)" % k, grid=grid, block=block,
                      launch_ns=int(launch_us * 1000), kernel_ns=int(kernel_us * 1000),
                      host_gap_ns=int(host_gap_us * 1000))
            tr.call("cudaStreamIsCapturing", 300, host_gap_ns=0)  # harmless: ignored
        tr.call(sync)
        tr.end_step()
    tr.write(out, gz)
    return tr


def trainloop(out, steps=50, gz=False):
    """tests/progs/train-loop.cu's launches and ordering calls, in its order."""
    D, H, O, BLOCK = 32, 64, 16, 64
    g = lambda n: ((n + BLOCK - 1) // BLOCK, 1, 1)
    b = (BLOCK, 1, 1)
    tr = Trace()
    tr.call("cudaMalloc", 20000)
    tr.launch("tl_init", g(H * D), b)
    tr.launch("tl_init", g(O * H), b)
    tr.call("cudaMemsetAsync", 3000)
    tr.call("cudaMemsetAsync", 3000)
    for s in range(steps):
        tr.begin_step(s)
        for name, grid, block in [("tl_input", (1, 1, 1), b), ("tl_linear", g(H), b),
                                  ("tl_relu", g(H), b), ("tl_dropout", g(H), b),
                                  ("tl_linear", g(O), b), ("tl_softsign", g(O), b),
                                  ("tl_mse", (1, 1, 1), (1, 1, 1))]:
            tr.launch(name, grid, block)
        tr.call("cudaMemcpy")
        for name, grid in [("tl_mse_grad", g(O)), ("tl_softsign_bw", g(O)), ("tl_outer", g(O * H)),
                           ("tl_copy", g(O)), ("tl_linear_t", g(H)), ("tl_dropout", g(H)),
                           ("tl_relu_bw", g(H)), ("tl_outer", g(H * D)), ("tl_copy", g(H)),
                           ("tl_sgd", g(H * D)), ("tl_sgd", g(H)), ("tl_sgd", g(O * H)),
                           ("tl_sgd", g(O))]:
            tr.launch(name, grid, b, tid=4243 if not name.startswith("tl_sgd") else None)
        tr.end_step()
    tr.call("cudaStreamSynchronize")
    for _ in range(4):
        tr.call("cudaMemcpy")
    tr.call("cudaFree", 5000)
    tr.write(out, gz)
    return tr


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("out")
    t.add_argument("--steps", type=int, default=10)
    t.add_argument("--kernels", type=int, default=8)
    t.add_argument("--vary", action="store_true", help="the block changes every step")
    t.add_argument("--vary-grid", action="store_true", help="the grid changes every step")
    t.add_argument("--gz", action="store_true")
    t.add_argument("--launch-us", type=float, default=5.0)
    t.add_argument("--kernel-us", type=float, default=3.0)
    t.add_argument("--host-gap-us", type=float, default=2.0)
    t.add_argument("--sync", default="cudaStreamSynchronize")
    l = sub.add_parser("trainloop")
    l.add_argument("out")
    l.add_argument("--steps", type=int, default=50)
    l.add_argument("--gz", action="store_true")
    a = ap.parse_args()
    if a.cmd == "train":
        train(a.out, a.steps, a.kernels, a.vary, a.gz, a.launch_us, a.kernel_us, a.host_gap_us,
              a.sync, a.vary_grid)
    else:
        trainloop(a.out, a.steps, a.gz)


if __name__ == "__main__":
    main()
