"""A small search space of architectures on scikit-learn's bundled digits set
(1797 8x8 images, 10 classes; installed by python3-sklearn, nothing is
downloaded), for loom's warm-start experiment (docs/zoo.md).

Architectures are named by strings, so a job, the experiment and the report
all speak of the same thing:
    mlp-64-64          MLP, hidden widths 64 and 64
    cnn-16-32          3x3 convolutions with 16 then 32 channels, then a linear head
    tfm-d32-l2         transformer: the 8 image rows as tokens, width 32, 2 blocks
"""
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import loom.warmstart as ws  # noqa: E402


def data(split_seed=0):
    """(train, val, test) tensors: 1197 / 300 / 300 samples, pixels in [0, 1]."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.data / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)
    y = torch.tensor(d.target, dtype=torch.long)
    g = torch.Generator().manual_seed(split_seed)
    perm = torch.randperm(len(y), generator=g)
    tr, va, te = perm[:1197], perm[1197:1497], perm[1497:]
    return (x[tr], y[tr]), (x[va], y[va]), (x[te], y[te])


class MLP(nn.Module):
    def __init__(self, widths):
        super().__init__()
        dims = [64] + list(widths) + [10]
        self.fc = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x):
        h = x.flatten(1)
        for i, f in enumerate(self.fc):
            h = f(h)
            if i < len(self.fc) - 1:
                h = F.relu(h)
        return h


class CNN(nn.Module):
    def __init__(self, channels):
        super().__init__()
        ch = [1] + list(channels)
        self.conv = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1) for a, b in zip(ch[:-1], ch[1:]))
        self.head = nn.Linear(ch[-1] * 16, 10)

    def forward(self, x):
        h = x
        for i, c in enumerate(self.conv):
            h = F.relu(c(h))
            if i == 0:
                h = F.max_pool2d(h, 2)  # 8x8 -> 4x4
        return self.head(h.flatten(1))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, 2 * d)
        self.ff2 = nn.Linear(2 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        hd = d // self.heads
        q = q.reshape(b, t, self.heads, hd).transpose(1, 2)
        k = k.reshape(b, t, self.heads, hd).transpose(1, 2)
        v = v.reshape(b, t, self.heads, hd).transpose(1, 2)
        a = torch.softmax(q @ k.transpose(2, 3) / hd ** 0.5, dim=-1)
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.ff2(F.relu(self.ff1(self.ln2(x))))


class Transformer(nn.Module):
    def __init__(self, d, layers, heads=2):
        super().__init__()
        self.embed = nn.Linear(8, d)
        self.pos = nn.Parameter(torch.zeros(8, d))
        nn.init.normal_(self.pos, std=0.02)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        h = self.embed(x.reshape(x.shape[0], 8, 8)) + self.pos
        for b in self.blocks:
            h = b(h)
        return self.head(self.ln(h).mean(dim=1))


def build(arch):
    """The module for an architecture name."""
    kind, *rest = arch.split("-")
    if kind == "mlp":
        return MLP([int(w) for w in rest])
    if kind == "cnn":
        return CNN([int(c) for c in rest])
    if kind == "tfm":
        d = int(rest[0].lstrip("d"))
        layers = int(rest[1].lstrip("l"))
        return Transformer(d, layers)
    raise ValueError(f"architecture '{arch}': expected mlp-W-..., cnn-C-... or tfm-dD-lL")


def export(model, path):
    """ONNX with the parameters' names as initializer names (no folding)."""
    model.eval()
    torch.onnx.export(model, torch.zeros(1, 1, 8, 8), path, input_names=["x"],
                      output_names=["logits"], opset_version=14, do_constant_folding=False)
    model.train()


@torch.no_grad()
def accuracy(model, xy):
    model.eval()
    acc = (model(xy[0]).argmax(1) == xy[1]).float().mean().item()
    model.train()
    return acc


def train(model, splits, steps, seed, target=None, eval_every=10, batch=64, lr=2e-3):
    """Adam on minibatches; validation accuracy every eval_every steps.
    Returns {"steps_to_target", "time_to_target_s", "curve", "val", "test",
    "train_s"}; the time counts training steps only (evaluation excluded)."""
    (xtr, ytr), val, test = splits
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    curve, hit, hit_t, spent = [], None, None, 0.0
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        idx = torch.randint(0, len(ytr), (batch,), generator=g)
        loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        spent += time.perf_counter() - t0
        if step % eval_every == 0:
            a = accuracy(model, val)
            curve.append([step, a])
            if target is not None and hit is None and a >= target:
                hit, hit_t = step, spent
    return {"steps_to_target": hit, "time_to_target_s": hit_t, "curve": curve,
            "val": accuracy(model, val), "test": accuracy(model, test), "train_s": spent}
