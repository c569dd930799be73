#!/usr/bin/env bash
# Session 30: the 184 references as candidates, warm eager timings (session 25 call 3's
# database), empty reference cache, as session 29's call 2 (184.5 s pipeline, 189.4 s wall), run
# once per variant named in VARIANTS (each about 3.5 min; two fit in one device call):
#   base      the defaults (--slot-at launch since session 30)
#   call      KBX_SLOT_AT=call (the default before session 30; session 29: 189.4 s wall)
#   jobs16    --jobs 16 (the default is 12 on 16 cores: more jobs ready when the slot frees?)
#   launch    KBX_SLOT_AT=launch (hand-backs between full-size calls)
#   warmup3   KBX_TIMER_WARMUP_MS=3
# Each variant's outputs go to $OUT/<variant>/ (next-call2.sh's set: call1-warm.tgz with the
# profile log and slot trace, job-timelines.txt, slot-idle-who.txt, self-speedups.txt).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
ROOT=$OUT
for v in ${VARIANTS:-base}; do
  mkdir -p $ROOT/$v
  echo "==== variant $v"
  case $v in
    base) (OUT=$ROOT/$v bash bench/results/2026-12-04-h200-s27/next-call2.sh) ;;
    jobs16) (export JOBS=16; sed 's/^unset JOBS /unset /' bench/results/2026-12-04-h200-s27/next-call2.sh > /tmp/nc2-jobs.sh; OUT=$ROOT/$v bash /tmp/nc2-jobs.sh) ;;
    call) (export KBX_SLOT_AT=call; OUT=$ROOT/$v bash bench/results/2026-12-04-h200-s27/next-call2.sh) ;;
    launch) (export KBX_SLOT_AT=launch; OUT=$ROOT/$v bash bench/results/2026-12-04-h200-s27/next-call2.sh) ;;
    warmup3) (export KBX_TIMER_WARMUP_MS=3; OUT=$ROOT/$v bash bench/results/2026-12-04-h200-s27/next-call2.sh) ;;
    *) echo "unknown variant $v" ;;
  esac > $ROOT/$v/out.txt 2>&1
  tail -36 $ROOT/$v/out.txt
done
