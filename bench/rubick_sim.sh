#!/bin/sh
# The Rubick experiment (docs/scheduling.md, "Rubick"): loom sim --policy
# rubick against fifo, tiresias, gandiva, elastic (Pollux/Sia-like) and
# synergy (Synergy-like) on 300 jobs from the Alibaba 2023 pod list, 64 H200
# GPUs, seeds 42-46, asked plans random and tuned, and offered loads 0.7 and
# 1.5 besides 1.0. Writes docs/bench/rubick_sim.md (tables, means over
# seeds, ratios) and the figures of seed 42 under docs/bench/rubick/.
# usage: bench/rubick_sim.sh [BUILD_DIR] [OUT_DIR]
set -eu
build=${1:-build}
out=${2:-docs/bench}
pods=openb-default # the shipped trace (workloads/traces/alibaba-gpu-2023)
policies=rubick,elastic,synergy,fifo,tiresias,gandiva
seeds="42 43 44 45 46"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/rubick"

# Means over the tables of the files given, and best baseline / rubick.
summary() {
    cat "$@" | awk -F'|' '
        /^\| [a-z]/ && $2 !~ /policy/ {
            p = $2; gsub(/ /, "", p)
            if (!(p in n)) order[++np] = p
            n[p]++; jct[p] += $4; p99[p] += $5; mk[p] += $6; ut[p] += $7; re[p] += $8; bg[p] += $9
        }
        END {
            print "| policy | avg JCT (h) | p99 JCT (h) | makespan (h) | GPU util (%) | reconfigurations / job | below guarantee (sum) |"
            print "|---|---|---|---|---|---|---|"
            bj = 1e18; bm = 1e18
            for (i = 1; i <= np; i++) {
                p = order[i]
                printf "| %s | %.2f | %.2f | %.2f | %.1f | %.2f | %d |\n", p, jct[p]/n[p], p99[p]/n[p], mk[p]/n[p], ut[p]/n[p], re[p]/n[p], bg[p]
                if (p != "rubick" && jct[p] < bj) { bj = jct[p]; bjp = p }
                if (p != "rubick" && mk[p] < bm) { bm = mk[p]; bmp = p }
            }
            printf "\nAverage JCT: best baseline %s / rubick = **%.2fx**; makespan: best baseline %s / rubick = **%.2fx**.\n", bjp, bj/jct["rubick"], bmp, bm/mk["rubick"]
        }'
}

for plans in random tuned; do
    for seed in $seeds; do
        figs=
        [ "$seed" = 42 ] && figs="--out $out/rubick/$plans"
        # shellcheck disable=SC2086
        "$build/loom" sim --mode dynamic --pods "$pods" --policy $policies --count 300 \
            --seed "$seed" --plans "$plans" $figs > "$tmp/$plans-$seed.md"
    done
done
for load in 0.7 1.5; do
    for seed in $seeds; do
        "$build/loom" sim --mode dynamic --pods "$pods" --policy $policies --count 300 \
            --seed "$seed" --load "$load" > "$tmp/load$load-$seed.md"
    done
done
{
    echo "# Rubick in loom's simulator"
    echo
    echo "Command: \`bench/rubick_sim.sh\` (each run: \`loom sim --mode dynamic --pods"
    echo "openb_pod_list_default.csv --policy $policies --count 300 --seed S --plans P\`, and"
    echo "\`--load L\` for the last two sections)."
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "shared with other developers' builds (simulated time does not depend on it)."
    echo "Date: $(date -u +%Y-%m-%dT%H:%MZ). Commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "Setup: 8 nodes x 8 H200 (workloads/devices/h200.json), 96 CPUs and 1 TiB each; 300"
    echo "whole-GPU pods of the Alibaba 2023 default pod list (first 300 with creation and run times),"
    echo "arrivals compressed to an offered load of 1.0, run times clipped to [120 s, 24 h];"
    echo "reconfiguration pause 60 s, min gain 5%, decisions every 300 s and on events; Gandiva's"
    echo "quantum 600 s; Tiresias preemptive (suspend/resume on the same GPUs, free as Gandiva's;"
    echo "K = 2, threshold 3200 GPU-s, PROMOTEKNOB 2). JCTs and makespans in hours. Before issue 32,"
    echo "tiresias only ordered the queue and its rows equalled fifo's to the last digit."
    echo
    for plans in random tuned; do
        echo "## Asked plans: $plans"
        echo
        echo "Means over seeds 42-46 (avg JCT, p99 JCT, makespan), and best baseline / rubick:"
        echo
        summary "$tmp/$plans"-*.md
        echo
        echo "Per seed:"
        echo
        for seed in $seeds; do
            echo "Seed $seed: $(head -1 "$tmp/$plans-$seed.md")"
            echo
            tail -n +3 "$tmp/$plans-$seed.md"
            echo
        done
    done
    for load in 0.7 1.5; do
        echo "## Offered load $load (random plans)"
        echo
        echo "Means over seeds 42-46, arrivals compressed to this load instead of 1.0:"
        echo
        summary "$tmp/load$load"-*.md
        echo
    done
} > "$out/rubick_sim.md"
echo "wrote $out/rubick_sim.md"
