#!/usr/bin/env bash
# bench/prof_overhead_zoo.sh: the profiler's overhead at 100 Hz on every
# model of the zoo, as `loom prof` runs by default (nothing pinned: the
# `toggle_free` design of bench/prof_overhead.sh), in rounds: each round is
# one campaign of every model, one model after the other, and its records
# go to OUT/ROUND-STAMP/MODEL-toggle_free/. bench/prof_overhead_campaigns.py
# pools the rounds with the campaign as the unit.
#
#   bash bench/prof_overhead_zoo.sh BUILD_DIR OUT_DIR [ROUNDS]
#
# ROUNDS (default 5) is fixed before the first one runs; nothing here looks
# at a result. Per model, the steps of each of the 6 runs are chosen so a
# campaign takes about a minute on one core at batch 2 (STEPS below; a
# multiple of 16, so that every run holds whole on-off-off-on sets of
# 4-step blocks). PROF_AB_MODELS narrows the models. Needs python3-torch.
set -uo pipefail
build=${1:?usage: prof_overhead_zoo.sh BUILD_DIR OUT_DIR [ROUNDS]}
out=${2:?usage: prof_overhead_zoo.sh BUILD_DIR OUT_DIR [ROUNDS]}
rounds=${3:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
declare -A STEPS=([resnet18]=208 [resnet50]=96 [vgg16]=16 [mobilenet_v2]=208 [vit]=160
  [bert]=160 [gpt2]=64 [lstm]=208 [dlrm]=800)
read -r -a models <<<"${PROF_AB_MODELS:-resnet18 resnet50 vgg16 mobilenet_v2 vit bert gpt2 lstm dlrm}"
mkdir -p "$out"
for ((r = 1; r <= rounds; r++)); do
  stamp=$(date -u +%Y-%m-%dT%H%M%S)-zoo-free
  mkdir -p "$out/$stamp"
  for m in "${models[@]}"; do
    s=${STEPS[$m]:?unknown model $m}
    echo "round $r/$rounds: $m ($s steps x 6 runs) -> $out/$stamp"
    PROF_AB_OUT="$out/$stamp" PROF_AB_REPORT="$out/$stamp/.report-$m.md" PROF_AB_MODELS="$m" \
      PROF_AB_DESIGNS=toggle_free PROF_AB_TOGGLE_STEPS="$s" \
      bash "$here/bench/prof_overhead.sh" "$build" >"$out/$stamp/.log-$m.txt" 2>&1 ||
      { echo "prof_overhead_zoo: $m failed (see $out/$stamp/.log-$m.txt)"; exit 1; }
  done
done
