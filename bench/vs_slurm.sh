#!/usr/bin/env bash
# bench/vs_slurm: one workload (bench/vs_slurm.jsonl) through a real Slurm
# (scripts/slurm/netns-cluster.sh: sched/backfill, select/cons_tres, GPUs as
# GRES), through loomd (local executor, the same nodes) and through
# `loom sim --mode dynamic`; docs/bench/vs_slurm.md gets the table.
#
#   bash bench/vs_slurm.sh BUILD_DIR [JOBS]   (JOBS: the workload's first JOBS jobs;
#                                              default all 200, about 30 minutes)
#
# The Slurm part needs root (network namespaces) and holds
# /tmp/loom-slurm.lock while it runs (other Slurm tests take it too); without
# root it is left out. Not part of `make test`; `make bench` runs it (about
# half an hour).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
for exe in loom loomd loom-shepherd bench_vs_slurm_sim; do
  [ -x "$build/$exe" ] || { echo "bench/vs_slurm: $build/$exe missing: build it first (ninja -C $build)" >&2; exit 1; }
done
parts=sim,loomd,slurm
if [ "$(id -u)" != 0 ]; then
  echo "bench/vs_slurm: no Slurm part: needs root for network namespaces" >&2
  parts=sim,loomd
fi
cd "$src"
exec /usr/bin/python3 bench/vs_slurm.py run "$build" bench/vs_slurm.jsonl docs/bench/vs_slurm.md \
  ${2:+"$2"} --parts "$parts"
