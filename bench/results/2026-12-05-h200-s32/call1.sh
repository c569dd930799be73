#!/usr/bin/env bash
# Session 32, first call (about 6 min): (1) which of torch.compile's imports starts CUDA's driver
# on the GPU machine's torch, with and without torch's NVML-based device check; (2) the compiler
# preload's new guard (cuDeviceGetCount) on three tasks: the warm parent must start again without
# the preload, and the three must pass; (2b) CUDA start concurrency; (3) session 31's small check at the defaults (32 tasks'
# references as their own candidates: all pass, none run again alone, self-speedups near 1).
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1 KBX_REF_CACHE=off
D=bench/results/2026-12-05-h200-s32
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== (1) which import starts CUDA"
python3 $D/cuda_at_import.py 2>&1 | tee $OUT/cuda_at_import.txt
PYTORCH_NVML_BASED_CUDA_CHECK=1 python3 $D/cuda_at_import.py 2>&1 | tee $OUT/cuda_at_import_nvml.txt | grep -v "^ "
echo "== (2) the preload's guard"
T=Activation/relu,Fusion/fused_sum_std,Math/add
rm -rf /tmp/dc && mkdir -p /tmp/dc/Activation /tmp/dc/Fusion /tmp/dc/Math
for t in ${T//,/ }; do cp tasks/$t/reference.py /tmp/dc/$t.py; done
KBX_PRELOAD_COMPILER=1 KBX_WORK=/dev/shm/kbx-diag timeout 150 .carry/bin/kbx eval --method d1 \
  --candidates /tmp/dc --tasks $T --track any --device cuda --db $OUT/preload.db --fresh --seed 7 > $OUT/preload.log 2>&1
echo "exit $?; warm parent restarts: $(grep -c 'starts again without them' $OUT/preload.log)"
grep -i "zygote\|probe_fd" $OUT/preload.log | head -5
.carry/bin/kbx results --db $OUT/preload.db --format json | python3 -c "
import json,sys
for r in json.load(sys.stdin)['results']: print(r['task'], r['status'], (r.get('detail') or '')[:300])"
echo "== (2b) CUDA's start in N children at once, with and without the probe (never measured:"
echo "   session 29's jobs took a median 3.2 s from their source check to CUDA's start, 0.2 s alone)"
timeout 120 python3 bench/spawn_cost.py --concurrent 1,4,12 --probe .carry/lib/libkbx_probe.so > $OUT/spawn_cost.txt 2>&1
grep -i "cuda\|concurrent\|children" $OUT/spawn_cost.txt | head -12
echo "== (2c) another process's CUDA start beside a timed loop (KBX_QUIET_CPU_FIRST=context's question)"
timeout 90 python3 bench/context_interference.py --waves 5 --wave 4 --probe .carry/lib/libkbx_probe.so 2>&1 | tee $OUT/context_interference.txt | tail -12
echo "== (3) small check"
RUN_TIMEOUT=260 OUT=$OUT bash bench/results/2026-12-05-h200-s31/call3-small.sh
