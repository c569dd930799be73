#!/usr/bin/env bash
# Prepared in session 29 for the next GPU session (about 5.5 min): the timing hardening with
# --slot-at launch, now with the worker's hand-back between full-size calls (slot_done with
# again) and the new slot_interim attack (must be timer_tampered); then the compile workload's
# first 240 s under launch, for the A/B with session 29's call 5 (64 judged in 270 s, 4.22 s
# each, slot held 93%).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
# the timer's A/B with its A/A control (about 45 s): adopt B only where B/A sits inside C/A's spread
timeout 120 python3 bench/timer_overhead.py 2>&1 | tee $OUT/timer_overhead.txt | tail -16
KBX_SLOT_AT=launch OUT=$OUT bash bench/timing_hardening_gpu.sh 2>&1 | tail -36
cd $OUT && tar czf hardening.tgz timing-hardening/*.txt timing-hardening/*.csv timing-hardening/*.log; rm -rf timing-hardening
