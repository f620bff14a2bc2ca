#!/bin/sh
# Rubick's reconfiguration live, on this machine's CPUs with real training
# (docs/scheduling.md, "Live reconfiguration"): two lstm jobs of one gloo
# worker each start together; when the shorter one ends, the longer one is
# asked to checkpoint (its stop file), and restarts from the checkpoint with
# two workers (LOOM_PLAN), the global batch unchanged. Writes
# docs/bench/rubick_demo.md with each run's steps and samples per second.
# usage: bench/rubick_demo.sh [OUT_DIR]
set -eu
out=${1:-docs/bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # NAME PLAN TOTAL_STEPS
    LOOM_PLAN=$2 nice -n 10 /usr/bin/python3 workloads/models/train_plan.py --model lstm \
        --global-batch 32 --input-size 32 --checkpoint "$tmp/$1.ckpt" --total-steps "$3" \
        2> "$tmp/$1.err"
}
start=$(date +%s)
run a '{"workers": 1}' 80 > "$tmp/a1.json" &
apid=$!
run b '{"workers": 1}' 20 > "$tmp/b.json"
b_end=$(($(date +%s) - start))
touch "$tmp/a.ckpt.stop" # the scheduler's checkpoint request
wait "$apid"
run a '{"workers": 2}' 80 > "$tmp/a2.json"
a_end=$(($(date +%s) - start))
{
    echo "# Rubick live reconfiguration demo"
    echo
    echo "Command: \`bench/rubick_demo.sh\`. Two lstm jobs (global batch 32, sequence 32), one gloo"
    echo "worker of one thread each; job b runs 20 steps, job a 80. When b ends, a checkpoints at"
    echo "the end of its step, and restarts from its checkpoint with two workers."
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end: shared with other developers'"
    echo "builds, so the rates are noisy. Date: $(date -u +%Y-%m-%dT%H:%MZ)."
    echo
    echo "| run | plan | steps | samples/s |"
    echo "|---|---|---|---|"
    for r in b a1 a2; do
        /usr/bin/python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print("| %s | %d worker(s), accumulation %d | %d..%d%s | %.2f |" % (sys.argv[2], d["workers"],
      d["accumulation"], d["first_step"], d["step"], " (checkpointed)" if d["checkpointed"] else "",
      d["samples_per_s"]))' "$tmp/$r.json" "$r"
    done
    echo
    echo "b ended after ${b_end} s; a ended after ${a_end} s (from the start of both)."
} > "$out/rubick_demo.md"
echo "wrote $out/rubick_demo.md"
