#!/usr/bin/env bash
# bench/prof_overhead.sh: the profiler's overhead on step time at 100 Hz,
# measured with `loom prof --ab` on CPU models of the zoo (small batch, one
# thread), in two designs per model (docs/profiling.md, "Overhead"):
#
#   runs:   PROF_AB_PAIRS pairs of short runs (PROF_AB_STEPS steps each),
#           one sampled and one not, ABBA order;
#   toggle: PROF_AB_TOGGLE_RUNS long runs (PROF_AB_TOGGLE_STEPS steps), each
#           pausing and resuming the sampler every PROF_AB_K steps.
#
# Both arms of both designs run the same command through the same launcher
# with the same environment, pinned the same way: loom and the command
# together on CPU PROF_AB_CPU (taskset), so the sampling thread shares the
# workload's core (the case where the profiler cannot use an idle core).
# Each measurement holds PROF_AB_LOCK (flock) while it runs, so that no
# other benchmark runs beside it. Raw records go to docs/bench/prof_ab/
# MODEL-DESIGN/ (ab.json, ab_runs.csv, ab_blocks.csv, bench.json) and
# bench/prof_overhead_report.py formats them into docs/bench/prof.md.
#
#   bash bench/prof_overhead.sh BUILD_DIR
#
# PROF_AB_MODELS (default "resnet18 lstm") chooses the models. PROF_AB_DIR,
# if set, names a directory that already holds the MODEL-DESIGN records:
# they are formatted instead of measured again. Needs python3-torch;
# without it, says so and writes nothing.
set -uo pipefail
build=${1:-build}
pairs=${PROF_AB_PAIRS:-30}
steps=${PROF_AB_STEPS:-8}
truns=${PROF_AB_TOGGLE_RUNS:-6}
tsteps=${PROF_AB_TOGGLE_STEPS:-240}
k=${PROF_AB_K:-4}
cpu=${PROF_AB_CPU:-1}
lock=${PROF_AB_LOCK:-/work/notes/bench.lock}
read -r -a models <<<"${PROF_AB_MODELS:-resnet18 lstm}"
here=$(cd "$(dirname "$0")/.." && pwd)
if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  echo "prof_overhead: python3-torch/torchvision not installed; nothing measured"
  exit 0
fi
# One thread everywhere (torch's intra-op pool, OpenMP, OpenBLAS), so the
# workload is the single-threaded program the figures describe.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
locked() {
  if command -v flock >/dev/null && [ -d "$(dirname "$lock")" ]; then
    flock "$lock" "$@"
  else
    "$@"
  fi
}
dir=${PROF_AB_DIR:-}
measure=1
if [ -n "$dir" ]; then
  measure=0
else
  dir=$(mktemp -d /tmp/loom-prof-ab-XXXXXX)
  trap 'rm -rf "$dir"' EXIT
fi
cmd() { # MODEL STEPS
  echo "/usr/bin/python3 $here/workloads/models/run.py --model $1 --mode train --batch 2 --steps $2 --threads 1"
}
one() { # NAME STEPS LOOM-OPTIONS...
  local name=$1 n=$2
  shift 2
  local c
  c=$(cmd "${name%-*}" "$n")
  local load0 start
  # shellcheck disable=SC2086
  locked bash -c '
    cat /proc/loadavg >"$1.load0"; date -u +%Y-%m-%dT%H:%M:%SZ >"$1.start"
    shift
    taskset -c "$@"' _ "$dir/$name" "$cpu" "$build/loom" prof "$@" --interval 10ms \
    --out "$dir/$name" -- $c >"$dir/$name.out" 2>"$dir/$name.err" ||
    { echo "prof_overhead: $name failed:"; tail -5 "$dir/$name.err"; exit 1; }
  load0=$(cut -d' ' -f1-3 "$dir/$name.load0")
  start=$(cat "$dir/$name.start")
  printf '{"start": "%s", "end": "%s", "load_before": "%s", "load_after": "%s", "pinned_cpu": "%s", "loom_options": "%s --interval 10ms", "command": "%s", "cpu": "%s", "cpus": %s, "kernel": "%s"}\n' \
    "$start" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$cpu" "$*" "$c" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
    "$(nproc)" "$(uname -r)" >"$dir/$name/bench.json"
  cat "$dir/$name.out"
}
if [ "$measure" = 1 ]; then
  for m in "${models[@]}"; do
    one "$m-runs" "$steps" --ab "$pairs"
    one "$m-toggle" "$tsteps" --ab "$truns" --toggle "$k"
  done
fi
out=$here/docs/bench/prof_ab
mkdir -p "$out"
for m in "${models[@]}"; do
  for d in runs toggle; do
    mkdir -p "$out/$m-$d"
    for f in ab.json ab_runs.csv ab_blocks.csv bench.json; do
      [ -f "$dir/$m-$d/$f" ] && cp "$dir/$m-$d/$f" "$out/$m-$d/"
    done
  done
done
/usr/bin/python3 "$here/bench/prof_overhead_report.py" "$out" "$here/docs/bench/prof.md" \
  "${models[@]}"
