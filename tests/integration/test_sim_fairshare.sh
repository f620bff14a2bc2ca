#!/usr/bin/env bash
# The fair queue policies in loom sim --mode dynamic, on a constructed
# overloaded workload: one node of 4 GPUs, 400 one-GPU jobs of 40 s, one
# every 2 s (five times what the node can run), owners drawn by --users and
# --user-skew (seeded). Judged on each user's part of the GPU time while
# every user has a job waiting:
# - 2 users at 4:1 (--user-skew 2: Zipf 1 : 1/4): fifo about 4:1;
#   fairshare, tiresias+fairshare and drf within 5% of 1:1;
# - 3 users (uniform), user k in account 1 + (k-1) % 2 (users 1 and 3 in
#   account 1, user 2 alone in account 2): fairshare by user gives each
#   user a third; by account, user 2 gets half;
# - bad --accounts values and queue policy spellings are usage errors.
set -euo pipefail
loom="${LOOM_BUILD_DIR:-build}/loom"
tmp=$(mktemp -d /tmp/loom-sim-fair.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/nodes.csv" <<'CSV'
sn,cpu_milli,memory_mib,gpu,model
n0,64000,262144,4,V100
CSV
{
  echo "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
  for i in $(seq 0 399); do t=$((i * 2)); echo "p$i,1000,1024,1,1000,,LS,Running,$t,$((t + 40)),$t"; done
} > "$tmp/pods.csv"

sim() { "$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy bestfit --mode dynamic --json "$@"; }

for q in fifo fairshare:1m tiresias+fairshare:1m drf; do
  sim --users 2 --user-skew 2 --queue "$q" > "$tmp/two-$q.json"
done
for q in fairshare:1m fairshare:1m,by=account; do
  sim --users 3 --user-skew 0 --accounts 2 --queue "$q" > "$tmp/three-$q.json"
done
/usr/bin/python3 - "$tmp" <<'PY' || fail "parts of the GPU time"
import json, sys
d = sys.argv[1]
def get(name):
    return json.load(open(f"{d}/{name}.json"))["bestfit"]
for q in ("fifo", "fairshare:1m", "tiresias+fairshare:1m", "drf"):
    r = get("two-" + q)
    p = r["user_contended_gpu_part"]
    assert r["completed"] == 400 and r["contended_s"] > 500, (q, r)
    assert abs(sum(p) - 1) < 1e-3 and abs(sum(r["user_gpu_part"]) - 1) < 1e-3, (q, r)
    if q == "fifo":
        assert 0.72 < p[0] < 0.88, (q, p)  # as submitted, about 4:1
    else:
        assert abs(p[0] - 0.5) <= 0.025, (q, p)  # 1:1 within 5%
    print(q, "user 1 while both wait: %.3f" % p[0])
u = get("three-fairshare:1m")["user_contended_gpu_part"]
a = get("three-fairshare:1m,by=account")["user_contended_gpu_part"]
assert all(abs(x - 1 / 3) < 0.03 for x in u), u
assert abs(a[1] - 0.5) < 0.03 and abs(a[0] + a[2] - 0.5) < 0.03, a
print("by user", u, "by account", a)
PY

for bad in "--users 2 --accounts 0" "--users 2 --accounts 65" "--users 2 --accounts x"; do
  set +e
  # shellcheck disable=SC2086
  sim $bad > "$tmp/o" 2> "$tmp/e"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$bad: exit $rc, expected 2"
  grep -q "loom sim: --accounts" "$tmp/e" || fail "$bad: $(cat "$tmp/e")"
done
for bad in "fairshare:by=group" "drf:1h" "tiresias+fairshare:" "fairshare:1h,"; do
  set +e
  sim --users 2 --queue "$bad" > "$tmp/o" 2> "$tmp/e"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "--queue $bad: exit $rc, expected 2"
  grep -qF "'$bad'" "$tmp/e" || fail "--queue $bad: $(cat "$tmp/e")"
done
echo "ok"
