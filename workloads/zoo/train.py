#!/usr/bin/env python3
"""A training job for loom's model repository: trains one architecture of
the digits search space (digits.py) on the CPU and leaves what `loom zoo
add` registers: OUT/model.onnx, OUT/weights.lw (docs/zoo.md, "Weights
files") and OUT/metrics.json ({"accuracy": validation accuracy, ...}).

With LOOM_WARM_START=PATH in the environment (a weights file from `loom zoo
warm` or zoo.warm) the model starts from those weights instead of its
random initialisation; metrics.json says how many tensors were applied.

    python3 workloads/zoo/train.py --arch mlp-64 --steps 300 --out DIR
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits  # noqa: E402
from digits import ws  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", required=True, help="e.g. mlp-64-64, cnn-16-32, tfm-d32-l2")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=0.95)
    ap.add_argument("--out", required=True, help="directory for model, weights and metrics")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    model = digits.build(args.arch)
    warm = None
    path = os.environ.get("LOOM_WARM_START")
    if path:
        rep = ws.apply(model, path)
        warm = {"path": path, "applied": len(rep["applied"]), "missing": len(rep["missing"]),
                "parent": rep["meta"].get("parent"), "similarity": rep["meta"].get("similarity")}
        print(f"warm start from parent {warm['parent']} (similarity {warm['similarity']:.3f}): "
              f"{warm['applied']} tensors applied, {warm['missing']} fresh", flush=True)
    r = digits.train(model, digits.data(), args.steps, seed=args.seed, target=args.target)
    digits.export(model, os.path.join(args.out, "model.onnx"))
    ws.save(model, os.path.join(args.out, "weights.lw"), meta={"arch": args.arch})
    metrics = {"accuracy": r["val"], "test_accuracy": r["test"], "arch": args.arch,
               "steps": args.steps, "steps_to_target": r["steps_to_target"],
               "target": args.target, "train_s": r["train_s"], "warm_start": warm}
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    print(json.dumps(metrics), flush=True)


if __name__ == "__main__":
    main()
