#!/usr/bin/env bash
# session 14, call 2: the suite self-check on the GPU of the two tasks whose judges now compute
# on the device (the reference's draws pass, all-zeros and identical draws fail, on cuda).
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
echo "== $(date -u +%T) suite check --device cuda"
timeout 400 .carry/bin/kbx suite check --device cuda --tasks Math/bitwise_and_binomial,Random/rand 2>&1 | tail -n 20
echo "exit ${PIPESTATUS[0]}; == $(date -u +%T) done"
