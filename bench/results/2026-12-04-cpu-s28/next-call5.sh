#!/usr/bin/env bash
# Prepared in session 28 for the next GPU session, after session 27's next-call2.sh (the 184
# references warm with KBX_QUIET_CPU_FIRST=cuda): the same run with 3 finishing jobs freed at
# their worker's exit (--finishing-jobs 3, --finishing-from exit, the default from): a lane is
# then a job until its worker exits, and kbx's comparisons of its outputs (2.0 s a job on
# average in session 26, 370 lane-seconds of a 200 s run on 12 lanes) run beside the lane's next
# job. Unlike session 26's call 1 (3 finishing from the slot's hand-back: their workers alive,
# the GPU's memory full, slower), no more worker processes live at once than the lanes.
# The A/B is next-call2.sh's run: wall, slot idle, job timelines (bench/pipeline_profile_gpu.sh
# passes FINISHING_JOBS on as --finishing-jobs).
FINISHING_JOBS=3 bash bench/results/2026-12-04-h200-s27/next-call2.sh
