#!/usr/bin/env bash
# bench/prof_overhead.sh: the profiler's overhead on step time, measured with
# `loom prof --ab` (pairs of runs with and without sampling at 100 Hz, ABBA
# order) on three CPU models of the zoo at a small batch on one thread, and
# on the synthetic CPU-bound workload as a control; written to
# docs/bench/prof.md, with the raw records (ab.json, ab_runs.csv per model)
# under docs/bench/prof_ab/.
#
#   flock /work/notes/bench.lock bash bench/prof_overhead.sh BUILD_DIR
#
# PROF_AB_PAIRS (default 16) sets the pairs per model, PROF_AB_STEPS (10)
# the steps per run: many short runs, so that each pair sees nearly the same
# load. PROF_AB_DIR, if set, names a directory that already holds MODEL/
# ab.json and ab_runs.csv from the same commands: they are formatted instead
# of measured again. Needs python3-torch; without it, says so and writes
# nothing.
set -uo pipefail
build=${1:-build}
pairs=${PROF_AB_PAIRS:-16}
steps=${PROF_AB_STEPS:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  echo "prof_overhead: python3-torch/torchvision not installed; nothing measured"
  exit 0
fi
# One thread everywhere (torch's intra-op pool, OpenMP, OpenBLAS), so the
# workload is the single-threaded program the figures describe.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
dir=${PROF_AB_DIR:-}
measure=1
if [ -n "$dir" ]; then
  measure=0
else
  dir=$(mktemp -d /tmp/loom-prof-ab-XXXXXX)
  trap 'rm -rf "$dir"' EXIT
fi
models=(resnet18 bert lstm synth)
declare -A args=(
  [resnet18]="/usr/bin/python3 $here/workloads/models/run.py --model resnet18 --mode train --batch 2 --steps $steps --threads 1"
  [bert]="/usr/bin/python3 $here/workloads/models/run.py --model bert --mode train --batch 2 --steps $steps --threads 1"
  [lstm]="/usr/bin/python3 $here/workloads/models/run.py --model lstm --mode train --batch 2 --steps $steps --threads 1"
  [synth]="$build/prof_synth --steps 20 --busy-ms 20 --idle-ms 0"
)
if [ "$measure" = 1 ]; then
  for m in "${models[@]}"; do
    load0=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    # shellcheck disable=SC2086
    "$build/loom" prof --ab "$pairs" --interval 10ms --out "$dir/$m" -- ${args[$m]} \
      >"$dir/$m.out" 2>"$dir/$m.err" ||
      { echo "prof_overhead: $m failed:"; tail -5 "$dir/$m.err"; exit 1; }
    printf '{"start": "%s", "load_before": "%s", "load_after": "%s", "args": "%s"}\n' \
      "$start" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "${args[$m]}" >"$dir/$m/bench.json"
    cat "$dir/$m.out"
  done
fi
mkdir -p "$here/docs/bench/prof_ab"
for m in "${models[@]}"; do
  mkdir -p "$here/docs/bench/prof_ab/$m"
  cp "$dir/$m/ab.json" "$dir/$m/ab_runs.csv" "$dir/$m/bench.json" "$here/docs/bench/prof_ab/$m/"
done
/usr/bin/python3 "$here/bench/prof_overhead_report.py" "$here/docs/bench/prof_ab" \
  "$here/docs/bench/prof.md" "$build" "$pairs" "$steps"
