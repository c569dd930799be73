#!/usr/bin/env bash
# session 11, call 2: the quiet host's trigger again (only c10's own sync warning counts now),
# then the experts twice back to back (no reference cache: both runs whole), with the quiet host
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
KBX=$PWD/.carry/bin/kbx
echo "== $(date -u +%T) which calls wait on the host (torch's sync debug mode)"
PYTHONPATH=python timeout 120 python3 - > $OUT/sync-detect.txt 2>&1 <<'PY'
import warnings
import torch
from kbx_worker.timer import _calls_synchronising as waits
d = "cuda"
x = torch.randn(4096, 4096, device=d)
m = x > 0
a = torch.randn(256, 256, device=d, dtype=torch.float64)
b = torch.randn(256, 8, device=d, dtype=torch.float64)
with warnings.catch_warnings(record=True) as caught:  # what the first switch to the mode says
    warnings.simplefilter("always")
    torch.cuda.set_sync_debug_mode("warn")
    torch.relu(x)
    torch.cuda.set_sync_debug_mode(0)
print("first switch and relu said:", [str(w.message)[:160] for w in caught])
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
echo "== $(date -u +%T) experts twice"
TASKS=$(ls solutions/expert/*/*.py | sed 's|solutions/expert/||; s|\.py$||' | paste -sd,)
for k in 1 2; do
  t0=$(date +%s)
  KBX_DEBUG_TIMING=1 KBX_REF_CACHE=off KBX_WORK=/dev/shm/kx$k timeout --signal=INT ${RUN_TIMEOUT:-135} $KBX eval --method expert \
    --candidates solutions/expert --tasks "$TASKS" --device cuda --db $OUT/rep$k.db --fresh > $OUT/rep$k.log 2>&1
  echo "run $k: exit $? wall $(( $(date +%s) - t0 )) s, evaluated $(grep -c '^eval' $OUT/rep$k.log), not passed: $(grep '^eval' $OUT/rep$k.log | grep -vc ' passed ')"
  echo "  quiet: candidate timed loops $(grep -o 'quiet_wanted' $OUT/rep$k.log | wc -l), reference cases $(grep -c 'eager_quiet=1' $OUT/rep$k.log)"
  grep "quiet_wanted" $OUT/rep$k.log | sed 's/: timeline.*//' | sort | uniq -c | head -20
  rm -rf /dev/shm/kx$k
done
python3 bench/compare_runs.py $OUT/rep1.db $OUT/rep2.db > $OUT/repeatability.txt 2>&1; tail -n 6 $OUT/repeatability.txt
sort -t'(' -k2 -rn $OUT/repeatability.txt | head -5
cd $OUT && gzip -f rep1.log rep2.log && tar czf call2.tgz rep1.log.gz rep2.log.gz rep1.db rep2.db repeatability.txt sync-detect.txt && rm -rf rep1.db rep2.db
echo "== $(date -u +%T) done"
