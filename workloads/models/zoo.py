"""The loom model zoo: constructors for every DNN workload loom profiles.

Each model is built with random weights (nothing is downloaded) at a small
default size so that one CPU step takes well under a second on a laptop-class
core; every size is a keyword argument so a study can scale it up.

    build(name, **kw) -> ZooModel(module, make_batch, loss_fn, info)

`make_batch(batch, device, dtype_hint)` returns synthetic inputs and targets
for one step; `loss_fn(output, target)` returns the scalar training loss.
The ONNX exporter (branch est) reuses `build` and `example_inputs`.

torchvision supplies ResNet-18/-50, VGG-16 and MobileNetV2 (weights=None).
The ViT, BERT-style encoder, GPT-2-style decoder, LSTM language model and
DLRM-style recommender are written here from their papers' descriptions.
"""

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ZooModel:
    module: nn.Module
    make_batch: Callable  # (batch, device) -> (inputs tuple, target)
    loss_fn: Callable     # (output, target) -> scalar tensor
    info: Dict = field(default_factory=dict)  # family, sizes, what one item is


# ----------------------------------------------------------------- attention

class SelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention, optionally causal."""

    def __init__(self, dim, heads, causal=False, dropout=0.0):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, pad_mask=None):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)  # b h t t
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        if pad_mask is not None:  # b t, True = padding
            scores = scores.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        att = self.drop(scores.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    """Transformer block; pre_ln=True is GPT-2/ViT order, False is BERT's."""

    def __init__(self, dim, heads, mlp_ratio=4, causal=False, pre_ln=True, dropout=0.0):
        super().__init__()
        self.pre_ln = pre_ln
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, causal, dropout)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(),
                                 nn.Linear(mlp_ratio * dim, dim), nn.Dropout(dropout))

    def forward(self, x):
        if self.pre_ln:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


# ----------------------------------------------------------------------- ViT

class ViT(nn.Module):
    """Vision Transformer (Dosovitskiy et al. 2021): patches, class token,
    learned positions, pre-LN encoder, linear head."""

    def __init__(self, image=64, patch=8, dim=192, depth=6, heads=3, classes=100):
        super().__init__()
        if image % patch:
            raise ValueError(f"image size {image} is not a multiple of patch {patch}")
        n = (image // patch) ** 2
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.ln(self.blocks(x))
        return self.head(x[:, 0])


# ---------------------------------------------------------------------- BERT

class BertEncoder(nn.Module):
    """BERT-style encoder (Devlin et al. 2019): token, position and segment
    embeddings, post-LN blocks, masked-LM head tied to the embeddings."""

    def __init__(self, vocab=4096, seq=128, dim=256, depth=4, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.seg = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim)
        self.blocks = nn.Sequential(*[Block(dim, heads, pre_ln=False) for _ in range(depth)])
        self.mlm_dense = nn.Linear(dim, dim)
        self.mlm_ln = nn.LayerNorm(dim)
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, ids, segments):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln(self.tok(ids) + self.pos(pos)[None] + self.seg(segments))
        # The head's LayerNorm runs in fp32: under CPU autocast (torch 1.13) a
        # bf16 input to layer_norm with fp32 weights is an error.
        x = self.mlm_ln(F.gelu(self.mlm_dense(self.blocks(x))).float())
        return x @ self.tok.weight.t() + self.bias


# ---------------------------------------------------------------------- GPT-2

class GPT2Decoder(nn.Module):
    """GPT-2-style decoder (Radford et al. 2019): pre-LN causal blocks, final
    LayerNorm, output projection tied to the token embedding."""

    def __init__(self, vocab=8192, seq=128, dim=256, depth=4, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads, causal=True) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln(self.blocks(self.tok(ids) + self.pos(pos)[None]))
        return x @ self.tok.weight.t()


# ----------------------------------------------------------------------- LSTM

class LSTMLM(nn.Module):
    """Word-level LSTM language model (Zaremba et al. 2014 shape)."""

    def __init__(self, vocab=8192, dim=256, hidden=256, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.out(y)


# ----------------------------------------------------------------------- DLRM

def _mlp(sizes, last_act=True):
    layers: List[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_act:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """DLRM-style recommender (Naumov et al. 2019): bottom MLP on dense
    features, one EmbeddingBag per sparse feature, pairwise dot-product
    interaction, top MLP to one logit."""

    def __init__(self, dense=13, tables=8, rows=10000, dim=32, bottom=(64,), top=(128, 64),
                 lookups=4):
        super().__init__()
        self.lookups = lookups
        self.bottom = _mlp([dense, *bottom, dim])
        self.emb = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        f = tables + 1
        self.top = _mlp([dim + f * (f - 1) // 2, *top, 1], last_act=False)
        self.rows = rows

    def forward(self, dense, sparse):  # sparse: b x tables x lookups
        x = self.bottom(dense)
        feats = [x] + [e(sparse[:, i]) for i, e in enumerate(self.emb)]
        z = torch.stack(feats, dim=1)  # b f d
        inter = z @ z.transpose(1, 2)
        i, j = torch.tril_indices(z.shape[1], z.shape[1], -1, device=z.device)
        return self.top(torch.cat([x, inter[:, i, j]], dim=1)).squeeze(1)


# -------------------------------------------------------------------- builder

def _vision(module, image, classes, family):
    def make_batch(batch, device):
        return (torch.randn(batch, 3, image, image, device=device),), \
            torch.randint(0, classes, (batch,), device=device)
    return ZooModel(module, make_batch, F.cross_entropy,
                    {"family": family, "input": f"3x{image}x{image}", "item": "image"})


def _tokens(module, vocab, seq, family, extra=None):
    def make_batch(batch, device):
        ids = torch.randint(0, vocab, (batch, seq), device=device)
        inputs = (ids,) if extra is None else (ids, extra(batch, device))
        return inputs, torch.randint(0, vocab, (batch, seq), device=device)

    def loss(out, target):
        return F.cross_entropy(out.reshape(-1, out.shape[-1]).float(), target.reshape(-1))
    return ZooModel(module, make_batch, loss,
                    {"family": family, "input": f"seq{seq}", "item": "sequence"})


def _torchvision(fn, image, classes, family):
    import torchvision.models as tvm
    return _vision(getattr(tvm, fn)(weights=None, num_classes=classes), image, classes, family)


def build(name: str, image: int = 64, seq: int = 0, classes: int = 100, **kw) -> ZooModel:
    """Builds zoo model `name` with random weights. `image` is the square
    input size of vision models, `seq` the sequence length of text models
    (0 = the model's default); other keywords go to the model constructor."""
    if name in ("resnet18", "resnet50", "vgg16", "mobilenet_v2"):
        if kw:
            raise ValueError(f"{name}: unexpected options {sorted(kw)}")
        family = {"resnet18": "cnn", "resnet50": "cnn", "vgg16": "cnn",
                  "mobilenet_v2": "cnn-mobile"}[name]
        return _torchvision(name, image, classes, family)
    if name == "vit":
        m = ViT(image=image, classes=classes, **kw)
        return _vision(m, image, classes, "transformer-vision")
    if name == "bert":
        seq = seq or 64
        vocab = kw.get("vocab", 4096)
        m = BertEncoder(seq=seq, **kw)
        return _tokens(m, vocab, seq, "transformer-encoder",
                       extra=lambda b, d: torch.randint(0, 2, (b, seq), device=d))
    if name == "gpt2":
        seq = seq or 128
        vocab = kw.get("vocab", 8192)
        return _tokens(GPT2Decoder(seq=seq, **kw), vocab, seq, "transformer-decoder")
    if name == "lstm":
        seq = seq or 32
        vocab = kw.get("vocab", 8192)
        return _tokens(LSTMLM(**kw), vocab, seq, "rnn")
    if name == "dlrm":
        m = DLRM(**kw)
        tables, rows, lookups = len(m.emb), m.rows, m.lookups
        dense = m.bottom[0].in_features

        def make_batch(batch, device):
            return (torch.randn(batch, dense, device=device),
                    torch.randint(0, rows, (batch, tables, lookups), device=device)), \
                torch.randint(0, 2, (batch,), device=device).float()

        def loss(out, target):
            return F.binary_cross_entropy_with_logits(out.float(), target)
        return ZooModel(m, make_batch, loss,
                        {"family": "recommender", "input": f"{dense}d+{tables}x{lookups}",
                         "item": "sample"})
    raise ValueError(f"unknown model '{name}' (known: {', '.join(NAMES)})")


NAMES = ("resnet18", "resnet50", "vgg16", "mobilenet_v2", "vit", "bert", "gpt2", "lstm", "dlrm")


def example_inputs(name: str, batch: int = 1, **kw):
    """Inputs of one batch on the CPU, for tracing or ONNX export."""
    zm = build(name, **kw)
    inputs, _ = zm.make_batch(batch, "cpu")
    return zm.module, inputs
