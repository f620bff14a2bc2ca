#!/usr/bin/env bash
# make run: the main demo on the embedded default. Grows with the project;
# today it shows what is built.
set -euo pipefail
build=${1:-build}
"$build/loom" version
"$build/loomd" --version

# loomd and the job queue: a daemon in a temporary state directory, the CLI
# over its Unix socket (the default address), then a clean stop.
state=$(mktemp -d /tmp/loom-demo-XXXXXX)
export LOOM_STATE_DIR=$state
"$build/loomd" --listen 127.0.0.1:0 --log-level warn &
loomd_pid=$!
trap 'kill $loomd_pid 2>/dev/null || true; wait $loomd_pid 2>/dev/null || true; rm -rf "$state"' EXIT
for _ in $(seq 200); do [ -s "$state/loomd.url" ] && break; sleep 0.05; done
printf '#!/bin/bash\npython train.py --epochs 3\n' > "$state/train.sh"
echo "== loom submit / jobs / cancel / show / info (loomd at $(cat "$state/loomd.url"))"
"$build/loom" submit "$state/train.sh" --gpus 2 --mem 16GiB --time 2h --label team=vision
"$build/loom" submit "$state/train.sh" --name finetune --gpu-share 0.25 --submit-id demo-1
"$build/loom" submit "$state/train.sh" --name finetune --gpu-share 0.25 --submit-id demo-1
"$build/loom" jobs
"$build/loom" cancel 1
"$build/loom" show 1
"$build/loom" info
kill -TERM $loomd_pid && wait $loomd_pid && echo "loomd stopped cleanly"
