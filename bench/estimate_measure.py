#!/usr/bin/python3
"""Estimate against measurement for the zoo (bench/estimate.sh runs this).

For every model and three batch sizes:
  measured  one CPU training step (forward, cross-entropy, backward, optimizer
            step) of the PyTorch module workloads/export_onnx.py exports, in a
            child process preloaded with build/libloom_alloctrack.so:
            peak live heap bytes of the step minus the live bytes before the
            model was built (so: weights, optimizer state, inputs, activations,
            gradients, temporaries — what the estimator predicts), the
            median process CPU time of 9 steps after 2 warm-up steps, and
            the minor page faults of each step (ru_minflt); with --procs N
            (default 3) in N child processes, keeping the one whose step
            time is the median: on this VM a whole process at times runs in
            a slow mode (its steps 1.3-2.5x slower, its own CPU time
            included), which the steps of one process cannot outvote. The
            processes are interleaved (every row's first, then every row's
            second, ...; since 2026-12-04), so a slow phase of a few
            minutes does not take all of one row's processes;
  estimated `loom estimate MODEL.onnx --batch N --train --optimizer OPT
            --device DEVICE --json`: memory.total, time_s.step and
            fresh_bytes (the fresh pages its glibc heap model predicts).

    bench/estimate_measure.py --build build --onnx DIR --device FILE --out docs/bench/estimate.md
"""
import argparse
import ctypes
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

THREADS_NOTE = """This machine's 2 cores are shared with other jobs, so wall time says
more about the neighbours than about the model: the step runs on one thread
and is timed in process CPU time (time.process_time), and the device file is
calibrated single-threaded to match."""
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PLAN = {  # model -> batch sizes (VGG-16 runs at 224x224, the others at 64x64 / their sequence)
    "resnet18": (8, 16, 32), "resnet50": (4, 8, 16), "vgg16": (1, 2, 4),
    "mobilenet_v2": (8, 16, 32), "vit": (8, 16, 32), "bert": (4, 8, 16),
    "gpt2": (4, 8, 16), "lstm": (8, 16, 32), "dlrm": (64, 256, 1024),
}


def load_plan(path):
    """workloads/models/evaluation.txt: `name batch,batch` per line, # comments."""
    plan = {}
    for line in open(path):
        line = line.split("#", 1)[0].split()
        if len(line) == 2:
            plan[line[0]] = tuple(int(b) for b in line[1].split(","))
    return plan


def training_setup(ex, name, optimizer, batch):
    """workloads/export_onnx.py's model NAME in training mode, its optimizer
    (sgd, momentum or adam, as `loom estimate --optimizer` names them) and
    an input batch: (module, optimizer, inputs, loss function)."""
    import torch
    mod, inputs, _, loss_fn = ex.build(name)
    mod.train()
    opt = {"sgd": lambda p: torch.optim.SGD(p, lr=1e-3),
           "momentum": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9),
           "adam": lambda p: torch.optim.Adam(p, lr=1e-4)}[optimizer](mod.parameters())
    return mod, opt, inputs(batch), loss_fn


def child(name, batch, optimizer, steps):
    sys.path.insert(0, os.path.join(ROOT, "workloads"))
    import torch
    import torchvision.models  # noqa: F401  before the baseline: its modules are ~5 MiB of heap
    import export_onnx as ex
    lib = ctypes.CDLL(None)
    for f in ("loom_alloctrack_live", "loom_alloctrack_peak"):
        getattr(lib, f).restype = ctypes.c_int64
    torch.set_num_threads(1)  # see THREADS_NOTE
    torch.manual_seed(0)
    w = torch.randn(8, 8, requires_grad=True)  # initialise autograd once
    (w @ w).sum().backward()
    del w
    base = lib.loom_alloctrack_live()
    mod, opt, x, loss_fn = training_setup(ex, name, optimizer, batch)

    def step():
        out = mod(*x)
        loss_fn(out, batch).backward()
        opt.step()

    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        step()
    opt.zero_grad(set_to_none=True)
    lib.loom_alloctrack_reset_peak()
    step()
    peak = lib.loom_alloctrack_peak() - base
    times, faults = [], []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.process_time()
        step()
        times.append(time.process_time() - t0)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    del mod, opt, x
    print(json.dumps({"peak": peak, "time": statistics.median(times),
                      "faults": statistics.median(faults), "times": times, "all_faults": faults,
                      "ref": reference_time(ex, optimizer)}))


REFERENCE = (("cal_cnn", 16), ("cal_attn", 16))  # export_onnx.py CALIBRATION, not the zoo


def reference_time(ex, optimizer):
    """The speed of this process on this machine now: the median step time
    of two fixed training steps (REFERENCE: the calibration CNN and
    transformer blocks at batch 16), summed, measured in the same process
    right after the model. The device file keeps the same figure from its
    calibration (reference_step_s, bench/estimate_instep.py), so a
    measurement can be compared with what the calibration saw: on this VM a
    process's CPU time for the same work drifts by 20% over an hour with
    the machine otherwise idle (the hypervisor's other guests)."""
    total = 0.0
    for name, batch in REFERENCE:
        mod, opt, x, loss_fn = training_setup(ex, name, optimizer, batch)
        times = []
        for k in range(7):
            opt.zero_grad(set_to_none=True)
            t0 = time.process_time()
            loss_fn(mod(*x), batch).backward()
            opt.step()
            if k >= 2:
                times.append(time.process_time() - t0)
        total += statistics.median(times)
    return total


def run_child(args, name, batch, tunables=""):
    """The measurement of the median process of args.procs (see the top)."""
    old = getattr(args, "reuse_rows", {}).get((name, batch))
    if old and "error" in old:  # --reuse of a row that could not be measured
        raise RuntimeError(old["error"])
    if old:  # --reuse: measured before, estimated again
        return {"peak": old["measured_bytes"], "time": old["measured_s"],
                "proc_times": old.get("proc_times_s"), "faults": old.get("faults") or 0,
                "ref": old.get("reference_s")}
    return median_process([run_one(args, name, batch, tunables, k) for k in range(max(1, args.procs))])


def median_process(runs):
    """The run of the median step time, with every run's time beside it."""
    runs = sorted(runs, key=lambda m: m["time"])
    m = dict(runs[(len(runs) - 1) // 2])
    m["proc_times"] = [r["time"] for r in runs]
    return m


def measure_rows(args, pairs, tunables):
    """Every (model, batch) of pairs measured: {pair: measurement or the
    RuntimeError that stopped it}. The processes are interleaved: pass k
    runs the k-th process of every row in turn, so the processes of one row
    run minutes apart. A slow phase of this VM lasts minutes; run one after
    another, a row's three processes could all fall in one (back-to-back
    runs of the same step differed by 30% on 2026-12-04), and the median
    process of three did not remove it."""
    out, runs = {}, {p: [] for p in pairs}
    for p in pairs:
        if p in getattr(args, "reuse_rows", {}):
            try:
                out[p] = run_child(args, *p, tunables)
            except RuntimeError as ex:
                out[p] = ex
    for k in range(max(1, args.procs)):
        for p in pairs:
            if p in out:  # reused, or a process of it failed
                continue
            try:
                runs[p].append(run_one(args, *p, tunables, k))
                what = "measured"
            except RuntimeError as ex:
                out[p], what = ex, "could not measure"
            print(f"  {what} {p[0]} batch {p[1]}, process {k + 1} of {args.procs}",
                  file=sys.stderr, flush=True)
    for p, rs in runs.items():
        if p not in out:
            out[p] = median_process(rs)
    return out


def run_one(args, name, batch, tunables, k):
    key = f"{name}:{batch}:{args.optimizer}:{args.steps}"
    if k:
        key += f":proc{k}"
    if tunables:
        key += ":" + tunables
    cache = {}
    if args.cache and os.path.exists(args.cache):
        cache = json.load(open(args.cache))
        if key in cache:
            return cache[key]
    # one thread everywhere: OpenBLAS's own pthreads otherwise spin and
    # their CPU time lands in the measurement
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               LD_PRELOAD=os.path.abspath(os.path.join(args.build, "libloom_alloctrack.so")))
    # the device's glibc malloc settings are part of the runtime it describes
    env.pop("GLIBC_TUNABLES", None)
    if tunables:
        env["GLIBC_TUNABLES"] = tunables
    p = subprocess.run([sys.executable, __file__, "--child", name, str(batch), args.optimizer,
                        str(args.steps)], env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode:
        raise RuntimeError(f"{name} batch {batch}: measurement failed: {p.stderr[-2000:]}")
    result = json.loads(p.stdout.strip().splitlines()[-1])
    if args.cache:
        cache[key] = result
        json.dump(cache, open(args.cache, "w"), indent=1)
    return result


def estimate(args, name, batch, device):
    cmd = [os.path.join(args.build, "loom"), "estimate", os.path.join(args.onnx, name + ".onnx"),
           "--batch", str(batch), "--train", "--optimizer", args.optimizer,
           "--device", device, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr}")
    j = json.loads(p.stdout)
    return {"peak": j["memory"]["total"], "time": j["time_s"]["step"],
            "faults": j.get("fresh_bytes", 0) / 4096, "fault_time": j["time_s"].get("page_faults", 0)}


def measure_device(a, path):
    """One table: every model and batch on the runtime `path` describes."""
    dev = json.load(open(path))
    tunables = dev.get("malloc_tunables", "")
    # The runtime's own heap (autograd engine, oneDNN/BLAS scratch, optimizer
    # bookkeeping) is not a tensor: measure it once on a 2-layer MLP that is
    # not in the zoo, and record it as the device's context_bytes.
    if not a.no_context:
        dev["context_bytes"] = 0
        json.dump(dev, open(path, "w"), indent=2, sort_keys=True)
        m, e = run_child(a, "mlp", 8, tunables), estimate(a, "mlp", 8, path)
        dev["context_bytes"] = max(0, m["peak"] - e["peak"])
        json.dump(dev, open(path, "w"), indent=2, sort_keys=True)
        print(f"{dev['name']}: context: mlp measured {m['peak']} B, estimated {e['peak']} B -> "
              f"context_bytes {dev['context_bytes']}", flush=True)
    load_before = " ".join(open("/proc/loadavg").read().split()[:3])
    rows, mem_err, time_err, norm_err = [], [], [], []
    cal_ref = dev.get("reference_step_s")
    pairs = [(name, b) for name in a.models.split(",") for b in a.plan[name]]
    measured = measure_rows(a, pairs, tunables)
    for name, b in pairs:
        m = measured[(name, b)]
        if isinstance(m, RuntimeError):  # reported, and the run goes on: no row is lost
            why = str(m).strip().splitlines()[-1][:200].replace("|", "/")
            a.rows.append({"set": a.set, "model": name, "batch": b, "device": dev["name"],
                           "error": why})
            rows.append(f"| {name} | {b} | not measured: {why} |" + " |" * 10)
            print(rows[-1], flush=True)
            continue
        e = estimate(a, name, b, path)
        me = (e["peak"] - m["peak"]) / m["peak"]
        te = (e["time"] - m["time"]) / m["time"]
        mem_err.append(abs(me))
        time_err.append(abs(te))
        # the machine's speed in this process against the calibration's
        speed = m["ref"] / cal_ref if m.get("ref") and cal_ref else None
        ne = (e["time"] - m["time"] / speed) / (m["time"] / speed) if speed else None
        if ne is not None:
            norm_err.append(abs(ne))
        a.rows.append({"set": a.set, "model": name, "batch": b, "device": dev["name"],
                       "measured_bytes": m["peak"], "estimated_bytes": e["peak"],
                       "measured_s": m["time"], "estimated_s": e["time"],
                       "proc_times_s": m.get("proc_times"), "faults": m.get("faults"),
                       "reference_s": m.get("ref"), "speed": speed})
        rows.append(f"| {name} | {b} | {m['peak'] / 2**20:.1f} | {e['peak'] / 2**20:.1f} | "
                    f"{100 * me:+.1f} | {m['time'] * 1e3:.1f} | {e['time'] * 1e3:.1f} | "
                    f"{100 * te:+.1f} | "
                    + (f"{speed:.3f} | {100 * ne:+.1f} | " if speed else "- | - | ")
                    + f"{m.get('faults', 0):.0f} | {e['faults']:.0f} | "
                    f"{e['fault_time'] * 1e3:.1f} |")
        print(rows[-1], flush=True)
    load_after = " ".join(open("/proc/loadavg").read().split()[:3])
    malloc = (f"glibc malloc with `GLIBC_TUNABLES={tunables}` (the device's `malloc_tunables`; "
              "the measured child runs with it and the estimator's heap model follows it)"
              if tunables else "glibc malloc with its defaults (no `malloc_tunables`)")
    head = [
        f"## Device `{os.path.relpath(path, ROOT)}`: {malloc}",
        "",
        f"{dev['description']}. GEMM {dev['flops_fp32'] / 1e9:.1f} GFLOP/s, triad "
        f"{dev['mem_bandwidth'] / 1e9:.2f} GB/s, page fault {dev.get('page_fault_s', 0) * 1e6:.1f} us, "
        f"runtime heap (context_bytes) {dev['context_bytes'] / 2**20:.1f} MiB. "
        f"Load average before / after: {load_before} / {load_after}.",
        "",
        "| model | batch | measured MiB | estimated MiB | mem err % | measured ms | estimated ms | time err % "
        "| speed | time err % at calibration speed | measured faults | estimated faults | est. fault ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    tail = ["",
            f"**{a.set} set, {dev['name']}: median absolute error memory "
            f"{100 * statistics.median(mem_err):.1f}% (90th percentile {100 * p90(mem_err):.1f}%), "
            f"step time {100 * statistics.median(time_err):.1f}% (90th percentile "
            f"{100 * p90(time_err):.1f}%)** over {len(mem_err)} runs "
            + (f"({len(rows) - len(mem_err)} not measured) " if len(rows) > len(mem_err) else "")
            + "(targets: median 3% and 10%, 90th percentile 10% and 25%)"
            + (f"; at the calibration's speed (speed column) step time {100 * statistics.median(norm_err):.1f}% "
               f"(90th percentile {100 * p90(norm_err):.1f}%) over {len(norm_err)} runs" if norm_err else "")
            + ".", ""]
    print(tail[1], flush=True)
    return head + rows + tail


def p90(xs):
    """The 90th percentile (linear interpolation between order statistics)."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = 0.9 * (len(xs) - 1)
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--device", required=True, action="append",
                    help="device file (repeatable: one table each, measured with its malloc_tunables)")
    ap.add_argument("--optimizer", default="adam")
    ap.add_argument("--steps", type=int, default=9)
    ap.add_argument("--procs", type=int, default=3,
                    help="child processes per measurement; the median one is kept")
    ap.add_argument("--models", help="comma-separated (default: every model of the plan)")
    ap.add_argument("--plan", help="a model list with batch sizes (workloads/models/evaluation.txt); "
                    "default: the zoo's PLAN")
    ap.add_argument("--set", default="development",
                    help="what the models are, for the report: development (the zoo) or evaluation")
    ap.add_argument("--json", help="also write every row as JSON here")
    ap.add_argument("--reuse", help="a --json file of an earlier run: its measurements are kept "
                    "and only the estimates are made again (after an estimator change)")
    ap.add_argument("--no-context", action="store_true",
                    help="keep the device's context_bytes (do not re-measure it on the MLP)")
    ap.add_argument("--cache", help="JSON file of measurements to reuse (estimator work: "
                    "re-estimate without re-measuring)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "bench", "estimate.md"))
    a = ap.parse_args()
    a.plan_path = a.plan
    a.plan = load_plan(a.plan) if a.plan else PLAN
    a.models = a.models or ",".join(a.plan)
    a.rows = []
    a.reuse_rows = {}
    if a.reuse and os.path.exists(a.reuse):
        a.reuse_rows = {(r["model"], r["batch"]): r for r in json.load(open(a.reuse))}
    sections = [measure_device(a, p) for p in a.device]
    if a.json:
        with open(a.json, "w") as f:
            json.dump(a.rows, f, indent=1)
    import torch
    head = [
        "# Estimator against measurement",
        "",
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        + (f" (estimates only: the measurements, their step count, processes and load are those "
           f"of {a.reuse}'s run)" if a.reuse_rows else "") +
        f". Machine: {platform.node()}. "
        f"Measured on: **CPU** (torch {torch.__version__}, "
        f"1 thread, CPU time; {THREADS_NOTE}). No GPU was available in this session; the H200 rows are "
        "still to be measured.",
        "",
        f"Command: `bench/estimate_eval.sh build DEVICE.json` (which runs `bench/estimate_measure.py "
        f"--set {a.set} --procs {a.procs} --steps {a.steps} --optimizer {a.optimizer}"
        f"{' --plan ' + a.plan_path if a.plan_path else ''}`). "
        f"**{a.set.capitalize()} set** "
        + ("(the zoo, on which the cost model was written). " if a.set == "development" else
           f"({a.plan_path or 'the plan'}: architectures held out from the cost model's "
           "development and calibration, chosen and committed before they were measured; "
           "its header says when). ")
        + f"Training step = forward + cross-entropy + backward + {a.optimizer} step, fp32. "
        f"Load average at the start: {' '.join(open('/proc/loadavg').read().split()[:3])} "
        "(2 cores shared with other developers' builds and tests: step times are noisy; memory is not).",
        "",
        "Memory: measured = peak live heap bytes during one step (LD_PRELOAD "
        "build/libloom_alloctrack.so, malloc_usable_size) minus live bytes before the model "
        "was built; estimated = `memory.total` (= peak_live + `memory.context`: the device's "
        "context_bytes, the runtime's own heap, measured once per table on a 2-layer MLP that is "
        "not in the zoo, plus oneDNN's cached convolution primitives, 128 KiB per distinct "
        "convolution in training: docs/estimate.md). "
        f"Time: median process CPU time of {a.steps} steps after 2 warm-up steps, in the median "
        f"of {a.procs} child processes, interleaved (every row's first process, then every row's second, ...: "
        "a process on this VM at times runs all its steps in a slow mode, and such a phase can last "
        "minutes), vs `time_s.step`. Speed: the same process then times two "
        "fixed training steps outside the zoo (the calibration CNN and transformer blocks at batch 16, "
        "`reference_time`), and speed = their time / the same figure measured at the device's "
        "calibration (`reference_step_s`): 1.1 means the machine ran the same work 10% slower than "
        "when it was calibrated. The next column is the error against the measured time divided by "
        "the speed; the raw error stays the first figure. Page faults: measured = median minor faults per step (ru_minflt); "
        "estimated = `fresh_bytes` / 4096, the fresh pages of the estimator's glibc heap model "
        "(which follows the device's `malloc_tunables`), charged at the device's page_fault_s "
        "(the last column).",
        "",
    ]
    with open(a.out, "w") as f:
        f.write("\n".join(head + [line for sec in sections for line in sec]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
