#!/usr/bin/env bash
# session 24, call 1: (a) the compile workload's 12 failing tasks of session 23 replayed outside
# kbx (bench/compile_replay.py: the same candidate files, the same inputs at seed 7, in plain
# processes, one per task), to tell Inductor's errors from kbx's; (b) the 184 references as
# candidates, warm (session 23's database's eager timings, no reference cache), the run in which
# session 23 accused Fusion/fused_gelu_std (InputsUnavailable), now with 651da0e (an oom while
# rebuilding inputs waits, then is oom and runs again alone), and the GPU's memory sampled.
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
export JOBS=${JOBS:-12} REF_WORKERS=${REF_WORKERS:-8}
S=bench/results/2026-12-04-h200-s24
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
FAILED="Fusion/fused_add_gelu Fusion/fused_exp_mean Fusion/fused_pairwise_distance_adaptive_avg_pool2d
Fusion/fused_mv_sigmoid_sub Fusion/fused_masked_select_add_gelu Loss/mse_loss Loss/kl_div
Fusion/fused_cross_entropy_log_softmax Fusion/fused_sigmoid_adaptive_avg_pool2d
Loss/binary_cross_entropy Fusion/fused_gelu_std Fusion/fused_pairwise_distance_normalize"
if [ "${REPLAY:-1}" = 1 ]; then
  echo "== $(date -u +%T) replay of the compile workload's failures"
  python3 bench/make_compile_candidates.py --tasks tasks --out /var/tmp/cands --backend inductor \
    --only "$(echo $FAILED | tr ' ' ',')"
  mkdir -p $OUT/replay
  for t in $FAILED; do
    timeout ${REPLAY_TIMEOUT:-240} python3 bench/compile_replay.py --cands /var/tmp/cands --seed 7 $t \
      > $OUT/replay/${t//\//_}.txt 2> $OUT/replay/${t//\//_}.err &
  done
  wait
  cat $OUT/replay/*.txt | grep -v ": ok$"
  echo "== $(date -u +%T) replay done"
fi
( nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > $OUT/gpu-mem.txt 2>&1 ) &
SMI=$!
gunzip -c bench/results/2026-12-04-h200-s23/cold.db.gz > /tmp/cold.db
RUN=warm FROM_DB=/tmp/cold.db RUN_TIMEOUT=${WARM_TIMEOUT:-220} bash bench/results/2026-12-03-h200-s15/call1.sh | grep -v '^  idle\|^  gaps'
kill $SMI
echo "GPU memory used, MiB: max $(sort -n $OUT/gpu-mem.txt | tail -1), samples over 130000: $(awk '$1 > 130000' $OUT/gpu-mem.txt | wc -l) of $(wc -l < $OUT/gpu-mem.txt)"
gzip -f $OUT/gpu-mem.txt
rm -f $OUT/warm.db
