#!/usr/bin/env bash
# session 11, call 1: torch's sync debug mode as the quiet host's trigger; the quiet host's tests
# (cgroup freezing included, which only this machine can do); the 184 references as candidates,
# whole (420 s limit), with the quiet host and the one-call warm-up
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
echo "== $(date -u +%T) which calls wait on the host (torch's sync debug mode)"
PYTHONPATH=python timeout 120 python3 - > $OUT/sync-detect.txt 2>&1 <<'PY'
import torch
from kbx_worker.timer import _calls_synchronising as waits
d = "cuda"
x = torch.randn(4096, 4096, device=d)
m = x > 0
a = torch.randn(256, 256, device=d, dtype=torch.float64)
b = torch.randn(256, 8, device=d, dtype=torch.float64)
for name, fn in [("relu", lambda: torch.relu(x)), ("matmul", lambda: x @ x),
                 ("sum", lambda: x.sum()), ("masked_select", lambda: torch.masked_select(x, m)),
                 ("nonzero", lambda: torch.nonzero(m)), ("item", lambda: x.sum().item()),
                 ("synchronize", lambda: (torch.relu(x), torch.cuda.synchronize())),
                 ("linalg.solve", lambda: torch.linalg.solve(a, b)),
                 ("linalg.eig", lambda: torch.linalg.eig(a)), ("svd", lambda: torch.linalg.svd(a)),
                 ("det", lambda: torch.linalg.det(a)), ("unique", lambda: torch.unique(m))]:
    print(f"{name:14s} waits on the host: {waits(fn)}")
print("torch", torch.__version__)
PY
cat $OUT/sync-detect.txt
echo "== $(date -u +%T) quiet host and slot tests"
timeout 120 .carry/bin/kbx_tests --gtest_filter='Quiet*:GpuSlot*' > $OUT/quiet-tests.txt 2>&1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \] Quiet|FAILED \]" $OUT/quiet-tests.txt
echo "== $(date -u +%T) references as candidates, all tasks"
( while sleep 3; do df -m --output=used /dev/shm | tail -1; done ) > $OUT/shm-used.txt 2>&1 &
DF=$!
export KBX_SLOT_TRACE=$OUT/slot-trace.txt
OUT=$OUT PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-420} TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,) bash bench/pipeline_profile_gpu.sh > $OUT/profile-run.txt 2>&1
unset KBX_SLOT_TRACE
kill $DF
cat $OUT/profile-run.txt
L=$OUT/profile/profile.log
echo "evaluated: $(grep -c '^eval' $L); /dev/shm used max MB: $(sort -n $OUT/shm-used.txt | tail -1)"
echo "quiet: candidate timed loops $(grep -o 'quiet_wanted' $L | wc -l), reference cases $(grep -c 'eager_quiet=1' $L)"
grep "^eval" $L | grep -v " passed " | head
tail -n 3 $L
python3 bench/slot_profile.py $L --top 25 --trace $OUT/slot-trace.txt > $OUT/slot_profile.txt 2>&1; head -50 $OUT/slot_profile.txt
rm -rf /dev/shm/kbx-work-profile /dev/shm/kbx-ref-cache-profile
cd $OUT && gzip -f profile/profile.log slot-trace.txt && tar czf call1.tgz profile/profile.log.gz slot-trace.txt.gz slot_profile.txt sync-detect.txt quiet-tests.txt shm-used.txt profile-run.txt && rm -rf profile
echo "== $(date -u +%T) done"
