#!/usr/bin/env bash
# session 9, call 2
export PATH=/opt/torch/.venv/bin:$PATH KBX_PROBE_LIB=$PWD/.carry/lib/libkbx_probe.so PYTHONUNBUFFERED=1
echo "== $(date -u +%T) compile errors of the baseline"
timeout 150 python .carry/compile_err.py Optimizer/Adam Normalization/symmetric_matrix_vector_norm > $OUT/compile_err.txt 2>&1; tail -n 30 $OUT/compile_err.txt | cut -c1-400
echo "== $(date -u +%T) experts: rsqrt, spectral_norm_eig (task changed), Adam"
OUT=$OUT START_DB=.carry/start.db SKIP_CALIBRATE=1 RUN_TIMEOUT=120 TASKS=Math/rsqrt,Normalization/spectral_norm_eig,Optimizer/Adam,Normalization/symmetric_matrix_vector_norm KBX_WORK=/dev/shm/kx bash bench/expert_gpu.sh > $OUT/expert-run.txt 2>&1
grep -E "^\| (Math/rsqrt|Normalization/spectral|Optimizer/Adam|Normalization/symm)" $OUT/expert-run.txt | cut -c1-120
grep "torch.compile baseline of" $OUT/expert/eval.log | cut -c1-300 | head
rm -rf /dev/shm/kx
echo "== $(date -u +%T) references as candidates, all tasks"
OUT=$OUT PROFILE_TIMEOUT=${PROFILE_TIMEOUT:-380} TASKS=$(ls -d tasks/*/* | sed 's|tasks/||' | paste -sd,) bash bench/pipeline_profile_gpu.sh > $OUT/profile-run.txt 2>&1
cat $OUT/profile-run.txt
python3 bench/slot_profile.py $OUT/profile/profile.log --top 25 > $OUT/slot_profile.txt 2>&1; cat $OUT/slot_profile.txt
grep -c "^eval" $OUT/profile/profile.log
cd $OUT && gzip -f profile/profile.log expert/eval.log && tar czf call2.tgz expert/eval.log.gz expert/results.json expert/expert.md profile/profile.log.gz && rm -rf expert profile
echo "== $(date -u +%T) done"
