#!/bin/sh
# The Rubick experiment (docs/scheduling.md, "Rubick"), after issue 33's
# review: rubick against every baseline twice (the job's asked plan, and
# NAME+plan: the best plan at admission), rubick's parts alone, jobs on a
# hidden truth with the model fitted to each job's first measured steps,
# and the sensitivity to the model's constants. 300 jobs of the Alibaba
# 2023 pod list on 64 H200 GPUs; means with 95% intervals over the
# evaluation seeds 42-51 (development used seeds 1-5 only). Writes
# docs/bench/rubick_sim.md and the figures of seed 42 under
# docs/bench/rubick/.
# usage: bench/rubick_sim.sh [BUILD_DIR] [OUT_DIR]
set -eu
build=${1:-build}
out=${2:-docs/bench}
loom="$build/loom"
pods=openb-default # the shipped trace (workloads/traces/alibaba-gpu-2023)
seeds=42-51
base="elastic synergy fifo tiresias gandiva"
asked=""
planned=""
for p in $base; do asked="$asked,$p"; planned="$planned,$p+plan"; done
main="rubick$planned$asked,rubick-plan,rubick-cpu,rubick-reconf"
sens="rubick$planned"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/rubick"
sim() { "$loom" sim --mode dynamic --pods "$pods" --count 300 --seeds "$seeds" "$@"; }

# The means table of a multi-seed run (after its "Means over" line).
means() { sed -n '/^Means over/,$p' "$1"; }

# From a --json run: the best plan-aware baseline by mean JCT, and a row
# "| label | rubick JCT | baseline | its JCT | ratio ± CI | below (rubick) |
# below (baseline) |".
row() {
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["policies"]
r = d["rubick"]
b = min((p for p in d if p.endswith("+plan")), key=lambda p: d[p]["avg_jct_h"]["mean"])
n = len(r["runs"])
f = lambda p, k: "%.2f ± %.2f" % (d[p][k]["mean"], d[p][k]["ci95"])
print("| %s | %s | %s | %s | **%s** | %s | %d | %d |" % (
    sys.argv[2], f("rubick", "avg_jct_h"), b, f(b, "avg_jct_h"), f(b, "jct_over_first"),
    f(b, "makespan_over_first"), round(r["below_guarantee"]["mean"] * n),
    round(d[b]["below_guarantee"]["mean"] * n)))
PY
}

# 1. the main table: random asked plans, drawn truth, fitted model
sim --policy "$main" --plans random --out "$out/rubick/random" > "$tmp/random.md"
sim --policy "$main" --plans random --json > "$tmp/random.json"
# 2. tuned asked plans
sim --policy "$main" --plans tuned --out "$out/rubick/tuned" > "$tmp/tuned.md"
# 3. the model's honesty and sensitivity
i=0
while read -r label opts; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    sim --policy "$sens" $opts --json > "$tmp/s$i.json"
    row "$tmp/s$i.json" "$label" >> "$tmp/sens.md"
done <<'ROWS'
truth=model,fit-off --truth model --fit off
truth=drawn,fit-off --fit off
truth=drawn,fit-on --fit on
eff-x0.5,fit-off --assumed-eff 0.5 --fit off
eff-x0.5,fit-on --assumed-eff 0.5 --fit on
eff-x2,fit-off --assumed-eff 2 --fit off
eff-x2,fit-on --assumed-eff 2 --fit on
cpu-x0.5,fit-off --assumed-cpu 0.5 --fit off
cpu-x0.5,fit-on --assumed-cpu 0.5 --fit on
cpu-x2,fit-off --assumed-cpu 2 --fit off
cpu-x2,fit-on --assumed-cpu 2 --fit on
ROWS
# 4. offered load and reconfiguration cost
for opts in "--load 0.7" "--load 1.5" "--reconf-cost 30" "--reconf-cost 180"; do
    # shellcheck disable=SC2086
    sim --policy "$sens" $opts --json > "$tmp/x.json"
    row "$tmp/x.json" "$(echo "$opts" | tr -d -)" >> "$tmp/other.md"
done
hdr="| setting | rubick avg JCT (h) | best plan-aware baseline | its avg JCT (h) | its JCT / rubick's | its makespan / rubick's | below guarantee, rubick | below guarantee, baseline |
|---|---|---|---|---|---|---|---|"
{
    cat "$(dirname "$0")/rubick_sim_head.md"
    echo
    echo "Date: $(date -u +%Y-%m-%dT%H:%MZ). Commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), shared (simulated time does not depend on it)."
    echo
    echo "## 1. Random asked plans"
    echo
    echo "Command: \`loom sim --mode dynamic --pods $pods --count 300 --seeds $seeds --plans random"
    echo "--policy $main\` (defaults: \`--truth drawn --fit on --reconf-cost 60\`)."
    echo
    means "$tmp/random.md"
    echo
    echo "Seed 42's workload: $(grep -m1 '^At admission' "$tmp/random.md")"
    echo
    echo "## 2. Tuned asked plans"
    echo
    echo "Command: the same with \`--plans tuned\` (the asked plan the best the model predicts for the asked"
    echo "GPUs: NAME+plan then equals NAME, up to the fit's error)."
    echo
    means "$tmp/tuned.md"
    echo
    echo "## 3. The model: truth, fit and sensitivity"
    echo
    echo "Command: \`loom sim --mode dynamic --pods $pods --count 300 --seeds $seeds --plans random"
    echo "--policy $sens\` with the options of each row (\`--truth\`, \`--fit\`,"
    echo "\`--assumed-eff X\`: the model's GPU efficiencies X times the truth's, \`--assumed-cpu X\`: its"
    echo "input-loading CPU time X times the truth's), \`--json\`. Intervals: 95% over the 10 seeds;"
    echo "the ratios are taken seed by seed. Below guarantee: jobs, summed over the seeds, ever given a"
    echo "configuration truly slower than the one they asked for, or ending later than at it."
    echo
    echo "$hdr"
    cat "$tmp/sens.md"
    echo
    echo "## 4. Offered load and reconfiguration cost"
    echo
    echo "Command: as in 3 with \`--load L\` or \`--reconf-cost S\` (drawn truth, fit on)."
    echo
    echo "$hdr"
    cat "$tmp/other.md"
    echo
    echo "![JCT CDF, random plans, seed 42](rubick/random/jct_cdf.svg)"
    echo "![average JCT and makespan, random plans, seed 42](rubick/random/makespan.svg)"
    echo
    # the headline, from the main run: the best plan-aware baseline over rubick
    python3 - "$tmp/random.json" "$(dirname "$0")/rubick_sim_tail.md" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["policies"]
b = min((p for p in d if p.endswith("+plan")), key=lambda p: d[p]["avg_jct_h"]["mean"])
a = min((p for p in d if p != "rubick" and "+" not in p and not p.startswith("rubick")),
        key=lambda p: d[p]["avg_jct_h"]["mean"])
f = lambda p, k: "%.2fx ± %.2f" % (d[p][k]["mean"], d[p][k]["ci95"])
t = open(sys.argv[2]).read()
for k, v in {"@BASE@": b, "@JCT@": f(b, "jct_over_first"), "@MK@": f(b, "makespan_over_first"),
             "@ABASE@": a, "@AJCT@": f(a, "jct_over_first")}.items():
    t = t.replace(k, v)
sys.stdout.write(t)
PY
} > "$out/rubick_sim.md"
echo "wrote $out/rubick_sim.md"
