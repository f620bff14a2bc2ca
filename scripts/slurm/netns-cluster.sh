#!/usr/bin/env bash
# A real three-node Slurm on this machine: each slurmd in its own network
# namespace with its own address, for loomd's integration tests and bench.
#
#   scripts/slurm/netns-cluster.sh up DIR      start; prints the lines to eval
#   scripts/slurm/netns-cluster.sh exec DIR CMD...   run CMD where the Slurm
#                                              client tools reach slurmctld
#   scripts/slurm/netns-cluster.sh down DIR    stop everything, remove the namespaces
#
# Layout (needs root and iproute2; all addresses live only inside namespaces
# this script creates, nothing is added to the machine's own network):
#
#   namespace <tag>c  (controller): bridge br0 10.77.0.1/24, slurmctld;
#                     loomd and the client tools run here too
#   namespace <tag>n1 (loom1): eth0 10.77.0.11, slurmd, 4 fake GPUs
#   namespace <tag>n2 (loom2): eth0 10.77.0.12, slurmd, 4 fake GPUs
#   namespace <tag>n3 (loom3): eth0 10.77.0.13, slurmd, 8 fake GPUs
#
# Each node namespace is joined to the bridge by a veth pair, so slurmctld
# and the slurmd talk over real (virtual) Ethernet, each slurmd on its own
# address and the standard port 6818. munged is shared through its Unix
# socket (file-system sockets cross network namespaces). Fake GPUs are
# character devices (c 1 3) named in gres.conf, as in cluster.sh. Each node
# declares 8 CPUs and 16 GiB (SlurmdParameters=config_overrides: this VM
# has fewer), so CPU is not what limits the GPU jobs.
#
# Daemons enter the namespaces with `nsenter --net=/run/netns/NAME` rather
# than `ip netns exec`, which also remounts /sys and so hides the cgroup
# file system that slurmd needs at start ("No filesystem mounted on
# /sys/fs/cgroup"). ReturnToService=1 keeps a node an administrator set
# DOWN down until resumed; EnforcePartLimits=ALL and MaxTime=60 make sbatch
# refuse a job over the time limit at once (the integration test uses it).
set -euo pipefail
cmd=${1:?usage: netns-cluster.sh up|exec|down DIR ...}
dir=${2:?usage: netns-cluster.sh up|exec|down DIR ...}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/conf-common.sh"
gpus_of=(0 4 4 8)
nodes=3

tagfile() { echo "$dir/run/netns.tag"; }

down() {
  [ -d "$dir/run" ] || return 0
  for f in "$dir"/run/*.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
  done
  for f in "$dir"/run/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  if [ -f "$(tagfile)" ]; then
    tag=$(cat "$(tagfile)")
    for ns in "${tag}n1" "${tag}n2" "${tag}n3" "${tag}c"; do
      ip netns list | grep -qw "$ns" || continue
      # Whatever still runs in our namespaces (slurmstepd, job steps) started there.
      for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
    done
    rm -f "$(tagfile)"
  fi
}

case "$cmd" in
down) down; exit 0 ;;
exec)
  tag=$(cat "$(tagfile)") || { echo "netns-cluster.sh: no cluster in $dir" >&2; exit 1; }
  export SLURM_CONF="$dir/slurm.conf"
  exec nsenter --net=/run/netns/"${tag}c" "$@" ;;
up) ;;
*) echo "netns-cluster.sh: unknown command '$cmd'" >&2; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || { echo "netns-cluster.sh: needs root (network namespaces)" >&2; exit 1; }
command -v ip >/dev/null || { echo "netns-cluster.sh: needs iproute2 (ip)" >&2; exit 1; }
"$here/../deps.sh" --check slurm >/dev/null || exit 1
mkdir -p "$dir"/{run,log,state,gpu}
dir=$(cd "$dir" && pwd)
tag="lm$$"
echo "$tag" > "$(tagfile)"
trap 'echo "netns-cluster.sh: failed; see $dir/log" >&2; down' ERR

# munge: one daemon for the machine (as in cluster.sh).
"$here/../munge-up.sh"

# The network: a bridge in the controller namespace, a veth per node.
ctl="${tag}c"
ip netns add "$ctl"
ip -n "$ctl" link set lo up
ip -n "$ctl" link add br0 type bridge
ip -n "$ctl" addr add 10.77.0.1/24 dev br0
ip -n "$ctl" link set br0 up
for i in $(seq 1 $nodes); do
  ns="${tag}n$i"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ctl" link add "v$i" type veth peer name eth0 netns "$ns"
  ip -n "$ctl" link set "v$i" master br0
  ip -n "$ctl" link set "v$i" up
  ip -n "$ns" addr add "10.77.0.1$i/24" dev eth0
  ip -n "$ns" link set eth0 up
done

{
  cat <<CONF
ClusterName=loomnet
SlurmctldHost=localhost(10.77.0.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmdParameters=config_overrides
ReturnToService=1
MinJobAge=900
EnforcePartLimits=ALL
CONF
  slurm_conf_common "$dir"
  for i in $(seq 1 $nodes); do
    echo "NodeName=loom$i NodeHostname=localhost NodeAddr=10.77.0.1$i Port=6818 CPUs=8 RealMemory=16384 Gres=gpu:${gpus_of[$i]} State=UNKNOWN"
  done
  echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=60 State=UP OverSubscribe=NO"
} > "$dir/slurm.conf"

echo "AutoDetect=off" > "$dir/gres.conf"
for i in $(seq 1 $nodes); do
  g=${gpus_of[$i]}
  for k in $(seq 0 $((g - 1))); do
    dev="$dir/gpu/loom$i-gpu$k"
    [ -e "$dev" ] || mknod "$dev" c 1 3
  done
  echo "NodeName=loom$i Name=gpu File=$dir/gpu/loom$i-gpu[0-$((g - 1))]" >> "$dir/gres.conf"
  mkdir -p "$dir/state/slurmd-loom$i"
done

export SLURM_CONF="$dir/slurm.conf"
nsenter --net=/run/netns/"$ctl" /usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >>"$dir/log/slurmctld.out" 2>&1 &
echo $! > "$dir/run/slurmctld.pid"
for i in $(seq 1 $nodes); do
  nsenter --net=/run/netns/"${tag}n$i" /usr/sbin/slurmd -D -N "loom$i" -f "$SLURM_CONF" \
    >>"$dir/log/slurmd-loom$i.out" 2>&1 &
  echo $! > "$dir/run/slurmd-loom$i.pid"
done

for _ in $(seq 150); do
  idle=$(nsenter --net=/run/netns/"$ctl" sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l)
  if [ "$idle" -ge $nodes ]; then
    trap - ERR
    echo "export SLURM_CONF=$SLURM_CONF"
    echo "export LOOM_SLURM_NETNS=$ctl"
    exit 0
  fi
  sleep 0.2
done
echo "netns-cluster.sh: nodes did not become idle within 30 s; see $dir/log" >&2
nsenter --net=/run/netns/"$ctl" sinfo -N >&2 || true
tail -n 5 "$dir"/log/*.log >&2 || true
trap - ERR
down
exit 1
