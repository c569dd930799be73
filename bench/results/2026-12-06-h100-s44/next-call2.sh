#!/usr/bin/env bash
# Prepared in session 44 for the next GPU session, on an H200 if one is lent: the second call on
# the same machine, right after bench/results/2026-12-06-h100-s43/next-call.sh (name nvidia-h200,
# carry .carry/, timeout_s 560; issue it within the 30 s the machine stays warm, so that the eager
# timings of the first call's cold run are still in /var/tmp/kbx-eager-s30.db). Two warm runs of
# the 184 references (VARIANTS, default "keep base"): KBX_KEEP_REFERENCE_WORKERS=1 (7bdf1f2: a
# reference worker takes its lane's next chunk instead of ending) first, then the defaults
# again; VARIANTS="chunk4 base" for --reference-chunk 4 against the defaults.
# Why: CUDA's start is serialised by the driver (session 44, bench/cuda_start_gpu.py: 0.13 s of
# the driver's time per context on an H100); a warm run starts about 93 reference workers, each
# its own context, and on the H200's host a candidate's CUDA start took a median 3.11 s (session
# 42) against about 1 s on an H100. Kept workers start a context per reference lane (8) rather
# than per chunk; chunks of 4 halve the reference workers. With each task handed on as it
# finishes (session 43) neither makes a task wait for its chunk. On the H100 (lanes bound, session
# 43) chunks of 4 changed nothing (174.5 against 174.3 s); kept workers not measured on a GPU.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/summary.txt
[ -s /var/tmp/kbx-eager-s30.db ] || { echo "no eager timings on this machine: run next-call.sh first" | tee -a $OUT/summary.txt; exit 1; }
FINAL=$OUT
OUT=/tmp/s45 NAME=ab RUN_TIMEOUT=${RUN_S:-220} VARIANTS="${VARIANTS:-keep base}" bash bench/results/2026-12-05-h100-s37/call.sh > /dev/null 2>&1
for v in ${VARIANTS:-keep base}; do
  grep -h "^pipeline over\|^slot gpu\|fewer jobs than\|held at the cap\|^self speedups\|ran again alone" \
    /tmp/o-ab/$v/out.txt | sed "s/^/$v: /" | tee -a $FINAL/summary.txt
  tar xzOf /tmp/o-ab/$v/call1-warm.tgz warm/slot_profile.txt 2>/dev/null | grep "reference workers:" |
    sed "s/^/$v: /" | tee -a $FINAL/summary.txt
done
tar czf $FINAL/s45-ab.tgz -C /tmp o-ab
