#!/usr/bin/env bash
# loomd given a relative --state-dir resolves it once at start: a job run by
# the local executor (whose shepherd works in the job's own directory) still
# finds its script and completes, and server.info reports the absolute path.
set -euo pipefail
B=$(cd "${LOOM_BUILD_DIR:?}" && pwd)
tmp=$(mktemp -d /tmp/loom-reldir.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
printf '#!/bin/sh\necho hello from a relative state dir\n' > job.sh
"$B/loomd" --listen none --state-dir st --executor local --gpus 1 --log-level warn > loomd.log 2>&1 &
pid=$!
export LOOM_URL="unix:$tmp/st/loomd.sock"
for _ in $(seq 1 100); do "$B/loom" info >/dev/null 2>&1 && break; sleep 0.1; done
"$B/loom" info --json | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin)['state_dir']; assert d == '$tmp/st', d"
"$B/loom" submit job.sh --name rel >/dev/null
for _ in $(seq 1 100); do
  state=$("$B/loom" show 1 --json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['state'])")
  case $state in COMPLETED) break ;; FAILED|CANCELLED|TIMEOUT) fail "job ended $state: $("$B/loom" show 1)" ;; esac
  sleep 0.1
done
[ "$state" = COMPLETED ] || fail "job still $state"
kill -TERM "$pid"; wait "$pid" || true; pid=
echo "relative state dir: job COMPLETED"
