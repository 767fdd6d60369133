"""coverage.py [--kernels] [--ops] [--dtypes LIST] [--json OUT] — what of PyTorch the simulator runs.

Run under tools/torch-sim. Two measures of the gap between the pinned wheel and the simulator's
CPU twins of its kernels:

  --kernels  the kernels of the wheel's libtorch_cuda.so (read by the project's inspector,
             build/autograph-inspect), grouped into families (the kernel's name without template
             arguments; for the elementwise frameworks, the functor or the function whose lambda
             it is), each marked by whether the simulator has a twin for it (asked of the twins
             library, simtw_twin): families and kernels with a twin, and their shares;
  --ops      a catalogue of operations (torch.nn.functional and common tensor operations), each
             run forward and, where it has one, backward, in each of the dtypes given (float32,
             float16, bfloat16 by default), on the device and on the CPU from the same inputs;
             an operation runs when it completes on the device and agrees with the CPU within the
             dtype's tolerance. One line per operation and dtype: ok, MISMATCH (the largest
             difference), or the family of the kernel the simulator has no twin for (from its
             stderr; the JSON has the kernel's whole name), or the error; then the share that
             runs.

Both by default. Exit status 0 whatever the shares (a measure, not a check); 2 for a bad command
line. --json OUT also writes the results as JSON; --markdown OUT the operations' table as the
docs show it.
"""
import argparse
import collections
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from torch_kernels import family  # noqa: E402  (the tools folder is put on the path first)
BUILD = os.environ.get("BUILD", "build")
if not os.path.isabs(BUILD):
    BUILD = os.path.join(ROOT, BUILD)

# ---------------------------------------------------------------- kernel families


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def twin_query():
    """simtw_twin(name, grid, block, NULL): 1 when the simulator has a twin for the kernel."""
    lib = ctypes.CDLL(os.path.join(BUILD, "sim", "libtorchtwins.so"))
    f = lib.simtw_twin
    f.argtypes = [ctypes.c_char_p, Dim3, Dim3, ctypes.c_void_p]
    f.restype = ctypes.c_int
    one = Dim3(1, 1, 1)
    return lambda name: f(name.encode(), one, one, None) == 1


def kernels_report(out):
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
    inspect = os.path.join(BUILD, "autograph-inspect")
    r = subprocess.run([inspect, "--json", lib], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"coverage: {inspect} failed: {r.stderr.strip()[-300:]}")
        return None
    names = {}
    for k in json.loads(r.stdout):
        names.setdefault(k["name"], k.get("demangled") or k["name"])
    has = twin_query()
    fams = collections.defaultdict(lambda: [0, 0])
    with_twin = 0
    for name, dm in names.items():
        t = has(name)
        with_twin += t
        f = fams[family(dm)]
        f[0] += 1
        f[1] += t
    covered = sum(1 for v in fams.values() if v[1])
    print(f"kernels of {os.path.relpath(lib, ROOT)}: {len(names)} distinct, {with_twin} with a twin "
          f"({100.0 * with_twin / max(len(names), 1):.1f}%)")
    print(f"families: {len(fams)}, {covered} with a twin for at least one kernel "
          f"({100.0 * covered / max(len(fams), 1):.1f}%)")
    top = sorted(fams.items(), key=lambda kv: -kv[1][0])[:25]
    print("largest families (kernels, with a twin):")
    for name, (n, t) in top:
        print(f"  {n:6d} {t:6d}  {name[:100]}")
    out["kernels"] = {"distinct": len(names), "with_twin": with_twin, "families": len(fams),
                      "families_with_twin": covered,
                      "by_family": {k: {"kernels": v[0], "with_twin": v[1]} for k, v in fams.items()}}
    return out


# ---------------------------------------------------------------- operations

G = torch.Generator().manual_seed(0)


def rnd(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape, generator=G) * (hi - lo) + lo


def pos(*shape):
    return rnd(*shape, lo=0.5, hi=2.0)


def idx(n, *shape):
    return torch.randint(0, n, shape, generator=G)


# name -> (inputs builder, function, differentiable). Inputs are CPU float32 tensors (cast to the
# dtype under test) or other values passed as they are.
OPS = {
    # elementwise and activations
    "add": (lambda: [rnd(4, 8), rnd(4, 8)], lambda a, b: a + b, True),
    "mul": (lambda: [rnd(4, 8), rnd(4, 8)], lambda a, b: a * b, True),
    "div": (lambda: [rnd(4, 8), pos(4, 8)], lambda a, b: a / b, True),
    "pow": (lambda: [pos(4, 8)], lambda a: a.pow(2.5), True),
    "exp": (lambda: [rnd(4, 8)], torch.exp, True),
    "log": (lambda: [pos(4, 8)], torch.log, True),
    "rsqrt": (lambda: [pos(4, 8)], torch.rsqrt, True),
    "sqrt": (lambda: [pos(4, 8)], torch.sqrt, True),
    "abs": (lambda: [rnd(4, 8)], torch.abs, True),
    "neg": (lambda: [rnd(4, 8)], torch.neg, True),
    "clamp": (lambda: [rnd(4, 8)], lambda a: a.clamp(-0.5, 0.5), True),
    "lerp": (lambda: [rnd(4, 8), rnd(4, 8)], lambda a, b: torch.lerp(a, b, 0.3), True),
    "where": (lambda: [rnd(4, 8), rnd(4, 8)], lambda a, b: torch.where(a > 0, a, b), True),
    "masked_fill": (lambda: [rnd(4, 8)], lambda a: a.masked_fill(a < 0, 0.25), True),
    "relu": (lambda: [rnd(4, 8)], F.relu, True),
    "gelu": (lambda: [rnd(4, 8)], F.gelu, True),
    "gelu_tanh": (lambda: [rnd(4, 8)], lambda a: F.gelu(a, approximate="tanh"), True),
    "silu": (lambda: [rnd(4, 8)], F.silu, True),
    "mish": (lambda: [rnd(4, 8)], F.mish, True),
    "hardswish": (lambda: [rnd(4, 8)], F.hardswish, True),
    "hardsigmoid": (lambda: [rnd(4, 8)], F.hardsigmoid, True),
    "hardtanh": (lambda: [rnd(4, 8)], F.hardtanh, True),
    "leaky_relu": (lambda: [rnd(4, 8)], F.leaky_relu, True),
    "elu": (lambda: [rnd(4, 8)], F.elu, True),
    "selu": (lambda: [rnd(4, 8)], F.selu, True),
    "softplus": (lambda: [rnd(4, 8)], F.softplus, True),
    "sigmoid": (lambda: [rnd(4, 8)], torch.sigmoid, True),
    "tanh": (lambda: [rnd(4, 8)], torch.tanh, True),
    "logsigmoid": (lambda: [rnd(4, 8)], F.logsigmoid, True),
    # comparisons, bitwise, predicates
    "eq": (lambda: [rnd(4, 8), rnd(4, 8)], lambda a, b: (a > b).float(), False),
    "bitwise_not": (lambda: [rnd(4, 8)], lambda a: (~(a > 0)).float(), False),
    "logical_and": (lambda: [rnd(4, 8), rnd(4, 8)], lambda a, b: torch.logical_and(a > 0, b > 0).float(), False),
    "isneginf": (lambda: [rnd(4, 8)], lambda a: torch.isneginf(a.log()).float(), False),
    "isnan": (lambda: [rnd(4, 8)], lambda a: torch.isnan(a.sqrt()).float(), False),
    # reductions and norms
    "sum": (lambda: [rnd(4, 8)], lambda a: a.sum(1), True),
    "mean": (lambda: [rnd(4, 8)], lambda a: a.mean(0), True),
    "amax": (lambda: [rnd(4, 8)], lambda a: a.amax(1), True),
    "var": (lambda: [rnd(4, 8)], lambda a: a.var(1), True),
    "norm": (lambda: [rnd(4, 8)], lambda a: torch.linalg.vector_norm(a, dim=1), True),
    "cumsum": (lambda: [rnd(4, 8)], lambda a: a.cumsum(1), True),
    "logsumexp": (lambda: [rnd(4, 8)], lambda a: a.logsumexp(1), True),
    "argmax": (lambda: [rnd(4, 8)], lambda a: a.argmax(1).float(), False),
    # sorting
    "sort": (lambda: [rnd(4, 8)], lambda a: a.sort(1).values, True),
    "topk": (lambda: [rnd(4, 8)], lambda a: a.topk(3, 1).values, True),
    # indexing
    "index_select": (lambda: [rnd(6, 5), idx(6, 4)], lambda a, i: a.index_select(0, i), True),
    "index_copy": (lambda: [rnd(6, 5), rnd(2, 5)], lambda a, b: a.index_copy(0, torch.tensor([1, 4], device=a.device), b), True),
    "index_add": (lambda: [rnd(6, 5), rnd(3, 5)], lambda a, b: a.index_add(0, torch.tensor([1, 4, 1], device=a.device), b), True),
    "index_put_acc": (lambda: [rnd(6, 5), rnd(3, 5)], lambda a, b: a.index_put((torch.tensor([0, 2, 0], device=a.device),), b, accumulate=True), True),
    "gather": (lambda: [rnd(4, 8), idx(8, 4, 3)], lambda a, i: a.gather(1, i), True),
    "embedding": (lambda: [idx(10, 4, 3), rnd(10, 6)], lambda i, w: F.embedding(i, w), True),
    "embedding_bag": (lambda: [idx(10, 8), rnd(10, 6)], lambda i, w: F.embedding_bag(i, w, torch.tensor([0, 3], device=w.device)), True),
    "one_hot": (lambda: [idx(5, 7)], lambda i: F.one_hot(i, 5).float(), False),
    # shape and layout
    "cat": (lambda: [rnd(4, 3), rnd(4, 5)], lambda a, b: torch.cat([a, b], 1), True),
    "transpose_contig": (lambda: [rnd(4, 8)], lambda a: a.t().contiguous(), True),
    "pad": (lambda: [rnd(2, 3, 4, 4)], lambda a: F.pad(a, (1, 2, 0, 1)), True),
    "pad_reflect": (lambda: [rnd(2, 3, 4, 4)], lambda a: F.pad(a, (1, 1, 1, 1), mode="reflect"), True),
    "interpolate_nearest": (lambda: [rnd(1, 2, 4, 4)], lambda a: F.interpolate(a, scale_factor=2), True),
    "interpolate_bilinear": (lambda: [rnd(1, 2, 4, 4)], lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"), True),
    "triu": (lambda: [rnd(5, 5)], lambda a: a.triu(1), True),
    # normalisation, softmax, losses
    "softmax": (lambda: [rnd(4, 8)], lambda a: F.softmax(a, 1), True),
    "softmax_dim0": (lambda: [rnd(4, 8)], lambda a: F.softmax(a, 0), True),
    "log_softmax": (lambda: [rnd(4, 8)], lambda a: F.log_softmax(a, 1), True),
    "layer_norm": (lambda: [rnd(4, 8)], lambda a: F.layer_norm(a, (8,)), True),
    "rms_norm": (lambda: [rnd(4, 8)], lambda a: F.rms_norm(a, (8,)), True),
    "group_norm": (lambda: [rnd(2, 4, 3, 3)], lambda a: F.group_norm(a, 2), True),
    "batch_norm_train": (lambda: [rnd(4, 3, 5, 5)], lambda a: F.batch_norm(a, None, None, training=True), True),
    "batch_norm1d": (lambda: [rnd(8, 6)], lambda a: F.batch_norm(a, None, None, training=True), True),
    "cross_entropy": (lambda: [rnd(6, 5), idx(5, 6)], lambda a, i: F.cross_entropy(a, i), True),
    "mse_loss": (lambda: [rnd(4, 8), rnd(4, 8)], F.mse_loss, True),
    "l1_loss": (lambda: [rnd(4, 8), rnd(4, 8)], F.l1_loss, True),
    "smooth_l1_loss": (lambda: [rnd(4, 8), rnd(4, 8)], F.smooth_l1_loss, True),
    "bce_with_logits": (lambda: [rnd(4, 8), rnd(4, 8, lo=0, hi=1)], F.binary_cross_entropy_with_logits, True),
    "kl_div": (lambda: [rnd(4, 8), pos(4, 8)], lambda a, b: F.kl_div(F.log_softmax(a, 1), b / b.sum(1, keepdim=True), reduction="batchmean"), True),
    # linear algebra, convolution, pooling, attention
    "matmul": (lambda: [rnd(4, 8), rnd(8, 5)], torch.matmul, True),
    "linear": (lambda: [rnd(4, 8), rnd(5, 8), rnd(5)], F.linear, True),
    "bmm": (lambda: [rnd(2, 4, 8), rnd(2, 8, 3)], torch.bmm, True),
    "conv2d": (lambda: [rnd(2, 3, 6, 6), rnd(4, 3, 3, 3)], lambda a, w: F.conv2d(a, w, padding=1), True),
    "conv2d_depthwise": (lambda: [rnd(2, 4, 6, 6), rnd(4, 1, 3, 3)], lambda a, w: F.conv2d(a, w, padding=1, groups=4), True),
    "conv1d": (lambda: [rnd(2, 3, 8), rnd(4, 3, 3)], lambda a, w: F.conv1d(a, w), True),
    "conv_transpose2d": (lambda: [rnd(1, 3, 4, 4), rnd(3, 2, 3, 3)], F.conv_transpose2d, True),
    "max_pool2d": (lambda: [rnd(2, 3, 6, 6)], lambda a: F.max_pool2d(a, 2), True),
    "avg_pool2d": (lambda: [rnd(2, 3, 6, 6)], lambda a: F.avg_pool2d(a, 2), True),
    "adaptive_avg_pool2d": (lambda: [rnd(2, 3, 6, 6)], lambda a: F.adaptive_avg_pool2d(a, 1), True),
    "adaptive_avg_pool2d_3": (lambda: [rnd(2, 3, 7, 7)], lambda a: F.adaptive_avg_pool2d(a, 3), True),
    "max_pool1d": (lambda: [rnd(2, 3, 8)], lambda a: F.max_pool1d(a, 2), True),
    "sdpa": (lambda: [rnd(1, 2, 4, 8), rnd(1, 2, 4, 8), rnd(1, 2, 4, 8)], F.scaled_dot_product_attention, True),
    "sdpa_causal": (lambda: [rnd(1, 2, 4, 8), rnd(1, 2, 4, 8), rnd(1, 2, 4, 8)], lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), True),
}

TOL = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-3), torch.bfloat16: (5e-2, 1e-2)}
KERNEL_MSG = re.compile(r"sim: kernel (\S+) has no CPU twin")


def demangle(name):
    try:
        return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()
    except OSError:
        return name


def run_on(dev, dtype, build, fn, diff):
    ins = []
    for x in build:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            t = x.to(dtype).to(dev)
            if diff:
                t.requires_grad_(True)
            ins.append(t)
        elif isinstance(x, torch.Tensor):
            ins.append(x.to(dev))
        else:
            ins.append(x)
    y = fn(*ins)
    grads = []
    if diff and y.requires_grad:
        # A weight per output element (made on the CPU: only the operation is under test).
        wt = torch.linspace(0.5, 1.5, y.numel()).reshape(y.shape).to(dev)
        (y.float() * wt).sum().backward()
        grads = [t.grad for t in ins if isinstance(t, torch.Tensor) and t.requires_grad]
    if dev != "cpu":
        torch.cuda.synchronize()
    return [y.detach().float().cpu()] + [g.float().cpu() for g in grads if g is not None]


def compare(got, want, dtype):
    rtol, atol = TOL[dtype]
    worst = 0.0
    for a, b in zip(got, want):
        if a.shape != b.shape:
            return f"shape {tuple(a.shape)} != {tuple(b.shape)}"
        if not torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            worst = max(worst, (a - b).abs().nan_to_num(0).max().item())
            return f"max diff {worst:.3g}"
    return None


def ops_report(dtypes, out):
    results, seen = [], set()
    err_fd = sys.stderr.fileno()
    for name, (make, fn, diff) in OPS.items():
        base = make()
        for dtype in dtypes:
            saved = os.dup(err_fd)
            with tempfile.TemporaryFile() as cap:
                os.dup2(cap.fileno(), err_fd)
                status = "ok"
                try:
                    got = run_on("cuda", dtype, base, fn, diff)
                except Exception as x:  # the operation itself failed on the device
                    got, status = None, "error: " + str(x).splitlines()[0][:100]
                finally:
                    sys.stderr.flush()
                    os.dup2(saved, err_fd)
                    os.close(saved)
                cap.seek(0)
                msgs = KERNEL_MSG.findall(cap.read().decode(errors="replace"))
            if got is not None:
                try:
                    want = run_on("cpu", dtype, base, fn, diff)
                except Exception:  # the CPU lacks the dtype: compare with float32's result
                    want = run_on("cpu", torch.float32, base, fn, diff)
                bad = compare(got, want, dtype)
                if bad:
                    status = "MISMATCH " + bad
            kernel = None
            if msgs:
                kernel = demangle(msgs[0])
                status = "no twin: " + family(kernel)
                seen.update(msgs)
            elif got is None and "no kernel image" in status:
                status = "no twin (a kernel named above)"
            results.append((name, str(dtype).replace("torch.", ""), status, kernel))
            print(f"  {name:22s} {str(dtype).replace('torch.', ''):9s} {status}", flush=True)
    n_ok = sum(1 for r in results if r[2] == "ok")
    by_dtype = collections.OrderedDict()
    for _, d, s, _ in results:
        by_dtype.setdefault(d, [0, 0])
        by_dtype[d][0] += 1
        by_dtype[d][1] += s == "ok"
    print(f"operations: {n_ok} of {len(results)} run ({100.0 * n_ok / max(len(results), 1):.1f}%); "
          + ", ".join(f"{d} {k} of {n}" for d, (n, k) in by_dtype.items()))
    out["ops"] = {"results": [{"op": a, "dtype": b, "status": c, "kernel": k} for a, b, c, k in results],
                  "ok": n_ok, "total": len(results)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", action="store_true", help="only the kernel families")
    ap.add_argument("--ops", action="store_true", help="only the operations")
    ap.add_argument("--dtypes", default="float32,float16,bfloat16",
                    help="dtypes of the operations, comma-separated (default %(default)s)")
    ap.add_argument("--only", help="only these operations, comma-separated")
    ap.add_argument("--json", help="also write the results as JSON here")
    ap.add_argument("--markdown", help="also write the operations' table (as in "
                    "docs/pytorch-on-the-simulator.md) here")
    a = ap.parse_args()
    try:
        dtypes = [getattr(torch, d) for d in a.dtypes.split(",")]
        assert all(d in TOL for d in dtypes)
    except (AttributeError, AssertionError):
        ap.error(f"--dtypes: expected float32, float16, bfloat16, got {a.dtypes}")
    if a.only:
        unknown = [o for o in a.only.split(",") if o not in OPS]
        if unknown:
            ap.error("--only: unknown operations: " + ", ".join(unknown))
        for k in [k for k in OPS if k not in a.only.split(",")]:
            del OPS[k]
    out = {}
    both = not a.kernels and not a.ops
    if a.kernels or both:
        kernels_report(out)
    if a.ops or both:
        print(f"operations on {torch.cuda.get_device_name(0)} against the CPU:")
        ops_report(dtypes, out)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    if a.markdown and "ops" in out:
        with open(a.markdown, "w") as f:
            f.write(markdown(out["ops"]["results"]))
    return 0


def markdown(results):
    """The operations' table: one row per operation, one column per dtype; a cell is ok, the
    family of the kernel without a twin, or what else went wrong."""
    dts = list(dict.fromkeys(r["dtype"] for r in results))
    rows = collections.OrderedDict()
    for r in results:
        st = r["status"]
        cell = ("ok" if st == "ok" else "`" + st[len("no twin: "):] + "`" if st.startswith("no twin: ")
                else "no twin (as above)" if st.startswith("no twin") else
                "MISMATCH" if st.startswith("MISMATCH") else st[len("error: "):][:50])
        rows.setdefault(r["op"], {})[r["dtype"]] = cell.replace("|", "\\|")
    lines = ["| operation | " + " | ".join(dts) + " |", "|---" * (len(dts) + 1) + "|"]
    lines += ["| `%s` | %s |" % (op, " | ".join(c.get(d, "-") for d in dts)) for op, c in rows.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
