"""rnn.py CELL STEPS [cpu] — recurrent classifiers (nn.LSTM, nn.GRU or nn.RNN) training on the device.

Run under tools/torch-sim, with or without libautograph preloaded. CELL is lstm, gru or rnn. Two
networks train in turn, each of two layers of width 16 over sequences of 5 steps of 8 features,
batch 3, then a Linear to 4 classes, cross-entropy, Adam, STEPS steps on one fixed batch:

- unidirectional with cuDNN switched off (torch.backends.cudnn.enabled = False): PyTorch runs its
  own fused cell kernels between the GEMMs; prints "loss:" per step;
- bidirectional with cuDNN on: PyTorch runs the network through cuDNN's RNN API (cudnnRNNForward
  in training mode, cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8); prints "cudnn-loss:"
  per step, then the outputs and final hidden state of one inference forward (eval, no grad:
  cuDNN's inference mode) on another batch ("infer:"), and of the same batch packed as sequences
  of 4 and 2 steps (pack_padded_sequence: cuDNN's packed layout; "infer-packed:").

Then, on the device only, that inference forward captured in a CUDA graph (torch.cuda.graph) and
replayed on new input: "graph-diff:" is the largest difference from the same forward run eagerly.
Last, a checksum of the exact bits of all parameters. With `cpu`, the same on the CPU (for the
caller to compare; no graph there).
"""
import hashlib
import sys

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def train(cell, steps, dev, bidir, tag, params_out):
    torch.backends.cudnn.enabled = bidir
    torch.manual_seed(0)
    rnn = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell](
        8, 16, num_layers=2, batch_first=True, bidirectional=bidir).to(dev)
    head = torch.nn.Linear(32 if bidir else 16, 4).to(dev)
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
        print(f"{tag} {step} {loss.item():.9e}")
    params_out += params
    return rnn, gen


def infer(rnn, cell, x, lengths=None):
    with torch.no_grad():
        if lengths is None:
            out, h = rnn(x)
        else:
            out, h = rnn(pack_padded_sequence(x, lengths, batch_first=True))
            out = pad_packed_sequence(out, batch_first=True)[0]
        return torch.cat([out.flatten(), (h[0] if cell == "lstm" else h).flatten()])


def main():
    cell, steps = sys.argv[1], int(sys.argv[2])
    dev = "cpu" if len(sys.argv) > 3 and sys.argv[3] == "cpu" else "cuda"
    params = []
    train(cell, steps, dev, False, "loss:", params)
    rnn, gen = train(cell, steps, dev, True, "cudnn-loss:", params)
    rnn.eval()
    x = torch.randn(2, 4, 8, generator=gen).to(dev)
    print("infer:", " ".join(f"{v:.9e}" for v in infer(rnn, cell, x).cpu().tolist()))
    # sequences of 4 and 2 steps, packed: cuDNN's packed layout
    print("infer-packed:", " ".join(f"{v:.9e}" for v in infer(rnn, cell, x, [4, 2]).cpu().tolist()))
    if dev == "cuda":
        x2 = torch.randn(2, 4, 8, generator=gen)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up outside the capture, as PyTorch advises
            infer(rnn, cell, x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = infer(rnn, cell, x)
        x.copy_(x2)
        graph.replay()
        print(f"graph-diff: {(captured - infer(rnn, cell, x)).abs().max().item():.3e}")
    h = hashlib.sha256()
    for t in params:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    print("checksum:", h.hexdigest()[:16])


if __name__ == "__main__":
    main()
