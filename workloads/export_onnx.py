#!/usr/bin/python3
"""Export the loom model zoo to ONNX (opset 13) for `loom estimate`.

    /usr/bin/python3 workloads/export_onnx.py OUTDIR [--models a,b] [--image 64] [--seq N]

Each model is exported in training mode (BatchNormalization and Dropout stay
in the graph, nothing is constant-folded into the weights) with a symbolic
batch dimension named "batch" on every input and output, so one file serves
every batch size: `loom estimate MODEL.onnx --batch N` fixes it.

The model definitions below mirror the zoo on branch `prof`
(workloads/models/zoo.py: same layers and default sizes) so that this script
runs before that branch is merged. One deliberate difference: the DLRM
sparse features use nn.Embedding + sum instead of nn.EmbeddingBag, because
torch 1.13 exports EmbeddingBag as an ONNX Loop, which the estimator does
not model. torchvision supplies the CNNs with weights=None (no downloads).

`build(name, image)` is also used by bench/estimate_measure.py, so the
measured model is the very module that was exported.
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, heads, causal=False, seq=0):
        super().__init__()
        self.heads, self.causal = heads, causal
        if causal:  # a constant buffer: aten::triu has no opset-13 export
            self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).triu(1),
                                 persistent=False)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        if self.causal:
            scores = scores.masked_fill(self.mask[:t, :t], float("-inf"))
        att = scores.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, dim, heads, causal=False, pre_ln=True, seq=0):
        super().__init__()
        self.pre_ln = pre_ln
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads, causal, seq)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        if self.pre_ln:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class ViT(nn.Module):
    def __init__(self, image=64, patch=8, dim=192, depth=6, heads=3, classes=100):
        super().__init__()
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


class Bert(nn.Module):
    def __init__(self, vocab=4096, seq=64, dim=256, depth=4, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.ln = nn.LayerNorm(dim)
        self.blocks = nn.Sequential(*[Block(dim, heads, pre_ln=False) for _ in range(depth)])
        self.mlm = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        x = self.ln(self.tok(ids) + self.pos(pos)[None])
        x = self.mlm(self.blocks(x))
        return x @ self.tok.weight.t() + self.bias


class GPT2(nn.Module):
    def __init__(self, vocab=8192, seq=128, dim=256, depth=4, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads, causal=True, seq=seq) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        x = self.ln(self.blocks(self.tok(ids) + self.pos(pos)[None]))
        return x @ self.tok.weight.t()


class LSTMLM(nn.Module):
    def __init__(self, vocab=8192, dim=256, hidden=256, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        y, _ = self.lstm(self.emb(ids))
        return self.out(y)


def _mlp(sizes, last_act=True):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_act:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense=13, tables=8, rows=10000, dim=32, bottom=(64,), top=(128, 64),
                 lookups=4):
        super().__init__()
        self.bottom = _mlp([dense, *bottom, dim])
        self.emb = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(tables))
        f = tables + 1
        self.top = _mlp([dim + f * (f - 1) // 2, *top, 1], last_act=False)
        i, j = torch.tril_indices(f, f, -1)
        self.register_buffer("li", i * f + j, persistent=False)

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        feats = [x] + [e(sparse[:, i]).sum(1) for i, e in enumerate(self.emb)]
        z = torch.stack(feats, dim=1)
        inter = (z @ z.transpose(1, 2)).flatten(1)
        return self.top(torch.cat([x, inter[:, self.li]], dim=1)).squeeze(1)


NAMES = ("resnet18", "resnet50", "vgg16", "mobilenet_v2", "vit", "bert", "gpt2", "lstm", "dlrm")


def build(name, image=64, classes=100, seq=0):
    """(module, example_inputs(batch) -> tuple, input names, loss(out, batch) -> scalar).
    seq: sequence length of the text models (0 = their default)."""
    if name == "vgg16" and image % 224:
        # VGG's AdaptiveAvgPool2d((7, 7)) exports only when 7 divides the
        # feature map; 224 is the smallest input that gives 7x7.
        image = 224
    if name in ("resnet18", "resnet50", "vgg16", "mobilenet_v2"):
        import torchvision.models as tvm
        m = getattr(tvm, name)(weights=None, num_classes=classes)
        return m, lambda b: (torch.randn(b, 3, image, image),), ["input"], \
            lambda out, b: F.cross_entropy(out, torch.randint(0, classes, (b,)))
    if name == "vit":
        return ViT(image=image, classes=classes), \
            lambda b: (torch.randn(b, 3, image, image),), ["input"], \
            lambda out, b: F.cross_entropy(out, torch.randint(0, classes, (b,)))
    if name in ("bert", "gpt2", "lstm"):
        m, vocab, default = {"bert": (Bert, 4096, 64), "gpt2": (GPT2, 8192, 128),
                             "lstm": (LSTMLM, 8192, 32)}[name]
        seq = seq or default
        mod = m(seq=seq) if name != "lstm" else m()

        def loss(out, b):
            return F.cross_entropy(out.reshape(-1, out.shape[-1]), torch.randint(0, vocab, (b * seq,)))
        return mod, lambda b: (torch.randint(0, vocab, (b, seq)),), ["ids"], loss
    if name == "mlp":  # not in the zoo: bench/estimate.sh calibrates with it
        m = _mlp([256, 256, 10], last_act=False)
        return m, lambda b: (torch.randn(b, 256),), ["input"], \
            lambda out, b: F.cross_entropy(out, torch.randint(0, 10, (b,)))
    if name in CALIBRATION:  # not in the zoo: bench/estimate_instep.py calibrates with them
        return CALIBRATION[name]()
    if name in SEQUENCE:  # torch.nn sequence models (coverage and evaluation)
        return SEQUENCE[name]()
    if name in DENSE:  # detection / segmentation backbones (coverage)
        return DENSE[name]()
    if name in DEVCASES:  # the estimator's development cases
        return DEVCASES[name]()
    if name in torchvision_classifiers():
        return torchvision_classifier(name, image, classes)
    if name == "dlrm":
        return DLRM(), lambda b: (torch.randn(b, 13), torch.randint(0, 10000, (b, 8, 4))), \
            ["dense", "sparse"], \
            lambda out, b: F.binary_cross_entropy_with_logits(out, torch.rand(b))
    raise ValueError(f"unknown model '{name}' (known: {', '.join(NAMES)})")


class _ConvNet(nn.Module):  # a small conv stack (calibration only, not in the zoo)
    def __init__(self, classes=12):
        super().__init__()
        def cbr(ci, co, s):
            return [nn.Conv2d(ci, co, 3, s, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True)]
        self.f = nn.Sequential(*cbr(3, 20, 1), *cbr(20, 40, 2), *cbr(40, 40, 1), *cbr(40, 72, 2),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(72, classes))

    def forward(self, x):
        return self.f(x)


class _AttnNet(nn.Module):  # two transformer blocks on features (calibration only)
    def __init__(self, dim=120, heads=3, seq=40, classes=12):
        super().__init__()
        self.inp = nn.Linear(24, dim)
        self.blocks = nn.Sequential(Block(dim, heads), Block(dim, heads))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.ln(self.blocks(self.inp(x)))[:, 0])


def _ce(classes):
    return lambda out, b: F.cross_entropy(out, torch.randint(0, classes, (b,)))


# Composite workloads for the in-step factor (bench/estimate_instep.py): whole
# training steps of small models that are not in the zoo, with sizes off the
# zoo's (odd widths, 40x40 images, sequence 40)
CALIBRATION = {
    "cal_mlp": lambda: (_mlp([300, 700, 700, 12], last_act=False),
                        lambda b: (torch.randn(b, 300),), ["input"], _ce(12)),
    "cal_cnn": lambda: (_ConvNet(), lambda b: (torch.randn(b, 3, 40, 40),), ["input"], _ce(12)),
    "cal_attn": lambda: (_AttnNet(), lambda b: (torch.randn(b, 40, 24),), ["input"], _ce(12)),
}


def torchvision_classifiers():
    """Every classification model this torchvision builds (names)."""
    import torchvision.models as tvm
    if hasattr(tvm, "list_models"):
        return tvm.list_models(module=tvm)
    return []


# Inputs other than 64x64 where a classifier needs them: a fixed-size
# adaptive pooling that exports only when its size divides the feature map
# (AlexNet, VGG: 224 gives 6x6 / 7x7), Inception-v3's minimum of 75, MaxViT's
# fixed partition sizes, ViT's patch size (image_size is a constructor
# argument there: 64 for /16 and /32 patches, 56 for /14).
TV_IMAGE = {"alexnet": 224, "inception_v3": 96, "maxvit_t": 224, "vit_h_14": 56}


def torchvision_classifier(name, image=64, classes=100):
    import torchvision.models as tvm
    kw = {"weights": None, "num_classes": classes}
    if name.startswith(("vgg", "alexnet")) and image % 224:
        image = 224
    image = TV_IMAGE.get(name, image) if image == 64 else image
    if name.startswith("vit_"):
        kw["image_size"] = image
    if name in ("googlenet", "inception_v3"):
        kw["aux_logits"] = False  # one output; the auxiliary heads are training tricks
        kw["init_weights"] = False
    m = tvm.get_model(name, **kw) if hasattr(tvm, "get_model") else getattr(tvm, name)(**kw)
    from torchvision.ops import StochasticDepth
    for mod in m.modules():
        # StochasticDepth (EfficientNet, ConvNeXt, Swin, MaxViT) draws a
        # Bernoulli mask in training, which has no export; at probability 0
        # it is the identity (its [N,1,1,1] mask aside)
        if isinstance(mod, StochasticDepth):
            mod.p = 0.0
    return m, lambda b: (torch.randn(b, 3, image, image),), ["input"], _ce(classes)


class _Seq2Seq(nn.Module):  # nn.TransformerDecoder over a memory (both inputs batch-first)
    def __init__(self, dim, heads, depth, ff, vocab=1000):
        super().__init__()
        layer = nn.TransformerDecoderLayer(dim, heads, ff, dropout=0.1, batch_first=True)
        self.dec = nn.TransformerDecoder(layer, depth)
        self.emb = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids, memory):
        return self.out(self.dec(self.emb(ids), memory))


class _Encoder(nn.Module):  # nn.TransformerEncoder on features
    def __init__(self, dim, heads, depth, ff, classes=10, act="relu", norm_first=False):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=0.1, activation=act,
                                           batch_first=True, norm_first=norm_first)
        self.enc = nn.TransformerEncoder(layer, depth)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.enc(x)[:, 0])


class _RNN(nn.Module):  # nn.LSTM / nn.GRU over features, a classifier on the last step
    def __init__(self, kind, dim, hidden, layers, bidirectional=False, classes=10):
        super().__init__()
        self.rnn = getattr(nn, kind)(dim, hidden, layers, batch_first=True,
                                     bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


def _seq_model(mod, seq, dim, classes=10):
    return mod, lambda b: (torch.randn(b, seq, dim),), ["input"], _ce(classes)


def _decoder(dim, heads, depth, ff, seq, mem, vocab=1000):
    def loss(out, b):
        return F.cross_entropy(out.reshape(-1, vocab), torch.randint(0, vocab, (b * seq,)))
    return _Seq2Seq(dim, heads, depth, ff, vocab), \
        lambda b: (torch.randint(0, vocab, (b, seq)), torch.randn(b, mem, dim)), \
        ["ids", "memory"], loss


# torch.nn's own sequence layers at sizes the zoo does not use
SEQUENCE = {
    "tx_encoder": lambda: _seq_model(_Encoder(192, 4, 3, 768), 48, 192),
    "tx_encoder_gelu": lambda: _seq_model(_Encoder(128, 8, 2, 512, act="gelu", norm_first=True),
                                          96, 128),
    "tx_encoder_wide": lambda: _seq_model(_Encoder(512, 8, 2, 2048), 32, 512),
    "tx_decoder": lambda: _decoder(160, 4, 2, 640, 40, 24),
    "tx_decoder_small": lambda: _decoder(64, 2, 1, 256, 20, 30),
    "lstm_small": lambda: _seq_model(_RNN("LSTM", 40, 96, 1), 50, 40),
    "lstm_bi": lambda: _seq_model(_RNN("LSTM", 64, 128, 2, bidirectional=True), 30, 64),
    "gru": lambda: _seq_model(_RNN("GRU", 48, 160, 2), 40, 48),
    "gru_bi": lambda: _seq_model(_RNN("GRU", 32, 64, 1, bidirectional=True), 60, 32),
    # held out (workloads/models/evaluation4.txt): added with that list, never
    # measured before it
    "lstm_deep": lambda: _seq_model(_RNN("LSTM", 32, 48, 3), 28, 32),
    "gru_long": lambda: _seq_model(_RNN("GRU", 16, 40, 1), 64, 16),
    "lstm_bi_wide": lambda: _seq_model(_RNN("LSTM", 96, 160, 1, bidirectional=True), 20, 96),
    # held out (workloads/models/evaluation5.txt): added with that list, never
    # measured before it
    "tx_encoder_deep": lambda: _seq_model(_Encoder(96, 6, 4, 256), 40, 96),
    "gru_bi_deep": lambda: _seq_model(_RNN("GRU", 24, 56, 2, bidirectional=True), 36, 24),
    "lstm_wide_short": lambda: _seq_model(_RNN("LSTM", 128, 256, 1), 12, 128),
    # held out (workloads/models/evaluation6.txt): added with that list, never
    # measured before it
    "tx_encoder_gelu_wide": lambda: _seq_model(_Encoder(256, 4, 2, 1024, act="gelu"), 24, 256),
    "gru_wide": lambda: _seq_model(_RNN("GRU", 64, 192, 1), 30, 64),
    # held out (workloads/models/evaluation7.txt): added with that list, never
    # measured before it
    "lstm_bi_deep": lambda: _seq_model(_RNN("LSTM", 48, 80, 2, bidirectional=True), 24, 48),
    "tx_decoder_mid": lambda: _decoder(128, 4, 2, 512, 32, 16),
    # held out (workloads/models/evaluation8.txt): added with that list, never
    # measured before it
    "lstm_mid": lambda: _seq_model(_RNN("LSTM", 64, 128, 2), 32, 64),
    "gru_mid": lambda: _seq_model(_RNN("GRU", 80, 112, 2), 28, 80),
    "tx_encoder_mid": lambda: _seq_model(_Encoder(160, 5, 3, 640), 36, 160),
    # held out (workloads/models/evaluation9.txt): added with that list, never
    # measured before it
    "lstm_long": lambda: _seq_model(_RNN("LSTM", 32, 64, 1), 80, 32),
    "gru_bi_wide": lambda: _seq_model(_RNN("GRU", 96, 144, 1, bidirectional=True), 24, 96),
    "tx_decoder_wide": lambda: _decoder(192, 6, 2, 768, 24, 20),
    # held out (workloads/models/evaluation10.txt): added with that list, never
    # measured before it
    "gru_deep": lambda: _seq_model(_RNN("GRU", 48, 64, 3), 40, 48),
    "lstm_bi_small": lambda: _seq_model(_RNN("LSTM", 32, 48, 1, bidirectional=True), 30, 32),
    "tx_encoder_prenorm": lambda: _seq_model(_Encoder(128, 4, 4, 512, act="gelu", norm_first=True),
                                             32, 128),
}



# Development cases for the estimator's memory model (issue #24): small
# in-sample models built to show one mechanism each, at sizes of their own
# (not the held-out list's): torch.nn.MultiheadAttention in training (its
# fused in-projection, softmax, dropout), SqueezeNet-style Fire modules
# (in-place ReLU, concatenation) and ShuffleNet-style units (chunk, concat,
# channel shuffle). Measured with bench/estimate_measure.py --plan
# workloads/models/devcases.txt.
class _MHANet(nn.Module):  # nn.MultiheadAttention blocks with a hand-built FFN
    def __init__(self, dim=96, heads=3, depth=2, dropout=0.1, classes=10):
        super().__init__()
        self.att = nn.ModuleList(nn.MultiheadAttention(dim, heads, dropout=dropout,
                                                       batch_first=True) for _ in range(depth))
        self.ln = nn.ModuleList(nn.LayerNorm(dim) for _ in range(depth))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        for att, ln in zip(self.att, self.ln):
            x = ln(x + att(x, x, x, need_weights=False)[0])
        return self.head(x[:, 0])


class _XAttnNet(nn.Module):  # nn.MultiheadAttention from a sequence onto a memory input
    def __init__(self, dim=80, heads=2, depth=2, classes=10):
        super().__init__()
        self.att = nn.ModuleList(nn.MultiheadAttention(dim, heads, dropout=0.1, batch_first=True)
                                 for _ in range(depth))
        self.ln = nn.ModuleList(nn.LayerNorm(dim) for _ in range(depth))
        self.head = nn.Linear(dim, classes)

    def forward(self, x, mem):
        for att, ln in zip(self.att, self.ln):
            x = ln(x + att(x, mem, mem, need_weights=False)[0])
        return self.head(x[:, 0])


class _Fire(nn.Module):  # squeeze 1x1, expand 1x1 and 3x3, concatenated (in-place ReLUs)
    def __init__(self, ci, sq, ex):
        super().__init__()
        self.sq, self.e1 = nn.Conv2d(ci, sq, 1), nn.Conv2d(sq, ex, 1)
        self.e3 = nn.Conv2d(sq, ex, 3, padding=1)
        self.r = nn.ReLU(inplace=True)

    def forward(self, x):
        s = self.r(self.sq(x))
        return torch.cat([self.r(self.e1(s)), self.r(self.e3(s))], 1)


class _FireNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 48, 3, 2), nn.ReLU(inplace=True),
                               nn.MaxPool2d(3, 2, ceil_mode=True), _Fire(48, 12, 40),
                               _Fire(80, 12, 40), nn.MaxPool2d(3, 2, ceil_mode=True),
                               _Fire(80, 24, 72), nn.Dropout(0.5), nn.Conv2d(144, classes, 1),
                               nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten())

    def forward(self, x):
        return self.f(x)


class _Shuffle(nn.Module):  # half the channels through 1x1 / depthwise 3x3 / 1x1, concat, shuffle
    def __init__(self, ch):
        super().__init__()
        h = ch // 2
        self.b = nn.Sequential(nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h),
                               nn.ReLU(inplace=True), nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False),
                               nn.BatchNorm2d(h), nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h),
                               nn.ReLU(inplace=True))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        y = torch.cat((a, self.b(b)), 1)
        n, c, hh, ww = y.shape
        return y.view(n, 2, c // 2, hh, ww).transpose(1, 2).contiguous().view(n, c, hh, ww)


class _ShuffleNet(nn.Module):
    def __init__(self, ch=52, classes=10):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, ch, 3, 2, 1, bias=False), nn.BatchNorm2d(ch),
                               nn.ReLU(inplace=True), _Shuffle(ch), _Shuffle(ch), _Shuffle(ch),
                               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(ch, classes))

    def forward(self, x):
        return self.f(x)


DEVCASES = {
    "dev_mha": lambda: _seq_model(_MHANet(), 36, 96),
    "dev_mha_nodrop": lambda: _seq_model(_MHANet(dropout=0.0), 36, 96),
    "dev_xattn": lambda: (_XAttnNet(), lambda b: (torch.randn(b, 28, 80), torch.randn(b, 44, 80)),
                          ["input", "memory"], _ce(10)),
    "dev_fire": lambda: (_FireNet(), lambda b: (torch.randn(b, 3, 56, 56),), ["input"], _ce(10)),
    "dev_shuffle": lambda: (_ShuffleNet(), lambda b: (torch.randn(b, 3, 48, 48),), ["input"],
                            _ce(10)),
    # RNNs at sizes no list uses (fourth round: the small RNNs' memory)
    "dev_lstm": lambda: _seq_model(_RNN("LSTM", 24, 80, 1), 36, 24),
    "dev_lstm2": lambda: _seq_model(_RNN("LSTM", 56, 72, 2), 22, 56),
    "dev_gru_bi": lambda: _seq_model(_RNN("GRU", 20, 56, 1, bidirectional=True), 44, 20),
}

class _First(nn.Module):  # a dict-returning model reduced to one tensor output
    def __init__(self, mod, key=None):
        super().__init__()
        self.mod, self.key = mod, key

    def forward(self, x):
        y = self.mod(x)
        if self.key is not None:
            return y[self.key]
        return torch.cat([v.flatten(1) for v in y.values()], dim=1)  # every FPN level


def _dense(make, key=None, image=64):
    def build_it():
        mod = _First(make(), key)
        return mod, lambda b: (torch.randn(b, 3, image, image),), ["input"], \
            lambda out, b: out.float().pow(2).mean()
    return build_it


def _fpn(backbone):
    from torchvision.models.detection.backbone_utils import (mobilenet_backbone,
                                                            resnet_fpn_backbone)
    if backbone.startswith("resnet"):
        # trainable BatchNorm: FrozenBatchNorm2d's buffers export as float
        # initializers, which the estimator cannot tell from parameters
        return resnet_fpn_backbone(backbone_name=backbone, weights=None, trainable_layers=5,
                                   norm_layer=nn.BatchNorm2d)
    return mobilenet_backbone(backbone_name=backbone, weights=None, fpn=True, trainable_layers=6,
                              norm_layer=nn.BatchNorm2d)


def _seg(name):
    import torchvision.models.segmentation as seg
    return getattr(seg, name)(weights=None, weights_backbone=None, num_classes=21, aux_loss=False)


# The backbones of torchvision's detection models (ResNet + FPN as in Faster /
# Mask / Keypoint R-CNN and RetinaNet, MobileNetV3 + FPN as in the mobile
# Faster R-CNN) and its segmentation models whole (backbone + head + the
# upsampling to the input size); the detection heads (RoI pooling, NMS) do not
# export at opset 13 in training mode.
DENSE = {
    "fpn_resnet50": _dense(lambda: _fpn("resnet50")),
    "fpn_resnet18": _dense(lambda: _fpn("resnet18")),
    "fpn_mobilenet_v3_large": _dense(lambda: _fpn("mobilenet_v3_large")),
    "fcn_resnet50": _dense(lambda: _seg("fcn_resnet50"), "out"),
    "deeplabv3_resnet50": _dense(lambda: _seg("deeplabv3_resnet50"), "out"),
    "deeplabv3_mobilenet_v3_large": _dense(lambda: _seg("deeplabv3_mobilenet_v3_large"), "out"),
    "lraspp_mobilenet_v3_large": _dense(lambda: _seg("lraspp_mobilenet_v3_large"), "out"),
}


def all_names():
    """Every model this script exports: the zoo, calibration, sequence and
    dense models, and every torchvision classifier."""
    return list(NAMES) + ["mlp"] + list(CALIBRATION) + list(SEQUENCE) + list(DENSE) + \
        [n for n in torchvision_classifiers() if n not in NAMES]


class _NoInit:
    """Skips torch.nn.init while building (the weights' values never reach
    the estimator, and initialising a 600M-parameter model takes a minute)."""
    def __enter__(self):
        import torch.nn.init as init
        self.saved = {k: getattr(init, k) for k in dir(init)
                      if k.endswith("_") and callable(getattr(init, k))}
        for k in self.saved:
            setattr(init, k, lambda t, *a, **kw: t)

    def __exit__(self, *exc):
        import torch.nn.init as init
        for k, f in self.saved.items():
            setattr(init, k, f)


def export(name, path, image=64, seq=0, weights=True):
    """weights=False: no init, and every initializer over 1 KiB is written as
    external data that is then deleted, leaving the graph, shapes and small
    constants (what `loom estimate` reads) in a file of kilobytes."""
    torch.manual_seed(0)
    if weights:
        mod, inputs, names, _ = build(name, image, seq=seq)
    else:
        with _NoInit():
            mod, inputs, names, _ = build(name, image, seq=seq)
    mod.train()
    axes = {n: {0: "batch"} for n in names}
    axes["output"] = {0: "batch"}
    with torch.no_grad():
        example = inputs(2)
    if weights:
        _export(mod, example, path, names, axes)
        return
    # what PyTorch counts, for the coverage test to hold the estimate against
    with open(path[:-5] + ".json" if path.endswith(".onnx") else path + ".json", "w") as f:
        json.dump({"model": name, "params": sum(p.numel() for p in mod.parameters()),
                   "torch": torch.__version__}, f)
        f.write("\n")
    import tempfile
    # a directory of its own: torch writes a model over 2 GB as external files next to it
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(path))) as tmp:
        full = os.path.join(tmp, "full.onnx")
        _export(mod, example, full, names, axes)
        strip(full, path)


def _export(mod, example, path, names, axes):
    torch.onnx.export(mod, example, path, opset_version=13, input_names=names,
                      output_names=["output"], dynamic_axes=axes,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def strip(src, dst):
    """Rewrites src as dst with every tensor over 1 KiB as external data, and
    deletes that data: dst keeps the graph, shapes and small constants."""
    import onnx
    m = onnx.load(src, load_external_data=False)
    data = os.path.basename(dst) + ".data"
    onnx.save_model(m, dst, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data, size_threshold=1024)
    data = os.path.join(os.path.dirname(os.path.abspath(dst)), data)
    if os.path.exists(data):  # absent when torch wrote every tensor externally (> 2 GB)
        os.remove(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--models", default=",".join(NAMES),
                    help="comma-separated names, or 'all' (zoo, torch.nn sequence models, "
                    "detection/segmentation backbones, every torchvision classifier)")
    ap.add_argument("--no-weights", action="store_true",
                    help="graph only: initializers over 1 KiB as deleted external data (kB files)")
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--seq", type=int, default=0,
                    help="sequence length of bert, gpt2 and lstm (0 = their default)")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    rc = 0
    models = all_names() if a.models == "all" else a.models.split(",")
    for name in models:
        path = os.path.join(a.outdir, name + ".onnx")
        try:
            export(name, path, a.image, a.seq, weights=not a.no_weights)
            print(f"{name}: {path} ({os.path.getsize(path)} bytes)")
        except Exception as e:  # report every model, fail at the end
            print(f"{name}: export failed: {e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
