#!/usr/bin/env bash
# Prepared in session 29 for the next GPU session (about 3.5 min): the 184 references warm at
# the new defaults (CPU-first quiet host, the reference-OOM retry), for the variance of session
# 29's 184.5 s (call 2); then the same with --slot-at launch (its hand-back between full-size
# calls costs slot round trips for Triton candidates: is it slower?) if time is left (RUN2=1).
OUT=$OUT bash bench/results/2026-12-04-h200-s27/next-call2.sh
if [ "${RUN2:-0}" = 1 ]; then
  mkdir -p $OUT/launch
  KBX_SLOT_AT=launch OUT=$OUT/launch bash bench/results/2026-12-04-h200-s27/next-call2.sh
fi
