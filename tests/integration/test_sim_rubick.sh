#!/usr/bin/env bash
# loom sim --policy rubick end to end: the table for every policy on the
# Alibaba 2023 pod list, no job below its guarantee, the report files and
# figures under --out, and usage errors that name the option.
set -euo pipefail
B=${LOOM_BUILD_DIR:?}
SRC=${LOOM_SOURCE_DIR:-.}
loom="$(cd "$B" && pwd)/loom"
pods=openb-default # the shipped trace, found by name
tmp=$(mktemp -d /tmp/loom-rubick-it.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# From another directory: the trace and the device (h200) are loom's data,
# found from the program's location, never from the working directory.
cd "$tmp"

out=$("$loom" sim --mode dynamic --pods "$pods" --policy rubick,elastic,synergy,fifo,gandiva \
      --count 60 --nodes-count 2 --seed 3 --out "$tmp/r")
for p in rubick elastic synergy fifo gandiva; do
  row=$(grep "^| $p |" <<<"$out") || fail "no row for $p: $out"
  # every job done, none below its guarantee (last column)
  [[ $(cut -d'|' -f3 <<<"$row" | tr -d ' ') == 60/60 ]] || fail "$p: not all done: $row"
  [[ $(awk -F'|' '{gsub(/ /, "", $9); print $9}' <<<"$row") == 0 ]] || fail "$p: below: $row"
done
for f in table.md jct.csv summary.dat jct_cdf.svg makespan.svg jct_cdf.png makespan.png; do
  [[ -s "$tmp/r/$f" ]] || fail "no $f"
done
[[ $(wc -l < "$tmp/r/jct.csv") -eq $((1 + 5 * 60)) ]] || fail "jct.csv has $(wc -l < "$tmp/r/jct.csv") lines"

# the same seed gives the same table
out2=$("$loom" sim --mode dynamic --pods "$pods" --policy rubick,elastic,synergy,fifo,gandiva \
       --count 60 --nodes-count 2 --seed 3)
[[ "$out" == "$out2" ]] || fail "not deterministic"

set +e
err=$("$loom" sim --policy rubick --pods "$pods" --plans smart 2>&1); rc=$?
set -e
[[ $rc -eq 2 && $err == *"--plans 'smart': expected random or tuned"* ]] || fail "plans: $rc $err"
set +e
err=$("$loom" sim --policy rubick,pollux --pods "$pods" --count 10 2>&1); rc=$?
set -e
[[ $rc -ne 0 && $err == *"policy 'pollux'"* ]] || fail "policy: $rc $err"
"$loom" sim --policy rubick --help | grep -q -- "--reconf-cost" || fail "help"
echo ok
