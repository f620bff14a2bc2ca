#!/usr/bin/env bash
# Issue 7's GPU measurements, for a session lent the H200 through the
# device tool (none on the CI machine, none on the development VM). Run on
# the device machine, in the repository root, after scripts/device-pack.sh
# here, with carry [".devcarry"]:
#
#   bash scripts/prof-gpu-check.sh [LOOM] [OUT_DIR]   (defaults .devcarry/loom, $OUT or /tmp/prof-gpu)
#
# 1. `loom prof --gpu --kernels` on two CUDA models of the zoo (resnet18,
#    gpt2; batch 64, 100 steps): kernel classes, copies, GPU utilisation,
#    and NVML's utilisation against CUPTI's kernel time (kernels.gpu_busy);
# 2. the overhead on step time, `--ab 5` each: sampling at 100 Hz with GPU
#    sampling, and the same with kernel tracing (the issue's <= 1% and <= 5%).
# Everything goes into OUT_DIR/prof-gpu.tar.gz (the device tool brings back
# at most 8 files) and OUT_DIR/summary.txt, which is also printed. Sized to
# fit one 10-minute device call (22 short runs; not yet run on a GPU, so
# give it timeout_s 600). Exit 0 when every run finished, 1 when one failed,
# 3 when there is no usable GPU here (no nvidia-smi, or torch sees none).
set -uo pipefail
loom=${1:-.devcarry/loom}
out=${2:-${OUT:-/tmp/prof-gpu}}
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
mkdir -p "$out"
work=$(mktemp -d /tmp/prof-gpu-XXXXXX)
"$loom" prof --help >/dev/null 2>&1 || { echo "prof-gpu-check: cannot run $loom"; "$loom" prof --help; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi -L || { echo "prof-gpu-check: no nvidia-smi: not a GPU machine"; exit 3; }
"$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)' ||
  { echo "prof-gpu-check: $py's torch sees no CUDA device"; exit 3; }
if [ -z "${LOOM_NVML_LIB:-}" ] && ! ldconfig -p | grep -q 'libnvidia-ml.so.1 '; then
  lib=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name 'libnvidia-ml.so.1' 2>/dev/null | head -1)
  [ -n "$lib" ] && export LOOM_NVML_LIB=$lib
fi
rc=0
run() { # NAME LOOM-OPTIONS... -- COMMAND...
  local name=$1
  shift
  echo "== $name: $loom prof $*"
  "$loom" prof "$@" >"$work/$name.out" 2>"$work/$name.err" || { echo "   failed:"; tail -5 "$work/$name.err"; rc=1; }
}
for m in resnet18 gpt2; do
  wl=("$py" workloads/models/run.py --model "$m" --device cuda --batch 64 --steps 100 --threads 4)
  run "prof-$m" --gpu --kernels --interval 10ms --out "$work/prof-$m" -- "${wl[@]}"
done
wl=("$py" workloads/models/run.py --model resnet18 --device cuda --batch 64 --steps 200 --threads 4)
run ab-sampling --ab 5 --gpu --interval 10ms --out "$work/ab-sampling" -- "${wl[@]}"
run ab-kernels --ab 5 --gpu --kernels --interval 10ms --out "$work/ab-kernels" -- "${wl[@]}"
nvidia-smi >"$work/nvidia-smi.txt" 2>&1
"$py" - "$work" >"$out/summary.txt" <<'PY'
import json, os, sys
w = sys.argv[1]
print("prof-gpu-check", open(os.path.join(w, "nvidia-smi.txt")).read().splitlines()[2:4])
for m in ("resnet18", "gpt2"):
    p = os.path.join(w, f"prof-{m}", "run.json")
    if not os.path.exists(p):
        print(f"{m}: no run record"); continue
    r = json.load(open(p)); s = r["summary"]; k = r.get("kernels", {})
    print(f"{m}: steps {s['steps']}, p50 {1e3 * s['step_time_s']['p50']:.2f} ms, warm-up {s['warmup_steps']}, "
          f"kernels: {k.get('status')}")
    print(f"  gpu_busy: {json.dumps(k.get('gpu_busy'))}")
    cls = sorted((k.get("by_class") or {}).items(), key=lambda x: -x[1]["total_s"])[:6]
    print("  by class: " + ", ".join(f"{c} {1e3 * v['total_s']:.1f} ms" for c, v in cls))
    print(f"  gpu: {json.dumps(r.get('gpu'))[:600]}")
for d in ("ab-sampling", "ab-kernels"):
    p = os.path.join(w, d, "ab.json")
    if not os.path.exists(p):
        print(f"{d}: no ab.json"); continue
    a = json.load(open(p))
    for name in ("wall_p50", "wall_mean"):
        x = a["metrics"].get(name)
        if x:
            print(f"{d} {name}: overhead {100 * x['overhead']:+.2f}% t95 "
                  f"[{100 * x['ci95_t'][0]:+.2f}%, {100 * x['ci95_t'][1]:+.2f}%] over {x['pairs']} pairs")
PY
cat "$out/summary.txt"
tar -C "$work" -czf "$out/prof-gpu.tar.gz" . && rm -rf "$work"
exit $rc
