#!/bin/sh
# Short libFuzzer run used by ctest (and longer by "make fuzz").
#   fuzz-run.sh BINARY WORK_CORPUS_DIR [SEED_CORPUS_DIR]
# LOOM_FUZZ_SECONDS sets the time (default 10). New inputs go to the work dir
# in the build tree; the checked-in seed corpus is only read.
bin=$1 work=$2 seeds=$3
mkdir -p "$work" || exit 1
set -- "$work"
[ -n "$seeds" ] && [ -d "$seeds" ] && set -- "$work" "$seeds"
exec "$bin" -max_total_time="${LOOM_FUZZ_SECONDS:-10}" -timeout=5 -rss_limit_mb=2048 \
     -print_final_stats=1 -artifact_prefix="$work/" "$@"
