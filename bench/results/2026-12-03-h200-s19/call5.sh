#!/usr/bin/env bash
# session 19, call 5 (kbx 501553c+): the peaks taken at the fast end of their samples, and the
# harness overhead without the slot's queue: bench/timing_hardening_gpu.sh again (its calibrate,
# the 12 experts: none above 100% of its roofline, overhead median <= 1.5 s; every attack), then
# two more `kbx calibrate` runs to see how far the peaks move between runs.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so
bash bench/timing_hardening_gpu.sh > $OUT/hardening.txt 2>&1; echo "exit $?"; tail -n 32 $OUT/hardening.txt
grep "calibrate:" $OUT/timing-hardening/calibrate.txt
for k in 2 3; do
  timeout 150 .carry/bin/kbx calibrate --db $OUT/cal$k.db > $OUT/cal$k.txt 2>&1; echo "calibrate $k: exit $?"
  grep "calibrate:" $OUT/cal$k.txt
done
tar czf $OUT/call5-hardening.tgz -C $OUT timing-hardening cal2.txt cal3.txt cal2.db cal3.db 2>/dev/null; rm -rf $OUT/timing-hardening $OUT/cal*.db*
