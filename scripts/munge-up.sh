#!/usr/bin/env bash
# Make sure this machine's munged is running and answers, starting it when it
# does not. One daemon serves the machine; the Slurm test clusters, the
# multi-user test and unit.auth all use it, and `make test` calls this script
# before the first test so that no test races another to start it.
#
#   scripts/munge-up.sh           exit 0 once `munge -n | unmunge` succeeds
#
# "Running" is judged by a real credential round trip, not by pgrep or by the
# socket file: a munged killed with SIGKILL leaves its socket, lock and pid
# files behind (and, in a container whose PID 1 does not reap, a zombie that
# pgrep still matches), which a file or process check takes for a live daemon.
# --force lets the new munged replace such a stale socket. A lock file keeps
# two callers from starting two daemons.
set -euo pipefail
alive() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

command -v munged >/dev/null || command -v /usr/sbin/munged >/dev/null || {
  echo "munge-up.sh: munged is not installed (scripts/deps.sh test installs munge)" >&2
  exit 1
}
alive && exit 0
[ "$(id -u)" = 0 ] || { echo "munge-up.sh: munged is not running and starting it needs root" >&2; exit 1; }

mkdir -p /run/munge /var/log/munge /var/lib/munge
exec 9>/run/munge-up.lock
flock 9
alive && exit 0
if [ ! -f /etc/munge/munge.key ]; then
  (umask 077 && dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null)
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
chown munge:munge /run/munge /var/log/munge /var/lib/munge
su -s /bin/sh munge -c '/usr/sbin/munged --force' || {
  echo "munge-up.sh: munged failed to start; see /var/log/munge/munged.log" >&2
  exit 1
}
for _ in $(seq 100); do
  alive && exit 0
  sleep 0.1
done
echo "munge-up.sh: munged started but does not answer after 10 s; see /var/log/munge/munged.log" >&2
exit 1
