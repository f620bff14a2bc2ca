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
echo "slurm cluster ok"
