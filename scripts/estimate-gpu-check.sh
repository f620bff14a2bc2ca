#!/usr/bin/env bash
# Issue 24's GPU check of `loom estimate`, for a session lent the H200
# through the device tool (none on the CI machine or the development VM).
# Prepare here, then run on the device machine with carry [".devcarry"]:
#
#   scripts/device-pack.sh build                       # loom + its libraries
#   /usr/bin/python3 workloads/export_onnx.py .devcarry/onnx --no-weights \
#       --models resnet18,resnet50,mobilenet_v2,vit,bert,gpt2,lstm,efficientnet_b0,convnext_tiny,tx_encoder
#   bash scripts/estimate-gpu-check.sh [LOOM] [OUT_DIR]  (defaults .devcarry/loom, $OUT or /tmp/est-gpu)
#
# Per model, batch (MODELS, BATCHES; default 10 models x 32, 128) and
# precision (fp32, mixed), in a fresh process each: torch.cuda's
# max_memory_allocated and max_memory_reserved over one Adam step, the CUDA
# context from NVML before and after initialisation, and the step time from
# CUDA events after synchronisation; next to `loom estimate --device h200`.
# Writes OUT_DIR/estimate_gpu.json (data: every measured and estimated figure)
# and OUT_DIR/estimate_gpu.md (the table, for docs/bench/estimate_gpu.md),
# and prints the table. Not yet run on a GPU: 40 runs of ~5-10 s each, so
# give it timeout_s 600 and cut MODELS if it runs out.
# Exit 0 when every run finished, 1 when one failed, 3 when there is no
# usable GPU here (no nvidia-smi, or torch sees no CUDA device).
set -uo pipefail
loom=${1:-.devcarry/loom}
out=${2:-${OUT:-/tmp/est-gpu}}
onnx=${ONNX_DIR:-.devcarry/onnx}
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
models=${MODELS:-resnet18,resnet50,mobilenet_v2,vit,bert,gpt2,lstm,efficientnet_b0,convnext_tiny,tx_encoder}
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L; then
  echo "estimate-gpu-check: no nvidia-smi here: this is not a GPU machine (nothing measured)" >&2
  exit 3
fi
if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)'; then
  echo "estimate-gpu-check: $py's torch sees no CUDA device (nothing measured)" >&2
  exit 3
fi
"$loom" estimate --help >/dev/null 2>&1 || { echo "estimate-gpu-check: cannot run $loom (scripts/device-pack.sh?)" >&2; exit 1; }
if [ -z "${LOOM_NVML_LIB:-}" ] && ! ldconfig -p | grep -q 'libnvidia-ml.so.1 '; then
  lib=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
  [ -n "$lib" ] && export LOOM_NVML_LIB=$lib
fi
mkdir -p "$out" "$onnx"
# models without an export (the carry had none): export them here, with weights
# (torch.onnx needs no onnx package for that)
for m in ${models//,/ }; do
  [ -f "$onnx/$m.onnx" ] || "$py" workloads/export_onnx.py "$onnx" --models "$m" >/dev/null 2>&1 ||
    echo "estimate-gpu-check: $m: export failed" >&2
done
"$py" bench/estimate_gpu.py --loom "$loom" --onnx "$onnx" --out "$out" --models "$models" \
  --batches "${BATCHES:-32,128}" --precisions "${PRECISIONS:-fp32,mixed}" --steps "${STEPS:-20}"
rc=$?
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
exit $rc
