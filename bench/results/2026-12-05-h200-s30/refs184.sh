#!/usr/bin/env bash
# Session 30: the 184 references as candidates, empty reference cache, as session 29's call 2
# (184.5 s pipeline, 189.4 s wall, eager timings from session 25's database), once per variant
# named in VARIANTS:
#   base      the defaults (--slot-at launch since session 30)
#   call      KBX_SLOT_AT=call (the default before session 30)
#   jobsN     --jobs N, e.g. jobs16 (the default is 12 on 16 cores: more jobs ready when the slot
#             frees?); session 39: any N, e.g. jobs14 (the H200's memory cap)
#   refsN     --reference-workers N, e.g. refs10 (session 42: the default is 8 with 12 jobs; on
#             the H200 warm the lanes waited 108.8 s of 185.9 s for the references)
#   chunkN    --reference-chunk N, e.g. chunk4 (session 43: tasks per reference worker, each
#             handed to the lanes when finished; the default is 2 on cuda)
#   launch    KBX_SLOT_AT=launch
#   warmup3   KBX_TIMER_WARMUP_MS=3
#   nokeep    KBX_KEEP_QUIET=0 (session 35: a candidate's hush ends after each timed case, as
#             before; the kept hush freezes the other jobs through the warm-ups between cases)
#   hold125   KBX_TIMER_HOLD_FACTOR=1.25 (session 36: a candidate batch's GPU hold 1.25x the last
#             batch's enqueue time instead of 2x; the timings' holds_s say what the holds cost)
#   nopreload KBX_PRELOAD_COMPILER=0 (the default since session 31's H100 run)
#   preload   KBX_PRELOAD_COMPILER=1 (an experiment: it started CUDA in the warm parent there)
#   keepN     KBX_TIMER_KEEP_OUTPUTS=N (session 40: both timers' outputs over N + 1 blocks)
#   redraw    KBX_EAGER_REDRAW=1 (session 40: a short eager timing drawn twice, the second kept
#             when the first was more than 8% slower)
#   context   KBX_QUIET_CPU_FIRST=context (session 32: a job joins the quiet host after its CUDA
#             start, not before; bench/context_interference.py asks whether that is sound)
# Since session 30's baseline settle the reference worker's sources changed, so session 25's
# database no longer gives the eager timings (their key holds the worker's hash). The eager
# timings come from EAGER_DB, else from /var/tmp/kbx-eager-s30.db (kept by an earlier run on this
# machine), else the first variant times them itself (a cold run: about 300 s, RUN_TIMEOUT=330)
# and its database serves the later ones (and is kept in /var/tmp for later calls).
# Each variant's outputs go to $OUT/<variant>/ (next-call2.sh's set: call1-warm.tgz with the
# profile log and slot trace, job-timelines.txt, slot-idle-who.txt, self-speedups.txt).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
ROOT=$OUT
KEPT=/var/tmp/kbx-eager-s30.db
EAGER_DB=${EAGER_DB:-}
[ -z "$EAGER_DB" ] && [ -s "$KEPT" ] && EAGER_DB=$KEPT
for v in ${VARIANTS:-base}; do
  mkdir -p $ROOT/$v
  if [ -n "$EAGER_DB" ]; then GET="cp $EAGER_DB /tmp/eager.db"; else GET="rm -f /tmp/eager.db; touch /tmp/eager.db"; fi
  echo "==== variant $v (eager timings: ${EAGER_DB:-timed in this run})"
  sed -e "s|gunzip -c bench/results/2026-12-04-h200-s25/call3/cold.db.gz > /tmp/eager.db|$GET|" \
    -e "s|^rm -f \$OUT/warm.db|cp \$OUT/warm.db $KEPT.new; rm -f \$OUT/warm.db|" \
    bench/results/2026-12-04-h200-s27/next-call2.sh > /tmp/nc2.sh
  case $v in
    base) (OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    call) (export KBX_SLOT_AT=call; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    jobs[0-9]*) (export JOBS=${v#jobs}; sed 's/^unset JOBS /unset /' /tmp/nc2.sh > /tmp/nc2-jobs.sh; OUT=$ROOT/$v bash /tmp/nc2-jobs.sh) ;;
    refs[0-9]*) (export REF_WORKERS=${v#refs}; sed 's/^unset JOBS REF_WORKERS /unset JOBS /' /tmp/nc2.sh > /tmp/nc2-refs.sh; OUT=$ROOT/$v bash /tmp/nc2-refs.sh) ;;  # (session 42) --reference-workers N
    chunk[0-9]*) (export REF_CHUNK=${v#chunk}; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;  # (session 43) --reference-chunk N
    keep) (export KBX_REFERENCE_WORKER_LIFE=lane; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;  # (session 44) reference workers kept across chunks (session 45: the default, --reference-worker-life lane)
    perchunk) (export KBX_REFERENCE_WORKER_LIFE=chunk; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;  # (session 45) a reference worker per chunk, the default before
    launch) (export KBX_SLOT_AT=launch; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    redraw) (export KBX_EAGER_REDRAW=1; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    keep[0-9]) (export KBX_TIMER_KEEP_OUTPUTS=${v#keep}; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    warmup3) (export KBX_TIMER_WARMUP_MS=3; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    nokeep) (export KBX_KEEP_QUIET=0; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    hold125) (export KBX_TIMER_HOLD_FACTOR=1.25; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    nopreload) (export KBX_PRELOAD_COMPILER=0; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    preload) (export KBX_PRELOAD_COMPILER=1; OUT=$ROOT/$v bash /tmp/nc2.sh) ;;
    context) (sed 's/KBX_QUIET_CPU_FIRST=cuda/KBX_QUIET_CPU_FIRST=context/' /tmp/nc2.sh > /tmp/nc2-ctx.sh; OUT=$ROOT/$v bash /tmp/nc2-ctx.sh) ;;
    *) echo "unknown variant $v" ;;
  esac > $ROOT/$v/out.txt 2>&1
  tail -36 $ROOT/$v/out.txt
  # (session 31) jobs run again alone, by why: contended_beside counts timed cases that met other
  # processes' GPU work (the candidates' settle); the log's "computed again alone" the references'
  echo "again alone: $(zgrep -c "runs again alone\|computed again alone" /tmp/tl/warm/profile/profile.log.gz 2>/dev/null)"
  # (session 33) how fast this machine's host was: the timer's host_loop_ms before each host-bound
  # case (a quiet host); runs on different machines differ by up to 2x in it (0.22-0.47 ms)
  zgrep -o 'host_loop_ms=[0-9.]*' /tmp/tl/warm/profile/profile.log.gz 2>/dev/null | cut -d= -f2 | sort -n |
    awk '{a[NR]=$1} END {if (NR) print "host_loop_ms over " NR " host-bound cases: min " a[1] ", median " a[int(NR/2)+1]}'
  zgrep -h "runs again alone\|computed again alone" /tmp/tl/warm/profile/profile.log.gz 2>/dev/null | cut -c1-160 | head -20
  # (session 34) every reference judged as its own candidate should pass: anything else accuses an
  # honest kernel, except LinearAlgebra/eig's and spectral_norm_eig's unattributed_work (torch
  # computes eig on the host); each with the first 400 characters of its detail
  echo "not passed (false accusations unless eig's):"
  zgrep -h "^eval " /tmp/tl/warm/profile/profile.log.gz 2>/dev/null | grep -v " passed " | while read -r _ _ task status _; do
    echo "  $task $status: $(zgrep -h -m1 "^$task: $status" /tmp/tl/warm/profile/profile.log.gz | cut -c1-400)"
  done
  if [ -z "$EAGER_DB" ] && [ -s $KEPT.new ]; then mv $KEPT.new $KEPT; EAGER_DB=$KEPT; fi
  rm -f $KEPT.new
done
