#!/usr/bin/python3
"""Per-operator-class calibration of this CPU for `loom estimate` (bench/estimate.sh runs it).

    bench/estimate_calibrate.py DEVICE.json [--quick] [--report FILE.md]
    bench/estimate_calibrate.py DEVICE.json --only lstm   (some classes again)

Adds to the device description written by build/bench_estimate_calibrate:

  page_fault_s   seconds per fresh 4 KiB page: the extra CPU time of writing
                 a just-mapped buffer over writing it again (kernel fault and
                 zeroing, and whatever the hypervisor adds)
  op_classes     per operator class and direction ("fwd", "bwd"), the
                 parameters of   t = overhead_s [+ strided_s]
                                     + flops / (peak * d^p / (d^p + half_dim^p))
                                     + elems * elem_s(elems)
                 docs/estimate.md ("Step time") defines flops, d and elems per class
  optimizer      per optimizer: tensor_s (per parameter tensor) and elem_s
                 (per element, a curve over the tensor's elements)
  step_overhead_s  the fixed cost of a step (loss call, backward() call,
                 optimizer bookkeeping) beyond its operators

Every figure comes from a microbenchmark of PyTorch itself on shapes chosen
off the model zoo's (odd channel counts, feature maps and batches; the zoo
uses powers of two), single-threaded and timed in process CPU time like
bench/estimate_measure.py's steps, best of 5. The estimator models fresh
pages separately (its glibc heap model), so the class costs must not
contain them: the script runs itself with glibc's trimming off and a fixed
mmap threshold of 32 MiB (GLIBC_TUNABLES), so that a microbenchmark
repeating an operator reuses its memory, and any page faults left in a
timed sample (ru_minflt) are subtracted at page_fault_s each. page_fault_s
itself is measured on anonymous mappings (Python's mmap, no malloc).
Nothing here reads the zoo or its measurements.
"""
import os
import argparse
import itertools
import json
import math
import resource
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAGE = 4096
page_fault_s = 0.0


def minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def timeit(fn, reps=5, min_sample=2e-3):
    """Median per-call process CPU time of fn over reps samples, minus page
    faults (the median, as bench/estimate_measure.py takes of its steps: on
    a shared machine the best sample is a lucky one, not a typical one)."""
    fn()
    fn()
    t0 = time.process_time()
    fn()
    one = time.process_time() - t0
    n = max(1, min(2000, int(min_sample / max(one, 1e-6))))
    samples = []
    for _ in range(reps):
        f0 = minflt()
        t0 = time.process_time()
        for _ in range(n):
            fn()
        t = time.process_time() - t0
        samples.append((t - (minflt() - f0) * page_fault_s) / n)
    return max(statistics.median(samples), 1e-9)


def timeit_parts(fn, reps=5, min_sample=2e-3):
    """Like timeit, for fn() that times its own part and returns seconds."""
    fn()
    fn()
    one = fn()
    n = max(1, min(2000, int(min_sample / max(one, 1e-6))))
    samples = [sum(fn() for _ in range(n)) / n for _ in range(reps)]
    return max(statistics.median(samples), 1e-9)


def measure_page_fault():
    """CPU time per fresh page: write one byte to every page of a new 64 MiB
    anonymous mapping, minus writing them again once mapped; best of 5.
    (The rest of a tensor's first write is the operator's own cost.)"""
    import mmap
    size = 64 << 20
    best = math.inf
    for _ in range(5):
        mm = mmap.mmap(-1, size)
        f0 = minflt()
        t0 = time.process_time()
        for off in range(0, size, PAGE):
            mm[off] = 1
        t_new = time.process_time() - t0
        faults = minflt() - f0
        t0 = time.process_time()
        for off in range(0, size, PAGE):
            mm[off] = 2
        t_old = time.process_time() - t0
        mm.close()
        if faults > 0:
            best = min(best, max(t_new - t_old, 0) / faults)
    return best if best < math.inf else 0.0


# ------------------------------------------------------------ fitting

def interp_log(curve, x):
    xs = [p[0] for p in curve]
    if x <= xs[0]:
        return curve[0][1]
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x <= x1:
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + t * (y1 - y0)
    return curve[-1][1]


def lsq_nonneg(cols, y):
    """Least squares in relative error with non-negative coefficients
    (columns whose coefficient comes out negative are dropped and the rest refit)."""
    active = list(range(len(cols)))
    w = 1.0 / y
    while True:
        A = np.stack([cols[i] for i in active], 1)
        coef, *_ = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)
        if (coef >= 0).all() or len(active) == 1:
            out = [0.0] * len(cols)
            for i, c in zip(active, coef):
                out[i] = max(float(c), 0.0)
            return out
        active.pop(int(np.argmin(coef)))


def eval_fn(f, flops, d, elems, steps=0.0, strided=False):
    """The estimator's cost function (loom_est_cost_eval in src/estimate/cost.c)."""
    t = f.get("overhead_s", 0.0) + steps * f.get("step_s", 0.0)
    t += f.get("strided_s", 0.0) if strided else 0.0
    r = f.get("rate")
    if r and flops > 0:
        eff = 1.0
        if r["half_dim"] > 0:
            dp, hp = max(d, 1) ** r["power"], r["half_dim"] ** r["power"]
            eff = dp / (dp + hp)
        t += flops / (r["peak"] * eff)
    if f.get("elem_s") and elems > 0:
        t += elems * interp_log(f["elem_s"], elems)
    return t


def fit_flops(samples, steps=False):
    """samples: (flops, d, elems, strided, t[, count]). Fits overhead,
    strided, the saturating rate curve and a constant elem_s on three
    quarters of the samples; returns (params, errors on those, errors on the
    quarter held out). steps: the strided column is a step count and its
    coefficient the cost per step (step_s). A sixth member, a count (the
    depthwise classes' planes, batch x channels), gets a cost of its own,
    step_s, beside the strided one."""
    samples = plausible(samples)
    held = samples[3::4]
    samples = [x for i, x in enumerate(samples) if i % 4 != 3]
    counted = len(samples[0]) == 6
    fl, d, el, st, t, *cnt = (np.array(c, dtype=float) for c in zip(*samples))
    best = None
    for p in (0.5, 1.0, 2.0):
        for h in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            eff = d ** p / (d ** p + h ** p)
            cols = [np.ones_like(t), st, fl / eff, el] + cnt
            c = lsq_nonneg(cols, t)
            pred = sum(ci * col for ci, col in zip(c, cols))
            err = np.abs(pred - t) / t
            score = float(np.median(err)) + 0.25 * float(np.mean(err))
            if best is None or score < best[0]:
                best = (score, p, h, c, err)
    _, p, h, c, err = best
    out = {"overhead_s": c[0], "elem_s": [[1, c[3]]]}
    if c[2] > 0:
        out["rate"] = {"peak": 1.0 / c[2], "half_dim": h, "power": p}
    if c[1] > 0:
        out["step_s" if steps else "strided_s"] = c[1]
    if counted and c[4] > 0:
        out["step_s"] = c[4]
    def held_eval(x):
        f, dd, e, sd, tt = x[:5]
        n = x[5] if counted else (sd if steps else 0)
        return abs(eval_fn(out, f, dd, e, n, bool(sd) and not steps) - tt) / tt
    return out, err, np.array([held_eval(x) for x in held])


MIN_OP_S = 1e-6  # no PyTorch operator with autograd runs faster


def plausible(samples):
    """Drops failed measurements: a time under MIN_OP_S (a sample whose
    page faults, subtracted, outweighed it)."""
    kept = [x for x in samples if x[4 if len(x) == 6 else -1] >= MIN_OP_S]  # fit_flops' count
    if len(kept) < len(samples):
        print(f"  ({len(samples) - len(kept)} of {len(samples)} samples under {MIN_OP_S * 1e6:.0f} us dropped)",
              flush=True)
    return kept


def fit_elems(samples):
    """samples: (elems, t), the smallest of one element. overhead = the
    time of the smallest; elem_s(elems) = (t - overhead) / elems at the others."""
    samples = sorted(plausible(samples))
    c0 = samples[0][1]
    curve = []
    for e, t in samples[1:]:
        curve.append([e, max((t - c0) / e, 0.0)])
    return {"overhead_s": c0, "elem_s": curve}


# ------------------------------------------------------------ microbenchmarks

COLD_BYTES = 96 << 20  # more than this CPU's caches hold


def fwd_bwd(factory):
    """(forward s, backward s) of out = fn(*inputs); out.backward(g), with
    every gradient reset to None first as zero_grad(set_to_none=True) does.
    factory() -> (fn, inputs, params) builds one independent copy (its own
    weights and inputs). In a training step each layer runs once between
    all the others, so its operands come from memory, not from cache: the
    calls rotate over enough copies to hold COLD_BYTES together."""
    def build():
        fn, inputs, params = factory()
        params = list(params)
        leaves = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad] + params
        out = fn(*inputs)
        return fn, inputs, leaves, torch.randn_like(out), out.numel() * out.element_size()
    sets = [build()]
    ws = sum(x.numel() * x.element_size() for x in sets[0][1] if isinstance(x, torch.Tensor))
    ws += sum(p.numel() * p.element_size() for p in sets[0][2]) + 2 * sets[0][4]
    copies = max(1, min(64, -(-COLD_BYTES // max(ws, 1))))
    sets += [build() for _ in range(copies - 1)]
    i = [0]

    def fwd():
        fn, inputs, leaves, g, _ = sets[i[0] % copies]
        i[0] += 1
        for x in leaves:
            x.grad = None
        fn(*inputs)

    pending = []  # forward graphs waiting for their backward, oldest first

    def bwd():
        """The backward of a forward run `copies` calls ago (the forwards and
        backwards of every other copy in between), timed; then this copy's
        next forward, untimed. In a step the backward pass finds the saved
        activations and weights of a layer in memory, not in cache."""
        while len(pending) < copies:  # fill the pipeline
            fn, inputs, leaves, g, _ = sets[i[0] % copies]
            i[0] += 1
            pending.append((fn(*inputs), g, leaves, fn, inputs))
        out, g, leaves, fn, inputs = pending.pop(0)
        for x in leaves:
            x.grad = None
        f0 = minflt()
        t0 = time.process_time()
        out.backward(g)
        t = time.process_time() - t0 - (minflt() - f0) * page_fault_s
        pending.append((fn(*inputs), g, leaves, fn, inputs))
        return t
    return timeit(fwd), timeit_parts(bwd)


def pointwise(b, k, s):
    """PyTorch 1.13's CPU convolution without oneDNN (Convolution.cpp,
    use_mkldnn, one thread): 1x1, stride 1, batch under 16."""
    return k == 1 and s == 1 and b < 16


CONV_PAIRS = ((24, 40), (72, 120), (200, 320), (480, 600), (240, 1440), (1440, 240))


def cal_conv(quick, point=False):
    """The conv class (oneDNN) or, with point, conv1x1 (PyTorch's own
    pointwise path: one GEMM per sample). The grid reaches a mobile
    network's last stages at 64x64: maps of 1x1 (squeeze-and-excitation),
    2x2 and 3x3 with up to 1440 channels; before they were in it (hw 5 and
    up) the pointwise fit read those convolutions at half their time. The
    pointwise samples count batch x weight elements where the map is larger
    than 1x1: each per-sample GEMM packs the whole weight (src/estimate/cost.c
    op_features)."""
    fw, bw = [], []
    cfg = itertools.product((1, 3, 6, 12) if point else (3, 12, 18), CONV_PAIRS,
                            (1, 2, 3, 5, 9, 17, 33), (1, 3), (1, 2))
    for b, (ci, co), hw, k, s in cfg:
        if pointwise(b, k, s) != point or (hw == 1 and (k > 1 or s > 1)):
            continue
        ho = (hw + 2 * (k // 2) - k) // s + 1
        E = b * co * ho * ho
        flops = 2 * E * ci * k * k
        if flops > 6e8 or (quick and (hw in (3, 17) or b in (3, 6) or max(ci, co) > 600)):
            continue
        def make(b=b, ci=ci, co=co, hw=hw, k=k, s=s):
            conv = nn.Conv2d(ci, co, k, stride=s, padding=k // 2, bias=False)
            return conv, (torch.randn(b, ci, hw, hw, requires_grad=True),), conv.parameters()
        tf, tb = fwd_bwd(make)
        d = min(b * ho * ho, co, ci * k * k)
        el = b * ci * hw * hw + E + co * ci * k * k
        count = (float(b * co * ci) if ho > 1 else 0.0,) if point else ()
        fw.append((flops, d, el, float(s > 1), tf) + count)
        bw.append((2 * flops, d, el, float(s > 1), tb) + count)
    if not point:
        grouped(fw, bw, quick)
    return fit_flops(fw), fit_flops(bw)


def grouped(fw, bw, quick):
    """Grouped 3x3 convolutions (ResNeXt / RegNet style: 2 to 64 channels
    per group) join the conv class's samples; d counts channels per group."""
    for b, (c, g), hw, s in itertools.product((3, 12), ((48, 24), (96, 8), (120, 4), (256, 4)),
                                              (9, 17), (1, 2)):
        if quick and hw == 17:
            continue
        def make(b=b, c=c, g=g, hw=hw, s=s):
            conv = nn.Conv2d(c, c, 3, stride=s, padding=1, groups=g, bias=False)
            return conv, (torch.randn(b, c, hw, hw, requires_grad=True),), conv.parameters()
        tf, tb = fwd_bwd(make)
        ho = (hw - 1) // s + 1
        E = b * c * ho * ho
        flops = 2 * E * (c // g) * 9
        d = min(b * ho * ho, c // g, (c // g) * 9)
        el = b * c * hw * hw + E + c * (c // g) * 9
        fw.append((flops, d, el, float(s > 1), tf))
        bw.append((2 * flops, d, el, float(s > 1), tb))


def cal_dwconv(quick, kernels):
    fw, bw = [], []
    # kernels 3 (dwconv), 5 (dwconv5) and 7 (dwconv7): MobileNet, EfficientNet /
    # MnasNet, ConvNeXt. The time grows with the kernel, so each class has a
    # FLOP term (2 E k^2, d = 1); and PyTorch's CPU kernels differ by kernel
    # size (one fit over all three missed the backward by 41% median, one per
    # kernel by 15-16%: 2026-12-03), so each kernel has its class. Maps of
    # 2x2 and 3x3 (the last stages of a mobile network at 64x64) are in the
    # grid: where the map is smaller than the kernel (3x3 over 2x2) the
    # backward leaves oneDNN's depthwise kernel and costs 0.2-0.3 us a plane
    # (batch x channels) whatever the work (960 channels at 2x2, batch 12:
    # 2.4 ms; at 3x3 or 4x4, 0.4-0.6 ms), so such samples count their planes
    for b, c, hw, s, k in itertools.product((3, 12), (24, 72, 200, 480), (2, 3, 5, 9, 17, 33),
                                            (1, 2), kernels):
        if ((quick and hw in (3, 17)) or (k == 7 and s == 2) or (k > 3 and hw == 33 and c > 72)
                or (s == 2 and hw < 5)):
            continue
        def make(b=b, c=c, hw=hw, s=s, k=k):
            conv = nn.Conv2d(c, c, k, stride=s, padding=k // 2, groups=c, bias=False)
            return conv, (torch.randn(b, c, hw, hw, requires_grad=True),), conv.parameters()
        tf, tb = fwd_bwd(make)
        ho = (hw - 1) // s + 1
        el = b * c * (hw * hw + ho * ho)
        flops = 2 * b * c * ho * ho * k * k
        planes = float(b * c) if hw < k else 0.0  # src/estimate/cost.c op_features
        fw.append((flops, 1, el, float(s > 1), tf, planes))
        bw.append((2 * flops, 1, el, float(s > 1), tb, planes))
    return fit_flops(fw), fit_flops(bw)  # overhead, strided, a FLOP rate, elem_s, per plane


def cal_matmul(quick):
    fw, bw = [], []
    for m, (k, n) in itertools.product((1, 3, 12, 40, 130, 500, 1500),
                                       ((96, 300), (300, 700), (700, 1200), (200, 3000))):
        flops = 2 * m * k * n
        if flops > 6e8 or (quick and m in (12, 500)):
            continue
        def make(m=m, k=k, n=n):
            lin = nn.Linear(k, n)
            return lin, (torch.randn(m, k, requires_grad=True),), lin.parameters()
        tf, tb = fwd_bwd(make)
        d = min(m, k, n)
        el = m * k + m * n + k * n
        fw.append((flops + m * n, d, el, 0.0, tf))
        bw.append((2 * flops, d, el, 0.0, tb))
    return fit_flops(fw), fit_flops(bw)


def cal_bmm(quick):
    fw, bw = [], []
    for bh, t, dd in itertools.product((6, 24, 60), (20, 50, 100, 200), (24, 40, 80)):
        if quick and t == 50:
            continue
        def make(bh=bh, t=t, dd=dd):
            return torch.matmul, (torch.randn(bh, t, dd, requires_grad=True),
                                  torch.randn(bh, dd, t, requires_grad=True)), ()
        tf, tb = fwd_bwd(make)
        flops = 2 * bh * t * t * dd
        el = 2 * bh * t * dd + bh * t * t
        fw.append((flops, min(t, dd), el, 0.0, tf))
        bw.append((2 * flops, min(t, dd), el, 0.0, tb))
    return fit_flops(fw), fit_flops(bw)


def sizes(quick):
    return (1, 300, 3000, 30000, 300000, 3000000) if not quick else (1, 300, 30000, 3000000)


HELD_SIZES = (1000, 100000, 1000000)  # between the calibration sizes


def cal_elementwise(make, quick):
    """make(E) -> (callable, inputs, params, elems). The curve comes from
    sizes(); the sizes in HELD_SIZES are measured too and predicted from
    it, as a check."""
    fw, bw, hf, hb = [], [], [], []
    for E in sizes(quick) + HELD_SIZES:
        el = make(E)[3]
        tf, tb = fwd_bwd(lambda: make(E)[:3])
        (hf if E in HELD_SIZES else fw).append((el, tf))
        (hb if E in HELD_SIZES else bw).append((el, tb))
    out = []
    for s, h in ((fw, hf), (bw, hb)):
        f = fit_elems(s)
        err = np.array([abs(eval_fn(f, 0, 0, e) - t) / t for e, t in s])
        herr = np.array([abs(eval_fn(f, 0, 0, e) - t) / t for e, t in h])
        out.append((f, err, herr))
    return out


def rows_cols(E, cols):
    return max(1, E // cols), cols


def mk_unary(fn):
    def make(E):
        x = torch.randn(E, requires_grad=True)
        return fn, (x,), (), E
    return make


def mk_binary(E):
    x = torch.randn(E, requires_grad=True)
    y = torch.randn(E, requires_grad=True)
    return torch.add, (x, y), (), E


def mk_bn(E):
    """BatchNorm2d over about E elements, 8x8 maps of 40 channels: planes
    (one sample's channel) of 64 elements, past the small planes that cost
    per plane (cal_bn)."""
    c = 40 if E >= 40 * 64 else 1
    return bn_shape(max(1, E // (c * 64)), c, 8)


def bn_shape(n, c, hw):
    m = nn.BatchNorm2d(c)
    return m, (torch.randn(n, c, hw, hw, requires_grad=True),), m.parameters(), n * c * hw * hw


def cal_bn(quick):
    """The bn class: the element curve over 8x8 maps (cal_elementwise), then
    step_s, what a plane (one sample's channel) of fewer than 16 elements
    costs beyond the curve: a 2x2 or 3x3 map, a mobile network's last stage
    at 64x64. There the backward costs 75-100 ns a plane whatever its size
    (in a scratch timing on 2026-12-04, 480 channels at 2x2 and batch 16
    took 99.5 ns a plane against 24 at 4x4 with four times the elements;
    5x5 to 10x10 maps cost 50-110 ns a plane more than 8x8's rate and 14x14
    less, which is not modelled). The estimator adds step_s per such plane
    (src/estimate/cost.c op_features); a 1x1 map runs as channels-last,
    without it."""
    out = cal_elementwise(mk_bn, quick)
    small = [(n * c, n * c * hw * hw, fwd_bwd(lambda: bn_shape(n, c, hw)[:3]))
             for n, c, hw in itertools.product((4, 16), (96, 480), (2, 3))
             if not (quick and (n == 4 or hw == 3))]
    for side, (f, _, _) in enumerate(out):
        per = [(t[side] - eval_fn(f, 0, 0, elems)) / planes for planes, elems, t in small]
        f["step_s"] = max(float(np.median(per)), 0.0)
    return out


def mk_ln(E):
    d = 300 if E >= 300 else E
    m = nn.LayerNorm(d)
    return m, (torch.randn(max(1, E // d), d, requires_grad=True),), m.parameters(), max(1, E // d) * d


def mk_softmax(E):
    r, c = rows_cols(E, 300 if E >= 300 else E)
    return (lambda x: x.softmax(-1)), (torch.randn(r, c, requires_grad=True),), (), r * c


def mk_loss(E):
    r, c = rows_cols(E, 300 if E >= 300 else E)
    tgt = torch.randint(0, c, (r,))
    x = torch.randn(r, c, requires_grad=True)
    return (lambda x: F.cross_entropy(x, tgt)), (x,), (), r * c


def mk_pool(E):  # elems = input + output of a 2x2 max pool
    c = 40 if E >= 40 * 36 else 1
    n = max(1, E // (c * 36))
    x = torch.randn(n, c, 6, 6, requires_grad=True)
    return (lambda x: F.max_pool2d(x, 2)), (x,), (), n * c * (36 + 9)


def mk_reduce(E):
    c = 300 if E >= 300 else E
    x = torch.randn(max(1, E // c), c, requires_grad=True)
    return (lambda x: x.mean(-1)), (x,), (), max(1, E // c) * c


def mk_copy(E):  # a transposed tensor made contiguous: reshape of a non-contiguous view
    c = 30 if E >= 900 else 1
    x = torch.randn(max(1, E // (c * c)), c, c, requires_grad=True)
    return (lambda x: x.transpose(1, 2).reshape(x.shape[0], -1)), (x,), (), x.numel()


def mk_view(E):
    x = torch.randn(6, max(1, E // 6), requires_grad=True)
    return (lambda x: x.view(-1)), (x,), (), x.numel()


def cal_embedding(quick):
    """elems: forward the rows looked up (x dim); backward the table (the
    dense gradient is zeroed) plus the rows. Fitted as a line (overhead +
    constant elem_s) on four shapes, the fifth held out."""
    fw, bw = [], []
    for rows, dim, n in ((300, 24, 60), (3000, 24, 600), (30000, 40, 600), (100000, 40, 3000),
                         (30000, 120, 6000)):
        def make(rows=rows, dim=dim, n=n):
            emb = nn.Embedding(rows, dim)
            return emb, (torch.randint(0, rows, (n,)),), emb.parameters()
        tf, tb = fwd_bwd(make)
        fw.append((0, 1, n * dim, 0.0, tf))
        bw.append((0, 1, rows * dim + n * dim, 0.0, tb))
    return fit_flops(fw), fit_flops(bw)


def cal_lstm(quick, matmul, kind="LSTM"):
    """The recurrence of nn.LSTM (or nn.GRU, kind="GRU", the gru class):
    PyTorch's CPU build runs the input projection of the whole sequence as
    one GEMM (seq x batch rows) before the time steps, and the estimator
    costs that GEMM with the matmul class (src/estimate/cost.c,
    rnn_projection). So the class is fitted on the measured time less the
    matmul class's prediction for the projection: FLOPs t x b x (8h x h +
    14h) for the LSTM, t x b x (6h x h + 12h) for the GRU, d = b, t steps."""
    g, fl, ew = (4, 8, 14) if kind == "LSTM" else (3, 6, 12)  # gates, FLOP terms
    fw, bw = [], []
    # three sequence lengths over a decade: with two (5 and 20 until
    # 2026-12-03) the fit could not tell the per-call overhead from the
    # per-step cost, and two calibrations 20 minutes apart put the forward
    # step at 18 and 54 us (a 64-step GRU's estimate moved by half)
    for b, t, h in itertools.product((3, 12, 40), (5, 20, 60), (40, 100, 300)):
        if quick and (b == 12 or t == 20):
            continue
        def make(b=b, t=t, h=h):
            m = getattr(nn, kind)(h, h, 1, batch_first=True)
            return (lambda x: m(x)[0]), (torch.randn(b, t, h, requires_grad=True),), m.parameters()
        tf, tb = fwd_bwd(make)
        rows = t * b
        pfl, pd, pel = 2 * rows * g * h * h, min(rows, g * h, h), rows * h + rows * g * h + g * h * h
        flops = t * b * (fl * h * h + ew * h)
        el = t * b * g * h
        # the step count rides in the "strided" column (see below)
        fw.append((flops, b, el, float(t), tf - eval_fn(matmul["fwd"], pfl, pd, pel)))
        bw.append((2 * flops, b, el, float(t), tb - eval_fn(matmul["bwd"], 2 * pfl, pd, pel)))
    return fit_flops(fw, steps=True), fit_flops(bw, steps=True)


def cal_optimizer(kind, quick):
    """tensor_s: fixed cost per parameter tensor; elem_s curve over the
    tensor's element count; 100000 x 20 held out."""
    pts, held = [], []
    evict = torch.zeros(COLD_BYTES // 4)
    for numel, count in ((1, 400), (3000, 200), (30000, 60), (300000, 12), (3000000, 3),
                         (100000, 20)):
        ps = [nn.Parameter(torch.randn(numel)) for _ in range(count)]
        opt = {"adam": lambda p: torch.optim.Adam(p, lr=1e-4),
               "momentum": lambda p: torch.optim.SGD(p, lr=1e-4, momentum=0.9),
               "sgd": lambda p: torch.optim.SGD(p, lr=1e-4)}[kind](ps)
        for p in ps:
            p.grad = torch.randn(numel)
        opt.step()

        def timed_step():  # after a pass over memory: a step's optimizer
            evict.add_(1.0)  # finds its state and gradients out of cache
            t0 = time.process_time()
            opt.step()
            return time.process_time() - t0
        t = timeit_parts(timed_step, reps=5, min_sample=5e-3)
        (held if numel == 100000 else pts).append((numel, t / count))
    fit = fit_elems(pts)
    herr = [abs(eval_fn(fit, 0, 0, e) - t) / t for e, t in held]
    return {"tensor_s": fit["overhead_s"], "elem_s": fit["elem_s"]}, herr


def step_overhead():
    """A whole step of a 3->2 Linear at batch 1: loss, backward() and an Adam
    step on two tiny tensors; the estimator adds its operator classes on top,
    so this is the rest (the caller subtracts those)."""
    lin = nn.Linear(3, 2)
    opt = torch.optim.Adam(lin.parameters(), lr=1e-4)
    x = torch.randn(1, 3)
    y = torch.randint(0, 2, (1,))

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(lin(x), y).backward()
        opt.step()
    return timeit(step, reps=7, min_sample=5e-3)


TUNABLES = "glibc.malloc.trim_threshold=68719476736:glibc.malloc.mmap_threshold=33554432"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "CPU"


CLASSES = (  # name, calibration(quick, the classes fitted so far); in this order
    ("conv", lambda q, cl: cal_conv(q)),
    ("conv1x1", lambda q, cl: cal_conv(q, point=True)),
    ("dwconv", lambda q, cl: cal_dwconv(q, (3,))),
    ("matmul", lambda q, cl: cal_matmul(q)),
    ("bmm", lambda q, cl: cal_bmm(q)),
    ("bn", lambda q, cl: cal_bn(q)),
    ("ln", lambda q, cl: cal_elementwise(mk_ln, q)),
    ("softmax", lambda q, cl: cal_elementwise(mk_softmax, q)),
    ("loss", lambda q, cl: cal_elementwise(mk_loss, q)),
    ("unary", lambda q, cl: cal_elementwise(mk_unary(torch.relu), q)),
    ("binary", lambda q, cl: cal_elementwise(mk_binary, q)),
    ("gelu", lambda q, cl: cal_elementwise(mk_unary(F.gelu), q)),
    ("act", lambda q, cl: cal_elementwise(mk_unary(torch.tanh), q)),
    ("pool", lambda q, cl: cal_elementwise(mk_pool, q)),
    ("reduce", lambda q, cl: cal_elementwise(mk_reduce, q)),
    ("copy", lambda q, cl: cal_elementwise(mk_copy, q)),
    ("view", lambda q, cl: cal_elementwise(mk_view, q)),
    ("embedding", lambda q, cl: cal_embedding(q)),
    ("lstm", lambda q, cl: cal_lstm(q, cl["matmul"])),
    # training dropout as a CPU runs it: Bernoulli noise per element, scaled,
    # multiplied (backward: one multiply); 4x relu's time per element here
    ("dropout", lambda q, cl: cal_elementwise(mk_unary(lambda x: F.dropout(x, 0.1, True)), q)),
    # the GRU's cell runs other kernels per step than the LSTM's (it was
    # costed as an LSTM's until 2026-12-03; the held-out GRUs read 15-26% low)
    ("gru", lambda q, cl: cal_lstm(q, cl["matmul"], kind="GRU")),
    ("dwconv5", lambda q, cl: cal_dwconv(q, (5,))),
    ("dwconv7", lambda q, cl: cal_dwconv(q, (7,))),
)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("device", help="device file to complete (or to create, with --from)")
    ap.add_argument("--quick", action="store_true", help="fewer shapes (tests, loom estimate calibrate)")
    ap.add_argument("--from", dest="template",
                    help="start from this device file (its roofline figures, context_bytes, "
                    "in_step_factor, malloc_tunables) and write a new one: `loom estimate calibrate`")
    ap.add_argument("--name", help="the new device's name (with --from; default: the file's stem)")
    ap.add_argument("--report", help="write the fit quality as Markdown to this file")
    ap.add_argument("--host", metavar="JSON",
                    help="the host being calibrated, as `loom estimate host` prints it; written "
                    "as the device's \"host\" (loom estimate calibrate passes it)")
    ap.add_argument("--only", metavar="CLASS[,CLASS]",
                    help="measure only these operator classes again; every other figure of the "
                    "device file (--from's, else DEVICE's) is kept")
    a = ap.parse_args()
    names = [name for name, _ in CLASSES]
    a.classes = a.only.split(",") if a.only else names
    unknown = sorted(set(a.classes) - set(names))
    if unknown:
        ap.error(f"--only {a.only}: unknown class {', '.join(unknown)}; expected some of "
                 + ", ".join(names))
    return a


def main():
    global page_fault_s
    if os.environ.get("GLIBC_TUNABLES") != TUNABLES:  # see the module's docstring
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  dict(os.environ, GLIBC_TUNABLES=TUNABLES))
    a = parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    t_start = time.process_time()
    dev = json.load(open(a.template or a.device))
    classes, report = (dict(dev.get("op_classes", {})) if a.only else {}), []
    rnn = [c for c in ("lstm", "gru") if c in a.classes]
    if rnn and "matmul" not in a.classes and "matmul" not in classes:
        sys.exit(f"estimate_calibrate.py: --only {a.only}: the device has no matmul class, "
                 f"which the {rnn[0]} fit needs")
    if a.only:  # the faults a sample takes are subtracted at the device's own rate
        page_fault_s = float(dev.get("page_fault_s", 0.0))
    else:
        page_fault_s = measure_page_fault()
        print(f"page fault {page_fault_s * 1e6:.2f} us per 4 KiB page", flush=True)
    for name, cal in CLASSES:
        if name not in a.classes:
            continue
        (fp, fe, fh), (bp, be, bh) = cal(a.quick, classes)
        classes[name] = {"fwd": fp, "bwd": bp}
        row = (name, len(fe), 100 * np.median(fe), 100 * np.median(be), len(fh),
               100 * np.median(fh), 100 * np.median(bh))
        report.append(row)
        print("%-10s fit n=%d: median err fwd %.1f%% bwd %.1f%%; held out n=%d: fwd %.1f%% bwd %.1f%%"
              % row, flush=True)
    dev["op_classes"] = classes
    when = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    opt_report = []
    if a.only:
        dev["description"] = dev.get("description", "") + f"; {a.only} recalibrated {when}"
    else:
        opt_report = calibrate_fixed(a, dev, when)
    if a.host:  # the host these figures hold on: loom estimate warns elsewhere
        dev["host"] = json.loads(a.host)
    elif not a.only:
        dev.pop("host", None)  # the template's host is not this one
    tmp = a.device + ".tmp"  # whole or nothing: a failed run leaves no half-written file
    with open(tmp, "w") as f:
        json.dump(dev, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, a.device)
    print(f"calibration took {time.process_time() - t_start:.0f} s CPU", flush=True)
    if a.report:
        write_report(a.report, dev, report, opt_report)
    return 0


def calibrate_fixed(a, dev, when):
    """The optimizers, the fixed cost of a step and the page fault cost into
    dev (a whole calibration); returns the optimizers' report rows."""
    classes = dev["op_classes"]
    opts, opt_report = {}, []
    for kind in ("sgd", "momentum", "adam"):
        opts[kind], herr = cal_optimizer(kind, a.quick)
        opt_report.append((kind, opts[kind]["tensor_s"] * 1e6, 100 * herr[0]))
        print("%-10s per tensor %.1f us; held out 100000 x 20: err %.1f%%" % opt_report[-1],
              flush=True)
    tiny = step_overhead()
    lin = classes["matmul"]
    fixed = (lin["fwd"]["overhead_s"] + lin["bwd"]["overhead_s"] + classes["loss"]["fwd"]["overhead_s"]
             + classes["loss"]["bwd"]["overhead_s"] + 2 * opts["adam"]["tensor_s"])
    if a.template:
        import platform
        dev["name"] = a.name or os.path.splitext(os.path.basename(a.device))[0]
        dev["description"] = (f"{cpu_model()} on host {platform.node()}, 1 thread; operator "
                              f"classes calibrated {when} "
                              f"by loom estimate calibrate{' (quick)' if a.quick else ''}; roofline "
                              f"figures, context_bytes and in_step_factor from {os.path.basename(a.template)}")
    dev["page_fault_s"] = page_fault_s
    dev["optimizer"] = opts
    dev["step_overhead_s"] = max(tiny - fixed, 0.0)
    dev["calibrated"] = True
    print(f"step overhead {dev['step_overhead_s'] * 1e6:.1f} us (tiny step {tiny * 1e6:.1f} us)",
          flush=True)
    return opt_report


def write_report(path, dev, rows, opt_rows):
    import platform
    load = open("/proc/loadavg").read().split()[:3]
    lines = [
        "# Estimator calibration: operator classes (bench/estimate_calibrate.py)",
        "",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Machine: {platform.node()}, "
        f"{dev.get('description', '').split(';')[0]}. Load average {' '.join(load)}. "
        f"torch {torch.__version__}, 1 thread, process CPU time, best of 5.",
        "",
        "Command: `bash bench/estimate.sh build` (which runs `bench/estimate_calibrate.py "
        "workloads/devices/cpu-local.json --report docs/bench/estimate_classes.md`). Shapes are off "
        "the zoo's; every operand is out of cache (the calls rotate over copies holding 96 MiB); "
        "glibc trimming is off in this process and faults left are subtracted (the estimator models "
        "fresh pages apart). Fit: the microbenchmarks the parameters come from (for conv, matmul, bmm, "
        "dwconv, embedding and lstm three quarters of the shapes); held out: the other quarter, or "
        "for the element-wise classes sizes between the calibration sizes (1000, 100000, 1000000 "
        "elements), predicted by the fitted function.",
        "",
        f"Page fault: {dev['page_fault_s'] * 1e6:.2f} us per fresh 4 KiB page. Fixed cost of a step: "
        f"{dev['step_overhead_s'] * 1e6:.1f} us.",
        "",
        "| class | fit n | fwd median err % | bwd median err % | held out n | fwd % | bwd % |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += ["| %s | %d | %.1f | %.1f | %d | %.1f | %.1f |" % r for r in rows]
    lines += ["", "| optimizer | per tensor us | held-out err % |", "|---|---|---|"]
    lines += ["| %s | %.1f | %.1f |" % r for r in opt_rows]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
