#!/usr/bin/env bash
# session 10, call 1: teardown interference, the probe flood attack, the 184 references as
# candidates with the slot trace (warm-up 10 ms)
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== $(date -u +%T) teardown interference"
timeout 60 python3 bench/teardown_interference.py --mode idle --children 6 2>&1 | tail -4
timeout 60 python3 bench/teardown_interference.py --mode busy --children 4 --spin-s 2 2>&1 | tail -4
echo "== $(date -u +%T) probe_flood"
KBX_WORK=/dev/shm/kf timeout 150 $KBX eval --method probe_flood --candidates tests/adversarial/timing/probe_flood \
  --device cuda --db $OUT/flood.db --fresh > $OUT/flood.log 2>&1; echo "exit $?"
grep "^eval" $OUT/flood.log; $KBX results --db $OUT/flood.db --format csv 2>/dev/null | cut -c1-300 | head -3
rm -rf /dev/shm/kf
echo "== $(date -u +%T) references as candidates, all tasks"
export KBX_SLOT_TRACE=$OUT/slot-trace.txt
OUT=$OUT PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-300} TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,) bash bench/pipeline_profile_gpu.sh > $OUT/profile-run.txt 2>&1
unset KBX_SLOT_TRACE
cat $OUT/profile-run.txt
grep -c "^eval" $OUT/profile/profile.log
grep -i "was cut\|truncat" $OUT/profile/profile.log | head -5
python3 bench/slot_profile.py $OUT/profile/profile.log --top 25 --trace $OUT/slot-trace.txt > $OUT/slot_profile.txt 2>&1; cat $OUT/slot_profile.txt
cd $OUT && gzip -f profile/profile.log flood.log slot-trace.txt && tar czf call1.tgz profile/profile.log.gz flood.log.gz slot-trace.txt.gz slot_profile.txt && rm -rf profile
echo "== $(date -u +%T) done"
