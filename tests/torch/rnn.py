"""rnn.py CELL STEPS [cpu | cudnn] — a recurrent classifier (nn.LSTM, nn.GRU or nn.RNN) training on the device.

Run under tools/torch-sim, with or without libautograph preloaded. CELL is lstm, gru or rnn: two
layers of width 16 over sequences of 5 steps of 8 features, batch 3, then a Linear to 4 classes,
cross-entropy, Adam, STEPS steps on one fixed batch. Prints the loss of every step and a checksum
of the exact bits of the parameters. With `cpu`, the same on the CPU (for the caller to compare).

By default cuDNN is switched off (torch.backends.cudnn.enabled = False): PyTorch then runs its own
fused cell kernels between the GEMMs. With `cudnn` it stays on and the network is bidirectional,
so PyTorch runs it through cuDNN's RNN API (cudnnRNNForward in training mode, backward data and
weights); after training, one inference forward (eval, no grad: cuDNN's inference mode) on
another batch. The same training and inference then run on the CPU in the same process, and the
CPU's losses ("cpu-loss:") and the largest difference of the inference outputs ("infer-diff:")
are printed too.
"""
import hashlib
import sys

import torch


def run(cell, steps, dev, bidir):
    torch.manual_seed(0)
    rnn = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell](
        8, 16, num_layers=2, batch_first=True, bidirectional=bidir).to(dev)
    head = torch.nn.Linear(32 if bidir else 16, 4).to(dev)
    params = list(rnn.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, 8, generator=gen).to(dev)
    y = torch.tensor([0, 2, 3]).to(dev)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        out, _ = rnn(x)
        loss = torch.nn.functional.cross_entropy(head(out[:, -1]), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    infer = None
    if bidir:
        rnn.eval()
        with torch.no_grad():
            out, h = rnn(torch.randn(2, 4, 8, generator=gen).to(dev))
            infer = torch.cat([out.flatten(), (h[0] if cell == "lstm" else h).flatten()]).cpu()
    return losses, params, infer


def main():
    cell, steps = sys.argv[1], int(sys.argv[2])
    mode = sys.argv[3] if len(sys.argv) > 3 else ""
    dev = "cpu" if mode == "cpu" else "cuda"
    cudnn = mode == "cudnn"
    torch.backends.cudnn.enabled = cudnn
    losses, params, infer = run(cell, steps, dev, cudnn)
    for step, loss in enumerate(losses):
        print(f"loss: {step} {loss:.9e}")
    h = hashlib.sha256()
    for t in params:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    if infer is not None:
        h.update(infer.numpy().tobytes())
    print("checksum:", h.hexdigest()[:16])
    if cudnn:
        cpu_losses, _, cpu_infer = run(cell, steps, "cpu", True)
        for step, loss in enumerate(cpu_losses):
            print(f"cpu-loss: {step} {loss:.9e}")
        print(f"infer-diff: {(infer - cpu_infer).abs().max().item():.3e}")


if __name__ == "__main__":
    main()
