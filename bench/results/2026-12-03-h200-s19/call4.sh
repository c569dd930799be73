#!/usr/bin/env bash
# session 19, call 4: bench/timing_hardening_gpu.sh with the prefetch (inputs, twins and decoys
# in GPU memory before the base call): tests/adversarial/timing/pool_scan must stay
# impossible_speed, the experts must pass.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
bash bench/timing_hardening_gpu.sh > $OUT/hardening.txt 2>&1; echo "exit $?"; tail -n 40 $OUT/hardening.txt
tar czf $OUT/call4-hardening.tgz -C $OUT timing-hardening --exclude='*.db-wal' 2>/dev/null; rm -rf $OUT/timing-hardening
