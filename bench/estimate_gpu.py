#!/usr/bin/python3
"""GPU measurements to hold `loom estimate --device h200` against (issue #24).
scripts/estimate-gpu-check.sh runs this on a machine with a CUDA GPU.

Per model, batch and precision (fp32; mixed = torch.autocast fp16 with a
GradScaler and fp32 master weights, as the estimator's `--precision mixed`),
in a fresh child process each, one Adam training step of the very module
workloads/export_onnx.py exports:

  context      the CUDA context: NVML's used memory on the device (and this
               process's, where NVML lists it) before CUDA is initialised and
               after, less what PyTorch's allocator has reserved by then
  peak         torch.cuda.max_memory_allocated and max_memory_reserved over
               one step after 3 warm-up steps (reset_peak_memory_stats)
  time         the median of --steps steps, each timed with CUDA events
               after torch.cuda.synchronize()
and the estimate of the same (`loom estimate ONNX --batch N --train
--optimizer adam --precision P --device DEVICE --json`): memory.peak_live
against max_memory_allocated, memory.peak_reserved against
max_memory_reserved, memory.context against the NVML context,
memory.total against reserved + context, time_s.step against the step.

    bench/estimate_gpu.py --loom LOOM --onnx DIR --out OUT [--device h200]
                          [--models a,b] [--batches 32,128] [--steps 20]
Writes OUT/estimate_gpu.json (every row: measured and estimated) and
OUT/estimate_gpu.md (the table). Exit 3 when there is no CUDA GPU.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = "resnet18,resnet50,mobilenet_v2,vit,bert,gpt2,lstm,efficientnet_b0,convnext_tiny,tx_encoder"


class Nvml:
    """The few NVML calls needed, by ctypes (no pynvml on the image)."""
    class Mem(ctypes.Structure):
        _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                    ("used", ctypes.c_ulonglong)]

    class Proc(ctypes.Structure):  # nvmlProcessInfo_v1_t
        _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]

    def __init__(self, index=0):
        self.lib = ctypes.CDLL(os.environ.get("LOOM_NVML_LIB", "libnvidia-ml.so.1"))
        if self.lib.nvmlInit_v2():
            raise RuntimeError("nvmlInit_v2 failed")
        self.h = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.h)):
            raise RuntimeError("nvmlDeviceGetHandleByIndex_v2 failed")

    def used(self):
        m = Nvml.Mem()
        self.lib.nvmlDeviceGetMemoryInfo(self.h, ctypes.byref(m))
        return m.used

    def proc_used(self, pid):
        """This process's GPU memory as NVML lists it (None where it does not)."""
        n = ctypes.c_uint(64)
        procs = (Nvml.Proc * 64)()
        if self.lib.nvmlDeviceGetComputeRunningProcesses(self.h, ctypes.byref(n), procs):
            return None
        for i in range(n.value):
            if procs[i].pid == pid:
                return procs[i].usedGpuMemory
        return None


def child(name, batch, precision, steps):
    nv = Nvml(int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or 0))
    used0 = nv.used()
    import torch
    sys.path.insert(0, os.path.join(ROOT, "workloads"))
    import export_onnx as ex
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # the context exists once a kernel ran
    torch.cuda.synchronize()
    used1, proc1 = nv.used(), nv.proc_used(os.getpid())
    context = used1 - used0 - torch.cuda.memory_reserved()
    torch.manual_seed(0)
    mod, inputs, _, loss_fn = ex.build(name)
    mod = mod.cuda().train()
    opt = torch.optim.Adam(mod.parameters(), lr=1e-4)
    x = tuple(t.cuda() for t in inputs(batch))
    # the models and losses make tensors at run time (positions, targets)
    # with torch.arange / randint / rand, on the default device, the CPU:
    # these make them on the GPU instead (torch 1.13 has no set_default_device)
    for fn in ("arange", "randint", "rand", "randn"):
        orig = getattr(torch, fn)
        setattr(torch, fn, lambda *args, _o=orig, **kw: _o(*args, **{"device": "cuda", **kw}))
    scaler = torch.cuda.amp.GradScaler(enabled=precision == "mixed")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16, enabled=precision == "mixed"):
            out = mod(*x)
            loss = loss_fn(out.float(), batch) if precision == "mixed" else loss_fn(out, batch)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    torch.cuda.manual_seed(0)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    alloc, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    times = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    print(json.dumps({"context": context, "nvml_used_before": used0, "nvml_used_after_init": used1,
                      "nvml_proc_after_init": proc1, "nvml_used_end": nv.used(),
                      "nvml_proc_end": nv.proc_used(os.getpid()),
                      "max_allocated": alloc, "max_reserved": reserved,
                      "step_s": statistics.median(times), "steps_s": times,
                      "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}))


def estimate(a, name, batch, precision):
    cmd = [a.loom, "estimate", os.path.join(a.onnx, name + ".onnx"), "--batch", str(batch),
           "--train", "--optimizer", "adam", "--precision", precision, "--device", a.device, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, LOOM_DEVICE_DIR=os.path.join(ROOT, "workloads", "devices")))
    if p.returncode:
        return {"error": p.stderr.strip()[-500:]}
    j = json.loads(p.stdout)
    return {"peak_live": j["memory"]["peak_live"], "peak_reserved": j["memory"]["peak_reserved"],
            "context": j["memory"]["context"], "total": j["memory"]["total"],
            "step_s": j["time_s"]["step"]}


def pct(e, m):
    return f"{100 * (e - m) / m:+.1f}" if m else "-"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loom", required=True)
    ap.add_argument("--onnx", required=True, help="exports of the models (export_onnx.py --no-weights)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="h200")
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--batches", default="32,128")
    ap.add_argument("--precisions", default="fp32,mixed")
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    try:
        import torch
        ok = torch.cuda.is_available()
    except ImportError:
        ok = False
    if not ok:
        print("bench/estimate_gpu.py: no CUDA GPU visible to this python's torch", file=sys.stderr)
        return 3
    os.makedirs(a.out, exist_ok=True)
    rows, lines = [], []
    for name in a.models.split(","):
        for b in (int(x) for x in a.batches.split(",")):
            for prec in a.precisions.split(","):
                t0 = time.time()
                p = subprocess.run([sys.executable, __file__, "--child", name, str(b), prec, str(a.steps)],
                                   capture_output=True, text=True, timeout=600)
                row = {"model": name, "batch": b, "precision": prec, "wall_s": time.time() - t0}
                if p.returncode:
                    row["error"] = p.stderr.strip()[-800:]
                else:
                    row["measured"] = json.loads(p.stdout.strip().splitlines()[-1])
                row["estimated"] = estimate(a, name, b, prec)
                rows.append(row)
                m, e = row.get("measured"), row["estimated"]
                if m and "error" not in e:
                    lines.append(
                        f"| {name} | {b} | {prec} | {m['max_allocated'] / 2**20:.0f} | {e['peak_live'] / 2**20:.0f} | "
                        f"{pct(e['peak_live'], m['max_allocated'])} | {m['max_reserved'] / 2**20:.0f} | "
                        f"{e['peak_reserved'] / 2**20:.0f} | {pct(e['peak_reserved'], m['max_reserved'])} | "
                        f"{m['context'] / 2**20:.0f} | {e['context'] / 2**20:.0f} | "
                        f"{m['step_s'] * 1e3:.2f} | {e['step_s'] * 1e3:.2f} | {pct(e['step_s'], m['step_s'])} |")
                else:
                    lines.append(f"| {name} | {b} | {prec} | failed: "
                                 f"{(row.get('error') or e.get('error', ''))[-200:].replace('|', '/')} |")
                print(lines[-1], flush=True)
                with open(os.path.join(a.out, "estimate_gpu.json"), "w") as f:
                    json.dump(rows, f, indent=1)
    gpu = next((r["measured"]["gpu"] for r in rows if r.get("measured")), "?")
    with open(os.path.join(a.out, "estimate_gpu.md"), "w") as f:
        f.write("\n".join([
            "# Estimator against a GPU", "",
            f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. GPU: {gpu}. Command: "
            f"`bash scripts/estimate-gpu-check.sh` (bench/estimate_gpu.py, device `{a.device}`, "
            f"Adam, {a.steps} timed steps after 3 warm-up steps, CUDA events).", "",
            "| model | batch | precision | allocated MiB | est. live MiB | err % | reserved MiB | "
            "est. reserved MiB | err % | context MiB (NVML) | est. context MiB | step ms | est. ms | err % |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", *lines, ""]))
    return 1 if any("error" in r or "error" in r["estimated"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
