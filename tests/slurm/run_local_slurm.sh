#!/usr/bin/env bash
# A real Slurm on this machine (slurmctld + slurmd + munged, one CPU-only node "localhost"), then
# `kbx slurm submit --shards 2` of a few fast expert tasks on the CPU: the merged database must
# give the same verdicts (kbx results: task,status) as one `kbx eval` of the same tasks here.
# Needs root (it installs slurm-wlm and munge with apt-get when missing, and runs the daemons);
# without root it says SKIP and exits 0. Runs without systemd: every daemon is started here, in
# the foreground, with its files in a temporary folder, and stopped (by its pid) at the end.
# Usage: tests/slurm/run_local_slurm.sh [path/to/kbx]   (KBX_PYTHON: Python with torch, triton)
# KBX_SLURM_TASKS overrides the tasks; KBX_SLURM_KEEP=1 keeps the folder (logs, databases).
set -euo pipefail
ROOT=$(realpath "$(dirname "$0")/../..")
KBX=$(realpath "${1:-$ROOT/build/kbx}")
cd "$ROOT"
start=$(date +%s)
TASKS=${KBX_SLURM_TASKS:-Activation/relu,Math/add,Math/abs,Loss/mse_loss}
SEED=20261201
say() { echo "slurm-test: $*"; }
[ -x "$KBX" ] || { say "no kbx binary at $KBX (make build first)"; exit 1; }
if [ "$(id -u)" != 0 ]; then
  say "SKIP: needs root to install and run slurmctld, slurmd and munged (CI runs it as root)"
  exit 0
fi

# ---- install ------------------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch \
    >/dev/null || ! command -v munged >/dev/null; then
  say "installing slurm-wlm and munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  # No daemon starts at install time (their init scripts would start a system munged): the
  # policy that Debian's container images carry, for the install only when missing.
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy"
  fi
  apt_install() { apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null; }
  apt_install || { apt-get update -q >/dev/null && apt_install; } || { [ -z "$policy" ] || rm -f "$policy"; exit 1; }
  [ -z "$policy" ] || rm -f "$policy"
fi
say "$(slurmctld -V) installed, $(( $(date +%s) - start )) s in"

# ---- configure and start: munged, slurmctld, slurmd ---------------------------------------
STATE=$(mktemp -d /tmp/kbx-slurm.XXXXXX)
chmod 700 "$STATE"
mkdir -p "$STATE/ctld" "$STATE/d" "$STATE/munge"
chmod 700 "$STATE/munge"
PIDS=()
cleanup() {
  local rc=$?
  if [ -f "$STATE/slurm.conf" ] && [ ${#PIDS[@]} -gt 1 ]; then
    scancel --quiet --user=root 2>/dev/null || true
  fi
  for (( k=${#PIDS[@]}-1; k>=0; k-- )); do kill "${PIDS[$k]}" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$rc" != 0 ]; then
    for log in "$STATE"/*.log "$STATE"/run/logs/*; do
      [ -f "$log" ] && { echo "--- $log (last lines)"; tail -n 30 "$log"; }
    done
  fi
  if [ "${KBX_SLURM_KEEP:-0}" = 1 ]; then say "kept $STATE"; else rm -rf "$STATE"; fi
}
trap cleanup EXIT

dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$STATE/munge/munge.key"
SOCKET=$STATE/munge/munge.socket
munged --foreground --force --socket="$SOCKET" --key-file="$STATE/munge/munge.key" \
  --pid-file="$STATE/munge/munged.pid" --seed-file="$STATE/munge/munged.seed" \
  --log-file="$STATE/munged.log" > "$STATE/munged.out" 2>&1 &
PIDS+=($!)

# Ports of their own, so a Slurm already on this machine is left alone.
PORT=$(( 20000 + ($$ % 2000) * 2 ))
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat > "$STATE/slurm.conf" <<CONF
ClusterName=kbx
SlurmctldHost=localhost
SlurmctldPort=$PORT
SlurmdPort=$(( PORT + 1 ))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCKET
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$STATE/slurm.conf
for _ in $(seq 50); do [ -S "$SOCKET" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" > "$STATE/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" > "$STATE/slurmd.out" 2>&1 &
PIDS+=($!)

state=""
for _ in $(seq 120); do
  state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || { say "node localhost is '$state', not idle, after 60 s"; exit 1; }
say "munged, slurmctld and slurmd up, node idle, $(( $(date +%s) - start )) s in"

# ---- the sharded run on Slurm, and the same tasks on this machine ------------------------
export KBX_PYTHON=${KBX_PYTHON:?set KBX_PYTHON to a Python with torch and triton}
EVAL=(--method expert --candidates solutions/expert --device cpu --tasks "$TASKS" --seed "$SEED")
"$KBX" slurm submit --shards 2 --gpus-per-task 0 --time 30:00 --out "$STATE/run" -- \
  "${EVAL[@]}" | tee "$STATE/submit.out"
merge_job=$(sed -n 's/.*merge job \([0-9]*\).*/\1/p' "$STATE/submit.out")
[ -n "$merge_job" ] || { say "no merge job id in kbx slurm submit's output"; exit 1; }

"$KBX" eval "${EVAL[@]}" --db "$STATE/single.db" > "$STATE/single.log" 2>&1 &
single=$!

job_state=""
for _ in $(seq 1200); do
  job_state=$(scontrol show job "$merge_job" -o 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case "$job_state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
  sleep 0.5
done
wait "$single" || { say "the single-machine kbx eval failed"; cat "$STATE/single.log"; exit 1; }
[ "$job_state" = COMPLETED ] || {
  say "merge job $merge_job ended $job_state"
  scontrol show job -o 2>/dev/null || true
  exit 1
}

verdicts() { "$KBX" results --db "$1" --format csv | awk -F, 'NR > 1 {print $3 "," $5}' | sort; }
verdicts "$STATE/run/all.db" > "$STATE/merged.csv"
verdicts "$STATE/single.db" > "$STATE/single.csv"
runs=$("$KBX" results --db "$STATE/run/all.db" --format csv | awk -F, 'NR > 1 {print $1}' | sort -u | wc -l)
echo "merged (task,status):"; sed 's/^/  /' "$STATE/merged.csv"
if ! diff -u "$STATE/single.csv" "$STATE/merged.csv"; then
  say "FAIL: the merged shards' verdicts differ from one kbx eval's"
  exit 1
fi
expected=$(tr ',' '\n' <<< "$TASKS" | wc -l)
if [ "$(wc -l < "$STATE/merged.csv")" != "$expected" ] || [ "$runs" != 2 ]; then
  say "FAIL: expected $expected tasks from 2 shard runs, got $(wc -l < "$STATE/merged.csv") from $runs"
  exit 1
fi
say "PASS: 2 shards on Slurm, merged, give the verdicts of one kbx eval ($expected tasks) in $(( $(date +%s) - start )) s"
