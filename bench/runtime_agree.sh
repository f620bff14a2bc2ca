#!/usr/bin/env bash
# bench/runtime_agree: random traces replayed live through loomd and through
# the simulator; docs/bench/runtime_agree.md says how many starts agree.
#
#   bash bench/runtime_agree.sh BUILD_DIR [JOBS]     (called by scripts/run-bench.sh)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
exec /usr/bin/python3 "$src/bench/runtime_agree.py" "$build" "$src/docs/bench/runtime_agree.md" \
    "${2:-20}"
