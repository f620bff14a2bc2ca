#!/usr/bin/env bash
# loom sim --users N --user-skew S (dynamic mode): owners drawn for the
# trace's tasks (seeded Zipf), each user's mean JCT and Jain's index over
# them, in the table and in --json; the same seed gives the same owners;
# Jain's index agrees with the per-user figures; fair share orders the
# congested queue differently from FIFO; bad values are usage errors.
set -euo pipefail
loom="${LOOM_BUILD_DIR:-build}/loom"
tmp=$(mktemp -d /tmp/loom-sim-users.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/nodes.csv" <<'CSV'
sn,cpu_milli,memory_mib,gpu,model
n0,64000,65536,1,V100
CSV
{
  echo "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
  for i in $(seq 0 29); do echo "p$i,1000,1024,1,1000,,LS,Running,$i,$((i + 10)),$i"; done
} > "$tmp/pods.csv"

sim() { "$loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy bestfit --mode dynamic "$@"; }

out=$(sim --users 3 --user-skew 1)
echo "$out" | grep -Eq "users 3, Jain's index of mean JCT 0\.[0-9]{3}; mean JCT s by user:( [0-9]+){3}$" ||
  fail "no users line: $out"
[ "$(sim --users 3 --user-skew 1)" = "$out" ] || fail "same seed, other owners"

json=$(sim --users 3 --user-skew 1 --json --queue fifo)
fair=$(sim --users 3 --user-skew 1 --json --queue fairshare:10s)
/usr/bin/python3 - "$json" "$fair" <<'PY' || fail "json: $json / $fair"
import json, sys
fifo, fair = (json.loads(a)["bestfit"] for a in sys.argv[1:3])
for r in (fifo, fair):
    u = r["user_mean_jct_s"]
    assert r["users"] == 3 and len(u) == 3, r
    done = [x for x in u if x > 0]
    jain = sum(done) ** 2 / (len(done) * sum(x * x for x in done))
    assert abs(jain - r["jain_jct"]) < 1e-4, (jain, r["jain_jct"])  # JSON keeps 6 digits
    assert r["completed"] == 30, r
# the queue is congested (30 one-GPU jobs of 10 s on one GPU): fair share
# reorders it, so some user's mean JCT changes, the total work does not
assert fifo["user_mean_jct_s"] != fair["user_mean_jct_s"], (fifo, fair)
assert abs(fifo["makespan_s"] - fair["makespan_s"]) < 1e-6
PY

for bad in "--users 0" "--users 65" "--users 2 --user-skew -1" "--users 2 --user-skew x"; do
  set +e
  # shellcheck disable=SC2086
  sim $bad > "$tmp/o" 2> "$tmp/e"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$bad: exit $rc, expected 2"
  grep -q "loom sim: --user" "$tmp/e" || fail "$bad: $(cat "$tmp/e")"
done
echo "ok"
