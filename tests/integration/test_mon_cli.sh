#!/usr/bin/env bash
# loom mon, the command: exit codes, --json one object per line with rates
# after the first, --pid/--tree, --cgroup, --prom, the table.
set -uo pipefail
loom=${LOOM_BUILD_DIR:-build}/loom
fail=0
t() { # t WANT_RC DESCRIPTION -- CMD...
  local want=$1 what=$2; shift 3
  out=$("$@" 2>/tmp/loom-mon-cli-err.$$); rc=$?
  err=$(cat /tmp/loom-mon-cli-err.$$)
  if [ "$rc" -eq "$want" ]; then echo "ok   $what"; else echo "FAIL $what: rc $rc, want $want; $err"; fail=1; fi
}
py() { /usr/bin/python3 -c "$1" "$out" || { echo "FAIL $2"; fail=1; }; }

t 0 "--help" -- "$loom" mon --help
grep -q -- "--interval D" <<<"$out" || { echo "FAIL help text"; fail=1; }
t 2 "unknown option" -- "$loom" mon --bogus
t 2 "unknown group" -- "$loom" mon --groups cpu,bogus
grep -q 'unknown group "bogus"' <<<"$err" || { echo "FAIL group message: $err"; fail=1; }
t 2 "--count without --interval" -- "$loom" mon --count 3
t 2 "--pid with --cgroup" -- "$loom" mon --pid 1 --cgroup /
t 2 "bad --interval" -- "$loom" mon --interval soon
t 4 "missing pid" -- "$loom" mon --pid 2147483646
grep -q "no such process" <<<"$err" || { echo "FAIL pid message: $err"; fail=1; }
t 4 "missing cgroup" -- "$loom" mon --cgroup /nonexistent/loom-cgroup

t 0 "table" -- "$loom" mon
grep -q "^memory   total " <<<"$out" || { echo "FAIL table has no memory line"; fail=1; }
grep -q "^power    unavailable: \|^power    intel-rapl" <<<"$out" || { echo "FAIL table power line"; fail=1; }

t 0 "--json --interval --count 3" -- "$loom" mon --json --groups cpu,net --interval 50ms --count 3
py '
import json, sys
lines = sys.argv[1].strip().split("\n")
assert len(lines) == 3, len(lines)
objs = [json.loads(l) for l in lines]
assert "interval_seconds" not in objs[0]
for o in objs[1:]:
    assert 0.04 <= o["interval_seconds"] < 5, o["interval_seconds"]
    assert 0 <= o["cpu"]["busy_fraction"] <= 1
    assert set(o) == {"timestamp", "monotonic_ns", "interval_seconds", "cpu", "net"}, set(o)
assert objs[0]["monotonic_ns"] < objs[1]["monotonic_ns"] < objs[2]["monotonic_ns"]
' "json readings"
echo "ok   json readings checked"

t 0 "--pid --tree --json" -- "$loom" mon --pid $$ --tree --json
py '
import json, sys
o = json.loads(sys.argv[1])
assert o["tree"] and o["processes"] >= 1 and o["comm"] == "bash", o
' "pid json"
t 0 "--pid table" -- "$loom" mon --pid $$
grep -q "^pid $$ (bash)" <<<"$out" || { echo "FAIL pid table: $out"; fail=1; }

cg=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
if [ -n "$cg" ]; then
  t 0 "--cgroup (cgroup2 root) --json" -- "$loom" mon --cgroup "$cg" --json
  py '
import json, sys
o = json.loads(sys.argv[1])
for k in ("cpu", "memory", "io"):
    assert k in o
m = o["memory"]["current"]
assert m["available"] or len(m["reason"]) > 10, m
' "cgroup json"
fi

t 0 "--prom" -- "$loom" mon --prom --groups cpu,memory
grep -q "^# TYPE loom_cpu_seconds_total counter$" <<<"$out" || { echo "FAIL prom TYPE"; fail=1; }
grep -q "^loom_memory_total_bytes [0-9]" <<<"$out" || { echo "FAIL prom memory"; fail=1; }

t 0 "--prom --pid" -- "$loom" mon --prom --pid $$ --tree
grep -q "^loom_job_process_processes{job_id=\"$$\"} [1-9]" <<<"$out" || { echo "FAIL job prom: $out"; fail=1; }
lint=$(promtool check metrics <<<"$out" 2>&1) && [ -z "$lint" ] || { echo "FAIL promtool (pid): $lint"; fail=1; }
if [ -n "$cg" ]; then
  t 0 "--prom --cgroup" -- "$loom" mon --prom --cgroup "$cg"
  lint=$(promtool check metrics <<<"$out" 2>&1) && [ -z "$lint" ] || { echo "FAIL promtool (cgroup): $lint"; fail=1; }
fi

rm -f /tmp/loom-mon-cli-err.$$
exit $fail
