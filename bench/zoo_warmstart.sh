#!/usr/bin/env bash
# The warm-start experiment (docs/zoo.md, "The experiment"): trains 24
# architectures into a zoo and 12 new ones x 3 seeds cold and warm on the
# CPU (digits from python3-sklearn), then writes docs/bench/zoo_warmstart.md,
# .json and .png. About 20 minutes on a shared 2-core machine, at nice 10.
#   bench/zoo_warmstart.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
out=$(mktemp -d /tmp/loom-zoo-exp-XXXXXX)
trap 'rm -rf "$out"' EXIT
nice -n 10 /usr/bin/python3 workloads/zoo/experiment.py --loom "$build/loom" --out "$out"
cp "$out/results.json" docs/bench/zoo_warmstart.json
cp "$out/speedup.png" docs/bench/zoo_warmstart.png
# keep the hand-written reading below the marker
notes=$(sed -n '/<!-- notes -->/,$p' docs/bench/zoo_warmstart.md 2>/dev/null | tail -n +2 || true)
/usr/bin/python3 workloads/zoo/report.py docs/bench/zoo_warmstart.json docs/bench/zoo_warmstart.md
[ -z "$notes" ] || printf '%s\n' "$notes" >> docs/bench/zoo_warmstart.md
