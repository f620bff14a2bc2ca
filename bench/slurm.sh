#!/usr/bin/env bash
# bench/slurm: jobs placed per second through loomd onto Slurm, versus plain
# sbatch of the same jobs, in the same run on the same three-node Slurm
# (scripts/slurm/netns-cluster.sh). Figures go to docs/bench/slurm.md.
#
#   bash bench/slurm.sh BUILD_DIR [JOBS]     (called by scripts/run-bench.sh)
#
# Needs root (network namespaces). Slurm's daemons use fixed ports: do not
# run it while a Slurm test runs.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
jobs=${2:-200}
src=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "bench/slurm: skipped: needs root for network namespaces" >&2
  exit 0
fi
exec /usr/bin/python3 "$src/bench/slurm_bench.py" "$build" "$jobs" "$src/docs/bench/slurm.md"
