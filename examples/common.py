"""common.py — what every example shares: arguments, seeding, timing, the checksum, the report.

Contract. Each example is plain eager PyTorch, runnable as `python3 examples/X.py` or under the
library (`tools/autograph -- python3 examples/X.py`, or LD_PRELOAD). It calls `parse_args`,
`setup`, then `run_steps(step_fn)` and finally `report(...)`, which prints, in this order and
format (one `key: value` per line, nothing else on stdout, so the lines can be compared and
parsed by tests/cases/examples-torch.sh and tools/gpu-check):

    example: NAME
    device: cpu|cuda  steps: N  batch_size: B  compile: 0|1
    warmup_s: SECONDS            wall time of the warm-up steps (includes torch.compile's work)
    median_step_ms: MS           median wall time of one timed step (device synchronised)
    value: FLOAT                 a float summary of the result (for comparisons with tolerance)
    checksum: HEX16              SHA-256 (first 16 hex digits) of the exact bytes of the result

On the CPU the checksum is deterministic: everything is seeded, data is synthetic and made on
the CPU, and deterministic algorithms are requested. Running with and without the library must
therefore print the same checksum; timings are of course free to differ.

`--compile` wraps the model in torch.compile(mode="reduce-overhead") (PyTorch 2.x; on the GPU
that records CUDA graphs itself); where torch.compile does not exist, the example says so on
stderr and exits with status 3, so a caller can tell "unavailable" from "failed".
"""

import argparse
import hashlib
import os
import random
import statistics
import sys
import time

# cuBLAS needs this before CUDA is initialised to be deterministic
# (torch.use_deterministic_algorithms raises otherwise on some operations).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402  (after the environment above)

EXIT_COMPILE_UNAVAILABLE = 3


def default_device():
    return "cuda" if torch.cuda.is_available() else "cpu"


def parse_args(name, description, steps, batch_size, extra=None):
    """Parses the common options; `extra(parser)` may add the example's own."""
    p = argparse.ArgumentParser(prog=name, description=description)
    p.add_argument("--device", default=default_device(),
                   help="cpu or cuda (default: cuda when available, else cpu)")
    p.add_argument("--steps", type=int, default=steps, help="timed steps (default %(default)s)")
    p.add_argument("--warmup", type=int, default=3,
                   help="untimed steps first (default %(default)s); the library learns the "
                        "repeated launch sequences here, torch.compile compiles")
    p.add_argument("--batch-size", type=int, default=batch_size,
                   help="batch size (default %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0,
                   help="CPU threads for PyTorch (default: PyTorch's choice)")
    p.add_argument("--compile", action="store_true",
                   help='use torch.compile(mode="reduce-overhead") (PyTorch 2.x)')
    p.add_argument("--profile", metavar="TRACE.json",
                   help="record the timed steps with torch.profiler (CPU and, on cuda, CUDA "
                        "activity; one ProfilerStep# per step) and write its Chrome trace here, "
                        "the input of autograph-predict and autograph-report --kineto; the "
                        "profiler's own cost is in the step times")
    if extra:
        extra(p)
    args = p.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch_size < 1:
        p.error("--steps and --batch-size must be positive, --warmup not negative")
    args.name = name
    return args


def setup(args):
    """Seeds everything, asks for deterministic algorithms, returns the torch.device."""
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    if dev.type == "cuda" and dev.index is None and "LOCAL_RANK" in os.environ:
        dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))  # one GPU per torchrun rank
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit(f"{args.name}: --device cuda, but torch.cuda.is_available() is False")
        if dev.index is None:
            # Newer PyTorch rejects set_device() of a device without an index.
            dev = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(dev)
        torch.cuda.manual_seed_all(args.seed)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    # warn_only: an operation without a deterministic implementation warns rather than fails;
    # the CPU paths the examples use are deterministic.
    torch.use_deterministic_algorithms(True, warn_only=True)
    return dev


def maybe_compile(args, model):
    """Returns the model, compiled when --compile was given."""
    if not args.compile:
        return model
    if not hasattr(torch, "compile"):
        print(f"{args.name}: torch.compile is not available in PyTorch {torch.__version__}",
              file=sys.stderr)
        sys.exit(EXIT_COMPILE_UNAVAILABLE)
    return torch.compile(model, mode="reduce-overhead")


def mark_step():
    """Tells torch.compile's CUDA graphs that a new iteration begins (their outputs may be
    overwritten from here on). A no-op where the API does not exist."""
    compiler = getattr(torch, "compiler", None)
    fn = getattr(compiler, "cudagraph_mark_step_begin", None) if compiler else None
    if fn:
        fn()


def _sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def run_steps(args, dev, step):
    """Runs `step(i)` for the warm-up steps, then the timed ones (each followed by a device
    synchronisation, so the time is the step's real duration). Returns (warmup seconds, list
    of step seconds)."""
    t0 = time.perf_counter()
    for i in range(args.warmup):
        step(i)
    _sync(dev)
    warmup_s = time.perf_counter() - t0
    times = []
    prof = None
    if getattr(args, "profile", None):
        from torch.profiler import ProfilerActivity, profile
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
        prof = profile(activities=acts)
        prof.__enter__()
    for i in range(args.warmup, args.warmup + args.steps):
        t = time.perf_counter()
        if prof:
            # The step's range, named as torch.profiler's schedule names it (what
            # autograph-predict reads as a step).
            with torch.profiler.record_function(f"ProfilerStep#{i}"):
                step(i)
                _sync(dev)
        else:
            step(i)
            _sync(dev)
        times.append(time.perf_counter() - t)
    if prof:
        prof.__exit__(None, None, None)
        prof.export_chrome_trace(args.profile)
    return warmup_s, times


def checksum(tensors):
    """(hex digest, float sum) over the exact bytes of the given tensors, as float32 on the CPU
    (integer tensors as int64), in order."""
    h = hashlib.sha256()
    total = 0.0
    for t in tensors:
        t = t.detach()
        t = t.to("cpu", torch.int64 if not t.is_floating_point() else torch.float32)
        t = t.contiguous()
        h.update(str(tuple(t.shape)).encode())
        h.update(t.numpy().tobytes())
        total += float(t.double().sum())
    return h.hexdigest()[:16], total


def report(args, dev, warmup_s, times, tensors):
    digest, value = checksum(tensors)
    print(f"example: {args.name}")
    print(f"device: {dev.type}  steps: {args.steps}  batch_size: {args.batch_size}  "
          f"compile: {int(args.compile)}")
    print(f"warmup_s: {warmup_s:.3f}")
    print(f"median_step_ms: {statistics.median(times) * 1e3:.3f}")
    print(f"value: {value:.9e}")
    print(f"checksum: {digest}")
    sys.stdout.flush()


def train_step_fn(model, opt, loss_fn, batches, scheduler=None):
    """A training step over a fixed list of (input, target) batches, cycled: zero the grads,
    forward, loss, backward, optimizer step (and the scheduler's, when given)."""
    def step(i):
        x, y = batches[i % len(batches)]
        mark_step()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if scheduler is not None:
            scheduler.step()
        return loss
    return step


def distributed_wrap(model, dev):
    """Under torchrun (WORLD_SIZE set), joins the process group (NCCL on the GPU, gloo on the
    CPU) and wraps the model in DistributedDataParallel; otherwise returns the model as is."""
    if int(os.environ.get("WORLD_SIZE", "0")) < 1:
        return model
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    backend = "nccl" if dev.type == "cuda" else "gloo"
    dist.init_process_group(backend)
    if dev.type == "cuda":
        return DistributedDataParallel(model, device_ids=[dev.index or 0])
    return DistributedDataParallel(model)


def distributed_done():
    if int(os.environ.get("WORLD_SIZE", "0")) >= 1:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
