#!/usr/bin/python3
"""What this CPU does at best, measured next to the study's runs: PyTorch's
one-thread matrix-product rate in fp32 and bf16 and a one-thread triad
bandwidth, in process CPU time (best of 5), with the CPU's model name.
Writes one JSON object (docs/study/records/calibration.json by default).

    flock /work/notes/bench.lock /usr/bin/python3 docs/study/calibrate.py [OUT]

The roofline of the study uses workloads/devices/cpu-local.json (the device
file `loom prof --device cpu-local` read); this record shows whether that
calibration still describes the CPU the campaign ran on.
"""

import json
import os
import sys
import time


def best(fn, reps=5):
    fn()
    t = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        t = min(t, time.process_time() - t0)
    return t


def main():
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "records", "calibration.json")
    n = 1024
    rec = {"start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                        if l.startswith("model name")), "?"),
           "cores": os.cpu_count(), "torch": torch.__version__,
           "load_before": [float(x) for x in open("/proc/loadavg").read().split()[:3]]}
    for dt, name in ((torch.float32, "matmul_fp32_flops"), (torch.bfloat16, "matmul_bf16_flops")):
        a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
        rec[name] = 2 * n ** 3 / best(lambda: torch.mm(a, b))
    m = 1 << 24  # 64 MiB per fp32 array, far beyond the caches
    x, y, z = torch.rand(m), torch.rand(m), torch.empty(m)
    # triad z = x + 2 y: reads 2 arrays, writes 1
    rec["triad_bytes_per_s"] = 3 * 4 * m / best(lambda: torch.add(x, y, alpha=2.0, out=z))
    rec["load_after"] = [float(v) for v in open("/proc/loadavg").read().split()[:3]]
    with open(out, "w") as f:
        json.dump(rec, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(rec, sort_keys=True))


if __name__ == "__main__":
    main()
