#!/usr/bin/python3
"""Where a step-time estimate goes wrong: the estimator's time per operator
class against PyTorch's profiler on the same training step (issue #24; a
development tool: run it on development models, never on a held-out list).

    bench/estimate_profile.py --build build --onnx DIR --device DEVICE.json \\
        --model resnet18 --batch 8 [--steps 3] [--optimizer adam]

The model is built by workloads/export_onnx.py (DIR holds its export for the
estimate), trained one thread, Adam, two warm-up steps, then --steps steps
under torch.profiler. Each step is split into forward, backward and optimizer
(record_function ranges); every top-level operator of the forward (aten::conv2d,
aten::batch_norm, ...) and every autograd node of the backward
(ConvolutionBackward0, ...) is put in the estimator's class by its name
(CLASS_OF below; "other" when unknown), and its CPU time (with its children)
summed per class. The profiler adds a few microseconds per operator, so small
classes read high; compare a class's ratio with the others' of the same run.
Prints one table: class, measured ms per step, estimated ms, ratio. Every
convolution is one aten::conv2d to the profiler, so the estimator's conv,
conv1x1 and dwconv classes are summed as "conv".
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# profiler names (forward aten ops, backward autograd nodes) -> estimator class
CLASS_OF = {
    "aten::conv2d": "conv", "ConvolutionBackward0": "conv",
    "aten::batch_norm": "bn", "NativeBatchNormBackward0": "bn",
    "aten::layer_norm": "ln", "NativeLayerNormBackward0": "ln",
    "aten::relu": "unary", "aten::relu_": "unary", "ReluBackward0": "unary",
    "aten::hardtanh": "unary", "aten::hardtanh_": "unary", "HardtanhBackward0": "unary",
    "aten::dropout": "dropout", "NativeDropoutBackward0": "dropout", "MulBackward0": "binary",
    "aten::hardswish": "unary", "aten::hardswish_": "unary", "HardswishBackward0": "unary",
    "aten::hardsigmoid": "unary", "HardsigmoidBackward0": "unary",
    "aten::add": "binary", "aten::add_": "binary", "AddBackward0": "binary",
    "aten::mul": "binary", "aten::mul_": "binary", "aten::div": "binary", "DivBackward0": "binary",
    "aten::gelu": "gelu", "GeluBackward0": "gelu",
    "aten::silu": "act", "aten::silu_": "act", "SiluBackward0": "act",
    "aten::sigmoid": "act", "SigmoidBackward0": "act", "aten::tanh": "act", "TanhBackward0": "act",
    "aten::softmax": "softmax", "SoftmaxBackward0": "softmax",
    "aten::max_pool2d": "pool", "MaxPool2DWithIndicesBackward0": "pool",
    "aten::avg_pool2d": "pool", "AvgPool2DBackward0": "pool",
    "aten::adaptive_avg_pool2d": "reduce", "MeanBackward1": "reduce", "aten::mean": "reduce",
    "aten::linear": "matmul", "AddmmBackward0": "matmul", "MmBackward0": "matmul",
    "aten::matmul": "bmm", "BmmBackward0": "bmm", "UnsafeViewBackward0": "view",
    "aten::embedding": "embedding", "EmbeddingBackward0": "embedding",
    "aten::lstm": "lstm", "aten::gru": "gru",
    "aten::cross_entropy_loss": "loss", "NllLossBackward0": "loss", "LogSoftmaxBackward0": "loss",
    "aten::cat": "copy", "CatBackward0": "copy", "aten::flatten": "view", "aten::view": "view",
    "aten::reshape": "view", "ViewBackward0": "view", "ReshapeAliasBackward0": "view",
    "aten::transpose": "view", "TransposeBackward0": "view", "aten::permute": "view",
    "PermuteBackward0": "view", "aten::contiguous": "copy", "CloneBackward0": "copy",
}


def profile(a):
    sys.path.insert(0, os.path.join(ROOT, "workloads"))
    import torch
    from torch.profiler import profile as tprofile, record_function
    import export_onnx as ex
    import estimate_measure as em  # bench/, next to this script
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mod, opt, x, loss_fn = em.training_setup(ex, a.model, a.optimizer, a.batch)

    def step():
        opt.zero_grad(set_to_none=True)
        with record_function("loom:fwd"):
            loss = loss_fn(mod(*x), a.batch)
        with record_function("loom:bwd"):
            loss.backward()
        with record_function("loom:opt"):
            opt.step()
    for _ in range(2):
        step()
    t0 = time.process_time()
    with tprofile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(a.steps):
            step()
    wall = (time.process_time() - t0) / a.steps
    per = {}
    for ev in p.events():
        parent = ev.cpu_parent
        if parent is None:
            continue
        if parent.name in ("loom:fwd", "loom:opt"):
            key = ("optimizer" if parent.name == "loom:opt" else CLASS_OF.get(ev.name, "other"))
        elif parent.name.startswith("autograd::engine::evaluate_function"):
            key = CLASS_OF.get(ev.name, "other")
        else:
            continue
        per[key] = per.get(key, 0.0) + ev.cpu_time_total / 1e6 / a.steps
        if key == "other":
            per.setdefault("_other_names", set()).add(ev.name)
    return per, wall


CONV_CLASSES = ("conv", "conv1x1", "dwconv", "dwconv5", "dwconv7")


def estimate(a):
    out = subprocess.run([os.path.join(a.build, "loom"), "estimate", os.path.join(a.onnx, a.model + ".onnx"),
                          "--batch", str(a.batch), "--train", "--optimizer", a.optimizer,
                          "--device", a.device, "--json"], check=True, capture_output=True, text=True)
    e = json.loads(out.stdout)
    per = {}
    for op in e["ops"]:
        # the profiler sees one aten::conv2d for every kind of convolution
        cls = "conv" if op["class"] in CONV_CLASSES else op["class"]
        per[cls] = per.get(cls, 0.0) + op["time_s"]
    per["optimizer"] = e["time_s"]["optimizer"]
    return per, e["time_s"]["step"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--optimizer", default="adam")
    a = ap.parse_args()
    tun = json.load(open(a.device)).get("malloc_tunables", "")
    if tun and os.environ.get("GLIBC_TUNABLES") != tun:  # measured under the device's runtime
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, GLIBC_TUNABLES=tun))
    meas, wall = profile(a)
    est, step = estimate(a)
    others = sorted(meas.pop("_other_names", []))
    print(f"{a.model} batch {a.batch}: step {wall * 1e3:.1f} ms under the profiler, "
          f"estimated {step * 1e3:.1f} ms")
    print(f"{'class':<10} {'measured ms':>12} {'estimated ms':>13} {'est/meas':>9}")
    for k in sorted(set(meas) | set(est), key=lambda k: -meas.get(k, 0)):
        m, e = meas.get(k, 0) * 1e3, est.get(k, 0) * 1e3
        print(f"{k:<10} {m:12.2f} {e:13.2f} {e / m if m else float('nan'):9.2f}")
    if others:
        print("other: " + ", ".join(others))
    return 0


if __name__ == "__main__":
    sys.exit(main())
