#!/usr/bin/env bash
# loom gen --slurm against a real single-node Slurm on loopback (started
# here by scripts/slurm/cluster.sh, 4 fake GPUs through gres): every
# generated job lands in squeue, once, with the gres its catalog job asks
# for. Jobs are submitted held (--sbatch-arg=--hold) so that they stay in
# the queue to be looked at; they are cancelled at the end.
set -euo pipefail
B=${LOOM_BUILD_DIR:-build}
SRC=${LOOM_SOURCE_DIR:-$(pwd)}
LOOM=$(cd "$B" && pwd)/loom
PY=/usr/bin/python3
dir=$(mktemp -d /tmp/loom-gen-slurm.XXXXXX)
# Ports of our own: other worktrees may run a test cluster at the same time.
# Below the ephemeral range (32768-60999), where an outgoing connection may
# already hold the port.
base=$((20000 + RANDOM % 12000))
export SLURM_CTLD_PORT=$base SLURM_SLURMD_PORT=$((base + 1))
cleanup() {
  rc=$?
  if [ "$rc" -ne 0 ] && [ -d "$dir/log" ]; then
    echo "gen_slurm: failed ($rc); the cluster's logs:" >&2
    tail -n 20 "$dir"/log/* >&2 || true
  fi
  if [ -n "${SLURM_CONF:-}" ]; then scancel -u root >/dev/null 2>&1 || true; fi
  "$SRC/scripts/slurm/cluster.sh" down "$dir" || true
  rm -rf "$dir"
}
trap cleanup EXIT
eval "$("$SRC/scripts/slurm/cluster.sh" up "$dir" 1 4)"

cat >"$dir/catalog.json" <<'EOF'
{
  "version": 1,
  "defaults": {"executable": "/bin/sleep", "arguments": ["${secs}"],
               "resources": {"cpus": 1, "memory": "256MiB"}, "time_limit": "5m",
               "parameters": {"secs": {"type": "int", "min": 1, "max": 3}}},
  "jobs": [
    {"name": "one-gpu", "resources": {"gpus": 1}, "weight": 2},
    {"name": "two-gpu", "resources": {"gpus": 2}, "weight": 1},
    {"name": "cpu-only", "resources": {"gpus": 0}, "weight": 1}
  ]
}
EOF
cd "$dir"
"$LOOM" gen --catalog catalog.json --rate 50/s --count 12 --seed 4 --template-kind slurm \
  --slurm --sbatch-arg=--hold --json >gen.json
squeue -h -o '%i|%j|%b|%T' >queue.txt
$PY - <<'EOF'
import json
s = json.load(open("gen.json"))
assert s["count"] == 12 and s["ok"] == 12 and s["failed"] == 0, s
rows = [l.split("|") for l in open("queue.txt").read().split("\n") if l]
assert len(rows) == 12, rows
assert len({r[0] for r in rows}) == 12, "12 distinct Slurm jobs"
want = {"one-gpu": "gpu:1", "two-gpu": "gpu:2"}
seen = {}
for jid, name, gres, state in rows:
    seen[name] = seen.get(name, 0) + 1
    assert state == "PENDING", (jid, state)
    if name in want:
        assert gres.endswith(want[name]), (name, gres)
    else:
        assert "gpu" not in gres, (name, gres)
chosen = {k: v["chosen"] for k, v in s["jobs"].items() if v["chosen"]}
assert seen == chosen, (seen, chosen)
print("squeue:", seen)
EOF
echo "gen_slurm: ok"
