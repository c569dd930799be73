#!/usr/bin/env bash
# Session 30, first call (about 6.5 min): a neighbour's GPU work against kbx's timings
# (bench/neighbour_gpu.py, about 40 s); the timer's A/B/A (timer_overhead.py); the timing
# hardening with --slot-at launch and its interim hand-backs (slot_interim must be timer_tampered)
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
timeout 90 python3 bench/neighbour_gpu.py 2>&1 | tee $OUT/neighbour.txt | tail -16
OUT=$OUT bash bench/results/2026-12-05-h200-s29/next-call2.sh 2>&1 | tail -50
