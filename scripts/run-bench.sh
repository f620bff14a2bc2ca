#!/usr/bin/env bash
# make bench: every benchmark in bench/; each writes its figures to docs/bench/.
# A benchmark is either a C program (build/bench_NAME) or a script bench/NAME.sh.
set -uo pipefail
build=${1:-build}
rc=0
for b in "$build"/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" --out docs/bench || rc=1
done
for s in bench/*.sh; do
  [ -f "$s" ] || continue
  echo "== $s"
  bash "$s" "$build" || rc=1
done
exit $rc
