#!/usr/bin/env bash
# loom render: exact output (no added newline), escaper chosen from the file
# name or --escape, partials from the template's directory or --partials,
# strict mode, and the exit codes of docs/templates.md.
set -euo pipefail
loom="${LOOM_BUILD_DIR:?}/loom"
src="${LOOM_SOURCE_DIR:?}"
tmp=$(mktemp -d /tmp/loom-render-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf 'run {{cmd}}{{>tail}}' > "$tmp/job.sh.mustache"
printf ' # {{note}}' > "$tmp/tail.mustache"
printf 'key: {{cmd}}' > "$tmp/m.yaml.mustache"
printf '{"cmd": "$(touch %s/pwned) it'"'"'s", "note": "<b>"}' "$tmp" > "$tmp/data.json"

# Exact bytes, shell escaping inferred, partial from the template's dir.
"$loom" render "$tmp/job.sh.mustache" --data "$tmp/data.json" > "$tmp/out"
want="run '\$(touch $tmp/pwned) it'\\''s' # '<b>'"
[ "$(cat "$tmp/out")" = "$want" ] || fail "shell render: got [$(cat "$tmp/out")] want [$want]"
[ "$(tail -c 1 "$tmp/out" | od -An -c | tr -d ' ')" = "'" ] || fail "a newline was added"
bash -n "$tmp/out" || fail "rendered script does not parse"
bash "$tmp/out" >/dev/null 2>&1 || true
[ ! -e "$tmp/pwned" ] || fail "payload was executed"

# YAML inferred; explicit --escape wins; data from stdin.
got=$("$loom" render "$tmp/m.yaml.mustache" --data - < "$tmp/data.json")
[ "$got" = "key: \"\$(touch $tmp/pwned) it's\"" ] || fail "yaml render: [$got]"
got=$("$loom" render "$tmp/m.yaml.mustache" --data "$tmp/data.json" --escape none)
[ "$got" = "key: \$(touch $tmp/pwned) it's" ] || fail "--escape none: [$got]"
got=$(printf '{"note": "<&>"}' | "$loom" render "$tmp/tail.mustache" --data - --escape html)
[ "$got" = " # &lt;&amp;&gt;" ] || fail "html: [$got]"

# --partials DIR.
mkdir "$tmp/p"
printf ' [other]' > "$tmp/p/tail.mustache"
got=$("$loom" render "$tmp/job.sh.mustache" --data "$tmp/data.json" --partials "$tmp/p" --escape none)
[ "$got" = "run \$(touch $tmp/pwned) it's [other]" ] || fail "--partials: [$got]"

# Strict: a missing name is an error with its place; spec mode renders empty.
printf 'a\n  {{missing}}' > "$tmp/s.mustache"
set +e
err=$("$loom" render "$tmp/s.mustache" --strict 2>&1 >/dev/null); rc=$?
set -e
[ $rc -eq 1 ] || fail "strict exit $rc"
[[ "$err" == *"s.mustache:2:3: variable 'missing' is missing in the data"* ]] || fail "strict message: $err"
got=$("$loom" render "$tmp/s.mustache")
[ "$got" = $'a\n  ' ] || fail "spec mode: [$got]"

# Exit codes: syntax error 5, bad data 5, missing file 4, usage 2.
printf '{{#a}}x' > "$tmp/bad.mustache"
set +e
err=$("$loom" render "$tmp/bad.mustache" 2>&1); rc=$?
[ $rc -eq 5 ] && [[ "$err" == *"bad.mustache:1:1: unclosed section: expected {{/a}} before the end"* ]] || fail "syntax: $rc $err"
printf '{"a": ' > "$tmp/bad.json"
"$loom" render "$tmp/s.mustache" --data "$tmp/bad.json" 2>/dev/null; rc=$?
[ $rc -eq 5 ] || fail "bad data exit $rc"
"$loom" render "$tmp/nope.mustache" 2>/dev/null; rc=$?
[ $rc -eq 4 ] || fail "missing file exit $rc"
"$loom" render 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "usage exit $rc"
"$loom" render "$tmp/s.mustache" --escape xml 2>/dev/null; rc=$?
[ $rc -eq 2 ] || fail "bad escape exit $rc"
"$loom" render --help | grep -q "usage: loom render" || fail "--help"
set -e

# The shipped Slurm template renders with a sampled-looking context.
cat > "$tmp/ctx.json" <<'JSON'
{"name": "demo", "executable": "sleep", "arguments": ["1"], "env": [],
 "resources": {"cpus": 2, "memory_mib": 512, "gpus": 1, "has_gpus": true},
 "time_limit": {"slurm": "00:10:00"}}
JSON
"$loom" render "$src/workloads/templates/slurm.sh.mustache" --data "$tmp/ctx.json" --strict > "$tmp/slurm.sh"
grep -qx '#SBATCH --gres=gpu:1' "$tmp/slurm.sh" || fail "gres line"
grep -qx "exec 'sleep' '1'" "$tmp/slurm.sh" || fail "exec line"
bash -n "$tmp/slurm.sh" || fail "slurm script does not parse"
echo "ok"
