#!/usr/bin/env bash
# Run every CTest test of a build directory and end with one plain summary
# line, "N passed, N failed, N skipped", as the last line of output.
set -uo pipefail
dir=${1:?usage: run-tests.sh BUILD_DIR}
# Daemons the tests share are started here, before any test runs, so that
# no two tests race to start them: munged (unit.auth, the Slurm clusters,
# integration.multiuser). Without root the tests that need it skip.
if [ "$(id -u)" = 0 ] && command -v munge >/dev/null; then
  "$(dirname "$0")/munge-up.sh" || exit 1
fi
log=$(mktemp)
ctest --test-dir "$dir" --output-on-failure -j "${TEST_JOBS:-2}" --timeout 900 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
if [ -n "$line" ]; then
  failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")
  # Skipped tests (exit 77: what they need is not given here, e.g. the
  # official Mustache spec) are neither passed nor failed; each says why in
  # its output above.
  skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" || true)
  if [ "$skipped" -gt 0 ]; then
    echo "skipped: $(grep -E '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" | awk '{print $3}' | paste -sd' ')"
  fi
  echo "$((total - failed - skipped)) passed, $failed failed, $skipped skipped"
else
  echo "0 passed, 1 failed"
  [ "$rc" -ne 0 ] || rc=1
fi
rm -f "$log"
exit "$rc"
