#!/usr/bin/env python3
"""loom's warm-start experiment (docs/zoo.md, "The experiment"), on the CPU.

1. Trains a repository of architectures from the search space in digits.py
   and registers each with `loom zoo add` (ONNX, weights, validation
   accuracy).
2. For architectures not in the repository, over several seeds: trains
   from random initialisation and from `loom zoo warm` (ModelKeeper's
   match + transform), same seed, same batches; records steps and training
   time to the target validation accuracy, the warm-up's own cost, and the
   final test accuracy.
3. Writes results.json, a figure and a markdown report.

    nice -n 10 python3 workloads/zoo/experiment.py --loom build/loom \
        --out docs/bench/zoo_warmstart
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits  # noqa: E402
from digits import ws  # noqa: E402

REPO = ["mlp-32", "mlp-64", "mlp-128", "mlp-32-32", "mlp-64-64", "mlp-128-128", "mlp-128-64",
        "mlp-64-64-64", "mlp-128-128-128",
        "cnn-8", "cnn-16", "cnn-32", "cnn-8-16", "cnn-16-32", "cnn-32-32", "cnn-16-16-16",
        "cnn-16-32-32",
        "tfm-d16-l1", "tfm-d32-l1", "tfm-d32-l2", "tfm-d64-l1", "tfm-d64-l2", "tfm-d16-l2",
        "tfm-d48-l1"]
TEST = ["mlp-96", "mlp-96-96", "mlp-64-128", "mlp-64-64-64-64",
        "cnn-24", "cnn-12-24", "cnn-24-24", "cnn-16-32-48",
        "tfm-d24-l1", "tfm-d32-l3", "tfm-d48-l2", "tfm-d96-l1"]


def loom(args, *cmd):
    r = subprocess.run([args.loom, "zoo", *cmd, "--state-dir", args.state], capture_output=True,
                       text=True)
    if r.returncode:
        raise RuntimeError(f"loom zoo {cmd[0]}: {r.stderr.strip()}")
    return r.stdout


def build_repo(args, splits, tmp):
    out = []
    for i, arch in enumerate(REPO):
        torch.manual_seed(1000 + i)
        m = digits.build(arch)
        r = digits.train(m, splits, args.steps, seed=1000 + i)
        onnx, w = os.path.join(tmp, f"{arch}.onnx"), os.path.join(tmp, f"{arch}.lw")
        digits.export(m, onnx)
        ws.save(m, w)
        eid = int(loom(args, "add", onnx, "--weights", w, "--metric", f"accuracy={r['val']:.4f}",
                       "--task", "digits", "--name", arch))
        out.append({"id": eid, "arch": arch, "val": r["val"], "test": r["test"],
                    "train_s": r["train_s"]})
        print(f"repo {arch}: val {r['val']:.3f} ({r['train_s']:.1f} s)", flush=True)
    return out


def run_pair(args, splits, arch, seed, tmp):
    torch.manual_seed(seed)
    m = digits.build(arch)
    cold = digits.train(m, splits, args.steps, seed=seed, target=args.target)
    torch.manual_seed(seed)
    m = digits.build(arch)
    onnx, w = os.path.join(tmp, f"child-{arch}.onnx"), os.path.join(tmp, f"warm-{arch}.lw")
    digits.export(m, onnx)
    t0 = time.perf_counter()
    rep = json.loads(loom(args, "warm", onnx, "--out", w, "--task", "digits", "--seed",
                          str(seed), "--json"))
    applied = ws.apply(m, w)
    warm_cost = time.perf_counter() - t0
    warm = digits.train(m, splits, args.steps, seed=seed, target=args.target)
    for r in (cold, warm):
        r.pop("curve_full", None)
    return {"arch": arch, "seed": seed, "cold": cold, "warm": warm,
            "warmup": {"parent": rep["parent_name"], "similarity": rep["similarity"],
                       "layers_mapped": rep["layers_mapped"], "layers_child": rep["layers_child"],
                       "match_s": rep["match_s"], "transform_s": rep["transform_s"],
                       "total_s": warm_cost, "applied": len(applied["applied"]),
                       "missing": len(applied["missing"])}}


def speedups(runs, steps):
    """Per run: cold steps / warm steps to the target (a run that never gets
    there counts as the step budget, which understates its side)."""
    out = []
    for r in runs:
        c = r["cold"]["steps_to_target"] or steps
        w = r["warm"]["steps_to_target"] or steps
        ct = r["cold"]["time_to_target_s"] or r["cold"]["train_s"]
        wt = (r["warm"]["time_to_target_s"] or r["warm"]["train_s"]) + r["warmup"]["total_s"]
        out.append({"arch": r["arch"], "seed": r["seed"], "steps": c / w, "time": ct / wt})
    return out


def figure(runs, sp, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    archs = [a for a in TEST if any(r["arch"] == a for r in runs)]
    med = [statistics.median(s["steps"] for s in sp if s["arch"] == a) for a in archs]
    a1.bar(range(len(archs)), med, color="tab:blue")
    a1.axhline(1.0, color="k", lw=0.8)
    a1.axhline(1.3, color="tab:red", ls="--", lw=0.8, label="goal 1.3x")
    a1.set_xticks(range(len(archs)))
    a1.set_xticklabels(archs, rotation=60, ha="right", fontsize=8)
    a1.set_ylabel("speed-up in steps to target (median of seeds)")
    a1.legend()
    for name, colour in (("cold", "tab:gray"), ("warm", "tab:orange")):
        for r in runs:
            if r["arch"] == "tfm-d48-l2" or r["arch"] == "cnn-16-32-48":
                xs = [p[0] for p in r[name]["curve"]]
                ys = [p[1] for p in r[name]["curve"]]
                a2.plot(xs, ys, color=colour, lw=0.8, ls="-" if "tfm" in r["arch"] else ":")
    a2.set_xlabel("training step")
    a2.set_ylabel("validation accuracy")
    a2.set_title("tfm-d48-l2 (solid), cnn-16-32-48 (dotted):\nwarm (orange) vs random (grey)",
                 fontsize=9)
    a2.set_ylim(0, 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loom", required=True, help="the loom CLI")
    ap.add_argument("--out", required=True, help="directory for results.json and the figure")
    ap.add_argument("--state", help="state directory of the repository (default: a temp dir)")
    ap.add_argument("--steps", type=int, default=600, help="training steps per run")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--target", type=float, default=0.95, help="validation accuracy target")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="loom-zoo-exp-") as tmp:
        args.state = args.state or os.path.join(tmp, "state")
        splits = digits.data()
        t0 = time.time()
        repo = build_repo(args, splits, tmp)
        runs = []
        for arch in TEST:
            for seed in range(args.seeds):
                r = run_pair(args, splits, arch, seed, tmp)
                runs.append(r)
                print(f"{arch} seed {seed}: steps cold {r['cold']['steps_to_target']} warm "
                      f"{r['warm']['steps_to_target']} (parent {r['warmup']['parent']}, sim "
                      f"{r['warmup']['similarity']:.3f}); test cold {r['cold']['test']:.3f} "
                      f"warm {r['warm']['test']:.3f}", flush=True)
        sp = speedups(runs, args.steps)
        summary = {
            "median_speedup_steps": statistics.median(s["steps"] for s in sp),
            "median_speedup_time": statistics.median(s["time"] for s in sp),
            "mean_test_cold": statistics.mean(r["cold"]["test"] for r in runs),
            "mean_test_warm": statistics.mean(r["warm"]["test"] for r in runs),
            "warmup_share_median": statistics.median(
                r["warmup"]["total_s"] / (r["warm"]["train_s"] + r["warmup"]["total_s"])
                for r in runs),
            "match_transform_share_median": statistics.median(
                (r["warmup"]["match_s"] + r["warmup"]["transform_s"]) / r["warm"]["train_s"]
                for r in runs),
        }
        meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "machine": platform.node(), "cpu_threads": args.threads, "steps": args.steps,
                "seeds": args.seeds, "target": args.target, "torch": torch.__version__,
                "elapsed_s": time.time() - t0, "command": " ".join(sys.argv)}
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"meta": meta, "summary": summary, "repo": repo, "runs": runs,
                       "speedups": sp}, f, indent=1)
        figure(runs, sp, os.path.join(args.out, "speedup.png"))
        print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
