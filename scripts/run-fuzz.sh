#!/bin/sh
# Longer fuzzing: every fuzz target of a build for SECONDS each.
#   run-fuzz.sh BUILD_DIR SECONDS
dir=$1 secs=${2:-60}
rc=0
for bin in "$dir"/fuzz_*; do
  [ -x "$bin" ] || continue
  short=$(basename "$bin" | sed 's/^fuzz_//')
  echo "== fuzz $short for ${secs}s"
  LOOM_FUZZ_SECONDS=$secs scripts/fuzz-run.sh "$bin" "$dir/fuzz-corpus/$short" "tests/fuzz/corpus/$short" || rc=1
done
exit $rc
