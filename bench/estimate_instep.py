#!/usr/bin/python3
"""The in-step factor of a calibrated CPU device (bench/estimate.sh runs it).

    bench/estimate_instep.py --build build --onnx DIR DEVICE.json [DEVICE.json ...]

The operator classes of a device file come from microbenchmarks of single
operators (bench/estimate_calibrate.py). Inside a training step the same
operators cost more: their operands were written by other operators a moment
before and evicted by still others, the autograd engine runs between them,
the allocator hands out blocks the step freed. This script measures that
factor on whole training steps of three composite workloads that are NOT in
the model zoo (workloads/export_onnx.py CALIBRATION: a 4-layer MLP, a
4-convolution BatchNorm/ReLU stack on 40x40 images, two transformer blocks
of width 120 on sequences of 40), each at three batch sizes:

    factor = median over the 9 runs of
             1 + (measured step - estimated step at factor 1)
                 / (estimated step at factor 2 - estimated step at factor 1)

i.e. the factor that makes the estimate meet the measurement: it scales the
operators' work terms (FLOPs and elements; not their fixed overheads, since
2026-12-03 22:00 UTC), the loss and the optimizer, and nothing else (the
step's fixed cost, page faults), so the estimate is linear in it. The
estimates are `loom estimate ... --train` on the first DEVICE with
in_step_factor 1 and 2, and the measurement is bench/estimate_measure.py's (median
process CPU time of 9 steps, one thread) run with the first DEVICE's
malloc_tunables (use the retaining device first: its steps fault no pages,
so the ratio is the operators' alone). The factor is written as
"in_step_factor" into every DEVICE given (the operators are the same on
the same machine; page faults are modelled apart). Nothing here reads the
zoo or its measurements.

The exported ONNX files of the CALIBRATION models must be in DIR
(workloads/export_onnx.py DIR --models cal_mlp,cal_cnn,cal_attn).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import estimate_measure as em  # noqa: E402

PLAN = {"cal_mlp": (32, 256, 1024), "cal_cnn": (6, 16, 40), "cal_attn": (6, 16, 40)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--steps", type=int, default=9)
    ap.add_argument("--procs", type=int, default=3,
                    help="child processes per measurement; the median one is kept "
                         "(bench/estimate_measure.py)")
    ap.add_argument("--report", help="append the runs as Markdown to this file")
    ap.add_argument("device", nargs="+")
    a = ap.parse_args()
    a.cache = None
    dev = json.load(open(a.device[0]))
    tunables = dev.get("malloc_tunables", "")
    scaled = {}
    for k in (1.0, 2.0):
        dev["in_step_factor"] = k
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dev, f)
            scaled[k] = f.name
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    rows, ratios, refs = [], [], []
    try:
        for name, batches in PLAN.items():
            for b in batches:
                m = em.run_child(a, name, b, tunables)
                refs.append(m.get("ref"))
                est = {k: json.loads(em.subprocess.run(
                    [os.path.join(a.build, "loom"), "estimate", os.path.join(a.onnx, name + ".onnx"),
                     "--batch", str(b), "--train", "--optimizer", a.optimizer, "--device", path,
                     "--json"], capture_output=True, text=True, check=True).stdout)["time_s"]["step"]
                       for k, path in scaled.items()}
                r = 1 + (m["time"] - est[1.0]) / (est[2.0] - est[1.0])
                ratios.append(r)
                rows.append(f"| {name} | {b} | {m['time'] * 1e3:.2f} | {est[1.0] * 1e3:.2f} | "
                            f"{(2 * est[1.0] - est[2.0]) * 1e3:.2f} | {r:.3f} |")
                print(rows[-1], flush=True)
    finally:
        for path in scaled.values():
            os.unlink(path)
    factor = statistics.median(ratios)
    refs = [r for r in refs if r]
    for path in a.device:
        d = json.load(open(path))
        d["in_step_factor"] = round(factor, 4)
        if refs:  # the machine's speed now (bench/estimate_measure.py reference_time)
            d["reference_step_s"] = round(statistics.median(refs), 6)
        json.dump(d, open(path, "w"), indent=2, sort_keys=True)
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    print(f"in_step_factor {factor:.4f} (median of {len(ratios)}; min {min(ratios):.3f}, "
          f"max {max(ratios):.3f}) -> {', '.join(a.device)}", flush=True)
    if refs:
        print(f"reference_step_s {statistics.median(refs):.6f} (median of {len(refs)} processes)",
              flush=True)
    if a.report:
        lines = [
            "", "## In-step factor (bench/estimate_instep.py)", "",
            f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Load average before / after: "
            f"{load_before} / {load_after}. Measured with `GLIBC_TUNABLES={tunables or '(defaults)'}`, "
            f"{a.optimizer}, median of {a.steps} steps in the median of {a.procs} processes, process CPU "
            "time, one thread. Workloads outside "
            "the zoo (workloads/export_onnx.py CALIBRATION).", "",
            "| workload | batch | measured ms | estimated ms (factor 1) | not scaled ms (factor 0) | factor |",
            "|---|---|---|---|---|---|", *rows, "",
            (f"reference_step_s = {statistics.median(refs) * 1e3:.2f} ms (the machine's speed "
             "during this calibration, bench/estimate_measure.py reference_time). " if refs else "")
            + f"**in_step_factor = {factor:.4f}** (median of the runs' factors), written to "
            f"{', '.join('`' + os.path.relpath(p, em.ROOT) + '`' for p in a.device)}.", ""]
        with open(a.report, "a") as f:
            f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
