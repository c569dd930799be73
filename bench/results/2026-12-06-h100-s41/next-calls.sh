#!/usr/bin/env bash
# Prepared in session 41 for the next GPU session: three device calls on one machine, back to back
# (carry .carry/; each STEP its own call):
#   STEP=cold  (timeout_s 500): the 184 references cold at the new defaults (the eager redraw on,
#     GpuStarved and the `starved` flag): cases apart (bench/two_states.py; session 41 with the
#     redraw: 2 of 507, one the starved resnet_56 convolution, which the starved check should
#     remove), how many references and jobs ran again alone for a starved process, and the
#     pipeline's time (the cold run with the redraw was cut at 330 s in session 41).
#   STEP=hardening (timeout_s 500): bench/timing_hardening_gpu.sh at the defaults, with the new
#     attack tests/adversarial/timing/starved_claim (expected: passed, within 10% of the expert,
#     after one run alone: its eval log says "runs again alone").
#   STEP=compile (timeout_s 560): the compile workload as a whole run (TIMEOUT 500) with 12 lanes
#     and 5 reference workers (session 41: 157 of 184 in 420 s, 2.68 s per kernel).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
case ${STEP:?STEP=cold, hardening or compile} in
  cold)
    VARIANT=base RUN_TIMEOUT=420 bash bench/results/2026-12-06-h100-s40/cold-variant.sh
    LOG=$(ls /tmp/cv/warm/profile/profile.log.gz 2>/dev/null | head -1)
    [ -n "$LOG" ] && {
      echo "references put off for a starved process: $(zgrep -c 'before its baselines were timed' $LOG)"
      echo "jobs run again alone for a starved process: $(zgrep -c 'before a timing ended' $LOG)"
      zgrep 'starved_beside\|ran again alone' $LOG | tail -3
    } | tee -a $OUT/two-states.txt
    ;;
  hardening)
    OUT=/tmp/th timeout 470 bash bench/timing_hardening_gpu.sh 2>&1 | tail -40 | tee $OUT/hardening.txt
    grep -h "again alone\|starved" /tmp/th/timing-hardening/eval-starved_claim.log | head -5 |
      tee -a $OUT/hardening.txt
    # session 41 moved gelu_wrong_specials' trigger off +-1 (random cases held it): core passes now
    OUT=/tmp/va ONLY=gelu_wrong_specials timeout 100 bash bench/verdict_accuracy_gpu.sh 2>&1 | tail -5 |
      tee -a $OUT/hardening.txt
    ;;
  compile)
    TIMEOUT=500 bash bench/results/2026-12-06-h100-s41/compile-whole.sh
    ;;
esac
