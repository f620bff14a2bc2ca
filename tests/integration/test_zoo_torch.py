"""Weight transformation through PyTorch (docs/zoo.md): a trained-looking
parent (random weights) exported to ONNX and stored; `loom zoo warm
--noise 0` onto a wider MLP, a wider CNN and a deeper MLP; after
loom.warmstart.apply each child computes the parent's function (the
Net2Net widening and deepening rules, parameters found by the names the ONNX
export records), and a transformer with more blocks too (the new blocks'
residual projections start at zero).

Eval-mode exports (torch.onnx.export's default; issue 31): a CNN with
BatchNorm stored from an eval-mode export (BatchNorm folded into its
convolutions, their weights named onnx::Conv_N) warm-starts a training-mode
export of the same CNN with its convolutions mapped (the folded values) and
a warning saying why; an eval-mode child is warned about; a parent whose
weights file does not carry the names of its export maps nothing, and the
warning says so."""
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


class BnNet(torch.nn.Module):
    """conv-BatchNorm-relu twice, then a linear head (a ResNet's stem in small)."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(x.flatten(1))


def export_eval(model, path):
    """torch.onnx.export as most people call it: eval mode, its defaults."""
    model.eval()
    torch.onnx.export(model, torch.zeros(2, 1, 8, 8), path)
    model.train()


def export_training(model, path):
    """As docs/zoo.md ("Using it") says: BatchNorm kept, parameter names kept."""
    model.train()
    torch.onnx.export(model, torch.zeros(2, 1, 8, 8), path,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)


def warm(state, d, child_onnx):
    r = subprocess.run([LOOM, "zoo", "warm", child_onnx, "--task", "t", "--out",
                        os.path.join(d, "c.lw"), "--noise", "0", "--json", "--state-dir", state],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def eval_mode_exports(d):
    torch.manual_seed(1)
    parent = BnNet()
    with torch.no_grad():  # trained-looking: BatchNorm statistics and scales not 0 and 1
        for p in parent.parameters():
            p.add_(0.1 * torch.randn_like(p))
        for bn in (parent.bn1, parent.bn2):
            bn.running_mean.copy_(0.2 * torch.randn_like(bn.running_mean))
            bn.running_var.copy_(0.5 + torch.rand_like(bn.running_var))
            bn.weight.copy_(0.5 + torch.rand_like(bn.weight))
    # 1. parent exported in eval mode, child in training mode
    state = os.path.join(d, "eval-parent")
    export_eval(parent, os.path.join(d, "pe.onnx"))
    ws.save(parent, os.path.join(d, "p.lw"))
    zoo(state, "add", os.path.join(d, "pe.onnx"), "--weights", os.path.join(d, "p.lw"),
        "--metric", "accuracy=0.9", "--task", "t")
    child = BnNet()
    export_training(child, os.path.join(d, "ct.onnx"))
    rep, err = warm(state, d, os.path.join(d, "ct.onnx"))
    print(f"eval-mode parent: {rep['layers_mapped']} of {rep['layers_weighted']} layers with "
          f"weights mapped, warnings {rep['warnings']}")
    assert rep["layers_mapped"] == 3 and rep["layers_weighted"] == 5, rep
    assert rep["tensors_folded"] >= 2, rep
    assert [w for w in rep["warnings"] if "parent 1 has 2 layer weights named by the exporter"
            in w and "eval-mode export" in w and "BatchNorm folded into its convolutions" in w
            and "BatchNorm parameters keep their defaults" in w], rep["warnings"]
    assert "loom zoo warm: warning: parent 1 has 2 layer weights" in err, err
    bn_before = child.bn1.weight.detach().clone()
    applied = ws.apply(child, os.path.join(d, "c.lw"))
    assert {"conv1.weight", "conv2.weight", "fc.weight", "fc.bias"} <= set(applied["applied"]), \
        applied
    with torch.no_grad():  # the folded convolution: W * gamma / sqrt(var + eps), per channel
        for conv, bn, mine in ((parent.conv1, parent.bn1, child.conv1),
                               (parent.conv2, parent.bn2, child.conv2)):
            scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
            assert torch.allclose(mine.weight, conv.weight * scale[:, None, None, None],
                                  atol=1e-6)
        assert torch.equal(child.bn1.weight, bn_before)  # BatchNorm left at its defaults
    # 2. a child exported in eval mode: its folded weights have no parameter names
    state = os.path.join(d, "train-parent")
    export_training(parent, os.path.join(d, "pt.onnx"))
    zoo(state, "add", os.path.join(d, "pt.onnx"), "--weights", os.path.join(d, "p.lw"),
        "--metric", "accuracy=0.9", "--task", "t")
    rep, err = warm(state, d, os.path.join(d, "pe.onnx"))
    assert [w for w in rep["warnings"] if w.startswith("this model has 2 layer weights named by "
            "the exporter") and "export it in training mode" in w], rep["warnings"]
    # 3. a parent whose weights file lacks its export's names (a wrapper's
    # "module." prefix): nothing maps, and the warning says why
    state = os.path.join(d, "wrapped")
    ws.save(torch.nn.ModuleDict({"module": parent}), os.path.join(d, "wrapped.lw"))
    zoo(state, "add", os.path.join(d, "pt.onnx"), "--weights", os.path.join(d, "wrapped.lw"),
        "--metric", "accuracy=0.9", "--task", "t")
    rep, err = warm(state, d, os.path.join(d, "ct.onnx"))
    assert rep["layers_mapped"] == 0, rep
    assert [w for w in rep["warnings"] if w.startswith(
        "only 0 of this model's 5 layers with weights were mapped from parent 1") and
        "5 matched layers found no weights in the parent's weights file" in w and
        "'conv1.weight'" in w], rep["warnings"]
    # a training-mode pair: no warning
    rep, err = warm(os.path.join(d, "train-parent"), d, os.path.join(d, "ct.onnx"))
    assert rep["warnings"] == [] and rep["layers_mapped"] == 5, rep
    assert "warning" not in err, err


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
        eval_mode_exports(d)
    print("ok")


if __name__ == "__main__":
    main()
