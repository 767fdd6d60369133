"""ops.py — real PyTorch's CUDA operations on the simulator against the same operations on the CPU.

Run under tools/torch-sim. Every operation the simulator covers (creation, copies and casts between
float32, float16, bfloat16, int64, int32 and bool, elementwise arithmetic and activations, pow,
comparisons, reductions with max/min/argmax, softmax, log_softmax, cross-entropy and nll_loss,
torch.cat, index_select and embeddings, layer norm, masked_fill, triu/tril, matmul, nn.Linear,
conv2d (strides, padding, dilation, groups, channels-last), batch norm in training and eval mode,
adaptive average pooling to 1x1 and 3x3, 2-D max pooling (with indices) and average pooling (NCHW and
channels-last), reflection padding, nearest and bilinear upsampling, softmax over a non-last
dimension, depthwise convolutions, RMS norm, pooling, softmax, layer norm, embedding's backward and
the rest of these in float16 and bfloat16, batch norm's own kernels and group norm's backward through their aten entry
points, gather, scatter, scatter_add, indexing with index tensors and index_put_, SGD
with momentum and Adam with PyTorch's foreach kernels, and SGD, Adam and AdamW with fused=True, also
under GradScaler, torch.all/any, scaled_dot_product_attention on the math and memory-efficient
backends and the latter's logsumexp),
forward and, where it has one,
backward, is computed on the device and on the CPU from the same inputs; the results must agree
within float32 tolerance (the GPU kernels' order of summation and fused multiply-adds differ from
the CPU's). Dropout draws the device's own random numbers, so its contract is checked instead
(outputs, mask, kept share, backward, same seed same mask), and the Philox generator against its
authors' known answers. Then an operation whose kernel has no CPU twin must fail with CUDA's
no-kernel-image error (the simulator names the kernel on stderr). Prints one line per operation
and `ops: N ok` at the end; exits non-zero on the first mismatch.
"""
import sys

import contextlib
import ctypes
import hashlib
import os

import torch
import torch.nn.functional as F

assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}")

gen = torch.Generator().manual_seed(0)
x = torch.randn(6, 5, generator=gen)
y = torch.rand(6, 5, generator=gen) + 0.5
w = torch.randn(5, 3, generator=gen)
labels = torch.tensor([4, 0, 2, 2, 1, 3])
n_ok = 0


def setitem_long(dev):
    ctx = torch.zeros(3, 8, dtype=torch.long, device=dev)
    ctx[:, :2] = labels.to(dev).reshape(3, 2)
    ctx[:, 5] = labels[:3].to(dev)
    return ctx


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
    "softmax": lambda a, b, c: a.softmax(-1),
    "log_softmax": lambda a, b, c: a.log_softmax(-1),
    "softmax_wide": lambda a, b, c: torch.cat([a] * 300, 1).softmax(-1),
    "log_softmax_wide": lambda a, b, c: torch.cat([a] * 300, 1).log_softmax(-1),
    "cross_entropy": lambda a, b, c: F.cross_entropy(a, labels.to(a.device)),
    "cross_entropy_sum": lambda a, b, c: F.cross_entropy(a, labels.to(a.device), reduction="sum"),
    "nll_loss_weight": lambda a, b, c: F.nll_loss(a.log_softmax(1), labels.to(a.device), weight=b[0]),
    "cat0": lambda a, b, c: torch.cat([a, b, a]),
    "cat1": lambda a, b, c: torch.cat([a, b.t().contiguous().t()], 1),
    "cat_3d": lambda a, b, c: torch.cat([a.reshape(2, 3, 5), b.reshape(2, 3, 5)], 2),
    # Slices of 80 and 160 bytes: PyTorch's vectorized cat (16-byte vectors over the flattened
    # trailing dimensions), along the last and a middle dimension.
    "cat_vec_last": lambda a, b, c: torch.cat([a.repeat(2, 4), b.repeat(2, 4)], 1),
    "cat_vec_mid": lambda a, b, c: torch.cat([a.repeat(2, 4).reshape(6, 2, 20), b.repeat(2, 4).reshape(6, 2, 20)], 1),
    "pow2": lambda a, b, c: a ** 2,
    "pow3": lambda a, b, c: a ** 3,
    "pow_m2": lambda a, b, c: b ** -2,
    "pow_2_5": lambda a, b, c: b ** 2.5,
    "pow_tensor": lambda a, b, c: b ** a,
    "abs": lambda a, b, c: a.abs(),
    "reciprocal": lambda a, b, c: b.reciprocal(),
    "log": lambda a, b, c: b.log(),
    "half": lambda a, b, c: (a * 100).half(),
    "half_float": lambda a, b, c: (a * 100).half().float(),
    "bfloat16_float": lambda a, b, c: (a * 100).bfloat16().float(),
    "long": lambda a, b, c: (a * 10).long(),
    "long_float": lambda a, b, c: (a * 10).long().float(),
    "int_long": lambda a, b, c: (a * 10).int().long(),
    "bool": lambda a, b, c: (a > 0).long().bool(),
    "long_strided": lambda a, b, c: (a * 10).long().t().contiguous(),
    "argmax": lambda a, b, c: a.argmax(-1),
    "argmax0": lambda a, b, c: a.argmax(0),
    "argmin": lambda a, b, c: a.argmin(1),
    "max_dim": lambda a, b, c: torch.stack(list(a.max(-1))[:1] + [a.max(-1)[1].float()]),
    "min_dim": lambda a, b, c: torch.stack([a.min(0)[0], a.min(0)[1].float()]),
    "max_all": lambda a, b, c: a.max(),
    "min_all": lambda a, b, c: a.min(),
    "all": lambda a, b, c: torch.stack([(a > -3).all(), (a > -1.5).all()]),
    "any_dim": lambda a, b, c: (a > 1).any(1),
    "all_float_dim1": lambda a, b, c: (a * (a > -1)).all(1),
    "any_long": lambda a, b, c: torch.stack([(a * 2).long().any(), (a > 5).long().any()]),
    "eq": lambda a, b, c: a.argmax(-1) == labels.to(a.device),
    "ne_float": lambda a, b, c: a != a.clamp(-0.5, 0.5),
    "lt_tensor": lambda a, b, c: a < b - 1,
    "long_add": lambda a, b, c: labels.to(a.device) + labels.to(a.device),
    "long_sub_scalar": lambda a, b, c: labels.to(a.device) - 3,
    "long_add_alpha": lambda a, b, c: torch.add(labels.to(a.device), labels.to(a.device), alpha=-2),
    "long_mul": lambda a, b, c: labels.to(a.device) * labels.to(a.device),
    "long_mul_scalar": lambda a, b, c: labels.to(a.device) * 7,
    "int_add": lambda a, b, c: labels.int().to(a.device) + 5,
    "eq_scalar_long": lambda a, b, c: labels.to(a.device) == 2,
    "ne_scalar_long": lambda a, b, c: labels.to(a.device) != 2,
    "eq_scalar": lambda a, b, c: a.clamp(-0.5, 0.5) == 0.5,
    "ne_scalar_strided": lambda a, b, c: a.clamp(-0.5, 0.5).t() != 0.5,
    "correct_share": lambda a, b, c: (labels.to(a.device) == 2).float().mean(),
    "logical_and": lambda a, b, c: torch.logical_and(a > 0, b > 1),
    "logical_or": lambda a, b, c: torch.logical_or(a > 0, b > 1),
    "logical_xor": lambda a, b, c: torch.logical_xor(a > 0, b > 1),
    "accuracy": lambda a, b, c: (a.argmax(-1) == labels.to(a.device)).float().mean(),
    "correct_count": lambda a, b, c: (a.argmax(-1) == labels.to(a.device)).sum(),
    "index_select": lambda a, b, c: a.index_select(0, labels.to(a.device)),
    "index_select1": lambda a, b, c: a.index_select(1, labels.to(a.device)),
    "embedding": lambda a, b, c: F.embedding(labels.to(a.device).reshape(2, 3), a),
    "layer_norm": lambda a, b, c: F.layer_norm(a, (5,)),
    "layer_norm_affine": lambda a, b, c: F.layer_norm(a, (5,), b[0], b[1]),
    "layer_norm_vec": lambda a, b, c: F.layer_norm(a.reshape(3, 10)[:, :8].contiguous(), (8,), b.reshape(-1)[:8], b.reshape(-1)[8:16]),
    "masked_fill": lambda a, b, c: a.masked_fill(b > 1.0, float("-inf")),
    "masked_fill_bcast": lambda a, b, c: a.reshape(2, 3, 5).masked_fill(b[:3] > 1.0, -1.0),
    "triu": lambda a, b, c: a.triu(1),
    "tril": lambda a, b, c: a.tril(),
    "arange_long": lambda a, b, c: torch.arange(3, 40, 3, device=a.device),
    "fill_long": lambda a, b, c: torch.full((4,), 7, dtype=torch.long, device=a.device),
    "setitem_long": lambda a, b, c: setitem_long(a.device),
}
for name, f in ops.items():
    check(name, *both(f))

# rsub and a scalar minus a tensor (CUDAFunctorOnOther_add), addcmul with a tensor and with a
# 0-dim CPU tensor as tensor2 (its scalar variant), and products of bools (MulFunctor<bool>), in
# each floating type: against the CPU on the same inputs, within the type's rounding.
for dt, tol in ((torch.float32, 1e-6), (torch.float16, 1e-3), (torch.bfloat16, 1e-2)):
    name = str(dt)[6:]
    for oname, f in [("rsub_scalar", lambda a, b: torch.rsub(a, 2.5)),
                     ("scalar_sub", lambda a, b: 0.75 - a),
                     ("rsub_alpha", lambda a, b: torch.rsub(a, 1.5, alpha=-0.25)),
                     ("addcmul", lambda a, b: torch.addcmul(a, b, a, value=0.375)),
                     ("addcmul_cpu_scalar", lambda a, b: torch.addcmul(a, b, torch.tensor(1.25, dtype=a.dtype), value=-2.0)),
                     ("bool_mul", lambda a, b: ((a > 0) * (b > 1)).to(a.dtype)),
                     ("isfinite_all", lambda a, b: torch.stack([torch.isfinite(a).all(), torch.isfinite(a / (b - b)).all()]).to(a.dtype))]:
        check(f"{oname}_{name}", lambda: f(x.to(dt).cuda(), y.to(dt).cuda()).float(),
              lambda: f(x.to(dt).float(), y.to(dt).float()).to(dt).float(), rtol=tol, atol=tol)

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


def grad_of(dev, f, *inputs):
    """The gradients of f(inputs).backward(weights) on dev, concatenated."""
    ts = [t.detach().to(dev).clone().requires_grad_() for t in inputs]
    out = f(*ts)
    out.backward(torch.linspace(-1, 2, out.numel()).reshape(out.shape).to(dev))
    return torch.cat([t.grad.reshape(-1) for t in ts])


wide = torch.randn(4, 1500, generator=gen)  # over 1024 classes: the block-per-row kernels
for name, f, arg in [("softmax_wide", lambda a: a.softmax(-1), wide),
                     ("log_softmax_wide", lambda a: a.log_softmax(-1), wide)]:
    # sums over 1500 values in another order: a looser tolerance
    check(f"{name}_backward", lambda: grad_of("cuda", f, arg), lambda: grad_of("cpu", f, arg), rtol=1e-4, atol=1e-5)
for name, f in [("softmax", lambda a: a.softmax(-1)), ("log_softmax", lambda a: a.log_softmax(1)),
                ("cross_entropy", lambda a: F.cross_entropy(a, labels.to(a.device))),
                ("cross_entropy_sum", lambda a: F.cross_entropy(a, labels.to(a.device), reduction="sum")),
                ("cross_entropy_1d", lambda a: F.cross_entropy(a[1], labels[0].to(a.device))),
                ("nll_loss_1d_weight", lambda a: F.nll_loss(a[2].log_softmax(0), labels[3].to(a.device), weight=a[3].detach().abs())),
                ("cat", lambda a: torch.cat([a, a * 2], 1)),
                ("pow", lambda a: a ** 2 + a.abs() ** 2.5),
                ("clamp", lambda a: a.clamp(-0.5, 0.5)),
                ("half_strided", lambda a: a.t().half().float()),
                ("masked_fill", lambda a: a.masked_fill(a > 0.5, 0.0)),
                ("triu", lambda a: a.triu(1)),
                ("layer_norm", lambda a: F.layer_norm(a, (5,))),
                ("embedding", lambda a: F.embedding(labels.to(a.device), a)),
                ("embedding_padding", lambda a: F.embedding(labels.to(a.device), a, padding_idx=2))]:
    check(f"{name}_backward", lambda: grad_of("cuda", f, x), lambda: grad_of("cpu", f, x))
ln_in = torch.randn(64, 128, generator=gen)
ln_w, ln_b = torch.randn(128, generator=gen), torch.randn(128, generator=gen)
for name, f in [("layer_norm_affine", lambda a, w_, b_: F.layer_norm(a, (5,), w_[:5], b_[:5])),
                ("layer_norm_affine_wide", lambda a, w_, b_: F.layer_norm(a, (128,), w_, b_))]:
    args = (x, y[0].repeat(26)[:128], w.reshape(-1).repeat(9)[:128]) if name.endswith("affine") else (ln_in, ln_w, ln_b)
    # sums over 64 rows of 128 in another order: a looser tolerance
    check(f"{name}_backward", lambda: grad_of("cuda", f, *args), lambda: grad_of("cpu", f, *args), rtol=1e-4, atol=1e-5)

# Convolutions (cuDNN's backend API: forward, backward data, backward filter) and batch norm
# (cuDNN's legacy calls), forward and backward of every input; the sums run in another order than
# the CPU's: a looser tolerance.
img = torch.randn(2, 4, 7, 7, generator=gen)
for name, cin, cout, k, kw in [("conv3x3", 4, 6, 3, dict(padding=1)),
                               ("conv3x3_stride2", 4, 6, 3, dict(stride=2, padding=1)),
                               ("conv3x3_nopad", 4, 5, 3, {}),
                               ("conv1x1", 4, 6, 1, {}),
                               ("conv1x1_stride2", 4, 8, 1, dict(stride=2)),
                               ("conv5x3_dilation2", 4, 3, (5, 3), dict(padding=(2, 1), dilation=2)),
                               ("conv3x3_groups2", 4, 6, 3, dict(padding=1, groups=2))]:
    ks = (k, k) if isinstance(k, int) else k
    filt = torch.randn(cout, cin // kw.get("groups", 1), *ks, generator=gen)
    f = lambda a, w_, kw=kw: F.conv2d(a, w_, **kw)
    check(name, lambda: f(img.cuda(), filt.cuda()), lambda: f(img, filt), rtol=1e-4, atol=1e-5)
    check(f"{name}_backward", lambda: grad_of("cuda", f, img, filt), lambda: grad_of("cpu", f, img, filt), rtol=1e-4, atol=1e-5)
bias6 = torch.randn(6, generator=gen)
f = lambda a, w_, b_: F.conv2d(a, w_, b_, padding=1)
filt = torch.randn(6, 4, 3, 3, generator=gen)
check("conv3x3_bias_backward", lambda: grad_of("cuda", f, img, filt, bias6), lambda: grad_of("cpu", f, img, filt, bias6), rtol=1e-4, atol=1e-5)
f = lambda a, w_: F.conv2d(a.contiguous(memory_format=torch.channels_last), w_, stride=2, padding=1)
check("conv3x3_channels_last_backward", lambda: grad_of("cuda", f, img, filt), lambda: grad_of("cpu", f, img, filt), rtol=1e-4, atol=1e-5)
bn_w, bn_b = torch.rand(4, generator=gen) + 0.5, torch.randn(4, generator=gen)


def bn_train(dev):
    """Batch norm in training mode: output, then the running statistics it updated."""
    rm, rv = torch.randn(4, generator=torch.Generator().manual_seed(1)).to(dev), torch.ones(4, device=dev) * 2
    out = F.batch_norm(img.to(dev), rm, rv, bn_w.to(dev), bn_b.to(dev), training=True, momentum=0.3, eps=1e-4)
    return torch.cat([out.reshape(-1), rm, rv])


check("batch_norm_train", lambda: bn_train("cuda"), lambda: bn_train("cpu"), rtol=1e-4, atol=1e-5)
f = lambda a, w_, b_: F.batch_norm(a, None, None, w_, b_, training=True)
check("batch_norm_train_backward", lambda: grad_of("cuda", f, img, bn_w, bn_b), lambda: grad_of("cpu", f, img, bn_w, bn_b), rtol=1e-4, atol=1e-5)
rm_e, rv_e = torch.randn(4, generator=gen), torch.rand(4, generator=gen) + 0.5
f = lambda a, w_, b_: F.batch_norm(a, rm_e.to(a.device), rv_e.to(a.device), w_, b_, training=False)
check("batch_norm_eval", lambda: f(img.cuda(), bn_w.cuda(), bn_b.cuda()), lambda: f(img, bn_w, bn_b))
f = lambda a: F.adaptive_avg_pool2d(a, 1)
check("adaptive_avg_pool2d_1_backward", lambda: grad_of("cuda", f, img), lambda: grad_of("cpu", f, img))

# Pooling. Max pooling: ResNet's stem (3x3, stride 2, padding 1), its indices (the backward
# routes each gradient by them), dilation with ceil mode, and the channels-last kernels. Average
# pooling: the padding counted or not, ceil mode, a divisor override, channels-last, and windows
# that tile the input (stride = kernel: PyTorch's non-overlapping backward, a 7x7 input leaves
# its last row and column outside every window).
to_cl = lambda a: a.contiguous(memory_format=torch.channels_last)
for name, f in [("max_pool2d", lambda a: F.max_pool2d(a, 3, 2, 1)),
                ("max_pool2d_dilation_ceil", lambda a: F.max_pool2d(a, (3, 2), (1, 2), (1, 0), dilation=2, ceil_mode=True)),
                ("max_pool2d_channels_last", lambda a: F.max_pool2d(to_cl(a), 3, 2, 1)),
                ("max_pool2d_channels_last_dilation", lambda a: F.max_pool2d(to_cl(a), (3, 2), (1, 2), (1, 0), dilation=2)),
                ("max_pool2d_module", lambda a: torch.nn.MaxPool2d(2)(a)),
                ("avg_pool2d", lambda a: F.avg_pool2d(a, 3, 2, 1)),
                ("avg_pool2d_exclude_pad", lambda a: F.avg_pool2d(a, 3, 2, 1, count_include_pad=False)),
                ("avg_pool2d_ceil", lambda a: F.avg_pool2d(a, (3, 2), (2, 3), 1, ceil_mode=True, count_include_pad=False)),
                ("avg_pool2d_divisor", lambda a: F.avg_pool2d(a, 3, 2, 1, divisor_override=4)),
                ("avg_pool2d_channels_last", lambda a: F.avg_pool2d(to_cl(a), 3, 2, 1, count_include_pad=False)),
                ("avg_pool2d_channels_last_ceil", lambda a: F.avg_pool2d(to_cl(a), 3, 2, 1, ceil_mode=True)),
                ("avg_pool2d_tiled", lambda a: F.avg_pool2d(a, 2)),
                ("avg_pool2d_tiled_divisor", lambda a: F.avg_pool2d(a, 2, divisor_override=3)),
                ("avg_pool2d_channels_last_tiled", lambda a: F.avg_pool2d(to_cl(a), (2, 3), divisor_override=5))]:
    check(name, lambda: f(img.cuda()), lambda: f(img))
    check(f"{name}_backward", lambda: grad_of("cuda", f, img), lambda: grad_of("cpu", f, img))
for name, f in [("max_pool2d_indices", lambda a: F.max_pool2d(a, 3, 2, 1, return_indices=True)[1]),
                ("max_pool2d_channels_last_indices", lambda a: F.max_pool2d(to_cl(a), 3, 2, 1, return_indices=True)[1])]:
    check(name, lambda: f(img.cuda()), lambda: f(img))

# Resampling and the normalisations PyTorch computes with its own kernels: reflection padding,
# nearest and bilinear upsampling (their backwards add atomically), softmax over a non-last
# dimension, adaptive average pooling to 3x3, depthwise convolutions (3x3 and 5x5 with a channel
# multiplier), RMS norm; then batch norm's kernels and group norm's backward through their aten
# entry points (F.batch_norm and F.group_norm also launch elementwise lambdas of their own), with
# the statistics computed on the CPU.
dw_w3, dw_w5 = torch.randn(4, 1, 3, 3, generator=gen), torch.randn(8, 1, 5, 5, generator=gen)
for name, f in [("pad_reflect", lambda a: F.pad(a, (2, 1, 0, 3), mode="reflect")),
                ("interpolate_nearest", lambda a: F.interpolate(a, size=(9, 11))),
                ("interpolate_nearest_exact", lambda a: F.interpolate(a, size=(5, 9), mode="nearest-exact")),
                ("interpolate_bilinear", lambda a: F.interpolate(a, scale_factor=2, mode="bilinear")),
                ("interpolate_bilinear_corners", lambda a: F.interpolate(a, size=(4, 10), mode="bilinear", align_corners=True)),
                ("softmax_dim1", lambda a: a.softmax(1)),
                ("log_softmax_dim2", lambda a: a.log_softmax(2)),
                ("adaptive_avg_pool2d_3", lambda a: F.adaptive_avg_pool2d(a, 3)),
                ("conv_depthwise3x3", lambda a: F.conv2d(a, dw_w3.to(a.device), stride=2, padding=1, groups=4)),
                ("conv_depthwise5x5_x2", lambda a: F.conv2d(a, dw_w5.to(a.device), padding=2, groups=4)),
                ("rms_norm", lambda a: F.rms_norm(a, (7,)))]:
    check(name, lambda: f(img.cuda()), lambda: f(img), rtol=1e-4, atol=1e-5)
    check(f"{name}_backward", lambda: grad_of("cuda", f, img), lambda: grad_of("cpu", f, img), rtol=1e-4, atol=1e-5)
# The same kernels and the pooling ones in float16 and bfloat16 (computed in float, rounded to the
# type), against the CPU's float32 results: the tolerance of the type.
for dt, tol in [(torch.float16, 2e-2), (torch.bfloat16, 6e-2)]:
    for name, f in [("max_pool2d", lambda a: F.max_pool2d(a, 3, 2, 1)),
                    ("avg_pool2d", lambda a: F.avg_pool2d(a, 3, 2, 1, count_include_pad=False)),
                    ("interpolate_bilinear", lambda a: F.interpolate(a, scale_factor=2, mode="bilinear")),
                    ("softmax_dim1", lambda a: a.softmax(1)),
                    ("conv_depthwise3x3", lambda a: F.conv2d(a, dw_w3.to(a.device, a.dtype), padding=1, groups=4)),
                    ("layer_norm", lambda a: F.layer_norm(a, (7,)))]:
        check(f"{name}_{str(dt)[6:]}", lambda: f(img.to(dt).cuda()).float(), lambda: f(img.to(dt).float()), rtol=tol, atol=tol)
    f = lambda a, dt=dt: F.embedding(labels.to(a.device), a.to(dt)).float()
    check(f"embedding_backward_{str(dt)[6:]}", lambda: grad_of("cuda", f, x), lambda: grad_of("cpu", f, x), rtol=tol, atol=tol)
bn_img = img.permute(1, 0, 2, 3).reshape(4, -1).t().contiguous()  # (98, 4): the channels-last kernels
for name, a in [("", img), ("_2d", bn_img)]:
    dims = [0] + list(range(2, a.dim()))
    bc = lambda v: v.reshape([1, -1] + [1] * (a.dim() - 2))
    mean, invstd = a.mean(dims), 1 / torch.sqrt(a.var(dims, unbiased=False) + 1e-5)
    go, bw, bb = torch.linspace(-1, 2, a.numel()).reshape(a.shape), y[0, :4], x[0, :4]
    check(f"batch_norm_stats{name}", lambda: torch.stack(torch.batch_norm_stats(a.cuda(), 1e-5)),
          lambda: torch.stack([mean, invstd]), rtol=1e-4, atol=1e-5)
    check(f"batch_norm_elemt{name}", lambda: torch.batch_norm_elemt(a.cuda(), bw.cuda(), bb.cuda(), mean.cuda(), invstd.cuda(), 1e-5),
          lambda: (a - bc(mean)) * bc(invstd) * bc(bw) + bc(bb), rtol=1e-4, atol=1e-5)
    bwd = lambda dev: torch.cat([t.reshape(-1) for t in torch.ops.aten.native_batch_norm_backward(
        go.to(dev), a.to(dev), bw.to(dev), None, None, mean.to(dev), invstd.to(dev), True, 1e-5, [True, True, True])])
    check(f"batch_norm_backward{name}", lambda: bwd("cuda"), lambda: bwd("cpu"), rtol=1e-4, atol=1e-5)
gn_in = img.contiguous(memory_format=torch.channels_last)
gn_mean = img.reshape(2, 2, -1).mean(-1)
gn_rstd = 1 / torch.sqrt(img.reshape(2, 2, -1).var(-1, unbiased=False) + 1e-5)
gnb = lambda dev, a: torch.cat([t.reshape(-1) for t in torch.ops.aten.native_group_norm_backward(
    torch.linspace(-1, 2, a.numel()).reshape(a.shape).to(dev), a.to(dev), gn_mean.to(dev), gn_rstd.to(dev), y[1, :4].to(dev),
    2, 4, 49, 2, [True, True, True])])
check("group_norm_backward_channels_last", lambda: gnb("cuda", gn_in), lambda: gnb("cpu", img), rtol=1e-4, atol=1e-5)

# gather, scatter, scatter_add (each one's backward is another of them), the scalar scatter, and
# advanced indexing with index tensors: a[i0], a[i0, i1] and index_put_ without accumulation.
# Repeated indices only where the result does not depend on the order (scatter_add; gather).
sg_idx = torch.tensor([[4, 0, 2], [2, 1, 3], [0, 0, 4], [1, 4, 4], [3, 2, 0], [0, 1, 2]])
sg_perm = torch.tensor([[3, 1, 4, 0, 2], [0, 2, 1, 4, 3], [4, 3, 2, 1, 0]])
i0, i1 = torch.tensor([4, 0, -1]), torch.tensor([1, 3, 3])
for name, f in [("gather", lambda a: torch.gather(a, 1, sg_idx.to(a.device))),
                ("gather_dim0", lambda a: torch.gather(a, 0, sg_idx.to(a.device))),
                ("gather_strided", lambda a: torch.gather(a.t(), 1, sg_idx[:5].to(a.device))),
                ("gather_3d", lambda a: torch.gather(a.reshape(2, 3, 5), 2, sg_idx.reshape(2, 3, 3).to(a.device))),
                ("scatter", lambda a: torch.zeros(3, 5, device=a.device).scatter(1, sg_perm.to(a.device), a[:3])),
                ("scatter_dim0", lambda a: a.clone().scatter(0, sg_idx[:2].to(a.device), a[4:, :3] * 3)),
                ("scatter_add", lambda a: torch.zeros(6, 5, device=a.device).scatter_add(1, sg_idx.to(a.device), a[:, :3])),
                ("scatter_add_dim0", lambda a: a.clone().scatter_add(0, (sg_idx % 5).to(a.device), a[:, 2:])),
                ("index_tensor", lambda a: a[i0.to(a.device)] * 1.0),
                ("index_tensor2", lambda a: a[i0.to(a.device), i1.to(a.device)] * 1.0),
                ("index_put", lambda a: a.clone().index_put_((i0.to(a.device),), a[1:4] * 2)),
                ("index_put2", lambda a: a.clone().index_put_((i0.to(a.device), i1.to(a.device)), a[0, :3] - 1))]:
    check(name, lambda: f(x.cuda()), lambda: f(x))
    if not name.startswith("index_tensor"):  # the backward of a[i] accumulates (a sort on the GPU: no twin)
        check(f"{name}_backward", lambda: grad_of("cuda", f, x), lambda: grad_of("cpu", f, x))
for name, f in [("max_dim", lambda a: a.max(-1)[0]), ("min_dim0", lambda a: a.min(0)[0])]:
    check(f"{name}_backward", lambda: grad_of("cuda", f, x), lambda: grad_of("cpu", f, x))  # a scatter of the gradient
check("scatter_scalar", lambda: x.cuda().scatter_(1, sg_idx.cuda(), 2.5), lambda: x.clone().scatter_(1, sg_idx, 2.5))
check("gather_long", lambda: torch.gather((x * 10).long().cuda(), 1, sg_idx.cuda()), lambda: torch.gather((x * 10).long(), 1, sg_idx))

# Dropout: the device draws its own random numbers (cuRAND's Philox, not the CPU's generator), so
# the check is of the contract: every output is 0 or x / (1 - p), the mask says which, the kept
# share is near 1 - p, the backward scales the incoming gradient by the same mask, the same seed
# gives the same mask and the next call another one.
big = torch.randn(64, 1000, generator=gen)
for p_drop in (0.2, 0.5):
    torch.manual_seed(7)
    a = big.cuda().requires_grad_()
    out = F.dropout(a, p_drop)
    out.backward(torch.full_like(out, 3.0))
    o, g = out.detach().cpu(), a.grad.cpu()
    kept = o != 0
    share = kept.float().mean().item()
    ok = torch.allclose(o[kept], big[kept] / (1 - p_drop), rtol=1e-6) and \
        torch.equal(g, kept.float() * 3.0 / (1 - p_drop)) and abs(share - (1 - p_drop)) < 0.01
    torch.manual_seed(7)
    again = F.dropout(big.cuda(), p_drop).cpu()
    other = F.dropout(big.cuda(), p_drop).cpu()
    ok = ok and torch.equal(again, o) and not torch.equal(other != 0, kept)
    if not ok:
        print(f"FAIL dropout p={p_drop}: kept share {share:.4f}")
        sys.exit(1)
    n_ok += 1
    digest = hashlib.sha256(o.numpy().tobytes()).hexdigest()[:16]
    print(f"ok dropout p={p_drop} (the same mask for the same seed; digest {digest})")

# torch.rand / randn / uniform_ / normal_ on the device: the device's own Philox numbers, so
# their distribution is checked (100000 samples: bounds far outside sampling noise), the same
# seed must give the same numbers, and their digest is printed (the torch-sim-ops case requires
# the same lines with the library).
torch.manual_seed(3)
u = torch.rand(100000, device="cuda").cpu()
nrm = torch.randn(100000, device="cuda").cpu()
v = torch.empty(10000, device="cuda").uniform_(-2, 3).cpu()
m = torch.empty(10000, device="cuda").normal_(5, 0.5).cpu()
torch.manual_seed(3)
u_again = torch.rand(100000, device="cuda").cpu()
lag = torch.corrcoef(torch.stack([u[:-1], u[1:]]))[0, 1].item()
stats = [("rand in [0, 1)", u.min() >= 0 and u.max() < 1),
         ("rand mean", abs(u.mean() - 0.5) < 0.005), ("rand std", abs(u.std() - 12 ** -0.5) < 0.003),
         ("rand lag-1 correlation", abs(lag) < 0.02), ("rand same seed", torch.equal(u, u_again)),
         ("randn mean", abs(nrm.mean()) < 0.015), ("randn std", abs(nrm.std() - 1) < 0.015),
         ("randn within 1 sigma", abs((nrm.abs() < 1).float().mean() - 0.6827) < 0.01),
         ("uniform_ bounds", v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.05),
         ("normal_ moments", abs(m.mean() - 5) < 0.02 and abs(m.std() - 0.5) < 0.02)]
for what, good in stats:
    if not good:
        print(f"FAIL {what}")
        sys.exit(1)
n_ok += 1
digest = hashlib.sha256(u.numpy().tobytes() + nrm.numpy().tobytes()).hexdigest()[:16]
print(f"ok rand, randn, uniform_, normal_ (digest {digest})")

# The same kernels into float16 and bfloat16 (the numbers drawn in float as for float32, then
# rounded once: the same seed gives float32's numbers rounded, except where a uniform number
# rounds up to the upper bound, which becomes the lower one), bernoulli_ (in-place dropout) and
# random_ on int64 (the seed PyTorch draws for cuDNN's recurrent dropout).
for dt in (torch.float16, torch.bfloat16):
    torch.manual_seed(3)
    h_u, h_n = torch.rand(100000, device="cuda", dtype=dt).cpu(), torch.randn(100000, device="cuda", dtype=dt).cpu()
    h_v = torch.empty(10000, device="cuda", dtype=dt).uniform_(-2, 3).cpu()
    top = u.to(dt) == 1
    stats = [(f"randn {dt} is float32's rounded", torch.equal(h_n, nrm.to(dt))),
             (f"rand {dt} is float32's rounded", torch.equal(h_u[~top], u.to(dt)[~top]) and bool((h_u[top] == 0).all())),
             (f"rand {dt} in [0, 1)", h_u.min() >= 0 and h_u.max() < 1),
             (f"uniform_ {dt} bounds", h_v.min() >= -2 and h_v.max() < 3 and abs(h_v.float().mean() - 0.5) < 0.05)]
    for what, good in stats:
        if not good:
            print(f"FAIL {what}")
            sys.exit(1)
    n_ok += 1
b = torch.empty(100000, device="cuda").bernoulli_(0.3).cpu()
kept = torch.nn.functional.dropout(torch.ones(100000, device="cuda"), 0.25, inplace=True).cpu()
r64 = torch.empty(100000, dtype=torch.int64, device="cuda").random_().cpu()
# Outputs that are not trivially 1-d (a transposed tensor, a 0-dim one) go through the kernels'
# offset-calculator variant; a 0-dim int64 random_ is how PyTorch seeds cuDNN's recurrent dropout.
nc = torch.empty(300, 400, device="cuda").t().uniform_(-1, 1).cpu()
seed0 = torch.empty((), dtype=torch.int64, device="cuda").random_().item()
torch.manual_seed(5)
lstm = torch.nn.LSTM(8, 16, num_layers=2, dropout=0.3).cuda()
lstm_out, _ = lstm(torch.randn(5, 3, 8, device="cuda"))
lstm_out.sum().backward()
lstm_bits = lstm_out.detach().cpu().numpy().tobytes() + lstm.weight_ih_l0.grad.cpu().numpy().tobytes()
stats = [("bernoulli_ values", bool(((b == 0) | (b == 1)).all())), ("bernoulli_ mean", abs(b.mean() - 0.3) < 0.005),
         ("in-place dropout", abs((kept == 0).float().mean() - 0.25) < 0.005 and bool(((kept == 0) | (kept == 4 / 3)).all())),
         ("random_ int64 range", bool((r64 >= 0).all())),
         ("random_ int64 spread", abs(r64.double().mean() / 2.0 ** 63 - 0.5) < 0.01 and r64.unique().numel() == r64.numel()),
         ("uniform_ transposed", nc.min() >= -1 and nc.max() < 1 and abs(nc.mean()) < 0.01), ("random_ 0-dim", seed0 >= 0),
         ("LSTM with dropout through cuDNN", bool(torch.isfinite(lstm_out.detach().cpu()).all()) and lstm.weight_ih_l0.grad.abs().sum() > 0)]
for what, good in stats:
    if not good:
        print(f"FAIL {what}")
        sys.exit(1)
n_ok += 1
digest = hashlib.sha256(h_u.float().numpy().tobytes() + b.numpy().tobytes() + r64.numpy().tobytes() + nc.numpy().tobytes() +
                        lstm_bits).hexdigest()[:16]
print(f"ok rand, randn, uniform_ in float16 and bfloat16, bernoulli_, in-place dropout, random_, transposed and 0-dim "
      f"outputs, an LSTM with dropout through cuDNN (digest {digest})")

# Philox4x32-10 against the known-answer vectors of its authors (Random123's kat_vectors).
# The twins' library is already loaded (tools/torch-sim preloads it): found by its path there.
twins = ctypes.CDLL(next(p for p in os.environ.get("LD_PRELOAD", "").split(":") if p.endswith("/libtorchtwins.so")))
for ctr, key, want in [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
                       ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
                       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
                        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]:
    out4 = (ctypes.c_uint32 * 4)()
    twins.simtw_philox((ctypes.c_uint32 * 4)(*ctr), (ctypes.c_uint32 * 2)(*key), out4)
    if tuple(out4) != want:
        print(f"FAIL philox {ctr} {key}: {[hex(v) for v in out4]}")
        sys.exit(1)
n_ok += 1
print("ok philox known answers")

# Sorting short slices (bitonic sort) and top-k (single-block selection), in the three float
# types: values as the CPU's, ties included (repeated values, a NaN, -0 and +0); the indices
# always pick the values out of the input. Which of tied values' indices comes first is the
# bitonic network's (torch.sort is not stable by default), so only the values are compared.
for dt in (torch.float32, torch.float16, torch.bfloat16):
    name = str(dt)[6:]
    s = torch.randint(0, 4, (5, 13), generator=gen).to(dt)
    s[1, 3], s[2, 0], s[2, 1] = float("nan"), -0.0, 0.0
    for desc in (False, True):
        check(f"sort_{name}{'_descending' if desc else ''}", lambda: s.cuda().sort(1, descending=desc).values.nan_to_num(9),
              lambda: s.sort(dim=1, descending=desc).values.nan_to_num(9), rtol=0, atol=0)
        check(f"sort_indices_{name}{'_descending' if desc else ''}",
              lambda: s.gather(1, s.cuda().sort(1, descending=desc).indices.cpu()).nan_to_num(9),
              lambda: s.sort(dim=1, descending=desc).values.nan_to_num(9), rtol=0, atol=0)
    check(f"sort_strided_{name}", lambda: s.cuda().t().sort(0).values.nan_to_num(9),
          lambda: s.t().sort(0).values.nan_to_num(9), rtol=0, atol=0)
    for largest in (True, False):
        which = "largest" if largest else "smallest"
        check(f"topk_{which}_{name}", lambda: s.cuda().topk(4, 1, largest=largest).values.nan_to_num(9),
              lambda: s.topk(4, 1, largest=largest).values.nan_to_num(9), rtol=0, atol=0)
        check(f"topk_{which}_unsorted_indices_{name}",
              lambda: s.gather(1, s.cuda().topk(4, 1, largest=largest, sorted=False).indices.cpu()).sort(1).values.nan_to_num(9),
              lambda: s.topk(4, 1, largest=largest).values.sort(1).values.nan_to_num(9), rtol=0, atol=0)

# index_copy_ and index_fill_ (also index_copy's backward), and the scatter-add behind gather's,
# index_select's and index_add's backward in the half types (an atomic add rounding each sum).
def grad_typed(dev, f, *inputs):
    """grad_of's gradients, the output's weights in its own dtype."""
    ts = [t.detach().to(dev).clone().requires_grad_() for t in inputs]
    out = f(*ts)
    out.backward(torch.linspace(-1, 2, out.numel()).reshape(out.shape).to(dev, out.dtype))
    return torch.cat([t.grad.reshape(-1) for t in ts])


for dt, tol in ((torch.float32, 1e-6), (torch.float16, 1e-3), (torch.bfloat16, 1e-2)):
    name = str(dt)[6:]
    a, b = torch.randn(6, 7, generator=gen).to(dt), torch.randn(2, 7, generator=gen).to(dt)
    ci, fi = torch.tensor([4, 1]), torch.tensor([5, -1, 2])
    check(f"index_copy_{name}", lambda: a.cuda().index_copy(0, ci.cuda(), b.cuda()), lambda: a.index_copy(0, ci, b),
          rtol=0, atol=0)
    check(f"index_fill_{name}", lambda: a.cuda().t().index_fill(1, fi.cuda(), -2.5), lambda: a.t().index_fill(1, fi, -2.5),
          rtol=0, atol=0)
    gi = torch.tensor([[0, 6, 6], [2, 2, 2], [1, 0, 5], [3, 3, 0], [6, 5, 4], [0, 0, 0]])
    si = torch.tensor([3, 0, 3, 5, 3])
    for what, f, args in [("index_copy", lambda t, u: t.index_copy(0, ci.to(t.device), u), (a, b)),
                          ("gather", lambda t: t.gather(1, gi.to(t.device)), (a,)),
                          ("index_select", lambda t: t.index_select(0, si.to(t.device)), (a,)),
                          ("index_add", lambda t, u: t.index_add(0, ci.to(t.device), u), (a, b))]:
        check(f"{what}_backward_{name}", lambda: grad_typed("cuda", f, *args), lambda: grad_typed("cpu", f, *args),
              rtol=tol, atol=tol)

# index_put_ with accumulate=True: cub's radix sort of the destination rows (stable), then the
# sorted accumulation; the same path without accumulation under deterministic algorithms.
for dt, tol in ((torch.float32, 1e-6), (torch.float16, 1e-3), (torch.bfloat16, 1e-2)):
    name = str(dt)[6:]
    a, v = torch.randn(7, 5, generator=gen).to(dt), torch.randn(9, 5, generator=gen).to(dt)
    pi = torch.tensor([0, 2, 0, 6, 2, 2, 1, 0, -1])
    check(f"index_put_accumulate_{name}", lambda: a.cuda().index_put((pi.cuda(),), v.cuda(), accumulate=True),
          lambda: a.float().index_put((pi,), v.float(), accumulate=True).to(dt), rtol=tol, atol=tol)
    torch.use_deterministic_algorithms(True)
    check(f"index_put_deterministic_{name}", lambda: a.cuda().index_put((pi.cuda(),), v.cuda()),
          lambda: a.index_put((pi,), v), rtol=0, atol=0)
    torch.use_deterministic_algorithms(False)

# Convolutions in half and bfloat16 through the simulated cuDNN's backend API (float products
# and sums, each result rounded once): forward, data and filter gradients against the CPU's.
for dt, tol in ((torch.float16, 2e-3), (torch.bfloat16, 2e-2)):
    name = str(dt)[6:]
    img, filt = torch.randn(2, 3, 6, 5, generator=gen).to(dt), torch.randn(4, 3, 3, 3, generator=gen).to(dt)
    for what, f in [("conv2d", lambda a, b: F.conv2d(a, b, padding=1)),
                    ("conv2d_strided", lambda a, b: F.conv2d(a, b, stride=2, dilation=1)),
                    ("conv_transpose2d", lambda a, b: F.conv_transpose2d(a, b, stride=2))]:
        if what == "conv_transpose2d":
            a_in = torch.randn(2, 4, 5, 4, generator=gen).to(dt)
        else:
            a_in = img
        check(f"{what}_{name}", lambda: f(a_in.cuda(), filt.cuda()), lambda: f(a_in.float(), filt.float()).to(dt),
              rtol=tol, atol=tol)
        check(f"{what}_backward_{name}", lambda: grad_typed("cuda", f, a_in, filt),
              lambda: grad_typed("cpu", lambda a, b: f(a.float(), b.float()), a_in, filt).to(dt), rtol=4 * tol, atol=4 * tol)

# embedding_bag's forward in sum and mean modes, with and without a padding row (its backward
# has no twin yet).
for dt, tol in ((torch.float32, 1e-6), (torch.float16, 1e-3), (torch.bfloat16, 1e-2)):
    name = str(dt)[6:]
    ew, ei, eo = torch.randn(10, 6, generator=gen).to(dt), torch.tensor([3, 7, 3, 0, 9, 7, 7, 1]), torch.tensor([0, 3, 3, 5])
    for mode in ("sum", "mean"):
        for pad in (None, 7):
            check(f"embedding_bag_{mode}{'_padding' if pad else ''}_{name}",
                  lambda: F.embedding_bag(ei.cuda(), ew.cuda(), eo.cuda(), mode=mode, padding_idx=pad),
                  lambda: F.embedding_bag(ei, ew.float(), eo, mode=mode, padding_idx=pad).to(dt), rtol=tol, atol=tol)

# scaled_dot_product_attention forced onto the math backend (matmuls, softmax and torch.all's
# check of the mask) and onto the memory-efficient one (the fmha_cutlassF/fmha_cutlassB twins),
# plain, causal (from the top left, and from the bottom right), with an additive float mask (its
# gradient too), a boolean mask and grouped-query heads; one case longer than a block of 64 queries and keys: output and the gradients of the
# inputs against the CPU's float32 on the same (rounded) inputs.
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right


def sdpa_run(dev, dt, mode, shape, backend=None):
    b_, h, hk, m_, n_, k_, kv = shape
    g = torch.Generator().manual_seed(8)
    ts = [torch.randn(b_, h, m_, k_, generator=g), torch.randn(b_, hk, n_, k_, generator=g),
          torch.randn(b_, hk, n_, kv, generator=g)]
    kw = {"enable_gqa": hk != h}
    if mode == "causal":
        kw["is_causal"] = True
    elif mode == "mask":
        ts.append(torch.randn(b_, h, m_, n_, generator=g))
    elif mode == "lower_right":  # causal, aligned to the last key (the kernels' other mask type)
        kw["attn_mask"] = causal_lower_right(m_, n_)
    elif mode == "bool_mask":  # every query keeps its diagonal key
        kw["attn_mask"] = ((torch.rand(m_, n_, generator=g) > 0.4) | torch.eye(m_, n_, dtype=torch.bool)).to(dev)
    ts = [t.to(dt).to(torch.float32 if dev == "cpu" else dt).to(dev).requires_grad_() for t in ts]
    with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
        out = F.scaled_dot_product_attention(ts[0], ts[1], ts[2], attn_mask=ts[3], **kw) if mode == "mask" else \
            F.scaled_dot_product_attention(*ts, **kw)
        out.backward(torch.randn(out.shape, generator=g).to(dt).to(out.dtype).to(dev))
    return torch.cat([out.detach().float().cpu().reshape(-1)] + [t.grad.float().cpu().reshape(-1) for t in ts])


SDPA_TOL = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 5e-3), torch.bfloat16: (5e-2, 3e-2)}
for backend, bname in ((SDPBackend.MATH, "math"), (SDPBackend.EFFICIENT_ATTENTION, "efficient")):
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        rtol, atol = SDPA_TOL[dt]
        tag = str(dt).replace("torch.", "")
        for mode, shape in (("plain", (2, 3, 3, 5, 7, 8, 16)), ("causal", (1, 2, 2, 6, 6, 8, 8)),
                            ("mask", (2, 2, 2, 5, 7, 8, 8)), ("bool_mask", (1, 2, 2, 6, 9, 16, 8)),
                            ("lower_right", (2, 2, 2, 5, 9, 8, 8)), ("gqa_causal", (2, 4, 2, 5, 5, 8, 8)),
                            ("long_causal", (1, 2, 2, 70, 130, 16, 16))):
            if dt != torch.float32 and mode.startswith("long"):
                continue
            m_ = "causal" if mode.endswith("causal") else mode
            check(f"sdpa_{bname}_{mode}_{tag}", lambda: sdpa_run("cuda", dt, m_, shape, backend),
                  lambda: sdpa_run("cpu", dt, m_, shape), rtol=rtol, atol=atol)

# A query whose keys are all masked: its output row and its gradients are 0 on both backends, as
# on the CPU, and the other rows' are unharmed.
fm_mask = torch.ones(4, 6, dtype=torch.bool)
fm_mask[2] = False


def fully_masked(dev, backend=None):
    g = torch.Generator().manual_seed(10)
    ts = [torch.randn(1, 2, n_, 8, generator=g).to(dev).requires_grad_() for n_ in (4, 6, 6)]
    with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
        out = F.scaled_dot_product_attention(*ts, attn_mask=fm_mask.to(dev))
        out.backward(torch.randn(out.shape, generator=g).to(dev))
    return torch.cat([out.detach().cpu().reshape(-1)] + [t.grad.cpu().reshape(-1) for t in ts])


for backend, bname in ((SDPBackend.MATH, "math"), (SDPBackend.EFFICIENT_ATTENTION, "efficient")):
    check(f"sdpa_{bname}_fully_masked_row", lambda: fully_masked("cuda", backend), lambda: fully_masked("cpu"),
          rtol=1e-4, atol=1e-5)


def eff_lse(dev):
    """The memory-efficient forward's logsumexp (B, H, M rounded up to 32; +inf in the padding)
    and output, causal from the top left, on the device; the same from the CPU's float32."""
    g = torch.Generator().manual_seed(9)
    q, k_, v = (torch.randn(2, m_, 3, 16, generator=g) for m_ in (37, 50, 50))
    if dev == "cpu":
        s_ = torch.einsum("bmhk,bnhk->bhmn", q, k_) * 16 ** -0.5
        s_ = s_.masked_fill(~torch.ones(37, 50, dtype=torch.bool).tril(), float("-inf"))
        out, lse = torch.einsum("bhmn,bnhk->bmhk", s_.softmax(-1), v), torch.logsumexp(s_, -1)
        return torch.cat([out.reshape(-1), lse.reshape(-1), torch.ones(2 * 3 * 27)])
    out, lse = torch.ops.aten._efficient_attention_forward(q.cuda(), k_.cuda(), v.cuda(), None, None, None, None,
                                                           None, 0.0, 1, True)[:2]
    lse = lse.cpu()
    return torch.cat([out.cpu().reshape(-1), lse[..., :37].reshape(-1), lse[..., 37:].isposinf().float().reshape(-1)])


check("efficient_attention_logsumexp", lambda: eff_lse("cuda"), lambda: eff_lse("cpu"), rtol=1e-5, atol=1e-5)

# A kernel without a CPU twin (kthvalue's selection): the launch fails, never silently.
try:
    torch.kthvalue(x.cuda(), 2, 1)[0].cpu()
except Exception as e:  # torch.AcceleratorError
    assert "no kernel image" in str(e), str(e)
    print("ok no_twin: kthvalue fails with the no-kernel-image error")
else:
    print("FAIL no_twin: kthvalue ran without a twin")
    sys.exit(1)
# Group norm (4-d, 2-d: GroupNorm1dForward/Backward, channels-last) and batch norm in training
# mode with its running statistics, in float32, float16 and bfloat16: forward and gradients
# against the CPU within the dtype's rounding.
HALF_TOL = {torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-3), torch.bfloat16: (5e-2, 1e-2)}


def norm_run(dev, dt, f, shapes):
    """f's output and the gradients of its inputs (of shapes, dtype dt) on dev, as float32."""
    g = torch.Generator().manual_seed(5)
    ts = [torch.randn(*s_, generator=g).to(dt).to(dev).requires_grad_() for s_ in shapes]
    out = f(*ts)
    out.backward(torch.randn(out.shape, generator=g).to(dt).to(dev))
    return torch.cat([out.detach().float().cpu().reshape(-1)] + [t.grad.float().cpu().reshape(-1) for t in ts])


def bn_stats_run(dev, dt):
    """BatchNorm2d in training mode, two steps: output, input gradient, running statistics."""
    torch.manual_seed(2)
    m = torch.nn.BatchNorm2d(6).to(dt).to(dev)
    a = torch.randn(4, 6, 5, 5, generator=torch.Generator().manual_seed(6)).to(dt).to(dev).requires_grad_()
    for _ in range(2):
        out = m(a)
        (out.float() * torch.linspace(-1, 2, out.numel()).view(out.shape).to(dev)).sum().backward()
    return torch.cat([t.detach().float().cpu().reshape(-1) for t in (out, a.grad, m.running_mean, m.running_var, m.weight.grad)])


norm_cases = [("group_norm_affine", lambda a, w_, b_: F.group_norm(a, 3, w_, b_), [(4, 6, 5, 3), (6,), (6,)]),
              ("group_norm_plain", lambda a: F.group_norm(a, 2), [(2, 4, 3, 3)]),
              ("group_norm_weight", lambda a, w_: F.group_norm(a, 2, w_), [(2, 4, 3, 3), (4,)]),
              ("group_norm_channels_last", lambda a, w_, b_: F.group_norm(to_cl(a), 2, w_, b_), [(2, 4, 3, 3), (4,), (4,)]),
              ("group_norm_1d_affine", lambda a, w_, b_: F.group_norm(a, 3, w_, b_), [(5, 48), (48,), (48,)]),
              ("group_norm_1d_plain", lambda a: F.group_norm(a, 3), [(5, 48)]),
              ("group_norm_1d_weight", lambda a, w_: F.group_norm(a, 3, w_), [(5, 48), (48,)]),
              ("group_norm_1d_bias", lambda a, b_: F.group_norm(a, 3, None, b_), [(5, 48), (48,)]),
              ("batch_norm_train_stats_free", lambda a: F.batch_norm(a, None, None, training=True), [(4, 3, 5, 5)])]
for dt in (torch.float32, torch.float16, torch.bfloat16):
    rtol, atol = HALF_TOL[dt]
    tag = str(dt).replace("torch.", "")
    for name, f, shapes in norm_cases:
        check(f"{name}_{tag}", lambda: norm_run("cuda", dt, f, shapes), lambda: norm_run("cpu", dt, f, shapes), rtol=rtol, atol=atol)
    check(f"batch_norm2d_running_stats_{tag}", lambda: bn_stats_run("cuda", dt), lambda: bn_stats_run("cpu", dt), rtol=rtol, atol=atol)


# Mixed precision: a small model whose parameters are float16 or bfloat16, trained with the
# foreach optimizers (AdamW, Adam, SGD with momentum) after clip_grad_norm_ (foreach and not):
# the foreach kernels in the half types, against the same steps on the CPU.
def train_half(dev, dt, opt_name):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to(dt).to(dev)
    params = model.parameters()
    opt = (torch.optim.AdamW(params, lr=0.01, eps=1e-3, foreach=True) if opt_name == "adamw" else
           torch.optim.Adam(params, lr=0.01, eps=1e-3, foreach=True) if opt_name == "adam" else
           torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=True))
    g = torch.Generator().manual_seed(3)
    a, target = torch.randn(16, 5, generator=g).to(dt).to(dev), torch.randn(16, 3, generator=g).to(dt).to(dev)
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(model(a), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, foreach=True)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.4, foreach=False)
        opt.step()
    return torch.cat([p_.detach().float().cpu().reshape(-1) for p_ in model.parameters()])


for dt in (torch.float16, torch.bfloat16):
    rtol, atol = HALF_TOL[dt]
    for opt_name in ("adamw", "adam", "sgd"):
        check(f"train_{opt_name}_foreach_{str(dt).replace('torch.', '')}", lambda: train_half("cuda", dt, opt_name),
              lambda: train_half("cpu", dt, opt_name), rtol=rtol, atol=atol)


def addc_0d(dev, dt):
    """_foreach_addcmul_ and _foreach_addcdiv_ whose tensor1 list holds 0-d tensors."""
    g = torch.Generator().manual_seed(4)
    a = [torch.randn(7, generator=g).to(dt).to(dev) for _ in range(3)]
    s_ = [torch.randn((), generator=g).to(dt).to(dev) for _ in range(3)]
    c = [(torch.rand(7, generator=g) + 0.5).to(dt).to(dev) for _ in range(3)]
    torch._foreach_addcmul_(a, s_, c, value=0.7)
    b = [t.clone() for t in a]
    torch._foreach_addcdiv_(b, s_, c, value=-0.3)
    return torch.cat([t.float().cpu() for t in a + b])


for dt in (torch.float32, torch.float16, torch.bfloat16):
    rtol, atol = HALF_TOL[dt]
    check(f"foreach_addcmul_addcdiv_0d_{str(dt).replace('torch.', '')}", lambda: addc_0d("cuda", dt), lambda: addc_0d("cpu", dt), rtol=rtol, atol=atol)


# The fused optimizers (fused=True: FusedSgdMathFunctor, FusedAdamMathFunctor in its Adam, AdamW
# and amsgrad forms) in float32, float16 and bfloat16, three steps on three tensors (one of two
# chunks of 65536), the learning rate a float or a tensor on the device (every optimizer gets
# both forms over the three types), against CPU PyTorch's fused implementation from the same
# inputs: parameters and optimizer state within the type's rounding. The CPU's Adam rounds its
# float32 intermediates in another order (measured: 1e-6 apart in float32, one unit in the last
# place of float16 and bfloat16); SGD agrees to the bit here. A digest of the device's results
# goes to the output, which the case compares with and without the library.
FUSED_OPTS = {
    "sgd": lambda ps, lr: torch.optim.SGD(ps, lr=lr, fused=True),
    "sgd_momentum_maximize": lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9, dampening=0.1, weight_decay=0.01,
                                                            maximize=True, fused=True),
    "sgd_nesterov": lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9, nesterov=True, weight_decay=0.01, fused=True),
    "adam": lambda ps, lr: torch.optim.Adam(ps, lr=lr, weight_decay=0.01, eps=1e-3, fused=True),
    "adamw": lambda ps, lr: torch.optim.AdamW(ps, lr=lr, weight_decay=0.1, eps=1e-3, fused=True),
    "adam_amsgrad_maximize": lambda ps, lr: torch.optim.Adam(ps, lr=lr, amsgrad=True, maximize=True, eps=1e-3, fused=True),
}
fused_digest = hashlib.sha256()


def fused_run(dev, dt, name, lr_tensor):
    """Parameters and optimizer state (as float32) after three steps of FUSED_OPTS[name]."""
    g = torch.Generator().manual_seed(7)
    ps = [torch.randn(*s_, generator=g).to(dt).to(dev).requires_grad_() for s_ in ((7,), (5, 3), (65536 + 9,))]
    lr = 0.05 if name.startswith("sgd") else 0.01
    opt = FUSED_OPTS[name](ps, torch.tensor(lr, device=dev) if lr_tensor else lr)
    for _ in range(3):
        for p_ in ps:
            p_.grad = torch.randn(p_.shape, generator=g).to(dt).to(dev)
        opt.step()
    state = [t for p_ in ps for k, t in sorted(opt.state[p_].items()) if k != "step"]
    out = torch.cat([t.detach().float().cpu().reshape(-1) for t in ps + state])
    if dev == "cuda":
        fused_digest.update(out.numpy().tobytes())
    return out


for j, dt in enumerate((torch.float32, torch.float16, torch.bfloat16)):
    rtol, atol = HALF_TOL[dt]
    for i, name in enumerate(FUSED_OPTS):
        lr_t = (i + j) % 2 == 1
        check(f"fused_{name}_{str(dt).replace('torch.', '')}{'_lr_tensor' if lr_t else ''}",
              lambda: fused_run("cuda", dt, name, lr_t), lambda: fused_run("cpu", dt, name, lr_t), rtol=rtol, atol=atol)


# GradScaler with fused Adam and SGD under float16 autocast: the kernels unscale the gradients
# (grad_scale) and skip the whole update when found_inf is set (the second of four steps has an
# infinite loss); the parameters and the final scale against the CPU's, within float32
# tolerance (the float16 activations of the two GEMMs may differ in the last place).
def scaled_run(dev, opt_name):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3)).to(dev)
    opt = (torch.optim.Adam(model.parameters(), lr=0.01, fused=True) if opt_name == "adam" else
           torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True))
    scaler = torch.amp.GradScaler(dev, init_scale=1024.0, growth_interval=2)
    g = torch.Generator().manual_seed(3)
    a, target = torch.randn(16, 5, generator=g).to(dev), torch.randn(16, 3, generator=g).to(dev)
    for step in range(4):
        opt.zero_grad()
        with torch.autocast(device_type=dev, dtype=torch.float16):
            out = model(a)
        loss = F.mse_loss(out.float(), target) * (float("inf") if step == 1 else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    res = torch.cat([p_.detach().float().cpu().reshape(-1) for p_ in model.parameters()] +
                    [torch.tensor([scaler.get_scale()])])
    if dev == "cuda":
        fused_digest.update(res.numpy().tobytes())
    return res


for opt_name in ("adam", "sgd"):
    check(f"fused_{opt_name}_grad_scaler_float16", lambda: scaled_run("cuda", opt_name), lambda: scaled_run("cpu", opt_name),
          rtol=1e-4, atol=1e-5)
print(f"fused optimizers: device results {fused_digest.hexdigest()[:16]}")
print(f"ops: {n_ok} ok")
