#!/usr/bin/env bash
# loom outside its source tree: data (device files, templates, catalogs)
# found from the program's location, never the current directory; then an
# installed tree (cmake --install into a temporary prefix) used the same way.
set -euo pipefail
B=${LOOM_BUILD_DIR:?}
SRC=$(cd "${LOOM_SOURCE_DIR:-.}" && pwd)
tmp=$(mktemp -d /tmp/loom-install-it.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset LOOM_DEVICE_DIR LOOM_TEMPLATE_DIR LOOM_DATA_DIR
model="$SRC/tests/fuzz/corpus/onnx/cnn.onnx"
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" # no workloads/ here

# 1. the build tree's programs find the source tree's workloads/
"$B/loom" estimate "$model" --batch 2 > out.txt || fail "estimate from a build dir, run elsewhere"
grep -q 'device h200' out.txt || fail "estimate: no h200 device in $(cat out.txt)"
"$B/loom" gen --catalog "$SRC/workloads/catalogs/demo.json" --template-kind local --count 2 \
  --rate 100/s --seed 1 --stdout > jobs.txt 2> err.txt || fail "gen with the shipped local template: $(cat err.txt)"
grep -q '^#!/' jobs.txt || fail "gen: no script in $(head -5 jobs.txt)"
# LOOM_DATA_DIR is authoritative: a wrong one is a clear error naming it
set +e
LOOM_DATA_DIR="$tmp/none" "$B/loom" estimate "$model" --batch 2 > /dev/null 2> err.txt
rc=$?
set -e
[ $rc -ne 0 ] || fail "estimate with a missing LOOM_DATA_DIR succeeded"
grep -q "LOOM_DATA_DIR=$tmp/none" err.txt || fail "error does not name LOOM_DATA_DIR: $(cat err.txt)"

echo "PASS"
