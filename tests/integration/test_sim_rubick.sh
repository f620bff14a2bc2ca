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

# jobs run on the model itself, which the policies know: no policy gives a job less than it asked for
out=$("$loom" sim --mode dynamic --pods "$pods" --policy rubick,elastic,synergy,fifo,gandiva \
      --count 60 --nodes-count 2 --seed 3 --truth model --fit off --out "$tmp/r")
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

# baselines given the best plan at admission: a row each, beside the asked-plan rows,
# and what choosing at admission gains
out3=$("$loom" sim --mode dynamic --pods "$pods" --policy fifo,fifo+plan,gandiva+plan \
       --count 60 --nodes-count 2 --seed 3)
for p in fifo fifo+plan gandiva+plan; do
  grep -q "^| $p | 60/60 |" <<<"$out3" || fail "no row for $p: $out3"
done
grep -q "^At admission, the best plan would make the asked GPUs" <<<"$out3" || fail "no gains: $out3"

# several seeds: each seed's table, then means with 95% intervals; --json the same as an object
out4=$("$loom" sim --mode dynamic --pods "$pods" --policy rubick,rubick-plan,fifo+plan \
       --count 40 --nodes-count 2 --seeds 3-5)
[[ $(grep -c '^40 jobs, 16 GPUs' <<<"$out4") -eq 3 ]] || fail "three seeds: $out4"
grep -q '^Means over 3 seeds with 95% intervals' <<<"$out4" || fail "no means: $out4"
grep -q '^| rubick-plan | [0-9.]* ± [0-9.]* |' <<<"$out4" || fail "no interval: $out4"
"$loom" sim --mode dynamic --pods "$pods" --policy rubick,fifo+plan --count 40 --nodes-count 2 \
  --seeds 3,4 --json > "$tmp/r.json"
python3 - "$tmp/r.json" <<'PY' || fail "json: $(cat "$tmp/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["seeds"] == [3, 4], d["seeds"]
p = d["policies"]["fifo+plan"]
assert len(p["runs"]) == 2 and p["runs"][1]["seed"] == 4 and p["runs"][0]["completed"] == 40
assert p["avg_jct_h"]["mean"] > 0 and p["avg_jct_h"]["ci95"] >= 0
assert d["policies"]["rubick"]["jct_over_first"]["mean"] == 1
PY
# one seed: the mean is the run's, with no interval
"$loom" sim --mode dynamic --pods "$pods" --policy rubick --count 40 --nodes-count 2 --seed 3 \
  --json > "$tmp/one.json"
python3 - "$tmp/one.json" <<'PY' || fail "json, one seed: $(cat "$tmp/one.json")"
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["rubick"]
assert r["avg_jct_h"]["ci95"] is None and r["avg_jct_h"]["mean"] == r["runs"][0]["avg_jct_h"]
PY
set +e
err=$("$loom" sim --policy rubick --pods "$pods" --seeds 5-3 2>&1); rc=$?
set -e
[[ $rc -eq 2 && $err == *"--seeds '5-3': expected N, A-B"* ]] || fail "seeds: $rc $err"

# jobs run on a hidden truth (the default): the guarantee column is checked against it and
# can fail; a model that halves input loading's CPU time leaves jobs below their guarantee,
# and fitting it to each job's first measured steps (the default) leaves fewer
below() {
  "$loom" sim --mode dynamic --pods "$pods" --policy rubick --count 60 --nodes-count 2 --seed 3 \
    --assumed-cpu 0.5 "$@" | awk -F'|' '/^\| rubick \|/ {gsub(/ /, "", $9); print $9}'
}
b_off=$(below --fit off); b_on=$(below)
[[ $b_off -gt 0 && $b_on -lt $b_off ]] || fail "below guarantee on the truth: $b_off unfitted, $b_on fitted"

# the same seed gives the same table
out2=$("$loom" sim --mode dynamic --pods "$pods" --policy rubick,elastic,synergy,fifo,gandiva \
       --count 60 --nodes-count 2 --seed 3 --truth model --fit off)
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
