#!/usr/bin/env bash
# A real Slurm on this machine, for tests and benchmarks. Several nodes run
# as several slurmd on one host, each with its own port.
#
#   scripts/slurm/cluster.sh up DIR [NODES] [GPUS_PER_NODE]
#   scripts/slurm/cluster.sh down DIR
#
# "up" installs slurm-wlm and munge when missing, starts munged (if not
# running), slurmctld and one slurmd per node, all on loopback, with state,
# logs and configuration under DIR, and fake GPUs through gres: each GPU is a
# character device (mknod c 1 3, like /dev/null) named in gres.conf, so
# --gres=gpu:N sets CUDA_VISIBLE_DEVICES as on a real GPU node. It waits
# until every node is idle and prints the environment to use it:
#   export SLURM_CONF=DIR/slurm.conf
# "down" stops the daemons started from DIR (munged is left running: it is
# shared and harmless). SLURM_NODE_CPUS and SLURM_NODE_MEM_MB declare larger
# nodes than this machine (SlurmdParameters=config_overrides), for tests that
# only submit held jobs and compare what Slurm stored.
set -euo pipefail
cmd=${1:?usage: cluster.sh up|down DIR [NODES] [GPUS_PER_NODE]}
dir=${2:?usage: cluster.sh up|down DIR [NODES] [GPUS_PER_NODE]}
nodes=${3:-1}
gpus=${4:-4}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/conf-common.sh"

# The cluster's jobs outlive slurmd: a job's slurmstepd would, when the job
# ends, report to whatever controller then listens on these ports, the next
# test's, and end that cluster's job of the same id (a running job cut off,
# a failed one recorded COMPLETED). So each job step of this cluster (the
# parent of a job script under its spool directory) and the script's
# process group are killed with it.
kill_jobs() {
  local me pid ppid pgid
  me=$(ps -o pgid= -p $$ | tr -d ' ')
  for pid in $(pgrep -f "$dir/state/slurmd-" || true); do
    ppid=$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ')
    pgid=$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')
    if [ -n "$ppid" ] && [ "$(ps -o comm= -p "$ppid" 2>/dev/null)" = slurmstepd ]; then
      kill -9 "$ppid" 2>/dev/null || true
    fi
    if [ -n "$pgid" ] && [ "$pgid" != "$me" ] && [ "$pgid" != 1 ]; then
      kill -9 -- "-$pgid" 2>/dev/null || true
    fi
    kill -9 "$pid" 2>/dev/null || true
  done
}

down() {
  kill_jobs
  for f in "$dir"/run/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
  done
  for f in "$dir"/run/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

if [ "$cmd" = down ]; then down; exit 0; fi
[ "$cmd" = up ] || { echo "cluster.sh: unknown command '$cmd'" >&2; exit 2; }

"$here/../deps.sh" --check slurm >/dev/null || exit 1
mkdir -p "$dir"/{run,log,state,gpu}
dir=$(cd "$dir" && pwd)

# munge: one daemon for the machine.
"$here/../munge-up.sh"

cpus=${SLURM_NODE_CPUS:-$(nproc)}
mem=${SLURM_NODE_MEM_MB:-$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))}
{
  cat <<CONF
ClusterName=loomtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=${SLURM_CTLD_PORT:-6817}
SlurmdPort=${SLURM_SLURMD_PORT:-6818}
ReturnToService=2
MinJobAge=600
CONF
  if [ -n "${SLURM_NODE_CPUS:-}${SLURM_NODE_MEM_MB:-}" ]; then echo "SlurmdParameters=config_overrides"; fi
  slurm_conf_common "$dir"
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=loom$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$(( ${SLURM_SLURMD_PORT:-6818} + i - 1 )) CPUs=$cpus RealMemory=$mem Gres=gpu:$gpus State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
} > "$dir/slurm.conf"

: > "$dir/gres.conf"
echo "AutoDetect=off" >> "$dir/gres.conf"
for i in $(seq 1 "$nodes"); do
  for g in $(seq 0 $((gpus - 1))); do
    dev="$dir/gpu/loom$i-gpu$g"
    [ -e "$dev" ] || mknod "$dev" c 1 3
  done
  echo "NodeName=loom$i Name=gpu File=$dir/gpu/loom$i-gpu[0-$((gpus - 1))]" >> "$dir/gres.conf"
  mkdir -p "$dir/state/slurmd-loom$i"
done

export SLURM_CONF="$dir/slurm.conf"
/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >>"$dir/log/slurmctld.out" 2>&1 &
echo $! > "$dir/run/slurmctld.pid"
for i in $(seq 1 "$nodes"); do
  /usr/sbin/slurmd -D -N "loom$i" -f "$SLURM_CONF" >>"$dir/log/slurmd-loom$i.out" 2>&1 &
  echo $! > "$dir/run/slurmd-loom$i.pid"
done

for _ in $(seq 300); do
  idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)
  [ "$idle" -ge "$nodes" ] && { echo "export SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.2
done
echo "cluster.sh: nodes did not become idle within 60 s; see $dir/log" >&2
sinfo -N >&2 || true
tail -n 20 "$dir"/log/* >&2 || true
down
exit 1
