#!/usr/bin/env bash
# loom catalog check/sample, and the whole path a generated job takes:
# catalog -> sampled context -> rendered script -> a real process.
set -euo pipefail
loom="${LOOM_BUILD_DIR:?}/loom"
src="${LOOM_SOURCE_DIR:?}"
demo="$src/workloads/catalogs/demo.json"
tmp=$(mktemp -d /tmp/loom-catalog-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$loom" catalog check "$demo")
[[ "$out" == "$demo: ok, 4 jobs" ]] || fail "check: $out"

# Same seed, same lines; another seed, other lines.
a=$("$loom" catalog sample "$demo" --seed 42 --count 50)
b=$("$loom" catalog sample "$demo" --seed 42 --count 50)
c=$("$loom" catalog sample "$demo" --seed 43 --count 50)
[ "$a" = "$b" ] || fail "same seed differs"
[ "$a" != "$c" ] || fail "different seeds agree"
[ "$(printf '%s\n' "$a" | wc -l)" -eq 50 ] || fail "count"

# An invalid catalog: every problem on stderr, exit 5, nothing on stdout.
printf '{"jobs": [{"name": "a", "executable": 1,\n  "wieght": 2}]}' > "$tmp/bad.json"
set +e
"$loom" catalog sample "$tmp/bad.json" > "$tmp/out" 2> "$tmp/err"; rc=$?
set -e
[ $rc -eq 5 ] || fail "invalid exit $rc"
[ ! -s "$tmp/out" ] || fail "output from an invalid catalog"
grep -qx "$tmp/bad.json:1:39: /jobs/0/executable: found the integer 1, expected a non-empty string" "$tmp/err" || fail "issue 1: $(cat "$tmp/err")"
grep -q "^$tmp/bad.json:2:3: /jobs/0/wieght: found an unknown key 'wieght'.*(did you mean 'weight'?)$" "$tmp/err" || fail "issue 2: $(cat "$tmp/err")"
set +e
"$loom" catalog check "$tmp/none.json" 2>/dev/null; rc=$?
[ $rc -eq 4 ] || fail "missing file exit $rc"
"$loom" catalog sample "$demo" --job nope 2>/dev/null; rc=$?
[ $rc -eq 4 ] || fail "missing job exit $rc"
"$loom" catalog frob "$demo" 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "usage exit $rc"
set -e

# Sample a demo job, render it with the shipped local template, run it.
"$loom" catalog sample "$demo" --job sgd-small --seed 7 > "$tmp/ctx.json"
"$loom" render "$src/workloads/templates/local.sh.mustache" --data "$tmp/ctx.json" --strict > "$tmp/job.sh"
(cd "$tmp" && bash job.sh > run.log) || fail "job failed: $(cat "$tmp/run.log")"
grep -q '^step 0 loss' "$tmp/run.log" || fail "job output: $(cat "$tmp/run.log")"
# Every demo job renders with every shipped template, strictly.
for job in sgd-small resnet-sim bert-finetune-sim eval-sleep; do
  "$loom" catalog sample "$demo" --job "$job" > "$tmp/c.json"
  for t in slurm.sh local.sh k8s-job.yaml; do
    "$loom" render "$src/workloads/templates/$t.mustache" --data "$tmp/c.json" --strict > "$tmp/r" || fail "$job/$t"
    case $t in *.sh) bash -n "$tmp/r" || fail "$job/$t bash -n" ;; esac
  done
done
echo ok
