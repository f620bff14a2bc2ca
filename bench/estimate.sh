#!/usr/bin/env bash
# make bench: the estimator against measurement on this machine.
#   1. PyTorch's per-operator dispatch cost (forward+autograd of a 1-element op)
#   2. PyTorch's achieved matmul and conv FLOP/s on layers outside the zoo
#   3. bench_estimate_calibrate: BLAS GEMM FLOP/s, STREAM triad -> workloads/devices/cpu-local.json,
#      plus the matmul rate by size PyTorch achieves (matmul_curve)
#   4. bench/estimate_calibrate.py: the per-operator-class model (microbenchmarks
#      on shapes off the zoo's, page fault cost, optimizer, fixed step cost)
#      -> cpu-local.json, fit quality -> docs/bench/estimate_classes.md
#   5. export the zoo to ONNX (workloads/export_onnx.py) into a temporary dir
#   6. workloads/devices/cpu-local-retain.json: the same machine with glibc
#      malloc told to keep what it gets (no mmap, no trim: GLIBC_TUNABLES in
#      its "malloc_tunables"), the CPU analogue of PyTorch's CUDA caching allocator
#   7. bench/estimate_instep.py: the in-step factor (operators inside a whole
#      training step over their microbenchmarks), measured on three composite
#      workloads outside the zoo with the retaining runtime -> in_step_factor
#      of both device files, runs appended to docs/bench/estimate_classes.md
#   8. bench/estimate_measure.py, once per device file (each measured with its
#      malloc_tunables) -> docs/bench/estimate.md
#   9. bench/estimate_coverage.py: every exportable model estimated (docs/bench/estimate_coverage.md)
# The held-out evaluation is its own command: bench/estimate_eval.sh.
set -euo pipefail
build=${1:-build}
# one thread for PyTorch, OpenMP and OpenBLAS (whose spinning threads would
# otherwise add CPU time): steps are timed in process CPU time
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
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
# LOOM_EST_CACHE=FILE reuses measurements (the export and calibration still run)
cache=()
[ -n "${LOOM_EST_CACHE:-}" ] && cache=(--cache "$LOOM_EST_CACHE")
# what PyTorch achieves on a Linear and a 3x3 convolution (forward+backward,
# one thread, CPU time); neither layer shape is in the zoo
read -r torch_gemm torch_conv < <($py - <<'PY'
import time, torch
torch.set_num_threads(1)
torch.manual_seed(0)
def rate(fn, flops, reps=5):
    fn()
    best = 1e9
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return flops / best
lin = torch.nn.Linear(512, 2048)
y = torch.randn(2048, 512, requires_grad=True)
conv = torch.nn.Conv2d(64, 64, 3, padding=1)
x = torch.randn(16, 64, 32, 32, requires_grad=True)
rl = rate(lambda: lin(y).sum().backward(), 3 * 2 * 2048 * 512 * 2048)
rc = rate(lambda: conv(x).sum().backward(), 3 * 2 * 16 * 64 * 32 * 32 * 64 * 9)
print(f"{rl:.4e} {rc:.4e}")
PY
)
# single-threaded, like the measured steps (see bench/estimate_measure.py)
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 "$build/bench_estimate_calibrate" --threads 1 --out docs/bench --device-out workloads/devices/cpu-local.json \
  --op-overhead "$overhead" --torch-gemm "$torch_gemm" --torch-conv "$torch_conv"
# the matrix-product rate PyTorch achieves by size (Linear 1024->1024 on 16,
# 64, 256, 1024 rows, forward + backward): the device's matmul_curve
$py - workloads/devices/cpu-local.json <<'PY'
import json, sys, time, torch
torch.set_num_threads(1)
torch.manual_seed(0)
def rate(fn, flops, reps=5):
    fn()
    best = 1e9
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return flops / best
lin = torch.nn.Linear(1024, 1024)
curve = []
for s in (16, 64, 256, 1024):
    y = torch.randn(s, 1024, requires_grad=True)
    curve.append([s, rate(lambda: lin(y).sum().backward(), 3 * 2 * s * 1024 * 1024)])
dev = json.load(open(sys.argv[1]))
dev["matmul_curve"] = curve
json.dump(dev, open(sys.argv[1], "w"), indent=2, sort_keys=True)
print("matmul_curve", " ".join(f"{s}:{f / 1e9:.1f}G" for s, f in curve))
PY
$py bench/estimate_calibrate.py workloads/devices/cpu-local.json --report docs/bench/estimate_classes.md
# the retaining runtime: every block from the brk heap (mmap_max=0) and the
# heap never trimmed (trim_threshold above any heap), so a step reuses the
# pages of the step before, as the CUDA caching allocator reuses its segments
$py - workloads/devices/cpu-local.json workloads/devices/cpu-local-retain.json <<'PY'
import json, sys
dev = json.load(open(sys.argv[1]))
dev["name"] = "cpu-local-retain"
dev["malloc_tunables"] = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=0x7fffffffffffffff"
json.dump(dev, open(sys.argv[2], "w"), indent=2, sort_keys=True)
PY
$py workloads/export_onnx.py "$tmp" --models mlp,cal_mlp,cal_cnn,cal_attn,resnet18,resnet50,vgg16,mobilenet_v2,vit,bert,gpt2,lstm,dlrm > "$tmp/export.log" 2>&1 || { cat "$tmp/export.log"; exit 1; }
$py bench/estimate_instep.py --build "$build" --onnx "$tmp" --report docs/bench/estimate_classes.md \
  workloads/devices/cpu-local-retain.json workloads/devices/cpu-local.json
$py bench/estimate_measure.py --build "$build" --onnx "$tmp" \
  --device workloads/devices/cpu-local.json --device workloads/devices/cpu-local-retain.json --out docs/bench/estimate.md "${cache[@]}" "${@:2}"
# 9. coverage: every model export_onnx.py knows (all torchvision classifiers,
#    detection/segmentation backbones, torch.nn transformers and RNNs),
#    graph-only, estimated -> docs/bench/estimate_coverage.md
$py bench/estimate_coverage.py --build "$build" --dir "$tmp/coverage" --out docs/bench/estimate_coverage.md
