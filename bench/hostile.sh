#!/usr/bin/env bash
# Lock-out latency and start-up check cost (issue 18): writes docs/bench/hostile.md.
set -euo pipefail
build=${1:-build}
nice -n 10 /usr/bin/python3 "$(dirname "$0")/hostile.py" "$build" --out docs/bench
