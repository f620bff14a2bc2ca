#!/usr/bin/env bash
# loom gen end to end (no loomd needed): usage and input errors with their
# exit codes, a seed reproducing a run byte for byte through --out, the
# --json summary, the pacer's scheduling policy (SCHED_FIFO by default, the
# message when it is refused, --no-realtime), spin (auto, fixed, none),
# pinning (the last CPU; --no-pin) and the late-jobs-by-cause counts,
# --stdout scripts that bash accepts, trace replay of an Alibaba 2023 pod
# list, and --duration. Assertions are about what was generated, never
# about how fast.
set -euo pipefail
B=${LOOM_BUILD_DIR:-build}
SRC=${LOOM_SOURCE_DIR:-.}
TRACES=$SRC/workloads/traces/alibaba-gpu-2023 # shipped, gzip-compressed
LOOM=$B/loom
PY=/usr/bin/python3
CAT=$SRC/workloads/catalogs/demo.json
T=$(mktemp -d /tmp/loom-gen-cli.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc CODE PATTERN -- command...
  local want=$1 pat=$2; shift 3
  set +e; "$@" >"$T/out" 2>"$T/err"; local rc=$?; set -e
  [ "$rc" = "$want" ] || { cat "$T/err" >&2; fail "$* exited $rc, expected $want"; }
  grep -q -- "$pat" "$T/err" || { cat "$T/err" >&2; fail "$*: stderr lacks '$pat'"; }
}

"$LOOM" gen --help | grep -q -- "--on-backlog" || fail "help"

# usage errors: 2
expect_rc 2 "catalog FILE is required" -- "$LOOM" gen --rate 10/s --count 3
expect_rc 2 "rate" -- "$LOOM" gen --catalog "$CAT" --rate 10/fortnight --count 3
expect_rc 2 "needs --cv" -- "$LOOM" gen --catalog "$CAT" --rate 10/s --count 3 --process gamma
expect_rc 2 "count N or --duration" -- "$LOOM" gen --catalog "$CAT" --rate 10/s
expect_rc 2 "one sink" -- "$LOOM" gen --catalog "$CAT" --rate 10/s --count 3 --stdout --dry-run
expect_rc 2 "on-backlog 'later'" -- "$LOOM" gen --catalog "$CAT" --rate 10/s --count 3 --on-backlog later
# malformed input: 5, with the place
printf '{"version": 1,\n "jobs": [{"name": "x", "executable": "/bin/true", "wieght": 2}]}\n' >"$T/bad.json"
expect_rc 5 "bad.json:2:" -- "$LOOM" gen --catalog "$T/bad.json" --rate 10/s --count 3
expect_rc 5 "no column 'creation_time'" -- "$LOOM" gen --catalog "$CAT" --process trace \
  --trace openb-multigpu20 --time-scale 0.001
printf 't\n1\n\n2\nabc\n' >"$T/t.csv"
expect_rc 5 "t.csv:5:1: 't' is 'abc'" -- "$LOOM" gen --catalog "$CAT" --process trace \
  --trace "$T/t.csv" --trace-column t --time-scale 0.001

# a seed reproduces the jobs exactly; another seed does not. Each run's
# submit ids carry its own random nonce (issue 30 finding 8: not predictable
# from seed, tag and index); --run-nonce of an earlier run gives its ids.
for d in a b; do
  "$LOOM" gen --catalog "$CAT" --rate 5000/s --count 60 --seed 7 --out "$T/$d" --json >"$T/$d.json"
done
nonce=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_nonce"])' "$T/a.json")
"$LOOM" gen --catalog "$CAT" --rate 5000/s --count 60 --seed 7 --run-nonce "$nonce" --out "$T/n" \
  >/dev/null
"$LOOM" gen --catalog "$CAT" --rate 5000/s --count 60 --seed 8 --out "$T/c" >/dev/null
# the scripts differ only in the submit id the templates put in
# (LOOM_SUBMIT_ID, the k8s label loom/submit-id); with the first run's nonce,
# not at all
diff -r -x manifest.jsonl -I '^export LOOM_SUBMIT_ID=' -I '^ *loom/submit-id: ' "$T/a" "$T/b" \
  >/dev/null \
  || fail "same seed, different scripts"
diff -r -x manifest.jsonl "$T/a" "$T/b" >/dev/null && fail "another run, the same submit ids"
diff -r -x manifest.jsonl "$T/a" "$T/n" >/dev/null || fail "same seed and nonce, different scripts"
diff -r -x manifest.jsonl "$T/a" "$T/c" >/dev/null && fail "another seed, same scripts"
[ "$(ls "$T/a" | grep -c '^job-')" = 60 ] || fail "60 scripts expected"
$PY - "$T" <<'EOF'
import json, sys
t = sys.argv[1]
def load(d):
    rows = [json.loads(l) for l in open(f"{t}/{d}/manifest.jsonl")]
    rows.sort(key=lambda r: r["index"])
    return rows
a, b, n = load("a"), load("b"), load("n")
assert [r["index"] for r in a] == list(range(60)), "every index once"
for x, y, z in zip(a, b, n):
    for k in ("due_s", "job", "resources", "file"):
        assert x[k] == y[k] == z[k], (k, x, y)
    assert x["submit_id"] != y["submit_id"], ("same seed, same submit_id", x, y)
    assert x["submit_id"] == z["submit_id"], ("--run-nonce: another submit_id", x, z)
    assert x["send_s"] >= x["due_s"] - 1e-9
assert len({r["submit_id"] for r in a + b}) == 120, "no submit_id twice"
s = json.load(open(f"{t}/a.json"))
assert s["run_nonce"] != json.load(open(f"{t}/b.json"))["run_nonce"], "one nonce per run"
for k in ("count", "rate_target", "rate_achieved", "rate_error_pct", "lateness_us", "jobs",
          "chi_square"):
    assert k in s, k
assert s["count"] == 60 and s["sent"] == 60 and s["ok"] == 60, s
assert s["rate_target"] == 5000.0
for k in ("p50", "p99", "max"):
    assert s["lateness_us"][k] >= 0
assert sum(j["chosen"] for j in s["jobs"].values()) == 60
c = s["chi_square"]
assert c["dof"] == len(s["jobs"]) - 1 and 0 <= c["p_value"] <= 1, c
EOF

# the pacer's policy: SCHED_FIFO by default when the process may, else the
# normal policy and a message saying why; --no-realtime asks for the normal
# policy quietly. setpriv takes CAP_SYS_NICE away to see the refusal.
may_rt=$($PY -c 'import os
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)); print(1)
except PermissionError:
    print(0)')
"$LOOM" gen --catalog "$CAT" --rate 2000/s --count 40 --seed 4 --json >"$T/rt.json" 2>"$T/rt.err"
"$LOOM" gen --catalog "$CAT" --rate 2000/s --count 40 --seed 4 --json --no-realtime --spin 30 \
  >"$T/nrt.json" 2>"$T/nrt.err"
"$LOOM" gen --catalog "$CAT" --rate 2000/s --count 40 --seed 4 --json --spin 0 --no-pin \
  >"$T/s0.json" 2>/dev/null
if [ "$may_rt" = 1 ] && command -v setpriv >/dev/null; then
  setpriv --bounding-set -sys_nice "$LOOM" gen --catalog "$CAT" --rate 2000/s --count 40 --seed 4 \
    --json >"$T/denied.json" 2>"$T/denied.err"
  grep -q "SCHED_FIFO needs CAP_SYS_NICE" "$T/denied.err" || fail "no message when SCHED_FIFO is refused"
  $PY -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['realtime'] is False and s['spin_us'] == s['spin_max_us'] == 20, s" "$T/denied.json"
fi
if [ "$may_rt" = 1 ]; then
  ! grep -q "SCHED_FIFO" "$T/rt.err" || fail "message although SCHED_FIFO was granted"
else
  grep -q "SCHED_FIFO needs CAP_SYS_NICE" "$T/rt.err" || fail "no message when SCHED_FIFO is refused"
fi
! grep -q "SCHED_FIFO" "$T/nrt.err" || fail "--no-realtime still talks about SCHED_FIFO"
$PY - "$T" "$may_rt" <<'EOF'
import json, sys
t, may = sys.argv[1], sys.argv[2] == "1"
rt, nrt, s0 = (json.load(open(f"{t}/{n}.json")) for n in ("rt", "nrt", "s0"))
assert rt["realtime"] is may, rt["realtime"]
assert nrt["realtime"] is False
for s in (rt, nrt):
    assert s["ok"] == 40 and s["pacer_cpu_s"] >= 0, s
    w = s["wake_overshoot_us"]
    assert 0 <= w["p50"] <= w["p99"] <= w["max"], w
# realtime: the spin adapts, between 20 us and 5 ms; fixed when asked
assert 20 <= rt["spin_us"] <= rt["spin_max_us"] <= 5000, rt
assert nrt["spin_us"] == nrt["spin_max_us"] == 30, nrt
assert s0["spin_us"] == 0 and s0["ok"] == 40, s0
# pinned by default to the last CPU this process may use (when it may use
# two); --no-pin leaves it free
import os
cpus = sorted(os.sched_getaffinity(0))
assert rt["pacer_cpu"] == (cpus[-1] if len(cpus) >= 2 else None), (rt["pacer_cpu"], cpus)
assert s0["pacer_cpu"] is None, s0
# late jobs by cause: every cause there, none counting more jobs than sent
for s in (rt, nrt, s0):
    late = s["late"]
    assert late["threshold_us"] == 100, late
    causes = ("wake", "queued", "stall", "rest", "behind")
    assert sorted(k for k in late if k != "threshold_us") == sorted(causes), late
    assert sum(late[c]["jobs"] for c in causes) <= s["sent"], late
    assert s["pacer_faults"] >= 0 and s["pacer_preempted"] >= 0, s
EOF
expect_rc 2 "--spin" -- "$LOOM" gen --catalog "$CAT" --rate 10/s --count 3 --spin soon

# --stdout: every job, in order; the Slurm scripts are valid bash
"$LOOM" gen --catalog "$CAT" --rate 10000/s --count 30 --seed 3 --template-kind slurm --stdout \
  >"$T/jobs.txt" 2>"$T/summary.txt"
[ "$(grep -c '^# loom-gen job ' "$T/jobs.txt")" = 30 ] || fail "30 jobs on stdout"
grep -q "generated 30 jobs" "$T/summary.txt" || fail "summary on stderr with --stdout"
$PY - "$T" <<'EOF'
import re, subprocess, sys
t = sys.argv[1]
parts = re.split(r"^# loom-gen job (\d+) .*\n", open(f"{t}/jobs.txt").read(), flags=re.M)[1:]
idx = [int(i) for i in parts[0::2]]
assert idx == list(range(30)), idx
for script in parts[1::2]:
    assert script.startswith("#!/bin/bash\n#SBATCH --job-name="), script[:80]
    subprocess.run(["bash", "-n"], input=script.encode(), check=True)
EOF

# trace replay: every row of an Alibaba pod list (149 days) compressed to 1.3 s
"$LOOM" gen --catalog "$CAT" --process trace --time-scale 1e-7 --seed 1 --json \
  --trace "$TRACES/openb_pod_list_cpu050.csv.gz" >"$T/trace.json"
$PY -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['count']==7439 and s['ok']==7439 and s['process']=='trace', s" "$T/trace.json"
# pending pods have no scheduled_time: skipped with --trace-missing skip
"$LOOM" gen --catalog "$CAT" --process trace --trace-column scheduled_time --trace-missing skip \
  --rate 20000/s --seed 1 --json --trace openb-default \
  >"$T/sched.json"
$PY -c "import json,sys; s=json.load(open(sys.argv[1])); assert 0<s['count']<8152 and s['rate_target']==20000, s" "$T/sched.json"

# --duration: constant 20/s for 1 s is jobs due at 0, 0.05, ..., 0.95
"$LOOM" gen --catalog "$CAT" --rate 1200/min --duration 1s --seed 2 --json >"$T/dur.json"
$PY -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['count']==20, s" "$T/dur.json"
echo "gen_cli: ok"
