"""Weight transformation through PyTorch (docs/zoo.md): a trained-looking
parent (random weights) exported to ONNX and stored; `loom zoo warm
--noise 0` onto a wider MLP, a wider CNN and a deeper MLP; after
loom.warmstart.apply each child computes the parent's function (the
Net2Net widening and deepening rules, parameters found by the names the ONNX
export records), and a transformer with more blocks too (the new blocks'
residual projections start at zero)."""
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "workloads", "zoo"))
sys.path.insert(0, HERE)
import digits  # noqa: E402
from digits import ws  # noqa: E402
from loomd_client import build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
CASES = [("mlp-64", "mlp-96"), ("cnn-16-32", "cnn-24-32"), ("mlp-64", "mlp-64-64"),
         ("mlp-64-64", "mlp-100-80"), ("tfm-d32-l2", "tfm-d32-l3"), ("tfm-d16-l1", "tfm-d16-l3")]


def zoo(state, *args):
    r = subprocess.run([LOOM, "zoo", *args, "--state-dir", state], capture_output=True, text=True)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def main():
    torch.manual_seed(0)
    x = torch.rand(32, 1, 8, 8)
    with tempfile.TemporaryDirectory(prefix="loom-zoo-torch-") as d:
        for i, (pa, ca) in enumerate(CASES):
            state = os.path.join(d, f"s{i}")
            parent = digits.build(pa)
            with torch.no_grad():  # not at initialisation: biases matter too
                for p in parent.parameters():
                    p.add_(0.1 * torch.randn_like(p))
            digits.export(parent, os.path.join(d, "p.onnx"))
            ws.save(parent, os.path.join(d, "p.lw"))
            zoo(state, "add", os.path.join(d, "p.onnx"), "--weights", os.path.join(d, "p.lw"),
                "--metric", "accuracy=0.9", "--task", "t")
            child = digits.build(ca)
            digits.export(child, os.path.join(d, "c.onnx"))
            out = os.path.join(d, "c.lw")
            rep = json.loads(zoo(state, "warm", os.path.join(d, "c.onnx"), "--task", "t",
                                 "--out", out, "--noise", "0", "--json"))
            applied = ws.apply(child, out)
            assert not applied["mismatched"], (ca, applied)
            # a deeper transformer keeps the new block's inner layers fresh
            assert not applied["missing"] or ca.startswith("tfm"), (ca, applied)
            parent.eval()
            child.eval()
            with torch.no_grad():
                diff = (parent(x) - child(x)).abs().max().item()
            assert diff < 1e-4, f"{pa} -> {ca}: outputs differ by {diff} ({rep['pairs']})"
            print(f"{pa} -> {ca}: similarity {rep['similarity']:.3f}, max difference {diff:.2e}")
    print("ok")


if __name__ == "__main__":
    main()
