#!/usr/bin/env bash
# unit.layers: every part of libloom includes only the parts below it
# (docs/design.md, "Parts": dependencies point down the table). A part's
# dependencies are what its files (src/PART/*) and its public header
# (include/loom/PART.h) #include: another part's public header loom/X.h or
# one of its private headers X/*.h. Fails naming the file and the include
# that reaches past the part's layer. Run from the source tree.
set -uo pipefail
cd "${LOOM_SOURCE_DIR:-.}" || exit 1

# What each part may include, besides itself: design.md's table. slurmfmt.h
# is jobspec's (src/jobspec/slurmfmt.c). store/db.h is the store's SQLite
# opening, shared with the zoo (zoo/repo.c).
declare -A allowed=(
  [core]=""
  [rpc]="core"
  [catalog]="core"
  [template]="core"
  [gen]="core catalog template rpc"
  [mon]="core"
  [sched]="core"
  [store]="core"
  [jobspec]="core"
  [exec]="core sched jobspec"
  [estimate]="core"
  [prof]="core mon"
  [rubick]="core sched"
  [runtime]="core sched rubick"
  [sim]="core sched rubick runtime jobspec"
  [zoo]="core estimate store"
  [auth]="core"
)
bad=0
while IFS= read -r line; do # FILE:#include "HEADER"
  f=${line%%:*}
  inc=${line#*\"}
  inc=${inc%\"*}
  case $f in
  include/loom/*) part=${f#include/loom/} part=${part%.h} ;;
  *) part=${f#src/} part=${part%%/*} ;;
  esac
  case $inc in
  loom/slurmfmt.h) dep=jobspec ;;
  loom/*) dep=${inc#loom/} dep=${dep%.h} ;;
  */*) dep=${inc%%/*} ;;
  *) continue ;;
  esac
  [ "$dep" = "$part" ] && continue
  [ -n "${allowed[$part]+x}" ] && [ -n "${allowed[$dep]+x}" ] || continue # not a part
  if [[ " ${allowed[$part]} " != *" $dep "* ]]; then
    echo "$f: #include \"$inc\": $part may depend on ${allowed[$part]:-nothing} (docs/design.md, Parts), not $dep"
    bad=1
  fi
done < <(grep -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src/*/*.[ch] include/loom/*.h)
[ "$bad" = 0 ] && echo "layers: every part includes only the parts below it"
exit "$bad"
