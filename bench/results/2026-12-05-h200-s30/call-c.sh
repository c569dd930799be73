#!/usr/bin/env bash
# Session 30, third call (about 4.5 min): neighbour_gpu.py with longer scrub bursts (can the
# timer see another context's work?), then the 184 references with --slot-at launch (is the
# hand-back between full-size calls slower for calls that compile nothing? against s29's 189.4 s)
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
timeout 90 python3 bench/neighbour_gpu.py 2>&1 | tee $OUT/neighbour2.txt | grep -v "^neighbour:\|^queued\|^running" | cut -c1-200
VARIANTS=launch OUT=$OUT bash bench/results/2026-12-05-h200-s30/refs184.sh 2>&1 | tail -32
