#!/usr/bin/env bash
# Valgrind (memcheck) over the plain, unsanitized build: loomd serving a
# submit / get / list / cancel round over its Unix socket and stopping on
# SIGTERM, and the loom tools that parse files (render, catalog, sim,
# estimate, mon). Any invalid read or write, use of uninitialised memory or
# definite leak fails the test. (The sanitizer build cannot run under
# valgrind, hence LOOM_PLAIN_BUILD_DIR; the build uses -gdwarf-4 because
# valgrind 3.19 cannot read clang 14's DWARF 5.)
set -euo pipefail
P=${LOOM_PLAIN_BUILD_DIR:-}
SRC=${LOOM_SOURCE_DIR:-.}
if [ -z "$P" ] || [ ! -x "$P/loomd" ]; then
  echo "FAIL: LOOM_PLAIN_BUILD_DIR with a built loomd is required" >&2
  exit 1
fi
command -v valgrind >/dev/null || { echo "FAIL: valgrind is not installed" >&2; exit 1; }
tmp=$(mktemp -d /tmp/loom-valgrind.XXXXXX)
loomd_pid=
cleanup() {
  [ -n "$loomd_pid" ] && kill -9 "$loomd_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
vg=(valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-origins=yes)

# Runs one tool under memcheck; exit code 99 (and the log) means memcheck
# found something, any other code is the tool's own and is checked by the
# caller.
run_vg() {
  local name=$1; shift
  set +e
  "${vg[@]}" --log-file="$tmp/$name.vg" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
  local rc=$?
  set -e
  if [ "$rc" -eq 99 ] || [ -s "$tmp/$name.vg" ]; then
    cat "$tmp/$name.vg" >&2
    fail "$name: memcheck reported errors"
  fi
  echo "$rc"
}

# --- the tools
rc=$(run_vg render "$P/loom" render "$SRC/workloads/templates/slurm.sh.mustache" \
       --data <(printf '{"name":"a b","executable":"python","args":["$(rm -rf ~)"],"cpus":2,"mem_mib":1024,"gpus":1,"time":"01:00:00","output":"o.log","env":[]}') \
       --escape shell)
[ "$rc" -eq 0 ] || fail "render: exit $rc: $(cat "$tmp/render.err")"
rc=$(run_vg catalog "$P/loom" catalog check "$SRC/workloads/catalogs/demo.json")
[ "$rc" -eq 0 ] || fail "catalog check: exit $rc: $(cat "$tmp/catalog.err")"
printf '{"jobs": [{"name": "x", "nmae": 1}]}' > "$tmp/bad.json"
rc=$(run_vg catalog_bad "$P/loom" catalog check "$tmp/bad.json")
[ "$rc" -ne 0 ] || fail "a bad catalog passed"
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
CSV
rc=$(run_vg sim "$P/loom" sim --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --policy fgd,bestfit --seeds 1-2 --check)
[ "$rc" -eq 0 ] || fail "sim: exit $rc: $(cat "$tmp/sim.err")"
export LOOM_DEVICE_DIR="$SRC/workloads/devices"
rc=$(run_vg estimate "$P/loom" estimate "$SRC/tests/fuzz/corpus/onnx/cnn.onnx" --batch 2 --train --optimizer adam --json)
[ "$rc" -eq 0 ] || fail "estimate: exit $rc: $(cat "$tmp/estimate.err")"
head -c 300 "$SRC/tests/fuzz/corpus/onnx/cnn.onnx" > "$tmp/cut.onnx"
rc=$(run_vg estimate_bad "$P/loom" estimate "$tmp/cut.onnx" --batch 2)
[ "$rc" -eq 5 ] || fail "truncated ONNX: exit $rc, expected 5"
rc=$(run_vg mon "$P/loom" mon --json --interval 100ms --count 2)
[ "$rc" -eq 0 ] || fail "mon: exit $rc: $(cat "$tmp/mon.err")"

# --- loomd under memcheck, driven by the (unsupervised) CLI
"${vg[@]}" --log-file="$tmp/loomd.vg" "$P/loomd" --listen none --state-dir "$tmp/state" \
  --executor none --log-level warn > "$tmp/loomd.out" 2>&1 &
loomd_pid=$!
export LOOM_URL="unix:$tmp/state/loomd.sock"
for _ in $(seq 1 300); do
  [ -S "$tmp/state/loomd.sock" ] && "$P/loom" info >/dev/null 2>&1 && break
  sleep 0.1
done
"$P/loom" info >/dev/null || fail "loomd under valgrind did not come up: $(cat "$tmp/loomd.out")"
printf '#!/bin/sh\necho hi\n' > "$tmp/job.sh"
for i in 1 2 3; do
  "$P/loom" submit "$tmp/job.sh" --name "vg$i" --gpus 1 --submit-id "vg-$i" >/dev/null
done
"$P/loom" submit "$tmp/job.sh" --name vg1 --submit-id vg-1 >/dev/null # repeated key
"$P/loom" jobs --json > "$tmp/jobs.json"
"$P/loom" show 2 >/dev/null
"$P/loom" cancel 1 3 >/dev/null
set +e
"$P/loom" show 99 >/dev/null 2>&1; [ $? -eq 4 ] || fail "show 99: not 4"
set -e
/usr/bin/python3 - "$tmp/jobs.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
jobs = j["jobs"] if isinstance(j, dict) else j
assert len(jobs) == 3, jobs
PY
kill -TERM "$loomd_pid"
set +e
wait "$loomd_pid"
rc=$?
set -e
loomd_pid=
if [ "$rc" -eq 99 ] || [ -s "$tmp/loomd.vg" ]; then
  cat "$tmp/loomd.vg" >&2
  fail "loomd: memcheck reported errors"
fi
[ "$rc" -eq 0 ] || fail "loomd exited $rc after SIGTERM: $(tail -5 "$tmp/loomd.out")"
echo "valgrind: loomd and 8 tool runs clean"
