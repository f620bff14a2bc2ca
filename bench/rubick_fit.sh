#!/bin/sh
# The Rubick performance model's error on measured CPU runs of the zoo
# (docs/scheduling.md, "The performance model"): workloads/models/
# train_plan.py runs resnet18 (32x32 images) and lstm under 10 plans (1 or
# 2 gloo workers of one thread, accumulation 1/2/4, recomputation), global
# batch 32, 4 steps after 1 of warm-up; bench_rubick_fit fits the model to
# 4 plans and predicts the rest, from each plan's fastest step (the least
# disturbed by other work on a shared machine). Writes the measurements to
# OUT_DIR/rubick_fit/*.jsonl (kept: REMEASURE=1 measures again) and
# docs/bench/rubick_model_error.md.
# usage: [REMEASURE=1] bench/rubick_fit.sh [BUILD_DIR] [OUT_DIR]
set -eu
build=${1:-build}
out=${2:-docs/bench}
tmp=$out/rubick_fit
mkdir -p "$tmp"
plans='[{"workers":1,"accumulation":1},{"workers":1,"accumulation":2},
{"workers":1,"accumulation":4},{"workers":1,"accumulation":1,"recompute":true},
{"workers":1,"accumulation":4,"recompute":true},{"workers":2,"accumulation":1},
{"workers":2,"accumulation":2},{"workers":2,"accumulation":4},
{"workers":2,"accumulation":1,"recompute":true},{"workers":2,"accumulation":2,"recompute":true}]'
for m in resnet18 lstm; do
    [ -s "$tmp/$m.jsonl" ] && [ -z "${REMEASURE:-}" ] && continue
    nice -n 10 /usr/bin/python3 workloads/models/train_plan.py --model "$m" --global-batch 32 \
        --steps 4 --warmup 1 --input-size 32 --sweep "$plans" > "$tmp/$m.jsonl"
done
{
    echo "# Rubick's performance model against measured CPU steps"
    echo
    echo "Command: \`bench/rubick_fit.sh\` (train_plan.py --model M --global-batch 32 --steps 4"
    echo "--warmup 1 --input-size 32 --sweep PLANS, then bench_rubick_fit)."
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "shared with five other developers' builds (load average about 15 during the measurement),"
    echo "so step times carry that noise: each figure is the fastest of 4 steps (the means are in"
    echo "the raw lines, docs/bench/rubick_fit/)."
    echo "Measured: $(date -u -r "$tmp/lstm.jsonl" +%Y-%m-%dT%H:%MZ); report: $(date -u +%Y-%m-%dT%H:%MZ)."
    echo
    echo "Plans: 1 or 2 workers (torch.distributed, gloo, one thread each), gradient accumulation"
    echo "1/2/4, recomputation (torch.utils.checkpoint over the whole forward). Fitted on 4 plans"
    echo "(\"(fit)\"), predicted on the others; then leave-one-out over all."
    echo
    "$build/bench_rubick_fit" "$tmp/resnet18.jsonl" "$tmp/lstm.jsonl"
    echo "Raw measurements:"
    echo
    echo '```'
    cat "$tmp/resnet18.jsonl" "$tmp/lstm.jsonl"
    echo '```'
} > "$out/rubick_model_error.md"
echo "wrote $out/rubick_model_error.md"
