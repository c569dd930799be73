#!/usr/bin/env bash
# Prepared in session 29 for the next GPU session (about 5.5 min): the compile workload with
# --slot-at launch and the hand-back between full-size calls, against session 29's call 5 (the
# same script before the change: 64 judged in the first 270 s, 4.22 s per kernel, slot held
# 93%, candidates' timed loops 44.5 s of it). Read walls.txt's judged count and the slot
# profile's held share.
# With device time left (about 5.5 min more), the same with one Inductor compile thread per job
# (KBX_INDUCTOR_THREADS=1; Inductor's default is a pool of one worker per CPU in every job):
#   INDUCTOR1=1 OUT=$OUT bash bench/results/2026-12-05-h200-s29/next-call3.sh
if [ "${INDUCTOR1:-0}" = 1 ]; then export KBX_INDUCTOR_THREADS=1; fi
TIMEOUT=${TIMEOUT:-270} OUT=$OUT bash bench/results/2026-12-04-h200-s27/next-call3.sh
