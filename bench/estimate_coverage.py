#!/usr/bin/python3
"""Coverage of `loom estimate`: every model workloads/export_onnx.py exports
(the zoo, torch.nn transformer encoders/decoders and RNNs, the detection and
segmentation backbones, every torchvision classifier) is exported the
project's way, graph only (--no-weights), and estimated for a training step
and for inference. A model whose export fails is reported as such (not an
estimator failure); one the estimator rejects fails the run.

    bench/estimate_coverage.py --build build --dir /tmp/loom-cov [--models a,b] [--out FILE.md]

The exported files are kept in --dir and reused (delete them to re-export).
`make test` runs the committed subset (tests/data/estimate_cov/, test
estimate_coverage); this runs all of them.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "workloads"))


def estimate(loom, path, batch, train):
    cmd = [loom, "estimate", path, "--batch", str(batch), "--device", "cpu-local", "--json"]
    if train:
        cmd += ["--train", "--optimizer", "adam"]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, LOOM_DEVICE_DIR=os.path.join(ROOT, "workloads", "devices")))
    if p.returncode:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
    return json.loads(p.stdout), ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--models", default="all")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--out", help="markdown report")
    a = ap.parse_args()
    import export_onnx as ex
    names = ex.all_names() if a.models == "all" else a.models.split(",")
    os.makedirs(a.dir, exist_ok=True)
    loom = os.path.join(a.build, "loom")
    rows, bad, noexport, checked = [], [], [], 0
    for name in names:
        path = os.path.join(a.dir, name + ".onnx")
        if not os.path.exists(path):
            p = subprocess.run([sys.executable, os.path.join(ROOT, "workloads", "export_onnx.py"),
                                a.dir, "--models", name, "--no-weights"],
                               capture_output=True, text=True)
            if p.returncode or not os.path.exists(path):
                err = [l for l in p.stderr.splitlines() if "export failed" in l or "Error" in l]
                noexport.append((name, (err[-1] if err else "export failed")[:160]))
                print(f"{name}: export failed", flush=True)
                continue
        tr, e1 = estimate(loom, path, a.batch, True)
        inf, e2 = estimate(loom, path, a.batch, False)
        side = os.path.join(a.dir, name + ".json")
        want = json.load(open(side))["params"] if os.path.exists(side) else None
        checked += want is not None
        if tr is not None and want is not None and tr["params"] != want:
            e1 = f"params {tr['params']} but PyTorch counts {want}"
            tr = None
        if tr is None or inf is None:
            bad.append((name, e1 or e2))
            print(f"{name}: ESTIMATE FAILED: {e1 or e2}", flush=True)
            continue
        rows.append(f"| {name} | {tr['params']} | {tr['fwd_flops'] / 1e9:.3f} | "
                    f"{inf['memory']['total'] / 2**20:.1f} | {tr['memory']['total'] / 2**20:.1f} | "
                    f"{tr['time_s']['step'] * 1e3:.1f} |")
        print(rows[-1], flush=True)
    print(f"{len(rows)} estimated, {len(bad)} failed, {len(noexport)} did not export", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join([
                "# Estimator coverage", "",
                f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Command: "
                f"`bench/estimate_coverage.py --build build --dir DIR` (batch {a.batch}, device "
                "cpu-local, Adam for the training step). Every model is exported graph-only "
                "(`workloads/export_onnx.py --no-weights`).", "",
                f"**{len(rows)} models estimated, {len(bad)} rejected by the estimator, "
                f"{len(noexport)} that PyTorch did not export.** Parameter counts held to "
                f"PyTorch's (the export's NAME.json) for {checked} of them" + (", all equal." if not bad else " (mismatches are listed as rejected)."), "",
                "| model | params | fwd GFLOP | inference MiB | train MiB | train step ms (cpu-local) |",
                "|---|---|---|---|---|---|", *rows, ""] +
                (["## Rejected by the estimator", ""] + [f"- {n}: {e}" for n, e in bad] + [""]
                 if bad else []) +
                (["## Not exported by torch.onnx (opset 13, training mode)", ""] +
                 [f"- {n}: {e}" for n, e in noexport] + [""] if noexport else [])))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
