#!/usr/bin/env bash
# Prepared in session 27 for the next GPU session: the 184 references as candidates, warm
# (session 25 call 3's eager timings; the reference worker's sources are unchanged since),
# empty reference cache, at the defaults, as session 26's call 2 (206.2 s, 182 passed), now with
# a candidate's job left running through GPU-only hushes until its CUDA starts (cuda_next;
# session 26: a job lived 11.08 s on average, frozen 3.86 s of it, hello at a median 1.25 s).
# bench/job_timelines.py compares the jobs' steps with session 26's (job-timelines-s26.txt).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_QUIET_CPU_FIRST=cuda
unset JOBS REF_WORKERS REF_CACHE_MB
export REF_CACHE=/var/tmp/kbx-ref-cache
gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/eager.db
rm -rf $REF_CACHE
( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > $OUT/gpu-mem.txt 2>&1 ) &
SMI=$!
RUN=warm FROM_DB=/tmp/eager.db RUN_TIMEOUT=${RUN_TIMEOUT:-230} bash bench/results/2026-12-03-h200-s15/call1.sh | grep -v '^  idle\|^  gaps' | tail -32
kill $SMI
echo "GPU memory used, MiB: max $(sort -n $OUT/gpu-mem.txt | tail -1)"
gzip -f $OUT/gpu-mem.txt
rm -rf /tmp/tl && mkdir -p /tmp/tl && tar xzf $OUT/call1-warm.tgz -C /tmp/tl
python3 bench/job_timelines.py /tmp/tl/warm/profile/profile.log.gz | tee $OUT/job-timelines.txt
# (added in session 28) what the next holder did while the slot sat idle
python3 bench/slot_idle_who.py /tmp/tl/warm/slot-trace.txt.gz /tmp/tl/warm/profile/profile.log.gz | tee $OUT/slot-idle-who.txt
# (added in session 29) the references against themselves: speedups near 1 (KBX_TIMER_WARMUP_MS's check)
.carry/bin/kbx results --db $OUT/warm.db --format csv | python3 bench/self_speedups.py | tee $OUT/self-speedups.txt
# (added in session 35) the farthest self-speedups case by case (session 35 on an H100:
# SpatialOps/grid_sample_with_affine 1.556 in the cold and the warm run, not seen before)
python3 - $OUT/warm.db > $OUT/self-speedup-cases.txt <<'PY'
import math, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute("SELECT task, speedup FROM results WHERE status = 'passed' AND speedup > 0").fetchall()
for task, speedup in sorted(rows, key=lambda r: -abs(math.log(r[1])))[:8]:
    print(f"{task} {speedup:.4f}")
    for name, cand, eager, flags in con.execute(
            "SELECT c.name, c.cand_ms, c.eager_ms, c.timing_flags FROM case_results c JOIN results r "
            "ON r.id = c.result_id WHERE r.task = ? AND c.cand_ms > 0 AND c.eager_ms > 0", (task,)):
        print(f"  {name}: cand {cand:.4f} ms, eager {eager:.4f} ms, ratio {eager / cand:.3f} {flags}")
PY
head -40 $OUT/self-speedup-cases.txt
rm -f $OUT/warm.db
