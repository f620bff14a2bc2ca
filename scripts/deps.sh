#!/usr/bin/env bash
# Install the Debian packages a make target needs, only those missing.
#
#   scripts/deps.sh [--check] build|test|bench|run|slurm
#
# Package lists live in scripts/deps/<target>*.txt, one package per line
# (# comments allowed), so each part adds its own file. "test", "bench" and
# "run" include everything "build" needs. Idempotent: when every package is
# present this costs one dpkg-query and returns.
#
# "test" installs everything any test needs, the Slurm cluster's packages
# included, before the first test starts: tests run in parallel and must never
# install anything themselves. --check installs nothing: it fails, naming the
# missing packages, so that a test or script that needs them can say so.
set -euo pipefail
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
target=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)

lists=("$here"/deps/build*.txt)
case "$target" in
  build) ;;
  test) lists+=("$here"/deps/test*.txt "$here"/deps/slurm*.txt) ;;
  bench|run|slurm|deb) lists+=("$here"/deps/"$target"*.txt) ;;
  *) echo "deps.sh: unknown target '$target' (expected build, test, bench, run, slurm or deb)" >&2; exit 2 ;;
esac

want=$(cat "${lists[@]}" 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d' | sort -u)
missing=()
for p in $want; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$st" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$check" -eq 1 ]; then
  echo "deps.sh: missing packages for '$target': ${missing[*]}; install them with 'scripts/deps.sh $target' (as root)" >&2
  exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing packages: ${missing[*]}; run as root or install them" >&2
  exit 1
fi
# Keep apt from starting daemons it installs (PID 1 is not systemd here); the
# tests start what they need themselves.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
