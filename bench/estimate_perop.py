#!/usr/bin/python3
"""A model's convolutions and batch norms timed one by one, and its Adam
step alone, against the estimator's time for each (issue #24; a development
tool: run it on development models or spent held-out lists, never on a list
still to be measured).

    bench/estimate_perop.py --build build --onnx DIR --device DEVICE.json \\
        --model mnasnet1_3 --batch 8 [--ops conv,bn,adam] [--class conv1x1]

The model is built by workloads/export_onnx.py (DIR holds its export for the
estimate) on 64x64 inputs. Every nn.Conv2d and nn.BatchNorm2d it runs in a
forward pass is rebuilt alone at the shape it saw and timed forward and
backward the way bench/estimate_calibrate.py times its samples (one thread,
process CPU time, operands out of cache, the device's glibc tunables),
then set against the estimator's time for the same operator (the ONNX
graph's Conv and BatchNormalization nodes, in order; the estimate includes
the device's in-step factor). Every input is timed needing its gradient, so
a network's first convolution reads high here. --ops adam times the model's
Adam step alone (random gradients, the median of 5 steps each after a pass
over 96 MiB) against the estimate's optimizer time. Prints one line per
operator and a total per class. Where a class's total differs from the estimate by
far more than its calibration's error, the class misses those shapes (how
the pointwise convolutions' cost over 2x2 maps was found: 2026-12-04).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the build directory (its loom)")
    ap.add_argument("--onnx", required=True, help="directory of the model's ONNX export")
    ap.add_argument("--device", required=True, help="the device file to estimate with")
    ap.add_argument("--model", required=True, help="a workloads/export_onnx.py model name")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--ops", default="conv,bn", help="some of conv, bn, adam (default conv,bn)")
    ap.add_argument("--class", dest="cls", help="only operators the estimator puts in this class")
    a = ap.parse_args()
    a.ops = a.ops.split(",")
    bad = sorted(set(a.ops) - {"conv", "bn", "adam"})
    if bad:
        ap.error(f"--ops {','.join(a.ops)}: unknown {', '.join(bad)}; expected conv, bn, adam")
    if a.batch < 1:
        ap.error(f"--batch {a.batch}: expected a positive batch size")
    return a


def estimate(a):
    onnx = os.path.join(a.onnx, a.model + ".onnx")
    p = subprocess.run([os.path.join(a.build, "loom"), "estimate", onnx, "--batch", str(a.batch),
                        "--train", "--optimizer", "adam", "--device", a.device, "--json"],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"estimate_perop.py: loom estimate {onnx}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def seen_modules(model, batch, kinds):
    """(module, input shape) of every module of kinds the forward pass runs, in order."""
    import torch
    seen = []
    hooks = [mod.register_forward_hook(lambda m, inp, out: seen.append((m, tuple(inp[0].shape))))
             for mod in model.modules() if isinstance(mod, kinds)]
    model.train()
    model(torch.randn(batch, 3, 64, 64))
    for h in hooks:
        h.remove()
    return seen


def rebuild(mod, shape):
    """A factory for estimate_calibrate.fwd_bwd: the module alone at shape."""
    import torch
    import torch.nn as nn
    if isinstance(mod, nn.Conv2d):
        def make():
            c = nn.Conv2d(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride,
                          padding=mod.padding, dilation=mod.dilation, groups=mod.groups,
                          bias=mod.bias is not None)
            return c, (torch.randn(*shape, requires_grad=True),), c.parameters()
    else:
        def make():
            b = nn.BatchNorm2d(mod.num_features)
            return b, (torch.randn(*shape, requires_grad=True),), b.parameters()
    return make


def main():
    a = parse_args()
    dev = json.load(open(a.device))
    tun = dev.get("malloc_tunables", "")
    if tun and os.environ.get("GLIBC_TUNABLES") != tun:  # timed under the device's runtime
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, GLIBC_TUNABLES=tun))
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "workloads"))
    import torch
    import torch.nn as nn
    import estimate_calibrate as ec
    import export_onnx as ex
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ec.page_fault_s = float(dev.get("page_fault_s", 0.0))
    built = ex.build(a.model)
    model = built[0] if isinstance(built, tuple) else built
    est_json = estimate(a)
    ops = est_json["ops"]
    pairs = []
    for kind, mtype, onnx_op in (("conv", nn.Conv2d, "Conv"), ("bn", nn.BatchNorm2d, "BatchNormalization")):
        if kind not in a.ops:
            continue
        seen = seen_modules(model, a.batch, mtype)
        est = [o for o in ops if o["op"] == onnx_op]
        if len(seen) != len(est):
            sys.exit(f"estimate_perop.py: {a.model}: the forward ran {len(seen)} {mtype.__name__} "
                     f"but the ONNX graph has {len(est)} {onnx_op} nodes; cannot pair them")
        pairs += list(zip(seen, est))
    totals = {}
    print(f"{a.model} batch {a.batch} on {os.path.basename(a.device)}: each operator alone "
          "(forward + backward, ms) against the estimate")
    for (mod, shape), op in pairs:
        if a.cls and op["class"] != a.cls:
            continue
        tf, tb = ec.fwd_bwd(rebuild(mod, shape))
        t = tf + tb
        tot = totals.setdefault(op["class"], [0.0, 0.0])
        tot[0] += t
        tot[1] += op["time_s"]
        what = (f"k{mod.kernel_size[0]} s{mod.stride[0]} g{mod.groups} -> {mod.out_channels}"
                if isinstance(mod, nn.Conv2d) else "")
        print(f"{op['class']:8s} {str(shape):20s} {what:22s} measured {t * 1e3:7.3f}  "
              f"estimated {op['time_s'] * 1e3:7.3f}  est/meas {op['time_s'] / t:5.2f}", flush=True)
    for cls, (t, e) in sorted(totals.items()):
        print(f"total {cls}: measured alone {t * 1e3:.1f} ms, estimated {e * 1e3:.1f} ms, "
              f"est/meas {e / t:.2f}")
    if "adam" in a.ops:
        t, n, k = adam_alone(model, ec.COLD_BYTES)
        e = est_json["time_s"]["optimizer"]
        print(f"adam: {k} tensors, {n / 1e6:.1f} M parameters: measured alone {t * 1e3:.1f} ms, "
              f"estimated {e * 1e3:.1f} ms, est/meas {e / t:.2f}")
    return 0


def adam_alone(model, cold_bytes):
    """(median seconds of an Adam step over model's parameters, parameters, tensors)."""
    import statistics
    import time
    import torch
    ps = [p for p in model.parameters() if p.requires_grad]
    for p in ps:
        p.grad = torch.randn_like(p)
    opt = torch.optim.Adam(ps, lr=1e-4)
    opt.step()  # its state
    evict, ts = torch.zeros(cold_bytes // 4), []
    for _ in range(5):
        evict.add_(1.0)  # state and gradients out of cache, as after a backward pass
        t0 = time.process_time()
        opt.step()
        ts.append(time.process_time() - t0)
    return statistics.median(ts), sum(p.numel() for p in ps), len(ps)


if __name__ == "__main__":
    sys.exit(main())
