#!/usr/bin/env bash
# Regenerates docs/slurm.md's conformance table of the Slurm-compatible
# commands from a run of tests/integration/test_slurm_front.py (it starts
# the test Slurm of cluster.sh and a loomd, under the Slurm lock):
#
#   scripts/slurm/front-table.sh [BUILD_DIR]     (default build-test)
#
# The table replaces what lies between the two marker lines of
# docs/slurm.md. Honours SLURM_CTLD_PORT / SLURM_SLURMD_PORT.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$here/build-test}" && pwd)
table=$(mktemp)
trap 'rm -f "$table"' EXIT
LOOM_BUILD_DIR=$build LOOM_SOURCE_DIR=$here LOOM_SLURM_FRONT_TABLE=$table \
  flock /tmp/loom-slurm.lock python3 "$here/tests/integration/test_slurm_front.py"
doc=$here/docs/slurm.md
begin='<!-- slurm-front-table: begin -->'
end='<!-- slurm-front-table: end -->'
grep -qF "$begin" "$doc" && grep -qF "$end" "$doc" || {
  echo "front-table.sh: $doc lacks the marker lines '$begin' and '$end'" >&2
  exit 1
}
awk -v b="$begin" -v e="$end" -v t="$table" '
  $0 == b { print; while ((getline l < t) > 0) print l; skip = 1; next }
  $0 == e { skip = 0 }
  !skip' "$doc" > "$doc.tmp"
mv "$doc.tmp" "$doc"
echo "docs/slurm.md: table from this run ($(grep -c '^| `' "$table") commands)"
