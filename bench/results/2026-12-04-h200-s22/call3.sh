#!/usr/bin/env bash
# session 22, call 3 (the last ~450 s of device time): issue 14's compile workload (every task's
# reference under torch.compile, Inductor's Triton kernels compiled cold in each candidate's
# process) with the eager timings of call 2's cold run (FROM_DB), JOBS=12 for at most 200 s,
# then 6 tasks with --jobs 1 for at most 90 s. Last measured in session 10: 6.09 s per kernel.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
export JOBS=${JOBS:-12} FROM_DB=$PWD/bench/results/2026-12-04-h200-s22/call2-cold.db.gz
( while sleep 3; do echo "$(df -m --output=used /dev/shm | tail -1) $(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo) $(cut -d' ' -f1 /proc/loadavg)"; done ) > $OUT/shm-load.txt 2>&1 &
DF=$!
TIMEOUT=${FULL_TIMEOUT:-200} RUNS=full bash bench/compile_workload_gpu.sh > $OUT/compile-full.txt 2>&1
TIMEOUT=${SERIAL_TIMEOUT:-90} RUNS=serial SAMPLE=${SAMPLE:-6} bash bench/compile_workload_gpu.sh > $OUT/compile-serial.txt 2>&1
kill $DF
grep -v "^eval" $OUT/compile-full.txt | tail -8; grep -v "^eval" $OUT/compile-serial.txt | tail -8
cat $OUT/compile_workload/walls.txt
echo "load max: $(awk '{print $3}' $OUT/shm-load.txt | sort -n | tail -1)"
cd $OUT && gzip -f compile_workload/*.log && tar czf call3-compile.tgz compile_workload/*.log.gz compile_workload/walls.txt compile_workload/*.csv compile-full.txt compile-serial.txt shm-load.txt && rm -rf compile_workload/cands compile_workload/*.db*
