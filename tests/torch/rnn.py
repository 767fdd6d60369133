"""rnn.py CELL STEPS [cpu] — a recurrent classifier (nn.LSTM, nn.GRU or nn.RNN) training on the device.

Run under tools/torch-sim, with or without libautograph preloaded. CELL is lstm, gru or rnn: two
layers of width 16 over sequences of 5 steps of 8 features, batch 3, then a Linear to 4 classes,
cross-entropy, Adam, STEPS steps on one fixed batch. cuDNN is switched off
(torch.backends.cudnn.enabled = False): PyTorch then runs its own fused cell kernels between the
GEMMs (the simulated cuDNN has no RNN functions). Prints the loss of every step and a checksum of
the exact bits of the parameters. With `cpu`, the same on the CPU (for the caller to compare).
"""
import hashlib
import sys

import torch


def main():
    cell, steps = sys.argv[1], int(sys.argv[2])
    dev = "cpu" if len(sys.argv) > 3 and sys.argv[3] == "cpu" else "cuda"
    torch.backends.cudnn.enabled = False
    torch.manual_seed(0)
    rnn = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell](
        8, 16, num_layers=2, batch_first=True).to(dev)
    head = torch.nn.Linear(16, 4).to(dev)
    params = list(rnn.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, 8, generator=gen).to(dev)
    y = torch.tensor([0, 2, 3]).to(dev)
    for step in range(steps):
        opt.zero_grad()
        out, _ = rnn(x)
        loss = torch.nn.functional.cross_entropy(head(out[:, -1]), y)
        loss.backward()
        opt.step()
        print(f"loss: {step} {loss.item():.9e}")
    h = hashlib.sha256()
    for t in params:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    print("checksum:", h.hexdigest()[:16])


if __name__ == "__main__":
    main()
