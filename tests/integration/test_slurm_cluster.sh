#!/usr/bin/env bash
# scripts/slurm/cluster.sh brings up a real Slurm (munged, slurmctld, two
# slurmd) with fake GPUs, and a job asking for gres gets CUDA_VISIBLE_DEVICES.
set -euo pipefail
src=${LOOM_SOURCE_DIR:-$(pwd)}
dir=$(mktemp -d /tmp/loom-slurm-XXXXXX)
trap '"$src/scripts/slurm/cluster.sh" down "$dir"; rm -rf "$dir"' EXIT
eval "$("$src/scripts/slurm/cluster.sh" up "$dir" 2 4)"
[ "$(sinfo -h -N -o '%N %t %G' | sort -u | tr '\n' ';')" = "loom1 idle gpu:4;loom2 idle gpu:4;" ] \
  || { echo "unexpected sinfo:"; sinfo -N -o '%N %t %G'; exit 1; }
jid=$(sbatch --parsable --gres=gpu:3 -w loom2 -o "$dir/out-%j" --wrap 'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"')
for _ in $(seq 100); do [ -s "$dir/out-$jid" ] && break; sleep 0.1; done
out=$(cat "$dir/out-$jid")
[ "$out" = "loom2 0,1,2" ] || { echo "job output '$out', expected 'loom2 0,1,2'"; exit 1; }
# A request beyond the node's GPUs is refused by Slurm itself.
if sbatch --parsable --gres=gpu:5 --wrap true 2>"$dir/err"; then
  echo "a 5-GPU job was accepted on 4-GPU nodes"; exit 1
fi
grep -qi "Requested node configuration is not available" "$dir/err" || { cat "$dir/err"; exit 1; }
# down takes the cluster's running jobs with it: a job step left behind
# would report its end to the next cluster on the same ports and end that
# cluster's job of the same id (integration.slurm_front saw both).
run=$(sbatch --parsable -o /dev/null --wrap 'sleep 600')
for _ in $(seq 100); do [ "$(squeue -h -j "$run" -o %T)" = RUNNING ] && break; sleep 0.1; done
[ "$(squeue -h -j "$run" -o %T)" = RUNNING ] || { echo "job $run did not start"; exit 1; }
"$src/scripts/slurm/cluster.sh" down "$dir"
sleep 0.5
left=$(pgrep -f "$dir/state/slurmd-" || true)
steps=$(pgrep -x slurmstepd -a | grep -F "[$run.batch]" || true)
if [ -n "$left" ] || [ -n "$steps" ]; then
  echo "after down, the cluster's job $run still runs: scripts ${left:-none}, steps ${steps:-none}"
  exit 1
fi
echo "slurm cluster ok"
