#!/bin/bash
# A single-node Slurm on this machine from Debian's packages (slurmctld, slurmd, munge), for trying
# `attnsim sweep --slurm` and for the Slurm test in tests/sweep. Everything but munge lives in STATE_DIR: its
# own slurm.conf, state, spool, logs and pid files; /etc/slurm is not touched. Needs root (slurmd runs jobs as
# their user).
#
#   scripts/slurm/local-cluster.sh install           # the Debian packages: scripts/deps.sh --slurm
#   scripts/slurm/local-cluster.sh start STATE_DIR   # prints the SLURM_CONF to export for sbatch/squeue
#   scripts/slurm/local-cluster.sh stop STATE_DIR    # stops what start started
#
# SLURM_PORT (default 6817; slurmd uses the next port) moves the daemons off Slurm's usual ports.
set -euo pipefail

usage() {
  echo "usage: $0 install | $0 start|stop STATE_DIR" >&2
  exit 2
}
if [[ $# -eq 1 && $1 == install ]]; then
  exec "$(dirname "$0")/../deps.sh" --slurm  # the packages, those missing
fi
[[ $# -eq 2 ]] || usage
action=$1
dir=$(realpath -m "$2")
conf=$dir/slurm.conf
host=$(hostname -s)
port=${SLURM_PORT:-6817}

stop_pid_file() {  # the pid a daemon recorded in STATE_DIR, and only that process
  local file=$1
  [[ -f $file ]] || return 0
  local pid
  pid=$(cat "$file")
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$file"
}

case $action in
  start)
    [[ $(id -u) -eq 0 ]] || { echo "$0: needs root (slurmd starts jobs as their user)" >&2; exit 1; }
    for tool in munged slurmctld slurmd sbatch sinfo; do
      command -v "$tool" >/dev/null || { echo "$0: $tool not found: $0 install" >&2; exit 1; }
    done
    mkdir -p "$dir/state" "$dir/spool"
    # munge authenticates every Slurm message; one munged serves any number of Slurm instances.
    if ! munge -n </dev/null >/dev/null 2>&1; then
      install -d -o munge -g munge -m 0755 /run/munge
      [[ -s /etc/munge/munge.key ]] || { echo "$0: /etc/munge/munge.key missing (reinstall munge)" >&2; exit 1; }
      runuser -u munge -- munged --pid-file=/run/munge/munged.pid  # a file munge may write
      touch "$dir/munged.started-here"
    fi
    cat >"$conf" <<CONF
# Written by scripts/slurm/local-cluster.sh: one node, this machine, every core a slot.
ClusterName=attnsim-local
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
# No cgroups in a container: track processes through /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -f "$conf"
    slurmd -f "$conf"
    export SLURM_CONF=$conf
    for _ in $(seq 100); do  # the node registers within a few seconds
      state=$(sinfo -h -N -o %t 2>/dev/null || true)
      [[ $state == idle* || $state == mix* || $state == alloc* ]] && break
      sleep 0.2
    done
    [[ $state == idle* || $state == mix* || $state == alloc* ]] || {
      echo "$0: the node did not come up (state '${state:-none}'); logs in $dir/*.log" >&2
      exit 1
    }
    echo "export SLURM_CONF=$conf"
    ;;
  stop)
    stop_pid_file "$dir/slurmd.pid"
    stop_pid_file "$dir/slurmctld.pid"
    if [[ -f $dir/munged.started-here ]]; then
      stop_pid_file /run/munge/munged.pid
      rm -f "$dir/munged.started-here"
    fi
    ;;
  *) usage ;;
esac
