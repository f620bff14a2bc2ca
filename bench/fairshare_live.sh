#!/usr/bin/env bash
# make bench: fair share with real jobs (bench/fairshare_live.py; needs root,
# else it says so and exits 0).
exec /usr/bin/python3 "$(dirname "$0")/fairshare_live.py" "${1:-build}" --out docs/bench
