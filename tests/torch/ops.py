"""ops.py — real PyTorch's CUDA operations on the simulator against the same operations on the CPU.

Run under tools/torch-sim. Every operation the simulator covers (creation, copies, elementwise
arithmetic and activations, reductions, matmul, nn.Linear forward and backward, SGD with momentum
and Adam with PyTorch's foreach kernels) is computed on the device and on the CPU from the same
inputs; the results must agree within float32 tolerance (the GPU kernels' order of summation and
fused multiply-adds differ from the CPU's). Then an operation whose kernel has no CPU twin must
fail with CUDA's no-kernel-image error (the simulator names the kernel on stderr). Prints one
line per operation and `ops: N ok` at the end; exits non-zero on the first mismatch.
"""
import sys

import torch

assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}")

gen = torch.Generator().manual_seed(0)
x = torch.randn(6, 5, generator=gen)
y = torch.rand(6, 5, generator=gen) + 0.5
w = torch.randn(5, 3, generator=gen)
n_ok = 0


def check(name, dev_fn, cpu_fn, rtol=1e-5, atol=1e-6):
    global n_ok
    got = dev_fn()
    want = cpu_fn()
    got_cpu = got.cpu() if isinstance(got, torch.Tensor) else torch.tensor(got)
    want = want if isinstance(want, torch.Tensor) else torch.tensor(want)
    if got_cpu.dtype != want.dtype or got_cpu.shape != want.shape or \
            not torch.allclose(got_cpu.float(), want.float(), rtol=rtol, atol=atol):
        print(f"FAIL {name}:\n device {got_cpu}\n cpu    {want}")
        sys.exit(1)
    n_ok += 1
    print(f"ok {name}")


def both(f):
    """(device result, CPU result) of f(tensors...) on copies of x, y, w."""
    return (lambda: f(x.cuda(), y.cuda(), w.cuda()), lambda: f(x, y, w))


ops = {
    "to/cpu": lambda a, b, c: a,
    "zeros": lambda a, b, c: torch.zeros(4, 3, device=a.device),
    "ones": lambda a, b, c: torch.ones(7, device=a.device),
    "full": lambda a, b, c: torch.full((3, 2), 2.5, device=a.device),
    "arange": lambda a, b, c: torch.arange(2.0, 9.0, 0.5, device=a.device),
    "add": lambda a, b, c: a + b,
    "sub": lambda a, b, c: a - b,
    "mul": lambda a, b, c: a * b,
    "div": lambda a, b, c: a / b,
    "add_scalar": lambda a, b, c: a + 1.5,
    "mul_scalar": lambda a, b, c: a * -3.0,
    "div_scalar": lambda a, b, c: a / 7.0,
    "add_alpha": lambda a, b, c: torch.add(a, b, alpha=0.25),
    "broadcast": lambda a, b, c: a + b[0],
    "neg": lambda a, b, c: -a,
    "relu": lambda a, b, c: torch.relu(a),
    "sigmoid": lambda a, b, c: torch.sigmoid(a),
    "tanh": lambda a, b, c: torch.tanh(a),
    "gelu": lambda a, b, c: torch.nn.functional.gelu(a),
    "gelu_tanh": lambda a, b, c: torch.nn.functional.gelu(a, approximate="tanh"),
    "exp": lambda a, b, c: torch.exp(a),
    "sqrt": lambda a, b, c: torch.sqrt(b),
    "rsqrt": lambda a, b, c: torch.rsqrt(b),
    "clamp": lambda a, b, c: torch.clamp(a, -0.5, 0.7),
    "gt": lambda a, b, c: a > 0.1,
    "where": lambda a, b, c: torch.where(a > 0, a, b),
    "transpose_copy": lambda a, b, c: a.t().contiguous(),
    "sum": lambda a, b, c: a.sum(),
    "mean": lambda a, b, c: b.mean(),
    "sum_dim0": lambda a, b, c: a.sum(0),
    "sum_dim1": lambda a, b, c: a.sum(1),
    "matmul": lambda a, b, c: a @ c,
    "matmul_t": lambda a, b, c: a.t() @ b,
    "bmm": lambda a, b, c: torch.bmm(a.reshape(2, 3, 5), b.reshape(2, 5, 3)),
}
for name, f in ops.items():
    check(name, *both(f))

item = x.cuda().sum().item()
check("item", lambda: item, lambda: x.sum().item())


def train(dev, opt_name):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to(dev)
    opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if opt_name == "sgd"
           else torch.optim.Adam(model.parameters(), lr=0.01))
    a, target = x.to(dev), (x @ w).to(dev)
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(a), target)
        loss.backward()
        opt.step()
    return torch.cat([p.detach().cpu().reshape(-1) for p in model.parameters()] + [loss.detach().cpu().reshape(1)])


for name, act in [("relu", torch.relu), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh),
                  ("gelu", torch.nn.functional.gelu)]:
    grads = []
    for dev in ("cuda", "cpu"):
        a = x.detach().to(dev).clone().requires_grad_()
        (act(a) * y.to(dev)).sum().backward()
        grads.append(a.grad)
    check(f"{name}_backward", lambda: grads[0], lambda: grads[1])

lin_dev = torch.nn.Linear(5, 3).cuda()
lin_cpu = torch.nn.Linear(5, 3)
lin_cpu.load_state_dict({k: v.cpu() for k, v in lin_dev.state_dict().items()})
out_dev, out_cpu = lin_dev(x.cuda()), lin_cpu(x)
check("linear_fwd", lambda: out_dev, lambda: out_cpu)
(out_dev * (x @ w).cuda()).sum().backward()
(out_cpu * (x @ w)).sum().backward()
check("linear_bwd_weight", lambda: lin_dev.weight.grad, lambda: lin_cpu.weight.grad)
check("linear_bwd_bias", lambda: lin_dev.bias.grad, lambda: lin_cpu.bias.grad)
check("sgd_momentum", lambda: train("cuda", "sgd"), lambda: train("cpu", "sgd"), rtol=1e-4, atol=1e-5)
check("adam", lambda: train("cuda", "adam"), lambda: train("cpu", "adam"), rtol=1e-4, atol=1e-5)

# A kernel without a CPU twin: the launch fails, never silently.
try:
    (x.cuda() ** 2.5).cpu()
except Exception as e:  # torch.AcceleratorError
    assert "no kernel image" in str(e), str(e)
    print("ok no_twin: pow fails with the no-kernel-image error")
else:
    print("FAIL no_twin: pow ran without a twin")
    sys.exit(1)
print(f"ops: {n_ok} ok")
