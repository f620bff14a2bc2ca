#!/usr/bin/env bash
# loom estimate on the coverage subset (tests/data/estimate_cov: torchvision
# classifiers, detection/segmentation backbones, torch.nn transformers and
# RNNs, exported graph-only): each estimates for training and inference on a
# CPU and the H200 device, and its parameter count is PyTorch's.
set -euo pipefail
B=${LOOM_BUILD_DIR:?}
SRC=${LOOM_SOURCE_DIR:-.}
loom="$B/loom"
tmp=$(mktemp -d /tmp/loom-est-cov.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export LOOM_DEVICE_DIR="$SRC/workloads/devices"
data="$SRC/tests/data/estimate_cov"
n=0
for gz in "$data"/*.onnx.gz; do
  m=$(basename "$gz" .onnx.gz)
  gzip -dc "$gz" > "$tmp/$m.onnx"
  # a training step on a CPU device (every operator listed, for the checks below)
  "$loom" estimate "$tmp/$m.onnx" --batch 3 --train --optimizer adam --device cpu-local \
    --top 100000 --json > "$tmp/$m.json" 2> "$tmp/err" || fail "$m: $(cat "$tmp/err")"
  n=$((n + 1))
done
[ "$n" -ge 20 ] || fail "only $n models in $data"
# parameters are PyTorch's; FLOPs, memory and time present and consistent
python3 - "$tmp" "$data" <<'PY' || exit 1
import glob, json, os, sys
tmp, data = sys.argv[1], sys.argv[2]
bad = []
for path in sorted(glob.glob(os.path.join(data, "*.json"))):
    m = os.path.basename(path)[:-5]
    want = json.load(open(path))["params"]
    j = json.load(open(os.path.join(tmp, m + ".json")))
    checks = [(j["params"] == want, f"params {j['params']}, PyTorch counts {want}"),
              (j["batch"] == 3, "batch"),
              (j["fwd_flops"] > 0 and j["bwd_flops"] >= j["fwd_flops"], "FLOPs"),
              (j["memory"]["peak_live"] > j["memory"]["weights"] > 0, "memory"),
              (j["time_s"]["step"] > 0, "step time"),
              (all(o["op"] for o in j["ops"]), "an operator without a type")]
    bad += [f"{m}: {msg}" for ok, msg in checks if not ok]
sys.exit("FAIL: " + "; ".join(bad) if bad else 0)
PY
# the ONNX operators the subset is here for: Pad (AvgPool2d with padding),
# Resize, GRU, Einsum, ScatterND, and SiLU fused back from Sigmoid * x
for pair in densenet121:Pad lraspp_mobilenet_v3_large:Resize gru:GRU maxvit_t:Einsum \
            swin_t:ScatterND efficientnet_b0:'SiLU(fused)'; do
  m=${pair%%:*} op=${pair#*:}
  python3 -c 'import json,sys; sys.exit(0 if any(o["op"] == sys.argv[2] for o in json.load(open(sys.argv[1]))["ops"]) else 1)' \
    "$tmp/$m.json" "$op" || fail "$m: no $op operator in the estimate"
  # and the same graphs for inference and mixed precision on the GPU device
  "$loom" estimate "$tmp/$m.onnx" --batch 2 --precision mixed --device h200 > /dev/null 2> "$tmp/err" ||
    fail "$m (h200, mixed, inference): $(cat "$tmp/err")"
done
echo "ok: $n models"
# the new operators' arithmetic on a hand-built graph (tests/fuzz/corpus/onnx/newops.onnx):
# x[2,4,5] Einsum("b i j, j k -> b i k", w[5,6]) = 2*2*4*5*6 = 480 FLOP, 192 B out;
# Pad [0,1,0, 0,1,0] -> [2,6,6] = 288 B; Resize scales [1,2,1] -> [2,12,6] = 576 B;
# GRU H=4, I=3, seq 7, batch 2: 14 x (6*4*(3+4) + 12*4) = 3024 FLOP, Y + Y_h = 256 B;
# parameters w + GRU W + R = 30 + 36 + 48 (Resize's scales are not one)
"$loom" estimate "$SRC/tests/fuzz/corpus/onnx/newops.onnx" --batch 2 --train --device cpu-local --json |
  python3 -c '
import json, sys
j = json.load(sys.stdin)
ops = {o["op"]: (o["fwd_flops"], o["out_bytes"]) for o in j["ops"]}
want = {"Einsum": (480, 192), "Pad": (0, 288), "Resize": (144, 576), "GRU": (3024, 256)}
bad = [f"{k}: {ops.get(k)} != {v}" for k, v in want.items() if ops.get(k) != v]
bad += ["params %d != 114" % j["params"]] if j["params"] != 114 else []
sys.exit("FAIL: newops: " + "; ".join(bad) if bad else 0)'
echo "ok: newops"
