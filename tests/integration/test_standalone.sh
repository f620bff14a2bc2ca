#!/usr/bin/env bash
# A clone stands on its own (issue 29): nothing loom's code, tests, benchmarks,
# scripts, data, docs, README or Makefile read or tell a user to read lies
# beside the checkout. Only CMakeLists.txt may name such a folder, as the
# default of the optional Mustache conformance run (LOOM_MUSTACHE_SPEC).
# Also: the trace the docs and tests use is in the repository, and reads.
set -euo pipefail
SRC=${LOOM_SOURCE_DIR:-.}
B=${LOOM_BUILD_DIR:-build}
cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The pattern is built from pieces so that this file does not match itself.
up='\.\.'
pat="$up/shared"
hits=$(grep -rnE "$pat" src tests bench scripts workloads docs README.md Makefile 2>/dev/null || true)
[ -z "$hits" ] || fail "references to a folder beside the checkout:
$hits"
# the check itself can fail: a planted reference is found
tmp=$(mktemp -d /tmp/loom-standalone.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
printf 'see %s/data\n' "..""/shared" > "$tmp/planted.md"
grep -qrnE "$pat" "$tmp" || fail "the pattern does not find a planted reference"

# the shipped trace: every file the README lists, and loom reads it by name
d=workloads/traces/alibaba-gpu-2023
[ -f "$d/README.md" ] || fail "no $d/README.md"
n=$(ls "$d"/*.csv.gz | wc -l)
[ "$n" -eq 26 ] || fail "$d holds $n trace files, expected 26"
for f in "$d"/*.csv.gz; do
  gzip -t "$f" || fail "$f: not a whole gzip file"
  grep -q "$(basename "$f" .csv.gz | sed -E 's/(cpu|gpushare|gpuspec|multigpu)[0-9]+$/\1/')" "$d/README.md" \
    || fail "$(basename "$f") is not described in $d/README.md"
done
# the README's tour, as written, from another directory
loom=$(cd "$B" && pwd)/loom
cd "$tmp"
out=$("$loom" sim --nodes openb --pods openb-default --policy random,bestfit,fgd --seeds 42-44)
grep -q fgd <<<"$out" || fail "loom sim by trace name: $out"
set +e
err=$("$loom" sim --nodes openb --pods openb-nosuch --policy fgd 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] && [[ $err == *"trace 'openb-nosuch'"* ]] || fail "unknown trace name: $rc $err"
echo ok
