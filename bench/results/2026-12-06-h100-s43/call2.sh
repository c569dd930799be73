#!/usr/bin/env bash
# Session 43, call 2 (carry .carry/, timeout_s 400): call 1's base variant ran first on a fresh
# machine and took 211.9 s for 181 of 184 tasks, its chunk4 variant second 174.5 s; this
# morning's run of 2f54a4e, second on its machine, 174.3 s. Here a 45 s warm-up run (discarded:
# the machine's page cache and disk), then the base variant (chunks of 2, tasks handed on as
# finished) on the same eager timings. WARMUP_S, RUN_S and NAME (call3.sh's) default to call 2's.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
HERE=bench/results/2026-12-06-h100-s43
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "$GPU" | tee $OUT/summary.txt
[ "$GPU" = "NVIDIA H100 80GB HBM3, 580.159.04" ] || { echo "not call 1's kind of machine: no eager timings"; exit 1; }
FINAL=$OUT
gunzip -c $HERE/eager-h100.db.gz > /var/tmp/kbx-eager-s30.db
OUT=/tmp/s43w NAME=warmup RUN_TIMEOUT=${WARMUP_S:-45} VARIANTS=base bash bench/results/2026-12-05-h100-s37/call.sh > /dev/null 2>&1
mkdir -p /tmp/s43
OUT=/tmp/s43 NAME=warm RUN_TIMEOUT=${RUN_S:-220} VARIANTS=base bash bench/results/2026-12-05-h100-s37/call.sh 2>&1 |
  grep -v '^  idle\|^  gaps' | tail -4 | tee -a $FINAL/summary.txt
d=/tmp/o-warm/base
grep -h "^pipeline over\|^slot gpu\|fewer jobs than\|held at the cap\|held for room\|^self speedups\|a task from fed\|ran again alone" $d/out.txt | tee -a $FINAL/summary.txt
mkdir -p /tmp/x && tar xzf $d/call1-warm.tgz -C /tmp/x
zcat /tmp/x/warm/profile/profile.log.gz | python3 -c "
import re, sys
rows = [tuple(map(float, m.groups())) for m in (re.search(r'hello after ([\d.-]+) s, done at ([\d.-]+) s, exited at ([\d.-]+) s, frozen ([\d.-]+) s', l) for l in sys.stdin) if m]
n = len(rows)
print(f'{n} reference workers: hello {sum(r[0] for r in rows):.1f} s, done {sum(r[1] for r in rows):.1f} s, done->exit {sum(r[2] - r[1] for r in rows):.1f} s, frozen {sum(r[3] for r in rows):.1f} s in all')
" | tee -a $FINAL/summary.txt
tar czf $FINAL/s43-${NAME:-call2}.tgz -C /tmp s43 o-warm
