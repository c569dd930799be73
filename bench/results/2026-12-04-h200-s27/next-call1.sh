#!/usr/bin/env bash
# Prepared in session 27 (no GPU was lent that session) for the next GPU session: the first GPU
# run of `--slot-at launch` (the probe asks for the GPU's timing slot at a full-size call's
# first GPU work, so that what the call compiles first runs beside the other jobs).
# (1) probe/tools/slot_arm_check.py: the probe's CUPTI callback asks at a Triton launch, an
#     eager op, a copy and a torch.compile call's first launch (after its compile), not for CPU
#     work, leaves no launch overhead after disarm, exits 3 on a closed pipe (about 1 min);
# (2) bench/timing_hardening_gpu.sh with KBX_SLOT_AT=launch: the experts pass under their
#     rooflines and every attack keeps its status (slot_skip and slot_handback now also turn the
#     probe's request off; the new slot_disarm ends it inside its call: passed, no gain).
# Session 28 added bench/timer_overhead.py between the two (about 30 s).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so KBX_QUIET_CPU_FIRST=cuda
timeout 180 python3 probe/tools/slot_arm_check.py --lib .carry/lib/libkbx_probe.so 2>&1 | tee $OUT/slot_arm_check.txt | tail -20
# (added in session 28) where a timed case's fixed ~70 ms goes inside CudaTimer, under the probe
timeout 120 python3 bench/timer_overhead.py 2>&1 | tee $OUT/timer_overhead.txt | tail -14
KBX_SLOT_AT=launch OUT=$OUT bash bench/timing_hardening_gpu.sh 2>&1 | tail -40
cd $OUT && tar czf hardening.tgz timing-hardening/*.txt timing-hardening/*.csv timing-hardening/*.log; rm -rf timing-hardening
