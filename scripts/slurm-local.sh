#!/usr/bin/env bash
# A private single-node Slurm for benchmarks (bench/rpc_submit), isolated
# from any other Slurm on the machine: its own munged socket, its own ports,
# all state under DIR. Needs root and the slurm-wlm and munge packages.
#
#   scripts/slurm-local.sh start DIR   prints the SLURM_CONF path on success
#   scripts/slurm-local.sh stop DIR    stops the daemons started in DIR
set -euo pipefail
cmd=${1:?usage: slurm-local.sh start|stop DIR}
dir=${2:?usage: slurm-local.sh start|stop DIR}

stop() {
  for p in slurmd slurmctld munged; do
    if [ -f "$dir/$p.pid" ]; then
      kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
      rm -f "$dir/$p.pid"
    fi
  done
}

case "$cmd" in
stop) stop; exit 0 ;;
start) ;;
*) echo "slurm-local.sh: unknown command '$cmd'" >&2; exit 2 ;;
esac

for exe in munged slurmctld slurmd sbatch sinfo; do
  command -v "$exe" >/dev/null || { echo "slurm-local.sh: $exe not installed" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "slurm-local.sh: needs root" >&2; exit 1; }
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
chmod 0700 "$dir"
# munged insists on owning its key; copy the system key or make one.
if [ -r /etc/munge/munge.key ]; then
  cp /etc/munge/munge.key "$dir/munge.key"
else
  dd if=/dev/urandom of="$dir/munge.key" bs=128 count=1 status=none
fi
chmod 0400 "$dir/munge.key"
munged -f --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"

# Ports: pick two free ones.
read -r p1 p2 < <(/usr/bin/python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
host=$(hostname)
cat > "$dir/slurm.conf" <<CONF
ClusterName=loombench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MaxJobCount=200000
NodeName=loomnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=bench Nodes=loomnode Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i -f "$SLURM_CONF" >/dev/null 2>&1
slurmd -N loomnode -f "$SLURM_CONF" >/dev/null 2>&1
for _ in $(seq 100); do
  if sinfo -h -o %T 2>/dev/null | grep -q -E '^idle'; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.1
done
echo "slurm-local.sh: Slurm did not come up; see $dir/log" >&2
stop
exit 1
