#!/usr/bin/env bash
# session 20, call 3: issue 14's compile workload (every task's reference under torch.compile,
# Inductor's Triton kernels compiled cold in each candidate's process), the whole set with
# JOBS candidates at once (last measured in session 10: 6.09 s per kernel over 23 kernels in a
# 140 s run), with the slot trace.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
export JOBS=${JOBS:-12}
( while sleep 3; do echo "$(df -m --output=used /dev/shm | tail -1) $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo) $(cut -d' ' -f1 /proc/loadavg)"; done ) > $OUT/shm-load.txt 2>&1 &
DF=$!
KBX_SLOT_TRACE=$OUT/compile-trace.txt RUNS=${RUNS:-full} TIMEOUT=${TIMEOUT:-500} SAMPLE=${SAMPLE:-12} bash bench/compile_workload_gpu.sh > $OUT/compile-run.txt 2>&1
kill $DF
grep -v "^eval" $OUT/compile-run.txt | tail -12
echo "/dev/shm used max MB, MemAvailable min MB, load max: $(sort -n $OUT/shm-load.txt | tail -1 | cut -d' ' -f1) $(awk '{print $2}' $OUT/shm-load.txt | sort -n | head -1) $(awk '{print $3}' $OUT/shm-load.txt | sort -n | tail -1)"
python3 bench/slot_profile.py $OUT/compile_workload/full.log --trace $OUT/compile-trace.txt --top 8 > $OUT/compile-slot_profile.txt 2>&1; head -30 $OUT/compile-slot_profile.txt
cd $OUT && gzip -f compile_workload/*.log compile-trace.txt && tar czf call3-compile.tgz compile_workload/*.log.gz compile_workload/walls.txt compile_workload/*.csv compile-trace.txt.gz compile-run.txt compile-slot_profile.txt shm-load.txt && rm -rf compile_workload/cands compile_workload/*.db*
echo "== $(date -u +%T) done"
