#!/usr/bin/env bash
# make bench: the fair queue policies side by side in loom sim (bench/fairshare_sim.py).
set -euo pipefail
build=${1:-build}
nice -n 10 /usr/bin/python3 "$(dirname "$0")/fairshare_sim.py" "$build" --out docs/bench
