#!/usr/bin/env bash
# Session 43, one device call (carry .carry/, timeout_s 570): the 184 references as their own
# candidates, warm, with a reference worker's finished task handed to the lanes at once
# (sched/eval.cpp's task_ready), in two variants: base (chunks of 2, the default) and chunk4
# (--reference-chunk 4: half the workers, each with its CUDA start). Compare with this session's
# morning run of 2f54a4e on an H100: warm pipeline 174.3 s.
# On an H100 (driver 580.159.04) the eager timings come from this morning's cold run
# (eager-h100.db.gz: the worker's sources are unchanged since, so its key still matches). On any
# other GPU the first variant runs cold and times them (about 280 s), then base runs warm.
# Every output goes into one tarball, $OUT/s43-call.tgz, beside summary.txt.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
HERE=bench/results/2026-12-06-h100-s43
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "$GPU" | tee $OUT/summary.txt
FINAL=$OUT
mkdir -p /tmp/s43
rm -f /var/tmp/kbx-eager-s30.db
if [ "$GPU" = "NVIDIA H100 80GB HBM3, 580.159.04" ]; then
  gunzip -c $HERE/eager-h100.db.gz > /var/tmp/kbx-eager-s30.db
  VARIANTS=${VARIANTS:-base chunk4}
else
  OUT=/tmp/s43 NAME=cold RUN_TIMEOUT=300 VARIANTS=base bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 |
    grep -v '^  idle\|^  gaps' | tail -4 | tee -a $FINAL/summary.txt
  VARIANTS=base
fi
OUT=/tmp/s43 NAME=warm RUN_TIMEOUT=220 VARIANTS="$VARIANTS" bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 |
  grep -v '^  idle\|^  gaps' | tail -4 | tee -a $FINAL/summary.txt
for d in /tmp/o-*/*/; do
  n=$(basename $(dirname $d))-$(basename $d)
  grep -h "^pipeline over\|^slot gpu\|fewer jobs than\|held at the cap\|^self speedups\|a task from fed" $d/out.txt | sed "s/^/$n: /" | tee -a $FINAL/summary.txt
  mkdir -p /tmp/x-$n && tar xzf $d/call1-warm.tgz -C /tmp/x-$n 2>/dev/null
  LOG=$(ls /tmp/x-$n/warm/profile/profile.log.gz 2>/dev/null | head -1)
  # the reference workers' lives: hello, done, exit and frozen seconds (new in session 43)
  [ -n "$LOG" ] && zcat $LOG | python3 -c "
import re, sys
rows = [tuple(map(float, m.groups())) for m in (re.search(r'hello after ([\d.-]+) s, done at ([\d.-]+) s, exited at ([\d.-]+) s, frozen ([\d.-]+) s', l) for l in sys.stdin) if m]
if rows:
    n = len(rows)
    print(f'$n: {n} reference workers: hello {sum(r[0] for r in rows):.1f} s, done {sum(r[1] for r in rows):.1f} s, done->exit {sum(r[2] - r[1] for r in rows):.1f} s, frozen {sum(r[3] for r in rows):.1f} s in all')
" | tee -a $FINAL/summary.txt
done
tar czf $FINAL/s43-call.tgz -C /tmp s43 $(cd /tmp && ls -d o-* 2>/dev/null)
ls -la $FINAL
