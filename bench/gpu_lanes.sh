#!/usr/bin/env bash
# Runs one command per GPU at the same time on a machine with several GPUs: lane i sees only
# GPU i (CUDA_VISIBLE_DEVICES=i). Each lane's output is kept and printed after all have ended.
#   bench/gpu_lanes.sh "command for GPU 0" "command for GPU 1" ...
set -uo pipefail
cd "$(dirname "$0")/.."
pids=()
for i in $(seq 0 $(($# - 1))); do
  lane_cmd=${*:$((i + 1)):1}
  ( export CUDA_VISIBLE_DEVICES=$i; bash -c "$lane_cmd" ) > "/tmp/kbx-lane-$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || rc=1
  echo "===== lane $i (GPU $i) ====="
  tail -n 60 "/tmp/kbx-lane-$i.log"
done
exit $rc
