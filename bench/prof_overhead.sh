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
# PROF_AB_DESIGNS (default "runs toggle") chooses the measurements per
# model; a third, toggle_apart, is the within-run design
# with loom on CPU PROF_AB_LOOM_CPU (default 0) and the command on CPU
# PROF_AB_CPU (`taskset` inside the command, in both arms alike), so the
# sampler has a core of its own (MODEL-toggle_apart/; its others_cores
# column then covers loom's CPU, not the workload's); a fourth, toggle_free,
# pins nothing (loom and the command on every CPU, as `loom prof` runs by
# default: the scheduler puts the sampling thread where it finds room).
# Each measurement holds PROF_AB_LOCK (flock) while it runs, so that no
# other benchmark runs beside it. Raw records go to docs/bench/prof_ab/
# MODEL-DESIGN/ (ab.json, ab_runs.csv, ab_blocks.csv, bench.json) and
# bench/prof_overhead_report.py formats them into docs/bench/prof.md.
#
#   bash bench/prof_overhead.sh BUILD_DIR
#
# PROF_AB_OUT (default docs/bench/prof_ab) and PROF_AB_REPORT (default
# docs/bench/prof.md) say where the records and the report go (a campaign
# kept beside the others: bench/prof_overhead_campaigns.py pools them).
# PROF_AB_MODELS (default "resnet18 lstm") chooses the models. PROF_AB_DIR,
# if set, names a directory that already holds the MODEL-DESIGN records:
# they are formatted instead of measured again. Needs python3-torch;
# without it, says so and writes nothing.
set -uo pipefail
build=${1:-build}
pairs=${PROF_AB_PAIRS:-24}
steps=${PROF_AB_STEPS:-8}
truns=${PROF_AB_TOGGLE_RUNS:-6}
tsteps=${PROF_AB_TOGGLE_STEPS:-200}
k=${PROF_AB_K:-4}
cpu=${PROF_AB_CPU:-1}
read -r -a designs <<<"${PROF_AB_DESIGNS:-runs toggle}"
loom_cpu=${PROF_AB_LOOM_CPU:-0}
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
cmd() { # MODEL STEPS [PREFIX]
  echo "${3:-}/usr/bin/python3 $here/workloads/models/run.py --model $1 --mode train --batch 2 --steps $2 --threads 1"
}
one() { # NAME STEPS LOOM-CPU COMMAND-PREFIX LOOM-OPTIONS...
  local name=$1 n=$2 lcpu=$3 prefix=$4
  shift 4
  local c
  c=$(cmd "${name%%-*}" "$n" "$prefix")
  local load0 start
  # shellcheck disable=SC2086
  locked bash -c '
    cat /proc/loadavg >"$1.load0"; date -u +%Y-%m-%dT%H:%M:%SZ >"$1.start"
    shift
    taskset -c "$@"' _ "$dir/$name" "$lcpu" "$build/loom" prof "$@" --interval 10ms \
    --out "$dir/$name" -- $c >"$dir/$name.out" 2>"$dir/$name.err" ||
    { echo "prof_overhead: $name failed:"; tail -5 "$dir/$name.err"; exit 1; }
  load0=$(cut -d' ' -f1-3 "$dir/$name.load0")
  start=$(cat "$dir/$name.start")
  printf '{"start": "%s", "end": "%s", "load_before": "%s", "load_after": "%s", "loom_cpu": "%s", "loom_options": "%s --interval 10ms", "command": "%s", "cpu": "%s", "cpus": %s, "kernel": "%s"}\n' \
    "$start" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "$lcpu" "$*" "$c" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
    "$(getconf _NPROCESSORS_ONLN)" "$(uname -r)" >"$dir/$name/bench.json"
  cat "$dir/$name.out"
}
if [ "$measure" = 1 ]; then
  for m in "${models[@]}"; do
    for d in "${designs[@]}"; do
      case $d in
        runs) one "$m-runs" "$steps" "$cpu" "" --ab "$pairs" ;;
        toggle) one "$m-toggle" "$tsteps" "$cpu" "" --ab "$truns" --toggle "$k" ;;
        toggle_apart)
          one "$m-toggle_apart" "$tsteps" "$loom_cpu" "taskset -c $cpu " --ab "$truns" --toggle "$k" ;;
        toggle_free)
          one "$m-toggle_free" "$tsteps" "0-$(($(getconf _NPROCESSORS_ONLN) - 1))" "" \
            --ab "$truns" --toggle "$k" ;;
        *) echo "prof_overhead: unknown design '$d'"; exit 2 ;;
      esac
    done
  done
fi
out=${PROF_AB_OUT:-$here/docs/bench/prof_ab}
report=${PROF_AB_REPORT:-$here/docs/bench/prof.md}
mkdir -p "$out"
same=0
[ "$(cd "$dir" && pwd -P)" = "$(cd "$out" && pwd -P)" ] && same=1
for m in "${models[@]}"; do
  for d in runs toggle toggle_apart toggle_free; do
    [ -d "$dir/$m-$d" ] && [ "$same" = 0 ] || continue
    mkdir -p "$out/$m-$d"
    for f in ab.json ab_runs.csv ab_blocks.csv bench.json; do
      [ -f "$dir/$m-$d/$f" ] && cp "$dir/$m-$d/$f" "$out/$m-$d/"
    done
  done
done
/usr/bin/python3 "$here/bench/prof_overhead_report.py" "$out" "$report" "${models[@]}"
