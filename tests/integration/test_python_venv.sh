#!/usr/bin/env bash
# The Python SDK installs offline into a virtual environment with exactly the
# command docs/python.md gives (issue 31: `pip install ./python` in a venv
# fetched setuptools for its isolated build and failed offline). The command
# is read from the doc, so the doc and this test cannot drift apart.
set -euo pipefail
SRC=$(cd "${LOOM_SOURCE_DIR:-.}" && pwd)
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/loom-venv-it.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$PY" -c 'import venv, setuptools, wheel' 2>/dev/null ||
  { echo "SKIP: needs python3-venv, python3-setuptools, python3-wheel"; exit 0; }
venv_cmd=$(grep -m1 '^    python3 -m venv ' "$SRC/docs/python.md" | sed 's/^    //; s/ *#.*//') ||
  fail "docs/python.md: no '    python3 -m venv' line"
pip_cmd=$(grep -m1 '^    pip install ' "$SRC/docs/python.md" | sed 's/^    //; s/ *#.*//') ||
  fail "docs/python.md: no '    pip install' line"
mkdir "$tmp/src"
cp -r "$SRC/python" "$tmp/src/python"
rm -rf "$tmp/src/python/build" "$tmp/src/python"/*.egg-info
cd "$tmp/src"
# Offline: no index, no extra wheel directory; only what Debian installed.
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_CONFIG_FILE=/dev/null
export HOME="$tmp"
PATH="$(dirname "$PY"):$PATH"
eval "${venv_cmd/\~/$tmp}" || fail "$venv_cmd"
# shellcheck disable=SC1091
. "$tmp/venv/bin/activate"
[ "$(command -v pip)" = "$tmp/venv/bin/pip" ] || fail "the venv's pip is not first on PATH"
eval "$pip_cmd" > "$tmp/pip.log" 2>&1 || fail "'$pip_cmd' offline in a venv: $(tail -20 "$tmp/pip.log")"
cd /
out=$(python -c 'import loom, sys; print(loom.__file__, loom.Client.__name__)') ||
  fail "import loom after '$pip_cmd'"
case $out in "$tmp/venv/"*" Client") ;; *) fail "loom imported from elsewhere: $out" ;; esac
# PEP 561: the installed package says it is typed (mypy reads its annotations).
typed=$(python -c 'import loom, os; print(os.path.isfile(os.path.join(os.path.dirname(loom.__file__), "py.typed")))')
[ "$typed" = True ] || fail "'$pip_cmd' installed loom without its py.typed marker"
echo "OK: '$venv_cmd' then '$pip_cmd' installs loom offline, with py.typed"
