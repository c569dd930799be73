#!/usr/bin/env bash
# Session 32, second call (about 9 min): the 184 references as their own candidates, cold (this
# session's binary; the eager timings timed in the run and kept in /var/tmp), then warm with
# KBX_QUIET_CPU_FIRST=context (a job joins the quiet host after its CUDA start) when
# context_interference.py (call 1) showed a start leaves a timed loop alone.
RUN_TIMEOUT=${RUN_TIMEOUT:-300} VARIANTS="${VARIANTS:-base context}" OUT=$OUT bash bench/results/2026-12-05-h200-s30/refs184.sh
