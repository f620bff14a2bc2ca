#!/bin/sh
# The outside review of the Rubick experiment (issue 33), reproduced: the
# baselines as docs/bench/rubick_sim.md ran them (each job's asked plan,
# drawn at random or tuned) beside the same baselines given the best plan
# at admission (NAME+plan: the same work, at the plan the model predicts
# best for the asked GPUs and CPUs), with the GPU-hours each spends and
# what choosing at admission alone gains. Seeds 42-46, as the review.
# usage: bench/rubick_review.sh [BUILD_DIR] [OUT_FILE]
set -eu
build=${1:-build}
outf=${2:-docs/bench/rubick_review.md}
pods=openb-default
base="elastic synergy fifo tiresias gandiva"
policies=rubick
for p in $base; do policies="$policies,$p"; done
for p in $base; do policies="$policies,$p+plan"; done
seeds="42 43 44 45 46"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Means over the seeds' tables, and the best baseline of each kind / rubick.
summary() {
    cat "$@" | awk -F'|' '
        /^\| [a-z]/ && $2 !~ /policy/ {
            p = $2; gsub(/ /, "", p)
            if (!(p in n)) order[++np] = p
            n[p]++; jct[p] += $4; mk[p] += $6; ut[p] += $7; re[p] += $8; bg[p] += $9; gh[p] += $10
        }
        END {
            print "| policy | avg JCT (h) | makespan (h) | GPU util (%) | reconfigurations / job | below guarantee (sum) | GPU-hours |"
            print "|---|---|---|---|---|---|---|"
            ba = bp = ma = mp = 1e18
            for (i = 1; i <= np; i++) {
                p = order[i]
                printf "| %s | %.2f | %.2f | %.1f | %.2f | %d | %.0f |\n", p, jct[p]/n[p], mk[p]/n[p], ut[p]/n[p], re[p]/n[p], bg[p], gh[p]/n[p]
                if (p == "rubick") continue
                if (p ~ /\+plan$/) {
                    if (jct[p] < bp) { bp = jct[p]; bpp = p }
                    if (mk[p] < mp) { mp = mk[p]; mpp = p }
                } else {
                    if (jct[p] < ba) { ba = jct[p]; bap = p }
                    if (mk[p] < ma) { ma = mk[p]; map = p }
                }
            }
            printf "\nAsked-plan baselines: best avg JCT %s / rubick = **%.2fx**, best makespan %s / rubick = **%.2fx**.\n", bap, ba/jct["rubick"], map, ma/mk["rubick"]
            printf "Best-plan-at-admission baselines: best avg JCT %s / rubick = **%.2fx**, best makespan %s / rubick = **%.2fx**.\n", bpp, bp/jct["rubick"], mpp, mp/mk["rubick"]
        }'
    echo
    echo "What choosing at admission gains, per seed (the workload's line):"
    echo
    for f in "$@"; do
        echo "- seed $(sed -n 's/.*, seed \([0-9]*\).*/\1/p' "$f"): $(grep '^At admission' "$f")"
    done
}

for plans in random tuned; do
    for seed in $seeds; do
        "$build/loom" sim --mode dynamic --pods "$pods" --policy "$policies" --count 300 \
            --seed "$seed" --plans "$plans" > "$tmp/$plans-$seed.md"
    done
done
{
    echo "# The review of the Rubick experiment, reproduced"
    echo
    echo "Command: \`bench/rubick_review.sh\` (each run: \`loom sim --mode dynamic --pods"
    echo "openb-default --policy $policies --count 300 --seed S --plans P\`, seeds 42-46)."
    echo "Date: $(date -u +%Y-%m-%dT%H:%MZ). Commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo
    echo "NAME+plan is the baseline NAME given, at admission, the plan the model predicts best for"
    echo "the job's asked GPUs and CPUs, doing the same work (samples) as with its asked plan."
    echo "GPU-hours: GPU time held by jobs (utilisation x 64 GPUs x makespan)."
    echo "Seed 42's run: $(head -1 "$tmp/random-42.md")."
    for plans in random tuned; do
        echo
        echo "## Asked plans: $plans"
        echo
        echo "Means over seeds 42-46:"
        echo
        summary "$tmp/$plans"-*.md
        echo
        echo "Seed 42:"
        echo
        tail -n +5 "$tmp/$plans-42.md"
    done
} > "$outf"
echo "wrote $outf"
