#!/usr/bin/env bash
# loom sim end to end on a tiny hand-built trace: table, --json, --out CSVs,
# --plot figures, dynamic mode, and the exit codes for bad input and usage.
set -euo pipefail
loom="${LOOM_BUILD_DIR:-build}/loom"
tmp=$(mktemp -d /tmp/loom-sim-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/nodes.csv" <<'CSV'
sn,cpu_milli,memory_mib,gpu,model
n0,8000,65536,2,V100
n1,16000,65536,4,T4
CSV
cat > "$tmp/pods.csv" <<'CSV'
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p0,2000,1024,1,600,,LS,Running,0,100,0
p1,1000,1024,1,1000,,LS,Running,5,50,5
p2,4000,1024,0,0,,LS,Running,7,30,7
p3,2000,1024,2,1000,T4,LS,Running,9,90,9
CSV

out=$("$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy fgd,bestfit --seeds 1-3 --check)
echo "$out" | grep -q '^fgd  *3 ' || fail "no fgd row: $out"
echo "$out" | grep -q '^bestfit  *3 ' || fail "no bestfit row: $out"

"$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy fgd,random --seeds 1-2 \
    --json --out "$tmp/out" > "$tmp/out.json"
/usr/bin/python3 - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) == {"fgd", "random"}, d
for p in d.values():
    assert 0 < p["alloc_at_100"] <= 100, p
    assert p["seeds"] == 2, p
PY
[ -s "$tmp/out/fgd-seed1.csv" ] || fail "no per-arrival CSV"
head -1 "$tmp/out/fgd-seed1.csv" | grep -q '^arrival,arrived_pct,alloc_pct,frag_gpus,failed$' \
    || fail "bad CSV header"

if command -v gnuplot >/dev/null; then
    "$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy fgd,packing \
        --seeds 1-2 --out "$tmp/plot" --plot > /dev/null
    for f in alloc.svg alloc.png frag.svg frag.png; do
        [ -s "$tmp/plot/$f" ] || fail "no $f"
    done
fi

dyn=$("$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy fgd --mode dynamic \
    --queue tiresias --json --check)
echo "$dyn" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)["fgd"]; assert d["completed"]==4, d'

# Gandiva's time-slicing in the simulator (the runtime's, as loomd's): two
# whole-GPU jobs of 100 s on one GPU take turns of 30 s, so the second
# starts after 30 s instead of 90 s and the first ends at 190 s, not 100 s.
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,8000,65536,1,V100\n' > "$tmp/one.csv"
printf '%s\n' '{"id":"a","due_s":0,"duration_s":100,"gpus":1}' \
    '{"id":"b","due_s":10,"duration_s":100,"gpus":1}' > "$tmp/two.jsonl"
for ts in none 30; do
    args=(); [ "$ts" = none ] || args=(--timeslice "$ts")
    "$loom" sim --nodes "$tmp/one.csv" --pods "$tmp/two.jsonl" --policy firstfit --mode dynamic \
        --check --json "${args[@]}" > "$tmp/ts-$ts.json"
done
/usr/bin/python3 - "$tmp/ts-none.json" "$tmp/ts-30.json" <<'PY'
import json, sys
off, on = (json.load(open(p))["firstfit"] for p in sys.argv[1:])
assert off["completed"] == on["completed"] == 2, (off, on)
assert abs(off["mean_wait_s"] - 45) < 1e-6 and abs(off["mean_jct_s"] - 145) < 1e-6, off
assert abs(on["mean_wait_s"] - 10) < 1e-6 and abs(on["mean_jct_s"] - 190) < 1e-6, on
PY
set +e
"$loom" sim --nodes "$tmp/one.csv" --pods "$tmp/two.jsonl" --policy firstfit --mode dynamic \
    --timeslice -1 2>/dev/null; rc=$?
set -e
[ $rc -eq 2 ] || fail "--timeslice -1 exit $rc"

# malformed input: exit 5 and a message naming the place
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,eight,1,1,T4\n' > "$tmp/bad.csv"
set +e
msg=$("$loom" sim --nodes "$tmp/bad.csv" --pods "$tmp/pods.csv" --policy fgd 2>&1); rc=$?
set -e
[ $rc -eq 5 ] || fail "bad input exit $rc"
echo "$msg" | grep -q 'bad.csv:2:4: cpu_milli' || fail "message: $msg"
# a given target workload (learned from another job list)
"$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy fgd --workload "$tmp/pods.csv" \
    | grep -q '^fgd ' || fail "--workload"
set +e
"$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy fgd --workload "$tmp/none" \
    2>/dev/null; rc=$?
set -e
[ $rc -eq 5 ] || fail "missing workload exit $rc"
# usage errors: exit 2
set +e
"$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy tetris 2>/dev/null; rc=$?
set -e
[ $rc -eq 2 ] || fail "unknown policy exit $rc"
"$loom" sim --help | grep -q -- '--policy' || fail "help"
echo ok
