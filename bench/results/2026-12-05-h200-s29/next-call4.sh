#!/usr/bin/env bash
# Prepared in session 29 for the next GPU session (about 3.5 min a run): the 184 references warm
# at the new defaults (CPU-first quiet host, the reference-OOM retry), for the variance of
# session 29's 184.5 s (call 2). Variants, one run each, if device time is left:
#   RUN2=1     the same with --slot-at launch (its hand-back between full-size calls costs slot
#              round trips for Triton candidates: is it slower?)
#   WARMUP3=1  the same with KBX_TIMER_WARMUP_MS=3 (the candidates' timer warm-up 3 ms instead of
#              10; the eager baselines keep 10): the references against themselves must stay at
#              a speedup of 1 (session 22: median 1.0008, |log| median 0.23%); compare the
#              speedups with `kbx results` of both runs, and the slot held
OUT=$OUT bash bench/results/2026-12-04-h200-s27/next-call2.sh
if [ "${RUN2:-0}" = 1 ]; then
  mkdir -p $OUT/launch
  KBX_SLOT_AT=launch OUT=$OUT/launch bash bench/results/2026-12-04-h200-s27/next-call2.sh
fi
if [ "${WARMUP3:-0}" = 1 ]; then
  mkdir -p $OUT/warmup3
  KBX_TIMER_WARMUP_MS=3 OUT=$OUT/warmup3 bash bench/results/2026-12-04-h200-s27/next-call2.sh
fi
