#!/usr/bin/python3
"""The measurement campaign of the workload study (docs/study/README.md):
runs every configuration of the plan under `loom prof` and condenses each
run record into one line of docs/study/records/runs.jsonl.

    flock /work/notes/bench.lock /usr/bin/python3 docs/study/campaign.py BUILD \\
        [--plan full|smoke] [--records FILE] [--keep DIR] [--only SUBSTRING]

For each configuration it exports the zoo model to ONNX (workloads/
export_onnx.py, cached per model and input size), asks `loom estimate` for
the FLOPs and bytes of one step at that batch, mode and precision, and runs

    loom prof --quiet --estimate EST --device cpu-local --out DIR -- \\
        /usr/bin/python3 workloads/models/run.py --model M --mode MODE --batch B \\
        --precision P --threads T --steps N [--input-size S]

with OMP_NUM_THREADS and OPENBLAS_NUM_THREADS set to T. Each record keeps
the configuration, the load average before and after, the per-step wall
and CPU times (the raw data the study's metrics are computed from), and
loom's summary and roofline. The device is the CPU: no GPU was lent when
this was written, so the plan has no CUDA runs (the study's tables mark
them "not measured").

Standard library only; records are appended, so an interrupted campaign can
be resumed with --only.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"
MODELS = ("resnet18", "resnet50", "vgg16", "mobilenet_v2", "vit", "bert", "gpt2", "lstm", "dlrm")
TEXT = ("bert", "gpt2", "lstm")
DEFAULT_SIZE = {"bert": 64, "gpt2": 128, "lstm": 32, "dlrm": 0}  # vision models: 64
BASE_BATCH = {"vgg16": 1}  # vgg16's 120 M-parameter classifier: ~3 s per step at batch 1
# Steps per run: enough steady steps for a mean and a CV once warm-up is cut
# (~25 s per run at most on one core; the 2026-12-02 campaign used 8/5/6/30
# and its tails rested on a handful of steps).
STEPS = {"vgg16": 8, "resnet50": 12, "gpt2": 16, "dlrm": 100}
DEFAULT_STEPS = 24
BIG_BATCH_STEPS = 12  # batch >= 16 (not dlrm)


def size_of(model, size=0):
    return size or DEFAULT_SIZE.get(model, 64)


def config(model, mode="train", batch=None, precision="fp32", threads=1, size=0, repeat=0,
           steps=None, blas_threads=None):
    """One run of the plan. threads sizes torch's intra-op (OpenMP) pool and, unless
    blas_threads says otherwise, OpenBLAS's own pool too (which torch's OpenMP
    workers call into: two pools of 2 on 2 cores is 4 busy threads)."""
    batch = batch or BASE_BATCH.get(model, 8)
    if steps is None:
        steps = STEPS.get(model, DEFAULT_STEPS)
        if batch >= 16 and model != "dlrm":
            steps = min(steps, BIG_BATCH_STEPS)
    return {"model": model, "mode": mode, "batch": batch, "precision": precision,
            "threads": threads, "blas_threads": blas_threads or threads,
            "input_size": size_of(model, size), "repeat": repeat, "steps": steps}


def plan_full():
    p = []
    for m in MODELS:                                   # family and mode
        p.append(config(m))
        p.append(config(m, mode="infer"))
    for m in ("resnet18", "bert", "lstm"):             # run-to-run repeats
        p += [config(m, repeat=1), config(m, repeat=2)]
    for m, bs in (("resnet18", (1, 2, 4, 16, 32)), ("lstm", (1, 2, 4, 16, 32)),
                  ("bert", (1, 2, 4, 16)), ("dlrm", (1, 64, 256, 1024))):
        p += [config(m, batch=b) for b in bs]          # batch size
    for m in ("resnet18", "mobilenet_v2", "vit", "bert", "gpt2", "lstm", "dlrm"):
        p.append(config(m, precision="bf16"))          # precision
    for m, sizes in (("resnet18", (32, 128)), ("vit", (32, 128)), ("bert", (32, 128)),
                     ("lstm", (16, 64))):
        p += [config(m, size=s) for s in sizes]        # input size
    for m in MODELS:                                   # threads
        p.append(config(m, threads=2))
    for m in MODELS:                                   # ... with OpenBLAS on one thread
        p.append(config(m, threads=2, blas_threads=1))
    return p


def plan_smoke():
    """Two short runs (the study's test): dlrm training on 1 and 2 threads."""
    return [config("dlrm", steps=6), config("dlrm", threads=2, steps=6)]


def key(c):
    blas = c.get("blas_threads", c["threads"])
    return (f"{c['model']}-{c['mode']}-b{c['batch']}-{c['precision']}-t{c['threads']}"
            + (f"-blas{blas}" if blas != c["threads"] else "") +
            f"-s{c['input_size']}-r{c['repeat']}")


def loadavg():
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def export(cache, model, size):
    """ONNX graph of a zoo model at an input size, or (None, why)."""
    if model == "vgg16" and size % 224:
        return None, ("VGG16's ONNX export needs an input that is a multiple of 224 "
                      "(AdaptiveAvgPool2d to 7x7); the zoo runs it at 64")
    path = os.path.join(cache, f"{model}-s{size}.onnx")
    if not os.path.exists(path):
        opt = ["--seq", str(size)] if model in TEXT else ["--image", str(size)]
        if model == "dlrm":
            opt = []
        p = subprocess.run([PY, os.path.join(ROOT, "workloads", "export_onnx.py"), cache,
                            "--models", model, *opt], capture_output=True, text=True)
        if p.returncode or not os.path.exists(os.path.join(cache, model + ".onnx")):
            return None, "ONNX export failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
        os.rename(os.path.join(cache, model + ".onnx"), path)
    return path, None


def estimate(build, cache, c):
    onnx, why = export(cache, c["model"], c["input_size"])
    if not onnx:
        return None, why
    path = os.path.join(cache, key(c) + ".est.json")
    args = [os.path.join(build, "loom"), "estimate", onnx, "--batch", str(c["batch"]),
            "--precision", c["precision"], "--device", "cpu-local", "--json"]
    if c["mode"] == "train":
        args += ["--train", "--optimizer", "momentum"]  # run.py: SGD with momentum
    with open(path, "w") as f:
        p = subprocess.run(args, stdout=f, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    if p.returncode:
        return None, "loom estimate failed: " + p.stderr.strip()
    return path, None


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    p = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                       text=True)
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": os.uname().release,
            "torch": p.stdout.strip() or "?"}


def condense(c, run, est_path, why, load0, load1, wall, mach):
    """One study record from loom's run.json (docs/study/README.md, "Records")."""
    s = run["summary"]
    rf = run.get("roofline", {})
    est = json.load(open(est_path)) if est_path else None
    rec = dict(c)
    rec.update({
        "id": key(c), "device": "cpu", "machine": mach, "start": run["start"],
        "exit": run["exit"],
        "load_before": load0, "load_after": load1, "campaign_wall_s": round(wall, 3),
        "meta": run["meta"],
        "step_wall_s": [round(x["duration_s"], 7) for x in run["steps"]],
        "step_cpu_s": [round(x["cpu_ns"] / 1e9, 7) if "cpu_ns" in x else None
                       for x in run["steps"]],
        "summary": {k: s.get(k) for k in (
            "wall_s", "startup_s", "steps", "warmup_steps", "warmup_s", "step_time_s",
            "step_cpu_s", "steps_per_s", "items_per_s", "cpu_cores_run", "cpu_cores_steady",
            "user_fraction", "rss_peak_bytes", "data_fraction")},
        "sampler": {k: run["sampler"].get(k) for k in (
            "interval_s", "samples", "missed_ticks", "thread_cores", "profiler_cpu_share")},
        "cpu_relative_error": run["ground_truth"]["cpu_relative_error"],
        "roofline": {k: rf.get(k) for k in (
            "counts", "why", "flops_per_step", "bytes_per_step", "intensity_flop_per_byte",
            "achieved_flops", "achieved_flops_per_cpu_s", "peak_flops", "peak_bytes_per_s",
            "ridge_flop_per_byte", "attainable_flops", "fraction_of_roof", "bound")},
        "estimate": None if not est else {
            "flops": est["fwd_flops"] + est["bwd_flops"] + est["opt_flops"],
            "bytes": est["bytes"]["step"], "params": est["params"],
            "memory_total_bytes": est["memory"]["total"], "time_s_step": est["time_s"]["step"],
            "device": est["device"]},
        "estimate_why": why,
    })
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--plan", choices=("full", "smoke"), default="full")
    ap.add_argument("--records", default=os.path.join(ROOT, "docs", "study", "records",
                                                      "runs.jsonl"))
    ap.add_argument("--keep", help="keep each run's loom prof directory under KEEP")
    ap.add_argument("--only", help="run only configurations whose id contains this")
    ap.add_argument("--cache", help="ONNX and estimate cache (default: a temporary directory)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    plan = plan_full() if a.plan == "full" else plan_smoke()
    if a.only:
        plan = [c for c in plan if a.only in key(c)]
    cache = a.cache or tempfile.mkdtemp(prefix="loom-study-")
    os.makedirs(cache, exist_ok=True)
    work = a.keep or tempfile.mkdtemp(prefix="loom-study-runs-")
    os.makedirs(os.path.dirname(os.path.abspath(a.records)), exist_ok=True)
    t_all = time.monotonic()
    mach = machine()
    try:
        for i, c in enumerate(plan):
            est, why = estimate(build, cache, c)
            out = os.path.join(work, key(c))
            cmd = [PY, os.path.join(ROOT, "workloads", "models", "run.py"), "--model", c["model"],
                   "--mode", c["mode"], "--batch", str(c["batch"]), "--precision",
                   c["precision"], "--threads", str(c["threads"]), "--steps", str(c["steps"])]
            if c["model"] != "dlrm":
                cmd += ["--input-size", str(c["input_size"])]
            prof = [os.path.join(build, "loom"), "prof", "--quiet", "--device", "cpu-local",
                    "--out", out]
            if est:
                prof += ["--estimate", est]
            env = dict(os.environ, OMP_NUM_THREADS=str(c["threads"]),
                       OPENBLAS_NUM_THREADS=str(c["blas_threads"]),
                       MKL_NUM_THREADS=str(c["threads"]))
            load0, t0 = loadavg(), time.monotonic()
            p = subprocess.run(prof + ["--", *cmd], capture_output=True, text=True, env=env,
                               cwd=ROOT)
            wall = time.monotonic() - t0
            try:
                run = json.load(open(os.path.join(out, "run.json")))
            except OSError:
                print(f"{key(c)}: no record ({p.stderr.strip()[-300:]})", file=sys.stderr)
                continue
            rec = condense(c, run, est, why, load0, loadavg(), wall, mach)
            if p.returncode:
                why_failed = [l for l in p.stderr.splitlines() if l.startswith("run.py:")]
                rec["error"] = (why_failed or ["exit " + json.dumps(run["exit"])])[0][:300]
            with open(a.records, "a") as f:
                f.write(json.dumps(rec, sort_keys=True) + "\n")
            st = rec["summary"]["step_time_s"] or {}
            print(f"[{i + 1}/{len(plan)}] {key(c)}: exit {run['exit']}, "
                  f"p50 {1e3 * (st.get('p50') or 0):.1f} ms, {wall:.1f} s, load {load0[0]:.2f}",
                  flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        if not a.cache:
            shutil.rmtree(cache, ignore_errors=True)
    print(f"campaign: {len(plan)} runs in {time.monotonic() - t_all:.0f} s -> {a.records}")


if __name__ == "__main__":
    main()
