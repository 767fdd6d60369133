"""gpt_decode.py — token-by-token generation with a small GPT-style decoder, no KV cache.

Each new token runs the whole decoder over the whole context (no key/value cache): token and
position embeddings, pre-norm blocks of causal multi-head self-attention and an MLP, a final
norm and the output projection, then greedy argmax. The context lives in a fixed window of
--context tokens (the prompt, then the generated ones, then padding that the causal mask keeps
out of every position read), so every token's forward pass has the same shapes: one step —
generating --tokens tokens from the same synthetic prompts — repeats exactly, as inference
serving does. The weights are random (seeded): the tokens mean nothing, but the work and the
launch pattern are those of a real decoder. The checksum covers the generated tokens and the
last logits.

    python3 examples/gpt_decode.py [--device cpu|cuda] [--steps N] [--batch-size B]
                                   [--tokens T] [--context C] [--layers L] [--dim D] [--compile]
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

import common


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        # (b, heads, t, d/heads); plain matmul + softmax attention works on every version.
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, context, dim, layers, heads):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("mask", torch.ones(context, context).triu(1).bool(),
                             persistent=False)
        self.register_buffer("positions", torch.arange(context), persistent=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(self.positions)
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.head(self.ln(x))


def extra(p):
    p.add_argument("--tokens", type=int, default=16, help="tokens generated per step")
    p.add_argument("--prompt", type=int, default=8, help="prompt length")
    p.add_argument("--context", type=int, default=64, help="context window (>= prompt + tokens)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=512)


def main():
    args = common.parse_args("gpt_decode", __doc__.splitlines()[0], steps=5, batch_size=1,
                             extra=extra)
    if args.prompt < 1 or args.prompt + args.tokens > args.context:
        raise SystemExit("gpt_decode: need 1 <= --prompt and --prompt + --tokens <= --context")
    dev = common.setup(args)
    model = GPT(args.vocab, args.context, args.dim, args.layers, args.heads).to(dev).eval()
    gen = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(0, args.vocab, (args.batch_size, args.prompt), generator=gen).to(dev)
    net = common.maybe_compile(args, model)
    ctx = torch.zeros(args.batch_size, args.context, dtype=torch.long, device=dev)
    last = {}

    @torch.no_grad()
    def step(i):
        ctx.zero_()
        ctx[:, :args.prompt] = prompt
        for t in range(args.prompt, args.prompt + args.tokens):
            common.mark_step()
            logits = net(ctx)
            # The token at t follows position t - 1; the mask keeps the padding after it out.
            nxt = logits[:, t - 1].argmax(dim=-1)
            ctx[:, t] = nxt
        last["logits"] = logits[:, args.prompt + args.tokens - 1].clone()

    warmup_s, times = common.run_steps(args, dev, step)
    common.report(args, dev, warmup_s, times, [ctx, last["logits"]])


if __name__ == "__main__":
    main()
