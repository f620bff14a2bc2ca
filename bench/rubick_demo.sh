#!/bin/sh
# Rubick's live reconfiguration through loomd, with real training on this
# machine's CPUs (docs/scheduling.md, "Live reconfiguration"): loomd, run
# with --rubick, grows job a from one worker to two when job b ends.
# Writes OUT_DIR/rubick_demo.md with each run's steps and samples/s.
# usage: bench/rubick_demo.sh [BUILD_DIR [OUT_DIR]]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
out=${2:-docs/bench}
exec nice -n 10 /usr/bin/python3 "$src/bench/rubick_demo.py" "$build" "$out/rubick_demo.md"
