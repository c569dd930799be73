#!/usr/bin/env bash
# Prepared in session 42 for the next GPU session: two device calls on one machine, back to back
# (carry .carry/; each STEP its own call; name nvidia-h200: an H200 came in session 42 after
# eight sessions without one). Every output goes into one tarball, $OUT/s43-STEP.tgz, beside a
# short summary (a call returns at most 8 files: session 42's call 4 lost its warm run's log).
#   STEP=refs (timeout_s 570): the 184 references as their own candidates, cold (RUN_TIMEOUT 300:
#     session 42 cut at 274 s with 180 of 184) then warm at the defaults (issue 14's first
#     acceptance point; session 42: 185.9 s against the goal of 180 s). Read the warm run's
#     profile log for what the reference workers did while the lanes waited 108.8 s for them:
#     frozen in the candidates' hushes, starting, computing (bench/job_timelines.py,
#     bench/slot_profile.py), and bench/host_bound_apart.py for the host-waiting cases.
#   STEP=refs10 (timeout_s 300): the warm run again with 10 reference workers (refs184.sh's
#     refs10), from the eager cache of STEP=refs (the same machine).
# Since session 42's last commits only a run's first reference worker calls nvidia-smi in its
# hello (machine_facts): compare the warm pipeline with session 42's 185.9 s.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# what the hello's nvidia-smi call cost each reference worker before session 42's machine_facts
# (now only the first chunk's asks): three calls, each its own start
TIMEFORMAT='nvidia-smi for the hello: %R s'
{ for k in 1 2 3; do time nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.mem \
  --format=csv,noheader > /dev/null; done; } 2>&1 | tee $OUT/smi.txt
FINAL=$OUT
mkdir -p /tmp/s43
case ${STEP:?STEP=refs or refs10} in
  refs)
    rm -f /var/tmp/kbx-eager-s30.db
    OUT=/tmp/s43 NAME=cold RUN_TIMEOUT=${COLD_TIMEOUT:-300} VARIANTS=base bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 |
      grep -v '^  idle\|^  gaps' | tail -6 | tee $FINAL/summary.txt
    OUT=/tmp/s43 NAME=warm RUN_TIMEOUT=220 VARIANTS=base bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 |
      grep -v '^  idle\|^  gaps' | tail -6 | tee -a $FINAL/summary.txt
    ;;
  refs10)
    OUT=/tmp/s43 NAME=warm10 RUN_TIMEOUT=220 VARIANTS=refs10 bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 |
      grep -v '^  idle\|^  gaps' | tail -6 | tee $FINAL/summary.txt
    ;;
esac
for n in cold warm warm10; do
  [ -d /tmp/o-$n ] || continue
  grep -h "^pipeline over\|^slot gpu\|fewer jobs than\|^self speedups" /tmp/o-$n/*/out.txt | sed "s/^/$n: /" | tee -a $FINAL/summary.txt
  mkdir -p /tmp/x-$n && tar xzf /tmp/o-$n/*/call1-warm.tgz -C /tmp/x-$n 2>/dev/null
  LOG=$(ls /tmp/x-$n/warm/profile/profile.log.gz 2>/dev/null | head -1)
  DB=$(ls /tmp/s43/$n.db.gz /tmp/s43/eager.db.gz 2>/dev/null | head -1)
  [ -n "$LOG" ] && [ -n "$DB" ] && gunzip -c $DB > /tmp/x-$n.db &&
    python3 bench/host_bound_apart.py /tmp/x-$n.db --log $LOG | sed "s/^/$n: /" | tee -a $FINAL/summary.txt
done
tar czf $FINAL/s43-$STEP.tgz -C /tmp s43 $(cd /tmp && ls -d o-cold o-warm o-warm10 2>/dev/null)
ls -la $FINAL
