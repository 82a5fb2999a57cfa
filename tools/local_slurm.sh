#!/usr/bin/env bash
# A real SLURM cluster on this one machine, for tests: one slurmctld, two slurmd nodes (n1, n2)
# with 96 CPUs and 8 fake H200 GPUs each, its own munged, no accounting (no slurmdbd); with
# --accounting also its own MariaDB server and slurmdbd (job states from sacct, MinJobAge=2).
#
#   tools/local_slurm.sh install              apt-get install slurm-wlm munge (Debian; root)
#   tools/local_slurm.sh install-accounting   apt-get install slurmdbd mariadb-server (Debian)
#   tools/local_slurm.sh up DIR [--accounting]  start the cluster; all it writes stays under DIR
#   tools/local_slurm.sh down DIR             cancel its jobs, stop its processes (by PID), keep DIR
#
# Clients find it through SLURM_CONF=DIR/etc/slurm.conf (printed by `up`); nothing under /etc,
# /run or /var is written, so the machine's own SLURM setup (if any) is untouched. Needs root
# (slurmd starts job steps as the submitting user) and Debian's slurm-wlm 22.05, whose slurmd is
# built with MULTIPLE_SLURMD (`slurmd -N n1`, `slurmd -N n2` on their own ports on one host).
# Nodes claim resources the host lacks (SlurmdParameters=config_overrides); the GPUs are
# gres.conf File= entries that are links to /dev/null (Slurm wants device nodes there).
set -euo pipefail

NODES=(n1 n2)
CPUS_PER_NODE=96   # what the paper profile asks of a training node
GPUS_PER_NODE=8
MIN_JOB_AGE=600   # no slurmdbd: squeue must still list a finished job when Snakemake asks
ACCOUNTING=0      # up --accounting: slurmdbd + MariaDB; MinJobAge=2 (only sacct knows ended jobs)
ACCOUNT=pacs      # with --accounting: the account jobs are charged to (this user is in it)

die() { echo "local_slurm: $*" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cmd_install() {
  [ "$(id -u)" = 0 ] || die "install needs root"
  command -v apt-get >/dev/null || die "install needs apt-get (Debian/Ubuntu)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge
}

cmd_install_accounting() {  # the packages only: their system services are kept from starting
  [ "$(id -u)" = 0 ] || die "install-accounting needs root"
  command -v apt-get >/dev/null || die "install-accounting needs apt-get (Debian/Ubuntu)"
  local policy=/usr/sbin/policy-rc.d ours=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && ours=1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmdbd mariadb-server ||
    { [ "$ours" = 0 ] || rm -f "$policy"; die "apt-get install slurmdbd mariadb-server failed"; }
  [ "$ours" = 0 ] || rm -f "$policy"
}

check_host() {
  [ "$(id -u)" = 0 ] || die "needs root: slurmd runs job steps as the submitting user"
  for bin in slurmctld slurmd munged mungekey sbatch scontrol; do
    command -v "$bin" >/dev/null || die "$bin not found; run: $0 install"
  done
}

write_config() {  # $1 = DIR
  local dir=$1 host ctld_port
  host=$(hostname -s)
  ctld_port=$(free_port)
  mkdir -p "$dir"/{etc,state,log,run,dev,munge} "${NODES[@]/#/$dir/spool/}"
  chmod 700 "$dir/munge"
  for i in $(seq 0 $((GPUS_PER_NODE - 1))); do ln -sf /dev/null "$dir/dev/nvidia$i"; done
  cat >"$dir/etc/slurm.conf" <<EOF
ClusterName=pacslocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket.2
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=none
SwitchType=switch/none
$(accounting_lines "$dir")
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=$([ "$ACCOUNTING" = 1 ] && echo 2 || echo "$MIN_JOB_AGE")
ReturnToService=2
InactiveLimit=0
KillWait=30
# Tasks run at the submitter's nice value: a niced pytest keeps its jobs niced (Ray's start-up
# deadlines are raised by the launcher, pacs.verl_plugin.cluster.slurm.RAY_START_DEADLINES).
PropagatePrioProcess=1
EOF
  for node in "${NODES[@]}"; do
    echo "NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 Port=$(free_port)" \
      "CPUs=$CPUS_PER_NODE RealMemory=2000000 Gres=gpu:h200:$GPUS_PER_NODE State=UNKNOWN" \
      >>"$dir/etc/slurm.conf"
  done
  echo "PartitionName=debug Nodes=$(IFS=,; echo "${NODES[*]}") Default=YES MaxTime=INFINITE State=UP" \
    >>"$dir/etc/slurm.conf"
  echo "NodeName=$(IFS=,; echo "${NODES[*]}") Name=gpu Type=h200 File=$dir/dev/nvidia[0-$((GPUS_PER_NODE - 1))]" \
    >"$dir/etc/gres.conf"
}

accounting_lines() {  # $1 = DIR: slurm.conf's accounting lines (and slurmdbd.conf, with --accounting)
  local dir=$1 dbd_port
  if [ "$ACCOUNTING" != 1 ]; then
    echo "AccountingStorageType=accounting_storage/none"
    return
  fi
  dbd_port=$(free_port)
  free_port >"$dir/mysql.port"
  printf '%s\n' "AuthType=auth/munge" "AuthInfo=socket=$dir/munge/munge.socket.2" \
    "DbdHost=localhost" "DbdAddr=127.0.0.1" "DbdPort=$dbd_port" "SlurmUser=root" \
    "PidFile=$dir/run/slurmdbd.pid" "LogFile=$dir/log/slurmdbd.log" \
    "StorageType=accounting_storage/mysql" "StorageHost=127.0.0.1" \
    "StoragePort=$(cat "$dir/mysql.port")" "StorageUser=root" "StorageLoc=slurm_acct_db" \
    >"$dir/etc/slurmdbd.conf"
  chmod 600 "$dir/etc/slurmdbd.conf"
  # AccountingStoragePass: with auth/munge, the munge socket slurmctld and clients reach slurmdbd by
  printf '%s\n' "AccountingStorageType=accounting_storage/slurmdbd" \
    "AccountingStorageHost=127.0.0.1" "AccountingStoragePort=$dbd_port" \
    "AccountingStoragePass=$dir/munge/munge.socket.2"
}

start_accounting() {  # $1 = DIR: MariaDB on its own datadir and port, slurmdbd, the cluster in it
  local dir=$1 port
  port=$(cat "$dir/mysql.port")
  for bin in mariadbd mariadb-install-db mariadb-admin slurmdbd sacctmgr; do
    command -v "$bin" >/dev/null || die "$bin not found; run: $0 install-accounting"
  done
  mkdir -p "$dir/mysql/data"
  mariadb-install-db --no-defaults --user=root --datadir="$dir/mysql/data" \
    --auth-root-authentication-method=normal --skip-test-db >"$dir/log/mariadb-install.log" 2>&1 ||
    die "mariadb-install-db failed; see $dir/log/mariadb-install.log"
  start "$dir" mariadbd mariadbd --no-defaults --user=root --datadir="$dir/mysql/data" \
    --socket="$dir/mysql/mysqld.sock" --port="$port" --bind-address=127.0.0.1 \
    --pid-file="$dir/mysql/mariadbd.pid" --log-error="$dir/log/mariadbd.log" --skip-log-bin
  for _ in $(seq 1 120); do
    mariadb-admin --no-defaults --socket="$dir/mysql/mysqld.sock" -uroot ping >/dev/null 2>&1 && break
    sleep 0.5
  done
  mariadb-admin --no-defaults --socket="$dir/mysql/mysqld.sock" -uroot ping >/dev/null 2>&1 ||
    die "MariaDB did not start; see $dir/log/mariadbd.log"
  start "$dir" slurmdbd slurmdbd -D
  for _ in $(seq 1 120); do
    SLURM_CONF=$dir/etc/slurm.conf timeout 10 sacctmgr -n list cluster >/dev/null 2>&1 && break
    sleep 0.5
  done
  SLURM_CONF=$dir/etc/slurm.conf timeout 30 sacctmgr -i add cluster pacslocal >/dev/null ||
    die "sacctmgr add cluster failed; see $dir/log/slurmdbd.log"
  # the account the tests' profile names (tests/conftest.py), with this user in it: the SLURM
  # executor checks the profile's slurm_account against sacctmgr where accounting is on
  SLURM_CONF=$dir/etc/slurm.conf timeout 30 sacctmgr -i add account "$ACCOUNT" cluster=pacslocal >/dev/null &&
    SLURM_CONF=$dir/etc/slurm.conf timeout 30 sacctmgr -i add user "$(id -un)" account="$ACCOUNT" \
      cluster=pacslocal >/dev/null || die "sacctmgr add account $ACCOUNT failed; see $dir/log/slurmdbd.log"
}

start() {  # $1 = DIR, $2 = name, rest = command; records the PID in DIR/pids
  local dir=$1 name=$2
  shift 2
  # PACS_LOCAL_SLURM marks the daemons' environment, which slurmstepd inherits: `down` finds
  # the step daemons of this cluster (and no other process) through it.
  PACS_LOCAL_SLURM=$dir SLURM_CONF=$dir/etc/slurm.conf setsid "$@" \
    >"$dir/log/$name.out" 2>&1 </dev/null &
  echo "$! $name" >>"$dir/pids"
}

wait_ready() {  # $1 = DIR: every node idle
  local dir=$1 states
  for _ in $(seq 1 120); do
    states=$(SLURM_CONF=$dir/etc/slurm.conf sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$states" = "idle " ] && return 0
    sleep 0.5
  done
  die "nodes not idle after 60 s (states: ${states:-none}); logs in $dir/log"
}

cmd_up() {
  local dir=$1
  check_host
  [ ! -e "$dir/pids" ] || die "$dir/pids exists: run '$0 down $dir' first"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  write_config "$dir"
  mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024 >/dev/null
  chmod 600 "$dir/munge/munge.key"
  start "$dir" munged munged --foreground --force --socket="$dir/munge/munge.socket.2" \
    --key-file="$dir/munge/munge.key" --log-file="$dir/log/munged.log" \
    --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed"
  for _ in $(seq 1 50); do [ -S "$dir/munge/munge.socket.2" ] && break; sleep 0.1; done
  [ -S "$dir/munge/munge.socket.2" ] || die "munged did not start; see $dir/log/munged.log"
  if [ "$ACCOUNTING" = 1 ]; then start_accounting "$dir"; fi
  start "$dir" slurmctld slurmctld -D -i -f "$dir/etc/slurm.conf"
  for node in "${NODES[@]}"; do
    start "$dir" "slurmd-$node" slurmd -D -N "$node" -f "$dir/etc/slurm.conf"
  done
  wait_ready "$dir"
  echo "export SLURM_CONF=$dir/etc/slurm.conf"
}

marked_pids() {  # processes whose environment carries this cluster's mark (slurmstepd)
  local dir=$1 pid
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    if { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qx "PACS_LOCAL_SLURM=$dir"; then
      echo "$pid"
    fi
  done
}

stop_pids() {  # TERM, up to 20 s, then KILL
  local pids=("$@") pid alive
  [ ${#pids[@]} -gt 0 ] || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 1 40); do
    alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    sleep 0.5
  done
  kill -KILL "${alive[@]}" 2>/dev/null || true
}

cmd_down() {
  local dir
  dir=$(cd "$1" && pwd)
  [ -e "$dir/pids" ] || { echo "local_slurm: no cluster in $dir"; return 0; }
  # Jobs first, while slurmctld and the slurmds still run, so their steps end the normal way.
  if SLURM_CONF=$dir/etc/slurm.conf scancel --full --user="$(id -un)" 2>/dev/null; then
    for _ in $(seq 1 60); do
      [ -z "$(SLURM_CONF=$dir/etc/slurm.conf squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  local daemons=() steps=() pid name
  while read -r pid name; do daemons+=("$pid"); done <"$dir/pids"
  stop_pids "${daemons[@]}"
  while read -r pid; do steps+=("$pid"); done < <(marked_pids "$dir")
  stop_pids "${steps[@]}"
  rm -f "$dir/pids"
}

case "${1:-}" in
  install) cmd_install ;;
  install-accounting) cmd_install_accounting ;;
  up)
    [ $# -eq 2 ] || [ "${3:-}" = --accounting ] || die "usage: $0 up DIR [--accounting]"
    if [ "${3:-}" = --accounting ]; then ACCOUNTING=1; fi
    cmd_up "$2"
    ;;
  down) [ $# -eq 2 ] || die "usage: $0 down DIR"; cmd_down "$2" ;;
  *) die "usage: $0 install | install-accounting | up DIR [--accounting] | down DIR" ;;
esac
