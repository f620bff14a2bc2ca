#!/usr/bin/env bash
# make bench: the estimator against measurement on this machine.
#   1. PyTorch's per-operator dispatch cost (forward+autograd of a 1-element op)
#   2. bench_estimate_calibrate: GEMM FLOP/s, STREAM triad -> workloads/devices/cpu-local.json
#   3. export the zoo to ONNX (workloads/export_onnx.py) into a temporary dir
#   4. bench/estimate_measure.py -> docs/bench/estimate.md
set -euo pipefail
build=${1:-build}
py=/usr/bin/python3
if ! $py -c 'import torch, onnx' 2>/dev/null; then
  echo "bench/estimate.sh: skipped: python3-torch / python3-onnx are not installed" >&2
  exit 0
fi
tmp=$(mktemp -d /tmp/loom-est-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
overhead=$($py - <<'PY'
import time, torch
torch.set_num_threads(1)
x = torch.ones(1, requires_grad=True)
best = 1.0
for _ in range(5):
    t0 = time.process_time()
    for _ in range(2000):
        y = x * 2.0
    best = min(best, (time.process_time() - t0) / 2000)
print(f"{best:.3e}")
PY
)
# single-threaded, like the measured steps (see bench/estimate_measure.py)
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$build/bench_estimate_calibrate" --threads 1 --out docs/bench --device-out workloads/devices/cpu-local.json \
  --op-overhead "$overhead"
$py workloads/export_onnx.py "$tmp" --models mlp,resnet18,resnet50,vgg16,mobilenet_v2,vit,bert,gpt2,lstm,dlrm > "$tmp/export.log" 2>&1 || { cat "$tmp/export.log"; exit 1; }
$py bench/estimate_measure.py --build "$build" --onnx "$tmp" \
  --device workloads/devices/cpu-local.json --out docs/bench/estimate.md "${@:2}"
