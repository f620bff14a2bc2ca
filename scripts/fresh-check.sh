#!/usr/bin/env bash
# The plain-clone proof (issue 29): a new Debian 12 root made with
# debootstrap, the repository cloned into it with nothing beside it (no
# sibling folders, no packages but the minimal base), then `make run` and
# `make test` there, as a new user would run them. Prints both results and
# their times, and exits non-zero if either failed.
#
#   sudo scripts/fresh-check.sh [WORKDIR]     (default /var/tmp/loom-fresh)
#
# Needs root, debootstrap (scripts/deps.sh deb) and Debian's archive. About
# 1.5 GB of packages go into the new root; on 2 cores the whole run takes
# tens of minutes. The committed HEAD is what is cloned: commit first.
#
# The chroot shares the host's kernel. What that changes, and how it is
# handled so that the result is green for the right reasons:
# - mounts: the run happens in a private mount namespace (unshare -m), with
#   the root bind-mounted on itself (so that "/" is a mount point inside, as
#   on a machine: the monitor's file systems, Slurm's `mount --make-rslave /`)
#   and /proc, /sys, /dev, /dev/pts, /dev/shm and /run mounted for it, so
#   nothing it mounts (network namespaces under /run/netns, tmpfs) leaks to
#   the host and everything is gone when it ends;
# - host name lookup: the host's /etc/hosts and /etc/resolv.conf are copied
#   in (munge, Slurm and loomd resolve this machine's name);
# - network namespaces (the Slurm cluster of the tests) work inside, as
#   root in the host's network stack; a daemon of the host on a fixed port
#   (another Slurm) would collide, so none may run during the check.
set -euo pipefail
work=${1:-/var/tmp/loom-fresh}
src=$(cd "$(dirname "$0")/.." && pwd)
mirror=${LOOM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "fresh-check.sh: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "fresh-check.sh: debootstrap missing: scripts/deps.sh deb" >&2; exit 2; }
root=$work/root
if mountpoint -q "$root/proc" 2>/dev/null; then
  echo "fresh-check.sh: $root is in use (mounted); unmount it or pick another WORKDIR" >&2
  exit 2
fi
rm -rf "$work"
mkdir -p "$work"
t0=$(date +%s)
echo "== debootstrap: a fresh bookworm root (minbase) from $mirror"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log"; exit 1; }
cp /etc/hosts /etc/resolv.conf "$root/etc/"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" # no daemons started by apt
chmod +x "$root/usr/sbin/policy-rc.d"
# The base has no git, make or certificates; a user's first step installs them.
chroot "$root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends git make ca-certificates sudo' \
  >"$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; exit 1; }
mkdir -p "$root/home/user/work"
git clone -q --no-local "$src" "$root/home/user/work/loom"
echo "== cloned $(git -C "$src" rev-parse --short HEAD) into /home/user/work/loom (nothing beside it: $(ls "$root/home/user/work"))"
t1=$(date +%s)

cat >"$work/inside.sh" <<'INSIDE'
set -u
root=$1
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
mount -t tmpfs -o mode=755 run "$root/run"
mkdir -p "$root/run/lock" "$root/run/netns"
chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c '
    cd /home/user/work/loom
    s=$(date +%s); make run > /var/tmp/run.log 2>&1; echo $? > /var/tmp/run.rc; echo $(( $(date +%s) - s )) > /var/tmp/run.s
    s=$(date +%s); make test > /var/tmp/test.log 2>&1; echo $? > /var/tmp/test.rc; echo $(( $(date +%s) - s )) > /var/tmp/test.s'
INSIDE
echo "== make run, then make test, in the chroot (a private mount namespace)"
unshare -m --propagation private bash "$work/inside.sh" "$root" || true
t2=$(date +%s)

for what in run test; do
  rc=$(cat "$root/var/tmp/$what.rc" 2>/dev/null || echo missing)
  secs=$(cat "$root/var/tmp/$what.s" 2>/dev/null || echo "?")
  echo "== make $what: exit $rc after $secs s; last lines:"
  tail -n 4 "$root/var/tmp/$what.log" 2>/dev/null | sed 's/^/   /'
done
echo "== times: root and clone $((t1 - t0)) s, make run + make test $((t2 - t1)) s, all $((t2 - t0)) s"
echo "== logs: $root/var/tmp/run.log, $root/var/tmp/test.log"
[ "$(cat "$root/var/tmp/run.rc" 2>/dev/null)" = 0 ] && [ "$(cat "$root/var/tmp/test.rc" 2>/dev/null)" = 0 ]
