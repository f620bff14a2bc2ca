#!/usr/bin/env bash
# System calls loomd makes per single job.submit: runs bench_rpc_submit's
# single-call phase (CONNS keep-alive connections, default 4) and counts
# loomd's system calls over 2 s of it with `perf trace -s`, divided by the
# requests received (recvfrom calls) in the same window.
#   usage: bench/rpc_syscalls.sh [BUILD_DIR] [CONNS]
set -euo pipefail
B=${1:-build}
C=${2:-4}
out=$(mktemp -d /tmp/loom-rpc-sys.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$B/bench_rpc_submit" --jobs 30000 --conns "$C" --batch 100 --sbatch-jobs 0 --rounds 1 \
  --out "$out" > "$out/bench.log" 2>&1 &
bench=$!
pid=
for _ in $(seq 1 50); do
  pid=$(pgrep -f "$B/loomd --listen 127.0.0.1:0" | sed -n 1p || true)
  [ -n "$pid" ] && break
  sleep 0.1
done
[ -n "$pid" ] || { echo "loomd did not start" >&2; exit 1; }
sleep 1.5
perf trace -s -p "$pid" -o "$out/trace.txt" -- sleep 2 2>/dev/null
wait "$bench"
/usr/bin/python3 - "$out/trace.txt" <<'PY'
import collections, re, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'\s+(\w+)\s+(\d+)\s+\d+\s+[\d.]+', line)
    if m:
        c[m.group(1)] += int(m.group(2))
r = c['recvfrom'] or 1
print(f"requests in the window: {r}; system calls per request: {sum(c.values()) / r:.2f}")
for k, v in c.most_common(10):
    print(f"  {k:<12} {v / r:.2f}")
PY
