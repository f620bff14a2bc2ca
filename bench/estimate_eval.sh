#!/usr/bin/env bash
# The estimator's honest protocol in one command (issue #24):
#   development set = the zoo (workloads/export_onnx.py NAMES), on which the
#   cost model was written; evaluation set = a held-out list (PLAN, default
#   workloads/models/evaluation7.txt, the newest; every list before it has been
#   measured and is spent: a new round commits a fresh one before measuring
#   it), architectures held out from it. Both are measured the same way
#   (bench/estimate_measure.py: peak live heap of one Adam training step and
#   the median CPU time of its steps, one thread, the median of --procs
#   processes) against `loom estimate` on DEVICE, and reported apart:
#   docs/bench/estimate.md (development) and docs/bench/estimate_evalN.md
#   (evaluation, N from the list's name: evaluation4.txt -> estimate_eval4.md),
#   rows also as JSON next to them.
#
#   bench/estimate_eval.sh [BUILD] [DEVICE.json]
#       default build, workloads/devices/cpu-local-retain.json
#   env: PROCS (3), STEPS (9), SETS ("development evaluation"), PLAN (the
#        held-out list), REUSE=1 (keep
#        the committed measurements, estimate again: after an estimator
#        change; the context_bytes measurement is kept too), NICE (-5:
#        step times are CPU time, but a loaded machine still slows them; as
#        root the measurement runs at nice -5, else at 0)
#
# A quiet machine gives the step-time figures that count; memory does not
# depend on the load.
set -euo pipefail
build=${1:-build}
device=${2:-workloads/devices/cpu-local-retain.json}
procs=${PROCS:-3}
steps=${STEPS:-9}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
py=/usr/bin/python3
[ -x "$build/loom" ] && [ -e "$build/libloom_alloctrack.so" ] ||
  { echo "bench/estimate_eval.sh: $build/loom or $build/libloom_alloctrack.so missing (make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/loom-est-eval.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
nice=()
if [ "$(id -u)" -eq 0 ]; then nice=(nice -n "${NICE:--5}"); fi
zoo=resnet18,resnet50,vgg16,mobilenet_v2,vit,bert,gpt2,lstm,dlrm
plan=${PLAN:-workloads/models/evaluation7.txt}
[ -r "$plan" ] || { echo "bench/estimate_eval.sh: PLAN $plan: no such list" >&2; exit 1; }
suffix=$(basename "$plan" .txt); suffix=${suffix#evaluation}
held=$(sed 's/#.*//' "$plan" | awk 'NF == 2 {print $1}' | paste -sd,)
# graph-only exports: the estimator reads no weights
$py workloads/export_onnx.py "$tmp" --no-weights --models "mlp,$zoo,$held" > "$tmp/export.log" 2>&1 ||
  { cat "$tmp/export.log"; exit 1; }
for set in ${SETS:-development evaluation}; do
  if [ "$set" = development ]; then
    args=(--models "$zoo" --out docs/bench/estimate.md --json docs/bench/estimate.json)
  else
    args=(--plan "$plan" --out "docs/bench/estimate_eval$suffix.md"
          --json "docs/bench/estimate_eval$suffix.json")
  fi
  reuse=()
  [ -n "${REUSE:-}" ] && reuse=(--reuse "${args[-1]}" --no-context)
  "${nice[@]}" $py bench/estimate_measure.py --build "$build" --onnx "$tmp" --device "$device" \
    --procs "$procs" --steps "$steps" --set "$set" "${args[@]}" "${reuse[@]}"
done
