# Sourced by cluster.sh and netns-cluster.sh: the slurm.conf settings both
# test clusters share (state and logs under DIR, no cgroups, no accounting,
# fast scheduling, gres GPUs). Each script adds its own cluster name,
# addresses, ports, nodes and partition. LOOM_SLURM_SCHED_PARAMS, when set,
# replaces the SchedulerParameters line (bench/vs_slurm adds bf_interval=1).
#   slurm_conf_common DIR
slurm_conf_common() {
  local dir=$1
  cat <<CONF
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/state/slurmd-%n
SlurmctldPidFile=$dir/run/slurmctld.pid.slurm
SlurmdPidFile=$dir/run/slurmd-%n.pid.slurm
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
MailProg=/bin/true
SchedulerParameters=${LOOM_SLURM_SCHED_PARAMS:-batch_sched_delay=0,sched_min_interval=0}
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.log
JobAcctGatherType=jobacct_gather/none
SlurmdTimeout=30
GresTypes=gpu
CONF
}
