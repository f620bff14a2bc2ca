#!/usr/bin/env bash
# make run: the whole loop on this machine.
#
# loomd with one node of 4 virtual GPUs (this machine acts as a GPU node), the
# generator submitting the demo catalog of short synthetic training jobs at a
# fixed rate, loomd scheduling them (FGD placement, fractional GPU shares),
# running them under shepherds and recording how they end; then a summary:
# jobs completed, mean wait, GPU occupancy.
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
rate=${DEMO_RATE:-4/s}
count=${DEMO_COUNT:-24}

state=$(mktemp -d /tmp/loom-demo-XXXXXX)
export LOOM_STATE_DIR=$state
"$build/loomd" --listen 127.0.0.1:0 --log-level warn \
  --node name=demo-gpu-node,cpus=16,memory=32GiB,gpus=4,gpu_type=a100,gpu_memory=80GiB \
  --placement fgd --queue-policy fifo 2>"$state/loomd.log" &
loomd_pid=$!
cleanup() {
  kill "$loomd_pid" 2>/dev/null || true
  wait "$loomd_pid" 2>/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
for _ in $(seq 200); do [ -s "$state/loomd.url" ] && break; sleep 0.05; done
[ -s "$state/loomd.url" ] || { cat "$state/loomd.log"; exit 1; }

echo "== loomd $("$build/loomd" --version | cut -d' ' -f2) at $(cat "$state/loomd.url"), state in $state"
"$build/loom" nodes
echo
echo "== loom gen: $count jobs from workloads/catalogs/demo.json at $rate into loomd"
"$build/loom" gen --catalog "$src/workloads/catalogs/demo.json" --rate "$rate" --count "$count" \
  --seed 7 --submit - --json > "$state/gen.json"
/usr/bin/python3 - "$state/gen.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"sent {r['count']} jobs: target {r['rate_target']:.3f}/s, achieved {r['rate_achieved']:.3f}/s "
      f"({r['rate_error_pct']:+.3f}%), lateness p99 {r['lateness_us']['p99']:.0f} us")
PY

echo
echo "== scheduling and running (loom jobs while they run)"
sleep 1
"$build/loom" jobs --limit 12
"$build/loom" nodes
for _ in $(seq 600); do
  left=$("$build/loom" jobs --state PENDING --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')
  run=$("$build/loom" jobs --state RUNNING --json | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')
  [ "$left" = 0 ] && [ "$run" = 0 ] && break
  sleep 0.5
done

echo
echo "== all jobs ended"
"$build/loom" jobs --all --limit 1000 > "$state/jobs.txt"
head -n 40 "$state/jobs.txt"
first=$("$build/loom" jobs --state COMPLETED --json | /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"]; print(j[0]["id"] if j else "")')
if [ -n "$first" ]; then
  echo
  echo "== loom show $first"
  "$build/loom" show "$first" > "$state/show.txt"
  head -n 28 "$state/show.txt"
fi

echo
echo "== summary"
"$build/loom" info --json > "$state/info.json"
"$build/loom" jobs --all --limit 1000 --json > "$state/jobs.json"
/usr/bin/python3 - "$state/info.json" "$state/jobs.json" <<'PY'
import datetime, json, sys
info = json.load(open(sys.argv[1]))
jobs = json.load(open(sys.argv[2]))["jobs"]
def t(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
states = {}
for j in jobs:
    states[j["state"]] = states.get(j["state"], 0) + 1
waits = [t(j["start_time"]) - t(j["submit_time"]) for j in jobs if j["start_time"]]
span = max(t(j["end_time"]) for j in jobs if j["end_time"]) - min(t(j["submit_time"]) for j in jobs)
s = info["scheduler"]
busy = s["gpu_busy_milli_seconds"] / 1000
print(f"jobs: {len(jobs)} " + ", ".join(f"{k} {v}" for k, v in sorted(states.items())))
print(f"mean wait {sum(waits) / len(waits):.2f} s, max wait {max(waits):.2f} s")
print(f"GPU occupancy over the run ({span:.1f} s): {busy / (s['gpu_milli_total'] / 1000 * span) * 100:.1f}% "
      f"({busy:.1f} GPU-seconds of {s['gpu_milli_total'] // 1000} GPUs); placement {s['placement']}, "
      f"queue {s['queue_policy']}")
PY
kill -TERM "$loomd_pid" && wait "$loomd_pid" && echo "loomd stopped cleanly"
